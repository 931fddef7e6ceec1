#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test-arch-spdx.sh: every file of ours that can carry a comment names its
# license (Apache-2.0, LICENSE) in an SPDX line near its top, so a file copied
# out of the tree still says under what terms. Data (fuzz corpora, recorded
# transcripts, configs) and the docs are left out: they are not code.
# Ends with "N passed, N failed".
set -uo pipefail
src=${GS_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$src/tests/lib/common.sh"
cd "$src" || exit 1

missing=()
while IFS= read -r -d '' f; do
  head -n 3 "$f" | grep -q 'SPDX-License-Identifier: Apache-2.0' || missing+=("$f")
done < <(find src tests fuzz scripts bench proto deploy .ci -type f \
  \( -name '*.c' -o -name '*.h' -o -name '*.sh' -o -name '*.py' -o -name '*.proto' \
     -o -name '*.in' -o -name '*.bash' -o -name '_gpuslice' -o -path 'deploy/*' -o -path '.ci/*' \) \
  -not -path 'tests/fidelity/*' -not -path 'fuzz/corpus/*' -not -path 'fuzz/dict/*' -print0)
for f in CMakeLists.txt Makefile; do
  head -n 3 "$f" | grep -q 'SPDX-License-Identifier: Apache-2.0' || missing+=("$f")
done

if [ ${#missing[@]} = 0 ]; then ok; else
  fail "no SPDX line in the first 3 lines of: ${missing[*]} (add '# SPDX-License-Identifier: Apache-2.0' or the C comment form)"
fi
[ -f LICENSE ] && grep -q 'Apache License' LICENSE && ok || fail "LICENSE is not the Apache License"
summary
