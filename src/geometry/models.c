/* SPDX-License-Identifier: Apache-2.0 */
/* models.c: the static tables of every MIG-capable GPU model: one array of
 * GPU-instance profiles per model (a row of `nvidia-smi mig -lgip` plus its
 * `-lgipp` placements) and one model record. Pure data; the rules that use it
 * live in geometry.c. Tags such as [UG-GS] name sources in
 * shared/reference/mig-facts.md; docs/models.md lists what is uncertain. */

#include "geometry/rows.h"

/* ---------------------------------------------------------------------------
 * A100-SXM4-40GB (reference §3.1). */
static const struct gs_geom_gi_profile a100_40gb_gi[] = {
  R_A100_40GB_1G_5GB,
  R_A100_40GB_1G_5GBPME,
  R_A100_40GB_1G_10GB,
  R_A100_40GB_2G_10GB,
  R_A100_40GB_3G_20GB,
  R_A100_40GB_4G_20GB,
  R_A100_40GB_7G_40GB,
};

const struct gs_geom_model gs__geom_a100_40gb = {
  B_A100_40GB,
  .gi = a100_40gb_gi,
  .ngi = GS_NITEMS(a100_40gb_gi),
  .source = "mig-facts §3.1 [UG-GS, UG-PROF, MOCK, GPUOP, T-ALL1G, T-MIXED]",
  .since = GS_GEOM_DRIVER(525, 0, 0),     /* 1g.10gb needs R525 [UG-PROF] */
  .before = &gs__geom_a100_40gb_r510,
};

/* ---------------------------------------------------------------------------
 * A100-SXM4-80GB (reference §3.2). Engines CE/JPEG/OFA as on the 40 GB part
 * (uncertain: assumed equal to A100-40GB); ENC 0 (A100 has no NVENC). */
static const struct gs_geom_gi_profile a100_80gb_gi[] = {
  R_A100_80GB_1G_10GB,
  R_A100_80GB_1G_10GBPME,
  R_A100_80GB_1G_20GB,
  R_A100_80GB_2G_20GB,
  R_A100_80GB_3G_40GB,
  R_A100_80GB_4G_40GB,
  R_A100_80GB_7G_80GB,
};

const struct gs_geom_model gs__geom_a100_80gb = {
  B_A100_80GB,
  .gi = a100_80gb_gi,
  .ngi = GS_NITEMS(a100_80gb_gi),
  .source = "mig-facts §3.2 [T-A100-80, UG-PROF, GPUOP, T-ALL1G, ISS-39]",
  .since = GS_GEOM_DRIVER(525, 0, 0),     /* 1g.20gb needs R525 [UG-PROF] */
  .before = &gs__geom_a100_80gb_r510,
};

/* ---------------------------------------------------------------------------
 * A30-24GB (reference §3.3): 4 compute slices on a 4-unit grid. Memory is the
 * MIG device total the driver showed (5952/11968 MiB: multiples of 64, not 128). */
static const struct gs_geom_gi_profile a30_24gb_gi[] = {
  R_A30_1G_6GB,
  R_A30_1G_6GBPME,
  R_A30_2G_12GB,
  R_A30_2G_12GBPME,
  R_A30_4G_24GB,
};

const struct gs_geom_model gs__geom_a30_24gb = {
  B_A30_24GB,
  .gi = a30_24gb_gi,
  .ngi = GS_NITEMS(a30_24gb_gi),
  .source = "mig-facts §3.3 [T-A30, UG-PROF, UG-GPUS]",
  .since = GS_GEOM_DRIVER(525, 0, 0),     /* 2g.12gb+me needs R525 [UG-PROF] */
  .before = &gs__geom_a30_24gb_r470,
};

/* ---------------------------------------------------------------------------
 * H100 80GB HBM3, SXM5 (reference §3.4). ENC 0 throughout (no NVENC). */
static const struct gs_geom_gi_profile h100_80gb_gi[] = {
  /* [T-H100S; UG-PROF] 9.75 GiB */
  {.name = "1g.10gb", .id = 19, .nvml_enum = PROF_1_SLICE, .compute_slices = 1, .span = 1,
   .memory_mib = 9984, .sms = 16, .ce = 1, .dec = 1, .enc = 0, .jpeg = 1, .ofa = 0,
   .max_count = 7, .starts = G8_1G},
  /* [T-H100S; UG-PROF] */
  {.name = "1g.10gb+me", .id = 20, .nvml_enum = PROF_1_SLICE_REV1, .compute_slices = 1,
   .span = 1, .memory_mib = 9984, .sms = 16, .ce = 1, .dec = 1, .enc = 0, .jpeg = 1, .ofa = 1,
   .max_count = 1, .starts = G8_1G, .media = GS_GEOM_MEDIA_ME},
  /* [T-H100S] 19.62 GiB -> 19.625; 26 SMs */
  {.name = "1g.20gb", .id = 15, .nvml_enum = PROF_1_SLICE_REV2, .compute_slices = 1, .span = 2,
   .memory_mib = 20096, .sms = 26, .ce = 1, .dec = 1, .enc = 0, .jpeg = 1, .ofa = 0,
   .max_count = 4, .starts = G8_1G_2X},
  /* [T-H100S] 19.62 GiB -> 19.625 */
  {.name = "2g.20gb", .id = 14, .nvml_enum = PROF_2_SLICE, .compute_slices = 2, .span = 2,
   .memory_mib = 20096, .sms = 32, .ce = 2, .dec = 2, .enc = 0, .jpeg = 2, .ofa = 0,
   .max_count = 3, .starts = G8_2G},
  /* [T-H100S; UG-GS MPS example: 40448 MiB device total] 39.50 GiB */
  {.name = "3g.40gb", .id = 9, .nvml_enum = PROF_3_SLICE, .compute_slices = 3, .span = 4,
   .memory_mib = 40448, .sms = 60, .ce = 3, .dec = 3, .enc = 0, .jpeg = 3, .ofa = 0,
   .max_count = 2, .starts = G8_3G},
  /* [T-H100S] 39.50 GiB */
  {.name = "4g.40gb", .id = 5, .nvml_enum = PROF_4_SLICE, .compute_slices = 4, .span = 4,
   .memory_mib = 40448, .sms = 64, .ce = 4, .dec = 4, .enc = 0, .jpeg = 4, .ofa = 0,
   .max_count = 1, .starts = G8_4G},
  /* [T-H100S; UG-PROF CE 8] 79.25 GiB */
  {.name = "7g.80gb", .id = 0, .nvml_enum = PROF_7_SLICE, .compute_slices = 7, .span = 8,
   .memory_mib = 81152, .sms = 132, .ce = 8, .dec = 7, .enc = 0, .jpeg = 7, .ofa = 1,
   .max_count = 1, .starts = G8_7G},
};

const struct gs_geom_model gs__geom_h100_80gb = {
  B_H100_80GB,
  .gi = h100_80gb_gi,
  .ngi = GS_NITEMS(h100_80gb_gi),
  .source = "mig-facts §3.4 [T-H100S, UG-PROF, UG-GS, MOCK, GPUOP]",
  .since = GS_GEOM_DRIVER(555, 0, 0),     /* (assumed: see h100_pcie_80gb) */
  .before = &gs__geom_h100_80gb_r525,
};

/* ---------------------------------------------------------------------------
 * H100 PCIe 80GB (reference §3.4, PCIe column): fewer SMs than SXM. */
static const struct gs_geom_gi_profile h100_pcie_80gb_gi[] = {
  /* [T-H100P driver 570.169; 9984 MiB device total] */
  {.name = "1g.10gb", .id = 19, .nvml_enum = PROF_1_SLICE, .compute_slices = 1, .span = 1,
   .memory_mib = 9984, .sms = 14, .ce = 1, .dec = 1, .enc = 0, .jpeg = 1, .ofa = 0,
   .max_count = 7, .starts = G8_1G},
  /* [T-H100P; UG-PROF] */
  {.name = "1g.10gb+me", .id = 20, .nvml_enum = PROF_1_SLICE_REV1, .compute_slices = 1,
   .span = 1, .memory_mib = 9984, .sms = 14, .ce = 1, .dec = 1, .enc = 0, .jpeg = 1, .ofa = 1,
   .max_count = 1, .starts = G8_1G, .media = GS_GEOM_MEDIA_ME},
  /* [T-H100P] 19.62 GiB -> 19.625 */
  {.name = "1g.20gb", .id = 15, .nvml_enum = PROF_1_SLICE_REV2, .compute_slices = 1, .span = 2,
   .memory_mib = 20096, .sms = 14, .ce = 1, .dec = 1, .enc = 0, .jpeg = 1, .ofa = 0,
   .max_count = 4, .starts = G8_1G_2X},
  /* [T-H100P] 19.62 GiB -> 19.625 */
  {.name = "2g.20gb", .id = 14, .nvml_enum = PROF_2_SLICE, .compute_slices = 2, .span = 2,
   .memory_mib = 20096, .sms = 30, .ce = 2, .dec = 2, .enc = 0, .jpeg = 2, .ofa = 0,
   .max_count = 3, .starts = G8_2G},
  /* [T-H100P] 39.50 GiB */
  {.name = "3g.40gb", .id = 9, .nvml_enum = PROF_3_SLICE, .compute_slices = 3, .span = 4,
   .memory_mib = 40448, .sms = 46, .ce = 3, .dec = 3, .enc = 0, .jpeg = 3, .ofa = 0,
   .max_count = 2, .starts = G8_3G},
  /* [T-H100P] 39.50 GiB */
  {.name = "4g.40gb", .id = 5, .nvml_enum = PROF_4_SLICE, .compute_slices = 4, .span = 4,
   .memory_mib = 40448, .sms = 62, .ce = 4, .dec = 4, .enc = 0, .jpeg = 4, .ofa = 0,
   .max_count = 1, .starts = G8_4G},
  /* [T-H100P; UG-PROF CE 8] 79.25 GiB */
  {.name = "7g.80gb", .id = 0, .nvml_enum = PROF_7_SLICE, .compute_slices = 7, .span = 8,
   .memory_mib = 81152, .sms = 114, .ce = 8, .dec = 7, .enc = 0, .jpeg = 7, .ofa = 1,
   .max_count = 1, .starts = G8_7G},
};

const struct gs_geom_model gs__geom_h100_pcie_80gb = {
  B_H100_PCIE_80GB,
  .gi = h100_pcie_80gb_gi,
  .ngi = GS_NITEMS(h100_pcie_80gb_gi),
  .source = "mig-facts §3.4 [T-H100P, UG-PROF, GPUOP]",
  .since = GS_GEOM_DRIVER(555, 0, 0),     /* (assumed: 525.125.06 showed older sizes, 570.169 these) */
  .before = &gs__geom_h100_pcie_80gb_r525,
};

/* ---------------------------------------------------------------------------
 * H100 NVL 94GB (reference §3.5). ENC 0 throughout (no NVENC). */
static const struct gs_geom_gi_profile h100_nvl_94gb_gi[] = {
  /* [PR-NVL] 10.75 GiB */
  {.name = "1g.12gb", .id = 19, .nvml_enum = PROF_1_SLICE, .compute_slices = 1, .span = 1,
   .memory_mib = 11008, .sms = 16, .ce = 1, .dec = 1, .enc = 0, .jpeg = 1, .ofa = 0,
   .max_count = 7, .starts = G8_1G},
  /* [PR-NVL] */
  {.name = "1g.12gb+me", .id = 20, .nvml_enum = PROF_1_SLICE_REV1, .compute_slices = 1,
   .span = 1, .memory_mib = 11008, .sms = 16, .ce = 1, .dec = 1, .enc = 0, .jpeg = 1, .ofa = 1,
   .max_count = 1, .starts = G8_1G, .media = GS_GEOM_MEDIA_ME},
  /* [PR-NVL] 21.62 GiB -> 21.625 */
  {.name = "1g.24gb", .id = 15, .nvml_enum = PROF_1_SLICE_REV2, .compute_slices = 1, .span = 2,
   .memory_mib = 22144, .sms = 26, .ce = 1, .dec = 1, .enc = 0, .jpeg = 1, .ofa = 0,
   .max_count = 4, .starts = G8_1G_2X},
  /* [PR-NVL] 21.62 GiB -> 21.625; 32 SMs (uncertain: per reference §3.5) */
  {.name = "2g.24gb", .id = 14, .nvml_enum = PROF_2_SLICE, .compute_slices = 2, .span = 2,
   .memory_mib = 22144, .sms = 32, .ce = 2, .dec = 2, .enc = 0, .jpeg = 2, .ofa = 0,
   .max_count = 3, .starts = G8_2G},
  /* [T-NVL-BLOG; PR-NVL] 46.38 GiB -> 46.375 */
  {.name = "3g.47gb", .id = 9, .nvml_enum = PROF_3_SLICE, .compute_slices = 3, .span = 4,
   .memory_mib = 47488, .sms = 60, .ce = 3, .dec = 3, .enc = 0, .jpeg = 3, .ofa = 0,
   .max_count = 2, .starts = G8_3G},
  /* [T-NVL-BLOG; PR-NVL] 46.38 GiB -> 46.375 */
  {.name = "4g.47gb", .id = 5, .nvml_enum = PROF_4_SLICE, .compute_slices = 4, .span = 4,
   .memory_mib = 47488, .sms = 64, .ce = 4, .dec = 4, .enc = 0, .jpeg = 4, .ofa = 0,
   .max_count = 1, .starts = G8_4G},
  /* [T-NVL-BLOG; UG-PROF] 93.12 GiB -> 93.125 */
  {.name = "7g.94gb", .id = 0, .nvml_enum = PROF_7_SLICE, .compute_slices = 7, .span = 8,
   .memory_mib = 95360, .sms = 132, .ce = 8, .dec = 7, .enc = 0, .jpeg = 7, .ofa = 1,
   .max_count = 1, .starts = G8_7G},
};

const struct gs_geom_model gs__geom_h100_nvl_94gb = {
  B_H100_NVL_94GB,
  .gi = h100_nvl_94gb_gi,
  .ngi = GS_NITEMS(h100_nvl_94gb_gi),
  .source = "mig-facts §3.5 [PR-NVL, T-NVL-BLOG, UG-PROF, GPUOP]",
  .since = GS_GEOM_DRIVER(555, 0, 0),     /* (assumed: 550.127.06 showed older sizes) */
  .before = &gs__geom_h100_nvl_94gb_r550,
};

/* ---------------------------------------------------------------------------
 * H100 96GB as on GH200 (also PG506-96GB) (reference §3.6). Every row as a
 * GH200 96GB HBM3 printed it (tests/fidelity/cases/gh200-96gb-lgip.txt); the
 * emulator had derived 22.12/47.38/95.12 GiB from H100 NVL before that. */
static const struct gs_geom_gi_profile h100_96gb_gi[] = {
  /* [UG-PROF; fidelity gh200-96gb-lgip] 11.00 GiB */
  {.name = "1g.12gb", .id = 19, .nvml_enum = PROF_1_SLICE, .compute_slices = 1, .span = 1,
   .memory_mib = 11264, .sms = 16, .ce = 1, .dec = 1, .enc = 0, .jpeg = 1, .ofa = 0,
   .max_count = 7, .starts = G8_1G},
  /* [UG-PROF; fidelity gh200-96gb-lgip] */
  {.name = "1g.12gb+me", .id = 20, .nvml_enum = PROF_1_SLICE_REV1, .compute_slices = 1,
   .span = 1, .memory_mib = 11264, .sms = 16, .ce = 1, .dec = 1, .enc = 0, .jpeg = 1, .ofa = 1,
   .max_count = 1, .starts = G8_1G, .media = GS_GEOM_MEDIA_ME},
  /* [UG-PROF; fidelity gh200-96gb-lgip] 23.00 GiB */
  {.name = "1g.24gb", .id = 15, .nvml_enum = PROF_1_SLICE_REV2, .compute_slices = 1, .span = 2,
   .memory_mib = 23552, .sms = 26, .ce = 1, .dec = 1, .enc = 0, .jpeg = 1, .ofa = 0,
   .max_count = 4, .starts = G8_1G_2X},
  /* [UG-PROF; fidelity gh200-96gb-lgip] 23.00 GiB */
  {.name = "2g.24gb", .id = 14, .nvml_enum = PROF_2_SLICE, .compute_slices = 2, .span = 2,
   .memory_mib = 23552, .sms = 32, .ce = 2, .dec = 2, .enc = 0, .jpeg = 2, .ofa = 0,
   .max_count = 3, .starts = G8_2G},
  /* [UG-PROF; fidelity gh200-96gb-lgip] 46.50 GiB */
  {.name = "3g.48gb", .id = 9, .nvml_enum = PROF_3_SLICE, .compute_slices = 3, .span = 4,
   .memory_mib = 47616, .sms = 60, .ce = 3, .dec = 3, .enc = 0, .jpeg = 3, .ofa = 0,
   .max_count = 2, .starts = G8_3G},
  /* [UG-PROF; fidelity gh200-96gb-lgip] 46.50 GiB */
  {.name = "4g.48gb", .id = 5, .nvml_enum = PROF_4_SLICE, .compute_slices = 4, .span = 4,
   .memory_mib = 47616, .sms = 64, .ce = 4, .dec = 4, .enc = 0, .jpeg = 4, .ofa = 0,
   .max_count = 1, .starts = G8_4G},
  /* [UG-PROF; fidelity gh200-96gb-lgip] 93.00 GiB */
  {.name = "7g.96gb", .id = 0, .nvml_enum = PROF_7_SLICE, .compute_slices = 7, .span = 8,
   .memory_mib = 95232, .sms = 132, .ce = 8, .dec = 7, .enc = 0, .jpeg = 7, .ofa = 1,
   .max_count = 1, .starts = G8_7G},
};

const struct gs_geom_model gs__geom_h100_96gb = {
  .key = "h100-96gb",
  .name = "NVIDIA GH200 480GB",           /* [OGKM: 2342 10DE 1809] */
  .aliases = "gh200-96gb,gh200-480gb,pg506-96gb",
  .pci_id = 0x234210DE,                   /* [GPUOP group; OGKM: GH200 480GB is 2342] */
  .arch = GS_GEOM_HOPPER,
  .compute_slices = 7,
  .grid = 8,
  .leaf_span = 1,
  .memory_mib = 97871,                    /* (uncertain: not in the reference) */
  .sms = 132,                             /* (uncertain: full GH100 as on H100 SXM) */
  .swapped_ids = false,                   /* (uncertain: no trace) */
  .gi = h100_96gb_gi,
  .ngi = GS_NITEMS(h100_96gb_gi),
  .source = "mig-facts §3.6 [UG-PROF, GPUOP]; -lgip of a GH200 96GB (tests/fidelity)",
  .rev1_ci = true,                        /* [fidelity gh200-96gb-*: -cgi 15 -C gave "(ID 7)"] */
  .mig_since = GS_GEOM_DRIVER(535, 0, 0), /* (assumed) */
};

/* ---------------------------------------------------------------------------
 * H20 96GB (reference §3.6): a cut-down GH100 (78 SMs). Same names, engines
 * and (assumed) IDs as H100 96GB; memory (assumed) as the GH200 96GB's real
 * -lgip, SMs derived by scaling H100 SXM by 78/132 to even counts. */
static const struct gs_geom_gi_profile h20_96gb_gi[] = {
  /* [UG-PROF] (uncertain: derived memory, SMs, ID) */
  {.name = "1g.12gb", .id = 19, .nvml_enum = PROF_1_SLICE, .compute_slices = 1, .span = 1,
   .memory_mib = 11264, .sms = 10, .ce = 1, .dec = 1, .enc = 0, .jpeg = 1, .ofa = 0,
   .max_count = 7, .starts = G8_1G},
  /* [UG-PROF] (uncertain: derived memory, SMs, ID) */
  {.name = "1g.12gb+me", .id = 20, .nvml_enum = PROF_1_SLICE_REV1, .compute_slices = 1,
   .span = 1, .memory_mib = 11264, .sms = 10, .ce = 1, .dec = 1, .enc = 0, .jpeg = 1, .ofa = 1,
   .max_count = 1, .starts = G8_1G, .media = GS_GEOM_MEDIA_ME},
  /* [UG-PROF] (uncertain: derived memory, SMs, ID) */
  {.name = "1g.24gb", .id = 15, .nvml_enum = PROF_1_SLICE_REV2, .compute_slices = 1, .span = 2,
   .memory_mib = 23552, .sms = 16, .ce = 1, .dec = 1, .enc = 0, .jpeg = 1, .ofa = 0,
   .max_count = 4, .starts = G8_1G_2X},
  /* [UG-PROF] (uncertain: derived memory, SMs, ID) */
  {.name = "2g.24gb", .id = 14, .nvml_enum = PROF_2_SLICE, .compute_slices = 2, .span = 2,
   .memory_mib = 23552, .sms = 20, .ce = 2, .dec = 2, .enc = 0, .jpeg = 2, .ofa = 0,
   .max_count = 3, .starts = G8_2G},
  /* [UG-PROF] (uncertain: derived memory, SMs, ID) */
  {.name = "3g.48gb", .id = 9, .nvml_enum = PROF_3_SLICE, .compute_slices = 3, .span = 4,
   .memory_mib = 47616, .sms = 36, .ce = 3, .dec = 3, .enc = 0, .jpeg = 3, .ofa = 0,
   .max_count = 2, .starts = G8_3G},
  /* [UG-PROF] (uncertain: derived memory, SMs, ID) */
  {.name = "4g.48gb", .id = 5, .nvml_enum = PROF_4_SLICE, .compute_slices = 4, .span = 4,
   .memory_mib = 47616, .sms = 38, .ce = 4, .dec = 4, .enc = 0, .jpeg = 4, .ofa = 0,
   .max_count = 1, .starts = G8_4G},
  /* [UG-PROF] (uncertain: derived memory, SMs, ID) */
  {.name = "7g.96gb", .id = 0, .nvml_enum = PROF_7_SLICE, .compute_slices = 7, .span = 8,
   .memory_mib = 95232, .sms = 78, .ce = 8, .dec = 7, .enc = 0, .jpeg = 7, .ofa = 1,
   .max_count = 1, .starts = G8_7G},
};

const struct gs_geom_model gs__geom_h20_96gb = {
  .key = "h20-96gb",
  .name = "NVIDIA H20",
  .aliases = "h20",
  .pci_id = 0x232910DE,                   /* [GPUOP group] (uncertain: which id of the group) */
  .arch = GS_GEOM_HOPPER,
  .compute_slices = 7,
  .grid = 8,
  .leaf_span = 1,
  .memory_mib = 97871,                    /* (uncertain: not in the reference) */
  .sms = 78,                              /* (uncertain: not in the reference) */
  .swapped_ids = false,                   /* (uncertain: no trace) */
  .gi = h20_96gb_gi,
  .ngi = GS_NITEMS(h20_96gb_gi),
  .source = "mig-facts §3.6 [UG-PROF, UG-DEPL, GPUOP]; memory and SMs derived",
  .rev1_ci = true,                        /* (assumed: as GH200 96GB) */
  .mig_since = GS_GEOM_DRIVER(535, 161, 7), /* [UG-DEPL 620] */
};

/* ---------------------------------------------------------------------------
 * H200 141GB (reference §3.7). ENC 0 throughout (no NVENC). */
static const struct gs_geom_gi_profile h200_141gb_gi[] = {
  /* [ISS-H200] 16.00 GiB */
  {.name = "1g.18gb", .id = 19, .nvml_enum = PROF_1_SLICE, .compute_slices = 1, .span = 1,
   .memory_mib = 16384, .sms = 16, .ce = 1, .dec = 1, .enc = 0, .jpeg = 1, .ofa = 0,
   .max_count = 7, .starts = G8_1G},
  /* [ISS-H200] */
  {.name = "1g.18gb+me", .id = 20, .nvml_enum = PROF_1_SLICE_REV1, .compute_slices = 1,
   .span = 1, .memory_mib = 16384, .sms = 16, .ce = 1, .dec = 1, .enc = 0, .jpeg = 1, .ofa = 1,
   .max_count = 1, .starts = G8_1G, .media = GS_GEOM_MEDIA_ME},
  /* [ISS-H200] 32.25 GiB */
  {.name = "1g.35gb", .id = 15, .nvml_enum = PROF_1_SLICE_REV2, .compute_slices = 1, .span = 2,
   .memory_mib = 33024, .sms = 26, .ce = 1, .dec = 1, .enc = 0, .jpeg = 1, .ofa = 0,
   .max_count = 4, .starts = G8_1G_2X},
  /* [ISS-H200] 32.25 GiB */
  {.name = "2g.35gb", .id = 14, .nvml_enum = PROF_2_SLICE, .compute_slices = 2, .span = 2,
   .memory_mib = 33024, .sms = 32, .ce = 2, .dec = 2, .enc = 0, .jpeg = 2, .ofa = 0,
   .max_count = 3, .starts = G8_2G},
  /* [ISS-H200] 69.50 GiB */
  {.name = "3g.71gb", .id = 9, .nvml_enum = PROF_3_SLICE, .compute_slices = 3, .span = 4,
   .memory_mib = 71168, .sms = 60, .ce = 3, .dec = 3, .enc = 0, .jpeg = 3, .ofa = 0,
   .max_count = 2, .starts = G8_3G},
  /* [ISS-H200] 69.50 GiB */
  {.name = "4g.71gb", .id = 5, .nvml_enum = PROF_4_SLICE, .compute_slices = 4, .span = 4,
   .memory_mib = 71168, .sms = 64, .ce = 4, .dec = 4, .enc = 0, .jpeg = 4, .ofa = 0,
   .max_count = 1, .starts = G8_4G},
  /* [ISS-H200] 139.75 GiB */
  {.name = "7g.141gb", .id = 0, .nvml_enum = PROF_7_SLICE, .compute_slices = 7, .span = 8,
   .memory_mib = 143104, .sms = 132, .ce = 8, .dec = 7, .enc = 0, .jpeg = 7, .ofa = 1,
   .max_count = 1, .starts = G8_7G},
};

const struct gs_geom_model gs__geom_h200_141gb = {
  .key = "h200-141gb",
  .name = "NVIDIA H200",
  .aliases = "h200,h200-sxm-141gb",
  .pci_id = 0x233510DE,                   /* [GPUOP; ISS-H200] (the mock's 0x2333 disagrees) */
  .arch = GS_GEOM_HOPPER,
  .compute_slices = 7,
  .grid = 8,
  .leaf_span = 1,
  .memory_mib = 143771,                   /* (uncertain: not in the reference) */
  .sms = 132,
  .swapped_ids = false,                   /* (uncertain: no trace) */
  .gi = h200_141gb_gi,
  .ngi = GS_NITEMS(h200_141gb_gi),
  .source = "mig-facts §3.7 [ISS-H200, UG-PROF, GPUOP]; placements assumed as A100",
  .rev1_ci = true,                        /* (assumed: as GH200 96GB) */
  .mig_since = GS_GEOM_DRIVER(550, 90, 7), /* [UG-DEPL 620] */
};

/* ---------------------------------------------------------------------------
 * GH200 144GB HBM3e (reference §3.7). The first four rows are real [PR-GH200];
 * 3g/4g/7g are derived (memory 2x the smaller rows plus a little, H200's SMs
 * and engines). */
static const struct gs_geom_gi_profile gh200_144gb_gi[] = {
  /* [PR-GH200] 17.50 GiB */
  {.name = "1g.18gb", .id = 19, .nvml_enum = PROF_1_SLICE, .compute_slices = 1, .span = 1,
   .memory_mib = 17920, .sms = 16, .ce = 1, .dec = 1, .enc = 0, .jpeg = 1, .ofa = 0,
   .max_count = 7, .starts = G8_1G},
  /* [PR-GH200] */
  {.name = "1g.18gb+me", .id = 20, .nvml_enum = PROF_1_SLICE_REV1, .compute_slices = 1,
   .span = 1, .memory_mib = 17920, .sms = 16, .ce = 1, .dec = 1, .enc = 0, .jpeg = 1, .ofa = 1,
   .max_count = 1, .starts = G8_1G, .media = GS_GEOM_MEDIA_ME},
  /* [PR-GH200] 35.25 GiB */
  {.name = "1g.36gb", .id = 15, .nvml_enum = PROF_1_SLICE_REV2, .compute_slices = 1, .span = 2,
   .memory_mib = 36096, .sms = 26, .ce = 1, .dec = 1, .enc = 0, .jpeg = 1, .ofa = 0,
   .max_count = 4, .starts = G8_1G_2X},
  /* [PR-GH200] 35.25 GiB */
  {.name = "2g.36gb", .id = 14, .nvml_enum = PROF_2_SLICE, .compute_slices = 2, .span = 2,
   .memory_mib = 36096, .sms = 32, .ce = 2, .dec = 2, .enc = 0, .jpeg = 2, .ofa = 0,
   .max_count = 3, .starts = G8_2G},
  /* [GPUOP name] (uncertain: derived memory 71.50 GiB, SMs, engines, ID) */
  {.name = "3g.72gb", .id = 9, .nvml_enum = PROF_3_SLICE, .compute_slices = 3, .span = 4,
   .memory_mib = 73216, .sms = 60, .ce = 3, .dec = 3, .enc = 0, .jpeg = 3, .ofa = 0,
   .max_count = 2, .starts = G8_3G},
  /* [GPUOP name] (uncertain: derived memory 71.50 GiB, SMs, engines, ID) */
  {.name = "4g.72gb", .id = 5, .nvml_enum = PROF_4_SLICE, .compute_slices = 4, .span = 4,
   .memory_mib = 73216, .sms = 64, .ce = 4, .dec = 4, .enc = 0, .jpeg = 4, .ofa = 0,
   .max_count = 1, .starts = G8_4G},
  /* [GPUOP name] (uncertain: derived memory 143.00 GiB, SMs, engines, ID) */
  {.name = "7g.144gb", .id = 0, .nvml_enum = PROF_7_SLICE, .compute_slices = 7, .span = 8,
   .memory_mib = 146432, .sms = 132, .ce = 8, .dec = 7, .enc = 0, .jpeg = 7, .ofa = 1,
   .max_count = 1, .starts = G8_7G},
};

const struct gs_geom_model gs__geom_gh200_144gb = {
  .key = "gh200-144gb",
  .name = "NVIDIA GH200 144G HBM3e",
  .aliases = "gh200-144g", /* not "gh200": GH200 480GB is h100-96gb */
  .pci_id = 0x234810DE,                   /* [GPUOP; PR-GH200] */
  .arch = GS_GEOM_HOPPER,
  .compute_slices = 7,
  .grid = 8,
  .leaf_span = 1,
  .memory_mib = 146944,                   /* (uncertain: derived, 7g + 512 MiB) */
  .sms = 132,                             /* (uncertain: full GH100 as on H200) */
  .swapped_ids = false,                   /* (uncertain: no trace) */
  .gi = gh200_144gb_gi,
  .ngi = GS_NITEMS(gh200_144gb_gi),
  .source = "mig-facts §3.7 [PR-GH200, GPUOP]; 3g/4g/7g derived; placements assumed as A100",
  .rev1_ci = true,                        /* (assumed: as GH200 96GB) */
  .mig_since = GS_GEOM_DRIVER(550, 90, 7), /* (assumed: as H200) */
};

/* ---------------------------------------------------------------------------
 * B200 180GB (reference §3.8). The first four rows are real [PR-B200]; 3g/4g/7g
 * take CE from UG-PROF and derive the rest (memory 2x the smaller rows plus a
 * little, SMs scaled from H100 SXM by 148/132, NVDEC = NVJPG = compute slices). */
static const struct gs_geom_gi_profile b200_180gb_gi[] = {
  R_B200_1G_23GB,
  R_B200_1G_23GBPME,
  R_B200_1G_45GB,
  R_B200_2G_45GB,
  R_B200_3G_90GB,
  R_B200_4G_90GB,
  R_B200_7G_180GB,
};

const struct gs_geom_model gs__geom_b200_180gb = {
  B_B200_180GB,
  .gi = b200_180gb_gi,
  .ngi = GS_NITEMS(b200_180gb_gi),
  .source = "mig-facts §3.8 [PR-B200, UG-PROF, GPUOP]; 3g/4g/7g derived; A100 placements assumed",
  .since = GS_GEOM_DRIVER(570, 124, 6),   /* (assumed: the first R570 release after Jan 2025) */
  .before = &gs__geom_b200_180gb_r570_early,
};

/* ---------------------------------------------------------------------------
 * GB200 186GB (reference §3.9). Production boards print 1g.23gb at 22.00 GiB
 * (mig-parted #227/#228); a pre-production board printed 1g.24gb at 20.00.
 * 3g/4g/7g derived as on B200 (SMs scaled by 38/36). */
static const struct gs_geom_gi_profile gb200_186gb_gi[] = {
  /* [PR-GB200 #227] 22.00 GiB (pre-production: "1g.24gb", 20.00 GiB) */
  {.name = "1g.23gb", .id = 19, .nvml_enum = PROF_1_SLICE, .compute_slices = 1, .span = 1,
   .memory_mib = 22528, .sms = 18, .ce = 2, .dec = 1, .enc = 0, .jpeg = 1, .ofa = 0,
   .max_count = 7, .starts = G8_1G},
  /* [PR-GB200 #227] */
  {.name = "1g.23gb+me", .id = 20, .nvml_enum = PROF_1_SLICE_REV1, .compute_slices = 1,
   .span = 1, .memory_mib = 22528, .sms = 18, .ce = 2, .dec = 1, .enc = 0, .jpeg = 1, .ofa = 1,
   .max_count = 1, .starts = G8_1G, .media = GS_GEOM_MEDIA_ME},
  /* [PR-GB200] 45.50 GiB */
  {.name = "1g.47gb", .id = 15, .nvml_enum = PROF_1_SLICE_REV2, .compute_slices = 1, .span = 2,
   .memory_mib = 46592, .sms = 32, .ce = 2, .dec = 1, .enc = 0, .jpeg = 1, .ofa = 0,
   .max_count = 4, .starts = G8_1G_2X},
  /* [PR-GB200] 45.50 GiB */
  {.name = "2g.47gb", .id = 14, .nvml_enum = PROF_2_SLICE, .compute_slices = 2, .span = 2,
   .memory_mib = 46592, .sms = 38, .ce = 4, .dec = 2, .enc = 0, .jpeg = 2, .ofa = 0,
   .max_count = 3, .starts = G8_2G},
  /* [GPUOP name] (uncertain: derived memory 91.50 GiB, SMs, engines, ID) */
  {.name = "3g.93gb", .id = 9, .nvml_enum = PROF_3_SLICE, .compute_slices = 3, .span = 4,
   .memory_mib = 93696, .sms = 72, .ce = 6, .dec = 3, .enc = 0, .jpeg = 3, .ofa = 0,
   .max_count = 2, .starts = G8_3G},
  /* [GPUOP name] (uncertain: derived memory 91.50 GiB, SMs, engines, ID) */
  {.name = "4g.93gb", .id = 5, .nvml_enum = PROF_4_SLICE, .compute_slices = 4, .span = 4,
   .memory_mib = 93696, .sms = 76, .ce = 8, .dec = 4, .enc = 0, .jpeg = 4, .ofa = 0,
   .max_count = 1, .starts = G8_4G},
  /* [GPUOP name] (uncertain: derived memory 183.50 GiB, SMs, engines, ID) */
  {.name = "7g.186gb", .id = 0, .nvml_enum = PROF_7_SLICE, .compute_slices = 7, .span = 8,
   .memory_mib = 187904, .sms = 152, .ce = 16, .dec = 7, .enc = 0, .jpeg = 7, .ofa = 1,
   .max_count = 1, .starts = G8_7G},
};

const struct gs_geom_model gs__geom_gb200_186gb = {
  .key = "gb200-186gb",
  .name = "NVIDIA GB200",
  .aliases = "gb200",
  .pci_id = 0x294110DE,                   /* [reference §3.9] */
  .arch = GS_GEOM_BLACKWELL,
  .compute_slices = 7,
  .grid = 8,
  .leaf_span = 1,
  .memory_mib = 189471,                   /* (uncertain: not in the reference) */
  .sms = 152,                             /* (uncertain: not in the reference) */
  .swapped_ids = false,                   /* (uncertain: no trace) */
  .gi = gb200_186gb_gi,
  .ngi = GS_NITEMS(gb200_186gb_gi),
  .source = "mig-facts §3.9 [PR-GB200, UG-GPUS, GPUOP]; 3g/4g/7g derived; A100 placements assumed",
  .rev1_ci = true,                        /* (assumed: as GH200 96GB) */
  .mig_since = GS_GEOM_DRIVER(570, 0, 0), /* (assumed: as B200) */
};

/* ---------------------------------------------------------------------------
 * RTX PRO 6000 Blackwell Server Edition 96GB (reference §3.10): 4 compute
 * slices on a 12-unit grid, 3 units per slot. Memory per the 23.62-GiB driver
 * (another driver printed 23.12 / 46.50 / 95.00). */
static const struct gs_geom_gi_profile rtx_pro_6000_gi[] = {
  /* [T-RTX6000] 23.62 GiB -> 23.625 (CUDA saw 24192 MiB) */
  {.name = "1g.24gb", .id = 14, .nvml_enum = PROF_1_SLICE, .compute_slices = 1, .span = 3,
   .memory_mib = 24192, .sms = 46, .ce = 1, .dec = 1, .enc = 1, .jpeg = 1, .ofa = 0,
   .max_count = 4, .starts = G12_1G},
  /* [T-RTX6000] */
  {.name = "1g.24gb+me", .id = 21, .nvml_enum = PROF_1_SLICE_REV1, .compute_slices = 1,
   .span = 3, .memory_mib = 24192, .sms = 46, .ce = 1, .dec = 1, .enc = 1, .jpeg = 1, .ofa = 1,
   .max_count = 1, .starts = G12_1G, .media = GS_GEOM_MEDIA_ME},
  /* [T-RTX6000] (uncertain: enum 0xA matched by name only) */
  {.name = "1g.24gb+gfx", .id = 47, .nvml_enum = PROF_1_SLICE_GFX, .compute_slices = 1,
   .span = 3, .memory_mib = 24192, .sms = 46, .ce = 1, .dec = 1, .enc = 1, .jpeg = 1, .ofa = 0,
   .max_count = 4, .starts = G12_1G, .gfx = true},
  /* [T-RTX6000] (uncertain: enum 0xF matched by name only) */
  {.name = "1g.24gb+me.all", .id = 65, .nvml_enum = PROF_1_SLICE_ALL_ME, .compute_slices = 1,
   .span = 3, .memory_mib = 24192, .sms = 46, .ce = 1, .dec = 4, .enc = 4, .jpeg = 4, .ofa = 1,
   .max_count = 1, .starts = G12_1G, .media = GS_GEOM_MEDIA_ALL},
  /* [T-RTX6000] (uncertain: enum 0xD matched by name only) */
  {.name = "1g.24gb-me", .id = 67, .nvml_enum = PROF_1_SLICE_NO_ME, .compute_slices = 1,
   .span = 3, .memory_mib = 24192, .sms = 46, .ce = 1, .dec = 0, .enc = 0, .jpeg = 0, .ofa = 0,
   .max_count = 4, .starts = G12_1G, .media = GS_GEOM_MEDIA_NONE},
  /* [T-RTX6000] 47.38 GiB -> 47.375 */
  {.name = "2g.48gb", .id = 5, .nvml_enum = PROF_2_SLICE, .compute_slices = 2, .span = 6,
   .memory_mib = 48512, .sms = 94, .ce = 2, .dec = 2, .enc = 2, .jpeg = 2, .ofa = 0,
   .max_count = 2, .starts = G12_2G},
  /* [T-RTX6000] (uncertain: enum 0xB matched by name only) */
  {.name = "2g.48gb+gfx", .id = 35, .nvml_enum = PROF_2_SLICE_GFX, .compute_slices = 2,
   .span = 6, .memory_mib = 48512, .sms = 94, .ce = 2, .dec = 2, .enc = 2, .jpeg = 2, .ofa = 0,
   .max_count = 2, .starts = G12_2G, .gfx = true},
  /* [T-RTX6000] (uncertain: enum 0x10 matched by name only) */
  {.name = "2g.48gb+me.all", .id = 64, .nvml_enum = PROF_2_SLICE_ALL_ME, .compute_slices = 2,
   .span = 6, .memory_mib = 48512, .sms = 94, .ce = 2, .dec = 4, .enc = 4, .jpeg = 4, .ofa = 1,
   .max_count = 1, .starts = G12_2G, .media = GS_GEOM_MEDIA_ALL},
  /* [T-RTX6000] (uncertain: enum 0xE matched by name only) */
  {.name = "2g.48gb-me", .id = 66, .nvml_enum = PROF_2_SLICE_NO_ME, .compute_slices = 2,
   .span = 6, .memory_mib = 48512, .sms = 94, .ce = 2, .dec = 0, .enc = 0, .jpeg = 0, .ofa = 0,
   .max_count = 2, .starts = G12_2G, .media = GS_GEOM_MEDIA_NONE},
  /* [T-RTX6000] 95.12 GiB -> 95.125 */
  {.name = "4g.96gb", .id = 0, .nvml_enum = PROF_4_SLICE, .compute_slices = 4, .span = 12,
   .memory_mib = 97408, .sms = 188, .ce = 4, .dec = 4, .enc = 4, .jpeg = 4, .ofa = 1,
   .max_count = 1, .starts = G12_4G},
  /* [T-RTX6000] (uncertain: enum 0xC matched by name only) */
  {.name = "4g.96gb+gfx", .id = 32, .nvml_enum = PROF_4_SLICE_GFX, .compute_slices = 4,
   .span = 12, .memory_mib = 97408, .sms = 188, .ce = 4, .dec = 4, .enc = 4, .jpeg = 4, .ofa = 1,
   .max_count = 1, .starts = G12_4G, .gfx = true},
};

const struct gs_geom_model gs__geom_rtx_pro_6000 = {
  .key = "rtx-pro-6000",
  .name = "NVIDIA RTX PRO 6000 Blackwell Server Edition",
  .aliases = "rtx-pro-6000-96gb,rtx-pro-6000-server",
  .pci_id = 0x2BB510DE,                   /* [GPUOP] */
  .arch = GS_GEOM_BLACKWELL,
  .compute_slices = 4,
  .grid = 12,
  .leaf_span = 3,
  .memory_mib = 97887,                    /* [cubecos#312 nvidia-smi, driver 580.105.06] */
  .sms = 188,                             /* [reference §3.10: 188 SMs in 4g] */
  .swapped_ids = false,                   /* [§8.1: 2g@0:6 = 1; 1g@0,3,6,9 = 3,4,5,6] */
  .gi = rtx_pro_6000_gi,
  .ngi = GS_NITEMS(rtx_pro_6000_gi),
  .source = "mig-facts §3.10 [T-RTX6000, UG-PROF, UG-GS, GPUOP]",
  .auto_from_left = true,                 /* [fidelity rtx-pro-6000-cgi-*] */
  .mig_since = GS_GEOM_DRIVER(575, 0, 0), /* [UG-DEPL 620] */
};

/* ------------------------------------------------------------------------ */

/* Every model; the first is the emulator's default GPU (DESIGN.md). */
static const struct gs_geom_model *const models[] = {
  &gs__geom_a100_40gb,  &gs__geom_a100_80gb,     &gs__geom_a30_24gb,     &gs__geom_h100_80gb,
  &gs__geom_h100_pcie_80gb, &gs__geom_h100_nvl_94gb, &gs__geom_h100_96gb, &gs__geom_h20_96gb,
  &gs__geom_h200_141gb, &gs__geom_gh200_144gb,    &gs__geom_b200_180gb,   &gs__geom_gb200_186gb,
  &gs__geom_rtx_pro_6000,
};

const struct gs_geom_model *const *gs_geom_models(unsigned *count)
{
  if (count)
    *count = GS_NITEMS(models);
  return models;
}
