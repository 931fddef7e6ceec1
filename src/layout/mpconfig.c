/* SPDX-License-Identifier: Apache-2.0 */
/* mpconfig.c: the config files nvidia-mig-parted writes: `export` (the
 * current layout, entries merged across GPUs that agree, as its
 * mergeMigConfigSpecs) and `generate-config` (all-disabled, all-enabled,
 * all-balanced and one all-<profile> per GPU-instance profile the GPUs
 * offer, as its builder and discovery packages), in YAML as gopkg.in/yaml.v2
 * lays it out (map keys in its "natural" order) or JSON as Go's
 * encoding/json indents it. */
#include "layout/mp.h"

#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_CONFIGS 64
#define ID_SIZE 16 /* "0x20B010DE" */

/* One entry of a v1 spec, as mig-parted's MigConfigSpec holds it. */
struct entry {
  enum { NO_FILTER, ONE_FILTER, FILTER_LIST } filter_kind;
  unsigned nfilter;
  char filter[GS_BACKEND_MAX_GPUS][ID_SIZE];
  bool all;
  unsigned ndev;
  unsigned dev[GS_BACKEND_MAX_GPUS];
  bool enabled;
  bool devices_nil;             /* mig-devices unset: JSON null (YAML still {}) */
  struct gs__mp_counts devices;
};

struct config {
  char name[GS_LAYOUT_NAME_SIZE];
  unsigned n;
  struct entry *e;              /* spec.room of them */
};

struct spec {
  unsigned n;
  unsigned room;                /* entries a config may need: one per GPU at most */
  struct config c[MAX_CONFIGS];
};

static void spec_free(struct spec *s)
{
  for (unsigned i = 0; s && i < s->n; i++)
    free(s->c[i].e);
}

static struct config *add_config(struct gs_err *err, struct spec *s, const char *name)
{
  struct config *c;
  if (s->n == MAX_CONFIGS) {
    gs_err_set(err, GS_E_INSUFFICIENT_SIZE, "more than %u configs", MAX_CONFIGS);
    return NULL;
  }
  c = &s->c[s->n];
  if (!(c->e = calloc(s->room ? s->room : 1, sizeof(*c->e)))) {
    gs_err_set(err, GS_E_NO_MEMORY, "out of memory writing the config");
    return NULL;
  }
  snprintf(c->name, sizeof(c->name), "%s", name);
  c->n = 0;
  s->n++;
  return c;
}

/* ---- yaml.v2's layout ---- */

/* yaml.v2's keyList.Less: letters after other characters, digit runs
 * compared as numbers ("1g.5gb" before "1g.10gb"). */
static bool yaml_key_less(const char *a, const char *b)
{
  size_t la = strlen(a), lb = strlen(b);
  for (size_t i = 0; i < la && i < lb; i++) {
    bool al, bl;
    long long an = 0, bn = 0;
    size_t ai, bi;
    if (a[i] == b[i])
      continue;
    al = isalpha((unsigned char)a[i]);
    bl = isalpha((unsigned char)b[i]);
    if (al && bl)
      return a[i] < b[i];
    if (al || bl)
      return bl;
    if (a[i] == '0' || b[i] == '0')
      for (size_t j = i; j-- > 0 && isdigit((unsigned char)a[j]);)
        if (a[j] != '0') {
          an = bn = 1;
          break;
        }
    for (ai = i; ai < la && isdigit((unsigned char)a[ai]); ai++)
      an = an * 10 + (a[ai] - '0');
    for (bi = i; bi < lb && isdigit((unsigned char)b[bi]); bi++)
      bn = bn * 10 + (b[bi] - '0');
    if (an != bn)
      return an < bn;
    if (ai != bi)
      return ai < bi;
    return a[i] < b[i];
  }
  return la < lb;
}

/* Orders the n names of `stride` bytes each at `names` into order[] by less. */
static void sort_names(const void *names, size_t stride, unsigned n, unsigned *order,
                       bool (*less)(const char *, const char *))
{
  for (unsigned i = 0; i < n; i++) {
    unsigned j = i;
    const char *ni = (const char *)names + i * stride;
    for (; j > 0 && less(ni, (const char *)names + order[j - 1] * stride); j--)
      order[j] = order[j - 1];
    order[j] = i;
  }
}

static bool byte_less(const char *a, const char *b)
{
  return strcmp(a, b) < 0;
}

/* A scalar yaml.v2 writes plain, or double-quoted when plain text would read
 * back as something else (a number such as 0x20B010DE, a bool, null). */
static void yaml_scalar(FILE *f, const char *s)
{
  static const char *const special[] = {"true", "false", "yes", "no", "on", "off", "y", "n", "null", "~", ""};
  bool plain = isalpha((unsigned char)s[0]) || isdigit((unsigned char)s[0]);
  char *end;
  for (const char *p = s; *p && plain; p++)
    plain = isalnum((unsigned char)*p) || strchr("-._+/", *p);
  for (unsigned i = 0; i < GS_NITEMS(special) && plain; i++)
    plain = strcasecmp(s, special[i]) != 0;
  if (plain) {
    (void)strtod(s, &end);
    plain = *end != 0 && (strtoll(s, &end, 0), *end != 0);
  }
  fprintf(f, plain ? "%s" : "\"%s\"", s);
}

static void yaml_entry(FILE *f, const struct entry *e)
{
  unsigned order[GS__MP_MAX_NAMES];
  const char *lead = "  - ";
  if (e->filter_kind == ONE_FILTER) {
    fprintf(f, "%sdevice-filter: ", lead);
    yaml_scalar(f, e->filter[0]);
    fputc('\n', f);
    lead = "    ";
  } else if (e->filter_kind == FILTER_LIST) {
    fprintf(f, "%sdevice-filter: [", lead);
    for (unsigned i = 0; i < e->nfilter; i++) {
      fputs(i ? ", " : "", f);
      yaml_scalar(f, e->filter[i]);
    }
    fputs("]\n", f);
    lead = "    ";
  }
  if (e->all)
    fprintf(f, "%sdevices: all\n", lead);
  else {
    fprintf(f, "%sdevices: [", lead);
    for (unsigned i = 0; i < e->ndev; i++)
      fprintf(f, "%s%u", i ? ", " : "", e->dev[i]);
    fputs("]\n", f);
  }
  fprintf(f, "    mig-enabled: %s\n    mig-devices:%s\n", e->enabled ? "true" : "false",
          e->devices.n ? "" : " {}");
  sort_names(e->devices.name, GS_GEOM_NAME_SIZE, e->devices.n, order, yaml_key_less);
  for (unsigned i = 0; i < e->devices.n; i++) {
    fputs("      ", f);
    yaml_scalar(f, e->devices.name[order[i]]);
    fprintf(f, ": %u\n", e->devices.count[order[i]]);
  }
}

static void write_yaml(FILE *f, const struct spec *s)
{
  unsigned order[MAX_CONFIGS];
  sort_names(s->c[0].name, sizeof(s->c[0]), s->n, order, yaml_key_less);
  fputs("version: v1\nmig-configs:\n", f);
  for (unsigned i = 0; i < s->n; i++) {
    const struct config *c = &s->c[order[i]];
    fputs("  ", f);
    yaml_scalar(f, c->name);
    fputs(":\n", f);
    for (unsigned k = 0; k < c->n; k++)
      yaml_entry(f, &c->e[k]);
  }
}

/* ---- encoding/json's layout ---- */

static json_t *json_entry(const struct entry *e)
{
  json_t *o = json_object(), *v;
  unsigned order[GS__MP_MAX_NAMES];
  if (e->filter_kind == ONE_FILTER)
    json_object_set_new(o, "device-filter", json_string(e->filter[0]));
  else if (e->filter_kind == FILTER_LIST) {
    v = json_array();
    for (unsigned i = 0; i < e->nfilter; i++)
      json_array_append_new(v, json_string(e->filter[i]));
    json_object_set_new(o, "device-filter", v);
  }
  if (e->all)
    v = json_string("all");
  else
    for (unsigned i = 0, ok = (v = json_array()) != NULL; ok && i < e->ndev; i++)
      json_array_append_new(v, json_integer(e->dev[i]));
  json_object_set_new(o, "devices", v);
  json_object_set_new(o, "mig-enabled", json_boolean(e->enabled));
  v = e->devices_nil ? json_null() : json_object();
  sort_names(e->devices.name, GS_GEOM_NAME_SIZE, e->devices.n, order, byte_less);
  for (unsigned i = 0; i < e->devices.n; i++)
    json_object_set_new(v, e->devices.name[order[i]], json_integer(e->devices.count[order[i]]));
  json_object_set_new(o, "mig-devices", v);
  return o;
}

static int write_json(struct gs_err *err, FILE *f, const struct spec *s)
{
  unsigned order[MAX_CONFIGS];
  json_t *root = json_object(), *configs = json_object();
  int rc;
  sort_names(s->c[0].name, sizeof(s->c[0]), s->n, order, byte_less);
  for (unsigned i = 0; i < s->n; i++) {
    json_t *list = json_array();
    for (unsigned k = 0; k < s->c[order[i]].n; k++)
      json_array_append_new(list, json_entry(&s->c[order[i]].e[k]));
    json_object_set_new(configs, s->c[order[i]].name, list);
  }
  json_object_set_new(root, "version", json_string("v1"));
  json_object_set_new(root, "mig-configs", configs);
  /* Go's MarshalIndent ends without a newline, and so does mig-parted's output. */
  rc = json_dumpf(root, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
  json_decref(root);
  return rc ? gs_err_set(err, GS_E_NO_MEMORY, "out of memory writing JSON") : 0;
}

static int render(struct gs_err *err, const struct spec *s, bool json, char **out)
{
  size_t size = 0;
  FILE *f = open_memstream(out, &size);
  int rc = 0;
  if (!f)
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory writing the config");
  if (json)
    rc = write_json(err, f, s);
  else
    write_yaml(f, s);
  fclose(f);
  if (rc) {
    free(*out);
    *out = NULL;
  }
  return rc;
}

/* ---- export ---- */

static void primary_id(const struct gs_gpu_info *g, char out[ID_SIZE])
{
  snprintf(out, ID_SIZE, "0x%08X", g->pci_device_id ? g->pci_device_id : g->model->pci_id);
}

static bool has_filter(const struct entry *e, const char *id)
{
  for (unsigned i = 0; i < e->nfilter; i++)
    if (strcmp(e->filter[i], id) == 0)
      return true;
  return false;
}

/* Adds a's devices and filters to m (both lists stay sorted). */
static void merge_into(struct entry *m, const struct entry *a)
{
  unsigned i;
  for (i = 0; i < m->ndev && m->dev[i] < a->dev[0]; i++)
    ;
  memmove(&m->dev[i + 1], &m->dev[i], (m->ndev - i) * sizeof(m->dev[0]));
  m->dev[i] = a->dev[0];
  m->ndev++;
  if (has_filter(m, a->filter[0]))
    return;
  for (i = 0; i < m->nfilter && strcmp(m->filter[i], a->filter[0]) < 0; i++)
    ;
  memmove(&m->filter[i + 1], &m->filter[i], (m->nfilter - i) * sizeof(m->filter[0]));
  snprintf(m->filter[i], ID_SIZE, "%s", a->filter[0]);
  m->nfilter++;
}

/* mig-parted's mergeMigConfigSpecs over one entry per GPU ([id], [index]). */
static void merge(const struct entry *per_gpu, unsigned n, struct config *c)
{
  char ids[GS_BACKEND_MAX_GPUS][ID_SIZE];
  unsigned nids = 0;
  for (unsigned g = 0; g < n; g++) {
    unsigned k;
    for (k = 0; k < c->n; k++)
      if (c->e[k].enabled == per_gpu[g].enabled && gs__mp_counts_equal(&c->e[k].devices, &per_gpu[g].devices))
        break;
    if (k < c->n)
      merge_into(&c->e[k], &per_gpu[g]);
    else
      c->e[c->n++] = per_gpu[g];
    for (k = 0; k < nids && strcmp(ids[k], per_gpu[g].filter[0]) != 0; k++)
      ;
    if (k == nids)
      snprintf(ids[nids++], ID_SIZE, "%s", per_gpu[g].filter[0]);
  }
  for (unsigned k = 0; k < c->n; k++) {
    struct entry *e = &c->e[k];
    unsigned covered = 0;
    /* `all` when the entry holds every GPU of the models it names. */
    for (unsigned g = 0; g < n; g++)
      covered += has_filter(e, per_gpu[g].filter[0]);
    e->all = covered == e->ndev;
    e->filter_kind = nids == 1 ? NO_FILTER : e->nfilter == 1 ? ONE_FILTER : FILTER_LIST;
  }
  if (c->n == 1)
    c->e[0].filter_kind = NO_FILTER;
}

static int export_gpu(struct gs_err *err, struct gs_backend *b, unsigned g, struct entry *e)
{
  struct gs_layout_current cur;
  struct gs_gpu_info info;
  int rc;
  if ((rc = b->ops->gpu_info(b, err, g, &info)) != 0)
    return rc;
  memset(e, 0, sizeof(*e));
  primary_id(&info, e->filter[0]);
  e->nfilter = 1;
  e->dev[0] = g;
  e->ndev = 1;
  e->enabled = info.model && info.model->ngi && info.mig_current;
  if (!e->enabled)
    return 0;
  if ((rc = gs_layout_read_current(err, b, g, &cur)) != 0)
    return rc;
  gs__mp_counts_current(&cur, &e->devices);
  return 0;
}

int gs_layout_mp_export(struct gs_err *err, struct gs_backend *b, const char *label, bool json, char **out)
{
  struct spec *s = calloc(1, sizeof(*s));
  struct entry *per_gpu = NULL;
  struct config *c = NULL;
  unsigned n = 0;
  int rc = s ? b->ops->gpu_count(b, err, &n) : gs_err_set(err, GS_E_NO_MEMORY, "out of memory exporting");
  *out = NULL;
  if (rc == 0) {
    s->room = n;
    if (!(per_gpu = calloc(n ? n : 1, sizeof(*per_gpu))) || !(c = add_config(err, s, label)))
      rc = gs_err_set(err, GS_E_NO_MEMORY, "out of memory exporting the layout");
  }
  for (unsigned g = 0; g < n && rc == 0; g++)
    rc = export_gpu(err, b, g, &per_gpu[g]);
  if (rc == 0) {
    merge(per_gpu, n, c);
    rc = render(err, s, json, out);
  }
  spec_free(s);
  free(s);
  free(per_gpu);
  return rc;
}

/* ---- generate-config ---- */

/* A discovered profile: name, max count, the GPU's device id. */
struct found {
  const struct gs_geom_gi_profile *p;
  char id[ID_SIZE];
};

/* go-nvlib's profiles of one GPU, by NVML enum: each GI profile, then its
 * compute-instance profiles; mig-parted keeps the GI ones. */
static unsigned discover_gpu(const struct gs_layout_logger *log, unsigned g, const struct gs_gpu_info *info,
                             struct found *out, unsigned room)
{
  const struct gs_geom_model *m = info->model;
  unsigned total = 0, n = 0;
  char id[ID_SIZE];
  primary_id(info, id);
  if (!m || m->ngi == 0) {
    gs__mp_log(log, GS_LAYOUT_INFO, "Device %u (DeviceID: %s) is not MIG-capable, skipping", g, id);
    return 0;
  }
  if (strcmp(id, "0x20B710DE") == 0)
    gs__mp_log(log, GS_LAYOUT_INFO, "Device %u is A30 (DeviceID: %s), using hardcoded profiles due to NVML bug",
               g, id);
  else
    gs__mp_log(log, GS_LAYOUT_INFO, "Discovering MIG profiles for device %u (DeviceID: %s)", g, id);
  for (unsigned e = 0, left = m->ngi; left && e < 64; e++)
    for (unsigned i = 0; i < m->ngi; i++) {
      struct gs_geom_ci_profile cps[GS_GEOM_MAX_CI_PROFILES];
      if (m->gi[i].nvml_enum != e)
        continue;
      left--;
      total += gs_geom_ci_profiles(m, &m->gi[i], cps);
      if (n == room)
        continue;
      out[n].p = &m->gi[i];
      snprintf(out[n++].id, ID_SIZE, "%s", id);
    }
  if (strcmp(id, "0x20B710DE") != 0) {
    gs__mp_log(log, GS_LAYOUT_INFO, "Found %u MIG profile(s) for device %u", total, g);
    for (unsigned k = 0; k < n; k++) {
      struct gs_geom_ci_profile cps[GS_GEOM_MAX_CI_PROFILES];
      unsigned nc = gs_geom_ci_profiles(m, out[k].p, cps);
      for (unsigned c = 0; c < nc; c++)
        if (!cps[c].is_default)
          gs__mp_log(log, GS_LAYOUT_INFO, "Skipping Compute Instance profile %s (C=%u, G=%u)", cps[c].name,
                     cps[c].compute_slices, out[k].p->compute_slices);
    }
  }
  return n;
}

/* A profile's G and whether it is a base one (no +attribute, no -me). */
static bool base_profile(const struct gs_geom_gi_profile *p)
{
  return !strchr(p->name, '+') && !strchr(p->name, '-');
}

/* mig-parted's buildAllBalancedConfig: per device id, two of the 1g profile
 * with the highest count, one 2g, and one 3g on 7-slice GPUs (no 3g on
 * 4-slice ones). */
static int add_balanced(struct gs_err *err, struct spec *s, const struct found *f, unsigned n, unsigned nids,
                        const struct gs_layout_logger *log)
{
  static const unsigned want7[4] = {0, 2, 1, 1}, want4[4] = {0, 2, 1, 0};
  char ids[GS_BACKEND_MAX_GPUS][ID_SIZE];
  unsigned order[GS_BACKEND_MAX_GPUS], nu = 0;
  struct config *c = NULL;
  for (unsigned i = 0; i < n; i++) {
    unsigned k;
    for (k = 0; k < nu && strcmp(ids[k], f[i].id) != 0; k++)
      ;
    if (k == nu && nu < GS_BACKEND_MAX_GPUS)
      snprintf(ids[nu++], ID_SIZE, "%s", f[i].id);
  }
  sort_names(ids, ID_SIZE, nu, order, byte_less);
  for (unsigned d = 0; d < nu; d++) {
    const struct gs_geom_gi_profile *best[4] = {NULL};
    const unsigned *want;
    unsigned slots = 0;
    struct entry *e;
    for (unsigned i = 0; i < n; i++) {
      const struct gs_geom_gi_profile *p = f[i].p;
      if (strcmp(f[i].id, ids[order[d]]) != 0 || !base_profile(p))
        continue;
      slots = p->compute_slices > slots ? p->compute_slices : slots;
      if (p->compute_slices <= 3 && (!best[p->compute_slices] || p->max_count > best[p->compute_slices]->max_count))
        best[p->compute_slices] = p;
    }
    want = slots == 7 ? want7 : slots == 4 ? want4 : NULL;
    if (!want || !best[1] || !best[2] || (want[3] && !best[3])) {
      gs__mp_log(log, GS_LAYOUT_WARN, "Device %s missing required profiles for all-balanced config, skipping",
                 ids[order[d]]);
      continue;
    }
    if (!c && !(c = add_config(err, s, "all-balanced")))
      return err ? err->code : GS_E_NO_MEMORY;
    e = &c->e[c->n++];
    e->all = e->enabled = true;
    for (unsigned g = 1; g <= 3; g++)
      for (unsigned k = 0; k < want[g]; k++)
        gs__mp_counts_add(&e->devices, best[g]->name);
    if (nids > 1) {
      e->filter_kind = FILTER_LIST;
      snprintf(e->filter[e->nfilter++], ID_SIZE, "%s", ids[order[d]]);
    }
    gs__mp_log(log, GS_LAYOUT_INFO, "Generated all-balanced config for device %s (max slots: %u)", ids[order[d]],
               slots);
  }
  return 0;
}

/* One all-<profile> config: an entry per distinct max count, naming the
 * device ids that have it when the machine has several models. */
static int add_profile(struct gs_err *err, struct spec *s, const char *name, const struct found *f, unsigned n,
                       unsigned nids, const struct gs_layout_logger *log)
{
  char cname[GS_LAYOUT_NAME_SIZE], list[GS_ERR_MSG_SIZE];
  unsigned counts[GS_BACKEND_MAX_GPUS], nc = 0;
  struct config *c;
  snprintf(cname, sizeof(cname), "all-%s", name);
  for (char *p = cname; *p; p++)
    *p = *p == '+' ? '.' : *p;
  if (!(c = add_config(err, s, cname)))
    return err ? err->code : GS_E_NO_MEMORY;
  for (unsigned i = 0; i < n; i++) {
    unsigned k, j;
    if (strcmp(f[i].p->name, name) != 0)
      continue;
    for (k = 0; k < nc && counts[k] != f[i].p->max_count; k++)
      ;
    if (k < nc)
      continue;
    for (j = nc++; j > 0 && counts[j - 1] > f[i].p->max_count; j--)
      counts[j] = counts[j - 1];
    counts[j] = f[i].p->max_count;
  }
  for (unsigned k = 0; k < nc; k++) {
    struct entry *e = &c->e[c->n++];
    size_t used = (size_t)snprintf(list, sizeof(list), "[");
    e->all = e->enabled = true;
    gs__mp_counts_add(&e->devices, name);
    e->devices.count[0] = counts[k];
    for (unsigned i = 0; i < n; i++)
      if (strcmp(f[i].p->name, name) == 0 && f[i].p->max_count == counts[k] && !has_filter(e, f[i].id)) {
        unsigned j;
        for (j = e->nfilter++; j > 0 && strcmp(e->filter[j - 1], f[i].id) > 0; j--)
          memcpy(e->filter[j], e->filter[j - 1], ID_SIZE);
        snprintf(e->filter[j], ID_SIZE, "%s", f[i].id);
      }
    for (unsigned i = 0; i < e->nfilter && used < sizeof(list); i++)
      used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s", i ? " " : "", e->filter[i]);
    if (used < sizeof(list))
      snprintf(list + used, sizeof(list) - used, "]");
    e->filter_kind = nids > 1 ? FILTER_LIST : NO_FILTER;
    gs__mp_log(log, GS_LAYOUT_INFO, "Generated config '%s' for profile '%s' with max count %u (devices: %s)",
               cname, name, counts[k], list);
  }
  return 0;
}

/* mig-parted's buildMigConfigSpec over the profiles discovered. */
static int build_generated(struct gs_err *err, struct spec *s, const struct found *f, unsigned n,
                           const struct gs_layout_logger *log)
{
  char names[GS_BACKEND_MAX_GPUS][GS_GEOM_NAME_SIZE], ids[GS_BACKEND_MAX_GPUS][ID_SIZE];
  unsigned order[GS_BACKEND_MAX_GPUS], nn = 0, nids = 0;
  struct config *c;
  int rc;
  for (unsigned i = 0; i < n; i++) {
    unsigned k;
    for (k = 0; k < nn && strcmp(names[k], f[i].p->name) != 0; k++)
      ;
    if (k == nn && nn < GS_BACKEND_MAX_GPUS)
      snprintf(names[nn++], GS_GEOM_NAME_SIZE, "%s", f[i].p->name);
    for (k = 0; k < nids && strcmp(ids[k], f[i].id) != 0; k++)
      ;
    if (k == nids && nids < GS_BACKEND_MAX_GPUS)
      snprintf(ids[nids++], ID_SIZE, "%s", f[i].id);
  }
  if (!(c = add_config(err, s, "all-disabled")))
    return err ? err->code : GS_E_NO_MEMORY;
  c->e[c->n++] = (struct entry){.all = true, .devices_nil = true};
  if (!(c = add_config(err, s, "all-enabled")))
    return err ? err->code : GS_E_NO_MEMORY;
  c->e[c->n++] = (struct entry){.all = true, .enabled = true};
  if ((rc = add_balanced(err, s, f, n, nids, log)) != 0)
    return rc;
  sort_names(names, GS_GEOM_NAME_SIZE, nn, order, byte_less);
  for (unsigned k = 0; k < nn; k++)
    if ((rc = add_profile(err, s, names[order[k]], f, n, nids, log)) != 0)
      return rc;
  return 0;
}

int gs_layout_mp_generate(struct gs_err *err, struct gs_backend *b, bool json, char **out,
                          const struct gs_layout_logger *log)
{
  struct found *f = calloc(GS_BACKEND_MAX_GPUS * GS_GEOM_MAX_CI_PROFILES * 2, sizeof(*f));
  struct spec *s = calloc(1, sizeof(*s));
  unsigned ngpu = 0, n = 0, capable = 0;
  int rc;
  *out = NULL;
  if (!f || !s)
    rc = gs_err_set(err, GS_E_NO_MEMORY, "out of memory generating the config");
  else if ((rc = b->ops->gpu_count(b, err, &ngpu)) == 0) {
    s->room = ngpu;
    for (unsigned g = 0; g < ngpu && rc == 0; g++) {
      struct gs_gpu_info info;
      if ((rc = b->ops->gpu_info(b, err, g, &info)) == 0) {
        capable += info.model && info.model->ngi;
        n += discover_gpu(log, g, &info, f + n, GS_BACKEND_MAX_GPUS * GS_GEOM_MAX_CI_PROFILES * 2 - n);
      }
    }
    if (rc == 0 && capable == 0)
      rc = gs_err_set(err, GS_E_NOT_FOUND, "failed to discover MIG profiles: no MIG-capable devices found on the "
                                           "system");
    if (rc == 0 && (rc = build_generated(err, s, f, n, log)) == 0)
      rc = render(err, s, json, out);
  }
  spec_free(s);
  free(s);
  free(f);
  return rc;
}
