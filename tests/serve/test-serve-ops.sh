#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-serve-ops.sh: `gpuslice serve` run from a YAML serve file (with the
# command line overriding it, the file's env reaching the workers, and a
# token-guarded admin API), then 10,000 concurrent client connections on
# loopback (all answered; serve's memory per connection reported), SIGHUP
# re-reading the file (a new worker timeout applies live, a changed replica
# count is named as needing a restart, a bad value changes nothing), then
# SIGTERM under load: every request sent before the signal gets a full 200,
# no answer is cut short, and serve exits 0 with its workers gone.
set -uo pipefail

bin=${GS_BIN:-$(dirname "$0")/../../build/gpuslice}
src=${GS_SRC:-$(dirname "$0")/../..}
. "$src/tests/lib/common.sh"
gs_serve_test serve-ops

# 10,000 client sockets here and as many in serve: raise the soft limit.
ulimit -n "$(ulimit -Hn)" 2>/dev/null
"$bin" -q emu reset --emulate a100-40gb >/dev/null || { echo "FAIL: emu reset"; exit 1; }
"$bin" -q apply -f "$src/configs/a100-40gb.mig-parted.yaml" -c all-1g.5gb >/dev/null ||
  { echo "FAIL: apply all-1g.5gb"; exit 1; }

echo "s3cret-admin-token-0123456789" >"$tmp/token"
cat >"$tmp/serve.yaml" <<EOF
# listen is overridden on the command line: this address cannot be bound
listen: 256.0.0.1:8000
admin-listen: 127.0.0.1:0
admin-token-file: $tmp/token
ephemeral-ports: true
worker-timeout: 10000
max-conns: 12000
policy: p2c
log-dir: $tmp/logs
env:
  GS_SERVE_TEST: from-the-yaml-file
command:
  - sh
  - -c
  - 'echo "env: \$GS_SERVE_TEST"; exec "\$0" worker --listen 127.0.0.1:{port} --profile {profile}'
  - $bin
EOF

"$bin" -q serve -f "$tmp/serve.yaml" --listen 127.0.0.1:0 >"$tmp/serve.out" 2>"$tmp/serve.err" &
serve_pid=$!

PYTHONPATH="$src/tests/lib" timeout 240 python3 - "$serve_pid" "$tmp" <<'EOF' | tee "$tmp/py.out"
import http.client, json, os, re, resource, selectors, signal, socket, subprocess, sys
import threading, time
from gstest import check, finish, read, running, wait_for

SERVE, TMP = int(sys.argv[1]), sys.argv[2]
OUT = TMP + "/serve.out"
TOKEN = open(TMP + "/token").read().strip()
def out():
    return read(OUT)

def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0

wait_for(lambda: re.search(r"^admin on 127\.0\.0\.1:\d+", out(), re.M), 15)
m = re.search(r"^listening on 127\.0\.0\.1:(\d+), \d+ workers", out(), re.M)
a = re.search(r"^admin on 127\.0\.0\.1:(\d+)", out(), re.M)
check("the command line's --listen overrides the file's", m is not None and a is not None,
      out() + open(TMP + "/serve.err").read())
if not m or not a:
    finish()
PORT, ADMIN = int(m.group(1)), int(a.group(1))
check("7 workers from the file's command join the pool",
      wait_for(lambda: out().count("joined the pool") >= 7, 30), out())
log0 = open(TMP + "/logs/worker-0.log").read()
check("the file's env reaches the workers", "env: from-the-yaml-file" in log0, log0[:300])

def admin(path, token=None):
    c = http.client.HTTPConnection("127.0.0.1", ADMIN, timeout=10)
    c.request("GET", path, headers={"Authorization": "Bearer " + token} if token else {})
    r = c.getresponse()
    body = r.read()
    c.close()
    return r.status, body

check("admin: no token, 401", admin("/workers")[0] == 401)
check("admin: a wrong token, 401", admin("/workers", TOKEN + "x")[0] == 401)
st, body = admin("/workers", TOKEN)
check("admin: the file's token, 200 and 7 workers",
      st == 200 and len(json.loads(body)["workers"]) == 7, body[:200])

# ---- SIGHUP re-reads the file ----
YAML = open(TMP + "/serve.yaml").read()
def rewrite(old, new):
    global YAML
    YAML = YAML.replace(old, new)
    with open(TMP + "/serve.yaml", "w") as f:
        f.write(YAML)

rewrite("worker-timeout: 10000\n", "worker-timeout: 300\nreplicas: 2\n")
os.kill(SERVE, signal.SIGHUP)
check("SIGHUP: a changed replica count is named as needing a restart",
      wait_for(lambda: "reload: replicas changed in" in out(), 10), out()[-500:])
check("SIGHUP: no device changed, no worker added",
      "reload: 7 MIG devices, 0 workers added, 0 devices gone" in out(), out()[-500:])
workers = json.loads(admin("/workers", TOKEN)[1])["workers"]
hung = workers[0]["pid"]
os.kill(hung, signal.SIGSTOP)
msgs = []
for i in range(200):
    c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=10)
    c.request("GET", "/v2/health/ready")
    r = c.getresponse()
    body = r.read()
    c.close()
    if r.status == 504:
        msgs.append(body.decode())
        break
check("SIGHUP: the new worker timeout (300 ms) applies live",
      msgs and "did not answer within 300 ms" in msgs[0], msgs)
os.kill(hung, signal.SIGCONT)
rewrite("worker-timeout: 300\n", "worker-timeout: soon\n")
os.kill(SERVE, signal.SIGHUP)
check("SIGHUP: a bad value in the file is refused, nothing changes",
      wait_for(lambda: "a bad value; the file's options stay as they were"
               in open(TMP + "/serve.err").read(), 10))
rewrite("worker-timeout: soon\n", "worker-timeout: 10000\n")
os.kill(SERVE, signal.SIGHUP)
check("SIGHUP: the repaired file is read again",
      wait_for(lambda: out().count("reload: 7 MIG devices") >= 3, 10), out()[-500:])
check("the stopped worker is back in the pool",
      wait_for(lambda: json.loads(admin("/workers/0", TOKEN)[1])["in_pool"], 30))

# ---- 10,000 concurrent connections ----
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
N = min(10000, soft - 100)
rss0 = rss_kib(SERVE)
socks = []
try:
    for i in range(N):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\1\0\0\0\0\0\0\0")
        s.settimeout(20)
        s.connect(("127.0.0.1", PORT))
        socks.append(s)
except OSError as e:
    print("connect %d failed: %s" % (len(socks), e))
check("%d connections open at once" % N, len(socks) == N, len(socks))
# Requests in waves of 300 (7 workers x 64 in flight is the proxy's limit;
# more at once are 503 by design), every connection staying open throughout.
sel = selectors.DefaultSelector()
req = b"GET /v2/health/ready HTTP/1.1\r\nHost: x\r\n\r\n"
answered = 0
end = time.time() + 90
for w in range(0, len(socks), 300):
    wave = socks[w:w + 300]
    pending = len(wave)
    for s in wave:
        s.sendall(req)
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ, bytearray())
    while pending and time.time() < end:
        for key, _ in sel.select(timeout=1):
            try:
                data = key.fileobj.recv(4096)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            key.data.extend(data)
            if not data or b"\r\n\r\n" in key.data:
                sel.unregister(key.fileobj)
                pending -= 1
                if key.data.startswith(b"HTTP/1.1 200"):
                    answered += 1
check("every one of the %d connections answered 200 (all still open)" % N, answered == N,
      "%d answered" % answered)
rss1 = rss_kib(SERVE)
per = (rss1 - rss0) * 1024 / max(N, 1)
print("memory: serve RSS %d KiB before, %d KiB with %d connections open: %.0f bytes each"
      % (rss0, rss1, N, per))
check("memory per open connection under 64 KiB (%.0f bytes)" % per, per < 65536)
for s in socks:
    s.close()
socks = None

# ---- SIGTERM under load ----
BODY = json.dumps({"inputs": [{"name": k, "datatype": "INT32", "shape": [1, 384],
                                "data": [1] * 384}
                               for k in ("input_ids", "attention_mask", "token_type_ids")]}).encode()
t_kill = [None]
results = []
lock = threading.Lock()

def load():
    """One kept-alive connection; records (sent_at, answered_at, outcome) per
    request, outcome the status, 'cut' for a partial answer, 'closed' for a
    connection that ended with no answer byte. Stops after a closing answer
    or a failure."""
    c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=60)
    c.connect()
    while True:
        c.request("POST", "/v2/models/bert-large/infer", body=BODY,
                  headers={"Content-Type": "application/json"})
        sent = time.time()
        try:
            r = c.getresponse()
            data = r.read()
            outcome = r.status if r.status != 200 or b'"outputs"' in data else "cut"
            close = r.getheader("Connection", "") == "close"
        except http.client.RemoteDisconnected:
            outcome, close = "closed", True
        except (http.client.IncompleteRead, OSError):
            outcome, close = "cut", True
        with lock:
            results.append((sent, time.time(), outcome))
        if close or (t_kill[0] and sent > t_kill[0]):
            return

threads = [threading.Thread(target=load) for _ in range(16)]
for t in threads:
    t.start()
# Under load for a while (counted in answers, not seconds: sanitizers and
# busy cores make each request slower).
wait_for(lambda: len(results) >= 100, 60)
workers = [int(x) for x in subprocess.run(["pgrep", "-P", str(SERVE)], capture_output=True,
                                          text=True).stdout.split()]
t_kill[0] = time.time()
os.kill(SERVE, signal.SIGTERM)
for t in threads:
    t.join(60)
before = [o for s, a, o in results if s < t_kill[0]]
inflight = [o for s, a, o in results if s < t_kill[0] < a]
after = [o for s, a, o in results if s >= t_kill[0]]
print("drain: %d requests sent before SIGTERM (%d of them under way at it), %d after"
      % (len(before), len(inflight), len(after)))
check("drain: every request sent before SIGTERM answered 200 in full",
      len(before) >= 100 and all(o == 200 for o in before),
      [o for o in before if o != 200][:10])
check("drain: requests were under way at the signal (%d)" % len(inflight), len(inflight) > 0)
check("drain: no answer cut short", "cut" not in [o for _, _, o in results])
check("drain: serve exits", wait_for(lambda: not running(SERVE), 30))
check("drain: every worker process is gone",
      wait_for(lambda: not any(running(p) for p in workers), 10), workers)
finish()
EOF

serve_summary "$tmp/py.out" "$tmp/serve.err"
