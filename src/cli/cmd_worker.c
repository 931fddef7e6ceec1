/* SPDX-License-Identifier: Apache-2.0 */
/* cmd_worker.c: `gpuslice worker`, the emulated KServe v2 server that stands
 * in for Triton on emulated GPUs. Parses options, turns --profile/--sms/
 * --full-gpu into the slice's SM count (geometry tables) and hands over to
 * the serve layer's worker (docs/worker.md). */
#include "cli/cli.h"
#include "geometry/geometry.h"
#include "worker/worker.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_MODELS 8

enum { O_LISTEN = 1000, O_MODEL, O_PROFILE, O_SMS, O_FULL, O_SHARE, O_GPU, O_HDR_TIMEOUT,
       O_MAX_HEADER, O_MAX_BODY, O_IDLE, O_GRPC, O_TSCALE };

struct worker_opts {
  const char *listen, *grpc_listen, *profile, *gpu;
  const char *models[MAX_MODELS + 1];
  unsigned nmodels, sms, share, time_scale;
  bool full;
  struct gs_http_limits lim;
};

static int number(const char *value, const char *what, unsigned *out)
{
  unsigned v[1];
  if (cli_parse_ids(value, what, v, 1) != 1 || v[0] == 0)
    return cli_usage("%s: expected a positive whole number, got '%s'", what, value);
  *out = v[0];
  return 0;
}

static int on_worker_opt(struct cli *c, int ch, const char *value, void *arg)
{
  struct worker_opts *o = arg;
  unsigned v = 0;
  int rc = 0;
  (void)c;
  switch (ch) {
  case O_LISTEN: o->listen = value; return cli_check_listen("--listen", value);
  case O_GRPC: o->grpc_listen = value; return cli_check_listen("--grpc-listen", value);
  case O_PROFILE: o->profile = value; return 0;
  case O_GPU: o->gpu = value; return 0;
  case O_FULL: o->full = true; return 0;
  case O_MODEL:
    if (o->nmodels == MAX_MODELS)
      return cli_usage("--model: at most %d models", MAX_MODELS);
    o->models[o->nmodels++] = value;
    return 0;
  case O_SMS: return number(value, "--sms", &o->sms);
  case O_SHARE: return number(value, "--share", &o->share);
  case O_TSCALE:
    if ((rc = number(value, "--time-scale", &o->time_scale)) == 0 && o->time_scale > 1000)
      return cli_usage("--time-scale %s: at most 1000", value);
    return rc;
  case O_HDR_TIMEOUT: /* bare numbers are the milliseconds these took before units */
    rc = cli_duration_in("--header-timeout", value, 1000, 1000, 86400000000ull, 1000,
                         &o->lim.read_timeout_ms);
    break;
  case O_IDLE:
    rc = cli_duration_in("--idle-timeout", value, 1000, 1000, 86400000000ull, 1000,
                         &o->lim.idle_timeout_ms);
    break;
  case O_MAX_HEADER: rc = number(value, "--max-header", &v), o->lim.max_header = v; break;
  case O_MAX_BODY: rc = number(value, "--max-body", &v), o->lim.max_body = v; break;
  default: return cli_usage("unexpected option");
  }
  return rc;
}

static const struct cli_opt worker_opts[] = {
    {"listen", 0, "HOST:PORT", O_LISTEN, "127.0.0.1:8000", "the HTTP listener (port 0: any free one)",
     CLI_VALUE_TEXT, NULL},
    {"grpc-listen", 0, "HOST:PORT", O_GRPC, "none", "also a KServe v2 gRPC listener",
     CLI_VALUE_TEXT, NULL},
    {"model", 0, "flower|bert-large", O_MODEL, "both", "a model it serves (repeat for several)",
     CLI_VALUE_CHOICE, NULL},
    {"profile", 0, "PROFILE", O_PROFILE, "none", "the MIG slice it models", CLI_VALUE_PROFILE, NULL},
    {"sms", 0, "N", O_SMS, "none", "or a slice of N SMs", CLI_VALUE_TEXT, NULL},
    {"full-gpu", 0, NULL, O_FULL, NULL, "or the whole GPU (the default)", CLI_VALUE_TEXT, NULL},
    {"gpu", 0, "MODEL", O_GPU, "a100-40gb", "the GPU model the slice is cut from", CLI_VALUE_MODEL,
     NULL},
    {"share", 0, "N", O_SHARE, "1", "workers time-slicing the slice without MIG", CLI_VALUE_TEXT,
     NULL},
    {"time-scale", 0, "N", O_TSCALE, "1", "slow every modelled time down N times (1 to 1000)",
     CLI_VALUE_TEXT, NULL},
    {"header-timeout", 0, "DURATION", O_HDR_TIMEOUT, "10s",
     "a request's headers must arrive within it (a bare number is ms)", CLI_VALUE_TEXT, NULL},
    {"idle-timeout", 0, "DURATION", O_IDLE, "60s",
     "an idle connection is closed after it (a bare number is ms)", CLI_VALUE_TEXT, NULL},
    {"max-header", 0, "BYTES", O_MAX_HEADER, "16384", "the largest request head", CLI_VALUE_TEXT,
     NULL},
    {"max-body", 0, "BYTES", O_MAX_BODY, "67108864", "the largest request body", CLI_VALUE_TEXT,
     NULL},
    {0},
};

static const struct cli_spec worker_spec = {
    .opts = worker_opts,
    .about = "EMULATED: no GPU is used. A KServe v2 (Triton-compatible) HTTP and gRPC server whose\n"
             "inference time is modelled for its slice (profile size, sharing) from published\n"
             "figures; it stands in for Triton under `gpuslice serve` on emulated GPUs.",
    .examples = "gpuslice worker --listen 127.0.0.1:9000 --profile 1g.5gb\n"
                "gpuslice serve -- gpuslice worker --listen '127.0.0.1:{port}' --profile '{profile}'",
};

/* The slice's SMs and a name for it, from the GPU model's tables. */
static int resolve_slice(const struct worker_opts *o, unsigned *sms, unsigned *full, char *name,
                         size_t namesz)
{
  const struct gs_geom_model *m = gs_geom_model_find(o->gpu);
  const struct gs_geom_gi_profile *p;
  char hint[512];
  if (!m)
    return cli_usage("--gpu %s: unknown GPU model; %s", o->gpu,
                     gs_geom_model_hint(o->gpu, hint, sizeof(hint)));
  if ((o->profile != NULL) + (o->sms != 0) + o->full > 1)
    return cli_usage("give one of --profile, --sms and --full-gpu");
  *full = m->sms;
  if (o->profile) {
    if (!(p = gs_geom_gi_profile_find(m, o->profile)))
      return cli_usage("--profile %s: not a MIG profile of %s (e.g. 1g.5gb, 3g.20gb)", o->profile,
                       m->name);
    *sms = p->sms;
    snprintf(name, namesz, "%s (%u SMs)", p->name, p->sms);
  } else if (o->sms) {
    *sms = o->sms;
    snprintf(name, namesz, "%u SMs", o->sms);
  } else {
    *sms = m->sms;
    snprintf(name, namesz, "full GPU (%u SMs)", m->sms);
  }
  return 0;
}

/* The slice's identity for /metrics' labels, as Triton finds its GPU: the
 * MIG device CUDA_VISIBLE_DEVICES names (serve's supervisor sets it), looked
 * up on the machine for its GPU's index and its profile. Best effort: with
 * no such device, the UUID alone (and --profile); with none named, nothing. */
struct slice_id {
  char uuid[GS_BACKEND_UUID_SIZE], profile[GS_GEOM_NAME_SIZE];
  int gpu;
};

static void find_slice(struct cli *c, const char *profile, struct slice_id *id)
{
  const char *env = getenv("CUDA_VISIBLE_DEVICES");
  struct gs_mig_device *devs = NULL;
  struct gs_backend *b = NULL;
  struct gs_err err = {0};
  unsigned ngpu = 0, n;
  id->gpu = -1;
  snprintf(id->profile, sizeof(id->profile), "%s", profile ? profile : "");
  if (!env || strncmp(env, "MIG-", 4) != 0)
    return;
  snprintf(id->uuid, sizeof(id->uuid), "%.*s", (int)strcspn(env, ","), env);
  if (gs_backend_open(&err, &c->cfg, &b) != 0 || b->ops->gpu_count(b, &err, &ngpu) != 0 ||
      !(devs = calloc(GS_BACKEND_MAX_MIG_DEVICES, sizeof(*devs))))
    ngpu = 0;
  for (unsigned g = 0; g < ngpu && id->gpu < 0; g++)
    if (b->ops->mig_devices(b, &err, g, devs, &n) == 0)
      for (unsigned k = 0; k < n; k++)
        if (strcmp(devs[k].uuid, id->uuid) == 0 || strcmp(devs[k].legacy_uuid, id->uuid) == 0) {
          id->gpu = (int)g;
          snprintf(id->profile, sizeof(id->profile), "%s", devs[k].name);
          break;
        }
  free(devs);
  if (b)
    gs_backend_close(b);
}

static int run_worker(struct cli *c, int argc, char **argv)
{
  struct worker_opts o = {.listen = "127.0.0.1:8000", .gpu = "a100-40gb", .share = 1};
  struct gs_worker_config cfg = {0};
  struct gs_worker *w = NULL;
  struct gs_err err = {0};
  struct slice_id id = {0};
  char slice[64];
  unsigned port = 0, gport = 0;
  int fd = -1, gfd = -1, rc, first;
  gs_http_limits_default(&o.lim);
  if ((first = cli_getopt(c, argc, argv, on_worker_opt, &o)) <= 0)
    return -first;
  if (first < argc)
    return cli_usage("unexpected argument '%s'; usage: %s", argv[first], cli_synopsis(c));
  if ((rc = resolve_slice(&o, &cfg.sms, &cfg.full_sms, slice, sizeof(slice))) != 0)
    return rc;
  cfg.models = o.nmodels ? o.models : NULL;
  cfg.slice_name = slice;
  cfg.share = o.share;
  cfg.time_scale = o.time_scale;
  find_slice(c, o.profile, &id);
  cfg.gpu_uuid = id.uuid;
  cfg.profile = id.profile;
  cfg.gpu = id.gpu;
  if (gs_worker_new(&err, &cfg, &w) != 0 ||
      gs_net_listen(&err, o.listen, 511, &fd, &port) != 0 ||
      (o.grpc_listen && gs_net_listen(&err, o.grpc_listen, 511, &gfd, &gport) != 0)) {
    gs_worker_free(w);
    if (fd >= 0)
      close(fd);
    return cli_fail(&err);
  }
  if (gfd >= 0)
    gs_worker_grpc_fd(w, gfd);
  /* Through the one logger, so --log-format and --log-level hold for the
   * worker as for serve: in text, the banner on stderr and the ports on
   * stdout as before (tests and scripts read "listening on HOST:PORT"). */
  gs_log_warn("worker", "EMULATED KServe v2 server, no GPU is used: inference time is "
              "modelled for %s on %s, shared by %u worker(s)%s%s",
              slice, gs_geom_model_find(o.gpu)->name, o.share,
              o.share > 1 ? " time-slicing it without MIG" : "",
              o.time_scale > 1 ? ", every modelled time slowed down by --time-scale" : "");
  gs_log_info("worker", "listening on %.*s:%u", (int)(strrchr(o.listen, ':') - o.listen),
              o.listen, port);
  if (gfd >= 0)
    gs_log_info("worker", "grpc listening on %.*s:%u",
                (int)(strrchr(o.grpc_listen, ':') - o.grpc_listen), o.grpc_listen, gport);
  rc = gs_worker_run(&err, w, fd, &o.lim);
  gs_worker_free(w);
  if (rc != 0)
    return cli_fail(&err);
  gs_log_notice("worker", "stopped");
  return GS_EXIT_OK;
}

const struct cli_verb cli_verbs_worker[] = {
    {NULL, "worker", run_worker, "emulated KServe v2 inference server (Triton's stand-in)", true,
     &worker_spec, false},
    {0},
};
