#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-jobs-mps.sh: `gpuslice mps start|stop|status` and `run --mode mps`.
# On emulated GPUs MPS is emulated (state only, labelled); with
# GPUSLICE_MPS_CONTROL pointing at a stand-in for nvidia-cuda-mps-control the
# real launch path runs: the daemon gets CUDA_VISIBLE_DEVICES=<scope> and its
# own pipe and log directories, per GPU or per MIG device, and stop sends quit.
# Env: GS_BIN (gpuslice), GS_TEST_TMP (scratch dir).
set -u
: "${GS_BIN:?set GS_BIN to the gpuslice binary}"
. "${GS_SRC:-$(dirname "$0")/../..}/tests/lib/common.sh"
root=$(gs_tmpdir jobs-mps) || exit 1
trap 'for f in "$root"/emu.json.jobs/mps/*/pipe/nvidia-cuda-mps-control.pid; do [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null; done; rm -rf "$root"' EXIT
unset GPUSLICE_EMULATE GPUSLICE_JOBS_DIR GPUSLICE_MPS_CONTROL
export GPUSLICE_EMU_STATE="$root/emu.json"
g() { "$GS_BIN" -q "$@"; }
# Alive and not a zombie (an orphan's zombie may linger where nothing reaps it).
alive() { local st; st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null); [ -n "$st" ] && [ "$st" != Z ]; }
field() { python3 -c 'import json,sys; d=json.load(sys.stdin); d=d[0] if isinstance(d,list) else d; print(d[sys.argv[1]])' "$1"; }

g emu reset >/dev/null || { echo "setup failed"; exit 1; }
gpu=$(g list --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["uuid"])')

# Emulated: state only, labelled, per GPU.
out=$(g mps start -i 0 --json)
[ "$(echo "$out" | field emulated)" = True ] && [ "$(echo "$out" | field running)" = True ] &&
  [ "$(echo "$out" | field scope)" = "$gpu" ] && ok || fail "emulated mps start: $out"
g mps status | grep -q "EMULATED" && ok || fail "status does not say EMULATED: $(g mps status)"
pipe=$(echo "$out" | field pipe_dir)
env=$(g run --mode mps --thread-percentage 30 --memory 2GiB -- env)
echo "$env" | grep -qx "CUDA_MPS_PIPE_DIRECTORY=$pipe" && ok || fail "client pipe directory: $env"
echo "$env" | grep -qx "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=30" && ok || fail "thread percentage: $env"
echo "$env" | grep -qx "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=2048MB" && ok || fail "memory limit: $env"
echo "$env" | grep -qx "CUDA_VISIBLE_DEVICES=$gpu" && ok || fail "device: $env"
g mps stop -i 0 >/dev/null && [ "$(g mps status --json | field running)" = False ] && ok || fail "mps stop"
g mps stop -i 0 2>/dev/null
[ $? = 1 ] && ok || fail "stopping a stopped daemon is not refused"
g run --mode mps --thread-percentage 101 -- true 2>/dev/null
[ $? = 2 ] && ok || fail "--thread-percentage 101 accepted"
g run --mode mps --memory 64GiB -- true 2>/dev/null
[ $? = 2 ] && ok || fail "an MPS limit above the GPU's memory was accepted"

# The launch path, with a stand-in control program, inside a MIG device.
cat >"$root/mps-control" <<'SH'
#!/bin/sh
env | grep -E '^(CUDA_VISIBLE_DEVICES|CUDA_MPS_PIPE_DIRECTORY|CUDA_MPS_LOG_DIRECTORY)=' | sort >"$CUDA_MPS_LOG_DIRECTORY/env"
if [ "${1:-}" = -d ]; then
  sleep 300 </dev/null >/dev/null 2>&1 &
  echo $! >"$CUDA_MPS_PIPE_DIRECTORY/nvidia-cuda-mps-control.pid"
  exit 0
fi
read -r cmd
[ "$cmd" = quit ] && kill "$(cat "$CUDA_MPS_PIPE_DIRECTORY/nvidia-cuda-mps-control.pid")" && echo quit >>"$CUDA_MPS_LOG_DIRECTORY/commands"
SH
chmod +x "$root/mps-control"
export GPUSLICE_MPS_CONTROL="$root/mps-control"
g mig enable >/dev/null && g gi create 3g.20gb -C >/dev/null || fail "MIG setup"
mig=$(g list --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["mig_devices"][0]["uuid"])')
out=$(g mps start --mig "$mig" --json)
pid=$(echo "$out" | field pid)
log=$(echo "$out" | field log_dir)
[ "$(echo "$out" | field emulated)" = False ] && alive "$pid" && ok || fail "launched mps start: $out"
printf 'CUDA_MPS_LOG_DIRECTORY=%s\nCUDA_MPS_PIPE_DIRECTORY=%s\nCUDA_VISIBLE_DEVICES=%s\n' "$log" "$(echo "$out" | field pipe_dir)" "$mig" >"$root/want"
diff -u "$root/want" "$log/env" >/dev/null && ok || fail "the daemon's environment: $(cat "$log/env")"
case "$log" in *"/mps/$mig/log") ok ;; *) fail "log directory not per scope: $log" ;; esac
[ "$(g mps start --mig "$mig" --json | field pid)" = "$pid" ] && ok || fail "a second start launched another daemon"
# MPS clients inside the MIG device: they share it, an exclusive job waits.
env=$(g run --mode mps --profile 3g.20gb -- env)
echo "$env" | grep -qx "CUDA_VISIBLE_DEVICES=$mig" && echo "$env" | grep -qx "CUDA_MPS_PIPE_DIRECTORY=$(echo "$out" | field pipe_dir)" &&
  ok || fail "an MPS client in the MIG device: $env"
"$GS_BIN" -q run --mode mps --profile 3g.20gb -- sleep 30 &
c1=$!
holds() { python3 -c 'import json,sys; sys.exit(0 if any(c["owner_pid"]==int(sys.argv[2]) for c in json.load(open(sys.argv[1]))["claims"]) else 1)' "$root/emu.json.jobs/claims/$(id -u).json" "$1" 2>/dev/null; }
for _ in $(seq 600); do holds "$c1" && break; sleep 0.1; done
g run --mode mps --profile 3g.20gb --no-wait -- true && ok || fail "a second MPS client could not share the device"
err=$(g run --profile 3g.20gb --no-wait -- true 2>&1)
[ $? = 1 ] && ok || fail "an exclusive job took a device MPS clients share: $err"
kill "$c1"
wait "$c1" 2>/dev/null
g mps stop --mig "$mig" >/dev/null && ok || fail "mps stop --mig"
for _ in $(seq 50); do alive "$pid" || break; sleep 0.1; done
! alive "$pid" && grep -qx quit "$log/commands" && ok || fail "stop did not send quit"
g mps start --mig MIG-00000000-0000-0000-0000-000000000000 2>/dev/null
[ $? = 2 ] && ok || fail "an unknown MIG device was accepted"

summary
