#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-bench-grpc.sh: `gpuslice bench -i grpc` (KServe v2 ModelInfer over
# h2c, many streams per connection) against `gpuslice worker --grpc-listen`
# and `gpuslice serve --grpc-listen`: requests succeed with no error; against
# a SIGSTOPped worker (metadata read from the live serve) the run still ends
# within its windows and counts its calls as timeouts. No timing is asserted.
# Ends with "N passed, N failed".
set -uo pipefail

bin=${GS_BIN:-$(dirname "$0")/../../build/gpuslice}
src=${GS_SRC:-$(dirname "$0")/../..}
tmp=$(mktemp -d "${GS_TEST_TMP:-/tmp}/bench-grpc.XXXXXX" 2>/dev/null || mktemp -d)
export GPUSLICE_EMU_STATE=$tmp/emu.json
pids=()
passed=0
failed=0
cleanup() {
  for p in "${pids[@]}"; do
    pkill -CONT -P "$p" 2>/dev/null
    kill -CONT "$p" 2>/dev/null
    kill -9 "$p" 2>/dev/null
  done
  rm -rf "$tmp"
}
trap cleanup EXIT

ok() { passed=$((passed + 1)); echo "ok: $1"; }
bad() { failed=$((failed + 1)); echo "FAIL: $1"; }
check() { if eval "$2"; then ok "$1"; else bad "$1 ($2)"; fi; }
q() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); s=d["steps"][0]; print(eval(sys.argv[2]))' "$1" "$2"; }
# port FILE PREFIX: the port of the "PREFIX 127.0.0.1:PORT" line, waiting up to 60 s
port() {
  for _ in $(seq 600); do
    p=$(sed -n "s/^$2 127\.0\.0\.1:\([0-9]*\).*/\1/p" "$1" 2>/dev/null | head -1)
    [ -n "$p" ] && { echo "$p"; return; }
    sleep 0.1
  done
}

"$bin" -q emu reset --emulate a100-40gb >/dev/null || { echo "FAIL: emu reset"; exit 1; }
"$bin" -q apply -f "$src/configs/a100-40gb.mig-parted.yaml" -c all-1g.5gb >/dev/null ||
  { echo "FAIL: apply all-1g.5gb"; exit 1; }

"$bin" -q worker --listen 127.0.0.1:0 --grpc-listen 127.0.0.1:0 --profile 1g.5gb \
  >"$tmp/worker.out" 2>"$tmp/worker.err" &
worker=$!
disown
pids+=($worker)
"$bin" -q serve --listen 127.0.0.1:0 --grpc-listen 127.0.0.1:0 --admin-listen 127.0.0.1:0 \
  --ephemeral-ports --worker-timeout 30000 --log-dir "$tmp" -- \
  "$bin" worker --listen '127.0.0.1:{port}' --grpc-listen '127.0.0.1:{grpc_port}' \
  --profile '{profile}' >"$tmp/serve.out" 2>"$tmp/serve.err" &
pids+=($!)
disown

whttp=$(port "$tmp/worker.out" "listening on")
wgrpc=$(port "$tmp/worker.out" "grpc listening on")
shttp=$(port "$tmp/serve.out" "listening on")
sgrpc=$(port "$tmp/serve.out" "grpc on")
check "ports known" '[ -n "$whttp" ] && [ -n "$wgrpc" ] && [ -n "$shttp" ] && [ -n "$sgrpc" ]'
# the serve's workers are ready when its HTTP side answers a metadata read
for _ in $(seq 600); do
  python3 -c 'import sys,urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' \
    "http://127.0.0.1:$shttp/v2/models/flower" 2>/dev/null && break
  sleep 0.1
done

quick=(-m flower -p 1000 -r 3 -s 1000 --threads 2 --request-timeout 20000)
# run NAME ARGS...: bench --json into $tmp/NAME.json, rc in $tmp/NAME.rc
run() {
  local name=$1
  shift
  timeout 120 "$bin" bench "$@" --json >"$tmp/$name.json" 2>"$tmp/$name.err"
  echo $? >"$tmp/$name.rc"
}

run worker -u "http://127.0.0.1:$whttp" -i grpc --grpc-url "127.0.0.1:$wgrpc" \
  --concurrency-range 8 --streams 3 "${quick[@]}"
check "worker: exit 0" '[ "$(cat $tmp/worker.rc)" = 0 ] || { cat $tmp/worker.err; false; }'
check "worker: protocol grpc" '[ "$(q $tmp/worker.json "d[\"protocol\"]")" = grpc ]'
check "worker: ok requests" '[ "$(q $tmp/worker.json "s[\"requests_ok\"]")" -gt 0 ]'
check "worker: no errors" '[ "$(q $tmp/worker.json "sum(s[\"errors\"].values())")" = 0 ]'

run serve -u "http://127.0.0.1:$shttp" -i grpc --grpc-url "127.0.0.1:$sgrpc" \
  --concurrency-range 16 "${quick[@]}"
check "serve: exit 0" '[ "$(cat $tmp/serve.rc)" = 0 ] || { cat $tmp/serve.err; false; }'
check "serve: ok requests" '[ "$(q $tmp/serve.json "s[\"requests_ok\"]")" -gt 0 ]'
check "serve: no errors" '[ "$(q $tmp/serve.json "sum(s[\"errors\"].values())")" = 0 ]'

check "-i grpc needs closed loop" '[ "$(timeout 30 "$bin" bench -u http://127.0.0.1:$whttp -i grpc \
  --grpc-url 127.0.0.1:$wgrpc -m flower --request-rate-range 10 2>&1 >/dev/null; echo $?)" != 0 ]'

# the worker stopped: its calls time out, the run ends (3 windows of 1 s)
kill -STOP "$worker"
start=$(date +%s)
run stopped -u "http://127.0.0.1:$shttp" -i grpc --grpc-url "127.0.0.1:$wgrpc" \
  --concurrency-range 4 -m flower -p 1000 -r 3 --request-timeout 300 --no-server-metrics
kill -CONT "$worker"
check "stopped: ends in bounded time" '[ $(($(date +%s) - start)) -lt 100 ]'
check "stopped: timeouts counted" '[ "$(q $tmp/stopped.json "s[\"errors\"][\"timeout\"]")" -gt 0 ]'
check "stopped: no ok requests" '[ "$(q $tmp/stopped.json "s[\"requests_ok\"]")" = 0 ]'

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
