#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-jobs-users.sh: jobs run as their submitter in a shared (mode 1777)
# jobs directory (issue 14, item 1), with two real accounts this test makes
# (and removes on exit, also on failure; unique names so parallel runs do not
# collide). Any user can submit; nobody can read, rewrite or cancel another's
# job; a job runs with its submitter's uid, gid and supplementary groups
# (from its file's owner, not its text: a job whose file says uid 0 still
# runs as its owner), its log created by that user, mode 0600; a user's own
# runner runs only that user's jobs and says so for the others; root's
# runner sets aside a job file of a uid that is no account or that others
# may write, and never writes a job's log through a link planted at its name;
# the shared lock files are root's. Needs root (useradd); skips with a message otherwise.
# Env: GS_BIN (gpuslice), GS_TEST_TMP (scratch dir).
set -u
: "${GS_BIN:?set GS_BIN to the gpuslice binary}"
. "${GS_SRC:-$(dirname "$0")/../..}/tests/lib/common.sh"
if [ "$(id -u)" != 0 ] || ! command -v useradd >/dev/null || ! command -v runuser >/dev/null; then
  echo "skip: needs root, useradd and runuser to make the test's accounts"
  exit 0
fi
tag=gsj$$$((RANDOM % 1000))
ua=${tag}a ub=${tag}b grp=${tag}g
root=$(gs_tmpdir jobs-users) || exit 1
if ! gs_open_to_all "$GS_BIN" || ! gs_open_to_all "${root%/*}"; then
  echo "skip: the test's accounts cannot reach $GS_BIN or ${root%/*} (a folder above is not o+x)"
  rm -rf "$root"
  exit 0
fi
cleanup() {
  kill $(jobs -p) 2>/dev/null
  pkill -9 -u "$ua" 2>/dev/null; pkill -9 -u "$ub" 2>/dev/null
  userdel "$ua" 2>/dev/null; userdel "$ub" 2>/dev/null; groupdel "$grp" 2>/dev/null
  rm -rf "$root"
}
trap cleanup EXIT
groupadd "$grp" && useradd -M -U -s /bin/sh -G "$grp" "$ua" && useradd -M -U -s /bin/sh "$ub" ||
  { echo "FAIL: cannot make the test's accounts"; exit 1; }
uid_a=$(id -u "$ua") uid_b=$(id -u "$ub") gid_b=$(id -g "$ub") gid_g=$(getent group "$grp" | cut -d: -f3)

unset GPUSLICE_EMULATE GPUSLICE_JOBS_DIR GPUSLICE_MPS_CONTROL GPUSLICE_JOB_TRACKING
chmod 755 "$root"
export GPUSLICE_EMU_STATE="$root/emu.json"
S="$root/spool"
g() { "$GS_BIN" -q "$@"; }
as() { local u=$1; shift; runuser -u "$u" -- "$@"; }
gu() { local u=$1; shift; as "$u" "$GS_BIN" -q "$@"; }
state_of() { g jobs --json | python3 -c 'import json,sys; print([x["state"] for x in json.load(sys.stdin) if x["id"]==sys.argv[1]][0])' "$1"; }

g emu reset >/dev/null && g mig enable >/dev/null && g gi create 1g.5gb,1g.5gb -C >/dev/null || { echo "setup failed"; exit 1; }
chmod 644 "$root"/emu.json*
install -d -m 1777 "$S"
export GPUSLICE_JOBS_DIR="$S"   # runuser keeps the environment
# Root lays the shared directory out: queue/ and claims/ root's, mode 1777;
# the lock files root's, 0644: every user opens them read-only to flock, and
# gpuslice trusts a lock file only if it is the caller's or root's.
g jobs >/dev/null && [ "$(stat -c '%U %a' "$S/queue")" = "root 1777" ] && ok ||
  fail "the shared layout: $(ls -la "$S")"
locks=$(cd "$S" && stat -c '%n %U %a' queue.lock queue-runner.lock claims.json.lock 2>&1 | tr '\n' ' ')
[ "$locks" = "queue.lock root 644 queue-runner.lock root 644 claims.json.lock root 644 " ] && ok ||
  fail "the shared lock files: $locks"
# A lock file a user made there (as an older gpuslice let the first comer)
# is refused by everyone, naming it and the fix.
S2="$root/spool2"
install -d -m 1777 "$S2" && g jobs --jobs-dir "$S2" >/dev/null && chown "$ua" "$S2/queue.lock"
err=$(gu "$ua" jobs --jobs-dir "$S2" 2>&1)
[ $? != 0 ] && case "$err" in *"$S2/queue.lock: in a shared jobs directory it must be a file of root's"*"chown root $S2/queue.lock"*) true ;; *) false ;; esac &&
  ok || fail "$ua's own lock file in a shared directory: $err"
err=$(gu "$ub" jobs --jobs-dir "$S2" 2>&1)
[ $? != 0 ] && case "$err" in *"$S2/queue.lock belongs to uid $uid_a ($ua)"*) true ;; *) false ;; esac &&
  ok || fail "$ua's lock file, for $ub: $err"
err=$(g jobs --jobs-dir "$S2" 2>&1)
[ $? != 0 ] && case "$err" in *"$S2/queue.lock belongs to uid $uid_a ($ua)"*"remove it"*) true ;; *) false ;; esac &&
  ok || fail "$ua's lock file, for root: $err"

# Both users submit (on main the second could not: queue/ was the first's, 0755).
job='echo "uid=$(id -u) gid=$(id -g) groups=$(id -G) home=$HOME user=$USER"'
gu "$ua" queue submit --profile 1g.5gb -- sh -c "$job" >/dev/null && ok || fail "$ua cannot submit"
gu "$ub" queue submit --profile 1g.5gb -- sh -c "$job" >/dev/null && ok || fail "$ub cannot submit"
a=$S/queue/j000001.json b=$S/queue/j000002.json
[ "$(stat -c '%U %a' "$a" 2>/dev/null)" = "$ua 600" ] && ok || fail "$ua's job file: $(ls -l "$a" 2>&1)"

# Nobody reads, rewrites, replaces or cancels another's job.
sum=$(sha256sum <"$a")
as "$ub" cat "$a" >/dev/null 2>&1 && fail "$ub read $ua's job" || ok
as "$ub" sh -c "echo '{}' >'$a'" 2>/dev/null; as "$ub" sh -c "echo '{}' >'$S/queue/x' && mv -f '$S/queue/x' '$a'" 2>/dev/null
as "$ub" rm -f "$a" 2>/dev/null
[ "$(sha256sum <"$a" 2>/dev/null)" = "$sum" ] && ok || fail "$ub changed $ua's job file"
err=$(gu "$ub" queue cancel j000001 2>&1)
[ $? != 0 ] && case "$err" in *"another user's"*) true ;; *) false ;; esac && ok || fail "$ub cancelling $ua's job: $err"
out=$(gu "$ub" jobs)
case "$out" in *j000002*) case "$out" in *j000001*) fail "$ub lists $ua's job: $out" ;; *) ok ;; esac ;; *) fail "$ub's jobs: $out" ;; esac

# The file's text does not say who a job is: ua labels its job root, uid 0.
as "$ua" python3 -c 'import json,os,sys
p=sys.argv[1]; j=json.load(open(p)); j.update(uid=0, user="root")
open(p+".t","w").write(json.dumps(j)); os.chmod(p+".t", 0o600); os.rename(p+".t", p)' "$a" || fail "$ua cannot edit its own job"

# ua's own runner: runs ua's job, says it leaves ub's.
as "$ua" timeout 60 "$GS_BIN" -q queue run --until-empty --poll-interval 50ms >"$root/qa.out" 2>"$root/qa.err"
[ $? = 0 ] && ok || fail "$ua's runner: $(cat "$root/qa.err")"
[ "$(state_of j000001)" = done ] && [ "$(state_of j000002)" = queued ] && ok ||
  fail "after $ua's runner: j000001 $(state_of j000001), j000002 $(state_of j000002)"
grep -q "j000002.json skipped: not started: it is uid $uid_b's job and this runner (uid $uid_a) starts only its own user's" "$root/qa.err" &&
  ok || fail "$ua's runner does not say why it left $ub's job: $(cat "$root/qa.err")"
grep -q "^uid=$uid_a .*groups=.*\b$gid_g\b" "$S/queue/j000001.log" && ok || fail "$ua's job ran as: $(cat "$S/queue/j000001.log")"

# Root's runner: ub's job runs as ub (uid, gid, groups, HOME/USER), log ub's, 0600.
# Files root must not run: of a uid that is no account, writable by others.
cp "$b" "$S/queue/j000003.json" && sed -i 's/"j000002"/"j000003"/' "$S/queue/j000003.json" && chown 3999999 "$S/queue/j000003.json"
as "$ua" cp "$b" "$S/queue/j000004.json" 2>/dev/null || as "$ua" sh -c "cat '$S/queue/j000001.json' >'$S/queue/j000004.json'"
as "$ua" sed -i 's/"j00000[12]"/"j000004"/' "$S/queue/j000004.json"; as "$ua" chmod 666 "$S/queue/j000004.json"
# A link another user plants at a job's log name (queue/ is shared): the job's
# user never writes through it; the job ends saying why, the target unchanged.
gu "$ub" queue submit --profile 1g.5gb -- true >/dev/null || fail "$ub cannot submit j000005"
printf 'untouched\n' >"$root/target" && chown "$ub" "$root/target" && chmod 600 "$root/target"
as "$ua" ln -s "$root/target" "$S/queue/j000005.log"
timeout 60 "$GS_BIN" -q queue run --until-empty --poll-interval 50ms >"$root/q.out" 2>"$root/q.err"
[ $? = 0 ] && ok || fail "root's runner: $(cat "$root/q.err")"
reason=$(g jobs --json | python3 -c 'import json,sys; print([x["reason"] for x in json.load(sys.stdin) if x["id"]=="j000005"][0])')
case "$reason" in *"cannot run true as $ub: $S/queue/j000005.log is a symbolic link"*) ok ;;
  *) fail "a job whose log name is a planted link: '$reason'" ;; esac
[ "$(cat "$root/target")" = untouched ] && ok || fail "the job wrote through a planted link: $(cat "$root/target")"
line=$(cat "$S/queue/j000002.log" 2>/dev/null)
[ "$line" = "uid=$uid_b gid=$gid_b groups=$gid_b home=$(getent passwd "$ub" | cut -d: -f6) user=$ub" ] && ok ||
  fail "$ub's job under root's runner ran as: $line (want uid=$uid_b gid=$gid_b groups=$gid_b)"
[ "$(stat -c '%U %a' "$S/queue/j000002.log" 2>/dev/null)" = "$ub 600" ] && ok || fail "$ub's log: $(ls -l "$S/queue/j000002.log")"
[ "$(stat -c '%U' "$b")" = "$ub" ] && ok || fail "root's runner took $ub's job file over: $(ls -l "$b")"
# (The reasons are util's safe open's, which reads every job file: each
# names the file and the fix.)
grep -q "j000003.json set aside: $S/queue/j000003.json is owned by uid 3999999, which is no account here.*chown.*; moved to" "$root/q.err" && ok ||
  fail "a job file of no account: $(cat "$root/q.err")"
grep -q "j000004.json set aside: $S/queue/j000004.json is writable by others (mode 0666).*chmod go-w .*; moved to" "$root/q.err" && ok ||
  fail "a job file others may write: $(cat "$root/q.err")"
[ -e "$S/queue/bad/j000003.json" ] && [ -e "$S/queue/bad/j000004.json" ] && ok || fail "refused files not in queue/bad/"

summary
