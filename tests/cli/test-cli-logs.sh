#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-cli-logs.sh: the log formats of the one logger (issue 17, item 6),
# on `queue run` and `serve`: with $JOURNAL_STREAM naming stderr's device
# and inode (as systemd sets it), every line carries the journal's priority
# (<6> info, <5> notice) and no time; a JOURNAL_STREAM naming another file
# leaves the text format; --log-format json makes every stderr line a JSON
# object with time, level, source, message and the queue's fields (job,
# user, slice, status, duration); --log-level warning hides the info lines;
# a bad value is refused naming it. `worker` alone: its banner, ports and
# "stopped" go through the same logger (JSON lines under --log-format json;
# text as before: "listening on HOST:PORT" on stdout).
# Env: GS_BIN (gpuslice), GS_SRC, GS_TEST_TMP.
set -u
: "${GS_BIN:?set GS_BIN to the gpuslice binary}"
. "${GS_SRC:-$(dirname "$0")/../..}/tests/lib/common.sh"
root=$(gs_tmpdir cli-logs) || exit 1
spid=
cleanup() { [ -n "$spid" ] && kill "$spid" 2>/dev/null; rm -rf "$root"; }
trap cleanup EXIT
unset GPUSLICE_EMULATE GPUSLICE_JOBS_DIR GPUSLICE_LOG_FORMAT GPUSLICE_LOG_LEVEL JOURNAL_STREAM
export GPUSLICE_EMU_STATE="$root/emu.json"
g() { "$GS_BIN" -q "$@"; }
g emu reset --emulate a100-40gb >/dev/null && g mig enable >/dev/null &&
  g gi create 1g.5gb -C >/dev/null || { echo "FAIL: setup"; exit 1; }

# run_queue ERRFILE ARGS...: one job submitted, then `queue run --until-empty`
# with ARGS, its stderr in ERRFILE (made first: its inode is known).
run_queue() {
  local err=$1
  shift
  g queue submit --user alice --profile 1g.5gb -- true >/dev/null || fail "submit"
  : >"$err"
  timeout 60 "$GS_BIN" "$@" queue run --until-empty --poll-interval 50ms >"$err.out" 2>"$err"
}
devino() { stat -c '%d:%i' "$1"; }

# Under systemd: priorities, no time, every line.
: >"$root/j.err"
JOURNAL_STREAM=$(devino "$root/j.err") run_queue "$root/j.err" -q
grep -q '^<6>queue: j000001 started: user alice, GPU 0 1g.5gb MIG-' "$root/j.err" && ok ||
  fail "no <6> started line: $(cat "$root/j.err")"
grep -q '^<6>queue: j000001 ended: exit 0 after ' "$root/j.err" && ok ||
  fail "no <6> ended line: $(cat "$root/j.err")"
[ -s "$root/j.err" ] && ! grep -qv '^<[3-7]>' "$root/j.err" && ok ||
  fail "a line without a priority: $(grep -v '^<[3-7]>' "$root/j.err")"
! grep -qE '[0-9]{2}:[0-9]{2}:[0-9]{2}' "$root/j.err" && ok || fail "a time under the journal: $(cat "$root/j.err")"
# Another file's device and inode: not the journal, the text format.
JOURNAL_STREAM=$(devino "$root/emu.json") run_queue "$root/t.err" -q
grep -q '^gpuslice queue: j000002 started: user alice' "$root/t.err" && ! grep -q '^<' "$root/t.err" && ok ||
  fail "JOURNAL_STREAM of another file: $(cat "$root/t.err")"

# JSON: every line an object (the emulated-GPU notice too: no -q), with
# the queue's fields.
run_queue "$root/q.json" --log-format json
python3 - "$root/q.json" <<'PY' && ok || fail "queue run's JSON lines: $(cat "$root/q.json")"
import json, sys
lines = open(sys.argv[1]).read().splitlines()
objs = [json.loads(l) for l in lines]            # each line parses, or this fails
assert objs and all({"time", "level", "source", "message"} <= o.keys() for o in objs), objs
assert all(o["time"].endswith("Z") and "T" in o["time"] for o in objs), objs
assert any("EMULATED" in o["message"] and o["level"] == "warning" for o in objs), objs
end = [o for o in objs if o.get("event") == "ended"]
assert len(end) == 1, objs
e = end[0]
assert e["source"] == "queue" and e["level"] == "info" and e["job"] == "j000003", e
assert e["user"] == "alice" and e["slice"].startswith("MIG-") and e["profile"] == "1g.5gb", e
assert e["status"] == "done" and e["exit_status"] == "0" and float(e["duration_s"]) >= 0, e
assert any(o.get("event") == "started" and o["job"] == "j000003" for o in objs), objs
PY
# --log-level warning: the info lines go; the warning stays.
run_queue "$root/w.err" --log-level warning
! grep -q 'started\|ended\|serving' "$root/w.err" && grep -q 'EMULATED' "$root/w.err" && ok ||
  fail "--log-level warning: $(cat "$root/w.err")"
[ "$(g jobs --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[-1]["state"])')" = done ] && ok ||
  fail "the job under --log-level warning did not run"

# Bad values: refused, naming the value (exit 2).
out=$("$GS_BIN" -q --log-format xml jobs 2>&1)
[ $? -eq 2 ] && case "$out" in *"--log-format xml: expected auto, text, journal or json"*) true ;; *) false ;; esac &&
  ok || fail "--log-format xml: $out"
out=$("$GS_BIN" -q --log-level loud jobs 2>&1)
[ $? -eq 2 ] && case "$out" in *"--log-level loud"*) true ;; *) false ;; esac && ok || fail "--log-level loud: $out"

# serve under the journal: a worker joins (<6>), SIGTERM drains (<5>).
# wait_for FILE PATTERN: up to 30 s for PATTERN in FILE.
wait_for() { for _ in $(seq 300); do grep -q "$2" "$1" && return 0; sleep 0.1; done; return 1; }
serve() { # serve ERRFILE ARGS...: serve in the background, one worker a slice
  local err=$1
  shift
  : >"$err"
  "$GS_BIN" -q "$@" serve --listen 127.0.0.1:0 --admin-listen off --ephemeral-ports --log-dir "$root" -- \
    "$GS_BIN" worker --listen '127.0.0.1:{port}' --profile '{profile}' >"$err.out" 2>"$err" &
  spid=$!
}
stop() { kill -TERM "$spid"; wait "$spid"; spid=; }
: >"$root/s.err"
JOURNAL_STREAM=$(devino "$root/s.err") serve "$root/s.err"
wait_for "$root/s.err" '^<6>serve: worker 0 (1g.5gb MIG-.*joined the pool' && ok ||
  fail "serve under the journal: $(cat "$root/s.err")"
stop
grep -q '^<5>serve: Terminated: draining' "$root/s.err" && ok || fail "no <5> draining: $(cat "$root/s.err")"
! grep -qv '^<[3-7]>' "$root/s.err" && ok || fail "serve, a line without a priority: $(grep -v '^<[3-7]>' "$root/s.err")"
[ ! -s "$root/s.err.out" ] && ok || fail "serve under the journal wrote on stdout: $(cat "$root/s.err.out")"
# serve in JSON: its worker events carry their fields; --log-level warning: none on stdout.
serve "$root/sj.err" --log-format json
wait_for "$root/sj.err" '"event":"joined"' && ok || fail "serve's JSON: $(cat "$root/sj.err")"
stop
python3 -c 'import json,sys
objs=[json.loads(l) for l in open(sys.argv[1]).read().splitlines()]
j=[o for o in objs if o.get("event")=="joined"][0]
assert j["source"]=="serve" and j["worker"]=="0" and j["slice"].startswith("MIG-") and j["state"]=="ready", j' \
  "$root/sj.err" && ok || fail "serve's JSON lines: $(cat "$root/sj.err")"
serve "$root/sw.err" --log-level warning
sleep 3
stop
! grep -q 'joined the pool\|listening on' "$root/sw.err.out" "$root/sw.err" && ok ||
  fail "serve --log-level warning: $(cat "$root/sw.err.out" "$root/sw.err")"

# worker WHAT ARGS...: a worker in the background (its stdout in $root/WHAT.out,
# stderr in $root/WHAT.err) until it listens, then SIGTERM.
worker() {
  local what=$1
  shift
  "$GS_BIN" -q "$@" worker --listen 127.0.0.1:0 --grpc-listen 127.0.0.1:0 --profile 1g.5gb \
    >"$root/$what.out" 2>"$root/$what.err" &
  spid=$!
  wait_for "$root/$what.out" 'listening on' || wait_for "$root/$what.err" 'listening on' ||
    fail "worker $*: no listening line: $(cat "$root/$what.out" "$root/$what.err")"
  stop
}
worker wj --log-format json
python3 -c 'import json,sys
objs=[json.loads(l) for l in open(sys.argv[1]).read().splitlines()]
assert all(o["source"]=="worker" for o in objs), objs
assert any("EMULATED" in o["message"] and o["level"]=="warning" for o in objs), objs
assert any(o["message"].startswith("listening on 127.0.0.1:") and o["level"]=="info" for o in objs), objs
assert any(o["message"].startswith("grpc listening on 127.0.0.1:") for o in objs), objs
assert objs[-1]["message"]=="stopped", objs' "$root/wj.err" && ok ||
  fail "worker's JSON lines: $(cat "$root/wj.err")"
[ ! -s "$root/wj.out" ] && ok || fail "worker in JSON wrote on stdout: $(cat "$root/wj.out")"
worker wt
grep -qx 'listening on 127\.0\.0\.1:[0-9]*' "$root/wt.out" && grep -qx 'grpc listening on 127\.0\.0\.1:[0-9]*' "$root/wt.out" &&
  grep -q '^gpuslice worker: EMULATED KServe v2 server' "$root/wt.err" &&
  grep -qx 'gpuslice worker: stopped' "$root/wt.err" && ok ||
  fail "worker's text lines: $(cat "$root/wt.out" "$root/wt.err")"
summary
