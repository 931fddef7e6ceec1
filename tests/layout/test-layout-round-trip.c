/* SPDX-License-Identifier: Apache-2.0 */
/* test-layout-round-trip.c: apply -> assert -> export -> apply round trips
 * on every layout the geometry enumerates for every model (8,005), mig-parted's
 * export asserting as matching too, and layouts with compute instances. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "apply-fixture.h"

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
  char *yaml;
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
  /* mig-parted's format counts MIG devices by profile; its creation order
   * (4c before 1c, each reusing the last GI while it has room) packs them
   * back into the one GI, so a GI of mixed CI profiles asserts as matching. */
  yaml = export_as(f, GS_LAYOUT_MIG_PARTED);
  assert_non_null(strstr(yaml, "  - devices: all\n    mig-enabled: true\n    mig-devices:\n      1c.7g.80gb: 2\n"
                               "      4c.7g.80gb: 1\n"));
  if (apply_text(f, yaml, "x", true, false) != 0 || f->changes != 0)
    fail_msg("mig-parted export does not assert: %s\n%s", f->err.msg, yaml);
  free(yaml);
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

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(every_layout_round_trips, setup, teardown),
      cmocka_unit_test_setup_teardown(compute_instances_round_trip, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
