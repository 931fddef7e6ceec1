/* SPDX-License-Identifier: Apache-2.0 */
/* export_gres.c: a planned fleet for Slurm: per node, the gres.conf records
 * of its planned MIG devices and whole GPUs (MPS GPUs as gres/mps, time-
 * sliced ones as gres/shard) and its slurm.conf NodeName line, through the
 * one writer in plan/slurm.c. Format: docs/slurm.md, "Planning a fleet". */
#include "plan/internal.h"
#include "plan/slurm.h"

#include <stdlib.h>
#include <string.h>

/* The planned devices of GPUs [a, b) of one node. A GPU's minor is taken to
 * be its index on the node, as on most machines (`gpuslice slurm gres` on
 * the node reads the real ones). */
static unsigned node_devices(const struct gs_plan_fleet *f, unsigned a, unsigned b,
                             struct gs_plan_slurm_dev *d)
{
  unsigned n = 0;
  for (unsigned i = a; i < b; i++) {
    const struct gs_plan_gpu *g = &f->gpu[i];
    struct gs_plan_slurm_dev whole = {.model = g->model, .minor = g->index};
    if (g->mode == GS_PLAN_MIG) {
      for (unsigned s = 0; s < g->layout.n; s++) {
        const struct gs_geom_slot *slot = &g->layout.slot[s];
        struct gs_plan_slurm_dev *m = &d[n++];
        *m = (struct gs_plan_slurm_dev){.model = g->model, .minor = g->index, .mig = true,
                                        .profile = slot->profile,
                                        .gi = gs_geom_gi_id(g->model, (unsigned)slot->start,
                                                            slot->profile->span)};
        snprintf(m->type, sizeof(m->type), "%s", slot->profile->name);
      }
      continue;
    }
    gs_plan_slurm_model_type(g->model, whole.type);
    /* MPS shares are thread percentages, Slurm's gres/mps unit; time-slicing
     * replicas are gres/shard (SchedMD's gres.html). */
    whole.mps = g->mode == GS_PLAN_MPS ? GS_PLAN_SLURM_MPS_PER_GPU : 0;
    whole.shards = g->mode == GS_PLAN_TIMESLICE ? g->nunit : 0;
    d[n++] = whole;
  }
  return n;
}

/* One node: its slurm.conf line as a comment, then its gres.conf lines. */
static int export_node(FILE *out, const struct gs_plan_fleet *f, unsigned a, unsigned b, bool shares_off)
{
  struct gs_plan_slurm_dev *d = calloc((b - a) * GS_GEOM_MAX_INSTANCES + 1, sizeof(*d));
  char config[GS_PLAN_NAME_SIZE + 8], *line = NULL;
  size_t len = 0;
  struct gs_err err = {0};
  FILE *mem;
  unsigned n;
  int rc;
  if (!d)
    return GS_E_NO_MEMORY;
  n = node_devices(f, a, b, d);
  gs_plan_slurm_sort(d, n);
  snprintf(config, sizeof(config), "plan-%s", f->gpu[a].node);
  struct gs_plan_slurm_opts o = {.node = f->gpu[a].node, .node_lines = true, .config = config,
                                 .shares_off = shares_off};
  rc = (mem = open_memstream(&line, &len)) ? gs_plan_slurm_node(&err, mem, d, n, &o) : GS_E_NO_MEMORY;
  if (mem && fclose(mem) != 0 && rc == 0)
    rc = GS_E_NO_MEMORY;
  if (rc == 0) {
    fprintf(out, "# slurm.conf: %s", line);
    rc = gs_plan_slurm_gres(&err, out, d, n, &o);
  }
  if (rc)
    fprintf(out, "# node %s: not exported: %s\n", f->gpu[a].node, err.msg);
  free(line);
  free(d);
  return rc;
}

int gs_plan_export_gres(FILE *out, const struct gs_plan_fleet *f)
{
  bool mps = false, shard = false, mig = false, off;
  int rc = 0;
  for (unsigned i = 0; i < f->ngpu; i++) {
    mps = mps || f->gpu[i].mode == GS_PLAN_MPS;
    shard = shard || f->gpu[i].mode == GS_PLAN_TIMESLICE;
    mig = mig || (f->gpu[i].mode == GS_PLAN_MIG && f->gpu[i].layout.n);
  }
  off = mig && (mps || shard);
  fprintf(out, "# Slurm from `gpuslice plan`: each node's slurm.conf line (commented), then its\n"
               "# gres.conf lines; every line names its node, so this is one gres.conf for the\n"
               "# fleet. Apply each node's layout first (--export mig-parted, config plan-NODE);\n"
               "# `gpuslice slurm gres` on the node then writes the same records from the GPUs.\n"
               "# slurm.conf: GresTypes=gpu%s%s\n", off || !mps ? "" : ",mps", off || !shard ? "" : ",shard");
  if (off)
    fprintf(out, "# The MPS and time-sliced GPUs' gres/mps and gres/shard lines are left commented:\n"
                 "# with mps or shard in GresTypes, Slurm 22.05 reads each MIG record's files as\n"
                 "# separate GPUs (slurmd -G), and this fleet has MIG devices. Those GPUs are\n"
                 "# scheduled whole here; give them a cluster of their own to share them.\n");
  for (unsigned a = 0, b; a < f->ngpu; a = b) {
    int r;
    for (b = a + 1; b < f->ngpu && strcmp(f->gpu[b].node, f->gpu[a].node) == 0; b++)
      ;
    if ((r = export_node(out, f, a, b, off)) != 0 && rc == 0)
      rc = r;
  }
  return rc ? rc : ferror(out) ? GS_E_IO : 0;
}
