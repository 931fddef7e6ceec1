#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/grpc.sh: our load balancer's gRPC side (`gpuslice serve --grpc-listen`)
# against HAProxy proxying h2c/gRPC, both in front of the same 4 local workers'
# gRPC ports, driven by h2load (Debian's nghttp2-client) with the same
# duration, clients, streams per client and one load-generator thread.
# Not part of `make check`.
#
#   bench/grpc.sh                       # 10 s per run, 16 clients x 32 streams
#   BENCH_SECONDS=5 BENCH_CLIENTS=8 BENCH_STREAMS=16 bench/grpc.sh
#
# Then the 600k test again with our own load generator (`gpuslice bench -i grpc`,
# same connections x streams, one thread) beside h2load's figure.
#
# Workers: 4 `gpuslice worker --model flower --sms 1000000 --grpc-listen ...`
# started by `gpuslice serve` on an emulated A30 split into 4x 1g.6gb, on fixed
# ports (--port-base) so HAProxy points at the very same gRPC ports. `--sms
# 1000000` makes the modelled inference 34 us: the workers are not the bottleneck.
#
# Tests: (a) small: unary ModelMetadata("flower") (8-byte request, ~150-byte
# answer, no modelled compute); (b) 600 KB: unary ModelInfer of flower with
# one raw FP32 [1,3,224,224] tensor (602,112 bytes of raw_input_contents),
# answered with 408 bytes of raw_output_contents.
#
# Threads: our proxy has one event-loop thread, so HAProxy gets nbthread 1.
# Windows: HAProxy gets tune.h2.initial-window-size 1 MiB, the stream window
# our proxy and worker advertise (its default, 64 KiB, stalls 600 KB calls).
# Limits: our proxy's in-flight limit is raised to 4096 (HAProxy has none
# here). h2load counts HTTP 200s and every gRPC error is a 200 too, so one
# call per test is checked with nghttp for grpc-status 0 before the run, and
# our rows count the gRPC errors our proxy answered (its errors_total before
# and after, its memory budget's refusals included: 512 calls of 600 KB
# outstanding pass its 64 MiB): "OK calls/s" leaves them out, and the ratios
# use it (HAProxy's errors are not counted: its OK calls/s is h2load's).
# p99: from h2load's per-request log. Loopback, shared cores: relative numbers.
set -euo pipefail

SECS=${BENCH_SECONDS:-10}
CLIENTS=${BENCH_CLIENTS:-16}
STREAMS=${BENCH_STREAMS:-32}
WARMUP=${BENCH_WARMUP:-1}
BASE=${BENCH_PORT_BASE:-27300}
NWORKERS=4
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
bin=${GS_BIN:-$src/build/gpuslice}
py=/usr/bin/python3

[ -x "$bin" ] || { echo "bench: $bin not found (run make first)" >&2; exit 1; }
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
bench_install bench haproxy:haproxy h2load:nghttp2-client nghttp:nghttp2-client \
  protoc:protobuf-compiler python3-protobuf

tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-grpc.XXXXXX")
export GPUSLICE_EMU_STATE=$tmp/emu.json
pids=()
serve_pid=
trap bench_cleanup EXIT
trap 'exit 130' INT TERM

# --- the workers, under our load balancer ------------------------------------------------------
"$bin" -q emu reset --emulate a30-24gb >/dev/null
"$bin" -q apply -f "$src/configs/a30-24gb.mig-parted.yaml" -c all-1g.6gb >/dev/null
gport=$(free_port)
"$bin" -q serve --listen 127.0.0.1:0 --grpc-listen "127.0.0.1:$gport" --admin-listen off \
  --port-base "$BASE" --max-inflight 4096 --log-dir "$tmp" -- \
  "$bin" worker --listen '127.0.0.1:{port}' --grpc-listen '127.0.0.1:{grpc_port}' \
  --model flower --sms 1000000 >"$tmp/serve.out" 2>"$tmp/serve.err" &
serve_pid=$!
http_port=$(bench_wait_pool $NWORKERS)

# --- HAProxy: h2c in, h2c to each worker's gRPC port ----------------------------------------------
hport=$(free_port)
{
  echo "global"
  echo "  nbthread 1"
  echo "  maxconn 4096"
  echo "  tune.h2.initial-window-size 1048576" # as ours advertises: large tensors not held by flow control
  echo "defaults"
  echo "  mode http"
  echo "  timeout connect 5s"
  echo "  timeout client 30s"
  echo "  timeout server 30s"
  echo "frontend fe"
  echo "  bind 127.0.0.1:$hport proto h2"
  echo "  default_backend workers"
  echo "backend workers"
  echo "  balance leastconn"
  for i in $(seq 0 $((NWORKERS - 1))); do
    echo "  server w$i 127.0.0.1:$((BASE + 3 * i + 1)) proto h2"
  done
} >"$tmp/haproxy.cfg"
haproxy -db -f "$tmp/haproxy.cfg" >"$tmp/haproxy.log" 2>&1 &
pids+=($!)

# --- the requests -------------------------------------------------------------------------------
protoc --proto_path="$src/proto" --python_out="$tmp" "$src/proto/inference.proto"
"$py" - "$tmp" <<'EOF'
import struct, sys
sys.path.insert(0, sys.argv[1])
import inference_pb2 as pb
def frame(m):
    b = m.SerializeToString()
    return b"\0" + struct.pack(">I", len(b)) + b
q = pb.ModelInferRequest(model_name="flower")
q.inputs.add(name="input", datatype="FP32", shape=[1, 3, 224, 224])
q.raw_input_contents.append(bytes(range(256)) * 2352)
open(sys.argv[1] + "/600k.grpc", "wb").write(frame(q))
open(sys.argv[1] + "/small.grpc", "wb").write(frame(pb.ModelMetadataRequest(name="flower")))
EOF
SVC=/inference.GRPCInferenceService
path() { [ "$1" = small ] && echo "$SVC/ModelMetadata" || echo "$SVC/ModelInfer"; }
hdrs=(-H 'content-type: application/grpc' -H 'te: trailers')

proxy_errors() {
  curl -s "http://127.0.0.1:$http_port/metrics" | awk '$1 == "gpuslice_proxy_errors_total" { print $2 }'
}

# one call through PORT must end with grpc-status 0
check_call() { # port test
  local out
  for _ in $(seq 50); do
    out=$(timeout 10 nghttp -v -d "$tmp/$2.grpc" "${hdrs[@]}" "http://127.0.0.1:$1$(path "$2")" 2>&1 |
      grep -a 'grpc-status' || true)
    [[ "$out" == *"grpc-status: 0"* ]] && return 0
    sleep 0.2
  done
  echo "bench: a $2 call through port $1 did not end with grpc-status 0: $out" >&2
  return 1
}

run() { # name test port
  local name=$1 test=$2 port=$3 url out rps mean p99 bad e0 grpc_err=- ok log
  url="http://127.0.0.1:$port$(path "$test")"
  log="$tmp/h2load-${name// /_}-$test.log"
  check_call "$port" "$test"
  [ "$WARMUP" -eq 0 ] || timeout $((WARMUP + 20)) h2load -t1 -c"$CLIENTS" -m"$STREAMS" -D "$WARMUP" \
    -d "$tmp/$test.grpc" "${hdrs[@]}" "$url" >/dev/null 2>&1 || true
  e0=$(proxy_errors)
  out=$(timeout $((SECS + 30)) h2load -t1 -c"$CLIENTS" -m"$STREAMS" -D "$SECS" --log-file="$log" \
    -d "$tmp/$test.grpc" "${hdrs[@]}" "$url" 2>&1) || true
  echo "$out" >"$tmp/h2load-$name-$test.txt"
  rps=$(echo "$out" | sed -n 's/^finished in .*, \([0-9.]*\) req\/s.*/\1/p')
  mean=$(echo "$out" | awk '$1 == "time" && $2 == "for" && $3 == "request:" { print $6 }')
  bad=$(echo "$out" | awk '$1 == "requests:" { gsub(",", ""); print $9 + $11 + $13 }')
  p99=$(awk -F'\t' '$2 == 200 { print $3 }' "$log" | sort -n |
    awk '{ v[NR] = $1 } END { i = int(NR * 0.99); if (i < 1) i = 1; printf "%.1fms", v[i] / 1000 }')
  rm -f "$log"
  [ "$port" = "$gport" ] && grpc_err=$(($(proxy_errors) - e0))
  if [ -z "$rps" ]; then
    echo "bench: $name $test: h2load failed:" >&2; echo "$out" >&2; return 1
  fi
  ok=$(awk -v r="$rps" -v e="$grpc_err" -v s="$SECS" 'BEGIN { printf "%.1f", e == "-" ? r : r - e / s }')
  echo "$test $name $rps $ok $mean $p99 ${bad:-?} $grpc_err" >>"$tmp/results"
  printf '  %-22s %-6s %10s req/s  OK %10s/s  mean %10s  p99 %10s  failed %s  gRPC errors %s\n' \
    "$name" "$test" "$rps" "$ok" "$mean" "$p99" "${bad:-?}" "$grpc_err" >&2
}

echo "bench: $(nproc) cores, $(uname -srm); $NWORKERS workers (gRPC ports $((BASE + 1)), $((BASE + 4)), ...);" \
  "h2load -t1 -c$CLIENTS -m$STREAMS -D $SECS after a ${WARMUP}s warm-up" >&2
: >"$tmp/results"
for test in small 600k; do
  run "gpuslice (1 thread)" "$test" "$gport"
  run "haproxy (1 thread)" "$test" "$hport"
done

echo
echo "gpuslice serve --grpc-listen vs HAProxy $(haproxy -v | awk 'NR==1 { print $3 }') (h2c, nbthread 1)," \
  "$NWORKERS workers, h2load -t1 -c$CLIENTS -m$STREAMS -D $SECS, $(nproc) cores, loopback"
echo "small = unary ModelMetadata; 600k = unary ModelInfer, 602,112-byte raw tensor;"
echo "gRPC errors: non-OK statuses our proxy answered during the run (- for HAProxy: not counted)"
echo
echo "| test | proxy | calls/s | OK calls/s | mean latency | p99 | HTTP failed | gRPC errors | ours/haproxy OK calls/s |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|"
awk '{ name = $2; for (i = 3; i <= NF - 6; i++) name = name " " $i
    line[++n] = $1 "|" name "|" $(NF - 5) "|" $(NF - 4) "|" $(NF - 3) "|" $(NF - 2) "|" $(NF - 1) "|" $NF
    t[n] = $1 }
  /gpuslice/ { ours[$1] = $(NF - 4) } /haproxy/ { peer[$1] = $(NF - 4) }
  END { for (i = 1; i <= n; i++) { split(line[i], f, "|")
          ratio = (f[2] ~ /gpuslice/ && peer[t[i]] > 0) ? sprintf("%.2f", ours[t[i]] / peer[t[i]]) : ""
          printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", f[1], f[2], f[3], f[4], f[5],
            f[6], f[7], f[8], ratio } }' "$tmp/results"

# --- our load generator on the same 600k target, against h2load's row above ----------------------
timeout $((SECS + 90)) "$bin" bench -u "http://127.0.0.1:$http_port" -i grpc --grpc-url "127.0.0.1:$gport" \
  -m flower --concurrency-range $((CLIENTS * STREAMS)) --streams "$STREAMS" --threads 1 \
  -p $((SECS * 1000 / 3 + 1)) -r 3 -s 1000 --no-server-metrics --json >"$tmp/ours.json" \
  2>"$tmp/ours.err" || { echo "bench: gpuslice bench -i grpc failed:" >&2; cat "$tmp/ours.err" >&2; }
"$py" - "$tmp/ours.json" "$(awk '$1 == "600k" && /gpuslice/ { print $(NF - 4) }' "$tmp/results")" \
  "$CLIENTS" "$STREAMS" "$SECS" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))["steps"][0]
ours, peer = s["inferences_per_second"], float(sys.argv[2] or 0)
print("\nload generators on `serve --grpc-listen`, 600k ModelInfer, 1 thread, %s connections x %s streams, %s s"
      " (OK calls: grpc-status 0; h2load's: its 200s less the proxy's non-OK answers):" % tuple(sys.argv[3:6]))
print("| generator | OK calls/s | p50 ms | p99 ms | errors/s |\n|---|---:|---:|---:|---:|")
print("| gpuslice bench -i grpc | %.0f | %.1f | %.1f | %.0f |" % (ours, s["latency_us"]["p50"] / 1e3,
      s["latency_us"]["p99"] / 1e3, sum(s["errors"].values()) / s["seconds"]))
print("| h2load | %.0f | | | |" % peer)
print("gpuslice bench / h2load OK calls/s: %.2f" % (ours / peer if peer else 0))
EOF
