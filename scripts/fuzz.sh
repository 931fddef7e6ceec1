#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# fuzz.sh BUILD_DIR SECONDS: runs every libFuzzer target BUILD_DIR/fuzz-* for
# SECONDS each, from a scratch copy of its seeds fuzz/corpus/<name without
# "fuzz-">/ (so the checked-in seeds never grow), with fuzz/<name>.dict when
# present. Prints one line per target; exits 1 if any target crashed, leaked
# or hung (libFuzzer leaves the input as ./crash-*, ./leak-* or ./timeout-*).
set -euo pipefail

usage="usage: scripts/fuzz.sh BUILD_DIR SECONDS"
build=${1:?$usage}
secs=${2:?$usage}
case $secs in '' | *[!0-9]*) echo "fuzz: SECONDS must be a whole number: $secs" >&2; exit 2 ;; esac
src=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/gpuslice-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT

status=0
found=0
for bin in "$build"/fuzz-*; do
  [ -f "$bin" ] && [ -x "$bin" ] || continue
  found=$((found + 1))
  name=$(basename "$bin")
  short=${name#fuzz-}
  corpus="$work/$short"
  mkdir -p "$corpus"
  if [ -d "$src/fuzz/corpus/$short" ]; then
    cp -R "$src/fuzz/corpus/$short/." "$corpus/"
  fi
  opts=(-max_total_time="$secs" -timeout=25 -print_final_stats=0)
  [ -f "$src/fuzz/$short.dict" ] && opts+=(-dict="$src/fuzz/$short.dict")
  log="$work/$name.log"
  # A hard stop well past SECONDS, in case the target wedges outside libFuzzer.
  if timeout --kill-after=10 $((secs + 120)) "$bin" "${opts[@]}" "$corpus" >"$log" 2>&1; then
    runs=$(grep -Eo 'Done [0-9]+ runs' "$log" | tail -n 1 | grep -Eo '[0-9]+' || echo "?")
    cov=$(grep -Eo 'cov: [0-9]+' "$log" | tail -n 1 | grep -Eo '[0-9]+' || echo "?")
    echo "fuzz: $name: ok: $runs runs in ${secs}s, coverage $cov, corpus $(ls "$corpus" | wc -l) inputs"
  else
    artifact=$(grep -Eo '(crash|leak|timeout|oom|slow-unit)-[0-9a-f]+' "$log" | tail -n 1 || true)
    echo "fuzz: $name: FAILED${artifact:+ (input saved as ./$artifact)}; end of its log:"
    tail -n 30 "$log" | sed 's/^/  /'
    status=1
  fi
done
if [ "$found" -eq 0 ]; then
  echo "fuzz: no fuzz-* targets in $build (configure with -DGS_FUZZ=ON, or run make fuzz)" >&2
  exit 1
fi
exit $status
