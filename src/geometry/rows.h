/* SPDX-License-Identifier: Apache-2.0 */
/* rows.h: the GPU-instance profile rows that more than one driver's table
 * of a model shares (models.c holds the newest tables, eras.c the older
 * drivers'). One row of `nvidia-smi mig -lgip` plus its -lgipp placements
 * each, with its source as in models.c; internal to geometry/. */
#ifndef GS_GEOMETRY_ROWS_H
#define GS_GEOMETRY_ROWS_H

#include "geometry/internal.h"

/* NVML_GPU_INSTANCE_PROFILE_* values (reference §2.1): the enum passed into
 * nvmlDeviceGetGpuInstanceProfileInfo, not the per-device profile ID. */
enum {
  PROF_1_SLICE = 0x0,
  PROF_2_SLICE = 0x1,
  PROF_3_SLICE = 0x2,
  PROF_4_SLICE = 0x3,
  PROF_7_SLICE = 0x4,
  PROF_1_SLICE_REV1 = 0x7,    /* +me */
  PROF_2_SLICE_REV1 = 0x8,    /* +me on 2g (A30) */
  PROF_1_SLICE_REV2 = 0x9,    /* 1g with twice the memory */
  PROF_1_SLICE_GFX = 0xA,
  PROF_2_SLICE_GFX = 0xB,
  PROF_4_SLICE_GFX = 0xC,
  PROF_1_SLICE_NO_ME = 0xD,
  PROF_2_SLICE_NO_ME = 0xE,
  PROF_1_SLICE_ALL_ME = 0xF,
  PROF_2_SLICE_ALL_ME = 0x10,
};

#define AT(unit) (1u << (unit))

/* -lgipp placements of the 8-unit family (A100/H100 and kin, reference §1.2). */
#define G8_1G (AT(0) | AT(1) | AT(2) | AT(3) | AT(4) | AT(5) | AT(6)) /* {0..6}:1 */
#define G8_1G_2X (AT(0) | AT(2) | AT(4) | AT(6))                      /* {0,2,4,6}:2 */
#define G8_2G (AT(0) | AT(2) | AT(4))                                 /* {0,2,4}:2 */
#define G8_3G (AT(0) | AT(4))                                         /* {0,4}:4 */
#define G8_4G AT(0)                                                   /* {0}:4 */
#define G8_7G AT(0)                                                   /* {0}:8 */
/* A30: 4 units [T-A30]. */
#define G4_1G (AT(0) | AT(1) | AT(2) | AT(3)) /* {0,1,2,3}:1 */
#define G4_2G (AT(0) | AT(2))                 /* {0,2}:2 */
#define G4_4G AT(0)                           /* {0}:4 */
/* RTX PRO 6000: 12 units, 3 per slot [T-RTX6000]. */
#define G12_1G (AT(0) | AT(3) | AT(6) | AT(9)) /* {0,3,6,9}:3 */
#define G12_2G (AT(0) | AT(6))                 /* {0,6}:6 */
#define G12_4G AT(0)                           /* {0}:12 */

/* [UG-GS -lgip/-lgipp; UG-PROF; MOCK] 4.75 GiB */
#define R_A100_40GB_1G_5GB \
  {.name = "1g.5gb", .id = 19, .nvml_enum = PROF_1_SLICE, .compute_slices = 1, .span = 1, \
  .memory_mib = 4864, .sms = 14, .ce = 1, .dec = 0, .enc = 0, .jpeg = 0, .ofa = 0, \
  .max_count = 7, .starts = G8_1G}

/* [UG-GS; UG-PROF] needs R470+ */
#define R_A100_40GB_1G_5GBPME \
  {.name = "1g.5gb+me", .id = 20, .nvml_enum = PROF_1_SLICE_REV1, .compute_slices = 1, .span = 1, \
  .memory_mib = 4864, .sms = 14, .ce = 1, .dec = 1, .enc = 0, .jpeg = 1, .ofa = 1, \
  .max_count = 1, .starts = G8_1G, .media = GS_GEOM_MEDIA_ME}

/* [UG-GS; UG-PROF; MOCK] 9.62 GiB = 9.625; needs R525+ */
#define R_A100_40GB_1G_10GB \
  {.name = "1g.10gb", .id = 15, .nvml_enum = PROF_1_SLICE_REV2, .compute_slices = 1, .span = 2, \
  .memory_mib = 9856, .sms = 14, .ce = 1, .dec = 1, .enc = 0, .jpeg = 0, .ofa = 0, \
  .max_count = 4, .starts = G8_1G_2X}

/* [UG-GS; MOCK] 9.62 GiB */
#define R_A100_40GB_2G_10GB \
  {.name = "2g.10gb", .id = 14, .nvml_enum = PROF_2_SLICE, .compute_slices = 2, .span = 2, \
  .memory_mib = 9856, .sms = 28, .ce = 2, .dec = 1, .enc = 0, .jpeg = 0, .ofa = 0, \
  .max_count = 3, .starts = G8_2G}

/* [UG-GS; MOCK] 19.50 GiB */
#define R_A100_40GB_3G_20GB \
  {.name = "3g.20gb", .id = 9, .nvml_enum = PROF_3_SLICE, .compute_slices = 3, .span = 4, \
  .memory_mib = 19968, .sms = 42, .ce = 3, .dec = 2, .enc = 0, .jpeg = 0, .ofa = 0, \
  .max_count = 2, .starts = G8_3G}

/* [UG-GS; MOCK] 19.50 GiB */
#define R_A100_40GB_4G_20GB \
  {.name = "4g.20gb", .id = 5, .nvml_enum = PROF_4_SLICE, .compute_slices = 4, .span = 4, \
  .memory_mib = 19968, .sms = 56, .ce = 4, .dec = 2, .enc = 0, .jpeg = 0, .ofa = 0, \
  .max_count = 1, .starts = G8_4G}

/* [UG-GS; MOCK] 39.25 GiB */
#define R_A100_40GB_7G_40GB \
  {.name = "7g.40gb", .id = 0, .nvml_enum = PROF_7_SLICE, .compute_slices = 7, .span = 8, \
  .memory_mib = 40192, .sms = 98, .ce = 7, .dec = 5, .enc = 0, .jpeg = 1, .ofa = 1, \
  .max_count = 1, .starts = G8_7G}

/* [T-A100-80] 9.50 GiB, DEC 0 (the go-nvml mock says 9856/DEC 1: driver-dependent) */
#define R_A100_80GB_1G_10GB \
  {.name = "1g.10gb", .id = 19, .nvml_enum = PROF_1_SLICE, .compute_slices = 1, .span = 1, \
  .memory_mib = 9728, .sms = 14, .ce = 1, .dec = 0, .enc = 0, .jpeg = 0, .ofa = 0, \
  .max_count = 7, .starts = G8_1G}

/* [T-A100-80] 9.50 GiB */
#define R_A100_80GB_1G_10GBPME \
  {.name = "1g.10gb+me", .id = 20, .nvml_enum = PROF_1_SLICE_REV1, .compute_slices = 1, \
  .span = 1, .memory_mib = 9728, .sms = 14, .ce = 1, .dec = 1, .enc = 0, .jpeg = 1, .ofa = 1, \
  .max_count = 1, .starts = G8_1G, .media = GS_GEOM_MEDIA_ME}

/* [T-A100-80] 19.50 GiB */
#define R_A100_80GB_1G_20GB \
  {.name = "1g.20gb", .id = 15, .nvml_enum = PROF_1_SLICE_REV2, .compute_slices = 1, .span = 2, \
  .memory_mib = 19968, .sms = 14, .ce = 1, .dec = 1, .enc = 0, .jpeg = 0, .ofa = 0, \
  .max_count = 4, .starts = G8_1G_2X}

/* [T-A100-80] 19.50 GiB */
#define R_A100_80GB_2G_20GB \
  {.name = "2g.20gb", .id = 14, .nvml_enum = PROF_2_SLICE, .compute_slices = 2, .span = 2, \
  .memory_mib = 19968, .sms = 28, .ce = 2, .dec = 1, .enc = 0, .jpeg = 0, .ofa = 0, \
  .max_count = 3, .starts = G8_2G}

/* [T-A100-80] 39.25 GiB (named "3g.39gb" by drivers 535/545 [ISS-39]) */
#define R_A100_80GB_3G_40GB \
  {.name = "3g.40gb", .id = 9, .nvml_enum = PROF_3_SLICE, .compute_slices = 3, .span = 4, \
  .memory_mib = 40192, .sms = 42, .ce = 3, .dec = 2, .enc = 0, .jpeg = 0, .ofa = 0, \
  .max_count = 2, .starts = G8_3G}

/* [T-A100-80] 39.25 GiB */
#define R_A100_80GB_4G_40GB \
  {.name = "4g.40gb", .id = 5, .nvml_enum = PROF_4_SLICE, .compute_slices = 4, .span = 4, \
  .memory_mib = 40192, .sms = 56, .ce = 4, .dec = 2, .enc = 0, .jpeg = 0, .ofa = 0, \
  .max_count = 1, .starts = G8_4G}

/* [T-A100-80] 79.00 GiB */
#define R_A100_80GB_7G_80GB \
  {.name = "7g.80gb", .id = 0, .nvml_enum = PROF_7_SLICE, .compute_slices = 7, .span = 8, \
  .memory_mib = 80896, .sms = 98, .ce = 7, .dec = 5, .enc = 0, .jpeg = 1, .ofa = 1, \
  .max_count = 1, .starts = G8_7G}

/* [T-A30] 5.81 GiB; DEC 1 per the driver (UG says 0) */
#define R_A30_1G_6GB \
  {.name = "1g.6gb", .id = 14, .nvml_enum = PROF_1_SLICE, .compute_slices = 1, .span = 1, \
  .memory_mib = 5952, .sms = 14, .ce = 1, .dec = 1, .enc = 0, .jpeg = 0, .ofa = 0, \
  .max_count = 4, .starts = G4_1G}

/* [T-A30; UG-PROF] */
#define R_A30_1G_6GBPME \
  {.name = "1g.6gb+me", .id = 21, .nvml_enum = PROF_1_SLICE_REV1, .compute_slices = 1, .span = 1, \
  .memory_mib = 5952, .sms = 14, .ce = 1, .dec = 1, .enc = 0, .jpeg = 1, .ofa = 1, \
  .max_count = 1, .starts = G4_1G, .media = GS_GEOM_MEDIA_ME}

/* [T-A30] 11.69 GiB */
#define R_A30_2G_12GB \
  {.name = "2g.12gb", .id = 5, .nvml_enum = PROF_2_SLICE, .compute_slices = 2, .span = 2, \
  .memory_mib = 11968, .sms = 28, .ce = 2, .dec = 2, .enc = 0, .jpeg = 0, .ofa = 0, \
  .max_count = 2, .starts = G4_2G}

/* [T-A30; UG-PROF] needs R525+ */
#define R_A30_2G_12GBPME \
  {.name = "2g.12gb+me", .id = 6, .nvml_enum = PROF_2_SLICE_REV1, .compute_slices = 2, .span = 2, \
  .memory_mib = 11968, .sms = 28, .ce = 2, .dec = 2, .enc = 0, .jpeg = 1, .ofa = 1, \
  .max_count = 1, .starts = G4_2G, .media = GS_GEOM_MEDIA_ME}

/* [T-A30] 23.44 GiB (uncertain: 24000 MiB derived; no multiple of 128 prints 23.44) */
#define R_A30_4G_24GB \
  {.name = "4g.24gb", .id = 0, .nvml_enum = PROF_4_SLICE, .compute_slices = 4, .span = 4, \
  .memory_mib = 24000, .sms = 56, .ce = 4, .dec = 4, .enc = 0, .jpeg = 1, .ofa = 1, \
  .max_count = 1, .starts = G4_4G}

/* [PR-B200 Mar 2025] 20.50 GiB (Jan 2025 driver: 22.00; uncertain: driver-dependent) */
#define R_B200_1G_23GB \
  {.name = "1g.23gb", .id = 19, .nvml_enum = PROF_1_SLICE, .compute_slices = 1, .span = 1, \
  .memory_mib = 20992, .sms = 18, .ce = 2, .dec = 1, .enc = 0, .jpeg = 1, .ofa = 0, \
  .max_count = 7, .starts = G8_1G}

/* [PR-B200] 20.50 GiB (uncertain: driver-dependent) */
#define R_B200_1G_23GBPME \
  {.name = "1g.23gb+me", .id = 20, .nvml_enum = PROF_1_SLICE_REV1, .compute_slices = 1, \
  .span = 1, .memory_mib = 20992, .sms = 18, .ce = 2, .dec = 1, .enc = 0, .jpeg = 1, .ofa = 1, \
  .max_count = 1, .starts = G8_1G, .media = GS_GEOM_MEDIA_ME}

/* [PR-B200] 44.25 GiB */
#define R_B200_1G_45GB \
  {.name = "1g.45gb", .id = 15, .nvml_enum = PROF_1_SLICE_REV2, .compute_slices = 1, .span = 2, \
  .memory_mib = 45312, .sms = 30, .ce = 2, .dec = 1, .enc = 0, .jpeg = 1, .ofa = 0, \
  .max_count = 4, .starts = G8_1G_2X}

/* [PR-B200] 44.25 GiB; DEC 2 / JPEG 2 / CE 4 per the driver (UG says 1/1/3) */
#define R_B200_2G_45GB \
  {.name = "2g.45gb", .id = 14, .nvml_enum = PROF_2_SLICE, .compute_slices = 2, .span = 2, \
  .memory_mib = 45312, .sms = 36, .ce = 4, .dec = 2, .enc = 0, .jpeg = 2, .ofa = 0, \
  .max_count = 3, .starts = G8_2G}

/* [UG-PROF CE 6] (uncertain: derived memory 89.00 GiB, SMs, DEC/JPEG, ID) */
#define R_B200_3G_90GB \
  {.name = "3g.90gb", .id = 9, .nvml_enum = PROF_3_SLICE, .compute_slices = 3, .span = 4, \
  .memory_mib = 91136, .sms = 68, .ce = 6, .dec = 3, .enc = 0, .jpeg = 3, .ofa = 0, \
  .max_count = 2, .starts = G8_3G}

/* [UG-PROF CE 8; PR-B200 #187] (uncertain: derived memory 89.00 GiB, SMs, DEC/JPEG, ID) */
#define R_B200_4G_90GB \
  {.name = "4g.90gb", .id = 5, .nvml_enum = PROF_4_SLICE, .compute_slices = 4, .span = 4, \
  .memory_mib = 91136, .sms = 72, .ce = 8, .dec = 4, .enc = 0, .jpeg = 4, .ofa = 0, \
  .max_count = 1, .starts = G8_4G}

/* [UG-PROF CE 16] (uncertain: derived memory 178.25 GiB, SMs, DEC/JPEG, ID) */
#define R_B200_7G_180GB \
  {.name = "7g.180gb", .id = 0, .nvml_enum = PROF_7_SLICE, .compute_slices = 7, .span = 8, \
  .memory_mib = 182528, .sms = 148, .ce = 16, .dec = 7, .enc = 0, .jpeg = 7, .ofa = 1, \
  .max_count = 1, .starts = G8_7G}

/* The board fields every driver's table of a100_40gb shares. */
#define B_A100_40GB \
  .key = "a100-40gb", \
  .name = "NVIDIA A100-SXM4-40GB", \
  .aliases = "a100-sxm4-40gb", /* not "a100": it is a100-80gb's too (gs_geom_model_hint) */ \
  .pci_id = 0x20B010DE,                   /* [GPUOP; MOCK] */ \
  .arch = GS_GEOM_AMPERE, \
  .compute_slices = 7, \
  .grid = 8, \
  .leaf_span = 1, \
  .memory_mib = 40537,                    /* [UG-GS concepts example] */ \
  .sms = 108,                             /* [reference §3.1] */ \
  .swapped_ids = true,                    /* [T-ALL1G; T-MIXED; UG-GS Example 1] */ \
  .mig_since = GS_GEOM_DRIVER(450, 0, 0) /* [UG-DEPL: MIG since R450] */

/* The board fields every driver's table of a100_80gb shares. */
#define B_A100_80GB \
  .key = "a100-80gb", \
  .name = "NVIDIA A100-SXM4-80GB", \
  .aliases = "a100-sxm4-80gb", \
  .pci_id = 0x20B210DE,                   /* [GPUOP; MOCK] */ \
  .arch = GS_GEOM_AMPERE, \
  .compute_slices = 7, \
  .grid = 8, \
  .leaf_span = 1, \
  .memory_mib = 81920,                    /* (uncertain: not in the reference; nvidia-smi total) */ \
  .sms = 108, \
  .swapped_ids = true,                    /* [T-ALL1G; T-A100-80 driver 550] */ \
  .mig_since = GS_GEOM_DRIVER(450, 0, 0) /* (assumed: as A100-40GB) */

/* The board fields every driver's table of a30_24gb shares. */
#define B_A30_24GB \
  .key = "a30-24gb", \
  .name = "NVIDIA A30", \
  .aliases = "a30", \
  .pci_id = 0x20B710DE,                   /* [reference §3.3] */ \
  .arch = GS_GEOM_AMPERE, \
  .compute_slices = 4, \
  .grid = 4, \
  .leaf_span = 1, \
  .memory_mib = 24576,                    /* (uncertain: not in the reference) */ \
  .sms = 56,                              /* [UG-GPUS; T-A30] */ \
  .swapped_ids = false,                   /* [T-A30: 1g@0 = 3, 2g@2:2 = 2] */ \
  .auto_from_left = true,                 /* [T-A30; fidelity a30-cgi-sequence] */ \
  .mig_since = GS_GEOM_DRIVER(460, 0, 0) /* (assumed: the A30 shipped with R460) */

/* The board fields every driver's table of h100_80gb shares. */
#define B_H100_80GB \
  .key = "h100-80gb", \
  .name = "NVIDIA H100 80GB HBM3", \
  .aliases = "h100-sxm,h100-sxm5-80gb", /* not "h100": four models start so */ \
  .pci_id = 0x233010DE,                   /* [MOCK; GPUOP group] */ \
  .arch = GS_GEOM_HOPPER, \
  .compute_slices = 7, \
  .grid = 8, \
  .leaf_span = 1, \
  .memory_mib = 81559,                    /* [UG-GS] */ \
  .sms = 132, \
  .swapped_ids = false,                   /* [§8.1: H100 SXM 3g@4:4 = 2, 2g@0:2 = 3] */ \
  .rev1_ci = true,                        /* (assumed: as GH200 96GB) */ \
  .mig_since = GS_GEOM_DRIVER(525, 85, 12) /* [UG-DEPL 620] */

/* The board fields every driver's table of h100_pcie_80gb shares. */
#define B_H100_PCIE_80GB \
  .key = "h100-pcie-80gb", \
  .name = "NVIDIA H100 PCIe", \
  .aliases = "h100-pcie", \
  .pci_id = 0x233110DE,                   /* [OGKM: NVIDIA H100 PCIe 2331 10DE 1626] */ \
  .arch = GS_GEOM_HOPPER, \
  .compute_slices = 7, \
  .grid = 8, \
  .leaf_span = 1, \
  .memory_mib = 81559,                    /* (uncertain: assumed as on SXM) */ \
  .sms = 114,                             /* [T-H100P: 7g has 114] */ \
  .swapped_ids = true,                    /* [T-H100P: 7x1g -> 7,8,9,11,12,13,14] */ \
  .mig_since = GS_GEOM_DRIVER(525, 85, 12) /* [UG-DEPL 620] */

/* The board fields every driver's table of h100_nvl_94gb shares. */
#define B_H100_NVL_94GB \
  .key = "h100-nvl-94gb", \
  .name = "NVIDIA H100 NVL", \
  .aliases = "h100-nvl,h100-94gb", \
  .pci_id = 0x232110DE,                   /* [GPUOP] */ \
  .arch = GS_GEOM_HOPPER, \
  .compute_slices = 7, \
  .grid = 8, \
  .leaf_span = 1, \
  .memory_mib = 95830,                    /* (uncertain: not in the reference; nvidia-smi total) */ \
  .sms = 132, \
  .swapped_ids = false,                   /* (uncertain: no trace) */ \
  .rev1_ci = true,                        /* (assumed: as GH200 96GB) */ \
  .mig_since = GS_GEOM_DRIVER(525, 85, 12) /* (assumed: as H100) */

/* The board fields every driver's table of b200_180gb shares. */
#define B_B200_180GB \
  .key = "b200-180gb", \
  .name = "NVIDIA B200", \
  .aliases = "b200", \
  .pci_id = 0x290110DE,                   /* [GPUOP; PR-B200] (the mock's 0x2B00 disagrees) */ \
  .arch = GS_GEOM_BLACKWELL, \
  .compute_slices = 7, \
  .grid = 8, \
  .leaf_span = 1, \
  .memory_mib = 183359,                   /* (uncertain: not in the reference; nvidia-smi total) */ \
  .sms = 148,                             /* (uncertain: not in the reference; CUDA SM count) */ \
  .swapped_ids = false,                   /* (uncertain: no trace) */ \
  .rev1_ci = true,                        /* (assumed: as GH200 96GB) */ \
  .mig_since = GS_GEOM_DRIVER(570, 0, 0) /* [PR-B200: MIG on an R570 driver in Jan 2025] */

#endif
