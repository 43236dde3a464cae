#!/usr/bin/env bash
# datapath.sh - iotarget's NBD data path against its peers on the backends users deploy, one run,
# side by side. Sections (default: all):
#   direct  a 1 GiB file on this machine's disk with O_DIRECT: iotarget (file backend, direct=1)
#           vs qemu-storage-daemon (aio=io_uring, cache.direct=on) vs fio libaio on the file itself;
#           4k randread/randwrite at QD1 and QD32, 1 and 4 connections; and disk-max, fio libaio
#           on the file at QD128, what the disk itself gives at any depth: a server cannot be
#           faster than its disk, so 1.5x qemu-storage-daemon above it cannot be met
#   cache   a 1 GiB file in /dev/shm through the page cache: iotarget (file backend) vs nbdkit's
#           file plugin; 4k random and 1 MiB sequential, read and write
#   memory  iotarget's memory backend vs nbdkit's memory plugin, same workloads as cache
#
# Every server is pinned to SERVER_CPU and fio to FIO_CPU, every server is started once, its disk
# filled and every workload warmed on it before anything is measured (nbdkit reads at half speed
# on its first run); then runs alternate between the systems, REPEATS times, and each cell is the
# median; a ratio is the median of the ratios within one repeat (same-run ratios), iotarget's
# 4-connection runs against fio's single QD32 job on the file. CPU µs/req = the server's
# utime+stime over the run (/proc/PID/stat) / requests. The load average is recorded per repeat.
# Run it under the machine's heavy-job lock: flock /tmp/iotarget-heavy.lock bench/datapath.sh
# With BASELINE_JAR (the iotarget.jar of another build), that build runs beside this one as the
# systems base-direct, base-cache and base-memory (its own ports and /dev/shm file, the same
# disk file), alternating with the others: a before/after ratio from the same run.
# With POLL_US, a second server of this build with server.poll_us = POLL_US runs as poll-direct,
# poll-cache and poll-memory, listed first, so the ratios are the polling server's.
#
# Usage: bench/datapath.sh [--runtime S] [--repeats N] [--out FILE] [direct] [cache] [memory]
# Env: SERVER_CPU (0), FIO_CPU (1), BENCH_DIR (/var/tmp/iotarget-bench, must be on the real disk),
#      BASELINE_JAR (none), POLL_US (none).
# Needs: fio (nbd and libaio engines), nbdkit, qemu-storage-daemon, taskset, python3.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
# The command as given, with the settings it took from the environment: the output names it above
# its tables, so that a results file quotes each figure with the command that made it.
COMMAND="$(for v in SERVER_CPU FIO_CPU BENCH_DIR BASELINE_JAR POLL_US; do if [[ -n "${!v:-}" ]]; then printf '%s=%q ' "$v" "${!v}"; fi; done)bench/datapath.sh$(if (($#)); then printf ' %q' "$@"; fi)"
RUNTIME=10 REPEATS=3 OUT="" SECTIONS=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --runtime) RUNTIME="$2"; shift 2 ;;
    --repeats) REPEATS="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    direct|cache|memory) SECTIONS+=("$1"); shift ;;
    *) sed -n '2,/^# Needs/p' "$0" >&2; exit 2 ;;
  esac
done
[[ ${#SECTIONS[@]} -gt 0 ]] || SECTIONS=(direct cache memory)
SERVER_CPU="${SERVER_CPU:-0}" FIO_CPU="${FIO_CPU:-1}" BENCH_DIR="${BENCH_DIR:-/var/tmp/iotarget-bench}"
for t in fio nbdkit qemu-storage-daemon taskset python3; do
  command -v "$t" >/dev/null || { echo "missing $t (scripts/install-test-deps installs them)" >&2; exit 1; }
done
. "$ROOT/scripts/env.sh"
mkdir -p "$BENCH_DIR"
WORK="$(mktemp -d /tmp/datapath-bench.XXXXXX)"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; rm -rf "$WORK" /dev/shm/iotarget-bench-*.img; }
trap cleanup EXIT
(cd "$ROOT" && mvn_run package -DskipTests -pl control -am) >&2

DISK="$BENCH_DIR/disk.img" SHM_IOT=/dev/shm/iotarget-bench-iotarget.img SHM_NBDKIT=/dev/shm/iotarget-bench-nbdkit.img
SHM_BASE=/dev/shm/iotarget-bench-base.img SHM_POLL=/dev/shm/iotarget-bench-poll.img
# Written out, not sparse: every system reads real blocks.
[[ -s "$DISK" ]] || dd if=/dev/urandom of="$DISK" bs=1M count=1024 oflag=direct status=none
for f in "$SHM_IOT" "$SHM_NBDKIT" ${BASELINE_JAR:+"$SHM_BASE"} ${POLL_US:+"$SHM_POLL"}; do dd if=/dev/urandom of="$f" bs=1M count=1024 status=none; done

config() { # control-port nbd-port shm-file
  cat <<JSON
{ "server": { "control": "127.0.0.1:$1", "nbd": "127.0.0.1:$2", "io_engine": "io_uring" },
  "backends": { "disk": { "type": "file", "path": "$DISK", "direct": 1, "enable": 1 },
                "shm":  { "type": "file", "path": "$3", "enable": 1 },
                "mem":  { "type": "memory", "size": "1G", "enable": 1 } },
  "nbd": { "exports": { "disk": { "backend": "disk", "enable": 1 },
                        "shm":  { "backend": "shm", "enable": 1 },
                        "mem":  { "backend": "mem", "enable": 1 } } } }
JSON
}
config 9829 10911 "$SHM_IOT" > "$WORK/iotarget.json"
wait_port() { for _ in $(seq 200); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; echo "port $1 never opened" >&2; return 1; }
declare -A PID URI
start() { # name port command...
  local name="$1" port="$2"; shift 2
  taskset -c "$SERVER_CPU" "$@" > "$WORK/$name.log" 2>&1 &
  PIDS+=($!); PID[$name]=$!; wait_port "$port"
}
start iotarget 10911 "$ROOT/bin/iotarget" serve --config "$WORK/iotarget.json"
URI[iotarget-direct]="nbd://127.0.0.1:10911/disk" URI[iotarget-cache]="nbd://127.0.0.1:10911/shm" URI[iotarget-memory]="nbd://127.0.0.1:10911/mem"
if [[ -n "${POLL_US:-}" ]]; then
  config 9849 10931 "$SHM_POLL" | sed "s/\"io_engine\": \"io_uring\"/&, \"poll_us\": $POLL_US/" > "$WORK/poll.json"
  start poll 10931 "$ROOT/bin/iotarget" serve --config "$WORK/poll.json"
  URI[poll-direct]="nbd://127.0.0.1:10931/disk" URI[poll-cache]="nbd://127.0.0.1:10931/shm" URI[poll-memory]="nbd://127.0.0.1:10931/mem"
  PID[poll-direct]=${PID[poll]} PID[poll-cache]=${PID[poll]} PID[poll-memory]=${PID[poll]}
fi
if [[ -n "${BASELINE_JAR:-}" ]]; then
  config 9839 10921 "$SHM_BASE" > "$WORK/base.json"
  start base 10921 java --enable-native-access=ALL-UNNAMED -XX:MaxDirectMemorySize=64g -jar "$BASELINE_JAR" serve --config "$WORK/base.json"
  URI[base-direct]="nbd://127.0.0.1:10921/disk" URI[base-cache]="nbd://127.0.0.1:10921/shm" URI[base-memory]="nbd://127.0.0.1:10921/mem"
  PID[base-direct]=${PID[base]} PID[base-cache]=${PID[base]} PID[base-memory]=${PID[base]}
fi
for s in "${SECTIONS[@]}"; do
  case "$s" in
    direct) start qsd 10913 qemu-storage-daemon \
              --blockdev "driver=file,filename=$DISK,node-name=disk,cache.direct=on,aio=io_uring" \
              --nbd-server addr.type=inet,addr.host=127.0.0.1,addr.port=10913 \
              --export type=nbd,id=e0,node-name=disk,name=default,writable=on
            URI[qsd-direct]="nbd://127.0.0.1:10913/default" ;;
    cache)  start nbdkit-file 10912 nbdkit -f -i 127.0.0.1 -p 10912 file "$SHM_NBDKIT"
            URI[nbdkit-cache]="nbd://127.0.0.1:10912/" ;;
    memory) start nbdkit-memory 10914 nbdkit -f -i 127.0.0.1 -p 10914 memory 1G
            URI[nbdkit-memory]="nbd://127.0.0.1:10914/" ;;
  esac
done
PID[iotarget-direct]=${PID[iotarget]} PID[iotarget-cache]=${PID[iotarget]} PID[iotarget-memory]=${PID[iotarget]}
[[ -n "${PID[qsd]:-}" ]] && PID[qsd-direct]=${PID[qsd]}
[[ -n "${PID[nbdkit-file]:-}" ]] && PID[nbdkit-cache]=${PID[nbdkit-file]}
[[ -n "${PID[nbdkit-memory]:-}" ]] && PID[nbdkit-memory]=${PID[nbdkit-memory]}

CLK_TCK="$(getconf CLK_TCK)"
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# run_one SYSTEM RW BS QD JOBS SECONDS -> "iops mib p99us cpu_us_per_req"
run_one() {
  local system="$1" rw="$2" bs="$3" qd="$4" jobs="$5" secs="$6" target t0=0 t1=0 pid=""
  if [[ "$system" == fio-direct || "$system" == disk-max ]]; then
    target=(--ioengine=libaio --direct=1 --filename="$DISK")
    [[ "$system" == disk-max ]] && qd=128
  else
    target=(--ioengine=nbd --uri="${URI[$system]}"); pid="${PID[$system]}"
  fi
  [[ -n "$pid" ]] && t0="$(cpu_ticks "$pid")"
  taskset -c "$FIO_CPU" fio --output-format=json --name=b "${target[@]}" --rw="$rw" --bs="$bs" --iodepth="$qd" \
    --numjobs="$jobs" --group_reporting --size=1G --time_based --runtime="$secs" > "$WORK/fio.json" 2>&1 ||
    { cat "$WORK/fio.json" >&2; return 1; }
  [[ -n "$pid" ]] && t1="$(cpu_ticks "$pid")"
  python3 - "$WORK/fio.json" "$rw" "$((t1 - t0))" "$CLK_TCK" <<'PY'
import json, sys
text = open(sys.argv[1]).read()
j = json.loads(text[text.index("{"):])["jobs"][0]
d = j["write" if "write" in sys.argv[2] else "read"]
ios = d["total_ios"]
p99 = d["clat_ns"]["percentile"].get("99.000000", 0) / 1000
cpu = int(sys.argv[3]) / int(sys.argv[4]) * 1e6 / max(ios, 1)
print(f'{d["iops"]:.0f} {d["bw_bytes"] / 1048576:.1f} {p99:.0f} {cpu:.2f}')
PY
}

# section -> systems; workload = rw:bs:qd:jobs
declare -A SYSTEMS=([direct]="iotarget-direct qsd-direct fio-direct disk-max" [cache]="iotarget-cache nbdkit-cache" [memory]="iotarget-memory nbdkit-memory")
if [[ -n "${BASELINE_JAR:-}" ]]; then
  for s in direct cache memory; do SYSTEMS[$s]="${SYSTEMS[$s]/iotarget-$s/iotarget-$s base-$s}"; done
fi
if [[ -n "${POLL_US:-}" ]]; then
  for s in direct cache memory; do SYSTEMS[$s]="poll-$s ${SYSTEMS[$s]}"; done
fi
declare -A WORKLOADS=(
  [direct]="randread:4k:1:1 randread:4k:32:1 randread:4k:32:4 randwrite:4k:1:1 randwrite:4k:32:1 randwrite:4k:32:4"
  [cache]="randread:4k:32:1 randwrite:4k:32:1 read:1M:8:1 write:1M:8:1"
  [memory]="randread:4k:32:1 randwrite:4k:32:1 read:1M:8:1 write:1M:8:1")

echo "filling and warming every system (writes first, then every workload once)" >&2
for s in "${SECTIONS[@]}"; do
  for sys in ${SYSTEMS[$s]}; do
    [[ "$sys" == fio-direct || "$sys" == disk-max ]] && continue
    taskset -c "$FIO_CPU" fio --name=fill --ioengine=nbd --uri="${URI[$sys]}" --rw=write --bs=1M --iodepth=8 --size=1G > /dev/null
    for w in ${WORKLOADS[$s]}; do IFS=: read -r rw bs qd jobs <<<"$w"; run_one "$sys" "$rw" "$bs" "$qd" "$jobs" 3 > /dev/null; done
  done
done

RESULTS="$WORK/results.txt"; : > "$RESULTS"
LOADS=()
for rep in $(seq "$REPEATS"); do
  LOADS+=("$(cut -d' ' -f1 /proc/loadavg)")
  for s in "${SECTIONS[@]}"; do
    for w in ${WORKLOADS[$s]}; do
      IFS=: read -r rw bs qd jobs <<<"$w"
      for sys in ${SYSTEMS[$s]}; do
        # fio on the file is the ceiling of one QD32 queue: measured once per workload, single job.
        [[ "$sys" == fio-direct && "$jobs" != 1 ]] && continue
        # The disk's own ceiling, for the QD32 workloads: one fio job at QD128.
        [[ "$sys" == disk-max && ( "$jobs" != 1 || "$qd" == 1 ) ]] && continue
        r="$(run_one "$sys" "$rw" "$bs" "$qd" "$jobs" "$RUNTIME")"
        echo "$rep $s $w $sys $r" | tee -a "$RESULTS" >&2
      done
    done
  done
done

python3 - "$RESULTS" "$RUNTIME" "$REPEATS" "$(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet || echo -dirty)" \
  "$(cut -d' ' -f1-3 /proc/loadavg)" "${LOADS[*]}" "$COMMAND" <<'PY' | tee "${OUT:-/dev/null}"
import statistics, sys, collections
rows = collections.defaultdict(dict)          # (section, workload, system) -> {rep: values}
for line in open(sys.argv[1]):
    rep, section, w, system, iops, mib, p99, cpu = line.split()
    rows[(section, w, system)][rep] = (float(iops), float(mib), float(p99), float(cpu))
med = {k: [statistics.median(x[i] for x in v.values()) for i in range(4)] for k, v in rows.items()}
print(f"```sh\n{sys.argv[7]}\n```\n")
print(f"commit {sys.argv[4]}, fio, {sys.argv[2]} s per run, median of {sys.argv[3]} alternating runs, servers pinned to one core and fio "
      f"to another, every system warmed first; 1-min load average at the start of each repeat {sys.argv[6]}, load average at the end {sys.argv[5]}")
def name(w):
    rw, bs, qd, jobs = w.split(":")
    return f"{bs} {rw} QD{qd}" + (f" x{jobs} conn" if jobs != "1" else "")
def peer(s, w, x):
    """The runs iotarget's workload w is compared with: fio on the file (fio-direct, disk-max) has only single-job runs."""
    if (s, w, x) in rows: return rows[(s, w, x)]
    return rows.get((s, w.rsplit(":", 1)[0] + ":1", x)) if x in ("fio-direct", "disk-max") else None
def ratio_cell(ratios):
    return f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})" if ratios else "-"
def qsd_target(s, w):
    """1.5x qemu-storage-daemon's rate over the disk's own (disk-max), repeat by repeat: above 1 no server can meet it."""
    q, d = rows.get((s, w, "qsd-direct")), peer(s, w, "disk-max")
    return ratio_cell([1.5 * q[r][0] / d[r][0] for r in q if d and r in d and d[r][0] > 0] if q else [])
sections = sorted({k[0] for k in med}, key=["direct", "cache", "memory"].index)
for s in sections:
    systems = []
    for k in med:
        if k[0] == s and k[2] not in systems: systems.append(k[2])
    base = systems[0]
    limit = "disk-max" in systems and "qsd-direct" in systems
    servers = [x for x in systems if x not in ("fio-direct", "disk-max")]
    print(f"\n### {s}\n")
    head = "| workload | " + " | ".join(f"{x} IOPS" for x in systems) + " | " + " | ".join(f"{base}/{x} (min-max)" for x in systems[1:]) \
           + (" | 1.5 x qsd-direct / disk-max (min-max)" if limit else "") \
           + f" | MiB/s {base} | p99 µs {base} | CPU µs/req " + " | ".join(servers) + " |"
    print(head); print("|" + "---|" * (head.count("|") - 1))
    for w in dict.fromkeys(k[1] for k in med if k[0] == s):
        vals = {x: med.get((s, w, x)) for x in systems}
        mine = rows[(s, w, base)]
        cells = [f"{vals[x][0]:.0f}" if vals[x] else "-" for x in systems]
        ratios = []
        for x in systems[1:]:
            other = peer(s, w, x)
            ratios.append(ratio_cell([mine[r][0] / other[r][0] for r in mine if other and r in other and other[r][0] > 0]))
        if limit: ratios.append(qsd_target(s, w))
        cpus = [f"{vals[x][3]:.2f}" if vals[x] else "-" for x in servers]
        print(f"| {name(w)} | " + " | ".join(cells) + " | " + " | ".join(ratios) + f" | {med[(s, w, base)][1]:.0f} | {med[(s, w, base)][2]:.0f} | "
              + " | ".join(cpus) + " |")
PY
