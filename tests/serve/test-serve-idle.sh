#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-serve-idle.sh: idle connections cannot lock clients out of `gpuslice
# serve` (issue 14 item 6). 2,000 connections that send nothing are held on
# the HTTP port and 2,000 on the gRPC port (each listener has its own
# --max-conns, 1024 by default; what the server closes is opened again at
# within 50 ms) while an honest client sends 100 HTTP requests and 20 gRPC calls
# (grpcio), each on a new connection, over more than the 10 s head timeout:
# every one is answered, because a full listener closes its oldest idle
# connection to admit a new one, as nginx and HAProxy do. Then a silent
# HTTP connection and a gRPC one without preface are closed at the head
# timeout (10 s), not kept for the 60 s keep-alive timeout. The test raises
# its own RLIMIT_NOFILE to the hard limit for its 4,000 sockets (serve
# raises its own at start).
set -uo pipefail

bin=${GS_BIN:-$(dirname "$0")/../../build/gpuslice}
src=${GS_SRC:-$(dirname "$0")/../..}
py=/usr/bin/python3 # Debian's, where python3-grpcio lives
. "$src/tests/lib/common.sh"
gs_serve_test serve-idle

gs_need_grpcio "$py"
gs_emu_layout all-3g.20gb
"$bin" -q serve --listen 127.0.0.1:0 --grpc-listen 127.0.0.1:0 --admin-listen off \
  --ephemeral-ports -- "$bin" worker --listen '127.0.0.1:{port}' \
  --grpc-listen '127.0.0.1:{grpc_port}' --profile '{profile}' >"$tmp/serve.out" 2>"$tmp/serve.err" &
serve_pid=$!

PYTHONPATH="$src/tests/lib" timeout 150 "$py" - "$serve_pid" "$tmp" <<'EOF' | tee "$tmp/py.out"
import os, resource, selectors, signal, socket, sys, threading, time
import grpc
from gstest import check, finish, http_status, port_of, read, wait_for, serve_port

SERVE, TMP = int(sys.argv[1]), sys.argv[2]
OUT = TMP + "/serve.out"
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
ok = wait_for(lambda: read(OUT).count("joined the pool") >= 2, 60)
PORT, GPORT = serve_port(OUT), port_of(OUT, "grpc on")
check("serve starts with 2 workers", ok and PORT and GPORT, read(OUT) + read(TMP + "/serve.err"))
if not (ok and PORT and GPORT):
    finish()
N = 2000

# ---- the idle crowd, kept at N per port ----
stop = threading.Event()
reopened = [0]
def crowd(port):
    sel = selectors.DefaultSelector()
    def dial():
        s = socket.socket()
        s.setblocking(False)
        s.connect_ex(("127.0.0.1", port))
        sel.register(s, selectors.EVENT_READ)
    for _ in range(N):
        dial()
    owed, next_at = 0, time.time()
    while not stop.is_set():
        for key, _ in sel.select(timeout=0.05):
            try:
                data = key.fileobj.recv(4096)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            if not data:  # closed by the server: opened again (20 every 50 ms at most)
                sel.unregister(key.fileobj)
                key.fileobj.close()
                owed += 1
        if owed and time.time() >= next_at:
            next_at = time.time() + 0.05
            for _ in range(min(owed, 20)):
                reopened[0] += 1
                owed -= 1
                dial()
    for key in list(sel.get_map().values()):
        key.fileobj.close()
threads = [threading.Thread(target=crowd, args=(p,)) for p in (PORT, GPORT)]
for t in threads:
    t.start()
time.sleep(2)

# ---- an honest client meanwhile: a new connection each time ----
statuses, codes = [], []
t0 = time.time()
for i in range(100):
    statuses.append(http_status(PORT, "/v2/health/ready", 10))
    if i % 5 == 0:
        ch = grpc.insecure_channel("127.0.0.1:%d" % GPORT, options=[("grpc.use_local_subchannel_pool", 1)])
        try:
            ch.unary_unary("/inference.GRPCInferenceService/ServerLive")(b"", timeout=10)
            codes.append("OK")
        except grpc.RpcError as e:
            codes.append(str(e.code()))
        ch.close()
    time.sleep(0.12)
spent = time.time() - t0
stop.set()
for t in threads:
    t.join(30)
print("%d HTTP requests and %d gRPC calls over %.1f s beside 2 x %d idle connections "
      "(%d closed by serve and opened again)" % (len(statuses), len(codes), spent, N, reopened[0]))
check("every HTTP request is answered 200", statuses == [200] * 100,
      [s for s in statuses if s != 200][:5])
check("every gRPC call is answered OK", codes == ["OK"] * 20, [c for c in codes if c != "OK"][:5])
check("the idle crowd outlived the head timeout (%.1f s)" % spent, spent > 10.5)

# ---- silent connections end at the head timeout ----
def closed_after(port, preface=b""):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(preface)
    s.settimeout(40)
    t = time.time()
    try:
        while s.recv(4096):
            pass
    except OSError:
        pass
    s.close()
    return time.time() - t
h, g2 = [None], [None]
ts = [threading.Thread(target=lambda: h.__setitem__(0, closed_after(PORT))),
      threading.Thread(target=lambda: g2.__setitem__(0, closed_after(GPORT)))]
for t in ts: t.start()
for t in ts: t.join()
print("a silent HTTP connection was closed after %.1f s, a gRPC one without preface after %.1f s"
      % (h[0], g2[0]))
check("a silent HTTP connection is closed at the head timeout, not kept 60 s", h[0] < 30, h[0])
check("a gRPC connection without preface is closed at the head timeout", g2[0] < 30, g2[0])
os.kill(SERVE, signal.SIGTERM)
finish()
EOF

serve_summary "$tmp/py.out" "$tmp/serve.err"
