/* SPDX-License-Identifier: Apache-2.0 */
/* test-plan-incremental.c: --incremental against a current state made from
 * a plan: re-planning the same workloads changes nothing (no instance made
 * or destroyed, no replica moved); one more replica creates at most one
 * instance and destroys or moves only when that is what places it; dropping
 * a workload from a plan that placed everything changes nothing. Random MIG
 * workloads on a mixed A100/H100 fleet, many seeds. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"

#define NW 12

static uint32_t next(uint32_t *seed)
{
  *seed = *seed * 1103515245u + 12345u;
  return *seed >> 16;
}

static void random_workloads(uint32_t *seed, struct gs_plan_workload *w, unsigned n)
{
  static const unsigned mib[] = {4000, 9000, 9000, 18000, 18000, 36000};
  static const unsigned milli[] = {140, 140, 280, 420, 570, 1000};
  for (unsigned i = 0; i < n; i++) {
    unsigned k = next(seed) % 6;
    memset(&w[i], 0, sizeof(w[i]));
    snprintf(w[i].name, sizeof(w[i].name), "w%u", i);
    w[i].replicas = 1 + next(seed) % 3;
    w[i].memory_mib = mib[k];
    w[i].compute_milli = milli[k];
  }
}

static void fleet(struct gs_plan_fleet *f)
{
  struct gs_err err = {0};
  assert_int_equal(gs_plan_fleet_from_spec(&err, "a100-40gb:8,h100-80gb:6", f), 0);
}

/* The fleet file a plan would be written back as: its MIG layouts, each
 * instance naming the workload it runs. */
static void as_current(const struct gs_plan_workloads *w, struct gs_plan_fleet *f)
{
  f->prev = calloc(w->n, sizeof(*f->prev));
  assert_non_null(f->prev);
  f->nprev = w->n;
  for (unsigned i = 0; i < w->n; i++)
    snprintf(f->prev[i], sizeof(f->prev[i]), "%s", w->w[i].name);
  for (unsigned g = 0; g < f->ngpu; g++)
    for (unsigned u = 0; u < f->gpu[g].nunit; u++)
      f->gpu[g].unit[u].prev = f->gpu[g].unit[u].workload;
  f->has_current = true;
}

static void run(struct gs_plan_workloads *w, struct gs_plan_fleet *f, bool incremental,
                struct gs_plan_result *r)
{
  struct gs_plan_options o = {.policy = GS_PLAN_OURS, .incremental = incremental};
  struct gs_err err = {0};
  if (gs_plan_run(&err, w, f, &o, r) != 0)
    fail_msg("plan: %s", err.msg);
}

static void replan_is_stable(void **state)
{
  uint32_t seed = 7;
  (void)state;
  for (unsigned round = 0; round < 200; round++) {
    struct gs_plan_workload ws[NW];
    struct gs_plan_workloads w = {.w = ws, .n = NW, .cap = NW};
    struct gs_plan_fleet f;
    struct gs_plan_result r1, r2, r3;
    unsigned placed, moved_before;
    random_workloads(&seed, ws, NW);
    fleet(&f);
    run(&w, &f, false, &r1);
    placed = 0;
    for (unsigned g = 0; g < f.ngpu; g++)
      placed += f.gpu[g].nunit;
    as_current(&w, &f);

    /* The same workloads: nothing changes. */
    run(&w, &f, true, &r2);
    if (r2.created || r2.destroyed || r2.moved || r2.nunplaced != r1.nunplaced)
      fail_msg("round %u: re-plan changed %u/%u/%u, unplaced %u then %u", round, r2.created,
               r2.destroyed, r2.moved, r1.nunplaced, r2.nunplaced);
    gs_plan_result_free(&r2);

    /* One replica more of workload 0: only creations, nobody moves. */
    ws[0].replicas++;
    run(&w, &f, true, &r3);
    moved_before = r3.moved;
    /* Changes are allowed only when they bought the new replica its place. */
    if ((r3.destroyed || moved_before) && r3.nunplaced != r1.nunplaced)
      fail_msg("round %u: one more replica destroyed %u, moved %u (unplaced before %u, now %u)", round,
               r3.destroyed, moved_before, r1.nunplaced, r3.nunplaced);
    assert_true(r3.created <= 1 + r3.destroyed);
    gs_plan_result_free(&r3);
    assert_true(placed > 0);
    gs_plan_result_free(&r1);
    gs_plan_fleet_free(&f);
  }
}

static void dropping_a_workload_moves_nobody(void **state)
{
  uint32_t seed = 99;
  (void)state;
  for (unsigned round = 0; round < 200; round++) {
    struct gs_plan_workload ws[NW];
    struct gs_plan_workloads w = {.w = ws, .n = NW, .cap = NW};
    struct gs_plan_fleet f;
    struct gs_plan_result r1, r2;
    random_workloads(&seed, ws, NW);
    fleet(&f);
    run(&w, &f, false, &r1);
    as_current(&w, &f);
    w.n = NW - 1; /* the last workload is gone */
    run(&w, &f, true, &r2);
    if (r1.nunplaced == 0 && (r2.destroyed || r2.moved || r2.created))
      fail_msg("round %u: dropping a workload changed %u/%u/%u (unplaced before %u)", round, r2.created,
               r2.destroyed, r2.moved, r1.nunplaced);
    gs_plan_result_free(&r1);
    gs_plan_result_free(&r2);
    gs_plan_fleet_free(&f);
  }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(replan_is_stable),
      cmocka_unit_test(dropping_a_workload_moves_nobody),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
