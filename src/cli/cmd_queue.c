/* SPDX-License-Identifier: Apache-2.0 */
/* cmd_queue.c: the slice queue: `gpuslice queue submit` (a job file in the
 * spool directory), `gpuslice queue run` (starts queued jobs in fair order as
 * slices free up; jobs keep running if it stops; its events, logged by the
 * jobs layer, are lines on stderr), `gpuslice jobs` (queued, running and finished jobs, why queued
 * ones wait, their logs) and `gpuslice jobs log`. Parsing and printing only. */
#include "cli/cli.h"
#include "jobs/jobs.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { O_PER_USER = 400, O_MAX_RUNNING, O_UNTIL_EMPTY, O_POLL, O_QDIR, O_GRACE };

#define JOBS_DIR_OPT                                                                               \
  {"jobs-dir", 0, "DIR", O_QDIR, "$GPUSLICE_JOBS_DIR, or beside the emulator's state",             \
   "the claims ledger and queue", CLI_VALUE_DIR, NULL}

static const struct cli_opt submit_opts[] = {
    CLI_JOB_OPTS,
    CLI_OPT_JSON("print {id, user, dir} as JSON"),
    {0},
};

static const struct cli_spec submit_spec = {
    .operands = "-- COMMAND ARGS...",
    .operand = CLI_VALUE_COMMAND,
    .opts = submit_opts,
    .about = "Writes a job file to the queue's spool directory and prints the job's id; `queue run`\n"
             "starts it on a slice when one frees up, fairly between users (docs/jobs.md).",
    .examples = "gpuslice queue submit --profile 3g.20gb -- python train.py --epochs 3",
};

static int run_submit(struct cli *c, int argc, char **argv)
{
  struct gs_jobs_job *job = calloc(1, sizeof(*job));
  struct cli_job_opts o = {0};
  struct gs_backend *b;
  struct gs_err err = {0};
  char dir[PATH_MAX];
  int first, rc = 0;
  if (!job)
    return cli_fail(&(struct gs_err){GS_E_NO_MEMORY, "out of memory"});
  o.req = &job->req;
  if ((first = cli_getopt(c, argc, argv, cli_job_opt, &o)) <= 0) {
    rc = -first;
    goto out;
  }
  if (first >= argc || strcmp(argv[first - 1], "--") != 0) {
    rc = cli_usage("give the command after `--`; usage: %s", cli_synopsis(c));
    goto out;
  }
  if (argc - first > GS_JOBS_MAX_ARGS) {
    rc = cli_usage("a queued command takes at most %d words", GS_JOBS_MAX_ARGS);
    goto out;
  }
  if ((rc = cli_job_request(c, &o, &b)) != 0)
    goto out;
  for (int i = first; i < argc; i++) {
    if (strlen(argv[i]) >= GS_JOBS_ARG_SIZE) {
      rc = cli_usage("argument %d of the command is longer than %d bytes", i - first + 1,
                     GS_JOBS_ARG_SIZE - 1);
      goto out;
    }
    if (!(job->argv[job->argc++] = strdup(argv[i]))) {
      rc = cli_fail(&(struct gs_err){GS_E_NO_MEMORY, "out of memory"});
      goto out;
    }
  }
  /* Who a job is comes from its file's owner; a label other than the
   * account's own would only mislead, so it is root's alone. */
  if (geteuid() != 0 && o.user && strcmp(o.user, cli_login_name()) != 0) {
    rc = cli_usage("--user %s: only root labels a job with another name; your jobs are %s's",
                   o.user, cli_login_name());
    goto out;
  }
  snprintf(job->user, sizeof(job->user), "%s", o.user);
  job->uid = (unsigned)getuid();
  if (gs_jobs_dir(&err, b, o.jobs_dir, dir) != 0 || gs_jobs_submit(&err, dir, job) != 0) {
    rc = cli_fail(&err);
    goto out;
  }
  if (c->json)
    rc = cli_print_json(json_pack("{s:s, s:s, s:s}", "id", job->id, "user", job->user, "dir", dir));
  else
    printf("%s\n", job->id);
out:
  gs_jobs_job_clear(job);
  free(job);
  return rc;
}

/* --jobs-dir alone: the option of cancel and jobs. */
static int on_dir_opt(struct cli *c, int ch, const char *value, void *arg)
{
  (void)c;
  (void)ch;
  *(const char **)arg = value;
  return 0;
}

/* The options of a read command that takes --jobs-dir alone: its directory
 * into dir. As cli_getopt: > 0 when dir is filled, 0 after --help, or
 * -(exit status). */
static int dir_only(struct cli *c, int argc, char **argv, char dir[PATH_MAX])
{
  const char *jobs_dir = NULL;
  struct gs_backend *b;
  struct gs_err err = {0};
  int first, rc;
  if ((first = cli_getopt(c, argc, argv, on_dir_opt, &jobs_dir)) <= 0)
    return first;
  if (first < argc)
    return -cli_usage("unexpected argument '%s'; usage: %s", argv[first], cli_synopsis(c));
  if ((rc = cli_backend(c, &b)) != 0)
    return -rc;
  return gs_jobs_dir(&err, b, jobs_dir, dir) != 0 ? -cli_fail(&err) : 1;
}

/* ---- queue cancel ---- */

static const struct cli_opt cancel_opts[] = {
    JOBS_DIR_OPT,
    CLI_OPT_JSON("print what was done as JSON: [{id, action}]"),
    {0},
};

static const struct cli_spec cancel_spec = {
    .operands = "ID...",
    .operand = CLI_VALUE_JOB,
    .opts = cancel_opts,
    .about = "A queued job never starts; a running one is sent SIGTERM.",
    .examples = "gpuslice queue cancel j12 j13",
};

static int run_cancel(struct cli *c, int argc, char **argv)
{
  const char *jobs_dir = NULL;
  struct gs_backend *b;
  struct gs_err err = {0};
  char dir[PATH_MAX];
  json_t *done;
  int first, rc, worst = GS_EXIT_OK;
  if ((first = cli_getopt(c, argc, argv, on_dir_opt, &jobs_dir)) <= 0)
    return -first;
  if (first >= argc)
    return cli_usage("name the jobs to cancel; usage: %s", cli_synopsis(c));
  if ((rc = cli_backend(c, &b)) != 0)
    return rc;
  if (gs_jobs_dir(&err, b, jobs_dir, dir) != 0)
    return cli_fail(&err);
  done = json_array();
  for (int i = first; i < argc; i++) {
    enum gs_jobs_state was;
    const char *what;
    if (gs_jobs_cancel(&err, dir, argv[i], &was) != 0) {
      rc = cli_fail(&err);
      worst = rc > worst ? rc : worst;
      continue;
    }
    what = was == GS_JOBS_QUEUED ? "cancelled" : "sent SIGTERM";
    cli_say(c, "%s %s\n", argv[i], what);
    json_array_append_new(done, json_pack("{s:s, s:s}", "id", argv[i], "action", what));
  }
  if (c->json)
    cli_print_json(done);
  else
    json_decref(done);
  return worst;
}

/* ---- queue run ---- */

static volatile int stop_flag;

static void on_stop(int sig)
{
  (void)sig;
  stop_flag = 1;
}

/* After --until-empty: the jobs it left queued, which no slice of the
 * current layout can take; 0 when there are none, else the exit status. */
static int left_queued(const char *dir)
{
  struct gs_jobs_job *jobs;
  struct gs_err err = {0};
  unsigned n, left = 0;
  if (gs_jobs_list(&err, dir, NULL, NULL, &jobs, &n) != 0)
    return cli_fail(&err);
  for (unsigned i = 0; i < n; i++) {
    if (jobs[i].state != GS_JOBS_QUEUED || jobs[i].waits != GS_JOBS_WAIT_LAYOUT)
      continue;
    gs_log_notice("queue", "%s stays queued: %s", jobs[i].id, jobs[i].reason);
    left++;
  }
  gs_jobs_list_free(jobs, n);
  if (left)
    gs_log_warn(NULL, "queue run --until-empty: %u job%s cannot run on this machine's current "
                "layout and stay%s queued; make the slices they need (`gpuslice apply`) or "
                "cancel them", left, left == 1 ? "" : "s", left == 1 ? "s" : "");
  return left ? GS_EXIT_FAILED : GS_EXIT_OK;
}

struct queue_opts {
  struct gs_jobs_queue_opts q;
  const char *jobs_dir;
};

static int number(const char *v, const char *name, unsigned max, unsigned *out)
{
  char *end;
  unsigned long n = strtoul(v, &end, 10);
  if (!*v || *end || n > max)
    return cli_usage("%s %s: expected a number from 0 to %u", name, v, max);
  *out = (unsigned)n;
  return 0;
}

static int on_queue_opt(struct cli *c, int ch, const char *value, void *arg)
{
  struct queue_opts *o = arg;
  (void)c;
  switch (ch) {
  case O_PER_USER: return number(value, "--max-per-user", 100000, &o->q.max_per_user);
  case O_MAX_RUNNING: return number(value, "--max-running", 100000, &o->q.max_running);
  /* a bare number is ms, as the old --poll-ms and --grace-ms took it */
  case O_POLL: return cli_duration_in("--poll-interval", value, 1000, 0, 60000000ull, 1000, &o->q.poll_ms);
  case O_GRACE:
    return cli_duration_in("--grace-period", value, 1000, 0, 600000000ull, 1000, &o->q.grace_ms);
  case O_UNTIL_EMPTY: o->q.until_empty = true; return 0;
  case O_QDIR: o->jobs_dir = value; return 0;
  default: return cli_usage("unexpected option");
  }
}

static const struct cli_opt queue_opts[] = {
    {"max-per-user", 0, "N", O_PER_USER, "0: no limit", "running jobs per user at most",
     CLI_VALUE_TEXT, NULL},
    {"max-running", 0, "N", O_MAX_RUNNING, "0: no limit", "running jobs at most", CLI_VALUE_TEXT,
     NULL},
    {"until-empty", 0, NULL, O_UNTIL_EMPTY, NULL, "stop when the queue is empty and no job runs",
     CLI_VALUE_TEXT, NULL},
    {"poll-interval", 0, "DURATION", O_POLL, "200ms",
     "how often it looks for free slices and ended jobs (a bare number is ms)", CLI_VALUE_TEXT,
     NULL},
    {"grace-period", 0, "DURATION", O_GRACE, "5s",
     "an ended job's leftovers get SIGTERM, then SIGKILL this much later (a bare number is ms)",
     CLI_VALUE_TEXT, NULL},
    JOBS_DIR_OPT,
    {"poll-ms", 0, "MS", O_POLL, NULL, NULL, CLI_VALUE_TEXT, "--poll-interval"},
    {"grace-ms", 0, "MS", O_GRACE, NULL, NULL, CLI_VALUE_TEXT, "--grace-period"},
    {0},
};

static const struct cli_spec queue_spec = {
    .opts = queue_opts,
    .about = "Starts queued jobs as slices free up, fairly between users, until SIGTERM (running jobs\n"
             "carry on under their shepherds). One per jobs directory.",
    .examples = "gpuslice queue run --max-per-user 2\ngpuslice queue run --until-empty --poll-interval 250ms",
};

static int run_queue(struct cli *c, int argc, char **argv)
{
  struct queue_opts o = {0};
  struct gs_backend *b;
  struct gs_err err = {0};
  struct sigaction sa = {0};
  char dir[PATH_MAX];
  int first, rc;
  if ((first = cli_getopt(c, argc, argv, on_queue_opt, &o)) <= 0)
    return -first;
  if (first < argc)
    return cli_usage("unexpected argument '%s'; usage: %s", argv[first], cli_synopsis(c));
  if ((rc = cli_backend(c, &b)) != 0)
    return rc;
  if (gs_jobs_dir(&err, b, o.jobs_dir, dir) != 0)
    return cli_fail(&err);
  sa.sa_handler = on_stop;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  o.q.cfg = &c->cfg;
  o.q.stop = &stop_flag;
  cli_log_to_stderr(); /* its events are its log; stdout stays free */
  gs_log_info("queue", "serving %s%s", dir, o.q.until_empty ? " (until empty)" : "");
  if (gs_jobs_queue_run(&err, b, dir, &o.q) != 0)
    return cli_fail(&err);
  if (stop_flag) {
    gs_log_notice("queue", "stopped; running jobs carry on under their shepherds");
    return GS_EXIT_OK;
  }
  return o.q.until_empty ? left_queued(dir) : GS_EXIT_OK;
}

/* ---- jobs ---- */

static void fmt_time(double t, char *out, size_t size)
{
  time_t s = (time_t)t;
  struct tm tm;
  if (t <= 0 || !localtime_r(&s, &tm))
    snprintf(out, size, "-");
  else
    strftime(out, size, "%H:%M:%S", &tm);
}

/* Whether a job has (or had) a log: it was handed a slice to run on. */
static bool has_log(const struct gs_jobs_job *j)
{
  return j->state == GS_JOBS_RUNNING || j->state == GS_JOBS_LOST ||
         (j->state == GS_JOBS_DONE && j->started > 0);
}

static json_t *job_json(const char *dir, const struct gs_jobs_job *j)
{
  json_t *argv = json_array();
  char log[PATH_MAX];
  gs_jobs_log_path(dir, j->id, log);
  for (unsigned i = 0; i < j->argc; i++)
    json_array_append_new(argv, json_string(j->argv[i]));
  return json_pack("{s:s, s:s, s:I, s:s, s:s, s:s, s:I, s:o, s:i, s:s, s:s, s:f, s:o, s:o, s:o, "
                   "s:o, s:s, s:o, s:o, s:I, s:s, s:o}",
                   "id", j->id, "user", j->user, "uid", (json_int_t)j->owner,
                   "state", gs_jobs_state_name(j->state), "mode",
                   gs_jobs_mode_name(j->req.mode), "profile", j->req.profile, "memory_mib",
                   (json_int_t)j->req.memory_mib, "argv", argv, "gpu", (int)j->gpu, "slice_profile",
                   j->slice_profile, "slice_uuid", j->slice_uuid, "submitted", j->submitted,
                   "started", j->started > 0 ? json_real(j->started) : json_null(),
                   "ended", j->ended > 0 ? json_real(j->ended) : json_null(),
                   "exit_status", j->state == GS_JOBS_DONE ? json_integer(j->exit_status) : json_null(),
                   "signal", j->signal ? json_integer(j->signal) : json_null(),
                   "reason", j->reason,
                   "waits_for", j->state == GS_JOBS_QUEUED && j->waits
                                    ? json_string(gs_jobs_wait_name(j->waits)) : json_null(),
                   "pid", j->job_pid ? json_integer(j->job_pid) : json_null(),
                   "leftovers_killed", (json_int_t)j->leftovers, "tracking", j->tracking,
                   "log", has_log(j) && log[0] ? json_string(log) : json_null());
}

/* Below the table: why each queued job waits, why one was lost, refused
 * or could not start, and what was left behind. */
static void print_notes(const struct gs_jobs_job *jobs, unsigned n)
{
  for (unsigned i = 0; i < n; i++) {
    const struct gs_jobs_job *j = &jobs[i];
    if (j->state == GS_JOBS_QUEUED && j->reason[0])
      printf("%s waits: %s\n", j->id, j->reason);
    else if (j->state == GS_JOBS_QUEUED)
      printf("%s waits: not looked at yet (is a `gpuslice queue run` serving this "
             "directory?)\n", j->id);
    else if (j->reason[0])
      printf("%s %s: %s\n", j->id, gs_jobs_state_name(j->state), j->reason);
    if (j->leftovers)
      printf("%s: %u leftover process%s killed after the job ended (found by %s)\n", j->id,
             j->leftovers, j->leftovers == 1 ? "" : "es", j->tracking);
  }
}

static void print_jobs(const char *dir, const struct gs_jobs_job *jobs, unsigned n)
{
  char log[PATH_MAX];
  int lw = 3;
  for (unsigned i = 0; i < n; i++) {
    gs_jobs_log_path(dir, jobs[i].id, log);
    if (has_log(&jobs[i]) && (int)strlen(log) > lw)
      lw = (int)strlen(log);
  }
  printf("%-8s %-10s %-9s %-12s %-8s %-8s %-5s %-*s %s\n", "ID", "USER", "STATE", "SLICE",
         "START", "END", "EXIT", lw, "LOG", "COMMAND");
  for (unsigned i = 0; i < n; i++) {
    const struct gs_jobs_job *j = &jobs[i];
    char start[16], end[16], ex[16], cmd[96], slice[64];
    fmt_time(j->started, start, sizeof(start));
    fmt_time(j->ended, end, sizeof(end));
    if (j->state == GS_JOBS_DONE)
      snprintf(ex, sizeof(ex), "%d", j->exit_status);
    else
      snprintf(ex, sizeof(ex), "-");
    gs_jobs_command_text(j, cmd, sizeof(cmd));
    if (j->slice_profile[0])
      snprintf(slice, sizeof(slice), "%s", j->slice_profile);
    else
      gs_jobs_request_text(&j->req, slice, sizeof(slice));
    gs_jobs_log_path(dir, j->id, log);
    printf("%-8s %-10s %-9s %-12s %-8s %-8s %-5s %-*s %s\n", j->id, j->user,
           gs_jobs_state_name(j->state), slice, start, end, ex, lw, has_log(j) ? log : "-", cmd);
  }
  print_notes(jobs, n);
}

struct listing {
  unsigned hidden;  /* other users' jobs */
  int worst;
};

/* A job file left out: another user's is only counted; a bad one is told. */
static void on_list_note(void *arg, const char *name, const struct gs_err *why)
{
  struct listing *l = arg;
  (void)name;
  if (why->code == GS_E_NO_PERMISSION) {
    l->hidden++;
    return;
  }
  fprintf(stderr, "gpuslice: %s; move the file out of the queue (`gpuslice queue run` moves it "
                  "to queue/bad/)\n", why->msg);
  l->worst = GS_EXIT_STATE;
}

static const struct cli_opt dir_json_opts[] = {
    JOBS_DIR_OPT,
    CLI_OPT_JSON("print JSON (docs/jobs.md)"),
    {0},
};

static const struct cli_spec jobs_spec = {
    .opts = dir_json_opts,
    .about = "Queued, running and finished jobs with their slice, start, end, exit status and log,\n"
             "and why each queued one waits (only yours unless you are root).",
    .examples = "gpuslice jobs\ngpuslice jobs --json | jq '.[] | select(.state == \"running\")'",
};

static const struct cli_opt log_opts[] = {
    JOBS_DIR_OPT,
    {0},
};

static const struct cli_spec log_spec = {
    .operands = "ID",
    .operand = CLI_VALUE_JOB,
    .opts = log_opts,
    .about = "Prints a queued job's output (stdout and stderr, <jobs dir>/queue/<ID>.log): only\n"
             "your own jobs' unless you are root.",
    .examples = "gpuslice jobs log j000042\ngpuslice jobs log j000042 | tail -20",
};

static const struct cli_spec claims_spec = {
    .opts = dir_json_opts,
    .about = "The claims ledger: which slice `run`, the queue's jobs and serve's workers hold.",
    .examples = "gpuslice claims",
};

static int run_jobs(struct cli *c, int argc, char **argv)
{
  struct listing l = {0, GS_EXIT_OK};
  struct gs_jobs_job *jobs;
  struct gs_err err = {0};
  char dir[PATH_MAX];
  unsigned n;
  int rc = dir_only(c, argc, argv, dir);
  if (rc <= 0)
    return -rc;
  rc = GS_EXIT_OK;
  if (gs_jobs_list(&err, dir, on_list_note, &l, &jobs, &n) != 0)
    return cli_fail(&err);
  if (c->json) {
    json_t *arr = json_array();
    for (unsigned i = 0; i < n; i++)
      json_array_append_new(arr, job_json(dir, &jobs[i]));
    rc = cli_print_json(arr);
  } else {
    print_jobs(dir, jobs, n);
    if (l.hidden)
      printf("(%u job%s of other users not shown)\n", l.hidden, l.hidden == 1 ? "" : "s");
  }
  gs_jobs_list_free(jobs, n);
  return rc ? rc : l.worst;
}

/* ---- jobs log ---- */

/* Copies fd to stdout; 0 or an exit status. */
static int copy_out(const char *id, int fd)
{
  char buf[65536];
  ssize_t r;
  while ((r = read(fd, buf, sizeof(buf))) != 0) {
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0) {
      struct gs_err err = {0};
      gs_err_set(&err, GS_E_IO, "job %s's log: cannot read it: %s", id, strerror(errno));
      return cli_fail(&err);
    }
    if (fwrite(buf, 1, (size_t)r, stdout) != (size_t)r)
      return GS_EXIT_FAILED; /* stdout closed (a pager quit): nothing to say */
  }
  return fflush(stdout) == 0 ? GS_EXIT_OK : GS_EXIT_FAILED;
}

static int run_log(struct cli *c, int argc, char **argv)
{
  const char *jobs_dir = NULL;
  struct gs_backend *b;
  struct gs_err err = {0};
  char dir[PATH_MAX];
  int first, fd, rc;
  if ((first = cli_getopt(c, argc, argv, on_dir_opt, &jobs_dir)) <= 0)
    return -first;
  if (first != argc - 1)
    return cli_usage("name one job; usage: %s", cli_synopsis(c));
  if ((rc = cli_backend(c, &b)) != 0)
    return rc;
  if (gs_jobs_dir(&err, b, jobs_dir, dir) != 0)
    return cli_fail(&err);
  if (gs_jobs_log_open(&err, dir, argv[first], &fd) != 0)
    return cli_fail(&err);
  rc = copy_out(argv[first], fd);
  close(fd);
  return rc;
}

/* ---- claims ---- */

static json_t *claim_json(const struct gs_jobs_claim *c)
{
  return json_pack("{s:s, s:s, s:I, s:s, s:o, s:s, s:s, s:I, s:b, s:i, s:o, s:f}", "job", c->job,
                   "user", c->user, "uid", (json_int_t)c->uid, "mode", gs_jobs_mode_name(c->mode),
                   "gpu", c->by_uuid ? json_null() : json_integer(c->gpu), "profile", c->profile,
                   "uuid", c->uuid, "memory_mib", (json_int_t)c->memory_mib, "created",
                   c->created, "owner_pid", c->owner_pid,
                   "job_pid", c->job_pid ? json_integer(c->job_pid) : json_null(), "since",
                   c->since);
}

static int run_claims(struct cli *c, int argc, char **argv)
{
  struct gs_jobs_claim *cl;
  struct gs_err err = {0};
  char dir[PATH_MAX], since[16];
  unsigned n;
  int rc;
  if ((rc = dir_only(c, argc, argv, dir)) <= 0)
    return -rc;
  if (gs_jobs_claims(&err, dir, &cl, &n) != 0)
    return cli_fail(&err);
  if (c->json) {
    json_t *arr = json_array();
    for (unsigned i = 0; i < n; i++)
      json_array_append_new(arr, claim_json(&cl[i]));
    free(cl);
    return cli_print_json(arr);
  }
  printf("%-16s %-10s %-6s %-9s %-3s %-8s %-8s %-8s %s\n", "JOB", "USER", "UID", "MODE", "GPU",
         "PROFILE", "PID", "SINCE", "UUID");
  for (unsigned i = 0; i < n; i++) {
    char gpu[8];
    fmt_time(cl[i].since, since, sizeof(since));
    snprintf(gpu, sizeof(gpu), cl[i].by_uuid ? "-" : "%u", cl[i].gpu);
    printf("%-16s %-10s %-6u %-9s %-3s %-8s %-8d %-8s %s\n", cl[i].job, cl[i].user, cl[i].uid,
           gs_jobs_mode_name(cl[i].mode), gpu, cl[i].profile,
           cl[i].job_pid ? cl[i].job_pid : cl[i].owner_pid, since, cl[i].uuid);
  }
  free(cl);
  return GS_EXIT_OK;
}

const struct cli_verb cli_verbs_queue[] = {
    {"queue", "submit", run_submit, "queue a command for a slice (spool directory)", false,
     &submit_spec, false},
    {"queue", "cancel", run_cancel, "cancel queued jobs, or send running ones SIGTERM", false,
     &cancel_spec, false},
    {"queue", "run", run_queue, "start queued jobs as slices free up, fairly between users", true,
     &queue_spec, false},
    {NULL, "jobs", run_jobs, "queued, running and finished jobs", false, &jobs_spec, false},
    {"jobs", "log", run_log, "a queued job's output", false, &log_spec, false},
    {NULL, "claims", run_claims, "who holds which slice: run, queued jobs and serve's workers",
     false, &claims_spec, false},
    {0},
};
