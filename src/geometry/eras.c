/* SPDX-License-Identifier: Apache-2.0 */
/* eras.c: the tables older drivers show, each the `before` of a newer record
 * (models.c), found by gs_geom_model_at(). A record holds from its own `since`
 * up to the `since` of the record that points to it. Each difference names the
 * transcript or document it comes from (tests/fidelity/cases/ holds the
 * transcripts; docs/models.md has the table of what is assumed). Pure data. */
#include "geometry/rows.h"

/* ---------------------------------------------------------------------------
 * A100-SXM4-40GB. 1g.10gb needs R525; +me needs R470; before R510 no 4g may
 * sit beside a 3g (UG-PROF, UG Concepts). */
static const struct gs_geom_gi_profile a100_40gb_r510_gi[] = {
  R_A100_40GB_1G_5GB,
  R_A100_40GB_1G_5GBPME,
  R_A100_40GB_2G_10GB,
  R_A100_40GB_3G_20GB,
  R_A100_40GB_4G_20GB,
  R_A100_40GB_7G_40GB,
};

const struct gs_geom_model gs__geom_a100_40gb_r510 = {
  B_A100_40GB,
  .gi = a100_40gb_r510_gi,
  .ngi = GS_NITEMS(a100_40gb_r510_gi),
  .source = "R510-R520: no 1g.10gb [UG-PROF]",
  .since = GS_GEOM_DRIVER(510, 0, 0),
  .before = &gs__geom_a100_40gb_r470,
};

const struct gs_geom_model gs__geom_a100_40gb_r470 = {
  B_A100_40GB,
  .no_4g_3g = true,
  .gi = a100_40gb_r510_gi,
  .ngi = GS_NITEMS(a100_40gb_r510_gi),
  .source = "R470-R50x: no 1g.10gb, no 4g beside a 3g [UG-PROF, UG-CONC]",
  .since = GS_GEOM_DRIVER(470, 0, 0),
  .before = &gs__geom_a100_40gb_r450,
};

/* R450/R460 printed more memory for the larger profiles [T-A100OLD]: 2g.10gb
 * 9.75, 3g/4g 19.62 and 7g 39.50 GiB; 1g.5gb (assumed) as later. */
static const struct gs_geom_gi_profile a100_40gb_r450_gi[] = {
  R_A100_40GB_1G_5GB,
  /* [T-A100OLD] 9.75 GiB */
  {.name = "2g.10gb", .id = 14, .nvml_enum = PROF_2_SLICE, .compute_slices = 2, .span = 2,
   .memory_mib = 9984, .sms = 28, .ce = 2, .dec = 1, .enc = 0, .jpeg = 0, .ofa = 0,
   .max_count = 3, .starts = G8_2G},
  /* [T-A100OLD] 19.62 GiB */
  {.name = "3g.20gb", .id = 9, .nvml_enum = PROF_3_SLICE, .compute_slices = 3, .span = 4,
   .memory_mib = 20096, .sms = 42, .ce = 3, .dec = 2, .enc = 0, .jpeg = 0, .ofa = 0,
   .max_count = 2, .starts = G8_3G},
  /* [T-A100OLD] 19.62 GiB */
  {.name = "4g.20gb", .id = 5, .nvml_enum = PROF_4_SLICE, .compute_slices = 4, .span = 4,
   .memory_mib = 20096, .sms = 56, .ce = 4, .dec = 2, .enc = 0, .jpeg = 0, .ofa = 0,
   .max_count = 1, .starts = G8_4G},
  /* [T-A100OLD] 39.50 GiB */
  {.name = "7g.40gb", .id = 0, .nvml_enum = PROF_7_SLICE, .compute_slices = 7, .span = 8,
   .memory_mib = 40448, .sms = 98, .ce = 7, .dec = 5, .enc = 0, .jpeg = 1, .ofa = 1,
   .max_count = 1, .starts = G8_7G},
};

const struct gs_geom_model gs__geom_a100_40gb_r450 = {
  B_A100_40GB,
  .no_4g_3g = true,
  .gi = a100_40gb_r450_gi,
  .ngi = GS_NITEMS(a100_40gb_r450_gi),
  .source = "R450-R460: no +me, no 1g.10gb, no 4g beside a 3g; sizes of T-A100OLD",
};

/* ---------------------------------------------------------------------------
 * A100-SXM4-80GB: the same driver rules as the 40 GB part; its older sizes
 * were not seen, so they are assumed as today's. */
static const struct gs_geom_gi_profile a100_80gb_r510_gi[] = {
  R_A100_80GB_1G_10GB,
  R_A100_80GB_1G_10GBPME,
  R_A100_80GB_2G_20GB,
  R_A100_80GB_3G_40GB,
  R_A100_80GB_4G_40GB,
  R_A100_80GB_7G_80GB,
};

const struct gs_geom_model gs__geom_a100_80gb_r510 = {
  B_A100_80GB,
  .gi = a100_80gb_r510_gi,
  .ngi = GS_NITEMS(a100_80gb_r510_gi),
  .source = "R510-R520: no 1g.20gb [UG-PROF]",
  .since = GS_GEOM_DRIVER(510, 0, 0),
  .before = &gs__geom_a100_80gb_r470,
};

const struct gs_geom_model gs__geom_a100_80gb_r470 = {
  B_A100_80GB,
  .no_4g_3g = true,
  .gi = a100_80gb_r510_gi,
  .ngi = GS_NITEMS(a100_80gb_r510_gi),
  .source = "R470-R50x: no 1g.20gb, no 4g beside a 3g [UG-PROF, UG-CONC]",
  .since = GS_GEOM_DRIVER(470, 0, 0),
  .before = &gs__geom_a100_80gb_r450,
};

static const struct gs_geom_gi_profile a100_80gb_r450_gi[] = {
  R_A100_80GB_1G_10GB,
  R_A100_80GB_2G_20GB,
  R_A100_80GB_3G_40GB,
  R_A100_80GB_4G_40GB,
  R_A100_80GB_7G_80GB,
};

const struct gs_geom_model gs__geom_a100_80gb_r450 = {
  B_A100_80GB,
  .no_4g_3g = true,
  .gi = a100_80gb_r450_gi,
  .ngi = GS_NITEMS(a100_80gb_r450_gi),
  .source = "R450-R460: no +me, no 1g.20gb, no 4g beside a 3g [UG-PROF, UG-CONC]",
};

/* ---------------------------------------------------------------------------
 * A30: 1g.6gb+me needs R470, 2g.12gb+me R525 [UG-PROF]. */
static const struct gs_geom_gi_profile a30_24gb_r470_gi[] = {
  R_A30_1G_6GB,
  R_A30_1G_6GBPME,
  R_A30_2G_12GB,
  R_A30_4G_24GB,
};

const struct gs_geom_model gs__geom_a30_24gb_r470 = {
  B_A30_24GB,
  .gi = a30_24gb_r470_gi,
  .ngi = GS_NITEMS(a30_24gb_r470_gi),
  .source = "R470-R520: no 2g.12gb+me [UG-PROF]",
  .since = GS_GEOM_DRIVER(470, 0, 0),
  .before = &gs__geom_a30_24gb_r460,
};

static const struct gs_geom_gi_profile a30_24gb_r460_gi[] = {
  R_A30_1G_6GB,
  R_A30_2G_12GB,
  R_A30_4G_24GB,
};

const struct gs_geom_model gs__geom_a30_24gb_r460 = {
  B_A30_24GB,
  .gi = a30_24gb_r460_gi,
  .ngi = GS_NITEMS(a30_24gb_r460_gi),
  .source = "R460: no +me profiles [UG-PROF]",
};

/* ---------------------------------------------------------------------------
 * H100 PCIe on driver 525.125.06 (Scaleway's transcript,
 * tests/fidelity/cases/h100-pcie-scaleway-525.txt): 9.62 / 19.50 / 39.25 /
 * 79.00 GiB where 570.169 prints 9.75 / 19.62 / 39.50 / 79.25. Which release
 * between them changed it is not known (assumed: R555, as for H100 NVL). */
static const struct gs_geom_gi_profile h100_pcie_80gb_r525_gi[] = {
  {.name = "1g.10gb", .id = 19, .nvml_enum = PROF_1_SLICE, .compute_slices = 1, .span = 1,
   .memory_mib = 9856, .sms = 14, .ce = 1, .dec = 1, .enc = 0, .jpeg = 1, .ofa = 0,
   .max_count = 7, .starts = G8_1G},
  {.name = "1g.10gb+me", .id = 20, .nvml_enum = PROF_1_SLICE_REV1, .compute_slices = 1,
   .span = 1, .memory_mib = 9856, .sms = 14, .ce = 1, .dec = 1, .enc = 0, .jpeg = 1, .ofa = 1,
   .max_count = 1, .starts = G8_1G, .media = GS_GEOM_MEDIA_ME},
  {.name = "1g.20gb", .id = 15, .nvml_enum = PROF_1_SLICE_REV2, .compute_slices = 1, .span = 2,
   .memory_mib = 19968, .sms = 14, .ce = 1, .dec = 1, .enc = 0, .jpeg = 1, .ofa = 0,
   .max_count = 4, .starts = G8_1G_2X},
  {.name = "2g.20gb", .id = 14, .nvml_enum = PROF_2_SLICE, .compute_slices = 2, .span = 2,
   .memory_mib = 19968, .sms = 30, .ce = 2, .dec = 2, .enc = 0, .jpeg = 2, .ofa = 0,
   .max_count = 3, .starts = G8_2G},
  {.name = "3g.40gb", .id = 9, .nvml_enum = PROF_3_SLICE, .compute_slices = 3, .span = 4,
   .memory_mib = 40192, .sms = 46, .ce = 3, .dec = 3, .enc = 0, .jpeg = 3, .ofa = 0,
   .max_count = 2, .starts = G8_3G},
  {.name = "4g.40gb", .id = 5, .nvml_enum = PROF_4_SLICE, .compute_slices = 4, .span = 4,
   .memory_mib = 40192, .sms = 62, .ce = 4, .dec = 4, .enc = 0, .jpeg = 4, .ofa = 0,
   .max_count = 1, .starts = G8_4G},
  {.name = "7g.80gb", .id = 0, .nvml_enum = PROF_7_SLICE, .compute_slices = 7, .span = 8,
   .memory_mib = 80896, .sms = 114, .ce = 8, .dec = 7, .enc = 0, .jpeg = 7, .ofa = 1,
   .max_count = 1, .starts = G8_7G},
};

const struct gs_geom_model gs__geom_h100_pcie_80gb_r525 = {
  B_H100_PCIE_80GB,
  .gi = h100_pcie_80gb_r525_gi,
  .ngi = GS_NITEMS(h100_pcie_80gb_r525_gi),
  .source = "R525-R550: -lgip of an H100 PCIe on 525.125.06 (Scaleway docs)",
};

/* H100 SXM: no pre-R555 transcript; (assumed) the same sizes as the PCIe
 * card's on 525.125.06, SXM's SMs. */
static const struct gs_geom_gi_profile h100_80gb_r525_gi[] = {
  {.name = "1g.10gb", .id = 19, .nvml_enum = PROF_1_SLICE, .compute_slices = 1, .span = 1,
   .memory_mib = 9856, .sms = 16, .ce = 1, .dec = 1, .enc = 0, .jpeg = 1, .ofa = 0,
   .max_count = 7, .starts = G8_1G},
  {.name = "1g.10gb+me", .id = 20, .nvml_enum = PROF_1_SLICE_REV1, .compute_slices = 1,
   .span = 1, .memory_mib = 9856, .sms = 16, .ce = 1, .dec = 1, .enc = 0, .jpeg = 1, .ofa = 1,
   .max_count = 1, .starts = G8_1G, .media = GS_GEOM_MEDIA_ME},
  {.name = "1g.20gb", .id = 15, .nvml_enum = PROF_1_SLICE_REV2, .compute_slices = 1, .span = 2,
   .memory_mib = 19968, .sms = 26, .ce = 1, .dec = 1, .enc = 0, .jpeg = 1, .ofa = 0,
   .max_count = 4, .starts = G8_1G_2X},
  {.name = "2g.20gb", .id = 14, .nvml_enum = PROF_2_SLICE, .compute_slices = 2, .span = 2,
   .memory_mib = 19968, .sms = 32, .ce = 2, .dec = 2, .enc = 0, .jpeg = 2, .ofa = 0,
   .max_count = 3, .starts = G8_2G},
  {.name = "3g.40gb", .id = 9, .nvml_enum = PROF_3_SLICE, .compute_slices = 3, .span = 4,
   .memory_mib = 40192, .sms = 60, .ce = 3, .dec = 3, .enc = 0, .jpeg = 3, .ofa = 0,
   .max_count = 2, .starts = G8_3G},
  {.name = "4g.40gb", .id = 5, .nvml_enum = PROF_4_SLICE, .compute_slices = 4, .span = 4,
   .memory_mib = 40192, .sms = 64, .ce = 4, .dec = 4, .enc = 0, .jpeg = 4, .ofa = 0,
   .max_count = 1, .starts = G8_4G},
  {.name = "7g.80gb", .id = 0, .nvml_enum = PROF_7_SLICE, .compute_slices = 7, .span = 8,
   .memory_mib = 80896, .sms = 132, .ce = 8, .dec = 7, .enc = 0, .jpeg = 7, .ofa = 1,
   .max_count = 1, .starts = G8_7G},
};

const struct gs_geom_model gs__geom_h100_80gb_r525 = {
  B_H100_80GB,
  .gi = h100_80gb_r525_gi,
  .ngi = GS_NITEMS(h100_80gb_r525_gi),
  .source = "R525-R550: (assumed) the H100 PCIe's 525.125.06 sizes with SXM's SMs",
};

/* ---------------------------------------------------------------------------
 * H100 NVL on driver 550.127.06 (tests/fidelity/cases/h100-nvl-lgip-drv550.txt):
 * 10.62 / 21.50 / 46.12 / 92.62 GiB where later drivers print 10.75 / 21.62 /
 * 46.38 / 93.12 [PR-NVL]. That host ran vGPU/passthrough, which may explain it
 * as well as the driver can (assumed: the driver). */
static const struct gs_geom_gi_profile h100_nvl_94gb_r550_gi[] = {
  {.name = "1g.12gb", .id = 19, .nvml_enum = PROF_1_SLICE, .compute_slices = 1, .span = 1,
   .memory_mib = 10880, .sms = 16, .ce = 1, .dec = 1, .enc = 0, .jpeg = 1, .ofa = 0,
   .max_count = 7, .starts = G8_1G},
  {.name = "1g.12gb+me", .id = 20, .nvml_enum = PROF_1_SLICE_REV1, .compute_slices = 1,
   .span = 1, .memory_mib = 10880, .sms = 16, .ce = 1, .dec = 1, .enc = 0, .jpeg = 1, .ofa = 1,
   .max_count = 1, .starts = G8_1G, .media = GS_GEOM_MEDIA_ME},
  {.name = "1g.24gb", .id = 15, .nvml_enum = PROF_1_SLICE_REV2, .compute_slices = 1, .span = 2,
   .memory_mib = 22016, .sms = 26, .ce = 1, .dec = 1, .enc = 0, .jpeg = 1, .ofa = 0,
   .max_count = 4, .starts = G8_1G_2X},
  {.name = "2g.24gb", .id = 14, .nvml_enum = PROF_2_SLICE, .compute_slices = 2, .span = 2,
   .memory_mib = 22016, .sms = 32, .ce = 2, .dec = 2, .enc = 0, .jpeg = 2, .ofa = 0,
   .max_count = 3, .starts = G8_2G},
  {.name = "3g.47gb", .id = 9, .nvml_enum = PROF_3_SLICE, .compute_slices = 3, .span = 4,
   .memory_mib = 47232, .sms = 60, .ce = 3, .dec = 3, .enc = 0, .jpeg = 3, .ofa = 0,
   .max_count = 2, .starts = G8_3G},
  {.name = "4g.47gb", .id = 5, .nvml_enum = PROF_4_SLICE, .compute_slices = 4, .span = 4,
   .memory_mib = 47232, .sms = 64, .ce = 4, .dec = 4, .enc = 0, .jpeg = 4, .ofa = 0,
   .max_count = 1, .starts = G8_4G},
  {.name = "7g.94gb", .id = 0, .nvml_enum = PROF_7_SLICE, .compute_slices = 7, .span = 8,
   .memory_mib = 94848, .sms = 132, .ce = 8, .dec = 7, .enc = 0, .jpeg = 7, .ofa = 1,
   .max_count = 1, .starts = G8_7G},
};

const struct gs_geom_model gs__geom_h100_nvl_94gb_r550 = {
  B_H100_NVL_94GB,
  .gi = h100_nvl_94gb_r550_gi,
  .ngi = GS_NITEMS(h100_nvl_94gb_r550_gi),
  .source = "R525-R550: -lgip of an H100 NVL on 550.127.06",
};

/* ---------------------------------------------------------------------------
 * B200 in January 2025 [PR-B200 #166, mig-parted]: 1g.23gb at 22.00 GiB,
 * where March 2025's driver [#187] printed 20.50. The rest as later. */
static const struct gs_geom_gi_profile b200_180gb_r570_early_gi[] = {
  /* [PR-B200 #166] 22.00 GiB */
  {.name = "1g.23gb", .id = 19, .nvml_enum = PROF_1_SLICE, .compute_slices = 1, .span = 1,
   .memory_mib = 22528, .sms = 18, .ce = 2, .dec = 1, .enc = 0, .jpeg = 1, .ofa = 0,
   .max_count = 7, .starts = G8_1G},
  /* [PR-B200 #166] 22.00 GiB */
  {.name = "1g.23gb+me", .id = 20, .nvml_enum = PROF_1_SLICE_REV1, .compute_slices = 1,
   .span = 1, .memory_mib = 22528, .sms = 18, .ce = 2, .dec = 1, .enc = 0, .jpeg = 1, .ofa = 1,
   .max_count = 1, .starts = G8_1G, .media = GS_GEOM_MEDIA_ME},
  R_B200_1G_45GB,
  R_B200_2G_45GB,
  R_B200_3G_90GB,
  R_B200_4G_90GB,
  R_B200_7G_180GB,
};

const struct gs_geom_model gs__geom_b200_180gb_r570_early = {
  B_B200_180GB,
  .gi = b200_180gb_r570_early_gi,
  .ngi = GS_NITEMS(b200_180gb_r570_early_gi),
  .source = "early R570 (January 2025): 1g.23gb at 22.00 GiB [PR-B200 #166]",
};
