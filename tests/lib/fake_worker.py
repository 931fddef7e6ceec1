# SPDX-License-Identifier: Apache-2.0
"""fake_worker.py PORT MODE [LOG]: a stand-in for a worker behind `gpuslice
serve`, for the proxy's tests: raw HTTP/1.1 over loopback, so that answers
can break the rules on purpose. GET /v2/health/ready is always 200 (the
supervisor's probe passes). MODE "good" answers other paths by name:
  /echo      200, the body lists the request's header lines as received
  /dupcl     two different Content-Lengths
  /samecl    two equal Content-Lengths (legal)
  /conn      "Connection: X-Hop" and an X-Hop header, plus X-Keep
  /head/N    an answer head of about N bytes
  anything else: 200 "ok"
MODE "garbage" answers anything but the probe with bytes that are not HTTP;
it turns "good" once the file LOG + ".heal" exists. MODE "flappy" is
"garbage" whose probe also flaps until then: 503 for 2 s in every 4 s (as a
probe timing out on a loaded machine), so that the supervisor reports the
same process unready, then ready again. Each request's path and
time go to LOG (one line each) when LOG is given. Standard library only."""
import os
import socket
import sys
import threading
import time

PORT, MODE = int(sys.argv[1]), sys.argv[2]
LOG = sys.argv[3] if len(sys.argv) > 3 else None
lock = threading.Lock()
START = time.time()


def healed():
    return LOG and os.path.exists(LOG + ".heal")


def answer(body, extra=b"", status=b"200 OK"):
    return (b"HTTP/1.1 " + status + b"\r\nContent-Type: text/plain\r\n" + extra +
            b"Content-Length: %d\r\n\r\n" % len(body) + body)


def reply(path, head):
    if path == b"/v2/health/ready":
        if MODE == "flappy" and not healed() and (time.time() - START) % 4 >= 2:
            return answer(b"", status=b"503 Service Unavailable")
        return answer(b"")
    if MODE in ("garbage", "flappy") and not healed():
        return b"this is not HTTP\r\n\r\n"
    if path == b"/echo":
        return answer(head)
    if path == b"/dupcl":
        return b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nabc"
    if path == b"/samecl":
        return b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc"
    if path == b"/conn":
        return answer(b"ok", b"Connection: X-Hop, keep-alive\r\nX-Hop: secret\r\nX-Keep: yes\r\n")
    if path.startswith(b"/head/"):
        n = int(path[6:])
        return answer(b"ok", b"X-Pad: " + b"a" * max(n - 80, 1) + b"\r\n")
    return answer(b"ok")


def serve(conn):
    buf = b""
    with conn:
        while True:
            while b"\r\n\r\n" not in buf:
                data = conn.recv(65536)
                if not data:
                    return
                buf += data
            head, buf = buf.split(b"\r\n\r\n", 1)
            line = head.split(b"\r\n", 1)[0].split(b" ")
            path = line[1] if len(line) > 1 else b""
            n = 0
            for h in head.split(b"\r\n")[1:]:
                if h.lower().startswith(b"content-length:"):
                    n = int(h.split(b":", 1)[1])
                if h.lower().startswith(b"transfer-encoding:"):  # the proxy's own chunks
                    while b"\r\n0\r\n\r\n" not in b"\r\n" + buf:
                        data = conn.recv(65536)
                        if not data:
                            return
                        buf += data
                    n = (b"\r\n" + buf).index(b"\r\n0\r\n\r\n") + 3
            while len(buf) < n:
                data = conn.recv(65536)
                if not data:
                    return
                buf += data
            buf = buf[n:]
            if LOG and path != b"/v2/health/ready":
                with lock, open(LOG, "a") as f:
                    f.write("%.3f %s\n" % (time.time(), path.decode("latin-1")))
            conn.sendall(reply(path, head))


s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", PORT))
s.listen(128)
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
