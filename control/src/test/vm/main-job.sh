#!/bin/sh
# main-job.sh - the Linux kernel's NVMe/TCP host and NBD client against `bin/iotarget serve`'s
# embedded default config: both protocols reach the same memory backend. Data written through
# NVMe/TCP is read back through NBD and through NVMe/TCP, checksums compared.
# Parameters: NVME_PORT, NBD_PORT (host ports), NVME_NQN (default subsystem).
. /guest/lib.sh
NQN="${NVME_NQN:-nqn.2026-11.io.iotarget:default}"
RC=0

modprobe nvme-tcp || die "modprobe nvme-tcp"
nvme discover -t tcp -a 10.0.2.2 -s "$NVME_PORT" > /tmp/discover.txt 2>&1 || { cat /tmp/discover.txt; die "nvme discover"; }
grep -q "subnqn: *$NQN" /tmp/discover.txt && echo "CHECK discover ok" || { echo "CHECK discover FAILED"; cat /tmp/discover.txt; RC=1; }
nvme connect -t tcp -a 10.0.2.2 -s "$NVME_PORT" -n "$NQN" || die "nvme connect"
NS="$(wait_nvme_ns "$NQN" 20)" || die "no namespace for $NQN"
log "connected $NS ($(blockdev --getsize64 "$NS") bytes)"

dd if=/dev/urandom of=/tmp/data.bin bs=1M count=4 2>/dev/null
WANT="$(sha256sum < /tmp/data.bin | cut -d' ' -f1)"
dd if=/tmp/data.bin of="$NS" bs=1M seek=8 count=4 oflag=direct conv=fsync 2>/dev/null || die "write through NVMe/TCP"
GOT_NVME="$(dev_sha256 "$NS" 8 4)"
[ "$GOT_NVME" = "$WANT" ] && echo "CHECK nvme-readback ok" || { echo "CHECK nvme-readback MISMATCH $GOT_NVME"; RC=1; }
nvme disconnect -n "$NQN" >/dev/null || { echo "CHECK nvme-disconnect FAILED"; RC=1; }

modprobe nbd nbds_max=2 || die "modprobe nbd"
wait_for_dev /dev/nbd0 || die "/dev/nbd0 missing"
nbd-client 10.0.2.2 "$NBD_PORT" /dev/nbd0 -N default -b 4096 || die "nbd-client connect"
i=0
while [ "$(cat /sys/block/nbd0/size)" = 0 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
GOT_NBD="$(dev_sha256 /dev/nbd0 8 4)"
[ "$GOT_NBD" = "$WANT" ] && echo "CHECK nbd-sees-nvme-write ok" || { echo "CHECK nbd-sees-nvme-write MISMATCH $GOT_NBD"; RC=1; }
nbd-client -d /dev/nbd0 >/dev/null 2>&1 || { echo "CHECK nbd-disconnect FAILED"; RC=1; }

[ $RC = 0 ] && echo "MAIN JOB PASSED" || echo "MAIN JOB FAILED"
exit $RC
