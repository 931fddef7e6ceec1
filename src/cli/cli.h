/* SPDX-License-Identifier: Apache-2.0 */
/* cli.h: what the command-line front end's files share: the parsed global
 * options and backend, GPU selection, exit codes, error reporting, and the
 * boxed tables nvidia-smi prints. Argument parsing and printing only; every
 * verb is a thin call into a layer (DESIGN.md, cli). */
#ifndef GS_CLI_H
#define GS_CLI_H

#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "backend/backend.h"

/* Exit codes, documented in docs/cli.md. */
enum {
  GS_EXIT_OK = 0,
  GS_EXIT_FAILED = 1,  /* the GPU (or emulator) refused an operation */
  GS_EXIT_USAGE = 2,   /* bad command line: unknown verb, option, profile, GPU */
  GS_EXIT_STATE = 3,   /* a state file is corrupt, untrusted or cannot be written */
};

struct cli {
  struct gs_backend_config cfg;
  struct gs_backend *backend;  /* opened on first use */
  bool quiet;                  /* no "using emulated GPUs" notice */
  const char *log_format;      /* --log-format, or NULL */
  const char *log_level;       /* --log-level, or NULL */
  bool json;                   /* --json: machine-readable output */
  const char *gpus;            /* -i value, NULL = all */
  const struct cli_verb *verb; /* the verb running (its options, help and name) */
  /* -i may name one MIG device (MIG-<uuid>, or MIG-GPU-<uuid>/<gi>/<ci>) in
   * verbs that set mig_ok before cli_select_gpus: its GPU is selected and
   * mig_gi/mig_ci say which instances the verb narrows to (cli_mig_narrow). */
  bool mig_ok;
  bool mig_sel;
  unsigned mig_gi, mig_ci;
};

/* Runs one gpuslice command line; returns the exit status. */
int cli_main(int argc, char **argv);
/* The libraries' log events (log.c): the sink, in the format and from the
 * level asked (--log-format auto|text|journal|json, --log-level; NULL: the
 * environment's GPUSLICE_LOG_FORMAT and GPUSLICE_LOG_LEVEL, else auto and
 * info). 0, or the usage exit after saying what was wrong. */
int cli_log_init(const char *format, const char *level);
/* Every level's lines on stderr in the text format (a command whose events
 * are its log, not its output: `queue run`). */
void cli_log_to_stderr(void);
enum cli_log_format { CLI_LOG_TEXT, CLI_LOG_JOURNAL, CLI_LOG_JSON };
/* "debug", "info", "notice", "warning" ("warn"), "error" ("err"); -1 else. */
int cli_log_level_parse(const char *text, enum gs_log_level *out);
/* One event as the sink writes it, newline-ended, into buf (cut to fit);
 * stamp: the text format's time and level (a terminal). Returns its length. */
size_t cli_log_format_line(char *buf, size_t size, enum cli_log_format format, bool stamp,
                           const struct timespec *now, enum gs_log_level level, const char *source,
                           const char *msg, const struct gs_log_field *fields, size_t nfields);

/* How a value is completed (`gpuslice complete`, the shells' scripts). */
enum cli_value {
  CLI_VALUE_TEXT,    /* nothing to offer */
  CLI_VALUE_FILE,    /* a file name: the shell's own completion */
  CLI_VALUE_DIR,     /* a directory */
  CLI_VALUE_GPUS,    /* GPU indices of this machine */
  CLI_VALUE_PROFILE, /* GPU instance profile names of the selected GPUs */
  CLI_VALUE_CONFIG,  /* config names of the layout file given with -f */
  CLI_VALUE_MODEL,   /* GPU model keys */
  CLI_VALUE_CHOICE,  /* one of the words of cli_opt.arg ("p2c|rr") */
  CLI_VALUE_COMMAND, /* a command and its arguments (after `--`) */
  CLI_VALUE_CI_PROFILE, /* compute instance profile names of the selected GPUs */
  CLI_VALUE_JOB,     /* the caller's own job ids in the jobs directory (--jobs-dir) */
};

/* One option of a verb: the single table from which getopt_long's table,
 * `--help`, the man page, docs/cli.md's table and the completion are all
 * made (docs/cli.md, "Options"). */
struct cli_opt {
  const char *name;       /* long name without "--"; NULL: a deprecated letter alone */
  char letter;            /* the short option, or 0 */
  const char *arg;        /* the value's name ("GPUS", "p2c|rr"); NULL: takes none */
  int val;                /* what the verb's handler receives */
  const char *def;        /* the default, in words; NULL: none to state */
  const char *help;       /* one line */
  enum cli_value value;   /* how its value is completed */
  const char *deprecated; /* non-NULL: an old spelling of the option named here (e.g.
                           * "--thread-percentage"): accepted with a warning, not in --help */
};

/* The values cli_getopt keeps for itself: the GPU selection and --json. */
enum { CLI_V_GPUS = 0x7000, CLI_V_JSON };
#define CLI_OPT_GPUS(def, help) {"id", 'i', "GPUS", CLI_V_GPUS, def, help, CLI_VALUE_GPUS, NULL}
#define CLI_OPT_JSON(help) {"json", 0, NULL, CLI_V_JSON, NULL, help, CLI_VALUE_TEXT, NULL}

/* A verb's command line: options, operands, and the text --help and its
 * man page print. */
struct cli_spec {
  const char *operands;        /* after "[options]" in the synopsis, or NULL */
  enum cli_value operand;      /* how operands are completed */
  const struct cli_opt *opts;  /* ends with {0}; -h/--help is added to every verb */
  const char *about;           /* what it does: lines, each at most ~90 columns */
  const char *examples;        /* command lines, one a line */
  /* An option the verb knows of but refuses ("--streaming", "-z": another
   * tool's spelling): the reason, said instead of "unknown option"; NULL: unknown. */
  const char *(*refusal)(const char *word);
};

/* One verb: `gpuslice <group> <name>` (group NULL for top-level verbs). */
struct cli_verb {
  const char *group, *name;
  int (*run)(struct cli *c, int argc, char **argv);
  const char *summary;
  bool open_ended; /* may not finish by itself or acts outside the machine state: serves until
                   * SIGTERM (worker, serve), waits for slices or runs commands (run,
                   * queue run, job-emu), drives network load (bench) */
  const struct cli_spec *spec;
  bool hidden;     /* left out of `gpuslice --help` and the man pages (complete) */
};

/* A man page of commands: gpuslice-<page>(1) documents these verbs. */
struct cli_family {
  const char *page, *title;
  const struct cli_verb *verbs;
};
extern const struct cli_family cli_families[];
extern const unsigned cli_nfamilies;
/* The texts gpuslice --help and gpuslice(1) share. */
extern const char cli_exit_text[], cli_duration_text[];
/* Every visible verb in `gpuslice --help` order: calls fn for each. */
void cli_each_verb(void (*fn)(const struct cli_verb *v, void *arg), void *arg);
/* "gi create": the verb's command words. */
void cli_verb_words(const struct cli_verb *v, char *buf, size_t size);
/* A verb's --help: usage, about, options (one line each, with its default) and examples. */
void cli_verb_help(const struct cli_verb *v, FILE *out);
/* "-i, --id GPUS" as --help and the man page spell an option. */
void cli_opt_spelling(const struct cli_opt *o, char *buf, size_t size);
/* The verb that `words` name (e.g. {"gi", "create"}), or NULL; *used gets how
 * many words named it. */
const struct cli_verb *cli_find_verb(int nwords, char **words, int *used);
/* The global options (--emulate, --emu-state, --backend, --log-format, --log-level, -q, -h, -V). */
extern const struct cli_opt cli_global_opts[];
/* `gpuslice complete` (cmd_complete.c). */
extern const struct cli_verb cli_verbs_complete[];

/* True when one of argv's words names an open-ended verb, so
 * callers that must finish (the argument fuzzer) can leave such lines out. */
bool cli_is_open_ended(int argc, char **argv);

extern const struct cli_verb cli_verbs_mig[], cli_verbs_gi[], cli_verbs_ci[], cli_verbs_list[],
    cli_verbs_layouts[], cli_verbs_layout[], cli_verbs_emu[], cli_verbs_worker[],
    cli_verbs_serve[], cli_verbs_plan[], cli_verbs_bench[], cli_verbs_run[], cli_verbs_queue[],
    cli_verbs_job_emu[], cli_verbs_mps[], cli_verbs_slurm[], cli_verbs_version[];

/* bench's pieces its files share: its errors' exit rule; a file the command
 * line names, read (exit 2 when it cannot be); `bench plot`
 * (cmd_bench_plot.c); perf_analyzer's options it refuses, and why
 * (cmd_bench_pa.c; NULL for any other word). */
int cli_bench_fail(const struct gs_err *err);
int cli_named_file(struct gs_err *err, const char *what, const char *path, size_t limit,
                   char **text, size_t *len);
int cli_bench_plot(struct cli *c, int argc, char **argv);
extern const struct cli_spec cli_bench_plot_spec;
const char *cli_bench_refusal(const char *word);

/* `gpuslice version` (also `--version`): argv[0] is the verb's word. */
int cli_version(struct cli *c, int argc, char **argv);

/* The slice request options `run` and `queue submit` share (cmd_run.c):
 * their rows, and the handler of their values. */
enum { CLI_JOB_PROFILE = 300, CLI_JOB_MEMORY, CLI_JOB_CREATE, CLI_JOB_MODE, CLI_JOB_THREADS,
       CLI_JOB_DIR, CLI_JOB_USER, CLI_JOB_NO_WAIT };
#define CLI_JOB_OPTS                                                                               \
  CLI_OPT_GPUS("any GPU", "the GPU the job runs on (one index or UUID)"),                          \
      {"profile", 0, "PROFILE", CLI_JOB_PROFILE, NULL, "a MIG slice of this profile, e.g. 1g.5gb", \
       CLI_VALUE_PROFILE, NULL},                                                                   \
      {"memory", 0, "SIZE", CLI_JOB_MEMORY, NULL,                                                  \
       "or the smallest slice with this much memory, e.g. 8GiB", CLI_VALUE_TEXT, NULL},            \
      {"create", 0, NULL, CLI_JOB_CREATE, NULL,                                                    \
       "create the slice if none is free (destroyed after)", CLI_VALUE_TEXT, NULL},                \
      {"mode", 0, "mig|timeslice|mps", CLI_JOB_MODE, "mig",                                        \
       "a MIG slice, or a time-sliced or MPS share of a whole GPU", CLI_VALUE_CHOICE, NULL},       \
      {"thread-percentage", 0, "PCT", CLI_JOB_THREADS, "100",                                      \
       "--mode mps: the client's CUDA_MPS_ACTIVE_THREAD_PERCENTAGE, 1 to 100", CLI_VALUE_TEXT,     \
       NULL},                                                                                      \
      {"user", 0, "NAME", CLI_JOB_USER, "your login name", "the user the job counts for",          \
       CLI_VALUE_TEXT, NULL},                                                                      \
      {"jobs-dir", 0, "DIR", CLI_JOB_DIR, "$GPUSLICE_JOBS_DIR, or beside the emulator's state",    \
       "the claims ledger and queue", CLI_VALUE_DIR, NULL},                                        \
      {"threads", 0, "PCT", CLI_JOB_THREADS, NULL, NULL, CLI_VALUE_TEXT, "--thread-percentage"}
struct gs_jobs_request;
struct cli_job_opts {
  struct gs_jobs_request *req;
  const char *jobs_dir, *user, *memory;
  bool no_wait;
};
int cli_job_opt(struct cli *c, int ch, const char *value, void *arg);
/* The caller's account name (effective uid), or "uid<N>". */
const char *cli_login_name(void);
/* Checks the request against the machine and fills req->gpu from -i. */
int cli_job_request(struct cli *c, struct cli_job_opts *o, struct gs_backend **b);

/* The apply lock and journal (cmd_layout.c): $GPUSLICE_APPLY_LOCK, else
 * beside the emulator's state, else /var/lib/gpuslice/apply. */
void cli_apply_lock_path(struct gs_backend *b, char out[PATH_MAX]);

/* Under systemd ($NOTIFY_SOCKET): serve's readiness, reloads, drain and
 * worker count told through sd_notify, and watchdog pings at half of
 * $WATCHDOG_USEC; nothing otherwise (service.c). */
struct gs_serve_config;
void cli_service_serve(struct gs_serve_config *sc);

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

/* Parses argv with getopt_long by the running verb's options (c->verb):
 * -i and --json where the verb has them, -h always, the rest handed to
 * on_opt (which returns 0 or an exit status). A deprecated spelling warns
 * once on stderr. Returns the index of the first operand (> 0); 0 after
 * printing --help; or -(exit status). */
int cli_getopt(struct cli *c, int argc, char **argv,
               int (*on_opt)(struct cli *, int, const char *, void *), void *arg);
/* "usage: gpuslice gi create [options] PROFILE..." for messages. */
const char *cli_synopsis(const struct cli *c);
/* Parses a DURATION option's value (docs/cli.md, "Durations"): a number with
 * us, ms, s, m or h, or a bare number in `bare_unit_us` (the option's old
 * unit; 0: none), from min_us to max_us. Returns 0 or GS_EXIT_USAGE after a
 * message naming the option. cli_duration_in gives it in whole units of
 * unit_us (1000: milliseconds), a part of one rounding up. */
int cli_duration(const char *option, const char *value, uint64_t bare_unit_us, uint64_t min_us,
                 uint64_t max_us, uint64_t *out_us);
int cli_duration_in(const char *option, const char *value, uint64_t bare_unit_us, uint64_t min_us,
                    uint64_t max_us, uint64_t unit_us, unsigned *out);
/* Prints "gpuslice: <msg>" for a file named on the command line (or by an
 * environment variable) that cannot be read, written or parsed: exit 2 by
 * docs/cli.md's rule (1 when memory ran out). */
int cli_fail_file(const struct gs_err *err);

/* Orders a GPU's instances as nvidia-smi -lgi lists them: by profile in the
 * model's -lgip order, then by GI ID (seen in real -lgi and -lci outputs). */
void cli_sort_gis(const struct gs_geom_model *m, struct gs_gi_info *gis, unsigned n);

/* printf to stdout, unless --json: a write command's lines in text mode. */
void cli_say(const struct cli *c, const char *fmt, ...) GS_PRINTF(2, 3);
/* A GPU instance and a compute instance as `gi list` and `ci list` print
 * them in JSON (also the elements `gi create` and `ci create` print). */
json_t *cli_gi_json(const struct gs_gi_info *gi);
json_t *cli_ci_json(const struct gs_ci_info *ci);
/* The -i option's help in verbs that take several GPUs, or MIG devices too. */
#define CLI_GPUS_HELP "GPUs: indices, UUIDs or PCI bus ids, comma-separated"
#define CLI_GPUS_MIG_HELP CLI_GPUS_HELP ", or one MIG device's UUID"
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
