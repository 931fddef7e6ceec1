#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-arch-limits.sh: no file in src/ over 1,000 lines and no function over
# 80 (scripts/layers.py limits), unless a "limit: <reason>" comment says
# why; and the check fails where it should: a scratch file of 1,001 lines,
# a function of 81, each passing once given its reason, and 80 lines passing
# without one. Ends with "N passed, N failed".
set -uo pipefail
src=${GS_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$src/tests/lib/common.sh"
tmp=$(gs_tmpdir arch-limits)
trap 'rm -rf "$tmp"' EXIT
check() { python3 "$src/scripts/layers.py" limits "$1" 2>"$tmp/err"; }

check "$src/src" && ok || fail "src/ is over its limits: $(cat "$tmp/err")"

mkdir -p "$tmp/s/x"
# a function of n lines: signature, brace, n-3 statements, closing brace
func() { # name lines
  printf 'int %s(void)\n{\n' "$1"
  for _ in $(seq $(($2 - 3))); do printf '  (void)0;\n'; done
  printf '}\n'
}
{ printf '/* x.c */\n'; func ok80 80; } >"$tmp/s/x/x.c"
check "$tmp/s" && ok || fail "an 80-line function was refused: $(cat "$tmp/err")"
{ printf '/* x.c */\n'; func long81 81; } >"$tmp/s/x/x.c"
if check "$tmp/s"; then fail "an 81-line function passed"; else
  grep -q "x/x.c:2: a function of 81 lines" "$tmp/err" && ok || fail "81 lines: $(cat "$tmp/err")"
fi
{ printf '/* x.c */\n/* limit: a table written out whole */\n'; func long81 81; } >"$tmp/s/x/x.c"
check "$tmp/s" && ok || fail "an 81-line function with its reason was refused: $(cat "$tmp/err")"
{ printf '/* x.c */\n'; for i in $(seq 1000); do printf 'int v%d;\n' "$i"; done; } >"$tmp/s/x/x.c"
if check "$tmp/s"; then fail "a 1,001-line file passed"; else
  grep -q "x/x.c: 1001 lines" "$tmp/err" && ok || fail "1,001 lines: $(cat "$tmp/err")"
fi
sed -i '1s|.*|/* x.c; limit: generated, one line a value */|' "$tmp/s/x/x.c"
check "$tmp/s" && ok || fail "a long file with its reason was refused: $(cat "$tmp/err")"
summary
