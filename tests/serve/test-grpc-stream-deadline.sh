#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-grpc-stream-deadline.sh: a ModelStreamInfer call's deadline is the
# call's, as gRPC says (issue 20): with grpc-timeout the whole stream ends
# DEADLINE_EXCEEDED at it, on the worker and through serve, even while its
# requests are still being answered; serve's worker timeout applies to a
# stream only as an idle timeout while the worker owes an answer (an idle
# stream that owes nothing stays open). nghttp (nghttp2-client) keeps no
# deadline of its own, so the status seen is the server's; python3-grpcio
# holds a stream open. Workers model 1g.5gb x300 (bert-large about 1.9 s).
# Ends with "N passed, N failed".
set -uo pipefail

bin=${GS_BIN:-$(dirname "$0")/../../build/gpuslice}
src=${GS_SRC:-$(dirname "$0")/../..}
py=/usr/bin/python3 # Debian's, where python3-grpcio and python3-protobuf live
. "$src/tests/lib/common.sh"
tmp=$(mktemp -d "${GS_TEST_TMP:-/tmp}/gdeadline.XXXXXX" 2>/dev/null || mktemp -d)
export GPUSLICE_EMU_STATE=$tmp/emu.json
pids=()
trap gs_stop_pids EXIT

if ! "$py" -c 'import grpc, google.protobuf' 2>/dev/null || ! command -v protoc >/dev/null ||
  ! command -v nghttp >/dev/null; then
  echo "FAIL: python3-grpcio, python3-protobuf, protobuf-compiler and nghttp2-client are needed (scripts/deps.sh)"
  echo "0 passed, 1 failed"
  exit 1
fi
protoc --proto_path="$src/proto" --python_out="$tmp" "$src/proto/inference.proto" ||
  { echo "FAIL: protoc"; echo "0 passed, 1 failed"; exit 1; }
"$bin" -q emu reset --emulate a100-40gb >/dev/null || { echo "FAIL: emu reset"; exit 1; }
"$bin" -q apply -f "$src/configs/a100-40gb.mig-parted.yaml" -c all-7g.40gb >/dev/null ||
  { echo "FAIL: apply all-7g.40gb"; exit 1; }

"$bin" worker --listen 127.0.0.1:0 --grpc-listen 127.0.0.1:0 --profile 1g.5gb --time-scale 300 \
  >"$tmp/worker.out" 2>"$tmp/worker.err" &
pids+=($!)
"$bin" -q serve --listen 127.0.0.1:0 --grpc-listen 127.0.0.1:0 --admin-listen 127.0.0.1:0 \
  --ephemeral-ports --worker-timeout 1000 --log-dir "$tmp" -- \
  "$bin" worker --listen '127.0.0.1:{port}' --grpc-listen '127.0.0.1:{grpc_port}' \
  --profile 1g.5gb --time-scale 300 >"$tmp/serve.out" 2>"$tmp/serve.err" &
pids+=($!)
disown -a

PYTHONPATH="$src/tests/lib" timeout 150 "$py" - "$tmp" <<'EOF' | tee "$tmp/py.out"
import json, os, re, struct, subprocess, sys, time, urllib.request
sys.path.insert(0, sys.argv[1])
import grpc
import gstest
from gstest import Held, check, port_of, read, wait_for
import inference_pb2 as pb

TMP = sys.argv[1]
SVC = "/inference.GRPCInferenceService/"
wport = port_of(os.path.join(TMP, "worker.out"), "grpc listening on")
gport, aport = port_of(os.path.join(TMP, "serve.out"), "grpc on"), port_of(os.path.join(TMP, "serve.out"), "admin on")
check("the worker and serve print their ports", wport and gport and aport,
      read(os.path.join(TMP, "worker.err")) + read(os.path.join(TMP, "serve.err")))

def workers():
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/workers" % aport, timeout=5) as f:
            return json.load(f)["workers"]
    except Exception:
        return []
check("serve's worker joins", wait_for(lambda: any(w.get("in_pool") for w in workers()), 60), workers())

def bert(id_):
    q = pb.ModelInferRequest(model_name="bert-large", id=id_)
    for n in ("input_ids", "attention_mask", "token_type_ids"):
        q.inputs.add(name=n, datatype="INT32", shape=[1, 384])
        q.raw_input_contents.append(b"\1\0\0\0" * 384)
    b = q.SerializeToString()
    return b"\0" + struct.pack(">I", len(b)) + b

def nghttp(port, data, headers):
    """A stream of the framed requests in data, half-closed after them, with
    nghttp: (grpc-status, grpc-message, answers' DATA bytes) from its -v trace."""
    path = os.path.join(TMP, "req.bin")
    with open(path, "wb") as f:
        f.write(data)
    args = ["nghttp", "-v", "-d", path, "-H", "te: trailers", "-H", "content-type: application/grpc"]
    for h in headers:
        args += ["-H", h]
    r = subprocess.run(args + ["http://127.0.0.1:%d%sModelStreamInfer" % (port, SVC)],
                       capture_output=True, timeout=60)
    out = r.stdout.decode("latin-1")
    st = re.findall(r"grpc-status: (\d+)", out)
    msg = re.findall(r"grpc-message: (.*)", out)
    return (st[-1] if st else None, msg[-1].strip() if msg else "", out)

three = bert("a") + bert("b") + bert("c")
st, msg, out = nghttp(wport, three, ["grpc-timeout: 1S"])
check("worker: a stream with grpc-timeout 1S (3 requests of ~1.9 s) ends DEADLINE_EXCEEDED",
      st == "4" and "grpc-timeout" in msg, (st, msg, out[-400:]))
st, msg, out = nghttp(wport, three, ["grpc-timeout: 10S"])
check("worker: with grpc-timeout 10S the same stream ends OK", st == "0", (st, msg, out[-400:]))

st, msg, out = nghttp(gport, three, ["grpc-timeout: 500m"])
check("serve: a stream with grpc-timeout 500m ends DEADLINE_EXCEEDED at it",
      st == "4" and "grpc-timeout" in msg, (st, msg, out[-400:]))
st, msg, out = nghttp(gport, bert("d"), [])
check("serve: a worker owing an answer past the worker timeout (1 s) ends the stream "
      "DEADLINE_EXCEEDED", st == "4" and "worker timeout" in msg, (st, msg, out[-400:]))
check("serve: the stream's worker is let go", wait_for(lambda: not any(w.get("inflight") for w in workers()), 10),
      workers())

ch = grpc.insecure_channel("127.0.0.1:%d" % gport)
held = Held()
answers = ch.stream_stream(SVC + "ModelStreamInfer", request_serializer=lambda m: m.SerializeToString(),
                           response_deserializer=pb.ModelStreamInferResponse.FromString)(held, timeout=60)
time.sleep(2.5) # 2.5 worker timeouts with nothing owed
q = pb.ModelInferRequest(model_name="flower", id="idle")
q.inputs.add(name="input", datatype="FP32", shape=[1, 3, 224, 224])
q.raw_input_contents.append(b"\0" * (4 * 3 * 224 * 224))
held.put(q)
try:
    got = next(answers).infer_response.id
except grpc.RpcError as e:
    got = (e.code(), e.details())
held.end()
check("serve: a stream idle past the worker timeout, owing nothing, stays open", got == "idle", got)
ch.close()
print("%d passed, %d failed" % (gstest.passed, gstest.failed))
sys.exit(1 if gstest.failed else 0)
EOF
rc=${PIPESTATUS[0]}
if ! grep -Eq '^[0-9]+ passed, [0-9]+ failed' "$tmp/py.out"; then
  echo "test-grpc-stream-deadline: the client did not finish (rc $rc)"
  tail -n 5 "$tmp/serve.err"
  echo "0 passed, 1 failed"
  exit 1
fi
exit "$rc"
