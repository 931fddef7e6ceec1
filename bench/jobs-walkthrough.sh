#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# jobs-walkthrough.sh [TIME_SCALE] [SVG]: the A100 MIG walkthrough's BERT
# fine-tuning comparison, replayed on an emulated A100-SXM4-40GB with
# `gpuslice run` and `gpuslice job-emu` (EMULATED: job-emu's speeds come from
# the published figures it cites; nothing runs on a GPU). Seven jobs:
#   1. at once on seven 1g.5gb MIG slices      (walkthrough: 5,539 s each)
#   2. at once on the whole GPU, time-sliced   (walkthrough: 8,207 s each)
#   3. in series on the whole GPU              (walkthrough: 10,361 s in total)
#   4. at once under MPS                       (no published figure: assumed)
# Prints a Markdown table of emulated seconds (what job-emu accumulated, not
# wall time) and writes an SVG bar chart (default docs/jobs-walkthrough.svg).
# TIME_SCALE (default 2000) is emulated seconds per wall second.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
scale=${1:-2000}
svg=${2:-$src/docs/jobs-walkthrough.svg}
gs=${GPUSLICE:-$src/build/gpuslice}
[ -x "$gs" ] || { echo "jobs-walkthrough: build first (make build), or set GPUSLICE" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/gpuslice-walk.XXXXXX")
trap 'rm -rf "$work"' EXIT
unset GPUSLICE_EMULATE GPUSLICE_JOBS_DIR GPUSLICE_MPS_CONTROL
export GPUSLICE_EMU_STATE="$work/emu.json"
g() { "$gs" -q "$@"; }
emu() { echo "$gs" -q job-emu --model bert-ft --time-scale "$scale" --json "$@"; }

# Seven `gpuslice run`s at once; each job's JSON result into $work/$1.N.
seven() {
  local tag=$1
  shift
  for i in 1 2 3 4 5 6 7; do
    g run "$@" >"$work/$tag.$i" 2>>"$work/stderr" &
  done
  wait
}

g emu reset --emulate a100-40gb >/dev/null
g mig enable >/dev/null
g gi create 1g.5gb,1g.5gb,1g.5gb,1g.5gb,1g.5gb,1g.5gb,1g.5gb -C >/dev/null
seven mig --profile 1g.5gb -- $(emu)
g ci destroy >/dev/null
g gi destroy >/dev/null
g mig disable >/dev/null
seven timeslice --mode timeslice -- $(emu --start-together 7)
for i in 1 2 3 4 5 6 7; do g run --mode timeslice -- $(emu) >"$work/series.$i" 2>>"$work/stderr"; done
seven mps --mode mps -- $(emu --start-together 7)
g mps stop -i 0 >/dev/null

grep -v '^job-emu: EMULATED' "$work/stderr" >&2 || true

python3 - "$work" "$svg" <<'PY'
import glob, json, sys
work, svg = sys.argv[1], sys.argv[2]
def runs(tag):
    return [json.load(open(f)) for f in sorted(glob.glob(f"{work}/{tag}.*"))]
rows = []  # setup, per-job s, all done after s, published, source
for tag, setup, published in [
        ("mig", "7 jobs at once on 7 MIG 1g.5gb slices", "5,539 s each"),
        ("timeslice", "7 jobs at once, time-sliced (no MIG)", "8,207 s each"),
        ("series", "7 jobs in series on the whole GPU", "10,361 s in total"),
        ("mps", "7 jobs at once under MPS (no MIG)", "none published")]:
    r = runs(tag)
    per = sum(x["emulated_seconds"] for x in r) / len(r)
    done = sum(x["emulated_seconds"] for x in r) if tag == "series" else max(x["emulated_seconds"] for x in r)
    rows.append((setup, per, done, published, r[0]["source"]))
series = rows[2][2]
print("| setup (EMULATED, A100-40GB, BERT fine-tuning) | per job (s) | all 7 done after (s) | jobs/hour | walkthrough | source of the emulated speed |")
print("| --- | ---: | ---: | ---: | --- | --- |")
for setup, per, done, pub, src in rows:
    print(f"| {setup} | {per:,.0f} | {done:,.0f} | {7 * 3600 / done:.2f} | {pub} | {src} |")
print(f"\nthroughput vs in series: " + ", ".join(f"{r[0].split(' (')[0].replace('7 jobs ', '')}: {series / r[2]:.2f}x" for r in rows))

# The chart: one bar per setup, time until all seven are done.
w, h, left, top, bar, gap = 760, 60 + 52 * len(rows), 300, 40, 34, 18
top_s = max(r[2] for r in rows) * 1.15
out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="13">',
       f'<rect width="{w}" height="{h}" fill="white"/>',
       f'<text x="10" y="22" font-size="15" font-weight="bold">7 BERT fine-tuning jobs, one A100-40GB: time until all are done (EMULATED)</text>']
colors = ["#3b7dd8", "#d8843b", "#8a8a8a", "#4caf50"]
for i, (setup, per, done, pub, src) in enumerate(rows):
    y = top + i * (bar + gap)
    bw = (w - left - 20) * done / top_s
    out.append(f'<text x="10" y="{y + bar * 0.65:.0f}">{setup.replace("&", "&amp;")}</text>')
    out.append(f'<rect x="{left}" y="{y}" width="{bw:.1f}" height="{bar}" fill="{colors[i % 4]}"/>')
    out.append(f'<text x="{left + bw + 6:.1f}" y="{y + bar * 0.65:.0f}">{done:,.0f} s</text>')
out.append(f'<text x="10" y="{h - 12}" font-size="11" fill="#555">Speeds: A100 MIG walkthrough (1g, time-sliced, series); MPS assumed equal to 1g slices (MISO premise). bench/jobs-walkthrough.sh</text>')
out.append('</svg>')
open(svg, "w").write("\n".join(out) + "\n")
print(f"\nchart: {svg}")
PY
