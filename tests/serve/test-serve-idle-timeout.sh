#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-serve-idle-timeout.sh: `gpuslice serve --idle-timeout` (docs/proxy.md's
# limits tables: gRPC "idle ... GOAWAY, closed", HTTP/1 "keep-alive idle"),
# set to 1 s so that it can be watched. gRPC, frames by hand
# (tests/lib/h2raw.py): a connection with no call gets GOAWAY and is closed;
# one with a call under way (HEADERS and part of a message, within the 10 s
# read timeout) is still open after 3 s, then, its call reset by the client,
# gets GOAWAY and is closed too. HTTP/1: a keep-alive connection after an
# answer is closed; one with a request head under way (within the 10 s head
# timeout) is still open after 3 s and its request is then answered. A bad
# value is refused naming the option. Bounds are generous (the machine is
# loaded): "closed" means within 20 s, far below the 60 s default.
set -uo pipefail

bin=${GS_BIN:-$(dirname "$0")/../../build/gpuslice}
src=${GS_SRC:-$(dirname "$0")/../..}
. "$src/tests/lib/common.sh"
tmp=$(gs_tmpdir serve-idle-timeout)
export GPUSLICE_EMU_STATE=$tmp/emu.json
serve_pid=
trap serve_cleanup EXIT

out=$("$bin" -q serve --idle-timeout 0 -- true 2>&1)
rc=$?
[ "$rc" = 2 ] && case "$out" in *--idle-timeout*) true ;; *) false ;; esac && ok ||
  fail "--idle-timeout 0: exit $rc, '$out'"

gs_serve_grpc --idle-timeout 1s

PYTHONPATH="$src/tests/lib" timeout 120 python3 - "$serve_pid" "$tmp" <<'EOF' | tee "$tmp/py.out"
import os, select, signal, socket, sys, time
import h2raw
from gstest import check, finish, grpc_serve_started

SERVE, TMP = int(sys.argv[1]), sys.argv[2]
PORT, GPORT = grpc_serve_started(TMP)

def h2_ended(c, secs):
    """Pumps c until the server closed it (or secs pass): True when it did."""
    end = time.time() + secs
    while time.time() < end and not c.closed:
        c.pump(0.2)
    return c.closed

# ---- gRPC: idle, then a call under way ----
idle = h2raw.Conn(GPORT)
busy = h2raw.Conn(GPORT)
busy.pump(1)
busy.sendall(h2raw.grpc_headers(1))
busy.data(1, h2raw.grpc_prefix(1000) + bytes(10))  # a message not yet whole
check("gRPC: an idle connection gets GOAWAY and is closed", h2_ended(idle, 20) and
      idle.goaway is not None, (idle.goaway, idle.closed))
t0 = time.time()
while time.time() - t0 < 3:
    busy.pump(0.2)
check("gRPC: a connection with a call under way stays open past the idle timeout",
      not busy.closed and busy.goaway is None and 1 not in busy.reset,
      (busy.closed, busy.goaway, busy.reset))
busy.sendall(h2raw.frame(h2raw.RST_STREAM, 0, 1, b"\0\0\0\x08"))  # CANCEL: no call left
check("gRPC: once its call is gone it gets GOAWAY and is closed",
      h2_ended(busy, 20) and busy.goaway is not None, (busy.goaway, busy.closed))
idle.close()
busy.close()

# ---- HTTP/1 keep-alive ----
def connect():
    s = socket.create_connection(("127.0.0.1", PORT))
    s.settimeout(20)
    return s

def answer(s):
    """Reads one answer to a body-less request: its status line, or ""."""
    data = b""
    try:
        while b"\r\n\r\n" not in data:
            d = s.recv(65536)
            if not d:
                break
            data += d
    except OSError:
        pass
    head, _, body = data.partition(b"\r\n\r\n")
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            n = int(v)
            while len(body) < n:
                d = s.recv(65536)
                if not d:
                    break
                body += d
    return head.split(b"\r\n")[0].decode(errors="replace")

def closed_by_server(s, secs):
    s.settimeout(secs)
    try:
        return s.recv(1) == b""
    except socket.timeout:
        return False
    except OSError:
        return True

REQ = b"GET /v2/health/ready HTTP/1.1\r\nHost: x\r\n\r\n"
ka = connect()
ka.sendall(REQ)
st = answer(ka)
check("HTTP/1: a request on a keep-alive connection is answered", " 200 " in st + " ", st)
check("HTTP/1: the kept-alive connection is closed after the idle timeout",
      closed_by_server(ka, 20))
ka.close()
part = connect()
part.sendall(REQ[:20])  # a request head under way
r, _, _ = select.select([part], [], [], 3)
check("HTTP/1: a connection with a request under way stays open past the idle timeout",
      not r, "the server sent or closed")
part.sendall(REQ[20:])
st = answer(part)
check("HTTP/1: then its request is answered", " 200 " in st + " ", st)
part.close()

os.kill(SERVE, signal.SIGTERM)
finish()
EOF

serve_collect "$tmp/py.out" "$tmp/serve.err"
summary
