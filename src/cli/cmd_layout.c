/* SPDX-License-Identifier: Apache-2.0 */
/* cmd_layout.c: `gpuslice apply|assert|export|recover`, declarative layouts
 * as nvidia-mig-parted has them (its v1 files are read unchanged), with the
 * fewest changes, a dry run that shows the plan, and crash recovery. */
#include "cli/cli.h"
#include "layout/layout.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

struct layout_opts {
  const char *file, *config, *format, *hooks;
  bool dry_run, force, mode_only, valid_only;
  unsigned wait; /* seconds */
};

/* What the verbs print: each GPU's plan as text (or JSON with --json), and
 * for assert what the GPU has against what the config wants. */
struct report {
  struct gs_backend *b;
  const struct gs_layout_selection *sel;
  unsigned changes;
  bool json, assert_only;
  json_t *gpus;
};

static int on_layout_opt(struct cli *c, int ch, const char *value, void *arg)
{
  struct layout_opts *o = arg;
  (void)c;
  switch (ch) {
  case 'f': o->file = value; return 0;
  case 'c': o->config = value; return 0;
  case 'F': o->format = value; return 0;
  case 'k': o->hooks = value; return 0;
  case 'n': o->dry_run = true; return 0;
  case 'x': o->force = true; return 0;
  case 'm': o->mode_only = true; return 0;
  case 'a': o->valid_only = true; return 0;
  case 'w': /* the journal's lock waits whole seconds; a bare number is seconds */
    return cli_duration_in("--wait", value, 1000000, 0, 86400000000ull, 1000000, &o->wait);
  default:
    return cli_usage("unexpected option");
  }
}

/* -f, -c, -k, -m and -a are nvidia-mig-parted's (its apply and assert). */
#define FILE_OPTS                                                                                  \
  {"config-file", 'f', "FILE", 'f', "$MIG_PARTED_CONFIG_FILE",                                     \
   "the layout file: nvidia-mig-parted v1 or gpuslice/v1 YAML (- for stdin)", CLI_VALUE_FILE,      \
   NULL},                                                                                          \
      {"file", 0, "FILE", 'f', NULL, "the same as --config-file", CLI_VALUE_FILE, NULL},           \
      {"selected-config", 'c', "NAME", 'c', "$MIG_PARTED_SELECTED_CONFIG, or the file's only one", \
       "the config of the file to use", CLI_VALUE_CONFIG, NULL},                                   \
      {"config", 0, "NAME", 'c', NULL, "the same as --selected-config", CLI_VALUE_CONFIG, NULL},   \
      {"mode-only", 'm', NULL, 'm', NULL, "only the MIG mode, no instances", CLI_VALUE_TEXT, NULL}
#define WAIT_OPT                                                                                   \
  {"wait", 0, "DURATION", 'w', "0: fail at once",                                                  \
   "how long to wait for another apply's lock (a bare number is seconds)", CLI_VALUE_TEXT, NULL}
#define FORCE_OPT                                                                                  \
  {"force", 0, NULL, 'x', NULL, "also destroy instances that processes still use",                 \
   CLI_VALUE_TEXT, NULL}

static const struct cli_opt apply_opts[] = {
    FILE_OPTS,
    {"dry-run", 0, NULL, 'n', NULL, "print the plan, change nothing", CLI_VALUE_TEXT, NULL},
    FORCE_OPT,
    WAIT_OPT,
    {"hooks-file", 'k', "FILE", 'k', "$MIG_PARTED_HOOKS_FILE",
     "nvidia-mig-parted's hooks file (apply-start, pre-apply-mode, ...)", CLI_VALUE_FILE, NULL},
    CLI_OPT_JSON("print each GPU's plan and outcome as JSON"),
    {NULL, 'n', NULL, 'n', NULL, NULL, CLI_VALUE_TEXT, "--dry-run"},
    {NULL, 'x', NULL, 'x', NULL, NULL, CLI_VALUE_TEXT, "--force"},
    {NULL, 'w', "SECONDS", 'w', NULL, NULL, CLI_VALUE_TEXT, "--wait"},
    {0},
};

static const struct cli_opt assert_opts[] = {
    FILE_OPTS,
    {"valid-config", 'a', NULL, 'a', NULL, "only check that the config is valid for these GPUs",
     CLI_VALUE_TEXT, NULL},
    CLI_OPT_JSON("print each GPU's differences as JSON"),
    {0},
};

static const struct cli_opt export_opts[] = {
    {"format", 0, "gpuslice|mig-parted", 'F', "gpuslice",
     "gpuslice (exact placements) or mig-parted (counts only)", CLI_VALUE_CHOICE, NULL},
    {"selected-config", 'c', "NAME", 'c', "current", "the name of the config written",
     CLI_VALUE_TEXT, NULL},
    {"config", 0, "NAME", 'c', NULL, "the same as --selected-config", CLI_VALUE_TEXT, NULL},
    {NULL, 'F', "FORMAT", 'F', NULL, NULL, CLI_VALUE_TEXT, "--format"},
    {0},
};

static const struct cli_opt recover_opts[] = {
    WAIT_OPT,
    FORCE_OPT,
    {NULL, 'w', "SECONDS", 'w', NULL, NULL, CLI_VALUE_TEXT, "--wait"},
    {NULL, 'x', NULL, 'x', NULL, NULL, CLI_VALUE_TEXT, "--force"},
    {0},
};

static const struct cli_spec apply_spec = {
    .opts = apply_opts,
    .about = "As `nvidia-mig-parted apply`, with the fewest changes: only the GPU instances that\n"
             "differ are destroyed and created. A journal and a lock make a crash or a second admin\n"
             "harmless (`gpuslice recover`). Formats: gpuslice-layout.yaml(5).",
    .examples = "gpuslice apply -f /usr/share/gpuslice/configs/a100-40gb.mig-parted.yaml -c all-1g.5gb\n"
                "gpuslice apply -f layouts.yaml -c all-balanced --dry-run",
};

static const struct cli_spec assert_spec = {
    .opts = assert_opts,
    .about = "Exit 0 when the GPUs are laid out as the config says, else 1 and what differs (as\n"
             "`nvidia-mig-parted assert`).",
    .examples = "gpuslice assert -f layouts.yaml -c all-1g.5gb\ngpuslice assert -a -f layouts.yaml -c all-3g.20gb",
};

static const struct cli_spec export_spec = {
    .opts = export_opts,
    .about = "The current layout as a config file, on stdout (`nvidia-mig-parted export`).",
    .examples = "gpuslice export > current.yaml\ngpuslice export --format mig-parted -c mine",
};

static const struct cli_spec recover_spec = {
    .opts = recover_opts,
    .about = "Finishes an apply that was interrupted (a crash, a reboot) from its journal.",
    .examples = "gpuslice recover --wait 30s",
};

/* -f (and -c, unless the file holds one config), or mig-parted's
 * environment variables for them. */
static int need_file(struct cli *c, struct layout_opts *o)
{
  const char *env = getenv("MIG_PARTED_SELECTED_CONFIG");
  if (!o->file)
    o->file = getenv("MIG_PARTED_CONFIG_FILE");
  if (!o->config && env && *env)
    o->config = env;
  if (!o->file || !*o->file)
    return cli_usage("name the config file with -f (and the config with -c); usage: %s",
                     cli_synopsis(c));
  return 0;
}

void cli_apply_lock_path(struct gs_backend *b, char out[PATH_MAX])
{
  const char *env = getenv("GPUSLICE_APPLY_LOCK"), *emu = gs_emu_state_path(b);
  if (env && *env)
    snprintf(out, PATH_MAX, "%s", env);
  else if (emu)
    snprintf(out, PATH_MAX, "%s.apply", emu);
  else
    snprintf(out, PATH_MAX, "/var/lib/gpuslice/apply");
}

static int load_selection(struct cli *c, struct layout_opts *o, struct gs_backend *b,
                          struct gs_layout_file **file, struct gs_layout_selection *sel)
{
  struct gs_gpu_info infos[GS_BACKEND_MAX_GPUS];
  const struct gs_layout_config *cfg;
  struct gs_err err = {0};
  char *text = NULL;
  size_t len = 0;
  unsigned n = 0;
  int rc;
  (void)c;
  if (strcmp(o->file, "-") == 0)
    rc = gs_file_read(&err, "/dev/stdin", 1u << 20, &text, &len);
  else
    rc = gs_file_read(&err, o->file, 1u << 20, &text, &len);
  if (rc)
    return cli_usage("-f %s: %s", o->file, err.msg);
  rc = gs_layout_parse(&err, strcmp(o->file, "-") == 0 ? "<stdin>" : o->file, text, len, file);
  free(text);
  if (rc || (rc = gs_layout_find(&err, *file, o->config, &cfg)) != 0)
    return cli_usage("%s", err.msg);
  o->config = cfg->name;
  if ((rc = b->ops->gpu_count(b, &err, &n)) != 0)
    return cli_fail(&err);
  for (unsigned g = 0; g < n; g++)
    if (b->ops->gpu_info(b, &err, g, &infos[g]) != 0)
      return cli_fail(&err);
  if (gs_layout_resolve(&err, *file, cfg, infos, n, sel) != 0)
    return cli_usage("%s", err.msg);
  return 0;
}

/* -k FILE (or MIG_PARTED_HOOKS_FILE), parsed; *hooks stays NULL without one. */
static int load_hooks(struct layout_opts *o, struct gs_layout_hooks **hooks)
{
  struct gs_err err = {0};
  char *text = NULL;
  size_t len = 0;
  int rc;
  *hooks = NULL;
  if (!o->hooks)
    o->hooks = getenv("MIG_PARTED_HOOKS_FILE");
  if (!o->hooks || !*o->hooks)
    return 0;
  if (gs_file_read(&err, o->hooks, 1u << 20, &text, &len) != 0)
    return cli_usage("-k %s: %s", o->hooks, err.msg);
  if (!(*hooks = calloc(1, sizeof(**hooks)))) {
    free(text);
    return cli_fail(&(struct gs_err){GS_E_NO_MEMORY, "out of memory reading the hooks file"});
  }
  rc = gs_layout_hooks_parse(&err, o->hooks, text, len, *hooks);
  free(text);
  return rc ? cli_usage("%s", err.msg) : 0;
}

/* ---- reporting ---- */

static const char *ci_name(struct gs_backend *b, unsigned gpu, const struct gs_geom_gi_profile *gi,
                           unsigned id, char *buf, size_t size)
{
  struct gs_geom_ci_profile cps[GS_GEOM_MAX_CI_PROFILES];
  struct gs_gpu_info info;
  struct gs_err err = {0};
  unsigned n = 0;
  if (gi && b->ops->gpu_info(b, &err, gpu, &info) == 0)
    n = gs_geom_ci_profiles(info.model, gi, cps);
  for (unsigned i = 0; i < n; i++)
    if (cps[i].id == id)
      return snprintf(buf, size, "%s", cps[i].name), buf;
  snprintf(buf, size, "profile %u", id);
  return buf;
}

static const struct gs_layout_current_gi *current_gi(const struct gs_layout_current *cur, unsigned id)
{
  for (unsigned i = 0; i < cur->ngi; i++)
    if (cur->gi[i].gi.id == id)
      return &cur->gi[i];
  return NULL;
}

static bool plan_destroys(const struct gs_layout_plan *p, unsigned gi_id)
{
  for (unsigned i = 0; i < p->nops; i++)
    if (p->op[i].kind == GS_LAYOUT_DESTROY_GI && p->op[i].gi_id == gi_id)
      return true;
  return false;
}

/* "3g.20gb at 4:4" for a current GI (or "?" when the id is not there). */
static const char *gi_where(const struct gs_layout_current *cur, unsigned id, char *buf, size_t size)
{
  const struct gs_layout_current_gi *g = current_gi(cur, id);
  if (!g)
    snprintf(buf, size, "?");
  else
    snprintf(buf, size, "%s at %u:%u", g->gi.profile->name, g->gi.start, g->gi.profile->span);
  return buf;
}

/* "MIG enabled: 3g.20gb@4 2g.10gb@2": what a GPU has now. */
static void describe_current(const struct gs_layout_current *cur, char *buf, size_t size)
{
  size_t used = (size_t)snprintf(buf, size, "MIG %s%s", cur->mig_current ? "enabled" : "disabled",
                                 cur->mig_current != cur->mig_pending ? " (change pending)" : "");
  for (unsigned i = 0; i < cur->ngi && used < size; i++)
    used += (size_t)snprintf(buf + used, size - used, "%s%s@%u", i ? " " : ": ", cur->gi[i].gi.profile->name,
                             cur->gi[i].gi.start);
  if (cur->mig_current && !cur->ngi && used < size)
    snprintf(buf + used, size - used, ", no GPU instances");
}

/* "MIG enabled: 1g.5gb x2 3g.20gb@4": what the config wants. */
static void describe_target(const struct gs_layout_target *t, char *buf, size_t size)
{
  size_t used = (size_t)snprintf(buf, size, "MIG %s", t->mig_enabled ? "enabled" : "disabled");
  for (unsigned i = 0; i < t->ngi && used < size; i++) {
    unsigned same = 0, j;
    for (j = 0; j < i && !(t->gi[j].profile == t->gi[i].profile && t->gi[j].start < 0 && t->gi[i].start < 0); j++)
      ;
    if (j < i)
      continue; /* counted with the first of its kind */
    for (j = i; t->gi[i].start < 0 && j < t->ngi; j++)
      same += t->gi[j].profile == t->gi[i].profile && t->gi[j].start < 0;
    if (t->gi[i].start >= 0)
      used += (size_t)snprintf(buf + used, size - used, "%s%s@%d", i ? " " : ": ", t->gi[i].profile->name,
                               t->gi[i].start);
    else
      used += (size_t)snprintf(buf + used, size - used, "%s%s x%u", i ? " " : ": ", t->gi[i].profile->name,
                               same);
  }
  if (t->mig_enabled && !t->ngi && used < size)
    snprintf(buf + used, size - used, ", no GPU instances");
}

static void print_op(struct report *r, unsigned gpu, const struct gs_layout_current *cur,
                     const struct gs_layout_plan *p, const struct gs_layout_op *op)
{
  char name[GS_GEOM_NAME_SIZE + 16], where[GS_GEOM_NAME_SIZE + 32];
  switch (op->kind) {
  case GS_LAYOUT_DESTROY_CI:
    printf("  destroy compute instance %u of GPU instance %u (%s)\n", op->ci_id, op->gi_id,
           gi_where(cur, op->gi_id, where, sizeof(where)));
    break;
  case GS_LAYOUT_DESTROY_GI:
    printf("  destroy GPU instance %u (%s)\n", op->gi_id, gi_where(cur, op->gi_id, where, sizeof(where)));
    break;
  case GS_LAYOUT_SET_MIG:
    printf("  %s MIG mode%s\n", op->mig_enable ? "enable" : "disable",
           p->needs_reset ? " (this GPU applies it with a GPU reset)" : "");
    break;
  case GS_LAYOUT_CREATE_GI:
    printf("  create GPU instance %s at placement %u:%u\n", op->profile->name, op->start, op->profile->span);
    break;
  case GS_LAYOUT_CREATE_CI: {
    const struct gs_geom_gi_profile *gi = op->gi_op >= 0 ? p->op[op->gi_op].profile : NULL;
    if (!gi && current_gi(cur, op->gi_id))
      gi = current_gi(cur, op->gi_id)->gi.profile;
    ci_name(r->b, gpu, gi, op->ci.profile_id, name, sizeof(name));
    if (op->gi_op >= 0)
      printf("  create compute instance %s at %d in the new %s\n", name, op->ci.start, gi->name);
    else
      printf("  create compute instance %s at %d in GPU instance %u (%s)\n", name, op->ci.start, op->gi_id,
             gi_where(cur, op->gi_id, where, sizeof(where)));
    break;
  }
  }
}

static json_t *op_json(struct report *r, unsigned gpu, const struct gs_layout_current *cur,
                       const struct gs_layout_plan *p, const struct gs_layout_op *op)
{
  const struct gs_layout_current_gi *g = current_gi(cur, op->gi_id);
  const struct gs_geom_gi_profile *gi = op->gi_op >= 0 ? p->op[op->gi_op].profile : g ? g->gi.profile : NULL;
  char name[GS_GEOM_NAME_SIZE + 16];
  switch (op->kind) {
  case GS_LAYOUT_DESTROY_CI:
    return json_pack("{s:s, s:i, s:i}", "op", "destroy-ci", "gpu_instance", op->gi_id, "compute_instance",
                     op->ci_id);
  case GS_LAYOUT_DESTROY_GI:
    return json_pack("{s:s, s:i, s:s?, s:i}", "op", "destroy-gi", "gpu_instance", op->gi_id, "profile",
                     g ? g->gi.profile->name : NULL, "start", g ? (int)g->gi.start : -1);
  case GS_LAYOUT_SET_MIG:
    return json_pack("{s:s, s:b}", "op", op->mig_enable ? "enable-mig" : "disable-mig", "gpu_reset",
                     p->needs_reset);
  case GS_LAYOUT_CREATE_GI:
    return json_pack("{s:s, s:s, s:i, s:i}", "op", "create-gi", "profile", op->profile->name, "start",
                     op->start, "size", op->profile->span);
  case GS_LAYOUT_CREATE_CI:
    ci_name(r->b, gpu, gi, op->ci.profile_id, name, sizeof(name));
    if (op->gi_op >= 0)
      return json_pack("{s:s, s:s, s:i, s:i}", "op", "create-ci", "profile", name, "start", op->ci.start,
                       "in_step", op->gi_op);
    return json_pack("{s:s, s:s, s:i, s:i}", "op", "create-ci", "profile", name, "start", op->ci.start,
                     "gpu_instance", op->gi_id);
  }
  return json_null();
}

static void plan_json(struct report *r, unsigned gpu, const struct gs_layout_current *cur,
                      const struct gs_layout_plan *p, unsigned destroys, unsigned creates)
{
  struct gs_gpu_info info;
  struct gs_err err = {0};
  json_t *kept = json_array(), *steps = json_array();
  const bool want = r->sel && gpu < r->sel->ngpu && r->sel->target[gpu].mig_enabled;
  for (unsigned i = 0; i < cur->ngi; i++)
    if (!plan_destroys(p, cur->gi[i].gi.id))
      json_array_append_new(kept, json_pack("{s:i, s:s, s:i, s:i}", "gpu_instance", cur->gi[i].gi.id, "profile",
                                            cur->gi[i].gi.profile->name, "start", cur->gi[i].gi.start,
                                            "size", cur->gi[i].gi.profile->span));
  for (unsigned i = 0; i < p->nops; i++)
    json_array_append_new(steps, op_json(r, gpu, cur, p, &p->op[i]));
  if (r->b->ops->gpu_info(r->b, &err, gpu, &info) != 0)
    info.model = NULL;
  json_array_append_new(r->gpus,
                        json_pack("{s:i, s:s?, s:b, s:{s:b, s:b, s:b, s:b}, s:o, s:o, s:i, s:i}", "gpu", gpu,
                                  "model", info.model ? info.model->key : NULL, "matches", p->nops == 0,
                                  "mig", "enabled", cur->mig_current, "pending", cur->mig_pending, "wanted",
                                  want, "gpu_reset", p->needs_reset, "kept", kept, "steps", steps,
                                  "destroys", destroys, "creates", creates));
}

static void on_plan(void *arg, unsigned gpu, const struct gs_layout_plan *p)
{
  struct report *r = arg;
  struct gs_layout_current cur;
  struct gs_err err = {0};
  char now[512], want[512], where[GS_GEOM_NAME_SIZE + 32];
  unsigned destroys = 0, creates = 0;
  if (gs_layout_read_current(&err, r->b, gpu, &cur) != 0)
    memset(&cur, 0, sizeof(cur));
  for (unsigned i = 0; i < p->nops; i++) {
    destroys += p->op[i].kind == GS_LAYOUT_DESTROY_GI || p->op[i].kind == GS_LAYOUT_DESTROY_CI;
    creates += p->op[i].kind == GS_LAYOUT_CREATE_GI || p->op[i].kind == GS_LAYOUT_CREATE_CI;
  }
  r->changes += p->nops;
  if (r->json) {
    plan_json(r, gpu, &cur, p, destroys, creates);
    return;
  }
  if (p->nops == 0) {
    printf("GPU %u: already as configured (%u GPU instance%s kept)\n", gpu, p->kept_gis,
           p->kept_gis == 1 ? "" : "s");
    return;
  }
  printf("GPU %u: keep %u GPU instance%s; %u destroy and %u create operation%s\n", gpu, p->kept_gis,
         p->kept_gis == 1 ? "" : "s", destroys, creates, destroys + creates == 1 ? "" : "s");
  if (r->assert_only && r->sel && gpu < r->sel->ngpu) {
    describe_current(&cur, now, sizeof(now));
    describe_target(&r->sel->target[gpu], want, sizeof(want));
    printf("  has:    %s\n  config: %s\n", now, want);
  }
  for (unsigned i = 0; i < cur.ngi; i++)
    if (!plan_destroys(p, cur.gi[i].gi.id))
      printf("  keep GPU instance %u (%s)\n", cur.gi[i].gi.id, gi_where(&cur, cur.gi[i].gi.id, where, sizeof(where)));
  for (unsigned i = 0; i < p->nops; i++)
    print_op(r, gpu, &cur, p, &p->op[i]);
}

static void on_op(void *arg, unsigned gpu, const struct gs_layout_op *op, unsigned new_id, int rc,
                  const struct gs_err *err)
{
  struct report *r = arg;
  if (r->json)
    return;
  if (rc) {
    printf("GPU %u: failed: %s\n", gpu, err ? err->msg : gs_backend_code_text(rc));
    return;
  }
  if (op->kind == GS_LAYOUT_CREATE_GI)
    printf("GPU %u: created GPU instance ID %u (%s at %u:%u)\n", gpu, new_id, op->profile->name,
           op->start, op->profile->span);
  else if (op->kind == GS_LAYOUT_CREATE_CI)
    printf("GPU %u: created compute instance ID %u\n", gpu, new_id);
  else if (op->kind == GS_LAYOUT_DESTROY_GI)
    printf("GPU %u: destroyed GPU instance ID %u\n", gpu, op->gi_id);
  else if (op->kind == GS_LAYOUT_DESTROY_CI)
    printf("GPU %u: destroyed compute instance ID %u of GPU instance %u\n", gpu, op->ci_id, op->gi_id);
  else
    printf("GPU %u: MIG mode %s\n", gpu, op->mig_enable ? "enabled" : "disabled");
}

/* ---- the verbs ---- */

/* mig-parted's assert counts a GPU that no entry names as not applied; so
 * does ours. Returns how many there are, printed (or listed in `unnamed`). */
static unsigned report_unnamed(struct report *r, const struct gs_layout_selection *sel, const char *config,
                               json_t *unnamed)
{
  struct gs_gpu_info info;
  struct gs_err err = {0};
  unsigned n = 0;
  for (unsigned g = 0; g < sel->ngpu; g++) {
    if (sel->named[g])
      continue;
    n++;
    if (r->json)
      json_array_append_new(unnamed, json_integer(g));
    else
      printf("GPU %u (%s): no entry of config %s names it\n", g,
             r->b->ops->gpu_info(r->b, &err, g, &info) == 0 ? info.model->key : "?", config);
  }
  return n;
}

/* The variables nvidia-mig-parted gives its hooks (one per apply flag), and
 * ours. */
static void hook_env(const struct layout_opts *o, char env[][PATH_MAX + 40], char **envp)
{
  snprintf(env[0], PATH_MAX + 40, "MIG_PARTED_CONFIG_FILE=%s", o->file);
  snprintf(env[1], PATH_MAX + 40, "MIG_PARTED_SELECTED_CONFIG=%s", o->config);
  snprintf(env[2], PATH_MAX + 40, "MIG_PARTED_HOOKS_FILE=%s", o->hooks ? o->hooks : "");
  snprintf(env[3], PATH_MAX + 40, "MIG_PARTED_MODE_CHANGE_ONLY=%s", o->mode_only ? "true" : "false");
  snprintf(env[4], PATH_MAX + 40, "MIG_PARTED_SKIP_RESET=false");
  snprintf(env[5], PATH_MAX + 40, "GPUSLICE_CONFIG_FILE=%s", o->file);
  snprintf(env[6], PATH_MAX + 40, "GPUSLICE_SELECTED_CONFIG=%s", o->config);
  for (unsigned i = 0; i < 7; i++)
    envp[i] = env[i];
  envp[7] = NULL;
}

static int print_outcome(const struct report *r, const struct layout_opts *o, bool assert_only,
                         bool matches, json_t *unnamed)
{
  if (r->json)
    return cli_print_json(json_pack("{s:s, s:s, s:b, s:b, s:b, s:b, s:O, s:O}", "file", o->file, "config",
                                    o->config, "dry_run", o->dry_run || assert_only, "mode_only", o->mode_only,
                                    "matches", matches, "applied", !(o->dry_run || assert_only), "gpus",
                                    r->gpus, "unnamed", unnamed));
  if (assert_only && matches)
    printf("Config %s matches\n", o->config);
  else if (o->dry_run || assert_only)
    printf("Dry run: nothing was changed\n");
  else
    printf("Config %s applied\n", o->config);
  return 0;
}

static int run_apply_like(struct cli *c, int argc, char **argv, bool assert_only)
{
  struct layout_opts o = {0};
  struct gs_layout_file *file = NULL;
  struct gs_layout_selection sel = {0};
  struct gs_backend *b;
  struct gs_err err = {0};
  struct report r = {.sel = &sel, .assert_only = assert_only};
  char lock[PATH_MAX], env[7][PATH_MAX + 40], *envp[8];
  struct gs_layout_hooks *hooks = NULL;
  struct gs_layout_apply_opts ao = {.on_plan = on_plan, .on_op = on_op, .arg = &r};
  json_t *unnamed = json_array();
  unsigned nunnamed;
  bool matches;
  int rc, first = cli_getopt(c, argc, argv, on_layout_opt, &o);
  r.gpus = json_array();
  if (first <= 0) {
    rc = -first;
    goto out;
  }
  if (first < argc)
    rc = cli_usage("%s: unexpected argument; usage: %s", argv[first], cli_synopsis(c));
  else if ((rc = need_file(c, &o)) == 0 && (rc = cli_backend(c, &b)) == 0 &&
           (rc = load_selection(c, &o, b, &file, &sel)) == 0 && !assert_only)
    rc = load_hooks(&o, &hooks); /* assert runs none, as mig-parted's */
  if (rc)
    goto out;
  r.b = b;
  r.json = c->json;
  if (o.valid_only) {
    rc = r.json ? cli_print_json(json_pack("{s:s, s:s, s:b}", "file", o.file, "config", o.config, "valid", 1))
                : (printf("Config %s of %s is valid for these GPUs\n", o.config, o.file), 0);
    goto out;
  }
  hook_env(&o, env, envp);
  cli_apply_lock_path(b, lock);
  ao.hooks = hooks;
  ao.hook_env = envp;
  ao.config_name = o.config;
  ao.lock_path = lock;
  ao.wait_seconds = o.wait;
  ao.dry_run = o.dry_run || assert_only;
  ao.force = o.force;
  ao.mode_only = o.mode_only;
  if (gs_layout_apply(&err, b, &sel, &ao) != 0) {
    rc = cli_fail(&err);
    goto out;
  }
  nunnamed = assert_only ? report_unnamed(&r, &sel, o.config, unnamed) : 0;
  matches = nunnamed == 0 && r.changes == 0;
  rc = print_outcome(&r, &o, assert_only, matches, unnamed);
  if (rc == 0 && assert_only && r.changes) {
    fprintf(stderr, "gpuslice: config %s does not match the GPUs: the changes above would make it "
                    "(`gpuslice apply -f %s -c %s`)\n", o.config, o.file, o.config);
    rc = GS_EXIT_FAILED;
  } else if (rc == 0 && assert_only && !matches) {
    fprintf(stderr, "gpuslice: config %s does not name every GPU, so it is not what this machine runs "
                    "(as nvidia-mig-parted's assert); add an entry for the GPUs listed above\n", o.config);
    rc = GS_EXIT_FAILED;
  }
out:
  json_decref(r.gpus);
  json_decref(unnamed);
  free(hooks);
  gs_layout_selection_free(&sel);
  gs_layout_file_free(file);
  return rc;
}

static int run_apply(struct cli *c, int argc, char **argv)
{
  return run_apply_like(c, argc, argv, false);
}

static int run_assert(struct cli *c, int argc, char **argv)
{
  return run_apply_like(c, argc, argv, true);
}

static int run_export(struct cli *c, int argc, char **argv)
{
  struct layout_opts o = {0};
  struct gs_backend *b;
  struct gs_err err = {0};
  enum gs_layout_format fmt = GS_LAYOUT_GPUSLICE;
  char *yaml = NULL;
  int rc, first = cli_getopt(c, argc, argv, on_layout_opt, &o);
  if (first <= 0)
    return -first;
  if (first < argc)
    return cli_usage("%s: unexpected argument; usage: %s", argv[first], cli_synopsis(c));
  if (o.format && strcmp(o.format, "mig-parted") == 0)
    fmt = GS_LAYOUT_MIG_PARTED;
  else if (o.format && strcmp(o.format, "gpuslice") != 0)
    return cli_usage("--format '%s': choose gpuslice (exact) or mig-parted (counts only)", o.format);
  if ((rc = cli_backend(c, &b)) != 0)
    return rc;
  if (gs_layout_export(&err, b, fmt, o.config ? o.config : "current", &yaml) != 0)
    return cli_fail(&err);
  fputs(yaml, stdout);
  free(yaml);
  return GS_EXIT_OK;
}

static int run_recover(struct cli *c, int argc, char **argv)
{
  struct layout_opts o = {0};
  struct gs_backend *b;
  struct gs_err err = {0};
  struct report r = {0};
  char lock[PATH_MAX];
  struct gs_layout_apply_opts ao = {.on_plan = on_plan, .on_op = on_op, .arg = &r};
  bool found = false;
  int rc, first = cli_getopt(c, argc, argv, on_layout_opt, &o);
  if (first <= 0)
    return -first;
  if (first < argc)
    return cli_usage("%s: unexpected argument; usage: %s", argv[first], cli_synopsis(c));
  if ((rc = cli_backend(c, &b)) != 0)
    return rc;
  r.b = b;
  cli_apply_lock_path(b, lock);
  ao.lock_path = lock;
  ao.wait_seconds = o.wait;
  ao.force = o.force;
  if (gs_layout_recover(&err, b, &ao, &found) != 0)
    return cli_fail(&err);
  printf(found ? "Interrupted apply finished\n" : "Nothing to recover: no apply was interrupted\n");
  return GS_EXIT_OK;
}

const struct cli_verb cli_verbs_layout[] = {
    {NULL, "apply", run_apply, "apply a layout config (nvidia-mig-parted v1 or ours)", false,
     &apply_spec, false},
    {NULL, "assert", run_assert, "exit 0 when the GPUs match a config, else 1 and the changes",
     false, &assert_spec, false},
    {NULL, "export", run_export, "print the current layout as a config", false, &export_spec,
     false},
    {NULL, "recover", run_recover, "finish an apply that was interrupted", false, &recover_spec,
     false},
    {0},
};
