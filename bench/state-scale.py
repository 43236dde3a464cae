#!/usr/bin/env python3
"""server.state at scale: makes N groups (mkdir, then an io.weight write) through the control
endpoint on one keep-alive connection, and prints the ms per change around 1,000 and 5,000
groups, the slowest change, the time for all N, and the server's RSS and heap per group.

  bench/state-scale.py [N]     (default 10000; starts bin/iotarget serve on 127.0.0.1:26100)
"""
import http.client, json, os, subprocess, sys, tempfile, time, urllib.parse

n = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
work = tempfile.mkdtemp(prefix="iotarget-state-")
config = os.path.join(work, "config.json")
with open(config, "w") as f:
    json.dump({"server": {"control": "127.0.0.1:26100", "state": os.path.join(work, "state.json")},
               "backends": {"disk": {"type": "memory", "size": "16M", "enable": 1}},
               "cgroup": {"cgroup.subtree_control": "+io"}}, f)
env = dict(os.environ, IOTARGET_RUNTIME_DIR=work)
server = subprocess.Popen([os.path.join(here, "bin", "iotarget"), "serve", "--config", config],
                          env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
try:
    for line in server.stdout:
        if "control endpoint" in line:
            break
    token = open(os.path.join(work, "control-127.0.0.1-26100.token")).read().strip()
    conn = http.client.HTTPConnection("127.0.0.1", 26100)

    def post(op, path, body=""):
        conn.request("POST", "/v1/" + op + "?path=" + urllib.parse.quote(path), body=body.encode(),
                     headers={"Authorization": "Bearer " + token, "Content-Type": "application/octet-stream"})
        r = conn.getresponse()
        text = r.read()
        if r.status // 100 != 2:
            raise SystemExit(f"{op} {path}: {r.status} {text!r}")

    def rss_kb():
        with open(f"/proc/{server.pid}/status") as s:
            return next(int(l.split()[1]) for l in s if l.startswith("VmRSS"))

    # the launcher execs java, so server.pid is the JVM
    rss0 = rss_kb()
    start = time.monotonic()
    window = {}
    slowest = 0
    mkdirs = 0
    for i in range(n):
        t = time.monotonic()
        post("mkdir", f"g{i:05d}")
        t1 = time.monotonic()
        post("write", f"g{i:05d}/io.weight", f"default {i % 9000 + 1}")
        t2 = time.monotonic()
        slowest = max(slowest, t1 - t, t2 - t1)
        mkdirs += t1 - t
        for mark in (1000, 5000, 10000):
            if mark - 50 <= i < mark + 50:
                window.setdefault(mark, []).append((t2 - t) / 2)
    total = time.monotonic() - start
    for mark, times in sorted(window.items()):
        print(f"at {mark} groups: {1000 * sum(times) / len(times):.2f} ms per change (mean of {2 * len(times)} changes)")
    print(f"slowest change: {1000 * slowest:.1f} ms")
    print(f"{n} groups (mkdir + io.weight each): {total:.1f} s, of which the {n} mkdirs {mkdirs:.1f} s")
    rss = rss_kb()
    print(f"RSS {rss0 // 1024} MB -> {rss // 1024} MB: {(rss - rss0) / n:.1f} KB per group")
    jcmd = os.path.join(os.path.dirname(os.readlink(f"/proc/{server.pid}/exe")), "jcmd")
    subprocess.run([jcmd, str(server.pid), "GC.run"], check=True, capture_output=True)
    heap = subprocess.run([jcmd, str(server.pid), "GC.heap_info"], check=True, capture_output=True, text=True).stdout
    used_kb = int(heap.split(" used ")[1].split("K")[0])
    print(f"heap after a full GC: {used_kb // 1024} MB: {used_kb / n:.1f} KB per group")
    print(f"state files: " + ", ".join(f"{f} {os.path.getsize(os.path.join(work, f)) // 1024} KB"
                                       for f in sorted(os.listdir(work)) if f.startswith("state")))
finally:
    server.terminate()
    server.wait()
