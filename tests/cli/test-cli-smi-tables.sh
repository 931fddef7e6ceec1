#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-cli-smi-tables.sh: `gpuslice gi profiles|list` and `ci list|profiles`
# print nvidia-smi's `mig -lgip`, `-lgi`, `-lci` and `-lcip` tables byte for
# byte, rows in nvidia-smi's order, compared with real transcripts:
# - tests/cli/lgip-h100.expected: `nvidia-smi mig -lgip` of an H100 80GB HBM3
#   on a current driver (reference T-H100S, jbarrow.ai/field_notes/nvidia-mig:
#   the 81-column table, its first five profiles verbatim, the 4g.40gb and
#   7g.80gb rows from the same page's values in the same columns);
# - the -cgi 9,14 / -lgi / -cci / -lci steps of an H100 transcript (a public
#   transcript, reference T-H100S): GI 2 at 4:4, GI 3 at 0:2, listed 2g first;
# - -lcip -gi 1 of an A100-80GB with two 3g.40gb (a public R515 transcript).
# Env: GS_BIN (gpuslice), GS_SRC (source dir), GS_TEST_TMP (scratch dir).
set -u
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

: "${GS_BIN:?set GS_BIN to the gpuslice binary}" "${GS_SRC:?set GS_SRC to the source dir}"
work=$(gs_tmpdir cli-smi-tables)
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

# same NAME EXPECTED-FILE -- ARGS: gpuslice ARGS prints exactly EXPECTED-FILE.
same() {
  local name=$1 want=$2
  shift 3
  gs "$@" >"$work/got" 2>"$work/err"
  if diff -u --label "$name (real nvidia-smi)" --label "gpuslice $*" "$want" "$work/got"; then
    ok
  else
    fail "$name: gpuslice $* differs from nvidia-smi (diff above)"
  fi
}

gs emu reset --emulate h100-80gb >/dev/null && gs mig enable >/dev/null || fail "setup h100"
cat >"$work/cgi" <<'OUT'
Successfully created GPU instance ID  2 on GPU  0 using profile MIG 3g.40gb (ID  9)
Successfully created GPU instance ID  3 on GPU  0 using profile MIG 2g.20gb (ID 14)
OUT
same "-cgi 9,14" "$work/cgi" -- gi create 9,14 -i 0
cat >"$work/lgi" <<'OUT'
+---------------------------------------------------------+
| GPU instances:                                          |
| GPU   Name               Profile  Instance   Placement  |
|                            ID       ID       Start:Size |
|=========================================================|
|   0  MIG 2g.20gb           14        3          0:2     |
+---------------------------------------------------------+
|   0  MIG 3g.40gb            9        2          4:4     |
+---------------------------------------------------------+
OUT
same "-lgi" "$work/lgi" -- gi list -i 0
# nvidia-smi's profile:placement tuples beside the two above (the H100's
# straight GI-ID tree: slices 3 and 2 are GIs 10 and 9).
cat >"$work/cgi" <<'OUT'
Successfully created GPU instance ID 10 on GPU  0 using profile MIG 1g.10gb (ID 19)
Successfully created GPU instance ID  9 on GPU  0 using profile MIG 1g.10gb (ID 19)
OUT
same "-cgi 19:3,19:2" "$work/cgi" -- gi create 19:3,19:2 -i 0
gs gi destroy -i 0 --gi 10,9 >/dev/null || fail "gi destroy --gi 10,9"
cat >"$work/cci" <<'OUT'
Successfully created compute instance ID  0 on GPU  0 GPU instance ID  2 using profile MIG 3g.40gb (ID  2)
OUT
same "-gi 2 -cci" "$work/cci" -- ci create -i 0 --gi 2
cat >"$work/cci" <<'OUT'
Successfully created compute instance ID  0 on GPU  0 GPU instance ID  3 using profile MIG 2g.20gb (ID  1)
OUT
same "-gi 3 -cci" "$work/cci" -- ci create -i 0 --gi 3
cat >"$work/lci" <<'OUT'
+--------------------------------------------------------------------+
| Compute instances:                                                 |
| GPU     GPU       Name             Profile   Instance   Placement  |
|       Instance                       ID        ID       Start:Size |
|         ID                                                         |
|====================================================================|
|   0      3       MIG 2g.20gb          1         0          0:2     |
+--------------------------------------------------------------------+
|   0      2       MIG 3g.40gb          2         0          0:4     |
+--------------------------------------------------------------------+
OUT
same "-lci" "$work/lci" -- ci list -i 0

gs emu reset --emulate a100-80gb >/dev/null && gs mig enable >/dev/null || fail "setup a100-80gb"
cat >"$work/cgi" <<'OUT'
Successfully created GPU instance ID  1 on GPU  0 using profile MIG 3g.40gb (ID  9)
Successfully created GPU instance ID  2 on GPU  0 using profile MIG 3g.40gb (ID  9)
OUT
same "-cgi 3g.40gb,3g.40gb" "$work/cgi" -- gi create 3g.40gb,3g.40gb -i 0
cat >"$work/lcip" <<'OUT'
+--------------------------------------------------------------------------------------+
| Compute instance profiles:                                                           |
| GPU     GPU       Name             Profile  Instances   Exclusive       Shared       |
|       Instance                       ID     Free/Total     SM       DEC   ENC   OFA  |
|         ID                                                          CE    JPEG       |
|======================================================================================|
|   0      1       MIG 1c.3g.40gb       0      3/3           14        2     0     0   |
|                                                                      3     0         |
+--------------------------------------------------------------------------------------+
|   0      1       MIG 2c.3g.40gb       1      1/1           28        2     0     0   |
|                                                                      3     0         |
+--------------------------------------------------------------------------------------+
|   0      1       MIG 3g.40gb          2*     1/1           42        2     0     0   |
|                                                                      3     0         |
+--------------------------------------------------------------------------------------+
OUT
same "-gi 1 -lcip" "$work/lcip" -- ci profiles -i 0 --gi 1

summary
