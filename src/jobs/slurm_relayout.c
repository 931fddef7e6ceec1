/* SPDX-License-Identifier: Apache-2.0 */
/* slurm_relayout.c: a node's new layout under a running Slurm cluster
 * (jobs/slurm.h, gs_jobs_slurm_relayout): drain, wait, apply, rewrite
 * gres.conf and the node line, restart the daemons, check that the controller
 * sees the new GPUs, resume, probe. Slurm is driven through its own commands
 * (scontrol, srun) and the admin's restart commands; the layout apply is the
 * caller's command line. Why each step: docs/slurm.md, "Changing a layout". */
#include "jobs/slurm.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define OUTPUT_MAX 65536 /* of one command's output, kept for parsing and messages */

static void say(const struct gs_jobs_relayout *r, const char *fmt, ...) GS_PRINTF(2, 3);
static void say(const struct gs_jobs_relayout *r, const char *fmt, ...)
{
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof(line), fmt, ap);
  va_end(ap);
  if (r->say)
    r->say(r->arg, line);
}

static double now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Reads the child's output until it closes or the deadline passes. */
static void collect(int fd, double deadline, char *out, size_t *used)
{
  for (;;) {
    struct pollfd p = {fd, POLLIN, 0};
    int wait_ms = (int)((deadline - now()) * 1000);
    ssize_t n;
    char buf[4096];
    if (wait_ms <= 0 || poll(&p, 1, wait_ms) <= 0)
      return;
    if ((n = read(fd, buf, sizeof(buf))) <= 0) {
      if (n < 0 && errno == EINTR)
        continue;
      return;
    }
    if (*used + (size_t)n < OUTPUT_MAX) {
      memcpy(out + *used, buf, (size_t)n);
      *used += (size_t)n;
    }
  }
}

/* Runs argv (PATH searched, no shell) with stdout and stderr captured into
 * out (NUL-terminated, OUTPUT_MAX); killed after timeout_s. *status: its exit
 * status, 128 + signal, or 124 after a timeout (as timeout(1)). */
static int run(struct gs_err *err, char *const *argv, unsigned timeout_s, char *out, int *status)
{
  double deadline = now() + timeout_s;
  int fds[2], st = 0;
  size_t used = 0;
  pid_t pid;
  if (pipe(fds) != 0)
    return gs_err_set(err, GS_E_IO, "cannot create a pipe: %s", strerror(errno));
  fflush(NULL);
  if ((pid = fork()) < 0) {
    close(fds[0]);
    close(fds[1]);
    return gs_err_set(err, GS_E_IO, "cannot fork: %s", strerror(errno));
  }
  if (pid == 0) {
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    close(fds[0]);
    close(fds[1]);
    execvp(argv[0], argv);
    dprintf(2, "cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
  }
  close(fds[1]);
  collect(fds[0], deadline, out, &used);
  out[used] = 0;
  close(fds[0]);
  /* Closing its output is not exiting: wait for that too, to the deadline. */
  while (waitpid(pid, &st, WNOHANG) == 0) {
    if (now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
      *status = 124;
      return 0;
    }
    usleep(20000);
  }
  *status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return 0;
}

/* Runs a step that must succeed; its output goes to the admin either way. */
static int step(struct gs_err *err, const struct gs_jobs_relayout *r, char *const *argv,
                const char *what, char *out)
{
  int status = 0, rc = run(err, argv, r->timeout_s, out, &status);
  if (rc)
    return rc;
  for (char *save = NULL, *line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
    say(r, "  %s", line);
  if (status != 0)
    return gs_err_set(err, GS_E_UNKNOWN, "%s failed (%s exited %d%s)", what, argv[0], status,
                      status == 124 ? ": timed out" : "");
  return 0;
}

static int shell(struct gs_err *err, const struct gs_jobs_relayout *r, const char *cmd,
                 const char *what, char *out)
{
  char *argv[] = {"/bin/sh", "-c", (char *)cmd, NULL};
  say(r, "%s: %s", what, cmd);
  return step(err, r, argv, what, out);
}

/* The node's "Key=value" from `scontrol -o show node` output. */
static void node_field(const char *text, const char *key, char *out, size_t size)
{
  size_t klen = strlen(key);
  const char *p = text;
  out[0] = 0;
  while ((p = strstr(p, key)) != NULL) {
    if ((p == text || p[-1] == ' ') && p[klen] == '=') {
      snprintf(out, size, "%.*s", (int)strcspn(p + klen + 1, " \n"), p + klen + 1);
      return;
    }
    p += klen;
  }
}

static int show_node(struct gs_err *err, const struct gs_jobs_relayout *r, char *out)
{
  char *argv[] = {(char *)r->scontrol, "-o", "show", "node", (char *)r->node, NULL};
  int status = 0, rc = run(err, argv, 30, out, &status);
  if (rc == 0 && status != 0)
    rc = gs_err_set(err, GS_E_UNKNOWN, "`%s -o show node %s` failed: %.200s", r->scontrol, r->node, out);
  return rc;
}

/* Polls the node until done(state, gres) says so, or the timeout. */
static int wait_node(struct gs_err *err, const struct gs_jobs_relayout *r, const char *what,
                     bool (*done)(const char *state, const char *gres, const void *arg), const void *arg)
{
  char *out = malloc(OUTPUT_MAX + 1), state[256], gres[1024];
  double deadline = now() + r->timeout_s;
  int rc = out ? 0 : gs_err_set(err, GS_E_NO_MEMORY, "out of memory");
  state[0] = gres[0] = 0;
  while (rc == 0) {
    if ((rc = show_node(err, r, out)) != 0)
      break;
    node_field(out, "State", state, sizeof(state));
    node_field(out, "Gres", gres, sizeof(gres));
    if (done(state, gres, arg))
      break;
    if (now() > deadline) {
      rc = gs_err_set(err, GS_E_UNKNOWN, "node %s: %s: still State=%s Gres=%s after %u s", r->node,
                      what, state, gres, r->timeout_s);
      break;
    }
    usleep(250000);
  }
  free(out);
  return rc;
}

/* Drained: DRAIN set, and neither a job nor its cleanup on the node. */
static bool drained(const char *state, const char *gres, const void *arg)
{
  (void)gres;
  (void)arg;
  return strstr(state, "DRAIN") && (strncmp(state, "IDLE", 4) == 0 || strncmp(state, "DOWN", 4) == 0) &&
         !strstr(state, "COMPLETING");
}

/* The Gres= words the node line has, as scontrol prints them minus "(S:0-1)". */
static bool same_gres(const char *shown, const char *want)
{
  char a[1024], *p = a;
  size_t n = 0;
  for (const char *s = shown; *s && n + 1 < sizeof(a); s++) {
    if (*s == '(') { /* socket affinity, not a count */
      s += strcspn(s, ")");
      if (!*s)
        break;
      continue;
    }
    a[n++] = *s;
  }
  a[n] = 0;
  /* Same words in any order: both lists are short. */
  if (strlen(a) != strlen(want))
    return false;
  for (char *save = NULL, *w = strtok_r(p, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
    size_t len = strlen(w);
    const char *q = want;
    bool found = false;
    for (; *q && !found; q += strcspn(q, ","), q += *q == ',')
      found = strncmp(q, w, len) == 0 && (q[len] == ',' || q[len] == 0);
    if (!found)
      return false;
  }
  return true;
}

/* Registered with the new Gres and answering (not DOWN, not INVAL). */
static bool registered(const char *state, const char *gres, const void *want)
{
  return same_gres(gres, want) && (strncmp(state, "IDLE", 4) == 0 || strncmp(state, "MIXED", 5) == 0 ||
                                   strncmp(state, "ALLOCATED", 9) == 0) &&
         !strstr(state, "NOT_RESPONDING") && !strstr(state, "INVAL");
}

/* gres.conf and the node line from the machine as it is now. */
static int write_files(struct gs_err *err, struct gs_backend *b, const struct gs_jobs_relayout *r)
{
  char *gres = NULL, *line = NULL;
  int rc = gs_jobs_slurm_text(err, b, NULL, 0, gs_plan_slurm_gres, &r->slurm, &gres);
  if (rc == 0)
    rc = gs_jobs_slurm_text(err, b, NULL, 0, gs_plan_slurm_node, &r->slurm, &line);
  if (rc == 0 && (rc = gs_file_write_atomic(err, r->gres_conf, gres, strlen(gres))) == 0)
    rc = gs_file_write_atomic(err, r->node_conf, line, strlen(line));
  if (rc == 0)
    say(r, "wrote %s and %s: %.*s", r->gres_conf, r->node_conf, (int)strcspn(line, "\n"), line);
  free(gres);
  free(line);
  return rc;
}

/* One job per type on the node; each must see a device of its type. */
static int probe(struct gs_err *err, const struct gs_jobs_relayout *r, const struct gs_jobs_slurm_dev *d,
                 unsigned n, char *out)
{
  char gres[GS_PLAN_SLURM_TYPE_SIZE + 16], time_limit[] = "--time=5";
  int rc = 0;
  for (unsigned i = 0; rc == 0 && i < n; i++) {
    bool seen = false, ok = false;
    int status = 0;
    for (unsigned j = 0; j < i && !seen; j++)
      seen = strcmp(d[j].d.type, d[i].d.type) == 0;
    if (seen)
      continue;
    snprintf(gres, sizeof(gres), "--gres=gpu:%s:1", d[i].d.type);
    char *argv[] = {(char *)r->srun, "--quiet", "-w", (char *)r->node, "-N1", "-n1", gres, time_limit,
                    "--job-name=gpuslice-probe", "sh", "-c", "echo \"probe=$CUDA_VISIBLE_DEVICES\"", NULL};
    const char *seen_uuid;
    if ((rc = run(err, argv, r->timeout_s, out, &status)) != 0)
      break;
    /* srun may say why it waits; the job's own line is marked. */
    seen_uuid = strstr(out, "probe=") ? strstr(out, "probe=") + 6 : "";
    for (unsigned j = 0; j < n && !ok; j++)
      ok = strcmp(d[j].d.type, d[i].d.type) == 0 && strncmp(d[j].uuid, seen_uuid, strlen(d[j].uuid)) == 0 &&
           strchr("\n", seen_uuid[strlen(d[j].uuid)]);
    if (status != 0 || !ok)
      rc = gs_err_set(err, GS_E_UNKNOWN, "probe %s on %s: %s (exit %d): %.300s", gres + 7, r->node,
                      status ? "failed" : "the job saw no device of that type", status, out);
    else
      say(r, "probe gpu:%s: %.*s", d[i].d.type, (int)strcspn(seen_uuid, "\n"), seen_uuid);
  }
  return rc;
}

int gs_jobs_slurm_resume(struct gs_err *err, struct gs_backend *b, const struct gs_jobs_relayout *r)
{
  struct gs_jobs_slurm_dev *d = NULL;
  char *out = malloc(OUTPUT_MAX + 1), want[1024], *line = NULL, node[256], state[] = "State=RESUME";
  char *argv[] = {(char *)r->scontrol, "update", node, state, NULL};
  const char *p;
  unsigned n = 0;
  int rc = out ? gs_jobs_slurm_devices(err, b, NULL, 0, &d, &n)
               : gs_err_set(err, GS_E_NO_MEMORY, "out of memory");
  if (rc == 0)
    rc = gs_jobs_slurm_text(err, b, NULL, 0, gs_plan_slurm_node, &r->slurm, &line);
  if (rc == 0) {
    p = strstr(line, " Gres=");
    snprintf(want, sizeof(want), "%.*s", p ? (int)strcspn(p + 6, " \n") : 0, p ? p + 6 : "");
    say(r, "waiting for the controller to see %s with Gres=%s", r->node, want);
    rc = wait_node(err, r, "the new GPUs", registered, want);
  }
  if (rc == 0) {
    snprintf(node, sizeof(node), "NodeName=%s", r->node);
    say(r, "resuming %s", r->node);
    if ((rc = step(err, r, argv, "resuming the node", out)) == 0)
      rc = probe(err, r, d, n, out);
  }
  free(line);
  free(d);
  free(out);
  return rc;
}

/* Once the restarted controller answers, every slurmd re-registers at once
 * (scontrol reconfigure). Until a node has, its jobs' new steps are refused
 * as busy and their srun waits for a wake-up that never comes (Slurm 22.05,
 * seen here with a step 0.5 s after the restart; docs/slurm.md). */
static int reregister(struct gs_err *err, const struct gs_jobs_relayout *r, char *out)
{
  char *ping[] = {(char *)r->scontrol, "ping", NULL}, *reconf[] = {(char *)r->scontrol, "reconfigure", NULL};
  double deadline = now() + r->timeout_s;
  int status = 0, rc;
  while ((rc = run(err, ping, 10, out, &status)) == 0 && (status != 0 || !strstr(out, "is UP"))) {
    if (now() > deadline)
      return gs_err_set(err, GS_E_UNKNOWN, "slurmctld did not come back in %u s: %.200s", r->timeout_s,
                        out);
    usleep(100000);
  }
  say(r, "asking every slurmd to register with the new controller");
  return rc ? rc : step(err, r, reconf, "scontrol reconfigure", out);
}

int gs_jobs_slurm_relayout(struct gs_err *err, struct gs_backend *b, const struct gs_jobs_relayout *r)
{
  char *out = malloc(OUTPUT_MAX + 1), node[256], reason[256], drain[] = "State=DRAIN";
  char *drain_argv[] = {(char *)r->scontrol, "update", node, drain, reason, NULL};
  bool is_drained = false;
  int rc;
  if (!out)
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory");
  snprintf(node, sizeof(node), "NodeName=%s", r->node);
  snprintf(reason, sizeof(reason), "Reason=gpuslice relayout to %s",
           r->slurm.config ? r->slurm.config : "a new layout");
  /* A config that cannot apply here must not cost the cluster a drained node. */
  say(r, "checking the layout");
  if ((rc = step(err, r, r->dry_run, "the layout's dry run", out)) != 0)
    goto done;
  say(r, "draining %s", r->node);
  if ((rc = step(err, r, drain_argv, "draining the node", out)) != 0)
    goto done;
  is_drained = true;
  say(r, "waiting for the jobs on %s to end", r->node);
  if ((rc = wait_node(err, r, "its jobs to end", drained, NULL)) != 0)
    goto done;
  say(r, "applying the layout");
  if ((rc = step(err, r, r->apply, "the layout apply", out)) != 0 || (rc = write_files(err, b, r)) != 0 ||
      (rc = shell(err, r, r->slurmd_restart, "restarting slurmd", out)) != 0)
    goto done;
  if (!r->ctld_restart) {
    say(r, "slurmctld must restart now: `scontrol reconfigure` cannot change the GPU count of a "
           "node with File= records, and a controller that keeps its old view hands out slices "
           "the node lost. Restart it (systemctl restart slurmctld), then run `gpuslice slurm "
           "resume` on %s (the node stays drained until then)", r->node);
    goto done;
  }
  if ((rc = shell(err, r, r->ctld_restart, "restarting slurmctld", out)) == 0 &&
      (rc = reregister(err, r, out)) == 0)
    rc = gs_jobs_slurm_resume(err, b, r);
done:
  if (rc && is_drained)
    say(r, "%s stays drained; fix the cause, then run relayout again (or `gpuslice slurm resume` "
           "once gres.conf and the node line match the GPUs)", r->node);
  free(out);
  return rc;
}
