#!/bin/sh
# Runs in the shared/vm guest (Linux 6.1, busybox sh): replays corpus.txt one write(2) per line
# against the kernel's cgroup files and prints, per line, "ANSWER <n>\t<ok|ERRNO>\t<file after it>"
# (the file's newlines as '|', the device's MAJ:MIN as @DEV). record.sh runs it.
. /guest/lib.sh
modprobe null_blk nr_devices=1 queue_mode=2 || die "modprobe null_blk"
DEV=$(devnum nullb0)
MAJ=${DEV%%:*}
echo +io > /sys/fs/cgroup/cgroup.subtree_control || die "+io"
mkdir /sys/fs/cgroup/t || die "mkdir t"
echo "KERNEL $(uname -r) device nullb0 $DEV"

errno_of() {
  case "$1" in
    *"Invalid argument"*) echo EINVAL ;;
    *"Numerical result out of range"*) echo ERANGE ;;
    *"Argument list too long"*) echo E2BIG ;;
    *"No such device"*) echo ENODEV ;;
    *"Operation not supported"*) echo EOPNOTSUPP ;;
    *"No such file or directory"*) echo ENOENT ;;
    *"Device or resource busy"*) echo EBUSY ;;
    *"Permission denied"*) echo EACCES ;;
    *) echo "UNKNOWN($1)" ;;
  esac
}

n=0
TAB=$(printf '\t')
while IFS= read -r line; do
  case "$line" in '#'*|'') continue ;; esac
  n=$((n + 1))
  file=${line%%"$TAB"*}
  rest=${line#*"$TAB"}
  text=${rest%%"$TAB"*}
  opts=""
  [ "$rest" != "$text" ] && opts=${rest#*"$TAB"}
  case "$file" in io.cost.*) path=/sys/fs/cgroup/$file ;; *) path=/sys/fs/cgroup/t/$file ;; esac
  text=$(echo "$text" | sed -e "s/@DEV/$DEV/g" -e "s/@MAJ/$MAJ/g")
  printf '%b' "$text" > /tmp/case
  for o in $opts; do
    case "$o" in pad=*)
      have=$(wc -c < /tmp/case)
      printf "%$((${o#pad=} - have))s" "" >> /tmp/case ;;
    esac
  done
  if dd if=/tmp/case of="$path" bs=65536 count=1 conv=notrunc 2>/tmp/err >/dev/null; then
    res=ok
  else
    res=$(errno_of "$(grep -v records /tmp/err)")
  fi
  after=$(cat "$path" | sed "s/$DEV/@DEV/g" | tr '\n' '|')
  echo "ANSWER $n$TAB$res$TAB$after"
done < /guest/files/corpus.txt
echo "REPLAYED $n"
