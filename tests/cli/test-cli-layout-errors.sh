#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-cli-layout-errors.sh: `apply`, `assert`, `export` and `recover` given
# bad input: the exit status, one stderr line naming the input (file and line
# for config files) and the fix, and the emulated GPUs left unchanged.
# Env: GS_BIN (gpuslice), GS_TEST_TMP (scratch dir).
set -u
: "${GS_BIN:?}"
root=$(mktemp -d "${GS_TEST_TMP:-/tmp}/cli-layout-errors.XXXXXX") || exit 1
trap 'rm -rf "$root"' EXIT
unset GPUSLICE_EMULATE GPUSLICE_EMU_KILL_AFTER MIG_PARTED_CONFIG_FILE MIG_PARTED_SELECTED_CONFIG MIG_PARTED_HOOKS_FILE
export GPUSLICE_EMU_STATE="$root/emu.json" GPUSLICE_APPLY_LOCK="$root/apply"
passed=0
failed=0
"$GS_BIN" -q emu reset --emulate a100-40gb >/dev/null
"$GS_BIN" -q mig enable -i 0 >/dev/null
"$GS_BIN" -q gi create 3g.20gb -C -i 0 >/dev/null

# expect NAME STATUS FRAGMENT... -- ARGS: runs gpuslice ARGS, checks the exit
# status, that stderr is one line containing every fragment, and no change.
expect() {
  local name=$1 want=$2 frags=() rc lines
  shift 2
  while [ "$1" != "--" ]; do frags+=("$1"); shift; done
  shift
  cp "$GPUSLICE_EMU_STATE" "$root/before"
  "$GS_BIN" -q "$@" >"$root/out" 2>"$root/err"
  rc=$?
  lines=$(wc -l <"$root/err")
  if [ "$rc" -ne "$want" ]; then echo "FAIL: $name: exit $rc, want $want: $(cat "$root/err")"; failed=$((failed + 1)); return; fi
  if [ "$want" -ne 0 ] && [ "$lines" -ne 1 ]; then echo "FAIL: $name: $lines stderr lines"; failed=$((failed + 1)); return; fi
  for f in ${frags[@]+"${frags[@]}"}; do
    if ! grep -qF -- "$f" "$root/err" "$root/out"; then echo "FAIL: $name: no '$f' in: $(cat "$root/err" "$root/out")"; failed=$((failed + 1)); return; fi
  done
  if ! cmp -s "$root/before" "$GPUSLICE_EMU_STATE"; then echo "FAIL: $name: the state changed"; failed=$((failed + 1)); return; fi
  passed=$((passed + 1))
}

cfg() { printf 'version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: true\n      mig-devices: {%s}\n' "$1" >"$root/c.yaml"; }

cfg '"1g.5gb": 7'
expect "no -f" 2 "-f" "-c" -- apply
expect "missing file" 2 "$root/nope.yaml" -- apply -f "$root/nope.yaml" -c a
printf 'version: v1\nmig-configs:\n  a: [\n' >"$root/bad.yaml"
expect "malformed YAML" 2 "bad.yaml:" "not valid YAML" -- apply -f "$root/bad.yaml" -c a
expect "unknown config" 2 "no config named 'b'" "-c: a" -- apply -f "$root/c.yaml" -c b
cfg '"1g.6gb": 1'
expect "unknown profile" 2 "c.yaml:6" "'1g.6gb'" "1g.5gb" -- apply -f "$root/c.yaml" -c a
cfg '"4g.20gb": 2'
expect "does not fit" 2 "c.yaml:4" "2 4g.20gb instances" "at most 1" "gpuslice layouts a100-40gb" -- apply -f "$root/c.yaml" -c a
cfg '"3g.20gb": 1'
expect "assert matches" 0 "matches" -- assert -f "$root/c.yaml" -c a
cfg '"1g.5gb": 7'
expect "assert differs" 1 "does not match" "destroy GPU instance" -- assert -f "$root/c.yaml" -c a
expect "dry run changes nothing" 0 "Dry run" "create GPU instance 1g.5gb" -- apply -f "$root/c.yaml" -c a --dry-run
expect "export format" 2 "--format 'yaml'" "mig-parted" -- export --format yaml
expect "recover with nothing" 0 "Nothing to recover" -- recover
printf 'version: v1\nhooks:\n  apply-start:\n    - args: [x]\n' >"$root/h.yaml"
expect "hook without command" 2 "h.yaml:4" "'command'" -- apply -f "$root/c.yaml" -c a -k "$root/h.yaml"
printf 'not json' >"$root/apply.journal"
expect "corrupt journal" 3 "apply.journal" "apply the layout again" -- recover

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
