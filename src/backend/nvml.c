/* SPDX-License-Identifier: Apache-2.0 */
/* nvml.c: the backend for real GPUs. libnvidia-ml.so.1 is loaded at run time
 * (no link-time dependency, no NVIDIA header: nvml_abi.h declares the subset),
 * versioned symbols fall back to older names, and entry points an old driver
 * lacks turn into errors that name the driver needed. Each GPU's profiles are
 * read from the driver when MIG is on (the driver is the truth); the geometry
 * tables stand in when it is off. NVML errors keep NVML's code and gain a fix. */
#include "backend/internal.h"
#include "backend/nvml_abi.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MIB (1024ull * 1024ull)
#define MAX_PROFILES 24

/* Every entry point, as a typed pointer; NULL when the driver lacks it. */
struct nvml_api {
  void *lib;
#define GS__NVML_FIELD(name, params) __typeof__(name) *name;
  GS_NVML_FUNCTIONS(GS__NVML_FIELD)
#undef GS__NVML_FIELD
  __typeof__(nvmlErrorString) *nvmlErrorString;
};

/* One GPU: its handle and the geometry the driver reports for it. */
struct nvml_gpu {
  nvmlDevice_t dev;
  const struct gs_geom_model *known; /* the table row for this model, if any */
  struct gs_geom_model model;        /* what the backend works with */
  struct gs_geom_gi_profile gi[MAX_PROFILES];
  char names[MAX_PROFILES][GS_GEOM_NAME_SIZE];
  char key[40], name[GS_BACKEND_NAME_SIZE];
};

struct nvml {
  struct gs_backend base;
  struct nvml_api api;
  bool initialized; /* nvmlInit succeeded: nvmlShutdown is owed */
  unsigned ngpu;
  struct nvml_gpu gpu[GS_BACKEND_MAX_GPUS];
};

static struct nvml *nvml_of(struct gs_backend *b)
{
  return (struct nvml *)b;
}

/* ---- errors ---- */

/* What a person can do about an NVML error, for the usual causes. */
static const char *hint_for(nvmlReturn_t rc)
{
  switch (rc) {
  case NVML_ERROR_NO_PERMISSION:
    return "run as root (sudo), or grant the mig/config capability "
           "(/proc/driver/nvidia/capabilities/mig/config)";
  case NVML_ERROR_IN_USE:
    return "processes or compute instances still use it: stop the processes (nvidia-smi lists "
           "them; so can monitoring agents such as dcgm or nvidia-persistenced), destroy its "
           "compute instances, then retry";
  case NVML_ERROR_RESET_REQUIRED:
    return "reset the GPU (nvidia-smi --gpu-reset -i GPU) or reboot to apply the change";
  case NVML_ERROR_NOT_SUPPORTED:
    return "MIG may be disabled on this GPU (gpuslice mig enable), or the GPU or driver cannot "
           "do this";
  case NVML_ERROR_INSUFFICIENT_RESOURCES:
    return "no room left: `gpuslice gi profiles` shows what still fits";
  case NVML_ERROR_GPU_IS_LOST:
    return "the GPU fell off the bus: check `dmesg`, then reset the GPU or reboot";
  case NVML_ERROR_DRIVER_NOT_LOADED:
    return "load the NVIDIA kernel module (modprobe nvidia) or reinstall the driver";
  case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
    return "libnvidia-ml and the kernel module differ in version: reboot after a driver update";
  default:
    return NULL;
  }
}

static const char *nvml_text(const struct nvml *n, nvmlReturn_t rc)
{
  const char *s = n->api.nvmlErrorString ? n->api.nvmlErrorString(rc) : NULL;
  return s ? s : "unknown NVML error";
}

/* "GPU 0: cannot create ...: Insufficient Resources; <fix>" with NVML's code. */
static int nvml_fail(struct gs_err *err, const struct nvml *n, nvmlReturn_t rc, const char *fmt, ...)
    GS_PRINTF(4, 5);
static int nvml_fail(struct gs_err *err, const struct nvml *n, nvmlReturn_t rc, const char *fmt, ...)
{
  char what[GS_ERR_MSG_SIZE];
  const char *hint = hint_for(rc);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof(what), fmt, ap);
  va_end(ap);
  return gs_err_set(err, gs_backend_code_from_nvml((int)rc), "%s: %s%s%s", what, nvml_text(n, rc),
                    hint ? "; " : "", hint ? hint : "");
}

/* An entry point this driver does not export. */
static int missing(struct gs_err *err, const char *symbol, const char *needs)
{
  return gs_err_set(err, GS_E_FUNCTION_NOT_FOUND,
                    "this NVIDIA driver's libnvidia-ml.so.1 lacks %s; %s", symbol, needs);
}

#define NEED(n, err, fn, needs)                                                                    \
  do {                                                                                             \
    if (!(n)->api.fn)                                                                              \
      return missing(err, #fn, needs);                                                             \
  } while (0)

/* The driver branch that first exported each newer entry point, from the
 * history of NVIDIA's nvml.h (NVIDIA/go-nvml gen/nvml/nvml.h): CUDA 11.0 /
 * R450 the MIG calls; 11.1 / R455 the _v2 process lists; 11.2.2 / R460
 * nvmlDeviceCreateGpuInstanceWithPlacement and nvmlComputeInstanceGetInfo_v2;
 * 11.4 / R470 the _v2 GI placements; 11.6 / R510 the V profile calls and _v3
 * process lists; 12.0 / R525 compute-instance placements. */
#define NEEDS_MIG "MIG needs driver R450 or later (R470+ for MIG UUIDs)"
#define NEEDS_CI_INFO "reading compute instances needs driver R460 or later"

/* ---- loading ---- */

/* Versioned names first, then the names older drivers export (go-nvml and
 * libnvidia-container resolve the same way). */
static void *resolve(void *lib, const char *name)
{
  static const struct {
    const char *versioned, *older;
  } fallbacks[] = {
      {"nvmlInit_v2", "nvmlInit"},
      {"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"},
      {"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"},
      {"nvmlDeviceGetHandleByPciBusId_v2", "nvmlDeviceGetHandleByPciBusId"},
      {"nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2"},
      {"nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2"},
      {"nvmlDeviceGetGraphicsRunningProcesses_v3", "nvmlDeviceGetGraphicsRunningProcesses_v2"},
      {"nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion"},
  };
  void *sym = dlsym(lib, name);
  for (unsigned i = 0; !sym && i < GS_NITEMS(fallbacks); i++)
    if (strcmp(fallbacks[i].versioned, name) == 0)
      sym = dlsym(lib, fallbacks[i].older);
  return sym;
}

static const char *library_path(const struct gs_backend_config *cfg)
{
  const char *env = getenv("GPUSLICE_NVML_LIBRARY");
  if (cfg->nvml_library && *cfg->nvml_library)
    return cfg->nvml_library;
  return env && *env ? env : "libnvidia-ml.so.1";
}

static int load_api(struct gs_err *err, struct nvml_api *api, const char *path)
{
  api->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!api->lib)
    return gs_err_set(err, GS_E_LIBRARY_NOT_FOUND,
                      "cannot load %s (%s): the NVIDIA driver is not installed here; install it, "
                      "or use --backend emu for emulated GPUs",
                      path, dlerror());
#define GS__NVML_RESOLVE(name, params) api->name = (__typeof__(api->name))resolve(api->lib, #name);
  GS_NVML_FUNCTIONS(GS__NVML_RESOLVE)
#undef GS__NVML_RESOLVE
  api->nvmlErrorString = (__typeof__(api->nvmlErrorString))dlsym(api->lib, "nvmlErrorString");
  if (!api->nvmlInit_v2 || !api->nvmlShutdown || !api->nvmlDeviceGetCount_v2 ||
      !api->nvmlDeviceGetHandleByIndex_v2 || !api->nvmlDeviceGetName || !api->nvmlDeviceGetUUID)
    return gs_err_set(err, GS_E_FUNCTION_NOT_FOUND,
                      "%s is not a usable NVML library: it lacks nvmlInit, nvmlDeviceGetCount, "
                      "nvmlDeviceGetHandleByIndex, nvmlDeviceGetName or nvmlDeviceGetUUID",
                      path);
  return 0;
}

/* ---- each GPU's geometry ---- */

static enum gs_geom_media media_of(const char *name)
{
  if (strstr(name, "+me.all"))
    return GS_GEOM_MEDIA_ALL;
  if (strstr(name, "+me"))
    return GS_GEOM_MEDIA_ME;
  if (strstr(name, "-me"))
    return GS_GEOM_MEDIA_NONE;
  return GS_GEOM_MEDIA_SHARED;
}

/* Profile info for one NVML enum, preferring the V call (it carries the name). */
static nvmlReturn_t profile_info(const struct nvml *n, nvmlDevice_t dev, unsigned e,
                                 nvmlGpuInstanceProfileInfo_v2_t *v2)
{
  nvmlGpuInstanceProfileInfo_t v1;
  nvmlReturn_t rc;
  memset(v2, 0, sizeof(*v2));
  if (n->api.nvmlDeviceGetGpuInstanceProfileInfoV) {
    v2->version = nvmlGpuInstanceProfileInfo_v2;
    return n->api.nvmlDeviceGetGpuInstanceProfileInfoV(dev, e, v2);
  }
  if (!n->api.nvmlDeviceGetGpuInstanceProfileInfo)
    return NVML_ERROR_FUNCTION_NOT_FOUND;
  if ((rc = n->api.nvmlDeviceGetGpuInstanceProfileInfo(dev, e, &v1)) != NVML_SUCCESS)
    return rc;
  v2->id = v1.id;
  v2->sliceCount = v1.sliceCount;
  v2->instanceCount = v1.instanceCount;
  v2->multiprocessorCount = v1.multiprocessorCount;
  v2->copyEngineCount = v1.copyEngineCount;
  v2->decoderCount = v1.decoderCount;
  v2->encoderCount = v1.encoderCount;
  v2->jpegCount = v1.jpegCount;
  v2->ofaCount = v1.ofaCount;
  v2->memorySizeMB = v1.memorySizeMB;
  return NVML_SUCCESS;
}

/* Fills p's span and legal starts from the driver's possible placements. */
static bool read_placements(const struct nvml *n, nvmlDevice_t dev, struct gs_geom_gi_profile *p)
{
  nvmlGpuInstancePlacement_t pl[GS_GEOM_MAX_GRID * 2];
  unsigned count = GS_NITEMS(pl);
  if (!n->api.nvmlDeviceGetGpuInstancePossiblePlacements_v2 ||
      n->api.nvmlDeviceGetGpuInstancePossiblePlacements_v2(dev, p->id, pl, &count) != NVML_SUCCESS)
    return false;
  for (unsigned i = 0; i < count && i < GS_NITEMS(pl); i++) {
    if (pl[i].start >= GS_GEOM_MAX_GRID || pl[i].start + pl[i].size > GS_GEOM_MAX_GRID)
      continue; /* wider than any grid we model: leave it out rather than guess */
    p->starts |= 1u << pl[i].start;
    p->span = pl[i].size;
  }
  return p->starts != 0;
}

/* One profile as the driver reports it; names come from the V call, or from
 * the tables when an older driver has only the v1 call. */
static bool read_profile(const struct nvml *n, struct nvml_gpu *g, unsigned e, unsigned k)
{
  nvmlGpuInstanceProfileInfo_v2_t info;
  struct gs_geom_gi_profile *p = &g->gi[k];
  const struct gs_geom_gi_profile *row;
  if (profile_info(n, g->dev, e, &info) != NVML_SUCCESS)
    return false;
  memset(p, 0, sizeof(*p));
  row = g->known ? gs_geom_gi_profile_by_id(g->known, info.id) : NULL;
  if (strncmp(info.name, "MIG ", 4) == 0)
    snprintf(g->names[k], sizeof(g->names[k]), "%.*s", GS_GEOM_NAME_SIZE - 1, info.name + 4);
  else if (row)
    snprintf(g->names[k], sizeof(g->names[k]), "%s", row->name);
  else
    snprintf(g->names[k], sizeof(g->names[k]), "%ug.%llugb", info.sliceCount,
             (info.memorySizeMB + 1023) / 1024);
  *p = (struct gs_geom_gi_profile){
      .name = g->names[k], .id = info.id, .nvml_enum = e, .compute_slices = info.sliceCount,
      .memory_mib = (unsigned)info.memorySizeMB, .sms = info.multiprocessorCount,
      .ce = info.copyEngineCount, .dec = info.decoderCount, .enc = info.encoderCount,
      .jpeg = info.jpegCount, .ofa = info.ofaCount, .max_count = info.instanceCount,
      .media = media_of(g->names[k]), .gfx = strstr(g->names[k], "+gfx") != NULL};
  if (!read_placements(n, g->dev, p)) {
    if (!row)
      return false;
    p->starts = row->starts;
    p->span = row->span;
  }
  return true;
}

/* Where a profile sorts: as in the model's table when the table has it (the
 * order nvidia-smi -lgip prints), else after those, by slices then enum. */
static unsigned sort_key(const struct nvml_gpu *g, const struct gs_geom_gi_profile *p)
{
  if (g->known)
    for (unsigned i = 0; i < g->known->ngi; i++)
      if (g->known->gi[i].id == p->id)
        return i;
  return 1000 + p->compute_slices * 100 + p->nvml_enum;
}

/* Sorts the profiles, moving each name with its profile. */
static void sort_profiles(struct nvml_gpu *g, unsigned k)
{
  for (unsigned i = 1; i < k; i++)
    for (unsigned j = i; j > 0 && sort_key(g, &g->gi[j]) < sort_key(g, &g->gi[j - 1]); j--) {
      struct gs_geom_gi_profile t = g->gi[j];
      char name[GS_GEOM_NAME_SIZE];
      g->gi[j] = g->gi[j - 1];
      g->gi[j - 1] = t;
      memcpy(name, g->names[j], sizeof(name));
      memcpy(g->names[j], g->names[j - 1], sizeof(name));
      memcpy(g->names[j - 1], name, sizeof(name));
      g->gi[j].name = g->names[j];
      g->gi[j - 1].name = g->names[j - 1];
    }
}

/* The model from the driver's own profile list; false when it lists none
 * (MIG off, or a driver without MIG). */
static bool discover_model(const struct nvml *n, struct nvml_gpu *g)
{
  struct gs_geom_model *m = &g->model;
  unsigned k = 0, grid = 0, leaf = ~0u, compute = 0;
  for (unsigned e = 0; e < NVML_GPU_INSTANCE_PROFILE_COUNT && k < MAX_PROFILES; e++)
    if (read_profile(n, g, e, k))
      k++;
  if (k == 0)
    return false;
  sort_profiles(g, k);
  for (unsigned i = 0; i < k; i++) {
    unsigned last = 31 - (unsigned)__builtin_clz(g->gi[i].starts);
    if (last + g->gi[i].span > grid)
      grid = last + g->gi[i].span;
    if (g->gi[i].span < leaf)
      leaf = g->gi[i].span;
    if (g->gi[i].compute_slices > compute)
      compute = g->gi[i].compute_slices;
  }
  m->gi = g->gi;
  m->ngi = k;
  m->grid = grid;
  m->leaf_span = leaf;
  m->compute_slices = compute;
  return true;
}

/* Matches the GPU to a table row by PCI device id, then by name. */
static const struct gs_geom_model *known_model(const struct nvml *n, nvmlDevice_t dev, const char *name)
{
  nvmlPciInfo_t pci;
  char id[16];
  const struct gs_geom_model *m = NULL;
  memset(&pci, 0, sizeof(pci));
  if (n->api.nvmlDeviceGetPciInfo_v3 && n->api.nvmlDeviceGetPciInfo_v3(dev, &pci) == NVML_SUCCESS) {
    snprintf(id, sizeof(id), "0x%08X", pci.pciDeviceId);
    m = gs_geom_model_find(id);
  }
  return m ? m : gs_geom_model_find(name);
}

static void describe_gpu(const struct nvml *n, struct nvml_gpu *g, unsigned index)
{
  struct gs_geom_model *m = &g->model;
  char name[GS_BACKEND_NAME_SIZE] = "";
  n->api.nvmlDeviceGetName(g->dev, name, sizeof(name));
  snprintf(g->name, sizeof(g->name), "%s", name);
  g->known = known_model(n, g->dev, name);
  if (g->known)
    *m = *g->known;
  else {
    memset(m, 0, sizeof(*m));
    snprintf(g->key, sizeof(g->key), "unknown-gpu-%u", index);
    m->key = g->key;
    m->name = g->name;
    m->arch = GS_GEOM_HOPPER;
    m->source = "read from the NVIDIA driver";
  }
  /* The driver's profiles replace the table's whenever it lists them. */
  if (!discover_model(n, g) && !g->known) {
    m->ngi = 0;
    m->grid = 8;
    m->leaf_span = 1;
    m->compute_slices = 7;
  }
}

/* ---- GPU-level calls ---- */

static int get_gpu(struct nvml *n, struct gs_err *err, unsigned gpu, struct nvml_gpu **out)
{
  if (gpu >= n->ngpu)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "GPU %u does not exist: this machine has GPUs 0..%u",
                      gpu, n->ngpu - 1);
  *out = &n->gpu[gpu];
  return 0;
}

static int nvml_gpu_count(struct gs_backend *b, struct gs_err *err, unsigned *count)
{
  (void)err;
  *count = nvml_of(b)->ngpu;
  return 0;
}

static void read_mig_mode(const struct nvml *n, nvmlDevice_t dev, bool *current, bool *pending)
{
  unsigned cur = 0, pend = 0;
  if (n->api.nvmlDeviceGetMigMode && n->api.nvmlDeviceGetMigMode(dev, &cur, &pend) == NVML_SUCCESS) {
    *current = cur == NVML_DEVICE_MIG_ENABLE;
    *pending = pend == NVML_DEVICE_MIG_ENABLE;
  } else {
    *current = *pending = false; /* NOT_SUPPORTED: not MIG-capable */
  }
}

static int nvml_gpu_info(struct gs_backend *b, struct gs_err *err, unsigned gpu, struct gs_gpu_info *out)
{
  struct nvml *n = nvml_of(b);
  struct nvml_gpu *g = NULL;
  nvmlPciInfo_t pci;
  nvmlMemory_t mem;
  nvmlReturn_t rc;
  int r;
  if ((r = get_gpu(n, err, gpu, &g)) != 0)
    return r;
  memset(out, 0, sizeof(*out));
  memset(&pci, 0, sizeof(pci));
  out->index = gpu;
  out->model = &g->model;
  snprintf(out->name, sizeof(out->name), "%s", g->name);
  if ((rc = n->api.nvmlDeviceGetUUID(g->dev, out->uuid, sizeof(out->uuid))) != NVML_SUCCESS)
    return nvml_fail(err, n, rc, "GPU %u: cannot read its UUID", gpu);
  if (n->api.nvmlDeviceGetPciInfo_v3 && n->api.nvmlDeviceGetPciInfo_v3(g->dev, &pci) == NVML_SUCCESS) {
    snprintf(out->pci_bus_id, sizeof(out->pci_bus_id), "%s", pci.busId[0] ? pci.busId : pci.busIdLegacy);
    out->pci_device_id = pci.pciDeviceId;
    out->pci_subsystem_id = pci.pciSubSystemId;
  }
  read_mig_mode(n, g->dev, &out->mig_current, &out->mig_pending);
  if (n->api.nvmlDeviceGetMemoryInfo && n->api.nvmlDeviceGetMemoryInfo(g->dev, &mem) == NVML_SUCCESS)
    out->memory_mib = (unsigned)(mem.total / MIB);
  else
    out->memory_mib = g->model.memory_mib;
  return 0;
}

static int nvml_set_mig_mode(struct gs_backend *b, struct gs_err *err, unsigned gpu, bool enable,
                             int *activation)
{
  struct nvml *n = nvml_of(b);
  struct nvml_gpu *g = NULL;
  nvmlReturn_t rc, status = NVML_SUCCESS;
  int r;
  if ((r = get_gpu(n, err, gpu, &g)) != 0)
    return r;
  NEED(n, err, nvmlDeviceSetMigMode, NEEDS_MIG);
  rc = n->api.nvmlDeviceSetMigMode(g->dev, enable ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE,
                                   &status);
  if (rc != NVML_SUCCESS)
    return nvml_fail(err, n, rc, "GPU %u: cannot %s MIG mode", gpu, enable ? "enable" : "disable");
  *activation = gs_backend_code_from_nvml((int)status);
  return 0;
}

/* ---- GPU instances ---- */

/* A profile from another GPU's model would pass only its ID to NVML, which
 * may mean something else here: refuse it as the emulator does. */
static int own_profile(struct gs_err *err, const struct nvml_gpu *g, unsigned gpu,
                       const struct gs_geom_gi_profile *p)
{
  for (unsigned i = 0; i < g->model.ngi; i++)
    if (p == &g->model.gi[i]) /* equality: ordering unrelated pointers is undefined */
      return 0;
  return gs_err_set(err, GS_E_INVALID_ARGUMENT, "GPU %u (%s) has no profile %s", gpu, g->model.key,
                    p->name);
}


static int nvml_gi_remaining(struct gs_backend *b, struct gs_err *err, unsigned gpu,
                             const struct gs_geom_gi_profile *p, unsigned *count)
{
  struct nvml *n = nvml_of(b);
  struct nvml_gpu *g = NULL;
  nvmlReturn_t rc;
  int r;
  if ((r = get_gpu(n, err, gpu, &g)) != 0 || (r = own_profile(err, g, gpu, p)) != 0)
    return r;
  NEED(n, err, nvmlDeviceGetGpuInstanceRemainingCapacity, NEEDS_MIG);
  if ((rc = n->api.nvmlDeviceGetGpuInstanceRemainingCapacity(g->dev, p->id, count)) != NVML_SUCCESS)
    return nvml_fail(err, n, rc, "GPU %u: cannot count free %s instances", gpu, p->name);
  return 0;
}

static const struct gs_geom_gi_profile *profile_by_id(const struct nvml_gpu *g, unsigned id)
{
  return gs_geom_gi_profile_by_id(&g->model, id);
}

static int gi_info_of(struct nvml *n, struct gs_err *err, unsigned gpu, nvmlGpuInstance_t h,
                      struct gs_gi_info *out)
{
  nvmlGpuInstanceInfo_t info;
  nvmlReturn_t rc;
  NEED(n, err, nvmlGpuInstanceGetInfo, NEEDS_MIG);
  if ((rc = n->api.nvmlGpuInstanceGetInfo(h, &info)) != NVML_SUCCESS)
    return nvml_fail(err, n, rc, "GPU %u: cannot read a GPU instance", gpu);
  out->gpu = gpu;
  out->id = info.id;
  out->profile = profile_by_id(&n->gpu[gpu], info.profileId);
  out->start = info.placement.start;
  out->span = info.placement.size;
  if (!out->profile)
    return gs_err_set(err, GS_E_NOT_SUPPORTED,
                      "GPU %u: GPU instance %u has profile %u, which the driver did not list",
                      gpu, info.id, info.profileId);
  return 0;
}

static int nvml_gi_create(struct gs_backend *b, struct gs_err *err, unsigned gpu,
                          const struct gs_geom_gi_profile *p, int start, struct gs_gi_info *out)
{
  struct nvml *n = nvml_of(b);
  struct nvml_gpu *g = NULL;
  nvmlGpuInstance_t h;
  nvmlReturn_t rc;
  struct gs_gi_info tmp;
  int r;
  if ((r = get_gpu(n, err, gpu, &g)) != 0 || (r = own_profile(err, g, gpu, p)) != 0)
    return r;
  if (start < 0) {
    NEED(n, err, nvmlDeviceCreateGpuInstance, NEEDS_MIG);
    rc = n->api.nvmlDeviceCreateGpuInstance(g->dev, p->id, &h);
  } else {
    nvmlGpuInstancePlacement_t pl = {(unsigned)start, p->span};
    NEED(n, err, nvmlDeviceCreateGpuInstanceWithPlacement,
         "explicit placements need driver R460 or later; omit --placement");
    rc = n->api.nvmlDeviceCreateGpuInstanceWithPlacement(g->dev, p->id, &pl, &h);
  }
  if (rc != NVML_SUCCESS) {
    if (start >= 0)
      return nvml_fail(err, n, rc, "GPU %u: cannot create GPU instance %s at placement %d", gpu,
                       p->name, start);
    return nvml_fail(err, n, rc, "GPU %u: cannot create GPU instance %s", gpu, p->name);
  }
  return gi_info_of(n, err, gpu, h, out ? out : &tmp);
}

static int find_gi(struct nvml *n, struct gs_err *err, unsigned gpu, unsigned id, nvmlGpuInstance_t *h)
{
  nvmlReturn_t rc;
  NEED(n, err, nvmlDeviceGetGpuInstanceById, NEEDS_MIG);
  if ((rc = n->api.nvmlDeviceGetGpuInstanceById(n->gpu[gpu].dev, id, h)) != NVML_SUCCESS)
    return nvml_fail(err, n, rc, "GPU %u: no GPU instance %u", gpu, id);
  return 0;
}

static int nvml_gi_destroy(struct gs_backend *b, struct gs_err *err, unsigned gpu, unsigned id)
{
  struct nvml *n = nvml_of(b);
  struct nvml_gpu *g = NULL;
  nvmlGpuInstance_t h;
  nvmlReturn_t rc;
  int r;
  if ((r = get_gpu(n, err, gpu, &g)) != 0 || (r = find_gi(n, err, gpu, id, &h)) != 0)
    return r;
  NEED(n, err, nvmlGpuInstanceDestroy, NEEDS_MIG);
  if ((rc = n->api.nvmlGpuInstanceDestroy(h)) != NVML_SUCCESS)
    return nvml_fail(err, n, rc, "GPU %u: cannot destroy GPU instance %u", gpu, id);
  return 0;
}

static int by_gi_id(const void *a, const void *b)
{
  const struct gs_gi_info *x = a, *y = b;
  return (x->id > y->id) - (x->id < y->id);
}

static int nvml_gi_list(struct gs_backend *b, struct gs_err *err, unsigned gpu,
                        struct gs_gi_info out[GS_GEOM_MAX_INSTANCES], unsigned *count)
{
  struct nvml *n = nvml_of(b);
  struct nvml_gpu *g = NULL;
  unsigned total = 0;
  int r;
  if ((r = get_gpu(n, err, gpu, &g)) != 0)
    return r;
  NEED(n, err, nvmlDeviceGetGpuInstances, NEEDS_MIG);
  for (unsigned k = 0; k < g->model.ngi; k++) {
    nvmlGpuInstance_t hs[GS_GEOM_MAX_INSTANCES];
    unsigned nh = GS_GEOM_MAX_INSTANCES;
    nvmlReturn_t rc = n->api.nvmlDeviceGetGpuInstances(g->dev, g->model.gi[k].id, hs, &nh);
    if (rc != NVML_SUCCESS)
      return nvml_fail(err, n, rc, "GPU %u: cannot list %s GPU instances", gpu, g->model.gi[k].name);
    for (unsigned i = 0; i < nh && total < GS_GEOM_MAX_INSTANCES; i++)
      if ((r = gi_info_of(n, err, gpu, hs[i], &out[total++])) != 0)
        return r;
  }
  qsort(out, total, sizeof(*out), by_gi_id);
  *count = total;
  return 0;
}

/* ---- compute instances ---- */

/* The driver's info for a CI profile (our CI profile ids are NVML's enums). */
static int ci_profile_info(struct nvml *n, struct gs_err *err, unsigned gpu, unsigned gi_id,
                           nvmlGpuInstance_t h, unsigned profile, nvmlComputeInstanceProfileInfo_t *info)
{
  nvmlReturn_t rc;
  NEED(n, err, nvmlGpuInstanceGetComputeInstanceProfileInfo, NEEDS_MIG);
  /* Past the enum NVML says INVALID_ARGUMENT (the end of its list); to us it
   * is a profile this GI does not have, as for the emulator. */
  if (profile >= NVML_COMPUTE_INSTANCE_PROFILE_COUNT)
    return gs_err_set(err, GS_E_NOT_SUPPORTED,
                      "GPU %u GPU instance %u has no compute-instance profile %u", gpu, gi_id, profile);
  rc = n->api.nvmlGpuInstanceGetComputeInstanceProfileInfo(h, profile,
                                                           NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, info);
  if (rc != NVML_SUCCESS)
    return nvml_fail(err, n, rc, "GPU %u GPU instance %u: no compute-instance profile %u", gpu,
                     gi_id, profile);
  return 0;
}

static int nvml_ci_remaining(struct gs_backend *b, struct gs_err *err, unsigned gpu, unsigned gi,
                             unsigned ci_profile_id, unsigned *count)
{
  struct nvml *n = nvml_of(b);
  struct nvml_gpu *g = NULL;
  nvmlComputeInstanceProfileInfo_t info;
  nvmlGpuInstance_t h;
  nvmlReturn_t rc;
  int r;
  if ((r = get_gpu(n, err, gpu, &g)) != 0 || (r = find_gi(n, err, gpu, gi, &h)) != 0 ||
      (r = ci_profile_info(n, err, gpu, gi, h, ci_profile_id, &info)) != 0)
    return r;
  NEED(n, err, nvmlGpuInstanceGetComputeInstanceRemainingCapacity, NEEDS_MIG);
  if ((rc = n->api.nvmlGpuInstanceGetComputeInstanceRemainingCapacity(h, info.id, count)) != NVML_SUCCESS)
    return nvml_fail(err, n, rc, "GPU %u GPU instance %u: cannot count free compute instances", gpu, gi);
  return 0;
}

/* Our description of a CI profile: the geometry's, or the driver's figures
 * for one the rule does not derive (such as Hopper's 1_SLICE_REV1). */
static void ci_profile_of(const struct nvml_gpu *g, const struct gs_geom_gi_profile *gi,
                          const nvmlComputeInstanceProfileInfo_t *info, struct gs_geom_ci_profile *out)
{
  char id[12];
  snprintf(id, sizeof(id), "%u", info->id);
  if (gs_geom_ci_profile_find(&g->model, gi, id, out) == 0)
    return;
  memset(out, 0, sizeof(*out));
  out->id = info->id;
  out->compute_slices = info->sliceCount;
  out->span = info->sliceCount;
  out->sms = info->multiprocessorCount;
  out->max_count = info->instanceCount;
  out->is_default = info->sliceCount == gi->compute_slices;
  snprintf(out->name, sizeof(out->name), "%uc.%s", info->sliceCount, gi->name);
}

static int ci_info_of(struct nvml *n, struct gs_err *err, unsigned gpu, const struct gs_gi_info *gi,
                      nvmlGpuInstance_t gh, nvmlComputeInstance_t h, struct gs_ci_info *out)
{
  nvmlComputeInstanceInfo_t info;
  nvmlComputeInstanceProfileInfo_t pinfo;
  nvmlReturn_t rc;
  NEED(n, err, nvmlComputeInstanceGetInfo_v2, NEEDS_CI_INFO);
  memset(&info, 0, sizeof(info));
  if ((rc = n->api.nvmlComputeInstanceGetInfo_v2(h, &info)) != NVML_SUCCESS)
    return nvml_fail(err, n, rc, "GPU %u GPU instance %u: cannot read a compute instance", gpu, gi->id);
  memset(out, 0, sizeof(*out));
  out->gpu = gpu;
  out->gi = gi->id;
  out->id = info.id;
  out->start = info.placement.start;
  out->span = info.placement.size;
  /* The instance reports its profile ID; find the enum that has it. */
  for (unsigned e = 0; e < NVML_COMPUTE_INSTANCE_PROFILE_COUNT; e++)
    if (ci_profile_info(n, NULL, gpu, gi->id, gh, e, &pinfo) == 0 && pinfo.id == info.profileId) {
      ci_profile_of(&n->gpu[gpu], gi->profile, &pinfo, &out->profile);
      return 0;
    }
  return gs_err_set(err, GS_E_NOT_SUPPORTED,
                    "GPU %u GPU instance %u: compute instance %u has profile %u, which the driver "
                    "did not list",
                    gpu, gi->id, info.id, info.profileId);
}

static int gi_of(struct nvml *n, struct gs_err *err, unsigned gpu, unsigned id, nvmlGpuInstance_t *h,
                 struct gs_gi_info *info)
{
  int r = find_gi(n, err, gpu, id, h);
  return r ? r : gi_info_of(n, err, gpu, *h, info);
}

/* The size a CI placement at `start` has, as the driver lists it. */
static unsigned ci_placement_size(struct nvml *n, nvmlGpuInstance_t h, unsigned profile_id,
                                  unsigned start, unsigned fallback)
{
  nvmlComputeInstancePlacement_t pl[GS_GEOM_MAX_GRID];
  unsigned count = GS_NITEMS(pl);
  if (n->api.nvmlGpuInstanceGetComputeInstancePossiblePlacements &&
      n->api.nvmlGpuInstanceGetComputeInstancePossiblePlacements(h, profile_id, pl, &count) ==
          NVML_SUCCESS)
    for (unsigned i = 0; i < count && i < GS_NITEMS(pl); i++)
      if (pl[i].start == start)
        return pl[i].size;
  return fallback;
}

static int nvml_ci_create(struct gs_backend *b, struct gs_err *err, unsigned gpu, unsigned gi_id,
                          unsigned ci_profile_id, int start, struct gs_ci_info *out)
{
  struct nvml *n = nvml_of(b);
  struct nvml_gpu *g = NULL;
  struct gs_gi_info gi;
  struct gs_ci_info tmp;
  nvmlComputeInstanceProfileInfo_t info;
  nvmlGpuInstance_t gh;
  nvmlComputeInstance_t h;
  nvmlReturn_t rc;
  int r;
  if ((r = get_gpu(n, err, gpu, &g)) != 0 || (r = gi_of(n, err, gpu, gi_id, &gh, &gi)) != 0 ||
      (r = ci_profile_info(n, err, gpu, gi_id, gh, ci_profile_id, &info)) != 0)
    return r;
  /* Refused before creating, not after: an instance made but unreadable
   * would be left behind. */
  NEED(n, err, nvmlComputeInstanceGetInfo_v2, NEEDS_CI_INFO);
  if (start < 0) {
    NEED(n, err, nvmlGpuInstanceCreateComputeInstance, NEEDS_MIG);
    rc = n->api.nvmlGpuInstanceCreateComputeInstance(gh, info.id, &h);
  } else {
    nvmlComputeInstancePlacement_t pl = {(unsigned)start,
                                         ci_placement_size(n, gh, info.id, (unsigned)start, info.sliceCount)};
    NEED(n, err, nvmlGpuInstanceCreateComputeInstanceWithPlacement,
         "explicit compute-instance placements need driver R525 or later; omit --placement");
    rc = n->api.nvmlGpuInstanceCreateComputeInstanceWithPlacement(gh, info.id, &pl, &h);
  }
  if (rc != NVML_SUCCESS)
    return nvml_fail(err, n, rc, "GPU %u GPU instance %u: cannot create compute instance %u", gpu,
                     gi_id, ci_profile_id);
  return ci_info_of(n, err, gpu, &gi, gh, h, out ? out : &tmp);
}

static int nvml_ci_destroy(struct gs_backend *b, struct gs_err *err, unsigned gpu, unsigned gi_id,
                           unsigned id)
{
  struct nvml *n = nvml_of(b);
  struct nvml_gpu *g = NULL;
  nvmlGpuInstance_t gh;
  nvmlComputeInstance_t h;
  nvmlReturn_t rc;
  int r;
  if ((r = get_gpu(n, err, gpu, &g)) != 0 || (r = find_gi(n, err, gpu, gi_id, &gh)) != 0)
    return r;
  NEED(n, err, nvmlGpuInstanceGetComputeInstanceById, NEEDS_MIG);
  if ((rc = n->api.nvmlGpuInstanceGetComputeInstanceById(gh, id, &h)) != NVML_SUCCESS)
    return nvml_fail(err, n, rc, "GPU %u GPU instance %u: no compute instance %u", gpu, gi_id, id);
  NEED(n, err, nvmlComputeInstanceDestroy, NEEDS_MIG);
  if ((rc = n->api.nvmlComputeInstanceDestroy(h)) != NVML_SUCCESS)
    return nvml_fail(err, n, rc, "GPU %u GPU instance %u: cannot destroy compute instance %u", gpu,
                     gi_id, id);
  return 0;
}

static int by_ci_id(const void *a, const void *b)
{
  const struct gs_ci_info *x = a, *y = b;
  return (x->id > y->id) - (x->id < y->id);
}

static int nvml_ci_list(struct gs_backend *b, struct gs_err *err, unsigned gpu, unsigned gi_id,
                        struct gs_ci_info out[GS_GEOM_MAX_INSTANCES], unsigned *count)
{
  struct nvml *n = nvml_of(b);
  struct nvml_gpu *g = NULL;
  struct gs_gi_info gi;
  nvmlGpuInstance_t gh;
  unsigned total = 0;
  int r;
  if ((r = get_gpu(n, err, gpu, &g)) != 0 || (r = gi_of(n, err, gpu, gi_id, &gh, &gi)) != 0)
    return r;
  NEED(n, err, nvmlGpuInstanceGetComputeInstances, NEEDS_MIG);
  for (unsigned e = 0; e < NVML_COMPUTE_INSTANCE_PROFILE_COUNT; e++) {
    nvmlComputeInstanceProfileInfo_t info;
    nvmlComputeInstance_t hs[GS_GEOM_MAX_INSTANCES];
    unsigned nh = GS_GEOM_MAX_INSTANCES;
    nvmlReturn_t rc;
    if (ci_profile_info(n, NULL, gpu, gi_id, gh, e, &info) != 0)
      continue; /* this GI has no such profile */
    if ((rc = n->api.nvmlGpuInstanceGetComputeInstances(gh, info.id, hs, &nh)) != NVML_SUCCESS)
      return nvml_fail(err, n, rc, "GPU %u GPU instance %u: cannot list compute instances", gpu, gi_id);
    for (unsigned i = 0; i < nh && total < GS_GEOM_MAX_INSTANCES; i++)
      if ((r = ci_info_of(n, err, gpu, &gi, gh, hs[i], &out[total++])) != 0)
        return r;
  }
  qsort(out, total, sizeof(*out), by_ci_id);
  *count = total;
  return 0;
}

/* ---- MIG devices and processes ---- */

/* Name, memory and SMs of a MIG device from its GI and CI. */
static int describe_mig(struct nvml *n, struct gs_err *err, unsigned gpu, nvmlDevice_t mig,
                        struct gs_mig_device *d)
{
  struct gs_gi_info gi;
  struct gs_ci_info cis[GS_GEOM_MAX_INSTANCES];
  nvmlDeviceAttributes_t attr;
  nvmlGpuInstance_t gh;
  unsigned nci = 0;
  int r;
  if ((r = gi_of(n, err, gpu, d->gi, &gh, &gi)) != 0 ||
      (r = nvml_ci_list(&n->base, err, gpu, d->gi, cis, &nci)) != 0)
    return r;
  d->gi_profile = gi.profile;
  d->memory_mib = gi.profile->memory_mib;
  for (unsigned k = 0; k < nci; k++)
    if (cis[k].id == d->ci) {
      snprintf(d->name, sizeof(d->name), "%s", cis[k].profile.name);
      d->sms = cis[k].profile.sms;
    }
  if (n->api.nvmlDeviceGetAttributes_v2 && n->api.nvmlDeviceGetAttributes_v2(mig, &attr) == NVML_SUCCESS) {
    d->memory_mib = (unsigned)attr.memorySizeMB;
    d->sms = attr.multiprocessorCount;
  }
  return 0;
}

static int read_mig(struct nvml *n, struct gs_err *err, unsigned gpu, const char *gpu_uuid,
                    nvmlDevice_t mig, struct gs_mig_device *d)
{
  nvmlReturn_t rc;
  NEED(n, err, nvmlDeviceGetGpuInstanceId, NEEDS_MIG);
  NEED(n, err, nvmlDeviceGetComputeInstanceId, NEEDS_MIG);
  if ((rc = n->api.nvmlDeviceGetGpuInstanceId(mig, &d->gi)) != NVML_SUCCESS ||
      (rc = n->api.nvmlDeviceGetComputeInstanceId(mig, &d->ci)) != NVML_SUCCESS ||
      (rc = n->api.nvmlDeviceGetUUID(mig, d->uuid, sizeof(d->uuid))) != NVML_SUCCESS)
    return nvml_fail(err, n, rc, "GPU %u: cannot read MIG device %u", gpu, d->index);
  snprintf(d->legacy_uuid, sizeof(d->legacy_uuid), "MIG-%.60s/%u/%u", gpu_uuid, d->gi, d->ci);
  return describe_mig(n, err, gpu, mig, d);
}

static int nvml_mig_devices(struct gs_backend *b, struct gs_err *err, unsigned gpu,
                            struct gs_mig_device *out, unsigned *count)
{
  struct nvml *n = nvml_of(b);
  struct nvml_gpu *g = NULL;
  struct gs_gpu_info info;
  unsigned max = 0, found = 0;
  int r;
  *count = 0;
  if ((r = nvml_gpu_info(b, err, gpu, &info)) != 0 || (r = get_gpu(n, err, gpu, &g)) != 0)
    return r;
  if (!info.mig_current || !n->api.nvmlDeviceGetMaxMigDeviceCount ||
      !n->api.nvmlDeviceGetMigDeviceHandleByIndex ||
      n->api.nvmlDeviceGetMaxMigDeviceCount(g->dev, &max) != NVML_SUCCESS)
    return 0;
  for (unsigned i = 0; i < max && found < GS_BACKEND_MAX_MIG_DEVICES; i++) {
    nvmlDevice_t mig;
    nvmlReturn_t rc = n->api.nvmlDeviceGetMigDeviceHandleByIndex(g->dev, i, &mig);
    if (rc == NVML_ERROR_NOT_FOUND || rc == NVML_ERROR_INVALID_ARGUMENT)
      continue; /* an empty slot (libnvidia-container reads it so too) */
    if (rc != NVML_SUCCESS)
      return nvml_fail(err, n, rc, "GPU %u: cannot open MIG device %u", gpu, i);
    memset(&out[found], 0, sizeof(out[found]));
    out[found].gpu = gpu;
    out[found].index = found;
    if ((r = read_mig(n, err, gpu, info.uuid, mig, &out[found])) != 0)
      return r;
    found++;
  }
  *count = found;
  return 0;
}

/* The process's name from NVML, or from /proc when NVML cannot say. */
static void process_name(const struct nvml *n, unsigned pid, char *name, size_t size)
{
  char path[64];
  FILE *f;
  name[0] = 0;
  if (n->api.nvmlSystemGetProcessName &&
      n->api.nvmlSystemGetProcessName(pid, name, (unsigned)size) == NVML_SUCCESS && name[0])
    return;
  snprintf(path, sizeof(path), "/proc/%u/comm", pid);
  if ((f = fopen(path, "r")) != NULL) {
    if (fgets(name, (int)size, f))
      name[strcspn(name, "\n")] = 0;
    fclose(f);
  }
  if (!name[0])
    snprintf(name, size, "?");
}

static int nvml_processes(struct gs_backend *b, struct gs_err *err, unsigned gpu,
                          struct gs_proc_info out[GS_BACKEND_MAX_PROCS], unsigned *count)
{
  struct nvml *n = nvml_of(b);
  struct nvml_gpu *g = NULL;
  nvmlProcessInfo_t *infos;
  unsigned nproc = GS_BACKEND_MAX_PROCS;
  nvmlReturn_t rc;
  int r;
  *count = 0;
  if ((r = get_gpu(n, err, gpu, &g)) != 0)
    return r;
  NEED(n, err, nvmlDeviceGetComputeRunningProcesses_v3, "process lists need driver R455 or later");
  if (!(infos = calloc(GS_BACKEND_MAX_PROCS, sizeof(*infos))))
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory listing GPU %u's processes", gpu);
  rc = n->api.nvmlDeviceGetComputeRunningProcesses_v3(g->dev, &nproc, infos);
  if (rc == NVML_ERROR_INSUFFICIENT_SIZE)
    rc = NVML_SUCCESS, nproc = GS_BACKEND_MAX_PROCS; /* more than we hold: list the first ones */
  if (rc != NVML_SUCCESS) {
    free(infos);
    return nvml_fail(err, n, rc, "GPU %u: cannot list its processes", gpu);
  }
  for (unsigned i = 0; i < nproc && i < GS_BACKEND_MAX_PROCS; i++) {
    struct gs_proc_info *p = &out[i];
    memset(p, 0, sizeof(*p));
    p->pid = infos[i].pid;
    p->gpu = gpu;
    p->gi = infos[i].gpuInstanceId == 0xFFFFFFFFu ? -1 : (int)infos[i].gpuInstanceId;
    p->ci = infos[i].computeInstanceId == 0xFFFFFFFFu ? -1 : (int)infos[i].computeInstanceId;
    p->used_mib = (unsigned)(infos[i].usedGpuMemory / MIB);
    process_name(n, p->pid, p->name, sizeof(p->name));
  }
  *count = nproc < GS_BACKEND_MAX_PROCS ? nproc : GS_BACKEND_MAX_PROCS;
  free(infos);
  return 0;
}

static int nvml_versions(struct gs_backend *b, struct gs_err *err, char *driver, char *nvml,
                         size_t size)
{
  struct nvml *n = nvml_of(b);
  nvmlReturn_t rc;
  NEED(n, err, nvmlSystemGetDriverVersion, "every supported driver has it");
  NEED(n, err, nvmlSystemGetNVMLVersion, "every supported driver has it");
  if ((rc = n->api.nvmlSystemGetDriverVersion(driver, (unsigned)size)) != NVML_SUCCESS)
    return nvml_fail(err, n, rc, "NVML cannot tell the driver's version");
  if ((rc = n->api.nvmlSystemGetNVMLVersion(nvml, (unsigned)size)) != NVML_SUCCESS)
    return nvml_fail(err, n, rc, "NVML cannot tell its own version");
  return 0;
}

static void nvml_close(struct gs_backend *b)
{
  struct nvml *n = nvml_of(b);
  if (n->initialized)
    n->api.nvmlShutdown();
  if (n->api.lib)
    dlclose(n->api.lib);
  free(n);
}

static const struct gs_backend_ops nvml_ops = {
    .name = "nvml",
    .gpu_count = nvml_gpu_count,
    .gpu_info = nvml_gpu_info,
    .set_mig_mode = nvml_set_mig_mode,
    .gi_remaining = nvml_gi_remaining,
    .gi_create = nvml_gi_create,
    .gi_destroy = nvml_gi_destroy,
    .gi_list = nvml_gi_list,
    .ci_remaining = nvml_ci_remaining,
    .ci_create = nvml_ci_create,
    .ci_destroy = nvml_ci_destroy,
    .ci_list = nvml_ci_list,
    .mig_devices = nvml_mig_devices,
    .processes = nvml_processes,
    .versions = nvml_versions,
    .close = nvml_close,
};

/* ---- opening ---- */

static int init_gpus(struct nvml *n, struct gs_err *err, const char *path)
{
  nvmlReturn_t rc = n->api.nvmlInit_v2();
  unsigned count = 0;
  if (rc != NVML_SUCCESS)
    return nvml_fail(err, n, rc, "%s loaded, but nvmlInit failed", path);
  n->initialized = true;
  if ((rc = n->api.nvmlDeviceGetCount_v2(&count)) != NVML_SUCCESS)
    return nvml_fail(err, n, rc, "NVML cannot count the GPUs");
  if (count == 0)
    return gs_err_set(err, GS_E_NOT_FOUND, "the NVIDIA driver sees no GPU; use --backend emu "
                                           "for emulated GPUs");
  if (count > GS_BACKEND_MAX_GPUS)
    count = GS_BACKEND_MAX_GPUS;
  for (unsigned i = 0; i < count; i++) {
    if ((rc = n->api.nvmlDeviceGetHandleByIndex_v2(i, &n->gpu[i].dev)) != NVML_SUCCESS)
      return nvml_fail(err, n, rc, "cannot open GPU %u", i);
    describe_gpu(n, &n->gpu[i], i);
  }
  n->ngpu = count;
  return 0;
}

int gs__nvml_open(struct gs_err *err, const struct gs_backend_config *cfg, struct gs_backend **out)
{
  static const struct gs_backend_config defaults = {0};
  struct nvml *n = calloc(1, sizeof(*n));
  const char *path;
  int rc;
  if (!n)
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory opening NVML");
  path = library_path(cfg ? cfg : &defaults);
  n->base.ops = &nvml_ops;
  if ((rc = load_api(err, &n->api, path)) != 0 || (rc = init_gpus(n, err, path)) != 0) {
    nvml_close(&n->base);
    return rc;
  }
  *out = &n->base;
  return 0;
}
