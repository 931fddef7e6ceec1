/* SPDX-License-Identifier: Apache-2.0 */
/* duration.c: the one reader of durations, for every option and file key
 * that takes one ("250ms", "10s", "2m"; a bare number in the unit the
 * option had before it took units). Only text to microseconds: what a
 * duration is for is the caller's. */
#include "util/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
  const char *name;
  double us;
} units[] = {
    {"us", 1}, {"ms", 1e3}, {"s", 1e6}, {"m", 60e6}, {"h", 3600e6},
};

void gs_duration_format(uint64_t us, char *buf, size_t size)
{
  unsigned k = GS_NITEMS(units);
  while (k > 1 && (us == 0 || us % (uint64_t)units[k - 1].us != 0))
    k--;
  snprintf(buf, size, "%llu%s", (unsigned long long)(us / (uint64_t)units[k - 1].us),
           units[k - 1].name);
}

/* The number's text: digits with at most one '.', nothing else (strtod's
 * hexadecimal, exponents, signs, "inf" and "nan" are not durations). */
static size_t number_len(const char *s)
{
  size_t n = strspn(s, "0123456789.");
  const char *dot = memchr(s, '.', n);
  if (n == 0 || (dot && memchr(dot + 1, '.', n - (size_t)(dot - s) - 1)) || (n == 1 && dot))
    return 0;
  return n;
}

int gs_duration_parse(struct gs_err *err, const char *what, const char *text, uint64_t bare_unit_us,
                      uint64_t min_us, uint64_t max_us, uint64_t *out)
{
  size_t n = number_len(text);
  const char *unit = text + n;
  double mul = (double)bare_unit_us, v;
  char lo[32], hi[32], bare[64] = "";
  if (n == 0 || n > 20)
    goto bad;
  v = strtod(text, NULL);
  if (*unit == ' ')
    unit++;
  if (*unit) {
    unsigned k = 0;
    while (k < GS_NITEMS(units) && strcmp(unit, units[k].name) != 0)
      k++;
    if (k == GS_NITEMS(units))
      goto bad;
    mul = units[k].us;
  } else if (!bare_unit_us) {
    goto bad;
  }
  v = round(v * mul);
  if (!isfinite(v) || v < (double)min_us || v > (double)max_us)
    goto bad;
  *out = (uint64_t)v;
  return 0;
bad:
  gs_duration_format(min_us, lo, sizeof(lo));
  gs_duration_format(max_us, hi, sizeof(hi));
  if (bare_unit_us) {
    char u[32];
    gs_duration_format(bare_unit_us, u, sizeof(u));
    snprintf(bare, sizeof(bare), "; a bare number counts %s", strcmp(u, "1s") == 0 ? "seconds"
                                                               : strcmp(u, "1ms") == 0 ? "milliseconds"
                                                                                       : u);
  }
  return gs_err_set(err, GS_E_INVALID_ARGUMENT,
                    "%s '%.40s': expected a duration from %s to %s such as 250ms, 10s or 2m "
                    "(units us, ms, s, m, h%s)",
                    what, text, lo, hi, bare);
}
