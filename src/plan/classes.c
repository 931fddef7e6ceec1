/* SPDX-License-Identifier: Apache-2.0 */
/* classes.c: GPU state classes for the planner: a key per state (model,
 * mode, placed instances and who uses them, or the shares handed out), a hash
 * from key to class, member lists, and each state's fragmentation, computed
 * once when the class is made. */
#include "plan/internal.h"

#include <stdlib.h>
#include <string.h>

void gs__plan_mig_frag(const struct plan *p, unsigned mi, const struct gs_geom_layout *l,
                       unsigned *free_slices, unsigned *frag_slices)
{
  const struct gs_geom_model *m = p->models[mi];
  unsigned used = 0, usable = 0;
  for (unsigned i = 0; i < l->n; i++)
    for (unsigned u = 0; u < l->slot[i].profile->span; u++)
      used |= 1u << ((unsigned)l->slot[i].start + u);
  for (unsigned gi = 0; gi < m->ngi; gi++) {
    unsigned starts[GS_GEOM_MAX_GRID], ns;
    if (!(p->want_mask[mi] & (1u << gi)))
      continue;
    ns = gs_geom_gi_starts(&m->gi[gi], starts);
    for (unsigned s = 0; s < ns; s++)
      if (gs_geom_check_add(NULL, m, l, &m->gi[gi], starts[s]) == 0)
        usable |= ((1u << m->gi[gi].span) - 1) << starts[s];
  }
  *free_slices = *frag_slices = 0;
  for (unsigned u = 0; u < m->grid; u += m->leaf_span) {
    if (used & (1u << u))
      continue;
    ++*free_slices;
    *frag_slices += !(usable & (1u << u));
  }
}

double gs__plan_frag(const struct plan *p, const struct gs_plan_gpu *g, unsigned mi)
{
  const struct gs_geom_model *m = p->models[mi];
  unsigned free_slices, frag_slices, free_milli;
  switch (g->mode) {
  case GS_PLAN_FREE:
    return 0;
  case GS_PLAN_MIG:
    gs__plan_mig_frag(p, mi, &g->layout, &free_slices, &frag_slices);
    return (double)frag_slices * m->leaf_span / m->grid;
  default:
    /* FGD's measure with the smallest requested share standing for the
     * distribution: free compute no requested share can use. */
    free_milli = 1000 - g->used_milli;
    if (free_milli < p->min_share[mi] || m->memory_mib - g->used_mib < p->min_share_mib[mi] ||
        g->nunit >= GS_PLAN_MAX_CLIENTS || !p->min_share[mi])
      return free_milli / 1000.0;
    return 0;
  }
}

static void key_of(const struct plan *p, unsigned gi, struct class_key *k)
{
  const struct gs_plan_gpu *g = &p->f->gpu[gi];
  memset(k, 0, sizeof(*k));
  k->model = (uint8_t)p->gpu_model[gi];
  k->mode = (uint8_t)g->mode;
  k->n = (uint8_t)g->nunit;
  if (g->mode != GS_PLAN_MIG) {
    k->used_pct_milli = (uint16_t)g->used_milli;
    k->used_mib = g->used_mib;
    k->tenant = g->nunit ? (uint16_t)p->kinds[p->kind_of[g->unit[0].workload]].tenant : 0;
    return;
  }
  for (unsigned i = 0; i < g->layout.n; i++) {
    uint16_t v = (uint16_t)((unsigned)(g->layout.slot[i].profile - g->model->gi) << 8 |
                            (unsigned)g->layout.slot[i].start << 1 | (g->unit[i].workload >= 0));
    unsigned j = i;
    for (; j > 0 && k->slot[j - 1] > v; j--)
      k->slot[j] = k->slot[j - 1];
    k->slot[j] = v;
  }
}

static unsigned hash_key(const struct class_key *k)
{
  const unsigned char *b = (const unsigned char *)k;
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < sizeof(*k); i++)
    h = (h ^ b[i]) * 16777619u;
  return h;
}

static int grow_hash(struct gs_err *err, struct plan *p)
{
  unsigned size = p->hash_size ? p->hash_size * 2 : 256, *h;
  if (!(h = calloc(size, sizeof(*h))))
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory for GPU state classes");
  for (unsigned c = 0; c < p->nclasses; c++) {
    unsigned i = hash_key(&p->classes[c].key) & (size - 1);
    while (h[i])
      i = (i + 1) & (size - 1);
    h[i] = c + 1;
  }
  free(p->hash);
  p->hash = h;
  p->hash_size = size;
  return 0;
}

/* The class of key k, made when new; -1 on allocation failure. */
static int find_class(struct gs_err *err, struct plan *p, const struct class_key *k, unsigned gi)
{
  unsigned i;
  struct class *c;
  if (2 * (p->nclasses + 1) > p->hash_size && grow_hash(err, p) != 0)
    return -1;
  for (i = hash_key(k) & (p->hash_size - 1); p->hash[i]; i = (i + 1) & (p->hash_size - 1))
    if (memcmp(&p->classes[p->hash[i] - 1].key, k, sizeof(*k)) == 0)
      return (int)p->hash[i] - 1;
  if (p->nclasses == p->cap_classes) {
    unsigned cap = p->cap_classes ? p->cap_classes * 2 : 64;
    struct class *grown = realloc(p->classes, cap * sizeof(*grown));
    if (!grown) {
      gs_err_set(err, GS_E_NO_MEMORY, "out of memory for GPU state classes");
      return -1;
    }
    p->classes = grown;
    p->cap_classes = cap;
  }
  c = &p->classes[p->nclasses];
  memset(c, 0, sizeof(*c));
  c->key = *k;
  c->frag = gs__plan_frag(p, &p->f->gpu[gi], p->gpu_model[gi]);
  p->hash[i] = ++p->nclasses;
  return (int)p->nclasses - 1;
}

static int add_member(struct gs_err *err, struct plan *p, unsigned ci, unsigned gi)
{
  struct class *c = &p->classes[ci];
  if (c->nmember == c->cap) {
    unsigned cap = c->cap ? c->cap * 2 : 8;
    unsigned *grown = realloc(c->member, cap * sizeof(*grown));
    if (!grown)
      return gs_err_set(err, GS_E_NO_MEMORY, "out of memory for GPU state classes");
    c->member = grown;
    c->cap = cap;
  }
  p->class_of[gi] = ci;
  p->pos_of[gi] = c->nmember;
  c->member[c->nmember++] = gi;
  return 0;
}

int gs__plan_refile(struct gs_err *err, struct plan *p, unsigned gi)
{
  struct class_key k;
  struct class *old = &p->classes[p->class_of[gi]];
  unsigned pos = p->pos_of[gi], last = old->member[--old->nmember];
  int ci;
  old->member[pos] = last;
  p->pos_of[last] = pos;
  key_of(p, gi, &k);
  if ((ci = find_class(err, p, &k, gi)) < 0)
    return err ? err->code : GS_E_NO_MEMORY;
  return add_member(err, p, (unsigned)ci, gi);
}

int gs__plan_classes_init(struct gs_err *err, struct plan *p)
{
  unsigned n = p->f->ngpu ? p->f->ngpu : 1;
  if (!(p->class_of = calloc(n, sizeof(unsigned))) || !(p->pos_of = calloc(n, sizeof(unsigned))))
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory for %u GPUs", n);
  for (unsigned gi = 0; gi < p->f->ngpu; gi++) {
    struct class_key k;
    int ci;
    key_of(p, gi, &k);
    if ((ci = find_class(err, p, &k, gi)) < 0)
      return err ? err->code : GS_E_NO_MEMORY;
    if (add_member(err, p, (unsigned)ci, gi) != 0)
      return GS_E_NO_MEMORY;
  }
  return 0;
}

void gs__plan_classes_free(struct plan *p)
{
  for (unsigned c = 0; c < p->nclasses; c++) {
    free(p->classes[c].member);
    free(p->classes[c].moves);
  }
  free(p->classes);
  free(p->hash);
  free(p->class_of);
  free(p->pos_of);
}
