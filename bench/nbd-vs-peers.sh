#!/usr/bin/env bash
# nbd-vs-peers.sh - iotarget's NBD server against nbdkit (memory plugin) and
# qemu-storage-daemon (raw file on tmpfs), same machine, same fio workloads, one run.
#
# Each server is pinned to one core (SERVER_CPU), fio to another (FIO_CPU). Runs
# alternate between servers (workload by workload, repeat by repeat) so drift hits all
# of them alike; each cell is the median of REPEATS runs. Prints, per workload, the
# median IOPS and MiB/s of each server, the server's CPU time per request (utime+stime
# from /proc/PID/stat over the run, divided by requests), and iotarget/peer ratios.
#
# Usage: bench/nbd-vs-peers.sh [--runtime S] [--repeats N] [--out FILE]
# Env: SERVER_CPU (0), FIO_CPU (1), SIZE (1G; iotarget's size is in bench/nbd-bench.json),
#      IOTARGET_CMD (default: bin/iotarget serve --config bench/nbd-bench.json; it must serve
#      export "default" on 127.0.0.1:10901).
# Needs: fio (nbd engine), nbdkit, qemu-storage-daemon (qemu-system-common), taskset, python3.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
RUNTIME=10 REPEATS=3 OUT=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --runtime) RUNTIME="$2"; shift 2 ;;
    --repeats) REPEATS="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    *) echo "usage: $0 [--runtime S] [--repeats N] [--out FILE]" >&2; exit 2 ;;
  esac
done
SERVER_CPU="${SERVER_CPU:-0}" FIO_CPU="${FIO_CPU:-1}" SIZE="${SIZE:-1G}"
for t in fio nbdkit qemu-storage-daemon taskset python3; do
  command -v "$t" >/dev/null || { echo "missing $t (apt-get install fio nbdkit qemu-system-common util-linux python3)" >&2; exit 1; }
done
. "$ROOT/scripts/env.sh"
WORK="$(mktemp -d /tmp/nbd-bench.XXXXXX)"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; rm -rf "$WORK" /dev/shm/nbd-bench-qsd.img; }
trap cleanup EXIT

IOTARGET_CMD="${IOTARGET_CMD:-$ROOT/bin/iotarget serve --config $HERE/nbd-bench.json}"
(cd "$ROOT" && mvn_run package -DskipTests -pl control -am) >&2
bytes() { numfmt --from=iec "$1"; }

wait_port() { for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; echo "port $1 never opened" >&2; return 1; }

start_iotarget() {
  taskset -c "$SERVER_CPU" bash -c "exec $IOTARGET_CMD" > "$WORK/iotarget.log" 2>&1 &
  PIDS+=($!); IOTARGET_PID=$!; wait_port 10901
}
start_nbdkit() {
  taskset -c "$SERVER_CPU" nbdkit -f -i 127.0.0.1 -p 10902 memory "$SIZE" > "$WORK/nbdkit.log" 2>&1 &
  PIDS+=($!); NBDKIT_PID=$!; wait_port 10902
}
start_qsd() {
  # Written out, not sparse: qemu's file driver reads holes of a tmpfs file very slowly.
  dd if=/dev/zero of=/dev/shm/nbd-bench-qsd.img bs=1M count="$(( $(bytes "$SIZE") / 1048576 ))" status=none
  taskset -c "$SERVER_CPU" qemu-storage-daemon \
    --blockdev driver=file,filename=/dev/shm/nbd-bench-qsd.img,node-name=disk,cache.direct=off,aio=threads \
    --nbd-server addr.type=inet,addr.host=127.0.0.1,addr.port=10903 \
    --export type=nbd,id=e0,node-name=disk,name=default,writable=on > "$WORK/qsd.log" 2>&1 &
  PIDS+=($!); QSD_PID=$!; wait_port 10903
}
start_iotarget; start_nbdkit; start_qsd
declare -A PORT=([iotarget]=10901 [nbdkit]=10902 [qsd]=10903)
declare -A PID=([iotarget]=$IOTARGET_PID [nbdkit]=$NBDKIT_PID [qsd]=$QSD_PID)
WORKLOADS=("randread:4k:32" "randwrite:4k:32" "read:1M:8" "write:1M:8")
CLK_TCK="$(getconf CLK_TCK)"
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

run_one() { # server workload runtime -> "iops mib cpu_us_per_req" on stdout
  local server="$1" rw bs qd; IFS=: read -r rw bs qd <<<"$2"
  local t0 t1; t0="$(cpu_ticks "${PID[$server]}")"
  taskset -c "$FIO_CPU" fio --output-format=json --name=b --ioengine=nbd --uri="nbd://127.0.0.1:${PORT[$server]}/default" \
    --rw="$rw" --bs="$bs" --iodepth="$qd" --size="$SIZE" --time_based --runtime="$3" > "$WORK/fio.json" 2>&1 ||
    { cat "$WORK/fio.json" >&2; return 1; }
  t1="$(cpu_ticks "${PID[$server]}")"
  python3 - "$WORK/fio.json" "$rw" "$((t1 - t0))" "$CLK_TCK" <<'PY'
import json, sys
text = open(sys.argv[1]).read()
j = json.loads(text[text.index("{"):])["jobs"][0]   # fio may print warnings before its JSON
d = j["write" if "write" in sys.argv[2] else "read"]
ios = d["total_ios"]
cpu_us = int(sys.argv[3]) / int(sys.argv[4]) * 1e6
print(f'{d["iops"]:.0f} {d["bw_bytes"] / 1048576:.1f} {cpu_us / max(ios, 1):.2f}')
PY
}

echo "prefilling every server's disk, then warming up (JIT of iotarget)" >&2
# Fill each disk once so that no measured write pays for first-touch allocation (the memory
# backends of iotarget and nbdkit, qsd's tmpfs file): steady state is compared, not setup.
for s in iotarget nbdkit qsd; do
  taskset -c "$FIO_CPU" fio --name=fill --ioengine=nbd --uri="nbd://127.0.0.1:${PORT[$s]}/default" --rw=write --bs=1M \
    --iodepth=8 --size="$SIZE" > /dev/null
done
for s in iotarget nbdkit qsd; do for w in "${WORKLOADS[@]}"; do run_one "$s" "$w" 3 >/dev/null; done; done

RESULTS="$WORK/results.txt"; : > "$RESULTS"
for rep in $(seq "$REPEATS"); do
  for w in "${WORKLOADS[@]}"; do
    for s in iotarget nbdkit qsd; do
      r="$(run_one "$s" "$w" "$RUNTIME")"
      echo "$rep $w $s $r" | tee -a "$RESULTS" >&2
    done
  done
done

python3 - "$RESULTS" "$RUNTIME" "$REPEATS" "$(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet || echo -dirty)" <<'PY' | tee "${OUT:-/dev/null}"
import statistics, sys, collections, platform, os
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    rep, w, s, iops, mib, cpu = line.split()
    rows[(w, s)].append((float(iops), float(mib), float(cpu)))
names = {"randread:4k:32": "4k randread QD32", "randwrite:4k:32": "4k randwrite QD32", "read:1M:8": "1M seq read QD8", "write:1M:8": "1M seq write QD8"}
print(f"commit {sys.argv[4]}, fio nbd engine, {sys.argv[2]} s per run, median of {sys.argv[3]} alternating runs; server pinned to one core, fio to another")
print()
print("| workload | iotarget IOPS | nbdkit IOPS | qsd IOPS | iotarget/nbdkit | iotarget/qsd | CPU µs/req iotarget | nbdkit | qsd |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for w in names:
    med = {s: [statistics.median(x[i] for x in rows[(w, s)]) for i in range(3)] for s in ("iotarget", "nbdkit", "qsd")}
    it, nk, q = med["iotarget"], med["nbdkit"], med["qsd"]
    print(f"| {names[w]} | {it[0]:.0f} ({it[1]:.0f} MiB/s) | {nk[0]:.0f} | {q[0]:.0f} | {it[0]/nk[0]:.2f} | {it[0]/q[0]:.2f} | {it[2]:.2f} | {nk[2]:.2f} | {q[2]:.2f} |")
PY
