/* SPDX-License-Identifier: Apache-2.0 */
/* config.c: reads layout config files: nvidia-mig-parted's v1 format as it is
 * (`version: v1`, `mig-configs`) and ours (`version: gpuslice/v1`, `configs`,
 * with placements, compute instances and GPUs chosen by UUID). libyaml builds
 * the document; this file checks its shape strictly and keeps line numbers so
 * every error names the file, the line, the entry and the fix. */
#include "layout/layout.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

/* The format a config file declared (y->user is the file being read). */
static enum gs_layout_format format_of(const struct gs_yaml *c)
{
  return ((const struct gs_layout_file *)c->user)->format;
}

/* ---- devices and filters ---- */

static int parse_devices(const struct gs_yaml *c, const yaml_node_t *n, const char *where,
                         struct gs_layout_entry *e)
{
  const char *v = gs_yaml_scalar(n);
  if (v && strcmp(v, "all") == 0) {
    e->all_devices = true;
    return 0;
  }
  if (!gs_yaml_is_list(n) || gs_yaml_seq_len(n) == 0)
    return gs_yaml_bad(c, n, where, "expected 'all' or a list of GPU indices%s (e.g. [0, 1])",
                       format_of(c) == GS_LAYOUT_GPUSLICE ? " or UUIDs" : "");
  for (unsigned i = 0; i < gs_yaml_seq_len(n); i++) {
    const yaml_node_t *item = gs_yaml_seq_item(c, n, i);
    const char *s = gs_yaml_scalar(item);
    int rc;
    if (format_of(c) == GS_LAYOUT_GPUSLICE && s && strncmp(s, "GPU-", 4) == 0) {
      if (e->nuuid == GS_BACKEND_MAX_GPUS)
        return gs_yaml_bad(c, item, where, "too many GPUs (at most %u)", GS_BACKEND_MAX_GPUS);
      if ((rc = gs_yaml_get_name(c, item, where, e->uuid[e->nuuid], GS_BACKEND_UUID_SIZE)) != 0)
        return rc;
      e->nuuid++;
      continue;
    }
    if (e->ndev == GS_BACKEND_MAX_GPUS)
      return gs_yaml_bad(c, item, where, "too many GPUs (at most %u)", GS_BACKEND_MAX_GPUS);
    if ((rc = gs_yaml_get_uint(c, item, where, GS_BACKEND_MAX_GPUS - 1, &e->dev[e->ndev])) != 0)
      return rc;
    e->ndev++;
  }
  return 0;
}

static int parse_filter(const struct gs_yaml *c, const yaml_node_t *n, const char *where,
                        struct gs_layout_entry *e)
{
  if (gs_yaml_scalar(n))
    return gs_yaml_get_name(c, n, where, e->filter[e->nfilter++], GS_LAYOUT_NAME_SIZE);
  if (!gs_yaml_is_list(n) || gs_yaml_seq_len(n) == 0)
    return gs_yaml_bad(c, n, where, "expected a PCI device id such as 0x20B010DE, or a list of them");
  e->filter_list = true;
  for (unsigned i = 0; i < gs_yaml_seq_len(n); i++) {
    int rc;
    if (e->nfilter == GS_LAYOUT_MAX_FILTERS)
      return gs_yaml_bad(c, gs_yaml_seq_item(c, n, i), where, "too many filters (at most %u)",
                         GS_LAYOUT_MAX_FILTERS);
    if ((rc = gs_yaml_get_name(c, gs_yaml_seq_item(c, n, i), where, e->filter[e->nfilter++],
                               GS_LAYOUT_NAME_SIZE)) != 0)
      return rc;
  }
  return 0;
}

/* ---- what the GPUs get ---- */

static struct gs_layout_spec *new_spec(const struct gs_yaml *c, const yaml_node_t *n, const char *where,
                                       struct gs_layout_entry *e)
{
  struct gs_layout_spec *s;
  if (e->nspec == GS_LAYOUT_MAX_SPECS) {
    gs_yaml_bad(c, n, where, "too many instance lines (at most %u)", GS_LAYOUT_MAX_SPECS);
    return NULL;
  }
  s = &e->spec[e->nspec++];
  memset(s, 0, sizeof(*s));
  s->start = -1;
  s->count = 1;
  s->line = gs_yaml_line(n);
  return s;
}

/* mig-parted: `"1g.5gb": 7` (a CI profile such as "1c.3g.20gb" is allowed). */
static int mig_device(const struct gs_yaml *c, const char *key, const yaml_node_t *v, const char *where,
                      void *arg)
{
  struct gs_layout_entry *e = arg;
  struct gs_layout_spec *s = new_spec(c, v, where, e);
  int rc;
  if (!s)
    return c->err ? c->err->code : GS_E_INVALID_ARGUMENT;
  if (strlen(key) >= sizeof(s->profile))
    return gs_yaml_bad(c, v, where, "profile name too long");
  memcpy(s->profile, key, strlen(key) + 1);
  if ((rc = gs_yaml_get_uint(c, v, where, 64, &s->count)) != 0)
    return rc;
  if (s->count == 0)
    e->nspec--; /* "1g.5gb": 0 asks for none */
  return 0;
}

struct ci_arg {
  struct gs_layout_spec *s;
  unsigned i;
};

static int ci_key(const struct gs_yaml *c, const char *key, const yaml_node_t *v, const char *where,
                  void *arg)
{
  struct ci_arg *a = arg;
  unsigned start;
  int rc;
  if (strcmp(key, "profile") == 0)
    return gs_yaml_get_name(c, v, where, a->s->ci[a->i], GS_GEOM_NAME_SIZE);
  if ((rc = gs_yaml_get_uint(c, v, where, GS_GEOM_MAX_GRID - 1, &start)) != 0)
    return rc;
  a->s->ci_start[a->i] = (int)start;
  return 0;
}

static int parse_cis(const struct gs_yaml *c, const yaml_node_t *n, const char *where,
                     struct gs_layout_spec *s)
{
  if (gs_yaml_seq_len(n) == 0 || gs_yaml_seq_len(n) > GS_GEOM_MAX_INSTANCES)
    return gs_yaml_bad(c, n, where, "expected a list of 1 to %u compute-instance profiles such as "
                                    "[1c.3g.20gb, {profile: 2c.3g.20gb, placement: 0}]",
                       GS_GEOM_MAX_INSTANCES);
  for (unsigned i = 0; i < gs_yaml_seq_len(n); i++) {
    const yaml_node_t *item = gs_yaml_seq_item(c, n, i);
    struct ci_arg a = {s, i};
    int rc;
    s->ci_start[i] = -1;
    if (gs_yaml_scalar(item))
      rc = gs_yaml_get_name(c, item, where, s->ci[i], GS_GEOM_NAME_SIZE);
    else if ((rc = gs_yaml_each_pair(c, item, where, "profile, placement", ci_key, &a)) == 0 &&
             !s->ci[i][0])
      rc = gs_yaml_bad(c, item, where, "a compute instance needs 'profile'");
    if (rc)
      return rc;
  }
  s->nci = gs_yaml_seq_len(n);
  return 0;
}

static int gi_key(const struct gs_yaml *c, const char *key, const yaml_node_t *v, const char *where,
                  void *arg)
{
  struct gs_layout_spec *s = arg;
  unsigned start;
  int rc;
  if (strcmp(key, "profile") == 0)
    return gs_yaml_get_name(c, v, where, s->profile, sizeof(s->profile));
  if (strcmp(key, "count") == 0) {
    if ((rc = gs_yaml_get_uint(c, v, where, 64, &s->count)) == 0 && s->count == 0)
      rc = gs_yaml_bad(c, v, where, "count must be at least 1 (leave the line out for none)");
    return rc;
  }
  if (strcmp(key, "placement") == 0) {
    if ((rc = gs_yaml_get_uint(c, v, where, GS_GEOM_MAX_GRID - 1, &start)) == 0)
      s->start = (int)start;
    return rc;
  }
  return parse_cis(c, v, where, s);
}

/* ours: `gpu-instances: [{profile, placement, count, compute-instances}]`. */
static int parse_gpu_instances(const struct gs_yaml *c, const yaml_node_t *n, const char *where,
                               struct gs_layout_entry *e)
{
  if (!gs_yaml_is_list(n))
    return gs_yaml_bad(c, n, where, "expected a list of GPU instances such as [{profile: 3g.20gb}]");
  for (unsigned i = 0; i < gs_yaml_seq_len(n); i++) {
    const yaml_node_t *item = gs_yaml_seq_item(c, n, i);
    struct gs_layout_spec *s = new_spec(c, item, where, e);
    int rc;
    if (!s)
      return c->err ? c->err->code : GS_E_INVALID_ARGUMENT;
    if ((rc = gs_yaml_each_pair(c, item, where, "profile, placement, count, compute-instances", gi_key,
                                s)) != 0)
      return rc;
    if (!s->profile[0])
      return gs_yaml_bad(c, item, where, "a GPU instance needs 'profile' (e.g. profile: 3g.20gb)");
    if (s->start >= 0 && s->count > 1)
      return gs_yaml_bad(c, item, where, "a placement names one instance; drop 'count' or give each "
                                         "instance its own line");
  }
  return 0;
}

/* ---- entries and configs ---- */

static int entry_key(const struct gs_yaml *c, const char *key, const yaml_node_t *v, const char *where,
                     void *arg)
{
  struct gs_layout_entry *e = arg;
  if (strcmp(key, "devices") == 0)
    return parse_devices(c, v, where, e);
  if (strcmp(key, "device-filter") == 0)
    return parse_filter(c, v, where, e);
  if (strcmp(key, "mig-enabled") == 0)
    return gs_yaml_get_bool(c, v, where, &e->mig_enabled);
  if (strcmp(key, "mig-devices") == 0)
    return gs_yaml_each_pair(c, v, where, NULL, mig_device, e);
  return parse_gpu_instances(c, v, where, e);
}

static int parse_entry(const struct gs_yaml *c, const yaml_node_t *n, const char *where,
                       struct gs_layout_entry *e)
{
  const char *keys = format_of(c) == GS_LAYOUT_MIG_PARTED
                         ? "devices, device-filter, mig-enabled, mig-devices"
                         : "devices, device-filter, mig-enabled, gpu-instances";
  const char *what = format_of(c) == GS_LAYOUT_MIG_PARTED ? "mig-devices" : "gpu-instances";
  int rc;
  e->line = gs_yaml_line(n);
  if ((rc = gs_yaml_each_pair(c, n, where, keys, entry_key, e)) != 0)
    return rc;
  if (!gs_yaml_lookup(c, n, "devices"))
    return gs_yaml_bad(c, n, where, "missing 'devices' (all, or a list such as [0, 1])");
  if (!gs_yaml_lookup(c, n, "mig-enabled"))
    return gs_yaml_bad(c, n, where, "missing 'mig-enabled' (true or false)");
  if (e->mig_enabled && format_of(c) == GS_LAYOUT_MIG_PARTED && !gs_yaml_lookup(c, n, "mig-devices"))
    return gs_yaml_bad(c, n, where,
                       "mig-enabled is true but 'mig-devices' is missing (write {} for none)");
  if (!e->mig_enabled && e->nspec)
    return gs_yaml_bad(c, n, where, "mig-enabled is false, so '%s' must be empty", what);
  return 0;
}

static int config_key(const struct gs_yaml *c, const char *key, const yaml_node_t *v, const char *where,
                      void *arg)
{
  struct gs_layout_file *f = arg;
  struct gs_layout_config *cfg = &f->config[f->nconfig];
  char sub[300];
  if (strlen(key) >= sizeof(cfg->name))
    return gs_yaml_bad(c, v, where, "config name too long");
  memcpy(cfg->name, key, strlen(key) + 1);
  cfg->line = gs_yaml_line(v);
  f->nconfig++;
  if (!gs_yaml_is_list(v) || gs_yaml_seq_len(v) == 0)
    return gs_yaml_bad(c, v, where, "expected a non-empty list of entries (- devices: all ...)");
  cfg->entry = calloc(gs_yaml_seq_len(v), sizeof(*cfg->entry));
  if (!cfg->entry)
    return gs_err_set(c->err, GS_E_NO_MEMORY, "%s: out of memory", c->origin);
  for (unsigned i = 0; i < gs_yaml_seq_len(v); i++) {
    int rc;
    snprintf(sub, sizeof(sub), "%s[%u]", where, i);
    if ((rc = parse_entry(c, gs_yaml_seq_item(c, v, i), sub, &cfg->entry[i])) != 0)
      return rc;
    cfg->nentry++;
  }
  return 0;
}

static int top_key(const struct gs_yaml *c, const char *key, const yaml_node_t *v, const char *where,
                   void *arg)
{
  struct gs_layout_file *f = arg;
  unsigned n;
  if (strcmp(key, "version") == 0)
    return 0; /* checked before the walk */
  if ((n = gs_yaml_map_len(v)) == 0)
    return gs_yaml_bad(c, v, where, "expected a map of named configs (e.g. all-1g.5gb: [...])");
  if (!(f->config = calloc(n, sizeof(*f->config))))
    return gs_err_set(c->err, GS_E_NO_MEMORY, "%s: out of memory", c->origin);
  return gs_yaml_each_pair(c, v, "", NULL, config_key, f);
}

static int parse_root(const struct gs_yaml *c, const yaml_node_t *root)
{
  struct gs_layout_file *f = c->user;
  const char *version;
  if (!root)
    return gs_yaml_bad(c, NULL, "file", "empty; a config starts with `version: v1` and `mig-configs:`");
  if (!gs_yaml_is_map(root))
    return gs_yaml_bad(c, root, "file", "expected a map with version and mig-configs, found %s",
                       gs_yaml_kind(root));
  version = gs_yaml_scalar(gs_yaml_lookup(c, root, "version"));
  if (!version)
    return gs_yaml_bad(c, root, "version",
                       "missing; write `version: v1` (nvidia-mig-parted's format) or "
                       "`version: gpuslice/v1` (ours)");
  if (strcmp(version, "v1") == 0)
    f->format = GS_LAYOUT_MIG_PARTED;
  else if (strcmp(version, "gpuslice/v1") == 0)
    f->format = GS_LAYOUT_GPUSLICE;
  else
    return gs_yaml_bad(c, gs_yaml_lookup(c, root, "version"), "version",
                       "'%s' is not a version gpuslice reads (v1 or gpuslice/v1)", version);
  if (!gs_yaml_lookup(c, root, f->format == GS_LAYOUT_MIG_PARTED ? "mig-configs" : "configs"))
    return gs_yaml_bad(c, root, "file", "missing '%s'",
                       f->format == GS_LAYOUT_MIG_PARTED ? "mig-configs" : "configs");
  return gs_yaml_each_pair(c, root, "",
                           f->format == GS_LAYOUT_MIG_PARTED ? "version, mig-configs" : "version, configs",
                           top_key, f);
}

int gs_layout_parse(struct gs_err *err, const char *origin, const char *text, size_t len,
                    struct gs_layout_file **out)
{
  struct gs_layout_file *f = calloc(1, sizeof(*f));
  int rc;
  *out = NULL;
  if (!f)
    return gs_err_set(err, GS_E_NO_MEMORY, "%s: out of memory", origin);
  snprintf(f->origin, sizeof(f->origin), "%s", origin);
  if ((rc = gs_yaml_load(err, origin, text, len, parse_root, f)) != 0) {
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
  if (!name && f->nconfig == 1) {
    *out = &f->config[0];
    return 0;
  }
  for (unsigned i = 0; i < f->nconfig; i++) {
    if (name && strcmp(f->config[i].name, name) == 0) {
      *out = &f->config[i];
      return 0;
    }
    if (used < sizeof(names))
      used += (size_t)snprintf(names + used, sizeof(names) - used, "%s%s", i ? ", " : "",
                               f->config[i].name);
  }
  if (!name)
    return gs_err_set(err, GS_E_NOT_FOUND, "%s holds %u configs; choose one with -c: %s", f->origin,
                      f->nconfig, names);
  return gs_err_set(err, GS_E_NOT_FOUND, "%s: no config named '%s'; choose one with -c: %s",
                    f->origin, name, names);
}

/* ---- hooks files (nvidia-mig-parted's `version: v1`, `hooks:`) ---- */

static const char *const hook_points[GS_LAYOUT_HOOK_POINTS] = {
    "apply-start", "pre-apply-mode", "pre-apply-config", "apply-exit"};

static int copy_list(const struct gs_yaml *c, const yaml_node_t *n, const char *where,
                     char out[][256], unsigned *count)
{
  if (!gs_yaml_is_list(n) || gs_yaml_seq_len(n) > GS_LAYOUT_MAX_ARGS)
    return gs_yaml_bad(c, n, where, "expected a list of at most %u strings", GS_LAYOUT_MAX_ARGS);
  for (unsigned i = 0; i < gs_yaml_seq_len(n); i++) {
    int rc = gs_yaml_get_name(c, gs_yaml_seq_item(c, n, i), where, out[i], 256);
    if (rc)
      return rc;
  }
  *count = gs_yaml_seq_len(n);
  return 0;
}

static int env_pair(const struct gs_yaml *c, const char *key, const yaml_node_t *v, const char *where,
                    void *arg)
{
  struct gs_layout_hook *h = arg;
  const char *value = gs_yaml_scalar(v);
  if (!value || h->nenv == GS_LAYOUT_MAX_ARGS || strlen(key) + strlen(value) + 2 > 256)
    return gs_yaml_bad(c, v, where, "expected a short string value (at most %u variables)",
                       GS_LAYOUT_MAX_ARGS);
  snprintf(h->env[h->nenv++], 256, "%s=%s", key, value);
  return 0;
}

static int hook_key(const struct gs_yaml *c, const char *key, const yaml_node_t *v, const char *where,
                    void *arg)
{
  struct gs_layout_hook *h = arg;
  if (strcmp(key, "command") == 0)
    return gs_yaml_get_name(c, v, where, h->command, sizeof(h->command));
  if (strcmp(key, "workdir") == 0)
    return gs_yaml_get_name(c, v, where, h->workdir, sizeof(h->workdir));
  if (strcmp(key, "args") == 0)
    return copy_list(c, v, where, h->args, &h->nargs);
  return gs_yaml_each_pair(c, v, where, NULL, env_pair, h);
}

static int hook_point(const struct gs_yaml *c, const char *key, const yaml_node_t *v, const char *where,
                      void *arg)
{
  struct gs_layout_hooks *hooks = arg;
  unsigned p;
  for (p = 0; p < GS_LAYOUT_HOOK_POINTS && strcmp(hook_points[p], key) != 0; p++)
    ;
  if (!gs_yaml_is_list(v) || gs_yaml_seq_len(v) > GS_LAYOUT_MAX_HOOKS)
    return gs_yaml_bad(c, v, where, "expected a list of at most %u commands", GS_LAYOUT_MAX_HOOKS);
  for (unsigned i = 0; i < gs_yaml_seq_len(v); i++) {
    struct gs_layout_hook *h = &hooks->hook[p][i];
    const yaml_node_t *item = gs_yaml_seq_item(c, v, i);
    int rc;
    h->line = gs_yaml_line(item);
    if ((rc = gs_yaml_each_pair(c, item, where, "command, args, envs, workdir", hook_key, h)) != 0)
      return rc;
    if (!h->command[0])
      return gs_yaml_bad(c, item, where, "a hook needs 'command' (a program path)");
  }
  hooks->n[p] = gs_yaml_seq_len(v);
  return 0;
}

static int hooks_top(const struct gs_yaml *c, const char *key, const yaml_node_t *v, const char *where,
                     void *arg)
{
  if (strcmp(key, "version") == 0)
    return strcmp(gs_yaml_scalar(v) ? gs_yaml_scalar(v) : "", "v1") == 0
               ? 0
               : gs_yaml_bad(c, v, where, "a hooks file has `version: v1`");
  return gs_yaml_each_pair(c, v, where, "apply-start, pre-apply-mode, pre-apply-config, apply-exit",
                           hook_point, arg);
}

static int hooks_root(const struct gs_yaml *c, const yaml_node_t *root)
{
  if (!root || !gs_yaml_lookup(c, root, "version") || !gs_yaml_lookup(c, root, "hooks"))
    return gs_yaml_bad(c, root, "file", "a hooks file has `version: v1` and `hooks:`");
  return gs_yaml_each_pair(c, root, "", "version, hooks", hooks_top, c->user);
}

int gs_layout_hooks_parse(struct gs_err *err, const char *origin, const char *text, size_t len,
                          struct gs_layout_hooks *out)
{
  int rc;
  memset(out, 0, sizeof(*out));
  snprintf(out->origin, sizeof(out->origin), "%s", origin);
  if ((rc = gs_yaml_load(err, origin, text, len, hooks_root, out)) != 0)
    memset(out->n, 0, sizeof(out->n));
  return rc;
}
