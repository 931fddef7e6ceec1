/* internal.h: what the jobs layer's files share and nothing outside uses:
 * process liveness, the JSON field readers of its state files, locking of
 * its directory, and the emulated-GPU test. */
#ifndef GS_JOBS_INTERNAL_H
#define GS_JOBS_INTERNAL_H

#include <jansson.h>

#include "jobs/jobs.h"

/* Start time of a live process (field 22 of /proc/<pid>/stat), 0 if it is gone. */
uint64_t gs__jobs_proc_start(int pid);
/* True while pid runs and (when start != 0) is the same process. */
bool gs__jobs_alive(int pid, uint64_t start);
double gs__jobs_now(void);
/* True on emulated GPUs. */
bool gs__jobs_emulated(struct gs_backend *b);

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

#endif
