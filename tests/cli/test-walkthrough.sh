#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-walkthrough.sh: runs scripts/demo-lifecycle.sh (NVIDIA's A100 walkthrough on an
# emulated A100-SXM4-40GB) and compares its stdout with the golden transcript
# tests/cli/walkthrough.expected, checked line by line against
# reference/mig-facts.md (§1.2, §3.1, §4.1, §8.1, §8.3). The one temporary
# path (the `emu reset` line) is replaced by STATE first.
# Env: GS_BIN (gpuslice), GS_SRC (source dir), GS_TEST_TMP (scratch dir).
# To refresh the golden file after an intended change:
#   GS_BIN=build/gpuslice GS_SRC=. GS_TEST_TMP=/tmp GS_UPDATE=1 bash tests/cli/test-walkthrough.sh
set -u

: "${GS_BIN:?set GS_BIN to the gpuslice binary}" "${GS_SRC:?set GS_SRC to the source dir}"
mkdir -p "${GS_TEST_TMP:-/tmp}"
work=$(mktemp -d "${GS_TEST_TMP:-/tmp}/walkthrough.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
expected="$GS_SRC/tests/cli/walkthrough.expected"

GPUSLICE="$GS_BIN" timeout 60 bash "$GS_SRC/scripts/demo-lifecycle.sh" >"$work/raw" 2>"$work/stderr"
rc=$?
sed -E '/^Emulated machine reset to /s#\(state: /[^)]*\)#(state: STATE)#' "$work/raw" >"$work/actual"

if [ "${GS_UPDATE:-0}" = 1 ] && [ "$rc" -eq 0 ]; then
  cp "$work/actual" "$expected"
  echo "walkthrough: golden file rewritten: $expected"
  exit 0
fi

status=0
if [ "$rc" -ne 0 ]; then
  echo "FAIL: scripts/demo-lifecycle.sh exited $rc; its stderr:"
  sed 's/^/  /' "$work/stderr"
  status=1
fi
if [ -s "$work/stderr" ]; then
  echo "FAIL: scripts/demo-lifecycle.sh wrote to stderr (every step runs with -q):"
  sed 's/^/  /' "$work/stderr"
  status=1
fi
if ! diff -u --label walkthrough.expected --label "demo-lifecycle.sh stdout" "$expected" "$work/actual"; then
  echo "FAIL: demo-lifecycle.sh output differs from tests/cli/walkthrough.expected (diff above)"
  status=1
fi
[ "$status" -eq 0 ] && echo "walkthrough: demo-lifecycle.sh output matches the golden transcript ($(wc -l <"$expected") lines)"
exit "$status"
