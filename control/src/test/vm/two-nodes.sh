# Helpers for the guest scripts of two serve nodes behind one multipath device (ha-host.sh,
# resv-fence.sh, rbd-multipath.sh), sourced after /guest/lib.sh; the test passes this file with
# the script. Needs ADDR (the host, 10.0.2.2), CTL_PORT (the test's channel), and for
# connect_both NQN, PORT1 and PORT2. Node 1's controller ids are 1..100, node 2's above.
FAIL=0
check() {  # check LABEL CONDITION-RC [detail]
  if [ "$2" = 0 ]; then echo "CHECK $1 ok${3:+ ($3)}"; else echo "CHECK $1 FAILED${3:+ ($3)}"; FAIL=1; fi
}
ctl() { echo "$*" | nc "$ADDR" "$CTL_PORT"; }
# the subsystem's controllers (nvmeN), one a line
ctrls() { for c in /sys/class/nvme-subsystem/nvme-subsys*/nvme[0-9]*; do [ -e "$c/cntlid" ] && echo "${c##*/}"; done; }
# the controller (nvmeN) whose cntlid lies in node 1's range (1..100) or node 2's
ctrl_of() {
  for c in $(ctrls); do
    id="$(cat "/sys/class/nvme/$c/cntlid")"
    if [ "$1" = 1 ] && [ "$id" -le 100 ]; then echo "$c"; return; fi
    if [ "$1" = 2 ] && [ "$id" -gt 100 ]; then echo "$c"; return; fi
  done
}
path_attr() { cat /sys/class/nvme/"$(ctrl_of "$1")"/nvme*c*n1/"$2" 2>/dev/null; }
ctrl_state() { cat /sys/class/nvme/"$(ctrl_of "$1")"/state 2>/dev/null; }
# wait_for SECONDS COMMAND...: until COMMAND succeeds, polled every 0.1 s
wait_for() { n=$(($1 * 10)); shift; i=0; while ! "$@" && [ $i -lt $n ]; do sleep 0.1; i=$((i + 1)); done; "$@"; }
path_is() { [ "$(path_attr "$1" ana_state)" = "$2" ]; }
live_and() { [ "$(ctrl_state "$1")" = live ] && path_is "$1" "$2"; }
# wait_fio PID SECONDS: fio's exit status, or 124 after SECONDS
wait_fio() { i=0; while kill -0 "$1" 2>/dev/null && [ $i -lt $(($2 * 10)) ]; do sleep 0.1; i=$((i + 1)); done
  if kill -0 "$1" 2>/dev/null; then kill "$1"; return 124; fi; wait "$1"; }
# fio_ok OUTPUT: fio reported no IO error and no block that failed its verify
fio_ok() { grep -q "err= 0" "$1" && ! grep -qi "verify.*bad\|bad magic\|crc32c.*wanted" "$1"; }
# connect_both [NVME-CONNECT-OPTIONS...]: connects NQN through node 1 (PORT1) and node 2 (PORT2),
# sets NS to the multipath device and checks that the two paths are one namespace
connect_both() {
  modprobe nvme-tcp || die "modprobe nvme-tcp"
  log "kernel $(uname -r), multipath $(cat /sys/module/nvme_core/parameters/multipath)"
  for p in "$PORT1" "$PORT2"; do
    nvme connect -t tcp -a "$ADDR" -s "$p" -n "$NQN" "$@" --reconnect-delay 1 --ctrl-loss-tmo 120 || die "connect $p"
  done
  NS="$(wait_nvme_ns "$NQN" 20)" || die "no namespace for $NQN"
  nctrls="$(ctrls | wc -l)"
  heads="$(ls /dev | grep -c '^nvme[0-9]*n[0-9]*$')"
  [ "$nctrls" = 2 ] && [ "$heads" = 1 ]; check two-paths-one-namespace $? "$nctrls controllers, $heads namespace node(s): $NS"
}
