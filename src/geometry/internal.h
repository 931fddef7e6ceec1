/* SPDX-License-Identifier: Apache-2.0 */
/* internal.h: what the files of geometry/ share and nothing outside may use:
 * NVML enum values the rules need, the lookups skus.c builds on, and the
 * older drivers' tables (eras.c) that the newest ones (models.c) point to. */
#ifndef GS_GEOMETRY_INTERNAL_H
#define GS_GEOMETRY_INTERNAL_H

#include "geometry/geometry.h"

#define GS__GEOM_PROF_1_SLICE_REV2 0x9 /* NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2 */
#define GS__GEOM_CI_1_SLICE_REV1 0x7   /* NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE_REV1 */

/* True when `what` equals one entry of a comma-separated list (NULL: none). */
bool gs__geom_list_has(const char *list, const char *what);
/* Whether what ("0x20B010DE" or "0x20B0") names pci_id. */
bool gs__geom_matches_pci(unsigned pci_id, const char *what);
/* A model by key or alias only (no boards). */
const struct gs_geom_model *gs__geom_model_named(const char *what);

/* The newest tables of each model (models.c). */
extern const struct gs_geom_model gs__geom_a100_40gb, gs__geom_a100_80gb, gs__geom_a30_24gb, gs__geom_h100_80gb, gs__geom_h100_pcie_80gb, gs__geom_h100_nvl_94gb, gs__geom_h100_96gb, gs__geom_h20_96gb, gs__geom_h200_141gb, gs__geom_gh200_144gb, gs__geom_b200_180gb, gs__geom_gb200_186gb, gs__geom_rtx_pro_6000;

/* Older drivers' tables (eras.c), each the `before` of a newer record. */
extern const struct gs_geom_model gs__geom_a100_40gb_r510, gs__geom_a100_40gb_r470,
    gs__geom_a100_40gb_r450;
extern const struct gs_geom_model gs__geom_a100_80gb_r510, gs__geom_a100_80gb_r470,
    gs__geom_a100_80gb_r450;
extern const struct gs_geom_model gs__geom_a30_24gb_r470, gs__geom_a30_24gb_r460;
extern const struct gs_geom_model gs__geom_h100_80gb_r525, gs__geom_h100_pcie_80gb_r525;
extern const struct gs_geom_model gs__geom_h100_nvl_94gb_r550;
extern const struct gs_geom_model gs__geom_b200_180gb_r570_early;

#endif
