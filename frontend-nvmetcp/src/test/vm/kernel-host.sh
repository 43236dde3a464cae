#!/bin/sh
# kernel-host.sh - the Linux kernel NVMe/TCP host (nvme-tcp + nvme-cli) against iotarget's
# target on the host (10.0.2.2).  Run by KernelHostTest; every step prints a CHECK line.
#
#   1 nvme discover lists the subsystems the host may see
#   2 connect without digests: id-ctrl, id-ns, fio randread/randwrite, write + sha256 read-back
#   3 connect with header and data digests (-g -G): the same, and the target confirms the digests
#   4 connect with SQ flow control disabled (C2HData SUCCESS, no response capsule): read-back
#   5 a host not in allowed_hosts is refused at Connect; the allowed host gets in
#   6 commands sent through the passthrough ioctls (io-passthru, write-zeroes, dsm, compare,
#     verify, flush) are charged to the namespace's group as classified (io.stat deltas)
#   7 namespace 2 enabled / disabled on the target: the host rescans (AEN, changed-ns log)
#   8 disconnect removes the controller
#
# Environment: NQN, PORT, CTL_PORT (host control channel, see ControlServer), GROUP (the group
# bound to namespace 1), RESTRICTED_NQN, ALLOWED_HOSTNQN, FIO_RUNTIME (default 2).
. /guest/lib.sh

ADDR=10.0.2.2
RUNTIME="${FIO_RUNTIME:-2}"
FAIL=0
check() {  # check LABEL CONDITION-RC [detail]
  if [ "$2" = 0 ]; then echo "CHECK $1 ok${3:+ ($3)}"; else echo "CHECK $1 FAILED${3:+ ($3)}"; FAIL=1; fi
}
ctl() { echo "$*" | nc "$ADDR" "$CTL_PORT"; }
# iostat_field FIELD: the field summed over the io.stat lines of $GROUP
iostat_field() { ctl cg-read "$GROUP/io.stat" | awk -v f="$1" '{ for (i = 2; i <= NF; i++) { split($i, a, "="); if (a[1] == f) s += a[2] } } END { print s + 0 }'; }
snapshot() { for f in rbytes wbytes rios wios dbytes dios; do eval "S_$f=$(iostat_field $f)"; done; }
# expect LABEL FIELD=DELTA...: compares io.stat now with the last snapshot
expect() {
  _label="$1"; shift; _ok=0; _got=""
  for _kv in "$@"; do
    _f="${_kv%%=*}"; _want="${_kv#*=}"; _now="$(iostat_field "$_f")"; eval "_was=\$S_$_f"
    _d=$((_now - _was)); _got="$_got $_f+$_d"
    [ "$_d" = "$_want" ] || _ok=1
  done
  check "charged $_label" $_ok "want $* got$_got"
}
disconnect_all() { nvme disconnect -n "$1" >/dev/null 2>&1; i=0; while nvme_ctrl_for_nqn "$1" >/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done; }
ns_count() { n=0; for b in /sys/block/nvme*n*; do case "${b##*/}" in nvme*c*n*) continue ;; esac
  [ "$(cat "$b/device/subsysnqn" 2>/dev/null)" = "$1" ] && n=$((n + 1)); done; echo $n; }

modprobe nvme-tcp || die "modprobe nvme-tcp"
log "kernel $(uname -r), target $ADDR:$PORT, subsystem $NQN, group $GROUP"

# 1 discovery
nvme discover -t tcp -a "$ADDR" -s "$PORT" > /tmp/disc.txt 2>&1; rc=$?
cat /tmp/disc.txt
grep -q "subnqn:  $NQN" /tmp/disc.txt && grep -q "current discovery subsystem" /tmp/disc.txt; found=$?
[ $rc = 0 ] && [ $found = 0 ]; check discover $? "rc=$rc, lists $NQN and the discovery subsystem"

# 2 plain connection
log "nvme connect (no digests)"
nvme connect -t tcp -a "$ADDR" -s "$PORT" -n "$NQN"; check connect $?
NS="$(wait_nvme_ns "$NQN" 20)" || die "no namespace for $NQN"
CTRL="$(nvme_ctrl_for_nqn "$NQN")"
log "controller $CTRL namespace $NS, $(cat /sys/class/nvme/${CTRL##*/}/queue_count) queues"
nvme id-ctrl "$CTRL" > /tmp/idctrl.txt; rc=$?
grep -E '^(mn|sn|cntlid|ver|mdts|oncs|vwc|subnqn|ioccsz|maxcmd|kas|nn) ' /tmp/idctrl.txt
grep -q "^subnqn *: $NQN" /tmp/idctrl.txt && grep -q "^mn *: iotarget" /tmp/idctrl.txt; check id-ctrl $((rc + $?))
nvme id-ns "$NS" > /tmp/idns.txt; rc=$?
grep -E '^(nsze|ncap|nmic|lbaf +0) ' /tmp/idns.txt
NSZE=$(awk '/^nsze/ {print $3}' /tmp/idns.txt)
SIZE=$(blockdev --getsize64 "$NS")
[ $((NSZE * 512)) = "$SIZE" ]; check id-ns $((rc + $?)) "nsze=$NSZE size=$SIZE"
fio_measure plain_randread "" --filename="$NS" --rw=randread --bs=4k --iodepth=32 --direct=1 --ioengine=libaio \
  --time_based --runtime="$RUNTIME"; check fio-read $?
fio_measure plain_randwrite "" --filename="$NS" --rw=randwrite --bs=4k --iodepth=32 --direct=1 --ioengine=libaio \
  --time_based --runtime="$RUNTIME" --offset=16M --size=16M; check fio-write $?
write_readback "$NS" 8 4 || FAIL=1
disconnect_all "$NQN"
[ -z "$(nvme_ctrl_for_nqn "$NQN")" ]; check disconnect $?

# 3 header and data digests
log "nvme connect -g -G (header and data digests)"
nvme connect -t tcp -a "$ADDR" -s "$PORT" -n "$NQN" -g -G; check connect-digests $?
NS="$(wait_nvme_ns "$NQN" 20)" || die "no namespace with digests"
ctl nvmet-connections | tee /tmp/conns.txt
n=$(grep -c "subsystem=$NQN .*hdgst=1 ddgst=1" /tmp/conns.txt); total=$(grep -c "subsystem=$NQN " /tmp/conns.txt)
[ "$n" -ge 2 ] && [ "$n" = "$total" ]; check target-sees-digests $? "$n of $total queues with hdgst=1 ddgst=1"
fio_measure digest_randrw "" --filename="$NS" --rw=randrw --bs=4k --iodepth=16 --direct=1 --ioengine=libaio \
  --time_based --runtime="$RUNTIME" --offset=16M --size=16M; check fio-digests $?
write_readback "$NS" 12 4 || FAIL=1
disconnect_all "$NQN"

# 4 SQ flow control disabled: reads complete with C2HData SUCCESS, no response capsule
log "nvme connect --disable-sqflow"
nvme connect -t tcp -a "$ADDR" -s "$PORT" -n "$NQN" --disable-sqflow; check connect-nosqflow $?
NS="$(wait_nvme_ns "$NQN" 20)" || die "no namespace without SQ flow control"
ctl nvmet-connections > /tmp/conns.txt
n=$(grep -c "subsystem=$NQN .*qid=[1-9].*sqflow=off" /tmp/conns.txt)
[ "$n" -ge 1 ]; check target-sqflow-off $? "$n IO queues without SQ flow control"
write_readback "$NS" 20 4 || FAIL=1
disconnect_all "$NQN"

# 5 allowed hosts
HOSTID="$(cat /proc/sys/kernel/random/uuid)"
nvme connect -t tcp -a "$ADDR" -s "$PORT" -n "$RESTRICTED_NQN" > /tmp/refused.txt 2>&1; rc=$?
cat /tmp/refused.txt
[ $rc != 0 ] && [ -z "$(nvme_ctrl_for_nqn "$RESTRICTED_NQN")" ]; check refused-host $? "rc=$rc: $(dmesg | grep -i 'connect' | tail -n 1)"
nvme connect -t tcp -a "$ADDR" -s "$PORT" -n "$RESTRICTED_NQN" --hostnqn="$ALLOWED_HOSTNQN" --hostid="$HOSTID"; check allowed-host $?
wait_nvme_ns "$RESTRICTED_NQN" 20 >/dev/null; check allowed-host-namespace $?
disconnect_all "$RESTRICTED_NQN"

# 6 passthrough ioctls are charged like any other IO (512-byte LBAs; block counts are 0's based)
log "passthrough commands and their charges to $GROUP"
nvme connect -t tcp -a "$ADDR" -s "$PORT" -n "$NQN"; check connect-passthru $?
NS="$(wait_nvme_ns "$NQN" 20)" || die "no namespace for passthrough"
sleep 1                                     # let the partition scan finish before counting
dd if=/dev/urandom of=/tmp/pt.bin bs=4096 count=1 2>/dev/null
snapshot; nvme io-passthru "$NS" --opcode=0x01 --namespace-id=1 --data-len=4096 --write --input-file=/tmp/pt.bin --cdw10=16 --cdw12=7 >/dev/null
check io-passthru-write $?; expect io-passthru-write wbytes=4096 wios=1 rios=0
snapshot; nvme io-passthru "$NS" --opcode=0x02 --namespace-id=1 --data-len=4096 --read --cdw10=16 --cdw12=7 --raw-binary > /tmp/pt.back
check io-passthru-read $?; expect io-passthru-read rbytes=4096 rios=1 wios=0
cmp -s /tmp/pt.bin /tmp/pt.back; check io-passthru-read-data $?
snapshot; nvme io-passthru "$NS" --opcode=0x81 --namespace-id=1 --data-len=512 --write --input-file=/tmp/pt.bin > /tmp/vendor.txt 2>&1; rc=$?
grep -qi "invalid.*opcode\|INVALID_OPCODE" /tmp/vendor.txt; inval=$?
[ $rc != 0 ] && [ $inval = 0 ]; check vendor-opcode-refused $? "$(tail -n 1 /tmp/vendor.txt)"
expect vendor-opcode-nothing wbytes=0 wios=0 rios=0
snapshot; nvme write-zeroes "$NS" --namespace-id=1 --start-block=64 --block-count=15 >/dev/null
check write-zeroes $?; expect write-zeroes wbytes=8192 wios=1
snapshot; nvme dsm "$NS" --namespace-id=1 --ad --slbs=128,256 --blocks=8,16 >/dev/null
check dsm $?; expect dsm-deallocate dbytes=12288 dios=2 wios=0
snapshot; nvme compare "$NS" --namespace-id=1 --start-block=16 --block-count=7 --data-size=4096 --data=/tmp/pt.bin >/dev/null
check compare $?; expect compare rbytes=4096 rios=1
snapshot; nvme verify "$NS" --namespace-id=1 --start-block=0 --block-count=7 >/dev/null
check verify $?; expect verify rbytes=4096 rios=1
snapshot; nvme flush "$NS" --namespace-id=1 >/dev/null
check flush $?; expect flush wios=1 wbytes=0

# 7 namespace changes reach the host (AEN -> changed namespace log -> rescan)
NS2="subsystems/$NQN/namespaces/2"
before=$(ns_count "$NQN")
ctl nvmet-mkdir "$NS2" >/dev/null; ctl nvmet-write "$NS2/device_path" default >/dev/null; ctl nvmet-write "$NS2/enable" 1
i=0; while [ "$(ns_count "$NQN")" -le "$before" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
[ "$(ns_count "$NQN")" = $((before + 1)) ]; check aen-namespace-added $? "$before -> $(ns_count "$NQN") namespaces"
ctl nvmet-write "$NS2/enable" 0
i=0; while [ "$(ns_count "$NQN")" -gt "$before" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
[ "$(ns_count "$NQN")" = "$before" ]; check aen-namespace-removed $? "back to $(ns_count "$NQN")"
ctl nvmet-rmdir "$NS2" >/dev/null

# 8 disconnect
disconnect_all "$NQN"
[ -z "$(nvme_ctrl_for_nqn "$NQN")" ]; check final-disconnect $?
i=0; while [ -n "$(ctl nvmet-connections)" ] && [ $i -lt 30 ]; do sleep 0.1; i=$((i + 1)); done
ctl nvmet-connections > /tmp/conns.txt
[ ! -s /tmp/conns.txt ]; check target-connections-closed $? "$(wc -l < /tmp/conns.txt) left"

[ $FAIL = 0 ] && echo "KERNEL-HOST PASSED" || echo "KERNEL-HOST FAILED"
exit $FAIL
