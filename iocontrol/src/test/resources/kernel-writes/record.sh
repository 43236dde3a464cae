#!/bin/bash
# Replays corpus.txt against Linux 6.1 in the shared/vm guest and rewrites kernel-answers.txt.
# Usage (from anywhere; heavy, so under the shared lock):
#   flock /tmp/iotarget-heavy.lock iocontrol/src/test/resources/kernel-writes/record.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
vm="$(cd "$here/../../../../.." && pwd)/../shared/vm"
out="$(mktemp)"
"$vm/run-guest.sh" "$here/guest-replay.sh" --file "$here/corpus.txt" --timeout 300 > "$out"
kernel="$(grep '^KERNEL ' "$out")"
count="$(grep -c '^ANSWER ' "$out")"
grep -q "^REPLAYED $count\$" "$out" || { cat "$out" >&2; exit 1; }
{
  echo "# What Linux answered to each write of corpus.txt, in order: n, ok or errno, the file afterwards"
  echo "# (newlines as '|'). Recorded by record.sh: ${kernel#KERNEL }"
  grep '^ANSWER ' "$out" | sed 's/^ANSWER //'
} > "$here/kernel-answers.txt"
rm -f "$out"
echo "recorded $count answers (${kernel#KERNEL })"
