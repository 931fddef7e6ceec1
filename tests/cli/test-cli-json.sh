#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-cli-json.sh: every read command's --json output is valid JSON (checked
# by python3's json module), has the field names docs/cli.md documents, and
# nothing else on stdout; layouts --json counts the reference's layouts
# (mig-facts.md §4: 19 on A100, 78 with the double-memory 1g, 5 on A30).
# Env: GS_BIN (gpuslice), GS_TEST_TMP (scratch dir).
set -u

: "${GS_BIN:?set GS_BIN to the gpuslice binary}"
mkdir -p "${GS_TEST_TMP:-/tmp}"
work=$(mktemp -d "${GS_TEST_TMP:-/tmp}/cli-json.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
unset GPUSLICE_EMULATE
export GPUSLICE_EMU_STATE="$work/emu.json"
passed=0
failed=0

if ! command -v python3 >/dev/null; then
  echo "FAIL: python3 is needed to check JSON"
  echo "0 passed, 1 failed"
  exit 1
fi

gs() {
  timeout 20 "$GS_BIN" -q "$@"
}

# check NAME PYTHON-ASSERTIONS -- ARGS...: runs `gpuslice ARGS --json`, parses
# stdout as JSON into `v` and runs the assertions (python statements; `need`
# checks an object has the listed keys).
check() {
  local name=$1 code=$2 rc
  shift 3
  gs "$@" --json >"$work/out" 2>"$work/err"
  rc=$?
  if [ "$rc" -ne 0 ]; then
    echo "FAIL: $name: gpuslice $* --json exited $rc: $(cat "$work/err")"
    failed=$((failed + 1))
    return
  fi
  if ! python3 -c '
import json, sys
def need(obj, *keys):
    assert isinstance(obj, dict), "not an object: %r" % (obj,)
    missing = [k for k in keys if k not in obj]
    assert not missing, "missing %s in %s" % (missing, json.dumps(obj)[:300])
with open(sys.argv[1]) as f:
    v = json.load(f)
exec(sys.argv[2])
' "$work/out" "$code" 2>"$work/py"; then
    echo "FAIL: $name: gpuslice $* --json: $(tail -n 1 "$work/py")"
    failed=$((failed + 1))
    return
  fi
  passed=$((passed + 1))
}

gs emu reset --emulate a100-40gb >/dev/null || echo "setup: emu reset failed"

# A machine with MIG off: every list is valid JSON, and empty.
check "gi list, MIG off" 'assert v == [], v' -- gi list
check "ci list, MIG off" 'assert v == [], v' -- ci list
check "ci profiles, no GI" 'assert v == [], v' -- ci profiles
check "list, MIG off" '
assert len(v) == 1
need(v[0], "gpu", "name", "uuid", "pci_bus_id", "model", "mig_current", "mig_pending", "memory_mib", "mig_devices")
assert v[0]["mig_devices"] == [] and v[0]["mig_current"] is False
assert v[0]["name"] == "NVIDIA A100-SXM4-40GB" and v[0]["uuid"].startswith("GPU-")' -- list

# A 3g.20gb (auto: 4:4, GI 1) with three 1c CIs, then two 1g.5gb with their
# CIs (auto: slices 0 and 1, GIs 11 and 12 in the A100's orientation, §8.1).
gs mig enable -i 0 >/dev/null && gs gi create 3g.20gb -i 0 >/dev/null &&
  gs ci create 0,0,0 -i 0 --gi 1 >/dev/null && gs gi create 1g.5gb,1g.5gb -i 0 -C >/dev/null &&
  gs emu proc-add --pid 4242 --name train -i 0 --gi 1 --ci 0 --used-mib 1000 >/dev/null ||
  echo "setup: building the machine failed"

check "list" '
need(v[0], "gpu", "name", "uuid", "pci_bus_id", "model", "mig_current", "mig_pending", "memory_mib", "mig_devices")
d = v[0]["mig_devices"]
assert len(d) == 5, d
for x in d:
    need(x, "mig_dev", "gi", "ci", "uuid", "legacy_uuid", "name", "gi_profile", "memory_mib", "sms")
    assert x["uuid"].startswith("MIG-") and x["legacy_uuid"].startswith("MIG-GPU-")
assert [x["mig_dev"] for x in d] == list(range(5))
assert [(x["gi"], x["ci"]) for x in d] == sorted((x["gi"], x["ci"]) for x in d)
assert d[0]["name"] == "1c.3g.20gb" and d[0]["gi_profile"] == "3g.20gb" and d[0]["memory_mib"] == 19968' -- list
check "mig status" '
assert len(v) == 1
need(v[0], "gpu", "uuid", "pci_bus_id", "name", "mig_current", "mig_pending")
assert v[0]["mig_current"] is True and v[0]["mig_pending"] is True' -- mig status
check "gi profiles" '
assert [p["profile_id"] for p in v] == [19, 20, 15, 14, 9, 5, 0], [p["profile_id"] for p in v]
for p in v:
    need(p, "gpu", "name", "profile_id", "free", "total", "memory_mib", "memory_gib", "p2p", "sms", "ce",
         "dec", "enc", "jpeg", "ofa", "compute_slices", "placements")
    need(p["placements"], "starts", "size")
by = {p["name"]: p for p in v}
assert by["3g.20gb"]["free"] == 0 and by["3g.20gb"]["total"] == 2
assert by["1g.5gb"]["free"] == 2 and by["1g.5gb"]["memory_gib"] == 4.75
assert by["7g.40gb"]["sms"] == 98 and by["7g.40gb"]["memory_mib"] == 40192' -- gi profiles
check "gi placements" '
assert len(v) == 7
for p in v:
    need(p, "gpu", "name", "profile_id", "placements")
by = {p["profile_id"]: p["placements"] for p in v}
assert by[9] == {"starts": [0, 4], "size": 4}, by[9]
assert by[15] == {"starts": [0, 2, 4, 6], "size": 2}, by[15]
assert by[0] == {"starts": [0], "size": 8}, by[0]' -- gi placements
check "gi placements PROFILE" 'assert [p["profile_id"] for p in v] == [9], v' -- gi placements 3g.20gb
check "gi list" '
for g in v:
    need(g, "gpu", "name", "profile_id", "id", "start", "size")
# nvidia-smi -lgi order: by profile (-lgip order), then GI ID.
ids = [g["id"] for g in v]
assert ids == [11, 12, 1], ids
assert [(g["start"], g["size"]) for g in v] == [(0, 1), (1, 1), (4, 4)], v' -- gi list
check "ci profiles" '
for p in v:
    need(p, "gpu", "gi", "name", "profile_id", "default", "free", "total", "sms", "ce", "dec", "enc", "jpeg", "ofa")
in1 = {p["name"]: p for p in v if p["gi"] == 1}
assert sorted(in1) == ["1c.3g.20gb", "2c.3g.20gb", "3g.20gb"], sorted(in1)
assert in1["1c.3g.20gb"]["free"] == 0 and in1["1c.3g.20gb"]["total"] == 3
assert in1["3g.20gb"]["default"] is True and in1["1c.3g.20gb"]["default"] is False' -- ci profiles
check "ci profiles --gi" 'assert {p["gi"] for p in v} == {11}, v' -- ci profiles --gi 11
check "ci placements" '
for p in v:
    need(p, "gpu", "gi", "name", "profile_id", "placements")
    need(p["placements"], "starts", "size")
assert {p["gi"] for p in v} == {1, 11, 12}' -- ci placements
check "ci list" '
for c in v:
    need(c, "gpu", "gi", "name", "profile_id", "id", "start", "size")
in1 = [c for c in v if c["gi"] == 1]
assert [c["id"] for c in in1] == [0, 1, 2] and [c["start"] for c in in1] == [0, 1, 2], in1
assert len(v) == 5' -- ci list
check "emu status" '
need(v, "state", "gpus", "processes")
need(v["gpus"][0], "gpu", "model", "mig_current", "mig_pending")
need(v["processes"][0], "pid", "name", "gpu", "gi", "ci", "used_mib")
assert v["processes"][0]["pid"] == 4242 and v["gpus"][0]["model"] == "a100-40gb"' -- emu status
check "models" '
assert len(v) >= 3
for m in v:
    need(m, "key", "name", "aliases", "pci_id", "arch", "compute_slices", "memory_slices",
         "memory_mib", "profiles", "maximal_layouts")
by = {m["key"]: m for m in v}
assert by["a100-40gb"]["maximal_layouts"] == 19 and by["a30-24gb"]["maximal_layouts"] == 5' -- models
check "layouts a100-40gb" '
need(v, "model", "name", "maximal", "all_shapes", "count", "layouts")
assert v["count"] == 19 == len(v["layouts"]), v["count"]
for l in v["layouts"]:
    for g in l:
        need(g, "profile", "profile_id", "start", "size", "gi_id")' -- layouts a100-40gb
check "layouts a100-40gb --all-shapes" '
assert v["count"] == 78 == len(v["layouts"]) and v["all_shapes"] is True, v["count"]' -- layouts a100-40gb --all-shapes
check "layouts a30-24gb" 'assert v["count"] == 5 == len(v["layouts"]), v["count"]' -- layouts a30-24gb
check "layouts a100-40gb --partial" '
assert v["maximal"] is False and v["count"] == 298, v["count"]' -- layouts a100-40gb --partial

check "layouts --check" '
need(v, "model", "name", "valid", "layout", "maximal", "still_fits")
assert v["valid"] is True and v["maximal"] is False, v
assert [(g["profile"], g["start"], g["gi_id"]) for g in v["layout"]] == [("3g.20gb", 0, 2), ("2g.10gb", 4, 3)], v["layout"]
fits = {f["profile"]: f["free"] for f in v["still_fits"]}
assert fits == {"1g.5gb": 1, "1g.5gb+me": 1, "1g.10gb": 1}, fits' -- layouts a100-40gb --check 3g.20gb,2g.10gb@4
check "layouts --check (maximal, placements chosen)" '
assert v["maximal"] is True and v["still_fits"] == [], v
assert sorted((g["profile"], g["start"]) for g in v["layout"]) == [("1g.5gb", 2), ("1g.5gb", 3), ("2g.10gb", 0), ("3g.20gb", 4)], v["layout"]' -- layouts a100-40gb --check 19,19,14,9

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
