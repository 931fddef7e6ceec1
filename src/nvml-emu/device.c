/* SPDX-License-Identifier: Apache-2.0 */
/* device.c: NVML's device queries over the emulator: count and handles (by
 * index, UUID, PCI bus id), name, UUID, serial, PCI info, index, minor number,
 * memory, utilization and process lists, for GPU and MIG device handles, plus
 * the older entry points of the same calls and the emulated constants
 * (brand, architecture, compute capability, temperature, power). */
#include "nvml-emu/nvml-emu.h"

#include <ctype.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define MIB (1024ull * 1024ull)
#define NO_INSTANCE 0xFFFFFFFFu /* gpuInstanceId/computeInstanceId outside MIG */

/* ---- count and handles ---- */

static nvmlReturn_t get_count(unsigned *count)
{
  struct gs_backend *b = gs__nvemu_backend();
  if (!count)
    return NVML_ERROR_INVALID_ARGUMENT;
  return gs__nvemu_rc(b->ops->gpu_count(b, NULL, count));
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount)
{
  GS__NVEMU_CALL(get_count(deviceCount));
}

/* v1 left out GPUs the caller may not use; every emulated GPU is usable. */
nvmlReturn_t nvmlDeviceGetCount(unsigned int *deviceCount)
{
  GS__NVEMU_CALL(get_count(deviceCount));
}

static nvmlReturn_t handle_by_index(unsigned index, nvmlDevice_t *device)
{
  unsigned n = 0;
  nvmlReturn_t rc;
  if (!device)
    return NVML_ERROR_INVALID_ARGUMENT;
  if ((rc = get_count(&n)) != NVML_SUCCESS)
    return rc;
  if (index >= n)
    return NVML_ERROR_INVALID_ARGUMENT;
  *device = gs__nvemu_gpu_handle(index);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
  GS__NVEMU_CALL(handle_by_index(index, device));
}

nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device)
{
  GS__NVEMU_CALL(handle_by_index(index, device));
}

/* GPU UUIDs, MIG UUIDs, and the pre-R470 "MIG-GPU-<uuid>/<gi>/<ci>" form. */
static nvmlReturn_t handle_by_uuid(const char *uuid, nvmlDevice_t *device)
{
  struct gs_backend *b = gs__nvemu_backend();
  unsigned n = 0;
  nvmlReturn_t rc;
  if (!uuid || !*uuid || !device)
    return NVML_ERROR_INVALID_ARGUMENT;
  if ((rc = get_count(&n)) != NVML_SUCCESS)
    return rc;
  for (unsigned g = 0; g < n; g++) {
    struct gs_gpu_info info;
    const struct gs_mig_device *m;
    unsigned nm = 0;
    int r = b->ops->gpu_info(b, NULL, g, &info);
    if (r)
      return gs__nvemu_rc(r);
    if (strcmp(info.uuid, uuid) == 0) {
      *device = gs__nvemu_gpu_handle(g);
      return NVML_SUCCESS;
    }
    if (strncmp(uuid, "MIG-", 4) != 0)
      continue;
    if ((rc = gs__nvemu_mig_list(g, &m, &nm)) != NVML_SUCCESS)
      return rc;
    for (unsigned i = 0; i < nm; i++)
      if (strcmp(m[i].uuid, uuid) == 0 || strcmp(m[i].legacy_uuid, uuid) == 0) {
        *device = gs__nvemu_mig_handle(g, m[i].gi, m[i].ci);
        return NVML_SUCCESS;
      }
  }
  return NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device)
{
  GS__NVEMU_CALL(handle_by_uuid(uuid, device));
}

/* One hexadecimal field of at most max digits. */
static bool hex_field(const char **s, unsigned max, unsigned *out)
{
  unsigned v = 0, n = 0;
  for (; isxdigit((unsigned char)**s); (*s)++, n++) {
    if (n == max)
      return false;
    v = v * 16 + (unsigned)(isdigit((unsigned char)**s) ? **s - '0'
                                                        : tolower((unsigned char)**s) - 'a' + 10);
  }
  *out = v;
  return n > 0;
}

struct bus_id {
  unsigned domain, bus, device, function;
};

/* The forms NVML accepts: domain:bus:device.function, domain:bus:device and
 * bus:device.function, every number hexadecimal. */
static bool parse_bus_id(const char *s, struct bus_id *id)
{
  unsigned f[3], n = 0;
  memset(id, 0, sizeof(*id));
  for (;;) {
    if (n == 3 || !hex_field(&s, 8, &f[n++]))
      return false;
    if (*s != ':')
      break;
    s++;
  }
  if (*s == '.') {
    s++;
    if (!hex_field(&s, 1, &id->function))
      return false;
  } else if (n == 2) {
    return false; /* "bus:device" names no function and no domain */
  }
  if (*s || n < 2)
    return false;
  if (n == 3)
    id->domain = f[0];
  id->bus = f[n - 2];
  id->device = f[n - 1];
  return id->bus <= 0xFF && id->device <= 0x1F && id->function <= 7;
}

static nvmlReturn_t handle_by_bus_id(const char *text, nvmlDevice_t *device)
{
  struct gs_backend *b = gs__nvemu_backend();
  struct bus_id want, have;
  unsigned n = 0;
  nvmlReturn_t rc;
  if (!text || !device || !parse_bus_id(text, &want))
    return NVML_ERROR_INVALID_ARGUMENT;
  if ((rc = get_count(&n)) != NVML_SUCCESS)
    return rc;
  for (unsigned g = 0; g < n; g++) {
    struct gs_gpu_info info;
    int r = b->ops->gpu_info(b, NULL, g, &info);
    if (r)
      return gs__nvemu_rc(r);
    if (parse_bus_id(info.pci_bus_id, &have) && have.domain == want.domain &&
        have.bus == want.bus && have.device == want.device && want.function == 0) {
      *device = gs__nvemu_gpu_handle(g);
      return NVML_SUCCESS;
    }
  }
  return NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *pciBusId, nvmlDevice_t *device)
{
  GS__NVEMU_CALL(handle_by_bus_id(pciBusId, device));
}

/* v1 answered NOT_FOUND where v2 answers NO_PERMISSION; the emulator never does either. */
nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char *pciBusId, nvmlDevice_t *device)
{
  GS__NVEMU_CALL(handle_by_bus_id(pciBusId, device));
}

/* ---- identity ---- */

static nvmlReturn_t get_name(nvmlDevice_t device, char *name, unsigned length)
{
  struct gs__nvemu_dev d;
  char buf[GS_BACKEND_NAME_SIZE + GS_GEOM_NAME_SIZE + 8];
  nvmlReturn_t rc = gs__nvemu_device(device, &d);
  if (rc != NVML_SUCCESS)
    return rc;
  if (d.mig)
    snprintf(buf, sizeof(buf), "%s MIG %s", d.info.name, d.m.name); /* "... MIG 1g.5gb" */
  else
    snprintf(buf, sizeof(buf), "%s", d.info.name);
  return gs__nvemu_copy(name, length, buf);
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length)
{
  GS__NVEMU_CALL(get_name(device, name, length));
}

static nvmlReturn_t get_uuid(nvmlDevice_t device, char *uuid, unsigned length)
{
  struct gs__nvemu_dev d;
  nvmlReturn_t rc = gs__nvemu_device(device, &d);
  if (rc != NVML_SUCCESS)
    return rc;
  return gs__nvemu_copy(uuid, length, d.mig ? d.m.uuid : d.info.uuid);
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length)
{
  GS__NVEMU_CALL(get_uuid(device, uuid, length));
}

/* A board serial (13 digits) derived from the GPU's UUID, so it is stable.
 * The board is the GPU's: MIG devices have none of their own. */
static nvmlReturn_t get_serial(nvmlDevice_t device, char *serial, unsigned length)
{
  struct gs__nvemu_dev d;
  uint8_t h[16];
  char buf[16];
  nvmlReturn_t rc = gs__nvemu_device(device, &d);
  if (rc != NVML_SUCCESS)
    return rc;
  if (!serial)
    return NVML_ERROR_INVALID_ARGUMENT;
  if (d.mig)
    return NVML_ERROR_NOT_SUPPORTED;
  gs_hash128(d.info.uuid, strlen(d.info.uuid), h);
  buf[0] = '1';
  for (unsigned i = 1; i < 13; i++)
    buf[i] = (char)('0' + h[i] % 10);
  buf[13] = 0;
  return gs__nvemu_copy(serial, length, buf);
}

nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t device, char *serial, unsigned int length)
{
  GS__NVEMU_CALL(get_serial(device, serial, length));
}

/* A MIG device sits on its parent's PCI function. */
static nvmlReturn_t get_pci(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
  struct gs__nvemu_dev d;
  struct bus_id id;
  nvmlReturn_t rc = gs__nvemu_device(device, &d);
  if (rc != NVML_SUCCESS)
    return rc;
  if (!pci)
    return NVML_ERROR_INVALID_ARGUMENT;
  if (!parse_bus_id(d.info.pci_bus_id, &id))
    return NVML_ERROR_UNKNOWN;
  memset(pci, 0, sizeof(*pci));
  snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), "%04X:%02X:%02X.0", id.domain & 0xFFFFu,
           id.bus & 0xFFu, id.device & 0x1Fu);
  snprintf(pci->busId, sizeof(pci->busId), "%08X:%02X:%02X.0", id.domain, id.bus & 0xFFu,
           id.device & 0x1Fu);
  pci->domain = id.domain;
  pci->bus = id.bus;
  pci->device = id.device;
  pci->pciDeviceId = d.info.pci_device_id;
  pci->pciSubSystemId = d.info.pci_subsystem_id;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
  GS__NVEMU_CALL(get_pci(device, pci));
}

/* The v1 and v2 struct ended after pciSubSystemId (busId was their 16-byte
 * first field, today's busIdLegacy): only that prefix is written. */
static nvmlReturn_t get_pci_old(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
  nvmlPciInfo_t full;
  nvmlReturn_t rc = get_pci(device, pci ? &full : NULL);
  if (rc == NVML_SUCCESS)
    memcpy(pci, &full, offsetof(nvmlPciInfo_t, busId));
  return rc;
}

nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
  GS__NVEMU_CALL(get_pci_old(device, pci));
}

nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
  GS__NVEMU_CALL(get_pci_old(device, pci));
}

static nvmlReturn_t get_index(nvmlDevice_t device, unsigned *index)
{
  struct gs__nvemu_dev d;
  nvmlReturn_t rc = gs__nvemu_device(device, &d);
  if (rc != NVML_SUCCESS)
    return rc;
  if (!index)
    return NVML_ERROR_INVALID_ARGUMENT;
  *index = d.mig ? d.m.index : d.gpu;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int *index)
{
  GS__NVEMU_CALL(get_index(device, index));
}

/* /dev/nvidia<minor>: the GPU's index here; MIG devices have capability
 * minors instead, which this call does not report. */
static nvmlReturn_t get_minor(nvmlDevice_t device, unsigned *minor)
{
  struct gs__nvemu_dev d;
  nvmlReturn_t rc = gs__nvemu_device(device, &d);
  if (rc != NVML_SUCCESS)
    return rc;
  if (!minor)
    return NVML_ERROR_INVALID_ARGUMENT;
  if (d.mig)
    return NVML_ERROR_NOT_SUPPORTED;
  *minor = d.gpu;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int *minorNumber)
{
  GS__NVEMU_CALL(get_minor(device, minorNumber));
}

/* ---- memory and utilization ---- */

/* Total and used bytes: the whole GPU's (MIG mode or not), or on a MIG
 * handle its GPU instance's, which the instance's CIs share. Used memory is
 * what the emulated processes hold. */
static nvmlReturn_t memory_of(nvmlDevice_t device, unsigned long long *total,
                              unsigned long long *used)
{
  struct gs__nvemu_dev d;
  const struct gs_proc_info *p;
  unsigned n = 0;
  nvmlReturn_t rc = gs__nvemu_device(device, &d);
  if (rc != NVML_SUCCESS || (rc = gs__nvemu_procs(d.gpu, &p, &n)) != NVML_SUCCESS)
    return rc;
  *total = (d.mig ? d.m.memory_mib : d.info.memory_mib) * MIB;
  *used = 0;
  for (unsigned i = 0; i < n; i++)
    if (!d.mig || p[i].gi == (int)d.m.gi)
      *used += p[i].used_mib * MIB;
  if (*used > *total)
    *used = *total;
  return NVML_SUCCESS;
}

static nvmlReturn_t get_memory(nvmlDevice_t device, nvmlMemory_t *memory)
{
  unsigned long long total = 0, used = 0;
  nvmlReturn_t rc = memory_of(device, &total, &used);
  if (rc != NVML_SUCCESS)
    return rc;
  if (!memory)
    return NVML_ERROR_INVALID_ARGUMENT;
  memory->total = total;
  memory->used = used;
  memory->free = total - used;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
  GS__NVEMU_CALL(get_memory(device, memory));
}

static nvmlReturn_t get_memory_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory)
{
  unsigned long long total = 0, used = 0;
  nvmlReturn_t rc = memory_of(device, &total, &used);
  if (rc != NVML_SUCCESS)
    return rc;
  if (!memory)
    return NVML_ERROR_INVALID_ARGUMENT;
  if (memory->version != nvmlMemory_v2)
    return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  memory->total = total;
  memory->reserved = 0; /* the emulator reserves nothing for the driver */
  memory->used = used;
  memory->free = total - used;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory)
{
  GS__NVEMU_CALL(get_memory_v2(device, memory));
}

/* NVML does not report utilization in MIG mode, nor for MIG devices. */
static nvmlReturn_t get_utilization(nvmlDevice_t device, nvmlUtilization_t *u)
{
  struct gs__nvemu_dev d;
  nvmlReturn_t rc = gs__nvemu_device(device, &d);
  if (rc != NVML_SUCCESS)
    return rc;
  if (!u)
    return NVML_ERROR_INVALID_ARGUMENT;
  if (d.mig || d.info.mig_current)
    return NVML_ERROR_NOT_SUPPORTED;
  u->gpu = 0;
  u->memory = 0;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *utilization)
{
  GS__NVEMU_CALL(get_utilization(device, utilization));
}

/* ---- processes ---- */

enum proc_layout { PROC_V1, PROC_V2 };

/* The emulator's processes of a GPU, or of one MIG device, as NVML lists
 * them: *count = 0 (infos may then be NULL) asks for the count, a short
 * array gets INSUFFICIENT_SIZE and the count needed. The emulator's
 * processes are compute processes; it has no graphics ones. */
static nvmlReturn_t list_procs(nvmlDevice_t device, unsigned *count, void *infos,
                               enum proc_layout layout, bool graphics)
{
  struct gs__nvemu_dev d;
  const struct gs_proc_info *p = NULL;
  unsigned n = 0, k = 0;
  nvmlReturn_t rc = gs__nvemu_device(device, &d);
  if (rc != NVML_SUCCESS)
    return rc;
  if (!count || (!infos && *count))
    return NVML_ERROR_INVALID_ARGUMENT;
  if (!graphics && (rc = gs__nvemu_procs(d.gpu, &p, &n)) != NVML_SUCCESS)
    return rc;
  for (unsigned i = 0; i < n; i++)
    k += !d.mig || (p[i].gi == (int)d.m.gi && p[i].ci == (int)d.m.ci);
  if (*count < k) {
    *count = k;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  k = 0;
  for (unsigned i = 0; i < n; i++) {
    if (d.mig && (p[i].gi != (int)d.m.gi || p[i].ci != (int)d.m.ci))
      continue;
    if (layout == PROC_V1) {
      nvmlProcessInfo_v1_t *o = (nvmlProcessInfo_v1_t *)infos + k++;
      o->pid = p[i].pid;
      o->usedGpuMemory = p[i].used_mib * MIB;
    } else {
      nvmlProcessInfo_v2_t *o = (nvmlProcessInfo_v2_t *)infos + k++;
      o->pid = p[i].pid;
      o->usedGpuMemory = p[i].used_mib * MIB;
      o->gpuInstanceId = p[i].gi < 0 ? NO_INSTANCE : (unsigned)p[i].gi;
      o->computeInstanceId = p[i].ci < 0 ? NO_INSTANCE : (unsigned)p[i].ci;
    }
  }
  *count = k;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount,
                                                     nvmlProcessInfo_t *infos)
{
  GS__NVEMU_CALL(list_procs(device, infoCount, infos, PROC_V2, false));
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device, unsigned int *infoCount,
                                                     nvmlProcessInfo_v2_t *infos)
{
  GS__NVEMU_CALL(list_procs(device, infoCount, infos, PROC_V2, false));
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device, unsigned int *infoCount,
                                                  nvmlProcessInfo_v1_t *infos)
{
  GS__NVEMU_CALL(list_procs(device, infoCount, infos, PROC_V1, false));
}

nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount,
                                                      nvmlProcessInfo_t *infos)
{
  GS__NVEMU_CALL(list_procs(device, infoCount, infos, PROC_V2, true));
}

nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v2(nvmlDevice_t device, unsigned int *infoCount,
                                                      nvmlProcessInfo_v2_t *infos)
{
  GS__NVEMU_CALL(list_procs(device, infoCount, infos, PROC_V2, true));
}

nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses(nvmlDevice_t device, unsigned int *infoCount,
                                                   nvmlProcessInfo_v1_t *infos)
{
  GS__NVEMU_CALL(list_procs(device, infoCount, infos, PROC_V1, true));
}

/* ---- emulated constants (docs/nvml-emu.md) ---- */

#define TEMPERATURE_C 34 /* an idle data-center GPU */

static bool is_rtx(const struct gs_geom_model *m)
{
  return strncmp(m->key, "rtx", 3) == 0;
}

static nvmlReturn_t get_brand(nvmlDevice_t device, nvmlBrandType_t *type)
{
  struct gs__nvemu_dev d;
  nvmlReturn_t rc = gs__nvemu_device(device, &d);
  if (rc != NVML_SUCCESS)
    return rc;
  if (!type)
    return NVML_ERROR_INVALID_ARGUMENT;
  *type = is_rtx(d.info.model) ? NVML_BRAND_NVIDIA_RTX : NVML_BRAND_NVIDIA;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetBrand(nvmlDevice_t device, nvmlBrandType_t *type)
{
  GS__NVEMU_CALL(get_brand(device, type));
}

static nvmlReturn_t get_arch(nvmlDevice_t device, nvmlDeviceArchitecture_t *arch)
{
  struct gs__nvemu_dev d;
  nvmlReturn_t rc = gs__nvemu_device(device, &d);
  if (rc != NVML_SUCCESS)
    return rc;
  if (!arch)
    return NVML_ERROR_INVALID_ARGUMENT;
  switch (d.info.model->arch) {
  case GS_GEOM_AMPERE:
    *arch = NVML_DEVICE_ARCH_AMPERE;
    break;
  case GS_GEOM_HOPPER:
    *arch = NVML_DEVICE_ARCH_HOPPER;
    break;
  case GS_GEOM_BLACKWELL:
    *arch = NVML_DEVICE_ARCH_BLACKWELL;
    break;
  default:
    *arch = NVML_DEVICE_ARCH_UNKNOWN;
  }
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t device, nvmlDeviceArchitecture_t *arch)
{
  GS__NVEMU_CALL(get_arch(device, arch));
}

/* sm_80 (GA100), sm_90 (GH100), sm_100 (GB100/GB200), sm_120 (RTX PRO 6000);
 * a MIG device reports its GPU's, as CUDA does. */
static nvmlReturn_t get_capability(nvmlDevice_t device, int *major, int *minor)
{
  struct gs__nvemu_dev d;
  nvmlReturn_t rc = gs__nvemu_device(device, &d);
  if (rc != NVML_SUCCESS)
    return rc;
  if (!major || !minor)
    return NVML_ERROR_INVALID_ARGUMENT;
  switch (d.info.model->arch) {
  case GS_GEOM_AMPERE:
    *major = 8;
    break;
  case GS_GEOM_HOPPER:
    *major = 9;
    break;
  default:
    *major = is_rtx(d.info.model) ? 12 : 10;
  }
  *minor = 0;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int *major, int *minor)
{
  GS__NVEMU_CALL(get_capability(device, major, minor));
}

/* Sensors belong to the board: a MIG device has none of its own. */
static nvmlReturn_t get_temperature(nvmlDevice_t device, unsigned sensor, int *temp)
{
  struct gs__nvemu_dev d;
  nvmlReturn_t rc = gs__nvemu_device(device, &d);
  if (rc != NVML_SUCCESS)
    return rc;
  if (!temp || sensor >= NVML_TEMPERATURE_COUNT)
    return NVML_ERROR_INVALID_ARGUMENT;
  if (d.mig)
    return NVML_ERROR_NOT_SUPPORTED;
  *temp = TEMPERATURE_C;
  return NVML_SUCCESS;
}

static nvmlReturn_t get_temperature_v1(nvmlDevice_t device, unsigned sensor, unsigned *temp)
{
  int t = 0;
  nvmlReturn_t rc = get_temperature(device, sensor, temp ? &t : NULL);
  if (rc == NVML_SUCCESS)
    *temp = (unsigned)t;
  return rc;
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, nvmlTemperatureSensors_t sensorType,
                                      unsigned int *temp)
{
  GS__NVEMU_CALL(get_temperature_v1(device, (unsigned)sensorType, temp));
}

static nvmlReturn_t get_temperature_v(nvmlDevice_t device, nvmlTemperature_t *t)
{
  struct gs__nvemu_dev d;
  nvmlReturn_t rc = gs__nvemu_device(device, &d);
  if (rc != NVML_SUCCESS)
    return rc;
  if (!t)
    return NVML_ERROR_INVALID_ARGUMENT;
  if (t->version != nvmlTemperature_v1)
    return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  return get_temperature(device, (unsigned)t->sensorType, &t->temperature);
}

nvmlReturn_t nvmlDeviceGetTemperatureV(nvmlDevice_t device, nvmlTemperature_t *temperature)
{
  GS__NVEMU_CALL(get_temperature_v(device, temperature));
}

/* An idle board's draw in milliwatts, by generation. */
static nvmlReturn_t get_power(nvmlDevice_t device, unsigned *power)
{
  static const unsigned idle_mw[] = {
      [GS_GEOM_AMPERE] = 55000, [GS_GEOM_HOPPER] = 70000, [GS_GEOM_BLACKWELL] = 120000};
  struct gs__nvemu_dev d;
  nvmlReturn_t rc = gs__nvemu_device(device, &d);
  if (rc != NVML_SUCCESS)
    return rc;
  if (!power)
    return NVML_ERROR_INVALID_ARGUMENT;
  if (d.mig)
    return NVML_ERROR_NOT_SUPPORTED;
  *power = (unsigned)d.info.model->arch < GS_NITEMS(idle_mw) ? idle_mw[d.info.model->arch] : 60000;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int *power)
{
  GS__NVEMU_CALL(get_power(device, power));
}
