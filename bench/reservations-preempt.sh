#!/usr/bin/env bash
# What a reservation preempt costs with the state in etcd (issue 31): a three-member etcd on
# loopback, 2 and 3 nodes' reservations in one JVM, 200 preempts each, with and without the
# acknowledgements (io.iotarget.bench.ReservationPreemptCost; options: that class). Prints the
# machine's load and one line per run; results are recorded in bench/results/reservations-preempt.md.
#   flock /tmp/iotarget-heavy.lock bench/reservations-preempt.sh [--preempts=200] [--nodes=2,3] [--acks=off,on]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); commit $(git -C "$here" rev-parse --short HEAD)$(git -C "$here" diff --quiet HEAD -- . || echo '+changes')"
exec "$here/bench/run" resv-preempt "$@"
