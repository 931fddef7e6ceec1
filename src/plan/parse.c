/* SPDX-License-Identifier: Apache-2.0 */
/* parse.c: reads the planner's two YAML inputs, the workload file
 * (`workloads:`) and the fleet file (`nodes:`), and the `--gpus` shorthand.
 * libyaml builds the document; this file checks its shape strictly and every
 * error names the file, the line, the workload or node, the key and the fix. */
#include "plan/plan.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

static int get_double(const struct gs_yaml *c, const yaml_node_t *n, const char *where, double max,
                      double *out)
{
  const char *v = gs_yaml_scalar(n);
  char *end;
  double x;
  if (!v || !*v)
    return gs_yaml_bad(c, n, where, "expected a number, found %s", v ? "an empty value" : gs_yaml_kind(n));
  errno = 0;
  x = strtod(v, &end);
  if (*end || errno || !isfinite(x) || x <= 0 || x > max)
    return gs_yaml_bad(c, n, where, "expected a number above 0 and at most %g, found '%s'", max, v);
  *out = x;
  return 0;
}

/* "18GiB", "512MiB", "20GB" (decimal), "1.5TiB" into MiB. */
static int get_memory(const struct gs_yaml *c, const yaml_node_t *n, const char *where, unsigned *out)
{
  static const struct {
    const char *unit;
    double mib;
  } units[] = {{"MiB", 1}, {"Mi", 1}, {"GiB", 1024}, {"Gi", 1024}, {"TiB", 1048576},
               {"MB", 1e6 / 1048576}, {"GB", 1e9 / 1048576}, {"TB", 1e12 / 1048576}};
  const char *v = gs_yaml_scalar(n);
  char *end;
  double x;
  if (!v || !*v)
    return gs_yaml_bad(c, n, where, "expected an amount such as 18GiB, found %s",
                       v ? "an empty value" : gs_yaml_kind(n));
  errno = 0;
  x = strtod(v, &end);
  while (*end == ' ')
    end++;
  if (end == v || errno || !isfinite(x) || x <= 0)
    return gs_yaml_bad(c, n, where, "expected an amount such as 18GiB or 512MiB, found '%s'", v);
  for (unsigned i = 0; i < GS_NITEMS(units); i++)
    if (strcmp(end, units[i].unit) == 0) {
      double mib = ceil(x * units[i].mib);
      if (mib > 16u * 1024 * 1024)
        return gs_yaml_bad(c, n, where, "'%s' is more than any GPU holds", v);
      *out = (unsigned)mib;
      return 0;
    }
  return gs_yaml_bad(c, n, where, "'%s' needs a unit: MiB, GiB, TiB, MB, GB or TB (e.g. 18GiB)", v);
}

/* The single top-level key's list ("workloads:" or "nodes:"). */
static int top_list(const struct gs_yaml *c, const yaml_node_t *root, const char *key,
                    const yaml_node_t **out)
{
  const yaml_node_t *k;
  if (!root)
    return gs_yaml_bad(c, NULL, "file", "is empty; expected '%s:' with a list", key);
  if (gs_yaml_map_len(root) != 1)
    return gs_yaml_bad(c, root, "file", "expected one key, '%s:', holding a list", key);
  k = yaml_document_get_node(c->doc, root->data.mapping.pairs.start->key);
  if (!gs_yaml_scalar(k) || strcmp(gs_yaml_scalar(k), key) != 0)
    return gs_yaml_bad(c, k, "file", "expected '%s:' at the top", key);
  *out = gs_yaml_lookup(c, root, key);
  if (gs_yaml_seq_len(*out) == 0)
    return gs_yaml_bad(c, *out, key, "expected a non-empty list, found %s", gs_yaml_kind(*out));
  return 0;
}

/* ---- workloads ---- */

static int tput_row(const struct gs_yaml *c, const char *key, const yaml_node_t *v, const char *where,
                    void *arg)
{
  struct gs_plan_workload *w = arg;
  struct gs_plan_tput *t;
  if (w->ntput == GS_PLAN_MAX_TPUT)
    return gs_yaml_bad(c, v, where, "at most %u rows", GS_PLAN_MAX_TPUT);
  t = &w->tput[w->ntput++];
  if (strlen(key) >= sizeof(t->profile))
    return gs_yaml_bad(c, v, where, "profile name '%.20s...' too long", key);
  memcpy(t->profile, key, strlen(key) + 1);
  return get_double(c, v, where, 1e12, &t->value);
}

static int enum_value(const struct gs_yaml *c, const yaml_node_t *v, const char *where,
                      const char *a, const char *b, int *out)
{
  const char *s = gs_yaml_scalar(v);
  if (s && strcmp(s, a) == 0)
    *out = 0;
  else if (s && strcmp(s, b) == 0)
    *out = 1;
  else
    return gs_yaml_bad(c, v, where, "expected '%s' or '%s', found %s%s%s", a, b, s ? "'" : gs_yaml_kind(v),
                       s ? s : "", s ? "'" : "");
  return 0;
}

static int workload_key(const struct gs_yaml *c, const char *key, const yaml_node_t *v,
                        const char *where, void *arg)
{
  struct gs_plan_workload *w = arg;
  double frac;
  int e, rc;
  if (strcmp(key, "name") == 0)
    return 0; /* read first, by parse_workload */
  if (strcmp(key, "replicas") == 0)
    return gs_yaml_get_uint(c, v, where, GS_PLAN_MAX_REPLICAS, &w->replicas);
  if (strcmp(key, "memory") == 0)
    return get_memory(c, v, where, &w->memory_mib);
  if (strcmp(key, "compute") == 0) {
    if ((rc = get_double(c, v, where, 1.0, &frac)) != 0)
      return rc;
    w->compute_milli = (unsigned)ceil(frac * 1000 - 1e-9);
    return 0;
  }
  if (strcmp(key, "throughput") == 0)
    return get_double(c, v, where, 1e12, &w->throughput);
  if (strcmp(key, "throughput-table") == 0)
    return gs_yaml_each_pair(c, v, where, NULL, tput_row, w);
  if (strcmp(key, "tenant") == 0)
    return gs_yaml_get_name(c, v, where, w->tenant, sizeof(w->tenant));
  if (strcmp(key, "model") == 0) {
    char hint[512];
    if (!gs_yaml_scalar(v) || !(w->model = gs_geom_model_find(gs_yaml_scalar(v))))
      return gs_yaml_bad(c, v, where, "unknown GPU model '%s' (%s)",
                         gs_yaml_scalar(v) ? gs_yaml_scalar(v) : gs_yaml_kind(v),
                         gs_geom_model_hint(gs_yaml_scalar(v), hint, sizeof(hint)));
    return 0;
  }
  if (strcmp(key, "isolation") == 0) {
    if ((rc = enum_value(c, v, where, "hard", "soft", &e)) != 0)
      return rc;
    w->isolation = e ? GS_PLAN_SOFT : GS_PLAN_HARD;
    return 0;
  }
  if ((rc = enum_value(c, v, where, "mps", "time-slicing", &e)) != 0)
    return rc;
  w->sharing = e ? GS_PLAN_SHARE_TIMESLICE : GS_PLAN_SHARE_MPS;
  return 0;
}

/* Demands checked once parsed: what is needed and what goes together. */
static int check_workload(const struct gs_yaml *c, const yaml_node_t *n, const char *where,
                          const struct gs_plan_workload *w)
{
  if (w->memory_mib == 0)
    return gs_yaml_bad(c, n, where, "missing 'memory' (GPU memory per replica, e.g. memory: 18GiB)");
  if (!w->compute_milli && !w->throughput)
    return gs_yaml_bad(c, n, where, "missing 'compute' (a fraction of a GPU such as 0.4) or 'throughput' "
                                    "with a 'throughput-table'");
  if (w->compute_milli && w->throughput)
    return gs_yaml_bad(c, n, where, "give 'compute' or 'throughput', not both");
  if (w->throughput && !w->ntput)
    return gs_yaml_bad(c, n, where, "'throughput' needs a 'throughput-table' (profile: throughput, e.g. "
                                    "{1g.5gb: 20, 3g.20gb: 70, gpu: 150})");
  if (w->ntput && !w->throughput)
    return gs_yaml_bad(c, n, where, "'throughput-table' needs a 'throughput' target per replica");
  if (w->isolation == GS_PLAN_HARD && w->sharing == GS_PLAN_SHARE_TIMESLICE)
    return gs_yaml_bad(c, n, where, "'sharing: time-slicing' contradicts 'isolation: hard' (MIG only); "
                                    "use isolation: soft");
  return 0;
}

static int parse_workload(const struct gs_yaml *c, const yaml_node_t *n, unsigned i,
                          struct gs_plan_workloads *out)
{
  struct gs_plan_workload *w;
  const yaml_node_t *name = NULL;
  char where[GS_PLAN_NAME_SIZE + 32];
  int rc;
  if (!gs_yaml_is_map(n))
    return gs_yaml_bad(c, n, "workloads", "entry %u: expected a map with name, memory, compute..., found %s",
                       i + 1, gs_yaml_kind(n));
  name = gs_yaml_lookup(c, n, "name");
  snprintf(where, sizeof(where), "workload %u", i + 1);
  if (!name)
    return gs_yaml_bad(c, n, where, "missing 'name'");
  w = &out->w[out->n];
  memset(w, 0, sizeof(*w));
  w->replicas = 1;
  w->line = gs_yaml_line(n);
  if ((rc = gs_yaml_get_name(c, name, where, w->name, sizeof(w->name))) != 0)
    return rc;
  snprintf(where, sizeof(where), "workload '%s'", w->name);
  for (unsigned j = 0; j < out->n; j++)
    if (strcmp(out->w[j].name, w->name) == 0)
      return gs_yaml_bad(c, name, where, "defined twice (first at line %u)", out->w[j].line);
  if ((rc = gs_yaml_each_pair(c, n, where,
                              "name, replicas, memory, compute, throughput, throughput-table, isolation, "
                              "sharing, tenant, model",
                              workload_key, w)) != 0)
    return rc;
  if ((rc = check_workload(c, n, where, w)) != 0)
    return rc;
  out->n++;
  return 0;
}

static int workloads_doc(const struct gs_yaml *c, const yaml_node_t *root)
{
  struct gs_plan_workloads *out = c->user;
  const yaml_node_t *list;
  unsigned total = 0;
  int rc;
  if ((rc = top_list(c, root, "workloads", &list)) != 0)
    return rc;
  out->cap = gs_yaml_seq_len(list);
  if (!(out->w = calloc(out->cap, sizeof(*out->w))))
    return gs_err_set(c->err, GS_E_NO_MEMORY, "%s: out of memory", c->origin);
  for (unsigned i = 0; i < gs_yaml_seq_len(list); i++) {
    if ((rc = parse_workload(c, gs_yaml_seq_item(c, list, i), i, out)) != 0)
      return rc;
    total += out->w[out->n - 1].replicas;
    if (total > GS_PLAN_MAX_REPLICAS)
      return gs_yaml_bad(c, gs_yaml_seq_item(c, list, i), "workloads", "more than %u replicas in all",
                         GS_PLAN_MAX_REPLICAS);
  }
  return 0;
}

int gs_plan_parse_workloads(struct gs_err *err, const char *origin, const char *text, size_t len,
                            struct gs_plan_workloads *out)
{
  int rc;
  memset(out, 0, sizeof(*out));
  if ((rc = gs_yaml_load(err, origin, text, len, workloads_doc, out)) != 0)
    gs_plan_workloads_free(out);
  return rc;
}

void gs_plan_workloads_free(struct gs_plan_workloads *w)
{
  if (!w)
    return;
  free(w->w);
  memset(w, 0, sizeof(*w));
}

/* ---- fleet ---- */

int gs_plan_fleet_add(struct gs_err *err, struct gs_plan_fleet *f, const char *node,
                      const struct gs_geom_model *m, unsigned count)
{
  if (count > GS_PLAN_MAX_GPUS || f->ngpu + count > GS_PLAN_MAX_GPUS)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "node %s: too many GPUs (at most %u in a fleet)", node,
                      GS_PLAN_MAX_GPUS);
  if (f->ngpu + count > f->cap) {
    unsigned cap = f->cap ? f->cap : 16;
    struct gs_plan_gpu *g;
    while (cap < f->ngpu + count)
      cap *= 2;
    if (!(g = realloc(f->gpu, cap * sizeof(*g))))
      return gs_err_set(err, GS_E_NO_MEMORY, "out of memory for %u GPUs", cap);
    f->gpu = g;
    f->cap = cap;
  }
  for (unsigned i = 0; i < count; i++) {
    struct gs_plan_gpu *g = &f->gpu[f->ngpu];
    unsigned on_node = 0;
    memset(g, 0, sizeof(*g));
    snprintf(g->node, sizeof(g->node), "%s", node);
    for (unsigned j = f->ngpu; j > 0 && strcmp(f->gpu[j - 1].node, node) == 0; j--)
      on_node++;
    g->index = on_node;
    g->model = m;
    f->ngpu++;
  }
  return 0;
}

struct group {
  const struct gs_geom_model *m;
  unsigned count;
  const yaml_node_t *mig;
  const yaml_node_t *model_node;
};

static int group_key(const struct gs_yaml *c, const char *key, const yaml_node_t *v, const char *where,
                     void *arg)
{
  struct group *g = arg;
  if (strcmp(key, "count") == 0)
    return gs_yaml_get_uint(c, v, where, GS_PLAN_MAX_GPUS, &g->count);
  if (strcmp(key, "mig") == 0) {
    if (!gs_yaml_is_list(v))
      return gs_yaml_bad(c, v, where,
                         "expected a list of instances (e.g. [3g.20gb, \"4g.20gb@0\"]), found %s",
                         gs_yaml_kind(v));
    g->mig = v;
    return 0;
  }
  g->model_node = v;
  if (!gs_yaml_scalar(v) || !(g->m = gs_geom_model_find(gs_yaml_scalar(v)))) {
    char hint[512];
    return gs_yaml_bad(c, v, where, "unknown GPU model '%s' (%s)",
                       gs_yaml_scalar(v) ? gs_yaml_scalar(v) : gs_yaml_kind(v),
                       gs_geom_model_hint(gs_yaml_scalar(v), hint, sizeof(hint)));
  }
  return 0;
}

struct inst {
  char profile[GS_GEOM_NAME_SIZE];
  int start;
  char workload[GS_PLAN_NAME_SIZE];
};

static int inst_key(const struct gs_yaml *c, const char *key, const yaml_node_t *v, const char *where,
                    void *arg)
{
  struct inst *x = arg;
  unsigned s;
  int rc;
  if (strcmp(key, "profile") == 0)
    return gs_yaml_get_name(c, v, where, x->profile, sizeof(x->profile));
  if (strcmp(key, "workload") == 0)
    return gs_yaml_get_name(c, v, where, x->workload, sizeof(x->workload));
  if ((rc = gs_yaml_get_uint(c, v, where, GS_GEOM_MAX_GRID - 1, &s)) != 0)
    return rc;
  x->start = (int)s;
  return 0;
}

/* One current instance: "3g.20gb", "3g.20gb@4" or {profile, start, workload}. */
static int parse_inst(const struct gs_yaml *c, const yaml_node_t *n, const char *where, struct inst *x)
{
  const char *s = gs_yaml_scalar(n), *at;
  int rc;
  memset(x, 0, sizeof(*x));
  x->start = -1;
  if (!s) {
    if ((rc = gs_yaml_each_pair(c, n, where, "profile, start, workload", inst_key, x)) != 0)
      return rc;
    if (!x->profile[0])
      return gs_yaml_bad(c, n, where, "missing 'profile'");
    return 0;
  }
  at = strchr(s, '@');
  if ((at ? (size_t)(at - s) : strlen(s)) >= sizeof(x->profile) || !*s)
    return gs_yaml_bad(c, n, where, "expected a profile such as 3g.20gb or 3g.20gb@4, found '%.40s'", s);
  memcpy(x->profile, s, at ? (size_t)(at - s) : strlen(s));
  if (at) {
    char *end;
    long v = strtol(at + 1, &end, 10);
    if (*end || end == at + 1 || v < 0 || v >= GS_GEOM_MAX_GRID)
      return gs_yaml_bad(c, n, where, "'%s': the start after '@' must be a memory slice number", s);
    x->start = (int)v;
  }
  return 0;
}

/* Keeps a current workload name once, so units refer to it by index. */
static int remember_name(const struct gs_yaml *c, struct gs_plan_fleet *f, const char *name, int *out)
{
  char(*grown)[GS_PLAN_NAME_SIZE];
  for (unsigned i = 0; i < f->nprev; i++)
    if (strcmp(f->prev[i], name) == 0) {
      *out = (int)i;
      return 0;
    }
  if (!(grown = realloc(f->prev, (f->nprev + 1) * sizeof(*grown))))
    return gs_err_set(c->err, GS_E_NO_MEMORY, "%s: out of memory", c->origin);
  f->prev = grown;
  snprintf(f->prev[f->nprev], GS_PLAN_NAME_SIZE, "%s", name);
  *out = (int)f->nprev++;
  return 0;
}

/* The group's current layout, placed by geometry (which picks free starts). */
static int current_layout(const struct gs_yaml *c, const struct group *g, const char *where,
                          struct gs_plan_fleet *f, struct gs_plan_gpu *gpu)
{
  struct gs_geom_layout l = {0};
  struct gs_err e = {0};
  struct inst x[GS_GEOM_MAX_INSTANCES];
  int rc;
  if (gs_yaml_seq_len(g->mig) > GS_GEOM_MAX_INSTANCES)
    return gs_yaml_bad(c, g->mig, where, "at most %u instances per GPU", GS_GEOM_MAX_INSTANCES);
  for (unsigned i = 0; i < gs_yaml_seq_len(g->mig); i++) {
    if ((rc = parse_inst(c, gs_yaml_seq_item(c, g->mig, i), where, &x[i])) != 0)
      return rc;
    if (!(l.slot[i].profile = gs_geom_gi_profile_find(g->m, x[i].profile)))
      return gs_yaml_bad(c, gs_yaml_seq_item(c, g->mig, i), where,
                         "%s has no profile '%s' (`gpuslice layouts %s`)", g->m->key, x[i].profile,
                         g->m->key);
    l.slot[i].start = x[i].start;
    l.n++;
  }
  if (gs_geom_validate(&e, g->m, &l, &gpu->layout) != 0)
    return gs_yaml_bad(c, g->mig, where, "%s", e.msg);
  gpu->mode = GS_PLAN_MIG;
  gpu->nunit = l.n;
  for (unsigned i = 0; i < l.n; i++) {
    gpu->unit[i].workload = -1;
    gpu->unit[i].prev = -1;
    gpu->unit[i].memory_mib = gpu->layout.slot[i].profile->memory_mib;
    if (x[i].workload[0] && (rc = remember_name(c, f, x[i].workload, &gpu->unit[i].prev)) != 0)
      return rc;
  }
  return 0;
}

struct node_arg {
  struct gs_plan_fleet *f;
  char name[GS_PLAN_NAME_SIZE];
  const yaml_node_t *gpus;
};

static int node_key(const struct gs_yaml *c, const char *key, const yaml_node_t *v, const char *where,
                    void *arg)
{
  struct node_arg *a = arg;
  if (strcmp(key, "name") == 0)
    return gs_yaml_get_name(c, v, where, a->name, sizeof(a->name));
  if (gs_yaml_seq_len(v) == 0)
    return gs_yaml_bad(c, v, where, "expected a list of {model, count, mig}, found %s", gs_yaml_kind(v));
  a->gpus = v;
  return 0;
}

static int parse_group(const struct gs_yaml *c, const yaml_node_t *n, const char *where,
                       struct node_arg *a)
{
  struct group g = {.count = 1};
  unsigned first = a->f->ngpu;
  int rc;
  if ((rc = gs_yaml_each_pair(c, n, where, "model, count, mig", group_key, &g)) != 0)
    return rc;
  if (!g.m)
    return gs_yaml_bad(c, n, where, "missing 'model' (e.g. model: a100-40gb; `gpuslice models` lists them)");
  if (!g.count)
    return gs_yaml_bad(c, n, where, "'count: 0' lists no GPU; leave the entry out instead");
  if ((rc = gs_plan_fleet_add(c->err, a->f, a->name, g.m, g.count)) != 0)
    return rc;
  if (!g.mig)
    return 0;
  a->f->has_current = true;
  if ((rc = current_layout(c, &g, where, a->f, &a->f->gpu[first])) != 0)
    return rc;
  for (unsigned i = first + 1; i < a->f->ngpu; i++) {
    unsigned index = a->f->gpu[i].index;
    a->f->gpu[i] = a->f->gpu[first];
    a->f->gpu[i].index = index;
  }
  return 0;
}

static int fleet_doc(const struct gs_yaml *c, const yaml_node_t *root)
{
  const yaml_node_t *list;
  int rc;
  if ((rc = top_list(c, root, "nodes", &list)) != 0)
    return rc;
  for (unsigned i = 0; i < gs_yaml_seq_len(list); i++) {
    const yaml_node_t *n = gs_yaml_seq_item(c, list, i);
    struct node_arg a = {.f = c->user};
    char where[GS_PLAN_NAME_SIZE + 32];
    snprintf(where, sizeof(where), "node %u", i + 1);
    if ((rc = gs_yaml_each_pair(c, n, where, "name, gpus", node_key, &a)) != 0)
      return rc;
    if (!a.name[0])
      return gs_yaml_bad(c, n, where, "missing 'name'");
    if (!a.gpus)
      return gs_yaml_bad(c, n, where, "missing 'gpus' (a list of {model, count})");
    for (unsigned j = 0; j < a.f->ngpu; j++)
      if (strcmp(a.f->gpu[j].node, a.name) == 0)
        return gs_yaml_bad(c, n, where, "node '%s' is listed twice", a.name);
    snprintf(where, sizeof(where), "node '%s'", a.name);
    for (unsigned j = 0; j < gs_yaml_seq_len(a.gpus); j++)
      if ((rc = parse_group(c, gs_yaml_seq_item(c, a.gpus, j), where, &a)) != 0)
        return rc;
  }
  return 0;
}

int gs_plan_parse_fleet(struct gs_err *err, const char *origin, const char *text, size_t len,
                        struct gs_plan_fleet *out)
{
  int rc;
  memset(out, 0, sizeof(*out));
  if ((rc = gs_yaml_load(err, origin, text, len, fleet_doc, out)) != 0)
    gs_plan_fleet_free(out);
  return rc;
}

int gs_plan_fleet_from_spec(struct gs_err *err, const char *spec, struct gs_plan_fleet *out)
{
  char buf[1024], *save = NULL, *tok;
  int rc = 0;
  memset(out, 0, sizeof(*out));
  if (!spec || !*spec || strlen(spec) >= sizeof(buf))
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "--gpus: expected MODEL:COUNT[,MODEL:COUNT...], "
                                                  "e.g. a100-40gb:8,h100-80gb:4");
  memcpy(buf, spec, strlen(spec) + 1);
  for (tok = strtok_r(buf, ",", &save); tok && !rc; tok = strtok_r(NULL, ",", &save)) {
    char *colon = strchr(tok, ':'), *end = NULL;
    unsigned long count = 1;
    const struct gs_geom_model *m;
    if (colon) {
      *colon = 0;
      errno = 0;
      count = strtoul(colon + 1, &end, 10);
      if (*end || end == colon + 1 || errno || count == 0 || count > GS_PLAN_MAX_GPUS) {
        rc = gs_err_set(err, GS_E_INVALID_ARGUMENT, "--gpus: '%s': the count after ':' must be 1 to %u",
                        colon + 1, GS_PLAN_MAX_GPUS);
        break;
      }
    }
    char hint[512];
    if (!(m = gs_geom_model_find(tok)))
      rc = gs_err_set(err, GS_E_INVALID_ARGUMENT, "--gpus: unknown GPU model '%s' (%s)", tok,
                      gs_geom_model_hint(tok, hint, sizeof(hint)));
    else
      rc = gs_plan_fleet_add(err, out, "node-0", m, (unsigned)count);
  }
  if (!rc && out->ngpu == 0)
    rc = gs_err_set(err, GS_E_INVALID_ARGUMENT, "--gpus: no GPUs named (e.g. a100-40gb:8)");
  if (rc)
    gs_plan_fleet_free(out);
  return rc;
}

void gs_plan_fleet_free(struct gs_plan_fleet *f)
{
  if (!f)
    return;
  free(f->gpu);
  free(f->prev);
  memset(f, 0, sizeof(*f));
}
