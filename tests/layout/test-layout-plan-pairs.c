/* SPDX-License-Identifier: Apache-2.0 */
/* test-layout-plan-pairs.c: the planner from every layout to every layout:
 * all 298 x 298 valid A100-40GB layouts (targets with and without
 * placements), the maximal layouts of every model, and every pair on the
 * 4-slot GPUs, and every enumerated layout of every model from the empty GPU.
 * Each plan is carried out by the simulator (plan-sim.h) and must end in the
 * target with the fewest changes any plan can make, found here by brute
 * force. Prints our step counts against destroying everything and against
 * mig-parted's wipe-and-recreate (scripts/plan-stats.sh reruns them for the
 * README). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "plan-sim.h"

/* ---- layout lists ---- */

struct layouts {
  unsigned n, cap;
  struct gs_geom_layout *l;
};

static int collect(const struct gs_geom_layout *l, void *arg)
{
  struct layouts *ls = arg;
  if (ls->n == ls->cap) {
    ls->cap = ls->cap ? 2 * ls->cap : 64;
    ls->l = realloc(ls->l, ls->cap * sizeof(*ls->l));
    assert_non_null(ls->l);
  }
  ls->l[ls->n++] = *l;
  return 0;
}

static struct layouts enumerate(const struct gs_geom_model *m, unsigned flags)
{
  struct layouts ls = {0};
  gs_geom_enumerate(m, flags, collect, &ls);
  assert_true(ls.n > 0);
  return ls;
}

/* ---- the fewest changes, by brute force ---- */

/* A layout's profile multiset as a number: 3 bits of count per profile. */
static uint64_t multiset_key(const struct gs_geom_model *m, const struct gs_geom_layout *l)
{
  uint64_t key = 0;
  for (unsigned i = 0; i < l->n; i++)
    key += UINT64_C(1) << (3 * (unsigned)(l->slot[i].profile - m->gi));
  return key;
}

/* brute_keep for each (from, multiset of to), computed once: many targets
 * share a multiset, and without placements only the multiset matters. */
struct keep_cache {
  unsigned nkeys;
  uint64_t *keys;
  unsigned *key_of;   /* layout -> index into keys */
  int *keep;          /* [from * nkeys + key], -1: not yet */
};

static void cache_init(struct keep_cache *c, const struct gs_geom_model *m, const struct layouts *ls)
{
  memset(c, 0, sizeof(*c));
  c->keys = calloc(ls->n, sizeof(*c->keys));
  c->key_of = calloc(ls->n, sizeof(*c->key_of));
  assert_true(c->keys && c->key_of);
  for (unsigned i = 0; i < ls->n; i++) {
    uint64_t k = multiset_key(m, &ls->l[i]);
    unsigned j = 0;
    while (j < c->nkeys && c->keys[j] != k)
      j++;
    if (j == c->nkeys)
      c->keys[c->nkeys++] = k;
    c->key_of[i] = j;
  }
  c->keep = malloc((size_t)ls->n * c->nkeys * sizeof(*c->keep));
  assert_non_null(c->keep);
  for (size_t i = 0; i < (size_t)ls->n * c->nkeys; i++)
    c->keep[i] = -1;
}

static unsigned cached_keep(struct keep_cache *c, const struct gs_geom_model *m, const struct layouts *ls,
                            unsigned from, unsigned to)
{
  int *slot = &c->keep[(size_t)from * c->nkeys + c->key_of[to]];
  if (*slot < 0)
    *slot = (int)brute_keep(m, &ls->l[from], &ls->l[to]);
  return (unsigned)*slot;
}

static void cache_free(struct keep_cache *c)
{
  free(c->keys);
  free(c->key_of);
  free(c->keep);
}

/* ---- one pair ---- */

struct tally {
  unsigned long pairs, ours, wipe, naive;
};

static void fail_pair(const struct gs_geom_model *m, const struct gs_geom_layout *from,
                      const struct gs_geom_layout *to, bool placed, const char *what)
{
  char a[256], b[256];
  fail_msg("%s: %s -> %s (%s): %s", m->key, layout_str(from, a, sizeof(a)), layout_str(to, b, sizeof(b)),
           placed ? "placed" : "profiles only", what);
}

/* The GIs of from still there, with their ids, after the plan ran. */
static unsigned survivors(const struct gs_geom_model *m, struct sim *s, const struct gs_geom_layout *from)
{
  unsigned n = 0;
  for (unsigned i = 0; i < from->n; i++) {
    const struct sim_gi *g = sim_find(s, gs_geom_gi_id(m, (unsigned)from->slot[i].start,
                                                        from->slot[i].profile->span));
    n += g && g->p == from->slot[i].profile && g->start == (unsigned)from->slot[i].start;
  }
  return n;
}

/* The final state holds `to` (as a multiset, or exactly when placed), each
 * GI with exactly its default CI. */
static const char *check_final(const struct gs_geom_model *m, const struct sim *s,
                               const struct gs_geom_layout *to, bool placed)
{
  struct gs_geom_layout got;
  sim_layout(s, &got);
  if (!same_multiset(&got, to))
    return "final GIs differ from the target";
  if (placed && placed_minus(to, &got) != 0)
    return "final placements differ from the target";
  for (unsigned i = 0; i < s->ngi; i++)
    if (s->gi[i].nci != 1 || s->gi[i].ci[0].p.id != sim_default_ci(m, s->gi[i].p))
      return "a GI does not hold exactly its default CI";
  return NULL;
}

/* Plans from -> to, runs the plan, and checks it keeps exactly `keep` GIs
 * (the most any plan can) with their ids and makes no other change. */
static void check_pair(const struct gs_geom_model *m, const struct gs_geom_layout *from,
                       const struct gs_geom_layout *to, bool placed, unsigned keep, struct tally *t)
{
  struct gs_layout_current cur;
  struct gs_layout_target want;
  struct gs_layout_plan plan;
  struct gs_err err = {0};
  struct sim s;
  char why[GS_ERR_MSG_SIZE] = "";
  const char *bad;
  unsigned changes;
  cur_from_layout(m, from, &cur);
  target_from_layout(to, placed, &want);
  if (gs_layout_plan_gpu(&err, m, &cur, &want, false, &plan) != 0)
    fail_pair(m, from, to, placed, err.msg);
  changes = count_changes(&plan);
  if (plan.kept_gis != keep || changes != 2 * (from->n - keep) + 2 * (to->n - keep)) {
    snprintf(why, sizeof(why), "kept %u GIs in %u steps; the fewest is %u steps keeping %u", plan.kept_gis,
             changes, 2 * (from->n - keep) + 2 * (to->n - keep), keep);
    fail_pair(m, from, to, placed, why);
  }
  sim_from_current(&s, m, &cur);
  if (sim_run(&s, &plan, why, sizeof(why)) >= 0)
    fail_pair(m, from, to, placed, why);
  if ((bad = check_final(m, &s, to, placed)) != NULL)
    fail_pair(m, from, to, placed, bad);
  /* Every GI lands where nvidia-smi's automatic placement would put it in
   * that order: our plans match what its users know (no fallback needed). */
  if (!placed && s.not_auto)
    fail_pair(m, from, to, placed, "a GI is made away from the driver's automatic placement");
  if (survivors(m, &s, from) != keep || gs_layout_plan_count(&plan, GS_LAYOUT_DESTROY_GI) != from->n - keep)
    fail_pair(m, from, to, placed, "the kept GIs are not the ones left with their ids");
  if (t && !placed) {
    t->pairs++;
    t->ours += changes;
    /* mig-parted skips a GPU whose profile counts already match; otherwise it
     * destroys every CI and GI and makes every GI and CI anew. */
    t->wipe += same_multiset(from, to) ? 0 : 2 * (from->n + to->n);
    /* Destroy everything, then create everything. */
    t->naive += 2 * (from->n + to->n);
  }
}

static void print_tally(const char *label, const struct tally *t)
{
  printf("[ plan ] %s: pairs %lu: ours %lu ops, destroy-everything-then-create %lu ops (%.1f%%), "
         "mig-parted's wipe-and-recreate %lu ops (%.1f%%)\n", label, t->pairs, t->ours, t->naive,
         t->naive ? 100.0 * (double)t->ours / (double)t->naive : 0.0, t->wipe,
         t->wipe ? 100.0 * (double)t->ours / (double)t->wipe : 0.0);
  fflush(stdout);
}

/* Every (from, to) of ls for which pick() is true, with and without starts. */
static void check_pairs(const struct gs_geom_model *m, const struct layouts *ls,
                        bool (*pick)(unsigned from, unsigned to), struct tally *t)
{
  struct keep_cache cache;
  cache_init(&cache, m, ls);
  for (unsigned i = 0; i < ls->n; i++)
    for (unsigned j = 0; j < ls->n; j++) {
      const struct gs_geom_layout *from = &ls->l[i], *to = &ls->l[j];
      if (pick && !pick(i, j))
        continue;
      check_pair(m, from, to, false, cached_keep(&cache, m, ls, i, j), t);
      check_pair(m, from, to, true, from->n - placed_minus(from, to), NULL);
    }
  cache_free(&cache);
}

/* The empty GPU to each layout and back. */
static void check_round_trips(const struct gs_geom_model *m, const struct layouts *ls)
{
  struct gs_geom_layout empty = {0};
  for (unsigned i = 0; i < ls->n; i++) {
    check_pair(m, &empty, &ls->l[i], false, 0, NULL);
    check_pair(m, &empty, &ls->l[i], true, 0, NULL);
    check_pair(m, &ls->l[i], &empty, false, 0, NULL);
  }
}

/* ---- A100-40GB ---- */

static void test_a100_maximal_pairs(void **state)
{
  const struct gs_geom_model *m = sim_model("a100-40gb");
  struct layouts ls = enumerate(m, GS_GEOM_ENUM_MAXIMAL);
  struct tally t = {0};
  (void)state;
  assert_int_equal(ls.n, 19);
  check_pairs(m, &ls, NULL, &t);
  check_round_trips(m, &ls);
  print_tally("a100-40gb maximal layouts (19 x 19)", &t);
  assert_int_equal(t.pairs, 19 * 19);
  free(ls.l);
}

static void test_a100_all_pairs(void **state)
{
  const struct gs_geom_model *m = sim_model("a100-40gb");
  struct layouts ls = enumerate(m, 0);
  struct tally t = {0};
  (void)state;
  assert_int_equal(ls.n, 298);
  check_pairs(m, &ls, NULL, &t);
  print_tally("a100-40gb valid layouts (298 x 298)", &t);
  free(ls.l);
}

/* ---- every model ---- */

/* A deterministic twentieth of the pairs, meeting every row and column. */
static bool small_sample(unsigned from, unsigned to)
{
  return (from * 31u + to * 17u) % 20u == 0;
}

/* Every enumerated layout (partial ones, every shape) from the empty GPU
 * without placements, built in an order where each GI lands where the
 * driver's automatic placement puts it, and back; maximal layouts (plain
 * profiles, then every shape, e.g. the double-memory 1g): all pairs; a
 * sample of all valid layouts; every pair where there are few (A30, RTX PRO
 * 6000: 26). */
static void test_every_model(void **state)
{
  unsigned n;
  const struct gs_geom_model *const *all = gs_geom_models(&n);
  (void)state;
  for (unsigned k = 0; k < n; k++) {
    const struct gs_geom_model *m = all[k];
    struct layouts max = enumerate(m, GS_GEOM_ENUM_MAXIMAL);
    struct layouts shapes = enumerate(m, GS_GEOM_ENUM_MAXIMAL | GS_GEOM_ENUM_ALL_SHAPES);
    struct layouts valid = enumerate(m, 0);
    struct layouts every = enumerate(m, GS_GEOM_ENUM_ALL_SHAPES);
    check_round_trips(m, &every);  /* every enumerated layout, from the empty GPU, unplaced */
    check_round_trips(m, &max);
    check_pairs(m, &max, NULL, NULL);
    check_round_trips(m, &shapes);
    check_pairs(m, &shapes, NULL, NULL);
    check_pairs(m, &valid, valid.n <= 64 ? NULL : small_sample, NULL);
    free(max.l);
    free(shapes.l);
    free(valid.l);
    free(every.l);
  }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_a100_maximal_pairs),
    cmocka_unit_test(test_a100_all_pairs),
    cmocka_unit_test(test_every_model),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
