#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-jobs-walkthrough.sh: bench/jobs-walkthrough.sh (the README's table and
# chart) runs end to end at a high time scale and reproduces the walkthrough's
# figures that do not depend on how concurrent jobs overlap: 5,539 s per job on
# seven 1g.5gb slices and 10,361 s for seven in series; it writes the SVG.
# Env: GS_BIN (gpuslice), GS_SRC (the source tree), GS_TEST_TMP (scratch dir).
set -u
: "${GS_BIN:?set GS_BIN to the gpuslice binary}" "${GS_SRC:?set GS_SRC to the source tree}"
. "${GS_SRC:-$(dirname "$0")/../..}/tests/lib/common.sh"
root=$(gs_tmpdir jobs-walk) || exit 1
trap 'rm -rf "$root"' EXIT

out=$(TMPDIR="$root" GPUSLICE="$GS_BIN" timeout 250 "$GS_SRC/bench/jobs-walkthrough.sh" 20000 "$root/w.svg" 2>&1)
rc=$?
[ "$rc" = 0 ] && ok || fail "jobs-walkthrough.sh exit $rc: $out"
echo "$out" | grep -q '^| 7 jobs at once on 7 MIG 1g.5gb slices | 5,539 | 5,539 |' && ok || fail "MIG row: $out"
echo "$out" | grep -q '^| 7 jobs in series on the whole GPU | 1,480 | 10,361 |' && ok || fail "series row: $out"
echo "$out" | grep -q '^| 7 jobs at once, time-sliced (no MIG) |' && ok || fail "time-sliced row: $out"
echo "$out" | grep -q '^| 7 jobs at once under MPS (no MIG) |' && ok || fail "MPS row: $out"
python3 -c 'import sys, xml.dom.minidom as m; d=m.parse(sys.argv[1]); sys.exit(0 if len(d.getElementsByTagName("rect")) == 5 else 1)' "$root/w.svg" &&
  ok || fail "the SVG is not a 4-bar chart"

summary
