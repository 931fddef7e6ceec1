/* SPDX-License-Identifier: Apache-2.0 */
/* test-emu-walkthrough.c: NVIDIA's MIG walkthrough on an emulated
 * A100-SXM4-40GB through the public backend API (reference §8.1, §8.2, §4.1):
 * seven 1g.5gb without placements get the driver's GI IDs and slices, each
 * gets its default CI, the MIG devices have the right order, sizes and UUIDs
 * (stable across runs), and the UG's "Example 2" fails as on real GPUs. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "../lib/gs-test-tmp.h"

struct fixture {
  char dir[GS_TEST_DIR];
  char path[GS_TEST_PATH];
  struct gs_backend *b;
  const struct gs_geom_model *m;
};

static struct gs_backend *open_emu(const char *path, const char *spec)
{
  struct gs_backend_config cfg = {.kind = "emu", .emulate = spec, .state_path = path};
  struct gs_backend *b = NULL;
  struct gs_err err = {0};
  if (gs_backend_open(&err, &cfg, &b) != 0)
    fail_msg("open %s: %s", path, err.msg);
  return b;
}

static int setup(void **state)
{
  struct fixture *f = calloc(1, sizeof(*f));
  if (f == NULL || gs_test_mkdtemp("emu-walk", f->dir) != 0)
    return -1;
  gs_test_join(f->path, f->dir, "emu.json");
  f->b = open_emu(f->path, "a100-40gb");
  f->m = gs_geom_model_find("a100-40gb");
  *state = f;
  return 0;
}

static int teardown(void **state)
{
  struct fixture *f = *state;
  gs_backend_close(f->b);
  gs_test_rmtree(f->dir);
  free(f);
  return 0;
}

static const struct gs_geom_gi_profile *prof(const struct fixture *f, const char *name)
{
  const struct gs_geom_gi_profile *p = gs_geom_gi_profile_find(f->m, name);
  assert_non_null(p);
  return p;
}

static void ok(int rc, const struct gs_err *err)
{
  if (rc != 0)
    fail_msg("unexpected error %d: %s", rc, err->msg);
}

static void enable_mig(struct fixture *f)
{
  struct gs_err err = {0};
  struct gs_gpu_info info;
  int activation = -1;
  ok(f->b->ops->set_mig_mode(f->b, &err, 0, true, &activation), &err);
  assert_int_equal(activation, 0);
  ok(f->b->ops->gpu_info(f->b, &err, 0, &info), &err);
  assert_true(info.mig_current);
  assert_true(info.mig_pending);
}

static struct gs_gi_info create_gi(struct fixture *f, const char *name, int start)
{
  struct gs_err err = {0};
  struct gs_gi_info gi;
  memset(&gi, 0xff, sizeof(gi));
  ok(f->b->ops->gi_create(f->b, &err, 0, prof(f, name), start, &gi), &err);
  return gi;
}

/* nvidia-smi mig -cgi 19,19,19,19,19,19,19 then -cci on each GI. */
static void make_seven_1g(struct fixture *f)
{
  static const unsigned ids[7] = {9, 7, 8, 11, 12, 13, 14}, starts[7] = {6, 4, 5, 0, 1, 2, 3};
  struct gs_err err = {0};
  enable_mig(f);
  for (unsigned i = 0; i < 7; i++) {
    struct gs_gi_info gi = create_gi(f, "1g.5gb", -1);
    assert_int_equal(gi.id, ids[i]);
    assert_int_equal(gi.start, starts[i]);
    assert_int_equal(gi.span, 1);
    assert_int_equal(gi.gpu, 0);
    assert_ptr_equal(gi.profile, prof(f, "1g.5gb"));
  }
  for (unsigned i = 0; i < 7; i++) {
    struct gs_ci_info ci;
    ok(f->b->ops->ci_create(f->b, &err, 0, ids[i], 0, -1, &ci), &err);
    assert_int_equal(ci.gi, ids[i]);
    assert_int_equal(ci.id, 0);
    assert_int_equal(ci.start, 0);
    assert_int_equal(ci.span, 1);
    assert_true(ci.profile.is_default);
    assert_string_equal(ci.profile.name, "1g.5gb");
  }
}

static void test_seven_1g_ids_and_placements(void **state)
{
  make_seven_1g(*state);
}

static void test_gi_list_sorted_by_id(void **state)
{
  static const unsigned ids[7] = {7, 8, 9, 11, 12, 13, 14}, starts[7] = {4, 5, 6, 0, 1, 2, 3};
  struct fixture *f = *state;
  struct gs_gi_info gis[GS_GEOM_MAX_INSTANCES];
  struct gs_err err = {0};
  unsigned n = 0;
  make_seven_1g(f);
  ok(f->b->ops->gi_list(f->b, &err, 0, gis, &n), &err);
  assert_int_equal(n, 7);
  for (unsigned i = 0; i < n; i++) {
    assert_int_equal(gis[i].id, ids[i]);
    assert_int_equal(gis[i].start, starts[i]);
  }
}

static void test_default_ci_in_each(void **state)
{
  struct fixture *f = *state;
  struct gs_gi_info gis[GS_GEOM_MAX_INSTANCES];
  struct gs_err err = {0};
  unsigned n = 0;
  make_seven_1g(f);
  ok(f->b->ops->gi_list(f->b, &err, 0, gis, &n), &err);
  for (unsigned i = 0; i < n; i++) {
    struct gs_ci_info cis[GS_GEOM_MAX_INSTANCES];
    unsigned nci = 0, left = 99;
    ok(f->b->ops->ci_list(f->b, &err, 0, gis[i].id, cis, &nci), &err);
    assert_int_equal(nci, 1);
    assert_int_equal(cis[0].id, 0);
    assert_int_equal(cis[0].gi, gis[i].id);
    assert_int_equal(cis[0].start, 0);
    assert_int_equal(cis[0].span, 1);
    assert_int_equal(cis[0].profile.id, 0);
    ok(f->b->ops->ci_remaining(f->b, &err, 0, gis[i].id, 0, &left), &err);
    assert_int_equal(left, 0);
  }
}

/* "MIG-" then 8-4-4-4-12 lower hex, version 5, RFC 4122 variant (§8.2). */
static void assert_mig_uuid(const char *u)
{
  static const unsigned groups[] = {8, 4, 4, 4, 12};
  const char *p = u;
  if (strncmp(p, "MIG-", 4) != 0)
    fail_msg("%s: no MIG- prefix", u);
  p += 4;
  for (unsigned g = 0; g < GS_NITEMS(groups); g++) {
    for (unsigned i = 0; i < groups[g]; i++, p++)
      if (!isxdigit((unsigned char)*p) || isupper((unsigned char)*p))
        fail_msg("%s: not lower hex at %td", u, p - u);
    if (g + 1 < GS_NITEMS(groups) && *p++ != '-')
      fail_msg("%s: no dash after group %u", u, g);
  }
  assert_int_equal(*p, '\0');
  assert_int_equal(u[4 + 14], '5');                /* xxxx-5xxx */
  assert_non_null(strchr("89ab", u[4 + 19]));      /* yxxx */
}

static unsigned mig_devices(struct fixture *f, struct gs_mig_device out[GS_BACKEND_MAX_MIG_DEVICES])
{
  struct gs_err err = {0};
  unsigned n = 0;
  ok(f->b->ops->mig_devices(f->b, &err, 0, out, &n), &err);
  return n;
}

static void test_mig_devices(void **state)
{
  static const unsigned ids[7] = {7, 8, 9, 11, 12, 13, 14};
  struct fixture *f = *state;
  struct gs_mig_device dev[GS_BACKEND_MAX_MIG_DEVICES];
  struct gs_gpu_info info;
  struct gs_err err = {0};
  unsigned n;
  make_seven_1g(f);
  ok(f->b->ops->gpu_info(f->b, &err, 0, &info), &err);
  assert_int_equal(strncmp(info.uuid, "GPU-", 4), 0);
  n = mig_devices(f, dev);
  assert_int_equal(n, 7);
  for (unsigned i = 0; i < n; i++) {
    char legacy[GS_BACKEND_UUID_SIZE + 32];
    assert_int_equal(dev[i].index, i);
    assert_int_equal(dev[i].gpu, 0);
    assert_int_equal(dev[i].gi, ids[i]);
    assert_int_equal(dev[i].ci, 0);
    assert_int_equal(dev[i].memory_mib, 4864);
    assert_int_equal(dev[i].sms, 14);
    assert_string_equal(dev[i].name, "1g.5gb");
    assert_ptr_equal(dev[i].gi_profile, prof(f, "1g.5gb"));
    assert_mig_uuid(dev[i].uuid);
    snprintf(legacy, sizeof(legacy), "MIG-%s/%u/0", info.uuid, ids[i]);
    assert_string_equal(dev[i].legacy_uuid, legacy);
    assert_int_equal(strncmp(dev[i].legacy_uuid, "MIG-GPU-", 8), 0);
    for (unsigned j = 0; j < i; j++)
      assert_string_not_equal(dev[i].uuid, dev[j].uuid);
  }
}

/* The UUIDs are derived, not drawn: a second process (a reopened backend)
 * sees the same ones. */
static void test_mig_uuids_stable_across_runs(void **state)
{
  struct fixture *f = *state;
  struct gs_mig_device before[GS_BACKEND_MAX_MIG_DEVICES], after[GS_BACKEND_MAX_MIG_DEVICES];
  struct gs_gpu_info info1, info2;
  struct gs_err err = {0};
  unsigned n;
  make_seven_1g(f);
  n = mig_devices(f, before);
  ok(f->b->ops->gpu_info(f->b, &err, 0, &info1), &err);
  gs_backend_close(f->b);
  f->b = open_emu(f->path, NULL);
  ok(f->b->ops->gpu_info(f->b, &err, 0, &info2), &err);
  assert_string_equal(info1.uuid, info2.uuid);
  assert_int_equal(mig_devices(f, after), n);
  for (unsigned i = 0; i < n; i++) {
    assert_string_equal(before[i].uuid, after[i].uuid);
    assert_string_equal(before[i].legacy_uuid, after[i].legacy_uuid);
  }
  gs_backend_close(f->b);
  f->b = open_emu(f->path, "a100-40gb");
  assert_int_equal(mig_devices(f, after), n);
  for (unsigned i = 0; i < n; i++)
    assert_string_equal(before[i].uuid, after[i].uuid);
}

/* UG "Example 2": -cgi 19,19,14,9 fails: the 1g land on 6 and 4, the 2g on
 * 0:2, and no half is left for the 3g (reference §4.1). */
static void test_example2_fails(void **state)
{
  struct fixture *f = *state;
  struct gs_gi_info gi;
  struct gs_err err = {0};
  unsigned left = 99;
  enable_mig(f);
  assert_int_equal(create_gi(f, "19", -1).start, 6);
  assert_int_equal(create_gi(f, "19", -1).start, 4);
  assert_int_equal(create_gi(f, "14", -1).start, 0);
  assert_int_equal(f->b->ops->gi_create(f->b, &err, 0, prof(f, "9"), -1, &gi),
                   GS_E_INSUFFICIENT_RESOURCES);
  assert_int_equal(err.code, GS_E_INSUFFICIENT_RESOURCES);
  ok(f->b->ops->gi_remaining(f->b, &err, 0, prof(f, "9"), &left), &err);
  assert_int_equal(left, 0);
}

/* Creating the 3g first works: it takes 4:4 and the rest fill the left. */
static void test_example2_3g_first(void **state)
{
  struct fixture *f = *state;
  enable_mig(f);
  assert_int_equal(create_gi(f, "9", -1).start, 4);
  assert_int_equal(create_gi(f, "19", -1).start, 0);
  assert_int_equal(create_gi(f, "19", -1).start, 1);
  assert_int_equal(create_gi(f, "14", -1).start, 2);
}

/* With explicit placements the same set fits (§4.1 row 10). */
static void test_example2_explicit_placements(void **state)
{
  struct fixture *f = *state;
  struct gs_gi_info gi;
  enable_mig(f);
  gi = create_gi(f, "3g.20gb", 4);
  assert_int_equal(gi.id, 1); /* swapped tree: 4:4 is GI 1 */
  gi = create_gi(f, "1g.5gb", 0);
  assert_int_equal(gi.id, 11);
  gi = create_gi(f, "1g.5gb", 1);
  assert_int_equal(gi.id, 12);
  gi = create_gi(f, "2g.10gb", 2);
  assert_int_equal(gi.id, 6);
}

/* A 3g placed at 0 first leaves the right half, which holds 2g+1g but not
 * 2g+1g+1g: the other order of Example 2 fails too. */
static void test_example2_3g_at_0_first(void **state)
{
  struct fixture *f = *state;
  struct gs_gi_info gi;
  struct gs_err err = {0};
  enable_mig(f);
  assert_int_equal(create_gi(f, "3g.20gb", 0).id, 2);
  assert_int_equal(create_gi(f, "1g.5gb", -1).start, 6);
  assert_int_equal(create_gi(f, "1g.5gb", -1).start, 4);
  assert_int_equal(f->b->ops->gi_create(f->b, &err, 0, prof(f, "2g.10gb"), -1, &gi),
                   GS_E_INSUFFICIENT_RESOURCES);
}

#define T(name) cmocka_unit_test_setup_teardown(test_##name, setup, teardown)

int main(void)
{
  const struct CMUnitTest tests[] = {
    T(seven_1g_ids_and_placements),
    T(gi_list_sorted_by_id),
    T(default_ci_in_each),
    T(mig_devices),
    T(mig_uuids_stable_across_runs),
    T(example2_fails),
    T(example2_3g_first),
    T(example2_explicit_placements),
    T(example2_3g_at_0_first),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
