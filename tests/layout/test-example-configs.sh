#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-example-configs.sh: every config of every shipped example file
# (configs/<model>.{mig-parted,gpuslice}.yaml) applies on an emulated GPU of
# its model, asserts as matching afterwards, and the files are exactly what
# scripts/gen-example-configs.sh writes from the current tables.
# Env: GS_BIN (gpuslice), GS_SRC (source dir), GS_TEST_TMP (scratch dir).
set -u
: "${GS_BIN:?}" "${GS_SRC:?}"
root=$(mktemp -d "${GS_TEST_TMP:-/tmp}/example-configs.XXXXXX") || exit 1
trap 'rm -rf "$root"' EXIT
unset GPUSLICE_EMULATE GPUSLICE_EMU_KILL_AFTER
export GPUSLICE_EMU_STATE="$root/emu.json" GPUSLICE_APPLY_LOCK="$root/apply"
passed=0
failed=0
for file in "$GS_SRC"/configs/*.yaml; do
  model=$(basename "$file" | cut -d. -f1)
  names=$(sed -n 's/^  \([a-z0-9][^:]*\):$/\1/p' "$file")
  [ -n "$names" ] || { echo "FAIL: $file has no configs"; failed=$((failed + 1)); continue; }
  "$GS_BIN" -q emu reset --emulate "$model:2" >/dev/null
  for name in $names; do
    if "$GS_BIN" -q apply -f "$file" -c "$name" >"$root/out" 2>&1 &&
      "$GS_BIN" -q assert -f "$file" -c "$name" >>"$root/out" 2>&1; then
      passed=$((passed + 1))
    else
      echo "FAIL: $file -c $name: $(tail -3 "$root/out")"
      failed=$((failed + 1))
    fi
  done
done
# Both formats name the same configs for every model, mig-parted's usual set among them.
for file in "$GS_SRC"/configs/*.mig-parted.yaml; do
  ours=${file%.mig-parted.yaml}.gpuslice.yaml
  names() { sed -n 's/^  \([a-z0-9][^:]*\):$/\1/p' "$1" | sort; }
  missing=$(comm -23 <(names "$file") <(names "$ours") | tr '\n' ' ')
  usual=$(names "$file" | grep -c -E '^all-(disabled|enabled|balanced|1g\.[0-9]+gb|2g\.[0-9]+gb|3g\.[0-9]+gb|4g\.[0-9]+gb)$')
  if [ -z "$missing" ] && [ "$usual" -ge 5 ]; then
    passed=$((passed + 1))
  else
    echo "FAIL: $(basename "$file"): configs missing from $(basename "$ours"): $missing; usual ones: $usual"
    failed=$((failed + 1))
  fi
done
if "$GS_SRC/scripts/gen-example-configs.sh" "$GS_BIN" "$root/fresh" >/dev/null 2>&1 &&
  diff -r "$GS_SRC/configs" "$root/fresh" >"$root/diff"; then
  passed=$((passed + 1))
else
  echo "FAIL: configs/ differs from what scripts/gen-example-configs.sh writes now:"
  head -20 "$root/diff"
  failed=$((failed + 1))
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
