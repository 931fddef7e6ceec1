#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-grpc-limits.sh: `gpuslice serve --grpc-listen` under HTTP/2 clients
# that try to take its memory (issue 14 item 5), frames written by hand
# (tests/lib/h2raw.py) next to Debian's python3-grpcio as the honest client:
# the server offers 100 concurrent streams; 24 unfinished 40 MiB messages on
# one connection, then on 8 at once, are refused at once (RST_STREAM after
# an answer) instead of being granted window; the worst case under the
# limits (4 connections x 24 messages just under the 16 MiB maximum, never
# finished) holds the memory budget, when an honest small call still
# succeeds and a large one is RESOURCE_EXHAUSTED, until the attackers go;
# an unfinished message is cut off at the read timeout. Prints serve's peak
# RSS (VmHWM) over it all, which must stay under 100 MB (not checked under
# AddressSanitizer, whose shadow memory and quarantine are most of the RSS).
set -uo pipefail

bin=${GS_BIN:-$(dirname "$0")/../../build/gpuslice}
src=${GS_SRC:-$(dirname "$0")/../..}
py=/usr/bin/python3 # Debian's, where python3-grpcio lives
. "$src/tests/lib/common.sh"
gs_serve_test grpc-limits

gs_need_grpcio "$py"
asan=$(gs_asan)
gs_serve_grpc

PYTHONPATH="$src/tests/lib" timeout 150 "$py" - "$serve_pid" "$tmp" "$asan" <<'EOF' | tee "$tmp/py.out"
import os, signal, sys, time
import grpc
import h2raw
from gstest import check, check_peak_rss, finish, grpc_serve_started, vm_bytes

SERVE, TMP, ASAN = int(sys.argv[1]), sys.argv[2], sys.argv[3] == "1"
MIB = 1 << 20

_, GPORT = grpc_serve_started(TMP)
rss0 = vm_bytes(SERVE, "VmRSS")
peak = [rss0]
STOP = 300 * MIB  # an unbounded server is stopped being fed here

def sample():
    peak[0] = max(peak[0], vm_bytes(SERVE, "VmRSS"))
    return peak[0]

def attack(nconns, nstreams, size, secs):
    """nconns connections, each with nstreams calls whose messages are size
    bytes, sent as far as the server grants window and never finished, for
    secs. Returns the connections (still open) and the bytes sent."""
    conns = [h2raw.Conn(GPORT) for _ in range(nconns)]
    payload = memoryview(h2raw.grpc_prefix(size) + bytes(size))
    sent = {}
    for c in conns:
        c.pump(1)
        for i in range(nstreams):
            sid = 2 * i + 1
            c.sendall(h2raw.grpc_headers(sid))
            sent[(c, sid)] = 0
    end = time.time() + secs
    while time.time() < end and sample() < STOP:
        moved = 0
        for (c, sid), n in sent.items():
            if n < len(payload) - 1 and sid not in c.reset:
                k = c.data(sid, payload[n:len(payload) - 1])  # never the last byte
                sent[(c, sid)] += k
                moved += k
        for c in conns:
            c.pump(0 if moved else 0.05)
    return conns, sum(sent.values())

# ---- stream limit ----
c = h2raw.Conn(GPORT)
c.pump(2)
mcs = c.server_settings.get(h2raw.SETTINGS_MAX_CONCURRENT_STREAMS)
check("the server offers 100 concurrent streams per connection (as Triton and Envoy)", mcs == 100, mcs)
c.close()

# ---- the issue's attack: 24 unfinished 40 MiB messages on one connection ----
conns, sent = attack(1, 24, 40 * MIB, 4)
refused = sum(len(c.reset) for c in conns)
print("24 x 40 MiB on 1 connection: %d MiB sent, %d of 24 streams refused, serve RSS peak %d MB"
      % (sent >> 20, refused, sample() >> 20))
check("40 MiB messages (over the 16 MiB maximum) are refused at once",
      refused == 24 and all(s in c.answered for c in conns for s in c.reset), (refused, sent))
for c in conns: c.close()
conns, sent = attack(8, 24, 40 * MIB, 4)
refused = sum(len(c.reset) for c in conns)
print("the same on 8 connections: %d MiB sent, %d of 192 streams refused, RSS peak %d MB"
      % (sent >> 20, refused, sample() >> 20))
check("... and on 8 connections at once", refused == 192, refused)
for c in conns: c.close()

# ---- the worst case under the limits: messages just under the maximum ----
ch = grpc.insecure_channel("127.0.0.1:%d" % GPORT)
live = ch.unary_unary(h2raw.SVC + "ServerLive")
infer = ch.unary_unary(h2raw.SVC + "ModelInfer")
def code_of(fn, *a):
    try:
        fn(*a, timeout=20)
        return grpc.StatusCode.OK, ""
    except grpc.RpcError as e:
        return e.code(), e.details()
check("an honest call succeeds before", code_of(live, b"")[0] == grpc.StatusCode.OK)
size = 15 * MIB
conns, sent = attack(4, 24, size, 5)
held = vm_bytes(SERVE, "VmRSS")
refused = sum(len(c.reset) for c in conns)
print("4 x 24 x 15 MiB, unfinished: %d MiB sent, %d of 96 streams refused, RSS %d MB now"
      % (sent >> 20, refused, held >> 20))
check("most such messages are refused (connection share and budget)", 90 <= refused < 96,
      (refused, sent >> 20))
code, msg = code_of(live, b"")
check("while the attackers hold the budget, an honest small call succeeds",
      code == grpc.StatusCode.OK, (code, msg))
code, msg = code_of(infer, bytes(8 * MIB))
check("... and a large one is RESOURCE_EXHAUSTED, not buffered",
      code == grpc.StatusCode.RESOURCE_EXHAUSTED and "retry later" in msg, (code, msg))
for c in conns: c.close()
time.sleep(0.5)
code, msg = code_of(infer, bytes(8 * MIB))
check("once the attackers are gone the large call is taken (the worker refuses its content)",
      code == grpc.StatusCode.INVALID_ARGUMENT, (code, msg))
ch.close()

# ---- an unfinished message is cut off at the read timeout (10 s) ----
c = h2raw.Conn(GPORT)
c.pump(1)
c.sendall(h2raw.grpc_headers(1))
c.data(1, h2raw.grpc_prefix(MIB) + bytes(1000))
t0 = time.time()
while time.time() - t0 < 25 and 1 not in c.reset and not c.closed:
    c.pump(0.5)
print("an unfinished message was answered and reset after %.1f s" % (time.time() - t0))
check("an unfinished message is answered and reset at the read timeout",
      1 in c.answered and 1 in c.reset, (c.answered, c.reset, c.closed))
c.close()

print("serve RSS at start: %d MB" % (rss0 >> 20))
check_peak_rss(SERVE, ASAN, "under every attack above")
os.kill(SERVE, signal.SIGTERM)
finish()
EOF

serve_summary "$tmp/py.out" "$tmp/serve.err"
