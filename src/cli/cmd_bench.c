/* SPDX-License-Identifier: Apache-2.0 */
/* cmd_bench.c: `gpuslice bench` (the load generator: closed or open loop
 * against a KServe v2 endpoint or any HTTP URL; perf_analyzer's options,
 * table, CSV, JSON), and the verb table with `bench plot` (cmd_bench_plot.c).
 * Options and printing only; the bench layer measures (docs/bench.md). */
#include "bench/bench.h"
#include "cli/cli.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_SHAPES 16
#define MAX_HEADERS 32

enum { O_URL = 'u', O_MODEL = 'm', O_BATCH = 'b', O_CSV = 'f', O_INTERVAL = 'p',
       O_STABILITY = 's', O_TRIALS = 'r', O_HEADER = 'H', O_PROTO = 'i', O_VERSION = 'x',
       O_ASYNC = 'a', O_VERBOSE = 'v', O_THRESHOLD = 'l',
       O_CONC = 1000, O_RATE, O_DIST, O_INPUT, O_SHAPE, O_IN_FMT, O_OUT_FMT, O_PATH, O_METHOD,
       O_BODY, O_THREADS, O_CONNS, O_MODE, O_COUNT, O_PCT, O_TIMEOUT, O_BACKLOG, O_METRICS,
       O_NO_METRICS, O_SEED, O_STREAMS, O_GRPC_URL, O_SYNC, O_BINARY, O_WARMUP, O_REQ_COUNT,
       O_KIND, O_SHM, O_COMPRESS, O_COLLECT, O_GPU_INTERVAL, O_VERBOSE_CSV, O_PRINT_VERSION,
       O_INTERVALS };

struct bench_opts {
  const char *url, *model, *csv, *input, *path, *method, *body, *metrics, *grpc_url;
  const char *shapes[MAX_SHAPES], *headers[MAX_HEADERS];
  unsigned nshapes, nheaders;
  const char *range;       /* the --*-range text (or --request-intervals file), for messages */
  const char *intervals;   /* --request-intervals FILE */
  bool dist_given;         /* --request-distribution */
  bool range_end;          /* it named an END */
  bool json_in, json_out, no_metrics, count_mode;
  bool verbose, sync, collect, verbose_csv, print_version, compress;
  unsigned gpu_interval_ms; /* --metrics-interval, 0: not given */
  struct gs_bench_config cfg;
};

static int positive(const char *value, const char *what, double *out, bool whole)
{
  char *e;
  double v = strtod(value, &e);
  if (e == value || *e || !(v > 0) || v > 1e9 || (whole && v != floor(v)))
    return cli_usage("%s: expected a positive %snumber, got '%s'", what, whole ? "whole " : "",
                     value);
  *out = v;
  return 0;
}

static int unsigned_opt(const char *value, const char *what, unsigned *out)
{
  double v = 0;
  int rc = positive(value, what, &v, true);
  *out = (unsigned)v;
  return rc;
}

static bool is_zero(const char *t)
{
  char *e;
  double v = strtod(t, &e);
  return e != t && !*e && v == 0;
}

/* "start[:end[:step]]"; END 0 is perf_analyzer's "no end" (with -l). */
static int range(struct bench_opts *o, const char *value, const char *what, enum gs_bench_mode m)
{
  char buf[128], *parts[3] = {0}, *save = NULL, *p;
  double v[3] = {0, 0, 1};
  int n = 0, rc;
  if (o->range)
    return cli_usage("give one of --concurrency-range, --request-rate-range and "
                     "--request-intervals");
  if (strlen(value) >= sizeof(buf))
    return cli_usage("%s %s: too long", what, value);
  strcpy(buf, value);
  for (p = strtok_r(buf, ":", &save); p && n < 3; p = strtok_r(NULL, ":", &save))
    parts[n++] = p;
  if (!n || p)
    return cli_usage("%s %s: expected START[:END[:STEP]]", what, value);
  for (int i = 0; i < n; i++)
    if ((i != 1 || !is_zero(parts[1])) &&
        (rc = positive(parts[i], what, &v[i], m == GS_BENCH_CLOSED)) != 0)
      return rc;
  if (n == 1)
    v[1] = v[0];
  if (v[1] < v[0] && v[1] != 0)
    return cli_usage("%s %s: END is below START", what, value);
  o->range = value;
  o->range_end = n > 1;
  o->cfg.mode = m;
  o->cfg.start = v[0], o->cfg.end = v[1], o->cfg.step = v[2];
  return 0;
}

static int format(const char *value, const char *what, bool *json)
{
  if (strcmp(value, "json") != 0 && strcmp(value, "binary") != 0)
    return cli_usage("%s %s: expected json or binary", what, value);
  *json = strcmp(value, "json") == 0;
  return 0;
}

/* -i http|grpc (perf_analyzer's spelling: bench owns -i, see run_bench) or
 * --protocol. */
static int protocol(const char *v, struct gs_bench_config *g)
{
  /* getopt takes perf_analyzer's --proto FILE for an abbreviated --protocol */
  if (strstr(v, ".proto"))
    return cli_usage("--proto: not taken by `gpuslice bench`: %s", cli_bench_refusal("--proto"));
  if (strcmp(v, "http") != 0 && strcmp(v, "grpc") != 0)
    return cli_usage("-i %s: expected http or grpc", v);
  g->grpc = v[0] == 'g';
  return 0;
}

/* A DURATION option kept in milliseconds (a bare number is ms, as perf_analyzer's). */
static int millis(const char *v, const char *what, unsigned *out)
{
  return cli_duration_in(what, v, 1000, 1000, 86400000000ull, 1000, out);
}

/* An option of perf_analyzer's whose one value bench has, or "no value"
 * words for the others: "--shared-memory system: <why>". */
static int only(const char *v, const char *what, const char *ours, const char *choices,
                const char *why)
{
  size_t n = strlen(v);
  const char *p = choices;
  if (strcmp(v, ours) == 0)
    return 0;
  while ((p = strstr(p, v)) && !((p == choices || p[-1] == '|') && (!p[n] || p[n] == '|')))
    p++;
  if (!n || !p)
    return cli_usage("%s %s: expected one of %s", what, v, choices);
  return cli_usage("%s %s: %s", what, v, why);
}

/* -l: perf_analyzer's whole milliseconds, or any DURATION; 0: no threshold. */
static int threshold(const char *v, double *us_out)
{
  uint64_t us = 0;
  int rc = is_zero(v) ? 0 : cli_duration("--latency-threshold", v, 1000, 1, 86400000000ull, &us);
  *us_out = (double)us;
  return rc;
}

/* perf_analyzer's --percentile: 1 to 99 (decimals too, here), or -1: the average. */
static int percentile(const char *v, double *out)
{
  int rc;
  if (strcmp(v, "-1") == 0) {
    *out = 0;
    return 0;
  }
  if ((rc = positive(v, "--percentile", out, false)) == 0 && *out >= 100)
    return cli_usage("--percentile %s: expected a number below 100 (or -1: the average)", v);
  return rc;
}

/* perf_analyzer's options for the search, the measurement's edges (warmup,
 * request count, async rule), GPU metrics and reports, and the ones whose
 * single meaningful value bench accepts. */
static int on_search_opt(struct bench_opts *o, int ch, const char *v)
{
  struct gs_bench_config *g = &o->cfg;
  switch (ch) {
  case O_VERSION:
    if (!*v || strlen(v) >= sizeof(((struct gs_bench_model *)0)->version) ||
        strspn(v, "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ._-") != strlen(v))
      return cli_usage("-x %s: expected a model version (a number, as Triton's)", v);
    g->version = v;
    return 0;
  case O_ASYNC: g->throughput_stable = true; return 0;
  case O_SYNC: o->sync = true; return 0;
  case O_VERBOSE: o->verbose = true; return 0;
  case O_THRESHOLD: return threshold(v, &g->threshold_us);
  case O_BINARY: g->binary = true; return 0;
  case O_WARMUP:
    if (is_zero(v))
      return 0;
    return unsigned_opt(v, "--warmup-request-count", &g->warmup);
  case O_REQ_COUNT: return unsigned_opt(v, "--request-count", &g->request_count);
  case O_COLLECT: o->collect = true; return 0;
  case O_GPU_INTERVAL: return millis(v, "--metrics-interval", &o->gpu_interval_ms);
  case O_VERBOSE_CSV: o->verbose_csv = true; return 0;
  case O_PRINT_VERSION: o->print_version = true; return 0;
  case O_KIND:
    return only(v, "--service-kind", "triton", "triton|triton_c_api|tfserving|torchserve|openai|"
                "dynamic_grpc", "bench speaks KServe v2, Triton's protocol (over HTTP or gRPC), "
                "only: --service-kind triton");
  case O_SHM:
    return only(v, "--shared-memory", "none", "none|system|cuda", "bench sends every tensor in "
                "its request; it registers no shared-memory regions with the server");
  case O_COMPRESS:
    o->compress = true;
    return only(v, "--grpc-compression-algorithm", "none", "none|gzip|deflate",
                "bench sends its gRPC messages uncompressed");
  default: return cli_usage("unexpected option");
  }
}

static int on_bench_opt(struct cli *c, int ch, const char *v, void *arg)
{
  struct bench_opts *o = arg;
  struct gs_bench_config *g = &o->cfg;
  double d = 0;
  int rc;
  (void)c;
  switch (ch) {
  case O_URL: o->url = v; return 0;
  case O_MODEL: o->model = v; return 0;
  case O_CSV: o->csv = v; return 0;
  case O_INPUT: o->input = v; return 0;
  case O_PATH: o->path = v; return 0;
  case O_METHOD: o->method = v; return 0;
  case O_BODY: o->body = v; return 0;
  case O_METRICS: o->metrics = v; return 0;
  case O_GRPC_URL: o->grpc_url = v; return 0;
  case O_STREAMS: return unsigned_opt(v, "--streams", &g->streams);
  case O_PROTO: return protocol(v, g);
  case O_NO_METRICS: o->no_metrics = true; return 0;
  case O_BATCH: return unsigned_opt(v, "--batch-size", &g->batch);
  case O_CONC: return range(o, v, "--concurrency-range", GS_BENCH_CLOSED);
  case O_RATE: return range(o, v, "--request-rate-range", GS_BENCH_OPEN);
  case O_INTERVALS:
    if (o->range)
      return range(o, v, "--request-intervals", GS_BENCH_OPEN); /* says give one */
    o->range = o->intervals = v;
    o->cfg.mode = GS_BENCH_OPEN;
    return 0;
  case O_IN_FMT: return format(v, "--input-tensor-format", &o->json_in);
  case O_OUT_FMT: return format(v, "--output-tensor-format", &o->json_out);
  case O_THREADS: return unsigned_opt(v, "--threads", &g->threads);
  case O_CONNS: return unsigned_opt(v, "--connections", &g->connections);
  case O_INTERVAL: return millis(v, "--measurement-interval", &g->window_ms);
  case O_COUNT: return unsigned_opt(v, "--measurement-request-count", &g->window_count);
  case O_TRIALS: return unsigned_opt(v, "--max-trials", &g->max_trials);
  case O_TIMEOUT: return millis(v, "--request-timeout", &g->request_timeout_ms);
  case O_STABILITY: return positive(v, "--stability-percentage", &g->stability, false);
  case O_SEED: rc = positive(v, "--seed", &d, true), g->seed = (uint64_t)d; return rc;
  case O_BACKLOG: rc = positive(v, "--max-backlog", &d, true), g->max_backlog = (size_t)d; return rc;
  case O_PCT: return percentile(v, &g->stability_pct);
  case O_DIST:
    if (strcmp(v, "constant") != 0 && strcmp(v, "poisson") != 0)
      return cli_usage("--request-distribution %s: expected constant or poisson", v);
    g->dist = v[0] == 'p' ? GS_BENCH_POISSON : GS_BENCH_CONSTANT;
    o->dist_given = true;
    return 0;
  case O_MODE:
    if (strcmp(v, "time_windows") != 0 && strcmp(v, "count_windows") != 0)
      return cli_usage("--measurement-mode %s: expected time_windows or count_windows", v);
    o->count_mode = v[0] == 'c';
    return 0;
  case O_SHAPE:
    if (o->nshapes == MAX_SHAPES)
      return cli_usage("--shape: at most %d", MAX_SHAPES);
    o->shapes[o->nshapes++] = v;
    return 0;
  case O_HEADER:
    if (o->nheaders == MAX_HEADERS || !strchr(v, ':') || strpbrk(v, "\r\n"))
      return cli_usage("--header '%s': expected 'Name: value' (at most %d)", v, MAX_HEADERS);
    o->headers[o->nheaders++] = v;
    return 0;
  default: return on_search_opt(o, ch, v);
  }
}

/* The short letters are perf_analyzer's (-u -m -x -b -f -p -s -r -H -i -a -v -l). */
static const struct cli_opt bench_opts[] = {
    {"url", 'u', "URL", O_URL, NULL, "the server: http://HOST:PORT[/prefix] (required)",
     CLI_VALUE_TEXT, NULL},
    {"model", 'm', "MODEL", O_MODEL, NULL, "a KServe v2 model to infer on (or --http-path)",
     CLI_VALUE_TEXT, NULL},
    {"model-version", 'x', "VERSION", O_VERSION, "the server's choice",
     "that version of the model (perf_analyzer's -x)", CLI_VALUE_TEXT, NULL},
    {"service-kind", 0, "triton", O_KIND, "triton", "the server's protocol: KServe v2 (Triton's)",
     CLI_VALUE_CHOICE, NULL},
    {"http-path", 0, "PATH", O_PATH, NULL, "or plain HTTP requests to this path", CLI_VALUE_TEXT,
     NULL},
    {"protocol", 'i', "http|grpc", O_PROTO, "http", "the protocol of the load (perf_analyzer's -i)",
     CLI_VALUE_CHOICE, NULL},
    {"grpc-url", 0, "HOST:PORT", O_GRPC_URL, NULL, "-i grpc: where the gRPC load goes",
     CLI_VALUE_TEXT, NULL},
    {"streams", 0, "N", O_STREAMS, "32", "-i grpc: calls in flight per connection", CLI_VALUE_TEXT,
     NULL},
    {"concurrency-range", 0, "S[:E[:STEP]]", O_CONC, "1", "closed loop: requests in flight",
     CLI_VALUE_TEXT, NULL},
    {"request-rate-range", 0, "S[:E[:STEP]]", O_RATE, NULL, "or open loop: requests per second",
     CLI_VALUE_TEXT, NULL},
    {"request-distribution", 0, "constant|poisson", O_DIST, "constant", "open loop: arrivals",
     CLI_VALUE_CHOICE, NULL},
    {"request-intervals", 0, "FILE", O_INTERVALS, NULL,
     "or open loop at the gaps in FILE (microseconds, one per line, repeated)", CLI_VALUE_FILE,
     NULL},
    {"distribution", 0, "constant|poisson", O_DIST, NULL, "the same as --request-distribution",
     CLI_VALUE_CHOICE, NULL},
    {"connections", 0, "N", O_CONNS, "64", "open loop: connections in all", CLI_VALUE_TEXT, NULL},
    {"max-backlog", 0, "N", O_BACKLOG, "1000000",
     "open loop: due requests waiting for a connection", CLI_VALUE_TEXT, NULL},
    {"batch-size", 'b', "N", O_BATCH, "1", "inferences per request", CLI_VALUE_TEXT, NULL},
    {"input-data", 0, "FILE|random|zero", O_INPUT, "random", "the inputs: perf_analyzer's JSON",
     CLI_VALUE_FILE, NULL},
    {"shape", 0, "NAME:D,...", O_SHAPE, NULL, "a variable input's shape (repeat per input)",
     CLI_VALUE_TEXT, NULL},
    {"input-tensor-format", 0, "json|binary", O_IN_FMT, "binary", "how inputs are sent",
     CLI_VALUE_CHOICE, NULL},
    {"output-tensor-format", 0, "json|binary", O_OUT_FMT, "binary", "how outputs are asked for",
     CLI_VALUE_CHOICE, NULL},
    {"http-method", 0, "METHOD", O_METHOD, "GET", "plain HTTP: the method", CLI_VALUE_TEXT, NULL},
    {"http-body", 0, "TEXT|@FILE", O_BODY, "none", "plain HTTP: the body", CLI_VALUE_TEXT, NULL},
    {"header", 'H', "HEADER", O_HEADER, NULL, "a request header, 'Name: value' (repeat for several)",
     CLI_VALUE_TEXT, NULL},
    {"threads", 0, "N", O_THREADS, "the cores", "load threads, each with its own event loop",
     CLI_VALUE_TEXT, NULL},
    {"max-threads", 0, "N", O_THREADS, "the cores", "the same as --threads (perf_analyzer's name)",
     CLI_VALUE_TEXT, NULL},
    {"async", 'a', NULL, O_ASYNC, NULL,
     "a step whose throughput settles is stable even if its latency does not", CLI_VALUE_TEXT,
     NULL},
    {"sync", 0, NULL, O_SYNC, "this", "throughput and latency must both settle", CLI_VALUE_TEXT,
     NULL},
    {"shared-memory", 0, "none", O_SHM, "none", "tensors travel in the requests",
     CLI_VALUE_CHOICE, NULL},
    {"grpc-compression-algorithm", 0, "none", O_COMPRESS, "none", "-i grpc: messages uncompressed",
     CLI_VALUE_CHOICE, NULL},
    {"measurement-interval", 'p', "DURATION", O_INTERVAL, "5s",
     "a measurement window (a bare number is ms)", CLI_VALUE_TEXT, NULL},
    {"measurement-mode", 0, "time_windows|count_windows", O_MODE, "time_windows",
     "windows of a time, or of a request count", CLI_VALUE_CHOICE, NULL},
    {"measurement-request-count", 0, "N", O_COUNT, "50", "count_windows: requests per window",
     CLI_VALUE_TEXT, NULL},
    {"stability-percentage", 's', "PCT", O_STABILITY, "10",
     "a step is stable when 3 windows are within this", CLI_VALUE_TEXT, NULL},
    {"max-trials", 'r', "N", O_TRIALS, "10", "windows per step before giving up", CLI_VALUE_TEXT,
     NULL},
    {"percentile", 0, "P", O_PCT, "-1: the average",
     "the latency stabilized, held against -l and added to the CSV", CLI_VALUE_TEXT, NULL},
    {"latency-threshold", 'l', "DURATION", O_THRESHOLD, "none",
     "a level fails at this latency; a sweep stops there (a bare number is ms)", CLI_VALUE_TEXT,
     NULL},
    {"binary-search", 0, NULL, O_BINARY, NULL,
     "bisect START:END for the highest level under -l (STEP: the precision)", CLI_VALUE_TEXT,
     NULL},
    {"warmup-request-count", 0, "N", O_WARMUP, "0", "requests that end before measuring starts",
     CLI_VALUE_TEXT, NULL},
    {"request-count", 0, "N", O_REQ_COUNT, "none",
     "one window of exactly N requests instead of windows until stable", CLI_VALUE_TEXT, NULL},
    {"request-timeout", 0, "DURATION", O_TIMEOUT, "30s", "a request's bound (a bare number is ms)",
     CLI_VALUE_TEXT, NULL},
    {"metrics-url", 0, "URL", O_METRICS, "--url's /metrics", "Triton's metrics (its port 8002)",
     CLI_VALUE_TEXT, NULL},
    {"no-server-metrics", 0, NULL, O_NO_METRICS, NULL, "read no server metrics", CLI_VALUE_TEXT,
     NULL},
    {"collect-metrics", 0, NULL, O_COLLECT, NULL,
     "also sample Triton's GPU gauges (nv_gpu_*) during windows", CLI_VALUE_TEXT, NULL},
    {"metrics-interval", 0, "DURATION", O_GPU_INTERVAL, "1s",
     "--collect-metrics: how often (a bare number is ms)", CLI_VALUE_TEXT, NULL},
    {"seed", 0, "N", O_SEED, "1", "open loop: the Poisson arrivals' seed", CLI_VALUE_TEXT, NULL},
    {"file", 'f', "CSV", O_CSV, "none", "also write perf_analyzer's CSV report here",
     CLI_VALUE_FILE, NULL},
    {"verbose-csv", 0, NULL, O_VERBOSE_CSV, NULL,
     "the CSV's extra columns (average latency, request/response, response wait, GPUs)",
     CLI_VALUE_TEXT, NULL},
    {"verbose", 'v', NULL, O_VERBOSE, NULL, "every window and step on stderr", CLI_VALUE_TEXT,
     NULL},
    {"version", 0, NULL, O_PRINT_VERSION, NULL, "print gpuslice's version and exit",
     CLI_VALUE_TEXT, NULL},
    CLI_OPT_JSON("print the steps as JSON instead of the table (docs/bench.md)"),
    {0},
};

static const struct cli_spec bench_spec = {
    .refusal = cli_bench_refusal,
    .operands = NULL,
    .opts = bench_opts,
    .about = "A load generator with perf_analyzer's options and CSV: closed loop (concurrency) or\n"
             "open loop (request rate, free of coordinated omission), against a KServe v2 endpoint\n"
             "(HTTP or gRPC) or any HTTP URL. Each step runs windows until 3 agree. Exit 1 when a\n"
             "step never stabilized or the server cannot be reached.",
    .examples = "gpuslice bench --url http://localhost:8000 -m flower --concurrency-range 1:100:10 "
                "-f out.csv\n"
                "gpuslice bench --url http://localhost:8080 --http-path /index.html "
                "--request-rate-range 1000 --request-distribution poisson",
};

/* bench's errors are not NVML's: no NVML name after the message. A server
 * or the network failing is exit 1, not 3: no state of ours is involved. */
int cli_bench_fail(const struct gs_err *err)
{
  fprintf(stderr, "gpuslice: %s\n", err->msg);
  return err->code == GS_E_IO ? GS_EXIT_FAILED : cli_exit_of(err->code);
}

/* A file the command line names (--input-data, --http-body @FILE, a CSV):
 * when it cannot be read the error is the command line's (exit 2). */
int cli_named_file(struct gs_err *err, const char *what, const char *path, size_t limit,
                   char **text, size_t *len)
{
  struct gs_err why = {0};
  if (gs_file_read(&why, path, limit, text, len) == 0)
    return 0;
  return gs_err_set(err, why.code == GS_E_NO_MEMORY ? GS_E_NO_MEMORY : GS_E_USAGE, "%s %s",
                    what, why.msg);
}

/* ---- requests ---- */

/* --http-body TEXT, or @FILE */
static int plain_body(struct gs_err *err, const char *body, char **out, size_t *len)
{
  if (body && body[0] == '@')
    return cli_named_file(err, "--http-body", body + 1, 256u << 20, out, len);
  *len = body ? strlen(body) : 0;
  *out = strdup(body ? body : "");
  return *out ? 0 : gs_err_set(err, GS_E_NO_MEMORY, "out of memory");
}

static int plain_request(struct gs_err *err, const struct bench_opts *o, const struct gs_bench_url *u,
                         char **req, size_t *len)
{
  char *body = NULL, *buf = NULL;
  size_t blen = 0, n = 0;
  FILE *f;
  int rc = plain_body(err, o->body, &body, &blen);
  if (rc)
    return rc;
  if (!(f = open_memstream(&buf, &n))) {
    free(body);
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory");
  }
  fprintf(f, "%s %s%s HTTP/1.1\r\nHost: %s:%s\r\n", o->method ? o->method : "GET", u->prefix,
          o->path, u->host, u->port);
  for (unsigned i = 0; i < o->nheaders; i++)
    fprintf(f, "%s\r\n", o->headers[i]);
  if (blen || o->body)
    fprintf(f, "Content-Length: %zu\r\n", blen);
  fputs("\r\n", f);
  fwrite(body, 1, blen, f);
  fclose(f);
  free(body);
  *req = buf;
  *len = n;
  return buf ? 0 : gs_err_set(err, GS_E_NO_MEMORY, "out of memory");
}

static int model_samples(struct gs_err *err, const struct bench_opts *o,
                         const struct gs_bench_model *m, struct gs_bench_samples *s)
{
  char *text = NULL;
  size_t len;
  int rc;
  if (!o->input || strcmp(o->input, "random") == 0 || strcmp(o->input, "zero") == 0)
    return gs_bench_samples_fill(err, m, o->input && o->input[0] == 'z', o->cfg.seed, s);
  if ((rc = cli_named_file(err, "--input-data", o->input, 1u << 30, &text, &len)) != 0)
    return rc;
  rc = gs_bench_samples_parse(err, o->input, text, len, m, s);
  free(text);
  return rc;
}

/* -H's headers as request lines, each ending in CRLF (perf_analyzer adds
 * them to every HTTP request; gRPC calls carry none, as its). */
static char *header_lines(const struct bench_opts *o)
{
  char *buf = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&buf, &n);
  if (!f)
    return NULL;
  for (unsigned i = 0; i < o->nheaders; i++)
    fprintf(f, "%s\r\n", o->headers[i]);
  if (fclose(f) != 0) {
    free(buf);
    return NULL;
  }
  return buf;
}

/* Reads the model's metadata and builds one request per input sample. */
static int kserve_requests(struct gs_err *err, struct bench_opts *o, const struct gs_bench_url *u,
                           char ***reqs, size_t **lens, size_t *n)
{
  struct gs_bench_model m;
  struct gs_bench_samples s = {0};
  char path[400], what[1024], *body = NULL, *headers = NULL;
  size_t len;
  int status, rc;
  snprintf(path, sizeof(path), "/v2/models/%s%s%s", o->model, o->cfg.version ? "/versions/" : "",
           o->cfg.version ? o->cfg.version : "");
  snprintf(what, sizeof(what), "http://%s:%s%s%s", u->host, u->port, u->prefix, path);
  if ((rc = gs_bench_http_get(err, u, path, 10000, &status, &body, &len)) != 0)
    return rc;
  if (status != 200) {
    rc = gs_err_set(err, GS_E_NOT_FOUND, "%s: the server answered %d to the model's metadata "
                    "(%.200s): check -m and --url", what, status, body);
    free(body);
    return rc;
  }
  rc = gs_bench_model_parse(err, what, body, len, &m);
  free(body);
  snprintf(m.version, sizeof(m.version), "%s", o->cfg.version ? o->cfg.version : "");
  if (rc == 0 && !(headers = header_lines(o)))
    rc = gs_err_set(err, GS_E_NO_MEMORY, "out of memory");
  if (rc == 0)
    rc = gs_bench_model_fix_shapes(err, &m, o->cfg.batch ? o->cfg.batch : 1, o->shapes, o->nshapes);
  if (rc == 0)
    rc = model_samples(err, o, &m, &s);
  if (rc) {
    free(headers);
    return rc;
  }
  *reqs = calloc(s.n, sizeof(**reqs));
  *lens = calloc(s.n, sizeof(**lens));
  if (!*reqs || !*lens)
    rc = gs_err_set(err, GS_E_NO_MEMORY, "out of memory");
  for (size_t i = 0; rc == 0 && i < s.n; i++, *n = i)
    rc = o->cfg.grpc ? gs_bench_grpc_request(err, &m, &s.s[i], &(*reqs)[i], &(*lens)[i])
                     : gs_bench_infer_request(err, u, &m, &s.s[i], !o->json_in, !o->json_out,
                                              headers, &(*reqs)[i], &(*lens)[i]);
  gs_bench_samples_free(&s);
  free(headers);
  return rc;
}

/* ---- output ---- */

static void progress(void *ctx, double level, unsigned trial, const struct gs_bench_config *cfg,
                     uint64_t ok, double per_s, uint64_t p99_ns)
{
  (void)ctx;
  fprintf(stderr, "\r\033[K  %s %g: window %u/%u: %llu ok, %.1f req/s, p99 %.3f ms",
          cfg->mode == GS_BENCH_CLOSED ? "concurrency" : "rate", level, trial, cfg->max_trials,
          (unsigned long long)ok, per_s, (double)p99_ns / 1e6);
  fflush(stderr);
}

/* -v: every window on its own line (perf_analyzer's "Pass [n]" lines). */
static void window_line(void *ctx, double level, unsigned trial, const struct gs_bench_config *cfg,
                        uint64_t ok, double per_s, uint64_t p99_ns)
{
  (void)ctx;
  fprintf(stderr, "  %s %g: window %u: %llu ok, %.1f req/s, p99 %.3f ms\n",
          cfg->mode == GS_BENCH_CLOSED ? "concurrency" : "rate", level, trial,
          (unsigned long long)ok, per_s, (double)p99_ns / 1e6);
}

/* The latency stability and the threshold look at, in words. */
static const char *stab_name(const struct gs_bench_config *cfg, char *buf, size_t size)
{
  if (cfg->stability_pct > 0)
    snprintf(buf, size, "p%g latency", cfg->stability_pct);
  else
    snprintf(buf, size, "average latency");
  return buf;
}

/* After each step: what the search learnt from it, on stderr (with -l or -v). */
static void step_line(void *ctx, const struct gs_bench_config *cfg, const struct gs_bench_step *s)
{
  const struct bench_opts *o = ctx;
  const char *what = cfg->mode == GS_BENCH_CLOSED ? "concurrency" : "request rate";
  char name[32];
  if (cfg->on_window == progress)
    fputs("\r\033[K", stderr);
  if (s->latency_unsettled)
    fprintf(stderr, "gpuslice: %s %g: its latency did not settle, its throughput did (counted "
                    "as stable, as --async asks); try a lower load\n", what, s->level);
  if (!(cfg->threshold_us > 0) && !o->verbose)
    return;
  if (s->over)
    fprintf(stderr, "gpuslice: %s %g: %s %.3f ms reached the threshold of %g ms%s\n", what,
            s->level, stab_name(cfg, name, sizeof(name)), s->stab_us / 1e3,
            cfg->threshold_us / 1e3, s->stable ? "" : " (before it stabilized)");
  else if (!s->stable)
    fprintf(stderr, "gpuslice: %s %g: not stable after %u windows\n", what, s->level, s->trials);
  else
    fprintf(stderr, "gpuslice: %s %g: %s %.3f ms%s\n", what, s->level,
            stab_name(cfg, name, sizeof(name)), s->stab_us / 1e3,
            cfg->threshold_us > 0 ? ", under the threshold" : "");
}

static uint64_t step_errors(const struct gs_bench_step *s)
{
  uint64_t n = 0;
  for (unsigned e = 0; e < GS_BENCH_ERR_COUNT; e++)
    n += s->errors[e];
  return n;
}

static void print_errors(const struct gs_bench_step *s)
{
  for (unsigned e = 0; e < GS_BENCH_ERR_COUNT; e++)
    if (s->errors[e])
      printf("    %llu %s: %s\n", (unsigned long long)s->errors[e], gs_bench_error_name(e),
             gs_bench_error_text(e));
}

static void print_table(const struct gs_bench_config *cfg, const struct gs_bench_step *s, size_t n)
{
  char name[32];
  printf("%12s %11s %9s %9s %9s %9s %9s %9s %8s %8s %10s %10s\n",
         cfg->mode == GS_BENCH_CLOSED ? "concurrency" : "rate req/s", "infer/s", "p50 ms",
         "p90 ms", "p95 ms", "p99 ms", "max ms", "avg ms", "errors", "delayed", "srv queue",
         "srv infer");
  for (size_t i = 0; i < n; i++) {
    const struct gs_bench_step *x = &s[i];
    if (!x->stable && x->over) {
      printf("%12g   reached the latency threshold before it stabilized (%s %.3f ms, "
             "threshold %g ms): no figure\n", x->level, stab_name(cfg, name, sizeof(name)),
             x->stab_us / 1e3, cfg->threshold_us / 1e3);
    } else if (!x->stable) {
      printf("%12g   not stable after %u windows (throughput or latency moved more than "
             "%g%%): no figure\n", x->level, x->trials, cfg->stability > 0 ? cfg->stability : 10);
    } else {
      printf("%12g %11.1f %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %8llu %8llu", x->level, x->throughput,
             x->p50_us / 1e3, x->p90_us / 1e3, x->p95_us / 1e3, x->p99_us / 1e3, x->max_us / 1e3,
             x->avg_us / 1e3, (unsigned long long)step_errors(x), (unsigned long long)x->delayed);
      if (x->server.seen)
        printf(" %10.3f %10.3f\n", x->server.queue_us / 1e3, x->server.cinfer_us / 1e3);
      else
        printf(" %10s %10s\n", "-", "-");
    }
    if (x->stable && x->over)
      printf("    %s %.3f ms: at or over the latency threshold (%g ms)\n",
             stab_name(cfg, name, sizeof(name)), x->stab_us / 1e3, cfg->threshold_us / 1e3);
    print_errors(x);
  }
}

/* The search's answer, after the table: the number the threshold asked for. */
static void print_best(const struct gs_bench_config *cfg, const struct gs_bench_step *best)
{
  char name[32];
  const char *what = cfg->mode == GS_BENCH_CLOSED ? "concurrency" : "request rate";
  if (best)
    printf("highest %s under the %g ms threshold (%s): %g\n", what, cfg->threshold_us / 1e3,
           stab_name(cfg, name, sizeof(name)), best->level);
  else
    printf("no %s measured was under the %g ms threshold (%s)\n", what,
           cfg->threshold_us / 1e3, stab_name(cfg, name, sizeof(name)));
}

/* --collect-metrics: one object per GPU, perf_analyzer's four figures (null: no sample). */
static json_t *gpus_json(const struct gs_bench_gpus *g)
{
  json_t *a = json_array();
  for (unsigned i = 0; i < g->n; i++) {
    const struct gs_bench_gpu *u = &g->gpu[i];
    json_array_append_new(
        a, json_pack("{s:s, s:o, s:o, s:o, s:o}", "gpu_uuid", u->uuid, "utilization",
                     u->util_n ? json_real(u->util_sum / u->util_n) : json_null(), "power_w",
                     u->power_n ? json_real(u->power_sum / u->power_n) : json_null(),
                     "memory_used_max_bytes", u->used_n ? json_real(u->used_max) : json_null(),
                     "memory_total_bytes", u->total_n ? json_real(u->total) : json_null()));
  }
  return a;
}

static json_t *step_json(const struct bench_opts *o, const struct gs_bench_step *x)
{
  json_t *errs = json_object(), *j;
  for (unsigned e = 0; e < GS_BENCH_ERR_COUNT; e++)
    json_object_set_new(errs, gs_bench_error_name(e), json_integer((json_int_t)x->errors[e]));
  j = json_pack(
      "{s:f, s:b, s:i, s:f, s:I, s:f, s:{s:I, s:I, s:I, s:I, s:I, s:f}, s:f, s:f, s:o, s:I,"
      " s:{s:b, s:f, s:f, s:f, s:f, s:f, s:f}}",
      "level", x->level, "stable", x->stable, "windows", (int)x->trials, "seconds", x->seconds,
      "requests_ok", (json_int_t)x->ok, "inferences_per_second", x->throughput, "latency_us",
      "p50", (json_int_t)x->p50_us, "p90", (json_int_t)x->p90_us, "p95", (json_int_t)x->p95_us,
      "p99", (json_int_t)x->p99_us, "max", (json_int_t)x->max_us, "avg", x->avg_us,
      "client_send_us", x->send_us, "client_recv_us", x->recv_us, "errors", errs, "delayed",
      (json_int_t)x->delayed, "server", "seen", x->server.seen, "queue_us", x->server.queue_us,
      "compute_input_us", x->server.cin_us, "compute_infer_us", x->server.cinfer_us,
      "compute_output_us", x->server.cout_us, "request_us", x->server.request_us,
      "network_us", x->server_net_us);
  json_object_set_new(j, "stabilizing_latency_us", json_real(x->stab_us));
  json_object_set_new(j, "latency_settled", json_boolean(x->stable && !x->latency_unsettled));
  if (o->cfg.threshold_us > 0)
    json_object_set_new(j, "over_threshold", json_boolean(x->over));
  if (o->cfg.stability_pct > 0)
    json_object_set_new(json_object_get(j, "latency_us"), "percentile",
                        json_integer((json_int_t)x->pextra_us));
  if (o->collect)
    json_object_set_new(j, "gpus", gpus_json(&x->gpus));
  return j;
}

static int print_json(const struct bench_opts *o, const struct gs_bench_step *s, size_t n)
{
  const struct gs_bench_step *best = gs_bench_best(s, n);
  json_t *steps = json_array(), *j;
  for (size_t i = 0; i < n; i++)
    json_array_append_new(steps, step_json(o, &s[i]));
  j = json_pack(
      "{s:s, s:s, s:s, s:s?, s:s?, s:s?, s:i, s:s, s:s, s:o}", "mode",
      o->cfg.mode == GS_BENCH_CLOSED ? "concurrency" : "request_rate", "protocol",
      o->cfg.grpc ? "grpc" : "http", "url", o->url, "grpc_url", o->cfg.grpc ? o->grpc_url : NULL,
      "model", o->path ? NULL : o->model, "model_version", o->path ? NULL : o->cfg.version,
      "batch", (int)(o->cfg.batch ? o->cfg.batch : 1), "distribution",
      o->cfg.dist == GS_BENCH_POISSON  ? "poisson"
      : o->cfg.dist == GS_BENCH_CUSTOM ? "intervals"
                                       : "constant",
      "search",
      o->cfg.binary ? "binary" : "linear", "steps", steps);
  if (o->intervals) {
    json_object_set_new(j, "request_intervals", json_string(o->intervals));
    json_object_set_new(j, "intervals", json_integer((json_int_t)o->cfg.nintervals));
  }
  if (o->cfg.threshold_us > 0) {
    json_object_set_new(j, "latency_threshold_us", json_real(o->cfg.threshold_us));
    json_object_set_new(j, "best", best ? json_real(best->level) : json_null());
  }
  return cli_print_json(j);
}

/* The server's columns are there when its figures were sought (perf_analyzer:
 * when the server has the statistics extension); a step without them has
 * empty cells. */
static int write_csv(const struct bench_opts *o, const struct gs_bench_step *s, size_t n)
{
  struct gs_bench_csv how = {o->cfg.mode, !(o->no_metrics || o->path), o->verbose_csv,
                             o->cfg.stability_pct, o->collect && o->verbose_csv};
  FILE *f = fopen(o->csv, "w");
  int rc;
  if (!f) {
    fprintf(stderr, "gpuslice: -f %s: %s\n", o->csv, strerror(errno));
    return GS_EXIT_USAGE;
  }
  if ((rc = gs_bench_csv_write(f, &how, s, n)) != 0) {
    fclose(f);
    fprintf(stderr, "gpuslice: -f %s: out of memory\n", o->csv);
    return GS_EXIT_FAILED;
  }
  if (fclose(f) != 0) {
    fprintf(stderr, "gpuslice: -f %s: %s\n", o->csv, strerror(errno));
    return GS_EXIT_USAGE;
  }
  return GS_EXIT_OK;
}

/* ---- gpuslice bench ---- */

/* perf_analyzer's rules for the search, warmup and request count (its
 * CLParser::VerifyOptions), and for the options that go with another. */
static int check_search(const struct bench_opts *o)
{
  const struct gs_bench_config *g = &o->cfg;
  const char *range = g->mode == GS_BENCH_CLOSED ? "--concurrency-range" : "--request-rate-range";
  bool one_level = g->end == g->start && !g->binary;
  if (g->throughput_stable && o->sync)
    return cli_usage("--async and --sync: give one");
  if (g->end == 0 && !(g->threshold_us > 0))
    return cli_usage("%s %s: an END of 0 (no end) needs --latency-threshold to stop at", range,
                     o->range);
  if (g->binary && (!(g->threshold_us > 0) || !o->range_end || g->end == 0))
    return cli_usage("--binary-search needs --latency-threshold and %s START:END[:STEP] with "
                     "an END (not 0)", range);
  if (g->warmup && !one_level)
    return cli_usage("--warmup-request-count: one level only (a single %s value)", range);
  if (g->request_count && !one_level)
    return cli_usage("--request-count: one level only (a single %s value)", range);
  if (g->request_count && g->request_count < g->start)
    return cli_usage("--request-count %u: below the %s %g", g->request_count,
                     g->mode == GS_BENCH_CLOSED ? "concurrency" : "request rate", g->start);
  if (o->gpu_interval_ms && !o->collect)
    return cli_usage("--metrics-interval goes with --collect-metrics");
  if (o->compress && !g->grpc)
    return cli_usage("--grpc-compression-algorithm goes with -i grpc");
  return 0;
}

static int check_opts(const struct bench_opts *o, const char *usage)
{
  if (!o->url)
    return cli_usage("--url is required, e.g. --url http://localhost:8000; usage: %s", usage);
  if (!o->model == !o->path)
    return cli_usage("give -m MODEL (KServe v2 inference) or --http-path PATH (plain HTTP), "
                     "not both or neither; usage: %s", usage);
  if (o->path && o->path[0] != '/')
    return cli_usage("--http-path %s: must start with '/'", o->path);
  if (o->path && o->input)
    return cli_usage("--input-data is for -m MODEL requests; plain HTTP takes --http-body");
  if (o->method && (strcmp(o->method, "HEAD") == 0 || strpbrk(o->method, " \r\n")))
    return cli_usage("--http-method %s: HEAD is not supported (its answers have no body)", o->method);
  if (o->cfg.grpc && (!o->grpc_url || !o->model || o->cfg.mode != GS_BENCH_CLOSED))
    return cli_usage("-i grpc needs --grpc-url HOST:PORT and -m MODEL (metadata is read from "
                     "--url over HTTP) and measures closed loop only (--concurrency-range)");
  if (o->csv && strcmp(o->csv, "-") == 0)
    return cli_usage("-f -: give a file name (stdout has the table or --json)");
  return check_search(o);
}

static int metrics_target(struct gs_err *err, struct bench_opts *o, const struct gs_bench_url *u,
                          struct gs_bench_url *mu)
{
  if ((o->no_metrics || o->path) && !o->collect)
    return 0;
  o->cfg.model = o->no_metrics || o->path ? NULL : o->model; /* NULL: no server split */
  o->cfg.gpu_interval_ms = !o->collect ? 0 : o->gpu_interval_ms ? o->gpu_interval_ms : 1000;
  o->cfg.metrics_url = mu;
  if (!o->metrics) { /* Triton serves /metrics on its own port (8002): --metrics-url then */
    *mu = *u;
    mu->prefix[0] = '\0';
    o->cfg.metrics_path = "/metrics";
    return 0;
  }
  if (gs_bench_url_parse(err, "--metrics-url", o->metrics, mu) != 0)
    return err->code;
  o->cfg.metrics_path = mu->prefix[0] ? "" : "/metrics";
  return 0;
}

static int bench_main(struct cli *c, struct bench_opts *o, struct gs_bench_url *mu)
{
  struct gs_err err = {0};
  struct gs_bench_step *steps = NULL;
  char **reqs = NULL;
  size_t *lens = NULL, nreqs = 0, nsteps = 0, unstable = 0;
  const struct gs_bench_step *best;
  int rc;
  if (o->count_mode && !o->cfg.window_count)
    o->cfg.window_count = 50;
  if (!o->count_mode)
    o->cfg.window_count = 0;
  if (o->path) {
    reqs = calloc(1, sizeof(*reqs)), lens = calloc(1, sizeof(*lens));
    rc = !reqs || !lens ? gs_err_set(&err, GS_E_NO_MEMORY, "out of memory")
                        : plain_request(&err, o, &o->cfg.url, &reqs[0], &lens[0]);
    nreqs = rc == 0;
  } else {
    rc = kserve_requests(&err, o, &o->cfg.url, &reqs, &lens, &nreqs);
  }
  if (rc == 0)
    rc = metrics_target(&err, o, &o->cfg.url, mu);
  if (rc == 0 && o->cfg.grpc) /* metadata and metrics came over HTTP; the load goes here */
    rc = gs_bench_url_parse(&err, "--grpc-url", o->grpc_url, &o->cfg.url) != 0 ? err.code : 0;
  o->cfg.requests = (const char *const *)reqs;
  o->cfg.request_lens = lens;
  o->cfg.nrequests = nreqs;
  if (o->verbose)
    o->cfg.on_window = window_line;
  else if (isatty(2) && !c->json)
    o->cfg.on_window = progress;
  o->cfg.on_step = step_line;
  o->cfg.ctx = o;
  if (rc == 0)
    rc = gs_bench_run(&err, &o->cfg, &steps, &nsteps);
  if (o->cfg.on_window == progress)
    fprintf(stderr, "\r\033[K");
  for (size_t i = 0; i < nreqs; i++)
    free(reqs[i]);
  free(reqs);
  free(lens);
  if (rc != 0) {
    free(steps);
    return cli_bench_fail(&err);
  }
  for (size_t i = 0; i < nsteps; i++)
    unstable += !steps[i].stable;
  best = gs_bench_best(steps, nsteps);
  rc = c->json ? print_json(o, steps, nsteps) : (print_table(&o->cfg, steps, nsteps), GS_EXIT_OK);
  if (!c->json && o->cfg.threshold_us > 0)
    print_best(&o->cfg, best);
  if (rc == GS_EXIT_OK && o->csv)
    rc = write_csv(o, steps, nsteps);
  free(steps);
  /* a search meets unstable levels on its way: only finding none under the threshold fails */
  if (o->cfg.threshold_us > 0)
    return rc == GS_EXIT_OK && !best ? GS_EXIT_FAILED : rc;
  if (rc == GS_EXIT_OK && unstable) {
    fflush(stdout);
    fprintf(stderr, "gpuslice: %zu of %zu steps never stabilized (3 windows within %g%%): no "
                    "figure for them; try a longer --measurement-interval or more --max-trials\n",
            unstable, nsteps, o->cfg.stability > 0 ? o->cfg.stability : 10);
    rc = GS_EXIT_FAILED;
  }
  return rc;
}

/* --request-intervals: the file's gaps, and the one request rate they make
 * (the level reported); perf_analyzer's custom-interval load. */
static int load_intervals(struct gs_err *err, struct bench_opts *o, double **gaps)
{
  char *text = NULL;
  size_t len = 0;
  int rc;
  if (o->dist_given)
    return cli_usage("--request-distribution goes with --request-rate-range; "
                     "--request-intervals %s sets the arrivals itself", o->intervals);
  if (o->cfg.binary || o->cfg.threshold_us > 0)
    return cli_usage("--request-intervals %s: one level (the file's rate), so no "
                     "--latency-threshold or --binary-search", o->intervals);
  if ((rc = cli_named_file(err, "--request-intervals", o->intervals, 256u << 20, &text, &len)) == 0)
    rc = gs_bench_intervals_parse(err, o->intervals, text, len, gaps, &o->cfg.nintervals);
  free(text);
  if (rc)
    return cli_bench_fail(err);
  o->cfg.dist = GS_BENCH_CUSTOM;
  o->cfg.intervals_ns = *gaps;
  o->cfg.start = o->cfg.end = gs_bench_intervals_rate(*gaps, o->cfg.nintervals);
  return 0;
}

static int run_bench(struct cli *c, int argc, char **argv)
{
  struct bench_opts o = {.cfg = {.mode = GS_BENCH_CLOSED, .start = 1, .end = 1, .step = 1}};
  struct gs_bench_url mu;
  struct gs_err err = {0};
  double *gaps = NULL;
  int rc, first;
  if ((first = cli_getopt(c, argc, argv, on_bench_opt, &o)) <= 0)
    return -first;
  if (first < argc)
    return cli_usage("unexpected argument '%s'; usage: %s", argv[first], cli_synopsis(c));
  if (o.print_version)
    return cli_version(c, 1, (char *[]){"version", NULL});
  if ((o.intervals && (rc = load_intervals(&err, &o, &gaps)) != 0) ||
      (rc = check_opts(&o, cli_synopsis(c))) != 0) {
    free(gaps);
    return rc;
  }
  /* Every URL is checked here, before any request goes out. */
  if (gs_bench_url_parse(&err, "--url", o.url, &o.cfg.url) != 0 ||
      (o.grpc_url && gs_bench_url_parse(&err, "--grpc-url", o.grpc_url, &mu) != 0) ||
      (o.metrics && gs_bench_url_parse(&err, "--metrics-url", o.metrics, &mu) != 0))
    rc = cli_bench_fail(&err);
  else
    rc = bench_main(c, &o, &mu);
  free(gaps);
  return rc;
}

/* Marked as running until signalled: it is not a server, but it sends network
 * load for up to minutes and writes files, so the argument fuzzer leaves it out. */
const struct cli_verb cli_verbs_bench[] = {
    {NULL, "bench", run_bench,
     "load generator: closed/open loop against KServe v2 or HTTP; `bench plot` draws CSVs", true,
     &bench_spec, false},
    {"bench", "plot", cli_bench_plot,
     "throughput and latency charts of bench's CSVs (SVG, PNG or PDF)", false,
     &cli_bench_plot_spec, false},
    {0},
};
