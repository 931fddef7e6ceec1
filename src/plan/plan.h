/* SPDX-License-Identifier: Apache-2.0 */
/* plan.h: the planner: which GPU, and which slice of it (a MIG instance, an
 * MPS share or a time-slicing replica), each workload replica gets across a
 * fleet; fragmentation-aware, exact on one GPU, incremental against a current
 * state; exports for mig-parted, the GPU operator, the k8s device plugin and
 * Slurm; and the replay of a fractional-GPU trace. Uses only geometry
 * (DESIGN.md, plan): it never touches a GPU. */
#ifndef GS_PLAN_H
#define GS_PLAN_H

#include <stdbool.h>
#include <stdio.h>

#include "geometry/geometry.h"

#define GS_PLAN_NAME_SIZE 64
#define GS_PLAN_MAX_TPUT 16       /* rows of a workload's throughput table */
#define GS_PLAN_MAX_CLIENTS 48    /* MPS clients per GPU (the hardware's limit) */
#define GS_PLAN_MAX_REPLICAS 100000
#define GS_PLAN_MAX_GPUS 100000     /* per fleet */

enum gs_plan_isolation {
  GS_PLAN_HARD, /* MIG only */
  GS_PLAN_SOFT, /* MPS or time-slicing allowed (MIG too when sharing cannot place it) */
};

enum gs_plan_sharing {
  GS_PLAN_SHARE_MPS,        /* default for soft workloads: per-client thread % and memory limit */
  GS_PLAN_SHARE_TIMESLICE,  /* equal time slices, no memory isolation */
};

struct gs_plan_tput {
  char profile[GS_GEOM_NAME_SIZE]; /* "3g.20gb", or "gpu" for a whole GPU outside MIG */
  double value;
};

struct gs_plan_workload {
  char name[GS_PLAN_NAME_SIZE];
  char tenant[GS_PLAN_NAME_SIZE];
  unsigned replicas;
  unsigned memory_mib;           /* per replica */
  unsigned compute_milli;        /* thousandths of a GPU per replica; 0 with a throughput table */
  double throughput;             /* per replica, with tput[]; 0 when compute_milli is given */
  struct gs_plan_tput tput[GS_PLAN_MAX_TPUT];
  unsigned ntput;
  enum gs_plan_isolation isolation;
  enum gs_plan_sharing sharing;
  const struct gs_geom_model *model; /* optional "model:" constraint; NULL = any */
  unsigned line;                 /* where it is defined, for messages */
};

/* What a GPU runs now (fleet file) or after the plan. */
enum gs_plan_mode { GS_PLAN_FREE, GS_PLAN_MIG, GS_PLAN_MPS, GS_PLAN_TIMESLICE };

/* One unit placed on a GPU: a MIG instance (slot index into the layout) or
 * an MPS / time-slicing client. workload < 0: an instance nobody uses. */
struct gs_plan_unit {
  int workload;                  /* index into the workload array, or -1 */
  unsigned replica;
  int prev;                      /* fleet file: index into gs_plan_fleet.prev (who ran here), or -1 */
  unsigned milli;                /* shared: thousandths of the GPU (MPS thread % = milli / 10, rounded up) */
  unsigned memory_mib;           /* MPS: pinned memory limit; MIG: the instance's memory */
};

struct gs_plan_gpu {
  char node[GS_PLAN_NAME_SIZE];
  unsigned index;                /* on its node */
  const struct gs_geom_model *model;
  enum gs_plan_mode mode;
  struct gs_geom_layout layout;  /* MIG: placed instances; unit[i] is slot[i]'s user */
  struct gs_plan_unit unit[GS_PLAN_MAX_CLIENTS];
  unsigned nunit;                /* MIG: == layout.n; shared: clients */
  unsigned used_milli, used_mib; /* shared modes: thousandths of the GPU and MiB handed out */
};

struct gs_plan_fleet {
  struct gs_plan_gpu *gpu;
  unsigned ngpu, cap;
  bool has_current;              /* some GPU came with a current layout */
  char (*prev)[GS_PLAN_NAME_SIZE]; /* workload names of the current assignments */
  unsigned nprev;
};

struct gs_plan_workloads {
  struct gs_plan_workload *w;
  unsigned n, cap;
};

/* --- input --- */
/* Parses a workload file (`workloads:` list); errors name origin:line, the
 * workload and the key. On success *out holds the workloads (free with
 * gs_plan_workloads_free). */
int gs_plan_parse_workloads(struct gs_err *err, const char *origin, const char *text, size_t len,
                            struct gs_plan_workloads *out);
void gs_plan_workloads_free(struct gs_plan_workloads *w);
/* Parses a fleet file (`nodes:` with GPU models, counts and current layouts). */
int gs_plan_parse_fleet(struct gs_err *err, const char *origin, const char *text, size_t len,
                        struct gs_plan_fleet *out);
/* Builds a one-node fleet from "a100-40gb:8,h100-80gb:4". */
int gs_plan_fleet_from_spec(struct gs_err *err, const char *spec, struct gs_plan_fleet *out);
void gs_plan_fleet_free(struct gs_plan_fleet *f);
int gs_plan_fleet_add(struct gs_err *err, struct gs_plan_fleet *f, const char *node,
                      const struct gs_geom_model *m, unsigned count);

/* --- planning --- */
enum gs_plan_policy {
  GS_PLAN_OURS,       /* fragmentation-aware, with exact single-GPU repair */
  GS_PLAN_FIRST_FIT,  /* lowest-index GPU where it fits, first legal placement */
  GS_PLAN_BEST_FIT,   /* GPU left with the least free compute, first legal placement */
  GS_PLAN_FGD,        /* trace replay only: FGD (Weng et al., ATC '23) as its simulator runs it */
  GS_PLAN_RANDOM,     /* trace replay only: a random node and GPU that fit (FGD's baseline) */
};

struct gs_plan_options {
  enum gs_plan_policy policy;
  bool incremental;   /* keep the fleet's current instances and assignments where possible */
};

struct gs_plan_unplaced {
  int workload;
  unsigned replica;
  char reason[256];
};

struct gs_plan_result {
  struct gs_plan_unplaced *unplaced;
  unsigned nunplaced;
  unsigned gpus_used;             /* GPUs with at least one workload */
  unsigned created, destroyed;    /* MIG instances, against the current state */
  unsigned moved;                 /* replicas that ran elsewhere before */
  double compute_alloc;           /* allocated compute / compute of the GPUs in use */
  unsigned free_slices;           /* free memory slices on MIG GPUs in use */
  unsigned frag_slices;           /* ... that no requested profile can use */
  double frag_shared;             /* free thread % on shared GPUs that no requested share fits, in GPUs */
};

/* Plans every replica of w onto f (whose GPUs get layouts and units). Demands
 * no GPU model of the fleet can meet are errors naming the workload; replicas
 * that do not fit for lack of room are listed in r->unplaced with a reason. */
int gs_plan_run(struct gs_err *err, const struct gs_plan_workloads *w, struct gs_plan_fleet *f,
                const struct gs_plan_options *o, struct gs_plan_result *r);
void gs_plan_result_free(struct gs_plan_result *r);

/* The GI profiles of m that can host one replica of w (smallest first);
 * returns the count (0: none can). */
unsigned gs_plan_candidates(const struct gs_geom_model *m, const struct gs_plan_workload *w,
                            const struct gs_geom_gi_profile *out[GS_GEOM_MAX_GRID * 2]);

/* Exact single-GPU search: places every profile list entry (one per demand,
 * each with its candidate set) on m, beside the fixed slots of `base`. True
 * and *out filled (choice[i] = the chosen candidate index) when a layout exists. */
struct gs_plan_demand {
  const struct gs_geom_gi_profile *cand[GS_GEOM_MAX_GRID * 2];
  unsigned ncand;
};
bool gs_plan_fit_one(const struct gs_geom_model *m, const struct gs_geom_layout *base,
                     const struct gs_plan_demand *d, unsigned nd, struct gs_geom_layout *out,
                     unsigned *choice);

/* --- exports --- */
/* mig-parted config (version: v1, one config per node, named plan-<node>). */
int gs_plan_export_mig_parted(FILE *out, const struct gs_plan_fleet *f);
/* gpuslice/v1 configs with every instance's placement, one per node. */
int gs_plan_export_gpuslice(FILE *out, const struct gs_plan_fleet *f);
/* Kubernetes, for NVIDIA's GPU operator (k8s.c): ALL is one multi-document
 * YAML: the device plugin's ConfigMap (a config per distinct node need:
 * migStrategy, timeSlicing or MPS replicas), the mig-manager's ConfigMap
 * (config.yaml, a mig-parted config plan-<node> per node) and a Node with the
 * nvidia.com/device-plugin.config and nvidia.com/mig.config labels per node,
 * in namespace ns. DEVICE_PLUGIN is its first document; LABELS the labels
 * as `kubectl label node` lines. GS_E_INVALID_ARGUMENT names a node whose
 * plan the device plugin cannot serve (MPS beside MIG or beside
 * time-slicing), or a name Kubernetes refuses. */
enum gs_plan_k8s_part { GS_PLAN_K8S_ALL, GS_PLAN_K8S_DEVICE_PLUGIN, GS_PLAN_K8S_LABELS };
int gs_plan_export_k8s(struct gs_err *err, FILE *out, const struct gs_plan_fleet *f, const char *ns,
                       enum gs_plan_k8s_part part);
/* Slurm: per node, gres.conf records (MIG devices, whole GPUs, gres/mps and
 * gres/shard for shared ones) and the slurm.conf NodeName line (export_gres.c). */
int gs_plan_export_gres(FILE *out, const struct gs_plan_fleet *f);

/* --- trace replay (bench/plan.sh) --- */
#define GS_PLAN_REPLAY_PCT 1001   /* arrival percentages 0..1000 of the GPU capacity */
enum gs_plan_replay_mode { GS_PLAN_REPLAY_FRACTIONAL, GS_PLAN_REPLAY_MIG };
struct gs_plan_replay_options {
  enum gs_plan_replay_mode mode;
  enum gs_plan_policy policy;
  double inflate;                 /* arrivals until this multiple of the capacity (FGD: 1.3) */
  unsigned seed, runs;            /* seeds seed .. seed + runs - 1, averaged (FGD: 10 seeds) */
};
struct gs_plan_replay_stats {     /* means over the runs */
  unsigned gpus, runs, max_pct;   /* the curves are filled up to max_pct */
  double tasks_arrived, tasks_placed;
  double arrived_pct;             /* arrived GPU demand / capacity, percent */
  double alloc_pct;               /* allocated GPU / capacity at the end, percent */
  double gpus_used;               /* GPUs with at least one task at the end */
  double frag_pct;                /* fragmentation / capacity at the end, percent (docs/plan.md) */
  double alloc_at_100;            /* alloc_curve[100] */
  /* The allocation (and fragmentation) when i percent of the capacity had
   * arrived: the mean over the tasks whose arrival rounds to i, as FGD's
   * analysis computes it; -1 where no run has a value. */
  double alloc_curve[GS_PLAN_REPLAY_PCT], frag_curve[GS_PLAN_REPLAY_PCT];
};
/* Replays the pods CSV (openb format) on the nodes CSV as FGD's simulator
 * does: the trace shuffled by the seed, then tasks drawn from it at random
 * until the GPU demand reaches `inflate` times the capacity; no departures. */
int gs_plan_replay(struct gs_err *err, const char *nodes_csv, const char *pods_csv,
                   const struct gs_plan_replay_options *o, struct gs_plan_replay_stats *out);

/* Names of policies and modes, for the CLI and JSON. */
const char *gs_plan_policy_name(enum gs_plan_policy p);
const char *gs_plan_mode_name(enum gs_plan_mode m);

#endif
