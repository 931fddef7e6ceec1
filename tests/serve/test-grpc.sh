#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-grpc.sh: KServe v2 over gRPC, driven by Debian's python3-grpcio (a
# client we did not write) with messages from proto/inference.proto:
# 1. the worker alone: health, metadata, ModelInfer with raw and typed
#    contents (600 KB flower tensors), the HTTP path's validation as gRPC
#    statuses, unknown methods;
# 2. `gpuslice serve --grpc-listen` over 7 emulated 1g.5gb workers: 200
#    concurrent calls on ONE client connection spread over every slice;
#    kill -9 of a worker under load gives each call a status (OK or
#    UNAVAILABLE, none hangs) and later calls succeed; DEADLINE_EXCEEDED from
#    the proxy (grpc-timeout shorter than the queue); RESOURCE_EXHAUSTED at
#    the in-flight limit (over 5 connections: 100 streams each); UNAVAILABLE with no ready worker; SIGTERM lets the
#    calls under way finish;
# 3. malformed HTTP/2 on the worker's port: GOAWAY with the right code, close.
set -uo pipefail

bin=${GS_BIN:-$(dirname "$0")/../../build/gpuslice}
src=${GS_SRC:-$(dirname "$0")/../..}
py=/usr/bin/python3 # Debian's, where python3-grpcio and python3-protobuf live
. "$src/tests/lib/common.sh"
tmp=$(gs_tmpdir grpc)
export GPUSLICE_EMU_STATE=$tmp/emu.json
pids=()
cleanup() {
  for p in "${pids[@]}"; do
    pkill -CONT -P "$p" 2>/dev/null
    kill -9 "$p" 2>/dev/null
  done
  rm -rf "$tmp"
}
trap cleanup EXIT

gs_grpc_proto "$py"

"$bin" -q emu reset --emulate a100-40gb >/dev/null || { echo "FAIL: emu reset"; exit 1; }
"$bin" -q apply -f "$src/configs/a100-40gb.mig-parted.yaml" -c all-1g.5gb >/dev/null ||
  { echo "FAIL: apply all-1g.5gb"; exit 1; }

"$bin" -q worker --listen 127.0.0.1:0 --grpc-listen 127.0.0.1:0 --profile 1g.5gb \
  >"$tmp/worker.out" 2>"$tmp/worker.err" &
pids+=($!)
disown
"$bin" -q serve --listen 127.0.0.1:0 --grpc-listen 127.0.0.1:0 --admin-listen 127.0.0.1:0 \
  --ephemeral-ports --worker-timeout 30000 --max-inflight 64 --log-dir "$tmp" -- \
  "$bin" worker --listen '127.0.0.1:{port}' --grpc-listen '127.0.0.1:{grpc_port}' \
  --profile '{profile}' >"$tmp/serve.out" 2>"$tmp/serve.err" &
serve_pid=$!
pids+=($serve_pid)
disown

PYTHONPATH="$src/tests/lib" timeout 250 "$py" - "$tmp" "$serve_pid" <<'EOF' | tee "$tmp/py.out"
import json, os, signal, struct, subprocess, sys, threading, time, urllib.request
sys.path.insert(0, sys.argv[1])
import grpc
import gstest
from gstest import check, port_of, read, running, wait_for
import inference_pb2 as pb

TMP, SERVE = sys.argv[1], int(sys.argv[2])
SVC = "/inference.GRPCInferenceService/"
def call(ch, method, req, resp_type, timeout=30):
    f = ch.unary_unary(SVC + method, request_serializer=lambda m: m.SerializeToString(),
                       response_deserializer=resp_type.FromString)
    return f(req, timeout=timeout)

def status_of(fn):
    try:
        fn()
        return grpc.StatusCode.OK, ""
    except grpc.RpcError as e:
        return e.code(), e.details() or ""

def flower_req(seed, raw=True):
    q = pb.ModelInferRequest(model_name="flower", id="r%d" % seed)
    t = q.inputs.add(name="input", datatype="FP32", shape=[1, 3, 224, 224])
    vals = [float((seed * 7 + i) % 13) for i in range(3 * 224 * 224)]
    if raw:
        q.raw_input_contents.append(struct.pack("<%df" % len(vals), *vals))
    else:
        t.contents.fp32_contents.extend(vals)
    return q

def bert_req():
    q = pb.ModelInferRequest(model_name="bert-large")
    for n in ("input_ids", "attention_mask", "token_type_ids"):
        t = q.inputs.add(name=n, datatype="INT32", shape=[1, 384])
        t.contents.int_contents.extend([1] * 384)
    return q

def infer(ch, q, timeout=30):
    return call(ch, "ModelInfer", q, pb.ModelInferResponse, timeout)

# ---- 1. the worker alone ----
wport = port_of(os.path.join(TMP, "worker.out"), "grpc listening on")
check("worker prints its gRPC port", wport is not None, read(os.path.join(TMP, "worker.err")))
ch = grpc.insecure_channel("127.0.0.1:%d" % (wport or 1))
r = call(ch, "ServerLive", pb.ServerLiveRequest(), pb.ServerLiveResponse)
check("ServerLive", r.live)
r = call(ch, "ServerReady", pb.ServerReadyRequest(), pb.ServerReadyResponse)
check("ServerReady", r.ready)
r = call(ch, "ModelReady", pb.ModelReadyRequest(name="flower"), pb.ModelReadyResponse)
check("ModelReady flower", r.ready)
r = call(ch, "ModelReady", pb.ModelReadyRequest(name="nope"), pb.ModelReadyResponse)
check("ModelReady of an unknown model is false", not r.ready)
r = call(ch, "ServerMetadata", pb.ServerMetadataRequest(), pb.ServerMetadataResponse)
check("ServerMetadata", r.name == "gpuslice-worker", str(r))
r = call(ch, "ModelMetadata", pb.ModelMetadataRequest(name="bert-large"), pb.ModelMetadataResponse)
check("ModelMetadata bert-large", [i.name for i in r.inputs] ==
      ["input_ids", "attention_mask", "token_type_ids"] and list(r.outputs[0].shape) == [1, 384], str(r))
code, msg = status_of(lambda: call(ch, "ModelMetadata", pb.ModelMetadataRequest(name="x"),
                                   pb.ModelMetadataResponse))
check("ModelMetadata of an unknown model is NOT_FOUND", code == grpc.StatusCode.NOT_FOUND, code)

r1 = infer(ch, flower_req(1))
r2 = infer(ch, flower_req(1, raw=False))
r3 = infer(ch, flower_req(2))
check("ModelInfer flower (600 KB raw input): 102 FP32 outputs",
      r1.model_name == "flower" and r1.id == "r1" and r1.outputs[0].name == "output" and
      list(r1.outputs[0].shape) == [1, 102] and len(r1.raw_output_contents[0]) == 408, str(r1)[:300])
check("typed fp32_contents give the same outputs as raw bytes",
      r1.raw_output_contents[0] == r2.raw_output_contents[0])
check("other inputs give other outputs", r1.raw_output_contents[0] != r3.raw_output_contents[0])
r = infer(ch, bert_req())
check("ModelInfer bert-large with int_contents: two outputs",
      [o.name for o in r.outputs] == ["start_logits", "end_logits"] and
      [len(b) for b in r.raw_output_contents] == [1536, 1536], str(r)[:300])
q = bert_req(); q.outputs.add(name="end_logits")
r = infer(ch, q)
check("a requested output alone", [o.name for o in r.outputs] == ["end_logits"])

q = flower_req(1); q.inputs[0].shape[:] = [1, 3, 224, 225]
code, msg = status_of(lambda: infer(ch, q))
check("a wrong shape is INVALID_ARGUMENT, named", code == grpc.StatusCode.INVALID_ARGUMENT and
      "unexpected shape for input 'input'" in msg and "[1,3,224,225]" in msg, (code, msg))
q = flower_req(1); q.raw_input_contents[0] = b"\0" * 100
code, msg = status_of(lambda: infer(ch, q))
check("a wrong byte size is INVALID_ARGUMENT", code == grpc.StatusCode.INVALID_ARGUMENT and
      "Expected 602112, got 100" in msg, (code, msg))
q = bert_req(); del q.inputs[2]
code, msg = status_of(lambda: infer(ch, q))
check("a missing input is INVALID_ARGUMENT", code == grpc.StatusCode.INVALID_ARGUMENT and
      "missing 'token_type_ids'" in msg, (code, msg))
q = bert_req(); q.inputs[0].datatype = "FP32"
code, msg = status_of(lambda: infer(ch, q))
check("a wrong datatype is INVALID_ARGUMENT", code == grpc.StatusCode.INVALID_ARGUMENT and
      "expects 'INT32'" in msg, (code, msg))
code, msg = status_of(lambda: infer(ch, pb.ModelInferRequest(model_name="resnet")))
check("an unknown model is NOT_FOUND", code == grpc.StatusCode.NOT_FOUND and "resnet" in msg, msg)
code, msg = status_of(lambda: call(ch, "ModelConfig", pb.ServerLiveRequest(), pb.ServerLiveResponse))
check("an unknown method is UNIMPLEMENTED", code == grpc.StatusCode.UNIMPLEMENTED, code)
ch.close()

# ---- 2. the proxy ----
sout = os.path.join(TMP, "serve.out")
gport = port_of(sout, "grpc on")
aport = port_of(sout, "admin on")
check("serve prints its gRPC port", gport is not None, read(os.path.join(TMP, "serve.err")))
def workers():
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/workers" % aport, timeout=5) as f:
            return json.load(f)["workers"]
    except Exception:
        return []
check("7 workers join", wait_for(lambda: sum(w.get("in_pool", False) for w in workers()) == 7, 60),
      workers())
ch = grpc.insecure_channel("127.0.0.1:%d" % (gport or 1))
before = {w["worker"]: w["requests"] for w in workers()}
futs = [ch.unary_unary(SVC + "ModelInfer", request_serializer=lambda m: m.SerializeToString(),
                       response_deserializer=pb.ModelInferResponse.FromString).future(
            flower_req(i % 5), timeout=60) for i in range(200)]
res = [status_of(f.result) for f in futs]
check("200 concurrent calls on one connection all succeed",
      all(c == grpc.StatusCode.OK for c, _ in res), [r for r in res if r[0] != grpc.StatusCode.OK][:3])
after = {w["worker"]: w["requests"] for w in workers()}
check("one connection's calls spread over all 7 slices",
      len(after) == 7 and all(after[w] > before.get(w, 0) for w in after), (before, after))
check("answers match the worker's (same inputs, same outputs)",
      futs[1].result().raw_output_contents[0] == r1.raw_output_contents[0])

# kill -9 one worker while calls are under way: each gets a status
victim = next((w for w in workers() if w.get("pid")), None)
stop = time.time() + 3
results = []
def load():
    while time.time() < stop:
        results.append(status_of(lambda: infer(ch, bert_req(), timeout=30)))
ts = [threading.Thread(target=load) for _ in range(8)]
for t in ts: t.start()
time.sleep(0.5)
if victim:
    os.kill(victim["pid"], signal.SIGKILL)
for t in ts: t.join(60)
codes = {c for c, _ in results}
check("calls under a worker's kill -9 all end with a status (OK or UNAVAILABLE)",
      victim and not any(t.is_alive() for t in ts) and codes <= {grpc.StatusCode.OK, grpc.StatusCode.UNAVAILABLE},
      (codes, [r for r in results if r[0] != grpc.StatusCode.OK][:3]))
ok = sum(c == grpc.StatusCode.OK for c, _ in results)
check("the other workers kept answering", ok > len(results) // 2, (ok, len(results)))
code, _ = status_of(lambda: infer(ch, bert_req()))
check("calls succeed after the kill", code == grpc.StatusCode.OK, code)

# the proxy's own deadline: nghttp (no client-side timer) sends a
# grpc-timeout of 5 ms; bert-large's modelled time on 1g.5gb is 6.4 ms
q = bert_req()
body = q.SerializeToString()
with open(os.path.join(TMP, "bert.grpc"), "wb") as f:
    f.write(b"\0" + struct.pack(">I", len(body)) + body)
def many(n, req, chans=None):
    chans = chans or [ch]
    return [chans[i % len(chans)].unary_unary(SVC + "ModelInfer",
                                              request_serializer=lambda m: m.SerializeToString(),
                                              response_deserializer=pb.ModelInferResponse.FromString)
            .future(req, timeout=60) for i in range(n)]
r = subprocess.run(["nghttp", "-v", "-d", os.path.join(TMP, "bert.grpc"), "-H", "content-type: application/grpc",
                    "-H", "te: trailers", "-H", "grpc-timeout: 5m",
                    "http://127.0.0.1:%d%sModelInfer" % (gport, SVC)], capture_output=True, timeout=60)
out = r.stdout.decode("latin-1")
check("the proxy answers DEADLINE_EXCEEDED when grpc-timeout passes first",
      "grpc-status: 4" in out and "grpc-timeout" in out, out[-600:])

# the in-flight limit: with every worker stopped (SIGSTOP) 7 x 64 calls
# stay in flight and the rest are refused at once; a connection takes 100
# streams at once, so the 500 calls go over 5 (a subchannel pool each)
pids = [w["pid"] for w in workers() if w.get("pid")]
for p in pids: os.kill(p, signal.SIGSTOP)
chans = [grpc.insecure_channel("127.0.0.1:%d" % gport, options=[("grpc.use_local_subchannel_pool", 1)])
         for _ in range(5)]
futs = many(500, q, chans)
wait_for(lambda: sum(f.done() for f in futs) >= 500 - 7 * 64, 20)
for p in pids: os.kill(p, signal.SIGCONT)
res = [status_of(f.result) for f in futs]
for c in chans: c.close()
codes = {c for c, _ in res}
ex = [m for c, m in res if c == grpc.StatusCode.RESOURCE_EXHAUSTED]
check("calls beyond every worker's in-flight limit are RESOURCE_EXHAUSTED",
      # UNAVAILABLE too: on a slow machine the probes may find the stopped workers unready
      ex and "limit of 64" in ex[0] and
      codes <= {grpc.StatusCode.OK, grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.UNAVAILABLE},
      (codes, ex[:1]))

# no ready worker: every worker's ready probe turns 503 (SIGUSR1)
pids = [w["pid"] for w in workers() if w.get("pid")]
for p in pids: os.kill(p, signal.SIGUSR1)
check("workers leave the pool", wait_for(lambda: not any(w["in_pool"] for w in workers()), 30))
code, msg = status_of(lambda: infer(ch, q))
check("no ready worker is UNAVAILABLE", code == grpc.StatusCode.UNAVAILABLE and "no worker" in msg,
      (code, msg))
for p in pids: os.kill(p, signal.SIGUSR1)
check("workers rejoin", wait_for(lambda: sum(w["in_pool"] for w in workers()) == 7, 30))

# SIGTERM drains: calls under way finish, then serve exits
futs = many(100, q)
wait_for(lambda: sum(w["inflight"] for w in workers()) > 0, 10)
os.kill(SERVE, signal.SIGTERM)
res = [status_of(f.result) for f in futs]
check("calls under way at SIGTERM all finish OK", all(c == grpc.StatusCode.OK for c, _ in res),
      [r for r in res if r[0] != grpc.StatusCode.OK][:3])
check("serve exits after the drain", wait_for(lambda: not running(SERVE), 60))
ch.close()

# malformed input on the worker's port: GOAWAY, then the connection closes
import socket
def goaway(data):
    s = socket.create_connection(("127.0.0.1", wport), timeout=10)
    s.sendall(data)
    got = b""
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            got += b
    except socket.timeout:
        return None
    s.close()
    i = 0
    while i + 9 <= len(got):  # frames: 3-byte length, type, flags, stream id
        n = int.from_bytes(got[i:i + 3], "big")
        if got[i + 3] == 7:
            return int.from_bytes(got[i + 13:i + 17], "big")
        i += 9 + n
    return -1
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
check("a bad preface gets GOAWAY PROTOCOL_ERROR and a close", goaway(b"GET / HTTP/1.1\r\n\r\n" * 3) == 1)
check("DATA on stream 0 gets GOAWAY PROTOCOL_ERROR and a close",
      goaway(PREFACE + b"\0\0\0\4\0\0\0\0\0" + b"\0\0\4\0\1\0\0\0\0abcd") == 1)
check("a frame over the maximum size gets GOAWAY FRAME_SIZE_ERROR",
      goaway(PREFACE + b"\0\0\0\4\0\0\0\0\0" + b"\xff\xff\xff\0\0\0\0\0\1" + b"x" * 100) == 6)
ch = grpc.insecure_channel("127.0.0.1:%d" % wport)
r = call(ch, "ServerLive", pb.ServerLiveRequest(), pb.ServerLiveResponse)
check("the worker serves on after malformed peers", r.live)
ch.close()
print("%d passed, %d failed" % (gstest.passed, gstest.failed))
sys.exit(1 if gstest.failed else 0)
EOF
rc=${PIPESTATUS[0]}
gs_py_end test-grpc "$rc" "$tmp/serve.err" "$tmp/worker.err"
