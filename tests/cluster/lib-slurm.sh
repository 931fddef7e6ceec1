# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash disable=SC2154
# tests/cluster/lib-slurm.sh: a throwaway Slurm cluster on 127.0.0.1 for the
# cluster tests: munged, slurmctld and one slurmd per node (Debian's slurmd
# runs several nodes on one host, each `-N nodeK` on its own port), every
# node its own emulated machine (gpuslice --emu-state, seeded per node). All
# under $root; each daemon's pid goes in $root/pids as it starts, and
# cluster_stop ends exactly those (and the job steps their slurmds started,
# marked by GS_SLURM_TEST=$root in their environment), also on failure.
# Needs: $root (a fresh directory), $GS_BIN, $src (the source tree).

# free_ports N: N TCP ports below 32768 that nothing listens on now.
free_ports() {
  python3 - "$1" <<'EOF'
import random, socket, sys
want, found = int(sys.argv[1]), []
start = random.randrange(20000, 30000)
for port in range(start, 32768):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
        found.append(port)
    except OSError:
        pass
    finally:
        s.close()
    if len(found) == want:
        break
print(" ".join(map(str, found)))
EOF
}

# daemon NAME COMMAND...: starts a daemon in the foreground mode it has,
# in the background, logs in $root/NAME.out, pid in $root/NAME.pid and $root/pids.
daemon() {
  local name=$1
  shift
  GS_SLURM_TEST=$root SLURM_CONF=$root/slurm.conf "$@" </dev/null >>"$root/$name.out" 2>&1 &
  echo $! >"$root/$name.pid"
  echo $! >>"$root/pids"
}

# stop_pid PID: TERM, then KILL after 5 s.
stop_pid() {
  local pid=$1 i
  kill "$pid" 2>/dev/null || return 0
  for i in $(seq 50); do
    kill -0 "$pid" 2>/dev/null || return 0
    [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" = Z ] && return 0
    sleep 0.1
  done
  kill -9 "$pid" 2>/dev/null
}

cluster_stop() {
  local pid p
  [ -f "$root/pids" ] || return 0
  if [ -f "$root/slurm.conf" ]; then
    SLURM_CONF=$root/slurm.conf timeout 10 scancel --quiet --user=root 2>/dev/null
  fi
  # Job steps outlive slurmd: theirs carry our marker.
  for p in /proc/[0-9]*; do
    [ "$(cat "$p/comm" 2>/dev/null)" = slurmstepd ] || continue
    { tr '\0' '\n' <"$p/environ"; } 2>/dev/null | grep -qx "GS_SLURM_TEST=$root" && kill -9 "${p#/proc/}" 2>/dev/null
  done
  while read -r pid; do stop_pid "$pid"; done <"$root/pids"
  rm -f "$root/pids"
}

# munge_start: a key of our own and munged on $root/munge/munge.sock.
munge_start() {
  mkdir -p "$root/munge-key" "$root/munge"
  chmod 700 "$root/munge-key"
  chmod 755 "$root/munge" # munged wants its socket directory searchable by all
  dd if=/dev/urandom of="$root/munge-key/munge.key" bs=1024 count=1 2>/dev/null
  chmod 400 "$root/munge-key/munge.key"
  daemon munged munged -F --key-file="$root/munge-key/munge.key" --socket="$root/munge/munge.sock" \
    --pid-file="$root/munge/munged.pid" --seed-file="$root/munge-key/seed" \
    --log-file="$root/munge-key/munged.log"
  for _ in $(seq 50); do [ -S "$root/munge/munge.sock" ] && return 0; sleep 0.1; done
  return 1
}

# slurm_conf PORT NODES...: the cluster's slurm.conf; each node's line is
# Included from $root/nodes/NODE.conf, which `gpuslice slurm node-conf` writes.
slurm_conf() {
  local port=$1 n
  shift
  mkdir -p "$root/ctld" "$root/nodes"
  cat >"$root/slurm.conf" <<EOF
ClusterName=gstest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$port
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$root/munge/munge.sock
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$root/ctld
SlurmdSpoolDir=$root/%n/spool
SlurmctldPidFile=$root/ctld/slurmctld.pid
SlurmdPidFile=$root/%n/slurmd.pid
SlurmctldLogFile=$root/ctld/slurmctld.log
SlurmdLogFile=$root/%n/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
GresTypes=gpu
ReturnToService=2
MpiDefault=none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
MinJobAge=600
KillWait=2
Prolog=$root/prolog.sh
TaskProlog=$root/task-prolog.sh
EOF
  for n in "$@"; do echo "Include $root/nodes/$n.conf" >>"$root/slurm.conf"; done
  echo "PartitionName=gpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP" >>"$root/slurm.conf"
  # The prologs run for every node: each node's machine is its own state file.
  cat >"$root/prolog.sh" <<EOF
#!/bin/sh
exec "$GS_BIN" -q --emu-state "$root/\$SLURMD_NODENAME/emu.json" slurm prolog --gres-conf "$root/\$SLURMD_NODENAME/gres.conf"
EOF
  cat >"$root/task-prolog.sh" <<EOF
#!/bin/sh
echo "print SLURM_SET \$CUDA_VISIBLE_DEVICES"
exec "$GS_BIN" -q --emu-state "$root/\$SLURMD_NODENAME/emu.json" slurm task-prolog --gres-conf "$root/\$SLURMD_NODENAME/gres.conf"
EOF
  chmod 755 "$root/prolog.sh" "$root/task-prolog.sh"
}

# node_setup NODE SPEC CONFIG PORT [gres options]: the node's emulated machine
# (seeded by its name), CONFIG applied, its device files, gres.conf and line.
node_setup() {
  local node=$1 spec=$2 config=$3 port=$4 d=$root/$1
  shift 4
  mkdir -p "$d/spool"
  ln -sf "$root/slurm.conf" "$d/slurm.conf" # slurmd reads gres.conf beside the slurm.conf it is given
  "$GS_BIN" -q --emu-state "$d/emu.json" emu reset --emulate "$spec" --seed "$node" >/dev/null &&
    "$GS_BIN" -q --emu-state "$d/emu.json" apply -f "$src/configs/a100-40gb.mig-parted.yaml" -c "$config" >/dev/null &&
    "$GS_BIN" -q --emu-state "$d/emu.json" emu devices "$d/root" >/dev/null &&
    "$GS_BIN" -q --emu-state "$d/emu.json" slurm gres -N "$node" --dev-root "$d/root/dev" "$@" -o "$d/gres.conf" &&
    "$GS_BIN" -q --emu-state "$d/emu.json" slurm node-conf -N "$node" -c "$config" \
      --extra "NodeAddr=127.0.0.1 Port=$port CPUs=8" -o "$root/nodes/$node.conf"
}

# slurmd_start NODE: the node's slurmd (also what the relayout's restart runs).
slurmd_start() {
  daemon "slurmd-$1" slurmd -D -f "$root/$1/slurm.conf" -N "$1"
}

# wait_idle SECONDS NODES...: every node idle (registered, no job).
wait_idle() {
  local t=$1 n s
  shift
  for _ in $(seq $((t * 4))); do
    s=0
    for n in "$@"; do
      [ "$(SLURM_CONF=$root/slurm.conf sinfo -h -n "$n" -o %T 2>/dev/null)" = idle ] && s=$((s + 1))
    done
    [ "$s" = $# ] && return 0
    sleep 0.25
  done
  return 1
}

# device_map NODE...: "node uuid profile" for every MIG device of each node now.
device_map() {
  local n
  for n in "$@"; do
    "$GS_BIN" -q --emu-state "$root/$n/emu.json" list --json | python3 -c '
import json, sys
for g in json.load(sys.stdin):
    for m in g.get("mig_devices", []):
        print(sys.argv[1], m["uuid"], m["name"])' "$n"
  done
}

# nvml_plugin DIR: Slurm's gpu/nvml plugin (Debian contrib's slurm-wlm-nvml-plugin,
# of the installed slurmd's version) extracted into DIR, fetched once with
# `apt-get download` and a private sources list (nothing is installed).
# Prints why not on failure.
nvml_plugin() {
  local dir=$1 codename want got deb opts
  [ -f "$dir/gpu_nvml.so" ] && return 0
  want=$(dpkg-query -W -f '${Version}' slurmd 2>/dev/null) || { echo "slurmd is not a Debian package here"; return 1; }
  codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
  [ -n "$codename" ] && [ -f /usr/share/keyrings/debian-archive-keyring.gpg ] ||
    { echo "not a Debian release with its archive keyring"; return 1; }
  mkdir -p "$dir/apt/lists/partial" "$dir/apt/cache/archives/partial" "$dir/deb"
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $codename contrib" \
    >"$dir/apt/sources.list"
  opts=(-o "Dir::Etc::SourceList=$dir/apt/sources.list" -o "Dir::Etc::SourceParts=$dir/apt/none"
        -o "Dir::State::Lists=$dir/apt/lists" -o "Dir::Cache=$dir/apt/cache" -o Debug::NoLocking=1
        -o APT::Sandbox::User=root -qq)
  timeout 60 apt-get "${opts[@]}" update >"$dir/apt.log" 2>&1 &&
    (cd "$dir/deb" && timeout 60 apt-get "${opts[@]}" download slurm-wlm-nvml-plugin) >>"$dir/apt.log" 2>&1 ||
    { echo "apt-get could not fetch slurm-wlm-nvml-plugin from Debian contrib: $(tail -1 "$dir/apt.log")"; return 1; }
  deb=$(ls "$dir"/deb/slurm-wlm-nvml-plugin_*.deb 2>/dev/null | head -1)
  got=$(dpkg-deb -f "$deb" Version)
  # Plugins load only into the Slurm version they were built for.
  [ "${got%%-*}" = "${want%%-*}" ] || { echo "contrib has gpu/nvml $got, slurmd is $want"; return 1; }
  dpkg-deb -x "$deb" "$dir/x" && cp "$dir"/x/usr/lib/*/slurm-wlm/gpu_nvml.so "$dir/" ||
    { echo "$deb holds no gpu_nvml.so"; return 1; }
}

# nvml_slurmd_start NODE LIBDIR: the node's slurmd with Slurm's gpu/nvml over
# nvml-emu (LIBDIR holds libnvidia-ml.so.1) in a mount namespace of its own
# (tests/cluster/nvml-node.sh) where /dev and /proc/driver/nvidia-caps are
# the node's emulated machine's.
nvml_slurmd_start() {
  # A sanitized nvml-emu needs its runtime loaded first in the unsanitized slurmd.
  local rt
  rt=$(ldd "$2/libnvidia-ml.so.1" | awk '/lib(asan|tsan)\.so/ {print $3; exit}')
  LD_PRELOAD=$rt ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0} \
    LD_LIBRARY_PATH=$2 GPUSLICE_EMU_STATE=$root/$1/emu.json daemon "slurmd-$1" \
    unshare -m --propagation private sh "$src/tests/cluster/nvml-node.sh" "$root/$1/root" \
    slurmd -D -f "$root/$1/slurm.conf" -N "$1"
}
