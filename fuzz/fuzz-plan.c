/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz-plan.c: libFuzzer target for the planner's YAML inputs: any bytes go
 * through the workload parser and the fleet parser; when workloads parse,
 * they are planned on a small mixed fleet. Nothing may crash, leak or hang; refusals
 * must be INVALID_ARGUMENT (or NO_MEMORY) with a message naming the file. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"

static void check_refusal(int rc, const struct gs_err *err)
{
  if (rc != GS_E_INVALID_ARGUMENT && rc != GS_E_NO_MEMORY)
    abort();
  if (rc == GS_E_INVALID_ARGUMENT && !strstr(err->msg, "fuzz.yaml") && !strstr(err->msg, "workload") &&
      !strstr(err->msg, "node"))
    abort();
}

/* Plans w on f unless the demand is too large to finish quickly. */
static void plan_on(const struct gs_plan_workloads *w, struct gs_plan_fleet *f)
{
  struct gs_plan_options o = {.policy = GS_PLAN_OURS};
  struct gs_plan_result r;
  struct gs_err err = {0};
  unsigned replicas = 0;
  int rc;
  for (unsigned i = 0; i < w->n; i++)
    replicas += w->w[i].replicas;
  if (replicas > 256 || f->ngpu > 64)
    return;
  rc = gs_plan_run(&err, w, f, &o, &r);
  if (rc)
    check_refusal(rc, &err);
  else
    gs_plan_result_free(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  struct gs_plan_workloads w;
  struct gs_plan_fleet f;
  struct gs_err err = {0};
  int rc = gs_plan_parse_fleet(&err, "fuzz.yaml", (const char *)data, size, &f);
  if (rc)
    check_refusal(rc, &err);
  else
    gs_plan_fleet_free(&f);
  rc = gs_plan_parse_workloads(&err, "fuzz.yaml", (const char *)data, size, &w);
  if (rc) {
    check_refusal(rc, &err);
    return 0;
  }
  if (gs_plan_fleet_from_spec(&err, "a100-40gb:2,h100-80gb,a30-24gb", &f) != 0)
    abort();
  plan_on(&w, &f);
  gs_plan_fleet_free(&f);
  gs_plan_workloads_free(&w);
  return 0;
}
