/* cmd_emu.c: `gpuslice emu ...`, the controls only an emulated machine has:
 * start over, reboot, GPU reset, emulated processes (to exercise "in use"),
 * the settings that mimic a VM or a non-root caller, and the driver's device
 * files (for Slurm and containers). */
#include "cli/cli.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static int run_status(struct cli *c, int argc, char **argv)
{
  static const char usage[] = "gpuslice emu status [--json]";
  struct gs_proc_info *procs = NULL;
  struct gs_backend *b;
  struct gs_err err = {0};
  unsigned ngpu = 0;
  char driver[GS_GEOM_DRIVER_SIZE];
  char seed[GS_EMU_SEED_SIZE];
  json_t *gpus, *jprocs;
  int rc, first = cli_getopt(c, argc, argv, usage, NULL, NULL, NULL);
  if (first <= 0)
    return -first;
  if ((rc = cli_backend(c, &b)) != 0)
    return rc;
  if (b->ops->gpu_count(b, &err, &ngpu) != 0)
    return cli_fail(&err);
  if (!(procs = calloc(GS_BACKEND_MAX_PROCS, sizeof(*procs))))
    return cli_fail(&(struct gs_err){GS_E_NO_MEMORY, "out of memory"});
  gpus = json_array();
  jprocs = json_array();
  if (gs_emu_seed(b, &err, seed) != 0) {
    free(procs);
    return cli_fail(&err);
  }
  if (!c->json)
    printf("emulated machine, state file %s%s%s\n", gs_emu_state_path(b), seed[0] ? ", seed " : "",
           seed);
  driver[0] = 0;
  for (unsigned g = 0; g < ngpu && rc == 0; g++) {
    struct gs_gpu_info info;
    unsigned np = 0;
    if (b->ops->gpu_info(b, &err, g, &info) != 0 || b->ops->processes(b, &err, g, procs, &np) != 0) {
      rc = cli_fail(&err);
      break;
    }
    json_array_append_new(gpus, json_pack("{s:i, s:s, s:s, s:b, s:b}", "gpu", g, "model",
                                          info.model->key, "name", info.name, "mig_current",
                                          info.mig_current, "mig_pending", info.mig_pending));
    if (!c->json && !driver[0])
      printf("driver %s (CUDA %u.%u)\n", info.driver, info.cuda_version / 1000,
             info.cuda_version % 1000 / 10);
    snprintf(driver, sizeof(driver), "%s", info.driver);
    if (!c->json)
      printf("GPU %u: %-14s %s, MIG %s (pending %s)\n", g, info.model->key, info.name,
             info.mig_current ? "enabled" : "disabled", info.mig_pending ? "enabled" : "disabled");
    for (unsigned k = 0; k < np; k++) {
      json_array_append_new(jprocs, json_pack("{s:i, s:s, s:i, s:i, s:i, s:i}", "pid", procs[k].pid,
                                              "name", procs[k].name, "gpu", procs[k].gpu, "gi",
                                              procs[k].gi, "ci", procs[k].ci, "used_mib",
                                              procs[k].used_mib));
      if (!c->json)
        printf("  process %u (%s) on GPU instance %d compute instance %d, %u MiB\n", procs[k].pid,
               procs[k].name, procs[k].gi, procs[k].ci, procs[k].used_mib);
    }
  }
  free(procs);
  if (rc == 0 && c->json)
    return cli_print_json(json_pack("{s:s, s:s, s:s, s:o, s:o}", "state", gs_emu_state_path(b),
                                    "driver", driver, "seed", seed, "gpus", gpus, "processes",
                                    jprocs));
  json_decref(gpus);
  json_decref(jprocs);
  return rc;
}

static int on_seed_opt(struct cli *c, int ch, const char *value, void *arg)
{
  (void)c;
  if (ch != 'S')
    return cli_usage("unexpected option");
  *(const char **)arg = value;
  return 0;
}

static int run_reset(struct cli *c, int argc, char **argv)
{
  static const char usage[] = "gpuslice emu reset [--emulate SPEC] [--seed WORD]   (discards the "
                              "emulated state)\n"
                              "  --seed: this machine's part of its GPU and MIG UUIDs (same as "
                              "seed=WORD in SPEC)";
  static const struct option extra[] = {{"seed", required_argument, NULL, 'S'}, {0}};
  const char *seed = NULL;
  char spec[600];
  struct gs_err err = {0};
  struct gs_backend *b;
  int first = cli_getopt(c, argc, argv, usage, extra, on_seed_opt, &seed);
  if (first <= 0)
    return -first;
  if (first < argc)
    return cli_usage("%s: unexpected argument; usage: %s", argv[first], usage);
  if (seed) {
    snprintf(spec, sizeof(spec), "%.500s,seed=%.64s",
             c->cfg.emulate && *c->cfg.emulate ? c->cfg.emulate : "a100-40gb", seed);
    c->cfg.emulate = spec;
  }
  if (gs_emu_reset_state(&err, c->cfg.state_path, c->cfg.emulate) != 0)
    return cli_fail(&err);
  c->quiet = true;
  if (cli_backend(c, &b) != 0)
    return GS_EXIT_STATE;
  printf("Emulated machine reset to %s: MIG disabled, no instances (state: %s)\n",
         c->cfg.emulate && *c->cfg.emulate ? c->cfg.emulate : "a100-40gb", gs_emu_state_path(b));
  return GS_EXIT_OK;
}

static int run_reboot(struct cli *c, int argc, char **argv)
{
  static const char usage[] = "gpuslice emu reboot";
  struct gs_err err = {0};
  struct gs_backend *b;
  int rc, first = cli_getopt(c, argc, argv, usage, NULL, NULL, NULL);
  if (first <= 0)
    return -first;
  if ((rc = cli_backend(c, &b)) != 0)
    return rc;
  if (gs_emu_reboot(b, &err) != 0)
    return cli_fail(&err);
  printf("Rebooted: GPU and compute instances are gone; MIG mode kept on Ampere GPUs, cleared on "
         "Hopper and later\n");
  return GS_EXIT_OK;
}

static int run_gpu_reset(struct cli *c, int argc, char **argv)
{
  static const char usage[] = "gpuslice emu gpu-reset -i GPUS   (nvidia-smi --gpu-reset)";
  unsigned gpus[GS_BACKEND_MAX_GPUS];
  struct gs_err err = {0};
  struct gs_backend *b;
  int n, rc = GS_EXIT_OK, first = cli_getopt(c, argc, argv, usage, NULL, NULL, NULL);
  if (first <= 0)
    return -first;
  if (!c->gpus)
    return cli_usage("emu gpu-reset: name the GPUs with -i (e.g. -i 0)");
  if ((n = cli_select_gpus(c, gpus)) < 0)
    return -n;
  cli_backend(c, &b);
  for (int i = 0; i < n; i++) {
    if (gs_emu_gpu_reset(b, &err, gpus[i]) != 0) {
      rc = cli_fail(&err);
      continue;
    }
    printf("GPU %u was successfully reset.\n", gpus[i]);
  }
  return rc;
}

struct proc_opts {
  struct gs_proc_info p;
  bool have_pid;
};

static int parse_number(const char *value, const char *what, long min, long max, long *out)
{
  char *end;
  long v = strtol(value, &end, 10);
  if (!*value || *end || v < min || v > max)
    return cli_usage("%s '%s': expected a number from %ld to %ld", what, value, min, max);
  *out = v;
  return 0;
}

static int on_proc_opt(struct cli *c, int ch, const char *value, void *arg)
{
  struct proc_opts *o = arg;
  long v = 0;
  int rc = 0;
  (void)c;
  switch (ch) {
  case 'P':
    rc = parse_number(value, "--pid", 1, 4194304, &v);
    o->p.pid = (unsigned)v;
    o->have_pid = true;
    break;
  case 'n':
    if (strlen(value) >= sizeof(o->p.name) || !*value)
      return cli_usage("--name '%.20s...': 1 to %zu bytes", value, sizeof(o->p.name) - 1);
    snprintf(o->p.name, sizeof(o->p.name), "%s", value);
    break;
  case 'g':
    rc = parse_number(value, "--gi", 0, 14, &v);
    o->p.gi = (int)v;
    break;
  case 'c':
    rc = parse_number(value, "--ci", 0, 7, &v);
    o->p.ci = (int)v;
    break;
  case 'm':
    rc = parse_number(value, "--used-mib", 0, 1 << 24, &v);
    o->p.used_mib = (unsigned)v;
    break;
  default:
    return cli_usage("unexpected option");
  }
  return rc;
}

static int run_proc_add(struct cli *c, int argc, char **argv)
{
  static const char usage[] =
      "gpuslice emu proc-add --pid PID [--name NAME] -i GPU [--gi ID --ci ID] [--used-mib MIB]";
  static const struct option extra[] = {
      {"pid", required_argument, NULL, 'P'}, {"name", required_argument, NULL, 'n'},
      {"gi", required_argument, NULL, 'g'},  {"ci", required_argument, NULL, 'c'},
      {"used-mib", required_argument, NULL, 'm'}, {0},
  };
  struct proc_opts o = {.p = {.gi = -1, .ci = -1, .name = "process"}};
  unsigned gpus[GS_BACKEND_MAX_GPUS];
  struct gs_err err = {0};
  struct gs_backend *b;
  int n, first = cli_getopt(c, argc, argv, usage, extra, on_proc_opt, &o);
  if (first <= 0)
    return -first;
  if (!o.have_pid || !c->gpus)
    return cli_usage("emu proc-add: --pid and -i are required; usage: %s", usage);
  if ((n = cli_select_gpus(c, gpus)) < 0)
    return -n;
  if (n != 1)
    return cli_usage("emu proc-add: -i must name exactly one GPU");
  if ((o.p.gi < 0) != (o.p.ci < 0))
    return cli_usage("emu proc-add: give both --gi and --ci (a MIG process), or neither");
  o.p.gpu = gpus[0];
  cli_backend(c, &b);
  if (gs_emu_proc_add(b, &err, &o.p) != 0)
    return cli_fail(&err);
  printf("Emulated process %u (%s) now uses GPU %u", o.p.pid, o.p.name, o.p.gpu);
  if (o.p.gi >= 0)
    printf(" GPU instance %d compute instance %d", o.p.gi, o.p.ci);
  printf("\n");
  return GS_EXIT_OK;
}

static int run_proc_rm(struct cli *c, int argc, char **argv)
{
  static const char usage[] = "gpuslice emu proc-rm --pid PID";
  static const struct option extra[] = {{"pid", required_argument, NULL, 'P'}, {0}};
  struct proc_opts o = {.p = {.gi = -1, .ci = -1}};
  struct gs_err err = {0};
  struct gs_backend *b;
  int rc, first = cli_getopt(c, argc, argv, usage, extra, on_proc_opt, &o);
  if (first <= 0)
    return -first;
  if (!o.have_pid)
    return cli_usage("emu proc-rm: --pid is required");
  if ((rc = cli_backend(c, &b)) != 0)
    return rc;
  if (gs_emu_proc_remove(b, &err, o.p.pid) != 0)
    return cli_fail(&err);
  printf("Emulated process %u exited\n", o.p.pid);
  return GS_EXIT_OK;
}

struct set_opts {
  int enforce_root, reset_blocked;  /* -1 unchanged, 0 off, 1 on */
  int swapped_ids;                  /* -1 unchanged, 0 straight, 1 swapped */
  const char *driver;               /* NULL: unchanged */
};

static int on_off(const char *value, const char *what, int *out)
{
  if (strcmp(value, "on") == 0 || strcmp(value, "1") == 0)
    *out = 1;
  else if (strcmp(value, "off") == 0 || strcmp(value, "0") == 0)
    *out = 0;
  else
    return cli_usage("%s '%s': expected on or off", what, value);
  return 0;
}

static int on_set_opt(struct cli *c, int ch, const char *value, void *arg)
{
  struct set_opts *o = arg;
  (void)c;
  if (ch == 'R')
    return on_off(value, "--enforce-root", &o->enforce_root);
  if (ch == 'B')
    return on_off(value, "--reset-blocked", &o->reset_blocked);
  if (ch == 'D') {
    o->driver = value;
    return 0;
  }
  if (ch == 'G') {
    if (strcmp(value, "straight") == 0 || strcmp(value, "swapped") == 0) {
      o->swapped_ids = value[1] == 'w';
      return 0;
    }
    return cli_usage("--gi-ids '%s': expected straight or swapped", value);
  }
  return cli_usage("unexpected option");
}

static int run_set(struct cli *c, int argc, char **argv)
{
  static const char usage[] =
      "gpuslice emu set [--enforce-root on|off] [--driver VERSION]\n"
      "                 [-i GPUS --reset-blocked on|off] [-i GPUS --gi-ids straight|swapped]\n"
      "  --enforce-root   non-root callers get NO_PERMISSION for MIG changes, as with NVML\n"
      "  --driver         install another driver (535, 535.183.01) and reboot: its tables apply\n"
      "  --reset-blocked  the GPU cannot be reset (VM passthrough): Ampere mode changes stay pending\n"
      "  --gi-ids         how this board numbers its GPU instances (boards of a model differ)";
  static const struct option extra[] = {
      {"enforce-root", required_argument, NULL, 'R'},
      {"reset-blocked", required_argument, NULL, 'B'},
      {"driver", required_argument, NULL, 'D'},
      {"gi-ids", required_argument, NULL, 'G'},
      {0},
  };
  struct set_opts o = {-1, -1, -1, NULL};
  unsigned gpus[GS_BACKEND_MAX_GPUS];
  struct gs_err err = {0};
  struct gs_backend *b;
  int n, rc, first = cli_getopt(c, argc, argv, usage, extra, on_set_opt, &o);
  if (first <= 0)
    return -first;
  if (o.enforce_root < 0 && o.reset_blocked < 0 && o.swapped_ids < 0 && !o.driver)
    return cli_usage("emu set: nothing to set; usage: %s", usage);
  if ((rc = cli_backend(c, &b)) != 0)
    return rc;
  if (o.enforce_root >= 0 && gs_emu_set_enforce_root(b, &err, o.enforce_root) != 0)
    return cli_fail(&err);
  if (o.driver && gs_emu_set_driver(b, &err, o.driver) != 0)
    return cli_fail(&err);
  if (o.reset_blocked >= 0 || o.swapped_ids >= 0) {
    if ((n = cli_select_gpus(c, gpus)) < 0)
      return -n;
    for (int i = 0; i < n; i++)
      if ((o.reset_blocked >= 0 && gs_emu_set_reset_blocked(b, &err, gpus[i], o.reset_blocked)) ||
          (o.swapped_ids >= 0 && gs_emu_set_swapped_ids(b, &err, gpus[i], o.swapped_ids)))
        return cli_fail(&err);
  }
  printf("Emulator settings updated\n");
  return GS_EXIT_OK;
}

static int run_devices(struct cli *c, int argc, char **argv)
{
  static const char usage[] =
      "gpuslice emu devices DIR   (root: mknod)\n"
      "  the driver's device files for this emulated machine: DIR/dev/nvidia<N>, nvidiactl,\n"
      "  nvidia-caps/nvidia-cap<M>, and DIR/proc/driver/nvidia-caps/mig-minors";
  struct gs_err err = {0};
  struct gs_backend *b;
  unsigned n = 0;
  int rc, first = cli_getopt(c, argc, argv, usage, NULL, NULL, NULL);
  if (first <= 0)
    return -first;
  if (first + 1 != argc)
    return cli_usage("emu devices: name one directory; usage: %s", usage);
  if ((rc = cli_backend(c, &b)) != 0)
    return rc;
  if (gs_emu_devices(b, &err, argv[first]) != 0 || b->ops->gpu_count(b, &err, &n) != 0)
    return cli_fail(&err);
  printf("Device files of %u emulated GPU%s in %s/dev (slurm gres --dev-root %s/dev), mig-minors in "
         "%s/proc/driver/nvidia-caps\n", n, n == 1 ? "" : "s", argv[first], argv[first], argv[first]);
  return GS_EXIT_OK;
}

const struct cli_verb cli_verbs_emu[] = {
    {"emu", "status", run_status, "the emulated machine: GPUs, modes, processes", false},
    {"emu", "reset", run_reset, "start over with a fresh emulated machine (--emulate SPEC)", false},
    {"emu", "reboot", run_reboot, "reboot: instances vanish, MIG mode persists on Ampere only", false},
    {"emu", "gpu-reset", run_gpu_reset, "reset GPUs (applies a pending MIG mode)", false},
    {"emu", "proc-add", run_proc_add, "pretend a process uses a GPU or MIG device", false},
    {"emu", "proc-rm", run_proc_rm, "end an emulated process", false},
    {"emu", "set", run_set, "emulate a VM (no GPU reset) or NVML's root check", false},
    {"emu", "devices", run_devices, "create the driver's /dev files and mig-minors under DIR", false},
    {0},
};
