#!/usr/bin/env bash
# nbd-tls.sh - what NBD over TLS costs against plaintext on the same server and disk.
#
# One iotarget serves one 1 GiB memory backend (prefilled) as two exports: "plain" and "tls"
# (TLS 1.3, EC P-256 certificates made here with openssl, a client certificate on the
# export's allow list), and a third, "psk", for TLS 1.3 with a pre-shared key (psktool's, the
# client's username on the allow list; Bouncy Castle's TLS under the server's PSK engine). nbdcopy (libnbd) reads the whole export to null: with one connection,
# one thread and a fixed number of requests in flight — fio's nbd engine cannot be used: it
# does not let libnbd read the tls-certificates directory named in a URI. The server is
# pinned to SERVER_CPU, nbdcopy to CLIENT_CPU; runs alternate plain/tls, workload by
# workload; each cell is the median of REPEATS runs; CPU µs/req is the server's
# utime+stime (/proc/PID/stat) over the run divided by the requests, and the same for the
# client (nbdcopy, from /usr/bin/time): a side near 1 s of CPU per second is the bottleneck.
#
# With BASELINE_JAR (the iotarget.jar of another build, e.g. the commit before TLS), that
# build serves the same plaintext export too, on the same core, measured in the same
# alternation: the plain path's cost before and after.
#
# Usage: bench/nbd-tls.sh [--repeats N] [--out FILE]
# Env: SERVER_CPU (0), CLIENT_CPU (1), BASELINE_JAR (none).
# Needs: nbdcopy (libnbd-bin), fio (to prefill), openssl, psktool (gnutls-bin), taskset, python3.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
REPEATS=3 OUT=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --repeats) REPEATS="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    *) echo "usage: $0 [--repeats N] [--out FILE]" >&2; exit 2 ;;
  esac
done
SERVER_CPU="${SERVER_CPU:-0}" CLIENT_CPU="${CLIENT_CPU:-1}"
for t in nbdcopy fio openssl psktool taskset python3; do
  command -v "$t" >/dev/null || { echo "missing $t (apt-get install libnbd-bin fio openssl gnutls-bin util-linux python3)" >&2; exit 1; }
done
. "$ROOT/scripts/env.sh"
WORK="$(mktemp -d /tmp/nbd-tls-bench.XXXXXX)"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; rm -rf "$WORK"; }
trap cleanup EXIT

# A throwaway CA, the server's credentials and one client's (qemu's tls-creds-x509 layout).
ec() { echo -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes; }
mkdir -p "$WORK/ca" "$WORK/server" "$WORK/client"
openssl req -x509 $(ec) -keyout "$WORK/ca/ca-key.pem" -out "$WORK/ca/ca-cert.pem" -days 2 -subj "/CN=bench CA" \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
issue() { # dir cert key subject extensions
  printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n%b' "$5" > "$1/ext.cnf"
  openssl req -new $(ec) -keyout "$1/$3" -out "$1/req.csr" -subj "$4" 2>/dev/null
  openssl x509 -req -in "$1/req.csr" -CA "$WORK/ca/ca-cert.pem" -CAkey "$WORK/ca/ca-key.pem" -CAcreateserial -days 2 \
    -extfile "$1/ext.cnf" -out "$1/$2" 2>/dev/null
  cp "$WORK/ca/ca-cert.pem" "$1/"
}
issue "$WORK/server" server-cert.pem server-key.pem /CN=localhost 'extendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1\n'
issue "$WORK/client" client-cert.pem client-key.pem /CN=bench 'extendedKeyUsage=clientAuth\n'
psktool -u bench -p "$WORK/keys.psk" >/dev/null
cat > "$WORK/config.json" <<JSON
{
  "server": { "control": "127.0.0.1:9829", "nbd": "127.0.0.1:10911" },
  "backends": { "default": { "type": "memory", "size": "1G", "enable": 1 } },
  "nbd": { "tls": { "certificates": "$WORK/server", "psk_file": "$WORK/keys.psk" },
           "exports": { "plain": { "backend": "default", "enable": 1 },
                        "tls": { "backend": "default", "tls": 1, "allow_any_client": 0, "allowed_clients": ["CN=bench"], "enable": 1 },
                        "psk": { "backend": "default", "tls": 1, "allow_any_client": 0, "allowed_clients": ["psk:bench"], "enable": 1 } } }
}
JSON

(cd "$ROOT" && mvn_run package -DskipTests -pl control -am) >&2
wait_port() { for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; echo "port $1 never opened" >&2; return 1; }
# bin/iotarget execs java, and so does taskset: the pid is the server's.
taskset -c "$SERVER_CPU" "$ROOT/bin/iotarget" serve --config "$WORK/config.json" > "$WORK/iotarget.log" 2>&1 &
PIDS+=($!)
declare -A PID=([plain]=$! [tls]=$! [psk]=$!)
wait_port 10911
declare -A URI=([plain]="nbd://127.0.0.1:10911/plain" [tls]="nbds://127.0.0.1:10911/tls?tls-certificates=$WORK/client"
                [psk]="nbds://bench@127.0.0.1:10911/psk?tls-psk-file=$WORK/keys.psk")
MODES=(plain tls psk)
if [ -n "${BASELINE_JAR:-}" ]; then
  cat > "$WORK/baseline.json" <<JSON
{ "server": { "control": "127.0.0.1:9830", "nbd": "127.0.0.1:10912" },
  "backends": { "default": { "type": "memory", "size": "1G", "enable": 1 } },
  "nbd": { "exports": { "plain": { "backend": "default", "enable": 1 } } } }
JSON
  taskset -c "$SERVER_CPU" java --enable-native-access=ALL-UNNAMED -XX:MaxDirectMemorySize=64g -jar "$BASELINE_JAR" serve \
    --config "$WORK/baseline.json" > "$WORK/baseline.log" 2>&1 &
  PIDS+=($!)
  PID[baseline]=$!
  wait_port 10912
  URI[baseline]="nbd://127.0.0.1:10912/plain"
  MODES+=(baseline)
fi
# request size : requests in flight : copies of the 1 GiB export per run (so a 1 MiB run lasts seconds too)
WORKLOADS=("4096:32:1" "1048576:8:8")
CLK_TCK="$(getconf CLK_TCK)"
cpu_ticks() { awk '{print $14 + $15}' "/proc/${PID[$1]}/stat"; }

run_one() { # mode workload -> "iops mib_s server_cpu_us_per_req client_cpu_us_per_req"
  local size qd copies; IFS=: read -r size qd copies <<<"$2"
  local t0 t1 s0 s1
  t0="$(cpu_ticks "$1")"; s0="$(date +%s.%N)"
  : > "$WORK/client-cpu"
  for _ in $(seq "$copies"); do
    /usr/bin/time -a -o "$WORK/client-cpu" -f '%U %S' \
      taskset -c "$CLIENT_CPU" nbdcopy -C 1 -T 1 -R "$qd" --request-size="$size" --no-extents "${URI[$1]}" null:
  done
  s1="$(date +%s.%N)"; t1="$(cpu_ticks "$1")"
  python3 -c "
import sys
size, copies, secs, ticks, tck = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]) - float(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
client = sum(float(u) + float(s) for u, s in (line.split() for line in open(sys.argv[7])))
reqs = copies * (1 << 30) // size
print(f'{reqs / secs:.0f} {reqs * size / secs / 1048576:.1f} {ticks / tck * 1e6 / reqs:.2f} {client * 1e6 / reqs:.2f}')" \
    "$size" "$copies" "$s1" "$s0" "$((t1 - t0))" "$CLK_TCK" "$WORK/client-cpu"
}

echo "prefilling the disk, then warming up" >&2
for m in "${MODES[@]}"; do
  [ "$m" = tls ] || [ "$m" = psk ] && continue   # the same disk as plain
  fio --name=fill --ioengine=nbd --uri="${URI[$m]}" --rw=write --bs=1M --iodepth=8 --size=1G > /dev/null
done
for m in "${MODES[@]}"; do for w in "${WORKLOADS[@]}"; do run_one "$m" "$w" > /dev/null; done; done

RESULTS="$WORK/results.txt"; : > "$RESULTS"
for rep in $(seq "$REPEATS"); do
  for w in "${WORKLOADS[@]}"; do
    for m in "${MODES[@]}"; do
      r="$(run_one "$m" "$w")"
      echo "$rep $w $m $r" | tee -a "$RESULTS" >&2
    done
  done
done

python3 - "$RESULTS" "$REPEATS" "$(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet || echo -dirty)" "$(cut -d' ' -f1-3 /proc/loadavg)" <<'PY' | tee "${OUT:-/dev/null}"
import statistics, sys, collections
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    rep, w, m, iops, mib, cpu, client = line.split()
    rows[(w, m)].append((float(iops), float(mib), float(cpu), float(client)))
names = {"4096:32:1": "4k read QD32", "1048576:8:8": "1M read QD8"}
print(f"commit {sys.argv[3]}, nbdcopy to null: (1 GiB, 1 connection), median of {sys.argv[2]} alternating runs; load average after: {sys.argv[4]}")
print()
baseline = any(m == "baseline" for _, m in rows)
med = lambda w, m: [statistics.median(x[i] for x in rows[(w, m)]) for i in range(4)]
head = ("| workload | plaintext | TLS 1.3 | TLS/plaintext | TLS-PSK | PSK/plaintext | CPU µs/req server plaintext | server TLS "
        "| server PSK | client plaintext | client TLS | client PSK |")
print(head + (" plaintext, baseline build | this/baseline | server CPU µs/req baseline |" if baseline else ""))
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|" + ("---:|---:|---:|" if baseline else ""))
for w in names:
    p, t, k = med(w, "plain"), med(w, "tls"), med(w, "psk")
    line = (f"| {names[w]} | {p[0]:.0f} IOPS ({p[1]:.0f} MiB/s) | {t[0]:.0f} IOPS ({t[1]:.0f} MiB/s) | {t[0] / p[0]:.2f} "
            f"| {k[0]:.0f} IOPS ({k[1]:.0f} MiB/s) | {k[0] / p[0]:.2f} "
            f"| {p[2]:.2f} | {t[2]:.2f} | {k[2]:.2f} | {p[3]:.2f} | {t[3]:.2f} | {k[3]:.2f} |")
    if baseline:
        b = med(w, "baseline")
        line += f" {b[0]:.0f} IOPS ({b[1]:.0f} MiB/s) | {p[0] / b[0]:.2f} | {b[2]:.2f} |"
    print(line)
PY
