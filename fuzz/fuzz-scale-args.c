/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz-scale-args.c: libFuzzer target for the autoscaler's option values
 * (--latency-budget, --slices, --scale-window) and every DURATION option's
 * reader (gs_duration_parse, with a bare number in ms as the old options
 * take it): any bytes, as one NUL-terminated string, go through the
 * parsers. Nothing may crash; a refusal is INVALID_ARGUMENT naming the
 * option; an accepted value holds what the callers rely on (percentile in
 * 1..100, budget and window of 1 us to 24 h, MIN <= MAX, a duration within
 * its bounds whose gs_duration_format reads back the same). */
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
  if (gs_duration_parse(&err, "--poll-interval", s, 1000, 0, 60000000ull, &us) == 0) {
    char text[32];
    uint64_t back = 0;
    if (us > 60000000ull)
      abort();
    gs_duration_format(us, text, sizeof(text));
    if (gs_duration_parse(&err, "--poll-interval", text, 0, 0, 60000000ull, &back) != 0 || back != us)
      abort();
  } else if (err.code != GS_E_INVALID_ARGUMENT || !strstr(err.msg, "--poll-interval"))
    abort();
  free(s);
  return 0;
}
