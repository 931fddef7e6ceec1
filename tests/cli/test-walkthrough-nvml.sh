#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-walkthrough-nvml.sh: the demo's MIG lifecycle driven through the NVML
# backend (libnvidia-ml.so.1 = our nvml-emu) must print exactly the golden
# transcript the emulator backend prints; and the default backend is NVML
# whenever the library loads and sees a GPU (no "EMULATED" notice), the
# emulator otherwise (with the notice).
# Env: GS_BIN, GS_SRC, GS_NVML_EMU (the built libnvidia-ml.so.1), GS_TEST_TMP.
set -u
: "${GS_BIN:?}" "${GS_SRC:?}" "${GS_NVML_EMU:?}"
root=$(mktemp -d "${GS_TEST_TMP:-/tmp}/walkthrough-nvml.XXXXXX") || exit 1
trap 'rm -rf "$root"' EXIT
unset GPUSLICE_EMULATE GPUSLICE_EMU_STATE
passed=0
failed=0
check() { if eval "$2"; then passed=$((passed + 1)); else echo "FAIL: $1"; failed=$((failed + 1)); fi; }

GPUSLICE_NVML_LIBRARY="$GS_NVML_EMU" GPUSLICE="$GS_BIN" bash "$GS_SRC/scripts/demo-lifecycle.sh" >"$root/out" 2>"$root/err"
sed -i -E "/^Emulated machine reset to /s#\\(state: /[^)]*\\)#(state: STATE)#" "$root/out"
if diff -u "$GS_SRC/tests/cli/walkthrough.expected" "$root/out" >"$root/diff"; then
  passed=$((passed + 1))
else
  echo "FAIL: the walkthrough through NVML differs from the golden transcript:"
  head -40 "$root/diff"
  failed=$((failed + 1))
fi

export GPUSLICE_EMU_STATE="$root/emu.json"
GPUSLICE_NVML_LIBRARY="$GS_NVML_EMU" "$GS_BIN" list >/dev/null 2>"$root/err"
check "default backend with a loadable NVML: no emulation notice" '! grep -q EMULATED "$root/err"'
GPUSLICE_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1 "$GS_BIN" list >/dev/null 2>"$root/err"
check "default backend without NVML: one notice with the reason" \
  '[ "$(wc -l <"$root/err")" -eq 1 ] && grep -q "cannot load /nonexistent/libnvidia-ml.so.1; using 1 EMULATED GPU" "$root/err"'
GPUSLICE_NVML_LIBRARY="$GS_NVML_EMU" "$GS_BIN" --backend emu list >/dev/null 2>"$root/err"
check "--backend emu beside a loadable NVML: the notice" 'grep -q "EMULATED" "$root/err"'

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
