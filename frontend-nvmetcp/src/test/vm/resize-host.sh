#!/bin/sh
# resize-host.sh - the Linux host sees its namespace grow online (revalidate_size) without
# reconnecting.  Run by KernelHostTest; every step prints a CHECK line.
#
#   1 connect: the block device has the backend's 64 MiB
#   2 the target's memory backend grows to 128 MiB (revalidate): the Namespace Attribute Changed
#     event makes the host re-read Identify Namespace, and the block device has 128 MiB
#   3 a block written past the old end reads back; one written before the resize is intact
#   4 a shrink while the namespace is in use is refused (EBUSY); the size stays
#   5 the same controller all along (no reconnect)
#
# Environment: NQN, PORT, CTL_PORT (host control channel, see ControlServer).
. /guest/lib.sh

ADDR=10.0.2.2
FAIL=0
check() {  # check LABEL CONDITION-RC [detail]
  if [ "$2" = 0 ]; then echo "CHECK $1 ok${3:+ ($3)}"; else echo "CHECK $1 FAILED${3:+ ($3)}"; FAIL=1; fi
}
ctl() { echo "$*" | nc "$ADDR" "$CTL_PORT"; }
sectors() { cat /sys/block/"${NS##*/}"/size; }
# wait_sectors N: up to 20 s for the block device to have N 512-byte sectors
wait_sectors() { i=0; while [ "$(sectors)" != "$1" ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done; [ "$(sectors)" = "$1" ]; }

modprobe nvme-tcp || die "modprobe nvme-tcp"
log "kernel $(uname -r), target $ADDR:$PORT"
nvme connect -t tcp -a "$ADDR" -s "$PORT" -n "$NQN"; check connect $?
NS="$(wait_nvme_ns "$NQN" 20)" || die "no namespace for $NQN"
CTRL="$(nvme_ctrl_for_nqn "$NQN")"
CNTLID="$(cat /sys/class/nvme/${CTRL##*/}/cntlid)"
log "controller $CTRL (cntlid $CNTLID), namespace $NS"
[ "$(sectors)" = 131072 ]; check size-before $? "$(sectors) sectors"

dd if=/dev/urandom of=/tmp/before bs=4096 count=1 2>/dev/null
dd if=/tmp/before of="$NS" bs=4096 seek=16000 count=1 oflag=direct conv=notrunc 2>/dev/null   # 62.5 MiB
answer="$(ctl revalidate default 134217728)"
log "revalidate to 128 MiB: $answer"
wait_sectors 262144; check size-grown $? "$(sectors) sectors"

dd if=/dev/urandom of=/tmp/after bs=4096 count=1 2>/dev/null
dd if=/tmp/after of="$NS" bs=4096 seek=25600 count=1 oflag=direct conv=notrunc 2>/dev/null; rc=$?   # 100 MiB
dd if="$NS" of=/tmp/after.read bs=4096 skip=25600 count=1 iflag=direct 2>/dev/null
cmp -s /tmp/after /tmp/after.read; check io-past-old-end $((rc + $?))
dd if="$NS" of=/tmp/before.read bs=4096 skip=16000 count=1 iflag=direct 2>/dev/null
cmp -s /tmp/before /tmp/before.read; check data-kept $?

answer="$(ctl revalidate default 33554432)"
case "$answer" in "ERR EBUSY"*) rc=0 ;; *) rc=1 ;; esac
sleep 1
[ $rc = 0 ] && [ "$(sectors)" = 262144 ]; check shrink-refused $? "$answer; $(sectors) sectors"

[ "$(nvme_ctrl_for_nqn "$NQN")" = "$CTRL" ] && [ "$(cat /sys/class/nvme/${CTRL##*/}/cntlid)" = "$CNTLID" ]
check same-controller $? "$CTRL cntlid $CNTLID, state $(cat /sys/class/nvme/${CTRL##*/}/state)"
nvme disconnect -n "$NQN" >/dev/null 2>&1

[ $FAIL = 0 ] && echo "RESIZE-HOST PASSED" || echo "RESIZE-HOST FAILED"
exit $FAIL
