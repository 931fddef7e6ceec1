#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-apply-crash.sh: `gpuslice apply` killed with SIGKILL after every single
# change it makes (the emulator's GPUSLICE_EMU_KILL_AFTER switch), then
# finished by `gpuslice recover` or by the next apply; and killed after its
# journal was written but before its first change. After each kill the GPU
# may hold only instances of the old or the new layout; after the rerun it
# must match the new one exactly. Also: two applies started at once.
# Env: GS_BIN (gpuslice), GS_TEST_TMP (scratch dir).
set -u
: "${GS_BIN:?set GS_BIN to the gpuslice binary}"
root=$(mktemp -d "${GS_TEST_TMP:-/tmp}/apply-crash.XXXXXX") || exit 1
trap 'rm -rf "$root"' EXIT
unset GPUSLICE_EMULATE GPUSLICE_EMU_KILL_AFTER
passed=0
failed=0
ok() { passed=$((passed + 1)); }
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }
g() { "$GS_BIN" -q "$@"; }

cat >"$root/c.yaml" <<'YAML'
version: v1
mig-configs:
  off:
    - devices: all
      mig-enabled: false
  all-1g:
    - devices: all
      mig-enabled: true
      mig-devices: {"1g.5gb": 7}
  balanced:
    - devices: all
      mig-enabled: true
      mig-devices: {"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1}
  big:
    - devices: all
      mig-enabled: true
      mig-devices: {"4g.20gb": 1, "3g.20gb": 1}
  split:
    - devices: all
      mig-enabled: true
      mig-devices: {"1c.3g.20gb": 3, "2g.10gb": 2}
YAML

# The GIs of the emulated machine as "profile@start" lines, sorted.
gis() { g gi list --json | python3 -c 'import json,sys
print("\n".join(sorted("%d:%s@%d" % (x["gpu"], x["name"], x["start"]) for x in json.load(sys.stdin))))'; }

# Runs one from->to transition, killed after its Nth change, for every N.
transition() {
  local from=$1 to=$2 spec=$3 n=1 final before after
  export GPUSLICE_EMU_STATE="$root/ref.json" GPUSLICE_APPLY_LOCK="$root/ref.apply"
  g emu reset --emulate "$spec" >/dev/null && g apply -f "$root/c.yaml" -c "$from" >/dev/null || { fail "setup $from"; return; }
  before=$(gis)
  g apply -f "$root/c.yaml" -c "$to" >/dev/null || { fail "reference apply $from -> $to"; return; }
  final=$(gis)
  export GPUSLICE_EMU_STATE="$root/s.json" GPUSLICE_APPLY_LOCK="$root/s.apply"
  while :; do
    g emu reset --emulate "$spec" >/dev/null && g apply -f "$root/c.yaml" -c "$from" >/dev/null || { fail "reset $from"; return; }
    GPUSLICE_EMU_KILL_AFTER=$n timeout 30 "$GS_BIN" -q apply -f "$root/c.yaml" -c "$to" >/dev/null 2>&1
    rc=$?
    if [ "$rc" -eq 0 ]; then
      break # fewer changes than n: the apply finished
    fi
    if [ "$rc" -ne 137 ]; then
      fail "$from -> $to killed after $n changes: exit $rc, expected 137 (SIGKILL)"
      return
    fi
    after=$(gis)
    [ "$n" -eq 1 ] && cp "$root/s.apply.journal" "$root/first.journal"
    # Only instances of the old or the new layout may exist now.
    stray=$(comm -23 <(echo "$after") <(printf '%s\n%s\n' "$before" "$final" | sort -u))
    [ -z "$stray" ] || fail "$from -> $to killed after $n: instances of neither layout: $stray"
    if [ $((n % 2)) -eq 1 ]; then
      g recover >/dev/null || fail "$from -> $to killed after $n: recover failed"
    else
      g apply -f "$root/c.yaml" -c "$to" >/dev/null || fail "$from -> $to killed after $n: rerun failed"
    fi
    [ "$(gis)" = "$final" ] || fail "$from -> $to killed after $n: did not converge: $(gis | tr '\n' ' ')"
    g assert -f "$root/c.yaml" -c "$to" >/dev/null || fail "$from -> $to killed after $n: assert says no"
    [ -e "$root/s.apply.journal" ] && fail "$from -> $to killed after $n: journal left behind"
    n=$((n + 1))
  done
  [ "$n" -gt 1 ] || fail "$from -> $to: never killed (no change made?)"
  # Killed after the journal was written but before the first change: the
  # state of `from` with that journal; recover must still converge.
  g emu reset --emulate "$spec" >/dev/null && g apply -f "$root/c.yaml" -c "$from" >/dev/null || { fail "reset $from"; return; }
  cp "$root/first.journal" "$root/s.apply.journal"
  g recover >/dev/null || fail "$from -> $to killed before its first change: recover failed"
  [ "$(gis)" = "$final" ] || fail "$from -> $to killed before its first change: did not converge: $(gis | tr '\n' ' ')"
  [ -e "$root/s.apply.journal" ] && fail "$from -> $to killed before its first change: journal left behind"
  ok
  echo "ok: $from -> $to on $spec: killed after each of $((n - 1)) changes, converged every time"
}

transition off all-1g a100-40gb
transition all-1g balanced a100-40gb
transition balanced big a100-40gb
transition big split a100-40gb
transition split off a100-40gb
transition all-1g balanced a100-40gb:2

# Two applies at once: with --wait both succeed, one after the other.
export GPUSLICE_EMU_STATE="$root/two.json" GPUSLICE_APPLY_LOCK="$root/two.apply"
g emu reset --emulate a100-40gb:4 >/dev/null
g apply -f "$root/c.yaml" -c all-1g --wait 60 >"$root/a.out" 2>&1 &
pa=$!
g apply -f "$root/c.yaml" -c all-1g --wait 60 >"$root/b.out" 2>&1 &
pb=$!
wait $pa; ra=$?
wait $pb; rb=$?
if [ "$ra" -eq 0 ] && [ "$rb" -eq 0 ] && g assert -f "$root/c.yaml" -c all-1g >/dev/null; then ok; else
  fail "two applies with --wait: exits $ra and $rb"; fi
# Two applies of different configs at once, three times: both succeed, one
# after the other, and the GPUs end in exactly one of the two layouts.
for round in 1 2 3; do
  g apply -f "$root/c.yaml" -c balanced >/dev/null
  g apply -f "$root/c.yaml" -c all-1g --wait 60 >"$root/a.out" 2>&1 &
  pa=$!
  g apply -f "$root/c.yaml" -c big --wait 60 >"$root/b.out" 2>&1 &
  pb=$!
  wait $pa; ra=$?
  wait $pb; rb=$?
  g assert -f "$root/c.yaml" -c all-1g >/dev/null 2>&1; sa=$?
  g assert -f "$root/c.yaml" -c big >/dev/null 2>&1; sb=$?
  if [ "$ra" -eq 0 ] && [ "$rb" -eq 0 ] && [ $((sa + sb)) -eq 1 ]; then ok; else
    fail "round $round: two applies of different configs: exits $ra and $rb, asserts $sa and $sb"; fi
done
# Without --wait the second one fails at once, naming the lock, and changes nothing.
g apply -f "$root/c.yaml" -c off >/dev/null
( flock -x 9; sleep 3 ) 9>"$root/two.apply.lock" &
holder=$!
sleep 0.5
g apply -f "$root/c.yaml" -c balanced >"$root/c.out" 2>&1
rc=$?
wait $holder
if [ "$rc" -eq 1 ] && grep -q "another gpuslice apply is running" "$root/c.out" && grep -q -- "--wait" "$root/c.out" &&
  g assert -f "$root/c.yaml" -c off >/dev/null; then ok; else
  fail "apply while another holds the lock: exit $rc: $(cat "$root/c.out")"; fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
