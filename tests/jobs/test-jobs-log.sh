#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-jobs-log.sh: `gpuslice jobs` shows each started job's log path (text
# and --json), and `gpuslice jobs log ID` prints it (issue 17, item 6):
# stdout and stderr as the job wrote them; for a queued or cancelled job it
# says there is none yet; it never reads through a link, never blocks on a
# FIFO planted at the path, and refuses a log its job's user does not own.
# With two accounts (when root): a user reads their own job's log, not
# another user's; root reads both.
# Env: GS_BIN (gpuslice), GS_TEST_TMP (scratch dir).
set -u
: "${GS_BIN:?set GS_BIN to the gpuslice binary}"
. "${GS_SRC:-$(dirname "$0")/../..}/tests/lib/common.sh"
root=$(gs_tmpdir jobs-log) || exit 1
ua= ub=
cleanup() {
  if [ -n "$ua" ]; then
    pkill -9 -u "$ua" 2>/dev/null; pkill -9 -u "$ub" 2>/dev/null
    userdel "$ua" 2>/dev/null; userdel "$ub" 2>/dev/null
  fi
  rm -rf "$root"
}
trap cleanup EXIT
unset GPUSLICE_EMULATE GPUSLICE_JOBS_DIR GPUSLICE_JOB_TRACKING
chmod 755 "$root"
export GPUSLICE_EMU_STATE="$root/emu.json"
g() { "$GS_BIN" -q "$@"; }
g emu reset --emulate a100-40gb >/dev/null && g mig enable >/dev/null &&
  g gi create 1g.5gb,1g.5gb -C >/dev/null || { echo "FAIL: setup"; exit 1; }
Q=$root/emu.json.jobs/queue

g queue submit --profile 1g.5gb -- sh -c 'echo out line; echo err line >&2; echo "arg: $0"' x >/dev/null &&
  g queue submit --profile 1g.5gb -- true >/dev/null || fail "submit"
g queue cancel j000002 >/dev/null || fail "cancel"
g queue submit --profile 1g.5gb -- true >/dev/null || fail "submit"
out=$(g jobs log j000003 2>&1)
rc=$?
[ "$rc" = 1 ] && case "$out" in *"job j000003 has no log: it has not started yet"*) true ;; *) false ;; esac &&
  ok || fail "a queued job's log: exit $rc: $out"
[ "$(g jobs --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[2]["log"])')" = None ] && ok ||
  fail "a queued job has a log in --json: $(g jobs --json)"
timeout 60 "$GS_BIN" -q queue run --until-empty --poll-interval 50ms >/dev/null 2>"$root/q.err" ||
  fail "queue run: $(cat "$root/q.err")"

# The path, in the table and in --json.
out=$(g jobs)
echo "$out" | grep -q "^j000001 .* $Q/j000001.log sh -c" && ok || fail "no log path in: $out"
echo "$out" | grep -q "^j000002 .*cancelled .* - *true" && ok || fail "a cancelled job shows a log: $out"
[ "$(g jobs --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["log"])')" = "$Q/j000001.log" ] &&
  ok || fail "--json log: $(g jobs --json)"

# Its output, as written.
out=$(g jobs log j000001)
rc=$?
[ "$rc" = 0 ] && [ "$out" = "$(printf 'out line\nerr line\narg: x')" ] && ok || fail "jobs log j000001: exit $rc: '$out'"
out=$(g jobs log j000002 2>&1)
[ $? = 1 ] && case "$out" in *"j000002 has no log: it was cancelled before it started"*) true ;; *) false ;; esac &&
  ok || fail "a cancelled job's log: $out"
for bad in j000099 j9 ../j000001 ""; do
  out=$(g jobs log "$bad" 2>&1)
  rc=$?
  [ "$rc" = 1 ] && case "$out" in *"no job j000099"*|*"is not a job id"*) true ;; *) false ;; esac && ok ||
    fail "jobs log '$bad': exit $rc: $out"
done
out=$(g jobs log 2>&1); [ $? = 2 ] && ok || fail "jobs log without an id: $out"
out=$(g jobs log j000001 j000003 2>&1); [ $? = 2 ] && ok || fail "jobs log with two ids: $out"

# What may be planted at a log's path is never read.
echo "secret" >"$root/secret"
mv "$Q/j000001.log" "$root/j1.log"
ln -s "$root/secret" "$Q/j000001.log"
out=$(g jobs log j000001 2>&1)
rc=$?
[ "$rc" != 0 ] && case "$out" in *secret*) false ;; *"symbolic link"*) true ;; *) false ;; esac && ok ||
  fail "a link at the log's path: exit $rc: $out"
rm "$Q/j000001.log"; mkfifo "$Q/j000001.log"
out=$(timeout 10 "$GS_BIN" -q jobs log j000001 2>&1)
rc=$?
[ "$rc" != 0 ] && [ "$rc" != 124 ] && case "$out" in *"not a regular file"*) true ;; *) false ;; esac && ok ||
  fail "a FIFO at the log's path: exit $rc: $out"
# A file of another account (65534, nobody) or of a uid that is no account.
rm "$Q/j000001.log"; cp "$root/j1.log" "$Q/j000001.log"; chown 65534 "$Q/j000001.log"
out=$(g jobs log j000001 2>&1)
rc=$?
[ "$rc" != 0 ] && case "$out" in *"is uid 65534's, not uid 0's"*) true ;; *) false ;; esac && ok ||
  fail "a log of another account: exit $rc: $out"
chown 4000001 "$Q/j000001.log"
out=$(g jobs log j000001 2>&1)
rc=$?
[ "$rc" != 0 ] && case "$out" in *secret*) false ;; *"no account here"*) true ;; *) false ;; esac &&
  ok || fail "a log of a uid that is no account: exit $rc: $out"

# Two users: each reads only their own job's log; root reads both.
if [ "$(id -u)" != 0 ] || ! command -v useradd >/dev/null || ! command -v runuser >/dev/null; then
  echo "skip: the two-user part needs root, useradd and runuser"
  summary; exit
fi
if ! gs_open_to_all "$GS_BIN" || ! gs_open_to_all "${root%/*}"; then
  echo "skip: the two-user part: other users cannot reach $GS_BIN or ${root%/*} (a folder above is not o+x)"
  summary; exit
fi
tag=gsl$$$((RANDOM % 1000))
ua=${tag}a ub=${tag}b
useradd -M -U -s /bin/sh "$ua" && useradd -M -U -s /bin/sh "$ub" || { fail "cannot make the test's accounts"; summary; exit; }
chmod 644 "$root"/emu.json*
S=$root/spool
install -d -m 1777 "$S"
export GPUSLICE_JOBS_DIR=$S # runuser keeps the environment
gu() { local u=$1; shift; runuser -u "$u" -- "$GS_BIN" -q "$@"; }
g jobs >/dev/null || fail "laying out the shared directory"
gu "$ua" queue submit --profile 1g.5gb -- sh -c 'echo "from $(id -un)"' >/dev/null || fail "$ua submits"
timeout 60 "$GS_BIN" -q queue run --until-empty --poll-interval 50ms >/dev/null 2>"$root/q2.err" ||
  fail "root's runner: $(cat "$root/q2.err")"
out=$(gu "$ua" jobs log j000001 2>&1)
[ "$out" = "from $ua" ] && ok || fail "$ua reads their own log: $out"
out=$(gu "$ub" jobs log j000001 2>&1)
rc=$?
[ "$rc" = 1 ] && case "$out" in *"job j000001 is another user's; only root reads other users' logs"*) true ;;
  *) false ;; esac && ok || fail "$ub reads $ua's log: exit $rc: $out"
# Even if ua makes the job file readable to all, ub still may not.
chmod 644 "$S/queue/j000001.json" "$S/queue/j000001.log"
out=$(gu "$ub" jobs log j000001 2>&1)
[ $? = 1 ] && case "$out" in *"another user's"*) true ;; *) false ;; esac && ok || fail "$ub, files made readable: $out"
out=$(g jobs log j000001 2>&1)
[ "$out" = "from $ua" ] && ok || fail "root reads $ua's log: $out"
summary
