#!/bin/sh
# gw-host.sh - issue 32.3: one gateway group of `iotarget serve` nodes (six namespaces of a shared
# subsystem, ANA groups 1-6, two per node) as the 6.1 host's native multipath sees it.  Run by
# GatewayGroupKernelHostTest, which is the host's channel to the nodes (ctl): it kills, restarts
# and adds nodes and measures them from outside.  Every step prints a CHECK line, every
# measurement a RESULT line.
#
#   1 the host connects to the three nodes (--reconnect-delay 1): one subsystem, three
#     controllers, six namespaces
#   2 fio writes all six namespaces with crc32c verify (each block read back and checked after
#     every 32 writes), namespace 1 as fast as tenant a's io.max.global lets it, and logs every IO
#     of namespace 1; KILLS times: the owner of ANA group 1 (namespace 1's) is SIGKILLed, the
#     test measures the pause, restarts the node and waits until it owns its share of groups
#     again, and the host's path to it is live again.  fio ends with no IO error and no block
#     failing verification; for each kill the longest gap between two completions of namespace
#     1 is printed (the guest's view of the pause)
#   3 runs of fio on all six namespaces, each writing 1 MiB of namespace 1 and 2 MiB of each
#     other once and reading them back verified, charged: the test reads io.stat on every node
#     before and after; a fourth node is started while they run, the host connects to it, and it
#     takes groups; the runs go on until one has run whole after that; no run has an IO error;
#     fio's totals over the runs (MOVED) are what the test compares io.stat's with
#
# Environment: NQN, PORT1..PORT3 (the nodes' NVMe/TCP ports), CTL_PORT (the test's channel), KILLS.
. /guest/lib.sh

ADDR=10.0.2.2
FAIL=0
check() {  # check LABEL CONDITION-RC [detail]
  if [ "$2" = 0 ]; then echo "CHECK $1 ok${3:+ ($3)}"; else echo "CHECK $1 FAILED${3:+ ($3)}"; FAIL=1; fi
}
ctl() { echo "$*" | nc "$ADDR" "$CTL_PORT"; }
# wait_for SECONDS COMMAND...: until COMMAND succeeds, polled every 0.1 s
wait_for() { n=$(($1 * 10)); shift; i=0; while ! "$@" && [ $i -lt $n ]; do sleep 0.1; i=$((i + 1)); done; "$@"; }
# the multipath device (/dev/nvmeXnY) of namespace $1
ns_dev() {
  for b in /sys/block/nvme*; do
    case "${b##*/}" in *c*) continue ;; esac        # nvmeXcYnZ: a path, not the head
    [ "$(cat "$b/nsid" 2>/dev/null)" = "$1" ] && { echo "/dev/${b##*/}"; return 0; }
  done
  return 1
}
all_ns() { for n in 1 2 3 4 5 6; do ns_dev $n >/dev/null || return 1; done; }
# the subsystem's controllers that are live
live_ctrls() { n=0; for c in "$SUBSYS"/nvme[0-9]*; do [ "$(cat "$c/state" 2>/dev/null)" = live ] && n=$((n + 1)); done; echo $n; }
live_is() { [ "$(live_ctrls)" = "$1" ]; }
# wait_fio PID SECONDS: fio's exit status, or 124 after SECONDS
wait_fio() { i=0; while kill -0 "$1" 2>/dev/null && [ $i -lt $(($2 * 10)) ]; do sleep 0.1; i=$((i + 1)); done
  if kill -0 "$1" 2>/dev/null; then kill -KILL "$1"; return 124; fi; wait "$1"; }
no_verify_error() { ! grep -qi "verify.*bad\|bad magic\|crc32c.*wanted\|bad header" "$1"; }

modprobe nvme-tcp || die "modprobe nvme-tcp"
log "kernel $(uname -r), multipath $(cat /sys/module/nvme_core/parameters/multipath)"

# 1 -------------------------------------------------------------- three nodes, six namespaces
for p in "$PORT1" "$PORT2" "$PORT3"; do
  nvme connect -t tcp -a "$ADDR" -s "$p" -n "$NQN" --reconnect-delay 1 --ctrl-loss-tmo 600 || die "connect $p"
done
for s in /sys/class/nvme-subsystem/nvme-subsys*; do [ "$(cat "$s/subsysnqn")" = "$NQN" ] && SUBSYS="$s"; done
wait_for 20 all_ns; check six-namespaces $? "$(ls /dev | grep '^nvme[0-9]*n[0-9]*$' | tr '\n' ' ')"
live_is 3; check three-live-paths $? "$(live_ctrls) live"
for n in 1 2 3 4 5 6; do eval "D$n=$(ns_dev $n)"; done
log "namespace 1 is $D1; controllers: $(for c in "$SUBSYS"/nvme[0-9]*; do echo "${c##*/}=$(cat "$c/cntlid")"; done | tr '\n' ' ')"

# 2 -------------------------------------------------------------- KILLS x the owner of group 1 under fio
FIO_COMMON="--ioengine=libaio --direct=1 --bs=16k --iodepth=2 --rw=write --verify=crc32c --verify_fatal=1"
# shellcheck disable=SC2086
fio $FIO_COMMON --verify_backlog=32 --time_based --runtime=900 --log_unix_epoch=1 --output=/tmp/fio-kill.txt \
    --name=ns1 --filename="$D1" --size=12M --write_lat_log=/tmp/ns1 \
    --name=ns2 --filename="$D2" --size=12M --rate_iops=15,15 \
    --name=ns3 --filename="$D3" --size=12M --rate_iops=15,15 \
    --name=ns4 --filename="$D4" --size=12M --rate_iops=15,15 \
    --name=ns5 --filename="$D5" --size=12M --rate_iops=15,15 \
    --name=ns6 --filename="$D6" --size=12M --rate_iops=15,15 &
FIO=$!
rm -f /tmp/kills
k=1
while [ $k -le "$KILLS" ]; do
  sleep 1
  s="$(date +%s)"
  R="$(ctl kill)"
  e="$(date +%s)"
  echo "$s $e" >> /tmp/kills
  echo "RESULT kill-$k $R"
  echo "$R" | grep -q "pause_ms="; check kill-$k-group-moved $? "$R"
  kill -0 $FIO 2>/dev/null; check fio-runs-after-kill-$k $?
  R="$(ctl restart)"
  echo "RESULT rejoin-$k $R"
  echo "$R" | grep -q "share_ms="; check rejoin-$k-owns-its-share $? "$R"
  wait_for 30 live_is 3; check rejoin-$k-path-live $? "$(live_ctrls) live"
  k=$((k + 1))
done
sleep 2
kill -INT $FIO
wait_fio $FIO 120; rc=$?
cat /tmp/fio-kill.txt
# SIGINT ends fio's jobs early: fio reports them and exits 128 (130 is from before it handled it)
jobs_ok="$(grep -c "err= 0" /tmp/fio-kill.txt)"
[ $rc = 128 ] || [ $rc = 0 ]; check fio-stopped $? "rc $rc"
[ "$jobs_ok" = 6 ] && no_verify_error /tmp/fio-kill.txt; check fio-no-io-error-every-block-verified $? "$jobs_ok of 6 jobs err= 0"
CLAT="$(ls /tmp/ns1_clat*.log 2>/dev/null | head -1)"
lines="$(wc -l < "$CLAT" 2>/dev/null)"
[ -n "$CLAT" ] && [ "${lines:-0}" -gt 100 ]; check ns1-io-log $? "${lines:-0} completions in $CLAT"
sort -n -t, -k1,1 "$CLAT" > /tmp/ns1-sorted.log
# per kill: the longest gap between two completions on namespace 1 that ends after the second before
# the kill was asked for and starts before the second after it was answered (fio's times are ms since
# the epoch, the same clock as date's)
k=1
while read -r s e; do
  gap="$(awk -F, -v lo=$(((s - 1) * 1000)) -v hi=$(((e + 1) * 1000)) '
    { t = $1 + 0; if (n++ && t >= lo && p <= hi && t - p > g) g = t - p; p = t }
    END { print g + 0 }' /tmp/ns1-sorted.log)"
  normal="$(awk -F, -v lo=$(((s - 8) * 1000)) -v hi=$(((s - 1) * 1000)) '
    { t = $1 + 0; if (n++ && t >= lo && t <= hi && t - p > g) g = t - p; p = t }
    END { print g + 0 }' /tmp/ns1-sorted.log)"
  echo "RESULT guest-gap-$k gap_ms=$gap longest_gap_in_the_7s_before_ms=$normal"
  k=$((k + 1))
done < /tmp/kills

# 3 -------------------------------------------------------------- charged IO; a fourth node joins under it
R="$(ctl charge-begin)"
echo "$R" | grep -q ok; check charge-begin $? "$R"
# runs of fio, each writing every block of its part of the six namespaces once and reading them back
# verified, back to back until one whole run started after the fourth node took its groups
rm -f /tmp/joined /tmp/join-*.json /tmp/join-rc
( i=0
  while :; do
    last=0; [ -e /tmp/joined ] && last=1
    # shellcheck disable=SC2086
    fio $FIO_COMMON --do_verify=1 --output-format=json --output=/tmp/join-$i.json \
        --name=ns1 --filename="$D1" --size=1M --offset=$((i % 4 * 2))M \
        --name=ns2 --filename="$D2" --size=2M --offset=$((i % 4 * 2))M --rate_iops=40,20 \
        --name=ns3 --filename="$D3" --size=2M --offset=$((i % 4 * 2))M --rate_iops=40,20 \
        --name=ns4 --filename="$D4" --size=2M --offset=$((i % 4 * 2))M --rate_iops=40,20 \
        --name=ns5 --filename="$D5" --size=2M --offset=$((i % 4 * 2))M --rate_iops=40,20 \
        --name=ns6 --filename="$D6" --size=2M --offset=$((i % 4 * 2))M --rate_iops=40,20
    echo "$i $?" >> /tmp/join-rc
    i=$((i + 1))
    [ $last = 1 ] && break
    [ $i -ge 40 ] && break
  done ) &
LOOP=$!
sleep 2
R="$(ctl add)"
echo "RESULT add $R"
PORT4="$(echo "$R" | sed -n 's/.*port=\([0-9]*\).*/\1/p')"
[ -n "$PORT4" ]; check fourth-node-started $? "$R"
nvme connect -t tcp -a "$ADDR" -s "$PORT4" -n "$NQN" --reconnect-delay 1 --ctrl-loss-tmo 600; check fourth-node-connected $?
wait_for 30 live_is 4; check four-live-paths $? "$(live_ctrls) live"
R="$(ctl joined)"
echo "RESULT joined $R"
echo "$R" | grep -q "took_ms="; check fourth-node-takes-groups $? "$R"
kill -0 $LOOP 2>/dev/null; check fio-ran-while-it-joined $?
touch /tmp/joined
wait_fio $LOOP 300; rc=$?
runs="$(wc -l < /tmp/join-rc)"
bad="$(awk '$2 != 0' /tmp/join-rc | wc -l)"
errors="$(cat /tmp/join-*.json | grep -c '"error" : 0')"
cat /tmp/join-rc
[ $rc = 0 ] && [ "$bad" = 0 ] && [ "$errors" = $((runs * 6)) ] && ! cat /tmp/join-*.json | grep -qi "verify.*bad\|bad magic\|crc32c.*wanted\|bad header"
check fio-join-no-io-error-every-block-verified $? "$runs runs, $bad failed, $errors of $((runs * 6)) jobs error 0"
# the bytes fio moved, read and written, over every run and job
echo "MOVED $(cat /tmp/join-*.json | awk '/"read" : \{/ { d = "r" } /"write" : \{/ { d = "w" } /"trim" : \{|"sync" : \{/ { d = "" }
  /"io_bytes"/ && d != "" { v = $3; gsub(/[^0-9]/, "", v); if (d == "r") r += v; else w += v; d = "" }
  END { printf "rbytes=%d wbytes=%d", r, w }')"
R="$(ctl charge-end)"
echo "CHARGE $R"

nvme disconnect -n "$NQN" >/dev/null 2>&1
[ $FAIL = 0 ] && echo "GW-HOST PASSED" || echo "GW-HOST FAILED"
exit $FAIL
