#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/plan.sh: the planner against FGD, best-fit, first-fit and random, in
# one harness and one run. Not part of `make check` (tests/plan/ has a
# bounded check of the same replay).
#
#   bench/plan.sh                         # every part, every trace variant
#   bench/plan.sh --variants default --seeds 10 --parts trace
#   bench/plan.sh --seed 11 --seeds 20 --parts trace,mig   # held-out seeds 11..30
#   BENCH_PARTS=speed bench/plan.sh       # (the environment works too)
#
# 1. Trace: Alibaba cluster-trace-gpu-v2023 (openb; ../shared/data, see its
#    README) replayed on its 1,213-node, 6,212-GPU node list the way FGD's
#    simulator replays it (docs/plan.md): each seed shuffles the trace and
#    tops it up with random draws to 130% of the GPU capacity; CPU, memory
#    and GPU type filter; allocation is averaged per arrival percentage.
#    Per variant, one table: policy x arrival percentage, allocation and
#    fragmentation (FGD's measure), mean of the seeds, with FGD's published
#    curves (mean of its 10 seeds, fgd-expected/analysis_allo_discrete.csv)
#    beside ours; then the same requests mapped to MIG profiles of an
#    A100-40GB/H100-80GB fleet (no published numbers exist there).
# 2. Packing: `gpuslice plan synthetic --mix varied` on 1,000 GPUs at three
#    loads, and tests/plan/data/models.yaml on 20 GPUs, per policy.
# 3. Speed: `gpuslice plan synthetic` at 10 to 10,000 GPUs, five workloads
#    per GPU, CPU seconds per policy.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
bin=${GS_BIN:-$src/build/gpuslice}
data=${GS_DATA:-$src/../shared/data}
parts=${BENCH_PARTS:-trace mig packing speed}
variants=${BENCH_VARIANTS:-default gpushare20 gpushare40 gpushare60 gpushare80 gpushare100 gpuspec33 multigpu50}
seeds=${BENCH_SEEDS:-10}
seed=${BENCH_SEED:-1}
while [ $# -gt 0 ]; do
  case $1 in
  --variants) variants=${2//,/ }; shift 2 ;;
  --seeds) seeds=$2; shift 2 ;;
  --seed) seed=$2; shift 2 ;;
  --parts) parts=${2//,/ }; shift 2 ;;
  *) echo "bench: unknown option '$1' (--variants V,.. --seed S --seeds N --parts trace,mig,packing,speed)" >&2; exit 2 ;;
  esac
done
[ -x "$bin" ] || { echo "bench: $bin not found (run make first)" >&2; exit 1; }
command -v python3 >/dev/null || { echo "bench: needs python3" >&2; exit 1; }

# replay MODE: every variant, every policy, one JSON line each, then the tables.
replay() {
  local mode=$1 nodes="$data/alibaba-gpu-v2023/openb_node_list_gpu_node.csv" out v pods
  if [ ! -f "$nodes" ]; then
    echo "bench: trace data not found under $data; skipping the replay" >&2
    return 0
  fi
  out=$(mktemp)
  for v in $variants; do
    pods="$data/alibaba-gpu-v2023/openb_pod_list_$v.csv"
    [ -f "$pods" ] || { echo "bench: no $pods; skipping $v" >&2; continue; }
    for policy in ours fgd best-fit first-fit random; do
      { printf '{"variant": "%s", "run": ' "$v"
        "$bin" -q plan replay --nodes "$nodes" --pods "$pods" --mode "$mode" --policy "$policy" \
          --seed "$seed" --seeds "$seeds" --json | tr -d '\n'
        echo '}'; } >>"$out"
    done
  done
  python3 "$here/plan-tables.py" "$out" "$data/fgd-expected/analysis_allo_discrete.csv" "$mode" "$seeds" "$seed"
  rm -f "$out"
}

packing() {
  local out
  out=$(mktemp)
  for n in 1800 2000 2200; do
    for policy in ours first-fit best-fit; do
      "$bin" -q plan synthetic --gpus 1000 --workloads "$n" --mix varied --policy "$policy" --json |
        tr -d '\n' >>"$out"
      echo >>"$out"
    done
  done
  for policy in ours first-fit best-fit; do
    "$bin" -q plan "$src/tests/plan/data/models.yaml" --gpus a100-40gb:10,h100-80gb:10 --policy "$policy" \
      --json | tr -d '\n' >>"$out.models" || true
    echo >>"$out.models"
  done
  python3 - "$out.models" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print("\nModel choice: tests/plan/data/models.yaml on 10 A100-40GB + 10 H100-80GB\n")
print("| policy | GPUs used | compute allocated on them |")
print("| --- | --- | --- |")
for r in rows:
    s = r["summary"]
    print(f"| {r['policy']} | {s['gpus_used']} | {100 * s['compute_allocated']:.1f}% |")
EOF
  rm -f "$out.models"
  python3 - "$out" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print("\nPacking: `gpuslice plan synthetic --mix varied`, 1,000 GPUs (half A100-40GB, half H100-80GB)\n")
print("| workloads | policy | unplaced | GPUs used | MIG slices unusable / free | shared GPUs unusable |")
print("| --- | --- | --- | --- | --- | --- |")
for r in rows:
    s = r["summary"]
    print(f"| {r['workloads']} | {r['policy']} | {r['unplaced']} | {s['gpus_used']} "
          f"| {s['mig_fragmented_slices']} / {s['mig_free_slices']} | {s['shared_fragmented_gpus']:.2f} |")
EOF
  rm -f "$out"
}

speed() {
  local out
  out=$(mktemp)
  for n in 10 100 1000 10000; do
    for policy in ours first-fit best-fit; do
      "$bin" -q plan synthetic --gpus "$n" --workloads $((n * 5)) --policy "$policy" --json | tr -d '\n' >>"$out"
      echo >>"$out"
    done
  done
  python3 - "$out" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
by = {(r["gpus"], r["policy"]): r for r in rows}
print("\nSpeed: `gpuslice plan synthetic`, 5 workloads per GPU, CPU seconds on one core\n")
print("| GPUs | workloads | ours s | first-fit s | best-fit s | ours/first-fit | ours: growth per 10x GPUs | GPUs used (ours / ff / bf) |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
prev = None
for n in (10, 100, 1000, 10000):
    o, f, b = by[(n, "ours")], by[(n, "first-fit")], by[(n, "best-fit")]
    growth = f"{o['cpu_seconds'] / prev:.1f}x" if prev and prev > 0 else "-"
    ratio = f"{o['cpu_seconds'] / f['cpu_seconds']:.2f}" if f["cpu_seconds"] > 0 else "-"
    print(f"| {n} | {o['workloads']} | {o['cpu_seconds']:.4f} | {f['cpu_seconds']:.4f} | {b['cpu_seconds']:.4f} "
          f"| {ratio} | {growth} | {o['summary']['gpus_used']} / {f['summary']['gpus_used']} / {b['summary']['gpus_used']} |")
    prev = o["cpu_seconds"]
big = by[(10000, "ours")]
print(f"\n10,000 GPUs and 50,000 workloads: {big['cpu_seconds']:.3f} s of CPU (goal: under 1 s): "
      f"{'met' if big['cpu_seconds'] < 1 else 'NOT met'}")
EOF
  rm -f "$out"
}

for part in $parts; do
  case $part in
  trace) replay fractional ;;
  mig) replay mig ;;
  packing) packing ;;
  speed) speed ;;
  *) echo "bench: unknown part '$part' (trace, mig, packing, speed)" >&2; exit 2 ;;
  esac
done
