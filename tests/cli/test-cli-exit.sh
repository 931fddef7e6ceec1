#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-cli-exit.sh: docs/cli.md's exit rule, held over many commands' error
# paths: 1 refused or failed while acting (the GPU, a check, a server or the
# network), 2 a bad command line or a bad file it names (nothing changed),
# 3 gpuslice's own state unusable. Every command refuses an option it does
# not take (2). A case also asserts one "gpuslice: " line on stderr naming
# the input (a fragment), and no crash.
# Env: GS_BIN, GS_SRC, GS_TEST_TMP.
set -uo pipefail
bin=${GS_BIN:-$(dirname "$0")/../../build/gpuslice}
src=${GS_SRC:-$(dirname "$0")/../..}
. "$src/tests/lib/common.sh"
tmp=$(gs_tmpdir cli-exit)
worker=
trap '[ -n "$worker" ] && kill "$worker" 2>/dev/null; rm -rf "$tmp"' EXIT
export HOME=$tmp/home XDG_STATE_HOME=$tmp/home/state GPUSLICE_EMU_STATE=$tmp/emu.json
unset GPUSLICE_EMULATE GPUSLICE_JOBS_DIR MIG_PARTED_CONFIG_FILE
mkdir -p "$HOME"
"$bin" -q emu reset --emulate a100-40gb >/dev/null || fail "setup: emu reset"
layouts=$src/configs/a100-40gb.mig-parted.yaml
printf 'workloads:\n  - {name: llm, memory: 18GiB, compute: 0.4, replicas: 4}\n' >"$tmp/w.yaml"
printf 'workloads:\n  - {name: big, memory: 200GiB, compute: 0.4}\n' >"$tmp/big.yaml"

# expect NAME STATUS FRAGMENT -- ARGS...: `gpuslice -q ARGS` exits STATUS
# and stderr has a "gpuslice: " line with FRAGMENT (a fixed string; ""
# when the command reports on stdout, as plan does what did not fit).
expect() {
  local name=$1 want=$2 frag=$3 rc
  shift 4
  timeout 30 "$bin" -q "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
  rc=$?
  if [ "$rc" != "$want" ]; then
    fail "$name: gpuslice $*: exit $rc, not $want; stderr: $(head -c 300 "$tmp/err")"
  elif [ -n "$frag" ] && { ! grep -q '^gpuslice: ' "$tmp/err" || ! grep -qF -- "$frag" "$tmp/err"; }; then
    fail "$name: gpuslice $*: stderr lacks '$frag': $(head -c 300 "$tmp/err")"
  else
    ok
  fi
}

# Every command refuses an option it does not take.
"$bin" --help | sed -n '/^commands:/,/^$/p' |
  sed -n 's/^  \([a-z-]\{1,\}\( [a-z-]\{1,\}\)\{0,1\}\)   *[A-Za-z(].*/\1/p' >"$tmp/commands"
while read -r cmd; do
  # shellcheck disable=SC2086 # one or two words
  expect "unknown option of $cmd" 2 "--no-such-option" -- $cmd --no-such-option
done <"$tmp/commands"
expect "json where it means nothing" 2 "--json" -- export --json

# 2: a bad value, a bad duration, a name that is not one model.
expect "bad duration (apply)" 2 "--wait '5x'" -- apply -f "$layouts" -c all-1g.5gb --wait 5x
expect "bad duration (queue run)" 2 "--poll-interval 'soon'" -- queue run --poll-interval soon
expect "bad duration (serve)" 2 "--worker-timeout '10y'" -- serve --worker-timeout 10y -- true
expect "bad duration (bench)" 2 "--measurement-interval '5parsecs'" -- bench --url http://127.0.0.1:1 -m m -p 5parsecs
expect "bad duration (slurm)" 2 "--timeout 'never'" -- slurm resume -N n1 --timeout never
expect "a unit where none was ever optional" 2 "--scale-window '10'" -- serve --latency-budget p90=50ms --scale-window 10 -- true
expect "ambiguous model (layouts)" 2 "a100-40gb, a100-80gb" -- layouts a100
expect "ambiguous model (--emulate)" 2 "a100-40gb, a100-80gb" -- emu reset --emulate a100:2
expect "ambiguous model (plan --gpus)" 2 "h100-80gb, h100-pcie-80gb" -- plan "$tmp/w.yaml" --gpus h100:2
expect "bad MPS share" 2 "--thread-percentage 0" -- run --mode mps --thread-percentage 0 -- true

# 2: a file the command line names that is missing or unreadable.
mkdir -p "$tmp/adir"
expect "plan: missing file" 2 "nope.yaml" -- plan "$tmp/nope.yaml" --gpus a100-40gb:1
expect "plan: a directory for a file" 2 "adir" -- plan "$tmp/adir" --gpus a100-40gb:1
expect "apply: missing file" 2 "nope.yaml" -- apply -f "$tmp/nope.yaml" -c x
expect "serve: missing serve file" 2 "nope.yaml" -- serve -f "$tmp/nope.yaml" -- true
expect "serve: missing token file" 2 "nope.token" -- serve --admin-token-file "$tmp/nope.token" -- true
expect "bench plot: missing CSV" 2 "nope.csv" -- bench plot "$tmp/nope.csv" -o "$tmp/out.svg"
expect "slurm prolog: missing gres.conf" 2 "nope.conf" -- slurm prolog -N n1 --gres-conf "$tmp/nope.conf"

# 1: refused or failed while acting.
expect "bench: refused connection" 1 "127.0.0.1:1" -- bench --url http://127.0.0.1:1 -m flower
expect "the GPU refuses (MIG off)" 1 "NVML_ERROR" -- gi create 1g.5gb
expect "assert: no match" 1 "does not match" -- assert -f "$layouts" -c all-1g.5gb
expect "layouts --check: does not fit" 1 "7g.40gb" -- layouts a100-40gb --check 7g.40gb,1g.5gb
expect "plan: a demand no GPU meets" 2 "big" -- plan "$tmp/big.yaml" --gpus a100-40gb:1
expect "plan: some replicas do not fit" 1 "" -- plan "$tmp/w.yaml" --gpus a100-40gb:1

# A live (emulated) server for the errors that come after it answers.
"$bin" -q worker --listen 127.0.0.1:0 --model flower >"$tmp/worker.out" 2>/dev/null &
worker=$!
for _ in $(seq 100); do grep -q '^listening on' "$tmp/worker.out" && break; sleep 0.1; done
port=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$tmp/worker.out")
if [ -n "$port" ]; then
  expect "bench: missing input data" 2 "nope.json" -- bench --url "http://127.0.0.1:$port" -m flower --input-data "$tmp/nope.json"
  expect "bench: unknown model" 1 "check -m" -- bench --url "http://127.0.0.1:$port" -m nosuchmodel
else
  fail "setup: the worker did not start: $(cat "$tmp/worker.out")"
fi

# 3: gpuslice's own state.
touch "$tmp/afile"
expect "jobs dir that is a file" 3 "not a directory" -- jobs --jobs-dir "$tmp/afile"
printf 'not json' >"$tmp/emu.json"
expect "corrupt emulator state" 3 "gpuslice emu reset" -- list
expect "corrupt emulator state (write)" 3 "gpuslice emu reset" -- mig enable -i 0
summary
