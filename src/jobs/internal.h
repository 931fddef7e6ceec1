/* SPDX-License-Identifier: Apache-2.0 */
/* internal.h: what the jobs layer's files share and nothing outside uses:
 * process liveness, the JSON field readers of its state files, locking of
 * its directory, and the emulated-GPU test. */
#ifndef GS_JOBS_INTERNAL_H
#define GS_JOBS_INTERNAL_H

#include <jansson.h>
#include <sys/stat.h>

#include "jobs/jobs.h"

/* True while pid runs and (when start != 0) is the same process (gs_proc_start). */
bool gs__jobs_alive(int pid, uint64_t start);
double gs__jobs_now(void);
/* True on emulated GPUs. */
bool gs__jobs_emulated(struct gs_backend *b);
/* Logs what the queue runner saw of job j (`what`: events.c). */
void gs__jobs_event(const struct gs_jobs_job *j, const char *what);

/* Typed field readers for the jobs layer's JSON files. Each fails with
 * GS_E_CORRUPT_STATE "<origin>: <where>.<key>: <what>". */
int gs__jobs_get_str(struct gs_err *err, const char *origin, const char *where, json_t *obj,
                     const char *key, char *out, size_t size);
int gs__jobs_get_uint(struct gs_err *err, const char *origin, const char *where, json_t *obj,
                      const char *key, uint64_t max, uint64_t *out);
int gs__jobs_get_int(struct gs_err *err, const char *origin, const char *where, json_t *obj,
                     const char *key, int64_t min, int64_t max, int64_t *out);
int gs__jobs_get_time(struct gs_err *err, const char *origin, const char *where, json_t *obj,
                      const char *key, double *out);
int gs__jobs_get_bool(struct gs_err *err, const char *origin, const char *where, json_t *obj,
                      const char *key, bool *out);
/* Parses text as a JSON object whose "format" is `format` and "version" 1. */
int gs__jobs_parse_root(struct gs_err *err, const char *origin, const char *text, size_t len,
                        const char *format, json_t **root);
/* Writes a JSON value to path atomically (temp, fsync, rename) and frees it. */
int gs__jobs_save_json(struct gs_err *err, const char *path, json_t *v);

/* The current environment with the "NAME=value" entries of add (NULL-
 * terminated) set; free with gs_jobs_strv_free. NULL when out of memory. */
char **gs__jobs_env_with(char *const *add);

/* "<dir>/<name>" into out; GS_E_INVALID_ARGUMENT when too long. */
int gs__jobs_path(struct gs_err *err, char out[PATH_MAX], const char *dir, const char *name);

/* ---- identity and files (ident.c) ---- */

/* An account from the password database. */
struct gs__jobs_account {
  unsigned uid, gid;
  char name[GS_JOBS_USER_SIZE];
  char home[PATH_MAX], shell[256];
};
/* GS_E_NOT_FOUND when uid is no account here. */
int gs__jobs_account(struct gs_err *err, unsigned uid, struct gs__jobs_account *out);
/* In a child about to exec: initgroups, setgid, setuid, each checked, and
 * root not regainable. 0 or an errno. */
int gs__jobs_become(const struct gs__jobs_account *a);

/* Files created between fs_as and fs_restore are the given user's, mode
 * 0600 (fsuid, fsgid and umask 077), whoever runs us; checks made on the
 * way are that user's too (root's runner must not write where the user
 * could not). */
struct gs__jobs_fs {
  unsigned uid, gid;
  mode_t umask;
};
void gs__jobs_fs_as(unsigned uid, unsigned gid, struct gs__jobs_fs *saved);
void gs__jobs_fs_restore(const struct gs__jobs_fs *saved);
/* True when the file system identity is uid (fs_as took effect). */
bool gs__jobs_fs_is(unsigned uid);

/* ---- starting a process (run.c) ---- */

/* gs_jobs_spawn with more: as the account `as` (NULL: as we are), in a
 * session of its own (new_session: so a cancel or a terminal does not mix
 * it with its runner). */
struct gs__jobs_spawn {
  const char *log_path;
  int stdin_fd;
  const struct gs_jobs_track *track;
  const struct gs__jobs_account *as;
  bool new_session;
};
int gs__jobs_spawn(struct gs_err *err, char *const *argv, char *const *envp,
                   const struct gs__jobs_spawn *o, pid_t *pid);
/* The cgroup of job, made by tracker (a shepherd, which forked from us, so
 * its cgroup is ours) that died: its members are killed and it goes. */
void gs__jobs_track_forget(const char *job, int tracker);
/* In a child of the tracker: joins the job's cgroup. 0 or an errno. */
int gs__jobs_track_join(const struct gs_jobs_track *t);

/* ---- the queue's files (spool.c) ---- */

/* Rereads job `id` under the queue lock, lets fn change it (fn returns false
 * to leave it as it is), and writes it back as its owner. */
int gs__jobs_edit(struct gs_err *err, const char *dir, const char *id,
                  bool (*fn)(struct gs_jobs_job *j, void *arg), void *arg);

/* Makes queue/, queue/bad/ and claims/ in dir. In a shared dir (mode 1777)
 * they must be root's (or the dir owner's) with mode 1777, and so must the
 * lock files queue.lock, queue-runner.lock and claims.json.lock, mode 0644;
 * only they create them, and a wrong one is refused with the fix. */
int gs__jobs_layout(struct gs_err *err, const char *dir);

#endif
