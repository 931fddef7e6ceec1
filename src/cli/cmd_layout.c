/* cmd_layout.c: `gpuslice apply|assert|export|recover`, declarative layouts
 * as nvidia-mig-parted has them (its v1 files are read unchanged), with the
 * fewest changes, a dry run that shows the plan, and crash recovery. */
#include "cli/cli.h"
#include "layout/layout.h"

#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

struct layout_opts {
  const char *file, *config, *format, *hooks;
  bool dry_run, force;
  unsigned wait;
};

struct report {
  struct gs_backend *b;
  unsigned changes;
  bool quiet_ops;
};

static int on_layout_opt(struct cli *c, int ch, const char *value, void *arg)
{
  struct layout_opts *o = arg;
  unsigned v[1];
  (void)c;
  switch (ch) {
  case 'f': o->file = value; return 0;
  case 'c': o->config = value; return 0;
  case 'F': o->format = value; return 0;
  case 'k': o->hooks = value; return 0;
  case 'n': o->dry_run = true; return 0;
  case 'x': o->force = true; return 0;
  case 'w':
    if (cli_parse_ids(value, "--wait", v, 1) < 0)
      return GS_EXIT_USAGE;
    o->wait = v[0];
    return 0;
  default:
    return cli_usage("unexpected option");
  }
}

static const struct option layout_extra[] = {
    {"config-file", required_argument, NULL, 'f'}, {"file", required_argument, NULL, 'f'},
    {"selected-config", required_argument, NULL, 'c'}, {"config", required_argument, NULL, 'c'},
    {"format", required_argument, NULL, 'F'},      {"dry-run", no_argument, NULL, 'n'},
    {"force", no_argument, NULL, 'x'},             {"wait", required_argument, NULL, 'w'},
    {"hooks-file", required_argument, NULL, 'k'},
    {0},
};

/* -f and -c, or mig-parted's environment variables for them. */
static int need_file_and_config(struct layout_opts *o, const char *usage)
{
  if (!o->file)
    o->file = getenv("MIG_PARTED_CONFIG_FILE");
  if (!o->config)
    o->config = getenv("MIG_PARTED_SELECTED_CONFIG");
  if (!o->file || !o->config)
    return cli_usage("name the config file with -f and the config with -c; usage: %s", usage);
  return 0;
}

/* The lock and journal: beside the emulator's state, or in /var/lib/gpuslice. */
static void lock_path(struct gs_backend *b, char out[PATH_MAX])
{
  const char *env = getenv("GPUSLICE_APPLY_LOCK"), *emu = gs_emu_state_path(b);
  if (env && *env)
    snprintf(out, PATH_MAX, "%s", env);
  else if (emu)
    snprintf(out, PATH_MAX, "%s.apply", emu);
  else
    snprintf(out, PATH_MAX, "/var/lib/gpuslice/apply");
}

static int load_selection(struct cli *c, const struct layout_opts *o, struct gs_backend *b,
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

static void describe_op(struct report *r, unsigned gpu, const struct gs_layout_plan *p,
                        const struct gs_layout_op *op)
{
  char name[GS_GEOM_NAME_SIZE + 16];
  switch (op->kind) {
  case GS_LAYOUT_DESTROY_CI:
    printf("  destroy compute instance %u of GPU instance %u\n", op->ci_id, op->gi_id);
    break;
  case GS_LAYOUT_DESTROY_GI:
    printf("  destroy GPU instance %u\n", op->gi_id);
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
    printf("  create compute instance %s in %s%s\n", ci_name(r->b, gpu, gi, op->ci.profile_id, name, sizeof(name)),
           op->gi_op >= 0 ? "the new " : "GPU instance ",
           op->gi_op >= 0 ? gi->name : (snprintf(name, sizeof(name), "%u", op->gi_id), name));
    break;
  }
  }
}

static void on_plan(void *arg, unsigned gpu, const struct gs_layout_plan *p)
{
  struct report *r = arg;
  unsigned destroys = 0, creates = 0;
  for (unsigned i = 0; i < p->nops; i++) {
    destroys += p->op[i].kind == GS_LAYOUT_DESTROY_GI || p->op[i].kind == GS_LAYOUT_DESTROY_CI;
    creates += p->op[i].kind == GS_LAYOUT_CREATE_GI || p->op[i].kind == GS_LAYOUT_CREATE_CI;
  }
  r->changes += p->nops;
  if (p->nops == 0) {
    printf("GPU %u: already as configured (%u GPU instance%s kept)\n", gpu, p->kept_gis,
           p->kept_gis == 1 ? "" : "s");
    return;
  }
  printf("GPU %u: keep %u GPU instance%s; %u destroy and %u create operation%s\n", gpu, p->kept_gis,
         p->kept_gis == 1 ? "" : "s", destroys, creates, destroys + creates == 1 ? "" : "s");
  for (unsigned i = 0; i < p->nops; i++)
    describe_op(r, gpu, p, &p->op[i]);
}

static void on_op(void *arg, unsigned gpu, const struct gs_layout_op *op, unsigned new_id, int rc,
                  const struct gs_err *err)
{
  struct report *r = arg;
  if (rc) {
    printf("GPU %u: failed: %s\n", gpu, err ? err->msg : gs_code_text(rc));
    return;
  }
  if (r->quiet_ops)
    return;
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

static int run_apply_like(struct cli *c, int argc, char **argv, const char *usage, bool assert_only)
{
  struct layout_opts o = {0};
  struct gs_layout_file *file = NULL;
  struct gs_layout_selection sel = {0};
  struct gs_backend *b;
  struct gs_err err = {0};
  struct report r = {0};
  char lock[PATH_MAX], env[4][PATH_MAX + 32];
  char *envp[] = {env[0], env[1], env[2], env[3], NULL};
  struct gs_layout_hooks *hooks = NULL;
  struct gs_layout_apply_opts ao = {.on_plan = on_plan, .on_op = on_op, .arg = &r};
  int rc, first = cli_getopt(c, argc, argv, usage, layout_extra, on_layout_opt, &o);
  if (first <= 0)
    return -first;
  if (first < argc)
    return cli_usage("%s: unexpected argument; usage: %s", argv[first], usage);
  if ((rc = need_file_and_config(&o, usage)) != 0 || (rc = cli_backend(c, &b)) != 0)
    return rc;
  r.b = b;
  if ((rc = load_selection(c, &o, b, &file, &sel)) != 0 || (rc = load_hooks(&o, &hooks)) != 0)
    goto out;
  /* What mig-parted's hooks expect to find, under its names and ours. */
  snprintf(env[0], sizeof(env[0]), "MIG_PARTED_CONFIG_FILE=%s", o.file);
  snprintf(env[1], sizeof(env[1]), "MIG_PARTED_SELECTED_CONFIG=%s", o.config);
  snprintf(env[2], sizeof(env[2]), "GPUSLICE_CONFIG_FILE=%s", o.file);
  snprintf(env[3], sizeof(env[3]), "GPUSLICE_SELECTED_CONFIG=%s", o.config);
  ao.hooks = hooks;
  ao.hook_env = envp;
  lock_path(b, lock);
  ao.config_name = o.config;
  ao.lock_path = lock;
  ao.wait_seconds = o.wait;
  ao.dry_run = o.dry_run || assert_only;
  ao.force = o.force;
  if (gs_layout_apply(&err, b, &sel, &ao) != 0) {
    rc = cli_fail(&err);
    goto out;
  }
  if (assert_only && r.changes) {
    fprintf(stderr, "gpuslice: config %s does not match the GPUs: the changes above would make it "
                    "(`gpuslice apply -f %s -c %s`)\n",
            o.config, o.file, o.config);
    rc = GS_EXIT_FAILED;
  } else if (assert_only)
    printf("Config %s matches\n", o.config);
  else if (o.dry_run)
    printf("Dry run: nothing was changed\n");
  else
    printf("Config %s applied\n", o.config);
out:
  free(hooks);
  gs_layout_selection_free(&sel);
  gs_layout_file_free(file);
  return rc;
}

static int run_apply(struct cli *c, int argc, char **argv)
{
  return run_apply_like(c, argc, argv,
                        "gpuslice apply -f FILE -c CONFIG [--dry-run] [--force] [--wait SECONDS] "
                        "[-k HOOKS]\n"
                        "  FILE: nvidia-mig-parted v1 or gpuslice/v1 YAML (- for stdin); HOOKS: "
                        "mig-parted's hooks file",
                        false);
}

static int run_assert(struct cli *c, int argc, char **argv)
{
  return run_apply_like(c, argc, argv, "gpuslice assert -f FILE -c CONFIG", true);
}

static int run_export(struct cli *c, int argc, char **argv)
{
  static const char usage[] = "gpuslice export [--format gpuslice|mig-parted] [-c NAME]";
  struct layout_opts o = {0};
  struct gs_backend *b;
  struct gs_err err = {0};
  enum gs_layout_format fmt = GS_LAYOUT_GPUSLICE;
  char *yaml = NULL;
  int rc, first = cli_getopt(c, argc, argv, usage, layout_extra, on_layout_opt, &o);
  if (first <= 0)
    return -first;
  if (first < argc)
    return cli_usage("%s: unexpected argument; usage: %s", argv[first], usage);
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
  static const char usage[] = "gpuslice recover [--wait SECONDS]   (finishes an interrupted apply)";
  struct layout_opts o = {0};
  struct gs_backend *b;
  struct gs_err err = {0};
  struct report r = {0};
  char lock[PATH_MAX];
  struct gs_layout_apply_opts ao = {.on_plan = on_plan, .on_op = on_op, .arg = &r};
  bool found = false;
  int rc, first = cli_getopt(c, argc, argv, usage, layout_extra, on_layout_opt, &o);
  if (first <= 0)
    return -first;
  if ((rc = cli_backend(c, &b)) != 0)
    return rc;
  r.b = b;
  lock_path(b, lock);
  ao.lock_path = lock;
  ao.wait_seconds = o.wait;
  ao.force = o.force;
  if (gs_layout_recover(&err, b, &ao, &found) != 0)
    return cli_fail(&err);
  printf(found ? "Interrupted apply finished\n" : "Nothing to recover: no apply was interrupted\n");
  return GS_EXIT_OK;
}

const struct cli_verb cli_verbs_layout[] = {
    {NULL, "apply", run_apply, "apply a layout config (nvidia-mig-parted v1 or ours)", false},
    {NULL, "assert", run_assert, "exit 0 when the GPUs match a config, else 1 and the changes", false},
    {NULL, "export", run_export, "print the current layout as a config", false},
    {NULL, "recover", run_recover, "finish an apply that was interrupted", false},
    {0},
};
