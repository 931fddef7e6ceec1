#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-autoscale.sh: `gpuslice serve --latency-budget` on an emulated
# A100-40GB with MIG on and one 1g.5gb slice of another tenant: it grows to
# its minimum from free capacity without touching the other slice; after a
# kill -9 of serve its workers die with it (PR_SET_PDEATHSIG), and a
# restarted serve adopts its instances (no instance or worker leaked); with a minimum it
# cannot reach it says "no free capacity" once, not in a loop; SIGTERM
# destroys its own instances and leaves the other tenant's; the serve file takes
# the same keys, and a bad value there is refused naming its line.
set -uo pipefail

bin=${GS_BIN:-$(dirname "$0")/../../build/gpuslice}
tmp=$(mktemp -d "${GS_TEST_TMP:-/tmp}/autoscale.XXXXXX" 2>/dev/null || mktemp -d)
export GPUSLICE_EMU_STATE=$tmp/emu.json
serve_pid=
pass=0 fail=0
cleanup() {
  [ -n "$serve_pid" ] && kill -9 "$serve_pid" 2>/dev/null
  # orphans of the killed serve, if a check failed before the restart
  for p in $(cat "$tmp"/pids 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
ok() { echo "ok: $1"; pass=$((pass + 1)); }
bad() { echo "FAIL: $1"; fail=$((fail + 1)); }
finish() { echo "$pass passed, $fail failed"; [ "$fail" -eq 0 ]; exit $?; }

"$bin" -q emu reset --emulate a100-40gb >/dev/null &&
  "$bin" -q mig enable -i 0 >/dev/null &&
  "$bin" -q gi create 1g.5gb -C -i 0 >/dev/null || { bad "setup"; finish; }
other=$("$bin" -q list --json | grep -o 'MIG-[0-9a-f-]*' | head -1)
[ -n "$other" ] || { bad "the other tenant's slice has no UUID"; finish; }

# Generous: ASan on two busy cores starts workers slowly.
wait_for() { # seconds, command...
  local until=$((SECONDS + $1)); shift
  while [ $SECONDS -lt $until ]; do "$@" && return 0; sleep 0.3; done
  return 1
}
port_of() { sed -n 's/^listening on 127.0.0.1:\([0-9]*\),.*/\1/p' "$1" | head -1; }
metric() { # port name
  (exec 3<>/dev/tcp/127.0.0.1/"$1" && printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3 && cat <&3) 2>/dev/null |
    sed -n "s/^$2 \([0-9]*\).*/\1/p"
}
metric_is() { test "$(metric "$port" "$1")" = "$2"; } # evaluated at each try
instances() { "$bin" -q gi list -i 0 --json 2>/dev/null | grep -c '"profile_id"'; }
start_serve() { # log, then more serve options
  local log=$1
  shift
  "$bin" serve -i 0 --listen 127.0.0.1:0 --admin-listen 127.0.0.1:0 --ephemeral-ports \
    --latency-budget p90=50ms "$@" --scale-window 60s --scale-cooldown 60s \
    --scale-state "$tmp/scale.json" --log-dir "$tmp/logs" --drain-timeout 2000 \
    -- "$bin" worker --listen 127.0.0.1:{port} --model flower --profile {profile} >"$log" 2>&1 &
  serve_pid=$!
  wait_for 60 grep -q '^listening on' "$log"
}

# 1. grows to the minimum (3 slices: the other tenant's + 2 own)
start_serve "$tmp/serve1.log" --slices 3..5 || { bad "serve did not start"; cat "$tmp/serve1.log"; finish; }
port=$(port_of "$tmp/serve1.log")
if wait_for 90 metric_is gpuslice_autoscale_slices 3; then ok "grew to 3 slices"
else bad "did not reach 3 slices: $(metric "$port" gpuslice_autoscale_slices)"; cat "$tmp/serve1.log"; fi
[ "$(metric "$port" gpuslice_autoscale_own_instances)" = 2 ] && ok "2 own instances" ||
  bad "own instances: $(metric "$port" gpuslice_autoscale_own_instances)"
[ "$(instances)" = 3 ] && ok "3 GPU instances on the GPU" || bad "GPU instances: $(instances)"
aport=$(sed -n 's/^admin on 127.0.0.1:\([0-9]*\)$/\1/p' "$tmp/serve1.log")
(exec 3<>/dev/tcp/127.0.0.1/"$aport" && printf 'GET /autoscale HTTP/1.0\r\n\r\n' >&3 && cat <&3) \
  2>/dev/null | grep -q '"own_instances":2' && ok "admin API: GET /autoscale" || bad "GET /autoscale"
grep -q '"pid": [1-9]' "$tmp/scale.json" && ok "state file lists its workers" ||
  { bad "state file"; cat "$tmp/scale.json"; }
grep -o '"pid": [0-9]*' "$tmp/scale.json" | grep -o '[0-9]*$' >"$tmp/pids"

# 2. kill -9: the workers die with serve; the restart adopts its instances
kill -9 "$serve_pid"; wait "$serve_pid" 2>/dev/null; serve_pid=
# Gone, not merely signalled: zombies (not yet reaped by init) do not count.
none_alive() {
  for p in $(cat "$tmp/pids"); do
    [ -r "/proc/$p/stat" ] && [ "$(awk '{print $3}' "/proc/$p/stat")" != Z ] && return 1
  done
  true
}
wait_for 10 none_alive && ok "kill -9 of serve: its 2 workers died with it" ||
  bad "workers alive after kill -9 of serve: $(cat "$tmp/pids")"
start_serve "$tmp/serve2.log" --slices 3..5 || { bad "restart"; cat "$tmp/serve2.log"; finish; }
port=$(port_of "$tmp/serve2.log")
wait_for 90 metric_is gpuslice_autoscale_slices 3 && ok "3 slices after restart" ||
  { bad "after restart: $(metric "$port" gpuslice_autoscale_slices) slices"; cat "$tmp/serve2.log"; }
[ "$(grep -c '^autoscale: adopted' "$tmp/serve2.log")" = 2 ] && ok "adopted its 2 instances" ||
  bad "adopted: $(grep -c '^autoscale: adopted' "$tmp/serve2.log")"
[ "$(instances)" = 3 ] && ok "no instance leaked (3)" || bad "GPU instances: $(instances)"
kill -TERM "$serve_pid"
wait_for 60 sh -c "! kill -0 $serve_pid 2>/dev/null" && ok "SIGTERM stops serve" || bad "no stop"
serve_pid=
[ "$(instances)" = 1 ] && ok "own instances destroyed, the other tenant's kept" ||
  bad "GPU instances after stop: $(instances)"
"$bin" -q list --json | grep -q "$other" && ok "the other tenant's slice is untouched" ||
  bad "the other tenant's slice is gone"

# 3. a minimum beyond the GPU (7 slots, one taken): no capacity, said once;
# the bounds come from a serve file this time (a bad one is refused first)
printf 'slices: 7..1\nlatency-budget: p90=50ms\n' >"$tmp/bad.yaml"
"$bin" -q serve -f "$tmp/bad.yaml" -- true >"$tmp/bad.log" 2>&1
rc=$?
[ $rc = 2 ] && grep -q 'bad.yaml, line 1: slices' "$tmp/bad.log" &&
  grep -q -- '--slices 7..1: expected MIN..MAX' "$tmp/bad.log" && ok "a bad slices: in the file is refused (2)" ||
  { bad "bad slices: exit $rc"; cat "$tmp/bad.log"; }
printf 'slices: 9..9\ngrow-profile: 1g.5gb\n' >"$tmp/serve.yaml"
start_serve "$tmp/serve3.log" -f "$tmp/serve.yaml" || { bad "serve 3"; finish; }
port=$(port_of "$tmp/serve3.log")
wait_for 120 metric_is gpuslice_autoscale_no_capacity 1 && ok "no capacity in metrics" ||
  { bad "no capacity metric"; cat "$tmp/serve3.log"; }
sleep 2
n=$(grep -c 'no free capacity' "$tmp/serve3.log")
[ "$n" = 1 ] && ok "no capacity logged once" || bad "no capacity logged $n times"
[ "$(instances)" = 7 ] && ok "filled the free capacity (7 instances)" || bad "instances: $(instances)"
kill -TERM "$serve_pid"
wait_for 60 sh -c "! kill -0 $serve_pid 2>/dev/null"; serve_pid=
[ "$(instances)" = 1 ] && ok "released after stop" || bad "instances after stop: $(instances)"
finish
