/* SPDX-License-Identifier: Apache-2.0 */
/* replay_mig.c: the trace replay on a MIG fleet of the same size: GPUs of
 * nodes whose model has 32 GB or more (V100M32, A10, G3) become H100-80GB,
 * the others A100-40GB; a share s of a GPU becomes the smallest plain
 * 1g/2g/3g/4g/7g profile with ceil(7 s) compute slices, placed at a legal
 * start beside the GPU's instances (the geometry decides); whole GPUs take
 * empty GPUs. A GPU's layout is an interned state whose legal starts per
 * profile and successors are computed once. FGD adapted to MIG scores with
 * the same measure, where a GPU fits a kind when its profile can be placed. */
#include "plan/replay.h"

#include <stdlib.h>
#include <string.h>

#define NPROF 5               /* 1g, 2g, 3g, 4g, 7g */
#define STATE_HASH (1u << 14)

struct mig_state {
  unsigned model;             /* 0: A100-40GB, 1: H100-80GB */
  struct gs_geom_layout l;
  unsigned free_milli;        /* free compute, thousandths */
  uint16_t starts[NPROF];     /* legal starts of each profile beside l, a bit each */
  uint8_t room[NPROF];        /* how many more of each profile fit beside l */
  int next[NPROF][GS_GEOM_MAX_GRID]; /* the state after adding profile at start; -1: not yet known */
};

struct rp_mig {
  const struct gs_geom_model *model[2];
  const struct gs_geom_gi_profile *prof[2][NPROF];
  struct mig_state *state;
  unsigned nstate, cap;
  unsigned hash[STATE_HASH];  /* state index + 1; 0: empty */
  uint32_t *gpu;              /* per GPU: its state */
  unsigned empty[2], full[2]; /* the empty and the whole-7g state of each model */
  uint8_t *prof_of;           /* per kind: index of its profile (the same on both models) */
};

static uint64_t layout_key(unsigned model, const struct gs_geom_model *m, const struct gs_geom_layout *l)
{
  unsigned v[GS_GEOM_MAX_INSTANCES];
  uint64_t key = model + 1;
  for (unsigned i = 0; i < l->n; i++) {
    unsigned x = (unsigned)(l->slot[i].profile - m->gi) << 4 | (unsigned)l->slot[i].start, j = i;
    for (; j > 0 && v[j - 1] > x; j--)
      v[j] = v[j - 1];
    v[j] = x;
  }
  for (unsigned i = 0; i < l->n; i++)
    key = key * 1031 + v[i] + 1;
  return key;
}

/* The state of layout l on model mi, interned; -1 when out of memory. */
static int intern(struct rp_mig *g, unsigned mi, const struct gs_geom_layout *l)
{
  const struct gs_geom_model *m = g->model[mi];
  uint64_t key = layout_key(mi, m, l);
  unsigned h = (unsigned)(key ^ key >> 21) & (STATE_HASH - 1), used = 0;
  struct mig_state *s;
  for (; g->hash[h]; h = (h + 1) & (STATE_HASH - 1)) {
    s = &g->state[g->hash[h] - 1];
    if (layout_key(s->model, g->model[s->model], &s->l) == key)
      return (int)g->hash[h] - 1;
  }
  if (g->nstate == g->cap) {
    if (g->cap >= STATE_HASH / 2 || !(s = realloc(g->state, (g->cap ? g->cap * 2 : 256) * sizeof(*s))))
      return -1;
    g->state = s;
    g->cap = g->cap ? g->cap * 2 : 256;
  }
  s = &g->state[g->nstate];
  memset(s, 0, sizeof(*s));
  s->model = mi;
  s->l = *l;
  for (unsigned i = 0; i < l->n; i++)
    used += l->slot[i].profile->compute_slices;
  s->free_milli = (m->compute_slices - used) * 1000 / m->compute_slices;
  for (unsigned p = 0; p < NPROF; p++) {
    for (unsigned st = 0; st < GS_GEOM_MAX_GRID; st++) {
      s->next[p][st] = -1;
      if ((g->prof[mi][p]->starts & (1u << st)) && gs_geom_check_add(NULL, m, l, g->prof[mi][p], st) == 0)
        s->starts[p] |= (uint16_t)(1u << st);
    }
    s->room[p] = (uint8_t)gs_geom_remaining(m, l, g->prof[mi][p]);
  }
  g->hash[h] = ++g->nstate;
  return (int)g->nstate - 1;
}

static int successor(struct rp_mig *g, unsigned s, unsigned p, unsigned st)
{
  struct gs_geom_layout l;
  int n;
  if (g->state[s].next[p][st] >= 0)
    return g->state[s].next[p][st];
  l = g->state[s].l;
  l.slot[l.n].profile = g->prof[g->state[s].model][p];
  l.slot[l.n++].start = (int)st;
  n = intern(g, g->state[s].model, &l); /* may move g->state */
  if (n >= 0)
    g->state[s].next[p][st] = n;
  return n;
}

/* The plain profile of m with at least `slices` compute slices, smallest first. */
static const struct gs_geom_gi_profile *plain(const struct gs_geom_model *m, unsigned slices)
{
  const struct gs_geom_gi_profile *best = NULL;
  for (unsigned i = 0; i < m->ngi; i++) {
    const struct gs_geom_gi_profile *p = &m->gi[i];
    if (p->media != GS_GEOM_MEDIA_SHARED || p->gfx || p->nvml_enum > 4 || p->compute_slices < slices)
      continue;
    if (!best || p->compute_slices < best->compute_slices)
      best = p;
  }
  return best;
}

int gs__rp_mig_init(struct gs_err *err, struct replay *r)
{
  static const unsigned slices[NPROF] = {1, 2, 3, 4, 7};
  struct rp_mig *g = r->mig = calloc(1, sizeof(*r->mig));
  if (!g || !(g->gpu = calloc(r->ngpu, sizeof(*g->gpu))) || !(g->prof_of = calloc(r->nkind, 1)))
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory for the MIG replay");
  g->model[0] = gs_geom_model_find("a100-40gb");
  g->model[1] = gs_geom_model_find("h100-80gb");
  if (!g->model[0] || !g->model[1])
    return gs_err_set(err, GS_E_NOT_FOUND, "geometry lacks a100-40gb or h100-80gb");
  for (unsigned mi = 0; mi < 2; mi++) {
    struct gs_geom_layout l = {0};
    int e, s;
    for (unsigned p = 0; p < NPROF; p++)
      if (!(g->prof[mi][p] = plain(g->model[mi], slices[p])) || g->prof[mi][p]->compute_slices != slices[p])
        return gs_err_set(err, GS_E_NOT_FOUND, "%s has no plain %ug profile", g->model[mi]->key, slices[p]);
    if ((e = intern(g, mi, &l)) < 0 || (s = successor(g, (unsigned)e, NPROF - 1, 0)) < 0)
      return gs_err_set(err, GS_E_NO_MEMORY, "out of memory for the MIG states");
    g->empty[mi] = (unsigned)e;
    g->full[mi] = (unsigned)s;
  }
  for (unsigned k = 0; k < r->nkind; k++) {
    unsigned need = (r->kind[k].milli * 7 + 999) / 1000, p = 0;
    while (p + 1 < NPROF && slices[p] < need)
      p++;
    g->prof_of[k] = (uint8_t)p;
  }
  return 0;
}

static bool big(const struct replay *r, unsigned ni)
{
  const char *m = r->model_name[r->node[ni].model];
  return strcmp(m, "V100M32") == 0 || strcmp(m, "A10") == 0 || strcmp(m, "G3") == 0;
}

void gs__rp_mig_reset(struct replay *r)
{
  for (unsigned ni = 0; ni < r->nnode; ni++)
    for (unsigned gi = r->node[ni].first; gi < r->node[ni].first + r->node[ni].ngpu; gi++)
      r->mig->gpu[gi] = r->mig->empty[big(r, ni)];
}

void gs__rp_mig_free(struct replay *r)
{
  if (!r->mig)
    return;
  free(r->mig->state);
  free(r->mig->gpu);
  free(r->mig->prof_of);
  free(r->mig);
  r->mig = NULL;
}

const uint32_t *gs__rp_mig_states(const struct replay *r, unsigned ni)
{
  return &r->mig->gpu[r->node[ni].first];
}

unsigned gs__rp_mig_take(const struct replay *r, unsigned k)
{
  const struct gs_geom_gi_profile *p = r->mig->prof[0][r->mig->prof_of[k]];
  return r->kind[k].milli == 1000 ? 1000 : p->compute_slices * 1000 / r->mig->model[0]->compute_slices;
}

bool gs__rp_mig_fits(const struct replay *r, uint32_t s, unsigned k)
{
  const struct rp_mig *g = r->mig;
  if (r->kind[k].milli == 1000)
    return s == g->empty[g->state[s].model];
  return g->state[s].starts[g->prof_of[k]] != 0;
}

unsigned gs__rp_mig_usable(const struct replay *r, uint32_t s, unsigned k)
{
  const struct rp_mig *g = r->mig;
  if (r->kind[k].milli == 1000)
    return s == g->empty[g->state[s].model] ? 1000 : 0;
  return g->state[s].room[g->prof_of[k]] * gs__rp_mig_take(r, k);
}

/* The node's fragmentation (ours: ours' measure) after GPU gi (an index on
 * the node) moves to state s. */
static double frag_after(const struct replay *r, unsigned ni, const struct rp_pod *p, unsigned gi, unsigned s)
{
  const struct rp_node *n = &r->node[ni];
  unsigned left[RP_MAX_GPUS];
  uint32_t st[RP_MAX_GPUS];
  memcpy(left, &r->left[n->first], n->ngpu * sizeof(unsigned));
  memcpy(st, &r->mig->gpu[n->first], n->ngpu * sizeof(uint32_t));
  if (p->milli == 1000) {
    for (unsigned i = 0, k = 0; i < n->ngpu && k < p->ngpu; i++)
      if (st[i] == r->mig->empty[r->mig->state[st[i]].model])
        st[i] = r->mig->full[r->mig->state[st[i]].model], left[i] = 0, k++;
  } else {
    st[gi] = s;
    left[gi] = r->mig->state[s].free_milli;
  }
  if (r->pol == GS_PLAN_OURS)
    return gs__rp_ours_measure(r, n->model, n->cpu - p->cpu, n->mem - p->mem, left, st, n->ngpu, NULL);
  return gs__rp_frag(r, n->model, n->cpu - p->cpu, left, st, n->ngpu);
}

/* FGD's score or ours, as on fractional GPUs; a move takes the compute of
 * its profile (whole GPUs for whole-GPU tasks). */
static double score_of(const struct replay *r, unsigned ni, const struct rp_pod *p, unsigned gi, unsigned s)
{
  const struct rp_node *n = &r->node[ni];
  double after = frag_after(r, ni, p, gi, s);
  if (r->pol == GS_PLAN_FGD)
    return gs__rp_fgd_score(r->frag[ni], after);
  if (p->milli == 1000)
    return gs__rp_ours_score(r, ni, p, after, p->ngpu * 1000, 0);
  return gs__rp_ours_score(r, ni, p, after, r->left[n->first + gi] - r->mig->state[s].free_milli,
                           r->mig->state[s].free_milli);
}

/* Every legal (GPU, start) of the task's profile on the node, by policy. */
static bool eval_share(struct replay *r, unsigned ni, const struct rp_pod *p, struct rp_move *mv)
{
  const struct rp_node *n = &r->node[ni];
  struct rp_mig *g = r->mig;
  unsigned prof = g->prof_of[p->kind], seen = 0;
  for (unsigned gi = 0; gi < n->ngpu; gi++) {
    uint32_t s = g->gpu[n->first + gi];
    bool dup = false;
    if (!g->state[s].starts[prof])
      continue;
    for (unsigned h = 0; h < gi && !dup; h++)
      dup = g->gpu[n->first + h] == s && r->pol != GS_PLAN_RANDOM;
    for (unsigned st = 0; st < GS_GEOM_MAX_GRID && !dup; st++) {
      int next;
      double sc;
      if (!(g->state[s].starts[prof] & (1u << st)) || (next = successor(g, s, prof, st)) < 0)
        continue;
      if (r->pol == GS_PLAN_FIRST_FIT) {
        *mv = (struct rp_move){.gpu = (int)gi, .start = (int)st};
        return true;
      }
      if (r->pol == GS_PLAN_RANDOM || r->pol == GS_PLAN_BEST_FIT) {
        bool take = r->pol == GS_PLAN_RANDOM ? gs__rp_below(r, ++seen) == 0
                                             : mv->gpu < 0 || g->state[s].free_milli < r->left[n->first + (unsigned)mv->gpu];
        if (take)
          *mv = (struct rp_move){.gpu = (int)gi, .start = (int)st};
        break; /* first legal start */
      }
      sc = score_of(r, ni, p, gi, (unsigned)next);
      if (mv->gpu < 0 || sc > mv->score)
        *mv = (struct rp_move){.gpu = (int)gi, .start = (int)st, .score = sc};
    }
  }
  return mv->gpu >= 0;
}

bool gs__rp_mig_eval(struct replay *r, unsigned ni, const struct rp_pod *p, struct rp_move *mv)
{
  *mv = (struct rp_move){.gpu = -1, .start = -1};
  if (!p->ngpu)
    return true;
  if (p->milli < 1000)
    return eval_share(r, ni, p, mv);
  if (r->pol == GS_PLAN_FGD || r->pol == GS_PLAN_OURS)
    mv->score = score_of(r, ni, p, 0, 0);
  return true;
}

void gs__rp_mig_apply(struct replay *r, unsigned ni, const struct rp_pod *p, const struct rp_move *mv)
{
  const struct rp_node *n = &r->node[ni];
  struct rp_mig *g = r->mig;
  if (mv->gpu >= 0) {
    unsigned gi = n->first + (unsigned)mv->gpu;
    int s = successor(g, g->gpu[gi], g->prof_of[p->kind], (unsigned)mv->start);
    if (s >= 0) { /* eval found it already interned */
      g->gpu[gi] = (uint32_t)s;
      r->left[gi] = g->state[s].free_milli;
    }
    return;
  }
  for (unsigned gi = n->first, k = 0; gi < n->first + n->ngpu && k < p->ngpu; gi++)
    if (g->gpu[gi] == g->empty[g->state[g->gpu[gi]].model])
      g->gpu[gi] = g->full[g->state[g->gpu[gi]].model], r->left[gi] = 0, k++;
}
