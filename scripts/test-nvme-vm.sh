#!/usr/bin/env bash
# The NVMe/TCP target against the Linux kernel's NVMe/TCP host: KernelHostTest boots the
# shared QEMU guest twice (kernel-host.sh, seed-001.sh; ~3 minutes under TCG, 2 cores).
# Needs the VM harness (../shared/vm, or IOTARGET_VM_DIR) and its prepare.sh (apt, network).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"
VM_DIR="${IOTARGET_VM_DIR:-$IOTARGET_HOME/../shared/vm}"
[ -x "$VM_DIR/run-guest.sh" ] || VM_DIR=/work/shared/vm
"$VM_DIR/prepare.sh"
export IOTARGET_VM_DIR="$VM_DIR"
mvn_run test -pl frontend-nvmetcp -am -Diotarget.vm=true -Dtest=KernelHostTest -Dsurefire.failIfNoSpecifiedTests=false
