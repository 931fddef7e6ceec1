# shellcheck shell=bash
# tests/lib/common.sh: what the bash tests share: a scratch directory, the
# passed/failed counts and the final "N passed, N failed" line. Sourced by a
# test after its `set` line; safe under set -u.

passed=0
failed=0
ok() { passed=$((passed + 1)); }
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }

# gs_tmpdir NAME: prints a new scratch directory NAME.XXXXXX under
# GS_TEST_TMP (else /tmp), or any new one if that cannot be made.
gs_tmpdir() {
  mkdir -p "${GS_TEST_TMP:-/tmp}" 2>/dev/null
  mktemp -d "${GS_TEST_TMP:-/tmp}/$1.XXXXXX" 2>/dev/null || mktemp -d
}

# summary: the final line; its status is the test's.
summary() {
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}

# serve_summary PYOUT RC ERRFILE: for the tests whose Python part ends with
# "RESULT <passed> <failed>" in PYOUT (no such line: one failure) and whose
# serve then exited with RC, which must be 0 after SIGTERM; ERRFILE is
# serve's stderr, shown when it is not. Ends with summary.
serve_summary() {
  local res
  res=$(sed -n 's/^RESULT \([0-9]*\) \([0-9]*\)$/\1 \2/p' "$1")
  if [ -n "$res" ]; then
    passed=${res% *}
    failed=${res#* }
  else
    passed=0 failed=1
  fi
  if [ "$2" -eq 0 ]; then
    ok
    echo "ok: serve exits 0 after SIGTERM"
  else
    fail "serve exited $2; stderr: $(tail -5 "$3")"
  fi
  summary
}
