/* SPDX-License-Identifier: Apache-2.0 */
/* ident.c: who a job is and where its files may live. The kernel says who
 * submitted a job (the owner of its file, from the fstat of util's safe open,
 * gs_file_open_private), never the file's text; this file looks that uid up
 * as an account, becomes it before exec, writes the job's files as it, and
 * keeps a jobs directory that several users share (mode 1777) in a shape
 * where each can add files and nobody can replace another's. Knows no
 * scheduling and no GPUs. */
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

/* Lock file `name` of a shared dir: made with the layout by root (or the
 * dir's owner), mode 0644, and opened read-only for flock by everyone else.
 * gpuslice trusts a lock file only if it is the caller's or root's
 * (gs_file_open_private), so one a user made would be refused by all the
 * others; and its maker could remove it and part those who hold the old
 * one from those who lock a new one. */
static int shared_lock(struct gs_err *err, const char *dir, const struct stat *dst,
                       const char *name)
{
  char path[PATH_MAX];
  struct stat st;
  bool maker = geteuid() == 0 || geteuid() == dst->st_uid;
  int rc = gs__jobs_path(err, path, dir, name), fd;
  if (rc)
    return rc;
  rc = gs_file_open_private(err, path, maker ? GS_FILE_CREATE : 0, &fd, &st);
  if (rc == GS_E_NOT_FOUND)
    return gs_err_set(err, GS_E_NO_PERMISSION, "%s is shared (mode 1777) and has no %s yet; root "
                      "creates it: run `gpuslice jobs --jobs-dir %s` once as root", dir, name, dir);
  if (rc == GS_E_NO_PERMISSION)
    return gs_err_set(err, rc, "%s: every user of the shared %s must be able to read it; fix: "
                      "chmod 644 %s", path, dir, path);
  if (rc)
    return rc;
  /* The umask may have left it 0600, which only its maker can lock. */
  if (st.st_uid == geteuid() && !(st.st_mode & S_IROTH) && fchmod(fd, 0644) == 0)
    st.st_mode |= S_IRGRP | S_IROTH;
  close(fd);
  if ((st.st_uid != 0 && st.st_uid != dst->st_uid) || !(st.st_mode & S_IROTH))
    return gs_err_set(err, GS_E_NO_PERMISSION, "%s: in a shared jobs directory it must be a file "
                      "of root's (or of %s's owner), mode 0644, not uid %u's mode %04o; fix: "
                      "chown root %s && chmod 644 %s", path, dir, (unsigned)st.st_uid,
                      (unsigned)(st.st_mode & 07777), path, path);
  return 0;
}

/* A private dir's subdirectory, made by the caller. */
static int private_subdir(struct gs_err *err, const char *dir, const char *name)
{
  char path[PATH_MAX];
  int rc = gs__jobs_path(err, path, dir, name), e;
  if (rc || mkdir(path, 0755) == 0 || (e = errno) == EEXIST)
    return rc;
  if (e == EACCES)
    return gs_err_set(err, GS_E_NO_PERMISSION, "%s: cannot create: %s; the jobs directory %s is "
                      "another user's: give one of your own (GPUSLICE_JOBS_DIR=DIR, or pass "
                      "--jobs-dir DIR), or have root share it (mode 1777, docs/jobs.md)",
                      path, strerror(e), dir);
  return gs_err_set(err, GS_E_IO, "%s: cannot create: %s", path, strerror(e));
}

int gs__jobs_layout(struct gs_err *err, const char *dir)
{
  static const char *const subdirs[] = {"queue", "queue/bad", "claims"};
  static const char *const locks[] = {"queue.lock", "queue-runner.lock", "claims.json.lock"};
  struct stat dst;
  int rc = 0;
  if (stat(dir, &dst) != 0 || !S_ISDIR(dst.st_mode))
    return gs_err_set(err, GS_E_IO, "%s: not a directory", dir);
  for (size_t i = 0; rc == 0 && i < GS_NITEMS(subdirs); i++)
    rc = shared_mode(dst.st_mode) ? shared_subdir(err, dir, &dst, subdirs[i])
                                  : private_subdir(err, dir, subdirs[i]);
  for (size_t i = 0; rc == 0 && shared_mode(dst.st_mode) && i < GS_NITEMS(locks); i++)
    rc = shared_lock(err, dir, &dst, locks[i]);
  return rc;
}
