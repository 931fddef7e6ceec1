#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# deb.sh OUTDIR: builds the Debian package (packaging/debian) from this
# checkout's tracked files into OUTDIR, and prints the .deb's path. The
# package's version is the project's (CMakeLists.txt); the changelog must agree.
set -euo pipefail
out=${1:?usage: scripts/deb.sh OUTDIR}
src=$(cd "$(dirname "$0")/.." && pwd)
version=$(sed -n 's/^project(gpuslice VERSION \([0-9.]*\) .*/\1/p' "$src/CMakeLists.txt")
changelog=$(sed -n '1s/^gpuslice (\([^)]*\)).*/\1/p' "$src/packaging/debian/changelog")
if [ "$version" != "$changelog" ]; then
  echo "deb.sh: CMakeLists.txt says version $version but packaging/debian/changelog says" \
       "$changelog; add a changelog entry for $version (dch -v $version)" >&2
  exit 2
fi
rm -rf "$out"
tree="$out/gpuslice-$version"
mkdir -p "$tree"
# The tracked files only: no build trees or scratch files in the package.
if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
  (cd "$src" && git ls-files -z --cached --others --exclude-standard |
     while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
     xargs -0 cp --parents -t "$tree")
else
  (cd "$src" && tar --exclude='./build*' -cf - .) | tar -xf - -C "$tree"
fi
cp -r "$src/packaging/debian" "$tree/debian"
(cd "$tree" && DEB_BUILD_OPTIONS="nocheck parallel=$(nproc)" \
   dpkg-buildpackage -us -uc -b >"$out/build.log" 2>&1) || {
  tail -30 "$out/build.log" >&2
  echo "deb.sh: dpkg-buildpackage failed; the whole log is $out/build.log" >&2
  exit 1
}
ls "$out"/gpuslice_"$version"_*.deb
