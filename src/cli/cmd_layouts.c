/* SPDX-License-Identifier: Apache-2.0 */
/* cmd_layouts.c: `gpuslice layouts MODEL` draws every valid layout of a GPU
 * model as slices (the MIG user guide's "all valid combinations" figure) or
 * checks one (`--check`), and `gpuslice models` lists the models the geometry
 * knows. */
#include "cli/cli.h"

#include <string.h>

struct draw_ctx {
  const struct gs_geom_model *m;
  bool json;
  json_t *arr;
  unsigned count;
};

static unsigned cell_width(const struct gs_geom_model *m)
{
  return m->grid <= 8 ? 9 : 6;
}

static void draw_header(const struct gs_geom_model *m)
{
  unsigned w = cell_width(m);
  printf("      ");
  for (unsigned s = 0; s < m->grid; s++)
    printf("%-*u", (int)w, s);
  printf("  (memory slices)\n");
}

/* One layout as one line: each GI a bracketed box as wide as its memory
 * slices, unused slices as dashes, then what the layout leaves idle. */
static int draw_layout(const struct gs_geom_layout *l, void *arg)
{
  struct draw_ctx *x = arg;
  const struct gs_geom_model *m = x->m;
  unsigned w = cell_width(m), compute = 0, s = 0;
  char line[256];
  size_t used = 0;
  json_t *gis = json_array();
  x->count++;
  used += (size_t)snprintf(line, sizeof(line), "%4u  ", x->count);
  while (s < m->grid && used < sizeof(line)) {
    const struct gs_geom_slot *hit = NULL;
    for (unsigned i = 0; i < l->n && !hit; i++)
      if ((unsigned)l->slot[i].start == s)
        hit = &l->slot[i];
    if (!hit) {
      used += (size_t)snprintf(line + used, sizeof(line) - used, "%*s%-*s", (int)(w / 2 - 1), "",
                               (int)(w - w / 2 + 1), "--");
      s++;
      continue;
    }
    used += (size_t)snprintf(line + used, sizeof(line) - used, "[%-*s]",
                             (int)(w * hit->profile->span - 2), hit->profile->name);
    compute += hit->profile->compute_slices;
    json_array_append_new(gis, json_pack("{s:s, s:i, s:i, s:i, s:i}", "profile", hit->profile->name,
                                         "profile_id", hit->profile->id, "start", s, "size",
                                         hit->profile->span, "gi_id",
                                         gs_geom_gi_id(m, s, hit->profile->span)));
    s += hit->profile->span;
  }
  json_array_append_new(x->arr, gis);
  if (x->json)
    return 0;
  if (compute < m->compute_slices)
    printf("%s  %u compute slice%s idle\n", line, m->compute_slices - compute,
           m->compute_slices - compute == 1 ? "" : "s");
  else
    printf("%s\n", line);
  return 0;
}

struct layout_opts {
  unsigned flags;
  char *check;  /* --check's profile list, NULL = draw every layout */
};

static int on_layout_opt(struct cli *c, int ch, const char *value, void *arg)
{
  struct layout_opts *o = arg;
  (void)c;
  if (ch == 'A')
    o->flags |= GS_GEOM_ENUM_ALL_SHAPES;
  else if (ch == 'P')
    o->flags &= ~(unsigned)GS_GEOM_ENUM_MAXIMAL;
  else if (ch == 'K')
    o->check = (char *)value;
  else
    return cli_usage("unexpected option");
  return 0;
}

/* What still fits beside a valid layout: profile and how many (-lgip "Free"). */
static json_t *still_fits(const struct gs_geom_model *m, const struct gs_geom_layout *l,
                          bool print)
{
  json_t *arr = json_array();
  for (unsigned k = 0; k < m->ngi; k++) {
    unsigned n = gs_geom_remaining(m, l, &m->gi[k]);
    if (n == 0)
      continue;
    json_array_append_new(arr, json_pack("{s:s, s:i, s:i}", "profile", m->gi[k].name,
                                         "profile_id", m->gi[k].id, "free", n));
    if (print)
      printf("%s %s x%u", json_array_size(arr) == 1 ? "  still fits:" : ",", m->gi[k].name, n);
  }
  if (print)
    printf(json_array_size(arr) ? "\n" : "  maximal: nothing more fits\n");
  return arr;
}

/* --check: validates one layout (placements optional) and draws where the
 * GPU would put it, as the geometry's validator and `gpuslice apply` do. */
static int check_layout(struct cli *c, const struct gs_geom_model *m, char *list)
{
  char words[GS_GEOM_MAX_INSTANCES][GS_GEOM_NAME_SIZE];
  struct gs_geom_layout l = {0}, placed;
  struct draw_ctx x = {.m = m, .json = c->json};
  struct gs_err err = {0};
  json_t *fits;
  int n = cli_split_profiles(1, &list, "layouts --check", words, GS_GEOM_MAX_INSTANCES);
  if (n < 0)
    return -n;
  if (cli_profile_slots(m, m->key, words, (unsigned)n, l.slot) != 0)
    return GS_EXIT_USAGE;
  l.n = (unsigned)n;
  if (gs_geom_validate(&err, m, &l, &placed) != 0)
    return cli_fail(&err);
  x.arr = json_array();
  if (!c->json) {
    printf("%s (%s): valid layout\n", m->name, m->key);
    draw_header(m);
  }
  draw_layout(&placed, &x);
  fits = still_fits(m, &placed, !c->json);
  if (c->json) {
    /* "O": the layout gains a reference, so x.arr can be freed after. */
    json_t *out = json_pack("{s:s, s:s, s:b, s:O, s:b, s:o}", "model", m->key, "name", m->name,
                            "valid", 1, "layout", json_array_get(x.arr, 0), "maximal",
                            json_array_size(fits) == 0, "still_fits", fits);
    json_decref(x.arr);
    return cli_print_json(out);
  }
  json_decref(fits);
  json_decref(x.arr);
  return GS_EXIT_OK;
}

static const struct cli_opt layouts_opts[] = {
    {"all-shapes", 0, NULL, 'A', NULL,
     "include the double-memory 1g profiles (e.g. 1g.10gb on a100-40gb)", CLI_VALUE_TEXT, NULL},
    {"partial", 0, NULL, 'P', NULL, "every valid layout, not only those to which nothing more fits",
     CLI_VALUE_TEXT, NULL},
    {"check", 0, "PROFILE[@START],...", 'K', NULL,
     "is this set of GPU instances valid? (exit 0 yes, 1 no) and where it goes", CLI_VALUE_PROFILE,
     NULL},
    CLI_OPT_JSON("print JSON (docs/cli.md, \"JSON output\")"),
    {NULL, 'A', NULL, 'A', NULL, NULL, CLI_VALUE_TEXT, "--all-shapes"},
    {NULL, 'P', NULL, 'P', NULL, NULL, CLI_VALUE_TEXT, "--partial"},
    {NULL, 'K', "PROFILE[@START],...", 'K', NULL, NULL, CLI_VALUE_TEXT, "--check"},
    {0},
};

static const struct cli_spec layouts_spec = {
    .operands = "MODEL",
    .operand = CLI_VALUE_MODEL,
    .opts = layouts_opts,
    .about = "Every valid layout of GPU instances, drawn on the memory slices (the MIG user guide's\n"
             "\"valid combinations\" figure). --check places a set of instances without @START where\n"
             "any fit: the driver's automatic order may still fail, so create big instances first.",
    .examples = "gpuslice layouts a100-40gb\n"
                "gpuslice layouts h100-80gb --check 3g.40gb,2g.20gb,1g.10gb",
};

static int run_layouts(struct cli *c, int argc, char **argv)
{
  struct layout_opts o = {.flags = GS_GEOM_ENUM_MAXIMAL};
  unsigned flags;
  struct draw_ctx x = {0};
  int first = cli_getopt(c, argc, argv, on_layout_opt, &o);
  if (first <= 0)
    return -first;
  if (first + 1 != argc)
    return cli_usage("layouts: name one GPU model (`gpuslice models` lists them); usage: %s",
                     cli_synopsis(c));
  if (!(x.m = gs_geom_model_find(argv[first]))) {
    char hint[512];
    return cli_usage("layouts: unknown GPU model '%s'; %s", argv[first],
                     gs_geom_model_hint(argv[first], hint, sizeof(hint)));
  }
  if (o.check)
    return check_layout(c, x.m, o.check);
  flags = o.flags;
  x.arr = json_array();
  x.json = c->json;
  if (!c->json) {
    printf("%s (%s): memory slices 0..%u, %u compute slices\n", x.m->name, x.m->key,
           x.m->grid - 1, x.m->compute_slices);
    draw_header(x.m);
  }
  gs_geom_enumerate(x.m, flags, draw_layout, &x);
  if (c->json)
    return cli_print_json(json_pack("{s:s, s:s, s:b, s:b, s:i, s:o}", "model", x.m->key, "name",
                                    x.m->name, "maximal", !!(flags & GS_GEOM_ENUM_MAXIMAL),
                                    "all_shapes", !!(flags & GS_GEOM_ENUM_ALL_SHAPES), "count",
                                    x.count, "layouts", x.arr));
  printf("%u %s layouts%s\n", x.count,
         flags & GS_GEOM_ENUM_MAXIMAL ? "valid maximal" : "valid (partial included)",
         flags & GS_GEOM_ENUM_ALL_SHAPES ? ", double-memory profiles included" : "");
  json_decref(x.arr);
  return GS_EXIT_OK;
}

static const char *arch_name(enum gs_geom_arch a)
{
  return a == GS_GEOM_AMPERE ? "Ampere" : a == GS_GEOM_HOPPER ? "Hopper" : "Blackwell";
}

/* The boards over model m (its own first), as --emulate accepts them: their
 * NVML names and PCI device/subsystem ids (docs/models.md, "Boards"). */
static json_t *boards_of(const struct cli *c, const struct gs_geom_model *m)
{
  unsigned n;
  const struct gs_geom_sku *const *all = gs_geom_skus(&n);
  json_t *arr = json_array();
  for (unsigned i = 0; i < n; i++) {
    char pci[16], sub[16];
    if (all[i]->model != m)
      continue;
    snprintf(pci, sizeof(pci), "0x%08X", all[i]->pci_id);
    snprintf(sub, sizeof(sub), "0x%08X", all[i]->subsystem_id);
    if (c->json)
      json_array_append_new(arr, json_pack("{s:s, s:s, s:s, s:s}", "key", all[i]->key, "name",
                                           all[i]->name, "pci_id", pci, "subsystem_id", sub));
    else
      printf("  board %-16s %-55s %s %s\n", all[i]->key, all[i]->name, pci, sub);
  }
  return arr;
}

static const struct cli_opt models_opts[] = {
    CLI_OPT_JSON("print JSON (docs/cli.md, \"JSON output\")"),
    {0},
};

static const struct cli_spec models_spec = {
    .opts = models_opts,
    .about = "Each model's key (what --emulate, plan and layouts take), NVML name, PCI id,\n"
             "architecture, slices, profiles and maximal layouts, and the boards over it.",
    .examples = "gpuslice models\ngpuslice models --json | jq -r '.[].key'",
};

static int run_models(struct cli *c, int argc, char **argv)
{
  unsigned n;
  const struct gs_geom_model *const *all = gs_geom_models(&n);
  json_t *arr;
  int first = cli_getopt(c, argc, argv, NULL, NULL);
  if (first <= 0)
    return -first;
  if (first < argc)
    return cli_usage("%s: unexpected argument; usage: %s", argv[first], cli_synopsis(c));
  arr = json_array();
  if (!c->json)
    printf("%-16s %-46s %-10s %-9s %7s %8s %8s\n", "MODEL", "NVML NAME", "PCI ID", "ARCH",
           "SLICES", "PROFILES", "LAYOUTS");
  for (unsigned i = 0; i < n; i++) {
    const struct gs_geom_model *m = all[i];
    unsigned layouts = gs_geom_enumerate(m, GS_GEOM_ENUM_MAXIMAL, NULL, NULL);
    char pci[16];
    snprintf(pci, sizeof(pci), "0x%08X", m->pci_id);
    if (c->json)
      json_array_append_new(arr, json_pack("{s:s, s:s, s:s, s:s, s:s, s:i, s:i, s:i, s:i, s:i, s:o}", "key",
                                           m->key, "name", m->name, "aliases", m->aliases ? m->aliases : "",
                                           "pci_id", pci, "arch", arch_name(m->arch),
                                           "compute_slices", m->compute_slices, "memory_slices",
                                           m->grid / m->leaf_span, "memory_mib", m->memory_mib,
                                           "profiles", m->ngi, "maximal_layouts", layouts,
                                           "boards", boards_of(c, m)));
    else {
      printf("%-16s %-46s %-10s %-9s %3u/%-3u %8u %8u\n", m->key, m->name, pci, arch_name(m->arch),
             m->compute_slices, m->grid / m->leaf_span, m->ngi, layouts);
      json_decref(boards_of(c, m));
    }
  }
  if (c->json)
    return cli_print_json(arr);
  json_decref(arr);
  return GS_EXIT_OK;
}

const struct cli_verb cli_verbs_layouts[] = {
    {NULL, "layouts", run_layouts, "every valid layout of a GPU model, drawn as slices", false,
     &layouts_spec, false},
    {NULL, "models", run_models, "the MIG-capable GPU models gpuslice knows", false, &models_spec,
     false},
    {0},
};
