/* SPDX-License-Identifier: Apache-2.0 */
/* cmd_slurm.c: `gpuslice slurm ...`, the node side of a Slurm cluster on MIG
 * slices: gres.conf and the slurm.conf node line from this node's layout, the
 * Prolog's drift check, the TaskProlog's export of MIG UUIDs, and the
 * relayout of a node under a running cluster (jobs/slurm.h; docs/slurm.md). */
#include "cli/cli.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jobs/slurm.h"

enum { OPT_NODE = 'N', OPT_OUT = 'o', OPT_FILE = 'f', OPT_CONFIG = 'c', OPT_DEV_ROOT = 1000,
       OPT_AUTODETECT, OPT_NODE_LINES, OPT_EXTRA, OPT_GRES_CONF, OPT_NODE_CONF, OPT_SLURMD_RESTART,
       OPT_RESTART_CTLD, OPT_CTLD_RESTART, OPT_TIMEOUT, OPT_SCONTROL, OPT_SRUN };

struct slurm_args {
  struct gs_plan_slurm_opts o;
  const char *out, *gres_conf, *node_conf, *file, *slurmd_restart, *ctld_restart;
  const char *scontrol, *srun;
  bool restart_ctld;
  unsigned timeout;
  char host[HOST_NAME_MAX + 1];
};

#define NODE_OPT                                                                                   \
  {"node", 'N', "NODE", OPT_NODE, "$SLURMD_NODENAME, else the short host name",                    \
   "the node's NodeName", CLI_VALUE_TEXT, NULL}
#define OUT_OPT                                                                                    \
  {"output", 'o', "FILE", OPT_OUT, "stdout", "write the file (atomically) instead", CLI_VALUE_FILE, \
   NULL}
#define GRES_OPT                                                                                   \
  {"gres-conf", 0, "FILE", OPT_GRES_CONF, "gres.conf beside $SLURM_CONF (/etc/slurm)",             \
   "the node's gres.conf", CLI_VALUE_FILE, NULL}
#define DEV_OPT                                                                                    \
  {"dev-root", 0, "DIR", OPT_DEV_ROOT, "/dev", "the directory that stands for /dev", CLI_VALUE_DIR, \
   NULL}
#define AUTO_OPT                                                                                   \
  {"autodetect", 0, NULL, OPT_AUTODETECT, NULL, "AutoDetect=nvml first; the records stay as its checks", \
   CLI_VALUE_TEXT, NULL}
#define EXTRA_OPT                                                                                  \
  {"extra", 0, "WORDS", OPT_EXTRA, "none", "the node line's other words ('CPUs=64 ...')", CLI_VALUE_TEXT, \
   NULL}
#define CONFIG_OPT(help) {"config", 'c', "CONFIG", OPT_CONFIG, NULL, help, CLI_VALUE_CONFIG, NULL}
#define TIMEOUT_OPT                                                                                \
  {"timeout", 0, "DURATION", OPT_TIMEOUT, "5m",                                                    \
   "the bound of each wait: jobs to end, Slurm to see the node (a bare number is seconds)",        \
   CLI_VALUE_TEXT, NULL}
#define TOOL_OPTS                                                                                  \
  {"scontrol", 0, "PROGRAM", OPT_SCONTROL, "scontrol", "Slurm's scontrol", CLI_VALUE_FILE, NULL},   \
      {"srun", 0, "PROGRAM", OPT_SRUN, "srun", "Slurm's srun (the probe jobs)", CLI_VALUE_FILE, NULL}

static const struct cli_opt gres_opts[] = {
    CLI_OPT_GPUS("every GPU", CLI_GPUS_HELP),
    NODE_OPT,
    {"node-lines", 0, NULL, OPT_NODE_LINES, NULL, "every line names the node (a file shared by nodes)",
     CLI_VALUE_TEXT, NULL},
    DEV_OPT,
    AUTO_OPT,
    OUT_OPT,
    {0},
};

static const struct cli_opt node_conf_opts[] = {
    CLI_OPT_GPUS("every GPU", CLI_GPUS_HELP),
    NODE_OPT,
    CONFIG_OPT("the layout's config name: Features=...,mig-CONFIG"),
    EXTRA_OPT,
    OUT_OPT,
    {0},
};

static const struct cli_opt prolog_opts[] = {
    NODE_OPT,
    GRES_OPT,
    {0},
};

static const struct cli_opt relayout_opts[] = {
    {"file", 'f', "FILE", OPT_FILE, NULL, "the layout file, as apply's -f (required)", CLI_VALUE_FILE,
     NULL},
    CONFIG_OPT("the config to apply (required)"),
    {"node-conf", 0, "FILE", OPT_NODE_CONF, NULL,
     "the file with the node's slurm.conf line, which slurm.conf Includes (required)",
     CLI_VALUE_FILE, NULL},
    NODE_OPT,
    GRES_OPT,
    DEV_OPT,
    AUTO_OPT,
    EXTRA_OPT,
    {"slurmd-restart", 0, "CMD", OPT_SLURMD_RESTART, "systemctl restart slurmd",
     "how slurmd is restarted", CLI_VALUE_TEXT, NULL},
    {"restart-controller", 0, NULL, OPT_RESTART_CTLD, NULL,
     "also restart slurmctld, then resume the node and probe it", CLI_VALUE_TEXT, NULL},
    {"ctld-restart", 0, "CMD", OPT_CTLD_RESTART, "systemctl restart slurmctld",
     "how slurmctld is restarted", CLI_VALUE_TEXT, NULL},
    TIMEOUT_OPT,
    TOOL_OPTS,
    {0},
};

static const struct cli_opt resume_opts[] = {
    NODE_OPT,
    CONFIG_OPT("the config the node now runs (for its Features)"),
    GRES_OPT,
    TIMEOUT_OPT,
    TOOL_OPTS,
    {0},
};

static const struct cli_spec gres_spec = {
    .opts = gres_opts,
    .about = "One Name=gpu record per MIG device (Type=<profile>, MultipleFiles= its GPU and\n"
             "nvidia-caps files) and per whole GPU (Type=<model>), for the node's gres.conf.",
    .examples = "gpuslice slurm gres -o /etc/slurm/gres.conf\ngpuslice slurm gres -N node1 --node-lines",
};

static const struct cli_spec node_conf_spec = {
    .opts = node_conf_opts,
    .about = "The slurm.conf NodeName line: Gres= counts per type in gres.conf's order, and\n"
             "Features=mig,<model>[,mig-<CONFIG>] (users pick a layout with sbatch -C).",
    .examples = "gpuslice slurm node-conf -c all-balanced --extra 'CPUs=64 RealMemory=500000'",
};

static const struct cli_spec prolog_spec = {
    .opts = prolog_opts,
    .about = "Slurm's Prolog: exit 1 (Slurm drains the node and requeues the job) when the node's\n"
             "layout is no longer the one its gres.conf was written from.",
    .examples = "gpuslice slurm prolog -N node1 --gres-conf /etc/slurm/gres.conf",
};

static const struct cli_spec task_prolog_spec = {
    .opts = prolog_opts,
    .about = "Slurm's TaskProlog: prints `export CUDA_VISIBLE_DEVICES=MIG-<uuid>,...` for the GPUs\n"
             "Slurm gave the job (SLURM_STEP_GPUS or SLURM_JOB_GPUS: indices in Slurm's order).",
    .examples = "gpuslice slurm task-prolog -N node1",
};

static const struct cli_spec relayout_spec = {
    .opts = relayout_opts,
    .about = "Drains the node, waits for its jobs, applies CONFIG, rewrites gres.conf and the node\n"
             "line, restarts slurmd; with --restart-controller also slurmctld, then resumes the node\n"
             "and runs a probe job per type (else: restart slurmctld, then `gpuslice slurm resume`).",
    .examples = "gpuslice slurm relayout -f layouts.yaml -c all-1g.5gb "
                "--node-conf /etc/slurm/nodes.d/node3.conf",
};

static const struct cli_spec resume_spec = {
    .opts = resume_opts,
    .about = "After slurmctld restarted: waits until it reports the node's new Gres, resumes the\n"
             "node and runs one probe job per type (the end of `slurm relayout`).",
    .examples = "gpuslice slurm resume -N node3 -c all-1g.5gb",
};

static int on_slurm_opt(struct cli *c, int ch, const char *v, void *arg)
{
  struct slurm_args *a = arg;
  const char **slot[] = {[OPT_OUT] = &a->out, [OPT_FILE] = &a->file, [OPT_NODE] = &a->o.node,
                         [OPT_CONFIG] = &a->o.config};
  (void)c;
  if (ch < (int)GS_NITEMS(slot) && slot[ch]) {
    *slot[ch] = v;
    return 0;
  }
  switch (ch) {
  case OPT_DEV_ROOT: a->o.dev_root = v; break;
  case OPT_AUTODETECT: a->o.autodetect = true; break;
  case OPT_NODE_LINES: a->o.node_lines = true; break;
  case OPT_EXTRA: a->o.extra = v; break;
  case OPT_GRES_CONF: a->gres_conf = v; break;
  case OPT_NODE_CONF: a->node_conf = v; break;
  case OPT_SLURMD_RESTART: a->slurmd_restart = v; break;
  case OPT_RESTART_CTLD: a->restart_ctld = true; break;
  case OPT_CTLD_RESTART: a->ctld_restart = v; break;
  case OPT_SCONTROL: a->scontrol = v; break;
  case OPT_SRUN: a->srun = v; break;
  case OPT_TIMEOUT: /* whole seconds; a bare number is seconds */
    return cli_duration_in("--timeout", v, 1000000, 1000000, 86400000000ull, 1000000, &a->timeout);
  default:
    return cli_usage("unexpected option");
  }
  return 0;
}

/* Options, then the defaults Slurm's own daemons would use: the node is
 * $SLURMD_NODENAME (set for prologs) or the short host name; gres.conf sits
 * beside $SLURM_CONF (else /etc/slurm/slurm.conf). */
static int slurm_getopt(struct cli *c, int argc, char **argv, struct slurm_args *a,
                        char gres_buf[PATH_MAX])
{
  const char *conf = getenv("SLURM_CONF"), *slash;
  int first = cli_getopt(c, argc, argv, on_slurm_opt, a);
  if (first <= 0)
    return first;
  if (first < argc)
    return -cli_usage("%s: unexpected argument; usage: %s", argv[first], cli_synopsis(c));
  if (!a->o.node && (a->o.node = getenv("SLURMD_NODENAME")) == NULL) {
    if (gethostname(a->host, sizeof(a->host) - 1) != 0)
      return -cli_usage("cannot read the host name; name the node with -N");
    a->host[strcspn(a->host, ".")] = 0;
    a->o.node = a->host;
  }
  if (!a->gres_conf) {
    conf = conf && *conf ? conf : "/etc/slurm/slurm.conf";
    slash = strrchr(conf, '/');
    snprintf(gres_buf, PATH_MAX, "%.*sgres.conf", slash ? (int)(slash - conf + 1) : 0, conf);
    a->gres_conf = gres_buf;
  }
  return first;
}

/* gres and node-conf: the node's records through one of plan's writers, to
 * stdout or atomically to -o FILE. */
static int write_records(struct cli *c, int argc, char **argv, gs_jobs_slurm_writer fn)
{
  unsigned gpus[GS_BACKEND_MAX_GPUS];
  struct slurm_args a = {0};
  struct gs_backend *b;
  struct gs_err err = {0};
  char gres[PATH_MAX], *text = NULL;
  int ngpu = 0, rc, first = slurm_getopt(c, argc, argv, &a, gres);
  if (first <= 0)
    return -first;
  if ((rc = cli_backend(c, &b)) != 0)
    return rc;
  if (c->gpus && (ngpu = cli_select_gpus(c, gpus)) < 0)
    return -ngpu;
  rc = gs_jobs_slurm_text(&err, b, c->gpus ? gpus : NULL, (unsigned)ngpu, fn, &a.o, &text);
  if (rc == 0 && a.out)
    rc = gs_file_write_atomic(&err, a.out, text, strlen(text));
  else if (rc == 0)
    fputs(text, stdout);
  free(text);
  if (rc == GS_E_INVALID_ARGUMENT)
    return cli_usage("%s", err.msg);
  return rc ? cli_fail(&err) : GS_EXIT_OK;
}

static int run_gres(struct cli *c, int argc, char **argv)
{
  return write_records(c, argc, argv, gs_plan_slurm_gres);
}

static int run_node_conf(struct cli *c, int argc, char **argv)
{
  return write_records(c, argc, argv, gs_plan_slurm_node);
}

/* Reads gres.conf for the prologs: a missing file is the admin's to fix
 * (exit 2, as any file the command line names; Slurm drains on any failure). */
static int read_gres(const char *path, char **text, size_t *len)
{
  struct gs_err err = {0};
  if (gs_file_read(&err, path, 4u << 20, text, len) != 0) {
    fprintf(stderr, "gpuslice: gres.conf %s: %s (name it with --gres-conf)\n", path, err.msg);
    return err.code == GS_E_NO_MEMORY ? GS_EXIT_FAILED : GS_EXIT_USAGE;
  }
  return 0;
}

static int run_prolog(struct cli *c, int argc, char **argv)
{
  struct slurm_args a = {0};
  struct gs_backend *b;
  struct gs_err err = {0};
  char gres[PATH_MAX], *text = NULL;
  size_t len = 0;
  int rc, first = slurm_getopt(c, argc, argv, &a, gres);
  if (first <= 0)
    return -first;
  if ((rc = read_gres(a.gres_conf, &text, &len)) != 0 || (rc = cli_backend(c, &b)) != 0) {
    free(text);
    return rc;
  }
  rc = gs_jobs_slurm_check(&err, b, a.gres_conf, text, len, a.o.node);
  free(text);
  if (rc) {
    fprintf(stderr, "gpuslice: node %s: %s\n", a.o.node, err.msg);
    return GS_EXIT_FAILED;
  }
  return GS_EXIT_OK;
}

/* The job's GPUs as Slurm announces them: device ids in CUDA_VISIBLE_DEVICES
 * (Slurm's gpu/nvml sets them), else the step's indices, else the job's. */
static const char *job_gpus(void)
{
  static const char *const vars[] = {"SLURM_STEP_GPUS", "SLURM_JOB_GPUS", "CUDA_VISIBLE_DEVICES"};
  const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
  if (cvd && (strncmp(cvd, "MIG-", 4) == 0 || strncmp(cvd, "GPU-", 4) == 0))
    return cvd;
  for (unsigned i = 0; i < GS_NITEMS(vars); i++) {
    const char *v = getenv(vars[i]);
    if (v && *v)
      return v;
  }
  return NULL;
}

static int run_task_prolog(struct cli *c, int argc, char **argv)
{
  struct slurm_args a = {0};
  struct gs_backend *b;
  struct gs_err err = {0};
  char gres[PATH_MAX], *text = NULL, uuids[4096];
  const char *gpus = job_gpus();
  size_t len = 0;
  int rc, first = slurm_getopt(c, argc, argv, &a, gres);
  if (first <= 0)
    return -first;
  if (!gpus)
    return GS_EXIT_OK; /* a job without GPUs */
  if ((rc = read_gres(a.gres_conf, &text, &len)) != 0 || (rc = cli_backend(c, &b)) != 0) {
    free(text);
    return rc;
  }
  rc = gs_jobs_slurm_map(&err, b, a.gres_conf, text, len, a.o.node, gpus, uuids, sizeof(uuids));
  free(text);
  if (rc == GS_E_NOT_SUPPORTED) { /* Slurm's value is right; nothing to export */
    fprintf(stderr, "gpuslice: node %s: %s\n", a.o.node, err.msg);
    return GS_EXIT_OK;
  }
  if (rc) {
    fprintf(stderr, "gpuslice: node %s: %s\n", a.o.node, err.msg);
    return GS_EXIT_FAILED;
  }
  printf("export CUDA_VISIBLE_DEVICES=%s\n", uuids);
  return GS_EXIT_OK;
}

static void say(void *arg, const char *line)
{
  printf("%s%s\n", (const char *)arg, line);
  fflush(stdout);
}

/* This gpuslice's own `apply` for the layout, on the same machine. */
static int apply_argv(struct cli *c, struct gs_backend *b, const struct slurm_args *a, bool dry,
                      char self[PATH_MAX], char *argv[16])
{
  const char *state = gs_emu_state_path(b);
  ssize_t n = readlink("/proc/self/exe", self, PATH_MAX - 1);
  unsigned k = 0;
  if (n <= 0)
    return cli_usage("cannot find this gpuslice (/proc/self/exe)");
  self[n] = 0;
  argv[k++] = self;
  argv[k++] = "-q";
  if (c->cfg.kind) {
    argv[k++] = "--backend";
    argv[k++] = (char *)c->cfg.kind;
  }
  if (state) {
    argv[k++] = "--emu-state";
    argv[k++] = (char *)state;
  }
  argv[k++] = "apply";
  argv[k++] = "-f";
  argv[k++] = (char *)a->file;
  argv[k++] = "-c";
  argv[k++] = (char *)a->o.config;
  if (dry)
    argv[k++] = "--dry-run";
  argv[k] = NULL;
  return 0;
}

static void relayout_defaults(struct slurm_args *a, struct gs_jobs_relayout *r)
{
  r->node = a->o.node;
  r->gres_conf = a->gres_conf;
  r->node_conf = a->node_conf;
  r->slurm = a->o;
  r->slurmd_restart = a->slurmd_restart ? a->slurmd_restart : "systemctl restart slurmd";
  r->ctld_restart = a->restart_ctld ? a->ctld_restart ? a->ctld_restart : "systemctl restart slurmctld"
                                    : NULL;
  r->scontrol = a->scontrol ? a->scontrol : "scontrol";
  r->srun = a->srun ? a->srun : "srun";
  r->timeout_s = a->timeout ? a->timeout : 300;
  r->say = say;
}

static int run_relayout(struct cli *c, int argc, char **argv)
{
  struct slurm_args a = {0};
  struct gs_jobs_relayout r = {.arg = "slurm relayout: "};
  struct gs_backend *b;
  struct gs_err err = {0};
  char gres[PATH_MAX], self[PATH_MAX], *dry[16], *apply[16];
  int rc, first = slurm_getopt(c, argc, argv, &a, gres);
  if (first <= 0)
    return -first;
  if (!a.file || !a.o.config || !a.node_conf)
    return cli_usage("slurm relayout: -f FILE, -c CONFIG and --node-conf FILE are required; usage: %s",
                     cli_synopsis(c));
  if ((rc = cli_backend(c, &b)) != 0 || (rc = apply_argv(c, b, &a, true, self, dry)) != 0 ||
      (rc = apply_argv(c, b, &a, false, self, apply)) != 0)
    return rc;
  relayout_defaults(&a, &r);
  r.dry_run = dry;
  r.apply = apply;
  if (gs_jobs_slurm_relayout(&err, b, &r) != 0) {
    fprintf(stderr, "gpuslice: slurm relayout of %s: %s\n", a.o.node, err.msg);
    return GS_EXIT_FAILED;
  }
  if (r.ctld_restart)
    printf("Node %s runs config %s; Slurm hands out its new slices\n", a.o.node, a.o.config);
  return GS_EXIT_OK;
}

static int run_resume(struct cli *c, int argc, char **argv)
{
  struct slurm_args a = {0};
  struct gs_jobs_relayout r = {.arg = "slurm resume: "};
  struct gs_backend *b;
  struct gs_err err = {0};
  char gres[PATH_MAX];
  int rc, first = slurm_getopt(c, argc, argv, &a, gres);
  if (first <= 0)
    return -first;
  if ((rc = cli_backend(c, &b)) != 0)
    return rc;
  relayout_defaults(&a, &r);
  if (gs_jobs_slurm_resume(&err, b, &r) != 0) {
    fprintf(stderr, "gpuslice: slurm resume of %s: %s\n", a.o.node, err.msg);
    return GS_EXIT_FAILED;
  }
  return GS_EXIT_OK;
}

const struct cli_verb cli_verbs_slurm[] = {
    {"slurm", "gres", run_gres, "gres.conf for this node's MIG devices and whole GPUs", false,
     &gres_spec, false},
    {"slurm", "node-conf", run_node_conf, "the slurm.conf NodeName line (Gres= counts, Features=)",
     false, &node_conf_spec, false},
    {"slurm", "prolog", run_prolog, "Prolog: fail when the layout drifted from gres.conf", false,
     &prolog_spec, false},
    {"slurm", "task-prolog", run_task_prolog, "TaskProlog: export the job's MIG UUIDs", false,
     &task_prolog_spec, false},
    {"slurm", "relayout", run_relayout, "drain, apply a layout, update Slurm, resume, probe", true,
     &relayout_spec, false},
    {"slurm", "resume", run_resume, "after slurmctld restarted: resume the node and probe it", true,
     &resume_spec, false},
    {0},
};
