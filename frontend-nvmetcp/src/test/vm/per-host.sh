#!/bin/sh
# per-host.sh - the Linux host connects to a namespace with cgroup_per_host 1 and reads; the
# target charges it in a child named by its host NQN (KernelHostTest checks the target side).
#
#   1 connect, 2 a 1 MiB O_DIRECT read, 3 HOSTNQN line: the NQN the kernel connected with
#
# Environment: NQN, PORT.
. /guest/lib.sh

ADDR=10.0.2.2
FAIL=0
check() {  # check LABEL CONDITION-RC [detail]
  if [ "$2" = 0 ]; then echo "CHECK $1 ok${3:+ ($3)}"; else echo "CHECK $1 FAILED${3:+ ($3)}"; FAIL=1; fi
}

modprobe nvme-tcp || die "modprobe nvme-tcp"
nvme connect -t tcp -a "$ADDR" -s "$PORT" -n "$NQN"; check connect $?
NS="$(wait_nvme_ns "$NQN" 20)" || die "no namespace for $NQN"
CTRL="$(nvme_ctrl_for_nqn "$NQN")"
echo "HOSTNQN $(cat /sys/class/nvme/${CTRL##*/}/hostnqn)"
dd if="$NS" of=/dev/null bs=1M count=1 iflag=direct 2>/dev/null; check read $?
nvme disconnect -n "$NQN" >/dev/null; check disconnect $?
exit $FAIL
