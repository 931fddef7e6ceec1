/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz-plan-replay.c: libFuzzer target for the trace replay's CSV inputs:
 * the bytes before the first "%%\n" are a nodes CSV, the rest a pods CSV;
 * they are replayed once in each mode under FGD's policy and ours. Nothing
 * may crash, leak or hang; refusals must be INVALID_ARGUMENT (or NO_MEMORY)
 * with a message naming the CSV or the option. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"

static void check_refusal(int rc, const struct gs_err *err)
{
  if (rc != GS_E_INVALID_ARGUMENT && rc != GS_E_NO_MEMORY && rc != GS_E_NOT_FOUND)
    abort();
  if (rc == GS_E_INVALID_ARGUMENT && !strstr(err->msg, "nodes CSV") && !strstr(err->msg, "pods CSV"))
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static const enum gs_plan_policy pols[] = {GS_PLAN_FGD, GS_PLAN_OURS};
  struct gs_plan_replay_stats *s;
  char *text, *cut;
  unsigned lines = 0;
  if (size > 4096 || !(text = malloc(size + 1)))
    return 0;
  memcpy(text, data, size);
  text[size] = 0;
  if (!(cut = strstr(text, "%%\n"))) {
    free(text);
    return 0;
  }
  *cut = 0;
  /* A few nodes keep a run bounded: arrivals x nodes stays small. */
  for (const char *p = text; *p; p++)
    lines += *p == '\n';
  if (lines > 8 || strlen(text) != (size_t)(cut - text) || !(s = malloc(sizeof(*s)))) {
    free(text);
    return 0;
  }
  for (unsigned mode = 0; mode < 2; mode++)
    for (unsigned i = 0; i < 2; i++) {
      struct gs_plan_replay_options o = {.mode = mode, .policy = pols[i], .inflate = 1.3, .seed = 1, .runs = 1};
      struct gs_err err = {0};
      int rc = gs_plan_replay(&err, text, cut + 3, &o, s);
      if (rc)
        check_refusal(rc, &err);
      else if (s->alloc_pct > 100.0001 || s->tasks_placed > s->tasks_arrived)
        abort();
    }
  free(s);
  free(text);
  return 0;
}
