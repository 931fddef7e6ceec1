#!/usr/bin/env bash
# test-install.sh: `cmake --install` (what `make install` runs) into a
# DESTDIR lays out the tree an admin expects: the command, nvml-emu in its
# private folder only, the systemd units (accepted by systemd-analyze), the
# example configs, the man pages (each renders with man -l), the bash and
# zsh completion, and nvidia-mig-parted as a link to gpuslice in the private
# folder, not on PATH; the installed command and library work from there;
# and scripts/uninstall.sh takes every file away again.
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

units=$(find "$dest" -name '*.service')
if [ -n "$units" ]; then ok; else fail "no systemd unit installed"; fi
if command -v systemd-analyze >/dev/null; then
  for u in $units; do
    # systemd-analyze wants the ExecStart programs to exist: the DESTDIR's.
    sed "s|$prefix/bin/gpuslice|$root/bin/gpuslice|g" "$u" >"$tmp/$(basename "$u")"
    if systemd-analyze verify "$tmp/$(basename "$u")" >"$tmp/verify" 2>&1 && [ ! -s "$tmp/verify" ]; then ok
    else fail "systemd-analyze verify $(basename "$u"): $(cat "$tmp/verify")"; fi
  done
else
  echo "skip: systemd-analyze is not installed (scripts/deps.sh GS_WITH_DEB=1 installs it)"
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
