#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-systemd-unit.sh: gpuslice-apply.service (as CMake configures it from
# deploy/systemd/gpuslice-apply.service.in) is a unit
# systemd accepts (systemd-analyze verify, where installed), and its commands,
# run as systemd would run them on the emulator (the binary and config paths
# swapped for the test's, --backend nvml for emu), bring the GPUs to the
# selected layout after a reboot, also when the last apply was cut short.
# Env: GS_BIN (gpuslice), GS_BUILD (build dir), GS_TEST_TMP (scratch dir).
set -u
: "${GS_BIN:?}" "${GS_SRC:?}" "${GS_BUILD:?}"
. "$GS_SRC/tests/lib/common.sh"
root=$(gs_tmpdir systemd-unit)
trap 'rm -rf "$root"' EXIT
unset GPUSLICE_EMULATE GPUSLICE_EMU_KILL_AFTER MIG_PARTED_CONFIG_FILE MIG_PARTED_SELECTED_CONFIG MIG_PARTED_HOOKS_FILE
export GPUSLICE_EMU_STATE="$root/emu.json" GPUSLICE_APPLY_LOCK="$root/apply"
unit="$GS_BUILD/deploy/systemd/gpuslice-apply.service"
# The installed binary's path, as the unit names it.
bin=$(sed -n 's|^ExecStart=\([^ ]*/gpuslice\) .*|\1|p' "$unit")
passed=0
failed=0
check() { if eval "$2"; then passed=$((passed + 1)); else echo "FAIL: $1"; failed=$((failed + 1)); fi; }
g() { "$GS_BIN" -q "$@"; }

if command -v systemd-analyze >/dev/null; then
  sed "s|$bin|$GS_BIN|g" "$unit" >"$root/gpuslice-apply.service"
  # Its Documentation= pages are the build's (they are installed beside the unit).
  MANPATH="$GS_BUILD/man" systemd-analyze verify "$root/gpuslice-apply.service" >"$root/verify" 2>&1
  check "systemd-analyze verify accepts the unit: $(cat "$root/verify")" '[ ! -s "$root/verify" ]'
fi

cp "$GS_SRC/configs/a100-40gb.mig-parted.yaml" "$root/config.yaml"
printf 'GPUSLICE_SELECTED_CONFIG=all-balanced\nGPUSLICE_APPLY_ARGS=--force\n' >"$root/default"
# The unit's ExecStartPre and ExecStart lines, as this machine can run them.
commands() {
  sed -n 's/^ExecStart\(Pre\)\{0,1\}=//p' "$unit" |
    sed -e "s|$bin|\"$GS_BIN\" -q|" -e 's|--backend nvml|--backend emu|' \
      -e "s|/etc/gpuslice/config.yaml|$root/config.yaml|"
}
check "the unit has a recover and an apply" '[ "$(commands | grep -c -e " recover " -e " apply ")" -eq 2 ]'
boot() { # systemd: EnvironmentFile, then each command in turn, stopping at a failure
  (set -a; . "$root/default"; set +a
   while read -r line; do eval "$line" >>"$root/boot.log" 2>&1 || exit 1; done < <(commands))
}

g emu reset --emulate a100-40gb:2 >/dev/null
boot
check "first boot: the selected layout" '[ $? -eq 0 ] && g assert -f "$root/config.yaml" -c all-balanced >/dev/null'
g emu reboot >/dev/null
check "a reboot loses the instances" '! g assert -f "$root/config.yaml" -c all-balanced >/dev/null 2>&1'
boot
check "the unit makes them again" '[ $? -eq 0 ] && g assert -f "$root/config.yaml" -c all-balanced >/dev/null'

# An apply to all-1g.5gb killed mid-way, then a reboot: the unit finishes the
# interrupted apply, then applies the selected config.
(GPUSLICE_EMU_KILL_AFTER=3 "$GS_BIN" -q apply -f "$root/config.yaml" -c all-1g.5gb) >/dev/null 2>&1
check "the interrupted apply left its journal" '[ -e "$root/apply.journal" ]'
g emu reboot >/dev/null
boot
check "after it, the unit still ends in the selected layout, journal gone" \
  '[ $? -eq 0 ] && g assert -f "$root/config.yaml" -c all-balanced >/dev/null && [ ! -e "$root/apply.journal" ]'

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
