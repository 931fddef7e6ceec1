/* SPDX-License-Identifier: Apache-2.0 */
/* spool.c: the job queue's files: <dir>/queue/<id>.json, one per job,
 * owned by its submitter (that owner, from the kernel, is who the job runs
 * as) and replaced atomically under <dir>/queue.lock, always as that owner,
 * mode 0600. Parsing, listing (a bad file is told, never fatal), moving bad
 * files aside to queue/bad/, submitting and cancelling, and opening a job's
 * log for its user. The queue that runs them is queue.c. */
#include "jobs/internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define JOB_FORMAT "gpuslice-job"

static const char *const state_names[] = {"queued", "running", "done", "lost", "refused",
                                          "cancelled"};

const char *gs_jobs_state_name(enum gs_jobs_state s)
{
  return (unsigned)s < GS_NITEMS(state_names) ? state_names[s] : "?";
}

static const char *const wait_names[] = {"", "slice", "layout", "user-limit", "queue-limit",
                                         "turn"};

const char *gs_jobs_wait_name(enum gs_jobs_wait w)
{
  return (unsigned)w < GS_NITEMS(wait_names) ? wait_names[w] : "";
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

bool gs_jobs_id_valid(const char *id)
{
  size_t n = id ? strlen(id) : 0;
  return n >= 7 && n <= 9 && id[0] == 'j' && strspn(id + 1, "0123456789") == n - 1;
}

/* Fields newer than the format's first files: absent means none. */
static int optional_fields(struct gs_err *err, const char *o, json_t *r, struct gs_jobs_job *j)
{
  uint64_t left = 0;
  char waits[16] = "";
  int rc = 0;
  if (json_object_get(r, "leftovers") &&
      (rc = gs__jobs_get_uint(err, o, "", r, "leftovers", UINT32_MAX, &left)) != 0)
    return rc;
  if (json_object_get(r, "tracking") &&
      (rc = gs__jobs_get_str(err, o, "", r, "tracking", j->tracking, sizeof(j->tracking))) != 0)
    return rc;
  if (json_object_get(r, "waits_for") &&
      (rc = gs__jobs_get_str(err, o, "", r, "waits_for", waits, sizeof(waits))) != 0)
    return rc;
  for (j->waits = 0; j->waits < GS_NITEMS(wait_names); j->waits++)
    if (strcmp(waits, wait_names[j->waits]) == 0)
      break;
  if ((unsigned)j->waits >= GS_NITEMS(wait_names))
    return gs_err_set(err, GS_E_CORRUPT_STATE, "%s: waits_for: expected slice, layout, "
                      "user-limit, queue-limit, turn or \"\"", o);
  j->leftovers = (unsigned)left;
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
  if (!gs_jobs_id_valid(j->id))
    return gs_err_set(err, GS_E_CORRUPT_STATE, "%s: id: expected j and 6 to 8 digits", o);
  if ((rc = optional_fields(err, o, r, j)) != 0)
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
                   "s:f, s:i, s:i, s:i, s:s, s:s, s:i, s:I, s:i, s:I, s:s, s:s, s:s}",
                   "format", JOB_FORMAT, "version", 1, "id", j->id, "user", j->user, "uid",
                   (json_int_t)j->uid, "mode", gs_jobs_mode_name(j->req.mode), "profile",
                   j->req.profile, "memory_mib", (json_int_t)j->req.memory_mib, "create",
                   j->req.create, "gpu", j->req.gpu, "mps_threads", (int)j->req.mps_threads,
                   "argv", argv, "state", gs_jobs_state_name(j->state), "submitted", j->submitted,
                   "started", j->started, "ended", j->ended, "exit_status", j->exit_status,
                   "signal", j->signal, "slice_gpu", (int)j->gpu, "slice_uuid", j->slice_uuid,
                   "slice_profile", j->slice_profile, "shepherd_pid", j->shepherd_pid,
                   "shepherd_start", (json_int_t)j->shepherd_start, "job_pid", j->job_pid,
                   "leftovers", (json_int_t)j->leftovers, "tracking", j->tracking,
                   "reason", j->reason, "waits_for", gs_jobs_wait_name(j->waits));
}

/* Writes j as its file's owner (mode 0600): root's runner must neither take
 * the file over (its owner is the job's identity) nor write where the user
 * could not. A new job (owner unknown) is the caller's. */
static int write_job(struct gs_err *err, const char *dir, const struct gs_jobs_job *j, bool fresh)
{
  char path[PATH_MAX];
  struct gs__jobs_fs saved;
  unsigned uid = fresh ? (unsigned)geteuid() : j->owner;
  int rc = job_file(err, dir, j->id, ".json", path);
  if (rc)
    return rc;
  if (uid != (unsigned)geteuid() && geteuid() != 0)
    return gs_err_set(err, GS_E_NO_PERMISSION, "job %s is uid %u's; only root changes other "
                      "users' jobs", j->id, uid);
  gs__jobs_fs_as(uid, fresh ? (unsigned)getegid() : j->owner_gid, &saved);
  if (!gs__jobs_fs_is(uid))
    rc = gs_err_set(err, GS_E_NO_PERMISSION, "%s: cannot act as its owner, uid %u", path, uid);
  else
    rc = gs__jobs_save_json(err, path, job_json(j));
  gs__jobs_fs_restore(&saved);
  return rc;
}

/* Reads the job file queue/<name> through one descriptor: util's safe open
 * refuses a link, a FIFO, a file others may write and one of a uid that is
 * no account (a job runs as its file's owner); the owner comes from its
 * fstat, the text from the same open file. */
static int read_job(struct gs_err *err, const char *dir, const char *name, struct gs_jobs_job *j)
{
  char path[PATH_MAX], *text;
  struct stat st;
  size_t len;
  int fd, rc;
  memset(j, 0, sizeof(*j));
  if ((rc = job_file(err, dir, name, "", path)) != 0 ||
      (rc = gs_file_open_private(err, path, GS_FILE_OTHER_ACCOUNT, &fd, &st)) != 0)
    return rc;
  rc = gs_file_read_fd(err, path, fd, 1u << 20, &text, &len);
  close(fd);
  if (rc)
    return rc;
  rc = gs_jobs_job_parse(err, path, text, len, j);
  free(text);
  if (rc == 0 && (strncmp(name, j->id, strlen(j->id)) != 0 || strcmp(name + strlen(j->id), ".json")))
    rc = gs_err_set(err, GS_E_CORRUPT_STATE, "%s: its id %s is not its file name", path, j->id);
  if (rc) {
    gs_jobs_job_clear(j);
    return rc;
  }
  j->owner = (unsigned)st.st_uid, j->owner_gid = (unsigned)st.st_gid;
  if (j->owner != 0) { /* the account is the user; the text is only a label */
    struct gs__jobs_account a;
    if (gs__jobs_account(NULL, j->owner, &a) == 0)
      snprintf(j->user, sizeof(j->user), "%s", a.name);
    else
      snprintf(j->user, sizeof(j->user), "uid%u", j->owner);
  }
  return 0;
}

static int lock_queue(struct gs_err *err, const char *dir, struct gs_file_lock *l)
{
  char path[PATH_MAX];
  int rc = gs__jobs_path(err, path, dir, "queue");
  return rc ? rc : gs_file_lock(err, path, 1, l);
}

int gs__jobs_edit(struct gs_err *err, const char *dir, const char *id,
                  bool (*fn)(struct gs_jobs_job *j, void *arg), void *arg)
{
  struct gs_file_lock lock = {-1};
  struct gs_jobs_job *j = calloc(1, sizeof(*j));
  char name[PATH_MAX];
  int rc;
  if (!j)
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory editing job %s", id);
  if ((rc = job_file(err, dir, id, ".json", name)) == 0 &&
      (rc = lock_queue(err, dir, &lock)) == 0) {
    if ((rc = read_job(err, dir, strrchr(name, '/') + 1, j)) == 0 && fn(j, arg))
      rc = write_job(err, dir, j, false);
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

/* Reads queue/<name> into *j for the listing: 1 read, 0 gone or left out
 * (told to note), <0 an error that stops the listing. */
static int list_one(struct gs_err *err, const char *dir, const char *name, gs_jobs_note_fn *note,
                    void *arg, struct gs_jobs_job *j)
{
  struct gs_err why = {0};
  int rc = read_job(&why, dir, name, j);
  if (rc == 0)
    return 1;
  if (rc == GS_E_NOT_FOUND) /* removed since the listing: not ours to report */
    return 0;
  if (rc == GS_E_NO_MEMORY)
    return gs_err_set(err, rc, "%s", why.msg);
  if (note)
    note(arg, name, &why);
  return 0;
}

int gs_jobs_list(struct gs_err *err, const char *dir, gs_jobs_note_fn *note, void *arg,
                 struct gs_jobs_job **out, unsigned *n)
{
  char qdir[PATH_MAX];
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
  while (rc >= 0 && (d = readdir(dp)) != NULL) {
    if (!is_job_name(d->d_name))
      continue;
    if (k == cap && (rc = grow(err, &jobs, &cap, qdir)) != 0)
      break;
    if ((rc = list_one(err, dir, d->d_name, note, arg, &jobs[k])) > 0)
      k++;
  }
  closedir(dp);
  if (rc < 0) {
    gs_jobs_list_free(jobs, k);
    return rc;
  }
  if (k > 1)
    qsort(jobs, k, sizeof(*jobs), cmp_id);
  *out = jobs;
  *n = k;
  return 0;
}

int gs_jobs_set_aside(struct gs_err *err, const char *dir, const char *name, char moved[PATH_MAX])
{
  char qdir[PATH_MAX], from[PATH_MAX], bad[PATH_MAX];
  int rc = gs__jobs_path(err, qdir, dir, "queue"), e = 0;
  if (rc || (rc = gs__jobs_path(err, bad, dir, "queue/bad")) != 0 ||
      (rc = gs__jobs_path(err, from, qdir, name)) != 0)
    return rc;
  for (unsigned k = 0; k < 10; k++) {
    int n = k ? snprintf(moved, PATH_MAX, "%s/%s.%u", bad, name, k)
              : snprintf(moved, PATH_MAX, "%s/%s", bad, name);
    if (n < 0 || n >= PATH_MAX)
      return gs_err_set(err, GS_E_INVALID_ARGUMENT, "%s: path is too long", bad);
    /* Never over another file: what is in bad/ stays for whoever looks. */
    if (renameat2(AT_FDCWD, from, AT_FDCWD, moved, RENAME_NOREPLACE) == 0)
      return 0;
    if ((e = errno) != EEXIST)
      break;
  }
  return gs_err_set(err, e == EPERM || e == EACCES ? GS_E_NO_PERMISSION : GS_E_IO,
                    "cannot move %s to %s/: %s", from, bad, strerror(e));
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
    rc = write_job(err, dir, job, true);
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
  a->shepherd = j->shepherd_start && gs__jobs_alive(j->shepherd_pid, j->shepherd_start) ? j->shepherd_pid : 0;
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
  if (!gs_jobs_id_valid(id))
    return gs_err_set(err, GS_E_NOT_FOUND, "'%.40s' is not a job id (j and 6 to 8 digits, as "
                      "`gpuslice jobs` lists them)", id);
  rc = gs__jobs_edit(err, dir, id, mark_cancelled, &a);
  if (rc == GS_E_NOT_FOUND)
    return gs_err_set(err, rc, "no job %s (`gpuslice jobs` lists them)", id);
  if (rc == GS_E_NO_PERMISSION)
    return gs_err_set(err, rc, "job %s is another user's; you can cancel only your own", id);
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


/* ---- a job's log ---- */

/* Opens <dir>/queue/<id>.log of a job the caller may read (see jobs.h). */
static int open_log(struct gs_err *err, const char *dir, const struct gs_jobs_job *j, int *fd)
{
  char path[PATH_MAX];
  struct stat st;
  int rc;
  if ((rc = job_file(err, dir, j->id, ".log", path)) != 0)
    return rc;
  rc = gs_file_open_private(err, path, GS_FILE_OTHER_ACCOUNT, fd, &st);
  if (rc == GS_E_NOT_FOUND && (j->state == GS_JOBS_QUEUED || j->state == GS_JOBS_CANCELLED))
    return gs_err_set(err, rc, "job %s has no log: it %s", j->id,
                      j->state == GS_JOBS_QUEUED ? "has not started yet (`gpuslice jobs` says "
                                                   "why it waits)"
                                                 : "was cancelled before it started");
  if (rc == GS_E_NOT_FOUND)
    return gs_err_set(err, rc, "job %s has no log: %s is gone (%s)", j->id, path,
                      j->reason[0] ? j->reason : "removed since the job ran");
  if (rc)
    return rc;
  /* The job's user makes its log (O_EXCL): a file of anyone else at that
   * name was planted there, and is not printed as the job's output. */
  if ((unsigned)st.st_uid != j->owner) {
    close(*fd);
    *fd = -1;
    return gs_err_set(err, GS_E_CORRUPT_STATE, "%s is uid %u's, not uid %u's, whose job %s is: "
                      "it is not the job's output (someone made it before the job ran)",
                      path, (unsigned)st.st_uid, j->owner, j->id);
  }
  return 0;
}

int gs_jobs_log_open(struct gs_err *err, const char *dir, const char *id, int *fd)
{
  struct gs_jobs_job *j;
  char name[GS_JOBS_ID_SIZE + 8];
  int rc;
  *fd = -1;
  if (!gs_jobs_id_valid(id))
    return gs_err_set(err, GS_E_NOT_FOUND, "'%.40s' is not a job id (j and 6 to 8 digits, as "
                      "`gpuslice jobs` lists them)", id);
  if (!(j = calloc(1, sizeof(*j))))
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory reading job %s", id);
  snprintf(name, sizeof(name), "%s.json", id);
  rc = read_job(err, dir, name, j);
  if (rc == GS_E_NOT_FOUND)
    rc = gs_err_set(err, rc, "no job %s (`gpuslice jobs` lists them)", id);
  else if (rc == GS_E_NO_PERMISSION || (rc == 0 && geteuid() != 0 && j->owner != geteuid()))
    rc = gs_err_set(err, GS_E_NO_PERMISSION, "job %s is another user's; only root reads other "
                    "users' logs", id);
  else if (rc == 0)
    rc = open_log(err, dir, j, fd);
  gs_jobs_job_clear(j);
  free(j);
  return rc;
}
