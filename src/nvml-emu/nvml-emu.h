/* SPDX-License-Identifier: Apache-2.0 */
/* nvml-emu.h: what the files of nvml-emu share and nothing outside may use:
 * the one lock and the emulator backend behind every call, the static handle
 * tables, and the helpers that turn a handle into the emulator's view of it.
 * The layer's public interface is NVML's C ABI itself (backend/nvml_abi.h);
 * it reaches the GPUs only through backend.h and geometry.h (DESIGN.md). */
#ifndef GS_NVML_EMU_H
#define GS_NVML_EMU_H

#include "backend/backend.h"
#include "backend/nvml_abi.h"

#define GS__NVEMU_GI_SLOTS 15 /* GPU-instance ids 0..14 (reference §8.1) */
#define GS__NVEMU_CI_SLOTS 8  /* compute-instance ids 0..7 */

/* ---- the lock and the library's state ---- */

void gs__nvemu_lock(void);
void gs__nvemu_unlock(void);
/* The emulator while the library is initialized, else NULL; call under the lock. */
struct gs_backend *gs__nvemu_backend(void);

/* Runs `call` (an nvmlReturn_t expression) under the lock, or answers
 * UNINITIALIZED when nvmlInit has not been called, and returns. */
#define GS__NVEMU_CALL(call)                                                                       \
  do {                                                                                             \
    nvmlReturn_t rc_;                                                                              \
    gs__nvemu_lock();                                                                              \
    rc_ = gs__nvemu_backend() ? (call) : NVML_ERROR_UNINITIALIZED;                                 \
    gs__nvemu_unlock();                                                                            \
    return rc_;                                                                                    \
  } while (0)

/* NVML's value for one of our codes (0 is NVML_SUCCESS). */
nvmlReturn_t gs__nvemu_rc(int code);

/* ---- handles ---- */

nvmlDevice_t gs__nvemu_gpu_handle(unsigned gpu);
nvmlDevice_t gs__nvemu_mig_handle(unsigned gpu, unsigned gi, unsigned ci);
nvmlGpuInstance_t gs__nvemu_gi_handle(unsigned gpu, unsigned gi);
nvmlComputeInstance_t gs__nvemu_ci_handle(unsigned gpu, unsigned gi, unsigned ci);

/* A device handle resolved against the emulator's current state. */
struct gs__nvemu_dev {
  unsigned gpu;
  bool mig;                /* a MIG device handle (one compute instance) */
  struct gs_gpu_info info; /* the GPU, or the MIG device's parent */
  struct gs_mig_device m;  /* the MIG device, when mig */
};

/* Each returns NVML_SUCCESS, or INVALID_ARGUMENT for a pointer that is none of
 * our handles of that kind, or one whose GPU, GPU instance, compute instance
 * or MIG device does not exist (any more). */
nvmlReturn_t gs__nvemu_device(nvmlDevice_t d, struct gs__nvemu_dev *out);
nvmlReturn_t gs__nvemu_gpu(nvmlDevice_t d, struct gs__nvemu_dev *out); /* GPU handles only */
nvmlReturn_t gs__nvemu_mig(nvmlDevice_t d, struct gs__nvemu_dev *out); /* MIG handles only */
nvmlReturn_t gs__nvemu_gi(nvmlGpuInstance_t h, struct gs_gi_info *out);
nvmlReturn_t gs__nvemu_ci(nvmlComputeInstance_t h, struct gs_gi_info *gi, struct gs_ci_info *out);

/* The MIG devices or processes of a GPU, in the emulator's order, in a
 * buffer the library owns (valid under the lock until the next such call). */
nvmlReturn_t gs__nvemu_mig_list(unsigned gpu, const struct gs_mig_device **out, unsigned *count);
nvmlReturn_t gs__nvemu_procs(unsigned gpu, const struct gs_proc_info **out, unsigned *count);

/* Copies a string out as NVML does: INVALID_ARGUMENT for NULL, and
 * INSUFFICIENT_SIZE when length cannot hold it with its terminator. */
nvmlReturn_t gs__nvemu_copy(char *dst, unsigned length, const char *src);

#endif
