/* SPDX-License-Identifier: Apache-2.0 */
/* emu.c: emulated GPUs with NVML's semantics: MIG mode rules per generation,
 * fixed GPU-instance IDs and the driver's automatic placement order, CIs that
 * pin their GI, processes that pin their instance, and NVML's error codes.
 * Every call is one transaction on the state file (emu_state.c): lock, load,
 * act, save, unlock, so separate processes see one machine.
 * limit: 1,063 lines, its emulator-only controls (gs_emu_reboot and after)
 * due to move out once the state-path work on this file has landed. */
#include "backend/emu_state.h"

#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct emu {
  struct gs_backend base;
  char path[PATH_MAX];
  struct gs_file_lock lock;
  struct gs__emu_state st;
};

static struct emu *emu_of(struct gs_backend *b)
{
  return (struct emu *)b;
}

/* ---- transactions ---- */

static int begin(struct emu *e, struct gs_err *err, bool write)
{
  int rc = gs__emu_state_load(err, e->path, write, &e->lock, &e->st);
  if (rc == GS_E_NOT_FOUND) {
    gs_file_unlock(&e->lock);
    return gs_err_set(err, GS_E_NOT_FOUND,
                      "emulator state file %s vanished; run `gpuslice emu reset` to recreate it",
                      e->path);
  }
  return rc;
}

static void end(struct emu *e)
{
  gs_file_unlock(&e->lock);
}

/* A test switch: GPUSLICE_EMU_KILL_AFTER=N kills this process with SIGKILL
 * right after its Nth change is saved, to prove that callers (a layout apply)
 * survive a crash between any two steps. */
static void maybe_die(void)
{
  static unsigned commits;
  const char *n = getenv("GPUSLICE_EMU_KILL_AFTER");
  if (n && *n && ++commits == (unsigned)strtoul(n, NULL, 10))
    raise(SIGKILL);
}

static int commit(struct emu *e, struct gs_err *err)
{
  int rc = gs__emu_state_save(err, e->path, &e->st);
  end(e);
  if (rc == 0)
    maybe_die();
  return rc;
}

/* Ends a transaction that failed with rc, keeping the state unchanged. */
static int abort_with(struct emu *e, int rc)
{
  end(e);
  return rc;
}

/* ---- lookups inside a loaded state ---- */

static int get_gpu(struct emu *e, struct gs_err *err, unsigned gpu, struct gs__emu_gpu **out)
{
  if (gpu >= e->st.ngpu)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT,
                      "GPU %u does not exist: this emulated machine has GPUs 0..%u", gpu,
                      e->st.ngpu - 1);
  *out = &e->st.gpu[gpu];
  return 0;
}

static int need_mig(struct gs_err *err, unsigned gpu, const struct gs__emu_gpu *g)
{
  if (g->mig_current)
    return 0;
  if (g->mig_pending)
    return gs_err_set(err, GS_E_NOT_SUPPORTED,
                      "GPU %u: MIG mode is pending enable; reset the GPU (`gpuslice emu gpu-reset "
                      "-i %u`) or reboot to apply it",
                      gpu, gpu);
  return gs_err_set(err, GS_E_NOT_SUPPORTED,
                    "GPU %u: MIG mode is disabled; enable it with `gpuslice mig enable -i %u`", gpu,
                    gpu);
}

static int need_root(struct emu *e, struct gs_err *err, unsigned gpu)
{
  if (!e->st.enforce_root || geteuid() == 0)
    return 0;
  return gs_err_set(err, GS_E_NO_PERMISSION,
                    "GPU %u: changing the MIG configuration needs root (or the mig/config "
                    "capability); run the command with sudo",
                    gpu);
}

static struct gs__emu_gi *find_gi(struct gs__emu_gpu *g, unsigned id)
{
  for (unsigned i = 0; i < g->ngi; i++)
    if (g->gi[i].id == id)
      return &g->gi[i];
  return NULL;
}

static int get_gi(struct gs_err *err, unsigned gpu, struct gs__emu_gpu *g, unsigned id,
                  struct gs__emu_gi **out)
{
  char have[64] = "";
  size_t used = 0;
  *out = find_gi(g, id);
  if (*out)
    return 0;
  for (unsigned i = 0; i < g->ngi && used < sizeof(have); i++)
    used += (size_t)snprintf(have + used, sizeof(have) - used, "%s%u", i ? ", " : "", g->gi[i].id);
  return gs_err_set(err, GS_E_NOT_FOUND, "GPU %u has no GPU instance %u (%s%s)", gpu, id,
                    g->ngi ? "it has " : "it has none", have);
}

/* Writes the pids (and names) of processes on gpu/gi/ci into buf; -1 = any;
 * gi -1 with ci -2: only those outside any MIG device (the whole GPU). */
static unsigned procs_on(const struct gs__emu_state *st, unsigned gpu, int gi, int ci, char *buf,
                         size_t size)
{
  unsigned n = 0;
  size_t used = 0;
  if (size)
    buf[0] = 0;
  for (unsigned i = 0; i < st->nproc; i++) {
    const struct gs_proc_info *p = &st->proc[i];
    if (p->gpu != gpu || (gi >= 0 && p->gi != gi) || (ci >= 0 && p->ci != ci) ||
        (ci == -2 && p->gi >= 0))
      continue;
    if (used < size)
      used += (size_t)snprintf(buf + used, size - used, "%s%u (%s)", n ? ", " : "", p->pid, p->name);
    n++;
  }
  return n;
}

static void layout_of(const struct gs__emu_gpu *g, struct gs_geom_layout *l)
{
  l->n = g->ngi;
  for (unsigned i = 0; i < g->ngi; i++) {
    l->slot[i].profile = g->gi[i].profile;
    l->slot[i].start = (int)g->gi[i].start;
  }
}

static bool profile_of_model(const struct gs_geom_model *m, const struct gs_geom_gi_profile *p)
{
  for (unsigned i = 0; i < m->ngi; i++)
    if (p == &m->gi[i]) /* equality: ordering unrelated pointers is undefined */
      return true;
  return false;
}

/* ---- GPU-level calls ---- */

static const char *const pci_buses[] = {"07", "0F", "47", "4E", "87", "90", "B7", "BD"};

static void fill_gpu_info(const struct gs__emu_state *st, unsigned gpu, struct gs_gpu_info *out)
{
  const struct gs__emu_gpu *g = &st->gpu[gpu];
  char seed[96 + GS__EMU_SEED_SIZE];
  uint8_t h[16];
  char uuid[37];
  memset(out, 0, sizeof(*out));
  out->index = gpu;
  out->model = g->model;
  snprintf(out->name, sizeof(out->name), "%s", g->sku->name);
  /* Stable across runs: a GPU's UUID is derived from its board and index,
   * and from the machine's seed when it has one (so machines differ). */
  snprintf(seed, sizeof(seed), "gpuslice-emu-gpu/%s/%u%s%s", g->sku->key, gpu,
           st->seed[0] ? "/" : "", st->seed);
  gs_hash128(seed, strlen(seed), h);
  gs_uuid_format(h, uuid);
  snprintf(out->uuid, sizeof(out->uuid), "GPU-%s", uuid);
  if (gpu < GS_NITEMS(pci_buses))
    snprintf(out->pci_bus_id, sizeof(out->pci_bus_id), "00000000:%s:00.0", pci_buses[gpu]);
  else
    snprintf(out->pci_bus_id, sizeof(out->pci_bus_id), "00000001:%02X:00.0", gpu);
  out->pci_device_id = g->sku->pci_id;
  out->pci_subsystem_id = g->sku->subsystem_id;
  out->mig_current = g->mig_current;
  out->mig_pending = g->mig_pending;
  out->memory_mib = g->model->memory_mib;
  snprintf(out->driver, sizeof(out->driver), "%s", st->driver.version);
  out->cuda_version = st->driver.cuda;
}

static int emu_gpu_count(struct gs_backend *b, struct gs_err *err, unsigned *count)
{
  struct emu *e = emu_of(b);
  int rc = begin(e, err, false);
  if (rc)
    return rc;
  *count = e->st.ngpu;
  end(e);
  return 0;
}

static int emu_gpu_info(struct gs_backend *b, struct gs_err *err, unsigned gpu, struct gs_gpu_info *out)
{
  struct emu *e = emu_of(b);
  struct gs__emu_gpu *g = NULL;
  int rc = begin(e, err, false);
  if (rc)
    return rc;
  if ((rc = get_gpu(e, err, gpu, &g)) != 0)
    return abort_with(e, rc);
  fill_gpu_info(&e->st, gpu, out);
  end(e);
  return 0;
}

/* Applies a requested mode as the driver does on each generation (reference
 * §9): Ampere resets the GPU, and the mode stays pending when a process holds
 * the GPU or no reset is allowed; Hopper and later switch without a reset. */
static int apply_mode(struct emu *e, struct gs_err *err, unsigned gpu, bool enable, int *activation)
{
  struct gs__emu_gpu *g = &e->st.gpu[gpu];
  char pids[160];
  unsigned busy = procs_on(&e->st, gpu, -1, -1, pids, sizeof(pids));
  *activation = 0;
  if (g->model->arch != GS_GEOM_AMPERE) {
    if (busy)
      return gs_err_set(err, GS_E_IN_USE,
                        "GPU %u: cannot change MIG mode while processes use the GPU: %s", gpu, pids);
    g->mig_current = g->mig_pending = enable;
    return 0;
  }
  g->mig_pending = enable;
  if (busy)
    *activation = GS_E_IN_USE;
  else if (g->reset_blocked)
    *activation = GS_E_RESET_REQUIRED;
  else
    g->mig_current = enable;
  return 0;
}

static int emu_set_mig_mode(struct gs_backend *b, struct gs_err *err, unsigned gpu, bool enable,
                            int *activation)
{
  struct emu *e = emu_of(b);
  struct gs__emu_gpu *g = NULL;
  int rc = begin(e, err, true);
  if (rc)
    return rc;
  if ((rc = get_gpu(e, err, gpu, &g)) != 0 || (rc = need_root(e, err, gpu)) != 0)
    return abort_with(e, rc);
  if (!enable && g->ngi)
    return abort_with(e, gs_err_set(err, GS_E_IN_USE,
                                    "GPU %u still has %u GPU instance%s; destroy them first "
                                    "(`gpuslice ci destroy -i %u` then `gpuslice gi destroy -i %u`)",
                                    gpu, g->ngi, g->ngi == 1 ? "" : "s", gpu, gpu));
  if ((rc = apply_mode(e, err, gpu, enable, activation)) != 0)
    return abort_with(e, rc);
  return commit(e, err);
}

/* ---- GPU instances ---- */

static int emu_gi_remaining(struct gs_backend *b, struct gs_err *err, unsigned gpu,
                            const struct gs_geom_gi_profile *p, unsigned *count)
{
  struct emu *e = emu_of(b);
  struct gs__emu_gpu *g = NULL;
  struct gs_geom_layout l;
  int rc = begin(e, err, false);
  if (rc)
    return rc;
  if ((rc = get_gpu(e, err, gpu, &g)) != 0 || (rc = need_mig(err, gpu, g)) != 0)
    return abort_with(e, rc);
  if (!profile_of_model(g->model, p))
    return abort_with(e, gs_err_set(err, GS_E_INVALID_ARGUMENT, "GPU %u (%s) has no profile %s",
                                    gpu, g->model->key, p->name));
  layout_of(g, &l);
  *count = gs_geom_remaining(g->model, &l, p);
  end(e);
  return 0;
}

/* The first start in the driver's order where p fits; when none does, the
 * reason given is the one at the driver's first choice. */
static int choose_start(struct gs_err *err, const struct gs__emu_gpu *g,
                        const struct gs_geom_layout *l, const struct gs_geom_gi_profile *p,
                        unsigned *start)
{
  unsigned order[GS_GEOM_MAX_GRID], n = gs_geom_gi_auto_order(g->model, p, order);
  for (unsigned i = 0; i < n; i++)
    if (gs_geom_check_add(NULL, g->model, l, p, order[i]) == 0) {
      *start = order[i];
      return 0;
    }
  return gs_geom_check_add(err, g->model, l, p, order[0]);
}

static void insert_gi(struct gs__emu_gpu *g, const struct gs__emu_gi *gi)
{
  unsigned i = g->ngi;
  while (i > 0 && g->gi[i - 1].id > gi->id) {
    g->gi[i] = g->gi[i - 1];
    i--;
  }
  g->gi[i] = *gi;
  g->ngi++;
}

static void fill_gi_info(unsigned gpu, const struct gs__emu_gi *gi, struct gs_gi_info *out)
{
  out->gpu = gpu;
  out->id = gi->id;
  out->profile = gi->profile;
  out->start = gi->start;
  out->span = gi->profile->span;
}

static int create_gi(struct emu *e, struct gs_err *err, unsigned gpu,
                     const struct gs_geom_gi_profile *p, int start, struct gs_gi_info *out)
{
  struct gs__emu_gpu *g = NULL;
  struct gs__emu_gi gi = {0};
  struct gs_geom_layout l;
  char pids[160];
  unsigned s = 0;
  int rc;
  if ((rc = get_gpu(e, err, gpu, &g)) != 0 || (rc = need_root(e, err, gpu)) != 0 ||
      (rc = need_mig(err, gpu, g)) != 0)
    return rc;
  if (!profile_of_model(g->model, p))
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "GPU %u (%s) has no profile %s", gpu,
                      g->model->key, p->name);
  /* A client holding the whole GPU blocks reconfiguring it: a GH200's -cgi
   * failed "In use by another client" while nsys had /dev/nvidia0 open. */
  if (procs_on(&e->st, gpu, -1, -2, pids, sizeof(pids)))
    return gs_err_set(err, GS_E_IN_USE,
                      "GPU %u is held by process %s outside any MIG device; end it (`gpuslice emu "
                      "proc-rm --pid PID`) before creating GPU instances",
                      gpu, pids);
  layout_of(g, &l);
  if (start >= 0)
    rc = gs_geom_check_add(err, g->model, &l, p, s = (unsigned)start);
  else
    rc = choose_start(err, g, &l, p, &s);
  if (rc)
    return rc;
  gi.id = gs_geom_gi_id_as(g->model, g->swapped_ids, s, p->span);
  gi.profile = p;
  gi.start = s;
  insert_gi(g, &gi);
  if (out)
    fill_gi_info(gpu, &gi, out);
  return 0;
}

static int emu_gi_create(struct gs_backend *b, struct gs_err *err, unsigned gpu,
                         const struct gs_geom_gi_profile *p, int start, struct gs_gi_info *out)
{
  struct emu *e = emu_of(b);
  int rc = begin(e, err, true);
  if (rc)
    return rc;
  if ((rc = create_gi(e, err, gpu, p, start, out)) != 0)
    return abort_with(e, rc);
  return commit(e, err);
}

static int destroy_gi(struct emu *e, struct gs_err *err, unsigned gpu, unsigned id)
{
  struct gs__emu_gpu *g = NULL;
  struct gs__emu_gi *gi = NULL;
  char pids[160];
  int rc;
  if ((rc = get_gpu(e, err, gpu, &g)) != 0 || (rc = need_root(e, err, gpu)) != 0 ||
      (rc = need_mig(err, gpu, g)) != 0 || (rc = get_gi(err, gpu, g, id, &gi)) != 0)
    return rc;
  if (gi->nci)
    return gs_err_set(err, GS_E_IN_USE,
                      "GPU instance %u on GPU %u has %u compute instance%s; destroy %s first "
                      "(`gpuslice ci destroy -i %u --gi %u`)",
                      id, gpu, gi->nci, gi->nci == 1 ? "" : "s", gi->nci == 1 ? "it" : "them", gpu,
                      id);
  if (procs_on(&e->st, gpu, (int)id, -1, pids, sizeof(pids)))
    return gs_err_set(err, GS_E_IN_USE, "GPU instance %u on GPU %u is used by processes %s", id,
                      gpu, pids);
  memmove(gi, gi + 1, (size_t)(g->gi + g->ngi - (gi + 1)) * sizeof(*gi));
  g->ngi--;
  return 0;
}

static int emu_gi_destroy(struct gs_backend *b, struct gs_err *err, unsigned gpu, unsigned id)
{
  struct emu *e = emu_of(b);
  int rc = begin(e, err, true);
  if (rc)
    return rc;
  if ((rc = destroy_gi(e, err, gpu, id)) != 0)
    return abort_with(e, rc);
  return commit(e, err);
}

static int emu_gi_list(struct gs_backend *b, struct gs_err *err, unsigned gpu,
                       struct gs_gi_info out[GS_GEOM_MAX_INSTANCES], unsigned *count)
{
  struct emu *e = emu_of(b);
  struct gs__emu_gpu *g = NULL;
  int rc = begin(e, err, false);
  if (rc)
    return rc;
  if ((rc = get_gpu(e, err, gpu, &g)) != 0 || (rc = need_mig(err, gpu, g)) != 0)
    return abort_with(e, rc);
  for (unsigned i = 0; i < g->ngi; i++)
    fill_gi_info(gpu, &g->gi[i], &out[i]);
  *count = g->ngi;
  end(e);
  return 0;
}

/* ---- compute instances ---- */

static int get_ci_profile(struct gs_err *err, const struct gs_geom_model *m,
                          const struct gs__emu_gi *gi, unsigned id, struct gs_geom_ci_profile *out)
{
  struct gs_geom_ci_profile all[GS_GEOM_MAX_CI_PROFILES];
  unsigned n = gs_geom_ci_profiles(m, gi->profile, all);
  char ids[96] = "";
  size_t used = 0;
  for (unsigned i = 0; i < n; i++) {
    if (all[i].id == id) {
      *out = all[i];
      return 0;
    }
    if (used < sizeof(ids))
      used += (size_t)snprintf(ids + used, sizeof(ids) - used, "%s%u (%s)", i ? ", " : "",
                               all[i].id, all[i].name);
  }
  return gs_err_set(err, GS_E_NOT_SUPPORTED,
                    "GPU instance %u (%s) has no compute-instance profile %u; its profiles are %s",
                    gi->id, gi->profile->name, id, ids);
}

/* Compute slices a stored CI occupies: its profile's count (the state file
 * was validated, so the profile exists). */
static unsigned ci_slices(const struct gs_geom_model *m, const struct gs__emu_gi *gi,
                          const struct gs__emu_ci *c)
{
  struct gs_geom_ci_profile cp;
  return get_ci_profile(NULL, m, gi, c->profile_id, &cp) == 0 ? cp.compute_slices : c->span;
}

/* Why a CI of profile cp cannot start at `start` in gi; 0 when it can.
 * Limits that no placement can lift are reported before overlaps. */
static int check_ci(struct gs_err *err, const struct gs_geom_model *m, const struct gs__emu_gi *gi,
                    const struct gs_geom_ci_profile *cp, unsigned start)
{
  unsigned used = 0, same = 0;
  if (start >= GS_GEOM_MAX_GRID || !(cp->starts & (1u << start)))
    return gs_err_set(err, GS_E_INVALID_ARGUMENT,
                      "compute instance %s cannot start at compute slice %u of GPU instance %u "
                      "(see `gpuslice ci placements --gi %u`)",
                      cp->name, start, gi->id, gi->id);
  for (unsigned i = 0; i < gi->nci; i++) {
    same += gi->ci[i].profile_id == cp->id;
    used += ci_slices(m, gi, &gi->ci[i]);
  }
  if (same >= cp->max_count)
    return gs_err_set(err, GS_E_INSUFFICIENT_RESOURCES,
                      "GPU instance %u holds at most %u %s compute instance%s", gi->id,
                      cp->max_count, cp->name, cp->max_count == 1 ? "" : "s");
  if (used + cp->compute_slices > gi->profile->compute_slices)
    return gs_err_set(err, GS_E_INSUFFICIENT_RESOURCES,
                      "GPU instance %u has %u free compute slice%s; %s needs %u", gi->id,
                      gi->profile->compute_slices - used,
                      gi->profile->compute_slices - used == 1 ? "" : "s", cp->name,
                      cp->compute_slices);
  for (unsigned i = 0; i < gi->nci; i++) {
    const struct gs__emu_ci *c = &gi->ci[i];
    /* Placements occupy their reported span (NVML: "number of compute slices
     * occupied"; a 3c reports 4), as the state file's validator assumes. */
    if (start < c->start + c->span && c->start < start + cp->span)
      return gs_err_set(err, GS_E_INSUFFICIENT_RESOURCES,
                        "compute instance %s at %u overlaps compute instance %u at %u:%u in GPU "
                        "instance %u",
                        cp->name, start, c->id, c->start, c->span, gi->id);
  }
  return 0;
}

static unsigned ci_remaining(const struct gs_geom_model *m, const struct gs__emu_gi *gi,
                             const struct gs_geom_ci_profile *cp)
{
  struct gs__emu_gi t = *gi;
  unsigned count = 0;
  for (unsigned s = 0; s < GS_GEOM_MAX_GRID && t.nci < GS_GEOM_MAX_INSTANCES; s++) {
    if (!(cp->starts & (1u << s)) || check_ci(NULL, m, &t, cp, s) != 0)
      continue;
    t.ci[t.nci++] = (struct gs__emu_ci){.id = 0, .profile_id = cp->id, .start = s, .span = cp->span};
    count++;
  }
  return count;
}

static int emu_ci_remaining(struct gs_backend *b, struct gs_err *err, unsigned gpu, unsigned gi_id,
                            unsigned ci_profile_id, unsigned *count)
{
  struct emu *e = emu_of(b);
  struct gs__emu_gpu *g = NULL;
  struct gs__emu_gi *gi = NULL;
  struct gs_geom_ci_profile cp;
  int rc = begin(e, err, false);
  if (rc)
    return rc;
  if ((rc = get_gpu(e, err, gpu, &g)) != 0 || (rc = need_mig(err, gpu, g)) != 0 ||
      (rc = get_gi(err, gpu, g, gi_id, &gi)) != 0 ||
      (rc = get_ci_profile(err, g->model, gi, ci_profile_id, &cp)) != 0)
    return abort_with(e, rc);
  *count = ci_remaining(g->model, gi, &cp);
  end(e);
  return 0;
}

static unsigned lowest_free_ci_id(const struct gs__emu_gi *gi)
{
  unsigned id = 0;
  for (bool clash = true; clash; id += clash) {
    clash = false;
    for (unsigned i = 0; i < gi->nci; i++)
      clash = clash || gi->ci[i].id == id;
  }
  return id;
}

static void fill_ci_info(const struct gs_geom_model *m, unsigned gpu, const struct gs__emu_gi *gi,
                         const struct gs__emu_ci *c, struct gs_ci_info *out)
{
  memset(out, 0, sizeof(*out));
  out->gpu = gpu;
  out->gi = gi->id;
  out->id = c->id;
  get_ci_profile(NULL, m, gi, c->profile_id, &out->profile);
  out->start = c->start;
  out->span = c->span;
}

static int create_ci(struct emu *e, struct gs_err *err, unsigned gpu, unsigned gi_id,
                     unsigned profile_id, int start, struct gs_ci_info *out)
{
  struct gs__emu_gpu *g = NULL;
  struct gs__emu_gi *gi = NULL;
  struct gs_geom_ci_profile cp;
  struct gs__emu_ci c = {0};
  int rc;
  if ((rc = get_gpu(e, err, gpu, &g)) != 0 || (rc = need_root(e, err, gpu)) != 0 ||
      (rc = need_mig(err, gpu, g)) != 0 || (rc = get_gi(err, gpu, g, gi_id, &gi)) != 0 ||
      (rc = get_ci_profile(err, g->model, gi, profile_id, &cp)) != 0)
    return rc;
  if (start >= 0) {
    if ((rc = check_ci(err, g->model, gi, &cp, (unsigned)start)) != 0)
      return rc;
    c.start = (unsigned)start;
  } else {
    /* The driver takes the lowest free slot (reference §5.3: 0:1, 1:1, 2:1...). */
    unsigned s;
    for (s = 0; s < GS_GEOM_MAX_GRID; s++)
      if ((cp.starts & (1u << s)) && check_ci(NULL, g->model, gi, &cp, s) == 0)
        break;
    if (s == GS_GEOM_MAX_GRID) {
      unsigned first = __builtin_ctz(cp.starts);
      rc = check_ci(err, g->model, gi, &cp, first);
      return rc ? rc : gs_err_set(err, GS_E_INSUFFICIENT_RESOURCES, "no room for %s", cp.name);
    }
    c.start = s;
  }
  c.id = lowest_free_ci_id(gi);
  c.profile_id = cp.id;
  c.span = cp.span;
  gi->ci[gi->nci++] = c;
  if (out)
    fill_ci_info(g->model, gpu, gi, &c, out);
  return 0;
}

static int emu_ci_create(struct gs_backend *b, struct gs_err *err, unsigned gpu, unsigned gi,
                         unsigned profile_id, int start, struct gs_ci_info *out)
{
  struct emu *e = emu_of(b);
  int rc = begin(e, err, true);
  if (rc)
    return rc;
  if ((rc = create_ci(e, err, gpu, gi, profile_id, start, out)) != 0)
    return abort_with(e, rc);
  return commit(e, err);
}

static int destroy_ci(struct emu *e, struct gs_err *err, unsigned gpu, unsigned gi_id, unsigned id)
{
  struct gs__emu_gpu *g = NULL;
  struct gs__emu_gi *gi = NULL;
  char pids[160];
  int rc;
  if ((rc = get_gpu(e, err, gpu, &g)) != 0 || (rc = need_root(e, err, gpu)) != 0 ||
      (rc = need_mig(err, gpu, g)) != 0 || (rc = get_gi(err, gpu, g, gi_id, &gi)) != 0)
    return rc;
  for (unsigned i = 0; i < gi->nci; i++) {
    if (gi->ci[i].id != id)
      continue;
    if (procs_on(&e->st, gpu, (int)gi_id, (int)id, pids, sizeof(pids)))
      return gs_err_set(err, GS_E_IN_USE,
                        "compute instance %u of GPU instance %u on GPU %u is used by processes %s",
                        id, gi_id, gpu, pids);
    gi->ci[i] = gi->ci[--gi->nci];
    return 0;
  }
  return gs_err_set(err, GS_E_NOT_FOUND, "GPU instance %u on GPU %u has no compute instance %u",
                    gi_id, gpu, id);
}

static int emu_ci_destroy(struct gs_backend *b, struct gs_err *err, unsigned gpu, unsigned gi,
                          unsigned id)
{
  struct emu *e = emu_of(b);
  int rc = begin(e, err, true);
  if (rc)
    return rc;
  if ((rc = destroy_ci(e, err, gpu, gi, id)) != 0)
    return abort_with(e, rc);
  return commit(e, err);
}

/* CIs of gi in ascending id order, as NVML and nvidia-smi list them. */
static unsigned sorted_cis(const struct gs__emu_gi *gi, const struct gs__emu_ci *out[])
{
  for (unsigned i = 0; i < gi->nci; i++) {
    unsigned j = i;
    for (; j > 0 && out[j - 1]->id > gi->ci[i].id; j--)
      out[j] = out[j - 1];
    out[j] = &gi->ci[i];
  }
  return gi->nci;
}

static int emu_ci_list(struct gs_backend *b, struct gs_err *err, unsigned gpu, unsigned gi_id,
                       struct gs_ci_info out[GS_GEOM_MAX_INSTANCES], unsigned *count)
{
  struct emu *e = emu_of(b);
  struct gs__emu_gpu *g = NULL;
  struct gs__emu_gi *gi = NULL;
  const struct gs__emu_ci *cis[GS_GEOM_MAX_INSTANCES];
  int rc = begin(e, err, false);
  if (rc)
    return rc;
  if ((rc = get_gpu(e, err, gpu, &g)) != 0 || (rc = need_mig(err, gpu, g)) != 0 ||
      (rc = get_gi(err, gpu, g, gi_id, &gi)) != 0)
    return abort_with(e, rc);
  *count = sorted_cis(gi, cis);
  for (unsigned i = 0; i < *count; i++)
    fill_ci_info(g->model, gpu, gi, cis[i], &out[i]);
  end(e);
  return 0;
}

/* ---- MIG devices and processes ---- */

static void fill_mig_device(const struct gs__emu_state *st, unsigned gpu, const struct gs__emu_gi *gi,
                            const struct gs__emu_ci *c, unsigned index, struct gs_mig_device *out)
{
  const struct gs_geom_model *m = st->gpu[gpu].model;
  struct gs_gpu_info info;
  struct gs_geom_ci_profile cp;
  char seed[192];
  uint8_t h[16];
  char uuid[37];
  fill_gpu_info(st, gpu, &info);
  get_ci_profile(NULL, m, gi, c->profile_id, &cp);
  memset(out, 0, sizeof(*out));
  out->gpu = gpu;
  out->index = index;
  out->gi = gi->id;
  out->ci = c->id;
  /* Stable across runs: the same instance on the same GPU gets the same UUID. */
  snprintf(seed, sizeof(seed), "gpuslice-emu-mig/%.60s/%u/%u/%u/%u/%u", info.uuid, gi->id,
           gi->profile->id, c->id, c->profile_id, c->start);
  gs_hash128(seed, strlen(seed), h);
  gs_uuid_format(h, uuid);
  snprintf(out->legacy_uuid, sizeof(out->legacy_uuid), "MIG-%.60s/%u/%u", info.uuid, gi->id, c->id);
  /* Drivers before R470 named MIG devices by GPU UUID, GI and CI only
   * (reference §8.2: "MIG-GPU-<uuid>/<gi>/<ci>"). */
  if (st->driver.code < GS_GEOM_DRIVER(470, 0, 0))
    snprintf(out->uuid, sizeof(out->uuid), "%s", out->legacy_uuid);
  else
    snprintf(out->uuid, sizeof(out->uuid), "MIG-%s", uuid);
  snprintf(out->name, sizeof(out->name), "%s", cp.name);
  out->gi_profile = gi->profile;
  out->memory_mib = gi->profile->memory_mib;
  out->sms = cp.sms;
}

static int emu_mig_devices(struct gs_backend *b, struct gs_err *err, unsigned gpu,
                           struct gs_mig_device *out, unsigned *count)
{
  struct emu *e = emu_of(b);
  struct gs__emu_gpu *g = NULL;
  unsigned n = 0;
  int rc = begin(e, err, false);
  if (rc)
    return rc;
  if ((rc = get_gpu(e, err, gpu, &g)) != 0)
    return abort_with(e, rc);
  for (unsigned i = 0; g->mig_current && i < g->ngi; i++) {
    const struct gs__emu_ci *cis[GS_GEOM_MAX_INSTANCES];
    unsigned nci = sorted_cis(&g->gi[i], cis);
    for (unsigned j = 0; j < nci; j++, n++)
      fill_mig_device(&e->st, gpu, &g->gi[i], cis[j], n, &out[n]);
  }
  *count = n;
  end(e);
  return 0;
}

static int emu_processes(struct gs_backend *b, struct gs_err *err, unsigned gpu,
                         struct gs_proc_info out[GS_BACKEND_MAX_PROCS], unsigned *count)
{
  struct emu *e = emu_of(b);
  struct gs__emu_gpu *g = NULL;
  unsigned n = 0;
  int rc = begin(e, err, false);
  if (rc)
    return rc;
  if ((rc = get_gpu(e, err, gpu, &g)) != 0)
    return abort_with(e, rc);
  for (unsigned i = 0; i < e->st.nproc; i++)
    if (e->st.proc[i].gpu == gpu)
      out[n++] = e->st.proc[i];
  *count = n;
  end(e);
  return 0;
}

static void emu_close(struct gs_backend *b)
{
  struct emu *e = emu_of(b);
  end(e);
  free(e);
}

static const struct gs_backend_ops emu_ops = {
    .name = "emu",
    .gpu_count = emu_gpu_count,
    .gpu_info = emu_gpu_info,
    .set_mig_mode = emu_set_mig_mode,
    .gi_remaining = emu_gi_remaining,
    .gi_create = emu_gi_create,
    .gi_destroy = emu_gi_destroy,
    .gi_list = emu_gi_list,
    .ci_remaining = emu_ci_remaining,
    .ci_create = emu_ci_create,
    .ci_destroy = emu_ci_destroy,
    .ci_list = emu_ci_list,
    .mig_devices = emu_mig_devices,
    .processes = emu_processes,
    .close = emu_close,
};

/* ---- opening, and the controls only an emulated machine has ---- */

/* The state file: the caller's, $GPUSLICE_EMU_STATE, or emu.json in the
 * user's state directory; never a fixed name in a shared one (/tmp). */
static int choose_state_path(struct gs_err *err, const char *given, char out[PATH_MAX])
{
  const char *env = getenv("GPUSLICE_EMU_STATE");
  char dir[PATH_MAX];
  int rc, n;
  if (!given || !*given)
    given = env;
  if (given && *given)
    n = snprintf(out, PATH_MAX, "%s", given);
  else if ((rc = gs_file_state_dir(err, "GPUSLICE_EMU_STATE=FILE (or pass --emu-state FILE)", dir)))
    return rc;
  else
    n = snprintf(out, PATH_MAX, "%s/emu.json", dir);
  if (n < 0 || n >= PATH_MAX)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "the emulator's state path is too long");
  return 0;
}

/* Loads the state, creating it from spec when absent; a state of another
 * machine than an explicit spec asks for is refused, never overwritten. */
static int open_state(struct emu *e, struct gs_err *err, const char *spec)
{
  struct gs__emu_machine m;
  int rc = gs__emu_machine_parse(err, spec, GS_BACKEND_MAX_GPUS, &m);
  if (rc)
    return rc;
  rc = gs__emu_state_load(err, e->path, true, &e->lock, &e->st);
  if (rc == GS_E_NOT_FOUND) {
    gs_err_clear(err);
    gs__emu_machine_init(&e->st, &m);
    return commit(e, err);
  }
  if (rc)
    return rc;
  if (spec && *spec && !gs__emu_machine_same(&e->st, &m))
    return abort_with(e, gs_err_set(err, GS_E_INVALID_ARGUMENT,
                                    "emulator state %s holds another machine (%u GPU%s, GPU 0: %s, "
                                    "driver %s%s%s) than --emulate %s; run `gpuslice emu reset "
                                    "--emulate %s` to replace it, or use --emu-state FILE for a "
                                    "separate machine",
                                    e->path, e->st.ngpu, e->st.ngpu == 1 ? "" : "s",
                                    e->st.gpu[0].sku->key, e->st.driver.version,
                                    e->st.seed[0] ? ", seed=" : "", e->st.seed, spec, spec));
  end(e);
  return 0;
}

int gs__emu_open(struct gs_err *err, const struct gs_backend_config *cfg, struct gs_backend **out)
{
  struct emu *e = calloc(1, sizeof(*e));
  int rc;
  if (!e)
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory opening the GPU emulator");
  e->base.ops = &emu_ops;
  e->lock.fd = -1;
  if ((rc = choose_state_path(err, cfg->state_path, e->path)) != 0 ||
      (rc = open_state(e, err, cfg->emulate)) != 0) {
    free(e);
    return rc;
  }
  *out = &e->base;
  return 0;
}

const char *gs_emu_state_path(struct gs_backend *b)
{
  return b->ops == &emu_ops ? emu_of(b)->path : NULL;
}

/* Starts a write transaction for a control only an emulated machine has. */
static int begin_control(struct gs_backend *b, struct gs_err *err)
{
  if (b->ops != &emu_ops)
    return gs_err_set(err, GS_E_NOT_SUPPORTED, "this is a real machine, not an emulated one");
  return begin(emu_of(b), err, true);
}

/* begin_control for one GPU's setting: the transaction is open on success. */
static int begin_gpu_control(struct gs_backend *b, struct gs_err *err, unsigned gpu,
                             struct gs__emu_gpu **g)
{
  int rc = begin_control(b, err);
  if (rc == 0 && (rc = get_gpu(emu_of(b), err, gpu, g)) != 0)
    abort_with(emu_of(b), rc);
  return rc;
}

int gs_emu_reset_state(struct gs_err *err, const char *state_path, const char *spec)
{
  struct gs__emu_machine m;
  struct emu *e = calloc(1, sizeof(*e));
  int rc = gs__emu_machine_parse(err, spec, GS_BACKEND_MAX_GPUS, &m);
  if (!e)
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory resetting the GPU emulator");
  if (rc) {
    free(e);
    return rc;
  }
  rc = choose_state_path(err, state_path, e->path);
  if (rc == 0)
    rc = gs_file_make_parent(err, e->path);
  if (rc == 0)
    rc = gs_file_lock(err, e->path, 1, &e->lock);
  if (rc == 0) {
    gs__emu_machine_init(&e->st, &m);
    rc = commit(e, err);
  }
  free(e);
  return rc;
}

/* Instances never survive a reboot; MIG mode does only on Ampere, whose
 * InfoROM keeps the (possibly pending) bit (reference §9). */
static void reboot_machine(struct gs__emu_state *st)
{
  for (unsigned i = 0; i < st->ngpu; i++) {
    struct gs__emu_gpu *g = &st->gpu[i];
    g->ngi = 0;
    if (g->model->arch == GS_GEOM_AMPERE)
      g->mig_current = g->mig_pending;
    else
      g->mig_current = g->mig_pending = false;
  }
  st->nproc = 0;
  st->boots++;
}

int gs_emu_reboot(struct gs_backend *b, struct gs_err *err)
{
  int rc = begin_control(b, err);
  if (rc)
    return rc;
  reboot_machine(&emu_of(b)->st);
  return commit(emu_of(b), err);
}

int gs_emu_set_driver(struct gs_backend *b, struct gs_err *err, const char *driver)
{
  struct emu *e = emu_of(b);
  struct gs__emu_machine m = {.n = 0};
  int rc;
  if ((rc = gs_geom_driver_parse(err, driver, &m.driver)) != 0 ||
      (rc = begin_control(b, err)) != 0)
    return rc;
  for (unsigned i = 0; i < e->st.ngpu; i++)
    m.sku[m.n++] = e->st.gpu[i].sku;
  if ((rc = need_root(e, err, 0)) != 0 || (rc = gs__emu_machine_check(err, &m)) != 0)
    return abort_with(e, rc);
  e->st.driver = m.driver;
  for (unsigned i = 0; i < e->st.ngpu; i++)
    e->st.gpu[i].model = gs_geom_model_at(m.sku[i]->model, m.driver.code);
  reboot_machine(&e->st);
  return commit(e, err);
}

int gs_emu_set_swapped_ids(struct gs_backend *b, struct gs_err *err, unsigned gpu, bool swapped)
{
  struct emu *e = emu_of(b);
  struct gs__emu_gpu *g = NULL;
  int rc = begin_gpu_control(b, err, gpu, &g);
  if (rc)
    return rc;
  /* Existing GIs carry ids of the old orientation. */
  if (g->ngi && g->swapped_ids != swapped)
    return abort_with(e, gs_err_set(err, GS_E_IN_USE,
                                    "GPU %u has GPU instances numbered the other way; destroy them "
                                    "first (`gpuslice gi destroy -i %u`)",
                                    gpu, gpu));
  g->swapped_ids = swapped;
  return commit(e, err);
}

int gs_emu_gpu_reset(struct gs_backend *b, struct gs_err *err, unsigned gpu)
{
  struct emu *e = emu_of(b);
  struct gs__emu_gpu *g = NULL;
  char pids[160];
  int rc = begin_control(b, err);
  if (rc)
    return rc;
  if ((rc = get_gpu(e, err, gpu, &g)) != 0 || (rc = need_root(e, err, gpu)) != 0)
    return abort_with(e, rc);
  if (g->reset_blocked)
    return abort_with(e, gs_err_set(err, GS_E_NOT_SUPPORTED,
                                    "GPU %u cannot be reset here (emulated VM passthrough); "
                                    "reboot instead: `gpuslice emu reboot`",
                                    gpu));
  if (procs_on(&e->st, gpu, -1, -1, pids, sizeof(pids)))
    return abort_with(e, gs_err_set(err, GS_E_IN_USE,
                                    "GPU %u cannot be reset while processes use it: %s", gpu, pids));
  g->ngi = 0;
  g->mig_current = g->mig_pending;
  return commit(e, err);
}

static int check_proc_target(struct emu *e, struct gs_err *err, const struct gs_proc_info *p)
{
  struct gs__emu_gpu *g = NULL;
  struct gs__emu_gi *gi = NULL;
  int rc;
  if ((rc = get_gpu(e, err, p->gpu, &g)) != 0)
    return rc;
  if (p->gi < 0)
    return p->ci < 0 ? 0 : gs_err_set(err, GS_E_INVALID_ARGUMENT, "a compute instance needs --gi");
  if ((rc = need_mig(err, p->gpu, g)) != 0 || (rc = get_gi(err, p->gpu, g, (unsigned)p->gi, &gi)) != 0)
    return rc;
  for (unsigned i = 0; i < gi->nci; i++)
    if ((int)gi->ci[i].id == p->ci)
      return 0;
  return gs_err_set(err, GS_E_NOT_FOUND,
                    "GPU instance %d on GPU %u has no compute instance %d; processes run on a "
                    "compute instance (--ci)",
                    p->gi, p->gpu, p->ci);
}

int gs_emu_proc_add(struct gs_backend *b, struct gs_err *err, const struct gs_proc_info *p)
{
  struct emu *e = emu_of(b);
  int rc = begin_control(b, err);
  if (rc)
    return rc;
  if ((rc = check_proc_target(e, err, p)) != 0)
    return abort_with(e, rc);
  for (unsigned i = 0; i < e->st.nproc; i++)
    if (e->st.proc[i].pid == p->pid)
      return abort_with(e, gs_err_set(err, GS_E_INVALID_ARGUMENT,
                                      "emulated process %u already exists", p->pid));
  if (e->st.nproc >= GS_BACKEND_MAX_PROCS)
    return abort_with(e, gs_err_set(err, GS_E_INSUFFICIENT_RESOURCES,
                                    "the emulator holds at most %u processes",
                                    GS_BACKEND_MAX_PROCS));
  e->st.proc[e->st.nproc++] = *p;
  return commit(e, err);
}

int gs_emu_proc_remove(struct gs_backend *b, struct gs_err *err, unsigned pid)
{
  struct emu *e = emu_of(b);
  int rc = begin_control(b, err);
  if (rc)
    return rc;
  for (unsigned i = 0; i < e->st.nproc; i++)
    if (e->st.proc[i].pid == pid) {
      e->st.proc[i] = e->st.proc[--e->st.nproc];
      return commit(e, err);
    }
  return abort_with(e, gs_err_set(err, GS_E_NOT_FOUND, "no emulated process %u", pid));
}

int gs_emu_set_reset_blocked(struct gs_backend *b, struct gs_err *err, unsigned gpu, bool blocked)
{
  struct gs__emu_gpu *g = NULL;
  int rc = begin_gpu_control(b, err, gpu, &g);
  if (rc)
    return rc;
  g->reset_blocked = blocked;
  return commit(emu_of(b), err);
}

int gs_emu_set_enforce_root(struct gs_backend *b, struct gs_err *err, bool on)
{
  struct emu *e = emu_of(b);
  int rc = begin_control(b, err);
  if (rc)
    return rc;
  /* Once on, only root may turn it off, or the check would restrict no one. */
  if ((rc = need_root(e, err, 0)) != 0)
    return abort_with(e, rc);
  e->st.enforce_root = on;
  return commit(e, err);
}

int gs_emu_seed(struct gs_backend *b, struct gs_err *err, char out[GS_EMU_SEED_SIZE])
{
  struct emu *e = emu_of(b);
  int rc;
  if (b->ops != &emu_ops)
    return gs_err_set(err, GS_E_NOT_SUPPORTED, "this is a real machine, not an emulated one");
  if ((rc = begin(e, err, false)) != 0)
    return rc;
  memcpy(out, e->st.seed, GS_EMU_SEED_SIZE);
  end(e);
  return 0;
}
