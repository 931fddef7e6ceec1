/* SPDX-License-Identifier: Apache-2.0 */
/* backend.c: chooses and opens a backend: NVML when asked for, or by default
 * when the library loads and sees a GPU; the emulator otherwise. */
#include "backend/internal.h"

#include <stdio.h>
#include <string.h>

/* The default: real GPUs when there are any, and no silent surprise when
 * there are not (the reason is kept for the caller to announce). */
static int open_default(struct gs_err *err, const struct gs_backend_config *cfg,
                        struct gs_backend **out)
{
  struct gs_err why = {0};
  size_t end;
  int rc;
  if (gs__nvml_open(&why, cfg, out) == 0)
    return 0;
  if ((rc = gs__emu_open(err, cfg, out)) != 0)
    return rc;
  /* The gist only ("cannot load libnvidia-ml.so.1"): it is announced in one line. */
  end = strcspn(why.msg, ";(");
  while (end > 0 && why.msg[end - 1] == ' ')
    end--;
  why.msg[end] = 0;
  snprintf((*out)->why_emulated, sizeof((*out)->why_emulated), "%s", why.msg);
  return 0;
}

int gs_backend_open(struct gs_err *err, const struct gs_backend_config *cfg, struct gs_backend **out)
{
  static const struct gs_backend_config defaults = {0};
  if (!cfg)
    cfg = &defaults;
  *out = NULL;
  if (!cfg->kind)
    return open_default(err, cfg, out);
  if (strcmp(cfg->kind, "emu") == 0)
    return gs__emu_open(err, cfg, out);
  if (strcmp(cfg->kind, "nvml") == 0)
    return gs__nvml_open(err, cfg, out);
  return gs_err_set(err, GS_E_INVALID_ARGUMENT, "--backend '%s': unknown backend; use nvml or emu",
                    cfg->kind);
}

void gs_backend_close(struct gs_backend *b)
{
  if (b)
    b->ops->close(b);
}

int gs_backend_versions(struct gs_backend *b, struct gs_err *err, char *driver, char *nvml,
                        size_t size)
{
  if (!b->ops->versions)
    return gs_err_set(err, GS_E_NOT_SUPPORTED, "the %s backend has no driver to ask for a version",
                      b->ops->name);
  return b->ops->versions(b, err, driver, nvml, size);
}

bool gs_backend_emulated(struct gs_backend *b)
{
  return b && gs_emu_state_path(b) != NULL;
}

const char *gs_backend_state_base(struct gs_backend *b)
{
  return b ? gs_emu_state_path(b) : NULL;
}
