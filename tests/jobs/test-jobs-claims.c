/* SPDX-License-Identifier: Apache-2.0 */
/* test-jobs-claims.c: claiming slices on an emulated A100, in process: the
 * exact codes for "none free now" (INSUFFICIENT_RESOURCES), "none can exist"
 * (NOT_FOUND) and "can never fit" (USAGE); --memory picking the smallest
 * profile; --create making a GI+CI that release destroys; a claim whose owner
 * and job died freed by the next claimer, which also destroys what it
 * created; shares refused on a MIG GPU; the job recorded as an emulated
 * process on its instance. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "jobs/jobs.h"
#include "../lib/gs-test-tmp.h"

struct fx {
  char dir[GS_TEST_DIR], state[GS_TEST_PATH], jobs[GS_TEST_PATH];
  struct gs_backend *b;
  struct gs_err err;
};

static int setup(void **state)
{
  struct fx *f = calloc(1, sizeof(*f));
  struct gs_backend_config cfg = {.kind = "emu", .emulate = "a100-40gb"};
  char dir[PATH_MAX]; /* not f->jobs itself: gs_jobs_dir's override and out must not overlap */
  int act;
  if (!f || gs_test_mkdtemp("jobs-claims", f->dir) != 0)
    return -1;
  gs_test_join(f->state, f->dir, "emu.json");
  gs_test_join(f->jobs, f->dir, "jobs");
  cfg.state_path = f->state;
  if (gs_emu_reset_state(&f->err, f->state, "a100-40gb") != 0 ||
      gs_backend_open(&f->err, &cfg, &f->b) != 0 ||
      f->b->ops->set_mig_mode(f->b, &f->err, 0, true, &act) != 0 ||
      gs_jobs_dir(&f->err, f->b, f->jobs, dir) != 0 || strcmp(dir, f->jobs) != 0)
    return -1;
  *state = f;
  return 0;
}

static int teardown(void **state)
{
  struct fx *f = *state;
  gs_backend_close(f->b);
  gs_test_rmtree(f->dir);
  free(f);
  return 0;
}

/* Creates `n` GIs of `profile`, each with its whole-GI CI. */
static void make(struct fx *f, const char *profile, unsigned n)
{
  struct gs_gpu_info info;
  assert_int_equal(f->b->ops->gpu_info(f->b, &f->err, 0, &info), 0);
  for (unsigned i = 0; i < n; i++) {
    const struct gs_geom_gi_profile *p = gs_geom_gi_profile_find(info.model, profile);
    struct gs_geom_ci_profile cps[GS_GEOM_MAX_CI_PROFILES];
    unsigned nc = gs_geom_ci_profiles(info.model, p, cps);
    struct gs_gi_info gi;
    struct gs_ci_info ci;
    assert_int_equal(f->b->ops->gi_create(f->b, &f->err, 0, p, -1, &gi), 0);
    assert_int_equal(f->b->ops->ci_create(f->b, &f->err, 0, gi.id, cps[nc - 1].id, -1, &ci), 0);
  }
}

static unsigned gis(struct fx *f)
{
  struct gs_gi_info gi[GS_GEOM_MAX_INSTANCES];
  unsigned n = 0;
  assert_int_equal(f->b->ops->gi_list(f->b, &f->err, 0, gi, &n), 0);
  return n;
}

static int claim(struct fx *f, const char *profile, uint64_t mib, bool create, pid_t owner,
                 struct gs_jobs_claim *c)
{
  struct gs_jobs_request req = {.mode = GS_JOBS_MIG, .memory_mib = mib, .create = create, .gpu = -1};
  snprintf(req.profile, sizeof(req.profile), "%s", profile);
  return gs_jobs_claim(&f->err, f->b, f->jobs, &req, "t", "tester", owner, c);
}

static void profiles_and_codes(void **state)
{
  struct fx *f = *state;
  struct gs_jobs_claim a, b, c;
  make(f, "1g.5gb", 1);
  make(f, "3g.20gb", 1);
  assert_int_equal(claim(f, "1g.5gb", 0, false, getpid(), &a), 0);
  assert_string_equal(a.profile, "1g.5gb");
  assert_memory_equal(a.uuid, "MIG-", 4);
  assert_int_equal(claim(f, "1g.5gb", 0, false, getpid(), &b), GS_E_INSUFFICIENT_RESOURCES);
  assert_non_null(strstr(f->err.msg, "--create"));
  /* by memory: the 3g is the smallest existing one with 8 GiB */
  assert_int_equal(claim(f, "", 8192, false, getpid(), &b), 0);
  assert_string_equal(b.profile, "3g.20gb");
  /* never: more than 7g.40gb has, or no such profile */
  assert_int_equal(claim(f, "", 100 * 1024, false, getpid(), &c), GS_E_USAGE);
  assert_non_null(strstr(f->err.msg, "7g.40gb"));
  assert_int_equal(claim(f, "9g.9gb", 0, false, getpid(), &c), GS_E_USAGE);
  /* a share needs a GPU outside MIG mode */
  {
    struct gs_jobs_request req = {.mode = GS_JOBS_TIMESLICE, .gpu = -1};
    assert_int_equal(gs_jobs_claim(&f->err, f->b, f->jobs, &req, "t", "u", getpid(), &c),
                     GS_E_NOT_FOUND);
  }
  assert_int_equal(gs_jobs_release(&f->err, f->b, f->jobs, &a), 0);
  assert_int_equal(gs_jobs_release(&f->err, f->b, f->jobs, &b), 0);
  assert_int_equal(gs_jobs_release(&f->err, f->b, f->jobs, &b), GS_E_NOT_FOUND);
  assert_int_equal(gis(f), 2);
}

static void create_and_release(void **state)
{
  struct fx *f = *state;
  struct gs_jobs_claim a;
  struct gs_proc_info procs[GS_BACKEND_MAX_PROCS];
  unsigned np = 0;
  /* 8 GiB with --create: 1g.10gb (9.6 GiB) is the smallest plain profile that fits */
  assert_int_equal(claim(f, "", 8192, true, getpid(), &a), 0);
  assert_string_equal(a.profile, "1g.10gb");
  assert_true(a.created);
  assert_int_equal(gis(f), 1);
  /* the job is an emulated process on its instance */
  assert_int_equal(gs_jobs_claim_started(&f->err, f->b, f->jobs, &a, getpid()), 0);
  assert_int_equal(f->b->ops->processes(f->b, &f->err, 0, procs, &np), 0);
  assert_int_equal(np, 1);
  assert_int_equal(procs[0].gi, (int)a.gi);
  assert_int_equal(gs_jobs_release(&f->err, f->b, f->jobs, &a), 0);
  assert_int_equal(gis(f), 0);
  assert_int_equal(f->b->ops->processes(f->b, &f->err, 0, procs, &np), 0);
  assert_int_equal(np, 0);
}

/* A process that has exited (and been reaped): its pid names no one. */
static pid_t dead_pid(void)
{
  pid_t p = fork();
  if (p == 0)
    _exit(0);
  waitpid(p, NULL, 0);
  return p;
}

static void dead_claims_are_freed(void **state)
{
  struct fx *f = *state;
  struct gs_jobs_claim a, b;
  struct gs_jobs_claim *live;
  unsigned n;
  make(f, "1g.5gb", 1);
  assert_int_equal(claim(f, "1g.5gb", 0, false, dead_pid(), &a), 0);
  assert_int_equal(gs_jobs_claims(&f->err, f->jobs, &live, &n), 0);
  assert_int_equal(n, 0); /* listed only while live */
  free(live);
  assert_int_equal(claim(f, "1g.5gb", 0, false, getpid(), &b), 0);
  assert_string_equal(a.uuid, b.uuid);
  assert_int_equal(gs_jobs_release(&f->err, f->b, f->jobs, &b), 0);
  /* a dead claimer's created slice is destroyed by the next claimer */
  assert_int_equal(claim(f, "2g.10gb", 0, true, dead_pid(), &a), 0);
  assert_int_equal(gis(f), 2);
  assert_int_equal(claim(f, "1g.5gb", 0, false, getpid(), &b), 0);
  assert_int_equal(gis(f), 1);
  assert_int_equal(gs_jobs_release(&f->err, f->b, f->jobs, &b), 0);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(profiles_and_codes, setup, teardown),
      cmocka_unit_test_setup_teardown(create_and_release, setup, teardown),
      cmocka_unit_test_setup_teardown(dead_claims_are_freed, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
