#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-grpc-floods.sh: `gpuslice serve --grpc-listen` against the HTTP/2
# floods that cost a server more than they cost the client (issue 14: no
# client can exhaust a daemon), frames written by hand (tests/lib/h2raw.py),
# Debian's python3-grpcio as the honest client on its own connection:
#   - rapid reset (CVE-2023-44487): 3000 streams opened and cancelled at
#     once, unary and streaming, get GOAWAY after about nghttp2's 1000-reset
#     burst and are closed;
#   - PING and SETTINGS floods from a client that never reads the ACKs
#     (CVE-2019-9512, -9515): closed, the queued ACKs dropped;
#   - a CONTINUATION flood (CVE-2024-28182): closed within a few frames;
#   - empty DATA frames at line rate (CVE-2019-9518) are read like any
#     traffic: not cut off, but the honest client's calls still answer.
# After each, an honest call succeeds; serve's peak RSS stays under 100 MB
# (not checked under AddressSanitizer). The cut-offs are nghttp2's (Debian's
# 1.52 with its security fixes) and src/net/h2.c's closing on its errors.
set -uo pipefail

bin=${GS_BIN:-$(dirname "$0")/../../build/gpuslice}
src=${GS_SRC:-$(dirname "$0")/../..}
py=/usr/bin/python3 # Debian's, where python3-grpcio lives
. "$src/tests/lib/common.sh"
gs_serve_test grpc-floods

gs_need_grpcio "$py"
asan=$(gs_asan)
gs_serve_grpc

PYTHONPATH="$src/tests/lib" timeout 200 "$py" - "$serve_pid" "$tmp" "$asan" <<'EOF' | tee "$tmp/py.out"
import os, signal, socket, struct, sys, threading, time
import grpc
import h2raw
from h2raw import frame
from gstest import check, check_peak_rss, finish, grpc_serve_started

SERVE, TMP, ASAN = int(sys.argv[1]), sys.argv[2], sys.argv[3] == "1"

_, GPORT = grpc_serve_started(TMP)

ch = grpc.insecure_channel("127.0.0.1:%d" % GPORT)
live = ch.unary_unary(h2raw.SVC + "ServerLive")
def honest():
    """An honest call on the honest client's connection: its status."""
    try:
        live(b"", timeout=20)
        return grpc.StatusCode.OK
    except grpc.RpcError as e:
        return e.code()
check("an honest call succeeds before the floods", honest() == grpc.StatusCode.OK)

def ended(c, secs):
    """Reads until the server closed c (or secs pass): True when it did."""
    end = time.time() + secs
    while time.time() < end and not c.closed:
        c.pump(0.2)
    return c.closed

def flood_unread(block, secs):
    """A client that sends block again and again and never reads: True when
    the server ended the connection (a send fails) within secs."""
    c = h2raw.Conn(GPORT)
    c.pump(1)  # the server's SETTINGS, acknowledged: from here on nothing is read
    c.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    end = time.time() + secs
    while time.time() < end and not c.closed:
        c.sendall(block, 0.5)
    c.close()
    return c.closed

# ---- rapid reset: streams opened and cancelled at once ----
CANCEL = struct.pack(">I", 8)
for method in ("ModelInfer", "ModelStreamInfer"):
    c = h2raw.Conn(GPORT)
    c.pump(1)
    burst = b"".join(h2raw.grpc_headers(2 * i + 1, method) +
                     frame(h2raw.RST_STREAM, 0, 2 * i + 1, CANCEL) for i in range(3000))
    t0 = time.time()
    c.sendall(burst, 10)
    closed = ended(c, 15)
    print("rapid reset, %s: GOAWAY code %s, last stream taken %s of 5999, closed after %.2f s"
          % (method, c.goaway, c.goaway_last, time.time() - t0))
    check("rapid reset (%s): GOAWAY after about 1000 resets, then closed" % method,
          closed and c.goaway is not None and c.goaway_last is not None and
          c.goaway_last < 2 * 1100, (closed, c.goaway, c.goaway_last))
    c.close()
    check("... and an honest call still succeeds", honest() == grpc.StatusCode.OK)

# ---- control frames whose ACKs the client never reads ----
for name, block in (("PING", frame(h2raw.PING, 0, 0, bytes(8)) * 1000),
                    ("SETTINGS", h2raw.settings() * 1000)):
    t0 = time.time()
    closed = flood_unread(block, 10)
    print("%s flood, ACKs never read: %s after %.2f s" % (name, "closed" if closed else "open",
                                                          time.time() - t0))
    check("a %s flood whose ACKs are never read is cut off" % name, closed)
    check("... and an honest call still succeeds", honest() == grpc.StatusCode.OK)

# ---- CONTINUATION frames without end ----
c = h2raw.Conn(GPORT)
c.pump(1)
c.sendall(frame(h2raw.HEADERS, 0, 1, h2raw.header_block([(":method", "POST"), (":scheme", "http"),
          (":path", h2raw.SVC + "ModelInfer"), (":authority", "x")])))
cont = frame(h2raw.CONTINUATION, 0, 1, h2raw.header_block([("x-pad", "p" * 20)]))
sent = 0
t0 = time.time()
while sent < 100000 and not c.closed and time.time() - t0 < 10:
    if c.sendall(cont * 100, 1):
        sent += 100
    c.pump(0)
closed = ended(c, 10)
print("CONTINUATION flood: %s after %.2f s, %d frames sent (the socket buffers take many), "
      "GOAWAY code %s" % ("closed" if closed else "open", time.time() - t0, sent, c.goaway))
check("a CONTINUATION flood gets GOAWAY and is closed", closed and c.goaway is not None,
      (closed, c.goaway, sent))
c.close()
check("... and an honest call still succeeds", honest() == grpc.StatusCode.OK)

# ---- empty DATA frames at line rate, while the honest client calls ----
c = h2raw.Conn(GPORT)
c.pump(1)
c.sendall(h2raw.grpc_headers(1))
empty = frame(h2raw.DATA, 0, 1, b"") * 1000
stop, lat, codes = time.time() + 5, [], []
def flood():
    while time.time() < stop and not c.closed:
        c.sendall(empty, 0.5)
        c.pump(0)
t = threading.Thread(target=flood)
t.start()
time.sleep(0.5)
while time.time() < stop - 0.5:
    t1 = time.time()
    codes.append(honest())
    lat.append(time.time() - t1)
    time.sleep(0.1)
t.join()
c.close()
lat.sort()
print("empty DATA flood: %d honest calls during it, median %.1f ms, slowest %.1f ms"
      % (len(lat), 1000 * lat[len(lat) // 2], 1000 * lat[-1]))
check("during an empty DATA flood honest calls answer (each within 5 s)",
      codes and all(x == grpc.StatusCode.OK for x in codes) and lat[-1] < 5, (codes, lat[-3:]))

ch.close()
check_peak_rss(SERVE, ASAN, "over every flood")
os.kill(SERVE, signal.SIGTERM)
finish()
EOF

serve_summary "$tmp/py.out" "$tmp/serve.err"
