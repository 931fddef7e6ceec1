/* SPDX-License-Identifier: Apache-2.0 */
/* search.c: perf_analyzer's decisions, as pure arithmetic on figures and
 * outcomes (read at perf_analyzer 263c5f6e, src/inference_profiler.{h,cc}):
 * whether three windows' figures settled, whether a step passed, which level
 * a linear sweep or a binary search measures next, and the answer. It knows
 * nothing of requests or time. */
#include "bench/internal.h"

#include <math.h>

#define MAX_LEVELS 10000 /* a sweep without an end still ends */

bool gs_bench_settled(const double v[3], double pct)
{
  double lo = fmin(v[0], fmin(v[1], v[2])), hi = fmax(v[0], fmax(v[1], v[2]));
  return lo > 0 && hi / lo <= 1 + pct / 100;
}

bool gs_bench_step_met(const struct gs_bench_step *s)
{
  return s->stable && !s->over;
}

void gs_bench_search_init(struct gs_bench_search *s, double start, double end, double step,
                          bool binary, bool whole, bool stop_on_fail)
{
  *s = (struct gs_bench_search){.start = start, .end = end, .step = step > 0 ? step : 1,
                                .lo = start, .hi = end, .binary = binary, .whole = whole,
                                .stop_on_fail = stop_on_fail};
}

static bool linear_next(struct gs_bench_search *s, double *level)
{
  /* start + i * step rather than a running sum: a rate range does not drift */
  double v = s->start + s->step * (double)s->i;
  if (s->i >= MAX_LEVELS || (s->end > 0 && v > s->end * (1 + 1e-12)))
    return false;
  s->i++;
  *level = v;
  return true;
}

bool gs_bench_search_next(struct gs_bench_search *s, double *level)
{
  if (s->done)
    return false;
  if (!s->binary) {
    s->done = !linear_next(s, level);
  } else if (s->phase == 0) {
    *level = s->start;
  } else if (s->phase == 1) {
    *level = s->end;
  } else if (s->hi - s->lo > s->step) {
    *level = s->whole ? floor((s->lo + s->hi) / 2) : (s->lo + s->hi) / 2;
  } else {
    s->done = true;
  }
  s->level = *level;
  return !s->done;
}

void gs_bench_search_result(struct gs_bench_search *s, bool met)
{
  if (!s->binary) {
    s->done = s->stop_on_fail && !met;
  } else if (s->phase < 2) {
    /* the start failing, or the end passing, is the whole answer */
    s->done = s->phase == 0 ? !met : met;
    s->phase++;
  } else if (met) {
    s->lo = s->level;
  } else {
    s->hi = s->level;
  }
}

const struct gs_bench_step *gs_bench_best(const struct gs_bench_step *s, size_t n)
{
  const struct gs_bench_step *best = NULL;
  for (size_t i = 0; i < n; i++)
    if (gs_bench_step_met(&s[i]) && (!best || s[i].level > best->level))
      best = &s[i];
  return best;
}
