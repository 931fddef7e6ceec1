#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# bench/plan-tables.py: the tables of bench/plan.sh's trace replay. Reads
# the JSON lines of `gpuslice plan replay --json` (one per variant and
# policy, wrapped as {"variant", "run"}) and FGD's published curves; prints
# per variant policy x arrival percentage (allocation / fragmentation) with
# FGD's published allocation beside ours, then a summary over the variants:
# where ours stands against fgd (everywhere, and where the cluster is
# contended: fgd drops tasks), and how far our replay of FGD's policies is
# from their published curves.
import csv
import json
import os
import sys

lines, published, mode, seeds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
first = int(sys.argv[5]) if len(sys.argv) > 5 else 1
POINTS = range(50, 140, 10)
PUBLISHED = {"fgd": "FGD", "best-fit": "BestFit", "random": "Random"}

runs = {}
for line in open(lines):
    if line.strip():
        r = json.loads(line)
        runs.setdefault(r["variant"], {})[r["run"]["policy"]] = r["run"]

pub = {}
if mode == "fractional" and os.path.exists(published):
    for r in csv.DictReader(open(published)):
        pub.setdefault((r["workload"], r["sc_policy"].split("-", 1)[1]), []).append(r)


def published_curve(variant, name):
    rows = pub.get(("openb_pod_list_" + variant, name))
    if not rows:
        return None
    return {x: sum(float(r[str(x)]) for r in rows) / len(rows) for x in range(0, 131) if rows[0].get(str(x))}


def span(xs):
    """30, 31, 32, 40 -> '30-32%, 40%'"""
    out, start = [], None
    for i, x in enumerate(xs):
        if start is None:
            start = x
        if i + 1 == len(xs) or xs[i + 1] != x + 1:
            out.append(f"{start}%" if start == x else f"{start}-{x}%")
            start = None
    return ", ".join(out)


where = "the trace's own GPUs, fractional shares" if mode == "fractional" else \
    "a MIG fleet of the same size (A100-40GB / H100-80GB), shares rounded up to 1g/2g/3g/4g/7g"
print(f"\n## Trace replay on {where}\n")
print(f"Allocated GPU / fragmentation (FGD's measure), % of the 6,212 GPUs' capacity, when the arrived GPU "
      f"demand is the column's % of capacity; mean of {seeds} seeds, {first} to {first + seeds - 1} "
      f"(FGD's published rows: mean of its 10 seeds).")
summary = []
for variant, pol in runs.items():
    print(f"\n### {variant}\n")
    print("| policy | " + " | ".join(f"{x}%" for x in POINTS) + " |")
    print("| --- |" + " --- |" * len(POINTS))
    for name in ("ours", "fgd", "best-fit", "first-fit", "random"):
        if name in pol:
            c, f = pol[name]["alloc_curve"], pol[name]["frag_curve"]
            print(f"| {name} | " + " | ".join(f"{c[x]:.2f} / {f[x]:.2f}" if x < len(c) and c[x] is not None
                                               else "-" for x in POINTS) + " |")
    dev = {}
    for ours, theirs in PUBLISHED.items():
        p = published_curve(variant, theirs)
        if not p:
            continue
        print(f"| {theirs} (published) | " + " | ".join(f"{p[x]:.2f}" if x in p else "-" for x in POINTS) + " |")
        if ours in pol:
            c = pol[ours]["alloc_curve"]
            d = [(abs(c[x] - p[x]), x) for x in range(50, 131) if x in p and c[x] is not None]
            dev[ours] = max(d)
    if "ours" in pol and "fgd" in pol:
        o, g = pol["ours"]["alloc_curve"], pol["fgd"]["alloc_curve"]
        diff = {x: o[x] - g[x] for x in range(50, 131)}
        low = min(diff, key=diff.get)
        behind = [x for x in range(50, 131) if diff[x] < -0.005]
        ahead = [x for x in range(50, 131) if diff[x] > 0.005]
        verdict = (f"ours - fgd: below at {span(behind)} (down to {diff[low]:+.2f} at {low}%)" if behind
                   else "ours - fgd: at or above fgd at every percentage from 50 to 130")
        verdict += f"; above at {span(ahead)}" if ahead else "; never above"
        print(f"\n{verdict}; {diff[100]:+.2f} at 100%, {diff[130]:+.2f} at 130%.")
        # Contended: fgd has dropped more than 0.1 point of the capacity's worth of tasks.
        hot = [x for x in range(50, 131) if g[x] < x - 0.1]
        hot_ahead = [x for x in hot if diff[x] > 0.005]
        summary.append((variant, diff[low], low, diff[100], diff[130], dev, hot, hot_ahead))
    if dev:
        print("Our replay of FGD's policies against their published curves, largest gap over 50-130%: " +
              ", ".join(f"{k} {v[0]:.2f} (at {v[1]}%)" for k, v in dev.items()) + ".")

if summary:
    print(f"\n### Summary ({mode})\n")
    head = "| variant | ours - fgd: lowest over 50-130% | at 100% | at 130% | contended (fgd drops tasks): ours above at |"
    if mode == "fractional":
        head += " fgd / best-fit / random vs published, largest gap |"
    print(head)
    print("| --- | --- | --- | --- | --- |" + (" --- |" if mode == "fractional" else ""))
    for variant, low, at, d100, d130, dev, hot, hot_ahead in summary:
        row = f"| {variant} | {low:+.2f} (at {at}%) | {d100:+.2f} | {d130:+.2f} | "
        row += (f"{len(hot_ahead)} of {len(hot)} points ({span(hot)})" if hot else "never contended") + " |"
        if mode == "fractional":
            row += " " + (" / ".join(f"{dev[k][0]:.2f}" if k in dev else "-" for k in PUBLISHED)
                          if dev else "no published curve") + " |"
        print(row)
