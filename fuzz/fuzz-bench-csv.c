/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz-bench-csv.c: libFuzzer target for `gpuslice bench plot`'s input: any
 * bytes as a perf_analyzer CSV, and when they parse, the SVG drawn from them
 * (twice, as two series, with a budget line). Refusals must name the file. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  struct gs_bench_series s[2];
  struct gs_err err = {0};
  char *svg = NULL;
  size_t len;
  int rc = gs_bench_csv_read(&err, "fuzz.csv", (const char *)data, size, "p90 latency", &s[0]);
  if (rc) {
    if (rc != GS_E_INVALID_ARGUMENT && rc != GS_E_NO_MEMORY)
      abort();
    if (rc == GS_E_INVALID_ARGUMENT && !strstr(err.msg, "fuzz.csv"))
      abort();
    return 0;
  }
  s[1] = s[0];
  strcpy(s[0].label, "a<&>\"");
  strcpy(s[1].label, "b");
  if (gs_bench_plot_svg(&err, s, 2, "p90 latency", 50000, &svg, &len) == 0) {
    if (!len || !strstr(svg, "</svg>"))
      abort();
    free(svg);
  }
  gs_bench_series_free(&s[0]);
  return 0;
}
