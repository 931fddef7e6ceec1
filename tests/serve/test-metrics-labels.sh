#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-metrics-labels.sh: the slice's identity on /metrics (issue 20 item 9):
# serve over two emulated A100s split into 3g.20gb slices (4 workers); each
# worker's /metrics and serve's /metrics label every per-worker series with
# gpu_uuid (the MIG device's UUID), profile and gpu (its GPU's index), as
# Triton and DCGM label theirs, matching what the admin API and `gpuslice
# list` say of that slice; `promtool check metrics` (Debian's prometheus)
# finds no error in either, and lint warnings only on Triton's own metric
# names (docs/worker.md lists them). Ends with "N passed, N failed".
set -uo pipefail

bin=${GS_BIN:-$(dirname "$0")/../../build/gpuslice}
src=${GS_SRC:-$(dirname "$0")/../..}
. "$src/tests/lib/common.sh"
tmp=$(gs_tmpdir mlabels)
export GPUSLICE_EMU_STATE=$tmp/emu.json
serve_pid=
cleanup() {
  [ -n "$serve_pid" ] && kill "$serve_pid" 2>/dev/null && wait "$serve_pid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

if ! command -v promtool >/dev/null; then
  echo "SKIP: promtool is not installed (Debian's prometheus package, scripts/deps.sh)"
  echo "0 passed, 0 failed"
  exit 0
fi
"$bin" -q emu reset --emulate a100-40gb:2 >/dev/null || { echo "FAIL: emu reset"; exit 1; }
"$bin" -q apply -f "$src/configs/a100-40gb.mig-parted.yaml" -c all-3g.20gb >/dev/null ||
  { echo "FAIL: apply all-3g.20gb"; exit 1; }
"$bin" -q list --json >"$tmp/list.json" 2>/dev/null

"$bin" -q serve --listen 127.0.0.1:0 --admin-listen 127.0.0.1:0 --ephemeral-ports \
  --log-dir "$tmp" -- "$bin" worker --listen '127.0.0.1:{port}' --profile '{profile}' \
  >"$tmp/serve.out" 2>"$tmp/serve.err" &
serve_pid=$!

PYTHONPATH="$src/tests/lib" timeout 120 python3 - "$tmp" <<'EOF' | tee "$tmp/py.out"
import json, os, re, subprocess, sys, urllib.request
import gstest
from gstest import check, port_of, read, wait_for, serve_port

TMP = sys.argv[1]
sout = os.path.join(TMP, "serve.out")
hport, aport = serve_port(sout), port_of(sout, "admin on")
check("serve prints its ports", hport and aport, read(os.path.join(TMP, "serve.err")))

def get(port, path):
    with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=10) as f:
        return f.read().decode()

def workers():
    try:
        return json.loads(get(aport, "/workers"))["workers"]
    except Exception:
        return []
check("4 workers join", wait_for(lambda: sum(w.get("in_pool", False) for w in workers()) == 4, 60),
      workers())

# the machine's own account of each MIG device: uuid -> (gpu index, profile)
truth = {}
try:
    for g in json.load(open(os.path.join(TMP, "list.json"))):
        for d in g.get("mig_devices", []):
            truth[d["uuid"]] = (str(g["gpu"]), d["name"])
except Exception:
    pass
ws = workers()
check("`gpuslice list --json` names the 4 MIG devices on GPUs 0 and 1",
      len(truth) == 4 and {g for g, _ in truth.values()} == {"0", "1"}, truth)

LABELS = re.compile(r'^(\w+)\{([^}]*)\} ')
def series(text):
    out = []
    for line in text.splitlines():
        m = LABELS.match(line)
        if m:
            out.append((m.group(1), dict(re.findall(r'(\w+)="([^"]*)"', m.group(2)))))
    return out

def promtool(text):
    r = subprocess.run(["promtool", "check", "metrics"], input=text.encode(), capture_output=True)
    return r.returncode, (r.stdout + r.stderr).decode()

# each worker's own /metrics
for w in ws:
    text = get(w["port"], "/metrics")
    s = series(text)
    want = {"gpu_uuid": w["uuid"], "profile": "3g.20gb", "gpu": truth.get(w["uuid"], ("?",))[0]}
    check("worker %d: every series has gpu_uuid, profile and gpu of its slice" % w["worker"],
          s and all({k: l.get(k) for k in want} == want for _, l in s), (want, s[:2]))
    rc, out = promtool(text)
    bad = [l for l in out.splitlines() if l.strip() and not l.startswith("nv_inference_")]
    check("worker %d: promtool finds no error, lint only on Triton's nv_inference_* names" % w["worker"],
          rc in (0, 3) and not bad, (rc, out[:400]))

# serve's /metrics
text = get(hport, "/metrics")
s = [(n, l) for n, l in series(text) if "worker" in l]
ok = bool(s)
for n, l in s:
    w = next((x for x in ws if str(x["worker"]) == l["worker"]), None)
    ok = ok and w is not None and l.get("gpu_uuid") == w["uuid"] and \
        l.get("profile") == "3g.20gb" and l.get("gpu") == truth.get(w["uuid"], ("?",))[0]
check("serve: every per-worker series has its worker's gpu_uuid, profile and gpu", ok, s[:3])
rc, out = promtool(text)
check("serve: promtool finds no error and no lint problem", rc == 0 and not out.strip(),
      (rc, out[:600]))
print("%d passed, %d failed" % (gstest.passed, gstest.failed))
sys.exit(1 if gstest.failed else 0)
EOF
rc=${PIPESTATUS[0]}
gs_py_end test-metrics-labels "$rc" "$tmp/serve.err"
