/* SPDX-License-Identifier: Apache-2.0 */
/* http.c: a small HTTP/1.1 server on the net event loop: picohttpparser for
 * the request head, http1.c's strict decoder for chunked bodies, keep-alive,
 * pipelined requests answered in order, limits (431, 413, 400, 505, the
 * head and slowloris timeouts; when the connection limit is full the oldest
 * idle connection goes) and Content-Length responses. It knows nothing of
 * KServe; the worker (src/worker) and the load balancer (src/serve) put
 * their handlers on top. A streaming server (the proxy's) hands request
 * bodies over as they arrive, with a pause for backpressure, and takes
 * responses in pieces (Content-Length or chunked). This file is one
 * connection's requests and answers; its socket and the server's accepts
 * are http_server.c's. */
#include "net/http_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

static void body_fail(struct gs_http_conn *c, int status);

void gs_http_limits_default(struct gs_http_limits *l)
{
  *l = (struct gs_http_limits){16384, 64u << 20, 10000, 60000, 1024};
}

const char *gs_http_reason(int status)
{
  switch (status) {
  case 100: return "Continue";
  case 200: return "OK";
  case 400: return "Bad Request";
  case 401: return "Unauthorized";
  case 404: return "Not Found";
  case 405: return "Method Not Allowed";
  case 408: return "Request Timeout";
  case 413: return "Payload Too Large";
  case 431: return "Request Header Fields Too Large";
  case 500: return "Internal Server Error";
  case 502: return "Bad Gateway";
  case 501: return "Not Implemented";
  case 503: return "Service Unavailable";
  case 504: return "Gateway Timeout";
  case 505: return "HTTP Version Not Supported";
  default: return "Unknown";
  }
}

const struct gs_http_header *gs_http_header_find(const struct gs_http_request *req,
                                                 const char *name)
{
  size_t n = strlen(name);
  for (size_t i = 0; i < req->nheaders; i++)
    if (req->headers[i].name_len == n && strncasecmp(req->headers[i].name, name, n) == 0)
      return &req->headers[i];
  return NULL;
}

/* ---- timers ---- */

static int64_t on_timeout(struct gs_net_loop *loop, uint64_t id, void *data)
{
  struct gs_http_conn *c = data;
  (void)loop;
  (void)id;
  c->timer = 0;
  gs__http_conn_close(c); /* idle past keep-alive, or a request sent too slowly */
  return GS_NET_TIMER_DONE;
}

static void timer_stop(struct gs_http_conn *c)
{
  if (c->timer)
    gs_net_loop_timer_del(c->srv->loop, c->timer);
  c->timer = 0;
}

static void timer_start(struct gs_http_conn *c, unsigned ms)
{
  timer_stop(c);
  c->timer = gs_net_loop_timer_add(c->srv->loop, (uint64_t)ms * 1000u, on_timeout, c);
}

struct gs_http_conn *gs__http_conn_new(struct gs_http_server *s, int fd)
{
  struct gs_http_conn *c = calloc(1, sizeof(*c));
  if (!c)
    return NULL;
  c->srv = s;
  c->fd = fd;
  c->next = s->conns;
  if (s->conns)
    s->conns->prev = c;
  s->conns = c;
  __atomic_store_n(&s->nconns, s->nconns + 1, __ATOMIC_RELAXED);
  /* A new connection has the head timeout from its accept, not the
   * keep-alive idle timeout: one that never sends a request goes then. */
  c->flags |= F_TIMED;
  timer_start(c, s->lim.read_timeout_ms);
  return c;
}

/* ---- idle connections: the oldest go first when the limit is full ---- */

void gs__http_idle_unlink(struct gs_http_conn *c)
{
  gs_net_idle_set(&c->srv->idle, &c->idle, false);
}

void gs__http_idle_update(struct gs_http_conn *c)
{
  gs_net_idle_set(&c->srv->idle, &c->idle,
                  c->fd >= 0 && c->state == ST_HEAD && c->in_len == 0 && c->out_off == c->out_len &&
                      !(c->flags & (F_CLOSE_AFTER | F_DEAD | F_PEER_EOF)));
}

void gs__http_conn_free(struct gs_http_conn *c)
{
  struct gs_http_server *s = c->srv;
  gs__http_idle_unlink(c);
  timer_stop(c);
  if (c->fd >= 0)
    gs_net_loop_close_fd(s->loop, c->fd);
  if (c->prev)
    c->prev->next = c->next;
  else
    s->conns = c->next;
  if (c->next)
    c->next->prev = c->prev;
  __atomic_store_n(&s->nconns, s->nconns - 1, __ATOMIC_RELAXED);
  if (c->flags & F_COUNTED)
    gs_net_conns_put(s->limit);
  free(c->in);
  free(c->out);
  free(c);
}

void gs__http_conn_close(struct gs_http_conn *c)
{
  bool streaming = c->state == ST_STREAM;
  if (c->state != ST_HANDLER && !streaming) {
    gs__http_conn_free(c);
    return;
  }
  timer_stop(c);
  gs__http_idle_unlink(c);
  if (c->fd >= 0)
    gs_net_loop_close_fd(c->srv->loop, c->fd);
  c->fd = -1;
  c->flags |= F_DEAD;
  if (streaming)
    body_fail(c, 408);
}

/* ---- output ---- */

static bool out_reserve(struct gs_http_conn *c, size_t more)
{
  size_t need = c->out_len + more, cap = c->out_cap ? c->out_cap : 4096;
  char *p;
  if (c->out_off && c->out_off == c->out_len)
    c->out_off = c->out_len = 0, need = more;
  if (need <= c->out_cap)
    return true;
  while (cap < need)
    cap *= 2;
  if (!(p = realloc(c->out, cap)))
    return false;
  c->out = p;
  c->out_cap = cap;
  return true;
}

/* The head of an answer; framing: its Content-Length or Transfer-Encoding
 * line, or "" (the body ends with the connection). room: body bytes to
 * reserve space for. False on no memory. */
static bool send_head(struct gs_http_conn *c, int status, const char *type, const char *extra,
                      const char *framing, size_t room)
{
  char head[512];
  int hl = snprintf(head, sizeof(head),
                    "HTTP/1.1 %d %s\r\nServer: gpuslice\r\n%s%s%s%s%s\r\n", status,
                    gs_http_reason(status), framing, type ? "Content-Type: " : "",
                    type ? type : "", type ? "\r\n" : "", c->keep_alive ? "" : "Connection: close\r\n");
  size_t el = extra ? strlen(extra) : 0;
  if (hl < 0 || (size_t)hl >= sizeof(head) || !out_reserve(c, (size_t)hl + el + room))
    return false;
  /* extra headers go before the blank line that ends the head */
  memcpy(c->out + c->out_len, head, (size_t)hl - 2);
  c->out_len += (size_t)hl - 2;
  if (el)
    memcpy(c->out + c->out_len, extra, el), c->out_len += el;
  memcpy(c->out + c->out_len, "\r\n", 2);
  c->out_len += 2;
  return true;
}

static void send_response(struct gs_http_conn *c, int status, const char *type, const char *extra,
                          const void *body, size_t len)
{
  char framing[48];
  snprintf(framing, sizeof(framing), "Content-Length: %zu\r\n", len);
  if (!send_head(c, status, type, extra, framing, len)) {
    c->flags |= F_CLOSE_AFTER; /* out of memory: the peer sees the connection end */
    return;
  }
  if (len && !c->head_method)
    memcpy(c->out + c->out_len, body, len), c->out_len += len;
  if (!c->keep_alive)
    c->flags |= F_CLOSE_AFTER;
}

static void send_error(struct gs_http_conn *c, int status, const char *msg)
{
  c->head_method = false;
  char body[256];
  int n = snprintf(body, sizeof(body), "{\"error\":\"%s\"}", msg);
  c->keep_alive = false; /* after a framing error the byte stream cannot be trusted */
  c->state = ST_DONE;
  timer_start(c, c->srv->lim.read_timeout_ms); /* a peer that never reads the answer */
  send_response(c, status, "application/json", NULL, body, (size_t)n);
}

/* Closing with unread input makes the kernel send RST, which can destroy
 * the answer (a 413 or 431) before the client reads it. So, as nginx's
 * lingering close: shut our side, discard input until the peer closes or
 * LINGER_MS pass, then close. */
static void linger_or_close(struct gs_http_conn *c)
{
  if (c->fd < 0 || (c->flags & F_PEER_EOF) || c->state == ST_LINGER) {
    gs__http_conn_close(c);
    return;
  }
  c->state = ST_LINGER;
  gs__http_idle_unlink(c);
  shutdown(c->fd, SHUT_WR);
  gs_net_loop_del(c->srv->loop, c->fd, GS_NET_WRITABLE);
  if (gs_net_loop_add(NULL, c->srv->loop, c->fd, GS_NET_READABLE, gs__http_on_io, c) != 0) {
    gs__http_conn_close(c);
    return;
  }
  timer_start(c, LINGER_MS);
}

void gs__http_linger_read(struct gs_http_conn *c)
{
  char sink[16384];
  ssize_t n = recv(c->fd, sink, sizeof(sink), 0);
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
    gs__http_conn_close(c);
}

bool gs__http_conn_flush(struct gs_http_conn *c)
{
  while (c->fd >= 0 && c->out_off < c->out_len) {
    ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      gs__http_idle_update(c);
      if (gs_net_loop_add(NULL, c->srv->loop, c->fd, GS_NET_WRITABLE, gs__http_on_io, c) == 0)
        return true;
      gs__http_conn_close(c);
      return false;
    }
    if (n <= 0) {
      gs__http_conn_close(c);
      return false;
    }
    c->out_off += (size_t)n;
    c->sent += (size_t)n;
  }
  if (c->fd < 0 && !(c->flags & F_DEAD)) { /* in-memory: count and drop */
    c->sent += c->out_len - c->out_off;
    c->out_off = c->out_len;
  }
  c->out_off = c->out_len = 0;
  if (c->fd >= 0)
    gs_net_loop_del(c->srv->loop, c->fd, GS_NET_WRITABLE);
  if ((c->flags & F_OUT_STREAM) && c->srv->drain_fn)
    c->srv->drain_fn(c->user, c); /* room for more of the streamed answer */
  if (c->flags & F_CLOSE_AFTER) {
    linger_or_close(c);
    return false;
  }
  gs__http_idle_update(c);
  return true;
}

/* ---- requests ---- */

/* Framing and connection headers of a parsed head (c->req); 0 or an HTTP status. */
static int read_framing(struct gs_http_conn *c)
{
  struct gs_http_fields f;
  /* RFC 9112 §2.3: we speak 1.0 and 1.1 (picohttpparser reads one minor digit) */
  if (c->req.minor_version > 1)
    return 505;
  if ((c->why = gs_http_fields_read(c->req.headers, c->req.nheaders, c->req.minor_version, &f)))
    return 400;
  c->keep_alive = f.keep_alive;
  c->chunked = f.chunked;
  c->content_length = (size_t)f.length;
  /* RFC 9112 §3.2: an HTTP/1.1 request without Host, or any with two, is 400 */
  if (f.hosts > 1 || (f.hosts == 0 && c->req.minor_version >= 1)) {
    c->why = f.hosts ? "the request has more than one Host header"
                     : "an HTTP/1.1 request needs a Host header";
    return 400;
  }
  if (f.length > c->srv->lim.max_body)
    return 413;
  if (f.expect_continue && (c->chunked || c->content_length) && c->in_len == c->head_len &&
      out_reserve(c, 25)) { /* tell a waiting client (curl) to send the body */
    memcpy(c->out + c->out_len, "HTTP/1.1 100 Continue\r\n\r\n", 25);
    c->out_len += 25;
  }
  return 0;
}

static void fill_request(struct gs_http_conn *c, const struct phr_header *h, size_t nh)
{
  c->method_off = (size_t)(c->req.method - c->in);
  c->path_off = (size_t)(c->req.path - c->in);
  c->req.nheaders = nh;
  gs__http_headers(h, nh, c->req.headers);
  for (size_t i = 0; i < nh; i++) {
    c->hoff[i][0] = (size_t)(h[i].name - c->in);
    c->hoff[i][1] = (size_t)(h[i].value - c->in);
  }
}

/* Points the request at the buffer where it now is. */
static void rebase_request(struct gs_http_conn *c)
{
  c->req.method = c->in + c->method_off;
  c->req.path = c->in + c->path_off;
  for (size_t i = 0; i < c->req.nheaders; i++) {
    c->req.headers[i].name = c->in + c->hoff[i][0];
    c->req.headers[i].value = c->in + c->hoff[i][1];
  }
}

/* 0 = head parsed (state BODY), 1 = need more, else an HTTP status. */
static int parse_head(struct gs_http_conn *c)
{
  struct phr_header h[GS_HTTP_MAX_HEADERS];
  size_t nh = GS_HTTP_MAX_HEADERS;
  int r = phr_parse_request(c->in, c->in_len, &c->req.method, &c->req.method_len, &c->req.path,
                            &c->req.path_len, &c->req.minor_version, h, &nh, 0);
  if (r == -2)
    return c->in_len > c->srv->lim.max_header ? 431 : 1;
  if (r < 0)
    return 400;
  if ((size_t)r > c->srv->lim.max_header)
    return 431;
  for (size_t i = 0; i < nh; i++)
    if (!h[i].name)
      return 400; /* obsolete line folding: refused, as RFC 9112 allows */
  c->head_len = (size_t)r;
  fill_request(c, h, nh);
  c->body_done = 0;
  gs_http_chunked_init(&c->dec);
  c->state = ST_BODY;
  return read_framing(c);
}

/* 0 = body complete, 1 = need more, else an HTTP status. */
static int read_body(struct gs_http_conn *c)
{
  size_t raw, n;
  ssize_t r;
  if (!c->chunked) {
    if (c->in_len - c->head_len < c->content_length)
      return 1;
    c->body_done = c->content_length;
    c->consumed = c->head_len + c->content_length;
    return 0;
  }
  raw = c->head_len + c->body_done; /* undecoded bytes start here */
  n = c->in_len - raw;
  r = gs_http_chunked_decode(&c->dec, c->in + raw, &n, c->srv->lim.max_body);
  if (r == GS_HTTP_CHUNK_BAD || r == GS_HTTP_CHUNK_TOO_BIG)
    return r == GS_HTTP_CHUNK_BAD ? 400 : 413;
  c->body_done += n;
  c->in_len = raw + n + (r > 0 ? (size_t)r : 0);
  if (r == GS_HTTP_CHUNK_MORE)
    return 1;
  c->consumed = c->head_len + c->body_done;
  return 0;
}

static void call_handler(struct gs_http_conn *c)
{
  timer_stop(c);
  c->state = ST_HANDLER;
  rebase_request(c);
  c->head_method = c->req.method_len == 4 && memcmp(c->req.method, "HEAD", 4) == 0;
  c->req.body = c->in + c->head_len;
  c->req.body_len = c->body_done;
  c->req.body_follows = false;
  c->req.keep_alive = c->keep_alive;
  c->srv->fn(c->srv->ctx, c, &c->req);
}

/* The handler answered before the body ended: the rest of it is read and
 * dropped, and the connection closes after the answer (its bytes cannot be
 * told from the next request's without reading them). */
static void early_answer(struct gs_http_conn *c)
{
  c->flags |= F_SKIP;
  c->flags &= ~F_TIMED;
  c->keep_alive = false;
  c->in_len = 0;
  timer_stop(c);
  c->state = ST_HANDLER;
}

/* The body cannot complete (malformed, too large, cut short, timed out, the
 * client gone): the handler learns it through body_fn and answers. */
static void body_fail(struct gs_http_conn *c, int status)
{
  early_answer(c);
  c->srv->body_fn(c->user, c, NULL, 0, status);
}

/* Streaming server: the handler gets the head now, the body as it comes. */
static void stream_head(struct gs_http_conn *c)
{
  c->state = ST_STREAM;
  c->user = NULL;
  rebase_request(c);
  c->head_method = c->req.method_len == 4 && memcmp(c->req.method, "HEAD", 4) == 0;
  c->req.body = NULL;
  c->req.body_len = 0;
  c->req.body_follows = true;
  c->req.keep_alive = c->keep_alive;
  c->srv->fn(c->srv->ctx, c, &c->req);
  if (c->flags & F_SKIP)
    return;
  /* the head's pointers lived only during the call: its bytes can go */
  memmove(c->in, c->in + c->head_len, c->in_len - c->head_len);
  c->in_len -= c->head_len;
  c->head_len = 0;
}

/* Hands the body bytes read (buffered, or read into the handler's space) to
 * body_fn; true when the next request may be parsed at once. */
static bool stream_body(struct gs_http_conn *c)
{
  const char *data = c->direct ? c->direct : c->in;
  size_t n = c->direct ? c->direct_len : c->in_len, left;
  ssize_t r = 0;
  bool end, direct = c->direct != NULL;
  c->direct = NULL;
  if (c->chunked) {
    r = gs_http_chunked_decode(&c->dec, c->in, &n, c->srv->lim.max_body);
    if (r == GS_HTTP_CHUNK_BAD || r == GS_HTTP_CHUNK_TOO_BIG) {
      body_fail(c, r == GS_HTTP_CHUNK_BAD ? 400 : 413);
      return false;
    }
  } else if (n > c->content_length - c->body_done) {
    n = c->content_length - c->body_done;
  }
  c->body_done += n;
  if (c->body_done > c->srv->lim.max_body) {
    body_fail(c, 413);
    return false;
  }
  /* what follows the body (a pipelined request) stays */
  left = direct ? 0 : c->chunked ? (r > 0 ? (size_t)r : 0) : c->in_len - n;
  end = c->chunked ? r >= 0 : c->body_done == c->content_length;
  if (end) {
    timer_stop(c);
    c->flags &= ~F_TIMED;
    c->state = ST_HANDLER;
  }
  if (n || end)
    c->srv->body_fn(c->user, c, data, n, end ? GS_HTTP_BODY_END : GS_HTTP_BODY_MORE);
  if (c->flags & F_SKIP)
    return false; /* answered early: early_answer emptied the buffer */
  if (!direct) {
    memmove(c->in, c->in + n, left);
    c->in_len = left;
  }
  return c->state == ST_HEAD;
}

/* Drops the bytes of the request just answered (pipelined ones move up). */
static void drop_consumed(struct gs_http_conn *c)
{
  if (!c->consumed)
    return;
  memmove(c->in, c->in + c->consumed, c->in_len - c->consumed);
  c->in_len -= c->consumed;
  c->consumed = 0;
}

/* One step of the request state machine; false when it must wait. */
static bool step(struct gs_http_conn *c)
{
  static const char *const why[] = {[400] = "malformed HTTP request",
                                    [413] = "request body larger than the server accepts",
                                    [431] = "request header larger than the server accepts",
                                    [505] = "only HTTP/1.0 and HTTP/1.1 are served"};
  int r;
  if (c->state == ST_HEAD) {
    drop_consumed(c);
    if (c->out_len - c->out_off > OUT_HIGH_WATER || (c->flags & F_CLOSE_AFTER))
      return false; /* resumes when the output drains */
    if (c->in_len == 0)
      return false;
    if (!(c->flags & F_TIMED)) { /* the clock for this request starts at its first byte */
      c->flags |= F_TIMED;
      timer_start(c, c->srv->lim.read_timeout_ms);
    }
    r = parse_head(c);
  } else if (c->state == ST_BODY && c->srv->body_fn && (c->chunked || c->content_length)) {
    stream_head(c);
    return c->state == ST_STREAM;
  } else if (c->state == ST_STREAM) {
    return stream_body(c);
  } else if (c->state == ST_BODY) {
    r = read_body(c);
    if (r == 0) {
      c->flags &= ~F_TIMED;
      call_handler(c);
      return true;
    }
  } else {
    return false;
  }
  if (r > 1) {
    send_error(c, r, c->why ? c->why : why[r]);
    c->why = NULL;
    return false;
  }
  return r == 0;
}

bool gs__http_process(struct gs_http_conn *c)
{
  c->flags |= F_IN_PROCESS;
  while (step(c) && !(c->flags & F_DEAD))
    ;
  if (c->state == ST_STREAM && (c->flags & F_PEER_EOF))
    body_fail(c, 400); /* the body was cut short (its answer must not re-enter here) */
  c->flags &= ~F_IN_PROCESS;
  if (c->flags & F_DEAD)
    return false; /* the handler still holds it */
  if (c->state == ST_HEAD && c->in_len == 0 && !(c->flags & F_TIMED) && !c->timer)
    timer_start(c, c->srv->lim.idle_timeout_ms);
  if ((c->state == ST_HEAD || c->state == ST_BODY) && (c->flags & F_PEER_EOF))
    /* nothing more can complete */
    c->flags |= F_CLOSE_AFTER;
  return gs__http_conn_flush(c);
}

/* The answer is all queued: on to the next request. */
static void answered(struct gs_http_conn *c)
{
  c->state = ST_HEAD;
  if (!c->keep_alive)
    c->flags |= F_CLOSE_AFTER;
  gs_http_pause(c, false);
  if (!(c->flags & F_IN_PROCESS))
    (void)gs__http_process(c);
}

void gs_http_respond(struct gs_http_conn *c, int status, const char *content_type,
                     const char *extra, const void *body, size_t len)
{
  if (c->state == ST_STREAM)
    early_answer(c);
  if (c->state != ST_HANDLER || (c->flags & F_OUT_STREAM))
    return; /* not this connection's turn: a handler bug, ignored */
  if (c->flags & F_DEAD) {
    c->state = ST_DONE;
    gs__http_conn_free(c);
    return;
  }
  send_response(c, status, content_type, extra, body, len);
  answered(c);
}

void gs_http_respond_start(struct gs_http_conn *c, int status, const char *content_type,
                           const char *extra, int64_t len)
{
  char framing[48] = "";
  if (c->state == ST_STREAM)
    early_answer(c);
  if (c->state != ST_HANDLER || (c->flags & F_OUT_STREAM))
    return;
  c->flags |= F_OUT_STREAM;
  if (c->flags & F_DEAD)
    return;
  if (len >= 0)
    snprintf(framing, sizeof(framing), "Content-Length: %lld\r\n", (long long)len);
  else if (c->req.minor_version >= 1)
    snprintf(framing, sizeof(framing), "Transfer-Encoding: chunked\r\n"),
        c->flags |= F_OUT_CHUNKED;
  else
    c->keep_alive = false; /* an HTTP/1.0 client: the end of the body is the close */
  if (!send_head(c, status, content_type, extra, framing, 0))
    gs__http_conn_close(c); /* out of memory: the peer sees the connection end */
  /* the head goes out with the first body bytes (gs_http_respond_data) */
}

size_t gs_http_respond_data(struct gs_http_conn *c, const void *data, size_t len)
{
  char size[24];
  int sl = 0;
  if (c->state != ST_HANDLER || !(c->flags & F_OUT_STREAM) || c->fd < 0)
    return 0; /* gone (or in memory): the bytes are dropped */
  if (!len || c->head_method)
    len = 0; /* still flushes: the head may wait */
  else if (c->flags & F_OUT_CHUNKED)
    sl = snprintf(size, sizeof(size), "%zx\r\n", len);
  if (len && !out_reserve(c, (size_t)sl + len + 2)) {
    gs__http_conn_close(c);
    return 0;
  }
  if (len) {
    memcpy(c->out + c->out_len, size, (size_t)sl);
    memcpy(c->out + c->out_len + sl, data, len);
    c->out_len += (size_t)sl + len;
  }
  if (sl)
    memcpy(c->out + c->out_len, "\r\n", 2), c->out_len += 2;
  if (!gs__http_conn_flush(c) || c->fd < 0)
    return 0;
  return c->out_len - c->out_off;
}

void gs_http_respond_end(struct gs_http_conn *c)
{
  bool chunked = c->flags & F_OUT_CHUNKED;
  if (c->state != ST_HANDLER || !(c->flags & F_OUT_STREAM))
    return;
  c->flags &= ~(F_OUT_STREAM | F_OUT_CHUNKED);
  if (c->flags & F_DEAD) {
    c->state = ST_DONE;
    gs__http_conn_free(c);
    return;
  }
  if (chunked && !c->head_method) {
    if (out_reserve(c, 5))
      memcpy(c->out + c->out_len, "0\r\n\r\n", 5), c->out_len += 5;
    else
      c->keep_alive = false;
  }
  answered(c);
}

void gs_http_respond_abort(struct gs_http_conn *c)
{
  if (c->state != ST_HANDLER && c->state != ST_STREAM)
    return;
  c->state = ST_DONE;
  gs__http_conn_free(c);
}

void gs_http_bind(struct gs_http_conn *c, void *user)
{
  c->user = user;
}

void gs_http_pause(struct gs_http_conn *c, bool paused)
{
  if (paused == !!(c->flags & F_PAUSED))
    return;
  c->flags ^= F_PAUSED;
  if (c->fd < 0)
    return;
  if (paused)
    gs_net_loop_del(c->srv->loop, c->fd, GS_NET_READABLE);
  else if (!(c->flags & F_PEER_EOF) &&
           gs_net_loop_add(NULL, c->srv->loop, c->fd, GS_NET_READABLE, gs__http_on_io, c) != 0)
    c->flags |= F_PAUSED; /* cannot watch it: stays paused until the answer closes it */
}

void gs_http_respond_error(struct gs_http_conn *c, int status, const char *fmt, ...)
{
  char msg[1024], body[2200];
  size_t o = 0;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  o = (size_t)snprintf(body, sizeof(body), "{\"error\":\"");
  for (const char *p = msg; *p && o + 8 < sizeof(body); p++) {
    unsigned char ch = (unsigned char)*p;
    if (ch == '"' || ch == '\\')
      body[o++] = '\\', body[o++] = (char)ch;
    else if (ch < 0x20)
      o += (size_t)snprintf(body + o, sizeof(body) - o, "\\u%04x", ch);
    else
      body[o++] = (char)ch;
  }
  o += (size_t)snprintf(body + o, sizeof(body) - o, "\"}");
  gs_http_respond(c, status, "application/json", NULL, body, o);
}
