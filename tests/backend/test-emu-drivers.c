/* SPDX-License-Identifier: Apache-2.0 */
/* test-emu-drivers.c: the emulated machine's driver and boards (issue 19):
 * --emulate MODEL@DRIVER and `emu set --driver` choose the driver's tables,
 * its refusals and MIG UUID form; boards report their own PCI ids; a board's
 * GI-ID orientation is its own; creating GPU instances while a process holds
 * the whole GPU is IN_USE, as a GH200's -cgi was. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "../lib/gs-test-tmp.h"

struct fixture {
  char dir[GS_TEST_DIR];
  char path[GS_TEST_PATH];
  struct gs_backend *b;
  struct gs_err err;
};

static void machine(struct fixture *f, const char *spec)
{
  struct gs_backend_config cfg = {.kind = "emu", .emulate = spec, .state_path = f->path};
  gs_backend_close(f->b);
  f->b = NULL;
  assert_int_equal(gs_emu_reset_state(&f->err, f->path, spec), 0);
  if (gs_backend_open(&f->err, &cfg, &f->b) != 0)
    fail_msg("open %s: %s", spec, f->err.msg);
}

static void ok(struct fixture *f, int rc)
{
  if (rc != 0)
    fail_msg("%s (%s)", f->err.msg, gs_code_name(rc));
}

static void refused(struct fixture *f, int rc, int want, const char *part)
{
  if (rc != want)
    fail_msg("got %s \"%s\", want %s", gs_code_name(rc), rc ? f->err.msg : "", gs_code_name(want));
  if (part && !strstr(f->err.msg, part))
    fail_msg("\"%s\" lacks \"%s\"", f->err.msg, part);
}

static void enable(struct fixture *f, unsigned gpu)
{
  int activation = -1;
  ok(f, f->b->ops->set_mig_mode(f->b, &f->err, gpu, true, &activation));
  assert_int_equal(activation, 0);
}

static const struct gs_geom_gi_profile *prof(struct fixture *f, unsigned gpu, const char *name)
{
  struct gs_gpu_info info;
  ok(f, f->b->ops->gpu_info(f->b, &f->err, gpu, &info));
  return gs_geom_gi_profile_find(info.model, name);
}

static int setup(void **state)
{
  struct fixture *f = calloc(1, sizeof(*f));
  if (f == NULL || gs_test_mkdtemp("emu-drivers", f->dir) != 0)
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

/* A sister board is itself: its own name and ids over its model's tables. */
static void boards_report_their_ids(void **state)
{
  struct fixture *f = *state;
  struct gs_gpu_info info;
  machine(f, "a100-pcie-40gb,h200-nvl-141gb");
  ok(f, f->b->ops->gpu_info(f->b, &f->err, 0, &info));
  assert_string_equal(info.name, "NVIDIA A100-PCIE-40GB");
  assert_int_equal(info.pci_device_id, 0x20F110DE);
  assert_int_equal(info.pci_subsystem_id, 0x145F10DE);
  assert_string_equal(info.model->key, "a100-40gb");
  ok(f, f->b->ops->gpu_info(f->b, &f->err, 1, &info));
  assert_int_equal(info.pci_device_id, 0x233B10DE);
  assert_string_equal(info.model->key, "h200-141gb");
}

/* The driver picks the tables: an A100-40GB on R510 has no 1g.10gb, before
 * R510 refuses a 4g beside a 3g, and before R470 names MIG devices by the
 * GPU's UUID; R525 and later have 1g.10gb. */
static void driver_eras(void **state)
{
  struct fixture *f = *state;
  struct gs_gpu_info info;
  struct gs_gi_info gi;
  struct gs_ci_info ci;
  struct gs_mig_device devs[GS_BACKEND_MAX_MIG_DEVICES];
  unsigned n = 0;
  machine(f, "a100-40gb@510");
  ok(f, f->b->ops->gpu_info(f->b, &f->err, 0, &info));
  assert_string_equal(info.driver, "510.47.03");
  assert_int_equal(info.cuda_version, 11060);
  assert_null(prof(f, 0, "1g.10gb"));
  enable(f, 0);
  ok(f, f->b->ops->gi_create(f->b, &f->err, 0, prof(f, 0, "4g.20gb"), -1, &gi));
  ok(f, f->b->ops->gi_create(f->b, &f->err, 0, prof(f, 0, "3g.20gb"), -1, &gi));

  machine(f, "a100-40gb@470");
  enable(f, 0);
  ok(f, f->b->ops->gi_create(f->b, &f->err, 0, prof(f, 0, "4g.20gb"), -1, &gi));
  refused(f, f->b->ops->gi_create(f->b, &f->err, 0, prof(f, 0, "3g.20gb"), -1, &gi),
          GS_E_INSUFFICIENT_RESOURCES, "drivers before R510");

  machine(f, "a100-40gb@460");
  assert_null(prof(f, 0, "1g.5gb+me"));
  assert_int_equal(prof(f, 0, "7g.40gb")->memory_mib, 40448); /* 39.50 GiB [T-A100OLD] */
  enable(f, 0);
  ok(f, f->b->ops->gi_create(f->b, &f->err, 0, prof(f, 0, "1g.5gb"), -1, &gi));
  ok(f, f->b->ops->ci_create(f->b, &f->err, 0, gi.id, 0, -1, &ci));
  ok(f, f->b->ops->mig_devices(f->b, &f->err, 0, devs, &n));
  assert_int_equal(n, 1);
  assert_string_equal(devs[0].uuid, devs[0].legacy_uuid);
  assert_int_equal(strncmp(devs[0].uuid, "MIG-GPU-", 8), 0);

  machine(f, "a100-40gb");
  assert_non_null(prof(f, 0, "1g.10gb"));
  enable(f, 0);
  ok(f, f->b->ops->gi_create(f->b, &f->err, 0, prof(f, 0, "1g.5gb"), -1, &gi));
  ok(f, f->b->ops->ci_create(f->b, &f->err, 0, gi.id, 0, -1, &ci));
  ok(f, f->b->ops->mig_devices(f->b, &f->err, 0, devs, &n));
  assert_int_equal(strncmp(devs[0].uuid, "MIG-GPU-", 8) != 0, 1);
}

/* `emu set --driver` installs a driver and reboots: instances go, Ampere
 * keeps MIG mode, the new tables apply; a driver without MIG for a board
 * is refused and changes nothing. */
static void set_driver_reboots(void **state)
{
  struct fixture *f = *state;
  struct gs_gpu_info info;
  struct gs_gi_info gi;
  unsigned n = 9;
  machine(f, "h100-pcie-80gb,a100-40gb");
  enable(f, 0);
  enable(f, 1);
  ok(f, f->b->ops->gi_create(f->b, &f->err, 1, prof(f, 1, "1g.10gb"), -1, &gi));
  refused(f, gs_emu_set_driver(f->b, &f->err, "470"), GS_E_INVALID_ARGUMENT,
          "h100-pcie-80gb has no MIG on driver 470.57.02");
  ok(f, f->b->ops->gi_list(f->b, &f->err, 1, (struct gs_gi_info[8]){0}, &n));
  assert_int_equal(n, 1);
  ok(f, gs_emu_set_driver(f->b, &f->err, "525.125.06"));
  ok(f, f->b->ops->gpu_info(f->b, &f->err, 0, &info));
  assert_false(info.mig_current); /* Hopper: not kept across a reboot */
  assert_string_equal(info.driver, "525.125.06");
  assert_int_equal(prof(f, 0, "7g.80gb")->memory_mib, 80896); /* 79.00 GiB on 525 */
  ok(f, f->b->ops->gpu_info(f->b, &f->err, 1, &info));
  assert_true(info.mig_current); /* Ampere: kept */
  assert_non_null(prof(f, 1, "1g.10gb")); /* R525 has it */
  ok(f, f->b->ops->gi_list(f->b, &f->err, 1, (struct gs_gi_info[8]){0}, &n));
  assert_int_equal(n, 0);
  refused(f, gs_emu_set_driver(f->b, &f->err, "nine"), GS_E_INVALID_ARGUMENT, "driver 'nine'");
}

/* DCGM issue #138: two GPUs of one machine and driver, one numbering 2g@0:2
 * as GI 3, the other as GI 5. The orientation is each board's. */
static void orientation_is_per_board(void **state)
{
  struct fixture *f = *state;
  struct gs_gi_info gi;
  machine(f, "h100-80gb:2");
  ok(f, gs_emu_set_swapped_ids(f->b, &f->err, 1, true));
  enable(f, 0);
  enable(f, 1);
  ok(f, f->b->ops->gi_create(f->b, &f->err, 0, prof(f, 0, "2g.20gb"), 0, &gi));
  assert_int_equal(gi.id, 3);
  ok(f, f->b->ops->gi_create(f->b, &f->err, 1, prof(f, 1, "2g.20gb"), 0, &gi));
  assert_int_equal(gi.id, 5);
  refused(f, gs_emu_set_swapped_ids(f->b, &f->err, 1, false), GS_E_IN_USE, "destroy them first");
}

/* Item 2: a process holding the whole GPU blocks -cgi; one inside a MIG
 * device does not. */
static void whole_gpu_process_blocks_create(void **state)
{
  struct fixture *f = *state;
  struct gs_gi_info gi;
  struct gs_ci_info ci;
  struct gs_proc_info nsys = {.pid = 1484778, .name = "nsys", .gpu = 0, .gi = -1, .ci = -1};
  struct gs_proc_info job = {.pid = 7, .name = "job", .gpu = 0};
  machine(f, "h100-96gb");
  enable(f, 0);
  ok(f, f->b->ops->gi_create(f->b, &f->err, 0, prof(f, 0, "1g.12gb"), -1, &gi));
  ok(f, f->b->ops->ci_create(f->b, &f->err, 0, gi.id, 0, -1, &ci));
  job.gi = (int)gi.id;
  job.ci = (int)ci.id;
  ok(f, gs_emu_proc_add(f->b, &f->err, &job));
  ok(f, f->b->ops->gi_create(f->b, &f->err, 0, prof(f, 0, "1g.12gb"), -1, &gi));
  ok(f, gs_emu_proc_add(f->b, &f->err, &nsys));
  refused(f, f->b->ops->gi_create(f->b, &f->err, 0, prof(f, 0, "1g.12gb+me"), -1, &gi), GS_E_IN_USE,
          "1484778 (nsys)");
  ok(f, gs_emu_proc_remove(f->b, &f->err, nsys.pid));
  ok(f, f->b->ops->gi_create(f->b, &f->err, 0, prof(f, 0, "1g.12gb+me"), -1, &gi));
}

static void spec_errors(void **state)
{
  struct fixture *f = *state;
  const struct gs_geom_model *models[4];
  (void)f;
  assert_int_equal(gs_emu_parse_spec(NULL, "a100-40gb:2@535", models, 4), 2);
  assert_int_equal(gs_emu_parse_spec(&f->err, "a100-40gb@535@550", models, 4),
                   GS_E_INVALID_ARGUMENT);
  assert_non_null(strstr(f->err.msg, "one driver per machine"));
  assert_int_equal(gs_emu_parse_spec(&f->err, "a100-40gb@545", models, 4), GS_E_INVALID_ARGUMENT);
  assert_non_null(strstr(f->err.msg, "no release of branch 545 is known"));
  assert_int_equal(gs_emu_parse_spec(&f->err, "b200@550", models, 4), GS_E_INVALID_ARGUMENT);
  assert_non_null(strstr(f->err.msg, "b200-180gb has no MIG on driver 550.127.05"));
  assert_int_equal(gs_emu_parse_spec(&f->err, "a100-40gb@", models, 4), GS_E_INVALID_ARGUMENT);
  assert_int_equal(gs_emu_parse_spec(&f->err, "a100-40gb@440.1.1", models, 4), GS_E_INVALID_ARGUMENT);
  assert_int_equal(gs_emu_parse_spec(NULL, "a100-40gb@R535", models, 4), 1);
  assert_int_equal(gs_emu_parse_spec(NULL, "a100-40gb@570.169", models, 4), 1);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(boards_report_their_ids, setup, teardown),
      cmocka_unit_test_setup_teardown(driver_eras, setup, teardown),
      cmocka_unit_test_setup_teardown(set_driver_reboots, setup, teardown),
      cmocka_unit_test_setup_teardown(orientation_is_per_board, setup, teardown),
      cmocka_unit_test_setup_teardown(whole_gpu_process_blocks_create, setup, teardown),
      cmocka_unit_test_setup_teardown(spec_errors, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
