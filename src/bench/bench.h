/* SPDX-License-Identifier: Apache-2.0 */
/* bench.h: the bench layer's whole interface (gs_bench_): a load generator for
 * HTTP inference endpoints (KServe v2 / Triton, our workers, any HTTP URL).
 * Closed loop (N requests outstanding) and open loop (requests at intended
 * times, latency counted from them: no coordinated omission), measurement
 * windows repeated until stable, perf_analyzer's CSV, and a plot of CSVs (SVG,
 * or PNG and PDF through librsvg and cairo).
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
  char version[64];       /* "": the server's choice; else requests name this version */
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

/* The HTTP request text of one infer (headers and body, ready to write);
 * headers: more header lines, each ending in CRLF, or NULL. */
int gs_bench_infer_request(struct gs_err *err, const struct gs_bench_url *u,
                           const struct gs_bench_model *m, const struct gs_bench_sample *s,
                           bool binary_in, bool binary_out, const char *headers, char **out,
                           size_t *len);

/* The gRPC message of one ModelInfer (5-byte gRPC prefix, then the
 * ModelInferRequest with raw_input_contents), for `-i grpc`. */
int gs_bench_grpc_request(struct gs_err *err, const struct gs_bench_model *m,
                          const struct gs_bench_sample *s, char **out, size_t *len);

/* ---- server-side metrics (Triton's Prometheus names) ---- */

struct gs_bench_server {
  bool seen;           /* the model's series were found */
  double success, queue_us, cin_us, cinfer_us, cout_us, request_us;
};
/* Sums the model's nv_inference_* counters in a Prometheus text; version
 * NULL: every version's series, else only those labelled version="<version>". */
int gs_bench_metrics_parse(const char *text, size_t len, const char *model, const char *version,
                           struct gs_bench_server *out);

/* Triton's GPU gauges as perf_analyzer's --collect-metrics reads them, per
 * gpu_uuid label, over a step's samples: utilization and power averaged,
 * memory used at its largest, total memory as first seen. */
#define GS_BENCH_MAX_GPUS 32
struct gs_bench_gpu {
  char uuid[80];
  double util_sum, power_sum;   /* nv_gpu_utilization (0 to 1), nv_gpu_power_usage (W) */
  unsigned util_n, power_n;     /* their samples: the averages are sum / n */
  double used_max, total;       /* nv_gpu_memory_used_bytes, nv_gpu_memory_total_bytes */
  unsigned used_n, total_n;
};
struct gs_bench_gpus {
  unsigned n;
  unsigned dropped;             /* samples of GPUs past GS_BENCH_MAX_GPUS */
  struct gs_bench_gpu gpu[GS_BENCH_MAX_GPUS];
};
/* Folds one Prometheus text's nv_gpu_* samples into acc. */
void gs_bench_gpus_sample(struct gs_bench_gpus *acc, const char *text, size_t len);
/* Adds src's samples to dst's (a step's windows merged, in order). */
void gs_bench_gpus_merge(struct gs_bench_gpus *dst, const struct gs_bench_gpus *src);

/* ---- the run ---- */

enum gs_bench_mode { GS_BENCH_CLOSED, GS_BENCH_OPEN };
/* Open-loop arrivals: evenly spaced, Poisson, or at the gaps of a
 * --request-intervals file (intervals_ns, in order, repeated). */
enum gs_bench_dist { GS_BENCH_CONSTANT, GS_BENCH_POISSON, GS_BENCH_CUSTOM };

/* perf_analyzer's --request-intervals file (intervals.c): microseconds
 * between successive requests, white-space separated, into *gaps_ns
 * (nanoseconds; the caller frees it). A refusal names the file and line. */
#define GS_BENCH_MAX_INTERVALS 10000000u
int gs_bench_intervals_parse(struct gs_err *err, const char *name, const char *text, size_t len,
                             double **gaps_ns, size_t *n);
/* The request rate they make: requests per second, on average. */
double gs_bench_intervals_rate(const double *gaps_ns, size_t n);

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

struct gs_bench_step;
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
  double start, end, step;    /* concurrency or request rate (per second) range; end 0:
                               * no end (with threshold_us), as perf_analyzer's */
  double threshold_us;        /* > 0: perf_analyzer's --latency-threshold: a level whose
                               * stabilized latency reaches it fails, and ends a linear sweep */
  bool binary;                /* perf_analyzer's --binary-search (gs_bench_search) */
  bool throughput_stable;     /* perf_analyzer's async rule: a step whose throughput settled
                               * counts as stable when its latency did not */
  unsigned warmup;            /* requests sent and not measured before a step's first window */
  unsigned request_count;     /* > 0: one window measuring exactly this many requests, the
                               * first to end, however long they take */
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
  const double *intervals_ns; /* GS_BENCH_CUSTOM: the gaps, in order, repeated */
  size_t nintervals;
  /* Server metrics (Triton's /metrics) read around each window; NULL: none. */
  const struct gs_bench_url *metrics_url;
  const char *metrics_path;
  const char *model;          /* label to sum in the metrics */
  const char *version;        /* and its version label; NULL: every version */
  unsigned gpu_interval_ms;   /* > 0: GPU gauges sampled this often during windows */
  /* Called after each window (progress line); may be NULL. */
  void (*on_window)(void *ctx, double level, unsigned trial, const struct gs_bench_config *cfg,
                    uint64_t ok, double per_s, uint64_t p99_ns);
  /* Called after each step; may be NULL. */
  void (*on_step)(void *ctx, const struct gs_bench_config *cfg, const struct gs_bench_step *s);
  void *ctx;
};

/* One step (concurrency or rate) as measured: the stable windows merged. */
struct gs_bench_step {
  double level;             /* concurrency or requests/s asked */
  bool stable;
  bool over;                /* stab_us reached cfg->threshold_us: the level fails the search */
  bool latency_unsettled;   /* stable by throughput_stable's rule only */
  unsigned trials;          /* windows measured */
  double seconds;           /* of the merged windows */
  uint64_t ok;              /* successful requests */
  uint64_t errors[GS_BENCH_ERR_COUNT];
  uint64_t delayed;         /* open loop: sent later than intended (no free connection) */
  double throughput;        /* successful inferences per second */
  double send_us, recv_us;  /* average client send and receive time */
  uint64_t p50_us, p90_us, p95_us, p99_us, max_us;
  uint64_t pextra_us;       /* at cfg->stability_pct, when set */
  double avg_us;
  double stab_us;           /* the latency stabilized and held against the threshold */
  struct gs_bench_gpus gpus; /* when gpu_interval_ms is set */
  struct gs_bench_server server; /* per-request averages (µs) when seen */
  double server_net_us;     /* avg latency - send - recv - server queue and compute */
};

/* perf_analyzer's stability test of three windows' figures (throughputs, or
 * latencies): the largest over the smallest at most 1 + pct / 100. */
bool gs_bench_settled(const double v[3], double pct);

/* A step counts (for the search, the CSV and the answer): it stabilized, and
 * it is under the latency threshold when there is one. */
bool gs_bench_step_met(const struct gs_bench_step *s);

/* perf_analyzer's search of a range (its InferenceProfiler::Profile). Linear:
 * start, start + step, ... up to end (no end when end is 0), ending at the
 * first level that fails when stop_on_fail. Binary: start (if it fails, the
 * search ends), then end (if it passes, the search ends), then midpoints: a
 * level that passes raises the low bound, one that fails lowers the high
 * one, until they are at most step apart. Whole levels (concurrency) round
 * midpoints down, as perf_analyzer's integer arithmetic does. */
struct gs_bench_search {
  double start, end, step, lo, hi, level;
  bool binary, whole, stop_on_fail, done;
  unsigned phase;   /* binary: 0 start, 1 end, 2 midpoints */
  size_t i;         /* linear: levels given */
};
void gs_bench_search_init(struct gs_bench_search *s, double start, double end, double step,
                          bool binary, bool whole, bool stop_on_fail);
/* The next level to measure, or false when the search is over. */
bool gs_bench_search_next(struct gs_bench_search *s, double *level);
/* Whether the level next returned passed. */
void gs_bench_search_result(struct gs_bench_search *s, bool met);

/* Runs the search of the range; steps[] gets one entry per level measured, in
 * the order measured (caller frees with free()). Bounded in time: max_trials
 * windows per step, each ending on time, requests past their timeout counted
 * and their connection replaced, at most 10000 steps. */
int gs_bench_run(struct gs_err *err, const struct gs_bench_config *cfg,
                 struct gs_bench_step **steps, size_t *nsteps);
/* The highest level that met (the search's answer), or NULL. */
const struct gs_bench_step *gs_bench_best(const struct gs_bench_step *s, size_t n);

/* perf_analyzer's CSV (its ReportWriter): one row per step that met, in
 * increasing inferences/s; its columns, named and ordered as perf_analyzer's,
 * depend on these. */
struct gs_bench_csv {
  enum gs_bench_mode mode;  /* "Concurrency" or "Request Rate" */
  bool server;              /* the server's columns (perf_analyzer: when the server has the
                             * statistics extension); a step without figures leaves them empty */
  bool verbose;             /* --verbose-csv's columns */
  double percentile;        /* > 0: its pN latency column among p50..p99; then no Avg latency */
  bool gpus;                /* with verbose: the four GPU columns, "uuid:value;" lists */
};
int gs_bench_csv_write(FILE *f, const struct gs_bench_csv *o, const struct gs_bench_step *s,
                       size_t n);

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
enum gs_bench_image { GS_BENCH_SVG, GS_BENCH_PNG, GS_BENCH_PDF };
/* The SVG as PNG or PDF (librsvg onto a cairo surface, render.c): *out is
 * a heap buffer of *outlen bytes. */
int gs_bench_plot_render(struct gs_err *err, const char *svg, size_t len, enum gs_bench_image fmt,
                         char **out, size_t *outlen);

#endif
