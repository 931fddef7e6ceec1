/* SPDX-License-Identifier: Apache-2.0 */
/* geometry.c: the rules of MIG geometry over the per-model tables of
 * models.c: finding models and profiles by what users type, legal and
 * automatic placements, GPU-instance IDs, compute-instance profiles, and the
 * validation and enumeration of layouts. Pure logic: no I/O, no allocation. */
#include "geometry/internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- lookups ---- */

static bool is_all_digits(const char *s)
{
  if (!*s)
    return false;
  for (; *s; s++)
    if (!isdigit((unsigned char)*s))
      return false;
  return true;
}

/* True when `what` equals one entry of a comma-separated list, ignoring case. */
bool gs__geom_list_has(const char *list, const char *what)
{
  size_t n = strlen(what);
  while (list && *list) {
    const char *end = strchr(list, ',');
    size_t len = end ? (size_t)(end - list) : strlen(list);
    if (len == n && strncasecmp(list, what, n) == 0)
      return true;
    list = end ? end + 1 : NULL;
  }
  return false;
}

/* "0x20B010DE" (mig-parted's device-filter form) or the bare "0x20B0". */
bool gs__geom_matches_pci(unsigned pci_id, const char *what)
{
  char *end;
  unsigned long v;
  if (strncasecmp(what, "0x", 2) != 0)
    return false;
  v = strtoul(what + 2, &end, 16);
  if (*end || end == what + 2)
    return false;
  return v == pci_id || (v <= 0xffff && v == pci_id >> 16);
}

/* A model by its key or one of its aliases; boards are skus.c's. */
const struct gs_geom_model *gs__geom_model_named(const char *what)
{
  unsigned n, i;
  const struct gs_geom_model *const *all = gs_geom_models(&n);
  /* NVML names of sister SKUs ("NVIDIA A800-SXM4-80GB") match their alias. */
  const char *bare = strncasecmp(what, "NVIDIA ", 7) == 0 ? what + 7 : what;
  for (i = 0; i < n; i++)
    if (strcasecmp(all[i]->key, what) == 0 || gs__geom_list_has(all[i]->aliases, bare))
      return all[i];
  return NULL;
}

const struct gs_geom_model *gs_geom_model_find(const char *what)
{
  const struct gs_geom_sku *sku = what ? gs_geom_sku_find(what) : NULL;
  return sku ? sku->model : NULL;
}

/* True when one of list's comma-separated names is what followed by '-'. */
static bool list_extends(const char *list, const char *what)
{
  size_t n = strlen(what);
  while (list && *list) {
    if (strncasecmp(list, what, n) == 0 && list[n] == '-')
      return true;
    list = strchr(list, ',');
    list = list ? list + 1 : NULL;
  }
  return false;
}

const char *gs_geom_model_hint(const char *what, char *buf, size_t size)
{
  unsigned n, nb, found = 0;
  const struct gs_geom_model *const *all = gs_geom_models(&n);
  const struct gs_geom_sku *const *boards = gs_geom_skus(&nb);
  size_t used = 0;
  buf[0] = 0;
  for (unsigned i = 0; what && *what && i < n; i++) {
    bool hit = list_extends(all[i]->key, what) || list_extends(all[i]->aliases, what);
    for (unsigned b = 0; b < nb && !hit; b++)
      hit = boards[b]->model == all[i] && list_extends(boards[b]->key, what);
    if (hit && used < size)
      used += (size_t)snprintf(buf + used, size - used, "%s%s", found++ ? ", " : "", all[i]->key);
  }
  if (found == 1) {
    char one[64];
    snprintf(one, sizeof(one), "%s", buf);
    snprintf(buf, size, "did you mean %s?", one);
  } else if (found > 1) {
    char list[512];
    snprintf(list, sizeof(list), "%s", buf);
    snprintf(buf, size, "short for several GPU models: %s; name one", list);
  } else {
    snprintf(buf, size, "`gpuslice models` lists them");
  }
  return buf;
}

const struct gs_geom_model *gs_geom_model_at(const struct gs_geom_model *m, unsigned driver)
{
  while (m->before && driver < m->since)
    m = m->before;
  return m;
}

/* nvidia-smi accepts "MIG 1g.5gb" as well as "1g.5gb". */
static const char *skip_mig_prefix(const char *what)
{
  if (strncasecmp(what, "MIG ", 4) == 0)
    what += 4;
  while (*what == ' ')
    what++;
  return what;
}

const struct gs_geom_gi_profile *gs_geom_gi_profile_by_id(const struct gs_geom_model *m, unsigned id)
{
  for (unsigned i = 0; i < m->ngi; i++)
    if (m->gi[i].id == id)
      return &m->gi[i];
  return NULL;
}

const struct gs_geom_gi_profile *gs_geom_gi_profile_find(const struct gs_geom_model *m, const char *what)
{
  if (!what)
    return NULL;
  what = skip_mig_prefix(what);
  if (is_all_digits(what))
    return strlen(what) > 3 ? NULL : gs_geom_gi_profile_by_id(m, (unsigned)atoi(what));
  for (unsigned i = 0; i < m->ngi; i++)
    if (strcasecmp(m->gi[i].name, what) == 0)
      return &m->gi[i];
  return NULL;
}

/* ---- placements and ids ---- */

unsigned gs_geom_gi_starts(const struct gs_geom_gi_profile *p, unsigned starts[GS_GEOM_MAX_GRID])
{
  unsigned n = 0;
  for (unsigned s = 0; s < GS_GEOM_MAX_GRID; s++)
    if (p->starts & (1u << s))
      starts[n++] = s;
  return n;
}

/* Observed on A100 and H100 (reference §8.1): with no placement given the
 * driver fills the right half first, taking its last slot before the others
 * (1g: 6,4,5, then 0,1,2,3; 2g: 4 then 0,2; 3g: 4 then 0). The 4-slot GPUs
 * fill from the left instead: an A30 put 1g.6gb at 0 then 1, then 2g.12gb at
 * 2 (T-A30, driver 535.183.01); an RTX PRO 6000 put four 1g.24gb at 0, 3, 6,
 * 9, and a 2g.48gb first at 0 (a published blog's transcripts). */
unsigned gs_geom_gi_auto_order(const struct gs_geom_model *m, const struct gs_geom_gi_profile *p,
                               unsigned starts[GS_GEOM_MAX_GRID])
{
  unsigned all[GS_GEOM_MAX_GRID], n = gs_geom_gi_starts(p, all), out = 0, half = m->grid / 2;
  unsigned first_right = n, i;
  if (m->auto_from_left)
    return gs_geom_gi_starts(p, starts);
  for (i = 0; i < n; i++)
    if (all[i] >= half) {
      first_right = i;
      break;
    }
  if (first_right < n) {
    starts[out++] = all[n - 1];
    for (i = first_right; i + 1 < n; i++)
      starts[out++] = all[i];
  }
  for (i = 0; i < first_right; i++)
    starts[out++] = all[i];
  return out;
}

static unsigned log2u(unsigned v)
{
  unsigned l = 0;
  while (v > 1) {
    v >>= 1;
    l++;
  }
  return l;
}

unsigned gs_geom_gi_id(const struct gs_geom_model *m, unsigned start, unsigned span)
{
  return gs_geom_gi_id_as(m, m->swapped_ids, start, span);
}

unsigned gs_geom_gi_id_as(const struct gs_geom_model *m, bool swapped, unsigned start,
                          unsigned span)
{
  unsigned leaves = m->grid / m->leaf_span;
  unsigned size = span / m->leaf_span, leaf = start / m->leaf_span;
  unsigned level, k;
  if (size == 0)
    size = 1;
  level = log2u(leaves / size);
  k = leaf / size;
  if (swapped && level >= 1)
    k ^= 1u << (level - 1);
  return (1u << level) - 1 + k;
}

/* ---- compute-instance profiles ---- */

/* NVML_COMPUTE_INSTANCE_PROFILE_* value for a compute-slice count. */
static int ci_enum_of(unsigned c)
{
  static const int by_slices[9] = {-1, 0, 1, 2, 3, -1, 6, 4, 5};
  return c < GS_NITEMS(by_slices) ? by_slices[c] : -1;
}

/* SMs of a c-slice CI: those of the model's plain c-slice GI profile, the
 * same hardware (reference §5.2: three 1c CIs in a 3g show 14 SMs each). */
static unsigned plain_sms(const struct gs_geom_model *m, unsigned c, unsigned otherwise)
{
  for (unsigned i = 0; i < m->ngi; i++)
    if (m->gi[i].compute_slices == c && m->gi[i].media == GS_GEOM_MEDIA_SHARED && !m->gi[i].gfx)
      return m->gi[i].sms;
  return otherwise;
}

static unsigned ci_sms(const struct gs_geom_model *m, const struct gs_geom_gi_profile *gi, unsigned c)
{
  return c == gi->compute_slices ? gi->sms : plain_sms(m, c, gi->sms * c / gi->compute_slices);
}

static unsigned round_up_pow2(unsigned v)
{
  unsigned p = 1;
  while (p < v)
    p <<= 1;
  return p;
}

static void fill_ci_profile(const struct gs_geom_model *m, const struct gs_geom_gi_profile *gi,
                            unsigned c, struct gs_geom_ci_profile *out)
{
  unsigned g = gi->compute_slices, align = round_up_pow2(c);
  memset(out, 0, sizeof(*out));
  out->id = (unsigned)ci_enum_of(c);
  out->compute_slices = c;
  /* A 3g GI's full CI reports placement 0:4 on real GPUs (reference §5.3):
   * a CI's placement spans its slices rounded up to a power of two. */
  out->span = align;
  out->sms = ci_sms(m, gi, c);
  out->max_count = g / c;
  out->is_default = c == g;
  for (unsigned s = 0; s + c <= g; s += align)
    out->starts |= 1u << s;
  if (c == g)
    snprintf(out->name, sizeof(out->name), "%s", gi->name);
  else
    snprintf(out->name, sizeof(out->name), "%uc.%s", c, gi->name);
}

/* The double-memory 1g GI of Hopper and later has more SMs than the plain
 * 1g. Its default CI is NVML's 1_SLICE_REV1 (ID 7) with all of them: a GH200
 * 96GB's `-cgi 15 -C` reported "MIG 1g.24gb (ID 7)". The plain 1_SLICE (ID 0)
 * is offered beside it on the same slice (go-nvlib PR #85; the k8s DRA
 * driver's issue #1480 found the two "conflict"); named (assumed) 1c.<GI>,
 * with the plain 1g's SMs. */
static unsigned rev1_ci_profiles(const struct gs_geom_model *m, const struct gs_geom_gi_profile *gi,
                                 struct gs_geom_ci_profile out[2])
{
  fill_ci_profile(m, gi, 1, &out[1]);
  out[1].id = GS__GEOM_CI_1_SLICE_REV1;
  out[0] = out[1];
  out[0].id = (unsigned)ci_enum_of(1);
  out[0].is_default = false;
  out[0].sms = plain_sms(m, 1, gi->sms);
  snprintf(out[0].name, sizeof(out[0].name), "1c.%s", gi->name);
  return 2;
}

unsigned gs_geom_ci_profiles(const struct gs_geom_model *m, const struct gs_geom_gi_profile *gi,
                             struct gs_geom_ci_profile out[GS_GEOM_MAX_CI_PROFILES])
{
  /* go-nvlib's rule, which matches every table seen (reference §5.2): a c-slice
   * CI fits a g-slice GI when c == g, or c < g and 2c <= g + 1. */
  static const unsigned by_id[] = {1, 2, 3, 4, 7, 8, 6};
  unsigned n = 0, g = gi->compute_slices;
  if (m->rev1_ci && gi->nvml_enum == GS__GEOM_PROF_1_SLICE_REV2)
    return rev1_ci_profiles(m, gi, out);
  for (unsigned i = 0; i < GS_NITEMS(by_id) && n < GS_GEOM_MAX_CI_PROFILES; i++) {
    unsigned c = by_id[i];
    if (c == g || (c < g && 2 * c <= g + 1))
      fill_ci_profile(m, gi, c, &out[n++]);
  }
  return n;
}

int gs_geom_ci_profile_find(const struct gs_geom_model *m, const struct gs_geom_gi_profile *gi,
                            const char *what, struct gs_geom_ci_profile *out)
{
  struct gs_geom_ci_profile all[GS_GEOM_MAX_CI_PROFILES];
  unsigned n = gs_geom_ci_profiles(m, gi, all);
  if (!what)
    return GS_E_INVALID_ARGUMENT;
  what = skip_mig_prefix(what);
  for (unsigned i = 0; i < n; i++) {
    bool by_id = is_all_digits(what) && strlen(what) < 4 && (unsigned)atoi(what) == all[i].id;
    if (by_id || strcasecmp(all[i].name, what) == 0) {
      *out = all[i];
      return 0;
    }
  }
  return GS_E_NOT_FOUND;
}

/* ---- layouts ---- */

static bool overlaps(unsigned a, unsigned alen, unsigned b, unsigned blen)
{
  return a < b + blen && b < a + alen;
}

/* Writes "0, 4" (the legal starts of p) into buf. */
static void format_starts(const unsigned *starts, unsigned n, char *buf, size_t size)
{
  size_t used = 0;
  buf[0] = 0;
  for (unsigned i = 0; i < n && used < size; i++)
    used += (size_t)snprintf(buf + used, size - used, "%s%u", i ? ", " : "", starts[i]);
}

/* The starts of p that are free now in l (every check of check_add passes). */
static unsigned free_starts(const struct gs_geom_model *m, const struct gs_geom_layout *l,
                            const struct gs_geom_gi_profile *p, unsigned out[GS_GEOM_MAX_GRID])
{
  unsigned all[GS_GEOM_MAX_GRID], n = gs_geom_gi_starts(p, all), k = 0;
  for (unsigned i = 0; i < n; i++)
    if (gs_geom_check_add(NULL, m, l, p, all[i]) == 0)
      out[k++] = all[i];
  return k;
}

/* Names the instance in the way and, when there are any, the free starts;
 * only built when a message is wanted (free_starts calls back with NULL). */
static int overlap_error(struct gs_err *err, const struct gs_geom_model *m,
                         const struct gs_geom_layout *l, const struct gs_geom_gi_profile *p,
                         unsigned start, const struct gs_geom_slot *s)
{
  unsigned starts[GS_GEOM_MAX_GRID] = {0}, n;
  char list[64];
  if (!err)
    return GS_E_INSUFFICIENT_RESOURCES;
  n = free_starts(m, l, p, starts);
  format_starts(starts, n, list, sizeof(list));
  return gs_err_set(err, GS_E_INSUFFICIENT_RESOURCES, "%s at %u:%u overlaps %s at %d:%u; %s%s",
                    p->name, start, p->span, s->profile->name, s->start, s->profile->span,
                    n ? "free placements now: " : "no placement is free for it", list);
}

/* " at 4" for a placed slot, "" for one whose start is still to be chosen. */
static const char *slot_where(const struct gs_geom_slot *s, char buf[16])
{
  if (s->start < 0)
    return "";
  snprintf(buf, 16, " at %d", s->start);
  return buf;
}

/* p against the first n slots of l, or only their placed ones (a slot still
 * being placed, p's own among them, is not yet on the GPU). */
static int check_media(struct gs_err *err, const struct gs_geom_layout *l, unsigned n,
                       bool placed_only, const struct gs_geom_gi_profile *p)
{
  char at[16];
  for (unsigned i = 0; i < n; i++) {
    const struct gs_geom_gi_profile *q = l->slot[i].profile;
    if (placed_only && l->slot[i].start < 0)
      continue;
    if (p->media == GS_GEOM_MEDIA_ME && q->media == GS_GEOM_MEDIA_ME)
      return gs_err_set(err, GS_E_INSUFFICIENT_RESOURCES,
                        "%s needs the GPU's one extra media-engine set, which %s%s holds "
                        "(only one +me instance per GPU)",
                        p->name, q->name, slot_where(&l->slot[i], at));
    if (q->media == GS_GEOM_MEDIA_ALL && p->media != GS_GEOM_MEDIA_NONE)
      return gs_err_set(err, GS_E_INSUFFICIENT_RESOURCES,
                        "%s%s holds every media engine; only -me profiles can be added beside it",
                        q->name, slot_where(&l->slot[i], at));
    if (p->media == GS_GEOM_MEDIA_ALL && q->media != GS_GEOM_MEDIA_NONE)
      return gs_err_set(err, GS_E_INSUFFICIENT_RESOURCES,
                        "%s takes every media engine, but %s%s already uses some "
                        "(only -me profiles can stay beside a +me.all instance)",
                        p->name, q->name, slot_where(&l->slot[i], at));
  }
  return 0;
}

/* Drivers before R510 refused a 4g beside a 3g (UG Concepts: "prior to
 * NVIDIA driver release R510, the combination of a (4 memory, 4 compute) and
 * a (4 memory, 3 compute) profile was not supported"). p against the first n
 * slots of l, or only their placed ones, as check_media. */
static int check_4g_3g(struct gs_err *err, const struct gs_geom_model *m,
                       const struct gs_geom_layout *l, unsigned n, bool placed_only,
                       const struct gs_geom_gi_profile *p)
{
  char at[16];
  if (!m->no_4g_3g || p->span * 2 != m->grid || (p->compute_slices != 3 && p->compute_slices != 4))
    return 0;
  for (unsigned i = 0; i < n; i++) {
    const struct gs_geom_gi_profile *q = l->slot[i].profile;
    if ((placed_only && l->slot[i].start < 0) || q->span != p->span ||
        q->compute_slices + p->compute_slices != 7)
      continue;
    return gs_err_set(err, GS_E_INSUFFICIENT_RESOURCES,
                      "%s cannot sit beside %s%s: drivers before R510 allow no 4g and 3g "
                      "instances together (emulate a later driver, e.g. @510)",
                      p->name, q->name, slot_where(&l->slot[i], at));
  }
  return 0;
}

int gs_geom_check_add(struct gs_err *err, const struct gs_geom_model *m,
                      const struct gs_geom_layout *l, const struct gs_geom_gi_profile *p,
                      unsigned start)
{
  unsigned starts[GS_GEOM_MAX_GRID], n, same = 0, compute = 0, placed = 0;
  char list[64];
  if (start >= GS_GEOM_MAX_GRID || !(p->starts & (1u << start))) {
    n = gs_geom_gi_starts(p, starts);
    format_starts(starts, n, list, sizeof(list));
    return gs_err_set(err, GS_E_INVALID_ARGUMENT,
                      "%s cannot start at memory slice %u: valid placements are %s", p->name,
                      start, list);
  }
  /* Limits no placement can lift come first, so the message names them. */
  for (unsigned i = 0; i < l->n; i++) {
    if (l->slot[i].start < 0)
      continue;
    placed++;
    same += l->slot[i].profile == p;
    compute += l->slot[i].profile->compute_slices;
  }
  if (placed >= GS_GEOM_MAX_INSTANCES)
    return gs_err_set(err, GS_E_INSUFFICIENT_RESOURCES, "the GPU already has %u GPU instances",
                      placed);
  if (same >= p->max_count)
    return gs_err_set(err, GS_E_INSUFFICIENT_RESOURCES,
                      "a GPU holds at most %u %s instance%s and has %u", p->max_count, p->name,
                      p->max_count == 1 ? "" : "s", same);
  if (compute + p->compute_slices > m->compute_slices)
    return gs_err_set(err, GS_E_INSUFFICIENT_RESOURCES,
                      "%s needs %u compute slice%s but only %u of %u are free", p->name,
                      p->compute_slices, p->compute_slices == 1 ? "" : "s",
                      m->compute_slices - compute, m->compute_slices);
  if (check_media(err, l, l->n, true, p) != 0 || check_4g_3g(err, m, l, l->n, true, p) != 0)
    return GS_E_INSUFFICIENT_RESOURCES;
  for (unsigned i = 0; i < l->n; i++) {
    const struct gs_geom_slot *s = &l->slot[i];
    if (s->start >= 0 && overlaps(start, p->span, (unsigned)s->start, s->profile->span))
      return overlap_error(err, m, l, p, start, s);
  }
  return 0;
}

unsigned gs_geom_remaining(const struct gs_geom_model *m, const struct gs_geom_layout *l,
                           const struct gs_geom_gi_profile *p)
{
  /* Equal-size aligned blocks: taking free starts greedily in ascending order
   * packs as many as any other choice would. */
  struct gs_geom_layout t = *l;
  unsigned starts[GS_GEOM_MAX_GRID], n = gs_geom_gi_starts(p, starts), count = 0;
  for (unsigned i = 0; i < n; i++) {
    if (gs_geom_check_add(NULL, m, &t, p, starts[i]) != 0)
      continue;
    t.slot[t.n].profile = p;
    t.slot[t.n].start = (int)starts[i];
    t.n++;
    count++;
  }
  return count;
}

/* Places the unplaced slots of *l (indices in order[k..n)) by backtracking. */
static bool place_rest(const struct gs_geom_model *m, struct gs_geom_layout *l,
                       const unsigned *order, unsigned k, unsigned n)
{
  struct gs_geom_slot *s;
  unsigned starts[GS_GEOM_MAX_GRID], ns, saved_n;
  if (k == n)
    return true;
  s = &l->slot[order[k]];
  ns = gs_geom_gi_auto_order(m, s->profile, starts);
  saved_n = l->n;
  for (unsigned i = 0; i < ns; i++) {
    if (gs_geom_check_add(NULL, m, l, s->profile, starts[i]) != 0)
      continue;
    s->start = (int)starts[i];
    if (place_rest(m, l, order, k + 1, n))
      return true;
    s->start = -1;
  }
  l->n = saved_n;
  return false;
}

/* "3g.20gb + 1g.5gb x4" */
static void describe(const struct gs_geom_layout *l, char *buf, size_t size)
{
  size_t used = 0;
  buf[0] = 0;
  for (unsigned i = 0; i < l->n && used < size; i++) {
    unsigned count = 0, j;
    for (j = 0; j < i && l->slot[j].profile != l->slot[i].profile; j++)
      ;
    if (j < i)
      continue;
    for (j = i; j < l->n; j++)
      count += l->slot[j].profile == l->slot[i].profile;
    used += (size_t)snprintf(buf + used, size - used, "%s%s", used ? " + " : "",
                             l->slot[i].profile->name);
    if (count > 1 && used < size)
      used += (size_t)snprintf(buf + used, size - used, " x%u", count);
  }
}

/* Limits no placement can lift, named before placements are searched:
 * instance counts, media engines, compute slices, memory slices. */
static int check_totals(struct gs_err *err, const struct gs_geom_model *m,
                        const struct gs_geom_layout *l)
{
  unsigned compute = 0, span = 0;
  char what[200];
  for (unsigned i = 0; i < l->n; i++) {
    const struct gs_geom_gi_profile *p = l->slot[i].profile;
    unsigned same = 0;
    for (unsigned j = 0; j < l->n; j++)
      same += l->slot[j].profile == p;
    if (same > p->max_count)
      return gs_err_set(err, GS_E_INSUFFICIENT_RESOURCES,
                        "the layout has %u %s instances but one %s holds at most %u (see "
                        "`gpuslice layouts %s`)",
                        same, p->name, m->key, p->max_count, m->key);
    if (check_media(err, l, i, false, p) != 0 || check_4g_3g(err, m, l, i, false, p) != 0)
      return GS_E_INSUFFICIENT_RESOURCES;
    compute += p->compute_slices;
    span += p->span;
  }
  if (compute > m->compute_slices || span > m->grid)
    describe(l, what, sizeof(what));
  if (compute > m->compute_slices)
    return gs_err_set(err, GS_E_INSUFFICIENT_RESOURCES,
                      "%s needs %u compute slices but one %s has %u (see `gpuslice layouts %s`)",
                      what, compute, m->key, m->compute_slices, m->key);
  if (span > m->grid)
    return gs_err_set(err, GS_E_INSUFFICIENT_RESOURCES,
                      "%s needs %u memory slices but one %s has %u (see `gpuslice layouts %s`)",
                      what, span, m->key, m->grid, m->key);
  return 0;
}

int gs_geom_validate(struct gs_err *err, const struct gs_geom_model *m,
                     const struct gs_geom_layout *l, struct gs_geom_layout *out)
{
  struct gs_geom_layout t = {0};
  unsigned order[GS_GEOM_MAX_INSTANCES], nfree = 0;
  char what[200];
  if (l->n > GS_GEOM_MAX_INSTANCES)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "a layout holds at most %u GPU instances",
                      GS_GEOM_MAX_INSTANCES);
  if (check_totals(err, m, l) != 0)
    return err ? err->code : GS_E_INSUFFICIENT_RESOURCES;
  /* Placed slots first, one by one, so the message names the first conflict. */
  for (unsigned i = 0; i < l->n; i++) {
    t.slot[i] = l->slot[i];
    t.n = i;
    if (l->slot[i].start < 0) {
      order[nfree++] = i;
      t.slot[i].start = -1;
      continue;
    }
    if (gs_geom_check_add(err, m, &t, l->slot[i].profile, (unsigned)l->slot[i].start) != 0)
      return err ? err->code : GS_E_INSUFFICIENT_RESOURCES;
  }
  t.n = l->n;
  /* Big instances first: they have the fewest choices. */
  for (unsigned i = 1; i < nfree; i++)
    for (unsigned j = i; j > 0 && t.slot[order[j]].profile->span > t.slot[order[j - 1]].profile->span; j--) {
      unsigned x = order[j];
      order[j] = order[j - 1];
      order[j - 1] = x;
    }
  if (!place_rest(m, &t, order, 0, nfree)) {
    describe(l, what, sizeof(what));
    return gs_err_set(err, GS_E_INSUFFICIENT_RESOURCES,
                      "%s does not fit on one %s in any placement (see `gpuslice layouts %s`)",
                      what, m->key, m->key);
  }
  if (out)
    *out = t;
  return 0;
}

/* ---- enumeration ---- */

struct enum_ctx {
  const struct gs_geom_model *m;
  const struct gs_geom_gi_profile *shapes[GS_GEOM_MAX_GRID * 2];
  unsigned nshapes;
  unsigned flags;
  gs_geom_layout_cb cb;
  void *arg;
  unsigned visited;
  bool stop;
};

static bool same_shape(const struct gs_geom_gi_profile *a, const struct gs_geom_gi_profile *b)
{
  return a->compute_slices == b->compute_slices && a->span == b->span && a->starts == b->starts;
}

/* The plain profiles (NVML's 1/2/3/4/7-slice enums), plus with ALL_SHAPES one
 * representative of every other distinct shape (the double-memory 1g). */
static void pick_shapes(struct enum_ctx *c)
{
  const struct gs_geom_model *m = c->m;
  for (int pass = 0; pass < 2; pass++) {
    for (unsigned i = 0; i < m->ngi; i++) {
      const struct gs_geom_gi_profile *p = &m->gi[i];
      bool plain = p->nvml_enum <= 4 && p->media == GS_GEOM_MEDIA_SHARED && !p->gfx;
      bool dup = false;
      if (pass == 0 ? !plain : !(c->flags & GS_GEOM_ENUM_ALL_SHAPES))
        continue;
      for (unsigned j = 0; j < c->nshapes; j++)
        dup = dup || same_shape(c->shapes[j], p);
      if (!dup && c->nshapes < GS_NITEMS(c->shapes))
        c->shapes[c->nshapes++] = p;
    }
  }
}

static bool is_maximal(const struct enum_ctx *c, const struct gs_geom_layout *l)
{
  for (unsigned i = 0; i < c->nshapes; i++)
    if (gs_geom_remaining(c->m, l, c->shapes[i]) > 0)
      return false;
  return true;
}

static void enumerate_from(struct enum_ctx *c, struct gs_geom_layout *l, unsigned min_start)
{
  if (!(c->flags & GS_GEOM_ENUM_MAXIMAL) || is_maximal(c, l)) {
    c->visited++;
    if (c->cb && c->cb(l, c->arg))
      c->stop = true;
  }
  for (unsigned s = min_start; s < c->m->grid && !c->stop; s++)
    for (unsigned i = 0; i < c->nshapes && !c->stop; i++) {
      const struct gs_geom_gi_profile *p = c->shapes[i];
      if (gs_geom_check_add(NULL, c->m, l, p, s) != 0)
        continue;
      l->slot[l->n].profile = p;
      l->slot[l->n].start = (int)s;
      l->n++;
      enumerate_from(c, l, s + 1);
      l->n--;
    }
}

unsigned gs_geom_enumerate(const struct gs_geom_model *m, unsigned flags, gs_geom_layout_cb cb,
                           void *arg)
{
  struct enum_ctx c = {.m = m, .flags = flags, .cb = cb, .arg = arg};
  struct gs_geom_layout l = {0};
  pick_shapes(&c);
  enumerate_from(&c, &l, 0);
  return c.visited;
}

double gs_geom_gib(unsigned mib)
{
  return mib / 1024.0;
}
