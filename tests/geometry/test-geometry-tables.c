/* SPDX-License-Identifier: Apache-2.0 */
/* test-geometry-tables.c: checks every row of the model tables (models.c)
 * against an independent transcription of shared/reference/mig-facts.md
 * (§2.2, §3.x, §1.2, §1.3, §8.1), and the structural rules every table must
 * keep: placements inside the grid and aligned, sane instance limits, unique
 * ids, names and keys, enums that match the profile class. */

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "geometry/geometry.h"

/* --- the expected facts ------------------------------------------------- */

struct want_model {
  const char *key, *name;
  unsigned pci_id;
  enum gs_geom_arch arch;
  unsigned compute_slices, grid, leaf_span, memory_mib, sms;
  bool swapped_ids;
};

/* Model-level facts; "(u)" marks values the reference does not give. */
static const struct want_model want_models[] = {
  {"a100-40gb", "NVIDIA A100-SXM4-40GB", 0x20B010DE, GS_GEOM_AMPERE, 7, 8, 1, 40537, 108, true},
  {"a100-80gb", "NVIDIA A100-SXM4-80GB", 0x20B210DE, GS_GEOM_AMPERE, 7, 8, 1, 81920 /* (u) */, 108,
   true},
  {"a30-24gb", "NVIDIA A30", 0x20B710DE, GS_GEOM_AMPERE, 4, 4, 1, 24576 /* (u) */, 56, false},
  {"h100-80gb", "NVIDIA H100 80GB HBM3", 0x233010DE, GS_GEOM_HOPPER, 7, 8, 1, 81559, 132, false},
  {"h100-pcie-80gb", "NVIDIA H100 PCIe", 0x233110DE, GS_GEOM_HOPPER, 7, 8, 1, 81559 /* (u) */, 114,
   true},
  {"h100-nvl-94gb", "NVIDIA H100 NVL", 0x232110DE, GS_GEOM_HOPPER, 7, 8, 1, 95830 /* (u) */, 132,
   false},
  {"h100-96gb", "NVIDIA GH200 480GB" /* (u) */, 0x234210DE, GS_GEOM_HOPPER, 7, 8, 1,
   97871 /* (u) */, 132 /* (u) */, false},
  {"h20-96gb", "NVIDIA H20", 0x232910DE, GS_GEOM_HOPPER, 7, 8, 1, 97871 /* (u) */, 78 /* (u) */,
   false},
  {"h200-141gb", "NVIDIA H200", 0x233510DE, GS_GEOM_HOPPER, 7, 8, 1, 143771 /* (u) */, 132, false},
  {"gh200-144gb", "NVIDIA GH200 144G HBM3e", 0x234810DE, GS_GEOM_HOPPER, 7, 8, 1, 146944 /* (u) */,
   132, false},
  {"b200-180gb", "NVIDIA B200", 0x290110DE, GS_GEOM_BLACKWELL, 7, 8, 1, 183359 /* (u) */,
   148 /* (u) */, false},
  {"gb200-186gb", "NVIDIA GB200", 0x294110DE, GS_GEOM_BLACKWELL, 7, 8, 1, 189471 /* (u) */,
   152 /* (u) */, false},
  {"rtx-pro-6000", "NVIDIA RTX PRO 6000 Blackwell Server Edition", 0x2BB510DE, GS_GEOM_BLACKWELL,
   4, 12, 3, 97887 /* (u) */, 188, false},
};

/* One row per GI profile, in `nvidia-smi mig -lgip` order per model: model
 * key, profile name, then fields. gib is what nvidia-smi prints (the table's
 * MiB must print the same); starts lists the -lgipp start units. Media and
 * gfx are checked against the name's suffix. */
static const char *const want_rows[] = {
  /* §3.1 A100-40GB [UG-GS, UG-PROF] */
  "a100-40gb 1g.5gb id=19 enum=0 c=1 span=1 gib=4.75 mib=4864 "
  "sm=14 ce=1 dec=0 enc=0 jpeg=0 ofa=0 max=7 starts=0,1,2,3,4,5,6",
  "a100-40gb 1g.5gb+me id=20 enum=7 c=1 span=1 gib=4.75 mib=4864 "
  "sm=14 ce=1 dec=1 enc=0 jpeg=1 ofa=1 max=1 starts=0,1,2,3,4,5,6",
  "a100-40gb 1g.10gb id=15 enum=9 c=1 span=2 gib=9.62 mib=9856 "
  "sm=14 ce=1 dec=1 enc=0 jpeg=0 ofa=0 max=4 starts=0,2,4,6",
  "a100-40gb 2g.10gb id=14 enum=1 c=2 span=2 gib=9.62 mib=9856 "
  "sm=28 ce=2 dec=1 enc=0 jpeg=0 ofa=0 max=3 starts=0,2,4",
  "a100-40gb 3g.20gb id=9 enum=2 c=3 span=4 gib=19.50 mib=19968 "
  "sm=42 ce=3 dec=2 enc=0 jpeg=0 ofa=0 max=2 starts=0,4",
  "a100-40gb 4g.20gb id=5 enum=3 c=4 span=4 gib=19.50 mib=19968 "
  "sm=56 ce=4 dec=2 enc=0 jpeg=0 ofa=0 max=1 starts=0",
  "a100-40gb 7g.40gb id=0 enum=4 c=7 span=8 gib=39.25 mib=40192 "
  "sm=98 ce=7 dec=5 enc=0 jpeg=1 ofa=1 max=1 starts=0",

  /* §3.2 A100-80GB [T-A100-80]; CE/JPEG/OFA as on 40GB */
  "a100-80gb 1g.10gb id=19 enum=0 c=1 span=1 gib=9.50 mib=9728 "
  "sm=14 ce=1 dec=0 enc=0 jpeg=0 ofa=0 max=7 starts=0,1,2,3,4,5,6",
  "a100-80gb 1g.10gb+me id=20 enum=7 c=1 span=1 gib=9.50 mib=9728 "
  "sm=14 ce=1 dec=1 enc=0 jpeg=1 ofa=1 max=1 starts=0,1,2,3,4,5,6",
  "a100-80gb 1g.20gb id=15 enum=9 c=1 span=2 gib=19.50 mib=19968 "
  "sm=14 ce=1 dec=1 enc=0 jpeg=0 ofa=0 max=4 starts=0,2,4,6",
  "a100-80gb 2g.20gb id=14 enum=1 c=2 span=2 gib=19.50 mib=19968 "
  "sm=28 ce=2 dec=1 enc=0 jpeg=0 ofa=0 max=3 starts=0,2,4",
  "a100-80gb 3g.40gb id=9 enum=2 c=3 span=4 gib=39.25 mib=40192 "
  "sm=42 ce=3 dec=2 enc=0 jpeg=0 ofa=0 max=2 starts=0,4",
  "a100-80gb 4g.40gb id=5 enum=3 c=4 span=4 gib=39.25 mib=40192 "
  "sm=56 ce=4 dec=2 enc=0 jpeg=0 ofa=0 max=1 starts=0",
  "a100-80gb 7g.80gb id=0 enum=4 c=7 span=8 gib=79.00 mib=80896 "
  "sm=98 ce=7 dec=5 enc=0 jpeg=1 ofa=1 max=1 starts=0",

  /* §3.3 A30 [T-A30]: 4-unit grid; driver DEC wins over UG */
  "a30-24gb 1g.6gb id=14 enum=0 c=1 span=1 gib=5.81 mib=5952 "
  "sm=14 ce=1 dec=1 enc=0 jpeg=0 ofa=0 max=4 starts=0,1,2,3",
  "a30-24gb 1g.6gb+me id=21 enum=7 c=1 span=1 gib=5.81 mib=5952 "
  "sm=14 ce=1 dec=1 enc=0 jpeg=1 ofa=1 max=1 starts=0,1,2,3",
  "a30-24gb 2g.12gb id=5 enum=1 c=2 span=2 gib=11.69 mib=11968 "
  "sm=28 ce=2 dec=2 enc=0 jpeg=0 ofa=0 max=2 starts=0,2",
  "a30-24gb 2g.12gb+me id=6 enum=8 c=2 span=2 gib=11.69 mib=11968 "
  "sm=28 ce=2 dec=2 enc=0 jpeg=1 ofa=1 max=1 starts=0,2",
  "a30-24gb 4g.24gb id=0 enum=3 c=4 span=4 gib=23.44 mib=24000 "
  "sm=56 ce=4 dec=4 enc=0 jpeg=1 ofa=1 max=1 starts=0",

  /* §3.4 H100 SXM [T-H100S, UG-PROF] */
  "h100-80gb 1g.10gb id=19 enum=0 c=1 span=1 gib=9.75 mib=9984 "
  "sm=16 ce=1 dec=1 enc=0 jpeg=1 ofa=0 max=7 starts=0,1,2,3,4,5,6",
  "h100-80gb 1g.10gb+me id=20 enum=7 c=1 span=1 gib=9.75 mib=9984 "
  "sm=16 ce=1 dec=1 enc=0 jpeg=1 ofa=1 max=1 starts=0,1,2,3,4,5,6",
  "h100-80gb 1g.20gb id=15 enum=9 c=1 span=2 gib=19.62 mib=20096 "
  "sm=26 ce=1 dec=1 enc=0 jpeg=1 ofa=0 max=4 starts=0,2,4,6",
  "h100-80gb 2g.20gb id=14 enum=1 c=2 span=2 gib=19.62 mib=20096 "
  "sm=32 ce=2 dec=2 enc=0 jpeg=2 ofa=0 max=3 starts=0,2,4",
  "h100-80gb 3g.40gb id=9 enum=2 c=3 span=4 gib=39.50 mib=40448 "
  "sm=60 ce=3 dec=3 enc=0 jpeg=3 ofa=0 max=2 starts=0,4",
  "h100-80gb 4g.40gb id=5 enum=3 c=4 span=4 gib=39.50 mib=40448 "
  "sm=64 ce=4 dec=4 enc=0 jpeg=4 ofa=0 max=1 starts=0",
  "h100-80gb 7g.80gb id=0 enum=4 c=7 span=8 gib=79.25 mib=81152 "
  "sm=132 ce=8 dec=7 enc=0 jpeg=7 ofa=1 max=1 starts=0",

  /* §3.4 H100 PCIe [T-H100P]: its own SM counts */
  "h100-pcie-80gb 1g.10gb id=19 enum=0 c=1 span=1 gib=9.75 mib=9984 "
  "sm=14 ce=1 dec=1 enc=0 jpeg=1 ofa=0 max=7 starts=0,1,2,3,4,5,6",
  "h100-pcie-80gb 1g.10gb+me id=20 enum=7 c=1 span=1 gib=9.75 mib=9984 "
  "sm=14 ce=1 dec=1 enc=0 jpeg=1 ofa=1 max=1 starts=0,1,2,3,4,5,6",
  "h100-pcie-80gb 1g.20gb id=15 enum=9 c=1 span=2 gib=19.62 mib=20096 "
  "sm=14 ce=1 dec=1 enc=0 jpeg=1 ofa=0 max=4 starts=0,2,4,6",
  "h100-pcie-80gb 2g.20gb id=14 enum=1 c=2 span=2 gib=19.62 mib=20096 "
  "sm=30 ce=2 dec=2 enc=0 jpeg=2 ofa=0 max=3 starts=0,2,4",
  "h100-pcie-80gb 3g.40gb id=9 enum=2 c=3 span=4 gib=39.50 mib=40448 "
  "sm=46 ce=3 dec=3 enc=0 jpeg=3 ofa=0 max=2 starts=0,4",
  "h100-pcie-80gb 4g.40gb id=5 enum=3 c=4 span=4 gib=39.50 mib=40448 "
  "sm=62 ce=4 dec=4 enc=0 jpeg=4 ofa=0 max=1 starts=0",
  "h100-pcie-80gb 7g.80gb id=0 enum=4 c=7 span=8 gib=79.25 mib=81152 "
  "sm=114 ce=8 dec=7 enc=0 jpeg=7 ofa=1 max=1 starts=0",

  /* §3.5 H100 NVL [PR-NVL, T-NVL-BLOG] */
  "h100-nvl-94gb 1g.12gb id=19 enum=0 c=1 span=1 gib=10.75 mib=11008 "
  "sm=16 ce=1 dec=1 enc=0 jpeg=1 ofa=0 max=7 starts=0,1,2,3,4,5,6",
  "h100-nvl-94gb 1g.12gb+me id=20 enum=7 c=1 span=1 gib=10.75 mib=11008 "
  "sm=16 ce=1 dec=1 enc=0 jpeg=1 ofa=1 max=1 starts=0,1,2,3,4,5,6",
  "h100-nvl-94gb 1g.24gb id=15 enum=9 c=1 span=2 gib=21.62 mib=22144 "
  "sm=26 ce=1 dec=1 enc=0 jpeg=1 ofa=0 max=4 starts=0,2,4,6",
  "h100-nvl-94gb 2g.24gb id=14 enum=1 c=2 span=2 gib=21.62 mib=22144 "
  "sm=32 ce=2 dec=2 enc=0 jpeg=2 ofa=0 max=3 starts=0,2,4",
  "h100-nvl-94gb 3g.47gb id=9 enum=2 c=3 span=4 gib=46.38 mib=47488 "
  "sm=60 ce=3 dec=3 enc=0 jpeg=3 ofa=0 max=2 starts=0,4",
  "h100-nvl-94gb 4g.47gb id=5 enum=3 c=4 span=4 gib=46.38 mib=47488 "
  "sm=64 ce=4 dec=4 enc=0 jpeg=4 ofa=0 max=1 starts=0",
  "h100-nvl-94gb 7g.94gb id=0 enum=4 c=7 span=8 gib=93.12 mib=95360 "
  "sm=132 ce=8 dec=7 enc=0 jpeg=7 ofa=1 max=1 starts=0",

  /* §3.6 H100 96GB (GH200) [UG-PROF]; memory and SMs derived (u) */
  "h100-96gb 1g.12gb id=19 enum=0 c=1 span=1 gib=11.00 mib=11264 "
  "sm=16 ce=1 dec=1 enc=0 jpeg=1 ofa=0 max=7 starts=0,1,2,3,4,5,6",
  "h100-96gb 1g.12gb+me id=20 enum=7 c=1 span=1 gib=11.00 mib=11264 "
  "sm=16 ce=1 dec=1 enc=0 jpeg=1 ofa=1 max=1 starts=0,1,2,3,4,5,6",
  "h100-96gb 1g.24gb id=15 enum=9 c=1 span=2 gib=23.00 mib=23552 "
  "sm=26 ce=1 dec=1 enc=0 jpeg=1 ofa=0 max=4 starts=0,2,4,6",
  "h100-96gb 2g.24gb id=14 enum=1 c=2 span=2 gib=23.00 mib=23552 "
  "sm=32 ce=2 dec=2 enc=0 jpeg=2 ofa=0 max=3 starts=0,2,4",
  "h100-96gb 3g.48gb id=9 enum=2 c=3 span=4 gib=46.50 mib=47616 "
  "sm=60 ce=3 dec=3 enc=0 jpeg=3 ofa=0 max=2 starts=0,4",
  "h100-96gb 4g.48gb id=5 enum=3 c=4 span=4 gib=46.50 mib=47616 "
  "sm=64 ce=4 dec=4 enc=0 jpeg=4 ofa=0 max=1 starts=0",
  "h100-96gb 7g.96gb id=0 enum=4 c=7 span=8 gib=93.00 mib=95232 "
  "sm=132 ce=8 dec=7 enc=0 jpeg=7 ofa=1 max=1 starts=0",

  /* §3.6 H20 [UG-PROF]; memory and SMs derived (u) */
  "h20-96gb 1g.12gb id=19 enum=0 c=1 span=1 gib=11.00 mib=11264 "
  "sm=10 ce=1 dec=1 enc=0 jpeg=1 ofa=0 max=7 starts=0,1,2,3,4,5,6",
  "h20-96gb 1g.12gb+me id=20 enum=7 c=1 span=1 gib=11.00 mib=11264 "
  "sm=10 ce=1 dec=1 enc=0 jpeg=1 ofa=1 max=1 starts=0,1,2,3,4,5,6",
  "h20-96gb 1g.24gb id=15 enum=9 c=1 span=2 gib=23.00 mib=23552 "
  "sm=16 ce=1 dec=1 enc=0 jpeg=1 ofa=0 max=4 starts=0,2,4,6",
  "h20-96gb 2g.24gb id=14 enum=1 c=2 span=2 gib=23.00 mib=23552 "
  "sm=20 ce=2 dec=2 enc=0 jpeg=2 ofa=0 max=3 starts=0,2,4",
  "h20-96gb 3g.48gb id=9 enum=2 c=3 span=4 gib=46.50 mib=47616 "
  "sm=36 ce=3 dec=3 enc=0 jpeg=3 ofa=0 max=2 starts=0,4",
  "h20-96gb 4g.48gb id=5 enum=3 c=4 span=4 gib=46.50 mib=47616 "
  "sm=38 ce=4 dec=4 enc=0 jpeg=4 ofa=0 max=1 starts=0",
  "h20-96gb 7g.96gb id=0 enum=4 c=7 span=8 gib=93.00 mib=95232 "
  "sm=78 ce=8 dec=7 enc=0 jpeg=7 ofa=1 max=1 starts=0",

  /* §3.7 H200 [ISS-H200] */
  "h200-141gb 1g.18gb id=19 enum=0 c=1 span=1 gib=16.00 mib=16384 "
  "sm=16 ce=1 dec=1 enc=0 jpeg=1 ofa=0 max=7 starts=0,1,2,3,4,5,6",
  "h200-141gb 1g.18gb+me id=20 enum=7 c=1 span=1 gib=16.00 mib=16384 "
  "sm=16 ce=1 dec=1 enc=0 jpeg=1 ofa=1 max=1 starts=0,1,2,3,4,5,6",
  "h200-141gb 1g.35gb id=15 enum=9 c=1 span=2 gib=32.25 mib=33024 "
  "sm=26 ce=1 dec=1 enc=0 jpeg=1 ofa=0 max=4 starts=0,2,4,6",
  "h200-141gb 2g.35gb id=14 enum=1 c=2 span=2 gib=32.25 mib=33024 "
  "sm=32 ce=2 dec=2 enc=0 jpeg=2 ofa=0 max=3 starts=0,2,4",
  "h200-141gb 3g.71gb id=9 enum=2 c=3 span=4 gib=69.50 mib=71168 "
  "sm=60 ce=3 dec=3 enc=0 jpeg=3 ofa=0 max=2 starts=0,4",
  "h200-141gb 4g.71gb id=5 enum=3 c=4 span=4 gib=69.50 mib=71168 "
  "sm=64 ce=4 dec=4 enc=0 jpeg=4 ofa=0 max=1 starts=0",
  "h200-141gb 7g.141gb id=0 enum=4 c=7 span=8 gib=139.75 mib=143104 "
  "sm=132 ce=8 dec=7 enc=0 jpeg=7 ofa=1 max=1 starts=0",

  /* §3.7 GH200 144GB [PR-GH200]; 3g/4g/7g derived (u) */
  "gh200-144gb 1g.18gb id=19 enum=0 c=1 span=1 gib=17.50 mib=17920 "
  "sm=16 ce=1 dec=1 enc=0 jpeg=1 ofa=0 max=7 starts=0,1,2,3,4,5,6",
  "gh200-144gb 1g.18gb+me id=20 enum=7 c=1 span=1 gib=17.50 mib=17920 "
  "sm=16 ce=1 dec=1 enc=0 jpeg=1 ofa=1 max=1 starts=0,1,2,3,4,5,6",
  "gh200-144gb 1g.36gb id=15 enum=9 c=1 span=2 gib=35.25 mib=36096 "
  "sm=26 ce=1 dec=1 enc=0 jpeg=1 ofa=0 max=4 starts=0,2,4,6",
  "gh200-144gb 2g.36gb id=14 enum=1 c=2 span=2 gib=35.25 mib=36096 "
  "sm=32 ce=2 dec=2 enc=0 jpeg=2 ofa=0 max=3 starts=0,2,4",
  "gh200-144gb 3g.72gb id=9 enum=2 c=3 span=4 gib=71.50 mib=73216 "
  "sm=60 ce=3 dec=3 enc=0 jpeg=3 ofa=0 max=2 starts=0,4",
  "gh200-144gb 4g.72gb id=5 enum=3 c=4 span=4 gib=71.50 mib=73216 "
  "sm=64 ce=4 dec=4 enc=0 jpeg=4 ofa=0 max=1 starts=0",
  "gh200-144gb 7g.144gb id=0 enum=4 c=7 span=8 gib=143.00 mib=146432 "
  "sm=132 ce=8 dec=7 enc=0 jpeg=7 ofa=1 max=1 starts=0",

  /* §3.8 B200 [PR-B200 Mar 2025]; 3g/4g/7g CE from UG, rest derived (u) */
  "b200-180gb 1g.23gb id=19 enum=0 c=1 span=1 gib=20.50 mib=20992 "
  "sm=18 ce=2 dec=1 enc=0 jpeg=1 ofa=0 max=7 starts=0,1,2,3,4,5,6",
  "b200-180gb 1g.23gb+me id=20 enum=7 c=1 span=1 gib=20.50 mib=20992 "
  "sm=18 ce=2 dec=1 enc=0 jpeg=1 ofa=1 max=1 starts=0,1,2,3,4,5,6",
  "b200-180gb 1g.45gb id=15 enum=9 c=1 span=2 gib=44.25 mib=45312 "
  "sm=30 ce=2 dec=1 enc=0 jpeg=1 ofa=0 max=4 starts=0,2,4,6",
  "b200-180gb 2g.45gb id=14 enum=1 c=2 span=2 gib=44.25 mib=45312 "
  "sm=36 ce=4 dec=2 enc=0 jpeg=2 ofa=0 max=3 starts=0,2,4",
  "b200-180gb 3g.90gb id=9 enum=2 c=3 span=4 gib=89.00 mib=91136 "
  "sm=68 ce=6 dec=3 enc=0 jpeg=3 ofa=0 max=2 starts=0,4",
  "b200-180gb 4g.90gb id=5 enum=3 c=4 span=4 gib=89.00 mib=91136 "
  "sm=72 ce=8 dec=4 enc=0 jpeg=4 ofa=0 max=1 starts=0",
  "b200-180gb 7g.180gb id=0 enum=4 c=7 span=8 gib=178.25 mib=182528 "
  "sm=148 ce=16 dec=7 enc=0 jpeg=7 ofa=1 max=1 starts=0",

  /* §3.9 GB200 [PR-GB200, production 1g.23gb]; 3g/4g/7g derived (u) */
  "gb200-186gb 1g.23gb id=19 enum=0 c=1 span=1 gib=22.00 mib=22528 "
  "sm=18 ce=2 dec=1 enc=0 jpeg=1 ofa=0 max=7 starts=0,1,2,3,4,5,6",
  "gb200-186gb 1g.23gb+me id=20 enum=7 c=1 span=1 gib=22.00 mib=22528 "
  "sm=18 ce=2 dec=1 enc=0 jpeg=1 ofa=1 max=1 starts=0,1,2,3,4,5,6",
  "gb200-186gb 1g.47gb id=15 enum=9 c=1 span=2 gib=45.50 mib=46592 "
  "sm=32 ce=2 dec=1 enc=0 jpeg=1 ofa=0 max=4 starts=0,2,4,6",
  "gb200-186gb 2g.47gb id=14 enum=1 c=2 span=2 gib=45.50 mib=46592 "
  "sm=38 ce=4 dec=2 enc=0 jpeg=2 ofa=0 max=3 starts=0,2,4",
  "gb200-186gb 3g.93gb id=9 enum=2 c=3 span=4 gib=91.50 mib=93696 "
  "sm=72 ce=6 dec=3 enc=0 jpeg=3 ofa=0 max=2 starts=0,4",
  "gb200-186gb 4g.93gb id=5 enum=3 c=4 span=4 gib=91.50 mib=93696 "
  "sm=76 ce=8 dec=4 enc=0 jpeg=4 ofa=0 max=1 starts=0",
  "gb200-186gb 7g.186gb id=0 enum=4 c=7 span=8 gib=183.50 mib=187904 "
  "sm=152 ce=16 dec=7 enc=0 jpeg=7 ofa=1 max=1 starts=0",

  /* §3.10 RTX PRO 6000 [T-RTX6000]: 12-unit grid, 3 units per slot */
  "rtx-pro-6000 1g.24gb id=14 enum=0 c=1 span=3 gib=23.62 mib=24192 "
  "sm=46 ce=1 dec=1 enc=1 jpeg=1 ofa=0 max=4 starts=0,3,6,9",
  "rtx-pro-6000 1g.24gb+me id=21 enum=7 c=1 span=3 gib=23.62 mib=24192 "
  "sm=46 ce=1 dec=1 enc=1 jpeg=1 ofa=1 max=1 starts=0,3,6,9",
  "rtx-pro-6000 1g.24gb+gfx id=47 enum=0xa c=1 span=3 gib=23.62 mib=24192 "
  "sm=46 ce=1 dec=1 enc=1 jpeg=1 ofa=0 max=4 starts=0,3,6,9",
  "rtx-pro-6000 1g.24gb+me.all id=65 enum=0xf c=1 span=3 gib=23.62 mib=24192 "
  "sm=46 ce=1 dec=4 enc=4 jpeg=4 ofa=1 max=1 starts=0,3,6,9",
  "rtx-pro-6000 1g.24gb-me id=67 enum=0xd c=1 span=3 gib=23.62 mib=24192 "
  "sm=46 ce=1 dec=0 enc=0 jpeg=0 ofa=0 max=4 starts=0,3,6,9",
  "rtx-pro-6000 2g.48gb id=5 enum=1 c=2 span=6 gib=47.38 mib=48512 "
  "sm=94 ce=2 dec=2 enc=2 jpeg=2 ofa=0 max=2 starts=0,6",
  "rtx-pro-6000 2g.48gb+gfx id=35 enum=0xb c=2 span=6 gib=47.38 mib=48512 "
  "sm=94 ce=2 dec=2 enc=2 jpeg=2 ofa=0 max=2 starts=0,6",
  "rtx-pro-6000 2g.48gb+me.all id=64 enum=0x10 c=2 span=6 gib=47.38 mib=48512 "
  "sm=94 ce=2 dec=4 enc=4 jpeg=4 ofa=1 max=1 starts=0,6",
  "rtx-pro-6000 2g.48gb-me id=66 enum=0xe c=2 span=6 gib=47.38 mib=48512 "
  "sm=94 ce=2 dec=0 enc=0 jpeg=0 ofa=0 max=2 starts=0,6",
  "rtx-pro-6000 4g.96gb id=0 enum=3 c=4 span=12 gib=95.12 mib=97408 "
  "sm=188 ce=4 dec=4 enc=4 jpeg=4 ofa=1 max=1 starts=0",
  "rtx-pro-6000 4g.96gb+gfx id=32 enum=0xc c=4 span=12 gib=95.12 mib=97408 "
  "sm=188 ce=4 dec=4 enc=4 jpeg=4 ofa=1 max=1 starts=0",
};

/* --- parsing the rows --------------------------------------------------- */

enum { F_ID, F_ENUM, F_C, F_SPAN, F_GIB, F_MIB, F_SM, F_CE, F_DEC, F_ENC, F_JPEG, F_OFA, F_MAX,
       F_STARTS, F_COUNT };
static const char *const field_names[F_COUNT] = {
  "id", "enum", "c", "span", "gib", "mib", "sm", "ce", "dec", "enc", "jpeg", "ofa", "max", "starts",
};

struct want_gi {
  char key[32], name[32], gib[16];
  unsigned v[F_COUNT];            /* v[F_STARTS] is a bit mask; v[F_GIB] unused */
};

static unsigned parse_number(const char *row, const char *text)
{
  char *end;
  unsigned long v = strtoul(text, &end, 0);
  if (end == text || *end)
    fail_msg("%s: bad number '%s'", row, text);
  return (unsigned)v;
}

static unsigned parse_starts(const char *row, char *list)
{
  unsigned mask = 0;
  for (char *s = strtok(list, ","); s; s = strtok(NULL, ",")) {
    unsigned start = parse_number(row, s);
    if (start >= 32 || mask & (1u << start))
      fail_msg("%s: bad or repeated start %u", row, start);
    mask |= 1u << start;
  }
  return mask;
}

static void parse_field(const char *row, struct want_gi *w, unsigned *seen, char *tok)
{
  char *eq = strchr(tok, '=');
  unsigned f;
  if (!eq)
    fail_msg("%s: token '%s' is not field=value", row, tok);
  *eq = '\0';
  for (f = 0; f < F_COUNT && strcmp(field_names[f], tok) != 0; f++)
    ;
  if (f == F_COUNT || (*seen & (1u << f)))
    fail_msg("%s: unknown or repeated field '%s'", row, tok);
  *seen |= 1u << f;
  if (f == F_GIB)
    snprintf(w->gib, sizeof w->gib, "%s", eq + 1);
  else if (f != F_STARTS)
    w->v[f] = parse_number(row, eq + 1);
}

/* Splits a row into key, name and fields; every field must appear once. The
 * starts list is parsed last because it uses strtok itself. */
static void parse_row(const char *row, struct want_gi *w)
{
  char buf[256], starts[64] = "";
  char *key, *name, *tok;
  unsigned seen = 0;
  memset(w, 0, sizeof *w);
  if (snprintf(buf, sizeof buf, "%s", row) >= (int)sizeof buf)
    fail_msg("%s: row too long", row);
  key = strtok(buf, " ");
  name = strtok(NULL, " ");
  if (!key || !name || strlen(key) >= sizeof w->key || strlen(name) >= sizeof w->name)
    fail_msg("%s: no key and name", row);
  strcpy(w->key, key);
  strcpy(w->name, name);
  for (tok = strtok(NULL, " "); tok; tok = strtok(NULL, " ")) {
    if (strncmp(tok, "starts=", 7) == 0 && !(seen & (1u << F_STARTS))) {
      snprintf(starts, sizeof starts, "%s", tok + 7);
      seen |= 1u << F_STARTS;
      continue;
    }
    parse_field(row, w, &seen, tok);
  }
  if (seen != (1u << F_COUNT) - 1)
    fail_msg("%s: missing fields (seen mask 0x%x)", row, seen);
  w->v[F_STARTS] = parse_starts(row, starts);
}

/* --- helpers ------------------------------------------------------------ */

static void expect_u(const char *what, const char *field, unsigned long got, unsigned long want)
{
  if (got != want)
    fail_msg("%s: %s is %lu (0x%lx), want %lu (0x%lx)", what, field, got, got, want, want);
}

static void expect_s(const char *what, const char *field, const char *got, const char *want)
{
  if (!got || strcmp(got, want) != 0)
    fail_msg("%s: %s is '%s', want '%s'", what, field, got ? got : "(null)", want);
}

static const struct gs_geom_model *model_by_key(const char *key)
{
  unsigned n;
  const struct gs_geom_model *const *all = gs_geom_models(&n);
  for (unsigned i = 0; i < n; i++)
    if (strcmp(all[i]->key, key) == 0)
      return all[i];
  return NULL;
}

static unsigned popcount(unsigned x)
{
  unsigned n = 0;
  for (; x; x &= x - 1)
    n++;
  return n;
}

/* The media class and gfx flag a profile name's suffix spells (reference §3.10). */
static enum gs_geom_media media_of_name(const char *name, bool *gfx)
{
  size_t len = strlen(name);
  *gfx = len > 4 && strcmp(name + len - 4, "+gfx") == 0;
  if (len > 7 && strcmp(name + len - 7, "+me.all") == 0)
    return GS_GEOM_MEDIA_ALL;
  if (len > 3 && strcmp(name + len - 3, "+me") == 0)
    return GS_GEOM_MEDIA_ME;
  if (len > 3 && strcmp(name + len - 3, "-me") == 0)
    return GS_GEOM_MEDIA_NONE;
  return GS_GEOM_MEDIA_SHARED;
}

/* --- model-level facts -------------------------------------------------- */

static void test_model_list(void **state)
{
  unsigned n = 0;
  const struct gs_geom_model *const *all = gs_geom_models(&n);
  (void)state;
  assert_non_null(all);
  expect_u("models", "count", n, GS_NITEMS(want_models));
  /* The emulator's default GPU comes first (DESIGN.md). */
  expect_s("models", "first key", all[0]->key, "a100-40gb");
  assert_ptr_equal(gs_geom_models(NULL), all);
}

static void test_model_facts(void **state)
{
  (void)state;
  for (size_t i = 0; i < GS_NITEMS(want_models); i++) {
    const struct want_model *w = &want_models[i];
    const struct gs_geom_model *m = model_by_key(w->key);
    if (!m)
      fail_msg("model %s missing", w->key);
    expect_s(w->key, "name", m->name, w->name);
    expect_u(w->key, "pci_id", m->pci_id, w->pci_id);
    expect_u(w->key, "arch", m->arch, w->arch);
    expect_u(w->key, "compute_slices", m->compute_slices, w->compute_slices);
    expect_u(w->key, "grid", m->grid, w->grid);
    expect_u(w->key, "leaf_span", m->leaf_span, w->leaf_span);
    expect_u(w->key, "memory_mib", m->memory_mib, w->memory_mib);
    expect_u(w->key, "sms", m->sms, w->sms);
    expect_u(w->key, "swapped_ids", m->swapped_ids, w->swapped_ids);
  }
}

/* §8.1: the GI-ID orientation traces. */
static void test_model_swapped_ids(void **state)
{
  (void)state;
  assert_true(model_by_key("a100-40gb")->swapped_ids);
  assert_true(model_by_key("a100-80gb")->swapped_ids);
  assert_true(model_by_key("h100-pcie-80gb")->swapped_ids);
  assert_false(model_by_key("h100-80gb")->swapped_ids);
  assert_false(model_by_key("a30-24gb")->swapped_ids);
  assert_false(model_by_key("rtx-pro-6000")->swapped_ids);
}

/* --- profile rows ------------------------------------------------------- */

static void check_profile(const char *row, const struct want_gi *w,
                          const struct gs_geom_gi_profile *p)
{
  char gib[16];
  bool gfx;
  enum gs_geom_media media = media_of_name(w->name, &gfx);
  expect_s(row, "name", p->name, w->name);
  expect_u(row, "id", p->id, w->v[F_ID]);
  expect_u(row, "nvml_enum", p->nvml_enum, w->v[F_ENUM]);
  expect_u(row, "compute_slices", p->compute_slices, w->v[F_C]);
  expect_u(row, "span", p->span, w->v[F_SPAN]);
  expect_u(row, "memory_mib", p->memory_mib, w->v[F_MIB]);
  snprintf(gib, sizeof gib, "%.2f", p->memory_mib / 1024.0);
  expect_s(row, "memory as nvidia-smi prints it", gib, w->gib);
  expect_u(row, "sms", p->sms, w->v[F_SM]);
  expect_u(row, "ce", p->ce, w->v[F_CE]);
  expect_u(row, "dec", p->dec, w->v[F_DEC]);
  expect_u(row, "enc", p->enc, w->v[F_ENC]);
  expect_u(row, "jpeg", p->jpeg, w->v[F_JPEG]);
  expect_u(row, "ofa", p->ofa, w->v[F_OFA]);
  expect_u(row, "max_count", p->max_count, w->v[F_MAX]);
  expect_u(row, "starts", p->starts, w->v[F_STARTS]);
  expect_u(row, "media", p->media, media);
  expect_u(row, "gfx", p->gfx, gfx);
}

/* Every expected row matches the table row at the same position. */
static void test_profile_rows(void **state)
{
  char prev[32] = "";
  unsigned pos = 0;
  (void)state;
  for (size_t i = 0; i < GS_NITEMS(want_rows); i++) {
    struct want_gi w;
    const struct gs_geom_model *m;
    parse_row(want_rows[i], &w);
    pos = strcmp(prev, w.key) == 0 ? pos + 1 : 0;
    snprintf(prev, sizeof prev, "%s", w.key);
    m = model_by_key(w.key);
    if (!m)
      fail_msg("%s: no model %s", want_rows[i], w.key);
    if (pos >= m->ngi)
      fail_msg("%s: %s has only %u profiles", want_rows[i], w.key, m->ngi);
    check_profile(want_rows[i], &w, &m->gi[pos]);
  }
}

/* Every table row has an expected row: counts per model agree. */
static void test_profile_counts(void **state)
{
  unsigned n;
  const struct gs_geom_model *const *all = gs_geom_models(&n);
  (void)state;
  for (unsigned i = 0; i < n; i++) {
    unsigned want = 0;
    for (size_t r = 0; r < GS_NITEMS(want_rows); r++) {
      struct want_gi w;
      parse_row(want_rows[r], &w);
      want += strcmp(w.key, all[i]->key) == 0;
    }
    expect_u(all[i]->key, "ngi", all[i]->ngi, want);
  }
}

/* --- structural invariants, every model --------------------------------- */

static void test_model_shape(void **state)
{
  unsigned n;
  const struct gs_geom_model *const *all = gs_geom_models(&n);
  (void)state;
  for (unsigned i = 0; i < n; i++) {
    const struct gs_geom_model *m = all[i];
    unsigned leaves;
    assert_non_null(m->key);
    assert_non_null(m->gi);
    assert_true(m->ngi >= 1);
    assert_true(m->source && *m->source);
    if (strncmp(m->name, "NVIDIA ", 7) != 0)
      fail_msg("%s: name '%s' lacks the NVIDIA prefix", m->key, m->name);
    expect_u(m->key, "pci vendor", m->pci_id & 0xffff, 0x10DE);
    if (m->leaf_span == 0 || m->grid > GS_GEOM_MAX_GRID || m->grid % m->leaf_span)
      fail_msg("%s: grid %u, leaf_span %u", m->key, m->grid, m->leaf_span);
    leaves = m->grid / m->leaf_span;
    /* 8 leaves hold 7 compute slices; 4 leaves hold 4 (reference §1.1, §4.2). */
    expect_u(m->key, "compute_slices", m->compute_slices, leaves == 8 ? 7 : 4);
    if (leaves != 8 && leaves != 4)
      fail_msg("%s: %u leaf slots", m->key, leaves);
  }
}

static void test_placements_fit(void **state)
{
  unsigned n;
  const struct gs_geom_model *const *all = gs_geom_models(&n);
  (void)state;
  for (unsigned i = 0; i < n; i++) {
    const struct gs_geom_model *m = all[i];
    for (unsigned j = 0; j < m->ngi; j++) {
      const struct gs_geom_gi_profile *p = &m->gi[j];
      if (p->span == 0 || p->span > m->grid || p->span % m->leaf_span)
        fail_msg("%s %s: span %u on grid %u", m->key, p->name, p->span, m->grid);
      if (p->starts == 0)
        fail_msg("%s %s: no starts", m->key, p->name);
      for (unsigned s = 0; s < 32; s++) {
        if (!(p->starts & (1u << s)))
          continue;
        if (s + p->span > m->grid)
          fail_msg("%s %s: start %u + span %u > grid %u", m->key, p->name, s, p->span, m->grid);
        if (s % m->leaf_span || (s / m->leaf_span) % (p->span / m->leaf_span))
          fail_msg("%s %s: start %u not aligned to span %u", m->key, p->name, s, p->span);
      }
    }
  }
}

static void test_instance_limits(void **state)
{
  unsigned n;
  const struct gs_geom_model *const *all = gs_geom_models(&n);
  (void)state;
  for (unsigned i = 0; i < n; i++) {
    const struct gs_geom_model *m = all[i];
    for (unsigned j = 0; j < m->ngi; j++) {
      const struct gs_geom_gi_profile *p = &m->gi[j];
      if (p->compute_slices < 1 || p->compute_slices > m->compute_slices)
        fail_msg("%s %s: %u compute slices", m->key, p->name, p->compute_slices);
      if (p->max_count < 1 || p->max_count > popcount(p->starts) ||
          p->max_count > GS_GEOM_MAX_INSTANCES)
        fail_msg("%s %s: max_count %u", m->key, p->name, p->max_count);
      if (p->max_count * p->span > m->grid ||
          p->max_count * p->compute_slices > m->compute_slices)
        fail_msg("%s %s: %u instances do not fit", m->key, p->name, p->max_count);
    }
  }
}

static void test_unique_ids_names(void **state)
{
  unsigned n;
  const struct gs_geom_model *const *all = gs_geom_models(&n);
  (void)state;
  for (unsigned i = 0; i < n; i++) {
    const struct gs_geom_model *m = all[i];
    for (unsigned j = 0; j < m->ngi; j++)
      for (unsigned k = j + 1; k < m->ngi; k++) {
        if (m->gi[j].id == m->gi[k].id)
          fail_msg("%s: id %u twice (%s, %s)", m->key, m->gi[j].id, m->gi[j].name,
                   m->gi[k].name);
        if (m->gi[j].nvml_enum == m->gi[k].nvml_enum)
          fail_msg("%s: enum %u twice", m->key, m->gi[j].nvml_enum);
        if (strcmp(m->gi[j].name, m->gi[k].name) == 0)
          fail_msg("%s: name %s twice", m->key, m->gi[j].name);
      }
  }
}

/* Appends key and aliases of a model to a list of names, lower-case checked. */
static unsigned collect_names(const struct gs_geom_model *m, char names[][64], unsigned n,
                              unsigned cap)
{
  const char *s = m->aliases ? m->aliases : "";
  snprintf(names[n++], 64, "%s", m->key);
  while (*s) {
    size_t len = strcspn(s, ",");
    if (len == 0 || len >= 64 || s[0] == ' ' || s[len - 1] == ' ')
      fail_msg("%s: bad alias list '%s'", m->key, m->aliases);
    if (n == cap)
      fail_msg("too many aliases");
    snprintf(names[n++], 64, "%.*s", (int)len, s);
    s += len + (s[len] == ',');
  }
  return n;
}

static void test_keys_unique(void **state)
{
  static char names[256][64];
  unsigned n, count = 0;
  const struct gs_geom_model *const *all = gs_geom_models(&n);
  (void)state;
  for (unsigned i = 0; i < n; i++)
    count = collect_names(all[i], names, count, GS_NITEMS(names));
  for (unsigned i = 0; i < count; i++) {
    for (const char *c = names[i]; *c; c++)
      if (*c >= 'A' && *c <= 'Z')
        fail_msg("'%s' is not lower-case", names[i]);
    for (unsigned j = i + 1; j < count; j++)
      if (strcmp(names[i], names[j]) == 0)
        fail_msg("'%s' names two models (or one twice)", names[i]);
  }
}

/* The NVML enum a profile must have, from its class (reference §2.1, §2.2). */
static unsigned enum_of_class(const struct gs_geom_model *m, const struct gs_geom_gi_profile *p)
{
  static const unsigned plain[8] = {[1] = 0x0, [2] = 0x1, [3] = 0x2, [4] = 0x3, [7] = 0x4};
  bool two = p->compute_slices == 2;
  if (p->compute_slices == 1 && p->span == 2 * m->leaf_span)
    return 0x9;                                   /* 1_SLICE_REV2: double memory */
  switch (p->media) {
  case GS_GEOM_MEDIA_ME:
    return two ? 0x8 : 0x7;                       /* *_SLICE_REV1 */
  case GS_GEOM_MEDIA_ALL:
    return two ? 0x10 : 0xF;                      /* *_SLICE_ALL_ME */
  case GS_GEOM_MEDIA_NONE:
    return two ? 0xE : 0xD;                       /* *_SLICE_NO_ME */
  case GS_GEOM_MEDIA_SHARED:
    break;
  }
  if (p->gfx)
    return p->compute_slices == 4 ? 0xC : two ? 0xB : 0xA;
  return p->compute_slices < 8 ? plain[p->compute_slices] : ~0u;
}

static void test_enum_matches_class(void **state)
{
  unsigned n;
  const struct gs_geom_model *const *all = gs_geom_models(&n);
  (void)state;
  for (unsigned i = 0; i < n; i++)
    for (unsigned j = 0; j < all[i]->ngi; j++) {
      const struct gs_geom_gi_profile *p = &all[i]->gi[j];
      char what[96];
      snprintf(what, sizeof what, "%s %s", all[i]->key, p->name);
      expect_u(what, "nvml_enum", p->nvml_enum, enum_of_class(all[i], p));
    }
}

/* "<c>g.<mem>gb<suffix>": c and the suffix agree with the fields. */
static void test_name_matches_fields(void **state)
{
  unsigned n;
  const struct gs_geom_model *const *all = gs_geom_models(&n);
  (void)state;
  for (unsigned i = 0; i < n; i++)
    for (unsigned j = 0; j < all[i]->ngi; j++) {
      const struct gs_geom_gi_profile *p = &all[i]->gi[j];
      unsigned c, mem;
      char gb[3] = "";
      bool gfx;
      if (sscanf(p->name, "%ug.%u%2[gb]", &c, &mem, gb) != 3 || strcmp(gb, "gb") != 0)
        fail_msg("%s: profile name '%s' malformed", all[i]->key, p->name);
      expect_u(p->name, "compute slices in name", p->compute_slices, c);
      expect_u(p->name, "media", p->media, media_of_name(p->name, &gfx));
      expect_u(p->name, "gfx", p->gfx, gfx);
      assert_true(strlen(p->name) < GS_GEOM_NAME_SIZE);
    }
}

/* Memory follows the memory slices: equal spans, equal memory; larger spans,
 * more; nothing exceeds the whole GPU. */
static void test_memory_by_span(void **state)
{
  unsigned n;
  const struct gs_geom_model *const *all = gs_geom_models(&n);
  (void)state;
  for (unsigned i = 0; i < n; i++) {
    const struct gs_geom_model *m = all[i];
    for (unsigned j = 0; j < m->ngi; j++) {
      const struct gs_geom_gi_profile *p = &m->gi[j];
      if (p->memory_mib == 0 || p->memory_mib > m->memory_mib || p->sms == 0 || p->sms > m->sms)
        fail_msg("%s %s: %u MiB / %u SMs vs GPU %u / %u", m->key, p->name, p->memory_mib,
                 p->sms, m->memory_mib, m->sms);
      for (unsigned k = 0; k < m->ngi; k++) {
        const struct gs_geom_gi_profile *q = &m->gi[k];
        if ((p->span == q->span && p->memory_mib != q->memory_mib) ||
            (p->span < q->span && p->memory_mib >= q->memory_mib))
          fail_msg("%s: %s (%u MiB) vs %s (%u MiB)", m->key, p->name, p->memory_mib, q->name,
                   q->memory_mib);
      }
    }
  }
}

/* §1.3 and §3.10: +me and +me.all are single and hold media; -me holds none. */
static void test_media_rules(void **state)
{
  unsigned n;
  const struct gs_geom_model *const *all = gs_geom_models(&n);
  (void)state;
  for (unsigned i = 0; i < n; i++)
    for (unsigned j = 0; j < all[i]->ngi; j++) {
      const struct gs_geom_gi_profile *p = &all[i]->gi[j];
      bool single = p->media == GS_GEOM_MEDIA_ME || p->media == GS_GEOM_MEDIA_ALL;
      if (single && (p->max_count != 1 || p->ofa < 1 || p->jpeg < 1))
        fail_msg("%s %s: media profile must be single and hold OFA/JPEG", all[i]->key, p->name);
      if (p->media == GS_GEOM_MEDIA_NONE && (p->dec || p->enc || p->jpeg || p->ofa))
        fail_msg("%s %s: -me profile holds media engines", all[i]->key, p->name);
    }
}

/* Each full-GPU profile starts at 0 and spans the grid; every model has one. */
static void test_full_profile(void **state)
{
  unsigned n;
  const struct gs_geom_model *const *all = gs_geom_models(&n);
  (void)state;
  for (unsigned i = 0; i < n; i++) {
    unsigned full = 0;
    for (unsigned j = 0; j < all[i]->ngi; j++) {
      const struct gs_geom_gi_profile *p = &all[i]->gi[j];
      if (p->span != all[i]->grid)
        continue;
      full++;
      expect_u(p->name, "starts", p->starts, 1);
      expect_u(p->name, "compute_slices", p->compute_slices, all[i]->compute_slices);
      expect_u(p->name, "max_count", p->max_count, 1);
    }
    if (full == 0)
      fail_msg("%s: no full-GPU profile", all[i]->key);
  }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_model_list),
    cmocka_unit_test(test_model_facts),
    cmocka_unit_test(test_model_swapped_ids),
    cmocka_unit_test(test_profile_rows),
    cmocka_unit_test(test_profile_counts),
    cmocka_unit_test(test_model_shape),
    cmocka_unit_test(test_placements_fit),
    cmocka_unit_test(test_instance_limits),
    cmocka_unit_test(test_unique_ids_names),
    cmocka_unit_test(test_keys_unique),
    cmocka_unit_test(test_enum_matches_class),
    cmocka_unit_test(test_name_matches_fields),
    cmocka_unit_test(test_memory_by_span),
    cmocka_unit_test(test_media_rules),
    cmocka_unit_test(test_full_profile),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
