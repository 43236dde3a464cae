#!/usr/bin/env bash
# iomax-burst.sh - io.max.burst through NBD against the issue's targets: io.max riops=1000,
# io.max.burst riops=5000 len=2, fio's nbd engine at QD32 (4k randread) for 6 s, then 8 s idle,
# REPEATS times on one group (so every run after the first also shows whether 8 s idle refilled
# the credit). Per run, from fio's 100 ms IOPS log (timestamps at the client): IOs in the first
# 2 s (target 10000 ±5%); when the credit was spent (the end of the first window after the last
# one at 2000 IOPS or more: that window may still hold the credit's last IOs); the steady rate
# from then to the end, once the credit is spent (target 1000 ±1%); the rate from 2 s to the end,
# which also holds whatever credit the first 2 s left unspent (a lag at the client or server, or
# fio's clock starting before the first IO), the group's to spend just after 2 s; the total
# against 8000 + 1000 x runtime (14000 in 6 s, ±3%); and io.max.burst.stat before each run, 8 s
# after the previous one (full: riops=8000/8000). Medians of the runs last. Server pinned to
# CPU 0, fio to CPU 1.
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
    --write_iops_log="$3" --log_avg_msec=100
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
import json, sys
text = open(sys.argv[1]).read()
job = json.loads(text[text.index("{"):])["jobs"][0]
ios, runtime_ms = job["read"]["total_ios"], job["job_runtime"]
windows, prev = [], 0                                      # (start ms, end ms, IOPS)
for line in open(sys.argv[2]):
    if line.strip():
        t, v = int(line.split(",")[0]), int(line.split(",")[1])
        windows.append((prev, t, v)); prev = t
def ios_between(a, b):
    return sum(v * max(0, min(e, b) - max(s, a)) / 1000 for s, e, v in windows)
def rate_from(t):                                          # fio's last log window ends before its runtime does
    return (ios - ios_between(0, t)) / ((runtime_ms - t) / 1000)
first2 = ios_between(0, 2000)
last_burst = max(i for i, (s, e, v) in enumerate(windows) if v >= 2000)
spent_ms = windows[min(last_burst + 1, len(windows) - 1)][1]
print(f"{sys.argv[3]} {first2:.0f} {spent_ms} {rate_from(spent_ms):.1f} {rate_from(2000):.1f} {ios} {runtime_ms} {8000 + runtime_ms} {sys.argv[4].replace(' ', '_') or '-'}")
PY
  sleep 8
done
AFTER="$(cli read tenants/a/io.max.burst.stat | tr -d '\n')"
python3 - "$RESULTS" "$(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet || echo -dirty)" "$(cut -d' ' -f1-3 /proc/loadavg)" "$AFTER" <<'PY' | tee "${OUT:-/dev/null}"
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
print(f"commit {sys.argv[2]}, load after {sys.argv[3]}; io.max riops=1000, io.max.burst riops=5000 len=2, fio nbd QD32 4k randread, 6 s runs 8 s apart")
print()
print("| run | credit before (io.max.burst.stat) | first 2 s IOs (10000 ±5%) | credit spent by | IOPS once spent (1000 ±1%) | IOPS from 2 s | total IOs | 8000 + 1000 x runtime (±3%) |")
print("|---|---|---:|---:|---:|---:|---:|---:|")
def row(name, before, first2, spent, steady, rest, ios, runtime, expected):
    f, s, r, t = first2 / 10000 - 1, steady / 1000 - 1, rest / 1000 - 1, ios / expected - 1
    print(f"| {name} | {before} | {first2:.0f} ({f:+.1%}) | {spent:.0f} ms | {steady:.1f} ({s:+.2%}) | {rest:.1f} ({r:+.1%}) | {ios:.0f} in {runtime:.0f} ms ({t:+.2%}) | {expected:.0f} |")
numbers = [[float(x) for x in r[1:8]] for r in rows]
for r, n in zip(rows, numbers):
    row(r[0], r[8].replace('_', ' '), *n)
row("median", "", *[statistics.median(column) for column in zip(*numbers)])
print()
print(f"credit 8 s after the last run: {sys.argv[4]}")
PY
