#!/usr/bin/env bash
# iomax-vs-peers.sh - how evenly iotarget's io.max paces one NBD connection, against
# qemu-storage-daemon's throttle group and nbdkit's rate filter, same machine, one run.
#
# Four limits, each on its own export (and its own group, throttle group or rate filter):
#   riops=20000  4k randread QD32      wiops=20000  4k randwrite QD32
#   rbps=100MiB  64k randread QD32     wbps=100MiB  64k randwrite QD32
# nbdkit's rate filter (1.32) limits bits per second of both directions only: it gets the same
# rate in bits (riops=20000 at 4k = 655360000 bit/s), with its default burstiness (2 s). fio's nbd engine drives one
# connection at QD32 for RUNTIME seconds, no ramp (the first second is one of the things
# measured), after one unmeasured 3 s run of everything to warm iotarget's JIT; runs alternate server by server, limit by limit, repeat by repeat, and
# each cell is the median of REPEATS runs. Per run: achieved/limit over the whole run, p50 and
# p99 of total latency, the busiest 100 ms window (fio --write_iops_log --log_avg_msec=100)
# and the first second, both relative to the limit. The p99 bound of issue 11 is
# 2 x (QD / limit) + 1 ms.
#
# Usage: flock /tmp/iotarget-heavy.lock bench/iomax-vs-peers.sh [--runtime S] [--repeats N] [--out FILE]
# Env: SERVER_CPU (0), FIO_CPU (1).
# Needs: fio (nbd engine), nbdkit (rate filter), qemu-storage-daemon, taskset, python3.
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
SERVER_CPU="${SERVER_CPU:-0}" FIO_CPU="${FIO_CPU:-1}"
for t in fio nbdkit qemu-storage-daemon taskset python3; do
  command -v "$t" >/dev/null || { echo "missing $t (apt-get install fio nbdkit qemu-system-common util-linux python3)" >&2; exit 1; }
done
. "$ROOT/scripts/env.sh"
WORK="$(mktemp -d /tmp/iomax-bench.XXXXXX)"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; rm -rf "$WORK" /dev/shm/iomax-bench-*.img; }
trap cleanup EXIT

MIB100=104857600
# name:limit key:limit value:fio rw:block size:limit in bit/s for nbdkit
LIMITS=("riops:20000:randread:4096:$((20000 * 4096 * 8))"
        "wiops:20000:randwrite:4096:$((20000 * 4096 * 8))"
        "rbps:$MIB100:randread:65536:$((MIB100 * 8))"
        "wbps:$MIB100:randwrite:65536:$((MIB100 * 8))")
SIZE=256M
QD=32

(cd "$ROOT" && mvn_run package -DskipTests -pl control -am) >&2
wait_port() { for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; echo "port $1 never opened" >&2; return 1; }

start_iotarget() { # one group and one export per limit, all on one memory backend
  python3 - "$WORK/iotarget.json" "${LIMITS[@]}" <<'PY'
import json, sys
groups, exports = {"cgroup.subtree_control": "+io"}, {}
for spec in sys.argv[2:]:
    key, value = spec.split(":")[:2]
    groups[key] = {"io.max": f"default {key}={value}"}
    exports[key] = {"backend": "default", "cgroup": f"tenants/{key}", "enable": 1}
json.dump({"server": {"control": "127.0.0.1:9829", "nbd": "127.0.0.1:10911"},
           "backends": {"default": {"type": "memory", "size": "1G", "enable": 1}},
           "cgroup": {"tenants": groups}, "nbd": {"exports": exports}}, open(sys.argv[1], "w"), indent=1)
PY
  taskset -c "$SERVER_CPU" "$ROOT/bin/iotarget" serve --config "$WORK/iotarget.json" > "$WORK/iotarget.log" 2>&1 &
  PIDS+=($!); wait_port 10911
}
start_qsd() { # a throttle filter node over its own tmpfs file per limit
  local args=(--nbd-server addr.type=inet,addr.host=127.0.0.1,addr.port=10913) spec key value prop
  for spec in "${LIMITS[@]}"; do
    IFS=: read -r key value _ _ _ <<<"$spec"
    case "$key" in riops) prop=iops-read ;; wiops) prop=iops-write ;; rbps) prop=bps-read ;; wbps) prop=bps-write ;; esac
    dd if=/dev/zero of="/dev/shm/iomax-bench-$key.img" bs=1M count=256 status=none
    args+=(--object "throttle-group,id=tg-$key,x-$prop=$value"
           --blockdev "driver=file,filename=/dev/shm/iomax-bench-$key.img,node-name=file-$key,cache.direct=off,aio=threads"
           --blockdev "driver=throttle,throttle-group=tg-$key,file=file-$key,node-name=$key"
           --export "type=nbd,id=e-$key,node-name=$key,name=$key,writable=on")
  done
  taskset -c "$SERVER_CPU" qemu-storage-daemon "${args[@]}" > "$WORK/qsd.log" 2>&1 &
  PIDS+=($!); wait_port 10913
}
start_nbdkit() { # one nbdkit per limit (the rate filter's rates are per server)
  local spec key bits port=10920
  for spec in "${LIMITS[@]}"; do
    IFS=: read -r key _ _ _ bits <<<"$spec"
    taskset -c "$SERVER_CPU" nbdkit -f -i 127.0.0.1 -p "$port" --filter=rate memory "$SIZE" "rate=$bits" > "$WORK/nbdkit-$key.log" 2>&1 &
    PIDS+=($!); wait_port "$port"
    NBDKIT_PORT[$key]=$port; port=$((port + 1))
  done
}
declare -A NBDKIT_PORT
start_iotarget; start_qsd; start_nbdkit

uri() { # server limit-key
  case "$1" in
    iotarget) echo "nbd://127.0.0.1:10911/$2" ;;
    qsd) echo "nbd://127.0.0.1:10913/$2" ;;
    nbdkit) echo "nbd://127.0.0.1:${NBDKIT_PORT[$2]}/" ;;
  esac
}

run_one() { # server spec -> one result line on stdout
  local server="$1" key value rw bs
  IFS=: read -r key value rw bs _ <<<"$2"
  rm -f "$WORK"/log_iops*.log
  taskset -c "$FIO_CPU" fio --output-format=json --name=b --ioengine=nbd --uri="$(uri "$server" "$key")" \
    --rw="$rw" --bs="$bs" --iodepth="$QD" --size="$SIZE" --time_based --runtime="$RUNTIME" --ramp_time=0 \
    --lat_percentiles=1 --write_iops_log="$WORK/log" --log_avg_msec=100 > "$WORK/fio.json" 2>&1 ||
    { cat "$WORK/fio.json" >&2; return 1; }
  python3 - "$WORK/fio.json" "$WORK"/log_iops*.log "$key" "$value" "$bs" "$rw" <<'PY'
import json, sys
fio, log, key, limit, bs, rw = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
text = open(fio).read()
job = json.loads(text[text.index("{"):])["jobs"][0]        # fio may print warnings before its JSON
d = job["write" if "write" in rw else "read"]
unit = bs if key.endswith("bps") else 1                     # bytes per request for bps limits
seconds = job["job_runtime"] / 1000
ratio = d["total_ios"] * unit / seconds / limit
pct = d["lat_ns"]["percentile"]
p50, p99 = pct["50.000000"] / 1e6, pct["99.000000"] / 1e6
windows = [int(line.split(",")[1]) for line in open(log) if line.strip()]   # IOPS per 100 ms
busiest = max(windows) * unit / limit
first = sum(windows[:10]) / 10 * unit / limit
bound = 2 * 32 * unit / limit * 1e3 + 1
print(f"{ratio:.4f} {p50:.2f} {p99:.2f} {busiest:.3f} {first:.3f} {bound:.2f}")
PY
}

echo "warming up: 3 s of each limit on each server, not measured (iotarget's JIT)" >&2
for spec in "${LIMITS[@]}"; do for s in iotarget qsd nbdkit; do RUNTIME=3 run_one "$s" "$spec" > /dev/null; done; done
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
RESULTS="$WORK/results.txt"; : > "$RESULTS"
for rep in $(seq "$REPEATS"); do
  for spec in "${LIMITS[@]}"; do
    for s in iotarget qsd nbdkit; do
      r="$(run_one "$s" "$spec")"
      echo "$rep ${spec%%:*} $s $r" | tee -a "$RESULTS" >&2
    done
  done
done
LOAD_AFTER="$(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$RESULTS" "$RUNTIME" "$REPEATS" "$(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet || echo -dirty)" "$LOAD_AFTER" <<'PY' | tee "${OUT:-/dev/null}"
import statistics, sys, collections
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    rep, key, server, *values = line.split()
    rows[(key, server)].append([float(v) for v in values])
names = {"riops": "riops=20000, 4k randread", "wiops": "wiops=20000, 4k randwrite",
         "rbps": "rbps=100MiB/s, 64k randread", "wbps": "wbps=100MiB/s, 64k randwrite"}
print(f"commit {sys.argv[4]}, fio nbd engine, one connection, QD32, {sys.argv[2]} s per run, no ramp; "
      f"median of {sys.argv[3]} alternating runs (min-max in brackets); load average after: {sys.argv[5]}")
print()
print("| limit | server | achieved/limit | p50 ms | p99 ms (bound) | busiest 100 ms | first second |")
print("|---|---|---:|---:|---:|---:|---:|")
for key, name in names.items():
    for server in ("iotarget", "qsd", "nbdkit"):
        r = rows[(key, server)]
        col = lambda i: [x[i] for x in r]
        med = lambda i: statistics.median(col(i))
        span = lambda i, f: f"{f(med(i))} [{f(min(col(i)))}-{f(max(col(i)))}]"
        pc = lambda v: f"{100 * v:.1f}%"
        print(f"| {name} | {server} | {med(0):.4f} [{min(col(0)):.4f}-{max(col(0)):.4f}] | {med(1):.2f} | "
              f"{span(2, lambda v: f'{v:.2f}')} ({r[0][5]:.1f}) | {span(3, pc)} | {span(4, pc)} |")
PY
