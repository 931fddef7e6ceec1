#!/usr/bin/env bash
# bench/plan.sh: the planner against first-fit and best-fit, in one run.
# Not part of `make check`.
#
#   bench/plan.sh            # trace replay (when the data is there) + speed
#   BENCH_PARTS=speed bench/plan.sh
#
# 1. Trace: Alibaba cluster-trace-gpu-v2023 (openb; ../shared/data/, see its
#    README) replayed in arrival order on its 1,213-node, 6,212-GPU node list
#    until 130% of the GPU capacity has arrived, as FGD's simulator does:
#    fractional requests on the trace's own GPUs (MPS/time-slicing shares),
#    then the same requests mapped to MIG profiles of an A100-40GB/H100-80GB
#    fleet of the same size (docs/plan.md states the mapping). Prints the
#    allocation rate at 100% and 130% arrived, GPUs used and fragmentation for
#    ours, first-fit and best-fit, beside FGD's published figures (mean of its
#    10 seeds, ../shared/data/fgd-expected/analysis_allo_discrete.csv).
# 2. Packing: `gpuslice plan synthetic --mix varied` (every MIG size, a third
#    soft) on 1,000 GPUs at three loads: GPUs used, MIG slices no requested
#    profile can use, and shared compute no requested share fits, per policy.
# 3. Speed: `gpuslice plan synthetic` at 10, 100, 1,000 and 10,000 GPUs with
#    five workloads per GPU, CPU seconds per policy, ours/first-fit ratio and
#    the growth per tenfold fleet.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
bin=${GS_BIN:-$src/build/gpuslice}
data=${GS_DATA:-$src/../shared/data}
parts=${BENCH_PARTS:-trace packing speed}
[ -x "$bin" ] || { echo "bench: $bin not found (run make first)" >&2; exit 1; }
command -v python3 >/dev/null || { echo "bench: needs python3" >&2; exit 1; }

trace() {
  local nodes="$data/alibaba-gpu-v2023/openb_node_list_gpu_node.csv"
  local pods="$data/alibaba-gpu-v2023/openb_pod_list_default.csv"
  local fgd="$data/fgd-expected/analysis_allo_discrete.csv" out
  if [ ! -f "$nodes" ] || [ ! -f "$pods" ]; then
    echo "bench: trace data not found under $data; skipping the replay" >&2
    return 0
  fi
  out=$(mktemp)
  for mode in fractional mig; do
    for policy in ours first-fit best-fit; do
      "$bin" -q plan replay --nodes "$nodes" --pods "$pods" --mode "$mode" --policy "$policy" --json |
        tr -d '\n' >>"$out"
      echo >>"$out"
    done
  done
  python3 - "$out" "$fgd" <<'EOF'
import csv, json, os, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print("Alibaba openb default trace, 6,212 GPUs, arrivals to 130% of capacity, no departures\n")
print("| replay | policy | allocated at 100% arrived | allocated at 130% | GPUs used | fragmentation |")
print("| --- | --- | --- | --- | --- | --- |")
for r in rows:
    print(f"| {r['mode']} | {r['policy']} | {r['alloc_at_100_pct']:.2f}% | {r['alloc_pct']:.2f}% "
          f"| {r['gpus_used']} | {r['frag_pct']:.2f}% |")
if os.path.exists(sys.argv[2]):
    acc = {}
    for r in csv.DictReader(open(sys.argv[2])):
        if r["workload"] == "openb_pod_list_default":
            a = acc.setdefault(r["sc_policy"], [0, 0.0, 0.0])
            a[0] += 1; a[1] += float(r["100"]); a[2] += float(r["130"])
    for pol, (n, a100, a130) in sorted(acc.items()):
        print(f"| FGD's simulator (published) | {pol.split('-', 1)[1]} | {a100 / n:.2f}% | {a130 / n:.2f}% | - | - |")
by = {(r["mode"], r["policy"]): r for r in rows}
for mode in ("fractional", "mig"):
    o = by[(mode, "ours")]
    for peer in ("first-fit", "best-fit"):
        p = by[(mode, peer)]
        print(f"{mode}: ours/{peer} allocation at 130%: {o['alloc_pct'] / p['alloc_pct']:.3f}; "
              f"unallocated GPUs: {100 - o['alloc_pct']:.2f}% vs {100 - p['alloc_pct']:.2f}%")
EOF
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
  trace) trace ;;
  packing) packing ;;
  speed) speed ;;
  *) echo "bench: unknown part '$part' (trace, packing, speed)" >&2; exit 2 ;;
  esac
done
