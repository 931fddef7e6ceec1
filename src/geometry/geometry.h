/* SPDX-License-Identifier: Apache-2.0 */
/* geometry.h: facts about every MIG-capable GPU model (GPU- and compute-
 * instance profiles, slices, engines, legal placements, GPU-instance IDs),
 * and the rules that validate and enumerate layouts. Pure data and logic:
 * it knows nothing of backends, files or processes (DESIGN.md, geometry). */
#ifndef GS_GEOMETRY_H
#define GS_GEOMETRY_H

#include <stdbool.h>
#include "util/util.h"

#define GS_GEOM_MAX_GRID 12       /* widest placement grid: RTX PRO 6000's 12 units */
#define GS_GEOM_MAX_INSTANCES 8   /* GIs per GPU (7 in practice) and CIs per GI */
#define GS_GEOM_MAX_CI_PROFILES 8
#define GS_GEOM_NAME_SIZE 48

enum gs_geom_arch {
  GS_GEOM_AMPERE,     /* MIG mode change needs a GPU reset and persists across reboots */
  GS_GEOM_HOPPER,     /* no reset, not persistent; also used for Blackwell */
  GS_GEOM_BLACKWELL,
};

/* How a profile uses the GPU's media engines (NVDEC/NVENC/JPEG/OFA). */
enum gs_geom_media {
  GS_GEOM_MEDIA_SHARED, /* the plain profile */
  GS_GEOM_MEDIA_ME,     /* "+me": holds the GPU's one extra media set; at most one per GPU */
  GS_GEOM_MEDIA_ALL,    /* "+me.all": holds every media engine; only "-me" may coexist */
  GS_GEOM_MEDIA_NONE,   /* "-me": no media engines */
};

/* One GPU-instance profile of one model: a row of `nvidia-smi mig -lgip`
 * plus its `-lgipp` placements. */
struct gs_geom_gi_profile {
  const char *name;            /* "1g.5gb", "1g.10gb+me", "2g.48gb+gfx" (no "MIG " prefix) */
  unsigned id;                 /* NVIDIA profile ID, per model: 19 for A100 1g.5gb */
  unsigned nvml_enum;          /* NVML_GPU_INSTANCE_PROFILE_* index: 0 for 1_SLICE */
  unsigned compute_slices;     /* the "Ng" of the name */
  unsigned span;               /* placement size in grid units (memory slices) */
  unsigned memory_mib;         /* memorySizeMB as NVML reports it */
  unsigned sms, ce, dec, enc, jpeg, ofa;
  unsigned max_count;          /* instanceCount */
  unsigned starts;             /* bit i set: a placement may start at grid unit i */
  enum gs_geom_media media;
  bool gfx;                    /* "+gfx" */
};

/* A compute-instance profile inside one GI profile; derived, not tabled,
 * because every model follows the same rule (reference §5.2). */
struct gs_geom_ci_profile {
  char name[GS_GEOM_NAME_SIZE]; /* "1c.3g.20gb", or the GI name for the full CI */
  unsigned id;                  /* == nvml_enum: 0 for 1c, 1 for 2c, 2 for 3c, 3 for 4c, 4 for 7c */
  unsigned compute_slices;
  unsigned span;                /* compute slices a placement reports (3c reports 4) */
  unsigned sms;
  unsigned max_count;
  unsigned starts;              /* bit i: may start at compute slice i of the GI */
  bool is_default;              /* the "*" profile: the whole GI */
};

/* One model's tables as one range of driver releases shows them. The newest
 * record is the model (gs_geom_models); older drivers' tables hang off it by
 * `before` (gs_geom_model_at). Every record of a chain has the same key. */
struct gs_geom_model {
  const char *key;             /* "a100-40gb": what users type */
  const char *name;            /* "NVIDIA A100-SXM4-40GB": what NVML's GetName reports */
  const char *aliases;         /* comma-separated other keys users may type */
  unsigned pci_id;             /* device id << 16 | vendor: 0x20B010DE */
  enum gs_geom_arch arch;
  unsigned compute_slices;     /* 7 (4 on A30 and RTX PRO 6000) */
  unsigned grid;               /* placement units: 8 (4 on A30, 12 on RTX PRO 6000) */
  unsigned leaf_span;          /* grid units of the smallest slot (3 on RTX PRO 6000) */
  unsigned memory_mib;         /* whole-GPU total outside MIG mode */
  unsigned sms;                /* whole-GPU SMs outside MIG mode */
  bool swapped_ids;            /* GI-ID tree orientation most boards show, see gs_geom_gi_id() */
  bool auto_from_left;         /* automatic placement fills from slot 0 (the 4-slot GPUs) */
  bool rev1_ci;                /* the double-memory 1g GI's CI is NVML's 1_SLICE_REV1 (ID 7) */
  bool no_4g_3g;               /* drivers before R510: a 4g and a 3g may not coexist */
  const struct gs_geom_gi_profile *gi;
  unsigned ngi;
  const char *source;          /* where the facts come from (reference tags) */
  unsigned mig_since;          /* the first driver with MIG on this model (GS_GEOM_DRIVER) */
  unsigned since;              /* the first driver these tables hold for; 0: every older one */
  const struct gs_geom_model *before; /* the tables of drivers before `since`, or NULL */
};

/* One board the emulator can be: a name and PCI ids of its own over a
 * model's tables (an A100-PCIE-40GB is an a100-40gb). Every model's own
 * board is one too, under the model's key. */
struct gs_geom_sku {
  const char *key;             /* "a100-pcie-40gb" */
  const char *name;            /* "NVIDIA A100-PCIE-40GB": NVML's GetName */
  unsigned pci_id;             /* 0x20F110DE: device << 16 | vendor */
  unsigned subsystem_id;       /* 0x145F10DE: subsystem device << 16 | subsystem vendor */
  const struct gs_geom_model *model;
  const char *source;          /* where the ids come from */
};

/* A driver release as a number that orders releases: 535.183.01 is
 * GS_GEOM_DRIVER(535, 183, 1). */
#define GS_GEOM_DRIVER(major, minor, patch) ((major) * 1000000u + (minor) * 1000u + (patch))
#define GS_GEOM_DRIVER_SIZE 24

struct gs_geom_driver {
  char version[GS_GEOM_DRIVER_SIZE]; /* "535.183.01", as nvidia-smi prints it */
  unsigned code;                     /* GS_GEOM_DRIVER(535, 183, 1) */
  unsigned cuda;                     /* the CUDA version it reports: 12020 for 12.2 */
};

/* One GI in a layout. start < 0 means "anywhere legal" (validation picks). */
struct gs_geom_slot {
  const struct gs_geom_gi_profile *profile;
  int start;
};

struct gs_geom_layout {
  unsigned n;
  struct gs_geom_slot slot[GS_GEOM_MAX_INSTANCES];
};

/* --- models and profiles --- */
const struct gs_geom_model *const *gs_geom_models(unsigned *count);
/* Finds a model by key, alias, or a board's key, NVML name (with or without
 * "NVIDIA ") or PCI id ("0x20B010DE"), case-insensitively. NULL when unknown. */
const struct gs_geom_model *gs_geom_model_find(const char *what);
/* Why `what` names no model, for a message after "unknown GPU model '...'":
 * a short name that starts several models' names ("a100") lists them
 * ("short for several GPU models: a100-40gb, a100-80gb; name one"), one
 * such model is suggested, else "`gpuslice models` lists them". Never
 * resolves: a name that is not exact is refused (buf holds the text). */
const char *gs_geom_model_hint(const char *what, char *buf, size_t size);
/* The tables a driver shows for m (m itself for the newest drivers). */
const struct gs_geom_model *gs_geom_model_at(const struct gs_geom_model *m, unsigned driver);

/* --- boards --- */
const struct gs_geom_sku *const *gs_geom_skus(unsigned *count);
/* Finds a board by key, NVML name or PCI id as gs_geom_model_find does; a
 * model's key or alias finds the model's own board. NULL when unknown. */
const struct gs_geom_sku *gs_geom_sku_find(const char *what);

/* --- drivers --- */
/* Parses "535.183.01", "570.169", or a branch ("535", "R535"), which means
 * the branch's release in the table of known ones. */
int gs_geom_driver_parse(struct gs_err *err, const char *text, struct gs_geom_driver *out);
/* The emulator's default driver: the newest release known. */
void gs_geom_driver_default(struct gs_geom_driver *out);
/* Finds a GI profile by name ("1g.5gb" or "MIG 1g.5gb") or by profile ID ("19"). */
const struct gs_geom_gi_profile *gs_geom_gi_profile_find(const struct gs_geom_model *m, const char *what);
const struct gs_geom_gi_profile *gs_geom_gi_profile_by_id(const struct gs_geom_model *m, unsigned id);
/* Every legal start of a profile, ascending; returns the count. */
unsigned gs_geom_gi_starts(const struct gs_geom_gi_profile *p, unsigned starts[GS_GEOM_MAX_GRID]);
/* The starts the driver tries, in order, when no placement is given: on
 * 8-slot GPUs the right half first, its last slot first (1g on A100:
 * 6,4,5,0,1,2,3); on the 4-slot ones (A30, RTX PRO 6000) from slot 0 up. */
unsigned gs_geom_gi_auto_order(const struct gs_geom_model *m, const struct gs_geom_gi_profile *p,
                               unsigned starts[GS_GEOM_MAX_GRID]);
/* The fixed GPU-instance ID of a placement: a node of the binary tree over the
 * GPU's leaf slots (0 whole GPU, 1-2 halves, 3-6 quarters, 7-14 eighths), with
 * the two halves swapped on models whose drivers number them so. */
unsigned gs_geom_gi_id(const struct gs_geom_model *m, unsigned start, unsigned span);
/* The same for a board whose orientation is given (boards of one model differ). */
unsigned gs_geom_gi_id_as(const struct gs_geom_model *m, bool swapped, unsigned start,
                          unsigned span);

/* Compute-instance profiles of a GI profile, by ascending id; returns the count. */
unsigned gs_geom_ci_profiles(const struct gs_geom_model *m, const struct gs_geom_gi_profile *gi,
                             struct gs_geom_ci_profile out[GS_GEOM_MAX_CI_PROFILES]);
/* Finds a CI profile of gi by name ("1c.3g.20gb", "MIG 1c.3g.20gb") or id ("0"). */
int gs_geom_ci_profile_find(const struct gs_geom_model *m, const struct gs_geom_gi_profile *gi,
                            const char *what, struct gs_geom_ci_profile *out);

/* --- layouts --- */
/* Why a GI cannot join a layout at a given start; 0 when it can. Checks the
 * start is legal, slices overlap, compute slices, instance count, media. The
 * message names the reason and, where it helps, the legal alternatives. */
int gs_geom_check_add(struct gs_err *err, const struct gs_geom_model *m,
                      const struct gs_geom_layout *l, const struct gs_geom_gi_profile *p,
                      unsigned start);
/* How many more GIs of p fit beside l (NVML's RemainingCapacity, -lgip "Free"). */
unsigned gs_geom_remaining(const struct gs_geom_model *m, const struct gs_geom_layout *l,
                           const struct gs_geom_gi_profile *p);
/* Validates a layout. Slots with start < 0 get a start chosen so that the whole
 * layout fits, if any assignment exists; out (may be l) receives the placed layout. */
int gs_geom_validate(struct gs_err *err, const struct gs_geom_model *m,
                     const struct gs_geom_layout *l, struct gs_geom_layout *out);

enum {
  GS_GEOM_ENUM_MAXIMAL = 1 << 0,     /* only layouts to which nothing can be added */
  GS_GEOM_ENUM_ALL_SHAPES = 1 << 1,  /* add the double-memory 1g etc.; default: the
                                        plain 1g/2g/3g/4g/7g-style profiles */
};
/* Calls cb for every valid placed layout (slots sorted by start), stopping
 * early if cb returns nonzero. Returns the number of layouts visited. */
typedef int (*gs_geom_layout_cb)(const struct gs_geom_layout *l, void *arg);
unsigned gs_geom_enumerate(const struct gs_geom_model *m, unsigned flags, gs_geom_layout_cb cb,
                           void *arg);

/* Memory in GiB as nvidia-smi prints it (two decimals): 4864 -> 4.75. */
double gs_geom_gib(unsigned mib);

#endif
