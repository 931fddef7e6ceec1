/* SPDX-License-Identifier: Apache-2.0 */
/* resolve.c: turns a parsed config into what each GPU of this machine should
 * hold: which entry applies to which GPU (indices, UUIDs, device-filter), and
 * each profile name resolved against that GPU's own model, so one file can
 * serve A100s and H100s alike. mig-parted's CI-level names ("1c.3g.20gb": 3)
 * are packed into as few GPU instances as hold them, as mig-parted does. */
#include "layout/mp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct rctx {
  struct gs_err *err;
  const struct gs_layout_file *f;
  const struct gs_layout_config *cfg;
  bool lenient;   /* as mig-parted: an index this machine lacks names no GPU */
};

/* "<file>:<line>: config NAME entry N: <what>" */
static int rbad(const struct rctx *r, unsigned line, unsigned entry, const char *fmt, ...)
    GS_PRINTF(4, 5);
static int rbad(const struct rctx *r, unsigned line, unsigned entry, const char *fmt, ...)
{
  char what[GS_ERR_MSG_SIZE];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof(what), fmt, ap);
  va_end(ap);
  return gs_err_set(r->err, GS_E_INVALID_ARGUMENT, "%s:%u: config %s, entry %u: %s", r->f->origin,
                    line, r->cfg->name, entry, what);
}

/* ---- which GPUs an entry names ---- */

/* A device-filter item as nvidia-mig-parted reads it: "0x20B010DE" (device
 * << 16 | vendor), optionally ":0x134F10DE" naming the subsystem too. Ours
 * also takes a bare device id ("0x20B0"). False when s is no such number. */
static bool parse_pci_filter(const char *s, unsigned long *id, unsigned long *sub, bool *has_sub)
{
  char *end;
  if (*s < '0' || *s > '9')
    return false;
  *id = strtoul(s, &end, 0);
  *has_sub = *end == ':';
  *sub = 0;
  if (*has_sub) {
    const char *rest = end + 1;
    if (*rest < '0' || *rest > '9')
      return false;
    *sub = strtoul(rest, &end, 0);
  }
  return *end == 0 && *id <= 0xffffffffUL && *sub <= 0xffffffffUL;
}

/* Whether filter f names GPU g: by the GPU's own PCI ids (as mig-parted, so
 * every board id of a model works, e.g. 0x20F110DE for an A100 PCIe), or by
 * our model key. The backend's model may be its own copy: compare keys. */
static bool filter_names(const char *f, const struct gs_gpu_info *g)
{
  unsigned long id, sub;
  bool has_sub;
  unsigned dev = g->pci_device_id ? g->pci_device_id : g->model->pci_id;
  const struct gs_geom_model *m;
  if (parse_pci_filter(f, &id, &sub, &has_sub))
    return (id <= 0xffff ? id == dev >> 16 : id == dev) && (!has_sub || sub == g->pci_subsystem_id);
  m = gs_geom_model_find(f);
  return m && strcmp(m->key, g->model->key) == 0;
}

static bool filter_matches(const struct gs_layout_entry *e, const struct gs_gpu_info *g)
{
  if (e->nfilter == 0)
    return true;
  for (unsigned i = 0; i < e->nfilter; i++)
    if (filter_names(e->filter[i], g))
      return true;
  return false;
}

static bool entry_names(const struct gs_layout_entry *e, const struct gs_gpu_info *g)
{
  if (e->all_devices)
    return true;
  for (unsigned i = 0; i < e->ndev; i++)
    if (e->dev[i] == g->index)
      return true;
  for (unsigned i = 0; i < e->nuuid; i++)
    if (strcasecmp(e->uuid[i], g->uuid) == 0)
      return true;
  return false;
}

/* Every index and UUID an entry lists must exist: a typo must not silently
 * leave a GPU unconfigured. */
static int check_devices(const struct rctx *r, unsigned k, const struct gs_gpu_info *gpus, unsigned ngpu)
{
  const struct gs_layout_entry *e = &r->cfg->entry[k];
  for (unsigned i = 0; i < e->nfilter; i++) {
    unsigned long id, sub;
    bool has_sub;
    char hint[512];
    if (!parse_pci_filter(e->filter[i], &id, &sub, &has_sub) && !gs_geom_model_find(e->filter[i]))
      return rbad(r, e->line, k, "device-filter '%s' is neither a PCI device id (0x20B010DE, "
                                 "optionally :0xSUBSYSTEM) nor a GPU model (%s)",
                  e->filter[i], gs_geom_model_hint(e->filter[i], hint, sizeof(hint)));
  }
  for (unsigned i = 0; i < e->ndev && !r->lenient; i++)
    if (e->dev[i] >= ngpu)
      return rbad(r, e->line, k, "devices: GPU %u does not exist; this machine has GPUs 0..%u "
                                 "(`gpuslice list`)",
                  e->dev[i], ngpu - 1);
  for (unsigned i = 0; i < e->nuuid; i++) {
    unsigned g;
    for (g = 0; g < ngpu && strcasecmp(e->uuid[i], gpus[g].uuid) != 0; g++)
      ;
    if (g == ngpu)
      return rbad(r, e->line, k, "devices: no GPU has UUID %s (`gpuslice list` shows them)", e->uuid[i]);
  }
  return 0;
}

/* ---- what a GPU gets ---- */

static void list_profiles(const struct gs_geom_model *m, char *buf, size_t size)
{
  size_t used = 0;
  buf[0] = 0;
  for (unsigned i = 0; i < m->ngi && used < size; i++)
    used += (size_t)snprintf(buf + used, size - used, "%s%s", i ? ", " : "", m->gi[i].name);
}

static int add_gi(const struct rctx *r, const struct gs_layout_spec *s, unsigned k,
                  struct gs_layout_target *t, const struct gs_geom_gi_profile *p, int start)
{
  if (t->ngi == GS_GEOM_MAX_INSTANCES)
    return rbad(r, s->line, k, "more than %u GPU instances on one GPU; no MIG GPU holds that many",
                GS_GEOM_MAX_INSTANCES - 1);
  memset(&t->gi[t->ngi], 0, sizeof(t->gi[t->ngi]));
  t->gi[t->ngi].profile = p;
  t->gi[t->ngi].start = start;
  t->ngi++;
  return 0;
}

/* Whether one more CI of cp fits in gi beside the CIs it has, as
 * mig-parted finds out by trying: compute slices and cp's count limit. A GI
 * with no CI list holds the default CI, which fills it. */
static bool ci_room(const struct gs_geom_model *m, const struct gs_layout_gi *gi,
                    const struct gs_geom_ci_profile *cp)
{
  struct gs_geom_ci_profile all[GS_GEOM_MAX_CI_PROFILES];
  unsigned n = gs_geom_ci_profiles(m, gi->profile, all), used = 0, same = 0;
  if (gi->nci == 0 || gi->nci == GS_GEOM_MAX_INSTANCES)
    return false;
  for (unsigned i = 0; i < gi->nci; i++) {
    same += gi->ci[i].profile_id == cp->id;
    for (unsigned j = 0; j < n; j++)
      used += all[j].id == gi->ci[i].profile_id ? all[j].compute_slices : 0;
  }
  return same < cp->max_count && used + cp->compute_slices <= gi->profile->compute_slices;
}

/* A CI profile named on its own ("1c.3g.20gb": 3): each CI goes into the GI
 * made last when it is of the same profile and has room (mig-parted reuses
 * its last GI so), else into a new one. */
static int add_ci_spec(const struct rctx *r, const struct gs_layout_spec *s, unsigned k,
                       const struct gs_gpu_info *g, struct gs_layout_target *t)
{
  const struct gs_geom_model *m = g->model;
  const char *dot = strchr(s->profile, '.');
  const struct gs_geom_gi_profile *p = dot ? gs_geom_gi_profile_find(m, dot + 1) : NULL;
  struct gs_geom_ci_profile cp;
  char list[256];
  int rc;
  if (!p || gs_geom_ci_profile_find(m, p, s->profile, &cp) != 0) {
    list_profiles(m, list, sizeof(list));
    return rbad(r, s->line, k, "GPU %u (%s) has no profile '%s'; its GPU instance profiles are %s",
                g->index, m->key, s->profile, list);
  }
  for (unsigned n = 0; n < s->count; n++) {
    struct gs_layout_gi *gi = t->ngi ? &t->gi[t->ngi - 1] : NULL;
    if (!gi || gi->profile != p || gi->start != s->start || !ci_room(m, gi, &cp)) {
      if ((rc = add_gi(r, s, k, t, p, s->start)) != 0)
        return rc;
      gi = &t->gi[t->ngi - 1];
    }
    gi->ci[gi->nci++] = (struct gs_layout_ci){.profile_id = cp.id, .start = -1};
  }
  return 0;
}

static int add_cis(const struct rctx *r, const struct gs_layout_spec *s, unsigned k,
                   const struct gs_gpu_info *g, struct gs_layout_gi *gi)
{
  for (unsigned i = 0; i < s->nci; i++) {
    struct gs_geom_ci_profile cp;
    if (gs_geom_ci_profile_find(g->model, gi->profile, s->ci[i], &cp) != 0)
      return rbad(r, s->line, k, "GPU %u (%s): %s has no compute-instance profile '%s' "
                                 "(`gpuslice ci profiles` lists them)",
                  g->index, g->model->key, gi->profile->name, s->ci[i]);
    gi->ci[i] = (struct gs_layout_ci){.profile_id = cp.id, .start = s->ci_start[i]};
  }
  gi->nci = s->nci;
  return 0;
}

static int add_spec(const struct rctx *r, const struct gs_layout_spec *s, unsigned k,
                    const struct gs_gpu_info *g, struct gs_layout_target *t)
{
  const struct gs_geom_gi_profile *p = gs_geom_gi_profile_find(g->model, s->profile);
  int rc;
  if (!p)
    return add_ci_spec(r, s, k, g, t);
  for (unsigned n = 0; n < s->count; n++) {
    if ((rc = add_gi(r, s, k, t, p, s->start)) != 0 ||
        (rc = add_cis(r, s, k, g, &t->gi[t->ngi - 1])) != 0)
      return rc;
  }
  return 0;
}

/* The target must fit the model before anything is touched: planned onto an
 * empty GPU, whose refusal names the limit to change ("a GPU holds at most 7
 * 1g.5gb instances"). */
static int check_fits(const struct rctx *r, unsigned k, const struct gs_gpu_info *g,
                      const struct gs_layout_target *t)
{
  struct gs_layout_current empty = {.mig_current = true, .mig_pending = true};
  struct gs_layout_plan *plan = malloc(sizeof(*plan));
  struct gs_err why = {0};
  int rc;
  if (!plan)
    return gs_err_set(r->err, GS_E_NO_MEMORY, "out of memory checking config %s", r->cfg->name);
  rc = gs_layout_plan_gpu(&why, g->model, &empty, t, false, plan);
  free(plan);
  if (rc == 0)
    return 0;
  if (rc == GS_E_NO_MEMORY)
    return gs_err_set(r->err, rc, "%s", why.msg);
  return rbad(r, r->cfg->entry[k].line, k, "GPU %u (%s): %s", g->index, g->model->key, why.msg);
}

/* nvidia-mig-parted's creation order (types.MigConfig.Flatten): more
 * compute slices of the GI first ("3g" before "1g"), then more of the CI
 * ("3g.20gb" before "1c.3g.20gb"), then attributes in descending text order
 * ("+me" before none). A line whose profile the model lacks sorts last; it
 * is refused when built. */
struct spec_key {
  unsigned g, c;
  char attrs[GS_GEOM_NAME_SIZE];
};

static void spec_key_of(const struct gs_geom_model *m, const struct gs_layout_spec *s, struct spec_key *k)
{
  const struct gs_geom_gi_profile *p = gs_geom_gi_profile_find(m, s->profile);
  const char *dot = strchr(s->profile, '.'), *plus;
  struct gs_geom_ci_profile cp;
  memset(k, 0, sizeof(*k));
  if (p)
    k->g = k->c = p->compute_slices;
  else if (dot && (p = gs_geom_gi_profile_find(m, dot + 1)) && gs_geom_ci_profile_find(m, p, s->profile, &cp) == 0) {
    k->g = p->compute_slices;
    k->c = cp.compute_slices;
  }
  /* go-nvlib's attributes: the "+a.b" suffix as "a,b"; a "-me" is not one. */
  if (p && (plus = strchr(p->name, '+')))
    for (size_t i = 0; plus[i + 1] && i + 1 < sizeof(k->attrs); i++)
      k->attrs[i] = plus[i + 1] == '.' ? ',' : plus[i + 1];
}

static bool key_before(const struct spec_key *a, const struct spec_key *b)
{
  if (a->g != b->g)
    return a->g > b->g;
  if (a->c != b->c)
    return a->c > b->c;
  return strcmp(a->attrs, b->attrs) > 0;
}

/* The entry's lines in mig-parted's order (stable: file order breaks ties,
 * where mig-parted's unstable sort over a map has no fixed order). */
static void spec_order(const struct gs_geom_model *m, const struct gs_layout_entry *e, unsigned order[])
{
  struct spec_key keys[GS_LAYOUT_MAX_SPECS];
  for (unsigned i = 0; i < e->nspec; i++) {
    unsigned j = i;
    spec_key_of(m, &e->spec[i], &keys[i]);
    for (; j > 0 && key_before(&keys[i], &keys[order[j - 1]]); j--)
      order[j] = order[j - 1];
    order[j] = i;
  }
}

static int build_target(const struct rctx *r, unsigned k, const struct gs_gpu_info *g,
                        struct gs_layout_target *t)
{
  const struct gs_layout_entry *e = &r->cfg->entry[k];
  unsigned order[GS_LAYOUT_MAX_SPECS];
  int rc;
  memset(t, 0, sizeof(*t));
  t->mig_enabled = e->mig_enabled;
  if (e->mig_enabled && g->model->ngi == 0)
    return rbad(r, e->line, k, "GPU %u (%s) cannot do MIG; name the MIG GPUs in 'devices' or "
                               "'device-filter'", g->index, g->model->key);
  spec_order(g->model, e, order);
  for (unsigned i = 0; i < e->nspec; i++)
    if ((rc = add_spec(r, &e->spec[order[i]], k, g, t)) != 0)
      return rc;
  return check_fits(r, k, g, t);
}

static int resolve(struct rctx r, const struct gs_gpu_info *gpus, unsigned ngpu, struct gs_layout_selection *sel);

int gs_layout_resolve(struct gs_err *err, const struct gs_layout_file *f,
                      const struct gs_layout_config *cfg, const struct gs_gpu_info *gpus,
                      unsigned ngpu, struct gs_layout_selection *sel)
{
  return resolve((struct rctx){err, f, cfg, false}, gpus, ngpu, sel);
}

int gs__layout_resolve_mig_parted(struct gs_err *err, const struct gs_layout_file *f,
                                  const struct gs_layout_config *cfg, const struct gs_gpu_info *gpus,
                                  unsigned ngpu, struct gs_layout_selection *sel)
{
  return resolve((struct rctx){err, f, cfg, true}, gpus, ngpu, sel);
}

static int resolve(struct rctx r, const struct gs_gpu_info *gpus, unsigned ngpu, struct gs_layout_selection *sel)
{
  struct gs_err *err = r.err;
  const struct gs_layout_config *cfg = r.cfg;
  int claimed[GS_BACKEND_MAX_GPUS];
  int rc;
  memset(sel, 0, sizeof(*sel));
  if (!(sel->target = calloc(ngpu ? ngpu : 1, sizeof(*sel->target))))
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory resolving config %s", cfg->name);
  sel->ngpu = ngpu;
  for (unsigned g = 0; g < ngpu; g++)
    claimed[g] = sel->entry[g] = -1;
  for (unsigned k = 0; k < cfg->nentry; k++) {
    if ((rc = check_devices(&r, k, gpus, ngpu)) != 0)
      goto fail;
    for (unsigned g = 0; g < ngpu; g++) {
      if (!entry_names(&cfg->entry[k], &gpus[g]) || !filter_matches(&cfg->entry[k], &gpus[g]))
        continue;
      if (claimed[g] >= 0) {
        rc = rbad(&r, cfg->entry[k].line, k, "GPU %u is also selected by entry %d; each GPU may "
                                             "match one entry only",
                  g, claimed[g]);
        goto fail;
      }
      claimed[g] = sel->entry[g] = (int)k;
      sel->named[g] = true;
      /* As mig-parted: `devices: all` passes over GPUs without MIG, and
       * there is nothing to do on them when MIG is to be off. */
      if (gpus[g].model->ngi == 0 && (cfg->entry[k].all_devices || !cfg->entry[k].mig_enabled))
        continue;
      sel->touched[g] = true;
      if ((rc = build_target(&r, k, &gpus[g], &sel->target[g])) != 0)
        goto fail;
    }
  }
  return 0;
fail:
  gs_layout_selection_free(sel);
  return rc;
}

void gs_layout_selection_free(struct gs_layout_selection *sel)
{
  if (!sel)
    return;
  free(sel->target);
  sel->target = NULL;
  sel->ngpu = 0;
}
