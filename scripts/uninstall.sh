#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# uninstall.sh MANIFEST [DESTDIR]: removes what `make install` installed (the
# files CMake listed in MANIFEST), then the folders of gpuslice's own that
# are left empty (never a shared one such as bin/).
set -euo pipefail
manifest=${1:?usage: scripts/uninstall.sh MANIFEST [DESTDIR]}
destdir=${2:-}
if [ ! -f "$manifest" ]; then
  echo "uninstall.sh: $manifest not found: nothing was installed from this build (make install)" >&2
  exit 2
fi
while IFS= read -r f || [ -n "$f" ]; do
  [ -n "$f" ] || continue
  rm -f -- "$destdir$f"
  d=$(dirname -- "$f")
  while [ "$d" != / ] && [[ "$d" == *gpuslice* ]]; do
    rmdir -- "$destdir$d" 2>/dev/null || break
    d=$(dirname -- "$d")
  done
done <"$manifest"
