#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-grpc-stream-flow.sh: a gRPC stream through serve obeys flow control
# both ways (issue 20; issue 14: no client exhausts a daemon). A client
# (HTTP/2 frames by hand, tests/lib/h2raw.py, the default 64 KiB windows)
# sends 6,000 ModelStreamInfer requests (28 MB) on one stream as fast as
# its window allows and reads nothing: it is held back after less than half
# (the worker holds its input once 64 requests wait or 1 MiB of answers is
# unread; serve holds the client's once 1 MiB waits for the worker's
# window), and neither serve's nor the worker's resident memory grows by 8
# MiB; serve passes on no more answers than the client's window. Then the
# client reads: every request goes, every answer comes back in order, and
# the stream ends with trailers. Ends with "N passed, N failed".
set -uo pipefail

bin=${GS_BIN:-$(dirname "$0")/../../build/gpuslice}
src=${GS_SRC:-$(dirname "$0")/../..}
py=/usr/bin/python3 # Debian's, where python3-protobuf lives
. "$src/tests/lib/common.sh"
tmp=$(mktemp -d "${GS_TEST_TMP:-/tmp}/gflow.XXXXXX" 2>/dev/null || mktemp -d)
export GPUSLICE_EMU_STATE=$tmp/emu.json
pids=()
trap gs_stop_pids EXIT

if ! "$py" -c 'import google.protobuf' 2>/dev/null || ! command -v protoc >/dev/null; then
  echo "FAIL: python3-protobuf and protobuf-compiler are needed (scripts/deps.sh)"
  echo "0 passed, 1 failed"
  exit 1
fi
protoc --proto_path="$src/proto" --python_out="$tmp" "$src/proto/inference.proto" ||
  { echo "FAIL: protoc"; echo "0 passed, 1 failed"; exit 1; }
"$bin" -q emu reset --emulate a100-40gb >/dev/null || { echo "FAIL: emu reset"; exit 1; }
"$bin" -q apply -f "$src/configs/a100-40gb.mig-parted.yaml" -c all-7g.40gb >/dev/null ||
  { echo "FAIL: apply all-7g.40gb"; exit 1; }

# under AddressSanitizer, freed memory is given back at once (no quarantine)
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=0" \
  "$bin" -q serve --listen 127.0.0.1:0 --grpc-listen 127.0.0.1:0 --admin-listen 127.0.0.1:0 \
  --ephemeral-ports --worker-timeout 60000 --log-dir "$tmp" -- \
  "$bin" worker --listen '127.0.0.1:{port}' --grpc-listen '127.0.0.1:{grpc_port}' \
  --profile '{profile}' >"$tmp/serve.out" 2>"$tmp/serve.err" &
serve_pid=$!
pids+=($serve_pid)
disown

PYTHONPATH="$src/tests/lib" timeout 170 "$py" - "$tmp" "$serve_pid" <<'EOF' | tee "$tmp/py.out"
import json, os, re, struct, sys, time, urllib.request
sys.path.insert(0, sys.argv[1])
import gstest
import h2raw
from gstest import check, port_of, read, wait_for
import inference_pb2 as pb

TMP, SERVE = sys.argv[1], int(sys.argv[2])
N = 6000
gport, aport = port_of(os.path.join(TMP, "serve.out"), "grpc on"), port_of(os.path.join(TMP, "serve.out"), "admin on")
check("serve prints its gRPC and admin ports", gport and aport, read(os.path.join(TMP, "serve.err")))

def get(url):
    try:
        with urllib.request.urlopen(url, timeout=5) as f:
            return f.read().decode()
    except Exception:
        return ""

def workers():
    try:
        return json.loads(get("http://127.0.0.1:%d/workers" % aport))["workers"]
    except Exception:
        return []
check("the worker joins", wait_for(lambda: any(w.get("in_pool") for w in workers()), 60), workers())
wport, wpid = workers()[0]["port"], workers()[0]["pid"]

def inferences():
    m = re.search(r"^nv_inference_count\{[^}]*model=\"bert-large\"[^}]*\} (\d+)",
                  get("http://127.0.0.1:%d/metrics" % wport), re.M)
    return int(m.group(1)) if m else -1

def rss(pid):
    with open("/proc/%d/status" % pid) as f:
        return int(re.search(r"VmRSS:\s+(\d+) kB", f.read()).group(1)) * 1024

class Reader(h2raw.Conn):
    """Keeps stream 1's DATA and notes its trailers (HEADERS with END_STREAM)."""
    def __init__(self, port):
        self.body, self.heads, self.ended = b"", 0, False
        super().__init__(port)

    def _apply(self, ftype, flags, sid, payload):
        if sid == 1 and ftype == h2raw.DATA:
            self.body += payload
            self.ended |= bool(flags & h2raw.END_STREAM)
        elif sid == 1 and ftype == h2raw.HEADERS:
            self.heads += 1
            self.ended |= bool(flags & h2raw.END_STREAM)
        super()._apply(ftype, flags, sid, payload)

def request(i):
    q = pb.ModelInferRequest(model_name="bert-large", id="r%d" % i)
    for n in ("input_ids", "attention_mask", "token_type_ids"):
        q.inputs.add(name=n, datatype="INT32", shape=[1, 384])
        q.raw_input_contents.append(b"\1\0\0\0" * 384)
    b = q.SerializeToString()
    return h2raw.grpc_prefix(len(b)) + b

c = Reader(gport)
c.pump(1)
before, wbefore = rss(SERVE), rss(wpid)
c.sendall(h2raw.grpc_headers(1, "ModelStreamInfer"))
peak, wpeak, sent, base = before, wbefore, 0, inferences()
reqs = b"".join(request(i) for i in range(N))
total = len(reqs)

def send_some(secs):
    """Sends what the window lets through for secs, reading only frames."""
    global sent, peak, wpeak
    end = time.time() + secs
    while sent < total and time.time() < end and not c.closed and 1 not in c.reset:
        n = c.data(1, reqs[sent:sent + (1 << 20)], end=sent + (1 << 20) >= total)
        sent += n
        c.pump(0 if n else 0.05)
        peak, wpeak = max(peak, rss(SERVE)), max(wpeak, rss(wpid))

send_some(10)  # as fast as allowed, reading no answer
computed = inferences() - base
print("with no answer read: %d of %d request bytes taken (%d requests computed); serve %.1f MiB "
      "(at most %.1f), worker %.1f MiB (at most %.1f)" % (sent, total, computed, before / 1048576,
      peak / 1048576, wbefore / 1048576, wpeak / 1048576))
check("a client that sends %d requests (%d bytes) unpaced and reads nothing is held back "
      "(at most half taken)" % (N, total), 0 < sent < total // 2, (sent, total, c.reset, c.closed))
# what each may hold by design: about 1 MiB of requests in each window and
# wait, 1 MiB of answers, the allocators' slack (more under ASan)
check("serve's memory grows by less than 8 MiB meanwhile", peak - before < 8 << 20,
      "grew %.1f MiB (from %.1f MiB)" % ((peak - before) / 1048576, before / 1048576))
check("the worker's memory grows by less than 8 MiB meanwhile", wpeak - wbefore < 8 << 20,
      "grew %.1f MiB (from %.1f MiB)" % ((wpeak - wbefore) / 1048576, wbefore / 1048576))
got = len(c.body)
check("the client received at most about its 64 KiB window meanwhile", got <= 65535 + 16384, got)

c.send(h2raw.frame(h2raw.WINDOW_UPDATE, 0, 0, struct.pack(">I", 1 << 30)) +
       h2raw.frame(h2raw.WINDOW_UPDATE, 0, 1, struct.pack(">I", 1 << 30)))
send_some(120)  # the client reads now: the rest goes as the worker computes
check("once it reads, it sends every request", sent == total, (sent, total, c.reset, c.closed))
end = time.time() + 60
while not c.ended and not c.closed and time.time() < end:
    c.pump(0.1)
ids, off, errs = [], 0, []
while off + 5 <= len(c.body):
    n = struct.unpack(">I", c.body[off + 1:off + 5])[0]
    r = pb.ModelStreamInferResponse.FromString(c.body[off + 5:off + 5 + n])
    ids.append(r.infer_response.id)
    if r.error_message:
        errs.append(r.error_message)
    off += 5 + n
check("then the client reads every answer, in order, with no error",
      ids == ["r%d" % i for i in range(N)] and not errs and off == len(c.body),
      (len(ids), ids[:3], errs[:2]))
check("and the stream ends with trailers, not a reset", c.ended and c.heads == 2 and 1 not in c.reset,
      (c.ended, c.heads, c.reset))
c.close()
print("%d passed, %d failed" % (gstest.passed, gstest.failed))
sys.exit(1 if gstest.failed else 0)
EOF
rc=${PIPESTATUS[0]}
if ! grep -Eq '^[0-9]+ passed, [0-9]+ failed' "$tmp/py.out"; then
  echo "test-grpc-stream-flow: the client did not finish (rc $rc)"
  tail -n 5 "$tmp/serve.err"
  echo "0 passed, 1 failed"
  exit 1
fi
exit "$rc"
