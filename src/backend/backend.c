/* backend.c: chooses and opens a backend. Only the emulator exists in this
 * build; the NVML backend (real GPUs) plugs in here next. */
#include "backend/emu_state.h"

#include <string.h>

int gs_backend_open(struct gs_err *err, const struct gs_backend_config *cfg, struct gs_backend **out)
{
  static const struct gs_backend_config defaults = {0};
  if (!cfg)
    cfg = &defaults;
  *out = NULL;
  if (!cfg->kind || strcmp(cfg->kind, "emu") == 0)
    return gs__emu_open(err, cfg, out);
  if (strcmp(cfg->kind, "nvml") == 0)
    return gs_err_set(err, GS_E_NOT_SUPPORTED,
                      "--backend nvml: this build has no NVML backend yet; use --backend emu");
  return gs_err_set(err, GS_E_INVALID_ARGUMENT, "--backend '%s': unknown backend; use emu",
                    cfg->kind);
}

void gs_backend_close(struct gs_backend *b)
{
  if (b)
    b->ops->close(b);
}
