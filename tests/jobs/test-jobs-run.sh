#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-jobs-run.sh: `gpuslice run` on an emulated A100: the command is pinned
# to its slice and its exit status returned; --memory picks the smallest
# profile that fits; --create makes a slice and destroys it afterwards; more
# memory than any profile is refused with a clear error; a job killed with
# SIGKILL releases its slice, and so does a runner killed with SIGKILL (the
# next claimer reaps it); concurrent runs never share a slice.
# Env: GS_BIN (gpuslice), GS_TEST_TMP (scratch dir), GS_NVML_EMU (nvml-emu, optional).
set -u
: "${GS_BIN:?set GS_BIN to the gpuslice binary}"
. "${GS_SRC:-$(dirname "$0")/../..}/tests/lib/common.sh"
root=$(gs_tmpdir jobs-run) || exit 1
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$root"' EXIT
unset GPUSLICE_EMULATE GPUSLICE_JOBS_DIR GPUSLICE_MPS_CONTROL
export GPUSLICE_EMU_STATE="$root/emu.json"
g() { "$GS_BIN" -q "$@"; }
gis() { g gi list --json | python3 -c 'import json,sys; print(" ".join(sorted(x["name"] for x in json.load(sys.stdin))))'; }
claims() { python3 -c 'import json,sys
try: print(len(json.load(open(sys.argv[1]))["claims"]))
except FileNotFoundError: print(0)' "$root/emu.json.jobs/claims/$(id -u).json"; }
# The process has exited (a zombie nobody reaps counts as gone).
gone() { local st; st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null); [ -z "$st" ] || [ "$st" = Z ]; }
claims_are() { [ "$(claims)" = "$1" ]; }
# Waits (at most 60 s) until the command succeeds.
until_ok() { for _ in $(seq 600); do "$@" && return 0; sleep 0.1; done; return 1; }

g emu reset >/dev/null && g mig enable >/dev/null && g gi create 3g.20gb,1g.5gb,1g.5gb -C >/dev/null || { echo "setup failed"; exit 1; }

# Pinned to a MIG device of the profile; the exit status comes back.
out=$(g run --profile 1g.5gb -- sh -c 'echo "$CUDA_VISIBLE_DEVICES $GPUSLICE_JOB_PROFILE"; exit 7')
rc=$?
[ "$rc" = 7 ] && ok || fail "exit status: got $rc, want 7"
uuids=$(g list --json | python3 -c 'import json,sys
d=json.load(sys.stdin); print(" ".join(m["uuid"] for g in d for m in g.get("mig_devices", [])))' 2>/dev/null)
case "$out" in
  MIG-*" 1g.5gb") case " $uuids " in *" ${out%% *} "*) ok ;; *) fail "pinned to ${out%% *}, not one of: $uuids" ;; esac ;;
  *) fail "environment: $out" ;;
esac

# --memory picks the smallest profile with that much: 8GiB is a 3g.20gb here
# (no 1g.10gb or 2g.10gb exists, and --create is not given).
out=$(g run --memory 8GiB -- sh -c 'echo $GPUSLICE_JOB_PROFILE')
[ "$out" = 3g.20gb ] && ok || fail "--memory 8GiB ran on '$out', want 3g.20gb"
out=$(g run --memory 4GiB -- sh -c 'echo $GPUSLICE_JOB_PROFILE')
[ "$out" = 1g.5gb ] && ok || fail "--memory 4GiB ran on '$out', want 1g.5gb"

# --create: a 2g.10gb made for the job, destroyed after it.
before=$(gis)
out=$(g run --profile 2g.10gb --create -- sh -c 'echo $GPUSLICE_JOB_PROFILE')
[ "$out" = 2g.10gb ] && ok || fail "--create ran on '$out'"
[ "$(gis)" = "$before" ] && ok || fail "--create left instances: $(gis), before: $before"
# with --memory, the smallest that fits is created: 8GiB -> 1g.10gb (9.6 GiB)
out=$(g run --memory 8GiB --create --no-wait -- sh -c 'echo $GPUSLICE_JOB_PROFILE' 2>/dev/null)
[ "$out" = 3g.20gb ] && ok || fail "an existing free slice comes before creating one: got '$out'"

# More memory than any profile: refused, exit 2, naming the input and the largest profile.
err=$(g run --memory 100GiB -- true 2>&1)
rc=$?
[ "$rc" = 2 ] && ok || fail "--memory 100GiB: exit $rc, want 2"
case "$err" in *"--memory 100.00 GiB is more than any MIG profile"*"7g.40gb"*) ok ;; *) fail "--memory 100GiB message: $err" ;; esac
err=$(g queue submit --memory 100GiB -- true 2>&1)
[ $? = 2 ] && ok || fail "queue submit --memory 100GiB was accepted"
err=$(g run --profile 9g.1gb -- true 2>&1)
[ $? = 2 ] && case "$err" in *"9g.1gb"*"gi profiles"*) true ;; *) false ;; esac && ok || fail "unknown profile: $err"
err=$(g run --memory lots -- true 2>&1)
[ $? = 2 ] && case "$err" in *"lots"*"8GiB"*) true ;; *) false ;; esac && ok || fail "bad size: $err"
g run --profile 1g.5gb true 2>/dev/null
[ $? = 2 ] && ok || fail "a command without -- was accepted"

# A size no device has, without --create: refused at once, not waited for.
err=$(timeout 60 "$GS_BIN" -q run --profile 2g.10gb -- true 2>&1)
[ $? = 1 ] && case "$err" in *"no 2g.10gb MIG device exists"*"--create"*) true ;; *) false ;; esac && ok ||
  fail "a profile no device has: $err"

# --no-wait on a busy profile: refused (exit 1) while both 1g slices are held.
"$GS_BIN" -q run --profile 1g.5gb -- sleep 30 &
r1=$!
"$GS_BIN" -q run --profile 1g.5gb -- sleep 30 &
r2=$!
until_ok claims_are 2 || fail "two runs did not claim"
err=$(g run --profile 1g.5gb --no-wait -- true 2>&1)
[ $? = 1 ] && case "$err" in *"no free 1g.5gb"*) true ;; *) false ;; esac && ok || fail "--no-wait while busy: $err"

# SIGKILL of a job: its runner returns 137 and the slice is free again.
# The job process of the claim owned by runner $1 (empty until it started).
job_of() { python3 -c 'import json,sys
c=json.load(open(sys.argv[1]))["claims"]; print([x["job_pid"] for x in c if x["owner_pid"]==int(sys.argv[2]) and x["job_pid"]][0])' "$root/emu.json.jobs/claims/$(id -u).json" "$1" 2>/dev/null; }
until_ok job_of "$r1" >/dev/null || fail "the run's job never started"
kill -9 "$(job_of "$r1")"
wait "$r1"
rc=$?
[ "$rc" = 137 ] && ok || fail "runner of a SIGKILLed job: exit $rc, want 137"
g run --profile 1g.5gb --no-wait -- true 2>/dev/null && ok || fail "the killed job's slice was not released"

# SIGKILL of the runner itself: its job dies with it; the next claim reaps both.
{ kill -9 "$r2"; wait "$r2"; } 2>/dev/null  # no "Killed" notice
until_ok g run --profile 1g.5gb --no-wait -- true 2>/dev/null && ok || fail "a dead runner's slice stayed claimed"
g run --profile 1g.5gb -- true && g run --profile 1g.5gb --no-wait -- true && ok || fail "slices after the kills"

# A dead runner's created slice is destroyed by the next claimer.
before=$(gis)
"$GS_BIN" -q run --profile 2g.10gb --create -- sleep 30 &
r3=$!
until_ok job_of "$r3" >/dev/null || fail "the create run did not start"
j3=$(job_of "$r3")
{ kill -9 "$r3"; wait "$r3"; } 2>/dev/null  # no "Killed" notice
# Its job is killed too (PR_SET_PDEATHSIG), a moment later: until then the claim is live.
until_ok gone "$j3" || fail "the dead runner's job outlived it"
g run --profile 1g.5gb -- true
[ "$(gis)" = "$before" ] && ok || fail "a dead runner's created slice was not destroyed: $(gis)"

# Concurrent runs never share a slice: 8 runs on two 1g slices, each marks its
# slice busy while it runs.
mkdir -p "$root/busy"
pids=()
for i in $(seq 8); do
  g run --profile 1g.5gb -- sh -c 'mkdir "$0/$CUDA_VISIBLE_DEVICES" || { echo SHARED; exit 9; }; sleep 0.2; rmdir "$0/$CUDA_VISIBLE_DEVICES"' "$root/busy" &
  pids+=($!)
done
bad=0
for p in "${pids[@]}"; do wait "$p" || bad=$((bad + 1)); done
[ "$bad" = 0 ] && ok || fail "$bad of 8 concurrent runs failed or shared a slice"
[ "$(claims)" = 0 ] && ok || fail "claims left after all runs: $(claims)"

# A run for a busy slice waits, then runs once the holder is done.
"$GS_BIN" -q run --profile 3g.20gb -- sh -c 'sleep 1; touch "$0/first-done"' "$root" &
r4=$!
until_ok job_of "$r4" >/dev/null || fail "the first 3g run did not start"
g run --memory 12GiB -- sh -c 'test -e "$0/first-done"' "$root" 2>/dev/null && ok || fail "the waiting run ran before the slice was free"
wait "$r4"

# The same through the NVML backend loaded over nvml-emu (profiles read from the "driver").
if [ -n "${GS_NVML_EMU:-}" ]; then
  before=$(gis)
  out=$(GPUSLICE_NVML_LIBRARY="$GS_NVML_EMU" GPUSLICE_JOBS_DIR="$root/emu.json.jobs" "$GS_BIN" -q --backend nvml \
    run --profile 2g.10gb --create -- sh -c 'echo $GPUSLICE_JOB_PROFILE $CUDA_VISIBLE_DEVICES')
  case "$out" in "2g.10gb MIG-"*) ok ;; *) fail "run over the NVML backend: $out" ;; esac
  [ "$(gis)" = "$before" ] && ok || fail "run over the NVML backend left instances: $(gis)"
fi

# Time-slicing needs a GPU outside MIG mode.
err=$(g run --mode timeslice --no-wait -- true 2>&1)
[ $? = 1 ] && case "$err" in *"outside MIG mode"*) true ;; *) false ;; esac && ok || fail "timeslice on a MIG GPU: $err"

summary
