#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-cli-dgi-busy.sh: `gpuslice gi destroy` (nvidia-smi mig -dgi) stops at the
# first GPU instance that cannot go, as the real one does (issue 19 item 3;
# reference §8.3): "Unable to destroy GPU instance ID 3 from GPU 0: In use by
# another client" then "Failed to destroy GPU instances: In use by another
# client", leaving the instances after it alone.
# Env: GS_BIN (gpuslice), GS_TEST_TMP (scratch dir).
set -u
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

: "${GS_BIN:?set GS_BIN to the gpuslice binary}"
work=$(gs_tmpdir cli-dgi-busy)
trap 'rm -rf "$work"' EXIT
unset GPUSLICE_EMULATE
export GPUSLICE_EMU_STATE="$work/emu.json"
gs() { timeout 20 "$GS_BIN" -q "$@"; }

# An H100 (straight ids): 2g at 0:2 is GI 3, 2g at 2:2 GI 4, 3g at 4:4 GI 2.
gs emu reset --emulate h100-80gb >/dev/null && gs mig enable -i 0 >/dev/null &&
  gs gi create 14@0,14@2,9@4 -i 0 >/dev/null && gs ci create -i 0 --gi 3 >/dev/null ||
  fail "setup"
cat >"$work/want" <<'OUT'
Successfully destroyed GPU instance ID  2 from GPU  0
Unable to destroy GPU instance ID  3 from GPU  0: In use by another client
Failed to destroy GPU instances: In use by another client
OUT
gs gi destroy -i 0 >"$work/got" 2>"$work/err"
rc=$?
if diff -u "$work/want" "$work/got"; then ok; else fail "gi destroy output differs (above)"; fi
[ "$rc" -ne 0 ] && ok || fail "gi destroy exited 0 after a refusal"
grep -q "GPU instance 3 on GPU 0 has 1 compute instance" "$work/err" && ok ||
  fail "stderr does not say why: $(cat "$work/err")"
# GI 4, after the busy one, is still there.
gs gi list -i 0 --json | grep -q '"id": 4' && ok || fail "GI 4 was destroyed past the refusal"
summary
