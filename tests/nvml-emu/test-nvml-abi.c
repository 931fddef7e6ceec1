/* SPDX-License-Identifier: Apache-2.0 */
/* test-nvml-abi.c: pins src/backend/nvml_abi.h, our own declaration of the NVML
 * ABI subset, to NVML's published ABI: every struct size and field offset on
 * x86-64 (LP64), every struct-version value, nvmlReturn_t value, profile enum,
 * buffer size, MIG mode and device-fact constant, every entry point's C type
 * and symbol name. The expected numbers are written out by hand from
 * shared/reference/mig-facts.md §2, §5, §6 and NVML's header (API version 13).
 *
 * The header they were checked against: NVIDIA's nvml.h as NVIDIA/go-nvml
 * keeps it, gen/nvml/nvml.h at commit 2f9e261f (NVML_API_VERSION 13, line
 * 111; pkg/nvml/nvml.h there is go-nvml's edit, handles wrapped in structs).
 * scripts/check-nvml-abi.py compiled both headers and found all 368 sizes,
 * offsets, constants, enum values and struct-version macros of nvml_abi.h
 * equal, all 72 prototypes compatible, and all 412 functions nvml.h declares
 * exported by nvml-emu. Where in that header: NVML_STRUCT_VERSION (sizeof |
 * ver << 24) line 141; nvmlPciInfo_t 196, nvmlMemory_v2_t 268,
 * nvmlProcessInfo_v2_t / nvmlProcessInfo_t 304, nvmlDeviceAttributes_t 362,
 * nvmlBrandType_t 910, nvmlReturn_t 1295, nvmlTemperature_v1 5996, the GPU
 * instance profile enums 12496, nvmlGpuInstanceProfileInfo_v2_t 12581 (its
 * version macro 12601), _v3_t 12609, nvmlGpuInstanceInfo_t 12631, the compute
 * instance profile enums 12645, nvmlComputeInstanceProfileInfo_v2_t 12689,
 * _v3_t 12715, nvmlComputeInstanceInfo_t 12736; the MIG functions from
 * nvmlDeviceSetMigMode on (line 12780 onwards), the legacy v1 names at 14533. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/nvml_abi.h"
#include "util/util.h"

#if defined(__x86_64__) && defined(__LP64__)
#define ABI_X86_64 1
#else
#define ABI_X86_64 0
#endif

/* One expected number: what, the value nvml_abi.h gives, the value NVML has. */
struct want {
  const char *what;
  unsigned long long got, want;
};

/* Reports every mismatch of a table (not only the first), then fails once;
 * `whose` names where the wanted values come from. */
static void check_table_from(const char *table, const char *whose, const struct want *w, size_t n)
{
  unsigned bad = 0;
  for (size_t i = 0; i < n; i++) {
    if (w[i].got == w[i].want)
      continue;
    print_error("%s: %s is %llu (0x%llx); %s is %llu (0x%llx)\n", table, w[i].what, w[i].got,
                w[i].got, whose, w[i].want, w[i].want);
    bad++;
  }
  if (bad)
    fail_msg("%s: %u of %zu values differ from %s", table, bad, n, whose);
}

static void check_table(const char *table, const struct want *w, size_t n)
{
  check_table_from(table, "NVML's", w, n);
}

#define SIZE(T, n) {"sizeof(" #T ")", sizeof(T), (n)}
#define OFF(T, f, n) {"offsetof(" #T ", " #f ")", offsetof(T, f), (n)}
#define VAL(c, n) {#c, (unsigned long long)(c), (n)}
/* A constant nvml_abi.h does not define: reported as a mismatch, so the
 * omission fails this test instead of stopping every other test's build. */
#define ABSENT(c, n) {#c " (not defined in nvml_abi.h)", ~0ULL, (n)}

static void skip_unless_x86_64(void)
{
  if (ABI_X86_64)
    return;
  print_message("SKIPPED: the expected sizes and offsets are those of x86-64 (LP64); this "
                "build targets another ABI\n");
  skip();
}

/* ---- layouts (x86-64: unsigned int 4, unsigned long long 8 aligned 8,
 * pointers 8; offsets computed by hand from the header's field order) ---- */

#if ABI_X86_64
/* Compile-time copies of the sizes, so a broken layout stops the build. */
_Static_assert(sizeof(nvmlPciInfo_t) == 68, "nvmlPciInfo_t");
_Static_assert(sizeof(nvmlMemory_t) == 24, "nvmlMemory_t");
_Static_assert(sizeof(nvmlMemory_v2_t) == 40, "nvmlMemory_v2_t");
_Static_assert(sizeof(nvmlProcessInfo_t) == 24, "nvmlProcessInfo_t");
_Static_assert(sizeof(nvmlDeviceAttributes_t) == 40, "nvmlDeviceAttributes_t");
_Static_assert(sizeof(nvmlGpuInstancePlacement_t) == 8, "nvmlGpuInstancePlacement_t");
_Static_assert(sizeof(nvmlGpuInstanceProfileInfo_t) == 48, "nvmlGpuInstanceProfileInfo_t");
_Static_assert(sizeof(nvmlGpuInstanceProfileInfo_v2_t) == 152, "nvmlGpuInstanceProfileInfo_v2_t");
_Static_assert(sizeof(nvmlGpuInstanceProfileInfo_v3_t) == 152, "nvmlGpuInstanceProfileInfo_v3_t");
_Static_assert(sizeof(nvmlGpuInstanceInfo_t) == 24, "nvmlGpuInstanceInfo_t");
_Static_assert(sizeof(nvmlComputeInstancePlacement_t) == 8, "nvmlComputeInstancePlacement_t");
_Static_assert(sizeof(nvmlComputeInstanceProfileInfo_t) == 36, "nvmlComputeInstanceProfileInfo_t");
_Static_assert(sizeof(nvmlComputeInstanceProfileInfo_v2_t) == 136,
               "nvmlComputeInstanceProfileInfo_v2_t");
_Static_assert(sizeof(nvmlComputeInstanceProfileInfo_v3_t) == 140,
               "nvmlComputeInstanceProfileInfo_v3_t");
_Static_assert(sizeof(nvmlComputeInstanceInfo_t) == 32, "nvmlComputeInstanceInfo_t");
_Static_assert(sizeof(nvmlTemperature_v1_t) == 12, "nvmlTemperature_v1_t");
#endif

/* Handles and the return type: header typedefs (pointers to incomplete
 * structs; nvmlReturn_t an enum, passed as int). */
static void test_handles_and_return_type(void **state)
{
  const struct want w[] = {
      SIZE(nvmlDevice_t, 8),
      SIZE(nvmlGpuInstance_t, 8),
      SIZE(nvmlComputeInstance_t, 8),
      SIZE(nvmlReturn_t, 4),
  };
  (void)state;
  skip_unless_x86_64();
  check_table("handles", w, GS_NITEMS(w));
}

/* Device structs: header nvmlPciInfo_t (busIdLegacy[16] first, busId[32]
 * last), nvmlMemory_t, nvmlMemory_v2_t, nvmlUtilization_t,
 * nvmlProcessInfo_v1_t/_v2_t, nvmlDeviceAttributes_t (reference §6.2). */
static void test_device_struct_layouts(void **state)
{
  const struct want w[] = {
      SIZE(nvmlPciInfo_t, 68),
      OFF(nvmlPciInfo_t, busIdLegacy, 0),
      OFF(nvmlPciInfo_t, domain, 16),
      OFF(nvmlPciInfo_t, bus, 20),
      OFF(nvmlPciInfo_t, device, 24),
      OFF(nvmlPciInfo_t, pciDeviceId, 28),
      OFF(nvmlPciInfo_t, pciSubSystemId, 32),
      OFF(nvmlPciInfo_t, busId, 36),
      SIZE(nvmlMemory_t, 24),
      OFF(nvmlMemory_t, total, 0),
      OFF(nvmlMemory_t, free, 8),
      OFF(nvmlMemory_t, used, 16),
      /* 4 bytes of padding after version */
      SIZE(nvmlMemory_v2_t, 40),
      OFF(nvmlMemory_v2_t, version, 0),
      OFF(nvmlMemory_v2_t, total, 8),
      OFF(nvmlMemory_v2_t, reserved, 16),
      OFF(nvmlMemory_v2_t, free, 24),
      OFF(nvmlMemory_v2_t, used, 32),
      SIZE(nvmlUtilization_t, 8),
      OFF(nvmlUtilization_t, gpu, 0),
      OFF(nvmlUtilization_t, memory, 4),
      SIZE(nvmlProcessInfo_v1_t, 16),
      OFF(nvmlProcessInfo_v1_t, pid, 0),
      OFF(nvmlProcessInfo_v1_t, usedGpuMemory, 8),
      /* nvmlProcessInfo_t is the v2 layout (header: one typedef names both) */
      SIZE(nvmlProcessInfo_v2_t, 24),
      SIZE(nvmlProcessInfo_t, 24),
      OFF(nvmlProcessInfo_t, pid, 0),
      OFF(nvmlProcessInfo_t, usedGpuMemory, 8),
      OFF(nvmlProcessInfo_t, gpuInstanceId, 16),
      OFF(nvmlProcessInfo_t, computeInstanceId, 20),
      SIZE(nvmlDeviceAttributes_t, 40),
      OFF(nvmlDeviceAttributes_t, multiprocessorCount, 0),
      OFF(nvmlDeviceAttributes_t, sharedCopyEngineCount, 4),
      OFF(nvmlDeviceAttributes_t, sharedDecoderCount, 8),
      OFF(nvmlDeviceAttributes_t, sharedEncoderCount, 12),
      OFF(nvmlDeviceAttributes_t, sharedJpegCount, 16),
      OFF(nvmlDeviceAttributes_t, sharedOfaCount, 20),
      OFF(nvmlDeviceAttributes_t, gpuInstanceSliceCount, 24),
      OFF(nvmlDeviceAttributes_t, computeInstanceSliceCount, 28),
      OFF(nvmlDeviceAttributes_t, memorySizeMB, 32),
      /* header nvmlTemperature_v1_t: version, sensorType (an enum), int */
      SIZE(nvmlTemperature_v1_t, 12),
      SIZE(nvmlTemperature_t, 12),
      OFF(nvmlTemperature_v1_t, version, 0),
      OFF(nvmlTemperature_v1_t, sensorType, 4),
      OFF(nvmlTemperature_v1_t, temperature, 8),
      SIZE(nvmlTemperatureSensors_t, 4),
      SIZE(nvmlBrandType_t, 4),
      SIZE(nvmlDeviceArchitecture_t, 4),
  };
  (void)state;
  skip_unless_x86_64();
  check_table("device structs", w, GS_NITEMS(w));
}

/* GPU-instance structs: reference §6.2 (v1 48 bytes; v2 has 4 bytes of
 * padding before memorySizeMB at 48 and name at 56; v3 drops isP2pSupported,
 * memorySizeMB at 40, name at 48, capabilities at 144, size 152) and the
 * header's nvmlGpuInstancePlacement_t / nvmlGpuInstanceInfo_t. */
static void test_gpu_instance_layouts(void **state)
{
  const struct want w[] = {
      SIZE(nvmlGpuInstancePlacement_t, 8),
      OFF(nvmlGpuInstancePlacement_t, start, 0),
      OFF(nvmlGpuInstancePlacement_t, size, 4),
      SIZE(nvmlGpuInstanceProfileInfo_t, 48),
      OFF(nvmlGpuInstanceProfileInfo_t, id, 0),
      OFF(nvmlGpuInstanceProfileInfo_t, isP2pSupported, 4),
      OFF(nvmlGpuInstanceProfileInfo_t, sliceCount, 8),
      OFF(nvmlGpuInstanceProfileInfo_t, instanceCount, 12),
      OFF(nvmlGpuInstanceProfileInfo_t, multiprocessorCount, 16),
      OFF(nvmlGpuInstanceProfileInfo_t, copyEngineCount, 20),
      OFF(nvmlGpuInstanceProfileInfo_t, decoderCount, 24),
      OFF(nvmlGpuInstanceProfileInfo_t, encoderCount, 28),
      OFF(nvmlGpuInstanceProfileInfo_t, jpegCount, 32),
      OFF(nvmlGpuInstanceProfileInfo_t, ofaCount, 36),
      OFF(nvmlGpuInstanceProfileInfo_t, memorySizeMB, 40),
      SIZE(nvmlGpuInstanceProfileInfo_v2_t, 152),
      OFF(nvmlGpuInstanceProfileInfo_v2_t, version, 0),
      OFF(nvmlGpuInstanceProfileInfo_v2_t, id, 4),
      OFF(nvmlGpuInstanceProfileInfo_v2_t, isP2pSupported, 8),
      OFF(nvmlGpuInstanceProfileInfo_v2_t, sliceCount, 12),
      OFF(nvmlGpuInstanceProfileInfo_v2_t, instanceCount, 16),
      OFF(nvmlGpuInstanceProfileInfo_v2_t, multiprocessorCount, 20),
      OFF(nvmlGpuInstanceProfileInfo_v2_t, copyEngineCount, 24),
      OFF(nvmlGpuInstanceProfileInfo_v2_t, decoderCount, 28),
      OFF(nvmlGpuInstanceProfileInfo_v2_t, encoderCount, 32),
      OFF(nvmlGpuInstanceProfileInfo_v2_t, jpegCount, 36),
      OFF(nvmlGpuInstanceProfileInfo_v2_t, ofaCount, 40),
      OFF(nvmlGpuInstanceProfileInfo_v2_t, memorySizeMB, 48),
      OFF(nvmlGpuInstanceProfileInfo_v2_t, name, 56),
      SIZE(nvmlGpuInstanceProfileInfo_v3_t, 152),
      OFF(nvmlGpuInstanceProfileInfo_v3_t, version, 0),
      OFF(nvmlGpuInstanceProfileInfo_v3_t, id, 4),
      OFF(nvmlGpuInstanceProfileInfo_v3_t, sliceCount, 8),
      OFF(nvmlGpuInstanceProfileInfo_v3_t, instanceCount, 12),
      OFF(nvmlGpuInstanceProfileInfo_v3_t, multiprocessorCount, 16),
      OFF(nvmlGpuInstanceProfileInfo_v3_t, copyEngineCount, 20),
      OFF(nvmlGpuInstanceProfileInfo_v3_t, decoderCount, 24),
      OFF(nvmlGpuInstanceProfileInfo_v3_t, encoderCount, 28),
      OFF(nvmlGpuInstanceProfileInfo_v3_t, jpegCount, 32),
      OFF(nvmlGpuInstanceProfileInfo_v3_t, ofaCount, 36),
      OFF(nvmlGpuInstanceProfileInfo_v3_t, memorySizeMB, 40),
      OFF(nvmlGpuInstanceProfileInfo_v3_t, name, 48),
      OFF(nvmlGpuInstanceProfileInfo_v3_t, capabilities, 144),
      SIZE(nvmlGpuInstanceInfo_t, 24),
      OFF(nvmlGpuInstanceInfo_t, device, 0),
      OFF(nvmlGpuInstanceInfo_t, id, 8),
      OFF(nvmlGpuInstanceInfo_t, profileId, 12),
      OFF(nvmlGpuInstanceInfo_t, placement, 16),
      OFF(nvmlGpuInstanceInfo_t, placement.start, 16),
      OFF(nvmlGpuInstanceInfo_t, placement.size, 20),
  };
  (void)state;
  skip_unless_x86_64();
  check_table("GPU-instance structs", w, GS_NITEMS(w));
}

/* Compute-instance structs: reference §6.2 (v1 nine uints, 36; v2 version +
 * nine uints + name[96], 136; v3 adds capabilities, 140; Info 32 with two
 * handles first) and the header's nvmlComputeInstancePlacement_t. */
static void test_compute_instance_layouts(void **state)
{
  const struct want w[] = {
      SIZE(nvmlComputeInstancePlacement_t, 8),
      OFF(nvmlComputeInstancePlacement_t, start, 0),
      OFF(nvmlComputeInstancePlacement_t, size, 4),
      SIZE(nvmlComputeInstanceProfileInfo_t, 36),
      OFF(nvmlComputeInstanceProfileInfo_t, id, 0),
      OFF(nvmlComputeInstanceProfileInfo_t, sliceCount, 4),
      OFF(nvmlComputeInstanceProfileInfo_t, instanceCount, 8),
      OFF(nvmlComputeInstanceProfileInfo_t, multiprocessorCount, 12),
      OFF(nvmlComputeInstanceProfileInfo_t, sharedCopyEngineCount, 16),
      OFF(nvmlComputeInstanceProfileInfo_t, sharedDecoderCount, 20),
      OFF(nvmlComputeInstanceProfileInfo_t, sharedEncoderCount, 24),
      OFF(nvmlComputeInstanceProfileInfo_t, sharedJpegCount, 28),
      OFF(nvmlComputeInstanceProfileInfo_t, sharedOfaCount, 32),
      SIZE(nvmlComputeInstanceProfileInfo_v2_t, 136),
      OFF(nvmlComputeInstanceProfileInfo_v2_t, version, 0),
      OFF(nvmlComputeInstanceProfileInfo_v2_t, id, 4),
      OFF(nvmlComputeInstanceProfileInfo_v2_t, sliceCount, 8),
      OFF(nvmlComputeInstanceProfileInfo_v2_t, instanceCount, 12),
      OFF(nvmlComputeInstanceProfileInfo_v2_t, multiprocessorCount, 16),
      OFF(nvmlComputeInstanceProfileInfo_v2_t, sharedCopyEngineCount, 20),
      OFF(nvmlComputeInstanceProfileInfo_v2_t, sharedDecoderCount, 24),
      OFF(nvmlComputeInstanceProfileInfo_v2_t, sharedEncoderCount, 28),
      OFF(nvmlComputeInstanceProfileInfo_v2_t, sharedJpegCount, 32),
      OFF(nvmlComputeInstanceProfileInfo_v2_t, sharedOfaCount, 36),
      OFF(nvmlComputeInstanceProfileInfo_v2_t, name, 40),
      SIZE(nvmlComputeInstanceProfileInfo_v3_t, 140),
      OFF(nvmlComputeInstanceProfileInfo_v3_t, version, 0),
      OFF(nvmlComputeInstanceProfileInfo_v3_t, id, 4),
      OFF(nvmlComputeInstanceProfileInfo_v3_t, sliceCount, 8),
      OFF(nvmlComputeInstanceProfileInfo_v3_t, instanceCount, 12),
      OFF(nvmlComputeInstanceProfileInfo_v3_t, multiprocessorCount, 16),
      OFF(nvmlComputeInstanceProfileInfo_v3_t, sharedCopyEngineCount, 20),
      OFF(nvmlComputeInstanceProfileInfo_v3_t, sharedDecoderCount, 24),
      OFF(nvmlComputeInstanceProfileInfo_v3_t, sharedEncoderCount, 28),
      OFF(nvmlComputeInstanceProfileInfo_v3_t, sharedJpegCount, 32),
      OFF(nvmlComputeInstanceProfileInfo_v3_t, sharedOfaCount, 36),
      OFF(nvmlComputeInstanceProfileInfo_v3_t, name, 40),
      OFF(nvmlComputeInstanceProfileInfo_v3_t, capabilities, 136),
      SIZE(nvmlComputeInstanceInfo_t, 32),
      OFF(nvmlComputeInstanceInfo_t, device, 0),
      OFF(nvmlComputeInstanceInfo_t, gpuInstance, 8),
      OFF(nvmlComputeInstanceInfo_t, id, 16),
      OFF(nvmlComputeInstanceInfo_t, profileId, 20),
      OFF(nvmlComputeInstanceInfo_t, placement, 24),
      OFF(nvmlComputeInstanceInfo_t, placement.start, 24),
      OFF(nvmlComputeInstanceInfo_t, placement.size, 28),
  };
  (void)state;
  skip_unless_x86_64();
  check_table("compute-instance structs", w, GS_NITEMS(w));
}

/* ---- values (the same on every ABI) ---- */

/* Struct versions: reference §6.2 table "Macro | Value" (sizeof | v << 24).
 * They encode x86-64 sizes, so they are pinned there; elsewhere only the
 * version byte is. */
#if ABI_X86_64
_Static_assert(nvmlGpuInstanceProfileInfo_v2 == 0x02000098u, "nvmlGpuInstanceProfileInfo_v2");
_Static_assert(nvmlGpuInstanceProfileInfo_v3 == 0x03000098u, "nvmlGpuInstanceProfileInfo_v3");
_Static_assert(nvmlComputeInstanceProfileInfo_v2 == 0x02000088u,
               "nvmlComputeInstanceProfileInfo_v2");
_Static_assert(nvmlComputeInstanceProfileInfo_v3 == 0x0300008Cu,
               "nvmlComputeInstanceProfileInfo_v3");
_Static_assert(nvmlMemory_v2 == 0x02000028u, "nvmlMemory_v2");
_Static_assert(nvmlTemperature_v1 == 0x0100000Cu, "nvmlTemperature_v1");
#endif

static void test_struct_versions(void **state)
{
  const struct want bytes[] = {
      VAL(nvmlGpuInstanceProfileInfo_v2 >> 24, 2),
      VAL(nvmlGpuInstanceProfileInfo_v3 >> 24, 3),
      VAL(nvmlComputeInstanceProfileInfo_v2 >> 24, 2),
      VAL(nvmlComputeInstanceProfileInfo_v3 >> 24, 3),
      VAL(nvmlMemory_v2 >> 24, 2),
      VAL(nvmlTemperature_v1 >> 24, 1),
  };
  const struct want w[] = {
      VAL(nvmlGpuInstanceProfileInfo_v2, 0x02000098),
      VAL(nvmlGpuInstanceProfileInfo_v3, 0x03000098),
      VAL(nvmlComputeInstanceProfileInfo_v2, 0x02000088),
      VAL(nvmlComputeInstanceProfileInfo_v3, 0x0300008C),
      VAL(nvmlMemory_v2, 0x02000028),
      /* header nvmlTemperature_v1: 12 bytes, version 1 */
      VAL(nvmlTemperature_v1, 0x0100000C),
  };
  (void)state;
  check_table("struct version bytes", bytes, GS_NITEMS(bytes));
  skip_unless_x86_64();
  check_table("struct versions", w, GS_NITEMS(w));
}

/* nvmlReturn_t: reference §6.3 (every code from 0 to 30, and 999). */
static void test_return_codes(void **state)
{
  const struct want w[] = {
      VAL(NVML_SUCCESS, 0),
      VAL(NVML_ERROR_UNINITIALIZED, 1),
      VAL(NVML_ERROR_INVALID_ARGUMENT, 2),
      VAL(NVML_ERROR_NOT_SUPPORTED, 3),
      VAL(NVML_ERROR_NO_PERMISSION, 4),
      VAL(NVML_ERROR_ALREADY_INITIALIZED, 5),
      VAL(NVML_ERROR_NOT_FOUND, 6),
      VAL(NVML_ERROR_INSUFFICIENT_SIZE, 7),
      VAL(NVML_ERROR_INSUFFICIENT_POWER, 8),
      VAL(NVML_ERROR_DRIVER_NOT_LOADED, 9),
      VAL(NVML_ERROR_TIMEOUT, 10),
      VAL(NVML_ERROR_IRQ_ISSUE, 11),
      VAL(NVML_ERROR_LIBRARY_NOT_FOUND, 12),
      VAL(NVML_ERROR_FUNCTION_NOT_FOUND, 13),
      VAL(NVML_ERROR_CORRUPTED_INFOROM, 14),
      VAL(NVML_ERROR_GPU_IS_LOST, 15),
      VAL(NVML_ERROR_RESET_REQUIRED, 16),
      VAL(NVML_ERROR_OPERATING_SYSTEM, 17),
      VAL(NVML_ERROR_LIB_RM_VERSION_MISMATCH, 18),
      VAL(NVML_ERROR_IN_USE, 19),
      VAL(NVML_ERROR_MEMORY, 20),
      VAL(NVML_ERROR_NO_DATA, 21),
      VAL(NVML_ERROR_VGPU_ECC_NOT_SUPPORTED, 22),
      VAL(NVML_ERROR_INSUFFICIENT_RESOURCES, 23),
      VAL(NVML_ERROR_FREQ_NOT_SUPPORTED, 24),
      VAL(NVML_ERROR_ARGUMENT_VERSION_MISMATCH, 25),
      VAL(NVML_ERROR_DEPRECATED, 26),
      VAL(NVML_ERROR_NOT_READY, 27),
      VAL(NVML_ERROR_GPU_NOT_FOUND, 28),
      VAL(NVML_ERROR_INVALID_STATE, 29),
      VAL(NVML_ERROR_RESET_TYPE_NOT_SUPPORTED, 30),
      VAL(NVML_ERROR_UNKNOWN, 999),
  };
  (void)state;
  check_table("nvmlReturn_t", w, GS_NITEMS(w));
}

/* Our codes carry NVML's values (util.h's table, pinned by hand in
 * tests/util/test-util-err.c): the backends translate through both, so they
 * must agree with nvml_abi.h's enum. */
static void test_gs_codes_match_nvml(void **state)
{
  const struct want w[] = {
      VAL(gs_backend_code_nvml(GS_E_UNINITIALIZED), NVML_ERROR_UNINITIALIZED),
      VAL(gs_backend_code_nvml(GS_E_INVALID_ARGUMENT), NVML_ERROR_INVALID_ARGUMENT),
      VAL(gs_backend_code_nvml(GS_E_NOT_SUPPORTED), NVML_ERROR_NOT_SUPPORTED),
      VAL(gs_backend_code_nvml(GS_E_NO_PERMISSION), NVML_ERROR_NO_PERMISSION),
      VAL(gs_backend_code_nvml(GS_E_NOT_FOUND), NVML_ERROR_NOT_FOUND),
      VAL(gs_backend_code_nvml(GS_E_INSUFFICIENT_SIZE), NVML_ERROR_INSUFFICIENT_SIZE),
      VAL(gs_backend_code_nvml(GS_E_DRIVER_NOT_LOADED), NVML_ERROR_DRIVER_NOT_LOADED),
      VAL(gs_backend_code_nvml(GS_E_LIBRARY_NOT_FOUND), NVML_ERROR_LIBRARY_NOT_FOUND),
      VAL(gs_backend_code_nvml(GS_E_FUNCTION_NOT_FOUND), NVML_ERROR_FUNCTION_NOT_FOUND),
      VAL(gs_backend_code_nvml(GS_E_GPU_IS_LOST), NVML_ERROR_GPU_IS_LOST),
      VAL(gs_backend_code_nvml(GS_E_RESET_REQUIRED), NVML_ERROR_RESET_REQUIRED),
      VAL(gs_backend_code_nvml(GS_E_IN_USE), NVML_ERROR_IN_USE),
      VAL(gs_backend_code_nvml(GS_E_NO_MEMORY), NVML_ERROR_MEMORY),
      VAL(gs_backend_code_nvml(GS_E_INSUFFICIENT_RESOURCES), NVML_ERROR_INSUFFICIENT_RESOURCES),
      VAL(gs_backend_code_nvml(GS_E_ARGUMENT_VERSION_MISMATCH), NVML_ERROR_ARGUMENT_VERSION_MISMATCH),
      VAL(gs_backend_code_nvml(GS_E_UNKNOWN), NVML_ERROR_UNKNOWN),
  };
  (void)state;
  check_table_from("util.h codes", "nvml_abi.h's", w, GS_NITEMS(w));
}

/* NVML_GPU_INSTANCE_PROFILE_*: reference §2.1 (0x0..0x11, COUNT 0x12) and
 * its capability bits (P2P 0x1, GFX 0x2). */
static void test_gpu_instance_profiles(void **state)
{
  const struct want w[] = {
      VAL(NVML_GPU_INSTANCE_PROFILE_1_SLICE, 0x0),
      VAL(NVML_GPU_INSTANCE_PROFILE_2_SLICE, 0x1),
      VAL(NVML_GPU_INSTANCE_PROFILE_3_SLICE, 0x2),
      VAL(NVML_GPU_INSTANCE_PROFILE_4_SLICE, 0x3),
      VAL(NVML_GPU_INSTANCE_PROFILE_7_SLICE, 0x4),
      VAL(NVML_GPU_INSTANCE_PROFILE_8_SLICE, 0x5),
      VAL(NVML_GPU_INSTANCE_PROFILE_6_SLICE, 0x6),
      VAL(NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1, 0x7),
      VAL(NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1, 0x8),
      VAL(NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2, 0x9),
      VAL(NVML_GPU_INSTANCE_PROFILE_1_SLICE_GFX, 0xA),
      VAL(NVML_GPU_INSTANCE_PROFILE_2_SLICE_GFX, 0xB),
      VAL(NVML_GPU_INSTANCE_PROFILE_4_SLICE_GFX, 0xC),
      VAL(NVML_GPU_INSTANCE_PROFILE_1_SLICE_NO_ME, 0xD),
      VAL(NVML_GPU_INSTANCE_PROFILE_2_SLICE_NO_ME, 0xE),
      VAL(NVML_GPU_INSTANCE_PROFILE_1_SLICE_ALL_ME, 0xF),
      VAL(NVML_GPU_INSTANCE_PROFILE_2_SLICE_ALL_ME, 0x10),
      VAL(NVML_GPU_INSTANCE_PROFILE_3_SLICE_GFX, 0x11),
      VAL(NVML_GPU_INSTANCE_PROFILE_COUNT, 0x12),
      VAL(NVML_GPU_INSTANCE_PROFILE_CAPS_P2P, 0x1),
      VAL(NVML_GPU_INSTANCE_PROFILE_CAPS_GFX, 0x2),
  };
  (void)state;
  check_table("GPU-instance profiles", w, GS_NITEMS(w));
}

/* NVML_COMPUTE_INSTANCE_PROFILE_*: reference §5.1 (0x0..0x8 with
 * 7_SLICE_NVL = 0x8, COUNT 0x9; engine profile SHARED 0x0, COUNT 0x1) and
 * §2.1 (NVML_COMPUTE_INSTANCE_PROFILE_CAPS_GFX = 0x1). */
static void test_compute_instance_profiles(void **state)
{
  const struct want w[] = {
      VAL(NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE, 0x0),
      VAL(NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE, 0x1),
      VAL(NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE, 0x2),
      VAL(NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE, 0x3),
      VAL(NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE, 0x4),
      VAL(NVML_COMPUTE_INSTANCE_PROFILE_8_SLICE, 0x5),
      VAL(NVML_COMPUTE_INSTANCE_PROFILE_6_SLICE, 0x6),
      VAL(NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE_REV1, 0x7),
#ifdef NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE_NVL
      VAL(NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE_NVL, 0x8),
#else
      ABSENT(NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE_NVL, 0x8),
#endif
      VAL(NVML_COMPUTE_INSTANCE_PROFILE_COUNT, 0x9),
      VAL(NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, 0x0),
      VAL(NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_COUNT, 0x1),
#ifdef NVML_COMPUTE_INSTANCE_PROFILE_CAPS_GFX
      VAL(NVML_COMPUTE_INSTANCE_PROFILE_CAPS_GFX, 0x1),
#else
      ABSENT(NVML_COMPUTE_INSTANCE_PROFILE_CAPS_GFX, 0x1),
#endif
  };
  (void)state;
  check_table("compute-instance profiles", w, GS_NITEMS(w));
}

/* Buffer sizes: reference §6.1 (name v2 96, UUID 80 / v2 96) and the header's
 * NVML_DEVICE_*_BUFFER_SIZE, NVML_SYSTEM_*_BUFFER_SIZE and PCI bus ID sizes. */
static void test_buffer_sizes(void **state)
{
  const struct want w[] = {
      VAL(NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE, 32),
      VAL(NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE, 16),
      VAL(NVML_DEVICE_UUID_BUFFER_SIZE, 80),
      VAL(NVML_DEVICE_UUID_V2_BUFFER_SIZE, 96),
      VAL(NVML_DEVICE_NAME_BUFFER_SIZE, 64),
      VAL(NVML_DEVICE_NAME_V2_BUFFER_SIZE, 96),
      VAL(NVML_DEVICE_SERIAL_BUFFER_SIZE, 30),
      VAL(NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE, 80),
      VAL(NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE, 80),
      /* the arrays sized by them (header field declarations) */
      VAL(sizeof(((nvmlPciInfo_t *)0)->busIdLegacy), 16),
      VAL(sizeof(((nvmlPciInfo_t *)0)->busId), 32),
      VAL(sizeof(((nvmlGpuInstanceProfileInfo_v2_t *)0)->name), 96),
      VAL(sizeof(((nvmlGpuInstanceProfileInfo_v3_t *)0)->name), 96),
      VAL(sizeof(((nvmlComputeInstanceProfileInfo_v2_t *)0)->name), 96),
      VAL(sizeof(((nvmlComputeInstanceProfileInfo_v3_t *)0)->name), 96),
  };
  (void)state;
  check_table("buffer sizes", w, GS_NITEMS(w));
}

/* MIG mode and init flags: reference §6.3 (NVML_DEVICE_MIG_DISABLE 0,
 * _ENABLE 1) and §6.1 (nvmlInitWithFlags: NO_GPUS 1, NO_ATTACH 2). */
static void test_mig_mode_and_init_flags(void **state)
{
  const struct want w[] = {
      VAL(NVML_DEVICE_MIG_DISABLE, 0),
      VAL(NVML_DEVICE_MIG_ENABLE, 1),
      VAL(NVML_INIT_FLAG_NO_GPUS, 1),
      VAL(NVML_INIT_FLAG_NO_ATTACH, 2),
  };
  (void)state;
  check_table("MIG mode and init flags", w, GS_NITEMS(w));
}

/* The device facts nvml-emu emulates: the header's nvmlBrandType_t (0..16,
 * VGAMING an alias of CLOUD_GAMING, COUNT 18), NVML_DEVICE_ARCH_* (Kepler 2
 * .. Blackwell 10, Rubin 13, unknown 0xffffffff) and nvmlTemperatureSensors_t. */
static void test_device_facts(void **state)
{
  const struct want w[] = {
      VAL(NVML_BRAND_UNKNOWN, 0),
      VAL(NVML_BRAND_QUADRO, 1),
      VAL(NVML_BRAND_TESLA, 2),
      VAL(NVML_BRAND_NVS, 3),
      VAL(NVML_BRAND_GRID, 4),
      VAL(NVML_BRAND_GEFORCE, 5),
      VAL(NVML_BRAND_TITAN, 6),
      VAL(NVML_BRAND_NVIDIA_VAPPS, 7),
      VAL(NVML_BRAND_NVIDIA_VPC, 8),
      VAL(NVML_BRAND_NVIDIA_VCS, 9),
      VAL(NVML_BRAND_NVIDIA_VWS, 10),
      VAL(NVML_BRAND_NVIDIA_CLOUD_GAMING, 11),
      VAL(NVML_BRAND_NVIDIA_VGAMING, 11),
      VAL(NVML_BRAND_QUADRO_RTX, 12),
      VAL(NVML_BRAND_NVIDIA_RTX, 13),
      VAL(NVML_BRAND_NVIDIA, 14),
      VAL(NVML_BRAND_GEFORCE_RTX, 15),
      VAL(NVML_BRAND_TITAN_RTX, 16),
      VAL(NVML_BRAND_COUNT, 18),
      VAL(NVML_DEVICE_ARCH_KEPLER, 2),
      VAL(NVML_DEVICE_ARCH_MAXWELL, 3),
      VAL(NVML_DEVICE_ARCH_PASCAL, 4),
      VAL(NVML_DEVICE_ARCH_VOLTA, 5),
      VAL(NVML_DEVICE_ARCH_TURING, 6),
      VAL(NVML_DEVICE_ARCH_AMPERE, 7),
      VAL(NVML_DEVICE_ARCH_ADA, 8),
      VAL(NVML_DEVICE_ARCH_HOPPER, 9),
      VAL(NVML_DEVICE_ARCH_BLACKWELL, 10),
      VAL(NVML_DEVICE_ARCH_RUBIN, 13),
      VAL(NVML_DEVICE_ARCH_UNKNOWN, 0xffffffffu),
      VAL(NVML_TEMPERATURE_GPU, 0),
      VAL(NVML_TEMPERATURE_COUNT, 1),
  };
  (void)state;
  check_table("device facts", w, GS_NITEMS(w));
}

/* ---- entry points ---- */

/* The C type of every entry point, written by hand from reference §6.1 and
 * the header's prototypes. _Generic does not evaluate its operand, so no
 * symbol is referenced and this test links without any NVML library. */
#define SIG(fn, type) _Static_assert(_Generic(&fn, type: 1, default: 0), #fn " has the wrong type");
#define R nvmlReturn_t (*)
SIG(nvmlInit_v2, R(void))
SIG(nvmlInitWithFlags, R(unsigned int))
SIG(nvmlShutdown, R(void))
SIG(nvmlSystemGetDriverVersion, R(char *, unsigned int))
SIG(nvmlSystemGetNVMLVersion, R(char *, unsigned int))
SIG(nvmlSystemGetCudaDriverVersion, R(int *))
SIG(nvmlSystemGetCudaDriverVersion_v2, R(int *))
SIG(nvmlDeviceGetCount_v2, R(unsigned int *))
SIG(nvmlDeviceGetHandleByIndex_v2, R(unsigned int, nvmlDevice_t *))
SIG(nvmlDeviceGetHandleByUUID, R(const char *, nvmlDevice_t *))
SIG(nvmlDeviceGetHandleByPciBusId_v2, R(const char *, nvmlDevice_t *))
SIG(nvmlDeviceGetName, R(nvmlDevice_t, char *, unsigned int))
SIG(nvmlDeviceGetUUID, R(nvmlDevice_t, char *, unsigned int))
SIG(nvmlDeviceGetSerial, R(nvmlDevice_t, char *, unsigned int))
SIG(nvmlDeviceGetPciInfo_v3, R(nvmlDevice_t, nvmlPciInfo_t *))
SIG(nvmlDeviceGetIndex, R(nvmlDevice_t, unsigned int *))
SIG(nvmlDeviceGetMinorNumber, R(nvmlDevice_t, unsigned int *))
SIG(nvmlDeviceGetMemoryInfo, R(nvmlDevice_t, nvmlMemory_t *))
SIG(nvmlDeviceGetMemoryInfo_v2, R(nvmlDevice_t, nvmlMemory_v2_t *))
SIG(nvmlDeviceGetUtilizationRates, R(nvmlDevice_t, nvmlUtilization_t *))
SIG(nvmlDeviceGetComputeRunningProcesses_v3, R(nvmlDevice_t, unsigned int *, nvmlProcessInfo_t *))
SIG(nvmlDeviceGetGraphicsRunningProcesses_v3, R(nvmlDevice_t, unsigned int *, nvmlProcessInfo_t *))
SIG(nvmlDeviceGetMigMode, R(nvmlDevice_t, unsigned int *, unsigned int *))
SIG(nvmlDeviceSetMigMode, R(nvmlDevice_t, unsigned int, nvmlReturn_t *))
SIG(nvmlDeviceGetGpuInstanceProfileInfo, R(nvmlDevice_t, unsigned int, nvmlGpuInstanceProfileInfo_t *))
SIG(nvmlDeviceGetGpuInstanceProfileInfoV,
    R(nvmlDevice_t, unsigned int, nvmlGpuInstanceProfileInfo_v2_t *))
SIG(nvmlDeviceGetGpuInstanceProfileInfoByIdV,
    R(nvmlDevice_t, unsigned int, nvmlGpuInstanceProfileInfo_v2_t *))
SIG(nvmlDeviceGetGpuInstancePossiblePlacements_v2,
    R(nvmlDevice_t, unsigned int, nvmlGpuInstancePlacement_t *, unsigned int *))
SIG(nvmlDeviceGetGpuInstanceRemainingCapacity, R(nvmlDevice_t, unsigned int, unsigned int *))
SIG(nvmlDeviceCreateGpuInstance, R(nvmlDevice_t, unsigned int, nvmlGpuInstance_t *))
SIG(nvmlDeviceCreateGpuInstanceWithPlacement,
    R(nvmlDevice_t, unsigned int, const nvmlGpuInstancePlacement_t *, nvmlGpuInstance_t *))
SIG(nvmlGpuInstanceDestroy, R(nvmlGpuInstance_t))
SIG(nvmlDeviceGetGpuInstances, R(nvmlDevice_t, unsigned int, nvmlGpuInstance_t *, unsigned int *))
SIG(nvmlDeviceGetGpuInstanceById, R(nvmlDevice_t, unsigned int, nvmlGpuInstance_t *))
SIG(nvmlGpuInstanceGetInfo, R(nvmlGpuInstance_t, nvmlGpuInstanceInfo_t *))
SIG(nvmlGpuInstanceGetComputeInstanceProfileInfo,
    R(nvmlGpuInstance_t, unsigned int, unsigned int, nvmlComputeInstanceProfileInfo_t *))
SIG(nvmlGpuInstanceGetComputeInstanceProfileInfoV,
    R(nvmlGpuInstance_t, unsigned int, unsigned int, nvmlComputeInstanceProfileInfo_v2_t *))
SIG(nvmlGpuInstanceGetComputeInstanceRemainingCapacity,
    R(nvmlGpuInstance_t, unsigned int, unsigned int *))
SIG(nvmlGpuInstanceGetComputeInstancePossiblePlacements,
    R(nvmlGpuInstance_t, unsigned int, nvmlComputeInstancePlacement_t *, unsigned int *))
SIG(nvmlGpuInstanceCreateComputeInstance, R(nvmlGpuInstance_t, unsigned int, nvmlComputeInstance_t *))
SIG(nvmlGpuInstanceCreateComputeInstanceWithPlacement,
    R(nvmlGpuInstance_t, unsigned int, const nvmlComputeInstancePlacement_t *,
      nvmlComputeInstance_t *))
SIG(nvmlComputeInstanceDestroy, R(nvmlComputeInstance_t))
SIG(nvmlGpuInstanceGetComputeInstances,
    R(nvmlGpuInstance_t, unsigned int, nvmlComputeInstance_t *, unsigned int *))
SIG(nvmlGpuInstanceGetComputeInstanceById, R(nvmlGpuInstance_t, unsigned int, nvmlComputeInstance_t *))
SIG(nvmlComputeInstanceGetInfo_v2, R(nvmlComputeInstance_t, nvmlComputeInstanceInfo_t *))
SIG(nvmlDeviceIsMigDeviceHandle, R(nvmlDevice_t, unsigned int *))
SIG(nvmlDeviceGetGpuInstanceId, R(nvmlDevice_t, unsigned int *))
SIG(nvmlDeviceGetComputeInstanceId, R(nvmlDevice_t, unsigned int *))
SIG(nvmlDeviceGetMaxMigDeviceCount, R(nvmlDevice_t, unsigned int *))
SIG(nvmlDeviceGetMigDeviceHandleByIndex, R(nvmlDevice_t, unsigned int, nvmlDevice_t *))
SIG(nvmlDeviceGetDeviceHandleFromMigDeviceHandle, R(nvmlDevice_t, nvmlDevice_t *))
SIG(nvmlDeviceGetAttributes_v2, R(nvmlDevice_t, nvmlDeviceAttributes_t *))
_Static_assert(_Generic(&nvmlErrorString, const char *(*)(nvmlReturn_t): 1, default: 0),
               "nvmlErrorString has the wrong type");
/* The older names (reference §6.4: the header declares their v1 prototypes
 * when NVML_NO_UNVERSIONED_FUNC_DEFS is defined). */
SIG(nvmlInit, R(void))
SIG(nvmlDeviceGetCount, R(unsigned int *))
SIG(nvmlDeviceGetHandleByIndex, R(unsigned int, nvmlDevice_t *))
SIG(nvmlDeviceGetHandleByPciBusId, R(const char *, nvmlDevice_t *))
SIG(nvmlDeviceGetPciInfo, R(nvmlDevice_t, nvmlPciInfo_t *))
SIG(nvmlDeviceGetPciInfo_v2, R(nvmlDevice_t, nvmlPciInfo_t *))
SIG(nvmlDeviceGetComputeRunningProcesses, R(nvmlDevice_t, unsigned int *, nvmlProcessInfo_v1_t *))
SIG(nvmlDeviceGetComputeRunningProcesses_v2, R(nvmlDevice_t, unsigned int *, nvmlProcessInfo_v2_t *))
SIG(nvmlDeviceGetGraphicsRunningProcesses, R(nvmlDevice_t, unsigned int *, nvmlProcessInfo_v1_t *))
SIG(nvmlDeviceGetGraphicsRunningProcesses_v2, R(nvmlDevice_t, unsigned int *, nvmlProcessInfo_v2_t *))
SIG(nvmlDeviceGetGpuInstancePossiblePlacements,
    R(nvmlDevice_t, unsigned int, nvmlGpuInstancePlacement_t *, unsigned int *))
SIG(nvmlComputeInstanceGetInfo, R(nvmlComputeInstance_t, nvmlComputeInstanceInfo_t *))
SIG(nvmlDeviceGetAttributes, R(nvmlDevice_t, nvmlDeviceAttributes_t *))
/* The device queries nvml-emu answers (header prototypes). */
SIG(nvmlSystemGetProcessName, R(unsigned int, char *, unsigned int))
SIG(nvmlDeviceGetBrand, R(nvmlDevice_t, nvmlBrandType_t *))
SIG(nvmlDeviceGetArchitecture, R(nvmlDevice_t, nvmlDeviceArchitecture_t *))
SIG(nvmlDeviceGetCudaComputeCapability, R(nvmlDevice_t, int *, int *))
SIG(nvmlDeviceGetTemperature, R(nvmlDevice_t, nvmlTemperatureSensors_t, unsigned int *))
SIG(nvmlDeviceGetTemperatureV, R(nvmlDevice_t, nvmlTemperature_t *))
SIG(nvmlDeviceGetPowerUsage, R(nvmlDevice_t, unsigned int *))
SIG(nvmlDeviceGetCpuAffinity, R(nvmlDevice_t, unsigned int, unsigned long *))
SIG(nvmlDeviceGetCpuAffinityWithinScope, R(nvmlDevice_t, unsigned int, unsigned long *, nvmlAffinityScope_t))
#undef R
#undef SIG

/* Symbol names: reference §6.4. Where the header maps an unversioned name to
 * a versioned symbol, the current list must name the versioned one (what a
 * current driver's unversioned macro resolves to); the older names may only
 * appear in the legacy list. */
static const char *const versioned[] = {
    "nvmlInit_v2",
    "nvmlDeviceGetCount_v2",
    "nvmlDeviceGetHandleByIndex_v2",
    "nvmlDeviceGetHandleByPciBusId_v2",
    "nvmlDeviceGetPciInfo_v3",
    "nvmlDeviceGetAttributes_v2",
    "nvmlComputeInstanceGetInfo_v2",
    "nvmlDeviceGetComputeRunningProcesses_v3",
    "nvmlDeviceGetGraphicsRunningProcesses_v3",
    "nvmlDeviceGetGpuInstancePossiblePlacements_v2",
};
static const char *const superseded[] = {
    "nvmlInit",
    "nvmlDeviceGetCount",
    "nvmlDeviceGetHandleByIndex",
    "nvmlDeviceGetHandleByPciBusId",
    "nvmlDeviceGetPciInfo",
    "nvmlDeviceGetPciInfo_v2",
    "nvmlDeviceGetAttributes",
    "nvmlComputeInstanceGetInfo",
    "nvmlDeviceGetComputeRunningProcesses",
    "nvmlDeviceGetComputeRunningProcesses_v2",
    "nvmlDeviceGetGraphicsRunningProcesses",
    "nvmlDeviceGetGraphicsRunningProcesses_v2",
    "nvmlDeviceGetGpuInstancePossiblePlacements",
};

static bool listed_in(const char *name, const char *const *list, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (strcmp(list[i], name) == 0)
      return true;
  return false;
}

static void test_symbol_names(void **state)
{
#define NAME(name, params) #name,
  static const char *const current[] = {GS_NVML_FUNCTIONS(NAME) GS_NVML_EMULATED_FUNCTIONS(NAME)};
  static const char *const legacy[] = {GS_NVML_LEGACY_FUNCTIONS(NAME)};
#undef NAME
  unsigned bad = 0;
  (void)state;
  for (size_t i = 0; i < GS_NITEMS(versioned); i++)
    if (!listed_in(versioned[i], current, GS_NITEMS(current))) {
      print_error("GS_NVML_FUNCTIONS lacks %s\n", versioned[i]);
      bad++;
    }
  for (size_t i = 0; i < GS_NITEMS(current); i++) {
    if (listed_in(current[i], superseded, GS_NITEMS(superseded))) {
      print_error("GS_NVML_FUNCTIONS names %s, which current drivers supersede\n", current[i]);
      bad++;
    }
    if (listed_in(current[i], current + i + 1, GS_NITEMS(current) - i - 1)) {
      print_error("%s is listed twice (GS_NVML_FUNCTIONS and GS_NVML_EMULATED_FUNCTIONS "
                  "together must name each entry point once)\n",
                  current[i]);
      bad++;
    }
  }
  for (size_t i = 0; i < GS_NITEMS(legacy); i++)
    if (!listed_in(legacy[i], superseded, GS_NITEMS(superseded))) {
      print_error("GS_NVML_LEGACY_FUNCTIONS names %s, which no current name supersedes\n",
                  legacy[i]);
      bad++;
    }
  if (bad)
    fail_msg("%u problems with the entry-point names", bad);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_handles_and_return_type),
      cmocka_unit_test(test_device_struct_layouts),
      cmocka_unit_test(test_gpu_instance_layouts),
      cmocka_unit_test(test_compute_instance_layouts),
      cmocka_unit_test(test_struct_versions),
      cmocka_unit_test(test_return_codes),
      cmocka_unit_test(test_gs_codes_match_nvml),
      cmocka_unit_test(test_gpu_instance_profiles),
      cmocka_unit_test(test_compute_instance_profiles),
      cmocka_unit_test(test_buffer_sizes),
      cmocka_unit_test(test_mig_mode_and_init_flags),
      cmocka_unit_test(test_device_facts),
      cmocka_unit_test(test_symbol_names),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
