/* SPDX-License-Identifier: Apache-2.0 */
/* jobs.h: running commands on slices: claiming a MIG slice (or a share of a
 * whole GPU under time-slicing or MPS) safely between concurrent runners, the
 * spool-directory queue with per-user fairness and limits, MPS control
 * daemons per GPU or MIG device, and job-emu, the emulated training job.
 * Uses backend and geometry (DESIGN.md, jobs); formats in docs/jobs.md. */
#ifndef GS_JOBS_H
#define GS_JOBS_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "backend/backend.h"

#define GS_JOBS_ID_SIZE 32
#define GS_JOBS_USER_SIZE 64
#define GS_JOBS_MAX_CLAIMS 512
#define GS_JOBS_MAX_ARGS 64
#define GS_JOBS_ARG_SIZE 4096   /* bytes per argument */
#define GS_JOBS_MAX_JOBS 4096  /* job files one listing reads */

/* ---- the state directory ---- */

/* The directory claims, the queue and MPS state live in: `override`, else
 * $GPUSLICE_JOBS_DIR, else "<emulator state file>.jobs" on emulated GPUs (so
 * each emulated machine has its own), else $XDG_STATE_HOME/gpuslice/jobs
 * (~/.local/state/...). Created if missing. Several users sharing real GPUs
 * must point GPUSLICE_JOBS_DIR at one shared directory. */
int gs_jobs_dir(struct gs_err *err, struct gs_backend *b, const char *override, char out[PATH_MAX]);
/* The same directory's name alone, nothing created or checked (shell
 * completion only looks). */
int gs_jobs_dir_name(struct gs_err *err, struct gs_backend *b, const char *override,
                     char out[PATH_MAX]);

/* ---- sizes ---- */

/* "8GiB", "8G" (10^9), "500MB", "4864MiB", "1.5TiB" into MiB, rounded up;
 * GS_E_INVALID_ARGUMENT naming `what` and the accepted forms otherwise. */
int gs_jobs_parse_size(struct gs_err *err, const char *what, const char *text, uint64_t *mib);

/* ---- claims: who holds which slice ---- */

enum gs_jobs_mode {
  GS_JOBS_MIG,        /* an exclusive MIG device */
  GS_JOBS_TIMESLICE,  /* a share of a whole GPU, time-sliced (no isolation) */
  GS_JOBS_MPS,        /* a share of a whole GPU through its MPS daemon */
};
const char *gs_jobs_mode_name(enum gs_jobs_mode m);
int gs_jobs_mode_parse(const char *text, enum gs_jobs_mode *out);

/* What a job asks for. */
struct gs_jobs_request {
  enum gs_jobs_mode mode;
  char profile[GS_GEOM_NAME_SIZE];  /* MIG: a GI profile name or id, "" when by memory;
                                       MPS: share a MIG device of this profile */
  uint64_t memory_mib;              /* MIG: smallest profile with this much; MPS: the
                                       client's pinned memory limit; 0: none */
  bool create;                      /* MIG: may create a GI+CI from free capacity */
  int gpu;                          /* a GPU index, or -1: any */
  unsigned mps_threads;             /* MPS: active thread percentage 1..100, 0: unset */
};

/* One claim in the ledger, <dir>/claims/<uid>.json: each user's claims in
 * a file of their own (in a shared directory nobody can replace another's
 * file), all read by every claimer under one lock. A claim is live while its owner (the
 * runner) or its job process lives; pids are paired with their start time
 * so a recycled pid does not keep a dead claim alive. */
struct gs_jobs_claim {
  char job[GS_JOBS_ID_SIZE];
  char user[GS_JOBS_USER_SIZE];
  enum gs_jobs_mode mode;
  unsigned gpu, gi, ci;                 /* gi, ci: MIG only */
  char uuid[GS_BACKEND_UUID_SIZE];      /* "MIG-..." or the GPU's "GPU-..." */
  char profile[GS_GEOM_NAME_SIZE];      /* "1g.5gb", or "gpu" for a whole-GPU share */
  unsigned memory_mib;                  /* the slice's memory (the GPU's for shares) */
  bool created;                         /* the claimer created the GI; release destroys it */
  bool by_uuid;                         /* named by its UUID alone (serve's workers): gpu,
                                           gi, ci unknown (0) */
  unsigned uid;                         /* who holds it: its ledger file's owner (kernel) */
  int owner_pid, job_pid;
  uint64_t owner_start, job_start;      /* /proc/<pid>/stat start times */
  double since;                         /* epoch seconds */
};

/* Claims a slice for `job` of `user`, owned by owner_pid, under the claims
 * lock: drops dead claims first (destroying the instances they created), then
 * takes the free MIG device of the wanted profile (by memory: the smallest
 * that fits) that no claim holds and no process uses, or creates one when
 * req->create allows. Shares (timeslice, MPS) are not exclusive but need a
 * GPU outside MIG mode with no MIG claim. GS_E_INSUFFICIENT_RESOURCES: none
 * free now (wait and retry); GS_E_NOT_FOUND: none exists to wait for (no
 * device of that size without req->create, no GPU in the needed MIG mode);
 * GS_E_USAGE: it can never fit here
 * (unknown profile, more memory than any profile), with the fix. */
int gs_jobs_claim(struct gs_err *err, struct gs_backend *b, const char *dir,
                  const struct gs_jobs_request *req, const char *job, const char *user,
                  pid_t owner, struct gs_jobs_claim *out);
/* Whether req can ever be met on this machine (0), or GS_E_USAGE
 * saying why not and what to ask instead: an unknown profile, more memory
 * than any MIG profile (or, for MPS, than the GPU) has, no such GPU. */
int gs_jobs_check(struct gs_err *err, struct gs_backend *b, const struct gs_jobs_request *req);
/* Claims the MIG device `uuid` as it is named (serve's workers run on the
 * devices they were given), with no backend: GS_E_IN_USE naming the holder
 * when a live claim of another owner holds it; claims of the same owner
 * (pid and start time: one serve's replicas) share it. */
int gs_jobs_claim_device(struct gs_err *err, const char *dir, const char *uuid,
                         const char *profile, const char *job, const char *user, pid_t owner,
                         struct gs_jobs_claim *out);
/* Records the job process of a claim (and, on emulated GPUs, adds it as an
 * emulated process on the slice, so `gi destroy` sees it busy). */
int gs_jobs_claim_started(struct gs_err *err, struct gs_backend *b, const char *dir,
                          struct gs_jobs_claim *c, pid_t job_pid);
/* Hands a claim to another owner (the queue's per-job shepherd). */
int gs_jobs_claim_adopt(struct gs_err *err, const char *dir, struct gs_jobs_claim *c, pid_t owner);
/* Drops a claim; destroys its CI and GI when it created them. */
int gs_jobs_release(struct gs_err *err, struct gs_backend *b, const char *dir,
                    const struct gs_jobs_claim *c);
/* The live claims (read-only: dead ones are skipped, not removed). The
 * caller frees *out. */
int gs_jobs_claims(struct gs_err *err, const char *dir, struct gs_jobs_claim **out, unsigned *n);
/* Live shares (timeslice + MPS claims) of one device: a GPU's or MIG device's UUID. */
int gs_jobs_sharers(struct gs_err *err, const char *dir, const char *uuid, unsigned *n);
/* Parses a claims file's text (exposed for the fuzzer and tests). */
int gs_jobs_claims_parse(struct gs_err *err, const char *origin, const char *text, size_t len,
                         struct gs_jobs_claim **out, unsigned *n);

/* ---- running one command on a claim ---- */

/* The environment a job gets on its claim: CUDA_VISIBLE_DEVICES, the MPS
 * client variables, and GPUSLICE_JOB_* for job-emu and scripts; appended to
 * the current environment (minus the variables it sets). NULL-terminated;
 * free with gs_jobs_strv_free. */
char **gs_jobs_env(const struct gs_jobs_claim *c, const struct gs_jobs_request *req,
                   const char *dir);
void gs_jobs_strv_free(char **v);

/* ---- tracking every process a job starts ---- */

enum gs_jobs_track_how { GS_JOBS_TRACK_NONE, GS_JOBS_TRACK_CGROUP, GS_JOBS_TRACK_SUBREAPER };
struct gs_jobs_track {
  enum gs_jobs_track_how how;
  char cgroup[PATH_MAX];   /* CGROUP: the job's own cgroup v2 directory */
};
/* Makes the caller a child subreaper and, where the machine allows it, a
 * cgroup v2 for the job (GPUSLICE_JOB_TRACKING: auto (default), cgroup:
 * fail without one, subreaper: never make one). Call before spawning the
 * job with t. */
int gs_jobs_track_begin(struct gs_err *err, const char *job, struct gs_jobs_track *t);
/* After the job's own process has been waited for: every process it left
 * gets SIGTERM, SIGKILL after grace_ms, and is gone when this returns;
 * *killed is how many there were. Removes the cgroup. */
int gs_jobs_track_end(struct gs_err *err, struct gs_jobs_track *t, unsigned grace_ms,
                      unsigned *killed);
/* "cgroup", "subreaper" or "none". */
const char *gs_jobs_track_name(const struct gs_jobs_track *t);

/* Starts argv with envp (no shell; PATH searched): stdin from stdin_fd (-1:
 * inherited, or /dev/null with a log), stdout and stderr inherited or
 * appended to log_path (created, never an existing file or a link);
 * killed with SIGKILL if its parent dies; in track's cgroup (NULL: not
 * tracked). A command that cannot be executed is GS_E_NOT_FOUND naming it. */
int gs_jobs_spawn(struct gs_err *err, char *const *argv, char *const *envp, const char *log_path,
                  int stdin_fd, const struct gs_jobs_track *track, pid_t *pid);
/* Waits for pid; *status is the exit code, or 128 + signal. *sig the signal or 0. */
int gs_jobs_wait(struct gs_err *err, pid_t pid, int *status, int *sig);

/* ---- the queue: a spool directory <dir>/queue/, one JSON file per job ---- */

enum gs_jobs_state {
  GS_JOBS_QUEUED,
  GS_JOBS_RUNNING,
  GS_JOBS_DONE,     /* ran; exit_status says how it ended */
  GS_JOBS_LOST,     /* its shepherd died while it ran; never rerun (reason says) */
  GS_JOBS_REFUSED,  /* can never run on this machine (reason says) */
  GS_JOBS_CANCELLED, /* cancelled before it started */
};
const char *gs_jobs_state_name(enum gs_jobs_state s);

/* Why a queued job waits, as the queue runner found it at its last pass
 * (the job's reason says it in words). */
enum gs_jobs_wait {
  GS_JOBS_WAIT_NONE,        /* not waiting, or no runner has looked at it yet */
  GS_JOBS_WAIT_SLICE,       /* every slice it may have is in use */
  GS_JOBS_WAIT_LAYOUT,      /* no such slice on the current layout: it stays queued (a
                               layout may add one) and holds up none of its user's jobs */
  GS_JOBS_WAIT_USER_LIMIT,  /* its user runs --max-per-user jobs */
  GS_JOBS_WAIT_QUEUE_LIMIT, /* --max-running jobs run */
  GS_JOBS_WAIT_TURN,        /* an older job of its user, or a fairer user's, goes first */
};
/* "", "slice", "layout", "user-limit", "queue-limit", "turn". */
const char *gs_jobs_wait_name(enum gs_jobs_wait w);

struct gs_jobs_job {
  char id[GS_JOBS_ID_SIZE];           /* "j000042": ascending in submission order */
  char user[GS_JOBS_USER_SIZE];
  unsigned uid;
  struct gs_jobs_request req;
  unsigned argc;
  char *argv[GS_JOBS_MAX_ARGS + 1];    /* heap strings, NULL-terminated; gs_jobs_job_clear */
  enum gs_jobs_state state;
  double submitted, started, ended;   /* epoch seconds, 0: not yet */
  int exit_status, signal;            /* DONE: as gs_jobs_wait reports */
  unsigned gpu;
  char slice_uuid[GS_BACKEND_UUID_SIZE], slice_profile[GS_GEOM_NAME_SIZE];
  int shepherd_pid, job_pid;
  uint64_t shepherd_start;
  unsigned leftovers;                 /* processes it left behind, ended after it */
  char tracking[16];                  /* how they were found: "cgroup", "subreaper" */
  char reason[GS_ERR_MSG_SIZE];       /* LOST, REFUSED, a failed start: why; QUEUED: why
                                         it waits */
  enum gs_jobs_wait waits;            /* QUEUED: why it waits, in one word */
  /* From the kernel, not the file's text: its owner (who the job runs as)
   * and group. */
  unsigned owner, owner_gid;
};

/* Frees a job's strings; free(NULL) safe. */
void gs_jobs_job_clear(struct gs_jobs_job *job);
void gs_jobs_list_free(struct gs_jobs_job *jobs, unsigned n);
/* Writes a new QUEUED job file (id assigned) atomically. */
int gs_jobs_submit(struct gs_err *err, const char *dir, struct gs_jobs_job *job);
/* Told of a job file gs_jobs_list leaves out: why->code is
 * GS_E_NO_PERMISSION for another user's private job, GS_E_CORRUPT_STATE
 * (or GS_E_IO) for a file that is not a job (why->msg names it and says
 * why). `name` is the file's name in queue/. */
typedef void gs_jobs_note_fn(void *arg, const char *name, const struct gs_err *why);
/* Every job the caller may read, in id order; files it cannot read or that
 * are not valid jobs are left out and told to note (may be NULL), so one
 * bad file never hides the others. A job's id must be its file's name
 * (j000042.json holds "j000042"). For a job of a user other than root,
 * `user` is that account's name (the file's text is only a label). The
 * caller frees *out. */
int gs_jobs_list(struct gs_err *err, const char *dir, gs_jobs_note_fn *note, void *arg,
                 struct gs_jobs_job **out, unsigned *n);
/* Moves queue/<name> aside to queue/bad/ (as <name>, or <name>.1 to .9 when
 * taken); its new path into moved. */
int gs_jobs_set_aside(struct gs_err *err, const char *dir, const char *name, char moved[PATH_MAX]);
/* True for a job id: "j" and 6 to 8 digits. */
bool gs_jobs_id_valid(const char *id);
/* Parses one job file's text (exposed for the fuzzer and tests). */
int gs_jobs_job_parse(struct gs_err *err, const char *origin, const char *text, size_t len,
                      struct gs_jobs_job *out);
/* Cancels job id: a queued one becomes CANCELLED (it never starts, even if
 * the queue is starting it now); a running one is sent SIGTERM (its
 * shepherd then records how it ended). *was tells which state it had.
 * Only root cancels other users' jobs (GS_E_NO_PERMISSION). GS_E_NOT_FOUND
 * for no such job or not an id; GS_E_USAGE if it already ended. */
int gs_jobs_cancel(struct gs_err *err, const char *dir, const char *id, enum gs_jobs_state *was);
/* The job's output file: <dir>/queue/<id>.log. */
void gs_jobs_log_path(const char *dir, const char *id, char out[PATH_MAX]);
/* Opens job id's log for reading (*fd), for its own user or root only
 * (GS_E_NO_PERMISSION otherwise): never through a link or anything but a
 * regular file, and only one its job's user owns (GS_E_CORRUPT_STATE
 * saying whose it is otherwise). GS_E_NOT_FOUND for no such job, or one
 * with no log yet (queued, cancelled: the message says why). */
int gs_jobs_log_open(struct gs_err *err, const char *dir, const char *id, int *fd);

struct gs_jobs_queue_opts {
  const struct gs_backend_config *cfg; /* each shepherd opens its own backend */
  unsigned max_per_user;               /* running jobs per user; 0: no limit */
  unsigned max_running;                /* running jobs in all; 0: no limit */
  unsigned poll_ms;                    /* between passes; 0: 200 */
  unsigned grace_ms;                   /* a job's leftovers: SIGTERM to SIGKILL; 0: 5000 */
  bool until_empty;                    /* return once nothing is queued or running */
  volatile int *stop;                  /* set by a signal handler: return */
  /* What the queue sees and does is logged (gs_log_*, source "queue",
   * events.c): a job "submitted" (new since the last pass), "waits" (its
   * reason changed), "started", "ended" (exit status, duration, slice,
   * leftovers), "lost", "refused", and for files that are not jobs to run
   * "set aside", "not a job", "skipped" (the reason says why). */
};

/* "python train.py --epochs 3", cut to fit size. */
void gs_jobs_command_text(const struct gs_jobs_job *j, char *out, size_t size);
/* "3g.20gb", "mps in 1g.5gb", "24.00 GiB", or the mode for a share of a whole GPU. */
void gs_jobs_request_text(const struct gs_jobs_request *r, char *out, size_t size);

/* One scheduling pass: marks RUNNING jobs whose shepherd died LOST (never
 * reruns them: a job is started at most once), then starts queued jobs in
 * fair order (the user with the fewest running jobs first, then the one who
 * started least recently; within a user, oldest first) while slices are free
 * and limits allow. Each start forks a shepherd that outlives the queue.
 * Every job left queued gets why it waits (written to its file when that
 * changed). *active counts the jobs queued (but for those the layout
 * blocks), running, or still holding a claim. */
int gs_jobs_queue_pass(struct gs_err *err, struct gs_backend *b, const char *dir,
                       const struct gs_jobs_queue_opts *o, unsigned *started, unsigned *active);
/* Passes until *stop, or until empty with until_empty. */
int gs_jobs_queue_run(struct gs_err *err, struct gs_backend *b, const char *dir,
                      const struct gs_jobs_queue_opts *o);

/* ---- MPS ---- */

struct gs_jobs_mps {
  bool running, emulated;
  char scope[GS_BACKEND_UUID_SIZE];   /* GPU-... or MIG-... */
  unsigned gpu;
  int pid;                            /* the control daemon (0 when emulated) */
  double started;
  char pipe_dir[PATH_MAX], log_dir[PATH_MAX];
};

/* The pipe and log directories of a scope: <dir>/mps/<scope>/{pipe,log}. */
void gs_jobs_mps_dirs(const char *dir, const char *scope, char pipe[PATH_MAX], char log[PATH_MAX]);
/* Starts `nvidia-cuda-mps-control -d` for a scope (a GPU or MIG device UUID)
 * with CUDA_VISIBLE_DEVICES=<scope> and its own pipe and log directories
 * ($GPUSLICE_MPS_CONTROL overrides the program). On emulated GPUs, with no
 * override, nothing is launched: the state is recorded and marked emulated.
 * Starting a running scope is not an error (out says so). */
int gs_jobs_mps_start(struct gs_err *err, struct gs_backend *b, const char *dir, unsigned gpu,
                      const char *scope, struct gs_jobs_mps *out);
/* `echo quit | nvidia-cuda-mps-control` for the scope; GS_E_NOT_FOUND if not running. */
int gs_jobs_mps_stop(struct gs_err *err, const char *dir, const char *scope);
/* Every scope with recorded state; the caller frees *out. */
int gs_jobs_mps_list(struct gs_err *err, const char *dir, struct gs_jobs_mps **out, unsigned *n);

/* ---- job-emu: an emulated training job ---- */

/* A model's emulated speed; each number cites its source (jobs/emujob.c). */
struct gs_jobs_emu_model {
  const char *name;          /* "bert-ft" */
  const char *what;          /* "BERT fine-tuning (A100 MIG walkthrough)" */
  double full_step_s;        /* seconds per step alone on a whole A100 (7 compute slices) */
  unsigned default_steps;
  double rel[8];             /* speed vs the whole GPU at 1..7 compute slices; 0: unknown */
  double ts7;                /* time-sliced by 7: job time / (7 x alone) */
  const char *source_full, *source_mig, *source_timeslice, *source_mps;
};
const struct gs_jobs_emu_model *gs_jobs_emu_models(unsigned *n);
const struct gs_jobs_emu_model *gs_jobs_emu_model_find(const char *name);

/* Seconds one step takes: on a MIG slice of `slices` compute slices out of
 * `total` (mode MIG), or shared by `sharers` jobs on a whole GPU (slices 0)
 * or, under MPS, on such a slice. */
double gs_jobs_emu_step_seconds(const struct gs_jobs_emu_model *m, enum gs_jobs_mode mode,
                                unsigned slices, unsigned total, unsigned sharers);

/* The source of the speed a run used: by mode, whether it ran in a MIG slice,
 * and how many jobs shared its device at most. */
const char *gs_jobs_emu_source(const struct gs_jobs_emu_model *m, enum gs_jobs_mode mode,
                               bool in_slice, unsigned max_sharers);

struct gs_jobs_emu_opts {
  const struct gs_jobs_emu_model *model;
  unsigned steps;
  double time_scale;         /* emulated seconds per wall second */
  enum gs_jobs_mode mode;
  unsigned slices, total;    /* MIG, MPS in a MIG device: compute slices of it and the GPU */
  const char *uuid;          /* shares: the shared device, for counting sharers */
  const char *dir;           /* for sharers (timeslice, MPS); NULL: sharers = 1 */
  uint64_t need_mib, have_mib; /* emulated out-of-memory when need > have (both set) */
  unsigned start_together;   /* shares: wait (up to a minute) for this many sharers first */
  void (*on_step)(void *arg, unsigned step, double emulated_s);
  void *arg;
};

struct gs_jobs_emu_result {
  double emulated_s, wall_s;
  unsigned steps, max_sharers;
};

/* "Trains": sleeps each step's emulated time / time_scale. GS_E_NO_MEMORY,
 * as CUDA's out-of-memory, when the job needs more than its slice has. */
int gs_jobs_emu_run(struct gs_err *err, const struct gs_jobs_emu_opts *o,
                    struct gs_jobs_emu_result *r);

#endif
