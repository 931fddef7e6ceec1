/* SPDX-License-Identifier: Apache-2.0 */
/* test-scale-policy.c: the autoscaler's decision rule against scripted load
 * on a simulated pool (no process, no clock: deterministic). Each slice
 * serves 100 requests/s with 10 ms of service; a request's latency is
 * 10 ms / (1 - utilisation), so the p90=50ms budget holds up to 80%
 * utilisation. Window 10 s, cool-down 10 s, ticks of 250 ms, 1..7 slices.
 * The bounds below are the ones docs/autoscale.md states. Also the option
 * parsers. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "serve/serve.h"

static const uint64_t le_us[] = {500,    1000,   2500,    5000,    10000,   25000,   50000,
                                 100000, 250000, 500000, 1000000, 2500000, 5000000, 10000000};
#define NB (sizeof(le_us) / sizeof(le_us[0]) + 1)
#define TICK_US 250000ull

struct run {
  unsigned slices, min, max, grows, shrinks;
};

static size_t bucket(uint64_t us)
{
  size_t i = 0;
  while (i < NB - 1 && us > le_us[i])
    i++;
  return i;
}

/* Runs rate(t) for seconds from start slices; returns the counts. */
static struct run simulate(double (*rate)(double t), double seconds, unsigned start)
{
  struct gs_scale_config cfg = {.percentile = 90, .budget_us = 50000, .min_slices = 1,
                                .max_slices = 7, .window_us = 10000000,
                                .cooldown_us = 10000000, .tick_us = TICK_US};
  struct gs_scale_policy p;
  struct run r = {.slices = start, .min = start, .max = start};
  uint64_t cum[NB] = {0};
  gs_scale_policy_init(&p, &cfg, 0);
  for (uint64_t now = 0; now < (uint64_t)(seconds * 1e6); now += TICK_US) {
    struct gs_scale_decision d;
    double u = rate((double)now / 1e6) / (100.0 * r.slices);
    uint64_t lat = u < 0.99 ? (uint64_t)(10000 / (1 - u)) : 2000000;
    cum[bucket(lat)] += (uint64_t)(rate((double)now / 1e6) * 0.25 + 0.5);
    gs_scale_observe(&p, now, le_us, cum, NB);
    gs_scale_decide(&p, now, r.slices, 0, &d);
    if (d.action == GS_SCALE_HOLD)
      continue;
    gs_scale_policy_event(&p, now);
    if (d.action == GS_SCALE_GROW)
      r.slices++, r.grows++;
    else
      r.slices--, r.shrinks++;
    if (r.slices < r.min)
      r.min = r.slices;
    if (r.slices > r.max)
      r.max = r.slices;
  }
  return r;
}

static double rising(double t) { return 20 + t * 480 / 300; }
static double falling(double t) { return t < 300 ? 500 - t * 480 / 300 : 20; }
static double oscillating(double t) { return ((int)(t / 60) % 2) ? 400 : 100; }
static double spike(double t) { return t >= 100 && t < 105 ? 600 : 50; }
static double idle(double t) { return t < 0 ? 1 : 0; }

/* 20 -> 500 req/s over 300 s: needs 7 slices (500 / 80) at the end; grows
 * one at a time, at most one step back. */
static void show(const char *name, struct run r)
{
  print_message("%s: end %u, min %u, max %u, %u grows, %u shrinks\n", name, r.slices, r.min,
                r.max, r.grows, r.shrinks);
}

static void test_rising(void **state)
{
  struct run r = simulate(rising, 330, 1);
  show("rising", r);
  (void)state;
  assert_true(r.slices >= 6 && r.slices <= 7);
  assert_true(r.shrinks <= 1);
  assert_true(r.grows >= 5 && r.grows <= 7);
}

/* 500 -> 20 req/s: from 7 down to at most 2, at most one step back. */
static void test_falling(void **state)
{
  struct run r = simulate(falling, 400, 7);
  show("falling", r);
  (void)state;
  assert_true(r.slices >= 1 && r.slices <= 2);
  assert_true(r.grows <= 1);
  assert_true(r.shrinks >= 5 && r.shrinks <= 7);
}

/* 100 and 400 req/s alternating each minute for 10 minutes: the count stays
 * within 2..6 and there are at most 4 events per minute-long phase after
 * the first (cool-down), at most 30 in all. */
static void test_oscillating(void **state)
{
  struct run r = simulate(oscillating, 600, 2);
  show("oscillating", r);
  (void)state;
  assert_true(r.min >= 1 && r.max <= 6);
  assert_true(r.grows + r.shrinks <= 30);
  assert_true(r.grows >= 2 && r.shrinks >= 2); /* it does follow the load */
}

/* 5 s at 600 req/s over 50: at most 3 slices more, back to at most 2. */
static void test_spike(void **state)
{
  struct run r = simulate(spike, 400, 1);
  show("spike", r);
  (void)state;
  assert_true(r.max <= 4);
  assert_true(r.slices <= 2);
  assert_true(r.grows <= 3);
}

/* No request: the minimum holds, nothing flaps. */
static void test_idle(void **state)
{
  struct run r = simulate(idle, 120, 1);
  show("idle", r);
  (void)state;
  assert_int_equal(r.slices, 1);
  assert_int_equal(r.grows + r.shrinks, 0);
}

static void test_parsers(void **state)
{
  struct gs_err err = {0};
  double pct;
  uint64_t us;
  unsigned a, b;
  (void)state;
  assert_int_equal(gs_scale_parse_budget(&err, "p90=50ms", &pct, &us), 0);
  assert_true(pct == 90 && us == 50000);
  assert_int_equal(gs_scale_parse_budget(&err, "p99.9=0.2s", &pct, &us), 0);
  assert_true(us == 200000);
  assert_int_not_equal(gs_scale_parse_budget(&err, "90=50ms", &pct, &us), 0);
  assert_non_null(strstr(err.msg, "p90=50ms"));
  assert_int_not_equal(gs_scale_parse_budget(&err, "p100=50ms", &pct, &us), 0);
  assert_int_not_equal(gs_scale_parse_budget(&err, "p90=50", &pct, &us), 0);
  assert_int_not_equal(gs_scale_parse_budget(&err, "p90=-1ms", &pct, &us), 0);
  assert_int_equal(gs_scale_parse_range(&err, "1..7", &a, &b), 0);
  assert_true(a == 1 && b == 7);
  assert_int_not_equal(gs_scale_parse_range(&err, "7..1", &a, &b), 0);
  assert_int_not_equal(gs_scale_parse_range(&err, "1..", &a, &b), 0);
  assert_int_not_equal(gs_scale_parse_range(&err, "0..0", &a, &b), 0);
  assert_int_equal(gs_scale_parse_duration(&err, "--scale-window", "10s", &us), 0);
  assert_true(us == 10000000);
  assert_int_not_equal(gs_scale_parse_duration(&err, "--scale-window", "10", &us), 0);
  assert_non_null(strstr(err.msg, "--scale-window"));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rising),      cmocka_unit_test(test_falling),
      cmocka_unit_test(test_oscillating), cmocka_unit_test(test_spike),
      cmocka_unit_test(test_idle),        cmocka_unit_test(test_parsers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
