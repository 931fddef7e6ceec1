/* cmd_bench.c: `gpuslice bench` (the load generator: closed or open loop
 * against a KServe v2 endpoint or any HTTP URL; table, CSV, JSON) and
 * `gpuslice bench plot` (SVG, PNG or PDF of CSVs). Options and printing only; the
 * bench layer measures (docs/bench.md). */
#include "bench/bench.h"
#include "cli/cli.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define MAX_SHAPES 16
#define MAX_HEADERS 32

enum { O_URL = 'u', O_MODEL = 'm', O_BATCH = 'b', O_CSV = 'f', O_INTERVAL = 'p',
       O_STABILITY = 's', O_TRIALS = 'r', O_HEADER = 'H', O_PROTO = 'i',
       O_CONC = 1000, O_RATE, O_DIST, O_INPUT, O_SHAPE, O_IN_FMT, O_OUT_FMT, O_PATH, O_METHOD,
       O_BODY, O_THREADS, O_CONNS, O_MODE, O_COUNT, O_PCT, O_TIMEOUT, O_BACKLOG, O_METRICS,
       O_NO_METRICS, O_SEED, O_STREAMS, O_GRPC_URL };

struct bench_opts {
  const char *url, *model, *csv, *input, *path, *method, *body, *metrics, *grpc_url;
  const char *shapes[MAX_SHAPES], *headers[MAX_HEADERS];
  unsigned nshapes, nheaders;
  const char *range;       /* the --*-range text, for messages */
  bool json_in, json_out, no_metrics, count_mode;
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

/* "start[:end[:step]]" */
static int range(struct bench_opts *o, const char *value, const char *what, enum gs_bench_mode m)
{
  char buf[128], *parts[3] = {0}, *save = NULL, *p;
  double v[3] = {0, 0, 1};
  int n = 0, rc;
  if (o->range)
    return cli_usage("give one of --concurrency-range and --request-rate-range");
  if (strlen(value) >= sizeof(buf))
    return cli_usage("%s %s: too long", what, value);
  strcpy(buf, value);
  for (p = strtok_r(buf, ":", &save); p && n < 3; p = strtok_r(NULL, ":", &save))
    parts[n++] = p;
  if (!n || p)
    return cli_usage("%s %s: expected START[:END[:STEP]]", what, value);
  for (int i = 0; i < n; i++)
    if ((rc = positive(parts[i], what, &v[i], m == GS_BENCH_CLOSED)) != 0)
      return rc;
  if (n == 1)
    v[1] = v[0];
  if (v[1] < v[0])
    return cli_usage("%s %s: END is below START", what, value);
  o->range = value;
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
  case O_PCT:
    if ((rc = positive(v, "--percentile", &g->stability_pct, false)) == 0 && g->stability_pct >= 100)
      return cli_usage("--percentile %s: expected a number below 100", v);
    return rc;
  case O_DIST:
    if (strcmp(v, "constant") != 0 && strcmp(v, "poisson") != 0)
      return cli_usage("--request-distribution %s: expected constant or poisson", v);
    g->dist = v[0] == 'p' ? GS_BENCH_POISSON : GS_BENCH_CONSTANT;
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
  default: return cli_usage("unexpected option");
  }
}

/* The short letters are perf_analyzer's (-u -m -b -f -p -s -r -H -i). */
static const struct cli_opt bench_opts[] = {
    {"url", 'u', "URL", O_URL, NULL, "the server: http://HOST:PORT[/prefix] (required)",
     CLI_VALUE_TEXT, NULL},
    {"model", 'm', "MODEL", O_MODEL, NULL, "a KServe v2 model to infer on (or --http-path)",
     CLI_VALUE_TEXT, NULL},
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
    {"percentile", 0, "P", O_PCT, "none: the average", "the latency figure stabilised",
     CLI_VALUE_TEXT, NULL},
    {"request-timeout", 0, "DURATION", O_TIMEOUT, "30s", "a request's bound (a bare number is ms)",
     CLI_VALUE_TEXT, NULL},
    {"metrics-url", 0, "URL", O_METRICS, "--url's /metrics", "Triton's metrics (its port 8002)",
     CLI_VALUE_TEXT, NULL},
    {"no-server-metrics", 0, NULL, O_NO_METRICS, NULL, "read no server metrics", CLI_VALUE_TEXT,
     NULL},
    {"seed", 0, "N", O_SEED, "1", "open loop: the Poisson arrivals' seed", CLI_VALUE_TEXT, NULL},
    {"file", 'f', "CSV", O_CSV, "none", "also write perf_analyzer's CSV report here",
     CLI_VALUE_FILE, NULL},
    CLI_OPT_JSON("print the steps as JSON instead of the table (docs/bench.md)"),
    {0},
};

static const struct cli_spec bench_spec = {
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
static int bench_fail(const struct gs_err *err)
{
  fprintf(stderr, "gpuslice: %s\n", err->msg);
  return err->code == GS_E_IO ? GS_EXIT_FAILED : cli_exit_of(err->code);
}

/* A file the command line names (--input-data, --http-body @FILE, a CSV):
 * when it cannot be read the error is the command line's (exit 2). */
static int user_file(struct gs_err *err, const char *what, const char *path, size_t limit,
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
    return user_file(err, "--http-body", body + 1, 256u << 20, out, len);
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
  if ((rc = user_file(err, "--input-data", o->input, 1u << 30, &text, &len)) != 0)
    return rc;
  rc = gs_bench_samples_parse(err, o->input, text, len, m, s);
  free(text);
  return rc;
}

/* Reads the model's metadata and builds one request per input sample. */
static int kserve_requests(struct gs_err *err, struct bench_opts *o, const struct gs_bench_url *u,
                           char ***reqs, size_t **lens, size_t *n)
{
  struct gs_bench_model m;
  struct gs_bench_samples s = {0};
  char path[300], what[1024], *body = NULL;
  size_t len;
  int status, rc;
  snprintf(path, sizeof(path), "/v2/models/%s", o->model);
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
  if (rc == 0)
    rc = gs_bench_model_fix_shapes(err, &m, o->cfg.batch ? o->cfg.batch : 1, o->shapes, o->nshapes);
  if (rc == 0)
    rc = model_samples(err, o, &m, &s);
  if (rc)
    return rc;
  *reqs = calloc(s.n, sizeof(**reqs));
  *lens = calloc(s.n, sizeof(**lens));
  if (!*reqs || !*lens)
    rc = gs_err_set(err, GS_E_NO_MEMORY, "out of memory");
  for (size_t i = 0; rc == 0 && i < s.n; i++, *n = i)
    rc = o->cfg.grpc ? gs_bench_grpc_request(err, &m, &s.s[i], &(*reqs)[i], &(*lens)[i])
                     : gs_bench_infer_request(err, u, &m, &s.s[i], !o->json_in, !o->json_out,
                                              &(*reqs)[i], &(*lens)[i]);
  gs_bench_samples_free(&s);
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
  printf("%12s %11s %9s %9s %9s %9s %9s %9s %8s %8s %10s %10s\n",
         cfg->mode == GS_BENCH_CLOSED ? "concurrency" : "rate req/s", "infer/s", "p50 ms",
         "p90 ms", "p95 ms", "p99 ms", "max ms", "avg ms", "errors", "delayed", "srv queue",
         "srv infer");
  for (size_t i = 0; i < n; i++) {
    const struct gs_bench_step *x = &s[i];
    if (!x->stable) {
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
    print_errors(x);
  }
}

static json_t *step_json(const struct gs_bench_step *x)
{
  json_t *errs = json_object();
  for (unsigned e = 0; e < GS_BENCH_ERR_COUNT; e++)
    json_object_set_new(errs, gs_bench_error_name(e), json_integer((json_int_t)x->errors[e]));
  return json_pack(
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
}

static int print_json(const struct bench_opts *o, const struct gs_bench_step *s, size_t n)
{
  json_t *steps = json_array();
  for (size_t i = 0; i < n; i++)
    json_array_append_new(steps, step_json(&s[i]));
  return cli_print_json(json_pack(
      "{s:s, s:s, s:s, s:s?, s:s?, s:i, s:s, s:o}", "mode",
      o->cfg.mode == GS_BENCH_CLOSED ? "concurrency" : "request_rate", "protocol",
      o->cfg.grpc ? "grpc" : "http", "url", o->url, "grpc_url", o->cfg.grpc ? o->grpc_url : NULL,
      "model",
      o->path ? NULL : o->model, "batch", (int)(o->cfg.batch ? o->cfg.batch : 1), "distribution",
      o->cfg.dist == GS_BENCH_POISSON ? "poisson" : "constant", "steps", steps));
}

static int write_csv(const struct bench_opts *o, const struct gs_bench_step *s, size_t n)
{
  FILE *f = fopen(o->csv, "w");
  if (!f) {
    fprintf(stderr, "gpuslice: -f %s: %s\n", o->csv, strerror(errno));
    return GS_EXIT_USAGE;
  }
  gs_bench_csv_write(f, o->cfg.mode, s, n);
  if (fclose(f) != 0) {
    fprintf(stderr, "gpuslice: -f %s: %s\n", o->csv, strerror(errno));
    return GS_EXIT_USAGE;
  }
  return GS_EXIT_OK;
}

/* ---- gpuslice bench ---- */

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
  return 0;
}

static int metrics_target(struct gs_err *err, struct bench_opts *o, const struct gs_bench_url *u,
                          struct gs_bench_url *mu)
{
  if (o->no_metrics || o->path)
    return 0;
  o->cfg.model = o->model;
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
  if (isatty(2) && !c->json)
    o->cfg.on_window = progress;
  if (rc == 0)
    rc = gs_bench_run(&err, &o->cfg, &steps, &nsteps);
  if (o->cfg.on_window)
    fprintf(stderr, "\r\033[K");
  for (size_t i = 0; i < nreqs; i++)
    free(reqs[i]);
  free(reqs);
  free(lens);
  if (rc != 0) {
    free(steps);
    return bench_fail(&err);
  }
  for (size_t i = 0; i < nsteps; i++)
    unstable += !steps[i].stable;
  rc = c->json ? print_json(o, steps, nsteps) : (print_table(&o->cfg, steps, nsteps), GS_EXIT_OK);
  if (rc == GS_EXIT_OK && o->csv)
    rc = write_csv(o, steps, nsteps);
  free(steps);
  if (rc == GS_EXIT_OK && unstable) {
    fflush(stdout);
    fprintf(stderr, "gpuslice: %zu of %zu steps never stabilized (3 windows within %g%%): no "
                    "figure for them; try a longer --measurement-interval or more --max-trials\n",
            unstable, nsteps, o->cfg.stability > 0 ? o->cfg.stability : 10);
    rc = GS_EXIT_FAILED;
  }
  return rc;
}

static int run_bench(struct cli *c, int argc, char **argv)
{
  struct bench_opts o = {.cfg = {.mode = GS_BENCH_CLOSED, .start = 1, .end = 1, .step = 1}};
  struct gs_bench_url mu;
  struct gs_err err = {0};
  int rc, first;
  if ((first = cli_getopt(c, argc, argv, on_bench_opt, &o)) <= 0)
    return -first;
  if (first < argc)
    return cli_usage("unexpected argument '%s'; usage: %s", argv[first], cli_synopsis(c));
  if ((rc = check_opts(&o, cli_synopsis(c))) != 0)
    return rc;
  /* Every URL is checked here, before any request goes out. */
  if (gs_bench_url_parse(&err, "--url", o.url, &o.cfg.url) != 0 ||
      (o.grpc_url && gs_bench_url_parse(&err, "--grpc-url", o.grpc_url, &mu) != 0) ||
      (o.metrics && gs_bench_url_parse(&err, "--metrics-url", o.metrics, &mu) != 0))
    return bench_fail(&err);
  return bench_main(c, &o, &mu);
}

/* ---- gpuslice bench plot ---- */

enum { O_OUT = 'o', O_BUDGET = 2000, O_PLOT_PCT };

struct plot_opts {
  const char *out, *column;
  char column_buf[32];
  double budget_us;
};

static int on_plot_opt(struct cli *c, int ch, const char *v, void *arg)
{
  struct plot_opts *o = arg;
  uint64_t us = 0;
  int rc;
  (void)c;
  switch (ch) {
  case O_OUT: o->out = v; return 0;
  case O_BUDGET: /* a bare number is milliseconds */
    rc = cli_duration("--latency-budget", v, 1000, 1, 86400000000ull, &us);
    o->budget_us = (double)us;
    return rc;
  case O_PLOT_PCT:
    if (strcmp(v, "avg") == 0) {
      o->column = "Avg latency";
      return 0;
    }
    if (strcmp(v, "50") && strcmp(v, "90") && strcmp(v, "95") && strcmp(v, "99"))
      return cli_usage("--percentile %s: expected 50, 90, 95, 99 or avg (the CSV's columns)", v);
    snprintf(o->column_buf, sizeof(o->column_buf), "p%s latency", v);
    o->column = o->column_buf;
    return 0;
  default: return cli_usage("unexpected option");
  }
}

static const struct cli_opt plot_opts[] = {
    {"output", 'o', "OUT.svg|OUT.png|OUT.pdf", O_OUT, NULL,
     "the chart; its name's ending picks the format", CLI_VALUE_FILE, NULL},
    {"latency-budget", 0, "DURATION", O_BUDGET, "none", "a budget line (a bare number is ms)",
     CLI_VALUE_TEXT, NULL},
    {"percentile", 0, "50|90|95|99|avg", O_PLOT_PCT, "90", "the latency column drawn",
     CLI_VALUE_CHOICE, NULL},
    {0},
};

static const struct cli_spec plot_spec = {
    .operands = "CSV...",
    .operand = CLI_VALUE_FILE,
    .opts = plot_opts,
    .about = "Throughput and latency against concurrency (or request rate), one series per CSV\n"
             "(perf_analyzer's or bench -f's), as SVG, PNG or PDF (PNG and PDF: librsvg and cairo).",
    .examples = "gpuslice bench plot mig-1.csv mig-7.csv --latency-budget 50ms -o chart.svg",
};

static int load_series(const char *path, const char *column, struct gs_bench_series *s)
{
  struct gs_err err = {0};
  const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  size_t bl = strlen(base);
  char *text = NULL;
  size_t len;
  int rc = user_file(&err, "CSV", path, 64u << 20, &text, &len);
  if (rc == 0)
    rc = gs_bench_csv_read(&err, path, text, len, column, s);
  free(text);
  if (rc)
    return bench_fail(&err);
  if (bl > 4 && strcmp(base + bl - 4, ".csv") == 0)
    bl -= 4;
  snprintf(s->label, sizeof(s->label), "%.*s", (int)bl, base);
  return 0;
}

/* The chart's format, from -o's ending (any case); checked before any CSV is read. */
static int image_format(const char *out, enum gs_bench_image *fmt)
{
  static const struct {
    const char *ext;
    enum gs_bench_image fmt;
  } exts[] = {{".svg", GS_BENCH_SVG}, {".png", GS_BENCH_PNG}, {".pdf", GS_BENCH_PDF}};
  const char *dot = strrchr(out, '.');
  for (size_t i = 0; dot && !strchr(dot, '/') && i < GS_NITEMS(exts); i++)
    if (strcasecmp(dot, exts[i].ext) == 0) {
      *fmt = exts[i].fmt;
      return 0;
    }
  return cli_usage("-o %s: the chart is written as SVG, PNG or PDF, chosen by the name's "
                   "ending: give a name ending in .svg, .png or .pdf", out);
}

static int write_plot(const char *out, enum gs_bench_image fmt, const char *svg, size_t len)
{
  struct gs_err err = {0};
  char *img = NULL;
  size_t n = 0;
  int rc = 0;
  if (fmt != GS_BENCH_SVG && gs_bench_plot_render(&err, svg, len, fmt, &img, &n) != 0)
    return bench_fail(&err);
  if (gs_file_write_atomic(&err, out, img ? img : svg, img ? n : len) != 0)
    rc = cli_fail_file(&err);
  free(img);
  return rc;
}

static int run_plot(struct cli *c, int argc, char **argv)
{
  struct plot_opts o = {.column = "p90 latency"};
  struct gs_bench_series *s;
  struct gs_err err = {0};
  enum gs_bench_image fmt = GS_BENCH_SVG;
  char *svg = NULL;
  size_t len, n;
  int first, rc = 0;
  if ((first = cli_getopt(c, argc, argv, on_plot_opt, &o)) <= 0)
    return -first;
  if (first >= argc || !o.out)
    return cli_usage("give one or more CSV files and -o OUT.svg; usage: %s", cli_synopsis(c));
  if ((rc = image_format(o.out, &fmt)) != 0)
    return rc;
  n = (size_t)(argc - first);
  if (!(s = calloc(n, sizeof(*s))))
    return cli_usage("out of memory");
  for (size_t i = 0; i < n && rc == 0; i++)
    rc = load_series(argv[first + (int)i], o.column, &s[i]);
  if (rc == 0 && gs_bench_plot_svg(&err, s, n, o.column, o.budget_us, &svg, &len) != 0)
    rc = bench_fail(&err);
  if (rc == 0)
    rc = write_plot(o.out, fmt, svg, len);
  free(svg);
  for (size_t i = 0; i < n; i++)
    gs_bench_series_free(&s[i]);
  free(s);
  return rc;
}

/* Marked as running until signalled: it is not a server, but it sends network
 * load for up to minutes and writes files, so the argument fuzzer leaves it out. */
const struct cli_verb cli_verbs_bench[] = {
    {NULL, "bench", run_bench,
     "load generator: closed/open loop against KServe v2 or HTTP; `bench plot` draws CSVs", true,
     &bench_spec, false},
    {"bench", "plot", run_plot, "throughput and latency charts of bench's CSVs (SVG, PNG or PDF)", false,
     &plot_spec, false},
    {0},
};
