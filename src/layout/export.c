/* export.c: writes the machine's current layout as a config. Ours records
 * every placement and compute instance, so applying it rebuilds the same
 * layout (a GI without any compute instance comes back with the default one);
 * mig-parted's format can only count profiles (a GI whose compute instances
 * are not the one default is counted by its CI profile; one holding several
 * CI profiles cannot be written there). */
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

/* Adds one to the count of `name` in the (names, counts) table. */
static void count_name(const char *name, char names[][GS_GEOM_NAME_SIZE], unsigned *counts, unsigned *n)
{
  unsigned i;
  for (i = 0; i < *n && strcmp(names[i], name) != 0; i++)
    ;
  if (i == *n)
    snprintf(names[(*n)++], GS_GEOM_NAME_SIZE, "%s", name);
  counts[i]++;
}

/* mig-parted names a GI's CIs by one profile ("1c.3g.20gb": 3), so a GI
 * holding CIs of several profiles cannot be written in its format. */
static int check_one_ci_profile(struct gs_err *err, unsigned gpu, const struct gs_layout_current_gi *gi)
{
  for (unsigned c = 1; c < gi->nci; c++)
    if (gi->ci[c].profile.id != gi->ci[0].profile.id)
      return gs_err_set(err, GS_E_NOT_SUPPORTED,
                        "GPU %u: GPU instance %u (%s) holds compute instances of several profiles (%s, "
                        "%s), which nvidia-mig-parted's format cannot say; export --format gpuslice",
                        gpu, gi->gi.id, gi->gi.profile->name, gi->ci[0].profile.name, gi->ci[c].profile.name);
  return 0;
}

static int export_mig_parted(struct gs_err *err, FILE *f, unsigned gpu, const struct gs_layout_current *cur)
{
  char names[GS_GEOM_MAX_INSTANCES * GS_GEOM_MAX_INSTANCES][GS_GEOM_NAME_SIZE];
  unsigned counts[GS_GEOM_MAX_INSTANCES * GS_GEOM_MAX_INSTANCES] = {0}, n = 0;
  int rc;
  fprintf(f, "    - devices: [%u]\n      mig-enabled: %s\n", gpu, cur->mig_current ? "true" : "false");
  if (!cur->mig_current)
    return 0;
  for (unsigned g = 0; g < cur->ngi; g++) {
    const struct gs_layout_current_gi *gi = &cur->gi[g];
    if (default_cis_only(gi) || gi->nci == 0)
      count_name(gi->gi.profile->name, names, counts, &n);
    else if ((rc = check_one_ci_profile(err, gpu, gi)) != 0)
      return rc;
    else
      for (unsigned c = 0; c < gi->nci; c++)
        count_name(gi->ci[c].profile.name, names, counts, &n);
  }
  fprintf(f, "      mig-devices:%s\n", n ? "" : " {}");
  for (unsigned i = 0; i < n; i++)
    fprintf(f, "        \"%s\": %u\n", names[i], counts[i]);
  return 0;
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
  if ((rc = b->ops->gpu_count(b, err, &ngpu)) != 0)
    return rc;
  if (!(f = open_memstream(yaml, &size)))
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory exporting the layout");
  if (format == GS_LAYOUT_GPUSLICE)
    fprintf(f, "version: gpuslice/v1\nconfigs:\n  %s:\n", name);
  else
    fprintf(f, "version: v1\nmig-configs:\n  %s:\n", name);
  for (unsigned g = 0; g < ngpu && rc == 0; g++) {
    if ((rc = gs_layout_read_current(err, b, g, &cur)) != 0)
      break;
    if (format == GS_LAYOUT_GPUSLICE)
      export_ours(f, g, &cur);
    else
      rc = export_mig_parted(err, f, g, &cur);
  }
  fclose(f);
  if (rc) {
    free(*yaml);
    *yaml = NULL;
  }
  return rc;
}
