#!/usr/bin/env bash
# test-nbd.sh - every NBD front-end test, including the slow seed-001 experiment (~100 s):
# decoders, handshake, transmission, export tree, real clients (qemu-img, qemu-io, nbdinfo,
# nbdcopy, python3-libnbd, fio), the kernel client in the shared/vm guest, and seed 001.
# Needs: qemu-utils, libnbd-bin, python3-libnbd, fio, nbd-client (host side not needed by the
# guest), qemu-system-x86 (shared/vm), nbdkit and qemu-system-common for bench/nbd-vs-peers.sh.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"
mvn_run test -pl frontend-nbd -am -Dnbd.excludedGroups=none "$@"
