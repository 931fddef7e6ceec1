#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-jobs-leftovers.sh: every process a job starts is ended before its slice
# is handed on (issue 14, item 2). On one emulated 3g.20gb slice, a queued job
# forks children plainly, with setsid, double-forked, and one that ignores
# SIGTERM, then exits; the next job on the slice checks at its start that
# none of them is alive. After the queue empties none is alive, and `gpuslice
# jobs` says how many leftovers were killed. Once with the cgroup v2 tracking
# (where this machine lets us make a cgroup: skipped with a message where
# not) and once with the subreaper fallback; `gpuslice run` ends its job's
# leftovers too. Env: GS_BIN (gpuslice), GS_TEST_TMP (scratch dir).
set -u
: "${GS_BIN:?set GS_BIN to the gpuslice binary}"
. "${GS_SRC:-$(dirname "$0")/../..}/tests/lib/common.sh"
root=$(gs_tmpdir jobs-leftovers) || exit 1
cleanup() {
  for f in "$root"/pids.*; do [ -f "$f" ] && kill -9 $(cat "$f") 2>/dev/null; done
  kill $(jobs -p) 2>/dev/null
  rm -rf "$root"
}
trap cleanup EXIT
unset GPUSLICE_EMULATE GPUSLICE_JOBS_DIR GPUSLICE_MPS_CONTROL
export GPUSLICE_EMU_STATE="$root/emu.json"
g() { "$GS_BIN" -q "$@"; }
# Alive, a zombie aside.
alive() { local st; st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null); [ -n "$st" ] && [ "$st" != Z ]; }
any_alive() { for p in $(cat "$1" 2>/dev/null); do alive "$p" && return 0; done; return 1; }

# The job: four kinds of children, their pids in $1, then it exits at once.
cat >"$root/spawner.sh" <<'EOF'
pids=$1
sleep 300 & echo $! >>"$pids"
setsid sleep 301 & echo $! >>"$pids"
sh -c 'sleep 302 & echo $! >>"$0"' "$pids"            # orphaned at once: a double fork
setsid sh -c 'trap "" TERM; echo $$ >>"$0"; while :; do sleep 1; done' "$pids" &
while [ "$(wc -l <"$pids")" -lt 4 ]; do sleep 0.05; done
EOF
# The next job: are any of the first job's children alive when it starts?
cat >"$root/checker.sh" <<'EOF'
for p in $(cat "$1"); do
  st=$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null)
  [ -n "$st" ] && [ "$st" != Z ] && echo "alive $p" >>"$2"
done
echo checked >>"$2"
EOF

cgroup_ok() {
  local d
  d=$(awk '$3=="cgroup2"{print $2; exit}' /proc/self/mounts)
  [ -n "$d" ] && [ "$(id -u)" = 0 ] && mkdir "$d/gs-test-probe-$$" 2>/dev/null && rmdir "$d/gs-test-probe-$$"
}

for how in cgroup subreaper; do
  if [ "$how" = cgroup ] && ! cgroup_ok; then
    echo "skip: no writable cgroup v2 here (not root, or no cgroup2 mount): the cgroup case is not run"
    continue
  fi
  export GPUSLICE_JOB_TRACKING=$how
  rm -rf "$root/emu.json.jobs" "$root"/pids.* "$root"/seen.*
  g emu reset >/dev/null && g mig enable >/dev/null && g gi create 3g.20gb -C >/dev/null || { echo "setup failed"; exit 1; }
  g queue submit --profile 3g.20gb -- sh "$root/spawner.sh" "$root/pids.$how" >/dev/null
  g queue submit --profile 3g.20gb -- sh "$root/checker.sh" "$root/pids.$how" "$root/seen.$how" >/dev/null
  timeout 120 "$GS_BIN" -q queue run --until-empty --poll-interval 50ms --grace-period 500ms >"$root/out" 2>&1 ||
    fail "$how: queue run: $(tail -3 "$root/out")"
  [ "$(wc -l <"$root/pids.$how")" = 4 ] && ok || fail "$how: the job did not start its 4 children"
  any_alive "$root/pids.$how" && fail "$how: leftovers alive after the queue emptied: $(cat "$root/pids.$how")" || ok
  [ "$(cat "$root/seen.$how" 2>/dev/null)" = checked ] && ok ||
    fail "$how: the next job on the slice saw: $(cat "$root/seen.$how" 2>/dev/null)"
  g jobs --json | python3 -c 'import json,sys
a=json.load(sys.stdin)[0]; sys.exit(0 if a["leftovers_killed"]>=4 and a["tracking"]==sys.argv[1] and a["exit_status"]==0 else 1)' "$how" &&
    ok || fail "$how: the record of the leftovers: $(g jobs --json | head -40)"
  g jobs | grep -q "^j000001: [0-9]* leftover processes killed after the job ended (found by $how)" && ok ||
    fail "$how: gpuslice jobs does not say the leftovers were killed: $(g jobs)"
  if [ "$how" = cgroup ]; then
    # The shepherds' pids name their jobs' cgroups: gpuslice-<id>-<shepherd pid>.
    left=$(for f in "$root"/emu.json.jobs/queue/j*.json; do
      python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print("gpuslice-%s-%d" % (j["id"], j["shepherd_pid"]))' "$f"
    done | while read -r n; do find /sys/fs/cgroup -maxdepth 4 -type d -name "$n" 2>/dev/null; done)
    [ -z "$left" ] && ok || fail "a job's cgroup was left behind: $left"
  fi
done

# gpuslice run: the same before it releases the slice.
unset GPUSLICE_JOB_TRACKING
rm -f "$root/pids.run"
err=$(g run --profile 3g.20gb -- sh "$root/spawner.sh" "$root/pids.run" 2>&1 >/dev/null)
any_alive "$root/pids.run" && fail "run: leftovers alive after it returned" || ok
"$GS_BIN" run --profile 3g.20gb -- sh "$root/spawner.sh" "$root/pids.run2" 2>&1 >/dev/null |
  grep -Eq "killed [4-9] leftover processes after it ended" && ok || fail "run does not say it killed the leftovers"

summary
