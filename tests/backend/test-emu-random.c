/* SPDX-License-Identifier: Apache-2.0 */
/* test-emu-random.c: thousands of random MIG operations per GPU model on the
 * emulator, each checked against an oracle (geometry for GIs, an independent
 * model of CI packing written here) and a shadow copy of the machine, with
 * every invariant re-checked after every operation. The seed is printed;
 * GS_RANDOM_SEED=<n> replays a run, GS_RANDOM_OPS=<n> changes its length.
 * The state file lives under /dev/shm when there is one (tmpfs: cheap fsync). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "backend/backend.h"
#include "../lib/gs-test-tmp.h"

#define DEFAULT_OPS 3000

/* ---- xorshift64* ---- */

static uint64_t rng_state;

static uint64_t rng_next(void)
{
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 0x2545F4914F6CDD1DULL;
}

/* Uniform enough in [0, n) for test choices. */
static unsigned rnd(unsigned n)
{
  return (unsigned)((rng_next() >> 32) % n);
}

/* One seed per process, so the printed value replays every model's run. */
static uint64_t base_seed(void)
{
  static uint64_t seed;
  static bool chosen;
  const char *env = getenv("GS_RANDOM_SEED");
  if (!chosen)
    seed = env && *env ? strtoull(env, NULL, 0)
                       : ((uint64_t)time(NULL) * 2654435761u) ^ (uint64_t)getpid();
  chosen = true;
  return seed;
}

static unsigned op_count(void)
{
  const char *env = getenv("GS_RANDOM_OPS");
  return env && *env ? (unsigned)strtoul(env, NULL, 10) : DEFAULT_OPS;
}

/* ---- the shadow machine: what the emulator should hold ---- */

struct sci {
  unsigned id, profile_id, start, span, c;
};

struct sgi {
  unsigned id, start;
  const struct gs_geom_gi_profile *p;
  unsigned nci;
  struct sci ci[GS_GEOM_MAX_INSTANCES];
};

struct run {
  const struct gs_geom_model *m;
  struct gs_backend *b;
  char dir[GS_TEST_DIR], path[GS_TEST_PATH];
  uint64_t seed;
  unsigned op;              /* current operation, for messages */
  char what[160];           /* what it was */
  bool mig;
  unsigned ngi;
  struct sgi gi[GS_GEOM_MAX_INSTANCES]; /* sorted by id */
  unsigned stats[8];        /* successes per kind of operation; [7]: full GPU seen */
};

#define CHECK(r, cond, ...)                                                                    \
  do {                                                                                         \
    if (!(cond)) {                                                                             \
      print_error("%s seed %" PRIu64 " op %u (%s): ", (r)->m->key, (r)->seed, (r)->op,         \
                  (r)->what);                                                                  \
      fail_msg(__VA_ARGS__);                                                                   \
    }                                                                                          \
  } while (0)

static void layout_of(const struct run *r, struct gs_geom_layout *l)
{
  memset(l, 0, sizeof(*l));
  for (unsigned i = 0; i < r->ngi; i++) {
    l->slot[i].profile = r->gi[i].p;
    l->slot[i].start = (int)r->gi[i].start;
  }
  l->n = r->ngi;
}

static struct sgi *shadow_gi(struct run *r, unsigned id)
{
  for (unsigned i = 0; i < r->ngi; i++)
    if (r->gi[i].id == id)
      return &r->gi[i];
  return NULL;
}

static void shadow_add_gi(struct run *r, unsigned id, const struct gs_geom_gi_profile *p,
                          unsigned start)
{
  unsigned i = r->ngi++;
  for (; i > 0 && r->gi[i - 1].id > id; i--)
    r->gi[i] = r->gi[i - 1];
  memset(&r->gi[i], 0, sizeof(r->gi[i]));
  r->gi[i].id = id;
  r->gi[i].p = p;
  r->gi[i].start = start;
}

static void shadow_del_gi(struct run *r, unsigned id)
{
  struct sgi *g = shadow_gi(r, id);
  memmove(g, g + 1, (size_t)(r->gi + r->ngi - (g + 1)) * sizeof(*g));
  r->ngi--;
}

/* ---- an independent oracle for compute instances (reference §5.2/§5.3):
 * a CI occupies its placement [start, start + span) of its GI (NVML: size
 * is the "number of compute slices occupied"; a 3c reports 4); starts must
 * be legal; no two overlap; per-profile counts and the GI's compute slices
 * bound them. ---- */

static bool ci_profile(const struct run *r, const struct sgi *g, unsigned id,
                       struct gs_geom_ci_profile *out)
{
  struct gs_geom_ci_profile all[GS_GEOM_MAX_CI_PROFILES];
  unsigned n = gs_geom_ci_profiles(r->m, g->p, all);
  for (unsigned i = 0; i < n; i++)
    if (all[i].id == id) {
      *out = all[i];
      return true;
    }
  return false;
}

/* 0, GS_E_INVALID_ARGUMENT (illegal start) or GS_E_INSUFFICIENT_RESOURCES. */
static int ci_fits(const struct sgi *g, const struct gs_geom_ci_profile *cp, unsigned start)
{
  unsigned used = 0, same = 0;
  if (start >= 32 || !(cp->starts & (1u << start)))
    return GS_E_INVALID_ARGUMENT;
  for (unsigned i = 0; i < g->nci; i++) {
    const struct sci *c = &g->ci[i];
    if (start < c->start + c->span && c->start < start + cp->span)
      return GS_E_INSUFFICIENT_RESOURCES;
    used += c->c;
    same += c->profile_id == cp->id;
  }
  if (same >= cp->max_count || used + cp->compute_slices > g->p->compute_slices ||
      g->nci >= GS_GEOM_MAX_INSTANCES)
    return GS_E_INSUFFICIENT_RESOURCES;
  return 0;
}

/* The most CIs of cp that could still be added together (exhaustive). */
static unsigned ci_max_more(struct sgi *g, const struct gs_geom_ci_profile *cp, unsigned from)
{
  unsigned best = 0;
  for (unsigned s = from; s < GS_GEOM_MAX_GRID; s++) {
    unsigned k;
    if (ci_fits(g, cp, s) != 0)
      continue;
    g->ci[g->nci++] = (struct sci){.id = 99, .profile_id = cp->id, .start = s, .span = cp->span,
                                   .c = cp->compute_slices};
    k = 1 + ci_max_more(g, cp, s + 1);
    g->nci--;
    if (k > best)
      best = k;
  }
  return best;
}

/* The most GIs of p that could still be added together (exhaustive), to
 * check gs_geom_remaining's greedy count independently. */
static unsigned gi_max_more(const struct gs_geom_model *m, struct gs_geom_layout *l,
                            const struct gs_geom_gi_profile *p, unsigned from)
{
  unsigned best = 0;
  for (unsigned s = from; s < m->grid; s++) {
    unsigned k;
    if (l->n >= GS_GEOM_MAX_INSTANCES || gs_geom_check_add(NULL, m, l, p, s) != 0)
      continue;
    l->slot[l->n].profile = p;
    l->slot[l->n].start = (int)s;
    l->n++;
    k = 1 + gi_max_more(m, l, p, s + 1);
    l->n--;
    if (k > best)
      best = k;
  }
  return best;
}

static unsigned lowest_free_ci_id(const struct sgi *g)
{
  for (unsigned id = 0;; id++) {
    bool used = false;
    for (unsigned i = 0; i < g->nci; i++)
      used = used || g->ci[i].id == id;
    if (!used)
      return id;
  }
}

/* ---- invariants, checked after every operation ---- */

static void check_gis(struct run *r, struct gs_gi_info *gis, unsigned n)
{
  struct gs_geom_layout l = {0};
  struct gs_err err = {0};
  CHECK(r, n == r->ngi, "gi_list has %u GIs, the shadow %u", n, r->ngi);
  for (unsigned i = 0; i < n; i++) {
    const struct gs_gi_info *g = &gis[i];
    CHECK(r, i == 0 || gis[i - 1].id < g->id, "gi_list not sorted by id at %u", i);
    CHECK(r, g->profile >= r->m->gi && g->profile < r->m->gi + r->m->ngi, "foreign profile");
    CHECK(r, g->span == g->profile->span, "GI %u span %u, profile %u", g->id, g->span,
          g->profile->span);
    CHECK(r, g->id == gs_geom_gi_id(r->m, g->start, g->span), "GI %u at %u:%u should be %u",
          g->id, g->start, g->span, gs_geom_gi_id(r->m, g->start, g->span));
    CHECK(r, g->id == r->gi[i].id && g->profile == r->gi[i].p && g->start == r->gi[i].start,
          "GI %u %s@%u, shadow GI %u %s@%u", g->id, g->profile->name, g->start, r->gi[i].id,
          r->gi[i].p->name, r->gi[i].start);
    l.slot[i].profile = g->profile;
    l.slot[i].start = (int)g->start;
  }
  l.n = n;
  CHECK(r, gs_geom_validate(&err, r->m, &l, NULL) == 0, "listed layout invalid: %s", err.msg);
}

static void check_cis(struct run *r, struct sgi *g)
{
  struct gs_ci_info cis[GS_GEOM_MAX_INSTANCES];
  struct gs_geom_ci_profile all[GS_GEOM_MAX_CI_PROFILES];
  struct gs_err err = {0};
  unsigned n = 0, used = 0, np;
  CHECK(r, r->b->ops->ci_list(r->b, &err, 0, g->id, cis, &n) == 0, "ci_list: %s", err.msg);
  CHECK(r, n == g->nci, "GI %u lists %u CIs, shadow %u", g->id, n, g->nci);
  for (unsigned i = 0; i < n; i++) {
    const struct gs_ci_info *c = &cis[i];
    struct gs_geom_ci_profile cp;
    const struct sci *s = NULL;
    CHECK(r, i == 0 || cis[i - 1].id < c->id, "ci_list of GI %u not sorted", g->id);
    CHECK(r, c->gi == g->id && c->gpu == 0, "CI %u names GI %u", c->id, c->gi);
    CHECK(r, ci_profile(r, g, c->profile.id, &cp), "CI %u has profile %u, not of GI %s", c->id,
          c->profile.id, g->p->name);
    CHECK(r, strcmp(cp.name, c->profile.name) == 0 && c->span == cp.span,
          "CI %u: %s span %u, want %s span %u", c->id, c->profile.name, c->span, cp.name, cp.span);
    CHECK(r, (cp.starts >> c->start) & 1, "CI %u at illegal start %u", c->id, c->start);
    for (unsigned j = 0; j < i; j++)
      CHECK(r, c->start + c->span <= cis[j].start || cis[j].start + cis[j].span <= c->start,
            "CIs %u and %u of GI %u overlap", c->id, cis[j].id, g->id);
    used += cp.compute_slices;
    for (unsigned j = 0; j < g->nci; j++)
      if (g->ci[j].id == c->id)
        s = &g->ci[j];
    CHECK(r, s && s->profile_id == c->profile.id && s->start == c->start,
          "CI %u of GI %u differs from the shadow", c->id, g->id);
  }
  CHECK(r, used <= g->p->compute_slices, "GI %u: CIs use %u of %u compute slices", g->id, used,
        g->p->compute_slices);
  np = gs_geom_ci_profiles(r->m, g->p, all);
  for (unsigned k = 0; k < np; k++) {
    unsigned got = 99, want = ci_max_more(g, &all[k], 0);
    CHECK(r, r->b->ops->ci_remaining(r->b, &err, 0, g->id, all[k].id, &got) == 0,
          "ci_remaining: %s", err.msg);
    CHECK(r, got == want, "GI %u: ci_remaining(%s) = %u, want %u", g->id, all[k].name, got, want);
  }
}

static void check_remaining(struct run *r)
{
  struct gs_geom_layout l;
  struct gs_err err = {0};
  bool full = true;
  layout_of(r, &l);
  for (unsigned k = 0; k < r->m->ngi; k++) {
    const struct gs_geom_gi_profile *p = &r->m->gi[k];
    unsigned got = 99, geom = gs_geom_remaining(r->m, &l, p), most = gi_max_more(r->m, &l, p, 0);
    CHECK(r, r->b->ops->gi_remaining(r->b, &err, 0, p, &got) == 0, "gi_remaining: %s", err.msg);
    CHECK(r, got == geom, "gi_remaining(%s) = %u, gs_geom_remaining %u", p->name, got, geom);
    CHECK(r, geom == most, "gs_geom_remaining(%s) = %u, but %u fit", p->name, geom, most);
    full = full && got == 0;
  }
  r->stats[7] += full;
}

static void check_mig_devices(struct run *r)
{
  struct gs_mig_device dev[GS_BACKEND_MAX_MIG_DEVICES];
  struct gs_err err = {0};
  unsigned n = 99, k = 0;
  CHECK(r, r->b->ops->mig_devices(r->b, &err, 0, dev, &n) == 0, "mig_devices: %s", err.msg);
  for (unsigned i = 0; i < r->ngi && r->mig; i++)
    k += r->gi[i].nci;
  CHECK(r, n == k, "%u MIG devices, %u CIs", n, k);
  for (unsigned i = 0; i < n; i++) {
    CHECK(r, dev[i].index == i, "MIG device %u has index %u", i, dev[i].index);
    CHECK(r, i == 0 || dev[i - 1].gi < dev[i].gi ||
                 (dev[i - 1].gi == dev[i].gi && dev[i - 1].ci < dev[i].ci),
          "MIG devices not in (GI, CI) order at %u", i);
    for (unsigned j = 0; j < i; j++)
      CHECK(r, strcmp(dev[i].uuid, dev[j].uuid) != 0, "MIG devices %u and %u share a UUID", i, j);
  }
}

static void check_all(struct run *r)
{
  struct gs_gi_info gis[GS_GEOM_MAX_INSTANCES];
  struct gs_gpu_info info;
  struct gs_err err = {0};
  unsigned n = 99;
  int rc;
  CHECK(r, r->b->ops->gpu_info(r->b, &err, 0, &info) == 0, "gpu_info: %s", err.msg);
  CHECK(r, info.mig_current == r->mig && info.mig_pending == r->mig, "MIG mode %d/%d, want %d",
        info.mig_current, info.mig_pending, r->mig);
  rc = r->b->ops->gi_list(r->b, &err, 0, gis, &n);
  check_mig_devices(r);
  if (!r->mig) {
    CHECK(r, rc == GS_E_NOT_SUPPORTED, "gi_list with MIG off: %d", rc);
    return;
  }
  CHECK(r, rc == 0, "gi_list: %s", err.msg);
  check_gis(r, gis, n);
  for (unsigned i = 0; i < r->ngi; i++)
    check_cis(r, &r->gi[i]);
  check_remaining(r);
}

/* ---- operations ---- */

static void expect_rc(struct run *r, int rc, int want, const struct gs_err *err)
{
  CHECK(r, rc == want, "returned %s (%s), expected %s", gs_code_name(rc), rc ? err->msg : "",
        gs_code_name(want));
  CHECK(r, rc == 0 || err->code == rc, "err.code %d, returned %d", err->code, rc);
}

/* Explicit placement: succeeds iff gs_geom_check_add says so, same code. */
static void op_gi_create_at(struct run *r)
{
  const struct gs_geom_gi_profile *p = &r->m->gi[rnd(r->m->ngi)];
  unsigned legal[GS_GEOM_MAX_GRID], nlegal = gs_geom_gi_starts(p, legal);
  unsigned start = rnd(4) ? legal[rnd(nlegal)] : rnd(8) ? rnd(r->m->grid) : rnd(GS_GEOM_MAX_GRID + 4);
  struct gs_geom_layout l;
  struct gs_gi_info gi;
  struct gs_err err = {0};
  int want, rc;
  snprintf(r->what, sizeof(r->what), "gi create %s at %u", p->name, start);
  layout_of(r, &l);
  want = r->mig ? gs_geom_check_add(NULL, r->m, &l, p, start) : GS_E_NOT_SUPPORTED;
  rc = r->b->ops->gi_create(r->b, &err, 0, p, (int)start, &gi);
  expect_rc(r, rc, want, &err);
  if (rc)
    return;
  CHECK(r, gi.start == start && gi.profile == p && gi.span == p->span, "created at %u:%u",
        gi.start, gi.span);
  CHECK(r, gi.id == gs_geom_gi_id(r->m, start, p->span), "created GI id %u", gi.id);
  shadow_add_gi(r, gi.id, p, start);
  r->stats[0]++;
}

/* No placement: succeeds iff gs_geom_remaining > 0, at the first start of
 * the driver's order that fits. */
static void op_gi_create_auto(struct run *r)
{
  const struct gs_geom_gi_profile *p = &r->m->gi[rnd(r->m->ngi)];
  unsigned order[GS_GEOM_MAX_GRID], n = gs_geom_gi_auto_order(r->m, p, order), k;
  struct gs_geom_layout l;
  struct gs_gi_info gi;
  struct gs_err err = {0};
  int want, rc;
  snprintf(r->what, sizeof(r->what), "gi create %s", p->name);
  layout_of(r, &l);
  if (!r->mig)
    want = GS_E_NOT_SUPPORTED;
  else
    want = gs_geom_remaining(r->m, &l, p) > 0 ? 0 : GS_E_INSUFFICIENT_RESOURCES;
  rc = r->b->ops->gi_create(r->b, &err, 0, p, -1, &gi);
  expect_rc(r, rc, want, &err);
  if (rc)
    return;
  for (k = 0; k < n && gs_geom_check_add(NULL, r->m, &l, p, order[k]) != 0; k++)
    ;
  CHECK(r, k < n && gi.start == order[k], "auto placement at %u, driver order gives %u", gi.start,
        k < n ? order[k] : 99);
  CHECK(r, gi.id == gs_geom_gi_id(r->m, gi.start, p->span), "created GI id %u", gi.id);
  shadow_add_gi(r, gi.id, p, gi.start);
  r->stats[1]++;
}

static void op_gi_destroy(struct run *r)
{
  unsigned id = r->ngi && rnd(5) ? r->gi[rnd(r->ngi)].id : rnd(16);
  struct sgi *g = shadow_gi(r, id);
  struct gs_err err = {0};
  int want, rc;
  snprintf(r->what, sizeof(r->what), "gi destroy %u", id);
  want = !r->mig ? GS_E_NOT_SUPPORTED : !g ? GS_E_NOT_FOUND : g->nci ? GS_E_IN_USE : 0;
  rc = r->b->ops->gi_destroy(r->b, &err, 0, id);
  expect_rc(r, rc, want, &err);
  if (rc == 0) {
    shadow_del_gi(r, id);
    r->stats[2]++;
  }
}

/* The CI a create should make, per the oracle: its code, start and id. */
static int ci_expect(struct run *r, struct sgi *g, unsigned profile, int start, unsigned *at)
{
  struct gs_geom_ci_profile cp;
  if (!r->mig)
    return GS_E_NOT_SUPPORTED;
  if (!g)
    return GS_E_NOT_FOUND;
  if (!ci_profile(r, g, profile, &cp))
    return GS_E_NOT_SUPPORTED;
  if (start >= 0) {
    *at = (unsigned)start;
    return ci_fits(g, &cp, (unsigned)start);
  }
  for (*at = 0; *at < GS_GEOM_MAX_GRID; (*at)++)
    if (ci_fits(g, &cp, *at) == 0)
      return 0;
  return GS_E_INSUFFICIENT_RESOURCES;
}

static void op_ci_create(struct run *r)
{
  unsigned gid = r->ngi && rnd(10) ? r->gi[rnd(r->ngi)].id : rnd(16), at = 0;
  struct sgi *g = shadow_gi(r, gid);
  struct gs_geom_ci_profile all[GS_GEOM_MAX_CI_PROFILES];
  unsigned n = g ? gs_geom_ci_profiles(r->m, g->p, all) : 0;
  unsigned profile = n && rnd(5) ? all[rnd(n)].id : rnd(9);
  int start = rnd(2) ? -1 : (int)rnd(9), want, rc;
  struct gs_ci_info ci;
  struct gs_err err = {0};
  snprintf(r->what, sizeof(r->what), "ci create profile %u at %d in GI %u", profile, start, gid);
  want = ci_expect(r, g, profile, start, &at);
  rc = r->b->ops->ci_create(r->b, &err, 0, gid, profile, start, &ci);
  expect_rc(r, rc, want, &err);
  if (rc)
    return;
  CHECK(r, ci.start == at && ci.gi == gid && ci.profile.id == profile, "CI at %u, want %u",
        ci.start, at);
  CHECK(r, ci.id == lowest_free_ci_id(g), "CI id %u, lowest free %u", ci.id, lowest_free_ci_id(g));
  g->ci[g->nci++] = (struct sci){.id = ci.id, .profile_id = profile, .start = at,
                                 .span = ci.span, .c = ci.profile.compute_slices};
  r->stats[3]++;
}

static void op_ci_destroy(struct run *r)
{
  struct sgi *g = r->ngi ? &r->gi[rnd(r->ngi)] : NULL;
  unsigned gid = g ? g->id : rnd(16), id, i;
  struct gs_err err = {0};
  int want, rc;
  id = g && g->nci && rnd(5) ? g->ci[rnd(g->nci)].id : rnd(8);
  snprintf(r->what, sizeof(r->what), "ci destroy %u in GI %u", id, gid);
  for (i = 0; g && i < g->nci && g->ci[i].id != id; i++)
    ;
  want = !r->mig ? GS_E_NOT_SUPPORTED : !g || i == g->nci ? GS_E_NOT_FOUND : 0;
  rc = r->b->ops->ci_destroy(r->b, &err, 0, gid, id);
  expect_rc(r, rc, want, &err);
  if (rc == 0) {
    g->ci[i] = g->ci[--g->nci];
    r->stats[4]++;
  }
}

static void op_mig(struct run *r, bool on)
{
  struct gs_err err = {0};
  int activation = 99, rc, want = !on && r->ngi ? GS_E_IN_USE : 0;
  snprintf(r->what, sizeof(r->what), "mig %s", on ? "enable" : "disable");
  rc = r->b->ops->set_mig_mode(r->b, &err, 0, on, &activation);
  expect_rc(r, rc, want, &err);
  if (rc == 0) {
    CHECK(r, activation == 0, "activation %d", activation);
    r->mig = on;
    r->stats[on ? 5 : 6]++;
  }
}

/* Phases of 40 operations alternate between filling and draining, so the
 * run visits empty, partial and full machines rather than staying full. */
static void one_op(struct run *r)
{
  bool fill = (r->op / 40) % 2 == 0;
  unsigned x = rnd(100);
  if (!r->mig && x < 20)
    op_mig(r, true);
  else if (x < 2 || (r->ngi == 0 && x < 8)) /* an empty GPU may leave MIG mode */
    op_mig(r, false);
  else if (x < 4)
    op_mig(r, true);
  else if (x < (fill ? 30u : 10u))
    op_gi_create_at(r);
  else if (x < (fill ? 55u : 16u))
    op_gi_create_auto(r);
  else if (x < (fill ? 85u : 26u))
    op_ci_create(r);
  else if (x < (fill ? 92u : 62u))
    op_ci_destroy(r);
  else
    op_gi_destroy(r);
}

/* ---- driver ---- */

static void scratch_dir(char dir[GS_TEST_DIR])
{
  struct stat sb;
  if (stat("/dev/shm", &sb) == 0 && S_ISDIR(sb.st_mode) && access("/dev/shm", W_OK) == 0) {
    snprintf(dir, GS_TEST_DIR, "/dev/shm/gs-emu-random-XXXXXX");
    if (mkdtemp(dir))
      return;
  }
  assert_int_equal(gs_test_mkdtemp("emu-random", dir), 0);
}

static int teardown(void **state)
{
  struct run *r = *state;
  if (r) {
    gs_backend_close(r->b);
    if (r->dir[0])
      gs_test_rmtree(r->dir);
    free(r);
  }
  return 0;
}

static void run_model(void **state, const char *key, unsigned index)
{
  struct run *r = calloc(1, sizeof(*r));
  struct gs_backend_config cfg = {.kind = "emu", .emulate = key};
  struct gs_err err = {0};
  unsigned ops = op_count();
  struct timespec t0, t1;
  assert_non_null(r);
  *state = r;
  r->m = gs_geom_model_find(key);
  assert_non_null(r->m);
  r->seed = base_seed() + index;
  rng_state = r->seed * 0x9E3779B97F4A7C15ULL | 1;
  scratch_dir(r->dir);
  gs_test_join(r->path, r->dir, "emu.json");
  cfg.state_path = r->path;
  print_message("%s: seed %" PRIu64 " (GS_RANDOM_SEED=%" PRIu64 " replays this run), %u ops\n",
                key, r->seed, r->seed - index, ops);
  clock_gettime(CLOCK_MONOTONIC, &t0);
  if (gs_backend_open(&err, &cfg, &r->b) != 0)
    fail_msg("open: %s", err.msg);
  snprintf(r->what, sizeof(r->what), "initial enable");
  op_mig(r, true);
  check_all(r);
  for (r->op = 0; r->op < ops; r->op++) {
    one_op(r);
    check_all(r);
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  print_message("%s: %.1f s; ok: gi@ %u, gi-auto %u, gi-del %u, ci %u, ci-del %u, mig-on %u, "
                "mig-off %u; full GPU after %u ops\n",
                key, (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9,
                r->stats[0], r->stats[1], r->stats[2], r->stats[3], r->stats[4], r->stats[5],
                r->stats[6], r->stats[7]);
  /* Every kind of operation succeeded at least once in a full-length run. */
  for (unsigned k = 0; k < GS_NITEMS(r->stats); k++)
    assert_true(r->stats[k] > 0 || ops < DEFAULT_OPS);
}

static void test_random_a100(void **state)
{
  run_model(state, "a100-40gb", 0);
}

static void test_random_a30(void **state)
{
  run_model(state, "a30-24gb", 1);
}

static void test_random_h100(void **state)
{
  run_model(state, "h100-80gb", 2);
}

static void test_random_rtx_pro_6000(void **state)
{
  run_model(state, "rtx-pro-6000", 3);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_teardown(test_random_a100, teardown),
    cmocka_unit_test_teardown(test_random_a30, teardown),
    cmocka_unit_test_teardown(test_random_h100, teardown),
    cmocka_unit_test_teardown(test_random_rtx_pro_6000, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
