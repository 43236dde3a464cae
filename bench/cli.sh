#!/usr/bin/env bash
# How long each CLI command takes against a running server: starts `bin/iotarget serve` on a
# small config (ephemeral ports, its own token directory), then runs each client command RUNS
# times (default 21) and prints the median, min and max wall time in milliseconds, and the load
# average before and after. Results:
# bench/results/cli.md. The machine is shared: run it under `flock /tmp/iotarget-build.lock`
# and `flock /tmp/iotarget-heavy.lock` so that no build or other benchmark runs alongside.
# Times are taken with bash's $EPOCHREALTIME, not `date`: a fork costs 5-15 ms here.
#
# Usage: bench/cli.sh [RUNS]
#   CLI="..."   the client to time instead of bin/iotarget (e.g. a java command line); the
#               server always runs from bin/iotarget.
#   IOTARGET_NO_THIN=1    bin/iotarget's Java client for every command (no perl quick path,
#               no saved help); with IOTARGET_NO_CLI_AOT=1 also without its AOT cache.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
runs="${1:-21}"
case "$runs" in ""|*[!0-9]*|0) sed -n '2,14p' "$0" >&2; exit 2 ;; esac   # not a count of runs: the usage
cli="${CLI:-$here/bin/iotarget}"
. "$here/scripts/env.sh"
build_jar

work="$(mktemp -d)"
server=""
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
cat > "$work/config.json" <<'JSON'
{ "server": { "control": "127.0.0.1:0", "nbd": "127.0.0.1:0" },
  "backends": { "disk": { "type": "memory", "size": "64M", "enable": 1 } } }
JSON
export IOTARGET_RUNTIME_DIR="$work"
"$here/bin/iotarget" serve --config "$work/config.json" > "$work/server.log" 2>&1 &
server=$!
control=""
for _ in $(seq 300); do
  control="$(sed -n 's|.*control endpoint http://\(127\.0\.0\.1:[0-9]*\).*|\1|p' "$work/server.log" | head -1)"
  [ -n "$control" ] && break
  kill -0 "$server" 2>/dev/null || { cat "$work/server.log" >&2; exit 1; }
  sleep 0.1
done
[ -n "$control" ] || { cat "$work/server.log" >&2; echo "cli.sh: the server did not start" >&2; exit 1; }
export IOTARGET_CONTROL="$control"
$cli mkdir tenants > /dev/null
$cli write tenants/cgroup.subtree_control +io > /dev/null
$cli mkdir tenants/a > /dev/null

# time_ms COMMAND...: one run's wall time in ms (output discarded; a failure stops the bench).
time_ms() {
  local start end
  start=$EPOCHREALTIME
  "$@" > /dev/null 2> "$work/err" < /dev/null || { echo "cli.sh: '$*' failed: $(cat "$work/err")" >&2; exit 1; }
  end=$EPOCHREALTIME
  echo $(( ${end/./} - ${start/./} ))                # microseconds
}

# measure LABEL COMMAND...: RUNS runs (after one unmeasured), median/min/max in ms.
measure() {
  local label="$1"; shift
  local samples=() i
  "$@" > /dev/null 2>&1 < /dev/null || true
  for i in $(seq "$runs"); do samples+=("$(time_ms "$@")"); done
  printf '%s\n' "${samples[@]}" | sort -n | awk -v label="$label" -v n="$runs" '
    { v[NR] = $1 }
    END { m = (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2;
          printf "%-44s median %7.1f ms   min %7.1f   max %7.1f   (%d runs)\n", label, m / 1000, v[1] / 1000, v[n] / 1000, n }'
}

echo "client: $cli" >&2
read -r load1 load5 load15 _ < /proc/loadavg
echo "load average at start: $load1 $load5 $load15 ($(date -u +%H:%M) UTC)"
measure "help"                                   $cli help
measure "help write"                             $cli help write
measure "read tenants/a/io.stat"                 $cli read tenants/a/io.stat
measure "read tenants/a/iotarget.io.stat"        $cli read tenants/a/iotarget.io.stat
measure "write tenants/a/io.max \"disk riops=1000\"" $cli write tenants/a/io.max "disk riops=1000"
measure "ls tenants"                             $cli ls tenants
measure "devices"                                $cli devices
measure "ls -l /backends/disk (attributes)"     $cli ls -l /backends/disk
measure "save"                                   $cli save
measure "save FILE"                              $cli save "$work/saved.json"
measure "web"                                    $cli web
# A group's ls -l measures its rates over one second (LongListing.INTERVAL): 1 s plus the rest.
measure "ls -l tenants (1 s of it the interval)" $cli ls -l tenants
measure "mkdir + rmdir tenants/b (2 commands)"   sh -c "$cli mkdir tenants/b && $cli rmdir tenants/b"

# A setup script's cost: 300 tenants (mkdir, io.max, rmdir: 900 commands) as one batch.
batch="$work/batch.txt"
for i in $(seq 300); do
  printf 'mkdir tenants/t%d\nwrite tenants/t%d/io.max "disk riops=%d"\nrmdir tenants/t%d\n' "$i" "$i" "$((1000 + i))" "$i"
done > "$batch"
start=$EPOCHREALTIME
$cli batch < "$batch" > /dev/null || { echo "cli.sh: the batch failed" >&2; exit 1; }
end=$EPOCHREALTIME
us=$(( ${end/./} - ${start/./} ))
printf '%-44s %7.1f ms in all, %.2f ms a command\n' "batch of 900 commands (300 tenants)" "${us}e-3" "$(( us / 900 ))e-3"
read -r load1 load5 load15 _ < /proc/loadavg
echo "load average at end: $load1 $load5 $load15 ($(date -u +%H:%M) UTC)"
