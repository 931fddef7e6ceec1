#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-arch-picture.sh: docs/architecture.md stays true: its picture,
# docs/layers.svg, is what `scripts/layers.py svg src` draws from today's
# sources, and its layer table names, for each layer, the layers
# src/layers.txt lets it use (util aside: every layer may use it).
# Ends with "N passed, N failed".
set -uo pipefail
src=${GS_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$src/tests/lib/common.sh"
tmp=$(gs_tmpdir arch-picture)
trap 'rm -rf "$tmp"' EXIT

python3 "$src/scripts/layers.py" svg "$src/src" >"$tmp/layers.svg" ||
  fail "scripts/layers.py svg failed"
if cmp -s "$tmp/layers.svg" "$src/docs/layers.svg"; then
  ok
else
  fail "docs/layers.svg is not what the sources draw today; regenerate it with" \
    "\`python3 scripts/layers.py svg src > docs/layers.svg\`"
fi

# The table's "may use" column against src/layers.txt, row by row.
python3 - "$src" >"$tmp/table.out" 2>&1 <<'PY'
import os, re, sys
src = sys.argv[1]
sys.path.insert(0, os.path.join(src, "scripts"))
import layers
table = layers.read_table(os.path.join(src, "src"))
doc = {}
for line in open(os.path.join(src, "docs", "architecture.md")):
    m = re.match(r"^\| `([a-z-]+)` \|.*\| ([^|]+) \|\s*$", line)
    if m:
        uses = re.sub(r"\([^)]*\)", "", m.group(2)).strip()
        if uses.startswith("all"):
            uses = set(table) - {"util", "nvml-emu", m.group(1)}
        elif uses == "nothing":
            uses = set()
        else:
            uses = {u.strip() for u in uses.split(",")}
        doc[m.group(1)] = uses - {"util"}
bad = 0
for layer, uses in table.items():
    if layer not in doc:
        print("docs/architecture.md has no row for the %s layer" % layer); bad += 1
    elif doc[layer] != uses:
        print("docs/architecture.md: %s may use %s; src/layers.txt says %s"
              % (layer, sorted(doc[layer]), sorted(uses))); bad += 1
for layer in doc:
    if layer not in table:
        print("docs/architecture.md has a row for %s, which src/layers.txt lacks" % layer); bad += 1
sys.exit(1 if bad else 0)
PY
[ $? -eq 0 ] && ok || fail "the layer table: $(cat "$tmp/table.out")"
summary
