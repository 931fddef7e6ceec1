#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-serve-admin.sh: the admin API refuses what a web page could send it.
# `gpuslice serve` on an emulated A100 with two 1g.5gb workers, its admin API
# on loopback without a token; raw HTTP/1.1 over loopback sockets:
# - a POST .../disable with a foreign Origin and Host (the issue's cross-site
#   request) is 403 and the worker stays enabled; a foreign Origin alone, a
#   foreign Host alone (DNS rebinding), the wrong port, "null" and https
#   origins are 403; no or two Host headers in HTTP/1.1 are 400;
# - a change without Content-Type: application/json (no type, text/plain, a
#   form) is 415 and changes nothing; with it (parameters allowed) it works;
# - its own names pass: 127.0.0.1:PORT, localhost:PORT, [::1]:PORT, and an
#   Origin of http:// and one of them; HTTP/1.0 without Host (curl -0, nc);
# - DELETE, PUT, OPTIONS are 405 with Allow, never a listing;
# then a second serve with --admin-token-file: its 401 body is the JSON its
# Content-Length says, and a valid token with a foreign Origin is still 403.
set -uo pipefail

bin=${GS_BIN:-$(dirname "$0")/../../build/gpuslice}
src=${GS_SRC:-$(dirname "$0")/../..}
. "$src/tests/lib/common.sh"
gs_serve_test serve-admin

gs_emu_gis 1g.5gb,1g.5gb

"$bin" -q serve --listen 127.0.0.1:0 --admin-listen 127.0.0.1:0 --ephemeral-ports \
  --log-dir "$tmp/logs" -- "$bin" worker --listen '127.0.0.1:{port}' --profile '{profile}' \
  >"$tmp/serve.out" 2>"$tmp/serve.err" &
serve_pid=$!

cat >"$tmp/raw.py" <<'EOF'
"""Raw HTTP/1.x on a loopback socket: the request bytes as given, the
answer read to the close."""
import json, socket

def raw(port, head, body=b"", family=socket.AF_INET, host="127.0.0.1"):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect((host, port))
    s.sendall(head.encode() + body)
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    top, _, rest = data.partition(b"\r\n\r\n")
    lines = top.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1]) if lines[0].startswith("HTTP/1.") else 0
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    return status, headers, rest

def req(port, method, path, host=None, extra=(), body=b"", version="1.1"):
    h = "%s %s HTTP/%s\r\n" % (method, path, version)
    if host is not None:
        h += "Host: %s\r\n" % host
    for line in extra:
        h += line + "\r\n"
    h += "Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body)
    return raw(port, h, body)
EOF

PYTHONPATH="$src/tests/lib:$tmp" timeout 120 python3 - "$serve_pid" "$tmp" <<'EOF' | tee "$tmp/py.out"
import json, os, signal, socket, sys
from gstest import check, finish, port_of, read, wait_for
from raw import raw, req

SERVE, TMP = int(sys.argv[1]), sys.argv[2]
OUT = TMP + "/serve.out"
A = port_of(OUT, "admin on")
if not A or not wait_for(lambda: read(OUT).count("joined the pool") >= 2, 30):
    check("serve starts with 2 workers", False, read(OUT) + read(TMP + "/serve.err"))
    finish()
OWN = "127.0.0.1:%d" % A
JSON = "Content-Type: application/json"

def admin_state(w):
    st, _, body = req(A, "GET", "/workers/%d" % w, OWN)
    return json.loads(body)["admin"] if st == 200 else "status %d" % st

# The issue's request: what any page's fetch("http://127.0.0.1:8001/...",
# {method: "POST"}) or a rebound name sends.
st, _, body = req(A, "POST", "/workers/0/disable", "evil.example:%d" % A,
                  ["Origin: http://evil.example:%d" % A, JSON])
check("foreign Origin and Host: 403", st == 403, (st, body))
check("... and worker 0 stays enabled", admin_state(0) == "enabled", admin_state(0))

cases = [
    ("a foreign Origin, our Host", OWN, ["Origin: http://evil.example", JSON]),
    ("a foreign Origin on our port", OWN, ["Origin: http://evil.example:%d" % A, JSON]),
    ("Origin null (sandboxed frame, file:)", OWN, ["Origin: null", JSON]),
    ("an https Origin of our address", OWN, ["Origin: https://127.0.0.1:%d" % A, JSON]),
    ("our Origin on another port", OWN, ["Origin: http://127.0.0.1:%d" % (A + 1), JSON]),
    ("two Origins, one ours", OWN, ["Origin: http://" + OWN, "Origin: http://evil.example", JSON]),
    ("a foreign Host, no Origin (DNS rebinding)", "evil.example:%d" % A, [JSON]),
    ("our address, the wrong port in Host", "127.0.0.1:%d" % (A + 1), [JSON]),
    ("our address, no port in Host (port 80)", "127.0.0.1", [JSON]),
    ("a name that is not ours", "gpuslice.example:%d" % A, [JSON]),
]
for name, host, extra in cases:
    st, _, body = req(A, "POST", "/workers/0/disable", host, extra)
    check("%s: 403" % name, st == 403, (st, body))
st, _, body = req(A, "GET", "/workers", "evil.example:%d" % A)
check("a rebound page's GET /workers: 403, no listing", st == 403 and b"uuid" not in body, (st, body))
st, _, _ = req(A, "POST", "/workers/0/disable", None, [JSON])
check("HTTP/1.1 without Host: 400", st == 400, st)
st, _, _ = req(A, "POST", "/workers/0/disable", OWN, ["Host: evil.example", JSON])
check("two Host headers: 400", st == 400, st)
check("none of these disabled worker 0", admin_state(0) == "enabled", admin_state(0))

for name, extra in [("no Content-Type", []), ("text/plain", ["Content-Type: text/plain"]),
                    ("a form", ["Content-Type: application/x-www-form-urlencoded"]),
                    ("multipart", ["Content-Type: multipart/form-data; boundary=x"]),
                    ("application/jsonx", ["Content-Type: application/jsonx"])]:
    st, _, body = req(A, "POST", "/workers/0/disable", OWN, extra)
    check("a change with %s: 415" % name, st == 415 and b"application/json" in body, (st, body))
check("... and worker 0 stays enabled", admin_state(0) == "enabled", admin_state(0))

for host, origin in [(OWN, "http://" + OWN), ("localhost:%d" % A, "http://localhost:%d" % A),
                     ("LocalHost:%d" % A, None), ("[::1]:%d" % A, "http://[::1]:%d" % A),
                     ("127.0.0.2:%d" % A, None)]:
    extra = ["Content-Type: application/json; charset=utf-8"]
    if origin:
        extra.append("Origin: " + origin)
    st, _, body = req(A, "POST", "/workers/1/disable", host, extra)
    ok = st == 200 and json.loads(body)["admin"] == "disabled"
    st, _, body = req(A, "POST", "/workers/1/enable", host, extra)
    check("Host %s%s: drives the API" % (host, ", Origin " + origin if origin else ""),
          ok and st == 200 and json.loads(body)["admin"] == "enabled", (st, body))
st, _, body = raw(A, "GET /workers HTTP/1.0\r\n\r\n")
check("HTTP/1.0 without Host (nc, curl -0): 200", st == 200 and len(json.loads(body)["workers"]) == 2,
      (st, body[:200]))

for method, path, allow in [("DELETE", "/workers", "GET, HEAD"), ("PUT", "/workers", "GET, HEAD"),
                            ("DELETE", "/workers/0", "GET, HEAD"), ("POST", "/workers", "GET, HEAD"),
                            ("GET", "/workers/0/disable", "POST"),
                            ("DELETE", "/workers/0/disable", "POST"),
                            ("OPTIONS", "/workers/0/disable", "POST")]:
    st, hdr, body = req(A, method, path, OWN, [JSON, "Origin: http://" + OWN])
    check("%s %s: 405, Allow: %s, no listing" % (method, path, allow),
          st == 405 and hdr.get("allow") == allow and b"uuid" not in body and
          "access-control-allow-origin" not in hdr, (st, hdr, body[:200]))
check("... and worker 0 stays enabled", admin_state(0) == "enabled", admin_state(0))
st, hdr, body = req(A, "HEAD", "/workers", OWN)
check("HEAD /workers: 200 without a body", st == 200 and body == b"" and
      int(hdr.get("content-length", "0")) > 0, (st, hdr, body))

os.kill(SERVE, signal.SIGTERM)
finish()
EOF
serve_collect "$tmp/py.out" "$tmp/serve.err"

# ---- with a token: the 401 ----
echo "s3cret-admin-token-0123456789" >"$tmp/token"
"$bin" -q serve --listen 127.0.0.1:0 --admin-listen 127.0.0.1:0 --ephemeral-ports \
  --admin-token-file "$tmp/token" -- sleep 600 >"$tmp/serve2.out" 2>"$tmp/serve2.err" &
serve_pid=$!
PYTHONPATH="$src/tests/lib:$tmp" timeout 60 python3 - "$serve_pid" "$tmp" <<'EOF' | tee "$tmp/py2.out"
import json, os, signal, sys
from gstest import check, finish, port_of, read
from raw import req

SERVE, TMP = int(sys.argv[1]), sys.argv[2]
A = port_of(TMP + "/serve2.out", "admin on")
if not A:
    check("serve with a token starts", False, read(TMP + "/serve2.err"))
    finish()
OWN = "127.0.0.1:%d" % A
TOKEN = open(TMP + "/token").read().strip()
st, hdr, body = req(A, "GET", "/workers", OWN)
cl = int(hdr.get("content-length", "-1"))
try:
    msg = json.loads(body).get("error")
except ValueError:
    msg = None
check("no token: 401, Content-Length %d for a %d-byte body" % (cl, len(body)),
      st == 401 and cl == len(body), (st, hdr, body))
check("... the body is whole JSON naming the bearer token", msg == "a valid bearer token is required",
      body)
check("... and WWW-Authenticate: Bearer", hdr.get("www-authenticate") == "Bearer", hdr)
st, _, body = req(A, "GET", "/workers", OWN, ["Authorization: Bearer " + TOKEN])
check("the token: 200", st == 200, (st, body[:200]))
st, _, body = req(A, "POST", "/workers/0/disable", OWN,
                  ["Authorization: Bearer " + TOKEN, "Origin: http://evil.example",
                   "Content-Type: application/json"])
check("the token with a foreign Origin: still 403", st == 403, (st, body))
os.kill(SERVE, signal.SIGTERM)
finish()
EOF
serve_collect "$tmp/py2.out" "$tmp/serve2.err"
summary
