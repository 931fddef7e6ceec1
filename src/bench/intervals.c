/* SPDX-License-Identifier: Apache-2.0 */
/* intervals.c: perf_analyzer's --request-intervals file: the times between
 * successive requests of the open loop, in microseconds, one per line (any
 * white space separates them), used in order and again from the start for
 * as long as the load runs. A refusal names the file, the line and the
 * word. */
#include "bench/bench.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One gap at most an hour: a longer one is a unit mistake (seconds or
 * nanoseconds for microseconds), not a load. */
#define MAX_GAP_US 3.6e9

/* The word at p (up to white space) as a gap in microseconds, or -1. */
static double gap_us(const char *p, size_t n)
{
  char word[64], *end;
  double v;
  if (n >= sizeof(word) || !isdigit((unsigned char)p[0]))
    return -1; /* no sign, no "inf" or "nan": digits first */
  memcpy(word, p, n);
  word[n] = 0;
  v = strtod(word, &end);
  return *end || !isfinite(v) || v > MAX_GAP_US ? -1 : v;
}

static int add(struct gs_err *err, const char *name, double **gaps, size_t *n, size_t *cap,
               double ns)
{
  if (*n == GS_BENCH_MAX_INTERVALS)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "%s: more than %u intervals", name,
                      GS_BENCH_MAX_INTERVALS);
  if (*n == *cap) {
    size_t c = *cap ? 2 * *cap : 256;
    double *p = realloc(*gaps, c * sizeof(*p));
    if (!p)
      return gs_err_set(err, GS_E_NO_MEMORY, "%s: out of memory", name);
    *gaps = p;
    *cap = c;
  }
  (*gaps)[(*n)++] = ns;
  return 0;
}

int gs_bench_intervals_parse(struct gs_err *err, const char *name, const char *text, size_t len,
                             double **gaps_ns, size_t *n)
{
  double *gaps = NULL, sum = 0;
  size_t count = 0, cap = 0, line = 1, i = 0;
  int rc = 0;
  while (i < len && rc == 0) {
    size_t start = i;
    double us;
    if (isspace((unsigned char)text[i])) {
      line += text[i++] == '\n';
      continue;
    }
    while (i < len && !isspace((unsigned char)text[i]))
      i++;
    if ((us = gap_us(text + start, i - start)) < 0)
      rc = gs_err_set(err, GS_E_INVALID_ARGUMENT,
                      "%s:%zu: '%.*s' is not a time in microseconds (0 to 3600000000)", name,
                      line, (int)(i - start < 40 ? i - start : 40), text + start);
    else if ((rc = add(err, name, &gaps, &count, &cap, us * 1000.0)) == 0)
      sum += us;
  }
  if (rc == 0 && count == 0)
    rc = gs_err_set(err, GS_E_INVALID_ARGUMENT,
                    "%s: no intervals (microseconds between requests, one per line)", name);
  else if (rc == 0 && sum <= 0)
    rc = gs_err_set(err, GS_E_INVALID_ARGUMENT,
                    "%s: the intervals add up to 0 microseconds: no request rate", name);
  if (rc) {
    free(gaps);
    return rc;
  }
  *gaps_ns = gaps;
  *n = count;
  return 0;
}

double gs_bench_intervals_rate(const double *gaps_ns, size_t n)
{
  double sum = 0;
  for (size_t i = 0; i < n; i++)
    sum += gaps_ns[i];
  return sum > 0 ? 1e9 * (double)n / sum : 0;
}
