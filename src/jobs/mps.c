/* SPDX-License-Identifier: Apache-2.0 */
/* mps.c: MPS control daemons, one per scope (a GPU or a MIG device, named by
 * UUID), each with its own pipe and log directories under <dir>/mps/<scope>/
 * (docs.nvidia.com/deploy/mps, "Environment Variables": CUDA_MPS_PIPE_DIRECTORY
 * and CUDA_MPS_LOG_DIRECTORY let several daemons coexist). On emulated GPUs
 * nothing is launched: the state is recorded and marked emulated. */
#include "jobs/internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MPS_FORMAT "gpuslice-mps"

void gs_jobs_mps_dirs(const char *dir, const char *scope, char pipe[PATH_MAX], char log[PATH_MAX])
{
  snprintf(pipe, PATH_MAX, "%s/mps/%s/pipe", dir, scope);
  snprintf(log, PATH_MAX, "%s/mps/%s/log", dir, scope);
}

static int state_path(struct gs_err *err, const char *dir, const char *scope, char out[PATH_MAX])
{
  int n;
  if (!*scope || strchr(scope, '/') || strcmp(scope, ".") == 0 || strcmp(scope, "..") == 0)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "MPS scope '%.64s': expected a GPU or MIG "
                      "device UUID (see `gpuslice list`)", scope);
  n = snprintf(out, PATH_MAX, "%s/mps/%s/state.json", dir, scope);
  if (n < 0 || n >= PATH_MAX)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "%s: path is too long", dir);
  return 0;
}

/* The control program: $GPUSLICE_MPS_CONTROL, or NVIDIA's. */
static const char *control_program(void)
{
  const char *p = getenv("GPUSLICE_MPS_CONTROL");
  return p && *p ? p : "nvidia-cuda-mps-control";
}

static int load(struct gs_err *err, const char *path, struct gs_jobs_mps *m)
{
  json_t *r;
  char *text;
  size_t len;
  uint64_t gpu;
  int64_t pid;
  int rc = gs_file_read_private(err, path, 1u << 16, 0, &text, &len);
  memset(m, 0, sizeof(*m));
  if (rc)
    return rc;
  rc = gs__jobs_parse_root(err, path, text, len, MPS_FORMAT, &r);
  free(text);
  if (rc)
    return rc;
  if ((rc = gs__jobs_get_str(err, path, "", r, "scope", m->scope, sizeof(m->scope))) ||
      (rc = gs__jobs_get_uint(err, path, "", r, "gpu", GS_BACKEND_MAX_GPUS - 1, &gpu)) ||
      (rc = gs__jobs_get_bool(err, path, "", r, "emulated", &m->emulated)) ||
      (rc = gs__jobs_get_int(err, path, "", r, "pid", 0, INT32_MAX, &pid)) ||
      (rc = gs__jobs_get_time(err, path, "", r, "started", &m->started)) ||
      (rc = gs__jobs_get_str(err, path, "", r, "pipe_dir", m->pipe_dir, sizeof(m->pipe_dir))) ||
      (rc = gs__jobs_get_str(err, path, "", r, "log_dir", m->log_dir, sizeof(m->log_dir))) ||
      (rc = gs__jobs_get_bool(err, path, "", r, "running", &m->running))) {
    json_decref(r);
    return rc;
  }
  json_decref(r);
  m->gpu = (unsigned)gpu;
  m->pid = (int)pid;
  /* A real daemon that died (or a machine that rebooted) is not running. */
  if (m->running && !m->emulated && !gs__jobs_alive(m->pid, 0))
    m->running = false;
  return 0;
}

static int save(struct gs_err *err, const char *path, const struct gs_jobs_mps *m)
{
  json_t *v = json_pack("{s:s, s:i, s:s, s:i, s:b, s:i, s:f, s:s, s:s, s:b}", "format", MPS_FORMAT,
                        "version", 1, "scope", m->scope, "gpu", (int)m->gpu, "emulated",
                        m->emulated, "pid", m->pid, "started", m->started, "pipe_dir",
                        m->pipe_dir, "log_dir", m->log_dir, "running", m->running);
  return gs__jobs_save_json(err, path, v);
}

/* Runs the control program with the scope's environment; `input` goes to
 * its stdin ("quit\n"), or nothing (stdin /dev/null) for `-d`. */
static int control(struct gs_err *err, const struct gs_jobs_mps *m, const char *arg,
                   const char *input)
{
  char *argv[] = {(char *)control_program(), (char *)arg, NULL};
  char cvd[GS_BACKEND_UUID_SIZE + 32], pd[PATH_MAX + 32], ld[PATH_MAX + 32];
  char *add[] = {cvd, pd, ld, NULL}, **envp;
  int in[2], status, sig, rc;
  pid_t pid;
  snprintf(cvd, sizeof(cvd), "CUDA_VISIBLE_DEVICES=%s", m->scope);
  snprintf(pd, sizeof(pd), "CUDA_MPS_PIPE_DIRECTORY=%s", m->pipe_dir);
  snprintf(ld, sizeof(ld), "CUDA_MPS_LOG_DIRECTORY=%s", m->log_dir);
  if (!(envp = gs__jobs_env_with(add)))
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory building the MPS environment");
  if (pipe2(in, O_CLOEXEC) != 0) {
    gs_jobs_strv_free(envp);
    return gs_err_set(err, GS_E_IO, "cannot create a pipe: %s", strerror(errno));
  }
  rc = gs_jobs_spawn(err, argv, envp, NULL, in[0], NULL, &pid);
  gs_jobs_strv_free(envp);
  close(in[0]);
  if (rc == 0 && input)
    (void)!write(in[1], input, strlen(input));
  close(in[1]);
  if (rc)
    return rc;
  if ((rc = gs_jobs_wait(err, pid, &status, &sig)) != 0)
    return rc;
  if (status != 0)
    return gs_err_set(err, GS_E_UNKNOWN, "%s %s for %s exited with status %d; its log is in %s",
                      argv[0], arg ? arg : "(quit)", m->scope, status, m->log_dir);
  return 0;
}

/* The daemon's pid from <pipe>/nvidia-cuda-mps-control.pid (the MPS docs:
 * "The control daemon creates a nvidia-cuda-mps-control.pid file"). */
static int read_pid(const char *pipe_dir)
{
  char path[PATH_MAX + 40], *text;
  size_t len;
  int pid = 0;
  snprintf(path, sizeof(path), "%s/nvidia-cuda-mps-control.pid", pipe_dir);
  for (int tries = 0; tries < 50 && !pid; tries++) {
    if (gs_file_read_private(NULL, path, 64, 0, &text, &len) == 0) {
      pid = atoi(text);
      free(text);
    }
    if (!pid)
      nanosleep(&(struct timespec){0, 20000000L}, NULL);
  }
  return pid;
}

static int make_dir(struct gs_err *err, const char *d)
{
  char probe[PATH_MAX + 4];
  snprintf(probe, sizeof(probe), "%s/x", d);
  return gs_file_make_parent(err, probe);
}

int gs_jobs_mps_start(struct gs_err *err, struct gs_backend *b, const char *dir, unsigned gpu,
                      const char *scope, struct gs_jobs_mps *out)
{
  char path[PATH_MAX];
  struct gs_file_lock lock = {-1};
  struct gs_jobs_mps m;
  int rc;
  if ((rc = state_path(err, dir, scope, path)) != 0 || (rc = gs_file_make_parent(err, path)) != 0 ||
      (rc = gs_file_lock(err, path, 1, &lock)) != 0)
    return rc;
  rc = load(err, path, &m);
  if (rc == 0 && m.running) {
    *out = m;
    goto out;
  }
  memset(&m, 0, sizeof(m));
  snprintf(m.scope, sizeof(m.scope), "%s", scope);
  m.gpu = gpu;
  gs_jobs_mps_dirs(dir, scope, m.pipe_dir, m.log_dir);
  m.emulated = gs__jobs_emulated(b) && !getenv("GPUSLICE_MPS_CONTROL");
  if ((rc = make_dir(err, m.pipe_dir)) != 0 || (rc = make_dir(err, m.log_dir)) != 0)
    goto out;
  if (!m.emulated) {
    if ((rc = control(err, &m, "-d", NULL)) != 0)
      goto out;
    if (!(m.pid = read_pid(m.pipe_dir))) {
      rc = gs_err_set(err, GS_E_UNKNOWN, "%s -d for %s wrote no pid file in %s; see its log in %s",
                      control_program(), scope, m.pipe_dir, m.log_dir);
      goto out;
    }
  }
  m.running = true;
  m.started = gs__jobs_now();
  if ((rc = save(err, path, &m)) == 0)
    *out = m;
out:
  gs_file_unlock(&lock);
  return rc;
}

int gs_jobs_mps_stop(struct gs_err *err, const char *dir, const char *scope)
{
  char path[PATH_MAX];
  struct gs_file_lock lock = {-1};
  struct gs_jobs_mps m;
  int rc;
  if ((rc = state_path(err, dir, scope, path)) != 0)
    return rc;
  if ((rc = gs_file_make_parent(err, path)) != 0 || (rc = gs_file_lock(err, path, 1, &lock)) != 0)
    return rc;
  rc = load(err, path, &m);
  if (rc == GS_E_NOT_FOUND || (rc == 0 && !m.running)) {
    rc = gs_err_set(err, GS_E_NOT_FOUND, "no MPS daemon runs for %s (`gpuslice mps status` lists "
                    "them)", scope);
    goto out;
  }
  if (rc == 0 && !m.emulated)
    rc = control(err, &m, NULL, "quit\n");
  if (rc == 0) {
    m.running = false;
    rc = save(err, path, &m);
  }
out:
  gs_file_unlock(&lock);
  return rc;
}

int gs_jobs_mps_list(struct gs_err *err, const char *dir, struct gs_jobs_mps **out, unsigned *n)
{
  char mdir[PATH_MAX], path[PATH_MAX];
  struct gs_jobs_mps *v = NULL, *nv;
  struct dirent *d;
  unsigned k = 0;
  int rc = 0;
  DIR *dp;
  *out = NULL;
  *n = 0;
  snprintf(mdir, sizeof(mdir), "%s/mps", dir);
  if (!(dp = opendir(mdir)))
    return 0;
  while ((d = readdir(dp)) != NULL && rc == 0) {
    if (d->d_name[0] == '.' || state_path(NULL, dir, d->d_name, path) != 0)
      continue;
    if (!(nv = realloc(v, (k + 1) * sizeof(*v)))) {
      rc = gs_err_set(err, GS_E_NO_MEMORY, "out of memory listing MPS daemons");
      break;
    }
    v = nv;
    rc = load(err, path, &v[k]);
    if (rc == GS_E_NOT_FOUND)
      rc = 0;
    else if (rc == 0)
      k++;
  }
  closedir(dp);
  if (rc) {
    free(v);
    return rc;
  }
  *out = v;
  *n = k;
  return 0;
}
