/* SPDX-License-Identifier: Apache-2.0 */
/* internal.h: what the planner's files share and nothing outside src/plan
 * sees: demand kinds, GPU state classes and the planning context. */
#ifndef GS_PLAN_INTERNAL_H
#define GS_PLAN_INTERNAL_H

#include <stdint.h>
#include <strings.h>

#include "plan/plan.h"

#define GS__PLAN_MAX_MODELS 16
#define GS__PLAN_MAX_CAND (GS_GEOM_MAX_GRID * 2)

/* Replicas with identical needs on every model of the fleet. */
struct kind {
  bool soft;
  enum gs_plan_sharing sharing;
  unsigned memory_mib;
  unsigned compute_milli;               /* as asked; 0 with a throughput target */
  unsigned tenant;                      /* soft: index of its tenant (MPS and time-slicing isolate weakly) */
  const struct gs_geom_gi_profile *cand[GS__PLAN_MAX_MODELS][GS__PLAN_MAX_CAND];
  uint8_t ncand[GS__PLAN_MAX_MODELS];   /* MIG profiles that can host it */
  uint16_t share[GS__PLAN_MAX_MODELS];  /* thousandths of a GPU outside MIG; 0: not allowed */
};

/* A GPU state; every GPU in a class is interchangeable for the planner. */
struct class_key {
  uint8_t model, mode, n, pad;
  uint16_t used_pct_milli, tenant;      /* shared: the tenant whose clients it holds */
  uint32_t used_mib;
  uint16_t slot[GS_GEOM_MAX_INSTANCES]; /* MIG: profile<<8 | start<<1 | used, sorted */
};

/* One cached answer: the best move of a kind into a class. */
struct move {
  bool done, ok;
  bool repair_failed;                    /* the exact re-layout of this state cannot take the kind */
  double score;
  bool mig;                              /* a MIG instance (else a shared client) */
  const struct gs_geom_gi_profile *profile;
  int start;                             /* new instance's start, or -1 to reuse slot `slot` */
  int slot;                              /* reuse: the idle instance's start */
  double waste;                          /* compute handed out beyond the need, in GPUs */
};

struct class {
  struct class_key key;
  unsigned *member;                      /* GPU indices */
  unsigned nmember, cap;
  double frag;                           /* this state's fragmentation, in GPUs */
  struct move *moves;                    /* per kind, lazily; NULL when kinds are too many */
};

struct demand {
  unsigned workload, replica, kind;
};

struct plan {
  const struct gs_plan_workloads *w;
  struct gs_plan_fleet *f;
  const struct gs_plan_options *o;
  const struct gs_geom_model *models[GS__PLAN_MAX_MODELS];
  unsigned nmodels;
  unsigned *gpu_model;                   /* model index of each GPU */
  unsigned *kind_of;                     /* per workload */
  struct kind *kinds;
  unsigned nkinds;
  unsigned want_mask[GS__PLAN_MAX_MODELS];   /* GI profile indices some kind asks for */
  unsigned min_share[GS__PLAN_MAX_MODELS];   /* smallest soft share (thousandths) */
  unsigned min_share_mib[GS__PLAN_MAX_MODELS];
  struct class *classes;
  unsigned nclasses, cap_classes;
  unsigned *hash;                        /* open addressing: class index + 1, 0 empty */
  unsigned hash_size;
  unsigned *class_of, *pos_of;           /* per GPU */
};

int gs__plan_kinds(struct gs_err *err, struct plan *p);
void gs__plan_requested(struct plan *p);
int gs__plan_model_index(struct plan *p, const struct gs_geom_model *m);

/* classes.c */
int gs__plan_classes_init(struct gs_err *err, struct plan *p);
void gs__plan_classes_free(struct plan *p);
/* Re-files GPU g after its state changed. */
int gs__plan_refile(struct gs_err *err, struct plan *p, unsigned g);
/* Fragmentation of one GPU's state, in GPUs (0..1). */
double gs__plan_frag(const struct plan *p, const struct gs_plan_gpu *g, unsigned mi);
/* Free memory slices of a MIG layout, and those no requested profile can use. */
void gs__plan_mig_frag(const struct plan *p, unsigned mi, const struct gs_geom_layout *l,
                       unsigned *free_slices, unsigned *frag_slices);

/* fit.c */
/* Tries to fit demand d onto GPU g by re-laying it out exactly; true on success. */
bool gs__plan_repair(struct plan *p, unsigned g, const struct demand *d);

#endif
