/* SPDX-License-Identifier: Apache-2.0 */
/* test-geometry-layouts.c: the layout rules of geometry.c against
 * shared/reference/mig-facts.md: enumeration counts (§4), the 19 A100 layouts
 * of §4.1 one by one, GI IDs and automatic placement order (§8.1), every
 * failure reason of gs_geom_check_add with its code and message, remaining
 * capacity (§8.3), layout validation, CI profiles (§5.2) and name lookups. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "geometry/geometry.h"

/* ---- helpers ---- */

static const struct gs_geom_model *model(const char *key)
{
  const struct gs_geom_model *m = gs_geom_model_find(key);
  assert_non_null(m);
  return m;
}

static const struct gs_geom_gi_profile *prof(const struct gs_geom_model *m, const char *name)
{
  const struct gs_geom_gi_profile *p = gs_geom_gi_profile_find(m, name);
  assert_non_null(p);
  return p;
}

/* Appends a placed slot to l. */
static void put(struct gs_geom_layout *l, const struct gs_geom_gi_profile *p, int start)
{
  assert_true(l->n < GS_GEOM_MAX_INSTANCES);
  l->slot[l->n].profile = p;
  l->slot[l->n].start = start;
  l->n++;
}

static void assert_contains(const char *haystack, const char *needle)
{
  if (strstr(haystack, needle) == NULL)
    fail_msg("message \"%s\" lacks \"%s\"", haystack, needle);
}

/* Asserts check_add fails with code and a message holding part. */
static void assert_add_fails(const struct gs_geom_model *m, const struct gs_geom_layout *l,
                             const struct gs_geom_gi_profile *p, unsigned start, int code,
                             const char *part)
{
  struct gs_err err = {0};
  assert_int_equal(gs_geom_check_add(&err, m, l, p, start), code);
  assert_int_equal(err.code, code);
  assert_contains(err.msg, part);
  /* NULL err is allowed and gives the same verdict. */
  assert_int_equal(gs_geom_check_add(NULL, m, l, p, start), code);
}

static unsigned count_layouts(const char *key, unsigned flags)
{
  return gs_geom_enumerate(model(key), flags, NULL, NULL);
}

/* ---- enumeration counts (reference §4) ---- */

/* NVIDIA's MIG user guide gives 19 valid A100 configurations for R510 and
 * later (reference §4.1: the number from CFG19's transcription of the UG,
 * reproduced by the reference's own enumeration [OWN]). */
static void test_a100_maximal_is_19(void **state)
{
  (void)state;
  assert_int_equal(count_layouts("a100-40gb", GS_GEOM_ENUM_MAXIMAL), 19);
}

/* §4.1 [OWN]: 298 placement sets counting partial ones and the empty one. */
static void test_a100_valid_is_298(void **state)
{
  (void)state;
  assert_int_equal(count_layouts("a100-40gb", 0), 298);
}

/* §4.1 [OWN]: with the double-memory 1g (1g.10gb) 78 maximal, 723 valid. */
static void test_a100_all_shapes(void **state)
{
  (void)state;
  assert_int_equal(count_layouts("a100-40gb", GS_GEOM_ENUM_MAXIMAL | GS_GEOM_ENUM_ALL_SHAPES), 78);
  assert_int_equal(count_layouts("a100-40gb", GS_GEOM_ENUM_ALL_SHAPES), 723);
}

/* §4.2: A30 has 5 maximal layouts and 26 valid sets. */
static void test_a30_counts(void **state)
{
  (void)state;
  assert_int_equal(count_layouts("a30-24gb", GS_GEOM_ENUM_MAXIMAL), 5);
  assert_int_equal(count_layouts("a30-24gb", 0), 26);
}

/* §4.1: every model on the 8-slot grid shares the A100 placements. */
static void test_every_8_slot_model_is_19(void **state)
{
  unsigned n, seen = 0;
  const struct gs_geom_model *const *all = gs_geom_models(&n);
  (void)state;
  for (unsigned i = 0; i < n; i++) {
    if (all[i]->grid != 8)
      continue;
    seen++;
    if (gs_geom_enumerate(all[i], GS_GEOM_ENUM_MAXIMAL, NULL, NULL) != 19)
      fail_msg("%s: %u maximal layouts, want 19", all[i]->key,
               gs_geom_enumerate(all[i], GS_GEOM_ENUM_MAXIMAL, NULL, NULL));
    assert_int_equal(gs_geom_enumerate(all[i], 0, NULL, NULL), 298);
  }
  assert_int_equal(seen, 11); /* 13 models less A30 and RTX PRO 6000 */
}

/* §4.2: RTX PRO 6000's suffix variants add names, not layouts: 5 maximal,
 * and the same 26 valid sets as A30's 4-slot tree. */
static void test_rtx_pro_6000_counts(void **state)
{
  (void)state;
  assert_int_equal(count_layouts("rtx-pro-6000", GS_GEOM_ENUM_MAXIMAL), 5);
  assert_int_equal(count_layouts("rtx-pro-6000", GS_GEOM_ENUM_MAXIMAL | GS_GEOM_ENUM_ALL_SHAPES), 5);
  assert_int_equal(count_layouts("rtx-pro-6000", 0), 26);
}

/* ---- the 19 A100 layouts are those of the reference table §4.1 ---- */

#define LAYOUT_TEXT 128

struct collected {
  char text[32][LAYOUT_TEXT];
  unsigned n;
};

static int cmp_text(const void *a, const void *b)
{
  return strcmp((const char *)a, (const char *)b);
}

/* "1g.5gb@0 2g.10gb@2 ..." with slots sorted by start. */
static void layout_text(const struct gs_geom_layout *l, char out[LAYOUT_TEXT])
{
  char parts[GS_GEOM_MAX_INSTANCES][24];
  size_t used = 0;
  for (unsigned i = 0; i < l->n; i++)
    snprintf(parts[i], sizeof(parts[i]), "%02d %s", l->slot[i].start, l->slot[i].profile->name);
  qsort(parts, l->n, sizeof(parts[0]), cmp_text);
  out[0] = 0;
  for (unsigned i = 0; i < l->n; i++)
    used += (size_t)snprintf(out + used, LAYOUT_TEXT - used, "%s%s@%d", i ? " " : "",
                             parts[i] + 3, atoi(parts[i]));
}

static int collect(const struct gs_geom_layout *l, void *arg)
{
  struct collected *c = arg;
  assert_true(c->n < GS_NITEMS(c->text));
  layout_text(l, c->text[c->n++]);
  return 0;
}

/* §4.1, rows 1-19, in memory-slice coordinates. */
static const char *const a100_table[19] = {
  "7g.40gb@0",
  "4g.20gb@0 3g.20gb@4",
  "4g.20gb@0 2g.10gb@4 1g.5gb@6",
  "4g.20gb@0 1g.5gb@4 1g.5gb@5 1g.5gb@6",
  "3g.20gb@0 3g.20gb@4",
  "3g.20gb@0 2g.10gb@4 1g.5gb@6",
  "3g.20gb@0 1g.5gb@4 1g.5gb@5 1g.5gb@6",
  "2g.10gb@0 2g.10gb@2 3g.20gb@4",
  "2g.10gb@0 1g.5gb@2 1g.5gb@3 3g.20gb@4",
  "1g.5gb@0 1g.5gb@1 2g.10gb@2 3g.20gb@4",
  "1g.5gb@0 1g.5gb@1 1g.5gb@2 1g.5gb@3 3g.20gb@4",
  "2g.10gb@0 2g.10gb@2 2g.10gb@4 1g.5gb@6",
  "2g.10gb@0 1g.5gb@2 1g.5gb@3 2g.10gb@4 1g.5gb@6",
  "1g.5gb@0 1g.5gb@1 2g.10gb@2 2g.10gb@4 1g.5gb@6",
  "1g.5gb@0 1g.5gb@1 1g.5gb@2 1g.5gb@3 2g.10gb@4 1g.5gb@6",
  "2g.10gb@0 2g.10gb@2 1g.5gb@4 1g.5gb@5 1g.5gb@6",
  "2g.10gb@0 1g.5gb@2 1g.5gb@3 1g.5gb@4 1g.5gb@5 1g.5gb@6",
  "1g.5gb@0 1g.5gb@1 2g.10gb@2 1g.5gb@4 1g.5gb@5 1g.5gb@6",
  "1g.5gb@0 1g.5gb@1 1g.5gb@2 1g.5gb@3 1g.5gb@4 1g.5gb@5 1g.5gb@6",
};

static void test_a100_layouts_are_the_table(void **state)
{
  struct collected got = {0};
  char want[19][LAYOUT_TEXT];
  (void)state;
  assert_int_equal(gs_geom_enumerate(model("a100-40gb"), GS_GEOM_ENUM_MAXIMAL, collect, &got), 19);
  assert_int_equal(got.n, 19);
  for (unsigned i = 0; i < 19; i++)
    snprintf(want[i], LAYOUT_TEXT, "%s", a100_table[i]);
  qsort(got.text, got.n, LAYOUT_TEXT, cmp_text);
  qsort(want, 19, LAYOUT_TEXT, cmp_text);
  for (unsigned i = 0; i < 19; i++)
    assert_string_equal(got.text[i], want[i]);
}

/* Every enumerated layout validates, and slots come sorted by start. */
static int check_one(const struct gs_geom_layout *l, void *arg)
{
  struct gs_err err = {0};
  const struct gs_geom_model *m = arg;
  for (unsigned i = 1; i < l->n; i++)
    assert_true(l->slot[i - 1].start < l->slot[i].start);
  if (gs_geom_validate(&err, m, l, NULL) != 0)
    fail_msg("%s: enumerated layout invalid: %s", m->key, err.msg);
  return 0;
}

static void test_enumerated_layouts_validate(void **state)
{
  static const char *const keys[] = {"a100-40gb", "a30-24gb", "rtx-pro-6000", "h100-80gb"};
  (void)state;
  for (unsigned i = 0; i < GS_NITEMS(keys); i++)
    gs_geom_enumerate(model(keys[i]), GS_GEOM_ENUM_ALL_SHAPES, check_one, (void *)model(keys[i]));
}

static int stop_at_third(const struct gs_geom_layout *l, void *arg)
{
  unsigned *n = arg;
  (void)l;
  return ++*n == 3;
}

static void test_enumerate_stops_early(void **state)
{
  unsigned n = 0;
  (void)state;
  assert_int_equal(gs_geom_enumerate(model("a100-40gb"), 0, stop_at_third, &n), 3);
  assert_int_equal(n, 3);
}

/* ---- GI IDs (reference §8.1) ---- */

static void test_gi_id_a100_swapped(void **state)
{
  const struct gs_geom_model *m = model("a100-40gb");
  (void)state;
  assert_int_equal(gs_geom_gi_id(m, 4, 1), 7);
  assert_int_equal(gs_geom_gi_id(m, 5, 1), 8);
  assert_int_equal(gs_geom_gi_id(m, 6, 1), 9);
  for (unsigned s = 0; s < 4; s++)
    assert_int_equal(gs_geom_gi_id(m, s, 1), 11 + s);
  assert_int_equal(gs_geom_gi_id(m, 0, 4), 2);
  assert_int_equal(gs_geom_gi_id(m, 4, 4), 1);
  assert_int_equal(gs_geom_gi_id(m, 0, 8), 0);
  assert_int_equal(gs_geom_gi_id(m, 0, 2), 5);
}

static void test_gi_id_h100_straight(void **state)
{
  const struct gs_geom_model *m = model("h100-80gb");
  (void)state;
  assert_int_equal(gs_geom_gi_id(m, 4, 4), 2);
  assert_int_equal(gs_geom_gi_id(m, 0, 2), 3);
  assert_int_equal(gs_geom_gi_id(m, 0, 1), 7);
  assert_int_equal(gs_geom_gi_id(m, 0, 8), 0);
}

static void test_gi_id_a30(void **state)
{
  const struct gs_geom_model *m = model("a30-24gb");
  (void)state;
  assert_int_equal(gs_geom_gi_id(m, 0, 1), 3);
  assert_int_equal(gs_geom_gi_id(m, 1, 1), 4);
  assert_int_equal(gs_geom_gi_id(m, 2, 2), 2);
}

static void test_gi_id_rtx_pro_6000(void **state)
{
  const struct gs_geom_model *m = model("rtx-pro-6000");
  (void)state;
  assert_int_equal(gs_geom_gi_id(m, 0, 3), 3);
  assert_int_equal(gs_geom_gi_id(m, 3, 3), 4);
  assert_int_equal(gs_geom_gi_id(m, 6, 3), 5);
  assert_int_equal(gs_geom_gi_id(m, 9, 3), 6);
  assert_int_equal(gs_geom_gi_id(m, 0, 6), 1);
}

/* ---- automatic placement order (reference §8.1) ---- */

static void assert_auto_order(const struct gs_geom_model *m, const char *name,
                              const unsigned *want, unsigned n)
{
  unsigned got[GS_GEOM_MAX_GRID];
  assert_int_equal(gs_geom_gi_auto_order(m, prof(m, name), got), n);
  for (unsigned i = 0; i < n; i++)
    assert_int_equal(got[i], want[i]);
}

static void test_auto_order_a100(void **state)
{
  const struct gs_geom_model *m = model("a100-40gb");
  static const unsigned g1[] = {6, 4, 5, 0, 1, 2, 3}, g2[] = {4, 0, 2}, g3[] = {4, 0}, g4[] = {0},
                        g7[] = {0};
  (void)state;
  assert_auto_order(m, "1g.5gb", g1, 7);
  assert_auto_order(m, "2g.10gb", g2, 3);
  assert_auto_order(m, "3g.20gb", g3, 2);
  assert_auto_order(m, "4g.20gb", g4, 1);
  assert_auto_order(m, "7g.40gb", g7, 1);
}

/* The 4-slot GPUs fill from the left (issue 19 item 4): an A30 put its
 * first 1g.6gb at 0 (GI 3), then 1 (GI 4), then a 2g.12gb at 2; an RTX PRO
 * 6000 put four 1g.24gb at 0, 3, 6, 9 and a first 2g.48gb at 0. */
static void test_auto_order_4_slot(void **state)
{
  const struct gs_geom_model *a30 = model("a30-24gb"), *rtx = model("rtx-pro-6000");
  static const unsigned a1[] = {0, 1, 2, 3}, a2[] = {0, 2}, r1[] = {0, 3, 6, 9}, r2[] = {0, 6};
  (void)state;
  assert_auto_order(a30, "1g.6gb", a1, 4);
  assert_auto_order(a30, "2g.12gb", a2, 2);
  assert_auto_order(rtx, "1g.24gb", r1, 4);
  assert_auto_order(rtx, "2g.48gb", r2, 2);
  assert_auto_order(rtx, "1g.24gb+gfx", r1, 4);
}

/* ---- gs_geom_check_add: every failure reason ---- */

static void test_check_add_illegal_start(void **state)
{
  const struct gs_geom_model *m = model("a100-40gb");
  struct gs_geom_layout l = {0};
  (void)state;
  assert_add_fails(m, &l, prof(m, "3g.20gb"), 2, GS_E_INVALID_ARGUMENT,
                   "valid placements are 0, 4");
  assert_add_fails(m, &l, prof(m, "4g.20gb"), 4, GS_E_INVALID_ARGUMENT, "valid placements are 0");
  /* Past the widest grid too. */
  assert_add_fails(m, &l, prof(m, "1g.5gb"), 7, GS_E_INVALID_ARGUMENT,
                   "valid placements are 0, 1, 2, 3, 4, 5, 6");
  assert_add_fails(m, &l, prof(m, "1g.5gb"), 1000, GS_E_INVALID_ARGUMENT, "1000");
}

static void test_check_add_overlap_names_other(void **state)
{
  const struct gs_geom_model *m = model("a100-40gb");
  struct gs_geom_layout l = {0};
  (void)state;
  put(&l, prof(m, "3g.20gb"), 0);
  assert_add_fails(m, &l, prof(m, "2g.10gb"), 2, GS_E_INSUFFICIENT_RESOURCES,
                   "overlaps 3g.20gb at 0:4");
  assert_add_fails(m, &l, prof(m, "2g.10gb"), 2, GS_E_INSUFFICIENT_RESOURCES,
                   "free placements now: 4");
}

static void test_check_add_max_count(void **state)
{
  const struct gs_geom_model *m = model("a100-40gb");
  struct gs_geom_layout l = {0};
  (void)state;
  put(&l, prof(m, "1g.5gb+me"), 0);
  /* +me twice: the second has a free, legal slot but the profile's limit is 1. */
  assert_add_fails(m, &l, prof(m, "1g.5gb+me"), 3, GS_E_INSUFFICIENT_RESOURCES,
                   "at most 1 1g.5gb+me instance");
  assert_int_equal(gs_geom_check_add(NULL, m, &l, prof(m, "1g.5gb"), 3), 0);
}

/* Two different +me profiles (A30 has 1g.6gb+me and 2g.12gb+me): one extra
 * media set per GPU. */
static void test_check_add_one_me_per_gpu(void **state)
{
  const struct gs_geom_model *m = model("a30-24gb");
  struct gs_geom_layout l = {0};
  (void)state;
  put(&l, prof(m, "1g.6gb+me"), 0);
  assert_add_fails(m, &l, prof(m, "2g.12gb+me"), 2, GS_E_INSUFFICIENT_RESOURCES,
                   "only one +me instance per GPU");
  assert_int_equal(gs_geom_check_add(NULL, m, &l, prof(m, "2g.12gb"), 2), 0);
}

/* 4g + 3g uses all 7 compute slices (R510+); nothing more fits anywhere. */
static void test_check_add_4g_3g_then_nothing(void **state)
{
  const struct gs_geom_model *m = model("a100-40gb");
  struct gs_geom_layout l = {0};
  (void)state;
  put(&l, prof(m, "4g.20gb"), 0);
  assert_int_equal(gs_geom_check_add(NULL, m, &l, prof(m, "3g.20gb"), 4), 0);
  put(&l, prof(m, "3g.20gb"), 4);
  for (unsigned i = 0; i < m->ngi; i++) {
    const struct gs_geom_gi_profile *p = &m->gi[i];
    for (unsigned s = 0; s < m->grid; s++) {
      int want = (p->starts & (1u << s)) ? GS_E_INSUFFICIENT_RESOURCES : GS_E_INVALID_ARGUMENT;
      assert_int_equal(gs_geom_check_add(NULL, m, &l, p, s), want);
    }
    assert_int_equal(gs_geom_remaining(m, &l, p), 0);
  }
}

/* On every tabled model a GI's memory span is at least its compute slices,
 * so compute runs out only with memory; a toy model with fewer compute slices
 * than slots exercises the compute-slice rule itself. */
static const struct gs_geom_gi_profile toy_gi[] = {
  {.name = "1g.toy", .id = 19, .compute_slices = 1, .span = 1, .memory_mib = 1024, .sms = 1,
   .max_count = 4, .starts = 0xf},
};
static const struct gs_geom_model toy = {
  .key = "toy", .name = "toy", .compute_slices = 2, .grid = 4, .leaf_span = 1,
  .gi = toy_gi, .ngi = 1,
};

static void test_check_add_compute_exhausted(void **state)
{
  struct gs_geom_layout l = {0};
  (void)state;
  put(&l, &toy_gi[0], 0);
  put(&l, &toy_gi[0], 1);
  assert_add_fails(&toy, &l, &toy_gi[0], 2, GS_E_INSUFFICIENT_RESOURCES,
                   "needs 1 compute slice but only 0 of 2 are free");
  assert_int_equal(gs_geom_remaining(&toy, &l, &toy_gi[0]), 0);
}

/* RTX PRO 6000 +me.all holds every media engine: only -me may sit beside it. */
static void test_check_add_me_all(void **state)
{
  const struct gs_geom_model *m = model("rtx-pro-6000");
  struct gs_geom_layout plain = {0}, no_me = {0}, all = {0};
  (void)state;
  put(&plain, prof(m, "1g.24gb"), 0);
  assert_add_fails(m, &plain, prof(m, "1g.24gb+me.all"), 3, GS_E_INSUFFICIENT_RESOURCES,
                   "takes every media engine");
  put(&no_me, prof(m, "1g.24gb-me"), 0);
  assert_int_equal(gs_geom_check_add(NULL, m, &no_me, prof(m, "1g.24gb+me.all"), 3), 0);
  put(&all, prof(m, "2g.48gb+me.all"), 0);
  assert_add_fails(m, &all, prof(m, "1g.24gb"), 6, GS_E_INSUFFICIENT_RESOURCES,
                   "only -me profiles can be added beside it");
  assert_int_equal(gs_geom_check_add(NULL, m, &all, prof(m, "2g.48gb-me"), 6), 0);
}

/* Slots with start < 0 are not on the GPU yet: check_add ignores them. */
static void test_check_add_ignores_unplaced(void **state)
{
  const struct gs_geom_model *m = model("a100-40gb");
  struct gs_geom_layout l = {0};
  (void)state;
  put(&l, prof(m, "7g.40gb"), -1);
  assert_int_equal(gs_geom_check_add(NULL, m, &l, prof(m, "1g.5gb"), 0), 0);
}

/* ---- remaining capacity (reference §8.3) ---- */

static void test_remaining_after_3g_at_0(void **state)
{
  const struct gs_geom_model *m = model("a100-40gb");
  struct gs_geom_layout l = {0};
  (void)state;
  assert_int_equal(gs_geom_remaining(m, &l, prof(m, "1g.5gb")), 7);
  assert_int_equal(gs_geom_remaining(m, &l, prof(m, "3g.20gb")), 2);
  put(&l, prof(m, "3g.20gb"), 0);
  assert_int_equal(gs_geom_remaining(m, &l, prof(m, "3g.20gb")), 1);
  assert_int_equal(gs_geom_remaining(m, &l, prof(m, "1g.5gb")), 3);
  assert_int_equal(gs_geom_remaining(m, &l, prof(m, "2g.10gb")), 1);
  assert_int_equal(gs_geom_remaining(m, &l, prof(m, "4g.20gb")), 0);
  assert_int_equal(gs_geom_remaining(m, &l, prof(m, "7g.40gb")), 0);
}

/* ---- validation ---- */

/* The UG's "Example 2": the driver's own order (1g to 6, 1g to 4, 2g to 0:2)
 * leaves no half for the 3g, although a layout exists (§4.1, row 10). */
static void test_validate_example2(void **state)
{
  const struct gs_geom_model *m = model("a100-40gb");
  const char *names[] = {"1g.5gb", "1g.5gb", "2g.10gb", "3g.20gb"};
  struct gs_geom_layout l = {0}, out = {0}, driver = {0};
  struct gs_err err = {0};
  char text[LAYOUT_TEXT];
  (void)state;
  for (unsigned i = 0; i < 4; i++)
    put(&l, prof(m, names[i]), -1);
  assert_int_equal(gs_geom_validate(&err, m, &l, &out), 0);
  assert_int_equal(out.n, 4);
  for (unsigned i = 0; i < 4; i++) {
    assert_ptr_equal(out.slot[i].profile, l.slot[i].profile);
    assert_true(out.slot[i].start >= 0);
  }
  assert_int_equal(out.slot[3].start, 4); /* the 3g must take the right half */
  assert_int_equal(gs_geom_validate(NULL, m, &out, NULL), 0);
  /* The driver, in creation order, first start of its order that fits. */
  for (unsigned i = 0; i < 4; i++) {
    unsigned order[GS_GEOM_MAX_GRID], n = gs_geom_gi_auto_order(m, l.slot[i].profile, order), k;
    for (k = 0; k < n; k++)
      if (gs_geom_check_add(NULL, m, &driver, l.slot[i].profile, order[k]) == 0)
        break;
    if (i < 3) {
      assert_true(k < n);
      put(&driver, l.slot[i].profile, (int)order[k]);
    } else {
      assert_int_equal(k, n); /* the 3g finds no start */
    }
  }
  layout_text(&driver, text);
  assert_string_equal(text, "2g.10gb@0 1g.5gb@4 1g.5gb@6");
}

static void test_validate_3g_3g_1g_fails(void **state)
{
  const struct gs_geom_model *m = model("a100-40gb");
  struct gs_geom_layout l = {0};
  struct gs_err err = {0};
  (void)state;
  put(&l, prof(m, "3g.20gb"), -1);
  put(&l, prof(m, "3g.20gb"), -1);
  put(&l, prof(m, "1g.5gb"), -1);
  assert_int_equal(gs_geom_validate(&err, m, &l, NULL), GS_E_INSUFFICIENT_RESOURCES);
  assert_int_equal(err.code, GS_E_INSUFFICIENT_RESOURCES);
  assert_contains(err.msg, "3g.20gb x2 + 1g.5gb needs 9 memory slices but one a100-40gb has 8");
}

/* Within every total (7 compute, 7 memory slices) yet no placement: a 1g at
 * slice 2 leaves no room for the third 2g, which must start at 0, 2, 4 or 6. */
static void test_validate_no_placement(void **state)
{
  const struct gs_geom_model *m = model("a100-40gb");
  struct gs_geom_layout l = {0};
  struct gs_err err = {0};
  (void)state;
  put(&l, prof(m, "1g.5gb"), 2);
  for (int i = 0; i < 3; i++)
    put(&l, prof(m, "2g.10gb"), -1);
  assert_int_equal(gs_geom_validate(&err, m, &l, NULL), GS_E_INSUFFICIENT_RESOURCES);
  assert_contains(err.msg, "1g.5gb + 2g.10gb x3 does not fit on one a100-40gb in any placement");
}

static void test_validate_placed_overlap(void **state)
{
  const struct gs_geom_model *m = model("a100-40gb");
  struct gs_geom_layout l = {0};
  struct gs_err err = {0};
  (void)state;
  put(&l, prof(m, "3g.20gb"), 0);
  put(&l, prof(m, "1g.5gb"), 4);
  put(&l, prof(m, "2g.10gb"), 2);
  assert_int_equal(gs_geom_validate(&err, m, &l, NULL), GS_E_INSUFFICIENT_RESOURCES);
  assert_contains(err.msg, "2g.10gb at 2:2 overlaps 3g.20gb at 0:4");
}

static void test_validate_placed_illegal_start(void **state)
{
  const struct gs_geom_model *m = model("a100-40gb");
  struct gs_geom_layout l = {0};
  struct gs_err err = {0};
  (void)state;
  put(&l, prof(m, "3g.20gb"), 2);
  assert_int_equal(gs_geom_validate(&err, m, &l, NULL), GS_E_INVALID_ARGUMENT);
  assert_contains(err.msg, "valid placements are 0, 4");
}

/* Placed slots stay where they are; free ones fill around them. */
static void test_validate_mixed(void **state)
{
  const struct gs_geom_model *m = model("a100-40gb");
  struct gs_geom_layout l = {0}, out = {0};
  char text[LAYOUT_TEXT];
  (void)state;
  put(&l, prof(m, "3g.20gb"), 0);
  put(&l, prof(m, "1g.5gb"), -1);
  put(&l, prof(m, "2g.10gb"), -1);
  assert_int_equal(gs_geom_validate(NULL, m, &l, &out), 0);
  layout_text(&out, text);
  assert_string_equal(text, "3g.20gb@0 2g.10gb@4 1g.5gb@6");
  /* 3g fixed at 0 leaves 1g, 1g, 2g no room: Example 2 needs the 3g at 4. */
  memset(&l, 0, sizeof(l));
  put(&l, prof(m, "3g.20gb"), 0);
  put(&l, prof(m, "1g.5gb"), -1);
  put(&l, prof(m, "1g.5gb"), -1);
  put(&l, prof(m, "2g.10gb"), -1);
  assert_int_equal(gs_geom_validate(NULL, m, &l, NULL), GS_E_INSUFFICIENT_RESOURCES);
}

static void test_validate_too_many_slots(void **state)
{
  const struct gs_geom_model *m = model("a100-40gb");
  struct gs_geom_layout l = {0};
  struct gs_err err = {0};
  (void)state;
  l.n = GS_GEOM_MAX_INSTANCES + 1;
  assert_int_equal(gs_geom_validate(&err, m, &l, NULL), GS_E_INVALID_ARGUMENT);
  assert_contains(err.msg, "at most 8 GPU instances");
}

/* Limits no placement lifts are named as such, not as "does not fit". */
static void assert_validate_fails(const char *key, const char *const *names, unsigned n,
                                  const char *part)
{
  const struct gs_geom_model *m = model(key);
  struct gs_geom_layout l = {0};
  struct gs_err err = {0};
  for (unsigned i = 0; i < n; i++)
    put(&l, prof(m, names[i]), -1);
  assert_int_equal(gs_geom_validate(&err, m, &l, NULL), GS_E_INSUFFICIENT_RESOURCES);
  assert_contains(err.msg, part);
  assert_int_equal(gs_geom_validate(NULL, m, &l, NULL), GS_E_INSUFFICIENT_RESOURCES);
}

static void test_validate_names_the_limit(void **state)
{
  static const char *const two_me[] = {"1g.5gb+me", "1g.5gb+me"};
  static const char *const eight_1g[] = {"19", "19", "19", "19", "19", "19", "19", "19"};
  static const char *const eight_slices[] = {"4g.20gb", "2g.10gb", "2g.10gb"};
  static const char *const me_pair_a30[] = {"1g.6gb+me", "2g.12gb+me"};
  static const char *const me_all[] = {"1g.24gb", "1g.24gb+me.all"};
  (void)state;
  assert_validate_fails("a100-40gb", two_me, 2, "has 2 1g.5gb+me instances but one a100-40gb holds at most 1");
  assert_validate_fails("a100-40gb", eight_1g, 8, "has 8 1g.5gb instances but one a100-40gb holds at most 7");
  assert_validate_fails("a100-40gb", eight_slices, 3, "needs 8 compute slices but one a100-40gb has 7");
  /* Unplaced instances: the message gives them no start. */
  assert_validate_fails("a30-24gb", me_pair_a30, 2,
                        "2g.12gb+me needs the GPU's one extra media-engine set, which 1g.6gb+me holds "
                        "(only one +me instance per GPU)");
  assert_validate_fails("rtx-pro-6000", me_all, 2,
                        "1g.24gb+me.all takes every media engine, but 1g.24gb already uses some");
}

/* ---- compute-instance profiles (reference §5.2) ---- */

static unsigned ci_profiles(const char *gi, struct gs_geom_ci_profile out[GS_GEOM_MAX_CI_PROFILES])
{
  const struct gs_geom_model *m = model("a100-40gb");
  return gs_geom_ci_profiles(m, prof(m, gi), out);
}

static void assert_ci_ids(const char *gi, const unsigned *ids, unsigned n)
{
  struct gs_geom_ci_profile cp[GS_GEOM_MAX_CI_PROFILES];
  assert_int_equal(ci_profiles(gi, cp), n);
  for (unsigned i = 0; i < n; i++) {
    assert_int_equal(cp[i].id, ids[i]);
    /* The default ("*") is the whole GI, and only it. */
    assert_int_equal(cp[i].is_default, i == n - 1);
    assert_int_equal(cp[i].is_default, cp[i].compute_slices == prof(model("a100-40gb"), gi)->compute_slices);
  }
}

static void test_ci_profiles_7g(void **state)
{
  static const char *const names[] = {"1c.7g.40gb", "2c.7g.40gb", "3c.7g.40gb", "4c.7g.40gb",
                                      "7g.40gb"};
  static const unsigned max[] = {7, 3, 2, 1, 1}, ids[] = {0, 1, 2, 3, 4};
  struct gs_geom_ci_profile cp[GS_GEOM_MAX_CI_PROFILES];
  (void)state;
  assert_int_equal(ci_profiles("7g.40gb", cp), 5);
  for (unsigned i = 0; i < 5; i++) {
    assert_int_equal(cp[i].id, ids[i]);
    assert_string_equal(cp[i].name, names[i]);
    assert_int_equal(cp[i].max_count, max[i]);
  }
  assert_ci_ids("7g.40gb", ids, 5);
  assert_int_equal(cp[0].sms, 14); /* 1c = 14 SMs on A100 */
  assert_int_equal(cp[4].sms, 98);
}

static void test_ci_profiles_smaller_gis(void **state)
{
  static const unsigned g4[] = {0, 1, 3}, g3[] = {0, 1, 2}, g2[] = {0, 1}, g1[] = {0};
  struct gs_geom_ci_profile cp[GS_GEOM_MAX_CI_PROFILES];
  (void)state;
  assert_ci_ids("4g.20gb", g4, 3);
  assert_ci_ids("3g.20gb", g3, 3);
  assert_ci_ids("2g.10gb", g2, 2);
  assert_ci_ids("1g.5gb", g1, 1);
  assert_ci_ids("1g.10gb", g1, 1);
  /* 3g's full CI reports placement 0:4 (§5.3); its 1c CIs have 14 SMs. */
  assert_int_equal(ci_profiles("3g.20gb", cp), 3);
  assert_string_equal(cp[2].name, "3g.20gb");
  assert_int_equal(cp[2].compute_slices, 3);
  assert_int_equal(cp[2].span, 4);
  assert_string_equal(cp[0].name, "1c.3g.20gb");
  assert_int_equal(cp[0].sms, 14);
  assert_int_equal(cp[0].max_count, 3);
  assert_int_equal(cp[1].max_count, 1);
}

static void test_ci_profile_find(void **state)
{
  const struct gs_geom_model *m = model("a100-40gb");
  struct gs_geom_ci_profile cp;
  (void)state;
  assert_int_equal(gs_geom_ci_profile_find(m, prof(m, "3g.20gb"), "1c.3g.20gb", &cp), 0);
  assert_int_equal(cp.id, 0);
  assert_int_equal(gs_geom_ci_profile_find(m, prof(m, "3g.20gb"), "MIG 2c.3g.20gb", &cp), 0);
  assert_int_equal(cp.id, 1);
  assert_int_equal(gs_geom_ci_profile_find(m, prof(m, "3g.20gb"), "2", &cp), 0);
  assert_string_equal(cp.name, "3g.20gb");
  assert_int_equal(gs_geom_ci_profile_find(m, prof(m, "4g.20gb"), "2", &cp), GS_E_NOT_FOUND);
  assert_int_equal(gs_geom_ci_profile_find(m, prof(m, "4g.20gb"), "3c.4g.20gb", &cp), GS_E_NOT_FOUND);
}

/* ---- lookups ---- */

static void test_model_find(void **state)
{
  const struct gs_geom_model *m = model("a100-40gb");
  (void)state;
  assert_string_equal(m->key, "a100-40gb");
  assert_ptr_equal(gs_geom_model_find("a100-sxm4-40gb"), m);        /* alias */
  {
    /* A short name several models start with is refused, with them (issue 17). */
    char hint[512];
    assert_null(gs_geom_model_find("a100"));
    assert_string_equal(gs_geom_model_hint("a100", hint, sizeof(hint)),
                        "short for several GPU models: a100-40gb, a100-80gb; name one");
    assert_null(gs_geom_model_find("h100"));
    assert_non_null(strstr(gs_geom_model_hint("H100", hint, sizeof(hint)), "h100-80gb, "));
    assert_null(gs_geom_model_find("gh200"));
    assert_non_null(strstr(gs_geom_model_hint("gh200", hint, sizeof(hint)), "h100-96gb"));
    assert_string_equal(gs_geom_model_hint("a30", hint, sizeof(hint)), "did you mean a30-24gb?");
    assert_string_equal(gs_geom_model_hint("x9", hint, sizeof(hint)), "`gpuslice models` lists them");
    assert_ptr_equal(gs_geom_model_find("a30"), model("a30-24gb")); /* one model: an exact alias */
  }
  assert_ptr_equal(gs_geom_model_find("NVIDIA A100-SXM4-40GB"), m); /* NVML name */
  assert_ptr_equal(gs_geom_model_find("A100-SXM4-40GB"), m);        /* without "NVIDIA " */
  assert_ptr_equal(gs_geom_model_find("0x20B010DE"), m);            /* mig-parted device filter */
  assert_ptr_equal(gs_geom_model_find("0x20b010de"), m);
  assert_ptr_equal(gs_geom_model_find("A100-40GB"), m);
  /* Sister SKUs the reference names beside a model (§3.1, §3.2, §3.4, §3.5),
   * also by their NVML name. */
  assert_ptr_equal(gs_geom_model_find("a800-40gb"), m);
  assert_ptr_equal(gs_geom_model_find("NVIDIA A800-SXM4-80GB"), model("a100-80gb"));
  assert_ptr_equal(gs_geom_model_find("NVIDIA A100-PCIE-40GB"), m);
  assert_ptr_equal(gs_geom_model_find("NVIDIA H800"), model("h100-80gb"));
  assert_ptr_equal(gs_geom_model_find("h800-pcie"), model("h100-pcie-80gb"));
  assert_ptr_equal(gs_geom_model_find("NVIDIA H800 NVL"), model("h100-nvl-94gb"));
  assert_ptr_equal(gs_geom_model_find("NVIDIA H200 NVL"), model("h200-141gb"));
  assert_null(gs_geom_model_find("a100-41gb"));
  assert_null(gs_geom_model_find(""));
  assert_null(gs_geom_model_find(NULL));
  assert_null(gs_geom_model_find("0x"));
}

static void test_gi_profile_find(void **state)
{
  const struct gs_geom_model *m = model("a100-40gb");
  const struct gs_geom_gi_profile *p = gs_geom_gi_profile_find(m, "1g.5gb");
  (void)state;
  assert_non_null(p);
  assert_int_equal(p->id, 19);
  assert_ptr_equal(gs_geom_gi_profile_find(m, "MIG 1g.5gb"), p);
  assert_ptr_equal(gs_geom_gi_profile_find(m, "19"), p);
  assert_ptr_equal(gs_geom_gi_profile_by_id(m, 19), p);
  assert_null(gs_geom_gi_profile_find(m, "1g.6gb"));
  assert_null(gs_geom_gi_profile_find(m, "18"));
  assert_null(gs_geom_gi_profile_find(m, "MIG "));
  assert_null(gs_geom_gi_profile_find(m, NULL));
  /* IDs are per model: 14 is 2g on A100, 1g on A30. */
  assert_string_equal(gs_geom_gi_profile_find(m, "14")->name, "2g.10gb");
  assert_string_equal(gs_geom_gi_profile_find(model("a30-24gb"), "14")->name, "1g.6gb");
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_a100_maximal_is_19),
    cmocka_unit_test(test_a100_valid_is_298),
    cmocka_unit_test(test_a100_all_shapes),
    cmocka_unit_test(test_a30_counts),
    cmocka_unit_test(test_every_8_slot_model_is_19),
    cmocka_unit_test(test_rtx_pro_6000_counts),
    cmocka_unit_test(test_a100_layouts_are_the_table),
    cmocka_unit_test(test_enumerated_layouts_validate),
    cmocka_unit_test(test_enumerate_stops_early),
    cmocka_unit_test(test_gi_id_a100_swapped),
    cmocka_unit_test(test_gi_id_h100_straight),
    cmocka_unit_test(test_gi_id_a30),
    cmocka_unit_test(test_gi_id_rtx_pro_6000),
    cmocka_unit_test(test_auto_order_a100),
    cmocka_unit_test(test_auto_order_4_slot),
    cmocka_unit_test(test_check_add_illegal_start),
    cmocka_unit_test(test_check_add_overlap_names_other),
    cmocka_unit_test(test_check_add_max_count),
    cmocka_unit_test(test_check_add_one_me_per_gpu),
    cmocka_unit_test(test_check_add_4g_3g_then_nothing),
    cmocka_unit_test(test_check_add_compute_exhausted),
    cmocka_unit_test(test_check_add_me_all),
    cmocka_unit_test(test_check_add_ignores_unplaced),
    cmocka_unit_test(test_remaining_after_3g_at_0),
    cmocka_unit_test(test_validate_example2),
    cmocka_unit_test(test_validate_3g_3g_1g_fails),
    cmocka_unit_test(test_validate_no_placement),
    cmocka_unit_test(test_validate_placed_overlap),
    cmocka_unit_test(test_validate_placed_illegal_start),
    cmocka_unit_test(test_validate_mixed),
    cmocka_unit_test(test_validate_too_many_slots),
    cmocka_unit_test(test_validate_names_the_limit),
    cmocka_unit_test(test_ci_profiles_7g),
    cmocka_unit_test(test_ci_profiles_smaller_gis),
    cmocka_unit_test(test_ci_profile_find),
    cmocka_unit_test(test_model_find),
    cmocka_unit_test(test_gi_profile_find),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
