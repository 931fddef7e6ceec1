/* SPDX-License-Identifier: Apache-2.0 */
/* emu_state.h: the emulated machine's state and its file form (internal to
 * backend/). emu.c gives the state NVML's semantics; emu_state.c reads and
 * writes it: one JSON file, replaced atomically under a lock. */
#ifndef GS_EMU_STATE_H
#define GS_EMU_STATE_H

#include "backend/internal.h"

#define GS__EMU_FORMAT "gpuslice-emu-state"
#define GS__EMU_VERSION 2 /* 2 added driver and swapped_ids; 1 is still read; "seed" is
                            * optional in both */
#define GS__EMU_MAX_FILE (4u << 20)
#define GS__EMU_SEED_SIZE GS_EMU_SEED_SIZE
#define GS__EMU_SEED_CHARS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"

struct gs__emu_ci {
  unsigned id;
  unsigned profile_id;          /* CI profile id (== NVML CI enum) */
  unsigned start, span;         /* compute slices within the GI */
};

struct gs__emu_gi {
  unsigned id;
  const struct gs_geom_gi_profile *profile;
  unsigned start;               /* span is profile->span */
  unsigned nci;
  struct gs__emu_ci ci[GS_GEOM_MAX_INSTANCES];
};

struct gs__emu_gpu {
  const struct gs_geom_model *model; /* the board's model as the machine's driver shows it */
  const struct gs_geom_sku *sku;     /* the board: name and PCI ids */
  bool swapped_ids;                  /* this board's GI-ID orientation (boards differ) */
  bool mig_current, mig_pending;
  bool reset_blocked;           /* emulates VM passthrough: no GPU reset allowed */
  unsigned ngi;
  struct gs__emu_gi gi[GS_GEOM_MAX_INSTANCES];  /* kept sorted by id */
};

struct gs__emu_state {
  unsigned ngpu;
  struct gs__emu_gpu gpu[GS_BACKEND_MAX_GPUS];
  unsigned nproc;
  struct gs_proc_info proc[GS_BACKEND_MAX_PROCS];
  bool enforce_root;
  unsigned boots;               /* emulated reboots so far */
  struct gs_geom_driver driver; /* the machine's NVIDIA driver */
  char seed[GS__EMU_SEED_SIZE]; /* this machine's part of every UUID; "": none (the file's
                                   optional "seed" key), so machines emulated side by side differ */
};

/* What --emulate names (emu_spec.c): boards and the machine's driver. */
struct gs__emu_machine {
  const struct gs_geom_sku *sku[GS_BACKEND_MAX_GPUS];
  unsigned n;
  struct gs_geom_driver driver;
  char seed[GS__EMU_SEED_SIZE]; /* "seed=WORD" ("": none) */
};

/* "model[:count],...[,seed=WORD][@driver]" (NULL or "": one a100-40gb); no
 * driver: the newest known. Every board must have MIG on the driver. */
int gs__emu_machine_parse(struct gs_err *err, const char *spec, unsigned max,
                          struct gs__emu_machine *out);
/* GS_E_INVALID_ARGUMENT naming the first board without MIG on m's driver. */
int gs__emu_machine_check(struct gs_err *err, const struct gs__emu_machine *m);
/* A fresh state of m: MIG off, no instances. */
void gs__emu_machine_init(struct gs__emu_state *st, const struct gs__emu_machine *m);
/* Whether st is the machine m names (boards and driver). */
bool gs__emu_machine_same(const struct gs__emu_state *st, const struct gs__emu_machine *m);

/* Serializes st as the state file's JSON text (heap, caller frees). */
int gs__emu_state_dump(struct gs_err *err, const struct gs__emu_state *st, char **text);
/* Parses and fully validates a state file's text: every model, profile,
 * placement and id must be known and consistent; any defect is
 * GS_E_CORRUPT_STATE with a message naming the field. `origin` names the file. */
int gs__emu_state_parse(struct gs_err *err, const char *origin, const char *text, size_t len,
                        struct gs__emu_state *st);
/* Loads path under a lock held in *lock (exclusive if for_write). A missing
 * file is GS_E_NOT_FOUND with the lock still held. */
int gs__emu_state_load(struct gs_err *err, const char *path, bool for_write,
                       struct gs_file_lock *lock, struct gs__emu_state *st);
/* Writes st to path atomically; the caller holds the exclusive lock. */
int gs__emu_state_save(struct gs_err *err, const char *path, const struct gs__emu_state *st);
/* Fills st with a fresh machine of the given models (MIG off, no instances),
 * each its model's own board and usual orientation, on the default driver. */
void gs__emu_state_init(struct gs__emu_state *st, const struct gs_geom_model *const models[],
                        unsigned n);

#endif
