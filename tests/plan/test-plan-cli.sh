#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-plan-cli.sh: `gpuslice plan` end to end on the fixtures in
# tests/plan/data: the printed plan and its JSON, --incremental against a
# fleet's current layouts, every export (the mig-parted one applied to
# emulated GPUs and asserted), the trace replay and the synthetic generator,
# and bad input: exit status and one stderr line naming file, line, workload.
# Env: GS_BIN (gpuslice), GS_SRC (the source tree), GS_TEST_TMP (scratch).
set -u
: "${GS_BIN:?}" "${GS_SRC:?}"
. "$GS_SRC/tests/lib/common.sh"
root=$(gs_tmpdir plan-cli) || exit 1
trap 'rm -rf "$root"' EXIT
unset GPUSLICE_EMULATE MIG_PARTED_CONFIG_FILE MIG_PARTED_SELECTED_CONFIG MIG_PARTED_HOOKS_FILE
export GPUSLICE_EMU_STATE="$root/emu.json" GPUSLICE_APPLY_LOCK="$root/apply"
data="$GS_SRC/tests/plan/data"

# expect NAME STATUS FRAGMENT... -- ARGS: runs gpuslice ARGS; checks the exit
# status, one stderr line on failure, and every fragment in stdout or stderr.
expect() {
  local name=$1 want=$2 frags=() rc
  shift 2
  while [ "$1" != "--" ]; do frags+=("$1"); shift; done
  shift
  "$GS_BIN" -q "$@" >"$root/out" 2>"$root/err"
  rc=$?
  if [ "$rc" -ne "$want" ]; then fail "$name: exit $rc, want $want: $(head -c 600 "$root/err")"; return; fi
  if [ "$want" -eq 2 ] && [ "$(wc -l <"$root/err")" -ne 1 ]; then fail "$name: stderr is not one line: $(cat "$root/err")"; return; fi
  for f in ${frags[@]+"${frags[@]}"}; do
    if ! grep -qF -- "$f" "$root/out" "$root/err"; then fail "$name: no '$f' in: $(head -c 800 "$root/out" "$root/err")"; return; fi
  done
  ok
}

# check NAME COMMAND...: a shell condition over the last output.
check() {
  local name=$1
  shift
  if "$@"; then ok; else fail "$name"; fi
}

w="$data/workloads.yaml"
fleet="$data/fleet.yaml"

# ---- plans ----
expect "plan text" 0 "summary: 4 of 6 GPUs used" "llama #1" "mps" "time-slicing, 3 replicas" \
  -- plan "$w" --gpus a100-40gb:4,h100-80gb:2
expect "plan json" 0 -- plan "$w" --gpus a100-40gb:4,h100-80gb:2 --json
check "json fields" python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
assert p["policy"] == "ours" and p["summary"]["gpus_used"] == 4 and p["unplaced"] == []
units = [u for g in p["gpus"] for u in g["units"]]
assert len(units) == 12, len(units)
mig = [u for u in units if "profile" in u]
assert all("start" in u and "gi_id" in u for u in mig)
mps = [u for g in p["gpus"] if g["mode"] == "mps" for u in g["units"]]
assert mps and all(u["thread_percentage"] == 25 and u["memory_limit_mib"] == 10240 for u in mps)
' "$root/out"
for policy in first-fit best-fit; do
  expect "policy $policy" 0 "summary:" -- plan "$w" --gpus a100-40gb:4,h100-80gb:2 --policy "$policy"
done
expect "incremental keeps instances" 0 "0 destroyed, 0 replicas moved" "3g.20gb      start 4   llama #0" \
  -- plan "$w" --fleet "$fleet" --incremental
expect "fresh plan counts changes" 0 "2 destroyed" -- plan "$w" --fleet "$fleet"
for policy in ours first-fit best-fit; do
  "$GS_BIN" -q plan "$data/models.yaml" --gpus a100-40gb:10,h100-80gb:10 --policy "$policy" --json >"$root/$policy.json"
done
check "ours picks the model that fits" python3 -c '
import json, sys
used = [json.load(open(f))["summary"]["gpus_used"] for f in sys.argv[1:]]
assert used[0] < used[1] and used[0] < used[2], used
' "$root/ours.json" "$root/first-fit.json" "$root/best-fit.json"
expect "tenants do not share MPS" 0 "\"gpus_used\": 2" -- plan "$data/tenants.yaml" --gpus a100-40gb:3 --json
check "one tenant per MPS GPU" python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
tenant = {"a": "red", "b": "blue", "c": "red"}
for g in p["gpus"]:
    if g["mode"] == "mps":
        assert len({tenant[u["workload"]] for u in g["units"]}) == 1, g
' "$root/out"
expect "unplaced replicas" 1 "unplaced: big #2" "a100-40gb needs 3g.20gb or bigger" "full or fragmented" -- plan "$data/too-many.yaml" --gpus a100-40gb:1

# ---- exports ----
expect "export mig-parted" 0 "version: v1" "plan-node-a:" '"1g.5gb": 3' -- plan "$w" --fleet "$fleet" --export mig-parted
cp "$root/out" "$root/mig.yaml"
"$GS_BIN" -q emu reset --emulate a100-40gb:2 >/dev/null 2>&1
expect "exported config applies" 0 -- apply -f "$root/mig.yaml" -c plan-node-a
expect "and asserts" 0 "matches" -- assert -f "$root/mig.yaml" -c plan-node-a
expect "export gpuslice" 0 "version: gpuslice/v1" "{profile: 3g.20gb, placement: 4}" \
  -- plan "$w" --fleet "$fleet" --incremental --export gpuslice
cp "$root/out" "$root/ours.yaml"
"$GS_BIN" -q emu reset --emulate a100-40gb:2 >/dev/null 2>&1
expect "placed config applies" 0 -- apply -f "$root/ours.yaml" -c plan-node-a
expect "and asserts" 0 "matches" -- assert -f "$root/ours.yaml" -c plan-node-a
# node-b holds a time-sliced and an MPS GPU, which one device plugin cannot
# serve (tests/plan/test-plan-k8s-export.sh has the Kubernetes exports).
expect "export labels refuses a node mixing MPS and time-slicing" 2 \
  "node node-b: GPU 1 (mps) and GPU 0 (time-slicing)" -- plan "$w" --fleet "$fleet" --export labels
expect "export device plugin: the same refusal" 2 "runs one sharing mode per node" \
  -- plan "$w" --fleet "$fleet" --export device-plugin
expect "export gres" 0 "GresTypes=gpu" "Gres=gpu:1g.5gb:3,gpu:3g.20gb:3 Features=mig,a100-40gb" \
  "NodeName=node-a Name=gpu Type=1g.5gb MultipleFiles=/dev/nvidia1,/dev/nvidia-caps/nvidia-cap237," \
  "# NodeName=node-b Name=mps Count=100 File=/dev/nvidia1" "NodeName=node-b Name=gpu Type=h100_80gb_hbm3" \
  -- plan "$w" --fleet "$fleet" --export gres
expect "export kind" 2 "--export 'helm'" -- plan "$w" --gpus a100-40gb --export helm

# ---- replay and synthetic ----
for mode in fractional mig; do
  for policy in ours first-fit best-fit fgd random; do
    expect "replay $mode $policy" 0 -- plan replay --nodes "$data/nodes.csv" --pods "$data/pods.csv" \
      --mode "$mode" --policy "$policy" --seeds 3 --json
    check "replay $mode $policy numbers" python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))
assert s["gpus"] == 15 and s["runs"] == 3 and 0 < s["tasks_placed"] <= s["tasks_arrived"], s
# FGD tops arrivals up until the next draw would pass 130% of capacity (a
# draw of several whole GPUs may pass it: 15 GPUs make each one 6.7%)
assert 110 < s["arrived_pct"] <= 150 and 0 < s["alloc_pct"] <= 100 and s["gpus_used"] <= 15, s
# allocation never runs ahead of arrivals (a point with no task of its own
# takes its neighbours, one task of up to 2 GPUs away)
c = s["alloc_curve"]
assert len(c) > 110 and all(v is None or 0 <= v <= i + 14 for i, v in enumerate(c)), c
assert all(f is None or 0 <= f <= 100 for f in s["frag_curve"]), s["frag_curve"]
' "$root/out"
  done
done
expect "replay is the mean of seeds" 0 "mean of 10 runs (seeds 1..10)" "allocated % at arrived %: 50:" \
  -- plan replay --nodes "$data/nodes.csv" --pods "$data/pods.csv"
expect "replay one seed" 0 "mean of 1 run (seeds 7..7)" \
  -- plan replay --nodes "$data/nodes.csv" --pods "$data/pods.csv" --seed 7
expect "synthetic" 0 "100 GPUs, 500 workloads planned in" -- plan synthetic --gpus 100 --workloads 500

# ---- bad input ----
bad() { printf '%b' "$1" >"$root/bad.yaml"; }
bad 'workloads:\n  - name: a\n    memroy: 1GiB\n'
expect "unknown key" 2 "bad.yaml:3" "workload 'a'" "'memroy'" -- plan "$root/bad.yaml" --gpus a100-40gb
bad 'workloads:\n  - name: a\n    memory: 18\n    compute: 0.5\n'
expect "memory without unit" 2 "bad.yaml:3" "workload 'a'.memory" "needs a unit" -- plan "$root/bad.yaml" --gpus a100-40gb
bad 'workloads:\n  - name: a\n    memory: 1GiB\n    compute: 1.5\n'
expect "compute above one" 2 "bad.yaml:4" "at most 1" -- plan "$root/bad.yaml" --gpus a100-40gb
bad 'workloads:\n  - name: a\n    memory: 1GiB\n'
expect "no compute" 2 "bad.yaml:2" "missing 'compute'" -- plan "$root/bad.yaml" --gpus a100-40gb
bad 'workloads:\n  - name: a\n    memory: 1GiB\n    compute: 0.1\n    isolation: hard\n    sharing: time-slicing\n'
expect "hard and time-slicing" 2 "workload 'a'" "contradicts" -- plan "$root/bad.yaml" --gpus a100-40gb
bad 'workloads:\n  - name: a\n    memory: 1GiB\n    compute: 0.1\n  - name: a\n    memory: 1GiB\n    compute: 0.1\n'
expect "duplicate name" 2 "bad.yaml:5" "defined twice (first at line 2)" -- plan "$root/bad.yaml" --gpus a100-40gb
bad 'workloads:\n  - name: big\n    memory: 500GiB\n    compute: 0.5\n'
expect "no model can meet it" 2 "workload 'big'" "no MIG profile" -- plan "$root/bad.yaml" --gpus a100-40gb:2
bad 'workloads:\n  - name: big\n    memory: 60GiB\n    compute: 0.5\n    isolation: soft\n'
expect "soft too big" 2 "workload 'big'" "more than one GPU" -- plan "$root/bad.yaml" --gpus a100-40gb
bad 'workloads:\n  - name: a\n    memory: 1GiB\n    compute: 0.1\n    model: v100\n'
expect "unknown workload model" 2 "bad.yaml:5" "unknown GPU model 'v100'" -- plan "$root/bad.yaml" --gpus a100-40gb
bad 'workloads: [\n'
expect "malformed YAML" 2 "bad.yaml:" "not valid YAML" -- plan "$root/bad.yaml" --gpus a100-40gb
expect "unknown --gpus model" 2 "unknown GPU model 'a200'" -- plan "$w" --gpus a200:2
expect "fleet and gpus" 2 "one of them" -- plan "$w" --gpus a100-40gb --fleet "$fleet"
expect "incremental needs current" 2 "--incremental needs" -- plan "$w" --gpus a100-40gb --incremental
printf 'nodes:\n  - name: n\n    gpus:\n      - model: a100-40gb\n        mig: [3g.40gb]\n' >"$root/f.yaml"
expect "fleet unknown profile" 2 "f.yaml:5" "no profile '3g.40gb'" -- plan "$w" --fleet "$root/f.yaml"
printf 'nodes:\n  - name: n\n    gpus:\n      - model: a100-40gb\n        mig: ["4g.20gb", "4g.20gb"]\n' >"$root/f.yaml"
expect "fleet layout that cannot be" 2 "f.yaml:5" "4g.20gb" -- plan "$w" --fleet "$root/f.yaml"
expect "missing workload file" 2 "nope.yaml" -- plan "$root/nope.yaml" --gpus a100-40gb
expect "replay without files" 2 "--nodes" -- plan replay
expect "fgd plans no workload file" 2 "replays traces only" -- plan "$w" --gpus a100-40gb --policy fgd
expect "unknown policy" 2 "--policy 'fdg'" "fgd or random" -- plan replay --nodes "$data/nodes.csv" \
  --pods "$data/pods.csv" --policy fdg
printf 'name,cpu_milli,num_gpu,gpu_milli\np1,1000,1,500\n' >"$root/p.csv"
expect "pods CSV without memory" 2 "no column 'memory_mib'" -- plan replay --nodes "$data/nodes.csv" --pods "$root/p.csv"
printf 'name,cpu_milli,memory_mib,num_gpu,gpu_milli\np1,1000,10,2,500\n' >"$root/p.csv"
expect "share of two GPUs" 2 "pods CSV line 2: p1 asks for 2 GPUs of 500" -- plan replay --nodes "$data/nodes.csv" \
  --pods "$root/p.csv"
printf 'name,cpu_milli,memory_mib,num_gpu,gpu_milli\np1,1000,10,1,x\n' >"$root/p.csv"
expect "share not a number" 2 "pods CSV line 2: gpu_milli 'x'" -- plan replay --nodes "$data/nodes.csv" \
  --pods "$root/p.csv"
printf 'sn,cpu_milli,memory_mib,gpu,model\nn1,1000,10,99,T4\n' >"$root/n.csv"
printf 'sn,cpu_milli,memory_mib,gpu,model\nn1,1000,10,2,\n' >"$root/n.csv"
expect "GPU node without a model" 2 "nodes CSV line 2: a node with GPUs needs its GPU model" \
  -- plan replay --nodes "$root/n.csv" --pods "$data/pods.csv"
printf 'sn,cpu_milli,memory_mib,gpu,model\nn1,1000,10,99,T4\n' >"$root/n.csv"
expect "too many GPUs on a node" 2 "nodes CSV line 2: gpu '99'" -- plan replay --nodes "$root/n.csv" --pods "$data/pods.csv"

summary
