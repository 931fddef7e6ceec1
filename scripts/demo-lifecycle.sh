#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# demo-lifecycle.sh: walks the MIG lifecycle of NVIDIA's A100 walkthrough on an
# emulated A100-SXM4-40GB: enable MIG, list profiles and placements, create
# seven 1g.5gb GPU instances and a compute instance in each, list the MIG
# devices with their UUIDs, then destroy everything and disable MIG.
# The GPU is emulated (no driver needed); its state lives in a temporary file.
set -euo pipefail
gpuslice=${GPUSLICE:-build/gpuslice}
state_dir=$(mktemp -d)
trap 'rm -rf "$state_dir"' EXIT
export GPUSLICE_EMU_STATE="$state_dir/emu.json"

step() {
  printf '\n$ gpuslice %s\n' "$*"
  "$gpuslice" -q "$@"
}

echo "gpuslice demo: the MIG lifecycle on an EMULATED A100-SXM4-40GB (no NVIDIA driver is used)"
step emu reset --emulate a100-40gb
step list
step mig enable -i 0
step gi profiles -i 0
step gi placements -i 0
step gi create 19,19,19,19,19,19,19 -i 0
step gi list -i 0
step ci profiles -i 0 --gi 7
step ci create -i 0
step ci list -i 0
step list
step list --table
step ci destroy -i 0
step gi destroy -i 0
step mig disable -i 0
step layouts a100-40gb
