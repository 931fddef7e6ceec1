#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-jobs-queue.sh: the slice queue on an emulated A100 (one 3g.20gb, two
# 1g.5gb): a job larger than any free slice waits and then runs (without
# blocking smaller ones); two users contending for one slice alternate; a
# per-user limit holds; a queue killed with SIGKILL and restarted loses and
# duplicates nothing; a job killed with SIGKILL releases its slice; a dead
# shepherd's job is marked lost, not rerun; one user's out-of-memory job
# leaves another's alone. Env: GS_BIN (gpuslice), GS_TEST_TMP (scratch dir).
set -u
: "${GS_BIN:?set GS_BIN to the gpuslice binary}"
. "${GS_SRC:-$(dirname "$0")/../..}/tests/lib/common.sh"
root=$(gs_tmpdir jobs-queue) || exit 1
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$root"' EXIT
unset GPUSLICE_EMULATE GPUSLICE_JOBS_DIR GPUSLICE_MPS_CONTROL
export GPUSLICE_EMU_STATE="$root/emu.json"
g() { "$GS_BIN" -q "$@"; }
until_ok() { for _ in $(seq 1200); do "$@" && return 0; sleep 0.1; done; return 1; }
# Python over `gpuslice jobs --json` as the list j (sorted by start time as s).
q() { g jobs --json | python3 -c 'import json,sys
j=json.load(sys.stdin); s=sorted([x for x in j if x["started"]], key=lambda x: x["started"])
'"$1"; }
running_is() { [ "$(q 'print(sum(x["state"]=="running" for x in j))')" = "$1" ]; }
fresh() {
  rm -rf "$root/emu.json.jobs"
  g emu reset >/dev/null && g mig enable >/dev/null && g gi create 3g.20gb,1g.5gb,1g.5gb -C >/dev/null ||
    { echo "setup failed"; exit 1; }
}
drain() { timeout 240 "$GS_BIN" -q queue run --until-empty --poll-interval 50ms "$@" >"$root/queue.out" 2>&1 || fail "queue run: $(tail -3 "$root/queue.out")"; }

# 1. Larger than any free slice: waits for the 3g, then runs; a 1g job
#    submitted after it is not held up.
fresh
g queue submit --user alice --profile 3g.20gb -- sleep 4 >/dev/null
g queue submit --user bob --memory 12GiB -- true >/dev/null
g queue submit --user carol --profile 1g.5gb -- true >/dev/null
drain
q 'a,b,c=j; sys.exit(0 if b["started"]>=a["ended"] and b["slice_profile"]=="3g.20gb" and b["exit_status"]==0 else 1)' &&
  ok || fail "the 12GiB job did not wait for the 3g.20gb: $(g jobs)"
q 'a,b,c=j; sys.exit(0 if c["started"]<a["ended"] else 1)' && ok || fail "the 1g job waited behind the big one"

# 2. Fair shares: alice queues six jobs, then bob six, all for the one
#    3g.20gb slice; they alternate instead of alice's six going first.
fresh
for i in 1 2 3 4 5 6; do g queue submit --user alice --profile 3g.20gb -- true >/dev/null; done
for i in 1 2 3 4 5 6; do g queue submit --user bob --profile 3g.20gb -- true >/dev/null; done
drain
order=$(q 'print(" ".join(x["user"][0] for x in s))')
[ "$order" = "a b a b a b a b a b a b" ] && ok || fail "contended slice served as: $order"

# 2b. Both submitting at the same moment, on two slices: half each in every
#     prefix of the start order with an even length.
fresh
for u in alice bob; do
  (for i in 1 2 3 4; do g queue submit --user $u --profile 1g.5gb -- sleep 0.2 >/dev/null; done) &
done
wait
drain
q 'u=[x["user"] for x in s]; sys.exit(0 if len(u)==8 and u[:2].count("alice")==1 and u.count("alice")==4 else 1)' &&
  ok || fail "two users submitting at once: $(q 'print([x["user"] for x in s])')"

# 3. --max-per-user 1: alice's three jobs never overlap although two slices are free.
fresh
for i in 1 2 3; do g queue submit --user alice --profile 1g.5gb -- sleep 0.3 >/dev/null; done
drain --max-per-user 1
q 'sys.exit(0 if all(s[i+1]["started"]>=s[i]["ended"] for i in range(len(s)-1)) and len(s)==3 else 1)' &&
  ok || fail "--max-per-user 1 ran alice's jobs at once"

# 4. SIGKILL of the queue mid-way, then a restart: every job runs exactly once.
fresh
for i in 1 2 3 4 5 6; do
  g queue submit --user u$((i % 2)) --profile 1g.5gb -- sh -c 'echo $GPUSLICE_JOB_ID >>"$0"; sleep 1' "$root/ran" >/dev/null
done
"$GS_BIN" -q queue run --poll-interval 50ms >/dev/null 2>&1 &
qpid=$!
until_ok running_is 2 || fail "the queue did not start two jobs"
{ kill -9 "$qpid"; wait "$qpid"; } 2>/dev/null  # no "Killed" notice
drain
n=$(sort "$root/ran" | uniq | wc -l)
dups=$(sort "$root/ran" | uniq -d | wc -l)
[ "$n" = 6 ] && [ "$dups" = 0 ] && ok || fail "after a queue restart: $n distinct jobs ran, $dups twice"
q 'sys.exit(0 if all(x["state"]=="done" and x["exit_status"]==0 for x in j) and len(j)==6 else 1)' &&
  ok || fail "after a restart: $(g jobs)"
python3 -c 'import json,sys; sys.exit(len(json.load(open(sys.argv[1]))["claims"]))' "$root/emu.json.jobs/claims/$(id -u).json" &&
  ok || fail "claims left after the queue emptied: $(cat "$root/emu.json.jobs/claims/$(id -u).json")"

# 5. SIGKILL of a job: recorded as 137 (signal 9), its slice goes to the next job.
fresh
g queue submit --user alice --profile 3g.20gb -- sleep 60 >/dev/null
g queue submit --user bob --profile 3g.20gb -- true >/dev/null
"$GS_BIN" -q queue run --poll-interval 50ms --until-empty >/dev/null 2>&1 &
qpid=$!
until_ok running_is 1 || fail "the sleep job did not start"
pid_of() { q 'print([x["pid"] for x in j if x["state"]=="running" and x["pid"]][0])' 2>/dev/null; }
until_ok pid_of >/dev/null
# The running job is a process on its instance, as the emulator shows it.
g emu status | grep -q "gpuslice-job j000001) on GPU instance" && ok || fail "the job is not an emulated process: $(g emu status)"
kill -9 "$(pid_of)"
wait "$qpid"
q 'a,b=j; sys.exit(0 if a["exit_status"]==137 and a["signal"]==9 and b["exit_status"]==0 else 1)' &&
  ok || fail "a SIGKILLed job: $(g jobs)"

# 6. SIGKILL of a shepherd: the job is marked lost and not rerun; the slice is reused.
fresh
g queue submit --user alice --profile 3g.20gb -- sh -c 'echo x >>"$0"; sleep 60' "$root/lost" >/dev/null
g queue submit --user bob --profile 3g.20gb -- true >/dev/null
"$GS_BIN" -q queue run --poll-interval 50ms --until-empty >/dev/null 2>&1 &
qpid=$!
until_ok running_is 1 || fail "the shepherded job did not start"
shep=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["shepherd_pid"])' "$root/emu.json.jobs/queue/j000001.json")
kill -9 "$shep"
wait "$qpid"
q 'a,b=j; sys.exit(0 if a["state"]=="lost" and "not rerun" in a["reason"] and b["exit_status"]==0 else 1)' &&
  ok || fail "a dead shepherd's job: $(g jobs)"
[ "$(wc -l <"$root/lost")" = 1 ] && ok || fail "the lost job ran $(wc -l <"$root/lost") times"

# 6b. Cancel: a queued job never starts; a running one gets SIGTERM (143).
fresh
g queue submit --user alice --profile 3g.20gb -- sh -c 'echo x >>"$0"; sleep 60' "$root/cancel" >/dev/null
g queue submit --user bob --profile 3g.20gb -- sh -c 'echo y >>"$0"' "$root/cancel" >/dev/null
g queue cancel j000002 | grep -qx "j000002 cancelled" && ok || fail "cancel of a queued job"
"$GS_BIN" -q queue run --poll-interval 50ms --until-empty >/dev/null 2>&1 &
qpid=$!
until_ok running_is 1 || fail "the job to cancel did not start"
until_ok pid_of >/dev/null
g queue cancel j000001 | grep -qx "j000001 sent SIGTERM" && ok || fail "cancel of a running job"
wait "$qpid"
q 'a,b=j; sys.exit(0 if a["exit_status"]==143 and b["state"]=="cancelled" and not b["started"] else 1)' &&
  ok || fail "cancelled jobs: $(g jobs)"
[ "$(cat "$root/cancel")" = x ] && ok || fail "a cancelled job ran: $(cat "$root/cancel")"
g queue cancel j000001 2>/dev/null
[ $? = 2 ] && ok || fail "cancelling an ended job is not refused"

# 7. One user's out-of-memory job does not touch another user's slice.
fresh
g queue submit --user alice --profile 1g.5gb -- "$GS_BIN" -q job-emu --memory 8GiB --steps 5 --time-scale 100000 >/dev/null
g queue submit --user bob --profile 1g.5gb -- "$GS_BIN" -q job-emu --steps 50 --time-scale 100000 >/dev/null
drain
q 'a,b=j; sys.exit(0 if a["exit_status"]==1 and b["exit_status"]==0 and a["slice_uuid"]!=b["slice_uuid"] else 1)' &&
  ok || fail "out of memory: $(g jobs)"
grep -q "out of memory (EMULATED)" "$root/emu.json.jobs/queue/j000001.log" && ok || fail "the OOM job's log: $(cat "$root/emu.json.jobs/queue/j000001.log")"

# 8. A corrupt job file is reported by name, not skipped or crashed on.
echo '{"format": "gpuslice-job", "version": 1, "id": 5}' >"$root/emu.json.jobs/queue/j000099.json"
err=$(g jobs 2>&1)
[ $? = 3 ] && case "$err" in *j000099.json*"move the file"*) true ;; *) false ;; esac && ok || fail "corrupt job file: $err"

summary
