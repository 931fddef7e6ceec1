/* SPDX-License-Identifier: Apache-2.0 */
/* worker.c: the emulated KServe v2 worker (`gpuslice worker`), Triton's
 * stand-in on emulated GPUs: health, metadata, infer with JSON and binary
 * tensors validated as Triton does, Prometheus metrics named like Triton's.
 * Nothing runs on a GPU: each request holds the one modelled slice for a
 * time computed from the slice's SMs (model.c), queued FIFO. */
#include "worker/internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

struct model_stats {
  uint64_t success, failure, count, exec_count, pending;
  uint64_t request_us, queue_us, compute_us;
};

struct job {
  struct job *next;
  struct gs_http_conn *conn;
  gs__worker_done_fn *done; /* a gRPC call's (grpc.c), instead of conn */
  void *done_ctx;
  unsigned model;
  uint64_t arrival_us, compute_us, start_us;
  char *body;
  size_t len;
  size_t json_len; /* Inference-Header-Content-Length, 0 when all JSON */
};

struct gs_worker {
  struct gs_worker_config cfg;
  bool enabled[GS__WORKER_NMODELS];
  struct model_stats stats[GS__WORKER_NMODELS];
  uint64_t time_us[GS__WORKER_NMODELS];
  struct gs_net_loop *loop;
  struct job *head, *tail; /* FIFO; head is on the slice when busy */
  bool busy;
  uint64_t timer; /* the head's modelled compute, while busy */
  bool unready; /* SIGUSR1 toggles it: /v2/health/ready answers 503 (tests, hand-drain) */
  int grpc_fd;  /* gRPC listener (gs_worker_grpc_fd), -1: none */
};

int gs_worker_new(struct gs_err *err, const struct gs_worker_config *cfg, struct gs_worker **out)
{
  struct gs_worker *w = calloc(1, sizeof(*w));
  int rc;
  *out = NULL;
  if (!w)
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory creating the worker");
  w->cfg = *cfg;
  w->grpc_fd = -1;
  for (const char *const *n = cfg->models ? cfg->models : gs_worker_model_names(); *n; n++) {
    unsigned i;
    if (!gs__worker_model_find(*n, strlen(*n), &i)) {
      free(w);
      return gs_err_set(err, GS_E_USAGE, "unknown model '%s': emulated models are flower, bert-large",
                        *n);
    }
    w->enabled[i] = true;
    if ((rc = gs_worker_model_time_us(err, *n, cfg->sms, cfg->full_sms, cfg->share ? cfg->share : 1,
                                      &w->time_us[i])) != 0) {
      free(w);
      return rc;
    }
    if (cfg->time_scale > 1) /* a slowed-down GPU, so small machines can drive many slices */
      w->time_us[i] *= cfg->time_scale;
  }
  *out = w;
  return 0;
}

/* Jobs hold connections the HTTP server frees on its own: never touched here;
 * a gRPC job's call is told it was cancelled, so it can free itself. */
void gs_worker_free(struct gs_worker *w)
{
  if (!w)
    return;
  while (w->head) {
    struct job *j = w->head;
    w->head = j->next;
    if (j->done)
      j->done(j->done_ctx, false, 0, 0);
    free(j->body);
    free(j);
  }
  free(w);
}

void gs_worker_attach(struct gs_worker *w, struct gs_net_loop *loop)
{
  w->loop = loop;
}

/* ---- the slice: one request at a time, FIFO ---- */

static void start_next(struct gs_worker *w);

static void finish(struct gs_worker *w, struct job *j, uint64_t now)
{
  struct model_stats *st = &w->stats[j->model];
  char extra[160];
  uint64_t queue = j->start_us - j->arrival_us;
  size_t n = (size_t)snprintf(extra, sizeof(extra), "X-Gpuslice-Queue-Us: %llu\r\n"
                                                    "X-Gpuslice-Compute-Us: %llu\r\n",
                              (unsigned long long)queue, (unsigned long long)j->compute_us);
  if (j->json_len)
    snprintf(extra + n, sizeof(extra) - n, "Inference-Header-Content-Length: %zu\r\n", j->json_len);
  st->pending--;
  st->success++;
  st->count++;
  st->exec_count++;
  st->queue_us += queue;
  st->compute_us += j->compute_us;
  st->request_us += now - j->arrival_us;
  if (j->done) {
    j->done(j->done_ctx, true, queue, j->compute_us);
    free(j);
    return;
  }
  gs_http_respond(j->conn, 200, j->json_len ? "application/octet-stream" : "application/json",
                  extra, j->body, j->len);
  free(j->body);
  free(j);
}

static int64_t on_computed(struct gs_net_loop *loop, uint64_t id, void *data)
{
  struct gs_worker *w = data;
  struct job *j = w->head;
  (void)loop;
  (void)id;
  w->head = j->next;
  if (!w->head)
    w->tail = NULL;
  w->busy = false;
  w->timer = 0;
  finish(w, j, gs_net_loop_now_us());
  start_next(w);
  return GS_NET_TIMER_DONE;
}

static void start_next(struct gs_worker *w)
{
  if (w->busy || !w->head)
    return;
  w->head->start_us = gs_net_loop_now_us();
  if (w->cfg.instant || !w->loop) {
    struct job *j = w->head;
    w->head = j->next;
    if (!w->head)
      w->tail = NULL;
    finish(w, j, j->start_us);
    start_next(w);
    return;
  }
  w->busy = true;
  if (!(w->timer = gs_net_loop_timer_add(w->loop, w->head->compute_us, on_computed, w)))
    on_computed(w->loop, 0, w); /* no memory for a timer: answer now rather than hang */
}

static void enqueue(struct gs_worker *w, struct job *j)
{
  w->stats[j->model].pending++;
  if (w->tail)
    w->tail->next = j;
  else
    w->head = j;
  w->tail = j;
  start_next(w);
}

/* ---- metadata ---- */

static json_t *shape_json(const struct gs__tensor_spec *t)
{
  json_t *a = json_array();
  for (unsigned d = 0; d < t->ndims; d++)
    json_array_append_new(a, json_integer(t->shape[d]));
  return a;
}

static json_t *tensors_json(const struct gs__tensor_spec *t, unsigned n)
{
  json_t *a = json_array();
  for (unsigned i = 0; i < n; i++)
    json_array_append_new(a, json_pack("{s:s, s:s, s:o}", "name", t[i].name, "datatype",
                                       t[i].datatype, "shape", shape_json(&t[i])));
  return a;
}

static void respond_json(struct gs_http_conn *conn, int status, json_t *v)
{
  char *s = v ? json_dumps(v, JSON_COMPACT) : NULL;
  json_decref(v);
  if (!s) {
    gs_http_respond_error(conn, 500, "out of memory");
    return;
  }
  gs_http_respond(conn, status, "application/json", NULL, s, strlen(s));
  free(s);
}

/* binary_tensor_data: the HTTP binary tensor extension (infer above);
 * Triton lists it over gRPC too. No other extension is served (statistics,
 * model repository, shared memory, trace, logging: 404). */
const char *const gs__worker_extensions[GS__WORKER_NEXTENSIONS] = {"binary_tensor_data"};

static void server_metadata(struct gs_worker *w, struct gs_http_conn *conn)
{
  json_t *ms = json_array(), *ext = json_array();
  for (unsigned i = 0; i < GS__WORKER_NEXTENSIONS; i++)
    json_array_append_new(ext, json_string(gs__worker_extensions[i]));
  for (unsigned i = 0; i < GS__WORKER_NMODELS; i++)
    if (w->enabled[i])
      json_array_append_new(ms, json_string(gs__worker_models[i].name));
  respond_json(conn, 200,
               json_pack("{s:s, s:s, s:o, s:b, s:s, s:i, s:i, s:o, s:s}", "name",
                         "gpuslice-worker", "version", "1", "extensions", ext,
                         "emulated", 1, "slice", w->cfg.slice_name ? w->cfg.slice_name : "",
                         "sms", (int)w->cfg.sms, "share", (int)(w->cfg.share ? w->cfg.share : 1),
                         "models", ms, "note",
                         "emulated worker: no GPU is used; inference time is modelled"));
}

static void model_metadata(struct gs_worker *w, struct gs_http_conn *conn,
                           const struct gs__model_spec *m, unsigned idx)
{
  respond_json(conn, 200,
               json_pack("{s:s, s:[s], s:s, s:s, s:b, s:I, s:o, s:o}", "name", m->name, "versions",
                         "1", "platform", "gpuslice-emulated", "description", m->about, "emulated",
                         1, "modelled_compute_us", (json_int_t)w->time_us[idx], "inputs",
                         tensors_json(m->in, m->nin), "outputs", tensors_json(m->out, m->nout)));
}

static void metrics(struct gs_worker *w, struct gs_http_conn *conn)
{
  static const struct {
    const char *name, *type, *help;
    size_t off;
  } fam[] = {
      {"nv_inference_request_success", "counter", "Successful inference requests",
       offsetof(struct model_stats, success)},
      {"nv_inference_request_failure", "counter", "Failed inference requests",
       offsetof(struct model_stats, failure)},
      {"nv_inference_count", "counter", "Inferences performed (batch 1: one per request)",
       offsetof(struct model_stats, count)},
      {"nv_inference_exec_count", "counter", "Model executions",
       offsetof(struct model_stats, exec_count)},
      {"nv_inference_pending_request_count", "gauge", "Requests queued or on the slice",
       offsetof(struct model_stats, pending)},
      {"nv_inference_request_duration_us", "counter", "Cumulative request time, arrival to answer",
       offsetof(struct model_stats, request_us)},
      {"nv_inference_queue_duration_us", "counter", "Cumulative time waiting for the slice",
       offsetof(struct model_stats, queue_us)},
      {"nv_inference_compute_infer_duration_us", "counter", "Cumulative modelled compute time",
       offsetof(struct model_stats, compute_us)},
  };
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) {
    gs_http_respond_error(conn, 500, "out of memory");
    return;
  }
  char gpu[16] = "";
  if (w->cfg.gpu >= 0)
    snprintf(gpu, sizeof(gpu), "%d", w->cfg.gpu);
  fprintf(f, "# gpuslice emulated worker: no GPU is used; times are modelled\n");
  for (unsigned k = 0; k < GS_NITEMS(fam); k++) {
    fprintf(f, "# HELP %s %s (emulated)\n# TYPE %s %s\n", fam[k].name, fam[k].help, fam[k].name,
            fam[k].type);
    for (unsigned i = 0; i < GS__WORKER_NMODELS; i++)
      if (w->enabled[i])
        fprintf(f, "%s{model=\"%s\",version=\"1\",gpu_uuid=\"%s\",profile=\"%s\",gpu=\"%s\"} "
                "%llu\n", fam[k].name, gs__worker_models[i].name,
                w->cfg.gpu_uuid ? w->cfg.gpu_uuid : "", w->cfg.profile ? w->cfg.profile : "", gpu,
                (unsigned long long)*(const uint64_t *)((const char *)&w->stats[i] + fam[k].off));
  }
  fclose(f);
  gs_http_respond(conn, 200, "text/plain; version=0.0.4", NULL, buf, len);
  free(buf);
}

/* ---- infer ---- */

/* What one request asks, as validated. */
struct infer {
  const struct gs__model_spec *m;
  unsigned idx;
  uint64_t hash;          /* of every input's bytes: outputs derive from it */
  const char *bin;        /* binary tensor data after the JSON header */
  size_t bin_len, bin_used;
  json_t *doc;            /* the request JSON (NULL for a raw binary request) */
  bool out_binary[GS__MAX_TENSORS], out_wanted[GS__MAX_TENSORS];
  char err[512];
};

static int fail(struct infer *q, const char *fmt, ...) GS_PRINTF(2, 3);
static int fail(struct infer *q, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(q->err, sizeof(q->err), fmt, ap);
  va_end(ap);
  return 400;
}

static void hash_bytes(uint64_t *h, const void *p, size_t n)
{
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++)
    *h = (*h ^ b[i]) * 1099511628211ull; /* FNV-1a */
}

static size_t element_count(const struct gs__tensor_spec *t)
{
  size_t n = 1;
  for (unsigned d = 0; d < t->ndims; d++)
    n *= (size_t)t->shape[d];
  return n;
}

static void shape_text(char *out, size_t sz, json_t *shape)
{
  size_t o = (size_t)snprintf(out, sz, "[");
  for (size_t i = 0; i < json_array_size(shape) && o + 24 < sz; i++)
    o += (size_t)snprintf(out + o, sz - o, "%s%lld", i ? "," : "",
                          (long long)json_integer_value(json_array_get(shape, i)));
  snprintf(out + o, sz - o, "]");
}

static int check_shape(struct infer *q, const struct gs__tensor_spec *t, json_t *shape)
{
  bool ok = json_is_array(shape) && json_array_size(shape) == t->ndims;
  char want[64], got[128];
  for (size_t d = 0; ok && d < t->ndims; d++)
    ok = json_is_integer(json_array_get(shape, d)) &&
         json_integer_value(json_array_get(shape, d)) == t->shape[d];
  if (ok)
    return 0;
  if (!json_is_array(shape))
    return fail(q, "input '%s' for model '%s': 'shape' must be an array of integers", t->name,
                q->m->name);
  json_t *expect = shape_json(t);
  shape_text(want, sizeof(want), expect);
  json_decref(expect);
  shape_text(got, sizeof(got), shape);
  return fail(q, "unexpected shape for input '%s' for model '%s'. Expected %s, got %s", t->name,
              q->m->name, want, got);
}

/* Hashes JSON 'data' (nested or flat) as the binary bytes it stands for. */
static int walk_data(struct infer *q, const struct gs__tensor_spec *t, json_t *v, size_t *n, int depth)
{
  if (json_is_array(v)) {
    if (depth > GS__WORKER_MAX_DIMS)
      return fail(q, "input '%s': 'data' is nested deeper than its shape", t->name);
    for (size_t i = 0; i < json_array_size(v); i++)
      if (walk_data(q, t, json_array_get(v, i), n, depth + 1) != 0)
        return 400;
    return 0;
  }
  if (strcmp(t->datatype, "INT32") == 0) {
    json_int_t x;
    int32_t e;
    if (!json_is_integer(v) || (x = json_integer_value(v)) < INT32_MIN || x > INT32_MAX)
      return fail(q, "unable to parse 'data' of input '%s': expected INT32 values", t->name);
    e = (int32_t)x;
    hash_bytes(&q->hash, &e, sizeof(e));
  } else {
    float e;
    if (!json_is_number(v))
      return fail(q, "unable to parse 'data' of input '%s': expected FP32 numbers", t->name);
    e = (float)json_number_value(v);
    hash_bytes(&q->hash, &e, sizeof(e));
  }
  (*n)++;
  return 0;
}

static int take_binary(struct infer *q, const struct gs__tensor_spec *t, json_t *size)
{
  size_t want = element_count(t) * 4;
  json_int_t got = json_integer_value(size);
  if (!json_is_integer(size) || got < 0)
    return fail(q, "input '%s': 'binary_data_size' must be a non-negative integer", t->name);
  if ((size_t)got != want)
    return fail(q, "input byte size mismatch for input '%s' for model '%s'. Expected %zu, got %lld",
                t->name, q->m->name, want, (long long)got);
  if (q->bin_len - q->bin_used < want)
    return fail(q, "input '%s': binary_data_size %zu runs past the end of the request body "
                   "(%zu binary bytes left)", t->name, want, q->bin_len - q->bin_used);
  hash_bytes(&q->hash, q->bin + q->bin_used, want);
  q->bin_used += want;
  return 0;
}

static int check_input(struct infer *q, json_t *in, bool seen[GS__MAX_TENSORS])
{
  const char *name = json_string_value(json_object_get(in, "name"));
  const char *dt = json_string_value(json_object_get(in, "datatype"));
  json_t *bsize = json_object_get(json_object_get(in, "parameters"), "binary_data_size");
  const struct gs__tensor_spec *t = NULL;
  size_t n = 0;
  unsigned k;
  int rc;
  if (!name)
    return fail(q, "an input of the request for model '%s' has no 'name'", q->m->name);
  for (k = 0; k < q->m->nin && !t; k++)
    if (strcmp(q->m->in[k].name, name) == 0)
      t = &q->m->in[k];
  if (!t)
    return fail(q, "unexpected inference input '%s' for model '%s'", name, q->m->name);
  if (seen[--k])
    return fail(q, "input '%s' given twice for model '%s'", name, q->m->name);
  seen[k] = true;
  if (!dt || strcmp(dt, t->datatype) != 0)
    return fail(q, "inference input '%s' data-type is '%s', but model '%s' expects '%s'", name,
                dt ? dt : "(none)", q->m->name, t->datatype);
  if ((rc = check_shape(q, t, json_object_get(in, "shape"))) != 0)
    return rc;
  if (bsize)
    return take_binary(q, t, bsize);
  if (!json_object_get(in, "data"))
    return fail(q, "input '%s' for model '%s' has neither 'data' nor binary_data_size", name,
                q->m->name);
  if ((rc = walk_data(q, t, json_object_get(in, "data"), &n, 0)) != 0)
    return rc;
  if (n != element_count(t))
    return fail(q, "unexpected number of elements for input '%s' for model '%s'. Expected %zu, got %zu",
                name, q->m->name, element_count(t), n);
  return 0;
}

static int check_outputs(struct infer *q)
{
  json_t *outs = json_object_get(q->doc, "outputs"), *o;
  bool all_binary = json_is_true(json_object_get(json_object_get(q->doc, "parameters"),
                                                 "binary_data_output"));
  size_t i;
  for (unsigned k = 0; k < q->m->nout; k++)
    q->out_wanted[k] = !outs, q->out_binary[k] = all_binary;
  if (outs && !json_is_array(outs))
    return fail(q, "'outputs' of the request for model '%s' must be an array", q->m->name);
  json_array_foreach(outs, i, o) {
    const char *name = json_string_value(json_object_get(o, "name"));
    unsigned k;
    for (k = 0; k < q->m->nout && (!name || strcmp(q->m->out[k].name, name) != 0); k++)
      ;
    if (k == q->m->nout)
      return fail(q, "unexpected inference output '%s' for model '%s'", name ? name : "(no name)",
                  q->m->name);
    q->out_wanted[k] = true;
    json_t *b = json_object_get(json_object_get(o, "parameters"), "binary_data");
    if (b)
      q->out_binary[k] = json_is_true(b);
  }
  return 0;
}

static int check_inputs(struct infer *q)
{
  json_t *ins = json_object_get(q->doc, "inputs"), *in;
  bool seen[GS__MAX_TENSORS] = {0};
  size_t i;
  int rc;
  if (!json_is_array(ins))
    return fail(q, "the request for model '%s' has no 'inputs' array", q->m->name);
  json_array_foreach(ins, i, in)
    if ((rc = check_input(q, in, seen)) != 0)
      return rc;
  for (unsigned k = 0; k < q->m->nin; k++)
    if (!seen[k])
      return fail(q, "expected %u inputs but got %zu inputs for model '%s': missing '%s'",
                  q->m->nin, json_array_size(ins), q->m->name, q->m->in[k].name);
  if (q->bin_used != q->bin_len)
    return fail(q, "%zu bytes of binary data follow the inputs' binary_data_size total for model '%s'",
                q->bin_len - q->bin_used, q->m->name);
  return check_outputs(q);
}

/* Reads the body as JSON plus binary tail, or as one raw binary tensor. */
static int parse_infer(struct infer *q, const struct gs_http_request *req)
{
  const struct gs_http_header *h = gs_http_header_find(req, "Inference-Header-Content-Length");
  size_t jlen = req->body_len;
  json_error_t je;
  if (h) {
    char num[24] = {0};
    char *end;
    unsigned long long v;
    memcpy(num, h->value, h->value_len < sizeof(num) - 1 ? h->value_len : sizeof(num) - 1);
    errno = 0;
    v = strtoull(num, &end, 10);
    if (!h->value_len || *end || errno || v > req->body_len)
      return fail(q, "Inference-Header-Content-Length '%.*s' is not a length within the %zu-byte body",
                  (int)(h->value_len > 40 ? 40 : h->value_len), h->value, req->body_len);
    jlen = (size_t)v;
  }
  q->bin = req->body + jlen;
  q->bin_len = req->body_len - jlen;
  q->hash = 14695981039346656037ull;
  for (unsigned k = 0; k < q->m->nout; k++)
    q->out_wanted[k] = true;
  if (h && jlen == 0) { /* raw binary request: a single input, batch 1, every output binary */
    const struct gs__tensor_spec *t = &q->m->in[0];
    for (unsigned k = 0; k < q->m->nout; k++)
      q->out_binary[k] = true;
    if (q->m->nin != 1)
      return fail(q, "raw binary request (Inference-Header-Content-Length: 0) needs a model with "
                     "one input; '%s' has %u", q->m->name, q->m->nin);
    if (q->bin_len != element_count(t) * 4)
      return fail(q, "input byte size mismatch for input '%s' for model '%s'. Expected %zu, got %zu",
                  t->name, q->m->name, element_count(t) * 4, q->bin_len);
    hash_bytes(&q->hash, q->bin, q->bin_len);
    return 0;
  }
  if (!(q->doc = json_loadb(req->body, jlen, 0, &je)) || !json_is_object(q->doc))
    return fail(q, "failed to parse the request JSON buffer: %s",
                q->doc ? "not a JSON object" : je.text);
  return check_inputs(q);
}

static uint64_t mix(uint64_t *s)
{
  *s ^= *s >> 12, *s ^= *s << 25, *s ^= *s >> 27; /* xorshift64* */
  return *s * 2685821657736338717ull;
}

static void output_values(const struct infer *q, unsigned k, float *v, size_t n)
{
  gs__worker_output_values(q->hash, k, v, n);
}

void gs__worker_output_values(uint64_t hash, unsigned k, float *v, size_t n)
{
  uint64_t s = hash ^ (0x9e3779b97f4a7c15ull * (k + 1));
  if (!s)
    s = 1;
  for (size_t i = 0; i < n; i++)
    v[i] = (float)((double)(mix(&s) >> 11) * (1.0 / 9007199254740992.0) * 8.0 - 4.0);
}

/* The answer: JSON header, then binary outputs in order. */
static int build_answer(const struct infer *q, json_t *id, struct job *j)
{
  json_t *outs = json_array(), *doc;
  float vals[384];
  size_t bin = 0, off;
  char *js;
  for (unsigned k = 0; k < q->m->nout; k++) {
    const struct gs__tensor_spec *t = &q->m->out[k];
    json_t *o;
    if (!q->out_wanted[k])
      continue;
    o = json_pack("{s:s, s:s, s:o}", "name", t->name, "datatype", t->datatype, "shape", shape_json(t));
    if (q->out_binary[k]) {
      json_object_set_new(o, "parameters", json_pack("{s:I}", "binary_data_size",
                                                     (json_int_t)(element_count(t) * 4)));
      bin += element_count(t) * 4;
    } else {
      json_t *d = json_array();
      output_values(q, k, vals, element_count(t));
      for (size_t i = 0; i < element_count(t); i++)
        json_array_append_new(d, json_real(vals[i]));
      json_object_set_new(o, "data", d);
    }
    json_array_append_new(outs, o);
  }
  doc = json_pack("{s:s, s:s, s:o}", "model_name", q->m->name, "model_version", "1", "outputs", outs);
  if (json_is_string(id))
    json_object_set(doc, "id", id);
  js = json_dumps(doc, JSON_COMPACT);
  json_decref(doc);
  if (!js || !(j->body = malloc(strlen(js) + bin + 1))) {
    free(js);
    return 500;
  }
  off = strlen(js);
  memcpy(j->body, js, off);
  free(js);
  j->json_len = bin ? off : 0;
  for (unsigned k = 0; k < q->m->nout; k++)
    if (q->out_wanted[k] && q->out_binary[k]) {
      size_t n = element_count(&q->m->out[k]);
      output_values(q, k, vals, n);
      memcpy(j->body + off, vals, n * 4); /* little-endian hosts: the extension's byte order */
      off += n * 4;
    }
  j->len = off;
  return 0;
}

static void infer(struct gs_worker *w, struct gs_http_conn *conn, const struct gs_http_request *req,
                  const struct gs__model_spec *m, unsigned idx)
{
  struct infer q = {.m = m, .idx = idx};
  struct job *j = calloc(1, sizeof(*j));
  int status = j ? parse_infer(&q, req) : 500;
  if (status == 0)
    status = build_answer(&q, json_object_get(q.doc, "id"), j);
  json_decref(q.doc);
  if (status != 0) {
    w->stats[idx].failure++;
    free(j);
    gs_http_respond_error(conn, status, "%s", status == 500 ? "out of memory" : q.err);
    return;
  }
  j->conn = conn;
  j->model = idx;
  j->arrival_us = gs_net_loop_now_us();
  j->compute_us = w->time_us[idx];
  enqueue(w, j);
}

/* ---- what the gRPC front end (grpc.c) shares ---- */

static void tensor_out(const struct gs__tensor_spec *t, struct gs__tensor *o)
{
  o->name = t->name;
  o->datatype = t->datatype;
  o->ndims = t->ndims;
  o->shape = t->shape;
  o->elements = element_count(t);
}

int gs__worker_model(const struct gs_worker *w, const char *name, size_t len, struct gs__model *out)
{
  unsigned idx;
  const struct gs__model_spec *m = gs__worker_model_find(name, len, &idx);
  if (!m || !w->enabled[idx])
    return GS_E_NOT_FOUND;
  out->idx = idx;
  out->name = m->name;
  out->nin = m->nin;
  out->nout = m->nout;
  for (unsigned k = 0; k < m->nin; k++)
    tensor_out(&m->in[k], &out->in[k]);
  for (unsigned k = 0; k < m->nout; k++)
    tensor_out(&m->out[k], &out->out[k]);
  return 0;
}

const char *const *gs__worker_enabled_models(const struct gs_worker *w, const char **buf, size_t n)
{
  size_t o = 0;
  for (unsigned i = 0; i < GS__WORKER_NMODELS && o + 1 < n; i++)
    if (w->enabled[i])
      buf[o++] = gs__worker_models[i].name;
  buf[o] = NULL;
  return buf;
}

bool gs__worker_ready(const struct gs_worker *w)
{
  return !w->unready;
}

void gs__worker_failed(struct gs_worker *w, unsigned idx)
{
  w->stats[idx].failure++;
}

int gs__worker_enqueue(struct gs_worker *w, unsigned idx, gs__worker_done_fn *done, void *ctx,
                       struct gs__job **out)
{
  struct job *j = calloc(1, sizeof(*j));
  if (!j)
    return GS_E_NO_MEMORY;
  j->done = done;
  j->done_ctx = ctx;
  j->model = idx;
  j->arrival_us = gs_net_loop_now_us();
  j->compute_us = w->time_us[idx];
  if (out)
    *out = (struct gs__job *)j; /* before it may run and end (an instant worker) */
  enqueue(w, j);
  return 0;
}

/* The job leaves the queue, or the slice, which then takes the next one at
 * once: an expired call holds the modelled GPU no longer. */
void gs__worker_cancel(struct gs_worker *w, struct gs__job *job)
{
  struct job *j = (struct job *)job, **pp = &w->head, *prev = NULL;
  while (*pp && *pp != j)
    prev = *pp, pp = &(*pp)->next;
  if (!*pp)
    return;
  *pp = j->next;
  if (w->tail == j)
    w->tail = prev;
  if (prev == NULL && w->busy) { /* it was on the slice */
    gs_net_loop_timer_del(w->loop, w->timer);
    w->timer = 0;
    w->busy = false;
  }
  w->stats[j->model].pending--;
  w->stats[j->model].failure++;
  free(j);
  start_next(w);
}

void gs_worker_grpc_fd(struct gs_worker *w, int fd)
{
  w->grpc_fd = fd;
}

/* ---- routing ---- */

static bool is(const char *p, size_t n, const char *lit)
{
  return n == strlen(lit) && memcmp(p, lit, n) == 0;
}

/* /v2/models/{m}[/versions/1][/ready|/infer] */
static void route_model(struct gs_worker *w, struct gs_http_conn *conn,
                        const struct gs_http_request *req, const char *p, size_t n)
{
  const char *slash = memchr(p, '/', n);
  size_t nl = slash ? (size_t)(slash - p) : n, rl = n - nl;
  const char *rest = p + nl;
  bool post = is(req->method, req->method_len, "POST");
  unsigned idx;
  const struct gs__model_spec *m = gs__worker_model_find(p, nl, &idx);
  if (!m || !w->enabled[idx]) {
    gs_http_respond_error(conn, 404, "Request for unknown model: '%.*s' is not found", (int)nl, p);
    return;
  }
  if (rl >= 11 && memcmp(rest, "/versions/", 10) == 0) {
    const char *v = rest + 10, *e = memchr(v, '/', rl - 10);
    size_t vl = e ? (size_t)(e - v) : rl - 10;
    if (!is(v, vl, "1")) {
      gs_http_respond_error(conn, 404, "Request for unknown model: '%s' version %.*s is not found",
                            m->name, (int)vl, v);
      return;
    }
    rl -= 10 + vl;
    rest = v + vl;
  }
  if (rl == 0 && !post)
    model_metadata(w, conn, m, idx);
  else if (is(rest, rl, "/ready") && !post)
    gs_http_respond(conn, 200, NULL, NULL, "", 0);
  else if (is(rest, rl, "/infer") && post)
    infer(w, conn, req, m, idx);
  else if (is(rest, rl, "/infer"))
    gs_http_respond_error(conn, 405, "use POST for /v2/models/%s/infer", m->name);
  else
    gs_http_respond_error(conn, 404, "no such endpoint: %.*s", (int)req->path_len, req->path);
}

void gs_worker_handle(void *ctx, struct gs_http_conn *conn, const struct gs_http_request *req)
{
  struct gs_worker *w = ctx;
  const char *q = memchr(req->path, '?', req->path_len);
  size_t n = q ? (size_t)(q - req->path) : req->path_len;
  const char *p = req->path;
  bool get = is(req->method, req->method_len, "GET") || is(req->method, req->method_len, "HEAD");
  if (get && is(p, n, "/v2/health/ready") && w->unready)
    gs_http_respond_error(conn, 503, "not ready (SIGUSR1 toggled it off)");
  else if (get && (is(p, n, "/v2/health/live") || is(p, n, "/v2/health/ready")))
    gs_http_respond(conn, 200, NULL, NULL, "", 0);
  else if (get && is(p, n, "/v2"))
    server_metadata(w, conn);
  else if (get && is(p, n, "/metrics"))
    metrics(w, conn);
  else if (n > 11 && memcmp(p, "/v2/models/", 11) == 0)
    route_model(w, conn, req, p + 11, n - 11);
  else
    gs_http_respond_error(conn, 404, "no such endpoint: %.*s %.*s", (int)req->method_len,
                          req->method, (int)(n > 200 ? 200 : n), p);
}

/* ---- running ---- */

static void on_signal(struct gs_net_loop *loop, int fd, void *data, unsigned mask)
{
  struct gs_worker *w = data;
  struct signalfd_siginfo si;
  (void)mask;
  if (read(fd, &si, sizeof(si)) != (ssize_t)sizeof(si))
    return;
  if (si.ssi_signo == SIGUSR1)
    w->unready = !w->unready;
  else
    gs_net_loop_stop(loop);
}

static int signal_fd(struct gs_err *err)
{
  sigset_t set;
  int fd;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGUSR1);
  signal(SIGPIPE, SIG_IGN);
  if (sigprocmask(SIG_BLOCK, &set, NULL) != 0 || (fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC)) < 0)
    return gs_err_set(err, GS_E_IO, "cannot catch SIGTERM: %s", strerror(errno));
  return fd;
}

int gs_worker_run(struct gs_err *err, struct gs_worker *w, int listen_fd,
                  const struct gs_http_limits *limits)
{
  struct gs_net_loop *loop = NULL;
  struct gs_http_server *srv = NULL;
  struct gs_grpc_server *gsrv = NULL;
  unsigned conns = limits ? limits->max_conns : 1024;
  int rc, sfd = -1;
  if ((rc = gs_net_loop_new(err, (int)conns + 64, &loop)) != 0)
    goto out;
  if ((rc = sfd = signal_fd(err)) < 0)
    goto out;
  if ((rc = gs_net_loop_add(err, loop, sfd, GS_NET_READABLE, on_signal, w)) != 0 ||
      (rc = gs_http_server_new(err, loop, limits, gs_worker_handle, w, &srv)) != 0 ||
      (rc = gs_http_server_listen_fd(err, srv, listen_fd)) != 0)
    goto out;
  listen_fd = -1; /* the server owns it now */
  if (w->grpc_fd >= 0 && (rc = gs__grpc_worker_new(err, loop, w, w->grpc_fd, &gsrv)) != 0)
    goto out;
  w->grpc_fd = -1;
  gs_worker_attach(w, loop);
  if ((rc = gs_net_loop_run(loop)) != 0)
    gs_err_set(err, rc, "event loop failed: %s", strerror(errno));
out:
  w->loop = NULL;
  gs__grpc_worker_free(gsrv);
  gs_http_server_free(srv);
  if (listen_fd >= 0)
    close(listen_fd);
  if (sfd >= 0)
    close(sfd);
  gs_net_loop_free(loop);
  return rc;
}
