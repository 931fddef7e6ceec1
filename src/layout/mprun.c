/* SPDX-License-Identifier: Apache-2.0 */
/* mprun.c: the frame nvidia-mig-parted's apply and restore share
 * (ApplyMigConfigWithHooks: the four hook points around the mode and device
 * steps) and its GPU reset, which resets every GPU at once after a mode
 * change is left pending. On real GPUs the reset is what mig-parted runs,
 * `nvidia-smi -r -i <bus ids>`; on emulated ones the emulator's reset, with
 * nvidia-smi's report (texts from NVIDIA/mig-parted#181,
 * NVIDIA/gpu-operator#118 and #1606, NVIDIA/NVSentinel#1692). */
#include "layout/mp.h"

#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* ---- the steps between the hooks ---- */

static int hook(struct gs_err *err, const struct gs_layout_mp_opts *o, enum gs_layout_hook_point p,
                const char *name)
{
  int rc;
  gs__mp_log(o->log, GS_LAYOUT_DEBUG, "Running %s hook", name);
  rc = gs_layout_hooks_run_mig_parted(err, o->hooks, p, o->hook_env, o->hook_output);
  return rc ? gs_err_set(err, rc, "error running %s hook: %s", name, err ? err->msg : "") : 0;
}

static int steps(struct gs_err *err, const struct gs__mp_steps *s, const struct gs_layout_mp_opts *o)
{
  struct gs_err differs = {0};
  int rc;
  gs__mp_log(o->log, GS_LAYOUT_DEBUG, "Checking current MIG mode...");
  if (s->assert_mode(&differs, s->arg) != 0) {
    if ((rc = hook(err, o, GS_LAYOUT_HOOK_PRE_APPLY_MODE, "pre-apply-mode")) != 0)
      return rc;
    gs__mp_log(o->log, GS_LAYOUT_DEBUG, "Applying MIG mode change...");
    if ((rc = s->apply_mode(err, s->arg)) != 0)
      return rc;
  }
  if (o->mode_only)
    return 0;
  gs__mp_log(o->log, GS_LAYOUT_DEBUG, "Checking current MIG device configuration...");
  if (s->assert_config(&differs, s->arg) != 0) {
    if ((rc = hook(err, o, GS_LAYOUT_HOOK_PRE_APPLY_CONFIG, "pre-apply-config")) != 0)
      return rc;
    gs__mp_log(o->log, GS_LAYOUT_DEBUG, "Applying MIG device configuration...");
    return s->apply_config(err, s->arg);
  }
  return 0;
}

int gs__mp_run(struct gs_err *err, const struct gs__mp_steps *s, const struct gs_layout_mp_opts *o)
{
  struct gs_err exit_err = {0};
  int rc, exit_rc;
  /* apply-exit is deferred only once apply-start has succeeded, as in mig-parted. */
  if ((rc = hook(err, o, GS_LAYOUT_HOOK_APPLY_START, "apply-start")) != 0)
    return rc;
  rc = steps(err, s, o);
  gs__mp_log(o->log, GS_LAYOUT_DEBUG, "Running apply-exit hook");
  exit_rc = gs_layout_hooks_run_mig_parted(&exit_err, o->hooks, GS_LAYOUT_HOOK_APPLY_EXIT, o->hook_env,
                                           o->hook_output);
  if (rc == 0 && exit_rc)
    return gs_err_set(err, exit_rc, "error running apply-exit hook: %s", exit_err.msg);
  if (exit_rc)
    gs__mp_log(o->log, GS_LAYOUT_ERROR, "Error running apply-exit hook: %s", exit_err.msg);
  return rc;
}

/* ---- resetting every GPU ---- */

/* The emulator's reset of every GPU, reported as nvidia-smi -r reports it:
 * a line per GPU reset, or the GPUs it could not reset; exit status 255 when
 * a process holds one (then none is reset: we take nvidia-smi to check them
 * all first, which its report of every busy GPU suggests), 3 ("not available
 * on target device", its man page) when the machine forbids resets. */
static int emu_reset_all(struct gs_err *err, struct gs_backend *b, unsigned ngpu, char *out, size_t size)
{
  struct gs_proc_info *procs = calloc(GS_BACKEND_MAX_PROCS, sizeof(*procs));
  char failed[GS_ERR_MSG_SIZE] = "";
  size_t used = 0, fused = 0;
  unsigned busy = 0, status = 0;
  int rc = procs ? 0 : gs_err_set(err, GS_E_NO_MEMORY, "out of memory resetting the GPUs");
  for (int pass = 0; pass < 2 && rc == 0 && !busy; pass++)
    for (unsigned g = 0; g < ngpu && rc == 0; g++) {
      struct gs_gpu_info info;
      struct gs_err why = {0};
      unsigned np = 0;
      if ((rc = b->ops->gpu_info(b, err, g, &info)) != 0)
        break;
      if (pass == 0) {
        if (b->ops->processes(b, NULL, g, procs, &np) == 0 && np > 0 && ++busy)
          fused += (size_t)snprintf(failed + fused, fused < sizeof(failed) ? sizeof(failed) - fused : 0,
                                    "  GPU %s: %s\n", info.pci_bus_id, gs_backend_code_text(GS_E_IN_USE));
      } else if (gs_emu_gpu_reset(b, &why, g) == 0)
        used += (size_t)snprintf(out + used, used < size ? size - used : 0, "GPU %s was successfully reset.\n",
                                 info.pci_bus_id);
      else {
        status = 3;
        used += (size_t)snprintf(out + used, used < size ? size - used : 0, "Resetting GPU %s is not supported.\n",
                                 info.pci_bus_id);
      }
    }
  free(procs);
  if (rc)
    return rc;
  if (busy) {
    status = 255;
    snprintf(out, size,
             "The following GPUs could not be reset:\n%s\n%u device%s currently being used by one or more other "
             "processes (e.g., Fabric Manager, CUDA application, graphics application such as an X server, or a "
             "monitoring application such as another instance of nvidia-smi). Please first kill all processes "
             "using %s and all compute applications running in the system.\n",
             failed, busy, busy == 1 ? " is" : "s are", busy == 1 ? "this device" : "these devices");
  }
  return status ? gs_err_set(err, GS_E_UNKNOWN, "exit status %u", status) : 0;
}

/* Runs argv, its stdout and stderr into out; Go's error text on failure. */
static int run_capture(struct gs_err *err, char *const argv[], char *out, size_t size)
{
  posix_spawn_file_actions_t fa;
  int fds[2], status = 0, rc;
  size_t used = 0;
  ssize_t n;
  pid_t pid;
  if (pipe(fds) != 0)
    return gs_err_set(err, GS_E_IO, "pipe: %s", strerror(errno));
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    return gs_err_set(err, GS_E_NOT_FOUND, "exec: \"%s\": %s", argv[0],
                      rc == ENOENT ? "executable file not found in $PATH" : strerror(rc));
  }
  while ((n = read(fds[0], out + used, size - 1 - used)) > 0 || (n < 0 && errno == EINTR))
    used += n > 0 ? (size_t)n : 0;
  out[used] = 0;
  close(fds[0]);
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
    ;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
    return 0;
  if (WIFEXITED(status))
    return gs_err_set(err, GS_E_UNKNOWN, "exit status %d", WEXITSTATUS(status));
  return gs_err_set(err, GS_E_UNKNOWN, "signal: %s", strsignal(WTERMSIG(status)));
}

/* mig-parted's nvmlResetAllGPUs: `nvidia-smi -r -i` with every GPU's bus id. */
static int smi_reset_all(struct gs_err *err, struct gs_backend *b, unsigned ngpu, char *out, size_t size)
{
  char ids[GS_BACKEND_MAX_GPUS * 20] = "", *argv[] = {"nvidia-smi", "-r", "-i", ids, NULL};
  size_t used = 0;
  int rc;
  if (ngpu == 0) {
    snprintf(out, size, "No GPUs to reset...");
    return 0;
  }
  for (unsigned g = 0; g < ngpu; g++) {
    struct gs_gpu_info info;
    if ((rc = b->ops->gpu_info(b, err, g, &info)) != 0)
      return rc;
    used += (size_t)snprintf(ids + used, sizeof(ids) - used, "%s%s", g ? "," : "", info.pci_bus_id);
  }
  return run_capture(err, argv, out, size);
}

int gs__mp_reset_all(struct gs_err *err, struct gs_backend *b, const struct gs_layout_logger *log)
{
  char *out = calloc(1, 16384);
  unsigned ngpu = 0;
  int rc;
  if (!out)
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory resetting the GPUs");
  if ((rc = b->ops->gpu_count(b, err, &ngpu)) == 0)
    rc = gs_backend_emulated(b) ? emu_reset_all(err, b, ngpu, out, 16384) : smi_reset_all(err, b, ngpu, out, 16384);
  if (rc == 0)
    gs__mp_log(log, GS_LAYOUT_DEBUG, "\n%s", out);
  else {
    gs__mp_log(log, GS_LAYOUT_ERROR, "\n%s", out);
    gs_err_set(err, rc, "error resetting all GPUs: %s", err ? err->msg : "");
  }
  free(out);
  return rc;
}
