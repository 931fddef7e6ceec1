#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-mig-parted-callers.sh: gpuslice linked as `nvidia-mig-parted`, driven
# by exactly the command lines NVIDIA's own callers issue, in their order,
# with their variables, deciding on the exit codes as they do:
#   - the GPU operator's mig-manager (NVIDIA/mig-parted
#     pkg/mig/reconfigure/reconfigure.go, Run; the older
#     deployments/container/reconfigure-mig.sh issues the same lines but runs
#     the mode assert after a failed mode apply too);
#   - the systemd unit's deployments/systemd/service.sh (generate-config,
#     assert -m, apply -m -s, apply -m, apply, export) with a hooks file
#     shaped as hooks-default.yaml (bash -c "source hooks.sh; <point>").
# Their Kubernetes and systemd side (labels, pods, reboot) is the harness's:
# a reboot is `gpuslice emu reboot`, a node label a line in a log. Configs
# all-1g.10gb, all-balanced, all-disabled and a custom one, on emulated
# A100-80GB and H100 GPUs; the paths where a GPU reset is needed (through
# the NVML backend, where mig-parted runs `nvidia-smi -r`: a stand-in
# nvidia-smi lets a fabric-manager-like holder go, as the real one's
# handshake does), where the reset is impossible (VM: reboot), and where a
# process blocks the change. Expected lines are mig-parted's (cmd/, and the
# transcripts in NVIDIA/gpu-operator#1606, #2376, NVIDIA/mig-parted#181).
# Env: GS_BIN, GS_NVML_EMU, GS_TEST_TMP.
set -u
: "${GS_BIN:?}" "${GS_NVML_EMU:?}"
. "$(dirname "$0")/../lib/common.sh"
root=$(gs_tmpdir mig-parted-callers) || exit 1
# KEEP=1 keeps the scratch directory and shows the calls of a failed check.
if [ -n "${KEEP:-}" ]; then echo "root=$root" >&2; else trap 'rm -rf "$root"' EXIT; fi
for v in $(env | sed -n 's/^\(MIG_PARTED_[A-Z_]*\)=.*/\1/p'); do unset "$v"; done
unset GPUSLICE_EMULATE GPUSLICE_NVML_LIBRARY GPUSLICE_EMU_KILL_AFTER
export GPUSLICE_EMU_STATE="$root/emu.json" GPUSLICE_APPLY_LOCK="$root/apply"
mkdir -p "$root/bin" "$root/etc"
ln -s "$GS_BIN" "$root/bin/nvidia-mig-parted"
export PATH="$root/bin:$PATH"
check() { if eval "$2"; then ok; else fail "$1"; [ -n "${KEEP:-}" ] && { calls; echo; tail -5 "$root/err"; tail -5 "$root/service.out" 2>/dev/null; }; fi; }
emu() { "$GS_BIN" -q "$@"; }

# "gpu:profile@start ..." of every GPU instance, and "gpu:on|off" modes.
layout() { emu gi list --json | python3 -c 'import json,sys
print(" ".join("%d:%s@%d" % (x["gpu"], x["name"], x["start"]) for x in sorted(json.load(sys.stdin), key=lambda x: (x["gpu"], x["start"]))))'; }
modes() { emu mig status --json | python3 -c 'import json,sys
print(" ".join("%d:%s" % (x["gpu"], "on" if x["mig_current"] else "off") for x in json.load(sys.stdin)))'; }

# Our own config in NVIDIA's format and shape (its defaults pick an entry per
# model with device-filter lists).
cat >"$root/config.yaml" <<'YAML'
version: v1
mig-configs:
  all-disabled:
    - devices: all
      mig-enabled: false
  all-1g.10gb:
    - device-filter: ["0x233010DE", "0x233110DE", "0x232210DE", "0x20B210DE", "0x20B510DE"]
      devices: all
      mig-enabled: true
      mig-devices:
        "1g.10gb": 7
  all-balanced:
    - device-filter: ["0x233010DE", "0x233110DE", "0x232210DE", "0x20B210DE", "0x20B510DE"]
      devices: all
      mig-enabled: true
      mig-devices:
        "1g.10gb": 2
        "2g.20gb": 1
        "3g.40gb": 1
  custom-config:
    - devices: [0]
      mig-enabled: true
      mig-devices:
        "1c.3g.40gb": 2
        "4g.40gb": 1
    - devices: [1]
      mig-enabled: false
    - devices: [2]
      mig-enabled: true
      mig-devices:
        "7g.80gb": 1
YAML

# ---- the mig-manager (reconfigure.go's Run) ----

# mp ARGS: one nvidia-mig-parted call, logged as the caller sees it.
mp() {
  nvidia-mig-parted "$@" >>"$root/out" 2>>"$root/err"
  local rc=$?
  echo "nvidia-mig-parted $* -> $rc" >>"$root/calls"
  return $rc
}

# reconfigure CONFIG: what the mig-manager runs when nvidia.com/mig.config
# changes to CONFIG; leaves nvidia.com/mig.config.state in $state. With
# WITH_REBOOT=true a failed mode change reboots (the node label says
# "rebooting"; the manager starts over after the boot).
reconfigure() {
  local f="$root/config.yaml" c=$1
  : >"$root/calls"; : >"$root/out"; : >"$root/err"
  if ! mp assert --valid-config -f "$f" -c "$c"; then state=failed; return; fi
  if mp assert -f "$f" -c "$c"; then state=success; return; fi
  if ! mp assert --mode-only -f "$f" -c "$c" && [ "$state" = rebooting ]; then
    state=failed # "MIG mode change did not take effect after rebooting"
    return
  fi
  state=pending
  if ! { mp -d apply --mode-only -f "$f" -c "$c" && mp -d assert --mode-only -f "$f" -c "$c"; } &&
    [ "${WITH_REBOOT:-false}" = true ]; then
    state=rebooting
    emu emu reboot >/dev/null
    return
  fi
  if mp -d apply -f "$f" -c "$c"; then state=success; else state=failed; fi
}

calls() { sed 's/ -f [^ ]* / -f F /' "$root/calls" | tr '\n' ';'; }

emu emu reset --emulate a100-80gb:2,h100-80gb >/dev/null
state=""
reconfigure all-1g.10gb
check "mig-manager all-1g.10gb from MIG off: its seven calls in order, exit codes as it expects" \
  '[ "$state" = success ] && [ "$(calls)" = "nvidia-mig-parted assert --valid-config -f F -c all-1g.10gb -> 0;nvidia-mig-parted assert -f F -c all-1g.10gb -> 1;nvidia-mig-parted assert --mode-only -f F -c all-1g.10gb -> 1;nvidia-mig-parted -d apply --mode-only -f F -c all-1g.10gb -> 0;nvidia-mig-parted -d assert --mode-only -f F -c all-1g.10gb -> 0;nvidia-mig-parted -d apply -f F -c all-1g.10gb -> 0;" ]'
check "... seven 1g.10gb on each GPU" '[ "$(layout | tr " " "\n" | cut -d@ -f1 | sort | uniq -c | tr -s " " | tr "\n" ";")" = " 7 0:1g.10gb; 7 1:1g.10gb; 7 2:1g.10gb;" ] && [ "$(modes)" = "0:on 1:on 2:on" ]'
check "... its output lines: valid, not applied (fatal), applied successfully twice, mode asserted" \
  '[ "$(grep -c "^MIG configuration applied successfully$" "$root/out")" = 2 ] && grep -qx "Selected MIG configuration is valid" "$root/out" && grep -qx "Selected MIG mode settings from configuration currently applied" "$root/out" &&
   grep -q "^time=\"[0-9T:+Z-]*\" level=fatal msg=\"Assertion failure: selected configuration not currently applied\"$" "$root/err"'
check "... -d shows mig-parted's debug lines (walk, hooks, mode change)" \
  'grep -q "level=debug msg=\"Walking MigConfig for (device-filter=\[0x233010DE 0x233110DE 0x232210DE 0x20B210DE 0x20B510DE\], devices=all)\"" "$root/err" &&
   grep -q "level=debug msg=\"    MIG capable: true\\\\n\"" "$root/err" && grep -q "level=debug msg=\"    Updating MIG mode: Enabled\"" "$root/err" &&
   grep -q "level=debug msg=\"    Mode change pending: false\"" "$root/err" && grep -q "level=debug msg=\"Running apply-exit hook\"" "$root/err" &&
   grep -q "level=debug msg=\"    Updating MIG config: map\[1g.10gb:7\]\"" "$root/err"'
reconfigure all-1g.10gb
check "mig-manager again with the same label: assert says applied, nothing else runs" \
  '[ "$state" = success ] && [ "$(calls)" = "nvidia-mig-parted assert --valid-config -f F -c all-1g.10gb -> 0;nvidia-mig-parted assert -f F -c all-1g.10gb -> 0;" ] && grep -qx "Selected MIG configuration currently applied" "$root/out"'

reconfigure all-balanced
check "mig-manager all-balanced: 2g at 0, 1g at 2 and 3, 3g at 4 on every GPU, as real mig-parted" \
  '[ "$state" = success ] && [ "$(layout)" = "0:2g.20gb@0 0:1g.10gb@2 0:1g.10gb@3 0:3g.40gb@4 1:2g.20gb@0 1:1g.10gb@2 1:1g.10gb@3 1:3g.40gb@4 2:2g.20gb@0 2:1g.10gb@2 2:1g.10gb@3 2:3g.40gb@4" ]'
check "... no mode change: the mode-only apply changes nothing, the device step rebuilds" \
  '[ "$(calls | cut -d";" -f3-4)" = "nvidia-mig-parted assert --mode-only -f F -c all-balanced -> 0;nvidia-mig-parted -d apply --mode-only -f F -c all-balanced -> 0" ] && ! grep -q "Applying MIG mode change" "$root/err" && grep -q "Applying MIG device configuration" "$root/err"'

reconfigure custom-config
check "mig-manager custom-config: per-device entries, GPU 1 out of MIG, 1c CIs packed in one GI" \
  '[ "$state" = success ] && [ "$(modes)" = "0:on 1:off 2:on" ] && [ "$(layout)" = "0:4g.40gb@0 0:3g.40gb@4 2:7g.80gb@0" ] &&
   [ "$(emu ci list -i 0 --json | python3 -c "import json,sys; print(sorted(x[\"name\"] for x in json.load(sys.stdin)))")" = "['\''1c.3g.40gb'\'', '\''1c.3g.40gb'\'', '\''4g.40gb'\'']" ]'

reconfigure all-disabled
check "mig-manager all-disabled: every GPU out of MIG mode, instances gone" \
  '[ "$state" = success ] && [ "$(modes)" = "0:off 1:off 2:off" ] && [ -z "$(layout)" ]'

# A process holds GPU 0 (no MIG): the mode change stays pending, the reset
# of all GPUs fails (exit status 255, nvidia-smi's report), the manager goes on
# to apply, which fails the same way: state failed.
emu emu proc-add --pid 4242 --name train.py -i 0 >/dev/null
reconfigure all-1g.10gb
check "mig-manager with a process on a GPU: the mode stays pending, reset refused, state failed" \
  '[ "$state" = failed ] && [ "$(calls | cut -d";" -f4-6)" = "nvidia-mig-parted -d apply --mode-only -f F -c all-1g.10gb -> 1;nvidia-mig-parted -d apply -f F -c all-1g.10gb -> 1;" ] &&
   grep -q "level=debug msg=\"    Mode change pending: true\"" "$root/err" && grep -q "level=debug msg=\"At least one mode change pending\"" "$root/err" &&
   grep -q "level=error msg=\"\\\\nThe following GPUs could not be reset:\\\\n  GPU 00000000:07:00.0: In use by another client\\\\n\\\\n1 device is currently being used" "$root/err" &&
   grep -q "level=fatal msg=\"Error applying MIG configuration with hooks: error resetting all GPUs: exit status 255\"" "$root/err"'
emu emu proc-rm --pid 4242 >/dev/null
reconfigure all-1g.10gb
check "... once the process is gone the label goes through" '[ "$state" = success ] && [ "$(modes)" = "0:on 1:on 2:on" ]'

# A process on one 1g.10gb: mig-parted would wipe the GPU to rebuild it and
# fail on the busy compute instance; ours fails the same, and changes nothing.
emu emu proc-add --pid 4343 --name infer -i 1 --gi "$(emu gi list -i 1 --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])')" --ci 0 >/dev/null
before=$(layout)
reconfigure all-balanced
check "mig-manager with a process on a MIG device: apply fails (exit 1) as mig-parted, every instance kept" \
  '[ "$state" = failed ] && [ "$(layout)" = "$before" ] &&
   grep -q "level=error msg=\"Error clearing MigConfig: error walking gpu instances for .1.: error walking compute instances for .0.: error destroying Compute instance for profile .(0, 0).: In use by another client\"" "$root/err" &&
   grep -q "level=fatal msg=\"Error applying MIG configuration with hooks: error setting MIGConfig: error attempting multiple config orderings: all orderings failed\"" "$root/err"'
emu emu proc-rm --pid 4343 >/dev/null

# A VM: no GPU reset possible, the mode stays pending. Without WITH_REBOOT
# the label fails; with it the node reboots and the manager finishes after.
emu emu reset --emulate a100-80gb:2 >/dev/null
emu emu set -i 0,1 --reset-blocked on >/dev/null
state=""
reconfigure all-balanced
check "mig-manager in a VM, no reboot allowed: reset not supported, state failed" \
  '[ "$state" = failed ] && grep -q "level=error msg=\"\\\\nResetting GPU 00000000:07:00.0 is not supported.\\\\n" "$root/err" && grep -q "error resetting all GPUs: exit status 3\"" "$root/err"'
WITH_REBOOT=true
state=""
reconfigure all-balanced
check "... with WITH_REBOOT=true: state rebooting and a reboot" '[ "$state" = rebooting ] && [ "$(modes)" = "0:on 1:on" ]'
reconfigure all-balanced
check "... after the boot the manager applies the devices: success" \
  '[ "$state" = success ] && [ "$(layout)" = "0:2g.20gb@0 0:1g.10gb@2 0:1g.10gb@3 0:3g.40gb@4 1:2g.20gb@0 1:1g.10gb@2 1:1g.10gb@3 1:3g.40gb@4" ]'
unset WITH_REBOOT

# The reset path: GPUs whose mode change a fabric-manager-like holder keeps
# pending until `nvidia-smi -r`, through the NVML backend (nvml-emu), where
# mig-parted runs nvidia-smi. The stand-in nvidia-smi resets through the
# emulator after letting holders named nv-fabricmanager go.
cat >"$root/bin/nvidia-smi" <<SH
#!/usr/bin/env bash
echo "nvidia-smi \$*" >>"$root/smi.log"
[ "\$1" = -r ] && [ "\$2" = -i ] || exit 2
for pid in \$("$GS_BIN" -q emu status --json | python3 -c 'import json,sys; print(" ".join(str(p["pid"]) for p in json.load(sys.stdin)["processes"] if p["name"] == "nv-fabricmanager"))'); do
  "$GS_BIN" -q emu proc-rm --pid "\$pid" >/dev/null
done
rc=0
for id in \${3//,/ }; do
  g=\$("$GS_BIN" -q list --json | python3 -c "import json,sys; print([x['gpu'] for x in json.load(sys.stdin) if x['pci_bus_id'] == '\$id'][0])")
  if "$GS_BIN" -q emu gpu-reset -i "\$g" >/dev/null 2>&1; then echo "GPU \$id was successfully reset."; else echo "GPU \$id could not be reset."; rc=255; fi
done
exit \$rc
SH
chmod +x "$root/bin/nvidia-smi"
emu emu reset --emulate a100-80gb:2 >/dev/null
emu emu proc-add --pid 900 --name nv-fabricmanager -i 0 >/dev/null
emu emu proc-add --pid 901 --name nv-fabricmanager -i 1 >/dev/null
export GPUSLICE_NVML_LIBRARY="$GS_NVML_EMU"
state=""
reconfigure all-1g.10gb
unset GPUSLICE_NVML_LIBRARY
check "mig-manager over NVML with a mode change left pending: nvidia-smi -r -i on every GPU, then success" \
  '[ "$state" = success ] && [ "$(cat "$root/smi.log")" = "nvidia-smi -r -i 00000000:07:00.0,00000000:0F:00.0" ] &&
   grep -q "level=debug msg=\"    Mode change pending: true\"" "$root/err" && grep -q "level=debug msg=\"Resetting all GPUs...\"" "$root/err" &&
   grep -q "level=debug msg=\"\\\\nGPU 00000000:07:00.0 was successfully reset.\\\\nGPU 00000000:0F:00.0 was successfully reset.\\\\n\"" "$root/err" &&
   [ "$(modes)" = "0:on 1:on" ] && [ "$(layout | tr " " "\n" | wc -l)" = 14 ]'

# ---- the systemd unit (service.sh) with hooks shaped as hooks-default.yaml ----

etc="$root/etc"
cat >"$etc/hooks.sh" <<SH
# the hooks' functions, as NVIDIA's hooks.sh: each records itself and its environment
log() { echo "\$*" >>"$etc/hooks.log"; }
apply-start() { log "apply-start \$1 env=\$(env | cut -d= -f1 | grep -v '^_\$\|^PWD\$\|^SHLVL\$\|^OLDPWD\$' | sort | tr '\n' ,)"; }
pre-apply-mode() { log pre-apply-mode; }
pre-apply-config() { log pre-apply-config; }
apply-exit() { log "apply-exit MIG_PARTED_SKIP_RESET=\$MIG_PARTED_SKIP_RESET MIG_PARTED_MODE_CHANGE_ONLY=\$MIG_PARTED_MODE_CHANGE_ONLY"; }
SH
cat >"$etc/hooks.yaml" <<YAML
version: v1
hooks:
  apply-start:
  - workdir: "$etc"
    command: "/bin/bash"
    args: ["-c", "source hooks.sh; apply-start \${MIG_PARTED_SELECTED_CONFIG}"]
  pre-apply-mode:
  - workdir: "$etc"
    command: "/bin/bash"
    args: ["-c", "source hooks.sh; pre-apply-mode"]
  pre-apply-config:
  - workdir: "$etc"
    command: "/bin/bash"
    args: ["-c", "source hooks.sh; pre-apply-config"]
  apply-exit:
  - workdir: "$etc"
    command: "/bin/bash"
    args: ["-c", "source hooks.sh; apply-exit"]
YAML

# service: service.sh's steps; a reboot is the emulator's, once.
service() {
  (
    cd "$etc" || exit 1
    : >"$root/calls"; : >"$root/out"; : >"$root/err"; : >"$etc/hooks.log"
    CONFIG_FILE="$etc/config.yaml"
    if mp generate-config -f "$CONFIG_FILE.tmp"; then
      { echo "# DO NOT EDIT: Auto-generated from hardware on every boot."; echo; cat "$CONFIG_FILE.tmp"; } >"$CONFIG_FILE"
    elif [ ! -f "$CONFIG_FILE" ]; then
      exit 1
    fi
    rm -f "$CONFIG_FILE.tmp"
    : "${MIG_PARTED_CONFIG_FILE:=$CONFIG_FILE}"
    : "${MIG_PARTED_HOOKS_FILE:=$etc/hooks.yaml}"
    : "${MIG_PARTED_SELECTED_CONFIG:?}"
    export MIG_PARTED_CONFIG_FILE MIG_PARTED_HOOKS_FILE MIG_PARTED_SELECTED_CONFIG
    if ! mp assert --mode-only; then
      mp apply --mode-only --skip-reset || { echo "Error applying MIG mode"; exit 1; }
      if [ "${RESET_AVAILABLE:-true}" != true ]; then
        [ -f "$etc/reboot_attempted" ] && exit 1
        touch "$etc/reboot_attempted"
        emu emu reboot >/dev/null
        exit 0
      fi
      mp apply --mode-only || { echo "Error issuing GPU reset"; exit 1; }
    fi
    rm -f "$etc/reboot_attempted"
    mp apply || { echo "Error applying MIG config"; exit 1; }
    mp export
  ) >>"$root/service.out" 2>&1
}

emu emu reset --emulate a100-80gb:2 >/dev/null
: >"$root/service.out"
MIG_PARTED_SELECTED_CONFIG=all-balanced service
check "service.sh all-balanced from MIG off: its calls in order, config generated from the GPUs" \
  '[ $? -eq 0 ] && [ "$(calls | sed "s|$etc|E|g")" = "nvidia-mig-parted generate-config -f F -> 0;nvidia-mig-parted assert --mode-only -> 1;nvidia-mig-parted apply --mode-only --skip-reset -> 0;nvidia-mig-parted apply --mode-only -> 0;nvidia-mig-parted apply -> 0;nvidia-mig-parted export -> 0;" ] &&
   grep -q "^  all-balanced:$" "$etc/config.yaml" && [ "$(layout)" = "0:2g.20gb@0 0:1g.10gb@2 0:1g.10gb@3 0:3g.40gb@4 1:2g.20gb@0 1:1g.10gb@2 1:1g.10gb@3 1:3g.40gb@4" ]'
check "... hooks ran in mig-parted's order with exactly its variables" \
  '[ "$(tr "\n" ";" <"$etc/hooks.log")" = "apply-start all-balanced env=MIG_PARTED_CONFIG_FILE,MIG_PARTED_HOOKS_FILE,MIG_PARTED_MODE_CHANGE_ONLY,MIG_PARTED_SELECTED_CONFIG,MIG_PARTED_SKIP_RESET,;pre-apply-mode;apply-exit MIG_PARTED_SKIP_RESET=true MIG_PARTED_MODE_CHANGE_ONLY=true;apply-start all-balanced env=MIG_PARTED_CONFIG_FILE,MIG_PARTED_HOOKS_FILE,MIG_PARTED_MODE_CHANGE_ONLY,MIG_PARTED_SELECTED_CONFIG,MIG_PARTED_SKIP_RESET,;apply-exit MIG_PARTED_SKIP_RESET=false MIG_PARTED_MODE_CHANGE_ONLY=true;apply-start all-balanced env=MIG_PARTED_CONFIG_FILE,MIG_PARTED_HOOKS_FILE,MIG_PARTED_MODE_CHANGE_ONLY,MIG_PARTED_SELECTED_CONFIG,MIG_PARTED_SKIP_RESET,;pre-apply-config;apply-exit MIG_PARTED_SKIP_RESET=false MIG_PARTED_MODE_CHANGE_ONLY=false;" ]'
check "... export at the end: one merged entry, devices: all" \
  'python3 - "$root/out" <<PY
import sys
t = open(sys.argv[1]).read()
i = t.index("version: v1")
assert t[i:].startswith("version: v1\nmig-configs:\n  current:\n  - devices: all\n    mig-enabled: true\n    mig-devices:\n      1g.10gb: 2\n      2g.20gb: 1\n      3g.40gb: 1\n"), t[i:]
PY'
MIG_PARTED_SELECTED_CONFIG=all-balanced service
check "service.sh at the next boot with nothing to do: assert, apply (no hooks but start/exit), export" \
  '[ "$(calls | sed "s|$etc|E|g")" = "nvidia-mig-parted generate-config -f F -> 0;nvidia-mig-parted assert --mode-only -> 0;nvidia-mig-parted apply -> 0;nvidia-mig-parted export -> 0;" ] && ! grep -q pre-apply "$etc/hooks.log"'
MIG_PARTED_SELECTED_CONFIG=all-1g.10gb service
check "service.sh all-1g.10gb: the generated config names it; seven per GPU" \
  '[ "$(layout | tr " " "\n" | cut -d@ -f1 | sort | uniq -c | tr -s " " | tr "\n" ";")" = " 7 0:1g.10gb; 7 1:1g.10gb;" ]'
MIG_PARTED_CONFIG_FILE="$root/config.yaml" MIG_PARTED_SELECTED_CONFIG=custom-config service
check "service.sh with MIG_PARTED_CONFIG_FILE set: a custom config of ours" '[ "$(modes)" = "0:on 1:off" ] && [ "$(layout)" = "0:4g.40gb@0 0:3g.40gb@4" ]'
MIG_PARTED_SELECTED_CONFIG=all-disabled service
check "service.sh all-disabled" '[ "$(modes)" = "0:off 1:off" ] && [ -z "$(layout)" ]'

# A VM: the mode change stays pending, no reset: service.sh reboots once and
# the next boot's run finishes the job.
emu emu set -i 0,1 --reset-blocked on >/dev/null
RESET_AVAILABLE=false MIG_PARTED_SELECTED_CONFIG=all-1g.10gb service
check "service.sh in a VM: apply -m -s leaves the mode pending (exit 0), then a reboot" \
  '[ -f "$etc/reboot_attempted" ] && [ "$(calls | sed "s|$etc|E|g" | cut -d";" -f2-)" = "nvidia-mig-parted assert --mode-only -> 1;nvidia-mig-parted apply --mode-only --skip-reset -> 0;" ] && [ "$(modes)" = "0:on 1:on" ]'
RESET_AVAILABLE=false MIG_PARTED_SELECTED_CONFIG=all-1g.10gb service
check "... after the reboot the devices are made" '[ ! -f "$etc/reboot_attempted" ] && [ "$(layout | wc -w)" = 14 ]'
emu emu set -i 0,1 --reset-blocked off >/dev/null

# A process that the hooks do not stop holds GPU 0: apply -m -s leaves the mode
# pending, the reset then fails: service.sh reports "Error issuing GPU reset".
MIG_PARTED_SELECTED_CONFIG=all-disabled service
emu emu proc-add --pid 5151 --name monitor -i 0 >/dev/null
MIG_PARTED_SELECTED_CONFIG=all-balanced service
check "service.sh with a process on a GPU: the reset is refused, exit 1, \"Error issuing GPU reset\"" \
  '[ $? -ne 0 ] && grep -qx "Error issuing GPU reset" "$root/service.out" && [ "$(calls | sed "s|$etc|E|g" | cut -d";" -f3-4)" = "nvidia-mig-parted apply --mode-only --skip-reset -> 0;nvidia-mig-parted apply --mode-only -> 1" ] &&
   grep -q "level=fatal msg=\"Error applying MIG configuration with hooks: error resetting all GPUs: exit status 255\"" "$root/err"'
emu emu proc-rm --pid 5151 >/dev/null
MIG_PARTED_SELECTED_CONFIG=all-balanced service
check "... and the next start, the process gone, succeeds" '[ $? -eq 0 ] && [ "$(layout | wc -w)" = 8 ]'

# ---- checkpoint and restore (MIG_PARTED_CHECKPOINT_FILE, as nvidia-mig-parted.sh sets it) ----
export MIG_PARTED_CHECKPOINT_FILE="$root/checkpoint.json"
: >"$root/calls"
mp checkpoint
cp "$MIG_PARTED_CHECKPOINT_FILE" "$root/before.json"
MIG_PARTED_SELECTED_CONFIG=custom-config MIG_PARTED_CONFIG_FILE="$root/config.yaml" mp apply
mp -d restore
mp checkpoint
check "checkpoint, apply another config, restore: the same state, byte for byte" \
  '[ "$(calls)" = "nvidia-mig-parted checkpoint -> 0;nvidia-mig-parted apply -> 0;nvidia-mig-parted -d restore -> 0;nvidia-mig-parted checkpoint -> 0;" ] && cmp -s "$root/before.json" "$MIG_PARTED_CHECKPOINT_FILE" &&
   grep -qx "MIG configuration restored successfully" "$root/out" && grep -qx "MIG configuration checkpointed successfully" "$root/out"'
check "... its format: Version, MigState.Devices[].UUID/MigMode/GpuInstances[].ProfileID/Placement/ComputeInstances" \
  'python3 - "$root/before.json" <<PY
import json, sys
d = json.load(open(sys.argv[1]))
assert list(d) == ["Version", "MigState"] and d["Version"] == "v1", d
devs = d["MigState"]["Devices"]
assert len(devs) == 2 and all(x["UUID"].startswith("GPU-") and x["MigMode"] == 1 for x in devs), devs
gi = devs[0]["GpuInstances"][0]
assert list(gi) == ["ProfileID", "Placement", "ComputeInstances"] and list(gi["Placement"]) == ["Start", "Size"], gi
assert gi["ComputeInstances"] == [{"ProfileID": 0, "EngProfileID": 0}], gi
PY'
unset MIG_PARTED_CHECKPOINT_FILE

summary
