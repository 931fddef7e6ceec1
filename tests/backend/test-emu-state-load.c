/* SPDX-License-Identifier: Apache-2.0 */
/* test-emu-state-load.c: loading and saving the state file under its lock:
 * a missing file is NOT_FOUND with the lock still held (the caller creates
 * the state), a corrupt or oversized one is CORRUPT_STATE with the fix in the
 * message and the lock released, a save creates the directory and replaces
 * the file whole. Lock states are probed through a second open file. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "backend/emu_state.h"
#include "emu-state-eq.h"
#include "../lib/gs-test-tmp.h"

struct fixture {
  char dir[GS_TEST_DIR];
  char path[GS_TEST_DIR + 32]; /* <dir>/sub/emu.json: the sub directory does not exist */
  struct gs__emu_state st, back;
};

static int setup(void **state)
{
  struct fixture *f = calloc(1, sizeof(*f));

  if (f == NULL || gs_test_mkdtemp("emu-load", f->dir) != 0)
    return -1;
  snprintf(f->path, sizeof(f->path), "%s/sub/emu.json", f->dir);
  *state = f;
  return 0;
}

static int teardown(void **state)
{
  struct fixture *f = *state;

  gs_test_rmtree(f->dir);
  free(f);
  return 0;
}

/* Which lock a second open file could take now: 'x' exclusive, 's' only
 * shared, '-' none. flock belongs to the open file, so this works from the
 * same process. */
static char lock_available(const char *path)
{
  char name[GS_TEST_PATH];
  char r = '-';
  int fd;

  snprintf(name, sizeof(name), "%s.lock", path);
  fd = open(name, O_RDONLY | O_CLOEXEC);
  assert_true(fd >= 0);
  if (flock(fd, LOCK_EX | LOCK_NB) == 0)
    r = 'x';
  else if (flock(fd, LOCK_SH | LOCK_NB) == 0)
    r = 's';
  close(fd);
  return r;
}

static void one_a100(struct gs__emu_state *st)
{
  const struct gs_geom_model *m[] = {gs_geom_model_find("a100-40gb")};

  assert_non_null(m[0]);
  gs__emu_state_init(st, m, 1);
}

static void missing_file_for_write_keeps_the_lock(void **state)
{
  struct fixture *f = *state;
  struct gs_file_lock lock;
  struct gs_err err = {0};

  assert_int_equal(gs__emu_state_load(&err, f->path, true, &lock, &f->st), GS_E_NOT_FOUND);
  assert_true(lock.fd >= 0);
  assert_int_equal(lock_available(f->path), '-');
  one_a100(&f->st); /* the caller creates the state while still holding it */
  assert_int_equal(gs__emu_state_save(&err, f->path, &f->st), 0);
  gs_file_unlock(&lock);
  assert_int_equal(lock_available(f->path), 'x');
}

/* A reader of a machine never created has no directory to lock in. */
static void missing_dir_for_read_holds_nothing(void **state)
{
  struct fixture *f = *state;
  struct gs_file_lock lock;
  struct gs_err err = {0};

  assert_int_equal(gs__emu_state_load(&err, f->path, false, &lock, &f->st), GS_E_NOT_FOUND);
  assert_int_equal(lock.fd, -1);
  assert_non_null(strstr(err.msg, f->path));
}

static void saved_state_loads_back_under_a_shared_lock(void **state)
{
  struct fixture *f = *state;
  struct gs_file_lock lock;
  char why[128] = "";

  one_a100(&f->st);
  f->st.boots = 2;
  assert_int_equal(gs__emu_state_save(NULL, f->path, &f->st), 0);
  assert_int_equal(gs__emu_state_load(NULL, f->path, false, &lock, &f->back), 0);
  assert_int_equal(lock_available(f->path), 's');
  gs_file_unlock(&lock);
  if (!gs_test_emu_state_eq(&f->st, &f->back, why, sizeof(why)))
    fail_msg("%s", why);
  assert_int_equal(gs__emu_state_load(NULL, f->path, true, &lock, &f->back), 0);
  assert_int_equal(lock_available(f->path), '-');
  gs_file_unlock(&lock);
}

static void save_leaves_only_the_file(void **state)
{
  struct fixture *f = *state;
  char sub[GS_TEST_PATH];

  one_a100(&f->st);
  assert_int_equal(gs__emu_state_save(NULL, f->path, &f->st), 0);
  assert_int_equal(gs__emu_state_save(NULL, f->path, &f->st), 0);
  snprintf(sub, sizeof(sub), "%s/sub", f->dir);
  assert_int_equal(gs_test_count_named(sub, ".tmp."), 0);
  assert_int_equal(gs_test_count_named(sub, "emu.json"), 1);
}

/* Writes text as the state file, making its directory first. */
static void plant(const struct fixture *f, const char *text, size_t len)
{
  assert_int_equal(gs_file_make_parent(NULL, f->path), 0);
  assert_int_equal(gs_test_write(f->path, text, len), 0);
}

static void expect_corrupt_load(struct fixture *f, bool for_write, const char *want)
{
  struct gs_file_lock lock;
  struct gs_err err = {0};

  assert_int_equal(gs__emu_state_load(&err, f->path, for_write, &lock, &f->st),
                   GS_E_CORRUPT_STATE);
  assert_int_equal(err.code, GS_E_CORRUPT_STATE);
  assert_int_equal(lock.fd, -1);
  assert_int_equal(lock_available(f->path), 'x'); /* released */
  if (!strstr(err.msg, f->path) || !strstr(err.msg, want) ||
      !strstr(err.msg, "run `gpuslice emu reset` to recreate it") ||
      !strstr(err.msg, "--emu-state"))
    fail_msg("message lacks path, \"%s\" or the fix: %s", want, err.msg);
}

static void corrupt_file_releases_the_lock_and_says_the_fix(void **state)
{
  static const char text[] = "{\"format\":\"gpuslice-emu-state\",\"version\":1,"
                             "\"enforce_root\":false,\"boots\":-3,\"gpus\":[],\"processes\":[]}";
  struct fixture *f = *state;

  plant(f, text, strlen(text));
  expect_corrupt_load(f, true, "boots: -3 is out of range");
  expect_corrupt_load(f, false, "boots: -3 is out of range");
}

/* However long the diagnosis, the fix survives at the end of the message. */
static void fix_survives_a_long_path(void **state)
{
  static const char text[] = "{\"format\":\"gpuslice-emu-state\",\"version\":7}";
  struct fixture *f = *state;
  struct gs_file_lock lock;
  struct gs_err err = {0};
  char path[GS_TEST_PATH];
  size_t n;

  n = (size_t)snprintf(path, sizeof(path), "%s/", f->dir);
  memset(path + n, 'd', 300); /* two 150-byte names: each under NAME_MAX */
  path[n + 150] = '/';
  snprintf(path + n + 300, sizeof(path) - n - 300, "/emu.json");
  assert_int_equal(gs_file_make_parent(NULL, path), 0);
  assert_int_equal(gs_test_write(path, text, strlen(text)), 0);
  assert_int_equal(gs__emu_state_load(&err, path, false, &lock, &f->st), GS_E_CORRUPT_STATE);
  assert_int_equal(strlen(err.msg), GS_ERR_MSG_SIZE - 1);
  n = strlen(err.msg) - strlen("choose another file with --emu-state");
  assert_string_equal(err.msg + n, "choose another file with --emu-state");
  assert_non_null(strstr(err.msg, "...; run `gpuslice emu reset`"));
}

static void truncated_file_is_corrupt(void **state)
{
  struct fixture *f = *state;
  char *text;

  one_a100(&f->st);
  assert_int_equal(gs__emu_state_dump(NULL, &f->st, &text), 0);
  plant(f, text, strlen(text) / 2);
  free(text);
  expect_corrupt_load(f, true, "not valid JSON");
}

static void oversized_file_is_corrupt(void **state)
{
  struct fixture *f = *state;
  size_t n = GS__EMU_MAX_FILE + 1;
  char *text = malloc(n);

  assert_non_null(text);
  memset(text, ' ', n);
  plant(f, text, n);
  free(text);
  expect_corrupt_load(f, true, "larger than");
}

static void unreadable_file_is_io_and_releases_the_lock(void **state)
{
  struct fixture *f = *state;
  struct gs_file_lock lock;
  struct gs_err err = {0};

  assert_int_equal(gs_file_make_parent(NULL, f->path), 0);
  assert_int_equal(mkdir(f->path, 0755), 0); /* a directory where the file should be */
  assert_int_equal(gs__emu_state_load(&err, f->path, true, &lock, &f->st), GS_E_IO);
  assert_int_equal(lock.fd, -1);
  assert_non_null(strstr(err.msg, f->path));
  assert_int_equal(lock_available(f->path), 'x');
}

static void save_into_a_file_parent_is_io(void **state)
{
  struct fixture *f = *state;
  char path[GS_TEST_PATH];
  struct gs_err err = {0};

  snprintf(path, sizeof(path), "%s/file", f->dir);
  assert_int_equal(gs_test_write(path, "", 0), 0);
  snprintf(path, sizeof(path), "%s/file/emu.json", f->dir);
  one_a100(&f->st);
  assert_int_equal(gs__emu_state_save(&err, path, &f->st), GS_E_IO);
  assert_non_null(strstr(err.msg, path));
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
  const struct CMUnitTest tests[] = {
      T(missing_file_for_write_keeps_the_lock),
      T(missing_dir_for_read_holds_nothing),
      T(saved_state_loads_back_under_a_shared_lock),
      T(save_leaves_only_the_file),
      T(corrupt_file_releases_the_lock_and_says_the_fix),
      T(fix_survives_a_long_path),
      T(truncated_file_is_corrupt),
      T(oversized_file_is_corrupt),
      T(unreadable_file_is_io_and_releases_the_lock),
      T(save_into_a_file_parent_is_io),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
