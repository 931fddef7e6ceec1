/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz-bench-intervals.c: libFuzzer target for `gpuslice bench
 * --request-intervals FILE`: any bytes as the file. A refusal must name the
 * file; what parses must be finite gaps of at most an hour, not all zero. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  struct gs_err err = {0};
  double *g = NULL, rate;
  size_t n = 0;
  int rc = gs_bench_intervals_parse(&err, "fuzz.txt", (const char *)data, size, &g, &n);
  if (rc) {
    if ((rc != GS_E_INVALID_ARGUMENT && rc != GS_E_NO_MEMORY) || g || !strstr(err.msg, "fuzz.txt"))
      abort();
    return 0;
  }
  for (size_t i = 0; i < n; i++)
    if (!(g[i] >= 0 && g[i] <= 3.6e12))
      abort();
  rate = gs_bench_intervals_rate(g, n);
  if (!n || !(rate > 0) || !isfinite(rate))
    abort();
  free(g);
  return 0;
}
