#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-grpc-stream.sh: serve's gRPC listener against what a Triton client
# meets (issue 20), with Debian's python3-grpcio and nghttp (clients we did
# not write), over 2 emulated 3g.20gb workers:
# - a non-gRPC content-type is HTTP 415;
# - an unknown method is UNIMPLEMENTED while the client holds its stream open;
# - ModelStreamInfer is carried: answers in order with their ids, errors as
#   error_message, the stream pinned to one worker (in flight there while open);
# - kill -9 of that worker ends the client's stream with UNAVAILABLE, and a
#   new stream then works on the other worker.
# Ends with "N passed, N failed".
set -uo pipefail

bin=${GS_BIN:-$(dirname "$0")/../../build/gpuslice}
src=${GS_SRC:-$(dirname "$0")/../..}
py=/usr/bin/python3 # Debian's, where python3-grpcio and python3-protobuf live
. "$src/tests/lib/common.sh"
tmp=$(gs_tmpdir gstream)
export GPUSLICE_EMU_STATE=$tmp/emu.json
pids=()
cleanup() {
  for p in "${pids[@]}"; do
    kill "$p" 2>/dev/null # serve stops its workers on SIGTERM
    for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$p" 2>/dev/null
  done
  rm -rf "$tmp"
}
trap cleanup EXIT

gs_grpc_proto "$py" nghttp
"$bin" -q emu reset --emulate a100-40gb >/dev/null || { echo "FAIL: emu reset"; exit 1; }
"$bin" -q apply -f "$src/configs/a100-40gb.mig-parted.yaml" -c all-3g.20gb >/dev/null ||
  { echo "FAIL: apply all-3g.20gb"; exit 1; }

"$bin" -q serve --listen 127.0.0.1:0 --grpc-listen 127.0.0.1:0 --admin-listen 127.0.0.1:0 \
  --ephemeral-ports --worker-timeout 30000 --log-dir "$tmp" -- \
  "$bin" worker --listen '127.0.0.1:{port}' --grpc-listen '127.0.0.1:{grpc_port}' \
  --profile '{profile}' --time-scale 20 >"$tmp/serve.out" 2>"$tmp/serve.err" &
serve_pid=$!
pids+=($serve_pid)
disown

PYTHONPATH="$src/tests/lib" timeout 150 "$py" - "$tmp" <<'EOF' | tee "$tmp/py.out"
import json, os, signal, struct, subprocess, sys, urllib.request
sys.path.insert(0, sys.argv[1])
import grpc
import gstest
from gstest import Held, check, port_of, read, wait_for
import inference_pb2 as pb

TMP = sys.argv[1]
SVC = "/inference.GRPCInferenceService/"
sout = os.path.join(TMP, "serve.out")
gport, aport = port_of(sout, "grpc on"), port_of(sout, "admin on")
check("serve prints its gRPC and admin ports", gport and aport, read(os.path.join(TMP, "serve.err")))

def workers():
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/workers" % aport, timeout=5) as f:
            return json.load(f)["workers"]
    except Exception:
        return []
check("2 workers join", wait_for(lambda: sum(w.get("in_pool", False) for w in workers()) == 2, 60),
      workers())

# ---- 415 ----
with open(os.path.join(TMP, "live.bin"), "wb") as f:
    f.write(b"\0\0\0\0\0")
r = subprocess.run(["nghttp", "-v", "-d", os.path.join(TMP, "live.bin"), "-H", "content-type: text/plain",
                    "http://127.0.0.1:%d%sServerLive" % (gport, SVC)], capture_output=True, timeout=60)
out = r.stdout.decode("latin-1")
check("serve: a text/plain call on the gRPC listener is HTTP 415", ":status: 415" in out and
      "grpc-status" not in out, out[-600:])

ch = grpc.insecure_channel("127.0.0.1:%d" % gport)
def stream(method, resp, reqs, timeout=60):
    return ch.stream_stream(SVC + method, request_serializer=lambda m: m.SerializeToString(),
                            response_deserializer=resp.FromString)(reqs, timeout=timeout)

# ---- unknown method, stream held open ----
held = Held()
held.put(pb.ServerLiveRequest())
try:
    next(stream("NoSuchMethod", pb.ServerLiveResponse, held, timeout=20))
    code = (grpc.StatusCode.OK, "")
except grpc.RpcError as e:
    code = (e.code(), e.details())
check("serve: an unknown method is UNIMPLEMENTED while the client holds its stream open",
      code[0] == grpc.StatusCode.UNIMPLEMENTED and not held.ended, (code, held.ended))
held.end()

# ---- ModelStreamInfer through serve ----
def bert(id_, shape=384):
    q = pb.ModelInferRequest(model_name="bert-large", id=id_)
    for n in ("input_ids", "attention_mask", "token_type_ids"):
        t = q.inputs.add(name=n, datatype="INT32", shape=[1, shape])
        t.contents.int_contents.extend([1] * shape)
    return q

held = Held()
answers = stream("ModelStreamInfer", pb.ModelStreamInferResponse, held)
held.put(bert("s1"))
try:
    a1 = next(answers)
except (grpc.RpcError, StopIteration) as e:
    a1 = pb.ModelStreamInferResponse(error_message="no answer: %s" % e.code())
check("serve: a streamed request is answered while the stream stays open",
      not held.ended and a1.error_message == "" and a1.infer_response.id == "s1", str(a1)[:300])
busy = [w for w in workers() if w.get("inflight")]
check("serve: the open stream is in flight on exactly one worker", len(busy) == 1, workers())
held.put(bert("s2"))
held.put(bert("s3", shape=3))
held.put(bert("s4"))
held.end()
try:
    rest = list(answers)
except grpc.RpcError:
    rest = []
check("serve: answers in order with their ids, an error as error_message",
      [r.infer_response.id for r in rest] == ["s2", "s3", "s4"] and rest[1].error_message and
      not rest[0].error_message and not rest[2].error_message,
      [(r.infer_response.id, r.error_message[:60]) for r in rest])
check("serve: the stream ends OK", answers.code() == grpc.StatusCode.OK, answers.code())
check("serve: the finished stream holds no worker",
      wait_for(lambda: not any(w.get("inflight") for w in workers()), 5), workers())

# ---- the pinned worker dies ----
held = Held()
answers = stream("ModelStreamInfer", pb.ModelStreamInferResponse, held)
held.put(bert("k1"))
try:
    next(answers)
except grpc.RpcError:
    pass
busy = [w for w in workers() if w.get("inflight")]
if len(busy) == 1 and busy[0].get("pid"):
    os.kill(busy[0]["pid"], signal.SIGKILL)
try:
    list(answers)
    code = grpc.StatusCode.OK
except grpc.RpcError as e:
    code = e.code()
check("serve: kill -9 of the stream's worker ends the client's stream UNAVAILABLE",
      len(busy) == 1 and code == grpc.StatusCode.UNAVAILABLE and not held.ended, (code, busy))
held.end()
# A stream is pinned at its start, and is not moved once its worker fails: one
# opened in the instant before serve hears of the death would meet it. So the
# next one starts once the dead worker is out of the pool (its pid gone).
dead = busy[0].get("pid") if len(busy) == 1 else None
check("serve: the dead worker leaves the pool",
      wait_for(lambda: not any(w.get("pid") == dead and w.get("in_pool") for w in workers()), 10),
      workers())
answers = stream("ModelStreamInfer", pb.ModelStreamInferResponse, iter([bert("n1")]))
try:
    got = [r.infer_response.id for r in answers]
except grpc.RpcError as e:
    got = e.code()
check("serve: a new stream is answered after the kill", got == ["n1"], got)
ch.close()
print("%d passed, %d failed" % (gstest.passed, gstest.failed))
sys.exit(1 if gstest.failed else 0)
EOF
rc=${PIPESTATUS[0]}
gs_py_end test-grpc-stream "$rc" "$tmp/serve.err"
