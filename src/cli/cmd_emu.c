/* SPDX-License-Identifier: Apache-2.0 */
/* cmd_emu.c: `gpuslice emu ...`, the controls only an emulated machine has:
 * start over, reboot, GPU reset, emulated processes (to exercise "in use"),
 * the settings that mimic a VM or a non-root caller, and the driver's device
 * files (for Slurm and containers). */
#include "cli/cli.h"

#include <stdlib.h>
#include <string.h>

static const struct cli_opt json_only[] = {
    CLI_OPT_JSON("print JSON (docs/cli.md, \"JSON output\")"),
    {0},
};

static const struct cli_spec status_spec = {
    .opts = json_only,
    .about = "The emulated machine: its state file, seed, driver, GPUs with their MIG modes, and\n"
             "the emulated processes.",
    .examples = "gpuslice emu status\ngpuslice emu status --json",
};

static int run_status(struct cli *c, int argc, char **argv)
{
  struct gs_proc_info *procs = NULL;
  struct gs_backend *b;
  struct gs_err err = {0};
  unsigned ngpu = 0;
  char driver[GS_GEOM_DRIVER_SIZE];
  char seed[GS_EMU_SEED_SIZE];
  json_t *gpus, *jprocs;
  int rc, first = cli_getopt(c, argc, argv, NULL, NULL);
  if (first <= 0)
    return -first;
  if (first < argc)
    return cli_usage("%s: unexpected argument; usage: %s", argv[first], cli_synopsis(c));
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

static const struct cli_opt reset_opts[] = {
    {"seed", 0, "WORD", 'S', "none", "this machine's part of its GPU and MIG UUIDs (seed=WORD in SPEC)",
     CLI_VALUE_TEXT, NULL},
    CLI_OPT_JSON("print the new machine as JSON: {emulate, state}"),
    {NULL, 'S', "WORD", 'S', NULL, NULL, CLI_VALUE_TEXT, "--seed"},
    {0},
};

static const struct cli_spec reset_spec = {
    .opts = reset_opts,
    .about = "Discards the emulated state and starts over with the machine of the global\n"
             "--emulate SPEC (default: one a100-40gb): MIG disabled, no instances.",
    .examples = "gpuslice emu reset --emulate a100-40gb:8\n"
                "gpuslice emu reset --emulate h100-80gb:2,a30-24gb --seed node7",
};

static int run_reset(struct cli *c, int argc, char **argv)
{
  const char *seed = NULL;
  char spec[600];
  struct gs_err err = {0};
  struct gs_backend *b;
  const char *machine;
  int first = cli_getopt(c, argc, argv, on_seed_opt, &seed);
  if (first <= 0)
    return -first;
  if (first < argc)
    return cli_usage("%s: unexpected argument; usage: %s", argv[first], cli_synopsis(c));
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
  machine = c->cfg.emulate && *c->cfg.emulate ? c->cfg.emulate : "a100-40gb";
  if (c->json)
    return cli_print_json(json_pack("{s:s, s:s}", "emulate", machine, "state", gs_emu_state_path(b)));
  printf("Emulated machine reset to %s: MIG disabled, no instances (state: %s)\n", machine,
         gs_emu_state_path(b));
  return GS_EXIT_OK;
}

static const struct cli_opt done_json[] = {
    CLI_OPT_JSON("print the outcome as JSON: {done: true, ...}"),
    {0},
};

static const struct cli_spec reboot_spec = {
    .opts = done_json,
    .about = "As a reboot: instances and processes vanish; MIG mode persists on Ampere, clears on\n"
             "Hopper and later; a pending mode applies.",
    .examples = "gpuslice emu reboot",
};

static int run_reboot(struct cli *c, int argc, char **argv)
{
  struct gs_err err = {0};
  struct gs_backend *b;
  int rc, first = cli_getopt(c, argc, argv, NULL, NULL);
  if (first <= 0)
    return -first;
  if (first < argc)
    return cli_usage("%s: unexpected argument; usage: %s", argv[first], cli_synopsis(c));
  if ((rc = cli_backend(c, &b)) != 0)
    return rc;
  if (gs_emu_reboot(b, &err) != 0)
    return cli_fail(&err);
  if (c->json)
    return cli_print_json(json_pack("{s:b}", "done", 1));
  printf("Rebooted: GPU and compute instances are gone; MIG mode kept on Ampere GPUs, cleared on "
         "Hopper and later\n");
  return GS_EXIT_OK;
}

static const struct cli_opt gpu_reset_opts[] = {
    CLI_OPT_GPUS("none: required", CLI_GPUS_HELP),
    CLI_OPT_JSON("print the GPUs reset as JSON: [{gpu}]"),
    {0},
};

static const struct cli_spec gpu_reset_spec = {
    .opts = gpu_reset_opts,
    .about = "`nvidia-smi --gpu-reset -i N`: applies a pending MIG mode; refused while a process\n"
             "uses the GPU or when resets are blocked (`emu set --reset-blocked on`).",
    .examples = "gpuslice emu gpu-reset -i 0",
};

static int run_gpu_reset(struct cli *c, int argc, char **argv)
{
  unsigned gpus[GS_BACKEND_MAX_GPUS];
  struct gs_err err = {0};
  struct gs_backend *b;
  json_t *arr;
  int n, rc = GS_EXIT_OK, first = cli_getopt(c, argc, argv, NULL, NULL);
  if (first <= 0)
    return -first;
  if (first < argc)
    return cli_usage("%s: unexpected argument; usage: %s", argv[first], cli_synopsis(c));
  if (!c->gpus)
    return cli_usage("emu gpu-reset: name the GPUs with -i (e.g. -i 0)");
  if ((n = cli_select_gpus(c, gpus)) < 0)
    return -n;
  cli_backend(c, &b);
  arr = json_array();
  for (int i = 0; i < n; i++) {
    if (gs_emu_gpu_reset(b, &err, gpus[i]) != 0) {
      rc = cli_fail(&err);
      continue;
    }
    cli_say(c, "GPU %u was successfully reset.\n", gpus[i]);
    json_array_append_new(arr, json_pack("{s:i}", "gpu", gpus[i]));
  }
  if (c->json)
    cli_print_json(arr);
  else
    json_decref(arr);
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

#define PID_OPT {"pid", 0, "PID", 'P', "none: required", "the process id", CLI_VALUE_TEXT, NULL}
#define OLD_PID {NULL, 'P', "PID", 'P', NULL, NULL, CLI_VALUE_TEXT, "--pid"}

static const struct cli_opt proc_add_opts[] = {
    PID_OPT,
    CLI_OPT_GPUS("none: required", "the GPU (one index, UUID or PCI bus id)"),
    {"name", 0, "NAME", 'n', "process", "the process name nvidia-smi would show", CLI_VALUE_TEXT,
     NULL},
    {"gi", 0, "ID", 'g', "none: the whole GPU", "the GPU instance it runs in (with --ci)",
     CLI_VALUE_TEXT, NULL},
    {"ci", 0, "ID", 'c', "none", "the compute instance it runs in (with --gi)", CLI_VALUE_TEXT, NULL},
    {"used-mib", 0, "MIB", 'm', "0", "the memory it uses, MiB", CLI_VALUE_TEXT, NULL},
    CLI_OPT_JSON("print the process as JSON: {pid, name, gpu, gi, ci, used_mib}"),
    OLD_PID,
    {NULL, 'n', "NAME", 'n', NULL, NULL, CLI_VALUE_TEXT, "--name"},
    {NULL, 'g', "ID", 'g', NULL, NULL, CLI_VALUE_TEXT, "--gi"},
    {NULL, 'c', "ID", 'c', NULL, NULL, CLI_VALUE_TEXT, "--ci"},
    {NULL, 'm', "MIB", 'm', NULL, NULL, CLI_VALUE_TEXT, "--used-mib"},
    {0},
};

static const struct cli_spec proc_add_spec = {
    .opts = proc_add_opts,
    .about = "Pretends a process uses a GPU or one MIG device, so that MIG changes meet \"In use\"\n"
             "as on a real machine.",
    .examples = "gpuslice emu proc-add --pid 4242 -i 0 --gi 7 --ci 0 --used-mib 1024",
};

static int proc_json(const struct gs_proc_info *p)
{
  return cli_print_json(json_pack("{s:i, s:s, s:i, s:i, s:i, s:i}", "pid", p->pid, "name", p->name,
                                  "gpu", p->gpu, "gi", p->gi, "ci", p->ci, "used_mib", p->used_mib));
}

static int run_proc_add(struct cli *c, int argc, char **argv)
{
  struct proc_opts o = {.p = {.gi = -1, .ci = -1, .name = "process"}};
  unsigned gpus[GS_BACKEND_MAX_GPUS];
  struct gs_err err = {0};
  struct gs_backend *b;
  int n, first = cli_getopt(c, argc, argv, on_proc_opt, &o);
  if (first <= 0)
    return -first;
  if (first < argc)
    return cli_usage("%s: unexpected argument; usage: %s", argv[first], cli_synopsis(c));
  if (!o.have_pid || !c->gpus)
    return cli_usage("emu proc-add: --pid and -i are required; usage: %s", cli_synopsis(c));
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
  if (c->json)
    return proc_json(&o.p);
  printf("Emulated process %u (%s) now uses GPU %u", o.p.pid, o.p.name, o.p.gpu);
  if (o.p.gi >= 0)
    printf(" GPU instance %d compute instance %d", o.p.gi, o.p.ci);
  printf("\n");
  return GS_EXIT_OK;
}

static const struct cli_opt proc_rm_opts[] = {
    PID_OPT,
    CLI_OPT_JSON("print the outcome as JSON: {pid}"),
    OLD_PID,
    {0},
};

static const struct cli_spec proc_rm_spec = {
    .opts = proc_rm_opts,
    .about = "Ends an emulated process: its GPU or MIG device is free again.",
    .examples = "gpuslice emu proc-rm --pid 4242",
};

static int run_proc_rm(struct cli *c, int argc, char **argv)
{
  struct proc_opts o = {.p = {.gi = -1, .ci = -1}};
  struct gs_err err = {0};
  struct gs_backend *b;
  int rc, first = cli_getopt(c, argc, argv, on_proc_opt, &o);
  if (first <= 0)
    return -first;
  if (first < argc)
    return cli_usage("%s: unexpected argument; usage: %s", argv[first], cli_synopsis(c));
  if (!o.have_pid)
    return cli_usage("emu proc-rm: --pid is required");
  if ((rc = cli_backend(c, &b)) != 0)
    return rc;
  if (gs_emu_proc_remove(b, &err, o.p.pid) != 0)
    return cli_fail(&err);
  if (c->json)
    return cli_print_json(json_pack("{s:i}", "pid", o.p.pid));
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

static const struct cli_opt set_opts[] = {
    {"enforce-root", 0, "on|off", 'R', "off",
     "non-root callers get NO_PERMISSION for MIG changes, as with NVML", CLI_VALUE_CHOICE, NULL},
    {"driver", 0, "VERSION", 'D', "the emulated default (580.65.06)",
     "install another driver (535, 535.183.01) and reboot: its tables apply", CLI_VALUE_TEXT, NULL},
    CLI_OPT_GPUS("every GPU", "the GPUs --reset-blocked and --gi-ids apply to"),
    {"reset-blocked", 0, "on|off", 'B', "off",
     "the GPU cannot be reset (VM passthrough): Ampere mode changes stay pending", CLI_VALUE_CHOICE,
     NULL},
    {"gi-ids", 0, "straight|swapped", 'G', "the board's own",
     "how this board numbers its GPU instances (boards of a model differ)", CLI_VALUE_CHOICE, NULL},
    CLI_OPT_JSON("print the outcome as JSON: {done: true}"),
    {NULL, 'R', "on|off", 'R', NULL, NULL, CLI_VALUE_TEXT, "--enforce-root"},
    {NULL, 'B', "on|off", 'B', NULL, NULL, CLI_VALUE_TEXT, "--reset-blocked"},
    {NULL, 'D', "VERSION", 'D', NULL, NULL, CLI_VALUE_TEXT, "--driver"},
    {NULL, 'G', "straight|swapped", 'G', NULL, NULL, CLI_VALUE_TEXT, "--gi-ids"},
    {0},
};

static const struct cli_spec set_spec = {
    .opts = set_opts,
    .about = "Settings that make the emulated machine behave as a VM, a non-root caller or another\n"
             "driver would.",
    .examples = "gpuslice emu set --enforce-root on\ngpuslice emu set -i 0 --reset-blocked on\n"
                "gpuslice emu set --driver 535",
};

static int run_set(struct cli *c, int argc, char **argv)
{
  struct set_opts o = {-1, -1, -1, NULL};
  unsigned gpus[GS_BACKEND_MAX_GPUS];
  struct gs_err err = {0};
  struct gs_backend *b;
  int n, rc, first = cli_getopt(c, argc, argv, on_set_opt, &o);
  if (first <= 0)
    return -first;
  if (first < argc)
    return cli_usage("%s: unexpected argument; usage: %s", argv[first], cli_synopsis(c));
  if (o.enforce_root < 0 && o.reset_blocked < 0 && o.swapped_ids < 0 && !o.driver)
    return cli_usage("emu set: nothing to set; usage: %s", cli_synopsis(c));
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
  if (c->json)
    return cli_print_json(json_pack("{s:b}", "done", 1));
  printf("Emulator settings updated\n");
  return GS_EXIT_OK;
}

static const struct cli_spec devices_spec = {
    .operands = "DIR",
    .operand = CLI_VALUE_DIR,
    .opts = done_json,
    .about = "Root (mknod): the driver's device files for this emulated machine: DIR/dev/nvidia<N>,\n"
             "nvidiactl, nvidia-caps/nvidia-cap<M>, and DIR/proc/driver/nvidia-caps/mig-minors.",
    .examples = "gpuslice emu devices /run/gpuslice-emu",
};

static int run_devices(struct cli *c, int argc, char **argv)
{
  struct gs_err err = {0};
  struct gs_backend *b;
  unsigned n = 0;
  int rc, first = cli_getopt(c, argc, argv, NULL, NULL);
  if (first <= 0)
    return -first;
  if (first + 1 != argc)
    return cli_usage("emu devices: name one directory; usage: %s", cli_synopsis(c));
  if ((rc = cli_backend(c, &b)) != 0)
    return rc;
  if (gs_emu_devices(b, &err, argv[first]) != 0 || b->ops->gpu_count(b, &err, &n) != 0)
    return cli_fail(&err);
  if (c->json)
    return cli_print_json(json_pack("{s:b, s:s, s:i}", "done", 1, "dir", argv[first], "gpus", n));
  printf("Device files of %u emulated GPU%s in %s/dev (slurm gres --dev-root %s/dev), mig-minors in "
         "%s/proc/driver/nvidia-caps\n", n, n == 1 ? "" : "s", argv[first], argv[first], argv[first]);
  return GS_EXIT_OK;
}

const struct cli_verb cli_verbs_emu[] = {
    {"emu", "status", run_status, "the emulated machine: GPUs, modes, processes", false,
     &status_spec, false},
    {"emu", "reset", run_reset, "start over with a fresh emulated machine (--emulate SPEC)", false,
     &reset_spec, false},
    {"emu", "reboot", run_reboot, "reboot: instances vanish, MIG mode persists on Ampere only",
     false, &reboot_spec, false},
    {"emu", "gpu-reset", run_gpu_reset, "reset GPUs (applies a pending MIG mode)", false,
     &gpu_reset_spec, false},
    {"emu", "proc-add", run_proc_add, "pretend a process uses a GPU or MIG device", false,
     &proc_add_spec, false},
    {"emu", "proc-rm", run_proc_rm, "end an emulated process", false, &proc_rm_spec, false},
    {"emu", "set", run_set, "emulate a VM (no GPU reset) or NVML's root check", false, &set_spec,
     false},
    {"emu", "devices", run_devices, "create the driver's /dev files and mig-minors under DIR",
     false, &devices_spec, false},
    {0},
};
