#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""layers.py: the layer rules of src/layers.txt, read from the sources.

  scripts/layers.py check [SRC]   every #include "layer/..." of SRC/<layer>/
                                  allowed by the table (and no other layer's
                                  internal.h); exit 1 naming each one that is not
  scripts/layers.py svg [SRC]     the include graph between layers as SVG, drawn
                                  from the sources: docs/layers.svg is
                                  `scripts/layers.py svg src > docs/layers.svg`
                                  (tests/arch/test-arch-picture.sh: it is current)
  scripts/layers.py text [SRC]    the same graph as text: who includes whom, how often
  scripts/layers.py limits [SRC]  no file of SRC over 1,000 lines and no function over 80,
                                  unless a comment says why: "limit: <reason>" in the
                                  file's first 20 lines, or in the 3 lines above the function

The build runs `check` before compiling (CMakeLists.txt), so a file that
includes a header its layer may not use fails the build.
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
PROTO_HEADERS = {"inference.pb-c.h"}


def read_table(src):
    """{layer: set of layers it may use}, in the file's order."""
    table = {}
    with open(os.path.join(src, "layers.txt")) as f:
        for n, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            if ":" not in line:
                sys.exit("%s/layers.txt:%d: expected 'layer: uses...'" % (src, n))
            name, uses = line.split(":", 1)
            table[name.strip()] = set(uses.split())
    for name, uses in table.items():
        for u in uses:
            if u not in table:
                sys.exit("%s/layers.txt: %s may use %s, which has no row" % (src, name, u))
    return table


def includes(src, table):
    """(file, line number, including layer, included layer, header) for each
    quoted include that names a layer's header."""
    for layer in sorted(os.listdir(src)):
        d = os.path.join(src, layer)
        if not os.path.isdir(d):
            continue
        if layer not in table:
            sys.exit("src/%s: a folder with no row in src/layers.txt (add its layer there)" % layer)
        for name in sorted(os.listdir(d)):
            if not name.endswith((".c", ".h")):
                continue
            path = os.path.join(d, name)
            with open(path, errors="replace") as f:
                for n, line in enumerate(f, 1):
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    inc = m.group(1)
                    if inc in PROTO_HEADERS:
                        yield path, n, layer, "proto", inc
                    elif "/" in inc and inc.split("/", 1)[0] in table:
                        yield path, n, layer, inc.split("/", 1)[0], inc


def check(src):
    table = read_table(src)
    bad = []
    for path, n, layer, used, inc in includes(src, table):
        rel = os.path.relpath(path, os.path.dirname(os.path.abspath(src)))
        if used != layer and os.path.basename(inc).endswith("internal.h"):
            bad.append("%s:%d: includes %s, the %s layer's internals (use its interface header)"
                       % (rel, n, inc, used))
        elif used != layer and used != "util" and used not in table[layer]:
            allowed = ", ".join(sorted(table[layer] | {"util"})) or "util"
            bad.append("%s:%d: includes %s, but the %s layer may use only %s (src/layers.txt)"
                       % (rel, n, inc, layer, allowed))
    for b in bad:
        print("layers: " + b, file=sys.stderr)
    if bad:
        print("layers: %d include(s) break the layer table; move the code to a layer that may "
              "use it, or change src/layers.txt and docs/architecture.md together" % len(bad),
              file=sys.stderr)
        return 1
    return 0


def graph(src):
    """{(from, to): number of files of from that include to}, and the table."""
    table = read_table(src)
    files = {}
    for path, _, layer, used, _ in includes(src, table):
        if used != layer:
            files.setdefault((layer, used), set()).add(path)
    return {k: len(v) for k, v in files.items()}, table


def ranks(edges, layers):
    """A layer's row: 0 for those nothing includes... the longest path from the top."""
    rank = {l: 0 for l in layers}
    for _ in layers:
        for (a, b) in edges:
            if rank[b] < rank[a] + 1:
                rank[b] = rank[a] + 1
    return rank


def text(src):
    edges, table = graph(src)
    for layer in table:
        outs = sorted((b, n) for (a, b), n in edges.items() if a == layer)
        print("%-9s -> %s" % (layer, ", ".join("%s (%d)" % o for o in outs) or "-"))
    return 0


def order_rows(rows, edges, rank):
    """Each row's layers ordered by the mean place of the layers that include
    them (then of those they include), so that fewer lines cross."""
    place = {l: i for r in rows.values() for i, l in enumerate(r)}
    for sweep in range(4):
        down = sweep % 2 == 0
        for r in sorted(rows, reverse=not down):
            def key(l):
                near = [place[a] for (a, b) in edges if b == l and down] + \
                       [place[b] for (a, b) in edges if a == l and not down]
                return (sum(near) / len(near) if near else place[l], place[l])
            rows[r].sort(key=key)
            for i, l in enumerate(rows[r]):
                place[l] = i


def svg(src):
    edges, table = graph(src)
    edges = {k: n for k, n in edges.items() if k[1] != "util"}  # util: said once, in its box
    layers = list(table)
    rank = ranks(edges, layers)
    if "util" in rank:  # under everything, as every layer stands on it
        rank["util"] = max(r for l, r in rank.items() if l != "util") + 1
    rows = {}
    for l in layers:
        rows.setdefault(rank[l], []).append(l)
    order_rows(rows, edges, rank)
    bw, bh, gx, gy = 96, 30, 40, 64
    width = max(len(r) for r in rows.values()) * (bw + gx) + gx
    height = len(rows) * (bh + gy) + gy // 2
    pos = {}
    for r, names in rows.items():
        x0 = (width - len(names) * (bw + gx) + gx) / 2
        for i, l in enumerate(names):
            pos[l] = (x0 + i * (bw + gx), gy / 2 + r * (bh + gy))

    def gaps(r):
        """x of the free lanes of row r: between its boxes and beside them."""
        xs = sorted(pos[l][0] for l in rows[r])
        return [xs[0] - gx / 2] + [x + bw + gx / 2 for x in xs]

    def spread(box, others):
        """Where each of box's lines leaves or enters it, left to right."""
        others = sorted(others, key=lambda o: pos[o][0])
        return {o: pos[box][0] + bw * (i + 1) / (len(others) + 1) for i, o in enumerate(others)}

    outs = {l: spread(l, [b for (a, b) in edges if a == l]) for l in layers}
    ins = {l: spread(l, [a for (a, b) in edges if b == l]) for l in layers}
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'font-family="sans-serif" font-size="13">' % (width, height),
           '<defs><marker id="a" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
           'markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker></defs>',
           '<rect width="100%" height="100%" fill="white"/>']
    for (a, b) in sorted(edges):
        x1, y1 = outs[a][b], pos[a][1] + bh
        x2, y2 = ins[b][a], pos[b][1]
        pts = [(x1, y1)]
        for r in range(rank[a] + 1, rank[b]):  # a row it crosses: through a free lane
            y = gy / 2 + r * (bh + gy) + bh / 2
            want = x1 + (x2 - x1) * (y - y1) / (y2 - y1)
            x = min(gaps(r), key=lambda g: abs(g - want))
            pts += [(x, y - bh / 2 - 6), (x, y + bh / 2 + 6)]
        pts.append((x2, y2))
        out.append('<polyline points="%s" fill="none" stroke="#555" marker-end="url(#a)">'
                   '<title>%s includes %s</title></polyline>'
                   % (" ".join("%.0f,%.0f" % p for p in pts), a, b))
    for l, (x, y) in pos.items():
        label = l + (" (all use it)" if l == "util" else "")
        out.append('<rect x="%.0f" y="%.0f" width="%d" height="%d" rx="5" fill="#eef3fb" '
                   'stroke="#345"/>' % (x, y, bw, bh))
        out.append('<text x="%.0f" y="%.0f" text-anchor="middle" font-size="%d">%s</text>'
                   % (x + bw / 2, y + bh / 2 + 4, 13 if l != "util" else 10, label))
    out.append("</svg>")
    print("\n".join(out))
    return 0


FILE_MAX = 1000
FUNC_MAX = 80
REASON = re.compile(r"\blimit: \S")
FUNC_START = re.compile(r"^[A-Za-z_][^;{}]*\(")


def functions(lines):
    """(first line index, line count) of each function definition: a line
    at column 0 that opens a parameter list, through its closing brace at
    column 0 (the project's style)."""
    i = 0
    while i < len(lines):
        if FUNC_START.match(lines[i]) and not lines[i].startswith(("#", "static const", "const")):
            j = i
            while j < len(lines) and not lines[j].rstrip().endswith(";") and lines[j] != "{" \
                    and not lines[j].rstrip().endswith("{"):
                j += 1
            if j < len(lines) and (lines[j] == "{" or lines[j].rstrip().endswith("{")) \
                    and not lines[j].rstrip().endswith(";"):
                k = j
                while k < len(lines) and lines[k] != "}":
                    k += 1
                yield i, k - i + 1
                i = k + 1
                continue
        i += 1


def limits(src):
    bad = []
    for d in sorted(os.listdir(src)):
        if not os.path.isdir(os.path.join(src, d)):
            continue
        for name in sorted(os.listdir(os.path.join(src, d))):
            if not name.endswith((".c", ".h")):
                continue
            rel = "src/%s/%s" % (d, name)
            with open(os.path.join(src, d, name), errors="replace") as f:
                lines = f.read().split("\n")
            n = len(lines) - (lines[-1] == "")
            if n > FILE_MAX and not any(REASON.search(l) for l in lines[:20]):
                bad.append("%s: %d lines (at most %d, or a \"limit: <reason>\" comment in its "
                           "first 20 lines)" % (rel, n, FILE_MAX))
            for start, count in functions(lines):
                if count > FUNC_MAX and not any(REASON.search(l) for l in lines[max(0, start - 3):start]):
                    bad.append("%s:%d: a function of %d lines (at most %d, or a \"limit: <reason>\" "
                               "comment just above it)" % (rel, start + 1, count, FUNC_MAX))
    for b in bad:
        print("limits: " + b, file=sys.stderr)
    return 1 if bad else 0


def main(argv):
    if len(argv) < 2 or argv[1] not in ("check", "svg", "text", "limits"):
        sys.exit(__doc__)
    src = argv[2] if len(argv) > 2 else os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                       "..", "src")
    return {"check": check, "svg": svg, "text": text, "limits": limits}[argv[1]](src)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
