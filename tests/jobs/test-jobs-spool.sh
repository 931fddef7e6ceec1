#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-jobs-spool.sh: the spool never jams (issue 14, item 3). A malformed
# job file, a symbolic link, a FIFO and files whose id is not their name
# (j000001, ../../x) are moved aside to queue/bad/ with one error line each
# naming the file and why, and the valid jobs around them run; no shepherd is
# started for them (no busy loop). A job marked running by a live but
# foreign pid (pid 1, with or without its true start time) is marked lost
# and --until-empty returns. Cancel refuses what is not a job id.
# Env: GS_BIN (gpuslice), GS_TEST_TMP (scratch dir).
set -u
: "${GS_BIN:?set GS_BIN to the gpuslice binary}"
. "${GS_SRC:-$(dirname "$0")/../..}/tests/lib/common.sh"
root=$(gs_tmpdir jobs-spool) || exit 1
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$root"' EXIT
unset GPUSLICE_EMULATE GPUSLICE_JOBS_DIR GPUSLICE_MPS_CONTROL GPUSLICE_JOB_TRACKING
export GPUSLICE_EMU_STATE="$root/emu.json"
q="$root/emu.json.jobs/queue"
g() { "$GS_BIN" -q "$@"; }
drain() { timeout 60 "$GS_BIN" -q queue run --until-empty --poll-interval 20ms >"$root/out" 2>"$root/err"; }
states() { g jobs --json 2>/dev/null | python3 -c 'import json,sys; print(" ".join(x["id"]+"="+x["state"] for x in json.load(sys.stdin)))'; }

g emu reset >/dev/null && g mig enable >/dev/null && g gi create 1g.5gb,1g.5gb -C >/dev/null || { echo "setup failed"; exit 1; }
# A valid job file as a template: j000001, then copies under other names.
g queue submit --profile 1g.5gb -- sh -c 'echo ran >>"$0"' "$root/ran" >/dev/null || { echo "submit failed"; exit 1; }
cp "$q/j000001.json" "$root/template.json"
echo '{"format": "gpuslice-job", "version": 1, "id": 5' >"$q/j000002.json"               # malformed
sed 's/"id": "j000001"/"id": "j000001"/' "$root/template.json" >"$q/j000003.json"       # id of another file
sed 's#"id": "j000001"#"id": "../../x"#' "$root/template.json" >"$q/j000004.json"       # a path as id
ln -s /etc/passwd "$q/j000005.json"                                                      # a link
mkfifo "$q/j000006.json"                                                                 # a FIFO (must not hang)
g queue submit --profile 1g.5gb -- sh -c 'echo ran >>"$0"' "$root/ran" >/dev/null        # j000007

drain
rc=$?
[ "$rc" = 0 ] && ok || fail "queue run with bad files: exit $rc: $(cat "$root/err")"
[ "$(wc -l <"$root/ran" 2>/dev/null)" = 2 ] && ok || fail "the valid jobs ran $(wc -l <"$root/ran" 2>/dev/null) times, want 2"
for n in 2 3 4 5 6; do
  f=j00000$n.json
  [ -e "$q/bad/$f" ] || [ -L "$q/bad/$f" ] && ! [ -e "$q/$f" ] && ! [ -L "$q/$f" ] && ok || fail "$f was not moved to queue/bad/: $(ls -la "$q" "$q/bad")"
  [ "$(grep -c "$f" "$root/err")" = 1 ] && ok || fail "$f: want one error line, got: $(grep "$f" "$root/err")"
done
grep "j000002.json" "$root/err" | grep -q "moved to $q/bad/j000002.json" && ok || fail "the error line does not say where: $(cat "$root/err")"
grep "j000003.json" "$root/err" | grep -q "id j000001 is not its file name" && ok || fail "id mismatch not named: $(cat "$root/err")"
grep "j000004.json" "$root/err" | grep -q "id: expected j and 6 to 8 digits" && ok || fail "a path as id not named: $(cat "$root/err")"
grep "j000005.json" "$root/err" | grep -q "symbolic link" && ok || fail "the link not named: $(cat "$root/err")"
# One shepherd per valid job, none for the bad files.
[ "$(grep -c ' started: ' "$root/err")" = 2 ] && ok || fail "shepherds started: $(grep -c ' started: ' "$root/err"), want 2: $(head -5 "$root/err")"
[ "$(states)" = "j000001=done j000007=done" ] && ok || fail "jobs after the bad files: $(states)"

# A job marked running by pid 1: with pid 1's own start time, and with none.
start1=$(awk '{print $22}' /proc/1/stat)
for st in "$start1" 0; do
  rm -rf "$q"/*.json "$q"/*.log
  g queue submit --profile 1g.5gb -- true >/dev/null
  python3 - "$q" "$st" <<'EOF'
import json, sys, os, glob
path = sorted(glob.glob(sys.argv[1] + "/j*.json"))[-1]
j = json.load(open(path))
j.update(state="running", started=j["submitted"], shepherd_pid=1, shepherd_start=int(sys.argv[2]), job_pid=1)
json.dump(j, open(path + ".new", "w")); os.rename(path + ".new", path)
EOF
  drain
  rc=$?
  [ "$rc" = 0 ] && ok || fail "--until-empty with a job 'run' by pid 1 (start $st): exit $rc"
  case "$(states)" in *=lost) ok ;; *) fail "a job 'run' by pid 1 (start $st): $(states)" ;; esac
done

# Cancel: ids are validated, never used as paths.
err=$(g queue cancel ../../x 2>&1)
[ $? = 1 ] && case "$err" in *"'../../x' is not a job id"*) true ;; *) false ;; esac && ok || fail "cancel ../../x: $err"

summary
