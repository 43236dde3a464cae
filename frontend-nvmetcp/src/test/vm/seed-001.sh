#!/bin/sh
# seed-001.sh - the scenario of "[PATCH v7 0/2] nvmet: add cgroup_id to charge namespace I/O to
# a cgroup", end to end through the Linux kernel host, against iotarget:
#   two subsystems on the host's target, one namespace on a memory backend and one on a file,
#   each namespace bound (cgroup_id) to its own group; io.max limits on those groups bite, and
#   io.stat of each group matches what the host transferred.
# Then, in the same guest, the stock kernel nvmet with io.max (the shared example
# kernel-nvmet-iomax.sh, copied in as /guest/files/kernel-nvmet-iomax.sh): the tenant's group
# is charged nothing there.
#
# Environment: MEM_NQN, FILE_NQN, PORT, CTL_PORT, MEM_GROUP, FILE_GROUP (group paths on the
# target), MEM_DEV, FILE_DEV (the target devices' MAJ:MIN for io.max), RIOPS, WBPS (the limits).
. /guest/lib.sh

ADDR=10.0.2.2
FAIL=0
check() { if [ "$2" = 0 ]; then echo "CHECK $1 ok${3:+ ($3)}"; else echo "CHECK $1 FAILED${3:+ ($3)}"; FAIL=1; fi; }
ctl() { echo "$*" | nc "$ADDR" "$CTL_PORT"; }
field() { ctl cg-read "$1/io.stat" | awk -v f="$2" '{ for (i = 2; i <= NF; i++) { split($i, a, "="); if (a[1] == f) s += a[2] } } END { print s + 0 }'; }
setmax() { r="$(ctl cg-write "$1/io.max" "$2")"; [ "$r" = OK ] || die "io.max $1 '$2': $r"; echo "  $1/io.max <- $2"; }
# fio bytes from the terse output of fio_measure LABEL: read KiB is field 6, write KiB field 47
fio_bytes() { awk -F';' -v d="$2" '/^3;/ { print (d == "read" ? $6 : $47) * 1024 }' "/tmp/fio-$1.terse"; }
fio_bw_kib() { awk -F';' '/^3;/ { print $7 + $48 }' "/tmp/fio-$1.terse"; }

# pair LABEL FIO_ARGS...: the same fio job on both namespaces at once
pair() {
  _l="$1"; shift
  fio_measure "${_l}_mem" "" --filename="$MEMNS" --direct=1 --ioengine=libaio "$@" &
  fio_measure "${_l}_file" "" --filename="$FILENS" --direct=1 --ioengine=libaio "$@" &
  wait
}
snapshot() { for g in mem file; do eval "G=\$$(echo "$g" | tr a-z A-Z)_GROUP"
  for f in rbytes wbytes rios wios dbytes dios; do eval "S_${g}_$f=$(field "$G" $f)"; done; done; }
# matches LABEL WHICH(mem|file) DIRECTION(read|write) BS: io.stat delta of the group = what fio moved
matches() {
  eval "G=\$$(echo "$2" | tr a-z A-Z)_GROUP"
  if [ "$3" = read ]; then b=rbytes; n=rios; o=wios; else b=wbytes; n=wios; o=rios; fi
  host="$(fio_bytes "$1_$2" "$3")"
  eval "was_b=\$S_$2_$b; was_n=\$S_$2_$n; was_o=\$S_$2_$o"
  db=$(( $(field "$G" $b) - was_b )); dn=$(( $(field "$G" $n) - was_n )); do_=$(( $(field "$G" $o) - was_o ))
  [ "$db" = "$host" ] && [ "$dn" = $((host / $4)) ] && [ "$do_" = 0 ]
  check "io.stat-matches $1 $2" $? "host moved $host bytes in $((host / $4)) IOs; $G: $b+$db $n+$dn $o+$do_"
}
limited() {  # LABEL VALUE LIMIT
  [ "$2" -gt 0 ] && [ "$2" -le $(( $3 * 12 / 10 )) ]; check "limited $1" $? "$2 <= 1.2 x $3"
}

modprobe nvme-tcp || die "modprobe nvme-tcp"
log "kernel $(uname -r); riops=$RIOPS wbps=$WBPS on $MEM_GROUP ($MEM_DEV) and $FILE_GROUP ($FILE_DEV)"
nvme connect -t tcp -a "$ADDR" -s "$PORT" -n "$MEM_NQN" || die "connect $MEM_NQN"
nvme connect -t tcp -a "$ADDR" -s "$PORT" -n "$FILE_NQN" || die "connect $FILE_NQN"
MEMNS="$(wait_nvme_ns "$MEM_NQN" 20)" || die "no namespace for $MEM_NQN"
FILENS="$(wait_nvme_ns "$FILE_NQN" 20)" || die "no namespace for $FILE_NQN"
sleep 1
log "memory namespace $MEMNS ($(blockdev --getsize64 "$MEMNS") bytes, lbs $(cat /sys/block/${MEMNS##*/}/queue/logical_block_size))," \
    "file namespace $FILENS ($(blockdev --getsize64 "$FILENS") bytes, lbs $(cat /sys/block/${FILENS##*/}/queue/logical_block_size))"

echo; log "=== baseline: no limits"
pair base --rw=randread --bs=4k --iodepth=16 --time_based --runtime=3 --size=48M
BASE_MEM=$(fio_iops base_mem); BASE_FILE=$(fio_iops base_file)
# An emulated guest on a busy machine may not offer twice the seed's limit (207 IOPS has been
# seen): then the limit is halved until it does, so the check below measures io.max, not the
# machine. Each namespace reads for about 5 s at its limit.
BASE_MIN=$(( BASE_MEM < BASE_FILE ? BASE_MEM : BASE_FILE ))
while [ "$BASE_MIN" -lt $(( RIOPS * 2 )) ] && [ "$RIOPS" -ge 50 ]; do
  log "baseline $BASE_MIN IOPS is under 2 x riops=$RIOPS: riops=$(( RIOPS / 2 ))"; RIOPS=$(( RIOPS / 2 ))
done
IOS=$(( RIOPS * 5 ))

echo; log "=== riops=$RIOPS on both groups, $IOS 4 KiB random reads on each namespace"
setmax "$MEM_GROUP" "$MEM_DEV riops=$RIOPS"; setmax "$FILE_GROUP" "$FILE_DEV riops=$RIOPS"
snapshot
pair riops --rw=randread --bs=4k --iodepth=16 --io_size=$(( IOS * 4 ))k --size=48M
limited riops_mem "$(fio_iops riops_mem)" "$RIOPS"
limited riops_file "$(fio_iops riops_file)" "$RIOPS"
matches riops mem read 4096
matches riops file read 4096
echo "  $MEM_GROUP/io.stat: $(ctl cg-read "$MEM_GROUP/io.stat")"
echo "  $FILE_GROUP/io.stat: $(ctl cg-read "$FILE_GROUP/io.stat")"
setmax "$MEM_GROUP" "$MEM_DEV riops=max"; setmax "$FILE_GROUP" "$FILE_DEV riops=max"

echo; log "=== wbps=$WBPS on both groups, 4 MiB of 64 KiB sequential writes on each namespace"
setmax "$MEM_GROUP" "$MEM_DEV wbps=$WBPS"; setmax "$FILE_GROUP" "$FILE_DEV wbps=$WBPS"
snapshot
pair wbps --rw=write --bs=64k --iodepth=8 --io_size=4M --size=48M
limited wbps_mem "$(fio_bw_kib wbps_mem)" $((WBPS / 1024))
limited wbps_file "$(fio_bw_kib wbps_file)" $((WBPS / 1024))
matches wbps mem write 65536
matches wbps file write 65536
setmax "$MEM_GROUP" "$MEM_DEV wbps=max"; setmax "$FILE_GROUP" "$FILE_DEV wbps=max"

[ "$BASE_MEM" -ge $((RIOPS * 15 / 10)) ] && [ "$BASE_FILE" -ge $((RIOPS * 15 / 10)) ]
check unlimited-baseline-exceeds-limit $? "baseline $BASE_MEM and $BASE_FILE IOPS >= 1.5 x $RIOPS: the limits bite"
nvme disconnect -n "$MEM_NQN" >/dev/null; nvme disconnect -n "$FILE_NQN" >/dev/null

echo
echo "SUMMARY iotarget seed-001: fio 4k randread (riops=$RIOPS) and 64k write (wbps=$WBPS), two namespaces at once"
printf '  %-44s %8s %8s\n' "" memory file
printf '  %-44s %8s %8s\n' "baseline IOPS, no limit" "$BASE_MEM" "$BASE_FILE"
printf '  %-44s %8s %8s\n' "IOPS with riops=$RIOPS" "$(fio_iops riops_mem)" "$(fio_iops riops_file)"
printf '  %-44s %8s %8s\n' "KiB/s with wbps=$((WBPS / 1024))KiB/s" "$(fio_bw_kib wbps_mem)" "$(fio_bw_kib wbps_file)"

echo; log "=== the stock kernel nvmet with io.max, in this guest (shared example)"
sh /guest/files/kernel-nvmet-iomax.sh > /tmp/stock.txt 2>&1; rc=$?
cat /tmp/stock.txt
grep -q "CHECK nvmet backend IO not charged to the tenant cgroup ok" /tmp/stock.txt
check stock-nvmet-charges-the-tenant-nothing $? "example rc=$rc"

[ $FAIL = 0 ] && echo "SEED-001 PASSED" || echo "SEED-001 FAILED"
exit $FAIL
