#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-jobs-wait.sh: a queued job says why it waits (issue 17, item 6), as
# the queue runner found it at its last pass, in `gpuslice jobs`, in
# --json (waits_for, reason) and in the job's file: its user's limit, every
# slice it may have in use, an older job of its user ahead of it, the
# queue's limit, and no such slice on the current layout (it stays queued,
# holds up none of its user's later jobs, and runs once a layout makes
# one; `queue run --until-empty` returns instead of waiting forever and
# says which jobs stay). A job too large for any profile is refused at
# submit. The runner prints its events as lines on stderr: submitted,
# waits (when the reason changes), started, ended with exit status,
# duration, slice and leftovers killed.
# Env: GS_BIN (gpuslice), GS_TEST_TMP (scratch dir).
set -u
: "${GS_BIN:?set GS_BIN to the gpuslice binary}"
. "${GS_SRC:-$(dirname "$0")/../..}/tests/lib/common.sh"
root=$(gs_tmpdir jobs-wait) || exit 1
qpid=
cleanup() { [ -n "$qpid" ] && kill "$qpid" 2>/dev/null; rm -rf "$root"; }
trap cleanup EXIT
unset GPUSLICE_EMULATE GPUSLICE_JOBS_DIR GPUSLICE_JOB_TRACKING
export GPUSLICE_EMU_STATE="$root/emu.json"
g() { "$GS_BIN" -q "$@"; }
# field ID KEY: the job's KEY in `jobs --json` (None printed as "null").
field() {
  g jobs --json | python3 -c 'import json,sys
j=[x for x in json.load(sys.stdin) if x["id"]==sys.argv[1]]
v=j[0][sys.argv[2]] if j else "nojob"
print("null" if v is None else v)' "$1" "$2"
}
# until_field ID KEY VALUE: waits (up to 60 s) until the job's KEY is VALUE.
until_field() {
  local i
  for i in $(seq 600); do [ "$(field "$1" "$2")" = "$3" ] && return 0; sleep 0.1; done
  return 1
}
g emu reset --emulate a100-40gb >/dev/null && g mig enable >/dev/null &&
  g gi create 1g.5gb,1g.5gb -C >/dev/null || { echo "FAIL: setup"; exit 1; }

# Too large for any profile: refused at submit, saying so (never queued).
err=$(g queue submit --memory 80GiB -- true 2>&1)
rc=$?
[ "$rc" = 2 ] && case "$err" in *"80.00 GiB is more than any MIG profile has: the largest is 7g.40gb"*) true ;;
  *) false ;; esac && ok || fail "80 GiB at submit: exit $rc: $err"
[ -z "$(ls "$root"/emu.json.jobs/queue/*.json 2>/dev/null)" ] && ok || fail "the refused job was queued"

# alice: j1 runs, j2 waits for her limit (--max-per-user 1).
# bob: j3 needs a 3g.20gb the layout does not have; j4 (1g) runs all the same.
# carol: j5 waits for a 1g slice (both are taken).
sub() { g queue submit "$@" >/dev/null || fail "submit $*"; }
# Running jobs hold their slices until the test lets them end (GATE).
gate=$root/gate
hold='until [ -e "$0" ]; do sleep 0.05; done'
sub --user alice --profile 1g.5gb -- sh -c "$hold; exit 3" "$gate"
sub --user alice --profile 1g.5gb -- true
sub --user bob --profile 3g.20gb -- true
sub --user bob --profile 1g.5gb -- sh -c "sleep 30 & $hold" "$gate"
sub --user carol --profile 1g.5gb -- true
out=$(g jobs)
case "$out" in *"j000001 waits: not looked at yet"*) ok ;; *) fail "jobs before any runner: $out" ;; esac

"$GS_BIN" -q queue run --max-per-user 1 --poll-interval 100ms --grace-period 200ms \
  >"$root/q.out" 2>"$root/q.err" &
qpid=$!
until_field j000004 state running && ok || fail "bob's 1g job did not start behind his layout-blocked one: $(g jobs)"
until_field j000005 waits_for slice && ok || fail "carol's job: $(g jobs)"
[ "$(field j000001 state)" = running ] && ok || fail "alice's first job: $(g jobs)"
[ "$(field j000002 waits_for)" = user-limit ] && ok || fail "alice's second job: $(g jobs --json)"
[ "$(field j000003 waits_for)" = layout ] && ok || fail "bob's 3g job: $(g jobs --json)"
[ "$(field j000001 waits_for)" = null ] && ok || fail "a running job has a wait"
out=$(g jobs)
for want in "j000002 waits: user limit 1 reached: alice runs 1 job (--max-per-user 1)" \
            "j000003 waits: cannot run on this machine's current layout: no 3g.20gb MIG device exists on the selected GPUs" \
            "j000005 waits: no free 1g.5gb MIG device: all 2 on the selected GPUs are in use"; do
  case "$out" in *"$want"*) ok ;; *) fail "no '$want' in: $out" ;; esac
done
# The reason is the job file's, for any reader (and the runner's next start).
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); sys.exit(not (j["waits_for"]=="layout" and "3g.20gb" in j["reason"]))' \
  "$root/emu.json.jobs/queue/j000003.json" && ok || fail "j000003.json: $(cat "$root/emu.json.jobs/queue/j000003.json")"

# Submitted while the runner runs: told; it waits behind carol's older job.
sub --user carol --profile 1g.5gb -- true
until_field j000006 waits_for turn && ok || fail "carol's second job: $(g jobs)"
case "$(field j000006 reason)" in "behind j000005, an older job of carol's"*) ok ;; *) fail "j000006's reason: $(field j000006 reason)" ;; esac
touch "$gate"

# Everything that can run runs; the runner tells each end.
until_field j000006 state done && ok || fail "the queue did not drain: $(g jobs)"
until_field j000004 state done && ok || fail "bob's job: $(g jobs)"
sleep 0.5
kill "$qpid"; wait "$qpid"; qpid=
[ "$(field j000003 state)" = queued ] && [ "$(field j000003 waits_for)" = layout ] && ok ||
  fail "the layout-blocked job is no longer queued for its reason: $(g jobs)"
e=$(cat "$root/q.err")
for want in "gpuslice queue: j000006 submitted: user carol, 1g.5gb: true" \
            "gpuslice queue: j000002 waits (user-limit): user limit 1 reached" \
            "gpuslice queue: j000003 waits (layout): cannot run on this machine's current layout" \
            "gpuslice queue: j000001 started: user alice, GPU 0 1g.5gb MIG-" \
            "gpuslice queue: j000001 ended: exit 3 after " \
            "gpuslice queue: j000004 ended: exit 0 after " \
            "; 1 leftover process killed (found by "; do
  case "$e" in *"$want"*) ok ;; *) fail "no '$want' in the runner's stderr: $e" ;; esac
done
grep -q "j000001 ended: exit 3 after [0-9.]*s, user alice, GPU 0 1g.5gb MIG-" "$root/q.err" && ok ||
  fail "j000001's end line: $(grep j000001 "$root/q.err")"
[ "$(grep -c 'j000003 waits' "$root/q.err")" = 1 ] && ok || fail "an unchanged reason told again: $(grep 'j000003 waits' "$root/q.err")"
[ ! -s "$root/q.out" ] && ok || fail "the runner wrote on stdout: $(cat "$root/q.out")"

# --until-empty returns when only layout-blocked jobs are left, and says so.
timeout 60 "$GS_BIN" -q queue run --until-empty --poll-interval 50ms >"$root/q2.out" 2>"$root/q2.err"
rc=$?
[ "$rc" = 1 ] && grep -q "j000003 stays queued: cannot run on this machine's current layout" "$root/q2.err" &&
  grep -q "1 job cannot run on this machine's current layout and stays queued" "$root/q2.err" && ok ||
  fail "until-empty with a layout-blocked job: exit $rc: $(cat "$root/q2.err")"
# Once a layout has the slice, it runs.
g gi create 3g.20gb -C >/dev/null || fail "gi create 3g.20gb"
timeout 60 "$GS_BIN" -q queue run --until-empty --poll-interval 50ms >"$root/q3.out" 2>"$root/q3.err" &&
  [ "$(field j000003 state)" = done ] && ok || fail "j000003 after the layout changed: $(cat "$root/q3.err"); $(g jobs)"

# The queue's limit.
sub --user dave --profile 1g.5gb -- sh -c "$hold" "$gate.2"
sub --user erin --profile 1g.5gb -- true
"$GS_BIN" -q queue run --max-running 1 --until-empty --poll-interval 100ms >"$root/q4.out" 2>"$root/q4.err" &
qpid=$!
until_field j000008 waits_for queue-limit && ok || fail "erin's job under --max-running 1: $(g jobs --json)"
case "$(field j000008 reason)" in "queue limit 1 reached: 1 jobs run (--max-running 1)") ok ;;
  *) fail "queue limit reason: $(field j000008 reason)" ;; esac
touch "$gate.2"
wait "$qpid" && ok || fail "queue run --max-running 1: $(cat "$root/q4.err")"
qpid=
[ "$(field j000008 state)" = done ] && [ "$(field j000008 waits_for)" = null ] && [ -z "$(field j000008 reason)" ] &&
  ok || fail "a started job keeps its old wait: $(g jobs --json)"
summary
