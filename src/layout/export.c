/* SPDX-License-Identifier: Apache-2.0 */
/* export.c: writes the machine's current layout as a config. Ours records
 * every placement and compute instance, so applying it rebuilds the same
 * layout (a GI without any compute instance comes back with the default one);
 * mig-parted's format, which counts MIG devices by profile, is written as
 * nvidia-mig-parted's export writes it (mpconfig.c). */
#include "layout/layout.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool default_cis_only(const struct gs_layout_current_gi *g)
{
  return g->nci == 1 && g->ci[0].profile.is_default;
}

static void export_ours(FILE *f, unsigned gpu, const struct gs_layout_current *cur)
{
  fprintf(f, "    - devices: [%u]\n      mig-enabled: %s\n", gpu, cur->mig_current ? "true" : "false");
  if (!cur->mig_current)
    return;
  fprintf(f, "      gpu-instances:%s\n", cur->ngi ? "" : " []");
  for (unsigned g = 0; g < cur->ngi; g++) {
    const struct gs_layout_current_gi *gi = &cur->gi[g];
    fprintf(f, "        - profile: \"%s\"\n          placement: %u\n", gi->gi.profile->name,
            gi->gi.start);
    /* One CI over the whole GI is the default. A GI with no CI cannot be
     * written (a config's GI always gets one); it comes back with the default. */
    if (default_cis_only(gi) || gi->nci == 0)
      continue;
    fprintf(f, "          compute-instances:\n");
    for (unsigned c = 0; c < gi->nci; c++)
      fprintf(f, "            - {profile: \"%s\", placement: %u}\n", gi->ci[c].profile.name,
              gi->ci[c].start);
  }
}

int gs_layout_export(struct gs_err *err, struct gs_backend *b, enum gs_layout_format format,
                     const char *name, char **yaml)
{
  struct gs_layout_current cur;
  size_t size = 0;
  unsigned ngpu = 0;
  FILE *f;
  int rc;
  *yaml = NULL;
  if (format == GS_LAYOUT_MIG_PARTED)
    return gs_layout_mp_export(err, b, name, false, yaml);
  if ((rc = b->ops->gpu_count(b, err, &ngpu)) != 0)
    return rc;
  if (!(f = open_memstream(yaml, &size)))
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory exporting the layout");
  fprintf(f, "version: gpuslice/v1\nconfigs:\n  %s:\n", name);
  for (unsigned g = 0; g < ngpu && rc == 0; g++) {
    if ((rc = gs_layout_read_current(err, b, g, &cur)) == 0)
      export_ours(f, g, &cur);
  }
  fclose(f);
  if (rc) {
    free(*yaml);
    *yaml = NULL;
  }
  return rc;
}
