#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-plan-fgd-anchor.sh: our replay of FGD's harness reproduces FGD's
# published curves: on Alibaba's default openb trace, 10 seeds, `--policy fgd`
# and `--policy best-fit` are within 0.3 points of the mean of FGD's 10
# published runs (../shared/data/fgd-expected) at every arrival percentage
# from 50 to 130, and ours is at or above fgd at every one of them. About 3 s;
# skipped (with a message) where the shared data is not there.
# Env: GS_BIN (gpuslice), GS_SRC (the source tree).
set -u
: "${GS_BIN:?}" "${GS_SRC:?}"
. "$GS_SRC/tests/lib/common.sh"
data=${GS_DATA:-$GS_SRC/../shared/data}
trace="$data/alibaba-gpu-v2023"
published="$data/fgd-expected/analysis_allo_discrete.csv"
if [ ! -f "$trace/openb_pod_list_default.csv" ] || [ ! -f "$published" ]; then
  echo "skipped: no trace data under $data (see bench/plan.sh)"
  summary
  exit
fi
root=$(gs_tmpdir plan-anchor) || exit 1
trap 'rm -rf "$root"' EXIT

for policy in fgd best-fit ours; do
  if "$GS_BIN" -q plan replay --nodes "$trace/openb_node_list_gpu_node.csv" \
    --pods "$trace/openb_pod_list_default.csv" --policy "$policy" --seeds 10 --json >"$root/$policy.json"; then
    ok
  else
    fail "replay $policy"
  fi
done
out=$(python3 - "$root" "$published" <<'EOF'
import csv, json, sys
root, published = sys.argv[1], sys.argv[2]
runs = {p: json.load(open(f"{root}/{p}.json"))["alloc_curve"] for p in ("fgd", "best-fit", "ours")}
pub = {}
for r in csv.DictReader(open(published)):
    if r["workload"] == "openb_pod_list_default":
        pub.setdefault(r["sc_policy"].split("-", 1)[1], []).append(r)
for ours, theirs in (("fgd", "FGD"), ("best-fit", "BestFit")):
    for x in range(50, 131):
        want = sum(float(r[str(x)]) for r in pub[theirs]) / len(pub[theirs])
        got = runs[ours][x]
        print(f"{'ok' if abs(got - want) <= 0.3 else 'FAIL'} {ours} at {x}%: {got:.2f} vs published {want:.2f}")
for x in range(50, 131):
    d = runs["ours"][x] - runs["fgd"][x]
    print(f"{'ok' if d >= 0 else 'FAIL'} ours - fgd at {x}%: {d:+.3f}")
EOF
)
while read -r verdict rest; do
  if [ "$verdict" = ok ]; then ok; else fail "$rest"; fi
done <<<"$out"
summary
