/* SPDX-License-Identifier: Apache-2.0 */
/* mig.c: NVML's MIG calls over the emulator: MIG mode, GPU- and compute-
 * instance profiles (from the geometry tables), placements, capacity, create,
 * destroy, list and lookup, MIG device handles and attributes, and the older
 * entry points of these calls. Uses backend.h and geometry.h only. */
#include "nvml-emu/nvml-emu.h"

#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* What the emulator checks (MIG mode, room, legal starts, ids) is left to it,
 * so NVML clients and the backend API get the same answers; what exists only
 * in NVML's ABI (NULL pointers, struct versions, enum ranges, handle kinds,
 * placement sizes) is checked here, first. */

/* ---- MIG mode ---- */

static nvmlReturn_t get_mig_mode(nvmlDevice_t device, unsigned *current, unsigned *pending)
{
  struct gs__nvemu_dev d;
  nvmlReturn_t rc = gs__nvemu_gpu(device, &d);
  if (rc != NVML_SUCCESS)
    return rc;
  if (!current || !pending)
    return NVML_ERROR_INVALID_ARGUMENT;
  *current = d.info.mig_current ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE;
  *pending = d.info.mig_pending ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *currentMode,
                                  unsigned int *pendingMode)
{
  GS__NVEMU_CALL(get_mig_mode(device, currentMode, pendingMode));
}

/* The emulator applies each generation's rules (reference §9); a change that
 * stays pending reports why in activationStatus, as NVML does. */
static nvmlReturn_t set_mig_mode(nvmlDevice_t device, unsigned mode, nvmlReturn_t *status)
{
  struct gs_backend *b = gs__nvemu_backend();
  struct gs__nvemu_dev d;
  int activation = 0, rc;
  nvmlReturn_t r = gs__nvemu_gpu(device, &d);
  if (r != NVML_SUCCESS)
    return r;
  if (!status || (mode != NVML_DEVICE_MIG_DISABLE && mode != NVML_DEVICE_MIG_ENABLE))
    return NVML_ERROR_INVALID_ARGUMENT;
  if ((rc = b->ops->set_mig_mode(b, NULL, d.gpu, mode == NVML_DEVICE_MIG_ENABLE, &activation)) != 0)
    return gs__nvemu_rc(rc);
  *status = gs__nvemu_rc(activation);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceSetMigMode(nvmlDevice_t device, unsigned int mode,
                                  nvmlReturn_t *activationStatus)
{
  GS__NVEMU_CALL(set_mig_mode(device, mode, activationStatus));
}

/* ---- GPU-instance profiles and placements ---- */

static const struct gs_geom_gi_profile *profile_by_enum(const struct gs_geom_model *m, unsigned e)
{
  for (unsigned i = 0; i < m->ngi; i++)
    if (m->gi[i].nvml_enum == e)
      return &m->gi[i];
  return NULL;
}

static void fill_gi_profile(const struct gs_geom_gi_profile *p, nvmlGpuInstanceProfileInfo_t *o)
{
  memset(o, 0, sizeof(*o));
  o->id = p->id;
  o->isP2pSupported = 0; /* "No" in every real -lgip seen (reference §8.3) */
  o->sliceCount = p->compute_slices;
  o->instanceCount = p->max_count;
  o->multiprocessorCount = p->sms;
  o->copyEngineCount = p->ce;
  o->decoderCount = p->dec;
  o->encoderCount = p->enc;
  o->jpegCount = p->jpeg;
  o->ofaCount = p->ofa;
  o->memorySizeMB = p->memory_mib;
}

/* v2 and v3 share a size and differ in layout (v3 drops isP2pSupported and
 * adds capabilities); info->version says which. */
static void fill_gi_profile_v(const struct gs_geom_gi_profile *p,
                              nvmlGpuInstanceProfileInfo_v2_t *info)
{
  nvmlGpuInstanceProfileInfo_t v1;
  fill_gi_profile(p, &v1);
  if (info->version == nvmlGpuInstanceProfileInfo_v3) {
    nvmlGpuInstanceProfileInfo_v3_t *o = (nvmlGpuInstanceProfileInfo_v3_t *)info;
    memset(o, 0, sizeof(*o));
    o->version = nvmlGpuInstanceProfileInfo_v3;
    o->id = v1.id;
    o->sliceCount = v1.sliceCount;
    o->instanceCount = v1.instanceCount;
    o->multiprocessorCount = v1.multiprocessorCount;
    o->copyEngineCount = v1.copyEngineCount;
    o->decoderCount = v1.decoderCount;
    o->encoderCount = v1.encoderCount;
    o->jpegCount = v1.jpegCount;
    o->ofaCount = v1.ofaCount;
    o->memorySizeMB = v1.memorySizeMB;
    snprintf(o->name, sizeof(o->name), "MIG %s", p->name);
    o->capabilities = p->gfx ? NVML_GPU_INSTANCE_PROFILE_CAPS_GFX : 0;
    return;
  }
  memset(info, 0, sizeof(*info));
  info->version = nvmlGpuInstanceProfileInfo_v2;
  info->id = v1.id;
  info->isP2pSupported = v1.isP2pSupported;
  info->sliceCount = v1.sliceCount;
  info->instanceCount = v1.instanceCount;
  info->multiprocessorCount = v1.multiprocessorCount;
  info->copyEngineCount = v1.copyEngineCount;
  info->decoderCount = v1.decoderCount;
  info->encoderCount = v1.encoderCount;
  info->jpegCount = v1.jpegCount;
  info->ofaCount = v1.ofaCount;
  info->memorySizeMB = v1.memorySizeMB;
  snprintf(info->name, sizeof(info->name), "MIG %s", p->name); /* "MIG 1g.5gb" */
}

static bool known_version(unsigned version, unsigned v2, unsigned v3)
{
  return version == v2 || version == v3;
}

/* A profile by enum: past the enum's range is INVALID_ARGUMENT (the header's
 * end-of-enumeration signal), in range but not on this model, or with MIG
 * off, NOT_SUPPORTED. */
static nvmlReturn_t gi_profile_by_enum(nvmlDevice_t device, unsigned e, const void *info,
                                       const struct gs_geom_gi_profile **p)
{
  struct gs__nvemu_dev d;
  nvmlReturn_t rc = gs__nvemu_gpu(device, &d);
  if (rc != NVML_SUCCESS)
    return rc;
  if (!info || e >= NVML_GPU_INSTANCE_PROFILE_COUNT)
    return NVML_ERROR_INVALID_ARGUMENT;
  if (!d.info.mig_current || !(*p = profile_by_enum(d.info.model, e)))
    return NVML_ERROR_NOT_SUPPORTED;
  return NVML_SUCCESS;
}

static nvmlReturn_t gi_profile_info(nvmlDevice_t device, unsigned e,
                                    nvmlGpuInstanceProfileInfo_t *info)
{
  const struct gs_geom_gi_profile *p = NULL;
  nvmlReturn_t rc = gi_profile_by_enum(device, e, info, &p);
  if (rc == NVML_SUCCESS)
    fill_gi_profile(p, info);
  return rc;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfo(nvmlDevice_t device, unsigned int profile,
                                                 nvmlGpuInstanceProfileInfo_t *info)
{
  GS__NVEMU_CALL(gi_profile_info(device, profile, info));
}

static nvmlReturn_t gi_profile_info_v(nvmlDevice_t device, unsigned e,
                                      nvmlGpuInstanceProfileInfo_v2_t *info)
{
  const struct gs_geom_gi_profile *p = NULL;
  struct gs__nvemu_dev d;
  nvmlReturn_t rc = gs__nvemu_gpu(device, &d);
  if (rc != NVML_SUCCESS)
    return rc;
  if (info &&
      !known_version(info->version, nvmlGpuInstanceProfileInfo_v2, nvmlGpuInstanceProfileInfo_v3))
    return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  if ((rc = gi_profile_by_enum(device, e, info, &p)) == NVML_SUCCESS)
    fill_gi_profile_v(p, info);
  return rc;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfoV(nvmlDevice_t device, unsigned int profile,
                                                  nvmlGpuInstanceProfileInfo_v2_t *info)
{
  GS__NVEMU_CALL(gi_profile_info_v(device, profile, info));
}

/* A profile by ID. IDs are per model and have no range, so an ID this model
 * lacks is an invalid argument, as for every call that takes a GI profile ID
 * (and as the emulator answers for a profile not of the GPU's model). */
static nvmlReturn_t gi_profile_by_id(const struct gs__nvemu_dev *d, unsigned id,
                                     const struct gs_geom_gi_profile **p)
{
  *p = gs_geom_gi_profile_by_id(d->info.model, id);
  return *p ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
}

static nvmlReturn_t gi_profile_info_by_id(nvmlDevice_t device, unsigned id,
                                          nvmlGpuInstanceProfileInfo_v2_t *info)
{
  const struct gs_geom_gi_profile *p = NULL;
  struct gs__nvemu_dev d;
  nvmlReturn_t rc = gs__nvemu_gpu(device, &d);
  if (rc != NVML_SUCCESS)
    return rc;
  if (!info)
    return NVML_ERROR_INVALID_ARGUMENT;
  if (!known_version(info->version, nvmlGpuInstanceProfileInfo_v2, nvmlGpuInstanceProfileInfo_v3))
    return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  if ((rc = gi_profile_by_id(&d, id, &p)) != NVML_SUCCESS)
    return rc;
  if (!d.info.mig_current)
    return NVML_ERROR_NOT_SUPPORTED;
  fill_gi_profile_v(p, info);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfoByIdV(nvmlDevice_t device, unsigned int profileId,
                                                      nvmlGpuInstanceProfileInfo_v2_t *info)
{
  GS__NVEMU_CALL(gi_profile_info_by_id(device, profileId, info));
}

/* Every legal placement of a profile, whatever is placed now and whatever
 * the MIG mode. placements == NULL asks for the count; a short array gets
 * INSUFFICIENT_SIZE and the count needed. */
static nvmlReturn_t gi_placements(nvmlDevice_t device, unsigned id, nvmlGpuInstancePlacement_t *pl,
                                  unsigned *count)
{
  const struct gs_geom_gi_profile *p = NULL;
  unsigned starts[GS_GEOM_MAX_GRID], n;
  struct gs__nvemu_dev d;
  nvmlReturn_t rc = gs__nvemu_gpu(device, &d);
  if (rc != NVML_SUCCESS)
    return rc;
  if (!count)
    return NVML_ERROR_INVALID_ARGUMENT;
  if ((rc = gi_profile_by_id(&d, id, &p)) != NVML_SUCCESS)
    return rc;
  n = gs_geom_gi_starts(p, starts);
  if (pl && *count < n) {
    *count = n;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  for (unsigned i = 0; pl && i < n; i++)
    pl[i] = (nvmlGpuInstancePlacement_t){.start = starts[i], .size = p->span};
  *count = n;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetGpuInstancePossiblePlacements_v2(nvmlDevice_t device,
                                                           unsigned int profileId,
                                                           nvmlGpuInstancePlacement_t *placements,
                                                           unsigned int *count)
{
  GS__NVEMU_CALL(gi_placements(device, profileId, placements, count));
}

/* The first version: no count query, *count output only, and the caller
 * sized the array from the profile's instanceCount, so no more than that many
 * placements are written (a "+me" profile has one instance but seven starts;
 * _v2 lists them all). Per its header (CUDA 11.1), NOT_SUPPORTED with MIG off. */
static nvmlReturn_t gi_placements_v1(nvmlDevice_t device, unsigned id,
                                     nvmlGpuInstancePlacement_t *pl, unsigned *count)
{
  const struct gs_geom_gi_profile *p = NULL;
  unsigned starts[GS_GEOM_MAX_GRID], n;
  struct gs__nvemu_dev d;
  nvmlReturn_t rc = gs__nvemu_gpu(device, &d);
  if (rc != NVML_SUCCESS)
    return rc;
  if (!pl || !count)
    return NVML_ERROR_INVALID_ARGUMENT;
  if ((rc = gi_profile_by_id(&d, id, &p)) != NVML_SUCCESS)
    return rc;
  if (!d.info.mig_current)
    return NVML_ERROR_NOT_SUPPORTED;
  n = gs_geom_gi_starts(p, starts);
  if (n > p->max_count)
    n = p->max_count;
  for (unsigned i = 0; i < n; i++)
    pl[i] = (nvmlGpuInstancePlacement_t){.start = starts[i], .size = p->span};
  *count = n;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetGpuInstancePossiblePlacements(nvmlDevice_t device, unsigned int profileId,
                                                        nvmlGpuInstancePlacement_t *placements,
                                                        unsigned int *count)
{
  GS__NVEMU_CALL(gi_placements_v1(device, profileId, placements, count));
}

static nvmlReturn_t gi_remaining(nvmlDevice_t device, unsigned id, unsigned *count)
{
  struct gs_backend *b = gs__nvemu_backend();
  const struct gs_geom_gi_profile *p = NULL;
  struct gs__nvemu_dev d;
  nvmlReturn_t rc = gs__nvemu_gpu(device, &d);
  if (rc != NVML_SUCCESS)
    return rc;
  if (!count)
    return NVML_ERROR_INVALID_ARGUMENT;
  if ((rc = gi_profile_by_id(&d, id, &p)) != NVML_SUCCESS)
    return rc;
  return gs__nvemu_rc(b->ops->gi_remaining(b, NULL, d.gpu, p, count));
}

nvmlReturn_t nvmlDeviceGetGpuInstanceRemainingCapacity(nvmlDevice_t device, unsigned int profileId,
                                                       unsigned int *count)
{
  GS__NVEMU_CALL(gi_remaining(device, profileId, count));
}

/* ---- GPU instances ---- */

/* ---- GPU and compute instances alike: listing and lookup ---- */

/* One instance as the lookups by id and by profile see it: a GI (ci unused)
 * or a CI (gi unused), with the handle NVML gives it. */
struct inst {
  unsigned id, profile;
  nvmlGpuInstance_t gi;
  nvmlComputeInstance_t ci;
};

/* The instances one level down: a GPU's GIs (gi NULL) or a GI's CIs, in
 * ascending id order (the emulator's). */
static nvmlReturn_t list_insts(unsigned gpu, const struct gs_gi_info *gi,
                               struct inst out[GS_GEOM_MAX_INSTANCES], unsigned *n)
{
  struct gs_backend *b = gs__nvemu_backend();
  struct gs_gi_info gis[GS_GEOM_MAX_INSTANCES];
  struct gs_ci_info cis[GS_GEOM_MAX_INSTANCES];
  int r = gi ? b->ops->ci_list(b, NULL, gpu, gi->id, cis, n) : b->ops->gi_list(b, NULL, gpu, gis, n);
  if (r != 0)
    return gs__nvemu_rc(r);
  for (unsigned i = 0; i < *n; i++) {
    unsigned id = gi ? cis[i].id : gis[i].id;
    if (id >= (gi ? GS__NVEMU_CI_SLOTS : GS__NVEMU_GI_SLOTS))
      return NVML_ERROR_UNKNOWN; /* the emulator's ids are 0..14 and 0..7; never reached */
    out[i] = (struct inst){
        .id = id,
        .profile = gi ? cis[i].profile.id : gis[i].profile->id,
        .gi = gi ? NULL : gs__nvemu_gi_handle(gpu, id),
        .ci = gi ? gs__nvemu_ci_handle(gpu, gi->id, id) : NULL,
    };
  }
  return NVML_SUCCESS;
}

/* An id that names no instance is NOT_FOUND, ids past 14 (GIs) or 7 (CIs)
 * included: the emulator answers so for them too. */
static nvmlReturn_t inst_by_id(unsigned gpu, const struct gs_gi_info *gi, unsigned id,
                               struct inst *out)
{
  struct inst v[GS_GEOM_MAX_INSTANCES];
  unsigned n = 0;
  nvmlReturn_t rc = list_insts(gpu, gi, v, &n);
  for (unsigned i = 0; rc == NVML_SUCCESS && i < n; i++)
    if (v[i].id == id) {
      *out = v[i];
      return NVML_SUCCESS;
    }
  return rc == NVML_SUCCESS ? NVML_ERROR_NOT_FOUND : rc;
}

/* The instances of one profile, packed at the front of out. */
static nvmlReturn_t insts_of_profile(unsigned gpu, const struct gs_gi_info *gi, unsigned profile,
                                     struct inst out[GS_GEOM_MAX_INSTANCES], unsigned *count)
{
  unsigned n = 0, k = 0;
  nvmlReturn_t rc = list_insts(gpu, gi, out, &n);
  for (unsigned i = 0; rc == NVML_SUCCESS && i < n; i++)
    if (out[i].profile == profile)
      out[k++] = out[i];
  *count = k;
  return rc;
}

/* start < 0: the driver's automatic placement. */
static nvmlReturn_t gi_create(nvmlDevice_t device, unsigned id,
                              const nvmlGpuInstancePlacement_t *pl, bool with_placement,
                              nvmlGpuInstance_t *out)
{
  struct gs_backend *b = gs__nvemu_backend();
  const struct gs_geom_gi_profile *p = NULL;
  struct gs__nvemu_dev d;
  struct gs_gi_info gi;
  struct inst x;
  nvmlReturn_t rc = gs__nvemu_gpu(device, &d);
  int r;
  if (rc != NVML_SUCCESS)
    return rc;
  if (!out || (with_placement && !pl))
    return NVML_ERROR_INVALID_ARGUMENT;
  if ((rc = gi_profile_by_id(&d, id, &p)) != NVML_SUCCESS)
    return rc;
  if (with_placement && (pl->size != p->span || pl->start > INT_MAX))
    return NVML_ERROR_INVALID_ARGUMENT;
  if ((r = b->ops->gi_create(b, NULL, d.gpu, p, with_placement ? (int)pl->start : -1, &gi)) != 0)
    return gs__nvemu_rc(r);
  if ((rc = inst_by_id(d.gpu, NULL, gi.id, &x)) == NVML_SUCCESS)
    *out = x.gi;
  return rc;
}

nvmlReturn_t nvmlDeviceCreateGpuInstance(nvmlDevice_t device, unsigned int profileId,
                                         nvmlGpuInstance_t *gpuInstance)
{
  GS__NVEMU_CALL(gi_create(device, profileId, NULL, false, gpuInstance));
}

nvmlReturn_t nvmlDeviceCreateGpuInstanceWithPlacement(nvmlDevice_t device, unsigned int profileId,
                                                      const nvmlGpuInstancePlacement_t *placement,
                                                      nvmlGpuInstance_t *gpuInstance)
{
  GS__NVEMU_CALL(gi_create(device, profileId, placement, true, gpuInstance));
}

static nvmlReturn_t gi_destroy(nvmlGpuInstance_t h)
{
  struct gs_backend *b = gs__nvemu_backend();
  struct gs_gi_info gi;
  nvmlReturn_t rc = gs__nvemu_gi(h, &gi);
  if (rc != NVML_SUCCESS)
    return rc;
  return gs__nvemu_rc(b->ops->gi_destroy(b, NULL, gi.gpu, gi.id));
}

nvmlReturn_t nvmlGpuInstanceDestroy(nvmlGpuInstance_t gpuInstance)
{
  GS__NVEMU_CALL(gi_destroy(gpuInstance));
}

/* The array must hold the profile's instanceCount entries (NVML's rule, so
 * *count is output only). */
static nvmlReturn_t gi_instances(nvmlDevice_t device, unsigned id, nvmlGpuInstance_t *hs,
                                 unsigned *count)
{
  const struct gs_geom_gi_profile *p = NULL;
  struct inst v[GS_GEOM_MAX_INSTANCES];
  struct gs__nvemu_dev d;
  nvmlReturn_t rc = gs__nvemu_gpu(device, &d);
  if (rc != NVML_SUCCESS)
    return rc;
  if (!hs || !count)
    return NVML_ERROR_INVALID_ARGUMENT;
  if ((rc = gi_profile_by_id(&d, id, &p)) != NVML_SUCCESS ||
      (rc = insts_of_profile(d.gpu, NULL, p->id, v, count)) != NVML_SUCCESS)
    return rc;
  for (unsigned i = 0; i < *count; i++)
    hs[i] = v[i].gi;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetGpuInstances(nvmlDevice_t device, unsigned int profileId,
                                       nvmlGpuInstance_t *gpuInstances, unsigned int *count)
{
  GS__NVEMU_CALL(gi_instances(device, profileId, gpuInstances, count));
}

static nvmlReturn_t gi_by_id(nvmlDevice_t device, unsigned id, nvmlGpuInstance_t *out)
{
  struct gs__nvemu_dev d;
  struct inst x;
  nvmlReturn_t rc = gs__nvemu_gpu(device, &d);
  if (rc != NVML_SUCCESS)
    return rc;
  if (!out)
    return NVML_ERROR_INVALID_ARGUMENT;
  if ((rc = inst_by_id(d.gpu, NULL, id, &x)) == NVML_SUCCESS)
    *out = x.gi;
  return rc;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceById(nvmlDevice_t device, unsigned int id,
                                          nvmlGpuInstance_t *gpuInstance)
{
  GS__NVEMU_CALL(gi_by_id(device, id, gpuInstance));
}

static nvmlReturn_t gi_info(nvmlGpuInstance_t h, nvmlGpuInstanceInfo_t *info)
{
  struct gs_gi_info gi;
  nvmlReturn_t rc = gs__nvemu_gi(h, &gi);
  if (rc != NVML_SUCCESS)
    return rc;
  if (!info)
    return NVML_ERROR_INVALID_ARGUMENT;
  memset(info, 0, sizeof(*info));
  info->device = gs__nvemu_gpu_handle(gi.gpu);
  info->id = gi.id;
  info->profileId = gi.profile->id;
  info->placement.start = gi.start;
  info->placement.size = gi.span;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t gpuInstance, nvmlGpuInstanceInfo_t *info)
{
  GS__NVEMU_CALL(gi_info(gpuInstance, info));
}

/* ---- compute-instance profiles ---- */

/* The CI profiles of a GI's profile, from the geometry's rule. */
static nvmlReturn_t ci_profiles(const struct gs_gi_info *gi,
                                struct gs_geom_ci_profile out[GS_GEOM_MAX_CI_PROFILES], unsigned *n)
{
  struct gs_backend *b = gs__nvemu_backend();
  struct gs_gpu_info info;
  int rc = b->ops->gpu_info(b, NULL, gi->gpu, &info);
  if (rc)
    return gs__nvemu_rc(rc);
  *n = gs_geom_ci_profiles(info.model, gi->profile, out);
  return NVML_SUCCESS;
}

/* CI profile IDs equal NVML's CI enum; one the GI lacks is NOT_SUPPORTED,
 * which is also the emulator's answer for CI calls given such an ID. */
static nvmlReturn_t ci_profile(const struct gs_gi_info *gi, unsigned id,
                               struct gs_geom_ci_profile *out)
{
  struct gs_geom_ci_profile all[GS_GEOM_MAX_CI_PROFILES];
  unsigned n = 0;
  nvmlReturn_t rc = ci_profiles(gi, all, &n);
  if (rc != NVML_SUCCESS)
    return rc;
  for (unsigned i = 0; i < n; i++)
    if (all[i].id == id) {
      *out = all[i];
      return NVML_SUCCESS;
    }
  return NVML_ERROR_NOT_SUPPORTED;
}

static void fill_ci_profile(const struct gs_gi_info *gi, const struct gs_geom_ci_profile *cp,
                            nvmlComputeInstanceProfileInfo_t *o)
{
  memset(o, 0, sizeof(*o));
  o->id = cp->id;
  o->sliceCount = cp->compute_slices;
  o->instanceCount = cp->max_count;
  o->multiprocessorCount = cp->sms;
  /* Engines other than SMs are the GI's, shared by its CIs (reference §5.2). */
  o->sharedCopyEngineCount = gi->profile->ce;
  o->sharedDecoderCount = gi->profile->dec;
  o->sharedEncoderCount = gi->profile->enc;
  o->sharedJpegCount = gi->profile->jpeg;
  o->sharedOfaCount = gi->profile->ofa;
}

/* Past the CI enum or the engine-profile enum is INVALID_ARGUMENT (the
 * end-of-enumeration signal); a profile this GI lacks is NOT_SUPPORTED. */
static nvmlReturn_t ci_profile_by_enum(nvmlGpuInstance_t h, unsigned e, unsigned eng,
                                       const void *info, struct gs_gi_info *gi,
                                       struct gs_geom_ci_profile *cp)
{
  nvmlReturn_t rc = gs__nvemu_gi(h, gi);
  if (rc != NVML_SUCCESS)
    return rc;
  if (!info || e >= NVML_COMPUTE_INSTANCE_PROFILE_COUNT ||
      eng >= NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_COUNT)
    return NVML_ERROR_INVALID_ARGUMENT;
  return ci_profile(gi, e, cp);
}

static nvmlReturn_t ci_profile_info(nvmlGpuInstance_t h, unsigned e, unsigned eng,
                                    nvmlComputeInstanceProfileInfo_t *info)
{
  struct gs_gi_info gi;
  struct gs_geom_ci_profile cp;
  nvmlReturn_t rc = ci_profile_by_enum(h, e, eng, info, &gi, &cp);
  if (rc == NVML_SUCCESS)
    fill_ci_profile(&gi, &cp, info);
  return rc;
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfo(nvmlGpuInstance_t gpuInstance,
                                                          unsigned int profile,
                                                          unsigned int engProfile,
                                                          nvmlComputeInstanceProfileInfo_t *info)
{
  GS__NVEMU_CALL(ci_profile_info(gpuInstance, profile, engProfile, info));
}

static nvmlReturn_t ci_profile_info_v(nvmlGpuInstance_t h, unsigned e, unsigned eng,
                                      nvmlComputeInstanceProfileInfo_v2_t *info)
{
  struct gs_gi_info gi;
  struct gs_geom_ci_profile cp;
  nvmlComputeInstanceProfileInfo_t v1;
  unsigned version;
  nvmlReturn_t rc = gs__nvemu_gi(h, &gi);
  if (rc != NVML_SUCCESS)
    return rc;
  if (info && !known_version(info->version, nvmlComputeInstanceProfileInfo_v2,
                             nvmlComputeInstanceProfileInfo_v3))
    return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  if ((rc = ci_profile_by_enum(h, e, eng, info, &gi, &cp)) != NVML_SUCCESS)
    return rc;
  fill_ci_profile(&gi, &cp, &v1);
  version = info->version;
  memset(info, 0, sizeof(*info));
  info->version = version;
  info->id = v1.id;
  info->sliceCount = v1.sliceCount;
  info->instanceCount = v1.instanceCount;
  info->multiprocessorCount = v1.multiprocessorCount;
  info->sharedCopyEngineCount = v1.sharedCopyEngineCount;
  info->sharedDecoderCount = v1.sharedDecoderCount;
  info->sharedEncoderCount = v1.sharedEncoderCount;
  info->sharedJpegCount = v1.sharedJpegCount;
  info->sharedOfaCount = v1.sharedOfaCount;
  snprintf(info->name, sizeof(info->name), "MIG %s", cp.name);
  if (version == nvmlComputeInstanceProfileInfo_v3)
    ((nvmlComputeInstanceProfileInfo_v3_t *)info)->capabilities =
        gi.profile->gfx ? NVML_COMPUTE_INSTANCE_PROFILE_CAPS_GFX : 0;
  return NVML_SUCCESS;
}

nvmlReturn_t
nvmlGpuInstanceGetComputeInstanceProfileInfoV(nvmlGpuInstance_t gpuInstance, unsigned int profile,
                                              unsigned int engProfile,
                                              nvmlComputeInstanceProfileInfo_v2_t *info)
{
  GS__NVEMU_CALL(ci_profile_info_v(gpuInstance, profile, engProfile, info));
}

static nvmlReturn_t ci_remaining(nvmlGpuInstance_t h, unsigned id, unsigned *count)
{
  struct gs_backend *b = gs__nvemu_backend();
  struct gs_gi_info gi;
  nvmlReturn_t rc = gs__nvemu_gi(h, &gi);
  if (rc != NVML_SUCCESS)
    return rc;
  if (!count)
    return NVML_ERROR_INVALID_ARGUMENT;
  return gs__nvemu_rc(b->ops->ci_remaining(b, NULL, gi.gpu, gi.id, id, count));
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstanceRemainingCapacity(nvmlGpuInstance_t gpuInstance,
                                                                unsigned int profileId,
                                                                unsigned int *count)
{
  GS__NVEMU_CALL(ci_remaining(gpuInstance, profileId, count));
}

/* Same contract as the GI placements: NULL asks for the count. */
static nvmlReturn_t ci_placements(nvmlGpuInstance_t h, unsigned id,
                                  nvmlComputeInstancePlacement_t *pl, unsigned *count)
{
  struct gs_gi_info gi;
  struct gs_geom_ci_profile cp;
  unsigned n = 0;
  nvmlReturn_t rc = gs__nvemu_gi(h, &gi);
  if (rc != NVML_SUCCESS)
    return rc;
  if (!count)
    return NVML_ERROR_INVALID_ARGUMENT;
  if ((rc = ci_profile(&gi, id, &cp)) != NVML_SUCCESS)
    return rc;
  for (unsigned s = 0; s < GS_GEOM_MAX_GRID; s++)
    n += (cp.starts >> s) & 1u;
  if (pl && *count < n) {
    *count = n;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  for (unsigned s = 0, k = 0; pl && s < GS_GEOM_MAX_GRID; s++)
    if (cp.starts & (1u << s))
      pl[k++] = (nvmlComputeInstancePlacement_t){.start = s, .size = cp.span};
  *count = n;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstancePossiblePlacements(
    nvmlGpuInstance_t gpuInstance, unsigned int profileId,
    nvmlComputeInstancePlacement_t *placements, unsigned int *count)
{
  GS__NVEMU_CALL(ci_placements(gpuInstance, profileId, placements, count));
}

/* ---- compute instances ---- */

static nvmlReturn_t ci_create(nvmlGpuInstance_t h, unsigned id,
                              const nvmlComputeInstancePlacement_t *pl, bool with_placement,
                              nvmlComputeInstance_t *out)
{
  struct gs_backend *b = gs__nvemu_backend();
  struct gs_gi_info gi;
  struct gs_geom_ci_profile cp;
  struct gs_ci_info ci;
  struct inst x;
  nvmlReturn_t rc = gs__nvemu_gi(h, &gi);
  int r;
  if (rc != NVML_SUCCESS)
    return rc;
  if (!out || (with_placement && !pl))
    return NVML_ERROR_INVALID_ARGUMENT;
  /* A placement's size is the profile's span; an unknown profile is left
   * for the emulator to refuse. */
  if (with_placement &&
      (pl->start > INT_MAX || (ci_profile(&gi, id, &cp) == NVML_SUCCESS && pl->size != cp.span)))
    return NVML_ERROR_INVALID_ARGUMENT;
  if ((r = b->ops->ci_create(b, NULL, gi.gpu, gi.id, id, with_placement ? (int)pl->start : -1,
                             &ci)) != 0)
    return gs__nvemu_rc(r);
  if ((rc = inst_by_id(gi.gpu, &gi, ci.id, &x)) == NVML_SUCCESS)
    *out = x.ci;
  return rc;
}

nvmlReturn_t nvmlGpuInstanceCreateComputeInstance(nvmlGpuInstance_t gpuInstance,
                                                  unsigned int profileId,
                                                  nvmlComputeInstance_t *computeInstance)
{
  GS__NVEMU_CALL(ci_create(gpuInstance, profileId, NULL, false, computeInstance));
}

nvmlReturn_t nvmlGpuInstanceCreateComputeInstanceWithPlacement(
    nvmlGpuInstance_t gpuInstance, unsigned int profileId,
    const nvmlComputeInstancePlacement_t *placement, nvmlComputeInstance_t *computeInstance)
{
  GS__NVEMU_CALL(ci_create(gpuInstance, profileId, placement, true, computeInstance));
}

static nvmlReturn_t ci_destroy(nvmlComputeInstance_t h)
{
  struct gs_backend *b = gs__nvemu_backend();
  struct gs_gi_info gi;
  struct gs_ci_info ci;
  nvmlReturn_t rc = gs__nvemu_ci(h, &gi, &ci);
  if (rc != NVML_SUCCESS)
    return rc;
  return gs__nvemu_rc(b->ops->ci_destroy(b, NULL, ci.gpu, ci.gi, ci.id));
}

nvmlReturn_t nvmlComputeInstanceDestroy(nvmlComputeInstance_t computeInstance)
{
  GS__NVEMU_CALL(ci_destroy(computeInstance));
}

static nvmlReturn_t ci_instances(nvmlGpuInstance_t h, unsigned id, nvmlComputeInstance_t *hs,
                                 unsigned *count)
{
  struct gs_gi_info gi;
  struct gs_geom_ci_profile cp;
  struct inst v[GS_GEOM_MAX_INSTANCES];
  nvmlReturn_t rc = gs__nvemu_gi(h, &gi);
  if (rc != NVML_SUCCESS)
    return rc;
  if (!hs || !count)
    return NVML_ERROR_INVALID_ARGUMENT;
  if ((rc = ci_profile(&gi, id, &cp)) != NVML_SUCCESS ||
      (rc = insts_of_profile(gi.gpu, &gi, id, v, count)) != NVML_SUCCESS)
    return rc;
  for (unsigned i = 0; i < *count; i++)
    hs[i] = v[i].ci;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstances(nvmlGpuInstance_t gpuInstance,
                                                unsigned int profileId,
                                                nvmlComputeInstance_t *computeInstances,
                                                unsigned int *count)
{
  GS__NVEMU_CALL(ci_instances(gpuInstance, profileId, computeInstances, count));
}

static nvmlReturn_t ci_by_id(nvmlGpuInstance_t h, unsigned id, nvmlComputeInstance_t *out)
{
  struct gs_gi_info gi;
  struct inst x;
  nvmlReturn_t rc = gs__nvemu_gi(h, &gi);
  if (rc != NVML_SUCCESS)
    return rc;
  if (!out)
    return NVML_ERROR_INVALID_ARGUMENT;
  if ((rc = inst_by_id(gi.gpu, &gi, id, &x)) == NVML_SUCCESS)
    *out = x.ci;
  return rc;
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstanceById(nvmlGpuInstance_t gpuInstance, unsigned int id,
                                                   nvmlComputeInstance_t *computeInstance)
{
  GS__NVEMU_CALL(ci_by_id(gpuInstance, id, computeInstance));
}

static nvmlReturn_t ci_info(nvmlComputeInstance_t h, nvmlComputeInstanceInfo_t *info)
{
  struct gs_gi_info gi;
  struct gs_ci_info ci;
  nvmlReturn_t rc = gs__nvemu_ci(h, &gi, &ci);
  if (rc != NVML_SUCCESS)
    return rc;
  if (!info)
    return NVML_ERROR_INVALID_ARGUMENT;
  memset(info, 0, sizeof(*info));
  info->device = gs__nvemu_gpu_handle(ci.gpu);
  info->gpuInstance = gs__nvemu_gi_handle(gi.gpu, gi.id);
  info->id = ci.id;
  info->profileId = ci.profile.id;
  info->placement.start = ci.start;
  info->placement.size = ci.span;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlComputeInstanceGetInfo_v2(nvmlComputeInstance_t computeInstance,
                                           nvmlComputeInstanceInfo_t *info)
{
  GS__NVEMU_CALL(ci_info(computeInstance, info));
}

/* The first version's struct ended before `placement` (CUDA 11.0). */
static nvmlReturn_t ci_info_v1(nvmlComputeInstance_t h, nvmlComputeInstanceInfo_t *info)
{
  nvmlComputeInstanceInfo_t full;
  nvmlReturn_t rc = ci_info(h, info ? &full : NULL);
  if (rc == NVML_SUCCESS)
    memcpy(info, &full, offsetof(nvmlComputeInstanceInfo_t, placement));
  return rc;
}

nvmlReturn_t nvmlComputeInstanceGetInfo(nvmlComputeInstance_t computeInstance,
                                        nvmlComputeInstanceInfo_t *info)
{
  GS__NVEMU_CALL(ci_info_v1(computeInstance, info));
}

/* ---- MIG device handles ---- */

static nvmlReturn_t is_mig_handle(nvmlDevice_t device, unsigned *is_mig)
{
  struct gs__nvemu_dev d;
  nvmlReturn_t rc = gs__nvemu_device(device, &d);
  if (rc != NVML_SUCCESS)
    return rc;
  if (!is_mig)
    return NVML_ERROR_INVALID_ARGUMENT;
  *is_mig = d.mig;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t device, unsigned int *isMigDevice)
{
  GS__NVEMU_CALL(is_mig_handle(device, isMigDevice));
}

/* The MIG-only queries take a GPU handle as an invalid argument. */
static nvmlReturn_t mig_ids(nvmlDevice_t device, unsigned *gi, unsigned *ci)
{
  struct gs__nvemu_dev d;
  nvmlReturn_t rc = gs__nvemu_mig(device, &d);
  if (rc != NVML_SUCCESS)
    return rc;
  if (!gi && !ci)
    return NVML_ERROR_INVALID_ARGUMENT;
  if (gi)
    *gi = d.m.gi;
  if (ci)
    *ci = d.m.ci;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int *id)
{
  GS__NVEMU_CALL(mig_ids(device, id, NULL));
}

nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int *id)
{
  GS__NVEMU_CALL(mig_ids(device, NULL, id));
}

/* Every compute slice can be its own MIG device: 7 on the 7-slice GPUs, 4 on
 * A30 and RTX PRO 6000; 0 while MIG is off, as NVML documents. */
static unsigned max_mig_devices(const struct gs__nvemu_dev *d)
{
  return d->info.mig_current ? d->info.model->compute_slices : 0;
}

static nvmlReturn_t max_mig_count(nvmlDevice_t device, unsigned *count)
{
  struct gs__nvemu_dev d;
  nvmlReturn_t rc = gs__nvemu_gpu(device, &d);
  if (rc != NVML_SUCCESS)
    return rc;
  if (!count)
    return NVML_ERROR_INVALID_ARGUMENT;
  *count = max_mig_devices(&d);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int *count)
{
  GS__NVEMU_CALL(max_mig_count(device, count));
}

/* Indexes are dense in ascending GI then CI id; an index below the maximum
 * with no device is NOT_FOUND, one at or past it INVALID_ARGUMENT. */
static nvmlReturn_t mig_by_index(nvmlDevice_t device, unsigned index, nvmlDevice_t *out)
{
  const struct gs_mig_device *m;
  struct gs__nvemu_dev d;
  unsigned n = 0;
  nvmlReturn_t rc = gs__nvemu_gpu(device, &d);
  if (rc != NVML_SUCCESS)
    return rc;
  if (!out || index >= max_mig_devices(&d))
    return NVML_ERROR_INVALID_ARGUMENT;
  if ((rc = gs__nvemu_mig_list(d.gpu, &m, &n)) != NVML_SUCCESS)
    return rc;
  if (index >= n)
    return NVML_ERROR_NOT_FOUND;
  if (m[index].gi >= GS__NVEMU_GI_SLOTS || m[index].ci >= GS__NVEMU_CI_SLOTS)
    return NVML_ERROR_UNKNOWN;
  *out = gs__nvemu_mig_handle(d.gpu, m[index].gi, m[index].ci);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index,
                                                 nvmlDevice_t *migDevice)
{
  GS__NVEMU_CALL(mig_by_index(device, index, migDevice));
}

static nvmlReturn_t mig_parent(nvmlDevice_t mig, nvmlDevice_t *out)
{
  struct gs__nvemu_dev d;
  nvmlReturn_t rc = gs__nvemu_mig(mig, &d);
  if (rc != NVML_SUCCESS)
    return rc;
  if (!out)
    return NVML_ERROR_INVALID_ARGUMENT;
  *out = gs__nvemu_gpu_handle(d.gpu);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t migDevice,
                                                          nvmlDevice_t *device)
{
  GS__NVEMU_CALL(mig_parent(migDevice, device));
}

/* A MIG device's SMs are its CI's; memory and the other engines its GI's. */
static nvmlReturn_t get_attributes(nvmlDevice_t device, nvmlDeviceAttributes_t *a)
{
  struct gs_backend *b = gs__nvemu_backend();
  struct gs_ci_info cis[GS_GEOM_MAX_INSTANCES];
  const struct gs_geom_gi_profile *p;
  struct gs__nvemu_dev d;
  unsigned n = 0, ci_slices = 0;
  nvmlReturn_t rc = gs__nvemu_mig(device, &d);
  int r;
  if (rc != NVML_SUCCESS)
    return rc;
  if (!a)
    return NVML_ERROR_INVALID_ARGUMENT;
  if ((r = b->ops->ci_list(b, NULL, d.gpu, d.m.gi, cis, &n)) != 0)
    return gs__nvemu_rc(r);
  for (unsigned i = 0; i < n; i++)
    if (cis[i].id == d.m.ci)
      ci_slices = cis[i].profile.compute_slices;
  p = d.m.gi_profile;
  memset(a, 0, sizeof(*a));
  a->multiprocessorCount = d.m.sms;
  a->sharedCopyEngineCount = p->ce;
  a->sharedDecoderCount = p->dec;
  a->sharedEncoderCount = p->enc;
  a->sharedJpegCount = p->jpeg;
  a->sharedOfaCount = p->ofa;
  a->gpuInstanceSliceCount = p->compute_slices;
  a->computeInstanceSliceCount = ci_slices;
  a->memorySizeMB = d.m.memory_mib;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetAttributes_v2(nvmlDevice_t device, nvmlDeviceAttributes_t *attributes)
{
  GS__NVEMU_CALL(get_attributes(device, attributes));
}

/* The first version's struct held the six engine counts only (CUDA 11.0). */
static nvmlReturn_t attributes_v1(nvmlDevice_t device, nvmlDeviceAttributes_t *a)
{
  nvmlDeviceAttributes_t full;
  nvmlReturn_t rc = get_attributes(device, a ? &full : NULL);
  if (rc == NVML_SUCCESS)
    memcpy(a, &full, offsetof(nvmlDeviceAttributes_t, gpuInstanceSliceCount));
  return rc;
}

nvmlReturn_t nvmlDeviceGetAttributes(nvmlDevice_t device, nvmlDeviceAttributes_t *attributes)
{
  GS__NVEMU_CALL(attributes_v1(device, attributes));
}
