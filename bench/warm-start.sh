#!/usr/bin/env bash
# warm-start.sh - how a fresh server paces io.max in its first second, and how long it takes to
# start: servers given as KIND:WARM_UP_MS, KIND "checkout" (the checkout's jar, java -jar, as
# bin/iotarget serve runs it) or "image" (the installed image: its runtime and AOT cache,
# scripts/package), WARM_UP_MS its server.warm_up_ms (0: no warm-up); same machine, same run,
# alternating.
#
# Each run starts a new server (pinned to SERVER_CPU) serving one memory backend through an
# export whose group has io.max riops=20000 wiops=20000, waits until its NBD port accepts
# (start-up time, from exec: the warm-up included), and at once runs fio's nbd engine at QD32
# for 10 s (pinned to FIO_CPU), 4k randread or randwrite, with --write_iops_log at 100 ms. fio's
# log counts from its job's start, after the nbd engine has connected, so "first second" is the
# IOs of fio's first ten 100 ms windows. Per run: start-up seconds, the first second's IOs and
# the 10 s average relative to the limit, and (on stderr) the first second's ten windows. Cells
# are medians of REPEATS runs, min-max in brackets.
#
# BACKEND=null serves a null backend instead (writes vanish, reads are zeroes): the same path
# without a fresh memory volume's first writes, each of which allocates a 64 KiB chunk whose
# pages the kernel faults in and zeroes (see the results).
#
# Usage: flock /tmp/iotarget-heavy.lock bench/warm-start.sh [--repeats N] [--servers "image:0 image:1000"]
# Env: SERVER_CPU (0), FIO_CPU (1), RWS ("randread randwrite"), BACKEND (memory). Needs: fio (nbd engine), taskset, python3; builds the image
# with scripts/package when target/package/iotarget is missing or holds another build's jar.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
REPEATS=3
SERVERS="image:0 image:1000"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --repeats) REPEATS="$2"; shift 2 ;;
    --servers) SERVERS="$2"; shift 2 ;;
    *) echo "usage: $0 [--repeats N] [--servers \"KIND:WARM_UP_MS ...\"]" >&2; exit 2 ;;
  esac
done
SERVER_CPU="${SERVER_CPU:-0}" FIO_CPU="${FIO_CPU:-1}"
. "$ROOT/scripts/env.sh"
build_jar
IMAGE="$ROOT/target/package/iotarget"
cmp -s "$IMAGE/lib/iotarget.jar" "$IOTARGET_JAR" || "$ROOT/scripts/package" >&2     # missing, or of another build
WORK="$(mktemp -d /tmp/warm-start.XXXXXX)"
chmod 700 "$WORK"
SERVER=""
cleanup() { [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT
PORT=10951

run_one() { # KIND:WARM_UP_MS rw -> "startup first ten"
  local mode="${1%%:*}" warm="${1#*:}" rw="$2" t0 t1
  cat > "$WORK/config.json" <<JSON
{"server": {"control": "127.0.0.1:9851", "nbd": "127.0.0.1:$PORT", "warm_up_ms": $warm},
 "backends": {"disk": {"type": "${BACKEND:-memory}", "size": "1G", "enable": 1}},
 "cgroup": {"cgroup.subtree_control": "+io", "t": {"io.max": "disk riops=20000 wiops=20000"}},
 "nbd": {"exports": {"t": {"backend": "disk", "cgroup": "t", "enable": 1}}}}
JSON
  t0=$(date +%s.%N)
  case "$mode" in
    checkout) IOTARGET_RUNTIME_DIR="$WORK" taskset -c "$SERVER_CPU" java --enable-native-access=ALL-UNNAMED \
                -XX:MaxDirectMemorySize=64g -jar "$IOTARGET_JAR" serve --config "$WORK/config.json" > "$WORK/server.log" 2>&1 & ;;
    image) IOTARGET_RUNTIME_DIR="$WORK" taskset -c "$SERVER_CPU" "$IMAGE/bin/iotarget" serve --config "$WORK/config.json" \
             > "$WORK/server.log" 2>&1 & ;;
    *) echo "unknown server kind $mode (checkout or image)" >&2; exit 2 ;;
  esac
  SERVER=$!
  until (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; do
    kill -0 "$SERVER" 2>/dev/null || { cat "$WORK/server.log" >&2; exit 1; }
    sleep 0.01
  done
  t1=$(date +%s.%N)
  rm -f "$WORK"/log_iops*.log
  taskset -c "$FIO_CPU" fio --name=w --ioengine=nbd --uri="nbd://127.0.0.1:$PORT/t" --rw="$rw" --bs=4k --iodepth=32 \
    --size=256M --time_based --runtime=10 --write_iops_log="$WORK/log" --log_avg_msec=100 > "$WORK/fio.log" 2>&1 ||
    { cat "$WORK/fio.log" >&2; exit 1; }
  kill "$SERVER"; wait "$SERVER" 2>/dev/null || true; SERVER=""
  python3 - "$WORK"/log_iops*.log "$t0" "$t1" <<'PY'
import sys
windows = [int(l.split(",")[1]) for l in open(sys.argv[1]) if l.strip()]   # IOPS per 100 ms
limit = 20000
first = sum(windows[:10]) / 10 / limit
ten = sum(windows[:100]) / len(windows[:100]) / limit
print(f"{float(sys.argv[3]) - float(sys.argv[2]):.2f} {first:.4f} {ten:.4f}")
print("first second, IOPS per 100 ms:", " ".join(str(w) for w in windows[:10]), file=sys.stderr)
PY
}

RESULTS="$WORK/results.txt"; : > "$RESULTS"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for r in $(seq "$REPEATS"); do
  for rw in ${RWS:-randread randwrite}; do
    for mode in $SERVERS; do
      line="$(run_one "$mode" "$rw")"
      echo "$mode $rw $line" >> "$RESULTS"
      echo "run $r: $mode $rw: start-up s, first second, 10 s: $line" >&2
    done
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
python3 - "$RESULTS" <<'PY'
import sys, statistics
rows = [l.split() for l in open(sys.argv[1])]
print("| server:warm_up_ms | fio | start-up s | first second / limit | 10 s / limit |")
print("|---|---|---:|---:|---:|")
for mode in dict.fromkeys(r[0] for r in rows):
    for rw in dict.fromkeys(r[1] for r in rows):
        cells = [r[2:] for r in rows if r[0] == mode and r[1] == rw]
        out = []
        for i in range(3):
            v = sorted(float(c[i]) for c in cells)
            fmt = "{:.2f}" if i == 0 else "{:.4f}"
            out.append(f"{fmt.format(statistics.median(v))} [{fmt.format(v[0])}-{fmt.format(v[-1])}]")
        print(f"| {mode} | {rw} | " + " | ".join(out) + " |")
PY
