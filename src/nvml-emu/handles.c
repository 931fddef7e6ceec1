/* SPDX-License-Identifier: Apache-2.0 */
/* handles.c: NVML's opaque handles as addresses in static tables: one slot per
 * GPU, per possible GPU instance (ids 0..14), per compute instance (0..7) and
 * per MIG device. They are never freed, so a handle stays a valid pointer for
 * the life of the process; whether its instance still exists is asked of the
 * emulator on every use. Foreign or bad pointers are rejected by address. */
#include "nvml-emu/nvml-emu.h"

#include <stdint.h>
#include <string.h>

struct nvmlDevice_st {
  int unused;
};
struct nvmlGpuInstance_st {
  int unused;
};
struct nvmlComputeInstance_st {
  int unused;
};

#define GPUS GS_BACKEND_MAX_GPUS
#define GIS GS__NVEMU_GI_SLOTS
#define CIS GS__NVEMU_CI_SLOTS

static struct nvmlDevice_st gpu_tab[GPUS];
static struct nvmlDevice_st mig_tab[GPUS][GIS][CIS];
static struct nvmlGpuInstance_st gi_tab[GPUS][GIS];
static struct nvmlComputeInstance_st ci_tab[GPUS][GIS][CIS];

/* Scratch lists, used under the lock only. */
static struct gs_mig_device mig_buf[GS_BACKEND_MAX_MIG_DEVICES];
static struct gs_proc_info proc_buf[GS_BACKEND_MAX_PROCS];

nvmlDevice_t gs__nvemu_gpu_handle(unsigned gpu)
{
  return &gpu_tab[gpu];
}

nvmlDevice_t gs__nvemu_mig_handle(unsigned gpu, unsigned gi, unsigned ci)
{
  return &mig_tab[gpu][gi][ci];
}

nvmlGpuInstance_t gs__nvemu_gi_handle(unsigned gpu, unsigned gi)
{
  return &gi_tab[gpu][gi];
}

nvmlComputeInstance_t gs__nvemu_ci_handle(unsigned gpu, unsigned gi, unsigned ci)
{
  return &ci_tab[gpu][gi][ci];
}

/* The element index of p in a table of `size` bytes of `elem`-byte slots, or
 * -1 when p is not exactly one of its slots. Compared as integers, since
 * ordering pointers into different objects is undefined in C. */
static long slot_of(const void *p, const void *table, size_t size, size_t elem)
{
  uintptr_t a = (uintptr_t)p, t = (uintptr_t)table;
  if (a < t || a - t >= size || (a - t) % elem != 0)
    return -1;
  return (long)((a - t) / elem);
}

nvmlReturn_t gs__nvemu_rc(int code)
{
  return code == 0 ? NVML_SUCCESS : (nvmlReturn_t)gs_backend_code_nvml(code);
}

/* A backend code about a GPU, GI or CI named by a handle: "no such thing"
 * (a GPU past the count, MIG now off, an instance gone) makes the handle
 * invalid; anything else (a broken state file) keeps its own code. */
static nvmlReturn_t stale(int code)
{
  if (code == GS_E_INVALID_ARGUMENT || code == GS_E_NOT_SUPPORTED || code == GS_E_NOT_FOUND)
    return NVML_ERROR_INVALID_ARGUMENT;
  return gs__nvemu_rc(code);
}

nvmlReturn_t gs__nvemu_mig_list(unsigned gpu, const struct gs_mig_device **out, unsigned *count)
{
  struct gs_backend *b = gs__nvemu_backend();
  int rc = b->ops->mig_devices(b, NULL, gpu, mig_buf, count);
  *out = mig_buf;
  return gs__nvemu_rc(rc);
}

nvmlReturn_t gs__nvemu_procs(unsigned gpu, const struct gs_proc_info **out, unsigned *count)
{
  struct gs_backend *b = gs__nvemu_backend();
  int rc = b->ops->processes(b, NULL, gpu, proc_buf, count);
  *out = proc_buf;
  return gs__nvemu_rc(rc);
}

static nvmlReturn_t resolve(unsigned gpu, bool mig, unsigned gi, unsigned ci,
                            struct gs__nvemu_dev *out)
{
  struct gs_backend *b = gs__nvemu_backend();
  const struct gs_mig_device *list;
  unsigned n = 0;
  int rc;
  memset(out, 0, sizeof(*out));
  out->gpu = gpu;
  out->mig = mig;
  if ((rc = b->ops->gpu_info(b, NULL, gpu, &out->info)) != 0)
    return stale(rc);
  if (!mig)
    return NVML_SUCCESS;
  if ((rc = b->ops->mig_devices(b, NULL, gpu, mig_buf, &n)) != 0)
    return stale(rc);
  list = mig_buf;
  for (unsigned i = 0; i < n; i++)
    if (list[i].gi == gi && list[i].ci == ci) {
      out->m = list[i];
      return NVML_SUCCESS;
    }
  return NVML_ERROR_INVALID_ARGUMENT;
}

nvmlReturn_t gs__nvemu_device(nvmlDevice_t d, struct gs__nvemu_dev *out)
{
  long i = slot_of(d, gpu_tab, sizeof(gpu_tab), sizeof(gpu_tab[0]));
  if (i >= 0)
    return resolve((unsigned)i, false, 0, 0, out);
  i = slot_of(d, mig_tab, sizeof(mig_tab), sizeof(mig_tab[0][0][0]));
  if (i >= 0)
    return resolve((unsigned)(i / (GIS * CIS)), true, (unsigned)(i / CIS % GIS),
                   (unsigned)(i % CIS), out);
  return NVML_ERROR_INVALID_ARGUMENT;
}

nvmlReturn_t gs__nvemu_gpu(nvmlDevice_t d, struct gs__nvemu_dev *out)
{
  long i = slot_of(d, gpu_tab, sizeof(gpu_tab), sizeof(gpu_tab[0]));
  return i < 0 ? NVML_ERROR_INVALID_ARGUMENT : resolve((unsigned)i, false, 0, 0, out);
}

nvmlReturn_t gs__nvemu_mig(nvmlDevice_t d, struct gs__nvemu_dev *out)
{
  if (slot_of(d, mig_tab, sizeof(mig_tab), sizeof(mig_tab[0][0][0])) < 0)
    return NVML_ERROR_INVALID_ARGUMENT;
  return gs__nvemu_device(d, out);
}

static nvmlReturn_t find_gi(unsigned gpu, unsigned id, struct gs_gi_info *out)
{
  struct gs_backend *b = gs__nvemu_backend();
  struct gs_gi_info gis[GS_GEOM_MAX_INSTANCES];
  unsigned n = 0;
  int rc = b->ops->gi_list(b, NULL, gpu, gis, &n);
  if (rc)
    return stale(rc);
  for (unsigned i = 0; i < n; i++)
    if (gis[i].id == id) {
      *out = gis[i];
      return NVML_SUCCESS;
    }
  return NVML_ERROR_INVALID_ARGUMENT;
}

nvmlReturn_t gs__nvemu_gi(nvmlGpuInstance_t h, struct gs_gi_info *out)
{
  long i = slot_of(h, gi_tab, sizeof(gi_tab), sizeof(gi_tab[0][0]));
  if (i < 0)
    return NVML_ERROR_INVALID_ARGUMENT;
  return find_gi((unsigned)(i / GIS), (unsigned)(i % GIS), out);
}

nvmlReturn_t gs__nvemu_ci(nvmlComputeInstance_t h, struct gs_gi_info *gi, struct gs_ci_info *out)
{
  struct gs_backend *b = gs__nvemu_backend();
  struct gs_ci_info cis[GS_GEOM_MAX_INSTANCES];
  long i = slot_of(h, ci_tab, sizeof(ci_tab), sizeof(ci_tab[0][0][0]));
  unsigned n = 0, id;
  nvmlReturn_t r;
  int rc;
  if (i < 0)
    return NVML_ERROR_INVALID_ARGUMENT;
  id = (unsigned)(i % CIS);
  if ((r = find_gi((unsigned)(i / (GIS * CIS)), (unsigned)(i / CIS % GIS), gi)) != NVML_SUCCESS)
    return r;
  if ((rc = b->ops->ci_list(b, NULL, gi->gpu, gi->id, cis, &n)) != 0)
    return stale(rc);
  for (unsigned k = 0; k < n; k++)
    if (cis[k].id == id) {
      *out = cis[k];
      return NVML_SUCCESS;
    }
  return NVML_ERROR_INVALID_ARGUMENT;
}

nvmlReturn_t gs__nvemu_copy(char *dst, unsigned length, const char *src)
{
  size_t need = strlen(src) + 1;
  if (!dst)
    return NVML_ERROR_INVALID_ARGUMENT;
  if (length < need)
    return NVML_ERROR_INSUFFICIENT_SIZE;
  memcpy(dst, src, need);
  return NVML_SUCCESS;
}
