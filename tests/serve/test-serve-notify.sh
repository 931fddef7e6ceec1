#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-serve-notify.sh: serve tells a service manager how it is doing, as
# systemd's Type=notify expects: a fake NOTIFY_SOCKET (an AF_UNIX datagram
# socket in Python recording every message) watches a real serve with an
# emulated worker (gpuslice worker) held back until the test lets it start.
# READY=1 comes only once that worker is ready (never while it is held),
# STATUS= says how many workers are ready, WATCHDOG=1 pings arrive when
# WATCHDOG_USEC is set (and none when it is not), SIGHUP is RELOADING=1 then
# READY=1, SIGTERM is STOPPING=1, and serve still exits 0.
set -uo pipefail

bin=${GS_BIN:-$(dirname "$0")/../../build/gpuslice}
src=${GS_SRC:-$(dirname "$0")/../..}
. "$src/tests/lib/common.sh"
gs_serve_test serve-notify

gs_emu_gis 1g.5gb

PYTHONPATH="$src/tests/lib" timeout 150 python3 - "$tmp" "$bin" <<'EOF' | tee "$tmp/py.out"
import http.client, os, re, signal, socket, subprocess, sys, threading, time
from gstest import check, finish, read, wait_for

TMP, BIN = sys.argv[1], sys.argv[2]
GATE = TMP + "/gate"


class Manager:
    """The service manager's end of NOTIFY_SOCKET: every datagram, in order."""

    def __init__(self):
        self.name = "gpuslice-test-notify-%d-%d" % (os.getpid(), time.monotonic_ns())
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind("\0" + self.name)
        self.sock.settimeout(0.2)
        self.msgs, self.stop = [], False
        self.t = threading.Thread(target=self.run)
        self.t.start()

    def run(self):
        while not self.stop:
            try:
                self.msgs.append(self.sock.recv(4096).decode())
            except socket.timeout:
                pass

    def end(self):
        self.stop = True
        self.t.join()
        self.sock.close()

    def index(self, word, after=0):
        """Index of the first message from `after` with the line `word`, or -1."""
        for i in range(after, len(self.msgs)):
            if word in self.msgs[i].split("\n"):
                return i
        return -1

    def count(self, word, after=0):
        return sum(word in m.split("\n") for m in self.msgs[after:])


def serve(mgr, name, watchdog_usec):
    env = dict(os.environ, NOTIFY_SOCKET="@" + mgr.name)
    env.pop("WATCHDOG_USEC", None)
    env.pop("WATCHDOG_PID", None)
    if watchdog_usec:
        env["WATCHDOG_USEC"] = str(watchdog_usec)
    # The worker starts only once GATE exists: until then it is not ready.
    worker = ("while [ ! -e '%s' ]; do sleep 0.05; done; exec '%s' worker --listen "
              "'127.0.0.1:{port}' --profile '{profile}'" % (GATE, BIN))
    out, err = open(TMP + "/" + name + ".out", "w"), open(TMP + "/" + name + ".err", "w")
    p = subprocess.Popen([BIN, "-q", "serve", "--listen", "127.0.0.1:0", "--admin-listen", "off",
                          "--ephemeral-ports", "--", "sh", "-c", worker],
                         stdout=out, stderr=err, env=env)
    with open(TMP + "/serve.pid", "w") as f:
        f.write(str(p.pid))
    return p


def port(name):
    m = re.search(r"^listening on 127\.0\.0\.1:(\d+), \d+ workers", read(TMP + "/" + name + ".out"),
                  re.M)
    return int(m.group(1)) if m else 0


def ready_status(p):
    try:
        c = http.client.HTTPConnection("127.0.0.1", p, timeout=5)
        c.request("GET", "/v2/health/ready")
        s = c.getresponse().status
        c.close()
        return s
    except OSError:
        return 0


# ---- 1: held worker, then ready; watchdog; reload; stop ----
mgr = Manager()
p = serve(mgr, "serve1", 400000)  # WatchdogSec=0.4s: a ping every 0.2 s
up = wait_for(lambda: port("serve1"), 20)
check("serve listens", up, read(TMP + "/serve1.err"))
# The listener is up but no worker is ready: no READY=1 however long we wait.
time.sleep(1.5)
check("no READY=1 while the only worker is held back", mgr.index("READY=1") < 0, mgr.msgs)
check("the proxy itself says not ready meanwhile", ready_status(port("serve1")) == 503,
      ready_status(port("serve1")))
check("WATCHDOG=1 pings while starting", mgr.count("WATCHDOG=1") >= 2, mgr.msgs)
open(GATE, "w").close()
got = wait_for(lambda: mgr.index("READY=1") >= 0, 30)
check("READY=1 once the worker is ready", got, read(TMP + "/serve1.out"))
if got:
    check("READY=1 after the worker joined the pool",
          "joined the pool" in read(TMP + "/serve1.out"), read(TMP + "/serve1.out"))
    check("a request through serve right after READY=1 is 200", ready_status(port("serve1")) == 200)
    ready_msg = mgr.msgs[mgr.index("READY=1")]
    check("READY=1 comes with STATUS= and the worker count",
          "STATUS=1 of 1 workers ready" in ready_msg.split("\n"), ready_msg)
    check("READY=1 is sent once", mgr.count("READY=1") == 1, mgr.msgs)
n = len(mgr.msgs)
time.sleep(1.2)
check("WATCHDOG=1 pings keep coming once ready", mgr.count("WATCHDOG=1", n) >= 3,
      mgr.msgs[n:])

n = len(mgr.msgs)
p.send_signal(signal.SIGHUP)
got = wait_for(lambda: mgr.index("READY=1", max(mgr.index("RELOADING=1", n), n) + 1) > 0
               and mgr.index("RELOADING=1", n) >= 0, 20)
r, ready_again = mgr.index("RELOADING=1", n), mgr.index("READY=1", n)
check("SIGHUP: RELOADING=1, then READY=1", got and 0 <= r < ready_again, mgr.msgs[n:])
if r >= 0:
    check("RELOADING=1 carries MONOTONIC_USEC", any(
        l.startswith("MONOTONIC_USEC=") for l in mgr.msgs[r].split("\n")), mgr.msgs[r])

n = len(mgr.msgs)
p.send_signal(signal.SIGTERM)
rc = p.wait(30)
check("SIGTERM: STOPPING=1", mgr.index("STOPPING=1", n) >= 0, mgr.msgs[n:])
check("no READY=1 after STOPPING=1", mgr.index("READY=1", max(mgr.index("STOPPING=1", n), n)) < 0,
      mgr.msgs[n:])
check("serve exits 0 after SIGTERM", rc == 0, read(TMP + "/serve1.err"))
mgr.end()

# ---- 2: no WATCHDOG_USEC: no pings ----
mgr = Manager()
p = serve(mgr, "serve2", 0)
got = wait_for(lambda: mgr.index("READY=1") >= 0, 30)
check("READY=1 without a watchdog", got, read(TMP + "/serve2.err"))
time.sleep(1.0)
check("no WATCHDOG=1 when WATCHDOG_USEC is not set", mgr.count("WATCHDOG=1") == 0, mgr.msgs)
p.send_signal(signal.SIGTERM)
check("serve exits 0", p.wait(30) == 0, read(TMP + "/serve2.err"))
mgr.end()
finish()
EOF
res=$(sed -n 's/^RESULT \([0-9]*\) \([0-9]*\)$/\1 \2/p' "$tmp/py.out")
if [ -n "$res" ]; then
  passed=$((passed + ${res% *})); failed=$((failed + ${res#* }))
else
  fail "the Python part did not finish: $(tail -5 "$tmp/py.out")"
fi
serve_pid=$(cat "$tmp/serve.pid" 2>/dev/null)
kill -0 "$serve_pid" 2>/dev/null && fail "serve still runs" || serve_pid=
summary
