#!/usr/bin/env bash
# nvme-bench.sh - the matrix recorded in bench/results/nvme.md: iotarget's NVMe/TCP target and
# load generator in one JVM (bench/nvme-load.sh), each case SECONDS long after a 2 s warm-up.
#   bench/nvme-bench.sh [SECONDS]        (default 10)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
S="${1:-10}"
IMG="frontend-nvmetcp/target/bench.img"
[ -s "$IMG" ] || dd if=/dev/urandom of="$IMG" bs=1M count=256 oflag=direct status=none
echo "# $(date -u +%FT%TZ) $(nproc) cpus, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg)"
run() { nice bench/nvme-load.sh --seconds "$S" "$@" 2>&1 | grep -oE 'RESULT.*|[A-Za-z.]*Exception.*|ERROR.*' || true; }
run --backend null --rw randread --bs 4096 --queues 2 --depth 32
run --backend null --rw randwrite --bs 4096 --queues 2 --depth 32
run --backend null --rw randread --bs 4096 --queues 2 --depth 32 --digests
run --backend null --rw randwrite --bs 4096 --queues 2 --depth 32 --digests
run --backend null --rw read --bs 131072 --queues 2 --depth 8
run --backend null --rw write --bs 131072 --queues 2 --depth 8
run --backend null --rw write --bs 1048576 --queues 2 --depth 4
run --backend memory --rw randwrite --bs 4096 --queues 2 --depth 32 --size 268435456
run --backend memory --rw randread --bs 4096 --queues 2 --depth 32 --size 268435456
run --backend null --rw randread --bs 4096 --queues 1 --depth 1
run --backend "file:$PWD/$IMG" --rw randread --bs 4096 --queues 1 --depth 32 --size 268435456
run --backend "file:$PWD/$IMG" --rw randread --bs 4096 --queues 2 --depth 32 --size 268435456
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
