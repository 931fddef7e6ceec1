/* SPDX-License-Identifier: Apache-2.0 */
/* mpstate.c: `nvidia-mig-parted checkpoint` and `restore`: the MIG state of
 * every MIG-capable GPU in mig-parted's checkpoint file (api/checkpoint/v1:
 * Go's field names, compact JSON, null for an empty list), and restoring it
 * through the same hooks and steps as apply: the mode set per GPU (no
 * reset, as mig-parted's RestoreMode), then every GPU instance at its saved
 * placement with its compute instances. */
#include "layout/mp.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct ckpt_ci {
  unsigned profile, eng;
};

struct ckpt_gi {
  unsigned profile;             /* NVML GPU-instance profile enum */
  unsigned start, size;
  unsigned nci;
  struct ckpt_ci ci[GS_GEOM_MAX_INSTANCES];
};

struct ckpt_dev {
  char uuid[GS_BACKEND_UUID_SIZE];
  bool enabled;
  unsigned ngi;
  struct ckpt_gi gi[GS_GEOM_MAX_INSTANCES];
};

struct ckpt {
  unsigned n;
  struct ckpt_dev dev[GS_BACKEND_MAX_GPUS];
};

/* ---- reading the machine (mig-parted's state.Fetch) ---- */

static int gi_before(const struct gs_layout_current_gi *a, const struct gs_layout_current_gi *b)
{
  if (a->gi.profile->nvml_enum != b->gi.profile->nvml_enum)
    return a->gi.profile->nvml_enum < b->gi.profile->nvml_enum;
  return a->gi.id < b->gi.id;
}

/* One GPU's GIs in mig-parted's walk: by profile enum, then as listed. */
static void fetch_gpu(const struct gs_layout_current *cur, struct ckpt_dev *d)
{
  unsigned order[GS_GEOM_MAX_INSTANCES];
  for (unsigned i = 0; i < cur->ngi; i++) {
    unsigned j = i;
    for (; j > 0 && gi_before(&cur->gi[i], &cur->gi[order[j - 1]]); j--)
      order[j] = order[j - 1];
    order[j] = i;
  }
  for (unsigned i = 0; i < cur->ngi; i++) {
    const struct gs_layout_current_gi *g = &cur->gi[order[i]];
    struct ckpt_gi *o = &d->gi[d->ngi++];
    o->profile = g->gi.profile->nvml_enum;
    o->start = g->gi.start;
    o->size = g->gi.span;
    o->nci = 0;
    for (unsigned id = 0; id < GS_GEOM_MAX_CI_PROFILES; id++)
      for (unsigned c = 0; c < g->nci; c++)
        if (g->ci[c].profile.id == id)
          o->ci[o->nci++] = (struct ckpt_ci){id, 0};
  }
}

static int fetch(struct gs_err *err, struct gs_backend *b, struct ckpt *s)
{
  struct gs_layout_current cur;
  unsigned n = 0;
  int rc = b->ops->gpu_count(b, err, &n);
  memset(s, 0, sizeof(*s));
  for (unsigned g = 0; g < n && rc == 0; g++) {
    struct gs_gpu_info info;
    struct ckpt_dev *d;
    if ((rc = b->ops->gpu_info(b, err, g, &info)) != 0)
      break;
    if (!info.model || !info.model->ngi)
      continue;
    d = &s->dev[s->n++];
    snprintf(d->uuid, sizeof(d->uuid), "%s", info.uuid);
    d->enabled = info.mig_current;
    if (d->enabled && (rc = gs_layout_read_current(err, b, g, &cur)) == 0)
      fetch_gpu(&cur, d);
  }
  return rc ? gs_err_set(err, rc, "error fetching MIG state: %s", err ? err->msg : "") : 0;
}

static bool same_state(const struct ckpt *a, const struct ckpt *b)
{
  if (a->n != b->n)
    return false;
  for (unsigned i = 0; i < a->n; i++) {
    const struct ckpt_dev *x = &a->dev[i], *y = &b->dev[i];
    if (strcmp(x->uuid, y->uuid) != 0 || x->enabled != y->enabled || x->ngi != y->ngi)
      return false;
    for (unsigned g = 0; g < x->ngi; g++)
      if (x->gi[g].profile != y->gi[g].profile || x->gi[g].start != y->gi[g].start ||
          x->gi[g].size != y->gi[g].size || x->gi[g].nci != y->gi[g].nci ||
          memcmp(x->gi[g].ci, y->gi[g].ci, x->gi[g].nci * sizeof(x->gi[g].ci[0])) != 0)
        return false;
  }
  return true;
}

/* ---- the file ---- */

/* Go marshals an empty slice that was never appended to as null. */
static json_t *list_or_null(json_t *a)
{
  if (json_array_size(a))
    return a;
  json_decref(a);
  return json_null();
}

static json_t *state_json(const struct ckpt *s)
{
  json_t *devs = json_array();
  for (unsigned i = 0; i < s->n; i++) {
    const struct ckpt_dev *d = &s->dev[i];
    json_t *gis = json_array();
    for (unsigned g = 0; g < d->ngi; g++) {
      json_t *cis = json_array();
      for (unsigned c = 0; c < d->gi[g].nci; c++)
        json_array_append_new(cis, json_pack("{s:i, s:i}", "ProfileID", d->gi[g].ci[c].profile, "EngProfileID",
                                             d->gi[g].ci[c].eng));
      json_array_append_new(gis, json_pack("{s:i, s:{s:i, s:i}, s:o}", "ProfileID", d->gi[g].profile, "Placement",
                                           "Start", d->gi[g].start, "Size", d->gi[g].size, "ComputeInstances",
                                           list_or_null(cis)));
    }
    json_array_append_new(devs, json_pack("{s:s, s:i, s:o}", "UUID", d->uuid, "MigMode", d->enabled ? 1 : 0,
                                          "GpuInstances", list_or_null(gis)));
  }
  return json_pack("{s:s, s:{s:o}}", "Version", "v1", "MigState", "Devices", list_or_null(devs));
}

int gs_layout_mp_checkpoint(struct gs_err *err, struct gs_backend *b, char **out)
{
  struct ckpt *s = malloc(sizeof(*s));
  json_t *j;
  int rc;
  *out = NULL;
  if (!s)
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory reading the MIG state");
  if ((rc = fetch(err, b, s)) == 0) {
    j = state_json(s);
    *out = j ? json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(j);
    if (!*out)
      rc = gs_err_set(err, GS_E_NO_MEMORY, "error marshalling MIG state to json: out of memory");
  }
  free(s);
  return rc;
}

static unsigned uint_of(json_t *o, const char *key, bool *ok)
{
  json_t *v = json_object_get(o, key);
  *ok = *ok && json_is_integer(v) && json_integer_value(v) >= 0 && json_integer_value(v) <= 0xffff;
  return *ok ? (unsigned)json_integer_value(v) : 0;
}

static bool parse_gi(json_t *j, struct ckpt_gi *g)
{
  json_t *cis = json_object_get(j, "ComputeInstances"), *c;
  bool ok = json_is_object(j);
  size_t i;
  g->profile = uint_of(j, "ProfileID", &ok);
  g->start = uint_of(json_object_get(j, "Placement"), "Start", &ok);
  g->size = uint_of(json_object_get(j, "Placement"), "Size", &ok);
  if (!ok || !(json_is_null(cis) || !cis || json_is_array(cis)) || json_array_size(cis) > GS_GEOM_MAX_INSTANCES)
    return false;
  json_array_foreach(cis, i, c) {
    g->ci[i].profile = uint_of(c, "ProfileID", &ok);
    g->ci[i].eng = uint_of(c, "EngProfileID", &ok);
  }
  g->nci = json_array_size(cis);
  return ok;
}

static bool parse_dev(json_t *j, struct ckpt_dev *d)
{
  json_t *gis = json_object_get(j, "GpuInstances"), *g;
  bool ok = json_is_string(json_object_get(j, "UUID"));
  unsigned mode = uint_of(j, "MigMode", &ok);
  size_t i;
  if (!ok || mode > 1 || !(json_is_null(gis) || !gis || json_is_array(gis)) ||
      json_array_size(gis) > GS_GEOM_MAX_INSTANCES)
    return false;
  snprintf(d->uuid, sizeof(d->uuid), "%s", json_string_value(json_object_get(j, "UUID")));
  d->enabled = mode == 1;
  json_array_foreach(gis, i, g) {
    if (!parse_gi(g, &d->gi[i]))
      return false;
  }
  d->ngi = json_array_size(gis);
  return true;
}

static int parse_ckpt(struct gs_err *err, const char *path, const char *text, size_t len, struct ckpt *s)
{
  json_error_t je;
  json_t *root = json_loadb(text, len, 0, &je), *devs, *d;
  size_t i;
  bool ok;
  memset(s, 0, sizeof(*s));
  if (!root)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "error parsing checkpoint file: unmarshal error: %s: %s (line %d)",
                      path, je.text, je.line);
  devs = json_object_get(json_object_get(root, "MigState"), "Devices");
  ok = json_is_object(root) && (!devs || json_is_null(devs) || json_is_array(devs)) &&
       json_array_size(devs) <= GS_BACKEND_MAX_GPUS;
  json_array_foreach(devs, i, d) {
    ok = ok && parse_dev(d, &s->dev[i]);
  }
  s->n = json_array_size(devs);
  json_decref(root);
  if (!ok)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "error parsing checkpoint file: unmarshal error: %s is not a "
                                                  "MIG state checkpoint ({\"Version\":\"v1\",\"MigState\":{\"Devices\":"
                                                  "[...]}}); write one with `nvidia-mig-parted checkpoint -f FILE`",
                      path);
  return 0;
}

/* ---- restore's four steps (mig-parted's restore.Context) ---- */

struct restore {
  struct gs_backend *b;
  const struct ckpt *want;
  const struct gs_layout_mp_opts *o;
};

static int gpu_of(struct gs_err *err, struct gs_backend *b, const char *uuid, unsigned *gpu)
{
  unsigned n = 0;
  int rc = b->ops->gpu_count(b, err, &n);
  for (unsigned g = 0; g < n && rc == 0; g++) {
    struct gs_gpu_info info;
    if ((rc = b->ops->gpu_info(b, err, g, &info)) == 0 && strcasecmp(info.uuid, uuid) == 0) {
      *gpu = g;
      return 0;
    }
  }
  return rc ? rc : gs_err_set(err, GS_E_NOT_FOUND, "error getting device handle: %s", gs_backend_code_text(GS_E_NOT_FOUND));
}

static int assert_mode(struct gs_err *err, void *arg)
{
  struct restore *r = arg;
  struct ckpt *now = malloc(sizeof(*now));
  int rc = now ? fetch(err, r->b, now) : gs_err_set(err, GS_E_NO_MEMORY, "out of memory");
  for (unsigned i = 0; rc == 0 && i < r->want->n; i++)
    if (i >= now->n || now->dev[i].enabled != r->want->dev[i].enabled)
      rc = gs_err_set(err, GS_E_NOT_FOUND, "current mode different than mode being asserted");
  free(now);
  return rc;
}

static int assert_config(struct gs_err *err, void *arg)
{
  struct restore *r = arg;
  struct ckpt *now = malloc(sizeof(*now));
  int rc = now ? fetch(err, r->b, now) : gs_err_set(err, GS_E_NO_MEMORY, "out of memory");
  if (rc == 0 && !same_state(now, r->want))
    rc = gs_err_set(err, GS_E_NOT_FOUND, "checkpoint contents do not match the current MIG state");
  free(now);
  return rc;
}

/* The mode alone, GPU by GPU; a GPU to leave MIG mode must have no GPU
 * instance left (NVML refuses then, and so does mig-parted). */
static int apply_mode(struct gs_err *err, void *arg)
{
  struct restore *r = arg;
  for (unsigned i = 0; i < r->want->n; i++) {
    const struct ckpt_dev *d = &r->want->dev[i];
    struct gs_layout_current cur;
    struct gs_layout_target t;
    unsigned gpu = 0;
    int rc;
    if ((rc = gpu_of(err, r->b, d->uuid, &gpu)) != 0 || (rc = gs_layout_read_current(err, r->b, gpu, &cur)) != 0)
      return rc;
    if (!d->enabled && cur.ngi)
      rc = gs_err_set(err, GS_E_IN_USE, "error setting Mig mode: %s", gs_backend_code_text(GS_E_IN_USE));
    gs_layout_target_of(&cur, d->enabled, &t);
    if (rc != 0 || (rc = gs__mp_apply_one(err, r->b, gpu, &t, r->o)) != 0)
      return gs_err_set(err, rc, "error setting MIG mode on device '%s': %s", d->uuid, err ? err->msg : "");
  }
  return 0;
}

/* The saved GIs, each at its placement, with their CIs, as target t. */
static int saved_target(struct gs_err *err, const struct gs_geom_model *m, const struct ckpt_dev *d,
                        struct gs_layout_target *t)
{
  memset(t, 0, sizeof(*t));
  t->mig_enabled = true;
  for (unsigned g = 0; g < d->ngi; g++) {
    struct gs_layout_gi *gi = &t->gi[t->ngi++];
    for (unsigned k = 0; k < m->ngi && !gi->profile; k++)
      if (m->gi[k].nvml_enum == d->gi[g].profile)
        gi->profile = &m->gi[k];
    if (!gi->profile)
      return gs_err_set(err, GS_E_INVALID_ARGUMENT, "error getting GPU instance profile info for '%u': %s",
                        d->gi[g].profile, gs_backend_code_text(GS_E_NOT_SUPPORTED));
    gi->start = (int)d->gi[g].start;
    for (unsigned c = 0; c < d->gi[g].nci; c++)
      gi->ci[gi->nci++] = (struct gs_layout_ci){d->gi[g].ci[c].profile, -1};
  }
  return 0;
}

static int restore_gpu(struct gs_err *err, struct restore *r, const struct ckpt_dev *d, bool apply)
{
  struct gs_layout_current cur;
  struct gs_layout_target t;
  struct gs_gpu_info info;
  unsigned gpu = 0;
  int rc;
  if ((rc = gpu_of(err, r->b, d->uuid, &gpu)) != 0 || (rc = r->b->ops->gpu_info(r->b, err, gpu, &info)) != 0)
    return rc;
  if (!info.mig_current)
    return gs_err_set(err, GS_E_NOT_SUPPORTED, "error clearing existing MIG config: error asserting MIG enabled: "
                                               "MIG mode disabled");
  if ((rc = gs_layout_read_current(err, r->b, gpu, &cur)) != 0)
    return rc;
  if ((rc = gs__mp_busy(err, r->b, gpu, &cur)) != 0)
    return gs_err_set(err, rc, "error clearing existing MIG config: %s", err ? err->msg : "");
  if ((rc = saved_target(err, info.model, d, &t)) != 0)
    return rc;
  return apply ? gs__mp_apply_one(err, r->b, gpu, &t, r->o) : 0;
}

static int apply_config(struct gs_err *err, void *arg)
{
  struct restore *r = arg;
  int rc;
  /* Every GPU is checked before the first one changes. */
  for (int pass = 0; pass < 2; pass++)
    for (unsigned i = 0; i < r->want->n; i++)
      if (r->want->dev[i].enabled && (rc = restore_gpu(err, r, &r->want->dev[i], pass == 1)) != 0)
        return rc;
  return 0;
}

int gs_layout_mp_restore(struct gs_err *err, struct gs_backend *b, const char *path, const char *text,
                         size_t len, const struct gs_layout_mp_opts *o)
{
  struct ckpt *want = malloc(sizeof(*want));
  struct restore r = {b, want, o};
  struct gs__mp_steps s = {assert_mode, apply_mode, assert_config, apply_config, &r};
  int rc;
  if (!want)
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory reading %s", path);
  gs__mp_log(o->log, GS_LAYOUT_DEBUG, "Parsing checkpoint file...");
  if ((rc = parse_ckpt(err, path, text, len, want)) == 0 && (rc = gs__mp_run(err, &s, o)) != 0)
    gs_err_set(err, rc, "error applying MIG configuration with hooks: %s", err ? err->msg : "");
  free(want);
  return rc;
}
