#!/usr/bin/env bash
# calibrate.sh - what `iotarget calibrate` finds, and whether the model it finds holds.
#
# 1. A null backend of known capacity (completion_nsec=1000000 queue_depth=10 mbps=200:
#    10,000 IOPS, 200 MiB/s): fio through NBD at QD10 (the device alone), then calibrate; both
#    against the model. Then the calibrated model and QoS are written for it and the two
#    tenants below saturate it for RUNTIME s: a device whose capacity does not move, so vrate
#    shows what the model and the QoS loop do by themselves.
# 2. The machine's disk: a file backend with O_DIRECT on DISK_DIR (not tmpfs), filled with
#    written data (holes would read without touching the disk), calibrated, the two lines written. Then
#    two tenants with io.weight 100 and 200 saturate it with fio through NBD (4 KiB randrw, or --bs K KiB,
#    50/50, QD32 each, or --qd N) for RUNTIME s; io.stat's cost.vrate on the disk and the tenants' io.stat
#    are read every half second, each sample stamped with its time. A model that matches the
#    disk keeps vrate near 100%; the tenants' IOPS ratio shows the weights. Between calibrate
#    and --apply's writes the same tenants run BASELINE (15) s with iocost off: what the disk
#    gives them, against what the model says it gives such a mix, over the whole run and per half
#    second (how far the disk itself moves: a vrate that followed it exactly would be within
#    90-110% only as often as that is). After each weighted run: how many of iocost's periods were
#    busy and for which signal, and which way vrate went (iotarget_cost_*_periods_total, /metrics).
#
# Warm-up: before anything is measured the same two tenants run on the disk for WARMUP s
# (iocost not yet enabled) and the null backend's fio runs first, so the server's NBD, dispatch
# and file paths are compiled; then 11 s of quiet, as calibrate refuses a device used within 10 s.
#
# --qos default keeps the calibrated io.cost.model but writes io.cost.qos "enable=1 ctrl=auto"
# (no latency targets), to tell the model's effect from the suggested targets'.
#
# --rw randread makes the tenants read only (default randrw, 50/50).
#
# --disk-iops N holds the disk still: the host kernel's blk-throttle caps the server's reads and
# writes on the disk's block device at N a second each (cgroup v1 blkio.throttle.*_iops_device, or
# v2 io.max; needs root). The machine's disk moves by more than vrate's 90-110% band from one half
# second to the next and between runs minutes apart (bench/results/calibrate.md sections 6-7); held
# below its slowest, it is a real disk path whose capacity does not move. The two limits are
# separate budgets, not one device's time shared by reads and writes as iocost's linear model
# has it, so use it with --rw randread.
#
# The server runs on CPU 0 and the clients on CPU 1 (when there are two), so that fio's threads
# do not take the server's core while it is timing the device.
#
# Usage: flock /tmp/iotarget-heavy.lock bench/calibrate.sh [--seconds S] [--runtime S] [--warmup S] [--qd N] [--bs KIB]
#          [--rw randrw|randread] [--qos suggested|default] [--disk-iops N] [--out FILE]
# Env: DISK_DIR (/var/tmp), DISK_SIZE (1G), DISK_DEPTH (32: the file backend's queue_depth).
# Needs: fio (nbd engine), python3.
set -Eeuo pipefail
# A step that fails stops the script (set -e): say which (a run once stopped with no word after
# calibrating the null device; that cause was never found).
trap 'echo "calibrate.sh: stopped at line $LINENO, status $?: $BASH_COMMAND" >&2' ERR
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
SECONDS_PER_RUN=3 RUNTIME=40 WARMUP=15 BASELINE=15 QD=32 BS=4 OUT=/dev/null QOS=suggested RW=randrw DISK_IOPS=
while [[ $# -gt 0 ]]; do
  case "$1" in
    --seconds) SECONDS_PER_RUN="$2"; shift 2 ;;
    --runtime) RUNTIME="$2"; shift 2 ;;
    --warmup) WARMUP="$2"; shift 2 ;;
    --qd) QD="$2"; shift 2 ;;
    --bs) BS="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    --qos) QOS="$2"; shift 2 ;;
    --rw) RW="$2"; shift 2 ;;
    --disk-iops) DISK_IOPS="$2"; shift 2 ;;
    *) echo "usage: $0 [--seconds S] [--runtime S] [--warmup S] [--qd N] [--bs KIB] [--rw randrw|randread] [--qos suggested|default] [--disk-iops N] [--out FILE]" >&2; exit 2 ;;
  esac
done
case "$RW" in randrw) MIX="randrw 50/50" ;; randread) MIX=randread ;; *) echo "--rw: randrw or randread, not '$RW'" >&2; exit 2 ;; esac
[[ -z "$DISK_IOPS" || "$DISK_IOPS" =~ ^[1-9][0-9]*$ ]] || { echo "--disk-iops wants a whole number of IOPS, not '$DISK_IOPS'" >&2; exit 2; }
DISK_DIR="${DISK_DIR:-/var/tmp}" DISK_SIZE="${DISK_SIZE:-1G}" DISK_DEPTH="${DISK_DEPTH:-32}"
for t in fio python3; do command -v "$t" >/dev/null || { echo "missing $t" >&2; exit 1; }; done
[ "$(stat -f -c %T "$DISK_DIR")" != tmpfs ] || { echo "$DISK_DIR is tmpfs: O_DIRECT there measures memory" >&2; exit 1; }
. "$ROOT/scripts/env.sh"
WORK="$(mktemp -d "$DISK_DIR/calibrate-bench.XXXXXX")"
PIDS=()
THROTTLE_CG=''
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  [ -z "$THROTTLE_CG" ] || rmdir "$THROTTLE_CG" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
CONTROL="127.0.0.1:$(free_port)" NBD_PORT="$(free_port)"
export IOTARGET_RUNTIME_DIR="$WORK/rt"
mkdir -m 700 "$IOTARGET_RUNTIME_DIR"
cli() { "$ROOT/bin/iotarget" --control "$CONTROL" "$@"; }
TOKEN="$IOTARGET_RUNTIME_DIR/control-${CONTROL/:/-}.token"   # the server's control token, for the HTTP reads below
SERVER_CPU=() CLIENT_CPU=()
if [ "$(nproc)" -ge 2 ]; then SERVER_CPU=(taskset -c 0) CLIENT_CPU=(taskset -c 1); fi
say() { echo "$*" | tee -a "$OUT"; }

(cd "$ROOT" && mvn_run -q package -DskipTests -pl control -am) >&2
echo "filling $WORK/disk.img ($DISK_SIZE) with written blocks..." >&2
dd if=/dev/urandom of="$WORK/disk.img" bs=16M count="$(( $(numfmt --from=iec "$DISK_SIZE") / (16 << 20) ))" oflag=direct status=none
cat > "$WORK/config.json" <<JSON
{ "server": { "control": "$CONTROL", "nbd": "127.0.0.1:$NBD_PORT" },
  "backends": {
    "null": { "type": "null", "size": "1G", "completion_nsec": 1000000, "queue_depth": 10, "mbps": 200, "enable": 1 },
    "disk": { "type": "file", "path": "$WORK/disk.img", "direct": 1, "queue_depth": $DISK_DEPTH, "enable": 1 } },
  "cgroup": { "tenants": { "cgroup.subtree_control": "+io", "a": { "io.weight": "100" }, "b": { "io.weight": "200" } } },
  "nbd": { "exports": { "null": { "backend": "null", "enable": 1 },
                        "null-a": { "backend": "null", "cgroup": "tenants/a", "enable": 1 },
                        "null-b": { "backend": "null", "cgroup": "tenants/b", "enable": 1 },
                        "a": { "backend": "disk", "cgroup": "tenants/a", "enable": 1 },
                        "b": { "backend": "disk", "cgroup": "tenants/b", "enable": 1 } } } }
JSON
# throttle_disk: a cgroup whose reads and writes on DISK_DIR's disk the kernel caps at DISK_IOPS each; its path in THROTTLE_CG.
throttle_disk() {
  local source disk dev
  source="$(findmnt -n -o SOURCE --target "$DISK_DIR")"
  [ -b "$source" ] || { echo "--disk-iops: $DISK_DIR is on $source, not a block device" >&2; exit 1; }
  disk="$(lsblk -n -o PKNAME "$source" | head -1)"
  dev="$(cat "/sys/class/block/${disk:-$(basename "$source")}/dev")"   # blk-throttle limits whole disks
  if [ -d /sys/fs/cgroup/blkio ]; then
    THROTTLE_CG="/sys/fs/cgroup/blkio/iotarget-calibrate.$$"
    mkdir "$THROTTLE_CG"
    echo "$dev $DISK_IOPS" > "$THROTTLE_CG/blkio.throttle.read_iops_device"
    echo "$dev $DISK_IOPS" > "$THROTTLE_CG/blkio.throttle.write_iops_device"
  else
    grep -qw io /sys/fs/cgroup/cgroup.subtree_control || echo +io > /sys/fs/cgroup/cgroup.subtree_control
    THROTTLE_CG="/sys/fs/cgroup/iotarget-calibrate.$$"
    mkdir "$THROTTLE_CG"
    echo "$dev riops=$DISK_IOPS wiops=$DISK_IOPS" > "$THROTTLE_CG/io.max"
  fi
  echo "the server's IO on $dev (${disk:-$(basename "$source")}) capped at $DISK_IOPS reads and $DISK_IOPS writes a second ($THROTTLE_CG)" >&2
}
IN_THROTTLE=()
if [ -n "$DISK_IOPS" ]; then
  throttle_disk
  IN_THROTTLE=(sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$THROTTLE_CG")
fi
"${SERVER_CPU[@]}" "${IN_THROTTLE[@]}" "$ROOT/bin/iotarget" serve --config "$WORK/config.json" > "$WORK/server.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 200); do cli devices >/dev/null 2>&1 && break; sleep 0.1; done

say "## $(date -u +%FT%TZ) $(git -C "$ROOT" rev-parse --short HEAD), load $(cut -d' ' -f1-3 /proc/loadavg)"
say ""
say "### null backend (completion_nsec=1000000 queue_depth=10 mbps=200): fio through NBD, QD10, 10 s"
for rw in randread:4k read:1M; do
  "${CLIENT_CPU[@]}" fio --name=n --ioengine=nbd --uri="nbd://127.0.0.1:$NBD_PORT/null" --rw="${rw%%:*}" --bs="${rw##*:}" --iodepth=10 \
      --time_based --runtime=10 --ramp_time=2 --output-format=json --output="$WORK/fio.json" > /dev/null
  python3 - "$WORK/fio.json" "$rw" <<'PY' | tee -a "$OUT"
import json, sys
j = json.load(open(sys.argv[1]))["jobs"][0]["read"]
print(f"- fio {sys.argv[2]}: {j['iops']:.0f} IOPS, {j['bw_bytes'] / 1e6:.1f} MB/s ({j['bw_bytes'] / 2**20:.1f} MiB/s)")
PY
done
tenants() {   # tenants SECONDS [PREFIX]: a and b on the disk (or exports PREFIXa, PREFIXb), BS KiB RW at QD each, at once; fio JSON in $WORK/fio-{a,b}.json, pids in TENANT_PIDS
  TENANT_PIDS=()
  for t in a b; do
    "${CLIENT_CPU[@]}" fio --name="$t" --ioengine=nbd --uri="nbd://127.0.0.1:$NBD_PORT/${2:-}$t" --rw="$RW" --bs="${BS}k" --iodepth="$QD" \
        --time_based --runtime="$1" --output-format=json --output="$WORK/fio-$t.json" > /dev/null 2>&1 &
    TENANT_PIDS+=($!)
  done
  PIDS+=("${TENANT_PIDS[@]}")
}
# sample DEV: every 0.5 s until the tenants (TENANT_PIDS) exit, "SECONDS VRATE A_IOS B_IOS" into
# $WORK/samples.txt: cost.vrate on DEV ("-" while iocost is off) and the tenants' io.stat IOs. Over
# HTTP: a CLI call starts a JVM, seconds under load.
sample() {
  python3 - "$CONTROL" "$TOKEN" "$1" "${TENANT_PIDS[@]}" > "$WORK/samples.txt" <<'PY' &
import os, re, sys, time, urllib.request
control, token, dev, pids = sys.argv[1], open(sys.argv[2]).read().strip(), sys.argv[3], sys.argv[4:]
def read(path):
    req = urllib.request.Request(f"http://{control}/v1/read?path={path}", headers={"Authorization": "Bearer " + token})
    line = next((l for l in urllib.request.urlopen(req, timeout=10).read().decode().splitlines() if l.startswith(dev + " ")), "")
    return dict(re.findall(r"([\w.]+)=([\d.]+)", line))
def ios(stat): return int(stat.get("rios", 0)) + int(stat.get("wios", 0))
def alive(pid):
    try: os.kill(int(pid), 0); return True
    except ProcessLookupError: return False
t0 = time.time()
while any(alive(p) for p in pids):
    time.sleep(0.5)
    root, a, b = read("io.stat"), read("tenants/a/io.stat"), read("tenants/b/io.stat")
    print(f"{time.time() - t0:.2f} {root.get('cost.vrate', '-')} {ios(a)} {ios(b)}", flush=True)
PY
  local sampler=$!; PIDS+=("$sampler")
  wait "${TENANT_PIDS[@]}" || true
  wait "$sampler" || true
}
# periods DEV: iocost's period counters on DEV from /metrics, "name value" a line (iotarget_cost_*_periods_total).
periods() {
  python3 - "$CONTROL" "$TOKEN" "$1" <<'PY'
import re, sys, urllib.request
control, token, dev = sys.argv[1], open(sys.argv[2]).read().strip(), sys.argv[3]
req = urllib.request.Request(f"http://{control}/metrics", headers={"Authorization": "Bearer " + token})
for l in urllib.request.urlopen(req, timeout=10).read().decode().splitlines():
    m = re.match(r'iotarget_cost_(\w*periods)_total\{device="' + re.escape(dev) + r'"\} (\S+)', l)
    if m: print(m.group(1), int(float(m.group(2))))
PY
}
weighted() {   # weighted LINES PREFIX WHAT: write calibrate's LINES (per --qos), run the tenants on exports PREFIXa/b for RUNTIME s, sample vrate
  local lines="$1" prefix="$2" what="$3" dev
  dev="$(echo "$lines" | head -1 | cut -d' ' -f1)"
  cli write io.cost.model "$(echo "$lines" | sed -n 1p)"
  if [ "$QOS" = suggested ]; then cli write io.cost.qos "$(echo "$lines" | sed -n 2p)"; else cli write io.cost.qos "$dev enable=1 ctrl=auto"; fi
  say ""
  say "### two tenants on the calibrated $what: a (io.weight 100), b (200), $BS KiB $MIX QD$QD each, ${RUNTIME} s"
  say "(io.cost.qos: $(cli read io.cost.qos | grep "^$dev "))"
  periods "$dev" > "$WORK/periods-before.txt"
  tenants "$RUNTIME" "$prefix"
  sample "$dev"
  periods "$dev" > "$WORK/periods-after.txt"
  python3 - "$WORK/samples.txt" "$WORK/fio-a.json" "$WORK/fio-b.json" "$WORK/periods-before.txt" "$WORK/periods-after.txt" <<'PY' | tee -a "$OUT"
import json, statistics, sys
rows = [[float(x) for x in l.split()] for l in open(sys.argv[1]) if len(l.split()) == 4]
v = [r[1] for r in rows if r[0] >= 5]          # after 5 s for the QoS loop to settle
inside = sum(90 <= x <= 110 for x in v)
print(f"- vrate from 5 s to {rows[-1][0]:.1f} s: min {min(v):.2f}%, median {statistics.median(v):.2f}%, max {max(v):.2f}%; "
      f"{inside}/{len(v)} samples within 90-110%")
print("- vrate (s: %), every 2nd sample: " + " ".join(f"{r[0]:.1f}:{r[1]:.2f}" for r in rows[::2]))
ratios = []
for p, q in zip(rows, rows[1:]):
    da, db = q[2] - p[2], q[3] - p[3]
    if q[0] >= 5 and da > 0: ratios.append(db / da)
if ratios: print(f"- io.stat b:a per half-second interval after 5 s: median {statistics.median(ratios):.2f}, "
                 f"quartiles {statistics.quantiles(ratios, n=4)[0]:.2f}-{statistics.quantiles(ratios, n=4)[2]:.2f}")
iops = {}
for f in sys.argv[2:4]:
    j = json.load(open(f))["jobs"][0]
    iops[j["jobname"]] = j["read"]["iops"] + j["write"]["iops"]
print(f"- tenants (fio, whole run): a {iops['a']:.0f} IOPS, b {iops['b']:.0f} IOPS, total {iops['a'] + iops['b']:.0f}, b:a {iops['b'] / iops['a']:.2f} (weights 2:1)")
before, after = ({k: int(v) for k, v in (l.split() for l in open(f))} for f in sys.argv[4:6])
d = {k: after[k] - before.get(k, 0) for k in after}
if d.get("periods"):
    print(f"- why vrate moved (iotarget_cost_*_periods_total over the run): {d['periods']} periods; busy by rq_wait {d['rq_wait_busy_periods']}, "
          f"by read latency {d['read_latency_busy_periods']}, by write latency {d['write_latency_busy_periods']}; lagging {d['lagging_periods']}; "
          f"vrate lowered after {d['vrate_lowered_periods']}, raised after {d['vrate_raised_periods']}")
PY
}
echo "warm-up: the two tenants on the disk for $WARMUP s, iocost off" >&2
tenants "$WARMUP"
wait "${TENANT_PIDS[@]}"
sleep 11   # the fio load above was tenant IO: calibrate refuses a device used in the last 10 s
say ""
say "### calibrate null --seconds $SECONDS_PER_RUN"
NULL_LINES="$(cli calibrate null --seconds "$SECONDS_PER_RUN" 2>>"$WORK/progress.txt")"
say '```'; say "$NULL_LINES"; say '```'
python3 - "$NULL_LINES" <<'PY' | tee -a "$OUT"
import re, sys
m = dict(re.findall(r"(\w+)=(\d+)", sys.argv[1].splitlines()[0]))
for key, want in (("rrandiops", 10000), ("rseqiops", 10000), ("wrandiops", 10000), ("wseqiops", 10000), ("rbps", 200 << 20), ("wbps", 200 << 20)):
    got = int(m[key]); print(f"- {key}: {got} = {100 * got / want:.1f}% of the model's {want}" + ("" if abs(got / want - 1) <= 0.10 else "  (OUTSIDE 10%)"))
PY
weighted "$NULL_LINES" null- "null device (10,000 IOPS)"
say ""
say "### calibrate disk --seconds $SECONDS_PER_RUN (file backend, O_DIRECT, queue_depth $DISK_DEPTH, on $(df --output=source "$DISK_DIR" | tail -1) $(stat -f -c %T "$DISK_DIR")${DISK_IOPS:+, the server held to $DISK_IOPS reads and $DISK_IOPS writes a second by blk-throttle})"
DISK_LINES="$(cli calibrate disk --seconds "$SECONDS_PER_RUN" 2>>"$WORK/progress.txt")"
say '```'; say "$DISK_LINES"; say '```'
cat "$WORK/progress.txt" >&2

# What the tenants' path gets from the disk with iocost off: the rate iocost should find. The
# model's rate for the same mix (half random reads of BS KiB, half writes; or reads only) at vrate
# 100% is 1 / (0.5 tr + 0.5 tw) (or 1 / tr), t being the linear model's time for one such IO (for
# 4 KiB, 1 / randiops); their ratio is the vrate that matches.
say ""
say "### the two tenants on the disk with iocost off, ${BASELINE} s (the same fio jobs as below)"
tenants "$BASELINE"
sample "$(echo "$DISK_LINES" | head -1 | cut -d' ' -f1)"
python3 - "$DISK_LINES" "$BS" "$RW" "$WORK/samples.txt" "$WORK/fio-a.json" "$WORK/fio-b.json" <<'PY' | tee -a "$OUT"
import json, re, statistics, sys
m = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", sys.argv[1].splitlines()[0])}
size = int(sys.argv[2]) << 10
def seconds(d):   # the linear model's time for one random IO of SIZE: its base (1/randiops less a page) plus its pages
    page = 4096 / m[d + "bps"]
    return max(1 / m[d + "randiops"] - page, 0) + -(-size // 4096) * page
mix = 1 / seconds("r") if sys.argv[3] == "randread" else 1 / (0.5 * seconds("r") + 0.5 * seconds("w"))
iops = {}
for f in sys.argv[5:]:
    j = json.load(open(f))["jobs"][0]
    iops[j["jobname"]] = j["read"]["iops"] + j["write"]["iops"]
total = iops["a"] + iops["b"]
print(f"- a {iops['a']:.0f} IOPS, b {iops['b']:.0f} IOPS, total {total:.0f}; the model's rate for this mix at vrate 100%: {mix:.0f} IOPS; "
      f"so the vrate that matches the disk as the tenants see it: {100 * total / mix:.0f}%")
# The same per half second (io.stat): how much the disk itself moves, so how often even a vrate
# that followed it exactly would be within 90-110%.
rows = [(float(f[0]), int(f[2]) + int(f[3])) for f in (l.split() for l in open(sys.argv[4])) if len(f) == 4]
match = [100 * (q[1] - p[1]) / (q[0] - p[0]) / mix for p, q in zip(rows, rows[1:]) if q[0] >= 1]
if match:
    print(f"- that vrate per half second after 1 s: min {min(match):.0f}%, median {statistics.median(match):.0f}%, max {max(match):.0f}%; "
          f"{sum(90 <= x <= 110 for x in match)}/{len(match)} within 90-110%")
PY
weighted "$DISK_LINES" "" disk
