/* SPDX-License-Identifier: Apache-2.0 */
/* cmd_plan.c: `gpuslice plan WORKLOADS --fleet FILE | --gpus SPEC`: reads the
 * inputs, runs the planner and prints each GPU's layout (MIG instances, MPS
 * shares or time-slicing replicas), what did not fit and why, utilization and
 * fragmentation, or one of the exports. `plan replay` replays a trace for
 * bench/plan.sh and `plan synthetic` times a generated fleet. */
#include "cli/cli.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plan/plan.h"

enum { OPT_FLEET = 1000, OPT_GPUS, OPT_POLICY, OPT_INCREMENTAL, OPT_EXPORT, OPT_NODES, OPT_PODS,
       OPT_MODE, OPT_INFLATE, OPT_WORKLOADS, OPT_SEED, OPT_MIX, OPT_SEEDS, OPT_NAMESPACE };

struct plan_args {
  const char *fleet, *gpus, *export_kind, *nodes, *pods, *mode, *mix, *ns;
  enum gs_plan_policy policy;
  bool incremental;
  double inflate;
  unsigned ngpus, nworkloads, seed, seeds;
  bool seed_given;
};

static int parse_count(const char *v, const char *what, unsigned max, unsigned *out)
{
  char *end;
  unsigned long x = strtoul(v, &end, 10);
  if (*end || end == v || *v == '-' || x == 0 || x > max)
    return cli_usage("%s '%s': expected a whole number from 1 to %u", what, v, max);
  *out = (unsigned)x;
  return 0;
}

static int on_plan_opt(struct cli *c, int ch, const char *v, void *arg)
{
  struct plan_args *a = arg;
  char *end;
  (void)c;
  switch (ch) {
  case OPT_FLEET: a->fleet = v; return 0;
  case OPT_GPUS: a->gpus = v; return 0;
  case OPT_EXPORT: a->export_kind = v; return 0;
  case OPT_NODES: a->nodes = v; return 0;
  case OPT_PODS: a->pods = v; return 0;
  case OPT_MODE: a->mode = v; return 0;
  case OPT_MIX: a->mix = v; return 0;
  case OPT_NAMESPACE: a->ns = v; return 0;
  case OPT_INCREMENTAL: a->incremental = true; return 0;
  case OPT_WORKLOADS: return parse_count(v, "--workloads", GS_PLAN_MAX_REPLICAS, &a->nworkloads);
  case OPT_SEED:
    a->seed_given = true;
    return parse_count(v, "--seed", 1u << 30, &a->seed);
  case OPT_SEEDS: return parse_count(v, "--seeds", 1000, &a->seeds);
  case OPT_INFLATE:
    a->inflate = strtod(v, &end);
    if (*end || end == v || !(a->inflate > 0 && a->inflate <= 10))
      return cli_usage("--inflate '%s': expected a number above 0 and at most 10 (e.g. 1.3)", v);
    return 0;
  default:
    if (strcmp(v, "ours") == 0)
      a->policy = GS_PLAN_OURS;
    else if (strcmp(v, "first-fit") == 0)
      a->policy = GS_PLAN_FIRST_FIT;
    else if (strcmp(v, "best-fit") == 0)
      a->policy = GS_PLAN_BEST_FIT;
    else if (strcmp(v, "fgd") == 0)
      a->policy = GS_PLAN_FGD;
    else if (strcmp(v, "random") == 0)
      a->policy = GS_PLAN_RANDOM;
    else
      return cli_usage("--policy '%s': expected ours, first-fit, best-fit, fgd or random", v);
    return 0;
  }
}

static const struct cli_opt plan_opts[] = {
    {"fleet", 0, "FILE", OPT_FLEET, NULL, "the fleet: nodes and their GPUs (gpuslice-plan.yaml(5))",
     CLI_VALUE_FILE, NULL},
    {"gpus", 0, "MODEL:N[,...]", OPT_GPUS, NULL,
     "or a fleet of N GPUs of each model (synthetic: a number of GPUs)", CLI_VALUE_MODEL, NULL},
    {"policy", 0, "ours|first-fit|best-fit|fgd|random", OPT_POLICY, "ours",
     "the packing policy (fgd and random: replay only; docs/plan.md)", CLI_VALUE_CHOICE, NULL},
    {"incremental", 0, NULL, OPT_INCREMENTAL, NULL,
     "keep what the fleet file says is placed; place only the rest", CLI_VALUE_TEXT, NULL},
    {"export", 0, "mig-parted|gpuslice|kubernetes|labels|device-plugin|gres", OPT_EXPORT, "none",
     "print the plan in that format instead of the table", CLI_VALUE_CHOICE, NULL},
    {"namespace", 0, "NS", OPT_NAMESPACE, "gpu-operator", "the namespace of --export kubernetes",
     CLI_VALUE_TEXT, NULL},
    {"nodes", 0, "CSV", OPT_NODES, NULL, "replay: the trace's nodes", CLI_VALUE_FILE, NULL},
    {"pods", 0, "CSV", OPT_PODS, NULL, "replay: the trace's pods", CLI_VALUE_FILE, NULL},
    {"mode", 0, "fractional|mig", OPT_MODE, "fractional",
     "replay: GPU requests as fractions of GPUs, or as MIG slices", CLI_VALUE_CHOICE, NULL},
    {"inflate", 0, "X", OPT_INFLATE, "1.3", "replay: grow the pods' demand X times (up to 10)",
     CLI_VALUE_TEXT, NULL},
    {"seed", 0, "S", OPT_SEED, "replay 1, synthetic 0", "replay and synthetic: the first seed",
     CLI_VALUE_TEXT, NULL},
    {"seeds", 0, "N", OPT_SEEDS, "10 (replay)", "replay: the mean of N runs, seeds S..S+N-1",
     CLI_VALUE_TEXT, NULL},
    {"workloads", 0, "M", OPT_WORKLOADS, NULL, "synthetic: M generated workloads", CLI_VALUE_TEXT,
     NULL},
    {"mix", 0, "small|varied", OPT_MIX, "small", "synthetic: the workloads' sizes",
     CLI_VALUE_CHOICE, NULL},
    CLI_OPT_JSON("print the plan as JSON (docs/plan.md)"),
    {0},
};

static const struct cli_spec plan_spec = {
    .operands = "WORKLOADS.yaml | replay | synthetic",
    .operand = CLI_VALUE_FILE,
    .opts = plan_opts,
    .about = "Packs the workloads' replicas onto the fleet's GPUs (MIG slices, MPS shares or\n"
             "time-slicing), fragmentation-aware, and prints each GPU's layout, what did not fit and\n"
             "why, or an export. Exit 1 when some replica did not fit. `plan replay` replays a trace\n"
             "(bench/plan.sh); `plan synthetic` times a generated fleet. File formats:\n"
             "gpuslice-plan.yaml(5).",
    .examples = "gpuslice plan workloads.yaml --gpus a100-40gb:8\n"
                "gpuslice plan workloads.yaml --fleet fleet.yaml --export kubernetes\n"
                "gpuslice plan replay --nodes nodes.csv --pods pods.csv --policy fgd",
};

/* Planning errors are about the input, not a GPU: no NVML code name. */
static int plan_fail(const struct gs_err *err)
{
  fprintf(stderr, "gpuslice: %s\n", err->msg);
  return cli_exit_of(err->code);
}

/* A file the command line names: any failure to read it is exit 2 (docs/cli.md). */
static int read_input(const char *path, const char *what, char **text, size_t *len)
{
  struct gs_err err = {0};
  if (gs_file_read(&err, path, 64u << 20, text, len) != 0) {
    fprintf(stderr, "gpuslice: %s %s: %s\n", what, path, err.msg);
    return err.code == GS_E_NO_MEMORY ? GS_EXIT_FAILED : GS_EXIT_USAGE;
  }
  return 0;
}

/* ---- printing a plan ---- */

static const char *wname(const struct gs_plan_workloads *w, int i)
{
  return i >= 0 ? w->w[i].name : "(idle)";
}

static json_t *gpu_json(const struct gs_plan_workloads *w, const struct gs_plan_gpu *g)
{
  json_t *units = json_array();
  for (unsigned i = 0; i < g->nunit; i++) {
    const struct gs_plan_unit *u = &g->unit[i];
    json_t *o = json_pack("{s:s*, s:i}", "workload", u->workload >= 0 ? w->w[u->workload].name : NULL,
                          "replica", u->workload >= 0 ? (int)u->replica : -1);
    if (g->mode == GS_PLAN_MIG) {
      const struct gs_geom_slot *s = &g->layout.slot[i];
      json_object_set_new(o, "profile", json_string(s->profile->name));
      json_object_set_new(o, "start", json_integer(s->start));
      json_object_set_new(o, "size", json_integer(s->profile->span));
      json_object_set_new(o, "gi_id", json_integer(gs_geom_gi_id(g->model, (unsigned)s->start, s->profile->span)));
    } else {
      json_object_set_new(o, "thread_percentage", json_integer((u->milli + 9) / 10));
      json_object_set_new(o, "memory_limit_mib", json_integer(u->memory_mib));
    }
    json_array_append_new(units, o);
  }
  return json_pack("{s:s, s:i, s:s, s:s, s:o}", "node", g->node, "index", g->index, "model",
                   g->model->key, "mode", gs_plan_mode_name(g->mode), "units", units);
}

static json_t *summary_json(const struct gs_plan_fleet *f, const struct gs_plan_result *r)
{
  return json_pack("{s:i, s:i, s:f, s:i, s:i, s:f, s:i, s:i, s:i}", "gpus", f->ngpu, "gpus_used",
                   r->gpus_used, "compute_allocated", r->compute_alloc, "mig_free_slices",
                   r->free_slices, "mig_fragmented_slices", r->frag_slices, "shared_fragmented_gpus",
                   r->frag_shared, "instances_created", r->created, "instances_destroyed",
                   r->destroyed, "replicas_moved", r->moved);
}

static int print_json(const struct gs_plan_workloads *w, const struct gs_plan_fleet *f,
                      const struct gs_plan_result *r, enum gs_plan_policy policy)
{
  json_t *gpus = json_array(), *unplaced = json_array();
  for (unsigned i = 0; i < f->ngpu; i++)
    json_array_append_new(gpus, gpu_json(w, &f->gpu[i]));
  for (unsigned i = 0; i < r->nunplaced; i++)
    json_array_append_new(unplaced, json_pack("{s:s, s:i, s:s}", "workload", w->w[r->unplaced[i].workload].name,
                                              "replica", r->unplaced[i].replica, "reason",
                                              r->unplaced[i].reason));
  return cli_print_json(json_pack("{s:s, s:o, s:o, s:o}", "policy", gs_plan_policy_name(policy), "gpus",
                                  gpus, "unplaced", unplaced, "summary", summary_json(f, r)));
}

static void print_gpu(const struct gs_plan_workloads *w, const struct gs_plan_gpu *g)
{
  printf("%s GPU %u (%s): %s", g->node, g->index, g->model->key, gs_plan_mode_name(g->mode));
  if (g->mode == GS_PLAN_TIMESLICE)
    printf(", %u replicas", g->nunit);
  if (g->mode == GS_PLAN_MPS)
    printf(", %u clients, %u%% of threads and %u MiB handed out", g->nunit, (g->used_milli + 9) / 10,
           g->used_mib);
  printf("\n");
  for (unsigned i = 0; i < g->nunit; i++) {
    const struct gs_plan_unit *u = &g->unit[i];
    if (g->mode == GS_PLAN_MIG)
      printf("  %-12s start %-2d  %s", g->layout.slot[i].profile->name, g->layout.slot[i].start,
             wname(w, u->workload));
    else if (g->mode == GS_PLAN_MPS)
      printf("  %3u%% threads  %6u MiB  %s", (u->milli + 9) / 10, u->memory_mib, wname(w, u->workload));
    else
      printf("  replica %-2u  %s", i, wname(w, u->workload));
    if (u->workload >= 0)
      printf(" #%u", u->replica);
    printf("\n");
  }
}

static void print_text(const struct gs_plan_workloads *w, const struct gs_plan_fleet *f,
                       const struct gs_plan_result *r)
{
  unsigned idle = 0;
  for (unsigned i = 0; i < f->ngpu; i++) {
    if (f->gpu[i].mode == GS_PLAN_FREE)
      idle++;
    else
      print_gpu(w, &f->gpu[i]);
  }
  if (idle)
    printf("%u GPU%s left free\n", idle, idle == 1 ? "" : "s");
  for (unsigned i = 0; i < r->nunplaced; i++)
    printf("unplaced: %s #%u: %s\n", w->w[r->unplaced[i].workload].name, r->unplaced[i].replica,
           r->unplaced[i].reason);
  printf("summary: %u of %u GPUs used; compute allocated %.1f%% of the used GPUs; MIG: %u of %u free "
         "slices unusable by any requested profile; shared: %.2f GPU of free compute no requested "
         "share fits; changes: %u instances created, %u destroyed, %u replicas moved\n",
         r->gpus_used, f->ngpu, 100 * r->compute_alloc, r->frag_slices, r->free_slices, r->frag_shared,
         r->created, r->destroyed, r->moved);
}

static int export_plan(const char *kind, const char *ns, const struct gs_plan_fleet *f)
{
  struct gs_err err = {0};
  int rc;
  if (strcmp(kind, "mig-parted") == 0)
    rc = gs_plan_export_mig_parted(stdout, f);
  else if (strcmp(kind, "gpuslice") == 0)
    rc = gs_plan_export_gpuslice(stdout, f);
  else if (strcmp(kind, "kubernetes") == 0 || strcmp(kind, "labels") == 0 || strcmp(kind, "device-plugin") == 0)
    return gs_plan_export_k8s(&err, stdout, f, ns ? ns : "gpu-operator",
                              kind[0] == 'k' ? GS_PLAN_K8S_ALL : kind[0] == 'l' ? GS_PLAN_K8S_LABELS
                                                                                : GS_PLAN_K8S_DEVICE_PLUGIN)
               ? plan_fail(&err)
               : GS_EXIT_OK;
  else
    rc = gs_plan_export_gres(stdout, f);
  return rc ? GS_EXIT_STATE : GS_EXIT_OK;
}

/* ---- the verbs ---- */

static int load_fleet(const struct plan_args *a, struct gs_plan_fleet *f)
{
  struct gs_err err = {0};
  char *text = NULL;
  size_t len;
  int rc;
  if (!!a->fleet == !!a->gpus)
    return cli_usage("plan: give the GPUs with --fleet FILE or --gpus MODEL:COUNT[,...] (one of them)");
  if (a->gpus)
    return gs_plan_fleet_from_spec(&err, a->gpus, f) ? plan_fail(&err) : 0;
  if ((rc = read_input(a->fleet, "fleet file", &text, &len)) != 0)
    return rc;
  rc = gs_plan_parse_fleet(&err, a->fleet, text, len, f);
  free(text);
  return rc ? plan_fail(&err) : 0;
}

static int plan_file(struct cli *c, const char *path, const struct plan_args *a)
{
  struct gs_plan_workloads w = {0};
  struct gs_plan_fleet f = {0};
  struct gs_plan_result r = {0};
  struct gs_plan_options o = {.policy = a->policy, .incremental = a->incremental};
  struct gs_err err = {0};
  char *text = NULL;
  size_t len;
  int rc;
  if (a->export_kind && strcmp(a->export_kind, "mig-parted") != 0 && strcmp(a->export_kind, "gpuslice") != 0 &&
      strcmp(a->export_kind, "labels") != 0 && strcmp(a->export_kind, "device-plugin") != 0 &&
      strcmp(a->export_kind, "gres") != 0 && strcmp(a->export_kind, "kubernetes") != 0)
    return cli_usage("--export '%s': expected mig-parted, gpuslice, kubernetes, labels, device-plugin or gres",
                     a->export_kind);
  if ((rc = read_input(path, "workload file", &text, &len)) != 0)
    return rc;
  rc = gs_plan_parse_workloads(&err, path, text, len, &w);
  free(text);
  if (rc)
    return plan_fail(&err);
  if ((rc = load_fleet(a, &f)) != 0)
    goto out;
  if (a->incremental && !f.has_current) {
    rc = cli_usage("--incremental needs the current layouts: give a --fleet file with 'mig:' lists");
    goto out;
  }
  if (gs_plan_run(&err, &w, &f, &o, &r) != 0) {
    rc = plan_fail(&err);
    goto out;
  }
  if (a->export_kind)
    rc = export_plan(a->export_kind, a->ns, &f);
  else if (c->json)
    rc = print_json(&w, &f, &r, a->policy);
  else
    print_text(&w, &f, &r);
  if (!rc && r.nunplaced)
    rc = GS_EXIT_FAILED;
out:
  gs_plan_result_free(&r);
  gs_plan_fleet_free(&f);
  gs_plan_workloads_free(&w);
  return rc;
}

static json_t *curve_json(const double *v, unsigned n)
{
  json_t *a = json_array();
  for (unsigned i = 0; i < n; i++)
    json_array_append_new(a, v[i] < 0 ? json_null() : json_real(v[i]));
  return a;
}

static int print_replay(struct cli *c, const struct gs_plan_replay_options *o, const struct gs_plan_replay_stats *s)
{
  const char *mode = o->mode == GS_PLAN_REPLAY_MIG ? "mig" : "fractional";
  if (c->json)
    return cli_print_json(json_pack(
        "{s:s, s:s, s:i, s:i, s:i, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:o, s:o}", "mode", mode, "policy",
        gs_plan_policy_name(o->policy), "gpus", s->gpus, "seed", o->seed, "runs", s->runs, "tasks_arrived",
        s->tasks_arrived, "tasks_placed", s->tasks_placed, "arrived_pct", s->arrived_pct, "alloc_pct", s->alloc_pct,
        "alloc_at_100_pct", s->alloc_at_100, "gpus_used", s->gpus_used, "frag_pct", s->frag_pct, "alloc_curve",
        curve_json(s->alloc_curve, s->max_pct + 1), "frag_curve", curve_json(s->frag_curve, s->max_pct + 1)));
  printf("%s %s: %u GPUs, mean of %u run%s (seeds %u..%u): %.0f of %.0f tasks placed; arrived %.1f%% of capacity; "
         "allocated %.2f%% (%.2f%% at 100%% arrived); %.0f GPUs used; fragmentation %.2f%%\n",
         mode, gs_plan_policy_name(o->policy), s->gpus, s->runs, s->runs == 1 ? "" : "s", o->seed,
         o->seed + s->runs - 1, s->tasks_placed, s->tasks_arrived, s->arrived_pct, s->alloc_pct, s->alloc_at_100,
         s->gpus_used, s->frag_pct);
  printf("allocated %% at arrived %%:");
  for (unsigned i = 50; i <= s->max_pct; i += 10)
    printf(" %u:%.2f", i, s->alloc_curve[i]);
  printf("\n");
  return 0;
}

static int plan_replay(struct cli *c, const struct plan_args *a)
{
  struct gs_plan_replay_stats *s = malloc(sizeof(*s));
  struct gs_plan_replay_options o = {.mode = GS_PLAN_REPLAY_FRACTIONAL, .policy = a->policy,
                                     .inflate = a->inflate ? a->inflate : 1.3,
                                     .seed = a->seed_given ? a->seed : 1,
                                     .runs = a->seeds ? a->seeds : a->seed_given ? 1 : 10};
  struct gs_err err = {0};
  char *nodes = NULL, *pods = NULL;
  size_t len;
  int rc;
  if (!s)
    return GS_EXIT_STATE;
  if (!a->nodes || !a->pods) {
    rc = cli_usage("plan replay: give --nodes NODES.csv and --pods PODS.csv (Alibaba openb format)");
    goto out;
  }
  if (a->mode && strcmp(a->mode, "mig") == 0)
    o.mode = GS_PLAN_REPLAY_MIG;
  else if (a->mode && strcmp(a->mode, "fractional") != 0) {
    rc = cli_usage("--mode '%s': expected fractional or mig", a->mode);
    goto out;
  }
  if ((rc = read_input(a->nodes, "nodes CSV", &nodes, &len)) != 0 ||
      (rc = read_input(a->pods, "pods CSV", &pods, &len)) != 0)
    goto out;
  if (gs_plan_replay(&err, nodes, pods, &o, s) != 0)
    rc = plan_fail(&err);
  else
    rc = print_replay(c, &o, s);
out:
  free(s);
  free(nodes);
  free(pods);
  return rc;
}

struct shape {
  unsigned mib, milli;
  bool soft;
};

/* "small": mostly small inference shapes, about 0.19 of a GPU on average, so
 * five per GPU fill a fleet without overflowing it. "varied": every MIG size
 * from 1g to a whole GPU, a third of them soft, about 0.37 of a GPU. */
static const struct shape small_mix[] = {
    {4000, 140, false}, {4500, 140, false}, {4000, 100, false}, {9000, 140, false},
    {4800, 140, false}, {2000, 100, true},  {3000, 100, true},  {6000, 150, true},
    {9000, 280, false}, {9500, 250, false}, {18000, 420, false}, {8000, 200, true}};
static const struct shape varied_mix[] = {
    {4600, 140, false}, {9200, 140, false}, {9200, 280, false}, {18400, 420, false},
    {19000, 570, false}, {38000, 1000, false}, {4000, 100, true}, {12000, 300, true},
    {30000, 600, true}};

/* Workload i of a deterministic draw from a mix (a 32-bit mixing hash of i and seed). */
static void synthetic_workload(unsigned i, unsigned seed, bool varied, struct gs_plan_workload *w)
{
  const struct shape *mix = varied ? varied_mix : small_mix;
  unsigned n = varied ? GS_NITEMS(varied_mix) : GS_NITEMS(small_mix);
  uint32_t h = i * 2654435761u ^ (seed + 1) * 2246822519u;
  h ^= h >> 15;
  h *= 2246822519u;
  h ^= h >> 13;
  memset(w, 0, sizeof(*w));
  snprintf(w->name, sizeof(w->name), "w%u", i);
  w->replicas = 1;
  w->memory_mib = mix[h % n].mib;
  w->compute_milli = mix[h % n].milli;
  w->isolation = mix[h % n].soft ? GS_PLAN_SOFT : GS_PLAN_HARD;
}

static int plan_synthetic(struct cli *c, const struct plan_args *a)
{
  struct gs_plan_workloads w = {0};
  struct gs_plan_fleet f = {0};
  struct gs_plan_result r = {0};
  struct gs_plan_options o = {.policy = a->policy};
  struct gs_err err = {0};
  struct timespec t0, t1;
  double secs;
  int rc = 0;
  if (a->mix && strcmp(a->mix, "small") != 0 && strcmp(a->mix, "varied") != 0)
    return cli_usage("--mix '%s': expected small or varied", a->mix);
  if (!a->ngpus || !a->nworkloads)
    return cli_usage("plan synthetic: give --gpus N and --workloads M (e.g. --gpus 10000 --workloads 50000)");
  if (!(w.w = calloc(a->nworkloads, sizeof(*w.w))))
    return GS_EXIT_STATE;
  w.n = w.cap = a->nworkloads;
  for (unsigned i = 0; i < w.n; i++)
    synthetic_workload(i, a->seed, a->mix && strcmp(a->mix, "varied") == 0, &w.w[i]);
  if (gs_plan_fleet_add(&err, &f, "node-0", gs_geom_model_find("a100-40gb"), (a->ngpus + 1) / 2) != 0 ||
      gs_plan_fleet_add(&err, &f, "node-1", gs_geom_model_find("h100-80gb"), a->ngpus / 2) != 0) {
    rc = plan_fail(&err);
    goto out;
  }
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
  if (gs_plan_run(&err, &w, &f, &o, &r) != 0) {
    rc = plan_fail(&err);
    goto out;
  }
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
  secs = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
  if (c->json)
    rc = cli_print_json(json_pack("{s:s, s:i, s:i, s:f, s:i, s:o}", "policy", gs_plan_policy_name(a->policy),
                                  "gpus", f.ngpu, "workloads", w.n, "cpu_seconds", secs, "unplaced",
                                  r.nunplaced, "summary", summary_json(&f, &r)));
  else
    printf("synthetic %s: %u GPUs, %u workloads planned in %.3f s of CPU; %u GPUs used, %u unplaced\n",
           gs_plan_policy_name(a->policy), f.ngpu, w.n, secs, r.gpus_used, r.nunplaced);
out:
  gs_plan_result_free(&r);
  gs_plan_fleet_free(&f);
  gs_plan_workloads_free(&w);
  return rc;
}

static int run_plan(struct cli *c, int argc, char **argv)
{
  struct plan_args a = {.policy = GS_PLAN_OURS};
  int first = cli_getopt(c, argc, argv, on_plan_opt, &a);
  if (first <= 0)
    return -first;
  if (first + 1 != argc)
    return cli_usage("plan: name one workload file, or `replay` or `synthetic`; usage: %s",
                     cli_synopsis(c));
  if (strcmp(argv[first], "replay") == 0)
    return plan_replay(c, &a);
  if (strcmp(argv[first], "synthetic") == 0) {
    if (a.gpus && parse_count(a.gpus, "--gpus", 20000, &a.ngpus) != 0)
      return GS_EXIT_USAGE;
    return plan_synthetic(c, &a);
  }
  return plan_file(c, argv[first], &a);
}

const struct cli_verb cli_verbs_plan[] = {
    {NULL, "plan", run_plan, "pack workloads onto GPUs: MIG, MPS, time-slicing; exports", false,
     &plan_spec, false},
    {0},
};
