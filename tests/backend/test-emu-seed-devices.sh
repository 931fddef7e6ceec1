#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-emu-seed-devices.sh: the emulator's per-machine seed (machines emulated
# side by side have their own GPU and MIG UUIDs; no seed, the UUIDs of old)
# and `gpuslice emu devices DIR` (the driver's device nodes and mig-minors).
# Env: GS_BIN (gpuslice), GS_TEST_TMP (scratch dir), GS_SRC (source tree).
set -u
: "${GS_BIN:?set GS_BIN to the gpuslice binary}"
src=${GS_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$src/tests/lib/common.sh"
root=$(gs_tmpdir emu-seed) || exit 1
trap 'rm -rf "$root"' EXIT
unset GPUSLICE_EMULATE GPUSLICE_EMU_STATE
g() { "$GS_BIN" -q "$@"; }
uuids() { # STATE: every GPU and MIG UUID of the machine, one line
  g --emu-state "$1" list --json | python3 -c '
import json, sys
print(" ".join(u for g in json.load(sys.stdin) for u in [g["uuid"]] + [m["uuid"] for m in g.get("mig_devices", [])]))'
}
machine() { # STATE SPEC [reset options]
  local st=$1 spec=$2
  shift 2
  g --emu-state "$st" emu reset --emulate "$spec" "$@" >/dev/null &&
    g --emu-state "$st" apply -f "$src/configs/a100-40gb.mig-parted.yaml" -c all-balanced >/dev/null
}

# ---- seeds ----
machine "$root/plain.json" a100-40gb:2 && machine "$root/a.json" a100-40gb:2 --seed node1 &&
  machine "$root/b.json" a100-40gb:2,seed=node2 && machine "$root/a2.json" a100-40gb:2,seed=node1 &&
  ok || fail "setup"
# Without a seed, the UUIDs every earlier version gave (tests and docs quote them).
[ "$(uuids "$root/plain.json" | cut -d' ' -f1)" = GPU-83f394c6-7a5a-5dae-9261-ccab4612c9e6 ] && ok ||
  fail "unseeded GPU 0 UUID changed: $(uuids "$root/plain.json")"
python3 - "$(uuids "$root/plain.json")" "$(uuids "$root/a.json")" "$(uuids "$root/b.json")" <<'PY' && ok || fail "seeded UUIDs overlap"
import sys
sets = [set(a.split()) for a in sys.argv[1:]]
assert all(len(s) == 10 for s in sets), sets  # 2 GPUs + 8 MIG devices each
assert not (sets[0] & sets[1]) and not (sets[0] & sets[2]) and not (sets[1] & sets[2])
PY
[ "$(uuids "$root/a.json")" = "$(uuids "$root/a2.json")" ] && ok || fail "one seed, two machines' UUIDs"
g --emu-state "$root/a.json" emu status | grep -q "seed node1" && ok || fail "status: $(g --emu-state "$root/a.json" emu status)"
[ "$(g --emu-state "$root/a.json" emu status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["seed"])')" = node1 ] &&
  ok || fail "status --json seed"
grep -q '"seed": "node1"' "$root/a.json" && ! grep -q '"seed"' "$root/plain.json" && ok || fail "the file's seed key"
# The same machine but another seed is another machine: refused, never overwritten.
out=$(g --emu-state "$root/a.json" --emulate a100-40gb:2,seed=node9 list 2>&1)
[ $? = 2 ] && echo "$out" | grep -q "holds another machine (2 GPUs, GPU 0: a100-40gb, driver [0-9.]*, seed=node1)" && ok ||
  fail "another seed: $out"
g --emu-state "$root/a.json" --emulate a100-40gb:2,seed=node1 list >/dev/null && ok || fail "its own seed"
g --emu-state "$root/a.json" --emulate a100-40gb:2 list >/dev/null && ok || fail "a spec without a seed"
for bad in "a100-40gb,seed=" "a100-40gb,seed=a/b" "a100-40gb,seed=x,seed=y" \
  "a100-40gb,seed=$(printf 'x%.0s' $(seq 64))"; do
  out=$(g --emu-state "$root/bad.json" emu reset --emulate "$bad" 2>&1)
  [ $? = 2 ] && echo "$out" | grep -q "give one seed=WORD" && ok || fail "seed '$bad': $out"
done
out=$(g --emu-state "$root/bad.json" emu reset --emulate seed=x 2>&1)
[ $? = 2 ] && echo "$out" | grep -q "names no GPU" && ok || fail "a seed alone: $out"
# A hand-damaged seed is a corrupt state, named with the fix.
sed -i 's/"seed": "node1"/"seed": "no de"/' "$root/a2.json"
out=$(g --emu-state "$root/a2.json" list 2>&1)
[ $? = 3 ] && echo "$out" | grep -q "seed: must be 1 to 63 letters" && echo "$out" | grep -q "emu reset" && ok ||
  fail "damaged seed: $out"

# ---- device files ----
if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP: emu devices: mknod needs root"
  out=$(g --emu-state "$root/a.json" emu devices "$root/d" 2>&1)
  [ $? = 1 ] && echo "$out" | grep -q "mknod needs root" && ok || fail "emu devices as non-root: $out"
else
  g --emu-state "$root/a.json" emu devices "$root/d" >/dev/null && ok || fail "emu devices"
  [ "$(stat -c '%F %t:%T %a' "$root/d/dev/nvidia1")" = "character special file c3:1 666" ] && ok ||
    fail "nvidia1: $(stat -c '%F %t:%T %a' "$root/d/dev/nvidia1")"
  [ "$(stat -c '%t:%T' "$root/d/dev/nvidiactl")" = c3:ff ] && ok || fail "nvidiactl"
  [ "$(ls "$root/d/dev/nvidia-caps" | wc -l)" = $((2 + 2 * 135)) ] && ok ||
    fail "$(ls "$root/d/dev/nvidia-caps" | wc -l) cap nodes for 2 GPUs"
  mm=$root/d/proc/driver/nvidia-caps/mig-minors
  [ "$(wc -l <"$mm")" = 4322 ] && [ "$(head -3 "$mm" | tr '\n' ' ')" = "config 1 monitor 2 gpu0/gi0/access 3 " ] &&
    [ "$(tail -1 "$mm")" = "gpu31/gi14/ci7/access 4322" ] && ok || fail "mig-minors: $(head -3 "$mm")"
  # Every cap line's minor is a node of that minor (GPUs 0 and 1).
  awk '$1 ~ /^gpu[01]\// {print $2}' "$mm" | while read -r m; do
    [ "$(stat -c %T "$root/d/dev/nvidia-caps/nvidia-cap$m" 2>/dev/null)" = "$(printf %x "$m")" ] || echo "$m"
  done >"$root/badcaps"
  [ ! -s "$root/badcaps" ] && ok || fail "cap nodes off their minors: $(head -3 "$root/badcaps")"
  # What slurm gres names exists, as character devices.
  g --emu-state "$root/a.json" slurm gres --dev-root "$root/d/dev" | grep -o "$root[^ ,]*" | sort -u >"$root/files"
  while read -r f; do [ -c "$f" ] || echo "$f"; done <"$root/files" >"$root/missing"
  [ -s "$root/files" ] && [ ! -s "$root/missing" ] && ok || fail "gres names missing files: $(head -3 "$root/missing")"
  # A smaller machine takes its nodes away; rerunning refreshes.
  machine "$root/a.json" a100-40gb --seed node1 && g --emu-state "$root/a.json" emu devices "$root/d" >/dev/null &&
    [ ! -e "$root/d/dev/nvidia1" ] && [ "$(ls "$root/d/dev/nvidia-caps" | wc -l)" = 137 ] && ok ||
    fail "refresh: $(ls "$root/d/dev")"
  out=$(g --emu-state "$root/a.json" emu devices 2>&1)
  [ $? = 2 ] && ok || fail "no DIR: $out"
fi

summary
