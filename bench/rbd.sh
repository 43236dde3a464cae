#!/usr/bin/env bash
# rbd.sh - iotarget's rbd backend against the other ways of serving one Ceph RBD image, on the same
# one-host cluster (scripts/ceph-dev: one monitor, one memstore OSD), in one run, side by side:
#   iotarget  an NBD export of a type rbd backend (librbd through FFM, librbd's cache off)
#   qsd       qemu-storage-daemon's rbd driver (cache.direct=on, which turns librbd's cache off
#             too) with its NBD export
#   rbd-nbd   Debian's rbd-nbd, fio on its /dev/nbdN with libaio O_DIRECT - only where the nbd
#             kernel module can be loaded (containers usually cannot): otherwise left out, and
#             the table says so
#   fio-rbd   fio's rbd engine on the image itself, no gateway: librbd's own ceiling here
# Workloads: 4k randread and randwrite at QD1 and QD32, 1 MiB sequential read and write at QD8, on
# one connection; then 4k randread and randwrite at QD32 on four connections to the same export
# (fio numjobs=4, each job its own NBD connection - its own librbd client for fio-rbd, the same
# kernel device for rbd-nbd - at QD32 each, as bench/datapath.sh's "QD32 x4 conn" rows; each job on
# its own quarter of the image, so that no two jobs write the same blocks). Each system has an image
# of its own (IMAGE_MB, layering only), written in full and warmed with every workload before
# anything is measured; then runs alternate between the systems, REPEATS times, and each cell is
# the median; a ratio is the median of the ratios within one repeat (same-run ratios). Servers
# are pinned to SERVER_CPU and fio to FIO_CPU; the Ceph daemons are not pinned (on a 2-core
# machine there is no third core: they share both with the others, the same for every system).
# CPU µs/req = the server's utime+stime over the run (/proc/PID/stat) / requests.
# Run it under the machine's heavy-job lock: flock /tmp/iotarget-heavy.lock bench/rbd.sh
#
# Usage: bench/rbd.sh [--runtime S] [--repeats N] [--out FILE]
# Env: SERVER_CPU (0), FIO_CPU (1), IMAGE_MB (256), WORKLOADS (rw:bs:QD:connections ..., to rerun some rows).
# Needs: ceph-mon, ceph-osd, ceph-common, fio (nbd and rbd engines), qemu-storage-daemon with
#        qemu-block-extra (its rbd driver), taskset, python3; rbd-nbd and the nbd module optional.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
RUNTIME=10 REPEATS=3 OUT=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --runtime) RUNTIME="$2"; shift 2 ;;
    --repeats) REPEATS="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    *) sed -n '2,/^# Needs/p' "$0" >&2; exit 2 ;;
  esac
done
SERVER_CPU="${SERVER_CPU:-0}" FIO_CPU="${FIO_CPU:-1}" IMAGE_MB="${IMAGE_MB:-256}"
for t in fio qemu-storage-daemon taskset python3 rbd ceph-mon ceph-osd; do
  command -v "$t" >/dev/null || { echo "missing $t (scripts/install-test-deps installs it)" >&2; exit 1; }
done
fio --enghelp | grep -qx '[[:space:]]*rbd' || { echo "fio has no rbd engine" >&2; exit 1; }
. "$ROOT/scripts/env.sh"
WORK="$(mktemp -d /tmp/rbd-bench.XXXXXX)"
PIDS=()
NBD_DEV=""
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  [[ -n "$NBD_DEV" ]] && rbd-nbd unmap "$NBD_DEV" 2>/dev/null || true
  "$ROOT/scripts/ceph-dev" stop "$WORK/ceph" || true
  rm -rf "$WORK"
}
trap cleanup EXIT
flock /tmp/iotarget-build.lock bash -c ". \"$ROOT/scripts/env.sh\" && build_jar" >&2

started=$SECONDS
CONF="$("$ROOT/scripts/ceph-dev" start "$WORK/ceph")"
echo "one-host cluster up in $((SECONDS - started)) s: $CONF" >&2
export CEPH_CONF="$CONF"
for image in iotarget qsd rbd-nbd fio-rbd; do rbd create --image-feature layering --size "${IMAGE_MB}M" "rbd/$image"; done

wait_port() { for _ in $(seq 300); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; echo "port $1 never opened" >&2; return 1; }
declare -A PID TARGET
cat > "$WORK/iotarget.json" <<JSON
{ "server": { "control": "127.0.0.1:0", "nbd": "127.0.0.1:10951" },
  "backends": { "rbd": { "type": "rbd", "pool": "rbd", "image": "iotarget", "conf": "$CONF", "enable": 1 } },
  "nbd": { "exports": { "rbd": { "backend": "rbd", "enable": 1 } } } }
JSON
taskset -c "$SERVER_CPU" "$ROOT/bin/iotarget" serve --config "$WORK/iotarget.json" > "$WORK/iotarget.log" 2>&1 &
PIDS+=($!); PID[iotarget]=$!; wait_port 10951
TARGET[iotarget]="--ioengine=nbd --uri=nbd://127.0.0.1:10951/rbd"
taskset -c "$SERVER_CPU" qemu-storage-daemon \
  --blockdev "driver=rbd,pool=rbd,image=qsd,conf=$CONF,user=admin,node-name=disk,cache.direct=on" \
  --nbd-server addr.type=inet,addr.host=127.0.0.1,addr.port=10952 \
  --export type=nbd,id=e0,node-name=disk,name=default,writable=on > "$WORK/qsd.log" 2>&1 &
PIDS+=($!); PID[qsd]=$!; wait_port 10952
TARGET[qsd]="--ioengine=nbd --uri=nbd://127.0.0.1:10952/default"
SYSTEMS="iotarget qsd"
RBD_NBD_NOTE="rbd-nbd: not measured, the nbd kernel module is not available here (modprobe nbd failed)"
# Say why precisely when the kernel tells: a kernel without NBD and without modules can never have it.
if [[ -r /proc/config.gz ]] && ! zgrep -qE '^CONFIG_BLK_DEV_NBD=(y|m)' /proc/config.gz; then
  RBD_NBD_NOTE="rbd-nbd: not measured, this kernel ($(uname -r)) has no NBD driver (CONFIG_BLK_DEV_NBD not set$(zgrep -q '^CONFIG_MODULES=y' /proc/config.gz || echo ', nor module support'))"
fi
if command -v rbd-nbd >/dev/null && { [[ -e /dev/nbd0 ]] || modprobe nbd nbds_max=4 2>/dev/null; } && [[ -e /dev/nbd0 ]]; then
  NBD_DEV="$(taskset -c "$SERVER_CPU" rbd-nbd map --conf "$CONF" rbd/rbd-nbd)"
  PID[rbd-nbd]="$(pgrep -n -x rbd-nbd)"
  TARGET[rbd-nbd]="--ioengine=libaio --direct=1 --filename=$NBD_DEV"
  SYSTEMS="$SYSTEMS rbd-nbd"
  RBD_NBD_NOTE="rbd-nbd: $NBD_DEV, fio libaio O_DIRECT on the kernel's NBD device"
fi
TARGET[fio-rbd]="--ioengine=rbd --clientname=admin --pool=rbd --rbdname=fio-rbd"
SYSTEMS="$SYSTEMS fio-rbd"
echo "$RBD_NBD_NOTE" >&2

CLK_TCK="$(getconf CLK_TCK)"
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# run_one SYSTEM RW BS QD JOBS SECONDS -> "iops p50us p99us cpu_us_per_req" (QD per job; JOBS connections, one quarter each)
run_one() {
  local system="$1" rw="$2" bs="$3" qd="$4" jobs="$5" secs="$6" t0=0 t1=0 pid="${PID[$1]:-}"
  local span=(--size="${IMAGE_MB}M")
  (( jobs > 1 )) && span=(--numjobs="$jobs" --group_reporting --size="$((IMAGE_MB / jobs))M" --offset_increment="$((IMAGE_MB / jobs))M")
  [[ -n "$pid" ]] && t0="$(cpu_ticks "$pid")"
  # shellcheck disable=SC2086 # TARGET holds several options
  taskset -c "$FIO_CPU" fio --output-format=json --name=b ${TARGET[$system]} --rw="$rw" --bs="$bs" --iodepth="$qd" \
    "${span[@]}" --time_based --runtime="$secs" > "$WORK/fio.json" 2>&1 || { cat "$WORK/fio.json" >&2; return 1; }
  [[ -n "$pid" ]] && t1="$(cpu_ticks "$pid")"
  python3 - "$WORK/fio.json" "$rw" "$((t1 - t0))" "$CLK_TCK" <<'PY'
import json, sys
text = open(sys.argv[1]).read()
j = json.loads(text[text.index("{"):])["jobs"][0]
d = j["write" if "write" in sys.argv[2] else "read"]
ios = d["total_ios"]
pct = d["clat_ns"]["percentile"]
cpu = int(sys.argv[3]) / int(sys.argv[4]) * 1e6 / max(ios, 1)
print(f'{d["iops"]:.0f} {pct.get("50.000000", 0) / 1000:.0f} {pct.get("99.000000", 0) / 1000:.0f} {cpu:.2f}')
PY
}

# rw:bs:QD per connection:connections
WORKLOADS="${WORKLOADS:-randread:4k:1:1 randread:4k:32:1 randwrite:4k:1:1 randwrite:4k:32:1 read:1M:8:1 write:1M:8:1 randread:4k:32:4 randwrite:4k:32:4}"
echo "filling and warming every system (a full write, then every workload once)" >&2
for sys in $SYSTEMS; do
  # shellcheck disable=SC2086
  taskset -c "$FIO_CPU" fio --name=fill ${TARGET[$sys]} --rw=write --bs=1M --iodepth=8 --size="${IMAGE_MB}M" > /dev/null
  for w in $WORKLOADS; do IFS=: read -r rw bs qd jobs <<<"$w"; run_one "$sys" "$rw" "$bs" "$qd" "$jobs" 3 > /dev/null; done
done

RESULTS="$WORK/results.txt"; : > "$RESULTS"
LOADS=()
for rep in $(seq "$REPEATS"); do
  LOADS+=("$(cut -d' ' -f1 /proc/loadavg)")
  for w in $WORKLOADS; do
    IFS=: read -r rw bs qd jobs <<<"$w"
    for sys in $SYSTEMS; do
      r="$(run_one "$sys" "$rw" "$bs" "$qd" "$jobs" "$RUNTIME")"
      echo "$rep $w $sys $r" | tee -a "$RESULTS" >&2
    done
  done
done

python3 - "$RESULTS" "$RUNTIME" "$REPEATS" "$(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet || echo -dirty)" \
  "$(cut -d' ' -f1-3 /proc/loadavg)" "${LOADS[*]}" "$RBD_NBD_NOTE" "$IMAGE_MB" <<'PY' | tee "${OUT:-/dev/null}"
import collections, statistics, sys
rows = collections.defaultdict(dict)     # (workload, system) -> {rep: (iops, p50, p99, cpu)}
systems = []
for line in open(sys.argv[1]):
    rep, w, system, *v = line.split()
    rows[(w, system)][rep] = tuple(map(float, v))
    if system not in systems: systems.append(system)
med = {k: [statistics.median(x[i] for x in v.values()) for i in range(4)] for k, v in rows.items()}
print(f"commit {sys.argv[4]}, fio, {sys.argv[2]} s per run, median of {sys.argv[3]} alternating runs, one {sys.argv[8]} MiB image per "
      f"system on a one-host memstore Ceph (scripts/ceph-dev), servers pinned to one core and fio to the other, the Ceph daemons "
      f"unpinned, every system written in full and warmed first; 1-min load average at the start of each repeat {sys.argv[6]}, "
      f"at the end {sys.argv[5]}. {sys.argv[7]}.\n")
peers = [s for s in systems if s != "iotarget"]
servers = [s for s in systems if s != "fio-rbd"]
head = ("| workload | " + " | ".join(f"{s} IOPS" for s in systems) + " | " + " | ".join(f"iotarget/{s} (min-max)" for s in peers)
        + " | " + " | ".join(f"p50/p99 µs {s}" for s in systems) + " | " + " | ".join(f"CPU µs/req {s}" for s in servers) + " |")
print(head); print("|" + "---|" * (head.count("|") - 1))
for w in dict.fromkeys(k[0] for k in med):
    rw, bs, qd, jobs = (w.split(":") + ["1"])[:4]
    name = f"{bs} {rw} QD{qd}" if jobs == "1" else f"{bs} {rw} QD{qd} x{jobs} conn"
    mine = rows[(w, "iotarget")]
    ratios = []
    for s in peers:
        other = rows.get((w, s), {})
        r = [mine[k][0] / other[k][0] for k in mine if k in other and other[k][0] > 0]
        ratios.append(f"{statistics.median(r):.2f} ({min(r):.2f}-{max(r):.2f})" if r else "-")
    print(f"| {name} | " + " | ".join(f"{med[(w, s)][0]:.0f}" for s in systems) + " | " + " | ".join(ratios) + " | "
          + " | ".join(f"{med[(w, s)][1]:.0f}/{med[(w, s)][2]:.0f}" for s in systems) + " | "
          + " | ".join(f"{med[(w, s)][3]:.1f}" for s in servers) + " |")
PY
