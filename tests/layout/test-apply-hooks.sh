#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-apply-hooks.sh: nvidia-mig-parted hooks files around `gpuslice apply`:
# which points run when (apply-start always, pre-apply-mode only before a mode
# change, pre-apply-config only before instance changes, apply-exit always),
# the variables they see, and that a failing hook stops the apply with the
# GPUs untouched while apply-exit still runs.
# Env: GS_BIN (gpuslice), GS_TEST_TMP (scratch dir).
set -u
: "${GS_BIN:?}"
root=$(mktemp -d "${GS_TEST_TMP:-/tmp}/apply-hooks.XXXXXX") || exit 1
trap 'rm -rf "$root"' EXIT
unset GPUSLICE_EMULATE GPUSLICE_EMU_KILL_AFTER MIG_PARTED_HOOKS_FILE MIG_PARTED_CONFIG_FILE MIG_PARTED_SELECTED_CONFIG
export GPUSLICE_EMU_STATE="$root/emu.json" GPUSLICE_APPLY_LOCK="$root/apply"
passed=0
failed=0
check() { if eval "$2"; then passed=$((passed + 1)); else echo "FAIL: $1"; failed=$((failed + 1)); fi; }
g() { "$GS_BIN" -q "$@"; }
log="$root/log"

cat >"$root/c.yaml" <<'YAML'
version: v1
mig-configs:
  off:
    - devices: all
      mig-enabled: false
  all-1g:
    - devices: all
      mig-enabled: true
      mig-devices: {"1g.5gb": 7}
  balanced:
    - devices: all
      mig-enabled: true
      mig-devices: {"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1}
YAML

hook() { # point, then the shell line the hook runs
  printf '  %s:\n    - command: /bin/sh\n      args: ["-c", "%s >> %s"]\n      envs: {WHO: gpuslice}\n' "$1" "$2" "$log"
}
{ echo "version: v1"; echo "hooks:"
  hook apply-start 'echo start $MIG_PARTED_SELECTED_CONFIG $WHO'
  hook pre-apply-mode 'echo mode'
  hook pre-apply-config 'echo config $GPUSLICE_CONFIG_FILE'
  hook apply-exit 'echo exit'; } >"$root/hooks.yaml"

g emu reset --emulate a100-40gb >/dev/null
: >"$log"
g apply -f "$root/c.yaml" -c all-1g -k "$root/hooks.yaml" >/dev/null
check "every point runs around a mode and config change" \
  '[ "$(cat "$log")" = "$(printf "start all-1g gpuslice\nmode\nconfig %s\nexit" "$root/c.yaml")" ]'
: >"$log"
g apply -f "$root/c.yaml" -c all-1g -k "$root/hooks.yaml" >/dev/null
check "no change: only start and exit" '[ "$(cat "$log")" = "$(printf "start all-1g gpuslice\nexit")" ]'
: >"$log"
MIG_PARTED_HOOKS_FILE="$root/hooks.yaml" g apply -f "$root/c.yaml" -c balanced >/dev/null
check "MIG_PARTED_HOOKS_FILE is honoured, config without mode" \
  '[ "$(cat "$log")" = "$(printf "start balanced gpuslice\nconfig %s\nexit" "$root/c.yaml")" ]'

# The variables mig-parted gives every hook (one per apply flag); they win
# over a hook's own `envs`, as in mig-parted.
{ echo "version: v1"; echo "hooks:"
  printf '  apply-start:\n    - command: /bin/sh\n      args: ["-c", "env | grep ^MIG_PARTED_ | sort >> %s"]\n' "$log"
  printf '      envs: {MIG_PARTED_SELECTED_CONFIG: from-the-hook, MIG_PARTED_EXTRA: kept}\n'; } >"$root/env-hooks.yaml"
: >"$log"
g apply -f "$root/c.yaml" -c all-1g -m -k "$root/env-hooks.yaml" >/dev/null
check "hooks see every mig-parted variable, ours winning over the hook's envs" \
  '[ "$(cat "$log")" = "$(printf "MIG_PARTED_CONFIG_FILE=%s\nMIG_PARTED_EXTRA=kept\nMIG_PARTED_HOOKS_FILE=%s\nMIG_PARTED_MODE_CHANGE_ONLY=true\nMIG_PARTED_SELECTED_CONFIG=all-1g\nMIG_PARTED_SKIP_RESET=false" "$root/c.yaml" "$root/env-hooks.yaml")" ]'

# A failing pre-apply-config hook: nothing changes, apply-exit still runs.
{ echo "version: v1"; echo "hooks:"
  printf '  pre-apply-config:\n    - command: /bin/false\n'
  hook apply-exit 'echo exit'; } >"$root/bad-hooks.yaml"
: >"$log"
g apply -f "$root/c.yaml" -c all-1g -k "$root/bad-hooks.yaml" >"$root/out" 2>&1
rc=$?
check "failing hook exits 1" '[ "$rc" -eq 1 ]'
check "failing hook named with file and line" 'grep -q "bad-hooks.yaml:4: pre-apply-config hook ./bin/false. failed" "$root/out"'
check "GPUs untouched by the failed apply" 'g assert -f "$root/c.yaml" -c balanced >/dev/null'
check "apply-exit ran after the failure" '[ "$(cat "$log")" = "exit" ]'

printf 'version: v1\nhooks:\n  apply-start:\n    - command: /nonexistent/stop-services\n' >"$root/missing.yaml"
g apply -f "$root/c.yaml" -c all-1g -k "$root/missing.yaml" >"$root/out" 2>&1
check "missing hook program says so" 'grep -q "cannot run ./nonexistent/stop-services." "$root/out"'

printf 'version: v1\nhooks:\n  before-everything: []\n' >"$root/malformed.yaml"
g apply -f "$root/c.yaml" -c all-1g -k "$root/malformed.yaml" >"$root/out" 2>&1
rc=$?
check "unknown hook point: exit 2 naming file, line and the allowed points" \
  '[ "$rc" -eq 2 ] && grep -q "malformed.yaml:3" "$root/out" && grep -q "apply-start, pre-apply-mode" "$root/out"'
check "and nothing changed" 'g assert -f "$root/c.yaml" -c balanced >/dev/null'

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
