/* SPDX-License-Identifier: Apache-2.0 */
/* cmd_list.c: `gpuslice list`, nvidia-smi -L: every GPU and, under it, its
 * MIG devices with their UUIDs (the names CUDA_VISIBLE_DEVICES takes). */
#include "cli/cli.h"

#include <stdlib.h>

static const struct cli_col dev_cols[] = {
    {{"GPU"}, 3, false},
    {{"GI", "ID"}, 3, false},
    {{"CI", "ID"}, 3, false},
    {{"MIG", "Dev"}, 3, false},
    {{"Name"}, 18, true},
    {{"Memory", "MiB"}, 7, false},
    {{"SM"}, 4, false},
    {{"UUID"}, 40, true},
};

static int on_list_opt(struct cli *c, int ch, const char *value, void *arg)
{
  (void)c;
  (void)value;
  if (ch == 'L')
    ((bool *)arg)[0] = true;
  else if (ch == 'T')
    ((bool *)arg)[1] = true;
  else
    return cli_usage("unexpected option");
  return 0;
}

static json_t *device_json(const struct gs_mig_device *d)
{
  return json_pack("{s:i, s:i, s:i, s:s, s:s, s:s, s:s, s:i, s:i}", "mig_dev", d->index, "gi", d->gi,
                   "ci", d->ci, "uuid", d->uuid, "legacy_uuid", d->legacy_uuid, "name", d->name,
                   "gi_profile", d->gi_profile->name, "memory_mib", d->memory_mib, "sms", d->sms);
}

static json_t *gpu_json(const struct gs_gpu_info *info, json_t *devices)
{
  return json_pack("{s:i, s:s, s:s, s:s, s:s, s:b, s:b, s:i, s:o}", "gpu", info->index, "name",
                   info->name, "uuid", info->uuid, "pci_bus_id", info->pci_bus_id, "model",
                   info->model->key, "mig_current", info->mig_current, "mig_pending",
                   info->mig_pending, "memory_mib", info->memory_mib, "mig_devices", devices);
}

/* The "MIG devices:" table of nvidia-smi's main screen. */
static void print_table(const struct gs_gpu_info *info, const struct gs_mig_device *devs, unsigned n,
                        bool *header)
{
  for (unsigned k = 0; k < n; k++) {
    char v[7][GS_GEOM_NAME_SIZE];
    const char *cells[8] = {v[0], v[1], v[2], v[3], v[4], v[5], v[6], devs[k].uuid};
    if (!*header)
      cli_table_begin("MIG devices:", dev_cols, GS_NITEMS(dev_cols));
    *header = true;
    snprintf(v[0], sizeof(v[0]), "%u", info->index);
    snprintf(v[1], sizeof(v[1]), "%u", devs[k].gi);
    snprintf(v[2], sizeof(v[2]), "%u", devs[k].ci);
    snprintf(v[3], sizeof(v[3]), "%u", devs[k].index);
    snprintf(v[4], sizeof(v[4]), "%s", devs[k].name);
    snprintf(v[5], sizeof(v[5]), "%u", devs[k].memory_mib);
    snprintf(v[6], sizeof(v[6]), "%u", devs[k].sms);
    cli_table_row(dev_cols, GS_NITEMS(dev_cols), cells, 1);
  }
}

/* Keeps only the MIG device -i named; returns the new count. */
static unsigned keep_selected(const struct cli *c, struct gs_mig_device *devs, unsigned n)
{
  for (unsigned k = 0; k < n; k++)
    if (devs[k].gi == c->mig_gi && devs[k].ci == c->mig_ci) {
      devs[0] = devs[k];
      return 1;
    }
  return 0;
}

static const struct cli_opt list_opts[] = {
    CLI_OPT_GPUS("every GPU", CLI_GPUS_MIG_HELP),
    {"legacy-uuids", 0, NULL, 'L', NULL,
     "MIG-GPU-<uuid>/<gi>/<ci> names, as drivers before R470 used", CLI_VALUE_TEXT, NULL},
    {"table", 0, NULL, 'T', NULL, "the MIG devices table of nvidia-smi's main screen",
     CLI_VALUE_TEXT, NULL},
    CLI_OPT_JSON("print JSON (docs/cli.md, \"JSON output\")"),
    {NULL, 'L', NULL, 'L', NULL, NULL, CLI_VALUE_TEXT, "--legacy-uuids"},
    {NULL, 'T', NULL, 'T', NULL, NULL, CLI_VALUE_TEXT, "--table"},
    {0},
};

static const struct cli_spec list_spec = {
    .opts = list_opts,
    .about = "As `nvidia-smi -L`: each GPU and, under it, its MIG devices with the UUIDs\n"
             "CUDA_VISIBLE_DEVICES takes.",
    .examples = "gpuslice list\ngpuslice list --table\ngpuslice list --json | jq -r "
                "'.[].mig_devices[].uuid'",
};

static int run_list(struct cli *c, int argc, char **argv)
{
  bool flags[2] = {false, false}, header = false;
  unsigned gpus[GS_BACKEND_MAX_GPUS];
  struct gs_mig_device *devs = NULL;
  struct gs_backend *b;
  struct gs_err err = {0};
  json_t *arr = NULL;
  int n, rc = GS_EXIT_OK, first = cli_getopt(c, argc, argv, on_list_opt, flags);
  if (first <= 0)
    return -first;
  if (first < argc)
    return cli_usage("%s: unexpected argument; usage: %s", argv[first], cli_synopsis(c));
  c->mig_ok = true;
  if ((n = cli_select_gpus(c, gpus)) < 0)
    return -n;
  cli_backend(c, &b);
  devs = calloc(GS_BACKEND_MAX_MIG_DEVICES, sizeof(*devs));
  arr = json_array();
  for (int i = 0; devs && i < n && rc == GS_EXIT_OK; i++) {
    struct gs_gpu_info info;
    unsigned nd = 0;
    json_t *jd;
    if (b->ops->gpu_info(b, &err, gpus[i], &info) != 0 ||
        b->ops->mig_devices(b, &err, gpus[i], devs, &nd) != 0) {
      rc = cli_fail(&err);
      break;
    }
    if (c->mig_sel)
      nd = keep_selected(c, devs, nd);
    if (c->json) {
      jd = json_array();
      for (unsigned k = 0; k < nd; k++)
        json_array_append_new(jd, device_json(&devs[k]));
      json_array_append_new(arr, gpu_json(&info, jd));
    } else if (flags[1]) {
      print_table(&info, devs, nd, &header);
    } else {
      printf("GPU %u: %s (UUID: %s)\n", info.index, info.name, info.uuid);
      for (unsigned k = 0; k < nd; k++)
        printf("  MIG %-11s Device %2u: (UUID: %s)\n", devs[k].name, devs[k].index,
               flags[0] ? devs[k].legacy_uuid : devs[k].uuid);
    }
  }
  if (!devs)
    rc = cli_fail(&(struct gs_err){GS_E_NO_MEMORY, "out of memory listing MIG devices"});
  free(devs);
  if (rc == GS_EXIT_OK && c->json)
    return cli_print_json(arr);
  if (rc == GS_EXIT_OK && flags[1] && !header)
    printf("No MIG devices found\n");
  json_decref(arr);
  return rc;
}

const struct cli_verb cli_verbs_list[] = {
    {NULL, "list", run_list, "GPUs and MIG devices with UUIDs (nvidia-smi -L)", false, &list_spec,
     false},
    {0},
};
