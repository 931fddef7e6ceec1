/* SPDX-License-Identifier: Apache-2.0 */
/* util.h: the shared utilities every layer may use: error records, whole-file
 * reads, atomic file replacement under a lock, small hashing helpers, a
 * process's /proc/<pid>/stat and start time, HOST:PORT text, durations, latency
 * histograms and strict YAML reading.
 * Nothing here knows what a GPU is (DESIGN.md, "Shared utilities"). */
#ifndef GS_UTIL_H
#define GS_UTIL_H

#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GS_NITEMS(a) (sizeof(a) / sizeof((a)[0]))
/* The struct of type that holds member at ptr (an intrusive node's owner). */
#define GS_CONTAINER_OF(ptr, type, member) ((type *)(void *)((char *)(ptr) - offsetof(type, member)))

#if defined(__GNUC__)
#define GS_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define GS_PRINTF(f, a)
#endif

/* Error codes: the conditions every layer reports, by name. Their order is
 * their value. What NVML calls each (its nvmlReturn_t value and text, so the
 * emulator and the NVML backend speak one vocabulary) is the backend's
 * (gs_backend_code_nvml, backend/codes.c): nothing here knows a GPU. */
#define GS_CODE_MAP(X)                                                         \
  X(UNINITIALIZED)                                                             \
  X(INVALID_ARGUMENT)                                                          \
  X(NOT_SUPPORTED)                                                             \
  X(NO_PERMISSION)                                                             \
  X(NOT_FOUND)                                                                 \
  X(INSUFFICIENT_SIZE)                                                         \
  X(DRIVER_NOT_LOADED)                                                         \
  X(LIBRARY_NOT_FOUND)                                                         \
  X(FUNCTION_NOT_FOUND)                                                        \
  X(GPU_IS_LOST)                                                               \
  X(RESET_REQUIRED)                                                            \
  X(IN_USE)                                                                    \
  X(NO_MEMORY)                                                                 \
  X(INSUFFICIENT_RESOURCES)                                                    \
  X(ARGUMENT_VERSION_MISMATCH)                                                 \
  X(UNKNOWN)                                                                   \
  X(IO)                                                                        \
  X(CORRUPT_STATE)                                                             \
  X(USAGE)                                                                     \
  X(UNTRUSTED_FILE)

/* Indexes into GS_CODE_MAP; public codes are their negatives minus one:
 * GS_E_INVALID_ARGUMENT == -1, GS_E_NOT_SUPPORTED == -2, ... */
enum gs__code_index {
#define GS__CODE_INDEX(name) GS_E__INDEX_##name,
  GS_CODE_MAP(GS__CODE_INDEX)
#undef GS__CODE_INDEX
  GS_E__COUNT
};

#define GS_OK 0
#define GS__CODE_NEG(name) GS_E_##name = -(GS_E__INDEX_##name + 1),
enum gs_code { GS_CODE_MAP(GS__CODE_NEG) GS_E__LAST = 0 };
#undef GS__CODE_NEG

#define GS_ERR_MSG_SIZE 512

/* An error record owned by the caller; functions fill it and return its code.
 * Every function that takes one accepts NULL (the message is then dropped). */
struct gs_err {
  int code;                 /* 0 or a GS_E_* value */
  char msg[GS_ERR_MSG_SIZE];
};

/* Records code and message; returns code so callers can `return gs_err_set(..)`. */
int gs_err_set(struct gs_err *err, int code, const char *fmt, ...) GS_PRINTF(3, 4);
int gs_err_vset(struct gs_err *err, int code, const char *fmt, va_list ap) GS_PRINTF(3, 0);
void gs_err_clear(struct gs_err *err);
/* Short name of a code, e.g. "IN_USE"; "OK" for 0; "UNKNOWN" otherwise. */
const char *gs_code_name(int code);

/* Reads a whole file into a NUL-terminated heap buffer the caller frees.
 * A missing file is GS_E_NOT_FOUND; limit caps the size accepted. For files
 * the user names (configs, inputs, stdin); gpuslice's own files are read with
 * gs_file_read_private. */
int gs_file_read(struct gs_err *err, const char *path, size_t limit, char **data, size_t *len);

/* gpuslice's own files (state, locks, journals, spool) are opened only through
 * gs_file_open_private, which refuses, as GS_E_UNTRUSTED_FILE naming the path
 * and the fix, what another local user could have put in their place:
 *  - a symbolic link (never followed), or anything but a regular file: a FIFO
 *    is opened without blocking (O_NONBLOCK) and then refused, never read;
 *  - a file owned by anyone but the caller or root, or writable by group or
 *    others;
 *  - a file in a directory someone else could swap it in: its directory and
 *    each one above must be owned by the caller or root, and not writable by
 *    group or others unless sticky (as /tmp is).
 * A missing file (or directory) is GS_E_NOT_FOUND, one the caller may not
 * open GS_E_NO_PERMISSION. Flags: */
#define GS_FILE_WRITE 0x1u     /* read-write; else read-only */
#define GS_FILE_CREATE 0x2u    /* create when missing (mode 0644 less the umask) */
#define GS_FILE_EXCL 0x4u      /* create a new file; one already there is GS_E_IN_USE */
#define GS_FILE_OTHER_ACCOUNT 0x8u /* also a file of another account, which the caller reads
                                  on purpose and then checks by st's owner (root's queue
                                  runner reading a submitter's job, a user's claims ledger):
                                  the owner must be in the password database, and the
                                  other checks hold */
#define GS_FILE_PUBLIC 0x10u   /* a file the user named (an output): only the link and
                                  file-type checks, no owner or directory checks */
#define GS_FILE_APPEND 0x20u   /* with WRITE: every write at the end (logs) */
#define GS_FILE_OWNER_ONLY 0x40u /* create with mode 0600, not 0644 (a job's log) */
struct stat;
/* Opens path into *fd (close-on-exec; O_NONBLOCK, which a regular file
 * ignores) and, when st is not NULL, fills it from fstat of that descriptor. */
int gs_file_open_private(struct gs_err *err, const char *path, unsigned flags, int *fd,
                         struct stat *st);
/* gs_file_read of a file opened by gs_file_open_private (flags: OTHER_ACCOUNT). */
int gs_file_read_private(struct gs_err *err, const char *path, size_t limit, unsigned flags,
                         char **data, size_t *len);
/* Reads an open descriptor (of path, for the messages) to its end, as
 * gs_file_read does; for a caller that checked the file (its owner, from
 * gs_file_open_private's st) before reading it. fd stays open. */
int gs_file_read_fd(struct gs_err *err, const char *path, int fd, size_t limit, char **data,
                    size_t *len);
/* The checks gs_file_open_private makes of a file's directories, for a
 * directory itself (a jobs directory before it is listed). */
int gs_file_check_dir(struct gs_err *err, const char *dir);

/* Where a user's state lives by default: "<base>/gpuslice", base being
 * $XDG_STATE_HOME, else $HOME/.local/state, else /var/lib for root, else
 * $XDG_RUNTIME_DIR (emptied at logout); relative values are ignored, as the
 * XDG base directory spec says. Never a fixed name in a shared directory:
 * with none of them, GS_E_NOT_FOUND saying to set HOME or `instead` (e.g.
 * "GPUSLICE_EMU_STATE=FILE"). Nothing is created. */
int gs_file_state_dir(struct gs_err *err, const char *instead, char out[PATH_MAX]);

/* Replaces path, one of gpuslice's own files, with data atomically: writes a
 * new temporary file in the same directory (a random name, O_EXCL, through
 * gs_file_open_private), fsyncs it, renames it over path and fsyncs the
 * directory, so a crash at any moment leaves either the old or the new
 * content. Temporary files of writers that died before their rename are
 * removed on the way. */
int gs_file_write_atomic(struct gs_err *err, const char *path, const char *data, size_t len);
/* The same for a file the user named (an output): no owner or directory
 * checks (GS_FILE_PUBLIC), the rest alike. */
int gs_file_write_public(struct gs_err *err, const char *path, const char *data, size_t len);

/* An advisory lock (flock) on "<path>.lock", created if needed and opened by
 * gs_file_open_private. The lock file is separate from path because path is
 * replaced by rename on every write. A lock another process holds is waited
 * for at most $GPUSLICE_LOCK_WAIT seconds (default GS_FILE_LOCK_WAIT), then
 * GS_E_IN_USE naming the lock file and its holder: never an unbounded hang. */
#define GS_FILE_LOCK_WAIT 30
struct gs_file_lock {
  int fd;
};
int gs_file_lock(struct gs_err *err, const char *path, int exclusive, struct gs_file_lock *lock);
void gs_file_unlock(struct gs_file_lock *lock);
/* The exclusive lock, waiting at most `seconds` (0: not at all) while another
 * process holds it; then GS_E_IN_USE naming the lock file and its holder. */
int gs_file_lock_wait(struct gs_err *err, const char *path, unsigned seconds, struct gs_file_lock *lock);
/* fn gets one line when a wait for a lock has lasted a second ("waiting for
 * <lock>, held by pid 42 (python3), at most 30 s"), so a wait is never
 * silent; the CLI prints it. Process-wide, set once at start; NULL: none. */
void gs_file_set_lock_notice(void (*fn)(const char *line));

/* Creates every missing directory of path's parent (mkdir -p of dirname),
 * each with mode 0700: gpuslice's state directories are private unless an
 * administrator makes one shared (docs/jobs.md). */
int gs_file_make_parent(struct gs_err *err, const char *path);
/* The same with mode (less the umask) for a tree others must reach, such as
 * an emulated /dev or a test's scratch directory. */
int gs_file_make_parent_mode(struct gs_err *err, const char *path, unsigned mode);

/* Reads /proc/<pid>/stat into buf and returns its fields after the command
 * name (" S ppid pgrp ...": the state is the first); NULL when the process
 * is gone. The name may hold spaces and ')', so they start after the last ')'. */
const char *gs_proc_stat(int pid, char *buf, size_t size);
/* A process's start time (field 22 of /proc/<pid>/stat, clock ticks since
 * boot): with the pid it names one process for good, as a pid alone may be
 * reused. 0 when the process is gone or a zombie (a live process started at
 * tick 0 reads 1, so 0 always means gone). */
uint64_t gs_proc_start(int pid);

/* "HOST:PORT" as an option, URL or header gives it (src/util/hostport.c):
 * "127.0.0.1:8000", "[::1]:8000", ":8000" or "*:8000" (no host: any), and
 * with GS_HOSTPORT_PORT_OPTIONAL a bare "localhost". Errors are GS_E_USAGE
 * naming `what` (the option, e.g. "--listen"), the text and the fix. */
#define GS_HOSTPORT_PORT_ZERO 1u     /* port 0 is allowed (a listener: any free port) */
#define GS_HOSTPORT_PORT_OPTIONAL 2u /* "HOST" alone is allowed: has_port false, port 0 */
#define GS_HOSTPORT_HOST_REQUIRED 4u /* ":PORT" (no host) is refused */
struct gs_hostport {
  char host[256]; /* without brackets; "" when absent */
  unsigned port;
  bool has_port;
  bool bracketed; /* "[v6]" */
};
int gs_hostport_parse(struct gs_err *err, const char *what, const char *text, unsigned flags,
                      struct gs_hostport *out);

/* A duration's text ("250ms", "10s", "2m", "1.5h"; units us, ms, s, m, h) in
 * microseconds, from min_us to max_us. A bare number counts bare_unit_us
 * (an option's unit from before it took units); 0 refuses one. Errors are
 * GS_E_INVALID_ARGUMENT naming `what` and the syntax (duration.c). */
int gs_duration_parse(struct gs_err *err, const char *what, const char *text, uint64_t bare_unit_us,
                      uint64_t min_us, uint64_t max_us, uint64_t *out);
/* us as the largest unit that writes it exactly ("90s", "2m", "250ms"). */
void gs_duration_format(uint64_t us, char *buf, size_t size);

/* A 128-bit non-cryptographic hash of a byte string, stable across runs and
 * hosts; used where an identifier must be derived, not drawn at random. */
void gs_hash128(const void *data, size_t len, uint8_t out[16]);
/* Formats 16 bytes as a version-5-shaped UUID text (8-4-4-4-12, lower hex). */
void gs_uuid_format(const uint8_t bytes[16], char out[37]);

/* A latency histogram of bounded memory and fixed relative precision
 * (HdrHistogram's class, our own layout): values below 2048 are exact; above,
 * each power of two is cut into 1024 equal buckets, so a value is known within
 * 1/1024 of itself and reported (bucket midpoint) within 1/2048. Values are in
 * any unit; recorded in nanoseconds the range is 1 ns to 2^42 ns (73 minutes),
 * i.e. at least 3 significant digits from 1 µs to 1 h. Larger values count in
 * the top bucket and in `clamped`. Mergeable: gs_hist_add sums two. */
#define GS_HIST_SUB_BITS 10
#define GS_HIST_MAX_BITS 42
#define GS_HIST_BUCKETS ((GS_HIST_MAX_BITS - GS_HIST_SUB_BITS + 1) << GS_HIST_SUB_BITS)

struct gs_hist {
  uint64_t count, clamped;
  uint64_t min, max;   /* exact; min is UINT64_MAX while empty */
  double sum;          /* exact mean = sum / count */
  uint64_t buckets[GS_HIST_BUCKETS];
};

void gs_hist_reset(struct gs_hist *h);
void gs_hist_record(struct gs_hist *h, uint64_t value);
void gs_hist_record_n(struct gs_hist *h, uint64_t value, uint64_t n);
/* dst += src (merging threads' or windows' histograms). */
void gs_hist_add(struct gs_hist *dst, const struct gs_hist *src);
/* The value at percentile p (0..100) by the nearest-rank rule: the recorded
 * value of rank ceil(p/100 * count) (rank 1 for p = 0), reported as its
 * bucket's midpoint clamped to [min, max]; 0 when empty. */
uint64_t gs_hist_percentile(const struct gs_hist *h, double p);
double gs_hist_mean(const struct gs_hist *h);
/* Bucket index of a value and the bucket's [low, high] range (tests, dumps). */
size_t gs_hist_index(uint64_t value);
void gs_hist_bucket_range(size_t index, uint64_t *low, uint64_t *high);

/* Strict YAML reading over libyaml's document API (layout configs, planner
 * inputs, serve files). Errors read "<origin>:<line>: <where>: <what>", where
 * is the dotted path of keys ("configs.a[0].devices"; left out when empty).
 * libyaml's types are only forward-declared: yaml_node_t is struct yaml_node_s. */
struct yaml_document_s;
struct yaml_node_s;

struct gs_yaml {
  struct gs_err *err;
  const char *origin;           /* the file name errors begin with */
  struct yaml_document_s *doc;
  void *user;                   /* the reader's own state, given to gs_yaml_load */
};

/* Parses text and calls fn on the root node (NULL for an empty document);
 * text that is not YAML is GS_E_INVALID_ARGUMENT naming the line. */
typedef int (*gs_yaml_doc_fn)(const struct gs_yaml *y, const struct yaml_node_s *root);
int gs_yaml_load(struct gs_err *err, const char *origin, const char *text, size_t len,
                 gs_yaml_doc_fn fn, void *user);

/* Sets GS_E_INVALID_ARGUMENT with n's line (1 when n is NULL) and returns it. */
int gs_yaml_bad(const struct gs_yaml *y, const struct yaml_node_s *n, const char *where,
                const char *fmt, ...) GS_PRINTF(4, 5);
unsigned gs_yaml_line(const struct yaml_node_s *n);
/* A scalar's text, or NULL for a list, a map or no node. */
const char *gs_yaml_scalar(const struct yaml_node_s *n);
/* "a value", "a list", "a map" or "nothing", for "expected X, found Y". */
const char *gs_yaml_kind(const struct yaml_node_s *n);
bool gs_yaml_is_list(const struct yaml_node_s *n);
bool gs_yaml_is_map(const struct yaml_node_s *n);
/* Item counts; 0 for a node of another kind. */
unsigned gs_yaml_seq_len(const struct yaml_node_s *n);
unsigned gs_yaml_map_len(const struct yaml_node_s *n);
/* The i-th item of a list, NULL past its end. */
const struct yaml_node_s *gs_yaml_seq_item(const struct gs_yaml *y, const struct yaml_node_s *n,
                                           unsigned i);
/* The value of key in map, NULL when absent or map is not a map. */
const struct yaml_node_s *gs_yaml_lookup(const struct gs_yaml *y, const struct yaml_node_s *map,
                                         const char *key);

/* Typed scalars: true/True/yes or false/False/no; a decimal from 0 to max;
 * a non-empty string that fits size bytes with its NUL. */
int gs_yaml_get_bool(const struct gs_yaml *y, const struct yaml_node_s *n, const char *where, bool *out);
int gs_yaml_get_uint(const struct gs_yaml *y, const struct yaml_node_s *n, const char *where,
                     unsigned max, unsigned *out);
int gs_yaml_get_name(const struct gs_yaml *y, const struct yaml_node_s *n, const char *where,
                     char *out, size_t size);

/* Calls fn on each pair of map in order, with where extended by the key;
 * stops at fn's first non-zero return. A non-map, a non-scalar key, a key
 * seen before in the map and (when allowed is not NULL) a key outside allowed
 * ("a, b, c", quoted as is in the error) are errors. */
typedef int (*gs_yaml_key_fn)(const struct gs_yaml *y, const char *key, const struct yaml_node_s *value,
                              const char *where, void *arg);
int gs_yaml_each_pair(const struct gs_yaml *y, const struct yaml_node_s *map, const char *where,
                      const char *allowed, gs_yaml_key_fn fn, void *arg);

/* ---- logging (log.c): one logger, silent until the caller sets a sink ---- */

/* What a library has to say, for whoever runs it: the decisions it makes
 * (a worker joins the pool, the autoscaler grows), not each request. The
 * front end (cli) decides where it goes and how it looks (plain lines,
 * journald priorities, JSON): a sink gets each event whole. */
/* INFO: progress a person running it follows (workers joining, the
 * autoscaler's steps); NOTICE: a change of course (draining, stopped);
 * WARN: something failed and was worked around; ERR: it was not. */
enum gs_log_level { GS_LOG_DEBUG, GS_LOG_INFO, GS_LOG_NOTICE, GS_LOG_WARN, GS_LOG_ERR };
/* A named value that goes with a message, for sinks that keep fields apart. */
struct gs_log_field {
  const char *key, *value;
};
/* source: the part speaking ("serve", "autoscale"); msg: one line, no newline. */
typedef void gs_log_sink_fn(void *ctx, enum gs_log_level level, const char *source,
                            const char *msg, const struct gs_log_field *fields, size_t nfields);
/* Sets the sink (NULL: silent, the default) and the lowest level it gets.
 * Set before threads start; the sink may be called from any thread. */
void gs_log_set_sink(gs_log_sink_fn *fn, void *ctx, enum gs_log_level min);
/* True when a message of level would reach the sink (skip costly formatting). */
bool gs_log_enabled(enum gs_log_level level);
/* One event; fields may be NULL. Messages longer than 1 KiB are cut. */
void gs_log(enum gs_log_level level, const char *source, const struct gs_log_field *fields,
            size_t nfields, const char *fmt, ...) GS_PRINTF(5, 6);
#define gs_log_info(source, ...) gs_log(GS_LOG_INFO, (source), NULL, 0, __VA_ARGS__)
#define gs_log_notice(source, ...) gs_log(GS_LOG_NOTICE, (source), NULL, 0, __VA_ARGS__)
#define gs_log_warn(source, ...) gs_log(GS_LOG_WARN, (source), NULL, 0, __VA_ARGS__)
#define gs_log_err(source, ...) gs_log(GS_LOG_ERR, (source), NULL, 0, __VA_ARGS__)

#endif
