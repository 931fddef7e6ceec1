/* SPDX-License-Identifier: Apache-2.0 */
/* codes.c: NVML's vocabulary for gpuslice's error codes (util.h names
 * them): each code's nvmlReturn_t value, NVML's name for it and NVML's own
 * text as nvidia-smi prints it (reference/mig-facts.md §6.3), so the
 * emulator, nvml-emu and the NVML backend speak one language. Conditions of
 * our own are NVML_ERROR_UNKNOWN (999) with a text of ours. */
#include "backend/internal.h"

/* One row per code; looked up by value, so the table stays right however
 * util.h numbers its codes. A code with no row is NVML_ERROR_UNKNOWN. */
static const struct {
  int code, nvml;
  const char *text;
} rows[] = {
    {GS_OK, 0, "Success"},
    {GS_E_UNINITIALIZED, 1, "Uninitialized"},
    {GS_E_INVALID_ARGUMENT, 2, "Invalid Argument"},
    {GS_E_NOT_SUPPORTED, 3, "Not Supported"},
    {GS_E_NO_PERMISSION, 4, "Insufficient Permissions"},
    {GS_E_NOT_FOUND, 6, "Not Found"},
    {GS_E_INSUFFICIENT_SIZE, 7, "Insufficient Size"},
    {GS_E_DRIVER_NOT_LOADED, 9, "Driver Not Loaded"},
    {GS_E_LIBRARY_NOT_FOUND, 12, "NVML Shared Library Not Found"},
    {GS_E_FUNCTION_NOT_FOUND, 13, "Function Not Found"},
    {GS_E_GPU_IS_LOST, 15, "GPU is lost"},
    {GS_E_RESET_REQUIRED, 16, "Reset Required"},
    {GS_E_IN_USE, 19, "In use by another client"},
    {GS_E_NO_MEMORY, 20, "Out of Memory"},
    {GS_E_INSUFFICIENT_RESOURCES, 23, "Insufficient Resources"},
    {GS_E_ARGUMENT_VERSION_MISMATCH, 25, "Argument Version Mismatch"},
    {GS_E_UNKNOWN, 999, "Unknown Error"},
    {GS_E_IO, 999, "I/O error"},
    {GS_E_CORRUPT_STATE, 999, "Corrupt state"},
    {GS_E_USAGE, 999, "Usage error"},
    {GS_E_UNTRUSTED_FILE, 999, "Untrusted file"},
};

/* NVML's own names for its return values. Kept apart from the rows because
 * ours differ where NVML's is terse (NO_MEMORY is NVML_ERROR_MEMORY) and
 * several of ours share 999. */
static const struct {
  int value;
  const char *name;
} nvml_names[] = {
    {0, "NVML_SUCCESS"},
    {1, "NVML_ERROR_UNINITIALIZED"},
    {2, "NVML_ERROR_INVALID_ARGUMENT"},
    {3, "NVML_ERROR_NOT_SUPPORTED"},
    {4, "NVML_ERROR_NO_PERMISSION"},
    {6, "NVML_ERROR_NOT_FOUND"},
    {7, "NVML_ERROR_INSUFFICIENT_SIZE"},
    {9, "NVML_ERROR_DRIVER_NOT_LOADED"},
    {12, "NVML_ERROR_LIBRARY_NOT_FOUND"},
    {13, "NVML_ERROR_FUNCTION_NOT_FOUND"},
    {15, "NVML_ERROR_GPU_IS_LOST"},
    {16, "NVML_ERROR_RESET_REQUIRED"},
    {19, "NVML_ERROR_IN_USE"},
    {20, "NVML_ERROR_MEMORY"},
    {23, "NVML_ERROR_INSUFFICIENT_RESOURCES"},
    {25, "NVML_ERROR_ARGUMENT_VERSION_MISMATCH"},
    {999, "NVML_ERROR_UNKNOWN"},
};

static int row_of(int code)
{
  for (size_t i = 0; i < GS_NITEMS(rows); i++)
    if (rows[i].code == code)
      return (int)i;
  return -1;
}

int gs_backend_code_nvml(int code)
{
  int r = row_of(code);
  return r >= 0 ? rows[r].nvml : 999;
}

const char *gs_backend_code_nvml_name(int code)
{
  int v = gs_backend_code_nvml(code);
  for (size_t i = 0; i < GS_NITEMS(nvml_names); i++)
    if (nvml_names[i].value == v)
      return nvml_names[i].name;
  return "NVML_ERROR_UNKNOWN";
}

const char *gs_backend_code_text(int code)
{
  int r = row_of(code);
  return r >= 0 ? rows[r].text : "Unknown Error"; /* NVML's text for NVML_ERROR_UNKNOWN */
}

int gs_backend_code_from_nvml(int nvml)
{
  if (nvml == 0)
    return GS_OK;
  for (size_t i = 1; i < GS_NITEMS(rows); i++)
    if (rows[i].nvml == nvml && nvml != 999)
      return rows[i].code;
  return GS_E_UNKNOWN;
}
