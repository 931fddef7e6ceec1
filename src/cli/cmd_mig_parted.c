/* SPDX-License-Identifier: Apache-2.0 */
/* cmd_mig_parted.c: gpuslice installed or linked as `nvidia-mig-parted`
 * (main.c dispatches on argv[0]): NVIDIA's command line as its callers use
 * it (the GPU operator's mig-manager, the systemd service.sh): the commands,
 * flags and environment variables of mig-parted's urfave/cli front, its
 * output lines, its logrus lines on stderr, and its exit codes (1 for every
 * failure, 3 for an unknown command). The work is the layout layer's
 * gs_layout_mp_* calls; this file parses and prints only. */
#include "cli/cli.h"
#include "layout/layout.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

/* ---- logrus's text lines ---- */

enum { LV_DEBUG, LV_INFO, LV_WARN, LV_ERROR, LV_FATAL };

static time_t log_base;

/* Go's strconv.Quote of an ASCII-or-UTF-8 message. */
static void put_quoted(FILE *f, const char *s)
{
  fputc('"', f);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      fprintf(f, "\\%c", c);
    else if (c == '\n')
      fputs("\\n", f);
    else if (c == '\t')
      fputs("\\t", f);
    else if (c == '\r')
      fputs("\\r", f);
    else if (c < 0x20 || c == 0x7f)
      fprintf(f, "\\x%02x", c);
    else
      fputc(c, f);
  }
  fputc('"', f);
}

static bool needs_quoting(const char *s)
{
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || strchr("-._/@^+", *s)))
      return true;
  return false;
}

/* One line as logrus's TextFormatter writes it: colored with seconds since
 * start on a terminal ("DEBU[0000] msg"), else key=value with an RFC 3339
 * local time ("time=... level=debug msg=..."). */
static void logrus_line(int level, const char *msg)
{
  static const char *const names[] = {"debug", "info", "warning", "error", "fatal"};
  static const char *const colors[] = {"\x1b[2;36m", "\x1b[36m", "\x1b[33m", "\x1b[31m", "\x1b[31m"};
  time_t now = time(NULL);
  struct tm tm;
  char stamp[40], zone[48];
  if (isatty(2)) {
    char upper[5] = {0};
    for (int i = 0; i < 4; i++)
      upper[i] = (char)(names[level][i] - 'a' + 'A');
    fprintf(stderr, "%s%s\x1b[0m[%04ld] %-44s \n", colors[level], upper, (long)(now - log_base), msg);
    return;
  }
  localtime_r(&now, &tm);
  strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
  if (tm.tm_gmtoff == 0)
    snprintf(zone, sizeof(zone), "Z");
  else
    snprintf(zone, sizeof(zone), "%c%02ld:%02ld", tm.tm_gmtoff < 0 ? '-' : '+', labs(tm.tm_gmtoff) / 3600,
             labs(tm.tm_gmtoff) % 3600 / 60);
  fprintf(stderr, "time=\"%s%s\" level=%s", stamp, zone, names[level]);
  if (*msg) {
    fputs(" msg=", stderr);
    if (needs_quoting(msg))
      put_quoted(stderr, msg);
    else
      fputs(msg, stderr);
  }
  fputc('\n', stderr);
}

static void log_sink(void *arg, enum gs_layout_log_level level, const char *msg)
{
  (void)arg;
  logrus_line(level == GS_LAYOUT_DEBUG ? LV_DEBUG : level == GS_LAYOUT_INFO ? LV_INFO
                                                  : level == GS_LAYOUT_WARN ? LV_WARN : LV_ERROR,
              msg);
}

/* log.Fatal(util.Capitalize(err)): the last line, exit status 1. */
static int fatal(const char *fmt, ...) GS_PRINTF(1, 2);
static int fatal(const char *fmt, ...)
{
  char msg[GS_ERR_MSG_SIZE * 2];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  if (msg[0] >= 'a' && msg[0] <= 'z')
    msg[0] = (char)(msg[0] - 'a' + 'A');
  logrus_line(LV_FATAL, msg);
  return 1;
}

/* ---- the command table: urfave/cli's flags, with their variables ---- */

struct flag {
  const char *name, *alias, *env, *usage;
  bool is_bool;
  const char *def;
};

struct mp;
struct command {
  const char *name, *usage;
  const struct flag *flags;
  unsigned nflags;
  int (*run)(struct mp *m);
};

#define MAX_FLAGS 6
struct mp {
  const char *prog;
  const struct command *cmd;
  const char *val[MAX_FLAGS];
  bool debug;
};

static const struct flag debug_flag = {"debug", "d", "MIG_PARTED_DEBUG", "Enable debug-level logging", true, "false"};

static const struct flag apply_flags[] = {
    {"config-file", "f", "MIG_PARTED_CONFIG_FILE", "Path to the configuration file", false, NULL},
    {"selected-config", "c", "MIG_PARTED_SELECTED_CONFIG",
     "The label of the mig-config from the config file to apply to the node", false, NULL},
    {"hooks-file", "k", "MIG_PARTED_HOOKS_FILE", "Path to the hooks file", false, NULL},
    {"skip-reset", "s", "MIG_PARTED_SKIP_RESET",
     "Skip the GPU reset operation after applying the desired MIG mode to all GPUs", true, "false"},
    {"mode-only", "m", "MIG_PARTED_MODE_CHANGE_ONLY",
     "Only change the MIG enabled setting from the config, not configure any MIG devices", true, "false"},
};
enum { A_FILE, A_CONFIG, A_HOOKS, A_SKIP_RESET, A_MODE_ONLY };

static const struct flag assert_flags[] = {
    {"config-file", "f", "MIG_PARTED_CONFIG_FILE", "Path to the configuration file", false, NULL},
    {"selected-config", "c", "MIG_PARTED_SELECTED_CONFIG",
     "The label of the mig-config from the config file to assert is applied to the node", false, NULL},
    {"mode-only", "m", "MIG_PARTED_MODE_CHANGE_ONLY",
     "Only assert the MIG mode setting from the selected config, not the configured MIG devices", true, "false"},
    {"valid-config", "a", "MIG_PARTED_VALID_CONFIG",
     "Only assert that the config file is valid and the selected config is present in it", true, "false"},
};
enum { S_FILE, S_CONFIG, S_MODE_ONLY, S_VALID };

static const struct flag export_flags[] = {
    {"output-format", "o", "MIG_PARTED_OUTPUT_FORMAT", "Format for the output [json | yaml]", false, "yaml"},
    {"config-label", "l", "MIG_PARTED_CONFIG_LABEL", "Label to apply to the exported config", false, "current"},
};
enum { E_FORMAT, E_LABEL };

static const struct flag generate_flags[] = {
    {"output-file", "f", "MIG_PARTED_OUTPUT_FILE", "Output file path (default: stdout)", false, ""},
    {"output-format", "o", "MIG_PARTED_OUTPUT_FORMAT", "Format for the output [json | yaml]", false, "yaml"},
};
enum { G_FILE, G_FORMAT };

static const struct flag checkpoint_flags[] = {
    {"checkpoint-file", "f", "MIG_PARTED_CHECKPOINT_FILE", "Path to the checkpoint file", false, NULL},
};

static const struct flag restore_flags[] = {
    {"checkpoint-file", "f", "MIG_PARTED_CHECKPOINT_FILE", "Path to the checkpoint file", false, NULL},
    {"hooks-file", "k", "MIG_PARTED_HOOKS_FILE", "Path to the hooks file", false, NULL},
    {"mode-only", "m", "MIG_PARTED_MODE_CHANGE_ONLY",
     "Only change the MIG enabled setting from the checkpoint file, not configure any MIG devices", true, "false"},
};
enum { R_FILE, R_HOOKS, R_MODE_ONLY };

static int run_apply(struct mp *m);
static int run_assert(struct mp *m);
static int run_export(struct mp *m);
static int run_generate(struct mp *m);
static int run_checkpoint(struct mp *m);
static int run_restore(struct mp *m);

static const struct command commands[] = {
    {"apply", "Apply changes (if necessary) for a specific MIG configuration from a configuration file",
     apply_flags, GS_NITEMS(apply_flags), run_apply},
    {"assert", "Assert that a specific MIG configuration is currently applied to the node", assert_flags,
     GS_NITEMS(assert_flags), run_assert},
    {"export", "Export the MIG configuration from all GPUs in a compatible format", export_flags,
     GS_NITEMS(export_flags), run_export},
    {"generate-config", "Generate MIG configuration by discovering available MIG profiles on the system",
     generate_flags, GS_NITEMS(generate_flags), run_generate},
    {"checkpoint", "Checkpoint MIG state to a checkpoint file", checkpoint_flags, GS_NITEMS(checkpoint_flags),
     run_checkpoint},
    {"restore", "Restore MIG state from a checkpoint file", restore_flags, GS_NITEMS(restore_flags), run_restore},
};

/* ---- help, as urfave/cli v3's templates lay it out ---- */

static void flag_cell(const struct flag *f, char *buf, size_t size)
{
  if (f->is_bool)
    snprintf(buf, size, "--%s, -%s", f->name, f->alias);
  else
    snprintf(buf, size, "--%s string, -%s string", f->name, f->alias);
}

static void flag_rows(const struct flag *const *fl, unsigned n)
{
  char cell[80];
  int width = 0;
  for (unsigned i = 0; i < n; i++) {
    flag_cell(fl[i], cell, sizeof(cell));
    width = (int)strlen(cell) > width ? (int)strlen(cell) : width;
  }
  for (unsigned i = 0; i < n; i++) {
    flag_cell(fl[i], cell, sizeof(cell));
    printf("   %-*s  %s", width, cell, fl[i]->usage);
    if (fl[i]->def && *fl[i]->def)
      printf(" (default: %s%s%s)", fl[i]->is_bool ? "" : "\"", fl[i]->def, fl[i]->is_bool ? "" : "\"");
    if (fl[i]->env)
      printf(" [$%s]", fl[i]->env);
    putchar('\n');
  }
}

static void command_help(const char *prog, const struct command *c)
{
  static const struct flag help = {"help", "h", NULL, "show help", true, NULL};
  const struct flag *fl[MAX_FLAGS + 1];
  for (unsigned i = 0; i < c->nflags; i++)
    fl[i] = &c->flags[i];
  fl[c->nflags] = &help;
  printf("NAME:\n   %s %s - %s\n\nUSAGE:\n   %s %s [options]\n\nOPTIONS:\n", prog, c->name, c->usage, prog, c->name);
  flag_rows(fl, c->nflags + 1);
  printf("\nGLOBAL OPTIONS:\n");
  fl[0] = &debug_flag;
  flag_rows(fl, 1);
}

static void root_help(const char *prog)
{
  static const struct flag help = {"help", "h", NULL, "show help", true, NULL};
  static const struct flag version = {"version", "v", NULL, "print the version", true, NULL};
  const struct flag *fl[] = {&debug_flag, &help, &version};
  printf("NAME:\n   %s - Manage MIG partitions across the full set of NVIDIA GPUs on a node\n\n"
         "USAGE:\n   %s [global options] [command [command options]]\n\n"
         "VERSION:\n   gpuslice (nvidia-mig-parted's command line, as of v0.15.0)\n\nCOMMANDS:\n",
         prog, prog);
  for (unsigned i = 0; i < GS_NITEMS(commands); i++)
    printf("   %-17s%s\n", commands[i].name, commands[i].usage);
  printf("   %-17s%s\n\nGLOBAL OPTIONS:\n", "help, h", "Shows a list of commands or help for one command");
  flag_rows(fl, GS_NITEMS(fl));
}

/* ---- parsing, as urfave/cli v3 parses (short options may be grouped) ---- */

/* Go's strconv.ParseBool. */
static int parse_bool(const char *s, bool *out)
{
  static const char *const yes[] = {"1", "t", "T", "TRUE", "true", "True"};
  static const char *const no[] = {"0", "f", "F", "FALSE", "false", "False"};
  for (unsigned i = 0; i < GS_NITEMS(yes); i++)
    if (strcmp(s, yes[i]) == 0)
      return *out = true, 0;
  for (unsigned i = 0; i < GS_NITEMS(no); i++)
    if (strcmp(s, no[i]) == 0)
      return *out = false, 0;
  return -1;
}

static bool flag_true(const struct mp *m, unsigned i)
{
  bool v = false;
  return m->val[i] && parse_bool(m->val[i], &v) == 0 && v;
}

/* Finds name among the command's flags (-1) or the global debug flag (-2). */
static int find_flag(const struct command *c, const char *name, size_t len)
{
  for (unsigned i = 0; c && i < c->nflags; i++)
    if ((strlen(c->flags[i].name) == len && strncmp(c->flags[i].name, name, len) == 0) ||
        (strlen(c->flags[i].alias) == len && strncmp(c->flags[i].alias, name, len) == 0))
      return (int)i;
  if ((len == 5 && strncmp(name, "debug", 5) == 0) || (len == 1 && *name == 'd'))
    return -2;
  if ((len == 4 && strncmp(name, "help", 4) == 0) || (len == 1 && *name == 'h'))
    return -3;
  if (!c && ((len == 7 && strncmp(name, "version", 7) == 0) || (len == 1 && *name == 'v')))
    return -4;
  return -5;
}

static int usage_error(const struct mp *m, const char *fmt, ...) GS_PRINTF(2, 3);
static int usage_error(const struct mp *m, const char *fmt, ...)
{
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  fprintf(stderr, "Incorrect Usage: %s\n\n", msg);
  if (m->cmd)
    command_help(m->prog, m->cmd);
  else
    root_help(m->prog);
  return fatal("%s", msg);
}

/* Sets flag k (or a global one) from text; 0, or the exit status. */
static int set_flag(struct mp *m, int k, const char *name, const char *value, bool *help, bool *version)
{
  bool b;
  bool is_bool = k < 0 || m->cmd->flags[k].is_bool;
  if (is_bool && parse_bool(value, &b) != 0)
    return usage_error(m, "invalid value \"%s\" for flag -%s: parse error", value, name);
  if (k == -2)
    m->debug = b;
  else if (k == -3)
    *help = b;
  else if (k == -4)
    *version = b;
  else
    m->val[k] = value;
  return 0;
}

/* Parses one command's (or the root's, cmd NULL) flags from argv; returns
 * the index of the first positional word, or -(exit status) after an error. */
static int parse_flags(struct mp *m, int argc, char **argv, int i, bool *help, bool *version)
{
  for (; i < argc; i++) {
    const char *a = argv[i], *name, *eq;
    size_t len;
    int k, rc;
    if (strcmp(a, "--") == 0 || a[0] != '-' || a[1] == 0)
      return i;
    name = a + 1 + (a[1] == '-');
    eq = strchr(name, '=');
    len = eq ? (size_t)(eq - name) : strlen(name);
    if ((k = find_flag(m->cmd, name, len)) == -5 && a[1] != '-' && !eq) {
      /* -ms: a group of one-letter flags, the last may take a value */
      for (size_t c = 0; c < len; c++) {
        int kc = find_flag(m->cmd, name + c, 1);
        bool last_takes = kc >= 0 && !m->cmd->flags[kc].is_bool;
        if (kc == -5 || kc == -4 || (last_takes && c + 1 < len))
          return -usage_error(m, "flag provided but not defined: -%s", name);
        if (last_takes && i + 1 >= argc)
          return -usage_error(m, "flag needs an argument: %c", name[c]);
        if ((rc = set_flag(m, kc, name + c, last_takes ? argv[++i] : "true", help, version)) != 0)
          return -rc;
      }
      continue;
    }
    if (k == -5 || (k == -4 && m->cmd))
      return -usage_error(m, "flag provided but not defined: -%.*s", (int)len, name);
    if (!eq && k >= 0 && !m->cmd->flags[k].is_bool) {
      if (i + 1 >= argc)
        return -usage_error(m, "flag needs an argument: %s", a);
      eq = argv[++i] - 1;
    }
    if ((rc = set_flag(m, k, name, eq ? eq + 1 : "true", help, version)) != 0)
      return -rc;
  }
  return i;
}

/* Flags not given on the command line come from their variables. */
static int from_env(struct mp *m)
{
  const char *v = getenv(debug_flag.env);
  bool b;
  if (v && parse_bool(v, &b) != 0)
    return fatal("could not parse \"%s\" as bool value from environment variable \"%s\" for flag %s: parse "
                 "error", v, debug_flag.env, debug_flag.name);
  if (v && !m->debug)
    m->debug = b;
  for (unsigned i = 0; m->cmd && i < m->cmd->nflags; i++) {
    const struct flag *f = &m->cmd->flags[i];
    if (m->val[i] || !(v = getenv(f->env)))
      continue;
    if (f->is_bool && parse_bool(v, &b) != 0)
      return fatal("could not parse \"%s\" as bool value from environment variable \"%s\" for flag %s: parse "
                   "error", v, f->env, f->name);
    m->val[i] = v;
  }
  for (unsigned i = 0; m->cmd && i < m->cmd->nflags; i++)
    if (!m->val[i])
      m->val[i] = m->cmd->flags[i].def ? m->cmd->flags[i].def : "";
  return 0;
}

static const struct command *find_command(const char *name)
{
  for (unsigned i = 0; i < GS_NITEMS(commands); i++)
    if (strcmp(commands[i].name, name) == 0)
      return &commands[i];
  return NULL;
}

int cli_mig_parted_main(int argc, char **argv)
{
  struct mp m = {0};
  bool help = false, version = false;
  const char *slash = strrchr(argv[0], '/');
  int i, rc;
  log_base = time(NULL);
  m.prog = slash ? slash + 1 : argv[0];
  if ((i = parse_flags(&m, argc, argv, 1, &help, &version)) < 0)
    return -i;
  if (version && !help) {
    printf("%s version gpuslice (nvidia-mig-parted's command line, as of v0.15.0)\n", m.prog);
    return 0;
  }
  if (i < argc && (strcmp(argv[i], "help") == 0 || strcmp(argv[i], "h") == 0)) {
    help = true;
    i++;
  }
  if (i < argc && !(m.cmd = find_command(argv[i]))) {
    fprintf(stderr, "No help topic for '%s'\n", argv[i]);
    return 3;
  }
  if (!m.cmd) {
    root_help(m.prog);
    return 0;
  }
  if (!help && (i = parse_flags(&m, argc, argv, i + 1, &help, &version)) < 0)
    return -i;
  if (help) {
    command_help(m.prog, m.cmd);
    return 0;
  }
  if ((rc = from_env(&m)) != 0)
    return rc;
  return m.cmd->run(&m);
}

/* ---- the commands ---- */

static void debug_line(const struct mp *m, const char *msg)
{
  if (m->debug)
    logrus_line(LV_DEBUG, msg);
}

static int missing(const struct mp *m, const char *what)
{
  command_help(m->prog, m->cmd);
  return fatal("missing required flags '%s'", what);
}

/* The machine: real GPUs through NVML, else the emulator, which is said so
 * in a warning line as every gpuslice command says it. */
static int open_backend(struct gs_backend **b)
{
  struct gs_backend_config cfg = {.emulate = getenv("GPUSLICE_EMULATE")};
  struct gs_err err = {0};
  unsigned n = 0;
  char line[GS_ERR_MSG_SIZE + 128];
  if (gs_backend_open(&err, &cfg, b) != 0)
    return fatal("error initializing NVML: %s", err.msg);
  if (gs_emu_state_path(*b) && (*b)->ops->gpu_count(*b, &err, &n) == 0) {
    snprintf(line, sizeof(line), "gpuslice: %s%s%u EMULATED GPU%s (state: %s)", (*b)->why_emulated,
             (*b)->why_emulated[0] ? "; using " : "using ", n, n == 1 ? "" : "s", gs_emu_state_path(*b));
    logrus_line(LV_WARN, line);
  }
  return 0;
}

/* Reads path ("-": standard input); Go's error text on failure. */
static int read_input(const char *path, char **text, size_t *len, char *why, size_t size)
{
  struct gs_err err = {0};
  if (gs_file_read(&err, strcmp(path, "-") == 0 ? "/dev/stdin" : path, 1u << 22, text, len) == 0)
    return 0;
  snprintf(why, size, "read error: open %s: %s", path, err.code == GS_E_NOT_FOUND ? "no such file or directory"
                                                                                   : err.msg);
  return -1;
}

/* -f and -c as assert and apply take them: the v1 file and the config in it. */
static int load_config(struct mp *m, unsigned file_k, unsigned cfg_k, struct gs_layout_file **file,
                       const struct gs_layout_config **cfg)
{
  struct gs_err err = {0};
  char *text = NULL, why[600];
  size_t len = 0;
  int rc;
  if (!*m->val[file_k])
    return missing(m, "config-file");
  debug_line(m, "Parsing config file...");
  if (read_input(m->val[file_k], &text, &len, why, sizeof(why)) != 0)
    return fatal("error parsing config file: %s", why);
  rc = gs_layout_parse(&err, strcmp(m->val[file_k], "-") == 0 ? "<stdin>" : m->val[file_k], text, len, file);
  free(text);
  if (rc == 0 && (*file)->format != GS_LAYOUT_MIG_PARTED)
    rc = gs_err_set(&err, GS_E_INVALID_ARGUMENT, "unknown version: gpuslice/v1 (nvidia-mig-parted reads "
                                                 "`version: v1`; use `gpuslice apply` for ours)");
  if (rc)
    return fatal("error parsing config file: unmarshal error: %s", err.msg);
  debug_line(m, "Selecting specific MIG config...");
  if (!*m->val[cfg_k] && (*file)->nconfig > 1)
    return fatal("error selecting MIG config: missing required flag 'selected-config' when more than one "
                 "config available");
  if (gs_layout_find(&err, *file, *m->val[cfg_k] ? m->val[cfg_k] : NULL, cfg) != 0)
    return fatal("error selecting MIG config: selected mig-config not present: %s", m->val[cfg_k]);
  return 0;
}

/* -k (or its variable): the hooks file, parsed; NULL without one. */
static int load_hooks(const char *path, struct gs_layout_hooks **hooks)
{
  struct gs_err err = {0};
  char *text = NULL, why[600];
  size_t len = 0;
  int rc;
  *hooks = NULL;
  if (!*path)
    return 0;
  if (read_input(path, &text, &len, why, sizeof(why)) != 0)
    return fatal("error parsing hooks file: %s", why);
  if (!(*hooks = calloc(1, sizeof(**hooks)))) {
    free(text);
    return fatal("error parsing hooks file: out of memory");
  }
  rc = gs_layout_hooks_parse(&err, path, text, len, *hooks);
  free(text);
  return rc ? fatal("error parsing hooks file: unmarshal error: %s", err.msg) : 0;
}

/* What mig-parted hands its hooks: exactly one variable per flag of the
 * command that has one, with the flag's value ("true"/"false" for switches,
 * the config chosen when -c was left out). */
static void hook_env(const struct mp *m, const char *config, char env[][PATH_MAX + 48], char **envp)
{
  unsigned n = 0;
  for (unsigned i = 0; i < m->cmd->nflags; i++) {
    const struct flag *f = &m->cmd->flags[i];
    const char *v = m->val[i];
    if (f->is_bool)
      v = flag_true(m, i) ? "true" : "false";
    else if (strcmp(f->name, "selected-config") == 0)
      v = config;
    snprintf(env[n], PATH_MAX + 48, "%s=%s", f->env, v);
    envp[n] = env[n];
    n++;
  }
  envp[n] = NULL;
}

static struct gs_layout_logger logger(bool debug)
{
  return (struct gs_layout_logger){.fn = log_sink, .debug = debug};
}

static int run_apply(struct mp *m)
{
  struct gs_layout_file *file = NULL;
  const struct gs_layout_config *cfg = NULL;
  struct gs_layout_hooks *hooks = NULL;
  struct gs_backend *b = NULL;
  struct gs_err err = {0};
  struct gs_layout_logger log = logger(m->debug);
  char lock[PATH_MAX], env[MAX_FLAGS][PATH_MAX + 48], *envp[MAX_FLAGS + 1];
  struct gs_layout_mp_opts o = {.mode_only = flag_true(m, A_MODE_ONLY), .skip_reset = flag_true(m, A_SKIP_RESET),
                                .hook_output = m->debug, .log = &log};
  int rc = load_config(m, A_FILE, A_CONFIG, &file, &cfg);
  if (rc == 0 && *m->val[A_HOOKS])
    debug_line(m, "Parsing Hooks file...");
  if (rc == 0 && (rc = load_hooks(m->val[A_HOOKS], &hooks)) == 0 && (rc = open_backend(&b)) == 0) {
    hook_env(m, cfg->name, env, envp);
    cli_apply_lock_path(b, lock);
    o.hooks = hooks;
    o.hook_env = envp;
    o.lock_path = lock;
    if (gs_layout_mp_apply(&err, b, file, cfg, &o) != 0)
      rc = fatal("%s", err.msg);
    else
      printf("MIG configuration applied successfully\n");
  }
  free(hooks);
  gs_layout_file_free(file);
  gs_backend_close(b);
  return rc;
}

static int run_assert(struct mp *m)
{
  struct gs_layout_file *file = NULL;
  const struct gs_layout_config *cfg = NULL;
  struct gs_backend *b = NULL;
  struct gs_err err = {0};
  struct gs_layout_logger log = logger(m->debug);
  bool mode_only = flag_true(m, S_MODE_ONLY);
  int rc = load_config(m, S_FILE, S_CONFIG, &file, &cfg);
  if (rc == 0 && flag_true(m, S_VALID))
    printf("Selected MIG configuration is valid\n");
  else if (rc == 0 && (rc = open_backend(&b)) == 0) {
    if (gs_layout_mp_assert(&err, b, file, cfg, mode_only, &log) != 0) {
      if (err.msg[0] >= 'a' && err.msg[0] <= 'z')
        err.msg[0] = (char)(err.msg[0] - 'a' + 'A');
      debug_line(m, err.msg);
      rc = fatal("assertion failure: selected configuration not currently applied");
    } else
      printf(mode_only ? "Selected MIG mode settings from configuration currently applied\n"
                       : "Selected MIG configuration currently applied\n");
  }
  gs_layout_file_free(file);
  gs_backend_close(b);
  return rc;
}

static int output_format(const char *v, bool *json)
{
  if (strcmp(v, "json") != 0 && strcmp(v, "yaml") != 0)
    return -1;
  *json = strcmp(v, "json") == 0;
  return 0;
}

static int run_export(struct mp *m)
{
  struct gs_backend *b = NULL;
  struct gs_err err = {0};
  char *out = NULL;
  bool json = false;
  int rc;
  if (output_format(m->val[E_FORMAT], &json) != 0) {
    command_help(m->prog, m->cmd);
    return fatal("unrecognized 'output-format': %s", m->val[E_FORMAT]);
  }
  if ((rc = open_backend(&b)) == 0) {
    if (gs_layout_mp_export(&err, b, m->val[E_LABEL], json, &out) != 0)
      rc = fatal("%s", err.msg);
    else
      fputs(out, stdout);
  }
  free(out);
  gs_backend_close(b);
  return rc;
}

/* mig-parted creates the output file first, so a failed generation leaves
 * it empty (service.sh then keeps its previous config). */
static int run_generate(struct mp *m)
{
  struct gs_backend *b = NULL;
  struct gs_err err = {0};
  struct gs_layout_logger log = logger(false);
  FILE *f = stdout;
  char *out = NULL;
  bool json = false;
  int rc;
  if (output_format(m->val[G_FORMAT], &json) != 0) {
    command_help(m->prog, m->cmd);
    return fatal("unrecognized 'output-format': %s", m->val[G_FORMAT]);
  }
  if (*m->val[G_FILE] && !(f = fopen(m->val[G_FILE], "w")))
    return fatal("error creating output file: open %s: %s", m->val[G_FILE], strerror(errno));
  if ((rc = open_backend(&b)) == 0) {
    if (gs_layout_mp_generate(&err, b, json, &out, &log) != 0)
      rc = fatal("error generating MIG config: %s", err.msg);
    else if (fputs(out, f) < 0 || fflush(f) != 0)
      rc = fatal("error writing output: write %s: %s", *m->val[G_FILE] ? m->val[G_FILE] : "/dev/stdout",
                 strerror(errno));
  }
  if (f != stdout && fclose(f) != 0 && rc == 0)
    rc = fatal("error writing output: close %s: %s", m->val[G_FILE], strerror(errno));
  free(out);
  gs_backend_close(b);
  return rc;
}

static int run_checkpoint(struct mp *m)
{
  struct gs_backend *b = NULL;
  struct gs_err err = {0};
  char *json = NULL;
  FILE *f;
  int rc;
  if (!*m->val[0])
    return missing(m, "checkpoint-file");
  if ((rc = open_backend(&b)) != 0)
    return rc;
  if (gs_layout_mp_checkpoint(&err, b, &json) != 0)
    rc = fatal("%s", err.msg);
  else if (!(f = fopen(m->val[0], "w")))
    rc = fatal("error creating checkpoint file: open %s: %s", m->val[0], strerror(errno));
  else {
    bool written = fputs(json, f) >= 0;
    if (fclose(f) != 0 || !written)
      rc = fatal("error writing checkpoint file: write %s: %s", m->val[0], strerror(errno));
    else
      printf("MIG configuration checkpointed successfully\n");
  }
  free(json);
  gs_backend_close(b);
  return rc;
}

/* mig-parted sets -d's level on export's logger for checkpoint and restore,
 * so their own debug lines never show; the hooks' output still follows -d. */
static int run_restore(struct mp *m)
{
  struct gs_layout_hooks *hooks = NULL;
  struct gs_backend *b = NULL;
  struct gs_err err = {0};
  struct gs_layout_logger log = logger(false);
  char lock[PATH_MAX], env[MAX_FLAGS][PATH_MAX + 48], *envp[MAX_FLAGS + 1], *text = NULL, why[600];
  struct gs_layout_mp_opts o = {.mode_only = flag_true(m, R_MODE_ONLY), .hook_output = m->debug, .log = &log};
  size_t len = 0;
  int rc;
  if (!*m->val[R_FILE])
    return missing(m, "checkpoint-file");
  if (read_input(m->val[R_FILE], &text, &len, why, sizeof(why)) != 0)
    return fatal("error parsing checkpoint file: %s", why);
  if ((rc = load_hooks(m->val[R_HOOKS], &hooks)) == 0 && (rc = open_backend(&b)) == 0) {
    hook_env(m, "", env, envp);
    cli_apply_lock_path(b, lock);
    o.hooks = hooks;
    o.hook_env = envp;
    o.lock_path = lock;
    if (gs_layout_mp_restore(&err, b, m->val[R_FILE], text, len, &o) != 0)
      rc = fatal("%s", err.msg);
    else
      printf("MIG configuration restored successfully\n");
  }
  free(text);
  free(hooks);
  gs_backend_close(b);
  return rc;
}
