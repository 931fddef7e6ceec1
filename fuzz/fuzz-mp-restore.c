/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz-mp-restore.c: libFuzzer target for nvidia-mig-parted's checkpoint
 * file as `restore` reads it: any bytes are restored onto an emulated
 * A100-40GB and H100 (state in a per-process file under /dev/shm or /tmp,
 * started over every 256 runs). A refusal must name the file or come from
 * the restore's steps; after a restore the state must checkpoint again.
 * Nothing may crash, leak or hang. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "layout/layout.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64], state[96], lock[96];

static void cleanup(void)
{
  char path[128];
  snprintf(path, sizeof(path), "%s.lock", state);
  unlink(path);
  snprintf(path, sizeof(path), "%s.lock", lock);
  unlink(path);
  unlink(state);
  rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
  (void)argc;
  (void)argv;
  snprintf(dir, sizeof(dir), "/dev/shm/gpuslice-fuzz-mp.XXXXXX");
  if (!mkdtemp(dir)) {
    snprintf(dir, sizeof(dir), "/tmp/gpuslice-fuzz-mp.XXXXXX");
    if (!mkdtemp(dir))
      abort();
  }
  snprintf(state, sizeof(state), "%s/emu.json", dir);
  snprintf(lock, sizeof(lock), "%s/apply", dir);
  atexit(cleanup);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static unsigned long runs;
  struct gs_backend_config cfg = {.kind = "emu", .emulate = "a100-40gb,h100-80gb", .state_path = state};
  struct gs_layout_logger log = {0};
  struct gs_layout_mp_opts o = {.lock_path = lock, .log = &log};
  struct gs_backend *b = NULL;
  struct gs_err err = {0};
  char *again = NULL;
  if (runs++ % 256 == 0 && gs_emu_reset_state(&err, state, cfg.emulate) != 0)
    abort();
  if (gs_backend_open(&err, &cfg, &b) != 0)
    abort();
  if (gs_layout_mp_restore(&err, b, "fuzz.json", (const char *)data, size, &o) != 0) {
    if (!strstr(err.msg, "fuzz.json") && !strstr(err.msg, "error applying MIG configuration"))
      abort();
  } else if (gs_layout_mp_checkpoint(&err, b, &again) != 0) {
    abort();
  }
  free(again);
  gs_backend_close(b);
  return 0;
}
