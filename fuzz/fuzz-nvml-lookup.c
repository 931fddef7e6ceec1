/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz-nvml-lookup.c: libFuzzer target for nvml-emu's lookups by text, the
 * PCI bus id parser above all (nvmlDeviceGetHandleByPciBusId_v2 and the
 * legacy name) and nvmlDeviceGetHandleByUUID, on an emulated machine of two
 * A100s with MIG devices. Any text must get SUCCESS, NOT_FOUND or
 * INVALID_ARGUMENT; a handle found by bus id must be the GPU whose own bus id
 * finds it again, and one found by UUID must report that UUID (or be the MIG
 * device its legacy MIG-GPU-<uuid>/<gi>/<ci> name names). */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/nvml_abi.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void die(const char *what, const char *text)
{
  fprintf(stderr, "fuzz-nvml-lookup: %s: \"%s\"\n", what, text);
  abort();
}

static void need(nvmlReturn_t rc, const char *what)
{
  if (rc != NVML_SUCCESS)
    die(what, nvmlErrorString(rc));
}

static char dir[] = "/tmp/gpuslice-fuzz-nvml.XXXXXX";

/* The scratch directory holds only the emulator's files, no subdirectory. */
static void remove_dir(void)
{
  DIR *d = opendir(dir);
  struct dirent *e;
  char path[128];
  while (d && (e = readdir(d)))
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
      snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
      unlink(path);
    }
  if (d)
    closedir(d);
  rmdir(dir);
}

/* A scratch state file, MIG on GPU 0 with a 3g GI and two CIs (MIG UUIDs to hit). */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
  static char path[64];
  nvmlDevice_t gpu;
  nvmlGpuInstance_t gi;
  nvmlComputeInstance_t ci;
  nvmlReturn_t status;
  (void)argc;
  (void)argv;
  if (!mkdtemp(dir))
    die("mkdtemp", dir);
  atexit(remove_dir);
  snprintf(path, sizeof(path), "%s/emu.json", dir);
  setenv("GPUSLICE_EMU_STATE", path, 1);
  setenv("GPUSLICE_EMULATE", "a100-40gb:2", 1);
  need(nvmlInit_v2(), "nvmlInit_v2");
  need(nvmlDeviceGetHandleByIndex_v2(0, &gpu), "GetHandleByIndex");
  need(nvmlDeviceSetMigMode(gpu, NVML_DEVICE_MIG_ENABLE, &status), "SetMigMode");
  need(nvmlDeviceCreateGpuInstance(gpu, 9, &gi), "CreateGpuInstance");
  need(nvmlGpuInstanceCreateComputeInstance(gi, 0, &ci), "CreateComputeInstance");
  need(nvmlGpuInstanceCreateComputeInstance(gi, 0, &ci), "CreateComputeInstance");
  return 0;
}

static void check_code(nvmlReturn_t rc, const char *what, const char *text)
{
  if (rc != NVML_SUCCESS && rc != NVML_ERROR_NOT_FOUND && rc != NVML_ERROR_INVALID_ARGUMENT)
    die(what, text);
}

static void by_bus_id(const char *text)
{
  nvmlDevice_t d = NULL, again = NULL, legacy = NULL;
  nvmlPciInfo_t pci;
  nvmlReturn_t rc = nvmlDeviceGetHandleByPciBusId_v2(text, &d);
  check_code(rc, "GetHandleByPciBusId_v2 returned another code", text);
  if (nvmlDeviceGetHandleByPciBusId(text, &legacy) != rc || legacy != d)
    die("the legacy GetHandleByPciBusId disagrees", text);
  if (rc != NVML_SUCCESS)
    return;
  if (strspn(text, "0123456789abcdefABCDEF:.") != strlen(text))
    die("a bus id with other characters was accepted", text);
  need(nvmlDeviceGetPciInfo_v3(d, &pci), "GetPciInfo_v3");
  if (nvmlDeviceGetHandleByPciBusId_v2(pci.busId, &again) != NVML_SUCCESS || again != d)
    die("the GPU's own bus id does not find it again", text);
}

static void by_uuid(const char *text)
{
  char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
  nvmlDevice_t d = NULL;
  nvmlReturn_t rc = nvmlDeviceGetHandleByUUID(text, &d);
  check_code(rc, "GetHandleByUUID returned another code", text);
  if (rc != NVML_SUCCESS)
    return;
  need(nvmlDeviceGetUUID(d, uuid, sizeof(uuid)), "GetUUID");
  if (strcmp(uuid, text) != 0 && strncmp(text, "MIG-GPU-", 8) != 0)
    die("the device found reports another UUID", text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char *text = malloc(size + 1);
  if (!text)
    return 0;
  memcpy(text, data, size);
  text[size] = '\0';
  by_bus_id(text);
  by_uuid(text);
  free(text);
  return 0;
}
