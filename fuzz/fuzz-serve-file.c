/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz-serve-file.c: libFuzzer target for `gpuslice serve -f` files: any
 * bytes go through the serve config parser. Nothing may crash, leak or hang;
 * a refusal must be INVALID_ARGUMENT (or NO_MEMORY) naming the file, and an
 * accepted file must hold what its reader relies on (NUL-terminated lists,
 * env entries with their '='). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "serve/serve.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  struct gs_serve_file *f = NULL;
  struct gs_err err = {0};
  int rc = gs_serve_file_parse(&err, "fuzz.yaml", (const char *)data, size, &f);
  if (rc) {
    if ((rc != GS_E_INVALID_ARGUMENT && rc != GS_E_NO_MEMORY) || f ||
        (rc == GS_E_INVALID_ARGUMENT && !strstr(err.msg, "fuzz.yaml")))
      abort();
    return 0;
  }
  for (size_t i = 0; i < f->nopts; i++)
    if (!f->opts[i].key || !f->opts[i].value || !f->opts[i].value[0] || !f->opts[i].line)
      abort();
  for (size_t i = 0; f->command && f->command[i]; i++)
    (void)strlen(f->command[i]);
  for (size_t i = 0; f->env && f->env[i]; i++)
    if (!strchr(f->env[i], '='))
      abort();
  gs_serve_file_free(f);
  return 0;
}
