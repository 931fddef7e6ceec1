/* SPDX-License-Identifier: Apache-2.0 */
/* queue.c: the queue that runs the spool's jobs (`gpuslice queue run`): a
 * scheduling pass starts queued jobs in fair order, each under a shepherd
 * process that outlives the queue, runs the job as the user who owns its
 * file, records RUNNING, ends every process the job left, records DONE,
 * and only then releases the slice. A job is started at most once: its
 * claim names it before its shepherd runs, a RUNNING job counts as running
 * only while its shepherd (pid and start time) lives and holds its claim,
 * and one that does not is marked LOST, never rerun. Files that are not
 * valid jobs are moved aside, one line each, and the rest goes on. Each
 * pass writes why every job left queued waits into its file, and tells the
 * caller what it saw happen (submitted, ended). */
#include "jobs/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- the shepherd: one per started job, outliving the queue ---- */

struct running_args {
  const struct gs_jobs_claim *c;
  int pid;
  uint64_t start;
  bool moved;    /* the job was QUEUED and is now ours */
};

static bool mark_running(struct gs_jobs_job *j, void *arg)
{
  struct running_args *a = arg;
  if (j->state != GS_JOBS_QUEUED)
    return false;
  a->moved = true;
  j->state = GS_JOBS_RUNNING;
  j->started = gs__jobs_now();
  j->waits = GS_JOBS_WAIT_NONE;
  j->reason[0] = 0;
  j->gpu = a->c->gpu;
  snprintf(j->slice_uuid, sizeof(j->slice_uuid), "%s", a->c->uuid);
  snprintf(j->slice_profile, sizeof(j->slice_profile), "%s", a->c->profile);
  j->shepherd_pid = a->pid;
  j->shepherd_start = a->start;
  return true;
}

static bool mark_pid(struct gs_jobs_job *j, void *arg)
{
  j->job_pid = *(const int *)arg;
  return true;
}

struct done_args {
  int status, sig;
  unsigned leftovers;
  const char *tracking, *reason;
};

static bool mark_done(struct gs_jobs_job *j, void *arg)
{
  const struct done_args *a = arg;
  j->state = GS_JOBS_DONE;
  j->ended = gs__jobs_now();
  j->exit_status = a->status;
  j->signal = a->sig;
  j->leftovers = a->leftovers;
  snprintf(j->tracking, sizeof(j->tracking), "%s", a->tracking ? a->tracking : "");
  snprintf(j->reason, sizeof(j->reason), "%s", a->reason ? a->reason : "");
  return true;
}

/* The job's user in the environment it gets (the shepherd's own: it is a
 * process of its own), as login does. */
static void account_env(const struct gs__jobs_account *as)
{
  if (!as)
    return;
  setenv("HOME", as->home, 1);
  setenv("USER", as->name, 1);
  setenv("LOGNAME", as->name, 1);
  setenv("SHELL", as->shell, 1);
}

/* Spawns the job tracked, waits for it, then ends what it left. */
static int run_tracked(struct gs_err *err, struct gs_backend *b, const char *dir,
                       struct gs_jobs_job *j, struct gs_jobs_claim *c, const struct gs__jobs_spawn *sp,
                       char **env, unsigned grace_ms, struct done_args *da)
{
  struct gs_jobs_track *t = (struct gs_jobs_track *)sp->track;
  pid_t pid = 0;
  int rc, rc2;
  if ((rc = gs_jobs_track_begin(err, j->id, t)) != 0)
    return rc;
  da->tracking = gs_jobs_track_name(t);
  if ((rc = gs__jobs_spawn(err, j->argv, env, sp, &pid)) == 0) {
    gs__jobs_edit(NULL, dir, j->id, mark_pid, &(int){(int)pid});
    gs_jobs_claim_started(NULL, b, dir, c, pid);
    rc = gs_jobs_wait(err, pid, &da->status, &da->sig);
  }
  /* Even when the spawn failed: a cgroup made for it goes. */
  rc2 = gs_jobs_track_end(rc ? NULL : err, t, grace_ms, &da->leftovers);
  return rc ? rc : rc2;
}

/* Runs job j on claim c as `as` (NULL: as we are); its exit status goes to
 * the job file. */
static int shepherd(const struct gs_jobs_queue_opts *o, const char *dir, struct gs_jobs_job *j,
                    struct gs_jobs_claim *c, const struct gs__jobs_account *as)
{
  struct running_args ra = {c, (int)getpid(), gs_proc_start((int)getpid()), false};
  struct done_args da = {127, 0, 0, NULL, NULL};
  struct gs_jobs_track track;
  struct gs__jobs_spawn sp = {.stdin_fd = -1, .track = &track, .as = as, .new_session = true};
  struct gs_backend *b = NULL;
  struct gs_err err = {0};
  char log[PATH_MAX], **env = NULL;
  int rc;
  if ((rc = gs_backend_open(&err, o->cfg, &b)) != 0 ||
      (rc = gs__jobs_edit(&err, dir, j->id, mark_running, &ra)) != 0)
    goto out;
  if (!ra.moved) { /* started before, or no longer queued: never run a job twice */
    gs_jobs_release(NULL, b, dir, c);
    gs_backend_close(b);
    return 1;
  }
  gs_jobs_log_path(dir, j->id, log);
  sp.log_path = log;
  account_env(as);
  if (!(env = gs_jobs_env(c, &j->req, dir))) {
    rc = gs_err_set(&err, GS_E_NO_MEMORY, "out of memory building the environment");
    goto out;
  }
  if (c->mode == GS_JOBS_MPS) {
    struct gs_jobs_mps m;
    if ((rc = gs_jobs_mps_start(&err, b, dir, c->gpu, c->uuid, &m)) != 0)
      goto out;
  }
  rc = run_tracked(&err, b, dir, j, c, &sp, env, o->grace_ms ? o->grace_ms : 5000, &da);
out:
  gs_jobs_strv_free(env);
  if (rc)
    da.reason = err.msg;
  /* DONE before the release, and both after the leftovers are gone: the
   * queue must never see the slice free while the job still counts as
   * running, or while anything of it still runs on the slice. */
  gs__jobs_edit(NULL, dir, j->id, mark_done, &da);
  if (b)
    gs_jobs_release(NULL, b, dir, c);
  gs_backend_close(b);
  return rc ? 1 : 0;
}

/* The queue's own lock, closed in its shepherds so a restarted queue can take it. */
static int runner_lock_fd = -1;

/* Forks the shepherd of j, hands it the claim, then lets it go. The
 * shepherd waits for the go byte: if the queue dies first, it sees EOF and
 * exits without running anything (the claim then dies with the queue). */
static int start_shepherd(struct gs_err *err, struct gs_backend *b, const char *dir,
                          const struct gs_jobs_queue_opts *o, struct gs_jobs_job *j,
                          struct gs_jobs_claim *c, const struct gs__jobs_account *as)
{
  int go[2], rc;
  char byte = 1;
  pid_t pid;
  if (pipe2(go, O_CLOEXEC) != 0)
    return gs_err_set(err, GS_E_IO, "cannot create a pipe: %s", strerror(errno));
  fflush(NULL);
  if ((pid = fork()) < 0) {
    close(go[0]);
    close(go[1]);
    return gs_err_set(err, GS_E_IO, "cannot fork a shepherd: %s", strerror(errno));
  }
  if (pid == 0) {
    ssize_t n;
    close(go[1]);
    if (runner_lock_fd >= 0) /* the lock is the queue's, not its shepherds' */
      close(runner_lock_fd);
    setsid(); /* the queue's terminal and signals are not the job's */
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    do
      n = read(go[0], &byte, 1);
    while (n < 0 && errno == EINTR);
    if (n != 1)
      _exit(0);
    /* The queue adopted the claim for us after the fork: match its record. */
    c->owner_pid = (int)getpid();
    c->owner_start = gs_proc_start(c->owner_pid);
    _exit(shepherd(o, dir, j, c, as));
  }
  close(go[0]);
  rc = gs_jobs_claim_adopt(err, dir, c, pid);
  if (rc == 0 && write(go[1], &byte, 1) != 1)
    rc = gs_err_set(err, GS_E_IO, "cannot start the shepherd of job %s", j->id);
  close(go[1]);
  if (rc)
    gs_jobs_release(NULL, b, dir, c);
  return rc;
}

/* ---- the scheduling pass ---- */

struct user {
  char name[GS_JOBS_USER_SIZE];
  unsigned running;
  double last_start;
  int next;         /* index of the user's oldest queued job, -1: none */
  bool blocked;     /* no slice for its next job in this pass */
};

static struct user *user_of(struct user *u, unsigned *nu, const char *name)
{
  for (unsigned i = 0; i < *nu; i++)
    if (strcmp(u[i].name, name) == 0)
      return &u[i];
  snprintf(u[*nu].name, sizeof(u[*nu].name), "%s", name);
  u[*nu].next = -1;
  return &u[(*nu)++];
}

static bool has_claim(const struct gs_jobs_claim *c, unsigned nc, const char *job)
{
  for (unsigned i = 0; i < nc; i++)
    if (strcmp(c[i].job, job) == 0)
      return true;
  return false;
}

/* A RUNNING job runs while its shepherd, that very process (pid and start
 * time), lives and holds the job's claim: a job file names any pid it
 * likes (it is its owner's to write), a claim only its runner writes. */
static bool shepherd_holds(const struct gs_jobs_job *j, const struct gs_jobs_claim *c, unsigned nc)
{
  if (j->shepherd_pid <= 0 || !j->shepherd_start ||
      !gs__jobs_alive(j->shepherd_pid, j->shepherd_start))
    return false;
  for (unsigned i = 0; i < nc; i++)
    if (strcmp(c[i].job, j->id) == 0 && c[i].owner_pid == j->shepherd_pid &&
        c[i].owner_start == j->shepherd_start)
      return true;
  return false;
}

static bool mark_lost(struct gs_jobs_job *j, void *arg)
{
  const struct gs_jobs_job *seen = arg;
  /* Still as the pass saw it: not ended or restarted since. */
  if (j->state != GS_JOBS_RUNNING || j->shepherd_pid != seen->shepherd_pid ||
      j->shepherd_start != seen->shepherd_start)
    return false;
  j->state = GS_JOBS_LOST;
  j->ended = gs__jobs_now();
  j->exit_status = -1;
  snprintf(j->reason, sizeof(j->reason), "its shepherd (pid %d) died or no longer holds its "
           "slice while the job ran; it was not rerun (resubmit it)", j->shepherd_pid);
  return true;
}

static bool mark_refused(struct gs_jobs_job *j, void *arg)
{
  if (j->state != GS_JOBS_QUEUED)
    return false;
  j->state = GS_JOBS_REFUSED;
  j->ended = gs__jobs_now();
  j->exit_status = -1;
  snprintf(j->reason, sizeof(j->reason), "%s", (const char *)arg);
  return true;
}

/* ---- what this runner has said and done (one runner per process) ---- */

#define MEMO_MAX 1024
struct memo {
  unsigned n;
  char name[MEMO_MAX][GS_JOBS_ID_SIZE + 8];
};
static struct memo told, handed; /* files reported; jobs handed to a shepherd */

static bool memo_has(const struct memo *m, const char *name)
{
  for (unsigned i = 0; i < m->n; i++)
    if (strcmp(m->name[i], name) == 0)
      return true;
  return false;
}

static void memo_add(struct memo *m, const char *name)
{
  if (m->n < MEMO_MAX && !memo_has(m, name))
    snprintf(m->name[m->n++], sizeof(m->name[0]), "%s", name);
}

/* Logs `what` of file `name` (a job id or a file name), once per runner
 * when `once`. */
static void tell(const char *name, const char *what, const char *why, bool once)
{
  static struct gs_jobs_job j; /* large: kept off the stack */
  if (once && memo_has(&told, name))
    return;
  if (once)
    memo_add(&told, name);
  memset(&j, 0, sizeof(j));
  snprintf(j.id, sizeof(j.id), "%.*s", (int)sizeof(j.id) - 1, name);
  snprintf(j.reason, sizeof(j.reason), "%s", why);
  gs__jobs_event(&j, what);
}

struct screen {
  const char *dir;
};

/* Moves a file that must not run aside to queue/bad/, saying so in one
 * line; one that cannot be moved (another user's, for a user's runner) is
 * told once and left alone. */
static void set_aside(const struct screen *sc, const char *name, const char *why)
{
  char moved[PATH_MAX], line[2 * PATH_MAX + GS_ERR_MSG_SIZE];
  struct gs_err e = {0};
  if (gs_jobs_set_aside(&e, sc->dir, name, moved) == 0) {
    snprintf(line, sizeof(line), "%s; moved to %s", why, moved);
    tell(name, "set aside", line, false);
  } else {
    snprintf(line, sizeof(line), "%s; %s: move it away", why, e.msg);
    tell(name, "not a job", line, true);
  }
}

static void foreign(const char *name, unsigned owner)
{
  char why[GS_ERR_MSG_SIZE];
  snprintf(why, sizeof(why), "not started: it is uid %u's job and this runner (uid %u) starts "
           "only its own user's; root's `gpuslice queue run` starts every user's", owner,
           (unsigned)geteuid());
  tell(name, "skipped", why, true);
}

/* gs_jobs_list's note: another user's private job, or a file that is not a job. */
static void on_note(void *arg, const char *name, const struct gs_err *why)
{
  const struct screen *sc = arg;
  char path[PATH_MAX];
  struct stat st;
  if (why->code != GS_E_NO_PERMISSION) {
    set_aside(sc, name, why->msg);
    return;
  }
  snprintf(path, sizeof(path), "%s/queue/%s", sc->dir, name);
  foreign(name, lstat(path, &st) == 0 ? (unsigned)st.st_uid : (unsigned)-1);
}

/* Leaves out of this pass (locally CANCELLED, never written) the jobs this
 * runner must not start: another user's (for a user's runner), and a job
 * handed to a shepherd that never recorded it running (so nothing restarts
 * in a loop). A file others may write or of a uid that is no account never
 * gets here: reading it failed (read_job), and on_note set it aside. */
static void screen(const struct screen *sc, struct gs_jobs_job *jobs, unsigned n,
                   const struct gs_jobs_claim *c, unsigned nc)
{
  for (unsigned i = 0; i < n; i++) {
    struct gs_jobs_job *j = &jobs[i];
    char name[GS_JOBS_ID_SIZE + 8], why[PATH_MAX + 2 * GS_ERR_MSG_SIZE] = "";
    snprintf(name, sizeof(name), "%s.json", j->id);
    if (geteuid() != 0 && j->owner != (unsigned)geteuid())
      foreign(name, j->owner);
    else if (j->state == GS_JOBS_QUEUED && !has_claim(c, nc, j->id) && memo_has(&handed, j->id))
      snprintf(why, sizeof(why), "%s/queue/%s: handed to a shepherd that never recorded it "
               "running (%s)", sc->dir, name,
               j->reason[0] && !j->waits ? j->reason : "no reason recorded");
    else
      continue;
    if (why[0])
      set_aside(sc, name, why);
    j->state = GS_JOBS_CANCELLED;
  }
}

/* Fills the users' running counts and oldest queued jobs; marks dead
 * shepherds' jobs LOST. Returns the number of jobs queued, running, or
 * holding a claim still. */
static unsigned tally(const char *dir, struct gs_jobs_job *jobs,
                      unsigned n, const struct gs_jobs_claim *c, unsigned nc, struct user *u,
                      unsigned *nu, unsigned *running)
{
  unsigned active = 0;
  for (unsigned i = 0; i < n; i++) {
    struct gs_jobs_job *j = &jobs[i];
    struct user *us;
    if (j->state == GS_JOBS_RUNNING && !shepherd_holds(j, c, nc) &&
        gs__jobs_edit(NULL, dir, j->id, mark_lost, j) == 0) {
      j->state = GS_JOBS_LOST;
      gs__jobs_event(j, "lost");
    }
    us = user_of(u, nu, j->user);
    if (j->started > us->last_start)
      us->last_start = j->started;
    if (j->state != GS_JOBS_QUEUED && j->state != GS_JOBS_RUNNING) {
      active += has_claim(c, nc, j->id); /* finished, its slice not yet released */
      continue;
    }
    active++;
    if (j->state == GS_JOBS_RUNNING || has_claim(c, nc, j->id)) {
      us->running++; /* a queued job with a live claim is being started by a shepherd */
      (*running)++;
    } else if (us->next < 0) {
      us->next = (int)i;
    }
  }
  return active;
}

/* The user to serve next: fewest running, then least recently started, then
 * the oldest waiting job. NULL when no user may start anything. */
static struct user *fairest(struct user *u, unsigned nu, const struct gs_jobs_queue_opts *o)
{
  struct user *best = NULL;
  for (unsigned i = 0; i < nu; i++) {
    struct user *x = &u[i];
    if (x->next < 0 || x->blocked || (o->max_per_user && x->running >= o->max_per_user))
      continue;
    if (!best || x->running < best->running ||
        (x->running == best->running &&
         (x->last_start < best->last_start ||
          (x->last_start == best->last_start && x->next < best->next))))
      best = x;
  }
  return best;
}

/* The user's next queued job after index i, or -1. */
static int next_queued(const struct gs_jobs_job *jobs, unsigned n, const struct gs_jobs_claim *c,
                       unsigned nc, const char *user, int i)
{
  for (unsigned k = (unsigned)i + 1; k < n; k++)
    if (jobs[k].state == GS_JOBS_QUEUED && strcmp(jobs[k].user, user) == 0 &&
        !has_claim(c, nc, jobs[k].id))
      return (int)k;
  return -1;
}

static bool same_request(const struct gs_jobs_request *a, const struct gs_jobs_request *b)
{
  return a->mode == b->mode && strcmp(a->profile, b->profile) == 0 &&
         a->memory_mib == b->memory_mib && a->create == b->create && a->gpu == b->gpu;
}

/* A blocked user's waiting job that asks for the same as j, or NULL. */
static const struct gs_jobs_job *waits_behind(const struct gs_jobs_job *jobs,
                                              const struct user *u, unsigned nu,
                                              const struct gs_jobs_job *j)
{
  for (unsigned i = 0; i < nu; i++)
    if (u[i].blocked && u[i].next >= 0 && same_request(&jobs[u[i].next].req, &j->req))
      return &jobs[u[i].next];
  return NULL;
}

/* ---- why a queued job waits ---- */

/* Why job i of a pass waits (the pass's array, as jobs[]). */
struct wait {
  enum gs_jobs_wait why;
  char reason[GS_ERR_MSG_SIZE];
};

static void GS_PRINTF(3, 4) wait_is(struct wait *w, enum gs_jobs_wait why, const char *fmt, ...)
{
  va_list ap;
  w->why = why;
  va_start(ap, fmt);
  vsnprintf(w->reason, sizeof(w->reason), fmt, ap);
  va_end(ap);
}

/* Why each job left queued that the pass did not try waits: no slice on
 * the layout (as found when last tried: that outlasts any other reason),
 * its user's limit, the queue's, or an older job of its user that waits. */
static void explain(const struct gs_jobs_job *jobs, unsigned n, const struct gs_jobs_claim *c,
                    unsigned nc, struct user *u, unsigned *nu, const struct gs_jobs_queue_opts *o,
                    unsigned running, struct wait *w)
{
  for (unsigned i = 0; i < n; i++) {
    const struct gs_jobs_job *j = &jobs[i];
    const struct user *us;
    if (j->state != GS_JOBS_QUEUED || w[i].why || has_claim(c, nc, j->id))
      continue;
    us = user_of(u, nu, j->user);
    if (j->waits == GS_JOBS_WAIT_LAYOUT)
      wait_is(&w[i], GS_JOBS_WAIT_LAYOUT, "%s", j->reason);
    else if (o->max_per_user && us->running >= o->max_per_user)
      wait_is(&w[i], GS_JOBS_WAIT_USER_LIMIT, "user limit %u reached: %s runs %u job%s "
              "(--max-per-user %u)", o->max_per_user, us->name, us->running,
              us->running == 1 ? "" : "s", o->max_per_user);
    else if (o->max_running && running >= o->max_running)
      wait_is(&w[i], GS_JOBS_WAIT_QUEUE_LIMIT, "queue limit %u reached: %u jobs run "
              "(--max-running %u)", o->max_running, running, o->max_running);
    else if (us->blocked && us->next >= 0 && (unsigned)us->next != i)
      wait_is(&w[i], GS_JOBS_WAIT_TURN, "behind %s, an older job of %s's (a user's jobs start "
              "in order), which waits: %.300s", jobs[us->next].id, us->name,
              w[us->next].reason);
  }
}

struct wait_edit {
  const struct wait *w;
  bool changed;
};

static bool mark_wait(struct gs_jobs_job *j, void *arg)
{
  struct wait_edit *e = arg;
  if (j->state != GS_JOBS_QUEUED || (j->waits == e->w->why && !strcmp(j->reason, e->w->reason)))
    return false;
  j->waits = e->w->why;
  snprintf(j->reason, sizeof(j->reason), "%s", e->w->reason);
  return e->changed = true;
}

/* Writes each queued job's wait into its file where it changed, and tells. */
static void record_waits(const char *dir, struct gs_jobs_job *jobs, unsigned n, const struct wait *w)
{
  for (unsigned i = 0; i < n; i++) {
    struct gs_jobs_job *j = &jobs[i];
    struct wait_edit e = {&w[i], false};
    if (j->state != GS_JOBS_QUEUED || !w[i].why ||
        (j->waits == w[i].why && strcmp(j->reason, w[i].reason) == 0))
      continue;
    if (gs__jobs_edit(NULL, dir, j->id, mark_wait, &e) != 0 || !e.changed)
      continue;
    j->waits = w[i].why;
    snprintf(j->reason, sizeof(j->reason), "%s", w[i].reason);
    gs__jobs_event(j, "waits");
  }
}

/* ---- what changed since the last pass (one runner per process) ---- */

struct seen_job {
  char id[GS_JOBS_ID_SIZE];
  enum gs_jobs_state state;
};
static struct seen_job seen[GS_JOBS_MAX_JOBS];
static unsigned nseen;
static bool seen_once; /* the first pass is the baseline: nothing is new in it */

/* Job ids' order: gs_jobs_list's (shorter first, then as text). */
static int cmp_seen(const void *key, const void *elem)
{
  const char *a = key, *b = ((const struct seen_job *)elem)->id;
  size_t la = strlen(a), lb = strlen(b);
  return la != lb ? (la < lb ? -1 : 1) : strcmp(a, b);
}

/* Logs the jobs submitted, and those that ended, since the last pass. */
static void report_changes(const struct gs_jobs_job *jobs, unsigned n)
{
  for (unsigned i = 0; seen_once && i < n; i++) {
    const struct seen_job *was = bsearch(jobs[i].id, seen, nseen, sizeof(*seen), cmp_seen);
    if (!was && jobs[i].state == GS_JOBS_QUEUED)
      gs__jobs_event(&jobs[i], "submitted");
    /* One this runner handed to a shepherd may end before its file ever
     * said RUNNING at a pass: still told, once. */
    else if (was && jobs[i].state == GS_JOBS_DONE &&
             (was->state == GS_JOBS_RUNNING ||
              (was->state == GS_JOBS_QUEUED && memo_has(&handed, jobs[i].id))))
      gs__jobs_event(&jobs[i], "ended");
  }
}

/* The jobs' states at the end of a pass (the ones it started: running). */
static void remember(const struct gs_jobs_job *jobs, unsigned n)
{
  for (nseen = 0; nseen < n && nseen < GS_NITEMS(seen); nseen++) {
    snprintf(seen[nseen].id, sizeof(seen[nseen].id), "%s", jobs[nseen].id);
    seen[nseen].state = jobs[nseen].state;
  }
  seen_once = true;
}

static void reap_shepherds(void)
{
  while (waitpid(-1, NULL, WNOHANG) > 0)
    ;
}

/* Tries to start job j for user us: 1 started, 0 not now (w says why, or
 * j is REFUSED), <0 error. */
static int try_start(struct gs_err *err, struct gs_backend *b, const char *dir,
                     const struct gs_jobs_queue_opts *o, struct gs_jobs_job *j, struct wait *w)
{
  struct gs__jobs_account as;
  struct gs_jobs_claim c;
  struct gs_err e = {0};
  int rc = gs_jobs_claim(&e, b, dir, &j->req, j->id, j->user, getpid(), &c);
  if (rc == GS_E_INSUFFICIENT_RESOURCES) {
    wait_is(w, GS_JOBS_WAIT_SLICE, "%s", e.msg);
    return 0;
  }
  if (rc == GS_E_NOT_FOUND) { /* none to wait for until the layout changes */
    wait_is(w, GS_JOBS_WAIT_LAYOUT, "cannot run on this machine's current layout: %s", e.msg);
    return 0;
  }
  if (rc == GS_E_USAGE) {
    if (gs__jobs_edit(err, dir, j->id, mark_refused, e.msg) == 0) {
      j->state = GS_JOBS_REFUSED;
      snprintf(j->reason, sizeof(j->reason), "%s", e.msg);
      gs__jobs_event(j, "refused");
    }
    return 0;
  }
  if (rc)
    return gs_err_set(err, rc, "%s", e.msg);
  if (j->owner != 0 && geteuid() == 0 && (rc = gs__jobs_account(err, j->owner, &as)) != 0) {
    gs_jobs_release(NULL, b, dir, &c);
    return rc;
  }
  memo_add(&handed, j->id);
  if ((rc = start_shepherd(err, b, dir, o, j, &c, j->owner != 0 && geteuid() == 0 ? &as : NULL)) != 0)
    return rc;
  j->state = GS_JOBS_RUNNING; /* for this pass: its shepherd writes it */
  j->gpu = c.gpu;
  snprintf(j->slice_uuid, sizeof(j->slice_uuid), "%s", c.uuid);
  snprintf(j->slice_profile, sizeof(j->slice_profile), "%s", c.profile);
  gs__jobs_event(j, "started");
  return 1;
}

int gs_jobs_queue_pass(struct gs_err *err, struct gs_backend *b, const char *dir,
                       const struct gs_jobs_queue_opts *o, unsigned *started, unsigned *active)
{
  struct gs_jobs_job *jobs = NULL;
  struct gs_jobs_claim *c = NULL;
  struct user *u = NULL, *us;
  struct wait *w = NULL;
  struct screen sc = {dir};
  unsigned n = 0, nc = 0, nu = 0, running = 0;
  int rc;
  *started = *active = 0;
  reap_shepherds();
  /* Claims first: only this queue claims for queued jobs, so a job the list
   * shows QUEUED with no claim in this earlier snapshot was never started. */
  if ((rc = gs_jobs_claims(err, dir, &c, &nc)) != 0 ||
      (rc = gs_jobs_list(err, dir, on_note, &sc, &jobs, &n)) != 0)
    goto out;
  screen(&sc, jobs, n, c, nc);
  report_changes(jobs, n);
  if (n && (!(u = calloc(n, sizeof(*u))) || !(w = calloc(n, sizeof(*w))))) {
    rc = gs_err_set(err, GS_E_NO_MEMORY, "out of memory scheduling");
    goto out;
  }
  *active = tally(dir, jobs, n, c, nc, u, &nu, &running);
  while ((!o->max_running || running < o->max_running) && (us = fairest(u, nu, o)) != NULL) {
    struct gs_jobs_job *j = &jobs[us->next];
    /* A request a fairer user could not get is not given to a later user in
     * the same pass, even if a slice frees up meanwhile: it waits its turn. */
    const struct gs_jobs_job *ahead = waits_behind(jobs, u, nu, j);
    if (ahead)
      wait_is(&w[us->next], GS_JOBS_WAIT_TURN, "waits its turn: %s's %s asks for the same "
              "slice and goes first (fair share between users)", ahead->user, ahead->id);
    rc = ahead ? 0 : try_start(err, b, dir, o, j, &w[us->next]);
    if (rc < 0)
      goto out;
    /* Its oldest job waits for a slice, others' may still fit; one the
     * layout has no slice for holds up none of its user's later jobs. */
    if (rc == 0 && j->state == GS_JOBS_QUEUED && w[us->next].why != GS_JOBS_WAIT_LAYOUT) {
      us->blocked = true;
      continue;
    }
    if (rc == 0 && j->state == GS_JOBS_QUEUED)
      (*active)--; /* nothing to wait for until the layout changes */
    if (rc == 1) {
      us->running++, running++, (*started)++;
      us->last_start = gs__jobs_now();
    }
    us->next = next_queued(jobs, n, c, nc, us->name, us->next);
  }
  explain(jobs, n, c, nc, u, &nu, o, running, w);
  record_waits(dir, jobs, n, w);
  remember(jobs, n);
  rc = 0;
out:
  gs_jobs_list_free(jobs, n);
  free(c);
  free(u);
  free(w);
  return rc;
}

int gs_jobs_queue_run(struct gs_err *err, struct gs_backend *b, const char *dir,
                      const struct gs_jobs_queue_opts *o)
{
  unsigned poll = o->poll_ms ? o->poll_ms : 200;
  struct gs_file_lock lock = {-1};
  char path[PATH_MAX];
  int rc;
  /* One queue per directory: its passes assume no one else claims for queued jobs. */
  if ((rc = gs__jobs_path(err, path, dir, "queue-runner")) != 0)
    return rc;
  if ((rc = gs_file_lock_wait(err, path, 0, &lock)) != 0)
    return rc == GS_E_IN_USE ? gs_err_set(err, rc, "another `gpuslice queue run` serves %s; stop "
                                          "it first (its running jobs carry on)", dir) : rc;
  runner_lock_fd = lock.fd;
  told.n = handed.n = nseen = 0;
  seen_once = false;
  for (;;) {
    unsigned started, active;
    struct timespec ts = {poll / 1000, (long)(poll % 1000) * 1000000L};
    if ((rc = gs_jobs_queue_pass(err, b, dir, o, &started, &active)) != 0)
      break;
    if ((o->stop && *o->stop) || (o->until_empty && active == 0))
      break;
    if (!started)
      nanosleep(&ts, NULL);
  }
  runner_lock_fd = -1;
  gs_file_unlock(&lock);
  return rc;
}
