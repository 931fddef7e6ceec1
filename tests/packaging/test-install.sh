#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-install.sh: `cmake --install` (what `make install` runs) into a
# DESTDIR lays out the tree an admin expects: the command, nvml-emu in its
# private folder only, the systemd units (accepted by systemd-analyze), the
# example configs, the man pages (each renders with man -l), the bash and
# zsh completion, and nvidia-mig-parted as a link to gpuslice in the private
# folder, not on PATH; the installed command and library work from there;
# and scripts/uninstall.sh takes every file away again. The units: apply,
# serve (Type=notify with a watchdog and reload) and the queue runner (which
# changes users: no NoNewPrivileges=; keeps running jobs when stopped), each
# accepted by systemd-analyze verify with its Documentation= pages found in
# the installed man pages; every variable they read is in the installed
# /etc/default example; the tmpfiles.d entry makes the shared jobs
# directory sticky and world-writable.
# Env: GS_BUILD (build dir), GS_SRC (source dir), GS_TEST_TMP (scratch dir).
set -u
: "${GS_BUILD:?}" "${GS_SRC:?}"
. "$GS_SRC/tests/lib/common.sh"
tmp=$(gs_tmpdir install)
trap 'rm -rf "$tmp"' EXIT
dest="$tmp/root"
prefix=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$GS_BUILD/CMakeCache.txt")
root="$dest$prefix"
version=$(sed -n 's/^project(gpuslice VERSION \([0-9.]*\) .*/\1/p' "$GS_SRC/CMakeLists.txt")

if DESTDIR="$dest" cmake --install "$GS_BUILD" >"$tmp/install.log" 2>&1; then ok; else
  fail "cmake --install: $(tail -3 "$tmp/install.log")"; summary; exit; fi

out=$("$root/bin/gpuslice" --version 2>&1)
case "$out" in "gpuslice $version"*) ok ;; *) fail "installed gpuslice --version: '$out'" ;; esac

lib="$root/lib/gpuslice/libnvidia-ml.so.1"
if [ -L "$lib" ] && [ -f "$lib" ]; then ok; else fail "no $lib symlink to the versioned library"; fi
others=$(find "$dest" -name 'libnvidia-ml*' ! -path "$root/lib/gpuslice/*")
if [ -z "$others" ]; then ok; else fail "nvml-emu outside lib/gpuslice, where it would shadow a driver: $others"; fi
# The installed nvml-emu is a working NVML: the version command reads the
# driver's version through it.
out=$(GPUSLICE_NVML_LIBRARY="$lib" "$root/bin/gpuslice" version 2>&1)
case "$out" in *"NVIDIA driver "[0-9]*", NVML "[0-9]*) ok ;; *) fail "version over the installed nvml-emu: '$out'" ;; esac

units=$(find "$dest" -name '*.service' | sort)
unitdir=$(sed -n 's/^GS_SYSTEMD_UNIT_DIR:PATH=//p' "$GS_BUILD/CMakeCache.txt")
for u in gpuslice-apply gpuslice-serve gpuslice-queue; do
  if [ -f "$dest$unitdir/$u.service" ]; then ok; else fail "no $u.service in $unitdir"; fi
done
if command -v systemd-analyze >/dev/null; then
  # Documentation= pages are looked up with man: the installed ones.
  man_opt=--man=yes
  command -v man >/dev/null || { man_opt=--man=no; echo "skip: man is not installed (Documentation= unchecked)"; }
  for u in $units; do
    # systemd-analyze wants the ExecStart programs to exist: the DESTDIR's.
    sed "s|$prefix/bin/gpuslice|$root/bin/gpuslice|g" "$u" >"$tmp/$(basename "$u")"
    if MANPATH="$root/share/man" systemd-analyze verify "$man_opt" "$tmp/$(basename "$u")" >"$tmp/verify" 2>&1 &&
       [ ! -s "$tmp/verify" ]; then ok
    else fail "systemd-analyze verify $(basename "$u"): $(cat "$tmp/verify")"; fi
  done
else
  echo "skip: systemd-analyze is not installed (scripts/deps.sh GS_WITH_DEB=1 installs it)"
fi
# key UNIT VALUE: the unit's (last) setting of key is VALUE.
key() { [ "$(sed -n "s/^$1=//p" "$dest$unitdir/$2.service" 2>/dev/null | tail -1)" = "$3" ]; }
# unit_lacks KEY UNIT: the unit exists and does not set KEY.
unit_lacks() { [ -f "$dest$unitdir/$2.service" ] && ! grep -q "^$1=" "$dest$unitdir/$2.service"; }
for kv in Type=notify NotifyAccess=main WatchdogSec=30s KillMode=mixed 'ExecReload=/bin/kill -HUP $MAINPID' \
          NoNewPrivileges=yes ProtectSystem=strict PrivateTmp=yes ReadWritePaths=/var/spool/gpuslice \
          StateDirectory=gpuslice; do
  if key "${kv%%=*}" gpuslice-serve "${kv#*=}"; then ok; else fail "gpuslice-serve.service lacks $kv"; fi
done
for kv in KillMode=process Delegate=yes GPUSLICE_JOBS_DIR; do
  case $kv in
    GPUSLICE_JOBS_DIR) grep -qs '^Environment=GPUSLICE_JOBS_DIR=/var/spool/gpuslice$' "$dest$unitdir/gpuslice-queue.service" ;;
    *) key "${kv%%=*}" gpuslice-queue "${kv#*=}" ;;
  esac && ok || fail "gpuslice-queue.service lacks $kv"
done
# The queue runner becomes each job's user, and jobs run as in a login
# session: nothing that would bind them.
for k in NoNewPrivileges ProtectSystem ProtectHome PrivateTmp PrivateDevices ProtectControlGroups; do
  if unit_lacks "$k" gpuslice-queue; then ok; else fail "gpuslice-queue.service sets $k (or is missing): jobs would inherit it"; fi
done
# No unit may hide the GPUs' device files (directly, or through ProtectClock's
# device allow-list in systemd 252).
for u in $units; do
  if grep -q '^PrivateDevices=yes\|^ProtectClock=yes\|^DevicePolicy=' "$u"; then
    fail "$(basename "$u") restricts devices: /dev/nvidia* would be out of reach"; else ok; fi
done
# Every variable a unit reads is in the /etc/default example.
example="$root/share/gpuslice/default.example"
for v in $(grep -ho '\$[{]\?GPUSLICE_[A-Z_]*' $units | tr -d '${' | sort -u) \
         $(grep -ho '^Environment=GPUSLICE_[A-Z_]*' $units | sed 's/Environment=//' | sort -u); do
  if grep -q "^#\?$v=" "$example" 2>/dev/null; then ok; else fail "$v is not in $example"; fi
done
conf="$root/lib/tmpfiles.d/gpuslice.conf"
if [ -f "$conf" ]; then ok; else fail "no $conf"; fi
if command -v systemd-tmpfiles >/dev/null && [ -f "$conf" ]; then
  mkdir -p "$tmp/tmpfiles-root"
  if systemd-tmpfiles --root="$tmp/tmpfiles-root" --create "$conf" >"$tmp/tf" 2>&1 &&
     [ "$(stat -c %a "$tmp/tmpfiles-root/var/spool/gpuslice" 2>/dev/null)" = 1777 ]; then ok
  else fail "systemd-tmpfiles --create $conf: $(cat "$tmp/tf"); mode $(stat -c %a "$tmp/tmpfiles-root/var/spool/gpuslice" 2>&1)"; fi
fi

# One man page per command family, gpuslice(1) and the formats' (section 5).
for page in man1/gpuslice.1 man1/gpuslice-gi.1 man1/gpuslice-serve.1 man1/gpuslice-apply.1 \
            man5/gpuslice-serve.yaml.5 man5/gpuslice-layout.yaml.5 man5/gpuslice-plan.yaml.5; do
  if [ -f "$root/share/man/$page" ]; then ok; else fail "no man page share/man/$page"; fi
done
if command -v man >/dev/null; then
  for page in "$root"/share/man/man*/*; do
    LC_ALL=C.UTF-8 man --warnings -l "$page" >"$tmp/page" 2>"$tmp/warn"
    if [ -s "$tmp/page" ] && [ ! -s "$tmp/warn" ]; then ok
    else fail "man -l $(basename "$page"): $(head -3 "$tmp/warn")"; fi
  done
  out=$(LC_ALL=C.UTF-8 MANPATH="$root/share/man" man -w gpuslice-gi 2>&1)
  case "$out" in "$root/share/man/man1/gpuslice-gi.1"*) ok ;; *) fail "man -w gpuslice-gi under the prefix: $out" ;; esac
else
  echo "skip: man is not installed (the pages are not rendered)"
fi
for f in share/bash-completion/completions/gpuslice share/zsh/vendor-completions/_gpuslice; do
  if [ -f "$root/$f" ]; then ok; else fail "no $f"; fi
done

# nvidia-mig-parted: NVIDIA's command line, from the private folder only.
link="$root/lib/gpuslice/bin/nvidia-mig-parted"
out=$("$link" --help 2>&1)
case "$out" in *"nvidia-mig-parted - Manage MIG partitions"*) ok ;; *) fail "$link --help: '${out:0:200}'" ;; esac
if [ -L "$link" ] && [ "$(readlink "$link")" = "$(realpath --relative-to="$(dirname "$link")" "$root/bin/gpuslice")" ]; then
  ok; else fail "$link is not a relative link to bin/gpuslice: $(readlink "$link")"; fi
if [ -e "$root/bin/nvidia-mig-parted" ]; then fail "nvidia-mig-parted in bin/, where NVIDIA's package has it"; else ok; fi

want=$(ls "$GS_SRC"/configs/*.yaml | wc -l)
have=$(ls "$root/share/gpuslice/configs/"*.yaml 2>/dev/null | wc -l)
if [ "$want" -eq "$have" ]; then ok; else fail "$have of $want example configs installed"; fi

"$GS_SRC/scripts/uninstall.sh" "$GS_BUILD/install_manifest.txt" "$dest"
left=$(find "$dest" -type f -o -type l)
if [ -z "$left" ]; then ok; else fail "uninstall left: $left"; fi
if [ ! -d "$root/lib/gpuslice" ] && [ ! -d "$root/share/gpuslice" ]; then ok; else
  fail "uninstall left gpuslice's own folders"; fi
summary
