#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-cli-help.sh: `gpuslice <command> --help` for every command that
# `gpuslice --help` lists: exit 0, the command's help on stdout (a usage
# line, its options one a line, each with a description, and at least one
# example of that very command), nothing on stderr, and nothing else run: no
# state, lock, jobs or log file made, the emulator's state untouched, no GPU
# needed. Twice: on a machine never used (no state at all) and on one with
# MIG devices, where `serve --help` used to go on with no worker command and
# crash.
set -uo pipefail

bin=${GS_BIN:-$(dirname "$0")/../../build/gpuslice}
src=${GS_SRC:-$(dirname "$0")/../..}
. "$src/tests/lib/common.sh"
tmp=$(gs_tmpdir cli-help)
trap 'rm -rf "$tmp"' EXIT

# Every default path the commands may pick lies below $tmp.
export HOME=$tmp/home XDG_STATE_HOME=$tmp/home/state XDG_RUNTIME_DIR=$tmp/home/run
unset GPUSLICE_JOBS_DIR GPUSLICE_EMULATE
mkdir -p "$HOME"

commands=$("$bin" --help | sed -n '/^commands:/,/^$/p' |
  sed -n 's/^  \([a-z-]\{1,\}\( [a-z-]\{1,\}\)\{0,1\}\)   *[A-Za-z(].*/\1/p')
[ "$(echo "$commands" | wc -l)" -ge 30 ] && ok ||
  fail "gpuslice --help lists too few commands: $commands"

# files: every file below $tmp but the outputs, with its size and time.
files() { (cd "$tmp" && find . -mindepth 1 -path ./out -prune -o -printf '%p %s %T@\n' | sort); }

# usage_of CMD TEXT: TEXT is a command's help and nothing else: it opens
# with "usage: gpuslice CMD", its other lines are indented, empty or the
# "options:" and "examples:" headers (a listing's header after the help
# means the command went on), every option line is "-x, --name ARG  text"
# or "    --name ARG  text" with a description, -h/--help among them, and an
# example runs CMD itself.
usage_of() {
  local first=${2%%$'\n'*}
  [[ "$first" == "usage: gpuslice $1 "* ]] || return 1
  printf '%s\n' "$2" | tail -n +2 | grep -v '^options:$\|^examples:$' | grep -q '^[^[:space:]]' &&
    return 1
  printf '%s\n' "$2" | sed -n '/^options:$/,/^$/p' | sed '1d;/^$/d' >"$tmp/out/opts"
  [ -s "$tmp/out/opts" ] || return 1
  grep -vqE '^  (-[A-Za-z0-9], |    )--[a-z][a-z0-9-]*( [^ ]+)?  +[^ ]' "$tmp/out/opts" && return 1
  grep -q -- '-h, --help ' "$tmp/out/opts" || return 1
  printf '%s\n' "$2" | sed -n '/^examples:$/,$p' | grep -q "^  gpuslice $1\b"
}

# check_help STATE-DIR LABEL: every command's --help against that state.
check_help() {
  local state=$1 label=$2 cmd out err rc before after
  export GPUSLICE_EMU_STATE=$state/emu.json
  before=$(files)
  while read -r cmd; do
    [ -n "$cmd" ] || continue
    for h in --help -h; do
      # shellcheck disable=SC2086 # cmd is one or two words
      timeout 20 "$bin" $cmd "$h" >"$tmp/out/stdout" 2>"$tmp/out/stderr" </dev/null
      rc=$?
      out=$(cat "$tmp/out/stdout")
      err=$(cat "$tmp/out/stderr")
      if [ "$rc" -ne 0 ]; then
        fail "$label: gpuslice $cmd $h exited $rc (stderr: ${err:0:300})"
      elif ! usage_of "$cmd" "$out"; then
        fail "$label: gpuslice $cmd $h: stdout is not its help alone: ${out:0:600}"
      elif [ -n "$err" ]; then
        fail "$label: gpuslice $cmd $h wrote to stderr: ${err:0:300}"
      else
        ok
      fi
    done
  done <<<"$commands"
  after=$(files)
  if [ "$before" = "$after" ]; then
    ok
  else
    fail "$label: --help made or changed files: $(diff <(echo "$before") <(echo "$after") | head -5)"
  fi
}

mkdir -p "$tmp/fresh" "$tmp/mig" "$tmp/out"
check_help "$tmp/fresh" "no state"

export GPUSLICE_EMU_STATE=$tmp/mig/emu.json
"$bin" -q emu reset --emulate a100-40gb >/dev/null &&
  "$bin" -q mig enable -i 0 >/dev/null &&
  "$bin" -q gi create -C 1g.5gb,1g.5gb >/dev/null || fail "setup: two MIG devices"
check_help "$tmp/mig" "with MIG devices"

# The top level and the groups have their help too.
for cmd in "" mig gi ci emu queue mps; do
  # shellcheck disable=SC2086
  out=$("$bin" $cmd --help 2>"$tmp/out/err")
  rc=$?
  if [ "$rc" -eq 0 ] && [[ "$out" == usage:* ]] && [ ! -s "$tmp/out/err" ]; then ok
  else fail "gpuslice $cmd --help: exit $rc, stdout ${out:0:100}, stderr $(head -c 200 "$tmp/out/err")"; fi
done
summary
