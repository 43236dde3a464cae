#!/bin/sh
# ha-global.sh - issue 20.4 with io.max.global: tenant a's riops held across two `iotarget serve`
# nodes of one shared subsystem while the Linux host reads round-robin over both paths, and
# carried by node 2 alone once node 1 is SIGKILLed.  Run by HighAvailabilityTest, which measures
# the nodes (spread, takeover) and judges the numbers; every step prints a CHECK line.
#
# Environment: NQN, PORT1, PORT2 (the nodes' NVMe/TCP ports), CTL_PORT (the test's channel).
. /guest/lib.sh

ADDR=10.0.2.2
FAIL=0
check() {  # check LABEL CONDITION-RC [detail]
  if [ "$2" = 0 ]; then echo "CHECK $1 ok${3:+ ($3)}"; else echo "CHECK $1 FAILED${3:+ ($3)}"; FAIL=1; fi
}
ctl() { echo "$*" | nc "$ADDR" "$CTL_PORT"; }

modprobe nvme-tcp || die "modprobe nvme-tcp"
for p in "$PORT1" "$PORT2"; do
  nvme connect -t tcp -a "$ADDR" -s "$p" -n "$NQN" --reconnect-delay 1 --ctrl-loss-tmo 120 || die "connect $p"
done
NS="$(wait_nvme_ns "$NQN" 20)" || die "no namespace for $NQN"
for s in /sys/class/nvme-subsystem/nvme-subsys*; do [ "$(cat "$s/subsysnqn")" = "$NQN" ] && SUBSYS="$s"; done
n=0; for c in "$SUBSYS"/nvme[0-9]*; do [ -e "$c/cntlid" ] && n=$((n + 1)); done
heads="$(ls /dev | grep -c '^nvme[0-9]*n[0-9]*$')"
[ "$n" = 2 ] && [ "$heads" = 1 ]; check two-paths-one-namespace $? "$n controllers, $heads namespace node(s): $NS"
echo round-robin > "$SUBSYS/iopolicy"; [ "$(cat "$SUBSYS/iopolicy")" = round-robin ]; check iopolicy-round-robin $?

# fio reads until both measurements are done, then is stopped (SIGINT: it ends its jobs, reports
# and exits 128); --runtime only bounds a run whose measurements never answer.
fio --name=limited --filename="$NS" --ioengine=libaio --direct=1 --rw=randread --bs=4k --size=32M --iodepth=16 \
    --time_based --runtime=300 --output=/tmp/fio-global.txt &
FIO=$!
R="$(ctl spread)"
echo "RESULT spread $R"
echo "$R" | grep -q "node1_riops="; check spread-measured $? "$R"
R="$(ctl takeover)"
echo "RESULT takeover $R"
echo "$R" | grep -q "share_ms="; check takeover-measured $? "$R"
kill -INT $FIO
i=0; while kill -0 $FIO 2>/dev/null && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
if kill -0 $FIO 2>/dev/null; then kill -KILL $FIO; rc=124; else wait $FIO; rc=$?; fi
cat /tmp/fio-global.txt
[ $rc = 128 ] && grep -q "err= 0" /tmp/fio-global.txt; check fio-no-io-error $? "fio rc $rc (128: stopped by SIGINT)"

nvme disconnect -n "$NQN" >/dev/null 2>&1
[ $FAIL = 0 ] && echo "HA-GLOBAL PASSED" || echo "HA-GLOBAL FAILED"
exit $FAIL
