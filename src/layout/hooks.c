/* hooks.c: runs the commands of a hooks file around an apply, as
 * nvidia-mig-parted does (stop GPU clients before a change, restart them
 * after). Each command is its own process, without a shell; its failure
 * stops the apply before anything on the GPUs changes. */
#include "layout/layout.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *const point_names[GS_LAYOUT_HOOK_POINTS] = {
    "apply-start", "pre-apply-mode", "pre-apply-config", "apply-exit"};

/* In the child: the environment, the directory, then the program. */
static void exec_hook(const struct gs_layout_hook *h, char *const *env)
{
  char *argv[GS_LAYOUT_MAX_ARGS + 2];
  unsigned n = 0;
  /* As mig-parted: the apply's own variables win over a hook's `envs`. */
  for (unsigned i = 0; i < h->nenv; i++)
    putenv((char *)h->env[i]);
  for (unsigned i = 0; env && env[i]; i++)
    putenv(env[i]);
  if (h->workdir[0] && chdir(h->workdir) != 0)
    _exit(126);
  argv[n++] = (char *)h->command;
  for (unsigned i = 0; i < h->nargs; i++)
    argv[n++] = (char *)h->args[i];
  argv[n] = NULL;
  execvp(h->command, argv);
  _exit(127);
}

static int run_one(struct gs_err *err, const struct gs_layout_hooks *hs, enum gs_layout_hook_point p,
                   const struct gs_layout_hook *h, char *const *env)
{
  int status = 0;
  pid_t pid;
  fflush(NULL);
  if ((pid = fork()) < 0)
    return gs_err_set(err, GS_E_IO, "%s:%u: %s hook %s: cannot fork: %s", hs->origin, h->line,
                      point_names[p], h->command, strerror(errno));
  if (pid == 0)
    exec_hook(h, env);
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      return gs_err_set(err, GS_E_IO, "%s: waiting for hook %s: %s", hs->origin, h->command,
                        strerror(errno));
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
    return 0;
  if (WIFEXITED(status) && WEXITSTATUS(status) >= 126)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT,
                      "%s:%u: %s hook: cannot run '%s' (exit %d): check the command path and workdir",
                      hs->origin, h->line, point_names[p], h->command, WEXITSTATUS(status));
  return gs_err_set(err, GS_E_UNKNOWN, "%s:%u: %s hook '%s' failed (%s %d); the apply stops here",
                    hs->origin, h->line, point_names[p], h->command,
                    WIFEXITED(status) ? "exit" : "signal",
                    WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
}

int gs_layout_hooks_run(struct gs_err *err, const struct gs_layout_hooks *h,
                        enum gs_layout_hook_point point, char *const *env)
{
  if (!h)
    return 0;
  for (unsigned i = 0; i < h->n[point]; i++) {
    int rc = run_one(err, h, point, &h->hook[point][i], env);
    if (rc)
      return rc;
  }
  return 0;
}
