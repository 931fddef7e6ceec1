/* SPDX-License-Identifier: Apache-2.0 */
/* cmd_run.c: `gpuslice run`: claims a slice (a MIG device of a profile, the
 * smallest with enough memory, or a time-sliced or MPS share of a GPU), runs
 * the command pinned to it with its output streamed, returns its exit status
 * and releases the slice (destroying it if it was created for the job). Also
 * the request options `queue submit` shares. Parsing and printing only: the
 * work is the jobs layer's. */
#include "cli/cli.h"
#include "jobs/jobs.h"

#include <errno.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* A job's leftovers: SIGTERM, then SIGKILL this much later. */
#define RUN_GRACE_MS 5000

static const struct cli_opt run_opts[] = {
    CLI_JOB_OPTS,
    {"no-wait", 0, NULL, CLI_JOB_NO_WAIT, NULL, "fail at once when no slice is free",
     CLI_VALUE_TEXT, NULL},
    {0},
};

static const struct cli_spec run_spec = {
    .operands = "-- COMMAND ARGS...",
    .operand = CLI_VALUE_COMMAND,
    .opts = run_opts,
    .about = "Claims a free slice (a MIG device of a profile, the smallest with enough memory, or a\n"
             "time-sliced or MPS share of a GPU), runs the command pinned to it\n"
             "(CUDA_VISIBLE_DEVICES=MIG-<uuid>) with its output streamed, and releases it. Waits\n"
             "while none is free. Exits with the command's status.",
    .examples = "gpuslice run --profile 1g.5gb -- python train.py\n"
                "gpuslice run --memory 8GiB --create -- ./infer\n"
                "gpuslice run --mode mps --thread-percentage 30 --memory 4GiB -- python infer.py",
};

int cli_job_opt(struct cli *c, int ch, const char *value, void *arg)
{
  struct cli_job_opts *o = arg;
  char *end;
  unsigned long v;
  (void)c;
  switch (ch) {
  case CLI_JOB_PROFILE:
    if (strlen(value) >= sizeof(o->req->profile) || !*value)
      return cli_usage("--profile '%.40s': expected a MIG profile such as 1g.5gb", value);
    snprintf(o->req->profile, sizeof(o->req->profile), "%s", value);
    return 0;
  case CLI_JOB_MEMORY: o->memory = value; return 0;
  case CLI_JOB_CREATE: o->req->create = true; return 0;
  case CLI_JOB_DIR: o->jobs_dir = value; return 0;
  case CLI_JOB_NO_WAIT: o->no_wait = true; return 0;
  case CLI_JOB_USER:
    if (!*value || strlen(value) >= GS_JOBS_USER_SIZE || strpbrk(value, "/\n\t "))
      return cli_usage("--user '%.40s': expected a name without spaces or '/', under %d bytes",
                       value, GS_JOBS_USER_SIZE);
    o->user = value;
    return 0;
  case CLI_JOB_MODE:
    if (gs_jobs_mode_parse(value, &o->req->mode) != 0)
      return cli_usage("--mode %s: expected mig (a MIG slice), timeslice or mps (a shared whole "
                       "GPU)", value);
    return 0;
  case CLI_JOB_THREADS:
    v = strtoul(value, &end, 10);
    if (!*value || *end || v < 1 || v > 100)
      return cli_usage("--thread-percentage %s: expected an MPS active thread percentage, 1 to "
                       "100", value);
    o->req->mps_threads = (unsigned)v;
    return 0;
  default: return cli_usage("unexpected option");
  }
}

const char *cli_login_name(void)
{
  static char name[GS_JOBS_USER_SIZE];
  struct passwd *pw;
  if ((pw = getpwuid(geteuid())) != NULL && strlen(pw->pw_name) < sizeof(name))
    snprintf(name, sizeof(name), "%s", pw->pw_name);
  else
    snprintf(name, sizeof(name), "uid%u", (unsigned)geteuid());
  return name;
}

/* The user a job runs for: --user (a label), else the caller's login name. */
static const char *user_name(const struct cli_job_opts *o)
{
  return o->user ? o->user : cli_login_name();
}

int cli_job_request(struct cli *c, struct cli_job_opts *o, struct gs_backend **b)
{
  struct gs_err err = {0};
  unsigned gpus[GS_BACKEND_MAX_GPUS];
  int n, rc;
  struct gs_jobs_request *r = o->req;
  if (o->memory && gs_jobs_parse_size(&err, "--memory", o->memory, &r->memory_mib) != 0)
    return cli_fail(&err);
  if (r->mode == GS_JOBS_MIG && !r->profile[0] && !r->memory_mib)
    return cli_usage("say which slice: --profile 1g.5gb, --memory 8GiB, or --mode timeslice|mps");
  if (r->mode == GS_JOBS_MIG && r->profile[0] && r->memory_mib)
    return cli_usage("give --profile or --memory, not both (--memory picks the smallest profile "
                     "that fits)");
  if (r->mode != GS_JOBS_MIG && r->create)
    return cli_usage("--create is for MIG slices; --mode %s shares an existing device",
                     gs_jobs_mode_name(r->mode));
  if (r->mode == GS_JOBS_TIMESLICE && r->profile[0])
    return cli_usage("--mode timeslice shares a whole GPU; for a MIG device use --profile alone, "
                     "or --mode mps --profile P to share one through MPS");
  if (r->mps_threads && r->mode != GS_JOBS_MPS)
    return cli_usage("--thread-percentage is an MPS client limit; add --mode mps");
  r->gpu = -1;
  if ((rc = cli_backend(c, b)) != 0)
    return rc;
  if (c->gpus) {
    if ((n = cli_select_gpus(c, gpus)) < 0)
      return -n;
    if (n != 1)
      return cli_usage("-i %s: a job runs on one GPU; give one index or UUID", c->gpus);
    r->gpu = (int)gpus[0];
  }
  if (gs_jobs_check(&err, *b, r) != 0)
    return cli_fail(&err);
  o->user = user_name(o);
  return 0;
}

/* ---- run ---- */

static volatile sig_atomic_t got_signal;
static volatile pid_t child_pid;

/* While the job runs, SIGTERM and SIGHUP go to it; SIGINT reaches it from
 * the terminal itself, and we wait for it to end. */
static void on_signal(int sig)
{
  got_signal = sig;
  if (child_pid > 0 && sig != SIGINT)
    kill(child_pid, sig);
}

static void catch_signals(void)
{
  struct sigaction sa = {0};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
}

/* Claims a slice, waiting while none is free unless --no-wait. */
static int claim(struct cli *c, struct gs_backend *b, const char *dir, struct cli_job_opts *o,
                 const char *job, struct gs_jobs_claim *cl)
{
  struct gs_err err = {0};
  bool told = false;
  for (;;) {
    int rc = gs_jobs_claim(&err, b, dir, o->req, job, o->user, getpid(), cl);
    if (rc != GS_E_INSUFFICIENT_RESOURCES || o->no_wait)
      return rc ? cli_fail(&err) : 0;
    if (!told && !c->quiet)
      fprintf(stderr, "gpuslice run: waiting: %s\n", err.msg);
    told = true;
    nanosleep(&(struct timespec){0, 250000000L}, NULL);
    if (got_signal) {
      fprintf(stderr, "gpuslice run: %s while waiting for a slice; nothing ran\n",
              strsignal(got_signal));
      return 128 + got_signal;
    }
  }
}

static int run_on(struct cli *c, struct gs_backend *b, const char *dir, struct cli_job_opts *o,
                  struct gs_jobs_claim *cl, char **argv)
{
  struct gs_err err = {0};
  struct gs_jobs_mps mps;
  struct gs_jobs_track track = {0};
  char **env = NULL;
  int status = 0, sig = 0, rc;
  unsigned left = 0;
  pid_t pid;
  if (cl->mode == GS_JOBS_MPS && gs_jobs_mps_start(&err, b, dir, cl->gpu, cl->uuid, &mps) != 0)
    return cli_fail(&err);
  if (!(env = gs_jobs_env(cl, o->req, dir)))
    return cli_fail(&(struct gs_err){GS_E_NO_MEMORY, "out of memory building the environment"});
  if (!c->quiet)
    fprintf(stderr, "gpuslice run: %s on GPU %u %s %s%s%s\n", cl->job, cl->gpu, cl->profile,
            cl->uuid, cl->created ? " (created for this job)" : "",
            cl->mode == GS_JOBS_MIG ? "" : cl->mode == GS_JOBS_MPS ? " (MPS share)" : " (time-sliced share)");
  if ((rc = gs_jobs_track_begin(&err, cl->job, &track)) == 0)
    rc = gs_jobs_spawn(&err, argv, env, NULL, -1, &track, &pid);
  gs_jobs_strv_free(env);
  if (rc) {
    gs_jobs_track_end(NULL, &track, 0, &left);
    return cli_fail(&err);
  }
  child_pid = pid;
  if (gs_jobs_claim_started(&err, b, dir, cl, pid) != 0 && !c->quiet)
    fprintf(stderr, "gpuslice run: warning: %s\n", err.msg);
  rc = gs_jobs_wait(&err, pid, &status, &sig);
  child_pid = 0;
  /* Whatever the job left behind ends before its slice is released. */
  if (gs_jobs_track_end(rc ? NULL : &err, &track, RUN_GRACE_MS, &left) != 0 || rc)
    return cli_fail(&err);
  if (left && !c->quiet)
    fprintf(stderr, "gpuslice run: %s: killed %u leftover process%s after it ended\n", cl->job,
            left, left == 1 ? "" : "es");
  if (sig && !c->quiet)
    fprintf(stderr, "gpuslice run: %s ended by %s\n", cl->job, strsignal(sig));
  return status;
}

static int run_run(struct cli *c, int argc, char **argv)
{
  struct gs_jobs_request req = {0};
  struct cli_job_opts o = {.req = &req};
  struct gs_jobs_claim cl;
  struct gs_backend *b;
  struct gs_err err = {0};
  char dir[PATH_MAX], job[GS_JOBS_ID_SIZE];
  int first, rc, status;
  if ((first = cli_getopt(c, argc, argv, cli_job_opt, &o)) <= 0)
    return -first;
  if (first >= argc || strcmp(argv[first - 1], "--") != 0)
    return cli_usage("give the command after `--`; usage: %s", cli_synopsis(c));
  if ((rc = cli_job_request(c, &o, &b)) != 0)
    return rc;
  if (gs_jobs_dir(&err, b, o.jobs_dir, dir) != 0)
    return cli_fail(&err);
  snprintf(job, sizeof(job), "run-%d", (int)getpid());
  catch_signals();
  if ((rc = claim(c, b, dir, &o, job, &cl)) != 0)
    return rc;
  status = run_on(c, b, dir, &o, &cl, argv + first);
  if (gs_jobs_release(&err, b, dir, &cl) != 0)
    fprintf(stderr, "gpuslice run: releasing %s: %s\n", cl.uuid, err.msg);
  else if (!c->quiet)
    fprintf(stderr, "gpuslice run: released %s%s\n", cl.uuid, cl.created ? " (destroyed)" : "");
  return status;
}

/* `run` executes a user's command and may wait for a slice: the argument
 * fuzzer must not start it, hence open_ended. */
const struct cli_verb cli_verbs_run[] = {
    {NULL, "run", run_run, "run a command on a free slice (or a shared GPU), then release it", true,
     &run_spec, false},
    {0},
};
