#!/bin/sh
# nbd-persist.sh - the kernel NBD client with `nbd-client -persist` across a restart of the
# server. Run by NbdReconnectTest through shared/vm/run-guest.sh (one boot).
#
# Connects /dev/nbd0 to NBD_HOST:NBD_PORT export NBD_EXPORT with -persist. nbd-client 3.24
# honours -persist only on the ioctl interface (with netlink, its default, it configures the
# device and exits, and a dropped connection is final), hence -nonetlink; -nofork keeps its
# messages. Then:
#   1. writes and reads back 4 MiB (CHECK before-restart);
#   2. writes the marker KILL-NOW at MARK_MB: the host, watching the backend file, kills the
#      server (SIGKILL) and starts it again on the same port;
#   3. writes a fresh 64 KiB block every 0.2 s at 8 MiB + i * 64 KiB (O_DIRECT, fsync) and logs
#      every change between succeeding and failing, with the guest's uptime, until 10 writes in
#      a row succeed after one failed or stalled, nbd-client exits, or MAX_SECONDS pass;
#   4. when nbd-client exited instead of reconnecting (what 3.24 does on Linux 6.1 when the
#      server closes the connection: NBD_DO_IT returns 0, which -persist takes for a requested
#      disconnect), connects the device again with a new nbd-client, retrying every 0.5 s;
#   5. reads back every block whose write succeeded (CHECK persist-readback) and the first
#      4 MiB, writes and reads back 4 MiB more (CHECK after-restart), prints SUMMARY
#      persist=reconnected|exited|stuck and disconnects.
# Exit 0 = every acknowledged write reads back and the device works after the restart.
. /guest/lib.sh

HOST="${NBD_HOST:-10.0.2.2}"
PORT="${NBD_PORT:-10809}"
EXPORT="${NBD_EXPORT:-default}"
MARK_MB="${MARK_MB:-60}"
MAX_SECONDS="${MAX_SECONDS:-120}"
DEV=/dev/nbd0
BLOCK=65536
now() { cut -d' ' -f1 /proc/uptime; }
# The background nbd-client still runs (an exited child the shell has not reaped yet is a zombie).
client_alive() { [ -e /proc/$CLIENT ] && ! grep -q ') Z' /proc/$CLIENT/stat; }

modprobe nbd nbds_max=2 || die "modprobe nbd"
wait_for_dev "$DEV" || die "$DEV missing"
nbd-client -N "$EXPORT" "$HOST" "$PORT" "$DEV" -b 512 -t 10 -persist -nonetlink -nofork > /tmp/nbd-client.log 2>&1 &
CLIENT=$!
# The device runs once nbd-client is in NBD_DO_IT, which makes /sys/block/nbd0/pid.
running() { i=0; while [ ! -e /sys/block/nbd0/pid ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done; [ -e /sys/block/nbd0/pid ]; }
running || { cat /tmp/nbd-client.log; die "nbd-client did not connect"; }
log "connected: size=$(blockdev --getsize64 "$DEV")"

RC=0
write_readback "$DEV" 0 4 | sed 's/write-readback/before-restart/' | tee /tmp/before
grep -q "before-restart ok" /tmp/before || exit 1

printf 'KILL-NOW' > /tmp/mark
dd if=/tmp/mark of="$DEV" bs=512 seek=$((MARK_MB * 2048)) count=1 conv=sync oflag=direct 2>/dev/null || die "marker write"
T0="$(now)"
log "marker written: the host kills the server now"

i=0; ok=0; failed=0; state=ok; troubled=""; streak=0; max_ms=0; failed_at=""; resumed_at=""
while :; do
  head -c $BLOCK /dev/urandom > /tmp/blk
  t1="$(now)"
  if dd if=/tmp/blk of="$DEV" bs=$BLOCK seek=$((128 + i)) count=1 oflag=direct conv=fsync 2>/dev/null; then r=ok; else r=FAILED; fi
  t2="$(now)"
  ms=$(awk -v a="$t1" -v b="$t2" 'BEGIN{printf "%d", (b-a)*1000}')
  [ "$ms" -gt "$max_ms" ] && max_ms=$ms
  if [ $r = ok ]; then
    ok=$((ok + 1)); echo "$i $(sha256sum < /tmp/blk | cut -d' ' -f1)" >> /tmp/written
  else
    failed=$((failed + 1)); [ -z "$failed_at" ] && failed_at=$t2
  fi
  [ $r != $state ] && { echo "WRITE $i $r at $t2 s (+$(awk -v a="$T0" -v b="$t2" 'BEGIN{printf "%.2f", b-a}') s after the marker, took $ms ms)"; state=$r; }
  # A write that failed, or took over 1.5 s, means the restart was seen.
  if [ $r = FAILED ] || [ "$ms" -gt 1500 ]; then troubled=1; streak=0; else streak=$((streak + 1)); [ -n "$troubled" ] && [ -z "$resumed_at" ] && resumed_at=$t2; fi
  [ -n "$troubled" ] && [ $streak -ge 10 ] && break
  # nbd-client gone: -persist did not reconnect, nothing will bring the device back by itself.
  [ $r = FAILED ] && ! client_alive && break
  [ "$(awk -v a="$T0" -v b="$t2" -v m="$MAX_SECONDS" 'BEGIN{print (b-a > m)}')" = 1 ] && break
  i=$((i + 1))
  sleep 0.2
done

if [ -n "$resumed_at" ]; then
  PERSIST=reconnected
  echo "CHECK persist ok: the device resumed by itself $(awk -v a="$failed_at" -v b="$resumed_at" 'BEGIN{printf "%.2f", b-a}') s after the first failed write"
elif ! client_alive; then
  PERSIST=exited
  echo "CHECK persist: nbd-client exited when the connection closed (it did not reconnect); $failed IO errors meanwhile"
  # What is left to do: connect the device again, as an administrator (or a unit's Restart=) would.
  t1="$(now)"; n=0
  until nbd-client -N "$EXPORT" "$HOST" "$PORT" "$DEV" -b 512 -t 10 -nonetlink > /tmp/nbd-client2.log 2>&1; do
    n=$((n + 1)); [ $n -ge 120 ] && { cat /tmp/nbd-client2.log; die "could not connect again"; }
    sleep 0.5
  done
  running || die "the new nbd-client did not start the device"
  echo "RECONNECT by a new nbd-client after $(awk -v a="$failed_at" -v b="$(now)" 'BEGIN{printf "%.2f", b-a}') s from the first failed write ($n attempts while the server was down)"
else
  PERSIST=stuck
  echo "CHECK persist FAILED: nbd-client alive but the device did not resume within $MAX_SECONDS s"; RC=1
fi

bad=0
while read -r n sum; do
  got="$(dd if="$DEV" bs=$BLOCK skip=$((128 + n)) count=1 iflag=direct 2>/dev/null | sha256sum | cut -d' ' -f1)"
  [ "$got" = "$sum" ] || { echo "MISMATCH block $n"; bad=$((bad + 1)); }
done < /tmp/written
[ $bad = 0 ] && echo "CHECK persist-readback ok: all $ok acknowledged writes read back" || { echo "CHECK persist-readback MISMATCH: $bad of $ok"; RC=1; }
want="$(sed -n 's/.*sha256=\([0-9a-f]*\).*/\1/p' /tmp/before)"
[ "$(dev_sha256 "$DEV" 0 4)" = "$want" ] && echo "CHECK before-restart-data ok" || { echo "CHECK before-restart-data MISMATCH"; RC=1; }

write_readback "$DEV" 32 4 | sed 's/write-readback/after-restart/' | tee /tmp/after
grep -q "after-restart ok" /tmp/after || RC=1

echo "SUMMARY persist=$PERSIST writes=$((ok + failed)) ok=$ok failed=$failed max_write_ms=$max_ms"
echo "--- nbd-client"; cat /tmp/nbd-client.log
echo "--- dmesg"; dmesg | grep -i 'nbd' | tail -n 20

nbd-client -d "$DEV" > /dev/null 2>&1
[ $RC = 0 ] && echo "NBD PERSIST PASSED" || echo "NBD PERSIST FAILED"
exit $RC
