/* SPDX-License-Identifier: Apache-2.0 */
/* test-scale-faults.c: the autoscaler's failure paths on an emulated
 * A100-40GB, with a supervisor and a proxy on one loop (no worker process
 * ever starts): gs_scale_new failing partway (a profile the GPU lacks, a GPU
 * that is not there, the state file not writable after an adoption: the
 * error names the file and the fix, *out stays NULL, the adopted instance is
 * released), and a grow whose record cannot be written (the instance goes
 * again, logged once as a warning, retried after a cool-down and kept once the
 * file can be written). Leaks are the sanitizer build's to find. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "backend/backend.h"
#include "geometry/geometry.h"
#include "serve/serve.h"

struct env {
  char dir[256], sdir[280], state[300];
  struct gs_backend *b;
  struct gs_net_loop *loop;
  struct gs_super *super;
  struct gs_proxy *proxy;
  unsigned gpus[1];
};

static void env_init(struct env *e)
{
  const char *base = getenv("GS_TEST_TMP");
  struct gs_backend_config bc = {.kind = "emu", .emulate = "a100-40gb"};
  const char *argv[] = {"true", NULL};
  struct gs_super_config sc = {.argv = argv};
  struct gs_proxy_config pc = {.nworkers = 0, .threads = 1};
  char emu[300];
  struct gs_err err = {0};
  int act;
  memset(e, 0, sizeof(*e));
  snprintf(e->dir, sizeof(e->dir), "%s/scale-faults.XXXXXX", base && *base ? base : "/tmp");
  mkdir(base && *base ? base : "/tmp", 0755);
  assert_non_null(mkdtemp(e->dir));
  snprintf(emu, sizeof(emu), "%s/emu.json", e->dir);
  snprintf(e->sdir, sizeof(e->sdir), "%s/scale", e->dir);
  assert_int_equal(mkdir(e->sdir, 0700), 0);
  snprintf(e->state, sizeof(e->state), "%s/scale.json", e->sdir);
  bc.state_path = emu;
  assert_int_equal(gs_backend_open(&err, &bc, &e->b), 0);
  assert_int_equal(e->b->ops->set_mig_mode(e->b, &err, 0, true, &act), 0);
  assert_int_equal(gs_net_loop_new(&err, 256, &e->loop), 0);
  assert_int_equal(gs_super_new(&err, e->loop, &sc, &e->super), 0);
  pc.super = e->super;
  assert_int_equal(gs_proxy_new(&err, e->loop, &pc, &e->proxy), 0);
}

static void env_free(struct env *e)
{
  char cmd[600];
  gs_super_free(e->super);
  gs_proxy_free(e->proxy);
  gs_net_loop_free(e->loop);
  gs_backend_close(e->b);
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", e->dir);
  assert_int_equal(system(cmd), 0);
}

static struct gs_scale_target target(struct env *e, const char *profile)
{
  return (struct gs_scale_target){.backend = e->b, .gpus = e->gpus, .ngpus = 1,
                                  .profile = profile, .state_path = e->state,
                                  .super = e->super, .proxy = e->proxy};
}

static unsigned instances(struct env *e)
{
  struct gs_gi_info gi[GS_GEOM_MAX_INSTANCES];
  struct gs_err err = {0};
  unsigned n = 0;
  assert_int_equal(e->b->ops->gi_list(e->b, &err, 0, gi, &n), 0);
  return n;
}

/* One 1g.5gb GI and its CI, as an earlier serve's autoscaler made it. */
static void make_instance(struct env *e, struct gs_mig_device *dev)
{
  struct gs_err err = {0};
  struct gs_gpu_info info;
  struct gs_mig_device devs[GS_GEOM_MAX_INSTANCES * GS_GEOM_MAX_INSTANCES];
  const struct gs_geom_gi_profile *gp;
  struct gs_geom_ci_profile cp;
  struct gs_gi_info gi;
  struct gs_ci_info ci;
  unsigned n = 0;
  assert_int_equal(e->b->ops->gpu_info(e->b, &err, 0, &info), 0);
  assert_non_null(gp = gs_geom_gi_profile_find(info.model, "1g.5gb"));
  assert_int_equal(gs_geom_ci_profile_find(info.model, gp, gp->name, &cp), 0);
  assert_int_equal(e->b->ops->gi_create(e->b, &err, 0, gp, -1, &gi), 0);
  assert_int_equal(e->b->ops->ci_create(e->b, &err, 0, gi.id, cp.id, -1, &ci), 0);
  assert_int_equal(e->b->ops->mig_devices(e->b, &err, 0, devs, &n), 0);
  assert_int_equal(n, 1);
  *dev = devs[0];
}

/* Root writes into a read-only directory unless it gives up
 * CAP_DAC_OVERRIDE: dropped from (and put back into) the effective set. */
static void dac_override(bool on)
{
  struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
  struct __user_cap_data_struct d[2];
  if (geteuid() != 0)
    return;
  assert_int_equal(syscall(SYS_capget, &h, d), 0);
  if (on)
    d[0].effective |= 1u << CAP_DAC_OVERRIDE;
  else
    d[0].effective &= ~(1u << CAP_DAC_OVERRIDE);
  assert_int_equal(syscall(SYS_capset, &h, d), 0);
}

/* The state file's directory read-only: it reads, but no write lands (its
 * temporary file cannot be made), even as root. */
static void block_writes(struct env *e, bool block)
{
  assert_int_equal(chmod(e->sdir, block ? 0500 : 0700), 0);
  dac_override(!block);
}

/* gs_scale_new, which must fail: its code, *out left NULL. */
static int scale_new_fails(struct env *e, const char *profile, struct gs_err *err)
{
  struct gs_scale_config cfg = {.percentile = 90, .budget_us = 50000};
  struct gs_scale_target t = target(e, profile);
  struct gs_scale *s = NULL;
  int rc;
  gs_scale_config_defaults(&cfg);
  rc = gs_scale_new(err, e->loop, &cfg, &t, &s);
  assert_int_not_equal(rc, 0);
  assert_null(s);
  return rc;
}

static void test_profile_not_on_gpu(void **state)
{
  struct gs_err err = {0};
  struct env e;
  (void)state;
  env_init(&e);
  assert_int_equal(scale_new_fails(&e, "7g.80gb", &err), GS_E_INVALID_ARGUMENT);
  assert_non_null(strstr(err.msg, "--grow-profile 7g.80gb: not a MIG profile of GPU 0"));
  assert_non_null(strstr(err.msg, "gpuslice gi profiles"));
  env_free(&e);
}

static void test_gpu_not_there(void **state)
{
  struct gs_err err = {0};
  struct env e;
  (void)state;
  env_init(&e);
  e.gpus[0] = 3;
  scale_new_fails(&e, "1g.5gb", &err);
  assert_true(err.msg[0] != 0);
  env_free(&e);
}

/* An adopted instance, then the state file cannot be rewritten: the whole
 * start fails with a message naming the file, and what was adopted goes. */
static void test_state_unwritable_after_adoption(void **state)
{
  struct gs_mig_device dev;
  struct gs_err err = {0};
  struct env e;
  FILE *f;
  (void)state;
  env_init(&e);
  make_instance(&e, &dev);
  assert_non_null(f = fopen(e.state, "w"));
  fprintf(f, "{\"profile\": \"1g.5gb\", \"instances\": [{\"gpu\": 0, \"gi\": %u, \"ci\": %u, "
             "\"uuid\": \"%s\"}]}\n", dev.gi, dev.ci, dev.uuid);
  fclose(f);
  block_writes(&e, true);
  assert_int_equal(scale_new_fails(&e, "1g.5gb", &err), GS_E_IO);
  block_writes(&e, false);
  assert_non_null(strstr(err.msg, "cannot write its state file"));
  assert_non_null(strstr(err.msg, e.state));
  assert_non_null(strstr(err.msg, "--scale-state"));
  assert_int_equal(gs_super_count(e.super), 1); /* adopted into a worker slot before */
  assert_int_equal(instances(&e), 0);           /* released with the autoscaler */
  env_free(&e);
}

/* Turns the loop for about ms. */
static void turn(struct env *e, unsigned ms)
{
  uint64_t until = gs_net_loop_now_us() + (uint64_t)ms * 1000;
  while (gs_net_loop_now_us() < until)
    gs_net_loop_run_once(e->loop, 5);
}

/* The logger's sink for the test: warnings and worse, one a line, into text. */
static void capture(void *ctx, enum gs_log_level level, const char *source, const char *msg,
                    const struct gs_log_field *fields, size_t nfields)
{
  char *text = ctx;
  size_t n = strlen(text);
  (void)source;
  (void)fields;
  (void)nfields;
  if (level >= GS_LOG_WARN)
    snprintf(text + n, 4096 - n, "%s\n", msg);
}

/* Runs fn with the warnings it logs captured; returns them (caller frees). */
static char *warnings_of(void (*fn)(struct env *, unsigned), struct env *e, unsigned ms)
{
  char *text = calloc(1, 4096);
  assert_non_null(text);
  gs_log_set_sink(capture, text, GS_LOG_INFO);
  fn(e, ms);
  gs_log_set_sink(NULL, NULL, GS_LOG_INFO);
  return text;
}

/* A grow whose record cannot be written is undone, said once; once the
 * file can be written the next grow (after the cool-down) stays. */
static void test_grow_unrecorded(void **state)
{
  struct gs_scale_config cfg = {.percentile = 90, .budget_us = 50000, .min_slices = 1,
                                .max_slices = 1, .tick_us = 20000, .cooldown_us = 400000};
  struct gs_scale_target t;
  struct gs_scale *s = NULL;
  struct gs_err err = {0};
  struct env e;
  char *text, *first;
  (void)state;
  env_init(&e);
  gs_scale_config_defaults(&cfg);
  t = target(&e, "1g.5gb");
  assert_int_equal(gs_scale_new(&err, e.loop, &cfg, &t, &s), 0);
  block_writes(&e, true);
  text = warnings_of(turn, &e, 300); /* below the minimum: a grow each tick but for the cool-down */
  assert_non_null(first = strstr(text, "cannot write its state file"));
  assert_non_null(strstr(text, "destroyed again"));
  assert_null(strstr(first + 1, "cannot write its state file")); /* once */
  free(text);
  assert_int_equal(instances(&e), 0);
  assert_int_equal(gs_super_count(e.super), 0); /* no worker for it */
  block_writes(&e, false);
  for (int i = 0; i < 200 && instances(&e) == 0; i++) /* the cool-down, then a tick */
    turn(&e, 50);
  assert_int_equal(instances(&e), 1);
  assert_int_equal(gs_super_count(e.super), 1);
  assert_int_equal(access(e.state, R_OK), 0);
  gs_scale_free(s); /* its instance goes */
  assert_int_equal(instances(&e), 0);
  env_free(&e);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_profile_not_on_gpu),
      cmocka_unit_test(test_gpu_not_there),
      cmocka_unit_test(test_state_unwritable_after_adoption),
      cmocka_unit_test(test_grow_unrecorded),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
