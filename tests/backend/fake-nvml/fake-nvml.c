/* SPDX-License-Identifier: Apache-2.0 */
/* fake-nvml.c: a tiny stand-in for an old or broken libnvidia-ml.so.1, built
 * in variants (see CMakeLists.txt) to drive the nvml backend's failure paths:
 * a pre-MIG driver that exports only unversioned names, a driver whose init
 * fails, and one that sees no GPU. One A100 whose MIG calls do not exist. */
#include "backend/nvml_abi.h"

#include <stdio.h>
#include <string.h>

static struct nvmlDevice_st {
  int unused;
} the_gpu;

nvmlReturn_t nvmlInit(void);
nvmlReturn_t nvmlDeviceGetCount(unsigned int *count);
nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device);

nvmlReturn_t nvmlInit(void)
{
#ifdef FAKE_INIT_FAILS
  return NVML_ERROR_DRIVER_NOT_LOADED;
#else
  return NVML_SUCCESS;
#endif
}

nvmlReturn_t nvmlShutdown(void)
{
  return NVML_SUCCESS;
}

const char *nvmlErrorString(nvmlReturn_t rc)
{
  return rc == NVML_ERROR_DRIVER_NOT_LOADED ? "Driver Not Loaded" : "Unknown Error";
}

nvmlReturn_t nvmlDeviceGetCount(unsigned int *count)
{
#ifdef FAKE_NO_GPUS
  *count = 0;
#else
  *count = 1;
#endif
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device)
{
  if (index != 0)
    return NVML_ERROR_INVALID_ARGUMENT;
  *device = &the_gpu;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length)
{
  (void)device;
  snprintf(name, length, "NVIDIA A100-SXM4-40GB");
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length)
{
  (void)device;
  snprintf(uuid, length, "GPU-00000000-1111-2222-3333-444444444444");
  return NVML_SUCCESS;
}
