#!/usr/bin/env bash
# flush-check.sh - do iotarget's flushes reach the disk? Counts the device's completed flush
# requests (/proc/diskstats field 'flush requests completed', the 19th column; kernel
# Documentation/admin-guide/iostats.rst) around N writes each followed by a flush:
#   fio      fio --ioengine=libaio --direct=1 --fdatasync=1 on the file itself
#   iotarget fio --ioengine=nbd --fsync=1 (NBD_CMD_FLUSH) against iotarget's `direct: 1` file backend
#            (io_uring engine: NBD_CMD_FLUSH -> IORING_OP_FSYNC with IORING_FSYNC_DATASYNC)
#   idle     nothing, for as long as the slower of the two took: what the rest of the machine
#            (other engineers, ext4's journal) flushed meanwhile
# and the same for flushes alone at QD1 and QD32 (iotarget: libnbd from Python; the file: fdatasync(2) from
# python threads), where the block layer may merge flushes that are in flight together.
#
# Usage: flock /tmp/iotarget-heavy.lock bench/flush-check.sh [N]     (default 2000)
# Env: SERVER_CPU (0), FIO_CPU (1), BENCH_DIR (/var/tmp/iotarget-bench, on the real disk).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
N="${1:-2000}"
SERVER_CPU="${SERVER_CPU:-0}" FIO_CPU="${FIO_CPU:-1}" BENCH_DIR="${BENCH_DIR:-/var/tmp/iotarget-bench}"
DISK="$BENCH_DIR/flush.img"
. "$ROOT/scripts/env.sh"
dev="$(findmnt -n -o SOURCE -T "$BENCH_DIR")"; dev="${dev#/dev/}"
echo "# $(date -u +%FT%TZ) $BENCH_DIR is on /dev/$dev ($(findmnt -n -o FSTYPE -T "$BENCH_DIR")), write cache: $(cat /sys/block/"$dev"/queue/write_cache), load $(cut -d' ' -f1-3 /proc/loadavg)"
mkdir -p "$BENCH_DIR"
[[ -s "$DISK" ]] || dd if=/dev/urandom of="$DISK" bs=1M count=64 oflag=direct status=none
WORK="$(mktemp -d /tmp/flush-check.XXXXXX)"
SERVER=""
cleanup() { [[ -n "$SERVER" ]] && { kill "$SERVER" 2>/dev/null; wait "$SERVER" 2>/dev/null; }; rm -rf "$WORK"; }
trap cleanup EXIT
cat > "$WORK/iotarget.json" <<JSON
{ "server": { "control": "127.0.0.1:9839", "nbd": "127.0.0.1:10921", "io_engine": "io_uring" },
  "backends": { "disk": { "type": "file", "path": "$DISK", "direct": 1, "enable": 1 } },
  "nbd": { "exports": { "disk": { "backend": "disk", "enable": 1 } } } }
JSON
taskset -c "$SERVER_CPU" "$ROOT/bin/iotarget" serve --config "$WORK/iotarget.json" > "$WORK/server.log" 2>&1 &
SERVER=$!
for _ in $(seq 300); do (exec 3<>/dev/tcp/127.0.0.1/10921) 2>/dev/null && break; sleep 0.1; done
URI=nbd://127.0.0.1:10921/disk

flushes() { awk -v d="$dev" '$3 == d {print $19}' /proc/diskstats; }
# measure LABEL COMMAND... -> "LABEL: N ops in S s, F device flushes"
measure() {
  local label="$1" f0 f1 t0 t1; shift
  f0="$(flushes)"; t0="$(date +%s.%N)"
  "$@" > "$WORK/out" 2>&1 || { cat "$WORK/out" >&2; return 1; }
  t1="$(date +%s.%N)"; f1="$(flushes)"
  LAST="$(echo "$t1 - $t0" | bc)"
  printf '%-34s %6d flushes asked, %6.2f s, %6d device flushes completed\n' "$label" "$N" "$LAST" "$((f1 - f0))"
}
# fio's nbd engine (3.33) refuses fdatasync (EINVAL) but sends NBD_CMD_FLUSH for fsync; libaio gets
# fdatasync(2), what iotarget's flush is.
fio_sync() { taskset -c "$FIO_CPU" fio --name=f --rw=randwrite --bs=4k --iodepth=1 --number_ios="$N" --size=64M "$@"; }
# The file: N fdatasync(2) calls spread over THREADS threads.
file_flushes() {
  taskset -c "$FIO_CPU" /usr/bin/python3 - "$DISK" "$N" "$1" <<'PY'
import os, sys, threading
fd = os.open(sys.argv[1], os.O_RDWR | os.O_DIRECT)
n, threads = int(sys.argv[2]), int(sys.argv[3])
def run(k):
    for _ in range(k): os.fdatasync(fd)
ts = [threading.Thread(target=run, args=(n // threads,)) for _ in range(threads)]
for t in ts: t.start()
for t in ts: t.join()
PY
}
# iotarget: N NBD_CMD_FLUSH at queue depth QD from one nbdsh connection.
nbd_flushes() {
  N="$N" QD="$1" taskset -c "$FIO_CPU" /usr/bin/python3 -m nbd -u "$URI" -c '
import os
n, qd = int(os.environ["N"]), int(os.environ["QD"])
sent = 0
while sent < n or h.aio_in_flight() > 0:
    while sent < n and h.aio_in_flight() < qd:
        h.aio_flush(completion=lambda err: 1)      # 1: retire the command on completion
        sent += 1
    h.poll(-1)
'
}
idle() { sleep "$1"; }

fio_sync --fsync=1 --ioengine=nbd --uri="$URI" > /dev/null      # warm the server up
for round in 1 2 3; do
  echo "## round $round"
  measure "fio libaio, write+fdatasync QD1" fio_sync --fdatasync=1 --ioengine=libaio --direct=1 --filename="$DISK"; a="$LAST"
  measure "iotarget NBD, write+flush QD1" fio_sync --fsync=1 --ioengine=nbd --uri="$URI"; b="$LAST"
  measure "idle (same time)" idle "$(echo "if ($a > $b) $a else $b" | bc)"
  measure "file, fdatasync QD1" file_flushes 1
  measure "iotarget NBD, flush QD1" nbd_flushes 1
  measure "file, fdatasync from 32 threads" file_flushes 32
  measure "iotarget NBD, flush QD32" nbd_flushes 32
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
