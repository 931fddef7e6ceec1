/* SPDX-License-Identifier: Apache-2.0 */
/* emu_devices.c: the device files of an emulated machine, as the NVIDIA
 * driver lays them out (backend.h, gs_emu_devices): /dev/nvidia<N> and
 * nvidiactl on the driver's major 195, /dev/nvidia-caps/nvidia-cap<M> on a
 * major the host does not use (the driver's is dynamic), and the mig-minors
 * file that names every cap minor. Nothing can open them with effect: no
 * driver answers these majors; they exist to be checked and bound (Slurm's
 * gres File=, containers). Knows device files, not NVML's semantics. */
#include "backend/internal.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define NVIDIA_MAJOR 195      /* "195 char Nvidia graphics devices" (the kernel's devices.txt) */
#define NVIDIACTL_MINOR 255
#define MIG_MINORS_GPUS 32    /* the driver's file lists gpu0..gpu31 whatever is installed */
#define CAPS_PER_GPU 135      /* 15 GPU instances, each with 8 compute instances */

/* Whether /proc/devices lists a character major (a driver owns it). */
static bool major_taken(const char *devices, unsigned major, char *owner, size_t size)
{
  const char *p = devices, *end = strstr(devices, "\nBlock devices:");
  for (; p && (!end || p < end); p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
    unsigned m;
    int n = 0;
    if (sscanf(p, " %u %n", &m, &n) == 1 && m == major && n > 0) {
      snprintf(owner, size, "%.*s", (int)strcspn(p + n, "\n"), p + n);
      return true;
    }
  }
  return false;
}

/* 195 must be no driver's (with a real driver loaded these would be real
 * GPUs); the caps major is the highest dynamic one nobody holds. */
static int pick_majors(struct gs_err *err, unsigned *caps)
{
  char *devices = NULL, owner[64];
  size_t len;
  int rc = gs_file_read(NULL, "/proc/devices", 1 << 16, &devices, &len);
  *caps = 511;
  if (rc != 0)
    return 0; /* no /proc: nothing to collide with that we could see */
  if (major_taken(devices, NVIDIA_MAJOR, owner, sizeof(owner)))
    rc = gs_err_set(err, GS_E_IN_USE, "character major %u belongs to '%s' here (a real NVIDIA "
                    "driver?): its /dev/nvidia* files are the real ones; emulated ones would open "
                    "real GPUs", NVIDIA_MAJOR, owner);
  while (rc == 0 && *caps > 234 && major_taken(devices, *caps, owner, sizeof(owner)))
    (*caps)--;
  free(devices);
  return rc;
}

static int node(struct gs_err *err, const char *dir, const char *name, unsigned major, unsigned minor,
                mode_t mode)
{
  char path[PATH_MAX];
  int n = snprintf(path, sizeof(path), "%s/%s", dir, name);
  if (n < 0 || (size_t)n >= sizeof(path))
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "%s/%s: path is too long", dir, name);
  if (unlink(path) != 0 && errno != ENOENT)
    return gs_err_set(err, GS_E_IO, "%s: cannot replace it: %s", path, strerror(errno));
  if (mknod(path, S_IFCHR | mode, makedev(major, minor)) != 0)
    return gs_err_set(err, errno == EPERM ? GS_E_NO_PERMISSION : GS_E_IO,
                      "%s: cannot create the device node: %s%s", path, strerror(errno),
                      errno == EPERM ? " (mknod needs root)" : "");
  /* mknod's mode went through the umask; the driver's files have exactly theirs. */
  return chmod(path, mode) == 0 ? 0 : gs_err_set(err, GS_E_IO, "%s: chmod: %s", path, strerror(errno));
}

static int make_dir(struct gs_err *err, char path[PATH_MAX], const char *dir, const char *sub)
{
  char probe[PATH_MAX];
  int n = snprintf(path, PATH_MAX, "%s/%s", dir, sub);
  if (n < 0 || n >= PATH_MAX - 16)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "%s/%s: path is too long", dir, sub);
  snprintf(probe, sizeof(probe), "%s/x", path);
  return gs_file_make_parent(err, probe);
}

/* The driver's mig-minors text: config 1, monitor 2, then per GPU and GPU
 * instance its access line and its eight compute instances' (mig-facts.md §8.1). */
static char *mig_minors(size_t *len)
{
  size_t cap = 2 + (size_t)MIG_MINORS_GPUS * CAPS_PER_GPU, used;
  char *text = malloc(cap * 32);
  unsigned minor = 3;
  if (!text)
    return NULL;
  used = (size_t)sprintf(text, "config 1\nmonitor 2\n");
  for (unsigned g = 0; g < MIG_MINORS_GPUS; g++)
    for (unsigned gi = 0; gi < 15; gi++) {
      used += (size_t)sprintf(text + used, "gpu%u/gi%u/access %u\n", g, gi, minor++);
      for (unsigned ci = 0; ci < 8; ci++)
        used += (size_t)sprintf(text + used, "gpu%u/gi%u/ci%u/access %u\n", g, gi, ci, minor++);
    }
  *len = used;
  return text;
}

/* Removes a node of a GPU the machine no longer has (best effort). */
static void drop(const char *dir, const char *name)
{
  char path[PATH_MAX];
  int n = snprintf(path, sizeof(path), "%s/%s", dir, name);
  if (n > 0 && (size_t)n < sizeof(path))
    unlink(path);
}

/* nvidia<N> per GPU, and the caps of each GPU the mig-minors file can name. */
static int make_nodes(struct gs_err *err, const char *dev, const char *caps_dir, unsigned caps_major,
                      unsigned ngpu)
{
  char name[32];
  int rc = 0;
  for (unsigned g = 0; rc == 0 && g < GS_BACKEND_MAX_GPUS; g++) {
    snprintf(name, sizeof(name), "nvidia%u", g);
    /* emulated GPUs' minors are their indices, as nvml-emu reports them */
    if (g < ngpu)
      rc = node(err, dev, name, NVIDIA_MAJOR, g, 0666);
    else
      drop(dev, name);
  }
  for (unsigned m = 1; rc == 0 && m < 3 + CAPS_PER_GPU * MIG_MINORS_GPUS; m++) {
    snprintf(name, sizeof(name), "nvidia-cap%u", m);
    if (m < 3 + CAPS_PER_GPU * ngpu)
      rc = node(err, caps_dir, name, caps_major, m, 0444);
    else
      drop(caps_dir, name);
  }
  return rc;
}

int gs_emu_devices(struct gs_backend *b, struct gs_err *err, const char *dir)
{
  char dev[PATH_MAX], caps[PATH_MAX], proc[PATH_MAX], *text;
  unsigned ngpu = 0, caps_major;
  size_t len = 0;
  int rc;
  if (!gs_emu_state_path(b))
    return gs_err_set(err, GS_E_NOT_SUPPORTED, "this is a real machine: its driver makes its "
                      "device files");
  if ((rc = b->ops->gpu_count(b, err, &ngpu)) != 0 || (rc = pick_majors(err, &caps_major)) != 0 ||
      (rc = make_dir(err, dev, dir, "dev")) != 0 || (rc = make_dir(err, caps, dir, "dev/nvidia-caps")) != 0 ||
      (rc = make_dir(err, proc, dir, "proc/driver/nvidia-caps")) != 0 ||
      (rc = node(err, dev, "nvidiactl", NVIDIA_MAJOR, NVIDIACTL_MINOR, 0666)) != 0)
    return rc;
  rc = make_nodes(err, dev, caps, caps_major, ngpu < MIG_MINORS_GPUS ? ngpu : MIG_MINORS_GPUS);
  if (rc)
    return rc;
  if (!(text = mig_minors(&len)))
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory writing mig-minors");
  snprintf(proc + strlen(proc), sizeof(proc) - strlen(proc), "/mig-minors");
  rc = gs_file_write_atomic(err, proc, text, len);
  free(text);
  return rc;
}
