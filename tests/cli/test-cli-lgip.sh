#!/usr/bin/env bash
# test-cli-lgip.sh: `gpuslice gi profiles` prints nvidia-smi's `mig -lgip`
# table byte for byte. tests/cli/lgip-h100.expected is a real
# `nvidia-smi mig -lgip` of an H100 80GB HBM3 on a current driver (reference
# T-H100S, jbarrow.ai/field_notes/nvidia-mig: the 81-column table, its first
# five profiles verbatim, the 4g.40gb and 7g.80gb rows from the same page's
# values in the same columns); the emulated h100-80gb must print exactly it.
# Env: GS_BIN (gpuslice), GS_SRC (source dir), GS_TEST_TMP (scratch dir).
set -u
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

: "${GS_BIN:?set GS_BIN to the gpuslice binary}" "${GS_SRC:?set GS_SRC to the source dir}"
work=$(gs_tmpdir cli-lgip)
trap 'rm -rf "$work"' EXIT
unset GPUSLICE_EMULATE
export GPUSLICE_EMU_STATE="$work/emu.json"

gs() {
  timeout 20 "$GS_BIN" -q "$@"
}

gs emu reset --emulate h100-80gb >/dev/null && gs mig enable >/dev/null || fail "setup"
gs gi profiles >"$work/out" 2>"$work/err"
if diff -u --label lgip-h100.expected --label "gpuslice gi profiles" \
  "$GS_SRC/tests/cli/lgip-h100.expected" "$work/out"; then
  ok
else
  fail "gi profiles differs from nvidia-smi mig -lgip (diff above)"
fi

# Free counts follow occupancy in the same columns: one 3g.40gb at 4:4 leaves
# 3g 1/2 and 1g 4/7 on slices 0-3 (reference §8.3 gives the mirror case: a 3g
# at 0:4 leaves 1g 3/7, slice 7 being no 1g start).
gs gi create 3g.40gb@4 >/dev/null || fail "gi create 3g.40gb@4"
gs gi profiles >"$work/out2"
grep -qxF '|   0  MIG 3g.40gb          9     1/2        39.50      No     60     3     0   |' "$work/out2" &&
  grep -qxF '|   0  MIG 1g.10gb         19     4/7        9.75       No     16     1     0   |' "$work/out2" &&
  ok || fail "free counts after a 3g.40gb at 4: $(grep 'MIG [13]g.[14]0gb ' "$work/out2")"
# Every line of the table is 81 columns wide.
if awk 'length($0) != 81 { bad = 1 } END { exit bad }' "$work/out2"; then ok; else fail "a line is not 81 columns wide"; fi

summary
