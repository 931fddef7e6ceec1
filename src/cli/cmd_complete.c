/* SPDX-License-Identifier: Apache-2.0 */
/* cmd_complete.c: `gpuslice complete [--shell bash|zsh] -- WORD...`, the
 * hidden verb the bash and zsh completion scripts call on TAB (deploy/
 * completion/): the words after "gpuslice", the last one being completed,
 * give one candidate a line (zsh: "word:description"), or one line
 * "@file", "@dir" or "@default" when the shell's own completion fits.
 * Commands and options come from the verbs' tables (cli_opt); profile
 * names, GPU indices and config names from this machine and the -f file,
 * job ids from the jobs directory (the caller's own only; nothing created).
 * Never prints an error: a TAB that finds nothing offers nothing. */
#include "cli/cli.h"
#include "jobs/jobs.h"
#include "layout/layout.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_WORDS 256

struct comp {
  struct cli *c;
  bool zsh;
  const char *cur;    /* the word being completed */
  const char *prefix; /* what a candidate must start with (cur after a ',' or '=') */
  char head[256];     /* what goes before each candidate: "1g.5gb," or "--policy=" */
  const char *gpus;   /* -i's value in the words, if any */
  const char *file;   /* -f's value (a layout file), if any */
  const char *jobs_dir; /* --jobs-dir's value, if any */
};

static void put(const struct comp *x, const char *word, const char *desc)
{
  char full[512];
  if (strncmp(word, x->prefix, strlen(x->prefix)) != 0)
    return;
  snprintf(full, sizeof(full), "%s%s", x->head, word);
  if (!x->zsh) {
    puts(full);
    return;
  }
  for (const char *p = full; *p; p++) { /* zsh's _describe: ':' ends the word */
    if (*p == ':' || *p == '\\')
      putchar('\\');
    putchar(*p);
  }
  if (desc && *desc)
    printf(":%s", desc);
  putchar('\n');
}

/* Candidates after the last separator of cur (',' in lists): head keeps the rest. */
static void split_at(struct comp *x, char sep)
{
  const char *last = strrchr(x->cur, sep);
  if (!last)
    return;
  snprintf(x->head, sizeof(x->head), "%.*s", (int)(last + 1 - x->cur), x->cur);
  x->prefix = last + 1;
}

/* ---- values from this machine ---- */

static struct gs_backend *machine(struct comp *x)
{
  struct gs_err err = {0};
  if (!x->c->backend && gs_backend_open(&err, &x->c->cfg, &x->c->backend) != 0)
    return NULL;
  return x->c->backend;
}

static void gpu_indices(struct comp *x)
{
  struct gs_backend *b = machine(x);
  struct gs_err err = {0};
  unsigned n = 0;
  char word[16];
  split_at(x, ',');
  if (!b || b->ops->gpu_count(b, &err, &n) != 0)
    return;
  for (unsigned g = 0; g < n; g++) {
    struct gs_gpu_info info;
    snprintf(word, sizeof(word), "%u", g);
    put(x, word, b->ops->gpu_info(b, &err, g, &info) == 0 ? info.name : NULL);
  }
}

/* The models of the GPUs -i selects (all without -i), each once; their count. */
static unsigned selected_models(struct comp *x, const struct gs_geom_model *out[GS_BACKEND_MAX_GPUS])
{
  struct gs_backend *b = machine(x);
  unsigned ids[GS_BACKEND_MAX_GPUS], n = 0, nout = 0;
  struct gs_err err = {0};
  int nid = 0;
  if (!b || b->ops->gpu_count(b, &err, &n) != 0)
    return 0;
  if (x->gpus) { /* indices only: UUIDs in -i complete every GPU's profiles */
    char *end;
    for (const char *p = x->gpus; *p && nid < (int)GS_NITEMS(ids); p = *end ? end + 1 : end)
      ids[nid++] = (unsigned)strtoul(p, &end, 10);
  }
  for (unsigned g = 0; g < n; g++) {
    struct gs_gpu_info info;
    bool wanted = !x->gpus, dup = false;
    for (int k = 0; k < nid && !wanted; k++)
      wanted = ids[k] == g;
    if (!wanted || b->ops->gpu_info(b, &err, g, &info) != 0)
      continue;
    for (unsigned k = 0; k < nout; k++)
      dup = dup || out[k] == info.model;
    if (!dup)
      out[nout++] = info.model;
  }
  return nout;
}

/* The GI profile names of the selected GPUs, each once (1g.10gb of two
 * models is one word). */
static void profile_names(struct comp *x)
{
  const struct gs_geom_model *seen[GS_BACKEND_MAX_GPUS];
  unsigned nseen;
  split_at(x, ',');
  nseen = selected_models(x, seen);
  for (unsigned m = 0; m < nseen; m++)
    for (unsigned k = 0; k < seen[m]->ngi; k++) {
      const struct gs_geom_gi_profile *p = &seen[m]->gi[k];
      char desc[96];
      bool named = false;
      for (unsigned s = 0; s < m && !named; s++)
        named = gs_geom_gi_profile_find(seen[s], p->name) != NULL;
      snprintf(desc, sizeof(desc), "profile %u on %s", p->id, seen[m]->key);
      if (!named)
        put(x, p->name, desc);
    }
}

/* The compute instance profile names of the selected GPUs' GI profiles,
 * each once (every GI profile of a model offers "1c..." of its own size). */
static void ci_profile_names(struct comp *x)
{
  const struct gs_geom_model *seen[GS_BACKEND_MAX_GPUS];
  char said[64][sizeof(((struct gs_geom_ci_profile *)0)->name)];
  unsigned nseen, nsaid = 0;
  split_at(x, ',');
  nseen = selected_models(x, seen);
  for (unsigned m = 0; m < nseen; m++)
    for (unsigned k = 0; k < seen[m]->ngi; k++) {
      struct gs_geom_ci_profile cps[GS_GEOM_MAX_CI_PROFILES];
      unsigned n = gs_geom_ci_profiles(seen[m], &seen[m]->gi[k], cps);
      for (unsigned i = 0; i < n; i++) {
        char desc[96];
        bool dup = false;
        for (unsigned s = 0; s < nsaid && !dup; s++)
          dup = strcmp(said[s], cps[i].name) == 0;
        if (dup || nsaid == GS_NITEMS(said))
          continue;
        memcpy(said[nsaid++], cps[i].name, sizeof(said[0]));
        snprintf(desc, sizeof(desc), "profile %u in %s on %s", cps[i].id, seen[m]->gi[k].name,
                 seen[m]->key);
        put(x, cps[i].name, desc);
      }
    }
}

/* The caller's own job ids in the directory the command would use (another
 * user's are never offered, even to root); a missing directory offers none
 * and is not created. */
static void job_ids(struct comp *x)
{
  struct gs_jobs_job *jobs = NULL;
  struct gs_err err = {0};
  char dir[PATH_MAX];
  unsigned n = 0;
  struct gs_backend *b = x->jobs_dir ? NULL : machine(x);
  if ((!x->jobs_dir && !b) || gs_jobs_dir_name(&err, b, x->jobs_dir, dir) != 0 ||
      gs_jobs_list(&err, dir, NULL, NULL, &jobs, &n) != 0)
    return;
  for (unsigned i = 0; i < n; i++)
    if (jobs[i].owner == (unsigned)geteuid())
      put(x, jobs[i].id, gs_jobs_state_name(jobs[i].state));
  gs_jobs_list_free(jobs, n);
}

/* The configs of the layout file the words name with -f (or
 * $MIG_PARTED_CONFIG_FILE). */
static void config_names(struct comp *x)
{
  const char *path = x->file ? x->file : getenv("MIG_PARTED_CONFIG_FILE");
  struct gs_layout_file *f = NULL;
  struct gs_err err = {0};
  char *text = NULL;
  size_t len = 0;
  if (!path || gs_file_read(&err, path, 1u << 20, &text, &len) != 0)
    return;
  if (gs_layout_parse(&err, path, text, len, &f) == 0)
    for (unsigned k = 0; k < f->nconfig; k++)
      put(x, f->config[k].name, NULL);
  gs_layout_file_free(f);
  free(text);
}

static void model_keys(struct comp *x)
{
  unsigned n;
  const struct gs_geom_model *const *all = gs_geom_models(&n);
  split_at(x, ',');
  for (unsigned i = 0; i < n; i++)
    put(x, all[i]->key, all[i]->name);
}

/* The words of "p2c|rr". */
static void choices(struct comp *x, const char *arg)
{
  char word[64];
  while (arg && *arg) {
    size_t n = strcspn(arg, "|");
    snprintf(word, sizeof(word), "%.*s", (int)n, arg);
    put(x, word, NULL);
    arg += n + (arg[n] == '|');
  }
}

static void value_of(struct comp *x, enum cli_value kind, const char *arg)
{
  switch (kind) {
  case CLI_VALUE_FILE: puts("@file"); break;
  case CLI_VALUE_DIR: puts("@dir"); break;
  case CLI_VALUE_COMMAND: puts("@default"); break;
  case CLI_VALUE_GPUS: gpu_indices(x); break;
  case CLI_VALUE_PROFILE: profile_names(x); break;
  case CLI_VALUE_CI_PROFILE: ci_profile_names(x); break;
  case CLI_VALUE_JOB: job_ids(x); break;
  case CLI_VALUE_CONFIG: config_names(x); break;
  case CLI_VALUE_MODEL: model_keys(x); break;
  case CLI_VALUE_CHOICE: choices(x, arg); break;
  case CLI_VALUE_TEXT: break;
  }
}

/* ---- words ---- */

static const struct cli_opt *long_row(const struct cli_opt *rows, const char *name, size_t n)
{
  for (; rows && (rows[0].name || rows[0].letter); rows++)
    if (rows->name && strlen(rows->name) == n && strncmp(rows->name, name, n) == 0)
      return rows;
  return NULL;
}

static const struct cli_opt *letter_row(const struct cli_opt *rows, char letter)
{
  for (; rows && (rows[0].name || rows[0].letter); rows++)
    if (rows->letter == letter)
      return rows;
  return NULL;
}

/* Notes the values completion needs (-i, -f, --jobs-dir) from an option and its value. */
static void note(struct comp *x, const struct cli_opt *o, const char *value)
{
  if (o && o->val == CLI_V_GPUS)
    x->gpus = value;
  else if (o && o->name && strcmp(o->name, "jobs-dir") == 0)
    x->jobs_dir = value;
  else if (o && (o->letter == 'f' || (o->name && (strcmp(o->name, "config-file") == 0 ||
                                                   strcmp(o->name, "file") == 0))))
    x->file = value;
}

/* Walks a verb's words before cur: the option whose value cur is (NULL:
 * none), or *dashes when `--` came (a command follows). */
static const struct cli_opt *pending(struct comp *x, const struct cli_opt *rows, int n, char **w,
                                     bool *dashes)
{
  for (int i = 0; i < n; i++) {
    const struct cli_opt *o = NULL;
    const char *eq;
    if (strcmp(w[i], "--") == 0)
      return *dashes = true, NULL;
    if (strncmp(w[i], "--", 2) == 0) {
      eq = strchr(w[i], '=');
      o = long_row(rows, w[i] + 2, eq ? (size_t)(eq - w[i] - 2) : strlen(w[i] + 2));
      if (o && o->arg && !eq && i + 1 == n)
        return o;
      note(x, o, eq ? eq + 1 : i + 1 < n ? w[i + 1] : NULL);
      i += o && o->arg && !eq;
      continue;
    }
    for (const char *l = w[i][0] == '-' ? w[i] + 1 : ""; *l; l++)
      if ((o = letter_row(rows, *l)) != NULL && o->arg) {
        if (!l[1] && i + 1 == n)
          return o;
        note(x, o, l[1] ? l + 1 : w[i + 1]);
        i += !l[1];
        break;
      }
  }
  return NULL;
}

static void options(struct comp *x, const struct cli_opt *rows)
{
  for (; rows && (rows[0].name || rows[0].letter); rows++) {
    char word[80];
    if (rows->deprecated || !rows->name)
      continue;
    snprintf(word, sizeof(word), "--%s", rows->name);
    put(x, word, rows->help);
  }
  put(x, "--help", "this help");
}

/* The commands (group NULL) or a group's verbs; a group word once, described
 * by its family's title. */
static void first_words(struct comp *x, const char *group)
{
  const char *last = "";
  for (unsigned t = 0; t < cli_nfamilies; t++)
    for (const struct cli_verb *v = cli_families[t].verbs; v->name; v++) {
      const char *w = group ? (v->group && strcmp(v->group, group) == 0 ? v->name : NULL)
                            : v->group ? v->group : v->name;
      if (w && strcmp(w, last) != 0)
        put(x, w, group || !v->group ? v->summary : cli_families[t].title);
      last = w ? w : last;
    }
}

/* Takes the global options out of the words (their values set the machine
 * to look at); true when cur is one's value, which is then completed. */
static bool globals(struct comp *x, int *n, char **w)
{
  int out = 0;
  for (int i = 0; i < *n; i++) {
    const struct cli_opt *o = NULL;
    if (strcmp(w[i], "--") == 0) {
      while (i < *n)
        w[out++] = w[i++];
      break;
    }
    if (strncmp(w[i], "--", 2) == 0)
      o = long_row(cli_global_opts, w[i] + 2, strcspn(w[i] + 2, "="));
    else if (strcmp(w[i], "-q") == 0)
      continue;
    if (!o) {
      w[out++] = w[i];
      continue;
    }
    if (o->arg && !strchr(w[i], '=') && i + 1 == *n) {
      value_of(x, o->value, o->arg);
      return true;
    }
    if (o->arg) {
      const char *v = strchr(w[i], '=') ? strchr(w[i], '=') + 1 : w[++i];
      const char **slot = strcmp(o->name, "emulate") == 0     ? &x->c->cfg.emulate
                          : strcmp(o->name, "emu-state") == 0 ? &x->c->cfg.state_path
                                                              : &x->c->cfg.kind;
      *slot = v;
    }
  }
  *n = out;
  return false;
}

static void complete(struct comp *x, int n, char **w)
{
  const struct cli_verb *v = NULL;
  const struct cli_opt *o;
  bool dashes = false;
  int used = 0;
  if (globals(x, &n, w))
    return;
  if (n > 0)
    v = cli_find_verb(n, w, &used);
  if (n == 0 || (n == 1 && !v)) {
    if (x->cur[0] == '-')
      options(x, cli_global_opts);
    else if (n == 0)
      first_words(x, NULL);
    else
      first_words(x, w[0]);
    return;
  }
  if (!v || !v->spec)
    return;
  if (used == 1 && n == 1 && x->cur[0] != '-') /* "bench p": bench's own operands or plot */
    first_words(x, w[0]);
  o = pending(x, v->spec->opts, n - used, w + used, &dashes);
  if (dashes)
    puts("@default");
  else if (o)
    value_of(x, o->value, o->arg);
  else if (strncmp(x->cur, "--", 2) == 0 && strchr(x->cur, '=')) {
    const char *eq = strchr(x->cur, '=');
    if ((o = long_row(v->spec->opts, x->cur + 2, (size_t)(eq - x->cur - 2))) != NULL && o->arg) {
      snprintf(x->head, sizeof(x->head), "%.*s", (int)(eq + 1 - x->cur), x->cur);
      x->prefix = eq + 1;
      value_of(x, o->value, o->arg);
    }
  } else if (x->cur[0] == '-')
    options(x, v->spec->opts);
  else if (v->spec->operands)
    value_of(x, v->spec->operand, NULL);
}

static int on_complete_opt(struct cli *c, int ch, const char *value, void *arg)
{
  (void)c;
  (void)ch;
  if (strcmp(value, "bash") != 0 && strcmp(value, "zsh") != 0)
    return cli_usage("--shell %s: expected bash or zsh", value);
  *(bool *)arg = strcmp(value, "zsh") == 0;
  return 0;
}

static const struct cli_opt complete_opts[] = {
    {"shell", 0, "bash|zsh", 's', "bash", "the shell asking (zsh: word:description lines)",
     CLI_VALUE_CHOICE, NULL},
    {0},
};

static const struct cli_spec complete_spec = {
    .operands = "-- WORD...",
    .opts = complete_opts,
    .about = "For the shells' completion scripts: the candidates for the last WORD of a gpuslice\n"
             "command line (the words after \"gpuslice\").",
    .examples = "gpuslice complete -- gi create 1g",
};

static int run_complete(struct cli *c, int argc, char **argv)
{
  struct comp x = {.c = c, .cur = ""};
  char *words[MAX_WORDS];
  int first = cli_getopt(c, argc, argv, on_complete_opt, &x.zsh), n;
  if (first <= 0)
    return -first;
  n = argc - first;
  if (n > MAX_WORDS)
    return GS_EXIT_OK; /* nothing to offer on such a line */
  for (int i = 0; i < n; i++)
    words[i] = argv[first + i];
  if (n > 0)
    x.cur = words[--n];
  x.prefix = x.cur;
  c->quiet = true;
  complete(&x, n, words);
  return GS_EXIT_OK;
}

const struct cli_verb cli_verbs_complete[] = {
    {NULL, "complete", run_complete, "candidates for shell completion", false, &complete_spec, true},
    {0},
};
