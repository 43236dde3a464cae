#!/bin/sh
# auth-host.sh - DH-HMAC-CHAP with the Linux kernel host (nvme-tcp + nvme-cli) against
# iotarget's target on the host (10.0.2.2).  Run by KernelHostTest on the 6.12 guest
# (scripts/guest-6.12): Debian's 6.1 host driver has no in-band authentication (CONFIG_NVME_AUTH),
# so this script refuses to run on it.  Every step prints a CHECK line.
#
#   1 discovery reports only what the port honours (treq not specified, sectype none); on
#     another port addr_treq=required needs addr_tsas=tls1.3 first, which makes it required
#   2 the keyed host without its key is refused, and gets no controller
#   3 an allowed host without a key connects (nvmet asks it for nothing) and does IO
#   4 the right key (nvme gen-dhchap-key) connects and does IO; every queue authenticated
#   5 each key transform (00..03) with each hash
#   6 bidirectional (--dhchap-ctrl-secret) in every DH group, null and ffdhe2048..8192
#   7 a wrong host key and a wrong controller key are refused
#   8 re-authentication through sysfs with a rotated key
#   9 while the owner is connected, a second host claiming its NQN and host id with no key, or
#     with the key rotated out, is refused, and the owner's controller lives on untouched
#  10 nor can IO queues added to the owner's controller by a client without the key harm it
#
# Environment: PORT, CTL_PORT (see ControlServer), SECURE_NQN (allowed: KEYED_NQN, KEYLESS_NQN).
. /guest/lib.sh

ADDR=10.0.2.2
FAIL=0
check() {  # check LABEL CONDITION-RC [detail]
  if [ "$2" = 0 ]; then echo "CHECK $1 ok${3:+ ($3)}"; else echo "CHECK $1 FAILED${3:+ ($3)}"; FAIL=1; fi
}
ctl() { echo "$*" | nc "$ADDR" "$CTL_PORT"; }
H="$KEYED_NQN"
hostcfg() { ctl nvmet-write "hosts/$H/$1" "$2" | grep -q '^OK'; }
# conn ARGS...: nvme connect to the secure subsystem, output in /tmp/conn.txt; returns nvme's rc
conn() { nvme connect -t tcp -a "$ADDR" -s "$PORT" -n "$SECURE_NQN" "$@" > /tmp/conn.txt 2>&1; }
disconnect_all() { nvme disconnect -n "$SECURE_NQN" >/dev/null 2>&1; i=0; while nvme_ctrl_for_nqn "$SECURE_NQN" >/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done; }
# refused LABEL: the last conn failed and left no controller
refused() { rc=$?; [ $rc != 0 ] && [ -z "$(nvme_ctrl_for_nqn "$SECURE_NQN")" ]; check "$1" $? "rc=$rc: $(tail -n 1 /tmp/conn.txt); $(dmesg | grep 'nvme nvme' | tail -n 1 | cut -c 16-)"; disconnect_all; }
# spoof [,dhchap_secret=KEY]: ask the host driver itself (/dev/nvme-fabrics, what nvme-cli writes) for
# a second controller as the keyed host, with its NQN and host id; duplicate_connect, or the driver
# would refuse one to a subsystem it is connected to and the target would never be asked
spoof() {
  FAILED_BEFORE=$(dmesg | grep -c 'failed to connect queue: 0')
  printf 'nqn=%s,transport=tcp,traddr=%s,trsvcid=%s,hostnqn=%s,hostid=%s,duplicate_connect%s' \
    "$SECURE_NQN" "$ADDR" "$PORT" "$H" "$(cat /etc/nvme/hostid)" "$1" > /dev/nvme-fabrics 2> /tmp/conn.txt
}
# beside_owner LABEL: the last spoof was refused by the target (the driver logged one more failed
# admin queue Connect), and the owner's controller is still the only one
beside_owner() {
  rc=$?; n=$(grep -lx "$SECURE_NQN" /sys/class/nvme/nvme*/subsysnqn | wc -l)
  [ $rc != 0 ] && [ "$n" = 1 ] && [ "$(dmesg | grep -c 'failed to connect queue: 0')" -gt "$FAILED_BEFORE" ]
  check "$1" $? "rc=$rc, $n controllers: $(tail -n 1 /tmp/conn.txt); $(dmesg | grep 'nvme nvme' | tail -n 1 | cut -c 16-)"
}
# connected LABEL: the last conn worked, the namespace came up and takes a write + read-back
connected() {
  rc=$?; NS="$(wait_nvme_ns "$SECURE_NQN" 30)"; ns=$?
  [ $rc = 0 ] && [ $ns = 0 ]; check "$1" $? "rc=$rc $(tail -n 1 /tmp/conn.txt)"
  [ $ns = 0 ] && { write_readback "$NS" "$2" 1 || FAIL=1; }
}
auth_queues() { ctl nvmet-connections | grep -c "subsystem=$SECURE_NQN .*auth=ok"; }

modprobe nvme-tcp || die "modprobe nvme-tcp"
grep -q ' nvme_auth_negotiate' /proc/kallsyms || die "kernel $(uname -r): its NVMe host driver has no in-band authentication (boot scripts/guest-6.12)"
log "kernel $(uname -r); target $ADDR:$PORT"

# 1 what the port says about itself, and what it refuses to claim
nvme discover -t tcp -a "$ADDR" -s "$PORT" --hostnqn="$H" > /tmp/disc.txt 2>&1; rc=$?
grep -E '^(subnqn|treq|sectype):' /tmp/disc.txt
n_treq=$(grep -c '^treq: *not specified' /tmp/disc.txt); n_sec=$(grep -c '^sectype: *none' /tmp/disc.txt)
[ $rc = 0 ] && grep -q "subnqn: *$SECURE_NQN" /tmp/disc.txt && [ "$n_treq" -ge 2 ] && [ "$n_sec" -ge 2 ]
check discovery-treq-sectype $? "treq not specified x$n_treq, sectype none x$n_sec"
ctl nvmet-mkdir ports/2 >/dev/null; ctl nvmet-write ports/2/addr_trtype tcp >/dev/null
ans=$(ctl nvmet-write ports/2/addr_treq required); echo "$ans"
echo "$ans" | grep -q '^ERR EINVAL .*tls1.3'; check treq-required-needs-tls $?
ans=$(ctl nvmet-write ports/2/addr_tsas tls1.3); echo "$ans"
[ "$ans" = OK ] && [ "$(ctl nvmet-read ports/2/addr_treq)" = required ]; check tsas-tls-makes-treq-required $?
ctl nvmet-rmdir ports/2 >/dev/null

# 2 the keyed NQN without its key
conn --hostnqn="$H"; refused no-key-refused
HOSTID="$(cat /proc/sys/kernel/random/uuid)"

# 3 an allowed host without a key is asked for nothing
conn --hostnqn="$KEYLESS_NQN" --hostid="$HOSTID"; connected keyless-host-connects 4
n=$(ctl nvmet-connections | grep -c "subsystem=$SECURE_NQN .*auth=none")
[ "$n" -ge 2 ]; check keyless-not-asked $? "$n queues auth=none"
disconnect_all

KEY="$(nvme gen-dhchap-key --hmac=1 --nqn="$H")"

# 4 the right key
hostcfg dhchap_key "$KEY"; check key-configured $?
conn --hostnqn="$H" --dhchap-secret="$KEY"; connected right-key 8
n=$(auth_queues); q=$(cat /sys/class/nvme/$(basename "$(nvme_ctrl_for_nqn "$SECURE_NQN")")/queue_count 2>/dev/null)
[ "$n" -ge 2 ] && [ "$n" = "$q" ]; check every-queue-authenticated $? "$n of $q queues auth=ok"
dmesg | grep 'authenticated' | tail -n 2
disconnect_all

# 5 each key transform with each hash (host and target keep their transform; the hash is the target's choice)
set -- 0:hmac\(sha256\) 1:hmac\(sha384\) 2:hmac\(sha512\) 3:hmac\(sha256\)
for pair in "$@"; do
  hm="${pair%%:*}"; hash="${pair#*:}"
  K="$(nvme gen-dhchap-key --hmac="$hm" --nqn="$H")"
  hostcfg dhchap_key "$K" && hostcfg dhchap_hash "$hash"
  conn --hostnqn="$H" --dhchap-secret="$K"; connected "transform-0$hm-$hash" 10
  dmesg | grep "authenticated with hash" | tail -n 1 | grep -q "$hash"; check "negotiated-$hash" $?
  disconnect_all
done
hostcfg dhchap_key "$KEY"

# 6 bidirectional in every group; one I/O queue, as every queue pays for its own exchange and the
#   guest's emulated CPU needs seconds for its half of an exchange; the first ffdhe8192 one of a
#   boot spends 12-19 s between Challenge and Reply (the kernel sets up its ffdhe8192(dh)): longer
#   than KATO, which the target must not hold against a host that cannot send Keep Alive before
#   it has authenticated; step 4 checked all the queues
CKEY="$(nvme gen-dhchap-key --hmac=2 --nqn="$SECURE_NQN")"
hostcfg dhchap_ctrl_key "$CKEY"; hostcfg dhchap_hash "hmac(sha384)"
uptime_s() { cut -d ' ' -f 1 /proc/uptime; }
# the host driver's own steps with their times (dev_dbg: send negotiate ... DH exponential ... send reply),
# printed for ffdhe8192: where its time goes
echo 'func nvme_queue_auth_work +p' > /proc/dynamic_debug/control 2>/dev/null || log "no dynamic debug: the host's steps are not shown"
for g in null ffdhe2048 ffdhe3072 ffdhe4096 ffdhe6144 ffdhe8192; do
  hostcfg dhchap_dhgroup "$g"
  t0=$(uptime_s)
  conn --hostnqn="$H" --dhchap-secret="$KEY" --dhchap-ctrl-secret="$CKEY" --nr-io-queues=1; rc=$?
  log "$g: nvme connect took $(echo "$(uptime_s) $t0" | awk '{ printf "%.1f", $1 - $2 }') s"
  (exit $rc); connected "bidirectional-$g" 12
  [ "$g" = ffdhe8192 ] && dmesg | grep -E 'nvme_queue_auth_work|authenticated' | tail -n 20
  dmesg | grep -q "dhgroup $g" && dmesg | grep -v nvme_queue_auth_work | tail -n 8 | grep -q "controller authenticated"; check "controller-authenticated-$g" $?
  disconnect_all
done
hostcfg dhchap_dhgroup ffdhe2048

# 7 wrong keys
conn --hostnqn="$H" --dhchap-secret="$(nvme gen-dhchap-key --hmac=1 --nqn="$H")"; refused wrong-key-refused
conn --hostnqn="$H" --dhchap-secret="$KEY" --dhchap-ctrl-secret="$(nvme gen-dhchap-key --hmac=2 --nqn="$SECURE_NQN")"; refused wrong-ctrl-key-refused
conn --hostnqn="$H" --dhchap-secret="$KEY" --dhchap-ctrl-secret="$CKEY"; connected keys-still-work 14

# 8 re-authentication with a rotated key
CTRL="$(basename "$(nvme_ctrl_for_nqn "$SECURE_NQN")")"
NEW="$(nvme gen-dhchap-key --hmac=3 --nqn="$H")"
hostcfg dhchap_key "$NEW"
done_before=$(dmesg | grep -c 'qid 0: authenticated with hash')
echo "$NEW" > "/sys/class/nvme/$CTRL/dhchap_secret"
i=0; while [ "$(dmesg | grep -c 'qid 0: authenticated with hash')" = "$done_before" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
dmesg | tail -n 6
dmesg | grep -q "re-authenticating" && [ "$(dmesg | grep -c 'qid 0: authenticated with hash')" -gt "$done_before" ] && [ "$(cat /sys/class/nvme/$CTRL/state)" = live ]
check reauthenticated $? "state $(cat /sys/class/nvme/$CTRL/state)"
write_readback "$NS" 16 1 || FAIL=1

# 9 another host claiming the owner's NQN and host id while the owner is connected
spoof ""; beside_owner spoofed-nqn-no-key-refused
spoof ",dhchap_secret=$KEY"; beside_owner spoofed-nqn-old-key-refused
i=0; while [ "$(ctl nvmet-connections | grep "subsystem=$SECURE_NQN " | grep -vc 'auth=ok')" != 0 ] && [ $i -lt 30 ]; do sleep 0.1; i=$((i + 1)); done
n=$(auth_queues); q=$(cat "/sys/class/nvme/$CTRL/queue_count")
[ "$(cat "/sys/class/nvme/$CTRL/state")" = live ] && [ "$n" = "$q" ] && [ "$(ctl nvmet-connections | grep -c "subsystem=$SECURE_NQN ")" = "$q" ]
check owner-unharmed $? "state $(cat "/sys/class/nvme/$CTRL/state"), target: $n authenticated queues of $q, nothing else"
write_readback "$NS" 18 1 || FAIL=1

# 10 issue 19's hijack, from the test's Java client (ControlServer auth-attack): IO queues added to
#    the owner's controller with its NQN and host id but no key: one with another host id (refused),
#    one that sends an out-of-sequence AUTH_Send, one that stays silent past its deadline (3 s);
#    each closes alone, and the owner's queues stay live and authenticated
CNTLID=$(cat "/sys/class/nvme/$CTRL/cntlid"); q=$(cat "/sys/class/nvme/$CTRL/queue_count")
ans=$(ctl auth-attack "$CNTLID" "$q $H $(cat /etc/nvme/hostid)"); echo "$ans"
for a in other-hostid-refused out-of-sequence-closes-own-queue silent-closes-own-queue; do
  echo "$ans" | grep -q "^attack-$a ok"; check "hijack-$a" $?
done
n=$(auth_queues)
[ "$(cat "/sys/class/nvme/$CTRL/state")" = live ] && [ "$n" = "$q" ] && [ "$(ctl nvmet-connections | grep -c "subsystem=$SECURE_NQN ")" = "$q" ]
check owner-unharmed-by-hijack $? "state $(cat "/sys/class/nvme/$CTRL/state"), target: $n authenticated queues of $q, nothing else"
dmesg | grep "nvme nvme" | tail -n 3
write_readback "$NS" 20 1 || FAIL=1
disconnect_all
i=0; while [ -n "$(ctl nvmet-connections)" ] && [ $i -lt 30 ]; do sleep 0.1; i=$((i + 1)); done
[ -z "$(ctl nvmet-connections)" ]; check target-connections-closed $?

[ $FAIL = 0 ] && echo "AUTH-HOST PASSED" || echo "AUTH-HOST FAILED"
exit $FAIL
