#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-cli-listen.sh: every option that takes a HOST:PORT (serve's --listen,
# --grpc-listen and --admin-listen, on the command line and in a serve file;
# worker's --listen and --grpc-listen; bench's --url, --grpc-url and
# --metrics-url) refuses a port outside 1..65535, junk after the number and
# a missing port, at once (exit 2, nothing bound), in one line naming the
# option, the value and the fix. `--listen 127.0.0.1:99999999999999` used to
# bind port 16383 (the value modulo 65536) and serve on it.
set -uo pipefail

bin=${GS_BIN:-$(dirname "$0")/../../build/gpuslice}
src=${GS_SRC:-$(dirname "$0")/../..}
. "$src/tests/lib/common.sh"
tmp=$(gs_tmpdir cli-listen)
trap 'rm -rf "$tmp"' EXIT
export GPUSLICE_EMU_STATE=$tmp/emu.json
"$bin" -q emu reset --emulate a100-40gb >/dev/null &&
  "$bin" -q mig enable -i 0 >/dev/null &&
  "$bin" -q gi create -C 1g.5gb >/dev/null || fail "setup: one MIG device"

# refused WANT-IN-MESSAGE COMMAND...: exit 2 within 10 s, one stderr line
# (lines=2: a serve file's value adds the line naming it) that holds WANT
# and names the fix ("65535" or "HOST:PORT" or "brackets").
lines=1
refused() {
  local want=$1 rc err
  shift
  timeout 10 "$bin" -q "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
  rc=$?
  err=$(cat "$tmp/err")
  if [ "$rc" -ne 2 ]; then
    fail "$* exited $rc, not 2 (stdout: $(head -c 200 "$tmp/out"); stderr: ${err:0:200})"
  elif [[ "$err" != *"$want"* ]] || [ "$(wc -l <"$tmp/err")" -ne "$lines" ]; then
    fail "$*: expected one line naming '$want', got: ${err:0:300}"
  elif [[ "$err" != *65535* && "$err" != *HOST:PORT* && "$err" != *brackets* ]]; then
    fail "$*: the message gives no fix: $err"
  else
    ok
  fi
}

bad_values=("127.0.0.1:99999999999999" "127.0.0.1:65536" "127.0.0.1:80x" "127.0.0.1:-1"
            "127.0.0.1: 80" "127.0.0.1" "127.0.0.1:" "::1:8000")
for v in "${bad_values[@]}"; do
  for opt in --listen --grpc-listen --admin-listen; do
    refused "$opt '$v'" serve "$opt" "$v" -- true
  done
  for opt in --listen --grpc-listen; do
    refused "$opt '$v'" worker "$opt" "$v"
  done
done

# Port 0 asks for any free port of a listener, but a URL needs a real one.
for v in "127.0.0.1:99999999999999" "localhost:65536" "localhost:80x" "localhost:0" ":80"; do
  refused "--url '$v'" bench --url "http://$v/" -m flower
  refused "--grpc-url '$v'" bench --url http://127.0.0.1:1 -i grpc --grpc-url "$v" -m flower
  refused "--metrics-url '$v'" bench --url http://127.0.0.1:1 --metrics-url "http://$v" -m flower
done

# The serve file's values go through the same check and name their line.
printf 'replicas: 1\ngrpc-listen: 127.0.0.1:99999999999999\n' >"$tmp/serve.yaml"
lines=2 refused "--grpc-listen '127.0.0.1:99999999999999'" serve -f "$tmp/serve.yaml" -- true
grep -q "serve.yaml, line 2: grpc-listen" "$tmp/err" && ok ||
  fail "the serve file's bad value does not name its line: $(cat "$tmp/err")"

# The message in full, once, as a user sees it.
timeout 10 "$bin" -q serve --listen 127.0.0.1:99999999999999 -- true 2>"$tmp/err"
grep -qx "gpuslice: --listen '127.0.0.1:99999999999999': port 99999999999999 is out of range; give a port from 1 to 65535 (or 0: any free port), e.g. 127.0.0.1:8000" "$tmp/err" &&
  ok || fail "the message: $(cat "$tmp/err")"
summary
