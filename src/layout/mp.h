/* SPDX-License-Identifier: Apache-2.0 */
/* mp.h: what the files of nvidia-mig-parted's semantics share (migparted.c,
 * mpstate.c, mpconfig.c): the log call, counts of MIG devices by profile
 * name as mig-parted compares them, the busy check and the step runner with
 * its hooks. Internal to the layout layer. */
#ifndef GS_LAYOUT_MP_H
#define GS_LAYOUT_MP_H

#include "layout/layout.h"

/* gs_layout_resolve as mig-parted reads a config: a GPU index this machine
 * lacks names no GPU (one file serves nodes of different sizes). */
int gs__layout_resolve_mig_parted(struct gs_err *err, const struct gs_layout_file *f,
                                  const struct gs_layout_config *cfg, const struct gs_gpu_info *gpus,
                                  unsigned ngpu, struct gs_layout_selection *sel);

/* One log line (debug lines only when the logger asks for them). */
void gs__mp_log(const struct gs_layout_logger *log, enum gs_layout_log_level level, const char *fmt, ...)
    GS_PRINTF(3, 4);

/* MIG devices counted by profile name ("1g.5gb": 2, "1c.3g.20gb": 3), as
 * mig-parted's GetMigConfig counts them: one per compute instance, named by
 * its GI profile when it fills the GI. */
#define GS__MP_MAX_NAMES (GS_GEOM_MAX_INSTANCES * GS_GEOM_MAX_INSTANCES)
struct gs__mp_counts {
  unsigned n;
  char name[GS__MP_MAX_NAMES][GS_GEOM_NAME_SIZE];
  unsigned count[GS__MP_MAX_NAMES];
};
/* One more of name (a new name counts 1). */
void gs__mp_counts_add(struct gs__mp_counts *c, const char *name);
void gs__mp_counts_current(const struct gs_layout_current *cur, struct gs__mp_counts *out);
void gs__mp_counts_target(const struct gs_geom_model *m, const struct gs_layout_target *t,
                          struct gs__mp_counts *out);
bool gs__mp_counts_equal(const struct gs__mp_counts *a, const struct gs__mp_counts *b);

/* The error mig-parted's ClearMigConfig meets on GPU gpu when a process holds
 * one of its compute instances ("error walking gpu instances for '0': ...:
 * In use by another client"); 0 when nothing there is busy. */
int gs__mp_busy(struct gs_err *err, struct gs_backend *b, unsigned gpu, const struct gs_layout_current *cur);

/* Brings GPU gpu alone to target t with a journaled apply (a pending mode is
 * no failure); nothing else on the machine is touched. */
int gs__mp_apply_one(struct gs_err *err, struct gs_backend *b, unsigned gpu, const struct gs_layout_target *t,
                     const struct gs_layout_mp_opts *o);

/* Resets every GPU as mig-parted does after a mode change left one pending
 * (its report logged: debug on success, error on failure). */
int gs__mp_reset_all(struct gs_err *err, struct gs_backend *b, const struct gs_layout_logger *log);

/* mig-parted's MigConfigApplier: the four steps ApplyMigConfigWithHooks runs
 * between the hooks. Each returns 0 or an error code with err set. */
struct gs__mp_steps {
  int (*assert_mode)(struct gs_err *err, void *arg);
  int (*apply_mode)(struct gs_err *err, void *arg);
  int (*assert_config)(struct gs_err *err, void *arg);
  int (*apply_config)(struct gs_err *err, void *arg);
  void *arg;
};
/* apply-start, mode (pre-apply-mode when it differs), unless mode_only the
 * devices (pre-apply-config when they differ), apply-exit whatever happened;
 * logs (to o->log) and wraps errors as mig-parted does. */
int gs__mp_run(struct gs_err *err, const struct gs__mp_steps *s, const struct gs_layout_mp_opts *o);

#endif
