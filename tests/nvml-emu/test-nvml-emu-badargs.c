/* SPDX-License-Identifier: Apache-2.0 */
/* test-nvml-emu-badargs.c: every entry point nvml-emu implements (nvml_abi.h's
 * three lists and nvmlErrorString) gets NULL pointers, bad and stale handles,
 * wrong struct versions, out-of-range enums, indices and ids, before init, once
 * initialized and after shutdown, and must return NVML's documented code. One
 * case per function, checked against the lists; then the NOT_SUPPORTED stubs
 * and the hidden gs_* symbols. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <elf.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/gs-nvml-emu.h"
#include "nvml-emu/unsupported.h"

#define N(fn) api.fn
#define NBAD 3 /* NULL, a local variable's address, a handle of another kind */

static struct gs_nvml_api api;

struct ctx {
  bool initialized; /* false: every call but the documented few is UNINITIALIZED */
  bool never;       /* no nvmlInit has succeeded in this process yet */
  unsigned checks;
  nvmlDevice_t gpu;     /* GPU 0, A100-SXM4-40GB, MIG on */
  nvmlDevice_t gpu_off; /* GPU 1, A30, MIG off */
  nvmlDevice_t mig;     /* MIG device 0: GI 1, CI 0 */
  nvmlGpuInstance_t gi; /* GI 1: 3g.20gb at 4:4, with CI 0 (1c) busy with a process */
  nvmlComputeInstance_t ci;
  nvmlDevice_t stale_mig; /* handles of instances destroyed since */
  nvmlGpuInstance_t stale_gi;
  nvmlComputeInstance_t stale_ci;
  char stale_uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
  nvmlDevice_t bad_dev[NBAD];
  nvmlGpuInstance_t bad_gi[NBAD];
  nvmlComputeInstance_t bad_ci[NBAD];
};

static struct ctx the_ctx;
static struct gs_nvml_machine machine;

static void expect_at(struct ctx *c, nvmlReturn_t want, nvmlReturn_t got, bool needs_init,
                      const char *what, int line)
{
  if (needs_init && !c->initialized)
    want = NVML_ERROR_UNINITIALIZED;
  c->checks++;
  if (got != want)
    fail_msg("line %d (%s): %s returned %d (%s), want %d (%s)", line,
             c->initialized ? "initialized" : "uninitialized", what, got, N(nvmlErrorString)(got),
             want, N(nvmlErrorString)(want));
}

/* EXPECT: the code once initialized (before: UNINITIALIZED). ANYTIME: the
 * calls NVML documents without UNINITIALIZED. */
#define EXPECT(want, call) expect_at(c, (want), (call), true, #call, __LINE__)
#define ANYTIME(want, call) expect_at(c, (want), (call), false, #call, __LINE__)
#define EACH_BAD(i) for (unsigned i = 0; i < NBAD; i++)

/* ---- system ---- */

static void case_nvmlInit_v2(struct ctx *c)
{
  ANYTIME(NVML_SUCCESS, N(nvmlInit_v2)());
  ANYTIME(NVML_SUCCESS, N(nvmlShutdown)());
  c->never = false;
}

static void case_nvmlInitWithFlags(struct ctx *c)
{
  ANYTIME(NVML_SUCCESS, N(nvmlInitWithFlags)(NVML_INIT_FLAG_NO_GPUS | NVML_INIT_FLAG_NO_ATTACH));
  ANYTIME(NVML_SUCCESS, N(nvmlShutdown)());
  ANYTIME(NVML_SUCCESS, N(nvmlInitWithFlags)(0));
  ANYTIME(NVML_SUCCESS, N(nvmlShutdown)());
  c->never = false;
}

static void case_nvmlInit(struct ctx *c)
{
  ANYTIME(NVML_SUCCESS, N(nvmlInit)());
  ANYTIME(NVML_SUCCESS, N(nvmlShutdown)());
  c->never = false;
}

/* Before any init: UNINITIALIZED; more shutdowns than inits: no error. */
static void case_nvmlShutdown(struct ctx *c)
{
  if (!c->initialized) {
    ANYTIME(c->never ? NVML_ERROR_UNINITIALIZED : NVML_SUCCESS, N(nvmlShutdown)());
    return;
  }
  ANYTIME(NVML_SUCCESS, N(nvmlInit_v2)());
  ANYTIME(NVML_SUCCESS, N(nvmlShutdown)());
}

static void case_nvmlErrorString(struct ctx *c)
{
  static const int values[] = {0, 1, 2, 3, 7, 19, 23, 25, 30, 999, -1, 31, 12345};
  for (size_t i = 0; i < GS_NITEMS(values); i++) {
    const char *s = N(nvmlErrorString)((nvmlReturn_t)values[i]);
    assert_non_null(s);
    assert_true(*s);
    c->checks++;
  }
  assert_string_equal(N(nvmlErrorString)((nvmlReturn_t)12345), "Unknown Error");
  assert_string_equal(N(nvmlErrorString)(NVML_ERROR_UNINITIALIZED), "Uninitialized");
}

static void case_nvmlSystemGetDriverVersion(struct ctx *c)
{
  char buf[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlSystemGetDriverVersion)(NULL, sizeof(buf)));
  EXPECT(NVML_ERROR_INSUFFICIENT_SIZE, N(nvmlSystemGetDriverVersion)(buf, 0));
  EXPECT(NVML_ERROR_INSUFFICIENT_SIZE,
         N(nvmlSystemGetDriverVersion)(buf, 9)); /* "580.65.06" + NUL */
  EXPECT(NVML_SUCCESS, N(nvmlSystemGetDriverVersion)(buf, 10));
}

static void case_nvmlSystemGetNVMLVersion(struct ctx *c)
{
  char buf[NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE];
  ANYTIME(NVML_ERROR_INVALID_ARGUMENT, N(nvmlSystemGetNVMLVersion)(NULL, sizeof(buf)));
  ANYTIME(NVML_ERROR_INSUFFICIENT_SIZE, N(nvmlSystemGetNVMLVersion)(buf, 12));
  ANYTIME(NVML_SUCCESS, N(nvmlSystemGetNVMLVersion)(buf, 13));
}

static void case_nvmlSystemGetCudaDriverVersion(struct ctx *c)
{
  int v = 0;
  ANYTIME(NVML_ERROR_INVALID_ARGUMENT, N(nvmlSystemGetCudaDriverVersion)(NULL));
  ANYTIME(NVML_SUCCESS, N(nvmlSystemGetCudaDriverVersion)(&v));
}

static void case_nvmlSystemGetCudaDriverVersion_v2(struct ctx *c)
{
  int v = 0;
  ANYTIME(NVML_ERROR_INVALID_ARGUMENT, N(nvmlSystemGetCudaDriverVersion_v2)(NULL));
  ANYTIME(NVML_SUCCESS, N(nvmlSystemGetCudaDriverVersion_v2)(&v));
}

static void case_nvmlSystemGetProcessName(struct ctx *c)
{
  char buf[64];
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlSystemGetProcessName)(4242, NULL, sizeof(buf)));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlSystemGetProcessName)(4242, buf, 0));
  EXPECT(NVML_ERROR_NOT_FOUND, N(nvmlSystemGetProcessName)(4243, buf, sizeof(buf)));
  EXPECT(NVML_SUCCESS, N(nvmlSystemGetProcessName)(4242, buf, sizeof(buf)));
}

/* ---- count and handles ---- */

static void case_nvmlDeviceGetCount_v2(struct ctx *c)
{
  unsigned n = 0;
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetCount_v2)(NULL));
  EXPECT(NVML_SUCCESS, N(nvmlDeviceGetCount_v2)(&n));
}

static void case_nvmlDeviceGetCount(struct ctx *c)
{
  unsigned n = 0;
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetCount)(NULL));
  EXPECT(NVML_SUCCESS, N(nvmlDeviceGetCount)(&n));
}

static void by_index(struct ctx *c, __typeof__(nvmlDeviceGetHandleByIndex_v2) *fn)
{
  nvmlDevice_t h;
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, fn(0, NULL));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, fn(2, &h));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, fn(UINT_MAX, &h));
  EXPECT(NVML_SUCCESS, fn(1, &h));
}

static void case_nvmlDeviceGetHandleByIndex_v2(struct ctx *c)
{
  by_index(c, N(nvmlDeviceGetHandleByIndex_v2));
}

static void case_nvmlDeviceGetHandleByIndex(struct ctx *c)
{
  by_index(c, N(nvmlDeviceGetHandleByIndex));
}

static void case_nvmlDeviceGetHandleByUUID(struct ctx *c)
{
  nvmlDevice_t h;
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetHandleByUUID)(NULL, &h));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetHandleByUUID)("", &h));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetHandleByUUID)("GPU-1", NULL));
  EXPECT(NVML_ERROR_NOT_FOUND, N(nvmlDeviceGetHandleByUUID)("GPU-1", &h));
  EXPECT(NVML_ERROR_NOT_FOUND, N(nvmlDeviceGetHandleByUUID)("MIG-1", &h));
  EXPECT(NVML_ERROR_NOT_FOUND, N(nvmlDeviceGetHandleByUUID)(c->stale_uuid, &h)); /* destroyed */
}

static void by_bus_id(struct ctx *c, __typeof__(nvmlDeviceGetHandleByPciBusId_v2) *fn)
{
  static const char *const invalid[] = {
      "",        "garbage",       "07",          "0000:07",           "0:0:07:00.0",
      "07:00.8", "0000:07:00.0x", "0000:07:00:", "123456789:07:00.0", "0000:100:00.0"};
  nvmlDevice_t h;
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, fn(NULL, &h));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, fn("0000:07:00.0", NULL));
  for (size_t i = 0; i < GS_NITEMS(invalid); i++)
    EXPECT(NVML_ERROR_INVALID_ARGUMENT, fn(invalid[i], &h));
  EXPECT(NVML_ERROR_NOT_FOUND, fn("0000:08:00.0", &h));
  EXPECT(NVML_ERROR_NOT_FOUND, fn("0000:07:00.1", &h));
  EXPECT(NVML_SUCCESS, fn("0000:07:00.0", &h));
}

static void case_nvmlDeviceGetHandleByPciBusId_v2(struct ctx *c)
{
  by_bus_id(c, N(nvmlDeviceGetHandleByPciBusId_v2));
}

static void case_nvmlDeviceGetHandleByPciBusId(struct ctx *c)
{
  by_bus_id(c, N(nvmlDeviceGetHandleByPciBusId));
}

/* ---- identity ---- */

static void case_nvmlDeviceGetName(struct ctx *c)
{
  char buf[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
  EACH_BAD(i)
    EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetName)(c->bad_dev[i], buf, sizeof(buf)));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetName)(c->stale_mig, buf, sizeof(buf)));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetName)(c->gpu, NULL, sizeof(buf)));
  EXPECT(NVML_ERROR_INSUFFICIENT_SIZE, N(nvmlDeviceGetName)(c->gpu, buf, 0));
  EXPECT(NVML_ERROR_INSUFFICIENT_SIZE, N(nvmlDeviceGetName)(c->gpu, buf, 21)); /* 21 characters */
  EXPECT(NVML_SUCCESS, N(nvmlDeviceGetName)(c->gpu, buf, 22));
  EXPECT(NVML_ERROR_INSUFFICIENT_SIZE, N(nvmlDeviceGetName)(c->mig, buf, 22));
  EXPECT(NVML_SUCCESS, N(nvmlDeviceGetName)(c->mig, buf, sizeof(buf)));
}

static void case_nvmlDeviceGetUUID(struct ctx *c)
{
  char buf[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
  EACH_BAD(i)
    EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetUUID)(c->bad_dev[i], buf, sizeof(buf)));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetUUID)(c->stale_mig, buf, sizeof(buf)));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetUUID)(c->gpu, NULL, sizeof(buf)));
  EXPECT(NVML_ERROR_INSUFFICIENT_SIZE, N(nvmlDeviceGetUUID)(c->gpu, buf, 40)); /* GPU- + 36 */
  EXPECT(NVML_SUCCESS, N(nvmlDeviceGetUUID)(c->gpu, buf, 41));
  EXPECT(NVML_ERROR_INSUFFICIENT_SIZE, N(nvmlDeviceGetUUID)(c->mig, buf, 40));
  EXPECT(NVML_SUCCESS, N(nvmlDeviceGetUUID)(c->mig, buf, NVML_DEVICE_UUID_BUFFER_SIZE));
}

static void case_nvmlDeviceGetSerial(struct ctx *c)
{
  char buf[NVML_DEVICE_SERIAL_BUFFER_SIZE];
  EACH_BAD(i)
    EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetSerial)(c->bad_dev[i], buf, sizeof(buf)));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetSerial)(c->gpu, NULL, sizeof(buf)));
  EXPECT(NVML_ERROR_INSUFFICIENT_SIZE, N(nvmlDeviceGetSerial)(c->gpu, buf, 13));
  EXPECT(NVML_ERROR_NOT_SUPPORTED, N(nvmlDeviceGetSerial)(c->mig, buf, sizeof(buf)));
  EXPECT(NVML_SUCCESS, N(nvmlDeviceGetSerial)(c->gpu, buf, sizeof(buf)));
}

static void pci_info(struct ctx *c, __typeof__(nvmlDeviceGetPciInfo_v3) *fn)
{
  nvmlPciInfo_t pci;
  EACH_BAD(i)
    EXPECT(NVML_ERROR_INVALID_ARGUMENT, fn(c->bad_dev[i], &pci));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, fn(c->stale_mig, &pci));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, fn(c->gpu, NULL));
  EXPECT(NVML_SUCCESS, fn(c->mig, &pci));
}

static void case_nvmlDeviceGetPciInfo_v3(struct ctx *c)
{
  pci_info(c, N(nvmlDeviceGetPciInfo_v3));
}

static void case_nvmlDeviceGetPciInfo_v2(struct ctx *c)
{
  pci_info(c, N(nvmlDeviceGetPciInfo_v2));
}

static void case_nvmlDeviceGetPciInfo(struct ctx *c)
{
  pci_info(c, N(nvmlDeviceGetPciInfo));
}

static void case_nvmlDeviceGetIndex(struct ctx *c)
{
  unsigned v;
  EACH_BAD(i)
    EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetIndex)(c->bad_dev[i], &v));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetIndex)(c->stale_mig, &v));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetIndex)(c->gpu, NULL));
  EXPECT(NVML_SUCCESS, N(nvmlDeviceGetIndex)(c->mig, &v));
}

static void case_nvmlDeviceGetMinorNumber(struct ctx *c)
{
  unsigned v;
  EACH_BAD(i)
    EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetMinorNumber)(c->bad_dev[i], &v));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetMinorNumber)(c->gpu, NULL));
  EXPECT(NVML_ERROR_NOT_SUPPORTED, N(nvmlDeviceGetMinorNumber)(c->mig, &v));
  EXPECT(NVML_SUCCESS, N(nvmlDeviceGetMinorNumber)(c->gpu_off, &v));
}

/* ---- memory, utilization, processes ---- */

static void case_nvmlDeviceGetMemoryInfo(struct ctx *c)
{
  nvmlMemory_t m;
  EACH_BAD(i)
    EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetMemoryInfo)(c->bad_dev[i], &m));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetMemoryInfo)(c->stale_mig, &m));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetMemoryInfo)(c->gpu, NULL));
  EXPECT(NVML_SUCCESS, N(nvmlDeviceGetMemoryInfo)(c->mig, &m));
}

static void case_nvmlDeviceGetMemoryInfo_v2(struct ctx *c)
{
  nvmlMemory_v2_t m = {.version = nvmlMemory_v2};
  nvmlMemory_v2_t old = {.version = (unsigned)sizeof(nvmlMemory_v2_t) | 1u << 24};
  nvmlMemory_v2_t none = {.version = 0};
  EACH_BAD(i)
    EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetMemoryInfo_v2)(c->bad_dev[i], &m));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetMemoryInfo_v2)(c->gpu, NULL));
  EXPECT(NVML_ERROR_ARGUMENT_VERSION_MISMATCH, N(nvmlDeviceGetMemoryInfo_v2)(c->gpu, &old));
  EXPECT(NVML_ERROR_ARGUMENT_VERSION_MISMATCH, N(nvmlDeviceGetMemoryInfo_v2)(c->gpu, &none));
  EXPECT(NVML_SUCCESS, N(nvmlDeviceGetMemoryInfo_v2)(c->gpu, &m));
}

static void case_nvmlDeviceGetUtilizationRates(struct ctx *c)
{
  nvmlUtilization_t u;
  EACH_BAD(i)
    EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetUtilizationRates)(c->bad_dev[i], &u));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetUtilizationRates)(c->gpu_off, NULL));
  EXPECT(NVML_ERROR_NOT_SUPPORTED, N(nvmlDeviceGetUtilizationRates)(c->gpu, &u)); /* MIG mode */
  EXPECT(NVML_ERROR_NOT_SUPPORTED, N(nvmlDeviceGetUtilizationRates)(c->mig, &u));
  EXPECT(NVML_SUCCESS, N(nvmlDeviceGetUtilizationRates)(c->gpu_off, &u));
}

/* The fixture has one process on GPU 0 (on the MIG device); GPU 1 has none. */
static void processes_v2(struct ctx *c, __typeof__(nvmlDeviceGetComputeRunningProcesses_v3) *fn,
                         bool compute)
{
  nvmlProcessInfo_t p[4];
  unsigned n = 4;
  EACH_BAD(i)
    EXPECT(NVML_ERROR_INVALID_ARGUMENT, fn(c->bad_dev[i], &n, p));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, fn(c->stale_mig, &n, p));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, fn(c->gpu, NULL, p));
  n = 4;
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, fn(c->gpu, &n, NULL));
  n = 0;
  EXPECT(compute ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS, fn(c->gpu, &n, NULL));
  if (c->initialized)
    assert_int_equal(n, compute ? 1 : 0);
  n = 0;
  EXPECT(NVML_SUCCESS, fn(c->gpu_off, &n, NULL));
  n = 4;
  EXPECT(NVML_SUCCESS, fn(c->mig, &n, p));
}

static void processes_v1(struct ctx *c, __typeof__(nvmlDeviceGetComputeRunningProcesses) *fn,
                         bool compute)
{
  nvmlProcessInfo_v1_t p[4];
  unsigned n = 4;
  EACH_BAD(i)
    EXPECT(NVML_ERROR_INVALID_ARGUMENT, fn(c->bad_dev[i], &n, p));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, fn(c->gpu, NULL, p));
  n = 4;
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, fn(c->gpu, &n, NULL));
  n = 0;
  EXPECT(compute ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS, fn(c->gpu, &n, NULL));
  n = 4;
  EXPECT(NVML_SUCCESS, fn(c->gpu, &n, p));
}

static void case_nvmlDeviceGetComputeRunningProcesses_v3(struct ctx *c)
{
  processes_v2(c, N(nvmlDeviceGetComputeRunningProcesses_v3), true);
}

static void case_nvmlDeviceGetComputeRunningProcesses_v2(struct ctx *c)
{
  processes_v2(c, N(nvmlDeviceGetComputeRunningProcesses_v2), true);
}

static void case_nvmlDeviceGetComputeRunningProcesses(struct ctx *c)
{
  processes_v1(c, N(nvmlDeviceGetComputeRunningProcesses), true);
}

static void case_nvmlDeviceGetGraphicsRunningProcesses_v3(struct ctx *c)
{
  processes_v2(c, N(nvmlDeviceGetGraphicsRunningProcesses_v3), false);
}

static void case_nvmlDeviceGetGraphicsRunningProcesses_v2(struct ctx *c)
{
  processes_v2(c, N(nvmlDeviceGetGraphicsRunningProcesses_v2), false);
}

static void case_nvmlDeviceGetGraphicsRunningProcesses(struct ctx *c)
{
  processes_v1(c, N(nvmlDeviceGetGraphicsRunningProcesses), false);
}

/* ---- MIG mode ---- */

static void case_nvmlDeviceGetMigMode(struct ctx *c)
{
  unsigned cur, pend;
  EACH_BAD(i)
    EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetMigMode)(c->bad_dev[i], &cur, &pend));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetMigMode)(c->mig, &cur, &pend));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetMigMode)(c->gpu, NULL, &pend));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetMigMode)(c->gpu, &cur, NULL));
  EXPECT(NVML_SUCCESS, N(nvmlDeviceGetMigMode)(c->gpu, &cur, &pend));
}

static void case_nvmlDeviceSetMigMode(struct ctx *c)
{
  nvmlReturn_t status;
  EACH_BAD(i)
    EXPECT(NVML_ERROR_INVALID_ARGUMENT,
           N(nvmlDeviceSetMigMode)(c->bad_dev[i], NVML_DEVICE_MIG_ENABLE, &status));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT,
         N(nvmlDeviceSetMigMode)(c->mig, NVML_DEVICE_MIG_ENABLE, &status));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT,
         N(nvmlDeviceSetMigMode)(c->gpu, NVML_DEVICE_MIG_ENABLE, NULL));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceSetMigMode)(c->gpu, 2, &status));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceSetMigMode)(c->gpu, UINT_MAX, &status));
  /* Disabling with instances left is refused (nothing changes). */
  EXPECT(NVML_ERROR_IN_USE, N(nvmlDeviceSetMigMode)(c->gpu, NVML_DEVICE_MIG_DISABLE, &status));
}

/* ---- GPU-instance profiles ---- */

static void case_nvmlDeviceGetGpuInstanceProfileInfo(struct ctx *c)
{
  nvmlGpuInstanceProfileInfo_t info;
  EACH_BAD(i)
    EXPECT(NVML_ERROR_INVALID_ARGUMENT,
           N(nvmlDeviceGetGpuInstanceProfileInfo)(c->bad_dev[i], 0, &info));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetGpuInstanceProfileInfo)(c->mig, 0, &info));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetGpuInstanceProfileInfo)(c->gpu, 0, NULL));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT,
         N(nvmlDeviceGetGpuInstanceProfileInfo)(c->gpu, NVML_GPU_INSTANCE_PROFILE_COUNT, &info));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT,
         N(nvmlDeviceGetGpuInstanceProfileInfo)(c->gpu, UINT_MAX, &info));
  EXPECT(NVML_ERROR_NOT_SUPPORTED,
         N(nvmlDeviceGetGpuInstanceProfileInfo)(c->gpu, NVML_GPU_INSTANCE_PROFILE_8_SLICE, &info));
  EXPECT(NVML_ERROR_NOT_SUPPORTED, N(nvmlDeviceGetGpuInstanceProfileInfo)(c->gpu_off, 0, &info));
  EXPECT(NVML_SUCCESS, N(nvmlDeviceGetGpuInstanceProfileInfo)(c->gpu, 0, &info));
}

static void case_nvmlDeviceGetGpuInstanceProfileInfoV(struct ctx *c)
{
  nvmlGpuInstanceProfileInfo_v2_t v2 = {.version = nvmlGpuInstanceProfileInfo_v2};
  nvmlGpuInstanceProfileInfo_v2_t bad = {.version = (unsigned)sizeof(v2) | 1u << 24};
  nvmlGpuInstanceProfileInfo_v2_t zero = {.version = 0};
  EACH_BAD(i)
    EXPECT(NVML_ERROR_INVALID_ARGUMENT,
           N(nvmlDeviceGetGpuInstanceProfileInfoV)(c->bad_dev[i], 0, &v2));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetGpuInstanceProfileInfoV)(c->mig, 0, &v2));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetGpuInstanceProfileInfoV)(c->gpu, 0, NULL));
  EXPECT(NVML_ERROR_ARGUMENT_VERSION_MISMATCH,
         N(nvmlDeviceGetGpuInstanceProfileInfoV)(c->gpu, 0, &bad));
  EXPECT(NVML_ERROR_ARGUMENT_VERSION_MISMATCH,
         N(nvmlDeviceGetGpuInstanceProfileInfoV)(c->gpu, 0, &zero));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT,
         N(nvmlDeviceGetGpuInstanceProfileInfoV)(c->gpu, NVML_GPU_INSTANCE_PROFILE_COUNT, &v2));
  EXPECT(NVML_ERROR_NOT_SUPPORTED, N(nvmlDeviceGetGpuInstanceProfileInfoV)(
                                       c->gpu, NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1, &v2));
  EXPECT(NVML_ERROR_NOT_SUPPORTED, N(nvmlDeviceGetGpuInstanceProfileInfoV)(c->gpu_off, 0, &v2));
  EXPECT(NVML_SUCCESS, N(nvmlDeviceGetGpuInstanceProfileInfoV)(c->gpu, 0, &v2));
}

static void case_nvmlDeviceGetGpuInstanceProfileInfoByIdV(struct ctx *c)
{
  nvmlGpuInstanceProfileInfo_v2_t v3 = {.version = nvmlGpuInstanceProfileInfo_v3};
  nvmlGpuInstanceProfileInfo_v2_t zero = {.version = 0};
  EACH_BAD(i)
    EXPECT(NVML_ERROR_INVALID_ARGUMENT,
           N(nvmlDeviceGetGpuInstanceProfileInfoByIdV)(c->bad_dev[i], 19, &v3));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT,
         N(nvmlDeviceGetGpuInstanceProfileInfoByIdV)(c->gpu, 19, NULL));
  EXPECT(NVML_ERROR_ARGUMENT_VERSION_MISMATCH,
         N(nvmlDeviceGetGpuInstanceProfileInfoByIdV)(c->gpu, 19, &zero));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetGpuInstanceProfileInfoByIdV)(c->gpu, 1, &v3));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT,
         N(nvmlDeviceGetGpuInstanceProfileInfoByIdV)(c->gpu, UINT_MAX, &v3));
  EXPECT(NVML_ERROR_NOT_SUPPORTED,
         N(nvmlDeviceGetGpuInstanceProfileInfoByIdV)(c->gpu_off, 14, &v3));
  EXPECT(NVML_SUCCESS, N(nvmlDeviceGetGpuInstanceProfileInfoByIdV)(c->gpu, 19, &v3));
}

static void case_nvmlDeviceGetGpuInstancePossiblePlacements_v2(struct ctx *c)
{
  nvmlGpuInstancePlacement_t pl[8];
  unsigned n = 8;
  EACH_BAD(i)
    EXPECT(NVML_ERROR_INVALID_ARGUMENT,
           N(nvmlDeviceGetGpuInstancePossiblePlacements_v2)(c->bad_dev[i], 19, pl, &n));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT,
         N(nvmlDeviceGetGpuInstancePossiblePlacements_v2)(c->mig, 19, pl, &n));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT,
         N(nvmlDeviceGetGpuInstancePossiblePlacements_v2)(c->gpu, 19, pl, NULL));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT,
         N(nvmlDeviceGetGpuInstancePossiblePlacements_v2)(c->gpu, 1, pl, &n));
  n = 2;
  EXPECT(NVML_ERROR_INSUFFICIENT_SIZE,
         N(nvmlDeviceGetGpuInstancePossiblePlacements_v2)(c->gpu, 19, pl, &n));
  if (c->initialized)
    assert_int_equal(n, 7);
  EXPECT(NVML_SUCCESS,
         N(nvmlDeviceGetGpuInstancePossiblePlacements_v2)(c->gpu_off, 14, NULL, &n)); /* MIG off */
}

static void case_nvmlDeviceGetGpuInstancePossiblePlacements(struct ctx *c)
{
  nvmlGpuInstancePlacement_t pl[8];
  unsigned n = 0;
  EACH_BAD(i)
    EXPECT(NVML_ERROR_INVALID_ARGUMENT,
           N(nvmlDeviceGetGpuInstancePossiblePlacements)(c->bad_dev[i], 19, pl, &n));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT,
         N(nvmlDeviceGetGpuInstancePossiblePlacements)(c->gpu, 19, NULL, &n));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT,
         N(nvmlDeviceGetGpuInstancePossiblePlacements)(c->gpu, 19, pl, NULL));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT,
         N(nvmlDeviceGetGpuInstancePossiblePlacements)(c->gpu, 1, pl, &n));
  EXPECT(NVML_ERROR_NOT_SUPPORTED,
         N(nvmlDeviceGetGpuInstancePossiblePlacements)(c->gpu_off, 14, pl, &n));
  EXPECT(NVML_SUCCESS, N(nvmlDeviceGetGpuInstancePossiblePlacements)(c->gpu, 19, pl, &n));
}

static void case_nvmlDeviceGetGpuInstanceRemainingCapacity(struct ctx *c)
{
  unsigned n;
  EACH_BAD(i)
    EXPECT(NVML_ERROR_INVALID_ARGUMENT,
           N(nvmlDeviceGetGpuInstanceRemainingCapacity)(c->bad_dev[i], 19, &n));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetGpuInstanceRemainingCapacity)(c->mig, 19, &n));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT,
         N(nvmlDeviceGetGpuInstanceRemainingCapacity)(c->gpu, 19, NULL));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetGpuInstanceRemainingCapacity)(c->gpu, 1, &n));
  EXPECT(NVML_ERROR_NOT_SUPPORTED,
         N(nvmlDeviceGetGpuInstanceRemainingCapacity)(c->gpu_off, 14, &n));
  EXPECT(NVML_SUCCESS, N(nvmlDeviceGetGpuInstanceRemainingCapacity)(c->gpu, 19, &n));
}

/* ---- GPU instances ---- */

static void case_nvmlDeviceCreateGpuInstance(struct ctx *c)
{
  nvmlGpuInstance_t gi;
  EACH_BAD(i)
    EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceCreateGpuInstance)(c->bad_dev[i], 19, &gi));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceCreateGpuInstance)(c->mig, 19, &gi));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceCreateGpuInstance)(c->gpu, 19, NULL));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceCreateGpuInstance)(c->gpu, 1, &gi));
  EXPECT(NVML_ERROR_NOT_SUPPORTED, N(nvmlDeviceCreateGpuInstance)(c->gpu_off, 14, &gi));
  EXPECT(NVML_ERROR_INSUFFICIENT_RESOURCES,
         N(nvmlDeviceCreateGpuInstance)(c->gpu, 0, &gi)); /* 7g */
}

static void case_nvmlDeviceCreateGpuInstanceWithPlacement(struct ctx *c)
{
  nvmlGpuInstancePlacement_t ok = {0, 4}, wide = {0, 8}, odd = {3, 4}, busy = {4, 4},
                             huge = {0x80000000u, 4}, far = {100, 4};
  nvmlGpuInstance_t gi;
  EACH_BAD(i)
    EXPECT(NVML_ERROR_INVALID_ARGUMENT,
           N(nvmlDeviceCreateGpuInstanceWithPlacement)(c->bad_dev[i], 9, &ok, &gi));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT,
         N(nvmlDeviceCreateGpuInstanceWithPlacement)(c->gpu, 9, NULL, &gi));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT,
         N(nvmlDeviceCreateGpuInstanceWithPlacement)(c->gpu, 9, &ok, NULL));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT,
         N(nvmlDeviceCreateGpuInstanceWithPlacement)(c->gpu, 1, &ok, &gi));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT,
         N(nvmlDeviceCreateGpuInstanceWithPlacement)(c->gpu, 9, &wide, &gi));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT,
         N(nvmlDeviceCreateGpuInstanceWithPlacement)(c->gpu, 9, &odd, &gi));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT,
         N(nvmlDeviceCreateGpuInstanceWithPlacement)(c->gpu, 9, &huge, &gi));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT,
         N(nvmlDeviceCreateGpuInstanceWithPlacement)(c->gpu, 9, &far, &gi));
  EXPECT(NVML_ERROR_INSUFFICIENT_RESOURCES,
         N(nvmlDeviceCreateGpuInstanceWithPlacement)(c->gpu, 9, &busy, &gi));
  EXPECT(NVML_ERROR_NOT_SUPPORTED,
         N(nvmlDeviceCreateGpuInstanceWithPlacement)(c->gpu_off, 0, &ok, &gi));
}

static void case_nvmlGpuInstanceDestroy(struct ctx *c)
{
  EACH_BAD(i)
    EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlGpuInstanceDestroy)(c->bad_gi[i]));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlGpuInstanceDestroy)(c->stale_gi));
  EXPECT(NVML_ERROR_IN_USE, N(nvmlGpuInstanceDestroy)(c->gi)); /* it has a CI */
}

static void case_nvmlDeviceGetGpuInstances(struct ctx *c)
{
  nvmlGpuInstance_t gis[8];
  unsigned n = 8;
  EACH_BAD(i)
    EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetGpuInstances)(c->bad_dev[i], 9, gis, &n));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetGpuInstances)(c->mig, 9, gis, &n));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetGpuInstances)(c->gpu, 9, NULL, &n));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetGpuInstances)(c->gpu, 9, gis, NULL));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetGpuInstances)(c->gpu, 1, gis, &n));
  EXPECT(NVML_ERROR_NOT_SUPPORTED, N(nvmlDeviceGetGpuInstances)(c->gpu_off, 14, gis, &n));
  EXPECT(NVML_SUCCESS, N(nvmlDeviceGetGpuInstances)(c->gpu, 9, gis, &n));
}

static void case_nvmlDeviceGetGpuInstanceById(struct ctx *c)
{
  nvmlGpuInstance_t gi;
  EACH_BAD(i)
    EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetGpuInstanceById)(c->bad_dev[i], 1, &gi));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetGpuInstanceById)(c->mig, 1, &gi));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetGpuInstanceById)(c->gpu, 1, NULL));
  EXPECT(NVML_ERROR_NOT_FOUND, N(nvmlDeviceGetGpuInstanceById)(c->gpu, 11, &gi)); /* destroyed */
  EXPECT(NVML_ERROR_NOT_FOUND, N(nvmlDeviceGetGpuInstanceById)(c->gpu, 15, &gi));
  EXPECT(NVML_ERROR_NOT_FOUND, N(nvmlDeviceGetGpuInstanceById)(c->gpu, UINT_MAX, &gi));
  EXPECT(NVML_ERROR_NOT_SUPPORTED, N(nvmlDeviceGetGpuInstanceById)(c->gpu_off, 0, &gi));
  EXPECT(NVML_SUCCESS, N(nvmlDeviceGetGpuInstanceById)(c->gpu, 1, &gi));
}

static void case_nvmlGpuInstanceGetInfo(struct ctx *c)
{
  nvmlGpuInstanceInfo_t info;
  EACH_BAD(i)
    EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlGpuInstanceGetInfo)(c->bad_gi[i], &info));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlGpuInstanceGetInfo)(c->stale_gi, &info));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlGpuInstanceGetInfo)(c->gi, NULL));
  EXPECT(NVML_SUCCESS, N(nvmlGpuInstanceGetInfo)(c->gi, &info));
}

/* ---- compute-instance profiles ---- */

static void case_nvmlGpuInstanceGetComputeInstanceProfileInfo(struct ctx *c)
{
  nvmlComputeInstanceProfileInfo_t info;
  EACH_BAD(i)
    EXPECT(NVML_ERROR_INVALID_ARGUMENT,
           N(nvmlGpuInstanceGetComputeInstanceProfileInfo)(c->bad_gi[i], 0, 0, &info));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT,
         N(nvmlGpuInstanceGetComputeInstanceProfileInfo)(c->stale_gi, 0, 0, &info));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT,
         N(nvmlGpuInstanceGetComputeInstanceProfileInfo)(c->gi, 0, 0, NULL));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlGpuInstanceGetComputeInstanceProfileInfo)(
                                          c->gi, NVML_COMPUTE_INSTANCE_PROFILE_COUNT, 0, &info));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT,
         N(nvmlGpuInstanceGetComputeInstanceProfileInfo)(
             c->gi, 0, NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_COUNT, &info));
  EXPECT(NVML_ERROR_NOT_SUPPORTED, /* no 4c in a 3g */
         N(nvmlGpuInstanceGetComputeInstanceProfileInfo)(
             c->gi, NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE, 0, &info));
  EXPECT(NVML_SUCCESS, N(nvmlGpuInstanceGetComputeInstanceProfileInfo)(c->gi, 2, 0, &info));
}

static void case_nvmlGpuInstanceGetComputeInstanceProfileInfoV(struct ctx *c)
{
  nvmlComputeInstanceProfileInfo_v3_t v3 = {.version = nvmlComputeInstanceProfileInfo_v3};
  nvmlComputeInstanceProfileInfo_v2_t v2 = {.version = nvmlComputeInstanceProfileInfo_v2};
  nvmlComputeInstanceProfileInfo_v2_t bad = {.version = nvmlGpuInstanceProfileInfo_v2};
  EACH_BAD(i)
    EXPECT(NVML_ERROR_INVALID_ARGUMENT,
           N(nvmlGpuInstanceGetComputeInstanceProfileInfoV)(c->bad_gi[i], 0, 0, &v2));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT,
         N(nvmlGpuInstanceGetComputeInstanceProfileInfoV)(c->stale_gi, 0, 0, &v2));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT,
         N(nvmlGpuInstanceGetComputeInstanceProfileInfoV)(c->gi, 0, 0, NULL));
  EXPECT(NVML_ERROR_ARGUMENT_VERSION_MISMATCH,
         N(nvmlGpuInstanceGetComputeInstanceProfileInfoV)(c->gi, 0, 0, &bad));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT,
         N(nvmlGpuInstanceGetComputeInstanceProfileInfoV)(c->gi, 9, 0, &v2));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT,
         N(nvmlGpuInstanceGetComputeInstanceProfileInfoV)(c->gi, 0, 1, &v2));
  EXPECT(NVML_ERROR_NOT_SUPPORTED,
         N(nvmlGpuInstanceGetComputeInstanceProfileInfoV)(c->gi, 4, 0, &v2));
  EXPECT(NVML_SUCCESS, N(nvmlGpuInstanceGetComputeInstanceProfileInfoV)(
                           c->gi, 0, 0, (nvmlComputeInstanceProfileInfo_v2_t *)&v3));
}

static void case_nvmlGpuInstanceGetComputeInstanceRemainingCapacity(struct ctx *c)
{
  unsigned n;
  EACH_BAD(i)
    EXPECT(NVML_ERROR_INVALID_ARGUMENT,
           N(nvmlGpuInstanceGetComputeInstanceRemainingCapacity)(c->bad_gi[i], 0, &n));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT,
         N(nvmlGpuInstanceGetComputeInstanceRemainingCapacity)(c->stale_gi, 0, &n));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT,
         N(nvmlGpuInstanceGetComputeInstanceRemainingCapacity)(c->gi, 0, NULL));
  EXPECT(NVML_ERROR_NOT_SUPPORTED,
         N(nvmlGpuInstanceGetComputeInstanceRemainingCapacity)(c->gi, 3, &n));
  EXPECT(NVML_ERROR_NOT_SUPPORTED,
         N(nvmlGpuInstanceGetComputeInstanceRemainingCapacity)(c->gi, UINT_MAX, &n));
  EXPECT(NVML_SUCCESS, N(nvmlGpuInstanceGetComputeInstanceRemainingCapacity)(c->gi, 0, &n));
}

static void case_nvmlGpuInstanceGetComputeInstancePossiblePlacements(struct ctx *c)
{
  nvmlComputeInstancePlacement_t pl[8];
  unsigned n = 8;
  EACH_BAD(i)
    EXPECT(NVML_ERROR_INVALID_ARGUMENT,
           N(nvmlGpuInstanceGetComputeInstancePossiblePlacements)(c->bad_gi[i], 0, pl, &n));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT,
         N(nvmlGpuInstanceGetComputeInstancePossiblePlacements)(c->stale_gi, 0, pl, &n));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT,
         N(nvmlGpuInstanceGetComputeInstancePossiblePlacements)(c->gi, 0, pl, NULL));
  EXPECT(NVML_ERROR_NOT_SUPPORTED,
         N(nvmlGpuInstanceGetComputeInstancePossiblePlacements)(c->gi, 3, pl, &n));
  n = 1;
  EXPECT(NVML_ERROR_INSUFFICIENT_SIZE,
         N(nvmlGpuInstanceGetComputeInstancePossiblePlacements)(c->gi, 0, pl, &n));
  if (c->initialized)
    assert_int_equal(n, 3);
  EXPECT(NVML_SUCCESS, N(nvmlGpuInstanceGetComputeInstancePossiblePlacements)(c->gi, 0, NULL, &n));
}

/* ---- compute instances ---- */

static void case_nvmlGpuInstanceCreateComputeInstance(struct ctx *c)
{
  nvmlComputeInstance_t ci;
  EACH_BAD(i)
    EXPECT(NVML_ERROR_INVALID_ARGUMENT,
           N(nvmlGpuInstanceCreateComputeInstance)(c->bad_gi[i], 0, &ci));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlGpuInstanceCreateComputeInstance)(c->stale_gi, 0, &ci));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlGpuInstanceCreateComputeInstance)(c->gi, 0, NULL));
  EXPECT(NVML_ERROR_NOT_SUPPORTED, N(nvmlGpuInstanceCreateComputeInstance)(c->gi, 3, &ci));
  EXPECT(NVML_ERROR_NOT_SUPPORTED, N(nvmlGpuInstanceCreateComputeInstance)(c->gi, UINT_MAX, &ci));
  EXPECT(NVML_ERROR_INSUFFICIENT_RESOURCES,
         N(nvmlGpuInstanceCreateComputeInstance)(c->gi, 2, &ci)); /* 3c */
}

static void case_nvmlGpuInstanceCreateComputeInstanceWithPlacement(struct ctx *c)
{
  nvmlComputeInstancePlacement_t at1 = {1, 1}, wide = {1, 2}, odd = {5, 1}, busy = {0, 1},
                                 huge = {0x80000000u, 1};
  nvmlComputeInstance_t ci;
  EACH_BAD(i)
    EXPECT(NVML_ERROR_INVALID_ARGUMENT,
           N(nvmlGpuInstanceCreateComputeInstanceWithPlacement)(c->bad_gi[i], 0, &at1, &ci));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT,
         N(nvmlGpuInstanceCreateComputeInstanceWithPlacement)(c->stale_gi, 0, &at1, &ci));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT,
         N(nvmlGpuInstanceCreateComputeInstanceWithPlacement)(c->gi, 0, NULL, &ci));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT,
         N(nvmlGpuInstanceCreateComputeInstanceWithPlacement)(c->gi, 0, &at1, NULL));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT,
         N(nvmlGpuInstanceCreateComputeInstanceWithPlacement)(c->gi, 0, &wide, &ci));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT,
         N(nvmlGpuInstanceCreateComputeInstanceWithPlacement)(c->gi, 0, &odd, &ci));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT,
         N(nvmlGpuInstanceCreateComputeInstanceWithPlacement)(c->gi, 0, &huge, &ci));
  EXPECT(NVML_ERROR_NOT_SUPPORTED,
         N(nvmlGpuInstanceCreateComputeInstanceWithPlacement)(c->gi, 3, &at1, &ci));
  EXPECT(NVML_ERROR_INSUFFICIENT_RESOURCES,
         N(nvmlGpuInstanceCreateComputeInstanceWithPlacement)(c->gi, 0, &busy, &ci));
}

static void case_nvmlComputeInstanceDestroy(struct ctx *c)
{
  EACH_BAD(i)
    EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlComputeInstanceDestroy)(c->bad_ci[i]));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlComputeInstanceDestroy)(c->stale_ci));
  EXPECT(NVML_ERROR_IN_USE, N(nvmlComputeInstanceDestroy)(c->ci)); /* a process runs on it */
}

static void case_nvmlGpuInstanceGetComputeInstances(struct ctx *c)
{
  nvmlComputeInstance_t cis[8];
  unsigned n = 8;
  EACH_BAD(i)
    EXPECT(NVML_ERROR_INVALID_ARGUMENT,
           N(nvmlGpuInstanceGetComputeInstances)(c->bad_gi[i], 0, cis, &n));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT,
         N(nvmlGpuInstanceGetComputeInstances)(c->stale_gi, 0, cis, &n));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlGpuInstanceGetComputeInstances)(c->gi, 0, NULL, &n));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlGpuInstanceGetComputeInstances)(c->gi, 0, cis, NULL));
  EXPECT(NVML_ERROR_NOT_SUPPORTED, N(nvmlGpuInstanceGetComputeInstances)(c->gi, 3, cis, &n));
  EXPECT(NVML_SUCCESS, N(nvmlGpuInstanceGetComputeInstances)(c->gi, 0, cis, &n));
}

static void case_nvmlGpuInstanceGetComputeInstanceById(struct ctx *c)
{
  nvmlComputeInstance_t ci;
  EACH_BAD(i)
    EXPECT(NVML_ERROR_INVALID_ARGUMENT,
           N(nvmlGpuInstanceGetComputeInstanceById)(c->bad_gi[i], 0, &ci));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT,
         N(nvmlGpuInstanceGetComputeInstanceById)(c->stale_gi, 0, &ci));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlGpuInstanceGetComputeInstanceById)(c->gi, 0, NULL));
  EXPECT(NVML_ERROR_NOT_FOUND,
         N(nvmlGpuInstanceGetComputeInstanceById)(c->gi, 1, &ci)); /* destroyed */
  EXPECT(NVML_ERROR_NOT_FOUND, N(nvmlGpuInstanceGetComputeInstanceById)(c->gi, 8, &ci));
  EXPECT(NVML_ERROR_NOT_FOUND, N(nvmlGpuInstanceGetComputeInstanceById)(c->gi, UINT_MAX, &ci));
  EXPECT(NVML_SUCCESS, N(nvmlGpuInstanceGetComputeInstanceById)(c->gi, 0, &ci));
}

static void ci_info(struct ctx *c, __typeof__(nvmlComputeInstanceGetInfo_v2) *fn)
{
  nvmlComputeInstanceInfo_t info;
  EACH_BAD(i)
    EXPECT(NVML_ERROR_INVALID_ARGUMENT, fn(c->bad_ci[i], &info));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, fn(c->stale_ci, &info));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, fn(c->ci, NULL));
  EXPECT(NVML_SUCCESS, fn(c->ci, &info));
}

static void case_nvmlComputeInstanceGetInfo_v2(struct ctx *c)
{
  ci_info(c, N(nvmlComputeInstanceGetInfo_v2));
}

static void case_nvmlComputeInstanceGetInfo(struct ctx *c)
{
  ci_info(c, N(nvmlComputeInstanceGetInfo));
}

/* ---- MIG device handles ---- */

static void case_nvmlDeviceIsMigDeviceHandle(struct ctx *c)
{
  unsigned v;
  EACH_BAD(i)
    EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceIsMigDeviceHandle)(c->bad_dev[i], &v));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceIsMigDeviceHandle)(c->stale_mig, &v));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceIsMigDeviceHandle)(c->mig, NULL));
  EXPECT(NVML_SUCCESS, N(nvmlDeviceIsMigDeviceHandle)(c->gpu, &v));
}

static void mig_id(struct ctx *c, __typeof__(nvmlDeviceGetGpuInstanceId) *fn)
{
  unsigned v;
  EACH_BAD(i)
    EXPECT(NVML_ERROR_INVALID_ARGUMENT, fn(c->bad_dev[i], &v));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, fn(c->stale_mig, &v));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, fn(c->gpu, &v)); /* not a MIG device */
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, fn(c->mig, NULL));
  EXPECT(NVML_SUCCESS, fn(c->mig, &v));
}

static void case_nvmlDeviceGetGpuInstanceId(struct ctx *c)
{
  mig_id(c, N(nvmlDeviceGetGpuInstanceId));
}

static void case_nvmlDeviceGetComputeInstanceId(struct ctx *c)
{
  mig_id(c, N(nvmlDeviceGetComputeInstanceId));
}

static void case_nvmlDeviceGetMaxMigDeviceCount(struct ctx *c)
{
  unsigned n = 9;
  EACH_BAD(i)
    EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetMaxMigDeviceCount)(c->bad_dev[i], &n));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetMaxMigDeviceCount)(c->mig, &n));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetMaxMigDeviceCount)(c->gpu, NULL));
  EXPECT(NVML_SUCCESS, N(nvmlDeviceGetMaxMigDeviceCount)(c->gpu_off, &n));
  if (c->initialized)
    assert_int_equal(n, 0);
}

static void case_nvmlDeviceGetMigDeviceHandleByIndex(struct ctx *c)
{
  nvmlDevice_t mig;
  EACH_BAD(i)
    EXPECT(NVML_ERROR_INVALID_ARGUMENT,
           N(nvmlDeviceGetMigDeviceHandleByIndex)(c->bad_dev[i], 0, &mig));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetMigDeviceHandleByIndex)(c->mig, 0, &mig));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetMigDeviceHandleByIndex)(c->gpu, 0, NULL));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetMigDeviceHandleByIndex)(c->gpu, 7, &mig));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT,
         N(nvmlDeviceGetMigDeviceHandleByIndex)(c->gpu, UINT_MAX, &mig));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT,
         N(nvmlDeviceGetMigDeviceHandleByIndex)(c->gpu_off, 0, &mig)); /* max 0 */
  EXPECT(NVML_ERROR_NOT_FOUND,
         N(nvmlDeviceGetMigDeviceHandleByIndex)(c->gpu, 1, &mig)); /* empty slot */
  EXPECT(NVML_SUCCESS, N(nvmlDeviceGetMigDeviceHandleByIndex)(c->gpu, 0, &mig));
}

static void case_nvmlDeviceGetDeviceHandleFromMigDeviceHandle(struct ctx *c)
{
  nvmlDevice_t d;
  EACH_BAD(i)
    EXPECT(NVML_ERROR_INVALID_ARGUMENT,
           N(nvmlDeviceGetDeviceHandleFromMigDeviceHandle)(c->bad_dev[i], &d));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT,
         N(nvmlDeviceGetDeviceHandleFromMigDeviceHandle)(c->stale_mig, &d));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetDeviceHandleFromMigDeviceHandle)(c->gpu, &d));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT,
         N(nvmlDeviceGetDeviceHandleFromMigDeviceHandle)(c->mig, NULL));
  EXPECT(NVML_SUCCESS, N(nvmlDeviceGetDeviceHandleFromMigDeviceHandle)(c->mig, &d));
}

static void attributes(struct ctx *c, __typeof__(nvmlDeviceGetAttributes_v2) *fn)
{
  nvmlDeviceAttributes_t a;
  EACH_BAD(i)
    EXPECT(NVML_ERROR_INVALID_ARGUMENT, fn(c->bad_dev[i], &a));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, fn(c->stale_mig, &a));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, fn(c->gpu, &a)); /* MIG devices only */
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, fn(c->mig, NULL));
  EXPECT(NVML_SUCCESS, fn(c->mig, &a));
}

static void case_nvmlDeviceGetAttributes_v2(struct ctx *c)
{
  attributes(c, N(nvmlDeviceGetAttributes_v2));
}

static void case_nvmlDeviceGetAttributes(struct ctx *c)
{
  attributes(c, N(nvmlDeviceGetAttributes));
}

/* ---- emulated constants ---- */

static void case_nvmlDeviceGetBrand(struct ctx *c)
{
  nvmlBrandType_t b;
  EACH_BAD(i)
    EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetBrand)(c->bad_dev[i], &b));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetBrand)(c->gpu, NULL));
  EXPECT(NVML_SUCCESS, N(nvmlDeviceGetBrand)(c->mig, &b));
}

static void case_nvmlDeviceGetArchitecture(struct ctx *c)
{
  nvmlDeviceArchitecture_t a;
  EACH_BAD(i)
    EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetArchitecture)(c->bad_dev[i], &a));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetArchitecture)(c->gpu, NULL));
  EXPECT(NVML_SUCCESS, N(nvmlDeviceGetArchitecture)(c->gpu_off, &a));
}

static void case_nvmlDeviceGetCudaComputeCapability(struct ctx *c)
{
  int major, minor;
  EACH_BAD(i)
    EXPECT(NVML_ERROR_INVALID_ARGUMENT,
           N(nvmlDeviceGetCudaComputeCapability)(c->bad_dev[i], &major, &minor));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetCudaComputeCapability)(c->gpu, NULL, &minor));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetCudaComputeCapability)(c->gpu, &major, NULL));
  EXPECT(NVML_SUCCESS, N(nvmlDeviceGetCudaComputeCapability)(c->mig, &major, &minor));
}

static void case_nvmlDeviceGetTemperature(struct ctx *c)
{
  unsigned t;
  EACH_BAD(i)
    EXPECT(NVML_ERROR_INVALID_ARGUMENT,
           N(nvmlDeviceGetTemperature)(c->bad_dev[i], NVML_TEMPERATURE_GPU, &t));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT,
         N(nvmlDeviceGetTemperature)(c->gpu, NVML_TEMPERATURE_GPU, NULL));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT,
         N(nvmlDeviceGetTemperature)(c->gpu, NVML_TEMPERATURE_COUNT, &t));
  EXPECT(NVML_ERROR_NOT_SUPPORTED, N(nvmlDeviceGetTemperature)(c->mig, NVML_TEMPERATURE_GPU, &t));
  EXPECT(NVML_SUCCESS, N(nvmlDeviceGetTemperature)(c->gpu, NVML_TEMPERATURE_GPU, &t));
}

static void case_nvmlDeviceGetTemperatureV(struct ctx *c)
{
  nvmlTemperature_t t = {.version = nvmlTemperature_v1, .sensorType = NVML_TEMPERATURE_GPU};
  nvmlTemperature_t old = {.version = 0, .sensorType = NVML_TEMPERATURE_GPU};
  nvmlTemperature_t sensor = {.version = nvmlTemperature_v1, .sensorType = NVML_TEMPERATURE_COUNT};
  EACH_BAD(i)
    EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetTemperatureV)(c->bad_dev[i], &t));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetTemperatureV)(c->gpu, NULL));
  EXPECT(NVML_ERROR_ARGUMENT_VERSION_MISMATCH, N(nvmlDeviceGetTemperatureV)(c->gpu, &old));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetTemperatureV)(c->gpu, &sensor));
  EXPECT(NVML_ERROR_NOT_SUPPORTED, N(nvmlDeviceGetTemperatureV)(c->mig, &t));
  EXPECT(NVML_SUCCESS, N(nvmlDeviceGetTemperatureV)(c->gpu, &t));
}

static void case_nvmlDeviceGetPowerUsage(struct ctx *c)
{
  unsigned p;
  EACH_BAD(i)
    EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetPowerUsage)(c->bad_dev[i], &p));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetPowerUsage)(c->gpu, NULL));
  EXPECT(NVML_ERROR_NOT_SUPPORTED, N(nvmlDeviceGetPowerUsage)(c->mig, &p));
  EXPECT(NVML_SUCCESS, N(nvmlDeviceGetPowerUsage)(c->gpu, &p));
}

static void case_nvmlDeviceGetCpuAffinity(struct ctx *c)
{
  unsigned long set[2];
  EACH_BAD(i)
    EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetCpuAffinity)(c->bad_dev[i], 2, set));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetCpuAffinity)(c->gpu, 2, NULL));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetCpuAffinity)(c->gpu, 0, set));
  EXPECT(NVML_ERROR_NOT_SUPPORTED, N(nvmlDeviceGetCpuAffinity)(c->mig, 2, set));
  EXPECT(NVML_SUCCESS, N(nvmlDeviceGetCpuAffinity)(c->gpu, 2, set));
}

static void case_nvmlDeviceGetCpuAffinityWithinScope(struct ctx *c)
{
  unsigned long set[1];
  EACH_BAD(i)
    EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetCpuAffinityWithinScope)(c->bad_dev[i], 1, set, 0));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetCpuAffinityWithinScope)(c->gpu, 1, NULL, 0));
  EXPECT(NVML_ERROR_INVALID_ARGUMENT, N(nvmlDeviceGetCpuAffinityWithinScope)(c->gpu, 1, set, 2));
  EXPECT(NVML_ERROR_NOT_SUPPORTED, N(nvmlDeviceGetCpuAffinityWithinScope)(c->mig, 1, set, 0));
  EXPECT(NVML_SUCCESS, N(nvmlDeviceGetCpuAffinityWithinScope)(c->gpu, 1, set, 1));
}

/* ---- the case table, checked against nvml_abi.h's lists ---- */

struct bad_case {
  const char *name;
  void (*run)(struct ctx *c);
};

/* clang-format off */
#define CASE(fn) {#fn, case_##fn}
static const struct bad_case cases[] = {
    /* nvmlShutdown first: before any init it must answer UNINITIALIZED. */
    CASE(nvmlShutdown),
    CASE(nvmlErrorString),
    CASE(nvmlInit_v2),
    CASE(nvmlInitWithFlags),
    CASE(nvmlInit),
    CASE(nvmlSystemGetDriverVersion),
    CASE(nvmlSystemGetNVMLVersion),
    CASE(nvmlSystemGetCudaDriverVersion),
    CASE(nvmlSystemGetCudaDriverVersion_v2),
    CASE(nvmlSystemGetProcessName),
    CASE(nvmlDeviceGetCount_v2),
    CASE(nvmlDeviceGetCount),
    CASE(nvmlDeviceGetHandleByIndex_v2),
    CASE(nvmlDeviceGetHandleByIndex),
    CASE(nvmlDeviceGetHandleByUUID),
    CASE(nvmlDeviceGetHandleByPciBusId_v2),
    CASE(nvmlDeviceGetHandleByPciBusId),
    CASE(nvmlDeviceGetName),
    CASE(nvmlDeviceGetUUID),
    CASE(nvmlDeviceGetSerial),
    CASE(nvmlDeviceGetPciInfo_v3),
    CASE(nvmlDeviceGetPciInfo_v2),
    CASE(nvmlDeviceGetPciInfo),
    CASE(nvmlDeviceGetIndex),
    CASE(nvmlDeviceGetMinorNumber),
    CASE(nvmlDeviceGetMemoryInfo),
    CASE(nvmlDeviceGetMemoryInfo_v2),
    CASE(nvmlDeviceGetUtilizationRates),
    CASE(nvmlDeviceGetComputeRunningProcesses_v3),
    CASE(nvmlDeviceGetComputeRunningProcesses_v2),
    CASE(nvmlDeviceGetComputeRunningProcesses),
    CASE(nvmlDeviceGetGraphicsRunningProcesses_v3),
    CASE(nvmlDeviceGetGraphicsRunningProcesses_v2),
    CASE(nvmlDeviceGetGraphicsRunningProcesses),
    CASE(nvmlDeviceGetMigMode),
    CASE(nvmlDeviceSetMigMode),
    CASE(nvmlDeviceGetGpuInstanceProfileInfo),
    CASE(nvmlDeviceGetGpuInstanceProfileInfoV),
    CASE(nvmlDeviceGetGpuInstanceProfileInfoByIdV),
    CASE(nvmlDeviceGetGpuInstancePossiblePlacements_v2),
    CASE(nvmlDeviceGetGpuInstancePossiblePlacements),
    CASE(nvmlDeviceGetGpuInstanceRemainingCapacity),
    CASE(nvmlDeviceCreateGpuInstance),
    CASE(nvmlDeviceCreateGpuInstanceWithPlacement),
    CASE(nvmlGpuInstanceDestroy),
    CASE(nvmlDeviceGetGpuInstances),
    CASE(nvmlDeviceGetGpuInstanceById),
    CASE(nvmlGpuInstanceGetInfo),
    CASE(nvmlGpuInstanceGetComputeInstanceProfileInfo),
    CASE(nvmlGpuInstanceGetComputeInstanceProfileInfoV),
    CASE(nvmlGpuInstanceGetComputeInstanceRemainingCapacity),
    CASE(nvmlGpuInstanceGetComputeInstancePossiblePlacements),
    CASE(nvmlGpuInstanceCreateComputeInstance),
    CASE(nvmlGpuInstanceCreateComputeInstanceWithPlacement),
    CASE(nvmlComputeInstanceDestroy),
    CASE(nvmlGpuInstanceGetComputeInstances),
    CASE(nvmlGpuInstanceGetComputeInstanceById),
    CASE(nvmlComputeInstanceGetInfo_v2),
    CASE(nvmlComputeInstanceGetInfo),
    CASE(nvmlDeviceIsMigDeviceHandle),
    CASE(nvmlDeviceGetGpuInstanceId),
    CASE(nvmlDeviceGetComputeInstanceId),
    CASE(nvmlDeviceGetMaxMigDeviceCount),
    CASE(nvmlDeviceGetMigDeviceHandleByIndex),
    CASE(nvmlDeviceGetDeviceHandleFromMigDeviceHandle),
    CASE(nvmlDeviceGetAttributes_v2),
    CASE(nvmlDeviceGetAttributes),
    CASE(nvmlDeviceGetBrand),
    CASE(nvmlDeviceGetArchitecture),
    CASE(nvmlDeviceGetCudaComputeCapability),
    CASE(nvmlDeviceGetTemperature),
    CASE(nvmlDeviceGetTemperatureV),
    CASE(nvmlDeviceGetPowerUsage),
    CASE(nvmlDeviceGetCpuAffinity),
    CASE(nvmlDeviceGetCpuAffinityWithinScope),
};
#undef CASE
/* clang-format on */

/* Every implemented name has exactly one case, and every case names one. */
static void every_entry_point_has_a_case(void **state)
{
#define GS__NAME(name, params) #name,
  static const char *const implemented[] = {GS_NVML_FUNCTIONS(GS__NAME) GS_NVML_LEGACY_FUNCTIONS(
      GS__NAME) GS_NVML_EMULATED_FUNCTIONS(GS__NAME) "nvmlErrorString"};
#undef GS__NAME
  (void)state;
  for (size_t i = 0; i < GS_NITEMS(implemented); i++) {
    unsigned found = 0;
    for (size_t k = 0; k < GS_NITEMS(cases); k++)
      found += strcmp(cases[k].name, implemented[i]) == 0;
    if (found != 1)
      fail_msg("%s has %u bad-argument cases; it needs exactly one", implemented[i], found);
  }
  assert_int_equal(GS_NITEMS(cases), GS_NITEMS(implemented));
}

/* The names the library really exports (its ELF .dynsym: what `nm -D
 * --defined-only` lists), not what its headers say it does. */
static unsigned exported_names(char names[][64], unsigned max)
{
  struct link_map *lm = NULL;
  unsigned n = 0;
  assert_int_equal(dlinfo(api.lib, RTLD_DI_LINKMAP, &lm), 0);
  FILE *f = fopen(lm->l_name, "rb");
  assert_non_null(f);
  assert_int_equal(fseek(f, 0, SEEK_END), 0);
  long size = ftell(f);
  assert_true(size > (long)sizeof(Elf64_Ehdr));
  unsigned char *img = malloc((size_t)size);
  assert_non_null(img);
  rewind(f);
  assert_int_equal(fread(img, 1, (size_t)size, f), (size_t)size);
  fclose(f);
  const Elf64_Ehdr *eh = (const Elf64_Ehdr *)img;
  assert_int_equal(eh->e_ident[EI_CLASS], ELFCLASS64);
  const Elf64_Shdr *sh = (const Elf64_Shdr *)(img + eh->e_shoff);
  for (unsigned i = 0; i < eh->e_shnum; i++) {
    if (sh[i].sh_type != SHT_DYNSYM)
      continue;
    const Elf64_Sym *sym = (const Elf64_Sym *)(img + sh[i].sh_offset);
    const char *str = (const char *)(img + sh[sh[i].sh_link].sh_offset);
    for (size_t k = 0; k < sh[i].sh_size / sizeof(*sym); k++) {
      if (sym[k].st_shndx == SHN_UNDEF || ELF64_ST_BIND(sym[k].st_info) == STB_LOCAL ||
          ELF64_ST_TYPE(sym[k].st_info) != STT_FUNC)
        continue;
      assert_true(n < max);
      snprintf(names[n++], 64, "%s", str + sym[k].st_name);
    }
  }
  free(img);
  return n;
}

/* Every function the library exports is either implemented, and then has
 * its case above, or one of the NOT_SUPPORTED stubs that unsupported_stubs
 * calls: a new export with neither fails here. */
static void every_export_is_covered(void **state)
{
#define GS__STUB(name) #name,
  static const char *const stubs[] = {GS_NVML_UNSUPPORTED_FUNCTIONS(GS__STUB)};
#undef GS__STUB
  static char names[1024][64];
  unsigned n = exported_names(names, 1024), with_case = 0, stubbed = 0;
  (void)state;
  for (unsigned i = 0; i < n; i++) {
    unsigned found = 0;
    for (size_t k = 0; k < GS_NITEMS(cases); k++)
      found += strcmp(cases[k].name, names[i]) == 0;
    with_case += found;
    for (size_t k = 0; !found && k < GS_NITEMS(stubs); k++)
      stubbed += found = strcmp(stubs[k], names[i]) == 0;
    if (!found)
      fail_msg("%s is exported but has no bad-argument case and is no NOT_SUPPORTED stub", names[i]);
  }
  print_message("%u exports: %u with a bad-argument case, %u NOT_SUPPORTED stubs\n", n, with_case,
                stubbed);
  assert_int_equal(with_case, GS_NITEMS(cases));
  assert_int_equal(stubbed, GS_NITEMS(stubs));
}

static void run_all(struct ctx *c)
{
  for (size_t k = 0; k < GS_NITEMS(cases); k++) {
    unsigned before = c->checks;
    cases[k].run(c);
    if (c->checks == before)
      fail_msg("the case of %s checked nothing", cases[k].name);
  }
}

static void set_bad_handles(struct ctx *c, int *local)
{
  c->bad_dev[0] = NULL;
  c->bad_dev[1] = (nvmlDevice_t)(void *)local;
  c->bad_dev[2] = (nvmlDevice_t)(void *)c->gi; /* one of ours, of another kind */
  c->bad_gi[0] = NULL;
  c->bad_gi[1] = (nvmlGpuInstance_t)(void *)local;
  c->bad_gi[2] = (nvmlGpuInstance_t)(void *)c->ci;
  c->bad_ci[0] = NULL;
  c->bad_ci[1] = (nvmlComputeInstance_t)(void *)local;
  c->bad_ci[2] = (nvmlComputeInstance_t)(void *)c->gpu;
}

/* ---- the phases ---- */

static int setup(void **state)
{
  (void)state;
  return gs_nvml_machine_new(&machine, "nvml-badargs", "a100-40gb,a30-24gb");
}

static int teardown(void **state)
{
  (void)state;
  gs_nvml_machine_free(&machine);
  return 0;
}

/* A fresh process: nothing initialized yet; every handle is garbage. */
static void before_any_init(void **state)
{
  struct ctx *c = &the_ctx;
  int local = 0;
  (void)state;
  c->initialized = false;
  c->never = true;
  c->gpu = c->gpu_off = c->mig = c->stale_mig = (nvmlDevice_t)(void *)&local;
  c->gi = c->stale_gi = (nvmlGpuInstance_t)(void *)&local;
  c->ci = c->stale_ci = (nvmlComputeInstance_t)(void *)&local;
  snprintf(c->stale_uuid, sizeof(c->stale_uuid), "MIG-1");
  set_bad_handles(c, &local);
  run_all(c);
}

/* GPU 0 in MIG mode with GI 1 (3g.20gb) and its CI 0, busy with a process;
 * stale handles from a GI and a CI made and destroyed; GPU 1 MIG off. */
static void build_fixture(struct ctx *c)
{
  struct gs_backend *b = gs_nvml_machine_backend(&machine);
  struct gs_proc_info p = {
      .pid = 4242, .name = "worker", .gpu = 0, .gi = 1, .ci = 0, .used_mib = 10};
  nvmlGpuInstancePlacement_t at4 = {4, 4};
  nvmlReturn_t status;
  struct gs_err err = {0};

  assert_int_equal(N(nvmlInit_v2)(), NVML_SUCCESS);
  assert_int_equal(N(nvmlDeviceGetHandleByIndex_v2)(0, &c->gpu), NVML_SUCCESS);
  assert_int_equal(N(nvmlDeviceGetHandleByIndex_v2)(1, &c->gpu_off), NVML_SUCCESS);
  assert_int_equal(N(nvmlDeviceSetMigMode)(c->gpu, NVML_DEVICE_MIG_ENABLE, &status), NVML_SUCCESS);
  assert_int_equal(N(nvmlDeviceCreateGpuInstanceWithPlacement)(c->gpu, 9, &at4, &c->gi),
                   NVML_SUCCESS);
  assert_int_equal(N(nvmlGpuInstanceCreateComputeInstance)(c->gi, 0, &c->ci), NVML_SUCCESS);
  assert_int_equal(N(nvmlGpuInstanceCreateComputeInstance)(c->gi, 0, &c->stale_ci), NVML_SUCCESS);
  assert_int_equal(N(nvmlDeviceGetMigDeviceHandleByIndex)(c->gpu, 0, &c->mig), NVML_SUCCESS);
  assert_int_equal(N(nvmlDeviceGetMigDeviceHandleByIndex)(c->gpu, 1, &c->stale_mig), NVML_SUCCESS);
  assert_int_equal(N(nvmlDeviceGetUUID)(c->stale_mig, c->stale_uuid, sizeof(c->stale_uuid)),
                   NVML_SUCCESS);
  assert_int_equal(N(nvmlComputeInstanceDestroy)(c->stale_ci), NVML_SUCCESS);
  assert_int_equal(N(nvmlDeviceCreateGpuInstance)(c->gpu, 19, &c->stale_gi),
                   NVML_SUCCESS); /* id 11 */
  assert_int_equal(N(nvmlGpuInstanceDestroy)(c->stale_gi), NVML_SUCCESS);
  assert_non_null(b);
  assert_int_equal(gs_emu_proc_add(b, &err, &p), 0);
  gs_backend_close(b);
}

static void initialized(void **state)
{
  struct ctx *c = &the_ctx;
  int local = 0;
  (void)state;
  build_fixture(c);
  c->initialized = true;
  set_bad_handles(c, &local);
  run_all(c);
  c->initialized = false;
  assert_int_equal(N(nvmlShutdown)(), NVML_SUCCESS);
}

/* After the last shutdown the real handles are refused like any other. */
static void after_shutdown(void **state)
{
  struct ctx *c = &the_ctx;
  int local = 0;
  (void)state;
  c->initialized = false;
  set_bad_handles(c, &local);
  run_all(c);
}

/* ---- the rest: exports and stubs ---- */

typedef nvmlReturn_t (*stub_fn)(void);

static stub_fn stub(const char *name)
{
  void *p = dlsym(api.lib, name);
  if (!p)
    fail_msg("%s is not exported", name);
  return (stub_fn)(uintptr_t)p;
}

/* Every other NVML entry point exists and answers NOT_SUPPORTED (before
 * nvmlInit, UNINITIALIZED); gpuslice's own symbols stay hidden. */
static void unsupported_stubs(void **state)
{
#define GS__NAME(name) #name,
  static const char *const names[] = {GS_NVML_UNSUPPORTED_FUNCTIONS(GS__NAME)};
#undef GS__NAME
  nvmlDevice_t gpu;
  unsigned speed = 0, clock = 0, units = 0;
  (void)state;
  assert_int_equal(GS_NITEMS(names), GS_NVML_UNSUPPORTED_COUNT);
  assert_true(GS_NITEMS(names) > 300);
  for (size_t i = 0; i < GS_NITEMS(names); i++)
    assert_int_equal(stub(names[i])(), NVML_ERROR_UNINITIALIZED);
  assert_int_equal(N(nvmlInit_v2)(), NVML_SUCCESS);
  for (size_t i = 0; i < GS_NITEMS(names); i++)
    assert_int_equal(stub(names[i])(), NVML_ERROR_NOT_SUPPORTED);
  /* Called with their real signatures, as a client would (the ABI note in
   * src/nvml-emu/unsupported.c). */
  assert_int_equal(N(nvmlDeviceGetHandleByIndex_v2)(0, &gpu), NVML_SUCCESS);
  assert_int_equal(((nvmlReturn_t(*)(nvmlDevice_t, unsigned *))(uintptr_t)dlsym(
                       api.lib, "nvmlDeviceGetFanSpeed"))(gpu, &speed),
                   NVML_ERROR_NOT_SUPPORTED);
  assert_int_equal(((nvmlReturn_t(*)(nvmlDevice_t, int, unsigned *))(uintptr_t)dlsym(
                       api.lib, "nvmlDeviceGetClockInfo"))(gpu, 0, &clock),
                   NVML_ERROR_NOT_SUPPORTED);
  assert_int_equal(
      ((nvmlReturn_t(*)(unsigned *))(uintptr_t)dlsym(api.lib, "nvmlUnitGetCount"))(&units),
      NVML_ERROR_NOT_SUPPORTED);
  assert_int_equal(
      ((nvmlReturn_t(*)(nvmlDevice_t, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                        unsigned, unsigned))(
          uintptr_t)dlsym(api.lib, "nvmlDeviceSetGpuLockedClocks"))(gpu, 1, 2, 3, 4, 5, 6, 7, 8),
      NVML_ERROR_NOT_SUPPORTED);
  assert_int_equal(N(nvmlShutdown)(), NVML_SUCCESS);
  assert_null(dlsym(api.lib, "gs_backend_open"));
  assert_null(dlsym(api.lib, "gs_geom_models"));
  assert_null(dlsym(api.lib, "gs__nvemu_lock"));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(every_entry_point_has_a_case),
      cmocka_unit_test(every_export_is_covered),
      cmocka_unit_test(before_any_init),
      cmocka_unit_test(initialized),
      cmocka_unit_test(after_shutdown),
      cmocka_unit_test(unsupported_stubs),
  };
  if (gs_nvml_api_load(&api) != 0)
    return 1;
  return cmocka_run_group_tests(tests, setup, teardown);
}
