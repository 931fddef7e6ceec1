/* SPDX-License-Identifier: Apache-2.0 */
/* cmd_mig.c: `gpuslice mig enable|disable|status`, nvidia-smi's `-mig 1|0`
 * and its mig.mode.current/pending query. */
#include "cli/cli.h"

#include <stdio.h>

static const char *mode_word(bool on)
{
  return on ? "Enabled" : "Disabled";
}

/* Reports one GPU's outcome word for word as nvidia-smi does (the MIG user
 * guide's transcripts): the activation code follows the bus id without a
 * space. When the reset is refused (a VM), nvidia-smi prints "Not Supported"
 * where NVML's activationStatus is RESET_REQUIRED. The emulator's own way to
 * reset or reboot goes to stderr, so stdout stays nvidia-smi's. */
static void report_mode(const struct cli *c, bool emulated, const struct gs_gpu_info *info,
                        bool enable, int activation)
{
  const char *bus = info->pci_bus_id;
  if (activation == 0) {
    cli_say(c, "%s MIG Mode for GPU %s\n", enable ? "Enabled" : "Disabled", bus);
    return;
  }
  cli_say(c, "Warning: MIG mode is in pending %s state for GPU %s:%s\n", enable ? "enable" : "disable",
          bus, gs_backend_code_text(activation == GS_E_RESET_REQUIRED ? GS_E_NOT_SUPPORTED : activation));
  if (activation == GS_E_IN_USE)
    cli_say(c, "%s is currently being used by one or more other processes (e.g. CUDA application or a "
           "monitoring application such as another instance of nvidia-smi). Please first kill all "
           "processes using the device and retry the command or reboot the system to make MIG "
           "mode effective.\n",
           bus);
  else
    cli_say(c, "Reboot the system or try nvidia-smi --gpu-reset to make MIG mode effective on GPU "
               "%s\n",
            bus);
  if (emulated && !c->quiet)
    fprintf(stderr, "gpuslice: emulated: `gpuslice emu %s` applies the pending mode\n",
            activation == GS_E_IN_USE ? "proc-rm --pid PID` then `gpuslice emu gpu-reset -i N"
                                      : "reboot");
}

static const struct cli_opt mode_opts[] = {
    CLI_OPT_GPUS("every GPU", CLI_GPUS_HELP),
    CLI_OPT_JSON("print each GPU's outcome as JSON: [{gpu, pci_bus_id, mig_current, "
                 "mig_pending, pending_reason}]"),
    {0},
};

static const struct cli_spec enable_spec = {
    .opts = mode_opts,
    .about = "`nvidia-smi [-i N] -mig 1`. The mode applies at once, or stays pending until a GPU\n"
             "reset when the GPU is in use or cannot be reset (a VM).",
    .examples = "gpuslice mig enable -i 0\ngpuslice mig enable --json",
};

static const struct cli_spec disable_spec = {
    .opts = mode_opts,
    .about = "`nvidia-smi [-i N] -mig 0`: refused while GPU instances exist (destroy them first).",
    .examples = "gpuslice mig disable -i 0   (after `gpuslice gi destroy -i 0`)",
};

static json_t *mode_json(struct gs_backend *b, unsigned gpu, int activation)
{
  struct gs_gpu_info info;
  struct gs_err err = {0};
  if (b->ops->gpu_info(b, &err, gpu, &info) != 0)
    return json_null();
  return json_pack("{s:i, s:s, s:b, s:b, s:s?}", "gpu", gpu, "pci_bus_id", info.pci_bus_id,
                   "mig_current", info.mig_current, "mig_pending", info.mig_pending,
                   "pending_reason", activation ? gs_backend_code_text(activation) : NULL);
}

static int set_mode(struct cli *c, int argc, char **argv, bool enable)
{
  unsigned gpus[GS_BACKEND_MAX_GPUS];
  struct gs_backend *b;
  struct gs_err err = {0};
  json_t *arr;
  int n, first = cli_getopt(c, argc, argv, NULL, NULL), rc = GS_EXIT_OK;
  if (first <= 0)
    return -first;
  if (first < argc)
    return cli_usage("%s: unexpected argument; usage: %s", argv[first], cli_synopsis(c));
  if ((n = cli_select_gpus(c, gpus)) < 0)
    return -n;
  cli_backend(c, &b);
  arr = json_array();
  for (int i = 0; i < n; i++) {
    struct gs_gpu_info info;
    int activation = 0;
    if (b->ops->gpu_info(b, &err, gpus[i], &info) != 0 ||
        b->ops->set_mig_mode(b, &err, gpus[i], enable, &activation) != 0) {
      rc = cli_fail(&err);
      continue;
    }
    report_mode(c, gs_emu_state_path(b) != NULL, &info, enable, activation);
    json_array_append_new(arr, mode_json(b, gpus[i], activation));
  }
  if (rc == GS_EXIT_OK)
    cli_say(c, "All done.\n");
  if (c->json)
    cli_print_json(arr);
  else
    json_decref(arr);
  return rc;
}

static int run_enable(struct cli *c, int argc, char **argv)
{
  return set_mode(c, argc, argv, true);
}

static int run_disable(struct cli *c, int argc, char **argv)
{
  return set_mode(c, argc, argv, false);
}

static const struct cli_opt status_opts[] = {
    CLI_OPT_GPUS("every GPU", CLI_GPUS_HELP),
    CLI_OPT_JSON("print JSON (docs/cli.md, \"JSON output\")"),
    {0},
};

static const struct cli_spec status_spec = {
    .opts = status_opts,
    .about = "As `nvidia-smi --query-gpu=index,pci.bus_id,name,mig.mode.current,mig.mode.pending\n"
             "--format=csv` prints them.",
    .examples = "gpuslice mig status\ngpuslice mig status -i 0 --json",
};

static int run_status(struct cli *c, int argc, char **argv)
{
  unsigned gpus[GS_BACKEND_MAX_GPUS];
  struct gs_backend *b;
  struct gs_err err = {0};
  json_t *arr = json_array();
  int n, first = cli_getopt(c, argc, argv, NULL, NULL);
  if (first <= 0 || (n = cli_select_gpus(c, gpus)) < 0) {
    json_decref(arr);
    return first <= 0 ? -first : -n;
  }
  cli_backend(c, &b);
  if (!c->json)
    printf("index, pci.bus_id, name, mig.mode.current, mig.mode.pending\n");
  for (int i = 0; i < n; i++) {
    struct gs_gpu_info info;
    if (b->ops->gpu_info(b, &err, gpus[i], &info) != 0) {
      json_decref(arr);
      return cli_fail(&err);
    }
    if (c->json)
      json_array_append_new(arr, json_pack("{s:i, s:s, s:s, s:s, s:b, s:b}", "gpu", info.index,
                                           "uuid", info.uuid, "pci_bus_id", info.pci_bus_id, "name",
                                           info.name, "mig_current", info.mig_current,
                                           "mig_pending", info.mig_pending));
    else
      printf("%u, %s, %s, %s, %s\n", info.index, info.pci_bus_id, info.name,
             mode_word(info.mig_current), mode_word(info.mig_pending));
  }
  if (c->json)
    return cli_print_json(arr);
  json_decref(arr);
  return GS_EXIT_OK;
}

const struct cli_verb cli_verbs_mig[] = {
    {"mig", "enable", run_enable, "enable MIG mode (nvidia-smi -mig 1)", false, &enable_spec, false},
    {"mig", "disable", run_disable, "disable MIG mode (nvidia-smi -mig 0)", false, &disable_spec,
     false},
    {"mig", "status", run_status, "current and pending MIG mode per GPU", false, &status_spec,
     false},
    {0},
};
