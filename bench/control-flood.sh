#!/usr/bin/env bash
# Issue 19's control-port attack against a built server: `serve` on loopback ports of 25000+,
# then uid nobody keeps N connections with half a request line each (opening a new one for every
# one the server closes) for S seconds, then stops opening; prints the server's control-port
# connections, descriptors and RSS before, during and after, and when its last stalled
# connection went. Compare builds with --jar (e.g. one built from an older commit);
# IOTARGET_JAVA_OPTS adds JVM options.
#
#   bench/control-flood.sh [--jar control/target/iotarget.jar] [--connections 5000] [--seconds 15]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
. "$here/scripts/env.sh"
jar="$here/control/target/iotarget.jar"
connections=5000
seconds=15
while [ $# -gt 0 ]; do
  case "$1" in
    --jar) jar="$2"; shift 2 ;;
    --connections) connections="$2"; shift 2 ;;
    --seconds) seconds="$2"; shift 2 ;;
    *) echo "usage: bench/control-flood.sh [--jar JAR] [--connections N] [--seconds S]" >&2; exit 2 ;;
  esac
done
work="$(mktemp -d)"
chmod 755 "$work"
cat >"$work/config.json" <<JSON
{ "server": { "control": "127.0.0.1:25809", "nbd": "127.0.0.1:25810" },
  "backends": { "default": { "type": "memory", "size": "64M", "enable": 1 } },
  "nbd": { "exports": { "default": { "backend": "default", "cgroup": "/", "enable": 1 } } } }
JSON
cp "$here/control/src/test/resources/io/iotarget/control/stalled-connections.py" "$work/attack.py"
chmod 644 "$work/attack.py"
IOTARGET_RUNTIME_DIR="$work/tokens" java ${IOTARGET_JAVA_OPTS:-} -jar "$jar" serve --config "$work/config.json" >"$work/server.log" 2>&1 &
server=$!
attacker=""
trap 'kill $server 2>/dev/null; [ -n "$attacker" ] && kill $attacker 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 100); do grep -q "control endpoint" "$work/server.log" && break; sleep 0.2; done
state() {   # what the server holds now: connections to the control port (server side), descriptors, RSS
  local conns fds rss
  conns=$(ss -Htn state established '( sport = :25809 )' | wc -l)
  fds=$(ls /proc/$server/fd | wc -l)
  rss=$(awk '/VmRSS/ { print int($2 / 1024) }' /proc/$server/status)
  echo "control connections $conns, descriptors $fds, RSS $rss MiB"
}
cli() {
  local t0 t1
  t0=$(date +%s%N)
  if IOTARGET_RUNTIME_DIR="$work/tokens" timeout 20 java -jar "$jar" --control 127.0.0.1:25809 read io.stat >/dev/null 2>&1; then r=ok; else r=FAILED; fi
  t1=$(date +%s%N)
  echo "CLI read $r in $(( (t1 - t0) / 1000000 )) ms"
}
echo "before: $(state); $(cli)"
exec 3> >(setpriv --reuid=nobody --regid=nogroup --clear-groups /usr/bin/python3 "$work/attack.py" 25809 "$connections" >"$work/attack.log" 2>&1)
attacker=$!
sleep "$seconds"
echo "during ($seconds s): $(state); $(cli); attacker: $(tail -1 "$work/attack.log")"
echo stop >&3
stopped=$(date +%s)
for _ in $(seq 130); do
  grep -qE "^(drained|held)" "$work/attack.log" && break
  sleep 0.5
done
echo "after stop: attacker: $(grep -E '^(drained|held)' "$work/attack.log" || tail -1 "$work/attack.log") ($(( $(date +%s) - stopped )) s)"
exec 3>&-
sleep 2
echo "after: $(state); $(cli)"
jcmd "$server" GC.run >/dev/null
sleep 1
echo "after a full GC (the JVM gives back heap it grew into only then): $(state)"
