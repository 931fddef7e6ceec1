/* SPDX-License-Identifier: Apache-2.0 */
/* run.c: the load generator's engine. Each thread runs its own net-layer
 * loop with its own connections; the calling thread cuts time into windows,
 * swapping each thread's counters and histogram under a per-thread mutex,
 * reads server metrics between windows and decides stability, and walks the
 * levels a search (search.c) asks for. Closed loop:
 * every connection keeps one request outstanding. Open loop: a timer issues
 * requests at their intended times (constant or Poisson) into a backlog that
 * idle connections drain; latency counts from the intended time, so a stall
 * shows in the tail instead of being omitted. */
#include "bench/internal.h"
#include "net/net.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define READ_CHUNK 16384
#define MAX_HEAD (64u << 10) /* an answer head larger is malformed */
#define RETRY_US 10000   /* after a failed connect, before the next try */
#define SWEEP_US 20000   /* request timeouts are checked this often */

const char *gs_bench_error_name(enum gs_bench_error e)
{
  static const char *const names[] = {
#define GS__BENCH_NAME(name, short_name, text) short_name,
      GS_BENCH_ERROR_MAP(GS__BENCH_NAME)
#undef GS__BENCH_NAME
  };
  return (unsigned)e < GS_NITEMS(names) ? names[e] : "unknown";
}

const char *gs_bench_error_text(enum gs_bench_error e)
{
  static const char *const texts[] = {
#define GS__BENCH_TEXT(name, short_name, text) text,
      GS_BENCH_ERROR_MAP(GS__BENCH_TEXT)
#undef GS__BENCH_TEXT
  };
  return (unsigned)e < GS_NITEMS(texts) ? texts[e] : "unknown";
}

static uint64_t now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* What a window counts; one per thread being filled, swapped by the main thread. */
struct stats {
  uint64_t ok, errors[GS_BENCH_ERR_COUNT], delayed;
  double send_ns, recv_ns;
  struct gs_hist hist; /* successful requests' latency, ns */
};

static void stats_reset(struct stats *s)
{
  memset(s, 0, offsetof(struct stats, hist));
  gs_hist_reset(&s->hist);
}

static void stats_add(struct stats *d, const struct stats *s)
{
  d->ok += s->ok;
  d->delayed += s->delayed;
  for (unsigned e = 0; e < GS_BENCH_ERR_COUNT; e++)
    d->errors[e] += s->errors[e];
  d->send_ns += s->send_ns;
  d->recv_ns += s->recv_ns;
  gs_hist_add(&d->hist, &s->hist);
}

enum conn_state { C_CLOSED, C_CONNECTING, C_SENDING, C_WAITING, C_IDLE };

struct worker;
struct conn {
  struct worker *w;
  int fd;
  enum conn_state state;
  bool busy;               /* a request is assigned */
  const char *req;
  size_t req_len, sent;
  char *buf;
  size_t len, cap;
  struct gs_http_resp http; /* the answer being read (net's response reader) */
  uint64_t intended_ns, start_ns, sent_ns, first_ns;
};

/* Which of a step's ended requests are measured (warmup, --request-count):
 * the k-th to end (0-based, all threads) counts when skip <= k < limit. */
struct gate {
  uint64_t ended, skip, limit;
};

struct worker {
  const struct gs_bench_config *cfg;
  struct gate *gate;       /* NULL: every request counts */
  const struct sockaddr_storage *addr;
  unsigned addrlen;
  pthread_t tid;
  struct gs_net_loop *loop;
  int stopfd;
  struct conn *conns;
  unsigned nconns;
  size_t next_req;
  pthread_mutex_t mu;
  struct stats *cur;       /* under mu */
  /* open loop */
  double gap_ns;           /* mean time between this thread's requests */
  size_t iv_next;          /* GS_BENCH_CUSTOM: this thread's next arrival's gap */
  unsigned stride;         /* and the threads that share the arrivals (each takes every n-th) */
  double next_ns;          /* the next intended send time */
  uint64_t rng;
  uint64_t *backlog;
  size_t bl_head, bl_count, bl_cap, bl_max;
  bool in_tick, in_issue;
  struct gs__bench_grpc *grpc; /* -i grpc: its sessions instead of conns */
  int rc;
};

/* Whether this ended request is measured (it counts as ended either way). */
static bool take(struct worker *w)
{
  uint64_t k;
  if (!w->gate)
    return true;
  k = __atomic_fetch_add(&w->gate->ended, 1, __ATOMIC_RELAXED);
  return k >= w->gate->skip && k < w->gate->limit;
}

static void record_error(struct worker *w, enum gs_bench_error e)
{
  if (!take(w))
    return;
  pthread_mutex_lock(&w->mu);
  w->cur->errors[e]++;
  pthread_mutex_unlock(&w->mu);
}

void gs__bench_count_error(struct worker *w, enum gs_bench_error e)
{
  record_error(w, e);
}

void gs__bench_count_ok(struct worker *w, uint64_t intended_ns, uint64_t start_ns,
                        uint64_t sent_ns, uint64_t first_ns, uint64_t t)
{
  if (!take(w))
    return;
  pthread_mutex_lock(&w->mu);
  w->cur->ok++;
  w->cur->send_ns += sent_ns > start_ns ? (double)(sent_ns - start_ns) : 0;
  w->cur->recv_ns += first_ns && t > first_ns ? (double)(t - first_ns) : 0;
  gs_hist_record(&w->cur->hist, t > intended_ns ? t - intended_ns : 0);
  pthread_mutex_unlock(&w->mu);
}

static void conn_close(struct conn *c)
{
  if (c->fd >= 0)
    gs_net_loop_close_fd(c->w->loop, c->fd);
  c->fd = -1;
  c->state = C_CLOSED;
  c->len = 0;
}

static void conn_send(struct conn *c);
static void issue(struct worker *w);
static void on_io(struct gs_net_loop *loop, int fd, void *data, unsigned mask);

/* A request ended (ok or not): the connection takes the next one. */
static void conn_done(struct conn *c, int error)
{
  struct worker *w = c->w;
  c->busy = false;
  if (error >= 0) {
    record_error(w, (enum gs_bench_error)error);
    conn_close(c);
  }
  if (w->cfg->mode == GS_BENCH_CLOSED) {
    if (error == GS_BENCH_ERR_CONNECT) {
      c->busy = true; /* the sweep timer retries it after RETRY_US */
      c->start_ns = now_ns();
      return;
    }
    c->intended_ns = now_ns();
    c->busy = true;
    conn_send(c);
  } else {
    issue(w);
  }
}

/* A complete answer: a success, or an HTTP error that keeps its connection. */
static void on_answer(struct conn *c, uint64_t t)
{
  struct worker *w = c->w;
  int st = c->http.status;
  bool counted = take(w);
  pthread_mutex_lock(&w->mu);
  if (!counted) {
    /* warmup, or past --request-count: ended, not measured */
  } else if (st < 200 || st > 299) {
    w->cur->errors[st >= 400 && st < 500 ? GS_BENCH_ERR_HTTP_4XX : GS_BENCH_ERR_HTTP_5XX]++;
  } else {
    w->cur->ok++;
    w->cur->send_ns += (double)(c->sent_ns - c->start_ns);
    w->cur->recv_ns += (double)(t - c->first_ns);
    gs_hist_record(&w->cur->hist, t > c->intended_ns ? t - c->intended_ns : 0);
  }
  pthread_mutex_unlock(&w->mu);
  if (!c->http.keep_alive || c->state != C_WAITING) /* answered before the request ended */
    conn_close(c);
  else
    c->state = C_IDLE, c->len = 0;
  conn_done(c, -1);
}

/* Room for the next read: the head is held whole (at most MAX_HEAD), body
 * bytes are counted and dropped. */
static bool grow(struct conn *c)
{
  size_t cap = c->cap ? c->cap * 2 : READ_CHUNK * 2;
  char *nb;
  if (c->cap >= MAX_HEAD + READ_CHUNK || !(nb = realloc(c->buf, cap)))
    return false;
  c->buf = nb, c->cap = cap;
  return true;
}

/* The bytes just read (eof: then the server closed): GS_HTTP_RESP_DONE once
 * the answer is whole, MORE, or BAD with *e the failure's kind. */
static int conn_answer(struct conn *c, bool eof, enum gs_bench_error *e)
{
  char *data = c->buf;
  size_t n = c->len, rest;
  int rc;
  *e = eof ? GS_BENCH_ERR_CLOSED : GS_BENCH_ERR_MALFORMED; /* with eof: cut short */
  if (!c->http.head_len) {
    rc = gs_http_resp_head(&c->http, c->buf, &c->len, MAX_HEAD);
    if (rc != GS_HTTP_RESP_DONE)
      return rc == GS_HTTP_RESP_MORE && eof ? GS_HTTP_RESP_BAD : rc;
    data += c->http.head_len;
    n = c->len - c->http.head_len;
  }
  rc = gs_http_resp_body(&c->http, data, &n, eof, &rest);
  c->len = 0; /* body bytes are counted, not kept */
  return rc;
}

static void conn_read(struct conn *c)
{
  enum gs_bench_error e;
  ssize_t r;
  int rc;
  if (c->cap - c->len < READ_CHUNK && !grow(c)) {
    conn_done(c, GS_BENCH_ERR_MALFORMED);
    return;
  }
  r = recv(c->fd, c->buf + c->len, c->cap - c->len, 0);
  if (r < 0 && (errno == EAGAIN || errno == EINTR))
    return;
  if (!c->busy) { /* an idle keep-alive connection closed or spoke out of turn */
    conn_close(c);
    return;
  }
  if (r < 0) {
    conn_done(c, GS_BENCH_ERR_CLOSED);
    return;
  }
  if (!c->http.head_len && c->len == 0 && r > 0) /* the answer's first bytes */
    c->first_ns = now_ns();
  c->len += (size_t)r;
  rc = conn_answer(c, r == 0, &e);
  if (rc == GS_HTTP_RESP_DONE)
    on_answer(c, now_ns());
  else if (rc == GS_HTTP_RESP_BAD)
    conn_done(c, (int)e);
}

static void conn_write(struct conn *c)
{
  while (c->sent < c->req_len) {
    ssize_t n = send(c->fd, c->req + c->sent, c->req_len - c->sent, MSG_NOSIGNAL);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      gs_net_loop_add(NULL, c->w->loop, c->fd, GS_NET_WRITABLE | GS_NET_READABLE, on_io, c);
      return;
    }
    if (n < 0) {
      conn_done(c, GS_BENCH_ERR_CLOSED);
      return;
    }
    c->sent += (size_t)n;
  }
  c->sent_ns = now_ns();
  c->state = C_WAITING;
  if (gs_net_loop_mask(c->w->loop, c->fd) & GS_NET_WRITABLE) /* else no epoll_ctl per request */
    gs_net_loop_del(c->w->loop, c->fd, GS_NET_WRITABLE);
}

static void on_io(struct gs_net_loop *loop, int fd, void *data, unsigned mask)
{
  struct conn *c = data;
  (void)loop;
  (void)fd;
  if (c->state == C_CONNECTING) {
    int soerr = 0;
    socklen_t sl = sizeof(soerr);
    getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
    if (soerr) {
      conn_done(c, GS_BENCH_ERR_CONNECT);
      return;
    }
    c->state = C_SENDING;
  }
  if ((mask & GS_NET_WRITABLE) && c->state == C_SENDING)
    conn_write(c);
  if ((mask & GS_NET_READABLE) && c->fd >= 0 && c->state != C_CONNECTING)
    conn_read(c);
}

static int conn_open(struct conn *c)
{
  struct worker *w = c->w;
  int fd = socket(w->addr->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1;
  if (fd < 0)
    return -1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if (connect(fd, (const struct sockaddr *)w->addr, w->addrlen) != 0 && errno != EINPROGRESS) {
    close(fd);
    return -1;
  }
  if (gs_net_loop_add(NULL, w->loop, fd, GS_NET_READABLE | GS_NET_WRITABLE, on_io, c) != 0) {
    close(fd);
    return -1;
  }
  c->fd = fd;
  c->state = C_CONNECTING;
  return 0;
}

/* Sends c's assigned request (intended_ns set), connecting first if needed. */
static void conn_send(struct conn *c)
{
  struct worker *w = c->w;
  const struct gs_bench_config *cfg = w->cfg;
  size_t k = cfg->nrequests ? w->next_req++ % cfg->nrequests : 0;
  c->req = cfg->nrequests ? cfg->requests[k] : cfg->request;
  c->req_len = cfg->nrequests ? cfg->request_lens[k] : cfg->request_len;
  c->sent = 0;
  c->len = 0;
  gs_http_resp_init(&c->http, false);
  c->start_ns = now_ns();
  if (c->state == C_CLOSED && conn_open(c) != 0) {
    conn_done(c, GS_BENCH_ERR_CONNECT);
    return;
  }
  if (c->state == C_IDLE) {
    c->state = C_SENDING;
    conn_write(c);
  }
}

/* ---- open loop ---- */

static bool backlog_push(struct worker *w, uint64_t t)
{
  if (w->bl_count >= w->bl_max)
    return false;
  if (w->bl_count == w->bl_cap) {
    size_t cap = w->bl_cap ? w->bl_cap * 2 : 1024;
    uint64_t *nb;
    if (cap > w->bl_max)
      cap = w->bl_max;
    if (!(nb = malloc(cap * sizeof(*nb))))
      return false;
    for (size_t i = 0; i < w->bl_count; i++)
      nb[i] = w->backlog[(w->bl_head + i) % w->bl_cap];
    free(w->backlog);
    w->backlog = nb, w->bl_cap = cap, w->bl_head = 0;
  }
  w->backlog[(w->bl_head + w->bl_count++) % w->bl_cap] = t;
  return true;
}

static struct conn *idle_conn(struct worker *w)
{
  for (unsigned i = 0; i < w->nconns; i++)
    if (!w->conns[i].busy)
      return &w->conns[i];
  return NULL;
}

/* Hands due requests to free connections, oldest first. Not reentered: a
 * request failing at once frees its connection for this same loop. */
static void issue(struct worker *w)
{
  struct conn *c;
  if (w->in_issue)
    return;
  w->in_issue = true;
  while (w->bl_count && (c = idle_conn(w))) {
    c->intended_ns = w->backlog[w->bl_head];
    w->bl_head = (w->bl_head + 1) % w->bl_cap;
    w->bl_count--;
    if (!w->in_tick) {
      pthread_mutex_lock(&w->mu);
      w->cur->delayed++;
      pthread_mutex_unlock(&w->mu);
    }
    c->busy = true;
    conn_send(c);
  }
  w->in_issue = false;
}

static double next_gap(struct worker *w)
{
  const struct gs_bench_config *cfg = w->cfg;
  double u, g = 0;
  if (cfg->dist == GS_BENCH_CONSTANT)
    return w->gap_ns;
  if (cfg->dist == GS_BENCH_CUSTOM) { /* the file's gaps between this arrival and its next */
    for (unsigned k = 0; k < w->stride; k++)
      g += cfg->intervals_ns[(w->iv_next + k) % cfg->nintervals];
    w->iv_next = (w->iv_next + w->stride) % cfg->nintervals;
    return g;
  }
  w->rng ^= w->rng << 13, w->rng ^= w->rng >> 7, w->rng ^= w->rng << 17;
  u = ((double)(w->rng >> 11) + 0.5) * (1.0 / 9007199254740992.0);
  return -log(u) * w->gap_ns;
}

static int64_t on_tick(struct gs_net_loop *loop, uint64_t id, void *data)
{
  struct worker *w = data;
  uint64_t now = now_ns();
  (void)loop;
  (void)id;
  while (w->next_ns <= (double)now) {
    if (!backlog_push(w, (uint64_t)w->next_ns))
      record_error(w, GS_BENCH_ERR_BACKLOG);
    w->next_ns += next_gap(w);
  }
  w->in_tick = true;
  issue(w);
  w->in_tick = false;
  return (int64_t)((w->next_ns - (double)now) / 1000.0);
}

/* ---- timeouts, retries, stop ---- */

static int64_t on_sweep(struct gs_net_loop *loop, uint64_t id, void *data)
{
  struct worker *w = data;
  uint64_t now = now_ns(), limit = (uint64_t)w->cfg->request_timeout_ms * 1000000u;
  (void)loop;
  (void)id;
  for (unsigned i = 0; i < w->nconns; i++) {
    struct conn *c = &w->conns[i];
    if (c->busy && c->fd >= 0 && now - c->start_ns > limit)
      conn_done(c, GS_BENCH_ERR_TIMEOUT);
    else if (c->busy && c->state == C_CLOSED && w->cfg->mode == GS_BENCH_CLOSED &&
             now - c->start_ns > RETRY_US * 1000u) {
      c->intended_ns = now;
      conn_send(c); /* after a failed connect */
    }
  }
  return SWEEP_US;
}

static void on_stop(struct gs_net_loop *loop, int fd, void *data, unsigned mask)
{
  uint64_t v;
  (void)data;
  (void)mask;
  if (read(fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
    return;
  gs_net_loop_stop(loop);
}

static void *worker_main(void *arg)
{
  struct worker *w = arg;
  if (!gs_net_loop_timer_add(w->loop, SWEEP_US, on_sweep, w))
    w->rc = GS_E_NO_MEMORY;
  if (w->cfg->grpc) {
    if (gs__bench_grpc_start(NULL, w, w->loop, w->cfg, w->addr, w->addrlen, w->nconns, &w->grpc))
      w->rc = GS_E_NO_MEMORY;
  } else if (w->cfg->mode == GS_BENCH_OPEN) {
    if (!gs_net_loop_timer_add(w->loop, 0, on_tick, w))
      w->rc = GS_E_NO_MEMORY;
  } else {
    for (unsigned i = 0; i < w->nconns; i++) {
      w->conns[i].busy = true;
      w->conns[i].intended_ns = now_ns();
      conn_send(&w->conns[i]);
    }
  }
  if (!w->rc)
    w->rc = gs_net_loop_run(w->loop);
  return NULL;
}

/* ---- threads of one step ---- */

struct step_run {
  struct worker *w;
  unsigned n;
  struct stats **spare;  /* one per worker, swapped in at window ends */
  struct gate gate;      /* used when the config has a warmup or a request count */
};

static void worker_free(struct worker *w)
{
  for (unsigned i = 0; i < w->nconns; i++) {
    if (w->conns[i].fd >= 0)
      close(w->conns[i].fd);
    free(w->conns[i].buf);
  }
  free(w->conns);
  gs__bench_grpc_free(w->grpc);
  free(w->backlog);
  free(w->cur);
  if (w->stopfd >= 0)
    close(w->stopfd);
  gs_net_loop_free(w->loop);
  pthread_mutex_destroy(&w->mu);
}

static int worker_init(struct gs_err *err, struct worker *w, unsigned nconns, unsigned setsize)
{
  if (!(w->conns = calloc(nconns, sizeof(*w->conns))) || !(w->cur = malloc(sizeof(*w->cur))))
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory for %u connections", nconns);
  stats_reset(w->cur);
  w->nconns = nconns;
  for (unsigned i = 0; i < nconns; i++)
    w->conns[i] = (struct conn){.w = w, .fd = -1};
  if (gs_net_loop_new(err, (int)setsize, &w->loop) != 0)
    return err ? err->code : GS_E_NO_MEMORY;
  if ((w->stopfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0)
    return gs_err_set(err, GS_E_IO, "eventfd: %s", strerror(errno));
  return gs_net_loop_add(err, w->loop, w->stopfd, GS_NET_READABLE, on_stop, NULL);
}

static void step_stop(struct step_run *r, unsigned started)
{
  uint64_t one = 1;
  for (unsigned i = 0; i < started; i++)
    if (write(r->w[i].stopfd, &one, sizeof(one)) < 0) {
      /* an eventfd write only fails on overflow: the loop is already told */
    }
  for (unsigned i = 0; i < started; i++)
    pthread_join(r->w[i].tid, NULL);
  for (unsigned i = 0; i < r->n; i++)
    worker_free(&r->w[i]);
  for (unsigned i = 0; r->spare && i < r->n; i++)
    free(r->spare[i]);
  free(r->spare);
  free(r->w);
}

static int step_start(struct gs_err *err, const struct gs_bench_config *cfg,
                      const struct sockaddr_storage *addr, unsigned addrlen, double level,
                      struct step_run *r)
{
  unsigned total = cfg->mode == GS_BENCH_CLOSED ? (unsigned)level : cfg->connections;
  unsigned n = cfg->threads < total ? cfg->threads : total, started = 0;
  uint64_t t0 = now_ns();
  int rc = 0;
  r->n = n;
  r->w = calloc(n, sizeof(*r->w));
  r->spare = calloc(n, sizeof(*r->spare));
  if (!r->w || !r->spare) {
    free(r->w), free(r->spare);
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory for %u threads", n);
  }
  r->gate = (struct gate){0, cfg->warmup,
                          cfg->request_count ? (uint64_t)cfg->warmup + cfg->request_count : UINT64_MAX};
  for (unsigned i = 0; i < n; i++) {
    r->w[i].stopfd = -1;
    r->w[i].gate = cfg->warmup || cfg->request_count ? &r->gate : NULL;
    pthread_mutex_init(&r->w[i].mu, NULL);
  }
  for (unsigned i = 0; i < n && rc == 0; i++) {
    struct worker *w = &r->w[i];
    w->cfg = cfg, w->addr = addr, w->addrlen = addrlen;
    w->gap_ns = 1e9 * n / level;
    w->next_ns = (double)t0 + (cfg->dist == GS_BENCH_CONSTANT ? 1e9 * i / level : 0);
    w->stride = n;
    if (cfg->mode == GS_BENCH_OPEN && cfg->dist == GS_BENCH_CUSTOM) /* arrival i of them all */
      for (w->iv_next = 0; w->iv_next < i; w->iv_next++)
        w->next_ns += cfg->intervals_ns[w->iv_next % cfg->nintervals];
    w->rng = (cfg->seed + i + 1) * 0x9e3779b97f4a7c15ull;
    w->bl_max = cfg->max_backlog / n > 1 ? cfg->max_backlog / n : 1;
    if (cfg->mode == GS_BENCH_OPEN && cfg->dist == GS_BENCH_POISSON)
      w->next_ns += next_gap(w);
    rc = worker_init(err, w, total / n + (i < total % n), 2 * total + 1024);
    if (rc == 0 && !(r->spare[i] = malloc(sizeof(struct stats))))
      rc = gs_err_set(err, GS_E_NO_MEMORY, "out of memory for a histogram");
    if (rc == 0)
      stats_reset(r->spare[i]);
  }
  for (unsigned i = 0; i < n && rc == 0; i++, started++)
    if (pthread_create(&r->w[i].tid, NULL, worker_main, &r->w[i]) != 0)
      rc = gs_err_set(err, GS_E_INSUFFICIENT_RESOURCES, "cannot start thread %u of %u", i + 1, n);
  if (rc)
    step_stop(r, started);
  return rc;
}

/* Ends the window: each thread's counters move into sum, fresh ones go in. */
static void step_swap(struct step_run *r, struct stats *sum)
{
  stats_reset(sum);
  for (unsigned i = 0; i < r->n; i++) {
    struct worker *w = &r->w[i];
    struct stats *old;
    pthread_mutex_lock(&w->mu);
    old = w->cur;
    w->cur = r->spare[i];
    pthread_mutex_unlock(&w->mu);
    stats_add(sum, old);
    stats_reset(old);
    r->spare[i] = old;
  }
}

static uint64_t step_finished(struct step_run *r)
{
  uint64_t n = 0;
  for (unsigned i = 0; i < r->n; i++) {
    pthread_mutex_lock(&r->w[i].mu);
    n += r->w[i].cur->ok;
    for (unsigned e = 0; e < GS_BENCH_ERR_COUNT; e++)
      n += r->w[i].cur->errors[e];
    pthread_mutex_unlock(&r->w[i].mu);
  }
  return n;
}

static void sleep_ns(uint64_t ns)
{
  struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000u), .tv_nsec = (long)(ns % 1000000000u)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
    ;
}

/* ---- windows and stability ---- */

struct window {
  struct stats s;
  double seconds;
  bool srv_ok;
  struct gs_bench_server srv;  /* deltas over the window */
  struct gs_bench_gpus gpus;   /* GPU gauges sampled during it */
};

static char *get_metrics(const struct gs_bench_config *cfg, size_t *len)
{
  char *body = NULL;
  int status = 0;
  if (!cfg->metrics_url || gs_bench_http_get(NULL, cfg->metrics_url, cfg->metrics_path, 1000,
                                             &status, &body, len) != 0 || status != 200) {
    free(body);
    return NULL;
  }
  return body;
}

static bool read_metrics(const struct gs_bench_config *cfg, struct gs_bench_server *out)
{
  size_t len;
  char *body = cfg->model ? get_metrics(cfg, &len) : NULL;
  bool ok = body && gs_bench_metrics_parse(body, len, cfg->model, cfg->version, out) == 0;
  if (!ok)
    memset(out, 0, sizeof(*out));
  free(body);
  return ok;
}

static void sample_gpus(const struct gs_bench_config *cfg, struct gs_bench_gpus *acc)
{
  size_t len;
  char *body = get_metrics(cfg, &len);
  if (body)
    gs_bench_gpus_sample(acc, body, len);
  free(body);
}

static void server_delta(struct gs_bench_server *d, const struct gs_bench_server *a,
                         const struct gs_bench_server *b)
{
  d->seen = true;
  d->success = b->success - a->success;
  d->queue_us = b->queue_us - a->queue_us;
  d->cin_us = b->cin_us - a->cin_us;
  d->cinfer_us = b->cinfer_us - a->cinfer_us;
  d->cout_us = b->cout_us - a->cout_us;
  d->request_us = b->request_us - a->request_us;
}

/* The latency stability looks at, and the threshold is held against (ns). */
static double win_latency(const struct gs_bench_config *cfg, const struct gs_hist *h)
{
  return cfg->stability_pct > 0 ? (double)gs_hist_percentile(h, cfg->stability_pct)
                                 : gs_hist_mean(h);
}

/* perf_analyzer's rule: the last three windows' throughput and (unless
 * throughput_only) latency each within the tolerance; a window where nothing
 * succeeded shows no throughput, so it never counts as stable. */
static bool stable(const struct gs_bench_config *cfg, struct window *const last[3],
                   bool throughput_only)
{
  double thr[3], lat[3];
  for (int i = 0; i < 3; i++) {
    if (!last[i]->s.ok || last[i]->seconds <= 0)
      return false;
    thr[i] = (double)last[i]->s.ok / last[i]->seconds;
    lat[i] = win_latency(cfg, &last[i]->s.hist);
  }
  return gs_bench_settled(thr, cfg->stability) &&
         (throughput_only || gs_bench_settled(lat, cfg->stability));
}

/* perf_analyzer ends a step early once one of its last three windows is at
 * or over the threshold (a window without a success has no latency: over). */
static bool over_threshold(const struct gs_bench_config *cfg, struct window *const last[3])
{
  for (int i = 0; cfg->threshold_us > 0 && i < 3; i++)
    if (!last[i]->s.ok || win_latency(cfg, &last[i]->s.hist) >= cfg->threshold_us * 1000)
      return true;
  return false;
}

static void server_fill(struct window *const *last, unsigned n, struct gs_bench_step *out)
{
  struct gs_bench_server *sv = &out->server;
  double srv_total;
  bool srv = n > 0;
  for (unsigned i = 0; i < n; i++) {
    srv = srv && last[i]->srv_ok;
    sv->success += last[i]->srv.success;
    sv->queue_us += last[i]->srv.queue_us, sv->cin_us += last[i]->srv.cin_us;
    sv->cinfer_us += last[i]->srv.cinfer_us, sv->cout_us += last[i]->srv.cout_us;
    sv->request_us += last[i]->srv.request_us;
  }
  sv->seen = srv && sv->success > 0;
  if (!sv->seen) {
    memset(sv, 0, sizeof(*sv));
    return;
  }
  sv->queue_us /= sv->success, sv->cin_us /= sv->success, sv->cinfer_us /= sv->success;
  sv->cout_us /= sv->success, sv->request_us /= sv->success;
  srv_total = sv->queue_us + sv->cin_us + sv->cinfer_us + sv->cout_us;
  out->server_net_us = out->avg_us - out->send_us - out->recv_us - srv_total;
  if (out->server_net_us < 0)
    out->server_net_us = 0;
}

/* The step from its last n windows (last[0] the newest), merged. Times are
 * truncated to whole µs, as perf_analyzer's report does. */
static void step_fill(const struct gs_bench_config *cfg, struct window *const *last, unsigned n,
                      struct stats *sum, struct gs_bench_step *out)
{
  stats_reset(sum);
  for (unsigned i = n; i-- > 0;) { /* oldest first: the GPUs' "first seen" */
    stats_add(sum, &last[i]->s);
    out->seconds += last[i]->seconds;
    gs_bench_gpus_merge(&out->gpus, &last[i]->gpus);
  }
  out->ok = sum->ok;
  memcpy(out->errors, sum->errors, sizeof(out->errors));
  out->delayed = sum->delayed;
  out->throughput = out->seconds > 0 ? (double)sum->ok * (cfg->batch ? cfg->batch : 1) / out->seconds : 0;
  out->send_us = sum->ok ? sum->send_ns / (double)sum->ok / 1000 : 0;
  out->recv_us = sum->ok ? sum->recv_ns / (double)sum->ok / 1000 : 0;
  out->p50_us = gs_hist_percentile(&sum->hist, 50) / 1000;
  out->p90_us = gs_hist_percentile(&sum->hist, 90) / 1000;
  out->p95_us = gs_hist_percentile(&sum->hist, 95) / 1000;
  out->p99_us = gs_hist_percentile(&sum->hist, 99) / 1000;
  out->pextra_us = cfg->stability_pct > 0 ? gs_hist_percentile(&sum->hist, cfg->stability_pct) / 1000 : 0;
  out->max_us = sum->hist.max / 1000 * (sum->hist.count > 0);
  out->avg_us = gs_hist_mean(&sum->hist) / 1000;
  out->stab_us = win_latency(cfg, &sum->hist) / 1000;
  out->over = cfg->threshold_us > 0 && (!sum->ok || out->stab_us >= cfg->threshold_us);
  server_fill(last, n, out);
}

/* Waits for the window's end: its time (none with a request count), or its
 * request count; samples the GPU gauges on the way when asked. */
static void window_wait(const struct gs_bench_config *cfg, struct step_run *r, uint64_t begin,
                        uint64_t count, struct gs_bench_gpus *gpus)
{
  uint64_t end = cfg->request_count ? UINT64_MAX : begin + (uint64_t)cfg->window_ms * 1000000u;
  uint64_t gpu_every = (uint64_t)cfg->gpu_interval_ms * 1000000u, next_gpu = begin, t, wake;
  while ((t = now_ns()) < end) {
    if (gpu_every && t >= next_gpu) {
      sample_gpus(cfg, gpus);
      next_gpu = t + gpu_every;
      continue;
    }
    if (count && step_finished(r) >= count)
      return;
    wake = gpu_every && next_gpu < end ? next_gpu : end;
    if (count && wake - t > 2000000u)
      wake = t + 2000000u;
    sleep_ns(wake - t);
  }
}

/* perf_analyzer's warmup: the first cfg->warmup requests to end are not
 * measured (the gate drops them); the windows start once they have ended. */
static void warmup_wait(const struct gs_bench_config *cfg, struct step_run *r)
{
  while (cfg->warmup && __atomic_load_n(&r->gate.ended, __ATOMIC_RELAXED) < cfg->warmup)
    sleep_ns(2000000u);
}

/* One window after another until stable, over the threshold, or out of
 * trials; last[] gets the newest three. */
static void measure(const struct gs_bench_config *cfg, struct step_run *r, double level,
                    struct window *ring, struct window *last[3], struct gs_bench_step *out)
{
  struct gs_bench_server before, after;
  uint64_t count = cfg->request_count ? cfg->request_count : cfg->window_count, begin, t;
  unsigned trials = cfg->request_count ? 1 : cfg->max_trials;
  bool have;
  warmup_wait(cfg, r);
  have = read_metrics(cfg, &before);
  begin = now_ns();
  for (unsigned trial = 0; trial < trials; trial++) {
    struct window *w = &ring[trial % 3];
    memset(&w->gpus, 0, sizeof(w->gpus));
    window_wait(cfg, r, begin, count, &w->gpus);
    step_swap(r, &w->s);
    t = now_ns();
    w->seconds = (double)(t - begin) / 1e9;
    begin = t;
    w->srv_ok = have && read_metrics(cfg, &after);
    if (w->srv_ok)
      server_delta(&w->srv, &before, &after), before = after;
    have = w->srv_ok || read_metrics(cfg, &before);
    out->trials = trial + 1;
    if (cfg->on_window)
      cfg->on_window(cfg->ctx, level, trial + 1, cfg, w->s.ok, (double)w->s.ok / w->seconds,
                     gs_hist_percentile(&w->s.hist, 99));
    for (unsigned i = 0; i < 3; i++)
      last[i] = &ring[(trial + 3 - i) % 3];
    /* perf_analyzer's --request-count: its one window is the measurement */
    if (cfg->request_count || (trial >= 2 && stable(cfg, last, false))) {
      out->stable = true;
      break;
    }
    if (trial >= 2 && over_threshold(cfg, last))
      break;
  }
  if (!out->stable && out->trials >= 3 && cfg->throughput_stable && stable(cfg, last, true))
    out->stable = out->latency_unsettled = true;
}

static int run_step(struct gs_err *err, const struct gs_bench_config *cfg,
                    const struct sockaddr_storage *addr, unsigned addrlen, double level,
                    struct window *ring, struct stats *sum, struct gs_bench_step *out)
{
  struct window *last[3] = {&ring[0], &ring[1], &ring[2]};
  struct step_run r = {0};
  int rc;
  memset(out, 0, sizeof(*out));
  out->level = level;
  if ((rc = step_start(err, cfg, addr, addrlen, level, &r)) != 0)
    return rc;
  measure(cfg, &r, level, ring, last, out);
  step_stop(&r, r.n);
  step_fill(cfg, last, out->trials < 3 ? out->trials : 3, sum, out);
  return 0;
}

static void config_defaults(const struct gs_bench_config *in, struct gs_bench_config *c)
{
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  *c = *in;
  if (!c->threads)
    c->threads = cores > 0 ? (unsigned)cores : 1;
  if (!c->connections)
    c->connections = 64;
  if (!c->max_backlog)
    c->max_backlog = 1000000;
  if (!c->window_ms)
    c->window_ms = 5000;
  if (c->stability <= 0)
    c->stability = 10;
  if (!c->max_trials)
    c->max_trials = 10;
  if (!c->request_timeout_ms)
    c->request_timeout_ms = 30000;
  if (!c->batch)
    c->batch = 1;
}

/* The range and search as perf_analyzer's command line checks them. */
static int check_range(struct gs_err *err, const struct gs_bench_config *c)
{
  const char *what = c->mode == GS_BENCH_CLOSED ? "concurrency" : "request rate";
  double span = c->end > c->start ? c->end - c->start : 0;
  if (!(c->start > 0) || (c->mode == GS_BENCH_CLOSED && c->start != floor(c->start)))
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "the range must start at a positive %s",
                      c->mode == GS_BENCH_CLOSED ? "whole concurrency" : "request rate");
  if (c->end == 0 && !(c->threshold_us > 0))
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "a %s range without an end (END 0) needs a "
                      "latency threshold to stop at", what);
  if (c->binary && (!(c->threshold_us > 0) || c->end == 0 || c->end < c->start))
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "a binary search needs a latency threshold "
                      "and a %s range START:END with END at least START", what);
  if (!c->binary && c->end > 0 && span > 0 && c->step > 0 && span / c->step + 1 > 10000)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "the range has %.0f steps; at most 10000",
                      floor(span / c->step + 1e-9) + 1);
  return 0;
}

static int steps_room(struct gs_err *err, struct gs_bench_step **steps, size_t n, size_t *cap)
{
  struct gs_bench_step *ns;
  if (n < *cap)
    return 0;
  if (!(ns = realloc(*steps, (*cap ? *cap * 2 : 16) * sizeof(**steps))))
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory for %zu steps", n + 1);
  *steps = ns;
  *cap = *cap ? *cap * 2 : 16;
  return 0;
}

int gs_bench_run(struct gs_err *err, const struct gs_bench_config *in, struct gs_bench_step **steps,
                 size_t *nsteps)
{
  struct gs_bench_config cfg;
  struct gs_bench_search search;
  struct sockaddr_storage addr;
  struct window *ring = NULL;
  struct stats *sum = NULL;
  unsigned addrlen;
  size_t cap = 0;
  double level;
  int rc;
  *steps = NULL;
  *nsteps = 0;
  config_defaults(in, &cfg);
  if ((rc = check_range(err, &cfg)) != 0 || (rc = gs__bench_resolve(err, &cfg.url, &addr, &addrlen)) != 0)
    return rc;
  ring = calloc(3, sizeof(*ring));
  sum = malloc(sizeof(*sum));
  if (!ring || !sum) {
    free(ring), free(sum);
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory for the measurement windows");
  }
  gs_bench_search_init(&search, cfg.start, cfg.end, cfg.step, cfg.binary,
                       cfg.mode == GS_BENCH_CLOSED, cfg.threshold_us > 0);
  while (rc == 0 && gs_bench_search_next(&search, &level)) {
    struct gs_bench_step *s;
    if ((rc = steps_room(err, steps, *nsteps, &cap)) != 0 ||
        (rc = run_step(err, &cfg, &addr, addrlen, level, ring, sum, &(*steps)[*nsteps])) != 0)
      break;
    s = &(*steps)[(*nsteps)++];
    if (cfg.on_step)
      cfg.on_step(cfg.ctx, &cfg, s);
    gs_bench_search_result(&search, gs_bench_step_met(s));
  }
  free(ring);
  free(sum);
  return rc;
}
