/* SPDX-License-Identifier: Apache-2.0 */
/* test-emu-state-parse.c: the emulator state file's text form. A rich state
 * (A100-40GB with seven 1g GIs and their CIs, an A30, processes) survives
 * dump and parse field by field; then one corrupt text per validation rule,
 * each refused with GS_E_CORRUPT_STATE and a message naming the file and the
 * JSON path of the bad field. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/emu_state.h"
#include "emu-state-eq.h"

#define ORIGIN "test.json"
#define TEXT_SIZE 16384

static const struct gs_geom_model *model(const char *key)
{
  const struct gs_geom_model *m = gs_geom_model_find(key);
  assert_non_null(m);
  return m;
}

/* Copies in to out, replacing each "{gi:S:N}" by the A100-40GB's GPU-instance
 * id of placement S:N, so the texts below do not hard-code the driver's
 * (swapped) id orientation. */
static void expand(const char *in, char *out, size_t size)
{
  size_t o = 0;
  unsigned s, n;
  int used;

  while (*in && o + 1 < size) {
    if (sscanf(in, "{gi:%u:%u}%n", &s, &n, &used) == 2 && used > 0) {
      o += (size_t)snprintf(out + o, size - o, "%u", gs_geom_gi_id(model("a100-40gb"), s, n));
      in += used;
    } else {
      out[o++] = *in++;
    }
  }
  assert_true(o + 1 < size);
  out[o] = '\0';
}

/* A valid file with one of everything the rules below break. */
static const char base[] =
    "{\"format\":\"gpuslice-emu-state\",\"version\":1,\"enforce_root\":false,\"boots\":0,\n"
    "\"gpus\":[{\"model\":\"a100-40gb\",\"mig_current\":true,\"mig_pending\":true,"
    "\"reset_blocked\":false,\n\"gpu_instances\":[\n"
    "{\"id\":{gi:0:4},\"profile_id\":9,\"start\":0,\"compute_instances\":["
    "{\"id\":0,\"profile_id\":0,\"start\":0,\"span\":1},"
    "{\"id\":1,\"profile_id\":0,\"start\":1,\"span\":1}]},\n"
    "{\"id\":{gi:4:2},\"profile_id\":14,\"start\":4,\"compute_instances\":["
    "{\"id\":0,\"profile_id\":1,\"start\":0,\"span\":2}]},\n"
    "{\"id\":{gi:6:1},\"profile_id\":19,\"start\":6,\"compute_instances\":[]}]},\n"
    "{\"model\":\"a30-24gb\",\"mig_current\":false,\"mig_pending\":false,"
    "\"reset_blocked\":false,\"gpu_instances\":[]}],\n"
    "\"processes\":[{\"pid\":1234,\"name\":\"python\",\"gpu\":0,\"gi\":{gi:0:4},\"ci\":1,"
    "\"used_mib\":100},\n"
    "{\"pid\":99,\"name\":\"x\",\"gpu\":1,\"gi\":-1,\"ci\":-1,\"used_mib\":0}]}\n";

static struct gs__emu_state *new_state(void)
{
  struct gs__emu_state *st = malloc(sizeof(*st));
  assert_non_null(st);
  return st;
}

/* base with its one `from` replaced by `to` (both expanded). */
static void variant(const char *from, const char *to, char *out, size_t size)
{
  char b[TEXT_SIZE], f[512], t[TEXT_SIZE];
  const char *at;

  expand(base, b, sizeof(b));
  expand(from, f, sizeof(f));
  expand(to, t, sizeof(t));
  at = strstr(b, f);
  assert_non_null(at);
  assert_null(strstr(at + 1, f)); /* the table must name a unique spot */
  assert_true(snprintf(out, size, "%.*s%s%s", (int)(at - b), b, t, at + strlen(f)) < (int)size);
}

/* Parses text expecting the corrupt-state code and `want` in the message.
 * The state is static: a failed assertion jumps out without freeing. */
static void expect_corrupt(const char *text, size_t len, const char *want)
{
  static struct gs__emu_state st_;
  struct gs__emu_state *st = &st_;
  struct gs_err err = {0};
  int rc = gs__emu_state_parse(&err, ORIGIN, text, len, st);

  if (rc != GS_E_CORRUPT_STATE || strstr(err.msg, want) == NULL ||
      strncmp(err.msg, ORIGIN ": ", strlen(ORIGIN) + 2) != 0)
    fail_msg("want CORRUPT_STATE with \"%s\", got %s: %s", want, gs_code_name(rc), err.msg);
  print_message("  %s\n", err.msg);
  assert_int_equal(err.code, GS_E_CORRUPT_STATE);
  assert_int_equal(st->ngpu, 0); /* a refused state is left empty */
  assert_int_equal(st->nproc, 0);
}

/* ---- valid texts ---- */

static void base_text_parses(void **state)
{
  struct gs__emu_state *st = new_state();
  struct gs_err err = {0};
  char text[TEXT_SIZE];
  (void)state;
  expand(base, text, sizeof(text));
  assert_int_equal(gs__emu_state_parse(&err, ORIGIN, text, strlen(text), st), 0);
  assert_int_equal(st->ngpu, 2);
  assert_ptr_equal(st->gpu[0].model, model("a100-40gb"));
  assert_ptr_equal(st->gpu[1].model, model("a30-24gb"));
  assert_int_equal(st->gpu[0].ngi, 3);
  assert_int_equal(st->gpu[0].gi[0].nci, 2);
  assert_int_equal(st->nproc, 2);
  assert_string_equal(st->proc[0].name, "python");
  assert_int_equal(st->proc[1].gi, -1);
  free(st);
}

/* A rich machine built in memory, as emu.c would build it. */
static void build_rich(struct gs__emu_state *st)
{
  const struct gs_geom_model *models[] = {model("a100-40gb"), model("a30-24gb"),
                                          model("a100-40gb")};
  const struct gs_geom_model *a100 = models[0], *a30 = models[1];
  const struct gs_geom_gi_profile *g1 = gs_geom_gi_profile_by_id(a100, 19);
  const struct gs_geom_gi_profile *a30_2g = gs_geom_gi_profile_by_id(a30, 5);
  const struct gs_geom_gi_profile *a30_1g = gs_geom_gi_profile_by_id(a30, 14);
  struct gs__emu_gpu *g;

  assert_non_null(g1);
  assert_non_null(a30_2g);
  assert_non_null(a30_1g);
  gs__emu_state_init(st, models, 3);
  st->enforce_root = true;
  st->boots = 3;
  g = &st->gpu[0]; /* seven 1g.5gb, each with its one CI */
  g->mig_current = g->mig_pending = true;
  for (unsigned s = 0; s < 7; s++) {
    struct gs__emu_gi *gi = &g->gi[g->ngi++];
    gi->profile = g1;
    gi->start = s;
    gi->id = gs_geom_gi_id(a100, s, g1->span);
    gi->nci = 1;
    gi->ci[0] = (struct gs__emu_ci){.id = 0, .profile_id = 0, .start = 0, .span = 1};
  }
  for (unsigned i = 1; i < g->ngi; i++) /* stored states keep GIs in id order */
    for (unsigned j = i; j > 0 && g->gi[j].id < g->gi[j - 1].id; j--) {
      struct gs__emu_gi t = g->gi[j];
      g->gi[j] = g->gi[j - 1];
      g->gi[j - 1] = t;
    }
  g = &st->gpu[1]; /* A30: a 2g.12gb split into two 1c CIs, and two 1g.6gb */
  g->mig_current = g->mig_pending = true;
  g->gi[0] = (struct gs__emu_gi){.id = gs_geom_gi_id(a30, 0, a30_2g->span), .profile = a30_2g,
                                 .start = 0, .nci = 2};
  g->gi[0].ci[0] = (struct gs__emu_ci){.id = 0, .profile_id = 0, .start = 0, .span = 1};
  g->gi[0].ci[1] = (struct gs__emu_ci){.id = 1, .profile_id = 0, .start = 1, .span = 1};
  g->gi[1] = (struct gs__emu_gi){.id = gs_geom_gi_id(a30, 2, 1), .profile = a30_1g, .start = 2};
  g->gi[2] = (struct gs__emu_gi){.id = gs_geom_gi_id(a30, 3, 1), .profile = a30_1g, .start = 3};
  g->ngi = 3;
  g = &st->gpu[2]; /* MIG pending behind a blocked reset */
  g->mig_pending = true;
  g->reset_blocked = true;
  st->proc[0] = (struct gs_proc_info){.pid = 4242, .name = "python3", .gpu = 0,
                                      .gi = (int)st->gpu[0].gi[3].id, .ci = 0, .used_mib = 512};
  st->proc[1] = (struct gs_proc_info){.pid = 7, .name = "tritonserver", .gpu = 1,
                                      .gi = (int)st->gpu[1].gi[0].id, .ci = 1, .used_mib = 100};
  st->proc[2] = (struct gs_proc_info){.pid = 4294967295u, .name = "n\303\251e \"q\"\\", .gpu = 2,
                                      .gi = -1, .ci = -1, .used_mib = 4294967295u};
  st->nproc = 3;
}

static void rich_state_round_trips(void **state)
{
  struct gs__emu_state *st = new_state(), *back = new_state();
  struct gs_err err = {0};
  char *text, *again, why[128] = "";
  (void)state;
  build_rich(st);
  assert_int_equal(gs__emu_state_dump(&err, st, &text), 0);
  if (gs__emu_state_parse(&err, ORIGIN, text, strlen(text), back) != 0)
    fail_msg("%s\n%s", err.msg, text);
  if (!gs_test_emu_state_eq(st, back, why, sizeof(why)))
    fail_msg("round trip differs: %s", why);
  assert_int_equal(gs__emu_state_dump(&err, back, &again), 0);
  assert_string_equal(text, again); /* the text form is stable too */
  free(text);
  free(again);
  free(st);
  free(back);
}

static void fresh_state_round_trips(void **state)
{
  const struct gs_geom_model *models[] = {model("a30-24gb")};
  struct gs__emu_state *st = new_state(), *back = new_state();
  char *text, why[128] = "";
  (void)state;
  gs__emu_state_init(st, models, 1);
  assert_int_equal(gs__emu_state_dump(NULL, st, &text), 0);
  assert_int_equal(gs__emu_state_parse(NULL, ORIGIN, text, strlen(text), back), 0);
  if (!gs_test_emu_state_eq(st, back, why, sizeof(why)))
    fail_msg("round trip differs: %s", why);
  free(text);
  free(st);
  free(back);
}

static void gpu_instances_are_sorted_by_id(void **state)
{
  static const char unsorted[] =
      "{\"format\":\"gpuslice-emu-state\",\"version\":1,\"enforce_root\":false,\"boots\":0,\n"
      "\"gpus\":[{\"model\":\"a100-40gb\",\"mig_current\":true,\"mig_pending\":true,"
      "\"reset_blocked\":false,\"gpu_instances\":[\n"
      "{\"id\":{gi:6:1},\"profile_id\":19,\"start\":6,\"compute_instances\":["
      "{\"id\":3,\"profile_id\":0,\"start\":0,\"span\":1}]},\n"
      "{\"id\":{gi:0:4},\"profile_id\":9,\"start\":0,\"compute_instances\":[]},\n"
      "{\"id\":{gi:4:1},\"profile_id\":19,\"start\":4,\"compute_instances\":[]}]}],\n"
      "\"processes\":[]}\n";
  struct gs__emu_state *st = new_state();
  const struct gs__emu_gpu *g = &st->gpu[0];
  char text[TEXT_SIZE];
  (void)state;
  expand(unsorted, text, sizeof(text));
  assert_int_equal(gs__emu_state_parse(NULL, ORIGIN, text, strlen(text), st), 0);
  assert_int_equal(g->ngi, 3);
  for (unsigned i = 1; i < g->ngi; i++)
    assert_true(g->gi[i - 1].id < g->gi[i].id);
  for (unsigned i = 0; i < g->ngi; i++) /* each GI kept its own CIs */
    assert_int_equal(g->gi[i].nci, g->gi[i].start == 6 ? 1 : 0);
  free(st);
}

static void name_of_63_bytes_is_accepted(void **state)
{
  struct gs__emu_state *st = new_state();
  char text[TEXT_SIZE], to[128];
  (void)state;
  snprintf(to, sizeof(to), "\"name\":\"%063d\"", 0);
  variant("\"name\":\"python\"", to, text, sizeof(text));
  assert_int_equal(gs__emu_state_parse(NULL, ORIGIN, text, strlen(text), st), 0);
  assert_int_equal(strlen(st->proc[0].name), 63);
  free(st);
}

/* ---- corrupt texts: one per rule ---- */

struct corrupt_case {
  const char *from, *to; /* from == NULL: `to` is the whole text */
  const char *want;      /* a substring of the message: the field's path and the defect */
};

static const struct corrupt_case cases[] = {
    /* not JSON, or not ours */
    {NULL, "", "not valid JSON"},
    {NULL, "{\"format\":\"gpuslice-emu-state\"", "not valid JSON"},
    {"\"boots\":0,", "\"boots\":0,,", "not valid JSON"},
    {"\"boots\":0", "\"boots\":0,\"boots\":1", "not valid JSON"}, /* duplicate key */
    {"\"boots\":0", "\"boots\":123456789012345678901234567890", "not valid JSON"},
    {NULL, "[]", "top level: must be an object"},
    {NULL, "{\"a\":1}", "format: missing"},
    {"\"format\":\"gpuslice-emu-state\"", "\"format\":\"mig-parted\"",
     "format: is not \"gpuslice-emu-state\""},
    {"\"format\":\"gpuslice-emu-state\"", "\"format\":7", "format: is not"},
    {"\"version\":1,", "", "version: missing"},
    {"\"version\":1", "\"version\":3", "version: 3 is not supported"},
    {"\"version\":1", "\"version\":\"1\"", "version: must be an integer, not a string"},
    /* keys */
    {"\"boots\":0", "\"boots\":0,\"extra\":1", "extra: unknown key"},
    {"\"boots\":0", "\"boots\":0,\"\\u001b[2J\\n\":1", "?[2J?: unknown key"}, /* no escapes out */
    {"\"boots\":0,", "", "boots: missing"},
    {"\"reset_blocked\":false,\n", "", "gpus[0].reset_blocked: missing"},
    {"\"profile_id\":14,", "\"profile_id\":14,\"color\":\"red\",",
     "gpus[0].gpu_instances[1].color: unknown key"},
    {"{\"id\":0,\"profile_id\":1,", "{\"profile_id\":1,",
     "gpus[0].gpu_instances[1].compute_instances[0].id: missing"},
    {"\"used_mib\":100", "\"used_mib\":100,\"uid\":0", "processes[0].uid: unknown key"},
    /* types and ranges */
    {"\"enforce_root\":false", "\"enforce_root\":0", "enforce_root: must be true or false"},
    {"\"boots\":0", "\"boots\":-1", "boots: -1 is out of range"},
    {"\"boots\":0", "\"boots\":4294967296", "boots: 4294967296 is out of range"},
    {"\"boots\":0", "\"boots\":1.5", "boots: must be an integer, not a non-integer number"},
    {"\"boots\":0", "\"boots\":1e3", "boots: must be an integer"},
    {"\"boots\":0", "\"boots\":null", "boots: must be an integer, not null"},
    {NULL, "{\"format\":\"gpuslice-emu-state\",\"version\":1,\"enforce_root\":false,\"boots\":0,"
           "\"gpus\":{},\"processes\":[]}", "gpus: must be an array, not an object"},
    {"\"mig_pending\":true", "\"mig_pending\":\"yes\"", "gpus[0].mig_pending: must be true or false"},
    {"\"model\":\"a30-24gb\"", "\"model\":30", "gpus[1].model: must be a string"},
    {"\"start\":4,", "\"start\":-4,", "gpus[0].gpu_instances[1].start: -4 is out of range"},
    {"\"pid\":1234", "\"pid\":\"1234\"", "processes[0].pid: must be an integer"},
    {"\"pid\":99", "\"pid\":-99", "processes[1].pid: -99 is out of range"},
    {"\"gi\":-1", "\"gi\":-2", "processes[1].gi: -2 is out of range"},
    {"\"used_mib\":0", "\"used_mib\":0.0", "processes[1].used_mib: must be an integer"},
    {"\"processes\":[", "\"processes\":[7,", "processes[0]: must be an object, not an integer"},
    {"\"gpus\":[", "\"gpus\":[[],", "gpus[0]: must be an object, not an array"},
    {"\"compute_instances\":[]", "\"compute_instances\":{}",
     "gpus[0].gpu_instances[2].compute_instances: must be an array, not an object"},
    /* GPUs and models */
    {NULL, "{\"format\":\"gpuslice-emu-state\",\"version\":1,\"enforce_root\":false,\"boots\":0,"
           "\"gpus\":[],\"processes\":[]}", "gpus: lists no GPU"},
    {"\"model\":\"a30-24gb\"", "\"model\":\"z80\"", "gpus[1].model: unknown GPU model \"z80\""},
    /* GPU instances */
    {"\"profile_id\":9,", "\"profile_id\":77,",
     "gpus[0].gpu_instances[0].profile_id: a100-40gb has no GPU-instance profile 77"},
    {"\"profile_id\":9,\"start\":0", "\"profile_id\":9,\"start\":2",
     "gpus[0].gpu_instances[0].start: 2 is not a legal start for 3g.20gb"},
    {"\"profile_id\":9,\"start\":0", "\"profile_id\":9,\"start\":40",
     "gpus[0].gpu_instances[0].start: 40 is not a legal start"},
    {"{\"id\":{gi:4:2},", "{\"id\":0,", "gpus[0].gpu_instances[1].id: 0 is not the id of 2g.10gb"},
    {"{\"id\":{gi:6:1},\"profile_id\":19,\"start\":6,\"compute_instances\":[]}",
     "{\"id\":{gi:6:1},\"profile_id\":19,\"start\":6,\"compute_instances\":[]},"
     "{\"id\":{gi:6:1},\"profile_id\":19,\"start\":6,\"compute_instances\":[]}",
     "gpus[0].gpu_instances[3].id: duplicate GPU instance id"},
    /* 1g.10gb at 6:2 overlaps the 1g.5gb at 6, under different ids */
    {"{\"id\":{gi:4:2},\"profile_id\":14,\"start\":4,\"compute_instances\":["
     "{\"id\":0,\"profile_id\":1,\"start\":0,\"span\":2}]}",
     "{\"id\":{gi:6:2},\"profile_id\":15,\"start\":6,\"compute_instances\":[]}",
     "gpus[0].gpu_instances: the GPU instances cannot coexist"},
    {"\"mig_current\":true", "\"mig_current\":false",
     "gpus[0].gpu_instances: MIG mode is off (mig_current is false) but 3"},
    /* compute instances */
    {"{\"id\":1,\"profile_id\":0,", "{\"id\":1,\"profile_id\":4,",
     "gpus[0].gpu_instances[0].compute_instances[1].profile_id: 4 is not a compute-instance "
     "profile of 3g.20gb"},
    {"{\"id\":0,\"profile_id\":1,\"start\":0,", "{\"id\":0,\"profile_id\":1,\"start\":1,",
     "gpus[0].gpu_instances[1].compute_instances[0].start: 1 is not a legal start for 2g.10gb"},
    {"{\"id\":0,\"profile_id\":1,\"start\":0,", "{\"id\":0,\"profile_id\":1,\"start\":99,",
     "gpus[0].gpu_instances[1].compute_instances[0].start: 99 is not a legal start"},
    {"\"start\":1,\"span\":1}", "\"start\":1,\"span\":2}",
     "gpus[0].gpu_instances[0].compute_instances[1].span: 2 does not match 1c.3g.20gb"},
    {"{\"id\":1,\"profile_id\":0,\"start\":1,", "{\"id\":1,\"profile_id\":0,\"start\":0,",
     "gpus[0].gpu_instances[0].compute_instances[1].start: 1c.3g.20gb at 0:1 overlaps"},
    {"{\"id\":1,\"profile_id\":0,", "{\"id\":0,\"profile_id\":0,",
     "gpus[0].gpu_instances[0].compute_instances[1].id: duplicate compute instance id 0"},
    /* processes */
    {"\"gpu\":1,", "\"gpu\":2,", "processes[1].gpu: GPU 2 does not exist"},
    {"\"gi\":{gi:0:4},\"ci\":1", "\"gi\":0,\"ci\":1", "processes[0].gi: GPU 0 has no GPU instance 0"},
    {"\"ci\":1,\"used_mib\":100", "\"ci\":5,\"used_mib\":100",
     "processes[0].ci: GPU instance"},
    {"\"gi\":-1,\"ci\":-1", "\"gi\":-1,\"ci\":0", "processes[1].ci: gi and ci must both be -1"},
    {"\"ci\":1,\"used_mib\":100", "\"ci\":-1,\"used_mib\":100",
     "processes[0].ci: gi and ci must both be -1"},
    {"\"name\":\"python\"", "\"name\":\"0123456789012345678901234567890123456789012345678901234567890123\"",
     "processes[0].name: is 64 bytes long; at most 63"},
    {"\"name\":\"x\"", "\"name\":\"\\u0000\"", "not valid JSON"},
};

static void each_corrupt_text_is_refused(void **state)
{
  char text[TEXT_SIZE];
  (void)state;
  for (size_t i = 0; i < GS_NITEMS(cases); i++) {
    const struct corrupt_case *c = &cases[i];
    if (c->from == NULL)
      snprintf(text, sizeof(text), "%s", c->to);
    else
      variant(c->from, c->to, text, sizeof(text));
    expect_corrupt(text, strlen(text), c->want);
  }
}

/* `count` copies of "{}" in an array, for the size limits. */
static void many(char *out, size_t size, const char *before, unsigned count, const char *after)
{
  size_t o = (size_t)snprintf(out, size, "%s", before);
  for (unsigned i = 0; i < count; i++)
    o += (size_t)snprintf(out + o, size - o, "%s{}", i ? "," : "");
  snprintf(out + o, size - o, "%s", after);
}

static void too_many_gpus(void **state)
{
  char to[TEXT_SIZE], text[TEXT_SIZE];
  (void)state;
  many(to, sizeof(to), "{\"format\":\"gpuslice-emu-state\",\"version\":1,\"enforce_root\":false,"
       "\"boots\":0,\"gpus\":[", GS_BACKEND_MAX_GPUS + 1, "],\"processes\":[]}");
  snprintf(text, sizeof(text), "%s", to);
  expect_corrupt(text, strlen(text), "gpus: has 65 entries; at most 64");
}

static void too_many_gpu_instances(void **state)
{
  char to[TEXT_SIZE], text[TEXT_SIZE];
  (void)state;
  many(to, sizeof(to), "\"gpu_instances\":[", GS_GEOM_MAX_INSTANCES + 1, "]}],");
  variant("\"gpu_instances\":[]}],", to, text, sizeof(text));
  expect_corrupt(text, strlen(text), "gpus[1].gpu_instances: has 9 entries; at most 8");
}

static void too_many_compute_instances(void **state)
{
  char to[TEXT_SIZE], text[TEXT_SIZE];
  (void)state;
  many(to, sizeof(to), "\"compute_instances\":[", GS_GEOM_MAX_INSTANCES + 1, "]");
  variant("\"compute_instances\":[]", to, text, sizeof(text));
  expect_corrupt(text, strlen(text),
                 "gpus[0].gpu_instances[2].compute_instances: has 9 entries; at most 8");
}

static void too_many_processes(void **state)
{
  char text[TEXT_SIZE], b[TEXT_SIZE];
  (void)state;
  expand(base, b, sizeof(b));
  *strstr(b, "\"processes\":[") = '\0';
  many(text, sizeof(text), b, 0, "");
  many(text + strlen(text), sizeof(text) - strlen(text), "\"processes\":[",
       GS_BACKEND_MAX_PROCS + 1, "]}");
  expect_corrupt(text, strlen(text), "processes: has 257 entries; at most 256");
}

/* Bytes after a NUL are still input: the text is not a C string. */
static void embedded_nul_is_refused(void **state)
{
  char text[TEXT_SIZE];
  size_t len;
  (void)state;
  expand(base, text, sizeof(text));
  len = strlen(text);
  text[len - 2] = '\0'; /* replaces the closing brace */
  expect_corrupt(text, len, "not valid JSON");
}

static void null_text_is_refused(void **state)
{
  (void)state;
  expect_corrupt(NULL, 0, "not valid JSON");
}

/* Dump refuses a state whose shape would make it read out of bounds or write
 * text that cannot be read back. */
static void dump_refuses_malformed_state(void **state)
{
  const struct gs_geom_model *models[] = {model("a100-40gb")};
  static struct gs__emu_state st;
  struct gs_err err = {0};
  char *text = (char *)"untouched";
  (void)state;
  gs__emu_state_init(&st, models, 1);
  st.ngpu = GS_BACKEND_MAX_GPUS + 1;
  assert_int_equal(gs__emu_state_dump(&err, &st, &text), GS_E_INVALID_ARGUMENT);
  assert_null(text);
  assert_non_null(strstr(err.msg, "65 GPUs"));
  gs__emu_state_init(&st, models, 1);
  st.gpu[0].model = NULL;
  assert_int_equal(gs__emu_state_dump(&err, &st, &text), GS_E_INVALID_ARGUMENT);
  assert_non_null(strstr(err.msg, "GPU 0"));
  gs__emu_state_init(&st, models, 1);
  st.nproc = 1;
  st.proc[0] = (struct gs_proc_info){.pid = 31337, .name = "bad\xff", .gi = -1, .ci = -1};
  assert_int_equal(gs__emu_state_dump(&err, &st, &text), GS_E_INVALID_ARGUMENT);
  assert_non_null(strstr(err.msg, "process 31337"));
  memset(st.proc[0].name, 'a', sizeof(st.proc[0].name)); /* no terminator */
  assert_int_equal(gs__emu_state_dump(&err, &st, &text), GS_E_INVALID_ARGUMENT);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(base_text_parses),
      cmocka_unit_test(rich_state_round_trips),
      cmocka_unit_test(fresh_state_round_trips),
      cmocka_unit_test(gpu_instances_are_sorted_by_id),
      cmocka_unit_test(name_of_63_bytes_is_accepted),
      cmocka_unit_test(each_corrupt_text_is_refused),
      cmocka_unit_test(too_many_gpus),
      cmocka_unit_test(too_many_gpu_instances),
      cmocka_unit_test(too_many_compute_instances),
      cmocka_unit_test(too_many_processes),
      cmocka_unit_test(embedded_nul_is_refused),
      cmocka_unit_test(null_text_is_refused),
      cmocka_unit_test(dump_refuses_malformed_state),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
