#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-serve-lifetime.sh: serve's workers do not outlive it unnoticed.
# On an emulated A100 with two 1g.5gb devices:
# 1. kill -9 of serve: its workers die with it (PR_SET_PDEATHSIG), though
#    no one reaps or signals them;
# 2. a second serve of the same state while the first runs is refused, naming
#    the first's pid, and nothing of the first is touched; a clean stop
#    removes the pid file; a server that a worker forked (rather than
#    exec'd) survives a kill -9 of serve in a group whose leader is gone:
#    the next serve refuses to start, naming it, and does not signal it;
# 3. (root) workers that change their uid (setpriv) lose the parent-death
#    signal, as the kernel has it, and survive a kill -9 of serve; a serve
#    started again on the same fixed worker ports ends them and serves (it
#    used to fail every worker with "Address already in use" and answer 503);
# 4. (root) a serve whose uid may not signal such leftovers refuses to start,
#    naming their pids and uid.
set -uo pipefail

bin=${GS_BIN:-$(dirname "$0")/../../build/gpuslice}
src=${GS_SRC:-$(dirname "$0")/../..}
. "$src/tests/lib/common.sh"
tmp=$(gs_tmpdir serve-lifetime)
export GPUSLICE_EMU_STATE=$tmp/emu.json
serve_pid=
started=() # every worker pid seen, ended at exit whatever happened
cleanup() {
  for p in "${started[@]}"; do kill -9 "$p" 2>/dev/null; done
  serve_cleanup
}
trap cleanup EXIT

gs_emu_gis 1g.5gb,1g.5gb
state=$tmp/emu.json.serve
worker=("$bin" worker --listen '127.0.0.1:{port}' --profile '{profile}')

wait_for() { # seconds, command...
  local until=$((SECONDS + $1))
  shift
  while [ $SECONDS -lt $until ]; do "$@" && return 0; sleep 0.1; done
  return 1
}
joined() { [ "$(grep -c 'joined the pool' "$1" 2>/dev/null)" -ge "$2" ] 2>/dev/null; }
alive() { # pid...: all alive (zombies are not)
  local p
  for p; do [ -r "/proc/$p/stat" ] && [ "$(awk '{print $3}' "/proc/$p/stat")" != Z ] || return 1; done
}
none_alive() { local p; for p; do alive "$p" && return 1; done; return 0; }
start() { # out-file, then serve options and command
  local out=$1
  shift
  "$bin" -q serve --listen 127.0.0.1:0 --admin-listen off "$@" >"$out" 2>&1 &
  serve_pid=$!
}
workers_of() { pgrep -P "$1" | tr '\n' ' '; }

# ---- 1. kill -9: the workers die with serve ----
start "$tmp/s1.out" --ephemeral-ports -- "${worker[@]}"
if wait_for 30 joined "$tmp/s1.out" 2; then ok; else fail "serve 1: workers not ready: $(cat "$tmp/s1.out")"; fi
read -ra pids <<<"$(workers_of "$serve_pid")"
started+=("${pids[@]}")
[ "${#pids[@]}" -eq 2 ] && ok || fail "serve 1 has ${#pids[@]} workers, not 2"
grep -q "^worker 0 ${pids[0]} " "$state/serve.pid" && grep -q "^serve $serve_pid " "$state/serve.pid" &&
  ok || fail "the pid file lists serve and its workers: $(cat "$state/serve.pid" 2>&1)"
kill -9 "$serve_pid"
wait "$serve_pid" 2>/dev/null
serve_pid=
if wait_for 10 none_alive "${pids[@]}"; then
  ok
  echo "ok: kill -9 of serve: its workers ${pids[*]} died with it"
else
  fail "kill -9 of serve left its workers running: ${pids[*]}"
fi

# ---- 2. a live serve is refused by name; a clean stop removes the pid file ----
start "$tmp/s2.out" --ephemeral-ports -- "${worker[@]}"
first=$serve_pid
wait_for 30 joined "$tmp/s2.out" 2 || fail "serve 2: workers not ready: $(cat "$tmp/s2.out")"
read -ra pids <<<"$(workers_of "$first")"
started+=("${pids[@]}")
timeout 20 "$bin" -q serve --listen 127.0.0.1:0 --admin-listen off --ephemeral-ports -- "${worker[@]}" \
  >"$tmp/s3.out" 2>&1
rc=$?
if [ "$rc" -eq 1 ] && grep -q "another gpuslice serve (pid $first) runs with the state directory $state" "$tmp/s3.out"; then
  ok
else
  fail "a second serve of the same state: exit $rc, not 1 naming pid $first: $(head -c 400 "$tmp/s3.out")"
fi
alive "$first" "${pids[@]}" && ok || fail "the refused serve touched the running one"
kill -TERM "$first"
wait "$first"
rc=$?
serve_pid=
[ "$rc" -eq 0 ] && ok || fail "serve 2 exited $rc after SIGTERM"
[ ! -e "$state/serve.pid" ] && ok || fail "a clean stop left $state/serve.pid"

# ---- 2b. what a worker forked survives it; the next serve names it ----
# A wrapper that forks the server instead of exec'ing it: SIGKILL of serve
# kills the wrapper (its parent-death signal) but not the server, left in the
# wrapper's process group with its leader gone. Such a group's id may have
# been reused, so the next serve does not signal it: it refuses, naming it.
wrapper=(sh -c '"$0" worker --listen "127.0.0.1:$1" & wait' "$bin" '{port}')
start "$tmp/s2b.out" --ephemeral-ports -- "${wrapper[@]}"
wait_for 30 joined "$tmp/s2b.out" 2 || fail "serve 2b: workers not ready: $(cat "$tmp/s2b.out")"
read -ra shells <<<"$(workers_of "$serve_pid")"
orphans=()
for sh_pid in "${shells[@]}"; do read -ra kids <<<"$(workers_of "$sh_pid")"; orphans+=("${kids[@]}"); done
started+=("${shells[@]}" "${orphans[@]}")
kill -9 "$serve_pid"
wait "$serve_pid" 2>/dev/null
serve_pid=
wait_for 10 none_alive "${shells[@]}" && ok || fail "the wrappers ${shells[*]} outlived serve"
alive "${orphans[@]}" && ok || fail "the servers the wrappers forked (${orphans[*]}) died too"
timeout 30 "$bin" -q serve --listen 127.0.0.1:0 --admin-listen off --ephemeral-ports -- "${worker[@]}" \
  >"$tmp/s2c.out" 2>&1
rc=$?
named=0
for p in "${orphans[@]}"; do grep -q "processes of an earlier serve's workers still run: pids .*\b$p\b" "$tmp/s2c.out" && named=$((named + 1)); done
if [ "$rc" -eq 1 ] && [ "$named" -eq "${#orphans[@]}" ] && [ "$named" -eq 2 ]; then
  ok
else
  fail "leftovers of gone workers: exit $rc, not 1 naming ${orphans[*]}: $(head -c 400 "$tmp/s2c.out")"
fi
alive "${orphans[@]}" && ok || fail "the named leftovers were signalled"
kill -9 "${orphans[@]}"
wait_for 10 none_alive "${orphans[@]}" || fail "the leftovers do not go"

if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null; then
  echo "skip: parts 3 and 4 need root and setpriv (workers of another uid)"
  summary
  exit
fi
if ! gs_open_to_all "$bin" || ! gs_open_to_all "${tmp%/*}"; then
  echo "skip: parts 3 and 4: another uid cannot reach $bin or ${tmp%/*} (a folder above is not o+x)"
  summary
  exit
fi

# ---- 3. workers of another uid survive kill -9; the next serve ends them ----
base=$(python3 - <<'EOF'
import random, socket
for _ in range(200):  # six consecutive free ports: two workers x 3
    b = random.randrange(20000, 60000, 3)
    socks = []
    try:
        for p in range(b, b + 6):
            s = socket.socket()
            s.bind(("127.0.0.1", p))
            socks.append(s)
        print(b)
        break
    except OSError:
        pass
    finally:
        for s in socks:
            s.close()
EOF
)
nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
chmod 755 "$tmp" # the workers, as nobody, read nothing there but need to pass
start "$tmp/s4.out" --port-base "$base" -- "${nobody[@]}" "${worker[@]}"
wait_for 30 joined "$tmp/s4.out" 2 || fail "serve 4: workers not ready: $(cat "$tmp/s4.out")"
read -ra old <<<"$(workers_of "$serve_pid")"
started+=("${old[@]}")
kill -9 "$serve_pid"
wait "$serve_pid" 2>/dev/null
serve_pid=
sleep 1
if alive "${old[@]}"; then
  ok
  echo "ok: workers that changed their uid outlive a kill -9 of serve (${old[*]})"
else
  fail "workers of uid nobody died with serve; this part tests their ending by the next serve"
fi
start "$tmp/s5.out" --port-base "$base" -- "${nobody[@]}" "${worker[@]}"
if wait_for 60 joined "$tmp/s5.out" 2; then
  ok
else
  fail "serve on the same ports after a kill -9: workers not ready: $(tail -c 600 "$tmp/s5.out")"
fi
grep -q "ended 2 workers an earlier serve left running" "$tmp/s5.out" && ok ||
  fail "the restarted serve does not say it ended 2 workers: $(head -c 400 "$tmp/s5.out")"
none_alive "${old[@]}" && ok || fail "the old workers still run: ${old[*]}"
port=$(sed -n 's/^listening on 127.0.0.1:\([0-9]*\),.*/\1/p' "$tmp/s5.out")
answer=$(exec 3<>"/dev/tcp/127.0.0.1/$port" &&
  printf 'GET /v2/health/ready HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' >&3 &&
  head -1 <&3)
[[ "$answer" == "HTTP/1.1 200"* ]] && ok || fail "a request through the restarted serve: '$answer'"

# ---- 4. leftovers this uid may not signal: refused by name ----
read -ra old <<<"$(workers_of "$serve_pid")"
started+=("${old[@]}")
kill -9 "$serve_pid"
wait "$serve_pid" 2>/dev/null
serve_pid=
# The same record, in a state directory of uid 1 (daemon), whose serve may
# not signal uid 65534's processes.
mkdir "$tmp/daemon-state"
cp "$state/serve.pid" "$tmp/daemon-state/"
chown -R 1:1 "$tmp/daemon-state"
chmod 700 "$tmp/daemon-state"
# And a jobs directory (its claims ledger) of its own: the machine's is
# root's, private.
mkdir -m 700 "$tmp/daemon-jobs" && chown 1:1 "$tmp/daemon-jobs"
timeout 30 setpriv --reuid=1 --regid=1 --clear-groups env GPUSLICE_JOBS_DIR="$tmp/daemon-jobs" \
  "$bin" -q serve --listen 127.0.0.1:0 --admin-listen off --ephemeral-ports --state-dir "$tmp/daemon-state" -- "${worker[@]}" \
  >"$tmp/s6.out" 2>&1
rc=$?
if [ "$rc" -eq 1 ] && grep -q "may not end them: pids .*${old[0]} (uid 65534)" "$tmp/s6.out" &&
  grep -q "may not end them: pids .*${old[1]} (uid 65534)" "$tmp/s6.out"; then
  ok
else
  fail "another uid's leftovers: exit $rc, not 1 naming ${old[*]}: $(head -c 400 "$tmp/s6.out")"
fi
alive "${old[@]}" && ok || fail "the refused serve's leftovers were touched"
summary
