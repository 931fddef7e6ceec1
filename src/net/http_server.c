/* SPDX-License-Identifier: Apache-2.0 */
/* http_server.c: the HTTP/1.1 server's sockets: reading a connection into
 * its buffer (or straight into the handler's space for a body), accepting
 * under the connection limit (the oldest idle connection evicted for a new
 * one), threads routing connections to each other, the server's life, and
 * connections without a socket for the fuzz target. What a connection does
 * with its bytes is http.c's. */
#include "net/http_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

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
    gs__http_linger_read(c);
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
    gs__http_conn_close(c);
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
    (void)gs__http_process(c);
}

void gs__http_on_io(struct gs_net_loop *loop, int fd, void *data, unsigned mask)
{
  struct gs_http_conn *c = data;
  (void)fd;
  if (mask & GS_NET_WRITABLE) {
    if (!gs__http_conn_flush(c))
      return;
    /* output drained: take pipelined requests again */
    if (c->state == ST_HEAD && c->out_len == 0 && !gs__http_process(c))
      return;
  }
  if (mask & GS_NET_READABLE && gs_net_loop_mask(loop, fd) & GS_NET_READABLE)
    on_readable(c);
}

int gs_http_server_adopt(struct gs_http_server *s, int fd)
{
  struct gs_http_conn *c = gs__http_conn_new(s, fd);
  if (!c) {
    gs_net_conns_put(s->limit);
    close(fd);
    return GS_E_NO_MEMORY;
  }
  c->flags |= F_COUNTED;
  if (gs_net_loop_add(NULL, s->loop, fd, GS_NET_READABLE, gs__http_on_io, c) != 0) {
    gs__http_conn_free(c);
    return GS_E_IO;
  }
  gs__http_idle_update(c);
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
      gs__http_idle_unlink(c);
      continue;
    }
    gs__http_conn_close(c);
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
  gs__net_server_setup(&s->lim, l, &s->listen_fd);
  s->fn = fn;
  s->ctx = ctx;
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
  return gs__net_server_listen(err, s->loop, &s->listen_fd, fd,
                               GS_NET_READABLE | GS_NET_EXCLUSIVE, on_accept, s);
}

void gs_http_server_free(struct gs_http_server *s)
{
  if (!s)
    return;
  while (s->conns)
    gs__http_conn_free(s->conns);
  gs__net_server_unlisten(s->loop, &s->listen_fd);
  free(s);
}

unsigned gs_http_server_conns(const struct gs_http_server *s)
{
  return __atomic_load_n(&s->nconns, __ATOMIC_RELAXED);
}

/* ---- in-memory connections (internal.h) ---- */

struct gs_http_conn *gs__http_conn_mem(struct gs_http_server *s)
{
  return gs__http_conn_new(s, -1);
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
    if (c->state != ST_HANDLER && !gs__http_process(c))
      return false;
  }
  return true;
}

size_t gs__http_conn_sent(const struct gs_http_conn *c)
{
  return c->sent;
}
