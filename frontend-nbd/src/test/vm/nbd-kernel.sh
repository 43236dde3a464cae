#!/bin/sh
# nbd-kernel.sh - the Linux kernel NBD client against iotarget's NBD server on the host.
# Run by KernelClientVmTest through shared/vm/run-guest.sh (one boot).
#
# Connects /dev/nbd0 to NBD_HOST:NBD_PORT export NBD_EXPORT (nbd-client negotiates with
# NBD_OPT_GO), writes RW_SIZE_MB MiB of random data at RW_OFFSET_MB with O_DIRECT and fsync
# (so a FLUSH goes out), reads it back with O_DIRECT, compares sha256, then prints the kernel's
# own counters for nbd0 (/sys/block/nbd0/stat) so the host can compare them with io.stat:
#   STAT read_ios read_sectors write_ios write_sectors discard_ios discard_sectors flush_ios
# and disconnects. Exit 0 = data read back identical.
. /guest/lib.sh

HOST="${NBD_HOST:-10.0.2.2}"
PORT="${NBD_PORT:-10809}"
EXPORT="${NBD_EXPORT:-default}"
OFF="${RW_OFFSET_MB:-8}"
LEN="${RW_SIZE_MB:-4}"
DEV=/dev/nbd0

modprobe nbd nbds_max=2 || die "modprobe nbd"
wait_for_dev "$DEV" || die "$DEV missing"
nbd-client "$HOST" "$PORT" "$DEV" -N "$EXPORT" -b 512 -t 30 || die "nbd-client connect failed"
i=0
while [ "$(cat /sys/block/nbd0/size)" = 0 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
log "connected: size=$(blockdev --getsize64 "$DEV") ro=$(cat /sys/block/nbd0/ro)"

RC=0
write_readback "$DEV" "$OFF" "$LEN" || RC=1
sync
# fields: 1 read I/Os, 3 read sectors, 5 write I/Os, 7 write sectors, 12 discard I/Os, 14 discard sectors, 16 flush I/Os
set -- $(cat /sys/block/nbd0/stat)
echo "STAT $1 $3 $5 $7 ${12:-0} ${14:-0} ${16:-0}"

nbd-client -d "$DEV" || { echo "CHECK disconnect FAILED"; RC=1; }
[ $RC = 0 ] && echo "NBD KERNEL PASSED" || echo "NBD KERNEL FAILED"
exit $RC
