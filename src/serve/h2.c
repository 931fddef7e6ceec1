/* h2.c: the server side of gRPC unary calls over HTTP/2 cleartext (h2c,
 * prior knowledge) on the serve event loop. nghttp2 does the framing, HPACK
 * and flow control; this file feeds it socket bytes, gathers each stream's
 * headers and length-prefixed message, hands whole calls to a handler and
 * sends its answer as HEADERS, DATA and trailers (grpc-status, grpc-message).
 * A malformed peer gets GOAWAY with nghttp2's error code, then the socket
 * closes. The worker's service (grpc.c) sits on it. */
#include "serve/internal.h"

#include <errno.h>
#include <nghttp2/nghttp2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* One gRPC message at most this long (gRPC's own default is 4 MiB; ours
 * takes 600 KB tensors with room): more is RESOURCE_EXHAUSTED. */
#define MAX_MESSAGE (64u << 20)
/* Per-stream and connection receive windows: large tensors flow without
 * waiting for a WINDOW_UPDATE every 64 KiB. */
#define STREAM_WINDOW (1 << 20)
#define CONN_WINDOW (16 << 20)
#define MAX_STREAMS 1024

struct gs_h2_server {
  struct gs_loop *loop;
  gs_h2_handler_fn *fn;
  void *ctx;
  int listen_fd;
  struct gs__conns own, *limit; /* limit: &own, or shared (gs__h2_server_share_conns) */
  struct gs_h2_conn *conns;
};

struct gs_h2_conn {
  struct gs_h2_server *srv;
  struct gs_h2_conn *prev, *next;
  int fd; /* -1: in memory (fuzzing) */
  nghttp2_session *ng;
  struct gs_h2_call *calls;
  bool busy;  /* inside nghttp2's receive: answers wait for its end to be sent */
  bool dead;  /* freed when busy ends */
};

struct gs_h2_call {
  struct gs_h2_conn *conn; /* NULL: the connection is gone (orphan until answered) */
  struct gs_h2_call *prev, *next;
  int32_t id;
  bool dispatched, replied, bad;
  char path[256];
  size_t path_len;
  uint64_t deadline_us;
  uint8_t *in;
  size_t in_len, in_cap;
  uint8_t *out; /* the answer's DATA: 5-byte prefix + message */
  size_t out_len, out_off;
  char status[12], message[256];
};

static void call_unlink(struct gs_h2_call *k)
{
  struct gs_h2_conn *c = k->conn;
  if (!c)
    return;
  if (k->prev)
    k->prev->next = k->next;
  else
    c->calls = k->next;
  if (k->next)
    k->next->prev = k->prev;
  k->prev = k->next = NULL;
  k->conn = NULL;
}

static void call_free(struct gs_h2_call *k)
{
  call_unlink(k);
  free(k->in);
  free(k->out);
  free(k);
}

static void conn_free(struct gs_h2_conn *c)
{
  struct gs_h2_server *s = c->srv;
  if (c->busy) {
    c->dead = true;
    return;
  }
  nghttp2_session_del(c->ng);
  while (c->calls) {
    struct gs_h2_call *k = c->calls;
    call_unlink(k);
    if (!k->dispatched || k->replied)
      call_free(k); /* else the handler still holds it: freed when answered */
  }
  if (c->prev)
    c->prev->next = c->next;
  else if (s->conns == c)
    s->conns = c->next;
  if (c->next)
    c->next->prev = c->prev;
  if (c->fd >= 0) { /* accepted, so counted */
    gs_loop_close_fd(s->loop, c->fd);
    gs__conns_put(s->limit);
  }
  free(c);
}

static void on_io(struct gs_loop *loop, int fd, void *data, unsigned mask);

/* Sends what nghttp2 has queued; false when the connection ended (freed). */
static bool conn_flush(struct gs_h2_conn *c)
{
  int rv;
  if (c->busy)
    return !c->dead;
  if (c->dead || (rv = nghttp2_session_send(c->ng)) != 0) {
    c->busy = false;
    conn_free(c);
    return false;
  }
  if (!nghttp2_session_want_read(c->ng) && !nghttp2_session_want_write(c->ng)) {
    conn_free(c);
    return false;
  }
  if (c->fd >= 0) {
    if (nghttp2_session_want_write(c->ng))
      gs_loop_add(NULL, c->srv->loop, c->fd, GS_LOOP_WRITABLE, on_io, c);
    else
      gs_loop_del(c->srv->loop, c->fd, GS_LOOP_WRITABLE);
  }
  return true;
}

/* ---- nghttp2 callbacks ---- */

static ssize_t on_send(nghttp2_session *ng, const uint8_t *data, size_t len, int flags,
                       void *user)
{
  struct gs_h2_conn *c = user;
  ssize_t n;
  (void)ng;
  (void)flags;
  if (c->fd < 0)
    return (ssize_t)len; /* in memory: discarded */
  n = send(c->fd, data, len, MSG_NOSIGNAL);
  if (n >= 0)
    return n;
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
    return NGHTTP2_ERR_WOULDBLOCK;
  return NGHTTP2_ERR_CALLBACK_FAILURE;
}

static int on_begin_headers(nghttp2_session *ng, const nghttp2_frame *f, void *user)
{
  struct gs_h2_conn *c = user;
  struct gs_h2_call *k;
  if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST)
    return 0;
  if (!(k = calloc(1, sizeof(*k))))
    return NGHTTP2_ERR_CALLBACK_FAILURE;
  k->conn = c;
  k->id = f->hd.stream_id;
  k->next = c->calls;
  if (c->calls)
    c->calls->prev = k;
  c->calls = k;
  nghttp2_session_set_stream_user_data(ng, k->id, k);
  return 0;
}

/* "<digits><unit>", unit one of H M S m u n (gRPC's grpc-timeout); 0 when bad. */
static uint64_t timeout_us(const uint8_t *v, size_t n)
{
  static const struct { char unit; double us; } units[] = {
      {'H', 3600e6}, {'M', 60e6}, {'S', 1e6}, {'m', 1e3}, {'u', 1}, {'n', 1e-3}};
  double x = 0;
  if (n < 2 || n > 9)
    return 0;
  for (size_t i = 0; i + 1 < n; i++) {
    if (v[i] < '0' || v[i] > '9')
      return 0;
    x = x * 10 + (v[i] - '0');
  }
  for (size_t u = 0; u < GS_NITEMS(units); u++)
    if (units[u].unit == v[n - 1])
      return x * units[u].us < 1 ? 1 : (uint64_t)(x * units[u].us);
  return 0;
}

static int on_header(nghttp2_session *ng, const nghttp2_frame *f, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                     void *user)
{
  struct gs_h2_call *k = nghttp2_session_get_stream_user_data(ng, f->hd.stream_id);
  uint64_t t;
  (void)flags;
  (void)user;
  if (!k || f->hd.type != NGHTTP2_HEADERS)
    return 0;
  if (namelen == 5 && memcmp(name, ":path", 5) == 0) {
    if (valuelen >= sizeof(k->path))
      k->bad = true;
    else
      memcpy(k->path, value, valuelen), k->path_len = valuelen;
  } else if (namelen == 12 && memcmp(name, "grpc-timeout", 12) == 0 &&
             (t = timeout_us(value, valuelen)) != 0) {
    k->deadline_us = gs_loop_now_us() + t;
  }
  return 0;
}

static int on_data(nghttp2_session *ng, uint8_t flags, int32_t id, const uint8_t *data,
                   size_t len, void *user)
{
  struct gs_h2_call *k = nghttp2_session_get_stream_user_data(ng, id);
  (void)flags;
  (void)user;
  if (!k || k->bad)
    return 0;
  if (k->in_len + len > MAX_MESSAGE + 5) {
    k->bad = true; /* answered RESOURCE_EXHAUSTED at END_STREAM */
    return 0;
  }
  if (k->in_len + len > k->in_cap) {
    size_t cap = k->in_cap ? k->in_cap : 4096;
    uint8_t *p;
    while (cap < k->in_len + len)
      cap *= 2;
    if (!(p = realloc(k->in, cap)))
      return NGHTTP2_ERR_CALLBACK_FAILURE;
    k->in = p;
    k->in_cap = cap;
  }
  memcpy(k->in + k->in_len, data, len);
  k->in_len += len;
  return 0;
}

/* The request is whole: checks the gRPC framing and calls the handler. */
static void dispatch(struct gs_h2_call *k)
{
  struct gs_h2_request req = {.path = k->path, .path_len = k->path_len,
                              .deadline_us = k->deadline_us};
  uint32_t n;
  k->dispatched = true;
  if (k->bad) {
    gs_h2_call_reply(k, 8, NULL, 0, "request too large or its :path too long");
    return;
  }
  if (k->in_len < 5 || k->in[0] != 0) {
    gs_h2_call_reply(k, k->in_len >= 5 ? 12 : 13, NULL, 0,
                     k->in_len >= 5 ? "compressed messages are not supported (no grpc-encoding)"
                                    : "the request holds no gRPC message (5-byte prefix)");
    return;
  }
  n = (uint32_t)k->in[1] << 24 | (uint32_t)k->in[2] << 16 | (uint32_t)k->in[3] << 8 | k->in[4];
  if (n != k->in_len - 5) {
    gs_h2_call_reply(k, 13, NULL, 0, "the request is not exactly one gRPC message");
    return;
  }
  req.msg = k->in + 5;
  req.msg_len = n;
  k->conn->srv->fn(k->conn->srv->ctx, k, &req);
}

static int on_frame_recv(nghttp2_session *ng, const nghttp2_frame *f, void *user)
{
  struct gs_h2_call *k;
  (void)user;
  if ((f->hd.type != NGHTTP2_DATA && f->hd.type != NGHTTP2_HEADERS) ||
      !(f->hd.flags & NGHTTP2_FLAG_END_STREAM))
    return 0;
  k = nghttp2_session_get_stream_user_data(ng, f->hd.stream_id);
  if (k && !k->dispatched)
    dispatch(k);
  return 0;
}

static int on_stream_close(nghttp2_session *ng, int32_t id, uint32_t code, void *user)
{
  struct gs_h2_call *k = nghttp2_session_get_stream_user_data(ng, id);
  (void)code;
  (void)user;
  if (!k)
    return 0;
  nghttp2_session_set_stream_user_data(ng, id, NULL);
  if (!k->dispatched || k->replied)
    call_free(k);
  else
    call_unlink(k); /* the handler answers later: dropped then */
  return 0;
}

static ssize_t read_out(nghttp2_session *ng, int32_t id, uint8_t *buf, size_t len,
                        uint32_t *flags, nghttp2_data_source *src, void *user)
{
  struct gs_h2_call *k = src->ptr;
  size_t n = k->out_len - k->out_off;
  nghttp2_nv trailers[] = {
      {(uint8_t *)"grpc-status", (uint8_t *)"0", 11, 1, NGHTTP2_NV_FLAG_NONE},
  };
  (void)user;
  if (n > len)
    n = len;
  memcpy(buf, k->out + k->out_off, n);
  k->out_off += n;
  if (k->out_off == k->out_len) {
    *flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
    if (nghttp2_submit_trailer(ng, id, trailers, GS_NITEMS(trailers)) != 0)
      return NGHTTP2_ERR_CALLBACK_FAILURE;
  }
  return (ssize_t)n;
}

/* ---- calls ---- */

#define NV(n, v, vl) {(uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, (vl), NGHTTP2_NV_FLAG_NONE}

bool gs_h2_call_alive(const struct gs_h2_call *call)
{
  return call->conn != NULL;
}

void gs_h2_call_reply(struct gs_h2_call *k, int status, const void *msg, size_t len,
                      const char *message)
{
  struct gs_h2_conn *c = k->conn;
  int rc;
  if (!c) {
    call_free(k);
    return;
  }
  k->replied = true;
  snprintf(k->status, sizeof(k->status), "%d", status);
  if (status == 0 && (k->out = malloc(len + 5))) {
    nghttp2_nv hdr[] = {NV(":status", "200", 3), NV("content-type", "application/grpc", 16)};
    nghttp2_data_provider dp = {.source.ptr = k, .read_callback = read_out};
    k->out[0] = 0;
    k->out[1] = (uint8_t)(len >> 24), k->out[2] = (uint8_t)(len >> 16);
    k->out[3] = (uint8_t)(len >> 8), k->out[4] = (uint8_t)len;
    if (len)
      memcpy(k->out + 5, msg, len);
    k->out_len = len + 5;
    rc = nghttp2_submit_response(c->ng, k->id, hdr, GS_NITEMS(hdr), &dp);
  } else {
    if (status == 0)
      status = 8, message = "out of memory", snprintf(k->status, sizeof(k->status), "8");
    /* grpc-message is percent-encoded; ours are ASCII: only % and controls need it */
    size_t o = 0;
    for (const char *p = message ? message : ""; *p && o + 4 < sizeof(k->message); p++)
      if (*p == '%' || (unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
        o += (size_t)snprintf(k->message + o, 4, "%%%02X", (unsigned char)*p);
      else
        k->message[o++] = *p;
    k->message[o] = 0;
    nghttp2_nv hdr[] = {NV(":status", "200", 3), NV("content-type", "application/grpc", 16),
                        NV("grpc-status", k->status, strlen(k->status)),
                        NV("grpc-message", k->message, o)};
    rc = nghttp2_submit_response(c->ng, k->id, hdr, GS_NITEMS(hdr), NULL);
  }
  if (rc != 0) /* the stream is gone already: nothing to answer */
    nghttp2_submit_rst_stream(c->ng, NGHTTP2_FLAG_NONE, k->id, NGHTTP2_INTERNAL_ERROR);
  (void)conn_flush(c);
}

/* ---- connections ---- */

static struct gs_h2_conn *conn_new(struct gs_h2_server *s, int fd)
{
  struct gs_h2_conn *c = calloc(1, sizeof(*c));
  nghttp2_session_callbacks *cb;
  nghttp2_settings_entry iv[] = {
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, MAX_STREAMS},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, STREAM_WINDOW},
  };
  if (!c || nghttp2_session_callbacks_new(&cb) != 0) {
    free(c);
    return NULL;
  }
  nghttp2_session_callbacks_set_send_callback(cb, on_send);
  nghttp2_session_callbacks_set_on_begin_headers_callback(cb, on_begin_headers);
  nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
  nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_stream_close);
  c->srv = s;
  c->fd = fd;
  if (nghttp2_session_server_new(&c->ng, cb, c) != 0 ||
      nghttp2_submit_settings(c->ng, NGHTTP2_FLAG_NONE, iv, GS_NITEMS(iv)) != 0 ||
      nghttp2_session_set_local_window_size(c->ng, NGHTTP2_FLAG_NONE, 0, CONN_WINDOW) != 0) {
    nghttp2_session_callbacks_del(cb);
    nghttp2_session_del(c->ng);
    free(c);
    return NULL;
  }
  nghttp2_session_callbacks_del(cb);
  c->next = s->conns;
  if (s->conns)
    s->conns->prev = c;
  s->conns = c;
  return c;
}

/* Feeds received bytes to nghttp2; false once the connection ended. */
static bool conn_recv(struct gs_h2_conn *c, const uint8_t *data, size_t len)
{
  ssize_t n;
  c->busy = true;
  n = nghttp2_session_mem_recv(c->ng, data, len);
  c->busy = false;
  if (c->dead) {
    conn_free(c);
    return false;
  }
  /* A bad preface ends the connection with GOAWAY too: nghttp2 only sends
   * one itself for errors after it. */
  if (n < 0 && n != NGHTTP2_ERR_CALLBACK_FAILURE)
    nghttp2_session_terminate_session(c->ng, NGHTTP2_PROTOCOL_ERROR);
  else if (n < 0)
    nghttp2_session_terminate_session(c->ng, NGHTTP2_INTERNAL_ERROR);
  return conn_flush(c);
}

static void on_io(struct gs_loop *loop, int fd, void *data, unsigned mask)
{
  struct gs_h2_conn *c = data;
  uint8_t buf[65536];
  (void)loop;
  if (mask & GS_LOOP_WRITABLE && !conn_flush(c))
    return;
  if (!(mask & GS_LOOP_READABLE))
    return;
  for (int turns = 0; turns < 16; turns++) {
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      return;
    if (n <= 0) {
      conn_free(c);
      return;
    }
    if (!conn_recv(c, buf, (size_t)n) || (size_t)n < sizeof(buf))
      return;
  }
}

static void on_accept(struct gs_loop *loop, int fd, void *data, unsigned mask)
{
  struct gs_h2_server *s = data;
  int cfd;
  (void)mask;
  while ((cfd = gs__accept(fd, s->limit)) >= 0) {
    struct gs_h2_conn *c = conn_new(s, cfd);
    if (!c) {
      gs__conns_put(s->limit);
      close(cfd);
      continue;
    }
    if (gs_loop_add(NULL, loop, cfd, GS_LOOP_READABLE, on_io, c) != 0 || !conn_flush(c))
      continue; /* conn_flush freed it on error; a failed add leaves it to the free below */
  }
}

/* ---- server ---- */

int gs_h2_server_new(struct gs_err *err, struct gs_loop *loop, unsigned max_conns,
                     gs_h2_handler_fn *fn, void *ctx, struct gs_h2_server **out)
{
  struct gs_h2_server *s = calloc(1, sizeof(*s));
  *out = NULL;
  if (!s)
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory creating an HTTP/2 server");
  s->loop = loop;
  s->fn = fn;
  s->ctx = ctx;
  s->listen_fd = -1;
  s->own.max = max_conns ? max_conns : 1024;
  s->limit = &s->own;
  *out = s;
  return 0;
}

void gs__h2_server_share_conns(struct gs_h2_server *s, struct gs__conns *lim)
{
  s->limit = lim;
}

int gs_h2_server_listen_fd(struct gs_err *err, struct gs_h2_server *s, int fd)
{
  int rc = gs_loop_add(err, s->loop, fd, GS_LOOP_READABLE, on_accept, s);
  if (rc == 0)
    s->listen_fd = fd;
  return rc;
}

void gs_h2_server_free(struct gs_h2_server *s)
{
  if (!s)
    return;
  while (s->conns)
    conn_free(s->conns);
  if (s->listen_fd >= 0)
    gs_loop_close_fd(s->loop, s->listen_fd);
  free(s);
}

void gs_h2_server_drain(struct gs_h2_server *s)
{
  struct gs_h2_conn *c = s->conns, *next;
  if (s->listen_fd >= 0)
    gs_loop_close_fd(s->loop, s->listen_fd);
  s->listen_fd = -1;
  for (; c; c = next) {
    next = c->next; /* the flush may free c */
    nghttp2_submit_goaway(c->ng, NGHTTP2_FLAG_NONE, nghttp2_session_get_last_proc_stream_id(c->ng),
                          NGHTTP2_NO_ERROR, NULL, 0);
    conn_flush(c);
  }
}

unsigned gs_h2_server_conns(const struct gs_h2_server *s)
{
  unsigned n = 0;
  for (const struct gs_h2_conn *c = s->conns; c; c = c->next)
    n++;
  return n;
}

/* ---- in-memory connections (internal.h) ---- */

struct gs_h2_conn *gs__h2_conn_mem(struct gs_h2_server *s)
{
  return conn_new(s, -1);
}

bool gs__h2_conn_feed(struct gs_h2_conn *c, const void *data, size_t len)
{
  return conn_recv(c, data, len);
}

void gs__h2_conn_free(struct gs_h2_conn *c)
{
  conn_free(c);
}
