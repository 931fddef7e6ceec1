/* spool.c: the job queue as a spool directory, <dir>/queue/<id>.json, one
 * file per job replaced atomically under <dir>/queue.lock. `gpuslice queue
 * submit` writes QUEUED files; the queue (`gpuslice queue run`) starts them
 * in fair order, each under a shepherd process that outlives the queue and
 * records RUNNING, then DONE with the exit status. A job is started at most
 * once: its claim names it before its shepherd runs, and a RUNNING job whose
 * shepherd died is marked LOST, never rerun. */
#include "jobs/internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define JOB_FORMAT "gpuslice-job"

static const char *const state_names[] = {"queued", "running", "done", "lost", "refused",
                                          "cancelled"};

const char *gs_jobs_state_name(enum gs_jobs_state s)
{
  return (unsigned)s < GS_NITEMS(state_names) ? state_names[s] : "?";
}

void gs_jobs_job_clear(struct gs_jobs_job *job)
{
  for (unsigned i = 0; job && i < GS_JOBS_MAX_ARGS; i++) {
    free(job->argv[i]);
    job->argv[i] = NULL;
  }
  if (job)
    job->argc = 0;
}

void gs_jobs_list_free(struct gs_jobs_job *jobs, unsigned n)
{
  for (unsigned i = 0; jobs && i < n; i++)
    gs_jobs_job_clear(&jobs[i]);
  free(jobs);
}

static int job_file(struct gs_err *err, const char *dir, const char *id, const char *ext,
                    char out[PATH_MAX])
{
  int n = snprintf(out, PATH_MAX, "%s/queue/%s%s", dir, id, ext);
  if (n < 0 || n >= PATH_MAX)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "%s: path is too long", dir);
  return 0;
}

void gs_jobs_log_path(const char *dir, const char *id, char out[PATH_MAX])
{
  if (job_file(NULL, dir, id, ".log", out) != 0)
    out[0] = 0;
}

/* ---- one job file ---- */

static int parse_argv(struct gs_err *err, const char *origin, json_t *arr, struct gs_jobs_job *j)
{
  size_t n = json_array_size(arr);
  if (!json_is_array(arr) || n == 0 || n > GS_JOBS_MAX_ARGS)
    return gs_err_set(err, GS_E_CORRUPT_STATE, "%s: argv: expected 1 to %u strings", origin,
                      GS_JOBS_MAX_ARGS);
  for (size_t i = 0; i < n; i++) {
    json_t *a = json_array_get(arr, i);
    if (!json_is_string(a) || json_string_length(a) >= GS_JOBS_ARG_SIZE ||
        strlen(json_string_value(a)) != json_string_length(a))
      return gs_err_set(err, GS_E_CORRUPT_STATE, "%s: argv[%zu]: expected a string without NUL "
                        "bytes, shorter than %u", origin, i, GS_JOBS_ARG_SIZE);
    if (!(j->argv[i] = strdup(json_string_value(a))))
      return gs_err_set(err, GS_E_NO_MEMORY, "%s: out of memory", origin);
    j->argc = (unsigned)i + 1;
  }
  return 0;
}

static int parse_fields(struct gs_err *err, const char *o, json_t *r, struct gs_jobs_job *j)
{
  char mode[16], state[16];
  uint64_t uid, mem, thr, gpu, sst;
  int64_t rgpu, st, sg, sp, jp;
  int rc;
  if ((rc = gs__jobs_get_str(err, o, "", r, "id", j->id, sizeof(j->id))) ||
      (rc = gs__jobs_get_str(err, o, "", r, "user", j->user, sizeof(j->user))) ||
      (rc = gs__jobs_get_uint(err, o, "", r, "uid", UINT32_MAX, &uid)) ||
      (rc = gs__jobs_get_str(err, o, "", r, "mode", mode, sizeof(mode))) ||
      (rc = gs__jobs_get_str(err, o, "", r, "profile", j->req.profile, sizeof(j->req.profile))) ||
      (rc = gs__jobs_get_uint(err, o, "", r, "memory_mib", UINT32_MAX, &mem)) ||
      (rc = gs__jobs_get_bool(err, o, "", r, "create", &j->req.create)) ||
      (rc = gs__jobs_get_int(err, o, "", r, "gpu", -1, GS_BACKEND_MAX_GPUS - 1, &rgpu)) ||
      (rc = gs__jobs_get_uint(err, o, "", r, "mps_threads", 100, &thr)) ||
      (rc = gs__jobs_get_str(err, o, "", r, "state", state, sizeof(state))) ||
      (rc = gs__jobs_get_time(err, o, "", r, "submitted", &j->submitted)) ||
      (rc = gs__jobs_get_time(err, o, "", r, "started", &j->started)) ||
      (rc = gs__jobs_get_time(err, o, "", r, "ended", &j->ended)) ||
      (rc = gs__jobs_get_int(err, o, "", r, "exit_status", -1, 255, &st)) ||
      (rc = gs__jobs_get_int(err, o, "", r, "signal", 0, 64, &sg)) ||
      (rc = gs__jobs_get_uint(err, o, "", r, "slice_gpu", GS_BACKEND_MAX_GPUS - 1, &gpu)) ||
      (rc = gs__jobs_get_str(err, o, "", r, "slice_uuid", j->slice_uuid, sizeof(j->slice_uuid))) ||
      (rc = gs__jobs_get_str(err, o, "", r, "slice_profile", j->slice_profile,
                             sizeof(j->slice_profile))) ||
      (rc = gs__jobs_get_int(err, o, "", r, "shepherd_pid", 0, INT32_MAX, &sp)) ||
      (rc = gs__jobs_get_uint(err, o, "", r, "shepherd_start", UINT64_MAX >> 1, &sst)) ||
      (rc = gs__jobs_get_int(err, o, "", r, "job_pid", 0, INT32_MAX, &jp)) ||
      (rc = gs__jobs_get_str(err, o, "", r, "reason", j->reason, sizeof(j->reason))))
    return rc;
  if (gs_jobs_mode_parse(mode, &j->req.mode) != 0)
    return gs_err_set(err, GS_E_CORRUPT_STATE, "%s: mode: expected mig, timeslice or mps", o);
  for (j->state = 0; j->state < GS_NITEMS(state_names); j->state++)
    if (strcmp(state, state_names[j->state]) == 0)
      break;
  if ((unsigned)j->state >= GS_NITEMS(state_names))
    return gs_err_set(err, GS_E_CORRUPT_STATE, "%s: state: expected queued, running, done, lost, "
                      "refused or cancelled", o);
  j->uid = (unsigned)uid, j->req.memory_mib = mem, j->req.gpu = (int)rgpu;
  j->req.mps_threads = (unsigned)thr, j->exit_status = (int)st, j->signal = (int)sg;
  j->gpu = (unsigned)gpu, j->shepherd_pid = (int)sp, j->shepherd_start = sst, j->job_pid = (int)jp;
  return 0;
}

int gs_jobs_job_parse(struct gs_err *err, const char *origin, const char *text, size_t len,
                      struct gs_jobs_job *out)
{
  json_t *root;
  int rc;
  memset(out, 0, sizeof(*out));
  if ((rc = gs__jobs_parse_root(err, origin, text, len, JOB_FORMAT, &root)) != 0)
    return rc;
  if ((rc = parse_fields(err, origin, root, out)) == 0)
    rc = parse_argv(err, origin, json_object_get(root, "argv"), out);
  json_decref(root);
  if (rc)
    gs_jobs_job_clear(out);
  return rc;
}

static json_t *job_json(const struct gs_jobs_job *j)
{
  json_t *argv = json_array();
  for (unsigned i = 0; i < j->argc; i++)
    json_array_append_new(argv, json_string(j->argv[i]));
  return json_pack("{s:s, s:i, s:s, s:s, s:I, s:s, s:s, s:I, s:b, s:i, s:i, s:o, s:s, s:f, s:f, "
                   "s:f, s:i, s:i, s:i, s:s, s:s, s:i, s:I, s:i, s:s}",
                   "format", JOB_FORMAT, "version", 1, "id", j->id, "user", j->user, "uid",
                   (json_int_t)j->uid, "mode", gs_jobs_mode_name(j->req.mode), "profile",
                   j->req.profile, "memory_mib", (json_int_t)j->req.memory_mib, "create",
                   j->req.create, "gpu", j->req.gpu, "mps_threads", (int)j->req.mps_threads,
                   "argv", argv, "state", gs_jobs_state_name(j->state), "submitted", j->submitted,
                   "started", j->started, "ended", j->ended, "exit_status", j->exit_status,
                   "signal", j->signal, "slice_gpu", (int)j->gpu, "slice_uuid", j->slice_uuid,
                   "slice_profile", j->slice_profile, "shepherd_pid", j->shepherd_pid,
                   "shepherd_start", (json_int_t)j->shepherd_start, "job_pid", j->job_pid,
                   "reason", j->reason);
}

static int write_job(struct gs_err *err, const char *dir, const struct gs_jobs_job *j)
{
  char path[PATH_MAX];
  int rc = job_file(err, dir, j->id, ".json", path);
  return rc ? rc : gs__jobs_save_json(err, path, job_json(j));
}

static int read_job(struct gs_err *err, const char *path, struct gs_jobs_job *j)
{
  char *text;
  size_t len;
  int rc = gs_file_read_private(err, path, 1u << 20, GS_FILE_ANY_OWNER, &text, &len);
  if (rc)
    return rc;
  rc = gs_jobs_job_parse(err, path, text, len, j);
  free(text);
  if (rc == GS_E_CORRUPT_STATE)
    gs_err_set(err, rc, "%s; move the file out of the queue", err ? err->msg : "");
  return rc;
}

static int lock_queue(struct gs_err *err, const char *dir, struct gs_file_lock *l)
{
  char path[PATH_MAX];
  int rc = gs__jobs_path(err, path, dir, "queue");
  return rc ? rc : gs_file_lock(err, path, 1, l);
}

/* Rereads job `id` under the queue lock, lets fn change it (fn returns false
 * to leave it as it is), and writes it back. */
static int edit_job(struct gs_err *err, const char *dir, const char *id,
                    bool (*fn)(struct gs_jobs_job *j, void *arg), void *arg)
{
  struct gs_file_lock lock = {-1};
  struct gs_jobs_job *j = calloc(1, sizeof(*j));
  char path[PATH_MAX];
  int rc;
  if (!j)
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory editing job %s", id);
  if ((rc = job_file(err, dir, id, ".json", path)) == 0 &&
      (rc = lock_queue(err, dir, &lock)) == 0) {
    if ((rc = read_job(err, path, j)) == 0 && fn(j, arg))
      rc = write_job(err, dir, j);
    gs_file_unlock(&lock);
  }
  gs_jobs_job_clear(j);
  free(j);
  return rc;
}

/* ---- listing and submitting ---- */

static bool is_job_name(const char *name)
{
  size_t n = strlen(name);
  return n > 6 && name[0] == 'j' && strcmp(name + n - 5, ".json") == 0 &&
         strspn(name + 1, "0123456789") == n - 6;
}

static int cmp_id(const void *a, const void *b)
{
  const struct gs_jobs_job *x = a, *y = b;
  size_t lx = strlen(x->id), ly = strlen(y->id);
  return lx != ly ? (lx < ly ? -1 : 1) : strcmp(x->id, y->id);
}

/* Room for 64 more jobs, up to GS_JOBS_MAX_JOBS. */
static int grow(struct gs_err *err, struct gs_jobs_job **jobs, unsigned *cap, const char *qdir)
{
  struct gs_jobs_job *n;
  if (*cap >= GS_JOBS_MAX_JOBS)
    return gs_err_set(err, GS_E_INSUFFICIENT_SIZE, "%s holds more than %u jobs; move finished "
                      "ones away", qdir, GS_JOBS_MAX_JOBS);
  if (!(n = realloc(*jobs, (*cap + 64) * sizeof(*n))))
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory listing jobs");
  memset(n + *cap, 0, 64 * sizeof(*n));
  *jobs = n;
  *cap += 64;
  return 0;
}

int gs_jobs_list(struct gs_err *err, const char *dir, struct gs_jobs_job **out, unsigned *n)
{
  char qdir[PATH_MAX], path[PATH_MAX];
  struct gs_jobs_job *jobs = NULL;
  struct dirent *d;
  unsigned k = 0, cap = 0;
  int rc = gs__jobs_path(err, qdir, dir, "queue");
  DIR *dp;
  *out = NULL;
  *n = 0;
  if (rc)
    return rc;
  if (!(dp = opendir(qdir)))
    return errno == ENOENT ? 0
                           : gs_err_set(err, GS_E_IO, "%s: cannot list: %s", qdir, strerror(errno));
  while (rc == 0 && (d = readdir(dp)) != NULL) {
    if (!is_job_name(d->d_name))
      continue;
    if (k == cap && (rc = grow(err, &jobs, &cap, qdir)) != 0)
      break;
    if ((rc = gs__jobs_path(err, path, qdir, d->d_name)) == 0 &&
        (rc = read_job(err, path, &jobs[k])) == 0)
      k++;
    if (rc == GS_E_NOT_FOUND) /* removed since the listing: not ours to report */
      rc = 0;
  }
  closedir(dp);
  if (rc) {
    gs_jobs_list_free(jobs, k);
    return rc;
  }
  if (k > 1)
    qsort(jobs, k, sizeof(*jobs), cmp_id);
  *out = jobs;
  *n = k;
  return 0;
}

/* The next id: one past the highest file name, so a crash never reuses one. */
static int next_id(struct gs_err *err, const char *dir, char id[GS_JOBS_ID_SIZE])
{
  char qdir[PATH_MAX];
  unsigned long max = 0;
  struct dirent *d;
  DIR *dp;
  int rc = gs__jobs_path(err, qdir, dir, "queue");
  if (rc)
    return rc;
  if (!(dp = opendir(qdir)))
    return gs_err_set(err, GS_E_IO, "%s: cannot list: %s", qdir, strerror(errno));
  while ((d = readdir(dp)) != NULL)
    if (is_job_name(d->d_name) && strtoul(d->d_name + 1, NULL, 10) > max)
      max = strtoul(d->d_name + 1, NULL, 10);
  closedir(dp);
  if (max >= 99999999ul)
    return gs_err_set(err, GS_E_INSUFFICIENT_SIZE, "%s: job ids are exhausted", qdir);
  snprintf(id, GS_JOBS_ID_SIZE, "j%06lu", max + 1);
  return 0;
}

int gs_jobs_submit(struct gs_err *err, const char *dir, struct gs_jobs_job *job)
{
  struct gs_file_lock lock = {-1};
  int rc;
  if (!job->argc || !job->argv[0])
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "a job needs a command");
  if ((rc = lock_queue(err, dir, &lock)) != 0)
    return rc;
  if ((rc = next_id(err, dir, job->id)) == 0) {
    job->state = GS_JOBS_QUEUED;
    job->submitted = gs__jobs_now();
    rc = write_job(err, dir, job);
  }
  gs_file_unlock(&lock);
  return rc;
}

/* ---- cancelling ---- */

struct cancel_args {
  enum gs_jobs_state was;
  int shepherd, job;
};

static bool mark_cancelled(struct gs_jobs_job *j, void *arg)
{
  struct cancel_args *a = arg;
  a->was = j->state;
  a->shepherd = gs__jobs_alive(j->shepherd_pid, j->shepherd_start) ? j->shepherd_pid : 0;
  a->job = j->job_pid;
  if (j->state != GS_JOBS_QUEUED)
    return false;
  j->state = GS_JOBS_CANCELLED;
  j->ended = gs__jobs_now();
  j->exit_status = -1;
  return true;
}

/* The parent of pid (field 4 of /proc/<pid>/stat), 0 if unknown. */
static int parent_of(int pid)
{
  char buf[512];
  const char *p;
  int ppid = 0;
  if (!(p = gs_proc_stat(pid, buf, sizeof(buf))) || sscanf(p, " %*c %d", &ppid) != 1)
    return 0;
  return ppid;
}

int gs_jobs_cancel(struct gs_err *err, const char *dir, const char *id, enum gs_jobs_state *was)
{
  struct cancel_args a = {0};
  int rc;
  if (strlen(id) >= GS_JOBS_ID_SIZE || strchr(id, '/'))
    return gs_err_set(err, GS_E_NOT_FOUND, "no job %.40s (`gpuslice jobs` lists them)", id);
  rc = edit_job(err, dir, id, mark_cancelled, &a);
  if (rc == GS_E_NOT_FOUND)
    return gs_err_set(err, rc, "no job %s (`gpuslice jobs` lists them)", id);
  if (rc)
    return rc;
  *was = a.was;
  if (a.was == GS_JOBS_QUEUED)
    return 0;
  if (a.was != GS_JOBS_RUNNING)
    return gs_err_set(err, GS_E_USAGE, "job %s has already ended (%s)", id,
                      gs_jobs_state_name(a.was));
  /* Only the shepherd's own child: a recycled pid is someone else's process. */
  if (!a.shepherd || !a.job || parent_of(a.job) != a.shepherd || kill(a.job, SIGTERM) != 0)
    return gs_err_set(err, GS_E_NOT_FOUND, "job %s is starting or ending; try again", id);
  return 0;
}

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
  const char *reason;
};

static bool mark_done(struct gs_jobs_job *j, void *arg)
{
  const struct done_args *a = arg;
  j->state = GS_JOBS_DONE;
  j->ended = gs__jobs_now();
  j->exit_status = a->status;
  j->signal = a->sig;
  snprintf(j->reason, sizeof(j->reason), "%s", a->reason ? a->reason : "");
  return true;
}

/* Runs job j on claim c; its exit status goes to the job file. */
static int shepherd(const struct gs_backend_config *cfg, const char *dir, struct gs_jobs_job *j,
                    struct gs_jobs_claim *c)
{
  struct running_args ra = {c, (int)getpid(), gs__jobs_proc_start((int)getpid()), false};
  struct done_args da = {127, 0, NULL};
  struct gs_backend *b = NULL;
  struct gs_err err = {0};
  char log[PATH_MAX], **env = NULL;
  pid_t pid = 0;
  int rc;
  if ((rc = gs_backend_open(&err, cfg, &b)) != 0 ||
      (rc = edit_job(&err, dir, j->id, mark_running, &ra)) != 0)
    goto out;
  if (!ra.moved) { /* started before, or no longer queued: never run a job twice */
    gs_jobs_release(NULL, b, dir, c);
    gs_backend_close(b);
    return 1;
  }
  gs_jobs_log_path(dir, j->id, log);
  if (!(env = gs_jobs_env(c, &j->req, dir))) {
    rc = gs_err_set(&err, GS_E_NO_MEMORY, "out of memory building the environment");
    goto out;
  }
  if (c->mode == GS_JOBS_MPS) {
    struct gs_jobs_mps m;
    if ((rc = gs_jobs_mps_start(&err, b, dir, c->gpu, c->uuid, &m)) != 0)
      goto out;
  }
  if ((rc = gs_jobs_spawn(&err, j->argv, env, log, -1, &pid)) != 0)
    goto out;
  edit_job(NULL, dir, j->id, mark_pid, &(int){(int)pid});
  gs_jobs_claim_started(NULL, b, dir, c, pid);
  rc = gs_jobs_wait(&err, pid, &da.status, &da.sig);
out:
  gs_jobs_strv_free(env);
  if (rc)
    da.reason = err.msg;
  /* DONE before the release: the queue must never see the slice free while
   * the job still counts as running, or that user would be served twice. */
  edit_job(NULL, dir, j->id, mark_done, &da);
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
                          struct gs_jobs_claim *c)
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
    c->owner_start = gs__jobs_proc_start(c->owner_pid);
    _exit(shepherd(o->cfg, dir, j, c));
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

static bool mark_lost(struct gs_jobs_job *j, void *arg)
{
  (void)arg;
  if (j->state != GS_JOBS_RUNNING || gs__jobs_alive(j->shepherd_pid, j->shepherd_start))
    return false;
  j->state = GS_JOBS_LOST;
  j->ended = gs__jobs_now();
  j->exit_status = -1;
  snprintf(j->reason, sizeof(j->reason), "its shepherd (pid %d) died while the job ran; it was "
           "not rerun (resubmit it)", j->shepherd_pid);
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

/* Fills the users' running counts and oldest queued jobs; marks dead
 * shepherds' jobs LOST. Returns the number of jobs queued, running, or
 * holding a claim still. */
static unsigned tally(const char *dir, const struct gs_jobs_queue_opts *o, struct gs_jobs_job *jobs,
                      unsigned n, const struct gs_jobs_claim *c, unsigned nc, struct user *u,
                      unsigned *nu, unsigned *running)
{
  unsigned active = 0;
  for (unsigned i = 0; i < n; i++) {
    struct gs_jobs_job *j = &jobs[i];
    struct user *us;
    if (j->state == GS_JOBS_RUNNING && !gs__jobs_alive(j->shepherd_pid, j->shepherd_start) &&
        edit_job(NULL, dir, j->id, mark_lost, NULL) == 0 && o->on_event) {
      j->state = GS_JOBS_LOST;
      o->on_event(o->arg, j, "lost");
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

/* True when a blocked user's waiting job asks for the same as j. */
static bool waits_behind(const struct gs_jobs_job *jobs, const struct user *u, unsigned nu,
                         const struct gs_jobs_job *j)
{
  for (unsigned i = 0; i < nu; i++)
    if (u[i].blocked && u[i].next >= 0 && same_request(&jobs[u[i].next].req, &j->req))
      return true;
  return false;
}

static void reap_shepherds(void)
{
  while (waitpid(-1, NULL, WNOHANG) > 0)
    ;
}

/* Tries to start job j for user us: 1 started, 0 no slice now, <0 error. */
static int try_start(struct gs_err *err, struct gs_backend *b, const char *dir,
                     const struct gs_jobs_queue_opts *o, struct gs_jobs_job *j)
{
  struct gs_jobs_claim c;
  struct gs_err e = {0};
  int rc = gs_jobs_claim(&e, b, dir, &j->req, j->id, j->user, getpid(), &c);
  if (rc == GS_E_INSUFFICIENT_RESOURCES || rc == GS_E_NOT_FOUND)
    return 0;
  if (rc == GS_E_USAGE) {
    if (edit_job(err, dir, j->id, mark_refused, e.msg) == 0) {
      j->state = GS_JOBS_REFUSED;
      snprintf(j->reason, sizeof(j->reason), "%s", e.msg);
      if (o->on_event)
        o->on_event(o->arg, j, "refused");
    }
    return 0;
  }
  if (rc)
    return gs_err_set(err, rc, "%s", e.msg);
  if ((rc = start_shepherd(err, b, dir, o, j, &c)) != 0)
    return rc;
  j->gpu = c.gpu;
  snprintf(j->slice_uuid, sizeof(j->slice_uuid), "%s", c.uuid);
  snprintf(j->slice_profile, sizeof(j->slice_profile), "%s", c.profile);
  if (o->on_event)
    o->on_event(o->arg, j, "started");
  return 1;
}

int gs_jobs_queue_pass(struct gs_err *err, struct gs_backend *b, const char *dir,
                       const struct gs_jobs_queue_opts *o, unsigned *started, unsigned *active)
{
  struct gs_jobs_job *jobs = NULL;
  struct gs_jobs_claim *c = NULL;
  struct user *u = NULL, *us;
  unsigned n = 0, nc = 0, nu = 0, running = 0;
  int rc;
  *started = *active = 0;
  reap_shepherds();
  /* Claims first: only this queue claims for queued jobs, so a job the list
   * shows QUEUED with no claim in this earlier snapshot was never started. */
  if ((rc = gs_jobs_claims(err, dir, &c, &nc)) != 0 ||
      (rc = gs_jobs_list(err, dir, &jobs, &n)) != 0)
    goto out;
  if (n && !(u = calloc(n, sizeof(*u)))) {
    rc = gs_err_set(err, GS_E_NO_MEMORY, "out of memory scheduling");
    goto out;
  }
  *active = tally(dir, o, jobs, n, c, nc, u, &nu, &running);
  while ((!o->max_running || running < o->max_running) && (us = fairest(u, nu, o)) != NULL) {
    struct gs_jobs_job *j = &jobs[us->next];
    /* A request a fairer user could not get is not given to a later user in
     * the same pass, even if a slice frees up meanwhile: it waits its turn. */
    rc = waits_behind(jobs, u, nu, j) ? 0 : try_start(err, b, dir, o, j);
    if (rc < 0)
      goto out;
    if (rc == 0 && j->state == GS_JOBS_QUEUED) {
      us->blocked = true; /* its oldest job waits for a slice; others' may still fit */
      continue;
    }
    if (rc == 1) {
      us->running++, running++, (*started)++;
      us->last_start = gs__jobs_now();
    }
    us->next = next_queued(jobs, n, c, nc, us->name, us->next);
  }
  rc = 0;
out:
  gs_jobs_list_free(jobs, n);
  free(c);
  free(u);
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
