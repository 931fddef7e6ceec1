#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-worker.sh: `gpuslice worker` over loopback: health, metadata, JSON and
# binary-tensor infer, Triton-style 400s, limits (431, 413, slowloris),
# keep-alive, pipelining, the slice model (as ratios of the worker's own
# modelled times, never wall clock) and SIGTERM. Ends with "N passed, N failed".
set -uo pipefail

bin=${GS_BIN:-$(dirname "$0")/../../build/gpuslice}
src=${GS_SRC:-$(dirname "$0")/../..}
tmp=$(mktemp -d "${GS_TEST_TMP:-/tmp}/worker.XXXXXX" 2>/dev/null || mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT

# start NAME ARGS...: runs a worker on an ephemeral port; sets port_NAME and pid_NAME.
start() {
  local name=$1
  shift
  "$bin" worker --listen 127.0.0.1:0 "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" &
  local pid=$!
  pids+=("$pid")
  for _ in $(seq 100); do
    grep -q '^listening on ' "$tmp/$name.out" 2>/dev/null && break
    sleep 0.05
  done
  local port
  port=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$tmp/$name.out")
  if [ -z "$port" ]; then
    echo "FAIL: worker $name did not start: $(cat "$tmp/$name.err")"
    exit 1
  fi
  eval "port_$name=$port pid_$name=$pid"
}

start slice --profile 1g.5gb --header-timeout 500
start full --full-gpu
start shared --profile 1g.5gb --share 4 --model bert-large

PYTHONPATH="$src/tests/lib" timeout 120 python3 - "$port_slice" "$port_full" "$port_shared" "$tmp/slice.err" <<'EOF' | tee "$tmp/py.out"
import http.client, json, re, socket, struct, sys, time
import gstest
from gstest import check

P, PFULL, PSHARED, ERRLOG = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
def req(method, path, body=None, headers=None, port=P):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request(method, path, body=body, headers=headers or {})
    r = c.getresponse()
    data = r.read()
    c.close()
    return r, data

def infer_json(model, inputs, port=P, outputs=None):
    doc = {"inputs": inputs}
    if outputs is not None:
        doc["outputs"] = outputs
    return req("POST", "/v2/models/%s/infer" % model, json.dumps(doc).encode(),
               {"Content-Type": "application/json"}, port)

FLOWER_N = 3 * 224 * 224
zeros_flower = [{"name": "input", "datatype": "FP32", "shape": [1, 3, 224, 224], "data": [0] * FLOWER_N}]

def bert_inputs(shape=(1, 384)):
    n = shape[0] * shape[1]
    return [{"name": k, "datatype": "INT32", "shape": list(shape), "data": [1] * n}
            for k in ("input_ids", "attention_mask", "token_type_ids")]

def binary_flower(port=P, raw=b"\0" * (FLOWER_N * 4)):
    head = json.dumps({"inputs": [{"name": "input", "datatype": "FP32", "shape": [1, 3, 224, 224],
                                   "parameters": {"binary_data_size": len(raw)}}],
                       "outputs": [{"name": "output", "parameters": {"binary_data": True}}]}).encode()
    return req("POST", "/v2/models/flower/infer", head + raw,
               {"Inference-Header-Content-Length": str(len(head)),
                "Content-Type": "application/octet-stream"}, port)

def error_of(data):
    try:
        return json.loads(data).get("error", "")
    except Exception:
        return ""

def raw_exchange(payload, port=P, wait=5.0):
    """Sends bytes, returns everything read until the server closes or wait passes."""
    s = socket.create_connection(("127.0.0.1", port), timeout=wait)
    s.sendall(payload)
    out = b""
    deadline = time.time() + wait
    try:
        while time.time() < deadline:
            d = s.recv(65536)
            if not d:
                break
            out += d
    except socket.timeout:
        pass
    s.close()
    return out

# -- health and metadata
r, _ = req("GET", "/v2/health/live"); check("live is 200", r.status == 200)
r, _ = req("GET", "/v2/health/ready"); check("ready is 200", r.status == 200)
r, d = req("GET", "/v2")
meta = json.loads(d)
check("server metadata says emulated", r.status == 200 and meta.get("emulated") is True
      and "binary_tensor_data" in meta.get("extensions", []), d[:200])
r, d = req("GET", "/v2/models/flower")
m = json.loads(d)
check("flower metadata", r.status == 200 and m["platform"] == "gpuslice-emulated"
      and m["inputs"] == [{"name": "input", "datatype": "FP32", "shape": [1, 3, 224, 224]}]
      and m["outputs"] == [{"name": "output", "datatype": "FP32", "shape": [1, 102]}], d[:300])
r, d = req("GET", "/v2/models/bert-large")
m = json.loads(d)
check("bert-large metadata", [i["name"] for i in m["inputs"]] == ["input_ids", "attention_mask", "token_type_ids"]
      and [o["name"] for o in m["outputs"]] == ["start_logits", "end_logits"], d[:300])
r, _ = req("GET", "/v2/models/flower/ready"); check("model ready is 200", r.status == 200)
r, d = req("GET", "/v2/models/nosuch")
check("unknown model metadata is 404 naming it", r.status == 404 and "nosuch" in error_of(d), d)
r, d = infer_json("nosuch", [])
check("unknown model infer is 404", r.status in (400, 404) and "nosuch" in error_of(d), d)

# -- infer
r, d = infer_json("flower", zeros_flower)
js = json.loads(d) if r.status == 200 else {}
out = js.get("outputs", [{}])[0]
check("JSON infer for flower", r.status == 200 and out.get("name") == "output"
      and out.get("shape") == [1, 102] and len(out.get("data", [])) == 102, d[:300])
json_vals = out.get("data", [])
r, d = binary_flower()
hl = int(r.getheader("Inference-Header-Content-Length") or -1)
ok = r.status == 200 and 0 < hl < len(d)
if ok:
    h = json.loads(d[:hl])
    o = h["outputs"][0]
    ok = o["parameters"]["binary_data_size"] == 408 and len(d) - hl == 408
    bin_vals = list(struct.unpack("<102f", d[hl:]))
    ok = ok and bin_vals == [struct.unpack("<f", struct.pack("<f", v))[0] for v in json_vals]
check("binary-tensor infer for flower (same values as JSON)", ok, d[:200])
r2, d2 = binary_flower(raw=b"\1" * (FLOWER_N * 4))
check("outputs depend on the input", r2.status == 200 and d2[-408:] != d[-408:])
r, d = infer_json("bert-large", bert_inputs())
js = json.loads(d) if r.status == 200 else {}
check("JSON infer for bert-large", r.status == 200 and
      [o["name"] for o in js.get("outputs", [])] == ["start_logits", "end_logits"], d[:200])
r, d = infer_json("bert-large", bert_inputs(), outputs=[{"name": "end_logits"}])
js = json.loads(d) if r.status == 200 else {}
check("requested outputs only", [o["name"] for o in js.get("outputs", [])] == ["end_logits"], d[:200])

# -- validation as Triton does
bad = bert_inputs()
bad[0]["shape"] = [1, 383]
bad[0]["data"] = [1] * 383
r, d = infer_json("bert-large", bad)
check("wrong shape is 400 naming the input", r.status == 400 and "input_ids" in error_of(d)
      and "shape" in error_of(d), d)
bad = bert_inputs()
bad[1]["datatype"] = "FP32"
r, d = infer_json("bert-large", bad)
check("wrong datatype is 400 naming the input", r.status == 400 and "attention_mask" in error_of(d), d)
r, d = infer_json("bert-large", bert_inputs()[:2])
check("missing input is 400 naming it", r.status == 400 and "token_type_ids" in error_of(d), d)
bad = bert_inputs()
bad[2]["data"] = [1] * 10
r, d = infer_json("bert-large", bad)
check("wrong element count is 400", r.status == 400 and "token_type_ids" in error_of(d), d)
r, d = binary_flower(raw=b"\0" * 100)
check("wrong byte size is 400", r.status == 400 and "byte size" in error_of(d), d)
r, d = req("POST", "/v2/models/flower/infer", b"{not json", {})
check("bad JSON is 400", r.status == 400 and error_of(d) != "", d)

# -- limits
resp = raw_exchange(b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 20000 + b"\r\n\r\n")
check("oversized header is 431", resp.startswith(b"HTTP/1.1 431 "), resp[:80])
resp = raw_exchange(b"POST /v2/models/flower/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\n")
check("oversized body is 413", resp.startswith(b"HTTP/1.1 413 ") and b'"error"' in resp, resp[:80])
resp = raw_exchange(b"GET /v2 HTTP/1.1\r\nHost x\r\n\r\n")
check("malformed request is 400", resp.startswith(b"HTTP/1.1 400 "), resp[:80])
# slowloris: half a request line, then silence: closed after the 500 ms header timeout
s = socket.create_connection(("127.0.0.1", P), timeout=8)
s.sendall(b"GET /v2/hea")
try:
    closed = s.recv(100) == b""
except (socket.timeout, ConnectionResetError):
    closed = False
s.close()
check("slowloris connection is closed", closed)

# -- connections
c = http.client.HTTPConnection("127.0.0.1", P, timeout=10)
c.request("GET", "/v2/health/ready"); r = c.getresponse(); r.read(); s1 = c.sock
c.request("GET", "/v2/models/flower"); r2 = c.getresponse(); r2.read()
check("keep-alive: two requests on one connection", r.status == 200 and r2.status == 200 and c.sock is s1)
c.close()
body = json.dumps({"inputs": bert_inputs()}).encode()
one = (b"POST /v2/models/bert-large/infer HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body)) + body
pipe = one + b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n" + \
       b"GET /v2/models/flower/ready HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
resp = raw_exchange(pipe)
codes = re.findall(rb"HTTP/1\.1 (\d{3}) ", resp)
check("pipelined requests answered in order", codes == [b"200", b"200", b"200"]
      and resp.index(b"start_logits") < resp.rindex(b"HTTP/1.1 200"), codes)
chunked = b"POST /v2/models/bert-large/infer HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
for i in range(0, len(body), 1000):
    part = body[i:i + 1000]
    chunked += b"%x\r\n" % len(part) + part + b"\r\n"
chunked += b"0\r\n\r\n"
resp = raw_exchange(chunked)
check("chunked request body", resp.startswith(b"HTTP/1.1 200 ") and b"end_logits" in resp, resp[:120])

# -- the slice model, from the worker's own modelled times
def compute_us(port, model="flower"):
    if model == "flower":
        r, _ = binary_flower(port=port)
    else:
        r, _ = infer_json(model, bert_inputs(), port=port)
    return int(r.getheader("X-Gpuslice-Compute-Us") or 0)
t_slice, t_full = compute_us(P), compute_us(PFULL)
ratio = t_slice / t_full if t_full else 0
check("1g.5gb slower than the full GPU (ratio %.2f in [1.3, 2.2])" % ratio, 1.3 <= ratio <= 2.2)
b_slice, b_full = compute_us(P, "bert-large"), compute_us(PFULL, "bert-large")
check("bert-large calibration 6.38 ms / 3.75 ms", abs(b_slice - 6380) < 100 and abs(b_full - 3750) < 100,
      (b_slice, b_full))
b_shared = compute_us(PSHARED, "bert-large")
check("--share 4 models time-slicing (ratio %.2f in [3.5, 5])" % (b_shared / b_slice), 3.5 <= b_shared / b_slice <= 5)
r, _ = req("GET", "/v2/models/flower", port=PSHARED)
check("--model limits the models served", r.status == 404)
# three requests at once on a slice held ~26 ms each: the FIFO shows as queue time
socks = []
for _ in range(3):
    s = socket.create_connection(("127.0.0.1", PSHARED), timeout=10)
    s.sendall(one)
    socks.append(s)
queued = 0
for s in socks:
    data = b""
    while b"\r\n\r\n" not in data:
        data += s.recv(65536)
    for l in data.split(b"\r\n"):
        if l.lower().startswith(b"x-gpuslice-queue-us:"):
            queued += int(l.split(b":")[1])
    s.close()
check("concurrent requests queue on the slice", queued > 0, queued)

r, d = req("GET", "/metrics")
text = d.decode()
def metric(name, model):
    for l in text.splitlines():
        if l.startswith('%s{model="%s"' % (name, model)):
            return int(l.split()[-1])
    return -1
check("metrics: success, failure, compute time per model",
      metric("nv_inference_request_success", "flower") >= 3 and metric("nv_inference_request_failure", "bert-large") >= 4
      and metric("nv_inference_compute_infer_duration_us", "flower") >= 3 * 600
      and "nv_inference_queue_duration_us" in text, text[:400])
r, _ = req("GET", "/v2/health/live")
check("still serving after all that", r.status == 200)
with open(ERRLOG) as f:
    check("log says emulated", "EMULATED" in f.read())
print("PY %d %d" % (gstest.passed, gstest.failed))
EOF
pyrc=${PIPESTATUS[0]}
read -r _ passed failed < <(grep '^PY ' "$tmp/py.out" || echo "PY 0 1")
[ "$pyrc" -eq 0 ] || { echo "FAIL: the python checks exited with $pyrc"; failed=$((failed + 1)); }

# SIGTERM: every worker stops, within a bounded wait, with status 0.
for name in slice full shared; do
  pid_var=pid_$name
  pid=${!pid_var}
  kill -TERM "$pid"
  rc=124
  for _ in $(seq 100); do
    if ! kill -0 "$pid" 2>/dev/null; then
      wait "$pid"
      rc=$?
      break
    fi
    sleep 0.05
  done
  if [ "$rc" -eq 0 ] && grep -q 'stopped' "$tmp/$name.err"; then
    passed=$((passed + 1))
    echo "ok: worker $name stops on SIGTERM"
  else
    failed=$((failed + 1))
    echo "FAIL: worker $name on SIGTERM: status $rc"
  fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
