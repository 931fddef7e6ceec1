/* SPDX-License-Identifier: Apache-2.0 */
/* emu-state-eq.h: field-by-field equality of two emulator states, for the
 * round-trip checks of the tests and the fuzz target (not a test itself: the
 * test glob takes test-*.c only). Padding and the unused tails of the fixed
 * arrays are ignored; the first difference is described in `why`. */
#ifndef GS_TEST_EMU_STATE_EQ_H
#define GS_TEST_EMU_STATE_EQ_H

#include <stdio.h>
#include <string.h>

#include "backend/emu_state.h"

#define GS__EQ(cond, ...)                                                                          \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      snprintf(why, size, __VA_ARGS__);                                                            \
      return false;                                                                                \
    }                                                                                              \
  } while (0)

static inline bool gs_test_gi_eq(const struct gs__emu_gi *a, const struct gs__emu_gi *b,
                                 const char *at, char *why, size_t size)
{
  GS__EQ(a->id == b->id && a->profile == b->profile && a->start == b->start, "%s differs", at);
  GS__EQ(a->nci == b->nci, "%s.nci: %u vs %u", at, a->nci, b->nci);
  for (unsigned k = 0; k < a->nci && k < GS_GEOM_MAX_INSTANCES; k++) {
    const struct gs__emu_ci *x = &a->ci[k], *y = &b->ci[k];
    GS__EQ(x->id == y->id && x->profile_id == y->profile_id && x->start == y->start &&
               x->span == y->span,
           "%s.ci[%u] differs", at, k);
  }
  return true;
}

static inline bool gs_test_emu_state_eq(const struct gs__emu_state *a,
                                        const struct gs__emu_state *b, char *why, size_t size)
{
  char at[64];

  GS__EQ(a->ngpu == b->ngpu, "ngpu: %u vs %u", a->ngpu, b->ngpu);
  GS__EQ(a->nproc == b->nproc, "nproc: %u vs %u", a->nproc, b->nproc);
  GS__EQ(a->enforce_root == b->enforce_root, "enforce_root differs");
  GS__EQ(a->boots == b->boots, "boots: %u vs %u", a->boots, b->boots);
  GS__EQ(a->driver.code == b->driver.code && strcmp(a->driver.version, b->driver.version) == 0,
         "driver: %s vs %s", a->driver.version, b->driver.version);
  for (unsigned i = 0; i < a->ngpu && i < GS_BACKEND_MAX_GPUS; i++) {
    const struct gs__emu_gpu *g = &a->gpu[i], *h = &b->gpu[i];
    GS__EQ(g->model == h->model, "gpu[%u].model differs", i);
    GS__EQ(g->sku == h->sku, "gpu[%u].sku differs", i);
    GS__EQ(g->swapped_ids == h->swapped_ids, "gpu[%u].swapped_ids differs", i);
    GS__EQ(g->mig_current == h->mig_current && g->mig_pending == h->mig_pending &&
               g->reset_blocked == h->reset_blocked,
           "gpu[%u] flags differ", i);
    GS__EQ(g->ngi == h->ngi, "gpu[%u].ngi: %u vs %u", i, g->ngi, h->ngi);
    for (unsigned j = 0; j < g->ngi && j < GS_GEOM_MAX_INSTANCES; j++) {
      snprintf(at, sizeof(at), "gpu[%u].gi[%u]", i, j);
      if (!gs_test_gi_eq(&g->gi[j], &h->gi[j], at, why, size))
        return false;
    }
  }
  for (unsigned i = 0; i < a->nproc && i < GS_BACKEND_MAX_PROCS; i++) {
    const struct gs_proc_info *p = &a->proc[i], *q = &b->proc[i];
    GS__EQ(p->pid == q->pid && p->gpu == q->gpu && p->gi == q->gi && p->ci == q->ci &&
               p->used_mib == q->used_mib && strncmp(p->name, q->name, sizeof(p->name)) == 0,
           "proc[%u] differs", i);
  }
  return true;
}

#undef GS__EQ
#endif
