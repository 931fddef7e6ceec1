/* SPDX-License-Identifier: Apache-2.0 */
/* slurm.h: the jobs layer's Slurm glue: a live node's GPUs as Slurm gres
 * records (written through plan/slurm.h, the one gres.conf writer), the
 * prolog's check that the node still has the layout its gres.conf was made
 * from, the task prolog's map from Slurm's GPU indices to MIG UUIDs, and the
 * relayout of a node under a running cluster. Uses backend and plan's Slurm
 * formats; procedure and formats: docs/slurm.md. */
#ifndef GS_JOBS_SLURM_H
#define GS_JOBS_SLURM_H

#include "backend/backend.h"
#include "plan/slurm.h"

/* One gpu record of this node, with what CUDA calls it. */
struct gs_jobs_slurm_dev {
  struct gs_plan_slurm_dev d;
  unsigned gpu;                          /* NVML index */
  char uuid[GS_BACKEND_UUID_SIZE];       /* "MIG-..." or "GPU-..." */
  char legacy_uuid[GS_BACKEND_UUID_SIZE]; /* MIG: "MIG-GPU-<uuid>/<gi>/<ci>" */
};

/* The node's gpu records now, in gs_plan_slurm_sort's order: every MIG
 * device of a GPU in MIG mode, every other GPU whole. gpus (ngpu of them)
 * narrows to those GPUs; NULL: all. A GPU's minor is the driver's (its
 * /proc/driver/nvidia/gpus/<bus>/information), the index on emulated GPUs.
 * The caller frees *out. */
int gs_jobs_slurm_devices(struct gs_err *err, struct gs_backend *b, const unsigned *gpus,
                          unsigned ngpu, struct gs_jobs_slurm_dev **out, unsigned *n);

/* One of plan's Slurm writers (gs_plan_slurm_gres, gs_plan_slurm_node) over
 * this node's records now (of the GPUs gpus names; NULL: all), into a heap
 * string the caller frees. */
typedef int (*gs_jobs_slurm_writer)(struct gs_err *err, FILE *out, const struct gs_plan_slurm_dev *d,
                                    unsigned n, const struct gs_plan_slurm_opts *o);
int gs_jobs_slurm_text(struct gs_err *err, struct gs_backend *b, const unsigned *gpus, unsigned ngpu,
                       gs_jobs_slurm_writer fn, const struct gs_plan_slurm_opts *o, char **text);

/* The prolog's check: every gpu record of `node` in the gres.conf text names
 * a device this node has now, of that type, and every GPU the file names has
 * no device the file lacks. 0, or GS_E_INVALID_ARGUMENT naming the first
 * difference and the fix (`gpuslice slurm relayout`). */
int gs_jobs_slurm_check(struct gs_err *err, struct gs_backend *b, const char *origin,
                        const char *text, size_t len, const char *node);

/* The task prolog's map: the GPUs Slurm gave a job on `node` ("0,2": indices
 * into the node's records, numbered as gres.conf lists them; or the devices'
 * ids, as Slurm's gpu/nvml hands them out, either MIG form) into the devices'
 * UUIDs, comma-separated, in out. GS_E_INVALID_ARGUMENT for an index past the
 * records or a device the node no longer has; GS_E_NOT_SUPPORTED for an index
 * under AutoDetect=nvml (Slurm's own numbering: its value should stand). */
int gs_jobs_slurm_map(struct gs_err *err, struct gs_backend *b, const char *origin, const char *text,
                      size_t len, const char *node, const char *gpus, char *out, size_t size);

/* ---- relayout (jobs/slurm_relayout.c) ---- */

struct gs_jobs_relayout {
  const char *node;               /* the node's Slurm name */
  char *const *dry_run;           /* the layout apply, checking only (argv) */
  char *const *apply;             /* the layout apply (argv) */
  const char *gres_conf;          /* this node's gres.conf, rewritten */
  const char *node_conf;          /* its slurm.conf NodeName line (an Included file), rewritten */
  struct gs_plan_slurm_opts slurm; /* how to write both (node, dev_root, config, extra) */
  const char *slurmd_restart;     /* shell command restarting this node's slurmd */
  const char *ctld_restart;       /* shell command restarting slurmctld; NULL: the admin does */
  const char *scontrol, *srun;    /* Slurm's commands (PATH searched) */
  unsigned timeout_s;             /* per wait: jobs to end, the node to register, a probe */
  void (*say)(void *arg, const char *line); /* each step, for the admin */
  void *arg;
};

/* Drains the node, waits for its jobs, applies the layout (dry run first:
 * a config that cannot apply never drains anything), rewrites gres.conf and
 * the node line, restarts slurmd and, when ctld_restart is set, slurmctld;
 * then waits for the controller to report the new Gres, resumes the node and
 * runs one probe job per type, each of which must see a device of its type.
 * Without ctld_restart it stops after slurmd, the node still drained, and
 * says what the admin must do (gs_jobs_slurm_resume finishes). */
int gs_jobs_slurm_relayout(struct gs_err *err, struct gs_backend *b, const struct gs_jobs_relayout *r);
/* Waits until the controller reports the node's Gres as the node line has
 * them, resumes it, and runs one probe per type (the tail of relayout). */
int gs_jobs_slurm_resume(struct gs_err *err, struct gs_backend *b, const struct gs_jobs_relayout *r);

#endif
