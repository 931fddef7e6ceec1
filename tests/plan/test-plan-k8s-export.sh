#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-plan-k8s-export.sh: `gpuslice plan --export kubernetes` for planned
# fleets, each output validated by k8s_check.py (the Kubernetes object
# shape, the device plugin's config schema from its Go types with its
# refusals, mig-parted's v1 spec, labels against configs), the per-node
# choices (migStrategy none|single|mixed from the layout, timeSlicing or MPS
# replicas, a config per distinct need), the refusals (MPS beside MIG or
# beside time-slicing on one node, a bad namespace), the validator's own
# refusals on hand-written bad documents, and the mig-manager's config.yaml
# applied by gpuslice as nvidia-mig-parted on an emulated node.
# Env: GS_BIN, GS_SRC, GS_TEST_TMP.
set -u
: "${GS_BIN:?}" "${GS_SRC:?}"
. "$(dirname "$0")/../lib/common.sh"
root=$(gs_tmpdir plan-k8s) || exit 1
trap 'rm -rf "$root"' EXIT
check() { if eval "$2"; then ok; else fail "$1"; fi; }
validate() { python3 "$GS_SRC/tests/plan/k8s_check.py" "$@"; }
plan() { "$GS_BIN" -q plan "$@"; }
# value of a key in the YAML documents of file $1: python expression $2 over `docs`
q() { python3 -c 'import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
node = {d["metadata"]["name"]: d["metadata"]["labels"] for d in docs if d["kind"] == "Node"}
dp = [d for d in docs if d["kind"] == "ConfigMap" and "config.yaml" not in d["data"]][0]["data"]
cfg = lambda n: yaml.safe_load(dp[node[n]["nvidia.com/device-plugin.config"]])
print(eval(sys.argv[2]))' "$@"; }

cat >"$root/fleet.yaml" <<'YAML'
nodes:
  - name: mig-and-idle        # MIG GPUs and an idle one: mixed
    gpus:
      - {model: a100-40gb, count: 2}
  - name: uniform             # every GPU the same MIG profile: single
    gpus:
      - {model: h100-80gb, count: 2}
  - name: shared-mps          # MPS only: none, with MPS replicas
    gpus:
      - {model: a100-80gb, count: 1}
  - name: mig-and-ts          # MIG beside time-slicing: mixed, timeSlicing for nvidia.com/gpu
    gpus:
      - {model: a30-24gb, count: 2}
YAML
cat >"$root/work.yaml" <<'YAML'
workloads:
  - {name: bert, replicas: 3, memory: 4GiB, compute: 0.1, model: a100-40gb}
  - {name: llama, replicas: 4, memory: 30GiB, compute: 0.4, model: h100-80gb}
  - {name: chat, replicas: 3, memory: 10GiB, compute: 0.25, isolation: soft, sharing: mps, tenant: a, model: a100-80gb}
  - {name: small, replicas: 2, memory: 5GiB, compute: 0.2, model: a30-24gb}
  - {name: batch, replicas: 3, memory: 4GiB, compute: 0.3, isolation: soft, sharing: time-slicing, tenant: b, model: a30-24gb}
YAML
plan "$root/work.yaml" --fleet "$root/fleet.yaml" --export kubernetes >"$root/k8s.yaml" 2>"$root/err"
check "export of a four-node fleet succeeds" '[ $? -eq 0 ]'
validate "$root/k8s.yaml" >"$root/problems"
check "every document passes the Kubernetes and device-plugin checks" '[ $? -eq 0 ] || { cat "$root/problems"; false; }'
check "MIG GPUs plus an idle GPU: mixed, and the node is labelled" \
  '[ "$(q "$root/k8s.yaml" "cfg(\"mig-and-idle\")[\"flags\"][\"migStrategy\"], node[\"mig-and-idle\"][\"nvidia.com/mig.config\"]")" = "('\''mixed'\'', '\''plan-mig-and-idle'\'')" ]'
check "one MIG profile on every GPU: single" '[ "$(q "$root/k8s.yaml" "cfg(\"uniform\")[\"flags\"][\"migStrategy\"]")" = single ]'
check "MPS GPU: none with MPS replicas for nvidia.com/gpu, failRequestsGreaterThanOne and an MPS root" \
  '[ "$(q "$root/k8s.yaml" "(cfg(\"shared-mps\")[\"flags\"], cfg(\"shared-mps\")[\"sharing\"])")" = "({'\''migStrategy'\'': '\''none'\'', '\''mpsRoot'\'': '\''/run/nvidia/mps'\''}, {'\''mps'\'': {'\''renameByDefault'\'': False, '\''failRequestsGreaterThanOne'\'': True, '\''resources'\'': [{'\''name'\'': '\''nvidia.com/gpu'\'', '\''replicas'\'': 3}]}})" ]'
check "MIG beside a time-sliced GPU: mixed with timeSlicing" \
  '[ "$(q "$root/k8s.yaml" "(cfg(\"mig-and-ts\")[\"flags\"][\"migStrategy\"], list(cfg(\"mig-and-ts\")[\"sharing\"]), cfg(\"mig-and-ts\")[\"sharing\"][\"timeSlicing\"][\"resources\"])")" = "('\''mixed'\'', ['\''timeSlicing'\''], [{'\''name'\'': '\''nvidia.com/gpu'\'', '\''replicas'\'': 3}])" ]'
check "configs are named by need and shared by nodes with the same need" \
  '[ "$(q "$root/k8s.yaml" "sorted(dp)")" = "['\''mig-mixed'\'', '\''mig-mixed-timeslicing-3'\'', '\''mig-none-mps-3'\'', '\''mig-single'\'']" ]'

# The mig-manager's config.yaml, applied on an emulated node by gpuslice as
# nvidia-mig-parted (what the mig-manager runs), then asserted.
python3 -c 'import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
print([d for d in docs if d["kind"] == "ConfigMap" and "config.yaml" in d["data"]][0]["data"]["config.yaml"], end="")' \
  "$root/k8s.yaml" >"$root/config.yaml"
mkdir "$root/bin" && ln -s "$GS_BIN" "$root/bin/nvidia-mig-parted"
export GPUSLICE_EMU_STATE="$root/emu.json" GPUSLICE_APPLY_LOCK="$root/apply"
unset GPUSLICE_EMULATE MIG_PARTED_CONFIG_FILE MIG_PARTED_SELECTED_CONFIG MIG_PARTED_HOOKS_FILE
"$GS_BIN" -q emu reset --emulate a100-40gb:2 >/dev/null
"$root/bin/nvidia-mig-parted" apply -f "$root/config.yaml" -c plan-mig-and-idle >/dev/null 2>&1 &&
  "$root/bin/nvidia-mig-parted" assert -f "$root/config.yaml" -c plan-mig-and-idle >/dev/null 2>&1
check "the mig-manager ConfigMap's config applies and asserts on an emulated node of that shape" \
  '[ $? -eq 0 ] && [ "$("$GS_BIN" -q gi list --json | python3 -c "import json,sys; print(len(json.load(sys.stdin)))")" = 3 ]'

# What the device plugin cannot run on one node is refused, naming it.
cat >"$root/mps-mig.yaml" <<'YAML'
workloads:
  - {name: bert, replicas: 3, memory: 4GiB, compute: 0.1}
  - {name: chat, replicas: 3, memory: 10GiB, compute: 0.25, isolation: soft, sharing: mps, tenant: a}
YAML
plan "$root/mps-mig.yaml" --gpus a100-40gb:2 --export kubernetes >/dev/null 2>"$root/err"
check "MPS beside MIG on one node: refused (exit 2), naming the node, the GPUs and the fix" \
  '[ $? -eq 2 ] && grep -q "^gpuslice: node node-0: GPU 1 (mps) and GPU 0 (mig): the NVIDIA device plugin shares no GPU with MPS on a node with MIG devices" "$root/err" && grep -q "plan those workloads onto separate nodes" "$root/err"'
cat >"$root/mps-ts.yaml" <<'YAML'
workloads:
  - {name: chat, replicas: 3, memory: 10GiB, compute: 0.25, isolation: soft, sharing: mps, tenant: a}
  - {name: batch, replicas: 2, memory: 10GiB, compute: 0.3, isolation: soft, sharing: time-slicing, tenant: b}
YAML
plan "$root/mps-ts.yaml" --gpus h100-80gb:2 --export kubernetes >/dev/null 2>"$root/err"
check "MPS beside time-slicing on one node: refused (exit 2)" \
  '[ $? -eq 2 ] && grep -q "runs one sharing mode per node" "$root/err"'
plan "$root/mps-ts.yaml" --gpus h100-80gb:2 --export labels >/dev/null 2>&1
check "... and so are its labels and device-plugin views" '[ $? -eq 2 ]'
plan "$root/work.yaml" --fleet "$root/fleet.yaml" --export kubernetes --namespace GPU_Operator >/dev/null 2>"$root/err"
check "a namespace Kubernetes refuses: exit 2 naming it" '[ $? -eq 2 ] && grep -q "namespace .GPU_Operator. is not a Kubernetes namespace name" "$root/err"'
plan "$root/work.yaml" --fleet "$root/fleet.yaml" --export labels >"$root/labels"
check "--export labels: one kubectl line per node with both labels" \
  '[ "$(wc -l <"$root/labels")" = 4 ] && grep -qx "kubectl label node uniform nvidia.com/mig.config=plan-uniform nvidia.com/device-plugin.config=mig-single --overwrite" "$root/labels"'

# The validator refuses what the plugin or the API server would.
base='apiVersion: v1
kind: ConfigMap
metadata: {name: dp, namespace: gpu-operator}
data:
  c: |
%s
---
apiVersion: v1
kind: ConfigMap
metadata: {name: mp, namespace: gpu-operator}
data:
  config.yaml: |
    version: v1
    mig-configs:
      m:
        - devices: all
          mig-enabled: %s
%s
---
apiVersion: v1
kind: Node
metadata:
  name: %s
  labels: {nvidia.com/mig.config: m, nvidia.com/device-plugin.config: c}
'
refused() { # NAME EXPECTED-TEXT PLUGIN-CONFIG [MIG-ENABLED [MIG-DEVICES [NODE]]]
  printf "$base" "$3" "${4:-false}" "${5:-}" "${6:-n1}" >"$root/bad.yaml"
  validate --expect-error "$2" "$root/bad.yaml" >"$root/why"
  check "validator refuses $1" '[ $? -eq 0 ] || { cat "$root/why"; false; }'
}
mps='    sharing:
      mps:
        resources: [{name: nvidia.com/gpu, replicas: 2}]'
refused "MPS with mig-strategy mixed" "not supported with MPS" "    version: v1
    flags: {migStrategy: mixed, mpsRoot: /run/nvidia/mps}
$mps" true '          mig-devices: {"1g.5gb": 7}'
refused "MPS with mig-strategy single (MIG devices)" "not supported for MIG devices" "    version: v1
    flags: {migStrategy: single, mpsRoot: /run/nvidia/mps}
$mps" true '          mig-devices: {"1g.5gb": 7}'
refused "MPS without an MPS root" "requires --mps-root" "    version: v1
    flags: {migStrategy: none}
$mps"
refused "one replica" "replicas must be >= 2" "    version: v1
    sharing: {timeSlicing: {resources: [{name: nvidia.com/gpu, replicas: 1}]}}"
refused "sharing without resources" "no resources specified" "    version: v1
    sharing: {timeSlicing: {renameByDefault: true}}"
refused "a miscased key the plugin would ignore" "unknown field 'migstrategy'" "    version: v1
    flags: {migstrategy: mixed}"
refused "an unknown MIG strategy" "unknown MIG strategy: Mixed" "    version: v1
    flags: {migStrategy: Mixed}"
refused "another config version" "version" "    version: v2"
refused "a time-sliced MIG resource without mixed" "no such resource under mig-strategy none" "    version: v1
    sharing: {timeSlicing: {resources: [{name: nvidia.com/mig-1g.5gb, replicas: 2}]}}"
refused "a device list the plugin ignores" "ignores 'devices'" "    version: v1
    sharing: {timeSlicing: {resources: [{name: gpu, replicas: 2, devices: [0]}]}}"
refused "MIG GPUs under mig-strategy none" "would not be advertised" "    version: v1
    flags: {migStrategy: none}" true '          mig-devices: {"1g.5gb": 7}'
refused "MIG devices listed with MIG disabled" "included when 'mig-enabled' is false" "    version: v1" false '          mig-devices: {"1g.5gb": 7}'
refused "a node name with capitals" "is not a DNS-1123 subdomain" "    version: v1" false "" "Node1"
printf 'apiVersion: v1\nkind: Node\nmetadata: {name: n1, namespace: x, labels: {nvidia.com/mig.config: %s}}\n' \
  "plan-$(printf 'x%.0s' $(seq 60))" >"$root/bad.yaml"
validate "$root/bad.yaml" >"$root/why"
check "validator refuses a namespaced Node and a label value over 63 characters" \
  'grep -q "cluster-scoped" "$root/why" && grep -q "at most 63" "$root/why"'

summary
