#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-cli-mig-uuid.sh: `-i` naming a MIG device, in the R470+ form
# (MIG-<uuid>) and the legacy one (MIG-GPU-<uuid>/<gi>/<ci>), as CUDA_VISIBLE_DEVICES
# takes them: list, gi list, ci list and ci profiles narrow to that device,
# ci destroy destroys only its compute instance; commands that act on whole
# GPUs refuse it naming the GPU index to use. Also `ci destroy --ci N` for a
# compute instance that does not exist fails with NOT_FOUND (exit 1).
# Env: GS_BIN (gpuslice), GS_TEST_TMP (scratch dir).
set -u
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

: "${GS_BIN:?set GS_BIN to the gpuslice binary}"
work=$(gs_tmpdir cli-mig-uuid)
trap 'rm -rf "$work"' EXIT
unset GPUSLICE_EMULATE
export GPUSLICE_EMU_STATE="$work/emu.json"

gs() {
  timeout 20 "$GS_BIN" -q "$@"
}

# py NAME CODE FILE: runs python assertions on the JSON in FILE (as `v`).
py() {
  if python3 -c 'import json, sys
v = json.load(open(sys.argv[1]))
exec(sys.argv[2])' "$3" "$2" 2>"$work/py"; then
    ok
  else
    fail "$1: $(tail -n 1 "$work/py")"
  fi
}

# refuse NAME STATUS FRAGMENT -- ARGS: exit status and one stderr line with FRAGMENT.
refuse() {
  local name=$1 want=$2 frag=$3 rc
  shift 4
  gs "$@" >"$work/out" 2>"$work/err"
  rc=$?
  if [ "$rc" -ne "$want" ] || [ "$(wc -l <"$work/err")" -ne 1 ] || ! grep -qF -- "$frag" "$work/err"; then
    fail "$name: gpuslice $*: exit $rc (want $want), stderr: $(cat "$work/err")"
  else
    ok
  fi
}

# Two GPUs; GPU 1 gets a 3g.20gb with three 1c CIs and two 1g.5gb with their
# full CIs, so its MIG devices differ in GI and in CI.
{
  gs emu reset --emulate a100-40gb:2 &&
    gs mig enable &&
    gs gi create 3g.20gb@0 1g.5gb 1g.5gb -C -i 1 &&
    gs ci destroy -i 1 --gi 2 &&
    gs ci create 1c.3g.20gb,0,0 -i 1 --gi 2 &&
    gs gi create 1g.5gb -C -i 0
} >/dev/null 2>"$work/setup" || fail "setup: $(cat "$work/setup")"

gs list -i 1 --json >"$work/all.json"
# The middle 1c CI of GI 2 (CI 1): its UUID in both forms.
read -r uuid legacy < <(python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))[0]["mig_devices"]
m = [x for x in d if x["gi"] == 2 and x["ci"] == 1][0]
print(m["uuid"], m["legacy_uuid"])' "$work/all.json")
case $uuid in MIG-*) ok ;; *) fail "no MIG UUID for GPU 1 GI 2 CI 1 in: $(cat "$work/all.json")" ;; esac

for form in "$uuid" "$legacy"; do
  gs list -i "$form" --json >"$work/l.json" || fail "list -i $form"
  py "list -i $form" '
assert [g["gpu"] for g in v] == [1], v
assert [(m["gi"], m["ci"]) for m in v[0]["mig_devices"]] == [(2, 1)], v' "$work/l.json"
  gs gi list -i "$form" --json >"$work/g.json" || fail "gi list -i $form"
  py "gi list -i $form" 'assert [(g["gpu"], g["id"]) for g in v] == [(1, 2)], v' "$work/g.json"
  gs ci list -i "$form" --json >"$work/c.json" || fail "ci list -i $form"
  py "ci list -i $form" 'assert [(c["gpu"], c["gi"], c["id"]) for c in v] == [(1, 2, 1)], v' "$work/c.json"
  gs ci profiles -i "$form" --json >"$work/p.json" || fail "ci profiles -i $form"
  py "ci profiles -i $form" 'assert {(p["gpu"], p["gi"]) for p in v} == {(1, 2)}, v' "$work/p.json"
done

# The text form of list shows the parent GPU and the one device.
gs list -i "$uuid" >"$work/l.txt"
if [ "$(wc -l <"$work/l.txt")" -eq 2 ] && grep -q "^GPU 1: " "$work/l.txt" && grep -qF "$uuid" "$work/l.txt"; then
  ok
else
  fail "list -i $uuid printed: $(cat "$work/l.txt")"
fi

refuse "mig disable with a MIG UUID" 2 "use -i 1" -- mig disable -i "$uuid"
refuse "gi create with a MIG UUID" 2 "use -i 1" -- gi create 1g.5gb -i "$uuid"
refuse "gi profiles with a MIG UUID" 2 "use -i 1" -- gi profiles -i "$uuid"
refuse "MIG UUID beside another item" 2 "only -i item" -- list -i "0,$uuid"
refuse "unknown MIG UUID" 2 "no MIG device has this UUID" -- list -i MIG-00000000-0000-5000-8000-000000000000
refuse "legacy UUID of a missing CI" 2 "no MIG device has this UUID" -- list -i "${legacy%/*}/7"
refuse "MIG UUID and --ci" 2 "drop --gi/--ci" -- ci destroy -i "$uuid" --ci 0
refuse "ci destroy --ci of no CI" 1 "has no compute instance 5 (it has 0, 1, 2" -- ci destroy -i 1 --gi 2 --ci 5
refuse "gi destroy of a MIG device's GI" 1 "NVML_ERROR_IN_USE" -- gi destroy -i "$uuid"

# ci destroy -i MIG-… destroys that compute instance and no other.
gs ci destroy -i "$uuid" >"$work/d.txt" 2>&1 || fail "ci destroy -i $uuid: $(cat "$work/d.txt")"
gs ci list --json >"$work/after.json"
py "ci destroy -i MIG-uuid" '
assert sorted((c["gpu"], c["gi"], c["id"]) for c in v) == [(0, 9, 0), (1, 2, 0), (1, 2, 2), (1, 7, 0), (1, 9, 0)], v' "$work/after.json"
refuse "a destroyed device's UUID" 2 "no MIG device has this UUID" -- list -i "$uuid"

summary
