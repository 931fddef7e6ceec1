/* SPDX-License-Identifier: Apache-2.0 */
/* plan.c: the layout planner. Turns one GPU's current GPU and compute
 * instances into a target with the fewest destroys and creates: it keeps the
 * largest set of current instances the target can be built around, places
 * the rest where the driver's own order would (when that works), and orders
 * the steps so each one succeeds. Pure logic over the geometry layer: no
 * backend calls, no I/O, no allocation (DESIGN.md, layout). */
#include "layout/layout.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define MAXI GS_GEOM_MAX_INSTANCES

/* Score of a keep decision, compared as one number: more kept GIs first, then
 * more busy ones kept (fewer forced destroys), then more CIs kept (fewer CI
 * steps), then lower GI ids. Each field is wider than the sum of those below
 * it over eight GIs (ids 0-14, at most 64 CIs). */
#define W_KEEP (UINT64_C(1) << 24)
#define W_BUSY (UINT64_C(1) << 16)
#define W_CI (UINT64_C(1) << 8)

/* Search steps over creation orders before falling back to the validated
 * placement; far above the few hundred distinct orders a real target has. No
 * pair of layouts on any model needs the fallback (tests/layout), but the
 * geometry does not promise that an automatic order always exists. */
#define ORDER_NODE_LIMIT 20000

/* ---- compute instances inside one GI ---- */

/* CIs of one GI: profile and start (-1: still to choose). */
struct ci_set {
  unsigned n;
  const struct gs_geom_ci_profile *p[MAXI];
  int start[MAXI];
};

/* Count and compute-slice limits, which no placement can lift. */
static bool ci_limits_ok(const struct ci_set *s, unsigned slices)
{
  unsigned used = 0;
  for (unsigned i = 0; i < s->n; i++) {
    unsigned same = 0;
    for (unsigned j = 0; j < s->n; j++)
      same += s->p[j]->id == s->p[i]->id;
    if (same > s->p[i]->max_count)
      return false;
    used += s->p[i]->compute_slices;
  }
  return used <= slices;
}

/* True when CI i may sit at start: a legal start, overlapping no placed CI
 * (placements occupy their reported span, as the drivers and emu check). */
static bool ci_free_at(const struct ci_set *s, unsigned i, unsigned start)
{
  unsigned span = s->p[i]->span;
  if (start >= GS_GEOM_MAX_GRID || !(s->p[i]->starts & (1u << start)))
    return false;
  for (unsigned j = 0; j < s->n; j++) {
    unsigned b = (unsigned)s->start[j];
    if (j != i && s->start[j] >= 0 && start < b + s->p[j]->span && b < start + span)
      return false;
  }
  return true;
}

/* Places the unplaced CIs from index i on, each at its lowest free start in
 * list order (what the driver does with no placement), backtracking. */
static bool ci_place_from(struct ci_set *s, unsigned i)
{
  if (i == s->n)
    return true;
  if (s->start[i] >= 0)
    return ci_place_from(s, i + 1);
  for (unsigned st = 0; st < GS_GEOM_MAX_GRID; st++) {
    if (!ci_free_at(s, i, st))
      continue;
    s->start[i] = (int)st;
    if (ci_place_from(s, i + 1))
      return true;
  }
  s->start[i] = -1;
  return false;
}

/* Whether the CIs fit a GI of `slices` compute slices; fills the free starts. */
static bool ci_fit(struct ci_set *s, unsigned slices)
{
  if (!ci_limits_ok(s, slices))
    return false;
  for (unsigned i = 0; i < s->n; i++)
    if (s->start[i] >= 0 && !ci_free_at(s, i, (unsigned)s->start[i]))
      return false;
  return ci_place_from(s, 0);
}

/* ---- the normalized target ---- */

/* A target GI with its CI list made explicit (nci == 0 becomes the default
 * CI) and the CI profiles looked up. */
struct want_gi {
  const struct gs_geom_gi_profile *profile;
  int start;
  struct gs_geom_ci_profile table[GS_GEOM_MAX_CI_PROFILES];
  struct ci_set ci;      /* starts as the target gives them */
  int fresh[MAXI];       /* concrete CI starts in a newly made GI */
};

/* How current GI c would become target GI t: which CIs stay. */
struct ci_diff {
  unsigned kept;
  int of_cur[MAXI];      /* current CI -> target CI it stays as, or -1 */
  int start[MAXI];       /* every target CI's concrete start */
};

struct plan_ctx {
  const struct gs_geom_model *m;
  const struct gs_layout_current *cur;
  unsigned ncur, nt;
  struct want_gi want[MAXI];
  bool compat[MAXI][MAXI];         /* current c may stay as target t */
  struct ci_diff diff[MAXI][MAXI]; /* where compat */
  uint64_t bound[MAXI + 1];        /* best gain current GIs c.. could still add */
};

static bool model_has(const struct gs_geom_model *m, const struct gs_geom_gi_profile *p)
{
  for (unsigned i = 0; i < m->ngi; i++)
    if (&m->gi[i] == p)
      return true;
  return false;
}

static const struct gs_geom_ci_profile *ci_lookup(const struct want_gi *w, unsigned n, unsigned id)
{
  for (unsigned i = 0; i < n; i++)
    if (w->table[i].id == id)
      return &w->table[i];
  return NULL;
}

/* "0 (1c.4g.20gb), 1 (2c.4g.20gb), 3 (4g.20gb)": the CI profiles a GI offers. */
static void list_ci_profiles(const struct want_gi *w, unsigned n, char *buf, size_t size)
{
  size_t used = 0;
  buf[0] = 0;
  for (unsigned i = 0; i < n && used < size; i++)
    used += (size_t)snprintf(buf + used, size - used, "%s%u (%s)", i ? ", " : "", w->table[i].id,
                             w->table[i].name);
}

/* Looks up target GI i's CIs (none: the default one) and checks their starts. */
static int norm_cis(struct gs_err *err, struct want_gi *w, unsigned i, const struct gs_layout_gi *g,
                    unsigned nt)
{
  char list[160];
  w->ci.n = g->nci ? g->nci : 1;
  for (unsigned j = 0; j < w->ci.n; j++) {
    unsigned id = g->nci ? g->ci[j].profile_id : 0;
    w->ci.p[j] = g->nci ? ci_lookup(w, nt, id) : NULL;
    for (unsigned k = 0; !g->nci && k < nt; k++)
      if (w->table[k].is_default)
        w->ci.p[j] = &w->table[k];
    if (!w->ci.p[j]) {
      list_ci_profiles(w, nt, list, sizeof(list));
      return gs_err_set(err, GS_E_INVALID_ARGUMENT, "target GPU instance %u (%s): no compute-"
                        "instance profile %u in it; its profiles are %s", i, g->profile->name, id, list);
    }
    w->ci.start[j] = g->nci && g->ci[j].start >= 0 ? g->ci[j].start : -1;
    if (w->ci.start[j] >= GS_GEOM_MAX_GRID ||
        (w->ci.start[j] >= 0 && !(w->ci.p[j]->starts & (1u << w->ci.start[j]))))
      return gs_err_set(err, GS_E_INVALID_ARGUMENT, "target GPU instance %u (%s): compute instance "
                        "%s cannot start at compute slice %d", i, g->profile->name,
                        w->ci.p[j]->name, w->ci.start[j]);
  }
  return 0;
}

/* Checks target GI i's profile, start and CIs, and fills want[i]. */
static int norm_gi(struct gs_err *err, struct plan_ctx *x, unsigned i, const struct gs_layout_gi *g)
{
  struct want_gi *w = &x->want[i];
  struct gs_geom_layout empty = {0};
  struct gs_err why = {0};
  if (!g->profile || !model_has(x->m, g->profile))
    return gs_err_set(err, GS_E_INVALID_ARGUMENT,
                      "target GPU instance %u: profile %s is not a profile of %s (`gpuslice gi "
                      "profiles` lists them)", i, g->profile ? g->profile->name : "(none)", x->m->key);
  if (g->start >= 0 && gs_geom_check_add(&why, x->m, &empty, g->profile, (unsigned)g->start) != 0)
    return gs_err_set(err, why.code, "target GPU instance %u: %s", i, why.msg);
  if (g->nci > MAXI)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "target GPU instance %u (%s): %u compute "
                      "instances, at most %u", i, g->profile->name, g->nci, MAXI);
  w->profile = g->profile;
  w->start = g->start < 0 ? -1 : g->start;
  return norm_cis(err, w, i, g, gs_geom_ci_profiles(x->m, g->profile, w->table));
}

static int check_current(struct gs_err *err, const struct gs_geom_model *m,
                         const struct gs_layout_current *cur)
{
  if (cur->ngi > MAXI)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "the current state lists %u GPU instances, at "
                      "most %u", cur->ngi, MAXI);
  if (cur->ngi && !cur->mig_current)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "the current state lists %u GPU instances but "
                      "MIG mode is disabled", cur->ngi);
  for (unsigned c = 0; c < cur->ngi; c++)
    if (!cur->gi[c].gi.profile || !model_has(m, cur->gi[c].gi.profile) || cur->gi[c].nci > MAXI)
      return gs_err_set(err, GS_E_INVALID_ARGUMENT, "current GPU instance %u is not a GPU "
                        "instance of %s", cur->gi[c].gi.id, m->key);
  return 0;
}

/* Normalizes the target and checks that it fits the model at all. */
static int check_target(struct gs_err *err, struct plan_ctx *x, const struct gs_layout_target *t)
{
  struct gs_geom_layout l = {0};
  int rc;
  if (!t->mig_enabled && t->ngi)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "the target disables MIG but lists %u GPU "
                      "instances; a GPU outside MIG mode has none", t->ngi);
  if (t->ngi > MAXI)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "the target lists %u GPU instances; a GPU "
                      "holds at most %u", t->ngi, MAXI);
  x->nt = t->ngi;
  for (unsigned i = 0; i < x->nt; i++) {
    if ((rc = norm_gi(err, x, i, &t->gi[i])) != 0)
      return rc;
    l.slot[l.n++] = (struct gs_geom_slot){x->want[i].profile, x->want[i].start};
  }
  if (gs_geom_validate(NULL, x->m, &l, NULL) == 0) {
    for (unsigned i = 0; i < x->nt; i++) {
      struct want_gi *w = &x->want[i];
      struct ci_set s = w->ci;
      if (!ci_fit(&s, w->profile->compute_slices))
        return gs_err_set(err, GS_E_INSUFFICIENT_RESOURCES, "target GPU instance %u (%s): its "
                          "compute instances do not fit in it together", i, w->profile->name);
      memcpy(w->fresh, s.start, sizeof(w->fresh));
    }
    return 0;
  }
  /* The geometry names the limit the target breaks (count, media, slices)
   * before it says that no placement holds it. */
  return gs_geom_validate(err, x->m, &l, NULL);
}

/* ---- which CIs of a kept GI stay ---- */

struct ci_search {
  const struct gs_layout_current_gi *g;
  const struct want_gi *w;
  struct ci_set set;     /* slot j = target CI j; a kept CI's start */
  int of_cur[MAXI];
  bool used[MAXI];
  bool found;
  struct ci_diff best;
};

/* Target CIs j and k are interchangeable (same profile, no start given). */
static bool ci_twin(const struct want_gi *w, unsigned j, unsigned k)
{
  return w->ci.p[j]->id == w->ci.p[k]->id && w->ci.start[j] < 0 && w->ci.start[k] < 0;
}

static bool ci_can_keep(const struct ci_search *s, unsigned i, unsigned j)
{
  const struct gs_ci_info *c = &s->g->ci[i];
  if (s->used[j] || c->profile.id != s->w->ci.p[j]->id ||
      (s->w->ci.start[j] >= 0 && (unsigned)s->w->ci.start[j] != c->start))
    return false;
  for (unsigned k = 0; k < j; k++)
    if (!s->used[k] && ci_twin(s->w, j, k))
      return false;   /* the same choice as k, already tried */
  return true;
}

static void ci_record(struct ci_search *s, unsigned kept)
{
  struct ci_set placed = s->set;
  if (!ci_fit(&placed, s->w->profile->compute_slices))
    return;
  s->found = true;
  s->best.kept = kept;
  memcpy(s->best.of_cur, s->of_cur, sizeof(s->of_cur));
  memcpy(s->best.start, placed.start, sizeof(placed.start));
}

/* Current CI i stays as some target CI or goes; keeping comes first, and a
 * partial choice that already cannot be placed is cut (keeping more only
 * fixes more starts, so it cannot help). */
static void ci_dfs(struct ci_search *s, unsigned i, unsigned kept)
{
  if (s->found && kept + (s->g->nci - i) <= s->best.kept)
    return;
  if (i == s->g->nci) {
    ci_record(s, kept);
    return;
  }
  for (unsigned j = 0; j < s->set.n; j++) {
    struct ci_set probe;
    if (!ci_can_keep(s, i, j))
      continue;
    s->set.start[j] = (int)s->g->ci[i].start;
    probe = s->set;
    if (ci_fit(&probe, s->w->profile->compute_slices)) {
      s->used[j] = true;
      s->of_cur[i] = (int)j;
      ci_dfs(s, i + 1, kept + 1);
      s->used[j] = false;
      s->of_cur[i] = -1;
    }
    s->set.start[j] = s->w->ci.start[j];
  }
  ci_dfs(s, i + 1, kept);
}

static void diff_cis(const struct gs_layout_current_gi *g, const struct want_gi *w, struct ci_diff *out)
{
  struct ci_search s = {.g = g, .w = w, .set = w->ci};
  for (unsigned i = 0; i < MAXI; i++)
    s.of_cur[i] = -1;
  ci_dfs(&s, 0, 0);
  *out = s.best;  /* keeping none always fits: check_target placed the list alone */
}

/* ---- which GIs stay ---- */

static uint64_t gain(const struct plan_ctx *x, unsigned c, unsigned t)
{
  const struct gs_layout_current_gi *g = &x->cur->gi[c];
  unsigned id = g->gi.id < 15 ? g->gi.id : 15;
  return W_KEEP + (g->busy ? W_BUSY : 0) + x->diff[c][t].kept * W_CI + (15 - id);
}

/* Which current GI may stay as which target GI, what that does to its CIs,
 * and the bound the search prunes with. */
static void prepare_pairs(struct plan_ctx *x)
{
  x->bound[x->ncur] = 0;
  for (unsigned c = x->ncur; c-- > 0;) {
    const struct gs_layout_current_gi *g = &x->cur->gi[c];
    uint64_t best = 0;
    for (unsigned t = 0; t < x->nt; t++) {
      const struct want_gi *w = &x->want[t];
      x->compat[c][t] = g->gi.profile == w->profile && (w->start < 0 || (unsigned)w->start == g->gi.start);
      if (!x->compat[c][t])
        continue;
      diff_cis(g, w, &x->diff[c][t]);
      if (gain(x, c, t) > best)
        best = gain(x, c, t);
    }
    x->bound[c] = x->bound[c + 1] + best;
  }
}

struct gi_search {
  const struct plan_ctx *x;
  bool force;
  struct gs_geom_layout l;   /* slot t = target t, at its kept GI's start */
  int match[MAXI];           /* current -> target, or -1: destroyed */
  bool used[MAXI];
  bool found;
  uint64_t best;
  int best_match[MAXI];
};

static bool ci_lists_equal(const struct want_gi *a, const struct want_gi *b)
{
  if (a->ci.n != b->ci.n)
    return false;
  for (unsigned j = 0; j < a->ci.n; j++)
    if (a->ci.p[j]->id != b->ci.p[j]->id || a->ci.start[j] != b->ci.start[j])
      return false;
  return true;
}

static bool gi_can_keep(const struct gi_search *s, unsigned c, unsigned t)
{
  const struct plan_ctx *x = s->x;
  const struct gs_layout_current_gi *g = &x->cur->gi[c];
  if (s->used[t] || !x->compat[c][t])
    return false;
  /* Without force a busy GI may stay only if all its CIs stay: we cannot
   * tell which of them the processes use. */
  if (!s->force && g->busy && x->diff[c][t].kept < g->nci)
    return false;
  for (unsigned k = 0; k < t; k++) {
    const struct want_gi *a = &x->want[k], *b = &x->want[t];
    if (!s->used[k] && a->profile == b->profile && a->start < 0 && b->start < 0 && ci_lists_equal(a, b))
      return false;  /* the same choice as k, already tried */
  }
  return true;
}

/* Current GI c stays as some target GI or goes. The layout is every target
 * GI, kept ones at their current starts; a choice whose layout is invalid is
 * cut, since keeping more GIs only fixes more starts. */
static void gi_dfs(struct gi_search *s, unsigned c, uint64_t score)
{
  const struct plan_ctx *x = s->x;
  if (s->found && score + x->bound[c] <= s->best)
    return;
  if (c == x->ncur) {
    s->found = true;
    s->best = score;
    memcpy(s->best_match, s->match, sizeof(s->match));
    return;
  }
  for (unsigned t = 0; t < x->nt; t++) {
    if (!gi_can_keep(s, c, t))
      continue;
    s->l.slot[t].start = (int)x->cur->gi[c].gi.start;
    if (gs_geom_validate(NULL, x->m, &s->l, NULL) == 0) {
      s->used[t] = true;
      s->match[c] = (int)t;
      gi_dfs(s, c + 1, score + gain(x, c, t));
      s->used[t] = false;
      s->match[c] = -1;
    }
    s->l.slot[t].start = x->want[t].start;
  }
  if (s->force || !x->cur->gi[c].busy)
    gi_dfs(s, c + 1, score);
}

static bool choose_kept(const struct plan_ctx *x, bool force, int match[MAXI])
{
  struct gi_search s = {.x = x, .force = force};
  for (unsigned t = 0; t < x->nt; t++)
    s.l.slot[s.l.n++] = (struct gs_geom_slot){x->want[t].profile, x->want[t].start};
  for (unsigned c = 0; c < MAXI; c++)
    s.match[c] = -1;
  gi_dfs(&s, 0, 0);
  if (s.found)
    memcpy(match, s.best_match, sizeof(s.best_match));
  return s.found;
}

/* No plan spares every busy GI: names one that the best forced plan takes. */
static int blame_busy(struct gs_err *err, const struct plan_ctx *x)
{
  int match[MAXI];
  if (!choose_kept(x, true, match))
    return gs_err_set(err, GS_E_INSUFFICIENT_RESOURCES, "no plan reaches the target");
  for (unsigned c = 0; c < x->ncur; c++) {
    const struct gs_layout_current_gi *g = &x->cur->gi[c];
    if (!g->busy || (match[c] >= 0 && x->diff[c][match[c]].kept == g->nci))
      continue;
    return gs_err_set(err, GS_E_IN_USE, "GPU instance %u (%s at %u) is in use and the target %s; "
                      "stop the processes on it, or force the change (--force)", g->gi.id, g->gi.profile->name,
                      g->gi.start, match[c] < 0 ? "needs it destroyed" : "changes its compute instances");
  }
  return gs_err_set(err, GS_E_IN_USE, "an instance in use would have to change");
}

/* ---- where and in which order new GIs are made ---- */

struct order_search {
  const struct plan_ctx *x;
  unsigned n;
  unsigned item[MAXI];       /* target indices of the new GIs; permuted in place */
  struct gs_geom_layout l;   /* kept GIs, then those made so far */
  unsigned order[MAXI], start[MAXI];
  unsigned nodes;
};

/* Where the driver would put p now: the given start, or with none the first
 * free one in its automatic order. */
static bool auto_start(const struct order_search *o, const struct want_gi *w, unsigned *out)
{
  unsigned starts[GS_GEOM_MAX_GRID], n;
  if (w->start >= 0) {
    *out = (unsigned)w->start;
    return gs_geom_check_add(NULL, o->x->m, &o->l, w->profile, *out) == 0;
  }
  n = gs_geom_gi_auto_order(o->x->m, w->profile, starts);
  for (unsigned i = 0; i < n; i++)
    if (gs_geom_check_add(NULL, o->x->m, &o->l, w->profile, starts[i]) == 0) {
      *out = starts[i];
      return true;
    }
  return false;
}

static bool want_twin(const struct want_gi *a, const struct want_gi *b)
{
  return a->profile == b->profile && a->start == b->start && ci_lists_equal(a, b);
}

static void swap_items(struct order_search *o, unsigned a, unsigned b)
{
  unsigned t = o->item[a];
  o->item[a] = o->item[b];
  o->item[b] = t;
}

/* Tries creation orders as nvidia-mig-parted does (its
 * iteratePermutationsUntilSuccess): the target's own order first, then
 * position `depth` takes each later item in turn by a swap, skipping an item
 * equal to one already tried there. Each GI lands where the driver's
 * automatic placement puts it; an order is cut at its first refused create,
 * which is where mig-parted's attempt of every order with that prefix fails. */
static bool order_dfs(struct order_search *o, unsigned depth)
{
  if (depth == o->n)
    return true;
  if (++o->nodes > ORDER_NODE_LIMIT)
    return false;
  for (unsigned j = depth; j < o->n; j++) {
    const struct want_gi *w = &o->x->want[o->item[j]];
    bool twin = false;
    unsigned st;
    for (unsigned k = depth; k < j && !twin; k++)
      twin = want_twin(&o->x->want[o->item[k]], w);
    if (twin || !auto_start(o, w, &st))
      continue;
    swap_items(o, depth, j);
    o->order[depth] = o->item[depth];
    o->start[depth] = st;
    o->l.slot[o->l.n++] = (struct gs_geom_slot){w->profile, (int)st};
    if (order_dfs(o, depth + 1))
      return true;
    o->l.n--;
    swap_items(o, depth, j);
  }
  return false;
}

/* Fills order/start (n entries) for the target GIs no current GI stays as. */
static unsigned plan_creates(const struct plan_ctx *x, const int match[MAXI], unsigned order[MAXI],
                             unsigned start[MAXI])
{
  struct order_search o = {.x = x};
  struct gs_geom_layout all = {0};
  bool kept[MAXI] = {false};
  for (unsigned c = 0; c < x->ncur; c++)
    if (match[c] >= 0) {
      kept[match[c]] = true;
      o.l.slot[o.l.n++] = (struct gs_geom_slot){x->want[match[c]].profile, (int)x->cur->gi[c].gi.start};
    }
  for (unsigned t = 0; t < x->nt; t++) {
    all.slot[all.n++] = (struct gs_geom_slot){x->want[t].profile, x->want[t].start};
    if (!kept[t])
      o.item[o.n++] = t;
  }
  if (order_dfs(&o, 0)) {
    memcpy(order, o.order, sizeof(o.order));
    memcpy(start, o.start, sizeof(o.start));
    return o.n;
  }
  /* No automatic order works: take the validated placement, kept GIs fixed.
   * With every start given, any order succeeds: each step's layout is a
   * subset of the final valid one. */
  for (unsigned c = 0; c < x->ncur; c++)
    if (match[c] >= 0)
      all.slot[match[c]].start = (int)x->cur->gi[c].gi.start;
  gs_geom_validate(NULL, x->m, &all, &all);  /* the search proved it fits */
  for (unsigned k = 0; k < o.n; k++) {
    order[k] = o.item[k];
    start[k] = (unsigned)all.slot[o.item[k]].start;
  }
  return o.n;
}

/* ---- writing the plan ---- */

static int push(struct gs_err *err, struct gs_layout_plan *p, struct gs_layout_op op)
{
  if (p->nops >= GS_LAYOUT_MAX_OPS)
    return gs_err_set(err, GS_E_INSUFFICIENT_SIZE, "the plan needs more than %u steps",
                      GS_LAYOUT_MAX_OPS);
  p->op[p->nops++] = op;
  return 0;
}

static struct gs_layout_op op_of(enum gs_layout_op_kind kind, unsigned gi_id)
{
  return (struct gs_layout_op){.kind = kind, .gi_id = gi_id, .gi_op = -1};
}

/* CIs first, then the GI: a GI with CIs cannot be destroyed. */
static int push_destroys(struct gs_err *err, const struct plan_ctx *x, const int match[MAXI],
                         struct gs_layout_plan *p)
{
  int rc = 0;
  for (unsigned c = 0; c < x->ncur && !rc; c++) {
    const struct gs_layout_current_gi *g = &x->cur->gi[c];
    for (unsigned i = 0; i < g->nci && !rc; i++) {
      struct gs_layout_op op = op_of(GS_LAYOUT_DESTROY_CI, g->gi.id);
      op.ci_id = g->ci[i].id;
      if (match[c] < 0 || x->diff[c][match[c]].of_cur[i] < 0)
        rc = push(err, p, op);
    }
    if (!rc && match[c] < 0)
      rc = push(err, p, op_of(GS_LAYOUT_DESTROY_GI, g->gi.id));
  }
  return rc;
}

/* The target CIs of kept GI c that no current CI stays as. */
static int push_kept_cis(struct gs_err *err, const struct plan_ctx *x, unsigned c, unsigned t,
                         struct gs_layout_plan *p)
{
  const struct gs_layout_current_gi *g = &x->cur->gi[c];
  const struct ci_diff *d = &x->diff[c][t];
  int rc = 0;
  for (unsigned j = 0; j < x->want[t].ci.n && !rc; j++) {
    bool stays = false;
    for (unsigned i = 0; i < g->nci; i++)
      stays = stays || d->of_cur[i] == (int)j;
    if (!stays) {
      struct gs_layout_op op = op_of(GS_LAYOUT_CREATE_CI, g->gi.id);
      op.ci = (struct gs_layout_ci){x->want[t].ci.p[j]->id, d->start[j]};
      rc = push(err, p, op);
    }
  }
  return rc;
}

static int push_creates(struct gs_err *err, const struct plan_ctx *x, const int match[MAXI],
                        struct gs_layout_plan *p)
{
  unsigned order[MAXI], start[MAXI], n = plan_creates(x, match, order, start);
  int rc = 0;
  for (unsigned c = 0; c < x->ncur && !rc; c++)
    if (match[c] >= 0)
      rc = push_kept_cis(err, x, c, (unsigned)match[c], p);
  for (unsigned k = 0; k < n && !rc; k++) {
    const struct want_gi *w = &x->want[order[k]];
    struct gs_layout_op op = op_of(GS_LAYOUT_CREATE_GI, 0);
    int gi_op = (int)p->nops;
    op.profile = w->profile;
    op.start = start[k];
    rc = push(err, p, op);
    for (unsigned j = 0; j < w->ci.n && !rc; j++) {
      struct gs_layout_op ci = op_of(GS_LAYOUT_CREATE_CI, 0);
      ci.gi_op = gi_op;
      ci.ci = (struct gs_layout_ci){w->ci.p[j]->id, w->fresh[j]};
      rc = push(err, p, ci);
    }
  }
  return rc;
}

/* SET_MIG when the mode (or a pending change of it) differs from the target.
 * Ampere resets the GPU to leave or enter MIG mode; cancelling a pending
 * change, and Hopper and later, need no reset. */
static int push_mode(struct gs_err *err, const struct plan_ctx *x, bool enable, struct gs_layout_plan *p)
{
  const struct gs_layout_current *cur = x->cur;
  struct gs_layout_op op = op_of(GS_LAYOUT_SET_MIG, 0);
  bool differs = enable ? !cur->mig_current || !cur->mig_pending : cur->mig_current || cur->mig_pending;
  if (!differs)
    return 0;
  op.mig_enable = enable;
  p->needs_reset = x->m->arch == GS_GEOM_AMPERE && cur->mig_current != enable;
  return push(err, p, op);
}

int gs_layout_plan_gpu(struct gs_err *err, const struct gs_geom_model *m,
                       const struct gs_layout_current *cur, const struct gs_layout_target *want,
                       bool force, struct gs_layout_plan *plan)
{
  struct plan_ctx x = {.m = m, .cur = cur};
  int match[MAXI], rc;
  memset(plan, 0, sizeof(*plan));
  if ((rc = check_current(err, m, cur)) != 0 || (rc = check_target(err, &x, want)) != 0)
    return rc;
  x.ncur = cur->ngi;
  prepare_pairs(&x);
  if (!choose_kept(&x, force, match))
    return blame_busy(err, &x);
  for (unsigned c = 0; c < x.ncur; c++)
    plan->kept_gis += match[c] >= 0;
  if ((rc = push_destroys(err, &x, match, plan)) != 0 ||
      (rc = push_mode(err, &x, want->mig_enabled, plan)) != 0 ||
      (rc = push_creates(err, &x, match, plan)) != 0)
    return rc;
  return 0;
}

unsigned gs_layout_plan_count(const struct gs_layout_plan *p, enum gs_layout_op_kind k)
{
  unsigned n = 0;
  for (unsigned i = 0; i < p->nops; i++)
    n += p->op[i].kind == k;
  return n;
}
