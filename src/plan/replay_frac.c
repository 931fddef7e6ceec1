/* SPDX-License-Identifier: Apache-2.0 */
/* replay_frac.c: the trace replay on the trace's own GPUs, each task taking
 * its fractional share of one GPU (MPS / time-slicing) or whole GPUs: FGD's
 * fragmentation measure and, per policy, a node's best move for a task.
 * The run, the filters and the choice between nodes are replay.c's. */
#include "plan/replay.h"

#include <string.h>

/* The node's fragmentation (ours: ours' measure) after p takes GPU g (-1:
 * its whole GPUs, lowest free first). */
static double frag_after(const struct replay *r, const struct rp_node *n, const struct rp_pod *p, int g)
{
  unsigned after[RP_MAX_GPUS], k = 0;
  memcpy(after, &r->left[n->first], n->ngpu * sizeof(unsigned));
  if (g >= 0)
    after[g] -= p->milli;
  else
    for (unsigned i = 0; i < n->ngpu && k < p->ngpu; i++)
      if (after[i] == 1000)
        after[i] = 0, k++;
  if (r->pol == GS_PLAN_OURS)
    return gs__rp_ours_measure(r, n->model, n->cpu - p->cpu, n->mem - p->mem, after, NULL, n->ngpu, NULL);
  return gs__rp_frag(r, n->model, n->cpu - p->cpu, after, NULL, n->ngpu);
}

static double score_of(const struct replay *r, unsigned ni, const struct rp_pod *p, int g)
{
  const struct rp_node *n = &r->node[ni];
  double after = frag_after(r, n, p, g);
  if (r->pol == GS_PLAN_FGD)
    return gs__rp_fgd_score(r->frag[ni], after);
  return gs__rp_ours_score(r, ni, p, after, p->ngpu * p->milli,
                           g >= 0 ? r->left[n->first + (unsigned)g] - p->milli : 0);
}

bool gs__rp_frac_eval(struct replay *r, unsigned ni, const struct rp_pod *p, struct rp_move *mv)
{
  const struct rp_node *n = &r->node[ni];
  unsigned seen = 0;
  *mv = (struct rp_move){.gpu = -1};
  if (!p->ngpu || p->milli == 1000) {
    if (r->pol == GS_PLAN_FGD || r->pol == GS_PLAN_OURS)
      mv->score = score_of(r, ni, p, -1);
    return true;
  }
  for (unsigned g = 0; g < n->ngpu; g++) {
    unsigned f = r->left[n->first + g];
    bool dup = false;
    double s;
    if (f < p->milli)
      continue;
    switch (r->pol) {
    case GS_PLAN_FIRST_FIT:
      mv->gpu = (int)g;
      return true;
    case GS_PLAN_RANDOM:
      if (gs__rp_below(r, ++seen) == 0)
        mv->gpu = (int)g;
      continue;
    case GS_PLAN_BEST_FIT:
      if (mv->gpu < 0 || f < r->left[n->first + (unsigned)mv->gpu])
        mv->gpu = (int)g;
      continue;
    default:
      /* GPUs with the same free share are the same move; the first is taken. */
      for (unsigned h = 0; h < g && !dup; h++)
        dup = r->left[n->first + h] == f;
      if (dup)
        continue;
      s = score_of(r, ni, p, (int)g);
      if (mv->gpu < 0 || s > mv->score)
        mv->gpu = (int)g, mv->score = s;
    }
  }
  return mv->gpu >= 0;
}

void gs__rp_frac_apply(struct replay *r, unsigned ni, const struct rp_pod *p, const struct rp_move *mv)
{
  const struct rp_node *n = &r->node[ni];
  unsigned k = 0;
  if (mv->gpu >= 0) {
    r->left[n->first + (unsigned)mv->gpu] -= p->milli;
    return;
  }
  for (unsigned g = n->first; g < n->first + n->ngpu && k < p->ngpu; g++)
    if (r->left[g] == 1000)
      r->left[g] = 0, k++;
}
