/* SPDX-License-Identifier: Apache-2.0 */
/* test-util-file.c: whole-file reads (missing, over the limit, exact), atomic
 * replacement (content, no temporary left behind, failures are GS_E_IO naming
 * the path, a file planted at a temporary's name neither followed nor in the
 * way), mkdir -p of a parent (0700), flock exclusion between two real
 * processes and its bounded wait, and gs_file_open_private's refusals (a
 * FIFO without blocking, a link, another's file, a writable file or
 * directory). Each test works in its own scratch directory. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/util.h"
#include "../lib/gs-test-tmp.h"

struct fixture {
  char dir[GS_TEST_DIR];
  char path[GS_TEST_DIR + 16]; /* <dir>/state.json, not created */
};

static int setup(void **state)
{
  struct fixture *f = calloc(1, sizeof(*f));

  if (f == NULL || gs_test_mkdtemp("util-file", f->dir) != 0)
    return -1;
  snprintf(f->path, sizeof(f->path), "%s/state.json", f->dir);
  *state = f;
  return 0;
}

static int teardown(void **state)
{
  struct fixture *f = *state;

  chmod(f->dir, 0755);
  gs_test_rmtree(f->dir);
  free(f);
  return 0;
}

/* ---- gs_file_read ---- */

static void read_missing_is_not_found(void **state)
{
  struct fixture *f = *state;
  struct gs_err err = {0};
  char *data = (char *)"untouched";
  size_t len = 7;

  assert_int_equal(gs_file_read(&err, f->path, 100, &data, &len), GS_E_NOT_FOUND);
  assert_int_equal(err.code, GS_E_NOT_FOUND);
  assert_non_null(strstr(err.msg, f->path));
  assert_null(data);
  assert_int_equal(len, 0);
}

static void read_over_limit_is_invalid_argument(void **state)
{
  struct fixture *f = *state;
  struct gs_err err = {0};
  char *data;
  size_t len;

  assert_int_equal(gs_test_write(f->path, "0123456789", 10), 0);
  assert_int_equal(gs_file_read(&err, f->path, 9, &data, &len), GS_E_INVALID_ARGUMENT);
  assert_non_null(strstr(err.msg, f->path));
  assert_non_null(strstr(err.msg, "9-byte limit"));
  assert_null(data);
}

static void read_at_limit_is_whole_and_terminated(void **state)
{
  struct fixture *f = *state;
  char *data;
  size_t len;

  assert_int_equal(gs_test_write(f->path, "0123456789", 10), 0);
  assert_int_equal(gs_file_read(NULL, f->path, 10, &data, &len), 0);
  assert_int_equal(len, 10);
  assert_string_equal(data, "0123456789");
  free(data);
}

static void read_empty_file_gives_empty_string(void **state)
{
  struct fixture *f = *state;
  char *data;
  size_t len;

  assert_int_equal(gs_test_write(f->path, "", 0), 0);
  assert_int_equal(gs_file_read(NULL, f->path, 0, &data, &len), 0);
  assert_int_equal(len, 0);
  assert_string_equal(data, "");
  free(data);
}

/* A FIFO has no size to go by, so the buffer must grow as bytes arrive;
 * a writer child feeds it `n` bytes of a known pattern. */
static pid_t feed_fifo(const char *path, size_t n)
{
  pid_t pid;

  assert_int_equal(mkfifo(path, 0600), 0);
  pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    char buf[4096];
    int fd;
    alarm(20);
    if ((fd = open(path, O_WRONLY)) < 0)
      _exit(1);
    for (size_t done = 0; done < n;) {
      size_t k = n - done < sizeof(buf) ? n - done : sizeof(buf);
      for (size_t i = 0; i < k; i++)
        buf[i] = (char)('a' + (done + i) % 26);
      if (write(fd, buf, k) != (ssize_t)k)
        _exit(0); /* the reader stopped early: that is its business */
      done += k;
    }
    _exit(0);
  }
  return pid;
}

static void read_stream_grows_the_buffer(void **state)
{
  struct fixture *f = *state;
  size_t n = 300000, len;
  pid_t pid = feed_fifo(f->path, n);
  char *data;

  assert_int_equal(gs_file_read(NULL, f->path, n, &data, &len), 0);
  assert_int_equal(len, n);
  for (size_t i = 0; i < n; i++)
    if (data[i] != (char)('a' + i % 26))
      fail_msg("byte %zu differs", i);
  assert_int_equal(data[n], '\0');
  free(data);
  assert_int_equal(waitpid(pid, NULL, 0), pid);
}

static void read_stream_over_limit_is_invalid_argument(void **state)
{
  struct fixture *f = *state;
  pid_t pid = feed_fifo(f->path, 5000);
  struct gs_err err = {0};
  char *data;
  size_t len;

  assert_int_equal(gs_file_read(&err, f->path, 4999, &data, &len), GS_E_INVALID_ARGUMENT);
  assert_non_null(strstr(err.msg, f->path));
  assert_non_null(strstr(err.msg, "4999-byte limit"));
  assert_int_equal(waitpid(pid, NULL, 0), pid);
}

static void read_directory_is_io(void **state)
{
  struct fixture *f = *state;
  struct gs_err err = {0};
  char *data;
  size_t len;

  assert_int_equal(gs_file_read(&err, f->dir, 100, &data, &len), GS_E_IO);
  assert_non_null(strstr(err.msg, f->dir));
}

/* ---- gs_file_write_atomic ---- */

static void write_replaces_content(void **state)
{
  struct fixture *f = *state;
  char *data;
  size_t len;

  assert_int_equal(gs_file_write_atomic(NULL, f->path, "old and longer", 14), 0);
  assert_int_equal(gs_file_write_atomic(NULL, f->path, "new", 3), 0);
  assert_int_equal(gs_file_read(NULL, f->path, 100, &data, &len), 0);
  assert_string_equal(data, "new");
  free(data);
}

static void write_leaves_no_temporary(void **state)
{
  struct fixture *f = *state;

  assert_int_equal(gs_file_write_atomic(NULL, f->path, "x", 1), 0);
  assert_int_equal(gs_file_write_atomic(NULL, f->path, "y", 1), 0);
  assert_int_equal(gs_test_count_named(f->dir, ".tmp."), 0);
  assert_int_equal(gs_test_count_named(f->dir, "state.json"), 1);
}

/* A writer killed between creating and renaming its temporary leaves
 * "<path>.tmp.<pid>.<random>" (or, from older writers, "<path>.tmp.<pid>");
 * the next write removes it, but never a live writer's. */
static void write_removes_dead_writers_temporaries(void **state)
{
  struct fixture *f = *state;
  char dead[GS_TEST_PATH], dead_old[GS_TEST_PATH], live[GS_TEST_PATH];
  pid_t child = fork();

  assert_true(child >= 0);
  if (child == 0)
    _exit(0);
  assert_int_equal(waitpid(child, NULL, 0), child);
  snprintf(dead, sizeof(dead), "%s.tmp.%ld.0123456789abcdef", f->path, (long)child);
  snprintf(dead_old, sizeof(dead_old), "%s.tmp.%ld", f->path, (long)child);
  snprintf(live, sizeof(live), "%s.tmp.%ld", f->path, (long)getppid());
  assert_int_equal(gs_test_write(dead, "half", 4), 0);
  assert_int_equal(gs_test_write(dead_old, "half", 4), 0);
  assert_int_equal(gs_test_write(live, "busy", 4), 0);
  assert_int_equal(gs_file_write_atomic(NULL, f->path, "x", 1), 0);
  assert_int_equal(access(dead, F_OK), -1);
  assert_int_equal(access(dead_old, F_OK), -1);
  assert_int_equal(access(live, F_OK), 0);
}

/* The temporary's name cannot be guessed, so a link planted where the old
 * "<path>.tmp.<pid>" was neither stops the write nor is written through. */
static void write_is_not_stopped_by_a_planted_temporary(void **state)
{
  struct fixture *f = *state;
  char planted[GS_TEST_PATH], victim[GS_TEST_PATH], *data;
  size_t len;

  gs_test_join(victim, f->dir, "victim");
  assert_int_equal(gs_test_write(victim, "keep", 4), 0);
  snprintf(planted, sizeof(planted), "%s.tmp.%ld", f->path, (long)getpid());
  assert_int_equal(symlink(victim, planted), 0);
  assert_int_equal(gs_file_write_atomic(NULL, f->path, "new", 3), 0);
  assert_int_equal(gs_file_read(NULL, victim, 100, &data, &len), 0);
  assert_string_equal(data, "keep");
  free(data);
  assert_int_equal(gs_file_read(NULL, f->path, 100, &data, &len), 0);
  assert_string_equal(data, "new");
  free(data);
}

/* rename() onto a directory fails after the temporary was written: the
 * temporary must be gone and the error must name the path. */
static void failed_rename_removes_the_temporary(void **state)
{
  struct fixture *f = *state;
  struct gs_err err = {0};

  assert_int_equal(mkdir(f->path, 0755), 0);
  assert_int_equal(gs_file_write_atomic(&err, f->path, "x", 1), GS_E_IO);
  assert_non_null(strstr(err.msg, f->path));
  assert_int_equal(gs_test_count_named(f->dir, ".tmp."), 0);
}

static void write_into_unwritable_dir_is_io(void **state)
{
  struct fixture *f = *state;
  struct gs_err err = {0};

  assert_int_equal(chmod(f->dir, 0555), 0);
  if (access(f->dir, W_OK) == 0) /* root ignores the mode; the next test covers root */
    skip();
  assert_int_equal(gs_file_write_atomic(&err, f->path, "x", 1), GS_E_IO);
  assert_non_null(strstr(err.msg, f->path));
  assert_int_equal(gs_test_count_named(f->dir, ".tmp."), 0);
}

/* A parent that is a regular file stops even root. */
static void write_under_a_file_is_io(void **state)
{
  struct fixture *f = *state;
  char path[GS_TEST_PATH];
  struct gs_err err = {0};

  assert_int_equal(gs_test_write(f->path, "", 0), 0);
  gs_test_join(path, f->path, "inner.json");
  assert_int_equal(gs_file_write_atomic(&err, path, "x", 1), GS_E_IO);
  assert_non_null(strstr(err.msg, path));
}

/* ---- gs_file_make_parent ---- */

static void make_parent_creates_every_level(void **state)
{
  struct fixture *f = *state;
  char path[GS_TEST_PATH], dir[GS_TEST_PATH];
  struct stat sb;

  snprintf(path, sizeof(path), "%s/a/b/c/state.json", f->dir);
  assert_int_equal(gs_file_make_parent(NULL, path), 0);
  snprintf(dir, sizeof(dir), "%s/a/b/c", f->dir);
  assert_int_equal(stat(dir, &sb), 0);
  assert_true(S_ISDIR(sb.st_mode));
  assert_int_equal(sb.st_mode & 07777, 0700); /* private, whatever the umask */
  assert_int_equal(gs_file_make_parent(NULL, path), 0); /* existing is fine */
}

static void make_parent_through_a_file_is_io(void **state)
{
  struct fixture *f = *state;
  char path[GS_TEST_PATH];
  struct gs_err err = {0};

  assert_int_equal(gs_test_write(f->path, "", 0), 0);
  snprintf(path, sizeof(path), "%s/sub/state.json", f->path);
  assert_int_equal(gs_file_make_parent(&err, path), GS_E_IO);
  assert_non_null(strstr(err.msg, path));
}

static void make_parent_of_bare_name_is_ok(void **state)
{
  (void)state;
  assert_int_equal(gs_file_make_parent(NULL, "state.json"), 0);
}

/* ---- gs_proc_stat ---- */

static void proc_stat_reads_fields_after_the_name(void **state)
{
  char buf[1024];
  const char *p;
  int ppid = 0;
  char st = 0;
  (void)state;
  assert_non_null(p = gs_proc_stat(getpid(), buf, sizeof(buf)));
  assert_int_equal(sscanf(p, " %c %d", &st, &ppid), 2);
  assert_int_equal(st, 'R');
  assert_int_equal(ppid, getppid());
}

static void proc_stat_of_a_gone_process_is_null(void **state)
{
  char buf[1024];
  pid_t pid = fork();
  (void)state;
  assert_true(pid >= 0);
  if (pid == 0)
    _exit(0);
  assert_int_equal(waitpid(pid, NULL, 0), pid);
  assert_null(gs_proc_stat(pid, buf, sizeof(buf)));
  assert_null(gs_proc_stat(0, buf, sizeof(buf)));
}

/* ---- gs_file_lock ---- */

static void lock_creates_lock_file_beside_path(void **state)
{
  struct fixture *f = *state;
  struct gs_file_lock lock;
  char name[GS_TEST_PATH];

  assert_int_equal(gs_file_lock(NULL, f->path, 1, &lock), 0);
  assert_true(lock.fd >= 0);
  snprintf(name, sizeof(name), "%s.lock", f->path);
  assert_int_equal(access(name, F_OK), 0);
  gs_file_unlock(&lock);
  assert_int_equal(lock.fd, -1);
  gs_file_unlock(&lock); /* twice is a no-op */
  gs_file_unlock(NULL);
}

static void lock_in_missing_dir_is_not_found(void **state)
{
  struct fixture *f = *state;
  struct gs_file_lock lock = {7};
  char path[GS_TEST_PATH];
  struct gs_err err = {0};

  snprintf(path, sizeof(path), "%s/none/state.json", f->dir);
  assert_int_equal(gs_file_lock(&err, path, 0, &lock), GS_E_NOT_FOUND);
  assert_int_equal(lock.fd, -1);
  assert_non_null(strstr(err.msg, path));
}

/* Waits up to ms for a byte on fd: 1 if one came, 0 on timeout. */
static int byte_within(int fd, int ms)
{
  struct pollfd p = {.fd = fd, .events = POLLIN};
  char c;

  return poll(&p, 1, ms) == 1 && read(fd, &c, 1) == 1;
}

/* The child: tries the lock without blocking and reports, then blocks on
 * it and reports again once it has it. alarm() bounds a broken run. */
static void lock_child(const char *path, int exclusive, int out)
{
  char name[GS_TEST_PATH];
  struct gs_file_lock lock;
  int fd, got;

  alarm(20);
  snprintf(name, sizeof(name), "%s.lock", path);
  fd = open(name, O_RDONLY | O_CLOEXEC);
  got = fd >= 0 && flock(fd, (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB) == 0;
  if (write(out, got ? "y" : "n", 1) != 1)
    _exit(2);
  if (fd >= 0)
    close(fd);
  if (gs_file_lock(NULL, path, exclusive, &lock) != 0)
    _exit(3);
  if (write(out, "L", 1) != 1)
    _exit(4);
  gs_file_unlock(&lock);
  _exit(0);
}

/* Starts lock_child; returns its pid and the read end of its pipe. The
 * child first closes its copy of our lock's descriptor: flock belongs to the
 * open file, so an inherited copy would hold our lock on its behalf. */
static pid_t spawn_lock_child(const char *path, int exclusive, const struct gs_file_lock *held,
                              int *in)
{
  int p[2];
  pid_t pid;

  assert_int_equal(pipe(p), 0);
  pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    close(p[0]);
    close(held->fd);
    lock_child(path, exclusive, p[1]);
  }
  close(p[1]);
  *in = p[0];
  return pid;
}

static void wait_ok(pid_t pid)
{
  int status;

  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
}

static void exclusive_lock_excludes_another_process(void **state)
{
  struct fixture *f = *state;
  struct gs_file_lock lock;
  char answer = 0;
  pid_t pid;
  int in;

  assert_int_equal(gs_file_lock(NULL, f->path, 1, &lock), 0);
  pid = spawn_lock_child(f->path, 1, &lock, &in);
  assert_int_equal(read(in, &answer, 1), 1);
  assert_int_equal(answer, 'n');          /* the non-blocking try was refused */
  assert_int_equal(byte_within(in, 300), 0); /* and the blocking one waits */
  gs_file_unlock(&lock);
  assert_int_equal(byte_within(in, 10000), 1); /* until we let go */
  close(in);
  wait_ok(pid);
}

static void shared_locks_coexist_and_exclude_writers(void **state)
{
  struct fixture *f = *state;
  struct gs_file_lock lock;
  char answer = 0;
  pid_t pid;
  int in;

  assert_int_equal(gs_file_lock(NULL, f->path, 0, &lock), 0);
  pid = spawn_lock_child(f->path, 0, &lock, &in); /* another reader: gets in at once */
  assert_int_equal(read(in, &answer, 1), 1);
  assert_int_equal(answer, 'y');
  assert_int_equal(byte_within(in, 10000), 1);
  close(in);
  wait_ok(pid);
  pid = spawn_lock_child(f->path, 1, &lock, &in); /* a writer: waits for the reader */
  assert_int_equal(read(in, &answer, 1), 1);
  assert_int_equal(answer, 'n');
  assert_int_equal(byte_within(in, 300), 0);
  gs_file_unlock(&lock);
  assert_int_equal(byte_within(in, 10000), 1);
  close(in);
  wait_ok(pid);
}

/* ---- gs_file_open_private ---- */

/* Opens f->path privately with flags; returns the code, the message in err. */
static int open_priv(struct fixture *f, unsigned flags, struct gs_err *err)
{
  int fd = -1, rc = gs_file_open_private(err, f->path, flags, &fd, NULL);

  if (rc == 0) {
    assert_true(fd >= 0);
    close(fd);
  } else {
    assert_int_equal(fd, -1);
  }
  return rc;
}

/* A FIFO is refused at once, whether opened to read or to write: were it
 * opened, the open would wait for a writer forever. alarm() catches a hang. */
static void private_fifo_is_refused_without_blocking(void **state)
{
  struct fixture *f = *state;
  struct gs_err err = {0};

  assert_int_equal(mkfifo(f->path, 0600), 0);
  alarm(10);
  assert_int_equal(open_priv(f, 0, &err), GS_E_UNTRUSTED_FILE);
  assert_non_null(strstr(err.msg, "is a FIFO"));
  assert_int_equal(open_priv(f, GS_FILE_WRITE | GS_FILE_CREATE, &err), GS_E_UNTRUSTED_FILE);
  alarm(0);
  assert_non_null(strstr(err.msg, f->path));
}

static void private_link_is_refused(void **state)
{
  struct fixture *f = *state;
  char target[GS_TEST_PATH];
  struct gs_err err = {0};

  gs_test_join(target, f->dir, "target");
  assert_int_equal(gs_test_write(target, "x", 1), 0);
  assert_int_equal(symlink(target, f->path), 0);
  assert_int_equal(open_priv(f, 0, &err), GS_E_UNTRUSTED_FILE);
  assert_non_null(strstr(err.msg, "is a symbolic link"));
  assert_int_equal(open_priv(f, GS_FILE_PUBLIC, &err), GS_E_UNTRUSTED_FILE); /* even a user's */
  unlink(f->path);
  assert_int_equal(symlink("/nonexistent/dangling", f->path), 0); /* and not created through */
  assert_int_equal(open_priv(f, GS_FILE_CREATE, &err), GS_E_UNTRUSTED_FILE);
  assert_int_equal(access("/nonexistent/dangling", F_OK), -1);
}

static void private_writable_file_is_refused(void **state)
{
  struct fixture *f = *state;
  struct gs_err err = {0};

  assert_int_equal(gs_test_write(f->path, "x", 1), 0);
  assert_int_equal(open_priv(f, 0, &err), 0);
  assert_int_equal(chmod(f->path, 0664), 0);
  assert_int_equal(open_priv(f, 0, &err), GS_E_UNTRUSTED_FILE);
  assert_non_null(strstr(err.msg, "writable by its group (mode 0664)"));
  assert_int_equal(chmod(f->path, 0646), 0);
  assert_int_equal(open_priv(f, GS_FILE_OTHER_ACCOUNT, &err), GS_E_UNTRUSTED_FILE);
  assert_non_null(strstr(err.msg, "writable by others (mode 0646)"));
  assert_int_equal(open_priv(f, GS_FILE_PUBLIC, &err), 0);
}

/* Needs root to give a file away; nobody (65534) stands for another user. */
static void private_file_of_another_user_is_refused(void **state)
{
  struct fixture *f = *state;
  struct gs_err err = {0};
  struct stat sb;
  int fd = -1;

  if (geteuid() != 0)
    skip();
  assert_int_equal(gs_test_write(f->path, "x", 1), 0);
  assert_int_equal(chown(f->path, 65534, 65534), 0);
  assert_int_equal(open_priv(f, 0, &err), GS_E_UNTRUSTED_FILE);
  assert_non_null(strstr(err.msg, "belongs to uid 65534"));
  assert_int_equal(gs_file_open_private(&err, f->path, GS_FILE_OTHER_ACCOUNT, &fd, &sb), 0);
  assert_int_equal(sb.st_uid, 65534); /* the caller learns whose it is */
  close(fd);
  /* A uid no account has: no one answers for the file, even read on purpose. */
  assert_null(getpwuid(3999999));
  assert_int_equal(chown(f->path, 3999999, 3999999), 0);
  assert_int_equal(gs_file_open_private(&err, f->path, GS_FILE_OTHER_ACCOUNT, &fd, &sb),
                   GS_E_UNTRUSTED_FILE);
  assert_int_equal(fd, -1);
  assert_non_null(strstr(err.msg, "is owned by uid 3999999, which is no account here"));
}

/* Root acting as a user (setfsuid, as the jobs layer writes a job's files
 * as their owner) trusts that user's files while it does. The file is under
 * /tmp: the scratch directory may sit below one nobody cannot enter. */
static void private_file_of_the_fsuid_is_the_callers(void **state)
{
  char dir[] = "/tmp/gs-fsuid-XXXXXX", path[64];
  struct gs_err err = {0};
  int fd = -1, rc;

  (void)state;
  if (geteuid() != 0)
    skip();
  assert_non_null(mkdtemp(dir));
  assert_int_equal(chmod(dir, 0755), 0);
  snprintf(path, sizeof(path), "%s/state.json", dir);
  assert_int_equal(gs_test_write(path, "x", 1), 0);
  assert_int_equal(chown(path, 65534, 65534), 0);
  setfsuid(65534);
  rc = gs_file_open_private(&err, path, 0, &fd, NULL);
  setfsuid(0);
  if (fd >= 0)
    close(fd);
  unlink(path);
  rmdir(dir);
  assert_int_equal(rc, 0);
}

static void private_dir_others_may_write_is_refused(void **state)
{
  struct fixture *f = *state;
  struct gs_err err = {0};

  assert_int_equal(gs_test_write(f->path, "x", 1), 0);
  assert_int_equal(open_priv(f, 0, &err), 0); /* trusted, and remembered as such */
  assert_int_equal(chmod(f->dir, 0777), 0);
  assert_int_equal(open_priv(f, 0, &err), GS_E_UNTRUSTED_FILE); /* seen changed */
  assert_non_null(strstr(err.msg, "writable by others (mode 0777) and not sticky"));
  assert_int_equal(gs_file_check_dir(&err, f->dir), GS_E_UNTRUSTED_FILE);
  assert_int_equal(open_priv(f, GS_FILE_PUBLIC, &err), 0);
  assert_int_equal(chmod(f->dir, 01777), 0); /* sticky, as /tmp: no one renames our files */
  assert_int_equal(open_priv(f, 0, &err), 0);
  assert_int_equal(gs_file_check_dir(&err, f->dir), 0);
}

static void private_excl_refuses_an_existing_file(void **state)
{
  struct fixture *f = *state;
  struct gs_err err = {0};
  struct stat sb;

  assert_int_equal(open_priv(f, GS_FILE_EXCL | GS_FILE_WRITE | GS_FILE_OWNER_ONLY, &err), 0);
  assert_int_equal(open_priv(f, GS_FILE_EXCL | GS_FILE_WRITE, &err), GS_E_IN_USE);
  assert_int_equal(stat(f->path, &sb), 0);
  assert_int_equal(sb.st_mode & 0777, 0600);
}

/* A lock held elsewhere: waited for GPUSLICE_LOCK_WAIT seconds, then
 * IN_USE naming the lock file, the holder's pid and the wait. */
static void held_lock_wait_is_bounded_and_names_the_holder(void **state)
{
  struct fixture *f = *state;
  struct gs_file_lock lock;
  struct gs_err err = {0};
  char name[GS_TEST_PATH], want[64], c = 0;
  int p[2], fd;
  pid_t pid;

  snprintf(name, sizeof(name), "%s.lock", f->path);
  assert_int_equal(pipe(p), 0);
  pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) { /* takes the lock, says so, and holds it until killed */
    alarm(20);
    close(p[0]);
    if ((fd = open(name, O_RDONLY | O_CREAT, 0644)) < 0 || flock(fd, LOCK_EX) != 0 ||
        write(p[1], "L", 1) != 1)
      _exit(1);
    pause();
    _exit(0);
  }
  close(p[1]);
  assert_int_equal(read(p[0], &c, 1), 1);
  close(p[0]);
  setenv("GPUSLICE_LOCK_WAIT", "1", 1);
  assert_int_equal(gs_file_lock(&err, f->path, 0, &lock), GS_E_IN_USE);
  unsetenv("GPUSLICE_LOCK_WAIT");
  assert_int_equal(lock.fd, -1);
  snprintf(want, sizeof(want), "held by pid %ld", (long)pid);
  assert_non_null(strstr(err.msg, name));
  assert_non_null(strstr(err.msg, want));
  assert_non_null(strstr(err.msg, "still after"));
  assert_non_null(strstr(err.msg, "GPUSLICE_LOCK_WAIT"));
  kill(pid, SIGKILL);
  assert_int_equal(waitpid(pid, NULL, 0), pid);
  assert_int_equal(gs_file_lock(&err, f->path, 1, &lock), 0); /* free again */
  gs_file_unlock(&lock);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
  const struct CMUnitTest tests[] = {
      T(read_missing_is_not_found),
      T(read_over_limit_is_invalid_argument),
      T(read_at_limit_is_whole_and_terminated),
      T(read_empty_file_gives_empty_string),
      T(read_stream_grows_the_buffer),
      T(read_stream_over_limit_is_invalid_argument),
      T(read_directory_is_io),
      T(write_replaces_content),
      T(write_leaves_no_temporary),
      T(write_removes_dead_writers_temporaries),
      T(write_is_not_stopped_by_a_planted_temporary),
      T(failed_rename_removes_the_temporary),
      T(write_into_unwritable_dir_is_io),
      T(write_under_a_file_is_io),
      T(make_parent_creates_every_level),
      T(make_parent_through_a_file_is_io),
      T(make_parent_of_bare_name_is_ok),
      T(proc_stat_reads_fields_after_the_name),
      T(proc_stat_of_a_gone_process_is_null),
      T(lock_creates_lock_file_beside_path),
      T(lock_in_missing_dir_is_not_found),
      T(exclusive_lock_excludes_another_process),
      T(shared_locks_coexist_and_exclude_writers),
      T(held_lock_wait_is_bounded_and_names_the_holder),
      T(private_fifo_is_refused_without_blocking),
      T(private_link_is_refused),
      T(private_writable_file_is_refused),
      T(private_file_of_another_user_is_refused),
      T(private_file_of_the_fsuid_is_the_callers),
      T(private_dir_others_may_write_is_refused),
      T(private_excl_refuses_an_existing_file),
  };
  signal(SIGPIPE, SIG_IGN);
  return cmocka_run_group_tests(tests, NULL, NULL);
}
