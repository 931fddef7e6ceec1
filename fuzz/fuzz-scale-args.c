/* fuzz-scale-args.c: libFuzzer target for the autoscaler's option values
 * (--latency-budget, --slices, --scale-window): any bytes, as one
 * NUL-terminated string, go through the three parsers. Nothing may crash;
 * a refusal is INVALID_ARGUMENT naming the option; an accepted value holds
 * what the autoscaler relies on (percentile in 1..100, budget and window of
 * 1 us to 24 h, MIN <= MAX). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "serve/serve.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char *s = malloc(size + 1);
  struct gs_err err = {0};
  double pct = 0;
  uint64_t us = 0;
  unsigned a = 0, b = 0;
  if (!s)
    return 0;
  memcpy(s, data, size);
  s[size] = 0;
  if (gs_scale_parse_budget(&err, s, &pct, &us) == 0) {
    if (!(pct >= 1 && pct < 100) || !us || us > 86400000000ull)
      abort();
  } else if (err.code != GS_E_INVALID_ARGUMENT || !strstr(err.msg, "--latency-budget"))
    abort();
  if (gs_scale_parse_range(&err, s, &a, &b) == 0) {
    if (a > b || !b)
      abort();
  } else if (err.code != GS_E_INVALID_ARGUMENT || !strstr(err.msg, "--slices"))
    abort();
  if (gs_scale_parse_duration(&err, "--scale-window", s, &us) == 0) {
    if (!us || us > 86400000000ull)
      abort();
  } else if (err.code != GS_E_INVALID_ARGUMENT || !strstr(err.msg, "--scale-window"))
    abort();
  free(s);
  return 0;
}
