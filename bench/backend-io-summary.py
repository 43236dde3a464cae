#!/usr/bin/env python3
"""Medians of bench/backend-io.sh's raw lines, as a markdown table: backend-io-summary.py raw.txt"""
import re
import statistics
import sys
from collections import defaultdict

LINE = re.compile(r"target=(\S+) (\S+) bs=\d+ qd=(\d+) direct=\d io_engine=(\S+) lanes=(\S+) sync=\S+: "
                  r"(\d+) IOPS, ([\d.]+) us CPU/IO")
runs = defaultdict(list)
for line in open(sys.argv[1]):
    m = LINE.match(line.strip())
    if not m:
        continue
    target, rw, qd, engine, lanes, iops, cpu = m.groups()
    variant = engine + (" (thread per request)" if lanes == "threads" else "")
    runs[(target, rw, int(qd), variant)].append((int(iops), float(cpu)))

order = ["sync", "sync (thread per request)", "io_uring", "threads", "fio-libaio"]
print("| file | op | QD | variant | IOPS (median, min-max) | CPU µs/IO (median) | runs |")
print("|---|---|---|---|---|---|---|")
for key in sorted(runs, key=lambda k: (k[0], k[1], k[2], order.index(k[3]) if k[3] in order else 99)):
    target, rw, qd, variant = key
    iops = [r[0] for r in runs[key]]
    cpu = [r[1] for r in runs[key]]
    where = {"disk": "/tmp (ext4, O_DIRECT)", "shm": "/dev/shm (page cache)", "ext4buf": "/tmp (ext4, buffered)"}[target]
    print(f"| {where} | {rw} | {qd} | {variant} | {statistics.median(iops):,.0f} ({min(iops):,}-{max(iops):,}) "
          f"| {statistics.median(cpu):.1f} | {len(iops)} |")
