/* SPDX-License-Identifier: Apache-2.0 */
/* test-plan-exact.c: the planner is exact on one GPU, for every model the
 * geometry knows. Each layout of gs_geom_enumerate (every shape, partial
 * layouts included) turned into one demand per instance must be planned
 * whole; and random demand sets must be planned whole exactly when some
 * enumerated layout can host them (a matching of demands to instances). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"

#define MAX_LAYOUTS 4096

struct layouts {
  struct gs_geom_layout l[MAX_LAYOUTS];
  unsigned n;
};

static int keep(const struct gs_geom_layout *l, void *arg)
{
  struct layouts *all = arg;
  assert_true(all->n < MAX_LAYOUTS);
  all->l[all->n++] = *l;
  return 0;
}

/* A workload asking exactly what profile p offers. */
static void demand_for(const struct gs_geom_model *m, const struct gs_geom_gi_profile *p, unsigned i,
                       struct gs_plan_workload *w)
{
  memset(w, 0, sizeof(*w));
  snprintf(w->name, sizeof(w->name), "d%u", i);
  w->replicas = 1;
  w->memory_mib = p->memory_mib;
  w->compute_milli = p->compute_slices * 1000 / m->compute_slices;
  w->isolation = GS_PLAN_HARD;
}

/* Plans ws on one GPU of m; returns how many replicas were left out, after
 * checking that the layout the planner made is one geometry accepts. */
static unsigned plan_one(const struct gs_geom_model *m, struct gs_plan_workload *ws, unsigned n)
{
  struct gs_plan_workloads w = {.w = ws, .n = n, .cap = n};
  struct gs_plan_fleet f = {0};
  struct gs_plan_result r;
  struct gs_plan_options o = {.policy = GS_PLAN_OURS};
  struct gs_err err = {0};
  unsigned left;
  assert_int_equal(gs_plan_fleet_add(&err, &f, "n", m, 1), 0);
  assert_int_equal(gs_plan_run(&err, &w, &f, &o, &r), 0);
  if (f.gpu[0].mode == GS_PLAN_MIG) {
    struct gs_geom_layout out;
    assert_int_equal(gs_geom_validate(&err, m, &f.gpu[0].layout, &out), 0);
    assert_int_equal(f.gpu[0].nunit, f.gpu[0].layout.n);
  }
  left = r.nunplaced;
  assert_int_equal(left + f.gpu[0].nunit, n);
  gs_plan_result_free(&r);
  gs_plan_fleet_free(&f);
  return left;
}

static void every_layout_is_found(void **state)
{
  unsigned nm, total = 0;
  const struct gs_geom_model *const *models = gs_geom_models(&nm);
  static struct layouts all;
  (void)state;
  for (unsigned mi = 0; mi < nm; mi++) {
    const struct gs_geom_model *m = models[mi];
    all.n = 0;
    gs_geom_enumerate(m, GS_GEOM_ENUM_ALL_SHAPES, keep, &all);
    assert_true(all.n > 1);
    for (unsigned k = 0; k < all.n; k++) {
      struct gs_plan_workload ws[GS_GEOM_MAX_INSTANCES];
      for (unsigned i = 0; i < all.l[k].n; i++)
        demand_for(m, all.l[k].slot[i].profile, i, &ws[i]);
      if (plan_one(m, ws, all.l[k].n) != 0)
        fail_msg("%s: layout %u of %u (%u instances) exists but was not planned", m->key, k, all.n,
                 all.l[k].n);
      total++;
    }
  }
  assert_true(total > 100);
}

static bool same_shape(const struct gs_geom_gi_profile *a, const struct gs_geom_gi_profile *b)
{
  return a->span == b->span && a->starts == b->starts && a->compute_slices == b->compute_slices &&
         a->memory_mib >= b->memory_mib;
}

/* Can demand d sit in slot s: one of its candidates has the slot's shape. */
static bool fits_slot(const struct gs_geom_gi_profile *const *cand, unsigned ncand,
                      const struct gs_geom_gi_profile *slot)
{
  for (unsigned c = 0; c < ncand; c++)
    if (same_shape(slot, cand[c]))
      return true;
  return false;
}

/* Bipartite matching of demands to the layout's instances (augmenting paths). */
static bool augment(bool adj[8][8], unsigned nd, unsigned ns, unsigned d, int *owner, bool *seen)
{
  for (unsigned s = 0; s < ns; s++) {
    if (!adj[d][s] || seen[s])
      continue;
    seen[s] = true;
    if (owner[s] < 0 || augment(adj, nd, ns, (unsigned)owner[s], owner, seen)) {
      owner[s] = (int)d;
      return true;
    }
  }
  return false;
}

static bool hosts(const struct gs_geom_model *m, const struct gs_geom_layout *l,
                  const struct gs_plan_workload *ws, unsigned n)
{
  bool adj[8][8] = {{false}};
  int owner[8];
  if (l->n < n)
    return false;
  for (unsigned d = 0; d < n; d++) {
    const struct gs_geom_gi_profile *cand[GS_GEOM_MAX_GRID * 2];
    unsigned nc = gs_plan_candidates(m, &ws[d], cand);
    for (unsigned s = 0; s < l->n; s++)
      adj[d][s] = fits_slot(cand, nc, l->slot[s].profile);
  }
  for (unsigned s = 0; s < 8; s++)
    owner[s] = -1;
  for (unsigned d = 0; d < n; d++) {
    bool seen[8] = {false};
    if (!augment(adj, n, l->n, d, owner, seen))
      return false;
  }
  return true;
}

static void random_sets_match_enumeration(void **state)
{
  unsigned nm, fit = 0, nofit = 0;
  const struct gs_geom_model *const *models = gs_geom_models(&nm);
  static struct layouts all;
  uint32_t seed = 12345;
  (void)state;
  for (unsigned mi = 0; mi < nm; mi++) {
    const struct gs_geom_model *m = models[mi];
    all.n = 0;
    gs_geom_enumerate(m, GS_GEOM_ENUM_ALL_SHAPES, keep, &all);
    for (unsigned round = 0; round < 400; round++) {
      struct gs_plan_workload ws[GS_GEOM_MAX_INSTANCES];
      unsigned n, k;
      bool truth = false;
      seed = seed * 1103515245u + 12345u;
      n = 1 + (seed >> 16) % 7;
      for (unsigned i = 0; i < n; i++) {
        const struct gs_geom_gi_profile *p;
        do {
          seed = seed * 1103515245u + 12345u;
          p = &m->gi[(seed >> 16) % m->ngi];
        } while (p->media != GS_GEOM_MEDIA_SHARED || p->gfx);
        demand_for(m, p, i, &ws[i]);
        /* Some demands ask a little less than the profile, so bigger ones qualify too. */
        if ((seed >> 8) % 3 == 0)
          ws[i].memory_mib = ws[i].memory_mib * 2 / 3;
      }
      for (k = 0; k < all.n && !truth; k++)
        truth = hosts(m, &all.l[k], ws, n);
      if ((plan_one(m, ws, n) == 0) != truth)
        fail_msg("%s: round %u: %u demands, enumeration says %s, the planner disagrees", m->key, round,
                 n, truth ? "they fit" : "they do not fit");
      fit += truth;
      nofit += !truth;
    }
  }
  /* Both answers must have been exercised, or the test proves little. */
  assert_true(fit > 500);
  assert_true(nofit > 500);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(every_layout_is_found),
      cmocka_unit_test(random_sets_match_enumeration),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
