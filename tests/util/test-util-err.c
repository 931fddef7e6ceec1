/* SPDX-License-Identifier: Apache-2.0 */
/* test-util-err.c: error records and the code table: every code's short
 * name (NVML's names for them are the backend's: test-backend-codes.c);
 * NULL records; messages that overflow the record or quote the record
 * itself. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "util/util.h"

/* Short names, written out by hand (not from GS_CODE_MAP) so a slip in the map shows. */
static const struct {
  int code;
  const char *name;
} cases[] = {
    {GS_OK, "OK"}, {GS_E_UNINITIALIZED, "UNINITIALIZED"}, {GS_E_INVALID_ARGUMENT, "INVALID_ARGUMENT"},
    {GS_E_NOT_SUPPORTED, "NOT_SUPPORTED"}, {GS_E_NO_PERMISSION, "NO_PERMISSION"},
    {GS_E_NOT_FOUND, "NOT_FOUND"}, {GS_E_INSUFFICIENT_SIZE, "INSUFFICIENT_SIZE"},
    {GS_E_DRIVER_NOT_LOADED, "DRIVER_NOT_LOADED"}, {GS_E_LIBRARY_NOT_FOUND, "LIBRARY_NOT_FOUND"},
    {GS_E_FUNCTION_NOT_FOUND, "FUNCTION_NOT_FOUND"}, {GS_E_GPU_IS_LOST, "GPU_IS_LOST"},
    {GS_E_RESET_REQUIRED, "RESET_REQUIRED"}, {GS_E_IN_USE, "IN_USE"}, {GS_E_NO_MEMORY, "NO_MEMORY"},
    {GS_E_INSUFFICIENT_RESOURCES, "INSUFFICIENT_RESOURCES"},
    {GS_E_ARGUMENT_VERSION_MISMATCH, "ARGUMENT_VERSION_MISMATCH"}, {GS_E_UNKNOWN, "UNKNOWN"},
    {GS_E_IO, "IO"}, {GS_E_CORRUPT_STATE, "CORRUPT_STATE"}, {GS_E_USAGE, "USAGE"},
    {GS_E_UNTRUSTED_FILE, "UNTRUSTED_FILE"},
};

static void every_code_has_its_name(void **state)
{
  (void)state;
  for (size_t i = 0; i < GS_NITEMS(cases); i++)
    assert_string_equal(gs_code_name(cases[i].code), cases[i].name);
}

/* The hand table covers the map: adding a code without a row fails here. */
static void the_table_covers_the_map(void **state)
{
  (void)state;
#define COUNT_CODE(name) +1
  assert_int_equal(GS_NITEMS(cases), 1 GS_CODE_MAP(COUNT_CODE));
#undef COUNT_CODE
}

static void codes_are_negative_and_distinct(void **state)
{
  (void)state;
  for (size_t i = 1; i < GS_NITEMS(cases); i++) {
    assert_true(cases[i].code < 0);
    for (size_t j = 1; j < i; j++)
      assert_int_not_equal(cases[i].code, cases[j].code);
  }
}

static void unknown_codes_are_unknown(void **state)
{
  static const int unknown[] = {1, 5, 999, -1000, 12345};
  (void)state;
  for (size_t i = 0; i < GS_NITEMS(unknown); i++)
    assert_string_equal(gs_code_name(unknown[i]), "UNKNOWN");
}

static void set_fills_the_record(void **state)
{
  struct gs_err err = {0};
  (void)state;
  assert_int_equal(gs_err_set(&err, GS_E_IN_USE, "GPU %d: %s", 3, "busy"), GS_E_IN_USE);
  assert_int_equal(err.code, GS_E_IN_USE);
  assert_string_equal(err.msg, "GPU 3: busy");
}

static void null_record_is_accepted(void **state)
{
  (void)state;
  assert_int_equal(gs_err_set(NULL, GS_E_IO, "%s", "dropped"), GS_E_IO);
  assert_int_equal(gs_err_set(NULL, 0, "fine"), 0);
  gs_err_clear(NULL);
}

static void clear_resets_code_and_message(void **state)
{
  struct gs_err err;
  (void)state;
  gs_err_set(&err, GS_E_USAGE, "bad flag");
  gs_err_clear(&err);
  assert_int_equal(err.code, 0);
  assert_string_equal(err.msg, "");
}

static void long_message_is_truncated_and_marked(void **state)
{
  char big[3 * GS_ERR_MSG_SIZE];
  struct gs_err err;
  (void)state;
  memset(big, 'x', sizeof(big) - 1);
  big[sizeof(big) - 1] = '\0';
  gs_err_set(&err, GS_E_INVALID_ARGUMENT, "start %s", big);
  assert_int_equal(err.code, GS_E_INVALID_ARGUMENT);
  assert_int_equal(strlen(err.msg), GS_ERR_MSG_SIZE - 1);
  assert_memory_equal(err.msg, "start xxx", 9);
  assert_string_equal(err.msg + GS_ERR_MSG_SIZE - 4, "...");
}

static void message_that_just_fits_is_kept_whole(void **state)
{
  char fit[GS_ERR_MSG_SIZE];
  struct gs_err err;
  (void)state;
  memset(fit, 'y', sizeof(fit) - 1);
  fit[sizeof(fit) - 1] = '\0';
  gs_err_set(&err, GS_E_IO, "%s", fit);
  assert_string_equal(err.msg, fit);
}

/* Callers add context with gs_err_set(err, code, "%s; fix", err->msg). */
static void message_may_quote_the_record(void **state)
{
  struct gs_err err;
  (void)state;
  gs_err_set(&err, GS_E_CORRUPT_STATE, "emu.json: bad");
  gs_err_set(&err, err.code, "%s; run `gpuslice emu reset`", err.msg);
  assert_string_equal(err.msg, "emu.json: bad; run `gpuslice emu reset`");
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(every_code_has_its_name),
      cmocka_unit_test(the_table_covers_the_map),
      cmocka_unit_test(codes_are_negative_and_distinct),
      cmocka_unit_test(unknown_codes_are_unknown),
      cmocka_unit_test(set_fills_the_record),
      cmocka_unit_test(null_record_is_accepted),
      cmocka_unit_test(clear_resets_code_and_message),
      cmocka_unit_test(long_message_is_truncated_and_marked),
      cmocka_unit_test(message_that_just_fits_is_kept_whole),
      cmocka_unit_test(message_may_quote_the_record),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
