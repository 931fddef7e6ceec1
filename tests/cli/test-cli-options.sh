#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-cli-options.sh: one meaning per option (docs/cli.md, "Options: one
# meaning each"): an old spelling still works and warns once on stderr;
# every duration option takes the one syntax (a unit, and a bare number in
# the option's old unit); write commands' --json prints JSON of what they
# did, and nothing else on stdout; the admin API's default port is none of
# the common defaults it used to collide with.
# Env: GS_BIN, GS_SRC, GS_TEST_TMP.
set -uo pipefail
bin=${GS_BIN:-$(dirname "$0")/../../build/gpuslice}
src=${GS_SRC:-$(dirname "$0")/../..}
. "$src/tests/lib/common.sh"
tmp=$(gs_tmpdir cli-options)
trap 'rm -rf "$tmp"' EXIT
export HOME=$tmp/home GPUSLICE_EMU_STATE=$tmp/emu.json GPUSLICE_JOBS_DIR=$tmp/jobs
unset GPUSLICE_EMULATE
mkdir -p "$HOME"
g() { timeout 60 "$bin" -q "$@"; }
g emu reset --emulate a100-40gb >/dev/null || fail "setup"

# An old spelling: it works, with one warning naming the new one, however often it is given.
out=$(g run --mode mps --threads 30 --memory 1GiB -- env 2>"$tmp/err")
if grep -qx CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=30 <<<"$out" && grep -q 'use --thread-percentage' "$tmp/err"; then ok
else fail "run --threads (old spelling): $(cat "$tmp/err")"; fi
g mig enable -i 0 >/dev/null || fail "setup: mig enable"
g queue run --until-empty --poll-ms 20 --poll-ms 30 >/dev/null 2>"$tmp/err"
rc=$?
if [ "$rc" = 0 ] && [ "$(grep -c 'warning: --poll-ms is deprecated; use --poll-interval' "$tmp/err")" = 1 ]; then ok
else fail "queue run --poll-ms: exit $rc, stderr: $(cat "$tmp/err")"; fi
g gi create 1g.5gb >/dev/null || fail "setup: gi create"
g gi destroy -g 9 >/dev/null 2>"$tmp/err"
rc=$?
if [ "$rc" = 0 ] && grep -q 'warning: -g is deprecated; use --gi' "$tmp/err" && [ "$(g gi list --json)" = "[]" ]; then ok
else fail "gi destroy -g: exit $rc, stderr: $(cat "$tmp/err")"; fi
# ... and is left out of --help.
if g run --help | grep -q -- '--threads'; then fail "run --help shows --threads"; else ok; fi

# Durations: units, decimals, the old bare unit; refused without one where none was ever taken.
for v in 250ms 0.25s 0.5m 20; do
  if g queue run --until-empty --poll-interval "$v" >/dev/null 2>"$tmp/err"; then ok
  else fail "--poll-interval $v refused: $(cat "$tmp/err")"; fi
done
for v in 1ms 1s 2m; do
  if g recover --wait "$v" >/dev/null 2>"$tmp/err"; then ok; else fail "recover --wait $v: $(cat "$tmp/err")"; fi
done
for v in -1s 1e3ms 0x10s 10d "" 25h; do
  g recover --wait "$v" >/dev/null 2>"$tmp/err"
  rc=$?
  if [ "$rc" = 2 ] && grep -q -- "--wait '$v': expected a duration" "$tmp/err"; then ok
  else fail "recover --wait '$v': exit $rc: $(cat "$tmp/err")"; fi
done

# --json on write commands: JSON alone on stdout, of what was done.
json() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"; }
out=$(g gi create -C 1g.5gb,2g.10gb --json)
if [ "$(json '[(x["name"], x["ci"]["id"]) for x in d]' <<<"$out")" = "[('1g.5gb', 0), ('2g.10gb', 0)]" ]; then ok
else fail "gi create --json: $out"; fi
gis=$(g gi list --json | json '",".join(sorted(str(x["id"]) for x in d))')
out=$(g ci destroy --json)
if [ "$(json 'len(d)' <<<"$out")" = 2 ]; then ok; else fail "ci destroy --json: $out"; fi
out=$(g ci create --gi "${gis%%,*}" --json)
if [ "$(json 'd[0]["gi"]' <<<"$out")" = "${gis%%,*}" ]; then ok; else fail "ci create --json: $out"; fi
g ci destroy >/dev/null
out=$(g gi destroy --json)
if [ "$(json '",".join(sorted(str(x["id"]) for x in d))' <<<"$out")" = "$gis" ]; then ok; else fail "gi destroy --json: $out (had $gis)"; fi
out=$(g mig disable --json)
if [ "$(json 'd[0]["mig_current"]' <<<"$out")" = False ]; then ok; else fail "mig disable --json: $out"; fi
out=$(g emu proc-add --pid 4242 -i 0 --json)
if [ "$(json 'd["pid"]' <<<"$out")" = 4242 ]; then ok; else fail "emu proc-add --json: $out"; fi
out=$(g emu reset --json)
if [ "$(json 'd["emulate"]' <<<"$out")" = a100-40gb ]; then ok; else fail "emu reset --json: $out"; fi
# After a refusal: what was done (nothing), on stdout; the reason on stderr.
out=$(g gi create 1g.5gb --json 2>"$tmp/err")
rc=$?
if [ "$rc" = 1 ] && [ "$out" = "[]" ] && grep -q NVML_ERROR "$tmp/err"; then ok
else fail "gi create --json with MIG off: exit $rc, stdout '$out'"; fi

# The admin API's default port collides with none of the usual defaults
# (Triton 8000-8002, Prometheus 9090, node exporter 9100, DCGM exporter 9400).
port=$(g serve --help | sed -n 's/.*--admin-listen .*(default: [^:]*:\([0-9]*\)).*/\1/p')
case "$port" in
  "" | 8000 | 8001 | 8002 | 9090 | 9100 | 9400) fail "admin API default port '$port'" ;;
  *) ok ;;
esac
summary
