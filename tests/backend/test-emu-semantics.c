/* SPDX-License-Identifier: Apache-2.0 */
/* test-emu-semantics.c: the NVML rules the emulator keeps (reference §9,
 * §6.1, §6.3, §5.2/§5.3): MIG mode per generation (reset, pending states,
 * reboots), the error code and message of every refused GI/CI call, root
 * enforcement (also as a real non-root process), CI packing and ids, the
 * --emulate parser, and state files of another machine or corrupt ones. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/backend.h"
#include "../lib/gs-test-tmp.h"

struct fixture {
  char dir[GS_TEST_DIR];
  char path[GS_TEST_PATH];
  struct gs_backend *b;
  struct gs_err err;
};

/* ---- helpers ---- */

static int open_spec(struct fixture *f, const char *spec, struct gs_backend **b)
{
  struct gs_backend_config cfg = {.kind = "emu", .emulate = spec, .state_path = f->path};
  gs_err_clear(&f->err);
  return gs_backend_open(&f->err, &cfg, b);
}

/* Opens a fresh machine of spec as f->b. */
static void machine(struct fixture *f, const char *spec)
{
  gs_backend_close(f->b);
  f->b = NULL;
  if (open_spec(f, spec, &f->b) != 0)
    fail_msg("open %s: %s", spec, f->err.msg);
}

static int setup(void **state)
{
  struct fixture *f = calloc(1, sizeof(*f));
  if (f == NULL || gs_test_mkdtemp("emu-sem", f->dir) != 0)
    return -1;
  gs_test_join(f->path, f->dir, "emu.json");
  *state = f;
  return 0;
}

static int teardown(void **state)
{
  struct fixture *f = *state;
  gs_backend_close(f->b);
  gs_test_rmtree(f->dir);
  free(f);
  return 0;
}

static void assert_contains(const char *haystack, const char *needle)
{
  if (strstr(haystack, needle) == NULL)
    fail_msg("message \"%s\" lacks \"%s\"", haystack, needle);
}

/* Asserts the last call returned code rc == want and said part. */
static void assert_err(struct fixture *f, int rc, int want, const char *part)
{
  if (rc != want)
    fail_msg("got %s (%d) \"%s\", want %s", gs_code_name(rc), rc, rc ? f->err.msg : "",
             gs_code_name(want));
  assert_int_equal(f->err.code, want);
  if (part)
    assert_contains(f->err.msg, part);
}

static void ok(struct fixture *f, int rc)
{
  if (rc != 0)
    fail_msg("unexpected %s: %s", gs_code_name(rc), f->err.msg);
}

static const struct gs_geom_gi_profile *prof(struct fixture *f, unsigned gpu, const char *name)
{
  struct gs_gpu_info info;
  const struct gs_geom_gi_profile *p;
  ok(f, f->b->ops->gpu_info(f->b, &f->err, gpu, &info));
  p = gs_geom_gi_profile_find(info.model, name);
  assert_non_null(p);
  return p;
}

static struct gs_gpu_info info_of(struct fixture *f, unsigned gpu)
{
  struct gs_gpu_info info;
  ok(f, f->b->ops->gpu_info(f->b, &f->err, gpu, &info));
  return info;
}

/* set_mig_mode that must succeed; returns the activation status. */
static int set_mode(struct fixture *f, unsigned gpu, bool on)
{
  int activation = 12345;
  ok(f, f->b->ops->set_mig_mode(f->b, &f->err, gpu, on, &activation));
  return activation;
}

static void assert_mode(struct fixture *f, unsigned gpu, bool current, bool pending)
{
  struct gs_gpu_info info = info_of(f, gpu);
  assert_int_equal(info.mig_current, current);
  assert_int_equal(info.mig_pending, pending);
}

static unsigned gi_create(struct fixture *f, unsigned gpu, const char *name, int start)
{
  struct gs_gi_info gi;
  ok(f, f->b->ops->gi_create(f->b, &f->err, gpu, prof(f, gpu, name), start, &gi));
  return gi.id;
}

static struct gs_ci_info ci_create(struct fixture *f, unsigned gi, unsigned profile, int start)
{
  struct gs_ci_info ci;
  ok(f, f->b->ops->ci_create(f->b, &f->err, 0, gi, profile, start, &ci));
  return ci;
}

static void add_proc(struct fixture *f, unsigned pid, unsigned gpu, int gi, int ci)
{
  struct gs_proc_info p = {.pid = pid, .gpu = gpu, .gi = gi, .ci = ci, .used_mib = 100};
  snprintf(p.name, sizeof(p.name), "proc-%u", pid);
  ok(f, gs_emu_proc_add(f->b, &f->err, &p));
}

static unsigned nprocs(struct fixture *f, unsigned gpu)
{
  struct gs_proc_info procs[GS_BACKEND_MAX_PROCS];
  unsigned n = 99;
  ok(f, f->b->ops->processes(f->b, &f->err, gpu, procs, &n));
  return n;
}

/* ---- MIG mode (reference §9) ---- */

static void test_a100_enable_resets(void **state)
{
  struct fixture *f = *state;
  machine(f, "a100-40gb");
  assert_mode(f, 0, false, false);
  assert_int_equal(set_mode(f, 0, true), 0);
  assert_mode(f, 0, true, true);
}

/* A process holding an Ampere GPU keeps the mode pending (IN_USE) until a
 * GPU reset, which is itself refused while the process lives. */
static void test_a100_enable_with_process_stays_pending(void **state)
{
  struct fixture *f = *state;
  struct gs_gi_info gi;
  machine(f, "a100-40gb");
  add_proc(f, 4242, 0, -1, -1);
  assert_int_equal(set_mode(f, 0, true), GS_E_IN_USE);
  assert_mode(f, 0, false, true);
  assert_err(f, f->b->ops->gi_create(f->b, &f->err, 0, prof(f, 0, "1g.5gb"), -1, &gi),
             GS_E_NOT_SUPPORTED, "pending");
  assert_err(f, gs_emu_gpu_reset(f->b, &f->err, 0), GS_E_IN_USE, "4242");
  assert_mode(f, 0, false, true);
  ok(f, gs_emu_proc_remove(f->b, &f->err, 4242));
  ok(f, gs_emu_gpu_reset(f->b, &f->err, 0));
  assert_mode(f, 0, true, true);
}

/* VM passthrough: no reset allowed, the mode waits for a reboot. */
static void test_a100_reset_blocked(void **state)
{
  struct fixture *f = *state;
  machine(f, "a100-40gb");
  ok(f, gs_emu_set_reset_blocked(f->b, &f->err, 0, true));
  assert_int_equal(set_mode(f, 0, true), GS_E_RESET_REQUIRED);
  assert_mode(f, 0, false, true);
  assert_err(f, gs_emu_gpu_reset(f->b, &f->err, 0), GS_E_NOT_SUPPORTED, "reboot");
  ok(f, gs_emu_reboot(f->b, &f->err));
  assert_mode(f, 0, true, true);
}

/* Ampere keeps the mode across reboots (InfoROM); Hopper and Blackwell lose
 * it; instances and processes never survive. */
static void test_reboot_per_generation(void **state)
{
  static const bool keeps[4] = {true, true, false, false};
  struct fixture *f = *state;
  machine(f, "a100-40gb,a30-24gb,h100-80gb,b200-180gb");
  for (unsigned g = 0; g < 4; g++) {
    struct gs_gpu_info info = info_of(f, g);
    struct gs_gi_info gi;
    struct gs_ci_info ci;
    assert_int_equal(set_mode(f, g, true), 0);
    ok(f, f->b->ops->gi_create(f->b, &f->err, g, &info.model->gi[0], -1, &gi));
    ok(f, f->b->ops->ci_create(f->b, &f->err, g, gi.id, 0, -1, &ci));
    add_proc(f, 100 + g, g, (int)gi.id, (int)ci.id);
    add_proc(f, 200 + g, g, -1, -1);
    assert_int_equal(nprocs(f, g), 2);
  }
  ok(f, gs_emu_reboot(f->b, &f->err));
  for (unsigned g = 0; g < 4; g++) {
    struct gs_gi_info gis[GS_GEOM_MAX_INSTANCES];
    unsigned n = 99;
    assert_mode(f, g, keeps[g], keeps[g]);
    assert_int_equal(nprocs(f, g), 0);
    if (keeps[g]) {
      ok(f, f->b->ops->gi_list(f->b, &f->err, g, gis, &n));
      assert_int_equal(n, 0);
    } else {
      assert_err(f, f->b->ops->gi_list(f->b, &f->err, g, gis, &n), GS_E_NOT_SUPPORTED, "disabled");
    }
  }
}

/* A pending disable on Ampere is what the InfoROM holds: a reboot applies it. */
static void test_a100_pending_disable_applies_at_reboot(void **state)
{
  struct fixture *f = *state;
  machine(f, "a100-40gb");
  assert_int_equal(set_mode(f, 0, true), 0);
  add_proc(f, 5, 0, -1, -1);
  assert_int_equal(set_mode(f, 0, false), GS_E_IN_USE);
  assert_mode(f, 0, true, false);
  ok(f, gs_emu_reboot(f->b, &f->err));
  assert_mode(f, 0, false, false);
}

/* Hopper switches without a reset, so a process makes the call itself fail. */
static void test_h100_mode_change_with_process(void **state)
{
  struct fixture *f = *state;
  int activation = 0;
  machine(f, "h100-80gb");
  add_proc(f, 31337, 0, -1, -1);
  assert_err(f, f->b->ops->set_mig_mode(f->b, &f->err, 0, true, &activation), GS_E_IN_USE,
             "31337");
  assert_mode(f, 0, false, false);
  ok(f, gs_emu_proc_remove(f->b, &f->err, 31337));
  assert_int_equal(set_mode(f, 0, true), 0);
  assert_mode(f, 0, true, true);
}

/* ---- refused calls: exact code and message ---- */

static void test_mig_disabled_calls_not_supported(void **state)
{
  struct fixture *f = *state;
  struct gs_gi_info gi, gis[GS_GEOM_MAX_INSTANCES];
  struct gs_ci_info ci, cis[GS_GEOM_MAX_INSTANCES];
  struct gs_mig_device dev[GS_BACKEND_MAX_MIG_DEVICES];
  unsigned n = 99;
  machine(f, "a100-40gb");
  assert_err(f, f->b->ops->gi_create(f->b, &f->err, 0, prof(f, 0, "1g.5gb"), -1, &gi),
             GS_E_NOT_SUPPORTED, "MIG mode is disabled");
  assert_err(f, f->b->ops->gi_create(f->b, &f->err, 0, prof(f, 0, "1g.5gb"), 0, &gi),
             GS_E_NOT_SUPPORTED, "gpuslice mig enable");
  assert_err(f, f->b->ops->gi_list(f->b, &f->err, 0, gis, &n), GS_E_NOT_SUPPORTED, "disabled");
  assert_err(f, f->b->ops->gi_destroy(f->b, &f->err, 0, 7), GS_E_NOT_SUPPORTED, "disabled");
  assert_err(f, f->b->ops->ci_create(f->b, &f->err, 0, 7, 0, -1, &ci), GS_E_NOT_SUPPORTED,
             "disabled");
  assert_err(f, f->b->ops->ci_list(f->b, &f->err, 0, 7, cis, &n), GS_E_NOT_SUPPORTED, "disabled");
  assert_err(f, f->b->ops->ci_destroy(f->b, &f->err, 0, 7, 0), GS_E_NOT_SUPPORTED, "disabled");
  assert_err(f, f->b->ops->ci_remaining(f->b, &f->err, 0, 7, 0, &n), GS_E_NOT_SUPPORTED,
             "disabled");
  /* No MIG devices outside MIG mode (GetMaxMigDeviceCount is 0 there). */
  ok(f, f->b->ops->mig_devices(f->b, &f->err, 0, dev, &n));
  assert_int_equal(n, 0);
}

/* nvmlDeviceGetGpuInstanceRemainingCapacity: "NVML_ERROR_NOT_SUPPORTED If
 * device doesn't have MIG mode enabled" (nvml.h, reference §6.1). */
static void test_gi_remaining_mig_disabled_not_supported(void **state)
{
  struct fixture *f = *state;
  unsigned n = 99;
  machine(f, "a100-40gb");
  assert_err(f, f->b->ops->gi_remaining(f->b, &f->err, 0, prof(f, 0, "1g.5gb"), &n),
             GS_E_NOT_SUPPORTED, "disabled");
}

static void test_disable_with_gis_in_use(void **state)
{
  struct fixture *f = *state;
  int activation = 0;
  unsigned id;
  machine(f, "a100-40gb");
  set_mode(f, 0, true);
  id = gi_create(f, 0, "3g.20gb", -1);
  assert_err(f, f->b->ops->set_mig_mode(f->b, &f->err, 0, false, &activation), GS_E_IN_USE,
             "still has 1 GPU instance; destroy them first");
  assert_mode(f, 0, true, true);
  ok(f, f->b->ops->gi_destroy(f->b, &f->err, 0, id));
  assert_int_equal(set_mode(f, 0, false), 0);
  assert_mode(f, 0, false, false);
}

static void test_gi_destroy_with_cis_in_use(void **state)
{
  struct fixture *f = *state;
  unsigned id;
  machine(f, "a100-40gb");
  set_mode(f, 0, true);
  id = gi_create(f, 0, "3g.20gb", 4);
  assert_int_equal(id, 1);
  ci_create(f, id, 0, -1);
  ci_create(f, id, 0, -1);
  assert_err(f, f->b->ops->gi_destroy(f->b, &f->err, 0, id), GS_E_IN_USE,
             "GPU instance 1 on GPU 0 has 2 compute instances; destroy them first");
  assert_contains(f->err.msg, "gpuslice ci destroy");
  ok(f, f->b->ops->ci_destroy(f->b, &f->err, 0, id, 0));
  assert_err(f, f->b->ops->gi_destroy(f->b, &f->err, 0, id), GS_E_IN_USE, "destroy it first");
  ok(f, f->b->ops->ci_destroy(f->b, &f->err, 0, id, 1));
  ok(f, f->b->ops->gi_destroy(f->b, &f->err, 0, id));
}

static void test_ci_destroy_with_process_in_use(void **state)
{
  struct fixture *f = *state;
  unsigned id;
  machine(f, "a100-40gb");
  set_mode(f, 0, true);
  id = gi_create(f, 0, "2g.10gb", -1);
  ci_create(f, id, 1, -1);
  add_proc(f, 9876, 0, (int)id, 0);
  assert_err(f, f->b->ops->ci_destroy(f->b, &f->err, 0, id, 0), GS_E_IN_USE, "9876");
  assert_contains(f->err.msg, "proc-9876");
  ok(f, gs_emu_proc_remove(f->b, &f->err, 9876));
  ok(f, f->b->ops->ci_destroy(f->b, &f->err, 0, id, 0));
}

static void test_unknown_ids_not_found(void **state)
{
  struct fixture *f = *state;
  struct gs_ci_info ci;
  unsigned id;
  machine(f, "a100-40gb");
  set_mode(f, 0, true);
  assert_err(f, f->b->ops->gi_destroy(f->b, &f->err, 0, 3), GS_E_NOT_FOUND,
             "GPU 0 has no GPU instance 3 (it has none)");
  id = gi_create(f, 0, "1g.5gb", -1);
  assert_err(f, f->b->ops->gi_destroy(f->b, &f->err, 0, 3), GS_E_NOT_FOUND, "it has 9");
  assert_err(f, f->b->ops->ci_create(f->b, &f->err, 0, 3, 0, -1, &ci), GS_E_NOT_FOUND,
             "no GPU instance 3");
  assert_err(f, f->b->ops->ci_destroy(f->b, &f->err, 0, id, 5), GS_E_NOT_FOUND,
             "no compute instance 5");
  assert_err(f, gs_emu_proc_remove(f->b, &f->err, 55), GS_E_NOT_FOUND, "55");
}

static void test_bad_gpu_index(void **state)
{
  struct fixture *f = *state;
  struct gs_gpu_info info;
  struct gs_gi_info gi;
  int activation = 0;
  machine(f, "a100-40gb:2");
  assert_err(f, f->b->ops->gpu_info(f->b, &f->err, 2, &info), GS_E_INVALID_ARGUMENT,
             "GPU 2 does not exist: this emulated machine has GPUs 0..1");
  assert_err(f, f->b->ops->set_mig_mode(f->b, &f->err, 7, true, &activation),
             GS_E_INVALID_ARGUMENT, "GPU 7 does not exist");
  assert_err(f, f->b->ops->gi_create(f->b, &f->err, 2, prof(f, 0, "1g.5gb"), -1, &gi),
             GS_E_INVALID_ARGUMENT, "GPU 2 does not exist");
  assert_err(f, gs_emu_gpu_reset(f->b, &f->err, 2), GS_E_INVALID_ARGUMENT, "does not exist");
}

static void test_illegal_placement(void **state)
{
  struct fixture *f = *state;
  struct gs_gi_info gi;
  machine(f, "a100-40gb");
  set_mode(f, 0, true);
  assert_err(f, f->b->ops->gi_create(f->b, &f->err, 0, prof(f, 0, "3g.20gb"), 2, &gi),
             GS_E_INVALID_ARGUMENT, "valid placements are 0, 4");
  assert_err(f, f->b->ops->gi_create(f->b, &f->err, 0, prof(f, 0, "1g.5gb"), 7, &gi),
             GS_E_INVALID_ARGUMENT, "valid placements are 0, 1, 2, 3, 4, 5, 6");
}

static void test_overlap_names_other(void **state)
{
  struct fixture *f = *state;
  struct gs_gi_info gi;
  machine(f, "a100-40gb");
  set_mode(f, 0, true);
  gi_create(f, 0, "4g.20gb", 0);
  assert_err(f, f->b->ops->gi_create(f->b, &f->err, 0, prof(f, 0, "2g.10gb"), 2, &gi),
             GS_E_INSUFFICIENT_RESOURCES, "overlaps 4g.20gb at 0:4");
}

static void test_two_me_insufficient(void **state)
{
  struct fixture *f = *state;
  struct gs_gi_info gi;
  machine(f, "a100-40gb");
  set_mode(f, 0, true);
  gi_create(f, 0, "1g.5gb+me", -1);
  assert_err(f, f->b->ops->gi_create(f->b, &f->err, 0, prof(f, 0, "1g.5gb+me"), -1, &gi),
             GS_E_INSUFFICIENT_RESOURCES, "1g.5gb+me");
  assert_err(f, f->b->ops->gi_create(f->b, &f->err, 0, prof(f, 0, "1g.5gb+me"), 0, &gi),
             GS_E_INSUFFICIENT_RESOURCES, "at most 1 1g.5gb+me");
}

/* A profile of another model is not this GPU's. */
static void test_foreign_profile(void **state)
{
  struct fixture *f = *state;
  struct gs_gi_info gi;
  unsigned n;
  const struct gs_geom_gi_profile *h100_1g =
      gs_geom_gi_profile_find(gs_geom_model_find("h100-80gb"), "1g.10gb");
  machine(f, "a100-40gb");
  set_mode(f, 0, true);
  assert_err(f, f->b->ops->gi_create(f->b, &f->err, 0, h100_1g, -1, &gi), GS_E_INVALID_ARGUMENT,
             "has no profile 1g.10gb");
  assert_err(f, f->b->ops->gi_remaining(f->b, &f->err, 0, h100_1g, &n), GS_E_INVALID_ARGUMENT,
             "has no profile 1g.10gb");
}

/* ---- root enforcement ---- */

static void test_enforce_root_in_process(void **state)
{
  struct fixture *f = *state;
  struct gs_gi_info gi;
  int rc;
  machine(f, "a100-40gb");
  set_mode(f, 0, true);
  ok(f, gs_emu_set_enforce_root(f->b, &f->err, true));
  rc = f->b->ops->gi_create(f->b, &f->err, 0, prof(f, 0, "1g.5gb"), -1, &gi);
  if (geteuid() == 0)
    ok(f, rc);
  else
    assert_err(f, rc, GS_E_NO_PERMISSION, "needs root");
}

/* Child exit codes: 0 as expected, 77 cannot drop privileges, else a step. */
static int child_as_nobody(const char *path)
{
  struct gs_backend_config cfg = {.kind = "emu", .emulate = "a100-40gb", .state_path = path};
  struct gs_backend *b = NULL;
  struct gs_err err = {0};
  struct gs_gi_info gis[GS_GEOM_MAX_INSTANCES];
  int activation = 0;
  unsigned n = 0;
  if (setgid(65534) != 0 || setuid(65534) != 0 || geteuid() != 65534)
    return 77;
  if (gs_backend_open(&err, &cfg, &b) != 0)
    return fprintf(stderr, "child open: %s\n", err.msg), 10;
  if (b->ops->gi_create(b, &err, 0, gs_geom_gi_profile_find(gs_geom_model_find("a100-40gb"), "19"),
                        -1, gis) != GS_E_NO_PERMISSION || !strstr(err.msg, "needs root"))
    return fprintf(stderr, "child gi_create: %d %s\n", err.code, err.msg), 11;
  if (b->ops->set_mig_mode(b, &err, 0, false, &activation) != GS_E_NO_PERMISSION)
    return fprintf(stderr, "child set_mig_mode: %d %s\n", err.code, err.msg), 12;
  if (b->ops->gi_destroy(b, &err, 0, 9) != GS_E_NO_PERMISSION)
    return fprintf(stderr, "child gi_destroy: %d %s\n", err.code, err.msg), 13;
  if (b->ops->gi_list(b, &err, 0, gis, &n) != 0 || n != 1) /* reading needs no root */
    return fprintf(stderr, "child gi_list: %d %s\n", err.code, err.msg), 14;
  gs_backend_close(b);
  return 0;
}

/* Tests run as root here, so the NO_PERMISSION path runs in a child that
 * drops to nobody. The machine lives in a directory of root's that nobody
 * may read but not write (nor may anyone else: gpuslice refuses its files in
 * a directory others could write), under /tmp: the scratch directory may sit
 * below one nobody cannot enter. */
static void test_enforce_root_as_nobody(void **state)
{
  struct fixture *f = *state;
  char dir[] = "/tmp/gs-nobody-XXXXXX";
  int status = 0;
  pid_t pid;
  if (geteuid() != 0)
    skip(); /* the in-process test above covers the non-root case */
  assert_non_null(mkdtemp(dir));
  assert_int_equal(chmod(dir, 0755), 0);
  gs_test_rmtree(f->dir);
  snprintf(f->dir, sizeof(f->dir), "%s", dir); /* teardown removes it */
  gs_test_join(f->path, f->dir, "emu.json");
  machine(f, "a100-40gb");
  set_mode(f, 0, true);
  gi_create(f, 0, "1g.5gb", -1);
  ok(f, gs_emu_set_enforce_root(f->b, &f->err, true));
  gs_backend_close(f->b);
  f->b = NULL;
  fflush(NULL);
  pid = fork();
  assert_true(pid >= 0);
  if (pid == 0)
    _exit(child_as_nobody(f->path));
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  if (WEXITSTATUS(status) == 77)
    skip();
  assert_int_equal(WEXITSTATUS(status), 0);
  machine(f, "a100-40gb"); /* the child changed nothing */
  assert_int_equal(gi_create(f, 0, "1g.5gb", -1), 7);
}

/* ---- compute instances (reference §5.2, §5.3) ---- */

static unsigned ci_left(struct fixture *f, unsigned gi, unsigned profile)
{
  unsigned n = 99;
  ok(f, f->b->ops->ci_remaining(f->b, &f->err, 0, gi, profile, &n));
  return n;
}

static unsigned with_gi(struct fixture *f, const char *name, int start)
{
  machine(f, "a100-40gb");
  set_mode(f, 0, true);
  return gi_create(f, 0, name, start);
}

static void test_ci_three_1c_in_3g(void **state)
{
  struct fixture *f = *state;
  struct gs_ci_info ci;
  unsigned gi = with_gi(f, "3g.20gb", 0);
  assert_int_equal(ci_left(f, gi, 0), 3);
  for (unsigned i = 0; i < 3; i++) {
    ci = ci_create(f, gi, 0, -1);
    assert_int_equal(ci.id, i);
    assert_int_equal(ci.start, i);
    assert_int_equal(ci.span, 1);
    assert_string_equal(ci.profile.name, "1c.3g.20gb");
  }
  assert_int_equal(ci_left(f, gi, 0), 0);
  /* The limit no placement can lift is named, not whichever CI is in the way. */
  assert_err(f, f->b->ops->ci_create(f->b, &f->err, 0, gi, 0, -1, &ci),
             GS_E_INSUFFICIENT_RESOURCES, "at most 3 1c.3g.20gb");
  assert_err(f, f->b->ops->ci_create(f->b, &f->err, 0, gi, 0, 1, &ci),
             GS_E_INSUFFICIENT_RESOURCES, "at most 3 1c.3g.20gb");
}

static void test_ci_2c_plus_1c_in_3g(void **state)
{
  struct fixture *f = *state;
  struct gs_ci_info ci;
  unsigned gi = with_gi(f, "3g.20gb", 4);
  ci = ci_create(f, gi, 1, -1);
  assert_int_equal(ci.start, 0);
  assert_int_equal(ci.span, 2);
  ci = ci_create(f, gi, 0, -1);
  assert_int_equal(ci.start, 2);
  assert_int_equal(ci.id, 1);
  assert_int_equal(ci_left(f, gi, 0), 0);
  assert_int_equal(ci_left(f, gi, 2), 0);
  assert_err(f, f->b->ops->ci_create(f->b, &f->err, 0, gi, 2, -1, &ci),
             GS_E_INSUFFICIENT_RESOURCES, NULL);
}

/* The full CI of a 3g reports placement 0:4 (§5.3). */
static void test_ci_full_3g_spans_4(void **state)
{
  struct fixture *f = *state;
  struct gs_ci_info ci;
  unsigned gi = with_gi(f, "3g.20gb", -1);
  ci = ci_create(f, gi, 2, -1);
  assert_int_equal(ci.start, 0);
  assert_int_equal(ci.span, 4);
  assert_true(ci.profile.is_default);
  assert_int_equal(ci_left(f, gi, 0), 0);
}

static void test_ci_4c_plus_3c_in_7g(void **state)
{
  struct fixture *f = *state;
  struct gs_ci_info ci;
  unsigned gi = with_gi(f, "7g.40gb", -1);
  assert_int_equal(gi, 0);
  ci = ci_create(f, gi, 3, -1);
  assert_int_equal(ci.start, 0);
  assert_int_equal(ci.span, 4);
  assert_string_equal(ci.profile.name, "4c.7g.40gb");
  ci = ci_create(f, gi, 2, -1);
  assert_int_equal(ci.start, 4);
  assert_string_equal(ci.profile.name, "3c.7g.40gb");
  assert_int_equal(ci_left(f, gi, 0), 0);
  assert_err(f, f->b->ops->ci_create(f->b, &f->err, 0, gi, 0, -1, &ci),
             GS_E_INSUFFICIENT_RESOURCES, NULL);
}

/* A 3c reports placement 4 wide and holds all of it: a 1c cannot slip into
 * its fourth slot (the emulator once allowed that and then wrote a state
 * file its own loader rejects as overlapping). */
static void test_ci_3c_holds_its_span(void **state)
{
  struct fixture *f = *state;
  struct gs_ci_info ci;
  unsigned gi = with_gi(f, "7g.40gb", -1);
  ci = ci_create(f, gi, 2, 0);
  assert_int_equal(ci.span, 4);
  assert_err(f, f->b->ops->ci_create(f->b, &f->err, 0, gi, 0, 3, &ci),
             GS_E_INSUFFICIENT_RESOURCES, "overlaps compute instance 0 at 0:4");
  assert_int_equal(ci_create(f, gi, 0, -1).start, 4);
  assert_int_equal(ci_left(f, gi, 0), 2);
  assert_int_equal(info_of(f, 0).mig_current, true); /* the state still loads */
}

static void test_ci_ids_lowest_free(void **state)
{
  struct fixture *f = *state;
  struct gs_ci_info cis[GS_GEOM_MAX_INSTANCES];
  unsigned gi = with_gi(f, "4g.20gb", 0), n = 0;
  for (unsigned i = 0; i < 4; i++)
    assert_int_equal(ci_create(f, gi, 0, -1).id, i);
  ok(f, f->b->ops->ci_destroy(f->b, &f->err, 0, gi, 1));
  ok(f, f->b->ops->ci_destroy(f->b, &f->err, 0, gi, 2));
  assert_int_equal(ci_create(f, gi, 0, -1).id, 1);
  assert_int_equal(ci_create(f, gi, 0, -1).id, 2);
  ok(f, f->b->ops->ci_list(f->b, &f->err, 0, gi, cis, &n));
  assert_int_equal(n, 4);
  for (unsigned i = 0; i < n; i++)
    assert_int_equal(cis[i].id, i);
}

static void test_ci_bad_profile_and_placement(void **state)
{
  struct fixture *f = *state;
  struct gs_ci_info ci;
  unsigned gi = with_gi(f, "4g.20gb", 0);
  /* 4g has no 3c (§5.2). */
  assert_err(f, f->b->ops->ci_create(f->b, &f->err, 0, gi, 2, -1, &ci), GS_E_NOT_SUPPORTED,
             "has no compute-instance profile 2");
  assert_contains(f->err.msg, "3 (4g.20gb)");
  assert_err(f, f->b->ops->ci_create(f->b, &f->err, 0, gi, 1, 1, &ci), GS_E_INVALID_ARGUMENT,
             "cannot start at compute slice 1");
  ci_create(f, gi, 1, 2);
  assert_err(f, f->b->ops->ci_create(f->b, &f->err, 0, gi, 0, 3, &ci),
             GS_E_INSUFFICIENT_RESOURCES, "overlaps compute instance 0");
}

/* ---- --emulate and state files ---- */

static void test_parse_spec(void **state)
{
  const struct gs_geom_model *models[GS_BACKEND_MAX_GPUS];
  struct gs_err err = {0};
  (void)state;
  assert_int_equal(gs_emu_parse_spec(&err, "a100-40gb:8,h100-80gb:2", models, GS_BACKEND_MAX_GPUS),
                   10);
  for (unsigned i = 0; i < 10; i++)
    assert_string_equal(models[i]->key, i < 8 ? "a100-40gb" : "h100-80gb");
  assert_int_equal(gs_emu_parse_spec(&err, "A100-40GB,rtx-pro-6000", models, GS_BACKEND_MAX_GPUS), 2);
  assert_string_equal(models[1]->key, "rtx-pro-6000");
  /* "" and NULL mean the default machine: one A100-SXM4-40GB (DESIGN.md). */
  assert_int_equal(gs_emu_parse_spec(&err, "", models, GS_BACKEND_MAX_GPUS), 1);
  assert_string_equal(models[0]->key, "a100-40gb");
  assert_int_equal(gs_emu_parse_spec(&err, NULL, models, GS_BACKEND_MAX_GPUS), 1);
}

static void assert_spec_fails(const char *spec, unsigned max, const char *part)
{
  const struct gs_geom_model *models[GS_BACKEND_MAX_GPUS];
  struct gs_err err = {0};
  assert_int_equal(gs_emu_parse_spec(&err, spec, models, max), GS_E_INVALID_ARGUMENT);
  assert_int_equal(err.code, GS_E_INVALID_ARGUMENT);
  assert_contains(err.msg, part);
}

static void test_parse_spec_errors(void **state)
{
  (void)state;
  assert_spec_fails("a100-40gb,nosuch:2", 64, "unknown GPU model 'nosuch'");
  assert_spec_fails("a100-40gb:0", 64, "must be 1..64");
  assert_spec_fails("a100-40gb:65", 64, "must be 1..64");
  assert_spec_fails("a100-40gb:3", 2, "must be 1..2");
  assert_spec_fails("a100-40gb:60,h100-80gb:5", 64, "at most 64 GPUs");
  assert_spec_fails("a100-40gb:8x", 64, "the count after ':'");
  assert_spec_fails("a100-40gb:", 64, "the count after ':'");
  assert_spec_fails("a100-40gb:-1", 64, "the count after ':'");
  assert_spec_fails("a100-40gb x", 64, "unknown GPU model");
  assert_spec_fails(",", 64, "names no GPU");
  assert_spec_fails(":2", 64, "unknown GPU model ''");
}

static void test_open_other_machine_refused(void **state)
{
  struct fixture *f = *state;
  struct gs_backend *b = NULL;
  unsigned n = 0;
  machine(f, "a100-40gb");
  set_mode(f, 0, true);
  gs_backend_close(f->b);
  f->b = NULL;
  assert_err(f, open_spec(f, "h100-80gb:2", &b), GS_E_INVALID_ARGUMENT, "gpuslice emu reset");
  assert_null(b);
  assert_contains(f->err.msg, f->path);
  /* Refused, never overwritten: the old machine is still there. */
  machine(f, NULL);
  ok(f, f->b->ops->gpu_count(f->b, &f->err, &n));
  assert_int_equal(n, 1);
  assert_mode(f, 0, true, true);
}

static void test_corrupt_state(void **state)
{
  static const char garbage[] = "{\"format\": \"gpuslice-emu-state\", \"gpus\": [tr";
  struct fixture *f = *state;
  struct gs_backend *b = NULL;
  assert_int_equal(gs_test_write(f->path, garbage, sizeof(garbage) - 1), 0);
  assert_err(f, open_spec(f, NULL, &b), GS_E_CORRUPT_STATE, "gpuslice emu reset");
  assert_contains(f->err.msg, f->path);
  assert_null(b);
  assert_int_equal(gs_test_write(f->path, "\x01\x02garbage", 9), 0);
  assert_err(f, open_spec(f, "a100-40gb", &b), GS_E_CORRUPT_STATE, "gpuslice emu reset");
  /* The fix works. */
  ok(f, gs_emu_reset_state(&f->err, f->path, "a30-24gb"));
  machine(f, NULL);
  assert_string_equal(info_of(f, 0).model->key, "a30-24gb");
}

#define T(name) cmocka_unit_test_setup_teardown(test_##name, setup, teardown)

int main(void)
{
  const struct CMUnitTest tests[] = {
    T(a100_enable_resets),
    T(a100_enable_with_process_stays_pending),
    T(a100_reset_blocked),
    T(reboot_per_generation),
    T(a100_pending_disable_applies_at_reboot),
    T(h100_mode_change_with_process),
    T(mig_disabled_calls_not_supported),
    T(gi_remaining_mig_disabled_not_supported),
    T(disable_with_gis_in_use),
    T(gi_destroy_with_cis_in_use),
    T(ci_destroy_with_process_in_use),
    T(unknown_ids_not_found),
    T(bad_gpu_index),
    T(illegal_placement),
    T(overlap_names_other),
    T(two_me_insufficient),
    T(foreign_profile),
    T(enforce_root_in_process),
    T(enforce_root_as_nobody),
    T(ci_three_1c_in_3g),
    T(ci_2c_plus_1c_in_3g),
    T(ci_full_3g_spans_4),
    T(ci_4c_plus_3c_in_7g),
    T(ci_3c_holds_its_span),
    T(ci_ids_lowest_free),
    T(ci_bad_profile_and_placement),
    T(parse_spec),
    T(parse_spec_errors),
    T(open_other_machine_refused),
    T(corrupt_state),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
