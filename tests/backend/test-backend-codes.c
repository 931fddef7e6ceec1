/* SPDX-License-Identifier: Apache-2.0 */
/* test-backend-codes.c: NVML's vocabulary for util's error codes (the
 * backend's codes.c): every code's NVML name, NVML value and text, one
 * row each (a code added to util.h without one fails here); values no code
 * has are NVML_ERROR_UNKNOWN; NVML's values map back to our codes. That
 * the codes are negative and distinct is util's (test-util-err.c). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "backend/backend.h"

struct code_case {
  int code;
  const char *name, *nvml_name;
  int nvml;
  const char *text;
};

/* Written out by hand, not from GS_CODE_MAP, so a slip in the map shows. */
static const struct code_case cases[] = {
    {GS_OK, "OK", "NVML_SUCCESS", 0, "Success"},
    {GS_E_UNINITIALIZED, "UNINITIALIZED", "NVML_ERROR_UNINITIALIZED", 1, "Uninitialized"},
    {GS_E_INVALID_ARGUMENT, "INVALID_ARGUMENT", "NVML_ERROR_INVALID_ARGUMENT", 2, "Invalid Argument"},
    {GS_E_NOT_SUPPORTED, "NOT_SUPPORTED", "NVML_ERROR_NOT_SUPPORTED", 3, "Not Supported"},
    {GS_E_NO_PERMISSION, "NO_PERMISSION", "NVML_ERROR_NO_PERMISSION", 4, "Insufficient Permissions"},
    {GS_E_NOT_FOUND, "NOT_FOUND", "NVML_ERROR_NOT_FOUND", 6, "Not Found"},
    {GS_E_INSUFFICIENT_SIZE, "INSUFFICIENT_SIZE", "NVML_ERROR_INSUFFICIENT_SIZE", 7,
     "Insufficient Size"},
    {GS_E_DRIVER_NOT_LOADED, "DRIVER_NOT_LOADED", "NVML_ERROR_DRIVER_NOT_LOADED", 9,
     "Driver Not Loaded"},
    {GS_E_LIBRARY_NOT_FOUND, "LIBRARY_NOT_FOUND", "NVML_ERROR_LIBRARY_NOT_FOUND", 12,
     "NVML Shared Library Not Found"},
    {GS_E_FUNCTION_NOT_FOUND, "FUNCTION_NOT_FOUND", "NVML_ERROR_FUNCTION_NOT_FOUND", 13,
     "Function Not Found"},
    {GS_E_GPU_IS_LOST, "GPU_IS_LOST", "NVML_ERROR_GPU_IS_LOST", 15, "GPU is lost"},
    {GS_E_RESET_REQUIRED, "RESET_REQUIRED", "NVML_ERROR_RESET_REQUIRED", 16, "Reset Required"},
    {GS_E_IN_USE, "IN_USE", "NVML_ERROR_IN_USE", 19, "In use by another client"},
    {GS_E_NO_MEMORY, "NO_MEMORY", "NVML_ERROR_MEMORY", 20, "Out of Memory"},
    {GS_E_INSUFFICIENT_RESOURCES, "INSUFFICIENT_RESOURCES", "NVML_ERROR_INSUFFICIENT_RESOURCES", 23,
     "Insufficient Resources"},
    {GS_E_ARGUMENT_VERSION_MISMATCH, "ARGUMENT_VERSION_MISMATCH",
     "NVML_ERROR_ARGUMENT_VERSION_MISMATCH", 25, "Argument Version Mismatch"},
    {GS_E_UNKNOWN, "UNKNOWN", "NVML_ERROR_UNKNOWN", 999, "Unknown Error"},
    {GS_E_IO, "IO", "NVML_ERROR_UNKNOWN", 999, "I/O error"},
    {GS_E_CORRUPT_STATE, "CORRUPT_STATE", "NVML_ERROR_UNKNOWN", 999, "Corrupt state"},
    {GS_E_USAGE, "USAGE", "NVML_ERROR_UNKNOWN", 999, "Usage error"},
    {GS_E_UNTRUSTED_FILE, "UNTRUSTED_FILE", "NVML_ERROR_UNKNOWN", 999, "Untrusted file"},
};

static void every_code_has_its_names(void **state)
{
  (void)state;
  for (size_t i = 0; i < GS_NITEMS(cases); i++) {
    const struct code_case *c = &cases[i];
    assert_string_equal(gs_code_name(c->code), c->name);
    assert_string_equal(gs_backend_code_nvml_name(c->code), c->nvml_name);
    assert_int_equal(gs_backend_code_nvml(c->code), c->nvml);
    assert_string_equal(gs_backend_code_text(c->code), c->text);
  }
}

/* The hand table covers the map: adding a code without a row fails here. */
static void the_table_covers_the_map(void **state)
{
  (void)state;
#define COUNT_CODE(name) +1
  assert_int_equal(GS_NITEMS(cases), 1 GS_CODE_MAP(COUNT_CODE));
#undef COUNT_CODE
}

static void unknown_codes_are_nvml_unknown(void **state)
{
  static const int unknown[] = {1, 5, 999, -1000, 12345};
  /* (GS_E_UNKNOWN itself has the same names; these are values no code has.) */
  (void)state;
  for (size_t i = 0; i < GS_NITEMS(unknown); i++) {
    assert_string_equal(gs_backend_code_nvml_name(unknown[i]), "NVML_ERROR_UNKNOWN");
    assert_int_equal(gs_backend_code_nvml(unknown[i]), 999);
    assert_string_equal(gs_backend_code_text(unknown[i]), "Unknown Error");
  }
}

/* NVML's values map back to our codes; values we do not list are UNKNOWN. */
static void nvml_values_map_back(void **state)
{
  (void)state;
  for (size_t i = 0; i < GS_NITEMS(cases); i++)
    if (cases[i].nvml != 999)
      assert_int_equal(gs_backend_code_from_nvml(cases[i].nvml), cases[i].code);
  assert_int_equal(gs_backend_code_from_nvml(999), GS_E_UNKNOWN);
  assert_int_equal(gs_backend_code_from_nvml(27), GS_E_UNKNOWN);
  assert_int_equal(gs_backend_code_from_nvml(-5), GS_E_UNKNOWN);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(every_code_has_its_names),
      cmocka_unit_test(the_table_covers_the_map),
      cmocka_unit_test(unknown_codes_are_nvml_unknown),
      cmocka_unit_test(nvml_values_map_back),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
