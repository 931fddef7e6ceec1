/* cli.h: what the command-line front end's files share: the parsed global
 * options and backend, GPU selection, exit codes, error reporting, and the
 * boxed tables nvidia-smi prints. Argument parsing and printing only; every
 * verb is a thin call into a layer (DESIGN.md, cli). */
#ifndef GS_CLI_H
#define GS_CLI_H

#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>

#include "backend/backend.h"

/* Exit codes, documented in docs/cli.md. */
enum {
  GS_EXIT_OK = 0,
  GS_EXIT_FAILED = 1,  /* the GPU (or emulator) refused an operation */
  GS_EXIT_USAGE = 2,   /* bad command line: unknown verb, option, profile, GPU */
  GS_EXIT_STATE = 3,   /* the emulator's state file is corrupt or cannot be written */
};

struct cli {
  struct gs_backend_config cfg;
  struct gs_backend *backend;  /* opened on first use */
  bool quiet;                  /* no "using emulated GPUs" notice */
  bool json;                   /* --json: machine-readable output */
  const char *gpus;            /* -i value, NULL = all */
  bool verb_owns_i;            /* set by a verb before cli_getopt: -i is one of its own
                                * options (bench's -i http|grpc, as perf_analyzer spells
                                * it), not the GPU selection; --id is then unknown */
  /* -i may name one MIG device (MIG-<uuid>, or MIG-GPU-<uuid>/<gi>/<ci>) in
   * verbs that set mig_ok before cli_select_gpus: its GPU is selected and
   * mig_gi/mig_ci say which instances the verb narrows to (cli_mig_narrow). */
  bool mig_ok;
  bool mig_sel;
  unsigned mig_gi, mig_ci;
};

/* Runs one gpuslice command line; returns the exit status. */
int cli_main(int argc, char **argv);
/* The libraries' log events to stdout (progress) and stderr (log.c). */
void cli_log_init(void);

/* One verb: `gpuslice <group> <name>` (group NULL for top-level verbs). */
struct cli_verb {
  const char *group, *name;
  int (*run)(struct cli *c, int argc, char **argv);
  const char *summary;
  bool open_ended; /* may not finish by itself or acts outside the machine state: serves until
                   * SIGTERM (worker, serve), waits for slices or runs commands (run,
                   * queue run, job-emu), drives network load (bench) */
};

/* True when one of argv's words names an open-ended verb, so
 * callers that must finish (the argument fuzzer) can leave such lines out. */
bool cli_is_open_ended(int argc, char **argv);

extern const struct cli_verb cli_verbs_mig[], cli_verbs_gi[], cli_verbs_ci[], cli_verbs_list[],
    cli_verbs_layouts[], cli_verbs_layout[], cli_verbs_emu[], cli_verbs_worker[],
    cli_verbs_serve[], cli_verbs_plan[], cli_verbs_bench[], cli_verbs_run[], cli_verbs_queue[],
    cli_verbs_job_emu[], cli_verbs_mps[], cli_verbs_slurm[], cli_verbs_version[];

/* `gpuslice version` (also `--version`): argv[0] is the verb's word. */
int cli_version(struct cli *c, int argc, char **argv);

/* The slice request options `run` and `queue submit` share (cmd_run.c):
 * --profile, --memory, --create, --mode, --threads, --jobs-dir, --user,
 * --no-wait (run only). */
struct gs_jobs_request;
struct cli_job_opts {
  struct gs_jobs_request *req;
  const char *jobs_dir, *user, *memory;
  bool no_wait;
};
int cli_job_opt(struct cli *c, int ch, const char *value, void *arg);
const struct option *cli_job_options(void);
/* The caller's account name (effective uid), or "uid<N>". */
const char *cli_login_name(void);
/* Checks the request against the machine and fills req->gpu from -i. */
int cli_job_request(struct cli *c, struct cli_job_opts *o, struct gs_backend **b);

/* The apply lock and journal (cmd_layout.c): $GPUSLICE_APPLY_LOCK, else
 * beside the emulator's state, else /var/lib/gpuslice/apply. */
void cli_apply_lock_path(struct gs_backend *b, char out[PATH_MAX]);

/* `nvidia-mig-parted ...`: gpuslice run under that name (cmd_mig_parted.c). */
int cli_mig_parted_main(int argc, char **argv);

/* Opens the backend on first call; prints the emulator notice once. */
int cli_backend(struct cli *c, struct gs_backend **out);

/* Prints "gpuslice: <msg>" (with NVML's name for NVML-level codes) and maps
 * the code to an exit status. */
int cli_fail(const struct gs_err *err);
/* Prints a usage error and returns GS_EXIT_USAGE. */
int cli_usage(const char *fmt, ...) GS_PRINTF(1, 2);
int cli_exit_of(int code);

/* Resolves -i (indices, GPU UUIDs or PCI bus ids, comma-separated, or one
 * MIG device UUID where c->mig_ok; NULL:
 * every GPU) into ascending indices; returns the count or a negative exit. */
int cli_select_gpus(struct cli *c, unsigned out[GS_BACKEND_MAX_GPUS]);
/* In a verb with --gi (and --ci, unless ci is NULL), makes a MIG device named
 * by -i stand for those options: *gi and *ci point at its ids (written into
 * gbuf and cbuf). Returns 0, or GS_EXIT_USAGE when the options were given too. */
int cli_mig_narrow(struct cli *c, const char **gi, const char **ci, char gbuf[12], char cbuf[12]);
/* Splits operands such as "19,19" "3g.20gb@4" into profile words (at most
 * max); `verb` opens the error message. Returns the count or -GS_EXIT_USAGE. */
int cli_split_profiles(int argc, char **argv, const char *verb, char words[][GS_GEOM_NAME_SIZE],
                       unsigned max);
/* Resolves profile words (a name, "MIG <name>" or an NVIDIA profile ID, with
 * an optional "@START" or ":START" memory slice) against model m into slots (start -1
 * without "@"). All words are checked before the caller acts on any; `who`
 * ("GPU 0 (a100-40gb)") opens the error message. Returns 0 or GS_EXIT_USAGE. */
int cli_profile_slots(const struct gs_geom_model *m, const char *who,
                      char words[][GS_GEOM_NAME_SIZE], unsigned n, struct gs_geom_slot *out);
/* Checks a listen option's "HOST:PORT" (port 0: any free one); 0 or
 * GS_EXIT_USAGE after a message naming the option, the value and the fix. */
int cli_check_listen(const char *option, const char *value);
/* Parses "7,8,9" into ids (max entries); returns count or -1 naming `what`. */
int cli_parse_ids(const char *text, const char *what, unsigned *ids, unsigned max);

/* Parses argv with getopt_long: the common -i, --json, -h, plus `extra`
 * (handled by on_extra, which returns 0 or an exit status). Returns the index
 * of the first operand (> 0); 0 after printing --help; or -(exit status). */
struct option;
int cli_getopt(struct cli *c, int argc, char **argv, const char *usage,
               const struct option *extra, int (*on_extra)(struct cli *, int, const char *, void *),
               void *arg);

/* Orders a GPU's instances as nvidia-smi -lgi lists them: by profile in the
 * model's -lgip order, then by GI ID (seen in real -lgi and -lci outputs). */
void cli_sort_gis(const struct gs_geom_model *m, struct gs_gi_info *gis, unsigned n);

/* Writes a JSON value to stdout (indented, newline) and frees it. */
int cli_print_json(json_t *v);

/* A placement list as nvidia-smi -lgipp prints it ("{0,4}:4") and as JSON
 * ({"starts": [0, 4], "size": 4}), from a bitmask of legal starts. */
void cli_format_placements(unsigned starts, unsigned size, char *buf, size_t len);
json_t *cli_placements_json(unsigned starts, unsigned size);

/* Boxed tables in nvidia-smi's style. A column has up to three header lines
 * and a width; rows give one string per cell, `lines` lines per row. */
struct cli_col {
  const char *head[3];
  int width;
  bool left;   /* left-aligned (names); others are centred */
};
void cli_table_begin(const char *title, const struct cli_col *cols, unsigned n);
void cli_table_row(const struct cli_col *cols, unsigned n, const char *const *cells, unsigned lines);

#endif
