#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# demo.sh (`make demo`): the MIG inference study end to end on an EMULATED
# A100-SXM4-40GB (no driver, no GPU: inference times are modelled by
# `gpuslice worker`, docs/worker.md): partition into 7x 1g.5gb with
# `gpuslice apply`; serve the flower ResNet-50 on 1..7 slices behind
# `gpuslice serve` and sweep concurrency with `gpuslice bench`; the same on
# one full GPU without MIG and on seven workers time-sharing it; print the
# throughput and p90 tables and chart them (Figures 4-6: throughput and
# latency vs concurrency, the 50 ms budget line); kill one worker under load
# and compare its neighbours' p90; run the autoscaler under rising then
# falling load and chart slices and p90 over time. It opens with the MIG
# lifecycle of NVIDIA's walkthrough (scripts/demo-lifecycle.sh: enable MIG,
# profiles, 7 GIs and their CIs, MIG devices with UUIDs, destroy, disable).
#
# Environment (the smoke test shortens it): DEMO_OUT (output folder),
# DEMO_SLICES ("1 2 3 4 5 6 7"), DEMO_CONC (bench --concurrency-range,
# "3:30:3"), DEMO_WINDOW_MS (800), DEMO_TIME_SCALE (20: every modelled time
# x20 so two cores can drive seven slices), DEMO_AUTOSCALE (1; 0 skips it),
# DEMO_STEP_S (8: seconds per load step of the autoscaler run), DEMO_TRIALS
# (6: bench --max-trials, windows to reach a stable figure), DEMO_STABILITY
# (15: bench -s, the percent the last three windows may differ by).
set -euo pipefail
gpuslice=$(realpath "${GPUSLICE:-build/gpuslice}")
src=$(cd "$(dirname "$0")/.." && pwd)
out=${DEMO_OUT:-$src/demo-out}
slices_list=${DEMO_SLICES:-1 2 3 4 5 6 7}
conc=${DEMO_CONC:-3:30:3}
window=${DEMO_WINDOW_MS:-800}
tscale=${DEMO_TIME_SCALE:-20}
step_s=${DEMO_STEP_S:-8}
trials=${DEMO_TRIALS:-6}
stability=${DEMO_STABILITY:-15}
mkdir -p "$out"
rm -f "$out"/*.csv "$out"/*.svg "$out"/*.log "$out"/*.txt
export GPUSLICE_EMU_STATE=$out/emu.json
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT

say() { printf '\n== %s\n' "$*"; }
http() { # port method path: the body of a loopback HTTP/1.0 answer
  exec 3<>"/dev/tcp/127.0.0.1/$1"
  # the admin API takes a change only as JSON (docs/proxy.md, "Threat model")
  printf '%s %s HTTP/1.0\r\nHost: 127.0.0.1:%s\r\nContent-Type: application/json\r\nContent-Length: 0\r\n\r\n' \
    "$2" "$3" "$1" >&3
  sed '1,/^\r$/d' <&3
  exec 3<&-
}
wait_ready() { # admin-port count: until count workers are in the pool
  for _ in $(seq 600); do
    [ "$(http "$1" GET /workers | grep -o '"in_pool": *true' | wc -l)" -ge "$2" ] && return 0
    sleep 0.1
  done
  echo "demo: workers did not become ready" >&2
  return 1
}
serve_start() { # log, then the worker command
  local log=$1; shift
  "$gpuslice" serve -i 0 --listen 127.0.0.1:0 --admin-listen 127.0.0.1:0 --ephemeral-ports \
    --log-dir "$out/workers" "$@" >"$log" 2>&1 &
  serve_pid=$!
  pids+=("$serve_pid")
  for _ in $(seq 300); do grep -q '^admin on' "$log" && break; sleep 0.1; done
  port=$(sed -n 's/^listening on 127.0.0.1:\([0-9]*\),.*/\1/p' "$log")
  aport=$(sed -n 's/^admin on 127.0.0.1:\([0-9]*\)$/\1/p' "$log")
}
serve_stop() {
  kill -TERM "$serve_pid"
  wait "$serve_pid" || true
}
bench() { # csv, url, then more options
  local csv=$1 url=$2; shift 2
  "$gpuslice" bench --url "$url" -m flower --concurrency-range "$conc" -p "$window" -r "$trials" \
    -s "$stability" -f "$csv" "$@" >/dev/null 2>&1 || true
}
col() { # csv column-name concurrency: the value, or -
  awk -F, -v name="$2" -v c="$3" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == name) k = i; next }
    $1 == c { v = $k } END { print (v == "" ? "-" : v) }' "$1"
}
table() { # title column scale format: one row per concurrency, one column per CSV
  local title=$1 name=$2 scale=$3 fmt=$4
  printf '\n%s\n%-12s' "$title" "concurrency"
  for f in "${csvs[@]}"; do printf '%14s' "$(basename "$f" .csv)"; done
  printf '\n'
  for c in $(cut -d, -f1 "${csvs[0]}" | tail -n +2 | sort -n); do # rows: by throughput, as perf_analyzer
    printf '%-12s' "$c"
    for f in "${csvs[@]}"; do
      v=$(col "$f" "$name" "$c")
      if [ "$v" = - ]; then printf '%14s' -; else printf "%14$fmt" "$(awk -v v="$v" -v s="$scale" 'BEGIN { print v / s }')"; fi
    done
    printf '\n'
  done
}

echo "gpuslice demo: the MIG inference study on an EMULATED A100-SXM4-40GB"
echo "  (no NVIDIA driver or GPU is used; inference times are modelled by gpuslice worker,"
echo "   slowed down x$tscale so two CPU cores can drive seven slices: divide throughputs"
echo "   by nothing, but read them as the model's at 1/$tscale speed)"
echo "  outputs: $out"

say "0. the MIG lifecycle of NVIDIA's A100 walkthrough, step by step (emulated GPU; also in lifecycle.txt)"
GPUSLICE="$gpuslice" "$src/scripts/demo-lifecycle.sh" | tee "$out/lifecycle.txt"

say "1. partition: 7x 1g.5gb (gpuslice apply, emulated GPU)"
"$gpuslice" -q emu reset --emulate a100-40gb >/dev/null
"$gpuslice" -q apply -f "$src/configs/a100-40gb.mig-parted.yaml" -c all-1g.5gb
"$gpuslice" -q list

worker=("$gpuslice" worker --listen '127.0.0.1:{port}' --model flower --time-scale "$tscale")
say "2. serve the emulated flower ResNet-50 on 1..7 slices; gpuslice bench sweeps concurrency $conc"
serve_start "$out/serve-mig.log" -- "${worker[@]}" --profile '{profile}'
wait_ready "$aport" 7
csvs=()
for n in $slices_list; do
  for w in 0 1 2 3 4 5 6; do
    if [ "$w" -lt "$n" ]; then http "$aport" POST "/workers/$w/enable" >/dev/null
    else http "$aport" POST "/workers/$w/disable" >/dev/null; fi
  done
  echo "  $n slice(s)..."
  bench "$out/mig-$n-slices.csv" "http://127.0.0.1:$port"
  csvs+=("$out/mig-$n-slices.csv")
done

say "3. kill -9 one worker under load: do its six neighbours' p90 move?"
# Worker 0 leaves the proxy's pool and gets a client of its own; the six
# others share one client through the proxy. Run 1: all seven busy. Run 2:
# the same, and worker 0 is killed half a second in.
for w in 0 1 2 3 4 5 6; do http "$aport" POST "/workers/$w/enable" >/dev/null; done
wait_ready "$aport" 7
http "$aport" POST /workers/0/disable >/dev/null
w0=$(http "$aport" GET /workers/0)
w0port=$(echo "$w0" | grep -o '"port": *[0-9]*' | grep -o '[0-9]*$')
w0pid=$(echo "$w0" | grep -o '"pid": *[0-9]*' | grep -o '[0-9]*$')
iso() { # run name
  "$gpuslice" bench --url "http://127.0.0.1:$w0port" -m flower --concurrency-range 3 \
    -p $((window * 2)) -r "$trials" -s 15 >/dev/null 2>&1 &
  local b0=$!
  if [ "$1" = killed ]; then
    (sleep 0.5; kill -9 "$w0pid"; echo "  killed worker 0 (pid $w0pid) mid-run") &
  fi
  "$gpuslice" bench --url "http://127.0.0.1:$port" -m flower --concurrency-range 18 \
    -p $((window * 2)) -r "$trials" -s 15 -f "$out/isolation-$1.csv" >/dev/null 2>&1 || true
  wait "$b0" 2>/dev/null || true
}
iso busy
iso killed
{
  a=$(col "$out/isolation-busy.csv" "p90 latency" 18)
  b=$(col "$out/isolation-killed.csv" "p90 latency" 18)
  echo "the six neighbours (concurrency 18 through the proxy), EMULATED:"
  awk -v a="$a" -v b="$b" 'BEGIN { if (a == "-" || b == "-") print "  p90: no stable figure (try a longer DEMO_WINDOW_MS)";
    else printf "  p90 with worker 0 busy: %.1f ms; with worker 0 killed: %.1f ms (%+.1f%%)\n", a / 1000, b / 1000, (b - a) * 100 / a }'
} | tee "$out/isolation.txt"
serve_stop

say "4. one full GPU without MIG, and seven workers time-sharing it (emulated: --full-gpu, --share 7)"
"$gpuslice" -q apply -f "$src/configs/a100-40gb.mig-parted.yaml" -c all-disabled >/dev/null
"$gpuslice" worker --listen 127.0.0.1:0 --model flower --time-scale "$tscale" --full-gpu \
  >"$out/full-gpu.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do grep -q '^listening' "$out/full-gpu.log" && break; sleep 0.1; done
fport=$(sed -n 's/^listening on 127.0.0.1:\([0-9]*\)$/\1/p' "$out/full-gpu.log")
echo "  full GPU..."
bench "$out/full-gpu.csv" "http://127.0.0.1:$fport"
kill "${pids[-1]}"
# serve needs MIG devices for its slots: seven placeholder slices carry the
# seven time-sharing workers, whose modelled time is the full GPU's shared 7 ways.
"$gpuslice" -q apply -f "$src/configs/a100-40gb.mig-parted.yaml" -c all-1g.5gb >/dev/null
serve_start "$out/serve-share.log" -- "${worker[@]}" --full-gpu --share 7
wait_ready "$aport" 7
echo "  7 workers time-sharing the full GPU..."
bench "$out/timeshare-7.csv" "http://127.0.0.1:$port"
serve_stop
csvs+=("$out/full-gpu.csv" "$out/timeshare-7.csv")

say "5. tables and charts (Figures 4, 5, 6)"
{
  table "throughput (inferences/s, emulated, time scale x$tscale)" "Inferences/Second" 1 .1f
  table "p90 latency (ms, emulated, time scale x$tscale; budget 50 ms)" "p90 latency" 1000 .1f
} | tee "$out/tables.txt"
# A run whose every step stayed unstable (a very busy machine) has no rows: left out.
plotted=()
for f in "${csvs[@]}"; do [ "$(wc -l <"$f")" -gt 1 ] && plotted+=("$f"); done
"$gpuslice" bench plot "${plotted[@]}" --latency-budget 50ms --percentile 90 \
  -o "$out/figures-4-5-6.svg"
# bench plot names the lines after the files; the chart says what they measured.
sed -i "s|</svg>|<text x=\"10\" y=\"14\" font-size=\"12\" font-family=\"sans-serif\">EMULATED A100-SXM4-40GB (gpuslice worker, modelled times x$tscale)</text></svg>|" \
  "$out/figures-4-5-6.svg"

if [ "${DEMO_AUTOSCALE:-1}" != 0 ]; then
  say "6. the autoscaler (p90=50ms, 1..7 slices) under load rising then falling"
  "$gpuslice" -q apply -f "$src/configs/a100-40gb.mig-parted.yaml" -c all-disabled >/dev/null
  "$gpuslice" -q mig enable -i 0 >/dev/null
  serve_start "$out/serve-autoscale.log" --latency-budget p90=50ms --slices 1..7 \
    --scale-window 3s --scale-cooldown 3s --scale-state "$out/autoscale-state.json" \
    -- "${worker[@]}" --profile '{profile}'
  wait_ready "$aport" 1
  echo "seconds,concurrency,slices,p90_ms" >"$out/autoscale.csv"
  t0=$SECONDS
  load=0
  ( while sleep 1; do
      m=$(http "$port" GET /metrics)
      s=$(echo "$m" | sed -n 's/^gpuslice_autoscale_slices \([0-9]*\)/\1/p')
      p=$(echo "$m" | sed -n 's/^gpuslice_autoscale_window_latency_seconds{[^}]*} \(.*\)/\1/p')
      echo "$((SECONDS - t0)),$(cat "$out/load.txt" 2>/dev/null || echo 0),$s,$(awk -v p="$p" 'BEGIN { printf "%.1f", p * 1000 }')"
    done >>"$out/autoscale.csv" ) &
  sampler=$!
  pids+=("$sampler")
  for c in 2 6 12 20 28 20 12 6 2 1; do
    echo "$c" >"$out/load.txt"
    echo "  concurrency $c for ${step_s}s"
    "$gpuslice" bench --url "http://127.0.0.1:$port" -m flower --concurrency-range "$c" \
      -p $((step_s * 1000)) -r 1 >/dev/null 2>&1 || true
  done
  echo 0 >"$out/load.txt"
  sleep "$step_s"
  kill "$sampler"
  serve_stop
  grep '^autoscale: p' "$out/serve-autoscale.log" | tee "$out/autoscale-events.txt"
  awk -F, -v budget=50 -f "$src/scripts/demo-timeline.awk" "$out/autoscale.csv" \
    >"$out/autoscale.svg"
fi

say "outputs (everything EMULATED) in $out"
ls "$out"
