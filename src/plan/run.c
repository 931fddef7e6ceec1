/* SPDX-License-Identifier: Apache-2.0 */
/* run.c: gs_plan_run: keeps what may stay (incremental), orders the demands
 * biggest first, moves each into the best GPU class under the policy, repairs
 * what is left by exact re-layout, then counts changes, utilization and
 * fragmentation. */
#include "plan/internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CACHED_KINDS 1024

/* ---- evaluating a move of a kind into a GPU state ---- */

static double free_after(const struct gs_plan_gpu *g, const struct move *mv, unsigned share)
{
  unsigned used = 0;
  if (!mv->mig)
    return (1000.0 - g->used_milli - share) / 1000.0;
  for (unsigned i = 0; i < g->layout.n; i++)
    used += g->layout.slot[i].profile->compute_slices;
  if (mv->start >= 0)
    used += mv->profile->compute_slices;
  return (double)(g->model->compute_slices - used) / g->model->compute_slices;
}

/* Ours: new GPUs last, then least growth of fragmentation plus compute
 * handed out beyond the need (a bigger profile than asked strands nothing
 * but wastes as much), then best fit. */
static double score_ours(const struct plan *p, const struct class *c, const struct gs_plan_gpu *g,
                         const struct move *mv, unsigned share, unsigned mib)
{
  struct gs_plan_gpu t;
  unsigned mi = c->key.model;
  double frag;
  t.mode = mv->mig ? GS_PLAN_MIG : g->mode == GS_PLAN_FREE ? GS_PLAN_MPS : g->mode;
  t.layout = g->layout;
  t.model = g->model;
  t.nunit = g->nunit + 1;
  t.used_milli = g->used_milli + (mv->mig ? 0 : share);
  t.used_mib = g->used_mib + (mv->mig ? 0 : mib);
  if (mv->mig && mv->start >= 0) {
    t.layout.slot[t.layout.n].profile = mv->profile;
    t.layout.slot[t.layout.n].start = mv->start;
    t.layout.n++;
  }
  frag = gs__plan_frag(p, &t, mi);
  /* Stranding a slice weighs a little more than handing it to the replica:
   * the two cost the same capacity, and the slice given away is not lost. */
  return (g->mode == GS_PLAN_FREE ? 1000.0 : 0) + 11.0 * (frag - c->frag) + 10.0 * mv->waste +
         free_after(g, mv, share) -
         (mv->start < 0 && mv->mig ? 100.0 : 0);
}

static double score(const struct plan *p, const struct class *c, const struct gs_plan_gpu *g,
                    const struct move *mv, unsigned share, unsigned mib)
{
  if (p->o->policy == GS_PLAN_OURS)
    return score_ours(p, c, g, mv, share, mib);
  /* First-fit scores by GPU index later; best-fit by what is left. */
  return free_after(g, mv, share) - (mv->start < 0 && mv->mig ? 100.0 : 0);
}

static void consider(const struct plan *p, const struct class *c, const struct gs_plan_gpu *g,
                     struct move *best, struct move mv, unsigned share, unsigned mib)
{
  mv.ok = true;
  mv.score = score(p, c, g, &mv, share, mib);
  if (!best->ok || mv.score < best->score - 1e-12)
    *best = mv;
}

/* What a MIG instance of prof hands out beyond what kind k needs, in GPUs:
 * compute slices beyond the compute asked (or beyond the smallest profile
 * meeting a throughput target), plus memory slices beyond the memory asked.
 * It makes a 30 GiB replica take an H100's 4g.40gb rather than an A100's
 * whole 7g.40gb, and a 9 GiB one an H100's single-slice 1g.10gb rather than
 * an A100's two-slice one. */
static double waste(const struct gs_geom_model *m, const struct kind *k, unsigned mi,
                    const struct gs_geom_gi_profile *prof)
{
  double need = k->soft && k->share[mi] ? k->share[mi] / 1000.0
                : k->compute_milli      ? k->compute_milli / 1000.0
                                        : (double)k->cand[mi][0]->compute_slices / m->compute_slices;
  double compute = (double)prof->compute_slices / m->compute_slices - need;
  double memory = (double)prof->span / m->grid - (double)k->memory_mib / m->memory_mib;
  return (compute > 0 ? compute : 0) + (memory > 0 ? memory : 0);
}

static void eval_mig(const struct plan *p, const struct class *c, const struct gs_plan_gpu *g,
                     const struct kind *k, struct move *best)
{
  unsigned mi = c->key.model;
  bool first_only = p->o->policy != GS_PLAN_OURS;
  if (g->mode != GS_PLAN_FREE && g->mode != GS_PLAN_MIG)
    return;
  for (unsigned i = 0; i < g->nunit; i++)
    for (unsigned j = 0; g->unit[i].workload < 0 && j < k->ncand[mi]; j++)
      if (g->layout.slot[i].profile == k->cand[mi][j]) {
        consider(p, c, g, best,
                 (struct move){.mig = true, .profile = k->cand[mi][j], .start = -1,
                               .slot = g->layout.slot[i].start, .waste = waste(g->model, k, mi, k->cand[mi][j])},
                 0, 0);
        return;
      }
  for (unsigned j = 0; j < k->ncand[mi]; j++) {
    unsigned starts[GS_GEOM_MAX_GRID], ns = gs_geom_gi_starts(k->cand[mi][j], starts);
    for (unsigned s = 0; s < ns; s++) {
      if (gs_geom_check_add(NULL, g->model, &g->layout, k->cand[mi][j], starts[s]) != 0)
        continue;
      consider(p, c, g, best,
               (struct move){.mig = true, .profile = k->cand[mi][j], .start = (int)starts[s], .slot = -1,
                             .waste = waste(g->model, k, mi, k->cand[mi][j])},
               0, 0);
      if (first_only)
        return;
    }
  }
}

static void eval_shared(const struct plan *p, const struct class *c, const struct gs_plan_gpu *g,
                        const struct kind *k, struct move *best)
{
  unsigned mi = c->key.model, share = k->share[mi];
  enum gs_plan_mode want = k->sharing == GS_PLAN_SHARE_MPS ? GS_PLAN_MPS : GS_PLAN_TIMESLICE;
  if (!share || (g->mode != GS_PLAN_FREE && g->mode != want) || (g->nunit && c->key.tenant != k->tenant))
    return;
  if (g->used_milli + share > 1000 || g->used_mib + k->memory_mib > g->model->memory_mib ||
      g->nunit >= GS_PLAN_MAX_CLIENTS)
    return;
  consider(p, c, g, best, (struct move){.mig = false, .start = -1, .slot = -1}, share, k->memory_mib);
}

static struct move eval(struct plan *p, unsigned ci, unsigned kind)
{
  struct class *c = &p->classes[ci];
  const struct gs_plan_gpu *g = &p->f->gpu[c->member[c->nmember - 1]];
  const struct kind *k = &p->kinds[kind];
  struct move best = {0}, mig = {0};
  if (c->moves && c->moves[kind].done)
    return c->moves[kind];
  if (!c->moves && p->nkinds <= MAX_CACHED_KINDS)
    c->moves = calloc(p->nkinds, sizeof(*c->moves));
  if (k->soft)
    eval_shared(p, c, g, k, &best);
  /* Baselines take sharing first when allowed; ours weighs both. */
  if (!k->soft || p->o->policy == GS_PLAN_OURS || !best.ok) {
    eval_mig(p, c, g, k, &mig);
    if (mig.ok && (!best.ok || mig.score < best.score - 1e-12))
      best = mig;
  }
  best.done = true;
  if (c->moves)
    c->moves[kind] = best;
  return best;
}

/* ---- applying a move ---- */

static void apply(struct plan *p, unsigned gi, const struct move *mv, const struct demand *d)
{
  struct gs_plan_gpu *g = &p->f->gpu[gi];
  const struct kind *k = &p->kinds[d->kind];
  struct gs_plan_unit *u;
  if (mv->mig) {
    g->mode = GS_PLAN_MIG;
    if (mv->start < 0) {
      /* Reuse an idle instance: members of a class hold the same instances,
       * maybe in another order, so find it by profile and start. */
      unsigned i = 0;
      while (i + 1 < g->nunit && (g->unit[i].workload >= 0 || g->layout.slot[i].profile != mv->profile ||
                                  g->layout.slot[i].start != mv->slot))
        i++;
      u = &g->unit[i];
    } else {
      g->layout.slot[g->layout.n].profile = mv->profile;
      g->layout.slot[g->layout.n].start = mv->start;
      g->layout.n++;
      u = &g->unit[g->nunit++];
      u->prev = -1;
      u->memory_mib = mv->profile->memory_mib;
    }
    u->workload = (int)d->workload;
    u->replica = d->replica;
    return;
  }
  g->mode = k->sharing == GS_PLAN_SHARE_MPS ? GS_PLAN_MPS : GS_PLAN_TIMESLICE;
  u = &g->unit[g->nunit++];
  u->workload = (int)d->workload;
  u->replica = d->replica;
  u->prev = -1;
  u->milli = k->share[p->gpu_model[gi]];
  u->memory_mib = k->memory_mib;
  g->used_milli += u->milli;
  g->used_mib += u->memory_mib;
}

/* The class member the policy takes: first-fit the lowest GPU index. */
static unsigned pick_member(const struct plan *p, const struct class *c)
{
  unsigned best = c->member[c->nmember - 1];
  if (p->o->policy != GS_PLAN_OURS)
    for (unsigned i = 0; i < c->nmember; i++)
      if (c->member[i] < best)
        best = c->member[i];
  return best;
}

static bool place(struct plan *p, const struct demand *d, struct gs_err *err, int *rc)
{
  int best = -1;
  struct move bm = {0};
  unsigned best_index = 0;
  for (unsigned ci = 0; ci < p->nclasses; ci++) {
    struct move mv;
    unsigned index = 0;
    if (!p->classes[ci].nmember)
      continue;
    mv = eval(p, ci, d->kind);
    if (!mv.ok)
      continue;
    if (p->o->policy == GS_PLAN_FIRST_FIT) {
      index = pick_member(p, &p->classes[ci]);
      if (best < 0 || index < best_index)
        best = (int)ci, bm = mv, best_index = index;
      continue;
    }
    if (best < 0 || mv.score < bm.score - 1e-12)
      best = (int)ci, bm = mv;
  }
  if (best < 0)
    return false;
  best_index = pick_member(p, &p->classes[best]);
  apply(p, best_index, &bm, d);
  *rc = gs__plan_refile(err, p, best_index);
  return true;
}

/* Exact re-layout of one used MIG GPU per state, until one takes d. */
static bool repair(struct plan *p, const struct demand *d, struct gs_err *err, int *rc)
{
  for (unsigned ci = 0; ci < p->nclasses; ci++) {
    struct class *c = &p->classes[ci];
    unsigned gi;
    if (!c->nmember || c->key.mode != GS_PLAN_MIG || !p->kinds[d->kind].ncand[c->key.model])
      continue;
    if (c->moves && c->moves[d->kind].repair_failed)
      continue;
    gi = c->member[c->nmember - 1];
    if (gs__plan_repair(p, gi, d)) {
      *rc = gs__plan_refile(err, p, gi);
      return true;
    }
    /* A state that cannot take a kind never will: remember it. */
    if (c->moves)
      c->moves[d->kind].repair_failed = true;
  }
  return false;
}

/* ---- demands ---- */

static double size_of(const struct plan *p, const struct kind *k)
{
  double best = 0;
  for (unsigned mi = 0; mi < p->nmodels; mi++) {
    double s = k->ncand[mi] ? (double)k->cand[mi][0]->compute_slices / p->models[mi]->compute_slices
                            : k->share[mi] / 1000.0;
    best = s > best ? s : best;
  }
  return best;
}

/* GPU models a kind can use at all: the fewer, the earlier it is placed. */
static unsigned choices(const struct plan *p, const struct kind *k)
{
  unsigned n = 0;
  for (unsigned mi = 0; mi < p->nmodels; mi++)
    n += k->ncand[mi] || k->share[mi];
  return n;
}

static int demand_cmp(const void *a, const void *b, void *arg)
{
  const struct plan *p = arg;
  const struct demand *x = a, *y = b;
  const struct kind *kx = &p->kinds[x->kind], *ky = &p->kinds[y->kind];
  double sx = size_of(p, kx), sy = size_of(p, ky);
  unsigned cx = choices(p, kx), cy = choices(p, ky);
  if (cx != cy)
    return cx < cy ? -1 : 1;
  if (fabs(sx - sy) > 1e-9)
    return sx > sy ? -1 : 1;
  if (kx->memory_mib != ky->memory_mib)
    return kx->memory_mib > ky->memory_mib ? -1 : 1;
  if (x->workload != y->workload)
    return x->workload < y->workload ? -1 : 1;
  return x->replica < y->replica ? -1 : x->replica > y->replica;
}

/* Incremental: current instances keep the replicas of their workload when
 * the profile still serves it. Returns replicas kept per workload in kept[]. */
static void keep_current(struct plan *p, unsigned *kept)
{
  for (unsigned gi = 0; gi < p->f->ngpu; gi++) {
    struct gs_plan_gpu *g = &p->f->gpu[gi];
    unsigned mi = p->gpu_model[gi];
    for (unsigned i = 0; g->mode == GS_PLAN_MIG && i < g->nunit; i++) {
      struct gs_plan_unit *u = &g->unit[i];
      u->workload = -1;
      if (u->prev < 0)
        continue;
      for (unsigned w = 0; w < p->w->n; w++) {
        const struct kind *k = &p->kinds[p->kind_of[w]];
        if (strcmp(p->w->w[w].name, p->f->prev[u->prev]) != 0 || kept[w] >= p->w->w[w].replicas)
          continue;
        for (unsigned j = 0; j < k->ncand[mi]; j++)
          if (k->cand[mi][j] == g->layout.slot[i].profile) {
            u->workload = (int)w;
            u->replica = kept[w]++;
            break;
          }
      }
    }
  }
}

static int make_demands(struct gs_err *err, struct plan *p, const unsigned *kept, struct demand **out,
                        unsigned *n)
{
  unsigned total = 0, k = 0;
  for (unsigned w = 0; w < p->w->n; w++)
    total += p->w->w[w].replicas - kept[w];
  if (!(*out = calloc(total ? total : 1, sizeof(**out))))
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory for %u replicas", total);
  for (unsigned w = 0; w < p->w->n; w++)
    for (unsigned r = kept[w]; r < p->w->w[w].replicas; r++)
      (*out)[k++] = (struct demand){.workload = w, .replica = r, .kind = p->kind_of[w]};
  *n = total;
  qsort_r(*out, total, sizeof(**out), demand_cmp, p);
  return 0;
}

/* ---- results ---- */

static void reason(const struct plan *p, const struct demand *d, char *buf, size_t size)
{
  const struct kind *k = &p->kinds[d->kind];
  size_t used = (size_t)snprintf(buf, size, "no GPU has room");
  const char *sep = ":";
  for (unsigned mi = 0; mi < p->nmodels && used < size; mi++) {
    if (!k->ncand[mi] && !k->share[mi])
      continue;
    used += (size_t)snprintf(buf + used, size - used, "%s %s needs", sep, p->models[mi]->key);
    sep = ";";
    if (k->ncand[mi] && used < size)
      used += (size_t)snprintf(buf + used, size - used, " %s%s", k->cand[mi][0]->name,
                               k->ncand[mi] > 1 ? " or bigger" : "");
    if (k->share[mi] && used < size)
      used += (size_t)snprintf(buf + used, size - used, "%s a %u%% %s share with %u MiB",
                               k->ncand[mi] ? " or" : "", (k->share[mi] + 9) / 10,
                               k->sharing == GS_PLAN_SHARE_MPS ? "MPS" : "time-slicing", k->memory_mib);
  }
  if (used < size)
    snprintf(buf + used, size - used, "; every GPU of those models is full or fragmented");
}

static void count_changes(const struct plan *p, const struct gs_geom_layout *before,
                          const struct gs_plan_unit (*prev)[GS_GEOM_MAX_INSTANCES],
                          struct gs_plan_result *r)
{
  unsigned *prev_count = calloc(p->f->nprev ? p->f->nprev : 1, sizeof(unsigned));
  unsigned kept = 0, had = 0;
  for (unsigned gi = 0; gi < p->f->ngpu; gi++) {
    const struct gs_plan_gpu *g = &p->f->gpu[gi];
    const struct gs_geom_layout *b = &before[gi];
    const struct gs_geom_layout empty = {0};
    const struct gs_geom_layout *now = g->mode == GS_PLAN_MIG ? &g->layout : &empty;
    for (unsigned i = 0; i < now->n; i++) {
      bool found = false;
      for (unsigned j = 0; j < b->n && !found; j++)
        if (b->slot[j].profile == now->slot[i].profile && b->slot[j].start == now->slot[i].start) {
          found = true;
          kept += prev[gi][j].prev >= 0 && g->unit[i].workload >= 0 &&
                  strcmp(p->f->prev[prev[gi][j].prev], p->w->w[g->unit[i].workload].name) == 0;
        }
      r->created += !found;
    }
    for (unsigned j = 0; j < b->n; j++) {
      bool found = false;
      for (unsigned i = 0; i < now->n && !found; i++)
        found = b->slot[j].profile == now->slot[i].profile && b->slot[j].start == now->slot[i].start;
      r->destroyed += !found;
      if (prev_count && prev[gi][j].prev >= 0)
        prev_count[prev[gi][j].prev]++;
    }
  }
  /* A replica that ran before and still exists but not on its instance moved. */
  for (unsigned w = 0; w < p->w->n && prev_count; w++)
    for (unsigned i = 0; i < p->f->nprev; i++)
      if (strcmp(p->f->prev[i], p->w->w[w].name) == 0)
        had += prev_count[i] < p->w->w[w].replicas ? prev_count[i] : p->w->w[w].replicas;
  r->moved = had > kept ? had - kept : 0;
  free(prev_count);
}

static void measure(const struct plan *p, struct gs_plan_result *r)
{
  double alloc = 0;
  for (unsigned gi = 0; gi < p->f->ngpu; gi++) {
    const struct gs_plan_gpu *g = &p->f->gpu[gi];
    unsigned busy = 0, fs, fr;
    for (unsigned i = 0; i < g->nunit; i++) {
      if (g->unit[i].workload < 0)
        continue;
      busy++;
      alloc += g->mode == GS_PLAN_MIG ? (double)g->layout.slot[i].profile->compute_slices /
                                            g->model->compute_slices
                                      : g->unit[i].milli / 1000.0;
    }
    if (!busy)
      continue;
    r->gpus_used++;
    if (g->mode == GS_PLAN_MIG) {
      gs__plan_mig_frag(p, p->gpu_model[gi], &g->layout, &fs, &fr);
      r->free_slices += fs;
      r->frag_slices += fr;
    } else {
      r->frag_shared += gs__plan_frag(p, g, p->gpu_model[gi]);
    }
  }
  r->compute_alloc = r->gpus_used ? alloc / r->gpus_used : 0;
}

/* ---- the run ---- */

static int prepare(struct gs_err *err, struct plan *p)
{
  int rc;
  if (!(p->gpu_model = calloc(p->f->ngpu ? p->f->ngpu : 1, sizeof(unsigned))))
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory for %u GPUs", p->f->ngpu);
  for (unsigned gi = 0; gi < p->f->ngpu; gi++) {
    int mi = gs__plan_model_index(p, p->f->gpu[gi].model);
    if (mi < 0)
      return gs_err_set(err, GS_E_INVALID_ARGUMENT, "the fleet has more than %u GPU models",
                        GS__PLAN_MAX_MODELS);
    p->gpu_model[gi] = (unsigned)mi;
  }
  if ((rc = gs__plan_kinds(err, p)) != 0)
    return rc;
  gs__plan_requested(p);
  return 0;
}

static int place_all(struct gs_err *err, struct plan *p, const struct demand *d, unsigned n,
                     struct gs_plan_result *r)
{
  int rc = 0;
  if (n && !(r->unplaced = calloc(n, sizeof(*r->unplaced))))
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory for %u replicas", n);
  for (unsigned i = 0; i < n && !rc; i++) {
    struct gs_plan_unplaced *u;
    if (place(p, &d[i], err, &rc))
      continue;
    if (p->o->policy == GS_PLAN_OURS && repair(p, &d[i], err, &rc))
      continue;
    u = &r->unplaced[r->nunplaced++];
    u->workload = (int)d[i].workload;
    u->replica = d[i].replica;
    reason(p, &d[i], u->reason, sizeof(u->reason));
  }
  return rc;
}

int gs_plan_run(struct gs_err *err, const struct gs_plan_workloads *w, struct gs_plan_fleet *f,
                const struct gs_plan_options *o, struct gs_plan_result *r)
{
  struct plan p = {.w = w, .f = f, .o = o};
  struct gs_geom_layout *before = calloc(f->ngpu ? f->ngpu : 1, sizeof(*before));
  struct gs_plan_unit(*prev)[GS_GEOM_MAX_INSTANCES] = calloc(f->ngpu ? f->ngpu : 1, sizeof(*prev));
  unsigned *kept = calloc(w->n ? w->n : 1, sizeof(unsigned)), nd = 0;
  struct demand *d = NULL;
  int rc;
  memset(r, 0, sizeof(*r));
  if (o->policy == GS_PLAN_FGD || o->policy == GS_PLAN_RANDOM) {
    rc = gs_err_set(err, GS_E_INVALID_ARGUMENT, "policy %s replays traces only (`gpuslice plan replay`); "
                    "plan workloads with ours, first-fit or best-fit", gs_plan_policy_name(o->policy));
    goto out;
  }
  if (!before || !prev || !kept) {
    rc = gs_err_set(err, GS_E_NO_MEMORY, "out of memory for %u GPUs", f->ngpu);
    goto out;
  }
  for (unsigned gi = 0; gi < f->ngpu; gi++) {
    before[gi] = f->gpu[gi].mode == GS_PLAN_MIG ? f->gpu[gi].layout : (struct gs_geom_layout){0};
    memcpy(prev[gi], f->gpu[gi].unit, sizeof(prev[gi]));
    if (!o->incremental && f->gpu[gi].mode != GS_PLAN_FREE) {
      f->gpu[gi].mode = GS_PLAN_FREE;
      f->gpu[gi].layout.n = f->gpu[gi].nunit = 0;
      f->gpu[gi].used_milli = f->gpu[gi].used_mib = 0;
    }
  }
  if ((rc = prepare(err, &p)) != 0)
    goto out;
  if (o->incremental)
    keep_current(&p, kept);
  if ((rc = make_demands(err, &p, kept, &d, &nd)) != 0 || (rc = gs__plan_classes_init(err, &p)) != 0 ||
      (rc = place_all(err, &p, d, nd, r)) != 0)
    goto out;
  count_changes(&p, before, (const struct gs_plan_unit(*)[GS_GEOM_MAX_INSTANCES])prev, r);
  measure(&p, r);
out:
  if (rc)
    gs_plan_result_free(r);
  gs__plan_classes_free(&p);
  free(p.gpu_model);
  free(p.kind_of);
  free(p.kinds);
  free(d);
  free(before);
  free(prev);
  free(kept);
  return rc;
}

void gs_plan_result_free(struct gs_plan_result *r)
{
  if (!r)
    return;
  free(r->unplaced);
  memset(r, 0, sizeof(*r));
}
