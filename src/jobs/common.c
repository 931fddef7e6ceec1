/* SPDX-License-Identifier: Apache-2.0 */
/* common.c: the jobs layer's shared pieces: its state directory, memory
 * sizes, modes, process liveness, and the typed readers and atomic writer of
 * its JSON files. Knows no scheduling. */
#include "jobs/internal.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- the directory ---- */

int gs__jobs_path(struct gs_err *err, char out[PATH_MAX], const char *dir, const char *name)
{
  int n = snprintf(out, PATH_MAX, "%s/%s", dir, name);
  if (n < 0 || n >= PATH_MAX)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "%s/%s: path is too long", dir, name);
  return 0;
}

bool gs__jobs_emulated(struct gs_backend *b)
{
  return gs_backend_emulated(b);
}

/* $GPUSLICE_JOBS_DIR, else beside the emulator's state, else "jobs" in the
 * user's state directory; never a fixed name in a shared one (/tmp). */
static int default_dir(struct gs_err *err, struct gs_backend *b, char out[PATH_MAX])
{
  const char *env = getenv("GPUSLICE_JOBS_DIR");
  char state[PATH_MAX];
  int n, rc;
  if (env && *env)
    n = snprintf(out, PATH_MAX, "%s", env);
  else if (gs__jobs_emulated(b))
    n = snprintf(out, PATH_MAX, "%s.jobs", gs_backend_state_base(b));
  else if ((rc = gs_file_state_dir(err, "GPUSLICE_JOBS_DIR=DIR (or pass --jobs-dir DIR)", state)))
    return rc;
  else
    n = snprintf(out, PATH_MAX, "%s/jobs", state);
  if (n < 0 || n >= PATH_MAX - 64)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "the jobs directory path is too long; set "
                      "GPUSLICE_JOBS_DIR to a shorter one");
  return 0;
}

int gs_jobs_dir_name(struct gs_err *err, struct gs_backend *b, const char *override,
                     char out[PATH_MAX])
{
  if (!override || !*override)
    return default_dir(err, b, out);
  if (strlen(override) >= PATH_MAX - 64)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "--jobs-dir %.64s...: path is too long",
                      override);
  if (out != override) /* callers may pass one buffer for both */
    snprintf(out, PATH_MAX, "%s", override);
  return 0;
}

int gs_jobs_dir(struct gs_err *err, struct gs_backend *b, const char *override, char out[PATH_MAX])
{
  char probe[PATH_MAX];
  int rc;
  if ((rc = gs_jobs_dir_name(err, b, override, out)) != 0)
    return rc;
  /* Created private (0700); a shared one is made by its administrator.
   * Checked on every use: another user's directory could hand us jobs. */
  if ((rc = gs__jobs_path(err, probe, out, "x")) != 0 ||
      (rc = gs_file_make_parent(err, probe)) != 0 || (rc = gs_file_check_dir(err, out)) != 0)
    return rc;
  return gs__jobs_layout(err, out);
}

/* ---- sizes ---- */

int gs_jobs_parse_size(struct gs_err *err, const char *what, const char *text, uint64_t *mib)
{
  static const struct { const char *unit; double bytes; } units[] = {
      {"", 1048576.0}, /* a bare number is MiB, as NVML reports memory */
      {"m", 1e6}, {"mb", 1e6}, {"mib", 1048576.0},
      {"g", 1e9}, {"gb", 1e9}, {"gib", 1073741824.0},
      {"t", 1e12}, {"tb", 1e12}, {"tib", 1099511627776.0},
  };
  char *end, unit[8];
  double v;
  size_t k;
  errno = 0;
  v = text && (isdigit((unsigned char)*text) || *text == '.') ? strtod(text, &end) : -1;
  /* Plain decimals only: strtod's hex and exponents are not sizes people write. */
  if (v < 0 || errno || !isfinite(v) || strspn(text, "0123456789.") != (size_t)(end - text) ||
      strlen(end) >= sizeof(unit))
    goto bad;
  for (k = 0; end[k]; k++)
    unit[k] = (char)tolower((unsigned char)end[k]);
  unit[k] = 0;
  for (k = 0; k < GS_NITEMS(units); k++)
    if (strcmp(unit, units[k].unit) == 0) {
      double m = ceil(v * units[k].bytes / 1048576.0);
      if (m < 1 || m > 1e12)
        goto bad;
      *mib = (uint64_t)m;
      return 0;
    }
bad:
  return gs_err_set(err, GS_E_INVALID_ARGUMENT,
                    "%s '%.40s': expected a size such as 8GiB, 8G (10^9 bytes), 4864MiB or 500MB",
                    what, text ? text : "");
}

/* ---- modes ---- */

static const char *const mode_names[] = {"mig", "timeslice", "mps"};

const char *gs_jobs_mode_name(enum gs_jobs_mode m)
{
  return (unsigned)m < GS_NITEMS(mode_names) ? mode_names[m] : "?";
}

int gs_jobs_mode_parse(const char *text, enum gs_jobs_mode *out)
{
  for (unsigned i = 0; i < GS_NITEMS(mode_names); i++)
    if (text && strcmp(text, mode_names[i]) == 0) {
      *out = (enum gs_jobs_mode)i;
      return 0;
    }
  return GS_E_INVALID_ARGUMENT;
}

/* ---- processes ---- */

bool gs__jobs_alive(int pid, uint64_t start)
{
  uint64_t now = gs_proc_start(pid);
  return now != 0 && (start == 0 || now == start);
}

double gs__jobs_now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- JSON ---- */

static int bad_field(struct gs_err *err, const char *origin, const char *where, const char *key,
                     const char *what)
{
  gs_err_set(err, GS_E_CORRUPT_STATE, "%s: %s%s%s: %s", origin, where, *where ? "." : "", key,
             what);
  /* Damaged files must not reach a terminal raw. */
  for (char *p = err ? err->msg : NULL; p && *p; p++)
    if ((unsigned char)*p < 0x20 || *p == 0x7f)
      *p = '?';
  return GS_E_CORRUPT_STATE;
}

int gs__jobs_get_str(struct gs_err *err, const char *origin, const char *where, json_t *obj,
                     const char *key, char *out, size_t size)
{
  json_t *v = json_object_get(obj, key);
  if (!json_is_string(v))
    return bad_field(err, origin, where, key, "expected a string");
  if (json_string_length(v) >= size || strlen(json_string_value(v)) != json_string_length(v))
    return bad_field(err, origin, where, key, "string too long or holds a NUL byte");
  memcpy(out, json_string_value(v), json_string_length(v) + 1);
  return 0;
}

int gs__jobs_get_uint(struct gs_err *err, const char *origin, const char *where, json_t *obj,
                      const char *key, uint64_t max, uint64_t *out)
{
  json_t *v = json_object_get(obj, key);
  if (!json_is_integer(v) || json_integer_value(v) < 0 || (uint64_t)json_integer_value(v) > max)
    return bad_field(err, origin, where, key, "expected a non-negative integer in range");
  *out = (uint64_t)json_integer_value(v);
  return 0;
}

int gs__jobs_get_int(struct gs_err *err, const char *origin, const char *where, json_t *obj,
                     const char *key, int64_t min, int64_t max, int64_t *out)
{
  json_t *v = json_object_get(obj, key);
  if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max)
    return bad_field(err, origin, where, key, "expected an integer in range");
  *out = json_integer_value(v);
  return 0;
}

int gs__jobs_get_time(struct gs_err *err, const char *origin, const char *where, json_t *obj,
                      const char *key, double *out)
{
  json_t *v = json_object_get(obj, key);
  if (!json_is_number(v) || !(json_number_value(v) >= 0) || json_number_value(v) > 1e11)
    return bad_field(err, origin, where, key, "expected a time in epoch seconds");
  *out = json_number_value(v);
  return 0;
}

int gs__jobs_get_bool(struct gs_err *err, const char *origin, const char *where, json_t *obj,
                      const char *key, bool *out)
{
  json_t *v = json_object_get(obj, key);
  if (!json_is_boolean(v))
    return bad_field(err, origin, where, key, "expected true or false");
  *out = json_is_true(v);
  return 0;
}

int gs__jobs_parse_root(struct gs_err *err, const char *origin, const char *text, size_t len,
                        const char *format, json_t **root)
{
  json_error_t je;
  json_t *r = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je), *f;
  *root = NULL;
  if (!r)
    return bad_field(err, origin, "", "json", je.text);
  f = json_object_get(r, "format");
  if (!json_is_object(r) || !json_is_string(f) || strcmp(json_string_value(f), format) != 0) {
    json_decref(r);
    return gs_err_set(err, GS_E_CORRUPT_STATE, "%s: not a %s file; move it away", origin, format);
  }
  if (json_integer_value(json_object_get(r, "version")) != 1) {
    json_decref(r);
    return gs_err_set(err, GS_E_CORRUPT_STATE, "%s: version is not 1; this gpuslice reads "
                      "version 1 only", origin);
  }
  *root = r;
  return 0;
}

int gs__jobs_save_json(struct gs_err *err, const char *path, json_t *v)
{
  char *text = v ? json_dumps(v, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
  int rc;
  json_decref(v);
  if (!text)
    return gs_err_set(err, GS_E_NO_MEMORY, "%s: out of memory writing the file", path);
  rc = gs_file_write_atomic(err, path, text, strlen(text));
  free(text);
  return rc;
}
