#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-arch-layers.sh: the layer check (scripts/layers.py check, run by every
# build before any layer compiles) passes on the tree, and fails the build
# of a scratch copy given a deliberately wrong include: bench including
# serve's header (bench may use net only), serve including net's internals,
# a folder with no row in src/layers.txt. Also: the build links each layer's
# library to the ones the table names, and the include graph is drawn.
# Ends with "N passed, N failed".
set -uo pipefail
src=${GS_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$src/tests/lib/common.sh"
tmp=$(gs_tmpdir arch-layers)
trap 'rm -rf "$tmp"' EXIT

python3 "$src/scripts/layers.py" check "$src/src" 2>"$tmp/real.err" && ok ||
  fail "the tree breaks its own layer table: $(cat "$tmp/real.err")"

# A scratch copy of what a build needs, configured once; each case breaks
# one file and builds only the check's target.
mkdir -p "$tmp/tree"
cp -R "$src/CMakeLists.txt" "$src/src" "$src/scripts" "$src/proto" "$src/configs" "$tmp/tree/"
[ -d "$src/deploy" ] && cp -R "$src/deploy" "$tmp/tree/"
if ! cmake -S "$tmp/tree" -B "$tmp/build" -DGS_TESTS=OFF >"$tmp/cfg.log" 2>&1; then
  fail "the scratch copy does not configure: $(tail -5 "$tmp/cfg.log")"
  summary
  exit
fi
cmake --build "$tmp/build" --target gs-layer-check >"$tmp/ok.log" 2>&1 && ok ||
  fail "the unbroken copy fails its check: $(tail -5 "$tmp/ok.log")"

# breaks FILE LINE WANT: with LINE added to FILE, the build fails naming WANT
breaks() {
  local file=$1 line=$2 want=$3
  cp "$tmp/tree/$file" "$tmp/saved"
  printf '%s\n' "$line" >>"$tmp/tree/$file"
  if cmake --build "$tmp/build" --target gs-layer-check >"$tmp/bad.log" 2>&1; then
    fail "$file with '$line': the build went on"
  elif grep -q "$want" "$tmp/bad.log"; then
    ok
  else
    fail "$file with '$line': the failure does not say '$want': $(tail -3 "$tmp/bad.log")"
  fi
  cp "$tmp/saved" "$tmp/tree/$file"
}
breaks src/bench/csv.c '#include "serve/serve.h"' \
  "src/bench/csv.c:.*includes serve/serve.h, but the bench layer may use only net, proto, util"
breaks src/serve/admin.c '#include "net/internal.h"' \
  "src/serve/admin.c:.*includes net/internal.h, the net layer's internals"
breaks src/geometry/models.c '#include "backend/backend.h"' \
  "src/geometry/models.c:.*the geometry layer may use only util"
mkdir "$tmp/tree/src/newlayer"
printf '/* x */\n' >"$tmp/tree/src/newlayer/x.c"
if cmake --build "$tmp/build" --target gs-layer-check >"$tmp/new.log" 2>&1; then
  fail "a folder with no row in src/layers.txt passed"
else
  grep -q "src/newlayer: a folder with no row" "$tmp/new.log" && ok ||
    fail "the new folder's failure: $(tail -3 "$tmp/new.log")"
fi
rm -rf "$tmp/tree/src/newlayer"
cmake --build "$tmp/build" --target gs-layer-check >"$tmp/again.log" 2>&1 && ok ||
  fail "restored, the copy still fails: $(tail -3 "$tmp/again.log")"

# Each layer's library links exactly the layers its row names (and util),
# read from CMake's own graph of the build's targets.
(cd "$tmp/build" && cmake --graphviz=deps.dot . >/dev/null 2>&1)
links() { # layer: the gs-* libraries its library links, sorted
  grep -o "// gs-$1 -> gs-[a-z-]*" "$tmp/build/deps.dot" | sed 's/.*-> gs-//' | sort | tr '\n' ' '
}
for row in "bench:net proto util" "serve:backend jobs layout net util" "net:util" "geometry:util" \
           "worker:geometry net proto util" "jobs:backend layout plan util"; do
  want=${row#*:}
  got=$(links "${row%%:*}")
  [ "$got" = "$want " ] && ok || fail "gs-${row%%:*} links '$got', its row says '$want'"
done
python3 "$src/scripts/layers.py" svg "$src/src" >"$tmp/layers.svg" &&
  grep -q '<svg' "$tmp/layers.svg" && grep -q '>bench<' "$tmp/layers.svg" && ok ||
  fail "layers.py svg drew no picture"
summary
