/* SPDX-License-Identifier: Apache-2.0 */
/* grpc.c: `gpuslice bench -i grpc`: KServe v2 ModelInfer over h2c, on net's
 * HTTP/2 client. Each of run.c's threads holds ceil(slots / streams) client
 * connections on its own loop, each keeping up to --streams calls
 * outstanding (closed loop: a finished call is replaced at once on the same
 * connection). A call counts as a success only with grpc-status 0; a
 * connection whose oldest call passes --request-timeout, or that fails,
 * fails its calls and is reopened. */
#include "bench/internal.h"
#include "net/net.h"

#include "inference.pb-c.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RETRY_NS 10000000u /* a failed connection is reopened this long after */
#define SWEEP_US 20000

struct gsess;

struct gcall {
  struct gsess *s;
  bool busy;
  int32_t sid;
  int http_status, grpc_status; /* -1: not seen */
  uint64_t intended_ns, start_ns, sent_ns, first_ns;
};

struct gsess {
  struct gs__bench_grpc *g;
  struct gs_h2_client *h2; /* NULL while down */
  uint64_t down_ns;        /* closed since; 0 while open */
  unsigned ncalls;
  struct gcall *calls;
};

struct gs__bench_grpc {
  struct worker *w;
  struct gs_net_loop *loop;
  const struct gs_bench_config *cfg;
  const struct sockaddr_storage *addr;
  unsigned addrlen;
  char authority[300];
  size_t next_req;
  unsigned nsess;
  struct gsess *sess;
};

static uint64_t now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int gs_bench_grpc_request(struct gs_err *err, const struct gs_bench_model *m,
                          const struct gs_bench_sample *s, char **out, size_t *len)
{
  Inference__ModelInferRequest q = INFERENCE__MODEL_INFER_REQUEST__INIT;
  Inference__ModelInferRequest__InferInputTensor t[GS_BENCH_MAX_INPUTS], *tp[GS_BENCH_MAX_INPUTS];
  ProtobufCBinaryData raw[GS_BENCH_MAX_INPUTS];
  int64_t shapes[GS_BENCH_MAX_INPUTS][GS_BENCH_MAX_DIMS];
  size_t n;
  q.model_name = (char *)m->name;
  q.model_version = (char *)m->version;
  for (unsigned i = 0; i < m->ninputs; i++) {
    const struct gs_bench_tensor *x = &m->inputs[i];
    t[i] = (Inference__ModelInferRequest__InferInputTensor)
        INFERENCE__MODEL_INFER_REQUEST__INFER_INPUT_TENSOR__INIT;
    t[i].name = (char *)x->name;
    t[i].datatype = (char *)x->datatype;
    memcpy(shapes[i], x->shape, sizeof(shapes[i]));
    t[i].n_shape = x->ndims, t[i].shape = shapes[i];
    tp[i] = &t[i];
    raw[i].data = s->data[i], raw[i].len = s->len[i];
  }
  q.n_inputs = q.n_raw_input_contents = m->ninputs;
  q.inputs = tp, q.raw_input_contents = raw;
  n = inference__model_infer_request__get_packed_size(&q);
  if (n > 0xffffffffu || !(*out = malloc(n + 5)))
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory for a %zu-byte gRPC request", n);
  (*out)[0] = 0; /* not compressed; then the length, big-endian */
  for (int i = 0; i < 4; i++)
    (*out)[1 + i] = (char)(n >> (24 - 8 * i));
  inference__model_infer_request__pack(&q, (uint8_t *)*out + 5);
  *len = n + 5;
  return 0;
}

static void call_start(struct gcall *c);

/* Counts a call that ended: a success only with HTTP 200 and grpc-status 0. */
static void call_end(struct gcall *c, int error)
{
  struct gs__bench_grpc *g = c->s->g;
  uint64_t t = now_ns();
  c->busy = false;
  if (error < 0 && c->http_status < 0)
    error = GS_BENCH_ERR_CLOSED;
  else if (error < 0 && c->http_status != 200)
    error = c->http_status >= 400 && c->http_status < 500 ? GS_BENCH_ERR_HTTP_4XX
                                                           : GS_BENCH_ERR_HTTP_5XX;
  else if (error < 0 && c->grpc_status < 0)
    error = GS_BENCH_ERR_CLOSED;
  else if (error < 0 && c->grpc_status > 0)
    error = c->grpc_status == 4    ? GS_BENCH_ERR_GRPC_DEADLINE
            : c->grpc_status == 8  ? GS_BENCH_ERR_GRPC_EXHAUSTED
            : c->grpc_status == 14 ? GS_BENCH_ERR_GRPC_UNAVAILABLE
                                   : GS_BENCH_ERR_GRPC_OTHER;
  if (error >= 0)
    gs__bench_count_error(g->w, (enum gs_bench_error)error);
  else
    gs__bench_count_ok(g->w, c->intended_ns, c->start_ns, c->sent_ns, c->first_ns, t);
}

static void on_header(void *call, const char *name, size_t nl, const char *value, size_t vl)
{
  struct gcall *c = call;
  int v = 0;
  if (!c->first_ns)
    c->first_ns = now_ns();
  if (vl > 9)
    return;
  for (size_t i = 0; i < vl && value[i] >= '0' && value[i] <= '9'; i++)
    v = v * 10 + (value[i] - '0');
  if (nl == 7 && memcmp(name, ":status", 7) == 0)
    c->http_status = v;
  else if (nl == 11 && memcmp(name, "grpc-status", 11) == 0)
    c->grpc_status = v;
}

static bool on_data(void *call, const uint8_t *data, size_t len)
{
  (void)call;
  (void)data;
  (void)len;
  return true; /* the answer's message is counted, not kept */
}

static void on_sent(void *call)
{
  ((struct gcall *)call)->sent_ns = now_ns();
}

static void on_closed(void *call, uint32_t code)
{
  struct gcall *c = call;
  if (!c->busy)
    return;
  if (code == GS_H2_CONN_REFUSED || code == GS_H2_CONN_MALFORMED || code == GS_H2_CONN_LOST) {
    call_end(c, code == GS_H2_CONN_REFUSED     ? GS_BENCH_ERR_CONNECT
                : code == GS_H2_CONN_MALFORMED ? GS_BENCH_ERR_MALFORMED
                                               : GS_BENCH_ERR_CLOSED);
    return; /* the sweep reopens the connection */
  }
  call_end(c, code ? GS_BENCH_ERR_CLOSED : -1);
  call_start(c); /* closed loop: the next call on the same connection */
}

/* The connection ended (its calls counted): reopened by the sweep. */
static void on_dead(void *ctx, const char *why)
{
  struct gsess *s = ctx;
  (void)why;
  gs_h2_client_free(s->h2);
  s->h2 = NULL;
  s->down_ns = now_ns();
}

static const struct gs_h2_client_ops ops = {
    .header = on_header, .data = on_data, .closed = on_closed, .sent = on_sent, .dead = on_dead};

#define HDR(n, v) {(n), (v), sizeof(n) - 1, strlen(v)}

static void call_start(struct gcall *c)
{
  struct gs__bench_grpc *g = c->s->g;
  const struct gs_bench_config *cfg = g->cfg;
  size_t k = cfg->nrequests ? g->next_req++ % cfg->nrequests : 0;
  struct gs_http_header hdr[] = {HDR(":method", "POST"), HDR(":scheme", "http"),
                                 HDR(":path", "/inference.GRPCInferenceService/ModelInfer"),
                                 HDR(":authority", g->authority),
                                 HDR("content-type", "application/grpc"), HDR("te", "trailers")};
  const char *req = cfg->nrequests ? cfg->requests[k] : cfg->request;
  size_t len = cfg->nrequests ? cfg->request_lens[k] : cfg->request_len;
  c->http_status = c->grpc_status = -1;
  c->intended_ns = c->start_ns = now_ns();
  c->sent_ns = c->first_ns = 0;
  c->busy = true;
  c->sid = gs_h2_client_call(c->s->h2, hdr, GS_NITEMS(hdr), req, len, c);
  if (c->sid < 0)
    c->busy = false, gs__bench_count_error(g->w, GS_BENCH_ERR_CLOSED);
}

/* Fails the calls under way with error, each counted once, and closes. */
static void sess_close(struct gsess *s, int error)
{
  for (unsigned i = 0; i < s->ncalls; i++)
    if (s->calls[i].busy)
      s->calls[i].busy = false, gs__bench_count_error(s->g->w, (enum gs_bench_error)error);
  gs_h2_client_free(s->h2);
  s->h2 = NULL;
  s->down_ns = now_ns();
}

/* A connection, and its calls at once (sent once it connects: the connect's
 * time counts against each call's timeout). */
static void sess_open(struct gsess *s)
{
  struct gs__bench_grpc *g = s->g;
  /* a 16 MiB stream window: answers never wait for a WINDOW_UPDATE */
  struct gs_h2_client_config cfg = {.stream_window = 1u << 24, .conn_window = 1u << 26};
  s->down_ns = 0;
  if (gs_h2_client_new(NULL, g->loop, (const struct sockaddr *)g->addr, g->addrlen, &cfg, &ops, s,
                       &s->h2) != 0) {
    for (unsigned k = 0; k < s->ncalls; k++)
      gs__bench_count_error(g->w, GS_BENCH_ERR_CONNECT);
    s->down_ns = now_ns();
    return;
  }
  for (unsigned k = 0; k < s->ncalls && s->h2; k++)
    call_start(&s->calls[k]);
}

static int64_t on_sweep(struct gs_net_loop *loop, uint64_t id, void *data)
{
  struct gs__bench_grpc *g = data;
  uint64_t now = now_ns(), limit = (uint64_t)g->cfg->request_timeout_ms * 1000000u;
  (void)loop;
  (void)id;
  for (unsigned i = 0; i < g->nsess; i++) {
    struct gsess *s = &g->sess[i];
    bool late = false;
    for (unsigned k = 0; k < s->ncalls; k++)
      late = late || (s->calls[k].busy && now - s->calls[k].start_ns > limit);
    if (s->h2 && late)
      sess_close(s, GS_BENCH_ERR_TIMEOUT);
    else if (!s->h2 && now - s->down_ns > RETRY_NS)
      sess_open(s);
  }
  return SWEEP_US;
}

int gs__bench_grpc_start(struct gs_err *err, struct worker *w, struct gs_net_loop *loop,
                         const struct gs_bench_config *cfg, const struct sockaddr_storage *addr,
                         unsigned addrlen, unsigned slots, struct gs__bench_grpc **out)
{
  struct gs__bench_grpc *g = calloc(1, sizeof(*g));
  unsigned per = cfg->streams ? cfg->streams : 32;
  *out = g;
  if (!g)
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory");
  *g = (struct gs__bench_grpc){.w = w, .loop = loop, .cfg = cfg, .addr = addr, .addrlen = addrlen,
                               .nsess = (slots + per - 1) / per};
  snprintf(g->authority, sizeof(g->authority), "%s:%s", cfg->url.host, cfg->url.port);
  if (!(g->sess = calloc(g->nsess ? g->nsess : 1, sizeof(*g->sess))))
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory");
  for (unsigned i = 0; i < g->nsess; i++) {
    struct gsess *s = &g->sess[i];
    s->g = g;
    s->ncalls = slots / g->nsess + (i < slots % g->nsess);
    if (!(s->calls = calloc(s->ncalls, sizeof(*s->calls))))
      return gs_err_set(err, GS_E_NO_MEMORY, "out of memory");
    for (unsigned k = 0; k < s->ncalls; k++)
      s->calls[k].s = s;
    sess_open(s);
  }
  if (!gs_net_loop_timer_add(loop, SWEEP_US, on_sweep, g))
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory");
  return 0;
}

void gs__bench_grpc_free(struct gs__bench_grpc *g)
{
  if (!g)
    return;
  for (unsigned i = 0; g->sess && i < g->nsess; i++) {
    gs_h2_client_free(g->sess[i].h2);
    free(g->sess[i].calls);
  }
  free(g->sess);
  free(g);
}
