#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-cli-errors.sh: every user error the gpuslice command line can meet, one
# case each. A case asserts the exact exit status (0 ok, 1 the GPU refused,
# 2 bad command line, 3 state file unusable), that stderr is ONE line starting
# "gpuslice: " which names the bad input and says how to fix it, that the
# command did not crash (status > 3 or a signal), and that the state file is
# byte for byte what it was before (bad input never changes the machine).
# Every case has its own state file under $GS_TEST_TMP.
# Env: GS_BIN (gpuslice), GS_TEST_TMP (scratch dir).
set -u

: "${GS_BIN:?set GS_BIN to the gpuslice binary}"
mkdir -p "${GS_TEST_TMP:-/tmp}"
root=$(mktemp -d "${GS_TEST_TMP:-/tmp}/cli-errors.XXXXXX") || exit 1
trap 'rm -rf "$root"' EXIT
unset GPUSLICE_EMULATE
passed=0
failed=0
D='' S=''
PREFIX=()   # a command prefix for the next expect (the non-root case)

say_fail() {
  echo "FAIL: $*"
  failed=$((failed + 1))
}

# fresh [SPEC]: a new state dir and a freshly reset emulated machine.
fresh() {
  D=$(mktemp -d "$root/case.XXXXXX")
  S="$D/emu.json"
  export GPUSLICE_EMU_STATE="$S"
  if ! timeout 20 "$GS_BIN" -q emu reset ${1:+--emulate "$1"} >/dev/null 2>"$D/setup.err"; then
    say_fail "setup: emu reset ${1:-} failed: $(cat "$D/setup.err")"
  fi
}

# setup ARGS...: a command that must succeed to build a case's state.
setup() {
  if ! timeout 20 "$GS_BIN" -q "$@" >/dev/null 2>"$D/setup.err"; then
    say_fail "setup: gpuslice $* failed: $(cat "$D/setup.err")"
  fi
}

# expect NAME STATUS FRAGMENT... -- ARGS...: runs `gpuslice -q ARGS` and
# checks status, the one stderr line and each fragment in it (fixed strings).
expect() {
  local name=$1 want=$2 frags=() rc line nlines ok=1
  shift 2
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    frags+=("$1")
    shift
  done
  shift
  [ -e "$S" ] && cp "$S" "$D/before"
  ${PREFIX[@]+"${PREFIX[@]}"} timeout 20 "$GS_BIN" -q "$@" >"$D/out" 2>"$D/err"
  rc=$?
  nlines=$(wc -l <"$D/err")
  line=$(head -n 1 "$D/err")
  if [ "$rc" -gt 3 ]; then
    say_fail "$name: gpuslice $*: crashed or hung (status $rc); stderr: $(cat "$D/err")"
    return
  fi
  if [ "$rc" -ne "$want" ]; then
    echo "  $name: exit status $rc, want $want"
    ok=0
  fi
  if [ "$nlines" -ne 1 ] || [ "$(tail -c 1 "$D/err" | od -An -c | tr -d ' ')" != '\n' ]; then
    echo "  $name: stderr has $nlines lines, want exactly one:"
    sed 's/^/    | /' "$D/err"
    ok=0
  fi
  case $line in
  "gpuslice: "*) ;;
  *)
    echo "  $name: stderr does not start with 'gpuslice: ': $line"
    ok=0
    ;;
  esac
  for f in ${frags[@]+"${frags[@]}"}; do
    if ! grep -qF -- "$f" <<<"$line"; then
      echo "  $name: stderr lacks '$f': $line"
      ok=0
    fi
  done
  if [ -e "$D/before" ] && ! cmp -s "$D/before" "$S"; then
    echo "  $name: the state file changed:"
    diff "$D/before" "$S" | sed 's/^/    /' | head -n 20
    ok=0
  fi
  rm -f "$D/before"
  if [ "$ok" -eq 1 ]; then
    passed=$((passed + 1))
  else
    say_fail "$name: gpuslice $*"
  fi
}

# ---- the command line itself ----
fresh
expect "no command" 2 "no command" "gpuslice --help" -- 
expect "unknown command" 2 "frob" "gpuslice --help" -- frob
expect "unknown group subcommand" 2 "frob" "profiles" "gpuslice gi --help" -- gi frob
expect "group without subcommand" 2 "ci" "create" "gpuslice ci --help" -- ci
expect "unknown long option" 2 "--frob" "usage: gpuslice list" -- list --frob
expect "unknown short option" 2 "-x" "usage: gpuslice gi list" -- gi list -x
expect "missing option value (-i)" 2 "-i" "missing value" "usage: gpuslice gi create" -- gi create 1g.5gb -i
expect "missing option value (--placement)" 2 "--placement" "missing value" "usage:" -- gi create 1g.5gb --placement
expect "unexpected operand" 2 "extra" "usage: gpuslice gi list" -- gi list extra
expect "-i out of range" 2 "-i 5" "gpuslice list" -- list -i 5
expect "-i not a GPU" 2 "-i abc" "gpuslice list" -- list -i abc
# bench owns -i (the protocol, as perf_analyzer's -i): --id is no option of it
expect "bench --id" 2 "--id: unknown option" "usage: gpuslice bench" -- bench --id grpc --url http://127.0.0.1:9 -m flower
expect "bench -i not a protocol" 2 "-i 0: expected http or grpc" -- bench -i 0 --url http://127.0.0.1:9 -m flower
expect "bench -i grpc without --grpc-url" 2 "-i grpc needs --grpc-url" -- bench -i grpc --url http://127.0.0.1:9 -m flower
expect "bench --protocol grpc without --grpc-url" 2 "-i grpc needs --grpc-url" -- bench --protocol grpc --url http://127.0.0.1:9 -m flower
expect "-i empty" 2 "-i" "-i 0,1" -- list -i ''
expect "-i only commas" 2 "-i ','" "-i 0,1" -- list -i ,
fresh a100-40gb:2
expect "-i ambiguous UUID prefix" 2 "-i GPU-" "give more of the UUID" -- list -i GPU-
fresh
expect "layouts unknown model" 2 "nosuchgpu" "gpuslice models" -- layouts nosuchgpu
expect "layouts without model" 2 "layouts" "gpuslice models" -- layouts
expect "layouts --check does not fit" 1 "3g.20gb x2 + 1g.5gb needs 9 memory slices but one a100-40gb has 8" "gpuslice layouts a100-40gb" -- layouts a100-40gb --check 3g.20gb,3g.20gb,1g.5gb
expect "layouts --check two +me" 1 "has 2 1g.5gb+me instances" "at most 1" -- layouts a100-40gb --check 1g.5gb+me,20
expect "layouts --check too many compute slices" 1 "needs 8 compute slices" -- layouts a100-40gb --check 4g.20gb,2g.10gb,2g.10gb
expect "layouts --check illegal start" 2 "3g.20gb cannot start at memory slice 2" "valid placements are 0, 4" -- layouts a100-40gb --check 3g.20gb@2
expect "layouts --check unknown profile" 2 "a100-40gb: unknown GPU instance profile '1g.6gb'" "1g.5gb (19)" -- layouts a100-40gb --check 1g.6gb
expect "layouts --check empty item" 2 "bad profile list" -- layouts a100-40gb --check 19,,19

# ---- GPU instances ----
fresh
setup mig enable -i 0
expect "gi create unknown profile name" 2 "nosuch" "1g.5gb (19)" "3g.20gb (9)" "7g.40gb (0)" -- gi create nosuch -i 0
expect "gi create unknown profile id" 2 "'99'" "1g.5gb (19)" "4g.20gb (5)" -- gi create 99 -i 0
expect "gi create no profile" 2 "gi create" "profile" -- gi create -i 0
expect "gi create empty profile" 2 "gi create" "at least one profile" -- gi create '' -i 0
expect "gi create illegal placement" 2 "3g.20gb" "slice 2" "valid placements are 0, 4" -- gi create 3g.20gb --placement 2 -i 0
expect "gi create bad placement value" 2 "--placement 'x'" "gpuslice gi placements" -- gi create 3g.20gb --placement x -i 0
expect "gi create placement with two profiles" 2 "--placement" "NAME@START" -- gi create 3g.20gb,1g.5gb --placement 0 -i 0
expect "gi create bad @start" 2 "3g.20gb@x" "0 or 4" -- gi create 3g.20gb@x -i 0
expect "gi create bad @start after a good profile (nothing created)" 2 "3g.20gb@x" "0 or 4" -- gi create 1g.5gb 3g.20gb@x -i 0
expect "gi create bad :start" 2 "'9:'" "after ':'" -- gi create 19:0,9: -i 0
expect "gi placements unknown profile" 2 "nosuch" "gpuslice gi profiles" -- gi placements nosuch -i 0

fresh
expect "gi create with MIG disabled" 1 "MIG mode is disabled" "gpuslice mig enable" "NVML_ERROR_NOT_SUPPORTED" -- gi create 3g.20gb -i 0

fresh
setup mig enable -i 0
setup gi create 3g.20gb,3g.20gb -i 0
expect "3rd 3g.20gb" 1 "3g.20gb" "NVML_ERROR_INSUFFICIENT_RESOURCES" "gpuslice gi destroy" -- gi create 3g.20gb -i 0
fresh
setup mig enable -i 0
setup gi create 3g.20gb --placement 4 -i 0
expect "3g.20gb at a taken placement" 1 "3g.20gb at 4:4" "NVML_ERROR_INSUFFICIENT_RESOURCES" "gpuslice gi destroy" -- gi create 3g.20gb --placement 4 -i 0

fresh
setup mig enable -i 0
setup gi create 3g.20gb -C -i 0
expect "gi destroy with a CI" 1 "GPU instance 1" "NVML_ERROR_IN_USE" "gpuslice ci destroy -i 0 --gi 1" -- gi destroy -i 0 --gi 1
expect "gi destroy --gi 99" 1 "99" "NVML_ERROR_NOT_FOUND" "it has 1" -- gi destroy -i 0 --gi 99
expect "gi destroy --gi x" 2 "--gi 'x'" "e.g. 7,8" -- gi destroy -i 0 --gi x
expect "mig disable with GIs" 1 "GPU instance" "NVML_ERROR_IN_USE" "gpuslice gi destroy" -- mig disable -i 0

# ---- compute instances ----
fresh
setup mig enable -i 0
setup gi create 3g.20gb -i 0
expect "ci create --gi 99" 2 "--gi 99" "gpuslice gi list -i 0" -- ci create -i 0 --gi 99
expect "ci list --gi 99" 2 "--gi 99" "gpuslice gi list -i 0" -- ci list -i 0 --gi 99
expect "ci create unknown CI profile" 2 "nosuch" "gpuslice ci profiles -i 0 --gi 1" -- ci create nosuch -i 0 --gi 1
expect "ci create unknown CI profile id" 2 "'9'" "gpuslice ci profiles -i 0 --gi 1" -- ci create 9 -i 0 --gi 1
expect "ci create bad --placement" 2 "--placement 'x'" "e.g. 7,8" -- ci create -i 0 --gi 1 --placement x
expect "ci create --placement out of range" 2 "--placement 99" "0..7" -- ci create -i 0 --gi 1 --placement 99
expect "ci destroy --ci no GI has" 1 "--ci 4" "NVML_ERROR_NOT_FOUND" "gpuslice ci list" -- ci destroy -i 0 --ci 4
expect "ci destroy --gi --ci missing" 1 "GPU instance 1 has no compute instance 4" "it has none" -- ci destroy -i 0 --gi 1 --ci 4

fresh
setup mig enable -i 0
expect "ci create without GIs" 1 "no GPU instance" "gpuslice gi create" -- ci create -i 0

# ---- the emulated machine ----
fresh
expect "--emulate unknown model" 2 "nosuchgpu" "gpuslice models" -- --emulate nosuchgpu:2 list
expect "--emulate count 0" 2 "a100-40gb:0" "1..64" -- --emulate a100-40gb:0 list
expect "--emulate count 999" 2 "a100-40gb:999" "1..64" -- --emulate a100-40gb:999 list
expect "--emulate another machine" 2 "h100-80gb" "gpuslice emu reset --emulate h100-80gb" -- --emulate h100-80gb list
expect "emu reset unknown model" 2 "nosuchgpu" "gpuslice models" -- emu reset --emulate nosuchgpu
expect "--backend nvml without a driver" 1 "libnvidia-ml.so.1" "NVML_ERROR_LIBRARY_NOT_FOUND" "--backend emu" -- --backend nvml list
expect "--backend foo" 2 "'foo'" "emu" -- --backend foo list
expect "emu proc-add without --pid" 2 "--pid" "usage: gpuslice emu proc-add" -- emu proc-add -i 0
expect "emu proc-add bad --pid" 2 "--pid 'x'" "number" -- emu proc-add --pid x -i 0
expect "emu set nothing" 2 "nothing to set" "usage: gpuslice emu set" -- emu set
expect "emu set bad value" 2 "--enforce-root 'maybe'" "on or off" -- emu set --enforce-root maybe
expect "emu gpu-reset without -i" 2 "-i" "-i 0" -- emu gpu-reset

fresh
printf 'garbage{{{\n' >"$S"
expect "corrupt state file" 3 "$S" "gpuslice emu reset" -- list
expect "corrupt state file (write)" 3 "$S" "gpuslice emu reset" -- mig enable -i 0
fresh
printf '{"name": "another program", "version": 3}\n' >"$S"
expect "state file of another program" 3 "$S" "gpuslice emu reset" -- gi list
fresh
printf '[1, 2, 3]\n' >"$S"
expect "state file not an object" 3 "$S" "gpuslice emu reset" -- list
fresh
: >"$S"
expect "empty state file" 3 "$S" "gpuslice emu reset" -- list

# ---- a non-root caller with enforce-root on ----
nonroot() { # prints the prefix that runs a command as nobody, or nothing
  if [ "$(id -u)" -ne 0 ]; then
    return
  fi
  if setpriv --reuid=65534 --regid=65534 --clear-groups true 2>/dev/null; then
    echo setpriv
  elif su nobody -s /bin/bash -c true 2>/dev/null; then
    echo su
  fi
}
how=$(nonroot)
as_nobody=()
# With su, $0 and $@ belong to the shell su starts; su keeps GPUSLICE_EMU_STATE.
# shellcheck disable=SC2016
case $how in
setpriv) as_nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups) ;;
su) as_nobody=(su nobody -s /bin/bash -c '"$0" "$@"' --) ;;
esac
# nobody may be unable to enter the scratch directory or the build tree, so
# this case runs a copy of the binary from a world-readable directory in /tmp.
pub=$(mktemp -d /tmp/gs-cli-nobody.XXXXXX) || exit 1
scratch=$root
trap 'rm -rf "$scratch" "$pub"' EXIT
chmod 755 "$pub"
cp "$GS_BIN" "$pub/gpuslice"
GS_BIN="$pub/gpuslice"
root="$pub"
fresh
setup emu set --enforce-root on
chmod 755 "$D" 2>/dev/null
if [ -z "$how" ]; then
  echo "SKIP: non-root case: not root, or neither setpriv nor su can run a command as nobody"
elif ! "${as_nobody[@]}" "$GS_BIN" -q --help >/dev/null 2>&1 || ! "${as_nobody[@]}" test -r "$S"; then
  echo "SKIP: non-root case: nobody cannot run $GS_BIN or read $S (a directory above is not world-readable)"
else
  PREFIX=("${as_nobody[@]}")
  expect "non-root mig enable" 1 "needs root" "sudo" "NVML_ERROR_NO_PERMISSION" -- mig enable -i 0
  PREFIX=()
  setup mig enable -i 0
  PREFIX=("${as_nobody[@]}")
  expect "non-root gi create" 1 "needs root" "sudo" "NVML_ERROR_NO_PERMISSION" -- gi create 1g.5gb -i 0
fi
PREFIX=()

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
