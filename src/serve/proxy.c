/* SPDX-License-Identifier: Apache-2.0 */
/* proxy.c: the load balancer's requests: clients come in through net's
 * HTTP/1.1 server (limits, keep-alive, pipelining), each request goes to a
 * worker the pool picks (proxy_pool.c) over an upstream connection
 * (proxy_upstream.c); a response timeout (504), 503 with no worker or past
 * the memory budget for request bodies. Bodies are streamed both ways: the
 * request's head goes to the worker with its first body bytes and the rest
 * follows as it arrives (re-chunked if the client sent chunks), the client
 * stops being read while STREAM_HIGH bytes wait for the worker. The first
 * RETRY_KEEP bytes of a request are kept for a retry. One proxy's life is
 * here too; several share a pool in proxy_threads.c. It knows worker ids
 * and ports, not processes: the supervisor or a static list tells it who is
 * ready. */
#include "serve/proxy_internal.h"

#include <stdlib.h>
#include <unistd.h>

void gs__proxy_fb_timer_stop(struct preq *r)
{
  if (r->fb_timer)
    gs_net_loop_timer_del(r->p->loop, r->fb_timer);
  r->fb_timer = 0;
}

/* Gives the budget back what r's buffer drew from it. */
static void req_uncharge(struct preq *r)
{
  if (r->charged)
    gs_net_budget_put(&r->p->main->budget, r->charged);
  r->charged = 0;
}

void gs__proxy_req_free(struct preq *r)
{
  struct gs_proxy *p = r->p;
  req_uncharge(r);
  gs__proxy_fb_timer_stop(r);
  if (r->timer)
    gs_net_loop_timer_del(p->loop, r->timer);
  gs_http_bind(r->client, NULL);
  if (r->prev)
    r->prev->next = r->next;
  else
    p->reqs = r->next;
  if (r->next)
    r->next->prev = r->prev;
  __atomic_store_n(&p->nreqs, p->nreqs - 1, __ATOMIC_RELAXED);
  if (p->nspare >= SPARE_REQS) {
    free(r->out);
    free(r);
    return;
  }
  if (r->out_cap > SPARE_OUT_MAX) {
    free(r->out);
    r->out = NULL;
    r->out_cap = 0;
  }
  r->next = p->spare;
  p->spare = r;
  p->nspare++;
}

/* A request record, reused when one is spare; NULL on no memory. */
static struct preq *req_new(struct gs_proxy *p)
{
  struct preq *r = p->spare;
  char *out;
  size_t cap;
  if (!r) {
    if ((r = calloc(1, sizeof(*r))) != NULL)
      r->p = p;
    return r;
  }
  p->spare = r->next;
  p->nspare--;
  out = r->out;
  cap = r->out_cap;
  memset(r, 0, sizeof(*r));
  r->p = p;
  r->out = out;
  r->out_cap = cap;
  return r;
}

void gs__proxy_req_error(struct preq *r, int status, const char *fmt, ...)
{
  struct gs_http_conn *client = r->client;
  bool started = r->started;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  cnt_add(&r->p->errors, 1);
  gs__proxy_hist_add(&r->p->latency, gs_net_loop_now_us() - r->start_us);
  gs__proxy_req_free(r);
  if (started)
    gs_http_respond_abort(client);
  else
    gs_http_respond_error(client, status, "%s", msg);
}

struct upconn *gs__proxy_req_detach(struct preq *r)
{
  struct upconn *uc = r->uc;
  gs__proxy_fb_timer_stop(r);
  if (uc) {
    inflight_add(r->p, uc->wk, -1);
    gs__proxy_trial_drop(uc->wk, r->trial);
    uc->req = NULL;
    r->uc = NULL;
  }
  r->trial = 0;
  return uc;
}

static int64_t on_req_timeout(struct gs_net_loop *loop, uint64_t id, void *data)
{
  struct preq *r = data;
  struct upconn *uc;
  size_t w = 0;
  (void)loop;
  (void)id;
  r->timer = 0;
  if (r->uc)
    gs__proxy_worker_failed(r->p, r->uc->wk);
  if ((uc = gs__proxy_req_detach(r)) != NULL) {
    w = uc->wk->id;
    gs__proxy_up_close(uc); /* the worker may still answer: that connection cannot be reused */
  }
  gs__proxy_req_error(r, 504, "worker %zu did not answer within %u ms", w, r->p->cfg.worker_timeout_ms);
  return GS_NET_TIMER_DONE;
}

int64_t gs__proxy_on_first_byte_timeout(struct gs_net_loop *loop, uint64_t id, void *data)
{
  struct preq *r = data;
  (void)loop;
  (void)id;
  r->fb_timer = 0;
  if (r->uc && !r->retried && !r->base && !r->started)
    gs__proxy_up_retry(r->uc, false, "sent nothing within the first-byte timeout");
  return GS_NET_TIMER_DONE;
}

void gs__proxy_dispatch(struct preq *r, struct pworker *avoid)
{
  struct gs_proxy *p = r->p;
  bool busy;
  struct pworker *wk;
  struct upconn *uc;
  /* only a request that can still be retried elsewhere may be a trial */
  bool trial_ok = !r->retried && !r->base && r->body_done;
  for (;;) {
    if (!(wk = gs__proxy_pick(p, avoid, trial_ok, &busy))) {
      if (busy)
        gs__proxy_req_error(r, 503, "every ready worker is at its limit of %u requests in flight",
                  p->cfg.max_inflight);
      else
        gs__proxy_req_error(r, 503, "no worker is ready (they may be starting, restarting or ejected)");
      return;
    }
    r->attempts++;
    if ((uc = wk->idle) != NULL) {
      wk->idle = uc->next;
      wk->nidle--;
      uc->reused = true;
      break;
    }
    if ((uc = gs__proxy_up_connect(p, wk)) != NULL)
      break;
    gs__proxy_worker_failed(p, wk); /* refused at once: try another */
    if (r->attempts >= MAX_ATTEMPTS) {
      gs__proxy_req_error(r, 502, "cannot connect to worker %zu (port %u)", wk->id, wk->port);
      return;
    }
    avoid = wk;
  }
  uc->req = r;
  r->uc = uc;
  gs_http_resp_init(&uc->resp, r->head_method);
  r->trial = ejected(wk) ? wk->trial_gen : 0; /* only a trial is ever given an ejected worker */
  inflight_add(p, wk, 1);
  cnt_add(&wk->requests, 1);
  if (!r->timer)
    r->timer =
        gs_net_loop_timer_add(p->loop, p->cfg.worker_timeout_ms * 1000ull, on_req_timeout, r);
  if (uc->reused &&
      (gs_net_loop_add(NULL, p->loop, uc->fd, GS_NET_READABLE, gs__proxy_on_up_io, uc) != 0 || !gs__proxy_up_write(uc)))
    gs__proxy_up_failed_early(uc);
}

/* Request headers not passed on: those of one hop (the hop-by-hop ones and
 * any the request's Connection headers, conn, name), and the framing and
 * Expect, which the proxy writes or answers itself. */
static bool is_hop_request_header(const struct gs_http_header *h, const struct gs_http_header *conn,
                                  size_t nconn)
{
  return gs__proxy_name_is(h, "content-length") || gs__proxy_name_is(h, "expect") ||
         gs_http_hop_header(h->name, h->name_len, conn, nconn);
}

/* Room for more bytes in r->out; false on no memory. */
static bool out_room(struct preq *r, size_t more)
{
  size_t cap = r->out_cap ? r->out_cap : 4096, grow;
  struct gs_net_budget *b = &r->p->main->budget;
  char *q;
  if (r->out_len + more <= r->out_cap)
    return true;
  while (cap < r->out_len + more)
    cap *= 2;
  /* growth is drawn from the memory budget (a spare buffer's own 64 KiB
   * at most are not: the spares are bounded apart) */
  grow = cap - r->out_cap;
  if (!gs_net_budget_take(b, grow)) {
    r->over = true;
    return false;
  }
  if (!(q = realloc(r->out, cap))) {
    gs_net_budget_put(b, grow);
    return false;
  }
  r->charged += grow;
  r->out = q;
  r->out_cap = cap;
  return true;
}

static void out_add(struct preq *r, const void *data, size_t len)
{
  memcpy(r->out + r->out_len, data, len);
  r->out_len += len;
}

/* The request head as the worker gets it, in r->out: HTTP/1.1, kept alive,
 * the body framed as the client framed it (chunks are re-chunked, so the
 * Content-Length or chunked framing passes through). false on no memory. */
static bool build_head(struct preq *r, const struct gs_http_request *q)
{
  const struct gs_http_header *cl = gs_http_header_find(q, "content-length");
  size_t cap = q->method_len + q->path_len + 96, nconn = 0;
  unsigned long long body;
  struct gs_http_header conn[GS_HTTP_MAX_HEADERS];
  /* room for the body kept for a retry at once, not grown piece by piece
   * (the server took its Content-Length only as 1 to 18 digits, then CRLF) */
  if (cl && (body = strtoull(cl->value, NULL, 10)) > 0)
    cap += cl->value_len + (body < RETRY_KEEP ? body : RETRY_KEEP);
  for (size_t i = 0; i < q->nheaders; i++)
    cap += q->headers[i].name_len + q->headers[i].value_len + 4;
  r->out_len = 0;
  if (!out_room(r, cap))
    return false;
  r->out_len = (size_t)sprintf(r->out, "%.*s %.*s HTTP/1.1\r\n", (int)q->method_len, q->method,
                               (int)q->path_len, q->path);
  for (size_t i = 0; i < q->nheaders; i++)
    if (gs__proxy_name_is(&q->headers[i], "connection"))
      conn[nconn++] = q->headers[i];
  /* an HTTP/1.0 client may send no Host; the worker gets HTTP/1.1, which needs one */
  if (!gs_http_header_find(q, "host"))
    out_add(r, "Host: localhost\r\n", 17);
  for (size_t i = 0; i < q->nheaders; i++) {
    const struct gs_http_header *h = &q->headers[i];
    if (is_hop_request_header(h, conn, nconn))
      continue;
    out_add(r, h->name, h->name_len);
    out_add(r, ": ", 2);
    out_add(r, h->value, h->value_len);
    out_add(r, "\r\n", 2);
  }
  r->chunked = q->body_follows && !cl; /* the HTTP server takes chunked or a length */
  if (r->chunked)
    out_add(r, "Transfer-Encoding: chunked\r\n\r\n", 30);
  else if (cl)
    r->out_len += (size_t)sprintf(r->out + r->out_len, "Content-Length: %.*s\r\n\r\n",
                                  (int)cl->value_len, cl->value);
  else
    out_add(r, "Content-Length: 0\r\n\r\n", 21);
  return true;
}

/* Room for need more bytes of the request in r->out; past RETRY_KEEP the
 * bytes already sent go first, which ends the retry. false on no memory. */
static bool out_reserve(struct preq *r, size_t need)
{
  struct upconn *uc = r->uc;
  if (r->out_len + need > RETRY_KEEP && uc && uc->sent > r->base) {
    size_t done = uc->sent - r->base;
    memmove(r->out, r->out + done, r->out_len - done);
    r->out_len -= done;
    r->base += done;
  }
  return out_room(r, need);
}

/* Appends body bytes (framed) to r->out, or counts them when the HTTP server
 * read them into its end already (body_space). false on no memory. */
static bool out_body(struct preq *r, const char *data, size_t len, bool end)
{
  char size[24];
  int sl = r->chunked && len ? snprintf(size, sizeof(size), "%zx\r\n", len) : 0;
  size_t need = (size_t)sl + len + 2 + (end && r->chunked ? 5 : 0);
  if (len && data == r->out + r->out_len) { /* never chunked: a Content-Length body */
    r->out_len += len;
    return true;
  }
  if (!out_reserve(r, need))
    return false;
  out_add(r, size, (size_t)sl);
  out_add(r, data, len);
  if (sl)
    out_add(r, "\r\n", 2);
  if (end && r->chunked)
    out_add(r, "0\r\n\r\n", 5);
  return true;
}

/* The HTTP server's buf_fn: the client's Content-Length body is read straight
 * into r->out, where it is kept for a retry anyway (no copy in between). */
static char *body_space(void *user, struct gs_http_conn *conn, size_t want, size_t *room)
{
  struct preq *r = user;
  (void)conn;
  if (!r || r->chunked || !out_reserve(r, want))
    return NULL;
  *room = r->out_cap - r->out_len;
  return r->out + r->out_len;
}

/* The client's body failed (status 400, 408, 413) or could not be held:
 * the worker has part of a request, so its connection goes too. */
static void req_abandon(struct preq *r, int status)
{
  struct upconn *uc = gs__proxy_req_detach(r);
  if (uc)
    gs__proxy_up_close(uc);
  gs__proxy_req_error(r, status, "%s",
            status == 413   ? "request body larger than the proxy accepts"
            : status == 408 ? "the request was not received in time"
            : status == 400 ? "malformed or truncated request body"
            : status == 503 ? OVER_BUDGET
                            : "out of memory forwarding a request body");
}

/* Body bytes from the client: queued after what the worker has not taken
 * yet; the client is paused while STREAM_HIGH bytes wait. The request goes
 * out with its first body bytes (one send for a small request). */
static void on_body(void *user, struct gs_http_conn *conn, const char *data, size_t len,
                    int status)
{
  struct preq *r = user;
  if (!r) { /* the handler answered already: nothing waits for this body */
    if (status > GS_HTTP_BODY_END)
      gs_http_respond_error(conn, status, "request body failed");
    return;
  }
  if (status > GS_HTTP_BODY_END) {
    req_abandon(r, status);
    return;
  }
  if (!out_body(r, data, len, status == GS_HTTP_BODY_END)) {
    req_abandon(r, r->over ? 503 : 500);
    return;
  }
  r->body_done = status == GS_HTTP_BODY_END;
  if (!r->attempts) {
    gs__proxy_dispatch(r, NULL);
    return;
  }
  if (!r->uc)
    return;
  if (!gs__proxy_up_write(r->uc)) {
    gs__proxy_up_failed_early(r->uc);
    return;
  }
  if (r->uc && r->base + r->out_len - r->uc->sent >= STREAM_HIGH && !r->paused) {
    r->paused = true; /* gs__proxy_up_write resumes once all is sent */
    gs_http_pause(conn, true);
  }
}

/* The client took a streamed answer's queued bytes: read its worker again. */
static void on_client_drain(void *user, struct gs_http_conn *conn)
{
  struct preq *r = user;
  struct upconn *uc = r ? r->uc : NULL;
  (void)conn;
  if (!uc || !uc->paused)
    return;
  uc->paused = false;
  /* a failure here leaves it unread: the worker timeout ends the request */
  gs_net_loop_add(NULL, uc->p->loop, uc->fd, GS_NET_READABLE, gs__proxy_on_up_io, uc);
}

static void on_request(void *ctx, struct gs_http_conn *conn, const struct gs_http_request *q)
{
  struct gs_proxy *p = ctx;
  struct preq *r;
  if (q->path_len == 8 && memcmp(q->path, "/metrics", 8) == 0) {
    gs__proxy_respond_metrics(p, conn);
    return;
  }
  cnt_add(&p->requests, 1);
  if (!(r = req_new(p)) || !build_head(r, q)) {
    bool over = r && r->over;
    if (r) {
      req_uncharge(r);
      free(r->out);
    }
    free(r);
    cnt_add(&p->errors, 1);
    if (over)
      gs_http_respond_error(conn, 503, "%s", OVER_BUDGET);
    else
      gs_http_respond_error(conn, 500, "out of memory forwarding a request");
    return;
  }
  r->client = conn;
  r->start_us = gs_net_loop_now_us();
  r->head_method = q->method_len == 4 && memcmp(q->method, "HEAD", 4) == 0;
  r->next = p->reqs;
  if (p->reqs)
    p->reqs->prev = r;
  p->reqs = r;
  __atomic_store_n(&p->nreqs, p->nreqs + 1, __ATOMIC_RELAXED);
  gs_http_bind(conn, r);
  r->body_done = !q->body_follows;
  if (r->body_done)
    gs__proxy_dispatch(r, NULL); /* else with the first body bytes (on_body) */
}

int gs__proxy_new_one(struct gs_err *err, struct gs_net_loop *loop,
                      const struct gs_proxy_config *cfg, struct gs_proxy *m, struct gs_proxy **out)
{
  struct gs_proxy *p = calloc(1, sizeof(*p));
  int rc;
  *out = NULL;
  if (!p)
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory creating a proxy");
  p->main = m ? m : p;
  p->efd = -1;
  p->inbox[0] = p->inbox[1] = -1;
  if (!m) {
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cond, NULL);
  }
  p->loop = loop;
  p->cfg = *cfg;
  p->conns.max = cfg->limits.max_conns; /* read in the main proxy's only */
  p->budget.max = cfg->body_budget ? cfg->body_budget : GS_H2_BUDGET;
  p->listen_fd = -1;
  p->rng = 0x9e3779b97f4a7c15ull ^ gs_net_loop_now_us() ^ (uintptr_t)p;
  if (!p->cfg.max_inflight)
    p->cfg.max_inflight = 64;
  if (!p->cfg.worker_timeout_ms)
    p->cfg.worker_timeout_ms = 30000;
  if (!p->cfg.eject_after)
    p->cfg.eject_after = 3;
  if (!p->cfg.eject_ms)
    p->cfg.eject_ms = 10000;
  if (!p->cfg.first_byte_ms)
    p->cfg.first_byte_ms = FIRST_BYTE_MS;
  /* As many idle connections as requests may be in flight: a smaller pool
   * closes and reopens upstream connections under load (TIME_WAIT churn). */
  if (!p->cfg.idle_pool)
    p->cfg.idle_pool = p->cfg.max_inflight;
  p->cfg.nworkers = 0;
  if (!m && !(p->shared = calloc(SHARED_MAX, sizeof(*p->shared)))) {
    gs_proxy_free(p);
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory creating a proxy");
  }
  for (size_t i = 0; i < cfg->nworkers; i++) {
    size_t w;
    if (gs__proxy_add_worker_local(p, &w) != 0) {
      gs_proxy_free(p);
      return gs_err_set(err, GS_E_NO_MEMORY, "out of memory creating a proxy of %zu workers",
                        cfg->nworkers);
    }
  }
  if ((rc = gs_http_server_new(err, loop, &p->cfg.limits, on_request, p, &p->http)) != 0) {
    gs_proxy_free(p);
    return rc;
  }
  gs_http_server_stream(p->http, on_body, on_client_drain, body_space);
  gs_http_server_share_conns(p->http, &p->main->conns);
  *out = p;
  return 0;
}

/* Closes p's inbox with the connections still in it, never served. */
static void inbox_close(struct gs_proxy *p)
{
  int fd;
  if (p->inbox[0] < 0)
    return;
  while (read(p->inbox[0], &fd, sizeof(fd)) == (ssize_t)sizeof(fd)) {
    close(fd);
    gs_net_conns_put(&p->main->conns);
  }
  gs_net_loop_close_fd(p->loop, p->inbox[0]);
  close(p->inbox[1]);
}

void gs__proxy_free_one(struct gs_proxy *p)
{
  inbox_close(p);
  /* Requests first: they point at client connections the server frees. */
  while (p->reqs) {
    struct preq *r = p->reqs;
    struct upconn *uc = gs__proxy_req_detach(r);
    if (uc)
      gs__proxy_up_close(uc);
    gs__proxy_req_free(r);
  }
  while (p->spare) {
    struct preq *r = p->spare;
    p->spare = r->next;
    free(r->out);
    free(r);
  }
  for (size_t i = 0; p->w && i < p->cfg.nworkers; i++) {
    gs__proxy_drop_idle(p->w[i]);
    if (p->w[i]->eject_timer)
      gs_net_loop_timer_del(p->loop, p->w[i]->eject_timer);
    free(p->w[i]);
  }
  gs_http_server_free(p->http);
  free(p->w);
  free(p->cand);
  if (p->main == p) {
    free(p->shared);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cond);
  }
  free(p);
}
