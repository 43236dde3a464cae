#!/bin/sh
# rbd-multipath.sh - docs/rbd.md's walkthrough "Two gateways over one image" as the Linux host
# follows it: two `iotarget serve` gateways of one gateway group serve one shared subsystem whose
# namespace is one RBD image, and the 6.1 host's native multipath makes one namespace of them.
# Run by RbdMultipathKernelHostTest; every step prints a CHECK line, every measurement a RESULT line.
#
#   1 both gateways connected (--reconnect-delay 1): one subsystem, two controllers, one namespace
#     node; `nvme list-subsys` shows gateway 1's path optimized (it owns the ANA group), gateway 2's
#     non-optimized
#   2 fio writes 32 MiB with crc32c verify through the multipath device; gateway 1 is SIGKILLed
#     mid-run (the test: gateway 2 blocklists gateway 1's RADOS client, then owns the group): fio
#     ends with no IO error and every block verifies (through gateway 2); gateway 2's path turns
#     optimized
#   3 the whole namespace read back through the host hashes the same as `rbd export` of the image
#     (the test exports it)
#   4 gateway 1 started again (a new process: a new RADOS client, not blocklisted): its path is live
#     again, non-optimized (gateway 2 keeps the one group), and a read through it succeeds
#
# Environment: NQN, PORT1, PORT2 (the gateways' NVMe/TCP ports), CTL_PORT (the test's channel).
. /guest/lib.sh

ADDR=10.0.2.2
# check, ctl, the two nodes' paths, connect_both, wait_fio and fio_ok: the helpers the two-node scripts share
. /guest/files/two-nodes.sh
# paths STATE: how many of list-subsys' paths are live in ANA state STATE
paths() { nvme list-subsys "$NS" 2>/dev/null | grep -c " live $1\$"; }

# 1 -------------------------------------------------------------- one namespace over two gateways
connect_both
wait_for 20 path_is 1 optimized && wait_for 20 path_is 2 non-optimized; check ana-initial $? "gateway 1 $(path_attr 1 ana_state), gateway 2 $(path_attr 2 ana_state)"
nvme list-subsys "$NS"
[ "$(paths optimized)" = 1 ] && [ "$(paths non-optimized)" = 1 ]; check list-subsys-optimized-and-non-optimized $?

# 2 -------------------------------------------------------------- gateway 1 killed under fio
fio --name=failover --filename="$NS" --ioengine=libaio --direct=1 --rw=write --bs=64k --size=32M --iodepth=4 \
    --rate=4m --verify=crc32c --verify_fatal=1 --do_verify=1 --output=/tmp/fio-failover.txt &
FIO=$!
sleep 3
R="$(ctl kill)"
echo "RESULT failover $R"
echo "$R" | grep -q "blocklisted=yes fenced_before_owner=yes"; check gateway1-killed-blocklisted-before-takeover $? "$R"
wait_fio $FIO 300; rc=$?
cat /tmp/fio-failover.txt
[ $rc = 0 ] && fio_ok /tmp/fio-failover.txt; check fio-no-io-error-every-block-verified $? "fio rc $rc"
echo "RESULT failover-fio-write $(awk '/ write:/ { w = 1 } w && / clat \(/ { print; exit }' /tmp/fio-failover.txt)"
wait_for 30 live_and 2 optimized; check gateway2-path-optimized $? "gateway 2 $(ctrl_state 2) $(path_attr 2 ana_state), gateway 1 $(ctrl_state 1)"
nvme list-subsys "$NS"

# 3 -------------------------------------------------------------- the host's data is the image's
SUM="$(dd if="$NS" bs=1M iflag=direct 2>/dev/null | sha256sum | cut -d' ' -f1)"
R="$(ctl export)"
echo "RESULT export host_sha256=$SUM $R"
[ "$R" = "sha256=$SUM" ]; check rbd-export-matches-host $? "host $SUM, $R"

# 4 -------------------------------------------------------------- gateway 1 back, a new client
ctl start >/dev/null
wait_for 60 live_and 1 non-optimized; check gateway1-path-live-again $? "gateway 1 $(ctrl_state 1) $(path_attr 1 ana_state)"
# a path's own block device is hidden under native multipath: a read through gateway 1's controller
nvme read /dev/"$(ctrl_of 1)" --namespace-id=1 --start-block=0 --block-count=7 --data-size=4096 --data=/tmp/r1 > /tmp/r1.txt 2>&1; rc=$?
cat /tmp/r1.txt
[ $rc = 0 ] && [ "$(dd if="$NS" bs=4096 count=1 iflag=direct 2>/dev/null | sha256sum | cut -d' ' -f1)" = "$(sha256sum < /tmp/r1 | cut -d' ' -f1)" ]
check read-through-gateway1 $? "nvme read rc $rc"
nvme list-subsys "$NS"

nvme disconnect -n "$NQN" >/dev/null 2>&1
[ $FAIL = 0 ] && echo "RBD-MULTIPATH PASSED" || echo "RBD-MULTIPATH FAILED"
exit $FAIL
