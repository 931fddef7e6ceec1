#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-serve.sh: `gpuslice serve` on an emulated A100-40GB split into 7x 1g.5gb,
# one emulated worker per slice, over loopback: all 7 join and the admin API
# lists them; a live worker whose ready probe turns 503 (SIGUSR1) leaves the
# pool and rejoins when it answers 200 again; infer requests from
# several threads; kill -9 of one worker under that load fails no request and
# the worker rejoins; a hung worker (SIGSTOP) times out (504) and leaves the
# pool while the others answer; SIGTERM exits 0 with every worker gone.
set -uo pipefail

bin=${GS_BIN:-$(dirname "$0")/../../build/gpuslice}
src=${GS_SRC:-$(dirname "$0")/../..}
. "$src/tests/lib/common.sh"
gs_serve_test serve

"$bin" -q emu reset --emulate a100-40gb >/dev/null || { echo "FAIL: emu reset"; exit 1; }
"$bin" -q apply -f "$src/configs/a100-40gb.mig-parted.yaml" -c all-1g.5gb >/dev/null ||
  { echo "FAIL: apply all-1g.5gb"; exit 1; }

# The worker timeout is generous: under ASan on two busy cores a healthy
# worker can take a second; only the hung worker may run into it.
"$bin" -q serve --listen 127.0.0.1:0 --admin-listen 127.0.0.1:0 --ephemeral-ports --worker-timeout 4000 \
  --log-dir "$tmp" -- "$bin" worker --listen '127.0.0.1:{port}' --profile '{profile}' \
  >"$tmp/serve.out" 2>"$tmp/serve.err" &
serve_pid=$!

PYTHONPATH="$src/tests/lib" timeout 90 python3 - "$serve_pid" "$tmp/serve.out" <<'EOF' | tee "$tmp/py.out"
import http.client, json, os, re, signal, sys, threading, time
from gstest import check, children, finish, port_of, read, running, wait_for

SERVE, OUT = int(sys.argv[1]), sys.argv[2]
def out():
    return read(OUT)

PORT = port_of(OUT, "listening on", 10)
if PORT is None:
    print("FAIL: serve did not start:", out())
    print("0 passed, 1 failed")
    sys.exit(1)
check("7 workers join the pool", wait_for(lambda: out().count("joined the pool") >= 7, 20),
      out())
m = re.search(r"^admin on 127\.0\.0\.1:(\d+)", out(), re.M)
ADMIN = int(m.group(1)) if m else 0

def admin(method, path):
    c = http.client.HTTPConnection("127.0.0.1", ADMIN, timeout=5)
    c.request(method, path)
    r = c.getresponse()
    body = json.loads(r.read())
    c.close()
    return r.status, body

st, body = admin("GET", "/workers")
ws = body.get("workers", [])
check("admin: lists 7 ready workers with pids and UUIDs", st == 200 and len(ws) == 7 and
      all(w["state"] == "ready" and w["pid"] > 0 and w["uuid"].startswith("MIG-") and
          w["profile"] == "1g.5gb" and w["in_pool"] for w in ws), body)

# Active health: worker 2 stays alive but its ready probe answers 503.
joined0, left0 = out().count("joined the pool"), out().count("left the pool")
os.kill(ws[2]["pid"], signal.SIGUSR1)
check("unready probe: the live worker leaves the pool",
      wait_for(lambda: "worker 2 " in out() and out().count("left the pool (unready)") >= 1, 15),
      out())
st, w2 = admin("GET", "/workers/2")
check("unready probe: its process still runs, out of the pool",
      w2.get("state") == "unready" and w2.get("pid") == ws[2]["pid"] and not w2.get("in_pool"), w2)
os.kill(ws[2]["pid"], signal.SIGUSR1)
check("unready probe: ready again, it rejoins",
      wait_for(lambda: out().count("joined the pool") > joined0, 15), out())

BODY = json.dumps({"inputs": [{"name": k, "datatype": "INT32", "shape": [1, 384], "data": [1] * 384}
                              for k in ("input_ids", "attention_mask", "token_type_ids")]}).encode()

class Load:
    """Threads sending infer requests on kept-alive connections; records
    (time, status) of each answer, status 0 for a transport failure."""
    def __init__(self, threads=6):
        self.stop = False
        self.results = []
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self.run) for _ in range(threads)]
        for t in self.threads:
            t.start()

    def run(self):
        c = None
        while not self.stop:
            try:
                if c is None:
                    c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=10)
                c.request("POST", "/v2/models/bert-large/infer", body=BODY,
                          headers={"Content-Type": "application/json"})
                r = c.getresponse()
                data = r.read()
                st = r.status if r.status != 200 or b'"outputs"' in data else -1
            except Exception as e:
                st = 0
                c = None
            with self.lock:
                self.results.append((time.time(), st))

    def end(self):
        self.stop = True
        for t in self.threads:
            t.join()
        return self.results

load = Load()
time.sleep(1.0)
pids = children(SERVE)
check("7 worker processes run", len(pids) == 7, pids)
victim = pids[0]
os.kill(victim, signal.SIGKILL)
time.sleep(2.5)
res = load.end()
bad = [s for _, s in res if s != 200]
check("kill -9 under load: no request fails (%d answered)" % len(res),
      len(res) > 100 and not bad, "non-200: %d, e.g. %s" % (len(bad), bad[:5]))
check("the killed worker leaves the pool", "left the pool" in out(), out())
check("it restarts and rejoins",
      wait_for(lambda: out().count("joined the pool") >= joined0 + 2, 10), out())

# A hung worker: it keeps its sockets (the kernel accepts) and never answers.
pids = children(SERVE)
hung = pids[-1]
os.kill(hung, signal.SIGSTOP)
load = Load()
time.sleep(14.0)
res = load.end()
t0 = res[0][0] if res else 0
statuses = set(s for _, s in res)
late = [s for t, s in res if t > t0 + 10.0]
check("hung worker: its requests time out with 504", 504 in statuses, statuses)
check("hung worker: only 200 and 504 answers", statuses <= {200, 504}, statuses)
check("hung worker: the others keep answering (%d answered)" % len(res),
      sum(1 for _, s in res if s == 200) > 50)
check("hung worker: ejected or left the pool",
      "ejected" in out() or out().count("left the pool") >= left0 + 3, out())
check("hung worker: once out, every request succeeds", late and set(late) == {200},
      set(late))
os.kill(hung, signal.SIGCONT)

c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=5)
c.request("GET", "/metrics")
r = c.getresponse()
metrics = r.read().decode()
check("/metrics answers in Prometheus text", r.status == 200 and
      "gpuslice_proxy_requests_total" in metrics and
      re.search(r'^gpuslice_worker_restarts_total\{worker="0",[^}]*\} 1$', metrics, re.M),
      metrics[:400])
c.close()

workers = children(SERVE)
os.kill(SERVE, signal.SIGTERM)
check("SIGTERM: serve stops", wait_for(lambda: not running(SERVE), 15))
check("SIGTERM: every worker process is gone",
      wait_for(lambda: not any(running(p) for p in workers), 5), workers)
finish()
EOF

serve_summary "$tmp/py.out" "$tmp/serve.err"
