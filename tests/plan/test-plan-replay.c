/* SPDX-License-Identifier: Apache-2.0 */
/* test-plan-replay.c: the trace replay is FGD's harness. FGD's node score
 * (100 sigmoid of the fragmentation drop, truncated) and BestFit's raw
 * score on hand-computed cases; FGD's fragmentation measure on a node,
 * category by category; and, end to end on a one-node trace, that CPU,
 * memory and GPU type filter, that CPU-only tasks take CPU and count as
 * arrivals, and that the arrival order changes with the seed. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "plan/replay.h"

static void fgd_score_is_a_truncated_sigmoid(void **state)
{
  (void)state;
  assert_int_equal(gs__rp_fgd_score(0, 0), 50);       /* 100 / (1 + e^0) */
  assert_int_equal(gs__rp_fgd_score(1000, 0), 73);    /* 73.1: one GPU less fragmented */
  assert_int_equal(gs__rp_fgd_score(0, 1000), 26);    /* 26.9 */
  assert_int_equal(gs__rp_fgd_score(0, 39), 49);      /* 49.03: a small growth already costs a point */
  assert_int_equal(gs__rp_fgd_score(39, 0), 50);      /* 50.97 */
  assert_int_equal(gs__rp_fgd_score(0, 100000), 0);
}

static void bestfit_raw_weighs_cpu_and_gpu_left(void **state)
{
  struct rp_node n = {.cpu = 64000, .left_total = 2000};
  struct rp_pod p = {.cpu = 4000, .ngpu = 1, .milli = 500};
  (void)state;
  /* 1 - (0.5 * 60000 / 128000 + 0.5 * 1500 / 8000) = 0.671875 */
  assert_int_equal(gs__rp_bestfit_raw(&n, &p), 67);
  n.cpu = 4000, n.left_total = 500;
  assert_int_equal(gs__rp_bestfit_raw(&n, &p), 100);
}

/* Models: T4 = 0, P100 = 1. Typical kinds: a half GPU with 2 CPUs (p 0.5),
 * a whole P100 with 8 CPUs (p 0.3), a CPU task (p 0.2). */
static void fgd_measure_by_category(void **state)
{
  static struct rp_kind kinds[3] = {
      {.cpu = 2000, .ngpu = 1, .milli = 500, .models = RP_ANY_MODEL, .p = 0.5},
      {.cpu = 8000, .ngpu = 1, .milli = 1000, .models = 1u << 1, .p = 0.3},
      {.cpu = 1000, .models = RP_ANY_MODEL, .p = 0.2},
  };
  struct replay r = {.kind = kinds, .nkind = 3, .typical = {0, 1, 2}, .ntypical = 3};
  unsigned left[2] = {1000, 300};
  (void)state;
  /* T4, 4 CPUs: the half GPU fits (the 300 is lost to it: 150), the P100
   * kind cannot use a T4 (all 1300: 390), the CPU task counts all (260). */
  assert_float_equal(gs__rp_frag(&r, 0, 4000, left, NULL, 2), 800, 1e-9);
  /* 1 CPU: the half GPU lacks CPU, so all of it (650). */
  assert_float_equal(gs__rp_frag(&r, 0, 1000, left, NULL, 2), 1300, 1e-9);
  /* P100, 10 CPUs: the whole-GPU kind fits GPU 0 and loses the 300 (90). */
  assert_float_equal(gs__rp_frag(&r, 1, 10000, left, NULL, 2), 500, 1e-9);
  /* No GPU wholly free: the whole-GPU kind loses all of the 1200. */
  left[0] = 900;
  assert_float_equal(gs__rp_frag(&r, 1, 10000, left, NULL, 2), 0.5 * 300 + 0.3 * 1200 + 0.2 * 1200, 1e-9);
}

/* One T4 node with 2 GPUs, 10 CPUs, 1000 MiB. p1 fits; p2 asks too much
 * memory, p3 another GPU type, p4 too much CPU; p5 is a CPU task that
 * leaves too little CPU for p1. Their GPU demand is the capacity, so with
 * inflate 1 every run has these five arrivals (and, as in FGD's top-up, p5
 * again each time the draw picks it before a GPU task), and places exactly
 * one of p1 and p5, whichever comes first. */
static const char nodes[] = "sn,cpu_milli,memory_mib,gpu,model\nn1,10000,1000,2,T4\n";
static const char pods[] = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"
                           "p1,600,10,1,500,\n"
                           "p2,100,5000,1,500,\n"
                           "p3,100,10,1,500,V100M32\n"
                           "p4,20000,10,1,500,T4|P100\n"
                           "p5,9500,10,0,0,\n";

static void filters_and_order(void **state)
{
  static const enum gs_plan_policy pols[] = {GS_PLAN_OURS, GS_PLAN_FIRST_FIT, GS_PLAN_BEST_FIT, GS_PLAN_FGD,
                                             GS_PLAN_RANDOM};
  struct gs_plan_replay_stats *s = malloc(sizeof(*s));
  (void)state;
  assert_non_null(s);
  for (unsigned mode = 0; mode < 2; mode++)
    for (unsigned i = 0; i < sizeof(pols) / sizeof(pols[0]); i++) {
      struct gs_plan_replay_options o = {.mode = mode, .policy = pols[i], .inflate = 1.0, .seed = 1, .runs = 40};
      struct gs_err err = {0};
      assert_int_equal(gs_plan_replay(&err, nodes, pods, &o, s), 0);
      assert_int_equal(s->gpus, 2);
      assert_true(s->tasks_arrived >= 5 && s->tasks_arrived < 6);
      assert_float_equal(s->tasks_placed, 1, 1e-9);
      assert_float_equal(s->arrived_pct, 100, 1e-9);
      /* p1 first in some runs (25%), p5 first in others (0%). */
      if (!(s->alloc_pct > 5 && s->alloc_pct < 20))
        fail_msg("mode %u policy %s: mean allocation %.2f%%: the order does not change with the seed", mode,
                 gs_plan_policy_name(pols[i]), s->alloc_pct);
    }
  free(s);
}

static void bad_input_is_named(void **state)
{
  struct gs_plan_replay_options o = {.policy = GS_PLAN_FGD, .inflate = 1.3, .seed = 1, .runs = 1};
  struct gs_plan_replay_stats *s = malloc(sizeof(*s));
  struct gs_err err = {0};
  (void)state;
  assert_non_null(s);
  assert_int_equal(gs_plan_replay(&err, nodes, "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,1,0,0\n", &o, s),
                   GS_E_INVALID_ARGUMENT);
  assert_non_null(strstr(err.msg, "no task asks for a GPU"));
  assert_int_equal(gs_plan_replay(&err, "sn,cpu_milli,gpu,model\n", pods, &o, s), GS_E_INVALID_ARGUMENT);
  assert_non_null(strstr(err.msg, "no column 'memory_mib'"));
  o.inflate = 11;
  assert_int_equal(gs_plan_replay(&err, nodes, pods, &o, s), GS_E_INVALID_ARGUMENT);
  assert_non_null(strstr(err.msg, "inflate"));
  free(s);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(fgd_score_is_a_truncated_sigmoid),
      cmocka_unit_test(bestfit_raw_weighs_cpu_and_gpu_left),
      cmocka_unit_test(fgd_measure_by_category),
      cmocka_unit_test(filters_and_order),
      cmocka_unit_test(bad_input_is_named),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
