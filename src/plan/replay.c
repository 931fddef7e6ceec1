/* replay.c: replays a fractional-GPU trace in Alibaba's openb format (the
 * trace FGD was evaluated on) on its node list, in arrival order, with no
 * departures, until the arrived GPU demand reaches a multiple of capacity,
 * as FGD's simulator does. Two ways: fractional requests on the trace's own
 * GPUs (MPS/time-slicing shares), or requests mapped to MIG profiles of an
 * A100/H100 fleet of the same size. Policies: ours (FGD's fragmentation
 * gradient; for MIG, fragmentation growth over slices), first-fit, best-fit. */
#include "plan/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_GPUS_PER_NODE 16
#define MAX_TYPES 512

struct rtype {
  int cpu;
  unsigned num_gpu, milli, mslot; /* mslot: index into replay.milli for fractional types */
  double p;                       /* share of the trace's GPU tasks */
};

struct rnode {
  int cpu, mem;                 /* free */
  unsigned ngpu, first;         /* GPUs [first, first + ngpu) */
  char model[16];
};

struct rpod {
  int cpu, mem;
  unsigned num_gpu, milli;
  long created;
  char spec[48];
};

#define MIG_CACHE (1u << 16)

struct mig_eval {
  uint64_t key;                 /* state and profile; 0: empty entry */
  int start;                    /* best start, -1: none fits */
  double score;
};

struct replay {
  struct rnode *node;
  unsigned nnode;
  struct rpod *pod;
  unsigned npod;
  unsigned ngpu;
  unsigned *free_milli;         /* fractional: per GPU */
  struct gs_geom_layout *layout;/* MIG: per GPU */
  const struct gs_geom_model **model;
  bool *used;
  struct rtype type[MAX_TYPES]; /* FGD's task types: the trace's distinct GPU requests */
  unsigned ntype;
  unsigned milli[MAX_TYPES];    /* distinct fractional sizes */
  unsigned nmilli;
  struct plan mig;              /* the MIG view: models and requested profiles */
  struct mig_eval *cache;       /* per (state, profile), for the MIG replay */
  unsigned ncache;
};

/* ---- CSV ---- */

/* Splits one line in place into at most n fields; returns the count. */
static unsigned split(char *line, char **field, unsigned n)
{
  unsigned k = 0;
  while (k < n) {
    field[k++] = line;
    line = strchr(line, ',');
    if (!line)
      break;
    *line++ = 0;
  }
  return k;
}

static int read_nodes(struct gs_err *err, struct replay *r, char *text)
{
  char *save = NULL, *line = strtok_r(text, "\n", &save), *f[5];
  unsigned cap = 0;
  for (line = strtok_r(NULL, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    struct rnode *n;
    line[strcspn(line, "\r")] = 0;
    if (split(line, f, 5) != 5)
      return gs_err_set(err, GS_E_INVALID_ARGUMENT, "nodes CSV: expected sn,cpu_milli,memory_mib,gpu,model");
    if (atoi(f[3]) <= 0)
      continue;
    if (r->nnode == cap) {
      cap = cap ? cap * 2 : 1024;
      if (!(n = realloc(r->node, cap * sizeof(*n))))
        return gs_err_set(err, GS_E_NO_MEMORY, "out of memory for the node list");
      r->node = n;
    }
    n = &r->node[r->nnode++];
    n->cpu = atoi(f[1]);
    n->mem = atoi(f[2]);
    n->ngpu = (unsigned)atoi(f[3]);
    if (n->ngpu > MAX_GPUS_PER_NODE)
      return gs_err_set(err, GS_E_INVALID_ARGUMENT, "nodes CSV: %u GPUs on one node (at most %u)", n->ngpu,
                        MAX_GPUS_PER_NODE);
    n->first = r->ngpu;
    r->ngpu += n->ngpu;
    snprintf(n->model, sizeof(n->model), "%s", f[4]);
  }
  return r->ngpu ? 0 : gs_err_set(err, GS_E_INVALID_ARGUMENT, "nodes CSV: no GPU nodes");
}

static int pod_cmp(const void *a, const void *b)
{
  const struct rpod *x = a, *y = b;
  return x->created < y->created ? -1 : x->created > y->created;
}

static int read_pods(struct gs_err *err, struct replay *r, char *text)
{
  char *save = NULL, *line = strtok_r(text, "\n", &save), *f[11];
  unsigned cap = 0;
  for (line = strtok_r(NULL, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    struct rpod *p;
    line[strcspn(line, "\r")] = 0;
    if (split(line, f, 11) < 9)
      return gs_err_set(err, GS_E_INVALID_ARGUMENT,
                        "pods CSV: expected name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,"
                        "pod_phase,creation_time,...");
    if (r->npod == cap) {
      cap = cap ? cap * 2 : 4096;
      if (!(p = realloc(r->pod, cap * sizeof(*p))))
        return gs_err_set(err, GS_E_NO_MEMORY, "out of memory for the pod list");
      r->pod = p;
    }
    p = &r->pod[r->npod++];
    p->cpu = atoi(f[1]);
    p->mem = atoi(f[2]);
    p->num_gpu = (unsigned)atoi(f[3]);
    p->milli = (unsigned)atoi(f[4]);
    if (p->num_gpu > MAX_GPUS_PER_NODE || p->milli > 1000)
      return gs_err_set(err, GS_E_INVALID_ARGUMENT, "pods CSV: %s asks for %u GPUs of %u milli", f[0],
                        p->num_gpu, p->milli);
    if (!p->num_gpu) {
      r->npod--; /* CPU-only tasks belong on CPU nodes, which the GPU node list leaves out */
      continue;
    }
    if (!p->milli)
      p->milli = 1000;
    p->created = atol(f[8]);
    snprintf(p->spec, sizeof(p->spec), "%s", f[5]);
  }
  if (!r->npod)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "pods CSV: no pods");
  qsort(r->pod, r->npod, sizeof(*r->pod), pod_cmp); /* stable enough: creation times are distinct */
  return 0;
}

/* ---- FGD's fragmentation, fractional ---- */

/* Task types are the trace's distinct (CPU, GPUs, GPU share) requests,
 * weighted by frequency, as FGD takes the target workload's distribution.
 * Types beyond MAX_TYPES fold into their nearest kept one by GPU share. */
static void fgd_types(struct replay *r)
{
  unsigned gpu_pods = 0;
  for (unsigned i = 0; i < r->npod; i++)
    gpu_pods += r->pod[i].num_gpu > 0;
  for (unsigned i = 0; i < r->npod; i++) {
    const struct rpod *p = &r->pod[i];
    unsigned t = 0, m = 0;
    if (!p->num_gpu)
      continue;
    while (t < r->ntype && (r->type[t].cpu != p->cpu || r->type[t].num_gpu != p->num_gpu ||
                            r->type[t].milli != p->milli))
      t++;
    if (t == r->ntype) {
      if (r->ntype == MAX_TYPES)
        continue;
      while (m < r->nmilli && r->milli[m] != p->milli)
        m++;
      if (m == r->nmilli)
        r->milli[r->nmilli++] = p->milli;
      r->type[r->ntype++] = (struct rtype){.cpu = p->cpu, .num_gpu = p->num_gpu, .milli = p->milli, .mslot = m};
    }
    r->type[t].p += 1.0 / gpu_pods;
  }
}

/* FGD's fragmentation of one node: for each task type, the free GPU it
 * cannot use (all of it when the node lacks the CPU or the full GPUs the
 * type needs; else the GPUs with less free than a fractional type asks, or
 * the partly used GPUs for a whole-GPU type), weighted by the type's share. */
static double frag_state(const struct replay *r, int cpu_free, const unsigned *free, unsigned n)
{
  double total = 0, partial = 0, under[MAX_TYPES], f = 0;
  unsigned full = 0;
  for (unsigned j = 0; j < r->nmilli; j++)
    under[j] = 0;
  for (unsigned g = 0; g < n; g++) {
    total += free[g];
    full += free[g] == 1000;
    partial += free[g] < 1000 ? free[g] : 0;
    for (unsigned j = 0; j < r->nmilli; j++)
      under[j] += free[g] < r->milli[j] ? free[g] : 0;
  }
  for (unsigned t = 0; t < r->ntype; t++) {
    const struct rtype *ty = &r->type[t];
    double lost;
    if (ty->cpu > cpu_free)
      lost = total;
    else if (ty->milli == 1000)
      lost = full < ty->num_gpu ? total : partial;
    else
      lost = under[ty->mslot];
    f += ty->p * lost;
  }
  return f;
}

static double node_frag(const struct replay *r, const struct rnode *n)
{
  return frag_state(r, n->cpu, &r->free_milli[n->first], n->ngpu);
}

static bool spec_ok(const struct rpod *p, const struct rnode *n)
{
  const char *hit;
  size_t len = strlen(n->model);
  if (!p->spec[0])
    return true;
  for (const char *s = p->spec; (hit = strstr(s, n->model)) != NULL; s = hit + 1)
    if ((hit == p->spec || hit[-1] == '|') && (hit[len] == 0 || hit[len] == '|'))
      return true;
  return false;
}

/* ---- one pod ---- */

struct choice {
  int node;
  unsigned gpu;
  double score;
  int start;
  const struct gs_geom_gi_profile *profile;
};

static void keep_best(struct choice *best, int node, unsigned gpu, double score, int start,
                      const struct gs_geom_gi_profile *prof)
{
  if (best->node < 0 || score < best->score - 1e-9)
    *best = (struct choice){.node = node, .gpu = gpu, .score = score, .start = start, .profile = prof};
}

static void try_fractional(struct replay *r, enum gs_plan_policy pol, unsigned ni, const struct rpod *p,
                           struct choice *best)
{
  struct rnode *n = &r->node[ni];
  double before = pol == GS_PLAN_OURS ? node_frag(r, n) : 0;
  unsigned full = 0;
  for (unsigned g = n->first; g < n->first + n->ngpu; g++)
    full += r->free_milli[g] == 1000;
  if (p->num_gpu > 1 || p->milli == 1000) {
    double score;
    if (full < p->num_gpu)
      return;
    if (pol == GS_PLAN_FIRST_FIT)
      score = ni;
    else if (pol == GS_PLAN_BEST_FIT)
      score = full - p->num_gpu;
    else {
      unsigned saved[MAX_GPUS_PER_NODE], k = 0;
      for (unsigned g = n->first; g < n->first + n->ngpu; g++)
        saved[g - n->first] = r->free_milli[g];
      for (unsigned g = n->first; g < n->first + n->ngpu && k < p->num_gpu; g++)
        if (r->free_milli[g] == 1000)
          r->free_milli[g] = 0, k++;
      n->cpu -= p->cpu;
      score = node_frag(r, n) - before;
      n->cpu += p->cpu;
      for (unsigned g = n->first; g < n->first + n->ngpu; g++)
        r->free_milli[g] = saved[g - n->first];
    }
    keep_best(best, (int)ni, n->first, score, -1, NULL);
    return;
  }
  for (unsigned g = n->first; g < n->first + n->ngpu; g++) {
    unsigned f = r->free_milli[g], after[MAX_GPUS_PER_NODE];
    double score;
    bool seen = false;
    if (f < p->milli)
      continue;
    /* GPUs of a node with the same free share are the same move. */
    for (unsigned h = n->first; h < g && !seen; h++)
      seen = r->free_milli[h] == f;
    if (seen)
      continue;
    if (pol == GS_PLAN_FIRST_FIT)
      score = g;
    else if (pol == GS_PLAN_BEST_FIT)
      score = f - p->milli;
    else {
      memcpy(after, &r->free_milli[n->first], n->ngpu * sizeof(unsigned));
      after[g - n->first] -= p->milli;
      score = frag_state(r, n->cpu - p->cpu, after, n->ngpu) - before;
    }
    keep_best(best, (int)ni, g, score, -1, NULL);
    if (pol == GS_PLAN_FIRST_FIT)
      return;
  }
}

/* The plain profile with enough compute slices for milli of a GPU. */
static const struct gs_geom_gi_profile *mig_profile(const struct gs_geom_model *m, unsigned milli)
{
  unsigned slices = (milli * m->compute_slices + 999) / 1000;
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

static unsigned free_compute(const struct gs_geom_model *m, const struct gs_geom_layout *l)
{
  unsigned used = 0;
  for (unsigned i = 0; i < l->n; i++)
    used += l->slot[i].profile->compute_slices;
  return m->compute_slices - used;
}

static double mig_frag(struct replay *r, unsigned g, const struct gs_geom_layout *l)
{
  unsigned fs, fr, mi = r->model[g] == r->mig.models[0] ? 0 : 1;
  gs__plan_mig_frag(&r->mig, mi, l, &fs, &fr);
  return (double)fr * r->model[g]->leaf_span / r->model[g]->grid;
}

/* A GPU's state as one number: its model and its sorted (profile, start)s. */
static uint64_t layout_sig(const struct replay *r, unsigned g)
{
  const struct gs_geom_layout *l = &r->layout[g];
  uint64_t sig = r->model[g] == r->mig.models[0] ? 1 : 2;
  unsigned v[GS_GEOM_MAX_INSTANCES];
  for (unsigned i = 0; i < l->n; i++) {
    unsigned x = (unsigned)(l->slot[i].profile - r->model[g]->gi) << 4 | (unsigned)l->slot[i].start, j = i;
    for (; j > 0 && v[j - 1] > x; j--)
      v[j] = v[j - 1];
    v[j] = x;
  }
  for (unsigned i = 0; i < l->n; i++)
    sig = sig * 257 + v[i] + 1;
  return sig;
}

/* The best start of prof on GPU g's state under the policy, cached per state. */
static struct mig_eval *eval_mig(struct replay *r, enum gs_plan_policy pol, unsigned g,
                                 const struct gs_geom_gi_profile *prof)
{
  const struct gs_geom_model *m = r->model[g];
  uint64_t key = layout_sig(r, g) * 31 + (uint64_t)(prof - m->gi) + 1;
  unsigned h = (unsigned)(key ^ key >> 29) & (MIG_CACHE - 1), starts[GS_GEOM_MAX_GRID], ns;
  struct mig_eval *e;
  double before;
  while (r->cache[h].key && r->cache[h].key != key)
    h = (h + 1) & (MIG_CACHE - 1);
  e = &r->cache[h];
  if (e->key == key || r->ncache >= MIG_CACHE / 2)
    return e->key == key ? e : NULL;
  r->ncache++;
  e->key = key;
  e->start = -1;
  before = pol == GS_PLAN_OURS ? mig_frag(r, g, &r->layout[g]) : 0;
  ns = gs_geom_gi_starts(prof, starts);
  for (unsigned s = 0; s < ns; s++) {
    struct gs_geom_layout t;
    double score;
    if (gs_geom_check_add(NULL, m, &r->layout[g], prof, starts[s]) != 0)
      continue;
    t = r->layout[g];
    t.slot[t.n].profile = prof;
    t.slot[t.n++].start = (int)starts[s];
    if (pol == GS_PLAN_OURS)
      score = 10.0 * (mig_frag(r, g, &t) - before) + (double)free_compute(m, &t) / m->compute_slices +
              (r->layout[g].n == 0 ? 1.0 : 0);
    else
      score = free_compute(m, &t);
    if (e->start < 0 || score < e->score - 1e-9) {
      e->start = (int)starts[s];
      e->score = score;
    }
    if (pol != GS_PLAN_OURS)
      break;
  }
  return e;
}

static void try_mig(struct replay *r, enum gs_plan_policy pol, unsigned ni, const struct rpod *p,
                    struct choice *best)
{
  struct rnode *n = &r->node[ni];
  unsigned empty = 0;
  for (unsigned g = n->first; g < n->first + n->ngpu; g++)
    empty += r->layout[g].n == 0;
  if (p->num_gpu > 1 || p->milli == 1000) {
    if (empty >= p->num_gpu)
      keep_best(best, (int)ni, n->first, pol == GS_PLAN_FIRST_FIT ? ni : pol == GS_PLAN_BEST_FIT ? empty - p->num_gpu : 0,
                -1, NULL);
    return;
  }
  for (unsigned g = n->first; g < n->first + n->ngpu; g++) {
    const struct gs_geom_gi_profile *prof = mig_profile(r->model[g], p->milli);
    struct mig_eval *e = prof ? eval_mig(r, pol, g, prof) : NULL;
    if (!e || e->start < 0)
      continue;
    keep_best(best, (int)ni, g, pol == GS_PLAN_FIRST_FIT ? g : e->score, e->start, prof);
    if (pol == GS_PLAN_FIRST_FIT)
      return;
  }
}

static bool place_pod(struct replay *r, enum gs_plan_replay_mode mode, enum gs_plan_policy pol,
                      const struct rpod *p)
{
  struct choice best = {.node = -1};
  for (unsigned ni = 0; ni < r->nnode; ni++) {
    struct rnode *n = &r->node[ni];
    if (n->cpu < p->cpu || n->mem < p->mem || (mode == GS_PLAN_REPLAY_FRACTIONAL && !spec_ok(p, n)))
      continue;
    if (!p->num_gpu) {
      keep_best(&best, (int)ni, 0, ni, -1, NULL);
      break;
    }
    if (mode == GS_PLAN_REPLAY_FRACTIONAL)
      try_fractional(r, pol, ni, p, &best);
    else
      try_mig(r, pol, ni, p, &best);
    if (pol == GS_PLAN_FIRST_FIT && best.node >= 0)
      break;
  }
  if (best.node < 0)
    return false;
  r->node[best.node].cpu -= p->cpu;
  r->node[best.node].mem -= p->mem;
  if (!p->num_gpu)
    return true;
  if (p->num_gpu > 1 || p->milli == 1000) {
    struct rnode *n = &r->node[best.node];
    unsigned k = 0;
    for (unsigned g = n->first; g < n->first + n->ngpu && k < p->num_gpu; g++) {
      bool empty = mode == GS_PLAN_REPLAY_FRACTIONAL ? r->free_milli[g] == 1000 : r->layout[g].n == 0;
      if (!empty)
        continue;
      k++;
      r->used[g] = true;
      r->free_milli[g] = 0;
      if (mode == GS_PLAN_REPLAY_MIG) {
        r->layout[g].slot[0].profile = mig_profile(r->model[g], 1000);
        r->layout[g].slot[0].start = 0;
        r->layout[g].n = 1;
      }
    }
    return true;
  }
  r->used[best.gpu] = true;
  r->free_milli[best.gpu] -= mode == GS_PLAN_REPLAY_FRACTIONAL ? p->milli : 0;
  if (mode == GS_PLAN_REPLAY_MIG) {
    struct gs_geom_layout *l = &r->layout[best.gpu];
    l->slot[l->n].profile = best.profile;
    l->slot[l->n++].start = best.start;
  }
  return true;
}

/* ---- the run ---- */

/* The MIG fleet of equal size: nodes whose GPUs have 32 GB or more
 * (V100M32, A10, G3) get H100-80GB, the others A100-40GB. */
static int mig_fleet(struct gs_err *err, struct replay *r)
{
  const struct gs_geom_model *a100 = gs_geom_model_find("a100-40gb"), *h100 = gs_geom_model_find("h100-80gb");
  if (!a100 || !h100)
    return gs_err_set(err, GS_E_NOT_FOUND, "geometry lacks a100-40gb or h100-80gb");
  r->mig.models[0] = a100;
  r->mig.models[1] = h100;
  r->mig.nmodels = 2;
  for (unsigned ni = 0; ni < r->nnode; ni++) {
    const char *mdl = r->node[ni].model;
    bool big = strcmp(mdl, "V100M32") == 0 || strcmp(mdl, "A10") == 0 || strcmp(mdl, "G3") == 0;
    for (unsigned g = r->node[ni].first; g < r->node[ni].first + r->node[ni].ngpu; g++)
      r->model[g] = big ? h100 : a100;
  }
  for (unsigned mi = 0; mi < 2; mi++)
    for (unsigned i = 0; i < r->npod; i++)
      if (r->pod[i].num_gpu) {
        const struct gs_geom_gi_profile *p = mig_profile(r->mig.models[mi], r->pod[i].milli);
        r->mig.want_mask[mi] |= 1u << (unsigned)(p - r->mig.models[mi]->gi);
      }
  return 0;
}

static void finish(struct replay *r, enum gs_plan_replay_mode mode, struct gs_plan_replay_stats *out)
{
  double frag = 0;
  out->gpus_used = 0;
  for (unsigned g = 0; g < r->ngpu; g++)
    out->gpus_used += r->used[g];
  if (mode == GS_PLAN_REPLAY_FRACTIONAL)
    for (unsigned ni = 0; ni < r->nnode; ni++)
      frag += node_frag(r, &r->node[ni]) / 1000.0;
  else
    for (unsigned g = 0; g < r->ngpu; g++)
      frag += mig_frag(r, g, &r->layout[g]);
  out->frag_pct = 100.0 * frag / r->ngpu;
}

static int run_replay(struct gs_err *err, struct replay *r, enum gs_plan_replay_mode mode,
                      enum gs_plan_policy pol, double inflate, struct gs_plan_replay_stats *out)
{
  double cap = r->ngpu * 1000.0, arrived = 0, alloc = 0;
  unsigned guard = 0;
  int rc;
  if (!(r->free_milli = malloc(r->ngpu * sizeof(unsigned))) || !(r->used = calloc(r->ngpu, sizeof(bool))) ||
      !(r->layout = calloc(r->ngpu, sizeof(*r->layout))) || !(r->model = calloc(r->ngpu, sizeof(*r->model))) ||
      !(r->cache = calloc(MIG_CACHE, sizeof(*r->cache))))
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory for %u GPUs", r->ngpu);
  for (unsigned g = 0; g < r->ngpu; g++)
    r->free_milli[g] = 1000;
  fgd_types(r);
  if (mode == GS_PLAN_REPLAY_MIG && (rc = mig_fleet(err, r)) != 0)
    return rc;
  out->gpus = r->ngpu;
  out->alloc_at_100 = -1;
  for (unsigned i = 0; arrived < inflate * cap && guard < 4 * r->npod + 1000000; i = (i + 1) % r->npod, guard++) {
    const struct rpod *p = &r->pod[i];
    double demand = (double)p->num_gpu * p->milli;
    if (arrived < cap && arrived + demand >= cap)
      out->alloc_at_100 = 100.0 * alloc / cap;
    arrived += demand;
    out->tasks_arrived++;
    if (place_pod(r, mode, pol, p)) {
      out->tasks_placed++;
      alloc += demand;
    }
  }
  out->arrived_pct = 100.0 * arrived / cap;
  out->alloc_pct = 100.0 * alloc / cap;
  finish(r, mode, out);
  return 0;
}

int gs_plan_replay(struct gs_err *err, const char *nodes_csv, const char *pods_csv,
                   enum gs_plan_replay_mode mode, enum gs_plan_policy policy, double inflate,
                   struct gs_plan_replay_stats *out)
{
  struct replay r = {0};
  char *nodes = strdup(nodes_csv), *pods = strdup(pods_csv);
  int rc;
  memset(out, 0, sizeof(*out));
  if (!nodes || !pods)
    rc = gs_err_set(err, GS_E_NO_MEMORY, "out of memory for the trace");
  else if (!(inflate > 0 && inflate <= 10))
    rc = gs_err_set(err, GS_E_INVALID_ARGUMENT, "inflate must be above 0 and at most 10");
  else if ((rc = read_nodes(err, &r, nodes)) == 0 && (rc = read_pods(err, &r, pods)) == 0)
    rc = run_replay(err, &r, mode, policy, inflate, out);
  free(nodes);
  free(pods);
  free(r.node);
  free(r.pod);
  free(r.free_milli);
  free(r.used);
  free(r.layout);
  free(r.model);
  free(r.cache);
  return rc;
}
