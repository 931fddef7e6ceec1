/* SPDX-License-Identifier: Apache-2.0 */
/* test-plan-replay-ours.c: ours' measure in the trace replay on
 * hand-computed nodes: a node short of a kind's memory (not only its CPU)
 * cannot host it; a kind's weight is its share over the fraction of the
 * free GPU it can still use, and grows as its nodes fill; on MIG a GPU
 * counts for a kind as many of its profile as still fit, where FGD's
 * measure counts all its free compute once the profile fits at all. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "plan/replay.h"

/* Models: T4 = 0, P100 = 1. Kinds: a half GPU with 2 CPUs and 100 MiB,
 * any model (weight 1), and a whole P100 with 8 CPUs and 4000 MiB (weight 2). */
static struct rp_kind kinds[2] = {
    {.cpu = 2000, .mem = 100, .ngpu = 1, .milli = 500, .models = RP_ANY_MODEL, .p = 0.5, .w = 1},
    {.cpu = 8000, .mem = 4000, .ngpu = 1, .milli = 1000, .models = 1u << 1, .p = 0.5, .w = 2},
};

static void measure_checks_memory_as_well_as_cpu(void **state)
{
  struct replay r = {.kind = kinds, .nkind = 2, .typical = {0, 1}, .ntypical = 2};
  unsigned left[2] = {1000, 300};
  double use[2];
  (void)state;
  /* P100, room for both: the half GPU uses GPU 0 (loses the 300), the
   * whole-GPU kind uses GPU 0 too (loses the 300): 1 x 300 + 2 x 300. */
  assert_float_equal(gs__rp_ours_measure(&r, 1, 10000, 5000, left, NULL, 2, use), 900, 1e-9);
  assert_float_equal(use[0], 1000, 1e-9);
  assert_float_equal(use[1], 1000, 1e-9);
  /* 3000 MiB: enough CPU for the whole-GPU kind, not enough memory, so
   * all 1300 is lost to it (FGD's measure, which sees CPU only, says 300). */
  assert_float_equal(gs__rp_ours_measure(&r, 1, 10000, 3000, left, NULL, 2, use), 300 + 2 * 1300, 1e-9);
  assert_float_equal(use[1], 0, 1e-9);
  /* T4: the whole-GPU kind may not run there at all. */
  assert_float_equal(gs__rp_ours_measure(&r, 0, 10000, 5000, left, NULL, 2, NULL), 300 + 2 * 1300, 1e-9);
}

/* Two nodes of 2 GPUs, a T4 and a P100. */
static void weights_follow_scarcity(void **state)
{
  struct rp_node node[2] = {
      {.cpu = 64000, .mem = 64000, .ngpu = 2, .first = 0, .model = 0, .left_total = 2000},
      {.cpu = 64000, .mem = 64000, .ngpu = 2, .first = 2, .model = 1, .left_total = 2000},
  };
  unsigned left[4] = {1000, 1000, 1000, 1000};
  double ofrag[2], use[4] = {0}, usable[2] = {0};
  struct replay r = {.kind = kinds, .nkind = 2, .typical = {0, 1}, .ntypical = 2, .node = node, .nnode = 2,
                     .ngpu = 4, .left = left, .ofrag = ofrag, .use = use, .usable = usable};
  (void)state;
  for (unsigned ni = 0; ni < 2; ni++)
    gs__rp_ours_refresh(&r, ni);
  gs__rp_ours_reweigh(&r, true);
  /* Empty: the half GPU can use all 4 GPUs (0.5 x 4000 / 4000), the
   * P100 kind the 2 of the P100 (0.5 x 4000 / 2000). */
  assert_float_equal(kinds[0].w, 0.5, 1e-9);
  assert_float_equal(kinds[1].w, 1.0, 1e-9);
  assert_float_equal(usable[0], 4000, 1e-9);
  assert_float_equal(usable[1], 2000, 1e-9);
  /* Half of one P100 taken: 3500 free; the half GPU can use all of it,
   * the P100 kind only the one whole GPU left: 0.5 x 3500 / 1000. */
  left[3] = 500, node[1].left_total = 1500;
  gs__rp_ours_refresh(&r, 1);
  gs__rp_ours_reweigh(&r, false);
  assert_float_equal(kinds[0].w, 0.5, 1e-9);
  assert_float_equal(kinds[1].w, 1.75, 1e-9);
  /* The nodes' measures were recomputed with the new weights: the P100
   * node loses its 500 to the whole-GPU kind (1.75 x 500), nothing to
   * the half GPU; the T4 loses all its 2000 to the P100 kind. */
  assert_float_equal(ofrag[1], 1.75 * 500, 1e-9);
  assert_float_equal(ofrag[0], 1.75 * 2000, 1e-9);
  kinds[0].w = 1, kinds[1].w = 2; /* as the other tests expect */
}

/* One T4 node (an A100-40GB on MIG) with one GPU. Kinds: 1g (0.1 of a
 * GPU), 2g (0.25), 3g (0.4). */
static void mig_counts_profiles_left(void **state)
{
  struct rp_kind mk[3] = {
      {.cpu = 1000, .ngpu = 1, .milli = 100, .models = RP_ANY_MODEL, .p = 1.0 / 3, .w = 1},
      {.cpu = 1000, .ngpu = 1, .milli = 250, .models = RP_ANY_MODEL, .p = 1.0 / 3, .w = 1},
      {.cpu = 1000, .ngpu = 1, .milli = 400, .models = RP_ANY_MODEL, .p = 1.0 / 3, .w = 1},
  };
  struct rp_node node = {.cpu = 64000, .mem = 64000, .ngpu = 1, .model = 0};
  unsigned left[1] = {1000};
  struct replay r = {.mode = GS_PLAN_REPLAY_MIG, .kind = mk, .nkind = 3, .typical = {0, 1, 2}, .ntypical = 3,
                     .node = &node, .nnode = 1, .ngpu = 1, .left = left, .model_name = {"T4"}, .nmodel = 1};
  struct rp_pod one_g = {.cpu = 1000, .ngpu = 1, .milli = 100, .models = RP_ANY_MODEL, .kind = 0};
  struct rp_move at6 = {.gpu = 0, .start = 6}, at0 = {.gpu = 0, .start = 0};
  struct gs_err err = {0};
  uint32_t s6, s0;
  (void)state;
  assert_int_equal(gs__rp_mig_init(&err, &r), 0);
  gs__rp_mig_reset(&r);
  /* Empty: seven 1g, three 2g (of 2/7 each), two 3g (of 3/7 each). */
  assert_int_equal(gs__rp_mig_usable(&r, gs__rp_mig_states(&r, 0)[0], 0), 7 * 142);
  assert_int_equal(gs__rp_mig_usable(&r, gs__rp_mig_states(&r, 0)[0], 1), 3 * 285);
  assert_int_equal(gs__rp_mig_usable(&r, gs__rp_mig_states(&r, 0)[0], 2), 2 * 428);
  /* A 1g at start 6 leaves every 2g and one 3g; at start 0 it blocks the
   * 2g and the 3g that start there. FGD's measure, which asks only whether
   * a profile still fits, cannot tell the two apart. */
  gs__rp_mig_apply(&r, 0, &one_g, &at6);
  s6 = gs__rp_mig_states(&r, 0)[0];
  assert_int_equal(gs__rp_mig_usable(&r, s6, 1), 3 * 285);
  assert_int_equal(gs__rp_mig_usable(&r, s6, 2), 428);
  gs__rp_mig_reset(&r);
  gs__rp_mig_apply(&r, 0, &one_g, &at0);
  s0 = gs__rp_mig_states(&r, 0)[0];
  assert_int_equal(gs__rp_mig_usable(&r, s0, 1), 2 * 285);
  assert_int_equal(gs__rp_mig_usable(&r, s0, 2), 428);
  assert_true(gs__rp_mig_fits(&r, s0, 1) && gs__rp_mig_fits(&r, s6, 1));
  assert_float_equal(gs__rp_frag(&r, 0, 64000, left, &s0, 1), gs__rp_frag(&r, 0, 64000, left, &s6, 1), 1e-9);
  assert_true(gs__rp_ours_measure(&r, 0, 64000, 64000, left, &s0, 1, NULL) >
              gs__rp_ours_measure(&r, 0, 64000, 64000, left, &s6, 1, NULL));
  gs__rp_mig_free(&r);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(measure_checks_memory_as_well_as_cpu),
      cmocka_unit_test(weights_follow_scarcity),
      cmocka_unit_test(mig_counts_profiles_left),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
