/* ident.c: who a job is and where its files may live. The kernel says who
 * submitted a job (the owner of its file, from fstat on a descriptor opened
 * without following links), never the file's text; this file looks that uid
 * up as an account, becomes it before exec, writes the job's files as it,
 * and keeps a jobs directory that several users share (mode 1777) in a
 * shape where each can add files and nobody can replace another's. Knows
 * no scheduling and no GPUs. */
#include "jobs/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- opening a file the way a privileged reader must ---- */

int gs__jobs_open_regular(struct gs_err *err, const char *path, int *fd, struct stat *st)
{
  int e;
  /* O_NONBLOCK: a FIFO planted at the path must not hang us; O_NOFOLLOW: a
   * link must not make us read (as root) a file its planter cannot. */
  do
    *fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  while (*fd < 0 && errno == EINTR);
  if (*fd < 0) {
    e = errno;
    if (e == ENOENT)
      return gs_err_set(err, GS_E_NOT_FOUND, "%s: no such file", path);
    if (e == EACCES || e == EPERM)
      return gs_err_set(err, GS_E_NO_PERMISSION, "%s: %s", path, strerror(e));
    return gs_err_set(err, GS_E_CORRUPT_STATE, "%s: cannot open: %s", path,
                      e == ELOOP ? "it is a symbolic link" : strerror(e));
  }
  if (fstat(*fd, st) != 0 || !S_ISREG(st->st_mode)) {
    close(*fd);
    *fd = -1;
    return gs_err_set(err, GS_E_CORRUPT_STATE, "%s: not a regular file", path);
  }
  return 0;
}

int gs__jobs_read_fd(struct gs_err *err, const char *path, int fd, size_t limit, char **text,
                     size_t *len)
{
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap + 1);
  ssize_t r;
  while (buf) {
    if (n == cap) {
      char *more = cap > limit ? NULL : realloc(buf, 2 * cap + 1);
      if (!more)
        break;
      buf = more, cap *= 2;
    }
    do
      r = read(fd, buf + n, cap - n);
    while (r < 0 && errno == EINTR);
    if (r < 0) {
      free(buf);
      return gs_err_set(err, GS_E_IO, "%s: cannot read: %s", path, strerror(errno));
    }
    if (r == 0) {
      buf[n] = 0;
      *text = buf, *len = n;
      return 0;
    }
    n += (size_t)r;
  }
  free(buf);
  return n > limit ? gs_err_set(err, GS_E_CORRUPT_STATE, "%s: larger than %zu bytes", path, limit)
                   : gs_err_set(err, GS_E_NO_MEMORY, "%s: out of memory reading it", path);
}

/* ---- accounts ---- */

int gs__jobs_account(struct gs_err *err, unsigned uid, struct gs__jobs_account *out)
{
  struct passwd pw, *res = NULL;
  char buf[4096];
  int e = getpwuid_r((uid_t)uid, &pw, buf, sizeof(buf), &res);
  memset(out, 0, sizeof(*out));
  if (e || !res)
    return gs_err_set(err, GS_E_NOT_FOUND, "uid %u is no account on this machine%s%s", uid,
                      e ? ": " : "", e ? strerror(e) : "");
  if (strlen(pw.pw_name) >= sizeof(out->name) || strlen(pw.pw_dir) >= sizeof(out->home))
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "uid %u: its name or home is too long", uid);
  out->uid = (unsigned)pw.pw_uid;
  out->gid = (unsigned)pw.pw_gid;
  snprintf(out->name, sizeof(out->name), "%s", pw.pw_name);
  snprintf(out->home, sizeof(out->home), "%s", pw.pw_dir);
  snprintf(out->shell, sizeof(out->shell), "%s", pw.pw_shell && *pw.pw_shell ? pw.pw_shell : "/bin/sh");
  return 0;
}

int gs__jobs_become(const struct gs__jobs_account *a)
{
  /* The order matters: the groups (initgroups replaces the whole list, so
   * root's own are gone) and gid while still root, the uid last. */
  if (initgroups(a->name, (gid_t)a->gid) != 0 || setgid((gid_t)a->gid) != 0 ||
      setuid((uid_t)a->uid) != 0)
    return errno ? errno : EPERM;
  if (getuid() != (uid_t)a->uid || geteuid() != (uid_t)a->uid || getgid() != (gid_t)a->gid ||
      getegid() != (gid_t)a->gid)
    return EPERM;
  /* Dropped for good: root must not be regainable. */
  if (a->uid != 0 && (setuid(0) == 0 || seteuid(0) == 0))
    return EPERM;
  return 0;
}

/* ---- writing as a file's owner ---- */

void gs__jobs_fs_as(unsigned uid, unsigned gid, struct gs__jobs_fs *saved)
{
  /* setfsuid reports the previous value whatever happens: read it back. */
  saved->gid = (unsigned)setfsgid((gid_t)gid);
  saved->uid = (unsigned)setfsuid((uid_t)uid);
  saved->umask = umask(077);
}

void gs__jobs_fs_restore(const struct gs__jobs_fs *saved)
{
  setfsuid((uid_t)saved->uid);
  setfsgid((gid_t)saved->gid);
  umask(saved->umask);
}

bool gs__jobs_fs_is(unsigned uid)
{
  return (unsigned)setfsuid((uid_t)-1) == uid;
}

/* ---- a shared jobs directory ---- */

static bool shared_mode(mode_t m)
{
  return (m & S_ISVTX) && (m & S_IWOTH);
}

/* Subdirectory `name` of a shared dir: made by root or the dir's owner with
 * mode 1777, so every user adds files and only their owner (and root)
 * replaces or removes one; a user-made one would let that user remove
 * everyone's files, so it is refused with the fix. */
static int shared_subdir(struct gs_err *err, const char *dir, const struct stat *dst,
                         const char *name)
{
  char path[PATH_MAX];
  struct stat st;
  int rc = gs__jobs_path(err, path, dir, name);
  if (rc)
    return rc;
  if (lstat(path, &st) != 0) {
    if (errno != ENOENT)
      return gs_err_set(err, GS_E_IO, "%s: %s", path, strerror(errno));
    if (geteuid() != 0 && geteuid() != dst->st_uid)
      return gs_err_set(err, GS_E_NO_PERMISSION, "%s is shared (mode 1777) and has no %s yet; root "
                        "creates it: run `gpuslice jobs --jobs-dir %s` once as root", dir, name, dir);
    if ((mkdir(path, 0700) != 0 && errno != EEXIST) || lstat(path, &st) != 0)
      return gs_err_set(err, GS_E_IO, "%s: cannot create: %s", path, strerror(errno));
    if (S_ISDIR(st.st_mode) && st.st_uid == geteuid() && chmod(path, 01777) == 0)
      st.st_mode = S_IFDIR | 01777;
  }
  if (!S_ISDIR(st.st_mode) || (st.st_uid != 0 && st.st_uid != dst->st_uid) ||
      (st.st_mode & 07777) != 01777)
    return gs_err_set(err, GS_E_NO_PERMISSION, "%s: in a shared jobs directory it must be a "
                      "directory of root's (or of %s's owner), mode 1777, not uid %u's mode %04o; "
                      "fix: chown root %s && chmod 1777 %s", path, dir, (unsigned)st.st_uid,
                      (unsigned)(st.st_mode & 07777), path, path);
  return 0;
}

int gs__jobs_layout(struct gs_err *err, const char *dir)
{
  static const char *const subdirs[] = {"queue", "queue/bad", "claims"};
  char path[PATH_MAX];
  struct stat dst;
  int rc;
  if (stat(dir, &dst) != 0 || !S_ISDIR(dst.st_mode))
    return gs_err_set(err, GS_E_IO, "%s: not a directory", dir);
  for (size_t i = 0; i < GS_NITEMS(subdirs); i++) {
    if (shared_mode(dst.st_mode)) {
      if ((rc = shared_subdir(err, dir, &dst, subdirs[i])) != 0)
        return rc;
      continue;
    }
    if ((rc = gs__jobs_path(err, path, dir, subdirs[i])) != 0)
      return rc;
    if (mkdir(path, 0755) != 0 && errno != EEXIST)
      return gs_err_set(err, GS_E_IO, "%s: cannot create: %s", path, strerror(errno));
  }
  return 0;
}
