# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash disable=SC2154
# bench/lib.sh: what the bench scripts share: installing missing tools from
# Debian, a free loopback port, waiting for serve's workers, and stopping
# everything a run started. Sourced; the caller sets tmp, pids (the
# processes it started) and serve_pid (empty when serve is not running).

# bench_install WHO CMD:PKG|PKG...: installs from Debian each package whose
# command is missing and which is not installed (a bare PKG: not installed).
bench_install() {
  local who=$1 p cmd pkg need=() sudo=
  shift
  for p in "$@"; do
    cmd=${p%%:*} pkg=${p#*:}
    [ "$cmd" != "$p" ] && command -v "$cmd" >/dev/null 2>&1 && continue
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'ok installed' && continue
    need+=("$pkg")
  done
  [ ${#need[@]} -gt 0 ] || return 0
  echo "$who: installing ${need[*]} from Debian" >&2
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  # A fresh machine has no package lists yet: update only when needed.
  if ! $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null 2>&1; then
    $sudo apt-get update -qq >/dev/null
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  fi
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# bench_wait_pool N: waits (at most 10 s) until N workers joined serve's pool
# ($tmp/serve.out), then prints serve's HTTP port; exits the script if not.
bench_wait_pool() {
  local _
  for _ in $(seq 100); do
    [ "$(grep -c 'joined the pool' "$tmp/serve.out" || true)" -ge "$1" ] && break
    sleep 0.1
  done
  [ "$(grep -c 'joined the pool' "$tmp/serve.out" || true)" -ge "$1" ] ||
    { echo "bench: serve did not start $1 workers:" >&2; cat "$tmp/serve.out" "$tmp/serve.err" >&2; exit 1; }
  sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\), .*/\1/p' "$tmp/serve.out"
}

# The EXIT trap: stopped processes are continued so that they can die, serve
# gets 5 s to stop its workers before SIGKILL.
bench_cleanup() {
  local p
  for p in "${pids[@]}"; do kill -CONT "$p" 2>/dev/null || true; kill "$p" 2>/dev/null || true; done
  if [ -n "${serve_pid:-}" ]; then
    kill -TERM "$serve_pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$serve_pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$serve_pid" 2>/dev/null || true
  fi
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
