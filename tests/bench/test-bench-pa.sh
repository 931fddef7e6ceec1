#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-bench-pa.sh: `gpuslice bench` under perf_analyzer's command line.
# - Every option perf_analyzer's parser knows (src/command_line_parser.cc at
#   perf_analyzer 263c5f6e0c7a, its long_options[] and short string) is either
#   bench's (in --help) or refused with a reason (exit 2, "not taken"), never
#   "unknown option"; each is a row of docs/bench.md's table.
# - --latency-threshold with --binary-search against an emulated worker whose
#   latency model has a known knee (one FIFO slice: concurrency c waits c
#   modelled times; --time-scale 100 makes that 62 ms each): asserted
#   structurally, never as timings: the levels measured are perf_analyzer's
#   bisection of the outcomes measured, each outcome agrees with its latency
#   and the threshold, the answer is the highest level that passed and the
#   level above it was measured and failed. A linear rate sweep without an END
#   stops at its first failure.
# - -x and -H reach the server; --request-count measures exactly N requests
#   after --warmup-request-count; --collect-metrics with --verbose-csv writes
#   the GPU columns; unknown server figures are empty CSV cells; -a accepts a
#   step whose throughput settled while its latency kept growing, --sync
#   does not; -v prints every window; --version.
# Ends with "N passed, N failed".
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/common.sh"
bin=${GS_BIN:-$here/../../build/gpuslice}
src=${GS_SRC:-$here/../..}
tmp=$(gs_tmpdir bench-pa)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
check() { if eval "$2"; then ok; echo "ok: $1"; else fail "$1 ($2)"; fi; }
# py FILE EXPR: EXPR over the JSON document d (steps: d["steps"])
py() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"; }
run() {
  local name=$1
  shift
  timeout 200 "$bin" bench --json "$@" >"$tmp/$name.json" 2>"$tmp/$name.err"
  echo $? >"$tmp/$name.rc"
}

# ---- perf_analyzer's options, every one ----
# long_options[] of CLParser::ParseCommandLine (lines 871-955), then its short
# options "vdazc:u:m:x:b:t:p:i:H:l:r:s:f:" and the -? of its usage.
pa_long="streaming max-threads sequence-length percentile data-directory shape
measurement-interval concurrency-range latency-threshold stability-percentage max-trials
input-data string-length string-data async sync request-rate-range num-of-sequences
binary-search request-distribution request-intervals shared-memory output-shared-memory-size
service-kind model-signature-name grpc-compression-algorithm measurement-mode
measurement-request-count triton-server-directory model-repository sequence-id-range
ssl-grpc-use-ssl ssl-grpc-root-certifications-file ssl-grpc-private-key-file
ssl-grpc-certificate-chain-file ssl-https-verify-peer ssl-https-verify-host
ssl-https-ca-certificates-file ssl-https-client-certificate-file
ssl-https-client-certificate-type ssl-https-private-key-file ssl-https-private-key-type
verbose-csv enable-mpi trace-level trace-rate trace-count log-frequency collect-metrics
metrics-url metrics-interval sequence-length-variation bls-composing-models serial-sequences
input-tensor-format output-tensor-format version profile-export-file
periodic-concurrency-range request-period request-parameter endpoint request-count
warmup-request-count fixed-schedule session-concurrency grpc-method"
pa_short="v d a z c u m x b t p i H l r s f ?"
"$bin" bench --help >"$tmp/help"
docs=$(sed -n '/^## perf_analyzer.s options/,/^## [^p]/p' "$src/docs/bench.md")
n_long=0 theirs=0 unknown=()
for name in $pa_long; do
  n_long=$((n_long + 1))
  grep -q -- "--$name\b" "$tmp/help" && continue
  theirs=$((theirs + 1))
  # a value after it, as its user would give; getopt stops at the unknown option first
  "$bin" bench --url http://127.0.0.1:9 -m x "--$name" x.proto >/dev/null 2>"$tmp/e"
  rc=$?
  [ $rc = 2 ] && grep -q "^gpuslice: --$name: not taken by \`gpuslice bench\`: ..........." "$tmp/e" ||
    unknown+=("--$name (exit $rc: $(head -c 200 "$tmp/e"))")
done
for l in $pa_short; do
  grep -q -- "^  -$l, " "$tmp/help" && continue
  theirs=$((theirs + 1))
  "$bin" bench --url http://127.0.0.1:9 -m x "-$l" >/dev/null 2>"$tmp/e"
  rc=$?
  [ $rc = 2 ] && grep -q -- "^gpuslice: -$l: not taken by \`gpuslice bench\`: ..." "$tmp/e" ||
    unknown+=("-$l (exit $rc: $(head -c 200 "$tmp/e"))")
done
check "all 67 long options of perf_analyzer's parser are listed here" '[ $n_long = 67 ]'
check "each perf_analyzer option is bench's or refused with a reason (${#unknown[@]} not: ${unknown[*]:-})" \
  '[ ${#unknown[@]} = 0 ]'
echo "  ($theirs of perf_analyzer's options refused, the others bench's)"
missing=()
for name in $pa_long; do grep -Eq -- "^\| (\`-.\`, )?\`--$name\`" <<<"$docs" || missing+=("--$name"); done
for l in $pa_short; do grep -Fq -- "| \`-$l\`" <<<"$docs" || missing+=("-$l"); done
check "docs/bench.md's table has a row for each (${missing[*]:-})" '[ ${#missing[@]} = 0 ]'

# values: perf_analyzer's choices that bench does not have, refused with the reason
for pair in "--service-kind tfserving:KServe v2" "--shared-memory system:registers no shared-memory" \
  "--grpc-compression-algorithm gzip:uncompressed"; do
  opt=${pair%%:*} why=${pair#*:}
  # shellcheck disable=SC2086
  "$bin" bench --url http://127.0.0.1:9 -m x -i grpc --grpc-url 127.0.0.1:9 $opt 2>"$tmp/e" >/dev/null
  check "$opt: refused with its reason" '[ $? = 2 ] && grep -q "$why" $tmp/e'
done

# perf_analyzer's rules between options
bad_line() { "$bin" bench --url http://127.0.0.1:9 -m x "$@" >/dev/null 2>"$tmp/e"; [ $? = 2 ]; }
check "--async with --sync: refused" 'bad_line -a --sync && grep -q "give one" $tmp/e'
check "--binary-search without -l: refused" 'bad_line --concurrency-range 1:8 --binary-search && grep -q latency-threshold $tmp/e'
check "--binary-search without an END: refused" 'bad_line --concurrency-range 1 -l 50 --binary-search && grep -q END $tmp/e'
check "END 0 without -l: refused" 'bad_line --concurrency-range 1:0 && grep -q "needs --latency-threshold" $tmp/e'
check "--warmup-request-count over several levels: refused" 'bad_line --concurrency-range 1:4 --warmup-request-count 5'
check "--request-count below the concurrency: refused" 'bad_line --concurrency-range 4 --request-count 3'
check "--metrics-interval without --collect-metrics: refused" 'bad_line --metrics-interval 100'
printf '1000\n' >"$tmp/iv.txt"
check "--request-intervals with --request-distribution: refused" \
  'bad_line --request-intervals $tmp/iv.txt --request-distribution poisson && grep -q "sets the arrivals itself" $tmp/e'
check "--request-intervals with -l: refused (one level)" \
  'bad_line --request-intervals $tmp/iv.txt -l 50 && grep -q "one level" $tmp/e'
check "--request-intervals with no such file: exit 2 naming the option and the file" \
  'bad_line --request-intervals $tmp/none.txt && grep -q "^gpuslice: --request-intervals .*none.txt" $tmp/e'
check "-x with a path in it: refused" 'bad_line -x ../1'
"$bin" bench --version >"$tmp/v" 2>&1
check "--version: gpuslice's version, exit 0" '[ $? = 0 ] && grep -q "^gpuslice " $tmp/v'

# ---- against the test server: -x, -H, counts, GPU metrics, empty cells, -a ----
python3 "$here/server.py" "$tmp/port" &
pids+=($!)
for _ in $(seq 200); do [ -f "$tmp/port" ] && break; sleep 0.05; done
url=http://127.0.0.1:$(cat "$tmp/port")
stats() { python3 -c 'import sys,urllib.request; print(urllib.request.urlopen(sys.argv[1]+"/stats").read().decode())' "$url"; }
quick=(-p 300 -r 3 -s 1000 --threads 2)

run ver --url "$url" -m tiny -x 1 -H 'X-Bench: yes' --concurrency-range 2 "${quick[@]}"
stats >"$tmp/stats1"
check "-x 1: inference went to /v2/models/tiny/versions/1/infer" \
  '[ "$(py $tmp/stats1 "d[\"paths\"].get(\"/v2/models/tiny/versions/1/infer\", 0) > 0")" = True ]'
check "-H: the header reached the server on inference requests" '[ "$(py $tmp/stats1 "d[\"x_bench\"] > 0")" = True ]'
check "-x: the JSON names the version" '[ "$(py $tmp/ver.json "d[\"model_version\"]")" = 1 ]'

before=$(py "$tmp/stats1" 'd["paths"].get("/v2/models/tiny/infer", 0)')
run count --url "$url" -m tiny --concurrency-range 3 --warmup-request-count 20 --request-count 41 "${quick[@]}"
stats >"$tmp/stats2"
check "--request-count 41: exactly 41 measured, in one window, stable" \
  '[ "$(py $tmp/count.json "(d[\"steps\"][0][\"requests_ok\"], d[\"steps\"][0][\"windows\"], d[\"steps\"][0][\"stable\"])")" = "(41, 1, True)" ]'
check "--warmup-request-count 20: the server answered at least 20 + 41" \
  '[ "$(py $tmp/stats2 "d[\"paths\"].get(\"/v2/models/tiny/infer\", 0) - $before >= 61")" = True ]'

run gpus --url "$url" -m tiny --concurrency-range 2 --collect-metrics --metrics-interval 50ms \
  --verbose-csv -f "$tmp/gpus.csv" "${quick[@]}"
check "--collect-metrics --verbose-csv: perf_analyzer's GPU columns" \
  'head -1 $tmp/gpus.csv | grep -q ",Avg latency,request/response,response wait,Avg GPU Utilization,Avg GPU Power Usage,Max GPU Memory Usage,Total GPU Memory$"'
check "--collect-metrics: per GPU, in uuid order, as the server's gauges say" \
  'sed -n 2p $tmp/gpus.csv | grep -Eq ",GPU-a:0.5;GPU-b:0.25;,GPU-a:100;GPU-b:200;,GPU-a:[0-9]+;GPU-b:[0-9]+;,GPU-a:40000000000;GPU-b:40000000000;$"'
check "--collect-metrics: the JSON's gpus" '[ "$(py $tmp/gpus.json "len(d[\"steps\"][0][\"gpus\"])")" = 2 ]'

run nostats --url "$url" -m nostats --concurrency-range 2 -f "$tmp/nostats.csv" "${quick[@]}"
check "a model the server's metrics do not show: its server cells empty, not 0" \
  'sed -n 2p $tmp/nostats.csv | grep -Eq "^2,[0-9.e+]+,[0-9]+,,,,,,[0-9]+,[0-9]+,[0-9]+,[0-9]+,[0-9]+$"'
run plain --url "$url" --http-path /fixed --concurrency-range 2 -f "$tmp/plain.csv" "${quick[@]}"
check "plain HTTP (no server figures sought): no server columns, as perf_analyzer without statistics" \
  'head -1 $tmp/plain.csv | grep -qx "Concurrency,Inferences/Second,Client Send,Client Recv,p50 latency,p90 latency,p95 latency,p99 latency"'

# /slowing: each answer 3 ms slower than the last, at a fixed rate: the
# throughput settles, the latency never does.
# The first window is short of answers (the first ones are still on their way): four windows,
# the last three judged.
slow=(--url "$url" --http-path /slowing --request-rate-range 40 --connections 64 -p 500 -r 4 -s 20 --threads 1)
run sync "${slow[@]}" --sync
check "--sync: a step whose latency keeps growing is not stable (exit 1)" \
  '[ "$(cat $tmp/sync.rc)" = 1 ] && [ "$(py $tmp/sync.json "d[\"steps\"][0][\"stable\"]")" = False ]'
run async "${slow[@]}" -a -v
check "-a: the same step counts, its latency marked unsettled, with a warning" \
  '[ "$(cat $tmp/async.rc)" = 0 ] && [ "$(py $tmp/async.json "(d[\"steps\"][0][\"stable\"], d[\"steps\"][0][\"latency_settled\"])")" = "(True, False)" ] && grep -q "latency did not settle" $tmp/async.err'
check "-v: one line per window on stderr" '[ "$(grep -c "^  rate 40: window [0-9]*:" $tmp/async.err)" = 4 ]'

# ---- the search, against a worker with a known knee ----
"$bin" worker --listen 127.0.0.1:0 --profile 1g.5gb --model flower --time-scale 100 \
  >"$tmp/w.out" 2>"$tmp/w.err" &
pids+=($!)
for _ in $(seq 200); do grep -q '^listening on ' "$tmp/w.out" 2>/dev/null && break; sleep 0.05; done
wurl=http://127.0.0.1:$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$tmp/w.out")

run bin --url "$wurl" -m flower --concurrency-range 1:8 --binary-search -l 217 -p 1000 -r 6 -s 20 --threads 2
# perf_analyzer's bisection, replayed on the outcomes bench measured
cat >"$tmp/replay.py" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
t, steps = d["latency_threshold_us"], d["steps"]
met = lambda s: s["stable"] and not s["over_threshold"]
errs = []
for s in steps:
    if s["stable"] and s["over_threshold"] != (s["stabilizing_latency_us"] >= t):
        errs.append("level %g: over_threshold disagrees with its latency" % s["level"])
levels = [s["level"] for s in steps]
outcome = {s["level"]: met(s) for s in steps}
want, lo, hi = [1], 1, 8
if outcome.get(1):
    want.append(8)
    if not outcome.get(8):
        while hi - lo > 1:
            mid = (lo + hi) // 2
            want.append(mid)
            if mid not in outcome:
                break
            lo, hi = (mid, hi) if outcome[mid] else (lo, mid)
if levels != want:
    errs.append("levels %s, perf_analyzer's bisection of these outcomes: %s" % (levels, want))
passed = [s["level"] for s in steps if met(s)]
best = d["best"]
if best != (max(passed) if passed else None):
    errs.append("best %s is not the highest level that passed %s" % (best, passed))
if best is not None and best < 8 and outcome.get(best + 1) is not False:
    errs.append("the level above the answer (%g) was not measured and failed" % (best + 1))
if not (best is not None and 1 <= best < 8):
    errs.append("no knee inside 1:8 (best %s): latency at 1 is one modelled time (62 ms), at 8 "
                "eight of them" % best)
print("; ".join(errs) if errs else "ok levels=%s best=%s" % (levels, best))
PY
res=$(python3 "$tmp/replay.py" "$tmp/bin.json" 2>&1)
echo "  binary search: $res"
check "--binary-search: perf_analyzer's bisection, its answer bracketed" '[ "${res%% *}" = ok ] && [ "$(cat $tmp/bin.rc)" = 0 ]'
# (a loaded machine may leave a level unstable: that is an outcome said too)
check "-l: each level's outcome said on stderr" \
  '[ "$(grep -c "^gpuslice: concurrency [0-9]*: \(average latency .* ms\(, under the threshold\| reached the threshold of 217 ms\( (before it stabilized)\)\?\)\|not stable after [0-9]* windows\)$" $tmp/bin.err)" = "$(py $tmp/bin.json "len(d[\"steps\"])")" ]'

run lin --url "$wurl" -m flower --request-rate-range 4:0:6 -l 300 -p 1000 -r 6 -s 20 --threads 2
check "linear rate sweep without an END: 4, 10, 16, ... until the first failure, which ends it" \
  '[ "$(py $tmp/lin.json "all(s[\"level\"] == 4 + 6 * i for i, s in enumerate(d[\"steps\"])) and all(s[\"stable\"] and not s[\"over_threshold\"] for s in d[\"steps\"][:-1]) and not (d[\"steps\"][-1][\"stable\"] and not d[\"steps\"][-1][\"over_threshold\"]) and d[\"best\"] == d[\"steps\"][-2][\"level\"]")" = True ]'

summary
