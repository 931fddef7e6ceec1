/* SPDX-License-Identifier: Apache-2.0 */
/* drivers.c: the NVIDIA driver releases the emulator can be, by branch: the
 * release a bare branch ("@535") stands for and the CUDA version each
 * reports. A release quoted in a fidelity transcript stands for its branch
 * where one was seen; the CUDA version per branch is NVIDIA's (CUDA toolkit
 * release notes, "CUDA Toolkit and Corresponding Driver Versions"). Pure data
 * and parsing. */
#include "geometry/internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct branch {
  unsigned major;
  const char *release; /* the branch's release a bare "@major" means */
  unsigned cuda;       /* cudaDriverGetVersion's value: 12020 is 12.2 */
};

static const struct branch branches[] = {
  {450, "450.80.02", 11000},
  {460, "460.32.03", 11020},
  {470, "470.57.02", 11040},
  {495, "495.29.05", 11050},  /* seen: mig-parted#31 */
  {510, "510.47.03", 11060},
  {515, "515.65.01", 11070},
  {525, "525.125.06", 12000}, /* seen: Scaleway's H100 PCIe transcript */
  {535, "535.183.01", 12020}, /* seen: the A30 transcript */
  {550, "550.127.05", 12040},
  {555, "555.42.06", 12050},
  {560, "560.35.03", 12060},
  {570, "570.86.15", 12080},
  {575, "575.57.08", 12090},
  {580, "580.65.06", 13000},  /* seen: the MIG user guide's MPS example */
};

/* "535.183.01" into its three numbers: two or three dot-separated parts of
 * 1-3 digits; the patch may be absent ("570.169", as some logs print it). */
static bool split(const char *v, unsigned n[3])
{
  unsigned parts = 0;
  n[0] = n[1] = n[2] = 0;
  while (parts < 3) {
    size_t len = strspn(v, "0123456789");
    if (len == 0 || len > 3)
      return false;
    n[parts++] = (unsigned)atoi(v);
    v += len;
    if (*v == 0)
      return parts >= 2;
    if (*v++ != '.')
      return false;
  }
  return false;
}

static const struct branch *branch_of(unsigned major)
{
  const struct branch *best = NULL;
  for (unsigned i = 0; i < GS_NITEMS(branches); i++)
    if (branches[i].major <= major)
      best = &branches[i];
  return best;
}

static void fill(const char *version, const unsigned n[3], struct gs_geom_driver *out)
{
  memset(out, 0, sizeof(*out));
  snprintf(out->version, sizeof(out->version), "%s", version);
  out->code = GS_GEOM_DRIVER(n[0], n[1], n[2]);
  out->cuda = branch_of(n[0])->cuda;
}

int gs_geom_driver_parse(struct gs_err *err, const char *text, struct gs_geom_driver *out)
{
  char known[160];
  size_t used = 0;
  unsigned n[3];
  const char *t = text && (*text == 'R' || *text == 'r') ? text + 1 : text;
  for (unsigned i = 0; i < GS_NITEMS(branches) && used < sizeof(known); i++)
    used += (size_t)snprintf(known + used, sizeof(known) - used, "%s%u", i ? ", " : "",
                             branches[i].major);
  if (!t || !*t || strlen(t) >= GS_GEOM_DRIVER_SIZE)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT,
                      "driver '%.32s': expected a release such as 535.183.01 or a branch "
                      "(%s)", text ? text : "", known);
  if (strspn(t, "0123456789") == strlen(t)) {
    for (unsigned i = 0; i < GS_NITEMS(branches); i++)
      if (branches[i].major == (unsigned)atoi(t)) {
        split(branches[i].release, n);
        fill(branches[i].release, n, out);
        return 0;
      }
    return gs_err_set(err, GS_E_INVALID_ARGUMENT,
                      "driver '%s': no release of branch %s is known; name a release "
                      "(e.g. %s.00.00) or one of the branches %s", text, t, t, known);
  }
  if (!split(t, n) || n[0] < branches[0].major)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT,
                      "driver '%s': expected a release such as 535.183.01 (R%u or later, the "
                      "first with MIG) or a branch (%s)", text, branches[0].major, known);
  fill(t, n, out);
  return 0;
}

void gs_geom_driver_default(struct gs_geom_driver *out)
{
  unsigned n[3];
  const char *newest = branches[GS_NITEMS(branches) - 1].release;
  split(newest, n);
  fill(newest, n, out);
}
