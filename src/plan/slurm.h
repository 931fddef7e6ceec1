/* SPDX-License-Identifier: Apache-2.0 */
/* slurm.h: Slurm's view of a node's GPUs: the gres.conf records (one per MIG
 * device or whole GPU, plus gres/mps and gres/shard counts for shared GPUs)
 * and the slurm.conf NodeName line that must agree with them, written from a
 * list of devices, and gres.conf read back. One writer behind both
 * `gpuslice slurm gres|node-conf` (a live node, jobs/slurm.c) and
 * `plan --export gres` (a planned fleet). Pure text over geometry: it knows
 * no machine, no file system and no daemon. Formats: docs/slurm.md. */
#ifndef GS_PLAN_SLURM_H
#define GS_PLAN_SLURM_H

#include <stdbool.h>
#include <stdio.h>

#include "geometry/geometry.h"

#define GS_PLAN_SLURM_TYPE_SIZE GS_GEOM_NAME_SIZE
#define GS_PLAN_SLURM_MPS_PER_GPU 100 /* gres/mps of one GPU: percent of its threads (SchedMD's convention) */
#define GS_PLAN_SLURM_MAX_RECORDS 4096 /* gpu records one gres.conf read may hold */

/* One gres/gpu record of a node: a MIG device or a whole GPU. */
struct gs_plan_slurm_dev {
  const struct gs_geom_model *model;
  unsigned minor;                          /* /dev/nvidia<minor> */
  bool mig;
  const struct gs_geom_gi_profile *profile; /* MIG: its GPU instance's profile */
  char type[GS_PLAN_SLURM_TYPE_SIZE];      /* Type=: the MIG device's name ("1g.5gb",
                                              "1c.3g.20gb"), or gs_plan_slurm_model_type() */
  unsigned gi, ci;                         /* MIG: instance ids */
  unsigned mps;                            /* whole GPU: its gres/mps count; 0: none */
  unsigned shards;                         /* whole GPU: its gres/shard count; 0: none */
};

struct gs_plan_slurm_opts {
  const char *node;      /* NodeName of the slurm.conf line (and of gres.conf lines with node_lines) */
  bool node_lines;       /* every gres.conf line starts with NodeName=<node> (one file, many nodes) */
  const char *dev_root;  /* the directory that stands for /dev; NULL: "/dev" */
  bool autodetect;       /* gres.conf opens with AutoDetect=nvml; the records stay, as its checks */
  const char *config;    /* the layout's config name, for Features=mig-<config>; NULL: none */
  const char *extra;     /* the slurm.conf line's other words ("CPUs=64 RealMemory=512000") */
  bool shares_off;       /* gres/mps and gres/shard lines only as comments, out of Gres=: with
                            GresTypes naming mps or shard, Slurm 22.05 reads every MultipleFiles
                            record as one GPU per file (slurmd -G), so a cluster with MIG
                            devices cannot have them */
};

/* Slurm's type for a whole GPU: NVML's name without "NVIDIA ", lower case,
 * spaces as underscores ("a100-sxm4-40gb"), a substring of what Slurm's
 * gpu/nvml detects, so the same records also pass AutoDetect's checks. */
void gs_plan_slurm_model_type(const struct gs_geom_model *m, char out[GS_PLAN_SLURM_TYPE_SIZE]);
/* The driver's minor of /dev/nvidia-caps/nvidia-cap<N> for a GPU instance
 * (ci < 0) or one of its compute instances, as its mig-minors file lists
 * them: 3 + 135 gpu + 9 gi, plus 1 + ci. */
unsigned gs_plan_slurm_cap_minor(unsigned gpu_minor, unsigned gi, int ci);
/* Puts devices in the order gpuslice writes them: MIG devices by model, then
 * by the model's profile order and type, then whole GPUs; within a type by
 * GPU, GPU instance and compute instance. Slurm numbers a node's GPUs by the
 * slurm.conf line's Gres= type order, then gres.conf's line order within a
 * type (seen with slurmd -G, 22.05), so this order is also Slurm's index. */
void gs_plan_slurm_sort(struct gs_plan_slurm_dev *d, unsigned n);

/* gres.conf for devices sorted by gs_plan_slurm_sort: a comment naming the
 * node and how Slurm numbers the records, then one line per record. */
int gs_plan_slurm_gres(struct gs_err *err, FILE *out, const struct gs_plan_slurm_dev *d, unsigned n,
                       const struct gs_plan_slurm_opts *o);
/* The slurm.conf line: NodeName=<node> Gres=gpu:<type>:<count>,...[,mps:N][,shard:N]
 * Features=[mig,]<model keys>[,mig-<config>] <extra>. GS_E_INVALID_ARGUMENT
 * for a node name or extra words Slurm would misread, naming the fix. */
int gs_plan_slurm_node(struct gs_err *err, FILE *out, const struct gs_plan_slurm_dev *d, unsigned n,
                       const struct gs_plan_slurm_opts *o);

/* A gres/gpu record read back from gres.conf. */
struct gs_plan_slurm_rec {
  char type[GS_PLAN_SLURM_TYPE_SIZE];
  unsigned minor;          /* /dev/nvidia<minor> */
  bool mig;
  unsigned gi, ci;         /* MIG: from its nvidia-cap files */
  unsigned line;
};

/* Reads the gpu records of `node` from gres.conf text, in file order: lines
 * naming another node are skipped (lines without NodeName= are every node's);
 * node may be NULL only for a file without NodeName=. Each record's File= or
 * MultipleFiles= must be a /dev/nvidia<N> (whole GPU) or that plus its GPU
 * and compute instances' nvidia-cap files, as gs_plan_slurm_gres writes them.
 * *autodetect tells whether AutoDetect=nvml applies. Defects are
 * GS_E_INVALID_ARGUMENT "<origin>:<line>: <what>". The caller frees *out. */
int gs_plan_slurm_parse(struct gs_err *err, const char *origin, const char *text, size_t len,
                        const char *node, struct gs_plan_slurm_rec **out, unsigned *n,
                        bool *autodetect);

#endif
