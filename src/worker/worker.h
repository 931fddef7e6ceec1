/* SPDX-License-Identifier: Apache-2.0 */
/* worker.h: the worker layer's whole interface: the emulated KServe v2 /
 * Triton server (`gpuslice worker`) that stands in for Triton on emulated
 * GPUs, HTTP and gRPC, and its per-slice latency model. It stands on net;
 * it knows a slice by its SM count, not by GPU geometry. */
#ifndef GS_WORKER_H
#define GS_WORKER_H

#include "net/net.h"

/* ---- emulated KServe v2 worker ---- */

struct gs_worker_config {
  const char *const *models; /* names; NULL-terminated; NULL = every model */
  unsigned sms;              /* SMs of the slice this worker models */
  unsigned full_sms;         /* SMs of the whole GPU (the calibration point) */
  const char *slice_name;    /* for metadata and logs: "1g.5gb", "full GPU", "14 SMs" */
  unsigned share;            /* N workers time-slicing one GPU without MIG (1 = alone) */
  bool instant;              /* answer at once, no modelled time (fuzzing) */
  unsigned time_scale;       /* every modelled time times this (0, 1: as modelled) */
  /* The slice's identity on /metrics, as Triton and DCGM label theirs
   * (gpu_uuid, profile, gpu); NULL or -1: unknown, the label is empty. */
  const char *gpu_uuid;      /* the MIG device's UUID */
  const char *profile;       /* "1g.5gb" */
  int gpu;                   /* the index of its GPU */
};

/* The names of every emulated model, NULL-terminated. */
const char *const *gs_worker_model_names(void);
/* Modelled compute time of one batch-1 request of a model, in µs. */
int gs_worker_model_time_us(struct gs_err *err, const char *model, unsigned sms, unsigned full_sms,
                            unsigned share, uint64_t *us);

struct gs_worker;
int gs_worker_new(struct gs_err *err, const struct gs_worker_config *cfg, struct gs_worker **out);
void gs_worker_free(struct gs_worker *w);
/* The HTTP handler of the worker (ctx = the worker); needs a loop for its
 * compute timers, given by gs_worker_attach. */
void gs_worker_attach(struct gs_worker *w, struct gs_net_loop *loop);
void gs_worker_handle(void *ctx, struct gs_http_conn *conn, const struct gs_http_request *req);
/* Also serves KServe v2 gRPC (inference.GRPCInferenceService, h2c; see
 * docs/grpc.md) on listening fd, which gs_worker_run then owns. */
void gs_worker_grpc_fd(struct gs_worker *w, int fd);
/* Serves on listen_fd until SIGTERM or SIGINT; SIGUSR1 toggles its ready
 * answer between 200 and 503 (a live but unready worker). 0 or a negative code. */
int gs_worker_run(struct gs_err *err, struct gs_worker *w, int listen_fd,
                  const struct gs_http_limits *limits);

#endif
