/* SPDX-License-Identifier: Apache-2.0 */
/* pidfile.c: serve's pid file, so that a serve started after one that died
 * (SIGKILL, a crash) ends the workers it left, or says which it cannot end,
 * instead of failing on their ports for ever. <dir>/serve.lock is held
 * (flock) while serve runs: a live serve is refused by name. <dir>/serve.pid
 * lists serve's and each worker's pid with its start time (/proc/<pid>/stat),
 * so only a process that is still the one recorded is ever signalled, never
 * a reused pid. Both are opened and written through util's safe file helpers.
 * It knows pids, not workers' slots or GPUs. */
#include "serve/serve.h"
#include "backend/backend.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PIDFILE_MAX (1u << 20)
#define LIST_MAX 200 /* bytes of pids quoted in one message */

struct entry {
  int pid;
  uint64_t start;
};

struct gs_serve_pidfile {
  char *dir;
  int lockfd;
  struct entry self;
  struct entry *workers; /* by worker id; pid 0: none */
  size_t n;
};

static int path_in(char *out, size_t size, const char *dir, const char *name)
{
  return snprintf(out, size, "%s/%s", dir, name) < (int)size ? 0 : ENAMETOOLONG;
}

/* The directory, made 0700 if missing; it must pass util's directory
 * checks (the caller's or root's, writable by no one else), as what it
 * holds decides which pids we signal. */
static int check_dir(struct gs_err *err, const char *dir)
{
  char probe[4096], why[GS_ERR_MSG_SIZE];
  int rc;
  if (path_in(probe, sizeof(probe), dir, "serve.pid") != 0)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "serve state directory %s: path is too long "
                      "(give a shorter --state-dir)", dir);
  if ((rc = gs_file_make_parent(err, probe)) == 0 && (rc = gs_file_check_dir(err, dir)) == 0)
    return 0;
  snprintf(why, sizeof(why), "%s", err ? err->msg : "");
  return gs_err_set(err, rc, "serve state directory: %s (or give --state-dir)", why);
}

/* ---- reading and writing the file ---- */

/* Reads the previous serve's entries: its own (*self) and its workers'.
 * The file is opened by util's safe open: what another user could have
 * planted there (a link, a FIFO, another's file) is refused, not read. */
static int read_file(struct gs_err *err, const char *dir, struct entry *self,
                     struct entry **out, size_t *n)
{
  char path[4096], *text = NULL, *line, *save = NULL;
  size_t len = 0, cap = 0, lineno = 0;
  int rc;
  *out = NULL;
  *n = 0;
  if (path_in(path, sizeof(path), dir, "serve.pid") != 0)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "%s/serve.pid: path is too long", dir);
  rc = gs_file_read_private(err, path, PIDFILE_MAX, 0, &text, &len);
  if (rc == GS_E_NOT_FOUND) {
    gs_err_clear(err);
    return 0;
  }
  if (rc == GS_E_INVALID_ARGUMENT)
    return gs_err_set(err, GS_E_CORRUPT_STATE, "%s: larger than %u bytes; remove it", path,
                      PIDFILE_MAX);
  if (rc)
    return rc;
  for (line = strtok_r(text, "\n", &save); line && !rc; line = strtok_r(NULL, "\n", &save)) {
    struct entry e = {0};
    unsigned long long start;
    unsigned w;
    int used = 0;
    lineno++;
    if (lineno == 1 && strcmp(line, "gpuslice-serve 1") == 0)
      continue;
    if (lineno > 1 && sscanf(line, "serve %d %llu%n", &e.pid, &start, &used) == 2 &&
        !line[used] && e.pid > 0) {
      self->pid = e.pid, self->start = start;
      continue;
    }
    if (lineno > 1 && sscanf(line, "worker %u %d %llu%n", &w, &e.pid, &start, &used) == 3 &&
        !line[used] && e.pid > 0) {
      struct entry *more = *n < cap ? *out : realloc(*out, (cap = 2 * cap + 8) * sizeof(**out));
      if (!more) {
        rc = gs_err_set(err, GS_E_NO_MEMORY, "out of memory reading %s", path);
        break;
      }
      *out = more;
      (*out)[(*n)++] = (struct entry){e.pid, start};
      continue;
    }
    rc = gs_err_set(err, GS_E_CORRUPT_STATE,
                    "%s: line %zu is not the pid file's (\"%.40s\"); if no worker of an earlier "
                    "serve runs any more, remove the file", path, lineno, line);
  }
  free(text);
  return rc;
}

/* Replaces the file (gs_file_write_atomic). Best effort: a failure leaves
 * the last one written. */
static void write_file(const struct gs_serve_pidfile *pf)
{
  char path[4096], *text;
  size_t cap = 64 + 48 * (pf->n + 1), len;
  if (path_in(path, sizeof(path), pf->dir, "serve.pid") || !(text = malloc(cap)))
    return;
  len = (size_t)snprintf(text, cap, "gpuslice-serve 1\nserve %d %llu\n", pf->self.pid,
                         (unsigned long long)pf->self.start);
  for (size_t w = 0; w < pf->n; w++)
    if (pf->workers[w].pid > 0)
      len += (size_t)snprintf(text + len, cap - len, "worker %zu %d %llu\n", w,
                              pf->workers[w].pid, (unsigned long long)pf->workers[w].start);
  if (len < cap)
    gs_file_write_atomic(NULL, path, text, len);
  free(text);
}

/* ---- the previous serve's workers ---- */

/* A process to end: a recorded worker, or a member of its process group
 * seen while the worker was still itself (so the group was its own). */
struct victim {
  int pid, pgrp;
  uint64_t start;
};

static bool still(int pid, uint64_t start)
{
  return start && gs_proc_start(pid) == start;
}

static void append_pid(char *list, int pid, const char *more)
{
  size_t used = strlen(list);
  if (used < LIST_MAX)
    snprintf(list + used, LIST_MAX + 64 - used, "%s%d%s", used ? ", " : "", pid, more);
}

/* The uid a process runs as, from its /proc directory's owner. */
static unsigned proc_uid(int pid)
{
  char path[64];
  struct stat st;
  snprintf(path, sizeof(path), "/proc/%d", pid);
  return stat(path, &st) == 0 ? (unsigned)st.st_uid : 0;
}

static bool listed(const struct victim *v, size_t n, int pid, bool by_group)
{
  for (size_t i = 0; i < n; i++)
    if ((by_group ? v[i].pgrp : v[i].pid) == pid)
      return true;
  return false;
}

/* Appends to *v every live process whose group is one of groups' pgrp and
 * that is not in *v yet; false on no memory. */
static bool scan_groups(const struct victim *groups, size_t ng, struct victim **v, size_t *n)
{
  DIR *d;
  struct dirent *de;
  size_t cap = *n;
  bool ok = true;
  if (!ng)
    return true;
  d = opendir("/proc");
  while (ok && d && (de = readdir(d))) {
    char buf[1024], *end;
    const char *p;
    long pid = strtol(de->d_name, &end, 10);
    int pgrp;
    if (*end || pid <= 0 || !(p = gs_proc_stat((int)pid, buf, sizeof(buf))) ||
        sscanf(p, " %*c %*d %d", &pgrp) != 1 || !listed(groups, ng, pgrp, true) ||
        listed(*v, *n, (int)pid, false))
      continue;
    if (*n == cap) {
      struct victim *more = realloc(*v, (cap = 2 * cap + 16) * sizeof(*more));
      if (!(ok = more != NULL))
        break;
      *v = more;
    }
    (*v)[*n] = (struct victim){(int)pid, pgrp, gs_proc_start((int)pid)};
    *n += (*v)[*n].start != 0; /* a zombie is gone already */
  }
  if (d)
    closedir(d);
  return ok;
}

/* sig to each victim still itself, and to a worker's whole group while the
 * worker is; a refusal (EPERM: another uid) is named in denied. */
static void signal_all(struct victim *v, size_t n, int sig, char *denied)
{
  for (size_t i = 0; i < n; i++) {
    char uid[32];
    if (!v[i].pid || !still(v[i].pid, v[i].start))
      continue;
    if (v[i].pid == v[i].pgrp)
      kill(-v[i].pid, sig);
    if (kill(v[i].pid, sig) != 0 && errno == EPERM) {
      snprintf(uid, sizeof(uid), " (uid %u)", proc_uid(v[i].pid));
      append_pid(denied, v[i].pid, uid);
      v[i].pid = 0; /* named, not waited for */
    }
  }
}

/* Waits up to ms for every victim to be gone (its new parent reaps it). */
static bool wait_gone(const struct victim *v, size_t n, unsigned ms)
{
  struct timespec tick = {0, 20 * 1000 * 1000};
  for (unsigned waited = 0;; waited += 20) {
    size_t left = 0;
    for (size_t i = 0; i < n; i++)
      left += v[i].pid && still(v[i].pid, v[i].start);
    if (!left)
      return true;
    if (waited >= ms)
      return false;
    nanosleep(&tick, NULL);
  }
}

/* The victims: each recorded worker still itself, and the members of its
 * group seen while it still was (checked again after the scan). A worker
 * that is gone already is not one; what remains of its group is named
 * later, never signalled: its pid may since be another group's id. */
static bool victims(const struct entry *w, size_t nw, struct victim **v, size_t *n)
{
  struct victim *lead = nw ? calloc(nw, sizeof(*lead)) : NULL;
  size_t nl = 0;
  bool ok;
  *v = NULL;
  *n = 0;
  if (nw && !lead)
    return false;
  for (size_t i = 0; i < nw; i++)
    if (still(w[i].pid, w[i].start) && !listed(lead, nl, w[i].pid, false))
      lead[nl++] = (struct victim){w[i].pid, w[i].pid, w[i].start};
  if (!nl) {
    free(lead);
    return true;
  }
  if ((ok = (*v = malloc(nl * sizeof(**v))) != NULL)) {
    memcpy(*v, lead, nl * sizeof(*lead));
    *n = nl;
    ok = scan_groups(lead, nl, v, n);
  }
  for (size_t i = nl; ok && i < *n; i++)
    for (size_t k = 0; k < nl; k++)
      if ((*v)[i].pgrp == lead[k].pid && !still(lead[k].pid, lead[k].start))
        (*v)[i].pid = 0;
  free(lead);
  return ok;
}

/* Ends what the previous serve left: SIGTERM, SIGKILL after grace_ms.
 * *ended: the workers of it that were still running. */
static int end_workers(struct gs_err *err, const char *dir, const struct entry *w, size_t nw,
                       unsigned grace_ms, size_t *ended)
{
  char denied[LIST_MAX + 64] = "", left[LIST_MAX + 64] = "";
  struct victim *v = NULL, *rest = NULL, *all = NULL;
  size_t n = 0, nrest = 0, nall = 0;
  int rc = 0;
  if (!victims(w, nw, &v, &n))
    goto nomem;
  for (size_t i = 0; i < n; i++)
    *ended += v[i].pid == v[i].pgrp;
  signal_all(v, n, SIGTERM, denied);
  if (!wait_gone(v, n, grace_ms)) {
    signal_all(v, n, SIGKILL, denied);
    wait_gone(v, n, 2000);
  }
  for (size_t i = 0; i < n; i++)
    if (v[i].pid && still(v[i].pid, v[i].start))
      append_pid(left, v[i].pid, " (alive after SIGKILL)");
  /* Anything else still in a recorded worker's group; not when its pid now
   * names another process: the group then is that one's. */
  if (nw && !(all = calloc(nw, sizeof(*all))))
    goto nomem;
  for (size_t i = 0; i < nw; i++) {
    uint64_t now = gs_proc_start(w[i].pid);
    if (!now || now == w[i].start)
      all[nall++] = (struct victim){w[i].pid, w[i].pid, w[i].start};
  }
  /* Members that got the group's signal may take a moment to go. */
  for (unsigned tries = 0; tries < 50; tries++) {
    struct timespec tick = {0, 20 * 1000 * 1000};
    nrest = 0;
    if (!scan_groups(all, nall, &rest, &nrest))
      goto nomem;
    if (!nrest)
      break;
    nanosleep(&tick, NULL);
  }
  for (size_t i = 0; i < nrest; i++)
    if (!listed(v, n, rest[i].pid, false))
      append_pid(left, rest[i].pid, "");
  if (denied[0])
    rc = gs_err_set(err, GS_E_UNKNOWN,
                    "workers of an earlier serve still run and uid %u may not end them: pids %s; "
                    "end them as their user or root (kill PID), then start serve again",
                    (unsigned)geteuid(), denied);
  else if (left[0])
    rc = gs_err_set(err, GS_E_UNKNOWN,
                    "processes of an earlier serve's workers still run: pids %s; they may hold "
                    "the workers' ports or GPUs: end them (kill PID), then start serve again "
                    "(pid file: %s/serve.pid)", left, dir);
  goto out;
nomem:
  rc = gs_err_set(err, GS_E_NO_MEMORY, "out of memory looking for an earlier serve's workers");
out:
  free(v);
  free(rest);
  free(all);
  return rc;
}

/* ---- open and close ---- */

static int another(struct gs_err *err, const char *dir, int pid)
{
  return gs_err_set(err, GS_E_UNKNOWN,
                    "another gpuslice serve (pid %d) runs with the state directory %s: stop it "
                    "first (kill %d), or give this one its own --state-dir", pid, dir, pid);
}

/* The lock is another serve's: name it from the file when it can. */
static int held(struct gs_err *err, const char *dir)
{
  struct entry self = {0}, *w = NULL;
  size_t n = 0;
  int rc = read_file(NULL, dir, &self, &w, &n);
  free(w);
  if (!rc && self.pid && still(self.pid, self.start))
    return another(err, dir, self.pid);
  return gs_err_set(err, GS_E_UNKNOWN,
                    "another gpuslice serve holds %s/serve.lock: stop it first, or give this one "
                    "its own --state-dir", dir);
}

static int take(struct gs_err *err, struct gs_serve_pidfile *pf, unsigned grace_ms,
                size_t *ended)
{
  struct entry old = {0}, *w = NULL;
  char lock[4096];
  size_t n = 0;
  int rc;
  if ((rc = check_dir(err, pf->dir)) != 0)
    return rc;
  if (path_in(lock, sizeof(lock), pf->dir, "serve.lock") != 0)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "%s/serve.lock: path is too long", pf->dir);
  /* Not gs_file_lock: a held lock is another serve, named at once (held). */
  if ((rc = gs_file_open_private(err, lock, GS_FILE_CREATE | GS_FILE_OWNER_ONLY, &pf->lockfd,
                                 NULL)) != 0)
    return rc;
  if (flock(pf->lockfd, LOCK_EX | LOCK_NB) != 0)
    return errno == EWOULDBLOCK ? held(err, pf->dir)
                                : gs_err_set(err, GS_E_IO, "%s/serve.lock: flock: %s", pf->dir,
                                             strerror(errno));
  if ((rc = read_file(err, pf->dir, &old, &w, &n)) != 0)
    return rc;
  /* Held no lock yet alive: the lock file was removed under it. */
  if (old.pid && old.pid != getpid() && still(old.pid, old.start))
    rc = another(err, pf->dir, old.pid);
  else
    rc = end_workers(err, pf->dir, w, n, grace_ms, ended);
  free(w);
  return rc;
}

int gs_serve_pidfile_open(struct gs_err *err, const char *dir, unsigned grace_ms,
                          struct gs_serve_pidfile **out, size_t *ended)
{
  struct gs_serve_pidfile *pf = calloc(1, sizeof(*pf));
  int rc;
  *out = NULL;
  *ended = 0;
  if (!pf || !(pf->dir = strdup(dir))) {
    free(pf);
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory");
  }
  pf->lockfd = -1;
  if ((rc = take(err, pf, grace_ms, ended)) != 0) {
    if (pf->lockfd >= 0)
      close(pf->lockfd);
    free(pf->dir);
    free(pf);
    return rc;
  }
  pf->self = (struct entry){getpid(), gs_proc_start(getpid())};
  write_file(pf);
  *out = pf;
  return 0;
}

void gs_serve_pidfile_set(struct gs_serve_pidfile *pf, size_t w, int pid)
{
  if (!pf)
    return;
  if (w >= pf->n) {
    struct entry *more = realloc(pf->workers, (w + 8) * sizeof(*more));
    if (!more)
      return; /* unrecorded: a restart after a crash would miss this one */
    memset(more + pf->n, 0, (w + 8 - pf->n) * sizeof(*more));
    pf->workers = more;
    pf->n = w + 8;
  }
  pf->workers[w] = (struct entry){pid, pid > 0 ? gs_proc_start(pid) : 0};
  write_file(pf);
}

void gs_serve_pidfile_close(struct gs_serve_pidfile *pf)
{
  char path[4096];
  if (!pf)
    return;
  if (!path_in(path, sizeof(path), pf->dir, "serve.pid"))
    unlink(path);
  close(pf->lockfd); /* the lock goes with it */
  free(pf->workers);
  free(pf->dir);
  free(pf);
}

char *gs_serve_default_state_dir(struct gs_err *err, struct gs_backend *b)
{
  const char *emu = gs_backend_state_base(b);
  char base[PATH_MAX], *dir = NULL;
  int n;
  if (emu)
    n = asprintf(&dir, "%s.serve", emu);
  else if (gs_file_state_dir(err, "give --state-dir DIR", base) != 0)
    return NULL;
  else
    n = asprintf(&dir, "%s/serve", base);
  if (n < 0)
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory"), NULL;
  return dir;
}
