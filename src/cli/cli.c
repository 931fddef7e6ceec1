/* SPDX-License-Identifier: Apache-2.0 */
/* cli.c: the command line: global options, verb dispatch, and the helpers
 * of cli.h the verbs share (errors, GPU selection, JSON and table output). */
#include "cli/cli.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* The man pages of commands, in `gpuslice --help` order: gpuslice-<page>(1). */
const struct cli_family cli_families[] = {
    {"list", "list GPUs and MIG devices with their UUIDs", cli_verbs_list},
    {"mig", "enable, disable and query MIG mode", cli_verbs_mig},
    {"gi", "GPU instances: profiles, placements, create, list, destroy", cli_verbs_gi},
    {"ci", "compute instances: profiles, placements, create, list, destroy", cli_verbs_ci},
    {"layouts", "the valid MIG layouts of a GPU model, and the models", cli_verbs_layouts},
    {"apply", "declarative MIG layouts: apply, assert, export, recover", cli_verbs_layout},
    {"emu", "the emulated machine's controls", cli_verbs_emu},
    {"worker", "an emulated KServe v2 inference server", cli_verbs_worker},
    {"serve", "one inference worker per MIG device behind a load balancer", cli_verbs_serve},
    {"plan", "pack workloads onto GPUs and slices", cli_verbs_plan},
    {"bench", "the load generator, and its plots", cli_verbs_bench},
    {"run", "run a command on a free slice", cli_verbs_run},
    {"queue", "the slice queue, its jobs and the claims ledger", cli_verbs_queue},
    {"job-emu", "an emulated training job", cli_verbs_job_emu},
    {"mps", "MPS control daemons per GPU or MIG device", cli_verbs_mps},
    {"slurm", "the node side of a Slurm cluster on MIG slices", cli_verbs_slurm},
    {"version", "the program's version", cli_verbs_version},
};
const unsigned cli_nfamilies = GS_NITEMS(cli_families);

enum { G_EMULATE = 1, G_STATE, G_BACKEND, G_LOG_FORMAT, G_LOG_LEVEL, G_QUIET, G_HELP, G_VERSION };

const struct cli_opt cli_global_opts[] = {
    {"emulate", 0, "SPEC", G_EMULATE, NULL,
     "emulated GPUs, e.g. a100-40gb:8,h100-80gb:2 (env GPUSLICE_EMULATE)", CLI_VALUE_MODEL, NULL},
    {"emu-state", 0, "FILE", G_STATE, NULL, "the emulator's state file (env GPUSLICE_EMU_STATE)",
     CLI_VALUE_FILE, NULL},
    {"backend", 0, "nvml|emu", G_BACKEND, "nvml when libnvidia-ml.so.1 loads and sees a GPU, else emu",
     "real GPUs through NVML, or emulated ones", CLI_VALUE_CHOICE, NULL},
    {"log-format", 0, "auto|text|journal|json", G_LOG_FORMAT,
     "auto: journal when stderr is the journal, else text",
     "how log lines look (env GPUSLICE_LOG_FORMAT)", CLI_VALUE_CHOICE, NULL},
    {"log-level", 0, "debug|info|notice|warning|error", G_LOG_LEVEL, "info",
     "the least severe log lines written (env GPUSLICE_LOG_LEVEL)", CLI_VALUE_CHOICE, NULL},
    {"quiet", 'q', NULL, G_QUIET, NULL, "no notice about emulated GPUs on stderr", CLI_VALUE_TEXT,
     NULL},
    {"help", 'h', NULL, G_HELP, NULL, "this text; `gpuslice COMMAND --help` for a command's",
     CLI_VALUE_TEXT, NULL},
    {"version", 'V', NULL, G_VERSION, NULL, "the version (as `gpuslice version`)", CLI_VALUE_TEXT,
     NULL},
    {0},
};

void cli_each_verb(void (*fn)(const struct cli_verb *v, void *arg), void *arg)
{
  for (unsigned t = 0; t < cli_nfamilies; t++)
    for (const struct cli_verb *v = cli_families[t].verbs; v->name; v++)
      fn(v, arg);
}

static void help_line(const struct cli_verb *v, void *arg)
{
  char name[40];
  cli_verb_words(v, name, sizeof(name));
  fprintf(arg, "  %-22s %s\n", name, v->summary);
}

static void print_help(FILE *out)
{
  char sp[64];
  fprintf(out, "usage: gpuslice [global options] <command> [options]\n\n"
               "Partition NVIDIA GPUs with MIG (emulated GPUs when no driver is present).\n\n"
               "commands:\n");
  cli_each_verb(help_line, out);
  fprintf(out, "\nglobal options (before or after the command):\n");
  for (const struct cli_opt *o = cli_global_opts; o->name; o++) {
    cli_opt_spelling(o, sp, sizeof(sp));
    fprintf(out, "  %-20s %s%s%s%s\n", sp, o->help, o->def ? " (default: " : "",
            o->def ? o->def : "", o->def ? ")" : "");
  }
  fprintf(out, "\nexit status: %s\n\n%s\n\nman gpuslice, man gpuslice-COMMAND (e.g. gpuslice-gi) for more.\n",
          cli_exit_text, cli_duration_text);
}

/* Takes the global options out of argv wherever they stand (before "--"),
 * so every verb accepts them; returns the new argc. */
static int take_globals(struct cli *c, int argc, char **argv)
{
  const char **slot[] = {[G_EMULATE] = &c->cfg.emulate, [G_STATE] = &c->cfg.state_path,
                         [G_BACKEND] = &c->cfg.kind, [G_LOG_FORMAT] = &c->log_format,
                         [G_LOG_LEVEL] = &c->log_level};
  int out = 1;
  for (int i = 1; i < argc; i++) {
    bool taken = false;
    if (strcmp(argv[i], "--") == 0) {
      while (i < argc)
        argv[out++] = argv[i++];
      break;
    }
    for (const struct cli_opt *o = cli_global_opts; o->name && !taken; o++) {
      size_t n = strlen(o->name);
      if (o->val == G_QUIET)
        taken = strcmp(argv[i], "-q") == 0 || strcmp(argv[i], "--quiet") == 0;
      if (taken)
        c->quiet = true;
      if (!o->arg || strncmp(argv[i], "--", 2) != 0 || strncmp(argv[i] + 2, o->name, n) != 0)
        continue;
      if (argv[i][n + 2] == '=') {
        *slot[o->val] = argv[i] + n + 3;
        taken = true;
      } else if (argv[i][n + 2] == 0 && i + 1 < argc) {
        *slot[o->val] = argv[++i];
        taken = true;
      }
    }
    if (!taken)
      argv[out++] = argv[i];
  }
  argv[out] = NULL;
  return out;
}

static const struct cli_verb *find_verb(const char *group, const char *name)
{
  for (unsigned t = 0; t <= cli_nfamilies; t++)
    for (const struct cli_verb *v = t < cli_nfamilies ? cli_families[t].verbs : cli_verbs_complete;
         v->name; v++)
      if (group ? v->group && strcmp(v->group, group) == 0 && name && strcmp(v->name, name) == 0
                : !v->group && strcmp(v->name, name) == 0)
        return v;
  return NULL;
}

/* A word is a group when some verb has it as its group; "bench" is both a
 * verb and the group of `bench plot`. */
static bool is_group(const char *word)
{
  for (unsigned t = 0; t < cli_nfamilies; t++)
    for (const struct cli_verb *v = cli_families[t].verbs; v->name; v++)
      if (v->group && strcmp(v->group, word) == 0)
        return true;
  return false;
}

const struct cli_verb *cli_find_verb(int nwords, char **words, int *used)
{
  const struct cli_verb *v = NULL;
  if (nwords >= 2 && is_group(words[0]) && (v = find_verb(words[0], words[1])) != NULL)
    *used = 2;
  else if (nwords >= 1 && (v = find_verb(NULL, words[0])) != NULL)
    *used = 1;
  return v;
}

bool cli_is_open_ended(int argc, char **argv)
{
  for (int i = 1; i < argc; i++)
    for (unsigned t = 0; t < cli_nfamilies; t++)
      for (const struct cli_verb *v = cli_families[t].verbs; v->name; v++)
        if (v->open_ended && strcmp(v->name, argv[i]) == 0)
          return true;
  return false;
}

static int group_usage(const char *group, const char *bad)
{
  fprintf(stderr, "gpuslice: %s%s%s: choose one of:", group, bad ? ": unknown command " : "",
          bad ? bad : "");
  for (unsigned t = 0; t < cli_nfamilies; t++)
    for (const struct cli_verb *v = cli_families[t].verbs; v->name; v++)
      if (v->group && strcmp(v->group, group) == 0)
        fprintf(stderr, " %s", v->name);
  fprintf(stderr, " (e.g. `gpuslice %s --help`)\n", group);
  return GS_EXIT_USAGE;
}

/* `gpuslice <group> --help`: the group's commands, on stdout. */
static int group_help(const char *group)
{
  printf("usage: gpuslice %s <command> [options]   (`gpuslice %s <command> --help` for one)\n\n"
         "commands:\n",
         group, group);
  for (unsigned t = 0; t < cli_nfamilies; t++)
    for (const struct cli_verb *v = cli_families[t].verbs; v->name; v++)
      if (v->group && strcmp(v->group, group) == 0)
        printf("  %-12s %s\n", v->name, v->summary);
  return GS_EXIT_OK;
}

/* A wait for a lock that lasts is said, once, as it happens. */
static void lock_notice(const char *line)
{
  fprintf(stderr, "gpuslice: %s\n", line);
}

int cli_main(int argc, char **argv)
{
  struct cli c = {0};
  int rc, used = 0;
  c.cfg.emulate = getenv("GPUSLICE_EMULATE");
  argc = take_globals(&c, argc, argv);
  if (!c.quiet)
    gs_file_set_lock_notice(lock_notice);
  if (argc < 2)
    return cli_usage("no command given; `gpuslice --help` lists the commands");
  if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "help") == 0) {
    print_help(stdout);
    return GS_EXIT_OK;
  }
  if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0) {
    c.verb = find_verb(NULL, "version");
    return cli_version(&c, argc - 1, argv + 1);
  }
  /* The emulator's own controls need the emulator, even beside a real driver. */
  if (strcmp(argv[1], "emu") == 0 && !c.cfg.kind)
    c.cfg.kind = "emu";
  c.verb = cli_find_verb(argc - 1, argv + 1, &used);
  if (!c.verb && is_group(argv[1])) {
    if (argc >= 3 && (strcmp(argv[2], "-h") == 0 || strcmp(argv[2], "--help") == 0))
      return group_help(argv[1]);
    return group_usage(argv[1], argc < 3 || argv[2][0] == '-' ? NULL : argv[2]);
  }
  if (!c.verb)
    return cli_usage("unknown command '%s'; `gpuslice --help` lists the commands", argv[1]);
  if ((rc = cli_log_init(c.log_format, c.log_level)) != 0)
    return rc;
  rc = c.verb->run(&c, argc - used, argv + used);
  gs_backend_close(c.backend);
  return rc;
}

/* ---- helpers shared by the verbs ---- */

int cli_backend(struct cli *c, struct gs_backend **out)
{
  struct gs_err err = {0};
  unsigned n = 0;
  if (!c->backend) {
    if (gs_backend_open(&err, &c->cfg, &c->backend) != 0)
      return cli_fail(&err);
    /* Emulated GPUs are always announced, in one line, so no one mistakes them. */
    if (!c->quiet && gs_emu_state_path(c->backend) &&
        c->backend->ops->gpu_count(c->backend, &err, &n) == 0)
      gs_log_warn(NULL, "%s%s%u EMULATED GPU%s (state: %s)",
              c->backend->why_emulated, c->backend->why_emulated[0] ? "; using " : "using ", n,
              n == 1 ? "" : "s", gs_emu_state_path(c->backend));
  }
  *out = c->backend;
  return 0;
}

int cli_exit_of(int code)
{
  switch (code) {
  case 0:
    return GS_EXIT_OK;
  case GS_E_USAGE:
  case GS_E_INVALID_ARGUMENT:
    return GS_EXIT_USAGE;
  case GS_E_CORRUPT_STATE:
  case GS_E_UNTRUSTED_FILE:
  case GS_E_IO:
    return GS_EXIT_STATE;
  default:
    return GS_EXIT_FAILED;
  }
}

int cli_fail(const struct gs_err *err)
{
  int nvml = gs_backend_code_nvml(err->code);
  if (nvml != 999 && nvml != 0)
    fprintf(stderr, "gpuslice: %s (%s)\n", err->msg, gs_backend_code_nvml_name(err->code));
  else
    fprintf(stderr, "gpuslice: %s\n", err->msg);
  return cli_exit_of(err->code);
}

/* Usage errors are one line: a usage text quoted in the message is cut at
 * its first newline (the synopsis; `--help` shows the rest). */
int cli_usage(const char *fmt, ...)
{
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  fprintf(stderr, "gpuslice: %.*s\n", (int)strcspn(msg, "\n"), msg);
  return GS_EXIT_USAGE;
}

int cli_parse_ids(const char *text, const char *what, unsigned *ids, unsigned max)
{
  unsigned n = 0;
  const char *p = text;
  while (*p) {
    char *end;
    unsigned long v;
    if (*p < '0' || *p > '9' || n == max)
      goto bad;
    v = strtoul(p, &end, 10);
    if (v > 1000000)
      goto bad;
    ids[n++] = (unsigned)v;
    p = end;
    if (*p == ',' && p[1])
      p++;
    else if (*p)
      goto bad;
  }
  if (n)
    return (int)n;
bad:
  cli_usage("%s '%s': expected a comma-separated list of at most %u numbers, e.g. 7,8", what,
            text, max);
  return -1;
}

int cli_check_listen(const char *option, const char *value)
{
  struct gs_err err = {0};
  struct gs_hostport hp;
  return gs_hostport_parse(&err, option, value, GS_HOSTPORT_PORT_ZERO, &hp) ? cli_usage("%s", err.msg)
                                                                            : 0;
}

int cli_split_profiles(int argc, char **argv, const char *verb, char words[][GS_GEOM_NAME_SIZE],
                       unsigned max)
{
  unsigned n = 0;
  for (int a = 0; a < argc; a++) {
    const char *p = argv[a];
    while (*p) {
      size_t len = strcspn(p, ",");
      if (len == 0 || len >= GS_GEOM_NAME_SIZE || n == max)
        return -cli_usage("%s: bad profile list '%s': give names or IDs such as 1g.5gb or 19,19 "
                          "(at most %u)",
                          verb, argv[a], max);
      memcpy(words[n], p, len);
      words[n++][len] = 0;
      p += len + (p[len] == ',');
    }
  }
  if (n == 0)
    return -cli_usage("%s: name at least one profile, such as 1g.5gb or 19", verb);
  return (int)n;
}

static void list_profiles(const struct gs_geom_model *m, char *buf, size_t size)
{
  size_t used = 0;
  buf[0] = 0;
  for (unsigned k = 0; k < m->ngi && used < size; k++)
    used += (size_t)snprintf(buf + used, size - used, "%s%s (%u)", k ? ", " : "", m->gi[k].name,
                             m->gi[k].id);
}

/* One word: the profile before any '@' (or ':', nvidia-smi's -cgi 9:4), the
 * start after it. */
static int profile_slot(const struct gs_geom_model *m, const char *who, char *word,
                        struct gs_geom_slot *out)
{
  char list[512], *at = strpbrk(word, "@:"), *end, sep = at ? *at : 0;
  long v = -1;
  if (at) {
    v = strtol(at + 1, &end, 10);
    if (!at[1] || *end || v < 0 || v >= GS_GEOM_MAX_GRID)
      return cli_usage("'%s': the start after '%c' must be a memory slice such as 0 or 4", word,
                       sep);
    *at = 0;
  }
  out->profile = gs_geom_gi_profile_find(m, word);
  out->start = (int)v;
  if (at)
    *at = sep;
  if (out->profile)
    return 0;
  list_profiles(m, list, sizeof(list));
  return cli_usage("%s: unknown GPU instance profile '%s'; its profiles are %s", who, word, list);
}

int cli_profile_slots(const struct gs_geom_model *m, const char *who,
                      char words[][GS_GEOM_NAME_SIZE], unsigned n, struct gs_geom_slot *out)
{
  for (unsigned w = 0; w < n; w++)
    if (profile_slot(m, who, words[w], &out[w]) != 0)
      return GS_EXIT_USAGE;
  return 0;
}

/* An -i item naming a MIG device, in either UUID form: selects its GPU and
 * records its GI and CI for the verbs that understand one (c->mig_ok). */
static int select_mig(struct cli *c, struct gs_backend *b, const char *item, unsigned ngpu,
                      unsigned *out)
{
  struct gs_mig_device *devs = calloc(GS_BACKEND_MAX_MIG_DEVICES, sizeof(*devs));
  struct gs_err err = {0};
  int rc = -1;
  if (!devs)
    return -cli_fail(&(struct gs_err){GS_E_NO_MEMORY, "out of memory reading MIG devices"});
  for (unsigned g = 0; g < ngpu && rc < 0; g++) {
    unsigned nd = 0;
    if (b->ops->mig_devices(b, &err, g, devs, &nd) != 0) {
      free(devs);
      return -cli_fail(&err);
    }
    for (unsigned k = 0; k < nd && rc < 0; k++)
      if (strcasecmp(devs[k].uuid, item) == 0 || strcasecmp(devs[k].legacy_uuid, item) == 0) {
        *out = g;
        c->mig_gi = devs[k].gi;
        c->mig_ci = devs[k].ci;
        rc = 0;
      }
  }
  free(devs);
  if (rc < 0)
    return -cli_usage("-i %s: no MIG device has this UUID (`gpuslice list` shows them)", item);
  if (!c->mig_ok)
    return -cli_usage("-i %s: names MIG device GI %u CI %u of GPU %u, but this command acts on "
                      "whole GPUs; use -i %u",
                      item, c->mig_gi, c->mig_ci, *out, *out);
  if (strchr(c->gpus, ','))
    return -cli_usage("-i %s: a MIG device UUID must be the only -i item", item);
  c->mig_sel = true;
  return 0;
}

/* One -i item: an index, a GPU UUID (or unambiguous prefix), a PCI bus id, or
 * a MIG device's UUID. */
static int select_one(struct cli *c, struct gs_backend *b, const char *item, unsigned ngpu,
                      unsigned *out)
{
  struct gs_err err = {0};
  unsigned ids[1], hits = 0;
  bool numeric = strspn(item, "0123456789") == strlen(item);
  if (strncasecmp(item, "MIG-", 4) == 0)
    return select_mig(c, b, item, ngpu, out);
  if (numeric) {
    if (cli_parse_ids(item, "-i", ids, 1) < 0)
      return -GS_EXIT_USAGE;
    if (ids[0] >= ngpu)
      return ngpu > 1 ? -cli_usage("-i %s: no such GPU; this machine has GPUs 0..%u (see "
                                   "`gpuslice list`)",
                                   item, ngpu - 1)
                      : -cli_usage("-i %s: no such GPU; this machine has only GPU 0 (see "
                                   "`gpuslice list`)",
                                   item);
    *out = ids[0];
    return 0;
  }
  for (unsigned g = 0; g < ngpu; g++) {
    struct gs_gpu_info info;
    if (b->ops->gpu_info(b, &err, g, &info) != 0)
      return -cli_fail(&err);
    if (strncasecmp(info.uuid, item, strlen(item)) == 0 || strcasecmp(info.pci_bus_id, item) == 0 ||
        strcasecmp(info.pci_bus_id + 4, item) == 0) {
      if (hits++ == 0)
        *out = g;
      else /* a UUID prefix must name one GPU, as CUDA_VISIBLE_DEVICES requires */
        return -cli_usage("-i %s: matches GPU %u and GPU %u; give more of the UUID (see "
                          "`gpuslice list`)",
                          item, *out, g);
    }
  }
  if (hits == 1)
    return 0;
  return -cli_usage("-i %s: no GPU has this index, UUID or PCI bus id (see `gpuslice list`)", item);
}

int cli_select_gpus(struct cli *c, unsigned out[GS_BACKEND_MAX_GPUS])
{
  struct gs_backend *b;
  struct gs_err err = {0};
  unsigned ngpu, n = 0;
  char buf[1024], *save = NULL, *item;
  int rc = cli_backend(c, &b);
  if (rc)
    return -rc;
  if (b->ops->gpu_count(b, &err, &ngpu) != 0)
    return -cli_fail(&err);
  if (!c->gpus) {
    for (unsigned g = 0; g < ngpu; g++)
      out[n++] = g;
    return (int)n;
  }
  if (strlen(c->gpus) >= sizeof(buf) || !*c->gpus)
    return -cli_usage("-i '%.40s': expected GPU indices, UUIDs or PCI bus ids, e.g. -i 0,1", c->gpus);
  snprintf(buf, sizeof(buf), "%s", c->gpus);
  for (item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
    unsigned g = 0, k;
    if ((rc = select_one(c, b, item, ngpu, &g)) != 0)
      return rc;
    for (k = 0; k < n && out[k] != g; k++)
      ;
    if (k == n)
      out[n++] = g;
  }
  if (n == 0)
    return -cli_usage("-i '%.40s': expected GPU indices, UUIDs or PCI bus ids, e.g. -i 0,1", c->gpus);
  /* Ascending, as nvidia-smi walks GPUs. */
  for (unsigned i = 1; i < n; i++)
    for (unsigned j = i; j > 0 && out[j] < out[j - 1]; j--) {
      unsigned t = out[j];
      out[j] = out[j - 1];
      out[j - 1] = t;
    }
  return (int)n;
}

static unsigned profile_rank(const struct gs_geom_model *m, const struct gs_geom_gi_profile *p)
{
  unsigned k;
  for (k = 0; k < m->ngi && &m->gi[k] != p; k++)
    ;
  return k;
}

void cli_sort_gis(const struct gs_geom_model *m, struct gs_gi_info *gis, unsigned n)
{
  for (unsigned i = 1; i < n; i++)
    for (unsigned j = i; j > 0; j--) {
      unsigned a = profile_rank(m, gis[j - 1].profile), b = profile_rank(m, gis[j].profile);
      struct gs_gi_info t;
      if (a < b || (a == b && gis[j - 1].id < gis[j].id))
        break;
      t = gis[j];
      gis[j] = gis[j - 1];
      gis[j - 1] = t;
    }
}

int cli_mig_narrow(struct cli *c, const char **gi, const char **ci, char gbuf[12], char cbuf[12])
{
  if (!c->mig_sel)
    return 0;
  if (*gi || (ci && *ci))
    return cli_usage("-i %s names one MIG device (GPU instance %u, compute instance %u); drop "
                     "--gi/--ci or select the GPU by index",
                     c->gpus, c->mig_gi, c->mig_ci);
  snprintf(gbuf, 12, "%u", c->mig_gi);
  *gi = gbuf;
  if (ci) {
    snprintf(cbuf, 12, "%u", c->mig_ci);
    *ci = cbuf;
  }
  return 0;
}

void cli_say(const struct cli *c, const char *fmt, ...)
{
  va_list ap;
  if (c->json)
    return;
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
}

json_t *cli_gi_json(const struct gs_gi_info *gi)
{
  return json_pack("{s:i, s:s, s:i, s:i, s:i, s:i}", "gpu", gi->gpu, "name", gi->profile->name,
                   "profile_id", gi->profile->id, "id", gi->id, "start", gi->start, "size", gi->span);
}

json_t *cli_ci_json(const struct gs_ci_info *ci)
{
  return json_pack("{s:i, s:i, s:s, s:i, s:i, s:i, s:i}", "gpu", ci->gpu, "gi", ci->gi, "name",
                   ci->profile.name, "profile_id", ci->profile.id, "id", ci->id, "start", ci->start,
                   "size", ci->span);
}

int cli_print_json(json_t *v)
{
  if (!v) {
    fprintf(stderr, "gpuslice: out of memory building JSON output\n");
    return GS_EXIT_STATE;
  }
  json_dumpf(v, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
  fputc('\n', stdout);
  json_decref(v);
  return GS_EXIT_OK;
}

void cli_format_placements(unsigned starts, unsigned size, char *buf, size_t len)
{
  size_t used = (size_t)snprintf(buf, len, "{");
  for (unsigned s = 0; s < 32 && used < len; s++)
    if (starts & (1u << s))
      used += (size_t)snprintf(buf + used, len - used, "%s%u", used > 1 ? "," : "", s);
  if (used < len)
    snprintf(buf + used, len - used, "}:%u", size);
}

json_t *cli_placements_json(unsigned starts, unsigned size)
{
  json_t *arr = json_array();
  for (unsigned s = 0; s < 32; s++)
    if (starts & (1u << s))
      json_array_append_new(arr, json_integer(s));
  return json_pack("{s:o, s:i}", "starts", arr, "size", size);
}

static int table_width(const struct cli_col *cols, unsigned n)
{
  int w = 0;
  for (unsigned i = 0; i < n; i++)
    w += cols[i].width + 2;
  return w;
}

static void rule(int width, char ch)
{
  putchar(ch == '=' ? '|' : '+');
  for (int i = 0; i < width; i++)
    putchar(ch);
  puts(ch == '=' ? "|" : "+");
}

/* One line of cells: names left-aligned, everything else centred, as
 * nvidia-smi lays out its columns. */
static void table_line(const struct cli_col *cols, unsigned n, const char *const *cells)
{
  putchar('|');
  for (unsigned i = 0; i < n; i++) {
    const char *v = cells[i] ? cells[i] : "";
    int len = (int)strlen(v), w = cols[i].width;
    int left = cols[i].left ? 0 : (w - len) / 2;
    if (len > w)
      len = w;
    printf(" %*s%.*s%*s ", left > 0 ? left : 0, "", len, v, w - len - (left > 0 ? left : 0), "");
  }
  puts("|");
}

void cli_table_begin(const char *title, const struct cli_col *cols, unsigned n)
{
  int width = table_width(cols, n);
  rule(width, '-');
  printf("| %-*s|\n", width - 1, title);
  for (unsigned line = 0; line < 3; line++) {
    const char *cells[16];
    bool any = false;
    for (unsigned i = 0; i < n && i < GS_NITEMS(cells); i++) {
      cells[i] = cols[i].head[line];
      any = any || cells[i];
    }
    if (any)
      table_line(cols, n, cells);
  }
  rule(width, '=');
}

void cli_table_row(const struct cli_col *cols, unsigned n, const char *const *cells, unsigned lines)
{
  for (unsigned line = 0; line < lines; line++)
    table_line(cols, n, cells + line * n);
  rule(table_width(cols, n), '-');
}
