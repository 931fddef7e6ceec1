/* SPDX-License-Identifier: Apache-2.0 */
/* affinity.c: NVML's CPU affinity queries over the emulator. An emulated GPU
 * is as near to every CPU as the host lets NVML see: its ideal CPUs, within
 * NUMA node or socket, are every online CPU of the host
 * (/sys/devices/system/cpu/online). Slurm's gpu/nvml reads this set for each
 * GPU and stops on an empty one, so it must be answered. MIG device handles
 * get NOT_SUPPORTED, as for the other per-board queries here. */
#include "nvml-emu/nvml-emu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BITS (8 * sizeof(unsigned long))

/* Sets the bits of "0-3,8,10-11" (the kernel's cpulist form) in set. */
static void add_cpulist(const char *list, unsigned long *set, unsigned size)
{
  const char *p = list;
  while (*p) {
    char *end;
    unsigned long lo = strtoul(p, &end, 10), hi = lo;
    if (end == p)
      return;
    if (*end == '-')
      hi = strtoul(end + 1, &end, 10);
    for (unsigned long c = lo; c <= hi && c / BITS < size; c++)
      set[c / BITS] |= 1ul << (c % BITS);
    p = end + (*end == ',');
    if (*end != ',')
      return;
  }
}

static nvmlReturn_t cpu_affinity(nvmlDevice_t device, unsigned size, unsigned long *set,
                                 nvmlAffinityScope_t scope)
{
  struct gs__nvemu_dev d;
  char *text = NULL;
  size_t len = 0;
  nvmlReturn_t rc = gs__nvemu_device(device, &d);
  if (rc != NVML_SUCCESS)
    return rc;
  if (!set || size == 0 || (scope != NVML_AFFINITY_SCOPE_NODE && scope != NVML_AFFINITY_SCOPE_SOCKET))
    return NVML_ERROR_INVALID_ARGUMENT;
  if (d.mig)
    return NVML_ERROR_NOT_SUPPORTED;
  memset(set, 0, size * sizeof(*set));
  if (gs_file_read(NULL, "/sys/devices/system/cpu/online", 4096, &text, &len) == 0)
    add_cpulist(text, set, size);
  free(text);
  if (set[0] == 0) { /* no sysfs: CPUs 0..n-1 */
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    for (long c = 0; c < (n > 0 ? n : 1) && (unsigned long)c / BITS < size; c++)
      set[c / BITS] |= 1ul << (c % BITS);
  }
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCpuAffinity(nvmlDevice_t device, unsigned int cpuSetSize,
                                      unsigned long *cpuSet)
{
  GS__NVEMU_CALL(cpu_affinity(device, cpuSetSize, cpuSet, NVML_AFFINITY_SCOPE_NODE));
}

nvmlReturn_t nvmlDeviceGetCpuAffinityWithinScope(nvmlDevice_t device, unsigned int cpuSetSize,
                                                 unsigned long *cpuSet, nvmlAffinityScope_t scope)
{
  GS__NVEMU_CALL(cpu_affinity(device, cpuSetSize, cpuSet, scope));
}
