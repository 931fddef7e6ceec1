/* config.c: reads layout config files: nvidia-mig-parted's v1 format as it is
 * (`version: v1`, `mig-configs`) and ours (`version: gpuslice/v1`, `configs`,
 * with placements, compute instances and GPUs chosen by UUID). libyaml builds
 * the document; this file checks its shape strictly and keeps line numbers so
 * every error names the file, the line, the entry and the fix. */
#include "layout/layout.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

struct ctx {
  struct gs_err *err;
  const char *origin;
  yaml_document_t *doc;
  enum gs_layout_format format;
};

static int bad(const struct ctx *c, const yaml_node_t *n, const char *where, const char *fmt, ...)
    GS_PRINTF(4, 5);
static int bad(const struct ctx *c, const yaml_node_t *n, const char *where, const char *fmt, ...)
{
  char what[GS_ERR_MSG_SIZE];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof(what), fmt, ap);
  va_end(ap);
  return gs_err_set(c->err, GS_E_INVALID_ARGUMENT, "%s:%lu: %s: %s", c->origin,
                    n ? (unsigned long)n->start_mark.line + 1 : 1ul, where, what);
}

static const char *scalar(const yaml_node_t *n)
{
  return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static const char *kind_of(const yaml_node_t *n)
{
  if (!n)
    return "nothing";
  return n->type == YAML_SCALAR_NODE ? "a value" : n->type == YAML_SEQUENCE_NODE ? "a list" : "a map";
}

/* ---- typed scalars ---- */

static int get_bool(const struct ctx *c, const yaml_node_t *n, const char *where, bool *out)
{
  const char *v = scalar(n);
  if (v && (strcmp(v, "true") == 0 || strcmp(v, "True") == 0 || strcmp(v, "yes") == 0))
    *out = true;
  else if (v && (strcmp(v, "false") == 0 || strcmp(v, "False") == 0 || strcmp(v, "no") == 0))
    *out = false;
  else
    return bad(c, n, where, "expected true or false, found %s%s%s", v ? "'" : kind_of(n), v ? v : "",
               v ? "'" : "");
  return 0;
}

static int get_uint(const struct ctx *c, const yaml_node_t *n, const char *where, unsigned max,
                    unsigned *out)
{
  const char *v = scalar(n);
  char *end;
  unsigned long x;
  errno = 0;
  if (!v || !*v || *v == '-' || *v == '+')
    return bad(c, n, where, "expected a number from 0 to %u, found %s", max, v ? v : kind_of(n));
  x = strtoul(v, &end, 10);
  if (*end || errno || x > max)
    return bad(c, n, where, "expected a number from 0 to %u, found '%s'", max, v);
  *out = (unsigned)x;
  return 0;
}

static int get_name(const struct ctx *c, const yaml_node_t *n, const char *where, char *out, size_t size)
{
  const char *v = scalar(n);
  if (!v || !*v)
    return bad(c, n, where, "expected a name, found %s", v ? "an empty value" : kind_of(n));
  if (strlen(v) >= size)
    return bad(c, n, where, "'%.40s...' is too long (at most %zu characters)", v, size - 1);
  memcpy(out, v, strlen(v) + 1);
  return 0;
}

/* ---- maps with a fixed set of keys ---- */

/* True when the comma-separated list holds exactly key. */
static bool list_has(const char *list, const char *key, size_t klen)
{
  if (klen == 0)
    return false;
  for (const char *a = list; *a && (a = strstr(a, key)) != NULL; a++)
    if ((a == list || a[-1] == ',') && (a[klen] == ',' || a[klen] == 0))
      return true;
  return false;
}

typedef int (*key_fn)(const struct ctx *c, const char *key, const yaml_node_t *value,
                      const char *where, void *arg);

/* Visits every pair of a map; keys outside `allowed` (comma-separated) and
 * repeated keys are errors, as mig-parted's strict decoder has them. */
static int each_pair(const struct ctx *c, const yaml_node_t *map, const char *where,
                     const char *allowed, key_fn fn, void *arg)
{
  if (!map || map->type != YAML_MAPPING_NODE)
    return bad(c, map, where, "expected a map, found %s", kind_of(map));
  for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
    const yaml_node_t *k = yaml_document_get_node(c->doc, p->key);
    const yaml_node_t *v = yaml_document_get_node(c->doc, p->value);
    const char *key = scalar(k);
    char sub[256];
    size_t klen;
    int rc;
    if (!key)
      return bad(c, k, where, "expected a name as key, found %s", kind_of(k));
    klen = strlen(key);
    for (yaml_node_pair_t *q = map->data.mapping.pairs.start; q < p; q++)
      if (scalar(yaml_document_get_node(c->doc, q->key)) &&
          strcmp(scalar(yaml_document_get_node(c->doc, q->key)), key) == 0)
        return bad(c, k, where, "'%s' appears twice", key);
    if (allowed && !list_has(allowed, key, klen))
      return bad(c, k, where, "unexpected key '%s' (allowed: %s)", key, allowed);
    snprintf(sub, sizeof(sub), "%s%s%s", where, *where ? "." : "", key);
    if ((rc = fn(c, key, v, sub, arg)) != 0)
      return rc;
  }
  return 0;
}

static const yaml_node_t *lookup(const struct ctx *c, const yaml_node_t *map, const char *key)
{
  if (!map || map->type != YAML_MAPPING_NODE)
    return NULL;
  for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
    const char *k = scalar(yaml_document_get_node(c->doc, p->key));
    if (k && strcmp(k, key) == 0)
      return yaml_document_get_node(c->doc, p->value);
  }
  return NULL;
}

static unsigned seq_len(const yaml_node_t *n)
{
  return (unsigned)(n->data.sequence.items.top - n->data.sequence.items.start);
}

static const yaml_node_t *seq_item(const struct ctx *c, const yaml_node_t *n, unsigned i)
{
  return yaml_document_get_node(c->doc, n->data.sequence.items.start[i]);
}

/* ---- devices and filters ---- */

static int parse_devices(const struct ctx *c, const yaml_node_t *n, const char *where,
                         struct gs_layout_entry *e)
{
  const char *v = scalar(n);
  if (v && strcmp(v, "all") == 0) {
    e->all_devices = true;
    return 0;
  }
  if (!n || n->type != YAML_SEQUENCE_NODE || seq_len(n) == 0)
    return bad(c, n, where, "expected 'all' or a list of GPU indices%s (e.g. [0, 1])",
               c->format == GS_LAYOUT_GPUSLICE ? " or UUIDs" : "");
  for (unsigned i = 0; i < seq_len(n); i++) {
    const yaml_node_t *item = seq_item(c, n, i);
    const char *s = scalar(item);
    int rc;
    if (c->format == GS_LAYOUT_GPUSLICE && s && strncmp(s, "GPU-", 4) == 0) {
      if (e->nuuid == GS_BACKEND_MAX_GPUS)
        return bad(c, item, where, "too many GPUs (at most %u)", GS_BACKEND_MAX_GPUS);
      if ((rc = get_name(c, item, where, e->uuid[e->nuuid], GS_BACKEND_UUID_SIZE)) != 0)
        return rc;
      e->nuuid++;
      continue;
    }
    if (e->ndev == GS_BACKEND_MAX_GPUS)
      return bad(c, item, where, "too many GPUs (at most %u)", GS_BACKEND_MAX_GPUS);
    if ((rc = get_uint(c, item, where, GS_BACKEND_MAX_GPUS - 1, &e->dev[e->ndev])) != 0)
      return rc;
    e->ndev++;
  }
  return 0;
}

static int parse_filter(const struct ctx *c, const yaml_node_t *n, const char *where,
                        struct gs_layout_entry *e)
{
  if (scalar(n))
    return get_name(c, n, where, e->filter[e->nfilter++], GS_LAYOUT_NAME_SIZE);
  if (!n || n->type != YAML_SEQUENCE_NODE || seq_len(n) == 0)
    return bad(c, n, where, "expected a PCI device id such as 0x20B010DE, or a list of them");
  for (unsigned i = 0; i < seq_len(n); i++) {
    int rc;
    if (e->nfilter == GS_LAYOUT_MAX_FILTERS)
      return bad(c, seq_item(c, n, i), where, "too many filters (at most %u)", GS_LAYOUT_MAX_FILTERS);
    if ((rc = get_name(c, seq_item(c, n, i), where, e->filter[e->nfilter++], GS_LAYOUT_NAME_SIZE)) != 0)
      return rc;
  }
  return 0;
}

/* ---- what the GPUs get ---- */

static struct gs_layout_spec *new_spec(const struct ctx *c, const yaml_node_t *n, const char *where,
                                       struct gs_layout_entry *e)
{
  struct gs_layout_spec *s;
  if (e->nspec == GS_LAYOUT_MAX_SPECS) {
    bad(c, n, where, "too many instance lines (at most %u)", GS_LAYOUT_MAX_SPECS);
    return NULL;
  }
  s = &e->spec[e->nspec++];
  memset(s, 0, sizeof(*s));
  s->start = -1;
  s->count = 1;
  s->line = (unsigned)n->start_mark.line + 1;
  return s;
}

/* mig-parted: `"1g.5gb": 7` (a CI profile such as "1c.3g.20gb" is allowed). */
static int mig_device(const struct ctx *c, const char *key, const yaml_node_t *v, const char *where,
                      void *arg)
{
  struct gs_layout_entry *e = arg;
  struct gs_layout_spec *s = new_spec(c, v, where, e);
  int rc;
  if (!s)
    return c->err ? c->err->code : GS_E_INVALID_ARGUMENT;
  if (strlen(key) >= sizeof(s->profile))
    return bad(c, v, where, "profile name too long");
  memcpy(s->profile, key, strlen(key) + 1);
  if ((rc = get_uint(c, v, where, 64, &s->count)) != 0)
    return rc;
  if (s->count == 0)
    e->nspec--; /* "1g.5gb": 0 asks for none */
  return 0;
}

struct ci_arg {
  struct gs_layout_spec *s;
  unsigned i;
};

static int ci_key(const struct ctx *c, const char *key, const yaml_node_t *v, const char *where, void *arg)
{
  struct ci_arg *a = arg;
  unsigned start;
  int rc;
  if (strcmp(key, "profile") == 0)
    return get_name(c, v, where, a->s->ci[a->i], GS_GEOM_NAME_SIZE);
  if ((rc = get_uint(c, v, where, GS_GEOM_MAX_GRID - 1, &start)) != 0)
    return rc;
  a->s->ci_start[a->i] = (int)start;
  return 0;
}

static int parse_cis(const struct ctx *c, const yaml_node_t *n, const char *where,
                     struct gs_layout_spec *s)
{
  if (!n || n->type != YAML_SEQUENCE_NODE || seq_len(n) == 0 || seq_len(n) > GS_GEOM_MAX_INSTANCES)
    return bad(c, n, where, "expected a list of 1 to %u compute-instance profiles such as "
                            "[1c.3g.20gb, {profile: 2c.3g.20gb, placement: 1}]",
               GS_GEOM_MAX_INSTANCES);
  for (unsigned i = 0; i < seq_len(n); i++) {
    const yaml_node_t *item = seq_item(c, n, i);
    struct ci_arg a = {s, i};
    int rc;
    s->ci_start[i] = -1;
    if (scalar(item))
      rc = get_name(c, item, where, s->ci[i], GS_GEOM_NAME_SIZE);
    else if ((rc = each_pair(c, item, where, "profile,placement", ci_key, &a)) == 0 && !s->ci[i][0])
      rc = bad(c, item, where, "a compute instance needs 'profile'");
    if (rc)
      return rc;
  }
  s->nci = seq_len(n);
  return 0;
}

static int gi_key(const struct ctx *c, const char *key, const yaml_node_t *v, const char *where, void *arg)
{
  struct gs_layout_spec *s = arg;
  unsigned start;
  int rc;
  if (strcmp(key, "profile") == 0)
    return get_name(c, v, where, s->profile, sizeof(s->profile));
  if (strcmp(key, "count") == 0) {
    if ((rc = get_uint(c, v, where, 64, &s->count)) == 0 && s->count == 0)
      rc = bad(c, v, where, "count must be at least 1 (leave the line out for none)");
    return rc;
  }
  if (strcmp(key, "placement") == 0) {
    if ((rc = get_uint(c, v, where, GS_GEOM_MAX_GRID - 1, &start)) == 0)
      s->start = (int)start;
    return rc;
  }
  return parse_cis(c, v, where, s);
}

/* ours: `gpu-instances: [{profile, placement, count, compute-instances}]`. */
static int parse_gpu_instances(const struct ctx *c, const yaml_node_t *n, const char *where,
                               struct gs_layout_entry *e)
{
  if (!n || n->type != YAML_SEQUENCE_NODE)
    return bad(c, n, where, "expected a list of GPU instances such as [{profile: 3g.20gb}]");
  for (unsigned i = 0; i < seq_len(n); i++) {
    const yaml_node_t *item = seq_item(c, n, i);
    struct gs_layout_spec *s = new_spec(c, item, where, e);
    int rc;
    if (!s)
      return c->err ? c->err->code : GS_E_INVALID_ARGUMENT;
    if ((rc = each_pair(c, item, where, "profile,placement,count,compute-instances", gi_key, s)) != 0)
      return rc;
    if (!s->profile[0])
      return bad(c, item, where, "a GPU instance needs 'profile' (e.g. profile: 3g.20gb)");
    if (s->start >= 0 && s->count > 1)
      return bad(c, item, where, "a placement names one instance; drop 'count' or give each "
                                 "instance its own line");
  }
  return 0;
}

/* ---- entries and configs ---- */

static int entry_key(const struct ctx *c, const char *key, const yaml_node_t *v, const char *where, void *arg)
{
  struct gs_layout_entry *e = arg;
  if (strcmp(key, "devices") == 0)
    return parse_devices(c, v, where, e);
  if (strcmp(key, "device-filter") == 0)
    return parse_filter(c, v, where, e);
  if (strcmp(key, "mig-enabled") == 0)
    return get_bool(c, v, where, &e->mig_enabled);
  if (strcmp(key, "mig-devices") == 0)
    return each_pair(c, v, where, NULL, mig_device, e);
  return parse_gpu_instances(c, v, where, e);
}

static int parse_entry(const struct ctx *c, const yaml_node_t *n, const char *where,
                       struct gs_layout_entry *e)
{
  const char *keys = c->format == GS_LAYOUT_MIG_PARTED
                         ? "devices,device-filter,mig-enabled,mig-devices"
                         : "devices,device-filter,mig-enabled,gpu-instances";
  const char *what = c->format == GS_LAYOUT_MIG_PARTED ? "mig-devices" : "gpu-instances";
  int rc;
  e->line = n ? (unsigned)n->start_mark.line + 1 : 1;
  if ((rc = each_pair(c, n, where, keys, entry_key, e)) != 0)
    return rc;
  if (!lookup(c, n, "devices"))
    return bad(c, n, where, "missing 'devices' (all, or a list such as [0, 1])");
  if (!lookup(c, n, "mig-enabled"))
    return bad(c, n, where, "missing 'mig-enabled' (true or false)");
  if (e->mig_enabled && c->format == GS_LAYOUT_MIG_PARTED && !lookup(c, n, "mig-devices"))
    return bad(c, n, where, "mig-enabled is true but 'mig-devices' is missing (write {} for none)");
  if (!e->mig_enabled && e->nspec)
    return bad(c, n, where, "mig-enabled is false, so '%s' must be empty", what);
  return 0;
}

static int config_key(const struct ctx *c, const char *key, const yaml_node_t *v, const char *where,
                      void *arg)
{
  struct gs_layout_file *f = arg;
  struct gs_layout_config *cfg = &f->config[f->nconfig];
  char sub[300];
  if (strlen(key) >= sizeof(cfg->name))
    return bad(c, v, where, "config name too long");
  memcpy(cfg->name, key, strlen(key) + 1);
  cfg->line = v ? (unsigned)v->start_mark.line + 1 : 1;
  f->nconfig++;
  if (!v || v->type != YAML_SEQUENCE_NODE || seq_len(v) == 0)
    return bad(c, v, where, "expected a non-empty list of entries (- devices: all ...)");
  cfg->entry = calloc(seq_len(v), sizeof(*cfg->entry));
  if (!cfg->entry)
    return gs_err_set(c->err, GS_E_NO_MEMORY, "%s: out of memory", c->origin);
  for (unsigned i = 0; i < seq_len(v); i++) {
    int rc;
    snprintf(sub, sizeof(sub), "%s[%u]", where, i);
    if ((rc = parse_entry(c, seq_item(c, v, i), sub, &cfg->entry[i])) != 0)
      return rc;
    cfg->nentry++;
  }
  return 0;
}

static int top_key(const struct ctx *c, const char *key, const yaml_node_t *v, const char *where, void *arg)
{
  struct gs_layout_file *f = arg;
  unsigned n;
  if (strcmp(key, "version") == 0)
    return 0; /* checked before the walk */
  if (!v || v->type != YAML_MAPPING_NODE || (n = (unsigned)(v->data.mapping.pairs.top -
                                                            v->data.mapping.pairs.start)) == 0)
    return bad(c, v, where, "expected a map of named configs (e.g. all-1g.5gb: [...])");
  if (!(f->config = calloc(n, sizeof(*f->config))))
    return gs_err_set(c->err, GS_E_NO_MEMORY, "%s: out of memory", c->origin);
  return each_pair(c, v, "", NULL, config_key, f);
}

static int parse_root(struct ctx *c, const yaml_node_t *root, struct gs_layout_file *f)
{
  const char *version;
  if (!root)
    return bad(c, NULL, "file", "empty; a config starts with `version: v1` and `mig-configs:`");
  if (root->type != YAML_MAPPING_NODE)
    return bad(c, root, "file", "expected a map with version and mig-configs, found %s", kind_of(root));
  version = scalar(lookup(c, root, "version"));
  if (!version)
    return bad(c, root, "version", "missing; write `version: v1` (nvidia-mig-parted's format) or "
                                   "`version: gpuslice/v1` (ours)");
  if (strcmp(version, "v1") == 0)
    c->format = GS_LAYOUT_MIG_PARTED;
  else if (strcmp(version, "gpuslice/v1") == 0)
    c->format = GS_LAYOUT_GPUSLICE;
  else
    return bad(c, lookup(c, root, "version"), "version",
               "'%s' is not a version gpuslice reads (v1 or gpuslice/v1)", version);
  f->format = c->format;
  if (!lookup(c, root, c->format == GS_LAYOUT_MIG_PARTED ? "mig-configs" : "configs"))
    return bad(c, root, "file", "missing '%s'",
               c->format == GS_LAYOUT_MIG_PARTED ? "mig-configs" : "configs");
  return each_pair(c, root, "",
                   c->format == GS_LAYOUT_MIG_PARTED ? "version,mig-configs" : "version,configs",
                   top_key, f);
}

int gs_layout_parse(struct gs_err *err, const char *origin, const char *text, size_t len,
                    struct gs_layout_file **out)
{
  yaml_parser_t parser;
  yaml_document_t doc;
  struct gs_layout_file *f = calloc(1, sizeof(*f));
  struct ctx c = {.err = err, .origin = origin, .doc = &doc};
  int rc;
  *out = NULL;
  if (!f)
    return gs_err_set(err, GS_E_NO_MEMORY, "%s: out of memory", origin);
  snprintf(f->origin, sizeof(f->origin), "%s", origin);
  if (!yaml_parser_initialize(&parser)) {
    free(f);
    return gs_err_set(err, GS_E_NO_MEMORY, "%s: out of memory", origin);
  }
  yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
  if (!yaml_parser_load(&parser, &doc)) {
    rc = gs_err_set(err, GS_E_INVALID_ARGUMENT, "%s:%lu: not valid YAML: %s%s%s", origin,
                    (unsigned long)parser.problem_mark.line + 1,
                    parser.problem ? parser.problem : "syntax error",
                    parser.context ? " " : "", parser.context ? parser.context : "");
    yaml_parser_delete(&parser);
    free(f);
    return rc;
  }
  rc = parse_root(&c, yaml_document_get_root_node(&doc), f);
  yaml_document_delete(&doc);
  yaml_parser_delete(&parser);
  if (rc) {
    gs_layout_file_free(f);
    return rc;
  }
  *out = f;
  return 0;
}

void gs_layout_file_free(struct gs_layout_file *f)
{
  if (!f)
    return;
  for (unsigned i = 0; i < f->nconfig; i++)
    free(f->config[i].entry);
  free(f->config);
  free(f);
}

int gs_layout_find(struct gs_err *err, const struct gs_layout_file *f, const char *name,
                   const struct gs_layout_config **out)
{
  char names[GS_ERR_MSG_SIZE / 2] = "";
  size_t used = 0;
  for (unsigned i = 0; i < f->nconfig; i++) {
    if (name && strcmp(f->config[i].name, name) == 0) {
      *out = &f->config[i];
      return 0;
    }
    if (used < sizeof(names))
      used += (size_t)snprintf(names + used, sizeof(names) - used, "%s%s", i ? ", " : "",
                               f->config[i].name);
  }
  return gs_err_set(err, GS_E_NOT_FOUND, "%s: no config named '%s'; choose one with -c: %s",
                    f->origin, name ? name : "", names);
}

/* ---- hooks files (nvidia-mig-parted's `version: v1`, `hooks:`) ---- */

static const char *const hook_points[GS_LAYOUT_HOOK_POINTS] = {
    "apply-start", "pre-apply-mode", "pre-apply-config", "apply-exit"};

static int copy_list(const struct ctx *c, const yaml_node_t *n, const char *where,
                     char out[][256], unsigned *count)
{
  if (!n || n->type != YAML_SEQUENCE_NODE || seq_len(n) > GS_LAYOUT_MAX_ARGS)
    return bad(c, n, where, "expected a list of at most %u strings", GS_LAYOUT_MAX_ARGS);
  for (unsigned i = 0; i < seq_len(n); i++) {
    int rc = get_name(c, seq_item(c, n, i), where, out[i], 256);
    if (rc)
      return rc;
  }
  *count = seq_len(n);
  return 0;
}

static int env_pair(const struct ctx *c, const char *key, const yaml_node_t *v, const char *where,
                    void *arg)
{
  struct gs_layout_hook *h = arg;
  const char *value = scalar(v);
  if (!value || h->nenv == GS_LAYOUT_MAX_ARGS || strlen(key) + strlen(value) + 2 > 256)
    return bad(c, v, where, "expected a short string value (at most %u variables)", GS_LAYOUT_MAX_ARGS);
  snprintf(h->env[h->nenv++], 256, "%s=%s", key, value);
  return 0;
}

static int hook_key(const struct ctx *c, const char *key, const yaml_node_t *v, const char *where,
                    void *arg)
{
  struct gs_layout_hook *h = arg;
  if (strcmp(key, "command") == 0)
    return get_name(c, v, where, h->command, sizeof(h->command));
  if (strcmp(key, "workdir") == 0)
    return get_name(c, v, where, h->workdir, sizeof(h->workdir));
  if (strcmp(key, "args") == 0)
    return copy_list(c, v, where, h->args, &h->nargs);
  return each_pair(c, v, where, NULL, env_pair, h);
}

static int hook_point(const struct ctx *c, const char *key, const yaml_node_t *v, const char *where,
                      void *arg)
{
  struct gs_layout_hooks *hooks = arg;
  unsigned p;
  for (p = 0; p < GS_LAYOUT_HOOK_POINTS && strcmp(hook_points[p], key) != 0; p++)
    ;
  if (!v || v->type != YAML_SEQUENCE_NODE || seq_len(v) > GS_LAYOUT_MAX_HOOKS)
    return bad(c, v, where, "expected a list of at most %u commands", GS_LAYOUT_MAX_HOOKS);
  for (unsigned i = 0; i < seq_len(v); i++) {
    struct gs_layout_hook *h = &hooks->hook[p][i];
    const yaml_node_t *item = seq_item(c, v, i);
    int rc;
    h->line = (unsigned)item->start_mark.line + 1;
    if ((rc = each_pair(c, item, where, "command,args,envs,workdir", hook_key, h)) != 0)
      return rc;
    if (!h->command[0])
      return bad(c, item, where, "a hook needs 'command' (a program path)");
  }
  hooks->n[p] = seq_len(v);
  return 0;
}

static int hooks_top(const struct ctx *c, const char *key, const yaml_node_t *v, const char *where,
                     void *arg)
{
  if (strcmp(key, "version") == 0)
    return strcmp(scalar(v) ? scalar(v) : "", "v1") == 0
               ? 0
               : bad(c, v, where, "a hooks file has `version: v1`");
  return each_pair(c, v, where, "apply-start,pre-apply-mode,pre-apply-config,apply-exit", hook_point, arg);
}

int gs_layout_hooks_parse(struct gs_err *err, const char *origin, const char *text, size_t len,
                          struct gs_layout_hooks *out)
{
  yaml_parser_t parser;
  yaml_document_t doc;
  struct ctx c = {.err = err, .origin = origin, .doc = &doc};
  const yaml_node_t *root;
  int rc;
  memset(out, 0, sizeof(*out));
  snprintf(out->origin, sizeof(out->origin), "%s", origin);
  if (!yaml_parser_initialize(&parser))
    return gs_err_set(err, GS_E_NO_MEMORY, "%s: out of memory", origin);
  yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
  if (!yaml_parser_load(&parser, &doc)) {
    rc = gs_err_set(err, GS_E_INVALID_ARGUMENT, "%s:%lu: not valid YAML: %s", origin,
                    (unsigned long)parser.problem_mark.line + 1,
                    parser.problem ? parser.problem : "syntax error");
    yaml_parser_delete(&parser);
    return rc;
  }
  root = yaml_document_get_root_node(&doc);
  if (!root || !lookup(&c, root, "version") || !lookup(&c, root, "hooks"))
    rc = bad(&c, root, "file", "a hooks file has `version: v1` and `hooks:`");
  else
    rc = each_pair(&c, root, "", "version,hooks", hooks_top, out);
  yaml_document_delete(&doc);
  yaml_parser_delete(&parser);
  if (rc)
    memset(out->n, 0, sizeof(out->n));
  return rc;
}
