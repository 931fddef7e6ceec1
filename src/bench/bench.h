/* bench.h: the bench layer's whole interface (gs_bench_): a load generator for
 * HTTP inference endpoints (KServe v2 / Triton, our workers, any HTTP URL).
 * Closed loop (N requests outstanding) and open loop (requests at intended
 * times, latency counted from them: no coordinated omission), measurement
 * windows repeated until stable, perf_analyzer's CSV, and an SVG plot of CSVs.
 * Stands on net (its loop and HTTP/1 response reader); `-i grpc` (grpc.c)
 * also on nghttp2 client sessions and the protobuf-c code generated from
 * inference.proto. Knows nothing of serve, slices or GPUs. */
#ifndef GS_BENCH_H
#define GS_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "util/util.h"

/* ---- target URL ---- */

struct gs_bench_url {
  char host[256];
  char port[8];
  char prefix[256]; /* path before /v2/..., "" or "/x" without a trailing slash */
};
/* "http://host[:port][/prefix]" or "host[:port]" (http only); errors name
 * option ("--url"). */
int gs_bench_url_parse(struct gs_err *err, const char *option, const char *text,
                       struct gs_bench_url *out);

/* A blocking GET (metadata, /metrics) with a deadline; the body is a heap
 * string the caller frees. A non-2xx status is returned in *status, not as
 * an error. */
int gs_bench_http_get(struct gs_err *err, const struct gs_bench_url *u, const char *path,
                      unsigned timeout_ms, int *status, char **body, size_t *len);

/* ---- KServe v2 model inputs ---- */

#define GS_BENCH_MAX_INPUTS 16
#define GS_BENCH_MAX_DIMS 8

struct gs_bench_tensor {
  char name[128];
  char datatype[16];
  unsigned ndims;
  int64_t shape[GS_BENCH_MAX_DIMS]; /* -1: variable (batch or --shape) */
};

struct gs_bench_model {
  char name[128];
  unsigned ninputs;
  struct gs_bench_tensor inputs[GS_BENCH_MAX_INPUTS];
};

/* Parses /v2/models/{m} metadata (what = the URL, for messages). */
int gs_bench_model_parse(struct gs_err *err, const char *what, const char *json, size_t len,
                         struct gs_bench_model *out);
/* Applies the batch size (replaces a leading -1) and "name:d1,d2" shapes for
 * the other variable dimensions; refuses what stays variable. */
int gs_bench_model_fix_shapes(struct gs_err *err, struct gs_bench_model *m, unsigned batch,
                              const char *const *shapes, size_t nshapes);
/* Bytes of one element of a datatype (0: unsupported, e.g. BYTES). */
size_t gs_bench_dtype_size(const char *datatype);

/* One request's input values, as raw little-endian bytes per input. */
struct gs_bench_sample {
  unsigned char *data[GS_BENCH_MAX_INPUTS];
  size_t len[GS_BENCH_MAX_INPUTS];
};
struct gs_bench_samples {
  struct gs_bench_sample *s;
  size_t n;
};
/* Random values (FP: [0,1); integers: 0..99; BOOL: 0/1) or zeros. */
int gs_bench_samples_fill(struct gs_err *err, const struct gs_bench_model *m, bool zero,
                          uint64_t seed, struct gs_bench_samples *out);
/* perf_analyzer's --input-data JSON: {"data": [{"input": [values] or
 * {"content": [values], "shape": [dims]}}, ...]}; values flat or nested. */
int gs_bench_samples_parse(struct gs_err *err, const char *what, const char *json, size_t len,
                           const struct gs_bench_model *m, struct gs_bench_samples *out);
void gs_bench_samples_free(struct gs_bench_samples *s);

/* The HTTP request text of one infer (headers and body, ready to write). */
int gs_bench_infer_request(struct gs_err *err, const struct gs_bench_url *u,
                           const struct gs_bench_model *m, const struct gs_bench_sample *s,
                           bool binary_in, bool binary_out, char **out, size_t *len);

/* The gRPC message of one ModelInfer (5-byte gRPC prefix, then the
 * ModelInferRequest with raw_input_contents), for `-i grpc`. */
int gs_bench_grpc_request(struct gs_err *err, const struct gs_bench_model *m,
                          const struct gs_bench_sample *s, char **out, size_t *len);

/* ---- server-side metrics (Triton's Prometheus names) ---- */

struct gs_bench_server {
  bool seen;           /* the model's series were found */
  double success, queue_us, cin_us, cinfer_us, cout_us, request_us;
};
/* Sums the model's nv_inference_* counters in a Prometheus text. */
int gs_bench_metrics_parse(const char *text, size_t len, const char *model,
                           struct gs_bench_server *out);

/* ---- the run ---- */

enum gs_bench_mode { GS_BENCH_CLOSED, GS_BENCH_OPEN };
enum gs_bench_dist { GS_BENCH_CONSTANT, GS_BENCH_POISSON };

/* Failures by kind; each request counts once, as a success or one of these. */
#define GS_BENCH_ERROR_MAP(X)                                                  \
  X(CONNECT, "connect", "the connection was refused or failed")              \
  X(CLOSED, "closed", "the server closed the connection before the answer ended") \
  X(TIMEOUT, "timeout", "no complete answer within --request-timeout")       \
  X(MALFORMED, "malformed", "the answer was not valid HTTP/1.1")             \
  X(HTTP_4XX, "http_4xx", "the server answered 4xx")                          \
  X(HTTP_5XX, "http_5xx", "the server answered 5xx (or another non-2xx)")    \
  X(BACKLOG, "backlog_full", "open loop: more requests due than the backlog holds") \
  X(GRPC_DEADLINE, "grpc_deadline_exceeded", "gRPC status 4 (DEADLINE_EXCEEDED)") \
  X(GRPC_EXHAUSTED, "grpc_resource_exhausted", "gRPC status 8 (RESOURCE_EXHAUSTED)") \
  X(GRPC_UNAVAILABLE, "grpc_unavailable", "gRPC status 14 (UNAVAILABLE)") \
  X(GRPC_OTHER, "grpc_other", "another non-zero gRPC status")

enum gs_bench_error {
#define GS__BENCH_ERR(name, short_name, text) GS_BENCH_ERR_##name,
  GS_BENCH_ERROR_MAP(GS__BENCH_ERR)
#undef GS__BENCH_ERR
  GS_BENCH_ERR_COUNT
};
const char *gs_bench_error_name(enum gs_bench_error e);
const char *gs_bench_error_text(enum gs_bench_error e);

struct gs_bench_config {
  struct gs_bench_url url;  /* with grpc: the gRPC host:port */
  bool grpc;                /* KServe v2 ModelInfer over h2c (closed loop only) */
  unsigned streams;         /* grpc: calls per connection; 0: 32 */
  const char *request;   /* the bytes each request sends (KServe or plain); */
  size_t request_len;    /* several samples: requests[] below instead */
  const char *const *requests;
  const size_t *request_lens;
  size_t nrequests;
  unsigned batch;        /* inferences per request (inferences/s = requests/s * batch) */
  enum gs_bench_mode mode;
  enum gs_bench_dist dist;
  double start, end, step;    /* concurrency or request rate (per second) range */
  unsigned threads;           /* 0: the machine's cores */
  unsigned connections;       /* open loop: connections in all; 0: 64 */
  size_t max_backlog;         /* open loop: due requests waiting for a connection; 0: 1000000 */
  unsigned window_ms;         /* a window's time; 0: 5000 */
  unsigned window_count;      /* > 0: windows of this many requests (capped by window_ms) */
  double stability;           /* tolerance, percent; 0: 10 */
  unsigned max_trials;        /* windows per step before giving up; 0: 10 */
  double stability_pct;       /* latency figure stabilised: 0 = average, else that percentile */
  unsigned request_timeout_ms; /* 0: 30000 */
  uint64_t seed;              /* Poisson arrivals */
  /* Server metrics (Triton's /metrics) read around each window; NULL: none. */
  const struct gs_bench_url *metrics_url;
  const char *metrics_path;
  const char *model;          /* label to sum in the metrics */
  /* Called after each window (progress line); may be NULL. */
  void (*on_window)(void *ctx, double level, unsigned trial, const struct gs_bench_config *cfg,
                    uint64_t ok, double per_s, uint64_t p99_ns);
  void *ctx;
};

/* One step (concurrency or rate) as measured: the stable windows merged. */
struct gs_bench_step {
  double level;             /* concurrency or requests/s asked */
  bool stable;
  unsigned trials;          /* windows measured */
  double seconds;           /* of the merged windows */
  uint64_t ok;              /* successful requests */
  uint64_t errors[GS_BENCH_ERR_COUNT];
  uint64_t delayed;         /* open loop: sent later than intended (no free connection) */
  double throughput;        /* successful inferences per second */
  double send_us, recv_us;  /* average client send and receive time */
  uint64_t p50_us, p90_us, p95_us, p99_us, max_us;
  double avg_us;
  struct gs_bench_server server; /* per-request averages (µs) when seen */
  double server_net_us;     /* avg latency - send - recv - server queue and compute */
};

/* Runs every step of the range; steps[] gets one entry each (caller frees
 * with free()). Bounded in time: max_trials windows per step, each ending on
 * time, requests past their timeout counted and their connection replaced. */
int gs_bench_run(struct gs_err *err, const struct gs_bench_config *cfg,
                 struct gs_bench_step **steps, size_t *nsteps);

/* perf_analyzer's CSV: header (first column "Concurrency" or "Request Rate")
 * and one row per stable step; unstable steps are left out. */
void gs_bench_csv_write(FILE *f, enum gs_bench_mode mode, const struct gs_bench_step *s, size_t n);

/* ---- plots ---- */

struct gs_bench_series {
  char label[128];
  bool rate;     /* x is "Request Rate" rather than "Concurrency" */
  size_t n;
  double *x, *throughput, *latency_us; /* latency: the chosen percentile column */
};
/* Reads a perf_analyzer-style CSV; column: "p50 latency", "p90 latency"...
 * or "Avg latency". */
int gs_bench_csv_read(struct gs_err *err, const char *what, const char *text, size_t len,
                      const char *column, struct gs_bench_series *out);
void gs_bench_series_free(struct gs_bench_series *s);
/* An SVG document: throughput and latency against x, one line per series, a
 * legend, and a horizontal budget line on the latency chart when budget_us > 0. */
int gs_bench_plot_svg(struct gs_err *err, const struct gs_bench_series *s, size_t n,
                      const char *column, double budget_us, char **svg, size_t *len);

#endif
