#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-proxy-http1.sh: the load balancer's HTTP/1.1 rules against clients
# and a worker that break them (issue 14 item 9), over raw loopback sockets,
# with `gpuslice serve` in front of tests/lib/fake_worker.py:
# headers named in Connection are not passed on, either way (RFC 9110
# §7.6.1); a worker answer with two different Content-Lengths is 502 (two
# equal ones pass); the worker's answer head may be 64 KiB, not more; chunk
# sizes are bare hex ("0x3" is 400) and one beyond the body limit is 413 at
# once; an HTTP/1.1 request without Host, or any with two, is 400, HTTP/1.2
# is 505, and an HTTP/1.0 one without Host still reaches the worker.
set -uo pipefail

bin=${GS_BIN:-$(dirname "$0")/../../build/gpuslice}
src=${GS_SRC:-$(dirname "$0")/../..}
. "$src/tests/lib/common.sh"
gs_serve_test proxy-http1

gs_emu_layout all-7g.40gb
# One proxy thread: each thread counts a worker's failures and ejects it on its
# own, and the 502 cases below (each tried twice: the answer, then its retry)
# must not add up on one thread while the successes between them go to another.
"$bin" -q serve --listen 127.0.0.1:0 --admin-listen off --ephemeral-ports --threads 1 -- \
  python3 "$src/tests/lib/fake_worker.py" '{port}' good >"$tmp/serve.out" 2>"$tmp/serve.err" &
serve_pid=$!

PYTHONPATH="$src/tests/lib" timeout 120 python3 - "$serve_pid" "$tmp" <<'EOF' | tee "$tmp/py.out"
import os, re, signal, socket, sys, time
from gstest import check, finish, read, wait_for, serve_port

SERVE, TMP = int(sys.argv[1]), sys.argv[2]
OUT = TMP + "/serve.out"
ok = wait_for(lambda: "joined the pool" in read(OUT), 30)
PORT = serve_port(OUT)
check("serve starts with the fake worker in its pool", ok and PORT,
      read(OUT) + read(TMP + "/serve.err"))
if not (ok and PORT):
    finish()

def exchange(raw, secs=10):
    """Sends raw bytes, returns (status, head, body, seconds) of the answer
    read until the peer closes (every request here says Connection: close
    or is refused)."""
    s = socket.create_connection(("127.0.0.1", PORT))
    s.settimeout(secs)
    t0 = time.time()
    s.sendall(raw)
    data = b""
    try:
        while True:
            d = s.recv(65536)
            if not d:
                break
            data += d
    except socket.timeout:
        pass
    except ConnectionResetError:
        pass
    s.close()
    head, _, body = data.partition(b"\r\n\r\n")
    st = re.match(rb"HTTP/1\.1 (\d{3}) ", head)
    return (int(st.group(1)) if st else None), head, body, time.time() - t0

def get(path, extra=b"", version=b"HTTP/1.1", host=b"Host: x\r\n"):
    return exchange(b"GET " + path + b" " + version + b"\r\n" + host + extra +
                    b"Connection: close\r\n\r\n")

# ---- Connection-named headers, both ways ----
st, head, body, _ = get(b"/echo", b"Connection: X-Secret, keep-alive\r\nX-Secret: 1\r\nX-Other: 2\r\n")
check("a request header named in Connection does not reach the worker",
      st == 200 and b"x-other: 2" in body.lower() and b"x-secret" not in body.lower(), body[:400])
st, head, body, _ = get(b"/conn")
check("an answer header named in Connection does not reach the client",
      st == 200 and b"x-keep: yes" in head.lower() and b"x-hop" not in head.lower(), head[:400])

# ---- the worker's answer framing ----
st, head, body, _ = get(b"/dupcl")
check("two different Content-Lengths from the worker are 502", st == 502, head[:200])
st, head, body, _ = get(b"/samecl")
check("two equal Content-Lengths pass", st == 200 and body == b"abc", (head[:200], body))
st, head, body, _ = get(b"/head/60000")
check("a 60 KB answer head passes", st == 200 and body == b"ok", head[:100])
st, head, body, _ = get(b"/head/70000")
check("a 70 KB answer head is 502 (the limit is 64 KiB)", st == 502, head[:100])

# ---- chunked request bodies ----
def post_chunked(chunks):
    return exchange(b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                    b"Connection: close\r\n\r\n" + chunks)
st, head, body, _ = post_chunked(b"3\r\nabc\r\n0\r\n\r\n")
check("a well-formed chunked body passes", st == 200, head[:200])
st, head, body, _ = post_chunked(b"0x3\r\nabc\r\n0\r\n\r\n")
check("chunk size 0x3 is 400 (chunk sizes are bare hex), not a last chunk", st == 400,
      (head[:200], body[:200]))
st, head, body, secs = post_chunked(b"ffffffffffffffff\r\nabc")
check("a chunk size of 2^64-1 is 413 at once", st == 413, (head[:200], body[:200]))
print("chunk size 2^64-1 answered in %.2f s" % secs)

# ---- request line and Host ----
st, head, body, _ = get(b"/echo", host=b"")
check("an HTTP/1.1 request without Host is 400", st == 400 and b"Host" in body, body[:200])
st, head, body, _ = get(b"/echo", host=b"Host: a\r\nHost: b\r\n")
check("a request with two Hosts is 400", st == 400 and b"Host" in body, body[:200])
st, head, body, _ = get(b"/echo", version=b"HTTP/1.2")
check("HTTP/1.2 is 505", st == 505, head[:200])
st, head, body, _ = get(b"/echo", version=b"HTTP/1.0", host=b"")
check("an HTTP/1.0 request without Host still reaches the worker", st == 200, head[:200])

os.kill(SERVE, signal.SIGTERM)
finish()
EOF

serve_summary "$tmp/py.out" "$tmp/serve.err"
