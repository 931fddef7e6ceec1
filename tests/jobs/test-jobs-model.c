/* SPDX-License-Identifier: Apache-2.0 */
/* test-jobs-model.c: the jobs layer's pure parts: job-emu's speeds reproduce
 * the published figures they cite (the A100 MIG walkthrough's 5,539 s,
 * 8,207 s and 10,361 s), memory sizes, the claims and job file parsers (every
 * defect a CORRUPT_STATE naming the file), and a job's environment. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "jobs/jobs.h"

static double job_seconds(const char *model, enum gs_jobs_mode mode, unsigned slices,
                          unsigned sharers)
{
  const struct gs_jobs_emu_model *m = gs_jobs_emu_model_find(model);
  assert_non_null(m);
  return m->default_steps * gs_jobs_emu_step_seconds(m, mode, slices, 7, sharers);
}

static void test_walkthrough_figures(void **state)
{
  (void)state;
  /* 7 jobs on 7 1g slices: 5,539 s each. */
  assert_true(fabs(job_seconds("bert-ft", GS_JOBS_MIG, 1, 1) - 5539.0) < 0.01);
  /* 7 at once without MIG: 8,207 s each. */
  assert_true(fabs(job_seconds("bert-ft", GS_JOBS_TIMESLICE, 0, 7) - 8207.0) < 0.01);
  /* 7 in series: 10,361 s in total. */
  assert_true(fabs(7 * job_seconds("bert-ft", GS_JOBS_TIMESLICE, 0, 1) - 10361.0) < 0.01);
  assert_true(fabs(job_seconds("bert-ft", GS_JOBS_MIG, 7, 1) - 10361.0 / 7) < 0.01);
  /* MPS by 7 is assumed to run like 1g slices. */
  assert_true(fabs(job_seconds("bert-ft", GS_JOBS_MPS, 0, 7) - 5539.0) < 0.01);
  /* Larger slices are faster, never slower. */
  for (unsigned s = 1; s < 7; s++)
    assert_true(job_seconds("bert-ft", GS_JOBS_MIG, s + 1, 1) <= job_seconds("bert-ft", GS_JOBS_MIG, s, 1));
  /* MISO's ResNet-50 on 1g: 0.0296 s / 0.46 per iteration. */
  assert_true(fabs(job_seconds("resnet50", GS_JOBS_MIG, 1, 1) / 1000 - 0.0296 / 0.46) < 1e-9);
  assert_null(gs_jobs_emu_model_find("gpt-17"));
}

static void test_sizes(void **state)
{
  static const struct { const char *text; uint64_t mib; } good[] = {
      {"8GiB", 8192}, {"8gib", 8192}, {"8G", 7630}, {"4864MiB", 4864}, {"500MB", 477},
      {"4864", 4864}, {"1.5GiB", 1536}, {"1TiB", 1048576},
  };
  static const char *const bad[] = {"", "GiB", "-1", "8XB", "0", "1e400", "8 GiB", "nan", "0x10"};
  struct gs_err err;
  uint64_t mib;
  (void)state;
  for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
    assert_int_equal(gs_jobs_parse_size(&err, "--memory", good[i].text, &mib), 0);
    assert_int_equal(mib, good[i].mib);
  }
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    assert_int_equal(gs_jobs_parse_size(&err, "--memory", bad[i], &mib), GS_E_INVALID_ARGUMENT);
    assert_non_null(strstr(err.msg, "--memory"));
    assert_non_null(strstr(err.msg, "8GiB"));
  }
}

static const char claims_ok[] =
    "{\"format\": \"gpuslice-claims\", \"version\": 1, \"claims\": [{\"job\": \"j000001\", "
    "\"user\": \"alice\", \"mode\": \"mig\", \"gpu\": 0, \"gi\": 9, \"ci\": 0, \"uuid\": "
    "\"MIG-b8ada215-489d-5589-b90d-8f138f3a374b\", \"profile\": \"1g.5gb\", \"memory_mib\": 4864, "
    "\"created\": true, \"owner_pid\": 12, \"owner_start\": 34, \"job_pid\": 0, \"job_start\": 0, "
    "\"since\": 1795313231.5}]}";

static void test_claims_parse(void **state)
{
  static const char *const broken[] = {
      "", "{", "[]", "{\"format\": \"gpuslice-job\", \"version\": 1}",
      "{\"format\": \"gpuslice-claims\", \"version\": 2, \"claims\": []}",
      "{\"format\": \"gpuslice-claims\", \"version\": 1}",
      "{\"format\": \"gpuslice-claims\", \"version\": 1, \"claims\": [1]}",
      "{\"format\": \"gpuslice-claims\", \"version\": 1, \"claims\": [{\"job\": \"x\"}]}",
  };
  struct gs_jobs_claim *c;
  struct gs_err err;
  unsigned n;
  (void)state;
  assert_int_equal(gs_jobs_claims_parse(&err, "c.json", claims_ok, strlen(claims_ok), &c, &n), 0);
  assert_int_equal(n, 1);
  assert_string_equal(c[0].user, "alice");
  assert_int_equal(c[0].gi, 9);
  assert_true(c[0].created);
  assert_int_equal(c[0].mode, GS_JOBS_MIG);
  free(c);
  for (size_t i = 0; i < sizeof(broken) / sizeof(broken[0]); i++) {
    assert_int_equal(gs_jobs_claims_parse(&err, "c.json", broken[i], strlen(broken[i]), &c, &n),
                     GS_E_CORRUPT_STATE);
    assert_memory_equal(err.msg, "c.json: ", 8);
    assert_null(c);
  }
  /* A bad mode, a pid out of range. */
  {
    char *bad = strdup(claims_ok);
    memcpy(strstr(bad, "\"mig\""), "\"xyz\"", 5);
    assert_int_equal(gs_jobs_claims_parse(&err, "c.json", bad, strlen(bad), &c, &n), GS_E_CORRUPT_STATE);
    assert_non_null(strstr(err.msg, "mode"));
    free(bad);
  }
}

static const char job_ok[] =
    "{\"format\": \"gpuslice-job\", \"version\": 1, \"id\": \"j000002\", \"user\": \"bob\", "
    "\"uid\": 1000, \"mode\": \"mig\", \"profile\": \"\", \"memory_mib\": 8192, \"create\": true, "
    "\"gpu\": -1, \"mps_threads\": 0, \"argv\": [\"python\", \"train.py\"], \"state\": \"done\", "
    "\"submitted\": 1.5, \"started\": 2.5, \"ended\": 3.5, \"exit_status\": 137, \"signal\": 9, "
    "\"slice_gpu\": 0, \"slice_uuid\": \"MIG-x\", \"slice_profile\": \"2g.10gb\", "
    "\"shepherd_pid\": 4, \"shepherd_start\": 5, \"job_pid\": 6, \"reason\": \"\"}";

static void test_job_parse(void **state)
{
  struct gs_jobs_job j;
  struct gs_err err;
  char *bad;
  (void)state;
  assert_int_equal(gs_jobs_job_parse(&err, "j.json", job_ok, strlen(job_ok), &j), 0);
  assert_string_equal(j.id, "j000002");
  assert_int_equal(j.argc, 2);
  assert_string_equal(j.argv[1], "train.py");
  assert_null(j.argv[2]);
  assert_int_equal(j.state, GS_JOBS_DONE);
  assert_int_equal(j.req.memory_mib, 8192);
  assert_int_equal(j.req.gpu, -1);
  assert_int_equal(j.exit_status, 137);
  gs_jobs_job_clear(&j);
  /* Each defect names the file and the field. */
  bad = strdup(job_ok);
  memcpy(strstr(bad, "\"done\""), "\"gone\"", 6);
  assert_int_equal(gs_jobs_job_parse(&err, "j.json", bad, strlen(bad), &j), GS_E_CORRUPT_STATE);
  assert_non_null(strstr(err.msg, "j.json: state"));
  free(bad);
  bad = strdup(job_ok);
  memcpy(strstr(bad, "[\"python\", \"train.py\"]"), "[                    ]", 22);
  assert_int_equal(gs_jobs_job_parse(&err, "j.json", bad, strlen(bad), &j), GS_E_CORRUPT_STATE);
  assert_non_null(strstr(err.msg, "argv"));
  free(bad);
  bad = strdup(job_ok);
  memcpy(strstr(bad, "\"python\", \"train.py\""), "\"python\", 17        ", 20);
  assert_int_equal(gs_jobs_job_parse(&err, "j.json", bad, strlen(bad), &j), GS_E_CORRUPT_STATE);
  assert_non_null(strstr(err.msg, "argv[1]"));
  free(bad);
}

static void test_env(void **state)
{
  struct gs_jobs_claim c = {.job = "j000003", .mode = GS_JOBS_MIG, .gpu = 1, .uuid = "MIG-abc",
                            .profile = "1g.5gb", .memory_mib = 4864};
  struct gs_jobs_request req = {.mode = GS_JOBS_MIG};
  char **env;
  int cvd = 0, prof = 0;
  (void)state;
  setenv("CUDA_VISIBLE_DEVICES", "0,1", 1); /* replaced, not kept beside ours */
  assert_non_null(env = gs_jobs_env(&c, &req, "/d"));
  for (char **e = env; *e; e++) {
    if (strncmp(*e, "CUDA_VISIBLE_DEVICES=", 21) == 0) {
      cvd++;
      assert_string_equal(*e, "CUDA_VISIBLE_DEVICES=MIG-abc");
    }
    prof += strcmp(*e, "GPUSLICE_JOB_PROFILE=1g.5gb") == 0;
    assert_null(strstr(*e, "CUDA_MPS_"));
  }
  assert_int_equal(cvd, 1);
  assert_int_equal(prof, 1);
  gs_jobs_strv_free(env);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_walkthrough_figures), cmocka_unit_test(test_sizes),
      cmocka_unit_test(test_claims_parse),        cmocka_unit_test(test_job_parse),
      cmocka_unit_test(test_env),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
