#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-worker-proto.sh: the worker against Triton's protocol where a Triton
# client's tools would misread it (issue 20), over loopback, with clients we
# did not write (Debian's python3-grpcio, nghttp from nghttp2-client):
# - a non-gRPC content-type on the gRPC port is HTTP 415 (no grpc-status);
# - server metadata lists the same extensions over gRPC and HTTP;
# - grpc-timeout (every unit: H M S m u n) ends the call DEADLINE_EXCEEDED and
#   takes it off the modelled slice, so the next request does not wait for it;
# - a raw binary request (Inference-Header-Content-Length: 0) gets every
#   output binary, with Inference-Header-Content-Length;
# - unknown methods are UNIMPLEMENTED at once, with the stream still open;
#   ModelStreamInfer answers each request in order on an open stream.
# Ends with "N passed, N failed".
set -uo pipefail

bin=${GS_BIN:-$(dirname "$0")/../../build/gpuslice}
src=${GS_SRC:-$(dirname "$0")/../..}
py=/usr/bin/python3 # Debian's, where python3-grpcio and python3-protobuf live
. "$src/tests/lib/common.sh"
tmp=$(gs_tmpdir wproto)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT

gs_grpc_proto "$py" nghttp

# fast: as modelled; slow: every modelled time x300 (bert-large about 1.9 s
# on 1g.5gb), so a deadline falls while a call is on the slice
"$bin" worker --listen 127.0.0.1:0 --grpc-listen 127.0.0.1:0 --profile 1g.5gb \
  >"$tmp/fast.out" 2>"$tmp/fast.err" &
pids+=($!)
"$bin" worker --listen 127.0.0.1:0 --grpc-listen 127.0.0.1:0 --profile 1g.5gb --time-scale 300 \
  >"$tmp/slow.out" 2>"$tmp/slow.err" &
pids+=($!)

PYTHONPATH="$src/tests/lib" timeout 150 "$py" - "$tmp" <<'EOF' | tee "$tmp/py.out"
import http.client, json, os, struct, subprocess, sys, threading, time
sys.path.insert(0, sys.argv[1])
import grpc
import gstest
from gstest import Held, check, port_of, read, wait_for
import inference_pb2 as pb

TMP = sys.argv[1]
SVC = "/inference.GRPCInferenceService/"
FLOWER_N = 3 * 224 * 224

def ports(name):
    out = os.path.join(TMP, name + ".out")
    return port_of(out, "listening on"), port_of(out, "grpc listening on")

HF, GF = ports("fast")
HS, GS = ports("slow")
check("both workers start", None not in (HF, GF, HS, GS), read(os.path.join(TMP, "slow.err")))

def call(port, method, req, resp_type, timeout=30):
    with grpc.insecure_channel("127.0.0.1:%d" % port) as ch:
        f = ch.unary_unary(SVC + method, request_serializer=lambda m: m.SerializeToString(),
                           response_deserializer=resp_type.FromString)
        return f(req, timeout=timeout)

def hreq(port, method, path, body=None, headers=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request(method, path, body=body, headers=headers or {})
    r = c.getresponse()
    d = r.read()
    c.close()
    return r, d

def bert_req():
    q = pb.ModelInferRequest(model_name="bert-large", id="b")
    for n in ("input_ids", "attention_mask", "token_type_ids"):
        t = q.inputs.add(name=n, datatype="INT32", shape=[1, 384])
        t.contents.int_contents.extend([1] * 384)
    return q

def framed(msg):
    body = msg.SerializeToString()
    return b"\0" + struct.pack(">I", len(body)) + body

def nghttp(port, method, data, headers):
    """One call with nghttp (it keeps no deadline of its own): its -v trace."""
    path = os.path.join(TMP, "req.bin")
    with open(path, "wb") as f:
        f.write(data)
    args = ["nghttp", "-v", "-d", path]
    for h in headers:
        args += ["-H", h]
    r = subprocess.run(args + ["http://127.0.0.1:%d%s%s" % (port, SVC, method)],
                       capture_output=True, timeout=60)
    return r.stdout.decode("latin-1")

# ---- item 4: content-type ----
out = nghttp(GF, "ServerLive", framed(pb.ServerLiveRequest()),
             ["content-type: text/plain", "te: trailers"])
check("a text/plain call on the gRPC port is HTTP 415, with no grpc-status",
      ":status: 415" in out and "grpc-status" not in out, out[-800:])
out = nghttp(GF, "ServerLive", framed(pb.ServerLiveRequest()), ["te: trailers"])
check("a call with no content-type is HTTP 415", ":status: 415" in out, out[-800:])
out = nghttp(GF, "ServerLive", framed(pb.ServerLiveRequest()),
             ["content-type: application/grpc+proto", "te: trailers"])
check("application/grpc+proto is served (grpc-status 0)",
      ":status: 200" in out and "grpc-status: 0" in out, out[-800:])
out = nghttp(GF, "ServerLive", framed(pb.ServerLiveRequest()),
             ["content-type: application/grpcx", "te: trailers"])
check("application/grpcx is not gRPC: 415", ":status: 415" in out, out[-800:])
check("grpcio still gets its answer", call(GF, "ServerLive", pb.ServerLiveRequest(),
                                           pb.ServerLiveResponse).live)

# ---- item 5: one extensions list ----
r = call(GF, "ServerMetadata", pb.ServerMetadataRequest(), pb.ServerMetadataResponse)
_, d = hreq(HF, "GET", "/v2")
meta = json.loads(d)
check("server metadata extensions are the same over gRPC and HTTP",
      list(r.extensions) == meta["extensions"] and "binary_tensor_data" in meta["extensions"],
      (list(r.extensions), meta["extensions"]))

# ---- item 2: a raw binary request gets binary outputs ----
raw = struct.pack("<%df" % FLOWER_N, *[float(i % 7) for i in range(FLOWER_N)])
r, d = hreq(HF, "POST", "/v2/models/flower/infer", raw,
            {"Inference-Header-Content-Length": "0", "Content-Type": "application/octet-stream"})
hl = r.getheader("Inference-Header-Content-Length")
ok = r.status == 200 and hl is not None
if ok:
    head = json.loads(d[:int(hl)])
    o = head["outputs"][0]
    ok = ("data" not in o and o["parameters"]["binary_data_size"] == 408 and
          len(d) == int(hl) + 408)
check("a raw binary request gets its output in binary, with Inference-Header-Content-Length",
      ok, (r.status, hl, d[:200]))
# the same tensor sent as JSON + binary, output asked binary: the same bytes
js = json.dumps({"inputs": [{"name": "input", "datatype": "FP32", "shape": [1, 3, 224, 224],
                             "parameters": {"binary_data_size": len(raw)}}],
                 "outputs": [{"name": "output", "parameters": {"binary_data": True}}]}).encode()
r2, d2 = hreq(HF, "POST", "/v2/models/flower/infer", js + raw,
              {"Inference-Header-Content-Length": str(len(js))})
hl2 = int(r2.getheader("Inference-Header-Content-Length") or -1)
check("the raw request's output bytes are the binary-JSON request's", ok and d[int(hl):] == d2[hl2:])

# ---- item 3: grpc-timeout on the worker ----
def metric(port, name, model="bert-large"):
    _, d = hreq(port, "GET", "/metrics")
    for line in d.decode().splitlines():
        if line.startswith(name + "{") and 'model="%s"' % model in line:
            return int(float(line.rsplit(" ", 1)[1]))
    return None

_, d = hreq(HS, "GET", "/v2/models/bert-large")
compute_ms = json.loads(d)["modelled_compute_us"] / 1000
check("the slow worker's bert-large takes over a second", compute_ms > 1000, compute_ms)
# DEADLINE_EXCEEDED can only come before the modelled time: after it the call is OK
for unit in ("40m", "40000u", "40000000n", "1S"):
    out = nghttp(GS, "ModelInfer", framed(bert_req()),
                 ["content-type: application/grpc", "te: trailers", "grpc-timeout: " + unit])
    check("grpc-timeout %s: DEADLINE_EXCEEDED from the worker, before the modelled time" % unit,
          "grpc-status: 4" in out, out[-600:])
    check("grpc-timeout %s: the expired call left the slice" % unit,
          wait_for(lambda: metric(HS, "nv_inference_pending_request_count") == 0, 0.5),
          metric(HS, "nv_inference_pending_request_count"))
for unit in ("1M", "1H"):
    out = nghttp(GS, "ModelInfer", framed(bert_req()),
                 ["content-type: application/grpc", "te: trailers", "grpc-timeout: " + unit])
    check("grpc-timeout %s (not reached): OK" % unit, "grpc-status: 0" in out, out[-600:])

# an expired call on the slice frees it for the next: an HTTP request sent
# while it computes waits for its deadline, not for its modelled time
res = {}
def expiring():
    res["out"] = nghttp(GS, "ModelInfer", framed(bert_req()),
                        ["content-type: application/grpc", "te: trailers", "grpc-timeout: 300m"])
t = threading.Thread(target=expiring)
t.start()
wait_for(lambda: metric(HS, "nv_inference_pending_request_count") == 1, 5)
ids = {"name": "input_ids", "datatype": "INT32", "shape": [1, 384], "data": [1] * 384}
doc = {"inputs": [dict(ids, name=n) for n in ("input_ids", "attention_mask", "token_type_ids")]}
r, _ = hreq(HS, "POST", "/v2/models/bert-large/infer", json.dumps(doc).encode(),
            {"Content-Type": "application/json"})
t.join(30)
queue_us = int(r.getheader("X-Gpuslice-Queue-Us") or -1)
check("the next request's queue time is the expired call's deadline, not its modelled time",
      "grpc-status: 4" in res.get("out", "") and r.status == 200 and
      0 <= queue_us < compute_ms * 1000 / 2, (queue_us, compute_ms, res.get("out", "")[-300:]))

# grpcio's own deadline: it sends grpc-timeout and resets the stream at it
try:
    call(GS, "ModelInfer", bert_req(), pb.ModelInferResponse, timeout=0.3)
    code = grpc.StatusCode.OK
except grpc.RpcError as e:
    code = e.code()
check("grpcio with a 300 ms timeout: DEADLINE_EXCEEDED and the slice is free again",
      code == grpc.StatusCode.DEADLINE_EXCEEDED and
      wait_for(lambda: metric(HS, "nv_inference_pending_request_count") == 0, 0.5), code)

# ---- item 1: unknown methods at once; ModelStreamInfer ----

ch = grpc.insecure_channel("127.0.0.1:%d" % GF)
held = Held()
held.put(pb.ServerLiveRequest())
unk = ch.stream_stream(SVC + "NoSuchMethod", request_serializer=lambda m: m.SerializeToString(),
                       response_deserializer=pb.ServerLiveResponse.FromString)(held, timeout=20)
try:
    next(unk)
    code = grpc.StatusCode.OK
except grpc.RpcError as e:
    code = e.code()
check("an unknown method is UNIMPLEMENTED while the client keeps its stream open",
      code == grpc.StatusCode.UNIMPLEMENTED and not held.ended, (code, held.ended))
held.end()

def stream_call(port, reqs, timeout=30):
    return grpc.insecure_channel("127.0.0.1:%d" % port).stream_stream(
        SVC + "ModelStreamInfer", request_serializer=lambda m: m.SerializeToString(),
        response_deserializer=pb.ModelStreamInferResponse.FromString)(reqs, timeout=timeout)

def bert(id_):
    q = bert_req()
    q.id = id_
    return q

held = Held()
answers = stream_call(GF, held)
held.put(bert("s1"))
try:
    a1 = next(answers)
except grpc.RpcError as e:
    a1 = pb.ModelStreamInferResponse(error_message="no answer: %s" % e.code())
check("ModelStreamInfer answers a request while the stream stays open",
      not held.ended and a1.error_message == "" and a1.infer_response.id == "s1" and
      [o.name for o in a1.infer_response.outputs] == ["start_logits", "end_logits"], str(a1)[:300])
one = call(GF, "ModelInfer", bert("u"), pb.ModelInferResponse)
check("a stream's answer holds what ModelInfer answers",
      list(a1.infer_response.raw_output_contents) == list(one.raw_output_contents))
bad = bert("s3")
bad.inputs[0].shape[:] = [1, 383]
held.put(bert("s2"))
held.put(bad)
held.put(pb.ModelInferRequest(model_name="nope", id="s4"))
for i in range(5, 12):
    held.put(bert("s%d" % i))
held.end()
try:
    rest = list(answers)
except grpc.RpcError:
    rest = []
ids = [r.infer_response.id for r in rest]
check("one answer per request, in order, each with its request's id",
      ids == ["s%d" % i for i in range(2, 12)], ids)
errs = {r.infer_response.id: r.error_message for r in rest if r.error_message}
check("a refused request's error is its answer's error_message (the stream goes on)",
      set(errs) == {"s3", "s4"} and "unexpected shape" in errs["s3"] and "nope" in errs["s4"], errs)
check("the stream ends OK after the client half-closes", answers.code() == grpc.StatusCode.OK,
      answers.code())

# a client that resets its stream: what it queued leaves the slice
held = Held()
answers = stream_call(GS, held)
for i in range(3):
    held.put(bert("c%d" % i))
check("three streamed requests wait on the slow slice",
      wait_for(lambda: metric(HS, "nv_inference_pending_request_count") == 3, 10),
      metric(HS, "nv_inference_pending_request_count"))
answers.cancel()
check("a cancelled stream's requests leave the slice",
      wait_for(lambda: metric(HS, "nv_inference_pending_request_count") == 0, 5),
      metric(HS, "nv_inference_pending_request_count"))
held.end()

print("%d passed, %d failed" % (gstest.passed, gstest.failed))
sys.exit(1 if gstest.failed else 0)
EOF
rc=${PIPESTATUS[0]}
gs_py_end test-worker-proto "$rc" "$tmp/fast.err" "$tmp/slow.err"
