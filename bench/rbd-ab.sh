#!/usr/bin/env bash
# rbd-ab.sh - iotarget builds against each other and qemu-storage-daemon on one RBD cluster, in one
# run: each VARIANT is an iotarget jar (its own image and NBD port, optionally with extra [client]
# options in a copy of ceph.conf and a loop poll time), plus qsd as in bench/rbd.sh; every server
# on core 0, fio on core 1, each written in full and warmed, then REPEATS alternating runs (order
# reversed every other repeat) of each workload. Prints one line per run:
#   rep workload system IOPS p50_µs mean_µs p99_µs server_CPU_µs_per_request
# and at the end, per workload and system, the medians and the median of the same-repeat ratios of p50 to qsd's.
# With "perf" last, perf stat --per-thread (task-clock, context switches) of each server's last run
# is left in /tmp/rbd-ab-perf-SYSTEM-RW-QD.txt. Run it under the heavy-job lock:
#   flock /tmp/iotarget-heavy.lock bench/rbd-ab.sh 6 5 "old=/tmp/old.jar new=control/target/iotarget.jar" "randread:1 randread:32" perf
# Usage: bench/rbd-ab.sh REPEATS SECONDS "NAME=JAR[:POLL_US[:OPTION=VALUE,...]] ..." "RW:QD ..." [perf]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REPEATS="$1" RUNTIME="$2" VARIANTS="$3" WL="$4" PERF="${5:-}"
. "$ROOT/scripts/env.sh"
WORK="$(mktemp -d /tmp/rbd-ab.XXXXXX)"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; "$ROOT/scripts/ceph-dev" stop "$WORK/ceph" >/dev/null 2>&1 || true; rm -rf "$WORK"; }
trap cleanup EXIT
CONF="$("$ROOT/scripts/ceph-dev" start "$WORK/ceph")"; export CEPH_CONF="$CONF"
wait_port() { for _ in $(seq 300); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; return 1; }
declare -A PID TARGET
port=10970; SYSTEMS=""
for v in $VARIANTS; do
  name="${v%%=*}"; spec="${v#*=}"; IFS=: read -r jar poll extra <<<"$spec"; poll="${poll:-0}"; vconf="$CONF"
  if [[ -n "$extra" ]]; then vconf="$WORK/$name.conf"; awk -v x="${extra//,/ }" '{print} /^\[client\]/{n=split(x,a," "); for(i=1;i<=n;i++){sub("=", " = ", a[i]); print a[i]}}' "$CONF" > "$vconf"; fi
  rbd create --image-feature layering --size 256M "rbd/$name"
  port=$((port + 1))
  cat > "$WORK/$name.json" <<JSON
{ "server": { "control": "127.0.0.1:0", "nbd": "127.0.0.1:$port", "poll_us": $poll },
  "backends": { "rbd": { "type": "rbd", "pool": "rbd", "image": "$name", "conf": "$vconf", "enable": 1 } },
  "nbd": { "exports": { "rbd": { "backend": "rbd", "enable": 1 } } } }
JSON
  taskset -c 0 java --enable-native-access=ALL-UNNAMED -XX:MaxDirectMemorySize=64g ${JOPTS:-} -jar "$jar" serve --config "$WORK/$name.json" > "$WORK/$name.log" 2>&1 &
  PIDS+=($!); PID[$name]=$!; wait_port $port || { cat "$WORK/$name.log"; exit 1; }
  TARGET[$name]="--ioengine=nbd --uri=nbd://127.0.0.1:$port/rbd"; SYSTEMS="$SYSTEMS $name"
done
rbd create --image-feature layering --size 256M rbd/qsd
taskset -c 0 qemu-storage-daemon --blockdev "driver=rbd,pool=rbd,image=qsd,conf=$CONF,user=admin,node-name=disk,cache.direct=on" \
  --nbd-server addr.type=inet,addr.host=127.0.0.1,addr.port=10969 --export type=nbd,id=e0,node-name=disk,name=default,writable=on > "$WORK/qsd.log" 2>&1 &
PIDS+=($!); PID[qsd]=$!; wait_port 10969; TARGET[qsd]="--ioengine=nbd --uri=nbd://127.0.0.1:10969/default"; SYSTEMS="$SYSTEMS qsd"
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
run_one() { # sys rw qd secs
  local t0 t1; t0="$(cpu_ticks "${PID[$1]}")"
  local pf=()
  [[ -n "$PERF" ]] && pf=(perf stat --per-thread -e task-clock,context-switches -p "${PID[$1]}" -o "$WORK/perf-$1-$2-$3.txt" --)
  taskset -c 1 "${pf[@]}" fio --output-format=json --name=b ${TARGET[$1]} --rw="$2" --bs=4k --iodepth="$3" --size=256M --time_based --runtime="$4" > "$WORK/fio.json" 2>&1 || { cat "$WORK/fio.json"; return 1; }
  t1="$(cpu_ticks "${PID[$1]}")"
  python3 - "$WORK/fio.json" "$2" "$((t1 - t0))" <<'PY'
import json, sys
t = open(sys.argv[1]).read(); j = json.loads(t[t.index("{"):])["jobs"][0]
d = j["write" if "write" in sys.argv[2] else "read"]; p = d["clat_ns"]["percentile"]
print(f'{d["iops"]:.0f} {p["50.000000"]/1000:.0f} {d["clat_ns"]["mean"]/1000:.0f} {p["99.000000"]/1000:.0f} {int(sys.argv[3])*10000/max(d["total_ios"],1):.1f}')
PY
}
for s in $SYSTEMS; do
  taskset -c 1 fio --name=fill ${TARGET[$s]} --rw=write --bs=1M --iodepth=8 --size=256M > /dev/null
  for w in $WL; do run_one "$s" "${w%%:*}" "${w#*:}" 3 > /dev/null; done
done
echo "# rep workload system iops p50 mean p99 cpu_us_per_req ; load $(cut -d' ' -f1-3 /proc/loadavg)"
for rep in $(seq "$REPEATS"); do
  for w in $WL; do
    order="$SYSTEMS"; (( rep % 2 == 0 )) && order="$(echo $SYSTEMS | tr ' ' '\n' | tac | tr '\n' ' ')"
    for s in $order; do echo "$rep $w $s $(run_one "$s" "${w%%:*}" "${w#*:}" "$RUNTIME")" | tee -a "$WORK/lines"; done
  done
done
echo "# load at end $(cut -d' ' -f1-3 /proc/loadavg)"
[[ -n "$PERF" ]] && for f in "$WORK"/perf-*.txt; do cp "$f" "/tmp/rbd-ab-${f##*/perf-}"; done || true
python3 - "$WORK/lines" <<'PY'
import collections, statistics, sys
rows = collections.defaultdict(list); byrep = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    rep, w, s, *v = line.split(); v = list(map(float, v)); rows[(w, s)].append(v); byrep[(w, rep)][s] = v
for (w, s), vs in sorted(rows.items()):
    med = [statistics.median(x[i] for x in vs) for i in range(5)]
    r = [byrep[k][s][1] / byrep[k]["qsd"][1] for k in byrep if k[0] == w and s in byrep[k] and byrep[k]["qsd"][1] > 0]
    print(f"# {w:12} {s:10} IOPS {med[0]:6.0f} p50 {med[1]:5.0f} mean {med[2]:5.0f} p99 {med[3]:6.0f} CPU/req {med[4]:6.1f}"
          f"  p50/qsd {statistics.median(r):.3f} ({min(r):.2f}-{max(r):.2f})")
PY
