/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz-state.c: libFuzzer target for the emulator state file parser. Any
 * bytes must either be refused as GS_E_CORRUPT_STATE (with a message naming
 * the origin) or parse into a state that dumps and re-parses to the same
 * state, field by field. Anything else aborts, which libFuzzer reports. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/emu_state.h"
#include "../tests/backend/emu-state-eq.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void die(const char *what, const char *detail)
{
  fprintf(stderr, "fuzz-state: %s: %s\n", what, detail);
  abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static struct gs__emu_state st, back; /* ~100 KB each: kept off the stack */
  struct gs_err err = {0};
  char *text, why[128] = "";

  if (gs__emu_state_parse(&err, "fuzz", (const char *)data, size, &st) != 0) {
    if (err.code != GS_E_CORRUPT_STATE || strncmp(err.msg, "fuzz: ", 6) != 0)
      die("refusal is not a CORRUPT_STATE naming the origin", err.msg);
    return 0;
  }
  if (gs__emu_state_dump(&err, &st, &text) != 0)
    die("a parsed state does not dump", err.msg);
  if (gs__emu_state_parse(&err, "fuzz-dump", text, strlen(text), &back) != 0)
    die("a dumped state does not parse", err.msg);
  if (!gs_test_emu_state_eq(&st, &back, why, sizeof(why)))
    die("dump and parse changed the state", why);
  free(text);
  return 0;
}
