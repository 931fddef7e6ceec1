#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-recover-other-gpu.sh: `gpuslice recover` finishes a journal only on
# the GPUs it was written for (issue 14, item 12). An apply on an emulated
# A100-SXM4-40GB is killed after its journal and first change; then:
# - the machine is now an A100-80GB (whose GPU instance profile ids are the
#   40GB's, so the journal would apply cleanly, with other sizes): refused,
#   naming both models and the fix, exit 3, nothing changed, journal kept;
# - the same model with another GPU UUID (the journal's UUID edited): refused,
#   naming both UUIDs;
# - a journal without a UUID (written before it was recorded) still
#   recovers on its own model, and the right journal recovers as before.
# Env: GS_BIN (gpuslice), GS_TEST_TMP (scratch dir).
set -u
: "${GS_BIN:?set GS_BIN to the gpuslice binary}"
. "${GS_SRC:-$(dirname "$0")/../..}/tests/lib/common.sh"
root=$(gs_tmpdir recover-other-gpu) || exit 1
trap 'rm -rf "$root"' EXIT
unset GPUSLICE_EMULATE GPUSLICE_EMU_KILL_AFTER GPUSLICE_LOCK_WAIT
export GPUSLICE_EMU_STATE="$root/s.json" GPUSLICE_APPLY_LOCK="$root/s.apply"
J="$root/s.apply.journal"
g() { "$GS_BIN" -q "$@"; }
cat >"$root/c.yaml" <<'YAML'
version: v1
mig-configs:
  all-1g:
    - devices: all
      mig-enabled: true
      mig-devices: {"1g.5gb": 7}
YAML
gis() { g gi list --json | python3 -c 'import json,sys
print(" ".join(sorted("%s@%d" % (x["name"], x["start"]) for x in json.load(sys.stdin))))'; }
uuid() { g list --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["uuid"])'; }

# An interrupted apply on an A100-40GB: MIG on (change 1), one GI (change 2), killed.
interrupted() {
  g emu reset --emulate a100-40gb >/dev/null || { echo "setup failed"; exit 1; }
  (GPUSLICE_EMU_KILL_AFTER=2 timeout -k 5 60 "$GS_BIN" -q apply -f "$root/c.yaml" -c all-1g; :) >/dev/null 2>&1
  [ -s "$J" ] || { echo "setup: the killed apply left no journal"; exit 1; }
}

# recover_refused NAME PATTERN...: recover exits 3, says every PATTERN,
# leaves the GPUs as they were and the journal in place.
recover_refused() {
  local name=$1 before rc
  shift
  before=$(gis)
  timeout -k 5 60 "$GS_BIN" -q recover >"$root/out" 2>"$root/err"
  rc=$?
  [ "$rc" -eq 3 ] || { fail "$name: recover exited $rc, expected 3: $(cat "$root/err")"; return; }
  for p in "$@"; do
    grep -qF -- "$p" "$root/err" || { fail "$name: the message lacks '$p': $(cat "$root/err")"; return; }
  done
  [ "$(gis)" = "$before" ] || { fail "$name: recover changed the GPU: $(gis)"; return; }
  [ -s "$J" ] || { fail "$name: the journal was removed"; return; }
  ok
}

# 1. Another model.
interrupted
u40=$(uuid)
grep -q "\"uuid\": \"$u40\"" "$J" && ok || fail "the journal does not record GPU 0's UUID $u40: $(head -c 300 "$J")"
g emu reset --emulate a100-80gb >/dev/null && g mig enable >/dev/null
recover_refused "a journal of an A100-40GB on an A100-80GB" "$J" "a100-40gb" "a100-80gb" \
  "delete the journal"

# 2. The same model, another GPU.
interrupted
python3 - "$J" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
j["gpus"][0]["uuid"] = "GPU-00000000-1111-2222-3333-444444444444"
json.dump(j, open(sys.argv[1], "w"))
PY
recover_refused "a journal of another A100-40GB" "GPU-00000000-1111-2222-3333-444444444444" "$(uuid)"

# 3. A journal from before UUIDs were recorded still recovers on its model;
#    the journal as written recovers as it always did.
interrupted
python3 - "$J" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
j["gpus"][0].pop("uuid", None)
json.dump(j, open(sys.argv[1], "w"))
PY
if g recover >/dev/null 2>"$root/err" && g assert -f "$root/c.yaml" -c all-1g >/dev/null && [ ! -e "$J" ]; then
  ok
else
  fail "a journal without a UUID did not recover: $(cat "$root/err")"
fi
interrupted
if g recover >/dev/null 2>"$root/err" && g assert -f "$root/c.yaml" -c all-1g >/dev/null && [ ! -e "$J" ]; then
  ok
else
  fail "the right journal did not recover: $(cat "$root/err")"
fi
summary
