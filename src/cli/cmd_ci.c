/* SPDX-License-Identifier: Apache-2.0 */
/* cmd_ci.c: `gpuslice ci profiles|placements|create|list|destroy`, the
 * compute-instance half of `nvidia-smi mig` (-lcip, -lcipp, -cci, -lci, -dci). */
#include "cli/cli.h"

#include <string.h>

/* -lcip and -lci at nvidia-smi's column positions (the 88- and 70-column
 * tables real drivers print, e.g. an A100-80GB's on R515 and an H100's on
 * current drivers, whose -lci is the same). */
static const char cip_rule[] =
    "+--------------------------------------------------------------------------------------+\n";
static const char ci_rule[] =
    "+--------------------------------------------------------------------+\n";

static void print_cip_header(void)
{
  printf("%s", cip_rule);
  printf("| Compute instance profiles:                                                           |\n"
         "| GPU     GPU       Name             Profile  Instances   Exclusive       Shared       |\n"
         "|       Instance                       ID     Free/Total     SM       DEC   ENC   OFA  |\n"
         "|         ID                                                          CE    JPEG       |\n"
         "|======================================================================================|\n");
}

static void print_ci_header(void)
{
  printf("%s", ci_rule);
  printf("| Compute instances:                                                 |\n"
         "| GPU     GPU       Name             Profile   Instance   Placement  |\n"
         "|       Instance                       ID        ID       Start:Size |\n"
         "|         ID                                                         |\n"
         "|====================================================================|\n");
}

struct ci_opts {
  const char *gi;   /* --gi list, NULL = every GI */
  const char *ci;   /* --ci list, NULL = every CI */
  int placement;    /* --placement, -1 = the driver chooses */
  bool narrow_ci;   /* a MIG device in -i selects its CI too, not only its GI */
  char gbuf[12], cbuf[12];
};

static int on_ci_opt(struct cli *c, int ch, const char *value, void *arg)
{
  struct ci_opts *o = arg;
  unsigned v[1];
  (void)c;
  if (ch == 'g')
    o->gi = value;
  else if (ch == 'c')
    o->ci = value;
  else if (ch == 'p') {
    if (cli_parse_ids(value, "--placement", v, 1) < 0)
      return GS_EXIT_USAGE;
    if (v[0] >= GS_GEOM_MAX_INSTANCES)
      return cli_usage("--placement %u: a compute-instance placement is a compute slice of its "
                       "GPU instance, 0..7 (`gpuslice ci placements` lists them)",
                       v[0]);
    o->placement = (int)v[0];
  } else
    return cli_usage("unexpected option");
  return 0;
}

#define GI_OPT(def) {"gi", 0, "IDS", 'g', def, "the GPU instance IDs, e.g. 7,8", CLI_VALUE_TEXT, NULL}
#define CI_OPT(def) {"ci", 0, "IDS", 'c', def, "the compute instance IDs, e.g. 0,1", CLI_VALUE_TEXT, NULL}
#define OLD_G {NULL, 'g', "IDS", 'g', NULL, NULL, CLI_VALUE_TEXT, "--gi"}
#define OLD_C {NULL, 'c', "IDS", 'c', NULL, NULL, CLI_VALUE_TEXT, "--ci"}

static const struct cli_opt read_opts[] = {
    CLI_OPT_GPUS("every GPU with MIG on", CLI_GPUS_MIG_HELP),
    GI_OPT("every GPU instance"),
    CLI_OPT_JSON("print JSON (docs/cli.md, \"JSON output\")"),
    OLD_G,
    {0},
};

static const struct cli_opt list_opts[] = {
    CLI_OPT_GPUS("every GPU with MIG on", CLI_GPUS_MIG_HELP),
    GI_OPT("every GPU instance"),
    CI_OPT("every compute instance"),
    CLI_OPT_JSON("print JSON (docs/cli.md, \"JSON output\")"),
    OLD_G,
    OLD_C,
    {0},
};

static const struct cli_opt create_opts[] = {
    CLI_OPT_GPUS("every GPU with MIG on", CLI_GPUS_MIG_HELP),
    GI_OPT("every GPU instance"),
    {"placement", 0, "START", 'p', "the driver's choice",
     "the compute slice of its GPU instance the instance starts at", CLI_VALUE_TEXT, NULL},
    CLI_OPT_JSON("print what was created as JSON, as `ci list --json` does"),
    OLD_G,
    {NULL, 'p', "START", 'p', NULL, NULL, CLI_VALUE_TEXT, "--placement"},
    {0},
};

static const struct cli_opt destroy_opts[] = {
    CLI_OPT_GPUS("every GPU with MIG on", CLI_GPUS_MIG_HELP),
    GI_OPT("every GPU instance"),
    CI_OPT("every compute instance"),
    CLI_OPT_JSON("print what was destroyed as JSON: [{gpu, gi, id}]"),
    OLD_G,
    OLD_C,
    {0},
};

static const struct cli_spec profiles_spec = {
    .opts = read_opts,
    .about = "The table of `nvidia-smi mig -lcip [-gi IDS]`: per GPU instance, each compute\n"
             "instance profile with free/total (the default one marked *).",
    .examples = "gpuslice ci profiles -i 0 --gi 1",
};

static const struct cli_spec placements_spec = {
    .opts = read_opts,
    .about = "The lines of `nvidia-smi mig -lcipp [-gi IDS]`: compute-slice starts per profile.",
    .examples = "gpuslice ci placements --gi 1 --json",
};

static const struct cli_spec create_spec = {
    .operands = "[PROFILE[,PROFILE...]]",
    .operand = CLI_VALUE_CI_PROFILE,
    .opts = create_opts,
    .about = "`nvidia-smi mig -cci [LIST] [-gi IDS]`. PROFILE is a name (1c.3g.20gb) or a compute\n"
             "instance profile ID (0); none: the default one, the whole GPU instance.",
    .examples = "gpuslice ci create -i 0 --gi 1 1c.3g.20gb,1c.3g.20gb\ngpuslice ci create",
};

static const struct cli_spec list_spec = {
    .opts = list_opts,
    .about = "The table of `nvidia-smi mig -lci [-gi IDS] [-ci IDS]`.",
    .examples = "gpuslice ci list\ngpuslice ci list -i 0 --gi 1 --json",
};

static const struct cli_spec destroy_spec = {
    .opts = destroy_opts,
    .about = "`nvidia-smi mig -dci [-gi IDS] [-ci IDS]`; a --ci ID that the GPU instance lacks is\n"
             "NVML_ERROR_NOT_FOUND (exit 1).",
    .examples = "gpuslice ci destroy -i 0 --gi 1 --ci 0\ngpuslice ci destroy",
};

/* Calls fn for every selected GI of every selected GPU that has MIG on. */
typedef int (*gi_fn)(struct cli *c, struct gs_backend *b, const struct gs_gpu_info *info,
                     const struct gs_gi_info *gi, void *arg);

static bool id_wanted(const unsigned *ids, int n, unsigned id)
{
  if (n <= 0)
    return true;
  for (int i = 0; i < n; i++)
    if (ids[i] == id)
      return true;
  return false;
}

static int for_each_gi(struct cli *c, struct ci_opts *o, gi_fn fn, void *arg, unsigned *visited)
{
  unsigned gpus[GS_BACKEND_MAX_GPUS], ids[GS_GEOM_MAX_INSTANCES * 2];
  struct gs_backend *b;
  struct gs_err err = {0};
  int n, nid = 0, rc = GS_EXIT_OK;
  c->mig_ok = true;
  if ((n = cli_select_gpus(c, gpus)) < 0)
    return -n;
  if (cli_mig_narrow(c, &o->gi, o->narrow_ci ? &o->ci : NULL, o->gbuf, o->cbuf) != 0)
    return GS_EXIT_USAGE;
  if (o->gi && (nid = cli_parse_ids(o->gi, "--gi", ids, GS_NITEMS(ids))) < 0)
    return GS_EXIT_USAGE;
  cli_backend(c, &b);
  for (int i = 0; i < n; i++) {
    struct gs_gpu_info info;
    struct gs_gi_info gis[GS_GEOM_MAX_INSTANCES];
    unsigned ngi = 0;
    if (b->ops->gpu_info(b, &err, gpus[i], &info) != 0)
      return cli_fail(&err);
    if (!info.mig_current && !c->gpus)
      continue;
    if (b->ops->gi_list(b, &err, gpus[i], gis, &ngi) != 0)
      return cli_fail(&err);
    cli_sort_gis(info.model, gis, ngi);
    for (int k = 0; k < nid; k++) {
      unsigned g;
      for (g = 0; g < ngi && gis[g].id != ids[k]; g++)
        ;
      if (g == ngi)
        return cli_usage("--gi %u: GPU %u has no GPU instance %u (`gpuslice gi list -i %u`)",
                         ids[k], gpus[i], ids[k], gpus[i]);
    }
    for (unsigned g = 0; g < ngi; g++) {
      int r;
      if (!id_wanted(ids, nid, gis[g].id))
        continue;
      (*visited)++;
      if ((r = fn(c, b, &info, &gis[g], arg)) != 0 && !rc)
        rc = r;
    }
  }
  return rc;
}

/* ---- profiles and placements ---- */

struct list_ctx {
  json_t *arr;      /* the JSON output (create and destroy: what they did) */
  unsigned rows;
  int argc;
  char **argv;
  const struct ci_opts *o;
};

static int profile_rows(struct cli *c, struct gs_backend *b, const struct gs_gpu_info *info,
                        const struct gs_gi_info *gi, void *arg)
{
  struct list_ctx *x = arg;
  struct gs_geom_ci_profile cps[GS_GEOM_MAX_CI_PROFILES];
  struct gs_err err = {0};
  unsigned n = gs_geom_ci_profiles(info->model, gi->profile, cps);
  const struct gs_geom_gi_profile *p = gi->profile;
  if (!c->json && x->rows == 0 && n > 0)
    print_cip_header();
  for (unsigned k = 0; k < n; k++) {
    unsigned free_count = 0;
    char name[GS_GEOM_NAME_SIZE + 4];
    if (b->ops->ci_remaining(b, &err, info->index, gi->id, cps[k].id, &free_count) != 0)
      return cli_fail(&err);
    if (c->json) {
      json_array_append_new(x->arr, json_pack("{s:i, s:i, s:s, s:i, s:b, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i}",
                                              "gpu", info->index, "gi", gi->id, "name", cps[k].name,
                                              "profile_id", cps[k].id, "default", cps[k].is_default,
                                              "free", free_count, "total", cps[k].max_count, "sms",
                                              cps[k].sms, "ce", p->ce, "dec", p->dec, "enc", p->enc,
                                              "jpeg", p->jpeg, "ofa", p->ofa));
      continue;
    }
    snprintf(name, sizeof(name), "MIG %.*s", GS_GEOM_NAME_SIZE - 1, cps[k].name);
    printf("|%4u%7u       %-16s%6u%c%6u/%-3u%11u%9u%6u%6u   |\n", info->index, gi->id, name,
           cps[k].id, cps[k].is_default ? '*' : ' ', free_count, cps[k].max_count, cps[k].sms,
           p->dec, p->enc, p->ofa);
    printf("|%64s%7u%6u%9s|\n", "", p->ce, p->jpeg, "");
    printf("%s", cip_rule);
  }
  x->rows += n;
  return 0;
}

static int finish_list(struct cli *c, struct list_ctx *x, int rc, unsigned visited, const char *none)
{
  if (c->json && rc == GS_EXIT_OK)
    return cli_print_json(x->arr);
  json_decref(x->arr);
  if (rc == GS_EXIT_OK && (visited == 0 || x->rows == 0))
    printf("%s\n", none);
  return rc;
}


/* The read verbs: parse options, visit every selected GI, print or JSON. */
static int run_walk(struct cli *c, int argc, char **argv, gi_fn rows, bool narrow_ci,
                    const char *none)
{
  struct ci_opts o = {.placement = -1, .narrow_ci = narrow_ci};
  struct list_ctx x = {.o = &o};
  unsigned visited = 0;
  int rc, first = cli_getopt(c, argc, argv, on_ci_opt, &o);
  if (first <= 0)
    return -first;
  if (first < argc)
    return cli_usage("%s: unexpected argument; usage: %s", argv[first], cli_synopsis(c));
  x.arr = json_array();
  rc = for_each_gi(c, &o, rows, &x, &visited);
  return finish_list(c, &x, rc, visited, none);
}

static int run_profiles(struct cli *c, int argc, char **argv)
{
  return run_walk(c, argc, argv, profile_rows, false, "No GPU instances found: Not Found");
}

static int placement_rows(struct cli *c, struct gs_backend *b, const struct gs_gpu_info *info,
                          const struct gs_gi_info *gi, void *arg)
{
  struct list_ctx *x = arg;
  struct gs_geom_ci_profile cps[GS_GEOM_MAX_CI_PROFILES];
  unsigned n = gs_geom_ci_profiles(info->model, gi->profile, cps);
  (void)b;
  for (unsigned k = 0; k < n; k++) {
    char list[64];
    if (c->json) {
      json_array_append_new(x->arr, json_pack("{s:i, s:i, s:s, s:i, s:o}", "gpu", info->index,
                                              "gi", gi->id, "name", cps[k].name, "profile_id",
                                              cps[k].id, "placements",
                                              cli_placements_json(cps[k].starts, cps[k].span)));
      continue;
    }
    cli_format_placements(cps[k].starts, cps[k].span, list, sizeof(list));
    printf("GPU %2u GI %2u Profile ID %2u %-11s %s\n", info->index, gi->id, cps[k].id,
           __builtin_popcount(cps[k].starts) == 1 ? "Placement :" : "Placements:", list);
  }
  x->rows += n;
  return 0;
}

static int run_placements(struct cli *c, int argc, char **argv)
{
  return run_walk(c, argc, argv, placement_rows, false, "No GPU instances found: Not Found");
}

/* ---- create ---- */

static int create_in_gi(struct cli *c, struct gs_backend *b, const struct gs_gpu_info *info,
                        const struct gs_gi_info *gi, void *arg)
{
  struct list_ctx *x = arg;
  struct gs_err err = {0};
  int count = x->argc > 0 ? x->argc : 1;
  for (int a = 0; a < count; a++) {
    struct gs_geom_ci_profile cp;
    struct gs_ci_info ci;
    const char *want = x->argc > 0 ? x->argv[a] : gi->profile->name;
    if (gs_geom_ci_profile_find(info->model, gi->profile, want, &cp) != 0)
      return cli_usage("GPU %u GPU instance %u (%s): unknown compute-instance profile '%s' "
                       "(`gpuslice ci profiles -i %u --gi %u` lists them)",
                       info->index, gi->id, gi->profile->name, want, info->index, gi->id);
    if (b->ops->ci_create(b, &err, info->index, gi->id, cp.id, x->o->placement, &ci) != 0) {
      cli_say(c, "Unable to create a compute instance on GPU %2u GPU instance ID %2u using "
                 "profile %u: %s\n",
              info->index, gi->id, cp.id, gs_backend_code_text(err.code));
      return cli_fail(&err);
    }
    cli_say(c, "Successfully created compute instance ID %2u on GPU %2u GPU instance ID %2u using "
               "profile MIG %s (ID %2u)\n",
            ci.id, info->index, gi->id, ci.profile.name, ci.profile.id);
    json_array_append_new(x->arr, cli_ci_json(&ci));
  }
  return 0;
}

/* Operands may be comma-separated ("0,0,0"); split them in place. */
static int split_operands(int argc, char **argv, char **out, int max)
{
  int n = 0;
  for (int a = 0; a < argc; a++)
    for (char *save = NULL, *w = strtok_r(argv[a], ",", &save); w; w = strtok_r(NULL, ",", &save)) {
      if (n == max)
        return -cli_usage("ci create: at most %d compute-instance profiles at once", max);
      out[n++] = w;
    }
  return n;
}

/* --json: what a write verb did, also after a refusal (its message is on stderr). */
static int finish_write(struct cli *c, struct list_ctx *x, int rc)
{
  if (c->json && rc != GS_EXIT_USAGE)
    cli_print_json(x->arr);
  else
    json_decref(x->arr);
  return rc;
}

static int run_create(struct cli *c, int argc, char **argv)
{
  struct ci_opts o = {.placement = -1};
  struct list_ctx x = {.o = &o};
  char *words[GS_GEOM_MAX_INSTANCES * 2];
  unsigned visited = 0;
  int rc, first = cli_getopt(c, argc, argv, on_ci_opt, &o);
  if (first <= 0)
    return -first;
  if ((x.argc = split_operands(argc - first, argv + first, words, (int)GS_NITEMS(words))) < 0)
    return -x.argc;
  x.argv = words;
  x.arr = json_array();
  rc = for_each_gi(c, &o, create_in_gi, &x, &visited);
  if (rc == GS_EXIT_OK && visited == 0)
    rc = cli_fail(&(struct gs_err){GS_E_NOT_FOUND,
                                   "no GPU instance to create compute instances in; create one "
                                   "with `gpuslice gi create`"});
  return finish_write(c, &x, rc);
}

/* ---- list and destroy ---- */

static int list_in_gi(struct cli *c, struct gs_backend *b, const struct gs_gpu_info *info,
                      const struct gs_gi_info *gi, void *arg)
{
  struct list_ctx *x = arg;
  struct gs_ci_info cis[GS_GEOM_MAX_INSTANCES];
  struct gs_err err = {0};
  unsigned n = 0;
  unsigned ids[GS_GEOM_MAX_INSTANCES * 2];
  int nid = 0;
  if (x->o->ci && (nid = cli_parse_ids(x->o->ci, "--ci", ids, GS_NITEMS(ids))) < 0)
    return GS_EXIT_USAGE;
  if (b->ops->ci_list(b, &err, info->index, gi->id, cis, &n) != 0)
    return cli_fail(&err);
  for (unsigned k = 0; k < n; k++) {
    char name[GS_GEOM_NAME_SIZE + 4];
    if (!id_wanted(ids, nid, cis[k].id))
      continue;
    if (c->json) {
      json_array_append_new(x->arr, cli_ci_json(&cis[k]));
      x->rows++;
      continue;
    }
    if (x->rows++ == 0)
      print_ci_header();
    snprintf(name, sizeof(name), "MIG %.*s", GS_GEOM_NAME_SIZE - 1, cis[k].profile.name);
    printf("|%4u%7u       %-16s%6u%10u%11u:%-6u|\n", info->index, gi->id, name, cis[k].profile.id,
           cis[k].id, cis[k].start, cis[k].span);
    printf("%s", ci_rule);
  }
  return 0;
}


static int run_list(struct cli *c, int argc, char **argv)
{
  return run_walk(c, argc, argv, list_in_gi, true, "No compute instances found: Not Found");
}

/* --ci names instances that must exist, as -dci -ci does (NOT_FOUND). */
static int check_ci_ids(const struct cli *c, const struct gs_gpu_info *info, const struct gs_gi_info *gi,
                        const struct gs_ci_info *cis, unsigned n, const unsigned *ids, int nid)
{
  for (int i = 0; i < nid; i++) {
    char have[64] = "none";
    size_t used = 0;
    unsigned k;
    for (k = 0; k < n && cis[k].id != ids[i]; k++)
      ;
    if (k < n)
      continue;
    for (k = 0; k < n && used < sizeof(have); k++)
      used += (size_t)snprintf(have + used, sizeof(have) - used, "%s%u", k ? ", " : "", cis[k].id);
    cli_say(c, "Unable to destroy compute instance ID %2u from GPU %2u GPU instance ID %2u: %s\n",
            ids[i], info->index, gi->id, gs_backend_code_text(GS_E_NOT_FOUND));
    struct gs_err err = {0};
    gs_err_set(&err, GS_E_NOT_FOUND,
               "GPU %u GPU instance %u has no compute instance %u (it has %s; `gpuslice ci list "
               "-i %u --gi %u`)",
               info->index, gi->id, ids[i], have, info->index, gi->id);
    return cli_fail(&err);
  }
  return 0;
}

static int destroy_in_gi(struct cli *c, struct gs_backend *b, const struct gs_gpu_info *info,
                         const struct gs_gi_info *gi, void *arg)
{
  struct list_ctx *x = arg;
  struct gs_ci_info cis[GS_GEOM_MAX_INSTANCES];
  struct gs_err err = {0};
  unsigned ids[GS_GEOM_MAX_INSTANCES * 2], n = 0;
  int nid = 0, rc = 0;
  if (x->o->ci && (nid = cli_parse_ids(x->o->ci, "--ci", ids, GS_NITEMS(ids))) < 0)
    return GS_EXIT_USAGE;
  if (b->ops->ci_list(b, &err, info->index, gi->id, cis, &n) != 0)
    return cli_fail(&err);
  /* With --gi the IDs name instances of that GI; without, of any GI. */
  if (x->o->gi && (rc = check_ci_ids(c, info, gi, cis, n, ids, nid)) != 0)
    return rc;
  for (unsigned k = 0; k < n; k++) {
    if (!id_wanted(ids, nid, cis[k].id))
      continue;
    if (b->ops->ci_destroy(b, &err, info->index, gi->id, cis[k].id) != 0) {
      cli_say(c, "Unable to destroy compute instance ID %2u from GPU %2u GPU instance ID %2u: %s\n",
              cis[k].id, info->index, gi->id, gs_backend_code_text(err.code));
      rc = cli_fail(&err);
      continue;
    }
    x->rows++;
    cli_say(c, "Successfully destroyed compute instance ID %2u from GPU %2u GPU instance ID %2u\n",
            cis[k].id, info->index, gi->id);
    json_array_append_new(x->arr, json_pack("{s:i, s:i, s:i}", "gpu", info->index, "gi", gi->id,
                                            "id", cis[k].id));
  }
  return rc;
}

static int run_destroy(struct cli *c, int argc, char **argv)
{
  struct ci_opts o = {.placement = -1, .narrow_ci = true};
  struct list_ctx x = {.o = &o};
  unsigned visited = 0;
  int rc, first = cli_getopt(c, argc, argv, on_ci_opt, &o);
  if (first <= 0)
    return -first;
  if (first < argc)
    return cli_usage("%s: unexpected argument; usage: %s", argv[first], cli_synopsis(c));
  x.arr = json_array();
  rc = for_each_gi(c, &o, destroy_in_gi, &x, &visited);
  if (rc == GS_EXIT_OK && x.rows == 0 && o.ci) {
    struct gs_err err = {0};
    gs_err_set(&err, GS_E_NOT_FOUND,
               "--ci %s: no GPU instance of the selected GPUs has such a compute instance "
               "(`gpuslice ci list`)",
               o.ci);
    rc = cli_fail(&err);
  }
  if (rc != GS_EXIT_OK && rc != GS_EXIT_USAGE)
    cli_say(c, "Failed to destroy compute instances\n");
  else if (x.rows == 0)
    cli_say(c, "No compute instances found: Not Found\n");
  return finish_write(c, &x, rc);
}

const struct cli_verb cli_verbs_ci[] = {
    {"ci", "profiles", run_profiles, "compute instance profiles per GPU instance (-lcip)", false,
     &profiles_spec, false},
    {"ci", "placements", run_placements, "legal compute instance placements (-lcipp)", false,
     &placements_spec, false},
    {"ci", "create", run_create, "create compute instances (-cci)", false, &create_spec, false},
    {"ci", "list", run_list, "list compute instances (-lci)", false, &list_spec, false},
    {"ci", "destroy", run_destroy, "destroy compute instances (-dci)", false, &destroy_spec, false},
    {0},
};
