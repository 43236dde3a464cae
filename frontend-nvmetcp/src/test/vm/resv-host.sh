#!/bin/sh
# resv-host.sh - NVMe persistent reservations kept across two iotarget nodes, judged by the
# Linux host (native multipath) and nvme-cli 2.3.  Run by ReservationKernelHostTest; every
# step prints a CHECK line.  Two host identities (host NQN + host ID) take turns:
#
#   1 A connects through both nodes (one multipath device), registers, takes Write Exclusive,
#     writes; the report shows A holding it
#   2 B connects through both nodes: reads, but its write gets Reservation Conflict; B registers
#   3 node 1 is killed (control channel): B's write is still refused, through node 2
#   4 B preempts A through node 2: B writes; the report shows B holding it
#   5 A comes back through node 2: its write gets Reservation Conflict, its read is served
#
# Environment: NQN, PORT1, PORT2 (the nodes), CTL_PORT (kill-node1).
. /guest/lib.sh

ADDR=10.0.2.2
A_NQN=nqn.2014-08.org.nvmexpress:uuid:aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa
A_ID=aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa
B_NQN=nqn.2014-08.org.nvmexpress:uuid:bbbbbbbb-bbbb-bbbb-bbbb-bbbbbbbbbbbb
B_ID=bbbbbbbb-bbbb-bbbb-bbbb-bbbbbbbbbbbb
FAIL=0
check() {  # check LABEL CONDITION-RC [detail]
  if [ "$2" = 0 ]; then echo "CHECK $1 ok${3:+ ($3)}"; else echo "CHECK $1 FAILED${3:+ ($3)}"; FAIL=1; fi
}
refused() { [ "$1" != 0 ]; }
ctl() { echo "$*" | nc "$ADDR" "$CTL_PORT"; }
# connect_as HOSTNQN HOSTID PORT...: one controller per port, then the multipath device
connect_as() {
  _q=$1; _i=$2; shift 2
  for _p in "$@"; do nvme connect -t tcp -a "$ADDR" -s "$_p" -n "$NQN" -q "$_q" -I "$_i" || return 1; done
  NS="$(wait_nvme_ns "$NQN" 20)" || return 1
  _w=0; while [ "$(paths)" -lt "$#" ] && [ $_w -lt 100 ]; do sleep 0.1; _w=$((_w + 1)); done
  log "$_q: $NS, live paths: $(paths)"
}
# paths: live controllers of NQN with a path to namespace 1 (nvmeXcYn1 under the controller)
paths() {
  _n=0
  for _c in /sys/class/nvme/nvme*; do
    [ "$(cat "$_c/subsysnqn" 2>/dev/null)" = "$NQN" ] && [ "$(cat "$_c/state" 2>/dev/null)" = live ] && ls -d "$_c"/nvme*c*n1 >/dev/null 2>&1 && _n=$((_n + 1))
  done
  echo $_n
}
# heads: block devices (not per-path ones) of NQN
heads() { _n=0; for _b in /sys/block/nvme*n*; do case "${_b##*/}" in nvme*c*n*) continue ;; esac
  [ "$(cat "$_b/device/subsysnqn" 2>/dev/null)" = "$NQN" ] && _n=$((_n + 1)); done; echo $_n; }
# disconnect: every controller of the subsystem, and wait until its device is gone
disconnect() {
  nvme disconnect -n "$NQN" >/dev/null 2>&1
  _w=0; while [ -b "$NS" ] && [ $_w -lt 100 ]; do sleep 0.1; _w=$((_w + 1)); done
}
has_key() { grep -Eiq "rkey *: *(0x)?0*$1\$" /tmp/report.txt; }
write1() { dd if=/dev/urandom of="$NS" bs=4096 count=1 seek="$1" oflag=direct 2>/tmp/dd.err; }
read1() { dd if="$NS" of=/dev/null bs=4096 count=1 skip="$1" iflag=direct 2>/tmp/dd.err; }
report() { nvme resv-report "$NS" -n 1 -e > /tmp/report.txt 2>&1; _rc=$?; cat /tmp/report.txt; return $_rc; }

modprobe nvme-tcp || die "modprobe nvme-tcp"
log "kernel $(uname -r), multipath $(cat /sys/module/nvme_core/parameters/multipath), nodes $ADDR:$PORT1 and $ADDR:$PORT2"

# 1 A through both nodes
connect_as "$A_NQN" "$A_ID" "$PORT1" "$PORT2"; check a-connect-two-paths $?
[ "$(paths)" = 2 ] && [ "$(heads)" = 1 ]; check a-one-device-two-paths $? "$(heads) device(s), $(paths) live paths"
nvme resv-register "$NS" -n 1 -k 0xa -r 0; check a-register $?
nvme resv-acquire "$NS" -n 1 -c 0xa -t 1 -a 0; check a-acquire-write-exclusive $?
write1 10; check a-holder-writes $? "$(cat /tmp/dd.err | tail -1)"
report; check a-report $?
grep -q "rtype *: 1" /tmp/report.txt && has_key a; check a-report-holder $?
disconnect

# 2 B through both nodes
connect_as "$B_NQN" "$B_ID" "$PORT1" "$PORT2"; check b-connect-two-paths $?
read1 10; check b-reads $?
write1 20; refused $?; check b-write-conflict $? "$(tail -1 /tmp/dd.err)"
nvme resv-acquire "$NS" -n 1 -c 0xb -t 1 -a 0 > /tmp/acq.txt 2>&1; refused $?; check b-acquire-refused-unregistered $? "$(cat /tmp/acq.txt)"
nvme resv-register "$NS" -n 1 -k 0xb -r 0; check b-register $?
nvme resv-acquire "$NS" -n 1 -c 0xb -t 1 -a 0 > /tmp/acq.txt 2>&1; refused $?; check b-acquire-conflict $? "$(cat /tmp/acq.txt)"
grep -qi "reservation.conflict" /tmp/acq.txt; check b-nvme-cli-says-conflict $?

# 3 node 1 dies
[ "$(ctl kill-node1)" = ok ]; check node1-killed $?
write1 20; refused $?; check b-write-conflict-after-node1-death $? "$(tail -1 /tmp/dd.err)"
report; check b-report-through-node2 $?
has_key a && has_key b; check b-report-two-registrants $?

# 4 B preempts A through node 2
nvme resv-acquire "$NS" -n 1 -c 0xb -p 0xa -t 1 -a 1; check b-preempts-a $?
write1 20; check b-writes-after-preempt $? "$(tail -1 /tmp/dd.err)"
report
has_key a; refused $?; check a-registration-gone $?
grep -q "rtype *: 1" /tmp/report.txt && has_key b; check b-holds $?
disconnect

# 5 A again, through node 2
connect_as "$A_NQN" "$A_ID" "$PORT2"; check a-reconnect-node2 $?
write1 30; refused $?; check a-write-conflict-after-preempt $? "$(tail -1 /tmp/dd.err)"
read1 30; check a-reads $?
nvme resv-release "$NS" -n 1 -c 0xa -t 1 -a 0 > /tmp/rel.txt 2>&1; refused $?; check a-release-refused $? "$(cat /tmp/rel.txt)"
disconnect

[ $FAIL = 0 ] && echo "RESV-HOST PASSED" || echo "RESV-HOST FAILED"
exit $FAIL
