#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-jobs-ledger.sh: serve, run and the queue share one claims ledger, so no
# two of them ever hand out the same slice (issue 14, item 4). On an emulated
# A100 with three 1g.5gb slices and one 3g.20gb: serve's workers on the 1g
# slices claim them; `gpuslice claims` shows who holds what; `run --profile
# 1g.5gb --no-wait` finds no free 1g slice while serve runs (on main, whose
# serve took no claims, it got one of serve's) and a queued 1g job waits;
# once serve stops its claims are gone and the queued job runs. A run that
# holds the 3g slice first keeps serve's worker for it from starting (its
# log says who holds it) until the run ends; then that worker claims it.
# Env: GS_BIN (gpuslice), GS_TEST_TMP (scratch dir).
set -u
: "${GS_BIN:?set GS_BIN to the gpuslice binary}"
. "${GS_SRC:-$(dirname "$0")/../..}/tests/lib/common.sh"
root=$(gs_tmpdir jobs-ledger) || exit 1
serve_pid=
trap '[ -n "$serve_pid" ] && kill -9 "$serve_pid" 2>/dev/null; kill $(jobs -p) 2>/dev/null; rm -rf "$root"' EXIT
unset GPUSLICE_EMULATE GPUSLICE_JOBS_DIR GPUSLICE_MPS_CONTROL GPUSLICE_JOB_TRACKING
export GPUSLICE_EMU_STATE="$root/emu.json"
g() { "$GS_BIN" -q "$@"; }
until_ok() { for _ in $(seq 300); do "$@" && return 0; sleep 0.1; done; return 1; }
held() { g claims --json | python3 -c 'import json,sys
c=json.load(sys.stdin); print(sum(1 for x in c if x["job"].startswith(sys.argv[1])))' "$1"; }
held_is() { [ "$(held "$1")" = "$2" ]; }
state_of() { g jobs --json | python3 -c 'import json,sys; print([x["state"] for x in json.load(sys.stdin) if x["id"]==sys.argv[1]][0])' "$1"; }
state_is() { [ "$(state_of "$1")" = "$2" ]; }

g emu reset >/dev/null && g mig enable >/dev/null && g gi create 1g.5gb,1g.5gb,1g.5gb,3g.20gb -C >/dev/null ||
  { echo "setup failed"; exit 1; }
ones=$(g list --json | python3 -c 'import json,sys
print(" ".join(m["uuid"] for g in json.load(sys.stdin) for m in g.get("mig_devices", []) if m["name"]=="1g.5gb"))')

# A run holds the 3g slice while serve starts: that worker waits for it.
# It holds the slice until the test releases it, however slow serve starts.
g run --profile 3g.20gb -- sh -c "until [ -e '$root/release' ]; do sleep 0.1; done" &
run3=$!
until_ok held_is run- 1 || fail "the 3g run took no claim"
"$GS_BIN" -q serve --listen 127.0.0.1:0 --admin-listen off --ephemeral-ports --log-dir "$root" \
  -- "$GS_BIN" worker --listen '127.0.0.1:{port}' --profile '{profile}' >"$root/serve.out" 2>"$root/serve.err" &
serve_pid=$!
until_ok held_is serve- 3 && ok || fail "serve's workers hold $(held serve-) claims, want 3 (the 1g slices): $(g claims)"
grep -q "not started: MIG-.* is held by run-" "$root"/worker-*.log && ok ||
  fail "the worker of the slice a run held did not say so: $(cat "$root"/worker-*.log | tail -5)"

# Who holds what, with the holder's uid from the kernel.
out=$(g claims)
case "$out" in *serve-*serve*"$(id -u)"*mig*1g.5gb*) ok ;; *) fail "gpuslice claims: $out" ;; esac
g claims --json | python3 -c 'import json,sys
c=json.load(sys.stdin); s=[x for x in c if x["job"].startswith("serve-")]
ok=all(x["uid"]==int(sys.argv[1]) and x["gpu"] is None and x["mode"]=="mig" for x in s)
sys.exit(0 if ok and sorted(x["uuid"] for x in s)==sorted(sys.argv[2].split()) else 1)' "$(id -u)" "$ones" &&
  ok || fail "claims --json: $(g claims --json)"

# run finds no free 1g slice: each is serve's.
err=$(g run --profile 1g.5gb --no-wait -- sh -c 'echo $CUDA_VISIBLE_DEVICES' 2>&1)
rc=$?
[ "$rc" = 1 ] && case "$err" in *"no free 1g.5gb MIG device"*) true ;; *) false ;; esac && ok ||
  fail "run beside serve: exit $rc: $err"

# The worker that waited gets the 3g slice once the run ends.
touch "$root/release"
wait "$run3"
until_ok held_is serve- 4 && ok || fail "serve did not claim the 3g slice after the run: $(g claims)"

# The queue: a 1g job waits while serve holds every slice.
g queue submit --profile 1g.5gb -- true >/dev/null
"$GS_BIN" -q queue run --poll-interval 50ms --until-empty >"$root/queue.out" 2>&1 &
qpid=$!
sleep 1
state_is j000001 queued && ok || fail "a job started while serve holds every slice: $(g jobs)"

# serve stops: its claims go, and the queued 1g job runs.
kill -TERM "$serve_pid"
wait "$serve_pid"
serve_pid=
held_is serve- 0 && ok || fail "serve's claims outlived it: $(g claims)"
wait "$qpid" && state_is j000001 done && ok || fail "after serve stopped: $(g jobs); $(cat "$root/queue.out")"

summary
