/* SPDX-License-Identifier: Apache-2.0 */
/* replay.c: replays a GPU-sharing trace in Alibaba's openb format (the
 * trace FGD was evaluated on) the way FGD's simulator does, so that every
 * policy meets the same arrivals, filters and metric: the trace shuffled by
 * the seed, then tasks drawn from it with replacement until the GPU demand
 * reaches a multiple of capacity; CPU, memory, GPU type and GPU fit filter
 * the nodes; a task that fits nowhere is dropped; score ties go to the
 * node's rank of this run. After every task it records arrived and
 * allocated GPU, and averages the allocation per arrival percentage as
 * FGD's analysis does. Placement is replay_frac.c's or replay_mig.c's. */
#include "plan/replay.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- random numbers (splitmix64: small, seedable, good enough to shuffle) ---- */

uint64_t gs__rp_rand(struct replay *r)
{
  uint64_t z = (r->rng += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

unsigned gs__rp_below(struct replay *r, unsigned n)
{
  return (unsigned)(gs__rp_rand(r) % n);
}

/* ---- the scores FGD's simulator uses (plugin/fgd_score.go, best_fit_score.go) ---- */

int gs__rp_fgd_score(double before, double after)
{
  return (int)(1.0 / (1.0 + exp(-((before - after) / 1000))) * 100.0);
}

int gs__rp_bestfit_raw(const struct rp_node *n, const struct rp_pod *p)
{
  double score = 0;
  score += (double)(n->cpu - p->cpu) / 128000 * 0.5;
  score += ((double)n->left_total - (double)(p->ngpu * p->milli)) / 8000 * 0.5;
  return (int)((1.0 - score) * 100.0);
}

/* FGD's categories (utils/frag.go); all but "satisfied" count as fragmentation. */
enum { Q1_LACK_BOTH, Q2_LACK_GPU, Q3_SATISFIED, Q4_LACK_CPU, XL_CPU_OK, XR_LACK_CPU, NO_ACCESS, NCAT };

/* For each typical kind t (share p_t), the free GPU t cannot use: all of it
 * when t needs no GPU, is not allowed on the model, lacks CPU, or finds too
 * few GPUs it fits on; else the free share of the GPUs it does not fit on.
 * Summed per category in FGD's order, as it does. A GPU fits t when its
 * free share is t's (whole GPUs: all free), or, on MIG (state given), when
 * t's profile has a legal placement beside its instances. */
double gs__rp_frag(const struct replay *r, unsigned model, int cpu, const unsigned *left, const uint32_t *state,
                   unsigned n)
{
  double cat[NCAT] = {0}, out = 0;
  unsigned total = 0;
  for (unsigned g = 0; g < n; g++)
    total += left[g];
  for (unsigned i = 0; i < r->ntypical; i++) {
    const struct rp_kind *k = &r->kind[r->typical[i]];
    unsigned fit = 0, under = 0;
    if (!k->milli) {
      cat[cpu >= k->cpu ? XL_CPU_OK : XR_LACK_CPU] += k->p * total;
      continue;
    }
    if (!(k->models & (1u << model))) {
      cat[NO_ACCESS] += k->p * total;
      continue;
    }
    for (unsigned g = 0; g < n; g++) {
      bool ok = state ? gs__rp_mig_fits(r, state[g], r->typical[i]) : left[g] >= k->milli;
      fit += ok;
      under += ok ? 0 : left[g];
    }
    if (fit >= k->ngpu && cpu >= k->cpu)
      cat[Q2_LACK_GPU] += k->p * under;
    else
      cat[fit >= k->ngpu ? Q4_LACK_CPU : cpu >= k->cpu ? Q2_LACK_GPU : Q1_LACK_BOTH] += k->p * total;
  }
  for (unsigned c = 0; c < NCAT; c++)
    out += c == Q3_SATISFIED ? 0 : cat[c];
  return out;
}

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

/* Column index of each name in the header, or -1. */
static void columns(char *header, const char *const *names, unsigned nnames, int *col)
{
  char *f[32];
  unsigned n;
  header[strcspn(header, "\r")] = 0;
  n = split(header, f, 32);
  for (unsigned i = 0; i < nnames; i++) {
    col[i] = -1;
    for (unsigned j = 0; j < n; j++)
      if (strcmp(f[j], names[i]) == 0)
        col[i] = (int)j;
  }
}

static int number(struct gs_err *err, const char *what, unsigned line, const char *col, const char *v,
                  long max, int *out)
{
  char *end;
  long x = strtol(v, &end, 10);
  if (end == v || *end || x < 0 || x > max)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "%s line %u: %s '%s' is not a whole number from 0 to %ld", what,
                      line, col, v, max);
  *out = (int)x;
  return 0;
}

static int model_index(struct gs_err *err, struct replay *r, const char *name)
{
  for (unsigned m = 0; m < r->nmodel; m++)
    if (strcmp(r->model_name[m], name) == 0)
      return (int)m;
  if (r->nmodel == RP_MAX_MODELS)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "nodes CSV: more than %u GPU models", RP_MAX_MODELS);
  snprintf(r->model_name[r->nmodel], sizeof(r->model_name[0]), "%s", name);
  return (int)r->nmodel++;
}

static int read_nodes(struct gs_err *err, struct replay *r, char *text)
{
  static const char *const names[] = {"cpu_milli", "memory_mib", "gpu", "model"};
  char *save = NULL, *line = strtok_r(text, "\n", &save), *f[32];
  int col[4], v[3], m;
  unsigned cap = 0, ln = 1, nf;
  if (!line)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "nodes CSV: empty");
  columns(line, names, 4, col);
  for (unsigned i = 0; i < 4; i++)
    if (col[i] < 0)
      return gs_err_set(err, GS_E_INVALID_ARGUMENT, "nodes CSV: no column '%s' in the header (expected "
                        "sn,cpu_milli,memory_mib,gpu,model)", names[i]);
  for (line = strtok_r(NULL, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    struct rp_node *n;
    ln++;
    line[strcspn(line, "\r")] = 0;
    nf = split(line, f, 32);
    for (unsigned i = 0; i < 4; i++)
      if (col[i] >= (int)nf)
        return gs_err_set(err, GS_E_INVALID_ARGUMENT, "nodes CSV line %u: no '%s' field", ln, names[i]);
    for (unsigned i = 0; i < 3; i++)
      if (number(err, "nodes CSV", ln, names[i], f[col[i]], i == 2 ? RP_MAX_GPUS : INT_MAX / 2, &v[i]) != 0)
        return err ? err->code : GS_E_INVALID_ARGUMENT;
    if (v[2] == 0)
      continue; /* CPU nodes: the trace's GPU node list has none */
    if (!*f[col[3]])
      return gs_err_set(err, GS_E_INVALID_ARGUMENT, "nodes CSV line %u: a node with GPUs needs its GPU model", ln);
    if ((m = model_index(err, r, f[col[3]])) < 0)
      return m;
    if (r->nnode == cap) {
      cap = cap ? cap * 2 : 1024;
      if (!(n = realloc(r->node, cap * sizeof(*n))))
        return gs_err_set(err, GS_E_NO_MEMORY, "out of memory for the node list");
      r->node = n;
    }
    n = &r->node[r->nnode++];
    *n = (struct rp_node){.cpu_cap = v[0], .mem_cap = v[1], .ngpu = (unsigned)v[2], .first = r->ngpu,
                          .model = (unsigned)m};
    r->ngpu += n->ngpu;
  }
  return r->ngpu ? 0 : gs_err_set(err, GS_E_INVALID_ARGUMENT, "nodes CSV: no GPU nodes");
}

/* "V100M16|V100M32" as a mask of the node list's models; "": any. */
static uint16_t spec_mask(const struct replay *r, const char *spec)
{
  uint16_t mask = 0;
  if (!*spec)
    return RP_ANY_MODEL;
  for (unsigned m = 0; m < r->nmodel; m++) {
    size_t len = strlen(r->model_name[m]);
    for (const char *s = spec, *hit; (hit = strstr(s, r->model_name[m])) != NULL; s = hit + 1)
      if ((hit == spec || hit[-1] == '|') && (hit[len] == 0 || hit[len] == '|'))
        mask |= (uint16_t)(1u << m);
  }
  return mask;
}

static int kind_of(struct gs_err *err, struct replay *r, struct rp_pod *p, const char *spec)
{
  unsigned k = 0;
  while (k < r->nkind && (r->kind[k].cpu != p->cpu || r->kind[k].ngpu != p->ngpu || r->kind[k].milli != p->milli ||
                          r->kind[k].models != p->models || strcmp(r->kind[k].spec, spec) != 0))
    k++;
  if (k == r->nkind) {
    if (k == RP_MAX_KINDS)
      return gs_err_set(err, GS_E_INVALID_ARGUMENT, "pods CSV: more than %u distinct task shapes", RP_MAX_KINDS);
    r->kind[r->nkind++] = (struct rp_kind){.cpu = p->cpu, .ngpu = p->ngpu, .milli = p->milli, .models = p->models};
    snprintf(r->kind[k].spec, sizeof(r->kind[k].spec), "%s", spec);
  }
  r->kind[k].count++;
  r->kind[k].mem += p->mem;
  p->kind = k;
  return 0;
}

struct named {
  char name[64];
  struct rp_pod pod;
  char spec[48];
};

static int by_name(const void *a, const void *b)
{
  return strcmp(((const struct named *)a)->name, ((const struct named *)b)->name);
}

static int pod_line(struct gs_err *err, struct replay *r, unsigned ln, char **f, unsigned nf, const int *col,
                    struct named *out)
{
  static const char *const names[] = {"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli"};
  int v[4];
  for (unsigned i = 0; i < 5; i++)
    if (col[i] >= (int)nf)
      return gs_err_set(err, GS_E_INVALID_ARGUMENT, "pods CSV line %u: no '%s' field", ln, names[i]);
  for (unsigned i = 0; i < 4; i++)
    if (number(err, "pods CSV", ln, names[i + 1], f[col[i + 1]], i == 2 ? RP_MAX_GPUS : INT_MAX / 2, &v[i]) != 0)
      return err ? err->code : GS_E_INVALID_ARGUMENT;
  snprintf(out->name, sizeof(out->name), "%s", f[col[0]]);
  out->pod = (struct rp_pod){.cpu = v[0], .mem = v[1], .ngpu = (unsigned)v[2], .milli = (unsigned)v[3]};
  if (out->pod.ngpu && out->pod.milli > 1000)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "pods CSV line %u: %s asks for %u thousandths of a GPU (at most 1000)",
                      ln, out->name, out->pod.milli);
  if (out->pod.ngpu > 1 && out->pod.milli < 1000)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT,
                      "pods CSV line %u: %s asks for %u GPUs of %u thousandths (a share of a GPU is for one GPU only)",
                      ln, out->name, out->pod.ngpu, out->pod.milli);
  /* FGD's trace converter turns a GPU task with no share into a CPU task. */
  if (!out->pod.ngpu || !out->pod.milli)
    out->pod.ngpu = out->pod.milli = 0;
  snprintf(out->spec, sizeof(out->spec), "%s", out->pod.ngpu && col[5] >= 0 && col[5] < (int)nf ? f[col[5]] : "");
  out->pod.models = out->pod.ngpu ? spec_mask(r, out->spec) : RP_ANY_MODEL;
  return 0;
}

static int read_pods(struct gs_err *err, struct replay *r, char *text)
{
  static const char *const names[] = {"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec"};
  char *save = NULL, *line = strtok_r(text, "\n", &save), *f[32];
  struct named *all = NULL, *grown;
  unsigned cap = 0, n = 0, ln = 1, gpu_tasks = 0;
  int col[6], rc = 0;
  if (!line)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "pods CSV: empty");
  columns(line, names, 6, col);
  for (unsigned i = 0; i < 5; i++)
    if (col[i] < 0)
      return gs_err_set(err, GS_E_INVALID_ARGUMENT, "pods CSV: no column '%s' in the header (expected "
                        "name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec,...])", names[i]);
  for (line = strtok_r(NULL, "\n", &save); line && rc == 0; line = strtok_r(NULL, "\n", &save)) {
    ln++;
    line[strcspn(line, "\r")] = 0;
    if (n == cap) {
      cap = cap ? cap * 2 : 4096;
      if (!(grown = realloc(all, cap * sizeof(*all)))) {
        rc = gs_err_set(err, GS_E_NO_MEMORY, "out of memory for the pod list");
        break;
      }
      all = grown;
    }
    rc = pod_line(err, r, ln, f, split(line, f, 32), col, &all[n]);
    gpu_tasks += rc == 0 && all[n].pod.ngpu;
    n++;
  }
  if (rc == 0 && !gpu_tasks)
    rc = gs_err_set(err, GS_E_INVALID_ARGUMENT, "pods CSV: no task asks for a GPU");
  if (rc == 0 && !(r->pod = malloc(n * sizeof(*r->pod))))
    rc = gs_err_set(err, GS_E_NO_MEMORY, "out of memory for the pod list");
  if (rc == 0) {
    qsort(all, n, sizeof(*all), by_name); /* FGD's simulator sorts by name before it shuffles */
    for (unsigned i = 0; i < n && rc == 0; i++) {
      r->pod[r->npod] = all[i].pod;
      rc = kind_of(err, r, &r->pod[r->npod++], all[i].spec);
    }
  }
  free(all);
  return rc;
}

/* ---- FGD's typical tasks (utils/frag.go GetTypicalPods) ---- */

static int by_count(const void *a, const void *b, void *arg)
{
  const struct rp_kind *k = arg, *x = &k[*(const unsigned *)a], *y = &k[*(const unsigned *)b];
  if (x->count != y->count)
    return x->count > y->count ? -1 : 1;
  if (x->cpu != y->cpu)
    return x->cpu > y->cpu ? -1 : 1;
  if (x->milli != y->milli)
    return x->milli > y->milli ? -1 : 1;
  if (x->ngpu != y->ngpu)
    return x->ngpu > y->ngpu ? -1 : 1;
  return -strcmp(x->spec, y->spec);
}

/* The most frequent kinds (CPU tasks included) until they cover 95% of the
 * tasks, each weighted by its share among them. */
static void typical_kinds(struct replay *r)
{
  unsigned cum = 0;
  for (unsigned k = 0; k < r->nkind; k++)
    r->kind[k].mem /= r->kind[k].count;
  for (unsigned k = 0; k < r->nkind; k++)
    r->typical[k] = k;
  qsort_r(r->typical, r->nkind, sizeof(unsigned), by_count, r->kind);
  r->ntypical = 0;
  while (r->ntypical < r->nkind && cum * 100.0 < 95.0 * r->npod)
    cum += r->kind[r->typical[r->ntypical++]].count;
  for (unsigned i = 0; i < r->ntypical; i++)
    r->kind[r->typical[i]].p = (double)r->kind[r->typical[i]].count / cum;
}

/* ---- one run ---- */

static unsigned demand(const struct rp_pod *p)
{
  return p->ngpu * p->milli;
}

static int push_order(struct gs_err *err, struct replay *r, unsigned pod)
{
  if (r->norder == r->cap_order) {
    unsigned cap = r->cap_order ? r->cap_order * 2 : r->npod + 1024, *o;
    if (!(o = realloc(r->order, cap * sizeof(*o))))
      return gs_err_set(err, GS_E_NO_MEMORY, "out of memory for the arrivals");
    r->order = o;
    r->cap_order = cap;
  }
  r->order[r->norder++] = pod;
  return 0;
}

/* The trace shuffled, then trimmed or topped up with random draws to
 * `inflate` times the capacity (FGD's TunePodsByNodeTotalResource, whose
 * top-up stops at the first draw whose per-GPU share would overshoot). */
static int arrivals(struct gs_err *err, struct replay *r, double inflate)
{
  double target = inflate * r->ngpu * 1000.0, total = 0;
  int rc;
  r->norder = 0;
  for (unsigned i = 0; i < r->npod; i++) {
    if ((rc = push_order(err, r, i)) != 0)
      return rc;
    total += demand(&r->pod[i]);
  }
  for (unsigned i = r->norder; i > 1; i--) {
    unsigned j = gs__rp_below(r, i), t = r->order[i - 1];
    r->order[i - 1] = r->order[j];
    r->order[j] = t;
  }
  while (total > target) {
    unsigned i = gs__rp_below(r, r->norder);
    total -= demand(&r->pod[r->order[i]]);
    memmove(&r->order[i], &r->order[i + 1], (r->norder - i - 1) * sizeof(unsigned));
    r->norder--;
  }
  for (;;) {
    unsigned i = gs__rp_below(r, r->npod);
    if (total + r->pod[i].milli > target)
      return 0;
    if ((rc = push_order(err, r, i)) != 0)
      return rc;
    total += demand(&r->pod[i]);
  }
}

static double node_frag(const struct replay *r, unsigned ni)
{
  const struct rp_node *n = &r->node[ni];
  return gs__rp_frag(r, n->model, n->cpu, &r->left[n->first],
                     r->mode == GS_PLAN_REPLAY_MIG ? gs__rp_mig_states(r, ni) : NULL, n->ngpu);
}

/* Re-reads a node's GPU summary and fragmentation after a change. */
static void refresh(struct replay *r, unsigned ni)
{
  struct rp_node *n = &r->node[ni];
  double f;
  n->version++;
  n->nfree = n->max_left = n->left_total = 0;
  for (unsigned g = n->first; g < n->first + n->ngpu; g++) {
    n->nfree += r->left[g] == 1000;
    n->max_left = r->left[g] > n->max_left ? r->left[g] : n->max_left;
    n->left_total += r->left[g];
  }
  f = node_frag(r, ni);
  r->frag_total += f - r->frag[ni];
  r->frag[ni] = f;
  if (r->pol == GS_PLAN_OURS)
    gs__rp_ours_refresh(r, ni);
}

static void reset(struct replay *r)
{
  r->frag_total = 0;
  if (r->pol == GS_PLAN_OURS) {
    memset(r->use, 0, (size_t)r->nnode * r->ntypical * sizeof(double));
    memset(r->usable, 0, r->ntypical * sizeof(double));
  }
  for (unsigned g = 0; g < r->ngpu; g++)
    r->left[g] = 1000;
  if (r->mode == GS_PLAN_REPLAY_MIG)
    gs__rp_mig_reset(r);
  for (unsigned i = 0; i < r->nnode; i++) {
    r->node[i].cpu = r->node[i].cpu_cap;
    r->node[i].mem = r->node[i].mem_cap;
    r->node[i].rank = i;
    r->frag[i] = 0;
    refresh(r, i);
  }
  if (r->pol == GS_PLAN_OURS)
    gs__rp_ours_reweigh(r, true);
  /* Node ranks: a random permutation, as FGD's simulator prefixes names. */
  for (unsigned i = r->nnode; i > 1; i--) {
    unsigned j = gs__rp_below(r, i), t = r->node[i - 1].rank;
    r->node[i - 1].rank = r->node[j].rank;
    r->node[j].rank = t;
  }
}

static bool eval(struct replay *r, unsigned ni, const struct rp_pod *p, struct rp_move *mv)
{
  struct rp_cache *c = &r->cache[(size_t)ni * r->nkind + p->kind];
  bool ok;
  /* Random draws a GPU each time; the others are a function of the state. */
  if (c->version == r->node[ni].version && r->pol != GS_PLAN_RANDOM) {
    *mv = c->mv;
    return c->ok;
  }
  ok = r->mode == GS_PLAN_REPLAY_MIG ? gs__rp_mig_eval(r, ni, p, mv) : gs__rp_frac_eval(r, ni, p, mv);
  *c = (struct rp_cache){.version = r->node[ni].version, .ok = ok, .mv = *mv};
  return ok;
}

static bool fits(const struct rp_node *n, const struct rp_pod *p)
{
  if (n->cpu < p->cpu || n->mem < p->mem || !(p->models & (1u << n->model)))
    return false;
  if (!p->ngpu)
    return true;
  return p->milli == 1000 ? n->nfree >= p->ngpu : n->max_left >= p->milli;
}

/* Best-fit's scores, min-max normalised to 0..100 over the feasible nodes
 * in integers (FGD's NormalizeScore); the highest wins, ties by rank. */
static int best_normalised(struct replay *r, int lo, int hi)
{
  int pick = -1, best = 0;
  for (unsigned ni = 0; ni < r->nnode; ni++) {
    int s;
    if (r->raw[ni] == INT_MIN)
      continue;
    s = hi == lo ? 0 : (r->raw[ni] - lo) * 100 / (hi - lo);
    if (pick < 0 || s > best || (s == best && r->node[ni].rank < r->node[pick].rank))
      pick = (int)ni, best = s;
  }
  return pick;
}

/* The node the policy picks for p, or -1; *mv its move there. */
static int choose(struct replay *r, const struct rp_pod *p, struct rp_move *best)
{
  int pick = -1, lo = INT_MAX, hi = INT_MIN;
  unsigned seen = 0;
  struct rp_move mv;
  for (unsigned ni = 0; ni < r->nnode; ni++) {
    r->raw[ni] = INT_MIN;
    if (!fits(&r->node[ni], p) || !eval(r, ni, p, &mv))
      continue;
    switch (r->pol) {
    case GS_PLAN_FIRST_FIT:
      *best = mv;
      return (int)ni;
    case GS_PLAN_RANDOM:
      if (gs__rp_below(r, ++seen) == 0)
        pick = (int)ni, *best = mv;
      break;
    case GS_PLAN_BEST_FIT:
      r->raw[ni] = gs__rp_bestfit_raw(&r->node[ni], p);
      lo = r->raw[ni] < lo ? r->raw[ni] : lo;
      hi = r->raw[ni] > hi ? r->raw[ni] : hi;
      break;
    default:
      if (pick < 0 || mv.score > best->score ||
          (mv.score == best->score && r->node[ni].rank < r->node[pick].rank))
        pick = (int)ni, *best = mv;
    }
  }
  if (r->pol == GS_PLAN_BEST_FIT && (pick = best_normalised(r, lo, hi)) >= 0)
    eval(r, (unsigned)pick, p, best);
  return pick;
}

static bool place(struct replay *r, const struct rp_pod *p)
{
  struct rp_move mv;
  int ni = choose(r, p, &mv);
  if (ni < 0)
    return false;
  r->node[ni].cpu -= p->cpu;
  r->node[ni].mem -= p->mem;
  if (p->ngpu) {
    if (r->mode == GS_PLAN_REPLAY_MIG)
      gs__rp_mig_apply(r, (unsigned)ni, p, &mv);
    else
      gs__rp_frac_apply(r, (unsigned)ni, p, &mv);
  }
  refresh(r, (unsigned)ni);
  return true;
}

/* Per-run sums per arrival percentage. */
struct acc {
  double alloc[GS_PLAN_REPLAY_PCT], frag[GS_PLAN_REPLAY_PCT];
  unsigned n[GS_PLAN_REPLAY_PCT];
};

/* This run's value at percentage i (FGD's analysis: the mean of the tasks
 * whose arrival rounds to i, else of those within one point), added to the
 * totals over runs. */
static void fold(const struct acc *a, struct gs_plan_replay_stats *out, unsigned *runs_at)
{
  for (unsigned i = 0; i < GS_PLAN_REPLAY_PCT; i++) {
    double al = 0, fr = 0;
    unsigned n = 0;
    for (unsigned j = i ? i - 1 : 0; j <= i + 1 && j < GS_PLAN_REPLAY_PCT && !a->n[i]; j++)
      al += a->alloc[j], fr += a->frag[j], n += a->n[j];
    if (a->n[i])
      al = a->alloc[i], fr = a->frag[i], n = a->n[i];
    if (!n)
      continue;
    out->alloc_curve[i] += al / n;
    out->frag_curve[i] += fr / n;
    runs_at[i]++;
  }
}

static int run_one(struct gs_err *err, struct replay *r, double inflate, struct acc *a,
                   struct gs_plan_replay_stats *out)
{
  double cap = r->ngpu * 1000.0, arrived = 0, alloc = 0;
  unsigned used = 0;
  int rc;
  reset(r);
  if ((rc = arrivals(err, r, inflate)) != 0)
    return rc;
  memset(a, 0, sizeof(*a));
  for (unsigned i = 0; i < r->norder; i++) {
    const struct rp_pod *p = &r->pod[r->order[i]];
    unsigned b;
    arrived += demand(p);
    if (place(r, p)) {
      alloc += demand(p);
      out->tasks_placed++;
      if (r->pol == GS_PLAN_OURS)
        gs__rp_ours_reweigh(r, false);
    }
    b = (unsigned)floor(100.0 * arrived / cap + 0.5);
    b = b < GS_PLAN_REPLAY_PCT ? b : GS_PLAN_REPLAY_PCT - 1;
    a->alloc[b] += 100.0 * alloc / cap;
    a->frag[b] += 100.0 * r->frag_total / cap;
    a->n[b]++;
  }
  for (unsigned g = 0; g < r->ngpu; g++)
    used += r->left[g] < 1000;
  out->tasks_arrived += r->norder;
  out->arrived_pct += 100.0 * arrived / cap;
  out->alloc_pct += 100.0 * alloc / cap;
  out->frag_pct += 100.0 * r->frag_total / cap;
  out->gpus_used += used;
  return 0;
}

static int run_all(struct gs_err *err, struct replay *r, const struct gs_plan_replay_options *o,
                   struct gs_plan_replay_stats *out)
{
  struct acc *a = malloc(sizeof(*a));
  unsigned *runs_at = calloc(GS_PLAN_REPLAY_PCT, sizeof(unsigned));
  int rc = 0;
  if (!a || !runs_at)
    rc = gs_err_set(err, GS_E_NO_MEMORY, "out of memory for the replay's curves");
  for (unsigned s = 0; s < o->runs && rc == 0; s++) {
    r->rng = 0x5EEDull * (o->seed + s) + 1;
    if ((rc = run_one(err, r, o->inflate, a, out)) == 0)
      fold(a, out, runs_at);
  }
  if (rc == 0) {
    double n = o->runs;
    out->tasks_arrived /= n, out->tasks_placed /= n, out->arrived_pct /= n;
    out->alloc_pct /= n, out->frag_pct /= n, out->gpus_used /= n;
    for (unsigned i = 0; i < GS_PLAN_REPLAY_PCT; i++) {
      out->alloc_curve[i] = runs_at[i] ? out->alloc_curve[i] / runs_at[i] : -1;
      out->frag_curve[i] = runs_at[i] ? out->frag_curve[i] / runs_at[i] : -1;
      out->max_pct = runs_at[i] ? i : out->max_pct;
    }
    out->alloc_at_100 = out->alloc_curve[100];
  }
  free(a);
  free(runs_at);
  return rc;
}

static int setup(struct gs_err *err, struct replay *r)
{
  double cpu = 0, mem = 0, gpu = 0;
  int rc;
  typical_kinds(r);
  if (!(r->left = calloc(r->ngpu, sizeof(unsigned))) || !(r->frag = calloc(r->nnode, sizeof(double))) ||
      !(r->raw = calloc(r->nnode, sizeof(int))) || !(r->ofrag = calloc(r->nnode, sizeof(double))) ||
      !(r->use = calloc((size_t)r->nnode * r->ntypical + 1, sizeof(double))) ||
      !(r->usable = calloc(r->ntypical + 1, sizeof(double))) ||
      !(r->cache = calloc((size_t)r->nnode * r->nkind, sizeof(*r->cache))))
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory for %u nodes", r->nnode);
  if (r->mode == GS_PLAN_REPLAY_MIG && (rc = gs__rp_mig_init(err, r)) != 0)
    return rc;
  /* What the trace's GPU tasks ask per thousandth of GPU they take, for
   * ours' stranding tie-break (fractional GPUs only). */
  for (unsigned k = 0; k < r->nkind; k++) {
    const struct rp_kind *x = &r->kind[k];
    if (!x->milli)
      continue;
    cpu += (double)x->cpu * x->count;
    mem += x->mem * x->count;
    gpu += (double)x->ngpu * x->count * x->milli;
  }
  r->cpu_per_gpu = cpu > 0 ? cpu / gpu : 1e-9;
  r->mem_per_gpu = mem > 0 ? mem / gpu : 1e-9;
  return 0;
}

int gs_plan_replay(struct gs_err *err, const char *nodes_csv, const char *pods_csv,
                   const struct gs_plan_replay_options *o, struct gs_plan_replay_stats *out)
{
  struct replay r = {.mode = o->mode, .pol = o->policy};
  char *nodes = strdup(nodes_csv), *pods = strdup(pods_csv);
  int rc;
  memset(out, 0, sizeof(*out));
  if (!(r.kind = calloc(RP_MAX_KINDS, sizeof(*r.kind))) || !nodes || !pods)
    rc = gs_err_set(err, GS_E_NO_MEMORY, "out of memory for the trace");
  else if (!(o->inflate > 0 && o->inflate <= 10))
    rc = gs_err_set(err, GS_E_INVALID_ARGUMENT, "inflate must be above 0 and at most 10 (FGD uses 1.3)");
  else if (o->runs < 1 || o->runs > 1000)
    rc = gs_err_set(err, GS_E_INVALID_ARGUMENT, "runs must be from 1 to 1000");
  else if ((rc = read_nodes(err, &r, nodes)) == 0 && (rc = read_pods(err, &r, pods)) == 0 &&
           (rc = setup(err, &r)) == 0) {
    out->gpus = r.ngpu;
    out->runs = o->runs;
    rc = run_all(err, &r, o, out);
  }
  free(nodes);
  free(pods);
  gs__rp_mig_free(&r);
  free(r.node);
  free(r.pod);
  free(r.kind);
  free(r.order);
  free(r.left);
  free(r.frag);
  free(r.ofrag);
  free(r.use);
  free(r.usable);
  free(r.raw);
  free(r.cache);
  return rc;
}
