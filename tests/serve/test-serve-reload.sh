#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-serve-reload.sh: SIGHUP re-reads the MIG devices. On an emulated A100
# with two 1g.5gb devices, serve runs two workers; `gpuslice gi create` adds a
# third device and SIGHUP starts a worker for it alone; `gi destroy` of one
# device and SIGHUP drain and retire its worker alone. The other workers keep
# their processes, and requests sent throughout all succeed.
set -uo pipefail

bin=${GS_BIN:-$(dirname "$0")/../../build/gpuslice}
src=${GS_SRC:-$(dirname "$0")/../..}
. "$src/tests/lib/common.sh"
gs_serve_test serve-reload

gs_emu_gis 1g.5gb,1g.5gb

"$bin" -q serve --listen 127.0.0.1:0 --admin-listen 127.0.0.1:0 --ephemeral-ports \
  --worker-timeout 10000 --log-dir "$tmp/logs" -- "$bin" worker --listen '127.0.0.1:{port}' --profile '{profile}' \
  >"$tmp/serve.out" 2>"$tmp/serve.err" &
serve_pid=$!

PYTHONPATH="$src/tests/lib" timeout 120 python3 - "$serve_pid" "$tmp" "$bin" <<'EOF' | tee "$tmp/py.out"
import http.client, json, os, re, signal, subprocess, sys, threading, time
from gstest import check, finish, read, running, wait_for

SERVE, TMP, BIN = int(sys.argv[1]), sys.argv[2], sys.argv[3]
OUT = TMP + "/serve.out"
def out():
    return read(OUT)

def gs(*args):
    return subprocess.run([BIN, "-q"] + list(args), capture_output=True, text=True)

wait_for(lambda: re.search(r"^admin on 127\.0\.0\.1:\d+", out(), re.M), 15)
m = re.search(r"^listening on 127\.0\.0\.1:(\d+), \d+ workers", out(), re.M)
a = re.search(r"^admin on 127\.0\.0\.1:(\d+)", out(), re.M)
if not m or not a:
    check("serve starts", False, out() + open(TMP + "/serve.err").read())
    finish()
PORT, ADMIN = int(m.group(1)), int(a.group(1))
check("2 workers join", wait_for(lambda: out().count("joined the pool") >= 2, 20), out())

def workers():
    c = http.client.HTTPConnection("127.0.0.1", ADMIN, timeout=10)
    c.request("GET", "/workers")
    body = json.loads(c.getresponse().read())
    c.close()
    return body["workers"]

class Load:
    def __init__(self):
        self.stop, self.statuses = False, []
        self.t = threading.Thread(target=self.run)
        self.t.start()

    def run(self):
        c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=10)
        while not self.stop:
            try:
                c.request("GET", "/v2/health/ready")
                r = c.getresponse()
                r.read()
                self.statuses.append(r.status)
            except Exception:
                self.statuses.append(0)
                c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=10)

    def end(self):
        self.stop = True
        self.t.join()
        return self.statuses

before = workers()
load = Load()
r = gs("gi", "create", "1g.5gb", "-C")
check("gi create adds a device", r.returncode == 0, r.stderr)
os.kill(SERVE, signal.SIGHUP)
check("SIGHUP: one worker added for the new device",
      wait_for(lambda: "reload: 3 MIG devices, 1 workers added, 0 devices gone" in out(), 10), out())
check("SIGHUP: the new worker joins",
      wait_for(lambda: re.search(r"^worker 2 .* joined the pool", out(), re.M), 20), out())
now = workers()
check("SIGHUP: the first two workers keep their processes",
      [w["pid"] for w in now[:2]] == [w["pid"] for w in before], (before, now))

# Destroy the GPU instance of worker 0's device, under load.
victim = now[0]
gi = [d["gi"] for d in json.loads(gs("list", "--json").stdout)[0]["mig_devices"]
      if d["uuid"] == victim["uuid"]]
r1 = gs("ci", "destroy", "--gi", str(gi[0]) if gi else "99")
r2 = gs("gi", "destroy", "--gi", str(gi[0]) if gi else "99")
check("gi destroy removes worker 0's device", gi and r1.returncode == 0 and r2.returncode == 0,
      (gi, r1.stderr, r2.stderr))
os.kill(SERVE, signal.SIGHUP)
check("SIGHUP: one device gone, nothing added",
      wait_for(lambda: "reload: 2 MIG devices, 0 workers added, 1 devices gone" in out(), 10), out())
check("SIGHUP: worker 0 is retired",
      wait_for(lambda: "worker 0 retired: its device is gone" in out(), 15), out())
check("SIGHUP: worker 0's process exits", wait_for(lambda: not running(victim["pid"]), 15))
time.sleep(1.0)
statuses = load.end()
after = workers()
check("SIGHUP: workers 1 and 2 keep their processes and stay in the pool",
      [w["pid"] for w in after[1:]] == [w["pid"] for w in now[1:]] and
      all(w["in_pool"] for w in after[1:]), after)
check("SIGHUP: worker 0 stays out, stopped and retired, and is not restarted",
      after[0]["state"] == "stopped" and after[0]["retired"] and not after[0]["in_pool"] and
      after[0]["pid"] == 0, after[0])
check("every request during the reloads succeeded (%d)" % len(statuses),
      len(statuses) > 20 and set(statuses) == {200}, set(statuses))
os.kill(SERVE, signal.SIGTERM)
check("SIGTERM: serve stops", wait_for(lambda: not running(SERVE), 20))
finish()
EOF

serve_summary "$tmp/py.out" "$tmp/serve.err"
