/* SPDX-License-Identifier: Apache-2.0 */
/* proxy_upstream.c: the load balancer's connections to its workers: a pool
 * of kept-alive connections per worker, non-blocking connects, the request
 * written as the client's bytes come, the answer read by net's response
 * reader and streamed to the client, with backpressure both ways; one retry
 * on another worker when a worker fails before any of its answer reached
 * the client, a 502 after. It knows requests (proxy.c) only through their
 * buffers and their client connection. */
#include "serve/proxy_internal.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <sys/socket.h>

void gs__proxy_drop_idle(struct pworker *wk)
{
  while (wk->idle) {
    struct upconn *uc = wk->idle;
    wk->idle = uc->next;
    gs__proxy_up_close(uc);
  }
  wk->nidle = 0;
}

static void up_reset(struct upconn *uc)
{
  uc->ctype = NULL;
  uc->in_len = uc->sent = uc->leftover = 0;
  uc->head_done = uc->keep = uc->paused = false;
}

void gs__proxy_up_close(struct upconn *uc)
{
  gs_net_loop_close_fd(uc->p->loop, uc->fd);
  free(uc->in);
  free(uc->extra);
  free(uc);
}

struct upconn *gs__proxy_up_connect(struct gs_proxy *p, struct pworker *wk)
{
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)wk->port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  struct upconn *uc = calloc(1, sizeof(*uc));
  int one = 1;
  if (!uc)
    return NULL;
  uc->p = p;
  uc->wk = wk;
  uc->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (uc->fd < 0) {
    free(uc);
    return NULL;
  }
  setsockopt(uc->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if ((connect(uc->fd, (struct sockaddr *)&a, sizeof(a)) < 0 && errno != EINPROGRESS) ||
      gs_net_loop_add(NULL, p->loop, uc->fd, GS_NET_READABLE | GS_NET_WRITABLE, gs__proxy_on_up_io, uc) !=
          0) {
    gs__proxy_up_close(uc);
    return NULL;
  }
  up_reset(uc);
  return uc;
}

/* Back to the idle pool if the exchange ended cleanly, else closed. */
static void up_release(struct upconn *uc)
{
  struct pworker *wk = uc->wk;
  struct gs_proxy *p = uc->p;
  uc->req = NULL;
  if (!uc->keep || uc->leftover || !usable(wk) || wk->nidle >= p->cfg.idle_pool ||
      gs_net_loop_add(NULL, p->loop, uc->fd, GS_NET_READABLE, gs__proxy_on_up_io, uc) != 0) {
    gs__proxy_up_close(uc);
    return;
  }
  gs_net_loop_del(p->loop, uc->fd, GS_NET_WRITABLE);
  up_reset(uc);
  uc->next = wk->idle;
  wk->idle = uc;
  wk->nidle++;
}

static void idle_remove(struct upconn *uc)
{
  struct upconn **pp = &uc->wk->idle;
  while (*pp && *pp != uc)
    pp = &(*pp)->next;
  if (*pp) {
    *pp = uc->next;
    uc->wk->nidle--;
  }
}

void gs__proxy_up_retry(struct upconn *uc, bool stale, const char *why)
{
  struct preq *r = uc->req;
  struct pworker *wk = uc->wk;
  if (!stale)
    gs__proxy_worker_failed(r->p, wk);
  gs__proxy_req_detach(r);
  gs__proxy_up_close(uc);
  /* Its pooled siblings most likely died with it (a killed worker): the
   * next try opens a fresh connection, whose failure is the worker's. */
  gs__proxy_drop_idle(wk);
  if (r->attempts >= MAX_ATTEMPTS || (!stale && r->retried)) {
    gs__proxy_req_error(r, 502, "worker %zu %s, and so did the retry", wk->id, why);
    return;
  }
  if (r->base) {
    gs__proxy_req_error(r, 502, "worker %zu %s; the request outgrew the %u KiB kept for a retry", wk->id,
              why, RETRY_KEEP >> 10);
    return;
  }
  if (!stale)
    r->retried = true;
  gs__proxy_dispatch(r, stale ? NULL : wk);
}

void gs__proxy_up_failed_early(struct upconn *uc)
{
  gs__proxy_up_retry(uc, uc->reused, "failed before answering");
}

static void up_failed_late(struct upconn *uc, const char *why)
{
  struct preq *r = uc->req;
  struct pworker *wk = uc->wk;
  gs__proxy_worker_failed(r->p, wk);
  gs__proxy_req_detach(r);
  gs__proxy_up_close(uc);
  gs__proxy_req_error(r, 502, "worker %zu: %s", wk->id, why);
}

bool gs__proxy_up_write(struct upconn *uc)
{
  struct preq *r = uc->req;
  struct gs_net_loop *loop = uc->p->loop;
  while (uc->sent < r->base + r->out_len) {
    size_t off = uc->sent - r->base;
    ssize_t n = send(uc->fd, r->out + off, r->out_len - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      return gs_net_loop_add(NULL, loop, uc->fd, GS_NET_WRITABLE, gs__proxy_on_up_io, uc) == 0;
    if (n <= 0)
      return false;
    uc->sent += (size_t)n;
  }
  gs_net_loop_del(loop, uc->fd, GS_NET_WRITABLE);
  if (r->paused) {
    r->paused = false;
    gs_http_pause(r->client, false);
  }
  if (r->body_done && !r->fb_timer && !uc->head_done && !uc->in_len)
    r->fb_timer =
        gs_net_loop_timer_add(loop, uc->p->cfg.first_byte_ms * 1000ull, gs__proxy_on_first_byte_timeout, r);
  return true;
}

/* Headers not passed on to the client: those of one hop (the hop-by-hop
 * ones and any the answer's Connection headers name), and those that
 * gs_http_respond writes itself. */
static bool hop_response_header(const struct gs_http_header *h, const struct gs_http_header *conn,
                                size_t nconn)
{
  return gs__proxy_name_is(h, "content-length") || gs__proxy_name_is(h, "content-type") || gs__proxy_name_is(h, "server") ||
         gs_http_hop_header(h->name, h->name_len, conn, nconn);
}

/* The answer's headers the client gets, in extra, and its Content-Type;
 * false on no memory. */
static bool pass_headers(struct upconn *uc)
{
  const struct gs_http_resp *rs = &uc->resp;
  /* Each passed-on line is at most one byte longer than in the head
   * ("Name:value" gains a space), so this holds them all. */
  size_t el = 0, cap = rs->head_len + rs->nheaders + 1, nconn = 0;
  struct gs_http_header conn[GS_HTTP_MAX_HEADERS];
  for (size_t i = 0; i < rs->nheaders; i++)
    if (gs__proxy_name_is(&rs->headers[i], "connection"))
      conn[nconn++] = rs->headers[i];
  /* Content-Type after them: no allocation per answer once the buffer is big enough */
  if (uc->extra_cap < cap + rs->head_len + 1) {
    free(uc->extra);
    uc->extra_cap = 0;
    if (!(uc->extra = malloc(cap + rs->head_len + 1)))
      return false;
    uc->extra_cap = cap + rs->head_len + 1;
  }
  for (size_t i = 0; i < rs->nheaders; i++) {
    const struct gs_http_header *h = &rs->headers[i];
    if (gs__proxy_name_is(h, "content-type") && !uc->ctype) {
      uc->ctype = uc->extra + cap;
      memcpy(uc->ctype, h->value, h->value_len);
      uc->ctype[h->value_len] = 0;
    }
    if (!hop_response_header(h, conn, nconn) && el + h->name_len + h->value_len + 4 < cap)
      el += (size_t)sprintf(uc->extra + el, "%.*s: %.*s\r\n", (int)h->name_len, h->name,
                            (int)h->value_len, h->value);
  }
  uc->extra[el] = 0;
  return true;
}

/* 0 = head read, 1 = need more, -1 = malformed (net's response reader's
 * rules: docs/architecture.md) or larger than UP_MAX_HEAD. */
static int parse_up_head(struct upconn *uc)
{
  int rc = gs_http_resp_head(&uc->resp, uc->in, &uc->in_len, UP_MAX_HEAD);
  if (rc != GS_HTTP_RESP_DONE)
    return rc == GS_HTTP_RESP_MORE ? 1 : -1;
  uc->head_done = true;
  uc->keep = uc->resp.keep_alive;
  return pass_headers(uc) ? 0 : -1;
}

/* The exchange ended: the client's answer is completed (or, with no body,
 * made now), the connection pooled. */
static void up_complete(struct upconn *uc)
{
  struct preq *r = uc->req;
  struct gs_http_conn *client = r->client;
  struct pworker *wk = uc->wk;
  uint64_t us = gs_net_loop_now_us() - r->start_us;
  bool started = r->started;
  gs__proxy_worker_answered(r->p, wk, r->trial);
  gs__proxy_hist_add(&wk->latency, us);
  gs__proxy_hist_add(&r->p->latency, us);
  /* answered before the request was all sent (or read): the connection
   * is mid-request, so it cannot be reused */
  if (!r->body_done || uc->sent < r->base + r->out_len)
    uc->keep = false;
  gs__proxy_req_detach(r);
  gs__proxy_req_free(r);
  /* The connection is out of every list while the answer ends, so a
   * pipelined request dispatched meanwhile cannot take it. */
  if (started)
    gs_http_respond_end(client);
  else
    gs_http_respond(client, uc->resp.status, uc->ctype, uc->extra, NULL, 0);
  up_release(uc);
}

/* Passes the body bytes of the last read on to the client; at the answer's
 * end (eof: the worker closed) completes it, and stops reading while the
 * client lags. */
static void up_body(struct upconn *uc, bool eof)
{
  size_t n = uc->in_len, rest, queued;
  int rc = gs_http_resp_body(&uc->resp, uc->in, &n, eof, &rest);
  if (rc == GS_HTTP_RESP_BAD) {
    up_failed_late(uc, uc->resp.why);
    return;
  }
  uc->leftover = rest;
  uc->in_len = 0;
  queued = n ? gs_http_respond_data(uc->req->client, uc->in, n) : 0;
  if (rc == GS_HTTP_RESP_DONE) {
    up_complete(uc);
  } else if (queued >= STREAM_HIGH) {
    uc->paused = true; /* on_client_drain resumes */
    gs_net_loop_del(uc->p->loop, uc->fd, GS_NET_READABLE);
  }
}

/* The head is read: the answer begins (whole when it has no body). */
static void up_head(struct upconn *uc)
{
  struct preq *r = uc->req;
  const struct gs_http_resp *rs = &uc->resp;
  int64_t len = rs->framing == GS_HTTP_LENGTH ? (int64_t)rs->content_length : -1;
  if (rs->framing == GS_HTTP_NO_BODY) {
    uc->leftover = uc->in_len - rs->head_len;
    up_complete(uc);
    return;
  }
  r->started = true;
  gs_http_respond_start(r->client, rs->status, uc->ctype, uc->extra, len);
  uc->in_len -= rs->head_len;
  memmove(uc->in, uc->in + rs->head_len, uc->in_len);
  up_body(uc, false);
}

/* Room to read into: the head may take UP_MAX_HEAD, body bytes leave at once. */
static bool in_reserve(struct upconn *uc)
{
  size_t limit = UP_MAX_HEAD + UP_READ_MIN, cap;
  char *q;
  if (uc->in_cap - uc->in_len >= UP_READ_MIN)
    return true;
  if (uc->in_cap >= limit)
    return uc->in_len < uc->in_cap;
  cap = uc->in_cap ? uc->in_cap * 2 : 2 * UP_READ_MIN;
  if (cap > limit)
    cap = limit;
  if (!(q = realloc(uc->in, cap)))
    return false;
  uc->in = q;
  uc->in_cap = cap;
  return true;
}

static void up_read(struct upconn *uc)
{
  ssize_t n;
  int rc;
  if (!in_reserve(uc)) {
    gs__proxy_up_retry(uc, false, "sent an answer head larger than the proxy accepts");
    return;
  }
  n = recv(uc->fd, uc->in + uc->in_len, uc->in_cap - uc->in_len, 0);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
    return;
  if (n <= 0) {
    if (uc->in_len == 0 && !uc->head_done)
      gs__proxy_up_failed_early(uc); /* nothing answered: safe to send elsewhere */
    else if (n == 0 && uc->head_done)
      up_body(uc, true); /* ends a body that runs to the close, else cut short */
    else
      up_failed_late(uc, "connection ended in the middle of the response");
    return;
  }
  uc->in_len += (size_t)n;
  gs__proxy_fb_timer_stop(uc->req); /* it answers */
  if (uc->head_done)
    up_body(uc, false);
  else if ((rc = parse_up_head(uc)) == 0)
    up_head(uc);
  else if (rc < 0) /* nothing reached the client yet: another worker may answer */
    gs__proxy_up_retry(uc, false, "sent a malformed or oversized answer head (over 64 KiB)");
}

void gs__proxy_on_up_io(struct gs_net_loop *loop, int fd, void *data, unsigned mask)
{
  struct upconn *uc = data;
  (void)loop;
  (void)fd;
  if (!uc->req) { /* idle: the worker closed it (or talks out of turn) */
    idle_remove(uc);
    gs__proxy_up_close(uc);
    return;
  }
  if (mask & GS_NET_WRITABLE) {
    if (!gs__proxy_up_write(uc)) {
      gs__proxy_up_failed_early(uc);
      return;
    }
  }
  if (mask & GS_NET_READABLE)
    up_read(uc);
}
