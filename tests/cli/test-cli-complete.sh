#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-cli-complete.sh: the bash completion (deploy/completion/gpuslice.bash),
# sourced into this shell as bash-completion would, completes by asking
# gpuslice (`gpuslice complete`): commands, a group's verbs, options, fixed
# choices, GPU indices, the GI and CI profiles of the GPUs -i selects, the
# configs of the layout file given with -f, the caller's own job ids (never
# another user's; a missing jobs directory offers none and stays missing);
# files where a file goes. Called as bash
# calls it: COMP_WORDS/COMP_CWORD set, then the function `complete -p` names.
# Also zsh's script, when zsh is installed: it loads, its answers are
# "word:description" lines, and at an interactive zsh (zsh/zpty) TAB
# completes verbs, profiles of the selected GPU, choices, files and the
# command after --, and lists profiles with their descriptions.
set -uo pipefail

bin=${GS_BIN:-$(dirname "$0")/../../build/gpuslice}
src=${GS_SRC:-$(dirname "$0")/../..}
. "$src/tests/lib/common.sh"
tmp=$(gs_tmpdir cli-complete)
trap 'rm -rf "$tmp"' EXIT
export GPUSLICE_EMU_STATE=$tmp/emu.json
unset GPUSLICE_EMULATE MIG_PARTED_CONFIG_FILE
"$bin" -q emu reset --emulate a100-40gb,h100-80gb >/dev/null || fail "setup: emu reset"

# shellcheck source=/dev/null
. "$src/deploy/completion/gpuslice.bash"
spec=$(complete -p gpuslice 2>/dev/null)
func=$(sed -n 's/.*-F \([^ ]*\).*/\1/p' <<<"$spec")
if [ -n "$func" ]; then ok; else fail "no completion function registered for gpuslice: '$spec'"; fi

# comp WORD...: COMPREPLY for the line "gpuslice WORD...", the last word being completed.
comp() {
  COMP_WORDS=("$bin" "$@")
  COMP_CWORD=$#
  COMP_LINE="gpuslice $*"
  COMP_POINT=${#COMP_LINE}
  COMPREPLY=()
  "$func" gpuslice "${!#}" "${COMP_WORDS[COMP_CWORD - 1]}" 2>/dev/null
  printf '%s\n' "${COMPREPLY[@]}" | sort
}

# has NAME WANT... -- WORD...: each WANT among the candidates.
has() {
  local name=$1 got w
  shift
  local want=()
  while [ "$1" != -- ]; do want+=("$1"); shift; done
  shift
  got=$(comp "$@")
  for w in "${want[@]}"; do
    if ! grep -qxF -- "$w" <<<"$got"; then
      fail "$name: '$w' not offered for 'gpuslice $*'; got: $(tr '\n' ' ' <<<"$got")"
      return
    fi
  done
  ok
}

# lacks NAME BAD -- WORD...: BAD is not among the candidates.
lacks() {
  local name=$1 bad=$2
  shift 3
  if comp "$@" | grep -qxF -- "$bad"; then fail "$name: '$bad' offered for 'gpuslice $*'"; else ok; fi
}

has "commands" gi serve apply bench version -- ""
lacks "hidden verb" complete -- ""
has "a command's prefix" serve -- se
has "a group's verbs" create destroy -- gi ""
has "a group's verb by prefix" create -- gi cr
has "bench and its plot" plot -- bench p
has "options" --placement --with-ci --json -- gi create --
has "an option by prefix" --placement -- gi create --pl
lacks "deprecated spellings stay out" --threads -- run --th
has "renamed option" --thread-percentage -- run --th
has "global options" --emulate --emu-state -- --e
has "choices" p2c rr -- serve --policy ""
has "GPU indices" 0 1 -- list -i ""
has "GPU index lists" 0,1 -- gi profiles -i 0,
has "profiles of both GPUs" 1g.5gb 1g.10gb 3g.20gb 3g.40gb -- gi create ""
has "profiles by prefix" 1g.5gb 1g.10gb 1g.5gb+me -- gi create 1g
lacks "profiles by prefix" 3g.20gb -- gi create 1g
has "profiles of the GPU -i selects" 3g.40gb -- gi create -i 1 3
lacks "profiles of another GPU" 3g.20gb -- gi create -i 1 3
has "profile lists" 1g.5gb,1g.5gb -- gi create -i 0 1g.5gb,1g.5
has "a profile option's value" 2g.10gb -- run --profile 2g
has "config names of the -f file" all-1g.5gb all-1g.10gb -- apply -f "$src/configs/a100-40gb.mig-parted.yaml" -c all-1g
has "config names, long spellings" all-balanced -- assert --config-file "$src/configs/a100-40gb.mig-parted.yaml" --selected-config all-b
has "model keys" a100-40gb a100-80gb -- layouts a100
has "a global option's value" h100-80gb -- --emulate h100
has "CI profiles of both GPUs" 1c.3g.20gb 2c.7g.40gb 1c.3g.40gb 4g.40gb -- ci create ""
has "CI profiles of the GPU -i selects" 1c.3g.40gb 2c.3g.40gb -- ci create -i 1 ""
lacks "CI profiles of another GPU" 1c.3g.20gb -- ci create -i 1 ""
has "CI profile lists" 1c.7g.80gb,1c.7g.80gb -- ci create -i 1 1c.7g.80gb,1c.7

# Job ids: the caller's own, from the directory the command would use (the
# emulator's state's by default, --jobs-dir's when given).
"$bin" -q queue submit -i 0 --profile 1g.5gb -- true >/dev/null || fail "setup: queue submit"
"$bin" -q queue submit -i 0 --profile 1g.5gb -- true >/dev/null || fail "setup: queue submit"
has "job ids to cancel" j000001 j000002 -- queue cancel ""
has "job ids by prefix, after one" j000002 -- queue cancel j000001 j
has "a job's log" j000001 j000002 -- jobs log ""
mkdir -p "$tmp/other" && cp -r "$GPUSLICE_EMU_STATE.jobs/." "$tmp/other/"
rm -f "$tmp/other/queue/j000001.json"
has "--jobs-dir's jobs" j000002 -- queue cancel --jobs-dir "$tmp/other" ""
lacks "not the default dir's with --jobs-dir" j000001 -- jobs log --jobs-dir="$tmp/other" ""
out=$("$bin" complete -- jobs log --jobs-dir "$tmp/none/jobs" "" 2>&1)
rc=$?
if [ "$rc" = 0 ] && [ -z "$out" ] && [ ! -e "$tmp/none" ]; then ok; else
  fail "a missing jobs dir: exit $rc, '$out', created: $(ls -d "$tmp/none" 2>&1)"; fi
if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
  # root may read every user's job; completion still offers only its own.
  q=$GPUSLICE_EMU_STATE.jobs/queue
  sed 's/j000002/j000003/' "$q/j000002.json" >"$q/j000003.json" && chown nobody "$q/j000003.json"
  if "$bin" jobs 2>/dev/null | grep -q j000003; then ok; else fail "setup: nobody's job not listed"; fi
  lacks "another user's job" j000003 -- queue cancel ""
else
  echo "skip: not root (another user's job file needs chown)"
fi

# Files where a file goes: bash's own completion of this directory.
mkdir -p "$tmp/cwd" && : >"$tmp/cwd/workloads.yaml"
got=$(cd "$tmp/cwd" && comp plan work)
if [ "$got" = workloads.yaml ]; then ok; else fail "plan's file operand: got '$got'"; fi
got=$(cd "$tmp/cwd" && comp apply -f work)
if [ "$got" = workloads.yaml ]; then ok; else fail "apply -f's file: got '$got'"; fi

# The answers do not depend on a usable machine: a corrupt state file
# offers no profiles and prints nothing.
printf 'not json' >"$tmp/bad.json"
out=$(GPUSLICE_EMU_STATE=$tmp/bad.json "$bin" complete -- gi create 1g 2>&1)
rc=$?
if [ "$rc" = 0 ] && [ -z "$out" ]; then ok; else fail "complete on a corrupt state: exit $rc, '$out'"; fi

# Under bash-completion (Debian's bash_completion), whose word splitting
# follows readline's (COMP_WORDBREAKS: "--policy=r" is three words, "9:4"
# three): the script puts them back together and answers the same.
bc=/usr/share/bash-completion/bash_completion
if [ -r "$bc" ]; then
  got=$(
    # shellcheck source=/dev/null
    . "$bc" >/dev/null 2>&1
    . "$src/deploy/completion/gpuslice.bash"
    COMP_WORDS=("$bin" serve --policy = r) COMP_CWORD=4 COMP_LINE="gpuslice serve --policy=r"
    COMP_POINT=${#COMP_LINE} COMPREPLY=()
    _gpuslice gpuslice r = && printf '%s\n' "${COMPREPLY[@]}"
    COMP_WORDS=("$bin" gi create 1g) COMP_CWORD=3 COMP_LINE="gpuslice gi create 1g"
    COMP_POINT=${#COMP_LINE} COMPREPLY=()
    _gpuslice gpuslice 1g create && printf '%s\n' "${COMPREPLY[@]}"
  )
  if grep -qx rr <<<"$got" && [ "$(grep -cx 1g.10gb <<<"$got")" = 1 ]; then ok; else
    fail "under bash-completion: got $(tr '\n' ' ' <<<"$got")"; fi
else
  echo "skip: bash-completion is not installed (its word splitting is not checked)"
fi

# zsh: "word:description", with ':' in a word escaped.
out=$("$bin" complete --shell zsh -- gi create 1g.5)
case "$out" in *"1g.5gb:profile 19 on a100-40gb"*) ok ;; *) fail "zsh's lines: '$out'" ;; esac
if command -v zsh >/dev/null; then
  if zsh -n "$src/deploy/completion/_gpuslice"; then ok; else fail "_gpuslice does not parse in zsh"; fi
  # At an interactive zsh (tests/lib/zsh-complete.zsh types the keys): what
  # TAB puts on the command line, and the listing with descriptions.
  z=$tmp/zsh
  mkdir -p "$z/bin" && : >"$z/layout.yaml" && printf '#!/bin/sh\n' >"$z/bin/zzgs-worker" &&
    chmod +x "$z/bin/zzgs-worker"
  tab=$'\t'
  zsh -f "$src/tests/lib/zsh-complete.zsh" "$src/deploy/completion" "$(dirname "$bin"):$z/bin" \
    "$z/lines" "gpuslice gi cre$tab" "gpuslice gi create -i 1 1g.10gb+$tab" \
    "gpuslice gi create 1g.5$tab$tab" "gpuslice --log-format js$tab" \
    "gpuslice apply -f $z/lay$tab" "gpuslice serve -- zzgs-wor$tab"
  rc=$?
  mapfile -t zl <"$z/lines"
  zline() { # zline N EXPECTED WHAT
    if [ "${zl[$1]-}" = "$2" ]; then ok; else fail "zsh: $3: the line is '${zl[$1]-}', not '$2'"; fi
  }
  [ "$rc" = 0 ] && ok || fail "zsh-complete.zsh exited $rc (2: no zsh/zpty; 1: a line never came)"
  zline 0 "gpuslice gi create " "a verb"
  zline 1 "gpuslice gi create -i 1 1g.10gb+me " "a profile of the GPU -i selects (H100)"
  zline 2 "gpuslice gi create 1g.5gb" "two profiles: their common part"
  zline 3 "gpuslice --log-format json " "a fixed choice"
  zline 4 "gpuslice apply -f $z/layout.yaml " "a file"
  zline 5 "gpuslice serve -- zzgs-worker " "a command after --"
  listing=$(tr -d '\r' <"$z/lines.tty" 2>/dev/null)
  if grep -Eq '1g\.5gb\+me +-- profile 20 on a100-40gb' <<<"$listing" &&
    ! grep -q 'h100' <<<"$listing"; then ok; else
    fail "zsh: the second TAB's listing lacks '1g.5gb+me -- profile 20 on a100-40gb' (or names h100)"
  fi
else
  echo "skip: zsh is not installed (the zsh script is not checked)"
fi
summary
