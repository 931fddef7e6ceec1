/* SPDX-License-Identifier: Apache-2.0 */
/* plan-sim.h: what the layout-planner tests share: current states and
 * targets built from geometry layouts, and a simulator that carries a plan
 * out on an in-memory GPU step by step, with the driver's checks (placement
 * legality, overlaps, counts, CIs before their GI), so a plan that passes
 * here would pass on NVML. Include after cmocka.h; all helpers are static. */
#ifndef GS_TEST_PLAN_SIM_H
#define GS_TEST_PLAN_SIM_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "geometry/geometry.h"
#include "layout/layout.h"

#define SIM_MAX GS_GEOM_MAX_INSTANCES

struct sim_ci {
  unsigned id;
  struct gs_geom_ci_profile p;
  unsigned start;
};

struct sim_gi {
  unsigned id;
  const struct gs_geom_gi_profile *p;
  unsigned start;
  unsigned nci;
  struct sim_ci ci[SIM_MAX];
};

struct sim {
  const struct gs_geom_model *m;
  bool mig;
  unsigned ngi;
  struct sim_gi gi[SIM_MAX];
  unsigned not_auto;   /* GI creates away from where the driver would put them */
};

/* ---- building inputs ---- */

static inline const struct gs_geom_model *sim_model(const char *key)
{
  const struct gs_geom_model *m = gs_geom_model_find(key);
  assert_non_null(m);
  return m;
}

static inline const struct gs_geom_gi_profile *sim_prof(const struct gs_geom_model *m, const char *name)
{
  const struct gs_geom_gi_profile *p = gs_geom_gi_profile_find(m, name);
  assert_non_null(p);
  return p;
}

static inline struct gs_geom_ci_profile sim_ci_prof(const struct gs_geom_model *m,
                                                    const struct gs_geom_gi_profile *gi, unsigned id)
{
  struct gs_geom_ci_profile all[GS_GEOM_MAX_CI_PROFILES];
  unsigned n = gs_geom_ci_profiles(m, gi, all);
  for (unsigned i = 0; i < n; i++)
    if (all[i].id == id)
      return all[i];
  fail_msg("%s has no CI profile %u", gi->name, id);
  return all[0];
}

static inline unsigned sim_default_ci(const struct gs_geom_model *m, const struct gs_geom_gi_profile *gi)
{
  struct gs_geom_ci_profile all[GS_GEOM_MAX_CI_PROFILES];
  unsigned n = gs_geom_ci_profiles(m, gi, all);
  for (unsigned i = 0; i < n; i++)
    if (all[i].is_default)
      return all[i].id;
  fail_msg("%s has no default CI profile", gi->name);
  return 0;
}

/* Appends a GI to cur at start, with its id as the driver gives it, and no CIs. */
static inline struct gs_layout_current_gi *cur_add_gi(const struct gs_geom_model *m,
                                                      struct gs_layout_current *cur,
                                                      const struct gs_geom_gi_profile *p, unsigned start)
{
  struct gs_layout_current_gi *g;
  assert_true(cur->ngi < SIM_MAX);
  g = &cur->gi[cur->ngi++];
  memset(g, 0, sizeof(*g));
  g->gi.id = gs_geom_gi_id(m, start, p->span);
  g->gi.profile = p;
  g->gi.start = start;
  g->gi.span = p->span;
  return g;
}

/* Appends a CI (id = lowest free) of profile id at start to a current GI. */
static inline void cur_add_ci(const struct gs_geom_model *m, struct gs_layout_current_gi *g,
                              unsigned profile_id, unsigned start)
{
  struct gs_ci_info *c;
  unsigned id = 0;
  for (bool clash = true; clash; id += clash) {
    clash = false;
    for (unsigned i = 0; i < g->nci; i++)
      clash = clash || g->ci[i].id == id;
  }
  assert_true(g->nci < SIM_MAX);
  c = &g->ci[g->nci++];
  memset(c, 0, sizeof(*c));
  c->gi = g->gi.id;
  c->id = id;
  c->profile = sim_ci_prof(m, g->gi.profile, profile_id);
  c->start = start;
  c->span = c->profile.span;
}

/* A GPU in MIG mode holding l, one default CI in each GI. */
static inline void cur_from_layout(const struct gs_geom_model *m, const struct gs_geom_layout *l,
                                   struct gs_layout_current *cur)
{
  memset(cur, 0, sizeof(*cur));
  cur->mig_current = cur->mig_pending = true;
  for (unsigned i = 0; i < l->n; i++) {
    struct gs_layout_current_gi *g = cur_add_gi(m, cur, l->slot[i].profile, (unsigned)l->slot[i].start);
    cur_add_ci(m, g, sim_default_ci(m, l->slot[i].profile), 0);
  }
}

/* The target "l's GIs, each with its default CI", with or without starts. */
static inline void target_from_layout(const struct gs_geom_layout *l, bool placed,
                                      struct gs_layout_target *t)
{
  memset(t, 0, sizeof(*t));
  t->mig_enabled = true;
  for (unsigned i = 0; i < l->n; i++) {
    t->gi[t->ngi].profile = l->slot[i].profile;
    t->gi[t->ngi].start = placed ? l->slot[i].start : -1;
    t->ngi++;
  }
}

/* "1g.5gb@0 2g.10gb@2" */
static inline const char *layout_str(const struct gs_geom_layout *l, char *buf, size_t size)
{
  size_t used = 0;
  buf[0] = 0;
  for (unsigned i = 0; i < l->n && used < size; i++)
    used += (size_t)snprintf(buf + used, size - used, "%s%s@%d", i ? " " : "", l->slot[i].profile->name,
                             l->slot[i].start);
  if (!l->n)
    snprintf(buf, size, "(empty)");
  return buf;
}

/* ---- the simulator ---- */

static inline void sim_from_current(struct sim *s, const struct gs_geom_model *m,
                                    const struct gs_layout_current *cur)
{
  memset(s, 0, sizeof(*s));
  s->m = m;
  s->mig = cur->mig_current;
  for (unsigned i = 0; i < cur->ngi; i++) {
    struct sim_gi *g = &s->gi[s->ngi++];
    g->id = cur->gi[i].gi.id;
    g->p = cur->gi[i].gi.profile;
    g->start = cur->gi[i].gi.start;
    for (unsigned j = 0; j < cur->gi[i].nci; j++)
      g->ci[g->nci++] = (struct sim_ci){cur->gi[i].ci[j].id, cur->gi[i].ci[j].profile, cur->gi[i].ci[j].start};
  }
}

static inline void sim_layout(const struct sim *s, struct gs_geom_layout *l)
{
  memset(l, 0, sizeof(*l));
  for (unsigned i = 0; i < s->ngi; i++)
    l->slot[l->n++] = (struct gs_geom_slot){s->gi[i].p, (int)s->gi[i].start};
}

static inline struct sim_gi *sim_find(struct sim *s, unsigned id)
{
  for (unsigned i = 0; i < s->ngi; i++)
    if (s->gi[i].id == id)
      return &s->gi[i];
  return NULL;
}

static inline int sim_fail(char *why, size_t n, const char *what)
{
  snprintf(why, n, "%s", what);
  return -1;
}

/* The driver's checks for a CI of profile p at start in g (emu.c's check_ci). */
static inline int sim_ci_ok(const struct sim_gi *g, const struct gs_geom_ci_profile *p, int start,
                            char *why, size_t n)
{
  unsigned used = 0, same = 0;
  if (start < 0)
    return sim_fail(why, n, "CI create without a concrete start");
  if (start >= GS_GEOM_MAX_GRID || !(p->starts & (1u << start)))
    return sim_fail(why, n, "CI start not legal for its profile");
  for (unsigned i = 0; i < g->nci; i++) {
    same += g->ci[i].p.id == p->id;
    used += g->ci[i].p.compute_slices;
    if ((unsigned)start < g->ci[i].start + g->ci[i].p.span && g->ci[i].start < (unsigned)start + p->span)
      return sim_fail(why, n, "CI overlaps another");
  }
  if (same >= p->max_count)
    return sim_fail(why, n, "too many CIs of one profile");
  if (used + p->compute_slices > g->p->compute_slices)
    return sim_fail(why, n, "CIs exceed the GI's compute slices");
  return 0;
}

/* Where `nvidia-smi mig -cgi` (no placement) would put p now, or -1. */
static inline int sim_auto_start(const struct gs_geom_model *m, const struct gs_geom_layout *l,
                                 const struct gs_geom_gi_profile *p)
{
  unsigned order[GS_GEOM_MAX_GRID], n = gs_geom_gi_auto_order(m, p, order);
  for (unsigned i = 0; i < n; i++)
    if (gs_geom_check_add(NULL, m, l, p, order[i]) == 0)
      return (int)order[i];
  return -1;
}

static inline int sim_create_gi(struct sim *s, const struct gs_layout_op *op, unsigned *id, char *why,
                                size_t n)
{
  struct gs_geom_layout l;
  struct gs_err err = {0};
  struct sim_gi *g;
  if (!s->mig)
    return sim_fail(why, n, "GI create outside MIG mode");
  sim_layout(s, &l);
  if (gs_geom_check_add(&err, s->m, &l, op->profile, op->start) != 0) {
    snprintf(why, n, "GI create %s@%u: %.400s", op->profile->name, op->start, err.msg);
    return -1;
  }
  if (sim_auto_start(s->m, &l, op->profile) != (int)op->start)
    s->not_auto++;
  *id = gs_geom_gi_id(s->m, op->start, op->profile->span);
  if (sim_find(s, *id))
    return sim_fail(why, n, "GI id already taken");
  g = &s->gi[s->ngi++];
  memset(g, 0, sizeof(*g));
  *g = (struct sim_gi){.id = *id, .p = op->profile, .start = op->start};
  return 0;
}

static inline int sim_create_ci(struct sim *s, const struct gs_layout_plan *p, unsigned i,
                                const unsigned *made, char *why, size_t n)
{
  const struct gs_layout_op *op = &p->op[i];
  struct sim_gi *g;
  struct gs_geom_ci_profile cp;
  unsigned id = 0;
  if (op->gi_op >= 0 && ((unsigned)op->gi_op >= i || p->op[op->gi_op].kind != GS_LAYOUT_CREATE_GI))
    return sim_fail(why, n, "CI create names a step that is not an earlier GI create");
  if (!(g = sim_find(s, op->gi_op >= 0 ? made[op->gi_op] : op->gi_id)))
    return sim_fail(why, n, "CI create in a GI that does not exist");
  cp = sim_ci_prof(s->m, g->p, op->ci.profile_id);
  if (sim_ci_ok(g, &cp, op->ci.start, why, n) != 0)
    return -1;
  for (bool clash = true; clash; id += clash) {
    clash = false;
    for (unsigned k = 0; k < g->nci; k++)
      clash = clash || g->ci[k].id == id;
  }
  g->ci[g->nci++] = (struct sim_ci){id, cp, (unsigned)op->ci.start};
  return 0;
}

static inline int sim_destroy(struct sim *s, const struct gs_layout_op *op, char *why, size_t n)
{
  struct sim_gi *g = sim_find(s, op->gi_id);
  if (!g)
    return sim_fail(why, n, "destroy of a GI that does not exist");
  if (op->kind == GS_LAYOUT_DESTROY_GI) {
    if (g->nci)
      return sim_fail(why, n, "GI destroyed while it has CIs");
    *g = s->gi[--s->ngi];
    return 0;
  }
  for (unsigned k = 0; k < g->nci; k++)
    if (g->ci[k].id == op->ci_id) {
      g->ci[k] = g->ci[--g->nci];
      return 0;
    }
  return sim_fail(why, n, "destroy of a CI that does not exist");
}

static inline int sim_phase(enum gs_layout_op_kind k)
{
  return k == GS_LAYOUT_SET_MIG ? 1 : k == GS_LAYOUT_CREATE_GI || k == GS_LAYOUT_CREATE_CI ? 2 : 0;
}

/* Carries out p; returns the failing step, or -1 when every step succeeded
 * (why says what failed). Also fails a plan whose steps are out of phase:
 * destroys, then the mode change, then creates. */
static inline int sim_run(struct sim *s, const struct gs_layout_plan *p, char *why, size_t n)
{
  unsigned made[GS_LAYOUT_MAX_OPS] = {0};
  int phase = 0;
  for (unsigned i = 0; i < p->nops; i++) {
    const struct gs_layout_op *op = &p->op[i];
    int rc = 0;
    if (sim_phase(op->kind) < phase) {
      snprintf(why, n, "step %u is out of phase", i);
      return (int)i;
    }
    phase = sim_phase(op->kind);
    switch (op->kind) {
    case GS_LAYOUT_DESTROY_CI:
    case GS_LAYOUT_DESTROY_GI:
      rc = sim_destroy(s, op, why, n);
      break;
    case GS_LAYOUT_SET_MIG:
      rc = s->ngi ? sim_fail(why, n, "MIG mode change with GIs present") : 0;
      s->mig = op->mig_enable;
      break;
    case GS_LAYOUT_CREATE_GI:
      rc = sim_create_gi(s, op, &made[i], why, n);
      break;
    case GS_LAYOUT_CREATE_CI:
      rc = sim_create_ci(s, p, i, made, why, n);
      break;
    }
    if (rc)
      return (int)i;
  }
  return -1;
}

/* ---- comparing ---- */

static int cmp_ptr(const void *a, const void *b)
{
  uintptr_t x = (uintptr_t) * (const void *const *)a, y = (uintptr_t) * (const void *const *)b;
  return x < y ? -1 : x > y;
}

/* The GI profiles of l, sorted: a multiset. */
static inline unsigned profiles_of(const struct gs_geom_layout *l, const void *out[SIM_MAX])
{
  for (unsigned i = 0; i < l->n; i++)
    out[i] = l->slot[i].profile;
  qsort(out, l->n, sizeof(out[0]), cmp_ptr);
  return l->n;
}

static inline bool same_multiset(const struct gs_geom_layout *a, const struct gs_geom_layout *b)
{
  const void *x[SIM_MAX], *y[SIM_MAX];
  if (a->n != b->n)
    return false;
  profiles_of(a, x);
  profiles_of(b, y);
  return memcmp(x, y, a->n * sizeof(x[0])) == 0;
}

static inline bool has_slot(const struct gs_geom_layout *l, const struct gs_geom_gi_profile *p, int start)
{
  for (unsigned i = 0; i < l->n; i++)
    if (l->slot[i].profile == p && l->slot[i].start == start)
      return true;
  return false;
}

/* Placed slots a has and b lacks. */
static inline unsigned placed_minus(const struct gs_geom_layout *a, const struct gs_geom_layout *b)
{
  unsigned n = 0;
  for (unsigned i = 0; i < a->n; i++)
    n += !has_slot(b, a->slot[i].profile, a->slot[i].start);
  return n;
}

/* The most GIs of `from` that can stay while `to`'s profiles (starts free)
 * are made around them: every subset of from, checked by validation. */
static inline unsigned brute_keep(const struct gs_geom_model *m, const struct gs_geom_layout *from,
                           const struct gs_geom_layout *to)
{
  unsigned best = 0;
  for (unsigned mask = 1; mask < (1u << from->n); mask++) {
    struct gs_geom_layout l = {0};
    bool taken[SIM_MAX] = {false}, ok = true;
    if ((unsigned)__builtin_popcount(mask) <= best)
      continue;
    for (unsigned i = 0; i < from->n && ok; i++) {
      unsigned j = 0;
      if (!(mask & (1u << i)))
        continue;
      while (j < to->n && (taken[j] || to->slot[j].profile != from->slot[i].profile))
        j++;
      ok = j < to->n;
      if (ok) {
        taken[j] = true;
        l.slot[l.n++] = from->slot[i];
      }
    }
    for (unsigned j = 0; j < to->n && ok; j++)
      if (!taken[j])
        l.slot[l.n++] = (struct gs_geom_slot){to->slot[j].profile, -1};
    if (ok && gs_geom_validate(NULL, m, &l, NULL) == 0)
      best = (unsigned)__builtin_popcount(mask);
  }
  return best;
}

static inline unsigned count_changes(const struct gs_layout_plan *p)
{
  return gs_layout_plan_count(p, GS_LAYOUT_DESTROY_CI) + gs_layout_plan_count(p, GS_LAYOUT_DESTROY_GI) +
         gs_layout_plan_count(p, GS_LAYOUT_CREATE_GI) + gs_layout_plan_count(p, GS_LAYOUT_CREATE_CI);
}

#endif
