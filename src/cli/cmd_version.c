/* SPDX-License-Identifier: Apache-2.0 */
/* cmd_version.c: `gpuslice version` and `gpuslice --version`: the program's
 * version, and the NVIDIA driver's and NVML's when a driver is loaded. Never
 * opens the emulator: asking for the version changes no state. */
#include "cli/cli.h"
#include "cli/version.h"

#include <string.h>

static const struct cli_opt version_opts[] = {
    CLI_OPT_JSON("print {version, git, driver, nvml} as JSON"),
    {0},
};

static const struct cli_spec version_spec = {
    .opts = version_opts,
    .about = "gpuslice's version (and `git describe` when built from a checkout), and the NVIDIA\n"
             "driver's and NVML's when libnvidia-ml.so.1 loads (nothing about emulated GPUs).",
    .examples = "gpuslice version\ngpuslice --version",
};

/* Fills driver and nvml when the real driver answers; false when there is none. */
static bool driver_versions(struct cli *c, char *driver, char *nvml, size_t size)
{
  struct gs_backend_config cfg = c->cfg;
  struct gs_backend *b = NULL;
  struct gs_err err = {0};
  bool ok;
  cfg.kind = "nvml";
  if (gs_backend_open(&err, &cfg, &b) != 0)
    return false;
  ok = gs_backend_versions(b, &err, driver, nvml, size) == 0;
  gs_backend_close(b);
  return ok;
}

int cli_version(struct cli *c, int argc, char **argv)
{
  char driver[96] = "", nvml[96] = "";
  int first = cli_getopt(c, argc, argv, NULL, NULL);
  bool have;
  if (first <= 0)
    return -first;
  if (first < argc)
    return cli_usage("%s: unexpected argument; usage: %s", argv[first], cli_synopsis(c));
  have = driver_versions(c, driver, nvml, sizeof(driver));
  if (c->json)
    return cli_print_json(json_pack("{s:s, s:s?, s:s?, s:s?}", "version", GS_VERSION, "git",
                                    GS_VERSION_GIT[0] ? GS_VERSION_GIT : NULL, "driver",
                                    have ? driver : NULL, "nvml", have ? nvml : NULL));
  printf("gpuslice %s%s%s%s\n", GS_VERSION, GS_VERSION_GIT[0] ? " (git " : "", GS_VERSION_GIT,
         GS_VERSION_GIT[0] ? ")" : "");
  if (have)
    printf("NVIDIA driver %s, NVML %s\n", driver, nvml);
  return GS_EXIT_OK;
}

const struct cli_verb cli_verbs_version[] = {
    {NULL, "version", cli_version, "the program's version, and the driver's when one is loaded",
     false, &version_spec, false},
    {0},
};
