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
 * (h2.c, under the proxy's memory budget), sent on from there. */
#include "serve/internal.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nghttp2/nghttp2.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

enum { ST_OK = 0, ST_DEADLINE_EXCEEDED = 4, ST_RESOURCE_EXHAUSTED = 8, ST_INTERNAL = 13,
       ST_UNAVAILABLE = 14 };

#define UP_STREAM_WINDOW (1 << 20)
#define UP_CONN_WINDOW (16 << 20)
#define MAX_RESPONSE (64u << 20)

struct upsess;

/* One client call from its arrival to its answer. */
struct gcall {
  struct gs_proxy_grpc *g;
  struct gcall *prev, *next;   /* every call under way */
  struct gcall *uprev, *unext; /* the calls on its upstream connection */
  struct gs_h2_call *client;
  char path[256];
  size_t path_len;
  const uint8_t *req; /* the framed request message, as sent upstream (the client
                       * call's: it stays until the call is answered) */
  size_t req_len, req_off;
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

/* One HTTP/2 connection to a worker's gRPC port, shared by its calls. */
struct upsess {
  struct gs_proxy_grpc *g;
  size_t w;
  unsigned port;
  int fd;
  bool connected, busy, dead;
  nghttp2_session *ng;
  struct gcall *calls;
};

struct gs_proxy_grpc {
  struct gs_net_loop *loop;
  struct gs_proxy *p;
  const struct gs_super *super;
  struct gs_h2_server *h2;
  struct upsess **up; /* by worker id */
  size_t nup;
  struct gcall *calls;
};

static void dispatch(struct gcall *c, size_t avoid);
static void up_io(struct gs_net_loop *loop, int fd, void *data, unsigned mask);
static bool up_flush(struct upsess *u);

/* ---- calls ---- */

static void up_unlink(struct gcall *c)
{
  struct upsess *u = c->up;
  if (!u)
    return;
  if (c->uprev)
    c->uprev->unext = c->unext;
  else
    u->calls = c->unext;
  if (c->unext)
    c->unext->uprev = c->uprev;
  c->uprev = c->unext = NULL;
  if (c->sid > 0 && !u->dead)
    nghttp2_session_set_stream_user_data(u->ng, c->sid, NULL);
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
  struct upsess *u = c->up;
  (void)loop;
  (void)id;
  c->timer = 0;
  if (u && c->sid > 0)
    nghttp2_submit_rst_stream(u->ng, NGHTTP2_FLAG_NONE, c->sid, NGHTTP2_CANCEL);
  up_unlink(c);
  if (c->acquired)
    release(c, c->worker_deadline ? GS__PROXY_WORKER_FAILED : GS__PROXY_ABANDONED);
  finish(c, ST_DEADLINE_EXCEEDED, NULL, 0, "%s", c->worker_deadline
             ? "the worker did not answer within the worker timeout"
             : "the call's grpc-timeout passed before the worker answered");
  if (u)
    up_flush(u);
  return GS_NET_TIMER_DONE;
}

/* ---- upstream connections ---- */

/* Tears a connection down; its calls are lost (retried or answered). */
static void up_free(struct upsess *u, const char *why)
{
  struct gs_proxy_grpc *g = u->g;
  if (u->busy) {
    u->dead = true;
    return;
  }
  u->dead = true;
  if (u->w < g->nup && g->up[u->w] == u)
    g->up[u->w] = NULL;
  nghttp2_session_del(u->ng);
  u->ng = NULL;
  if (u->fd >= 0)
    gs_net_loop_close_fd(g->loop, u->fd);
  while (u->calls)
    lost(u->calls, why);
  free(u);
}

static bool up_flush(struct upsess *u)
{
  if (u->busy)
    return true;
  if (u->dead || nghttp2_session_send(u->ng) != 0) {
    up_free(u, "closed the connection");
    return false;
  }
  if (!nghttp2_session_want_read(u->ng) && !nghttp2_session_want_write(u->ng)) {
    up_free(u, "ended the connection (GOAWAY)");
    return false;
  }
  if (u->connected && nghttp2_session_want_write(u->ng))
    gs_net_loop_add(NULL, u->g->loop, u->fd, GS_NET_WRITABLE, up_io, u);
  else if (u->connected)
    gs_net_loop_del(u->g->loop, u->fd, GS_NET_WRITABLE);
  return true;
}

static ssize_t up_send(nghttp2_session *ng, const uint8_t *data, size_t len, int flags, void *user)
{
  struct upsess *u = user;
  ssize_t n;
  (void)ng;
  (void)flags;
  if (!u->connected)
    return NGHTTP2_ERR_WOULDBLOCK;
  n = send(u->fd, data, len, MSG_NOSIGNAL);
  if (n >= 0)
    return n;
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
    return NGHTTP2_ERR_WOULDBLOCK;
  return NGHTTP2_ERR_CALLBACK_FAILURE;
}

/* grpc-message is percent-encoded on the wire: kept decoded, h2.c encodes it again. */
static void decode_message(char *out, size_t sz, const uint8_t *v, size_t n)
{
  size_t o = 0;
  for (size_t i = 0; i < n && o + 1 < sz; i++) {
    unsigned x;
    if (v[i] == '%' && i + 2 < n && sscanf((const char *)v + i + 1, "%2x", &x) == 1)
      out[o++] = (char)x, i += 2;
    else
      out[o++] = (char)v[i];
  }
  out[o] = 0;
}

static int up_header(nghttp2_session *ng, const nghttp2_frame *f, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                     void *user)
{
  struct gcall *c = nghttp2_session_get_stream_user_data(ng, f->hd.stream_id);
  (void)flags;
  (void)user;
  if (!c)
    return 0;
  c->responded = true;
  if (namelen == 11 && memcmp(name, "grpc-status", 11) == 0) {
    c->have_status = true;
    c->status = 0;
    for (size_t i = 0; i < valuelen && i < 4 && value[i] >= '0' && value[i] <= '9'; i++)
      c->status = c->status * 10 + (value[i] - '0');
  } else if (namelen == 12 && memcmp(name, "grpc-message", 12) == 0) {
    decode_message(c->message, sizeof(c->message), value, valuelen);
  }
  return 0;
}

static int up_data(nghttp2_session *ng, uint8_t flags, int32_t id, const uint8_t *data, size_t len,
                   void *user)
{
  struct gcall *c = nghttp2_session_get_stream_user_data(ng, id);
  (void)flags;
  (void)user;
  if (!c)
    return 0;
  c->responded = true;
  if (c->too_big || c->resp_len + len > MAX_RESPONSE + 5) {
    c->too_big = true;
    return 0;
  }
  if (c->resp_len + len > c->resp_cap) {
    size_t cap = c->resp_cap ? c->resp_cap : 4096;
    uint8_t *p;
    while (cap < c->resp_len + len)
      cap *= 2;
    if (!(p = realloc(c->resp, cap)))
      return NGHTTP2_ERR_CALLBACK_FAILURE;
    c->resp = p;
    c->resp_cap = cap;
  }
  memcpy(c->resp + c->resp_len, data, len);
  c->resp_len += len;
  return 0;
}

static int up_frame_recv(nghttp2_session *ng, const nghttp2_frame *f, void *user)
{
  struct gcall *c = nghttp2_session_get_stream_user_data(ng, f->hd.stream_id);
  (void)user;
  if (c && f->hd.type == NGHTTP2_HEADERS)
    c->responded = true;
  return 0;
}

static int up_stream_close(nghttp2_session *ng, int32_t id, uint32_t code, void *user)
{
  struct gcall *c = nghttp2_session_get_stream_user_data(ng, id);
  (void)user;
  if (!c)
    return 0;
  if (c->have_status && code == NGHTTP2_NO_ERROR)
    complete(c);
  else
    lost(c, code == NGHTTP2_REFUSED_STREAM ? "refused the stream" : "reset the stream");
  return 0;
}

static ssize_t up_read_req(nghttp2_session *ng, int32_t id, uint8_t *buf, size_t len,
                           uint32_t *flags, nghttp2_data_source *src, void *user)
{
  struct gcall *c = src->ptr;
  size_t n = c->req_len - c->req_off;
  (void)ng;
  (void)id;
  (void)user;
  if (n > len)
    n = len;
  memcpy(buf, c->req + c->req_off, n);
  c->req_off += n;
  if (c->req_off == c->req_len)
    *flags |= NGHTTP2_DATA_FLAG_EOF;
  return (ssize_t)n;
}

static void up_recv(struct upsess *u)
{
  uint8_t buf[65536];
  for (int turns = 0; turns < 16; turns++) {
    ssize_t n = recv(u->fd, buf, sizeof(buf), 0), used;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      break;
    if (n <= 0) {
      up_free(u, n == 0 ? "closed the connection" : "reset the connection");
      return;
    }
    u->busy = true;
    used = nghttp2_session_mem_recv(u->ng, buf, (size_t)n);
    u->busy = false;
    if (u->dead || used < 0) {
      up_free(u, "sent a malformed HTTP/2 frame");
      return;
    }
    if ((size_t)n < sizeof(buf))
      break;
  }
  up_flush(u);
}

static void up_io(struct gs_net_loop *loop, int fd, void *data, unsigned mask)
{
  struct upsess *u = data;
  (void)loop;
  if (!u->connected && mask & (GS_NET_WRITABLE | GS_NET_READABLE)) {
    int e = 0;
    socklen_t sl = sizeof(e);
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &sl) != 0 || e != 0) {
      up_free(u, "refused the connection");
      return;
    }
    u->connected = true;
    if (!up_flush(u))
      return;
  } else if (mask & GS_NET_WRITABLE && !up_flush(u)) {
    return;
  }
  if (mask & GS_NET_READABLE)
    up_recv(u);
}

static struct upsess *up_new(struct gs_proxy_grpc *g, size_t w, unsigned port)
{
  struct upsess *u = calloc(1, sizeof(*u));
  nghttp2_session_callbacks *cb = NULL;
  nghttp2_settings_entry iv[] = {{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, UP_STREAM_WINDOW},
                                 {NGHTTP2_SETTINGS_ENABLE_PUSH, 0}};
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                           .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  int one = 1;
  if (!u)
    return NULL;
  u->g = g;
  u->w = w;
  u->port = port;
  if ((u->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) < 0)
    goto fail;
  setsockopt(u->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if (connect(u->fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 && errno != EINPROGRESS)
    goto fail;
  if (nghttp2_session_callbacks_new(&cb) != 0)
    goto fail;
  nghttp2_session_callbacks_set_send_callback(cb, up_send);
  nghttp2_session_callbacks_set_on_header_callback(cb, up_header);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, up_data);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cb, up_frame_recv);
  nghttp2_session_callbacks_set_on_stream_close_callback(cb, up_stream_close);
  if (nghttp2_session_client_new(&u->ng, cb, u) != 0)
    goto fail;
  nghttp2_session_callbacks_del(cb);
  cb = NULL;
  if (nghttp2_submit_settings(u->ng, NGHTTP2_FLAG_NONE, iv, GS_NITEMS(iv)) != 0 ||
      nghttp2_session_set_local_window_size(u->ng, NGHTTP2_FLAG_NONE, 0, UP_CONN_WINDOW) != 0 ||
      gs_net_loop_add(NULL, g->loop, u->fd, GS_NET_READABLE | GS_NET_WRITABLE, up_io, u) != 0)
    goto fail;
  return u;
fail:
  nghttp2_session_callbacks_del(cb);
  nghttp2_session_del(u->ng);
  if (u->fd >= 0)
    close(u->fd);
  free(u);
  return NULL;
}

/* Worker w's connection, opened when there is none (or its port changed). */
static struct upsess *up_get(struct gs_proxy_grpc *g, size_t w, unsigned port)
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
  if (g->up[w] && g->up[w]->port != port) {
    struct upsess *old = g->up[w];
    g->up[w] = NULL;
    nghttp2_session_terminate_session(old->ng, NGHTTP2_NO_ERROR); /* its calls finish */
    up_flush(old);
  }
  if (!g->up[w])
    g->up[w] = up_new(g, w, port);
  return g->up[w];
}

/* ---- dispatch ---- */

#define NV(n, v, vl) {(uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, (vl), NGHTTP2_NV_FLAG_NONE}

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
      !(u = up_get(g, c->w, si.grpc_port))) {
    lost(c, "has no gRPC port to connect to");
    return;
  }
  snprintf(timeout, sizeof(timeout), "%lluu",
           (unsigned long long)(c->deadline_us > now ? c->deadline_us - now : 1));
  nghttp2_nv hdr[] = {NV(":method", "POST", 4), NV(":scheme", "http", 4),
                      NV(":path", c->path, c->path_len), NV(":authority", "gpuslice", 8),
                      NV("content-type", "application/grpc", 16), NV("te", "trailers", 8),
                      NV("grpc-timeout", timeout, strlen(timeout))};
  nghttp2_data_provider dp = {.source.ptr = c, .read_callback = up_read_req};
  c->req_off = 0;
  c->responded = c->have_status = c->too_big = false;
  c->resp_len = 0;
  c->message[0] = 0;
  c->sid = nghttp2_submit_request(u->ng, NULL, hdr, GS_NITEMS(hdr), &dp, c);
  if (c->sid < 0) {
    c->sid = 0;
    lost(c, "took no new stream");
    return;
  }
  c->up = u;
  c->unext = u->calls;
  if (u->calls)
    u->calls->uprev = c;
  u->calls = c;
  up_flush(u);
}

static void handle(void *ctx, struct gs_h2_call *client, const struct gs_h2_request *req)
{
  struct gs_proxy_grpc *g = ctx;
  struct gcall *c = calloc(1, sizeof(*c));
  uint64_t now = gs_net_loop_now_us();
  uint64_t wt = gs__proxy_config(g->p)->worker_timeout_ms * 1000ull;
  if (!c) {
    gs_h2_call_reply(client, ST_RESOURCE_EXHAUSTED, NULL, 0, "out of memory");
    return;
  }
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
  return n;
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
  for (size_t w = 0; w < g->nup; w++)
    if (g->up[w]) {
      struct upsess *u = g->up[w];
      while (u->calls) {
        struct gcall *c = u->calls;
        c->retried = c->responded = true; /* no retry while closing */
        up_unlink(c);
      }
      up_free(u, "closed");
    }
  while (g->calls) {
    g->calls->retried = true;
    finish(g->calls, ST_UNAVAILABLE, NULL, 0, "the proxy is stopping");
  }
  free(g->up);
  free(g);
}
