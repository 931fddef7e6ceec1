/* SPDX-License-Identifier: Apache-2.0 */
/* export.c: a planned fleet in the formats the engines that run fleets read:
 * nvidia-mig-parted configs (one per node, the file `gpuslice apply` also
 * reads) and ours with placements. Kubernetes' formats are k8s.c, Slurm's
 * export_gres.c. Formats: docs/plan.md, "Exports". */
#include "plan/internal.h"

#include <string.h>

/* Calls fn for each node once, with the index range of its GPUs. */
static void each_node(const struct gs_plan_fleet *f, void (*fn)(FILE *, const struct gs_plan_fleet *, unsigned, unsigned),
                      FILE *out)
{
  for (unsigned a = 0, b; a < f->ngpu; a = b) {
    for (b = a + 1; b < f->ngpu && strcmp(f->gpu[b].node, f->gpu[a].node) == 0; b++)
      ;
    fn(out, f, a, b);
  }
}

static bool same_layout(const struct gs_plan_gpu *x, const struct gs_plan_gpu *y)
{
  unsigned cx[64] = {0}, cy[64] = {0};
  if ((x->mode == GS_PLAN_MIG) != (y->mode == GS_PLAN_MIG) || x->model != y->model)
    return false;
  if (x->mode != GS_PLAN_MIG)
    return true;
  for (unsigned i = 0; i < x->layout.n; i++)
    cx[(x->layout.slot[i].profile - x->model->gi) & 63]++;
  for (unsigned i = 0; i < y->layout.n; i++)
    cy[(y->layout.slot[i].profile - y->model->gi) & 63]++;
  return memcmp(cx, cy, sizeof(cx)) == 0;
}

/* One mig-parted entry: the GPUs [a,b) sharing first's layout. */
static void mig_parted_entry(FILE *out, const struct gs_plan_fleet *f, unsigned first, unsigned a,
                             unsigned b)
{
  const struct gs_plan_gpu *g = &f->gpu[first];
  bool sep = false;
  fprintf(out, "    - devices: [");
  for (unsigned i = a; i < b; i++)
    if (same_layout(&f->gpu[i], g)) {
      fprintf(out, "%s%u", sep ? ", " : "", f->gpu[i].index);
      sep = true;
    }
  fprintf(out, "]\n      mig-enabled: %s\n", g->mode == GS_PLAN_MIG ? "true" : "false");
  if (g->mode != GS_PLAN_MIG)
    return;
  fprintf(out, "      mig-devices:%s\n", g->layout.n ? "" : " {}");
  for (unsigned p = 0; p < g->model->ngi; p++) {
    unsigned n = 0;
    for (unsigned i = 0; i < g->layout.n; i++)
      n += g->layout.slot[i].profile == &g->model->gi[p];
    if (n)
      fprintf(out, "        \"%s\": %u\n", g->model->gi[p].name, n);
  }
}

static void mig_parted_node(FILE *out, const struct gs_plan_fleet *f, unsigned a, unsigned b)
{
  fprintf(out, "  plan-%s:\n", f->gpu[a].node);
  for (unsigned i = a; i < b; i++) {
    bool seen = false;
    for (unsigned j = a; j < i && !seen; j++)
      seen = same_layout(&f->gpu[j], &f->gpu[i]);
    if (!seen)
      mig_parted_entry(out, f, i, a, b);
  }
}

int gs_plan_export_mig_parted(FILE *out, const struct gs_plan_fleet *f)
{
  fprintf(out, "# mig-parted configs from `gpuslice plan`: one per node; apply with\n"
               "# `gpuslice apply -f FILE -c plan-NODE` or nvidia-mig-parted on that node.\n"
               "version: v1\nmig-configs:\n");
  each_node(f, mig_parted_node, out);
  return ferror(out) ? GS_E_IO : 0;
}

/* Ours: one entry per MIG GPU, every instance at its planned placement, so
 * an apply keeps what the plan keeps and builds exactly the planned layout. */
static void gpuslice_node(FILE *out, const struct gs_plan_fleet *f, unsigned a, unsigned b)
{
  fprintf(out, "  plan-%s:\n", f->gpu[a].node);
  for (unsigned i = a; i < b; i++) {
    const struct gs_plan_gpu *g = &f->gpu[i];
    fprintf(out, "    - devices: [%u]\n      mig-enabled: %s\n", g->index, g->mode == GS_PLAN_MIG ? "true" : "false");
    if (g->mode != GS_PLAN_MIG)
      continue;
    fprintf(out, "      gpu-instances:%s\n", g->layout.n ? "" : " []");
    for (unsigned s = 0; s < g->layout.n; s++)
      fprintf(out, "        - {profile: %s, placement: %d}\n", g->layout.slot[s].profile->name,
              g->layout.slot[s].start);
  }
}

int gs_plan_export_gpuslice(FILE *out, const struct gs_plan_fleet *f)
{
  fprintf(out, "# gpuslice configs from `gpuslice plan`, with placements: one per node; apply\n"
               "# with `gpuslice apply -f FILE -c plan-NODE` on that node.\n"
               "version: gpuslice/v1\nconfigs:\n");
  each_node(f, gpuslice_node, out);
  return ferror(out) ? GS_E_IO : 0;
}
