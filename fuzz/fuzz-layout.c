/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz-layout.c: libFuzzer target for layout config and hooks files: any
 * bytes go through both YAML parsers and, when a config parses, every config
 * is resolved for a mixed machine. Nothing may crash, leak or hang; refusals
 * must be INVALID_ARGUMENT (or NO_MEMORY) with a message naming the file. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layout/layout.h"

static unsigned machine(struct gs_gpu_info *gpus)
{
  const struct gs_geom_model *models[4];
  int n = gs_emu_parse_spec(NULL, "a100-40gb:2,h100-80gb,a30-24gb", models, 4);
  for (int i = 0; i < n; i++) {
    memset(&gpus[i], 0, sizeof(gpus[i]));
    gpus[i].index = (unsigned)i;
    gpus[i].model = models[i];
    snprintf(gpus[i].uuid, sizeof(gpus[i].uuid), "GPU-%d", i);
  }
  return (unsigned)n;
}

static void check_refusal(int rc, const struct gs_err *err)
{
  if (rc != GS_E_INVALID_ARGUMENT && rc != GS_E_NO_MEMORY && rc != GS_E_NOT_FOUND)
    abort();
  if (rc == GS_E_INVALID_ARGUMENT && !strstr(err->msg, "fuzz.yaml"))
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static struct gs_layout_hooks hooks;
  struct gs_gpu_info gpus[4];
  struct gs_layout_file *f = NULL;
  struct gs_err err = {0};
  unsigned n = machine(gpus);
  int rc = gs_layout_hooks_parse(&err, "fuzz.yaml", (const char *)data, size, &hooks);
  if (rc)
    check_refusal(rc, &err);
  rc = gs_layout_parse(&err, "fuzz.yaml", (const char *)data, size, &f);
  if (rc) {
    check_refusal(rc, &err);
    return 0;
  }
  for (unsigned i = 0; i < f->nconfig; i++) {
    struct gs_layout_selection sel;
    rc = gs_layout_resolve(&err, f, &f->config[i], gpus, n, &sel);
    if (rc)
      check_refusal(rc, &err);
    else
      gs_layout_selection_free(&sel);
  }
  gs_layout_file_free(f);
  return 0;
}
