#!/usr/bin/env bash
# nvme-load.sh - iotarget's NVMe/TCP load generator (frontend-nvmetcp test scope,
# io.iotarget.frontend.nvmetcp.load.NvmeLoadGenerator). Without --target it starts the target in
# the same JVM on a null (default) or memory backend. Options: see that class; results and the
# commands behind them are recorded in bench/results/nvme.md. NVME_LOAD_BUILT=1 skips the build
# (bench/nvme-bench.sh builds once for all its runs).
#   bench/nvme-load.sh --backend null --queues 2 --depth 32 --bs 4096 --rw randread --seconds 10
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../scripts/env.sh"
cd "$IOTARGET_HOME"
# Maven writes the generator's class path (every library of frontend-nvmetcp's test scope: Bouncy
# Castle for TLS, HdrHistogram for the latency figures, ...) beside the build, so no jar is listed by hand.
CP_FILE=frontend-nvmetcp/target/load-generator.classpath
[[ -n "${NVME_LOAD_BUILT:-}" && -s "$CP_FILE" ]] || mvn_run test-compile org.apache.maven.plugins:maven-dependency-plugin:3.11.0:build-classpath \
  -Dmdep.includeScope=test -Dmdep.outputFile=target/load-generator.classpath -pl frontend-nvmetcp -am
CP=""
for m in model buffers backends iocontrol dispatch engine transport frontend-nvmetcp; do CP="$CP:$m/target/classes"; done
CP="${CP#:}:frontend-nvmetcp/target/test-classes:$(cat "$CP_FILE")"
exec java --enable-native-access=ALL-UNNAMED -XX:+UseParallelGC -Xms1g -Xmx1g -cp "$CP" \
  io.iotarget.frontend.nvmetcp.load.NvmeLoadGenerator "$@"
