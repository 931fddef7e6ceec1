# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash disable=SC2154
# tests/lib/common.sh: what the bash tests share: a scratch directory, the
# passed/failed counts and the final "N passed, N failed" line, and for the
# serve tests their EXIT trap and summing up. Sourced by a test after its
# `set` line; safe under set -u.

passed=0
failed=0
ok() { passed=$((passed + 1)); }
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }

# gs_tmpdir NAME: prints a new scratch directory NAME.XXXXXX under
# GS_TEST_TMP (else /tmp), or any new one if that cannot be made.
gs_tmpdir() {
  mkdir -p "${GS_TEST_TMP:-/tmp}" 2>/dev/null
  mktemp -d "${GS_TEST_TMP:-/tmp}/$1.XXXXXX" 2>/dev/null || mktemp -d
}

# gs_open_to_all PATH: true when every folder from / down to PATH lets every
# user through (o+x): what another test account, or a daemon that checks its
# socket's folders (munged), needs. A checkout in a private home (mode 0700)
# fails it.
gs_open_to_all() {
  local p
  p=$(readlink -f "$1") || return 1
  [ -d "$p" ] || p=${p%/*}
  while [ -n "$p" ]; do
    [[ $(stat -c %A "$p") == ?????????[xt] ]] || return 1
    p=${p%/*}
  done
}

# gs_stop_pids: an EXIT trap for tests that start serves themselves: each
# pid in $pids gets SIGTERM (serve stops its workers), 10 s, then SIGKILL;
# then $tmp goes.
gs_stop_pids() {
  local p
  for p in "${pids[@]}"; do
    kill "$p" 2>/dev/null
    for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$p" 2>/dev/null
  done
  rm -rf "$tmp"
}

# gs_emu_layout LAYOUT: a fresh emulated A100-SXM4-40GB ($GPUSLICE_EMU_STATE)
# carved as LAYOUT of configs/a100-40gb.mig-parted.yaml by $bin; on failure
# the test ends with one.
gs_emu_layout() {
  "$bin" -q emu reset --emulate a100-40gb >/dev/null || { echo "FAIL: emu reset"; exit 1; }
  "$bin" -q apply -f "$src/configs/a100-40gb.mig-parted.yaml" -c "$1" >/dev/null ||
    { echo "FAIL: apply $1"; exit 1; }
}

# gs_emu_gis PROFILES: a fresh emulated A100-SXM4-40GB ($GPUSLICE_EMU_STATE)
# with MIG on and the GPU instances PROFILES (comma-separated), each with its
# compute instance; on failure the test ends with one.
gs_emu_gis() {
  "$bin" -q emu reset --emulate a100-40gb >/dev/null &&
    "$bin" -q mig enable >/dev/null &&
    "$bin" -q gi create "$1" -C >/dev/null || { echo "FAIL: setup"; exit 1; }
}

# gs_grpc_proto PY [nghttp]: the test ends with one failure unless the
# python PY has Debian's python3-grpcio and python3-protobuf, protoc is
# there (and nghttp, when asked); then proto/inference.proto's Python
# modules are made in $tmp.
gs_grpc_proto() {
  local need="python3-grpcio, python3-protobuf and protobuf-compiler" nghttp=protoc
  if [ "${2:-}" = nghttp ]; then
    need="python3-grpcio, python3-protobuf, protobuf-compiler and nghttp2-client"
    nghttp=nghttp
  fi
  if ! "$1" -c 'import grpc, google.protobuf' 2>/dev/null || ! command -v protoc >/dev/null ||
    ! command -v "$nghttp" >/dev/null; then
    echo "FAIL: $need are needed (scripts/deps.sh)"
    echo "0 passed, 1 failed"
    exit 1
  fi
  protoc --proto_path="$src/proto" --python_out="$tmp" "$src/proto/inference.proto" ||
    { echo "FAIL: protoc"; echo "0 passed, 1 failed"; exit 1; }
}

# gs_need_grpcio PY: the test ends with one failure unless the python PY
# has Debian's python3-grpcio.
gs_need_grpcio() {
  "$1" -c 'import grpc' 2>/dev/null && return 0
  echo "FAIL: python3-grpcio is needed (scripts/deps.sh)"
  echo "0 passed, 1 failed"
  exit 1
}

# gs_py_end NAME RC ERRFILE...: ends a test whose Python part printed its
# own "N passed, N failed" line to $tmp/py.out: with that part's status RC,
# or, when the line is missing (the client died or hung), with one failure
# and the last lines of each ERRFILE (the servers' stderr).
gs_py_end() {
  local name=$1 rc=$2
  shift 2
  if ! grep -Eq '^[0-9]+ passed, [0-9]+ failed' "$tmp/py.out"; then
    echo "$name: the client did not finish (rc $rc)"
    tail -n 5 "$@"
    echo "0 passed, 1 failed"
    exit 1
  fi
  exit "$rc"
}

# summary: the final line; its status is the test's.
summary() {
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}

# gs_serve_test NAME: a serve test's start: its scratch directory $tmp
# (NAME.XXXXXX), the emulator's state in it, no serve yet ($serve_pid) and
# serve_cleanup as the EXIT trap.
gs_serve_test() {
  tmp=$(gs_tmpdir "$1")
  export GPUSLICE_EMU_STATE=$tmp/emu.json
  serve_pid=
  trap serve_cleanup EXIT
}

# gs_serve_grpc [SERVE-OPTION...]: a fresh emulated A100 carved as two
# 3g.20gb slices and, in the background ($serve_pid, output in
# $tmp/serve.out and serve.err), serve in front of an emulated worker on
# each, with HTTP and gRPC listeners on ports of the kernel's choice, one
# thread and the options given.
gs_serve_grpc() {
  gs_emu_layout all-3g.20gb
  "$bin" -q serve --listen 127.0.0.1:0 --grpc-listen 127.0.0.1:0 --admin-listen off \
    --ephemeral-ports --threads 1 "$@" -- "$bin" worker --listen '127.0.0.1:{port}' \
    --grpc-listen '127.0.0.1:{grpc_port}' --profile '{profile}' >"$tmp/serve.out" 2>"$tmp/serve.err" &
  serve_pid=$!
}

# gs_asan: 1 when $bin is an AddressSanitizer build (its shadow memory and
# quarantine are most of its RSS, so memory bounds are not checked), else 0.
# Not `ldd | grep -q`: under pipefail, grep's early exit can fail ldd (SIGPIPE).
gs_asan() {
  case "$(ldd "$bin" 2>/dev/null)" in *libasan*) echo 1 ;; *) echo 0 ;; esac
}

# serve_cleanup: the serve tests' EXIT trap: a serve still running
# ($serve_pid) is killed, its stopped workers continued so that they can
# exit; then $tmp goes.
serve_cleanup() {
  if [ -n "${serve_pid:-}" ]; then
    pkill -CONT -P "$serve_pid" 2>/dev/null
    kill -9 "$serve_pid" 2>/dev/null
  fi
  rm -rf "$tmp"
}

# serve_collect PYOUT ERRFILE: for the tests whose Python part ends with
# "RESULT <passed> <failed>" in PYOUT (no such line: one failure) after it
# sent SIGTERM to serve ($serve_pid, a child of this shell): waits for serve,
# whose status must be 0 (ERRFILE, its stderr, is shown when it is not), and
# adds the Python part's counts to this shell's.
serve_collect() {
  local res rc
  wait "$serve_pid"
  rc=$?
  serve_pid=
  res=$(sed -n 's/^RESULT \([0-9]*\) \([0-9]*\)$/\1 \2/p' "$1")
  if [ -n "$res" ]; then
    passed=$((passed + ${res% *}))
    failed=$((failed + ${res#* }))
  else
    failed=$((failed + 1))
  fi
  if [ "$rc" -eq 0 ]; then
    ok
    echo "ok: serve exits 0 after SIGTERM"
  else
    fail "serve exited $rc; stderr: $(tail -5 "$2")"
  fi
}

# serve_summary PYOUT ERRFILE: serve_collect, then summary.
serve_summary() {
  serve_collect "$1" "$2"
  summary
}
