#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/before-after.sh: two gpuslice binaries (say the build of an older
# commit and today's) through the same bench scripts, alternately, so that
# the load a shared machine adds falls on both alike (in turn: before then
# after, then after then before). Each script compares
# its binary with a peer (HAProxy, nginx, wrk, h2load) in the same run, and
# its ratios are what this prints side by side, one row per run. Not part of
# `make check`.
#
#   git worktree add /tmp/old 715c081 && make -C /tmp/old build
#   bench/before-after.sh /tmp/old/build/gpuslice build/gpuslice    # 3 pairs
#   BENCH_PAIRS=5 BENCH_SECONDS=5 bench/before-after.sh OLD NEW
#
# Runs per side and pair: bench/grpc.sh at its 16 x 32 calls, again at 4 x 8
# (where no 600 KB call is refused by the proxy's memory budget), bench/proxy.sh
# and bench/loadgen.sh. Outputs stay in a folder it names at the end.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ $# = 2 ] && [ -x "$1" ] && [ -x "$2" ] || {
  echo "usage: bench/before-after.sh OLD_GPUSLICE NEW_GPUSLICE (two built binaries)" >&2
  exit 2
}
old=$(readlink -f "$1") new=$(readlink -f "$2")
pairs=${BENCH_PAIRS:-3}
export BENCH_SECONDS=${BENCH_SECONDS:-5}
out=$(mktemp -d "${TMPDIR:-/tmp}/bench-before-after.XXXXXX")

for i in $(seq "$pairs"); do
  order="before after"
  [ $((i % 2)) = 0 ] && order="after before" # ABBA: a load that grows or fades falls on both
  for side in $order; do
    bin=$old
    [ "$side" = after ] && bin=$new
    for b in grpc grpc48 proxy loadgen; do
      echo "bench: pair $i, $side, $b (load $(cut -d' ' -f1 /proc/loadavg))" >&2
      env=()
      s=$b
      [ "$b" = grpc48 ] && env=(BENCH_CLIENTS=4 BENCH_STREAMS=8) && s=grpc
      env GS_BIN="$bin" "${env[@]}" bash "$here/$s.sh" >"$out/$b-$side-$i.out" 2>"$out/$b-$side-$i.err" ||
        echo "bench: $s.sh failed for $bin: $out/$b-$side-$i.err" >&2
    done
  done
done
python3 "$here/before-after-tables.py" "$out" "$pairs"
echo "bench: outputs in $out" >&2
