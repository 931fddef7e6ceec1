/* SPDX-License-Identifier: Apache-2.0 */
/* test-layout-apply.c: applies on emulated GPUs, through the layout API:
 * every pair of A100-40GB layouts (maximal, and a sample of all valid ones)
 * watched at the backend for the fewest creates and destroys with kept
 * instances keeping their IDs and UUIDs, busy instances refused without
 * force, and the journal gone after success. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "apply-fixture.h"
#include "plan-sim.h"

static void mig_devices_of(struct fixture *f, struct gs_mig_device *d, unsigned *n)
{
  assert_int_equal(f->b->ops->mig_devices(f->b, &f->err, 0, d, n), 0);
}

/* ---- all pairs through the real apply, watched at the backend ---- */

/* Every create and destroy the apply asks of the backend: the witness that
 * kept instances were never touched (the emulator derives a MIG UUID from its
 * slot, so an instance made again at the same place would show the same one). */
static struct spy {
  const struct gs_backend_ops *real;
  struct gs_backend_ops ops;
  unsigned creates, destroys;
  bool gi_destroyed[GS_GEOM_MAX_GRID * 2 + 1];
} spy;

static int spy_gi_create(struct gs_backend *b, struct gs_err *err, unsigned gpu, const struct gs_geom_gi_profile *p,
                         int start, struct gs_gi_info *out)
{
  spy.creates++;
  return spy.real->gi_create(b, err, gpu, p, start, out);
}

static int spy_gi_destroy(struct gs_backend *b, struct gs_err *err, unsigned gpu, unsigned gi)
{
  spy.destroys++;
  if (gi < GS_NITEMS(spy.gi_destroyed))
    spy.gi_destroyed[gi] = true;
  return spy.real->gi_destroy(b, err, gpu, gi);
}

static int spy_ci_create(struct gs_backend *b, struct gs_err *err, unsigned gpu, unsigned gi, unsigned ci_profile_id,
                         int start, struct gs_ci_info *out)
{
  spy.creates++;
  return spy.real->ci_create(b, err, gpu, gi, ci_profile_id, start, out);
}

static int spy_ci_destroy(struct gs_backend *b, struct gs_err *err, unsigned gpu, unsigned gi, unsigned ci)
{
  spy.destroys++;
  return spy.real->ci_destroy(b, err, gpu, gi, ci);
}

static void spy_on(struct fixture *f)
{
  spy.real = f->b->ops;
  spy.ops = *f->b->ops;
  spy.ops.gi_create = spy_gi_create;
  spy.ops.gi_destroy = spy_gi_destroy;
  spy.ops.ci_create = spy_ci_create;
  spy.ops.ci_destroy = spy_ci_destroy;
  f->b->ops = &spy.ops;
}

static void spy_reset(void)
{
  spy.creates = spy.destroys = 0;
  memset(spy.gi_destroyed, 0, sizeof(spy.gi_destroyed));
}

/* mig-parted's config for a layout: profile counts only. */
static void counts_of(const struct gs_geom_layout *l, char *buf, size_t size)
{
  size_t used = (size_t)snprintf(buf, size, "version: v1\nmig-configs:\n  x:\n    - devices: all\n"
                                            "      mig-enabled: true\n      mig-devices: {");
  for (unsigned i = 0; i < l->n && used < size; i++) {
    unsigned count = 0, j;
    for (j = 0; j < i && l->slot[j].profile != l->slot[i].profile; j++)
      ;
    if (j < i)
      continue;
    for (j = i; j < l->n; j++)
      count += l->slot[j].profile == l->slot[i].profile;
    used += (size_t)snprintf(buf + used, size - used, "%s\"%s\": %u", i ? ", " : "", l->slot[i].profile->name, count);
  }
  if (used < size)
    snprintf(buf + used, size - used, "}\n");
}

struct pair_tally {
  unsigned long pairs, ops, kept;
};

/* from (placed) -> to (counts only): the backend sees exactly the fewest
 * creates and destroys, and every GI it never destroyed is still there with
 * its id, placement and MIG device UUID. */
static void apply_pair(struct fixture *f, const struct gs_geom_model *m, const struct gs_geom_layout *from,
                       const struct gs_geom_layout *to, struct pair_tally *t)
{
  struct gs_mig_device before[GS_BACKEND_MAX_MIG_DEVICES], after[GS_BACKEND_MAX_MIG_DEVICES];
  unsigned nb = 0, na = 0, keep = brute_keep(m, from, to), untouched = 0;
  char text[4096], a[256], b[256];
  config_of(from, text, sizeof(text));
  assert_int_equal(apply_text(f, text, "x", false, false), 0);
  mig_devices_of(f, before, &nb);
  assert_int_equal(nb, from->n);
  counts_of(to, text, sizeof(text));
  spy_reset();
  if (apply_text(f, text, "x", false, false) != 0)
    fail_msg("%s -> %s: %s", layout_str(from, a, sizeof(a)), layout_str(to, b, sizeof(b)), f->err.msg);
  mig_devices_of(f, after, &na);
  if (spy.creates + spy.destroys != 2 * (from->n - keep) + 2 * (to->n - keep))
    fail_msg("%s -> %s: %u creates and %u destroys; the fewest is %u keeping %u", layout_str(from, a, sizeof(a)),
             layout_str(to, b, sizeof(b)), spy.creates, spy.destroys, 2 * (from->n - keep) + 2 * (to->n - keep), keep);
  for (unsigned i = 0; i < nb; i++) {
    unsigned j;
    if (spy.gi_destroyed[before[i].gi])
      continue;
    for (j = 0; j < na && !(after[j].gi == before[i].gi && after[j].ci == before[i].ci); j++)
      ;
    assert_true(j < na);
    assert_string_equal(after[j].uuid, before[i].uuid);
    assert_ptr_equal(after[j].gi_profile, before[i].gi_profile);
    untouched++;
  }
  assert_int_equal(untouched, keep);
  assert_int_equal(apply_text(f, text, "x", true, false), 0); /* assert: it is the target */
  assert_int_equal(f->changes, 0);
  t->pairs++;
  t->ops += spy.creates + spy.destroys;
  t->kept += keep;
}

static int collect_layout(const struct gs_geom_layout *l, void *arg)
{
  struct gs_geom_layout **next = arg;
  *(*next)++ = *l;
  return 0;
}

/* Every pair of the 19 maximal A100-40GB layouts, and a fixed sample of a
 * fortieth of the 298 x 298 valid ones (test-layout-plan-pairs runs them all
 * in its simulator), each through apply on the emulated GPU. */
static void a100_pairs_keep_ids_and_uuids(void **state)
{
  struct fixture *f = *state;
  const struct gs_geom_model *m = gs_geom_model_find("a100-40gb");
  static struct gs_geom_layout ls[1024];
  struct gs_geom_layout *end = ls;
  struct pair_tally max = {0}, valid = {0};
  unsigned nmax, n;
  machine(f, "a100-40gb");
  spy_on(f);
  gs_geom_enumerate(m, GS_GEOM_ENUM_MAXIMAL, collect_layout, &end);
  nmax = (unsigned)(end - ls);
  assert_int_equal(nmax, 19);
  for (unsigned i = 0; i < nmax; i++)
    for (unsigned j = 0; j < nmax; j++)
      apply_pair(f, m, &ls[i], &ls[j], &max);
  end = ls;
  gs_geom_enumerate(m, 0, collect_layout, &end);
  n = (unsigned)(end - ls);
  assert_int_equal(n, 298);
  for (unsigned i = 0; i < n; i++)
    for (unsigned j = 0; j < n; j++)
      if ((i * 31u + j * 17u) % 40u == 0)
        apply_pair(f, m, &ls[i], &ls[j], &valid);
  printf("[ apply ] a100-40gb: %lu maximal pairs, %lu operations; %lu sampled valid pairs, %lu operations\n",
         max.pairs, max.ops, valid.pairs, valid.ops);
  assert_int_equal(max.pairs, 361);
}

static void busy_instance_needs_force(void **state)
{
  struct fixture *f = *state;
  struct gs_proc_info p = {.pid = 4242, .name = "train.py", .gpu = 0, .gi = 2, .ci = 0, .used_mib = 100};
  static const char two_3g[] = "version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: true\n"
                               "      mig-devices: {\"3g.20gb\": 2}\n";
  static const char seven_1g[] = "version: v1\nmig-configs:\n  b:\n    - devices: all\n      mig-enabled: true\n"
                                 "      mig-devices: {\"1g.5gb\": 7}\n";
  machine(f, "a100-40gb");
  assert_int_equal(apply_text(f, two_3g, "a", false, false), 0);
  assert_int_equal(gs_emu_proc_add(f->b, &f->err, &p), 0);
  assert_int_equal(apply_text(f, seven_1g, "b", false, false), GS_E_IN_USE);
  assert_non_null(strstr(f->err.msg, "GPU instance"));
  assert_non_null(strstr(f->err.msg, "4242 (train.py, GPU instance 2)"));
  assert_int_equal(apply_text(f, two_3g, "a", true, false), 0); /* nothing changed */
  assert_int_equal(f->changes, 0);
}

static void journal_is_gone_after_success(void **state)
{
  struct fixture *f = *state;
  char journal[GS_TEST_PATH + 16];
  machine(f, "h100-80gb:2");
  assert_int_equal(apply_text(f, "version: v1\nmig-configs:\n  a:\n    - devices: [1]\n      mig-enabled: true\n"
                                 "      mig-devices: {\"2g.20gb\": 3}\n",
                              "a", false, false),
                   0);
  snprintf(journal, sizeof(journal), "%s.journal", f->lock);
  assert_int_equal(access(journal, F_OK), -1);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(a100_pairs_keep_ids_and_uuids, setup, teardown),
      cmocka_unit_test_setup_teardown(busy_instance_needs_force, setup, teardown),
      cmocka_unit_test_setup_teardown(journal_is_gone_after_success, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
