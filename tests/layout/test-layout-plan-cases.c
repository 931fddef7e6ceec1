/* SPDX-License-Identifier: Apache-2.0 */
/* test-layout-plan-cases.c: the planner case by case: creation order (the
 * UG's Example 2, nvidia-smi's GI ids), busy instances with and without
 * force, MIG mode changes and resets, targets that do not fit (a table, one
 * row per case), compute-instance diffs inside kept GIs, malformed targets
 * (exact codes and messages), and random states with random CIs, each plan
 * carried out by the simulator. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "plan-sim.h"

/* CI profile ids (NVML's CI enum) */
enum { C1 = 0, C2 = 1, C3 = 2, C4 = 3, C7 = 4 };

/* ---- helpers ---- */

static void assert_contains(const char *haystack, const char *needle)
{
  if (strstr(haystack, needle) == NULL)
    fail_msg("message \"%s\" lacks \"%s\"", haystack, needle);
}

static struct gs_layout_gi *want_gi(struct gs_layout_target *t, const struct gs_geom_gi_profile *p, int start)
{
  struct gs_layout_gi *g;
  assert_true(t->ngi < SIM_MAX);
  t->mig_enabled = true;
  g = &t->gi[t->ngi++];
  memset(g, 0, sizeof(*g));
  g->profile = p;
  g->start = start;
  return g;
}

static void want_ci(struct gs_layout_gi *g, unsigned profile_id, int start)
{
  g->ci[g->nci++] = (struct gs_layout_ci){profile_id, start};
}

static void mig_on(struct gs_layout_current *cur)
{
  memset(cur, 0, sizeof(*cur));
  cur->mig_current = cur->mig_pending = true;
}

/* Plans, asserts success, runs the plan in the simulator and returns its end. */
static void plan_and_run(const struct gs_geom_model *m, const struct gs_layout_current *cur,
                         const struct gs_layout_target *want, bool force, struct gs_layout_plan *plan,
                         struct sim *s)
{
  struct gs_err err = {0};
  char why[1024] = "";
  int rc = gs_layout_plan_gpu(&err, m, cur, want, force, plan);
  if (rc != 0)
    fail_msg("plan failed: %s (%s)", err.msg, gs_code_name(rc));
  sim_from_current(s, m, cur);
  if (sim_run(s, plan, why, sizeof(why)) >= 0)
    fail_msg("plan step failed: %s", why);
  assert_int_equal(s->mig, want->mig_enabled);
}

static void plan_fails(const struct gs_geom_model *m, const struct gs_layout_current *cur,
                       const struct gs_layout_target *want, bool force, int code, const char *part)
{
  struct gs_layout_plan plan;
  struct gs_err err = {0};
  assert_int_equal(gs_layout_plan_gpu(&err, m, cur, want, force, &plan), code);
  assert_int_equal(err.code, code);
  assert_contains(err.msg, part);
  assert_int_equal(gs_layout_plan_gpu(NULL, m, cur, want, force, &plan), code);
}

static bool destroys_gi(const struct gs_layout_plan *p, unsigned id)
{
  for (unsigned i = 0; i < p->nops; i++)
    if (p->op[i].kind == GS_LAYOUT_DESTROY_GI && p->op[i].gi_id == id)
      return true;
  return false;
}

static const struct sim_gi *gi_at(const struct sim *s, unsigned start)
{
  for (unsigned i = 0; i < s->ngi; i++)
    if (s->gi[i].start == start)
      return &s->gi[i];
  fail_msg("no GI at %u", start);
  return NULL;
}

static const struct sim_ci *ci_at(const struct sim_gi *g, unsigned start)
{
  for (unsigned i = 0; i < g->nci; i++)
    if (g->ci[i].start == start)
      return &g->ci[i];
  fail_msg("no CI at %u in GI %u", start, g->id);
  return NULL;
}

/* ---- creation order ---- */

/* UG-GS Example 2 (reference §4.1): -cgi 19,19,14,9 fails because the driver
 * puts the 1g instances on slices 6 and 4; the plan orders the creates so each
 * succeeds, every GI still where the driver's automatic placement puts it. */
static void test_order_ug_example2(void **state)
{
  const struct gs_geom_model *m = sim_model("a100-40gb");
  const char *names[] = {"1g.5gb", "1g.5gb", "2g.10gb", "3g.20gb"};
  struct gs_layout_current cur;
  struct gs_layout_target want = {0};
  struct gs_layout_plan plan;
  struct gs_geom_layout naive = {0}, got, to = {0};
  struct sim s;
  int start = 0;
  (void)state;
  mig_on(&cur);
  for (unsigned i = 0; i < 4; i++) {
    want_gi(&want, sim_prof(m, names[i]), -1);
    to.slot[to.n++] = (struct gs_geom_slot){sim_prof(m, names[i]), -1};
  }
  /* The naive order: the fourth create finds no place. */
  for (unsigned i = 0; i < 4 && start >= 0; i++) {
    start = sim_auto_start(m, &naive, want.gi[i].profile);
    naive.slot[naive.n++] = (struct gs_geom_slot){want.gi[i].profile, start};
  }
  assert_int_equal(start, -1);
  plan_and_run(m, &cur, &want, false, &plan, &s);
  assert_int_equal(gs_layout_plan_count(&plan, GS_LAYOUT_CREATE_GI), 4);
  assert_int_equal(gs_layout_plan_count(&plan, GS_LAYOUT_CREATE_CI), 4);
  assert_int_equal(plan.nops, 8);
  assert_int_equal(s.not_auto, 0);
  sim_layout(&s, &got);
  assert_true(same_multiset(&got, &to));
  /* The 3g comes first and takes the right half, as `-cgi 9,19,19,14` would. */
  assert_ptr_equal(plan.op[0].profile, sim_prof(m, "3g.20gb"));
  assert_int_equal(plan.op[0].start, 4);
}

/* From the empty GPU, 7 x 1g land on 6,4,5,0,1,2,3 with the ids the UG and
 * mig-parted's transcripts show on a swapped-id A100 (reference §8.1). */
static void test_order_all_1g_like_nvidia_smi(void **state)
{
  const struct gs_geom_model *m = sim_model("a100-40gb");
  const unsigned starts[] = {6, 4, 5, 0, 1, 2, 3}, ids[] = {9, 7, 8, 11, 12, 13, 14};
  struct gs_layout_current cur;
  struct gs_layout_target want = {0};
  struct gs_layout_plan plan;
  struct sim s;
  unsigned k = 0;
  (void)state;
  mig_on(&cur);
  for (unsigned i = 0; i < 7; i++)
    want_gi(&want, sim_prof(m, "1g.5gb"), -1);
  plan_and_run(m, &cur, &want, false, &plan, &s);
  for (unsigned i = 0; i < plan.nops; i++) {
    if (plan.op[i].kind != GS_LAYOUT_CREATE_GI)
      continue;
    assert_int_equal(plan.op[i].start, starts[k]);
    assert_int_equal(gs_geom_gi_id(m, plan.op[i].start, 1), ids[k]);
    /* its CI follows at once, in the GI this step makes */
    assert_int_equal(plan.op[i + 1].kind, GS_LAYOUT_CREATE_CI);
    assert_int_equal(plan.op[i + 1].gi_op, (int)i);
    k++;
  }
  assert_int_equal(k, 7);
}

/* ---- busy instances ---- */

/* A busy GI's CIs are not changed without force (which CI the processes use
 * is not known); adding CIs beside them is fine. */
static void test_busy_cis(void **state)
{
  const struct gs_geom_model *m = sim_model("a100-40gb");
  const struct gs_geom_gi_profile *g7 = sim_prof(m, "7g.40gb");
  struct gs_layout_current cur;
  struct gs_layout_target want = {0};
  struct gs_layout_gi *w;
  struct gs_layout_plan plan;
  struct sim s;
  char part[64];
  (void)state;
  mig_on(&cur);
  cur_add_ci(m, cur_add_gi(m, &cur, g7, 0), C4, 0);
  cur.gi[0].busy = true;
  w = want_gi(&want, g7, -1);
  want_ci(w, C4, -1);
  want_ci(w, C2, -1);
  plan_and_run(m, &cur, &want, false, &plan, &s);
  assert_int_equal(plan.nops, 1);
  assert_int_equal(plan.op[0].kind, GS_LAYOUT_CREATE_CI);
  assert_int_equal(plan.op[0].gi_op, -1);
  assert_int_equal(plan.op[0].gi_id, 0);
  assert_int_equal(plan.op[0].ci.start, 4);
  w->nci = 0;
  want_ci(w, C2, -1);
  want_ci(w, C2, -1);
  snprintf(part, sizeof(part), "GPU instance 0 (7g.40gb at 0) is in use");
  plan_fails(m, &cur, &want, false, GS_E_IN_USE, part);
  plan_fails(m, &cur, &want, false, GS_E_IN_USE, "changes its compute instances");
  plan_and_run(m, &cur, &want, true, &plan, &s);
  assert_int_equal(plan.kept_gis, 1);
  assert_int_equal(gs_layout_plan_count(&plan, GS_LAYOUT_DESTROY_CI), 1);
  assert_int_equal(gs_layout_plan_count(&plan, GS_LAYOUT_CREATE_CI), 2);
}

/* ---- MIG mode ---- */

static void test_mig_disable(void **state)
{
  const struct gs_geom_model *m = sim_model("a100-40gb");
  struct gs_layout_current cur;
  struct gs_layout_target want = {0};
  struct gs_layout_plan plan;
  struct sim s;
  (void)state;
  mig_on(&cur);
  cur_add_ci(m, cur_add_gi(m, &cur, sim_prof(m, "4g.20gb"), 0), C2, 0);
  cur_add_ci(m, &cur.gi[0], C2, 2);
  cur_add_ci(m, cur_add_gi(m, &cur, sim_prof(m, "2g.10gb"), 4), C2, 0);
  plan_and_run(m, &cur, &want, false, &plan, &s);
  assert_int_equal(plan.nops, 3 + 2 + 1);
  assert_int_equal(plan.op[plan.nops - 1].kind, GS_LAYOUT_SET_MIG);
  assert_false(plan.op[plan.nops - 1].mig_enable);
  assert_true(plan.needs_reset);
  assert_int_equal(plan.kept_gis, 0);
}

/* ---- compute instances ---- */

/* 3g with three 1c -> 3g with a 2c and a 1c: the 2c can only start at 0, so
 * the 1c at 2 stays and only the other two 1c go. */
static void test_ci_diff_in_kept_gi(void **state)
{
  const struct gs_geom_model *m = sim_model("a100-40gb");
  const struct gs_geom_gi_profile *g3 = sim_prof(m, "3g.20gb");
  struct gs_layout_current cur;
  struct gs_layout_target want = {0};
  struct gs_layout_gi *w;
  struct gs_layout_plan plan;
  struct sim s;
  struct gs_layout_current_gi *g;
  (void)state;
  mig_on(&cur);
  g = cur_add_gi(m, &cur, g3, 4);
  for (unsigned i = 0; i < 3; i++)
    cur_add_ci(m, g, C1, i);
  w = want_gi(&want, g3, -1);
  want_ci(w, C2, -1);
  want_ci(w, C1, -1);
  plan_and_run(m, &cur, &want, false, &plan, &s);
  assert_int_equal(plan.kept_gis, 1);
  assert_int_equal(plan.nops, 3);
  assert_int_equal(plan.op[0].kind, GS_LAYOUT_DESTROY_CI);
  assert_int_equal(plan.op[0].ci_id, 0);
  assert_int_equal(plan.op[1].ci_id, 1);
  assert_int_equal(plan.op[2].kind, GS_LAYOUT_CREATE_CI);
  assert_int_equal(plan.op[2].gi_op, -1);
  assert_int_equal(plan.op[2].gi_id, g->gi.id);
  assert_int_equal(plan.op[2].ci.profile_id, C2);
  assert_int_equal(plan.op[2].ci.start, 0);
  assert_int_equal(ci_at(gi_at(&s, 4), 2)->id, 2);
}

/* nci == 0 means exactly one CI of the GI's default (full) profile. */
static void test_ci_default(void **state)
{
  const struct gs_geom_model *m = sim_model("a100-40gb");
  const struct gs_geom_gi_profile *g3 = sim_prof(m, "3g.20gb"), *g2 = sim_prof(m, "2g.10gb");
  struct gs_layout_current cur;
  struct gs_layout_target want = {0};
  struct gs_layout_plan plan;
  struct sim s;
  struct gs_layout_current_gi *g;
  (void)state;
  mig_on(&cur);
  g = cur_add_gi(m, &cur, g3, 0);
  for (unsigned i = 0; i < 3; i++)
    cur_add_ci(m, g, C1, i);
  cur_add_gi(m, &cur, g2, 4);          /* a GI with no CI yet */
  want_gi(&want, g3, -1);
  want_gi(&want, g2, -1);
  plan_and_run(m, &cur, &want, false, &plan, &s);
  assert_int_equal(plan.kept_gis, 2);
  assert_int_equal(gs_layout_plan_count(&plan, GS_LAYOUT_DESTROY_CI), 3);
  assert_int_equal(gs_layout_plan_count(&plan, GS_LAYOUT_CREATE_CI), 2);
  assert_int_equal(gs_layout_plan_count(&plan, GS_LAYOUT_DESTROY_GI) + gs_layout_plan_count(&plan, GS_LAYOUT_CREATE_GI), 0);
  assert_int_equal(gi_at(&s, 0)->nci, 1);
  assert_int_equal(ci_at(gi_at(&s, 0), 0)->p.id, C3);
  assert_true(ci_at(gi_at(&s, 0), 0)->p.is_default);
  assert_int_equal(ci_at(gi_at(&s, 4), 0)->p.id, C2);
  /* run again from the end: nothing left to do */
  cur.gi[0].nci = 0;
  cur_add_ci(m, &cur.gi[0], C3, 0);
  cur_add_ci(m, &cur.gi[1], C2, 0);
  assert_int_equal(gs_layout_plan_gpu(NULL, m, &cur, &want, false, &plan), 0);
  assert_int_equal(plan.nops, 0);
}

/* CIs of a new GI: concrete starts, in the target's order, where a 1c listed
 * before a 2c must not take the 2c's only start (the driver's lowest-free
 * choice would). */
static void test_ci_order_in_new_gi(void **state)
{
  const struct gs_geom_model *m = sim_model("a100-40gb");
  struct gs_layout_current cur;
  struct gs_layout_target want = {0};
  struct gs_layout_gi *w;
  struct gs_layout_plan plan;
  struct sim s;
  (void)state;
  mig_on(&cur);
  w = want_gi(&want, sim_prof(m, "3g.20gb"), -1);
  want_ci(w, C1, -1);
  want_ci(w, C2, -1);
  w = want_gi(&want, sim_prof(m, "4g.20gb"), -1);
  want_ci(w, C1, 3);
  want_ci(w, C2, -1);
  want_ci(w, C1, -1);
  plan_and_run(m, &cur, &want, false, &plan, &s);
  assert_int_equal(plan.nops, 2 + 5);
  for (unsigned i = 0; i < plan.nops; i++)
    if (plan.op[i].kind == GS_LAYOUT_CREATE_CI)
      assert_true(plan.op[i].gi_op >= 0 && plan.op[plan.op[i].gi_op].kind == GS_LAYOUT_CREATE_GI);
  assert_int_equal(ci_at(gi_at(&s, 4), 2)->p.id, C1);
  assert_int_equal(ci_at(gi_at(&s, 4), 0)->p.id, C2);
  assert_int_equal(ci_at(gi_at(&s, 0), 3)->p.id, C1);
  assert_int_equal(ci_at(gi_at(&s, 0), 0)->p.id, C2);
  assert_int_equal(ci_at(gi_at(&s, 0), 2)->p.id, C1);
}

/* ---- targets that do not fit, and malformed input ---- */

static void test_invalid_input(void **state)
{
  const struct gs_geom_model *m = sim_model("a100-40gb"), *other = sim_model("a100-80gb");
  struct gs_layout_current cur;
  struct gs_layout_target want = {0};
  struct gs_layout_gi *w;
  (void)state;
  mig_on(&cur);
  want_gi(&want, sim_prof(other, "7g.80gb"), -1);
  plan_fails(m, &cur, &want, false, GS_E_INVALID_ARGUMENT, "profile 7g.80gb is not a profile of a100-40gb");
  want.gi[0].profile = NULL;
  plan_fails(m, &cur, &want, false, GS_E_INVALID_ARGUMENT, "target GPU instance 0");
  want.gi[0].profile = sim_prof(m, "3g.20gb");
  want.gi[0].start = 2;
  plan_fails(m, &cur, &want, false, GS_E_INVALID_ARGUMENT, "3g.20gb cannot start at memory slice 2");
  memset(&want, 0, sizeof(want));
  w = want_gi(&want, sim_prof(m, "4g.20gb"), -1);
  want_ci(w, C3, -1);    /* a 4g has no 3c */
  plan_fails(m, &cur, &want, false, GS_E_INVALID_ARGUMENT, "no compute-instance profile 2");
  w->ci[0] = (struct gs_layout_ci){C2, 1};
  plan_fails(m, &cur, &want, false, GS_E_INVALID_ARGUMENT, "cannot start at compute slice 1");
  w->ci[0] = (struct gs_layout_ci){C4, -1};
  want_ci(w, C1, -1);
  plan_fails(m, &cur, &want, false, GS_E_INSUFFICIENT_RESOURCES, "compute instances do not fit");
  memset(&want, 0, sizeof(want));
  want_gi(&want, sim_prof(m, "3g.20gb"), -1);
  want.mig_enabled = false;
  plan_fails(m, &cur, &want, false, GS_E_INVALID_ARGUMENT, "the target disables MIG but lists 1");
  want.mig_enabled = true;
  cur.mig_current = cur.mig_pending = false;
  cur_add_gi(m, &cur, sim_prof(m, "3g.20gb"), 0);
  plan_fails(m, &cur, &want, false, GS_E_INVALID_ARGUMENT, "MIG mode is disabled");
  cur.mig_current = true;
  cur.gi[0].gi.profile = sim_prof(other, "3g.40gb");
  plan_fails(m, &cur, &want, false, GS_E_INVALID_ARGUMENT, "is not a GPU instance of a100-40gb");
}

/* ---- GPU-instance cases, one row each ---- */

enum mode { ON, OFF, PENDING_ON, PENDING_OFF }; /* the current MIG mode (ON: current and pending) */

/* One planner case over GIs that hold their default CI. GI lists are
 * "3g.20gb@0* 2x1g.5gb 4g.20gb@4": profile, @start (a current GI always has
 * one), '*' a busy current GI, "Nx" N of them. want NULL: MIG disabled; ""
 * MIG enabled with no GIs. Checks left 0/NULL are skipped, except `code`. */
struct plan_case {
  const char *what, *model, *cur;
  enum mode mode;
  const char *want;
  bool force;
  int code;              /* a refusal: its code and a part of its message */
  const char *msg;
  int kept, steps, reset; /* -1: not checked */
  const char *kept_at;   /* starts of current GIs that stay, with their ids */
  const char *final;     /* every GI at the end, by start: "4g.20gb@0 3g.20gb@4" */
};

static const struct plan_case cases[] = {
  {"placed targets: kept where they match, the rest made there", "a100-40gb", "3g.20gb@0 3g.20gb@4", ON,
   "2g.10gb@2 3g.20gb@4 2g.10gb@0", false, 0, NULL, 1, 6, 0, "4", "2g.10gb@0 2g.10gb@2 3g.20gb@4"},
  {"a busy 3g where the 4g must go: IN_USE naming it", "a100-40gb", "3g.20gb@0* 3g.20gb@4", ON,
   "4g.20gb 3g.20gb", false, GS_E_IN_USE, "(3g.20gb at 0) is in use and the target needs it destroyed", -1, -1, -1, NULL, NULL},
  {"... and with force it goes", "a100-40gb", "3g.20gb@0* 3g.20gb@4", ON, "4g.20gb 3g.20gb", true, 0, NULL,
   1, 4, 0, "4", "4g.20gb@0 3g.20gb@4"},
  {"of two 3g the busy one stays (left)", "a100-40gb", "3g.20gb@0* 3g.20gb@4", ON, "3g.20gb 2g.10gb 1g.5gb",
   false, 0, NULL, 1, -1, -1, "0", NULL},
  {"of two 3g the busy one stays (right)", "a100-40gb", "3g.20gb@0 3g.20gb@4*", ON, "3g.20gb 2g.10gb 1g.5gb",
   false, 0, NULL, 1, -1, -1, "4", NULL},
  {"without force a busy 1g beats keeping more", "a100-40gb", "1g.5gb@0 1g.5gb@1 1g.5gb@4*", ON,
   "2x1g.5gb 3g.20gb", false, 0, NULL, 1, -1, -1, "4", NULL},
  {"... with force the most are kept", "a100-40gb", "1g.5gb@0 1g.5gb@1 1g.5gb@4*", ON, "2x1g.5gb 3g.20gb", true,
   0, NULL, 2, -1, -1, "0 1", "1g.5gb@0 1g.5gb@1 3g.20gb@4"},
  {"disabling MIG under a busy GI: IN_USE", "h100-80gb", "1g.10gb@3*", ON, NULL, false, GS_E_IN_USE,
   "(1g.10gb at 3) is in use", -1, -1, -1, NULL, NULL},
  {"... with force everything goes", "h100-80gb", "1g.10gb@3*", ON, NULL, true, 0, NULL, 0, 3, 0, NULL, ""},
  {"enable on Ampere: a GPU reset", "a100-40gb", NULL, OFF, "7g.40gb", false, 0, NULL, 0, 3, 1, NULL, "7g.40gb@0"},
  {"enable on Hopper: no reset", "h100-80gb", NULL, OFF, "7g.80gb", false, 0, NULL, 0, 3, 0, NULL, "7g.80gb@0"},
  {"off stays off", "a100-40gb", NULL, OFF, NULL, false, 0, NULL, 0, 0, 0, NULL, ""},
  {"on and empty stays so", "a100-40gb", NULL, ON, "", false, 0, NULL, 0, 0, 0, NULL, ""},
  {"a matching GI: nothing to do", "a100-40gb", "3g.20gb@4", ON, "3g.20gb", false, 0, NULL, 1, 0, 0, "4", "3g.20gb@4"},
  {"a pending enable is cancelled without a reset", "a100-40gb", NULL, PENDING_ON, NULL, false, 0, NULL, 0, 1, 0, NULL, ""},
  {"... or completed with one", "a100-40gb", NULL, PENDING_ON, "", false, 0, NULL, 0, 1, 1, NULL, ""},
  {"a pending disable is cancelled without a reset", "a100-40gb", NULL, PENDING_OFF, "", false, 0, NULL, 0, 1, 0,
   NULL, ""},
  {"eight 1g", "a100-40gb", NULL, ON, "8x1g.5gb", false, GS_E_INSUFFICIENT_RESOURCES,
   "has 8 1g.5gb instances but one a100-40gb holds at most 7", -1, -1, -1, NULL, NULL},
  {"eight compute slices", "a100-40gb", NULL, ON, "4g.20gb 2x2g.10gb", false, GS_E_INSUFFICIENT_RESOURCES,
   "needs 8 compute slices but one a100-40gb has 7", -1, -1, -1, NULL, NULL},
  {"nine memory slices", "a100-40gb", NULL, ON, "2x3g.20gb 1g.5gb", false, GS_E_INSUFFICIENT_RESOURCES,
   "needs 9 memory slices but one a100-40gb has 8", -1, -1, -1, NULL, NULL},
  {"placements that overlap", "a100-40gb", NULL, ON, "3g.20gb@4 2g.10gb@4", false, GS_E_INSUFFICIENT_RESOURCES,
   "2g.10gb at 4:2 overlaps 3g.20gb at 4:4", -1, -1, -1, NULL, NULL},
  {"a 1g at 2 blocks the third 2g", "a100-40gb", NULL, ON, "1g.5gb@2 3x2g.10gb", false, GS_E_INSUFFICIENT_RESOURCES,
   "1g.5gb + 2g.10gb x3 does not fit on one a100-40gb in any placement", -1, -1, -1, NULL, NULL},
  {"two +me", "a100-40gb", NULL, ON, "2x1g.5gb+me", false, GS_E_INSUFFICIENT_RESOURCES,
   "has 2 1g.5gb+me instances but one a100-40gb holds at most 1", -1, -1, -1, NULL, NULL},
  {"two different +me", "a30-24gb", NULL, ON, "1g.6gb+me 2g.12gb+me", false, GS_E_INSUFFICIENT_RESOURCES,
   "only one +me instance per GPU", -1, -1, -1, NULL, NULL},
  {"RTX PRO 6000: +me.all allows only -me beside it; the -me 1g stays", "rtx-pro-6000",
   "1g.24gb@0 1g.24gb-me@3 2g.48gb@6", ON, "1g.24gb+me.all 1g.24gb-me 2g.48gb-me", false, 0, NULL, 1, -1, -1, "3",
   NULL},
};

/* Calls add(m, profile, start, busy, arg) for each GI of a list. */
static void each_gi(const struct gs_geom_model *m, const char *list,
                    void (*add)(const struct gs_geom_model *, const struct gs_geom_gi_profile *, int, bool, void *),
                    void *arg)
{
  char buf[256], *save = NULL;
  snprintf(buf, sizeof(buf), "%s", list);
  for (char *t = strtok_r(buf, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
    char *end, *at;
    unsigned long n = strtoul(t, &end, 10);
    bool busy = t[strlen(t) - 1] == '*';
    int start = -1;
    if (*end == 'x')
      t = end + 1;
    else
      n = 1;
    if (busy)
      t[strlen(t) - 1] = 0;
    if ((at = strchr(t, '@')) != NULL) {
      *at = 0;
      start = atoi(at + 1);
    }
    for (unsigned long i = 0; i < n; i++)
      add(m, sim_prof(m, t), start, busy, arg);
  }
}

static void add_cur(const struct gs_geom_model *m, const struct gs_geom_gi_profile *p, int start, bool busy, void *arg)
{
  struct gs_layout_current_gi *g = cur_add_gi(m, arg, p, (unsigned)start);
  cur_add_ci(m, g, sim_default_ci(m, p), 0);
  g->busy = busy;
}

static void add_want(const struct gs_geom_model *m, const struct gs_geom_gi_profile *p, int start, bool busy, void *arg)
{
  (void)m;
  (void)busy;
  want_gi(arg, p, start);
}

/* "4g.20gb@0 3g.20gb@4": the simulated GPU's GIs by start. */
static void final_of(const struct sim *s, char *buf, size_t size)
{
  size_t used = 0;
  buf[0] = 0;
  for (unsigned st = 0; st < GS_GEOM_MAX_GRID; st++)
    for (unsigned i = 0; i < s->ngi && used < size; i++)
      if (s->gi[i].start == st)
        used += (size_t)snprintf(buf + used, size - used, "%s%s@%u", used ? " " : "", s->gi[i].p->name, st);
}

static void check_kept_at(const struct plan_case *c, const struct gs_layout_current *cur,
                          const struct gs_layout_plan *plan, const struct sim *s)
{
  char buf[64], *save = NULL;
  snprintf(buf, sizeof(buf), "%s", c->kept_at);
  for (char *t = strtok_r(buf, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
    unsigned start = (unsigned)atoi(t), i;
    for (i = 0; i < cur->ngi && cur->gi[i].gi.start != start; i++)
      ;
    if (i == cur->ngi || destroys_gi(plan, cur->gi[i].gi.id) || gi_at(s, start)->id != cur->gi[i].gi.id)
      fail_msg("%s: the GI at %u did not stay with its id", c->what, start);
  }
}

static void run_case(const struct plan_case *c)
{
  const struct gs_geom_model *m = sim_model(c->model);
  struct gs_layout_current cur = {.mig_current = c->mode == ON || c->mode == PENDING_OFF,
                                  .mig_pending = c->mode == ON || c->mode == PENDING_ON};
  struct gs_layout_target want = {0};
  struct gs_layout_plan plan;
  struct sim s;
  char got[256];
  if (c->cur)
    each_gi(m, c->cur, add_cur, &cur);
  want.mig_enabled = c->want != NULL;
  if (c->want)
    each_gi(m, c->want, add_want, &want);
  if (c->code) {
    struct gs_err err = {0};
    int rc = gs_layout_plan_gpu(&err, m, &cur, &want, c->force, &plan);
    if (rc != c->code || !strstr(err.msg, c->msg))
      fail_msg("%s: got %s \"%s\"; want %s \"...%s...\"", c->what, gs_code_name(rc), err.msg,
               gs_code_name(c->code), c->msg);
    plan_fails(m, &cur, &want, c->force, c->code, c->msg); /* and the same without an err */
    return;
  }
  plan_and_run(m, &cur, &want, c->force, &plan, &s);
  if ((c->kept >= 0 && plan.kept_gis != (unsigned)c->kept) || (c->steps >= 0 && plan.nops != (unsigned)c->steps) ||
      (c->reset >= 0 && plan.needs_reset != (c->reset == 1)))
    fail_msg("%s: kept %u, %u steps, reset %d; want %d, %d, %d", c->what, plan.kept_gis, plan.nops,
             plan.needs_reset, c->kept, c->steps, c->reset);
  if (c->kept_at)
    check_kept_at(c, &cur, &plan, &s);
  final_of(&s, got, sizeof(got));
  if (c->final && strcmp(got, c->final) != 0)
    fail_msg("%s: ends in \"%s\", want \"%s\"", c->what, got, c->final);
}

static void test_cases(void **state)
{
  (void)state;
  for (size_t i = 0; i < GS_NITEMS(cases); i++)
    run_case(&cases[i]);
}

/* ---- random states with random CIs ---- */

static unsigned rnd(unsigned *seed, unsigned n)
{
  *seed = *seed * 1103515245u + 12345u;
  return (*seed >> 16) % n;
}

/* Fills g (a GI of profile p) with random CIs that fit, as the driver allows. */
static void random_cis(const struct gs_geom_model *m, unsigned *seed, struct sim_gi *g)
{
  struct gs_geom_ci_profile all[GS_GEOM_MAX_CI_PROFILES];
  unsigned n = gs_geom_ci_profiles(m, g->p, all), tries = rnd(seed, 6);
  char why[64];
  g->nci = 0;
  for (unsigned k = 0; k < tries; k++) {
    const struct gs_geom_ci_profile *cp = &all[rnd(seed, n)];
    unsigned start = rnd(seed, g->p->compute_slices);
    if (sim_ci_ok(g, cp, (int)start, why, sizeof(why)) == 0) {
      g->ci[g->nci] = (struct sim_ci){g->nci, *cp, start};
      g->nci++;
    }
  }
}

static int cmp_str(const void *a, const void *b)
{
  return strcmp(a, b);
}

/* The GI profile and sorted CI profile ids of each GI, as comparable text. */
static void shape_of_sim(const struct sim *s, char out[SIM_MAX][64], unsigned *n)
{
  for (unsigned i = 0; i < s->ngi; i++) {
    unsigned ids[SIM_MAX], k = s->gi[i].nci;
    size_t used = (size_t)snprintf(out[i], 64, "%s:", s->gi[i].p->name);
    for (unsigned j = 0; j < k; j++)
      ids[j] = s->gi[i].ci[j].p.id;
    for (unsigned a = 0; a < k; a++)
      for (unsigned b = a + 1; b < k; b++)
        if (ids[b] < ids[a]) {
          unsigned t = ids[a];
          ids[a] = ids[b];
          ids[b] = t;
        }
    for (unsigned j = 0; j < k && used < 64; j++)
      used += (size_t)snprintf(out[i] + used, 64 - used, "%u", ids[j]);
  }
  *n = s->ngi;
  qsort(out, *n, 64, cmp_str);
}

static void to_current(const struct sim *s, struct gs_layout_current *cur)
{
  mig_on(cur);
  for (unsigned i = 0; i < s->ngi; i++) {
    struct gs_layout_current_gi *g = cur_add_gi(s->m, cur, s->gi[i].p, s->gi[i].start);
    for (unsigned j = 0; j < s->gi[i].nci; j++)
      cur_add_ci(s->m, g, s->gi[i].ci[j].p.id, s->gi[i].ci[j].start);
  }
}

/* The target that reproduces t (with its CIs; starts kept or dropped at
 * random, an empty CI list as nci == 0 for one default CI). */
static void to_target(unsigned *seed, const struct sim *t, struct gs_layout_target *want)
{
  memset(want, 0, sizeof(*want));
  want->mig_enabled = true;
  for (unsigned i = 0; i < t->ngi; i++) {
    struct gs_layout_gi *w = want_gi(want, t->gi[i].p, rnd(seed, 4) ? -1 : (int)t->gi[i].start);
    bool implicit = t->gi[i].nci == 1 && t->gi[i].ci[0].p.is_default && rnd(seed, 2);
    for (unsigned j = 0; j < t->gi[i].nci && !implicit; j++)
      want_ci(w, t->gi[i].ci[j].p.id, rnd(seed, 3) ? -1 : (int)t->gi[i].ci[j].start);
  }
}

static void random_state(const struct gs_geom_model *m, const struct gs_geom_layout *ls, unsigned nls,
                         unsigned *seed, struct sim *s)
{
  const struct gs_geom_layout *l = &ls[rnd(seed, nls)];
  memset(s, 0, sizeof(*s));
  s->m = m;
  s->mig = true;
  for (unsigned i = 0; i < l->n; i++) {
    s->gi[s->ngi] = (struct sim_gi){.id = gs_geom_gi_id(m, (unsigned)l->slot[i].start, l->slot[i].profile->span),
                                    .p = l->slot[i].profile, .start = (unsigned)l->slot[i].start};
    random_cis(m, seed, &s->gi[s->ngi++]);
  }
  if (rnd(seed, 8) == 0 && s->ngi)   /* sometimes one default CI in each GI */
    for (unsigned i = 0; i < s->ngi; i++) {
      struct gs_geom_ci_profile d = sim_ci_prof(m, s->gi[i].p, sim_default_ci(m, s->gi[i].p));
      s->gi[i].nci = 1;
      s->gi[i].ci[0] = (struct sim_ci){0, d, 0};
    }
}

struct layouts {
  struct gs_geom_layout l[800];
  unsigned n;
};

static int collect(const struct gs_geom_layout *l, void *arg)
{
  struct layouts *ls = arg;
  if (ls->n < GS_NITEMS(ls->l))
    ls->l[ls->n++] = *l;
  return 0;
}

/* One random pair: the plan reaches exactly the target's GIs and CIs, keeps
 * as many GIs as brute force says can stay, never touches a busy GI's
 * instances without force, and does nothing when the GPU already matches. */
static void check_random(const struct gs_geom_model *m, unsigned *seed, const struct sim *from,
                         struct sim *to, bool same)
{
  struct gs_layout_current cur;
  struct gs_layout_target want;
  struct gs_layout_plan plan;
  struct gs_geom_layout fl, tl;
  struct sim s;
  char a[SIM_MAX][64], b[SIM_MAX][64];
  unsigned na, nb;
  bool force = rnd(seed, 2), any_busy = false, placed = false;
  int rc;
  for (unsigned g = 0; g < to->ngi; g++)   /* a target GI always gets a CI */
    if (!to->gi[g].nci) {
      same = false;
      to->gi[g].ci[0] = (struct sim_ci){0, sim_ci_prof(m, to->gi[g].p, sim_default_ci(m, to->gi[g].p)), 0};
      to->gi[g].nci = 1;
    }
  to_current(from, &cur);
  for (unsigned i = 0; i < cur.ngi; i++)
    any_busy |= cur.gi[i].busy = rnd(seed, 5) == 0;
  to_target(seed, to, &want);
  rc = gs_layout_plan_gpu(NULL, m, &cur, &want, force, &plan);
  if (rc == GS_E_IN_USE && !force && any_busy)
    return;
  assert_int_equal(rc, 0);
  plan_and_run(m, &cur, &want, force, &plan, &s);
  if (same)
    assert_int_equal(plan.nops, 0);
  shape_of_sim(&s, a, &na);
  shape_of_sim(to, b, &nb);
  assert_int_equal(na, nb);
  for (unsigned i = 0; i < na; i++)
    assert_string_equal(a[i], b[i]);
  for (unsigned i = 0; i < plan.nops && !force; i++)
    for (unsigned g = 0; g < cur.ngi; g++)
      assert_false(cur.gi[g].busy && plan.op[i].kind <= GS_LAYOUT_DESTROY_GI && plan.op[i].gi_id == cur.gi[g].gi.id);
  sim_layout(from, &fl);
  sim_layout(to, &tl);
  for (unsigned g = 0; g < want.ngi; g++)
    placed |= want.gi[g].start >= 0;
  /* brute_keep counts for targets without starts, no busy GI holding on */
  if ((!any_busy || force) && !placed)
    assert_int_equal(plan.kept_gis, brute_keep(m, &fl, &tl));
}

static void test_random_with_cis(void **state)
{
  const char *keys[] = {"a100-40gb", "h100-nvl-94gb", "a30-24gb", "rtx-pro-6000"};
  static struct layouts ls;
  unsigned seed = 12345;
  (void)state;
  for (unsigned k = 0; k < GS_NITEMS(keys); k++) {
    const struct gs_geom_model *m = sim_model(keys[k]);
    ls.n = 0;
    gs_geom_enumerate(m, GS_GEOM_ENUM_ALL_SHAPES, collect, &ls);
    for (unsigned i = 0; i < 4000; i++) {
      struct sim from, to;
      bool same = false;
      random_state(m, ls.l, ls.n, &seed, &from);
      random_state(m, ls.l, ls.n, &seed, &to);
      if (rnd(&seed, 4) == 0) {
        to = from;    /* the same GIs, often different CIs */
        same = true;
        if (rnd(&seed, 2) == 0) {
          same = false;
          for (unsigned g = 0; g < to.ngi; g++)
            random_cis(m, &seed, &to.gi[g]);
        }
      }
      check_random(m, &seed, &from, &to, same);
    }
  }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_order_ug_example2),
    cmocka_unit_test(test_order_all_1g_like_nvidia_smi),
    cmocka_unit_test(test_busy_cis),
    cmocka_unit_test(test_mig_disable),
    cmocka_unit_test(test_ci_diff_in_kept_gi),
    cmocka_unit_test(test_ci_default),
    cmocka_unit_test(test_ci_order_in_new_gi),
    cmocka_unit_test(test_invalid_input),
    cmocka_unit_test(test_cases),
    cmocka_unit_test(test_random_with_cis),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
