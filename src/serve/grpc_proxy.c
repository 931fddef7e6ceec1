/* SPDX-License-Identifier: Apache-2.0 */
/* grpc_proxy.c: the load balancer's gRPC side (`gpuslice serve
 * --grpc-listen`): h2c clients come in through h2.c, and each call (not each
 * connection) goes to a worker the HTTP side's pool picks (proxy.c: same
 * policy, in-flight limits, ejection, counters and histograms), over one
 * multiplexed HTTP/2 connection per worker to its gRPC port. A call is
 * retried once on another worker when its stream or connection fails before
 * any response frame; the client gets UNAVAILABLE (no worker, or a worker
 * lost mid-answer), RESOURCE_EXHAUSTED (every worker at its limit) or
 * DEADLINE_EXCEEDED (its grpc-timeout, or the worker timeout). Messages are
 * buffered whole both ways: a request in the client call's own buffer
 * (net's HTTP/2 server, under the proxy's memory budget), sent on from
 * there by net's HTTP/2 client, one connection per worker. */
#include "serve/grpc_internal.h"

#include <netinet/in.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define H2_REFUSED_STREAM 7 /* RFC 9113 §7: the worker never processed the call */

/* One client call from its arrival to its answer. */
struct gcall {
  struct gs__grpc_upcall cb; /* first: what its worker connection tells it */
  struct gs_proxy_grpc *g;
  struct gcall *prev, *next;   /* every call under way */
  struct gs_h2_call *client;
  char path[256];
  size_t path_len;
  const uint8_t *req; /* the framed request message, as sent upstream (the client
                       * call's: it stays until the call is answered) */
  size_t req_len;
  uint64_t start_us, deadline_us, timer;
  bool worker_deadline; /* the deadline is the worker timeout, not the client's */
  size_t w;
  unsigned trial; /* the worker's trial this call is, 0 if none (gs__proxy_acquire) */
  bool acquired, retried, responded;
  struct upsess *up;
  int32_t sid;
  uint8_t *resp;
  size_t resp_len, resp_cap;
  bool have_status, too_big;
  int status;
  char message[256];
};

static void dispatch(struct gcall *c, size_t avoid);

/* ---- calls ---- */

/* Takes c off its worker's connection (its stream reset if still open). */
static void up_unlink(struct gcall *c)
{
  if (c->up && c->sid > 0)
    gs_h2_client_cancel(c->up->h2, c->sid);
  c->up = NULL;
  c->sid = 0;
}

static void release(struct gcall *c, enum gs__proxy_outcome o)
{
  if (c->acquired)
    gs__proxy_release(c->g->p, c->w, o, gs_net_loop_now_us() - c->start_us, c->trial);
  c->acquired = false;
}

/* Answers the client and frees the call. */
static void finish(struct gcall *c, int status, const void *msg, size_t len, const char *fmt, ...)
    GS_PRINTF(5, 6);
static void finish(struct gcall *c, int status, const void *msg, size_t len, const char *fmt, ...)
{
  struct gs_proxy_grpc *g = c->g;
  char text[300] = "";
  va_list ap;
  if (fmt) {
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
  }
  if (status != ST_OK && !c->have_status)
    gs__proxy_error(g->p);
  up_unlink(c);
  release(c, GS__PROXY_ABANDONED);
  if (c->timer)
    gs_net_loop_timer_del(g->loop, c->timer);
  if (c->prev)
    c->prev->next = c->next;
  else
    g->calls = c->next;
  if (c->next)
    c->next->prev = c->prev;
  gs_h2_call_reply(c->client, status, msg, len, text);
  free(c->resp);
  free(c);
}

/* The worker's answer is whole: passed on as it came. */
static void complete(struct gcall *c)
{
  uint32_t n;
  release(c, GS__PROXY_ANSWERED);
  if (c->status != ST_OK) {
    finish(c, c->status, NULL, 0, "%s", c->message);
    return;
  }
  n = c->resp_len >= 5 ? (uint32_t)c->resp[1] << 24 | (uint32_t)c->resp[2] << 16 |
                             (uint32_t)c->resp[3] << 8 | c->resp[4]
                       : 0;
  if (c->too_big || c->resp_len < 5 || c->resp[0] != 0 || n != c->resp_len - 5)
    finish(c, ST_INTERNAL, NULL, 0, "worker %zu answered OK without exactly one uncompressed "
           "message (or one over %u bytes)", c->w, MAX_RESPONSE);
  else
    finish(c, ST_OK, c->resp + 5, n, NULL);
}

/* The call's stream or connection ended without a status: one retry on
 * another worker if no response frame came, else UNAVAILABLE. */
static void lost(struct gcall *c, const char *why)
{
  size_t w = c->w;
  up_unlink(c);
  release(c, GS__PROXY_WORKER_FAILED);
  if (!c->responded && !c->retried) {
    c->retried = true;
    dispatch(c, w);
    return;
  }
  finish(c, ST_UNAVAILABLE, NULL, 0, "worker %zu %s%s", w, why,
         c->responded ? " mid-answer" : ", and so did the retry");
}

static int64_t on_deadline(struct gs_net_loop *loop, uint64_t id, void *data)
{
  struct gcall *c = data;
  (void)loop;
  (void)id;
  c->timer = 0;
  up_unlink(c); /* its stream is reset */
  if (c->acquired)
    release(c, c->worker_deadline ? GS__PROXY_WORKER_FAILED : GS__PROXY_ABANDONED);
  finish(c, ST_DEADLINE_EXCEEDED, NULL, 0, "%s", c->worker_deadline
             ? "the worker did not answer within the worker timeout"
             : "the call's grpc-timeout passed before the worker answered");
  return GS_NET_TIMER_DONE;
}

/* ---- upstream connections (net's HTTP/2 client) ---- */

void gs__grpc_status_header(const char *name, size_t nl, const char *value, size_t vl,
                            bool *have, int *status, char *msg, size_t msz)
{
  if (nl == 11 && memcmp(name, "grpc-status", 11) == 0) {
    *have = true;
    *status = 0;
    for (size_t i = 0; i < vl && i < 4 && value[i] >= '0' && value[i] <= '9'; i++)
      *status = *status * 10 + (value[i] - '0');
  } else if (nl == 12 && memcmp(name, "grpc-message", 12) == 0) {
    /* percent-encoded on the wire: kept decoded, h2.c encodes it again */
    size_t o = 0;
    for (size_t i = 0; i < vl && o + 1 < msz; i++) {
      unsigned x;
      if (value[i] == '%' && i + 2 < vl && sscanf(value + i + 1, "%2x", &x) == 1)
        msg[o++] = (char)x, i += 2;
      else
        msg[o++] = value[i];
    }
    msg[o] = 0;
  }
}

static void up_header(void *call, const char *name, size_t nl, const char *value, size_t vl)
{
  struct gcall *c = call;
  c->responded = true;
  gs__grpc_status_header(name, nl, value, vl, &c->have_status, &c->status, c->message,
                         sizeof(c->message));
}

static bool up_data(void *call, const uint8_t *data, size_t len)
{
  struct gcall *c = call;
  c->responded = true;
  if (c->too_big || c->resp_len + len > MAX_RESPONSE + 5) {
    c->too_big = true;
    return true;
  }
  if (c->resp_len + len > c->resp_cap) {
    size_t cap = c->resp_cap ? c->resp_cap : 4096;
    uint8_t *p;
    while (cap < c->resp_len + len)
      cap *= 2;
    if (!(p = realloc(c->resp, cap)))
      return false; /* reset: the call is lost */
    c->resp = p;
    c->resp_cap = cap;
  }
  memcpy(c->resp + c->resp_len, data, len);
  c->resp_len += len;
  return true;
}

static void up_closed(void *call, uint32_t code)
{
  struct gcall *c = call;
  c->up = NULL;
  c->sid = 0;
  if (c->have_status && code == 0)
    complete(c);
  else
    lost(c, code == H2_REFUSED_STREAM  ? "refused the stream"
            : code == GS_H2_CONN_REFUSED ? "refused the connection"
            : code == GS_H2_CONN_MALFORMED ? "sent a malformed HTTP/2 frame"
            : code == GS_H2_CONN_LOST ? "lost its connection"
                                      : "reset the stream");
}

/* The connection ended (its calls were lost first): the next call opens another. */
static void up_dead(void *ctx, const char *why)
{
  struct upsess *u = ctx;
  struct gs_proxy_grpc *g = u->g;
  (void)why;
  if (u->w < g->nup && g->up[u->w] == u)
    g->up[u->w] = NULL;
  if (u->w == SIZE_MAX) {
    if (u->prev)
      u->prev->next = u->next;
    else
      g->retired = u->next;
    if (u->next)
      u->next->prev = u->prev;
  }
  gs_h2_client_free(u->h2);
  free(u);
}

/* The connection's calls are unary (struct gcall) or streamed (grpc_stream.c):
 * each hears its own through its first member. */
static void on_header(void *call, const char *name, size_t nl, const char *value, size_t vl)
{
  ((struct gs__grpc_upcall *)call)->header(call, name, nl, value, vl);
}

static bool on_data(void *call, const uint8_t *data, size_t len)
{
  return ((struct gs__grpc_upcall *)call)->data(call, data, len);
}

static void on_closed(void *call, uint32_t code)
{
  ((struct gs__grpc_upcall *)call)->closed(call, code);
}

/* Only streamed calls have requests sent in pieces. */
static void on_drained(void *call, size_t unsent)
{
  ((struct gs__grpc_upcall *)call)->drained(call, unsent);
}

static const struct gs_h2_client_ops up_ops = {.header = on_header, .data = on_data,
                                               .closed = on_closed, .drained = on_drained,
                                               .dead = up_dead};

static struct upsess *up_new(struct gs_proxy_grpc *g, size_t w, unsigned port)
{
  struct upsess *u = calloc(1, sizeof(*u));
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                           .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  if (!u)
    return NULL;
  u->g = g;
  u->w = w;
  u->port = port;
  if (gs_h2_client_new(NULL, g->loop, (struct sockaddr *)&sa, sizeof(sa), NULL, &up_ops, u,
                       &u->h2) != 0) {
    free(u);
    return NULL;
  }
  return u;
}

struct upsess *gs__grpc_up_get(struct gs_proxy_grpc *g, size_t w, unsigned port)
{
  if (w >= g->nup) {
    size_t n = w + 8;
    struct upsess **more = realloc(g->up, n * sizeof(*more));
    if (!more)
      return NULL;
    memset(more + g->nup, 0, (n - g->nup) * sizeof(*more));
    g->up = more;
    g->nup = n;
  }
  if (g->up[w] && (g->up[w]->port != port || !gs_h2_client_usable(g->up[w]->h2))) {
    struct upsess *old = g->up[w];
    g->up[w] = NULL;
    old->w = SIZE_MAX; /* no longer the worker's connection */
    old->next = g->retired;
    if (g->retired)
      g->retired->prev = old;
    g->retired = old;
    gs_h2_client_goaway(old->h2); /* its calls finish, then up_dead frees it */
  }
  if (!g->up[w])
    g->up[w] = up_new(g, w, port);
  return g->up[w];
}

/* ---- dispatch ---- */

#define NV(n, v, vl) {(n), (v), sizeof(n) - 1, (vl)}

static void dispatch(struct gcall *c, size_t avoid)
{
  struct gs_proxy_grpc *g = c->g;
  struct gs_super_info si;
  char timeout[24];
  uint64_t now = gs_net_loop_now_us();
  int rc = gs__proxy_acquire(g->p, avoid, &c->w, &c->trial);
  struct upsess *u;
  if (rc != 0) {
    if (rc == GS_E_IN_USE)
      finish(c, ST_RESOURCE_EXHAUSTED, NULL, 0, "every ready worker is at its limit of %u calls "
             "in flight", gs__proxy_config(g->p)->max_inflight);
    else
      finish(c, ST_UNAVAILABLE, NULL, 0, "no worker is ready (they may be starting, restarting "
             "or ejected)");
    return;
  }
  c->acquired = true;
  if (!g->super || gs_super_info(g->super, c->w, &si) != 0 || !si.grpc_port ||
      !(u = gs__grpc_up_get(g, c->w, si.grpc_port))) {
    lost(c, "has no gRPC port to connect to");
    return;
  }
  snprintf(timeout, sizeof(timeout), "%lluu",
           (unsigned long long)(c->deadline_us > now ? c->deadline_us - now : 1));
  struct gs_http_header hdr[] = {NV(":method", "POST", 4), NV(":scheme", "http", 4),
                                 NV(":path", c->path, c->path_len), NV(":authority", "gpuslice", 8),
                                 NV("content-type", "application/grpc", 16),
                                 NV("te", "trailers", 8), NV("grpc-timeout", timeout, strlen(timeout))};
  c->responded = c->have_status = c->too_big = false;
  c->resp_len = 0;
  c->message[0] = 0;
  c->sid = gs_h2_client_call(u->h2, hdr, GS_NITEMS(hdr), c->req, c->req_len, c);
  if (c->sid < 0) {
    c->sid = 0;
    lost(c, "took no new stream");
    return;
  }
  c->up = u;
}

/* The methods of Triton's inference.GRPCInferenceService (a fixed list) and
 * the health check. Its unary inference methods are balanced call by call;
 * ModelStreamInfer, and the service's other methods (repository, shared
 * memory, trace, log: a worker may serve them or not), are streams pinned
 * to one worker, opened there as soon as their headers arrive. Any other
 * path is no method of the service: UNIMPLEMENTED at once, from here,
 * whatever the workers' state. */
static enum gs_h2_kind kind(void *ctx, const char *path, size_t len)
{
  static const char svc[] = "/inference.GRPCInferenceService/";
  static const char *const unary[] = {"ModelInfer", "ServerLive", "ServerReady", "ModelReady",
                                      "ServerMetadata", "ModelMetadata", "ModelConfig",
                                      "ModelStatistics"};
  static const char *const passed[] = {
      "ModelStreamInfer", "RepositoryIndex", "RepositoryModelLoad", "RepositoryModelUnload",
      "SystemSharedMemoryStatus", "SystemSharedMemoryRegister", "SystemSharedMemoryUnregister",
      "CudaSharedMemoryStatus", "CudaSharedMemoryRegister", "CudaSharedMemoryUnregister",
      "TraceSetting", "LogSettings"};
  static const char health[] = "/grpc.health.v1.Health/Check";
  const char *m = path + (sizeof(svc) - 1);
  size_t ml = len - (sizeof(svc) - 1);
  (void)ctx;
  if (len == sizeof(health) - 1 && memcmp(path, health, len) == 0)
    return GS_H2_UNARY;
  if (len <= sizeof(svc) - 1 || memcmp(path, svc, sizeof(svc) - 1) != 0)
    return GS_H2_UNKNOWN;
  for (size_t i = 0; i < GS_NITEMS(unary); i++)
    if (ml == strlen(unary[i]) && memcmp(m, unary[i], ml) == 0)
      return GS_H2_UNARY;
  for (size_t i = 0; i < GS_NITEMS(passed); i++)
    if (ml == strlen(passed[i]) && memcmp(m, passed[i], ml) == 0)
      return GS_H2_STREAM;
  return GS_H2_UNKNOWN;
}

static void handle(void *ctx, struct gs_h2_call *client, const struct gs_h2_request *req)
{
  struct gs_proxy_grpc *g = ctx;
  struct gcall *c;
  enum gs_h2_kind k = kind(g, req->path, req->path_len);
  if (k == GS_H2_UNKNOWN) {
    char why[300];
    snprintf(why, sizeof(why), "%.*s is no method of inference.GRPCInferenceService "
             "(Triton's KServe v2 gRPC API)", (int)(req->path_len > 200 ? 200 : req->path_len),
             req->path);
    gs_h2_call_reply(client, ST_UNIMPLEMENTED, NULL, 0, why);
    return;
  }
  if (k == GS_H2_STREAM) {
    gs__grpc_stream(g, client, req);
    return;
  }
  c = calloc(1, sizeof(*c));
  uint64_t now = gs_net_loop_now_us();
  uint64_t wt = gs__proxy_config(g->p)->worker_timeout_ms * 1000ull;
  if (!c) {
    gs_h2_call_reply(client, ST_RESOURCE_EXHAUSTED, NULL, 0, "out of memory");
    return;
  }
  c->cb = (struct gs__grpc_upcall){up_header, up_data, up_closed, NULL};
  c->g = g;
  c->client = client;
  c->start_us = now;
  memcpy(c->path, req->path, req->path_len);
  c->path_len = req->path_len;
  c->req = req->msg - 5; /* the prefix is in front: sent on as it came, not copied */
  c->req_len = req->msg_len + 5;
  c->worker_deadline = !req->deadline_us || req->deadline_us > now + wt;
  c->deadline_us = c->worker_deadline ? now + wt : req->deadline_us;
  c->next = g->calls;
  if (g->calls)
    g->calls->prev = c;
  g->calls = c;
  c->timer = gs_net_loop_timer_add(g->loop, c->deadline_us - now, on_deadline, c);
  dispatch(c, SIZE_MAX);
}

/* ---- public ---- */

static void count_refusal(void *p)
{
  gs__proxy_error(p);
}

void gs_proxy_grpc_drain(struct gs_proxy_grpc *g)
{
  if (g)
    gs_h2_server_drain(g->h2);
}

size_t gs_proxy_grpc_inflight(const struct gs_proxy_grpc *g)
{
  size_t n = 0;
  for (const struct gcall *c = g ? g->calls : NULL; c; c = c->next)
    n++;
  return n + (g ? g->nstreams : 0);
}

int gs_proxy_grpc_new(struct gs_err *err, struct gs_net_loop *loop, struct gs_proxy *p,
                      const struct gs_super *super, int fd, struct gs_proxy_grpc **out)
{
  struct gs_proxy_grpc *g = calloc(1, sizeof(*g));
  int rc;
  *out = NULL;
  if (!g)
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory creating the gRPC proxy");
  g->loop = loop;
  g->p = p;
  g->super = super;
  /* its own connection limit (--max-conns, counted apart from HTTP's), the
   * HTTP side's timeouts, and one memory budget for both sides' bodies */
  if ((rc = gs_h2_server_new(err, loop, &gs__proxy_config(p)->limits, handle, g, &g->h2)) != 0) {
    gs_proxy_grpc_free(g);
    return rc;
  }
  gs_h2_server_budget(g->h2, gs__proxy_budget(p));
  gs_h2_server_kinds(g->h2, kind);
  gs_h2_server_on_refuse(g->h2, count_refusal, p); /* errors_total counts them too */
  if ((rc = gs_h2_server_listen_fd(err, g->h2, fd)) != 0) {
    gs_proxy_grpc_free(g);
    return rc;
  }
  *out = g;
  return 0;
}

void gs_proxy_grpc_free(struct gs_proxy_grpc *g)
{
  if (!g)
    return;
  gs_h2_server_free(g->h2); /* clients first: calls answered below are dropped */
  gs__grpc_streams_stop(g);
  for (struct gcall *c = g->calls; c; c = c->next) {
    c->retried = c->responded = true; /* no retry while closing */
    c->up = NULL;                     /* its connection goes below, reporting nothing */
  }
  for (size_t w = 0; w < g->nup; w++)
    if (g->up[w]) {
      gs_h2_client_free(g->up[w]->h2);
      free(g->up[w]);
    }
  while (g->retired) {
    struct upsess *u = g->retired;
    g->retired = u->next;
    gs_h2_client_free(u->h2);
    free(u);
  }
  while (g->calls) {
    g->calls->retried = true;
    finish(g->calls, ST_UNAVAILABLE, NULL, 0, "the proxy is stopping");
  }
  free(g->up);
  free(g);
}
