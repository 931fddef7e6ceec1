#!/usr/bin/env bash
# test-fidelity-transcripts.sh: replays every published nvidia-smi transcript
# in tests/fidelity/cases/ on the emulator and diffs the tables. Each case
# file holds the real text as its source printed it (cited on its first
# lines) beside the gpuslice commands that reproduce it on the emulated model
# and driver it names; see tests/fidelity/README.md for the format.
# Normalized before the diff, on both sides: runs of blanks (copies of the
# transcripts differ in whitespace), the length of table rules, UUIDs and PCI
# bus ids (a machine's own), blank lines. Prints one line per step and ends
# with "N passed, N failed" (one count per step).
# Env: GS_BIN (gpuslice), GS_SRC (source dir), GS_TEST_TMP (scratch dir);
# FIDELITY_CASES: a glob of case names to run (default every case).
set -u
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

: "${GS_BIN:?set GS_BIN to the gpuslice binary}" "${GS_SRC:?set GS_SRC to the source dir}"
work=$(gs_tmpdir fidelity)
trap 'rm -rf "$work"' EXIT
unset GPUSLICE_EMULATE

# compare MODE EXPECTED GOT: 0 when GOT shows EXPECTED (MODE exact: all of
# it; excerpt: as one contiguous run of lines); else prints the diff.
compare() {
  python3 - "$@" <<'PY'
import difflib, re, sys
mode, want_path, got_path = sys.argv[1:4]
uuid = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
def norm(path):
    out = []
    for line in open(path, errors="replace"):
        line = re.sub(r"\s+", " ", line).strip()
        line = re.sub(r"^\+[-+]+\+$", "+-+", line)
        line = re.sub(r"^\| ?=+ ?\|$", "|=|", line)
        line = re.sub(r"MIG-GPU-" + uuid, "MIG-GPU-UUID", line)
        line = re.sub(r"\b(GPU|MIG)-" + uuid, r"\1-UUID", line)
        line = re.sub(r"\b[0-9A-Fa-f]{8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9]\b", "BUS", line)
        if line:
            out.append(line)
    return out
want, got = norm(want_path), norm(got_path)
if mode == "excerpt":
    n = len(want)
    if any(got[i:i + n] == want for i in range(len(got) - n + 1)):
        sys.exit(0)
elif want == got:
    sys.exit(0)
sys.stdout.writelines(l + "\n" for l in difflib.unified_diff(
    want, got, "real (normalized)", "emulated (normalized)", lineterm=""))
sys.exit(1)
PY
}

# run_case FILE: replays one case; one ok/fail per step.
run_case() {
  local file=$1 name spec mode=exact line step=0 cmd= label= real="$work/real" got="$work/got"
  local -a setup=()
  name=$(basename "$file" .txt)
  export GPUSLICE_EMU_STATE="$work/$name.json"
  grep -q '^# source: ' "$file" || { fail "$name: no '# source:' line"; return; }
  spec=$(sed -n 's/^# emulate: //p' "$file")
  [ -n "$spec" ] || { fail "$name: no '# emulate:' line"; return; }
  grep -q '^# match: excerpt' "$file" && mode=excerpt
  while IFS= read -r line; do setup+=("$line"); done < <(sed -n 's/^# setup: //p' "$file")
  if ! timeout 20 "$GS_BIN" -q emu reset --emulate "$spec" >/dev/null; then
    fail "$name: emu reset --emulate $spec failed"
    return
  fi
  for line in "${setup[@]}"; do
    # shellcheck disable=SC2086 # a setup line is gpuslice's arguments, split as written
    timeout 20 "$GS_BIN" -q $line >/dev/null 2>&1 || { fail "$name: setup '$line' failed"; return; }
  done
  # flush STEP: compares the step read so far.
  flush() {
    [ "$step" -gt 0 ] || return 0
    if [ -z "$cmd" ]; then
      fail "$name step $step: no '> gpuslice args' line"
    elif compare "$mode" "$real" "$got" >"$work/diff"; then
      ok
      echo "ok: $name step $step ($label)"
    else
      fail "$name step $step ($label): the emulator's output differs from the real text:"
      cat "$work/diff"
    fi
  }
  while IFS= read -r line || [ -n "$line" ]; do
    case $line in
    '# '*) ;;
    '$ '*)
      flush
      step=$((step + 1)) cmd= label=${line#\$ }
      : >"$real"
      : >"$got"
      ;;
    '> '*)
      cmd=${line#> }
      # shellcheck disable=SC2086 # the line is gpuslice's arguments, split as written
      timeout 20 "$GS_BIN" -q $cmd >>"$got" 2>/dev/null
      ;;
    '! '*)
      # a step of the real session the transcript shows no output of
      # shellcheck disable=SC2086 # the line is gpuslice's arguments, split as written
      timeout 20 "$GS_BIN" -q ${line#! } >/dev/null 2>&1 || fail "$name: '${line#! }' failed"
      ;;
    *) [ "$step" -gt 0 ] && printf '%s\n' "$line" >>"$real" ;;
    esac
  done <"$file"
  flush
}

for file in "$GS_SRC"/tests/fidelity/cases/${FIDELITY_CASES:-*}.txt; do
  [ -e "$file" ] || { fail "no case matches '${FIDELITY_CASES:-*}'"; continue; }
  run_case "$file"
done
summary
