/* SPDX-License-Identifier: Apache-2.0 */
/* util.c: error records and code names, whole-file reads, atomic file
 * replacement, advisory locks, the hash that derives stable identifiers, and
 * the fields of /proc/<pid>/stat.
 * Nothing here knows what a GPU is (DESIGN.md, "Shared utilities"); nothing
 * here prints or exits: every failure is a code plus a caller-owned message. */
#include "util/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---------------------------------------------------------------- errors */

int gs_err_vset(struct gs_err *err, int code, const char *fmt, va_list ap)
{
  /* Format into a scratch buffer first: callers may pass err->msg itself as
   * an argument ("%s; run ..."), and vsnprintf must not read what it writes. */
  char tmp[GS_ERR_MSG_SIZE];
  int n;

  if (err == NULL)
    return code;
  n = fmt ? vsnprintf(tmp, sizeof tmp, fmt, ap) : 0;
  if (n < 0)
    n = 0, tmp[0] = '\0';
  if ((size_t)n >= sizeof tmp) /* truncated: say so rather than end mid-word silently */
    memcpy(tmp + sizeof tmp - 4, "...", 4);
  err->code = code;
  memcpy(err->msg, tmp, sizeof tmp);
  return code;
}

int gs_err_set(struct gs_err *err, int code, const char *fmt, ...)
{
  va_list ap;

  va_start(ap, fmt);
  gs_err_vset(err, code, fmt, ap);
  va_end(ap);
  return code;
}

void gs_err_clear(struct gs_err *err)
{
  if (err == NULL)
    return;
  err->code = 0;
  err->msg[0] = '\0';
}

/* The codes' short names, in GS_CODE_MAP's order (code -1 first). */
static const char *const gs__code_names[] = {
#define GS__CODE_NAME(name) #name,
    GS_CODE_MAP(GS__CODE_NAME)
#undef GS__CODE_NAME
};

const char *gs_code_name(int code)
{
  if (code == GS_OK)
    return "OK";
  if (code < 0 && -code <= (int)GS_NITEMS(gs__code_names))
    return gs__code_names[-code - 1];
  return "UNKNOWN";
}

/* ----------------------------------------------------------------- files */

int gs__dirname(struct gs_err *err, const char *path, char dir[PATH_MAX])
{
  const char *slash = strrchr(path, '/');
  size_t n;

  if (slash == NULL) {
    memcpy(dir, ".", 2);
    return 0;
  }
  n = slash == path ? 1 : (size_t)(slash - path); /* "/x" lives in "/" */
  if (n >= PATH_MAX)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "%s: path is too long", path);
  memcpy(dir, path, n);
  dir[n] = '\0';
  return 0;
}

/* Reads fd to EOF into a buffer that grows up to limit + 1 bytes, one more
 * than allowed, so an oversized file is seen even when fstat lied (pipes,
 * /proc, a file growing under us). */
static int gs__read_fd(struct gs_err *err, const char *path, int fd, size_t limit, size_t hint,
                       char **data, size_t *len)
{
  size_t cap = hint < limit ? hint + 1 : limit + 1, used = 0;
  char *buf = NULL, *nbuf;
  ssize_t n;

  if (cap < 256)
    cap = limit + 1 < 256 ? limit + 1 : 256;
  if ((buf = malloc(cap + 1)) == NULL)
    goto nomem;
  for (;;) {
    if (used == cap) {
      if (cap > limit) {
        free(buf);
        return gs_err_set(err, GS_E_INVALID_ARGUMENT, "%s: file is larger than the %zu-byte limit",
                          path, limit);
      }
      cap = cap > (limit + 1) / 2 ? limit + 1 : cap * 2;
      if ((nbuf = realloc(buf, cap + 1)) == NULL)
        goto nomem;
      buf = nbuf;
    }
    n = read(fd, buf + used, cap - used);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      int e = errno;
      free(buf);
      return gs_err_set(err, GS_E_IO, "%s: cannot read: %s", path, strerror(e));
    }
    if (n == 0)
      break;
    used += (size_t)n;
  }
  buf[used] = '\0';
  *data = buf;
  *len = used;
  return 0;
nomem:
  free(buf);
  return gs_err_set(err, GS_E_NO_MEMORY, "%s: out of memory reading the file", path);
}

int gs_file_read_fd(struct gs_err *err, const char *path, int fd, size_t limit, char **data,
                    size_t *len)
{
  struct stat sb;
  size_t hint = 0;

  *data = NULL;
  *len = 0;
  if (limit > SIZE_MAX - 2) /* keep limit + 2 (the sentinel byte and the NUL) representable */
    limit = SIZE_MAX - 2;
  if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0) {
    if ((uintmax_t)sb.st_size > limit) /* refuse before allocating for it */
      return gs_err_set(err, GS_E_INVALID_ARGUMENT, "%s: file is larger than the %zu-byte limit",
                        path, limit);
    hint = (size_t)sb.st_size;
  }
  return gs__read_fd(err, path, fd, limit, hint, data, len);
}

/* gs_file_read_fd, then the descriptor closed. */
static int gs__read_opened(struct gs_err *err, const char *path, int fd, size_t limit, char **data,
                           size_t *len)
{
  int rc = gs_file_read_fd(err, path, fd, limit, data, len);

  close(fd);
  return rc;
}

int gs_file_read(struct gs_err *err, const char *path, size_t limit, char **data, size_t *len)
{
  int fd;

  *data = NULL;
  *len = 0;
  do
    fd = open(path, O_RDONLY | O_CLOEXEC);
  while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    int e = errno;
    if (e == ENOENT)
      return gs_err_set(err, GS_E_NOT_FOUND, "%s: no such file", path);
    return gs_err_set(err, GS_E_IO, "%s: cannot open: %s", path, strerror(e));
  }
  return gs__read_opened(err, path, fd, limit, data, len);
}

int gs_file_read_private(struct gs_err *err, const char *path, size_t limit, unsigned flags,
                         char **data, size_t *len)
{
  int fd, rc;

  *data = NULL;
  *len = 0;
  if ((rc = gs_file_open_private(err, path, flags & GS_FILE_OTHER_ACCOUNT, &fd, NULL)) != 0)
    return rc;
  return gs__read_opened(err, path, fd, limit, data, len);
}

/* Writes all of data, resuming after short writes and signals. */
static int gs__write_all(int fd, const char *data, size_t len)
{
  while (len > 0) {
    ssize_t n = write(fd, data, len);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return -1;
    data += n;
    len -= (size_t)n;
  }
  return 0;
}

/* fsyncs a directory so a rename inside it survives a crash. Filesystems that
 * cannot sync directories say EINVAL; there is nothing more to do there. */
static int gs__sync_dir(const char *dir)
{
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc, e;

  if (fd < 0)
    return -1;
  rc = fsync(fd);
  e = errno;
  close(fd);
  if (rc < 0 && e != EINVAL && e != ENOTSUP)
    return errno = e, -1;
  return 0;
}

/* Removes "<path>.tmp.<pid>[.<random>]" files whose writer is dead (killed
 * between creating and renaming them); a live writer's file is left alone,
 * and so is anything that is not our own regular file. */
static void gs__remove_stale_temps(const char *dir, const char *path)
{
  const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  size_t blen = strlen(base);
  struct dirent *d;
  struct stat sb;
  DIR *dp = opendir(dir);

  while (dp && (d = readdir(dp)) != NULL) {
    char *end, full[PATH_MAX];
    long pid;
    if (strncmp(d->d_name, base, blen) != 0 || strncmp(d->d_name + blen, ".tmp.", 5) != 0)
      continue;
    pid = strtol(d->d_name + blen + 5, &end, 10);
    if ((*end && *end != '.') || pid <= 0 || pid == (long)getpid() || kill((pid_t)pid, 0) == 0 ||
        errno != ESRCH)
      continue;
    if ((size_t)snprintf(full, sizeof full, "%s/%s", dir, d->d_name) < sizeof full &&
        lstat(full, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_uid == geteuid())
      unlink(full);
  }
  if (dp)
    closedir(dp);
}

/* "<path>.tmp.<pid>.<16 hex digits>": the pid lets a later writer tell a dead
 * writer's leftover; the random part makes the name unguessable, so no one
 * can plant a file there beforehand (the open is O_EXCL in any case). */
static int gs__temp_name(struct gs_err *err, const char *path, char tmp[PATH_MAX])
{
  static unsigned long long counter;
  unsigned long long r = 0;
  int n;

  if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) {
    struct timespec ts; /* no entropy yet (early boot): unique, if guessable */
    uint8_t h[16];
    clock_gettime(CLOCK_MONOTONIC, &ts);
    r = (unsigned long long)ts.tv_nsec ^ ((unsigned long long)ts.tv_sec << 30) ^ ++counter;
    gs_hash128(&r, sizeof r, h);
    memcpy(&r, h, sizeof r);
  }
  n = snprintf(tmp, PATH_MAX, "%s.tmp.%ld.%016llx", path, (long)getpid(), r);
  if (n < 0 || n >= PATH_MAX)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "%s: path is too long", path);
  return 0;
}

/* Creates a new temporary file beside path into tmp and *fd. */
static int gs__create_temp(struct gs_err *err, const char *path, unsigned flags, char tmp[PATH_MAX],
                           int *fd)
{
  int rc = GS_E_IN_USE;

  for (int tries = 0; tries < 4 && rc == GS_E_IN_USE; tries++)
    if ((rc = gs__temp_name(err, path, tmp)) == 0)
      rc = gs_file_open_private(err, tmp, GS_FILE_WRITE | GS_FILE_EXCL | (flags & GS_FILE_PUBLIC),
                                fd, NULL);
  if (rc != 0 && rc != GS_E_UNTRUSTED_FILE && rc != GS_E_INVALID_ARGUMENT)
    rc = gs_err_set(err, GS_E_IO, "%s: cannot replace the file: %s", path, err ? err->msg : "");
  return rc;
}

static int gs__write_atomic(struct gs_err *err, const char *path, const char *data, size_t len,
                            unsigned flags)
{
  char tmp[PATH_MAX], dir[PATH_MAX];
  const char *step;
  int fd = -1, n, e, rc;

  if ((rc = gs__dirname(err, path, dir)) != 0)
    return rc;
  gs__remove_stale_temps(dir, path);
  if ((rc = gs__create_temp(err, path, flags, tmp, &fd)) != 0)
    return rc;
  step = "write";
  if (gs__write_all(fd, data, len) != 0)
    goto fail;
  step = "fsync";
  if (fsync(fd) != 0)
    goto fail;
  step = "close";
  n = close(fd);
  fd = -1;
  if (n != 0)
    goto fail;
  step = "rename";
  if (rename(tmp, path) != 0)
    goto fail;
  if (gs__sync_dir(dir) != 0) /* path already holds the new content; report, nothing to undo */
    return gs_err_set(err, GS_E_IO, "%s: replaced, but cannot fsync its directory %s: %s", path,
                      dir, strerror(errno));
  return 0;
fail:
  e = errno;
  if (fd >= 0)
    close(fd);
  unlink(tmp);
  return gs_err_set(err, GS_E_IO, "%s: cannot replace the file (%s of %s failed): %s", path, step,
                    tmp, strerror(e));
}

int gs_file_write_atomic(struct gs_err *err, const char *path, const char *data, size_t len)
{
  return gs__write_atomic(err, path, data, len, 0);
}

int gs_file_write_public(struct gs_err *err, const char *path, const char *data, size_t len)
{
  return gs__write_atomic(err, path, data, len, GS_FILE_PUBLIC);
}

/* The pause between tries for a lock: 1 ms at first, doubling to 10 ms.
 * Linux has no flock with a timeout, so a bounded wait polls; a short cap
 * keeps a long waiter from losing every race to newcomers, at a cost of at
 * most 100 wake-ups a second while it waits. */
static unsigned gs__lock_pause(unsigned pause_ms)
{
  struct timespec ts = {0, (long)pause_ms * 1000000L};
  nanosleep(&ts, NULL);
  return pause_ms * 2 > 10 ? 10 : pause_ms * 2;
}

static void (*gs__lock_notice)(const char *line);

void gs_file_set_lock_notice(void (*fn)(const char *line))
{
  gs__lock_notice = fn;
}

/* Tells the notice hook, once, that this wait goes on. */
static void gs__notice_wait(int fd, const char *name, unsigned wait_ms)
{
  char holder[96], line[PATH_MAX + 160];

  if (gs__lock_notice == NULL)
    return;
  gs__lock_holder(fd, holder, sizeof holder);
  snprintf(line, sizeof line, "waiting for %s, held%s, at most %u s", name,
           holder[0] ? holder : " by another process", wait_ms / 1000u);
  gs__lock_notice(line);
}

/* Takes the flock on "<path>.lock", trying for at most wait_ms while another
 * process holds it. `advice` ends the message when that is not long enough. */
static int gs__lock_within(struct gs_err *err, const char *path, int exclusive, unsigned wait_ms,
                           const char *advice, struct gs_file_lock *lock)
{
  struct timespec t0, now;
  char name[PATH_MAX], holder[96];
  unsigned pause_ms = 1;
  bool noticed = false;
  int n, rc;

  lock->fd = -1;
  n = snprintf(name, PATH_MAX, "%s.lock", path);
  if (n < 0 || n >= PATH_MAX)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "%s: path is too long", path);
  /* Read-only is enough for flock, and lets a reader use a lock file that
   * root created for a machine it shares. */
  if ((rc = gs_file_open_private(err, name, GS_FILE_CREATE, &lock->fd, NULL)) != 0)
    return rc;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  while (flock(lock->fd, (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB) < 0) {
    int e = errno;
    long waited;
    if (e == EINTR)
      continue;
    clock_gettime(CLOCK_MONOTONIC, &now);
    waited = (now.tv_sec - t0.tv_sec) * 1000L + (now.tv_nsec - t0.tv_nsec) / 1000000L;
    if (e == EWOULDBLOCK && waited < (long)wait_ms) {
      if (!noticed && waited >= 1000)
        gs__notice_wait(lock->fd, name, wait_ms), noticed = true;
      pause_ms = gs__lock_pause(pause_ms);
      continue;
    }
    if (e == EWOULDBLOCK)
      gs__lock_holder(lock->fd, holder, sizeof holder);
    gs_file_unlock(lock);
    if (e != EWOULDBLOCK)
      return gs_err_set(err, GS_E_IO, "%s: cannot lock: %s", name, strerror(e));
    if (wait_ms == 0)
      return gs_err_set(err, GS_E_IN_USE, "%s is held%s", name, holder[0] ? holder : " by another process");
    return gs_err_set(err, GS_E_IN_USE, "%s is held%s, still after %.1f s; %s", name,
                      holder[0] ? holder : " by another process", (double)waited / 1000.0, advice);
  }
  return 0;
}

int gs_file_lock(struct gs_err *err, const char *path, int exclusive, struct gs_file_lock *lock)
{
  const char *env = getenv("GPUSLICE_LOCK_WAIT");
  unsigned long secs = GS_FILE_LOCK_WAIT;
  char *end;

  if (env && *env) {
    secs = strtoul(env, &end, 10);
    if (*end || secs > 86400)
      return gs_err_set(err, GS_E_INVALID_ARGUMENT, "GPUSLICE_LOCK_WAIT='%.32s': expected whole "
                        "seconds, 0 to 86400", env);
  }
  return gs__lock_within(err, path, exclusive, (unsigned)secs * 1000u,
                         "end that process if it is stuck, or set GPUSLICE_LOCK_WAIT=SECONDS to "
                         "wait longer", lock);
}

int gs_file_lock_wait(struct gs_err *err, const char *path, unsigned seconds, struct gs_file_lock *lock)
{
  return gs__lock_within(err, path, 1, seconds > 86400 ? 86400000u : seconds * 1000u,
                         "wait longer, or end that process if it is stuck", lock);
}

void gs_file_unlock(struct gs_file_lock *lock)
{
  if (lock == NULL || lock->fd < 0)
    return;
  close(lock->fd); /* closing the only descriptor of the open file releases the flock */
  lock->fd = -1;
}

int gs_file_make_parent(struct gs_err *err, const char *path)
{
  return gs_file_make_parent_mode(err, path, 0700);
}

int gs_file_make_parent_mode(struct gs_err *err, const char *path, unsigned mode)
{
  char dir[PATH_MAX];
  struct stat sb;

  if (gs__dirname(err, path, dir) != 0)
    return GS_E_INVALID_ARGUMENT;
  if (stat(dir, &sb) == 0 && S_ISDIR(sb.st_mode)) /* the usual case: one call, no mkdir */
    return 0;
  /* Create each prefix in turn; the final stat tells a file-in-the-way apart. */
  for (char *p = dir + 1;; p++) {
    if (*p != '/' && *p != '\0')
      continue;
    char c = *p;
    *p = '\0';
    if (mkdir(dir, (mode_t)mode) != 0 && errno != EEXIST) {
      int e = errno;
      return gs_err_set(err, GS_E_IO, "%s: cannot create directory %s: %s", path, dir, strerror(e));
    }
    *p = c;
    if (c == '\0')
      break;
  }
  if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
    return gs_err_set(err, GS_E_IO, "%s: %s is not a directory", path, dir);
  return 0;
}

/* ------------------------------------------------------------- hashing */

/* splitmix64's finalizer: every input bit reaches every output bit. */
static uint64_t gs__mix64(uint64_t x)
{
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9u;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebu;
  x ^= x >> 31;
  return x;
}

/* Two FNV-1a lanes with different seeds and multipliers, fed byte by byte so
 * the result is the same on every host whatever its endianness; each lane is
 * finished by the mixer, the second also folding in the first so the halves
 * are not two independent 64-bit hashes side by side. */
void gs_hash128(const void *data, size_t len, uint8_t out[16])
{
  const unsigned char *p = data;
  uint64_t a = 0xcbf29ce484222325u;  /* FNV-1a 64 offset basis */
  uint64_t b = 0x6a09e667f3bcc909u;  /* an unrelated seed (sqrt(2) fraction) */

  for (size_t i = 0; i < len; i++) {
    a = (a ^ p[i]) * 0x00000100000001b3u; /* FNV-1a 64 prime */
    b = (b ^ p[i]) * 0x9e3779b97f4a7c15u; /* odd golden-ratio constant */
  }
  a = gs__mix64(a ^ (uint64_t)len);
  b = gs__mix64(b ^ a);
  for (int i = 0; i < 8; i++) {
    out[i] = (uint8_t)(a >> (56 - 8 * i));
    out[8 + i] = (uint8_t)(b >> (56 - 8 * i));
  }
}

void gs_uuid_format(const uint8_t bytes[16], char out[37])
{
  static const char hex[] = "0123456789abcdef";
  uint8_t b[16];
  size_t o = 0;

  memcpy(b, bytes, sizeof b);
  b[6] = (uint8_t)((b[6] & 0x0f) | 0x50); /* version 5: name-based */
  b[8] = (uint8_t)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant: 10xx */
  for (int i = 0; i < 16; i++) {
    if (i == 4 || i == 6 || i == 8 || i == 10)
      out[o++] = '-';
    out[o++] = hex[b[i] >> 4];
    out[o++] = hex[b[i] & 0x0f];
  }
  out[o] = '\0';
}

const char *gs_proc_stat(int pid, char *buf, size_t size)
{
  char path[64];
  const char *p;
  FILE *f;
  size_t n;
  if (pid <= 0 || size < 2)
    return NULL;
  snprintf(path, sizeof(path), "/proc/%d/stat", pid);
  if (!(f = fopen(path, "re")))
    return NULL;
  n = fread(buf, 1, size - 1, f);
  fclose(f);
  buf[n] = 0;
  return (p = strrchr(buf, ')')) ? p + 1 : NULL;
}

uint64_t gs_proc_start(int pid)
{
  char buf[1024];
  const char *p = gs_proc_stat(pid, buf, sizeof(buf));
  unsigned long long start = 0;
  char state = 0;
  /* After the name: state ppid pgrp session tty_nr tpgid flags minflt
   * cminflt majflt cmajflt utime stime cutime cstime priority nice
   * num_threads itrealvalue starttime (proc(5)). */
  if (!p || sscanf(p, " %c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d"
                      " %*d %llu", &state, &start) != 2 || state == 'Z')
    return 0;
  return start ? start : 1;
}
