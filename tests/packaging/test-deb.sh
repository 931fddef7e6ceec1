#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-deb.sh: `make deb`'s package (scripts/deb.sh) is one a fresh Debian 12
# takes: lintian finds no error and no warning, its metadata and contents
# are what the project installs (man pages, completion, the private
# nvidia-mig-parted link), its dependencies resolve (apt's simulation), the
# unpacked command runs and every man page in it renders. Built once per check, in the plain build only (the
# package does not depend on the build type).
# Env: GS_SRC (source dir), GS_BUILD (build dir), GS_TEST_TMP (scratch dir).
set -u
: "${GS_SRC:?}" "${GS_BUILD:?}"
. "$GS_SRC/tests/lib/common.sh"
if grep -q '^GS_SANITIZE:BOOL=ON\|^GS_TSAN:BOOL=ON' "$GS_BUILD/CMakeCache.txt"; then
  echo "skip: the package is tested in the plain build"; summary; exit
fi
for tool in dpkg-buildpackage dpkg-deb lintian; do
  if ! command -v "$tool" >/dev/null; then
    echo "skip: $tool is not installed (GS_WITH_DEB=1 scripts/deps.sh installs it)"; summary; exit
  fi
done
tmp=$(gs_tmpdir deb)
trap 'rm -rf "$tmp"' EXIT
version=$(sed -n 's/^project(gpuslice VERSION \([0-9.]*\) .*/\1/p' "$GS_SRC/CMakeLists.txt")

if deb=$("$GS_SRC/scripts/deb.sh" "$tmp/out" 2>"$tmp/err"); then ok; else
  fail "scripts/deb.sh: $(tail -5 "$tmp/err")"; summary; exit; fi

info=$(dpkg-deb -f "$deb" Package Version Architecture Depends)
case "$info" in *"Package: gpuslice"*"Version: $version"*) ok ;; *) fail "control fields: $info" ;; esac
for dep in libjansson4 libyaml-0-2 libnghttp2-14 libprotobuf-c1; do
  case "$info" in *"$dep"*) ok ;; *) fail "Depends lacks $dep: $info" ;; esac
done

dpkg-deb -c "$deb" | awk '{print $6}' >"$tmp/contents"
for f in ./usr/bin/gpuslice ./usr/lib/gpuslice/libnvidia-ml.so.1 ./lib/systemd/system/gpuslice-apply.service \
         ./lib/systemd/system/gpuslice-serve.service ./lib/systemd/system/gpuslice-queue.service \
         ./usr/lib/tmpfiles.d/gpuslice.conf ./etc/default/gpuslice \
         ./usr/share/doc/gpuslice/copyright ./usr/share/gpuslice/configs/a100-40gb.mig-parted.yaml \
         ./usr/share/man/man1/gpuslice.1.gz ./usr/share/man/man1/gpuslice-serve.1.gz \
         ./usr/share/man/man5/gpuslice-serve.yaml.5.gz ./usr/share/man/man5/gpuslice-layout.yaml.5.gz \
         ./usr/share/bash-completion/completions/gpuslice ./usr/share/zsh/vendor-completions/_gpuslice \
         ./usr/lib/gpuslice/bin/nvidia-mig-parted; do
  if grep -qx "$f" "$tmp/contents"; then ok; else fail "the package lacks $f"; fi
done
# The units' settings are the admin's (a conffile); the shared jobs directory
# is made at install (dh_installtmpfiles' postinst).
dpkg-deb -e "$deb" "$tmp/control"
if grep -qx /etc/default/gpuslice "$tmp/control/conffiles" 2>/dev/null; then ok; else
  fail "/etc/default/gpuslice is not a conffile: $(cat "$tmp/control/conffiles" 2>&1)"; fi
if grep -q 'systemd-tmpfiles.*gpuslice.conf' "$tmp/control/postinst" 2>/dev/null; then ok; else
  fail "postinst does not create the jobs directory (systemd-tmpfiles gpuslice.conf)"; fi
if grep -q 'x86_64-linux-gnu/libnvidia-ml\|^\./usr/lib/libnvidia-ml' "$tmp/contents"; then
  fail "nvml-emu where ld.so would find it before a real driver"; else ok; fi

if grep -q 'usr/bin/nvidia-mig-parted' "$tmp/contents"; then
  fail "nvidia-mig-parted on PATH, where NVIDIA's package has it"; else ok; fi

lintian --tag-display-limit 0 "$deb" >"$tmp/lintian" 2>&1
if grep -q '^E:' "$tmp/lintian"; then fail "lintian errors: $(grep '^E:' "$tmp/lintian")"; else ok; fi
if grep -q '^W:' "$tmp/lintian"; then fail "lintian warnings: $(grep '^W:' "$tmp/lintian")"; else ok; fi

if command -v apt-get >/dev/null; then
  if apt-get install --simulate "$deb" >"$tmp/apt" 2>&1; then ok; else
    fail "apt cannot install the package's dependencies: $(tail -5 "$tmp/apt")"; fi
fi

dpkg-deb -x "$deb" "$tmp/root"
out=$("$tmp/root/usr/bin/gpuslice" --version 2>&1)
case "$out" in "gpuslice $version"*) ok ;; *) fail "unpacked gpuslice --version: '$out'" ;; esac
out=$("$tmp/root/usr/lib/gpuslice/bin/nvidia-mig-parted" --help 2>&1)
case "$out" in *"USAGE:"*"nvidia-mig-parted"*) ok ;; *) fail "the package's nvidia-mig-parted --help: '${out:0:200}'" ;; esac
if command -v man >/dev/null; then
  for page in "$tmp"/root/usr/share/man/man*/*.gz; do
    if LC_ALL=C.UTF-8 man --warnings -l "$page" 2>"$tmp/warn" >/dev/null && [ ! -s "$tmp/warn" ]; then ok
    else fail "man -l $(basename "$page"): $(head -3 "$tmp/warn")"; fi
  done
fi
summary
