/* models.c: the static tables of every MIG-capable GPU model: one array of
 * GPU-instance profiles per model (a row of `nvidia-smi mig -lgip` plus its
 * `-lgipp` placements) and one model record. Pure data; the rules that use it
 * live in geometry.c. Tags such as [UG-GS] name sources in
 * shared/reference/mig-facts.md; docs/models.md lists what is uncertain. */

#include "geometry/geometry.h"

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

/* ---------------------------------------------------------------------------
 * A100-SXM4-40GB (reference §3.1). */
static const struct gs_geom_gi_profile a100_40gb_gi[] = {
  /* [UG-GS -lgip/-lgipp; UG-PROF; MOCK] 4.75 GiB */
  {.name = "1g.5gb", .id = 19, .nvml_enum = PROF_1_SLICE, .compute_slices = 1, .span = 1,
   .memory_mib = 4864, .sms = 14, .ce = 1, .dec = 0, .enc = 0, .jpeg = 0, .ofa = 0,
   .max_count = 7, .starts = G8_1G},
  /* [UG-GS; UG-PROF] needs R470+ */
  {.name = "1g.5gb+me", .id = 20, .nvml_enum = PROF_1_SLICE_REV1, .compute_slices = 1, .span = 1,
   .memory_mib = 4864, .sms = 14, .ce = 1, .dec = 1, .enc = 0, .jpeg = 1, .ofa = 1,
   .max_count = 1, .starts = G8_1G, .media = GS_GEOM_MEDIA_ME},
  /* [UG-GS; UG-PROF; MOCK] 9.62 GiB = 9.625; needs R525+ */
  {.name = "1g.10gb", .id = 15, .nvml_enum = PROF_1_SLICE_REV2, .compute_slices = 1, .span = 2,
   .memory_mib = 9856, .sms = 14, .ce = 1, .dec = 1, .enc = 0, .jpeg = 0, .ofa = 0,
   .max_count = 4, .starts = G8_1G_2X},
  /* [UG-GS; MOCK] 9.62 GiB */
  {.name = "2g.10gb", .id = 14, .nvml_enum = PROF_2_SLICE, .compute_slices = 2, .span = 2,
   .memory_mib = 9856, .sms = 28, .ce = 2, .dec = 1, .enc = 0, .jpeg = 0, .ofa = 0,
   .max_count = 3, .starts = G8_2G},
  /* [UG-GS; MOCK] 19.50 GiB */
  {.name = "3g.20gb", .id = 9, .nvml_enum = PROF_3_SLICE, .compute_slices = 3, .span = 4,
   .memory_mib = 19968, .sms = 42, .ce = 3, .dec = 2, .enc = 0, .jpeg = 0, .ofa = 0,
   .max_count = 2, .starts = G8_3G},
  /* [UG-GS; MOCK] 19.50 GiB */
  {.name = "4g.20gb", .id = 5, .nvml_enum = PROF_4_SLICE, .compute_slices = 4, .span = 4,
   .memory_mib = 19968, .sms = 56, .ce = 4, .dec = 2, .enc = 0, .jpeg = 0, .ofa = 0,
   .max_count = 1, .starts = G8_4G},
  /* [UG-GS; MOCK] 39.25 GiB */
  {.name = "7g.40gb", .id = 0, .nvml_enum = PROF_7_SLICE, .compute_slices = 7, .span = 8,
   .memory_mib = 40192, .sms = 98, .ce = 7, .dec = 5, .enc = 0, .jpeg = 1, .ofa = 1,
   .max_count = 1, .starts = G8_7G},
};

static const struct gs_geom_model a100_40gb = {
  .key = "a100-40gb",
  .name = "NVIDIA A100-SXM4-40GB",
  /* A800-40GB: same tables [reference §3.1; GPUOP groups it with A100-40GB] */
  .aliases = "a100,a100-sxm4-40gb,a100-pcie-40gb,a800-40gb,a800-sxm4-40gb,a800-pcie-40gb",
  .pci_id = 0x20B010DE,                   /* [GPUOP; MOCK] */
  .arch = GS_GEOM_AMPERE,
  .compute_slices = 7,
  .grid = 8,
  .leaf_span = 1,
  .memory_mib = 40537,                    /* [UG-GS concepts example] */
  .sms = 108,                             /* [reference §3.1] */
  .swapped_ids = true,                    /* [T-ALL1G; T-MIXED; UG-GS Example 1] */
  .gi = a100_40gb_gi,
  .ngi = GS_NITEMS(a100_40gb_gi),
  .source = "mig-facts §3.1 [UG-GS, UG-PROF, MOCK, GPUOP, T-ALL1G, T-MIXED]",
};

/* ---------------------------------------------------------------------------
 * A100-SXM4-80GB (reference §3.2). Engines CE/JPEG/OFA as on the 40 GB part
 * (uncertain: assumed equal to A100-40GB); ENC 0 (A100 has no NVENC). */
static const struct gs_geom_gi_profile a100_80gb_gi[] = {
  /* [T-A100-80] 9.50 GiB, DEC 0 (the go-nvml mock says 9856/DEC 1: driver-dependent) */
  {.name = "1g.10gb", .id = 19, .nvml_enum = PROF_1_SLICE, .compute_slices = 1, .span = 1,
   .memory_mib = 9728, .sms = 14, .ce = 1, .dec = 0, .enc = 0, .jpeg = 0, .ofa = 0,
   .max_count = 7, .starts = G8_1G},
  /* [T-A100-80] 9.50 GiB */
  {.name = "1g.10gb+me", .id = 20, .nvml_enum = PROF_1_SLICE_REV1, .compute_slices = 1,
   .span = 1, .memory_mib = 9728, .sms = 14, .ce = 1, .dec = 1, .enc = 0, .jpeg = 1, .ofa = 1,
   .max_count = 1, .starts = G8_1G, .media = GS_GEOM_MEDIA_ME},
  /* [T-A100-80] 19.50 GiB */
  {.name = "1g.20gb", .id = 15, .nvml_enum = PROF_1_SLICE_REV2, .compute_slices = 1, .span = 2,
   .memory_mib = 19968, .sms = 14, .ce = 1, .dec = 1, .enc = 0, .jpeg = 0, .ofa = 0,
   .max_count = 4, .starts = G8_1G_2X},
  /* [T-A100-80] 19.50 GiB */
  {.name = "2g.20gb", .id = 14, .nvml_enum = PROF_2_SLICE, .compute_slices = 2, .span = 2,
   .memory_mib = 19968, .sms = 28, .ce = 2, .dec = 1, .enc = 0, .jpeg = 0, .ofa = 0,
   .max_count = 3, .starts = G8_2G},
  /* [T-A100-80] 39.25 GiB (named "3g.39gb" by drivers 535/545 [ISS-39]) */
  {.name = "3g.40gb", .id = 9, .nvml_enum = PROF_3_SLICE, .compute_slices = 3, .span = 4,
   .memory_mib = 40192, .sms = 42, .ce = 3, .dec = 2, .enc = 0, .jpeg = 0, .ofa = 0,
   .max_count = 2, .starts = G8_3G},
  /* [T-A100-80] 39.25 GiB */
  {.name = "4g.40gb", .id = 5, .nvml_enum = PROF_4_SLICE, .compute_slices = 4, .span = 4,
   .memory_mib = 40192, .sms = 56, .ce = 4, .dec = 2, .enc = 0, .jpeg = 0, .ofa = 0,
   .max_count = 1, .starts = G8_4G},
  /* [T-A100-80] 79.00 GiB */
  {.name = "7g.80gb", .id = 0, .nvml_enum = PROF_7_SLICE, .compute_slices = 7, .span = 8,
   .memory_mib = 80896, .sms = 98, .ce = 7, .dec = 5, .enc = 0, .jpeg = 1, .ofa = 1,
   .max_count = 1, .starts = G8_7G},
};

static const struct gs_geom_model a100_80gb = {
  .key = "a100-80gb",
  .name = "NVIDIA A100-SXM4-80GB",
  /* A800-80GB: same tables [reference §3.2; GPUOP] */
  .aliases = "a100-sxm4-80gb,a100-pcie-80gb,a100 80gb pcie,a800-80gb,a800-sxm4-80gb,a800-pcie-80gb,"
             "a800 80gb pcie",
  .pci_id = 0x20B210DE,                   /* [GPUOP; MOCK] */
  .arch = GS_GEOM_AMPERE,
  .compute_slices = 7,
  .grid = 8,
  .leaf_span = 1,
  .memory_mib = 81920,                    /* (uncertain: not in the reference; nvidia-smi total) */
  .sms = 108,
  .swapped_ids = true,                    /* [T-ALL1G; T-A100-80 driver 550] */
  .gi = a100_80gb_gi,
  .ngi = GS_NITEMS(a100_80gb_gi),
  .source = "mig-facts §3.2 [T-A100-80, UG-PROF, GPUOP, T-ALL1G, ISS-39]",
};

/* ---------------------------------------------------------------------------
 * A30-24GB (reference §3.3): 4 compute slices on a 4-unit grid. Memory is the
 * MIG device total the driver showed (5952/11968 MiB: multiples of 64, not 128). */
static const struct gs_geom_gi_profile a30_24gb_gi[] = {
  /* [T-A30] 5.81 GiB; DEC 1 per the driver (UG says 0) */
  {.name = "1g.6gb", .id = 14, .nvml_enum = PROF_1_SLICE, .compute_slices = 1, .span = 1,
   .memory_mib = 5952, .sms = 14, .ce = 1, .dec = 1, .enc = 0, .jpeg = 0, .ofa = 0,
   .max_count = 4, .starts = G4_1G},
  /* [T-A30; UG-PROF] */
  {.name = "1g.6gb+me", .id = 21, .nvml_enum = PROF_1_SLICE_REV1, .compute_slices = 1, .span = 1,
   .memory_mib = 5952, .sms = 14, .ce = 1, .dec = 1, .enc = 0, .jpeg = 1, .ofa = 1,
   .max_count = 1, .starts = G4_1G, .media = GS_GEOM_MEDIA_ME},
  /* [T-A30] 11.69 GiB */
  {.name = "2g.12gb", .id = 5, .nvml_enum = PROF_2_SLICE, .compute_slices = 2, .span = 2,
   .memory_mib = 11968, .sms = 28, .ce = 2, .dec = 2, .enc = 0, .jpeg = 0, .ofa = 0,
   .max_count = 2, .starts = G4_2G},
  /* [T-A30; UG-PROF] needs R525+ */
  {.name = "2g.12gb+me", .id = 6, .nvml_enum = PROF_2_SLICE_REV1, .compute_slices = 2, .span = 2,
   .memory_mib = 11968, .sms = 28, .ce = 2, .dec = 2, .enc = 0, .jpeg = 1, .ofa = 1,
   .max_count = 1, .starts = G4_2G, .media = GS_GEOM_MEDIA_ME},
  /* [T-A30] 23.44 GiB (uncertain: 24000 MiB derived; no multiple of 128 prints 23.44) */
  {.name = "4g.24gb", .id = 0, .nvml_enum = PROF_4_SLICE, .compute_slices = 4, .span = 4,
   .memory_mib = 24000, .sms = 56, .ce = 4, .dec = 4, .enc = 0, .jpeg = 1, .ofa = 1,
   .max_count = 1, .starts = G4_4G},
};

static const struct gs_geom_model a30_24gb = {
  .key = "a30-24gb",
  .name = "NVIDIA A30",
  .aliases = "a30",
  .pci_id = 0x20B710DE,                   /* [reference §3.3] */
  .arch = GS_GEOM_AMPERE,
  .compute_slices = 4,
  .grid = 4,
  .leaf_span = 1,
  .memory_mib = 24576,                    /* (uncertain: not in the reference) */
  .sms = 56,                              /* [UG-GPUS; T-A30] */
  .swapped_ids = false,                   /* [T-A30: 1g@0 = 3, 2g@2:2 = 2] */
  .gi = a30_24gb_gi,
  .ngi = GS_NITEMS(a30_24gb_gi),
  .source = "mig-facts §3.3 [T-A30, UG-PROF, UG-GPUS]",
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

static const struct gs_geom_model h100_80gb = {
  .key = "h100-80gb",
  .name = "NVIDIA H100 80GB HBM3",
  /* H800 (SXM): same tables [reference §3.4 title] (assumed: SXM SM counts) */
  .aliases = "h100,h100-sxm,h100-sxm5-80gb,h800,h800-80gb,h800-sxm5-80gb",
  .pci_id = 0x233010DE,                   /* [MOCK; GPUOP group] */
  .arch = GS_GEOM_HOPPER,
  .compute_slices = 7,
  .grid = 8,
  .leaf_span = 1,
  .memory_mib = 81559,                    /* [UG-GS] */
  .sms = 132,
  .swapped_ids = false,                   /* [§8.1: H100 SXM 3g@4:4 = 2, 2g@0:2 = 3] */
  .gi = h100_80gb_gi,
  .ngi = GS_NITEMS(h100_80gb_gi),
  .source = "mig-facts §3.4 [T-H100S, UG-PROF, UG-GS, MOCK, GPUOP]",
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

static const struct gs_geom_model h100_pcie_80gb = {
  .key = "h100-pcie-80gb",
  .name = "NVIDIA H100 PCIe",
  .aliases = "h100-pcie,h800-pcie,h800-pcie-80gb", /* H800 PCIe: (assumed) as H100 PCIe */
  .pci_id = 0x233110DE,                   /* (uncertain: PCIe id not named in the reference) */
  .arch = GS_GEOM_HOPPER,
  .compute_slices = 7,
  .grid = 8,
  .leaf_span = 1,
  .memory_mib = 81559,                    /* (uncertain: assumed as on SXM) */
  .sms = 114,                             /* [T-H100P: 7g has 114] */
  .swapped_ids = true,                    /* [T-H100P: 7x1g -> 7,8,9,11,12,13,14] */
  .gi = h100_pcie_80gb_gi,
  .ngi = GS_NITEMS(h100_pcie_80gb_gi),
  .source = "mig-facts §3.4 [T-H100P, UG-PROF, GPUOP]",
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

static const struct gs_geom_model h100_nvl_94gb = {
  .key = "h100-nvl-94gb",
  .name = "NVIDIA H100 NVL",
  .aliases = "h100-nvl,h100-94gb,h800-nvl,h800 nvl", /* H800 NVL [reference §3.5] */
  .pci_id = 0x232110DE,                   /* [GPUOP] */
  .arch = GS_GEOM_HOPPER,
  .compute_slices = 7,
  .grid = 8,
  .leaf_span = 1,
  .memory_mib = 95830,                    /* (uncertain: not in the reference; nvidia-smi total) */
  .sms = 132,
  .swapped_ids = false,                   /* (uncertain: no trace) */
  .gi = h100_nvl_94gb_gi,
  .ngi = GS_NITEMS(h100_nvl_94gb_gi),
  .source = "mig-facts §3.5 [PR-NVL, T-NVL-BLOG, UG-PROF, GPUOP]",
};

/* ---------------------------------------------------------------------------
 * H100 96GB as on GH200 (also PG506-96GB) (reference §3.6). Names, IDs and
 * engines from the UG-PROF H100 96GB table; no real -lgip seen, so memory is
 * derived (H100 NVL scaled by 96/94, rounded to 128 MiB) and SMs are those of
 * H100 SXM. */
static const struct gs_geom_gi_profile h100_96gb_gi[] = {
  /* [UG-PROF] (uncertain: derived memory 11.00 GiB, SMs, ID) */
  {.name = "1g.12gb", .id = 19, .nvml_enum = PROF_1_SLICE, .compute_slices = 1, .span = 1,
   .memory_mib = 11264, .sms = 16, .ce = 1, .dec = 1, .enc = 0, .jpeg = 1, .ofa = 0,
   .max_count = 7, .starts = G8_1G},
  /* [UG-PROF] (uncertain: derived memory, SMs, ID) */
  {.name = "1g.12gb+me", .id = 20, .nvml_enum = PROF_1_SLICE_REV1, .compute_slices = 1,
   .span = 1, .memory_mib = 11264, .sms = 16, .ce = 1, .dec = 1, .enc = 0, .jpeg = 1, .ofa = 1,
   .max_count = 1, .starts = G8_1G, .media = GS_GEOM_MEDIA_ME},
  /* [UG-PROF] (uncertain: derived memory 22.12 GiB, SMs, ID) */
  {.name = "1g.24gb", .id = 15, .nvml_enum = PROF_1_SLICE_REV2, .compute_slices = 1, .span = 2,
   .memory_mib = 22656, .sms = 26, .ce = 1, .dec = 1, .enc = 0, .jpeg = 1, .ofa = 0,
   .max_count = 4, .starts = G8_1G_2X},
  /* [UG-PROF] (uncertain: derived memory, SMs, ID) */
  {.name = "2g.24gb", .id = 14, .nvml_enum = PROF_2_SLICE, .compute_slices = 2, .span = 2,
   .memory_mib = 22656, .sms = 32, .ce = 2, .dec = 2, .enc = 0, .jpeg = 2, .ofa = 0,
   .max_count = 3, .starts = G8_2G},
  /* [UG-PROF] (uncertain: derived memory 47.38 GiB, SMs, ID) */
  {.name = "3g.48gb", .id = 9, .nvml_enum = PROF_3_SLICE, .compute_slices = 3, .span = 4,
   .memory_mib = 48512, .sms = 60, .ce = 3, .dec = 3, .enc = 0, .jpeg = 3, .ofa = 0,
   .max_count = 2, .starts = G8_3G},
  /* [UG-PROF] (uncertain: derived memory, SMs, ID) */
  {.name = "4g.48gb", .id = 5, .nvml_enum = PROF_4_SLICE, .compute_slices = 4, .span = 4,
   .memory_mib = 48512, .sms = 64, .ce = 4, .dec = 4, .enc = 0, .jpeg = 4, .ofa = 0,
   .max_count = 1, .starts = G8_4G},
  /* [UG-PROF] (uncertain: derived memory 95.12 GiB, SMs, ID) */
  {.name = "7g.96gb", .id = 0, .nvml_enum = PROF_7_SLICE, .compute_slices = 7, .span = 8,
   .memory_mib = 97408, .sms = 132, .ce = 8, .dec = 7, .enc = 0, .jpeg = 7, .ofa = 1,
   .max_count = 1, .starts = G8_7G},
};

static const struct gs_geom_model h100_96gb = {
  .key = "h100-96gb",
  .name = "NVIDIA GH200 480GB",           /* (uncertain: NVML name guessed) */
  .aliases = "gh200-96gb,gh200-480gb,gh200 480gb,pg506-96gb",
  .pci_id = 0x234210DE,                   /* [GPUOP group] (uncertain: which id of the group) */
  .arch = GS_GEOM_HOPPER,
  .compute_slices = 7,
  .grid = 8,
  .leaf_span = 1,
  .memory_mib = 97871,                    /* (uncertain: not in the reference) */
  .sms = 132,                             /* (uncertain: full GH100 as on H100 SXM) */
  .swapped_ids = false,                   /* (uncertain: no trace) */
  .gi = h100_96gb_gi,
  .ngi = GS_NITEMS(h100_96gb_gi),
  .source = "mig-facts §3.6 [UG-PROF, GPUOP]; memory and SMs derived",
};

/* ---------------------------------------------------------------------------
 * H20 96GB (reference §3.6): a cut-down GH100 (78 SMs). Same names, engines
 * and (assumed) IDs as H100 96GB; memory derived as there, SMs derived by
 * scaling H100 SXM by 78/132 to even counts. */
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
   .memory_mib = 22656, .sms = 16, .ce = 1, .dec = 1, .enc = 0, .jpeg = 1, .ofa = 0,
   .max_count = 4, .starts = G8_1G_2X},
  /* [UG-PROF] (uncertain: derived memory, SMs, ID) */
  {.name = "2g.24gb", .id = 14, .nvml_enum = PROF_2_SLICE, .compute_slices = 2, .span = 2,
   .memory_mib = 22656, .sms = 20, .ce = 2, .dec = 2, .enc = 0, .jpeg = 2, .ofa = 0,
   .max_count = 3, .starts = G8_2G},
  /* [UG-PROF] (uncertain: derived memory, SMs, ID) */
  {.name = "3g.48gb", .id = 9, .nvml_enum = PROF_3_SLICE, .compute_slices = 3, .span = 4,
   .memory_mib = 48512, .sms = 36, .ce = 3, .dec = 3, .enc = 0, .jpeg = 3, .ofa = 0,
   .max_count = 2, .starts = G8_3G},
  /* [UG-PROF] (uncertain: derived memory, SMs, ID) */
  {.name = "4g.48gb", .id = 5, .nvml_enum = PROF_4_SLICE, .compute_slices = 4, .span = 4,
   .memory_mib = 48512, .sms = 38, .ce = 4, .dec = 4, .enc = 0, .jpeg = 4, .ofa = 0,
   .max_count = 1, .starts = G8_4G},
  /* [UG-PROF] (uncertain: derived memory, SMs, ID) */
  {.name = "7g.96gb", .id = 0, .nvml_enum = PROF_7_SLICE, .compute_slices = 7, .span = 8,
   .memory_mib = 97408, .sms = 78, .ce = 8, .dec = 7, .enc = 0, .jpeg = 7, .ofa = 1,
   .max_count = 1, .starts = G8_7G},
};

static const struct gs_geom_model h20_96gb = {
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

static const struct gs_geom_model h200_141gb = {
  .key = "h200-141gb",
  .name = "NVIDIA H200",
  .aliases = "h200,h200-sxm-141gb,h200-nvl,h200 nvl",
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

static const struct gs_geom_model gh200_144gb = {
  .key = "gh200-144gb",
  .name = "NVIDIA GH200 144G HBM3e",
  .aliases = "gh200,gh200-144g",
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
};

/* ---------------------------------------------------------------------------
 * B200 180GB (reference §3.8). The first four rows are real [PR-B200]; 3g/4g/7g
 * take CE from UG-PROF and derive the rest (memory 2x the smaller rows plus a
 * little, SMs scaled from H100 SXM by 148/132, NVDEC = NVJPG = compute slices). */
static const struct gs_geom_gi_profile b200_180gb_gi[] = {
  /* [PR-B200 Mar 2025] 20.50 GiB (Jan 2025 driver: 22.00; uncertain: driver-dependent) */
  {.name = "1g.23gb", .id = 19, .nvml_enum = PROF_1_SLICE, .compute_slices = 1, .span = 1,
   .memory_mib = 20992, .sms = 18, .ce = 2, .dec = 1, .enc = 0, .jpeg = 1, .ofa = 0,
   .max_count = 7, .starts = G8_1G},
  /* [PR-B200] 20.50 GiB (uncertain: driver-dependent) */
  {.name = "1g.23gb+me", .id = 20, .nvml_enum = PROF_1_SLICE_REV1, .compute_slices = 1,
   .span = 1, .memory_mib = 20992, .sms = 18, .ce = 2, .dec = 1, .enc = 0, .jpeg = 1, .ofa = 1,
   .max_count = 1, .starts = G8_1G, .media = GS_GEOM_MEDIA_ME},
  /* [PR-B200] 44.25 GiB */
  {.name = "1g.45gb", .id = 15, .nvml_enum = PROF_1_SLICE_REV2, .compute_slices = 1, .span = 2,
   .memory_mib = 45312, .sms = 30, .ce = 2, .dec = 1, .enc = 0, .jpeg = 1, .ofa = 0,
   .max_count = 4, .starts = G8_1G_2X},
  /* [PR-B200] 44.25 GiB; DEC 2 / JPEG 2 / CE 4 per the driver (UG says 1/1/3) */
  {.name = "2g.45gb", .id = 14, .nvml_enum = PROF_2_SLICE, .compute_slices = 2, .span = 2,
   .memory_mib = 45312, .sms = 36, .ce = 4, .dec = 2, .enc = 0, .jpeg = 2, .ofa = 0,
   .max_count = 3, .starts = G8_2G},
  /* [UG-PROF CE 6] (uncertain: derived memory 89.00 GiB, SMs, DEC/JPEG, ID) */
  {.name = "3g.90gb", .id = 9, .nvml_enum = PROF_3_SLICE, .compute_slices = 3, .span = 4,
   .memory_mib = 91136, .sms = 68, .ce = 6, .dec = 3, .enc = 0, .jpeg = 3, .ofa = 0,
   .max_count = 2, .starts = G8_3G},
  /* [UG-PROF CE 8; PR-B200 #187] (uncertain: derived memory 89.00 GiB, SMs, DEC/JPEG, ID) */
  {.name = "4g.90gb", .id = 5, .nvml_enum = PROF_4_SLICE, .compute_slices = 4, .span = 4,
   .memory_mib = 91136, .sms = 72, .ce = 8, .dec = 4, .enc = 0, .jpeg = 4, .ofa = 0,
   .max_count = 1, .starts = G8_4G},
  /* [UG-PROF CE 16] (uncertain: derived memory 178.25 GiB, SMs, DEC/JPEG, ID) */
  {.name = "7g.180gb", .id = 0, .nvml_enum = PROF_7_SLICE, .compute_slices = 7, .span = 8,
   .memory_mib = 182528, .sms = 148, .ce = 16, .dec = 7, .enc = 0, .jpeg = 7, .ofa = 1,
   .max_count = 1, .starts = G8_7G},
};

static const struct gs_geom_model b200_180gb = {
  .key = "b200-180gb",
  .name = "NVIDIA B200",
  .aliases = "b200",
  .pci_id = 0x290110DE,                   /* [GPUOP; PR-B200] (the mock's 0x2B00 disagrees) */
  .arch = GS_GEOM_BLACKWELL,
  .compute_slices = 7,
  .grid = 8,
  .leaf_span = 1,
  .memory_mib = 183359,                   /* (uncertain: not in the reference; nvidia-smi total) */
  .sms = 148,                             /* (uncertain: not in the reference; CUDA SM count) */
  .swapped_ids = false,                   /* (uncertain: no trace) */
  .gi = b200_180gb_gi,
  .ngi = GS_NITEMS(b200_180gb_gi),
  .source = "mig-facts §3.8 [PR-B200, UG-PROF, GPUOP]; 3g/4g/7g derived; A100 placements assumed",
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

static const struct gs_geom_model gb200_186gb = {
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

static const struct gs_geom_model rtx_pro_6000 = {
  .key = "rtx-pro-6000",
  .name = "NVIDIA RTX PRO 6000 Blackwell Server Edition",
  .aliases = "rtx-pro-6000-96gb,rtx-pro-6000-server,rtx pro 6000 blackwell workstation edition,"
             "rtx pro 6000 blackwell max-q workstation edition",
  .pci_id = 0x2BB510DE,                   /* [GPUOP] */
  .arch = GS_GEOM_BLACKWELL,
  .compute_slices = 4,
  .grid = 12,
  .leaf_span = 3,
  .memory_mib = 97887,                    /* (uncertain: not in the reference) */
  .sms = 188,                             /* [reference §3.10: 188 SMs in 4g] */
  .swapped_ids = false,                   /* [§8.1: 2g@0:6 = 1; 1g@0,3,6,9 = 3,4,5,6] */
  .gi = rtx_pro_6000_gi,
  .ngi = GS_NITEMS(rtx_pro_6000_gi),
  .source = "mig-facts §3.10 [T-RTX6000, UG-PROF, UG-GS, GPUOP]",
};

/* ------------------------------------------------------------------------ */

/* Every model; the first is the emulator's default GPU (DESIGN.md). */
static const struct gs_geom_model *const models[] = {
  &a100_40gb, &a100_80gb, &a30_24gb, &h100_80gb, &h100_pcie_80gb, &h100_nvl_94gb, &h100_96gb,
  &h20_96gb, &h200_141gb, &gh200_144gb, &b200_180gb, &gb200_186gb, &rtx_pro_6000,
};

const struct gs_geom_model *const *gs_geom_models(unsigned *count)
{
  if (count)
    *count = GS_NITEMS(models);
  return models;
}
