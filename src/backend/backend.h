/* SPDX-License-Identifier: Apache-2.0 */
/* backend.h: one interface for "a machine with GPUs": MIG mode, GPU and
 * compute instances, MIG devices and processes. Implementations: nvml (real
 * GPUs through libnvidia-ml.so.1, loaded at run time) and emu (emulated GPUs
 * whose state lives in a file, with NVML's semantics and error codes).
 * Uses geometry only (DESIGN.md, backend). */
#ifndef GS_BACKEND_H
#define GS_BACKEND_H

#include <stdbool.h>
#include "geometry/geometry.h"

/* ---- NVML's vocabulary for util's error codes (codes.c) ---- */

/* NVML's value and name for a code: 19, "NVML_ERROR_IN_USE" (999,
 * NVML_ERROR_UNKNOWN for conditions of our own). */
int gs_backend_code_nvml(int code);
const char *gs_backend_code_nvml_name(int code);
/* NVML's text for a code, as nvidia-smi prints it ("In use by another client"). */
const char *gs_backend_code_text(int code);
/* The code for an nvmlReturn_t value; unlisted values are GS_E_UNKNOWN. */
int gs_backend_code_from_nvml(int nvml);

#define GS_BACKEND_MAX_GPUS 64
#define GS_BACKEND_MAX_PROCS 256
#define GS_BACKEND_UUID_SIZE 96
#define GS_BACKEND_NAME_SIZE 96

struct gs_backend;

struct gs_gpu_info {
  unsigned index;
  char name[GS_BACKEND_NAME_SIZE];  /* "NVIDIA A100-SXM4-40GB" */
  char uuid[GS_BACKEND_UUID_SIZE];  /* "GPU-xxxxxxxx-..." */
  char pci_bus_id[32];              /* "00000000:07:00.0" */
  unsigned pci_device_id;           /* device << 16 | vendor (0x20B010DE); 0: unknown */
  unsigned pci_subsystem_id;        /* subsystem device << 16 | subsystem vendor; 0: unknown */
  const struct gs_geom_model *model;
  bool mig_current, mig_pending;
  unsigned memory_mib;
  char driver[GS_GEOM_DRIVER_SIZE]; /* "580.65.06"; "" when the backend does not know */
  unsigned cuda_version;            /* the driver's CUDA version, 12020 for 12.2; 0: unknown */
};

struct gs_gi_info {
  unsigned gpu;
  unsigned id;                      /* fixed slot number, see gs_geom_gi_id() */
  const struct gs_geom_gi_profile *profile;
  unsigned start, span;             /* memory-slice placement */
};

struct gs_ci_info {
  unsigned gpu, gi;
  unsigned id;                      /* 0.. within the GI */
  struct gs_geom_ci_profile profile;
  unsigned start, span;             /* compute-slice placement within the GI */
};

/* A MIG device is one compute instance as CUDA sees it. */
struct gs_mig_device {
  unsigned gpu;
  unsigned index;                   /* "MIG Dev": ascending GI id, then CI id */
  unsigned gi, ci;
  char uuid[GS_BACKEND_UUID_SIZE];  /* "MIG-xxxxxxxx-..." (R470+ form) */
  char legacy_uuid[GS_BACKEND_UUID_SIZE]; /* "MIG-GPU-<gpu uuid>/<gi>/<ci>" (pre-R470) */
  char name[GS_GEOM_NAME_SIZE];     /* "1g.5gb" or "1c.3g.20gb" */
  const struct gs_geom_gi_profile *gi_profile;
  unsigned memory_mib;              /* the GI's memory, shared by its CIs */
  unsigned sms;
};

/* A process using a GPU; gi/ci are -1 outside MIG. */
struct gs_proc_info {
  unsigned pid;
  char name[64];
  unsigned gpu;
  int gi, ci;
  unsigned used_mib;
};

struct gs_backend_ops {
  const char *name;
  int (*gpu_count)(struct gs_backend *b, struct gs_err *err, unsigned *count);
  int (*gpu_info)(struct gs_backend *b, struct gs_err *err, unsigned gpu, struct gs_gpu_info *out);
  /* activation receives 0 when the new mode is current, else the code that
   * keeps it pending (GS_E_IN_USE, GS_E_RESET_REQUIRED), as NVML's SetMigMode. */
  int (*set_mig_mode)(struct gs_backend *b, struct gs_err *err, unsigned gpu, bool enable,
                      int *activation);
  int (*gi_remaining)(struct gs_backend *b, struct gs_err *err, unsigned gpu,
                      const struct gs_geom_gi_profile *p, unsigned *count);
  /* start < 0: the driver chooses, as nvmlDeviceCreateGpuInstance does. */
  int (*gi_create)(struct gs_backend *b, struct gs_err *err, unsigned gpu,
                   const struct gs_geom_gi_profile *p, int start, struct gs_gi_info *out);
  int (*gi_destroy)(struct gs_backend *b, struct gs_err *err, unsigned gpu, unsigned gi);
  int (*gi_list)(struct gs_backend *b, struct gs_err *err, unsigned gpu,
                 struct gs_gi_info out[GS_GEOM_MAX_INSTANCES], unsigned *count);
  int (*ci_remaining)(struct gs_backend *b, struct gs_err *err, unsigned gpu, unsigned gi,
                      unsigned ci_profile_id, unsigned *count);
  int (*ci_create)(struct gs_backend *b, struct gs_err *err, unsigned gpu, unsigned gi,
                   unsigned ci_profile_id, int start, struct gs_ci_info *out);
  int (*ci_destroy)(struct gs_backend *b, struct gs_err *err, unsigned gpu, unsigned gi,
                    unsigned ci);
  int (*ci_list)(struct gs_backend *b, struct gs_err *err, unsigned gpu, unsigned gi,
                 struct gs_ci_info out[GS_GEOM_MAX_INSTANCES], unsigned *count);
  /* out holds GS_GEOM_MAX_INSTANCES * GS_GEOM_MAX_INSTANCES entries. */
  int (*mig_devices)(struct gs_backend *b, struct gs_err *err, unsigned gpu,
                     struct gs_mig_device *out, unsigned *count);
  int (*processes)(struct gs_backend *b, struct gs_err *err, unsigned gpu,
                   struct gs_proc_info out[GS_BACKEND_MAX_PROCS], unsigned *count);
  /* The driver's and NVML's version strings; NULL where a backend has none. */
  int (*versions)(struct gs_backend *b, struct gs_err *err, char *driver, char *nvml,
                  size_t size);
  void (*close)(struct gs_backend *b);
};

struct gs_backend {
  const struct gs_backend_ops *ops;
  /* Why the default choice fell back to emulated GPUs ("" if it did not). */
  char why_emulated[GS_ERR_MSG_SIZE];
};

#define GS_BACKEND_MAX_MIG_DEVICES (GS_GEOM_MAX_INSTANCES * GS_GEOM_MAX_INSTANCES)

struct gs_backend_config {
  /* "nvml", "emu", or NULL: nvml when libnvidia-ml.so.1 loads and reports a
   * GPU, else emu (the reason is kept in gs_backend.why_emulated). */
  const char *kind;
  const char *nvml_library; /* NULL: $GPUSLICE_NVML_LIBRARY, else "libnvidia-ml.so.1" */
  const char *emulate;    /* "a100-40gb:8,h100-80gb:2"; NULL: keep the state file's, or one a100-40gb */
  const char *state_path; /* NULL: $GPUSLICE_EMU_STATE, else $XDG_STATE_HOME/gpuslice/emu.json */
};

int gs_backend_open(struct gs_err *err, const struct gs_backend_config *cfg, struct gs_backend **out);
void gs_backend_close(struct gs_backend *b);
/* True when b's GPUs are emulated (the emu backend). */
bool gs_backend_emulated(struct gs_backend *b);
/* Where the state that belongs to this machine goes beside the backend's:
 * for emulated GPUs the emulator's state file, which other state is named
 * after ("<it>.jobs", "<it>.serve", "<it>.autoscale.json": each emulated
 * machine keeps its own); NULL for real GPUs (the caller's state directory).
 * Valid while b is open. */
const char *gs_backend_state_base(struct gs_backend *b);
/* The driver's and NVML's versions ("570.86.15", "12.570.86.15"); NOT_SUPPORTED
 * where the backend has no driver to ask. */
int gs_backend_versions(struct gs_backend *b, struct gs_err *err, char *driver, char *nvml,
                        size_t size);

/* --- emulator-only controls (the things a real machine does by itself) --- */

/* Parses "model[:count],...[@driver]" into models (up to max; the newest
 * tables, whatever the driver); returns the GPU count or a GS_E_* code. */
int gs_emu_parse_spec(struct gs_err *err, const char *spec,
                      const struct gs_geom_model *models[], unsigned max);
/* The state file an emulator backend uses (after defaults were applied). */
const char *gs_emu_state_path(struct gs_backend *b);
/* Recreates the state file from a spec ("" or NULL: one a100-40gb). */
int gs_emu_reset_state(struct gs_err *err, const char *state_path, const char *spec);
/* Reboots the emulated machine: instances and processes vanish, a pending
 * MIG mode applies on Ampere, MIG mode clears on Hopper and later. */
int gs_emu_reboot(struct gs_backend *b, struct gs_err *err);
/* nvidia-smi --gpu-reset: applies a pending mode, drops instances; refused
 * (IN_USE) while a process uses the GPU. */
int gs_emu_gpu_reset(struct gs_backend *b, struct gs_err *err, unsigned gpu);
/* Emulated processes, so "in use" paths can be exercised without CUDA. */
int gs_emu_proc_add(struct gs_backend *b, struct gs_err *err, const struct gs_proc_info *p);
int gs_emu_proc_remove(struct gs_backend *b, struct gs_err *err, unsigned pid);
/* Emulates a machine where the driver may not reset the GPU (VM passthrough):
 * Ampere MIG mode changes then stay pending with RESET_REQUIRED. */
int gs_emu_set_reset_blocked(struct gs_backend *b, struct gs_err *err, unsigned gpu, bool blocked);
/* When on, mutating calls by a non-root user fail with NO_PERMISSION as NVML's do. */
int gs_emu_set_enforce_root(struct gs_backend *b, struct gs_err *err, bool on);
/* Installs another driver ("535", "535.183.01") and reboots, as a real
 * upgrade does: instances and processes vanish, the driver's tables apply. */
int gs_emu_set_driver(struct gs_backend *b, struct gs_err *err, const char *driver);
/* Which way round this board numbers its GPU instances (boards of one model
 * differ, reference §8.1); only while it has no GPU instances. */
int gs_emu_set_swapped_ids(struct gs_backend *b, struct gs_err *err, unsigned gpu, bool swapped);
/* The machine's seed ("" without one): part of every GPU and MIG UUID, so
 * machines emulated side by side (a Slurm cluster on one host) differ. Set
 * with "seed=WORD" in the --emulate spec when the state is created. */
#define GS_EMU_SEED_SIZE 64
int gs_emu_seed(struct gs_backend *b, struct gs_err *err, char out[GS_EMU_SEED_SIZE]);
/* Creates the device files the NVIDIA driver would have for this machine
 * under dir: dir/dev/nvidia<N>, nvidiactl and nvidia-caps/nvidia-cap<M> (every
 * GPU and compute instance a GPU can have), and dir/proc/driver/nvidia-caps/
 * mig-minors; so Slurm's gres checks (and containers) can be pointed at them.
 * Needs root (mknod); GS_E_NO_PERMISSION otherwise. Rerunning refreshes them. */
int gs_emu_devices(struct gs_backend *b, struct gs_err *err, const char *dir);

#endif
