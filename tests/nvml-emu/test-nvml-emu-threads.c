/* SPDX-License-Identifier: Apache-2.0 */
/* test-nvml-emu-threads.c: 8 threads x 300 mixed NVML calls (queries, MIG
 * devices, init/shutdown pairs, GI and CI create/destroy), four threads per GPU
 * on two GPUs: disjoint across GPUs, contended within one. Every result must be
 * legal for that call in a racing world; at the end NVML's view, the backend
 * API's and the success counts agree. `make test-tsan` runs it under TSan. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "../lib/gs-nvml-emu.h"

#define N(fn) api.fn
#define THREADS 8
#define GPUS 2
#define CALLS 300
#define MAX_PROFILES 16

static struct gs_nvml_api api;
static struct gs_nvml_machine machine;

struct gpu_state {
  nvmlDevice_t dev;
  unsigned profiles[MAX_PROFILES]; /* GI profile ids, read through NVML */
  unsigned spans[MAX_PROFILES];
  unsigned nprofiles;
  atomic_uint gi_created, gi_destroyed, ci_created, ci_destroyed;
};

static struct gpu_state gpus[GPUS];
static atomic_uint failures;
static pthread_mutex_t first_lock = PTHREAD_MUTEX_INITIALIZER;
static char first_failure[512];

/* Records an illegal result (cmocka's asserts belong to the main thread). */
static void illegal(const char *what, nvmlReturn_t rc, int line)
{
  if (atomic_fetch_add(&failures, 1) == 0) {
    pthread_mutex_lock(&first_lock);
    snprintf(first_failure, sizeof(first_failure), "line %d: %s returned %d (%s)", line, what, rc,
             N(nvmlErrorString)(rc));
    pthread_mutex_unlock(&first_lock);
  }
}

/* rc must be one of the listed codes; returns rc. */
static nvmlReturn_t legal_at(nvmlReturn_t rc, const char *what, int line, unsigned n, ...)
{
  va_list ap;
  bool ok = false;
  va_start(ap, n);
  for (unsigned i = 0; i < n; i++)
    ok = ok || rc == (nvmlReturn_t)va_arg(ap, int);
  va_end(ap);
  if (!ok)
    illegal(what, rc, line);
  return rc;
}
#define LEGAL(call, ...)                                                                           \
  legal_at((call), #call, __LINE__, (unsigned)(sizeof((int[]){__VA_ARGS__}) / sizeof(int)),        \
           __VA_ARGS__)

struct worker {
  unsigned id, seed;
  struct gpu_state *g;
};

static unsigned pick(struct worker *w, unsigned n)
{
  return n ? (unsigned)rand_r(&w->seed) % n : 0;
}

/* A GI of this GPU, found through NVML (it may vanish before it is used). */
static bool any_gi(struct worker *w, nvmlGpuInstance_t *out)
{
  nvmlGpuInstance_t all[64];
  unsigned total = 0;
  for (unsigned k = 0; k < w->g->nprofiles; k++) {
    unsigned n = 8;
    if (LEGAL(N(nvmlDeviceGetGpuInstances)(w->g->dev, w->g->profiles[k], all + total, &n),
              NVML_SUCCESS) == NVML_SUCCESS)
      total += n;
  }
  if (!total)
    return false;
  *out = all[pick(w, total)];
  return true;
}

static void op_query(struct worker *w)
{
  char buf[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
  unsigned n = 0, cur = 0, pend = 0;
  nvmlGpuInstanceProfileInfo_v2_t info = {.version = nvmlGpuInstanceProfileInfo_v2};
  LEGAL(N(nvmlDeviceGetCount_v2)(&n), NVML_SUCCESS);
  LEGAL(N(nvmlDeviceGetName)(w->g->dev, buf, sizeof(buf)), NVML_SUCCESS);
  LEGAL(N(nvmlDeviceGetUUID)(w->g->dev, buf, sizeof(buf)), NVML_SUCCESS);
  LEGAL(N(nvmlDeviceGetMigMode)(w->g->dev, &cur, &pend), NVML_SUCCESS);
  LEGAL(N(nvmlDeviceGetGpuInstanceProfileInfoV)(
            w->g->dev, pick(w, NVML_GPU_INSTANCE_PROFILE_COUNT + 1), &info),
        NVML_SUCCESS, NVML_ERROR_NOT_SUPPORTED, NVML_ERROR_INVALID_ARGUMENT);
  LEGAL(N(nvmlDeviceGetGpuInstanceRemainingCapacity)(w->g->dev,
                                                     w->g->profiles[pick(w, w->g->nprofiles)], &n),
        NVML_SUCCESS);
}

static void op_create_gi(struct worker *w)
{
  unsigned k = pick(w, w->g->nprofiles);
  nvmlGpuInstancePlacement_t pl = {pick(w, 8), w->g->spans[k]};
  nvmlGpuInstance_t gi;
  nvmlReturn_t rc;
  if (pick(w, 2))
    rc = LEGAL(N(nvmlDeviceCreateGpuInstance)(w->g->dev, w->g->profiles[k], &gi), NVML_SUCCESS,
               NVML_ERROR_INSUFFICIENT_RESOURCES);
  else
    rc = LEGAL(N(nvmlDeviceCreateGpuInstanceWithPlacement)(w->g->dev, w->g->profiles[k], &pl, &gi),
               NVML_SUCCESS, NVML_ERROR_INSUFFICIENT_RESOURCES, NVML_ERROR_INVALID_ARGUMENT);
  if (rc == NVML_SUCCESS)
    atomic_fetch_add(&w->g->gi_created, 1);
}

static void op_destroy_gi(struct worker *w)
{
  nvmlGpuInstance_t gi;
  nvmlGpuInstanceInfo_t info;
  if (!any_gi(w, &gi))
    return;
  LEGAL(N(nvmlGpuInstanceGetInfo)(gi, &info), NVML_SUCCESS, NVML_ERROR_INVALID_ARGUMENT);
  /* IN_USE while it has CIs; INVALID_ARGUMENT when another thread won. */
  if (LEGAL(N(nvmlGpuInstanceDestroy)(gi), NVML_SUCCESS, NVML_ERROR_IN_USE,
            NVML_ERROR_INVALID_ARGUMENT) == NVML_SUCCESS)
    atomic_fetch_add(&w->g->gi_destroyed, 1);
}

static void op_create_ci(struct worker *w)
{
  nvmlGpuInstance_t gi;
  nvmlComputeInstance_t ci;
  unsigned n = 0;
  if (!any_gi(w, &gi))
    return;
  LEGAL(N(nvmlGpuInstanceGetComputeInstanceRemainingCapacity)(gi, 0, &n), NVML_SUCCESS,
        NVML_ERROR_INVALID_ARGUMENT);
  if (LEGAL(N(nvmlGpuInstanceCreateComputeInstance)(gi, 0, &ci), NVML_SUCCESS,
            NVML_ERROR_INSUFFICIENT_RESOURCES, NVML_ERROR_INVALID_ARGUMENT) == NVML_SUCCESS)
    atomic_fetch_add(&w->g->ci_created, 1);
}

static void op_destroy_ci(struct worker *w)
{
  nvmlGpuInstance_t gi;
  nvmlComputeInstance_t cis[8];
  nvmlComputeInstanceInfo_t info;
  unsigned n = 8;
  if (!any_gi(w, &gi) ||
      LEGAL(N(nvmlGpuInstanceGetComputeInstances)(gi, 0, cis, &n), NVML_SUCCESS,
            NVML_ERROR_INVALID_ARGUMENT) != NVML_SUCCESS ||
      n == 0)
    return;
  n = pick(w, n);
  LEGAL(N(nvmlComputeInstanceGetInfo_v2)(cis[n], &info), NVML_SUCCESS, NVML_ERROR_INVALID_ARGUMENT);
  if (LEGAL(N(nvmlComputeInstanceDestroy)(cis[n]), NVML_SUCCESS, NVML_ERROR_INVALID_ARGUMENT) ==
      NVML_SUCCESS)
    atomic_fetch_add(&w->g->ci_destroyed, 1);
}

static void op_mig_devices(struct worker *w)
{
  nvmlDeviceAttributes_t a;
  nvmlDevice_t mig;
  unsigned max = 0, id = 0;
  char buf[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
  LEGAL(N(nvmlDeviceGetMaxMigDeviceCount)(w->g->dev, &max), NVML_SUCCESS);
  if (LEGAL(N(nvmlDeviceGetMigDeviceHandleByIndex)(w->g->dev, pick(w, max), &mig), NVML_SUCCESS,
            NVML_ERROR_NOT_FOUND) != NVML_SUCCESS)
    return;
  LEGAL(N(nvmlDeviceGetUUID)(mig, buf, sizeof(buf)), NVML_SUCCESS, NVML_ERROR_INVALID_ARGUMENT);
  LEGAL(N(nvmlDeviceGetName)(mig, buf, sizeof(buf)), NVML_SUCCESS, NVML_ERROR_INVALID_ARGUMENT);
  LEGAL(N(nvmlDeviceGetGpuInstanceId)(mig, &id), NVML_SUCCESS, NVML_ERROR_INVALID_ARGUMENT);
  LEGAL(N(nvmlDeviceGetAttributes_v2)(mig, &a), NVML_SUCCESS, NVML_ERROR_INVALID_ARGUMENT);
}

static void op_init_pair(struct worker *w)
{
  (void)w;
  LEGAL(N(nvmlInit_v2)(), NVML_SUCCESS);
  LEGAL(N(nvmlShutdown)(), NVML_SUCCESS);
}

static void *work(void *arg)
{
  static void (*const ops[])(struct worker *) = {op_query,      op_create_gi,   op_create_gi,
                                                 op_destroy_gi, op_create_ci,   op_create_ci,
                                                 op_destroy_ci, op_mig_devices, op_init_pair};
  struct worker *w = arg;
  for (unsigned i = 0; i < CALLS; i++)
    ops[pick(w, GS_NITEMS(ops))](w);
  return NULL;
}

/* ---- the final state ---- */

static unsigned nvml_gis(struct gpu_state *g, nvmlGpuInstanceInfo_t out[8])
{
  unsigned total = 0;
  for (unsigned k = 0; k < g->nprofiles; k++) {
    nvmlGpuInstance_t hs[8];
    unsigned n = 8;
    assert_int_equal(N(nvmlDeviceGetGpuInstances)(g->dev, g->profiles[k], hs, &n), NVML_SUCCESS);
    for (unsigned i = 0; i < n; i++) {
      assert_true(total < 8);
      assert_int_equal(N(nvmlGpuInstanceGetInfo)(hs[i], &out[total++]), NVML_SUCCESS);
    }
  }
  return total;
}

static void check_gpu(struct gs_backend *b, unsigned gpu)
{
  struct gpu_state *g = &gpus[gpu];
  nvmlGpuInstanceInfo_t infos[8];
  struct gs_gi_info gis[GS_GEOM_MAX_INSTANCES];
  struct gs_mig_device devs[GS_BACKEND_MAX_MIG_DEVICES];
  unsigned n = nvml_gis(g, infos), nb = 0, nm = 0, max = 0;
  char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];

  assert_int_equal(n, atomic_load(&g->gi_created) - atomic_load(&g->gi_destroyed));
  assert_int_equal(b->ops->gi_list(b, NULL, gpu, gis, &nb), 0);
  assert_int_equal(nb, n);
  for (unsigned i = 0; i < n; i++) {
    bool seen = false;
    for (unsigned k = 0; k < nb; k++)
      seen = seen || (gis[k].id == infos[i].id && gis[k].start == infos[i].placement.start &&
                      gis[k].profile->id == infos[i].profileId);
    assert_true(seen);
    for (unsigned k = 0; k < i; k++) /* no two GIs share a memory slice */
      assert_true(infos[i].placement.start + infos[i].placement.size <= infos[k].placement.start ||
                  infos[k].placement.start + infos[k].placement.size <= infos[i].placement.start);
  }
  assert_int_equal(b->ops->mig_devices(b, NULL, gpu, devs, &nm), 0);
  assert_int_equal(nm, atomic_load(&g->ci_created) - atomic_load(&g->ci_destroyed));
  assert_int_equal(N(nvmlDeviceGetMaxMigDeviceCount)(g->dev, &max), NVML_SUCCESS);
  for (unsigned i = 0; i < max; i++) {
    nvmlDevice_t mig;
    nvmlReturn_t rc = N(nvmlDeviceGetMigDeviceHandleByIndex)(g->dev, i, &mig);
    assert_int_equal(rc, i < nm ? NVML_SUCCESS : NVML_ERROR_NOT_FOUND);
    if (rc != NVML_SUCCESS)
      continue;
    assert_int_equal(N(nvmlDeviceGetUUID)(mig, uuid, sizeof(uuid)), NVML_SUCCESS);
    assert_string_equal(uuid, devs[i].uuid);
  }
}

static void read_profiles(struct gpu_state *g)
{
  for (unsigned e = 0; e < NVML_GPU_INSTANCE_PROFILE_COUNT; e++) {
    nvmlGpuInstanceProfileInfo_t info;
    nvmlGpuInstancePlacement_t pl[8];
    unsigned n = 8;
    if (N(nvmlDeviceGetGpuInstanceProfileInfo)(g->dev, e, &info) != NVML_SUCCESS)
      continue;
    assert_int_equal(N(nvmlDeviceGetGpuInstancePossiblePlacements_v2)(g->dev, info.id, pl, &n),
                     NVML_SUCCESS);
    g->spans[g->nprofiles] = pl[0].size;
    g->profiles[g->nprofiles++] = info.id;
  }
  assert_true(g->nprofiles >= 5);
}

static void mixed_calls_from_eight_threads(void **state)
{
  struct worker workers[THREADS];
  pthread_t threads[THREADS];
  struct gs_backend *b;
  (void)state;

  assert_int_equal(N(nvmlInit_v2)(), NVML_SUCCESS);
  for (unsigned i = 0; i < GPUS; i++) {
    nvmlReturn_t status;
    assert_int_equal(N(nvmlDeviceGetHandleByIndex_v2)(i, &gpus[i].dev), NVML_SUCCESS);
    assert_int_equal(N(nvmlDeviceSetMigMode)(gpus[i].dev, NVML_DEVICE_MIG_ENABLE, &status),
                     NVML_SUCCESS);
    assert_int_equal(status, NVML_SUCCESS);
    read_profiles(&gpus[i]);
  }
  for (unsigned i = 0; i < THREADS; i++) {
    workers[i] = (struct worker){.id = i, .seed = 0x9e3779b9u * (i + 1), .g = &gpus[i % GPUS]};
    assert_int_equal(pthread_create(&threads[i], NULL, work, &workers[i]), 0);
  }
  for (unsigned i = 0; i < THREADS; i++)
    assert_int_equal(pthread_join(threads[i], NULL), 0);
  if (atomic_load(&failures))
    fail_msg("%u illegal results; the first: %s", atomic_load(&failures), first_failure);

  /* Something happened on both GPUs, and every view agrees. */
  b = gs_nvml_machine_backend(&machine);
  assert_non_null(b);
  for (unsigned i = 0; i < GPUS; i++) {
    print_message("GPU %u: %u GIs created, %u destroyed; %u CIs created, %u destroyed\n", i,
                  atomic_load(&gpus[i].gi_created), atomic_load(&gpus[i].gi_destroyed),
                  atomic_load(&gpus[i].ci_created), atomic_load(&gpus[i].ci_destroyed));
    assert_true(atomic_load(&gpus[i].gi_created) > 0);
    assert_true(atomic_load(&gpus[i].ci_created) > 0);
    check_gpu(b, i);
  }
  gs_backend_close(b);
  assert_int_equal(N(nvmlShutdown)(), NVML_SUCCESS);
}

static int setup(void **state)
{
  (void)state;
  return gs_nvml_machine_new(&machine, "nvml-threads", "a100-40gb,h100-80gb");
}

static int teardown(void **state)
{
  (void)state;
  gs_nvml_machine_free(&machine);
  return 0;
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(mixed_calls_from_eight_threads),
  };
  if (gs_nvml_api_load(&api) != 0)
    return 1;
  return cmocka_run_group_tests(tests, setup, teardown);
}
