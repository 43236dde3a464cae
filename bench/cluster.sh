#!/usr/bin/env bash
# Issue 13 for longer than ClusterTest does: one etcd member and three `bin/iotarget serve` nodes on
# loopback hold one tenant's riops=9000 (io.max.global); fio (nbd engine, 4 KiB random reads,
# QD16) runs SECONDS per scenario: all three loaded, node 1 alone, and p50 latency at a share of
# 3000 against a node alone with io.max riops=3000. Prints one line per scenario.
#   flock /tmp/iotarget-heavy.lock bench/cluster.sh [SECONDS]      (default 20)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
secs="${1:-20}"
work="$(mktemp -d /tmp/iotarget-cluster-bench.XXXXXX)"
pids=()
cleanup() {
  for p in "${pids[@]}" $(cat "$work/pids" 2>/dev/null); do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# One etcd member is enough for the shares (ClusterTest runs three); --unsafe-no-fsync is not
# used: the bench measures the store as it is deployed.
eport="$(free_port)"; pport="$(free_port)"
etcd --name bench --data-dir "$work/etcd" --listen-client-urls "http://127.0.0.1:$eport" \
     --advertise-client-urls "http://127.0.0.1:$eport" --listen-peer-urls "http://127.0.0.1:$pport" \
     --initial-advertise-peer-urls "http://127.0.0.1:$pport" --initial-cluster "bench=http://127.0.0.1:$pport" \
     > "$work/etcd.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do
  curl -sf "http://127.0.0.1:$eport/health" | grep -q '"health":"true"' && break
  sleep 0.1
done
"$here/bin/iotarget" help > /dev/null          # build once, before the nodes start

# serve NAME LIMITS [CLUSTER]: starts a node, echoes its NBD port.
serve() {
  local name="$1" limits="$2" cluster="${3:-}"
  cat > "$work/$name.json" <<JSON
{ "server": { "control": "127.0.0.1:0", "nbd": "127.0.0.1:0" }, $cluster
  "backends": { "disk": { "type": "null", "size": "64M", "enable": 1 } },
  "cgroup": { "tenants": { "cgroup.subtree_control": "+io", "a": { $limits } } },
  "nbd": { "exports": { "a": { "backend": "disk", "cgroup": "tenants/a", "enable": 1 } } } }
JSON
  IOTARGET_RUNTIME_DIR="$work" "$here/bin/iotarget" serve --config "$work/$name.json" > "$work/$name.out" 2>&1 &
  echo $! >> "$work/pids"          # serve runs in $(...): the trap reads the file
  for _ in $(seq 300); do
    port="$(grep -oP 'NBD on 127\.0\.0\.1:\K[0-9]+' "$work/$name.out" || true)"
    [ -n "$port" ] && { echo "$port"; return; }
    sleep 0.1
  done
  cat "$work/$name.out" >&2; exit 1
}

# fio_json PORT NAME SECONDS: 4 KiB random reads at QD16, 2 s ramp, JSON to $work/NAME.json.
fio_run() {
  fio --name="$2" --thread --ioengine=nbd --uri="nbd://127.0.0.1:$1/a" --rw=randread --bs=4k --iodepth=16 --size=64M \
      --time_based --ramp_time=2s --runtime="$3" --output-format=json --output="$work/$2.json" > /dev/null
}
# fio may put a notice line before the JSON.
read_json() { python3 -c 'import json,sys; t=open(sys.argv[1]).read(); r=json.loads(t[t.index("{"):])["jobs"][0]["read"]; print(round(eval(sys.argv[2])))' "$work/$1.json" "$2"; }
iops() { read_json "$1" 'r["iops"]'; }
p50() { read_json "$1" 'r["clat_ns"]["percentile"]["50.000000"]/1000'; }

ports=()
for i in 1 2 3; do
  ports+=("$(serve "n$i" '"io.max.global": "disk riops=9000"' \
    "\"cluster\": { \"node\": \"n$i\", \"store\": \"etcd://127.0.0.1:$eport\", \"nodes\": 3, \"interval_ms\": 200, \"lease_ms\": 1000 },")")
done
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); ${secs} s per scenario"

fio_run "${ports[0]}" all1 "$secs" & a=$!; fio_run "${ports[1]}" all2 "$secs" & b=$!; fio_run "${ports[2]}" all3 "$secs" & c=$!
wait $a $b $c
s1=$(iops all1); s2=$(iops all2); s3=$(iops all3)
echo "all three loaded: $s1 + $s2 + $s3 = $((s1 + s2 + s3)) IOPS (limit 9000); p50 $(p50 all1) us on node 1"

fio_run "${ports[0]}" alone "$secs"
echo "node 1 alone: $(iops alone) IOPS (all but the two idle nodes' floors: 8700)"

fio_run "${ports[1]}" bg2 $((secs + 4)) & b=$!; fio_run "${ports[2]}" bg3 $((secs + 4)) & c=$!
sleep 1; fio_run "${ports[0]}" shared "$secs"; wait $b $c
single="$(serve single '"io.max": "disk riops=3000"')"
fio_run "$single" local "$secs"
echo "p50 at QD16: $(p50 shared) us at a share of 3000 ($(iops shared) IOPS), $(p50 local) us alone with io.max riops=3000 ($(iops local) IOPS)"
