/* SPDX-License-Identifier: Apache-2.0 */
/* slurm.c: a live node's GPUs for Slurm (jobs/slurm.h): its gres records from
 * the backend, the prolog's drift check and the task prolog's index map, both
 * against the gres.conf Slurm read. The text formats are plan/slurm.c's;
 * this file knows the machine, not the syntax. */
#include "jobs/slurm.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

/* The driver's minor of a real GPU, from its information file ("Device
 * Minor: 3"); emulated GPUs (and unreadable files) use the index, as
 * nvml-emu's nvmlDeviceGetMinorNumber does. */
static unsigned gpu_minor(struct gs_backend *b, const struct gs_gpu_info *g)
{
  char path[128], bus[32], *text = NULL;
  const char *id = g->pci_bus_id, *p;
  unsigned minor = g->index;
  size_t len, i;
  if (gs_backend_emulated(b) || strlen(id) < 12)
    return g->index;
  /* NVML's 8-digit domain; the driver's directory has 4, lower case. */
  for (i = 0, id += strlen(id) - 12; id[i] && i + 1 < sizeof(bus); i++)
    bus[i] = (char)tolower((unsigned char)id[i]);
  bus[i] = 0;
  snprintf(path, sizeof(path), "/proc/driver/nvidia/gpus/%s/information", bus);
  if (gs_file_read(NULL, path, 1 << 16, &text, &len) == 0 && (p = strstr(text, "Device Minor:")))
    sscanf(p + 13, "%u", &minor);
  free(text);
  return minor;
}

static int add_gpu(struct gs_err *err, struct gs_backend *b, unsigned g, struct gs_mig_device *migs,
                   struct gs_jobs_slurm_dev *out, unsigned *n)
{
  struct gs_gpu_info info;
  unsigned nm = 0, minor;
  int rc;
  if ((rc = b->ops->gpu_info(b, err, g, &info)) != 0)
    return rc;
  minor = gpu_minor(b, &info);
  if (!info.mig_current) {
    struct gs_jobs_slurm_dev *d = &out[(*n)++];
    *d = (struct gs_jobs_slurm_dev){.d = {.model = info.model, .minor = minor}, .gpu = g};
    gs_plan_slurm_model_type(info.model, d->d.type);
    snprintf(d->uuid, sizeof(d->uuid), "%s", info.uuid);
    return 0;
  }
  if ((rc = b->ops->mig_devices(b, err, g, migs, &nm)) != 0)
    return rc;
  for (unsigned i = 0; i < nm; i++) {
    struct gs_jobs_slurm_dev *d = &out[(*n)++];
    *d = (struct gs_jobs_slurm_dev){.d = {.model = info.model, .minor = minor, .mig = true,
                                          .profile = migs[i].gi_profile, .gi = migs[i].gi,
                                          .ci = migs[i].ci},
                                    .gpu = g};
    snprintf(d->d.type, sizeof(d->d.type), "%s", migs[i].name);
    snprintf(d->uuid, sizeof(d->uuid), "%s", migs[i].uuid);
    snprintf(d->legacy_uuid, sizeof(d->legacy_uuid), "%s", migs[i].legacy_uuid);
  }
  return 0;
}

/* Reorders d as gs_plan_slurm_sort orders their records (the order the writer
 * and Slurm's numbering assume). */
static int sort_devices(struct gs_err *err, struct gs_jobs_slurm_dev *d, unsigned n)
{
  struct gs_plan_slurm_dev *keys = calloc(n + 1, sizeof(*keys));
  if (!keys)
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory listing the GPUs");
  for (unsigned i = 0; i < n; i++)
    keys[i] = d[i].d;
  gs_plan_slurm_sort(keys, n);
  for (unsigned i = 0; i < n; i++)
    for (unsigned j = i; j < n; j++)
      if (d[j].d.minor == keys[i].minor && d[j].d.mig == keys[i].mig && d[j].d.gi == keys[i].gi &&
          d[j].d.ci == keys[i].ci) {
        struct gs_jobs_slurm_dev t = d[i];
        d[i] = d[j];
        d[j] = t;
        break;
      }
  free(keys);
  return 0;
}

int gs_jobs_slurm_devices(struct gs_err *err, struct gs_backend *b, const unsigned *gpus,
                          unsigned ngpu, struct gs_jobs_slurm_dev **out, unsigned *n)
{
  struct gs_mig_device *migs = calloc(GS_BACKEND_MAX_MIG_DEVICES, sizeof(*migs));
  struct gs_jobs_slurm_dev *d = NULL;
  unsigned count = 0, nd = 0;
  int rc;
  *out = NULL;
  *n = 0;
  if (!migs)
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory listing the GPUs");
  if ((rc = b->ops->gpu_count(b, err, &count)) != 0)
    goto done;
  if (!gpus)
    ngpu = count;
  if (!(d = calloc((size_t)ngpu * GS_BACKEND_MAX_MIG_DEVICES + 1, sizeof(*d)))) {
    rc = gs_err_set(err, GS_E_NO_MEMORY, "out of memory listing the GPUs");
    goto done;
  }
  for (unsigned i = 0; i < ngpu && rc == 0; i++)
    rc = add_gpu(err, b, gpus ? gpus[i] : i, migs, d, &nd);
  if (rc == 0 && (rc = sort_devices(err, d, nd)) == 0) {
    *out = d;
    *n = nd;
    d = NULL;
  }
done:
  free(migs);
  free(d);
  return rc;
}

int gs_jobs_slurm_text(struct gs_err *err, struct gs_backend *b, const unsigned *gpus, unsigned ngpu,
                       gs_jobs_slurm_writer fn, const struct gs_plan_slurm_opts *o, char **text)
{
  struct gs_jobs_slurm_dev *d = NULL;
  struct gs_plan_slurm_dev *recs = NULL;
  unsigned n = 0;
  size_t len = 0;
  FILE *mem = NULL;
  int rc = gs_jobs_slurm_devices(err, b, gpus, ngpu, &d, &n);
  *text = NULL;
  if (rc == 0 && (!(recs = calloc(n + 1, sizeof(*recs))) || !(mem = open_memstream(text, &len))))
    rc = gs_err_set(err, GS_E_NO_MEMORY, "out of memory writing Slurm's files");
  for (unsigned i = 0; rc == 0 && i < n; i++)
    recs[i] = d[i].d;
  if (rc == 0)
    rc = fn(err, mem, recs, n, o);
  if (mem && fclose(mem) != 0 && rc == 0)
    rc = gs_err_set(err, GS_E_NO_MEMORY, "out of memory writing Slurm's files");
  if (rc) {
    free(*text);
    *text = NULL;
  }
  free(recs);
  free(d);
  return rc;
}

/* ---- against gres.conf ---- */

static const struct gs_jobs_slurm_dev *find_dev(const struct gs_jobs_slurm_dev *d, unsigned n,
                                                const struct gs_plan_slurm_rec *r)
{
  for (unsigned i = 0; i < n; i++)
    if (d[i].d.minor == r->minor && d[i].d.mig == r->mig &&
        (!r->mig || (d[i].d.gi == r->gi && d[i].d.ci == r->ci)))
      return &d[i];
  return NULL;
}

static void describe(const struct gs_plan_slurm_rec *r, char *buf, size_t size)
{
  if (r->mig)
    snprintf(buf, size, "%s on GPU %u (GPU instance %u, compute instance %u)", r->type, r->minor,
             r->gi, r->ci);
  else
    snprintf(buf, size, "whole GPU %u (%s)", r->minor, r->type);
}

/* Both the file's records and the node's devices, or an error. */
static int load_both(struct gs_err *err, struct gs_backend *b, const char *origin, const char *text,
                     size_t len, const char *node, struct gs_plan_slurm_rec **recs, unsigned *nrec,
                     struct gs_jobs_slurm_dev **devs, unsigned *ndev, bool *autodetect)
{
  int rc;
  *devs = NULL;
  if ((rc = gs_plan_slurm_parse(err, origin, text, len, node, recs, nrec, autodetect)) != 0)
    return rc;
  if ((rc = gs_jobs_slurm_devices(err, b, NULL, 0, devs, ndev)) != 0) {
    free(*recs);
    *recs = NULL;
  }
  return rc;
}

static const char fix[] = "the layout changed since gres.conf was written; bring them back together "
                          "with `gpuslice slurm relayout`";

int gs_jobs_slurm_check(struct gs_err *err, struct gs_backend *b, const char *origin,
                        const char *text, size_t len, const char *node)
{
  struct gs_plan_slurm_rec *recs = NULL;
  struct gs_jobs_slurm_dev *devs = NULL;
  unsigned nrec = 0, ndev = 0;
  char what[160];
  bool autodetect;
  int rc = load_both(err, b, origin, text, len, node, &recs, &nrec, &devs, &ndev, &autodetect);
  for (unsigned i = 0; rc == 0 && i < nrec; i++) {
    const struct gs_jobs_slurm_dev *d = find_dev(devs, ndev, &recs[i]);
    describe(&recs[i], what, sizeof(what));
    if (!d)
      rc = gs_err_set(err, GS_E_INVALID_ARGUMENT, "%s:%u: %s: the node has no such device now; %s",
                      origin, recs[i].line, what, fix);
    else if (strcmp(d->d.type, recs[i].type) != 0)
      rc = gs_err_set(err, GS_E_INVALID_ARGUMENT, "%s:%u: %s: that device is a %s now; %s", origin,
                      recs[i].line, what, d->d.type, fix);
  }
  /* A device on a GPU the file covers, missing from the file, is drift too. */
  for (unsigned i = 0; rc == 0 && i < ndev; i++) {
    bool covered = false, listed = false;
    for (unsigned j = 0; j < nrec; j++) {
      covered = covered || recs[j].minor == devs[i].d.minor;
      listed = listed || find_dev(&devs[i], 1, &recs[j]) != NULL;
    }
    if (covered && !listed)
      rc = gs_err_set(err, GS_E_INVALID_ARGUMENT, "%s: GPU %u has a %s%s (%s) the file does not list; %s",
                      origin, devs[i].d.minor, devs[i].d.type, devs[i].d.mig ? " MIG device" : "",
                      devs[i].uuid, fix);
  }
  free(recs);
  free(devs);
  return rc;
}

/* One entry of the job's GPU list into its device's UUID. */
static int map_one(struct gs_err *err, const char *origin, const char *item,
                   const struct gs_plan_slurm_rec *recs, unsigned nrec,
                   const struct gs_jobs_slurm_dev *devs, unsigned ndev, bool autodetect,
                   const char **uuid)
{
  const struct gs_jobs_slurm_dev *d;
  char *end, what[160];
  unsigned long i;
  /* Slurm's gpu/nvml hands out the devices' own ids; the pre-R470 MIG form
   * is brought to today's, which CUDA since R470 reads. */
  for (unsigned k = 0; (strncmp(item, "MIG-", 4) == 0 || strncmp(item, "GPU-", 4) == 0) && k < ndev; k++)
    if (strcmp(devs[k].legacy_uuid, item) == 0 || strcmp(devs[k].uuid, item) == 0) {
      *uuid = devs[k].uuid;
      return 0;
    }
  /* Detected GPUs are numbered by Slurm's own sort, not this file's order. */
  if (autodetect && isdigit((unsigned char)*item))
    return gs_err_set(err, GS_E_NOT_SUPPORTED, "GPU %.20s of the job: with AutoDetect=nvml in %s, "
                      "Slurm numbers the GPUs itself; its CUDA_VISIBLE_DEVICES stands", item, origin);
  i = strtoul(item, &end, 10);
  if (!isdigit((unsigned char)*item) || *end || i >= nrec)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "GPU '%.60s' of the job is not one of the %u "
                      "records of %s (nor a MIG device of this node)", item, nrec, origin);
  describe(&recs[i], what, sizeof(what));
  if (!(d = find_dev(devs, ndev, &recs[i])))
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "%s:%u: GPU %lu of the job, %s, is not on the "
                      "node now; %s", origin, recs[i].line, i, what, fix);
  *uuid = d->uuid;
  return 0;
}

int gs_jobs_slurm_map(struct gs_err *err, struct gs_backend *b, const char *origin, const char *text,
                      size_t len, const char *node, const char *gpus, char *out, size_t size)
{
  struct gs_plan_slurm_rec *recs = NULL;
  struct gs_jobs_slurm_dev *devs = NULL;
  unsigned nrec = 0, ndev = 0;
  size_t used = 0;
  char *list = strdup(gpus ? gpus : "");
  bool autodetect = false;
  int rc = list ? load_both(err, b, origin, text, len, node, &recs, &nrec, &devs, &ndev, &autodetect)
                : gs_err_set(err, GS_E_NO_MEMORY, "out of memory");
  out[0] = 0;
  for (char *save = NULL, *item = list && rc == 0 ? strtok_r(list, ",", &save) : NULL; item && rc == 0;
       item = strtok_r(NULL, ",", &save)) {
    const char *uuid = NULL;
    int n;
    if ((rc = map_one(err, origin, item, recs, nrec, devs, ndev, autodetect, &uuid)) != 0)
      break;
    n = snprintf(out + used, size - used, "%s%s", used ? "," : "", uuid);
    if (n < 0 || (size_t)n >= size - used)
      rc = gs_err_set(err, GS_E_INSUFFICIENT_SIZE, "the job's GPU list is too long");
    else
      used += (size_t)n;
  }
  free(list);
  free(recs);
  free(devs);
  return rc;
}
