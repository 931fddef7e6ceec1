/* SPDX-License-Identifier: Apache-2.0 */
/* claims.c: who holds which slice. The ledger is one file per user,
 * <dir>/claims/<uid>.json, owned by that uid (the kernel's word for who
 * holds a claim) and replaced atomically; every claimer reads them all
 * under <dir>/claims.json.lock and writes only its own. A claim whose owner
 * and job are both dead is free again (the next claimer of the same user
 * destroys the instances it had created: nobody destroys another user's).
 * Picking a slice: a free MIG device of the wanted profile (or the
 * smallest with enough memory), else one created from free capacity when
 * allowed; or a share of a whole GPU; or, for serve, a device by UUID. */
#include "jobs/internal.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CLAIMS_FORMAT "gpuslice-claims"

struct claims {
  unsigned n;
  struct gs_jobs_claim c[GS_JOBS_MAX_CLAIMS];
};

/* ---- the file ---- */

static int parse_claim(struct gs_err *err, const char *origin, const char *where, json_t *o,
                       struct gs_jobs_claim *c)
{
  char mode[16];
  uint64_t gpu, gi, ci, mem, os, js;
  int64_t op, jp;
  int rc;
  memset(c, 0, sizeof(*c));
  if (!json_is_object(o))
    return gs_err_set(err, GS_E_CORRUPT_STATE, "%s: %s: expected an object", origin, where);
  if ((rc = gs__jobs_get_str(err, origin, where, o, "job", c->job, sizeof(c->job))) ||
      (rc = gs__jobs_get_str(err, origin, where, o, "user", c->user, sizeof(c->user))) ||
      (rc = gs__jobs_get_str(err, origin, where, o, "mode", mode, sizeof(mode))) ||
      (rc = gs__jobs_get_uint(err, origin, where, o, "gpu", GS_BACKEND_MAX_GPUS - 1, &gpu)) ||
      (rc = gs__jobs_get_uint(err, origin, where, o, "gi", 1000, &gi)) ||
      (rc = gs__jobs_get_uint(err, origin, where, o, "ci", 1000, &ci)) ||
      (rc = gs__jobs_get_str(err, origin, where, o, "uuid", c->uuid, sizeof(c->uuid))) ||
      (rc = gs__jobs_get_str(err, origin, where, o, "profile", c->profile, sizeof(c->profile))) ||
      (rc = gs__jobs_get_uint(err, origin, where, o, "memory_mib", UINT32_MAX, &mem)) ||
      (rc = gs__jobs_get_bool(err, origin, where, o, "created", &c->created)) ||
      (rc = gs__jobs_get_int(err, origin, where, o, "owner_pid", 0, INT32_MAX, &op)) ||
      (rc = gs__jobs_get_uint(err, origin, where, o, "owner_start", UINT64_MAX >> 1, &os)) ||
      (rc = gs__jobs_get_int(err, origin, where, o, "job_pid", 0, INT32_MAX, &jp)) ||
      (rc = gs__jobs_get_uint(err, origin, where, o, "job_start", UINT64_MAX >> 1, &js)) ||
      (rc = gs__jobs_get_time(err, origin, where, o, "since", &c->since)))
    return rc;
  if (json_object_get(o, "by_uuid") &&
      (rc = gs__jobs_get_bool(err, origin, where, o, "by_uuid", &c->by_uuid)) != 0)
    return rc;
  if (gs_jobs_mode_parse(mode, &c->mode) != 0)
    return gs_err_set(err, GS_E_CORRUPT_STATE, "%s: %s.mode: expected mig, timeslice or mps",
                      origin, where);
  c->gpu = (unsigned)gpu, c->gi = (unsigned)gi, c->ci = (unsigned)ci;
  c->memory_mib = (unsigned)mem;
  c->owner_pid = (int)op, c->job_pid = (int)jp;
  c->owner_start = os, c->job_start = js;
  return 0;
}

int gs_jobs_claims_parse(struct gs_err *err, const char *origin, const char *text, size_t len,
                         struct gs_jobs_claim **out, unsigned *n)
{
  json_t *root, *arr;
  size_t count;
  int rc;
  *out = NULL;
  *n = 0;
  if ((rc = gs__jobs_parse_root(err, origin, text, len, CLAIMS_FORMAT, &root)) != 0)
    return rc;
  arr = json_object_get(root, "claims");
  count = json_array_size(arr);
  if (!json_is_array(arr) || count > GS_JOBS_MAX_CLAIMS) {
    json_decref(root);
    return gs_err_set(err, GS_E_CORRUPT_STATE, "%s: claims: expected an array of at most %u",
                      origin, GS_JOBS_MAX_CLAIMS);
  }
  if (count && !(*out = calloc(count, sizeof(**out)))) {
    json_decref(root);
    return gs_err_set(err, GS_E_NO_MEMORY, "%s: out of memory", origin);
  }
  for (size_t i = 0; i < count; i++) {
    char where[32];
    snprintf(where, sizeof(where), "claims[%zu]", i);
    if ((rc = parse_claim(err, origin, where, json_array_get(arr, i), &(*out)[i])) != 0) {
      free(*out);
      *out = NULL;
      json_decref(root);
      return rc;
    }
  }
  *n = (unsigned)count;
  json_decref(root);
  return 0;
}

static json_t *claim_json(const struct gs_jobs_claim *c)
{
  return json_pack("{s:s, s:s, s:s, s:i, s:i, s:i, s:s, s:s, s:I, s:b, s:b, s:i, s:I, s:i, s:I, "
                   "s:f}",
                   "job", c->job, "user", c->user, "mode", gs_jobs_mode_name(c->mode), "gpu",
                   (int)c->gpu, "gi", (int)c->gi, "ci", (int)c->ci, "uuid", c->uuid, "profile",
                   c->profile, "memory_mib", (json_int_t)c->memory_mib, "created", c->created,
                   "by_uuid", c->by_uuid,
                   "owner_pid", c->owner_pid, "owner_start", (json_int_t)c->owner_start,
                   "job_pid", c->job_pid, "job_start", (json_int_t)c->job_start, "since", c->since);
}

/* Appends the claims of one ledger file, claims/<name>, to cl. Our own is
 * our state file: anything wrong with it (a link, a FIFO, another's, a
 * mode others may write) is an error naming it. Another user's is read
 * only when it is a regular file of the account its name says, that no one
 * else may write (util's safe open with OTHER_ACCOUNT, then the owner);
 * anything else is skipped: it says nothing about anyone. */
static int load_file(struct gs_err *err, const char *cdir, const char *name, struct claims *cl)
{
  char path[PATH_MAX], *text, *end;
  unsigned long uid = strtoul(name, &end, 10);
  bool own = uid == (unsigned long)geteuid();
  struct gs_jobs_claim *arr;
  struct stat st;
  size_t len;
  unsigned n = 0;
  int fd, rc;
  if (end == name || strcmp(end, ".json") != 0 || (rc = gs__jobs_path(err, path, cdir, name)))
    return 0;
  rc = gs_file_open_private(own ? err : NULL, path, own ? 0 : GS_FILE_OTHER_ACCOUNT, &fd, &st);
  if (rc == GS_E_NOT_FOUND) { /* removed since the listing */
    gs_err_clear(err);
    return 0;
  }
  if (rc)
    return own ? rc : 0;
  if (st.st_uid != uid) {
    close(fd);
    return 0;
  }
  rc = gs_file_read_fd(err, path, fd, 4u << 20, &text, &len);
  close(fd);
  if (rc)
    return rc;
  rc = gs_jobs_claims_parse(err, path, text, len, &arr, &n);
  free(text);
  if (rc == GS_E_CORRUPT_STATE)
    return gs_err_set(err, rc, "%s; its owner (uid %lu) removes it when none of their jobs runs",
                      err ? err->msg : "", uid);
  if (rc)
    return rc;
  for (unsigned i = 0; i < n && cl->n < GS_JOBS_MAX_CLAIMS; i++) {
    arr[i].uid = (unsigned)uid;
    cl->c[cl->n++] = arr[i];
  }
  free(arr);
  return 0;
}

/* Reads every user's claims (none yet is none) into cl. */
static int load(struct gs_err *err, const char *dir, struct claims *cl)
{
  char cdir[PATH_MAX];
  struct dirent *d;
  DIR *dp;
  int rc;
  cl->n = 0;
  if ((rc = gs__jobs_path(err, cdir, dir, "claims")) != 0)
    return rc;
  if (!(dp = opendir(cdir)))
    return errno == ENOENT ? 0 : gs_err_set(err, GS_E_IO, "%s: %s", cdir, strerror(errno));
  while (rc == 0 && (d = readdir(dp)) != NULL)
    rc = load_file(err, cdir, d->d_name, cl);
  closedir(dp);
  return rc;
}

/* Writes our own claims, and only those, to claims/<our uid>.json. */
static int save(struct gs_err *err, const char *dir, const struct claims *cl)
{
  char path[PATH_MAX], name[32];
  json_t *arr = json_array();
  int rc;
  snprintf(name, sizeof(name), "claims/%u.json", (unsigned)geteuid());
  if ((rc = gs__jobs_path(err, path, dir, name)) != 0) {
    json_decref(arr);
    return rc;
  }
  for (unsigned i = 0; i < cl->n; i++)
    if (cl->c[i].uid == (unsigned)geteuid())
      json_array_append_new(arr, claim_json(&cl->c[i]));
  return gs__jobs_save_json(err, path, json_pack("{s:s, s:i, s:o}", "format", CLAIMS_FORMAT,
                                                 "version", 1, "claims", arr));
}

static int lock_claims(struct gs_err *err, const char *dir, bool exclusive, struct gs_file_lock *l)
{
  char path[PATH_MAX];
  int rc = gs__jobs_path(err, path, dir, "claims.json");
  return rc ? rc : gs_file_lock(err, path, exclusive, l);
}

static bool live(const struct gs_jobs_claim *c)
{
  return gs__jobs_alive(c->owner_pid, c->owner_start) ||
         (c->job_pid && gs__jobs_alive(c->job_pid, c->job_start));
}

/* ---- undoing a claim ---- */

/* Removes the job's emulated process and destroys what the claim created.
 * Both are best effort: a slice already gone is no reason to keep a claim. */
static void undo(struct gs_backend *b, const struct gs_jobs_claim *c)
{
  struct gs_err e = {0};
  if (!b)
    return;
  /* Its runner died: what the job left in its cgroup is ended before the
   * slice goes to anyone (the claim was dead, so its job process is too). */
  if (!c->by_uuid && c->uid == (unsigned)geteuid())
    gs__jobs_track_forget(c->job, c->owner_pid);
  if (gs__jobs_emulated(b) && c->job_pid)
    gs_emu_proc_remove(b, &e, (unsigned)c->job_pid);
  /* Only the user who created an instance destroys it: another user's
   * ledger could name any instance as "created". */
  if (c->mode == GS_JOBS_MIG && c->created && !c->by_uuid && c->uid == (unsigned)geteuid()) {
    if (b->ops->ci_destroy(b, &e, c->gpu, c->gi, c->ci) == 0 || e.code == GS_E_NOT_FOUND)
      b->ops->gi_destroy(b, &e, c->gpu, c->gi);
  }
}

/* Drops dead claims, undoing them. Without a backend (serve's claims)
 * nothing can be undone: dead claims stay for the next claimer with one. */
static void reap(struct gs_backend *b, struct claims *cl)
{
  unsigned k = 0;
  for (unsigned i = 0; i < cl->n; i++) {
    if (!b || live(&cl->c[i]))
      cl->c[k++] = cl->c[i];
    else
      undo(b, &cl->c[i]);
  }
  cl->n = k;
}

/* ---- picking a MIG device ---- */

struct pick {
  bool found, created;
  unsigned matching, mig_gpus;  /* devices of the wanted size, free or not; GPUs in MIG mode */
  struct gs_mig_device dev;
};

static bool claimed(const struct claims *cl, const char *uuid)
{
  for (unsigned i = 0; i < cl->n; i++)
    if (strcmp(cl->c[i].uuid, uuid) == 0)
      return true;
  return false;
}

static bool busy(const struct gs_proc_info *p, unsigned np, const struct gs_mig_device *d)
{
  for (unsigned i = 0; i < np; i++)
    if (p[i].gi == (int)d->gi && (p[i].ci < 0 || p[i].ci == (int)d->ci))
      return true;
  return false;
}

/* Plain profiles only when choosing by memory: "+me", "+gfx" and "-me"
 * variants are asked for by name. */
static bool plain(const struct gs_geom_gi_profile *p)
{
  return p->media == GS_GEOM_MEDIA_SHARED && !p->gfx;
}

/* Is p the profile req names (by name: the NVML backend's profiles are read
 * from the driver, not the tables), or, by memory, one with enough? */
static bool is_profile(const struct gs_geom_model *m, const struct gs_geom_gi_profile *p,
                       const char *name)
{
  const struct gs_geom_gi_profile *want = m ? gs_geom_gi_profile_find(m, name) : NULL;
  return want && strcmp(want->name, p->name) == 0;
}

static bool wanted(const struct gs_jobs_request *req, const struct gs_geom_model *m,
                   const struct gs_geom_gi_profile *p)
{
  if (req->profile[0])
    return is_profile(m, p, req->profile);
  return plain(p) && p->memory_mib >= req->memory_mib;
}

/* Smaller memory first, then fewer compute slices: the smallest that fits. */
static bool better(const struct gs_geom_gi_profile *a, const struct gs_geom_gi_profile *b)
{
  return !b || a->memory_mib < b->memory_mib ||
         (a->memory_mib == b->memory_mib && a->compute_slices < b->compute_slices);
}

static bool gpu_selected(const struct gs_jobs_request *req, unsigned g)
{
  return req->gpu < 0 || (unsigned)req->gpu == g;
}

/* 0 when the request names no GPU or one that exists here. */
static int gpu_exists(struct gs_err *err, const struct gs_jobs_request *req, unsigned ngpu)
{
  if (req->gpu >= 0 && (unsigned)req->gpu >= ngpu)
    return gs_err_set(err, GS_E_USAGE, "GPU %d: no such GPU; this machine has %u",
                      req->gpu, ngpu);
  return 0;
}

/* Makes c a claim on the MIG device d (its mode is the caller's). */
static void claim_device(struct gs_jobs_claim *c, const struct gs_mig_device *d)
{
  c->gpu = d->gpu, c->gi = d->gi, c->ci = d->ci;
  snprintf(c->uuid, sizeof(c->uuid), "%s", d->uuid);
  snprintf(c->profile, sizeof(c->profile), "%s", d->name);
  c->memory_mib = d->memory_mib;
}

/* The best free, unclaimed, idle MIG device over the selected GPUs. */
static int pick_existing(struct gs_err *err, struct gs_backend *b,
                         const struct gs_jobs_request *req, const struct claims *cl, unsigned ngpu,
                         struct pick *pk)
{
  static struct gs_mig_device devs[GS_BACKEND_MAX_MIG_DEVICES];
  static struct gs_proc_info procs[GS_BACKEND_MAX_PROCS];
  for (unsigned g = 0; g < ngpu; g++) {
    struct gs_gpu_info info;
    unsigned nd = 0, np = 0;
    int rc;
    if (!gpu_selected(req, g))
      continue;
    if ((rc = b->ops->gpu_info(b, err, g, &info)) != 0)
      return rc;
    if (!info.mig_current)
      continue;
    pk->mig_gpus++;
    if ((rc = b->ops->mig_devices(b, err, g, devs, &nd)) != 0 ||
        (rc = b->ops->processes(b, err, g, procs, &np)) != 0)
      return rc;
    for (unsigned i = 0; i < nd; i++) {
      if (!devs[i].gi_profile || !wanted(req, info.model, devs[i].gi_profile))
        continue;
      pk->matching++;
      if (!claimed(cl, devs[i].uuid) && !busy(procs, np, &devs[i]) &&
          (!pk->found || better(devs[i].gi_profile, pk->dev.gi_profile))) {
        pk->dev = devs[i];
        pk->found = true;
      }
    }
  }
  return 0;
}

/* The default (whole-GI) compute-instance profile of p. */
static int default_ci(const struct gs_geom_model *m, const struct gs_geom_gi_profile *p,
                      unsigned *id)
{
  struct gs_geom_ci_profile cps[GS_GEOM_MAX_CI_PROFILES];
  unsigned n = gs_geom_ci_profiles(m, p, cps);
  for (unsigned i = 0; i < n; i++)
    if (cps[i].is_default) {
      *id = cps[i].id;
      return 0;
    }
  return GS_E_NOT_FOUND;
}

/* Creates a GI of p and its whole-GI CI on gpu; the MIG device into dev. */
static int create_on(struct gs_err *err, struct gs_backend *b, unsigned gpu,
                     const struct gs_geom_model *m, const struct gs_geom_gi_profile *p,
                     struct gs_mig_device *dev)
{
  static struct gs_mig_device devs[GS_BACKEND_MAX_MIG_DEVICES];
  struct gs_gi_info gi;
  struct gs_ci_info ci;
  struct gs_err e2 = {0};
  unsigned cid, nd = 0;
  int rc;
  if (default_ci(m, p, &cid) != 0)
    return gs_err_set(err, GS_E_NOT_SUPPORTED, "%s has no whole-instance compute profile", p->name);
  if ((rc = b->ops->gi_create(b, err, gpu, p, -1, &gi)) != 0)
    return rc;
  if ((rc = b->ops->ci_create(b, err, gpu, gi.id, cid, -1, &ci)) != 0) {
    b->ops->gi_destroy(b, &e2, gpu, gi.id);
    return rc;
  }
  if ((rc = b->ops->mig_devices(b, err, gpu, devs, &nd)) != 0)
    return rc;
  for (unsigned i = 0; i < nd; i++)
    if (devs[i].gi == gi.id && devs[i].ci == ci.id) {
      *dev = devs[i];
      return 0;
    }
  return gs_err_set(err, GS_E_UNKNOWN, "GPU %u: created GI %u CI %u but it is not listed", gpu,
                    gi.id, ci.id);
}

/* Creates the smallest wanted profile that has room, over the selected GPUs. */
static int pick_create(struct gs_err *err, struct gs_backend *b, const struct gs_jobs_request *req,
                       unsigned ngpu, struct pick *pk)
{
  const struct gs_geom_gi_profile *best = NULL;
  const struct gs_geom_model *best_m = NULL;
  unsigned best_gpu = 0;
  for (unsigned g = 0; g < ngpu; g++) {
    struct gs_gpu_info info;
    int rc;
    if (!gpu_selected(req, g))
      continue;
    if ((rc = b->ops->gpu_info(b, err, g, &info)) != 0)
      return rc;
    if (!info.mig_current || !info.model)
      continue;
    for (unsigned i = 0; i < info.model->ngi; i++) {
      const struct gs_geom_gi_profile *p = &info.model->gi[i];
      unsigned left = 0;
      if (!wanted(req, info.model, p) || !better(p, best))
        continue;
      if (b->ops->gi_remaining(b, err, g, p, &left) == 0 && left > 0)
        best = p, best_m = info.model, best_gpu = g;
    }
  }
  if (!best)
    return 0;
  gs_err_clear(err);
  if (create_on(err, b, best_gpu, best_m, best, &pk->dev) != 0)
    return err ? err->code : GS_E_UNKNOWN;
  pk->found = pk->created = true;
  return 0;
}

/* Whether the request can ever be met here; the error says why not and what to do. */
static int feasible(struct gs_err *err, struct gs_backend *b, const struct gs_jobs_request *req,
                    unsigned ngpu)
{
  const struct gs_geom_gi_profile *largest = NULL;
  unsigned largest_gpu = 0, considered = 0;
  bool known = false;
  int rc;
  for (unsigned g = 0; g < ngpu; g++) {
    struct gs_gpu_info info;
    if (!gpu_selected(req, g))
      continue;
    if ((rc = b->ops->gpu_info(b, err, g, &info)) != 0)
      return rc;
    if (!info.model)
      continue;
    considered++;
    for (unsigned i = 0; i < info.model->ngi; i++) {
      const struct gs_geom_gi_profile *p = &info.model->gi[i];
      if (!largest || p->memory_mib > largest->memory_mib)
        largest = p, largest_gpu = g;
      known = known || (req->profile[0] && is_profile(info.model, p, req->profile));
    }
  }
  if ((rc = gpu_exists(err, req, ngpu)) != 0)
    return rc;
  if (!considered || !largest)
    return gs_err_set(err, GS_E_USAGE, "no MIG-capable GPU is selected");
  if (req->profile[0] && !known)
    return gs_err_set(err, GS_E_USAGE, "--profile %s: no selected GPU has this MIG "
                      "profile; `gpuslice gi profiles` lists them (e.g. %s)", req->profile,
                      largest->name);
  if (!req->profile[0] && req->memory_mib > largest->memory_mib)
    return gs_err_set(err, GS_E_USAGE,
                      "--memory %.2f GiB is more than any MIG profile has: the largest is %s on "
                      "GPU %u (%.2f GiB); ask for at most that, or use a whole GPU with --mode "
                      "timeslice", (double)req->memory_mib / 1024.0, largest->name, largest_gpu,
                      gs_geom_gib(largest->memory_mib));
  return 0;
}

int gs_jobs_check(struct gs_err *err, struct gs_backend *b, const struct gs_jobs_request *req)
{
  struct gs_gpu_info info;
  unsigned ngpu = 0;
  int rc;
  if ((rc = b->ops->gpu_count(b, err, &ngpu)) != 0)
    return rc;
  if (req->mode == GS_JOBS_MIG)
    return feasible(err, b, req, ngpu);
  if (req->profile[0]) { /* MPS in a MIG device: the profile must exist; memory is a client limit */
    struct gs_jobs_request by_profile = *req;
    by_profile.memory_mib = 0;
    return feasible(err, b, &by_profile, ngpu);
  }
  if ((rc = gpu_exists(err, req, ngpu)) != 0)
    return rc;
  for (unsigned g = 0; g < ngpu; g++) {
    if (!gpu_selected(req, g))
      continue;
    if ((rc = b->ops->gpu_info(b, err, g, &info)) != 0)
      return rc;
    if (req->memory_mib <= info.memory_mib)
      return 0;
  }
  return gs_err_set(err, GS_E_USAGE, "--memory %.2f GiB: no selected GPU has that much "
                    "(GPU %u has %.2f GiB)", (double)req->memory_mib / 1024.0, info.index,
                    gs_geom_gib(info.memory_mib));
}

static int claim_mig(struct gs_err *err, struct gs_backend *b, const struct gs_jobs_request *req,
                     const struct claims *cl, unsigned ngpu, struct gs_jobs_claim *c)
{
  struct pick pk = {0};
  int rc;
  if ((rc = pick_existing(err, b, req, cl, ngpu, &pk)) != 0)
    return rc;
  if (!pk.found && req->create && (rc = pick_create(err, b, req, ngpu, &pk)) != 0)
    return rc;
  if (!pk.found && !pk.mig_gpus)
    return gs_err_set(err, GS_E_NOT_FOUND, "no selected GPU is in MIG mode; `gpuslice mig enable` "
                      "(or a layout: `gpuslice apply`) first, or use --mode timeslice");
  if (!pk.found && !pk.matching && !req->create) {
    if (req->profile[0])
      return gs_err_set(err, GS_E_NOT_FOUND, "no %s MIG device exists on the selected GPUs; "
                        "create one (`gpuslice gi create %s -C`) or pass --create", req->profile,
                        req->profile);
    return gs_err_set(err, GS_E_NOT_FOUND, "no MIG device with %.2f GiB exists on the selected "
                      "GPUs; create one (`gpuslice gi profiles` lists the sizes) or pass --create",
                      (double)req->memory_mib / 1024.0);
  }
  if (!pk.found) {
    const char *hint = req->create ? " and no room to create one" :
                                     " (pass --create to make one from free capacity)";
    char what[GS_GEOM_NAME_SIZE + 48];
    if (req->profile[0])
      snprintf(what, sizeof(what), "%s MIG device", req->profile);
    else
      snprintf(what, sizeof(what), "MIG device with %.2f GiB", (double)req->memory_mib / 1024.0);
    if (!pk.matching)
      return gs_err_set(err, GS_E_INSUFFICIENT_RESOURCES, "no free %s%s", what, hint);
    return gs_err_set(err, GS_E_INSUFFICIENT_RESOURCES, "no free %s: %s %u on the selected GPUs "
                      "%s in use%s", what, pk.matching == 1 ? "the" : "all", pk.matching,
                      pk.matching == 1 ? "is" : "are", hint);
  }
  claim_device(c, &pk.dev);
  c->mode = GS_JOBS_MIG;
  c->created = pk.created;
  return 0;
}

/* MPS inside a MIG device of req->profile: one no exclusive claim holds,
 * the least shared first. */
static int claim_mps_mig(struct gs_err *err, struct gs_backend *b,
                         const struct gs_jobs_request *req, const struct claims *cl, unsigned ngpu,
                         struct gs_jobs_claim *c)
{
  static struct gs_mig_device devs[GS_BACKEND_MAX_MIG_DEVICES];
  unsigned best_n = UINT32_MAX, seen = 0;
  int rc;
  for (unsigned g = 0; g < ngpu; g++) {
    struct gs_gpu_info info;
    unsigned nd = 0;
    if (!gpu_selected(req, g))
      continue;
    if ((rc = b->ops->gpu_info(b, err, g, &info)) != 0)
      return rc;
    if (!info.mig_current)
      continue;
    if ((rc = b->ops->mig_devices(b, err, g, devs, &nd)) != 0)
      return rc;
    for (unsigned i = 0; i < nd; i++) {
      unsigned n = 0;
      bool exclusive = false;
      if (!devs[i].gi_profile || !is_profile(info.model, devs[i].gi_profile, req->profile))
        continue;
      seen++;
      for (unsigned k = 0; k < cl->n; k++)
        if (strcmp(cl->c[k].uuid, devs[i].uuid) == 0) {
          n++;
          exclusive = exclusive || cl->c[k].mode != GS_JOBS_MPS;
        }
      if (!exclusive && n < best_n) {
        best_n = n;
        claim_device(c, &devs[i]);
      }
    }
  }
  if (best_n != UINT32_MAX) {
    c->mode = GS_JOBS_MPS;
    return 0;
  }
  if (!seen)
    return gs_err_set(err, GS_E_NOT_FOUND, "no %s MIG device exists to share with MPS; create one "
                      "(gpuslice gi create %s -C)", req->profile, req->profile);
  return gs_err_set(err, GS_E_INSUFFICIENT_RESOURCES, "every %s MIG device is held by an "
                    "exclusive job", req->profile);
}

/* A share of a whole GPU: one outside MIG mode that no MIG claim holds,
 * the least shared first. */
static int claim_share(struct gs_err *err, struct gs_backend *b, const struct gs_jobs_request *req,
                       const struct claims *cl, unsigned ngpu, struct gs_jobs_claim *c)
{
  struct gs_gpu_info info, best_info;
  unsigned best_n = UINT32_MAX, seen = 0;
  int rc;
  if ((rc = gpu_exists(err, req, ngpu)) != 0)
    return rc;
  for (unsigned g = 0; g < ngpu; g++) {
    unsigned n = 0;
    bool mig_claim = false;
    if (!gpu_selected(req, g))
      continue;
    if ((rc = b->ops->gpu_info(b, err, g, &info)) != 0)
      return rc;
    seen++;
    if (info.mig_current)
      continue;
    if (req->mode == GS_JOBS_MPS && req->memory_mib > info.memory_mib)
      return gs_err_set(err, GS_E_USAGE, "--memory %.2f GiB: GPU %u has only %.2f GiB",
                        (double)req->memory_mib / 1024.0, g, gs_geom_gib(info.memory_mib));
    for (unsigned i = 0; i < cl->n; i++)
      if (cl->c[i].gpu == g && !cl->c[i].by_uuid) {
        n++;
        mig_claim = mig_claim || cl->c[i].mode == GS_JOBS_MIG;
      }
    if (!mig_claim && n < best_n)
      best_n = n, best_info = info;
  }
  if (best_n == UINT32_MAX)
    return gs_err_set(err, GS_E_NOT_FOUND, "%s needs a whole GPU outside MIG mode, and the %s in "
                      "MIG mode; `gpuslice mig disable -i N` frees one, or run on a slice with "
                      "--profile", gs_jobs_mode_name(req->mode),
                      seen == 1 ? "selected GPU is" : "selected GPUs are");
  c->mode = req->mode;
  c->gpu = best_info.index;
  snprintf(c->uuid, sizeof(c->uuid), "%s", best_info.uuid);
  snprintf(c->profile, sizeof(c->profile), "gpu");
  c->memory_mib = best_info.memory_mib;
  return 0;
}

/* Who holds a new claim: the job, its label, its owner process and our uid. */
static void stamp(struct gs_jobs_claim *c, const char *job, const char *user, pid_t owner)
{
  snprintf(c->job, sizeof(c->job), "%s", job);
  snprintf(c->user, sizeof(c->user), "%s", user);
  c->owner_pid = (int)owner;
  c->owner_start = gs_proc_start((int)owner);
  c->since = gs__jobs_now();
  c->uid = (unsigned)geteuid();
}

int gs_jobs_claim(struct gs_err *err, struct gs_backend *b, const char *dir,
                  const struct gs_jobs_request *req, const char *job, const char *user,
                  pid_t owner, struct gs_jobs_claim *out)
{
  struct claims *clp = NULL;
  struct gs_file_lock lock = {-1};
  struct gs_jobs_claim c = {0};
  unsigned ngpu = 0;
  int rc;
  if ((rc = b->ops->gpu_count(b, err, &ngpu)) != 0)
    return rc;
  if ((req->mode == GS_JOBS_MIG || req->profile[0]) && (rc = feasible(err, b, req, ngpu)) != 0)
    return rc;
  if (!(clp = malloc(sizeof(*clp))))
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory reading claims");
  if ((rc = lock_claims(err, dir, true, &lock)) != 0)
    goto out;
  if ((rc = load(err, dir, clp)) != 0)
    goto out;
  reap(b, clp);
  if (clp->n >= GS_JOBS_MAX_CLAIMS) {
    rc = gs_err_set(err, GS_E_INSUFFICIENT_RESOURCES, "%u claims are live, the most kept",
                    GS_JOBS_MAX_CLAIMS);
    goto out;
  }
  if (req->mode == GS_JOBS_MIG)
    rc = claim_mig(err, b, req, clp, ngpu, &c);
  else if (req->mode == GS_JOBS_MPS && req->profile[0])
    rc = claim_mps_mig(err, b, req, clp, ngpu, &c);
  else
    rc = claim_share(err, b, req, clp, ngpu, &c);
  if (rc == 0) {
    stamp(&c, job, user, owner);
    clp->c[clp->n++] = c;
    if ((rc = save(err, dir, clp)) != 0)
      undo(b, &c);
    else
      *out = c;
  } else {
    save(NULL, dir, clp); /* keep the reaping even when nothing was claimed */
  }
out:
  gs_file_unlock(&lock);
  free(clp);
  return rc;
}

/* The live claim on uuid of an owner other than c's, or NULL. */
static const struct gs_jobs_claim *held_by_other(const struct claims *cl,
                                                 const struct gs_jobs_claim *c)
{
  for (unsigned i = 0; i < cl->n; i++)
    if (strcmp(cl->c[i].uuid, c->uuid) == 0 && live(&cl->c[i]) &&
        (cl->c[i].owner_pid != c->owner_pid || cl->c[i].owner_start != c->owner_start))
      return &cl->c[i];
  return NULL;
}

int gs_jobs_claim_device(struct gs_err *err, const char *dir, const char *uuid,
                         const char *profile, const char *job, const char *user, pid_t owner,
                         struct gs_jobs_claim *out)
{
  struct claims *clp = malloc(sizeof(*clp));
  struct gs_file_lock lock = {-1};
  struct gs_jobs_claim c = {.mode = GS_JOBS_MIG, .by_uuid = true};
  const struct gs_jobs_claim *h;
  int rc;
  if (!clp)
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory reading claims");
  snprintf(c.uuid, sizeof(c.uuid), "%s", uuid);
  snprintf(c.profile, sizeof(c.profile), "%s", profile);
  stamp(&c, job, user, owner);
  if ((rc = lock_claims(err, dir, true, &lock)) != 0 || (rc = load(err, dir, clp)) != 0)
    goto out;
  if ((h = held_by_other(clp, &c)) != NULL)
    rc = gs_err_set(err, GS_E_IN_USE, "%s is held by %s of %s (uid %u, pid %d); it is free again "
                    "when that ends", uuid, h->job, h->user, h->uid, h->owner_pid);
  else if (clp->n >= GS_JOBS_MAX_CLAIMS)
    rc = gs_err_set(err, GS_E_INSUFFICIENT_RESOURCES, "%u claims are live, the most kept",
                    GS_JOBS_MAX_CLAIMS);
  if (rc)
    goto out;
  clp->c[clp->n++] = c;
  if ((rc = save(err, dir, clp)) == 0)
    *out = c;
out:
  gs_file_unlock(&lock);
  free(clp);
  return rc;
}

/* Applies fn to the stored copy of c under the lock. */
static int update(struct gs_err *err, const char *dir, const struct gs_jobs_claim *c,
                  void (*fn)(struct gs_jobs_claim *stored, void *arg), void *arg)
{
  struct claims *clp = malloc(sizeof(*clp));
  struct gs_file_lock lock = {-1};
  int rc;
  unsigned i;
  if (!clp)
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory reading claims");
  if ((rc = lock_claims(err, dir, true, &lock)) != 0)
    goto out;
  if ((rc = load(err, dir, clp)) != 0)
    goto out;
  for (i = 0; i < clp->n; i++)
    if (strcmp(clp->c[i].uuid, c->uuid) == 0 && strcmp(clp->c[i].job, c->job) == 0 &&
        clp->c[i].owner_pid == c->owner_pid && clp->c[i].uid == (unsigned)geteuid())
      break;
  if (i == clp->n) {
    rc = gs_err_set(err, GS_E_NOT_FOUND, "job %s holds no claim on %s (its claim was dropped as "
                    "dead)", c->job, c->uuid);
    goto out;
  }
  if (fn)
    fn(&clp->c[i], arg);
  else
    clp->c[i] = clp->c[--clp->n];
  rc = save(err, dir, clp);
out:
  gs_file_unlock(&lock);
  free(clp);
  return rc;
}

static void set_job(struct gs_jobs_claim *stored, void *arg)
{
  const struct gs_jobs_claim *c = arg;
  stored->job_pid = c->job_pid;
  stored->job_start = c->job_start;
}

int gs_jobs_claim_started(struct gs_err *err, struct gs_backend *b, const char *dir,
                          struct gs_jobs_claim *c, pid_t job_pid)
{
  int rc;
  c->job_pid = (int)job_pid;
  c->job_start = gs_proc_start((int)job_pid);
  if ((rc = update(err, dir, c, set_job, c)) != 0)
    return rc;
  if (gs__jobs_emulated(b)) {
    struct gs_proc_info p = {.pid = (unsigned)job_pid, .gpu = c->gpu,
                             .gi = c->mode == GS_JOBS_MIG ? (int)c->gi : -1,
                             .ci = c->mode == GS_JOBS_MIG ? (int)c->ci : -1};
    snprintf(p.name, sizeof(p.name), "gpuslice-job %s", c->job);
    return gs_emu_proc_add(b, err, &p);
  }
  return 0;
}

static void set_owner(struct gs_jobs_claim *stored, void *arg)
{
  const struct gs_jobs_claim *c = arg;
  stored->owner_pid = c->owner_pid;
  stored->owner_start = c->owner_start;
}

int gs_jobs_claim_adopt(struct gs_err *err, const char *dir, struct gs_jobs_claim *c, pid_t owner)
{
  struct gs_jobs_claim next = *c;
  int rc;
  next.owner_pid = (int)owner;
  next.owner_start = gs_proc_start((int)owner);
  if ((rc = update(err, dir, c, set_owner, &next)) == 0)
    *c = next;
  return rc;
}

int gs_jobs_release(struct gs_err *err, struct gs_backend *b, const char *dir,
                    const struct gs_jobs_claim *c)
{
  int rc = update(err, dir, c, NULL, NULL);
  if (rc == 0 || rc == GS_E_NOT_FOUND)
    undo(b, c);
  return rc;
}

int gs_jobs_claims(struct gs_err *err, const char *dir, struct gs_jobs_claim **out, unsigned *n)
{
  struct claims *cl = malloc(sizeof(*cl));
  struct gs_file_lock lock = {-1};
  int rc;
  *out = NULL;
  *n = 0;
  if (!cl)
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory reading claims");
  if ((rc = lock_claims(err, dir, false, &lock)) == 0) {
    rc = load(err, dir, cl);
    gs_file_unlock(&lock);
  }
  if (rc == 0 && cl->n && !(*out = calloc(cl->n, sizeof(**out))))
    rc = gs_err_set(err, GS_E_NO_MEMORY, "out of memory listing claims");
  for (unsigned i = 0; rc == 0 && i < cl->n; i++)
    if (live(&cl->c[i]))
      (*out)[(*n)++] = cl->c[i];
  free(cl);
  return rc;
}

int gs_jobs_sharers(struct gs_err *err, const char *dir, const char *uuid, unsigned *n)
{
  struct gs_jobs_claim *c;
  unsigned nc, k = 0;
  int rc = gs_jobs_claims(err, dir, &c, &nc);
  if (rc)
    return rc;
  for (unsigned i = 0; i < nc; i++)
    k += strcmp(c[i].uuid, uuid) == 0 && c[i].mode != GS_JOBS_MIG;
  free(c);
  *n = k;
  return 0;
}
