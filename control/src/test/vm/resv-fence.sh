#!/bin/sh
# resv-fence.sh - issue 31 with the Linux host: two `iotarget serve` nodes of one shared subsystem
# (one O_DIRECT file, reservations in a three-member etcd cluster) as the 6.1 host's native
# multipath sees them.  The guest is host A.  Run by ReservationFenceKernelHostTest; every step
# prints a CHECK line, every measurement a RESULT line.
#
#   1 A connects through both nodes (node 1 optimized, node 2 non-optimized), registers and takes
#     Write Exclusive
#   2 fio writes with crc32c verify through the multipath device; node 1 is cut off from etcd
#     (the test stops its relays): node 1 fences, its ANA log page shows the group inaccessible
#     and the host moves the IO to node 2; fio ends with no IO error and every block verified
#   3 node 1 reaches etcd again: it re-joins, its path is optimized again and IO goes through it
#   4 A writes a pattern in a loop through node 1; host B (the test's own client) preempt-and-
#     aborts A through node 2 and writes its pattern over the same blocks; none of A's writes
#     started after B's preempt completed succeeds, A's next write gets Reservation Conflict, the
#     report shows B holding, and the file holds B's data at every block B wrote (the test reads it)
#   5 B clears and A takes Write Exclusive again; while A writes through node 1, node 1 is cut off
#     from etcd and B preempt-and-aborts through node 2 at once (its preempt completes only once
#     node 1's lease is gone); the same checks on A's writes and the file
#
# Environment: NQN, PORT1, PORT2 (the nodes' NVMe/TCP ports), CTL_PORT (the test's channel).
. /guest/lib.sh

ADDR=10.0.2.2
A_NQN=nqn.2014-08.org.nvmexpress:uuid:aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa
A_ID=aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa
# blocks A and B write in step 4: 4 KiB each, 0..BLOCKS-1
BLOCKS=64
# check, ctl, the two nodes' paths, connect_both, wait_fio and fio_ok: the helpers the two-node scripts share
. /guest/files/two-nodes.sh
# centiseconds since boot (busybox date has no %N)
now_cs() { awk '{ printf "%d", $1 * 100 }' /proc/uptime; }
has_key() { grep -Eiq "rkey *: *(0x)?0*$1\$" /tmp/report.txt; }

# 1 -------------------------------------------------------------- A through both nodes, holding Write Exclusive
connect_both -q "$A_NQN" -I "$A_ID"
wait_for 20 path_is 1 optimized && wait_for 20 path_is 2 non-optimized; check ana-initial $? "node 1 $(path_attr 1 ana_state), node 2 $(path_attr 2 ana_state)"
nvme resv-register "$NS" -n 1 -k 0xa -r 0; check a-register $?
nvme resv-acquire "$NS" -n 1 -c 0xa -t 1 -a 0; check a-acquire-write-exclusive $?

# 2 -------------------------------------------------------------- node 1 cut off from etcd under fio
fio --name=fence --filename="$NS" --ioengine=libaio --direct=1 --rw=write --bs=64k --size=32M --iodepth=4 \
    --rate=4m --verify=crc32c --verify_fatal=1 --do_verify=1 --output=/tmp/fio-fence.txt &
FIO=$!
sleep 3
b="$(ctl ios 1)"; sleep 1; a="$(ctl ios 1)"
[ "$a" -gt "$b" ] 2>/dev/null; check io-through-node1-before $? "node 1 ios $b -> $a"
t0="$(now_cs)"
ctl cut >/dev/null
wait_for 30 path_is 1 inaccessible; rc=$?
t1="$(now_cs)"
check path1-inaccessible $rc "$(path_attr 1 ana_state) after $(( (t1 - t0) * 10 )) ms"
R="$(ctl fenced)"
echo "RESULT cut host_saw_inaccessible_ms=$(( (t1 - t0) * 10 )) $R"
echo "$R" | grep -q "fenced_ms="; check node1-fenced $? "$R"
nvme ana-log /dev/"$(ctrl_of 1)" > /tmp/ana1.txt 2>&1; rc=$?
cat /tmp/ana1.txt
[ $rc = 0 ] && grep -qi "inaccessible" /tmp/ana1.txt; check node1-ana-log-inaccessible $?
b1="$(ctl ios 1)"; b2="$(ctl ios 2)"; sleep 2; a1="$(ctl ios 1)"; a2="$(ctl ios 2)"
[ "$a1" = "$b1" ] && [ "$a2" -gt "$b2" ] 2>/dev/null; check io-moved-to-node2 $? "node 1 ios $b1 -> $a1, node 2 ios $b2 -> $a2"
wait_fio $FIO 300; rc=$?
cat /tmp/fio-fence.txt
[ $rc = 0 ] && fio_ok /tmp/fio-fence.txt; check fio-no-io-error-every-block-verified $? "fio rc $rc"
echo "RESULT fence-fio-write $(awk '/ write:/ { w = 1 } w && / clat \(/ { print; exit }' /tmp/fio-fence.txt)"

# 3 -------------------------------------------------------------- node 1 back
t0="$(now_cs)"
R="$(ctl restore)"
wait_for 60 live_and 1 optimized; rc=$?
t1="$(now_cs)"
echo "RESULT restore host_saw_optimized_ms=$(( (t1 - t0) * 10 )) $R"
check node1-path-optimized-again $rc "state $(ctrl_state 1), $(path_attr 1 ana_state), $R"
b="$(ctl ios 1)"
dd if="$NS" of=/dev/null bs=64k count=64 iflag=direct 2>/dev/null
a="$(ctl ios 1)"
[ "$a" -gt "$b" ] 2>/dev/null; check io-through-node1-again $? "node 1 ios $b -> $a"

# 4 -------------------------------------------------------------- B preempt-and-aborts A through node 2
dd if=/dev/zero bs=4096 count=1 2>/dev/null | tr '\0' '\252' > /tmp/a.blk
# write_loop TAG LOG: A writes its blocks over and over until /tmp/stop; each write is logged with
# whether it started after TAG existed (made once B's preempt completed: the test answered)
write_loop() {
  rm -f /tmp/stop "$1" "$2"
  ( while [ ! -e /tmp/stop ]; do
      i=0
      while [ $i -lt $BLOCKS ] && [ ! -e /tmp/stop ]; do
        when=before; [ -e "$1" ] && when=after
        if dd if=/tmp/a.blk of="$NS" bs=4096 seek=$i count=1 oflag=direct conv=notrunc 2>/tmp/a-dd.err; then
          echo "$when ok" >> "$2"
        else
          echo "$when error $(grep -m1 error /tmp/a-dd.err)" >> "$2"
        fi
        i=$((i + 1))
      done
    done ) &
  LOOP=$!
}
write_loop /tmp/preempted /tmp/a-log
sleep 2
b="$(ctl ios 1)"
R="$(ctl preempt)"
touch /tmp/preempted
echo "RESULT preempt $R"
echo "$R" | grep -q "preempt_status=0 " && echo "$R" | grep -q "b_write_failures=0"; check b-preempts-and-writes-through-node2 $? "$R"
sleep 2
touch /tmp/stop; wait $LOOP
before_ok="$(grep -c '^before ok' /tmp/a-log)"
after_ok="$(grep -c '^after ok' /tmp/a-log)"
after_err="$(grep -c '^after error' /tmp/a-log)"
echo "RESULT a-writes before_ok=$before_ok after_ok=$after_ok after_error=$after_err node1_ios_before_preempt=$b"
grep '^after error' /tmp/a-log | sort | uniq -c
[ "$before_ok" -gt 0 ]; check a-wrote-through-node1-before $? "$before_ok writes"
[ "$after_ok" = 0 ] && [ "$after_err" -gt 0 ]; check a-writes-after-preempt-refused $? "$after_ok succeeded, $after_err refused"
dd if=/tmp/a.blk of="$NS" bs=4096 seek=0 count=1 oflag=direct conv=notrunc 2>/tmp/a-dd.err; rc=$?
# a Reservation Conflict reaches a block device's user as EBADE (BLK_STS_NEXUS), not as EIO (a path error)
[ $rc != 0 ] && grep -q "Invalid exchange" /tmp/a-dd.err; check a-write-conflict $? "$(grep -m1 error /tmp/a-dd.err)"
nvme resv-report "$NS" -n 1 -e > /tmp/report.txt 2>&1
cat /tmp/report.txt
grep -q "rtype *: 1" /tmp/report.txt && has_key b && ! has_key a; check b-holds-a-gone $?
R="$(ctl check)"
echo "RESULT disk $R"
echo "$R" | grep -q "mismatched=0 "; check disk-holds-b-data $? "$R"

# 5 -------------------------------------------------------------- node 1 cut off and a preempt through node 2 at once
R="$(ctl reset)"
echo "$R" | grep -q "clear_status=0 register_status=0"; check b-clears-and-registers-again $? "$R"
nvme resv-register "$NS" -n 1 -k 0xa -r 0 && nvme resv-acquire "$NS" -n 1 -c 0xa -t 1 -a 0; check a-holds-again $?
write_loop /tmp/preempted2 /tmp/a-log2
sleep 2
R="$(ctl cut-preempt)"
touch /tmp/preempted2
echo "RESULT cut-preempt $R"
echo "$R" | grep -q "preempt_status=0 " && echo "$R" | grep -q "b_write_failures=0"; check b-preempts-while-node1-cut $? "$R"
sleep 2
touch /tmp/stop; wait $LOOP
before_ok="$(grep -c '^before ok' /tmp/a-log2)"
after_ok="$(grep -c '^after ok' /tmp/a-log2)"
after_err="$(grep -c '^after error' /tmp/a-log2)"
echo "RESULT a-writes-2 before_ok=$before_ok after_ok=$after_ok after_error=$after_err path1=$(path_attr 1 ana_state)"
grep '^after error' /tmp/a-log2 | sort | uniq -c
[ "$after_ok" = 0 ] && [ "$after_err" -gt 0 ]; check a-writes-after-preempt-2-refused $? "$after_ok succeeded, $after_err refused"
R="$(ctl check2)"
echo "RESULT disk-2 $R"
echo "$R" | grep -q "mismatched=0 "; check disk-holds-b-data-2 $? "$R"

nvme disconnect -n "$NQN" >/dev/null 2>&1
[ $FAIL = 0 ] && echo "RESV-FENCE PASSED" || echo "RESV-FENCE FAILED"
exit $FAIL
