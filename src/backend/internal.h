/* SPDX-License-Identifier: Apache-2.0 */
/* internal.h: what the files of backend/ share and nothing outside may use:
 * the constructors backend.c chooses between. */
#ifndef GS_BACKEND_INTERNAL_H
#define GS_BACKEND_INTERNAL_H

#include "backend/backend.h"

/* Emulated GPUs (emu.c). */
int gs__emu_open(struct gs_err *err, const struct gs_backend_config *cfg, struct gs_backend **out);
/* Real GPUs through NVML (nvml.c): fails with GS_E_LIBRARY_NOT_FOUND when the
 * library cannot be loaded, GS_E_DRIVER_NOT_LOADED when nvmlInit fails, and
 * GS_E_NOT_FOUND when it reports no GPU, each with a message saying so. */
int gs__nvml_open(struct gs_err *err, const struct gs_backend_config *cfg, struct gs_backend **out);

#endif
