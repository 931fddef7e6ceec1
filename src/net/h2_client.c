/* SPDX-License-Identifier: Apache-2.0 */
/* h2_client.c: the one HTTP/2 cleartext client (h2c, prior knowledge) on the
 * net event loop, for the proxy's gRPC side (to its workers) and bench's
 * gRPC load: one connection, many concurrent calls, each a request (headers
 * and a body sent as it is, not copied) and an answer reported header by
 * header, body bytes as they come, and one close per call. nghttp2 does the
 * framing, HPACK and flow control; the calls of a turn go out together at
 * its end (h2_out.c). A connection that fails closes each of its calls
 * (GS_H2_CONN_LOST), then says so once. It knows nothing of gRPC's framing
 * or of what the calls are for. */
#include "net/internal.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Receive windows we advertise: large messages flow without waiting for a
 * WINDOW_UPDATE every 64 KiB. */
#define STREAM_WINDOW (1 << 20)
#define CONN_WINDOW (16 << 20)
#define READ_TURNS 16 /* reads of one readiness event, then other fds get a turn */

/* One call: its request body and its place among the connection's calls.
 * A streamed body (gs_h2_client_stream) is a copy of what was given, in own
 * (cap bytes), until ended. */
struct stream {
  struct stream *prev, *next;
  void *call; /* NULL: cancelled, its stream not yet closed (nothing reported) */
  int32_t id;
  const uint8_t *body;
  size_t len, off; /* off: bytes given to DATA frames (read_body) */
  size_t sent;     /* bytes of those frames gathered for the socket (send_body) */
  uint8_t *own;
  size_t cap;
  bool streamed, ended;
};

struct gs_h2_client {
  struct gs_net_loop *loop;
  const struct gs_h2_client_ops *ops;
  void *ctx;
  int fd;
  bool connected;
  bool busy;  /* inside nghttp2 or a callback: a free waits for its end */
  bool freed; /* gs_h2_client_free was called while busy */
  bool dead;  /* ended: no new calls, dead() said (or about to be) */
  nghttp2_session *ng;
  struct gs__h2_out out;
  struct gs_net_defer flush;
  struct stream *streams;
  struct stream *spare; /* ended streams, reused */
};

static void on_io(struct gs_net_loop *loop, int fd, void *data, unsigned mask);

static void stream_unlink(struct gs_h2_client *c, struct stream *s)
{
  free(s->own);
  s->own = NULL;
  if (s->prev)
    s->prev->next = s->next;
  else
    c->streams = s->next;
  if (s->next)
    s->next->prev = s->prev;
  s->next = c->spare;
  c->spare = s;
}

static void destroy(struct gs_h2_client *c)
{
  gs_net_loop_undefer(c->loop, &c->flush);
  if (c->ng)
    nghttp2_session_del(c->ng);
  if (c->fd >= 0)
    gs_net_loop_close_fd(c->loop, c->fd);
  gs__h2_out_free(&c->out);
  while (c->streams)
    stream_unlink(c, c->streams);
  while (c->spare) {
    struct stream *s = c->spare;
    c->spare = s->next;
    free(s);
  }
  free(c);
}

/* The connection ended: each call still open is closed (lost), then the
 * owner hears of it once. */
static void die(struct gs_h2_client *c, uint32_t code, const char *why)
{
  if (c->dead)
    return;
  c->dead = true;
  gs_net_loop_undefer(c->loop, &c->flush);
  if (c->fd >= 0)
    gs_net_loop_del(c->loop, c->fd, GS_NET_READABLE | GS_NET_WRITABLE);
  c->busy = true;
  while (c->streams && !c->freed) {
    struct stream *s = c->streams;
    void *call = s->call;
    nghttp2_session_set_stream_user_data(c->ng, s->id, NULL);
    stream_unlink(c, s);
    if (call)
      c->ops->closed(call, code);
  }
  if (!c->freed)
    c->ops->dead(c->ctx, why);
  c->busy = false;
  if (c->freed)
    destroy(c);
}

/* Leaves a callback section: a free asked meanwhile happens now. False
 * when c is gone. */
static bool unbusy(struct gs_h2_client *c)
{
  c->busy = false;
  if (c->freed) {
    destroy(c);
    return false;
  }
  return true;
}

/* Writes what waits (connected only); false when c is gone or dead. */
static bool flush(struct gs_h2_client *c)
{
  bool pending;
  int rc;
  if (c->dead || c->busy || !c->connected)
    return !c->dead;
  gs_net_loop_undefer(c->loop, &c->flush);
  c->busy = true;
  rc = gs__h2_out_flush(&c->out, c->ng, c->fd, &pending);
  if (!unbusy(c))
    return false;
  if (c->dead)
    return false;
  if (rc != 0) {
    die(c, GS_H2_CONN_LOST, "the connection failed while sending");
    return false;
  }
  if (!pending && !nghttp2_session_want_read(c->ng) && !nghttp2_session_want_write(c->ng)) {
    die(c, GS_H2_CONN_LOST, "the server ended the connection (GOAWAY)");
    return false;
  }
  if (c->fd < 0)
    return true;
  if (pending)
    gs_net_loop_add(NULL, c->loop, c->fd, GS_NET_READABLE | GS_NET_WRITABLE, on_io, c);
  else if (gs_net_loop_mask(c->loop, c->fd) & GS_NET_WRITABLE)
    gs_net_loop_del(c->loop, c->fd, GS_NET_WRITABLE);
  return true;
}

static void on_flush(struct gs_net_defer *d)
{
  (void)flush(GS_CONTAINER_OF(d, struct gs_h2_client, flush));
}

/* ---- nghttp2 callbacks ---- */

static ssize_t on_send(nghttp2_session *ng, const uint8_t *data, size_t len, int flags,
                       void *user)
{
  struct gs_h2_client *c = user;
  (void)ng;
  (void)flags;
  return gs__h2_out_add(&c->out, data, len);
}

static int on_header(nghttp2_session *ng, const nghttp2_frame *f, const uint8_t *name,
                     size_t nl, const uint8_t *value, size_t vl, uint8_t flags, void *user)
{
  struct stream *s = nghttp2_session_get_stream_user_data(ng, f->hd.stream_id);
  struct gs_h2_client *c = user;
  (void)flags;
  if (s && s->call && !c->freed)
    c->ops->header(s->call, (const char *)name, nl, (const char *)value, vl);
  return 0;
}

static int on_data(nghttp2_session *ng, uint8_t flags, int32_t id, const uint8_t *data,
                   size_t len, void *user)
{
  struct stream *s = nghttp2_session_get_stream_user_data(ng, id);
  struct gs_h2_client *c = user;
  (void)flags;
  /* the connection's window at once (one slow call stalls no other); a
   * streamed call's own window only as its owner says (backpressure) */
  nghttp2_session_consume_connection(ng, len);
  if (!s || !s->streamed || !s->call)
    nghttp2_session_consume_stream(ng, id, len);
  if (s && s->call && !c->freed && !c->ops->data(s->call, data, len))
    nghttp2_submit_rst_stream(ng, NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL);
  return 0;
}

static int on_stream_close(nghttp2_session *ng, int32_t id, uint32_t code, void *user)
{
  struct stream *s = nghttp2_session_get_stream_user_data(ng, id);
  struct gs_h2_client *c = user;
  void *call;
  if (!s)
    return 0;
  call = s->call;
  nghttp2_session_set_stream_user_data(ng, id, NULL);
  stream_unlink(c, s);
  if (call && !c->freed)
    c->ops->closed(call, code);
  return 0;
}

/* The request body stays in the caller's memory (a streamed body: in own):
 * nghttp2 is told each DATA frame's length only (NO_COPY), and send_body
 * copies the bytes once, into the connection's output, instead of into
 * nghttp2's frame buffer and from there into the output (two copies of a
 * 600 KB tensor, most of a proxied call's instructions). A streamed body's
 * next bytes are waited for (DEFERRED) until it ends. */
static ssize_t read_body(nghttp2_session *ng, int32_t id, uint8_t *buf, size_t len,
                         uint32_t *flags, nghttp2_data_source *src, void *user)
{
  struct stream *s = src->ptr;
  size_t n = s->len - s->off < len ? s->len - s->off : len;
  (void)ng;
  (void)id;
  if (n == 0 && s->streamed && !s->ended)
    return NGHTTP2_ERR_DEFERRED;
  (void)buf;
  *flags |= NGHTTP2_DATA_FLAG_NO_COPY;
  s->off += n;
  if (s->off == s->len && (!s->streamed || s->ended)) {
    struct gs_h2_client *c = user;
    *flags |= NGHTTP2_DATA_FLAG_EOF;
    if (s->call && c->ops->sent)
      c->ops->sent(s->call);
  }
  return (ssize_t)n;
}

/* A DATA frame read_body sized: its head and its bytes, in order (a
 * stream's frames go out in order, so they start at s->sent). */
static int send_body(nghttp2_session *ng, nghttp2_frame *f, const uint8_t *head, size_t len,
                     nghttp2_data_source *src, void *user)
{
  struct gs_h2_client *c = user;
  struct stream *s = src->ptr;
  int rc;
  (void)ng;
  if (f->data.padlen) /* no padding callback is set: nghttp2 never pads */
    return NGHTTP2_ERR_CALLBACK_FAILURE;
  rc = gs__h2_out_add_data(&c->out, head, len ? s->body + s->sent : NULL, len);
  if (rc == 0)
    s->sent += len;
  if (rc == 0 && len && s->streamed && s->call && c->ops->drained)
    c->ops->drained(s->call, s->len - s->sent);
  return rc;
}

/* ---- socket events ---- */

/* Bytes from the server through nghttp2 (answers' callbacks run here);
 * false when c is gone or dead. */
static bool take(struct gs_h2_client *c, const uint8_t *data, size_t len)
{
  ssize_t used;
  c->busy = true;
  used = nghttp2_session_mem_recv(c->ng, data, len);
  if (!unbusy(c))
    return false;
  if (used < 0) {
    die(c, GS_H2_CONN_MALFORMED, "the server sent a malformed HTTP/2 frame");
    return false;
  }
  return !c->dead;
}

static void on_io(struct gs_net_loop *loop, int fd, void *data, unsigned mask)
{
  struct gs_h2_client *c = data;
  uint8_t buf[65536];
  (void)loop;
  if (!c->connected) {
    int e = 0;
    socklen_t sl = sizeof(e);
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &sl) != 0 || e != 0) {
      die(c, GS_H2_CONN_REFUSED, "the connection was refused");
      return;
    }
    c->connected = true;
    mask |= GS_NET_WRITABLE; /* what was submitted while connecting goes now */
  }
  if ((mask & GS_NET_WRITABLE) && !flush(c))
    return;
  if (!(mask & GS_NET_READABLE))
    return;
  for (int turn = 0; turn < READ_TURNS; turn++) {
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
      break;
    if (n <= 0) {
      die(c, GS_H2_CONN_LOST,
          n == 0 ? "the server closed the connection" : "the connection was reset");
      return;
    }
    if (!take(c, buf, (size_t)n))
      return;
    if ((size_t)n < sizeof(buf))
      break;
  }
  (void)flush(c); /* window updates, and calls the answers' callbacks made */
}

/* ---- interface ---- */

static int session_new(struct gs_h2_client *c, const struct gs_h2_client_config *cfg)
{
  nghttp2_session_callbacks *cb;
  nghttp2_settings_entry iv[] = {
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, cfg && cfg->stream_window ? cfg->stream_window
                                                                        : STREAM_WINDOW},
      {NGHTTP2_SETTINGS_ENABLE_PUSH, 0}};
  int32_t window = cfg && cfg->conn_window ? (int32_t)cfg->conn_window : CONN_WINDOW;
  nghttp2_option *opt;
  int rc;
  if (nghttp2_session_callbacks_new(&cb) != 0)
    return -1;
  nghttp2_session_callbacks_set_send_callback(cb, on_send);
  nghttp2_session_callbacks_set_send_data_callback(cb, send_body);
  nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data);
  nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_stream_close);
  if (nghttp2_option_new(&opt) != 0) {
    nghttp2_session_callbacks_del(cb);
    return -1;
  }
  nghttp2_option_set_no_auto_window_update(opt, 1); /* on_data and gs_h2_client_consume */
  rc = nghttp2_session_client_new2(&c->ng, cb, c, opt);
  nghttp2_option_del(opt);
  nghttp2_session_callbacks_del(cb);
  if (rc != 0 || nghttp2_submit_settings(c->ng, NGHTTP2_FLAG_NONE, iv, GS_NITEMS(iv)) != 0 ||
      nghttp2_session_set_local_window_size(c->ng, NGHTTP2_FLAG_NONE, 0, window) != 0)
    return -1;
  return 0;
}

int gs_h2_client_new(struct gs_err *err, struct gs_net_loop *loop, const struct sockaddr *addr,
                     unsigned addrlen, const struct gs_h2_client_config *cfg,
                     const struct gs_h2_client_ops *ops, void *ctx, struct gs_h2_client **out)
{
  struct gs_h2_client *c = calloc(1, sizeof(*c));
  int one = 1, e;
  *out = NULL;
  if (!c)
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory for an HTTP/2 connection");
  c->loop = loop;
  c->ops = ops;
  c->ctx = ctx;
  c->flush.fn = on_flush;
  c->fd = socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (c->fd < 0) {
    e = errno;
    destroy(c);
    return gs_err_set(err, GS_E_IO, "socket: %s", strerror(e));
  }
  setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if (connect(c->fd, addr, addrlen) != 0 && errno != EINPROGRESS) {
    e = errno;
    destroy(c);
    return gs_err_set(err, GS_E_IO, "cannot connect: %s", strerror(e));
  }
  if (session_new(c, cfg) != 0) {
    destroy(c);
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory for an HTTP/2 session");
  }
  if ((e = gs_net_loop_add(err, loop, c->fd, GS_NET_READABLE | GS_NET_WRITABLE, on_io, c)) != 0) {
    close(c->fd); /* never in the loop: closed now */
    c->fd = -1;
    destroy(c);
    return e;
  }
  *out = c;
  return 0;
}

static int32_t submit(struct gs_h2_client *c, const struct gs_http_header *hdr, size_t nhdr,
                      const void *body, size_t len, void *call, bool streamed)
{
  nghttp2_nv nv[16];
  struct stream *s;
  nghttp2_data_provider dp = {.read_callback = read_body};
  int32_t id;
  if (c->dead || c->freed || nhdr > GS_NITEMS(nv))
    return GS_E_IO;
  for (size_t i = 0; i < nhdr; i++)
    nv[i] = (nghttp2_nv){(uint8_t *)hdr[i].name, (uint8_t *)hdr[i].value, hdr[i].name_len,
                         hdr[i].value_len, NGHTTP2_NV_FLAG_NONE};
  if ((s = c->spare) != NULL)
    c->spare = s->next;
  else if (!(s = malloc(sizeof(*s))))
    return GS_E_NO_MEMORY;
  *s = (struct stream){.call = call, .body = body, .len = len, .streamed = streamed};
  dp.source.ptr = s;
  id = nghttp2_submit_request(c->ng, NULL, nv, nhdr, &dp, s);
  if (id < 0) { /* no stream id left (GOAWAY), or no memory */
    s->next = c->spare;
    c->spare = s;
    return GS_E_IO;
  }
  s->id = id;
  s->next = c->streams;
  if (c->streams)
    c->streams->prev = s;
  c->streams = s;
  gs_net_loop_defer(c->loop, &c->flush);
  return id;
}

int32_t gs_h2_client_call(struct gs_h2_client *c, const struct gs_http_header *hdr, size_t nhdr,
                          const void *body, size_t len, void *call)
{
  return submit(c, hdr, nhdr, body, len, call, false);
}

int32_t gs_h2_client_stream(struct gs_h2_client *c, const struct gs_http_header *hdr, size_t nhdr,
                            void *call)
{
  return submit(c, hdr, nhdr, NULL, 0, call, true);
}

/* Call id's stream; nghttp2 knows one only once its HEADERS went out. */
static struct stream *find(struct gs_h2_client *c, int32_t id)
{
  struct stream *s = c->streams;
  while (s && s->id != id)
    s = s->next;
  return s;
}

int gs_h2_client_send(struct gs_h2_client *c, int32_t id, const void *data, size_t len, bool end)
{
  struct stream *s = find(c, id);
  if (c->dead || !s || !s->streamed || s->ended)
    return GS_E_IO;
  if (s->sent == s->len)
    s->off = s->sent = s->len = 0;
  if (s->len + len > s->cap) {
    size_t cap = s->cap ? s->cap : 4096;
    uint8_t *p;
    if (s->sent) { /* what went out is dropped first; framed bytes wait in place */
      memmove(s->own, s->own + s->sent, s->len - s->sent);
      s->len -= s->sent;
      s->off -= s->sent;
      s->sent = 0;
    }
    while (cap < s->len + len)
      cap *= 2;
    if (!(p = realloc(s->own, cap)))
      return GS_E_NO_MEMORY;
    s->own = p;
    s->cap = cap;
  }
  if (len)
    memcpy(s->own + s->len, data, len);
  s->body = s->own;
  s->len += len;
  s->ended = end;
  (void)nghttp2_session_resume_data(c->ng, id);
  gs_net_loop_defer(c->loop, &c->flush);
  return 0;
}

void gs_h2_client_consume(struct gs_h2_client *c, int32_t id, size_t n)
{
  struct stream *s;
  if (c->dead || !n || !(s = find(c, id)) || !s->streamed || !s->call)
    return;
  if (nghttp2_session_consume_stream(c->ng, id, n) == 0)
    gs_net_loop_defer(c->loop, &c->flush); /* its WINDOW_UPDATE */
}

void gs_h2_client_cancel(struct gs_h2_client *c, int32_t id)
{
  struct stream *s;
  if (c->dead || !(s = find(c, id)))
    return;
  s->call = NULL; /* kept until its stream closes: nghttp2 may still read its body */
  nghttp2_submit_rst_stream(c->ng, NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL);
  gs_net_loop_defer(c->loop, &c->flush);
}

void gs_h2_client_goaway(struct gs_h2_client *c)
{
  if (c->dead)
    return;
  nghttp2_session_terminate_session(c->ng, NGHTTP2_NO_ERROR);
  gs_net_loop_defer(c->loop, &c->flush);
}

bool gs_h2_client_usable(const struct gs_h2_client *c)
{
  return !c->dead && !c->freed && nghttp2_session_check_request_allowed(c->ng);
}

void gs_h2_client_free(struct gs_h2_client *c)
{
  if (!c)
    return;
  if (c->busy) {
    c->freed = true;
    return;
  }
  destroy(c);
}

/* ---- in-memory connections (internal.h) ---- */

struct gs_h2_client *gs__h2_client_mem(struct gs_net_loop *loop, const struct gs_h2_client_ops *ops,
                                       void *ctx)
{
  struct gs_h2_client *c = calloc(1, sizeof(*c));
  if (!c)
    return NULL;
  *c = (struct gs_h2_client){.loop = loop, .ops = ops, .ctx = ctx, .fd = -1, .connected = true};
  c->out.discard = true;
  c->flush.fn = on_flush;
  if (session_new(c, NULL) != 0) {
    destroy(c);
    return NULL;
  }
  return c;
}

bool gs__h2_client_feed(struct gs_h2_client *c, const void *data, size_t len)
{
  return take(c, data, len) && flush(c);
}
