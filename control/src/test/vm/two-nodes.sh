# Helpers for the guest scripts of two serve nodes behind one multipath device (ha-host.sh,
# resv-fence.sh), sourced after /guest/lib.sh; the test passes this file with the script.
# Needs ADDR (the host, 10.0.2.2) and CTL_PORT (the test's channel). Node 1's controller ids
# are 1..100, node 2's above.
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
