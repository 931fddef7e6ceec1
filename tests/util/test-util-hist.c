/* SPDX-License-Identifier: Apache-2.0 */
/* test-util-hist.c: gs_hist against an exact sort. Random and adversarial
 * sets (one value, bucket edges, extremes 1 µs and 1 h together, geometric
 * runs) must give every percentile within the stated precision (1/2048 of the
 * exact value), merging must equal recording into one, and values past the
 * range must be counted as clamped rather than lost. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "util/util.h"

#define NS_US UINT64_C(1000)
#define NS_HOUR (UINT64_C(3600) * 1000000000u)

static const double pcts[] = {0, 0.1, 1, 10, 25, 50, 75, 90, 95, 99, 99.9, 99.99, 100};

static uint64_t rng_state = 88172645463325252ull;
static uint64_t rnd(void)
{
  rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
  return rng_state;
}

static int cmp_u64(const void *a, const void *b)
{
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Nearest rank, as gs_hist_percentile documents it. */
static uint64_t exact(const uint64_t *sorted, size_t n, double p)
{
  double r = p / 100.0 * (double)n;
  size_t rank = (size_t)r;
  if ((double)rank < r)
    rank++;
  if (rank < 1)
    rank = 1;
  return sorted[rank - 1];
}

static void check_set(uint64_t *v, size_t n)
{
  struct gs_hist *h = malloc(sizeof(*h));
  assert_non_null(h);
  gs_hist_reset(h);
  for (size_t i = 0; i < n; i++)
    gs_hist_record(h, v[i]);
  qsort(v, n, sizeof(*v), cmp_u64);
  assert_int_equal(h->count, n);
  assert_int_equal(h->min, v[0]);
  assert_int_equal(h->max, v[n - 1]);
  for (size_t k = 0; k < GS_NITEMS(pcts); k++) {
    uint64_t want = exact(v, n, pcts[k]), got = gs_hist_percentile(h, pcts[k]);
    uint64_t diff = got > want ? got - want : want - got;
    if (diff > want / 2048) {
      print_error("p%g: histogram %llu, exact %llu (n=%zu)\n", pcts[k], (unsigned long long)got,
                  (unsigned long long)want, n);
      fail();
    }
  }
  free(h);
}

static void random_log_spread(void **state)
{
  size_t n = 200000;
  uint64_t *v = malloc(n * sizeof(*v));
  (void)state;
  for (int round = 0; round < 5; round++) {
    for (size_t i = 0; i < n; i++) {
      /* log-uniform from 1 µs to 1 h: every bucket size is exercised */
      unsigned bits = 10 + (unsigned)(rnd() % 32);
      v[i] = NS_US + rnd() % (UINT64_C(1) << bits);
      if (v[i] > NS_HOUR)
        v[i] = NS_HOUR;
    }
    check_set(v, round ? n : 7);
  }
  free(v);
}

static void adversarial_sets(void **state)
{
  size_t n = 4096;
  uint64_t *v = malloc(n * sizeof(*v));
  (void)state;
  for (size_t i = 0; i < n; i++) /* one value */
    v[i] = 123456789;
  check_set(v, n);
  for (size_t i = 0; i < n; i++) /* the extremes only: 1 µs and 1 h */
    v[i] = i % 3 ? NS_US : NS_HOUR;
  check_set(v, n);
  for (size_t i = 0; i < n; i++) { /* both edges of buckets, every size */
    uint64_t low, high;
    gs_hist_bucket_range(gs_hist_index(rnd() % NS_HOUR), &low, &high);
    v[i] = i % 2 ? low : high;
  }
  check_set(v, n);
  for (size_t i = 0; i < 64; i++) /* geometric: 1, 2, 4 ... and one beside each */
    v[i] = (UINT64_C(1) << (i % 42)) + (i >= 42);
  check_set(v, 64);
  for (size_t i = 0; i < n; i++) /* a long tail behind a tight mode */
    v[i] = i < n - 10 ? 5000000 + i : 1000000000 + i;
  check_set(v, n);
  check_set((uint64_t[]){1}, 1);
  free(v);
}

static void merge_equals_single(void **state)
{
  struct gs_hist *a = malloc(sizeof(*a)), *b = malloc(sizeof(*b)), *all = malloc(sizeof(*all));
  (void)state;
  gs_hist_reset(a), gs_hist_reset(b), gs_hist_reset(all);
  for (int i = 0; i < 100000; i++) {
    uint64_t x = rnd() % (UINT64_C(1) << 36);
    gs_hist_record(i % 2 ? a : b, x);
    gs_hist_record(all, x);
  }
  gs_hist_add(a, b);
  assert_memory_equal(a->buckets, all->buckets, sizeof(a->buckets));
  assert_int_equal(a->count, all->count);
  assert_int_equal(a->min, all->min);
  assert_int_equal(a->max, all->max);
  for (size_t k = 0; k < GS_NITEMS(pcts); k++)
    assert_int_equal(gs_hist_percentile(a, pcts[k]), gs_hist_percentile(all, pcts[k]));
  free(a), free(b), free(all);
}

static void empty_and_clamped(void **state)
{
  struct gs_hist *h = malloc(sizeof(*h));
  (void)state;
  gs_hist_reset(h);
  assert_int_equal(gs_hist_percentile(h, 99), 0);
  assert_true(gs_hist_mean(h) == 0.0);
  gs_hist_record(h, UINT64_MAX);
  gs_hist_record_n(h, 10, 3);
  assert_int_equal(h->clamped, 1);
  assert_int_equal(h->count, 4);
  assert_int_equal(gs_hist_percentile(h, 100), UINT64_MAX);
  assert_int_equal(gs_hist_percentile(h, 50), 10);
  assert_true(sizeof(*h) < 300 * 1024); /* bounded, whatever is recorded */
  free(h);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(random_log_spread),
      cmocka_unit_test(adversarial_sets),
      cmocka_unit_test(merge_equals_single),
      cmocka_unit_test(empty_and_clamped),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
