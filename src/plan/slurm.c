/* SPDX-License-Identifier: Apache-2.0 */
/* slurm.c: gres.conf and slurm.conf node lines from a node's devices, and
 * gres.conf's gpu records read back (plan/slurm.h). Text only: the callers
 * find the devices (jobs/slurm.c on a live node, export_gres.c for a planned
 * fleet) and own the files. */
#include "plan/slurm.h"

#include <ctype.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void gs_plan_slurm_model_type(const struct gs_geom_model *m, char out[GS_PLAN_SLURM_TYPE_SIZE])
{
  const char *s = m->name;
  size_t i = 0;
  if (strncasecmp(s, "NVIDIA ", 7) == 0)
    s += 7;
  for (; *s && i + 1 < GS_PLAN_SLURM_TYPE_SIZE; s++)
    out[i++] = *s == ' ' ? '_' : (char)tolower((unsigned char)*s);
  out[i] = 0;
}

unsigned gs_plan_slurm_cap_minor(unsigned gpu_minor, unsigned gi, int ci)
{
  /* The driver's mig-minors file: config 1, monitor 2, then per GPU 15 GPU
   * instances of 1 + 8 lines each (reference/mig-facts.md §8.1). */
  return 3 + 135 * gpu_minor + 9 * gi + (ci < 0 ? 0 : 1 + (unsigned)ci);
}

/* ---- order ---- */

static unsigned profile_index(const struct gs_plan_slurm_dev *d)
{
  for (unsigned i = 0; d->profile && i < d->model->ngi; i++)
    if (&d->model->gi[i] == d->profile)
      return i;
  return 0;
}

/* A type's place: MIG types by the first model (in the caller's order) that
 * has them and that model's profile order; whole GPUs after every MIG type. */
struct keyed {
  struct gs_plan_slurm_dev d;
  unsigned rank, seq;
};

static int by_key(const void *a, const void *b)
{
  const struct keyed *x = a, *y = b;
  int c;
  if (x->rank != y->rank)
    return x->rank < y->rank ? -1 : 1;
  if ((c = strcmp(x->d.type, y->d.type)) != 0)
    return c;
  if (x->d.minor != y->d.minor)
    return x->d.minor < y->d.minor ? -1 : 1;
  if (x->d.gi != y->d.gi)
    return x->d.gi < y->d.gi ? -1 : 1;
  if (x->d.ci != y->d.ci)
    return x->d.ci < y->d.ci ? -1 : 1;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

void gs_plan_slurm_sort(struct gs_plan_slurm_dev *d, unsigned n)
{
  struct keyed *k = n ? calloc(n, sizeof(*k)) : NULL;
  const struct gs_geom_model *models[64];
  unsigned nmodels = 0;
  if (!k)
    return; /* out of memory: the caller's order stands, still a valid file */
  for (unsigned i = 0; i < n; i++) {
    unsigned m = 0;
    while (m < nmodels && models[m] != d[i].model)
      m++;
    if (m == nmodels && nmodels < GS_NITEMS(models))
      models[nmodels++] = d[i].model;
    k[i].d = d[i];
    k[i].seq = i;
    k[i].rank = d[i].mig ? m * 256 + profile_index(&d[i]) : (1u << 20) + m;
  }
  /* One type name, one place, even when two models share it (1g.10gb). */
  for (unsigned i = 0; i < n; i++)
    for (unsigned j = 0; j < n; j++)
      if (k[j].d.mig == k[i].d.mig && k[j].rank < k[i].rank && strcmp(k[j].d.type, k[i].d.type) == 0)
        k[i].rank = k[j].rank;
  qsort(k, n, sizeof(*k), by_key);
  for (unsigned i = 0; i < n; i++)
    d[i] = k[i].d;
  free(k);
}

/* ---- writing ---- */

static const char *dev_root(const struct gs_plan_slurm_opts *o, int *len)
{
  const char *r = o->dev_root && *o->dev_root ? o->dev_root : "/dev";
  size_t n = strlen(r);
  while (n > 1 && r[n - 1] == '/')
    n--;
  *len = (int)n;
  return r;
}

static void files(FILE *out, const struct gs_plan_slurm_dev *d, const struct gs_plan_slurm_opts *o)
{
  int n;
  const char *r = dev_root(o, &n);
  if (!d->mig) {
    fprintf(out, "File=%.*s/nvidia%u", n, r, d->minor);
    return;
  }
  fprintf(out, "MultipleFiles=%.*s/nvidia%u,%.*s/nvidia-caps/nvidia-cap%u,%.*s/nvidia-caps/nvidia-cap%u",
          n, r, d->minor, n, r, gs_plan_slurm_cap_minor(d->minor, d->gi, -1), n, r,
          gs_plan_slurm_cap_minor(d->minor, d->gi, (int)d->ci));
}

static void whole_file(FILE *out, const struct gs_plan_slurm_dev *d, const struct gs_plan_slurm_opts *o)
{
  int n;
  const char *r = dev_root(o, &n);
  fprintf(out, "File=%.*s/nvidia%u\n", n, r, d->minor);
}

static void prefix(FILE *out, const struct gs_plan_slurm_opts *o)
{
  if (o->node_lines)
    fprintf(out, "NodeName=%s ", o->node);
}

#define NAME_CHARS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"

/* Names Slurm reads as one word in both files: no spaces, commas, '=' or '#'. */
static int check_name(struct gs_err *err, const char *what, const char *w)
{
  if (!w || !*w || strspn(w, NAME_CHARS) != strlen(w))
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "%s '%.60s': use letters, digits, '.', '_' and "
                      "'-' only", what, w ? w : "");
  return 0;
}

int gs_plan_slurm_gres(struct gs_err *err, FILE *out, const struct gs_plan_slurm_dev *d, unsigned n,
                       const struct gs_plan_slurm_opts *o)
{
  unsigned nmig = 0;
  int rc;
  if (o->node_lines && (rc = check_name(err, "node name", o->node)) != 0)
    return rc;
  for (unsigned i = 0; i < n; i++)
    nmig += d[i].mig;
  fprintf(out, "# gres.conf%s%s: %u MIG device%s and %u whole GPU%s. Slurm numbers them by the\n"
               "# Gres= type order of the node's slurm.conf line, then by line order here: keep\n"
               "# that line as `gpuslice slurm node-conf` writes it.\n",
          o->node ? " of " : "", o->node ? o->node : "", nmig, nmig == 1 ? "" : "s", n - nmig,
          n - nmig == 1 ? "" : "s");
  if (o->autodetect) {
    prefix(out, o);
    fprintf(out, "AutoDetect=nvml\n");
  }
  for (unsigned i = 0; i < n; i++) {
    prefix(out, o);
    fprintf(out, "Name=gpu Type=%s ", d[i].type);
    files(out, &d[i], o);
    fprintf(out, " Flags=nvidia_gpu_env\n");
  }
  /* gres/mps and gres/shard name the GPU they share (SchedMD's gres.html). */
  for (unsigned i = 0; i < n; i++) {
    if (d[i].mps) {
      fprintf(out, "%s", o->shares_off ? "# " : "");
      prefix(out, o);
      fprintf(out, "Name=mps Count=%u ", d[i].mps);
      whole_file(out, &d[i], o);
    }
    if (d[i].shards) {
      fprintf(out, "%s", o->shares_off ? "# " : "");
      prefix(out, o);
      fprintf(out, "Name=shard Count=%u ", d[i].shards);
      whole_file(out, &d[i], o);
    }
  }
  return ferror(out) ? gs_err_set(err, GS_E_IO, "writing gres.conf failed") : 0;
}

/* extra: NAME=VALUE words, none of the three this line sets. */
static int check_extra(struct gs_err *err, const char *extra)
{
  static const char *const ours[] = {"NodeName=", "Gres=", "Features="};
  const char *p = extra;
  while (p && *p) {
    size_t len = strcspn(p, " \t");
    const char *eq = memchr(p, '=', len);
    if (len && (!eq || eq == p || strcspn(p, "\n\r#") < len))
      return gs_err_set(err, GS_E_INVALID_ARGUMENT, "--extra '%.60s': expected NAME=VALUE words "
                        "such as CPUs=64 RealMemory=512000", extra);
    for (unsigned i = 0; len && i < GS_NITEMS(ours); i++)
      if (strncasecmp(p, ours[i], strlen(ours[i])) == 0)
        return gs_err_set(err, GS_E_INVALID_ARGUMENT, "--extra '%.60s': %.*s is written by gpuslice; "
                          "leave it out", extra, (int)strlen(ours[i]) - 1, ours[i]);
    p += len;
    p += strspn(p, " \t");
  }
  if (extra && strpbrk(extra, "\n\r#"))
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "--extra: one line, no '#'");
  return 0;
}

static void gres_counts(FILE *out, const struct gs_plan_slurm_dev *d, unsigned n, bool shares)
{
  unsigned mps = 0, shards = 0;
  const char *sep = " Gres=";
  for (unsigned i = 0; i < n; i++) {
    unsigned count = 0;
    bool seen = false;
    mps += d[i].mps;
    shards += d[i].shards;
    for (unsigned j = 0; j < i && !seen; j++)
      seen = strcmp(d[j].type, d[i].type) == 0;
    for (unsigned j = i; j < n && !seen; j++)
      count += strcmp(d[j].type, d[i].type) == 0;
    if (seen)
      continue;
    fprintf(out, "%sgpu:%s:%u", sep, d[i].type, count);
    sep = ",";
  }
  if (mps && shares)
    fprintf(out, "%smps:%u", sep, mps), sep = ",";
  if (shards && shares)
    fprintf(out, "%sshard:%u", sep, shards);
}

/* Features: mig (when the node has MIG devices), each GPU model's key, and
 * mig-<config>, so users can ask for a layout with -C. */
static void features(FILE *out, const struct gs_plan_slurm_dev *d, unsigned n, const char *config)
{
  const char *sep = " Features=";
  for (unsigned i = 0; i < n; i++)
    if (d[i].mig) {
      fprintf(out, "%smig", sep);
      sep = ",";
      break;
    }
  for (unsigned i = 0; i < n; i++) {
    bool seen = false;
    for (unsigned j = 0; j < i && !seen; j++)
      seen = d[j].model == d[i].model;
    if (!seen) {
      fprintf(out, "%s%s", sep, d[i].model->key);
      sep = ",";
    }
  }
  if (config)
    fprintf(out, "%smig-%s", sep, config);
}

int gs_plan_slurm_node(struct gs_err *err, FILE *out, const struct gs_plan_slurm_dev *d, unsigned n,
                       const struct gs_plan_slurm_opts *o)
{
  int rc;
  if ((rc = check_name(err, "node name", o->node)) != 0 ||
      (o->config && (rc = check_name(err, "config name", o->config)) != 0) ||
      (rc = check_extra(err, o->extra)) != 0)
    return rc;
  fprintf(out, "NodeName=%s", o->node);
  gres_counts(out, d, n, !o->shares_off);
  features(out, d, n, o->config);
  if (o->extra && *o->extra)
    fprintf(out, " %s", o->extra);
  fprintf(out, "\n");
  return ferror(out) ? gs_err_set(err, GS_E_IO, "writing the slurm.conf line failed") : 0;
}

/* ---- reading ---- */

struct reader {
  struct gs_err *err;
  const char *origin;
  unsigned line;
};

static int bad(const struct reader *r, const char *fmt, ...) GS_PRINTF(2, 3);
static int bad(const struct reader *r, const char *fmt, ...)
{
  char what[GS_ERR_MSG_SIZE];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof(what), fmt, ap);
  va_end(ap);
  gs_err_set(r->err, GS_E_INVALID_ARGUMENT, "%s:%u: %s", r->origin, r->line, what);
  /* A damaged file must not reach a terminal raw. */
  for (char *p = r->err ? r->err->msg : NULL; p && *p; p++)
    if ((unsigned char)*p < 0x20 || *p == 0x7f)
      *p = '?';
  return GS_E_INVALID_ARGUMENT;
}

/* The words of one line that matter here; the rest are Slurm's to check. */
struct fields {
  char *node, *name, *type, *files, *autodetect;
};

#define IGNORED SIZE_MAX
static const struct {
  const char *key;
  size_t at; /* where the value goes in struct fields, or IGNORED */
} known_keys[] = {
    {"NodeName", offsetof(struct fields, node)}, {"Name", offsetof(struct fields, name)},
    {"Type", offsetof(struct fields, type)},     {"File", offsetof(struct fields, files)},
    {"Files", offsetof(struct fields, files)},   {"MultipleFiles", offsetof(struct fields, files)},
    {"AutoDetect", offsetof(struct fields, autodetect)},
    {"Count", IGNORED}, {"Cores", IGNORED}, {"CPUs", IGNORED}, {"Links", IGNORED}, {"Flags", IGNORED},
};

static int split_line(const struct reader *r, char *line, struct fields *f)
{
  memset(f, 0, sizeof(*f));
  for (char *save = NULL, *w = strtok_r(line, " \t\r", &save); w; w = strtok_r(NULL, " \t\r", &save)) {
    char *eq = strchr(w, '=');
    unsigned k = 0;
    if (!eq)
      return bad(r, "'%.40s' is not NAME=VALUE", w);
    *eq = 0;
    while (k < GS_NITEMS(known_keys) && strcasecmp(w, known_keys[k].key) != 0)
      k++;
    if (k == GS_NITEMS(known_keys))
      return bad(r, "unknown parameter '%.40s' (gres.conf(5) lists them)", w);
    if (known_keys[k].at != IGNORED)
      *(char **)((char *)f + known_keys[k].at) = eq + 1;
  }
  return 0;
}

/* Whether a line's NodeName= names node; hostlist ranges are refused. */
static int names_node(const struct reader *r, const char *list, const char *node, bool *match)
{
  size_t len = node ? strlen(node) : 0;
  *match = false;
  if (strpbrk(list, "[]"))
    return bad(r, "NodeName=%.60s: ranges are not read here; write one line per node "
                  "(`gpuslice slurm gres -N NODE --node-lines`)", list);
  if (!node)
    return bad(r, "lines name nodes (NodeName=%.60s): say which node is this one (-N NODE)", list);
  for (const char *p = list; *p; p += strcspn(p, ","), p += *p == ',')
    *match = *match || (strncmp(p, node, len) == 0 && (p[len] == ',' || p[len] == 0));
  return 0;
}

/* A cap minor into its GPU, GPU instance and (ci >= 0) compute instance. */
static bool cap_of(unsigned minor, unsigned *gpu, unsigned *gi, int *ci)
{
  unsigned v, rest;
  if (minor < 3)
    return false;
  v = minor - 3;
  *gpu = v / 135;
  rest = v % 135;
  *gi = rest / 9;
  *ci = (int)(rest % 9) - 1;
  return true;
}

static bool number_after(const char *s, const char *prefix, unsigned *out)
{
  size_t n = strlen(prefix);
  char *end;
  unsigned long v;
  if (strncmp(s, prefix, n) != 0 || !isdigit((unsigned char)s[n]))
    return false;
  v = strtoul(s + n, &end, 10);
  if (*end || v > 1000000)
    return false;
  *out = (unsigned)v;
  return true;
}

static int read_files(const struct reader *r, char *list, struct gs_plan_slurm_rec *rec)
{
  unsigned ngpu = 0, ncap = 0, cap[2] = {0, 0};
  for (char *save = NULL, *p = strtok_r(list, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
    const char *base = strrchr(p, '/') ? strrchr(p, '/') + 1 : p;
    unsigned v;
    if (strpbrk(p, "[]"))
      return bad(r, "%.80s: ranges are not read here; list each file", p);
    if (number_after(base, "nvidia-cap", &v)) {
      if (ncap++ < 2)
        cap[ncap - 1] = v;
    } else if (number_after(base, "nvidia", &v)) {
      rec->minor = v;
      ngpu++;
    } else {
      return bad(r, "%.80s is neither a /dev/nvidia<N> GPU nor a /dev/nvidia-caps/nvidia-cap<N> file", p);
    }
  }
  if (ngpu != 1 || (ncap != 0 && ncap != 2))
    return bad(r, "a gpu record names one /dev/nvidia<N> and, for a MIG device, its GPU and compute "
                  "instances' two nvidia-cap files (found %u and %u)", ngpu, ncap);
  rec->mig = ncap == 2;
  if (rec->mig) {
    unsigned g[2], gi[2];
    int ci[2];
    if (!cap_of(cap[0], &g[0], &gi[0], &ci[0]) || !cap_of(cap[1], &g[1], &gi[1], &ci[1]) ||
        g[0] != rec->minor || g[1] != rec->minor || gi[0] != gi[1] || (ci[0] < 0) == (ci[1] < 0))
      return bad(r, "nvidia-cap%u and nvidia-cap%u are not one MIG device of GPU %u (the driver's "
                    "mig-minors numbering)", cap[0], cap[1], rec->minor);
    rec->gi = gi[0];
    rec->ci = (unsigned)(ci[0] < 0 ? ci[1] : ci[0]);
  }
  return 0;
}

static int add_record(const struct reader *r, struct fields *f, struct gs_plan_slurm_rec **out,
                      unsigned *n, unsigned *cap)
{
  struct gs_plan_slurm_rec rec = {.line = r->line};
  int rc;
  if (!f->type || !*f->type)
    return bad(r, "a gpu record without Type=: give every record a type (Slurm refuses a mix)");
  if (strlen(f->type) >= sizeof(rec.type))
    return bad(r, "Type=%.40s... is too long", f->type);
  if (!f->files)
    return bad(r, "Name=gpu Type=%s without File= or MultipleFiles=: Slurm counts no GPU for it",
               f->type);
  strcpy(rec.type, f->type);
  if ((rc = read_files(r, f->files, &rec)) != 0)
    return rc;
  for (unsigned i = 0; i < *n; i++)
    if ((*out)[i].minor == rec.minor && (*out)[i].mig == rec.mig &&
        (!rec.mig || ((*out)[i].gi == rec.gi && (*out)[i].ci == rec.ci)))
      return bad(r, "the same device as line %u", (*out)[i].line);
  if (*n == *cap) {
    struct gs_plan_slurm_rec *grown;
    if (*cap >= GS_PLAN_SLURM_MAX_RECORDS)
      return bad(r, "more than %u gpu records", GS_PLAN_SLURM_MAX_RECORDS);
    if (!(grown = realloc(*out, (*cap ? *cap * 2 : 16) * sizeof(**out))))
      return gs_err_set(r->err, GS_E_NO_MEMORY, "out of memory reading %s", r->origin);
    *out = grown;
    *cap = *cap ? *cap * 2 : 16;
  }
  (*out)[(*n)++] = rec;
  return 0;
}

static int read_line(struct reader *r, char *line, const char *node, struct gs_plan_slurm_rec **out,
                     unsigned *n, unsigned *cap, int ad[2])
{
  struct fields f;
  bool mine = true;
  int rc;
  line[strcspn(line, "#")] = 0;
  if ((rc = split_line(r, line, &f)) != 0 || (f.node && (rc = names_node(r, f.node, node, &mine)) != 0))
    return rc;
  if (!mine)
    return 0;
  if (f.autodetect)
    ad[f.node ? 1 : 0] = strcasecmp(f.autodetect, "nvml") == 0;
  if (f.name && strcmp(f.name, "gpu") == 0)
    return add_record(r, &f, out, n, cap);
  return 0;
}

int gs_plan_slurm_parse(struct gs_err *err, const char *origin, const char *text, size_t len,
                        const char *node, struct gs_plan_slurm_rec **out, unsigned *n,
                        bool *autodetect)
{
  struct reader r = {err, origin ? origin : "gres.conf", 0};
  char *copy = malloc(len + 1), *p, *next;
  unsigned cap = 0;
  int ad[2] = {-1, -1}, rc = 0;
  *out = NULL;
  *n = 0;
  if (!copy)
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory reading %s", r.origin);
  memcpy(copy, text, len);
  copy[len] = 0;
  if (strlen(copy) != len)
    rc = gs_err_set(err, GS_E_INVALID_ARGUMENT, "%s: holds a NUL byte; not a gres.conf", r.origin);
  for (p = copy; rc == 0 && p; p = next) {
    if ((next = strchr(p, '\n')) != NULL)
      *next++ = 0;
    r.line++;
    rc = read_line(&r, p, node, out, n, &cap, ad);
  }
  free(copy);
  if (rc) {
    free(*out);
    *out = NULL;
    *n = 0;
    return rc;
  }
  /* A node's own AutoDetect line trumps the global one (gres.conf(5)). */
  *autodetect = ad[1] >= 0 ? ad[1] == 1 : ad[0] == 1;
  return 0;
}
