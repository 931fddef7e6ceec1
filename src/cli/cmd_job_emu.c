/* SPDX-License-Identifier: Apache-2.0 */
/* cmd_job_emu.c: `gpuslice job-emu`: an EMULATED training job for emulated
 * GPUs. It reads the slice it was given from the environment `gpuslice run`
 * and the queue set (GPUSLICE_JOB_*), "trains" for --steps steps at the speed
 * published measurements give for that slice, scaled by --time-scale, and
 * reports the emulated time. Parsing and printing only. */
#include "cli/cli.h"
#include "jobs/jobs.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { O_MODEL = 500, O_STEPS, O_SCALE, O_PROFILE, O_MODE, O_MEMORY, O_MODELS, O_TOGETHER };

struct emu_opts {
  const char *model, *profile, *mode, *memory;
  unsigned steps, together;
  double scale;
  bool list;
};

static int on_emu_opt(struct cli *c, int ch, const char *value, void *arg)
{
  struct emu_opts *o = arg;
  char *end;
  (void)c;
  switch (ch) {
  case O_MODEL: o->model = value; return 0;
  case O_PROFILE: o->profile = value; return 0;
  case O_MODE: o->mode = value; return 0;
  case O_MEMORY: o->memory = value; return 0;
  case O_MODELS: o->list = true; return 0;
  case O_STEPS: {
    unsigned long n = strtoul(value, &end, 10);
    if (!*value || *end || n < 1 || n > 10000000)
      return cli_usage("--steps %s: expected 1 to 10000000", value);
    o->steps = (unsigned)n;
    return 0;
  }
  case O_TOGETHER: {
    unsigned long n = strtoul(value, &end, 10);
    if (!*value || *end || n < 1 || n > 1000)
      return cli_usage("--start-together %s: expected a number of jobs, 1 to 1000", value);
    o->together = (unsigned)n;
    return 0;
  }
  case O_SCALE:
    o->scale = strtod(value, &end);
    if (!*value || *end || !(o->scale >= 1e-3 && o->scale <= 1e9))
      return cli_usage("--time-scale %s: expected emulated seconds per wall second, 0.001 to 1e9",
                       value);
    return 0;
  default: return cli_usage("unexpected option");
  }
}

static const struct cli_opt emu_opts[] = {
    {"model", 0, "bert-ft|resnet50|mobilenetv2", O_MODEL, "bert-ft", "the training job emulated",
     CLI_VALUE_CHOICE, NULL},
    {"steps", 0, "N", O_STEPS, "the model's own", "training steps", CLI_VALUE_TEXT, NULL},
    {"time-scale", 0, "X", O_SCALE, "1", "emulated seconds per wall second", CLI_VALUE_TEXT, NULL},
    {"profile", 0, "PROFILE", O_PROFILE, "$GPUSLICE_JOB_PROFILE", "the slice it runs on",
     CLI_VALUE_PROFILE, NULL},
    {"mode", 0, "mig|timeslice|mps", O_MODE, "$GPUSLICE_JOB_MODE", "how it shares the GPU",
     CLI_VALUE_CHOICE, NULL},
    {"memory", 0, "SIZE", O_MEMORY, "none", "fail as out of memory when the slice has less",
     CLI_VALUE_TEXT, NULL},
    {"start-together", 0, "N", O_TOGETHER, "1", "wait until N such jobs are running, then start",
     CLI_VALUE_TEXT, NULL},
    {"models", 0, NULL, O_MODELS, NULL, "list the models and their sources instead",
     CLI_VALUE_TEXT, NULL},
    CLI_OPT_JSON("print the result as JSON"),
    {0},
};

static const struct cli_spec emu_spec = {
    .opts = emu_opts,
    .about = "EMULATED: nothing runs on a GPU. \"Trains\" for --steps steps at the speed published\n"
             "measurements give for its slice (from GPUSLICE_JOB_*, set by `gpuslice run` and the\n"
             "queue), scaled by --time-scale, and reports the emulated time.",
    .examples = "gpuslice run --profile 1g.5gb -- gpuslice job-emu --model resnet50 --time-scale 100\n"
                "gpuslice job-emu --models",
};

static int list_models(struct cli *c)
{
  unsigned n;
  const struct gs_jobs_emu_model *m = gs_jobs_emu_models(&n);
  json_t *arr = json_array();
  for (unsigned i = 0; i < n; i++) {
    if (c->json)
      json_array_append_new(arr, json_pack("{s:s, s:s, s:f, s:i, s:s, s:s, s:s, s:s}", "name", m[i].name,
          "what", m[i].what, "full_gpu_step_s", m[i].full_step_s, "default_steps",
          (int)m[i].default_steps, "source_full", m[i].source_full, "source_mig", m[i].source_mig, "source_timeslice",
          m[i].source_timeslice, "source_mps", m[i].source_mps));
    else
      printf("%-12s %s\n  whole GPU: %s\n  MIG: %s\n  time-sliced: %s\n  MPS: %s\n", m[i].name,
             m[i].what, m[i].source_full, m[i].source_mig, m[i].source_timeslice, m[i].source_mps);
  }
  if (c->json)
    return cli_print_json(arr);
  json_decref(arr);
  return GS_EXIT_OK;
}

/* Compute slices of the slice: its GI profile on the job's GPU, or the "Nc."
 * of a compute-instance name ("1c.3g.20gb"). */
static int slices_of(struct cli *c, const char *profile, unsigned gpu, unsigned *slices,
                     unsigned *total)
{
  struct gs_backend *b;
  struct gs_gpu_info info;
  struct gs_err err = {0};
  const struct gs_geom_gi_profile *p;
  int rc;
  if ((rc = cli_backend(c, &b)) != 0)
    return rc;
  if (b->ops->gpu_info(b, &err, gpu, &info) != 0)
    return cli_fail(&err);
  if (!info.model)
    return cli_usage("GPU %u: its model is unknown to gpuslice", gpu);
  *total = info.model->compute_slices;
  if ((p = gs_geom_gi_profile_find(info.model, profile)) != NULL)
    *slices = p->compute_slices;
  else if (profile[0] >= '1' && profile[0] <= '9' && profile[1] == 'c' && profile[2] == '.')
    *slices = (unsigned)(profile[0] - '0');
  else
    return cli_usage("--profile %s: not a MIG profile of GPU %u (%s); see `gpuslice gi profiles`",
                     profile, gpu, info.model->key);
  return 0;
}

static void on_step(void *arg, unsigned step, double emulated_s)
{
  const struct gs_jobs_emu_opts *o = arg;
  if (step % (o->steps >= 10 ? o->steps / 10 : 1) == 0)
    printf("job-emu: step %u/%u, %.0f emulated s\n", step, o->steps, emulated_s), fflush(stdout);
}

static int getenv_uint(const char *name, unsigned long long *out)
{
  const char *v = getenv(name);
  char *end;
  if (!v || !*v)
    return -1;
  *out = strtoull(v, &end, 10);
  return *end ? -1 : 0;
}

/* The slice job-emu runs on: --mode/--profile, else what its runner set in
 * GPUSLICE_JOB_*, else alone on a whole GPU. Fills o's mode, slices and
 * uuid, and *profile; returns 0 or an exit status. */
static int job_slice(struct cli *c, const struct emu_opts *eo, struct gs_jobs_emu_opts *o,
                     const char **profile)
{
  const char *mode = eo->mode ? eo->mode : getenv("GPUSLICE_JOB_MODE");
  unsigned long long v;
  unsigned gpu = 0;
  *profile = eo->profile ? eo->profile : getenv("GPUSLICE_JOB_PROFILE");
  if (*profile && (!**profile || strcmp(*profile, "gpu") == 0))
    *profile = NULL; /* a whole-GPU share */
  if (eo->profile && !eo->mode)
    mode = "mig";
  if (!mode || !*mode)
    mode = *profile ? "mig" : "timeslice"; /* timeslice alone: the whole GPU */
  if (gs_jobs_mode_parse(mode, &o->mode) != 0)
    return cli_usage("--mode %s: expected mig, timeslice or mps", mode);
  if (o->mode == GS_JOBS_MIG && !*profile)
    return cli_usage("--mode mig needs the slice's profile (--profile, or run under `gpuslice run`)");
  if (getenv_uint("GPUSLICE_JOB_GPU", &v) == 0 && v < GS_BACKEND_MAX_GPUS)
    gpu = (unsigned)v;
  o->uuid = getenv("GPUSLICE_JOB_UUID");
  if (o->mode != GS_JOBS_TIMESLICE && *profile)
    return slices_of(c, *profile, gpu, &o->slices, &o->total);
  return 0;
}

static int print_result(struct cli *c, const struct gs_jobs_emu_opts *o, const char *profile,
                        const struct gs_jobs_emu_result *r)
{
  const char *source = gs_jobs_emu_source(o->model, o->mode, o->slices != 0, r->max_sharers);
  if (c->json)
    return cli_print_json(json_pack("{s:b, s:s, s:s, s:s, s:i, s:f, s:f, s:i, s:s}", "emulated", 1,
        "model", o->model->name, "mode", gs_jobs_mode_name(o->mode), "profile",
        o->slices ? profile : "gpu", "steps", (int)r->steps, "emulated_seconds", r->emulated_s,
        "wall_seconds", r->wall_s, "max_sharers", (int)r->max_sharers, "source", source));
  printf("job-emu: done, %u steps in %.0f emulated s (%.1f s wall; EMULATED, source: %s)\n",
         r->steps, r->emulated_s, r->wall_s, source);
  return GS_EXIT_OK;
}

static int run_job_emu(struct cli *c, int argc, char **argv)
{
  struct emu_opts eo = {.model = "bert-ft", .scale = 1.0};
  struct gs_jobs_emu_opts o = {0};
  struct gs_jobs_emu_result r;
  struct gs_err err = {0};
  unsigned long long have;
  const char *profile;
  int first, rc;
  if ((first = cli_getopt(c, argc, argv, on_emu_opt, &eo)) <= 0)
    return -first;
  if (first < argc)
    return cli_usage("unexpected argument '%s'; usage: %s", argv[first], cli_synopsis(c));
  if (eo.list)
    return list_models(c);
  if (!(o.model = gs_jobs_emu_model_find(eo.model)))
    return cli_usage("--model %s: unknown; `gpuslice job-emu --models` lists them", eo.model);
  if ((rc = job_slice(c, &eo, &o, &profile)) != 0)
    return rc;
  if (eo.memory && gs_jobs_parse_size(&err, "--memory", eo.memory, &o.need_mib) != 0)
    return cli_fail(&err);
  if (getenv_uint("GPUSLICE_JOB_MEMORY_MIB", &have) == 0)
    o.have_mib = have;
  o.dir = getenv("GPUSLICE_JOBS_DIR");
  o.steps = eo.steps ? eo.steps : o.model->default_steps;
  o.time_scale = eo.scale;
  o.start_together = eo.together;
  o.on_step = c->json ? NULL : on_step;
  o.arg = &o;
  fprintf(stderr, "job-emu: EMULATED %s, %u steps, %s%s%s, time scale %g (nothing runs on a GPU)\n",
          o.model->name, o.steps, gs_jobs_mode_name(o.mode), o.slices ? " on " : "",
          o.slices ? profile : "", o.time_scale);
  if (gs_jobs_emu_run(&err, &o, &r) != 0) {
    fprintf(stderr, "job-emu: %s\n", err.msg);
    return err.code == GS_E_NO_MEMORY ? GS_EXIT_FAILED : cli_exit_of(err.code);
  }
  return print_result(c, &o, profile, &r);
}

/* A long-running stand-in: kept away from the argument fuzzer. */
const struct cli_verb cli_verbs_job_emu[] = {
    {NULL, "job-emu", run_job_emu, "an EMULATED training job (speeds from published figures)", true,
     &emu_spec, false},
    {0},
};
