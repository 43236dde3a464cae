#!/usr/bin/env bash
# calibrate.sh - what `iotarget calibrate` finds, and whether the model it finds holds.
#
# 1. A null backend of known capacity (completion_nsec=1000000 queue_depth=10 mbps=200:
#    10,000 IOPS, 200 MiB/s): fio through NBD at QD10 (the device alone), then calibrate; both
#    against the model.
# 2. The machine's disk: a file backend with O_DIRECT on DISK_DIR (not tmpfs), filled with
#    written data (holes would read without touching the disk), calibrated with --apply. Then
#    two tenants with io.weight 100 and 200 saturate it with fio through NBD (4 KiB randrw
#    50/50, QD32 each) for RUNTIME s; io.stat's cost.vrate on the disk is read every second.
#    A model that matches the disk keeps vrate near 100%; the tenants' IOPS ratio shows the
#    weights.
#
# --qos default keeps the calibrated io.cost.model but writes io.cost.qos "enable=1 ctrl=auto"
# (no latency targets), to tell the model's effect from the suggested targets'.
#
# Usage: flock /tmp/iotarget-heavy.lock bench/calibrate.sh [--seconds S] [--runtime S] [--qos suggested|default] [--out FILE]
# Env: DISK_DIR (/var/tmp), DISK_SIZE (1G).
# Needs: fio (nbd engine), python3.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
SECONDS_PER_RUN=3 RUNTIME=40 OUT=/dev/null QOS=suggested
while [[ $# -gt 0 ]]; do
  case "$1" in
    --seconds) SECONDS_PER_RUN="$2"; shift 2 ;;
    --runtime) RUNTIME="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    --qos) QOS="$2"; shift 2 ;;
    *) echo "usage: $0 [--seconds S] [--runtime S] [--qos suggested|default] [--out FILE]" >&2; exit 2 ;;
  esac
done
DISK_DIR="${DISK_DIR:-/var/tmp}" DISK_SIZE="${DISK_SIZE:-1G}"
for t in fio python3; do command -v "$t" >/dev/null || { echo "missing $t" >&2; exit 1; }; done
[ "$(stat -f -c %T "$DISK_DIR")" != tmpfs ] || { echo "$DISK_DIR is tmpfs: O_DIRECT there measures memory" >&2; exit 1; }
. "$ROOT/scripts/env.sh"
WORK="$(mktemp -d "$DISK_DIR/calibrate-bench.XXXXXX")"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; rm -rf "$WORK"; }
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
CONTROL="127.0.0.1:$(free_port)" NBD_PORT="$(free_port)"
cli() { "$ROOT/bin/iotarget" --control "$CONTROL" "$@"; }
say() { echo "$*" | tee -a "$OUT"; }

(cd "$ROOT" && mvn_run -q package -DskipTests -pl control -am) >&2
echo "filling $WORK/disk.img ($DISK_SIZE) with written blocks..." >&2
dd if=/dev/urandom of="$WORK/disk.img" bs=16M count="$(( $(numfmt --from=iec "$DISK_SIZE") / (16 << 20) ))" oflag=direct status=none
cat > "$WORK/config.json" <<JSON
{ "server": { "control": "$CONTROL", "nbd": "127.0.0.1:$NBD_PORT" },
  "backends": {
    "null": { "type": "null", "size": "1G", "completion_nsec": 1000000, "queue_depth": 10, "mbps": 200, "enable": 1 },
    "disk": { "type": "file", "path": "$WORK/disk.img", "direct": 1, "queue_depth": 32, "enable": 1 } },
  "cgroup": { "tenants": { "cgroup.subtree_control": "+io", "a": { "io.weight": "100" }, "b": { "io.weight": "200" } } },
  "nbd": { "exports": { "null": { "backend": "null", "enable": 1 },
                        "a": { "backend": "disk", "cgroup": "tenants/a", "enable": 1 },
                        "b": { "backend": "disk", "cgroup": "tenants/b", "enable": 1 } } } }
JSON
"$ROOT/bin/iotarget" serve --config "$WORK/config.json" > "$WORK/server.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 200); do cli devices >/dev/null 2>&1 && break; sleep 0.1; done

say "## $(date -u +%FT%TZ) $(git -C "$ROOT" rev-parse --short HEAD), load $(cut -d' ' -f1-3 /proc/loadavg)"
say ""
say "### null backend (completion_nsec=1000000 queue_depth=10 mbps=200): fio through NBD, QD10, 10 s"
for rw in randread:4k read:1M; do
  fio --name=n --ioengine=nbd --uri="nbd://127.0.0.1:$NBD_PORT/null" --rw="${rw%%:*}" --bs="${rw##*:}" --iodepth=10 \
      --time_based --runtime=10 --ramp_time=2 --output-format=json --output="$WORK/fio.json" > /dev/null
  python3 - "$WORK/fio.json" "$rw" <<'PY' | tee -a "$OUT"
import json, sys
j = json.load(open(sys.argv[1]))["jobs"][0]["read"]
print(f"- fio {sys.argv[2]}: {j['iops']:.0f} IOPS, {j['bw_bytes'] / 1e6:.1f} MB/s ({j['bw_bytes'] / 2**20:.1f} MiB/s)")
PY
done
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
say ""
say "### calibrate disk --seconds $SECONDS_PER_RUN --apply (file backend, O_DIRECT, queue_depth 32, on $(df --output=source "$DISK_DIR" | tail -1) $(stat -f -c %T "$DISK_DIR"))"
DISK_LINES="$(cli calibrate disk --seconds "$SECONDS_PER_RUN" --apply 2>>"$WORK/progress.txt")"
say '```'; say "$DISK_LINES"; say '```'
cat "$WORK/progress.txt" >&2

say ""
say "### two tenants on the calibrated disk: a (io.weight 100), b (200), 4 KiB randrw 50/50 QD32 each, ${RUNTIME} s"
DEV="$(echo "$DISK_LINES" | head -1 | cut -d' ' -f1)"
[ "$QOS" = suggested ] || { cli write io.cost.qos "$DEV enable=1 ctrl=auto"; say "(io.cost.qos: $(cli read io.cost.qos | grep "^$DEV "))"; }
for t in a b; do
  fio --name="$t" --ioengine=nbd --uri="nbd://127.0.0.1:$NBD_PORT/$t" --rw=randrw --bs=4k --iodepth=32 \
      --time_based --runtime="$RUNTIME" --output-format=json --output="$WORK/fio-$t.json" > /dev/null 2>&1 &
  PIDS+=($!)
done
T0=$(date +%s.%N)
while kill -0 "${PIDS[-1]}" 2>/dev/null || kill -0 "${PIDS[-2]}" 2>/dev/null; do   # sample while the tenants run, however long a CLI call takes
  sleep 1
  v="$(cli read io.stat | grep "^$DEV " | grep -o 'cost.vrate=[0-9.]*' | cut -d= -f2)"
  echo "$(python3 -c "import time; print(round(time.time() - $T0, 1))") $v" >> "$WORK/vrate.txt"
done
wait "${PIDS[-1]}" "${PIDS[-2]}" || true
python3 - "$WORK/vrate.txt" "$WORK/fio-a.json" "$WORK/fio-b.json" <<'PY' | tee -a "$OUT"
import json, statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if len(l.split()) == 2]
v = [float(r[1]) for r in rows if float(r[0]) >= 5]          # after 5 s for the QoS loop to settle
inside = sum(90 <= x <= 110 for x in v)
print(f"- vrate from 5 s to {rows[-1][0]} s: min {min(v):.2f}%, median {statistics.median(v):.2f}%, max {max(v):.2f}%; "
      f"{inside}/{len(v)} samples within 90-110%")
print("- vrate (s: %): " + " ".join(f"{r[0]}:{r[1]}" for r in rows))
iops = {}
for f in sys.argv[2:]:
    j = json.load(open(f))["jobs"][0]
    iops[j["jobname"]] = j["read"]["iops"] + j["write"]["iops"]
print(f"- tenants: a {iops['a']:.0f} IOPS, b {iops['b']:.0f} IOPS, b:a {iops['b'] / iops['a']:.2f} (weights 2:1)")
PY
