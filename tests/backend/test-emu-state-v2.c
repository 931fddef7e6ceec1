/* SPDX-License-Identifier: Apache-2.0 */
/* test-emu-state-v2.c: the state file's version 2 fields (docs/emu-state.md):
 * the machine's driver, each GPU's board and GI-ID orientation; version 1
 * files still read, as the default driver and each model's orientation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "emu-state-eq.h"

#define ORIGIN "test.json"

/* One H100 PCIe board of the swapped orientation with a 1g at slot 0, which
 * such a board numbers 11 (a straight one 7), on driver 525.125.06. */
static const char v2[] =
    "{\"format\":\"gpuslice-emu-state\",\"version\":2,\"enforce_root\":false,\"boots\":0,"
    "\"driver\":\"525.125.06\",\"gpus\":[{\"model\":\"h800-pcie-80gb\",\"mig_current\":true,"
    "\"mig_pending\":true,\"reset_blocked\":false,\"swapped_ids\":true,\"gpu_instances\":["
    "{\"id\":11,\"profile_id\":19,\"start\":0,\"compute_instances\":[]}]}],\"processes\":[]}";

static int parse(const char *text, struct gs__emu_state *st, struct gs_err *err)
{
  return gs__emu_state_parse(err, ORIGIN, text, strlen(text), st);
}

/* text with its one `from` replaced by `to`. */
static void variant(const char *text, const char *from, const char *to, char *out, size_t size)
{
  const char *at = strstr(text, from);
  assert_non_null(at);
  assert_null(strstr(at + 1, from));
  snprintf(out, size, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
}

static void v2_fields_parse(void **state)
{
  struct gs__emu_state *st = malloc(sizeof(*st));
  struct gs_err err = {0};
  (void)state;
  if (parse(v2, st, &err) != 0)
    fail_msg("%s", err.msg);
  assert_string_equal(st->driver.version, "525.125.06");
  assert_int_equal(st->driver.code, GS_GEOM_DRIVER(525, 125, 6));
  assert_string_equal(st->gpu[0].sku->key, "h800-pcie-80gb");
  assert_string_equal(st->gpu[0].sku->name, "NVIDIA H800 PCIe");
  assert_true(st->gpu[0].swapped_ids);
  /* the board's model as driver 525 shows it: 1g.10gb at 9.62 GiB */
  assert_int_equal(gs_geom_gi_profile_by_id(st->gpu[0].model, 19)->memory_mib, 9856);
  assert_int_equal(st->gpu[0].gi[0].id, 11);
  free(st);
}

static void v2_round_trips(void **state)
{
  struct gs__emu_state *st = malloc(sizeof(*st)), *back = malloc(sizeof(*back));
  char *text, why[128] = "";
  (void)state;
  assert_int_equal(parse(v2, st, NULL), 0);
  assert_int_equal(gs__emu_state_dump(NULL, st, &text), 0);
  assert_int_equal(parse(text, back, NULL), 0);
  if (!gs_test_emu_state_eq(st, back, why, sizeof(why)))
    fail_msg("round trip differs: %s\n%s", why, text);
  assert_non_null(strstr(text, "\"version\": 2"));
  free(text);
  free(st);
  free(back);
}

/* A version 1 file: no driver, no swapped_ids; the default driver and the
 * model's own orientation (an A100-40GB numbers slot 4 as GI 7). */
static void v1_reads_as_defaults(void **state)
{
  static const char v1[] =
      "{\"format\":\"gpuslice-emu-state\",\"version\":1,\"enforce_root\":false,\"boots\":0,"
      "\"gpus\":[{\"model\":\"a100-40gb\",\"mig_current\":true,\"mig_pending\":true,"
      "\"reset_blocked\":false,\"gpu_instances\":[{\"id\":7,\"profile_id\":19,\"start\":4,"
      "\"compute_instances\":[]}]}],\"processes\":[]}";
  struct gs__emu_state *st = malloc(sizeof(*st));
  struct gs_geom_driver newest;
  struct gs_err err = {0};
  (void)state;
  gs_geom_driver_default(&newest);
  if (parse(v1, st, &err) != 0)
    fail_msg("%s", err.msg);
  assert_string_equal(st->driver.version, newest.version);
  assert_true(st->gpu[0].swapped_ids);
  free(st);
}

static void refused(const char *from, const char *to, const char *want)
{
  struct gs__emu_state *st = malloc(sizeof(*st));
  struct gs_err err = {0};
  char text[2048];
  variant(v2, from, to, text, sizeof(text));
  assert_int_equal(parse(text, st, &err), GS_E_CORRUPT_STATE);
  if (!strstr(err.msg, want))
    fail_msg("want \"%s\" in: %s", want, err.msg);
  free(st);
}

static void v2_defects_are_refused(void **state)
{
  (void)state;
  refused("\"driver\":\"525.125.06\",", "", "driver: missing");
  refused("\"525.125.06\"", "\"525\"", "driver: \"525\" is not a driver release");
  refused("\"525.125.06\"", "\"banana\"", "driver: \"banana\" is not a driver release");
  refused("\"525.125.06\"", "7", "driver: must be a string");
  refused("\"swapped_ids\":true,", "", "swapped_ids: missing");
  refused("\"swapped_ids\":true", "\"swapped_ids\":1", "swapped_ids: must be true or false");
  /* the other orientation gives slot 0 another id */
  refused("\"swapped_ids\":true", "\"swapped_ids\":false", "gpu_instances[0].id: 11 is not the id");
  /* an H100 has no MIG before R525 */
  refused("\"525.125.06\"", "\"470.57.02\"", "h800-pcie-80gb has no MIG on driver 470.57.02");
  refused("\"h800-pcie-80gb\"", "\"h900\"", "unknown GPU model");
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(v2_fields_parse),
      cmocka_unit_test(v2_round_trips),
      cmocka_unit_test(v1_reads_as_defaults),
      cmocka_unit_test(v2_defects_are_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
