#!/usr/bin/env bash
# qd1-floor.sh - what a queue-depth-1 4k O_DIRECT round trip through an NBD server is made of on
# this machine, and so the shortest one a server that sleeps between requests (no busy polling)
# can give. One run, every system warmed, alternating, REPEATS times; each cell is the median of
# fio's mean round trip (1e6 / IOPS at QD1: the client's whole cycle, as issue 34's ratios are).
#
#   fio-cpu1     fio libaio on the file from fio's core: "fio's own latency on the file"
#   fio-cpu0     the same from the server's core: the disk as a server pinned there sees it (the
#                disk's interrupts land on one core; a completion for the other core crosses over)
#   null-*       the network part alone: iotarget's memory backend, qemu-storage-daemon's null-co,
#                nbdkit's memory plugin, each a round trip through fio's nbd engine with no disk
#   direct-*     the file with O_DIRECT through iotarget (io_uring) and qemu-storage-daemon (io_uring)
#   poll-*       iotarget with server.poll_us 50 (its loop spins instead of sleeping): the floor
#                without the server's wake-ups
#
# A server that sleeps between requests cannot answer a QD1 request sooner than its empty round
# trip (null-*) plus the disk's time as seen from its core (fio-cpu0): the summary prints that
# floor, the best sleeping server's measured round trip, and issue 34's targets (1.5x
# qemu-storage-daemon's IOPS, 1.5x fio's own latency) as round trips.
#
# Usage: flock /tmp/iotarget-heavy.lock bench/qd1-floor.sh [--runtime S] [--repeats N] [--rw randread|randwrite]
# Env: SERVER_CPU (0), FIO_CPU (1), BENCH_DIR (/var/tmp/iotarget-bench, on the real disk).
# Needs: fio, nbdkit, qemu-storage-daemon, taskset, python3.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
RUNTIME=5 REPEATS=3 RW=randread
while [[ $# -gt 0 ]]; do
  case "$1" in
    --runtime) RUNTIME="$2"; shift 2 ;;
    --repeats) REPEATS="$2"; shift 2 ;;
    --rw) RW="$2"; shift 2 ;;
    *) sed -n '2,/^# Needs/p' "$0" >&2; exit 2 ;;
  esac
done
SERVER_CPU="${SERVER_CPU:-0}" FIO_CPU="${FIO_CPU:-1}" BENCH_DIR="${BENCH_DIR:-/var/tmp/iotarget-bench}"
for t in fio nbdkit qemu-storage-daemon taskset python3; do
  command -v "$t" >/dev/null || { echo "missing $t (scripts/install-test-deps installs them)" >&2; exit 1; }
done
. "$ROOT/scripts/env.sh"
mkdir -p "$BENCH_DIR"
WORK="$(mktemp -d /tmp/qd1-floor.XXXXXX)"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; rm -rf "$WORK"; }
trap cleanup EXIT
flock /tmp/iotarget-build.lock bash -c ". \"$ROOT/scripts/env.sh\" && build_jar" >&2
DISK="$BENCH_DIR/disk.img"
[[ -s "$DISK" ]] || dd if=/dev/urandom of="$DISK" bs=1M count=1024 oflag=direct status=none

config() { # control-port nbd-port extra-server-settings
  cat <<JSON
{ "server": { "control": "127.0.0.1:$1", "nbd": "127.0.0.1:$2", "io_engine": "io_uring"$3 },
  "backends": { "disk": { "type": "file", "path": "$DISK", "direct": 1, "enable": 1 },
                "mem":  { "type": "memory", "size": "1G", "enable": 1 } },
  "nbd": { "exports": { "disk": { "backend": "disk", "enable": 1 }, "mem": { "backend": "mem", "enable": 1 } } } }
JSON
}
wait_port() { for _ in $(seq 300); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; echo "port $1 never opened" >&2; return 1; }
start() { # name port command...
  local name="$1" port="$2"; shift 2
  taskset -c "$SERVER_CPU" "$@" > "$WORK/$name.log" 2>&1 &
  PIDS+=($!); wait_port "$port"
}
config 9859 10941 "" > "$WORK/iotarget.json"
config 9869 10951 ', "poll_us": 50' > "$WORK/poll.json"
start iotarget 10941 "$ROOT/bin/iotarget" serve --config "$WORK/iotarget.json"
start poll 10951 "$ROOT/bin/iotarget" serve --config "$WORK/poll.json"
start qsd 10943 qemu-storage-daemon \
  --blockdev "driver=file,filename=$DISK,node-name=disk,cache.direct=on,aio=io_uring" \
  --blockdev driver=null-co,node-name=null,size=1073741824,read-zeroes=on \
  --nbd-server addr.type=inet,addr.host=127.0.0.1,addr.port=10943 \
  --export type=nbd,id=e0,node-name=disk,name=disk,writable=on \
  --export type=nbd,id=e1,node-name=null,name=null,writable=on
start nbdkit 10944 nbdkit -f -i 127.0.0.1 -p 10944 memory 1G

declare -A TARGET=(
  [fio-cpu1]="--ioengine=libaio --direct=1 --filename=$DISK"
  [fio-cpu0]="--ioengine=libaio --direct=1 --filename=$DISK"
  [null-iotarget]="--ioengine=nbd --uri=nbd://127.0.0.1:10941/mem"
  [null-qsd]="--ioengine=nbd --uri=nbd://127.0.0.1:10943/null"
  [null-nbdkit]="--ioengine=nbd --uri=nbd://127.0.0.1:10944/"
  [direct-iotarget]="--ioengine=nbd --uri=nbd://127.0.0.1:10941/disk"
  [direct-qsd]="--ioengine=nbd --uri=nbd://127.0.0.1:10943/disk"
  [poll-null]="--ioengine=nbd --uri=nbd://127.0.0.1:10951/mem"
  [poll-direct]="--ioengine=nbd --uri=nbd://127.0.0.1:10951/disk")
SYSTEMS="fio-cpu1 fio-cpu0 null-iotarget null-qsd null-nbdkit direct-iotarget direct-qsd poll-null poll-direct"
run_one() { # system seconds -> round trip in µs
  local cpu="$FIO_CPU"
  [[ "$1" == fio-cpu0 ]] && cpu="$SERVER_CPU"
  # shellcheck disable=SC2086  # TARGET holds several options
  taskset -c "$cpu" fio --output-format=json --name=q ${TARGET[$1]} --rw="$RW" --bs=4k --iodepth=1 \
    --size=1G --time_based --runtime="$2" > "$WORK/fio.json" 2>&1 || { cat "$WORK/fio.json" >&2; return 1; }
  python3 -c '
import json, sys
t = open(sys.argv[1]).read(); d = json.loads(t[t.index("{"):])["jobs"][0]
d = d["write" if "write" in sys.argv[2] else "read"]
print("%.1f" % (1e6 / d["iops"]))' "$WORK/fio.json" "$RW"
}
echo "warming every system" >&2
for s in $SYSTEMS; do
  [[ "$s" == null-* || "$s" == poll-null ]] && taskset -c "$FIO_CPU" fio --name=fill ${TARGET[$s]} --rw=write --bs=1M --iodepth=8 --size=1G > /dev/null
  run_one "$s" 3 > /dev/null
done
RESULTS="$WORK/results.txt"; LOADS=()
for rep in $(seq "$REPEATS"); do
  LOADS+=("$(cut -d' ' -f1 /proc/loadavg)")
  for s in $SYSTEMS; do echo "$rep $s $(run_one "$s" "$RUNTIME")" | tee -a "$RESULTS" >&2; done
done
python3 - "$RESULTS" "$RW" "$RUNTIME" "$REPEATS" "$(git -C "$ROOT" rev-parse --short HEAD)" "${LOADS[*]}" "$(cut -d' ' -f1-3 /proc/loadavg)" <<'PY'
import collections, statistics, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    rep, system, us = line.split()
    runs[system].append(float(us))
m = {s: statistics.median(v) for s, v in runs.items()}
print(f"commit {sys.argv[5]}, 4k {sys.argv[2]} QD1, fio, {sys.argv[3]} s per run, median of {sys.argv[4]} alternating runs, "
      f"servers on one core and fio on the other, every system warmed; load at the start of each repeat {sys.argv[6]}, at the end {sys.argv[7]}\n")
print("| system | round trip µs, median (min-max) | IOPS |\n|---|---|---|")
for s, v in runs.items():
    print(f"| {s} | {m[s]:.1f} ({min(v):.1f}-{max(v):.1f}) | {1e6 / m[s]:.0f} |")
null = min(m["null-iotarget"], m["null-qsd"], m["null-nbdkit"])
print(f"\nfloor of a server that sleeps: best empty round trip {null:.1f} + the disk from the server's core {m['fio-cpu0']:.1f} = {null + m['fio-cpu0']:.1f} µs")
print(f"best sleeping server measured: {min(m['direct-iotarget'], m['direct-qsd']):.1f} µs (iotarget {m['direct-iotarget']:.1f}, qsd {m['direct-qsd']:.1f}); polling iotarget {m['poll-direct']:.1f}")
print(f"target 1.5x qsd's IOPS = a round trip of {m['direct-qsd'] / 1.5:.1f} µs; target 1.5x fio's own latency = {1.5 * m['fio-cpu1']:.1f} µs")
PY
