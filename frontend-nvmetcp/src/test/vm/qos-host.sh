#!/bin/sh
# qos-host.sh - the Linux host reads its own QoS log page (C0h) with nvme-cli.  Run by
# KernelHostTest; every step prints a CHECK line, and each page is printed as hex lines
# (QOSHEX1 before the host's IO, QOSHEX2 after) for the test to decode on the host, since the
# guest has no python3 for scripts/nvme-qos.
#
#   1 connect with a fixed host NQN (its own group under cgroup_per_host)
#   2 nvme get-log of C0h for namespace 1, raw binary: 4096 bytes
#   3 5 direct 4 KiB writes and 3 direct 4 KiB reads, then the page again
#
# Environment: NQN, PORT, HOSTNQN.
. /guest/lib.sh

ADDR=10.0.2.2
FAIL=0
check() {  # check LABEL CONDITION-RC [detail]
  if [ "$2" = 0 ]; then echo "CHECK $1 ok${3:+ ($3)}"; else echo "CHECK $1 FAILED${3:+ ($3)}"; FAIL=1; fi
}
# page N: reads the page into /tmp/qos.N and prints it as QOSHEXN lines
page() {
  nvme get-log "$CTRL" --log-id=0xc0 --namespace-id=1 --log-len=4096 --raw-binary > "/tmp/qos.$1"; rc=$?
  size=$(wc -c < "/tmp/qos.$1")
  [ $rc = 0 ] && [ "$size" = 4096 ]; check "get-log-$1" $? "rc $rc, $size bytes"
  od -An -tx1 -v "/tmp/qos.$1" | sed "s/^/QOSHEX$1 /"
}

modprobe nvme-tcp || die "modprobe nvme-tcp"
log "kernel $(uname -r), $(nvme version), target $ADDR:$PORT"
nvme connect -t tcp -a "$ADDR" -s "$PORT" -n "$NQN" --hostnqn="$HOSTNQN"; check connect $?
NS="$(wait_nvme_ns "$NQN" 20)" || die "no namespace for $NQN"
CTRL="$(nvme_ctrl_for_nqn "$NQN")"
log "controller $CTRL, namespace $NS"
sleep 1                                      # the kernel's partition scan reads are done before the first page

page 1
for i in 0 1 2 3 4; do dd if=/dev/urandom of="$NS" bs=4096 seek=$((100 + i * 7)) count=1 oflag=direct conv=notrunc 2>/dev/null || FAIL=1; done
for i in 0 1 2; do dd if="$NS" of=/dev/null bs=4096 skip=$((300 + i * 5)) count=1 iflag=direct 2>/dev/null || FAIL=1; done
check io $FAIL "5 writes, 3 reads of 4 KiB"
page 2
nvme disconnect -n "$NQN" >/dev/null 2>&1

[ $FAIL = 0 ] && echo "QOS-HOST PASSED" || echo "QOS-HOST FAILED"
exit $FAIL
