#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-slurm-cli.sh: `gpuslice slurm gres|node-conf|prolog|task-prolog` and
# `plan --export gres` without a running cluster: the records and their
# device files, the node line, what slurmd itself reads from them (`slurmd
# -G`, when slurmd is installed: the reported failures were there), drift
# caught by the prolog, Slurm's indices mapped to MIG UUIDs, and refusals of
# gres.conf files the prologs cannot read.
# Env: GS_BIN (gpuslice), GS_TEST_TMP (scratch dir), GS_SRC (source tree).
set -u
: "${GS_BIN:?set GS_BIN to the gpuslice binary}"
src=${GS_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$src/tests/lib/common.sh"
root=$(gs_tmpdir slurm-cli) || exit 1
trap 'rm -rf "$root"' EXIT
unset GPUSLICE_EMULATE SLURM_CONF SLURMD_NODENAME SLURM_JOB_GPUS SLURM_STEP_GPUS CUDA_VISIBLE_DEVICES
export GPUSLICE_EMU_STATE="$root/emu.json"
g() { "$GS_BIN" -q "$@"; }
# expect NAME STATUS [TEXT...] -- ARGS: status and texts of `gpuslice ARGS`.
expect() {
  local name=$1 want=$2 st
  shift 2
  local texts=()
  while [ "$1" != -- ]; do texts+=("$1"); shift; done
  shift
  g "$@" >"$root/out" 2>&1
  st=$?
  [ "$st" = "$want" ] || { fail "$name: exit $st, want $want: $(head -c 600 "$root/out")"; return; }
  for t in "${texts[@]}"; do
    grep -qF -- "$t" "$root/out" || { fail "$name: no '$t' in: $(head -c 600 "$root/out")"; return; }
  done
  ok
}
cfg=$src/configs/a100-40gb.mig-parted.yaml

# ---- gres.conf and the node line: GPU 0 balanced, GPU 1 whole ----
g emu reset --emulate a100-40gb:2 >/dev/null && g mig enable -i 0 >/dev/null &&
  g gi create -i 0 3g.20gb,2g.10gb,1g.5gb,1g.5gb -C >/dev/null || { fail "setup"; summary; exit; }
expect "gres" 0 \
  "Name=gpu Type=1g.5gb MultipleFiles=/dev/nvidia0,/dev/nvidia-caps/nvidia-cap120,/dev/nvidia-caps/nvidia-cap121 Flags=nvidia_gpu_env" \
  "Name=gpu Type=2g.10gb MultipleFiles=/dev/nvidia0,/dev/nvidia-caps/nvidia-cap48,/dev/nvidia-caps/nvidia-cap49" \
  "Name=gpu Type=3g.20gb MultipleFiles=/dev/nvidia0,/dev/nvidia-caps/nvidia-cap12,/dev/nvidia-caps/nvidia-cap13" \
  "Name=gpu Type=a100-sxm4-40gb File=/dev/nvidia1 Flags=nvidia_gpu_env" -- slurm gres -N node1
cp "$root/out" "$root/gres.conf"
# Slurm's order: types as the node line lists them, then lines; every record typed.
awk '/^Name=gpu/ {sub(/.*Type=/, ""); sub(/ .*/, ""); print}' "$root/gres.conf" | tr '\n' ' ' >"$root/types"
[ "$(cat "$root/types")" = "1g.5gb 1g.5gb 2g.10gb 3g.20gb a100-sxm4-40gb " ] && ok || fail "record order: $(cat "$root/types")"
expect "node line" 0 \
  "NodeName=node1 Gres=gpu:1g.5gb:2,gpu:2g.10gb:1,gpu:3g.20gb:1,gpu:a100-sxm4-40gb:1 Features=mig,a100-40gb,mig-mine CPUs=8" \
  -- slurm node-conf -N node1 -c mine --extra "CPUs=8"
cp "$root/out" "$root/node.conf"
expect "-i narrows" 0 "Name=gpu Type=a100-sxm4-40gb File=/dev/nvidia1" -- slurm gres -i 1 -N node1
grep -q "Type=1g.5gb" "$root/out" && fail "-i 1 listed GPU 0's devices" || ok
expect "dev root and shared file" 0 \
  "NodeName=node1 Name=gpu Type=3g.20gb MultipleFiles=/x/dev/nvidia0,/x/dev/nvidia-caps/nvidia-cap12," \
  -- slurm gres -N node1 --node-lines --dev-root /x/dev/
expect "autodetect form" 0 "AutoDetect=nvml" "Name=gpu Type=1g.5gb MultipleFiles=" -- slurm gres --autodetect
expect "-o writes the file" 0 -- slurm gres -N node1 -o "$root/written.conf"
cmp -s "$root/written.conf" "$root/gres.conf" && ok || fail "-o wrote another text"
expect "extra may not set Gres" 2 "Gres is written by gpuslice" -- slurm node-conf -N node1 --extra "Gres=gpu:9"
expect "extra words" 2 "expected NAME=VALUE words" -- slurm node-conf -N node1 --extra "CPUs"
expect "node name" 2 "node name 'a b'" -- slurm node-conf -N "a b"

# ---- what slurmd reads from them (the reported failures) ----
# File= must be character devices: the emulated machine's own (mknod: root).
if ! command -v slurmd >/dev/null; then
  echo "SKIP: slurmd -G checks: slurmd is not installed (scripts/deps.sh installs it)"
elif [ "$(id -u)" -ne 0 ]; then
  echo "SKIP: slurmd -G checks: device nodes need root (mknod)"
else
  { echo "ClusterName=t"; echo "SlurmctldHost=localhost"; echo "GresTypes=gpu";
    echo "SlurmdSpoolDir=$root/spool"; echo "ProctrackType=proctrack/linuxproc";
    echo "SelectType=select/cons_tres"; echo "SlurmdParameters=config_overrides";
    echo "AuthType=auth/none"; echo "CredType=cred/none"; echo "Include $root/node.conf";
    echo "PartitionName=p Nodes=ALL"; } >"$root/slurm.conf"
  mkdir -p "$root/spool"
  g emu devices "$root/m" >/dev/null || fail "emu devices"
  slurmd_G() { slurmd -f "$root/slurm.conf" -N "$1" -G -L /dev/stderr 2>&1; }
  g slurm gres -N node1 --dev-root "$root/m/dev" >"$root/gres.conf"
  slurmd_G node1 >"$root/G"
  [ "$(grep -c 'Gres Name=gpu Type=' "$root/G")" = 5 ] && ok || fail "slurmd -G on ours: $(cat "$root/G")"
  # Slurm 22.05 with mps or shard in GresTypes reads a MultipleFiles record as one GPU
  # per file: why plan's export leaves them out of fleets with MIG devices.
  sed -i 's/^GresTypes=gpu$/GresTypes=gpu,mps/' "$root/slurm.conf"
  [ "$(slurmd_G node1 | grep -c 'Gres Name=gpu Type=')" = 13 ] && ok ||
    fail "slurmd no longer splits MIG records under GresTypes=gpu,mps: plan's export may share again"
  # plan's exports: a fleet with MIG, then one sharing GPUs with MPS and time-slicing
  printf 'workloads:\n  - {name: a, replicas: 2, memory: 4GiB, compute: 0.3, isolation: soft}\n  - {name: b, replicas: 3, memory: 4GiB, compute: 0.2, isolation: soft, sharing: time-slicing}\n' >"$root/soft.yaml"
  for plan in "$src/tests/plan/data/workloads.yaml --fleet $src/tests/plan/data/fleet.yaml" \
    "$root/soft.yaml --gpus a100-40gb:2"; do
    # shellcheck disable=SC2086
    g plan $plan --export gres | sed "s|=/dev/|=$root/m/dev/|; s|,/dev/|,$root/m/dev/|g" >"$root/gres.conf"
    sed -i "s/^GresTypes=.*/$(sed -n 's/^# slurm.conf: \(GresTypes=.*\)/\1/p' "$root/gres.conf")/" "$root/slurm.conf"
    for n in $(sed -n 's/^# slurm.conf: NodeName=\([^ ]*\).*/\1/p' "$root/gres.conf"); do
      sed -n "s/^# slurm.conf: \(NodeName=$n .*\)/\1/p" "$root/gres.conf" >"$root/node.conf"
      slurmd_G "$n" >"$root/G"
      want=$(grep -c "^NodeName=$n Name=gpu " "$root/gres.conf")
      [ "$want" -gt 0 ] && [ "$(grep -c 'Gres Name=gpu ' "$root/G")" = "$want" ] && ok ||
        fail "slurmd -G on plan's $n ($want gpu records): $(cat "$root/G")"
      grep -q "^NodeName=$n Name=\(mps\|shard\)" "$root/gres.conf" && ! grep -q "Gres Name=\(mps\|shard\)" "$root/G" &&
        fail "slurmd -G on plan's $n: no mps or shard: $(cat "$root/G")"
    done
  done
  grep -q "^GresTypes=gpu,mps,shard" "$root/slurm.conf" && grep -q "Gres Name=mps Type=a100-sxm4-40gb Count=100" "$root/G" &&
    ok || fail "the MPS fleet's export: $(cat "$root/G") $(grep GresTypes "$root/slurm.conf")"
  sed -i "s/^GresTypes=.*/GresTypes=gpu/" "$root/slurm.conf"
  g slurm node-conf -N node1 -c mine --extra "CPUs=8" >"$root/node.conf"
fi
g slurm gres -N node1 >"$root/gres.conf"

# ---- the prolog: the layout gres.conf was made from, or a failure ----
expect "prolog: no drift" 0 -- slurm prolog -N node1 --gres-conf "$root/gres.conf"
SLURMD_NODENAME=node1 SLURM_CONF="$root/slurm.conf" g slurm prolog >"$root/out" 2>&1 && ok ||
  fail "prolog with Slurm's environment: $(cat "$root/out")"
expect "prolog: gres.conf missing" 2 "gres.conf $root/nope" "--gres-conf" -- slurm prolog --gres-conf "$root/nope"
uuids=$(g list --json | python3 -c '
import json, sys
print(" ".join(m["uuid"] for g in json.load(sys.stdin) for m in g.get("mig_devices", [])))')
read -r -a mig <<<"$uuids" # MIG Dev order: 3g.20gb (GI 1), 2g.10gb (GI 5), 1g.5gb (GI 13, 14)

# ---- the task prolog: Slurm's indices, in gres.conf's order, to UUIDs ----
tp() { env "$@" "$GS_BIN" -q slurm task-prolog -N node1 --gres-conf "$root/gres.conf"; }
out=$(tp SLURM_JOB_GPUS=3)
[ "$out" = "export CUDA_VISIBLE_DEVICES=${mig[0]}" ] && ok || fail "index 3 (the 3g.20gb): $out"
out=$(tp SLURM_JOB_GPUS=2 SLURM_STEP_GPUS=0,1)
[ "$out" = "export CUDA_VISIBLE_DEVICES=${mig[2]},${mig[3]}" ] && ok || fail "a step's GPUs win: $out"
gpu1=$(g list --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[1]["uuid"])')
out=$(tp CUDA_VISIBLE_DEVICES=4)
[ "$out" = "export CUDA_VISIBLE_DEVICES=$gpu1" ] && ok || fail "the whole GPU: $out"
legacy=$(g list --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["mig_devices"][1]["legacy_uuid"])')
out=$(tp CUDA_VISIBLE_DEVICES="$legacy")
[ "$out" = "export CUDA_VISIBLE_DEVICES=${mig[1]}" ] && ok || fail "gpu/nvml's legacy id: $out"
out=$(tp)
[ -z "$out" ] && ok || fail "a job without GPUs: $out"
out=$(tp SLURM_JOB_GPUS=5 2>&1)
[ $? != 0 ] && echo "$out" | grep -q "not one of the 5 records" && ok || fail "index past the records: $out"

# ---- drift: a layout change behind gres.conf's back ----
g apply -f "$cfg" -c all-1g.5gb >/dev/null || fail "apply all-1g.5gb"
expect "prolog: drift" 1 "the node has no such device now" "gpuslice slurm relayout" \
  -- slurm prolog -N node1 --gres-conf "$root/gres.conf"
out=$(tp SLURM_JOB_GPUS=3 2>&1)
[ $? != 0 ] && echo "$out" | grep -q "is not on the node now" && ok || fail "task prolog on drift: $out"
g slurm gres -N node1 >"$root/gres.conf"
expect "prolog: rewritten" 0 -- slurm prolog -N node1 --gres-conf "$root/gres.conf"
g ci destroy -i 0 --gi 13 >/dev/null && g gi destroy -i 0 --gi 13 >/dev/null || fail "destroying GI 13"
expect "prolog: a slice gone" 1 "no such device now" -- slurm prolog -N node1 --gres-conf "$root/gres.conf"
g slurm gres -N node1 >"$root/gres.conf"
g gi create -i 0 1g.5gb -C >/dev/null || fail "creating a 1g.5gb"
expect "prolog: a slice more" 1 "the file does not list" -- slurm prolog -N node1 --gres-conf "$root/gres.conf"

# ---- gres.conf the prologs refuse, each naming the line and the fix ----
bad() { # NAME TEXT WANT
  printf '%s\n' "$2" >"$root/bad.conf"
  expect "$1" 1 "$root/bad.conf:1: " "$3" -- slurm prolog -N node1 --gres-conf "$root/bad.conf"
}
bad "count only" "Name=gpu Type=1g.5gb Count=7" "Slurm counts no GPU for it"
bad "untyped" "Name=gpu File=/dev/nvidia0" "without Type="
bad "ranges" "Name=gpu Type=a File=/dev/nvidia[0-1]" "ranges are not read here"
bad "host ranges" "NodeName=node[1-3] Name=gpu Type=a File=/dev/nvidia0" "write one line per node"
bad "unknown key" "Name=gpu Typo=a" "unknown parameter 'Typo'"
bad "caps of two devices" \
  "Name=gpu Type=1g.5gb MultipleFiles=/dev/nvidia0,/dev/nvidia-caps/nvidia-cap66,/dev/nvidia-caps/nvidia-cap85" \
  "are not one MIG device of GPU 0"
bad "caps of another GPU" \
  "Name=gpu Type=1g.5gb MultipleFiles=/dev/nvidia1,/dev/nvidia-caps/nvidia-cap66,/dev/nvidia-caps/nvidia-cap67" \
  "are not one MIG device of GPU 1"
printf 'NodeName=node2 Name=gpu Type=x File=/dev/nvidia0\n' >"$root/other.conf"
expect "another node's lines" 0 -- slurm prolog -N node1 --gres-conf "$root/other.conf"

summary
