/* SPDX-License-Identifier: Apache-2.0 */
/* test-layout-config.c: config files, parsed and resolved for a machine:
 * nvidia-mig-parted's own example shape unchanged, our format with placements
 * and compute instances, and every defect reported with file, line, entry and
 * the fix (malformed YAML, unknown keys and profiles, counts that do not fit). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "layout/layout.h"

/* The shape of mig-parted's shipped example (README / config-default.yaml). */
static const char mig_parted_example[] =
    "version: v1\n"
    "mig-configs:\n"
    "  all-disabled:\n"
    "    - devices: all\n"
    "      mig-enabled: false\n"
    "\n"
    "  all-enabled:\n"
    "    - devices: all\n"
    "      mig-enabled: true\n"
    "      mig-devices: {}\n"
    "\n"
    "  all-1g.5gb:\n"
    "    - devices: all\n"
    "      mig-enabled: true\n"
    "      mig-devices:\n"
    "        \"1g.5gb\": 7\n"
    "\n"
    "  all-balanced:\n"
    "    - device-filter: [\"0x20B010DE\", \"0x20B110DE\", \"0x20F110DE\", \"0x20F610DE\"]\n"
    "      devices: all\n"
    "      mig-enabled: true\n"
    "      mig-devices:\n"
    "        \"1g.5gb\": 2\n"
    "        \"2g.10gb\": 1\n"
    "        \"3g.20gb\": 1\n"
    "    - device-filter: \"0x233010DE\"\n"
    "      devices: all\n"
    "      mig-enabled: true\n"
    "      mig-devices:\n"
    "        \"1g.10gb\": 2\n"
    "        \"2g.20gb\": 1\n"
    "        \"3g.40gb\": 1\n"
    "\n"
    "  custom-config:\n"
    "    - devices: [0, 1]\n"
    "      mig-enabled: false\n"
    "    - devices: [2]\n"
    "      mig-enabled: true\n"
    "      mig-devices:\n"
    "        \"3g.20gb\": 2\n"
    "    - devices: [3]\n"
    "      mig-enabled: true\n"
    "      mig-devices:\n"
    "        \"1c.3g.20gb\": 3\n"
    "        \"2g.10gb\": 1\n";

static const char ours[] =
    "version: gpuslice/v1\n"
    "configs:\n"
    "  mixed:\n"
    "    - devices: all\n"
    "      device-filter: a100-40gb\n"
    "      mig-enabled: true\n"
    "      gpu-instances:\n"
    "        - profile: 3g.20gb\n"
    "          placement: 4\n"
    "          compute-instances: [1c.3g.20gb, {profile: 2c.3g.20gb, placement: 0}]\n"
    "        - {profile: 1g.5gb, count: 2}\n"
    "        - profile: \"MIG 2g.10gb\"\n";

/* A machine of the given models, as the backend would describe it. */
static unsigned machine(const char *spec, struct gs_gpu_info *gpus)
{
  const struct gs_geom_model *models[GS_BACKEND_MAX_GPUS];
  int n = gs_emu_parse_spec(NULL, spec, models, GS_BACKEND_MAX_GPUS);
  assert_true(n > 0);
  for (int i = 0; i < n; i++) {
    memset(&gpus[i], 0, sizeof(gpus[i]));
    gpus[i].index = (unsigned)i;
    gpus[i].model = models[i];
    snprintf(gpus[i].uuid, sizeof(gpus[i].uuid), "GPU-%08d-0000-0000-0000-000000000000", i);
  }
  return (unsigned)n;
}

static struct gs_layout_file *parse_ok(const char *text)
{
  struct gs_layout_file *f = NULL;
  struct gs_err err = {0};
  if (gs_layout_parse(&err, "test.yaml", text, strlen(text), &f) != 0)
    fail_msg("parse failed: %s", err.msg);
  return f;
}

static int resolve(const char *text, const char *name, const char *spec, struct gs_err *err,
                   struct gs_layout_selection *sel)
{
  struct gs_gpu_info gpus[GS_BACKEND_MAX_GPUS];
  struct gs_layout_file *f = parse_ok(text);
  const struct gs_layout_config *cfg;
  unsigned n = machine(spec, gpus);
  int rc = gs_layout_find(err, f, name, &cfg);
  if (rc == 0)
    rc = gs_layout_resolve(err, f, cfg, gpus, n, sel);
  gs_layout_file_free(f);
  return rc;
}

static unsigned count_profile(const struct gs_layout_target *t, const char *name)
{
  unsigned n = 0;
  for (unsigned i = 0; i < t->ngi; i++)
    n += strcmp(t->gi[i].profile->name, name) == 0;
  return n;
}

static void mig_parted_example_parses(void **state)
{
  struct gs_layout_file *f = parse_ok(mig_parted_example);
  const struct gs_layout_config *cfg;
  (void)state;
  assert_int_equal(f->format, GS_LAYOUT_MIG_PARTED);
  assert_int_equal(f->nconfig, 5);
  assert_int_equal(gs_layout_find(NULL, f, "all-balanced", &cfg), 0);
  assert_int_equal(cfg->nentry, 2);
  assert_int_equal(cfg->entry[0].nfilter, 4);
  assert_int_equal(cfg->entry[1].nfilter, 1);
  gs_layout_file_free(f);
}

static void balanced_picks_the_entry_of_each_model(void **state)
{
  struct gs_layout_selection sel;
  struct gs_err err = {0};
  (void)state;
  assert_int_equal(resolve(mig_parted_example, "all-balanced", "a100-40gb,h100-80gb,a30-24gb", &err, &sel), 0);
  assert_true(sel.touched[0] && sel.touched[1]);
  assert_false(sel.touched[2]); /* no entry's filter names the A30: left alone */
  assert_int_equal(count_profile(&sel.target[0], "1g.5gb"), 2);
  assert_int_equal(count_profile(&sel.target[0], "3g.20gb"), 1);
  assert_int_equal(count_profile(&sel.target[1], "1g.10gb"), 2);
  assert_int_equal(count_profile(&sel.target[1], "3g.40gb"), 1);
  gs_layout_selection_free(&sel);
}

static void custom_config_per_device(void **state)
{
  struct gs_layout_selection sel;
  struct gs_err err = {0};
  (void)state;
  assert_int_equal(resolve(mig_parted_example, "custom-config", "a100-40gb:4", &err, &sel), 0);
  assert_false(sel.target[0].mig_enabled);
  assert_false(sel.target[1].mig_enabled);
  assert_int_equal(count_profile(&sel.target[2], "3g.20gb"), 2);
  /* "1c.3g.20gb": 3 packs three 1c CIs into one 3g GI, as mig-parted does. */
  assert_int_equal(count_profile(&sel.target[3], "3g.20gb"), 1);
  assert_int_equal(sel.target[3].gi[0].nci, 3);
  assert_int_equal(count_profile(&sel.target[3], "2g.10gb"), 1);
  gs_layout_selection_free(&sel);
}

/* ---- device-filter against the GPUs' own PCI ids, as mig-parted reads them ---- */

static int resolve_on(const char *text, const char *name, const struct gs_gpu_info *gpus, unsigned n,
                      struct gs_err *err, struct gs_layout_selection *sel)
{
  struct gs_layout_file *f = parse_ok(text);
  const struct gs_layout_config *cfg;
  int rc = gs_layout_find(err, f, name, &cfg);
  if (rc == 0)
    rc = gs_layout_resolve(err, f, cfg, gpus, n, sel);
  gs_layout_file_free(f);
  return rc;
}

/* What the NVML backend reports on a real machine: its own copy of each
 * model (the driver's profiles), the board's PCI ids, and a GPU without MIG. */
static struct gs_geom_model copies[3];
static void real_machine(struct gs_gpu_info gpus[3])
{
  static const unsigned ids[3][2] = {{0x20F110DE, 0x145F10DE},  /* A100-PCIE-40GB */
                                     {0x233010DE, 0x16C110DE},  /* H100 SXM5 80GB */
                                     {0x1EB810DE, 0x12A210DE}}; /* T4: no MIG */
  copies[0] = *gs_geom_model_find("a100-40gb");
  copies[1] = *gs_geom_model_find("h100-80gb");
  memset(&copies[2], 0, sizeof(copies[2]));
  copies[2].key = "unknown-gpu-2";
  copies[2].name = "Tesla T4";
  for (unsigned i = 0; i < 3; i++) {
    memset(&gpus[i], 0, sizeof(gpus[i]));
    gpus[i].index = i;
    gpus[i].model = &copies[i];
    gpus[i].pci_device_id = ids[i][0];
    gpus[i].pci_subsystem_id = ids[i][1];
    snprintf(gpus[i].uuid, sizeof(gpus[i].uuid), "GPU-%08u-0000-0000-0000-000000000000", i);
  }
}

static const char filters[] =
    "version: v1\n"
    "mig-configs:\n"
    "  by-list:\n"
    "    - device-filter: [\"0x20B010DE\", \"0x20B110DE\", \"0x20F110DE\", \"0x20F610DE\"]\n"
    "      devices: all\n"
    "      mig-enabled: true\n"
    "      mig-devices: {\"1g.5gb\": 7}\n"
    "  by-subsystem:\n"
    "    - device-filter: \"0x233010DE:0x16C110DE\"\n"
    "      devices: all\n"
    "      mig-enabled: true\n"
    "      mig-devices: {\"3g.40gb\": 2}\n"
    "  wrong-subsystem:\n"
    "    - device-filter: \"0x233010DE:0x000010DE\"\n"
    "      devices: all\n"
    "      mig-enabled: true\n"
    "      mig-devices: {}\n"
    "  by-model:\n"
    "    - device-filter: a100-40gb\n"
    "      devices: [0, 1]\n"
    "      mig-enabled: false\n"
    "  all-enabled:\n"
    "    - devices: all\n"
    "      mig-enabled: true\n"
    "      mig-devices: {}\n"
    "  t4-enabled:\n"
    "    - devices: [2]\n"
    "      mig-enabled: true\n"
    "      mig-devices: {}\n";

static void device_filter_reads_the_gpus_pci_ids(void **state)
{
  struct gs_gpu_info gpus[3];
  struct gs_layout_selection sel;
  struct gs_err err = {0};
  (void)state;
  real_machine(gpus);
  assert_int_equal(resolve_on(filters, "by-list", gpus, 3, &err, &sel), 0);
  assert_true(sel.touched[0]); /* 0x20F1, an A100-40GB board id the model table does not hold */
  assert_false(sel.touched[1] || sel.touched[2] || sel.named[1]);
  assert_int_equal(count_profile(&sel.target[0], "1g.5gb"), 7);
  gs_layout_selection_free(&sel);
  assert_int_equal(resolve_on(filters, "by-subsystem", gpus, 3, &err, &sel), 0);
  assert_true(sel.touched[1] && !sel.touched[0]);
  gs_layout_selection_free(&sel);
  assert_int_equal(resolve_on(filters, "wrong-subsystem", gpus, 3, &err, &sel), 0);
  assert_false(sel.named[0] || sel.named[1] || sel.named[2]);
  gs_layout_selection_free(&sel);
  /* A model key names the GPU though the backend's model is its own copy. */
  assert_int_equal(resolve_on(filters, "by-model", gpus, 3, &err, &sel), 0);
  assert_true(sel.touched[0] && !sel.named[1]);
  gs_layout_selection_free(&sel);
}

/* As mig-parted: `devices: all` passes over a GPU without MIG (named, so an
 * assert counts it, but left alone); naming it by index to enable MIG fails. */
static void gpus_without_mig(void **state)
{
  struct gs_gpu_info gpus[3];
  struct gs_layout_selection sel;
  struct gs_err err = {0};
  (void)state;
  real_machine(gpus);
  assert_int_equal(resolve_on(filters, "all-enabled", gpus, 3, &err, &sel), 0);
  assert_true(sel.touched[0] && sel.touched[1]);
  assert_true(sel.named[2] && !sel.touched[2]);
  gs_layout_selection_free(&sel);
  assert_int_equal(resolve_on(filters, "t4-enabled", gpus, 3, &err, &sel), GS_E_INVALID_ARGUMENT);
  assert_non_null(strstr(err.msg, "test.yaml:27: config t4-enabled, entry 0: GPU 2 (unknown-gpu-2) cannot do MIG"));
}

/* -c may be left out when the file holds one config, as with mig-parted. */
static void the_only_config_needs_no_name(void **state)
{
  struct gs_layout_file *f = parse_ok("version: v1\nmig-configs:\n  only:\n    - devices: all\n      mig-enabled: false\n");
  const struct gs_layout_config *cfg = NULL;
  struct gs_err err = {0};
  (void)state;
  assert_int_equal(gs_layout_find(&err, f, NULL, &cfg), 0);
  assert_string_equal(cfg->name, "only");
  gs_layout_file_free(f);
  f = parse_ok(mig_parted_example);
  assert_int_equal(gs_layout_find(&err, f, NULL, &cfg), GS_E_NOT_FOUND);
  assert_non_null(strstr(err.msg, "test.yaml holds 5 configs; choose one with -c: all-disabled, all-enabled"));
  gs_layout_file_free(f);
}

static void our_format_keeps_placements_and_cis(void **state)
{
  struct gs_layout_selection sel;
  struct gs_err err = {0};
  const struct gs_layout_gi *g;
  (void)state;
  assert_int_equal(resolve(ours, "mixed", "a100-40gb", &err, &sel), 0);
  assert_int_equal(sel.target[0].ngi, 4);
  g = &sel.target[0].gi[0];
  assert_string_equal(g->profile->name, "3g.20gb");
  assert_int_equal(g->start, 4);
  assert_int_equal(g->nci, 2);
  assert_int_equal(g->ci[0].profile_id, 0);
  assert_int_equal(g->ci[0].start, -1);
  assert_int_equal(g->ci[1].profile_id, 1);
  assert_int_equal(g->ci[1].start, 0);
  assert_int_equal(count_profile(&sel.target[0], "1g.5gb"), 2);
  assert_int_equal(count_profile(&sel.target[0], "2g.10gb"), 1);
  gs_layout_selection_free(&sel);
}

/* ---- defects: each names file and line, and says what to do ---- */

struct bad_case {
  const char *what, *text, *needle1, *needle2;
};

static const struct bad_case parse_errors[] = {
    {"not YAML", "version: v1\nmig-configs: [\n", "test.yaml:", "not valid YAML"},
    {"empty file", "", "test.yaml:1", "version: v1"},
    {"a list at the top", "- a\n", "test.yaml:1", "expected a map"},
    {"no version", "mig-configs: {}\n", "test.yaml:1", "version"},
    {"foreign version", "version: v2\nmig-configs: {}\n", "test.yaml:1", "'v2'"},
    {"unknown top key", "version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: false\nextra: 1\n",
     "test.yaml:6", "unexpected key 'extra'"},
    {"no configs", "version: v1\nmig-configs: {}\n", "test.yaml:2", "named configs"},
    {"empty entry list", "version: v1\nmig-configs:\n  a: []\n", "test.yaml:3", "non-empty list"},
    {"missing devices", "version: v1\nmig-configs:\n  a:\n    - mig-enabled: false\n", "test.yaml:4",
     "missing 'devices'"},
    {"missing mig-enabled", "version: v1\nmig-configs:\n  a:\n    - devices: all\n", "test.yaml:4",
     "missing 'mig-enabled'"},
    {"enabled without mig-devices", "version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: true\n",
     "test.yaml:4", "'mig-devices' is missing"},
    {"devices when disabled",
     "version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: false\n      mig-devices: {\"1g.5gb\": 1}\n",
     "test.yaml:4", "must be empty"},
    {"unknown entry key", "version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: false\n      gpus: 2\n",
     "test.yaml:6", "unexpected key 'gpus'"},
    {"bad bool", "version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: maybe\n", "test.yaml:5",
     "true or false"},
    {"bad count", "version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: true\n      mig-devices: {\"1g.5gb\": -1}\n",
     "test.yaml:6", "a number from 0"},
    {"bad devices", "version: v1\nmig-configs:\n  a:\n    - devices: some\n      mig-enabled: false\n", "test.yaml:4",
     "'all' or a list"},
    {"duplicate key", "version: v1\nmig-configs:\n  a:\n    - devices: all\n      devices: all\n      mig-enabled: false\n",
     "test.yaml:5", "appears twice"},
    {"placement with count",
     "version: gpuslice/v1\nconfigs:\n  a:\n    - devices: all\n      mig-enabled: true\n      gpu-instances:\n        - {profile: 1g.5gb, placement: 1, count: 2}\n",
     "test.yaml:7", "drop 'count'"},
    {"mig-devices in ours",
     "version: gpuslice/v1\nconfigs:\n  a:\n    - devices: all\n      mig-enabled: true\n      mig-devices: {}\n",
     "test.yaml:6", "unexpected key 'mig-devices'"},
};

static void every_parse_defect_is_named(void **state)
{
  (void)state;
  for (size_t i = 0; i < GS_NITEMS(parse_errors); i++) {
    const struct bad_case *b = &parse_errors[i];
    struct gs_layout_file *f = NULL;
    struct gs_err err = {0};
    int rc = gs_layout_parse(&err, "test.yaml", b->text, strlen(b->text), &f);
    if (rc != GS_E_INVALID_ARGUMENT || f != NULL)
      fail_msg("%s: expected INVALID_ARGUMENT, got %d (%s)", b->what, rc, err.msg);
    if (!strstr(err.msg, b->needle1) || !strstr(err.msg, b->needle2))
      fail_msg("%s: message \"%s\" lacks \"%s\" or \"%s\"", b->what, err.msg, b->needle1, b->needle2);
  }
}

static const struct bad_case resolve_errors[] = {
    {"unknown profile", "version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: true\n      mig-devices: {\"1g.6gb\": 1}\n",
     "test.yaml:6: config a, entry 0", "no profile '1g.6gb'; its GPU instance profiles are 1g.5gb"},
    {"GPU out of range", "version: v1\nmig-configs:\n  a:\n    - devices: [3]\n      mig-enabled: false\n",
     "GPU 3 does not exist", "GPUs 0..0"},
    {"two entries one GPU", "version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: false\n    - devices: [0]\n      mig-enabled: false\n",
     "entry 1", "also selected by entry 0"},
    {"does not fit", "version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: true\n      mig-devices: {\"1g.5gb\": 8}\n",
     "test.yaml:4", "has 8 1g.5gb instances but one a100-40gb holds at most 7"},
    {"3g+3g+1g does not fit", "version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: true\n      mig-devices: {\"3g.20gb\": 2, \"1g.5gb\": 1}\n",
     "test.yaml:4", "needs 9 memory slices but one a100-40gb has 8"},
    {"CI placement", "version: gpuslice/v1\nconfigs:\n  a:\n    - devices: all\n      mig-enabled: true\n      gpu-instances:\n        - {profile: 3g.20gb, compute-instances: [{profile: 2c.3g.20gb, placement: 1}]}\n",
     "test.yaml:4", "compute instance 2c.3g.20gb cannot start at compute slice 1"},
    {"unknown device-filter", "version: v1\nmig-configs:\n  a:\n    - devices: all\n      device-filter: [\"0x20B010DE\", a100-40gigs]\n      mig-enabled: false\n",
     "test.yaml:4", "device-filter 'a100-40gigs' is neither a PCI device id"},
    {"unknown CI profile",
     "version: gpuslice/v1\nconfigs:\n  a:\n    - devices: all\n      mig-enabled: true\n      gpu-instances:\n        - {profile: 3g.20gb, compute-instances: [5c.3g.20gb]}\n",
     "test.yaml:7", "no compute-instance profile '5c.3g.20gb'"},
    {"unknown UUID", "version: gpuslice/v1\nconfigs:\n  a:\n    - devices: [GPU-nope]\n      mig-enabled: false\n",
     "no GPU has UUID GPU-nope", "gpuslice list"},
};

static void every_resolve_defect_is_named(void **state)
{
  (void)state;
  for (size_t i = 0; i < GS_NITEMS(resolve_errors); i++) {
    const struct bad_case *b = &resolve_errors[i];
    struct gs_layout_selection sel;
    struct gs_err err = {0};
    int rc = resolve(b->text, "a", "a100-40gb", &err, &sel);
    if (rc != GS_E_INVALID_ARGUMENT)
      fail_msg("%s: expected INVALID_ARGUMENT, got %d (%s)", b->what, rc, err.msg);
    if (!strstr(err.msg, b->needle1) || !strstr(err.msg, b->needle2))
      fail_msg("%s: message \"%s\" lacks \"%s\" or \"%s\"", b->what, err.msg, b->needle1, b->needle2);
  }
}

static void unknown_config_lists_the_names(void **state)
{
  struct gs_layout_file *f = parse_ok(mig_parted_example);
  const struct gs_layout_config *cfg;
  struct gs_err err = {0};
  (void)state;
  assert_int_equal(gs_layout_find(&err, f, "all-7g", &cfg), GS_E_NOT_FOUND);
  assert_non_null(strstr(err.msg, "'all-7g'"));
  assert_non_null(strstr(err.msg, "all-disabled, all-enabled, all-1g.5gb"));
  gs_layout_file_free(f);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(mig_parted_example_parses),
      cmocka_unit_test(balanced_picks_the_entry_of_each_model),
      cmocka_unit_test(custom_config_per_device),
      cmocka_unit_test(device_filter_reads_the_gpus_pci_ids),
      cmocka_unit_test(gpus_without_mig),
      cmocka_unit_test(the_only_config_needs_no_name),
      cmocka_unit_test(our_format_keeps_placements_and_cis),
      cmocka_unit_test(every_parse_defect_is_named),
      cmocka_unit_test(every_resolve_defect_is_named),
      cmocka_unit_test(unknown_config_lists_the_names),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
