#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-proxy-health.sh: workers that fail in the ways probes miss, behind
# `gpuslice serve` (issue 14 item 9), three fake workers
# (tests/lib/fake_worker.py): worker 0 passes its probe but answers garbage,
# 1 and 2 answer well.
# 1. Under steady load for 36 s, no client sees an error: a garbage answer
#    (nothing passed on yet) is retried on another worker, and worker 0's
#    trials after its ejection are retried too; worker 0 gets fewer and
#    fewer requests, its time out doubling (10 s, 20 s...), where a fixed
#    10 s timer gave it 3 every 10 s. Its probe also flaps (the same process
#    unready, then ready: a slow probe on a loaded machine): that gives it no
#    early trial. The doubling is checked by structure, not by windows: each
#    trial comes at least its back-off after the one before (timers never
#    fire early; a loaded machine only makes them late), and the admin API's
#    ejection count and back-off agree with the trials seen. Once it answers
#    well again and is restarted (a new process, ready), its trial request
#    brings it back at once. One proxy thread (--threads 1): each thread
#    ejects on its own (docs/proxy.md), so with two a second thread's own
#    failures and trials add hits off the first one's schedule (the flake
#    of a loaded 2-core CI run, where serve defaults to 2 threads).
# 2. SIGSTOP of worker 1 with requests under way: those are retried on
#    another worker at the 10 s first-byte timeout and answered 200, not 504
#    at the 30 s worker timeout.
set -uo pipefail

bin=${GS_BIN:-$(dirname "$0")/../../build/gpuslice}
src=${GS_SRC:-$(dirname "$0")/../..}
. "$src/tests/lib/common.sh"
gs_serve_test proxy-health

gs_emu_layout all-2g.10gb
# worker 0 answers garbage (until $tmp/w0.log.heal exists), the others well
"$bin" -q serve --listen 127.0.0.1:0 --admin-listen 127.0.0.1:0 --ephemeral-ports --policy rr --threads 1 -- \
  sh -c 'if [ "$1" = 0 ]; then m=flappy; else m=good; fi; exec python3 "$0" "$2" $m "$3/w$1.log"' \
  "$src/tests/lib/fake_worker.py" '{index}' '{port}' "$tmp" >"$tmp/serve.out" 2>"$tmp/serve.err" &
serve_pid=$!

PYTHONPATH="$src/tests/lib" timeout 150 python3 - "$serve_pid" "$tmp" <<'EOF' | tee "$tmp/py.out"
import json, os, signal, sys, threading, time, urllib.request
from gstest import check, finish, http_status, port_of, read, wait_for, serve_port

SERVE, TMP = int(sys.argv[1]), sys.argv[2]
OUT = TMP + "/serve.out"
ok = wait_for(lambda: read(OUT).count("joined the pool") >= 3, 30)
PORT, ADMIN = serve_port(OUT), port_of(OUT, "admin on")
check("serve starts with 3 fake workers", ok and PORT and ADMIN, read(OUT) + read(TMP + "/serve.err"))
if not (ok and PORT and ADMIN):
    finish()

def get():
    return http_status(PORT, "/x")

def hits(w):
    return [float(l.split()[0]) for l in read("%s/w%d.log" % (TMP, w)).splitlines()]

# ---- 1. a worker that answers garbage ----
t0 = time.time()
statuses = []
while time.time() - t0 < 36:
    statuses.append(get())
    time.sleep(0.05)
bad = [s for s in statuses if s != 200]
h0 = [t - t0 for t in hits(0)]
print("%d requests in 36 s, %d not 200; worker 0 got requests at %s s"
      % (len(statuses), len(bad), ", ".join("%.1f" % t for t in h0)))
check("no client sees an error from the garbage worker", not bad, bad[:5])
def worker(n):
    with urllib.request.urlopen("http://127.0.0.1:%d/workers/%d" % (ADMIN, n), timeout=5) as f:
        return json.load(f)
w0 = lambda: worker(0)
# the three that ejected it come in the first moments; the rest are trials,
# the n-th (from 0) at least 10 s * 2^n after the request before it
pre = [t for t in h0 if t < 5]
trials = [t for t in h0 if t >= 5]
gaps = [(b - a, 10 * 2 ** i)
        for i, (a, b) in enumerate(zip(pre[-1:] + trials, trials))]
st = {"ejected": False, "ejections": -1, "backoff_ms": -1, "trial_in_ms": -1, "trial": False}
st.update(w0())
check("after its ejection worker 0 gets trials only at its doubling back-off "
      "(%d trials, gap/back-off %s, admin: %d ejections, back-off %d ms)"
      % (len(trials), ["%.1f/%d" % g for g in gaps], st["ejections"], st["backoff_ms"]),
      len(pre) >= 3 and 1 <= len(trials) <= 3 and all(g >= 0.9 * b for g, b in gaps)
      and st["ejected"] and st["ejections"] == len(trials) + 1
      and st["backoff_ms"] == 10000 * 2 ** len(trials) and (0 < st["trial_in_ms"] <= st["backoff_ms"] or st["trial"]),
      (h0, st))
# it answers well from now on: its next trial (at about 70 s, 40 s after the
# last) would bring it back; the supervisor reporting it ready again as a new
# process (after a restart) puts it on trial at once
open(TMP + "/w0.log.heal", "w").close()
old = w0()["pid"]
os.kill(old, signal.SIGKILL)
ok = wait_for(lambda: w0()["state"] == "ready" and w0()["pid"] not in (0, old), 30)
n0 = len(hits(0))
for _ in range(12):
    get()
check("healed and ready again, worker 0 is back after one trial request",
      ok and w0()["in_pool"] and len(hits(0)) - n0 >= 3, (w0(), len(hits(0)) - n0))

# ---- 2. a stopped worker ----
pid1 = worker(1)["pid"]
os.kill(pid1, signal.SIGSTOP)
res = []
def one():
    t = time.time()
    res.append((get(), time.time() - t))
ts = [threading.Thread(target=one) for _ in range(9)]
for t in ts: t.start()
for t in ts: t.join(90)
os.kill(pid1, signal.SIGCONT)
slow = [s for s, d in res if d > 5]
print("with worker 1 stopped: %s" % ", ".join("%s in %.1f s" % r for r in res))
check("requests held by a stopped worker are retried elsewhere and answered 200",
      len(res) == 9 and all(s == 200 for s, _ in res) and slow, res)
check("... before the 30 s worker timeout", all(d < 25 for _, d in res), res)
os.kill(SERVE, signal.SIGTERM)
finish()
EOF

serve_summary "$tmp/py.out" "$tmp/serve.err"
