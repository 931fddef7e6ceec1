/* SPDX-License-Identifier: Apache-2.0 */
/* cmd_mps.c: `gpuslice mps start|stop|status`: an MPS control daemon per GPU
 * (-i) or per MIG device (--mig UUID), each with its own pipe and log
 * directories; emulated (state only) on emulated GPUs. Parsing and printing
 * only: the work is the jobs layer's. */
#include "cli/cli.h"
#include "jobs/jobs.h"

#include <stdlib.h>
#include <string.h>

enum { O_MIG = 600, O_MDIR };

struct mps_opts {
  const char *mig, *jobs_dir;
};

static int on_mps_opt(struct cli *c, int ch, const char *value, void *arg)
{
  struct mps_opts *o = arg;
  (void)c;
  if (ch == O_MIG)
    o->mig = value;
  else if (ch == O_MDIR)
    o->jobs_dir = value;
  else
    return cli_usage("unexpected option");
  return 0;
}

#define MPS_OPTS                                                                                   \
  CLI_OPT_GPUS("GPU 0", "the GPU the daemon serves (one)"),                                        \
      {"mig", 0, "MIG-UUID", O_MIG, "none", "or the MIG device it serves", CLI_VALUE_TEXT, NULL},   \
      {"jobs-dir", 0, "DIR", O_MDIR, "$GPUSLICE_JOBS_DIR, or beside the emulator's state",         \
       "where the daemons' pipe and log directories live", CLI_VALUE_DIR, NULL}

static const struct cli_opt start_opts[] = {
    MPS_OPTS,
    CLI_OPT_JSON("print the daemon as JSON: {scope, gpu, running, emulated, pid, ...}"),
    {0},
};

static const struct cli_opt stop_opts[] = {
    MPS_OPTS,
    CLI_OPT_JSON("print the outcome as JSON: {scope, stopped}"),
    {0},
};

static const struct cli_opt status_opts[] = {
    {"jobs-dir", 0, "DIR", O_MDIR, "$GPUSLICE_JOBS_DIR, or beside the emulator's state",
     "where the daemons' pipe and log directories live", CLI_VALUE_DIR, NULL},
    CLI_OPT_JSON("print the daemons as JSON"),
    {0},
};

static const struct cli_spec start_spec = {
    .opts = start_opts,
    .about = "`nvidia-cuda-mps-control -d` for one GPU or MIG device, with its own pipe and log\n"
             "directories (emulated GPUs: the state only, no daemon).",
    .examples = "gpuslice mps start -i 0\ngpuslice mps start --mig MIG-5c4b...",
};

static const struct cli_spec stop_spec = {
    .opts = stop_opts,
    .about = "`echo quit | nvidia-cuda-mps-control` for the daemon of that GPU or MIG device.",
    .examples = "gpuslice mps stop -i 0",
};

static const struct cli_spec status_spec = {
    .opts = status_opts,
    .about = "The MPS daemons gpuslice started, with their pipe and log directories.",
    .examples = "gpuslice mps status --json",
};

/* The scope: the MIG device named by --mig (searched on the selected GPUs),
 * else the one GPU -i names (GPU 0 by default). */
static int scope_of(struct cli *c, const struct mps_opts *o, unsigned *gpu, char *scope, size_t size)
{
  static struct gs_mig_device devs[GS_BACKEND_MAX_MIG_DEVICES];
  unsigned gpus[GS_BACKEND_MAX_GPUS];
  struct gs_backend *b;
  struct gs_err err = {0};
  int n = cli_backend(c, &b);
  if (n != 0)
    return n;
  if ((n = cli_select_gpus(c, gpus)) < 0)
    return -n;
  for (int i = 0; o->mig && i < n; i++) {
    unsigned nd = 0;
    if (b->ops->mig_devices(b, &err, gpus[i], devs, &nd) != 0)
      return cli_fail(&err);
    for (unsigned k = 0; k < nd; k++)
      if (strcmp(devs[k].uuid, o->mig) == 0) {
        *gpu = gpus[i];
        snprintf(scope, size, "%s", devs[k].uuid);
        return 0;
      }
  }
  if (o->mig)
    return cli_usage("--mig %s: no MIG device has this UUID (see `gpuslice list`)", o->mig);
  if (c->gpus && n != 1)
    return cli_usage("-i %s: an MPS daemon serves one GPU; give one", c->gpus);
  {
    struct gs_gpu_info info;
    if (b->ops->gpu_info(b, &err, gpus[0], &info) != 0)
      return cli_fail(&err);
    *gpu = gpus[0];
    snprintf(scope, size, "%s", info.uuid);
  }
  return 0;
}

static json_t *mps_json(const struct gs_jobs_mps *m)
{
  return json_pack("{s:s, s:i, s:b, s:b, s:o, s:f, s:s, s:s}", "scope", m->scope, "gpu", (int)m->gpu,
                   "running", m->running, "emulated", m->emulated, "pid",
                   m->pid ? json_integer(m->pid) : json_null(), "started", m->started, "pipe_dir",
                   m->pipe_dir, "log_dir", m->log_dir);
}

static void print_mps(const struct gs_jobs_mps *m)
{
  printf("%-48s GPU %u  %-7s %s", m->scope, m->gpu, m->running ? "running" : "stopped",
         m->emulated ? "EMULATED (no daemon launched)" : "");
  if (!m->emulated && m->pid)
    printf("pid %d", m->pid);
  printf("\n  CUDA_MPS_PIPE_DIRECTORY=%s\n  CUDA_MPS_LOG_DIRECTORY=%s\n", m->pipe_dir, m->log_dir);
}

/* Options, backend and directory. *b stays NULL when the caller must just
 * return the result (an error, or --help printed). */
static int mps_common(struct cli *c, int argc, char **argv, struct mps_opts *o,
                      struct gs_backend **b, char dir[PATH_MAX])
{
  struct gs_err err = {0};
  int first, rc;
  *b = NULL;
  if ((first = cli_getopt(c, argc, argv, on_mps_opt, o)) <= 0)
    return -first;
  if (first < argc)
    return cli_usage("unexpected argument '%s'; usage: %s", argv[first], cli_synopsis(c));
  if ((rc = cli_backend(c, b)) != 0 || gs_jobs_dir(&err, *b, o->jobs_dir, dir) != 0) {
    *b = NULL;
    return rc ? rc : cli_fail(&err);
  }
  return 0;
}

static int run_start_stop(struct cli *c, int argc, char **argv, bool start)
{
  struct mps_opts o = {0};
  struct gs_jobs_mps m;
  struct gs_backend *b;
  struct gs_err err = {0};
  char dir[PATH_MAX], scope[GS_BACKEND_UUID_SIZE];
  unsigned gpu = 0;
  int rc;
  if ((rc = mps_common(c, argc, argv, &o, &b, dir)) != 0 || !b ||
      (rc = scope_of(c, &o, &gpu, scope, sizeof(scope))) != 0)
    return rc;
  if (!start) {
    if (gs_jobs_mps_stop(&err, dir, scope) != 0)
      return cli_fail(&err);
    if (c->json)
      return cli_print_json(json_pack("{s:s, s:b}", "scope", scope, "stopped", 1));
    printf("MPS stopped for %s\n", scope);
    return GS_EXIT_OK;
  }
  if (gs_jobs_mps_start(&err, b, dir, gpu, scope, &m) != 0)
    return cli_fail(&err);
  if (c->json)
    return cli_print_json(mps_json(&m));
  print_mps(&m);
  return GS_EXIT_OK;
}

static int run_start(struct cli *c, int argc, char **argv)
{
  return run_start_stop(c, argc, argv, true);
}

static int run_stop(struct cli *c, int argc, char **argv)
{
  return run_start_stop(c, argc, argv, false);
}

static int run_status(struct cli *c, int argc, char **argv)
{
  struct mps_opts o = {0};
  struct gs_jobs_mps *m;
  struct gs_backend *b;
  struct gs_err err = {0};
  char dir[PATH_MAX];
  unsigned n;
  int rc;
  rc = mps_common(c, argc, argv, &o, &b, dir);
  if (rc || !b)
    return rc;
  if (gs_jobs_mps_list(&err, dir, &m, &n) != 0)
    return cli_fail(&err);
  if (c->json) {
    json_t *arr = json_array();
    for (unsigned i = 0; i < n; i++)
      json_array_append_new(arr, mps_json(&m[i]));
    rc = cli_print_json(arr);
  } else {
    if (!n)
      printf("no MPS daemon has been started (gpuslice mps start -i GPU)\n");
    for (unsigned i = 0; i < n; i++)
      print_mps(&m[i]);
  }
  free(m);
  return rc;
}

const struct cli_verb cli_verbs_mps[] = {
    {"mps", "start", run_start, "start an MPS control daemon for a GPU or MIG device", false,
     &start_spec, false},
    {"mps", "stop", run_stop, "stop it (echo quit | nvidia-cuda-mps-control)", false, &stop_spec,
     false},
    {"mps", "status", run_status, "MPS daemons gpuslice started", false, &status_spec, false},
    {0},
};
