#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-nvml-rust-client.sh: nvml-emu driven by an NVML client whose bindings
# no one on the team wrote: tests/nvml-emu/rust-client, built on Debian's
# nvml-wrapper and nvml-wrapper-sys (bindgen output of NVIDIA's nvml.h)
# crates, offline from /usr/share/cargo/registry, into the build tree. It runs
# against an emulated A100-SXM4-40GB + H100 80GB HBM3: devices, MIG mode, GI
# and CI profiles, create with and without placement, MIG devices, bad
# inputs, destroy; then process lists on a machine with two processes.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib/common.sh
. "$here/../lib/common.sh"
: "${GS_NVML_EMU:?GS_NVML_EMU names build/nvml-emu/libnvidia-ml.so.1}"
: "${GS_BIN:?GS_BIN names the gpuslice binary}"
build=$(cd "$(dirname "$GS_NVML_EMU")/.." && pwd)
tmp=$(gs_tmpdir nvml-rust)
trap 'rm -rf "$tmp"' EXIT

# Debian's toolchain and crates (scripts/deps.sh installs cargo, rustc and
# librust-nvml-wrapper-dev); a rustup toolchain earlier on PATH is not used.
cargo=${GS_CARGO:-/usr/bin/cargo}
export RUSTC=${GS_RUSTC:-/usr/bin/rustc}
if [ ! -x "$cargo" ] || [ ! -d /usr/share/cargo/registry/nvml-wrapper-0.9.0 ]; then
  fail "Debian's cargo and librust-nvml-wrapper-dev are needed: run scripts/deps.sh"
  summary
  exit
fi
export CARGO_HOME=$build/rust-client/cargo-home
mkdir -p "$CARGO_HOME"
cat > "$CARGO_HOME/config.toml" <<'EOF'
[source.crates-io]
replace-with = "debian"
[source.debian]
directory = "/usr/share/cargo/registry"
[net]
offline = true
EOF
export CARGO_TARGET_DIR=$build/rust-client/target
# The lock file goes to the build tree too, not into the source tree.
cp "$here/rust-client/Cargo.toml" "$build/rust-client/Cargo.toml"
rm -rf "$build/rust-client/src" && cp -r "$here/rust-client/src" "$build/rust-client/src"
if ! nice "$cargo" build --offline --quiet --manifest-path "$build/rust-client/Cargo.toml" \
    > "$tmp/cargo.log" 2>&1; then
  cat "$tmp/cargo.log"
  fail "cargo build --offline of tests/nvml-emu/rust-client"
  summary
  exit
fi
client=$CARGO_TARGET_DIR/debug/gs-nvml-rust-client

# A sanitized nvml-emu needs its runtime loaded first in a program built
# without it.
preload=""
rt=$(ldd "$GS_NVML_EMU" | awk '/lib(asan|tsan)\.so/ {print $3; exit}')
[ -n "$rt" ] && preload=$rt

# run NAME MODE: runs the client against the state file of NAME; its checks
# count one each.
run() {
  local out=$tmp/$1.out
  LD_PRELOAD=$preload ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0} \
    GPUSLICE_EMU_STATE="$tmp/$1.json" LD_LIBRARY_PATH="$(dirname "$GS_NVML_EMU")" \
    timeout 120 "$client" "$GS_NVML_EMU" "$2" > "$out" 2>&1
  local rc=$?
  grep -v '^FAIL:' "$out" | grep -v ' passed, ' | sed 's/^/  /'
  local line p f
  line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$out" | tail -1)
  if [ -z "$line" ]; then
    fail "$1: the client ended (status $rc) without its summary line"
    return
  fi
  p=${line%% passed*}
  f=${line#*, }
  f=${f%% failed}
  passed=$((passed + p))
  grep '^FAIL:' "$out" | sed "s/^FAIL: /FAIL: $1: /"
  failed=$((failed + f))
  [ "$rc" -eq 0 ] || [ "$f" -gt 0 ] || fail "$1: the client exited $rc"
}

export GPUSLICE_EMULATE=a100-40gb,h100-80gb
run mig mig

GPUSLICE_EMU_STATE=$tmp/procs.json "$GS_BIN" -q emu proc-add --pid 4242 --used-mib 1000 -i 0 \
  && GPUSLICE_EMU_STATE=$tmp/procs.json "$GS_BIN" -q emu proc-add --pid 4343 --used-mib 2000 -i 0 \
  || fail "gpuslice emu proc-add"
run procs procs

summary
