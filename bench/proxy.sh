#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/proxy.sh: our load balancer (`gpuslice serve`) against HAProxy and nginx
# (from Debian), each in front of the same 4 local backends, driven by wrk with
# the same duration, connections and wrk threads; plus one backend directly
# (no proxy) as the baseline. Not part of `make check`.
#
#   bench/proxy.sh                      # 10 s per run, 64 connections, 2 wrk threads
#   BENCH_SECONDS=5 BENCH_CONNS=32 bench/proxy.sh
#   BENCH_THREADS="1 2 4" bench/proxy.sh  # thread counts to compare at (default "1 2")
#
# Backends: 4 `gpuslice worker --model flower --sms 1000000` processes, started
# by `gpuslice serve` on an emulated A30 split into 4x 1g.6gb (serve has no
# static backend list; HAProxy and nginx are pointed at the very same worker
# processes, by the ports serve prints). `--sms 1000000` makes the modelled
# inference 34 us, so the backends are not the bottleneck; GET /v2/health/ready
# costs them nothing.
#
# Tests: (a) small: GET /v2/health/ready (empty 200); (b) 600 KB: POST
# /v2/models/flower/infer with a raw binary FP32 [1,3,224,224] tensor
# (602,112 bytes, `Inference-Header-Content-Length: 0`), answered with ~2 KB of
# JSON after 34 us of modelled compute.
#
# Threads: for each count T of BENCH_THREADS, serve runs with --threads T,
# HAProxy with nbthread T and nginx with worker_processes T, and our ratios
# are to the proxies at the same T (serve, and so its workers, restart for
# each T).
# Everything is on loopback and shares the machine's cores with wrk and the
# backends: numbers are relative, not absolute.
set -euo pipefail

SECS=${BENCH_SECONDS:-10}
CONNS=${BENCH_CONNS:-64}
WRK_THREADS=${BENCH_WRK_THREADS:-2}
WARMUP=${BENCH_WARMUP:-1}
THREADS=${BENCH_THREADS:-1 2}
for t in $THREADS; do
  case $t in '' | *[!0-9]* | 0) echo "bench: BENCH_THREADS: whole numbers from 1: $THREADS" >&2; exit 2 ;; esac
done
NWORKERS=4
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
bin=${GS_BIN:-$src/build/gpuslice}
cores=$(nproc)

[ -x "$bin" ] || { echo "bench: $bin not found (run make first)" >&2; exit 1; }

# --- tools from Debian, installed only if missing -------------------------------------------
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
bench_install bench haproxy:haproxy nginx:nginx wrk:wrk curl:curl python3:python3
# The Debian packages may start their own services; we never use them (own configs and ports).

tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-proxy.XXXXXX")
chmod 755 "$tmp"
export GPUSLICE_EMU_STATE=$tmp/emu.json
pids=()
serve_pid=
trap bench_cleanup EXIT
trap 'exit 130' INT TERM

# wait until URL answers 200 (at most 10 s)
wait_ready() {
  for _ in $(seq 100); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "$1" 2>/dev/null)" = 200 ] && return 0
    sleep 0.1
  done
  echo "bench: $1 never answered 200" >&2
  tail -5 "$tmp"/haproxy-*.log "$tmp"/nginx-*/error.log >&2 2>/dev/null || true
  return 1
}

# --- the backends, under our load balancer ------------------------------------------------------
"$bin" -q emu reset --emulate a30-24gb >/dev/null
"$bin" -q apply -f "$src/configs/a30-24gb.mig-parted.yaml" -c all-1g.6gb >/dev/null
start_serve() { # threads -> sets serve_pid, ours_port, wports
  "$bin" -q serve --listen 127.0.0.1:0 --admin-listen off --ephemeral-ports --log-dir "$tmp" \
    --threads "$1" -- "$bin" worker --listen '127.0.0.1:{port}' --model flower --sms 1000000 \
    >"$tmp/serve.out" 2>>"$tmp/serve.err" &
  serve_pid=$!
  ours_port=$(bench_wait_pool $NWORKERS)
  mapfile -t wports < <(sed -n 's/.*port \([0-9]*\)) joined the pool.*/\1/p' "$tmp/serve.out" | head -$NWORKERS)
  [ ${#wports[@]} -eq $NWORKERS ] || { echo "bench: worker ports not found" >&2; exit 1; }
}
stop_serve() {
  kill -TERM "$serve_pid" 2>/dev/null || true
  wait "$serve_pid" 2>/dev/null || true
  serve_pid=
}

# --- HAProxy and nginx configs ----------------------------------------------------------------
write_haproxy() { # port nbthread file
  {
    echo "global"
    echo "  nbthread $2"
    echo "  maxconn 4096"
    echo "defaults"
    echo "  mode http"
    echo "  option http-keep-alive"
    echo "  http-reuse always"
    echo "  timeout connect 5s"
    echo "  timeout client 30s"
    echo "  timeout server 30s"
    echo "  timeout http-keep-alive 60s"
    echo "frontend fe"
    echo "  bind 127.0.0.1:$1"
    echo "  default_backend workers"
    echo "backend workers"
    echo "  balance leastconn"
    local i
    for i in "${!wports[@]}"; do echo "  server w$i 127.0.0.1:${wports[$i]}"; done
  } >"$3"
}
write_nginx() { # port workers dir
  local user=; [ "$(id -u)" -eq 0 ] && user="user root;"
  mkdir -p "$3"
  {
    echo "$user"
    echo "worker_processes $2;"
    echo "daemon off;"
    echo "pid $3/nginx.pid;"
    echo "error_log $3/error.log warn;"
    echo "events { worker_connections 4096; }"
    echo "http {"
    echo "  access_log off;"
    echo "  client_body_temp_path $3/body; proxy_temp_path $3/proxy;"
    echo "  fastcgi_temp_path $3/fcgi; uwsgi_temp_path $3/uwsgi; scgi_temp_path $3/scgi;"
    echo "  keepalive_requests 1000000; keepalive_timeout 60s;"
    echo "  upstream workers {"
    echo "    least_conn;"
    local i
    for i in "${!wports[@]}"; do echo "    server 127.0.0.1:${wports[$i]};"; done
    echo "    keepalive 64; keepalive_requests 1000000;"
    echo "  }"
    echo "  server {"
    echo "    listen 127.0.0.1:$1;"
    echo "    client_max_body_size 1m;"
    echo "    proxy_request_buffering off;"
    echo "    location / {"
    echo "      proxy_pass http://workers;"
    echo "      proxy_http_version 1.1;"
    echo "      proxy_set_header Connection \"\";"
    echo "    }"
    echo "  }"
    echo "}"
  } >"$3/nginx.conf"
}

start_haproxy() { # threads -> sets port, pid
  port=$(free_port)
  write_haproxy "$port" "$1" "$tmp/haproxy-$1.cfg"
  haproxy -db -f "$tmp/haproxy-$1.cfg" >"$tmp/haproxy-$1.log" 2>&1 &
  pid=$!; pids+=("$pid")
}
start_nginx() { # workers -> sets port, pid
  port=$(free_port)
  write_nginx "$port" "$1" "$tmp/nginx-$1"
  nginx -e "$tmp/nginx-$1/error.log" -p "$tmp/nginx-$1" -c "$tmp/nginx-$1/nginx.conf" \
    >"$tmp/nginx-$1.log" 2>&1 &
  pid=$!; pids+=("$pid")
}
stop() { kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }

# --- the load ----------------------------------------------------------------------------------
head -c 602112 /dev/urandom >"$tmp/tensor.bin"
cat >"$tmp/infer.lua" <<EOF
local f = assert(io.open("$tmp/tensor.bin", "rb"))
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "application/octet-stream"
wrk.headers["Inference-Header-Content-Length"] = "0"
EOF

# to milliseconds: 410.00us, 1.23ms, 2.00s
ms() { awk -v v="$1" 'BEGIN { n = v + 0; u = v; sub(/^[0-9.]+/, "", u);
  if (u == "us") n /= 1000; else if (u == "s") n *= 1000; printf "%.2f", n }'; }

# run NAME TEST PORT: wrk against 127.0.0.1:PORT, result line in $tmp/results ($T: the threads)
run() {
  local name=$1 test=$2 port=$3 url args out rps p50 p99 bad
  if [ "$test" = small ]; then
    url=http://127.0.0.1:$port/v2/health/ready; args=()
  else
    url=http://127.0.0.1:$port/v2/models/flower/infer; args=(-s "$tmp/infer.lua")
    # one request first: the proxy must answer 200 with the model's output
    curl -sf -o /dev/null --max-time 5 -H 'Content-Type: application/octet-stream' \
      -H 'Inference-Header-Content-Length: 0' --data-binary @"$tmp/tensor.bin" "$url" ||
      { echo "bench: $name: a 600 KB infer did not answer 200" >&2; return 1; }
  fi
  [ "$WARMUP" -eq 0 ] ||
    timeout $((WARMUP + 10)) wrk -t"$WRK_THREADS" -c"$CONNS" -d"${WARMUP}s" "${args[@]}" "$url" >/dev/null 2>&1
  out=$(timeout $((SECS + 20)) wrk -t"$WRK_THREADS" -c"$CONNS" -d"${SECS}s" --timeout 5s --latency \
    "${args[@]}" "$url" 2>&1) || true
  echo "$out" >"$tmp/wrk-$name-$test.txt"
  rps=$(echo "$out" | awk '/^Requests\/sec:/ { print $2 }')
  p50=$(echo "$out" | awk '$1 == "50%" { print $2 }')
  p99=$(echo "$out" | awk '$1 == "99%" { print $2 }')
  bad=$(echo "$out" | awk '/Non-2xx/ { n += $NF } /Socket errors/ { gsub(",", ""); n += $4 + $6 + $8 + $10 }
    END { print n + 0 }')
  if [ -z "$rps" ] || [ -z "$p99" ]; then
    echo "bench: $name $test: wrk failed:" >&2; echo "$out" >&2; return 1
  fi
  echo "$test $T $name $rps $(ms "$p50") $(ms "$p99") $bad" >>"$tmp/results"
  printf '  %-24s %-6s %10s req/s  p50 %8s ms  p99 %8s ms  errors %s\n' \
    "$name" "$test" "$rps" "$(ms "$p50")" "$(ms "$p99")" "$bad" >&2
}

echo "bench: $(nproc) cores, $(uname -srm); $NWORKERS backends; threads $THREADS;" \
  "wrk -t$WRK_THREADS -c$CONNS -d${SECS}s after a ${WARMUP}s warm-up" >&2
: >"$tmp/results"
first=1
for T in $THREADS; do
  s=; [ "$T" -gt 1 ] && s=s
  start_serve "$T"
  for test in small 600k; do
    [ -z "$first" ] || run "direct (1 backend)" "$test" "${wports[0]}"
    run "gpuslice ($T thread$s)" "$test" "$ours_port"
    start_haproxy "$T"; wait_ready "http://127.0.0.1:$port/v2/health/ready"
    run "haproxy ($T thread$s)" "$test" "$port"; stop "$pid"
    start_nginx "$T"; wait_ready "http://127.0.0.1:$port/v2/health/ready"
    run "nginx ($T worker$s)" "$test" "$port"; stop "$pid"
  done
  stop_serve
  first=
done
grep -q . "$tmp/serve.err" && grep -v EMULATED "$tmp/serve.err" | head -5 >&2

# --- the table ---------------------------------------------------------------------------------
echo
echo "gpuslice serve vs HAProxy $(haproxy -v | awk 'NR==1 { print $3 }')" \
  "and nginx $(nginx -v 2>&1 | sed 's/.*nginx\///'), $NWORKERS backends, wrk -t$WRK_THREADS -c$CONNS" \
  "-d${SECS}s, $cores cores, loopback"
echo "small = GET /v2/health/ready; 600k = POST flower infer, 602,112-byte binary tensor"
echo "ours/x: our requests/s over x's at the same threads (>1 = we are faster); p99 ours/x: our p99" \
  "over x's (<1 = we are better); direct is compared with us at 1 thread"
echo
awk '
  { t = $1; th[n + 1] = $2; $1 = ""; $2 = ""; line[++n] = $0; test[n] = t }
  END {
    printf "| test | proxy | requests/s | p50 ms | p99 ms | errors | ours/x req/s | p99 ours/x |\n"
    printf "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n"
    for (i = 1; i <= n; i++) {
      m = split(line[i], f, " "); err = f[m]; p99 = f[m-1]; p50 = f[m-2]; rps = f[m-3]
      name = f[1]; for (k = 2; k <= m - 4; k++) name = name " " f[k]
      R[test[i], name] = rps; P[test[i], name] = p99
      if (name ~ /^gpuslice/) { OR[test[i], th[i]] = rps; OP[test[i], th[i]] = p99 }
      row[i] = sprintf("| %s | %s | %.0f | %s | %s | %s", test[i], name, rps, p50, p99, err)
      nm[i] = name
    }
    for (i = 1; i <= n; i++) {
      t = nm[i] ~ /^direct/ ? 1 : th[i]
      if (nm[i] ~ /^gpuslice/ || !((test[i], t) in OR)) r = " | - | -"
      else r = sprintf(" | %.2f | %.2f", OR[test[i], t] / R[test[i], nm[i]], OP[test[i], t] / P[test[i], nm[i]])
      print row[i] r " |"
    }
  }' "$tmp/results"
