/* SPDX-License-Identifier: Apache-2.0 */
/* replay_ours.c: ours in the trace replay. FGD's principle (place where the
 * expected fragmentation grows least, over the trace's task kinds) with
 * three changes: each kind weighs by how scarce the GPU it can still use
 * has become (a kind that only a few nodes can host, by GPU model, CPU or
 * memory, weighs more); a node short of a kind's memory cannot host it (FGD
 * checks CPU only); on MIG a GPU counts for a kind as many of its profile
 * as still fit, not all its free compute. Ties on fractional GPUs go to the
 * move that strands least GPU for lack of CPU or memory. The run, the
 * filters and the choice between nodes are replay.c's. */
#include "plan/replay.h"

#include <math.h>

/* Weights are refreshed when one drifts by more than this fraction: each
 * refresh rescores every node, and finer steps change no result by more
 * than 0.02 points (docs/plan.md). */
#define DRIFT 0.05

/* The GPU thousandths one task of kind k takes. */
static double take(const struct replay *r, unsigned k)
{
  const struct rp_kind *x = &r->kind[k];
  return (double)x->ngpu * (r->mode == GS_PLAN_REPLAY_MIG ? gs__rp_mig_take(r, k) : x->milli);
}

double gs__rp_ours_measure(const struct replay *r, unsigned model, int cpu, int mem, const unsigned *left,
                           const uint32_t *state, unsigned n, double *use)
{
  double out = 0;
  unsigned total = 0;
  for (unsigned g = 0; g < n; g++)
    total += left[g];
  for (unsigned i = 0; i < r->ntypical; i++) {
    const struct rp_kind *k = &r->kind[r->typical[i]];
    unsigned fit = 0, u = 0;
    if (k->milli && (k->models & (1u << model)) && cpu >= k->cpu && mem >= k->mem)
      for (unsigned g = 0; g < n; g++) {
        unsigned ug = state ? gs__rp_mig_usable(r, state[g], r->typical[i]) : left[g] >= k->milli ? left[g] : 0;
        fit += ug > 0;
        u += ug;
      }
    u = fit >= k->ngpu ? u : 0;
    out += k->w * (total - u);
    if (use)
      use[i] = u;
  }
  return out;
}

void gs__rp_ours_refresh(struct replay *r, unsigned ni)
{
  const struct rp_node *n = &r->node[ni];
  double *use = &r->use[(size_t)ni * r->ntypical];
  for (unsigned i = 0; i < r->ntypical; i++)
    r->usable[i] -= use[i];
  r->ofrag[ni] = gs__rp_ours_measure(r, n->model, n->cpu, n->mem, &r->left[n->first],
                                     r->mode == GS_PLAN_REPLAY_MIG ? gs__rp_mig_states(r, ni) : NULL, n->ngpu, use);
  for (unsigned i = 0; i < r->ntypical; i++)
    r->usable[i] += use[i];
}

/* Kind i's weight now: FGD's share p over the fraction of the cluster's
 * free GPU that it can still use (at least one task's worth). At the start
 * that is the share of GPUs on nodes able to host it at all; as a kind's
 * nodes fill, its weight grows and other tasks are kept off them. */
static double weight(const struct replay *r, unsigned i, double free_gpu)
{
  const struct rp_kind *k = &r->kind[r->typical[i]];
  double least = take(r, r->typical[i]);
  if (!k->milli)
    return k->p; /* all free GPU is fragmentation to a CPU task, on any node */
  return k->p * free_gpu / (r->usable[i] > least ? r->usable[i] : least);
}

void gs__rp_ours_reweigh(struct replay *r, bool force)
{
  double free_gpu = 0;
  bool drift = force;
  for (unsigned ni = 0; ni < r->nnode; ni++)
    free_gpu += r->node[ni].left_total;
  for (unsigned i = 0; i < r->ntypical && !drift; i++) {
    double w = r->kind[r->typical[i]].w;
    drift = fabs(weight(r, i, free_gpu) - w) > DRIFT * w;
  }
  if (!drift)
    return;
  for (unsigned i = 0; i < r->ntypical; i++)
    r->kind[r->typical[i]].w = weight(r, i, free_gpu);
  for (unsigned ni = 0; ni < r->nnode; ni++) {
    const struct rp_node *n = &r->node[ni];
    r->node[ni].version++; /* cached moves were scored with the old weights */
    r->ofrag[ni] = gs__rp_ours_measure(r, n->model, n->cpu, n->mem, &r->left[n->first],
                                       r->mode == GS_PLAN_REPLAY_MIG ? gs__rp_mig_states(r, ni) : NULL, n->ngpu,
                                       NULL);
  }
}

/* The node's free GPU that its free CPU (or memory) could not feed if the
 * coming tasks ask CPU (memory) per GPU as the trace's GPU tasks do on
 * average: GPU stranded for lack of CPU or memory, thousandths. */
static double stranded(const struct replay *r, int cpu, int mem, double left)
{
  double by_cpu = left - cpu / r->cpu_per_gpu, by_mem = left - mem / r->mem_per_gpu;
  return (by_cpu > 0 ? by_cpu : 0) + (by_mem > 0 ? by_mem : 0);
}

/* The growth of ours' measure scored as FGD scores it (rounded, so that
 * near-equal moves tie and go to the lowest rank, which packs nodes in one
 * order and keeps others whole); among equal scores, on fractional GPUs,
 * the move that strands least GPU (whole thousandths), then the GPU left
 * with least free. On MIG the stranding tie-break is left out: there it
 * lost 0.1 to 0.3 points on the default trace's seeds 1-4 (docs/plan.md). */
double gs__rp_ours_score(const struct replay *r, unsigned ni, const struct rp_pod *p, double measure_after,
                         unsigned taken, unsigned gpu_left_after)
{
  const struct rp_node *n = &r->node[ni];
  double key = gs__rp_fgd_score(r->ofrag[ni], measure_after) * 1e9 - gpu_left_after;
  if (r->mode == GS_PLAN_REPLAY_FRACTIONAL)
    key -= 1e4 * round(stranded(r, n->cpu - p->cpu, n->mem - p->mem, (double)n->left_total - taken) -
                       stranded(r, n->cpu, n->mem, n->left_total));
  return key;
}
