/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz-slurm-gres.c: libFuzzer target for gres.conf as `gpuslice slurm
 * prolog|task-prolog` read it (plan/slurm.c, gs_plan_slurm_parse): any bytes,
 * read for a named node and for none. Nothing may crash, leak or hang; a
 * refusal is INVALID_ARGUMENT (or NO_MEMORY) naming the file; what is read
 * is a coherent record list. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plan/slurm.h"

static void check(int rc, const struct gs_err *err, const struct gs_plan_slurm_rec *r, unsigned n)
{
  if (rc != 0) {
    if ((rc != GS_E_INVALID_ARGUMENT && rc != GS_E_NO_MEMORY) || r || n)
      abort();
    if (rc == GS_E_INVALID_ARGUMENT && strncmp(err->msg, "fuzz.conf", 9) != 0)
      abort();
    return;
  }
  for (unsigned i = 0; i < n; i++) {
    if (!r[i].type[0] || r[i].line == 0 || (r[i].mig && (r[i].gi > 14 || r[i].ci > 7)))
      abort();
    for (unsigned j = 0; j < i; j++) /* one record per device */
      if (r[j].minor == r[i].minor && r[j].mig == r[i].mig &&
          (!r[i].mig || (r[j].gi == r[i].gi && r[j].ci == r[i].ci)))
        abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static const char *const nodes[] = {"node1", NULL};
  for (unsigned k = 0; k < 2; k++) {
    struct gs_plan_slurm_rec *r = NULL;
    struct gs_err err = {0};
    unsigned n = 0;
    bool autodetect = false;
    int rc = gs_plan_slurm_parse(&err, "fuzz.conf", (const char *)data, size, nodes[k], &r, &n,
                                 &autodetect);
    check(rc, &err, r, n);
    free(r);
  }
  return 0;
}
