#!/bin/sh
# ha-host.sh - issue 20.2-20.4: one subsystem served by two `iotarget serve` nodes over one
# O_DIRECT file, as the Linux host's native multipath sees it.  Run by HighAvailabilityTest;
# every step prints a CHECK line, every measurement a RESULT line.
#
#   1 both nodes connected (--reconnect-delay 1): one subsystem, two controllers, one namespace
#     node; node 1's path optimized, node 2's non-optimized
#   2 fio writes 48 MiB with crc32c verify through the multipath device; node 1 is SIGKILLed
#     mid-run: fio ends with no IO error and every block verifies (through node 2)
#   3 node 1 restarted: its path is live and optimized again, and IO goes through it
#   4 ana_state inaccessible on node 1 (written with the CLI) under a loop of reads: the IO moves
#     to node 2, node 1 takes none; optimized again: it moves back; no read fails
#   5 both optimized, iopolicy round-robin: 16 MiB written and 16 MiB read are charged to the
#     tenant on both nodes, the two io.stat together exactly what the host moved (judged by
#     the test from the CHARGE line)
#
# Environment: NQN, PORT1, PORT2 (the nodes' NVMe/TCP ports), CTL_PORT (the test's channel).
. /guest/lib.sh

ADDR=10.0.2.2
# check, ctl, the two nodes' paths, connect_both, wait_fio and fio_ok: the helpers the two-node scripts share
. /guest/files/two-nodes.sh

# 1 -------------------------------------------------------------- one namespace over two nodes
connect_both
log "node 1 $(ctrl_of 1) cntlid $(cat /sys/class/nvme/$(ctrl_of 1)/cntlid), node 2 $(ctrl_of 2) cntlid $(cat /sys/class/nvme/$(ctrl_of 2)/cntlid)"
path_is 1 optimized && path_is 2 non-optimized; check ana-initial $? "node 1 $(path_attr 1 ana_state), node 2 $(path_attr 2 ana_state)"

# 2 -------------------------------------------------------------- node 1 killed under fio
fio --name=failover --filename="$NS" --ioengine=libaio --direct=1 --rw=write --bs=64k --size=48M --iodepth=4 \
    --rate=6m --verify=crc32c --verify_fatal=1 --do_verify=1 --output=/tmp/fio-failover.txt &
FIO=$!
sleep 3
R="$(ctl kill 1 2)"
echo "RESULT failover $R"
echo "$R" | grep -q "pause_ms="; check node1-killed-mid-run $? "$R"
wait_fio $FIO 300; rc=$?
cat /tmp/fio-failover.txt
[ $rc = 0 ] && fio_ok /tmp/fio-failover.txt; check fio-no-io-error-every-block-verified $? "fio rc $rc"
# the longest write as fio saw it (the failover is in it)
echo "RESULT failover-fio-write $(awk '/ write:/ { w = 1 } w && / clat \(/ { print; exit }' /tmp/fio-failover.txt)"

# 3 -------------------------------------------------------------- node 1 back
ctl start 1 >/dev/null
wait_for 60 live_and 1 optimized; check node1-path-live-again $? "state $(ctrl_state 1), $(path_attr 1 ana_state)"
b="$(ctl ios 1)"
dd if="$NS" of=/dev/null bs=64k count=64 iflag=direct 2>/dev/null
a="$(ctl ios 1)"
[ "$a" -gt "$b" ] 2>/dev/null; check io-through-node1-again $? "node 1 ios $b -> $a"

# 4 -------------------------------------------------------------- ANA change from the CLI
# reads go on all along (a loop of dd, so that they last as long as the CLI takes); an error is recorded
rm -f /tmp/stop /tmp/dd-errors
( while [ ! -e /tmp/stop ]; do dd if="$NS" of=/dev/null bs=4k count=64 iflag=direct 2>/dev/null || echo error >> /tmp/dd-errors; done ) &
LOOP=$!
sleep 1
R="$(ctl ana 1 inaccessible 2)"
echo "RESULT ana-away $R"
echo "$R" | grep -q "moved_ms="; check io-moved-to-node2 $? "$R"
wait_for 10 path_is 1 inaccessible; check path1-inaccessible $? "$(path_attr 1 ana_state)"
b="$(ctl ios 1)"; sleep 1; a="$(ctl ios 1)"
[ "$a" = "$b" ]; check node1-idle-while-inaccessible $? "node 1 ios $b -> $a"
R="$(ctl ana 1 optimized 1)"
echo "RESULT ana-back $R"
echo "$R" | grep -q "moved_ms="; check io-moved-back-to-node1 $? "$R"
touch /tmp/stop; wait $LOOP
[ ! -e /tmp/dd-errors ]; check reads-through-ana-changes $? "$(cat /tmp/dd-errors 2>/dev/null | wc -l) failed dd"

# 5 -------------------------------------------------------------- charging across paths
ctl ana 2 optimized 0 >/dev/null
wait_for 10 path_is 2 optimized; check both-optimized $? "node 2 $(path_attr 2 ana_state)"
for s in /sys/class/nvme-subsystem/nvme-subsys*; do [ "$(cat "$s/subsysnqn")" = "$NQN" ] && SUBSYS="$s"; done
echo round-robin > "$SUBSYS/iopolicy"; [ "$(cat "$SUBSYS/iopolicy")" = round-robin ]; check iopolicy-round-robin $?
ctl charge-begin >/dev/null
fio --name=cw --filename="$NS" --ioengine=libaio --direct=1 --rw=write --bs=64k --size=16M --iodepth=4 --output=/tmp/fio-cw.txt; rw=$?
fio --name=cr --filename="$NS" --ioengine=libaio --direct=1 --rw=read --bs=64k --size=16M --iodepth=4 --output=/tmp/fio-cr.txt; rr=$?
R="$(ctl charge-end)"
echo "CHARGE $R"
[ $rw = 0 ] && [ $rr = 0 ]; check charged-fio-ran $? "write rc $rw, read rc $rr"

nvme disconnect -n "$NQN" >/dev/null 2>&1
[ $FAIL = 0 ] && echo "HA-HOST PASSED" || echo "HA-HOST FAILED"
exit $FAIL
