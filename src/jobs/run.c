/* SPDX-License-Identifier: Apache-2.0 */
/* run.c: starting a command on a claim: its environment (the device it is
 * pinned to, MPS client limits, GPUSLICE_JOB_* for job-emu), the spawn (no
 * shell; killed if its runner dies, so a claim never outlives both), and
 * the wait that turns a status into an exit code. */
#include "jobs/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

void gs_jobs_strv_free(char **v)
{
  for (size_t i = 0; v && v[i]; i++)
    free(v[i]);
  free(v);
}

/* Variables the job's environment sets, dropped from the inherited one. */
static bool ours(const char *kv)
{
  static const char *const names[] = {
      "CUDA_VISIBLE_DEVICES=", "CUDA_MPS_PIPE_DIRECTORY=", "CUDA_MPS_LOG_DIRECTORY=",
      "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=", "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=", "GPUSLICE_JOB"};
  for (unsigned i = 0; i < GS_NITEMS(names); i++)
    if (strncmp(kv, names[i], strlen(names[i])) == 0)
      return true;
  return false;
}

static int add(char **v, size_t *k, const char *fmt, ...) GS_PRINTF(3, 4);
static int add(char **v, size_t *k, const char *fmt, ...)
{
  va_list ap;
  int n;
  va_start(ap, fmt);
  n = vasprintf(&v[*k], fmt, ap);
  va_end(ap);
  if (n < 0) {
    v[*k] = NULL;
    return -1;
  }
  (*k)++;
  return 0;
}

/* The MPS client variables (docs.nvidia.com/deploy/mps, "Environment
 * Variables"): the scope's pipe and log directories, the active thread
 * percentage, and the pinned device memory limit as "<device>=<size>"
 * where the device is 0, the only one CUDA_VISIBLE_DEVICES leaves visible. */
static int add_mps(char **v, size_t *k, const struct gs_jobs_claim *c,
                   const struct gs_jobs_request *req, const char *dir)
{
  char pipe[PATH_MAX], log[PATH_MAX];
  gs_jobs_mps_dirs(dir, c->uuid, pipe, log);
  if (add(v, k, "CUDA_MPS_PIPE_DIRECTORY=%s", pipe) || add(v, k, "CUDA_MPS_LOG_DIRECTORY=%s", log))
    return -1;
  if (req->mps_threads && add(v, k, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=%u", req->mps_threads))
    return -1;
  if (req->memory_mib &&
      add(v, k, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=%lluMB", (unsigned long long)req->memory_mib))
    return -1;
  return 0;
}

char **gs__jobs_env_with(char *const *add)
{
  size_t n = 0, na = 0, k = 0;
  char **v;
  while (environ[n])
    n++;
  while (add[na])
    na++;
  if (!(v = calloc(n + na + 1, sizeof(*v))))
    return NULL;
  for (size_t i = 0; i < n + na; i++) {
    const char *kv = i < n ? environ[i] : add[i - n];
    bool replaced = false;
    for (size_t a = 0; i < n && a < na && !replaced; a++)
      replaced = strncmp(kv, add[a], strcspn(add[a], "=") + 1) == 0;
    if (!replaced && !(v[k++] = strdup(kv))) {
      gs_jobs_strv_free(v);
      return NULL;
    }
  }
  return v;
}

char **gs_jobs_env(const struct gs_jobs_claim *c, const struct gs_jobs_request *req,
                   const char *dir)
{
  size_t n = 0, k = 0;
  char **v;
  const char *pre = c->mode == GS_JOBS_MIG && strncmp(c->uuid, "MIG-", 4) ? "MIG-" : "";
  while (environ[n])
    n++;
  if (!(v = calloc(n + 16, sizeof(*v))))
    return NULL;
  for (size_t i = 0; i < n; i++)
    if (!ours(environ[i]) && !(v[k++] = strdup(environ[i])))
      goto fail;
  if (add(v, &k, "CUDA_VISIBLE_DEVICES=%s%s", pre, c->uuid) ||
      add(v, &k, "GPUSLICE_JOB_ID=%s", c->job) ||
      add(v, &k, "GPUSLICE_JOB_MODE=%s", gs_jobs_mode_name(c->mode)) ||
      add(v, &k, "GPUSLICE_JOB_GPU=%u", c->gpu) ||
      add(v, &k, "GPUSLICE_JOB_UUID=%s", c->uuid) ||
      add(v, &k, "GPUSLICE_JOB_PROFILE=%s", c->profile) ||
      add(v, &k, "GPUSLICE_JOB_MEMORY_MIB=%u", c->memory_mib) ||
      add(v, &k, "GPUSLICE_JOBS_DIR=%s", dir) ||
      (c->mode == GS_JOBS_MPS && add_mps(v, &k, c, req, dir)))
    goto fail;
  return v;
fail:
  gs_jobs_strv_free(v);
  return NULL;
}

/* In the child: tells the parent why it cannot exec, in one write (a
 * struct gs_err is far below PIPE_BUF, so it is never split), and exits. */
static _Noreturn void child_fail(int report, const struct gs_err *why)
{
  (void)!write(report, why, sizeof(*why));
  _exit(127);
}

/* In the child, before exec: default signals, the job's cgroup and
 * session, the account it runs as, then (as that account) its output; it
 * dies with its parent. A failure goes to report and the child exits. */
static void child_setup(pid_t parent, const struct gs__jobs_spawn *o, int report)
{
  struct gs_err why = {0};
  sigset_t none;
  int fd, e = 0;
  for (int s = 1; s < NSIG; s++)
    if (s != SIGKILL && s != SIGSTOP)
      signal(s, SIG_DFL);
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  if ((e = gs__jobs_track_join(o->track)) != 0 || (o->new_session && setsid() < 0 && (e = errno)))
    goto fail;
  if (o->stdin_fd >= 0)
    dup2(o->stdin_fd, 0);
  else if (o->log_path && (fd = open("/dev/null", O_RDONLY)) >= 0 && fd != 0) {
    dup2(fd, 0);
    close(fd);
  }
  if (o->as && ((e = gs__jobs_become(o->as)) != 0 || (chdir(o->as->home) != 0 && chdir("/") != 0)))
    goto fail;
  /* After the identity change, which clears it; then the race with the
   * parent's death is checked. */
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent)
    _exit(127);
  if (o->log_path) {
    /* Created new by the job's own user (our uid now), through util's safe
     * open: never through a link nor over a file someone left there. */
    if (gs_file_open_private(&why, o->log_path, GS_FILE_WRITE | GS_FILE_EXCL | GS_FILE_APPEND |
                             GS_FILE_OWNER_ONLY, &fd, NULL) != 0)
      child_fail(report, &why);
    /* The job's stdout: blocking, as a program expects its output to be. */
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    dup2(fd, 1);
    dup2(fd, 2);
    if (fd > 2)
      close(fd);
  }
  return;
fail:
  gs_err_set(&why, GS_E_NOT_FOUND, "%s", strerror(e));
  child_fail(report, &why);
}

int gs_jobs_spawn(struct gs_err *err, char *const *argv, char *const *envp, const char *log_path,
                  int stdin_fd, const struct gs_jobs_track *track, pid_t *pid)
{
  struct gs__jobs_spawn o = {.log_path = log_path, .stdin_fd = stdin_fd, .track = track};
  return gs__jobs_spawn(err, argv, envp, &o, pid);
}

int gs__jobs_spawn(struct gs_err *err, char *const *argv, char *const *envp,
                   const struct gs__jobs_spawn *o, pid_t *pid)
{
  pid_t parent = getpid(), p;
  struct gs_err why = {0};
  int fds[2], e = 0;
  ssize_t n;
  if (!argv || !argv[0])
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "no command to run");
  if (pipe2(fds, O_CLOEXEC) != 0)
    return gs_err_set(err, GS_E_IO, "cannot create a pipe: %s", strerror(errno));
  fflush(NULL);
  if ((p = fork()) < 0) {
    e = errno;
    close(fds[0]);
    close(fds[1]);
    return gs_err_set(err, GS_E_IO, "cannot fork: %s", strerror(e));
  }
  if (p == 0) {
    close(fds[0]);
    child_setup(parent, o, fds[1]);
    execvpe(argv[0], argv, envp);
    gs_err_set(&why, GS_E_NOT_FOUND, "%s", strerror(errno));
    child_fail(fds[1], &why);
  }
  close(fds[1]);
  do /* the pipe closes on exec: nothing read means the command started */
    n = read(fds[0], &why, sizeof(why));
  while (n < 0 && errno == EINTR);
  close(fds[0]);
  if (n == (ssize_t)sizeof(why)) {
    waitpid(p, NULL, 0);
    why.msg[sizeof(why.msg) - 1] = '\0';
    return gs_err_set(err, why.code ? why.code : GS_E_UNKNOWN, "cannot run %s%s%s: %s%s%s", argv[0],
                      o->as ? " as " : "", o->as ? o->as->name : "", why.msg,
                      o->log_path ? "; its output was to go to " : "",
                      o->log_path ? o->log_path : "");
  }
  *pid = p;
  return 0;
}

int gs_jobs_wait(struct gs_err *err, pid_t pid, int *status, int *sig)
{
  int st;
  pid_t r;
  do
    r = waitpid(pid, &st, 0);
  while (r < 0 && errno == EINTR);
  if (r < 0)
    return gs_err_set(err, GS_E_IO, "cannot wait for process %d: %s", (int)pid, strerror(errno));
  *sig = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
  *status = *sig ? 128 + *sig : WEXITSTATUS(st);
  return 0;
}
