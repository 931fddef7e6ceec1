#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-bench-plot.sh: `gpuslice bench plot -o` writes the format its name
# asks for: SVG as text, PNG and PDF rendered through librsvg and cairo
# (checked by their magic bytes and, for PNG, the chart's size in its IHDR),
# whatever the ending's case; any other ending is refused (exit 2) with a
# message naming the formats, before a CSV is read, and no file is written.
# No server: the CSVs are written here, one of ours and one of perf_analyzer's
# shape. Ends with "N passed, N failed".
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/common.sh"
bin=${GS_BIN:-$here/../../build/gpuslice}
tmp=$(gs_tmpdir bench-plot)
trap 'rm -rf "$tmp"' EXIT
check() { if eval "$2"; then ok; echo "ok: $1"; else fail "$1 ($2)"; fi; }

cat >"$tmp/a.csv" <<'CSV'
Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,Server Compute Input,Server Compute Infer,Server Compute Output,Client Recv,p50 latency,p90 latency,p95 latency,p99 latency
1,1612.3,12,40,0,0,620,0,3,660,700,720,800
4,1599.1,12,40,1800,0,620,0,3,2480,2600,2700,2900
2,1610.8,12,40,600,0,620,0,3,1240,1300,1350,1400
CSV
printf 'Concurrency,Inferences/Second,p90 latency\n1,800,1300\n2,1500,1400\n' >"$tmp/b.csv"

# magic FILE: the first 8 bytes in hex
magic() { head -c 8 "$1" | od -An -tx1 | tr -d ' \n'; }

"$bin" bench plot "$tmp/a.csv" "$tmp/b.csv" --latency-budget 2ms -o "$tmp/c.svg" 2>"$tmp/e"
check "svg: exit 0, an SVG document" '[ $? = 0 ] && head -c 200 $tmp/c.svg | grep -q "<svg"'

"$bin" bench plot "$tmp/a.csv" "$tmp/b.csv" --latency-budget 2ms -o "$tmp/c.png" 2>"$tmp/e"
check "png: exit 0" '[ $? = 0 ]'
check "png: PNG's signature (89 50 4e 47 0d 0a 1a 0a)" '[ "$(magic $tmp/c.png)" = 89504e470d0a1a0a ]'
check "png: the chart's size in its IHDR (1100 x 480)" \
  '[ "$(python3 -c "import struct,sys; d=open(sys.argv[1],\"rb\").read(24); print(struct.unpack(\">II\", d[16:24]))" $tmp/c.png)" = "(1100, 480)" ]'

"$bin" bench plot "$tmp/a.csv" -o "$tmp/curves.pdf" 2>"$tmp/e"
check "pdf: exit 0" '[ $? = 0 ]'
check "pdf: starts with %PDF- and ends with %%EOF" \
  '[ "$(head -c 5 $tmp/curves.pdf)" = "%PDF-" ] && tail -c 32 $tmp/curves.pdf | grep -q "%%EOF"'
check "pdf: no SVG text inside (the old behaviour)" '! grep -q "<svg" $tmp/curves.pdf'

"$bin" bench plot "$tmp/a.csv" -o "$tmp/UP.PDF" 2>"$tmp/e"
check "the ending's case does not matter (.PDF)" '[ $? = 0 ] && [ "$(head -c 5 $tmp/UP.PDF)" = "%PDF-" ]'

for bad in curves.jpg curves curves.pdf.txt dir.pdf/x; do
  "$bin" bench plot "$tmp/a.csv" -o "$tmp/$bad" 2>"$tmp/e"
  rc=$?
  check "-o $bad: refused (exit 2), naming the formats, nothing written" \
    '[ $rc = 2 ] && grep -q "SVG, PNG or PDF" $tmp/e && grep -q ".svg, .png or .pdf" $tmp/e && [ ! -e $tmp/$bad ]'
done
"$bin" bench plot "$tmp/missing.csv" -o "$tmp/x.gif" 2>"$tmp/e"
check "the ending is checked before the CSVs are read" '[ $? = 2 ] && grep -q "SVG, PNG or PDF" $tmp/e'

"$bin" bench plot "$tmp/a.csv" -o "$tmp/no/such/dir/c.pdf" 2>"$tmp/e"
check "an -o that cannot be written: exit 2 naming it" '[ $? = 2 ] && grep -q "no/such/dir" $tmp/e'

summary
