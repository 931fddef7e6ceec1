/* SPDX-License-Identifier: Apache-2.0 */
/* layout.h: declarative MIG layouts: the configs admins write (nvidia-mig-
 * parted's v1 YAML and ours), the plan that turns a GPU's current instances
 * into a target with the fewest changes, and the journaled apply that survives
 * a crash. Uses backend and geometry (DESIGN.md, layout). */
#ifndef GS_LAYOUT_H
#define GS_LAYOUT_H

#include <stdbool.h>
#include "backend/backend.h"

/* ---- config files ---- */

#define GS_LAYOUT_NAME_SIZE 64
#define GS_LAYOUT_MAX_SPECS 16   /* GI lines in one entry */
#define GS_LAYOUT_MAX_FILTERS 16

enum gs_layout_format {
  GS_LAYOUT_MIG_PARTED, /* `version: v1` with `mig-configs` (nvidia-mig-parted) */
  GS_LAYOUT_GPUSLICE,   /* `version: gpuslice/v1` with `configs` (ours) */
};

/* One line of wanted instances: mig-parted's `"1g.5gb": 7`, or ours with a
 * placement and compute instances. Profile names are resolved per GPU later,
 * because one file serves many models. */
struct gs_layout_spec {
  char profile[GS_GEOM_NAME_SIZE]; /* GI profile, or "1c.3g.20gb" (a CI profile) in mig-parted */
  int start;                       /* -1: any */
  unsigned count;
  unsigned nci;                    /* ours: explicit CIs; 0: the default one */
  char ci[GS_GEOM_MAX_INSTANCES][GS_GEOM_NAME_SIZE];
  int ci_start[GS_GEOM_MAX_INSTANCES];
  unsigned line;
};

/* Which GPUs an entry applies to, and what they get. */
struct gs_layout_entry {
  bool all_devices;
  unsigned ndev;
  unsigned dev[GS_BACKEND_MAX_GPUS];                   /* indices */
  unsigned nuuid;
  char uuid[GS_BACKEND_MAX_GPUS][GS_BACKEND_UUID_SIZE]; /* ours: select by UUID */
  unsigned nfilter;
  char filter[GS_LAYOUT_MAX_FILTERS][GS_LAYOUT_NAME_SIZE]; /* PCI ids "0x20B010DE" or model keys */
  bool filter_list;                                        /* written as a list, not one string */
  bool mig_enabled;
  unsigned nspec;
  struct gs_layout_spec spec[GS_LAYOUT_MAX_SPECS];
  unsigned line;
};

struct gs_layout_config {
  char name[GS_LAYOUT_NAME_SIZE];
  unsigned line;
  unsigned nentry;
  struct gs_layout_entry *entry;
};

struct gs_layout_file {
  char origin[256];           /* the file name, for messages */
  enum gs_layout_format format;
  unsigned nconfig;
  struct gs_layout_config *config;
};

/* Parses a config file's text. Every defect is GS_E_INVALID_ARGUMENT with a
 * message "<origin>:<line>: <where>: <what>; <fix>". The caller frees *out
 * with gs_layout_file_free. */
int gs_layout_parse(struct gs_err *err, const char *origin, const char *text, size_t len,
                    struct gs_layout_file **out);
void gs_layout_file_free(struct gs_layout_file *f);
/* The named config (name NULL: the file's only one, as nvidia-mig-parted
 * picks it), or GS_E_NOT_FOUND listing the names the file has. */
int gs_layout_find(struct gs_err *err, const struct gs_layout_file *f, const char *name,
                   const struct gs_layout_config **out);

/* ---- from a config to per-GPU targets ---- */

struct gs_layout_target;

/* The config resolved against this machine's GPUs. */
struct gs_layout_selection {
  unsigned ngpu;
  bool named[GS_BACKEND_MAX_GPUS];    /* some entry names the GPU */
  bool touched[GS_BACKEND_MAX_GPUS];  /* to be brought to target[] (named, and MIG-capable
                                         or not skipped); GPUs no entry names are left alone */
  int entry[GS_BACKEND_MAX_GPUS];     /* the entry that names the GPU, or -1 */
  struct gs_layout_target *target;    /* ngpu of them (heap) */
};

/* Resolves cfg for the GPUs described by `gpus`: which entry applies to each
 * GPU (devices, UUIDs, device-filter), and each profile name against that
 * GPU's model. Errors name the file, line, entry, GPU and the fix: unknown
 * profile (listing the model's), GPU index out of range, a GPU two entries
 * claim, counts that do not fit. Free with gs_layout_selection_free. */
int gs_layout_resolve(struct gs_err *err, const struct gs_layout_file *f,
                      const struct gs_layout_config *cfg, const struct gs_gpu_info *gpus,
                      unsigned ngpu, struct gs_layout_selection *sel);
void gs_layout_selection_free(struct gs_layout_selection *sel);

/* ---- hooks: commands run around an apply, in nvidia-mig-parted's format ---- */

enum gs_layout_hook_point {
  GS_LAYOUT_HOOK_APPLY_START,      /* before anything */
  GS_LAYOUT_HOOK_PRE_APPLY_MODE,   /* before a MIG mode change */
  GS_LAYOUT_HOOK_PRE_APPLY_CONFIG, /* before instances change */
  GS_LAYOUT_HOOK_APPLY_EXIT,       /* always, last (also after a failure) */
  GS_LAYOUT_HOOK_POINTS
};

#define GS_LAYOUT_MAX_HOOKS 8
#define GS_LAYOUT_MAX_ARGS 16

struct gs_layout_hook {
  char command[256];
  unsigned nargs;
  char args[GS_LAYOUT_MAX_ARGS][256];
  unsigned nenv;
  char env[GS_LAYOUT_MAX_ARGS][256]; /* "NAME=value" */
  char workdir[256];
  unsigned line;
};

struct gs_layout_hooks {
  char origin[256];
  unsigned n[GS_LAYOUT_HOOK_POINTS];
  struct gs_layout_hook hook[GS_LAYOUT_HOOK_POINTS][GS_LAYOUT_MAX_HOOKS];
};

/* Parses a hooks file (`version: v1`, `hooks: {apply-start: [{command, args,
 * envs, workdir}], pre-apply-mode, pre-apply-config, apply-exit}`). */
int gs_layout_hooks_parse(struct gs_err *err, const char *origin, const char *text, size_t len,
                          struct gs_layout_hooks *out);
/* Runs a point's hooks in order, each as its own process (no shell), with
 * `env` ("NAME=value", NULL-terminated) added to the environment; the first
 * that fails stops the rest and is the error. */
int gs_layout_hooks_run(struct gs_err *err, const struct gs_layout_hooks *h,
                        enum gs_layout_hook_point point, char *const *env);
/* The same as nvidia-mig-parted runs them: env is the hooks' whole
 * environment (the program is still found on our PATH), their output is
 * shown only when `output` (its -d), and a failure reads as Go's
 * ("exit status 1"). */
int gs_layout_hooks_run_mig_parted(struct gs_err *err, const struct gs_layout_hooks *h,
                                   enum gs_layout_hook_point point, char *const *env, bool output);

/* ---- the planner: pure logic over one GPU's geometry ---- */

/* A compute instance wanted inside a target GI. */
struct gs_layout_ci {
  unsigned profile_id;  /* CI profile id (NVML CI enum) */
  int start;            /* compute slice, or -1: any */
};

/* One GPU instance of a target: a profile, optionally a placement, and the
 * CIs it should hold (nci == 0 means "the default CI: the whole GI"). */
struct gs_layout_gi {
  const struct gs_geom_gi_profile *profile;
  int start;            /* memory slice, or -1: any legal one */
  unsigned nci;
  struct gs_layout_ci ci[GS_GEOM_MAX_INSTANCES];
};

/* What one GPU should look like. */
struct gs_layout_target {
  bool mig_enabled;
  unsigned ngi;
  struct gs_layout_gi gi[GS_GEOM_MAX_INSTANCES];
};

/* What one GPU looks like now: its GIs (with ids), their CIs, and whether a
 * process uses each (busy GIs and CIs are never destroyed without force). */
struct gs_layout_current_gi {
  struct gs_gi_info gi;
  unsigned nci;
  struct gs_ci_info ci[GS_GEOM_MAX_INSTANCES];
  bool busy;
};

struct gs_layout_current {
  bool mig_current, mig_pending;
  unsigned ngi;
  struct gs_layout_current_gi gi[GS_GEOM_MAX_INSTANCES];
};

enum gs_layout_op_kind {
  GS_LAYOUT_DESTROY_CI,
  GS_LAYOUT_DESTROY_GI,
  GS_LAYOUT_SET_MIG,      /* enable = mig_enable */
  GS_LAYOUT_CREATE_GI,    /* profile at start (always a concrete start) */
  GS_LAYOUT_CREATE_CI,    /* in the GI created by op `gi_op`, or existing GI `gi_id` */
};

struct gs_layout_op {
  enum gs_layout_op_kind kind;
  unsigned gi_id;                            /* DESTROY_*, CREATE_CI into a kept GI */
  int gi_op;                                 /* CREATE_CI into the GI made by this op index, or -1 */
  unsigned ci_id;                            /* DESTROY_CI */
  const struct gs_geom_gi_profile *profile;  /* CREATE_GI */
  unsigned start;                            /* CREATE_GI: memory slice */
  struct gs_layout_ci ci;                    /* CREATE_CI */
  bool mig_enable;                           /* SET_MIG */
};

#define GS_LAYOUT_MAX_OPS 64

struct gs_layout_plan {
  unsigned nops;
  struct gs_layout_op op[GS_LAYOUT_MAX_OPS];
  unsigned kept_gis;        /* GIs kept (not destroyed); their CIs are diffed */
  bool needs_reset;         /* the MIG mode change needs a GPU reset (Ampere) */
};

/* Plans one GPU: keeps as many current GIs as any plan can (a GI is kept when
 * its profile, and its placement if the target gives one, match a target GI;
 * inside a kept GI the CIs are diffed the same way), destroys the rest, and
 * creates what is missing at placements chosen so the whole target fits.
 * Destroys come first (CIs before their GI), then SET_MIG, then creates in an
 * order that succeeds, each GI where the driver's automatic placement would
 * put it when some order allows; every create carries a concrete start (GIs
 * and CIs). Ties prefer keeping busy GIs, then GIs whose CIs already match.
 * Without force a busy GI is neither destroyed nor has its CIs destroyed (which
 * CI is busy is not known), even if that means keeping fewer GIs; when no
 * plan spares them all: GS_E_IN_USE naming one. GS_E_INSUFFICIENT_RESOURCES
 * when the target does not fit the model at all ("1g.5gb x8 does not fit on
 * a100-40gb: ..."), GS_E_INVALID_ARGUMENT for a profile, start or CI that is
 * not the model's. The plan is filled only on success. */
int gs_layout_plan_gpu(struct gs_err *err, const struct gs_geom_model *m,
                       const struct gs_layout_current *cur, const struct gs_layout_target *want,
                       bool force, struct gs_layout_plan *plan);
/* The concrete layout a plan leads cur to (every GI with its start, every CI
 * with its start): what apply journals, and mig-parted's result when cur is
 * an empty GPU. */
void gs_layout_plan_final(const struct gs_layout_current *cur, const struct gs_layout_target *want,
                          const struct gs_layout_plan *p, struct gs_layout_target *out);
/* The GPU as it is (every GI and CI at its place) with MIG mode `enable`;
 * no instances when enable is false. What --mode-only applies. */
void gs_layout_target_of(const struct gs_layout_current *cur, bool enable, struct gs_layout_target *out);
/* How many steps of kind k the plan has. */
unsigned gs_layout_plan_count(const struct gs_layout_plan *p, enum gs_layout_op_kind k);

/* ---- applying, with a journal and a lock ---- */

/* Reads one GPU as the planner sees it: GIs, CIs, and which are busy. */
int gs_layout_read_current(struct gs_err *err, struct gs_backend *b, unsigned gpu,
                           struct gs_layout_current *cur);

struct gs_layout_apply_opts {
  const char *config_name;  /* for the journal and the messages */
  const char *lock_path;    /* "<lock_path>.lock" serializes applies; the journal is
                               "<lock_path>.journal" */
  unsigned wait_seconds;    /* how long a second apply waits for the first (0: fails) */
  bool dry_run;             /* plan and report, change nothing */
  bool force;               /* destroy busy instances too */
  bool mode_only;           /* only the MIG mode (mig-parted's --mode-only): instances are
                               kept as they are, or removed when MIG is to be disabled */
  bool pending_ok;          /* a mode change left pending (a process holds the GPU, or no
                               reset is allowed) is not a failure: mig-parted resets after */
  const struct gs_layout_hooks *hooks; /* NULL: none */
  char *const *hook_env;    /* added to the hooks' environment (NULL-terminated) */
  /* Called with each GPU's plan before anything changes, then after each
   * operation with its result (the new instance's id for creates). */
  void (*on_plan)(void *arg, unsigned gpu, const struct gs_layout_plan *plan);
  void (*on_op)(void *arg, unsigned gpu, const struct gs_layout_op *op, unsigned new_id, int rc,
                const struct gs_err *err);
  void *arg;
};

/* Brings every touched GPU of sel to its target with the fewest changes. All
 * GPUs are planned (and every error found) before anything changes; the
 * targets are journaled first, so an interrupted apply is finished by the
 * next apply or by gs_layout_recover. */
int gs_layout_apply(struct gs_err *err, struct gs_backend *b, const struct gs_layout_selection *sel,
                    const struct gs_layout_apply_opts *o);
/* Finishes an interrupted apply from its journal; *found tells whether there
 * was one. */
int gs_layout_recover(struct gs_err *err, struct gs_backend *b, const struct gs_layout_apply_opts *o,
                      bool *found);

/* Writes the machine's current layout as a config named `name` that apply
 * reproduces: ours keeps placements and compute instances exactly; mig-parted's
 * says only counts (as gs_layout_mp_export writes it). The caller frees *yaml. */
int gs_layout_export(struct gs_err *err, struct gs_backend *b, enum gs_layout_format format,
                     const char *name, char **yaml);

/* ---- nvidia-mig-parted's own semantics (migparted.c, mpstate.c, mpconfig.c) ----
 * What `nvidia-mig-parted` does, for gpuslice running under that name: the
 * same walk over a config's entries and GPUs, the same assert and apply
 * steps, hooks, GPU reset, checkpoint and export files, the same end states
 * and the same error texts (lower case, wrapped as mig-parted wraps them;
 * the CLI capitalises the outermost). Where mig-parted would change some
 * GPUs and then fail, these find the failure first and change nothing. */

enum gs_layout_log_level { GS_LAYOUT_DEBUG, GS_LAYOUT_INFO, GS_LAYOUT_WARN, GS_LAYOUT_ERROR };

/* Where mig-parted's log lines go; the CLI prints them as logrus does.
 * `debug` says whether the caller asked for debug lines (-d). */
struct gs_layout_logger {
  void (*fn)(void *arg, enum gs_layout_log_level level, const char *msg);
  void *arg;
  bool debug;
};

struct gs_layout_mp_opts {
  bool mode_only;           /* -m: the MIG mode only */
  bool skip_reset;          /* -s: no GPU reset after a mode change */
  const struct gs_layout_hooks *hooks;  /* NULL: none */
  char *const *hook_env;    /* the hooks' whole environment (NULL-terminated) */
  bool hook_output;         /* the hooks' output is shown (mig-parted's -d) */
  const char *lock_path;    /* as gs_layout_apply_opts */
  unsigned wait_seconds;
  const struct gs_layout_logger *log;
};

/* `assert [--mode-only]`: 0 when the config (or its MIG mode) is what the
 * GPUs have; else GS_E_NOT_FOUND with mig-parted's reason in err (its caller
 * prints "assertion failure: selected configuration not currently applied"). */
int gs_layout_mp_assert(struct gs_err *err, struct gs_backend *b, const struct gs_layout_file *f,
                        const struct gs_layout_config *cfg, bool mode_only, const struct gs_layout_logger *log);
/* `apply`: apply-start hook; the mode (clearing every walked GPU in MIG mode,
 * then a reset of all GPUs when one is left pending, unless skip_reset);
 * unless mode_only the instances of each GPU whose counts differ, rebuilt as
 * mig-parted builds them; apply-exit hook. */
int gs_layout_mp_apply(struct gs_err *err, struct gs_backend *b, const struct gs_layout_file *f,
                       const struct gs_layout_config *cfg, const struct gs_layout_mp_opts *o);

/* `checkpoint`: the MIG state of every MIG-capable GPU as mig-parted's
 * checkpoint file ({"Version":"v1","MigState":{"Devices":[...]}}). */
int gs_layout_mp_checkpoint(struct gs_err *err, struct gs_backend *b, char **json);
/* `restore`: brings the GPUs back to a checkpoint, with hooks, as `apply`. */
int gs_layout_mp_restore(struct gs_err *err, struct gs_backend *b, const char *path, const char *text,
                         size_t len, const struct gs_layout_mp_opts *o);

/* `export [-o json] [-l LABEL]`: the current layout as mig-parted writes it
 * (entries merged across GPUs that agree, `devices: all` where they all do). */
int gs_layout_mp_export(struct gs_err *err, struct gs_backend *b, const char *label, bool json, char **out);
/* `generate-config [-o json]`: all-disabled, all-enabled, all-balanced and an
 * all-<profile> for every GPU-instance profile of the GPUs, as mig-parted
 * discovers them. */
int gs_layout_mp_generate(struct gs_err *err, struct gs_backend *b, bool json, char **out,
                          const struct gs_layout_logger *log);

#endif
