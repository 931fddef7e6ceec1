/* SPDX-License-Identifier: Apache-2.0 */
/* test-nvml-emu-calls.c: nvml-emu as an NVML client sees it (dlopen, calls
 * resolved by name): NVIDIA's MIG walkthrough on an A100-SXM4-40GB through NVML
 * calls only (Ampere's pending mode, profiles, placements, 7 x 1g.5gb getting
 * GI ids 9,7,8,11,12,13,14, CIs, MIG devices whose UUIDs match the backend
 * API's), then CIs in a 3g GI, processes, the older entry points, two GPUs and
 * a failing init. A fresh state file per test. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <sched.h>
#include <string.h>

#include "../lib/gs-nvml-emu.h"

#define N(fn) api.fn
#define OK(call) assert_int_equal((call), NVML_SUCCESS)
#define MIB (1024ull * 1024ull)

static struct gs_nvml_api api;

struct fixture {
  struct gs_nvml_machine m;
  nvmlDevice_t gpu;
  const struct gs_geom_model *model;
};

static int setup_spec(void **state, const char *spec)
{
  struct fixture *f = calloc(1, sizeof(*f));
  if (!f || gs_nvml_machine_new(&f->m, "nvml-calls", spec) != 0)
    return -1;
  f->model = gs_geom_model_find("a100-40gb");
  *state = f;
  return 0;
}

static int setup(void **state)
{
  return setup_spec(state, "a100-40gb");
}

static int setup_two(void **state)
{
  return setup_spec(state, "a100-40gb,a30-24gb");
}

static int teardown(void **state)
{
  struct fixture *f = *state;
  /* A failed test may leave inits open; the next must start on its own file
   * (extra shutdowns are harmless). */
  for (int i = 0; i < 4; i++)
    N(nvmlShutdown)();
  gs_nvml_machine_free(&f->m);
  free(f);
  return 0;
}

static const struct gs_geom_gi_profile *prof(const struct fixture *f, const char *name)
{
  const struct gs_geom_gi_profile *p = gs_geom_gi_profile_find(f->model, name);
  assert_non_null(p);
  return p;
}

static void init_gpu0(struct fixture *f)
{
  OK(N(nvmlInit_v2)());
  OK(N(nvmlDeviceGetHandleByIndex_v2)(0, &f->gpu));
}

static void enable_mig(struct fixture *f)
{
  nvmlReturn_t activation = NVML_ERROR_UNKNOWN;
  unsigned cur = 9, pend = 9;
  OK(N(nvmlDeviceSetMigMode)(f->gpu, NVML_DEVICE_MIG_ENABLE, &activation));
  assert_int_equal(activation, NVML_SUCCESS);
  OK(N(nvmlDeviceGetMigMode)(f->gpu, &cur, &pend));
  assert_int_equal(cur, 1);
  assert_int_equal(pend, 1);
}

static unsigned gi_id(nvmlGpuInstance_t gi, nvmlGpuInstanceInfo_t *out)
{
  nvmlGpuInstanceInfo_t info;
  OK(N(nvmlGpuInstanceGetInfo)(gi, &info));
  if (out)
    *out = info;
  return info.id;
}

/* ---- init, identity, versions ---- */

static void init_is_reference_counted(void **state)
{
  struct fixture *f = *state;
  unsigned n = 0;
  (void)f;
  assert_int_equal(N(nvmlDeviceGetCount_v2)(&n), NVML_ERROR_UNINITIALIZED);
  OK(N(nvmlInit_v2)());
  OK(N(nvmlInitWithFlags)(NVML_INIT_FLAG_NO_GPUS));
  OK(N(nvmlShutdown)());
  OK(N(nvmlDeviceGetCount_v2)(&n)); /* one init still open */
  assert_int_equal(n, 1);
  OK(N(nvmlShutdown)());
  assert_int_equal(N(nvmlDeviceGetCount_v2)(&n), NVML_ERROR_UNINITIALIZED);
  OK(N(nvmlShutdown)()); /* more shutdowns than inits: no error, as documented */
  OK(N(nvmlInit)());     /* the v1 name works the same */
  OK(N(nvmlDeviceGetCount)(&n));
  assert_int_equal(n, 1);
  OK(N(nvmlShutdown)());
}

static void identity_and_versions(void **state)
{
  struct fixture *f = *state;
  struct gs_backend *b = gs_nvml_machine_backend(&f->m);
  struct gs_gpu_info info;
  nvmlDevice_t h = NULL;
  nvmlPciInfo_t pci;
  char buf[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
  int cuda = 0;

  init_gpu0(f);
  OK(N(nvmlDeviceGetName)(f->gpu, buf, sizeof(buf)));
  assert_string_equal(buf, "NVIDIA A100-SXM4-40GB");
  assert_int_equal(N(nvmlDeviceGetName)(f->gpu, buf, 5), NVML_ERROR_INSUFFICIENT_SIZE);
  assert_non_null(b);
  assert_int_equal(b->ops->gpu_info(b, NULL, 0, &info), 0);
  OK(N(nvmlDeviceGetUUID)(f->gpu, buf, sizeof(buf)));
  assert_string_equal(buf, info.uuid);
  OK(N(nvmlDeviceGetHandleByUUID)(buf, &h));
  assert_ptr_equal(h, f->gpu);
  assert_int_equal(N(nvmlDeviceGetHandleByUUID)("GPU-00000000-0000-0000-0000-000000000000", &h),
                   NVML_ERROR_NOT_FOUND);

  OK(N(nvmlDeviceGetPciInfo_v3)(f->gpu, &pci));
  assert_string_equal(pci.busId, info.pci_bus_id);
  assert_string_equal(pci.busId, "00000000:07:00.0");
  assert_string_equal(pci.busIdLegacy, "0000:07:00.0");
  assert_int_equal(pci.bus, 7);
  assert_int_equal(pci.pciDeviceId, 0x20B010DE);
  for (const char *const *id =
           (const char *const[]){"00000000:07:00.0", "0000:07:00.0", "0:7:0", "07:00.0", NULL};
       *id; id++) {
    h = NULL;
    OK(N(nvmlDeviceGetHandleByPciBusId_v2)(*id, &h));
    assert_ptr_equal(h, f->gpu);
    OK(N(nvmlDeviceGetHandleByPciBusId)(*id, &h));
  }
  assert_int_equal(N(nvmlDeviceGetHandleByPciBusId_v2)("0000:08:00.0", &h), NVML_ERROR_NOT_FOUND);

  /* the default driver: the newest known (docs/models.md) */
  OK(N(nvmlSystemGetDriverVersion)(buf, sizeof(buf)));
  assert_string_equal(buf, "580.65.06");
  OK(N(nvmlSystemGetNVMLVersion)(buf, sizeof(buf)));
  assert_string_equal(buf, "13.580.65.06");
  OK(N(nvmlSystemGetCudaDriverVersion)(&cuda));
  assert_int_equal(cuda, 13000);
  OK(N(nvmlSystemGetCudaDriverVersion_v2)(&cuda));
  assert_int_equal(cuda, 13000);
  assert_int_equal(pci.pciSubSystemId, 0x134F10DE);
  assert_string_equal(N(nvmlErrorString)(NVML_ERROR_IN_USE), "In use by another client");
  assert_string_equal(N(nvmlErrorString)(NVML_ERROR_NOT_FOUND), "Not Found");
  assert_string_equal(N(nvmlErrorString)((nvmlReturn_t)12345), "Unknown Error");
  OK(N(nvmlShutdown)());
  gs_backend_close(b);
}

/* A machine's driver and boards, as --emulate names them, are what NVML
 * reports (issue 19): versions before and after nvmlInit, the board's own
 * name and PCI ids. */
static void driver_and_board(void **state)
{
  struct fixture *f = *state;
  nvmlPciInfo_t pci;
  char buf[96];
  int cuda = 0;
  /* NVML's own version and CUDA's answer before nvmlInit, the driver's after */
  OK(N(nvmlSystemGetNVMLVersion)(buf, sizeof(buf)));
  assert_string_equal(buf, "12.535.183.01");
  OK(N(nvmlSystemGetCudaDriverVersion)(&cuda));
  assert_int_equal(cuda, 12020);
  init_gpu0(f);
  OK(N(nvmlSystemGetDriverVersion)(buf, sizeof(buf)));
  assert_string_equal(buf, "535.183.01");
  OK(N(nvmlDeviceGetName)(f->gpu, buf, sizeof(buf)));
  assert_string_equal(buf, "NVIDIA A100-PCIE-40GB");
  OK(N(nvmlDeviceGetPciInfo_v3)(f->gpu, &pci));
  assert_int_equal(pci.pciDeviceId, 0x20F110DE);
  assert_int_equal(pci.pciSubSystemId, 0x145F10DE);
}

static int setup_pcie_535(void **state)
{
  return setup_spec(state, "a100-pcie-40gb@535");
}

static void emulated_constants(void **state)
{
  struct fixture *f = *state;
  nvmlTemperature_t t = {.version = nvmlTemperature_v1, .sensorType = NVML_TEMPERATURE_GPU};
  nvmlDeviceArchitecture_t arch = 0;
  nvmlBrandType_t brand = NVML_BRAND_UNKNOWN;
  nvmlMemory_t mem;
  nvmlMemory_v2_t mem2 = {.version = nvmlMemory_v2};
  nvmlUtilization_t u = {1, 1};
  unsigned temp = 0, power = 0, minor = 9, index = 9;
  unsigned long cpus[4] = {0};
  int major = 0, minor_cc = 9;
  char serial[NVML_DEVICE_SERIAL_BUFFER_SIZE];

  init_gpu0(f);
  OK(N(nvmlDeviceGetBrand)(f->gpu, &brand));
  assert_int_equal(brand, NVML_BRAND_NVIDIA);
  OK(N(nvmlDeviceGetArchitecture)(f->gpu, &arch));
  assert_int_equal(arch, NVML_DEVICE_ARCH_AMPERE);
  OK(N(nvmlDeviceGetCudaComputeCapability)(f->gpu, &major, &minor_cc));
  assert_int_equal(major, 8);
  assert_int_equal(minor_cc, 0);
  OK(N(nvmlDeviceGetTemperature)(f->gpu, NVML_TEMPERATURE_GPU, &temp));
  assert_in_range(temp, 20, 90);
  OK(N(nvmlDeviceGetTemperatureV)(f->gpu, &t));
  assert_int_equal(t.temperature, (int)temp);
  OK(N(nvmlDeviceGetPowerUsage)(f->gpu, &power));
  assert_in_range(power, 10000, 1000000);
  /* The CPU this test runs on is online, so among the GPU's ideal CPUs
   * (Slurm's gpu/nvml stops on an empty set). */
  OK(N(nvmlDeviceGetCpuAffinity)(f->gpu, GS_NITEMS(cpus), cpus));
  assert_true(sched_getcpu() >= 0 && (unsigned)sched_getcpu() < 64 * GS_NITEMS(cpus));
  assert_true(cpus[sched_getcpu() / 64] & (1ul << (sched_getcpu() % 64)));
  OK(N(nvmlDeviceGetSerial)(f->gpu, serial, sizeof(serial)));
  assert_int_equal(strlen(serial), 13);
  OK(N(nvmlDeviceGetMinorNumber)(f->gpu, &minor));
  assert_int_equal(minor, 0);
  OK(N(nvmlDeviceGetIndex)(f->gpu, &index));
  assert_int_equal(index, 0);
  OK(N(nvmlDeviceGetMemoryInfo)(f->gpu, &mem));
  assert_int_equal(mem.total, 40537 * MIB);
  assert_int_equal(mem.free + mem.used, mem.total);
  OK(N(nvmlDeviceGetMemoryInfo_v2)(f->gpu, &mem2));
  assert_int_equal(mem2.total, mem.total);
  OK(N(nvmlDeviceGetUtilizationRates)(f->gpu, &u));
  assert_int_equal(u.gpu, 0);
  enable_mig(f);
  assert_int_equal(N(nvmlDeviceGetUtilizationRates)(f->gpu, &u), NVML_ERROR_NOT_SUPPORTED);
  OK(N(nvmlDeviceGetMemoryInfo)(f->gpu, &mem)); /* the whole GPU's, in MIG mode too */
  assert_int_equal(mem.total, 40537 * MIB);
  OK(N(nvmlShutdown)());
}

/* ---- the walkthrough ---- */

/* Ampere: a busy GPU keeps the new mode pending (activationStatus IN_USE). */
static void mig_mode_ampere(struct fixture *f)
{
  struct gs_backend *b = gs_nvml_machine_backend(&f->m);
  struct gs_proc_info p = {
      .pid = 4242, .name = "python", .gpu = 0, .gi = -1, .ci = -1, .used_mib = 100};
  nvmlReturn_t activation = NVML_SUCCESS;
  unsigned cur = 9, pend = 9;
  struct gs_err err = {0};

  OK(N(nvmlDeviceGetMigMode)(f->gpu, &cur, &pend));
  assert_int_equal(cur, 0);
  assert_int_equal(pend, 0);
  assert_non_null(b);
  assert_int_equal(gs_emu_proc_add(b, &err, &p), 0);
  OK(N(nvmlDeviceSetMigMode)(f->gpu, NVML_DEVICE_MIG_ENABLE, &activation));
  assert_int_equal(activation, NVML_ERROR_IN_USE);
  OK(N(nvmlDeviceGetMigMode)(f->gpu, &cur, &pend));
  assert_int_equal(cur, 0);
  assert_int_equal(pend, 1);
  assert_int_equal(gs_emu_proc_remove(b, &err, 4242), 0);
  gs_backend_close(b);
  enable_mig(f);
}

static void profiles(struct fixture *f)
{
  const struct gs_geom_gi_profile *p = prof(f, "1g.5gb");
  nvmlGpuInstanceProfileInfo_t v1;
  nvmlGpuInstanceProfileInfo_v2_t v2 = {.version = nvmlGpuInstanceProfileInfo_v2};
  nvmlGpuInstanceProfileInfo_v3_t v3 = {.version = nvmlGpuInstanceProfileInfo_v3};

  OK(N(nvmlDeviceGetGpuInstanceProfileInfo)(f->gpu, NVML_GPU_INSTANCE_PROFILE_1_SLICE, &v1));
  assert_int_equal(v1.id, 19);
  assert_int_equal(v1.sliceCount, 1);
  assert_int_equal(v1.instanceCount, 7);
  assert_int_equal(v1.multiprocessorCount, p->sms);
  assert_int_equal(v1.memorySizeMB, p->memory_mib);
  OK(N(nvmlDeviceGetGpuInstanceProfileInfoV)(f->gpu, NVML_GPU_INSTANCE_PROFILE_1_SLICE, &v2));
  assert_int_equal(v2.id, 19);
  assert_int_equal(v2.version, nvmlGpuInstanceProfileInfo_v2);
  assert_string_equal(v2.name, "MIG 1g.5gb");
  OK(N(nvmlDeviceGetGpuInstanceProfileInfoV)(f->gpu, NVML_GPU_INSTANCE_PROFILE_3_SLICE,
                                             (nvmlGpuInstanceProfileInfo_v2_t *)&v3));
  assert_int_equal(v3.id, 9);
  assert_int_equal(v3.memorySizeMB, 19968);
  assert_string_equal(v3.name, "MIG 3g.20gb");
  assert_int_equal(v3.capabilities, 0);
  memset(&v2, 0, sizeof(v2));
  v2.version = nvmlGpuInstanceProfileInfo_v2;
  OK(N(nvmlDeviceGetGpuInstanceProfileInfoByIdV)(f->gpu, 15, &v2));
  assert_string_equal(v2.name, "MIG 1g.10gb");
  assert_int_equal(
      N(nvmlDeviceGetGpuInstanceProfileInfo)(f->gpu, NVML_GPU_INSTANCE_PROFILE_COUNT, &v1),
      NVML_ERROR_INVALID_ARGUMENT);
  assert_int_equal(
      N(nvmlDeviceGetGpuInstanceProfileInfo)(f->gpu, NVML_GPU_INSTANCE_PROFILE_8_SLICE, &v1),
      NVML_ERROR_NOT_SUPPORTED);
}

static void placements(struct fixture *f)
{
  nvmlGpuInstancePlacement_t pl[8];
  unsigned n = 0;
  OK(N(nvmlDeviceGetGpuInstancePossiblePlacements_v2)(f->gpu, 19, NULL, &n));
  assert_int_equal(n, 7);
  n = 3;
  assert_int_equal(N(nvmlDeviceGetGpuInstancePossiblePlacements_v2)(f->gpu, 19, pl, &n),
                   NVML_ERROR_INSUFFICIENT_SIZE);
  assert_int_equal(n, 7);
  OK(N(nvmlDeviceGetGpuInstancePossiblePlacements_v2)(f->gpu, 19, pl, &n));
  for (unsigned i = 0; i < 7; i++) {
    assert_int_equal(pl[i].start, i);
    assert_int_equal(pl[i].size, 1);
  }
  n = 8;
  OK(N(nvmlDeviceGetGpuInstancePossiblePlacements_v2)(f->gpu, 9, pl, &n));
  assert_int_equal(n, 2);
  assert_int_equal(pl[0].start, 0);
  assert_int_equal(pl[1].start, 4);
  assert_int_equal(pl[1].size, 4);
}

/* NVIDIA's all-1g walkthrough: GI ids 9,7,8,11,12,13,14 at slices 6,4,5,0..3. */
static void create_seven(struct fixture *f, nvmlGpuInstance_t gis[7])
{
  static const unsigned ids[7] = {9, 7, 8, 11, 12, 13, 14}, starts[7] = {6, 4, 5, 0, 1, 2, 3};
  nvmlGpuInstancePlacement_t bad = {7, 1}, wide = {2, 2}, at2 = {2, 1};
  nvmlGpuInstanceInfo_t info;
  nvmlGpuInstance_t extra;
  unsigned free_count = 0;

  OK(N(nvmlDeviceGetGpuInstanceRemainingCapacity)(f->gpu, 19, &free_count));
  assert_int_equal(free_count, 7);
  for (unsigned i = 0; i < 7; i++) {
    OK(N(nvmlDeviceCreateGpuInstance)(f->gpu, 19, &gis[i]));
    assert_int_equal(gi_id(gis[i], &info), ids[i]);
    assert_ptr_equal(info.device, f->gpu);
    assert_int_equal(info.profileId, 19);
    assert_int_equal(info.placement.start, starts[i]);
    assert_int_equal(info.placement.size, 1);
  }
  OK(N(nvmlDeviceGetGpuInstanceRemainingCapacity)(f->gpu, 19, &free_count));
  assert_int_equal(free_count, 0);
  assert_int_equal(N(nvmlDeviceCreateGpuInstance)(f->gpu, 19, &extra),
                   NVML_ERROR_INSUFFICIENT_RESOURCES);

  /* With a placement: slice 2 again gets id 13. */
  OK(N(nvmlGpuInstanceDestroy)(gis[5]));
  assert_int_equal(N(nvmlGpuInstanceGetInfo)(gis[5], &info),
                   NVML_ERROR_INVALID_ARGUMENT); /* stale */
  assert_int_equal(N(nvmlDeviceCreateGpuInstanceWithPlacement)(f->gpu, 19, &bad, &extra),
                   NVML_ERROR_INVALID_ARGUMENT);
  assert_int_equal(N(nvmlDeviceCreateGpuInstanceWithPlacement)(f->gpu, 19, &wide, &extra),
                   NVML_ERROR_INVALID_ARGUMENT);
  OK(N(nvmlDeviceCreateGpuInstanceWithPlacement)(f->gpu, 19, &at2, &gis[5]));
  assert_int_equal(gi_id(gis[5], &info), 13);
  assert_int_equal(info.placement.start, 2);
}

static void list_gis(struct fixture *f, nvmlGpuInstance_t gis[7])
{
  static const unsigned ascending[7] = {7, 8, 9, 11, 12, 13, 14};
  nvmlGpuInstance_t got[7], h;
  unsigned n = 7;
  OK(N(nvmlDeviceGetGpuInstances)(f->gpu, 19, got, &n));
  assert_int_equal(n, 7);
  for (unsigned i = 0; i < 7; i++)
    assert_int_equal(gi_id(got[i], NULL), ascending[i]);
  n = 7;
  OK(N(nvmlDeviceGetGpuInstances)(f->gpu, 9, got, &n));
  assert_int_equal(n, 0);
  OK(N(nvmlDeviceGetGpuInstanceById)(f->gpu, 9, &h));
  assert_ptr_equal(h, gis[0]);
  assert_int_equal(N(nvmlDeviceGetGpuInstanceById)(f->gpu, 10, &h), NVML_ERROR_NOT_FOUND);
}

static void create_cis(struct fixture *f, nvmlGpuInstance_t gis[7], nvmlComputeInstance_t cis[7])
{
  nvmlComputeInstanceProfileInfo_t ci;
  nvmlComputeInstanceProfileInfo_v2_t civ = {.version = nvmlComputeInstanceProfileInfo_v2};
  nvmlComputeInstanceInfo_t info;
  nvmlComputeInstance_t h;
  unsigned n = 0;

  OK(N(nvmlGpuInstanceGetComputeInstanceProfileInfo)(gis[0], NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE,
                                                     NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED,
                                                     &ci));
  assert_int_equal(ci.id, 0);
  assert_int_equal(ci.sliceCount, 1);
  assert_int_equal(ci.instanceCount, 1);
  assert_int_equal(ci.multiprocessorCount, 14);
  OK(N(nvmlGpuInstanceGetComputeInstanceProfileInfoV)(gis[0], 0, 0, &civ));
  assert_string_equal(civ.name, "MIG 1g.5gb");
  assert_int_equal(N(nvmlGpuInstanceGetComputeInstanceProfileInfo)(
                       gis[0], NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE, 0, &ci),
                   NVML_ERROR_NOT_SUPPORTED);
  OK(N(nvmlGpuInstanceGetComputeInstanceRemainingCapacity)(gis[0], 0, &n));
  assert_int_equal(n, 1);
  for (unsigned i = 0; i < 7; i++) {
    OK(N(nvmlGpuInstanceCreateComputeInstance)(gis[i], 0, &cis[i]));
    OK(N(nvmlComputeInstanceGetInfo_v2)(cis[i], &info));
    assert_int_equal(info.id, 0);
    assert_int_equal(info.profileId, 0);
    assert_ptr_equal(info.device, f->gpu);
    assert_ptr_equal(info.gpuInstance, gis[i]);
    assert_int_equal(info.placement.start, 0);
    assert_int_equal(info.placement.size, 1);
  }
  n = 1;
  OK(N(nvmlGpuInstanceGetComputeInstances)(gis[0], 0, &h, &n));
  assert_int_equal(n, 1);
  assert_ptr_equal(h, cis[0]);
  OK(N(nvmlGpuInstanceGetComputeInstanceById)(gis[0], 0, &h));
  assert_ptr_equal(h, cis[0]);
  assert_int_equal(N(nvmlGpuInstanceCreateComputeInstance)(gis[0], 0, &h),
                   NVML_ERROR_INSUFFICIENT_RESOURCES);
}

/* MIG devices through NVML, and their UUIDs through the backend API. */
static void mig_devices(struct fixture *f)
{
  static const unsigned ascending[7] = {7, 8, 9, 11, 12, 13, 14};
  struct gs_backend *b = gs_nvml_machine_backend(&f->m);
  struct gs_mig_device devs[GS_BACKEND_MAX_MIG_DEVICES];
  unsigned max = 0, n = 0, v = 0;
  nvmlDeviceAttributes_t a;
  nvmlMemory_t mem;
  nvmlDevice_t mig, parent, again;
  char buf[NVML_DEVICE_NAME_V2_BUFFER_SIZE];

  assert_non_null(b);
  assert_int_equal(b->ops->mig_devices(b, NULL, 0, devs, &n), 0);
  assert_int_equal(n, 7);
  OK(N(nvmlDeviceGetMaxMigDeviceCount)(f->gpu, &max));
  assert_int_equal(max, 7);
  for (unsigned i = 0; i < 7; i++) {
    OK(N(nvmlDeviceGetMigDeviceHandleByIndex)(f->gpu, i, &mig));
    OK(N(nvmlDeviceIsMigDeviceHandle)(mig, &v));
    assert_int_equal(v, 1);
    OK(N(nvmlDeviceGetGpuInstanceId)(mig, &v));
    assert_int_equal(v, ascending[i]);
    OK(N(nvmlDeviceGetComputeInstanceId)(mig, &v));
    assert_int_equal(v, 0);
    OK(N(nvmlDeviceGetIndex)(mig, &v));
    assert_int_equal(v, i);
    OK(N(nvmlDeviceGetUUID)(mig, buf, sizeof(buf)));
    assert_string_equal(buf, devs[i].uuid);
    assert_memory_equal(buf, "MIG-", 4);
    OK(N(nvmlDeviceGetHandleByUUID)(buf, &again));
    assert_ptr_equal(again, mig);
    OK(N(nvmlDeviceGetHandleByUUID)(devs[i].legacy_uuid, &again));
    assert_ptr_equal(again, mig);
    OK(N(nvmlDeviceGetName)(mig, buf, sizeof(buf)));
    assert_string_equal(buf, "NVIDIA A100-SXM4-40GB MIG 1g.5gb");
    OK(N(nvmlDeviceGetDeviceHandleFromMigDeviceHandle)(mig, &parent));
    assert_ptr_equal(parent, f->gpu);
    OK(N(nvmlDeviceGetMemoryInfo)(mig, &mem));
    assert_int_equal(mem.total, 4864 * MIB);
    OK(N(nvmlDeviceGetAttributes_v2)(mig, &a));
    assert_int_equal(a.multiprocessorCount, 14);
    assert_int_equal(a.gpuInstanceSliceCount, 1);
    assert_int_equal(a.computeInstanceSliceCount, 1);
    assert_int_equal(a.memorySizeMB, 4864);
    assert_int_equal(a.sharedCopyEngineCount, 1);
  }
  OK(N(nvmlDeviceIsMigDeviceHandle)(f->gpu, &v));
  assert_int_equal(v, 0);
  assert_int_equal(N(nvmlDeviceGetAttributes_v2)(f->gpu, &a), NVML_ERROR_INVALID_ARGUMENT);
  assert_int_equal(N(nvmlDeviceGetMigDeviceHandleByIndex)(f->gpu, 7, &mig),
                   NVML_ERROR_INVALID_ARGUMENT);
  gs_backend_close(b);
}

static void teardown_walkthrough(struct fixture *f, nvmlGpuInstance_t gis[7],
                                 nvmlComputeInstance_t cis[7])
{
  nvmlReturn_t activation = NVML_ERROR_UNKNOWN;
  nvmlDevice_t mig;
  unsigned max = 9;
  assert_int_equal(N(nvmlGpuInstanceDestroy)(gis[0]), NVML_ERROR_IN_USE);
  OK(N(nvmlComputeInstanceDestroy)(cis[0]));
  assert_int_equal(N(nvmlComputeInstanceDestroy)(cis[0]), NVML_ERROR_INVALID_ARGUMENT); /* gone */
  OK(N(nvmlDeviceGetMigDeviceHandleByIndex)(f->gpu, 5, &mig));
  assert_int_equal(N(nvmlDeviceGetMigDeviceHandleByIndex)(f->gpu, 6, &mig), NVML_ERROR_NOT_FOUND);
  for (unsigned i = 1; i < 7; i++)
    OK(N(nvmlComputeInstanceDestroy)(cis[i]));
  assert_int_equal(N(nvmlDeviceSetMigMode)(f->gpu, NVML_DEVICE_MIG_DISABLE, &activation),
                   NVML_ERROR_IN_USE);
  for (unsigned i = 0; i < 7; i++)
    OK(N(nvmlGpuInstanceDestroy)(gis[i]));
  OK(N(nvmlDeviceSetMigMode)(f->gpu, NVML_DEVICE_MIG_DISABLE, &activation));
  assert_int_equal(activation, NVML_SUCCESS);
  OK(N(nvmlDeviceGetMaxMigDeviceCount)(f->gpu, &max));
  assert_int_equal(max, 0);
}

static void walkthrough(void **state)
{
  struct fixture *f = *state;
  nvmlGpuInstance_t gis[7];
  nvmlComputeInstance_t cis[7];
  nvmlGpuInstanceProfileInfo_t info;
  unsigned n = 0;

  init_gpu0(f);
  /* Profiles need MIG on; placements do not. */
  assert_int_equal(N(nvmlDeviceGetGpuInstanceProfileInfo)(f->gpu, 0, &info),
                   NVML_ERROR_NOT_SUPPORTED);
  OK(N(nvmlDeviceGetGpuInstancePossiblePlacements_v2)(f->gpu, 19, NULL, &n));
  assert_int_equal(n, 7);
  mig_mode_ampere(f);
  profiles(f);
  placements(f);
  create_seven(f, gis);
  list_gis(f, gis);
  create_cis(f, gis, cis);
  mig_devices(f);
  teardown_walkthrough(f, gis, cis);
  OK(N(nvmlShutdown)());
}

/* ---- a 3g GI with three 1c CIs, processes, memory ---- */

static void three_cis_and_processes(void **state)
{
  struct fixture *f = *state;
  struct gs_backend *b = gs_nvml_machine_backend(&f->m);
  struct gs_proc_info p = {.pid = 777, .name = "triton", .gpu = 0, .used_mib = 1000};
  nvmlGpuInstancePlacement_t at4 = {4, 4};
  nvmlComputeInstancePlacement_t cpl[4], c2 = {2, 1};
  nvmlProcessInfo_t procs[4];
  nvmlGpuInstance_t gi;
  nvmlComputeInstance_t ci[3];
  nvmlDevice_t mig;
  nvmlMemory_t mem;
  nvmlDeviceAttributes_t a;
  struct gs_err err = {0};
  unsigned n = 0, id = 0;
  char buf[NVML_DEVICE_NAME_V2_BUFFER_SIZE];

  init_gpu0(f);
  enable_mig(f);
  OK(N(nvmlDeviceCreateGpuInstanceWithPlacement)(f->gpu, 9, &at4, &gi));
  assert_int_equal(gi_id(gi, NULL), 1); /* the swapped tree: 4:4 is node 1 */
  OK(N(nvmlGpuInstanceGetComputeInstancePossiblePlacements)(gi, 0, NULL, &n));
  assert_int_equal(n, 3);
  OK(N(nvmlGpuInstanceGetComputeInstancePossiblePlacements)(gi, 0, cpl, &n));
  assert_int_equal(cpl[2].start, 2);
  OK(N(nvmlGpuInstanceCreateComputeInstance)(gi, 0, &ci[0]));
  OK(N(nvmlGpuInstanceCreateComputeInstance)(gi, 0, &ci[1]));
  OK(N(nvmlGpuInstanceCreateComputeInstanceWithPlacement)(gi, 0, &c2, &ci[2]));
  OK(N(nvmlDeviceGetMigDeviceHandleByIndex)(f->gpu, 2, &mig));
  OK(N(nvmlDeviceGetName)(mig, buf, sizeof(buf)));
  assert_string_equal(buf, "NVIDIA A100-SXM4-40GB MIG 1c.3g.20gb");
  OK(N(nvmlDeviceGetComputeInstanceId)(mig, &id));
  assert_int_equal(id, 2);
  OK(N(nvmlDeviceGetAttributes_v2)(mig, &a));
  assert_int_equal(a.gpuInstanceSliceCount, 3);
  assert_int_equal(a.computeInstanceSliceCount, 1);
  assert_int_equal(a.memorySizeMB, 19968);

  /* A process on CI 2 of GI 1. */
  p.gi = 1;
  p.ci = 2;
  assert_non_null(b);
  assert_int_equal(gs_emu_proc_add(b, &err, &p), 0);
  n = 0;
  assert_int_equal(N(nvmlDeviceGetComputeRunningProcesses_v3)(f->gpu, &n, NULL),
                   NVML_ERROR_INSUFFICIENT_SIZE);
  assert_int_equal(n, 1);
  OK(N(nvmlDeviceGetComputeRunningProcesses_v3)(f->gpu, &n, procs));
  assert_int_equal(procs[0].pid, 777);
  assert_int_equal(procs[0].usedGpuMemory, 1000 * MIB);
  assert_int_equal(procs[0].gpuInstanceId, 1);
  assert_int_equal(procs[0].computeInstanceId, 2);
  n = 4;
  OK(N(nvmlDeviceGetComputeRunningProcesses_v3)(mig, &n, procs)); /* the MIG device's own */
  assert_int_equal(n, 1);
  OK(N(nvmlDeviceGetMigDeviceHandleByIndex)(f->gpu, 0, &mig));
  n = 4;
  OK(N(nvmlDeviceGetComputeRunningProcesses_v3)(mig, &n, procs));
  assert_int_equal(n, 0);
  OK(N(nvmlDeviceGetMemoryInfo)(mig, &mem)); /* CIs share their GI's memory */
  assert_int_equal(mem.used, 1000 * MIB);
  n = 4;
  OK(N(nvmlDeviceGetGraphicsRunningProcesses_v3)(f->gpu, &n, procs));
  assert_int_equal(n, 0);
  OK(N(nvmlSystemGetProcessName)(777, buf, sizeof(buf)));
  assert_string_equal(buf, "triton");
  OK(N(nvmlSystemGetProcessName)(777, buf, 4)); /* cropped, as documented */
  assert_string_equal(buf, "tri");
  assert_int_equal(N(nvmlSystemGetProcessName)(778, buf, sizeof(buf)), NVML_ERROR_NOT_FOUND);
  assert_int_equal(N(nvmlComputeInstanceDestroy)(ci[2]), NVML_ERROR_IN_USE);
  assert_int_equal(gs_emu_proc_remove(b, &err, 777), 0);
  for (unsigned i = 0; i < 3; i++)
    OK(N(nvmlComputeInstanceDestroy)(ci[i]));
  OK(N(nvmlGpuInstanceDestroy)(gi));
  OK(N(nvmlShutdown)());
  gs_backend_close(b);
}

/* ---- the older entry points write only their older structs ---- */

static void legacy_entry_points(void **state)
{
  struct fixture *f = *state;
  struct gs_backend *b = gs_nvml_machine_backend(&f->m);
  struct gs_proc_info p = {.pid = 99, .name = "old", .gpu = 0, .gi = -1, .ci = -1, .used_mib = 5};
  nvmlPciInfo_t pci;
  nvmlProcessInfo_v1_t v1[2];
  nvmlProcessInfo_v2_t v2[2];
  nvmlGpuInstancePlacement_t pl[7];
  nvmlGpuInstance_t gi;
  nvmlComputeInstance_t ci;
  nvmlComputeInstanceInfo_t cinfo;
  nvmlDeviceAttributes_t a;
  nvmlDevice_t mig, h;
  struct gs_err err = {0};
  unsigned n = 0;

  init_gpu0(f);
  memset(&pci, 0x5A, sizeof(pci));
  OK(N(nvmlDeviceGetPciInfo)(f->gpu, &pci));
  assert_string_equal(pci.busIdLegacy, "0000:07:00.0");
  assert_int_equal(pci.pciDeviceId, 0x20B010DE);
  assert_int_equal((unsigned char)pci.busId[0], 0x5A); /* past the old struct: untouched */
  OK(N(nvmlDeviceGetPciInfo_v2)(f->gpu, &pci));
  assert_int_equal((unsigned char)pci.busId[0], 0x5A);
  OK(N(nvmlDeviceGetHandleByIndex)(0, &h));
  assert_ptr_equal(h, f->gpu);

  assert_non_null(b);
  assert_int_equal(gs_emu_proc_add(b, &err, &p), 0);
  n = 2;
  OK(N(nvmlDeviceGetComputeRunningProcesses)(f->gpu, &n, v1));
  assert_int_equal(n, 1);
  assert_int_equal(v1[0].pid, 99);
  assert_int_equal(v1[0].usedGpuMemory, 5 * MIB);
  n = 2;
  OK(N(nvmlDeviceGetComputeRunningProcesses_v2)(f->gpu, &n, v2));
  assert_int_equal(v2[0].gpuInstanceId, 0xFFFFFFFFu);
  assert_int_equal(v2[0].computeInstanceId, 0xFFFFFFFFu);
  n = 2;
  OK(N(nvmlDeviceGetGraphicsRunningProcesses)(f->gpu, &n, v1));
  assert_int_equal(n, 0);
  n = 2;
  OK(N(nvmlDeviceGetGraphicsRunningProcesses_v2)(f->gpu, &n, v2));
  assert_int_equal(n, 0);
  assert_int_equal(gs_emu_proc_remove(b, &err, 99), 0);

  /* v1 placements: MIG off is NOT_SUPPORTED, and there is no NULL query. */
  assert_int_equal(N(nvmlDeviceGetGpuInstancePossiblePlacements)(f->gpu, 19, pl, &n),
                   NVML_ERROR_NOT_SUPPORTED);
  enable_mig(f);
  assert_int_equal(N(nvmlDeviceGetGpuInstancePossiblePlacements)(f->gpu, 19, NULL, &n),
                   NVML_ERROR_INVALID_ARGUMENT);
  n = 0; /* output only: not read */
  OK(N(nvmlDeviceGetGpuInstancePossiblePlacements)(f->gpu, 19, pl, &n));
  assert_int_equal(n, 7);
  assert_int_equal(pl[6].start, 6);
  memset(pl, 0x5A, sizeof(pl));
  OK(N(nvmlDeviceGetGpuInstancePossiblePlacements)(f->gpu, 20, pl, &n)); /* 1g.5gb+me: 1 instance */
  assert_int_equal(n, 1);
  assert_int_equal(pl[1].start, 0x5A5A5A5Au); /* the caller's array held instanceCount entries */

  OK(N(nvmlDeviceCreateGpuInstance)(f->gpu, 0, &gi)); /* 7g.40gb */
  OK(N(nvmlGpuInstanceCreateComputeInstance)(gi, 4, &ci));
  memset(&cinfo, 0x5A, sizeof(cinfo));
  OK(N(nvmlComputeInstanceGetInfo)(ci, &cinfo));
  assert_ptr_equal(cinfo.gpuInstance, gi);
  assert_int_equal(cinfo.profileId, 4);
  assert_int_equal(cinfo.placement.start, 0x5A5A5A5Au); /* no placement in v1 */
  OK(N(nvmlDeviceGetMigDeviceHandleByIndex)(f->gpu, 0, &mig));
  memset(&a, 0x5A, sizeof(a));
  OK(N(nvmlDeviceGetAttributes)(mig, &a));
  assert_int_equal(a.multiprocessorCount, 98);
  assert_int_equal(a.sharedCopyEngineCount, 7);
  assert_int_equal(a.gpuInstanceSliceCount, 0x5A5A5A5Au); /* not in the v1 struct */
  OK(N(nvmlComputeInstanceDestroy)(ci));
  OK(N(nvmlGpuInstanceDestroy)(gi));
  OK(N(nvmlShutdown)());
  gs_backend_close(b);
}

/* ---- two GPUs of different sizes ---- */

static void two_gpus(void **state)
{
  struct fixture *f = *state;
  nvmlDevice_t a30, h;
  nvmlPciInfo_t pci;
  unsigned n = 0, max = 0;
  char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];

  init_gpu0(f);
  OK(N(nvmlDeviceGetCount_v2)(&n));
  assert_int_equal(n, 2);
  OK(N(nvmlDeviceGetHandleByIndex_v2)(1, &a30));
  assert_ptr_not_equal(a30, f->gpu);
  assert_int_equal(N(nvmlDeviceGetHandleByIndex_v2)(2, &h), NVML_ERROR_INVALID_ARGUMENT);
  OK(N(nvmlDeviceGetName)(a30, name, sizeof(name)));
  assert_string_equal(name, "NVIDIA A30");
  OK(N(nvmlDeviceGetPciInfo_v3)(a30, &pci));
  OK(N(nvmlDeviceGetHandleByPciBusId_v2)(pci.busId, &h));
  assert_ptr_equal(h, a30);
  OK(N(nvmlDeviceGetMaxMigDeviceCount)(a30, &max));
  assert_int_equal(max, 0);
  f->gpu = a30;
  enable_mig(f);
  OK(N(nvmlDeviceGetMaxMigDeviceCount)(a30, &max));
  assert_int_equal(max, 4); /* a 4-slice GPU */
  OK(N(nvmlShutdown)());
}

/* An emulator that cannot start is a driver that is not loaded; the reason
 * goes to stderr. */
static void init_fails_without_an_emulator(void **state)
{
  struct fixture *f = *state;
  unsigned n = 0;
  OK(N(nvmlInit_v2)()); /* creates the state file: one A100 */
  OK(N(nvmlShutdown)());
  setenv("GPUSLICE_EMULATE", "h100-80gb", 1); /* another machine than the file holds */
  assert_int_equal(N(nvmlInit_v2)(), NVML_ERROR_DRIVER_NOT_LOADED);
  assert_int_equal(N(nvmlDeviceGetCount_v2)(&n), NVML_ERROR_UNINITIALIZED);
  setenv("GPUSLICE_EMULATE", "", 1);
  assert_int_equal(gs_test_write(f->m.state, "{not json", 9), 0);
  assert_int_equal(N(nvmlInit_v2)(), NVML_ERROR_DRIVER_NOT_LOADED);
  unsetenv("GPUSLICE_EMULATE");
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(init_is_reference_counted, setup, teardown),
      cmocka_unit_test_setup_teardown(identity_and_versions, setup, teardown),
      cmocka_unit_test_setup_teardown(emulated_constants, setup, teardown),
      cmocka_unit_test_setup_teardown(driver_and_board, setup_pcie_535, teardown),
      cmocka_unit_test_setup_teardown(walkthrough, setup, teardown),
      cmocka_unit_test_setup_teardown(three_cis_and_processes, setup, teardown),
      cmocka_unit_test_setup_teardown(legacy_entry_points, setup, teardown),
      cmocka_unit_test_setup_teardown(two_gpus, setup_two, teardown),
      cmocka_unit_test_setup_teardown(init_fails_without_an_emulator, setup, teardown),
  };
  if (gs_nvml_api_load(&api) != 0)
    return 1;
  return cmocka_run_group_tests(tests, NULL, NULL);
}
