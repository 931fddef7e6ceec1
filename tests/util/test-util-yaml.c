/* SPDX-License-Identifier: Apache-2.0 */
/* test-util-yaml.c: the shared strict-YAML helpers (src/util/yaml.c): loading,
 * kinds, typed scalars, maps with allowed keys, and the error texts with the
 * file, the line and the place that the layout, plan and serve parsers rely on. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <yaml.h>

#include "util/util.h"

enum op { OP_KINDS, OP_BOOL, OP_UINT, OP_NAME, OP_PAIRS, OP_LOOKUP };

/* One helper call on the value of key `path` (the root when NULL). */
struct run {
  enum op op;
  const char *path, *where, *allowed;
  unsigned max, u;
  size_t size;
  bool b, root_null;
  char name[64], seen[256];
};

static int record(const struct gs_yaml *y, const char *key, const yaml_node_t *v, const char *where,
                  void *arg)
{
  struct run *r = arg;
  size_t used = strlen(r->seen);
  snprintf(r->seen + used, sizeof(r->seen) - used, "%s=%s;", where,
           gs_yaml_scalar(v) ? gs_yaml_scalar(v) : gs_yaml_kind(v));
  return strcmp(key, "stop") == 0 ? gs_err_set(y->err, GS_E_IO, "stopped") : 0;
}

static int doc(const struct gs_yaml *y, const yaml_node_t *root)
{
  struct run *r = y->user;
  const yaml_node_t *n = r->path ? gs_yaml_lookup(y, root, r->path) : root;
  r->root_null = root == NULL;
  switch (r->op) {
  case OP_KINDS:
    return 0;
  case OP_BOOL:
    return gs_yaml_get_bool(y, n, "v", &r->b);
  case OP_UINT:
    return gs_yaml_get_uint(y, n, "v", r->max, &r->u);
  case OP_NAME:
    return gs_yaml_get_name(y, n, "v", r->name, r->size);
  case OP_PAIRS:
    return gs_yaml_each_pair(y, n, r->where, r->allowed, record, r);
  case OP_LOOKUP:
    snprintf(r->name, sizeof(r->name), "%s", n ? gs_yaml_scalar(n) : "(none)");
    return 0;
  }
  return 0;
}

static int run(struct run *r, const char *text, struct gs_err *err)
{
  return gs_yaml_load(err, "t.yaml", text, strlen(text), doc, r);
}

static void ok(struct run *r, const char *text)
{
  struct gs_err err = {0};
  if (run(r, text, &err) != 0)
    fail_msg("'%s': unexpected error '%s'", text, err.msg);
}

static void refused(struct run *r, const char *text, const char *msg)
{
  struct gs_err err = {0};
  assert_int_equal(run(r, text, &err), GS_E_INVALID_ARGUMENT);
  assert_int_equal(err.code, GS_E_INVALID_ARGUMENT);
  if (strcmp(err.msg, msg) != 0)
    fail_msg("'%s': expected \"%s\", got \"%s\"", text, msg, err.msg);
}

/* ---- documents and errors ---- */

static void load_calls_back_or_names_the_bad_line(void **state)
{
  struct run r = {.op = OP_KINDS};
  struct gs_err err = {0};
  (void)state;
  ok(&r, "");
  assert_true(r.root_null);
  ok(&r, "a: 1\n");
  assert_false(r.root_null);
  assert_int_equal(run(&r, "a: 1\nb: [\n", &err), GS_E_INVALID_ARGUMENT);
  assert_non_null(strstr(err.msg, "t.yaml:3: not valid YAML: "));
  assert_int_equal(run(&r, "a: 1\nb: c: d\n", &err), GS_E_INVALID_ARGUMENT);
  assert_non_null(strstr(err.msg, "t.yaml:2: not valid YAML: "));
}

static int bad_at(const struct gs_yaml *y, const yaml_node_t *root)
{
  const yaml_node_t *b = gs_yaml_lookup(y, root, "b");
  const char *where = y->user;
  return gs_yaml_bad(y, b, where, "%s %d", "wrong", 7);
}

static void bad_names_file_line_and_place(void **state)
{
  struct gs_err err = {0};
  const char *text = "a: 1\n\nb:\n  - x\n";
  (void)state;
  assert_int_equal(gs_yaml_load(&err, "f.yaml", text, strlen(text), bad_at, "cfg.b"),
                   GS_E_INVALID_ARGUMENT);
  assert_string_equal(err.msg, "f.yaml:4: cfg.b: wrong 7"); /* a block list starts at its item */
  gs_yaml_load(&err, "f.yaml", text, strlen(text), bad_at, "");
  assert_string_equal(err.msg, "f.yaml:4: wrong 7");
  gs_yaml_load(&err, "f.yaml", text, strlen(text), bad_at, NULL);
  assert_string_equal(err.msg, "f.yaml:4: wrong 7");
  gs_yaml_load(&err, "f.yaml", "a: 1\n", 5, bad_at, "b"); /* no node: line 1 */
  assert_string_equal(err.msg, "f.yaml:1: b: wrong 7");
}

static int kinds(const struct gs_yaml *y, const yaml_node_t *root)
{
  const yaml_node_t *s = gs_yaml_lookup(y, root, "s"), *l = gs_yaml_lookup(y, root, "l"),
                    *m = gs_yaml_lookup(y, root, "m");
  assert_string_equal(gs_yaml_kind(s), "a value");
  assert_string_equal(gs_yaml_kind(l), "a list");
  assert_string_equal(gs_yaml_kind(m), "a map");
  assert_string_equal(gs_yaml_kind(NULL), "nothing");
  assert_string_equal(gs_yaml_scalar(s), "x");
  assert_null(gs_yaml_scalar(l));
  assert_null(gs_yaml_scalar(m));
  assert_null(gs_yaml_scalar(NULL));
  assert_true(gs_yaml_is_list(l) && !gs_yaml_is_list(m) && !gs_yaml_is_list(NULL));
  assert_true(gs_yaml_is_map(m) && !gs_yaml_is_map(s) && !gs_yaml_is_map(NULL));
  assert_int_equal(gs_yaml_seq_len(l), 3);
  assert_int_equal(gs_yaml_seq_len(m), 0);
  assert_int_equal(gs_yaml_seq_len(NULL), 0);
  assert_int_equal(gs_yaml_map_len(m), 2);
  assert_int_equal(gs_yaml_map_len(l), 0);
  assert_int_equal(gs_yaml_map_len(root), 3);
  assert_string_equal(gs_yaml_scalar(gs_yaml_seq_item(y, l, 2)), "c");
  assert_null(gs_yaml_seq_item(y, l, 3));
  assert_null(gs_yaml_seq_item(y, m, 0));
  assert_int_equal(gs_yaml_line(gs_yaml_seq_item(y, l, 1)), 4);
  assert_int_equal(gs_yaml_line(NULL), 1);
  assert_null(gs_yaml_lookup(y, l, "a"));
  assert_null(gs_yaml_lookup(y, root, "nope"));
  return 0;
}

static void kinds_lists_and_maps(void **state)
{
  struct gs_err err = {0};
  const char *text = "s: x\nl:\n  - a\n  - b\n  - c\nm: {p: 1, q: 2}\n";
  (void)state;
  assert_int_equal(gs_yaml_load(&err, "t.yaml", text, strlen(text), kinds, NULL), 0);
}

/* ---- typed scalars ---- */

static void bool_takes_the_yaml_spellings(void **state)
{
  struct run r = {.op = OP_BOOL, .path = "k"};
  static const char *const yes[] = {"true", "True", "yes"}, *const no[] = {"false", "False", "no"};
  char text[32];
  (void)state;
  for (size_t i = 0; i < GS_NITEMS(yes); i++) {
    snprintf(text, sizeof(text), "k: %s\n", yes[i]);
    r.b = false;
    ok(&r, text);
    assert_true(r.b);
    snprintf(text, sizeof(text), "k: %s\n", no[i]);
    ok(&r, text);
    assert_false(r.b);
  }
  refused(&r, "k: maybe\n", "t.yaml:1: v: expected true or false, found 'maybe'");
  refused(&r, "k: [true]\n", "t.yaml:1: v: expected true or false, found a list");
  refused(&r, "j: 1\n", "t.yaml:1: v: expected true or false, found nothing");
}

static void uint_is_decimal_within_its_range(void **state)
{
  struct run r = {.op = OP_UINT, .path = "k", .max = 64};
  (void)state;
  ok(&r, "k: 0\n");
  assert_int_equal(r.u, 0);
  ok(&r, "k: 64\n");
  assert_int_equal(r.u, 64);
  refused(&r, "\nk: 65\n", "t.yaml:2: v: expected a number from 0 to 64, found '65'");
  refused(&r, "k: -1\n", "t.yaml:1: v: expected a number from 0 to 64, found -1");
  refused(&r, "k: +1\n", "t.yaml:1: v: expected a number from 0 to 64, found +1");
  refused(&r, "k: 1x\n", "t.yaml:1: v: expected a number from 0 to 64, found '1x'");
  refused(&r, "k: 0x10\n", "t.yaml:1: v: expected a number from 0 to 64, found '0x10'");
  refused(&r, "k: \"\"\n", "t.yaml:1: v: expected a number from 0 to 64, found an empty value");
  refused(&r, "k: {a: 1}\n", "t.yaml:1: v: expected a number from 0 to 64, found a map");
  r.max = UINT32_MAX;
  ok(&r, "k: 4294967295\n");
  assert_int_equal(r.u, UINT32_MAX);
  refused(&r, "k: 99999999999999999999999\n",
          "t.yaml:1: v: expected a number from 0 to 4294967295, found '99999999999999999999999'");
}

static void name_is_non_empty_and_fits(void **state)
{
  struct run r = {.op = OP_NAME, .path = "k", .size = 4};
  (void)state;
  ok(&r, "k: abc\n");
  assert_string_equal(r.name, "abc");
  refused(&r, "k: abcd\n", "t.yaml:1: v: 'abcd...' is too long (at most 3 characters)");
  refused(&r, "k: \"\"\n", "t.yaml:1: v: expected a name, found an empty value");
  refused(&r, "k:\n  - a\n", "t.yaml:2: v: expected a name, found a list");
  assert_string_equal(r.name, "abc"); /* untouched on error */
}

/* ---- maps ---- */

static void pairs_visit_in_order_with_the_path(void **state)
{
  struct run r = {.op = OP_PAIRS, .path = "top", .where = "cfg", .allowed = "a, b, cd"};
  (void)state;
  ok(&r, "top:\n  b: 1\n  a: [x]\n  cd: {y: 1}\n");
  assert_string_equal(r.seen, "cfg.b=1;cfg.a=a list;cfg.cd=a map;");
  r.seen[0] = 0;
  r.where = "";
  r.allowed = NULL; /* any key */
  ok(&r, "top: {zz: 1, \"\": 2}\n");
  assert_string_equal(r.seen, "zz=1;=2;");
  r.seen[0] = 0;
  r.where = NULL;
  ok(&r, "top: {}\n");
  assert_string_equal(r.seen, "");
}

static void pairs_stop_at_the_first_failure(void **state)
{
  struct run r = {.op = OP_PAIRS, .path = "top", .where = "w"};
  struct gs_err err = {0};
  (void)state;
  assert_int_equal(run(&r, "top: {a: 1, stop: 2, c: 3}\n", &err), GS_E_IO);
  assert_string_equal(r.seen, "w.a=1;w.stop=2;");
}

static void pairs_refuse_wrong_kinds_and_keys(void **state)
{
  struct run r = {.op = OP_PAIRS, .path = "top", .where = "cfg", .allowed = "a, b, cd"};
  (void)state;
  refused(&r, "top: [a]\n", "t.yaml:1: cfg: expected a map, found a list");
  refused(&r, "top: 1\n", "t.yaml:1: cfg: expected a map, found a value");
  refused(&r, "x: 1\n", "t.yaml:1: cfg: expected a map, found nothing");
  refused(&r, "top:\n  a: 1\n  ? [k]\n  : 2\n", "t.yaml:3: cfg: expected a name as key, found a list");
  refused(&r, "top:\n  a: 1\n  b: 2\n  a: 3\n", "t.yaml:4: cfg: 'a' appears twice");
  refused(&r, "top:\n  a: 1\n  e: 2\n", "t.yaml:3: cfg: unexpected key 'e' (allowed: a, b, cd)");
  /* exact names only: no prefixes, suffixes, parts or the empty name */
  refused(&r, "top: {c: 1}\n", "t.yaml:1: cfg: unexpected key 'c' (allowed: a, b, cd)");
  refused(&r, "top: {d: 1}\n", "t.yaml:1: cfg: unexpected key 'd' (allowed: a, b, cd)");
  refused(&r, "top: {\"b, cd\": 1}\n", "t.yaml:1: cfg: unexpected key 'b, cd' (allowed: a, b, cd)");
  refused(&r, "top: {\"\": 1}\n", "t.yaml:1: cfg: unexpected key '' (allowed: a, b, cd)");
  refused(&r, "top: {\" a\": 1}\n", "t.yaml:1: cfg: unexpected key ' a' (allowed: a, b, cd)");
  r.where = "";
  refused(&r, "top: {e: 1}\n", "t.yaml:1: unexpected key 'e' (allowed: a, b, cd)");
  /* the first pair that fails is the one named */
  refused(&r, "top: {e: 1, e: 2}\n", "t.yaml:1: unexpected key 'e' (allowed: a, b, cd)");
  refused(&r, "top: {a: 1, a: 2}\n", "t.yaml:1: 'a' appears twice");
}

static void lookup_finds_the_first_value(void **state)
{
  struct run r = {.op = OP_LOOKUP, .path = "b"};
  (void)state;
  ok(&r, "a: 1\nb: two\n");
  assert_string_equal(r.name, "two");
  ok(&r, "a: 1\n");
  assert_string_equal(r.name, "(none)");
  ok(&r, "- b\n");
  assert_string_equal(r.name, "(none)");
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(load_calls_back_or_names_the_bad_line),
      cmocka_unit_test(bad_names_file_line_and_place),
      cmocka_unit_test(kinds_lists_and_maps),
      cmocka_unit_test(bool_takes_the_yaml_spellings),
      cmocka_unit_test(uint_is_decimal_within_its_range),
      cmocka_unit_test(name_is_non_empty_and_fits),
      cmocka_unit_test(pairs_visit_in_order_with_the_path),
      cmocka_unit_test(pairs_stop_at_the_first_failure),
      cmocka_unit_test(pairs_refuse_wrong_kinds_and_keys),
      cmocka_unit_test(lookup_finds_the_first_value),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
