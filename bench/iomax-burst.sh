#!/usr/bin/env bash
# iomax-burst.sh - io.max.burst through NBD against the issue's targets: io.max riops=1000,
# io.max.burst riops=5000 len=2, fio's nbd engine at QD32 (4k randread) for 6 s, then 8 s idle,
# REPEATS times on one group (so every run after the first also shows whether 8 s idle refilled
# the credit). Per run, from fio's per-IO log (each read's completion, in whole ms on the clock of
# fio's runtime): IOs in the first 2 s (target 10000 ±5%); when the credit was spent (the first
# ms by which the group had sent 8000 IOs more than 1000 a second); the steady rate from then to
# the end of the run (target 1000 ±1%); the rate from 2 s to the end, which also holds whatever
# credit the first 2 s left unspent (a client or server that lagged), the group's to spend just
# after 2 s (ThrottleBurstTest's lagging burst); the total against 8000 + 1000 x runtime (14000
# in 6 s, ±3%); and io.max.burst.stat before each run, 8 s after the previous one (full:
# riops=8000/8000). Medians of the runs last. Server pinned to CPU 0, fio to CPU 1. Not fio's
# 100 ms averages: it divides each window's IOs by its length truncated to a whole ms, which
# reads ~0.1-0.5% high.
#
# Usage: flock /tmp/iotarget-heavy.lock bench/iomax-burst.sh [--repeats N] [--out FILE]
# Env: SERVER_CPU (0), FIO_CPU (1). Needs: fio (nbd engine), taskset, python3.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
REPEATS=5 OUT=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --repeats) REPEATS="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    *) echo "usage: $0 [--repeats N] [--out FILE]" >&2; exit 2 ;;
  esac
done
SERVER_CPU="${SERVER_CPU:-0}" FIO_CPU="${FIO_CPU:-1}"
for t in fio taskset python3; do command -v "$t" >/dev/null || { echo "missing $t" >&2; exit 1; }; done
. "$ROOT/scripts/env.sh"
WORK="$(mktemp -d /tmp/iomax-burst.XXXXXX)"
SERVER=""
cleanup() { [[ -n "$SERVER" ]] && { kill "$SERVER" 2>/dev/null || true; wait "$SERVER" 2>/dev/null || true; }; rm -rf "$WORK"; }
trap cleanup EXIT
CONTROL=127.0.0.1:9831 NBD_PORT=10931

(cd "$ROOT" && mvn_run package -DskipTests -pl control -am) >&2
cat > "$WORK/config.json" <<JSON
{ "server": { "control": "$CONTROL", "nbd": "127.0.0.1:$NBD_PORT" },
  "backends": { "default": { "type": "memory", "size": "1G", "enable": 1 } },
  "cgroup": { "tenants": { "cgroup.subtree_control": "+io", "a": { }, "warm": { } } },
  "nbd": { "exports": { "a": { "backend": "default", "cgroup": "tenants/a", "enable": 1 },
                        "warm": { "backend": "default", "cgroup": "tenants/warm", "enable": 1 } } } }
JSON
taskset -c "$SERVER_CPU" "$ROOT/bin/iotarget" serve --config "$WORK/config.json" > "$WORK/server.log" 2>&1 &
SERVER=$!
for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$NBD_PORT") 2>/dev/null && break; sleep 0.1; done
cli() { "$ROOT/bin/iotarget" --control "$CONTROL" "$@"; }
fio_run() { # export seconds log-prefix
  taskset -c "$FIO_CPU" fio --output-format=json --name=b --ioengine=nbd --uri="nbd://127.0.0.1:$NBD_PORT/$1" \
    --rw=randread --bs=4096 --iodepth=32 --size=256M --time_based --runtime="$2" --ramp_time=0 \
    --write_iops_log="$3" --log_avg_msec=0
}
echo "warming up: 5 s unlimited on another group (iotarget's JIT)" >&2
fio_run warm 5 "$WORK/warm" > /dev/null
cli write tenants/a/io.max "default riops=1000"
cli write tenants/a/io.max.burst "default riops=5000 len=2"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
RESULTS="$WORK/results.txt"; : > "$RESULTS"
for rep in $(seq "$REPEATS"); do
  before="$(cli read tenants/a/io.max.burst.stat | tr -d '\n')"
  rm -f "$WORK"/run_iops*.log
  fio_run a 6 "$WORK/run" > "$WORK/fio.json"
  python3 - "$WORK/fio.json" "$WORK"/run_iops*.log "$rep" "$before" <<'PY' | tee -a "$RESULTS" >&2
import bisect, json, sys
text = open(sys.argv[1]).read()
job = json.loads(text[text.index("{"):])["jobs"][0]
ios, runtime_ms = job["read"]["total_ios"], job["job_runtime"]
done = sorted(int(line.split(",")[0]) for line in open(sys.argv[2]) if line.strip())   # ms of each completion
assert len(done) == ios, f"{len(done)} IOs logged, fio counted {ios}"
def rate_from(t):
    return (ios - bisect.bisect_left(done, t)) / ((runtime_ms - t) / 1000)
first2 = bisect.bisect_left(done, 2000)
# IOs before t ms less 1000 a second: what the group sent above io.max; its full credit is 8000.
spent_ms = next((t for t in range(runtime_ms) if bisect.bisect_left(done, t) - t >= 8000), None)
steady = f"{rate_from(spent_ms):.1f}" if spent_ms is not None else "nan"
print(f"{sys.argv[3]} {first2} {spent_ms if spent_ms is not None else 'nan'} {steady} {rate_from(2000):.1f} {ios} {runtime_ms} {8000 + runtime_ms} {sys.argv[4].replace(' ', '_') or '-'}")
PY
  sleep 8
done
AFTER="$(cli read tenants/a/io.max.burst.stat | tr -d '\n')"
python3 - "$RESULTS" "$(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet || echo -dirty)" "$(cut -d' ' -f1-3 /proc/loadavg)" "$AFTER" <<'PY' | tee "${OUT:-/dev/null}"
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
print(f"commit {sys.argv[2]}, load after {sys.argv[3]}; io.max riops=1000, io.max.burst riops=5000 len=2, fio nbd QD32 4k randread, 6 s runs 8 s apart")
print()
print("| run | credit before (io.max.burst.stat) | first 2 s IOs (10000 ±5%) | credit spent at | IOPS once spent (1000 ±1%) | IOPS from 2 s | total IOs | 8000 + 1000 x runtime (±3%) |")
print("|---|---|---:|---:|---:|---:|---:|---:|")
def row(name, before, first2, spent, steady, rest, ios, runtime, expected):
    f, s, r, t = first2 / 10000 - 1, steady / 1000 - 1, rest / 1000 - 1, ios / expected - 1
    print(f"| {name} | {before} | {first2:.0f} ({f:+.1%}) | {spent:.0f} ms | {steady:.1f} ({s:+.2%}) | {rest:.1f} ({r:+.1%}) | {ios:.0f} in {runtime:.0f} ms ({t:+.2%}) | {expected:.0f} |")
numbers = [[float(x) for x in r[1:8]] for r in rows]
for r, n in zip(rows, numbers):
    row(r[0], r[8].replace('_', ' '), *n)
row("median", "", *[statistics.median([x for x in column if x == x] or [float("nan")]) for column in zip(*numbers)])   # nan: the credit not spent
print()
print(f"credit 8 s after the last run: {sys.argv[4]}")
PY
