/* SPDX-License-Identifier: Apache-2.0 */
/* migparted.c: `nvidia-mig-parted assert` and `apply` as mig-parted runs
 * them (cmd/nvidia-mig-parted/{assert,apply}): the walk over a config's
 * entries and the GPUs each names, the mode step (clear, set, reset every
 * GPU when a change is pending), the device step (a GPU whose device counts
 * differ gets the layout mig-parted builds: its creation order, the driver's
 * automatic placement), and their debug lines. The changes themselves go
 * through gs_layout_apply (lock, journal, fewest operations), and every GPU
 * is checked before the first one changes. No printing: lines go to the
 * caller's logger. */
#include "layout/mp.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct mp {
  struct gs_backend *b;
  const struct gs_layout_file *f;
  const struct gs_layout_config *cfg;
  struct gs_layout_selection sel;
  unsigned ngpu;
  const struct gs_layout_mp_opts *o;
  const struct gs_layout_logger *log;
  bool pending[GS_BACKEND_MAX_GPUS];
  unsigned matched;
};

void gs__mp_log(const struct gs_layout_logger *log, enum gs_layout_log_level level, const char *fmt, ...)
{
  char msg[GS_ERR_MSG_SIZE * 2];
  va_list ap;
  if (!log || !log->fn || (level == GS_LAYOUT_DEBUG && !log->debug))
    return;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  log->fn(log->arg, level, msg);
}

/* ---- counts of MIG devices by profile name ---- */

void gs__mp_counts_add(struct gs__mp_counts *c, const char *name)
{
  unsigned i;
  for (i = 0; i < c->n && strcmp(c->name[i], name) != 0; i++)
    ;
  if (i == c->n && c->n < GS__MP_MAX_NAMES)
    snprintf(c->name[c->n++], GS_GEOM_NAME_SIZE, "%s", name);
  if (i < c->n)
    c->count[i]++;
}

void gs__mp_counts_current(const struct gs_layout_current *cur, struct gs__mp_counts *out)
{
  memset(out, 0, sizeof(*out));
  /* A GI without compute instances has no MIG device: mig-parted does not see it. */
  for (unsigned g = 0; g < cur->ngi; g++)
    for (unsigned c = 0; c < cur->gi[g].nci; c++)
      gs__mp_counts_add(out, cur->gi[g].ci[c].profile.is_default ? cur->gi[g].gi.profile->name
                                                         : cur->gi[g].ci[c].profile.name);
}

void gs__mp_counts_target(const struct gs_geom_model *m, const struct gs_layout_target *t,
                          struct gs__mp_counts *out)
{
  memset(out, 0, sizeof(*out));
  for (unsigned g = 0; g < t->ngi; g++) {
    struct gs_geom_ci_profile cps[GS_GEOM_MAX_CI_PROFILES];
    unsigned n = gs_geom_ci_profiles(m, t->gi[g].profile, cps);
    if (t->gi[g].nci == 0)
      gs__mp_counts_add(out, t->gi[g].profile->name);
    for (unsigned c = 0; c < t->gi[g].nci; c++)
      for (unsigned k = 0; k < n; k++)
        if (cps[k].id == t->gi[g].ci[c].profile_id)
          gs__mp_counts_add(out, cps[k].is_default ? t->gi[g].profile->name : cps[k].name);
  }
}

bool gs__mp_counts_equal(const struct gs__mp_counts *a, const struct gs__mp_counts *b)
{
  if (a->n != b->n)
    return false;
  for (unsigned i = 0; i < a->n; i++) {
    unsigned j;
    for (j = 0; j < b->n && strcmp(a->name[i], b->name[j]) != 0; j++)
      ;
    if (j == b->n || a->count[i] != b->count[j])
      return false;
  }
  return true;
}

/* ---- the busy check and the one-GPU apply ---- */

/* mig-parted walks GIs by NVML profile enum, then CIs by profile; the first
 * CI a process holds is where its ClearMigConfig stops. */
int gs__mp_busy(struct gs_err *err, struct gs_backend *b, unsigned gpu, const struct gs_layout_current *cur)
{
  struct gs_proc_info *procs = calloc(GS_BACKEND_MAX_PROCS, sizeof(*procs));
  const struct gs_layout_current_gi *hit = NULL;
  const struct gs_ci_info *hit_ci = NULL;
  unsigned np = 0;
  if (!procs)
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory reading GPU %u", gpu);
  if (b->ops->processes(b, NULL, gpu, procs, &np) != 0)
    np = 0;
  for (unsigned p = 0; p < np; p++)
    for (unsigned g = 0; g < cur->ngi; g++)
      for (unsigned c = 0; c < cur->gi[g].nci; c++) {
        const struct gs_layout_current_gi *gi = &cur->gi[g];
        const struct gs_ci_info *ci = &gi->ci[c];
        if (procs[p].gi != (int)gi->gi.id || procs[p].ci != (int)ci->id)
          continue;
        if (!hit || gi->gi.profile->nvml_enum < hit->gi.profile->nvml_enum ||
            (gi == hit && ci->profile.id < hit_ci->profile.id)) {
          hit = gi;
          hit_ci = ci;
        }
      }
  free(procs);
  if (!hit)
    return 0;
  return gs_err_set(err, GS_E_IN_USE,
                    "error walking gpu instances for '%u': error walking compute instances for '%u': "
                    "error destroying Compute instance for profile '(%u, 0)': %s",
                    gpu, hit->gi.profile->nvml_enum, hit_ci->profile.id, gs_backend_code_text(GS_E_IN_USE));
}

int gs__mp_apply_one(struct gs_err *err, struct gs_backend *b, unsigned gpu, const struct gs_layout_target *t,
                     const struct gs_layout_mp_opts *o)
{
  struct gs_layout_selection sel = {0};
  struct gs_layout_apply_opts ao = {.config_name = "nvidia-mig-parted", .lock_path = o->lock_path,
                                    .wait_seconds = o->wait_seconds, .pending_ok = true};
  int rc;
  if ((rc = b->ops->gpu_count(b, err, &sel.ngpu)) != 0)
    return rc;
  if (!(sel.target = calloc(sel.ngpu, sizeof(*sel.target))))
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory changing GPU %u", gpu);
  sel.named[gpu] = sel.touched[gpu] = true;
  sel.target[gpu] = *t;
  rc = gs_layout_apply(err, b, &sel, &ao);
  gs_layout_selection_free(&sel);
  return rc;
}

/* ---- the walk ---- */

/* Go's %v of an entry's devices and filter: "all", "[0 1]", "0x20B010DE". */
static void fmt_devices(const struct gs_layout_entry *e, char *buf, size_t size)
{
  size_t used = 0;
  if (e->all_devices) {
    snprintf(buf, size, "all");
    return;
  }
  used = (size_t)snprintf(buf, size, "[");
  for (unsigned i = 0; i < e->ndev && used < size; i++)
    used += (size_t)snprintf(buf + used, size - used, "%s%u", i ? " " : "", e->dev[i]);
  if (used < size)
    snprintf(buf + used, size - used, "]");
}

static void fmt_filter(const struct gs_layout_entry *e, char *buf, size_t size)
{
  size_t used = (size_t)snprintf(buf, size, "%s", e->filter_list ? "[" : "");
  for (unsigned i = 0; i < e->nfilter && used < size; i++)
    used += (size_t)snprintf(buf + used, size - used, "%s%s", i ? " " : "", e->filter[i]);
  if (used < size && e->filter_list)
    snprintf(buf + used, size - used, "]");
}

/* A GPU as mig-parted names it from its PCI config space: device, vendor,
 * subsystem device, subsystem vendor. */
static void fmt_device_id(const struct gs_gpu_info *g, char buf[32])
{
  unsigned id = g->pci_device_id ? g->pci_device_id : g->model->pci_id;
  snprintf(buf, 32, "0x%08X:0x%08X", id, g->pci_subsystem_id);
}

typedef int (*visit_fn)(struct gs_err *err, struct mp *m, const struct gs_layout_entry *e, unsigned gpu,
                        const struct gs_gpu_info *info);

/* mig-parted's WalkSelectedMigConfigForEachGPU: entries in order, each with
 * the GPUs it names in index order. */
static int walk(struct gs_err *err, struct mp *m, visit_fn fn, bool quiet)
{
  const struct gs_layout_logger *log = quiet ? NULL : m->log;
  char devs[256], filt[GS_LAYOUT_MAX_FILTERS * (GS_LAYOUT_NAME_SIZE + 1) + 3], id[32];
  int rc;
  for (unsigned k = 0; k < m->cfg->nentry; k++) {
    const struct gs_layout_entry *e = &m->cfg->entry[k];
    fmt_devices(e, devs, sizeof(devs));
    fmt_filter(e, filt, sizeof(filt));
    if (e->nfilter)
      gs__mp_log(log, GS_LAYOUT_DEBUG, "Walking MigConfig for (device-filter=%s, devices=%s)", filt, devs);
    else
      gs__mp_log(log, GS_LAYOUT_DEBUG, "Walking MigConfig for (devices=%s)", devs);
    for (unsigned g = 0; g < m->ngpu; g++) {
      struct gs_gpu_info info;
      if (m->sel.entry[g] != (int)k)
        continue;
      if ((rc = m->b->ops->gpu_info(m->b, err, g, &info)) != 0)
        return rc;
      fmt_device_id(&info, id);
      gs__mp_log(log, GS_LAYOUT_DEBUG, "  GPU %u: %s", g, id);
      if ((rc = fn(err, m, e, g, &info)) != 0)
        return rc;
    }
  }
  return 0;
}

static const char *mode_word(bool on)
{
  return on ? "Enabled" : "Disabled";
}

static bool capable(const struct gs_gpu_info *info)
{
  return info->model && info->model->ngi > 0;
}

/* Go's %v of the entry's mig-devices map: "map[1g.5gb:2 2g.10gb:1]". */
static void fmt_devices_map(const struct gs_layout_entry *e, char *buf, size_t size)
{
  unsigned order[GS_LAYOUT_MAX_SPECS];
  size_t used = (size_t)snprintf(buf, size, "map[");
  for (unsigned i = 0; i < e->nspec; i++) {
    unsigned j = i;
    for (; j > 0 && strcmp(e->spec[i].profile, e->spec[order[j - 1]].profile) < 0; j--)
      order[j] = order[j - 1];
    order[j] = i;
  }
  for (unsigned i = 0; i < e->nspec && used < size; i++)
    used += (size_t)snprintf(buf + used, size - used, "%s%s:%u", i ? " " : "", e->spec[order[i]].profile,
                             e->spec[order[i]].count);
  if (used < size)
    snprintf(buf + used, size - used, "]");
}

/* ---- assert ---- */

/* Whether gpu's devices already are what the entry asks (mig-parted skips it then). */
static int counts_match(struct gs_err *err, struct mp *m, unsigned gpu, const struct gs_gpu_info *info,
                        struct gs_layout_current *cur, bool *same)
{
  struct gs__mp_counts have, want;
  int rc = gs_layout_read_current(err, m->b, gpu, cur);
  if (rc)
    return rc;
  gs__mp_counts_current(cur, &have);
  gs__mp_counts_target(info->model, &m->sel.target[gpu], &want);
  *same = gs__mp_counts_equal(&have, &want);
  return 0;
}


static int visit_assert_mode(struct gs_err *err, struct mp *m, const struct gs_layout_entry *e, unsigned gpu,
                             const struct gs_gpu_info *info)
{
  (void)gpu;
  gs__mp_log(m->log, GS_LAYOUT_DEBUG, "    Asserting MIG mode: %s", mode_word(e->mig_enabled));
  gs__mp_log(m->log, GS_LAYOUT_DEBUG, "    MIG capable: %s\n", capable(info) ? "true" : "false");
  if (!capable(info) && e->mig_enabled)
    return gs_err_set(err, GS_E_NOT_SUPPORTED, "unable to assert MIG mode enabled on non MIG-capable GPU");
  if (!capable(info))
    return 0;
  gs__mp_log(m->log, GS_LAYOUT_DEBUG, "    Current MIG mode: %s", mode_word(info->mig_current));
  if (info->mig_current != e->mig_enabled)
    return gs_err_set(err, GS_E_NOT_FOUND, "current mode different than mode being asserted");
  return 0;
}

static int visit_assert_config(struct gs_err *err, struct mp *m, const struct gs_layout_entry *e, unsigned gpu,
                               const struct gs_gpu_info *info)
{
  struct gs_layout_current cur;
  char map[512];
  bool same = false;
  int rc;
  if ((!capable(info) && !e->mig_enabled) || (!e->mig_enabled && !info->mig_current)) {
    m->matched++;
    return 0;
  }
  if (!info->mig_current)
    return gs_err_set(err, GS_E_NOT_SUPPORTED, "error getting MIGConfig: error asserting MIG enabled: MIG "
                                               "mode disabled");
  fmt_devices_map(e, map, sizeof(map));
  gs__mp_log(m->log, GS_LAYOUT_DEBUG, "    Asserting MIG config: %s", map);
  if ((rc = counts_match(err, m, gpu, info, &cur, &same)) != 0)
    return rc;
  m->matched += same;
  return 0;
}

static int assert_mode(struct gs_err *err, void *arg)
{
  return walk(err, arg, visit_assert_mode, false);
}

static int assert_config(struct gs_err *err, void *arg)
{
  struct mp *m = arg;
  int rc;
  m->matched = 0;
  if ((rc = walk(err, m, visit_assert_config, false)) != 0)
    return rc;
  if (m->matched != m->ngpu)
    return gs_err_set(err, GS_E_NOT_FOUND, "not all GPUs match the specified config");
  return 0;
}

/* ---- apply: the mode ---- */

static int check_mode(struct gs_err *err, struct mp *m, const struct gs_layout_entry *e, unsigned gpu,
                      const struct gs_gpu_info *info)
{
  struct gs_layout_current cur;
  int rc;
  if (!capable(info))
    return e->mig_enabled && !e->all_devices
               ? gs_err_set(err, GS_E_NOT_SUPPORTED, "cannot set MIG mode on non MIG-capable GPU")
               : 0;
  if (!info->mig_current)
    return 0;
  if ((rc = gs_layout_read_current(err, m->b, gpu, &cur)) != 0)
    return rc;
  if ((rc = gs__mp_busy(err, m->b, gpu, &cur)) != 0)
    return gs_err_set(err, rc, "error clearing existing MIG configurations: %s", err ? err->msg : "");
  return 0;
}

static int visit_apply_mode(struct gs_err *err, struct mp *m, const struct gs_layout_entry *e, unsigned gpu,
                            const struct gs_gpu_info *info)
{
  struct gs_layout_target t = {.mig_enabled = e->mig_enabled};
  struct gs_gpu_info now;
  int rc;
  gs__mp_log(m->log, GS_LAYOUT_DEBUG, "    MIG capable: %s\n", capable(info) ? "true" : "false");
  if (!capable(info)) {
    gs__mp_log(m->log, GS_LAYOUT_DEBUG, e->all_devices ? "    Skipping -- non MIG-capable GPU"
                                                       : "    Skipping -- non MIG-capable GPU with MIG mode disabled");
    return 0;
  }
  gs__mp_log(m->log, GS_LAYOUT_DEBUG, "    Current MIG mode: %s", mode_word(info->mig_current));
  if (info->mig_current)
    gs__mp_log(m->log, GS_LAYOUT_DEBUG, "    Clearing existing MIG configuration");
  gs__mp_log(m->log, GS_LAYOUT_DEBUG, "    Updating MIG mode: %s", mode_word(e->mig_enabled));
  if ((rc = gs__mp_apply_one(err, m->b, gpu, &t, m->o)) != 0)
    return gs_err_set(err, rc, "error setting MIG mode: %s", err ? err->msg : gs_backend_code_text(rc));
  if ((rc = m->b->ops->gpu_info(m->b, err, gpu, &now)) != 0)
    return rc;
  m->pending[gpu] = now.mig_current != now.mig_pending;
  gs__mp_log(m->log, GS_LAYOUT_DEBUG, "    Mode change pending: %s", m->pending[gpu] ? "true" : "false");
  return 0;
}

static int apply_mode(struct gs_err *err, void *arg)
{
  struct mp *m = arg;
  bool any = false;
  int rc;
  if ((rc = walk(err, m, check_mode, true)) != 0 || (rc = walk(err, m, visit_apply_mode, false)) != 0)
    return rc;
  for (unsigned g = 0; g < m->ngpu; g++)
    any = any || m->pending[g];
  if (m->o->skip_reset || !any)
    return 0;
  gs__mp_log(m->log, GS_LAYOUT_DEBUG, "At least one mode change pending");
  gs__mp_log(m->log, GS_LAYOUT_DEBUG, "Resetting all GPUs...");
  return gs__mp_reset_all(err, m->b, m->log);
}

/* ---- apply: the devices ---- */

/* The layout mig-parted builds on an empty GPU for target t: its creation
 * order (resolve.c sorts the lines so) with the driver's placements. */
static int built_layout(struct gs_err *err, const struct gs_geom_model *model, const struct gs_layout_target *t,
                        struct gs_layout_target *out)
{
  struct gs_layout_current empty = {.mig_current = true, .mig_pending = true};
  struct gs_layout_plan *plan = malloc(sizeof(*plan));
  int rc;
  if (!plan)
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory planning the layout");
  if ((rc = gs_layout_plan_gpu(err, model, &empty, t, false, plan)) == 0)
    gs_layout_plan_final(&empty, t, plan, out);
  free(plan);
  return rc;
}

static int check_config(struct gs_err *err, struct mp *m, const struct gs_layout_entry *e, unsigned gpu,
                        const struct gs_gpu_info *info)
{
  struct gs_layout_current cur;
  bool same = false;
  int rc;
  if (!capable(info))
    return e->mig_enabled && !e->all_devices
               ? gs_err_set(err, GS_E_NOT_SUPPORTED, "cannot set MIG config on non MIG-capable GPU")
               : 0;
  if (e->mig_enabled && !info->mig_current)
    return gs_err_set(err, GS_E_NOT_SUPPORTED, "unable to apply MIG config with MIG mode disabled");
  if (!e->mig_enabled && info->mig_current)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "MIG mode is currently enabled, but the configuration "
                                                  "specifies it should be disabled");
  if (!e->mig_enabled || (rc = counts_match(err, m, gpu, info, &cur, &same)) != 0 || same)
    return e->mig_enabled ? rc : 0;
  if ((rc = gs__mp_busy(err, m->b, gpu, &cur)) != 0) {
    /* mig-parted logs this once per creation order it tries, then gives up. */
    gs__mp_log(m->log, GS_LAYOUT_ERROR, "Error clearing MigConfig: %s", err ? err->msg : "");
    gs__mp_log(m->log, GS_LAYOUT_ERROR, "Error clearing MIG config on GPU %u, erroneous devices may persist", gpu);
    return gs_err_set(err, rc, "error setting MIGConfig: error attempting multiple config orderings: all "
                               "orderings failed");
  }
  return 0;
}

static int visit_apply_config(struct gs_err *err, struct mp *m, const struct gs_layout_entry *e, unsigned gpu,
                              const struct gs_gpu_info *info)
{
  struct gs_layout_current cur;
  struct gs_layout_target built;
  char map[512];
  bool same = false;
  int rc;
  gs__mp_log(m->log, GS_LAYOUT_DEBUG, "    MIG capable: %s\n", capable(info) ? "true" : "false");
  if (!capable(info)) {
    gs__mp_log(m->log, GS_LAYOUT_DEBUG, e->all_devices ? "    Skipping -- non MIG-capable GPU"
                                                       : "    Skipping -- non MIG-capable GPU with MIG mode disabled");
    return 0;
  }
  if (!e->mig_enabled) {
    gs__mp_log(m->log, GS_LAYOUT_DEBUG, "    Skipping MIG config -- MIG disabled");
    return 0;
  }
  fmt_devices_map(e, map, sizeof(map));
  gs__mp_log(m->log, GS_LAYOUT_DEBUG, "    Updating MIG config: %s", map);
  if ((rc = counts_match(err, m, gpu, info, &cur, &same)) != 0)
    return rc;
  if (same) {
    gs__mp_log(m->log, GS_LAYOUT_DEBUG, "    Skipping -- already set to desired value");
    return 0;
  }
  if ((rc = built_layout(err, info->model, &m->sel.target[gpu], &built)) != 0 ||
      (rc = gs__mp_apply_one(err, m->b, gpu, &built, m->o)) != 0)
    return gs_err_set(err, rc, "error setting MIGConfig: %s", err ? err->msg : gs_backend_code_text(rc));
  return 0;
}

static int apply_config(struct gs_err *err, void *arg)
{
  struct mp *m = arg;
  int rc = walk(err, m, check_config, true);
  return rc ? rc : walk(err, m, visit_apply_config, false);
}

/* ---- the commands ---- */

static int mp_open(struct gs_err *err, struct mp *m, struct gs_backend *b, const struct gs_layout_file *f,
                   const struct gs_layout_config *cfg)
{
  struct gs_gpu_info *infos = calloc(GS_BACKEND_MAX_GPUS, sizeof(*infos));
  int rc;
  m->b = b;
  m->f = f;
  m->cfg = cfg;
  if (!infos)
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory reading the GPUs");
  if ((rc = b->ops->gpu_count(b, err, &m->ngpu)) == 0)
    for (unsigned g = 0; g < m->ngpu && rc == 0; g++)
      rc = b->ops->gpu_info(b, err, g, &infos[g]);
  if (rc == 0)
    rc = gs__layout_resolve_mig_parted(err, f, cfg, infos, m->ngpu, &m->sel);
  free(infos);
  return rc;
}

int gs_layout_mp_assert(struct gs_err *err, struct gs_backend *b, const struct gs_layout_file *f,
                        const struct gs_layout_config *cfg, bool mode_only, const struct gs_layout_logger *log)
{
  struct mp *m = calloc(1, sizeof(*m));
  int rc;
  if (!m)
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory");
  m->log = log;
  if ((rc = mp_open(err, m, b, f, cfg)) == 0) {
    gs__mp_log(log, GS_LAYOUT_DEBUG, "Asserting MIG mode configuration...");
    rc = assert_mode(err, m);
    if (rc == 0 && !mode_only) {
      gs__mp_log(log, GS_LAYOUT_DEBUG, "Asserting MIG device configuration...");
      rc = assert_config(err, m);
    }
  }
  gs_layout_selection_free(&m->sel);
  free(m);
  return rc;
}

int gs_layout_mp_apply(struct gs_err *err, struct gs_backend *b, const struct gs_layout_file *f,
                       const struct gs_layout_config *cfg, const struct gs_layout_mp_opts *o)
{
  struct mp *m = calloc(1, sizeof(*m));
  struct gs__mp_steps s = {assert_mode, apply_mode, assert_config, apply_config, m};
  int rc;
  if (!m)
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory");
  m->o = o;
  m->log = o->log;
  if ((rc = mp_open(err, m, b, f, cfg)) == 0 && (rc = gs__mp_run(err, &s, o)) != 0)
    gs_err_set(err, rc, "error applying MIG configuration with hooks: %s", err ? err->msg : "");
  gs_layout_selection_free(&m->sel);
  free(m);
  return rc;
}
