/* SPDX-License-Identifier: Apache-2.0 */
/* cmd_serve.c: `gpuslice serve`: options from the command line over a serve
 * file, the MIG devices of the selected GPUs as the workers' slots, then
 * gs_serve_run (src/serve/server.c: the supervisor, the proxy, its admin API
 * and the autoscaler on one loop; the drain; the device diff on SIGHUP).
 * On SIGHUP this file re-reads the serve file and lists the devices again. */
#include "cli/cli.h"
#include "jobs/jobs.h"
#include "serve/serve.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct serve_opts {
  const char *listen, *grpc_listen, *log_dir, *admin_listen, *admin_token, *admin_token_file, *ready_path;
  const char *file; /* -f: the serve config file */
  unsigned replicas, worker_timeout_ms, max_inflight, drain_ms, port_base, max_conns;
  unsigned idle_ms; /* --idle-timeout: a client connection with nothing under way */
  unsigned threads; /* the proxy's event-loop threads */
  bool ephemeral;
  enum gs_proxy_policy policy;
  unsigned given; /* bit (O_x - O_LISTEN) for each option given, from either source */
  unsigned cli_given; /* the same, from the command line only */
  bool cli_gpus;      /* -i was on the command line */
  struct gs_scale_config scale; /* budget_us != 0: autoscaling (docs/autoscale.md) */
  const char *grow_profile, *scale_state;
  const char *state_dir; /* the pid file's (--state-dir, else the default) */
  char *state_dir_buf;   /* the default's text, freed at the end */
  bool helped;           /* --help was printed: nothing more runs */
};

/* What a SIGHUP re-reads (gs_serve_config.on_reload). */
struct serve_reload {
  struct cli *c;     /* the backend and -i */
  struct serve_opts *o;
  struct gs_serve_file **files; /* the serve file as read at start and at each reload */
  size_t nfiles;
};

enum { O_LISTEN = 256, O_REPLICAS, O_POLICY, O_LOG_DIR, O_TIMEOUT, O_INFLIGHT, O_DRAIN, O_PORTS,
       O_EPHEMERAL, O_ADMIN, O_TOKEN, O_TOKEN_FILE, O_READY, O_CONNS, O_THREADS, O_GRPC, O_BUDGET,
       O_SLICES, O_GROW, O_SWINDOW, O_COOLDOWN, O_SHRINK, O_SSTATE, O_STATE_DIR, O_IDLE, O_END };

#define GIVEN(o, opt) (((o)->given >> ((opt) - O_LISTEN)) & 1u)

static int number(const char *v, const char *name, unsigned *out)
{
  char *end;
  unsigned long n = strtoul(v, &end, 10);
  if (!*v || *end || n > 100000000ul)
    return cli_usage("%s %s: expected a number", name, v);
  *out = (unsigned)n;
  return 0;
}

/* A DURATION option kept in milliseconds (a bare number is ms). */
static int millis(const char *v, const char *name, unsigned *out)
{
  return cli_duration_in(name, v, 1000, 0, 86400000000ull, 1000, out);
}

/* The autoscaler's options; 0 or an exit code. */
static int scale_opt(struct serve_opts *o, int ch, const char *value)
{
  struct gs_scale_config *sc = &o->scale;
  struct gs_err err = {0};
  char *end;
  int rc = 0;
  switch (ch) {
  case O_BUDGET: rc = gs_scale_parse_budget(&err, value, &sc->percentile, &sc->budget_us); break;
  case O_SLICES: rc = gs_scale_parse_range(&err, value, &sc->min_slices, &sc->max_slices); break;
  case O_SWINDOW: rc = gs_scale_parse_duration(&err, "--scale-window", value, &sc->window_us); break;
  case O_COOLDOWN:
    rc = gs_scale_parse_duration(&err, "--scale-cooldown", value, &sc->cooldown_us);
    break;
  case O_GROW: o->grow_profile = value; break;
  case O_SSTATE: o->scale_state = value; break;
  case O_SHRINK:
    sc->shrink_below = strtod(value, &end);
    if (end == value || *end || !(sc->shrink_below > 0 && sc->shrink_below <= 1))
      return cli_usage("--shrink-below %s: expected a fraction of the budget in (0, 1], e.g. "
                       "0.7", value);
    break;
  }
  return rc ? cli_usage("%s", err.msg) : 0;
}

static int on_serve_opt(struct cli *c, int ch, const char *value, void *arg)
{
  struct serve_opts *o = arg;
  (void)c;
  if (ch >= O_LISTEN && ch < O_END)
    o->given |= 1u << (ch - O_LISTEN);
  switch (ch) {
  case 'f': o->file = value; return 0;
  case O_READY: o->ready_path = value; return 0;
  case O_CONNS: return number(value, "--max-conns", &o->max_conns);
  case O_THREADS: return number(value, "--threads", &o->threads);
  case O_LISTEN: o->listen = value; return cli_check_listen("--listen", value);
  case O_GRPC: o->grpc_listen = value; return cli_check_listen("--grpc-listen", value);
  case O_LOG_DIR: o->log_dir = value; return 0;
  case O_STATE_DIR: o->state_dir = value; return 0;
  case O_REPLICAS: return number(value, "--replicas", &o->replicas);
  case O_TIMEOUT: return millis(value, "--worker-timeout", &o->worker_timeout_ms);
  case O_INFLIGHT: return number(value, "--max-inflight", &o->max_inflight);
  case O_DRAIN: return millis(value, "--drain-timeout", &o->drain_ms);
  case O_IDLE: return cli_duration_in("--idle-timeout", value, 1000, 1000, 86400000000ull, 1000,
                                      &o->idle_ms);
  case O_PORTS: return number(value, "--port-base", &o->port_base);
  case O_EPHEMERAL: o->ephemeral = true; return 0;
  case O_BUDGET: case O_SLICES: case O_GROW: case O_SWINDOW: case O_COOLDOWN: case O_SHRINK:
  case O_SSTATE: return scale_opt(o, ch, value);
  case O_ADMIN:
    o->admin_listen = value;
    return strcmp(value, "off") != 0 ? cli_check_listen("--admin-listen", value) : 0;
  case O_TOKEN: o->admin_token = value; return 0;
  case O_TOKEN_FILE: o->admin_token_file = value; return 0;
  case O_POLICY:
    if (strcmp(value, "p2c") == 0)
      o->policy = GS_PROXY_P2C;
    else if (strcmp(value, "rr") == 0)
      o->policy = GS_PROXY_RR;
    else
      return cli_usage("--policy %s: expected p2c (power of two choices) or rr (round-robin)",
                       value);
    return 0;
  default: return cli_usage("unexpected option");
  }
}

/* Also the serve file's keys (every row but -i, whose key is gpus). */
static const struct cli_opt serve_opts[] = {
    {"file", 'f', "FILE", 'f', "none",
     "a YAML serve file: any option below as a key (gpuslice-serve.yaml(5)); the command line wins",
     CLI_VALUE_FILE, NULL},
    CLI_OPT_GPUS("every GPU", "the GPUs whose MIG devices get workers (key gpus:)"),
    {"listen", 0, "HOST:PORT", O_LISTEN, "127.0.0.1:8000", "the load balancer's HTTP listener",
     CLI_VALUE_TEXT, NULL},
    {"grpc-listen", 0, "HOST:PORT", O_GRPC, "none", "also a gRPC listener (KServe v2)",
     CLI_VALUE_TEXT, NULL},
    {"admin-listen", 0, "HOST:PORT|off", O_ADMIN, "127.0.0.1:7463", "the admin API's own listener",
     CLI_VALUE_TEXT, NULL},
    {"admin-token", 0, "TOKEN", O_TOKEN, "none", "the admin API's bearer token (16+ characters)",
     CLI_VALUE_TEXT, NULL},
    {"admin-token-file", 0, "FILE", O_TOKEN_FILE, "none", "or the file whose first line it is",
     CLI_VALUE_FILE, NULL},
    {"replicas", 0, "N", O_REPLICAS, "1", "workers per MIG device, 1 to 64", CLI_VALUE_TEXT, NULL},
    {"policy", 0, "p2c|rr", O_POLICY, "p2c", "power of two choices, or round-robin",
     CLI_VALUE_CHOICE, NULL},
    {"threads", 0, "N", O_THREADS, "the online cores", "the proxy's event-loop threads, 1 to 64",
     CLI_VALUE_TEXT, NULL},
    {"max-conns", 0, "N", O_CONNS, "1024",
     "client connections at most (then the oldest idle one is closed)",
     CLI_VALUE_TEXT, NULL},
    {"max-inflight", 0, "N", O_INFLIGHT, "64", "requests at most per worker", CLI_VALUE_TEXT, NULL},
    {"worker-timeout", 0, "DURATION", O_TIMEOUT, "30s",
     "from a request sent to its last response byte; past it: 504 (a bare number is ms)",
     CLI_VALUE_TEXT, NULL},
    {"drain-timeout", 0, "DURATION", O_DRAIN, "10s",
     "on SIGTERM, requests in flight get this long (a bare number is ms)", CLI_VALUE_TEXT, NULL},
    {"idle-timeout", 0, "DURATION", O_IDLE, "60s",
     "a client connection with no request or call under way is closed after this (gRPC: GOAWAY "
     "first; a bare number is ms)", CLI_VALUE_TEXT, NULL},
    {"log-dir", 0, "DIR", O_LOG_DIR, "none: inherited", "worker-<index>.log per worker here",
     CLI_VALUE_DIR, NULL},
    {"port-base", 0, "N", O_PORTS, "18000",
     "worker i gets {port} N+3i, {grpc_port} +1, {metrics_port} +2", CLI_VALUE_TEXT, NULL},
    {"ephemeral-ports", 0, NULL, O_EPHEMERAL, NULL, "or free ports the kernel picks",
     CLI_VALUE_TEXT, NULL},
    {"ready-path", 0, "PATH", O_READY, "/v2/health/ready", "a worker is ready when it answers 200 here",
     CLI_VALUE_TEXT, NULL},
    {"state-dir", 0, "DIR", O_STATE_DIR, "beside the emulator's state, else $XDG_STATE_HOME/gpuslice/serve",
     "serve's pid file and its workers' records", CLI_VALUE_DIR, NULL},
    {"latency-budget", 0, "pNN=DURATION", O_BUDGET, "none: no autoscaling",
     "grow and shrink slices to keep this percentile under it, e.g. p90=50ms", CLI_VALUE_TEXT, NULL},
    {"slices", 0, "MIN..MAX", O_SLICES, "1..7", "the autoscaler's bounds", CLI_VALUE_TEXT, NULL},
    {"grow-profile", 0, "PROFILE", O_GROW, "the smallest", "the profile of slices it creates",
     CLI_VALUE_PROFILE, NULL},
    {"scale-window", 0, "DURATION", O_SWINDOW, "10s",
     "the window latency is judged over", CLI_VALUE_TEXT, NULL},
    {"scale-cooldown", 0, "DURATION", O_COOLDOWN, "10s",
     "the least time between two changes", CLI_VALUE_TEXT, NULL},
    {"shrink-below", 0, "FRACTION", O_SHRINK, "0.75",
     "shrink when the percentile is under this fraction of the budget", CLI_VALUE_TEXT, NULL},
    {"scale-state", 0, "FILE", O_SSTATE, "none", "where the autoscaler keeps its record",
     CLI_VALUE_FILE, NULL},
    {0},
};

static const struct cli_spec serve_spec = {
    .operands = "[-- COMMAND ARGS...]",
    .operand = CLI_VALUE_COMMAND,
    .opts = serve_opts,
    .about = "One worker per MIG device of the selected GPUs (CUDA_VISIBLE_DEVICES=MIG-<uuid>,\n"
             "restarted on crash) behind one load balancer with health checks, an admin API and\n"
             "optional autoscaling. Placeholders in COMMAND ARGS: {port} {grpc_port} {metrics_port}\n"
             "{uuid} {profile} {index}. SIGHUP re-reads the serve file and the devices. Under\n"
             "systemd (Type=notify) it reports ready once a first worker is, and pings the watchdog.",
    .examples = "gpuslice serve -- tritonserver --model-repository=/models --http-port={port}\n"
                "gpuslice serve -f /etc/gpuslice/serve.yaml\n"
                "gpuslice serve --latency-budget p90=50ms --slices 1..7 -- gpuslice worker "
                "--listen '127.0.0.1:{port}' --profile '{profile}'",
};

/* The MIG devices of the selected GPUs, in GPU then device order; the count
 * (0 included) or -exit. devs holds GS_BACKEND_MAX_GPUS * MAX_MIG_DEVICES. */
static int list_devices(struct cli *c, struct gs_mig_device *devs)
{
  unsigned gpus[GS_BACKEND_MAX_GPUS], total = 0;
  struct gs_backend *b;
  struct gs_err err = {0};
  int n, rc;
  if ((n = cli_select_gpus(c, gpus)) < 0)
    return n;
  if ((rc = cli_backend(c, &b)) != 0)
    return -rc;
  for (int i = 0; i < n; i++) {
    unsigned nd = 0;
    if (total + GS_BACKEND_MAX_MIG_DEVICES > GS_BACKEND_MAX_GPUS * GS_BACKEND_MAX_MIG_DEVICES ||
        b->ops->mig_devices(b, &err, gpus[i], devs + total, &nd) != 0)
      return -cli_fail(&err);
    total += nd;
  }
  return (int)total;
}

/* One slot per MIG device (times replicas) of the selected GPUs; the
 * strings live in devs, which the caller keeps. Returns the count or -exit. */
static int collect_slots(struct cli *c, unsigned replicas, bool scaling,
                         struct gs_mig_device *devs, struct gs_super_slot *slots)
{
  int total = list_devices(c, devs), ns = 0;
  if (total < 0)
    return total;
  if (!total && !scaling) {
    fprintf(stderr, "gpuslice: serve: the selected GPUs have no MIG devices to run workers on; "
                    "partition them first with `gpuslice apply` or `gpuslice gi create -C`\n");
    return -GS_EXIT_FAILED;
  }
  for (int k = 0; k < total; k++)
    for (unsigned r = 0; r < replicas; r++, ns++)
      slots[ns] = (struct gs_super_slot){devs[k].uuid, devs[k].name, (unsigned)ns, devs[k].gpu};
  return ns;
}

/* Options of the serve file the command line did not give, through the same
 * option parser (one set of checks); the file's strings stay in f. */
static int apply_file(struct cli *c, struct serve_opts *o, const struct gs_serve_file *f)
{
  unsigned from_cli = o->given;
  for (size_t i = 0; i < f->nopts; i++) {
    const struct gs_serve_file_opt *fo = &f->opts[i];
    const struct cli_opt *x = serve_opts;
    int rc;
    if (strcmp(fo->key, "gpus") == 0) {
      if (!c->gpus)
        c->gpus = fo->value;
      continue;
    }
    while (x->name && strcmp(x->name, fo->key) != 0)
      x++;
    if (!x->name || x->val < O_LISTEN || x->val >= O_END || ((from_cli >> (x->val - O_LISTEN)) & 1u))
      continue;
    if (x->val == O_EPHEMERAL) {
      if (strcmp(fo->value, "true") != 0 && strcmp(fo->value, "false") != 0)
        return cli_usage("%s:%u: ephemeral-ports: expected true or false, found '%s'", o->file,
                         fo->line, fo->value);
      if (strcmp(fo->value, "false") == 0)
        continue;
    }
    if ((rc = on_serve_opt(c, x->val, fo->value, o)) != 0) {
      fprintf(stderr, "gpuslice: (that is %s, line %u: %s)\n", o->file, fo->line, fo->key);
      return rc;
    }
  }
  for (size_t i = 0; f->env && f->env[i]; i++) {
    char *eq = strchr(f->env[i], '=');
    *eq = 0; /* the name, then the value; the workers inherit serve's environment */
    if (setenv(f->env[i], eq + 1, 1) != 0)
      return cli_usage("%s: env: cannot set %s", o->file, f->env[i]);
    *eq = '=';
  }
  return 0;
}

static int load_file(struct cli *c, struct serve_opts *o, struct gs_serve_file **f)
{
  struct gs_err err = {0};
  char *text;
  size_t len;
  int rc;
  o->cli_given = o->given;
  o->cli_gpus = c->gpus != NULL;
  if (gs_file_read(&err, o->file, 1 << 20, &text, &len) != 0)
    return cli_fail_file(&err);
  rc = gs_serve_file_parse(&err, o->file, text, len, f);
  free(text);
  if (rc)
    return cli_fail_file(&err);
  return apply_file(c, o, *f);
}

/* The admin token from --admin-token or the first line of
 * --admin-token-file (*buf holds it then); 0 or an exit code. */
static int admin_token(struct serve_opts *o, char **buf)
{
  struct gs_err err = {0};
  size_t len;
  if (o->admin_token && o->admin_token_file)
    return cli_usage("give --admin-token or --admin-token-file, not both");
  if (o->admin_token_file) {
    if (gs_file_read(&err, o->admin_token_file, 4096, buf, &len) != 0)
      return cli_fail_file(&err);
    (*buf)[strcspn(*buf, "\r\n")] = 0;
    o->admin_token = *buf;
  }
  if (!o->admin_token)
    return 0;
  for (const char *t = o->admin_token; *t; t++)
    if (*t <= ' ' || *t > '~')
      return cli_usage("the admin token must be printable ASCII without spaces");
  if (strlen(o->admin_token) < 16)
    return cli_usage("the admin token is too short: give 16 characters or more "
                     "(e.g. from `openssl rand -hex 16`)");
  return 0;
}

/* The value of key in f, or NULL. */
static const char *file_value(const struct gs_serve_file *f, const char *key)
{
  for (size_t i = 0; f && i < f->nopts; i++)
    if (strcmp(f->opts[i].key, key) == 0)
      return f->opts[i].value;
  return NULL;
}

static bool same(const char *a, const char *b)
{
  return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static bool same_strv(char *const *a, char *const *b)
{
  size_t i = 0;
  for (; a && b && a[i] && b[i]; i++)
    if (strcmp(a[i], b[i]) != 0)
      return false;
  return (!a || !a[i]) && (!b || !b[i]);
}

/* Applies the options of the re-read file that may change live (gpus,
 * policy, max-inflight, worker-timeout), unless the command line gave them;
 * names the others that changed (they take a restart). 0, or an exit code
 * when a value is bad (then nothing is applied). */
static int apply_reloaded(struct serve_reload *rl, struct gs_proxy *proxy,
                          const struct gs_serve_file *old, const struct gs_serve_file *f)
{
  struct serve_opts *o = rl->o, n = *o;
  bool gpus_changed = !o->cli_gpus && !same(file_value(old, "gpus"), file_value(f, "gpus"));
  int rc;
  for (const struct cli_opt *x = serve_opts; x->name; x++) {
    const char *was = file_value(old, x->name), *now = file_value(f, x->name);
    if (x->val < O_LISTEN || x->val >= O_END || ((o->cli_given >> (x->val - O_LISTEN)) & 1u) || same(was, now))
      continue;
    if (x->val != O_POLICY && x->val != O_INFLIGHT && x->val != O_TIMEOUT) {
      printf("reload: %s changed in %s; it takes a restart\n", x->name, o->file);
      continue;
    }
    if (!now) /* removed: back to the default */
      now = x->val == O_POLICY ? "p2c" : x->val == O_INFLIGHT ? "64" : "30000";
    if ((rc = on_serve_opt(rl->c, x->val, now, &n)) != 0)
      return rc;
  }
  if (!same_strv(old ? old->command : NULL, f->command) ||
      !same_strv(old ? old->env : NULL, f->env))
    printf("reload: command or env changed in %s; they take a restart\n", o->file);
  *o = n;
  gs_proxy_reconfigure(proxy, o->policy, o->max_inflight, o->worker_timeout_ms);
  if (gpus_changed)
    rl->c->gpus = file_value(f, "gpus");
  return 0;
}

/* Re-reads the serve file; on any error everything stays as it was. */
static void reload_file(struct serve_reload *rl, struct gs_proxy *proxy)
{
  struct gs_serve_file *f = NULL, **more;
  struct gs_err err = {0};
  char *text = NULL;
  size_t len;
  if (gs_file_read(&err, rl->o->file, 1 << 20, &text, &len) != 0 ||
      gs_serve_file_parse(&err, rl->o->file, text, len, &f) != 0) {
    free(text);
    fprintf(stderr, "gpuslice serve: reload: %s; the file's options stay as they were\n", err.msg);
    return;
  }
  free(text);
  /* Kept to the end: the options point into the files they came from. */
  if (!(more = realloc(rl->files, (rl->nfiles + 1) * sizeof(*more)))) {
    gs_serve_file_free(f);
    return;
  }
  rl->files = more;
  if (apply_reloaded(rl, proxy, rl->nfiles ? rl->files[rl->nfiles - 1] : NULL, f) != 0) {
    fprintf(stderr, "gpuslice serve: reload: %s: a bad value; the file's options stay as they "
                    "were\n", rl->o->file);
    gs_serve_file_free(f);
    return;
  }
  rl->files[rl->nfiles++] = f;
}

/* SIGHUP (gs_serve_config.on_reload): the file, then the devices of the
 * GPUs it may have changed. */
static int on_reload(void *ctx, struct gs_proxy *proxy, struct gs_mig_device *devs)
{
  struct serve_reload *rl = ctx;
  const char *gpus = rl->c->gpus;
  int n;
  if (rl->o->file)
    reload_file(rl, proxy);
  if ((n = list_devices(rl->c, devs)) < 0)
    rl->c->gpus = gpus; /* a bad new -i from the file: keep the old one */
  return n < 0 ? -1 : n;
}

/* Defaults of the options neither the command line nor the file gave. */
static void defaults(struct serve_opts *o)
{
  if (!o->listen)
    o->listen = "127.0.0.1:8000";
  if (!o->admin_listen)
    o->admin_listen = "127.0.0.1:7463"; /* no common default: Triton's are 8000-8002 */
  if (!GIVEN(o, O_REPLICAS))
    o->replicas = 1;
  if (!GIVEN(o, O_DRAIN))
    o->drain_ms = 10000;
  if (!GIVEN(o, O_THREADS)) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    o->threads = n > 0 && n <= 64 ? (unsigned)n : 1;
  }
}

/* Everything but the slots: options, file, token, command; 0 or an exit
 * code (0 with o->helped after --help: nothing more is to run). */
static int prepare(struct cli *c, int argc, char **argv, struct serve_opts *o,
                   struct gs_serve_file **f, char **token_buf, const char *const **cmd)
{
  int first, rc;
  if ((first = cli_getopt(c, argc, argv, on_serve_opt, o)) <= 0) {
    o->helped = first == 0;
    return -first;
  }
  if (first < argc && strcmp(argv[first - 1], "--") != 0)
    return cli_usage("unexpected argument '%s': give the worker command after `--`", argv[first]);
  if (o->file && (rc = load_file(c, o, f)) != 0)
    return rc;
  defaults(o);
  if (first < argc)
    *cmd = (const char *const *)(argv + first);
  else if (*f && (*f)->command)
    *cmd = (const char *const *)(*f)->command;
  else
    return cli_usage("give the worker command after `--` (or as command: in the serve file); "
                     "usage: %s", cli_synopsis(c));
  if (!o->replicas || o->replicas > 64)
    return cli_usage("--replicas %u: expected 1 to 64", o->replicas);
  if (o->max_conns > GS_SERVE_LOOP_FDS - 4096)
    return cli_usage("--max-conns %u: at most %d", o->max_conns, GS_SERVE_LOOP_FDS - 4096);
  if (!o->threads || o->threads > 64)
    return cli_usage("--threads %u: expected 1 to 64", o->threads);
  return admin_token(o, token_buf);
}

/* The autoscaler's GPUs (the selected ones) and backend; 0 or an exit code. */
static int scale_target(struct cli *c, const struct serve_opts *o, unsigned *gpus,
                        struct gs_scale_target *t)
{
  struct gs_backend *b;
  int n, rc;
  if (!o->scale.budget_us)
    return 0;
  if ((n = cli_select_gpus(c, gpus)) < 0)
    return -n;
  if ((rc = cli_backend(c, &b)) != 0)
    return rc;
  *t = (struct gs_scale_target){.backend = b, .gpus = gpus, .ngpus = (size_t)n,
                                .profile = o->grow_profile, .state_path = o->scale_state};
  return 0;
}

/* serve's state directory: --state-dir, else the default for the backend
 * (opened by now); 0 or an exit code. */
static int state_dir(struct cli *c, struct serve_opts *o)
{
  struct gs_err err = {0};
  if (o->state_dir)
    return 0;
  if (!(o->state_dir_buf = gs_serve_default_state_dir(&err, c->backend)))
    return cli_fail(&err);
  o->state_dir = o->state_dir_buf;
  return 0;
}

/* What the serve layer runs, from the options and the slots. */
static void serve_config(const struct serve_opts *o, struct gs_serve_config *sc)
{
  sc->listen = o->listen;
  sc->state_dir = o->state_dir;
  sc->grpc_listen = o->grpc_listen;
  sc->admin_listen = strcmp(o->admin_listen, "off") != 0 ? o->admin_listen : NULL;
  sc->admin_token = o->admin_token;
  sc->super.log_dir = o->log_dir;
  sc->super.port_base = o->port_base;
  sc->super.ephemeral_ports = o->ephemeral;
  sc->super.ready_path = o->ready_path;
  sc->proxy.policy = o->policy;
  sc->proxy.max_inflight = o->max_inflight;
  sc->proxy.worker_timeout_ms = o->worker_timeout_ms;
  sc->proxy.threads = o->threads;
  gs_http_limits_default(&sc->proxy.limits);
  if (o->max_conns)
    sc->proxy.limits.max_conns = o->max_conns;
  if (GIVEN(o, O_IDLE))
    sc->proxy.limits.idle_timeout_ms = o->idle_ms;
  sc->replicas = o->replicas;
  sc->drain_ms = o->drain_ms;
  sc->scale = o->scale;
}

static int run_serve(struct cli *c, int argc, char **argv)
{
  struct serve_opts o = {0};
  struct gs_serve_config sc = {0};
  struct serve_reload rl = {.c = c, .o = &o};
  struct gs_serve_file *file = NULL;
  struct gs_mig_device *devs = NULL;
  struct gs_super_slot *slots = NULL;
  const char *const *cmd = NULL;
  unsigned gpus[GS_BACKEND_MAX_GPUS];
  struct gs_err err = {0};
  char *token_buf = NULL, jobs_dir[PATH_MAX];
  struct gs_backend *b;
  int n, rc;
  if ((rc = prepare(c, argc, argv, &o, &file, &token_buf, &cmd)) != 0 || o.helped)
    goto out;
  devs = calloc((size_t)GS_BACKEND_MAX_GPUS * GS_BACKEND_MAX_MIG_DEVICES, sizeof(*devs));
  slots = calloc((size_t)GS_BACKEND_MAX_GPUS * GS_BACKEND_MAX_MIG_DEVICES * o.replicas,
                 sizeof(*slots));
  if (!devs || !slots) {
    rc = cli_fail(&(struct gs_err){GS_E_NO_MEMORY, "out of memory listing MIG devices"});
    goto out;
  }
  if ((n = collect_slots(c, o.replicas, o.scale.budget_us != 0, devs, slots)) < 0) {
    rc = -n;
    goto out;
  }
  if ((rc = scale_target(c, &o, gpus, &sc.scale_target)) != 0 || (rc = state_dir(c, &o)) != 0)
    goto out;
  serve_config(&o, &sc);
  /* Workers claim their devices in the jobs ledger, as `run` and the queue do. */
  if ((rc = cli_backend(c, &b)) != 0 || gs_jobs_dir(&err, b, NULL, jobs_dir) != 0) {
    rc = rc ? rc : cli_fail(&err);
    goto out;
  }
  sc.super.claims_dir = jobs_dir;
  sc.super.slots = slots;
  sc.super.nslots = (size_t)n;
  sc.super.argv = cmd;
  sc.on_reload = on_reload;
  sc.ctx = &rl;
  cli_service_serve(&sc);
  if (file && (rl.files = calloc(1, sizeof(*rl.files))) != NULL) {
    rl.files[rl.nfiles++] = file;
    file = NULL; /* rl.files owns it now */
  }
  rc = gs_serve_run(&err, &sc) ? cli_fail(&err) : GS_EXIT_OK;
out:
  free(devs);
  free(slots);
  free(token_buf);
  free(o.state_dir_buf);
  for (size_t i = 0; i < rl.nfiles; i++)
    gs_serve_file_free(rl.files[i]);
  free(rl.files);
  gs_serve_file_free(file);
  return rc;
}

const struct cli_verb cli_verbs_serve[] = {
    {NULL, "serve", run_serve, "one worker per MIG device behind a load balancer", true,
     &serve_spec, false},
    {0},
};
