#!/usr/bin/env bash
# Backend IO through the embedded API (Engine + Volume's request path, no network):
# 4 KiB random read and write at QD1 and QD32, on a 1 GiB file on the machine's disk
# (O_DIRECT) and on /dev/shm (page cache), for
#   sync      git main's synchronous dispatch (the backend call runs on the submitter),
#   io_uring  this tree's ring,
#   threads   this tree's IO thread pool,
#   fio       fio --ioengine=libaio on the same file, for reference.
# Rounds are interleaved; bench/backend-io-summary.py takes the medians.
#
#   bench/backend-io.sh [rounds] [seconds] > raw.txt
# Each round holds /tmp/iotarget-heavy.lock (about 36 runs): taking it per run let other
# heavy jobs in between and stretched a round to hours. Needs fio, and the files below (made
# if missing). No taskset: with two cores, pinning the JVM and fio would only take one away.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
. "$here/scripts/env.sh"
rounds="${1:-3}"
seconds="${2:-10}"
warmup=3
disk_file="${DISK_FILE:-/tmp/iotarget-bench/disk.img}"
shm_file="${SHM_FILE:-/dev/shm/iotarget-bench.img}"
main_src=/tmp/iotarget-bench/main-src

mvn_run package -DskipTests -pl bench/jmh -am >&2
jar="$here/bench/jmh/target/iotarget-benchmarks.jar"

# git main, with this tree's driver (it compiles against main's API).
rm -rf "$main_src" && mkdir -p "$main_src"
git -C "$here" archive main | tar -x -C "$main_src"
cp "$here/bench/jmh/src/main/java/io/iotarget/bench/BackendIoLoad.java" "$main_src/bench/jmh/src/main/java/io/iotarget/bench/"
mvn -B -q -f "$main_src/pom.xml" ${MVN_ARGS:-} package -DskipTests -pl bench/jmh -am >&2
main_jar="$main_src/bench/jmh/target/iotarget-benchmarks.jar"
echo "# main $(git -C "$here" rev-parse --short main), tree $(git -C "$here" rev-parse --short HEAD)$(git -C "$here" diff --quiet || echo '+dirty')"

for f in "$disk_file" "$shm_file"; do
  if [ ! -f "$f" ]; then
    mkdir -p "$(dirname "$f")"
    flock /tmp/iotarget-heavy.lock fio --name=layout --filename="$f" --size=1g --rw=write --bs=1m --direct=0 --end_fsync=1 >/dev/null
  fi
done

load() {  # jar, driver args
  java --enable-native-access=ALL-UNNAMED -cp "$1" io.iotarget.bench.BackendIoLoad "${@:2}" --seconds="$seconds" --warmup="$warmup"
}

fio_run() {  # file direct rw qd
  fio --name=ref --filename="$1" --direct="$2" --rw="$3" --bs=4k --iodepth="$4" --ioengine=libaio \
      --ramp_time="$warmup" --runtime="$seconds" --time_based --output-format=json |
    python3 -c '
import json, sys
j = json.load(sys.stdin)["jobs"][0]
rw = sys.argv[1]; d = j["read" if rw == "randread" else "write"]
iops = d["iops"]; cpu = (j["usr_cpu"] + j["sys_cpu"]) / 100
print(f"{rw} bs=4096 qd={sys.argv[2]} direct={sys.argv[3]} io_engine=fio-libaio lanes=- sync=none: {iops:.0f} IOPS, {cpu * 1e6 / iops:.2f} us CPU/IO, {cpu:.2f} cores")
' "$3" "$4" "$2"
}

for round in $(seq "$rounds"); do
  exec 9>/tmp/iotarget-heavy.lock
  flock 9
  echo "# round $round, load average: $(cut -d' ' -f1-3 /proc/loadavg)"
  for target in disk shm; do
    if [ "$target" = disk ]; then file="$disk_file"; direct=1; else file="$shm_file"; direct=0; fi
    for rw in randread randwrite; do
      for qd in 1 32; do
        common=(--file="$file" --direct="$direct" --rw="$rw" --qd="$qd")
        echo "target=$target $(load "$main_jar" "${common[@]}")"
        [ "$qd" -gt 1 ] && echo "target=$target $(load "$main_jar" "${common[@]}" --lanes=threads)"
        echo "target=$target $(load "$jar" "${common[@]}" --io-engine=io_uring)"
        echo "target=$target $(load "$jar" "${common[@]}" --io-engine=threads)"
        echo "target=$target $(fio_run "$file" "$direct" "$rw" "$qd")"
      done
    done
  done
  echo "# round $round done, load average: $(cut -d' ' -f1-3 /proc/loadavg)"
  flock -u 9
  exec 9>&-
done
echo "# done, load average: $(cut -d' ' -f1-3 /proc/loadavg)"
