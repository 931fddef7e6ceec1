/* SPDX-License-Identifier: Apache-2.0 */
/* test-emu-state-concurrency.c: the state file shared by real processes.
 * Four writers appending under the lock lose no update; a writer killed with
 * SIGKILL at random moments always leaves exactly the old or the new state,
 * never a torn one, and its stray temporary files are never read as state.
 * Children carry alarm() so a hang ends the run instead of stalling ctest. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backend/emu_state.h"
#include "emu-state-eq.h"
#include "../lib/gs-test-tmp.h"

#define WRITERS 4
#define APPENDS 50
#define KILLS 50

struct fixture {
  char dir[GS_TEST_DIR];
  char path[GS_TEST_DIR + 16];
  struct gs__emu_state st, a, b;
};

static int setup(void **state)
{
  struct fixture *f = calloc(1, sizeof(*f));

  if (f == NULL || gs_test_mkdtemp("emu-conc", f->dir) != 0)
    return -1;
  snprintf(f->path, sizeof(f->path), "%s/emu.json", f->dir);
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

static void init_with(struct gs__emu_state *st, const char *key)
{
  const struct gs_geom_model *m[] = {gs_geom_model_find(key)};

  assert_non_null(m[0]);
  gs__emu_state_init(st, m, 1);
}

static void wait_all_ok(const pid_t *pids, unsigned n)
{
  for (unsigned i = 0; i < n; i++) {
    int status;
    assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
      fail_msg("child %u ended with status 0x%x", i, (unsigned)status);
  }
}

/* ---- no lost update ---- */

/* One writer: APPENDS read-modify-write transactions, each adding a process
 * whose pid says who wrote it and when. Exit codes name the failing step. */
static void appender(const char *path, unsigned who)
{
  static struct gs__emu_state st;

  alarm(120);
  for (unsigned k = 0; k < APPENDS; k++) {
    struct gs_file_lock lock;
    struct gs_proc_info *p;
    if (gs__emu_state_load(NULL, path, true, &lock, &st) != 0)
      _exit(10);
    if (st.nproc >= GS_BACKEND_MAX_PROCS)
      _exit(11);
    p = &st.proc[st.nproc++];
    memset(p, 0, sizeof(*p));
    p->pid = 1000 * (who + 1) + k;
    snprintf(p->name, sizeof(p->name), "writer-%u", who);
    p->gi = p->ci = -1;
    if (gs__emu_state_save(NULL, path, &st) != 0)
      _exit(12);
    gs_file_unlock(&lock);
  }
  _exit(0);
}

static void concurrent_writers_lose_no_update(void **state)
{
  struct fixture *f = *state;
  bool seen[WRITERS][APPENDS] = {{false}};
  struct gs_file_lock lock;
  pid_t pids[WRITERS];

  init_with(&f->st, "a100-40gb");
  assert_int_equal(gs__emu_state_save(NULL, f->path, &f->st), 0);
  for (unsigned i = 0; i < WRITERS; i++) {
    pids[i] = fork();
    assert_true(pids[i] >= 0);
    if (pids[i] == 0)
      appender(f->path, i);
  }
  wait_all_ok(pids, WRITERS);
  assert_int_equal(gs__emu_state_load(NULL, f->path, false, &lock, &f->st), 0);
  gs_file_unlock(&lock);
  assert_int_equal(f->st.nproc, WRITERS * APPENDS);
  for (unsigned i = 0; i < f->st.nproc; i++) {
    unsigned who = f->st.proc[i].pid / 1000 - 1, k = f->st.proc[i].pid % 1000;
    assert_true(who < WRITERS && k < APPENDS);
    assert_false(seen[who][k]);
    seen[who][k] = true;
  }
  assert_int_equal(gs_test_count_named(f->dir, ".tmp."), 0);
}

/* ---- SIGKILL during writes ---- */

/* A: an A100 cut into seven 1g.5gb with a process; B: a bare A30. Different
 * sizes, so half of one over the other could not pass for either. */
static void build_a(struct gs__emu_state *st)
{
  const struct gs_geom_gi_profile *p;

  init_with(st, "a100-40gb");
  p = gs_geom_gi_profile_by_id(st->gpu[0].model, 19);
  assert_non_null(p);
  st->gpu[0].mig_current = st->gpu[0].mig_pending = true;
  for (unsigned s = 0; s < 7; s++) {
    struct gs__emu_gi *gi = &st->gpu[0].gi[s];
    gi->profile = p;
    gi->start = s;
    gi->id = gs_geom_gi_id(st->gpu[0].model, s, p->span);
    gi->nci = 1;
    gi->ci[0].span = 1;
  }
  for (unsigned i = 1; i < 7; i++) /* stored states keep GIs in id order */
    for (unsigned j = i; j > 0 && st->gpu[0].gi[j].id < st->gpu[0].gi[j - 1].id; j--) {
      struct gs__emu_gi t = st->gpu[0].gi[j];
      st->gpu[0].gi[j] = st->gpu[0].gi[j - 1];
      st->gpu[0].gi[j - 1] = t;
    }
  st->gpu[0].ngi = 7;
  st->proc[0] = (struct gs_proc_info){.pid = 77, .name = "python", .gi = (int)st->gpu[0].gi[0].id};
  st->nproc = 1;
}

static void build_b(struct gs__emu_state *st)
{
  init_with(st, "a30-24gb");
  st->boots = 9;
}

/* Saves A and B in turn until killed. */
static void flipper(const char *path, const struct gs__emu_state *a,
                    const struct gs__emu_state *b)
{
  alarm(30);
  for (;;)
    if (gs__emu_state_save(NULL, path, a) != 0 || gs__emu_state_save(NULL, path, b) != 0)
      _exit(20);
}

/* The file as a reader sees it: 'A', 'B', or fails the test. */
static char current(struct fixture *f, unsigned round)
{
  struct gs_file_lock lock;
  struct gs_err err = {0};
  char why[128];

  if (gs__emu_state_load(&err, f->path, false, &lock, &f->st) != 0)
    fail_msg("after kill %u: %s", round, err.msg);
  gs_file_unlock(&lock);
  if (gs_test_emu_state_eq(&f->st, &f->a, why, sizeof(why)))
    return 'A';
  if (gs_test_emu_state_eq(&f->st, &f->b, why, sizeof(why)))
    return 'B';
  fail_msg("after kill %u the state is neither A nor B (%s)", round, why);
  return '?';
}

static void killed_writer_leaves_old_or_new_state(void **state)
{
  struct fixture *f = *state;
  unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid(), seen_a = 0, seen_b = 0;

  build_a(&f->a);
  build_b(&f->b);
  assert_int_equal(gs__emu_state_save(NULL, f->path, &f->a), 0);
  print_message("kill seed %u\n", seed);
  srand(seed);
  for (unsigned round = 0; round < KILLS; round++) {
    pid_t pid = fork();
    int status;
    assert_true(pid >= 0);
    if (pid == 0)
      flipper(f->path, &f->a, &f->b);
    usleep((useconds_t)(rand() % 20000));
    assert_int_equal(kill(pid, SIGKILL), 0);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (!WIFSIGNALED(status)) /* it must not have stopped by itself */
      fail_msg("writer ended with status 0x%x before the kill", (unsigned)status);
    if (current(f, round) == 'A')
      seen_a++;
    else
      seen_b++;
  }
  /* Killed writers may leave "<path>.tmp.<pid>" files: harmless, never read. */
  print_message("A %u times, B %u times; %u stale temporary files left\n", seen_a, seen_b,
                gs_test_count_named(f->dir, ".tmp."));
  assert_int_equal(seen_a + seen_b, KILLS);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
  const struct CMUnitTest tests[] = {
      T(concurrent_writers_lose_no_update),
      T(killed_writer_leaves_old_or_new_state),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
