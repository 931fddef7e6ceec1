#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-plan-beats-fgd.sh: ours is at or above fgd at every arrival
# percentage from 50 to 130, and above it at 130%, on a held-out cut of
# Alibaba's trace: every 4th GPU node and every 4th task of the default,
# gpuspec33 (GPU-type constraints) and multigpu50 (multi-GPU tasks)
# variants, seeds 101-104 (never used to choose anything in ours), on
# fractional GPUs and on MIG profiles. A few seconds (a minute or so
# under ASan); skipped (with a message) where the shared data is not there.
# Env: GS_BIN (gpuslice), GS_SRC (the source tree).
set -u
: "${GS_BIN:?}" "${GS_SRC:?}"
. "$GS_SRC/tests/lib/common.sh"
data=${GS_DATA:-$GS_SRC/../shared/data}
trace="$data/alibaba-gpu-v2023"
if [ ! -f "$trace/openb_node_list_gpu_node.csv" ]; then
  echo "skipped: no trace data under $data (see bench/plan.sh)"
  summary
  exit
fi
root=$(gs_tmpdir plan-beats) || exit 1
trap 'rm -rf "$root"' EXIT

awk 'NR == 1 || NR % 4 == 0' "$trace/openb_node_list_gpu_node.csv" >"$root/nodes.csv"
for v in default gpuspec33 multigpu50; do
  awk 'NR == 1 || NR % 4 == 1' "$trace/openb_pod_list_$v.csv" >"$root/$v.csv"
  for mode in fractional mig; do
    for policy in ours fgd; do
      if "$GS_BIN" -q plan replay --nodes "$root/nodes.csv" --pods "$root/$v.csv" --mode "$mode" \
        --policy "$policy" --seed 101 --seeds 4 --json >"$root/$v-$mode-$policy.json"; then
        ok
      else
        fail "replay $v $mode $policy"
      fi
    done
  done
done
out=$(python3 - "$root" <<'EOF'
import json, sys
root = sys.argv[1]
for v in ("default", "gpuspec33", "multigpu50"):
    for mode in ("fractional", "mig"):
        ours, fgd = (json.load(open(f"{root}/{v}-{mode}-{p}.json"))["alloc_curve"] for p in ("ours", "fgd"))
        low = min(range(50, 131), key=lambda x: ours[x] - fgd[x])
        d = ours[low] - fgd[low]
        print(f"{'ok' if d >= 0 else 'FAIL'} {v} {mode}: ours - fgd lowest {d:+.3f} at {low}%")
        d = ours[130] - fgd[130]
        print(f"{'ok' if d > 0 else 'FAIL'} {v} {mode}: ours - fgd at 130% {d:+.3f}")
EOF
)
echo "$out"
while read -r verdict rest; do
  if [ "$verdict" = ok ]; then ok; else fail "$rest"; fi
done <<<"$out"
summary
