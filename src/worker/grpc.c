/* SPDX-License-Identifier: Apache-2.0 */
/* grpc.c: the emulated worker's KServe v2 gRPC service
 * (inference.GRPCInferenceService: ServerLive, ServerReady, ModelReady,
 * ServerMetadata, ModelMetadata, ModelInfer, ModelStreamInfer) on net's
 * HTTP/2 calls, with protobuf-c code generated from proto/inference.proto.
 * ModelInfer is validated as the HTTP path validates it (names, datatypes,
 * shapes, byte sizes), then waits its modelled turn on the same slice queue
 * (worker.c), so HTTP and gRPC requests share one modelled GPU; its
 * grpc-timeout takes it off that queue. Outputs go back as
 * raw_output_contents. ModelStreamInfer answers each request of a stream,
 * in order, as Triton does (errors in error_message). */
#include "worker/internal.h"

#include "inference.pb-c.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* gRPC status codes (grpc/doc/statuscodes.md). */
enum { ST_OK = 0, ST_INVALID_ARGUMENT = 3, ST_DEADLINE_EXCEEDED = 4, ST_NOT_FOUND = 5, ST_RESOURCE_EXHAUSTED = 8,
       ST_UNIMPLEMENTED = 12, ST_INTERNAL = 13, ST_UNAVAILABLE = 14 };

#define SERVICE "/inference.GRPCInferenceService/"

struct gs_grpc_server {
  struct gs_h2_server *h2;
  struct gs_worker *w;
  struct gs_net_loop *loop;
};

struct stream;

/* An infer request waiting for its modelled turn, its answer already
 * packed; a unary call's with a grpc-timeout has a timer that takes it off
 * the slice's queue at its deadline; a stream's waits for those before it. */
struct pending {
  struct gs_grpc_server *g;
  struct gs_h2_call *call; /* a unary call's */
  struct stream *s;        /* or the stream it came on */
  struct pending *next;    /* the stream's next request */
  struct gs__job *job;     /* on the slice's queue (NULL: not, or done) */
  bool ready;              /* a stream's: its answer may go */
  uint64_t timer;
  uint8_t *resp;
  size_t len;
};

/* A stream's client is held back (its window not given back) while this
 * many of its requests wait for their turn or their answers for its
 * reading: what a client sends faster than the slice computes, or reads
 * slower, waits in the client, not here. */
#define STREAM_AHEAD 64
#define STREAM_OUT_MAX (1u << 20)

/* One ModelStreamInfer call: its requests answered one by one, in order. */
struct stream {
  struct gs_grpc_server *g;
  struct gs_h2_call *call;
  struct pending *head, *tail;
  size_t waiting;  /* requests taken and not yet answered */
  size_t unread;   /* answer bytes queued that the client's window has not let go */
  bool holding;    /* the client's input held back (stream_pace) */
  struct gs_net_defer pace; /* stream_pace after the client read (on_sent) */
  uint64_t timer; /* the call's grpc-timeout: the whole stream ends then */
  bool ended;  /* the client half-closed */
  bool failed; /* out of memory: later requests are dropped, the end says so */
  int status;  /* the end's status and why: the input's (broken, h2.c) or ours */
  char why[256];
};

/* The stream cannot go on (out of memory); its end gets this status. */
static void stream_fail(struct stream *st, int status, const char *why)
{
  if (st->failed)
    return;
  st->failed = true;
  st->status = status;
  snprintf(st->why, sizeof(st->why), "%s", why);
}

/* Packs msg and answers OK, or INTERNAL when out of memory. */
static void reply_msg(struct gs_h2_call *call, const ProtobufCMessage *msg)
{
  size_t n = protobuf_c_message_get_packed_size(msg);
  uint8_t *buf = malloc(n ? n : 1);
  if (!buf) {
    gs_h2_call_reply(call, ST_RESOURCE_EXHAUSTED, NULL, 0, "out of memory");
    return;
  }
  protobuf_c_message_pack(msg, buf);
  gs_h2_call_reply(call, ST_OK, buf, n, NULL);
  free(buf);
}

static void reply_error(struct gs_h2_call *call, int status, const char *fmt, ...)
    GS_PRINTF(3, 4);
static void reply_error(struct gs_h2_call *call, int status, const char *fmt, ...)
{
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  gs_h2_call_reply(call, status, NULL, 0, msg);
}

/* Why a request is refused: a gRPC status and its message. */
struct why {
  int status;
  char msg[512];
};

static int fail(struct why *y, int status, const char *fmt, ...) GS_PRINTF(3, 4);
static int fail(struct why *y, int status, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(y->msg, sizeof(y->msg), fmt, ap);
  va_end(ap);
  y->status = status;
  return -1;
}

static bool version_ok(const char *v)
{
  return !v || !*v || strcmp(v, "1") == 0;
}

/* ---- health and metadata ---- */

static void server_live(struct gs_h2_call *call)
{
  Inference__ServerLiveResponse r = INFERENCE__SERVER_LIVE_RESPONSE__INIT;
  r.live = true;
  reply_msg(call, &r.base);
}

static void server_ready(struct gs_grpc_server *g, struct gs_h2_call *call)
{
  Inference__ServerReadyResponse r = INFERENCE__SERVER_READY_RESPONSE__INIT;
  r.ready = gs__worker_ready(g->w);
  reply_msg(call, &r.base);
}

static void server_metadata(struct gs_h2_call *call)
{
  Inference__ServerMetadataResponse r = INFERENCE__SERVER_METADATA_RESPONSE__INIT;
  r.name = "gpuslice-worker";
  r.version = "1";
  r.n_extensions = GS__WORKER_NEXTENSIONS;
  r.extensions = (char **)gs__worker_extensions;
  reply_msg(call, &r.base);
}

/* The name and version of a ModelReady or ModelMetadata request (the same fields). */
static int model_of(struct gs_grpc_server *g, struct gs_h2_call *call,
                    const struct gs_h2_request *req, struct gs__model *m, bool quiet)
{
  Inference__ModelMetadataRequest *q =
      inference__model_metadata_request__unpack(NULL, req->msg_len, req->msg);
  int rc = 0;
  if (!q) {
    reply_error(call, ST_INVALID_ARGUMENT, "cannot parse the request message");
    return -1;
  }
  if (gs__worker_model(g->w, q->name, strlen(q->name), m) != 0 || !version_ok(q->version)) {
    if (!quiet)
      reply_error(call, ST_NOT_FOUND, "Request for unknown model: '%.100s' version '%.20s' is not found",
                  q->name, q->version);
    rc = 1;
  }
  inference__model_metadata_request__free_unpacked(q, NULL);
  return rc;
}

static void model_ready(struct gs_grpc_server *g, struct gs_h2_call *call,
                        const struct gs_h2_request *req)
{
  Inference__ModelReadyResponse r = INFERENCE__MODEL_READY_RESPONSE__INIT;
  struct gs__model m;
  int rc = model_of(g, call, req, &m, true);
  if (rc < 0)
    return;
  r.ready = rc == 0;
  reply_msg(call, &r.base);
}

static void model_metadata(struct gs_grpc_server *g, struct gs_h2_call *call,
                           const struct gs_h2_request *req)
{
  Inference__ModelMetadataResponse r = INFERENCE__MODEL_METADATA_RESPONSE__INIT;
  Inference__ModelMetadataResponse__TensorMetadata t[2 * GS__MAX_TENSORS];
  Inference__ModelMetadataResponse__TensorMetadata *in[GS__MAX_TENSORS], *out[GS__MAX_TENSORS];
  char *versions[] = {"1"};
  struct gs__model m;
  if (model_of(g, call, req, &m, false) != 0)
    return;
  for (unsigned k = 0; k < m.nin + m.nout; k++) {
    const struct gs__tensor *s = k < m.nin ? &m.in[k] : &m.out[k - m.nin];
    inference__model_metadata_response__tensor_metadata__init(&t[k]);
    t[k].name = (char *)s->name;
    t[k].datatype = (char *)s->datatype;
    t[k].n_shape = s->ndims;
    t[k].shape = (int64_t *)s->shape;
    if (k < m.nin)
      in[k] = &t[k];
    else
      out[k - m.nin] = &t[k];
  }
  r.name = (char *)m.name;
  r.n_versions = 1;
  r.versions = versions;
  r.platform = "gpuslice-emulated";
  r.n_inputs = m.nin;
  r.inputs = in;
  r.n_outputs = m.nout;
  r.outputs = out;
  reply_msg(call, &r.base);
}

/* ---- infer ---- */

static void hash_bytes(uint64_t *h, const void *p, size_t n)
{
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++)
    *h = (*h ^ b[i]) * 1099511628211ull; /* FNV-1a, as the HTTP path hashes */
}

static char *shape_text(char *out, size_t sz, const int64_t *shape, size_t n)
{
  size_t o = (size_t)snprintf(out, sz, "[");
  for (size_t i = 0; i < n && o + 24 < sz; i++)
    o += (size_t)snprintf(out + o, sz - o, "%s%lld", i ? "," : "", (long long)shape[i]);
  snprintf(out + o, sz - o, "]");
  return out;
}

/* One input against the model; its bytes hashed. 0, or -1 and why. */
static int check_input(struct why *y, const Inference__ModelInferRequest *q,
                       const struct gs__model *m, size_t i, bool seen[], uint64_t *hash)
{
  const Inference__ModelInferRequest__InferInputTensor *in = q->inputs[i];
  const struct gs__tensor *t = NULL;
  const Inference__InferTensorContents *c = in->contents;
  char want[64], got[128];
  bool shape_ok;
  unsigned k;
  for (k = 0; k < m->nin && !t; k++)
    if (strcmp(m->in[k].name, in->name) == 0)
      t = &m->in[k];
  if (!t)
    return fail(y, ST_INVALID_ARGUMENT, "unexpected inference input '%.100s' for model '%s'",
                       in->name, m->name);
  if (seen[--k])
    return fail(y, ST_INVALID_ARGUMENT, "input '%s' given twice for model '%s'", t->name,
                       m->name);
  seen[k] = true;
  if (strcmp(in->datatype, t->datatype) != 0)
    return fail(y, ST_INVALID_ARGUMENT,
                       "inference input '%s' data-type is '%.20s', but model '%s' expects '%s'",
                       t->name, in->datatype, m->name, t->datatype);
  shape_ok = in->n_shape == t->ndims;
  for (unsigned d = 0; shape_ok && d < t->ndims; d++)
    shape_ok = in->shape[d] == t->shape[d];
  if (!shape_ok)
    return fail(y, ST_INVALID_ARGUMENT,
                       "unexpected shape for input '%s' for model '%s'. Expected %s, got %s",
                       t->name, m->name, shape_text(want, sizeof(want), t->shape, t->ndims),
                       shape_text(got, sizeof(got), in->shape, in->n_shape));
  if (q->n_raw_input_contents) {
    const ProtobufCBinaryData *raw = &q->raw_input_contents[i];
    if (c)
      return fail(y, ST_INVALID_ARGUMENT, "input '%s': give raw_input_contents or "
                         "contents, not both", t->name);
    if (raw->len != t->elements * 4)
      return fail(y, ST_INVALID_ARGUMENT, "input byte size mismatch for input '%s' "
                         "for model '%s'. Expected %zu, got %zu", t->name, m->name,
                         t->elements * 4, raw->len);
    hash_bytes(hash, raw->data, raw->len);
    return 0;
  }
  bool fp32 = strcmp(t->datatype, "FP32") == 0;
  size_t n = !c ? 0 : fp32 ? c->n_fp32_contents : c->n_int_contents;
  if (n != t->elements)
    return fail(y, ST_INVALID_ARGUMENT, "unexpected number of elements for input '%s' "
                       "for model '%s' in contents.%s. Expected %zu, got %zu", t->name, m->name,
                       fp32 ? "fp32_contents" : "int_contents", t->elements, n);
  hash_bytes(hash, fp32 ? (const void *)c->fp32_contents : (const void *)c->int_contents, n * 4);
  return 0;
}

static int check_infer(struct why *y, const Inference__ModelInferRequest *q,
                       const struct gs__model *m, bool wanted[], uint64_t *hash)
{
  bool seen[GS__MAX_TENSORS] = {0};
  if (q->n_raw_input_contents && q->n_raw_input_contents != q->n_inputs)
    return fail(y, ST_INVALID_ARGUMENT, "%zu raw_input_contents for %zu inputs: give "
                       "one per input, in the inputs' order", q->n_raw_input_contents,
                       q->n_inputs);
  for (size_t i = 0; i < q->n_inputs; i++)
    if (check_input(y, q, m, i, seen, hash) != 0)
      return -1;
  for (unsigned k = 0; k < m->nin; k++)
    if (!seen[k])
      return fail(y, ST_INVALID_ARGUMENT, "expected %u inputs but got %zu inputs for "
                         "model '%s': missing '%s'", m->nin, q->n_inputs, m->name,
                         m->in[k].name);
  for (unsigned k = 0; k < m->nout; k++)
    wanted[k] = q->n_outputs == 0;
  for (size_t i = 0; i < q->n_outputs; i++) {
    unsigned k;
    for (k = 0; k < m->nout && strcmp(m->out[k].name, q->outputs[i]->name) != 0; k++)
      ;
    if (k == m->nout)
      return fail(y, ST_INVALID_ARGUMENT, "unexpected inference output '%.100s' for "
                         "model '%s'", q->outputs[i]->name, m->name);
    wanted[k] = true;
  }
  return 0;
}

/* The answer: every wanted output, its values in raw_output_contents. */
static int pack_answer(const Inference__ModelInferRequest *q, const struct gs__model *m,
                       const bool wanted[], uint64_t hash, bool stream, struct pending *p)
{
  Inference__ModelInferResponse r = INFERENCE__MODEL_INFER_RESPONSE__INIT;
  Inference__ModelStreamInferResponse sr = INFERENCE__MODEL_STREAM_INFER_RESPONSE__INIT;
  const ProtobufCMessage *msg = stream ? &sr.base : &r.base;
  Inference__ModelInferResponse__InferOutputTensor t[GS__MAX_TENSORS], *outs[GS__MAX_TENSORS];
  ProtobufCBinaryData raw[GS__MAX_TENSORS];
  float vals[GS__MAX_TENSORS][384];
  char *version = "1";
  size_t n = 0;
  for (unsigned k = 0; k < m->nout; k++) {
    if (!wanted[k])
      continue;
    inference__model_infer_response__infer_output_tensor__init(&t[n]);
    t[n].name = (char *)m->out[k].name;
    t[n].datatype = (char *)m->out[k].datatype;
    t[n].n_shape = m->out[k].ndims;
    t[n].shape = (int64_t *)m->out[k].shape;
    gs__worker_output_values(hash, k, vals[n], m->out[k].elements);
    raw[n].data = (uint8_t *)vals[n]; /* little-endian hosts, as Triton's raw contents */
    raw[n].len = m->out[k].elements * 4;
    outs[n] = &t[n];
    n++;
  }
  r.model_name = (char *)m->name;
  r.model_version = version;
  r.id = q->id;
  r.n_outputs = n;
  r.outputs = outs;
  r.n_raw_output_contents = n;
  r.raw_output_contents = raw;
  sr.infer_response = &r;
  p->len = protobuf_c_message_get_packed_size(msg);
  if (!(p->resp = malloc(p->len ? p->len : 1)))
    return -1;
  protobuf_c_message_pack(msg, p->resp);
  return 0;
}

/* A stream's answer to a refused request, as Triton gives it: the error in
 * error_message, the request's id in infer_response so the client knows
 * which request failed. */
static void pack_error(const char *id, const char *why, struct pending *p)
{
  Inference__ModelInferResponse r = INFERENCE__MODEL_INFER_RESPONSE__INIT;
  Inference__ModelStreamInferResponse sr = INFERENCE__MODEL_STREAM_INFER_RESPONSE__INIT;
  r.id = (char *)id;
  sr.error_message = (char *)why;
  sr.infer_response = &r;
  free(p->resp);
  p->len = protobuf_c_message_get_packed_size(&sr.base);
  if ((p->resp = malloc(p->len ? p->len : 1)))
    protobuf_c_message_pack(&sr.base, p->resp);
}

/* A ModelInfer request read, checked and answered ahead (p->resp: its
 * ModelInferResponse, or a stream's ModelStreamInferResponse). The model's
 * index, or -1 and why (for a stream, packed as its error_message too;
 * p->resp NULL then only when out of memory). */
static int prepare(struct gs_grpc_server *g, const uint8_t *msg, size_t len, bool stream,
                   struct pending *p, struct why *y)
{
  Inference__ModelInferRequest *q = inference__model_infer_request__unpack(NULL, len, msg);
  struct gs__model m;
  bool wanted[GS__MAX_TENSORS];
  uint64_t hash = 14695981039346656037ull;
  int rc = -1;
  if (!q)
    fail(y, ST_INVALID_ARGUMENT, "cannot parse the ModelInferRequest message");
  else if (gs__worker_model(g->w, q->model_name, strlen(q->model_name), &m) != 0 ||
           !version_ok(q->model_version))
    fail(y, ST_NOT_FOUND, "Request for unknown model: '%.100s' version '%.20s' is not found",
         q->model_name, q->model_version);
  else if (check_infer(y, q, &m, wanted, &hash) != 0)
    gs__worker_failed(g->w, m.idx);
  else if (pack_answer(q, &m, wanted, hash, stream, p) != 0)
    gs__worker_failed(g->w, m.idx), fail(y, ST_RESOURCE_EXHAUSTED, "out of memory");
  else
    rc = (int)m.idx;
  if (rc < 0 && stream)
    pack_error(q ? q->id : "", y->msg, p);
  if (q)
    inference__model_infer_request__free_unpacked(q, NULL);
  return rc;
}

/* ok false: the worker is being freed, after its loop (and the timer) went. */
static void on_computed(void *ctx, bool ok, uint64_t queue_us, uint64_t compute_us)
{
  struct pending *p = ctx;
  (void)queue_us;
  (void)compute_us;
  if (ok && p->timer)
    gs_net_loop_timer_del(p->g->loop, p->timer);
  if (ok)
    gs_h2_call_reply(p->call, ST_OK, p->resp, p->len, NULL);
  else
    gs_h2_call_reply(p->call, ST_UNAVAILABLE, NULL, 0, "the worker is stopping");
  free(p->resp);
  free(p);
}

static int64_t on_deadline(struct gs_net_loop *loop, uint64_t id, void *data)
{
  struct pending *p = data;
  (void)loop;
  (void)id;
  gs__worker_cancel(p->g->w, p->job);
  gs_h2_call_reply(p->call, ST_DEADLINE_EXCEEDED, NULL, 0, "Deadline Exceeded: the call's "
                   "grpc-timeout passed before its modelled inference ended");
  free(p->resp);
  free(p);
  return GS_NET_TIMER_DONE;
}

static void model_infer(struct gs_grpc_server *g, struct gs_h2_call *call,
                        const struct gs_h2_request *req)
{
  struct pending *p = calloc(1, sizeof(*p));
  struct why y;
  int idx = -1;
  if (!p) {
    reply_error(call, ST_RESOURCE_EXHAUSTED, "out of memory");
    return;
  }
  p->g = g;
  p->call = call;
  if ((idx = prepare(g, req->msg, req->msg_len, false, p, &y)) < 0) {
    reply_error(call, y.status, "%s", y.msg);
  } else if (req->deadline_us && req->deadline_us <= gs_net_loop_now_us()) {
    gs__worker_failed(g->w, (unsigned)idx);
    reply_error(call, ST_DEADLINE_EXCEEDED, "Deadline Exceeded: the call's grpc-timeout passed "
                "before it was queued");
  } else if ((req->deadline_us && !(p->timer = gs_net_loop_timer_add(
                  g->loop, req->deadline_us - gs_net_loop_now_us(), on_deadline, p))) ||
             gs__worker_enqueue(g->w, (unsigned)idx, on_computed, p, &p->job) != 0) {
    if (p->timer)
      gs_net_loop_timer_del(g->loop, p->timer);
    gs__worker_failed(g->w, (unsigned)idx);
    reply_error(call, ST_RESOURCE_EXHAUSTED, "out of memory");
  } else {
    return; /* answered through on_computed (at once for an instant worker) */
  }
  free(p->resp);
  free(p);
}

/* ---- ModelStreamInfer ---- */

/* Holds the client's input back while too much of it waits here. */
static void stream_pace(struct stream *st)
{
  bool hold = st->waiting >= STREAM_AHEAD || st->unread >= STREAM_OUT_MAX;
  if (hold != st->holding) {
    st->holding = hold;
    gs_h2_call_hold_input(st->call, hold);
  }
}

static void on_pace(struct gs_net_defer *d)
{
  stream_pace(GS_CONTAINER_OF(d, struct stream, pace));
}

/* The client's window let n answer bytes go (from within the server's
 * sending: the call is left alone until the turn's end). */
static void stream_sent(void *user, size_t n)
{
  struct stream *st = user;
  st->unread -= n < st->unread ? n : st->unread;
  if (st->holding)
    gs_net_loop_defer(st->g->loop, &st->pace);
}

/* Sends the answers that are ready, in order; once the client half-closed
 * and none is left, the call ends (with the status its input broke with). */
static void stream_flush(struct stream *st)
{
  while (st->head && st->head->ready) {
    struct pending *p = st->head;
    st->head = p->next;
    if (!st->head)
      st->tail = NULL;
    st->waiting--;
    if (p->resp && gs_h2_call_send(st->call, p->resp, p->len) == 0) /* a client gone: dropped */
      st->unread += 5 + p->len;
    else if (!p->resp)
      stream_fail(st, ST_RESOURCE_EXHAUSTED, "out of memory (answering a request)");
    free(p->resp);
    free(p);
  }
  if (st->ended && !st->head) {
    if (st->timer)
      gs_net_loop_timer_del(st->g->loop, st->timer);
    gs_net_loop_undefer(st->g->loop, &st->pace);
    gs_h2_call_on_sent(st->call, NULL); /* what is still queued goes out after st */
    gs_h2_call_reply(st->call, st->status, NULL, 0, st->why);
    free(st);
    return;
  }
  stream_pace(st);
}

static void on_stream_computed(void *ctx, bool ok, uint64_t queue_us, uint64_t compute_us)
{
  struct pending *p = ctx;
  (void)queue_us;
  (void)compute_us;
  p->job = NULL;
  p->ready = true;
  if (!ok) /* the loop, and the stream's timer with it, went first */
    p->s->timer = 0, pack_error("", "the worker is stopping", p);
  stream_flush(p->s);
}

/* The client is gone, or the call's deadline passed: what its requests
 * hold on the slice is let go, and the call ends with status. */
static void stream_drop(struct stream *st, int status, const char *why)
{
  if (st->timer)
    gs_net_loop_timer_del(st->g->loop, st->timer);
  while (st->head) {
    struct pending *p = st->head;
    st->head = p->next;
    if (p->job)
      gs__worker_cancel(st->g->w, p->job);
    free(p->resp);
    free(p);
  }
  gs_net_loop_undefer(st->g->loop, &st->pace);
  gs_h2_call_on_sent(st->call, NULL);
  gs_h2_call_reply(st->call, status, NULL, 0, why);
  free(st);
}

/* gRPC's deadline is the call's: at it the whole stream ends, answered
 * requests or not. */
static int64_t on_stream_deadline(struct gs_net_loop *loop, uint64_t id, void *data)
{
  struct stream *st = data;
  (void)loop;
  (void)id;
  st->timer = 0;
  stream_drop(st, ST_DEADLINE_EXCEEDED, "Deadline Exceeded: the stream's grpc-timeout passed");
  return GS_NET_TIMER_DONE;
}

static void model_stream(struct gs_grpc_server *g, struct gs_h2_call *call,
                         const struct gs_h2_request *req)
{
  struct stream *st = req->user;
  struct pending *p;
  struct why y;
  int idx;
  if (req->end && req->gone) {
    stream_drop(st, ST_UNAVAILABLE, "the client went away");
    return;
  }
  if (req->end) {
    if (req->status)
      stream_fail(st, req->status, req->why ? req->why : "");
    st->ended = true;
    stream_flush(st);
    return;
  }
  if (!st) { /* the call opened */
    if (!(st = calloc(1, sizeof(*st)))) {
      gs_h2_call_reply(call, ST_RESOURCE_EXHAUSTED, NULL, 0, "out of memory (a new stream)");
      return;
    }
    st->g = g, st->call = call, gs_h2_call_bind(call, st);
    st->pace.fn = on_pace;
    gs_h2_call_on_sent(call, stream_sent);
    if (req->deadline_us) {
      uint64_t now = gs_net_loop_now_us();
      st->timer = gs_net_loop_timer_add(g->loop, req->deadline_us > now ? req->deadline_us - now
                                        : 0, on_stream_deadline, st);
    }
  }
  if (!req->msg || st->failed)
    return; /* dropped: the stream's end says why */
  if (!(p = calloc(1, sizeof(*p)))) {
    stream_fail(st, ST_RESOURCE_EXHAUSTED, "out of memory (queueing a request)");
    return;
  }
  p->g = g;
  p->s = st;
  st->waiting++;
  if (st->tail)
    st->tail->next = p;
  else
    st->head = p;
  st->tail = p;
  if ((idx = prepare(g, req->msg, req->msg_len, true, p, &y)) < 0 ||
      gs__worker_enqueue(g->w, (unsigned)idx, on_stream_computed, p, &p->job) != 0) {
    if (idx >= 0)
      pack_error("", "out of memory", p);
    p->ready = true;
    stream_flush(st);
    return;
  }
  stream_pace(st);
}

/* ---- dispatch ---- */

static bool is_method(const char *path, size_t len, const char *method)
{
  size_t n = strlen(SERVICE), m = strlen(method);
  return len == n + m && memcmp(path, SERVICE, n) == 0 && memcmp(path + n, method, m) == 0;
}

static bool is(const struct gs_h2_request *req, const char *method)
{
  return is_method(req->path, req->path_len, method);
}

/* The methods served: an unknown one is answered at its headers, a
 * streaming one message by message. */
static enum gs_h2_kind kind(void *ctx, const char *path, size_t len)
{
  static const char *const unary[] = {"ModelInfer", "ServerLive", "ServerReady", "ModelReady",
                                      "ServerMetadata", "ModelMetadata"};
  (void)ctx;
  if (is_method(path, len, "ModelStreamInfer"))
    return GS_H2_STREAM;
  for (size_t i = 0; i < GS_NITEMS(unary); i++)
    if (is_method(path, len, unary[i]))
      return GS_H2_UNARY;
  return GS_H2_UNKNOWN;
}

static void handle(void *ctx, struct gs_h2_call *call, const struct gs_h2_request *req)
{
  struct gs_grpc_server *g = ctx;
  if (is(req, "ModelInfer"))
    model_infer(g, call, req);
  else if (is(req, "ModelStreamInfer"))
    model_stream(g, call, req);
  else if (is(req, "ServerLive"))
    server_live(call);
  else if (is(req, "ServerReady"))
    server_ready(g, call);
  else if (is(req, "ModelReady"))
    model_ready(g, call, req);
  else if (is(req, "ServerMetadata"))
    server_metadata(call);
  else if (is(req, "ModelMetadata"))
    model_metadata(g, call, req);
  else
    reply_error(call, ST_UNIMPLEMENTED, "unknown method %.*s (the worker serves ServerLive, "
                "ServerReady, ModelReady, ServerMetadata, ModelMetadata, ModelInfer, "
                "ModelStreamInfer)", (int)(req->path_len > 200 ? 200 : req->path_len), req->path);
}

int gs__grpc_worker_new(struct gs_err *err, struct gs_net_loop *loop, struct gs_worker *w, int fd,
                        struct gs_grpc_server **out)
{
  struct gs_grpc_server *g = calloc(1, sizeof(*g));
  int rc;
  *out = NULL;
  if (!g)
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory creating the gRPC server");
  g->w = w;
  g->loop = loop;
  if ((rc = gs_h2_server_new(err, loop, NULL, handle, g, &g->h2)) == 0)
    gs_h2_server_kinds(g->h2, kind);
  if (rc != 0 || (fd >= 0 && (rc = gs_h2_server_listen_fd(err, g->h2, fd)) != 0)) {
    gs__grpc_worker_free(g);
    return rc;
  }
  *out = g;
  return 0;
}

void gs__grpc_worker_free(struct gs_grpc_server *g)
{
  if (!g)
    return;
  gs_h2_server_free(g->h2);
  free(g);
}

struct gs_h2_server *gs__grpc_worker_h2(struct gs_grpc_server *g)
{
  return g->h2;
}
