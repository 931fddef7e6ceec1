/* SPDX-License-Identifier: Apache-2.0 */
/* file.c: gpuslice's own files (state, locks, journals, spool) opened so that
 * another local user cannot put something else in their place: no link is
 * followed, nothing but a regular file is opened, its owner and mode and the
 * directories above it are checked; where such files live by default; and
 * who holds a lock. Nothing here knows what a GPU is, or prints. */
#include "util/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* The name of uid's account into out; false (out "") when uid is no
 * account in the password database. */
static bool account_name(unsigned uid, char *out, size_t size)
{
  struct passwd pw, *res = NULL;
  char buf[4096];

  out[0] = '\0';
  if (getpwuid_r((uid_t)uid, &pw, buf, sizeof buf, &res) != 0 || res == NULL)
    return false;
  snprintf(out, size, "%s", pw.pw_name);
  return true;
}

/* "uid 1001 (mallory)", or "uid 1001" for an id with no account. */
static void describe_uid(unsigned uid, char *out, size_t size)
{
  char name[64];

  if (account_name(uid, name, sizeof name))
    snprintf(out, size, "uid %u (%s)", uid, name);
  else
    snprintf(out, size, "uid %u", uid);
}

/* The caller, as the file system sees it: its fsuid, which is its euid
 * unless it acts for another user (root writing a job's files as their
 * owner, setfsuid). setfsuid with an invalid id only reports the current. */
static unsigned caller_uid(void)
{
  return (unsigned)setfsuid((uid_t)-1);
}

/* Owned by the caller or by root: the only owners whose files we trust. */
static int trusted_owner(unsigned uid)
{
  return uid == 0 || uid == caller_uid();
}

static const char *kind_of(mode_t mode)
{
  if (S_ISLNK(mode))
    return "a symbolic link";
  if (S_ISFIFO(mode))
    return "a FIFO";
  if (S_ISDIR(mode))
    return "a directory";
  if (S_ISSOCK(mode))
    return "a socket";
  if (S_ISCHR(mode) || S_ISBLK(mode))
    return "a device";
  return "of an unknown kind";
}

static int refuse_kind(struct gs_err *err, const char *path, mode_t mode)
{
  if (S_ISDIR(mode)) /* in the way, but no one's trick: a plain I/O error */
    return gs_err_set(err, GS_E_IO, "%s is a directory, not a file; move it away", path);
  if (S_ISLNK(mode))
    return gs_err_set(err, GS_E_UNTRUSTED_FILE,
                      "%s is a symbolic link; gpuslice never follows links to its own files "
                      "(another user may have planted it): remove it (rm %s) or name the real file",
                      path, path);
  return gs_err_set(err, GS_E_UNTRUSTED_FILE,
                    "%s is %s, not a regular file, so gpuslice will not use it (another user may "
                    "have planted it): remove it (rm %s)",
                    path, kind_of(mode), path);
}

/* One directory of the walk in gs_file_check_dir. */
static int check_one_dir(struct gs_err *err, const char *what, const char *dir, const struct stat *sb)
{
  char owner[96];

  if (!S_ISDIR(sb->st_mode))
    return gs_err_set(err, GS_E_IO, "%s: %s is not a directory", what, dir);
  if (!trusted_owner(sb->st_uid)) {
    describe_uid(sb->st_uid, owner, sizeof owner);
    return gs_err_set(err, GS_E_UNTRUSTED_FILE,
                      "%s: directory %s belongs to %s, who could replace gpuslice's files in it; "
                      "use a directory owned by you or root",
                      what, dir, owner);
  }
  if ((sb->st_mode & (S_IWGRP | S_IWOTH)) && !(sb->st_mode & S_ISVTX))
    return gs_err_set(err, GS_E_UNTRUSTED_FILE,
                      "%s: directory %s is writable by %s (mode %04o) and not sticky, so another "
                      "user could replace gpuslice's files in it; run `chmod go-w %s` (or "
                      "`chmod +t` for a shared one) or use another directory",
                      what, dir, sb->st_mode & S_IWOTH ? "others" : "its group",
                      (unsigned)(sb->st_mode & 07777), dir);
  return 0;
}

/* The last directory this thread found trusted, as it was named, for the
 * caller it was checked for, and as stat saw it. The opens of a transaction
 * (lock, state, temporary) share a directory, and the walk costs a realpath
 * and a stat per level. A hit still stats the directory and must find it
 * unchanged; the levels above can be changed only by the caller or root, as
 * the walk found. */
static _Thread_local struct {
  bool valid;
  unsigned uid_of_caller;
  dev_t dev;
  ino_t ino;
  uid_t uid;
  mode_t mode;
  char dir[PATH_MAX];
} trusted;

static bool trusted_before(const char *dir)
{
  struct stat sb;

  return trusted.valid && trusted.uid_of_caller == caller_uid() && strcmp(trusted.dir, dir) == 0 &&
         stat(dir, &sb) == 0 && sb.st_dev == trusted.dev && sb.st_ino == trusted.ino &&
         sb.st_uid == trusted.uid && sb.st_mode == trusted.mode;
}

static void remember_trusted(const char *dir, const struct stat *sb)
{
  trusted.valid = strlen(dir) < sizeof trusted.dir;
  if (!trusted.valid)
    return;
  memcpy(trusted.dir, dir, strlen(dir) + 1);
  trusted.uid_of_caller = caller_uid();
  trusted.dev = sb->st_dev;
  trusted.ino = sb->st_ino;
  trusted.uid = sb->st_uid;
  trusted.mode = sb->st_mode;
}

/* The walk from dir (links resolved) up to "/"; `what` opens the messages. */
static int check_dirs(struct gs_err *err, const char *what, const char *dir)
{
  char real[PATH_MAX];
  struct stat sb, first = {0};
  int rc;

  if (trusted_before(dir))
    return 0;
  if (realpath(dir, real) == NULL) {
    int e = errno;
    if (e == ENOENT)
      return gs_err_set(err, GS_E_NOT_FOUND, "%s: directory %s does not exist", what, dir);
    return gs_err_set(err, GS_E_IO, "%s: cannot resolve directory %s: %s", what, dir,
                      strerror(e));
  }
  for (bool top = true;; top = false) {
    char *slash;
    if (stat(real, &sb) != 0)
      return gs_err_set(err, GS_E_IO, "%s: cannot stat directory %s: %s", what, real,
                        strerror(errno));
    if ((rc = check_one_dir(err, what, real, &sb)) != 0)
      return rc;
    if (top)
      first = sb;
    if ((slash = strrchr(real, '/')) == NULL || strcmp(real, "/") == 0)
      break;
    slash[slash == real ? 1 : 0] = '\0'; /* "/a" goes up to "/" */
  }
  remember_trusted(dir, &first);
  return 0;
}

int gs_file_check_dir(struct gs_err *err, const char *dir)
{
  return check_dirs(err, dir, dir);
}

/* The owner check of check_file: the caller or root; with OTHER_ACCOUNT
 * also another account, whom the caller then acts for or about (st). */
static int check_owner(struct gs_err *err, const char *path, unsigned flags, unsigned uid)
{
  char owner[96];

  if (trusted_owner(uid))
    return 0;
  if (!(flags & GS_FILE_OTHER_ACCOUNT)) {
    describe_uid(uid, owner, sizeof owner);
    return gs_err_set(err, GS_E_UNTRUSTED_FILE,
                      "%s belongs to %s, not to you (uid %u) or root, so gpuslice will not trust "
                      "it (another user may have planted it): remove it, or `chown %u %s` if it "
                      "is yours",
                      path, owner, caller_uid(), caller_uid(), path);
  }
  if (!account_name(uid, owner, sizeof owner))
    return gs_err_set(err, GS_E_UNTRUSTED_FILE,
                      "%s is owned by uid %u, which is no account here, so gpuslice will not act "
                      "on it (no one answers for it): remove it, or `chown` it to its user", path,
                      uid);
  return 0;
}

/* The checks of what an open descriptor turned out to be. */
static int check_file(struct gs_err *err, const char *path, unsigned flags, const struct stat *sb)
{
  int rc;

  if (!S_ISREG(sb->st_mode))
    return refuse_kind(err, path, sb->st_mode);
  if (flags & GS_FILE_PUBLIC)
    return 0;
  if ((rc = check_owner(err, path, flags, (unsigned)sb->st_uid)) != 0)
    return rc;
  if (sb->st_mode & (S_IWGRP | S_IWOTH))
    return gs_err_set(err, GS_E_UNTRUSTED_FILE,
                      "%s is writable by %s (mode %04o), so another user could have changed it; "
                      "run `chmod go-w %s` if its content is yours, else remove it",
                      path, sb->st_mode & S_IWOTH ? "others" : "its group",
                      (unsigned)(sb->st_mode & 07777), path);
  return 0;
}

static int open_failed(struct gs_err *err, const char *path, int e)
{
  struct stat sb;

  /* A link (ELOOP under O_NOFOLLOW, EEXIST under O_EXCL) or a socket
   * (ENXIO) is said as such. */
  if ((e == ELOOP || e == ENXIO || e == EEXIST) && lstat(path, &sb) == 0 && !S_ISREG(sb.st_mode))
    return refuse_kind(err, path, sb.st_mode);
  if (e == ENOENT)
    return gs_err_set(err, GS_E_NOT_FOUND, "%s: no such file", path);
  if (e == EACCES || e == EPERM) /* another user's private file: theirs, not a threat */
    return gs_err_set(err, GS_E_NO_PERMISSION, "%s: cannot open: %s", path, strerror(e));
  if (e == EEXIST)
    return gs_err_set(err, GS_E_IN_USE, "%s already exists", path);
  return gs_err_set(err, GS_E_IO, "%s: cannot open: %s", path, strerror(e));
}

int gs_file_open_private(struct gs_err *err, const char *path, unsigned flags, int *fd,
                         struct stat *st)
{
  int oflags = O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, rc;
  char dir[PATH_MAX];
  struct stat sb;

  *fd = -1;
  if (!(flags & GS_FILE_PUBLIC) &&
      ((rc = gs__dirname(err, path, dir)) != 0 || (rc = check_dirs(err, path, dir)) != 0))
    return rc;
  /* O_NONBLOCK makes the open of a FIFO return at once, to be refused by
   * the fstat below; on a regular file it changes nothing, so it stays. A
   * device could act on open, but only root can make one, and the
   * directory checks above admit only the caller's or root's. */
  oflags |= flags & GS_FILE_WRITE ? O_RDWR : O_RDONLY;
  if (flags & (GS_FILE_CREATE | GS_FILE_EXCL))
    oflags |= O_CREAT;
  if (flags & GS_FILE_EXCL)
    oflags |= O_EXCL;
  if (flags & GS_FILE_APPEND)
    oflags |= O_APPEND;
  do
    *fd = open(path, oflags, flags & GS_FILE_OWNER_ONLY ? 0600 : 0644);
  while (*fd < 0 && errno == EINTR);
  if (*fd < 0)
    return open_failed(err, path, errno);
  if (fstat(*fd, &sb) != 0)
    rc = gs_err_set(err, GS_E_IO, "%s: cannot stat: %s", path, strerror(errno));
  else
    rc = check_file(err, path, flags, &sb);
  if (rc != 0) {
    close(*fd);
    *fd = -1;
    return rc;
  }
  if (st)
    *st = sb;
  return 0;
}

/* ------------------------------------------------------- default places */

/* An absolute value of name, or NULL (the XDG spec: relative ones are invalid). */
static const char *absolute_env(const char *name)
{
  const char *v = getenv(name);
  return v && v[0] == '/' ? v : NULL;
}

int gs_file_state_dir(struct gs_err *err, const char *instead, char out[PATH_MAX])
{
  const char *xdg = absolute_env("XDG_STATE_HOME"), *home = absolute_env("HOME");
  const char *run = absolute_env("XDG_RUNTIME_DIR");
  int n;

  if (xdg)
    n = snprintf(out, PATH_MAX, "%s/gpuslice", xdg);
  else if (home)
    n = snprintf(out, PATH_MAX, "%s/.local/state/gpuslice", home);
  else if (geteuid() == 0)
    n = snprintf(out, PATH_MAX, "/var/lib/gpuslice");
  else if (run)
    n = snprintf(out, PATH_MAX, "%s/gpuslice", run);
  else
    return gs_err_set(err, GS_E_NOT_FOUND,
                      "no safe place for gpuslice's state: HOME, XDG_STATE_HOME and "
                      "XDG_RUNTIME_DIR are all unset (or not absolute), and a fixed name in a "
                      "shared directory such as /tmp could be planted by another user; set HOME "
                      "(or XDG_STATE_HOME), or %s",
                      instead);
  if (n < 0 || n >= PATH_MAX)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "the state directory path is too long; set %s",
                      instead);
  return 0;
}

/* ----------------------------------------------------------- lock holder */

/* /proc/locks lines read "1: FLOCK  ADVISORY  WRITE 4242 08:01:1234 0 EOF";
 * waiters carry a "->" and are skipped. The device must match too, unless
 * the file system reports another one than stat does (overlayfs): then the
 * inode alone, the best there is for a message. */
static long holder_pid(int fd)
{
  unsigned long long ino;
  unsigned maj, min;
  long pid, by_ino = 0, found = 0;
  char line[256], type[16];
  struct stat sb;
  FILE *f;

  if (fstat(fd, &sb) != 0 || (f = fopen("/proc/locks", "re")) == NULL)
    return 0;
  while (!found && fgets(line, sizeof line, f)) {
    if (strstr(line, "->") ||
        sscanf(line, "%*d: %15s %*s %*s %ld %x:%x:%llu", type, &pid, &maj, &min, &ino) != 5 ||
        strcmp(type, "FLOCK") != 0 || ino != (unsigned long long)sb.st_ino || pid <= 0)
      continue;
    if (maj == major(sb.st_dev) && min == minor(sb.st_dev))
      found = pid;
    else if (!by_ino)
      by_ino = pid;
  }
  fclose(f);
  return found ? found : by_ino;
}

void gs__lock_holder(int fd, char *out, size_t size)
{
  long pid = holder_pid(fd);
  char path[64], comm[64] = "";
  FILE *f;

  out[0] = '\0';
  if (pid <= 0)
    return;
  snprintf(path, sizeof path, "/proc/%ld/comm", pid);
  if ((f = fopen(path, "re")) != NULL) {
    if (fgets(comm, sizeof comm, f))
      comm[strcspn(comm, "\n")] = '\0';
    fclose(f);
  }
  snprintf(out, size, comm[0] ? " by pid %ld (%s)" : " by pid %ld", pid, comm);
}
