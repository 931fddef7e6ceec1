/* SPDX-License-Identifier: Apache-2.0 */
/* skus.c: the boards the emulator can be and how users name them. Each board
 * has its own NVML name and PCI device and subsystem ids over a model's
 * tables; a model's own board carries the model's key. [OGKM] is the
 * "Compatible GPUs" table of NVIDIA/open-gpu-kernel-modules' README (device,
 * subsystem vendor, subsystem device) in releases 550.40.82 and 560.31.02;
 * "OGKM 610" is a copy of the same table from a 610.43.03-based fork, for the
 * boards those releases predate. docs/models.md lists them. Pure data. */
#include "geometry/internal.h"

#include <string.h>
#include <strings.h>

struct sku_row {
  struct gs_geom_sku sku;
  const char *aliases; /* comma-separated other names users may type */
};

static const struct sku_row rows[] = {
  {{"a100-40gb", "NVIDIA A100-SXM4-40GB", 0x20B010DE, 0x134F10DE, &gs__geom_a100_40gb,
    "OGKM (20B0, any subsystem); Sub System Id 0x134F10DE in a public nvidia-smi -q log"}, NULL},
  {{"a100-pcie-40gb", "NVIDIA A100-PCIE-40GB", 0x20F110DE, 0x145F10DE, &gs__geom_a100_40gb,
    "OGKM"}, NULL},
  {{"a800-sxm4-40gb", "NVIDIA A800-SXM4-40GB", 0x20BD10DE, 0x17F410DE, &gs__geom_a100_40gb,
    "OGKM"}, NULL},
  {{"a800-pcie-40gb", "NVIDIA A800 40GB Active", 0x20F610DE, 0x180A10DE, &gs__geom_a100_40gb,
    "OGKM"}, "a800-40gb"},
  {{"a100-80gb", "NVIDIA A100-SXM4-80GB", 0x20B210DE, 0x146310DE, &gs__geom_a100_80gb,
    "OGKM (also subsystems 147F, 1622, 1623)"}, NULL},
  {{"a100-pcie-80gb", "NVIDIA A100 80GB PCIe", 0x20B510DE, 0x153310DE, &gs__geom_a100_80gb,
    "OGKM (also 1642)"}, NULL},
  {{"a800-sxm4-80gb", "NVIDIA A800-SXM4-80GB", 0x20F310DE, 0x179B10DE, &gs__geom_a100_80gb,
    "OGKM (also 179C-17A2)"}, "a800-80gb"},
  {{"a800-pcie-80gb", "NVIDIA A800 80GB PCIe", 0x20F510DE, 0x179910DE, &gs__geom_a100_80gb,
    "OGKM"}, NULL},
  {{"a30-24gb", "NVIDIA A30", 0x20B710DE, 0x153210DE, &gs__geom_a30_24gb,
    "OGKM (also 1804, 1852)"}, NULL},
  {{"h100-80gb", "NVIDIA H100 80GB HBM3", 0x233010DE, 0x16C110DE, &gs__geom_h100_80gb,
    "OGKM (also 16C0)"}, NULL},
  {{"h800-80gb", "NVIDIA H800", 0x232410DE, 0x17A610DE, &gs__geom_h100_80gb,
    "OGKM (also 17A8)"}, "h800,h800-sxm5-80gb"},
  {{"h100-pcie-80gb", "NVIDIA H100 PCIe", 0x233110DE, 0x162610DE, &gs__geom_h100_pcie_80gb,
    "OGKM"}, NULL},
  {{"h800-pcie-80gb", "NVIDIA H800 PCIe", 0x232210DE, 0x17A410DE, &gs__geom_h100_pcie_80gb,
    "OGKM"}, "h800-pcie"},
  {{"h100-nvl-94gb", "NVIDIA H100 NVL", 0x232110DE, 0x183910DE, &gs__geom_h100_nvl_94gb,
    "OGKM"}, NULL},
  {{"h800-nvl-94gb", "NVIDIA H800 NVL", 0x233A10DE, 0x183A10DE, &gs__geom_h100_nvl_94gb,
    "OGKM"}, "h800-nvl"},
  {{"h100-96gb", "NVIDIA GH200 480GB", 0x234210DE, 0x180910DE, &gs__geom_h100_96gb,
    "OGKM (device 2342 is also \"GH200 120GB\", subsystems 16EB and 1805)"}, NULL},
  {{"h20-96gb", "NVIDIA H20", 0x232910DE, 0x198B10DE, &gs__geom_h20_96gb,
    "OGKM (also 198C)"}, NULL},
  {{"h200-141gb", "NVIDIA H200", 0x233510DE, 0x18BE10DE, &gs__geom_h200_141gb,
    "OGKM (also 18BF)"}, NULL},
  {{"h200-nvl-141gb", "NVIDIA H200 NVL", 0x233B10DE, 0x199610DE, &gs__geom_h200_141gb,
    "OGKM 610"}, "h200-nvl"},
  {{"gh200-144gb", "NVIDIA GH200 144G HBM3e", 0x234810DE, 0x18D210DE, &gs__geom_gh200_144gb,
    "OGKM 610"}, NULL},
  {{"b200-180gb", "NVIDIA B200", 0x290110DE, 0x199910DE, &gs__geom_b200_180gb,
    "OGKM 610 (also 199B, 20DA)"}, NULL},
  {{"gb200-186gb", "NVIDIA GB200", 0x294110DE, 0x204610DE, &gs__geom_gb200_186gb,
    "OGKM 610 (also 20CA, 20D5, 21C9, 21CA)"}, NULL},
  {{"rtx-pro-6000", "NVIDIA RTX PRO 6000 Blackwell Server Edition", 0x2BB510DE, 0x204E10DE,
    &gs__geom_rtx_pro_6000, "OGKM 610 (also 220B)"}, NULL},
  {{"rtx-pro-6000-ws", "NVIDIA RTX PRO 6000 Blackwell Workstation Edition", 0x2BB110DE,
    0x204B10DE, &gs__geom_rtx_pro_6000, "OGKM 610"}, NULL},
  {{"rtx-pro-6000-maxq", "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", 0x2BB410DE,
    0x204C10DE, &gs__geom_rtx_pro_6000, "OGKM 610"}, NULL},
};

static const struct gs_geom_sku *const skus[] = {
  &rows[0].sku,  &rows[1].sku,  &rows[2].sku,  &rows[3].sku,  &rows[4].sku,  &rows[5].sku,
  &rows[6].sku,  &rows[7].sku,  &rows[8].sku,  &rows[9].sku,  &rows[10].sku, &rows[11].sku,
  &rows[12].sku, &rows[13].sku, &rows[14].sku, &rows[15].sku, &rows[16].sku, &rows[17].sku,
  &rows[18].sku, &rows[19].sku, &rows[20].sku, &rows[21].sku, &rows[22].sku, &rows[23].sku,
  &rows[24].sku,
};
_Static_assert(GS_NITEMS(skus) == GS_NITEMS(rows), "every board row is listed once");

const struct gs_geom_sku *const *gs_geom_skus(unsigned *count)
{
  if (count)
    *count = GS_NITEMS(skus);
  return skus;
}

/* The model's own board: the first row of that model. */
static const struct gs_geom_sku *own_board(const struct gs_geom_model *m)
{
  for (unsigned i = 0; m && i < GS_NITEMS(rows); i++)
    if (rows[i].sku.model == m)
      return &rows[i].sku;
  return NULL;
}

const struct gs_geom_sku *gs_geom_sku_find(const char *what)
{
  /* NVML names with or without their "NVIDIA " ("A100-PCIE-40GB"). */
  const char *bare;
  if (!what || !*what)
    return NULL;
  bare = strncasecmp(what, "NVIDIA ", 7) == 0 ? what + 7 : what;
  for (unsigned i = 0; i < GS_NITEMS(rows); i++) {
    const struct gs_geom_sku *s = &rows[i].sku;
    if (strcasecmp(s->key, what) == 0 || strcasecmp(s->name, what) == 0 ||
        strcasecmp(s->name + 7, bare) == 0 || gs__geom_list_has(rows[i].aliases, bare) ||
        gs__geom_matches_pci(s->pci_id, what))
      return s;
  }
  return own_board(gs__geom_model_named(what));
}
