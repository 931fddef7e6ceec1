#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-slurm.sh: a live Slurm cluster schedules jobs onto MIG slices. Three
# nodes on 127.0.0.1 (Debian's munge, slurmctld, slurmd), each its own
# emulated machine: node1 one A100-40GB in all-1g.5gb, node2 two in
# all-balanced, node3 one in all-balanced; gres.conf and the node lines from
# `gpuslice slurm`, the Prolog and TaskProlog `gpuslice slurm prolog|task-prolog`.
# Jobs of mixed profiles with srun steps inside: each must see
# CUDA_VISIBLE_DEVICES=MIG-<uuid> of its profile on its own node, its steps
# the same, and no (node, UUID) held by two jobs at once. Then `gpuslice slurm
# relayout` turns node3 into all-1g.5gb under load: its new slices are handed
# out and a type it lost is refused. Then drift behind Slurm's back makes the
# Prolog fail: the node drains and the job does not run. Skips (with a
# message) when not root or the packages are missing. Every daemon it starts
# is stopped by pid, also on failure.
# Env: GS_BIN (gpuslice), GS_TEST_TMP (scratch dir), GS_SRC (source tree).
set -u
: "${GS_BIN:?set GS_BIN to the gpuslice binary}"
src=${GS_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$src/tests/lib/common.sh"
. "$src/tests/cluster/lib-slurm.sh"

if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP: the cluster runs munged and slurmd as root and mknods device files: run as root"
  summary
  exit
fi
for p in munged slurmctld slurmd sbatch srun scontrol sinfo squeue scancel; do
  if ! command -v "$p" >/dev/null; then
    echo "SKIP: $p is missing (scripts/deps.sh installs munge slurmctld slurmd slurm-client)"
    summary
    exit
  fi
done

root=$(gs_tmpdir slurm) || exit 1
if ! gs_open_to_all "${root%/*}"; then # munged wants every folder above its socket open to all
  rm -rf "$root"
  root=$(mktemp -d /run/gpuslice-test-slurm.XXXXXX) && chmod 755 "$root" || exit 1
fi
chmod 755 "$root"
run1=$root
trap 'root=$run1/nvml cluster_stop; root=$run1 cluster_stop; [ "$failed" = 0 ] && rm -rf "$run1"' EXIT
export SLURM_CONF=$root/slurm.conf GS_SLURM_TEST=$root
unset GPUSLICE_EMULATE GPUSLICE_EMU_STATE
nodes="node1 node2 node3"
read -r ctld_port p1 p2 p3 <<<"$(free_ports 4)"

# ---- the cluster ----
munge_start && ok || { fail "munged did not start: $(tail -3 "$root/munged.out")"; exit 1; }
slurm_conf "$ctld_port" $nodes
node_setup node1 a100-40gb all-1g.5gb "$p1" && node_setup node2 a100-40gb:2 all-balanced "$p2" &&
  node_setup node3 a100-40gb all-balanced "$p3" && ok || { fail "node setup"; exit 1; }
grep -q "Gres=gpu:1g.5gb:4,gpu:2g.10gb:2,gpu:3g.20gb:2 Features=mig,a100-40gb,mig-all-balanced" \
  "$root/nodes/node2.conf" && ok || fail "node2's line: $(cat "$root/nodes/node2.conf")"
cp -r "$root/nodes" "$root/nodes.initial"
daemon slurmctld slurmctld -D -f "$root/slurm.conf"
for n in $nodes; do slurmd_start "$n"; done
if wait_idle 40 $nodes; then ok; else
  fail "nodes not idle: $(sinfo -N -o '%N %T %G' 2>&1); $(tail -5 "$root"/node*/slurmd.log)"
  exit 1
fi
# Slurm sees what gpuslice wrote, and numbers it in gres.conf's order.
slurmd -f "$root/node2/slurm.conf" -N node2 -G -L /dev/stderr 2>&1 | grep 'Gres Name=gpu' >"$root/node2.G"
[ "$(wc -l <"$root/node2.G")" = 8 ] && ok || fail "slurmd -G on node2: $(cat "$root/node2.G")"
device_map $nodes >"$root/map.before"

# ---- jobs ----
cat >"$root/job.sh" <<'EOF'
#!/bin/sh
# job.sh PROFILE SECONDS: what the job and its steps see, and when it held its slice.
start=$(date +%s.%N)
echo "JOB $SLURM_JOB_ID $SLURMD_NODENAME $1 $CUDA_VISIBLE_DEVICES"
srun -n1 sh -c 'echo "STEP $SLURM_JOB_ID $SLURM_STEP_ID $CUDA_VISIBLE_DEVICES"'
sleep "$2"
srun -n1 sh -c 'echo "STEP $SLURM_JOB_ID $SLURM_STEP_ID $CUDA_VISIBLE_DEVICES"'
echo "TIME $SLURM_JOB_ID $start $(date +%s.%N)"
EOF
chmod 755 "$root/job.sh"
mkdir -p "$root/out"
submit() { # PROFILE SECONDS [sbatch options]: prints the job id
  local p=$1 s=$2
  shift 2
  sbatch --parsable -o "$root/out/%j.out" --gres="gpu:$p:1" "$@" "$run1/job.sh" "$p" "$s"
}
ids=()
for i in $(seq 24); do
  case $((i % 4)) in 0 | 1) p=1g.5gb ;; 2) p=2g.10gb ;; 3) p=3g.20gb ;; esac
  ids+=("$(submit $p $((2 + i % 3)))") || fail "sbatch $p"
done
[ ${#ids[@]} = 24 ] && ok || fail "submitted ${#ids[@]} of 24 jobs"

# ---- relayout of node3 under load ----
# Under load: node3 runs one job on each slice type it is about to lose
# (more would wait for a type it no longer has, forever), others elsewhere.
load=("$(submit 2g.10gb 4 -w node3)" "$(submit 3g.20gb 4 -w node3)")
ids+=("${load[@]}")
for i in $(seq 6); do ids+=("$(submit 1g.5gb 3 -w node$((1 + i % 2)))"); done
for _ in $(seq 120); do
  [ "$(squeue -h -t R -j "$(IFS=,; echo "${load[*]}")" | wc -l)" = 2 ] && break
  sleep 0.25
done
[ "$(squeue -h -t R -j "$(IFS=,; echo "${load[*]}")" | wc -l)" = 2 ] && ok ||
  fail "node3's load did not start: $(squeue -o '%i %T %R')"
cat >"$root/restart-slurmd" <<EOF
#!/usr/bin/env bash
stop() { kill "\$1"; while kill -0 "\$1" 2>/dev/null && [ "\$(awk '{print \$3}' /proc/\$1/stat 2>/dev/null)" != Z ]; do sleep 0.1; done; }
stop "\$(cat "$root/slurmd-\$1.pid")"
. "$src/tests/cluster/lib-slurm.sh"
root="$root"; daemon "slurmd-\$1" slurmd -D -f "$root/\$1/slurm.conf" -N "\$1"
EOF
cat >"$root/restart-ctld" <<EOF
#!/usr/bin/env bash
stop() { kill "\$1"; while kill -0 "\$1" 2>/dev/null && [ "\$(awk '{print \$3}' /proc/\$1/stat 2>/dev/null)" != Z ]; do sleep 0.1; done; }
stop "\$(cat "$root/slurmctld.pid")"
. "$src/tests/cluster/lib-slurm.sh"
root="$root"; daemon slurmctld slurmctld -D -f "$root/slurm.conf"
EOF
chmod 755 "$root/restart-slurmd" "$root/restart-ctld"
if "$GS_BIN" -q --emu-state "$root/node3/emu.json" slurm relayout -N node3 \
  -f "$src/configs/a100-40gb.mig-parted.yaml" -c all-1g.5gb --gres-conf "$root/node3/gres.conf" \
  --node-conf "$root/nodes/node3.conf" --dev-root "$root/node3/root/dev" \
  --extra "NodeAddr=127.0.0.1 Port=$p3 CPUs=8" --slurmd-restart "$root/restart-slurmd node3" \
  --restart-controller --ctld-restart "$root/restart-ctld" --timeout 60 >"$root/relayout.out" 2>&1; then
  ok
else
  fail "relayout: $(tail -15 "$root/relayout.out")"
fi
grep -q "probe gpu:1g.5gb: MIG-" "$root/relayout.out" && ok || fail "no probe: $(cat "$root/relayout.out")"
device_map node3 >"$root/map.after"
# The new slices are handed out: seven 1g.5gb jobs at once on node3.
for i in $(seq 7); do ids+=("$(submit 1g.5gb 4 -w node3)"); done
# The type it lost is refused outright.
if out=$(sbatch --parsable -w node3 --gres=gpu:3g.20gb:1 --wrap true 2>&1); then
  fail "node3 accepted a 3g.20gb job after the relayout: $out"
else
  echo "$out" | grep -q "not available" && ok || fail "refusal: $out"
fi

# ---- wait, then every job's view ----
for _ in $(seq 240); do
  [ -z "$(squeue -h -o %i 2>/dev/null)" ] && break
  sleep 0.5
done
[ -z "$(squeue -h -o '%i %T %R')" ] && ok || fail "jobs left: $(squeue -o '%i %T %R %N')"
python3 "$src/tests/cluster/check_jobs.py" "$root/out" "${#ids[@]}" "$root/map.before" "$root/map.after" \
  --new-on node3 "$root/map.after" 5 && ok || fail "job checks (above)"

# ---- drift: the layout changes behind Slurm's back; the Prolog stops the job ----
"$GS_BIN" -q --emu-state "$root/node1/emu.json" apply -f "$src/configs/a100-40gb.mig-parted.yaml" \
  -c all-balanced >/dev/null
drift=$(submit 1g.5gb 1 -w node1)
for _ in $(seq 80); do
  state=$(sinfo -h -n node1 -o %T)
  case $state in drain*) break ;; esac
  sleep 0.25
done
case $state in drain*) ok ;; *) fail "node1 did not drain after drift: $state" ;; esac
sinfo -h -n node1 -o %E | grep -qi prolog && ok || fail "drain reason: $(sinfo -h -n node1 -o %E)"
grep -q "^JOB" "$root/out/$drift.out" 2>/dev/null && fail "the job ran on a drifted node" || ok
grep -q "the node has no such device now" "$root/node1/slurmd.log" && ok ||
  fail "the prolog's reason is not in slurmd's log"

# ---- run 2: Slurm's own AutoDetect=nvml finds the slices through nvml-emu ----
# Each slurmd loads Debian contrib's gpu/nvml plugin (fetched, not installed)
# over nvml-emu, in a mount namespace where /dev and /proc/driver/nvidia-caps
# are its machine's; the same machines and jobs must give the same answers.
why=$(nvml_plugin "${GS_TEST_TMP:-/tmp}/slurm-nvml-plugin") || {
  echo "SKIP: run 2 (AutoDetect=nvml): $why"
  summary
  exit
}
unshare -m true 2>/dev/null || { echo "SKIP: run 2 (AutoDetect=nvml): no mount namespaces here"; summary; exit; }
root=$run1 cluster_stop
root=$run1/nvml
mkdir -p "$root/out"
chmod 755 "$root"
export SLURM_CONF=$root/slurm.conf
read -r ctld_port p1 p2 p3 <<<"$(free_ports 4)"
munge_start || fail "munged (run 2)"
slurm_conf "$ctld_port" $nodes
echo "PluginDir=$(dirname "$(ls /usr/lib/*/slurm-wlm/gres_gpu.so | head -1)"):${GS_TEST_TMP:-/tmp}/slurm-nvml-plugin" \
  >>"$root/slurm.conf"
node_setup node1 a100-40gb all-1g.5gb "$p1" --autodetect --dev-root /dev &&
  node_setup node2 a100-40gb:2 all-balanced "$p2" --autodetect --dev-root /dev &&
  node_setup node3 a100-40gb all-balanced "$p3" --autodetect --dev-root /dev && ok || fail "node setup (run 2)"
daemon slurmctld slurmctld -D -f "$root/slurm.conf"
for n in $nodes; do nvml_slurmd_start "$n" "$(dirname "${GS_NVML_EMU:-$(dirname "$GS_BIN")/nvml-emu/x}")"; done
if wait_idle 40 $nodes; then ok; else
  fail "run 2: nodes not idle: $(sinfo -N -o '%N %T %G %E' 2>&1); $(grep -h error "$root"/node*/slurmd.log | tail -5)"
fi
# What gpu/nvml detected: the same types and counts as run 1's records.
for n in $nodes; do
  got=$(sinfo -h -n "$n" -o %G | sed 's/([^)]*)//g' | tr ',' '\n' | sort | tr '\n' ,)
  want=$(sed 's/.* Gres=\([^ ]*\).*/\1/' "$run1/nodes.initial/$n.conf" | tr ',' '\n' | sort | tr '\n' ,)
  [ "$got" = "$want" ] && ok || fail "run 2: $n's detected GPUs $got, run 1's $want"
done
grep -q "2 GPU system device(s) detected" "$root/node2/slurmd.log" && ok ||
  fail "run 2: node2's gpu/nvml did not detect its GPUs: $(grep -h GPU "$root/node2/slurmd.log" | tail -3)"
device_map $nodes >"$root/map"
cmp -s <(sort "$root/map") <(sort "$run1/map.before") && ok || fail "run 2's machines differ from run 1's"
ids=()
for i in $(seq 12); do
  case $((i % 3)) in 0) p=1g.5gb ;; 1) p=2g.10gb ;; 2) p=3g.20gb ;; esac
  ids+=("$(submit $p 2)") || fail "sbatch $p (run 2)"
done
for _ in $(seq 240); do
  [ -z "$(squeue -h -o %i 2>/dev/null)" ] && break
  sleep 0.5
done
python3 "$src/tests/cluster/check_jobs.py" "$root/out" "${#ids[@]}" "$run1/map.before" && ok ||
  fail "run 2: job checks (above)"
# The UUIDs came from Slurm's gpu/nvml itself (the TaskProlog only checks them).
[ "$(cat "$root"/out/*.out | grep -c '^SLURM_SET MIG-')" = $((3 * ${#ids[@]})) ] && ok ||
  fail "run 2: Slurm did not hand out MIG UUIDs: $(grep -h SLURM_SET "$root"/out/*.out | sort | uniq -c | head)"

summary
