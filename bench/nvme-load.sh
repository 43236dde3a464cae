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
[[ -n "${NVME_LOAD_BUILT:-}" ]] || MVN_ARGS="${MVN_ARGS:--o}" mvn_run test-compile -pl frontend-nvmetcp -am
CP=""
for m in model buffers backends iocontrol dispatch engine transport frontend-nvmetcp; do CP="$CP:$m/target/classes"; done
CP="${CP#:}:frontend-nvmetcp/target/test-classes"
# Bouncy Castle's TLS (the transport's PSK engine, the generator's --tls-key client), from the local repository.
BC_VERSION="$(sed -n 's:.*<bouncycastle.version>\(.*\)</bouncycastle.version>.*:\1:p' pom.xml)"
for a in bctls bcprov bcutil; do CP="$CP:$HOME/.m2/repository/org/bouncycastle/$a-jdk18on/$BC_VERSION/$a-jdk18on-$BC_VERSION.jar"; done
exec java --enable-native-access=ALL-UNNAMED -XX:+UseParallelGC -Xms1g -Xmx1g -cp "$CP" \
  io.iotarget.frontend.nvmetcp.load.NvmeLoadGenerator "$@"
