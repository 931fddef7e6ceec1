/* SPDX-License-Identifier: Apache-2.0 */
/* test-bench-search.c: the levels bench measures for a range, against
 * perf_analyzer's InferenceProfiler::Profile (src/inference_profiler.h at
 * perf_analyzer 263c5f6e0c7a, 2025-12-15), driven by outcomes chosen here: a
 * level passes when it is at most a knee. Linear: every level up to END, or
 * (with a threshold) up to the first that fails, also without an END.
 * Binary: START, END, then midpoints (rounded down for concurrency), until
 * the bounds are at most STEP apart; the answer is the highest level that
 * passed. Hand-computed sequences; and its stability test (max / min of
 * three windows). No network, no time. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "bench/bench.h"

/* Runs a search whose levels pass up to knee; got[] receives the levels
 * measured (at most max); returns their count. */
static size_t walk(double start, double end, double step, bool binary, bool whole, bool stop,
                   double knee, double *got, size_t max)
{
  struct gs_bench_search s;
  size_t n = 0;
  double level;
  gs_bench_search_init(&s, start, end, step, binary, whole, stop);
  while (gs_bench_search_next(&s, &level)) {
    assert_true(n < max);
    got[n++] = level;
    gs_bench_search_result(&s, level <= knee);
  }
  return n;
}

static void expect(const double *got, size_t n, const double *want, size_t wn)
{
  char g[512] = "", w[512] = "";
  for (size_t i = 0; i < n; i++)
    snprintf(g + strlen(g), sizeof(g) - strlen(g), " %g", got[i]);
  for (size_t i = 0; i < wn; i++)
    snprintf(w + strlen(w), sizeof(w) - strlen(w), " %g", want[i]);
  if (strcmp(g, w) != 0)
    fail_msg("levels measured:%s\n        expected:%s", g, w);
}

#define EXPECT(got, n, ...)                                                                        \
  do {                                                                                             \
    const double want_[] = {__VA_ARGS__};                                                          \
    expect(got, n, want_, sizeof(want_) / sizeof(want_[0]));                                       \
  } while (0)

static void binary_concurrency(void **state)
{
  double got[64];
  size_t n;
  (void)state;
  /* 1:100, knee 37: 1 ok, 100 no, (1+100)/2 = 50 no, 25 ok, 37 ok, 43 no, 40 no, 38 no: 37 */
  n = walk(1, 100, 1, true, true, true, 37, got, 64);
  EXPECT(got, n, 1, 100, 50, 25, 37, 43, 40, 38);
  /* STEP 5 is the precision: 50 no, 25 ok, 37 no, 31 no, 28 ok; 28 and 31 are 3 apart */
  n = walk(1, 100, 5, true, true, true, 28, got, 64);
  EXPECT(got, n, 1, 100, 50, 25, 37, 31, 28);
}

static void binary_ends(void **state)
{
  double got[64];
  size_t n;
  (void)state;
  /* START fails: nothing else is measured */
  n = walk(4, 64, 1, true, true, true, 2, got, 64);
  EXPECT(got, n, 4);
  /* END passes: the answer is END, two levels measured */
  n = walk(4, 64, 1, true, true, true, 1000, got, 64);
  EXPECT(got, n, 4, 64);
  /* adjacent bounds: nothing between them */
  n = walk(3, 4, 1, true, true, true, 3, got, 64);
  EXPECT(got, n, 3, 4);
}

static void binary_rate(void **state)
{
  double got[64];
  size_t n;
  (void)state;
  /* request rates are halved exactly: 10:50:5, knee 33: 30 ok, 40 no, 35 no; 30 and 35
   * are 5 apart, not more: done */
  n = walk(10, 50, 5, true, false, true, 33, got, 64);
  EXPECT(got, n, 10, 50, 30, 40, 35);
  n = walk(10, 50, 1, true, false, true, 33, got, 64);
  EXPECT(got, n, 10, 50, 30, 40, 35, 32.5, 33.75, 33.125);
}

static void linear(void **state)
{
  double got[64];
  size_t n;
  (void)state;
  /* without a threshold every level is measured, passing or not */
  n = walk(1, 9, 2, false, true, false, 4, got, 64);
  EXPECT(got, n, 1, 3, 5, 7, 9);
  /* with one, the sweep ends at the first level that fails (measured, not passed) */
  n = walk(1, 9, 2, false, true, true, 4, got, 64);
  EXPECT(got, n, 1, 3, 5);
  /* END 0: no end, up to the first failure */
  n = walk(4, 0, 8, false, false, true, 30, got, 64);
  EXPECT(got, n, 4, 12, 20, 28, 36);
  /* rates: START + i * STEP, END included despite binary fractions */
  n = walk(0.1, 0.3, 0.1, false, false, false, 1, got, 64);
  assert_int_equal(n, 3);
}

static void settled_as_perf_analyzer(void **state)
{
  (void)state;
  /* max / min, not the distance to the mean: 90, 100, 110 is within 10% of its mean but
   * 110 / 90 = 1.22, so not settled at 10% */
  assert_false(gs_bench_settled((double[]){90, 100, 110}, 10));
  assert_true(gs_bench_settled((double[]){90, 100, 110}, 23));
  assert_true(gs_bench_settled((double[]){100, 105, 110}, 10));
  assert_false(gs_bench_settled((double[]){100, 105, 110.5}, 10));
  /* a window without a figure (no success) never settles */
  assert_false(gs_bench_settled((double[]){0, 0, 0}, 10));
  assert_false(gs_bench_settled((double[]){0, 100, 100}, 1000));
}

static void best_is_highest_that_met(void **state)
{
  struct gs_bench_step s[4] = {{.level = 1, .stable = true}, {.level = 100, .stable = true,
                                .over = true}, {.level = 50, .stable = false},
                               {.level = 25, .stable = true}};
  (void)state;
  assert_ptr_equal(gs_bench_best(s, 4), &s[3]);
  assert_null(gs_bench_best(&s[1], 2));
  assert_false(gs_bench_step_met(&s[1]));
  assert_false(gs_bench_step_met(&s[2]));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(binary_concurrency),
      cmocka_unit_test(binary_ends),
      cmocka_unit_test(binary_rate),
      cmocka_unit_test(linear),
      cmocka_unit_test(settled_as_perf_analyzer),
      cmocka_unit_test(best_is_highest_that_met),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
