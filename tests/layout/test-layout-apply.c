/* test-layout-apply.c: applies on emulated GPUs, through the layout API:
 * apply -> assert -> export -> apply round trips on every maximal layout of
 * every model, kept instances keeping their IDs and UUIDs across a change,
 * busy instances refused without force, and the journal gone after success. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "layout/layout.h"
#include "../support/gs-test-tmp.h"

struct fixture {
  char dir[GS_TEST_DIR];
  char state[GS_TEST_PATH], lock[GS_TEST_PATH];
  struct gs_backend *b;
  struct gs_err err;
  unsigned changes;
};

static void count_plan(void *arg, unsigned gpu, const struct gs_layout_plan *p)
{
  (void)gpu;
  ((struct fixture *)arg)->changes += p->nops;
}

static int setup(void **state)
{
  struct fixture *f = calloc(1, sizeof(*f));
  /* /dev/shm when there is one: thousands of fsync'd state writes. */
  if (!f)
    return -1;
  if (access("/dev/shm", W_OK) == 0) {
    snprintf(f->dir, sizeof(f->dir), "/dev/shm/gs-apply-XXXXXX");
    if (!mkdtemp(f->dir))
      return -1;
  } else if (gs_test_mkdtemp("layout-apply", f->dir) != 0)
    return -1;
  gs_test_join(f->state, f->dir, "emu.json");
  gs_test_join(f->lock, f->dir, "apply");
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

static void machine(struct fixture *f, const char *spec)
{
  struct gs_backend_config cfg = {.kind = "emu", .emulate = spec, .state_path = f->state};
  gs_backend_close(f->b);
  f->b = NULL;
  if (gs_emu_reset_state(&f->err, f->state, spec) != 0 || gs_backend_open(&f->err, &cfg, &f->b) != 0)
    fail_msg("machine %s: %s", spec, f->err.msg);
}

/* Applies (or, with dry_run, asserts) config `name` of `text`; returns the code. */
static int apply_text(struct fixture *f, const char *text, const char *name, bool dry_run, bool force)
{
  struct gs_gpu_info gpus[GS_BACKEND_MAX_GPUS];
  struct gs_layout_file *file = NULL;
  const struct gs_layout_config *cfg;
  struct gs_layout_selection sel = {0};
  struct gs_layout_apply_opts o = {.config_name = name, .lock_path = f->lock, .dry_run = dry_run,
                                   .force = force, .on_plan = count_plan, .arg = f};
  unsigned n = 0;
  int rc;
  f->changes = 0;
  if ((rc = gs_layout_parse(&f->err, "t.yaml", text, strlen(text), &file)) != 0)
    fail_msg("parse: %s\n%s", f->err.msg, text);
  assert_int_equal(gs_layout_find(&f->err, file, name, &cfg), 0);
  assert_int_equal(f->b->ops->gpu_count(f->b, &f->err, &n), 0);
  for (unsigned g = 0; g < n; g++)
    assert_int_equal(f->b->ops->gpu_info(f->b, &f->err, g, &gpus[g]), 0);
  if ((rc = gs_layout_resolve(&f->err, file, cfg, gpus, n, &sel)) == 0)
    rc = gs_layout_apply(&f->err, f->b, &sel, &o);
  gs_layout_selection_free(&sel);
  gs_layout_file_free(file);
  return rc;
}

/* Our config for one layout: every GI at its placement. */
static void config_of(const struct gs_geom_layout *l, char *buf, size_t size)
{
  size_t used = (size_t)snprintf(buf, size, "version: gpuslice/v1\nconfigs:\n  x:\n    - devices: all\n"
                                            "      mig-enabled: true\n      gpu-instances:%s\n",
                                 l->n ? "" : " []");
  for (unsigned i = 0; i < l->n && used < size; i++)
    used += (size_t)snprintf(buf + used, size - used, "        - {profile: \"%s\", placement: %d}\n",
                             l->slot[i].profile->name, l->slot[i].start);
}

static char *export_as(struct fixture *f, enum gs_layout_format format)
{
  char *yaml = NULL;
  if (gs_layout_export(&f->err, f->b, format, "x", &yaml) != 0)
    fail_msg("export: %s", f->err.msg);
  return yaml;
}

static char *export_text(struct fixture *f)
{
  return export_as(f, GS_LAYOUT_GPUSLICE);
}

static int count_layout(const struct gs_geom_layout *l, void *arg)
{
  (void)l;
  ++*(unsigned *)arg;
  return 0;
}

struct round_trip {
  struct fixture *f;
  unsigned done;
};

/* apply -> assert (no change) -> export -> reset -> apply export -> same
 * export; and mig-parted's export (counts only) asserts as matching. */
/* counts: also check mig-parted's export, which says the same only when
 * every GI holds its default CI. */
static void round_trip_text(struct fixture *f, const char *text, bool counts)
{
  char *first, *second;
  if (apply_text(f, text, "x", false, false) != 0)
    fail_msg("apply: %s\n%s", f->err.msg, text);
  assert_int_equal(apply_text(f, text, "x", true, false), 0);
  assert_int_equal(f->changes, 0);
  if (counts) {
    first = export_as(f, GS_LAYOUT_MIG_PARTED);
    if (apply_text(f, first, "x", true, false) != 0 || f->changes != 0)
      fail_msg("mig-parted export does not assert: %s\n%s", f->err.msg, first);
    free(first);
  }
  first = export_text(f);
  assert_int_equal(apply_text(f, "version: v1\nmig-configs:\n  off:\n    - devices: all\n      mig-enabled: false\n",
                              "off", false, false),
                   0);
  if (apply_text(f, first, "x", false, false) != 0)
    fail_msg("apply of the export: %s\n%s", f->err.msg, first);
  second = export_text(f);
  assert_string_equal(first, second);
  free(first);
  free(second);
}

static int round_trip_one(const struct gs_geom_layout *l, void *arg)
{
  struct round_trip *r = arg;
  char text[4096];
  config_of(l, text, sizeof(text));
  round_trip_text(r->f, text, true);
  r->done++;
  return 0;
}

/* Compute instances inside GIs, placed and not, some leaving compute slices
 * free, survive the round trip exactly too. */
static void compute_instances_round_trip(void **state)
{
  struct fixture *f = *state;
  static const char a100[] =
      "version: gpuslice/v1\nconfigs:\n  x:\n    - devices: all\n      mig-enabled: true\n      gpu-instances:\n"
      "        - {profile: 3g.20gb, placement: 4, compute-instances: [1c.3g.20gb, {profile: 2c.3g.20gb, placement: 0}]}\n"
      "        - {profile: 2g.10gb, compute-instances: [{profile: 1c.2g.10gb, placement: 1}]}\n"
      "        - {profile: 1g.5gb, count: 2}\n";
  static const char h100[] =
      "version: gpuslice/v1\nconfigs:\n  x:\n    - devices: all\n      mig-enabled: true\n      gpu-instances:\n"
      "        - {profile: 7g.80gb, compute-instances: [4c.7g.80gb, 1c.7g.80gb, 1c.7g.80gb]}\n";
  machine(f, "a100-40gb:2");
  round_trip_text(f, a100, false);
  machine(f, "h100-80gb");
  round_trip_text(f, h100, false);
  /* mig-parted's format cannot say a GI of mixed CI profiles: export refuses. */
  assert_int_equal(gs_layout_export(&f->err, f->b, GS_LAYOUT_MIG_PARTED, "x", &(char *){NULL}), GS_E_NOT_SUPPORTED);
  assert_non_null(strstr(f->err.msg, "(7g.80gb) holds compute instances of several profiles (4c.7g.80gb, 1c.7g.80gb)"));
}

/* Every layout the geometry enumerates (partial ones and every shape, e.g.
 * the double-memory 1g: 723 on a 7-slice GPU), on every model. */
static void every_layout_round_trips(void **state)
{
  struct fixture *f = *state;
  unsigned n, total = 0;
  const struct gs_geom_model *const *all = gs_geom_models(&n);
  for (unsigned i = 0; i < n; i++) {
    struct round_trip r = {f, 0};
    unsigned want = 0;
    machine(f, all[i]->key);
    gs_geom_enumerate(all[i], GS_GEOM_ENUM_ALL_SHAPES, count_layout, &want);
    gs_geom_enumerate(all[i], GS_GEOM_ENUM_ALL_SHAPES, round_trip_one, &r);
    assert_int_equal(r.done, want);
    total += r.done;
  }
  printf("[ round trip ] %u layouts of %u models\n", total, n);
}

static void mig_devices_of(struct fixture *f, struct gs_mig_device *d, unsigned *n)
{
  assert_int_equal(f->b->ops->mig_devices(f->b, &f->err, 0, d, n), 0);
}

/* From 4g+2g+1g to 4g+1g+1g+1g: the 4g and the 1g stay, with their UUIDs. */
static void kept_instances_keep_ids_and_uuids(void **state)
{
  struct fixture *f = *state;
  struct gs_mig_device before[GS_BACKEND_MAX_MIG_DEVICES], after[GS_BACKEND_MAX_MIG_DEVICES];
  unsigned nb = 0, na = 0, kept = 0;
  machine(f, "a100-40gb");
  assert_int_equal(apply_text(f, "version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: true\n"
                                 "      mig-devices: {\"4g.20gb\": 1, \"2g.10gb\": 1, \"1g.5gb\": 1}\n",
                              "a", false, false),
                   0);
  mig_devices_of(f, before, &nb);
  assert_int_equal(apply_text(f, "version: v1\nmig-configs:\n  b:\n    - devices: all\n      mig-enabled: true\n"
                                 "      mig-devices: {\"4g.20gb\": 1, \"1g.5gb\": 3}\n",
                              "b", false, false),
                   0);
  mig_devices_of(f, after, &na);
  assert_int_equal(na, 4);
  for (unsigned i = 0; i < nb; i++)
    for (unsigned j = 0; j < na; j++)
      if (strcmp(before[i].uuid, after[j].uuid) == 0) {
        assert_int_equal(before[i].gi, after[j].gi);
        kept++;
      }
  assert_int_equal(kept, 2);
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
      cmocka_unit_test_setup_teardown(every_layout_round_trips, setup, teardown),
      cmocka_unit_test_setup_teardown(compute_instances_round_trip, setup, teardown),
      cmocka_unit_test_setup_teardown(kept_instances_keep_ids_and_uuids, setup, teardown),
      cmocka_unit_test_setup_teardown(busy_instance_needs_force, setup, teardown),
      cmocka_unit_test_setup_teardown(journal_is_gone_after_success, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
