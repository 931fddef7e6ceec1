/* fit.c: the exact single-GPU search (every candidate profile at every legal
 * start, by backtracking, with geometry's check_add deciding each step) and
 * the repair that uses it when the greedy pass leaves a replica out: the
 * GPU's replicas plus the new one are laid out again from scratch. */
#include "plan/internal.h"

#include <string.h>

struct search {
  const struct gs_geom_model *m;
  const struct gs_plan_demand *d;
  unsigned order[GS_GEOM_MAX_INSTANCES];
  unsigned nd, base;
  unsigned code[GS_GEOM_MAX_INSTANCES]; /* candidate * grid + start of each placed demand */
  struct gs_geom_layout l;
};

static bool same_demand(const struct gs_plan_demand *a, const struct gs_plan_demand *b)
{
  return a->ncand == b->ncand && memcmp(a->cand, b->cand, a->ncand * sizeof(a->cand[0])) == 0;
}

static bool dfs(struct search *s, unsigned k)
{
  const struct gs_plan_demand *d;
  unsigned lo = 0;
  if (k == s->nd)
    return true;
  d = &s->d[s->order[k]];
  /* Identical demands are interchangeable: place them in increasing order. */
  if (k > 0 && same_demand(d, &s->d[s->order[k - 1]]))
    lo = s->code[k - 1] + 1;
  for (unsigned c = 0; c < d->ncand; c++) {
    unsigned starts[GS_GEOM_MAX_GRID], ns = gs_geom_gi_starts(d->cand[c], starts);
    for (unsigned i = 0; i < ns; i++) {
      unsigned code = c * GS_GEOM_MAX_GRID + starts[i];
      if (code < lo || gs_geom_check_add(NULL, s->m, &s->l, d->cand[c], starts[i]) != 0)
        continue;
      s->l.slot[s->l.n].profile = d->cand[c];
      s->l.slot[s->l.n].start = (int)starts[i];
      s->l.n++;
      s->code[k] = code;
      if (dfs(s, k + 1))
        return true;
      s->l.n--;
    }
  }
  return false;
}

/* Demands with the fewest, biggest choices first; equal ones side by side. */
static int order_cmp(const struct gs_plan_demand *a, const struct gs_plan_demand *b)
{
  if (a->cand[0]->span != b->cand[0]->span)
    return a->cand[0]->span > b->cand[0]->span ? -1 : 1;
  if (a->ncand != b->ncand)
    return a->ncand < b->ncand ? -1 : 1;
  return memcmp(a->cand, b->cand, a->ncand * sizeof(a->cand[0]));
}

bool gs_plan_fit_one(const struct gs_geom_model *m, const struct gs_geom_layout *base,
                     const struct gs_plan_demand *d, unsigned nd, struct gs_geom_layout *out,
                     unsigned *choice)
{
  struct search s = {.m = m, .d = d, .nd = nd};
  if (base)
    s.l = *base;
  s.base = s.l.n;
  if (nd + s.base > GS_GEOM_MAX_INSTANCES)
    return false;
  for (unsigned i = 0; i < nd; i++) {
    unsigned j = i;
    if (d[i].ncand == 0)
      return false;
    for (; j > 0 && order_cmp(&d[i], &d[s.order[j - 1]]) < 0; j--)
      s.order[j] = s.order[j - 1];
    s.order[j] = i;
  }
  if (!dfs(&s, 0))
    return false;
  /* Slots back in demand order, after the base. */
  *out = s.l;
  for (unsigned k = 0; k < nd; k++) {
    unsigned i = s.order[k];
    out->slot[s.base + i] = s.l.slot[s.base + k];
    if (choice)
      choice[i] = s.code[k] / GS_GEOM_MAX_GRID;
  }
  return true;
}

bool gs__plan_repair(struct plan *p, unsigned g, const struct demand *nd)
{
  struct gs_plan_gpu *gpu = &p->f->gpu[g];
  unsigned mi = p->gpu_model[g], n = 0;
  struct gs_plan_demand d[GS_GEOM_MAX_INSTANCES];
  struct gs_plan_unit units[GS_GEOM_MAX_INSTANCES];
  struct gs_geom_layout out;
  const struct kind *k;
  if (gpu->mode != GS_PLAN_MIG)
    return false;
  for (unsigned i = 0; i < gpu->nunit; i++) {
    if (gpu->unit[i].workload < 0)
      continue; /* an idle instance: the new layout drops it */
    k = &p->kinds[p->kind_of[gpu->unit[i].workload]];
    memcpy(d[n].cand, k->cand[mi], k->ncand[mi] * sizeof(k->cand[mi][0]));
    d[n].ncand = k->ncand[mi];
    units[n++] = gpu->unit[i];
  }
  k = &p->kinds[nd->kind];
  if (n == GS_GEOM_MAX_INSTANCES || !k->ncand[mi])
    return false;
  memcpy(d[n].cand, k->cand[mi], k->ncand[mi] * sizeof(k->cand[mi][0]));
  d[n].ncand = k->ncand[mi];
  memset(&units[n], 0, sizeof(units[n]));
  units[n].workload = (int)nd->workload;
  units[n].replica = nd->replica;
  units[n].prev = -1;
  n++;
  if (!gs_plan_fit_one(gpu->model, NULL, d, n, &out, NULL))
    return false;
  gpu->layout = out;
  gpu->nunit = n;
  for (unsigned i = 0; i < n; i++) {
    gpu->unit[i] = units[i];
    gpu->unit[i].memory_mib = out.slot[i].profile->memory_mib;
  }
  return true;
}
