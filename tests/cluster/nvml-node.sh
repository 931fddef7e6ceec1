#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# nvml-node.sh DIR COMMAND...: runs COMMAND (a slurmd) as if on the emulated
# machine whose files `gpuslice emu devices DIR` made: in a mount namespace of
# its own (run it under `unshare -m`), /dev is a copy of the host's character
# devices plus DIR/dev's NVIDIA nodes, and /proc/driver/nvidia-caps holds
# DIR's mig-minors, the two places Slurm's gpu/nvml reads besides NVML.
set -eu
dir=$1
shift
mount --make-rprivate /
mkdir -p "$dir/host-dev"
mount --rbind /dev "$dir/host-dev"
mount -t tmpfs -o mode=755,size=4m gpuslice-dev /dev
for e in "$dir"/host-dev/*; do
  if [ -c "$e" ] || [ -L "$e" ]; then cp -a "$e" /dev/; fi
done
mkdir /dev/pts /dev/shm
mount --bind "$dir/host-dev/pts" /dev/pts
mount -t tmpfs -o mode=1777 gpuslice-shm /dev/shm
cp -a "$dir/dev/." /dev/
mount -t tmpfs -o size=1m gpuslice-driver /proc/driver
mkdir /proc/driver/nvidia-caps
cp "$dir/proc/driver/nvidia-caps/mig-minors" /proc/driver/nvidia-caps/
exec "$@"
