/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz-hostport.c: libFuzzer target for the one HOST:PORT reader
 * (src/util/hostport.c) under every combination of its flags. Nothing may
 * crash or read past the text; an accepted value must keep the promises of
 * util.h (port in range, 0 only where allowed, a host where one is
 * required, a host of the allowed characters); a refusal must be USAGE and
 * name the option. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

static void check(const char *text, unsigned flags)
{
  struct gs_hostport hp;
  struct gs_err err = {0};
  int rc = gs_hostport_parse(&err, "--opt", text, flags, &hp);
  if (rc) {
    if (rc != GS_E_USAGE || strncmp(err.msg, "--opt '", 7) != 0)
      abort();
    return;
  }
  if (hp.port > 65535 || (hp.has_port && !hp.port && !(flags & GS_HOSTPORT_PORT_ZERO)) ||
      (!hp.has_port && !(flags & GS_HOSTPORT_PORT_OPTIONAL)) ||
      (!hp.host[0] && (flags & GS_HOSTPORT_HOST_REQUIRED)) ||
      strspn(hp.host, "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-_:%*") !=
          strlen(hp.host))
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char *text = malloc(size + 1);
  if (!text)
    return 0;
  memcpy(text, data, size);
  text[size] = 0;
  for (unsigned flags = 0; flags < 8; flags++)
    check(text, flags);
  free(text);
  return 0;
}
