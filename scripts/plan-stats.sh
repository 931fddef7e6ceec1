#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# plan-stats.sh [BUILD_DIR]: the README's planner figures. Over every pair of
# A100-40GB layouts (the 19 maximal ones, then all 298 valid ones) it counts
# the destroy and create steps of our plans against mig-parted's apply, which
# wipes a GPU whose profile counts differ and recreates every GI and CI.
# Builds and runs tests/layout/test-layout-plan-pairs, which checks each plan;
# it also prints what destroying everything, then creating everything, costs.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/build}
cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" --target test-layout-plan-pairs >/dev/null
log=$(mktemp "${TMPDIR:-/tmp}/plan-stats.XXXXXX")
trap 'rm -f "$log"' EXIT
if ! "$build"/test-layout-plan-pairs >"$log" 2>&1; then
  cat "$log" >&2
  echo "plan-stats: the planner test failed; the figures above are not valid" >&2
  exit 1
fi
sed -n 's/^\[ plan \] //p' "$log"
