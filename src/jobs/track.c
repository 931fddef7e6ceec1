/* SPDX-License-Identifier: Apache-2.0 */
/* track.c: every process a job starts, found and ended after it. A job gets
 * a cgroup v2 of its own where the machine lets us make one (a cgroup2
 * mount, ours to write: root on most machines, including the hybrid
 * v1/v2 ones where it sits at /sys/fs/cgroup/unified); otherwise its
 * runner becomes a child subreaper, so whatever the job forks, even after
 * setsid or a double fork, stays a descendant of the runner. When the job's
 * own process has ended, the leftovers get SIGTERM, then SIGKILL after a
 * grace period, and are waited for, before the caller hands its slice on.
 * Knows processes, not jobs' files or GPUs. */
#include "jobs/internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

const char *gs_jobs_track_name(const struct gs_jobs_track *t)
{
  static const char *const names[] = {"none", "cgroup", "subreaper"};
  return t && (unsigned)t->how < GS_NITEMS(names) ? names[t->how] : "none";
}

/* The cgroup2 mount point (first in /proc/self/mounts) and our cgroup's path
 * in it ("0::/path" in /proc/self/cgroup). */
static int cgroup2_self(char mount[PATH_MAX], char self[PATH_MAX])
{
  char line[PATH_MAX + 128], dev[64], mnt[PATH_MAX], type[32];
  FILE *f = fopen("/proc/self/mounts", "re");
  bool found = false;
  while (f && !found && fgets(line, sizeof(line), f))
    found = sscanf(line, "%63s %4095s %31s", dev, mnt, type) == 3 && strcmp(type, "cgroup2") == 0;
  if (f)
    fclose(f);
  if (!found || !(f = fopen("/proc/self/cgroup", "re")))
    return -1;
  found = false;
  while (!found && fgets(line, sizeof(line), f))
    if (strncmp(line, "0::", 3) == 0) {
      line[strcspn(line, "\n")] = 0;
      found = snprintf(self, PATH_MAX, "%s", line + 3) < PATH_MAX;
    }
  fclose(f);
  snprintf(mount, PATH_MAX, "%s", mnt);
  return found ? 0 : -1;
}

/* A cgroup of the job's own below ours: 0, or why not. */
static int make_cgroup(struct gs_err *err, const char *job, struct gs_jobs_track *t)
{
  char mount[PATH_MAX], self[PATH_MAX], procs[2 * PATH_MAX + 16];
  int n;
  if (cgroup2_self(mount, self) != 0)
    return gs_err_set(err, GS_E_NOT_SUPPORTED, "no cgroup v2 hierarchy is mounted");
  n = snprintf(t->cgroup, sizeof(t->cgroup), "%s%s/gpuslice-%s-%d", mount,
               strcmp(self, "/") ? self : "", job, (int)getpid());
  if (n < 0 || (size_t)n >= sizeof(t->cgroup) - 16)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "the job's cgroup path is too long");
  if (mkdir(t->cgroup, 0755) != 0)
    return gs_err_set(err, GS_E_NOT_SUPPORTED, "cannot create the cgroup %s: %s", t->cgroup,
                      strerror(errno));
  /* Moving a process needs write access to cgroup.procs here and where it
   * comes from (our own cgroup). */
  n = snprintf(procs, sizeof(procs), "%s%s/cgroup.procs", mount, strcmp(self, "/") ? self : "");
  if (n < 0 || (size_t)n >= sizeof(procs) || access(procs, W_OK) != 0) {
    rmdir(t->cgroup);
    return gs_err_set(err, GS_E_NOT_SUPPORTED, "cannot move processes out of %s: %s", procs,
                      strerror(errno));
  }
  return 0;
}

void gs__jobs_track_forget(const char *job, int tracker)
{
  char mount[PATH_MAX], self[PATH_MAX], dir[2 * PATH_MAX + 64], kill_path[2 * PATH_MAX + 80];
  int fd;
  if (cgroup2_self(mount, self) != 0)
    return;
  snprintf(dir, sizeof(dir), "%s%s/gpuslice-%s-%d", mount, strcmp(self, "/") ? self : "", job,
           tracker);
  snprintf(kill_path, sizeof(kill_path), "%s/cgroup.kill", dir);
  if ((fd = open(kill_path, O_WRONLY | O_CLOEXEC)) < 0)
    return;
  (void)!write(fd, "1", 1);
  close(fd);
  for (int tries = 0; tries < 100 && rmdir(dir) != 0 && errno == EBUSY; tries++)
    nanosleep(&(struct timespec){0, 10000000L}, NULL);
}

int gs_jobs_track_begin(struct gs_err *err, const char *job, struct gs_jobs_track *t)
{
  const char *want = getenv("GPUSLICE_JOB_TRACKING");
  struct gs_err why = {0};
  memset(t, 0, sizeof(*t));
  if (want && *want && strcmp(want, "auto") && strcmp(want, "cgroup") && strcmp(want, "subreaper"))
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "GPUSLICE_JOB_TRACKING=%.40s: expected auto, "
                      "cgroup or subreaper", want);
  /* Subreaper in both ways: orphans come to us, so we reap them, and with no
   * cgroup it is how they stay findable. */
  if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0)
    return gs_err_set(err, GS_E_NOT_SUPPORTED, "cannot become a child subreaper: %s",
                      strerror(errno));
  if (!want || strcmp(want, "subreaper") != 0) {
    if (make_cgroup(&why, job, t) == 0) {
      t->how = GS_JOBS_TRACK_CGROUP;
      return 0;
    }
    if (want && strcmp(want, "cgroup") == 0)
      return gs_err_set(err, why.code, "GPUSLICE_JOB_TRACKING=cgroup: %s", why.msg);
  }
  t->how = GS_JOBS_TRACK_SUBREAPER;
  return 0;
}

int gs__jobs_track_join(const struct gs_jobs_track *t)
{
  char path[PATH_MAX + 16];
  int fd, e = 0;
  if (!t || t->how != GS_JOBS_TRACK_CGROUP)
    return 0;
  snprintf(path, sizeof(path), "%s/cgroup.procs", t->cgroup);
  if ((fd = open(path, O_WRONLY | O_CLOEXEC)) < 0)
    return errno;
  if (write(fd, "0\n", 2) != 2)
    e = errno ? errno : EIO;
  close(fd);
  return e;
}

/* ---- finding what is left ---- */

struct pids {
  int *v;
  size_t n, cap;
};

static bool push(struct pids *p, int pid)
{
  if (p->n == p->cap) {
    size_t cap = p->cap ? 2 * p->cap : 64;
    int *v = realloc(p->v, cap * sizeof(*v));
    if (!v)
      return false;
    p->v = v, p->cap = cap;
  }
  p->v[p->n++] = pid;
  return true;
}

static int cgroup_members(const struct gs_jobs_track *t, struct pids *out)
{
  char path[PATH_MAX + 16], line[32];
  FILE *f;
  snprintf(path, sizeof(path), "%s/cgroup.procs", t->cgroup);
  if (!(f = fopen(path, "re")))
    return -1;
  while (fgets(line, sizeof(line), f))
    if (atoi(line) > 0 && !push(out, atoi(line))) {
      fclose(f);
      return -1;
    }
  fclose(f);
  return 0;
}

/* Every live descendant of ours, from each process's parent in /proc. */
static int descendants(struct pids *out)
{
  struct pids all = {0}, parent = {0};
  DIR *d = opendir("/proc");
  struct dirent *e;
  bool grew = true;
  while (d && (e = readdir(d)) != NULL) {
    char buf[512];
    const char *p;
    int pid = atoi(e->d_name), ppid;
    if (pid <= 0 || !(p = gs_proc_stat(pid, buf, sizeof(buf))) || p[1] == 'Z' ||
        sscanf(p, " %*c %d", &ppid) != 1)
      continue;
    if (!push(&all, pid) || !push(&parent, ppid))
      break;
  }
  if (d)
    closedir(d);
  if (!push(out, (int)getpid())) /* the root of the tree, dropped below */
    grew = false;
  while (grew) { /* a pass per generation; trees are shallow */
    grew = false;
    for (size_t i = 0; i < all.n; i++) {
      bool in = false, parent_in = false;
      for (size_t k = 0; k < out->n && !(in && parent_in); k++)
        in = in || out->v[k] == all.v[i], parent_in = parent_in || out->v[k] == parent.v[i];
      if (!in && parent_in)
        grew = push(out, all.v[i]);
    }
  }
  free(all.v);
  free(parent.v);
  memmove(out->v, out->v + 1, (out->n ? out->n - 1 : 0) * sizeof(*out->v));
  out->n = out->n ? out->n - 1 : 0;
  return 0;
}

static void reap_orphans(void)
{
  while (waitpid(-1, NULL, WNOHANG) > 0)
    ;
}

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Signals every leftover; in a cgroup SIGKILL is cgroup.kill where the
 * kernel has it (it also catches a process forking right now). */
static void signal_all(const struct gs_jobs_track *t, const struct pids *p, int sig)
{
  if (t->how == GS_JOBS_TRACK_CGROUP && sig == SIGKILL) {
    char path[PATH_MAX + 16];
    int fd;
    snprintf(path, sizeof(path), "%s/cgroup.kill", t->cgroup);
    if ((fd = open(path, O_WRONLY | O_CLOEXEC)) >= 0) {
      bool done = write(fd, "1", 1) == 1;
      close(fd);
      if (done)
        return;
    }
  }
  for (size_t i = 0; i < p->n; i++)
    kill(p->v[i], sig);
}

int gs_jobs_track_end(struct gs_err *err, struct gs_jobs_track *t, unsigned grace_ms,
                      unsigned *killed)
{
  double start = now_s(), give_up = start + grace_ms / 1000.0 + 30.0;
  int sig = SIGTERM, rc = 0;
  *killed = 0;
  if (!t || t->how == GS_JOBS_TRACK_NONE)
    return 0;
  for (bool first = true;; first = false) {
    struct pids p = {0};
    reap_orphans();
    if ((t->how == GS_JOBS_TRACK_CGROUP ? cgroup_members(t, &p) : descendants(&p)) != 0) {
      free(p.v);
      rc = gs_err_set(err, GS_E_IO, "cannot list the job's leftover processes");
      break;
    }
    if (first)
      *killed = (unsigned)p.n;
    if (p.n == 0) {
      free(p.v);
      break;
    }
    if (sig == SIGTERM && now_s() - start >= grace_ms / 1000.0)
      sig = SIGKILL;
    signal_all(t, &p, sig);
    free(p.v);
    if (now_s() > give_up) {
      rc = gs_err_set(err, GS_E_IN_USE, "the job's leftover processes would not die in %u s",
                      grace_ms / 1000 + 30);
      break;
    }
    nanosleep(&(struct timespec){0, 20000000L}, NULL);
  }
  /* Exited members hold the cgroup until reaped: reap, then remove it. */
  for (int tries = 0; t->how == GS_JOBS_TRACK_CGROUP && rc == 0 && tries < 100; tries++) {
    reap_orphans();
    if (rmdir(t->cgroup) == 0 || errno != EBUSY)
      break;
    nanosleep(&(struct timespec){0, 10000000L}, NULL);
  }
  return rc;
}
