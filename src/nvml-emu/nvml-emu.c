/* SPDX-License-Identifier: Apache-2.0 */
/* nvml-emu.c: the library's life cycle and system-wide calls: the one lock
 * every call takes, nvmlInit/nvmlShutdown (reference-counted) opening and
 * closing the emulator backend ($GPUSLICE_EMULATE, $GPUSLICE_EMU_STATE),
 * nvmlErrorString, and the driver, NVML and CUDA versions of the emulated
 * machine's driver.
 * Built as libnvidia-ml.so.1; see docs/nvml-emu.md. */
#include "nvml-emu/nvml-emu.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned refs;              /* successful inits not yet shut down */
static bool ever_initialized;      /* for nvmlShutdown's two documented answers */
static struct gs_backend *backend; /* non-NULL exactly while refs > 0 */

void gs__nvemu_lock(void)
{
  pthread_mutex_lock(&lock);
}

void gs__nvemu_unlock(void)
{
  pthread_mutex_unlock(&lock);
}

struct gs_backend *gs__nvemu_backend(void)
{
  return backend;
}

/* ---- init and shutdown ---- */

/* Opens the emulator on the first init. NVML can only say "driver not
 * loaded", so the reason goes to stderr once: a person running an NVML tool
 * over the emulator needs to know which variable or file to fix. */
static nvmlReturn_t init_locked(void)
{
  struct gs_backend_config cfg = {.kind = "emu",
                                  .emulate = getenv("GPUSLICE_EMULATE"),
                                  .state_path = getenv("GPUSLICE_EMU_STATE")};
  struct gs_err err = {0};
  if (refs == 0 && gs_backend_open(&err, &cfg, &backend) != 0) {
    backend = NULL;
    fprintf(stderr, "libnvidia-ml.so.1 (gpuslice nvml-emu): cannot start the GPU emulator: %s\n",
            err.msg);
    return NVML_ERROR_DRIVER_NOT_LOADED;
  }
  refs++;
  ever_initialized = true;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlInit_v2(void)
{
  nvmlReturn_t rc;
  gs__nvemu_lock();
  rc = init_locked();
  gs__nvemu_unlock();
  return rc;
}

/* The flags change nothing here: an emulated machine always has GPUs and
 * attaching to them costs nothing. */
nvmlReturn_t nvmlInitWithFlags(unsigned int flags)
{
  (void)flags;
  return nvmlInit_v2();
}

/* nvmlInit "v1" initialized every GPU up front; the emulator's are always up. */
nvmlReturn_t nvmlInit(void)
{
  return nvmlInit_v2();
}

/* NVML documents both UNINITIALIZED ("not successfully initialized") and "no
 * error if called more times than nvmlInit": a process that never initialized
 * gets the first, extra calls after a successful init the second. */
nvmlReturn_t nvmlShutdown(void)
{
  nvmlReturn_t rc = NVML_SUCCESS;
  gs__nvemu_lock();
  if (refs == 0)
    rc = ever_initialized ? NVML_SUCCESS : NVML_ERROR_UNINITIALIZED;
  else if (--refs == 0) {
    gs_backend_close(backend);
    backend = NULL;
  }
  gs__nvemu_unlock();
  return rc;
}

/* ---- errors ---- */

/* NVML's texts for the values gpuslice's code map has no row for. */
static const struct {
  nvmlReturn_t rc;
  const char *text;
} extra_texts[] = {
    {NVML_ERROR_ALREADY_INITIALIZED, "Already Initialized"},
    {NVML_ERROR_INSUFFICIENT_POWER, "Insufficient External Power"},
    {NVML_ERROR_TIMEOUT, "Timeout"},
    {NVML_ERROR_IRQ_ISSUE, "Interrupt request issue"},
    {NVML_ERROR_CORRUPTED_INFOROM, "Corrupted infoROM"},
    {NVML_ERROR_OPERATING_SYSTEM, "Operating System Error"},
    {NVML_ERROR_LIB_RM_VERSION_MISMATCH, "Driver/library version mismatch"},
    {NVML_ERROR_NO_DATA, "No Data"},
    {NVML_ERROR_VGPU_ECC_NOT_SUPPORTED, "vGPU ECC Not Supported"},
    {NVML_ERROR_FREQ_NOT_SUPPORTED, "Frequency Not Supported"},
    {NVML_ERROR_DEPRECATED, "Deprecated"},
    {NVML_ERROR_NOT_READY, "Not Ready"},
    {NVML_ERROR_GPU_NOT_FOUND, "GPU Not Found"},
    {NVML_ERROR_INVALID_STATE, "Invalid State"},
    {NVML_ERROR_RESET_TYPE_NOT_SUPPORTED, "Reset Type Not Supported"},
};

/* Needs no init and no lock: it only reads constant tables. */
const char *nvmlErrorString(nvmlReturn_t result)
{
  for (size_t i = 0; i < GS_NITEMS(extra_texts); i++)
    if (extra_texts[i].rc == result)
      return extra_texts[i].text;
  return gs_backend_code_text(gs_backend_code_from_nvml((int)result)); /* "Unknown Error" for the rest */
}

/* ---- system queries ---- */

/* The emulated machine's driver (emu set --driver, --emulate ...@535): from
 * the open emulator, else from a short-lived one, since NVML answers its own
 * and CUDA's versions before nvmlInit too; the default driver when no
 * emulator can start (init then fails and says why). Under the lock. */
static void machine_driver(struct gs_geom_driver *out)
{
  struct gs_backend_config cfg = {.kind = "emu",
                                  .emulate = getenv("GPUSLICE_EMULATE"),
                                  .state_path = getenv("GPUSLICE_EMU_STATE")};
  struct gs_backend *b = backend;
  struct gs_gpu_info info;
  gs_geom_driver_default(out);
  if (!b && gs_backend_open(NULL, &cfg, &b) != 0)
    return;
  if (b->ops->gpu_info(b, NULL, 0, &info) == 0 && info.driver[0]) {
    snprintf(out->version, sizeof(out->version), "%s", info.driver);
    out->cuda = info.cuda_version;
  }
  if (b != backend)
    gs_backend_close(b);
}

static nvmlReturn_t driver_version(char *version, unsigned length)
{
  struct gs_geom_driver d;
  machine_driver(&d);
  return gs__nvemu_copy(version, length, d.version);
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
  GS__NVEMU_CALL(driver_version(version, length));
}

/* "12.535.183.01": the CUDA major before the driver's version, as NVML's. */
static nvmlReturn_t nvml_version(char *version, unsigned length)
{
  struct gs_geom_driver d;
  char text[GS_GEOM_DRIVER_SIZE + 8];
  machine_driver(&d);
  snprintf(text, sizeof(text), "%u.%s", d.cuda / 1000, d.version);
  return gs__nvemu_copy(version, length, text);
}

/* The header lists no UNINITIALIZED for the NVML and CUDA versions: they are
 * the library's own, answered before nvmlInit too. */
nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length)
{
  nvmlReturn_t rc;
  gs__nvemu_lock();
  rc = nvml_version(version, length);
  gs__nvemu_unlock();
  return rc;
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *cudaDriverVersion)
{
  struct gs_geom_driver d;
  if (!cudaDriverVersion)
    return NVML_ERROR_INVALID_ARGUMENT;
  gs__nvemu_lock();
  machine_driver(&d);
  gs__nvemu_unlock();
  *cudaDriverVersion = (int)d.cuda;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *cudaDriverVersion)
{
  return nvmlSystemGetCudaDriverVersion(cudaDriverVersion);
}

/* The emulator keeps each process's name; NVML crops to length. */
static nvmlReturn_t process_name(unsigned pid, char *name, unsigned length)
{
  struct gs_backend *b = gs__nvemu_backend();
  unsigned ngpu = 0;
  int rc;
  if (!name || length == 0)
    return NVML_ERROR_INVALID_ARGUMENT;
  if ((rc = b->ops->gpu_count(b, NULL, &ngpu)) != 0)
    return gs__nvemu_rc(rc);
  for (unsigned g = 0; g < ngpu; g++) {
    const struct gs_proc_info *p;
    unsigned n = 0;
    nvmlReturn_t r = gs__nvemu_procs(g, &p, &n);
    if (r != NVML_SUCCESS)
      return r;
    for (unsigned i = 0; i < n; i++)
      if (p[i].pid == pid) {
        snprintf(name, length, "%s", p[i].name);
        return NVML_SUCCESS;
      }
  }
  return NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t nvmlSystemGetProcessName(unsigned int pid, char *name, unsigned int length)
{
  GS__NVEMU_CALL(process_name(pid, name, length));
}
