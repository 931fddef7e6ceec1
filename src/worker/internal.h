/* SPDX-License-Identifier: Apache-2.0 */
/* internal.h: worker-layer internals shared between worker.c, its models
 * (model.c), its gRPC front end (grpc.c) and the HTTP/2 fuzz target. Not part of the layer's
 * interface (worker.h is). */
#ifndef GS_WORKER_INTERNAL_H
#define GS_WORKER_INTERNAL_H

#include "worker/worker.h"

/* ---- the worker's internals its gRPC front end (grpc.c) shares ---- */

#define GS__MAX_TENSORS 3

struct gs__tensor {
  const char *name, *datatype; /* datatype: "FP32" or "INT32" (4 bytes an element) */
  unsigned ndims;
  const int64_t *shape;
  size_t elements;
};

struct gs__model {
  unsigned idx;
  const char *name;
  unsigned nin, nout;
  struct gs__tensor in[GS__MAX_TENSORS], out[GS__MAX_TENSORS];
};

/* ---- the models and their latency model (model.c) ---- */

#define GS__WORKER_MAX_DIMS 4
#define GS__WORKER_NMODELS 2

struct gs__tensor_spec {
  const char *name, *datatype;
  unsigned ndims;
  int64_t shape[GS__WORKER_MAX_DIMS];
};

struct gs__model_spec {
  const char *name, *about;
  double full_ms; /* batch-1 latency on a whole A100 (model.c's calibration) */
  unsigned nin, nout;
  struct gs__tensor_spec in[GS__MAX_TENSORS], out[GS__MAX_TENSORS];
};

extern const struct gs__model_spec gs__worker_models[GS__WORKER_NMODELS];
/* The model named name (len bytes), its index in *idx (may be NULL); NULL when unknown. */
const struct gs__model_spec *gs__worker_model_find(const char *name, size_t len, unsigned *idx);

/* A served model by name; GS_E_NOT_FOUND when unknown or not served. */
int gs__worker_model(const struct gs_worker *w, const char *name, size_t len,
                     struct gs__model *out);
/* The served models' names in buf (n entries at most, NULL-terminated). */
const char *const *gs__worker_enabled_models(const struct gs_worker *w, const char **buf, size_t n);
bool gs__worker_ready(const struct gs_worker *w);
/* The KServe/Triton extensions the worker implements, as server metadata
 * lists them over HTTP and gRPC alike (one list, so the two cannot differ). */
#define GS__WORKER_NEXTENSIONS 1
extern const char *const gs__worker_extensions[GS__WORKER_NEXTENSIONS];
/* Counts a refused request of model idx (nv_inference_request_failure). */
void gs__worker_failed(struct gs_worker *w, unsigned idx);
/* ok: the request held the modelled slice and is counted a success; false:
 * the worker is being freed and the request never ran. */
typedef void gs__worker_done_fn(void *ctx, bool ok, uint64_t queue_us, uint64_t compute_us);
/* Queues one request of model idx on the modelled slice, as an HTTP infer;
 * *out (may be NULL) names it for gs__worker_cancel until done is called. */
struct gs__job;
int gs__worker_enqueue(struct gs_worker *w, unsigned idx, gs__worker_done_fn *done, void *ctx,
                       struct gs__job **out);
/* Takes a queued request off the queue, or off the slice (counted a
 * failure); done is not called. */
void gs__worker_cancel(struct gs_worker *w, struct gs__job *job);
/* Output tensor k's values for inputs hashing to hash (the HTTP path's too). */
void gs__worker_output_values(uint64_t hash, unsigned k, float *v, size_t n);

/* The worker's gRPC service (grpc.c) on its own listener (fd -1: none,
 * for in-memory connections on its HTTP/2 server). */
struct gs_grpc_server;
int gs__grpc_worker_new(struct gs_err *err, struct gs_net_loop *loop, struct gs_worker *w, int fd,
                        struct gs_grpc_server **out);
void gs__grpc_worker_free(struct gs_grpc_server *g);
struct gs_h2_server *gs__grpc_worker_h2(struct gs_grpc_server *g);

#endif
