#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/loadgen.sh: `gpuslice bench` (plain-HTTP mode) against wrk, the same
# fast local targets, connections and threads, in the same run; then the stall
# demonstration. Not part of `make check`.
#
#   bench/loadgen.sh                                  # 64 connections, 2 threads, 6 s a run
#   BENCH_CONNS=32 BENCH_THREADS=1 BENCH_SECONDS=4 bench/loadgen.sh
#
# Targets: nginx (from Debian, one worker process) serving a 612-byte file, and
# `gpuslice worker --sms 1000000` answering GET /v2/health/ready (no emulated
# compute on that path; --sms 1000000 also makes an infer's modelled compute
# 34 us). wrk runs -d SECONDS; gpuslice bench runs three windows of SECONDS/3
# (-s 1000: every window is accepted, so both run the same time). Each prints
# requests/s; the ratio is ours / wrk's. Everything shares the machine's cores
# with the target: figures are relative, not absolute.
#
# Stall: the worker gets SIGSTOP for 1 s in the middle of (a) gpuslice bench at
# a fixed rate (open loop) and (b) wrk (closed loop, same connections). The
# open loop counts latency from each request's intended send time, so the
# paused second lands in its p99 and max; the closed loop stops sending while
# the target is stopped, so its percentiles hide the pause.
set -euo pipefail

SECS=${BENCH_SECONDS:-6}
CONNS=${BENCH_CONNS:-64}
THREADS=${BENCH_THREADS:-2}
RATE=${BENCH_RATE:-2000}
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
bin=${GS_BIN:-$src/build/gpuslice}
[ -x "$bin" ] || { echo "loadgen: $bin not found (run make first)" >&2; exit 1; }

# --- tools from Debian, installed only if missing ---
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
bench_install loadgen nginx:nginx wrk:wrk python3:python3

tmp=$(mktemp -d "${TMPDIR:-/tmp}/loadgen.XXXXXX")
chmod 755 "$tmp"
pids=()
trap bench_cleanup EXIT
trap 'exit 130' INT TERM

# --- targets ---
nport=$(free_port)
mkdir -p "$tmp/www" "$tmp/nginx"
head -c 612 /dev/zero | tr '\0' 'x' >"$tmp/www/index.html"
user=; [ "$(id -u)" -eq 0 ] && user="user root;"
cat >"$tmp/nginx/nginx.conf" <<CONF
$user
worker_processes 1;
daemon off;
pid $tmp/nginx/nginx.pid;
error_log $tmp/nginx/error.log;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 1000000;
  client_body_temp_path $tmp/nginx;
  proxy_temp_path $tmp/nginx;
  fastcgi_temp_path $tmp/nginx;
  uwsgi_temp_path $tmp/nginx;
  scgi_temp_path $tmp/nginx;
  server { listen 127.0.0.1:$nport; root $tmp/www; }
}
CONF
nginx -p "$tmp/nginx" -c "$tmp/nginx/nginx.conf" &
pids+=($!)
"$bin" worker --listen 127.0.0.1:0 --sms 1000000 >"$tmp/worker.out" 2>"$tmp/worker.err" &
wpid=$!
pids+=($wpid)
for _ in $(seq 100); do grep -q '^listening on ' "$tmp/worker.out" 2>/dev/null && break; sleep 0.1; done
wport=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$tmp/worker.out")
sleep 0.5

wrk_rps() { # url -> requests/s
  wrk -t "$THREADS" -c "$CONNS" -d "${SECS}s" "$1" | awk '/^Requests\/sec:/ {print $2}'
}
ours() { # url path extra-args... -> the run's JSON
  local url=$1 path=$2
  shift 2
  "$bin" bench --json --url "$url" --http-path "$path" --threads "$THREADS" \
    -p $((SECS * 1000 / 3)) -r 3 -s 1000 "$@" 2>/dev/null || true
}
field() { # json python-expression-on-s
  python3 -c 'import json,sys; s=json.load(sys.stdin)["steps"][0]; print(eval(sys.argv[1]))' "$1"
}

echo "gpuslice bench vs wrk: $CONNS connections, $THREADS threads, ${SECS} s each, $(nproc) cores shared with the target"
echo
echo "| target | wrk req/s | gpuslice bench req/s | ratio (ours/wrk) | ours p50 / p99 / max ms |"
echo "| --- | ---: | ---: | ---: | --- |"
for t in "nginx, 612-byte file|http://127.0.0.1:$nport|/index.html" \
         "gpuslice worker, GET /v2/health/ready|http://127.0.0.1:$wport|/v2/health/ready"; do
  IFS='|' read -r name url path <<<"$t"
  w=$(wrk_rps "$url$path")
  j=$(ours "$url" "$path" --concurrency-range "$CONNS")
  o=$(echo "$j" | field 'round(s["inferences_per_second"])')
  lat=$(echo "$j" | field '"%.3f / %.3f / %.3f" % (s["latency_us"]["p50"]/1e3, s["latency_us"]["p99"]/1e3, s["latency_us"]["max"]/1e3)')
  ratio=$(python3 -c "print('%.2f' % ($o / $w))")
  echo "| $name | ${w%.*} | $o | $ratio | $lat |"
done

echo
echo "stall: gpuslice worker SIGSTOPped for 1 s, $((SECS / 2)) s into a ${SECS} s run, $CONNS connections"
echo
echo "| generator | requests answered | p50 ms | p99 ms | max ms | requests delayed (no free connection) |"
echo "| --- | ---: | ---: | ---: | ---: | ---: |"
stall() { (sleep $((SECS / 2)); kill -STOP $wpid; sleep 1; kill -CONT $wpid) & spid=$!; }
stall
j=$(ours "http://127.0.0.1:$wport" /v2/health/ready --request-rate-range "$RATE" --connections "$CONNS")
wait "$spid"
echo "| gpuslice bench, open loop at $RATE req/s | $(echo "$j" | field '"%d | %.3f | %.3f | %.3f | %d" % (s["requests_ok"], s["latency_us"]["p50"]/1e3, s["latency_us"]["p99"]/1e3, s["latency_us"]["max"]/1e3, s["delayed"])') |"
stall
j=$(ours "http://127.0.0.1:$wport" /v2/health/ready --concurrency-range "$CONNS")
wait "$spid"
echo "| gpuslice bench, closed loop, $CONNS outstanding | $(echo "$j" | field '"%d | %.3f | %.3f | %.3f | -" % (s["requests_ok"], s["latency_us"]["p50"]/1e3, s["latency_us"]["p99"]/1e3, s["latency_us"]["max"]/1e3)') |"
stall
wl=$(wrk -t "$THREADS" -c "$CONNS" -d "${SECS}s" --latency "http://127.0.0.1:$wport/v2/health/ready")
wait "$spid"
p50=$(echo "$wl" | awk '$1 == "50%" {print $2}')
p99=$(echo "$wl" | awk '$1 == "99%" {print $2}')
max=$(echo "$wl" | awk '$1 == "Latency" {print $4}')
n=$(echo "$wl" | awk '/requests in/ {print $1}')
echo "| wrk, closed loop, $CONNS connections | $n | $p50 | $p99 | $max | - |"
echo
echo "(wrk prints its own units: us, ms or s.)"
