/* SPDX-License-Identifier: Apache-2.0 */
/* hooks.c: runs the commands of a hooks file around an apply, as
 * nvidia-mig-parted does (stop GPU clients before a change, restart them
 * after). Each command is its own process, without a shell; its failure
 * stops the apply before anything on the GPUs changes. */
#include "layout/layout.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *const point_names[GS_LAYOUT_HOOK_POINTS] = {
    "apply-start", "pre-apply-mode", "pre-apply-config", "apply-exit"};

/* How a hook runs: gpuslice's way (our environment plus the apply's
 * variables, output shown, errors that name the hook) or nvidia-mig-parted's
 * (exactly the given environment, output shown only with -d, Go's error text). */
struct run_mode {
  char *const *env;
  bool exact_env;
  bool quiet;
  bool go_errors;
};

/* The program as the caller's PATH finds it (Go's exec.Command looks it up
 * before the hook's own environment applies); the name itself when no PATH
 * entry has it. */
static const char *look_path(const char *name, char *buf, size_t size)
{
  const char *path = getenv("PATH"), *p = path;
  if (!path || strchr(name, '/'))
    return name;
  while (*p) {
    size_t len = strcspn(p, ":");
    if ((size_t)snprintf(buf, size, "%.*s/%s", (int)len, len ? p : ".", name) < size &&
        access(buf, X_OK) == 0)
      return buf;
    p += len + (p[len] == ':');
  }
  return name;
}

/* In the child: the environment, the directory, then the program. */
static void exec_hook(const struct gs_layout_hook *h, const struct run_mode *m)
{
  char *argv[GS_LAYOUT_MAX_ARGS + 2], found[4096];
  const char *prog = look_path(h->command, found, sizeof(found));
  unsigned n = 0;
  int null;
  if (m->exact_env)
    clearenv();
  /* As mig-parted: the apply's own variables win over a hook's `envs`. */
  for (unsigned i = 0; i < h->nenv; i++)
    putenv((char *)h->env[i]);
  for (unsigned i = 0; m->env && m->env[i]; i++)
    putenv(m->env[i]);
  if (m->quiet && (null = open("/dev/null", O_WRONLY)) >= 0) {
    dup2(null, 1);
    dup2(null, 2);
  }
  if (h->workdir[0] && chdir(h->workdir) != 0)
    _exit(126);
  argv[n++] = (char *)h->command;
  for (unsigned i = 0; i < h->nargs; i++)
    argv[n++] = (char *)h->args[i];
  argv[n] = NULL;
  execvp(prog, argv);
  _exit(127);
}

/* Go's os/exec wording: "exit status 1", "signal: killed". */
static int go_status(struct gs_err *err, int status)
{
  if (WIFEXITED(status))
    return gs_err_set(err, GS_E_UNKNOWN, "exit status %d", WEXITSTATUS(status));
  return gs_err_set(err, GS_E_UNKNOWN, "signal: %s", strsignal(WTERMSIG(status)));
}

static int run_one(struct gs_err *err, const struct gs_layout_hooks *hs, enum gs_layout_hook_point p,
                   const struct gs_layout_hook *h, const struct run_mode *m)
{
  int status = 0;
  pid_t pid;
  fflush(NULL);
  if ((pid = fork()) < 0)
    return gs_err_set(err, GS_E_IO, "%s:%u: %s hook %s: cannot fork: %s", hs->origin, h->line,
                      point_names[p], h->command, strerror(errno));
  if (pid == 0)
    exec_hook(h, m);
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      return gs_err_set(err, GS_E_IO, "%s: waiting for hook %s: %s", hs->origin, h->command,
                        strerror(errno));
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
    return 0;
  if (m->go_errors)
    return go_status(err, status);
  if (WIFEXITED(status) && WEXITSTATUS(status) >= 126)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT,
                      "%s:%u: %s hook: cannot run '%s' (exit %d): check the command path and workdir",
                      hs->origin, h->line, point_names[p], h->command, WEXITSTATUS(status));
  return gs_err_set(err, GS_E_UNKNOWN, "%s:%u: %s hook '%s' failed (%s %d); the apply stops here",
                    hs->origin, h->line, point_names[p], h->command,
                    WIFEXITED(status) ? "exit" : "signal",
                    WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
}

static int run_point(struct gs_err *err, const struct gs_layout_hooks *h, enum gs_layout_hook_point point,
                     const struct run_mode *m)
{
  if (!h)
    return 0;
  for (unsigned i = 0; i < h->n[point]; i++) {
    int rc = run_one(err, h, point, &h->hook[point][i], m);
    if (rc)
      return rc;
  }
  return 0;
}

int gs_layout_hooks_run(struct gs_err *err, const struct gs_layout_hooks *h,
                        enum gs_layout_hook_point point, char *const *env)
{
  struct run_mode m = {.env = env};
  return run_point(err, h, point, &m);
}

int gs_layout_hooks_run_mig_parted(struct gs_err *err, const struct gs_layout_hooks *h,
                                   enum gs_layout_hook_point point, char *const *env, bool output)
{
  struct run_mode m = {.env = env, .exact_env = true, .quiet = !output, .go_errors = true};
  return run_point(err, h, point, &m);
}
