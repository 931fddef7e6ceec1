#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-grpc-unknown.sh: serve answers a path that is no method of
# inference.GRPCInferenceService UNIMPLEMENTED itself, at once, whatever its
# workers' state (issue 20): here no worker is ever ready (the worker
# command never listens), and Debian's python3-grpcio (a client we did not
# write) holds each stream open. Known methods are still forwarded, so they
# meet "no worker is ready" (UNAVAILABLE). Ends with "N passed, N failed".
set -uo pipefail

bin=${GS_BIN:-$(dirname "$0")/../../build/gpuslice}
src=${GS_SRC:-$(dirname "$0")/../..}
py=/usr/bin/python3 # Debian's, where python3-grpcio and python3-protobuf live
. "$src/tests/lib/common.sh"
tmp=$(mktemp -d "${GS_TEST_TMP:-/tmp}/gunknown.XXXXXX" 2>/dev/null || mktemp -d)
export GPUSLICE_EMU_STATE=$tmp/emu.json
pids=()
trap gs_stop_pids EXIT

gs_grpc_proto "$py"
"$bin" -q emu reset --emulate a100-40gb >/dev/null || { echo "FAIL: emu reset"; exit 1; }
"$bin" -q apply -f "$src/configs/a100-40gb.mig-parted.yaml" -c all-3g.20gb >/dev/null ||
  { echo "FAIL: apply all-3g.20gb"; exit 1; }

# a worker that never answers its readiness probe: no worker is ever ready
"$bin" -q serve --listen 127.0.0.1:0 --grpc-listen 127.0.0.1:0 --admin-listen 127.0.0.1:0 \
  --ephemeral-ports --log-dir "$tmp" -- sleep 300 >"$tmp/serve.out" 2>"$tmp/serve.err" &
pids+=($!)
disown

PYTHONPATH="$src/tests/lib" timeout 100 "$py" - "$tmp" <<'EOF' | tee "$tmp/py.out"
import os, sys
sys.path.insert(0, sys.argv[1])
import grpc
import gstest
from gstest import Held, check, port_of, read
import inference_pb2 as pb

TMP = sys.argv[1]
SVC = "/inference.GRPCInferenceService/"
gport = port_of(os.path.join(TMP, "serve.out"), "grpc on")
check("serve prints its gRPC port", gport, read(os.path.join(TMP, "serve.err")))
ch = grpc.insecure_channel("127.0.0.1:%d" % gport)

def held_call(method):
    """The status of a stream on method whose client never half-closes."""
    held = Held()
    held.put(pb.ServerLiveRequest())
    call = ch.stream_stream(method, request_serializer=lambda m: m.SerializeToString(),
                            response_deserializer=pb.ServerLiveResponse.FromString)(held, timeout=20)
    try:
        next(call)
        code = (grpc.StatusCode.OK, "")
    except grpc.RpcError as e:
        code = (e.code(), e.details())
    ended = held.ended
    held.end()
    return code, ended

for m in (SVC + "NoSuchMethod", "/other.Service/ModelInfer", SVC, "/x"):
    code, ended = held_call(m)
    check("no worker ready: %s is UNIMPLEMENTED at once, from serve" % m,
          code[0] == grpc.StatusCode.UNIMPLEMENTED and "GRPCInferenceService" in code[1]
          and not ended, (code, ended))
code, ended = held_call(SVC + "ModelStreamInfer")
check("no worker ready: ModelStreamInfer is still forwarded (UNAVAILABLE)",
      code[0] == grpc.StatusCode.UNAVAILABLE and not ended, (code, ended))
live = ch.unary_unary(SVC + "ServerLive", request_serializer=lambda m: m.SerializeToString(),
                      response_deserializer=pb.ServerLiveResponse.FromString)
try:
    live(pb.ServerLiveRequest(), timeout=20)
    code = grpc.StatusCode.OK
except grpc.RpcError as e:
    code = e.code()
check("no worker ready: a unary method is still forwarded (UNAVAILABLE)",
      code == grpc.StatusCode.UNAVAILABLE, code)
ch.close()
print("%d passed, %d failed" % (gstest.passed, gstest.failed))
sys.exit(1 if gstest.failed else 0)
EOF
rc=${PIPESTATUS[0]}
if ! grep -Eq '^[0-9]+ passed, [0-9]+ failed' "$tmp/py.out"; then
  echo "test-grpc-unknown: the client did not finish (rc $rc)"
  tail -n 5 "$tmp/serve.err"
  echo "0 passed, 1 failed"
  exit 1
fi
exit "$rc"
