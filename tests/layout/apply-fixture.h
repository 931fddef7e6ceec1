/* SPDX-License-Identifier: Apache-2.0 */
/* apply-fixture.h: what the apply tests share: an emulated machine in a
 * scratch dir (/dev/shm when there is one), applying config text through the
 * layout API as the CLI does, and our config and exports of a layout.
 * Include after cmocka.h; all helpers are static. */
#ifndef GS_TEST_APPLY_FIXTURE_H
#define GS_TEST_APPLY_FIXTURE_H

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "layout/layout.h"
#include "../lib/gs-test-tmp.h"

struct fixture {
  char dir[GS_TEST_DIR];
  char state[GS_TEST_PATH], lock[GS_TEST_PATH];
  struct gs_backend *b;
  struct gs_err err;
  unsigned changes;
};

static void count_plan(void *arg, unsigned gpu, const struct gs_layout_plan *p)
{
  (void)gpu;
  ((struct fixture *)arg)->changes += p->nops;
}

static int setup(void **state)
{
  struct fixture *f = calloc(1, sizeof(*f));
  /* /dev/shm when there is one: thousands of fsync'd state writes. */
  if (!f)
    return -1;
  if (access("/dev/shm", W_OK) == 0) {
    snprintf(f->dir, sizeof(f->dir), "/dev/shm/gs-apply-XXXXXX");
    if (!mkdtemp(f->dir))
      return -1;
  } else if (gs_test_mkdtemp("layout-apply", f->dir) != 0)
    return -1;
  gs_test_join(f->state, f->dir, "emu.json");
  gs_test_join(f->lock, f->dir, "apply");
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

static void machine(struct fixture *f, const char *spec)
{
  struct gs_backend_config cfg = {.kind = "emu", .emulate = spec, .state_path = f->state};
  gs_backend_close(f->b);
  f->b = NULL;
  if (gs_emu_reset_state(&f->err, f->state, spec) != 0 || gs_backend_open(&f->err, &cfg, &f->b) != 0)
    fail_msg("machine %s: %s", spec, f->err.msg);
}

/* Applies (or, with dry_run, asserts) config `name` of `text`; returns the code. */
static int apply_text(struct fixture *f, const char *text, const char *name, bool dry_run, bool force)
{
  struct gs_gpu_info gpus[GS_BACKEND_MAX_GPUS];
  struct gs_layout_file *file = NULL;
  const struct gs_layout_config *cfg;
  struct gs_layout_selection sel = {0};
  struct gs_layout_apply_opts o = {.config_name = name, .lock_path = f->lock, .dry_run = dry_run,
                                   .force = force, .on_plan = count_plan, .arg = f};
  unsigned n = 0;
  int rc;
  f->changes = 0;
  if ((rc = gs_layout_parse(&f->err, "t.yaml", text, strlen(text), &file)) != 0)
    fail_msg("parse: %s\n%s", f->err.msg, text);
  assert_int_equal(gs_layout_find(&f->err, file, name, &cfg), 0);
  assert_int_equal(f->b->ops->gpu_count(f->b, &f->err, &n), 0);
  for (unsigned g = 0; g < n; g++)
    assert_int_equal(f->b->ops->gpu_info(f->b, &f->err, g, &gpus[g]), 0);
  if ((rc = gs_layout_resolve(&f->err, file, cfg, gpus, n, &sel)) == 0)
    rc = gs_layout_apply(&f->err, f->b, &sel, &o);
  gs_layout_selection_free(&sel);
  gs_layout_file_free(file);
  return rc;
}

/* Our config for one layout: every GI at its placement. */
static void config_of(const struct gs_geom_layout *l, char *buf, size_t size)
{
  size_t used = (size_t)snprintf(buf, size, "version: gpuslice/v1\nconfigs:\n  x:\n    - devices: all\n"
                                            "      mig-enabled: true\n      gpu-instances:%s\n",
                                 l->n ? "" : " []");
  for (unsigned i = 0; i < l->n && used < size; i++)
    used += (size_t)snprintf(buf + used, size - used, "        - {profile: \"%s\", placement: %d}\n",
                             l->slot[i].profile->name, l->slot[i].start);
}

#endif
