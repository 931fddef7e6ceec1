#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-file-trust.sh: gpuslice's own files (the emulator's state and its lock,
# the jobs directory and its files, the apply lock and journal) are never
# taken from where another local user could plant them (issue 14, item 11).
# Drives the real binary:
# - no fixed name in a shared directory: with HOME and XDG_* unset, a user is
#   refused with a message naming HOME (and no /tmp/gpuslice-* appears), for
#   the emulator's state and for the jobs directory of a real (NVML) machine;
#   root goes to /var/lib/gpuslice (checked in a private mount namespace);
#   state directories are created 0700;
# - a FIFO at a state, lock, journal, jobs or serve pid file path is an
#   error, not a hang (every command runs under `timeout`);
# - a symbolic link is refused, and its target left as it was;
# - a file owned by another real account (made here with useradd), or one
#   writable by others, is refused; so is a directory others may write, or
#   one of another account;
# - a held lock: a bounded wait, said on stderr as it happens, then an error
#   naming the holder's pid.
# The cases needing root (useradd, setpriv, unshare) skip with a message when
# not root. Env: GS_BIN, GS_TEST_TMP, GS_NVML_EMU (the NVML cases).
set -u
: "${GS_BIN:?set GS_BIN to the gpuslice binary}"
. "${GS_SRC:-$(dirname "$0")/../..}/tests/lib/common.sh"
root=$(gs_tmpdir file-trust) || exit 1
chmod 700 "$root"
user=
uid=
pub=
# An old gpuslice (the test run against one) leaves the account's files in
# /tmp: they go too.
cleanup() {
  if [ -n "$user" ]; then
    rm -rf "/tmp/gpuslice-emu-$uid.json" "/tmp/gpuslice-emu-$uid.json.lock" "/tmp/gpuslice-jobs-$uid"
    userdel "$user" >/dev/null 2>&1
  fi
  rm -rf "$root" "$pub"
}
trap cleanup EXIT
unset GPUSLICE_EMULATE GPUSLICE_EMU_STATE GPUSLICE_JOBS_DIR GPUSLICE_APPLY_LOCK GPUSLICE_LOCK_WAIT
S="$root/emu.json"

# expect NAME RC PATTERN... -- CMD...: CMD (under a 20 s timeout) exits RC
# and its stderr holds every PATTERN (fixed strings).
expect() {
  local name=$1 want=$2 pats=() rc
  shift 2
  while [ "$1" != "--" ]; do pats+=("$1"); shift; done
  shift
  timeout -k 5 20 "$@" >"$root/out" 2>"$root/err"
  rc=$?
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    fail "$name: hung (killed by timeout after 20 s)"
    return
  fi
  if [ "$rc" -ne "$want" ]; then
    fail "$name: exit $rc, expected $want; stderr: $(head -c 600 "$root/err")"
    return
  fi
  for p in "${pats[@]}"; do
    if ! grep -qF -- "$p" "$root/err"; then
      fail "$name: stderr lacks '$p': $(head -c 600 "$root/err")"
      return
    fi
  done
  ok
}
G=("$GS_BIN" -q --emu-state "$S")
g() { "${G[@]}" "$@"; }
fresh() { rm -rf "$root/emu.json"* "$root/victim" && g emu reset >/dev/null || { echo "setup failed"; exit 1; }; }

# ---- a FIFO, a link, another's mode at the state file and its lock ----
fresh
rm -f "$S" && mkfifo "$S"
expect "FIFO at the state file" 3 "$S is a FIFO" "rm $S" -- "${G[@]}" list
rm -f "$S" && g emu reset >/dev/null
rm -f "$S.lock" && mkfifo "$S.lock"
expect "FIFO at the lock file" 3 "$S.lock is a FIFO" -- "${G[@]}" mig enable
rm -f "$S.lock"
fresh
cp "$S" "$root/victim"
rm -f "$S" && ln -s "$root/victim" "$S"
expect "link at the state file" 3 "$S is a symbolic link" -- "${G[@]}" mig enable
cmp -s "$S" "$root/victim" && [ -L "$S" ] && ok || fail "the link or its target was changed"
fresh
rm -f "$S.lock" && ln -s "$root/victim" "$S.lock"
expect "link at the lock file" 3 "$S.lock is a symbolic link" -- "${G[@]}" list
fresh
chmod 666 "$S"
expect "state writable by others" 3 "$S is writable by others (mode 0666)" "chmod go-w" -- "${G[@]}" list
fresh
chmod 777 "$root"
expect "state in a directory others may write" 3 "directory $root is writable by others" -- "${G[@]}" list
chmod 1777 "$root"
g list >/dev/null 2>"$root/err" && ok || fail "a sticky directory (as /tmp) refused: $(cat "$root/err")"
chmod 700 "$root"

# ---- a held lock: waited for, within bounds, then named ----
fresh
python3 -c 'import fcntl,os,sys,time
fd=os.open(sys.argv[1], os.O_RDONLY); fcntl.flock(fd, fcntl.LOCK_EX)
print(os.getpid(), flush=True); time.sleep(30)' "$S.lock" >"$root/holder" &
holder=$!
for _ in $(seq 100); do [ -s "$root/holder" ] && break; sleep 0.1; done
expect "a held lock" 1 "$S.lock is held by pid $holder" "GPUSLICE_LOCK_WAIT" -- env GPUSLICE_LOCK_WAIT=1 "${G[@]}" list
expect "a held lock: the wait is said as it happens" 1 "waiting for $S.lock, held by pid $holder" \
  "at most 2 s" -- env GPUSLICE_LOCK_WAIT=2 "$GS_BIN" --emu-state "$S" list
kill "$holder"; wait "$holder" 2>/dev/null
expect "a bad GPUSLICE_LOCK_WAIT" 2 "GPUSLICE_LOCK_WAIT='soon'" -- env GPUSLICE_LOCK_WAIT=soon "${G[@]}" list

# ---- the jobs directory and its files ----
fresh
g mig enable >/dev/null && g gi create 1g.5gb -C >/dev/null || fail "setup of a slice"
J="$root/emu.json.jobs"
g jobs >/dev/null 2>&1
# The claims ledger is one file per user, claims/<uid>.json: our own is our
# state file (a FIFO there is an error naming it); another user's that is
# not a regular file of that user's is skipped, never waited on.
C="$J/claims/$(id -u).json"
rm -f "$C" && mkfifo "$C"
expect "FIFO at the claims file" 3 "$C is a FIFO" "rm $C" -- "${G[@]}" run --profile 1g.5gb -- true
rm -f "$C"
mkfifo "$J/claims/4242.json"
expect "FIFO at another user's claims file: skipped" 0 -- "${G[@]}" run --profile 1g.5gb -- true
rm -f "$J/claims/4242.json"
chmod 777 "$J"
expect "a jobs directory others may write" 3 "directory $J is writable by others" -- "${G[@]}" jobs
chmod 700 "$J"
mkdir -p "$J/queue" && ln -s "$root/victim" "$J/queue/j000001.json"
expect "link at a queued job" 3 "$J/queue/j000001.json is a symbolic link" -- "${G[@]}" jobs
rm -f "$J/queue/j000001.json"
# serve's pid file (the pids a restarted serve signals) is one of them too.
mkdir -m 700 "$root/serve" && mkfifo "$root/serve/serve.pid"
expect "FIFO at serve's pid file" 3 "$root/serve/serve.pid is a FIFO" -- "${G[@]}" serve \
  --listen 127.0.0.1:0 --admin-listen off --ephemeral-ports --state-dir "$root/serve" -- true

# ---- the apply lock and journal ----
fresh
printf 'version: v1\nmig-configs:\n  all-1g:\n    - devices: all\n      mig-enabled: true\n      mig-devices: {"1g.5gb": 7}\n' >"$root/c.yaml"
export GPUSLICE_APPLY_LOCK="$root/a"
mkfifo "$root/a.journal"
expect "FIFO at the apply journal" 3 "$root/a.journal is a FIFO" -- "${G[@]}" recover
rm -f "$root/a.journal" && ln -s "$root/victim" "$root/a.journal"
expect "link at the apply journal" 3 "$root/a.journal is a symbolic link" -- "${G[@]}" recover
rm -f "$root/a.journal" "$root/a.lock" && ln -s "$root/victim" "$root/a.lock"
expect "link at the apply lock" 3 "$root/a.lock is a symbolic link" -- "${G[@]}" apply -f "$root/c.yaml" -c all-1g
rm -f "$root/a.lock"
unset GPUSLICE_APPLY_LOCK

# ---- defaults and other accounts: root only ----
if [ "$(id -u)" -ne 0 ] || ! command -v useradd >/dev/null || ! command -v setpriv >/dev/null; then
  echo "SKIP: default paths and other accounts: not root, or useradd or setpriv missing"
  summary
  exit
fi
# A real account of its own (no home directory), removed on exit; useradd
# retries while another test holds /etc/passwd's lock.
for _ in $(seq 20); do
  user="gsft$$$RANDOM"
  useradd -M -N -d /nonexistent -s /usr/sbin/nologin "$user" 2>/dev/null && break
  user=
  sleep 0.5
done
if [ -z "$user" ]; then
  fail "useradd failed 20 times"
  summary
  exit
fi
uid=$(id -u "$user")
# The account may be unable to enter the scratch or build directories, so it
# runs a copy of the binary from a world-readable directory under /tmp.
pub=$(mktemp -d /tmp/gs-file-trust.XXXXXX) && chmod 755 "$pub" && cp "$GS_BIN" "$pub/gpuslice" || exit 1
AS=(setpriv --reuid="$uid" --regid=65534 --clear-groups env -i PATH=/usr/bin:/bin)

rm -f "/tmp/gpuslice-emu-$uid.json" "/tmp/gpuslice-emu-$uid.json.lock"
expect "no HOME: refused, naming it" 1 "set HOME" "GPUSLICE_EMU_STATE" -- "${AS[@]}" "$pub/gpuslice" list
[ -e "/tmp/gpuslice-emu-$uid.json" ] && fail "a state file appeared in /tmp" || ok
expect "no HOME, a relative XDG_STATE_HOME: refused" 1 "set HOME" -- \
  "${AS[@]}" XDG_STATE_HOME=state "$pub/gpuslice" list
if [ -n "${GS_NVML_EMU:-}" ] && [ -e "$GS_NVML_EMU" ]; then
  mkdir "$pub/nvml" && cp -L "$GS_NVML_EMU" "$pub/nvml/libnvidia-ml.so.1" && chmod -R a+rX "$pub/nvml"
  mkdir -m 700 "$pub/machine" && chown "$uid" "$pub/machine"
  rm -rf "/tmp/gpuslice-jobs-$uid"
  expect "no HOME, real GPUs: the jobs directory is refused, naming it" 1 "set HOME" "GPUSLICE_JOBS_DIR" -- \
    "${AS[@]}" GPUSLICE_NVML_LIBRARY="$pub/nvml/libnvidia-ml.so.1" GPUSLICE_EMU_STATE="$pub/machine/emu.json" \
    "$pub/gpuslice" jobs
  [ -e "/tmp/gpuslice-jobs-$uid" ] && fail "a jobs directory appeared in /tmp" || ok
else
  echo "SKIP: the jobs directory on real GPUs: GS_NVML_EMU is not set"
fi
mkdir -m 700 "$pub/home" && chown "$uid" "$pub/home"
expect "HOME set: the state goes below it" 0 -- "${AS[@]}" HOME="$pub/home" "$pub/gpuslice" list
[ "$(stat -c %a "$pub/home/.local/state/gpuslice")" = 700 ] && [ "$(stat -c %a "$pub/home/.local")" = 700 ] &&
  [ -f "$pub/home/.local/state/gpuslice/emu.json" ] && ok ||
  fail "state directories not 0700: $(ls -laR "$pub/home" | head -20)"
mkdir -m 700 "$pub/run" && chown "$uid" "$pub/run"
expect "only XDG_RUNTIME_DIR: the state goes below it" 0 -- \
  "${AS[@]}" XDG_RUNTIME_DIR="$pub/run" "$pub/gpuslice" list
[ -f "$pub/run/gpuslice/emu.json" ] && ok || fail "no state in XDG_RUNTIME_DIR"
# Root's default, in a mount namespace of its own: /var/lib and /tmp are
# empty tmpfs there (the binary copied first), so nothing lands on the host.
if unshare -m true 2>/dev/null; then
  expect "root without HOME: /var/lib/gpuslice, nothing in /tmp" 0 -- unshare -m sh -c '
    mount -t tmpfs -o mode=0755 tmpfs /var/lib && cp "$1" /var/lib/gs &&
      mount -t tmpfs -o mode=1777 tmpfs /tmp || exit 9
    env -i PATH=/usr/bin:/bin /var/lib/gs -q list >/dev/null &&
      test "$(stat -c %a /var/lib/gpuslice)" = 700 && test -f /var/lib/gpuslice/emu.json &&
      test -z "$(ls /tmp)"' sh "$GS_BIN"
else
  echo "SKIP: root's default below /var/lib: cannot unshare a mount namespace here"
fi

# Files and directories of another account.
fresh
chown "$uid" "$S"
expect "state owned by another account" 3 "$S belongs to uid $uid ($user)" -- "${G[@]}" list
fresh
chown "$uid" "$S.lock"
expect "lock owned by another account" 3 "$S.lock belongs to uid $uid ($user)" -- "${G[@]}" mig enable
fresh
mkdir -m 755 "$root/theirs" && chown "$uid" "$root/theirs"
expect "state in another account's directory" 3 "directory $root/theirs belongs to uid $uid ($user)" -- \
  "$GS_BIN" -q --emu-state "$root/theirs/emu.json" list
[ -e "$root/theirs/emu.json" ] && fail "a state file was made in another account's directory" || ok
mkdir -m 700 "$root/jobs-theirs" && chown "$uid" "$root/jobs-theirs"
expect "a jobs directory of another account" 3 "directory $root/jobs-theirs belongs to uid $uid" -- \
  "${G[@]}" queue submit --profile 1g.5gb --jobs-dir "$root/jobs-theirs" -- true
summary
