/* SPDX-License-Identifier: Apache-2.0 */
/* gs-nvml-emu.h: loads nvml-emu (libnvidia-ml.so.1 over the emulator) the way
 * an NVML client does: dlopen of $GS_NVML_EMU (set by ctest), every entry
 * point nvml-emu implements resolved by name into a typed pointer, plus a
 * fresh emulated machine per test (GPUSLICE_EMU_STATE, GPUSLICE_EMULATE).
 * Header-only so each test stays one executable. */
#ifndef GS_NVML_EMU_TEST_H
#define GS_NVML_EMU_TEST_H

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "backend/backend.h"
#include "backend/nvml_abi.h"
#include "gs-test-tmp.h"

/* Every implemented entry point, as a typed pointer. */
struct gs_nvml_api {
  void *lib;
#define GS__NVML_API_FIELD(name, params) __typeof__(name) *name;
  GS_NVML_FUNCTIONS(GS__NVML_API_FIELD)
  GS_NVML_LEGACY_FUNCTIONS(GS__NVML_API_FIELD)
  GS_NVML_EMULATED_FUNCTIONS(GS__NVML_API_FIELD)
#undef GS__NVML_API_FIELD
  __typeof__(nvmlErrorString) *nvmlErrorString;
};

/* The library's path: $GS_NVML_EMU, else what the dynamic linker finds. */
static inline const char *gs_nvml_emu_path(void)
{
  const char *p = getenv("GS_NVML_EMU");
  return p && *p ? p : "libnvidia-ml.so.1";
}

/* 0, or -1 with a message on stderr naming what is missing. */
static inline int gs_nvml_api_load(struct gs_nvml_api *api)
{
  int missing = 0;
  api->lib = dlopen(gs_nvml_emu_path(), RTLD_NOW | RTLD_LOCAL);
  if (!api->lib) {
    fprintf(stderr, "cannot load %s: %s\n", gs_nvml_emu_path(), dlerror());
    return -1;
  }
#define GS__NVML_API_RESOLVE(name, params)                                                         \
  if (!(api->name = (__typeof__(api->name))dlsym(api->lib, #name))) {                              \
    fprintf(stderr, "%s does not export %s\n", gs_nvml_emu_path(), #name);                         \
    missing++;                                                                                     \
  }
  GS_NVML_FUNCTIONS(GS__NVML_API_RESOLVE)
  GS_NVML_LEGACY_FUNCTIONS(GS__NVML_API_RESOLVE)
  GS_NVML_EMULATED_FUNCTIONS(GS__NVML_API_RESOLVE)
#undef GS__NVML_API_RESOLVE
  if (!(api->nvmlErrorString =
            (__typeof__(api->nvmlErrorString))dlsym(api->lib, "nvmlErrorString")))
    missing++;
  return missing ? -1 : 0;
}

/* One emulated machine in a scratch directory. */
struct gs_nvml_machine {
  char dir[GS_TEST_DIR];
  char state[GS_TEST_PATH];
};

/* Points the library (at its next first nvmlInit) at a fresh machine. */
static inline int gs_nvml_machine_new(struct gs_nvml_machine *m, const char *tag, const char *spec)
{
  if (gs_test_mkdtemp(tag, m->dir) != 0 || !gs_test_join(m->state, m->dir, "emu.json"))
    return -1;
  setenv("GPUSLICE_EMU_STATE", m->state, 1);
  setenv("GPUSLICE_EMULATE", spec, 1);
  return 0;
}

static inline void gs_nvml_machine_free(struct gs_nvml_machine *m)
{
  gs_test_rmtree(m->dir);
}

/* The same machine through gpuslice's backend API, to compare with. */
static inline struct gs_backend *gs_nvml_machine_backend(const struct gs_nvml_machine *m)
{
  struct gs_backend_config cfg = {.kind = "emu", .state_path = m->state};
  struct gs_backend *b = NULL;
  struct gs_err err = {0};
  if (gs_backend_open(&err, &cfg, &b) != 0)
    fprintf(stderr, "cannot open the emulator on %s: %s\n", m->state, err.msg);
  return b;
}

#endif
