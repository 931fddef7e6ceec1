#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-mig-parted-compat.sh: nvidia-mig-parted's published config shape
# (deployments/systemd/config-default.yaml and examples/config.yaml of
# NVIDIA/mig-parted: named configs, `devices: all | [0,1]`, device-filter by
# PCI id as one string or a list, mixed `mig-enabled: false` entries, `{}`,
# `+me` and `1c.` profiles), written out here as our own test data, applied on
# emulated GPUs of three models through both backends (the emulator, and the
# NVML backend over nvml-emu as on real GPUs), with mig-parted's CLI behaviour:
# assert's exit codes, -m, -a, -c left out, `-f -`, the env variables.
# Env: GS_BIN (gpuslice), GS_NVML_EMU (the built libnvidia-ml.so.1), GS_TEST_TMP.
set -u
: "${GS_BIN:?}" "${GS_NVML_EMU:?}"
root=$(mktemp -d "${GS_TEST_TMP:-/tmp}/mig-parted-compat.XXXXXX") || exit 1
trap 'rm -rf "$root"' EXIT
unset GPUSLICE_EMULATE GPUSLICE_EMU_KILL_AFTER MIG_PARTED_CONFIG_FILE MIG_PARTED_SELECTED_CONFIG MIG_PARTED_HOOKS_FILE
export GPUSLICE_EMU_STATE="$root/emu.json" GPUSLICE_APPLY_LOCK="$root/apply"
passed=0
failed=0
check() { if eval "$2"; then passed=$((passed + 1)); else echo "FAIL: $1"; failed=$((failed + 1)); fi; }

cat >"$root/config.yaml" <<'YAML'
version: v1
mig-configs:
  all-disabled:
    - devices: all
      mig-enabled: false

  all-enabled:
    - devices: all
      mig-enabled: true
      mig-devices: {}

  # A100-40GB, A800-40GB
  all-1g.5gb.me:
    - devices: all
      mig-enabled: true
      mig-devices:
        "1g.5gb+me": 1

  # H100-80GB, H800-80GB, A100-80GB, A800-80GB, A100-40GB, A800-40GB
  all-1g.10gb:
    # H100-80GB, H800-80GB, A100-80GB, A800-80GB
    - device-filter: ["0x233010DE", "0x233110DE", "0x232210DE", "0x20B210DE", "0x20B510DE", "0x20F310DE", "0x20F510DE", "0x232410DE"]
      devices: all
      mig-enabled: true
      mig-devices:
        "1g.10gb": 7

    # A100-40GB, A800-40GB
    - device-filter: ["0x20B010DE", "0x20B110DE", "0x20F110DE", "0x20F610DE"]
      devices: all
      mig-enabled: true
      mig-devices:
        "1g.10gb": 4

    # A30-24GB
    - device-filter: "0x20B710DE"
      devices: all
      mig-enabled: false

  all-balanced:
    # A100-40GB, A800-40GB
    - device-filter: ["0x20B010DE", "0x20B110DE", "0x20F110DE", "0x20F610DE"]
      devices: all
      mig-enabled: true
      mig-devices:
        "1g.5gb": 2
        "2g.10gb": 1
        "3g.20gb": 1

    # H100-80GB, H800-80GB, A100-80GB, A800-80GB
    - device-filter: ["0x233010DE", "0x233110DE", "0x232210DE", "0x20B210DE", "0x20B510DE", "0x20F310DE", "0x20F510DE", "0x232410DE"]
      devices: all
      mig-enabled: true
      mig-devices:
        "1g.10gb": 2
        "2g.20gb": 1
        "3g.40gb": 1

    # A30-24GB
    - device-filter: "0x20B710DE"
      devices: all
      mig-enabled: true
      mig-devices:
        "1g.6gb": 2
        "2g.12gb": 1

  custom-config:
    - devices: [0]
      mig-enabled: false
    - devices: [1]
      mig-enabled: true
      mig-devices:
        "1c.3g.20gb": 3
        "2g.10gb": 1
    - devices: [2]
      mig-enabled: true
      mig-devices:
        "3g.40gb": 2
    - devices: [3]
      mig-enabled: true
      mig-devices:
        "4g.24gb": 1
YAML

# "gpu:profile" of every GI, sorted, and the MIG mode per GPU.
gis() { "$GS_BIN" -q gi list --json | python3 -c 'import json,sys
print(" ".join(sorted("%d:%s" % (x["gpu"], x["name"]) for x in json.load(sys.stdin))))'; }
# "profile@start" of one GPU's GIs, by start.
places() { "$GS_BIN" -q gi list -i "$1" --json | python3 -c 'import json,sys
print(" ".join("%s@%d" % (x["name"], x["start"]) for x in sorted(json.load(sys.stdin), key=lambda x: x["start"])))'; }
mig() { "$GS_BIN" -q list --json | python3 -c 'import json,sys
print(" ".join("%d:%s" % (x["gpu"], "on" if x["mig_current"] else "off") for x in json.load(sys.stdin)))'; }

for backend in emu nvml; do
  if [ $backend = nvml ]; then
    g() { GPUSLICE_NVML_LIBRARY="$GS_NVML_EMU" "$GS_BIN" -q --backend nvml "$@"; }
  else
    g() { "$GS_BIN" -q --backend emu "$@"; }
  fi
  "$GS_BIN" -q emu reset --emulate a100-40gb:2,h100-80gb,a30-24gb >/dev/null
  C=(-f "$root/config.yaml")
  g apply "${C[@]}" -c all-balanced >/dev/null
  check "$backend: all-balanced picks each model's entry by PCI id" \
    '[ "$(gis)" = "0:1g.5gb 0:1g.5gb 0:2g.10gb 0:3g.20gb 1:1g.5gb 1:1g.5gb 1:2g.10gb 1:3g.20gb 2:1g.10gb 2:1g.10gb 2:2g.20gb 2:3g.40gb 3:1g.6gb 3:1g.6gb 3:2g.12gb" ]'
  g assert "${C[@]}" -c all-balanced >/dev/null
  check "$backend: assert after apply exits 0" '[ $? -eq 0 ]'
  # mig-parted creates the 3g, then the 2g, then the 1g's (types.MigConfig.Flatten),
  # each where the driver's automatic placement puts it: 3g at 4, 2g at 0, 1g at 2 and 3.
  check "$backend: all-balanced lands where real mig-parted puts it (A100, H100)" \
    '[ "$(places 0)" = "2g.10gb@0 1g.5gb@2 1g.5gb@3 3g.20gb@4" ] && [ "$(places 2)" = "2g.20gb@0 1g.10gb@2 1g.10gb@3 3g.40gb@4" ]'
  g assert "${C[@]}" -c all-1g.10gb >"$root/out" 2>"$root/err"
  check "$backend: assert of another config exits 1 with what differs" \
    '[ $? -eq 1 ] && grep -q "has:    MIG enabled: 3g.20gb@4" "$root/out" && grep -q "config: MIG enabled: 1g.10gb x4" "$root/out" && grep -q "does not match" "$root/err"'
  g apply "${C[@]}" -c all-1g.10gb >/dev/null
  check "$backend: all-1g.10gb: 4 on the A100s, 7 on the H100, the A30 out of MIG" \
    '[ "$(gis | tr " " "\n" | sort | uniq -c | tr -s " " | tr "\n" ";")" = " 4 0:1g.10gb; 4 1:1g.10gb; 7 2:1g.10gb;" ] && [ "$(mig)" = "0:on 1:on 2:on 3:off" ]'
  g apply "${C[@]}" -c custom-config >/dev/null && g assert "${C[@]}" -c custom-config >/dev/null
  check "$backend: custom-config: per-device entries, mixed mig-enabled, 1c.3g.20gb packed in one GI" \
    '[ "$(gis)" = "1:2g.10gb 1:3g.20gb 2:3g.40gb 2:3g.40gb 3:4g.24gb" ] && [ "$(mig)" = "0:off 1:on 2:on 3:on" ] &&
     [ "$(g ci list -i 1 --json | python3 -c "import json,sys; print(sorted(x[\"name\"] for x in json.load(sys.stdin)))")" = "['\''1c.3g.20gb'\'', '\''1c.3g.20gb'\'', '\''1c.3g.20gb'\'', '\''2g.10gb'\'']" ]'
  g export --format mig-parted -c now >"$root/now.yaml"
  g assert -f "$root/now.yaml" >/dev/null
  check "$backend: mig-parted export asserts as matching (-c left out: one config)" '[ $? -eq 0 ]'
  g apply "${C[@]}" -c all-disabled >/dev/null && g apply -m "${C[@]}" -c all-enabled >/dev/null
  check "$backend: apply -m: MIG on, no instances" '[ "$(mig)" = "0:on 1:on 2:on 3:on" ] && [ -z "$(gis)" ]'
  g assert -m "${C[@]}" -c all-balanced >/dev/null
  check "$backend: assert -m checks only the mode" '[ $? -eq 0 ]'
  g assert "${C[@]}" -c all-balanced >/dev/null 2>&1
  check "$backend: ... and without -m the instances" '[ $? -eq 1 ]'
  g apply "${C[@]}" -c all-1g.5gb.me --dry-run >/dev/null 2>"$root/err"
  check "$backend: 1g.5gb+me on the H100: refused naming file, line and the profiles it has" \
    '[ $? -eq 2 ] && grep -q "config.yaml:17: config all-1g.5gb.me, entry 0: GPU 2 (h100-80gb) has no profile .1g.5gb+me.; its GPU instance profiles are 1g.10gb, 1g.10gb+me" "$root/err"'
done

g() { "$GS_BIN" -q "$@"; }
"$GS_BIN" -q emu reset --emulate a100-40gb:2 >/dev/null
g apply -f "$root/config.yaml" -c all-1g.5gb.me >/dev/null
check "+me profile applied on the A100s" '[ "$(gis)" = "0:1g.5gb+me 1:1g.5gb+me" ]'
MIG_PARTED_CONFIG_FILE="$root/config.yaml" MIG_PARTED_SELECTED_CONFIG=all-1g.5gb.me g assert >/dev/null
check "MIG_PARTED_CONFIG_FILE and MIG_PARTED_SELECTED_CONFIG stand for -f and -c" '[ $? -eq 0 ]'
g assert -a -f "$root/config.yaml" -c all-balanced >"$root/out"
check "assert -a: the config is valid" '[ $? -eq 0 ] && grep -q "is valid" "$root/out"'
g assert -a -f "$root/config.yaml" -c nope >/dev/null 2>&1
check "assert -a: a missing config is bad input" '[ $? -eq 2 ]'
g apply -f "$root/config.yaml" >/dev/null 2>"$root/err"
check "-c left out of a file of several configs: exit 2 listing them" \
  '[ $? -eq 2 ] && grep -q "holds 6 configs; choose one with -c: all-disabled, all-enabled, all-1g.5gb.me" "$root/err"'
printf 'version: v1\nmig-configs:\n  only:\n    - devices: [1]\n      mig-enabled: true\n      mig-devices: {"7g.40gb": 1}\n' |
  g apply -f - >/dev/null
check "-f - with one config: applied to GPU 1 only" '[ "$(gis)" = "0:1g.5gb+me 1:7g.40gb" ]'
printf 'version: v1\nmig-configs:\n  only:\n    - devices: [1]\n      mig-enabled: true\n      mig-devices: {"7g.40gb": 1}\n' >"$root/one.yaml"
g assert -f "$root/one.yaml" >"$root/out" 2>"$root/err"
check "assert: a GPU no entry names means not applied (as mig-parted)" \
  '[ $? -eq 1 ] && grep -q "GPU 0 (a100-40gb): no entry of config only names it" "$root/out" && grep -q "does not name every GPU" "$root/err"'
g apply -f "$root/config.yaml" -c all-balanced --dry-run --json >"$root/plan.json"
check "--dry-run --json: kept, steps with placements, mode and reset per GPU" \
  'python3 - "$root/plan.json" <<PY
import json, sys
d = json.load(open(sys.argv[1]))
g1 = d["gpus"][1]
assert d["dry_run"] and not d["applied"] and not d["matches"], d
assert g1["kept"] == [] and g1["mig"] == {"enabled": True, "pending": True, "wanted": True, "gpu_reset": False}, g1
assert g1["steps"][0] == {"op": "destroy-ci", "gpu_instance": 0, "compute_instance": 0}, g1["steps"][0]
assert g1["steps"][1] == {"op": "destroy-gi", "gpu_instance": 0, "profile": "7g.40gb", "start": 0}, g1["steps"][1]
assert {"op": "create-gi", "profile": "3g.20gb", "start": 4, "size": 4} in g1["steps"], g1["steps"]
assert g1["destroys"] == 2 and g1["creates"] == 8, g1
PY'

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
