/* SPDX-License-Identifier: Apache-2.0 */
/* apply.c: carries out layout plans on a backend, safely: one apply at a time
 * (a lock), every GPU planned before anything changes, and the final layouts
 * journaled before the first change, so a crash at any point is finished by
 * the next apply or by recover. Only instances of the old or the new layout
 * ever exist, because a plan destroys old-only ones and creates new-only ones. */
#include "layout/layout.h"

#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define JOURNAL_FORMAT "gpuslice-apply-journal"

/* ---- reading the machine ---- */

static void mark_busy(struct gs_layout_current *cur, const struct gs_proc_info *p, unsigned n)
{
  for (unsigned i = 0; i < n; i++)
    for (unsigned g = 0; g < cur->ngi; g++)
      if (p[i].gi >= 0 && (unsigned)p[i].gi == cur->gi[g].gi.id)
        cur->gi[g].busy = true;
}

int gs_layout_read_current(struct gs_err *err, struct gs_backend *b, unsigned gpu,
                           struct gs_layout_current *cur)
{
  struct gs_gi_info gis[GS_GEOM_MAX_INSTANCES];
  struct gs_gpu_info info;
  struct gs_proc_info *procs;
  unsigned ngi = 0, np = 0;
  int rc;
  memset(cur, 0, sizeof(*cur));
  if ((rc = b->ops->gpu_info(b, err, gpu, &info)) != 0)
    return rc;
  cur->mig_current = info.mig_current;
  cur->mig_pending = info.mig_pending;
  if (!info.mig_current)
    return 0;
  if ((rc = b->ops->gi_list(b, err, gpu, gis, &ngi)) != 0)
    return rc;
  for (unsigned g = 0; g < ngi; g++) {
    cur->gi[g].gi = gis[g];
    if ((rc = b->ops->ci_list(b, err, gpu, gis[g].id, cur->gi[g].ci, &cur->gi[g].nci)) != 0)
      return rc;
  }
  cur->ngi = ngi;
  if (!(procs = calloc(GS_BACKEND_MAX_PROCS, sizeof(*procs))))
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory reading GPU %u", gpu);
  /* A backend that cannot list processes cannot say what is busy; NVML drivers
   * without the call are older than MIG's process accounting anyway. */
  if (b->ops->processes(b, NULL, gpu, procs, &np) == 0)
    mark_busy(cur, procs, np);
  free(procs);
  return 0;
}

/* ---- the layout a plan ends in ---- */

static bool destroyed(const struct gs_layout_plan *p, enum gs_layout_op_kind k, unsigned gi,
                      unsigned ci)
{
  for (unsigned i = 0; i < p->nops; i++)
    if (p->op[i].kind == k && p->op[i].gi_id == gi && (k == GS_LAYOUT_DESTROY_GI || p->op[i].ci_id == ci))
      return true;
  return false;
}

static void keep_gi(const struct gs_layout_current_gi *c, const struct gs_layout_plan *p,
                    struct gs_layout_gi *out)
{
  memset(out, 0, sizeof(*out));
  out->profile = c->gi.profile;
  out->start = (int)c->gi.start;
  for (unsigned i = 0; i < c->nci; i++)
    if (!destroyed(p, GS_LAYOUT_DESTROY_CI, c->gi.id, c->ci[i].id))
      out->ci[out->nci++] = (struct gs_layout_ci){c->ci[i].profile.id, (int)c->ci[i].start};
  for (unsigned i = 0; i < p->nops; i++)
    if (p->op[i].kind == GS_LAYOUT_CREATE_CI && p->op[i].gi_op < 0 && p->op[i].gi_id == c->gi.id)
      out->ci[out->nci++] = p->op[i].ci;
}

/* The concrete layout the plan leads to: what the journal records, so that
 * recovery rebuilds exactly this and not another equally valid one. */
void gs_layout_plan_final(const struct gs_layout_current *cur, const struct gs_layout_target *want,
                          const struct gs_layout_plan *p, struct gs_layout_target *out)
{
  memset(out, 0, sizeof(*out));
  out->mig_enabled = want->mig_enabled;
  if (!want->mig_enabled)
    return;
  for (unsigned g = 0; g < cur->ngi; g++)
    if (!destroyed(p, GS_LAYOUT_DESTROY_GI, cur->gi[g].gi.id, 0))
      keep_gi(&cur->gi[g], p, &out->gi[out->ngi++]);
  for (unsigned i = 0; i < p->nops; i++) {
    struct gs_layout_gi *gi;
    if (p->op[i].kind != GS_LAYOUT_CREATE_GI)
      continue;
    gi = &out->gi[out->ngi++];
    memset(gi, 0, sizeof(*gi));
    gi->profile = p->op[i].profile;
    gi->start = (int)p->op[i].start;
    for (unsigned j = i + 1; j < p->nops; j++)
      if (p->op[j].kind == GS_LAYOUT_CREATE_CI && p->op[j].gi_op == (int)i)
        gi->ci[gi->nci++] = p->op[j].ci;
  }
}

/* ---- the journal ---- */

static void journal_path(const struct gs_layout_apply_opts *o, char out[PATH_MAX])
{
  snprintf(out, PATH_MAX, "%s.journal", o->lock_path);
}

/* A GPU's entry: its layout, and the model and UUID it was planned for, so
 * that recovery never rebuilds it on another GPU. */
static json_t *target_json(unsigned gpu, const struct gs_gpu_info *info, const struct gs_layout_target *t)
{
  json_t *gis = json_array();
  for (unsigned i = 0; i < t->ngi; i++) {
    json_t *cis = json_array();
    for (unsigned c = 0; c < t->gi[i].nci; c++)
      json_array_append_new(cis, json_pack("{s:i, s:i}", "profile_id", t->gi[i].ci[c].profile_id,
                                           "start", t->gi[i].ci[c].start));
    json_array_append_new(gis, json_pack("{s:i, s:i, s:o}", "profile_id", t->gi[i].profile->id,
                                         "start", t->gi[i].start, "compute_instances", cis));
  }
  return json_pack("{s:i, s:s, s:s, s:b, s:o}", "gpu", gpu, "model", info->model->key, "uuid",
                   info->uuid, "mig_enabled", t->mig_enabled, "gpu_instances", gis);
}

static int write_journal(struct gs_err *err, const struct gs_layout_apply_opts *o,
                         const struct gs_layout_target *finals, const bool *touched,
                         const struct gs_gpu_info *infos, unsigned ngpu)
{
  char path[PATH_MAX], *text;
  json_t *gpus = json_array(), *root;
  int rc;
  for (unsigned g = 0; g < ngpu; g++)
    if (touched[g])
      json_array_append_new(gpus, target_json(g, &infos[g], &finals[g]));
  root = json_pack("{s:s, s:i, s:s, s:i, s:o}", "format", JOURNAL_FORMAT, "version", 1, "config",
                   o->config_name ? o->config_name : "", "pid", (int)getpid(), "gpus", gpus);
  text = root ? json_dumps(root, JSON_INDENT(2)) : NULL;
  json_decref(root);
  if (!text)
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory writing the apply journal");
  journal_path(o, path);
  rc = gs_file_make_parent(err, path);
  if (rc == 0)
    rc = gs_file_write_atomic(err, path, text, strlen(text));
  free(text);
  return rc;
}

static int journal_gi(struct gs_err *err, const char *path, const struct gs_geom_model *m,
                      json_t *j, struct gs_layout_gi *gi)
{
  json_int_t pid = -1, start = -1;
  json_t *cis = NULL, *c;
  size_t k;
  memset(gi, 0, sizeof(*gi));
  if (json_unpack(j, "{s:I, s:I, s:o}", "profile_id", &pid, "start", &start, "compute_instances", &cis) ||
      !(gi->profile = gs_geom_gi_profile_by_id(m, (unsigned)pid)) || start < -1 ||
      start >= GS_GEOM_MAX_GRID || !json_is_array(cis) || json_array_size(cis) > GS_GEOM_MAX_INSTANCES)
    return gs_err_set(err, GS_E_CORRUPT_STATE, "%s: a GPU instance entry is malformed; delete the "
                                               "journal and apply the layout again", path);
  gi->start = (int)start;
  json_array_foreach(cis, k, c) {
    json_int_t cp = -1, cs = -1;
    if (json_unpack(c, "{s:I, s:I}", "profile_id", &cp, "start", &cs) || cp < 0 || cp > 8 ||
        cs < -1 || cs >= GS_GEOM_MAX_GRID)
      return gs_err_set(err, GS_E_CORRUPT_STATE, "%s: a compute instance entry is malformed; delete "
                                                 "the journal and apply the layout again", path);
    gi->ci[gi->nci++] = (struct gs_layout_ci){(unsigned)cp, (int)cs};
  }
  return 0;
}

/* A journal entry is for the GPU it names only if the model, and the UUID
 * when the entry has one (older journals have none), are that GPU's:
 * else the machine or the GPU changed since, and its layout must not land. */
static int same_gpu(struct gs_err *err, const char *path, json_t *j, const struct gs_gpu_info *info)
{
  const char *model = json_string_value(json_object_get(j, "model"));
  json_t *uuid = json_object_get(j, "uuid");
  if (!model || (uuid && !json_is_string(uuid)))
    return gs_err_set(err, GS_E_CORRUPT_STATE, "%s: GPU %u's entry has no model or a malformed "
                      "uuid; delete the journal and apply the layout again", path, info->index);
  if (strcmp(model, info->model->key) != 0 ||
      (uuid && strcmp(json_string_value(uuid), info->uuid) != 0))
    return gs_err_set(err, GS_E_CORRUPT_STATE,
                      "%s was written for GPU %u = %s %s, but GPU %u here is %s %s: the machine "
                      "or the GPU changed since, so its layout is not applied; check `gpuslice "
                      "list`, then delete the journal and apply the layout again",
                      path, info->index, model, uuid ? json_string_value(uuid) : "(no uuid)",
                      info->index, info->model->key, info->uuid);
  return 0;
}

/* Reads a journal back into a selection; each GPU must still be the one it
 * was written for (same_gpu). */
static int read_journal(struct gs_err *err, struct gs_backend *b, const char *path, json_t *root,
                        struct gs_layout_selection *sel)
{
  json_t *gpus = json_object_get(root, "gpus"), *j;
  size_t k;
  int rc;
  if (!json_is_string(json_object_get(root, "format")) ||
      strcmp(json_string_value(json_object_get(root, "format")), JOURNAL_FORMAT) != 0 ||
      !json_is_array(gpus))
    return gs_err_set(err, GS_E_CORRUPT_STATE, "%s is not a gpuslice apply journal; move it away "
                                               "and apply the layout again", path);
  if ((rc = b->ops->gpu_count(b, err, &sel->ngpu)) != 0)
    return rc;
  if (!(sel->target = calloc(sel->ngpu ? sel->ngpu : 1, sizeof(*sel->target))))
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory reading %s", path);
  json_array_foreach(gpus, k, j) {
    json_int_t gpu = -1;
    int enabled = 0;
    json_t *gis = NULL, *gj;
    struct gs_gpu_info info;
    size_t i;
    if (json_unpack(j, "{s:I, s:b, s:o}", "gpu", &gpu, "mig_enabled", &enabled, "gpu_instances", &gis) ||
        gpu < 0 || (unsigned)gpu >= sel->ngpu || !json_is_array(gis) ||
        json_array_size(gis) > GS_GEOM_MAX_INSTANCES)
      return gs_err_set(err, GS_E_CORRUPT_STATE, "%s: GPU entry %zu is malformed or names a GPU "
                                                 "this machine lacks; delete the journal and apply again",
                        path, k);
    if ((rc = b->ops->gpu_info(b, err, (unsigned)gpu, &info)) != 0 ||
        (rc = same_gpu(err, path, j, &info)) != 0)
      return rc;
    sel->named[gpu] = sel->touched[gpu] = true;
    sel->target[gpu].mig_enabled = enabled;
    json_array_foreach(gis, i, gj) {
      if ((rc = journal_gi(err, path, info.model, gj, &sel->target[gpu].gi[i])) != 0)
        return rc;
      sel->target[gpu].ngi++;
    }
  }
  return 0;
}

/* ---- running a plan ---- */

static int run_op(struct gs_err *err, struct gs_backend *b, unsigned gpu, const struct gs_layout_op *op,
                  const unsigned *made, bool pending_ok, unsigned *new_id)
{
  struct gs_gi_info gi;
  struct gs_ci_info ci;
  int activation = 0, rc;
  *new_id = 0;
  switch (op->kind) {
  case GS_LAYOUT_DESTROY_CI:
    return b->ops->ci_destroy(b, err, gpu, op->gi_id, op->ci_id);
  case GS_LAYOUT_DESTROY_GI:
    return b->ops->gi_destroy(b, err, gpu, op->gi_id);
  case GS_LAYOUT_SET_MIG:
    if ((rc = b->ops->set_mig_mode(b, err, gpu, op->mig_enable, &activation)) != 0)
      return rc;
    if (activation && !pending_ok)
      return gs_err_set(err, activation,
                        "GPU %u: MIG mode is now pending (%s); reset the GPU or reboot, then apply "
                        "again to create the instances",
                        gpu, gs_backend_code_text(activation));
    return 0;
  case GS_LAYOUT_CREATE_GI:
    if ((rc = b->ops->gi_create(b, err, gpu, op->profile, (int)op->start, &gi)) == 0)
      *new_id = gi.id;
    return rc;
  case GS_LAYOUT_CREATE_CI:
    rc = b->ops->ci_create(b, err, gpu, op->gi_op >= 0 ? made[op->gi_op] : op->gi_id,
                           op->ci.profile_id, op->ci.start, &ci);
    if (rc == 0)
      *new_id = ci.id;
    return rc;
  }
  return gs_err_set(err, GS_E_INVALID_ARGUMENT, "unknown plan step");
}

static int run_plan(struct gs_err *err, struct gs_backend *b, unsigned gpu,
                    const struct gs_layout_plan *p, const struct gs_layout_apply_opts *o)
{
  unsigned made[GS_LAYOUT_MAX_OPS] = {0};
  for (unsigned i = 0; i < p->nops; i++) {
    int rc = run_op(err, b, gpu, &p->op[i], made, o->pending_ok, &made[i]);
    if (o->on_op)
      o->on_op(o->arg, gpu, &p->op[i], made[i], rc, err);
    if (rc)
      return rc;
  }
  return 0;
}

/* "; processes using it: 4242 (train.py), ..." for an IN_USE message. */
static void list_pids(struct gs_backend *b, unsigned gpu, char *buf, size_t size)
{
  struct gs_proc_info *procs = calloc(GS_BACKEND_MAX_PROCS, sizeof(*procs));
  unsigned n = 0;
  size_t used = 0;
  if (procs && b->ops->processes(b, NULL, gpu, procs, &n) == 0 && n > 0)
    used = (size_t)snprintf(buf, size, "; processes on GPU %u: ", gpu);
  for (unsigned i = 0; procs && i < n && used < size; i++)
    used += (size_t)snprintf(buf + used, size - used, "%s%u (%s, GPU instance %d)", i ? ", " : "",
                             procs[i].pid, procs[i].name, procs[i].gi);
  free(procs);
}

void gs_layout_target_of(const struct gs_layout_current *cur, bool enable, struct gs_layout_target *out)
{
  memset(out, 0, sizeof(*out));
  out->mig_enabled = enable;
  for (unsigned g = 0; enable && g < cur->ngi; g++) {
    struct gs_layout_gi *gi = &out->gi[out->ngi++];
    gi->profile = cur->gi[g].gi.profile;
    gi->start = (int)cur->gi[g].gi.start;
    for (unsigned c = 0; c < cur->gi[g].nci; c++)
      gi->ci[gi->nci++] = (struct gs_layout_ci){cur->gi[g].ci[c].profile.id, (int)cur->gi[g].ci[c].start};
  }
}

/* Plans every touched GPU; nothing has changed when this fails. */
static int plan_all(struct gs_err *err, struct gs_backend *b, const struct gs_layout_selection *sel,
                    const struct gs_layout_apply_opts *o, struct gs_layout_plan *plans,
                    struct gs_layout_target *finals, struct gs_gpu_info *infos)
{
  struct gs_layout_current cur;
  struct gs_layout_target mode_only;
  int rc;
  for (unsigned g = 0; g < sel->ngpu; g++) {
    const struct gs_layout_target *want = &sel->target[g];
    if ((rc = b->ops->gpu_info(b, err, g, &infos[g])) != 0)
      return rc;
    if (!sel->touched[g])
      continue;
    if ((rc = gs_layout_read_current(err, b, g, &cur)) == 0 && o->mode_only) {
      gs_layout_target_of(&cur, want->mig_enabled, &mode_only);
      want = &mode_only;
    }
    if (rc != 0 || (rc = gs_layout_plan_gpu(err, infos[g].model, &cur, want, o->force, &plans[g])) != 0) {
      char pids[160] = "";
      if (rc == GS_E_IN_USE)
        list_pids(b, g, pids, sizeof(pids));
      if (rc != GS_E_NO_MEMORY)
        gs_err_set(err, rc, "GPU %u: %s%s", g, err ? err->msg : "", pids);
      return rc;
    }
    gs_layout_plan_final(&cur, want, &plans[g], &finals[g]);
    if (o->on_plan)
      o->on_plan(o->arg, g, &plans[g]);
  }
  return 0;
}

/* pre-apply-mode and pre-apply-config, when the plans make such changes. */
static int run_change_hooks(struct gs_err *err, const struct gs_layout_selection *sel,
                            const struct gs_layout_plan *plans, const struct gs_layout_apply_opts *o)
{
  bool mode = false, config = false;
  int rc = 0;
  for (unsigned g = 0; g < sel->ngpu; g++)
    for (unsigned i = 0; sel->touched[g] && i < plans[g].nops; i++) {
      mode = mode || plans[g].op[i].kind == GS_LAYOUT_SET_MIG;
      config = config || plans[g].op[i].kind != GS_LAYOUT_SET_MIG;
    }
  if (mode)
    rc = gs_layout_hooks_run(err, o->hooks, GS_LAYOUT_HOOK_PRE_APPLY_MODE, o->hook_env);
  if (rc == 0 && config)
    rc = gs_layout_hooks_run(err, o->hooks, GS_LAYOUT_HOOK_PRE_APPLY_CONFIG, o->hook_env);
  return rc;
}

static int apply_locked(struct gs_err *err, struct gs_backend *b, const struct gs_layout_selection *sel,
                        const struct gs_layout_apply_opts *o)
{
  struct gs_layout_plan *plans = calloc(sel->ngpu ? sel->ngpu : 1, sizeof(*plans));
  struct gs_layout_target *finals = calloc(sel->ngpu ? sel->ngpu : 1, sizeof(*finals));
  struct gs_gpu_info *infos = calloc(sel->ngpu ? sel->ngpu : 1, sizeof(*infos));
  char path[PATH_MAX];
  int rc;
  if (!plans || !finals || !infos) {
    rc = gs_err_set(err, GS_E_NO_MEMORY, "out of memory planning the layout");
    goto out;
  }
  if ((rc = plan_all(err, b, sel, o, plans, finals, infos)) != 0 || o->dry_run)
    goto out;
  if ((rc = run_change_hooks(err, sel, plans, o)) != 0 ||
      (rc = write_journal(err, o, finals, sel->touched, infos, sel->ngpu)) != 0)
    goto out;
  for (unsigned g = 0; g < sel->ngpu && rc == 0; g++)
    if (sel->touched[g])
      rc = run_plan(err, b, g, &plans[g], o);
  if (rc == 0) {
    journal_path(o, path);
    unlink(path);
  }
out:
  free(plans);
  free(finals);
  free(infos);
  return rc;
}

static int take_lock(struct gs_err *err, const struct gs_layout_apply_opts *o, struct gs_file_lock *lock)
{
  int rc = gs_file_make_parent(err, o->lock_path);
  if (rc == 0)
    rc = gs_file_lock_wait(err, o->lock_path, o->wait_seconds, lock);
  if (rc == GS_E_IN_USE)
    gs_err_set(err, rc, "another gpuslice apply is running (%s.lock is held); wait for it, or "
                        "pass --wait SECONDS",
               o->lock_path);
  return rc;
}

int gs_layout_apply(struct gs_err *err, struct gs_backend *b, const struct gs_layout_selection *sel,
                    const struct gs_layout_apply_opts *o)
{
  struct gs_file_lock lock = {-1};
  const struct gs_layout_hooks *hooks = o->dry_run ? NULL : o->hooks;
  struct gs_err exit_err = {0};
  int rc = take_lock(err, o, &lock), exit_rc;
  if (rc)
    return rc;
  rc = gs_layout_hooks_run(err, hooks, GS_LAYOUT_HOOK_APPLY_START, o->hook_env);
  if (rc == 0)
    rc = apply_locked(err, b, sel, o);
  /* apply-exit runs whatever happened; its own failure matters only when
   * nothing failed before it. */
  exit_rc = gs_layout_hooks_run(&exit_err, hooks, GS_LAYOUT_HOOK_APPLY_EXIT, o->hook_env);
  if (rc == 0 && exit_rc)
    rc = gs_err_set(err, exit_rc, "%s", exit_err.msg);
  gs_file_unlock(&lock);
  return rc;
}

int gs_layout_recover(struct gs_err *err, struct gs_backend *b, const struct gs_layout_apply_opts *o,
                      bool *found)
{
  struct gs_file_lock lock = {-1};
  struct gs_layout_selection sel;
  char path[PATH_MAX], *text = NULL;
  size_t len;
  json_t *root;
  int rc = take_lock(err, o, &lock);
  *found = false;
  memset(&sel, 0, sizeof(sel));
  if (rc)
    return rc;
  journal_path(o, path);
  rc = gs_file_read_private(err, path, 1u << 20, 0, &text, &len);
  if (rc == GS_E_NOT_FOUND) {
    gs_err_clear(err);
    rc = 0;
    goto out;
  }
  if (rc)
    goto out;
  *found = true;
  if (!(root = json_loadb(text, len, 0, NULL)))
    rc = gs_err_set(err, GS_E_CORRUPT_STATE, "%s is not valid JSON; move it away and apply the "
                                             "layout again", path);
  else {
    rc = read_journal(err, b, path, root, &sel);
    json_decref(root);
  }
  if (rc == 0)
    rc = apply_locked(err, b, &sel, o);
out:
  free(text);
  gs_layout_selection_free(&sel);
  gs_file_unlock(&lock);
  return rc;
}
