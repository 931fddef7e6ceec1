/* SPDX-License-Identifier: Apache-2.0 */
/* h2.c: the server side of gRPC calls over HTTP/2 cleartext (h2c, prior knowledge) on the net
 * event loop. nghttp2 does the framing, HPACK and flow control; this file feeds it socket bytes,
 * gathers each stream's headers and length-prefixed messages, and hands them to a handler: a unary
 * call whole, a streaming one message by message, an unknown method at its headers (a non-gRPC
 * content-type is 415 there); the answer goes as HEADERS, DATA (messages as they come) and
 * trailers (grpc-status, grpc-message). A malformed peer gets GOAWAY with nghttp2's error code,
 * then the socket closes. Answers made in one turn go out together at its end (h2_out.c). The
 * worker's gRPC service and the proxy's gRPC side sit on it. Memory: a message is held whole, so
 * the window is granted by hand (nghttp2's no_auto_window_update): a stream's 5-byte prefix tells
 * its length, which is reserved from the connection's share and the budget before any more of it
 * is taken (RESOURCE_EXHAUSTED at once when either is short), and the stream is granted window
 * only up to that length. Bytes that are not held (a refused stream's) are consumed at once. A
 * client that sends no preface and SETTINGS, or no whole message, within the read timeout is cut
 * off; so is a connection idle past the idle timeout, and the oldest idle one when the connection
 * limit is full. A streaming call's handler may hold its input back (no window given back).
 * limit: about 1,020 lines: connections, calls and nghttp2's callbacks share three private
 * structs; splitting needs an h2_internal.h (as http_internal.h is for HTTP/1), left for later. */
#include "net/internal.h"

#include <errno.h>
#include <nghttp2/nghttp2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Per-stream and connection receive windows: large tensors flow without
 * waiting for a WINDOW_UPDATE every 64 KiB. The stream's is granted up
 * front; a message's bytes beyond its own length are never taken. */
#define STREAM_WINDOW (1 << 20)
#define CONN_WINDOW (16 << 20)

/* Floods nghttp2 ends the session for (docs/proxy.md): RST_STREAMs taken at
 * once, then per second (rapid reset); SETTINGS and PING ACKs queued for a
 * client that does not read them; CONTINUATION frames after one HEADERS.
 * They are the library's defaults since Debian's security fixes, set here so
 * that they stay ours whatever those become. */
enum { RESET_BURST = 1000, RESET_RATE = 33, MAX_UNREAD_ACKS = 1000, MAX_CONTINUATIONS = 8 };

enum { ST_DEADLINE_EXCEEDED = 4, ST_RESOURCE_EXHAUSTED = 8, ST_INTERNAL = 13 };

struct gs_h2_server {
  struct gs_net_loop *loop;
  struct gs_http_limits lim;
  gs_h2_handler_fn *fn;
  void *ctx;
  int listen_fd;
  struct gs_net_conns limit;
  struct gs_net_budget own_budget, *budget; /* budget: &own_budget, or shared */
  struct gs_h2_conn *conns;
  struct gs_net_idle_list idle;
  gs_h2_kind_fn *kind_fn;       /* NULL: every call unary */
  void (*on_refuse)(void *ctx); /* each answer of the server's own */
  bool freeing;                 /* gs_h2_server_free closes the connections */
  void *refuse_ctx;
};

enum conn_timer { T_NONE, T_HEAD, T_IDLE };

struct gs_h2_conn {
  struct gs_h2_server *srv;
  struct gs_h2_conn *prev, *next;
  struct gs_net_idle_node idle; /* on the server's idle list: no call, nothing to send */
  int fd; /* -1: in memory (fuzzing) */
  nghttp2_session *ng;
  struct gs__h2_out out;     /* what the socket did not take yet */
  struct gs_net_defer flush; /* answers made this turn go out at its end, together */
  struct gs_h2_call *calls;
  uint64_t timer;
  enum conn_timer timer_kind;
  size_t held;     /* bytes reserved by its calls' messages */
  bool settings;   /* the client's preface and SETTINGS arrived */
  bool busy;  /* inside nghttp2's receive: answers wait for its end to be sent */
  bool dead;  /* freed when busy ends */
};

struct gs_h2_call {
  struct gs_h2_conn *conn; /* NULL: the connection is gone (orphan until answered) */
  struct gs_h2_server *srv; /* valid while its handler may be told of it (stream_end) */
  struct gs_h2_call *prev, *next;
  int32_t id;
  bool dispatched, replied, bad;
  bool grpc_type; /* its content-type starts with application/grpc */
  enum gs_h2_kind kind;
  bool started;   /* a streaming answer's headers are submitted */
  bool told_end;  /* a streaming call's handler heard its input's end */
  void *user;     /* gs_h2_call_bind's */
  void (*on_sent)(void *user, size_t n); /* gs_h2_call_on_sent's */
  char path[256];
  size_t path_len;
  uint64_t deadline_us;
  uint64_t timer;      /* the message's read timeout, until it is whole */
  uint8_t pfx[5];      /* the message's prefix while it comes in pieces */
  size_t pfx_len;
  uint8_t *in;         /* the framed message, need bytes reserved */
  size_t in_len, need;
  size_t granted;      /* of the message's bytes, those counted in ungiven (the prefix's too) */
  size_t ungiven;      /* bytes taken but not yet given back to the stream's window */
  bool held_back;      /* gs_h2_call_hold_input: ungiven waits */
  struct gs_net_budget *budget; /* where need was taken from (0 taken: NULL) */
  uint8_t *out; /* the answer's DATA: 5-byte prefixes + messages, from out_off */
  size_t out_len, out_off, out_cap;
  char status[12], message[256];
};

/* ---- calls and their memory ---- */

/* Gives back what k's message holds: its buffer, its budget bytes and its
 * share of the connection's. */
static void call_release(struct gs_h2_call *k)
{
  if (k->budget) {
    gs_net_budget_put(k->budget, k->need);
    if (k->conn)
      k->conn->held -= k->need;
    k->budget = NULL;
  }
  free(k->in);
  k->in = NULL;
  k->in_len = 0;
}

static void call_timer_stop(struct gs_h2_call *k)
{
  if (k->timer && k->conn)
    gs_net_loop_timer_del(k->conn->srv->loop, k->timer);
  k->timer = 0;
}

static void call_unlink(struct gs_h2_call *k)
{
  struct gs_h2_conn *c = k->conn;
  if (!c)
    return;
  call_timer_stop(k);
  if (k->budget) /* its share of the connection goes with it; the budget's stays */
    c->held -= k->need;
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
  call_release(k);
  free(k->out);
  free(k);
}

static void idle_unlink(struct gs_h2_conn *c)
{
  gs_net_idle_set(&c->srv->idle, &c->idle, false);
}

static void conn_timer_stop(struct gs_h2_conn *c)
{
  if (c->timer)
    gs_net_loop_timer_del(c->srv->loop, c->timer);
  c->timer = 0;
  c->timer_kind = T_NONE;
}

static void stream_end(struct gs_h2_call *k, int status, const char *why, bool gone);

static void conn_free(struct gs_h2_conn *c)
{
  struct gs_h2_server *s = c->srv;
  struct gs_h2_call *gone = NULL;
  if (c->busy) {
    c->dead = true;
    return;
  }
  idle_unlink(c);
  conn_timer_stop(c);
  gs_net_loop_undefer(s->loop, &c->flush);
  gs__h2_out_free(&c->out);
  nghttp2_session_del(c->ng);
  while (c->calls) {
    struct gs_h2_call *k = c->calls;
    call_unlink(k);
    if (s->freeing && k->budget == &s->own_budget)
      k->budget = NULL; /* that budget goes with the server: nothing to give back later */
    if (!k->dispatched || k->replied)
      call_free(k); /* else the handler still holds it: freed when answered */
    else if (k->kind == GS_H2_STREAM && !k->told_end)
      k->next = gone, gone = k; /* told below, once nothing of c is left to touch */
  }
  if (c->prev)
    c->prev->next = c->next;
  else if (s->conns == c)
    s->conns = c->next;
  if (c->next)
    c->next->prev = c->prev;
  if (c->fd >= 0) { /* accepted, so counted */
    gs_net_loop_close_fd(s->loop, c->fd);
    gs_net_conns_put(&s->limit);
  }
  free(c);
  while (gone) {
    struct gs_h2_call *k = gone;
    gone = k->next;
    k->next = NULL;
    stream_end(k, 0, NULL, true);
  }
}

/* ---- connection timers and the idle list ---- */

/* GOAWAY (no new stream; the client may retry the ones after the last we
 * took), then the socket closes: an idle connection's end. */
static void conn_goaway_close(struct gs_h2_conn *c)
{
  bool pending;
  nghttp2_submit_goaway(c->ng, NGHTTP2_FLAG_NONE, nghttp2_session_get_last_proc_stream_id(c->ng),
                        NGHTTP2_NO_ERROR, NULL, 0);
  (void)gs__h2_out_flush(&c->out, c->ng, c->fd, &pending); /* what the socket takes now */
  conn_free(c);
}

static int64_t on_conn_timeout(struct gs_net_loop *loop, uint64_t id, void *data)
{
  struct gs_h2_conn *c = data;
  (void)loop;
  (void)id;
  c->timer = 0;
  c->timer_kind = T_NONE;
  if (c->settings)
    conn_goaway_close(c); /* idle past the idle timeout */
  else
    conn_free(c); /* no preface and SETTINGS in time: nothing to say to it */
  return GS_NET_TIMER_DONE;
}

/* The connection's one timer: the head timeout until the client's SETTINGS,
 * then the idle timeout while no call is under way; and its place on the
 * idle list (no call, nothing to send), the eviction order. */
static void conn_update(struct gs_h2_conn *c)
{
  struct gs_h2_server *s = c->srv;
  enum conn_timer want = !c->settings ? T_HEAD : c->calls ? T_NONE : T_IDLE;
  if (c->fd < 0)
    return;
  if (want != c->timer_kind && want != T_HEAD) { /* the head timer runs from the accept */
    conn_timer_stop(c);
    if (want == T_IDLE)
      c->timer = gs_net_loop_timer_add(s->loop, (uint64_t)s->lim.idle_timeout_ms * 1000u,
                                       on_conn_timeout, c);
    c->timer_kind = want;
  }
  gs_net_idle_set(&s->idle, &c->idle,
                  !c->calls && !nghttp2_session_want_write(c->ng) && c->out.len == c->out.off);
}

static void on_io(struct gs_net_loop *loop, int fd, void *data, unsigned mask);

/* Sends what nghttp2 has queued (h2_out.c); false when the connection
 * ended (freed). */
static bool conn_flush(struct gs_h2_conn *c)
{
  bool pending;
  if (c->busy)
    return !c->dead;
  gs_net_loop_undefer(c->srv->loop, &c->flush);
  if (c->dead || gs__h2_out_flush(&c->out, c->ng, c->fd, &pending) != 0) {
    conn_free(c);
    return false;
  }
  if (!pending && !nghttp2_session_want_read(c->ng) && !nghttp2_session_want_write(c->ng)) {
    conn_free(c);
    return false;
  }
  if (c->fd >= 0) {
    if (pending)
      gs_net_loop_add(NULL, c->srv->loop, c->fd, GS_NET_WRITABLE, on_io, c);
    else if (gs_net_loop_mask(c->srv->loop, c->fd) & GS_NET_WRITABLE)
      gs_net_loop_del(c->srv->loop, c->fd, GS_NET_WRITABLE);
  }
  conn_update(c);
  return true;
}

static void on_flush(struct gs_net_defer *d)
{
  (void)conn_flush(GS_CONTAINER_OF(d, struct gs_h2_conn, flush));
}

/* Answers made now go out at the end of this turn, with the others made
 * in it (an in-memory connection's at once: nothing turns its loop). */
static void conn_schedule(struct gs_h2_conn *c)
{
  if (c->fd < 0)
    (void)conn_flush(c);
  else
    gs_net_loop_defer(c->srv->loop, &c->flush);
}

/* ---- nghttp2 callbacks ---- */

static ssize_t on_send(nghttp2_session *ng, const uint8_t *data, size_t len, int flags,
                       void *user)
{
  struct gs_h2_conn *c = user;
  (void)ng;
  (void)flags;
  return gs__h2_out_add(&c->out, data, len);
}

void gs_h2_call_reply(struct gs_h2_call *k, int status, const void *msg, size_t len,
                      const char *message);

/* Answers k before its message is whole (refused, or too slow): its memory
 * goes now, and bytes still coming for it are dropped; once the answer is
 * out, RST_STREAM (on_frame_send) tells the client to stop sending. */
static void refuse(struct gs_h2_call *k, int status, const char *message)
{
  struct gs_h2_server *s = k->conn->srv;
  call_timer_stop(k);
  call_release(k);
  if (s->on_refuse)
    s->on_refuse(s->refuse_ctx);
  if (k->kind == GS_H2_STREAM) { /* its handler answers, with the status given */
    stream_end(k, status, message, false);
    return;
  }
  k->dispatched = true;
  gs_h2_call_reply(k, status, NULL, 0, message);
}

/* A streaming call's input ended (or broke, or its client went): its
 * handler hears it once, and answers. k may be gone on return. */
static void stream_end(struct gs_h2_call *k, int status, const char *why, bool gone)
{
  struct gs_h2_server *s = k->srv;
  struct gs_h2_request req = {.path = k->path, .path_len = k->path_len,
                              .deadline_us = k->deadline_us, .user = k->user, .end = true,
                              .gone = gone, .status = status, .why = why};
  if (k->told_end)
    return;
  k->told_end = k->dispatched = true;
  s->fn(s->ctx, k, &req);
}

/* A request that is not gRPC at all (its content-type) gets HTTP 415 and
 * no gRPC status, as gRPC's HTTP/2 protocol says: a plain HTTP client must
 * not read a gRPC error, which is a 200, as a success. */
static void refuse_not_grpc(struct gs_h2_call *k)
{
  struct gs_h2_conn *c = k->conn;
  nghttp2_nv hdr[] = {{(uint8_t *)":status", (uint8_t *)"415", 7, 3, NGHTTP2_NV_FLAG_NONE}};
  call_timer_stop(k);
  call_release(k);
  k->dispatched = k->replied = true;
  if (c->srv->on_refuse)
    c->srv->on_refuse(c->srv->refuse_ctx);
  if (nghttp2_submit_response(c->ng, k->id, hdr, GS_NITEMS(hdr), NULL) != 0)
    nghttp2_submit_rst_stream(c->ng, NGHTTP2_FLAG_NONE, k->id, NGHTTP2_INTERNAL_ERROR);
  conn_schedule(c);
}

static int64_t on_call_timeout(struct gs_net_loop *loop, uint64_t id, void *data)
{
  struct gs_h2_call *k = data;
  struct gs_h2_conn *c = k->conn;
  char msg[96];
  (void)loop;
  (void)id;
  k->timer = 0;
  snprintf(msg, sizeof(msg), "the request message did not arrive whole within %u ms",
           c->srv->lim.read_timeout_ms);
  refuse(k, ST_DEADLINE_EXCEEDED, msg); /* flushed there: k may be gone */
  return GS_NET_TIMER_DONE;
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
  k->srv = c->srv;
  k->id = f->hd.stream_id;
  k->next = c->calls;
  if (c->calls)
    c->calls->prev = k;
  c->calls = k;
  nghttp2_session_set_stream_user_data(ng, k->id, k);
  if (c->fd >= 0) /* its message must be whole within the read timeout */
    k->timer = gs_net_loop_timer_add(c->srv->loop, (uint64_t)c->srv->lim.read_timeout_ms * 1000u,
                                     on_call_timeout, k);
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
  } else if (namelen == 12 && memcmp(name, "content-type", 12) == 0) {
    k->grpc_type = valuelen >= 16 && memcmp(value, "application/grpc", 16) == 0 &&
                   (valuelen == 16 || value[16] == '+' || value[16] == ';');
  } else if (namelen == 12 && memcmp(name, "grpc-timeout", 12) == 0 &&
             (t = gs__grpc_timeout_us(value, valuelen)) != 0) {
    k->deadline_us = gs_net_loop_now_us() + t;
  }
  return 0;
}

/* The 5-byte prefix of k's message is in: its length is reserved from the
 * connection's share and the budget, or the call is refused at once.
 * False when it was refused. */
static bool reserve(struct gs_h2_call *k, const uint8_t *pfx)
{
  struct gs_h2_conn *c = k->conn;
  struct gs_h2_server *s = c->srv;
  uint32_t n = (uint32_t)pfx[1] << 24 | (uint32_t)pfx[2] << 16 | (uint32_t)pfx[3] << 8 | pfx[4];
  char msg[160];
  if (n > GS_H2_MAX_MESSAGE) {
    snprintf(msg, sizeof(msg), "the request message is %u bytes; at most %u are accepted", n,
             GS_H2_MAX_MESSAGE);
  } else if (c->held + n + 5 > GS_H2_CONN_HELD) {
    snprintf(msg, sizeof(msg), "this connection holds %zu bytes of requests already; at most "
             "%u at once (send it when earlier calls are answered)", c->held, GS_H2_CONN_HELD);
  } else if (!gs_net_budget_take(s->budget, (size_t)n + 5)) {
    snprintf(msg, sizeof(msg), "the server holds %zu MiB of requests (its limit); retry later",
             gs_net_budget_used(s->budget) >> 20);
  } else if (!(k->in = malloc((size_t)n + 5))) {
    gs_net_budget_put(s->budget, (size_t)n + 5);
    snprintf(msg, sizeof(msg), "out of memory");
  } else {
    k->need = (size_t)n + 5;
    k->budget = s->budget;
    c->held += k->need;
    return true;
  }
  refuse(k, ST_RESOURCE_EXHAUSTED, msg);
  return false;
}

/* A streaming call's message is whole: its handler has it, then its
 * memory goes and the next message may come. */
static void deliver(struct gs_h2_call *k)
{
  struct gs_h2_server *s = k->srv;
  struct gs_h2_request req = {.path = k->path, .path_len = k->path_len, .msg = k->in + 5,
                              .msg_len = k->need - 5, .deadline_us = k->deadline_us,
                              .user = k->user};
  call_timer_stop(k);
  k->dispatched = true;
  s->fn(s->ctx, k, &req);
  call_release(k);
  k->pfx_len = 0;
  k->granted = 0;
}

/* The bytes k took go back to its stream's window; nghttp2 sends the
 * update once half the window is consumed. */
static void give_window(struct gs_h2_call *k)
{
  if (k->ungiven && k->conn)
    nghttp2_session_consume_stream(k->conn->ng, k->id, k->ungiven);
  k->ungiven = 0;
}

/* Takes len bytes of k's message (a unary call is refused if they pass its
 * length; a streaming call's next message begins after it). Window is
 * granted back for the bytes taken, and for nothing else: they are held
 * under the reservation; a streaming call whose handler holds its input
 * back gets none until it lets go. The client always has room to go on
 * otherwise; what it may send beyond the message (at most the window given
 * up front) is never held. A streaming call's message must be whole within
 * the read timeout of its first byte; between messages it may wait. */
static void take_data(struct gs_h2_call *k, const uint8_t *data, size_t len)
{
  while (len > 0 && !k->replied && !k->told_end) {
    size_t n;
    if (!k->in) { /* the prefix first, maybe in pieces */
      struct gs_h2_server *s = k->srv;
      if (k->kind == GS_H2_STREAM && !k->timer && k->conn->fd >= 0)
        k->timer = gs_net_loop_timer_add(s->loop, (uint64_t)s->lim.read_timeout_ms * 1000u,
                                         on_call_timeout, k);
      n = len < 5 - k->pfx_len ? len : 5 - k->pfx_len;
      memcpy(k->pfx + k->pfx_len, data, n);
      k->pfx_len += n;
      data += n, len -= n;
      if (k->pfx_len < 5 || !reserve(k, k->pfx))
        return;
      memcpy(k->in, k->pfx, 5);
      k->in_len = 5;
    }
    if (k->kind != GS_H2_STREAM && len > k->need - k->in_len) {
      refuse(k, ST_INTERNAL, "the request is not exactly one gRPC message");
      return;
    }
    n = len < k->need - k->in_len ? len : k->need - k->in_len;
    memcpy(k->in + k->in_len, data, n);
    k->in_len += n;
    data += n, len -= n;
    k->ungiven += k->in_len - k->granted;
    k->granted = k->in_len;
    if (!k->held_back)
      give_window(k);
    if (k->kind == GS_H2_STREAM && k->in_len == k->need)
      deliver(k);
  }
}

static int on_data(nghttp2_session *ng, uint8_t flags, int32_t id, const uint8_t *data,
                   size_t len, void *user)
{
  struct gs_h2_call *k = nghttp2_session_get_stream_user_data(ng, id);
  (void)flags;
  (void)user;
  if (k && !k->bad && (!k->dispatched || k->kind == GS_H2_STREAM))
    take_data(k, data, len);
  /* held bytes are reserved and dropped ones gone: the connection's window
   * comes back at once either way (the per-stream window is the bound) */
  nghttp2_session_consume_connection(ng, len);
  return 0;
}

/* The request is whole: checks the gRPC framing and calls the handler. */
static void dispatch(struct gs_h2_call *k)
{
  struct gs_h2_request req = {.path = k->path, .path_len = k->path_len,
                              .deadline_us = k->deadline_us};
  call_timer_stop(k);
  if (k->bad) {
    refuse(k, ST_RESOURCE_EXHAUSTED, "the request's :path is too long");
    return;
  }
  if (k->in_len < 5 || k->in[0] != 0) {
    refuse(k, k->in_len >= 5 ? 12 : ST_INTERNAL,
           k->in_len >= 5 ? "compressed messages are not supported (no grpc-encoding)"
                          : "the request holds no gRPC message (5-byte prefix)");
    return;
  }
  if (k->in_len != k->need) {
    refuse(k, ST_INTERNAL, "the request is not exactly one gRPC message");
    return;
  }
  k->dispatched = true;
  req.msg = k->in + 5;
  req.msg_len = k->need - 5;
  k->conn->srv->fn(k->conn->srv->ctx, k, &req);
}

/* A call's headers are in: one that is not gRPC is refused (415), and
 * the server sorts it by path: an unknown method's handler answers at
 * once, before any message (trailers only); a streaming call's handler
 * hears it open, and its messages are timed one by one (take_data). True
 * when it was answered. */
static bool headers_done(struct gs_h2_call *k)
{
  struct gs_h2_server *s = k->srv;
  struct gs_h2_request req = {.path = k->path, .path_len = k->path_len,
                              .deadline_us = k->deadline_us};
  if (!k->grpc_type) {
    refuse_not_grpc(k);
    return true;
  }
  if (!s->kind_fn || k->bad)
    return false;
  k->kind = s->kind_fn(s->ctx, k->path, k->path_len);
  if (k->kind == GS_H2_UNARY)
    return false;
  call_timer_stop(k);
  k->dispatched = true;
  s->fn(s->ctx, k, &req);
  return k->kind == GS_H2_UNKNOWN;
}

static int on_frame_recv(nghttp2_session *ng, const nghttp2_frame *f, void *user)
{
  struct gs_h2_conn *c = user;
  struct gs_h2_call *k;
  if (f->hd.type == NGHTTP2_SETTINGS && !(f->hd.flags & NGHTTP2_FLAG_ACK))
    c->settings = true; /* the handshake is done: the head timeout no longer applies */
  if (f->hd.type == NGHTTP2_HEADERS && f->headers.cat == NGHTTP2_HCAT_REQUEST &&
      (k = nghttp2_session_get_stream_user_data(ng, f->hd.stream_id)) && headers_done(k))
    return 0;
  if ((f->hd.type != NGHTTP2_DATA && f->hd.type != NGHTTP2_HEADERS) ||
      !(f->hd.flags & NGHTTP2_FLAG_END_STREAM))
    return 0;
  k = nghttp2_session_get_stream_user_data(ng, f->hd.stream_id);
  if (k && k->kind == GS_H2_STREAM && !k->told_end && !k->replied)
    stream_end(k, k->pfx_len ? ST_INTERNAL : 0, k->pfx_len ? "the stream ended inside a "
               "message" : NULL, false);
  else if (k && !k->dispatched)
    dispatch(k);
  return 0;
}

/* An answer that ended while its request still comes (refused early): the
 * client is told to stop sending it (RST_STREAM NO_ERROR, RFC 9113 §8.1). */
static int on_frame_send(nghttp2_session *ng, const nghttp2_frame *f, void *user)
{
  (void)user;
  if ((f->hd.type == NGHTTP2_HEADERS || f->hd.type == NGHTTP2_DATA) &&
      (f->hd.flags & NGHTTP2_FLAG_END_STREAM) &&
      nghttp2_session_get_stream_remote_close(ng, f->hd.stream_id) == 0)
    nghttp2_submit_rst_stream(ng, NGHTTP2_FLAG_NONE, f->hd.stream_id, NGHTTP2_NO_ERROR);
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
  if (!k->dispatched || k->replied) {
    call_free(k);
    return 0;
  }
  call_unlink(k); /* the handler answers later: dropped then */
  if (k->kind == GS_H2_STREAM)
    stream_end(k, 0, NULL, true); /* reset by the client: its handler lets it go */
  return 0;
}

/* The answer's DATA from k->out; a streaming answer waits (DEFERRED) for
 * its next message, and its trailers follow the last once it is answered. */
static ssize_t read_out(nghttp2_session *ng, int32_t id, uint8_t *buf, size_t len,
                        uint32_t *flags, nghttp2_data_source *src, void *user)
{
  struct gs_h2_call *k = src->ptr;
  size_t n = k->out_len - k->out_off;
  nghttp2_nv trailers[] = {
      {(uint8_t *)"grpc-status", (uint8_t *)k->status, 11, strlen(k->status), NGHTTP2_NV_FLAG_NONE},
      {(uint8_t *)"grpc-message", (uint8_t *)k->message, 12, strlen(k->message),
       NGHTTP2_NV_FLAG_NONE},
  };
  (void)user;
  if (n == 0 && !k->replied)
    return NGHTTP2_ERR_DEFERRED;
  if (n > len)
    n = len;
  memcpy(buf, k->out + k->out_off, n);
  k->out_off += n;
  if (k->on_sent)
    k->on_sent(k->user, n);
  if (k->out_off == k->out_len && k->replied) {
    *flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
    if (nghttp2_submit_trailer(ng, id, trailers, k->message[0] ? 2 : 1) != 0)
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

void gs_h2_call_bind(struct gs_h2_call *call, void *user)
{
  call->user = user;
}

void gs_h2_call_on_sent(struct gs_h2_call *call, void (*fn)(void *user, size_t n))
{
  call->on_sent = fn;
}

void gs_h2_call_hold_input(struct gs_h2_call *k, bool hold)
{
  k->held_back = hold;
  if (hold || !k->ungiven || !k->conn)
    return;
  give_window(k);
  conn_schedule(k->conn); /* the WINDOW_UPDATE */
}

/* Appends one length-prefixed message to k's answer bytes. */
static int out_add(struct gs_h2_call *k, const void *msg, size_t len)
{
  if (k->out_off == k->out_len)
    k->out_off = k->out_len = 0;
  if (k->out_len + len + 5 > k->out_cap) {
    size_t cap = k->out_cap ? 2 * k->out_cap : 0; /* a unary answer: its size exactly */
    uint8_t *p;
    if (k->out_off) { /* what was sent goes first */
      memmove(k->out, k->out + k->out_off, k->out_len - k->out_off);
      k->out_len -= k->out_off;
      k->out_off = 0;
    }
    if (cap < k->out_len + len + 5)
      cap = k->out_len + len + 5;
    if (!(p = realloc(k->out, cap)))
      return GS_E_NO_MEMORY;
    k->out = p;
    k->out_cap = cap;
  }
  k->out[k->out_len] = 0;
  k->out[k->out_len + 1] = (uint8_t)(len >> 24), k->out[k->out_len + 2] = (uint8_t)(len >> 16);
  k->out[k->out_len + 3] = (uint8_t)(len >> 8), k->out[k->out_len + 4] = (uint8_t)len;
  if (len)
    memcpy(k->out + k->out_len + 5, msg, len);
  k->out_len += len + 5;
  return 0;
}

static void set_status(struct gs_h2_call *k, int status, const char *message)
{
  snprintf(k->status, sizeof(k->status), "%d", status);
  gs__grpc_message(k->message, sizeof(k->message), message);
}

/* The answer's headers and its DATA source: messages follow as they come. */
static int start_answer(struct gs_h2_call *k)
{
  nghttp2_nv hdr[] = {NV(":status", "200", 3), NV("content-type", "application/grpc", 16)};
  nghttp2_data_provider dp = {.source.ptr = k, .read_callback = read_out};
  k->started = true;
  return nghttp2_submit_response(k->conn->ng, k->id, hdr, GS_NITEMS(hdr), &dp);
}

int gs_h2_call_send(struct gs_h2_call *k, const void *msg, size_t len)
{
  struct gs_h2_conn *c = k->conn;
  int rc;
  if (!c || k->replied)
    return GS_E_IO;
  if ((rc = out_add(k, msg, len)) != 0)
    return rc;
  rc = k->started ? nghttp2_session_resume_data(c->ng, k->id) : start_answer(k);
  if (rc != 0 && rc != NGHTTP2_ERR_INVALID_ARGUMENT) /* that one: not deferred, nothing to do */
    nghttp2_submit_rst_stream(c->ng, NGHTTP2_FLAG_NONE, k->id, NGHTTP2_INTERNAL_ERROR);
  conn_schedule(c);
  return 0;
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
  set_status(k, status, status ? message : NULL);
  if (k->started) { /* a streaming answer: its trailers after its messages */
    (void)nghttp2_session_resume_data(c->ng, k->id);
    conn_schedule(c);
    return;
  }
  if (status == 0 && k->kind != GS_H2_STREAM && out_add(k, msg, len) != 0)
    status = 8, set_status(k, 8, "out of memory");
  if (status == 0 && k->kind != GS_H2_STREAM) {
    rc = start_answer(k);
  } else {
    nghttp2_nv hdr[] = {NV(":status", "200", 3), NV("content-type", "application/grpc", 16),
                        NV("grpc-status", k->status, strlen(k->status)),
                        NV("grpc-message", k->message, strlen(k->message))};
    rc = nghttp2_submit_response(c->ng, k->id, hdr, k->message[0] ? 4 : 3, NULL);
  }
  if (rc != 0) /* the stream is gone already: nothing to answer */
    nghttp2_submit_rst_stream(c->ng, NGHTTP2_FLAG_NONE, k->id, NGHTTP2_INTERNAL_ERROR);
  conn_schedule(c);
}

/* ---- connections ---- */

/* nghttp2 with our callbacks, the window granted by hand (take_data). */
static int session_new(struct gs_h2_conn *c)
{
  nghttp2_session_callbacks *cb;
  nghttp2_option *opt;
  int rc;
  if (nghttp2_session_callbacks_new(&cb) != 0)
    return -1;
  if (nghttp2_option_new(&opt) != 0) {
    nghttp2_session_callbacks_del(cb);
    return -1;
  }
  nghttp2_session_callbacks_set_send_callback(cb, on_send);
  nghttp2_session_callbacks_set_on_begin_headers_callback(cb, on_begin_headers);
  nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
  nghttp2_session_callbacks_set_on_frame_send_callback(cb, on_frame_send);
  nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_stream_close);
  nghttp2_option_set_no_auto_window_update(opt, 1);
  nghttp2_option_set_stream_reset_rate_limit(opt, RESET_BURST, RESET_RATE);
  nghttp2_option_set_max_outbound_ack(opt, MAX_UNREAD_ACKS);
  nghttp2_option_set_max_continuations(opt, MAX_CONTINUATIONS);
  rc = nghttp2_session_server_new2(&c->ng, cb, c, opt);
  nghttp2_option_del(opt);
  nghttp2_session_callbacks_del(cb);
  return rc;
}

static struct gs_h2_conn *conn_new(struct gs_h2_server *s, int fd)
{
  struct gs_h2_conn *c = calloc(1, sizeof(*c));
  nghttp2_settings_entry iv[] = {
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, GS_H2_MAX_STREAMS},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, STREAM_WINDOW},
  };
  if (!c)
    return NULL;
  c->srv = s;
  c->fd = fd;
  c->out.discard = fd < 0; /* in memory: frames out are dropped */
  c->flush.fn = on_flush;
  if (session_new(c) != 0 ||
      nghttp2_submit_settings(c->ng, NGHTTP2_FLAG_NONE, iv, GS_NITEMS(iv)) != 0 ||
      nghttp2_session_set_local_window_size(c->ng, NGHTTP2_FLAG_NONE, 0, CONN_WINDOW) != 0) {
    nghttp2_session_del(c->ng);
    free(c);
    return NULL;
  }
  c->next = s->conns;
  if (s->conns)
    s->conns->prev = c;
  s->conns = c;
  if (fd >= 0) { /* the preface and SETTINGS must come within the head timeout */
    c->timer = gs_net_loop_timer_add(s->loop, (uint64_t)s->lim.read_timeout_ms * 1000u,
                                     on_conn_timeout, c);
    c->timer_kind = T_HEAD;
  }
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

static void on_io(struct gs_net_loop *loop, int fd, void *data, unsigned mask)
{
  struct gs_h2_conn *c = data;
  uint8_t buf[65536];
  (void)loop;
  if (mask & GS_NET_WRITABLE && !conn_flush(c))
    return;
  if (!(mask & GS_NET_READABLE))
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

/* gs_net_accept's evict_fn: the oldest idle connection goes (GOAWAY) to admit a
 * new one when the limit is full; one whose next frames already wait in its
 * socket is not idle. False when none is idle. */
static bool evict_idle(void *ctx)
{
  struct gs_h2_server *s = ctx;
  char b;
  while (s->idle.first) {
    struct gs_h2_conn *c =
        (struct gs_h2_conn *)((char *)s->idle.first - offsetof(struct gs_h2_conn, idle));
    if (recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) > 0) {
      idle_unlink(c); /* read at its next event */
      continue;
    }
    conn_goaway_close(c);
    return true;
  }
  return false;
}

static void on_accept(struct gs_net_loop *loop, int fd, void *data, unsigned mask)
{
  struct gs_h2_server *s = data;
  int cfd;
  (void)mask;
  while ((cfd = gs_net_accept(fd, &s->limit, evict_idle, s)) >= 0) {
    struct gs_h2_conn *c = conn_new(s, cfd);
    if (!c) {
      gs_net_conns_put(&s->limit);
      close(cfd);
      continue;
    }
    if (gs_net_loop_add(NULL, loop, cfd, GS_NET_READABLE, on_io, c) != 0) {
      conn_free(c);
      continue;
    }
    (void)conn_flush(c); /* our SETTINGS; on error it freed c */
  }
}

/* ---- server ---- */

int gs_h2_server_new(struct gs_err *err, struct gs_net_loop *loop, const struct gs_http_limits *l,
                     gs_h2_handler_fn *fn, void *ctx, struct gs_h2_server **out)
{
  struct gs_h2_server *s = calloc(1, sizeof(*s));
  *out = NULL;
  if (!s)
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory creating an HTTP/2 server");
  s->loop = loop;
  gs__net_server_setup(&s->lim, l, &s->listen_fd);
  s->fn = fn;
  s->ctx = ctx;
  s->limit.max = s->lim.max_conns;
  s->own_budget.max = GS_H2_BUDGET;
  s->budget = &s->own_budget;
  *out = s;
  return 0;
}

void gs_h2_server_budget(struct gs_h2_server *s, struct gs_net_budget *b)
{
  s->budget = b;
}

void gs_h2_server_kinds(struct gs_h2_server *s, gs_h2_kind_fn *fn)
{
  s->kind_fn = fn;
}

void gs_h2_server_on_refuse(struct gs_h2_server *s, void (*fn)(void *ctx), void *ctx)
{
  s->on_refuse = fn;
  s->refuse_ctx = ctx;
}

int gs_h2_server_listen_fd(struct gs_err *err, struct gs_h2_server *s, int fd)
{
  return gs__net_server_listen(err, s->loop, &s->listen_fd, fd, GS_NET_READABLE, on_accept, s);
}

void gs_h2_server_free(struct gs_h2_server *s)
{
  if (!s)
    return;
  s->freeing = true;
  while (s->conns)
    conn_free(s->conns);
  gs__net_server_unlisten(s->loop, &s->listen_fd);
  free(s);
}

void gs_h2_server_drain(struct gs_h2_server *s)
{
  struct gs_h2_conn *c = s->conns, *next;
  gs__net_server_unlisten(s->loop, &s->listen_fd);
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
