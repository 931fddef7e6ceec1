/* SPDX-License-Identifier: Apache-2.0 */
/* fit.c: the exact single-GPU search (every candidate profile at every legal
 * start, by backtracking, with geometry's check_add deciding each step) and
 * the repair that uses it when the greedy pass leaves a replica out: the
 * GPU's replicas plus the new one are laid out again, keeping as many of its
 * instances where they are as any such layout can. */
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

/* Lays GPU g out again with the replicas in units[0..n) and the new one
 * (units[n]), keeping the instances in `keep` (a bit per unit) where they
 * are; idle instances not kept are dropped. True when it fits. */
static bool relayout(struct plan *p, unsigned g, const struct gs_plan_unit *units,
                     const struct gs_geom_slot *slots, unsigned n, unsigned keep,
                     const struct kind *const *kinds)
{
  struct gs_plan_gpu *gpu = &p->f->gpu[g];
  unsigned mi = p->gpu_model[g], nd = 0, nb = 0, order[GS_GEOM_MAX_INSTANCES + 1];
  struct gs_plan_demand d[GS_GEOM_MAX_INSTANCES];
  struct gs_geom_layout base = {0}, out;
  struct gs_plan_unit next[GS_GEOM_MAX_INSTANCES];
  for (unsigned i = 0; i < n; i++)
    if (keep & (1u << i)) {
      base.slot[base.n++] = slots[i];
      next[nb++] = units[i];
    }
  for (unsigned i = 0; i <= n; i++) {
    if ((keep & (1u << i)) || (i < n && units[i].workload < 0))
      continue;
    if (nb + nd == GS_GEOM_MAX_INSTANCES)
      return false;
    memcpy(d[nd].cand, kinds[i]->cand[mi], kinds[i]->ncand[mi] * sizeof(d[nd].cand[0]));
    d[nd].ncand = kinds[i]->ncand[mi];
    order[nd++] = i;
  }
  if (!gs_plan_fit_one(gpu->model, &base, d, nd, &out, NULL))
    return false;
  for (unsigned k = 0; k < nd; k++)
    next[nb + k] = units[order[k]];
  gpu->layout = out;
  gpu->nunit = out.n;
  for (unsigned i = 0; i < out.n; i++) {
    gpu->unit[i] = next[i];
    gpu->unit[i].memory_mib = out.slot[i].profile->memory_mib;
  }
  return true;
}

static unsigned popcount(unsigned v)
{
  unsigned c = 0;
  for (; v; v &= v - 1)
    c++;
  return c;
}

bool gs__plan_repair(struct plan *p, unsigned g, const struct demand *nd)
{
  struct gs_plan_gpu *gpu = &p->f->gpu[g];
  unsigned mi = p->gpu_model[g], n = gpu->nunit;
  struct gs_plan_unit units[GS_GEOM_MAX_INSTANCES + 1];
  struct gs_geom_slot slots[GS_GEOM_MAX_INSTANCES];
  const struct kind *kinds[GS_GEOM_MAX_INSTANCES + 1];
  if (gpu->mode != GS_PLAN_MIG || !p->kinds[nd->kind].ncand[mi] || n > GS_GEOM_MAX_INSTANCES)
    return false;
  for (unsigned i = 0; i < n; i++) {
    units[i] = gpu->unit[i];
    slots[i] = gpu->layout.slot[i];
    kinds[i] = units[i].workload >= 0 ? &p->kinds[p->kind_of[units[i].workload]] : NULL;
  }
  memset(&units[n], 0, sizeof(units[n]));
  units[n].workload = (int)nd->workload;
  units[n].replica = nd->replica;
  units[n].prev = -1;
  kinds[n] = &p->kinds[nd->kind];
  /* Fewest changes first: keep as many instances in place as any layout
   * that takes the new replica can (at most 2^8 tries of a small search). */
  for (unsigned k = n + 1; k-- > 0;)
    for (unsigned keep = 0; keep < (1u << n); keep++)
      if (popcount(keep) == k && relayout(p, g, units, slots, n, keep, kinds))
        return true;
  return false;
}
