/* SPDX-License-Identifier: Apache-2.0 */
/* pack.c: the fleet planner. Replicas become demands, demands with the same
 * needs share a kind, GPUs in the same state share a class; each demand goes
 * to the class (and placement) with the best score, so a step costs the
 * number of classes, not of GPUs. Ours scores by fragmentation growth (FGD's
 * idea over MIG slices and MPS shares) and repairs what greedy leaves out by
 * an exact search per GPU; first-fit and best-fit are the baselines.
 * Geometry decides every placement (check_add); nothing here re-derives it. */
#include "plan/internal.h"

#include <stdlib.h>
#include <string.h>

const char *gs_plan_policy_name(enum gs_plan_policy p)
{
  static const char *const names[] = {"ours", "first-fit", "best-fit", "fgd", "random"};
  return names[p];
}

const char *gs_plan_mode_name(enum gs_plan_mode m)
{
  static const char *const names[] = {"free", "mig", "mps", "time-slicing"};
  return names[m];
}

/* ---- what a replica needs on each model ---- */

/* Plain and double-memory profiles only: media and graphics variants have the
 * same shapes with extra limits, so they never let more fit. */
static bool plannable(const struct gs_geom_gi_profile *p)
{
  return p->media == GS_GEOM_MEDIA_SHARED && !p->gfx;
}

static double tput_of(const struct gs_plan_workload *w, const char *profile)
{
  for (unsigned i = 0; i < w->ntput; i++)
    if (strcasecmp(w->tput[i].profile, profile) == 0)
      return w->tput[i].value;
  return -1;
}

unsigned gs_plan_candidates(const struct gs_geom_model *m, const struct gs_plan_workload *w,
                            const struct gs_geom_gi_profile *out[GS_GEOM_MAX_GRID * 2])
{
  unsigned n = 0;
  if (w->model && w->model != m)
    return 0;
  for (unsigned i = 0; i < m->ngi && n < GS_GEOM_MAX_GRID * 2; i++) {
    const struct gs_geom_gi_profile *p = &m->gi[i];
    bool compute_ok = w->throughput ? tput_of(w, p->name) >= w->throughput
                                    : p->compute_slices * 1000u >= w->compute_milli * m->compute_slices;
    if (!plannable(p) || p->memory_mib < w->memory_mib || !compute_ok)
      continue;
    out[n++] = p;
  }
  /* Smallest first: fewest compute slices, then least memory. */
  for (unsigned i = 1; i < n; i++)
    for (unsigned j = i; j > 0 && (out[j]->compute_slices < out[j - 1]->compute_slices ||
                                   (out[j]->compute_slices == out[j - 1]->compute_slices &&
                                    out[j]->memory_mib < out[j - 1]->memory_mib));
         j--) {
      const struct gs_geom_gi_profile *x = out[j];
      out[j] = out[j - 1];
      out[j - 1] = x;
    }
  return n;
}

/* Thousandths of a GPU a soft replica needs outside MIG on m: its compute,
 * or the smallest table row meeting its throughput ("gpu" = a whole GPU,
 * a profile = its share of the compute slices). 0: none does. */
static unsigned shared_need(const struct gs_geom_model *m, const struct gs_plan_workload *w)
{
  unsigned best = 0;
  if (w->model && w->model != m)
    return 0;
  if (w->memory_mib > m->memory_mib)
    return 0;
  if (!w->throughput)
    return w->compute_milli;
  for (unsigned i = 0; i < w->ntput; i++) {
    const struct gs_geom_gi_profile *p;
    unsigned milli = 0;
    if (w->tput[i].value < w->throughput)
      continue;
    if (strcasecmp(w->tput[i].profile, "gpu") == 0)
      milli = 1000;
    else if ((p = gs_geom_gi_profile_find(m, w->tput[i].profile)))
      milli = (p->compute_slices * 1000 + m->compute_slices - 1) / m->compute_slices;
    if (milli && (!best || milli < best))
      best = milli;
  }
  return best;
}

/* ---- kinds ---- */

static int model_index(struct plan *p, const struct gs_geom_model *m)
{
  for (unsigned i = 0; i < p->nmodels; i++)
    if (p->models[i] == m)
      return (int)i;
  if (p->nmodels == GS_NITEMS(p->models))
    return -1;
  p->models[p->nmodels] = m;
  return (int)p->nmodels++;
}

static void fill_kind(const struct plan *p, const struct gs_plan_workload *w, unsigned tenant,
                      struct kind *k)
{
  memset(k, 0, sizeof(*k));
  k->soft = w->isolation == GS_PLAN_SOFT;
  k->tenant = k->soft ? tenant : 0;
  k->compute_milli = w->compute_milli;
  k->sharing = w->sharing;
  k->memory_mib = w->memory_mib;
  for (unsigned i = 0; i < p->nmodels; i++) {
    k->ncand[i] = (uint8_t)gs_plan_candidates(p->models[i], w, k->cand[i]);
    k->share[i] = k->soft ? (uint16_t)shared_need(p->models[i], w) : 0;
  }
}

static bool same_kind(const struct kind *a, const struct kind *b, unsigned nmodels)
{
  if (a->soft != b->soft || a->sharing != b->sharing || a->memory_mib != b->memory_mib ||
      a->tenant != b->tenant || a->compute_milli != b->compute_milli)
    return false;
  for (unsigned i = 0; i < nmodels; i++)
    if (a->ncand[i] != b->ncand[i] || a->share[i] != b->share[i] ||
        memcmp(a->cand[i], b->cand[i], a->ncand[i] * sizeof(a->cand[i][0])) != 0)
      return false;
  return true;
}

/* Why no model of the fleet can ever host w; 0 when one can. */
static int check_meetable(struct gs_err *err, const struct plan *p, const struct gs_plan_workload *w,
                          const struct kind *k)
{
  bool model_present = !w->model;
  for (unsigned i = 0; i < p->nmodels; i++) {
    model_present = model_present || p->models[i] == w->model;
    if (k->ncand[i] || k->share[i])
      return 0;
  }
  if (!model_present)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "workload '%s': asks for model %s, which the fleet "
                      "does not have", w->name, w->model->key);
  if (w->isolation == GS_PLAN_HARD)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT,
                      "workload '%s': no MIG profile of the fleet's GPU models meets %u MiB and %s "
                      "(isolation: hard needs MIG; use isolation: soft for MPS or a bigger GPU model)",
                      w->name, w->memory_mib, w->throughput ? "its throughput target" : "its compute");
  return gs_err_set(err, GS_E_INVALID_ARGUMENT,
                    "workload '%s': needs more than one GPU of the fleet holds (%u MiB, %s); split it "
                    "into replicas or add a bigger GPU model",
                    w->name, w->memory_mib, w->throughput ? "its throughput target" : "its compute");
}

int gs__plan_kinds(struct gs_err *err, struct plan *p)
{
  const struct gs_plan_workloads *ws = p->w;
  const char **tenants = calloc(ws->n ? ws->n : 1, sizeof(*tenants));
  unsigned ntenants = 0;
  int rc = 0;
  if (!tenants || !(p->kind_of = calloc(ws->n ? ws->n : 1, sizeof(*p->kind_of))) ||
      !(p->kinds = calloc(ws->n ? ws->n : 1, sizeof(*p->kinds)))) {
    free(tenants);
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory for %u workloads", ws->n);
  }
  for (unsigned i = 0; i < ws->n && !rc; i++) {
    struct kind k;
    unsigned j, t = 0;
    /* Tenants are few: a linear search numbers them in order of appearance. */
    while (t < ntenants && strcmp(tenants[t], ws->w[i].tenant) != 0)
      t++;
    if (t == ntenants)
      tenants[ntenants++] = ws->w[i].tenant;
    if (t > UINT16_MAX) {
      rc = gs_err_set(err, GS_E_INVALID_ARGUMENT, "workload '%s': more than %u tenants", ws->w[i].name,
                      UINT16_MAX);
      break;
    }
    fill_kind(p, &ws->w[i], t, &k);
    if ((rc = check_meetable(err, p, &ws->w[i], &k)) != 0)
      break;
    for (j = 0; j < p->nkinds && !same_kind(&p->kinds[j], &k, p->nmodels); j++)
      ;
    if (j == p->nkinds)
      p->kinds[p->nkinds++] = k;
    p->kind_of[i] = j;
  }
  free(tenants);
  return rc;
}

/* The profiles and shares some kind asks for on model mi, for fragmentation. */
void gs__plan_requested(struct plan *p)
{
  for (unsigned mi = 0; mi < p->nmodels; mi++) {
    const struct gs_geom_model *m = p->models[mi];
    for (unsigned k = 0; k < p->nkinds; k++) {
      for (unsigned c = 0; c < p->kinds[k].ncand[mi]; c++)
        p->want_mask[mi] |= 1u << (unsigned)(p->kinds[k].cand[mi][c] - m->gi);
      if (p->kinds[k].share[mi] && (!p->min_share[mi] || p->kinds[k].share[mi] < p->min_share[mi]))
        p->min_share[mi] = p->kinds[k].share[mi];
      if (p->kinds[k].share[mi] &&
          (!p->min_share_mib[mi] || p->kinds[k].memory_mib < p->min_share_mib[mi]))
        p->min_share_mib[mi] = p->kinds[k].memory_mib;
    }
  }
}

int gs__plan_model_index(struct plan *p, const struct gs_geom_model *m)
{
  return model_index(p, m);
}
