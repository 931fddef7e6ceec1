#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-bench.sh: `gpuslice bench` end to end over loopback against a test
# server with known service times (fixed, bimodal, stalled) and failures
# (errors, mid-body close, garbage, refused, broken metadata), against the
# emulated worker (JSON and binary tensors, its /metrics), the open-loop stall
# (worker SIGSTOPped for 1 s shows in the tail), and `bench plot`. Bounds are
# generous (ASan on busy cores); no timing is asserted beyond what the server
# guarantees (a 20 ms sleep is at least 20 ms). Ends with "N passed, N failed".
set -uo pipefail

bin=${GS_BIN:-$(dirname "$0")/../../build/gpuslice}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d "${GS_TEST_TMP:-/tmp}/bench.XXXXXX" 2>/dev/null || mktemp -d)
pids=()
passed=0
failed=0
cleanup() {
  for p in "${pids[@]}"; do kill -CONT "$p" 2>/dev/null; kill "$p" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT

ok() { passed=$((passed + 1)); echo "ok: $1"; }
bad() { failed=$((failed + 1)); echo "FAIL: $1"; }
check() { if eval "$2"; then ok "$1"; else bad "$1 ($2)"; fi; }

# jq-free JSON reads: q FILE EXPR (python over the parsed document `d`, step `s` = steps[0]).
q() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); s=d["steps"][0]; print(eval(sys.argv[2]))' "$1" "$2"; }

python3 "$here/server.py" "$tmp/port" &
pids+=($!)
for _ in $(seq 200); do [ -f "$tmp/port" ] && break; sleep 0.05; done
port=$(cat "$tmp/port")
url=http://127.0.0.1:$port
quick=(-p 300 -r 3 -s 1000 --threads 2)

# run NAME ARGS...: gpuslice bench --json into $tmp/NAME.json; rc in $tmp/NAME.rc
run() {
  local name=$1
  shift
  timeout 120 "$bin" bench --json "$@" >"$tmp/$name.json" 2>"$tmp/$name.err"
  echo $? >"$tmp/$name.rc"
}

# ---- known service times ----
run fixed --url "$url" --http-path /fixed --concurrency-range 2 "${quick[@]}"
check "fixed 20 ms: exit 0" '[ "$(cat $tmp/fixed.rc)" = 0 ]'
check "fixed 20 ms: p50 is at least the server's 20 ms and not far above" \
  '[ "$(q $tmp/fixed.json "19900 <= s[\"latency_us\"][\"p50\"] < 500000")" = True ]'
check "fixed 20 ms: min latency never below the service time" \
  '[ "$(q $tmp/fixed.json "s[\"latency_us\"][\"p50\"] >= 19900 and s[\"requests_ok\"] > 5")" = True ]'
check "fixed 20 ms, 2 outstanding: at most 100 inferences/s" \
  '[ "$(q $tmp/fixed.json "0 < s[\"inferences_per_second\"] <= 101")" = True ]'

# Count windows of 50: every window holds exactly 10 slow answers whatever the
# machine's load, so p90 and p99 fall in the slow mode and p50 in the fast one.
run bimodal --url "$url" --http-path /bimodal --concurrency-range 1 --threads 1 \
  --measurement-mode count_windows --measurement-request-count 50 -p 60000 -r 3 -s 1000
check "bimodal: p50 in the fast mode (5 ms), p90 and p99 in the slow one (50 ms)" \
  '[ "$(q $tmp/bimodal.json "4900 <= s[\"latency_us\"][\"p50\"] < 49000 and s[\"latency_us\"][\"p90\"] >= 49900 and s[\"latency_us\"][\"p99\"] >= 49900")" = True ]'

run rate --url "$url" --http-path /fixed --request-rate-range 40 --connections 8 "${quick[@]}"
check "open loop at 40/s against 20 ms: about 40 answers/s" \
  '[ "$(q $tmp/rate.json "25 <= s[\"inferences_per_second\"] <= 55 and d[\"mode\"] == \"request_rate\"")" = True ]'
check "open loop: latency from the intended time, at least the service time" \
  '[ "$(q $tmp/rate.json "s[\"latency_us\"][\"p50\"] >= 19900")" = True ]'

run poisson --url "$url" --http-path /fixed --request-rate-range 40 --request-distribution poisson --connections 8 -p 1000 -r 3 -s 1000 --threads 2
check "open loop, Poisson arrivals at 40/s: about 40 answers/s" \
  '[ "$(q $tmp/poisson.json "20 <= s[\"inferences_per_second\"] <= 60 and d[\"distribution\"] == \"poisson\"")" = True ]'

# --request-intervals: gaps of 2 ms and 18 ms in turn (10 ms on average, 100/s),
# shared by 2 threads; the server saw them in that pattern, not evenly spaced.
printf '2000\n18000\n' >"$tmp/iv.txt"
run intervals --url "$url" --http-path /arrivals --request-intervals "$tmp/iv.txt" \
  --request-count 120 --connections 8 --threads 2 -s 1000
check "--request-intervals: one step at the file's rate, 100/s, 120 requests" \
  '[ "$(q $tmp/intervals.json "s[\"level\"] == 100 and d[\"distribution\"] == \"intervals\" and s[\"requests_ok\"] == 120")" = True ]'
# gaps_alternate: at least 110 gaps between the server's /arrivals, the
# shorter half's median under 7 ms and the longer half's over 13 ms.
gaps_alternate() {
  python3 - "$url/arrivals-report" <<'PY'
import json, sys, urllib.request
t = json.load(urllib.request.urlopen(sys.argv[1]))
g = sorted(b - a for a, b in zip(t, t[1:]))
h = len(g) // 2
sys.exit(0 if len(g) >= 110 and g[h // 2] < 0.007 and g[h + h // 2] > 0.013 else 1)
PY
}
check "--request-intervals: the server's gaps alternate short and long (2 ms, 18 ms)" gaps_alternate
printf '1000\nfast\n' >"$tmp/iv-bad.txt"
run intervals-bad --url "$url" --http-path /arrivals --request-intervals "$tmp/iv-bad.txt"
check "--request-intervals with a word that is no number: exit 2 naming the file, line and word" \
  '[ "$(cat $tmp/intervals-bad.rc)" = 2 ] && grep -q "iv-bad.txt:2: .fast. is not a time in microseconds" $tmp/intervals-bad.err'
run intervals-both --url "$url" --http-path /arrivals --request-intervals "$tmp/iv.txt" --request-rate-range 10
check "--request-intervals with --request-rate-range: exit 2, give one" \
  '[ "$(cat $tmp/intervals-both.rc)" = 2 ] && grep -q "give one of" $tmp/intervals-both.err'

run count --url "$url" --http-path /fixed --concurrency-range 2 --measurement-mode count_windows --measurement-request-count 20 -p 20000 -r 3 -s 1000
check "count windows: 3 windows of at least 20 requests, ended by count long before the interval" \
  '[ "$(q $tmp/count.json "s[\"requests_ok\"] >= 60 and s[\"windows\"] == 3 and s[\"seconds\"] < 30")" = True ]'

# ---- failures, counted by kind ----
for kind in error:http_5xx notfound:http_4xx close:closed garbage:malformed; do
  path=${kind%%:*} counter=${kind#*:}
  run "$path" --url "$url" --http-path "/$path" --concurrency-range 2 "${quick[@]}"
  check "/$path: counted as $counter, nothing counted ok" \
    '[ "$(q $tmp/$path.json "s[\"errors\"][\"$counter\"] > 0 and s[\"requests_ok\"] == 0 and sum(s[\"errors\"].values()) == s[\"errors\"][\"$counter\"]")" = True ]'
  check "/$path: exit 0 or 1 (never a crash)" '[ "$(cat $tmp/$path.rc)" -le 1 ]'
done

python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' >"$tmp/free"
run refused --url "http://127.0.0.1:$(cat $tmp/free)" --http-path / --concurrency-range 2 "${quick[@]}"
check "refused connections: counted as connect" \
  '[ "$(q $tmp/refused.json "s[\"errors\"][\"connect\"] > 0 and s[\"requests_ok\"] == 0")" = True ]'

start=$(date +%s)
run stall --url "$url" --http-path /stall --concurrency-range 2 --request-timeout 400 -p 300 -r 4 --threads 2
elapsed=$(($(date +%s) - start))
check "a server that never answers: the run ends in bounded time (${elapsed}s)" '[ "$elapsed" -lt 60 ]'
check "a server that never answers: timeouts counted, exit 0 or 1" \
  '[ "$(q $tmp/stall.json "s[\"errors\"][\"timeout\"] > 0 and s[\"requests_ok\"] == 0")" = True ] && [ "$(cat $tmp/stall.rc)" -le 1 ]'

run stall-open --url "$url" --http-path /stall --request-rate-range 100 --connections 2 --max-backlog 10 --request-timeout 400 -p 300 -r 3 --threads 1
check "open loop against a stalled server: the backlog overflow is counted, not hidden" \
  '[ "$(q $tmp/stall-open.json "s[\"errors\"][\"backlog_full\"] > 0")" = True ]'

# ---- KServe v2 against the test server: metadata, batch, --input-data, metrics ----
cat >"$tmp/in.json" <<'JSON'
{"data": [{"x": [[1, 2, 3, 4], [5, 6, 7, 8]]}, {"x": {"content": [0, 0, 0, 0, 1, 1, 1, 1], "shape": [2, 4]}}]}
JSON
run tiny --url "$url" -m tiny -b 2 --input-data "$tmp/in.json" --input-tensor-format json --concurrency-range 2 "${quick[@]}" -f "$tmp/tiny.csv"
check "kserve: batch 2 counts two inferences per request" \
  '[ "$(q $tmp/tiny.json "abs(s[\"inferences_per_second\"] - 2 * s[\"requests_ok\"] / s[\"seconds\"]) < 0.01 * s[\"inferences_per_second\"] and s[\"requests_ok\"] > 0")" = True ]'
check "kserve: the server's queue and compute split from its /metrics (100 and 1000 us)" \
  '[ "$(q $tmp/tiny.json "s[\"server\"][\"seen\"] and abs(s[\"server\"][\"queue_us\"] - 100) < 0.5 and abs(s[\"server\"][\"compute_infer_us\"] - 1000) < 0.5")" = True ]'
check "kserve: CSV with perf_analyzer's header (compared with its source: test-bench-csv.c)" \
  'head -1 $tmp/tiny.csv | grep -qx "Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,Server Compute Input,Server Compute Infer,Server Compute Output,Client Recv,p50 latency,p90 latency,p95 latency,p99 latency"'

timeout 60 "$bin" bench --url "$url" -m broken >/dev/null 2>"$tmp/broken.err"
check "malformed metadata: exit 2 naming the metadata URL" \
  '[ $? = 2 ] && grep -q "/v2/models/broken" $tmp/broken.err'
timeout 60 "$bin" bench --url "$url" -m nojson >/dev/null 2>"$tmp/nojson.err"
check "metadata that is not JSON: exit 2, says so" '[ $? = 2 ] && grep -q "not a JSON object" $tmp/nojson.err'
timeout 60 "$bin" bench --url "$url" -m missing >/dev/null 2>"$tmp/missing.err"
check "unknown model: refused, naming the answer" '[ $? = 1 ] && grep -q "answered 404" $tmp/missing.err'
timeout 60 "$bin" bench --url "$url" -m tiny --input-data "$tmp/nope.json" >/dev/null 2>"$tmp/nofile.err"
check "missing --input-data file: refused naming it" '[ $? != 0 ] && grep -q "nope.json" $tmp/nofile.err'

# ---- command line ----
"$bin" bench --http-path / 2>"$tmp/e1" >/dev/null
check "no --url: usage error" '[ $? = 2 ] && grep -q -- "--url is required" $tmp/e1'
"$bin" bench --url "$url" -m a --http-path / 2>"$tmp/e2" >/dev/null
check "-m and --http-path together: usage error" '[ $? = 2 ]'
"$bin" bench --url https://x -m a 2>"$tmp/e3" >/dev/null
check "https: refused with the reason" '[ $? = 2 ] && grep -q https $tmp/e3'
"$bin" bench --url "$url" -m a --concurrency-range 4:2 2>"$tmp/e4" >/dev/null
check "a range that goes down: usage error" '[ $? = 2 ] && grep -q "END is below START" $tmp/e4'

# ---- the emulated worker ----
"$bin" worker --listen 127.0.0.1:0 --profile 1g.5gb >"$tmp/w.out" 2>"$tmp/w.err" &
wpid=$!
pids+=($wpid)
for _ in $(seq 200); do grep -q '^listening on ' "$tmp/w.out" 2>/dev/null && break; sleep 0.05; done
wurl=http://127.0.0.1:$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$tmp/w.out")
for fmt in binary json; do
  run "w-$fmt" --url "$wurl" -m flower --input-tensor-format $fmt --output-tensor-format $fmt --concurrency-range 2 "${quick[@]}"
  check "worker, $fmt tensors: answers, no errors, the worker's modelled compute from its metrics" \
    '[ "$(q $tmp/w-$fmt.json "s[\"requests_ok\"] > 0 and sum(s[\"errors\"].values()) == 0 and s[\"server\"][\"seen\"] and abs(s[\"server\"][\"compute_infer_us\"] - 620) < 1")" = True ]'
done
timeout 60 "$bin" bench --url "$wurl" -m flower -b 2 >/dev/null 2>"$tmp/b2.err"
check "worker: batch 2 on a model with a fixed batch dimension is refused" \
  '[ $? = 2 ] && grep -q -- "--batch-size 1" $tmp/b2.err'

# The stall: the worker paused 1 s during a fixed-rate run shows in the tail.
(sleep 1; kill -STOP $wpid; sleep 1; kill -CONT $wpid) &
run stop --url "$wurl" --http-path /v2/health/ready --request-rate-range 200 --connections 4 -p 1000 -r 3 -s 1000 --threads 1
wait $!
check "open loop, target SIGSTOPped 1 s: the max and p99 show the stall" \
  '[ "$(q $tmp/stop.json "s[\"latency_us\"][\"max\"] >= 800000 and s[\"latency_us\"][\"p99\"] >= 500000 and s[\"delayed\"] > 0")" = True ]'

# ---- through the load balancer: gpuslice serve in front of 4 workers ----
export GPUSLICE_EMU_STATE=$tmp/emu.json
src=${GS_SRC:-$here/../..}
"$bin" -q emu reset --emulate a30-24gb >/dev/null &&
  "$bin" -q apply -f "$src/configs/a30-24gb.mig-parted.yaml" -c all-1g.6gb >/dev/null
"$bin" -q serve --listen 127.0.0.1:0 --admin-listen off --ephemeral-ports --log-dir "$tmp" -- \
  "$bin" worker --listen '127.0.0.1:{port}' --model flower --sms 1000000 >"$tmp/serve.out" 2>"$tmp/serve.err" &
spid=$!
pids+=($spid)
for _ in $(seq 600); do [ "$(grep -c 'joined the pool' "$tmp/serve.out")" -ge 4 ] && break; sleep 0.1; done
surl=http://127.0.0.1:$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\), .*/\1/p' "$tmp/serve.out")
run serve --url "$surl" -m flower --concurrency-range 4 "${quick[@]}" -f "$tmp/serve.csv"
check "through gpuslice serve: flower infers answered, no errors" \
  '[ "$(q $tmp/serve.json "s[\"requests_ok\"] > 0 and sum(s[\"errors\"].values()) == 0")" = True ]'
# serve's /metrics has no nv_inference_* series: the server's figures are unknown, so
# the CSV leaves their five cells empty (perf_analyzer writes no made-up 0)
check "through gpuslice serve: the CSV's server cells are empty, not 0" \
  'sed -n 2p $tmp/serve.csv | grep -Eq "^4,[0-9.e+]+,[0-9]+,,,,,,[0-9]+(,[0-9]+){4}$"'
kill -TERM $spid 2>/dev/null
for _ in $(seq 100); do kill -0 $spid 2>/dev/null || break; sleep 0.1; done

# ---- plot ----
# one.csv is written here: a CSV keeps only the levels that stabilized (as
# perf_analyzer's), and a run on a loaded machine may have none. two.csv is
# bench's own, with windows long enough to settle under load.
printf '%s\n' "$(head -1 "$tmp/tiny.csv")" 1,40,0,0,,,,,0,20000,21000,22000,25000 \
  2,75,0,0,,,,,0,24000,26000,28000,30000 >"$tmp/one.csv"
timeout 90 "$bin" bench --url "$url" --http-path /fixed --concurrency-range 1:3:2 -p 1000 -r 10 -s 1000 \
  --threads 2 -f "$tmp/two.csv" >/dev/null 2>&1
"$bin" bench plot "$tmp/one.csv" "$tmp/two.csv" --latency-budget 50ms -o "$tmp/curves.svg"
check "plot: an SVG with both series and the budget line" \
  '[ $? = 0 ] && grep -q "<svg" $tmp/curves.svg && grep -q ">one<" $tmp/curves.svg && grep -q ">two<" $tmp/curves.svg && grep -q "latency budget 50 ms" $tmp/curves.svg'
printf 'Concurrency,Inferences/Second\n1,2\n' >"$tmp/short.csv"
"$bin" bench plot "$tmp/short.csv" -o "$tmp/x.svg" 2>"$tmp/p1"
check "plot: a CSV without the latency column is refused, naming it" '[ $? = 2 ] && grep -q short.csv $tmp/p1'
"$bin" bench plot "$tmp/one.csv" --latency-budget 5parsecs -o "$tmp/x.svg" 2>"$tmp/p2"
check "plot: a bad budget is refused" '[ $? = 2 ]'
"$bin" bench plot "$tmp/one.csv" -o "$tmp/c.png" 2>"$tmp/p3"
check "plot: a PNG (rendered by librsvg; formats: test-bench-plot.sh)" \
  '[ $? = 0 ] && [ "$(head -c 4 $tmp/c.png | tail -c 3)" = PNG ]'

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
