/* SPDX-License-Identifier: Apache-2.0 */
/* test-nvml-driver-faults.c: the nvml backend against drivers that are
 * missing, broken, old or empty (stand-ins built from fake-nvml/, and nvml-emu
 * cut down to what the CUDA 11.1 and 11.4 headers declared), and the
 * default backend choice falling back to the emulator with its reason; then
 * NVML's refusals through the nvml backend over nvml-emu. Each failure must
 * keep NVML's code and say what to do. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "../lib/gs-test-tmp.h"

static const char *fake(const char *variant, char out[GS_TEST_PATH])
{
  const char *dir = getenv("GS_FAKE_NVML");
  if (!dir)
    fail_msg("GS_FAKE_NVML is not set (ctest sets it)");
  snprintf(out, GS_TEST_PATH, "%s/libfake-nvml-%s.so", dir, variant);
  return out;
}

static int open_nvml(const char *library, struct gs_err *err, struct gs_backend **b)
{
  struct gs_backend_config cfg = {.kind = "nvml", .nvml_library = library};
  return gs_backend_open(err, &cfg, b);
}

static void assert_says(const struct gs_err *err, const char *part)
{
  if (!strstr(err->msg, part))
    fail_msg("message \"%s\" lacks \"%s\"", err->msg, part);
}

static void missing_library_is_library_not_found(void **state)
{
  struct gs_err err = {0};
  struct gs_backend *b = NULL;
  (void)state;
  assert_int_equal(open_nvml("/nonexistent/libnvidia-ml.so.1", &err, &b), GS_E_LIBRARY_NOT_FOUND);
  assert_null(b);
  assert_says(&err, "/nonexistent/libnvidia-ml.so.1");
  assert_says(&err, "--backend emu");
}

static void library_without_nvml_is_function_not_found(void **state)
{
  struct gs_err err = {0};
  struct gs_backend *b = NULL;
  (void)state;
  assert_int_equal(open_nvml("libc.so.6", &err, &b), GS_E_FUNCTION_NOT_FOUND);
  assert_says(&err, "not a usable NVML library");
}

static void failing_init_is_driver_not_loaded(void **state)
{
  char path[GS_TEST_PATH];
  struct gs_err err = {0};
  struct gs_backend *b = NULL;
  (void)state;
  assert_int_equal(open_nvml(fake("init-fails", path), &err, &b), GS_E_DRIVER_NOT_LOADED);
  assert_says(&err, "nvmlInit failed");
  assert_says(&err, "modprobe nvidia");
}

static void no_gpu_is_not_found(void **state)
{
  char path[GS_TEST_PATH];
  struct gs_err err = {0};
  struct gs_backend *b = NULL;
  (void)state;
  assert_int_equal(open_nvml(fake("no-gpus", path), &err, &b), GS_E_NOT_FOUND);
  assert_says(&err, "sees no GPU");
}

/* A driver from before MIG: unversioned names only, no MIG entry points. It
 * opens, its GPU is recognised by name, and each MIG call names what is missing. */
static void old_driver_opens_and_names_what_it_lacks(void **state)
{
  char path[GS_TEST_PATH];
  struct gs_err err = {0};
  struct gs_backend *b = NULL;
  struct gs_gpu_info info;
  struct gs_mig_device devs[GS_BACKEND_MAX_MIG_DEVICES];
  struct gs_proc_info procs[4];
  unsigned n = 0;
  int activation = 0;
  (void)state;
  assert_int_equal(open_nvml(fake("old", path), &err, &b), 0);
  assert_int_equal(b->ops->gpu_count(b, &err, &n), 0);
  assert_int_equal(n, 1);
  assert_int_equal(b->ops->gpu_info(b, &err, 0, &info), 0);
  assert_string_equal(info.name, "NVIDIA A100-SXM4-40GB");
  assert_string_equal(info.model->key, "a100-40gb");
  assert_false(info.mig_current);
  assert_int_equal(b->ops->set_mig_mode(b, &err, 0, true, &activation), GS_E_FUNCTION_NOT_FOUND);
  assert_says(&err, "nvmlDeviceSetMigMode");
  assert_says(&err, "R450");
  assert_int_equal(b->ops->gi_remaining(b, &err, 0, &info.model->gi[0], &n), GS_E_FUNCTION_NOT_FOUND);
  assert_says(&err, "nvmlDeviceGetGpuInstanceRemainingCapacity");
  assert_int_equal(b->ops->gi_create(b, &err, 0, &info.model->gi[0], 3, NULL), GS_E_FUNCTION_NOT_FOUND);
  assert_says(&err, "omit --placement");
  assert_int_equal(b->ops->mig_devices(b, &err, 0, devs, &n), 0);
  assert_int_equal(n, 0);
  assert_int_equal(b->ops->processes(b, &err, 0, procs, &n), GS_E_FUNCTION_NOT_FOUND);
  assert_int_equal(b->ops->gpu_info(b, &err, 1, &info), GS_E_INVALID_ARGUMENT);
  gs_backend_close(b);
}

/* An nvml-emu stand-in for a driver of an older era (fake-nvml/<era>.map:
 * the entry points NVIDIA's nvml.h of that CUDA release declared), on a
 * fresh emulated A100 in MIG mode; *ctl is an emulator on the same state. */
static void open_era(const char *era, char dir[GS_TEST_DIR], struct gs_backend **b,
                     struct gs_backend **ctl)
{
  char lib[GS_TEST_PATH], path[GS_TEST_PATH];
  struct gs_backend_config emu = {.kind = "emu", .state_path = path};
  struct gs_err err = {0};
  int activation = -1;
  assert_int_equal(gs_test_mkdtemp(era, dir), 0);
  gs_test_join(path, dir, "emu.json");
  assert_int_equal(setenv("GPUSLICE_EMU_STATE", path, 1), 0);
  assert_int_equal(setenv("GPUSLICE_EMULATE", "a100-40gb", 1), 0);
  if (open_nvml(fake(era, lib), &err, b) != 0)
    fail_msg("%s: %s", era, err.msg);
  assert_int_equal((*b)->ops->set_mig_mode(*b, &err, 0, true, &activation), 0);
  assert_int_equal(activation, 0);
  assert_int_equal(gs_backend_open(&err, &emu, ctl), 0);
}

static void close_era(char dir[GS_TEST_DIR], struct gs_backend *b, struct gs_backend *ctl)
{
  gs_backend_close(b);
  gs_backend_close(ctl);
  unsetenv("GPUSLICE_EMU_STATE");
  unsetenv("GPUSLICE_EMULATE");
  gs_test_rmtree(dir);
}

static void assert_lacks(int rc, const struct gs_err *err, const char *symbol, const char *driver)
{
  if (rc != GS_E_FUNCTION_NOT_FOUND)
    fail_msg("returned %d (\"%s\"), want FUNCTION_NOT_FOUND naming %s", rc, err->msg, symbol);
  assert_says(err, symbol);
  assert_says(err, driver);
}

/* CUDA 11.1 (R455): no placements, no readable CI; profiles come from the v1
 * call, process lists from _v2. A CI the driver could not read back is
 * refused before it is made. */
static void r455_driver_falls_back_or_names_r460(void **state)
{
  const struct gs_geom_model *m = gs_geom_model_find("a100-40gb");
  char dir[GS_TEST_DIR];
  struct gs_backend *b = NULL, *ctl = NULL;
  struct gs_err err = {0};
  struct gs_gi_info gi;
  struct gs_ci_info cis[GS_GEOM_MAX_INSTANCES];
  struct gs_proc_info procs[GS_BACKEND_MAX_PROCS];
  unsigned n = 0;
  (void)state;
  open_era("r455", dir, &b, &ctl);
  assert_int_equal(b->ops->gi_remaining(b, &err, 0, gs_geom_gi_profile_find(m, "1g.5gb"), &n), 0);
  assert_int_equal(n, 7);
  assert_lacks(b->ops->gi_create(b, &err, 0, gs_geom_gi_profile_find(m, "1g.5gb"), 6, NULL), &err,
               "nvmlDeviceCreateGpuInstanceWithPlacement", "R460");
  gs_err_clear(&err);
  assert_int_equal(b->ops->gi_create(b, &err, 0, gs_geom_gi_profile_find(m, "3g.20gb"), -1, &gi), 0);
  assert_string_equal(gi.profile->name, "3g.20gb");
  assert_int_equal(gi.span, 4);
  assert_lacks(b->ops->ci_create(b, &err, 0, gi.id, 0, -1, NULL), &err,
               "nvmlComputeInstanceGetInfo_v2", "R460");
  assert_int_equal(ctl->ops->ci_list(ctl, &err, 0, gi.id, cis, &n), 0);
  assert_int_equal(n, 0);
  assert_int_equal(b->ops->processes(b, &err, 0, procs, &n), 0);
  close_era(dir, b, ctl);
}

/* CUDA 11.4 (R470): GI placements, readable CIs, no V profile calls (the v1
 * ones serve), no CI placements (R525). */
static void r470_driver_falls_back_or_names_r525(void **state)
{
  const struct gs_geom_model *m = gs_geom_model_find("a100-40gb");
  char dir[GS_TEST_DIR];
  struct gs_backend *b = NULL, *ctl = NULL;
  struct gs_err err = {0};
  struct gs_gi_info gi1, gi3;
  struct gs_ci_info ci, cis[GS_GEOM_MAX_INSTANCES];
  unsigned n = 0;
  (void)state;
  open_era("r470", dir, &b, &ctl);
  assert_int_equal(b->ops->gi_create(b, &err, 0, gs_geom_gi_profile_find(m, "1g.5gb"), 6, &gi1), 0);
  assert_int_equal(gi1.start, 6);
  assert_int_equal(b->ops->gi_create(b, &err, 0, gs_geom_gi_profile_find(m, "3g.20gb"), -1, &gi3), 0);
  assert_int_equal(b->ops->ci_create(b, &err, 0, gi3.id, 0, -1, &ci), 0);
  assert_string_equal(ci.profile.name, "1c.3g.20gb");
  assert_lacks(b->ops->ci_create(b, &err, 0, gi3.id, 0, 1, NULL), &err,
               "nvmlGpuInstanceCreateComputeInstanceWithPlacement", "R525");
  gs_err_clear(&err);
  assert_int_equal(b->ops->ci_list(b, &err, 0, gi3.id, cis, &n), 0);
  assert_int_equal(n, 1);
  assert_int_equal(cis[0].start, ci.start);
  close_era(dir, b, ctl);
}

/* No --backend: NVML when it works, else the emulator with the reason kept. */
static void default_falls_back_to_the_emulator(void **state)
{
  char dir[GS_TEST_DIR], state_path[GS_TEST_PATH];
  struct gs_backend_config cfg = {.nvml_library = "/nonexistent/libnvidia-ml.so.1"};
  struct gs_err err = {0};
  struct gs_backend *b = NULL;
  (void)state;
  assert_int_equal(gs_test_mkdtemp("nvml-default", dir), 0);
  cfg.state_path = gs_test_join(state_path, dir, "emu.json");
  assert_int_equal(gs_backend_open(&err, &cfg, &b), 0);
  assert_string_equal(b->ops->name, "emu");
  assert_string_equal(b->why_emulated, "cannot load /nonexistent/libnvidia-ml.so.1");
  gs_backend_close(b);
  gs_test_rmtree(dir);
}

/* One refusal of NVML's through the nvml backend: our code for it, which the
 * CLI prints as NVML's name, NVML's own text (from the library's
 * nvmlErrorString) and the usual fix. */
static void assert_refusal(int rc, const struct gs_err *err, int code, const char *nvml_name,
                           const char *fix)
{
  if (rc != code || err->code != code)
    fail_msg("returned %d (gs_err %d, \"%s\"), want %s", rc, err->code, err->msg, nvml_name);
  assert_string_equal(gs_backend_code_nvml_name(code), nvml_name);
  assert_says(err, gs_backend_code_text(code));
  assert_says(err, fix);
}

/* The refusals a MIG admin meets, from nvml-emu standing in for the driver. */
static void nvml_errors_carry_code_text_and_fix(void **state)
{
  const char *lib = getenv("GS_NVML_EMU");
  const struct gs_geom_model *m = gs_geom_model_find("a100-40gb");
  char dir[GS_TEST_DIR], path[GS_TEST_PATH];
  struct gs_err err = {0};
  struct gs_backend *b = NULL;
  struct gs_gi_info gi;
  struct gs_ci_info ci;
  unsigned n = 0;
  int activation = 0;
  (void)state;
  if (!lib)
    fail_msg("GS_NVML_EMU is not set (ctest sets it)");
  assert_non_null(m);
  assert_int_equal(gs_test_mkdtemp("nvml-errors", dir), 0);
  assert_int_equal(setenv("GPUSLICE_EMU_STATE", gs_test_join(path, dir, "emu.json"), 1), 0);
  assert_int_equal(setenv("GPUSLICE_EMULATE", "a100-40gb", 1), 0);
  assert_int_equal(open_nvml(lib, &err, &b), 0);
  assert_refusal(b->ops->gi_remaining(b, &err, 0, gs_geom_gi_profile_find(m, "1g.5gb"), &n), &err,
                 GS_E_NOT_SUPPORTED, "NVML_ERROR_NOT_SUPPORTED", "gpuslice mig enable");
  assert_int_equal(b->ops->set_mig_mode(b, &err, 0, true, &activation), 0);
  assert_int_equal(activation, 0);
  assert_int_equal(b->ops->gi_create(b, &err, 0, gs_geom_gi_profile_find(m, "7g.40gb"), -1, &gi), 0);
  gs_err_clear(&err);
  assert_refusal(b->ops->gi_create(b, &err, 0, gs_geom_gi_profile_find(m, "1g.5gb"), -1, NULL), &err,
                 GS_E_INSUFFICIENT_RESOURCES, "NVML_ERROR_INSUFFICIENT_RESOURCES", "no room left");
  gs_err_clear(&err);
  assert_int_equal(b->ops->ci_create(b, &err, 0, gi.id, 0, -1, &ci), 0);
  assert_refusal(b->ops->gi_destroy(b, &err, 0, gi.id), &err, GS_E_IN_USE, "NVML_ERROR_IN_USE",
                 "stop the processes");
  gs_err_clear(&err);
  assert_refusal(b->ops->set_mig_mode(b, &err, 0, false, &activation), &err, GS_E_IN_USE,
                 "NVML_ERROR_IN_USE", "destroy its compute instances");
  gs_backend_close(b);
  unsetenv("GPUSLICE_EMU_STATE");
  unsetenv("GPUSLICE_EMULATE");
  gs_test_rmtree(dir);
}

static void unknown_backend_is_invalid_argument(void **state)
{
  struct gs_backend_config cfg = {.kind = "cuda"};
  struct gs_err err = {0};
  struct gs_backend *b = NULL;
  (void)state;
  assert_int_equal(gs_backend_open(&err, &cfg, &b), GS_E_INVALID_ARGUMENT);
  assert_says(&err, "'cuda'");
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(missing_library_is_library_not_found),
      cmocka_unit_test(library_without_nvml_is_function_not_found),
      cmocka_unit_test(failing_init_is_driver_not_loaded),
      cmocka_unit_test(no_gpu_is_not_found),
      cmocka_unit_test(old_driver_opens_and_names_what_it_lacks),
      cmocka_unit_test(r455_driver_falls_back_or_names_r460),
      cmocka_unit_test(r470_driver_falls_back_or_names_r525),
      cmocka_unit_test(default_falls_back_to_the_emulator),
      cmocka_unit_test(unknown_backend_is_invalid_argument),
      cmocka_unit_test(nvml_errors_carry_code_text_and_fix),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
