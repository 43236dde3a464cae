#!/usr/bin/env bash
# nvme-bench.sh - the matrices recorded in bench/results/nvme.md, with iotarget's NVMe/TCP load
# generator (bench/nvme-load.sh). Sections (default: direct):
#   direct  the O_DIRECT matrix of bench/datapath.sh over NVMe/TCP: `bin/iotarget serve` (a
#           `direct: 1` file backend on BENCH_DIR's disk, io_uring engine) pinned to SERVER_CPU,
#           the generator in its own JVM pinned to FIO_CPU; 4k randread/randwrite at 1 queue x
#           QD1, 1 x QD32 and 4 x QD32, against fio libaio on the same file (QD1, QD32); every
#           case warmed once, then REPEATS alternating rounds, medians and same-round ratios.
#           Server CPU µs/IO = the server's utime+stime (/proc/PID/stat) over the generator's
#           run / (IOPS x (warm-up + seconds)).
#   inproc  the older in-process matrix (target and generator in one JVM; null, memory, file).
#
#   flock /tmp/iotarget-heavy.lock bench/nvme-bench.sh [--seconds S] [--repeats N] [direct] [inproc]
# Env: SERVER_CPU (0), FIO_CPU (1), BENCH_DIR (/var/tmp/iotarget-bench, on the real disk).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT="$PWD"
S=10 REPEATS=3 SECTIONS=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --seconds) S="$2"; shift 2 ;;
    --repeats) REPEATS="$2"; shift 2 ;;
    direct|inproc) SECTIONS+=("$1"); shift ;;
    *) sed -n '2,15p' "$0" >&2; exit 2 ;;
  esac
done
[[ ${#SECTIONS[@]} -gt 0 ]] || SECTIONS=(direct)
SERVER_CPU="${SERVER_CPU:-0}" FIO_CPU="${FIO_CPU:-1}" BENCH_DIR="${BENCH_DIR:-/var/tmp/iotarget-bench}"
. scripts/env.sh
echo "# $(date -u +%FT%TZ) commit $(git rev-parse --short HEAD)$(git diff --quiet || echo -dirty), $(nproc) cpus, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg)"
MVN_ARGS="${MVN_ARGS:--o}" mvn_run package -DskipTests -pl control -am
MVN_ARGS="${MVN_ARGS:--o}" mvn_run test-compile -pl frontend-nvmetcp -am
export NVME_LOAD_BUILT=1
result() { grep -oE 'RESULT.*|[A-Za-z.]*Exception.*|ERROR.*' || true; }

direct() {
  local disk="$BENCH_DIR/disk.img" nqn=nqn.2026-11.io.iotarget:bench port=4431
  mkdir -p "$BENCH_DIR"
  [[ -s "$disk" ]] || dd if=/dev/urandom of="$disk" bs=1M count=1024 oflag=direct status=none
  work="$(mktemp -d /tmp/nvme-bench.XXXXXX)"            # global as well
  cat > "$work/iotarget.json" <<JSON
{ "server": { "control": "127.0.0.1:9849", "io_engine": "io_uring" },
  "backends": { "disk": { "type": "file", "path": "$disk", "direct": 1, "enable": 1 } },
  "nvmet": { "subsystems": { "$nqn": { "attr_allow_any_host": 1,
                                       "namespaces": { "1": { "device_path": "disk", "enable": 1 } } } },
             "ports": { "1": { "addr_trtype": "tcp", "addr_adrfam": "ipv4", "addr_traddr": "127.0.0.1",
                               "addr_trsvcid": "$port", "subsystems": ["$nqn"] } } } }
JSON
  taskset -c "$SERVER_CPU" bin/iotarget serve --config "$work/iotarget.json" > "$work/server.log" 2>&1 &
  SERVER=$!                                             # global: the EXIT trap needs it
  trap 'kill $SERVER 2>/dev/null; wait $SERVER 2>/dev/null; rm -rf "$work"' EXIT
  for _ in $(seq 300); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
  local clk; clk="$(getconf CLK_TCK)"
  ticks() { awk '{print $14 + $15}' "/proc/$SERVER/stat"; }
  # case rw queues depth seconds -> "iops p99us server_cpu_us_per_io"
  nvme_case() {
    local t0 t1 line
    t0="$(ticks)"
    line="$(taskset -c "$FIO_CPU" bench/nvme-load.sh --target "127.0.0.1:$port" --nqn "$nqn" --rw "$1" --bs 4096 \
              --queues "$2" --depth "$3" --seconds "$4" --warmup 1 2>&1 | result)"
    t1="$(ticks)"
    [[ "$line" == RESULT* ]] || { echo "generator failed: $line" >&2; return 1; }
    python3 - "$line" "$((t1 - t0))" "$clk" "$4" <<'PY'
import sys
kv = dict(x.split("=", 1) for x in sys.argv[1].split() if "=" in x)
iops = float(kv["iops"])
cpu = int(sys.argv[2]) / int(sys.argv[3]) * 1e6 / max(iops * (float(sys.argv[4]) + 1), 1)
print(f'{iops:.0f} {float(kv["p99"]):.0f} {cpu:.2f}')
PY
  }
  fio_case() {  # rw depth seconds
    taskset -c "$FIO_CPU" fio --output-format=json --name=b --ioengine=libaio --direct=1 --filename="$disk" --rw="$1" \
      --bs=4k --iodepth="$2" --size=1G --time_based --runtime="$3" > "$work/fio.json"
    python3 - "$work/fio.json" "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))["jobs"][0]["write" if "write" in sys.argv[2] else "read"]
print(f'{d["iops"]:.0f} {d["clat_ns"]["percentile"]["99.000000"] / 1000:.0f} -')
PY
  }
  local cases="randread:1:1 randread:1:32 randread:4:32 randwrite:1:1 randwrite:1:32 randwrite:4:32" c rw q d
  echo "# warming up" >&2
  for c in $cases; do IFS=: read -r rw q d <<<"$c"; nvme_case "$rw" "$q" "$d" 3 > /dev/null; done
  for rep in $(seq "$REPEATS"); do
    echo "# round $rep, load $(cut -d' ' -f1-3 /proc/loadavg)"
    for c in $cases; do
      IFS=: read -r rw q d <<<"$c"
      echo "$rep nvme $c $(nvme_case "$rw" "$q" "$d" "$S")" | tee -a "$work/raw"
      if [[ "$q" == 1 ]]; then echo "$rep fio $c $(fio_case "$rw" "$d" "$S")" | tee -a "$work/raw"; fi
    done
  done
  echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
  python3 - "$work/raw" "$S" "$REPEATS" <<'PY'
import collections, statistics, sys
runs = collections.defaultdict(dict)                  # (system, rw:queues:depth) -> {round: (iops, p99, cpu)}
for line in open(sys.argv[1]):
    rep, system, case, iops, p99, cpu = line.split()
    runs[(system, case)][rep] = (float(iops), float(p99), cpu)
print(f"\n{sys.argv[2]} s per case, median of {sys.argv[3]} alternating rounds; ratio = median of the same-round ratios "
      "to fio libaio on the file at the same depth (4 x QD32: to fio's single QD32 job)\n")
print("| case | iotarget NVMe/TCP IOPS | fio libaio IOPS | iotarget/fio (min-max) | p99 µs iotarget | p99 µs fio | server CPU µs/IO |")
print("|---|---|---|---|---|---|---|")
for (system, case), mine in runs.items():
    if system != "nvme": continue
    rw, q, d = case.split(":")
    fio = runs.get(("fio", f"{rw}:1:{d}"), {})
    ratios = [mine[r][0] / fio[r][0] for r in mine if r in fio]
    med = lambda v, i: statistics.median(x[i] for x in v.values())
    print(f"| 4k {rw} {q} x QD{d} | {med(mine, 0):.0f} | {med(fio, 0):.0f} | "
          f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f}) | {med(mine, 1):.0f} | {med(fio, 1):.0f} | "
          f"{statistics.median(float(x[2]) for x in mine.values()):.2f} |")
PY
}

inproc() {
  local img="frontend-nvmetcp/target/bench.img"
  [ -s "$img" ] || dd if=/dev/urandom of="$img" bs=1M count=256 oflag=direct status=none
  run() { nice bench/nvme-load.sh --seconds "$S" "$@" 2>&1 | result; }
  run --backend null --rw randread --bs 4096 --queues 2 --depth 32
  run --backend null --rw randwrite --bs 4096 --queues 2 --depth 32
  run --backend null --rw randread --bs 4096 --queues 2 --depth 32 --digests
  run --backend null --rw randwrite --bs 4096 --queues 2 --depth 32 --digests
  run --backend null --rw read --bs 131072 --queues 2 --depth 8
  run --backend null --rw write --bs 131072 --queues 2 --depth 8
  run --backend null --rw write --bs 1048576 --queues 2 --depth 4
  run --backend memory --rw randwrite --bs 4096 --queues 2 --depth 32 --size 268435456
  run --backend memory --rw randread --bs 4096 --queues 2 --depth 32 --size 268435456
  run --backend null --rw randread --bs 4096 --queues 1 --depth 1
  run --backend "file:$PWD/$img" --rw randread --bs 4096 --queues 1 --depth 32 --size 268435456
  run --backend "file:$PWD/$img" --rw randread --bs 4096 --queues 2 --depth 32 --size 268435456
  echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
}

for s in "${SECTIONS[@]}"; do "$s"; done
