/* SPDX-License-Identifier: Apache-2.0 */
/* cmd_gi.c: `gpuslice gi profiles|placements|create|list|destroy`, the
 * GPU-instance half of `nvidia-smi mig` (-lgip, -lgipp, -cgi, -lgi, -dgi),
 * printed in nvidia-smi's layout or as JSON. */
#include "cli/cli.h"

#include <stdlib.h>
#include <string.h>

/* The GPUs selected by -i with their info; returns the count or -(exit). */
static int selected_infos(struct cli *c, struct gs_backend **b, struct gs_gpu_info *infos)
{
  unsigned gpus[GS_BACKEND_MAX_GPUS];
  struct gs_err err = {0};
  int n = cli_select_gpus(c, gpus);
  if (n < 0)
    return n;
  cli_backend(c, b);
  for (int i = 0; i < n; i++)
    if ((*b)->ops->gpu_info(*b, &err, gpus[i], &infos[i]) != 0)
      return -cli_fail(&err);
  return n;
}

/* "free" is null while MIG is off: there is no capacity to report then. */
static json_t *profile_json(unsigned gpu, const struct gs_geom_gi_profile *p, int free_count)
{
  return json_pack("{s:i, s:s, s:i, s:o, s:i, s:i, s:f, s:b, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:o}",
                   "gpu", gpu, "name", p->name, "profile_id", p->id, "free",
                   free_count < 0 ? json_null() : json_integer(free_count), "total",
                   p->max_count, "memory_mib", p->memory_mib, "memory_gib",
                   gs_geom_gib(p->memory_mib), "p2p", 0, "sms", p->sms, "ce", p->ce, "dec", p->dec,
                   "enc", p->enc, "jpeg", p->jpeg, "ofa", p->ofa, "compute_slices",
                   p->compute_slices, "placements", cli_placements_json(p->starts, p->span));
}

/* -lgip is printed with nvidia-smi's exact column positions (the 81-column
 * table of current drivers, e.g. an H100's in reference T-H100S), so text
 * that parses nvidia-smi's output parses this too. */
static const char gip_rule[] =
    "+-------------------------------------------------------------------------------+\n";

static void print_profile_header(void)
{
  printf("%s", gip_rule);
  printf("| GPU instance profiles:                                                        |\n"
         "| GPU   Name               ID    Instances   Memory     P2P    SM    DEC   ENC  |\n"
         "|                                Free/Total   GiB              CE    JPEG  OFA  |\n"
         "|===============================================================================|\n");
}

static void print_profile_rows(const struct gs_gpu_info *info, const struct gs_geom_gi_profile *p,
                               int free_count)
{
  char name[GS_GEOM_NAME_SIZE + 4], free_text[32];
  snprintf(name, sizeof(name), "MIG %s", p->name);
  if (free_count < 0)
    snprintf(free_text, sizeof(free_text), "%5s/%-3u", "-", p->max_count);
  else
    snprintf(free_text, sizeof(free_text), "%5d/%-3u", free_count, p->max_count);
  printf("|%4u  %-18s%4u %s      %-11.2f%-7s%-7u%-6u%-4u|\n", info->index, name, p->id, free_text,
         gs_geom_gib(p->memory_mib), "No", p->sms, p->dec, p->enc);
  printf("|%62s%2u%5s%-6u%-4u|\n", "", p->ce, "", p->jpeg, p->ofa);
  printf("%s", gip_rule);
}

static const struct cli_opt read_opts[] = {
    CLI_OPT_GPUS("every GPU", CLI_GPUS_HELP),
    CLI_OPT_JSON("print JSON (docs/cli.md, \"JSON output\")"),
    {0},
};

static const struct cli_spec profiles_spec = {
    .opts = read_opts,
    .about = "The table of `nvidia-smi mig -lgip`, at its column positions: each profile's free and\n"
             "total instances, memory, SMs and engines. Free is - while MIG is off.",
    .examples = "gpuslice gi profiles -i 0\ngpuslice gi profiles --json | jq '.[] | {name, free}'",
};

static int run_profiles(struct cli *c, int argc, char **argv)
{
  struct gs_gpu_info infos[GS_BACKEND_MAX_GPUS];
  struct gs_backend *b;
  struct gs_err err = {0};
  json_t *arr;
  int n, first = cli_getopt(c, argc, argv, NULL, NULL);
  if (first <= 0)
    return -first;
  if (first < argc)
    return cli_usage("%s: unexpected argument; usage: %s", argv[first], cli_synopsis(c));
  if ((n = selected_infos(c, &b, infos)) < 0)
    return -n;
  arr = json_array();
  if (!c->json)
    print_profile_header();
  for (int i = 0; i < n; i++) {
    const struct gs_geom_model *m = infos[i].model;
    for (unsigned k = 0; k < m->ngi; k++) {
      unsigned count = 0;
      int free_count = -1; /* NVML has no remaining capacity while MIG is off */
      if (infos[i].mig_current) {
        if (b->ops->gi_remaining(b, &err, infos[i].index, &m->gi[k], &count) != 0) {
          json_decref(arr);
          return cli_fail(&err);
        }
        free_count = (int)count;
      }
      if (c->json)
        json_array_append_new(arr, profile_json(infos[i].index, &m->gi[k], free_count));
      else
        print_profile_rows(&infos[i], &m->gi[k], free_count);
    }
  }
  if (c->json)
    return cli_print_json(arr);
  json_decref(arr);
  return GS_EXIT_OK;
}

static const struct cli_spec placements_spec = {
    .operands = "[PROFILE...]",
    .operand = CLI_VALUE_PROFILE,
    .opts = read_opts,
    .about = "The lines of `nvidia-smi mig -lgipp`: the memory slices each profile may start at\n"
             "(all profiles, or those named).",
    .examples = "gpuslice gi placements 3g.20gb\ngpuslice gi placements -i 0 --json",
};

static int run_placements(struct cli *c, int argc, char **argv)
{
  struct gs_gpu_info infos[GS_BACKEND_MAX_GPUS];
  struct gs_backend *b;
  json_t *arr;
  int n, first = cli_getopt(c, argc, argv, NULL, NULL);
  if (first <= 0)
    return -first;
  if ((n = selected_infos(c, &b, infos)) < 0)
    return -n;
  arr = json_array();
  for (int i = 0; i < n; i++) {
    const struct gs_geom_model *m = infos[i].model;
    for (unsigned k = 0; k < m->ngi; k++) {
      const struct gs_geom_gi_profile *p = &m->gi[k];
      char list[64];
      bool wanted = first >= argc;
      for (int a = first; a < argc && !wanted; a++)
        wanted = gs_geom_gi_profile_find(m, argv[a]) == p;
      if (!wanted)
        continue;
      cli_format_placements(p->starts, p->span, list, sizeof(list));
      if (c->json)
        json_array_append_new(arr, json_pack("{s:i, s:s, s:i, s:o}", "gpu", infos[i].index,
                                             "name", p->name, "profile_id", p->id, "placements",
                                             cli_placements_json(p->starts, p->span)));
      else
        printf("GPU %2u Profile ID %2u %-11s %s\n", infos[i].index, p->id,
               __builtin_popcount(p->starts) == 1 ? "Placement :" : "Placements:", list);
    }
  }
  for (int a = first; a < argc; a++)
    if (n > 0 && !gs_geom_gi_profile_find(infos[0].model, argv[a])) {
      json_decref(arr);
      return cli_usage("gi placements: unknown profile '%s' for %s; `gpuslice gi profiles` lists them",
                       argv[a], infos[0].model->key);
    }
  if (c->json)
    return cli_print_json(arr);
  json_decref(arr);
  return GS_EXIT_OK;
}

/* ---- create ---- */

struct create_opts {
  int placement;       /* -1: the driver chooses */
  bool with_ci;
  json_t *made;        /* --json: what was created */
};

static int on_create_opt(struct cli *c, int ch, const char *value, void *arg)
{
  struct create_opts *o = arg;
  char *end;
  long v;
  (void)c;
  if (ch == 'C') {
    o->with_ci = true;
    return 0;
  }
  v = strtol(value, &end, 10);
  if (!*value || *end || v < 0 || v >= GS_GEOM_MAX_GRID)
    return cli_usage("--placement '%s': expected a memory-slice start such as 0 or 4 "
                     "(`gpuslice gi placements` lists them)",
                     value);
  o->placement = (int)v;
  return 0;
}

/* The backend says why the GPU has no room; add what the user can do. */
static void no_room_hint(struct gs_err *err, unsigned gpu)
{
  size_t used = strlen(err->msg);
  snprintf(err->msg + used, sizeof(err->msg) - used,
           "; `gpuslice gi profiles -i %u` shows what still fits, `gpuslice gi destroy -i %u "
           "--gi ID` frees room",
           gpu, gpu);
}

static int create_on_gpu(struct cli *c, struct gs_backend *b, const struct gs_gpu_info *info,
                         char words[][GS_GEOM_NAME_SIZE], unsigned n,
                         const struct create_opts *o)
{
  struct gs_geom_slot slots[GS_GEOM_MAX_INSTANCES * 2];
  struct gs_err err = {0};
  char who[GS_GEOM_NAME_SIZE + 16];
  int rc;
  snprintf(who, sizeof(who), "GPU %u (%s)", info->index, info->model->key);
  rc = cli_profile_slots(info->model, who, words, n, slots);
  for (unsigned w = 0; rc == 0 && w < n; w++) {
    struct gs_gi_info gi;
    int start = slots[w].start >= 0 ? slots[w].start : o->placement;
    json_t *made;
    if (b->ops->gi_create(b, &err, info->index, slots[w].profile, start, &gi) != 0) {
      cli_say(c, "Unable to create a GPU instance on GPU %2u using profile %u: %s\n", info->index,
              slots[w].profile->id, gs_backend_code_text(err.code));
      if (err.code == GS_E_INSUFFICIENT_RESOURCES)
        no_room_hint(&err, info->index);
      rc = cli_fail(&err);
      cli_say(c, "Failed to create GPU instances: %s\n", gs_backend_code_text(err.code));
      break;
    }
    cli_say(c, "Successfully created GPU instance ID %2u on GPU %2u using profile MIG %s (ID %2u)\n",
            gi.id, info->index, gi.profile->name, gi.profile->id);
    json_array_append_new(o->made, made = cli_gi_json(&gi));
    if (o->with_ci) {
      struct gs_ci_info ci;
      struct gs_geom_ci_profile cp;
      gs_geom_ci_profile_find(info->model, gi.profile, gi.profile->name, &cp);
      if (b->ops->ci_create(b, &err, info->index, gi.id, cp.id, -1, &ci) != 0) {
        rc = cli_fail(&err);
        break;
      }
      cli_say(c, "Successfully created compute instance ID %2u on GPU %2u GPU instance ID %2u "
                 "using profile MIG %s (ID %2u)\n",
              ci.id, info->index, gi.id, ci.profile.name, ci.profile.id);
      json_object_set_new(made, "ci", cli_ci_json(&ci));
    }
  }
  return rc;
}

static const struct cli_opt create_opts[] = {
    CLI_OPT_GPUS("every GPU", CLI_GPUS_HELP),
    {"placement", 0, "START", 'p', "the driver's choice",
     "the memory slice the instance starts at (one profile only; several: NAME@START)",
     CLI_VALUE_TEXT, NULL},
    {"with-ci", 'C', NULL, 'C', NULL, "also create the default compute instance in each",
     CLI_VALUE_TEXT, NULL},
    CLI_OPT_JSON("print what was created as JSON, as `gi list --json` does"),
    {NULL, 'p', "START", 'p', NULL, NULL, CLI_VALUE_TEXT, "--placement"},
    {0},
};

static const struct cli_spec create_spec = {
    .operands = "PROFILE[,PROFILE...]...",
    .operand = CLI_VALUE_PROFILE,
    .opts = create_opts,
    .about = "`nvidia-smi mig -cgi` (and -C). PROFILE is a name (1g.5gb, MIG 1g.5gb) or an NVIDIA\n"
             "profile ID (19), optionally NAME@START (or NAME:START, as -cgi 9:4 writes it).\n"
             "Every word is checked before anything is created; the first refusal stops the rest.",
    .examples = "gpuslice gi create -i 0 -C 1g.5gb,1g.5gb\n"
                "gpuslice gi create 3g.20gb@0 3g.20gb@4\n"
                "gpuslice gi create 19 --json",
};

static int run_create(struct cli *c, int argc, char **argv)
{
  struct create_opts o = {.placement = -1};
  struct gs_gpu_info infos[GS_BACKEND_MAX_GPUS];
  struct gs_backend *b;
  char words[GS_GEOM_MAX_INSTANCES * 2][GS_GEOM_NAME_SIZE];
  int n, nw, rc = GS_EXIT_OK, first = cli_getopt(c, argc, argv, on_create_opt, &o);
  if (first <= 0)
    return -first;
  if (first >= argc)
    return cli_usage("gi create: name at least one profile; usage: %s", cli_synopsis(c));
  if ((nw = cli_split_profiles(argc - first, argv + first, "gi create", words, GS_NITEMS(words))) < 0)
    return -nw;
  if (o.placement >= 0 && nw > 1)
    return cli_usage("gi create: --placement applies to one profile; for several write NAME@START "
                     "(e.g. 3g.20gb@0 3g.20gb@4)");
  if ((n = selected_infos(c, &b, infos)) < 0)
    return -n;
  o.made = json_array();
  for (int i = 0; i < n; i++) {
    int r = create_on_gpu(c, b, &infos[i], words, (unsigned)nw, &o);
    if (r && !rc)
      rc = r;
  }
  if (c->json) /* what was made, also after a refusal (its message is on stderr) */
    cli_print_json(o.made);
  else
    json_decref(o.made);
  return rc;
}

/* ---- list and destroy ---- */

/* -lgi at nvidia-smi's column positions (current drivers' 59-column table,
 * as an H100's `nvidia-smi mig -lgi` prints it). */
static const char gi_rule[] = "+---------------------------------------------------------+\n";

static void print_gi_header(void)
{
  printf("%s", gi_rule);
  printf("| GPU instances:                                          |\n"
         "| GPU   Name               Profile  Instance   Placement  |\n"
         "|                            ID       ID       Start:Size |\n"
         "|=========================================================|\n");
}

static void print_gi_row(const struct gs_gi_info *gi)
{
  char name[GS_GEOM_NAME_SIZE + 4];
  snprintf(name, sizeof(name), "MIG %s", gi->profile->name);
  printf("|%4u  %-18s%6u%9u%11u:%-6u|\n", gi->gpu, name, gi->profile->id, gi->id, gi->start,
         gi->span);
  printf("%s", gi_rule);
}

static const struct cli_opt list_opts[] = {
    CLI_OPT_GPUS("every GPU", CLI_GPUS_MIG_HELP),
    CLI_OPT_JSON("print JSON (docs/cli.md, \"JSON output\")"),
    {0},
};

static const struct cli_spec list_spec = {
    .opts = list_opts,
    .about = "The table of `nvidia-smi mig -lgi`: each GPU instance's profile, ID and placement.",
    .examples = "gpuslice gi list\ngpuslice gi list -i 0 --json",
};

static int run_list(struct cli *c, int argc, char **argv)
{
  struct gs_gpu_info infos[GS_BACKEND_MAX_GPUS];
  struct gs_backend *b;
  struct gs_err err = {0};
  json_t *arr;
  unsigned shown = 0;
  int n, first = cli_getopt(c, argc, argv, NULL, NULL);
  if (first <= 0)
    return -first;
  if (first < argc)
    return cli_usage("%s: unexpected argument; usage: %s", argv[first], cli_synopsis(c));
  c->mig_ok = true;
  if ((n = selected_infos(c, &b, infos)) < 0)
    return -n;
  arr = json_array();
  for (int i = 0; i < n; i++) {
    struct gs_gi_info gis[GS_GEOM_MAX_INSTANCES];
    unsigned ngi = 0;
    if (!infos[i].mig_current)
      continue;
    if (b->ops->gi_list(b, &err, infos[i].index, gis, &ngi) != 0) {
      json_decref(arr);
      return cli_fail(&err);
    }
    cli_sort_gis(infos[i].model, gis, ngi);
    for (unsigned k = 0; k < ngi; k++) {
      if (c->mig_sel && gis[k].id != c->mig_gi)
        continue;
      if (c->json) {
        json_array_append_new(arr, cli_gi_json(&gis[k]));
        shown++;
        continue;
      }
      if (shown++ == 0)
        print_gi_header();
      print_gi_row(&gis[k]);
    }
  }
  if (c->json)
    return cli_print_json(arr);
  json_decref(arr);
  if (shown == 0)
    printf("No GPU instances found: Not Found\n");
  return GS_EXIT_OK;
}

struct destroy_opts {
  const char *gi_list;
  json_t *gone; /* --json: what was destroyed */
};

static int on_gi_opt(struct cli *c, int ch, const char *value, void *arg)
{
  (void)c;
  if (ch != 'g')
    return cli_usage("unexpected option");
  ((struct destroy_opts *)arg)->gi_list = value;
  return 0;
}

/* Destroys the GIs asked for, in order, stopping at the first that cannot
 * go as nvidia-smi -dgi does ("Unable to destroy GPU instance ID 3 from GPU
 * 0: In use by another client", a real transcript); *why gets its code. */
static int destroy_on_gpu(struct cli *c, struct gs_backend *b, const struct gs_gpu_info *info,
                          const struct destroy_opts *o, unsigned *destroyed, int *why)
{
  struct gs_gi_info gis[GS_GEOM_MAX_INSTANCES];
  unsigned ids[GS_GEOM_MAX_INSTANCES * 2], nid = 0, ngi = 0;
  struct gs_err err = {0};
  int k;
  if (b->ops->gi_list(b, &err, info->index, gis, &ngi) != 0) {
    *why = err.code;
    return cli_fail(&err);
  }
  if (o->gi_list) {
    if ((k = cli_parse_ids(o->gi_list, "--gi", ids, GS_NITEMS(ids))) < 0)
      return GS_EXIT_USAGE;
    nid = (unsigned)k;
  } else {
    for (unsigned g = 0; g < ngi; g++)
      ids[nid++] = gis[g].id;
  }
  for (unsigned g = 0; g < nid; g++) {
    if (b->ops->gi_destroy(b, &err, info->index, ids[g]) != 0) {
      cli_say(c, "Unable to destroy GPU instance ID %2u from GPU %2u: %s\n", ids[g], info->index,
              gs_backend_code_text(err.code));
      *why = err.code;
      return cli_fail(&err);
    }
    (*destroyed)++;
    cli_say(c, "Successfully destroyed GPU instance ID %2u from GPU %2u\n", ids[g], info->index);
    json_array_append_new(o->gone, json_pack("{s:i, s:i}", "gpu", info->index, "id", ids[g]));
  }
  return GS_EXIT_OK;
}

static const struct cli_opt destroy_opts[] = {
    CLI_OPT_GPUS("every GPU with MIG on", CLI_GPUS_MIG_HELP),
    {"gi", 0, "IDS", 'g', "every GPU instance", "the GPU instance IDs to destroy, e.g. 7,8",
     CLI_VALUE_TEXT, NULL},
    CLI_OPT_JSON("print what was destroyed as JSON: [{gpu, id}]"),
    {NULL, 'g', "IDS", 'g', NULL, NULL, CLI_VALUE_TEXT, "--gi"},
    {0},
};

static const struct cli_spec destroy_spec = {
    .opts = destroy_opts,
    .about = "`nvidia-smi mig -dgi [-gi IDS]`: in order, stopping at the first instance that\n"
             "cannot go (e.g. one that still has compute instances: In use by another client).",
    .examples = "gpuslice gi destroy -i 0 --gi 7,8\ngpuslice gi destroy",
};

static int run_destroy(struct cli *c, int argc, char **argv)
{
  struct gs_gpu_info infos[GS_BACKEND_MAX_GPUS];
  struct gs_backend *b;
  struct destroy_opts o = {0};
  char gbuf[12];
  unsigned destroyed = 0;
  int n, why = 0, rc = GS_EXIT_OK;
  int first = cli_getopt(c, argc, argv, on_gi_opt, &o);
  if (first <= 0)
    return -first;
  if (first < argc)
    return cli_usage("%s: unexpected argument; usage: %s", argv[first], cli_synopsis(c));
  c->mig_ok = true;
  if ((n = selected_infos(c, &b, infos)) < 0)
    return -n;
  if (cli_mig_narrow(c, &o.gi_list, NULL, gbuf, NULL) != 0)
    return GS_EXIT_USAGE;
  o.gone = json_array();
  for (int i = 0; i < n && rc == GS_EXIT_OK; i++) {
    if (!infos[i].mig_current && !c->gpus)
      continue;
    rc = destroy_on_gpu(c, b, &infos[i], &o, &destroyed, &why);
  }
  if (rc != GS_EXIT_OK && rc != GS_EXIT_USAGE)
    cli_say(c, "Failed to destroy GPU instances: %s\n", gs_backend_code_text(why));
  else if (rc == GS_EXIT_OK && destroyed == 0)
    cli_say(c, "No GPU instances found: Not Found\n");
  if (c->json && rc != GS_EXIT_USAGE)
    cli_print_json(o.gone);
  else
    json_decref(o.gone);
  return rc;
}

const struct cli_verb cli_verbs_gi[] = {
    {"gi", "profiles", run_profiles, "GPU instance profiles with free/total (-lgip)", false,
     &profiles_spec, false},
    {"gi", "placements", run_placements, "legal placements per profile (-lgipp)", false,
     &placements_spec, false},
    {"gi", "create", run_create, "create GPU instances (-cgi, -C)", false, &create_spec, false},
    {"gi", "list", run_list, "list GPU instances (-lgi)", false, &list_spec, false},
    {"gi", "destroy", run_destroy, "destroy GPU instances (-dgi)", false, &destroy_spec, false},
    {0},
};
