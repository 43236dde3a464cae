#!/bin/sh
# ana-host.sh - the Linux host (native multipath) follows the ANA state of iotarget's port
# without reconnecting.  Run by KernelHostTest; every step prints a CHECK line.
#
#   1 connect: the path's ana_grpid is 1 and its ana_state optimized; nvme ana-log agrees
#   2 ports/1/ana_groups/1/ana_state written on the target: non-optimized, persistent-loss,
#     inaccessible each reach the path's sysfs ana_state (ANA change event -> ANA log)
#   3 a read issued while the only path is inaccessible waits, and completes once the state
#     is optimized again
#   4 the same controller all along (no reconnect)
#
# Environment: NQN, PORT, CTL_PORT (host control channel, see ControlServer).
. /guest/lib.sh

ADDR=10.0.2.2
STATE=ports/1/ana_groups/1/ana_state
FAIL=0
check() {  # check LABEL CONDITION-RC [detail]
  if [ "$2" = 0 ]; then echo "CHECK $1 ok${3:+ ($3)}"; else echo "CHECK $1 FAILED${3:+ ($3)}"; FAIL=1; fi
}
ctl() { echo "$*" | nc "$ADDR" "$CTL_PORT"; }
path_attr() { cat /sys/class/nvme/"${CTRL##*/}"/nvme*c*n1/"$1" 2>/dev/null; }
# wait_state STATE: up to 10 s for the path to report STATE
wait_state() { i=0; while [ "$(path_attr ana_state)" != "$1" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
  [ "$(path_attr ana_state)" = "$1" ]; }

modprobe nvme-tcp || die "modprobe nvme-tcp"
log "kernel $(uname -r), multipath $(cat /sys/module/nvme_core/parameters/multipath), target $ADDR:$PORT"

nvme connect -t tcp -a "$ADDR" -s "$PORT" -n "$NQN"; check connect $?
NS="$(wait_nvme_ns "$NQN" 20)" || die "no namespace for $NQN"
CTRL="$(nvme_ctrl_for_nqn "$NQN")"
CNTLID="$(cat /sys/class/nvme/${CTRL##*/}/cntlid)"
log "controller $CTRL (cntlid $CNTLID) namespace $NS, path $(ls -d /sys/class/nvme/${CTRL##*/}/nvme*c*n1 2>/dev/null)"
[ "$(path_attr ana_grpid)" = 1 ]; check ana-grpid $? "$(path_attr ana_grpid)"
[ "$(path_attr ana_state)" = optimized ]; check ana-initial $? "$(path_attr ana_state)"
nvme ana-log "$CTRL" > /tmp/ana.txt 2>&1; rc=$?
cat /tmp/ana.txt
grep -q "optimized" /tmp/ana.txt; check ana-log $((rc + $?))

for s in non-optimized persistent-loss inaccessible; do
  ctl nvmet-write "$STATE" "$s" >/dev/null
  wait_state "$s"; check "ana-$s" $? "path reads $(path_attr ana_state)"
done

dd if="$NS" of=/dev/null bs=4096 count=1 iflag=direct 2>/dev/null &
DD=$!
sleep 2
kill -0 $DD 2>/dev/null; check io-waits-while-inaccessible $?
ctl nvmet-write "$STATE" optimized >/dev/null
wait_state optimized; check ana-optimized-again $? "path reads $(path_attr ana_state)"
i=0; while kill -0 $DD 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
if kill -0 $DD 2>/dev/null; then check io-resumes 1 "still waiting"; kill $DD; else wait $DD; check io-resumes $?; fi
dd if="$NS" of=/dev/null bs=4096 count=16 iflag=direct 2>/dev/null; check io-after $?

[ "$(nvme_ctrl_for_nqn "$NQN")" = "$CTRL" ] && [ "$(cat /sys/class/nvme/${CTRL##*/}/cntlid)" = "$CNTLID" ]
check same-controller $? "$CTRL cntlid $CNTLID, state $(cat /sys/class/nvme/${CTRL##*/}/state)"
nvme disconnect -n "$NQN" >/dev/null 2>&1

[ $FAIL = 0 ] && echo "ANA-HOST PASSED" || echo "ANA-HOST FAILED"
exit $FAIL
