/* SPDX-License-Identifier: Apache-2.0 */
/* replay.h: what the trace replay's files share and nothing outside
 * src/plan sees: the trace, the cluster's state during one run, FGD's task
 * types, and the per-mode placement (replay_frac.c: fractional shares,
 * replay_mig.c: MIG profiles). The run itself (order, metric) is replay.c.
 * Knows nothing of the fleet planner's kinds and classes. */
#ifndef GS_PLAN_REPLAY_H
#define GS_PLAN_REPLAY_H

#include <stdbool.h>
#include <stdint.h>

#include "plan/plan.h"

#define RP_MAX_GPUS 16        /* per node */
#define RP_MAX_MODELS 15      /* GPU models in one node list */
#define RP_ANY_MODEL 0xFFFFu  /* a task without a GPU type constraint */
#define RP_MAX_KINDS 4096

struct rp_pod {
  int cpu, mem;               /* milli-CPU, MiB */
  unsigned ngpu, milli;       /* GPUs and thousandths of each (1000: whole GPUs); 0, 0: CPU only */
  uint16_t models;            /* node models it may run on, a bit each; RP_ANY_MODEL: any */
  unsigned kind;
};

/* Tasks alike for every policy's score (memory only filters). */
struct rp_kind {
  int cpu;
  unsigned ngpu, milli;
  uint16_t models;
  char spec[48];              /* gpu_spec as written: FGD orders equal counts by it */
  unsigned count;             /* tasks of the trace */
  double mem;                 /* their mean memory, MiB */
  double p;                   /* FGD's share among the typical kinds; 0 outside them */
  double w;                   /* ours' weight: p scaled by the kind's scarcity (replay_ours.c) */
};

struct rp_node {
  int cpu, mem;               /* free now */
  int cpu_cap, mem_cap;
  unsigned ngpu, first;       /* its GPUs: [first, first + ngpu) */
  unsigned model;             /* index into replay.model_name */
  unsigned rank;              /* score ties go to the lowest rank (FGD: a random permutation) */
  unsigned version;           /* bumped on every change; cached scores key on it */
  unsigned nfree;             /* wholly free GPUs */
  unsigned max_left;          /* the most free on one GPU, thousandths */
  unsigned left_total;        /* free GPU, thousandths */
};

/* A node's best move for one kind, as the policy scores it. */
struct rp_move {
  double score;               /* higher is better */
  int gpu;                    /* the GPU a fractional task takes; -1: whole GPUs, lowest free first */
  int start;                  /* MIG: the new instance's start */
};

struct rp_cache {
  unsigned version;           /* of the node when computed; 0: never */
  bool ok;
  struct rp_move mv;
};

struct rp_mig;

struct replay {
  enum gs_plan_replay_mode mode;
  enum gs_plan_policy pol;
  struct rp_node *node;
  unsigned nnode, ngpu;
  char model_name[RP_MAX_MODELS][16];
  unsigned nmodel;
  struct rp_pod *pod;         /* the trace, sorted by name */
  unsigned npod;
  struct rp_kind *kind;
  unsigned nkind;
  unsigned typical[RP_MAX_KINDS]; /* the kinds FGD's measure weighs, most frequent first */
  unsigned ntypical;
  unsigned *order;            /* this run's arrivals: indices into pod */
  unsigned norder, cap_order;
  uint64_t rng;
  unsigned *left;             /* per GPU: thousandths free (MIG: free compute, in thousandths) */
  struct rp_cache *cache;     /* nnode x nkind */
  double *frag;               /* per node: fragmentation now, thousandths of a GPU */
  double *ofrag;              /* ours: per node, ours' measure now */
  double *use;                /* ours: per node x typical kind, the node's GPU the kind can use */
  double *usable;             /* ours: per typical kind, the sum of use over the nodes */
  double frag_total;
  double cpu_per_gpu, mem_per_gpu; /* the trace's GPU tasks: milli-CPU and MiB per thousandth of GPU */
  int *raw;                   /* per node: best-fit's raw score of the task being placed */
  struct rp_mig *mig;         /* replay_mig.c's state */
};

/* replay.c */
uint64_t gs__rp_rand(struct replay *r);
unsigned gs__rp_below(struct replay *r, unsigned n);
/* FGD's node score of a fragmentation change (thousandths): 100 sigmoid(x), truncated. */
int gs__rp_fgd_score(double before, double after);
/* FGD's BestFit raw score of a node for a task, before normalisation. */
int gs__rp_bestfit_raw(const struct rp_node *n, const struct rp_pod *p);
/* FGD's fragmentation of a node state (its free CPU, free GPU shares and,
 * on MIG, its GPUs' layout states), in thousandths of a GPU. */
double gs__rp_frag(const struct replay *r, unsigned model, int cpu, const unsigned *left, const uint32_t *state,
                   unsigned n);

/* replay_ours.c */
/* Ours' measure of a node state: for each typical kind (weight w), the
 * free GPU it cannot use; use (may be NULL) gets, per typical kind, the
 * thousandths it can use. */
double gs__rp_ours_measure(const struct replay *r, unsigned model, int cpu, int mem, const unsigned *left,
                           const uint32_t *state, unsigned n, double *use);
/* Node ni changed: its measure and its share of each kind's usable GPU. */
void gs__rp_ours_refresh(struct replay *r, unsigned ni);
/* A task was placed: refreshes the weights (all of them when forced, as
 * after a reset) once one has drifted, and then every node's measure. */
void gs__rp_ours_reweigh(struct replay *r, bool force);
/* Ours' score of moving p onto node ni (higher is better): ours' measure
 * of the node after, the GPU thousandths the move takes and those left on
 * the GPU it lands on. */
double gs__rp_ours_score(const struct replay *r, unsigned ni, const struct rp_pod *p, double measure_after,
                         unsigned taken, unsigned gpu_left_after);

/* replay_frac.c */
bool gs__rp_frac_eval(struct replay *r, unsigned ni, const struct rp_pod *p, struct rp_move *mv);
void gs__rp_frac_apply(struct replay *r, unsigned ni, const struct rp_pod *p, const struct rp_move *mv);

/* replay_mig.c */
int gs__rp_mig_init(struct gs_err *err, struct replay *r);
void gs__rp_mig_reset(struct replay *r);
void gs__rp_mig_free(struct replay *r);
/* The layout states of node ni's GPUs. */
const uint32_t *gs__rp_mig_states(const struct replay *r, unsigned ni);
/* The GPU thousandths one GPU of kind k takes: its profile's compute. */
unsigned gs__rp_mig_take(const struct replay *r, unsigned k);
/* Whether kind k's profile has a legal placement in layout state s. */
bool gs__rp_mig_fits(const struct replay *r, uint32_t s, unsigned k);
/* The GPU thousandths kind k can still take on a GPU in state s: as many
 * of its profile as fit beside the instances, each its compute. */
unsigned gs__rp_mig_usable(const struct replay *r, uint32_t s, unsigned k);
bool gs__rp_mig_eval(struct replay *r, unsigned ni, const struct rp_pod *p, struct rp_move *mv);
void gs__rp_mig_apply(struct replay *r, unsigned ni, const struct rp_pod *p, const struct rp_move *mv);

#endif
