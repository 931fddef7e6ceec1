/* http.c: a small HTTP/1.1 server on the net event loop: picohttpparser for
 * the request head, http1.c's strict decoder for chunked bodies, keep-alive,
 * pipelined requests answered in order, limits (431, 413, 400, 505, the
 * head and slowloris timeouts; when the connection limit is full the oldest
 * idle connection goes) and Content-Length responses. It knows nothing of
 * KServe; the worker (src/worker) and the load balancer (src/serve) put
 * their handlers on top. A streaming server (the proxy's) hands request
 * bodies over as they arrive, with a pause for backpressure, and takes
 * responses in pieces (Content-Length or chunked). */
#include "net/internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#define OUT_HIGH_WATER (4u << 20) /* stop taking pipelined requests above this */
#define READ_CHUNK 65536u
#define LINGER_MS 2000u /* at most this long discarding a closing peer's input */

enum conn_state {
  ST_HEAD,    /* reading a request head */
  ST_BODY,    /* reading its body */
  ST_STREAM,  /* streaming server: the handler has the head; body bytes go to body_fn */
  ST_HANDLER, /* the handler owns the request until gs_http_respond */
  ST_DONE,    /* answering an error; closing once the answer is out */
  ST_LINGER,  /* answer sent, our side shut: discarding input until the peer closes */
};

enum conn_flag {
  F_PEER_EOF = 1u << 0,    /* the peer closed its side (no more input) */
  F_CLOSE_AFTER = 1u << 1, /* close once the output is flushed */
  F_DEAD = 1u << 2,        /* socket gone while the handler held the request */
  F_IN_PROCESS = 1u << 3,  /* inside process(): respond must not re-enter it */
  F_TIMED = 1u << 4,       /* the read timer runs for the current request */
  F_SKIP = 1u << 5,        /* answered before its body ended: input is discarded */
  F_PAUSED = 1u << 6,      /* gs_http_pause: not reading */
  F_OUT_STREAM = 1u << 7,  /* a response started by gs_http_respond_start is under way */
  F_OUT_CHUNKED = 1u << 8, /* ... framed with chunks */
  F_COUNTED = 1u << 9,     /* accepted: counted in the server's connection limit */
};

struct gs_http_conn {
  struct gs_http_server *srv;
  struct gs_http_conn *prev, *next;
  int fd; /* -1: in-memory connection (fuzzing) */
  enum conn_state state;
  unsigned flags;
  char *in, *out;
  size_t in_len, in_cap, out_len, out_off, out_cap, sent;
  uint64_t timer;
  /* the current request; its head as offsets into `in`, which may move
   * (grow) while the body arrives */
  struct gs_http_request req;
  size_t method_off, path_off, hoff[GS_HTTP_MAX_HEADERS][2];
  size_t head_len, content_length, body_done, consumed;
  bool chunked, keep_alive, head_method; /* HEAD: answer without a body */
  struct gs_http_chunked dec;
  void *user; /* gs_http_bind: given to the body and drain callbacks */
  char *direct; /* body bytes just read into the handler's space (buf_fn), not into `in` */
  size_t direct_len;
  const char *why; /* the message of a request error, when more precise than its status's */
  struct gs_net_idle_node idle; /* on the server's idle list: no request, nothing to send */
};

struct gs_http_server {
  struct gs_net_loop *loop;
  struct gs_http_limits lim;
  gs_http_handler_fn *fn;
  void *ctx;
  gs_http_body_fn *body_fn; /* non-NULL: a streaming server */
  gs_http_drain_fn *drain_fn;
  gs_http_body_buf_fn *buf_fn;
  gs_http_route_fn *route_fn;
  void *route_ctx;
  struct gs_net_conns own, *limit; /* limit: &own, or shared (gs_http_server_share_conns) */
  int listen_fd;
  unsigned nconns; /* written by the server's thread, read by any (relaxed atomics) */
  struct gs_http_conn *conns;
  struct gs_net_idle_list idle;
};

static bool process(struct gs_http_conn *c);
static void conn_close(struct gs_http_conn *c);
static void body_fail(struct gs_http_conn *c, int status);
static bool conn_flush(struct gs_http_conn *c);

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
  conn_close(c); /* idle past keep-alive, or a request sent too slowly */
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

/* ---- lifetime ---- */

static struct gs_http_conn *conn_new(struct gs_http_server *s, int fd)
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

static void idle_unlink(struct gs_http_conn *c)
{
  gs_net_idle_set(&c->srv->idle, &c->idle, false);
}

/* Keeps c on the idle list while it waits for a request's first byte with
 * nothing to send (new, or kept alive after an answer). */
static void idle_update(struct gs_http_conn *c)
{
  gs_net_idle_set(&c->srv->idle, &c->idle,
                  c->fd >= 0 && c->state == ST_HEAD && c->in_len == 0 && c->out_off == c->out_len &&
                      !(c->flags & (F_CLOSE_AFTER | F_DEAD | F_PEER_EOF)));
}

static void conn_free(struct gs_http_conn *c)
{
  struct gs_http_server *s = c->srv;
  idle_unlink(c);
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

/* While the handler holds the request the memory must stay: the socket goes,
 * the struct waits for gs_http_respond. A handler still taking the body is
 * told (408), and its answer frees the connection. */
static void conn_close(struct gs_http_conn *c)
{
  bool streaming = c->state == ST_STREAM;
  if (c->state != ST_HANDLER && !streaming) {
    conn_free(c);
    return;
  }
  timer_stop(c);
  idle_unlink(c);
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

static void on_io(struct gs_net_loop *loop, int fd, void *data, unsigned mask);

/* Closing with unread input makes the kernel send RST, which can destroy
 * the answer (a 413 or 431) before the client reads it. So, as nginx's
 * lingering close: shut our side, discard input until the peer closes or
 * LINGER_MS pass, then close. */
static void linger_or_close(struct gs_http_conn *c)
{
  if (c->fd < 0 || (c->flags & F_PEER_EOF) || c->state == ST_LINGER) {
    conn_close(c);
    return;
  }
  c->state = ST_LINGER;
  idle_unlink(c);
  shutdown(c->fd, SHUT_WR);
  gs_net_loop_del(c->srv->loop, c->fd, GS_NET_WRITABLE);
  if (gs_net_loop_add(NULL, c->srv->loop, c->fd, GS_NET_READABLE, on_io, c) != 0) {
    conn_close(c);
    return;
  }
  timer_start(c, LINGER_MS);
}

static void linger_read(struct gs_http_conn *c)
{
  char sink[16384];
  ssize_t n = recv(c->fd, sink, sizeof(sink), 0);
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
    conn_close(c);
}

/* Writes what it can; the rest waits for EPOLLOUT. Closes on error, or when
 * everything is out and the connection is to end; false then (c may be gone). */
static bool conn_flush(struct gs_http_conn *c)
{
  while (c->fd >= 0 && c->out_off < c->out_len) {
    ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      idle_update(c);
      if (gs_net_loop_add(NULL, c->srv->loop, c->fd, GS_NET_WRITABLE, on_io, c) == 0)
        return true;
      conn_close(c);
      return false;
    }
    if (n <= 0) {
      conn_close(c);
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
  idle_update(c);
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

/* Runs the state machine as far as the buffered bytes go; false when the
 * connection ended (c may be freed, or dead and held by the handler). */
static bool process(struct gs_http_conn *c)
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
  return conn_flush(c);
}

/* The answer is all queued: on to the next request. */
static void answered(struct gs_http_conn *c)
{
  c->state = ST_HEAD;
  if (!c->keep_alive)
    c->flags |= F_CLOSE_AFTER;
  gs_http_pause(c, false);
  if (!(c->flags & F_IN_PROCESS))
    (void)process(c);
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
    conn_free(c);
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
    conn_close(c); /* out of memory: the peer sees the connection end */
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
    conn_close(c);
    return 0;
  }
  if (len) {
    memcpy(c->out + c->out_len, size, (size_t)sl);
    memcpy(c->out + c->out_len + sl, data, len);
    c->out_len += (size_t)sl + len;
  }
  if (sl)
    memcpy(c->out + c->out_len, "\r\n", 2), c->out_len += 2;
  if (!conn_flush(c) || c->fd < 0)
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
    conn_free(c);
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
  conn_free(c);
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
           gs_net_loop_add(NULL, c->srv->loop, c->fd, GS_NET_READABLE, on_io, c) != 0)
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

/* ---- socket events ---- */

static bool in_reserve(struct gs_http_conn *c)
{
  const struct gs_http_limits *l = &c->srv->lim;
  size_t limit = l->max_header + l->max_body + READ_CHUNK, cap;
  /* a streamed body leaves the buffer at each read: read it in large pieces */
  size_t want = c->state == ST_STREAM ? READ_CHUNK : READ_CHUNK / 4;
  char *p;
  if (c->in_cap - c->in_len >= want || c->in_cap >= limit)
    return c->in_len < c->in_cap;
  cap = c->in_cap ? c->in_cap * 2 : 8192;
  while (cap < c->in_len + want && cap < limit)
    cap *= 2;
  if (cap > limit)
    cap = limit;
  if (!(p = realloc(c->in, cap)))
    return c->in_len < c->in_cap;
  c->in = p;
  c->in_cap = cap;
  return true;
}

/* A Content-Length body with nothing buffered goes straight into the space
 * the handler offers (buf_fn), when it offers one; else NULL. */
static char *direct_space(struct gs_http_conn *c, size_t *room)
{
  size_t want = c->content_length - c->body_done;
  char *p;
  if (c->state != ST_STREAM || c->chunked || c->in_len || !c->srv->buf_fn || !c->user ||
      (c->flags & F_SKIP) || !want)
    return NULL;
  if (want > GS_HTTP_BODY_READ_MAX)
    want = GS_HTTP_BODY_READ_MAX;
  if (!(p = c->srv->buf_fn(c->user, c, want, room)) || !*room)
    return NULL;
  /* never past the body: what follows it is the next request's, read as usual */
  if (*room > c->content_length - c->body_done)
    *room = c->content_length - c->body_done;
  return p;
}

static void on_readable(struct gs_http_conn *c)
{
  ssize_t n;
  size_t room;
  char *direct, *to;
  if (c->state == ST_LINGER) {
    linger_read(c);
    return;
  }
  if (c->state == ST_HANDLER && c->in_len >= c->srv->lim.max_header) {
    /* pipelined bytes wait in the socket, not here, until the answer */
    gs_http_pause(c, true);
    return;
  }
  if ((direct = direct_space(c, &room)) != NULL) {
    to = direct;
  } else if (!in_reserve(c)) { /* full: wait until the handler answers and bytes move */
    gs_net_loop_del(c->srv->loop, c->fd, GS_NET_READABLE);
    return;
  } else {
    to = c->in + c->in_len;
    room = c->in_cap - c->in_len;
  }
  n = recv(c->fd, to, room, 0);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
    return;
  if (n < 0) {
    conn_close(c);
    return;
  }
  if (n == 0) {
    c->flags |= F_PEER_EOF;
    gs_net_loop_del(c->srv->loop, c->fd, GS_NET_READABLE);
  }
  if (!direct)
    c->in_len += (size_t)n;
  else if (n > 0) {
    c->direct = direct;
    c->direct_len = (size_t)n;
  }
  if (c->flags & F_SKIP)
    c->in_len = 0;
  if (c->state != ST_HANDLER)
    (void)process(c);
}

static void on_io(struct gs_net_loop *loop, int fd, void *data, unsigned mask)
{
  struct gs_http_conn *c = data;
  (void)fd;
  if (mask & GS_NET_WRITABLE) {
    if (!conn_flush(c))
      return;
    /* output drained: take pipelined requests again */
    if (c->state == ST_HEAD && c->out_len == 0 && !process(c))
      return;
  }
  if (mask & GS_NET_READABLE && gs_net_loop_mask(loop, fd) & GS_NET_READABLE)
    on_readable(c);
}

int gs_http_server_adopt(struct gs_http_server *s, int fd)
{
  struct gs_http_conn *c = conn_new(s, fd);
  if (!c) {
    gs_net_conns_put(s->limit);
    close(fd);
    return GS_E_NO_MEMORY;
  }
  c->flags |= F_COUNTED;
  if (gs_net_loop_add(NULL, s->loop, fd, GS_NET_READABLE, on_io, c) != 0) {
    conn_free(c);
    return GS_E_IO;
  }
  idle_update(c);
  return 0;
}

/* gs_net_accept's evict_fn: closes the server's oldest idle connection to
 * admit a new one when the limit is full, as nginx and HAProxy do. One
 * whose next request already waits in its socket is not idle: it is left
 * (and read on its next event). False when none is idle. */
static bool evict_idle(void *ctx)
{
  struct gs_http_server *s = ctx;
  char b;
  while (s->idle.first) {
    struct gs_http_conn *c =
        (struct gs_http_conn *)((char *)s->idle.first - offsetof(struct gs_http_conn, idle));
    if (recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) > 0) {
      idle_unlink(c);
      continue;
    }
    conn_close(c);
    return true;
  }
  return false;
}

static void on_accept(struct gs_net_loop *loop, int fd, void *data, unsigned mask)
{
  struct gs_http_server *s = data;
  int cfd;
  (void)loop;
  (void)mask;
  while ((cfd = gs_net_accept(fd, s->limit, evict_idle, s)) >= 0)
    if (!s->route_fn || !s->route_fn(s->route_ctx, cfd))
      (void)gs_http_server_adopt(s, cfd);
}

void gs_http_server_route(struct gs_http_server *s, gs_http_route_fn *fn, void *ctx)
{
  s->route_fn = fn;
  s->route_ctx = ctx;
}

/* ---- server ---- */

int gs_http_server_new(struct gs_err *err, struct gs_net_loop *loop, const struct gs_http_limits *l,
                       gs_http_handler_fn *fn, void *ctx, struct gs_http_server **out)
{
  struct gs_http_server *s = calloc(1, sizeof(*s));
  *out = NULL;
  if (!s)
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory creating an HTTP server");
  s->loop = loop;
  if (l)
    s->lim = *l;
  else
    gs_http_limits_default(&s->lim);
  s->fn = fn;
  s->ctx = ctx;
  s->listen_fd = -1;
  s->own.max = s->lim.max_conns;
  s->limit = &s->own;
  *out = s;
  return 0;
}

void gs_http_server_stream(struct gs_http_server *s, gs_http_body_fn *body_fn,
                           gs_http_drain_fn *drain_fn, gs_http_body_buf_fn *buf_fn)
{
  s->body_fn = body_fn;
  s->drain_fn = drain_fn;
  s->buf_fn = buf_fn;
}

void gs_http_server_share_conns(struct gs_http_server *s, struct gs_net_conns *lim)
{
  s->limit = lim;
}

int gs_http_server_listen_fd(struct gs_err *err, struct gs_http_server *s, int fd)
{
  /* exclusive: of the threads accepting from one socket, one wakes per connection */
  int rc = gs_net_loop_add(err, s->loop, fd, GS_NET_READABLE | GS_NET_EXCLUSIVE, on_accept, s);
  if (rc == 0)
    s->listen_fd = fd;
  return rc;
}

void gs_http_server_free(struct gs_http_server *s)
{
  if (!s)
    return;
  while (s->conns)
    conn_free(s->conns);
  if (s->listen_fd >= 0)
    gs_net_loop_close_fd(s->loop, s->listen_fd);
  free(s);
}

unsigned gs_http_server_conns(const struct gs_http_server *s)
{
  return __atomic_load_n(&s->nconns, __ATOMIC_RELAXED);
}

/* ---- in-memory connections (internal.h) ---- */

struct gs_http_conn *gs__http_conn_mem(struct gs_http_server *s)
{
  return conn_new(s, -1);
}

bool gs__http_conn_feed(struct gs_http_conn *c, const void *data, size_t len, bool eof)
{
  while (len || eof) {
    size_t n;
    if (!in_reserve(c))
      return true; /* full: as on a socket, the rest waits */
    n = len < c->in_cap - c->in_len ? len : c->in_cap - c->in_len;
    memcpy(c->in + c->in_len, data, n);
    c->in_len += n;
    data = (const char *)data + n;
    len -= n;
    if (!len && eof)
      c->flags |= F_PEER_EOF, eof = false;
    if (c->state != ST_HANDLER && !process(c))
      return false;
  }
  return true;
}

void gs__http_conn_free(struct gs_http_conn *c)
{
  conn_free(c);
}

size_t gs__http_conn_sent(const struct gs_http_conn *c)
{
  return c->sent;
}
