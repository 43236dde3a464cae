#!/usr/bin/env bash
# nvme-tls.sh - what NVMe/TCP over TLS 1.3 (pre-shared keys) costs against plaintext, on the same
# server and disk (bench/results/nvme-tls.md).
#
# One `bin/iotarget serve` (pinned to SERVER_CPU) serves a 1 GiB memory backend through three
# ports: plaintext, TLS with a SHA-256 host key (TLS_AES_128_GCM_SHA256) and TLS with a SHA-384
# key (TLS_AES_256_GCM_SHA384), `addr_tsas tls1.3`, `addr_treq required`, one host NQN with
# `tls_key` for each. iotarget's load generator (bench/nvme-load.sh, its own JVM, pinned to
# CLIENT_CPU; Bouncy Castle's TLS client) runs one IO queue per case: 4k random reads and
# writes at QD32, 1 MiB sequential reads and writes at QD8 (writes through R2T/H2CData). Runs
# alternate plain / tls256 / tls384 case by case; each cell is the median of REPEATS rounds and
# the ratios are medians of same-round ratios. Server CPU µs/IO: the server's utime+stime
# (/proc/PID/stat) over the generator's measured window divided by the IOs it completed.
#
#   flock /tmp/iotarget-heavy.lock bench/nvme-tls.sh [--seconds S] [--repeats N]
# Env: SERVER_CPU (0), CLIENT_CPU (1).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
S=5 REPEATS=3
while [[ $# -gt 0 ]]; do
  case "$1" in
    --seconds) S="$2"; shift 2 ;;
    --repeats) REPEATS="$2"; shift 2 ;;
    *) sed -n '2,17p' "$0" >&2; exit 2 ;;
  esac
done
SERVER_CPU="${SERVER_CPU:-0}" CLIENT_CPU="${CLIENT_CPU:-1}"
. scripts/env.sh
echo "# $(date -u +%FT%TZ) commit $(git rev-parse --short HEAD)$(git diff --quiet || echo -dirty), $(nproc) cpus, load $(cut -d' ' -f1-3 /proc/loadavg)"
MVN_ARGS="${MVN_ARGS:--o}" mvn_run -q package -DskipTests -pl control -am
MVN_ARGS="${MVN_ARGS:--o}" mvn_run -q test-compile -pl frontend-nvmetcp -am
export NVME_LOAD_BUILT=1

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# A key in interchange format, as nvme gen-tls-key prints it: NVMeTLSkey-1:HH:base64(key || CRC-32 LE):
new_key() { python3 -c '
import base64, os, struct, sys, zlib
k = os.urandom(int(sys.argv[1]))
print("NVMeTLSkey-1:%s:%s:" % ("02" if len(k) == 48 else "01", base64.b64encode(k + struct.pack("<I", zlib.crc32(k))).decode()))' "$1"; }
NQN=nqn.2026-11.io.iotarget:bench
declare -A HOST=([plain]=nqn.2014-08.org.nvmexpress:uuid:10ad0000-0000-0000-0000-000000000001
                 [tls256]=nqn.2014-08.org.nvmexpress:uuid:10ad0000-0000-0000-0000-000000000256
                 [tls384]=nqn.2014-08.org.nvmexpress:uuid:10ad0000-0000-0000-0000-000000000384)
declare -A PORT=([plain]="$(free_port)" [tls256]="$(free_port)" [tls384]="$(free_port)") KEY=([tls256]="$(new_key 32)" [tls384]="$(new_key 48)")
CONTROL="$(free_port)"
work="$(mktemp -d /tmp/nvme-tls-bench.XXXXXX)"
port_json() { # id port tsas
  local tls=""; [[ "$3" == tls1.3 ]] && tls=', "addr_tsas": "tls1.3", "addr_treq": "required"'
  echo "\"$1\": { \"addr_trtype\": \"tcp\", \"addr_adrfam\": \"ipv4\", \"addr_traddr\": \"127.0.0.1\", \"addr_trsvcid\": \"$2\"$tls, \"subsystems\": [\"$NQN\"] }"
}
cat > "$work/iotarget.json" <<JSON
{ "server": { "control": "127.0.0.1:$CONTROL" },
  "backends": { "disk": { "type": "memory", "size": "1G", "enable": 1 } },
  "nvmet": { "hosts": { "${HOST[tls256]}": { "tls_key": "${KEY[tls256]}" }, "${HOST[tls384]}": { "tls_key": "${KEY[tls384]}" } },
             "subsystems": { "$NQN": { "attr_allow_any_host": 1, "namespaces": { "1": { "device_path": "disk", "enable": 1 } } } },
             "ports": { $(port_json 1 "${PORT[plain]}" none), $(port_json 2 "${PORT[tls256]}" tls1.3), $(port_json 3 "${PORT[tls384]}" tls1.3) } } }
JSON
taskset -c "$SERVER_CPU" bin/iotarget serve --config "$work/iotarget.json" > "$work/server.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; wait $SERVER 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 300); do (exec 3<>"/dev/tcp/127.0.0.1/${PORT[plain]}") 2>/dev/null && break; sleep 0.1; done

one() { # mode rw bs depth seconds -> "iops mibps server_cpu_us_per_io"
  local args=(--hostnqn "${HOST[$1]}") line
  [[ "$1" == plain ]] || args+=(--tls-key "${KEY[$1]}")
  line="$(taskset -c "$CLIENT_CPU" bench/nvme-load.sh --target "127.0.0.1:${PORT[$1]}" --nqn "$NQN" --rw "$2" --bs "$3" \
            --queues 1 --depth "$4" --seconds "$5" --warmup 1 --server-pid "$SERVER" "${args[@]}" 2>&1 | grep -oE 'RESULT.*|[A-Za-z.]*Exception.*' || true)"
  [[ "$line" == RESULT* ]] || { echo "generator failed ($1 $2 $3): $line" >&2; tail -5 "$work/server.log" >&2; return 1; }
  python3 -c 'import sys; kv = dict(x.split("=", 1) for x in sys.argv[1].split() if "=" in x); print(kv["iops"], kv["MiBps"], kv["server_cpu_us_per_io"])' "$line"
}
CASES="randwrite:4096:32 randread:4096:32 write:1048576:8 read:1048576:8"
echo "# warming up (and filling the disk)" >&2
for c in $CASES; do IFS=: read -r rw bs d <<<"$c"; for m in plain tls256 tls384; do one "$m" "$rw" "$bs" "$d" 2 > /dev/null; done; done
for rep in $(seq "$REPEATS"); do
  echo "# round $rep, load $(cut -d' ' -f1-3 /proc/loadavg)"
  for c in $CASES; do
    IFS=: read -r rw bs d <<<"$c"
    for m in plain tls256 tls384; do echo "$rep $m $c $(one "$m" "$rw" "$bs" "$d" "$S")" | tee -a "$work/raw"; done
  done
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$work/raw" "$S" "$REPEATS" <<'PY'
import collections, statistics, sys
runs = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    rep, mode, case, iops, mibps, cpu = line.split()
    runs[(mode, case)][rep] = (float(iops), float(mibps), float(cpu))
med = lambda xs: statistics.median(xs)
print(f"\n{sys.argv[2]} s per run, 1 IO queue, median of {sys.argv[3]} alternating rounds; ratios = median of same-round ratios to plaintext\n")
print("| case | plaintext IOPS (MiB/s) | TLS AES-128 IOPS | TLS AES-256 IOPS | AES-128/plain | AES-256/plain | server CPU µs/IO plain | AES-128 | AES-256 | CPU AES-128/plain | CPU AES-256/plain |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for case in dict.fromkeys(c for _, c in runs):
    rw, bs, d = case.split(":")
    name = f"{'4k' if bs == '4096' else '1M'} {rw} QD{d}"
    p, a, b = runs[("plain", case)], runs[("tls256", case)], runs[("tls384", case)]
    cell = lambda r: f"{med([v[0] for v in r.values()]):.0f} ({med([v[1] for v in r.values()]):.0f})"
    ratio = lambda r, i: med([r[k][i] / p[k][i] for k in r if k in p and p[k][i] > 0])
    cpu = lambda r: f"{med([v[2] for v in r.values()]):.2f}"
    print(f"| {name} | {cell(p)} | {cell(a)} | {cell(b)} | {ratio(a, 0):.2f} | {ratio(b, 0):.2f} | {cpu(p)} | {cpu(a)} | {cpu(b)} | {ratio(a, 2):.2f} | {ratio(b, 2):.2f} |")
PY
