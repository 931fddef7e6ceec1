/* SPDX-License-Identifier: Apache-2.0 */
/* emu_state.c: the emulated machine's state file (format: docs/emu-state.md).
 * Turns struct gs__emu_state into JSON and back, validating every field on
 * the way in against geometry, and loads and saves it under the file lock the
 * emulator's writers share. It knows the file, not NVML's semantics (emu.c):
 * a state that parses is one the emulator could have produced. */
#include "backend/emu_state.h"

#include <jansson.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PATH_SIZE 128 /* a JSON path such as gpus[63].gpu_instances[7].compute_instances[7].span */

/* ------------------------------------------------------------------ parse */

struct ctx {
  struct gs_err *err;
  const char *origin; /* the file, for messages */
  json_int_t version; /* the file's format version */
  const struct gs_geom_driver *driver; /* the machine's, read before its GPUs */
};

/* Messages quote keys, model names and jansson's view of the input: control
 * bytes from a damaged file must not reach the user's terminal. */
static void printable(struct gs_err *err)
{
  for (char *p = err ? err->msg : NULL; p && *p; p++)
    if ((unsigned char)*p < 0x20 || *p == 0x7f)
      *p = '?';
}

/* Every defect: "<file>: <json path>: <what is wrong>". */
static int corrupt(const struct ctx *c, const char *path, const char *fmt, ...) GS_PRINTF(3, 4);
static int corrupt(const struct ctx *c, const char *path, const char *fmt, ...)
{
  char what[GS_ERR_MSG_SIZE];
  va_list ap;

  va_start(ap, fmt);
  vsnprintf(what, sizeof(what), fmt, ap);
  va_end(ap);
  gs_err_set(c->err, GS_E_CORRUPT_STATE, "%s: %s: %s", c->origin, path, what);
  printable(c->err);
  return GS_E_CORRUPT_STATE;
}

/* Paths longer than PATH_SIZE only come from absurd keys; they end in "...". */
static void mark_cut(char out[PATH_SIZE], int n)
{
  if (n < 0 || n >= PATH_SIZE)
    memcpy(out + PATH_SIZE - 4, "...", 4);
}

/* path + "." + key, or key alone at the top level. */
static void join(char out[PATH_SIZE], const char *path, const char *key)
{
  mark_cut(out, snprintf(out, PATH_SIZE, "%s%s%s", path, *path ? "." : "", key));
}

/* path + "." + key + "[i]". */
static void join_at(char out[PATH_SIZE], const char *path, const char *key, size_t i)
{
  mark_cut(out, snprintf(out, PATH_SIZE, "%s%s%s[%zu]", path, *path ? "." : "", key, i));
}

static const char *type_name(const json_t *v)
{
  if (v == NULL)
    return "missing";
  switch (json_typeof(v)) {
  case JSON_OBJECT: return "an object";
  case JSON_ARRAY: return "an array";
  case JSON_STRING: return "a string";
  case JSON_INTEGER: return "an integer";
  case JSON_REAL: return "a non-integer number";
  case JSON_TRUE: case JSON_FALSE: return "a boolean";
  case JSON_NULL: return "null";
  }
  return "something else";
}

/* The object must hold exactly `keys`: an unknown key may be a newer
 * writer's field whose meaning we would silently drop. */
static int check_keys(const struct ctx *c, const json_t *obj, const char *path,
                      const char *const keys[], size_t nkeys)
{
  char at[PATH_SIZE];
  const char *key;
  json_t *v;
  size_t i;

  json_object_foreach((json_t *)obj, key, v) {
    for (i = 0; i < nkeys && strcmp(key, keys[i]) != 0; i++)
      ;
    if (i == nkeys) {
      join(at, path, key);
      return corrupt(c, at, "unknown key");
    }
  }
  for (i = 0; i < nkeys; i++)
    if (json_object_get(obj, keys[i]) == NULL) {
      join(at, path, keys[i]);
      return corrupt(c, at, "missing");
    }
  return 0;
}

static int need_object(const struct ctx *c, const json_t *v, const char *path)
{
  return json_is_object(v) ? 0 : corrupt(c, path, "must be an object, not %s", type_name(v));
}

/* An integer in [lo, hi]; anything else names its type or its range. */
static int get_int(const struct ctx *c, const json_t *obj, const char *path, const char *key,
                   json_int_t lo, json_int_t hi, json_int_t *out)
{
  json_t *v = json_object_get(obj, key);
  char at[PATH_SIZE];

  join(at, path, key);
  if (!json_is_integer(v))
    return corrupt(c, at, "must be an integer, not %s", type_name(v));
  *out = json_integer_value(v);
  if (*out < lo || *out > hi)
    return corrupt(c, at, "%" JSON_INTEGER_FORMAT " is out of range (%" JSON_INTEGER_FORMAT
                   " to %" JSON_INTEGER_FORMAT ")", *out, lo, hi);
  return 0;
}

static int get_uint(const struct ctx *c, const json_t *obj, const char *path, const char *key,
                    unsigned *out)
{
  json_int_t v;
  int rc = get_int(c, obj, path, key, 0, UINT_MAX, &v);

  if (rc == 0)
    *out = (unsigned)v;
  return rc;
}

/* A GI or CI id of a process: -1 (whole GPU) or an id. */
static int get_inst(const struct ctx *c, const json_t *obj, const char *path, const char *key,
                    int *out)
{
  json_int_t v;
  int rc = get_int(c, obj, path, key, -1, INT_MAX, &v);

  if (rc == 0)
    *out = (int)v;
  return rc;
}

static int get_bool(const struct ctx *c, const json_t *obj, const char *path, const char *key,
                    bool *out)
{
  json_t *v = json_object_get(obj, key);
  char at[PATH_SIZE];

  join(at, path, key);
  if (!json_is_boolean(v))
    return corrupt(c, at, "must be true or false, not %s", type_name(v));
  *out = json_is_true(v);
  return 0;
}

static int get_string(const struct ctx *c, const json_t *obj, const char *path, const char *key,
                      const char **out, size_t *len)
{
  json_t *v = json_object_get(obj, key);
  char at[PATH_SIZE];

  join(at, path, key);
  if (!json_is_string(v))
    return corrupt(c, at, "must be a string, not %s", type_name(v));
  *out = json_string_value(v);
  *len = json_string_length(v);
  return 0;
}

/* An array of at most max entries (the fixed arrays of the state). */
static int get_array(const struct ctx *c, const json_t *obj, const char *path, const char *key,
                     size_t max, json_t **out)
{
  json_t *v = json_object_get(obj, key);
  char at[PATH_SIZE];

  join(at, path, key);
  if (!json_is_array(v))
    return corrupt(c, at, "must be an array, not %s", type_name(v));
  if (json_array_size(v) > max)
    return corrupt(c, at, "has %zu entries; at most %zu are allowed", json_array_size(v), max);
  *out = v;
  return 0;
}

/* "0, 4" for the set bits of a placement mask. */
static void format_bits(unsigned mask, char *buf, size_t size)
{
  size_t used = 0;

  buf[0] = '\0';
  for (unsigned i = 0; i < 32 && used < size; i++)
    if (mask & (1u << i))
      used += (size_t)snprintf(buf + used, size - used, "%s%u", used ? ", " : "", i);
}

static bool bit_set(unsigned mask, unsigned bit)
{
  return bit < 32 && (mask & (1u << bit)) != 0;
}

/* One compute instance; `busy` collects the compute slices the GI's CIs
 * already hold, so overlaps are caught here. */
static int parse_ci(const struct ctx *c, const json_t *v, const char *path,
                    const struct gs_geom_gi_profile *gip, const struct gs_geom_ci_profile *cps,
                    unsigned ncp, uint64_t *busy, struct gs__emu_ci *ci)
{
  static const char *const keys[] = {"id", "profile_id", "start", "span"};
  const struct gs_geom_ci_profile *cp = NULL;
  char at[PATH_SIZE], legal[64];
  uint64_t mask;
  int rc;

  if ((rc = need_object(c, v, path)) || (rc = check_keys(c, v, path, keys, GS_NITEMS(keys))) ||
      (rc = get_uint(c, v, path, "id", &ci->id)) ||
      (rc = get_uint(c, v, path, "profile_id", &ci->profile_id)) ||
      (rc = get_uint(c, v, path, "start", &ci->start)) ||
      (rc = get_uint(c, v, path, "span", &ci->span)))
    return rc;
  for (unsigned i = 0; i < ncp; i++)
    if (cps[i].id == ci->profile_id)
      cp = &cps[i];
  if (cp == NULL) {
    size_t used = 0;
    legal[0] = '\0';
    for (unsigned i = 0; i < ncp && used < sizeof(legal); i++)
      used += (size_t)snprintf(legal + used, sizeof(legal) - used, "%s%u", i ? ", " : "", cps[i].id);
    join(at, path, "profile_id");
    return corrupt(c, at, "%u is not a compute-instance profile of %s (those are %s)",
                   ci->profile_id, gip->name, legal);
  }
  if (!bit_set(cp->starts, ci->start)) {
    format_bits(cp->starts, legal, sizeof(legal));
    join(at, path, "start");
    return corrupt(c, at, "%u is not a legal start for %s (legal: %s)", ci->start, cp->name, legal);
  }
  if (ci->span != cp->span) {
    join(at, path, "span");
    return corrupt(c, at, "%u does not match %s, whose span is %u", ci->span, cp->name, cp->span);
  }
  mask = ((UINT64_C(1) << ci->span) - 1) << ci->start; /* start < 32, span <= grid: no overflow */
  if (*busy & mask) {
    join(at, path, "start");
    return corrupt(c, at, "%s at %u:%u overlaps another compute instance of the GPU instance",
                   cp->name, ci->start, ci->span);
  }
  *busy |= mask;
  return 0;
}

static int parse_cis(const struct ctx *c, const json_t *v, const char *path,
                     const struct gs_geom_model *m, struct gs__emu_gi *gi)
{
  struct gs_geom_ci_profile cps[GS_GEOM_MAX_CI_PROFILES];
  unsigned ncp = gs_geom_ci_profiles(m, gi->profile, cps);
  char at[PATH_SIZE];
  uint64_t busy = 0;
  json_t *arr, *e;
  size_t i;
  int rc;

  if ((rc = get_array(c, v, path, "compute_instances", GS_GEOM_MAX_INSTANCES, &arr)))
    return rc;
  json_array_foreach(arr, i, e) {
    struct gs__emu_ci *ci = &gi->ci[i];
    join_at(at, path, "compute_instances", i);
    if ((rc = parse_ci(c, e, at, gi->profile, cps, ncp, &busy, ci)))
      return rc;
    for (size_t j = 0; j < i; j++)
      if (gi->ci[j].id == ci->id) {
        char id_at[PATH_SIZE];
        join(id_at, at, "id");
        return corrupt(c, id_at, "duplicate compute instance id %u", ci->id);
      }
    gi->nci = (unsigned)i + 1;
  }
  return 0;
}

/* One GPU instance: profile known to the model, start legal, id the one
 * the driver gives that placement, then its compute instances. */
static int parse_gi(const struct ctx *c, const json_t *v, const char *path,
                    const struct gs_geom_model *m, bool swapped, struct gs__emu_gi *gi)
{
  static const char *const keys[] = {"id", "profile_id", "start", "compute_instances"};
  unsigned profile_id, want;
  char at[PATH_SIZE], legal[64];
  int rc;

  if ((rc = need_object(c, v, path)) || (rc = check_keys(c, v, path, keys, GS_NITEMS(keys))) ||
      (rc = get_uint(c, v, path, "id", &gi->id)) ||
      (rc = get_uint(c, v, path, "profile_id", &profile_id)) ||
      (rc = get_uint(c, v, path, "start", &gi->start)))
    return rc;
  if ((gi->profile = gs_geom_gi_profile_by_id(m, profile_id)) == NULL) {
    size_t used = 0;
    legal[0] = '\0';
    for (unsigned i = 0; i < m->ngi && used < sizeof(legal); i++)
      used += (size_t)snprintf(legal + used, sizeof(legal) - used, "%s%u", i ? ", " : "",
                               m->gi[i].id);
    join(at, path, "profile_id");
    return corrupt(c, at, "%s has no GPU-instance profile %u (its profiles are %s)", m->key,
                   profile_id, legal);
  }
  if (!bit_set(gi->profile->starts, gi->start)) {
    format_bits(gi->profile->starts, legal, sizeof(legal));
    join(at, path, "start");
    return corrupt(c, at, "%u is not a legal start for %s on %s (legal: %s)", gi->start,
                   gi->profile->name, m->key, legal);
  }
  want = gs_geom_gi_id_as(m, swapped, gi->start, gi->profile->span);
  if (gi->id != want) {
    join(at, path, "id");
    return corrupt(c, at, "%u is not the id of %s at %u:%u on %s, which is %u", gi->id,
                   gi->profile->name, gi->start, gi->profile->span, m->key, want);
  }
  return parse_cis(c, v, path, m, gi);
}

/* The GIs of one GPU, each valid alone, then together as a layout. */
static int parse_gis(const struct ctx *c, const json_t *v, const char *path,
                     struct gs__emu_gpu *g)
{
  struct gs_geom_layout l = {0}, placed;
  struct gs_err gerr = {0};
  char at[PATH_SIZE];
  json_t *arr, *e;
  size_t i;
  int rc;

  if ((rc = get_array(c, v, path, "gpu_instances", GS_GEOM_MAX_INSTANCES, &arr)))
    return rc;
  join(at, path, "gpu_instances");
  if (!g->mig_current && json_array_size(arr) > 0)
    return corrupt(c, at, "MIG mode is off (mig_current is false) but %zu GPU instances are listed",
                   json_array_size(arr));
  json_array_foreach(arr, i, e) {
    join_at(at, path, "gpu_instances", i);
    if ((rc = parse_gi(c, e, at, g->model, g->swapped_ids, &g->gi[i])))
      return rc;
    for (size_t j = 0; j < i; j++)
      if (g->gi[j].id == g->gi[i].id) {
        char id_at[PATH_SIZE];
        join(id_at, at, "id");
        return corrupt(c, id_at, "duplicate GPU instance id %u", g->gi[i].id);
      }
    g->ngi = (unsigned)i + 1;
    l.slot[i].profile = g->gi[i].profile;
    l.slot[i].start = (int)g->gi[i].start;
  }
  l.n = g->ngi;
  if (gs_geom_validate(&gerr, g->model, &l, &placed) != 0) {
    join(at, path, "gpu_instances");
    return corrupt(c, at, "the GPU instances cannot coexist: %s", gerr.msg);
  }
  return 0;
}

/* Keeps GIs in id order, the order NVML and nvidia-smi list them in. */
static void sort_gis(struct gs__emu_gpu *g)
{
  for (unsigned i = 1; i < g->ngi; i++)
    for (unsigned j = i; j > 0 && g->gi[j].id < g->gi[j - 1].id; j--) {
      struct gs__emu_gi t = g->gi[j];
      g->gi[j] = g->gi[j - 1];
      g->gi[j - 1] = t;
    }
}

static int parse_gpu(const struct ctx *c, const json_t *v, const char *path, struct gs__emu_gpu *g)
{
  static const char *const keys[] = {"model", "mig_current", "mig_pending", "reset_blocked",
                                     "gpu_instances", "swapped_ids"};
  /* version 1 had no swapped_ids: its GPUs are oriented as their model */
  size_t nkeys = c->version == 1 ? GS_NITEMS(keys) - 1 : GS_NITEMS(keys);
  char at[PATH_SIZE];
  const char *model = NULL;
  size_t len = 0;
  int rc;

  if ((rc = need_object(c, v, path)) || (rc = check_keys(c, v, path, keys, nkeys)) ||
      (rc = get_string(c, v, path, "model", &model, &len)) ||
      (rc = get_bool(c, v, path, "mig_current", &g->mig_current)) ||
      (rc = get_bool(c, v, path, "mig_pending", &g->mig_pending)) ||
      (rc = get_bool(c, v, path, "reset_blocked", &g->reset_blocked)))
    return rc;
  if ((g->sku = gs_geom_sku_find(model)) == NULL) {
    join(at, path, "model");
    return corrupt(c, at, "unknown GPU model \"%.64s\" (see `gpuslice models`)", model);
  }
  if (c->driver->code < g->sku->model->mig_since) {
    join(at, path, "model");
    return corrupt(c, at, "%s has no MIG on driver %s", g->sku->key, c->driver->version);
  }
  g->model = gs_geom_model_at(g->sku->model, c->driver->code);
  g->swapped_ids = g->model->swapped_ids;
  if (c->version > 1 && (rc = get_bool(c, v, path, "swapped_ids", &g->swapped_ids)))
    return rc;
  if ((rc = parse_gis(c, v, path, g)))
    return rc;
  sort_gis(g);
  return 0;
}

static int parse_gpus(const struct ctx *c, const json_t *root, struct gs__emu_state *st)
{
  char at[PATH_SIZE];
  json_t *arr, *e;
  size_t i;
  int rc;

  if ((rc = get_array(c, root, "", "gpus", GS_BACKEND_MAX_GPUS, &arr)))
    return rc;
  /* We never write a machine without GPUs, and the emulator assumes GPU 0. */
  if (json_array_size(arr) == 0)
    return corrupt(c, "gpus", "lists no GPU; an emulated machine has at least one");
  json_array_foreach(arr, i, e) {
    join_at(at, "", "gpus", i);
    if ((rc = parse_gpu(c, e, at, &st->gpu[i])))
      return rc;
    st->ngpu = (unsigned)i + 1;
  }
  return 0;
}

static const struct gs__emu_gi *find_gi(const struct gs__emu_gpu *g, int id)
{
  for (unsigned i = 0; i < g->ngi; i++)
    if ((int)g->gi[i].id == id)
      return &g->gi[i];
  return NULL;
}

static bool has_ci(const struct gs__emu_gi *gi, int id)
{
  for (unsigned i = 0; i < gi->nci; i++)
    if ((int)gi->ci[i].id == id)
      return true;
  return false;
}

/* A process: its GPU, GI and CI must exist (-1/-1: the whole GPU). */
static int parse_proc(const struct ctx *c, const json_t *v, const char *path,
                      const struct gs__emu_state *st, struct gs_proc_info *p)
{
  static const char *const keys[] = {"pid", "name", "gpu", "gi", "ci", "used_mib"};
  const struct gs__emu_gi *gi;
  char at[PATH_SIZE];
  const char *name = NULL;
  size_t len = 0;
  int rc;

  if ((rc = need_object(c, v, path)) || (rc = check_keys(c, v, path, keys, GS_NITEMS(keys))) ||
      (rc = get_uint(c, v, path, "pid", &p->pid)) ||
      (rc = get_string(c, v, path, "name", &name, &len)) ||
      (rc = get_uint(c, v, path, "gpu", &p->gpu)) || (rc = get_inst(c, v, path, "gi", &p->gi)) ||
      (rc = get_inst(c, v, path, "ci", &p->ci)) ||
      (rc = get_uint(c, v, path, "used_mib", &p->used_mib)))
    return rc;
  if (len >= sizeof(p->name)) {
    join(at, path, "name");
    return corrupt(c, at, "is %zu bytes long; at most %zu are allowed", len, sizeof(p->name) - 1);
  }
  memcpy(p->name, name, len + 1);
  if (p->gpu >= st->ngpu) {
    join(at, path, "gpu");
    return corrupt(c, at, "GPU %u does not exist (the machine has %u)", p->gpu, st->ngpu);
  }
  if ((p->gi < 0) != (p->ci < 0)) {
    join(at, path, "ci");
    return corrupt(c, at, "gi and ci must both be -1 (whole GPU) or both name an instance");
  }
  if (p->gi < 0)
    return 0;
  if ((gi = find_gi(&st->gpu[p->gpu], p->gi)) == NULL) {
    join(at, path, "gi");
    return corrupt(c, at, "GPU %u has no GPU instance %d", p->gpu, p->gi);
  }
  if (!has_ci(gi, p->ci)) {
    join(at, path, "ci");
    return corrupt(c, at, "GPU instance %d of GPU %u has no compute instance %d", p->gi, p->gpu,
                   p->ci);
  }
  return 0;
}

static int parse_procs(const struct ctx *c, const json_t *root, struct gs__emu_state *st)
{
  char at[PATH_SIZE];
  json_t *arr, *e;
  size_t i;
  int rc;

  if ((rc = get_array(c, root, "", "processes", GS_BACKEND_MAX_PROCS, &arr)))
    return rc;
  json_array_foreach(arr, i, e) {
    join_at(at, "", "processes", i);
    if ((rc = parse_proc(c, e, at, st, &st->proc[i])))
      return rc;
    st->nproc = (unsigned)i + 1;
  }
  return 0;
}

/* The machine's driver: a release gs_geom_driver_parse accepts. */
static int parse_driver(const struct ctx *c, const json_t *root, struct gs_geom_driver *out)
{
  struct gs_err derr = {0};
  const char *text = NULL;
  size_t len = 0;
  int rc;

  if (c->version == 1) {
    gs_geom_driver_default(out);
    return 0;
  }
  if ((rc = get_string(c, root, "", "driver", &text, &len)))
    return rc;
  if (gs_geom_driver_parse(&derr, text, out) != 0 || strcmp(out->version, text) != 0)
    return corrupt(c, "driver", "\"%.32s\" is not a driver release such as 535.183.01", text);
  return 0;
}

static int parse_seed(const struct ctx *c, const json_t *root, struct gs__emu_state *st)
{
  const char *seed = "";
  size_t len = 0;
  int rc;
  if (!json_object_get(root, "seed"))
    return 0;
  if ((rc = get_string(c, root, "", "seed", &seed, &len)))
    return rc;
  if (len == 0 || len >= sizeof(st->seed) || strspn(seed, GS__EMU_SEED_CHARS) != len)
    return corrupt(c, "seed", "must be 1 to %zu letters, digits, '.', '_' or '-'",
                   sizeof(st->seed) - 1);
  memcpy(st->seed, seed, len + 1);
  return 0;
}

/* format and version first: a foreign or newer file is reported as such,
 * not as a list of unknown keys. */
static int parse_root(const struct ctx *c, const json_t *root, struct gs__emu_state *st)
{
  static const char *const keys[] = {"format", "version", "enforce_root", "boots", "gpus",
                                     "processes", "driver", "seed"};
  const char *want[GS_NITEMS(keys)];
  size_t nwant = 0;
  const json_t *format = json_object_get(root, "format");
  struct ctx vc = *c;
  json_int_t version;
  int rc;

  if (!json_is_object(root))
    return corrupt(c, "top level", "must be an object, not %s", type_name(root));
  if (format == NULL)
    return corrupt(c, "format", "missing: this is not a gpuslice emulator state file");
  if (!json_is_string(format) || strcmp(json_string_value(format), GS__EMU_FORMAT) != 0)
    return corrupt(c, "format", "is not \"%s\": this is not a gpuslice emulator state file",
                   GS__EMU_FORMAT);
  if (json_object_get(root, "version") == NULL)
    return corrupt(c, "version", "missing");
  if ((rc = get_int(c, root, "", "version", LLONG_MIN, LLONG_MAX, &version)))
    return rc;
  if (version != GS__EMU_VERSION && version != 1)
    return corrupt(c, "version", "%" JSON_INTEGER_FORMAT " is not supported (this gpuslice reads "
                   "versions 1 and %d)", version, GS__EMU_VERSION);
  vc.version = version;
  vc.driver = &st->driver;
  /* version 1 had no driver (its machine runs the default one); "seed" is
   * optional in both, so files without one keep their UUIDs */
  for (size_t k = 0; k < GS_NITEMS(keys); k++)
    if ((strcmp(keys[k], "driver") != 0 || version != 1) &&
        (strcmp(keys[k], "seed") != 0 || json_object_get(root, "seed")))
      want[nwant++] = keys[k];
  if ((rc = check_keys(&vc, root, "", want, nwant)) ||
      (rc = parse_driver(&vc, root, &st->driver)) ||
      (rc = get_bool(&vc, root, "", "enforce_root", &st->enforce_root)) ||
      (rc = get_uint(&vc, root, "", "boots", &st->boots)) || (rc = parse_gpus(&vc, root, st)) ||
      (rc = parse_procs(&vc, root, st)) || (rc = parse_seed(&vc, root, st)))
    return rc;
  return 0;
}

int gs__emu_state_parse(struct gs_err *err, const char *origin, const char *text, size_t len,
                        struct gs__emu_state *st)
{
  struct ctx c = {.err = err, .origin = origin ? origin : "emulator state"};
  json_error_t jerr;
  json_t *root;
  int rc;

  memset(st, 0, sizeof(*st));
  /* Duplicate keys are rejected: which of two values wins is a guess. */
  root = json_loadb(text ? text : "", text ? len : 0, JSON_REJECT_DUPLICATES, &jerr);
  if (root == NULL) {
    gs_err_set(err, GS_E_CORRUPT_STATE, "%s: not valid JSON: line %d, column %d: %s", c.origin,
               jerr.line, jerr.column, jerr.text);
    printable(err);
    return GS_E_CORRUPT_STATE;
  }
  rc = parse_root(&c, root, st);
  json_decref(root);
  if (rc != 0)
    memset(st, 0, sizeof(*st)); /* never hand back half a machine */
  return rc;
}

/* ------------------------------------------------------------------- dump */

/* Dump trusts the state's contents (emu.c builds it from parsed states and
 * geometry) but not its shape: a count past its array or a missing model
 * would read out of bounds, so those are refused up front. */
static int check_dumpable(struct gs_err *err, const struct gs__emu_state *st)
{
  if (st->ngpu > GS_BACKEND_MAX_GPUS || st->nproc > GS_BACKEND_MAX_PROCS)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "emulator state: %u GPUs and %u processes "
                      "exceed the limits (%u, %u)", st->ngpu, st->nproc, GS_BACKEND_MAX_GPUS,
                      GS_BACKEND_MAX_PROCS);
  for (unsigned i = 0; i < st->ngpu; i++) {
    const struct gs__emu_gpu *g = &st->gpu[i];
    if (g->model == NULL || g->sku == NULL || g->ngi > GS_GEOM_MAX_INSTANCES)
      return gs_err_set(err, GS_E_INVALID_ARGUMENT, "emulator state: GPU %u has no model or "
                        "too many GPU instances (%u)", i, g->ngi);
    for (unsigned j = 0; j < g->ngi; j++)
      if (g->gi[j].profile == NULL || g->gi[j].nci > GS_GEOM_MAX_INSTANCES)
        return gs_err_set(err, GS_E_INVALID_ARGUMENT, "emulator state: GPU %u instance %u has "
                          "no profile or too many compute instances", i, g->gi[j].id);
  }
  for (unsigned i = 0; i < st->nproc; i++) {
    const struct gs_proc_info *p = &st->proc[i];
    json_t *name = memchr(p->name, '\0', sizeof(p->name)) ? json_string(p->name) : NULL;
    if (name == NULL)
      return gs_err_set(err, GS_E_INVALID_ARGUMENT, "emulator state: the name of process %u is "
                        "not NUL-terminated UTF-8 text", p->pid);
    json_decref(name);
  }
  return 0;
}

static json_t *dump_gi(const struct gs__emu_gi *gi)
{
  json_t *cis = json_array();

  for (unsigned i = 0; cis && i < gi->nci; i++) {
    const struct gs__emu_ci *ci = &gi->ci[i];
    /* append_new takes the value even when it fails, so nothing leaks */
    if (json_array_append_new(cis, json_pack("{s:I, s:I, s:I, s:I}", "id", (json_int_t)ci->id,
                                             "profile_id", (json_int_t)ci->profile_id, "start",
                                             (json_int_t)ci->start, "span",
                                             (json_int_t)ci->span)) != 0) {
      json_decref(cis);
      return NULL;
    }
  }
  return json_pack("{s:I, s:I, s:I, s:o}", "id", (json_int_t)gi->id, "profile_id",
                   (json_int_t)gi->profile->id, "start", (json_int_t)gi->start,
                   "compute_instances", cis);
}

static json_t *dump_gpu(const struct gs__emu_gpu *g)
{
  json_t *gis = json_array();

  for (unsigned i = 0; gis && i < g->ngi; i++)
    if (json_array_append_new(gis, dump_gi(&g->gi[i])) != 0) {
      json_decref(gis);
      return NULL;
    }
  return json_pack("{s:s, s:b, s:b, s:b, s:o, s:b}", "model", g->sku->key, "mig_current",
                   g->mig_current, "mig_pending", g->mig_pending, "reset_blocked",
                   g->reset_blocked, "gpu_instances", gis, "swapped_ids", g->swapped_ids);
}

static json_t *dump_proc(const struct gs_proc_info *p)
{
  return json_pack("{s:I, s:s, s:I, s:I, s:I, s:I}", "pid", (json_int_t)p->pid, "name", p->name,
                   "gpu", (json_int_t)p->gpu, "gi", (json_int_t)p->gi, "ci", (json_int_t)p->ci,
                   "used_mib", (json_int_t)p->used_mib);
}

static json_t *dump_root(const struct gs__emu_state *st)
{
  json_t *gpus = json_array(), *procs = json_array();

  for (unsigned i = 0; gpus && i < st->ngpu; i++)
    if (json_array_append_new(gpus, dump_gpu(&st->gpu[i])) != 0)
      goto fail;
  for (unsigned i = 0; procs && i < st->nproc; i++)
    if (json_array_append_new(procs, dump_proc(&st->proc[i])) != 0)
      goto fail;
  /* "o" steals both arrays, also when packing fails; "s*" leaves out an unset seed */
  return json_pack("{s:s, s:i, s:b, s:I, s:o, s:o, s:s, s:s*}", "format", GS__EMU_FORMAT,
                   "version", GS__EMU_VERSION, "enforce_root", st->enforce_root, "boots",
                   (json_int_t)st->boots, "gpus", gpus, "processes", procs, "driver",
                   st->driver.version, "seed", st->seed[0] ? st->seed : NULL);
fail:
  json_decref(gpus);
  json_decref(procs);
  return NULL;
}

int gs__emu_state_dump(struct gs_err *err, const struct gs__emu_state *st, char **text)
{
  json_t *root;
  char *s, *t;
  size_t n;
  int rc;

  *text = NULL;
  if ((rc = check_dumpable(err, st)))
    return rc;
  /* With the shape checked, jansson can fail only for want of memory. */
  if ((root = dump_root(st)) == NULL)
    goto nomem;
  s = json_dumps(root, JSON_INDENT(2));
  json_decref(root);
  if (s == NULL)
    goto nomem;
  n = strlen(s);
  if ((t = realloc(s, n + 2)) == NULL) {
    free(s);
    goto nomem;
  }
  memcpy(t + n, "\n", 2); /* a text file ends with a newline */
  *text = t;
  return 0;
nomem:
  return gs_err_set(err, GS_E_NO_MEMORY, "out of memory writing the emulator state");
}

/* ------------------------------------------------------- load, save, init */

static const char fix[] = "run `gpuslice emu reset` to recreate it (this discards the emulated "
                          "instances) or choose another file with --emu-state";

/* Appends the fix, shortening the diagnosis if both do not fit: without
 * the fix the user is stuck, without the diagnosis's tail only curious. */
static void add_fix(struct gs_err *err)
{
  size_t room = GS_ERR_MSG_SIZE - 1 - (sizeof(fix) - 1) - 2, len;

  if (err == NULL)
    return;
  len = strlen(err->msg);
  if (len <= room)
    gs_err_set(err, err->code, "%s; %s", err->msg, fix);
  else
    gs_err_set(err, err->code, "%.*s...; %s", (int)(room - 3), err->msg, fix);
}

int gs__emu_state_load(struct gs_err *err, const char *path, bool for_write,
                       struct gs_file_lock *lock, struct gs__emu_state *st)
{
  char *text = NULL;
  size_t len;
  int rc;

  memset(st, 0, sizeof(*st));
  lock->fd = -1;
  /* A writer may be the one to create the file, so it needs the directory
   * for its lock file; a reader of a machine that was never made does not. */
  if (for_write && (rc = gs_file_make_parent(err, path)))
    return rc;
  if ((rc = gs_file_lock(err, path, for_write, lock)))
    return rc; /* NOT_FOUND: no directory, so no state; nothing is held */
  rc = gs_file_read_private(err, path, GS__EMU_MAX_FILE, 0, &text, &len);
  if (rc == GS_E_NOT_FOUND)
    return rc; /* lock held: the caller creates the state */
  if (rc == GS_E_INVALID_ARGUMENT) /* over the size limit: no state we wrote is that big */
    rc = gs_err_set(err, GS_E_CORRUPT_STATE, "%s: larger than %u bytes, the most a state file "
                    "holds", path, GS__EMU_MAX_FILE);
  if (rc == 0)
    rc = gs__emu_state_parse(err, path, text, len, st);
  free(text);
  if (rc == 0)
    return 0;
  gs_file_unlock(lock);
  if (rc == GS_E_CORRUPT_STATE)
    add_fix(err);
  return rc;
}

int gs__emu_state_save(struct gs_err *err, const char *path, const struct gs__emu_state *st)
{
  char *text;
  int rc;

  if ((rc = gs__emu_state_dump(err, st, &text)))
    return rc;
  if ((rc = gs_file_make_parent(err, path)) == 0)
    rc = gs_file_write_atomic(err, path, text, strlen(text));
  free(text);
  return rc;
}

void gs__emu_state_init(struct gs__emu_state *st, const struct gs_geom_model *const models[],
                        unsigned n)
{
  memset(st, 0, sizeof(*st));
  if (n > GS_BACKEND_MAX_GPUS)
    n = GS_BACKEND_MAX_GPUS;
  for (unsigned i = 0; i < n; i++) {
    st->gpu[i].model = models[i];
    st->gpu[i].sku = gs_geom_sku_find(models[i]->key);
    st->gpu[i].swapped_ids = models[i]->swapped_ids;
  }
  st->ngpu = n;
  gs_geom_driver_default(&st->driver);
}
