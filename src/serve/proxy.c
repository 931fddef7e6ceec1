/* proxy.c: the load balancer: clients come in through the HTTP server of
 * http.c (limits, keep-alive, pipelining), each request goes to one ready
 * worker (power of two choices or round-robin) over kept-alive upstream
 * connections, with one retry when a connection fails before any response
 * byte, passive ejection, a response timeout (504) and 503 with no worker;
 * an operator's drain or disable per worker; counters and latency
 * histograms for /metrics. Bodies are buffered both ways (docs/proxy.md
 * says the limits). It knows worker ids and ports, not processes: the
 * supervisor or a static list tells it who is ready. */
#include "serve/internal.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define UP_MAX_HEAD 65536u /* an upstream response head larger is a 502 */
#define UP_READ_MIN 16384u /* free space wanted before each upstream read */
#define MAX_ATTEMPTS 4 /* one retry after a worker's failure, plus stale pooled connections */
#define SPARE_REQS 256        /* ended requests kept for reuse (no allocation per request) */
#define SPARE_OUT_MAX 65536u  /* larger request buffers are not kept */

/* Upper bounds of the latency histogram's buckets, in µs (Prometheus le=,
 * in seconds, 0.0005 to 10); a last bucket takes the rest (+Inf). */
static const uint64_t hist_le_us[] = {500,    1000,   2500,    5000,    10000,   25000,   50000,
                                      100000, 250000, 500000, 1000000, 2500000, 5000000, 10000000};
#define NBUCKETS (GS_NITEMS(hist_le_us) + 1)

struct hist {
  uint64_t bucket[NBUCKETS]; /* not cumulative: /metrics sums them */
  uint64_t count, sum_us;
};

struct pworker;
struct preq;

/* One upstream connection: idle in its worker's pool (req NULL) or carrying
 * one request. Its input buffer holds the response until it is complete. */
struct upconn {
  struct gs_proxy *p;
  struct pworker *wk;
  struct upconn *next; /* idle list */
  struct preq *req;
  int fd;
  bool reused;    /* came from the idle pool: a failure may just be a stale socket */
  size_t sent;
  char *in;
  size_t in_len, in_cap;
  /* the response */
  bool head_done, chunked, until_close, no_body, keep;
  int status;
  size_t head_len, content_length, body_len, leftover;
  char *extra, *ctype; /* headers passed on to the client, and Content-Type */
  union chunk_decoder dec;
};

struct pworker {
  struct gs_proxy *p;
  size_t id;
  unsigned port;
  bool ready, ejected;
  uint64_t eject_timer;
  enum gs_proxy_admin admin;
  unsigned inflight, fails;
  uint64_t requests, errors;
  struct hist latency; /* of the answers it gave */
  struct upconn *idle;
  unsigned nidle;
};

/* A client's request from the handler call to its answer. */
struct preq {
  struct gs_proxy *p;
  struct preq *prev, *next; /* every request under way */
  struct gs_http_conn *client;
  char *out; /* request head and body as sent upstream */
  size_t out_len, out_cap;
  bool head_method;
  unsigned attempts;
  bool retried; /* the one retry after a worker's failure is spent */
  uint64_t start_us;
  uint64_t timer;
  struct upconn *uc;
};

struct gs_proxy {
  struct gs_loop *loop;
  struct gs_proxy_config cfg;
  struct gs_http_server *http;
  int listen_fd;
  struct pworker **w; /* pointers: upstream connections and timers hold them as it grows */
  size_t cap;
  size_t *cand; /* scratch for the pick, as long as w */
  struct preq *reqs;
  size_t nreqs;
  struct preq *spare; /* ended requests, their out buffers kept */
  unsigned nspare;
  uint64_t rng, rr;
  uint64_t requests, errors;
  struct hist latency; /* of every answer, the proxy's own errors included */
};

static void up_close(struct upconn *uc);
static void dispatch(struct preq *r, struct pworker *avoid);
static void on_up_io(struct gs_loop *loop, int fd, void *data, unsigned mask);

/* ---- workers ---- */

static bool usable(const struct pworker *wk)
{
  return wk->ready && !wk->ejected && wk->port && wk->admin == GS_PROXY_ENABLED;
}

static void hist_add(struct hist *h, uint64_t us)
{
  size_t i = 0;
  while (i < GS_NITEMS(hist_le_us) && us > hist_le_us[i])
    i++;
  h->bucket[i]++;
  h->count++;
  h->sum_us += us;
}

static void drop_idle(struct pworker *wk)
{
  while (wk->idle) {
    struct upconn *uc = wk->idle;
    wk->idle = uc->next;
    up_close(uc);
  }
  wk->nidle = 0;
}

static int64_t on_readmit(struct gs_loop *loop, uint64_t id, void *data)
{
  struct pworker *wk = data;
  (void)loop;
  (void)id;
  wk->eject_timer = 0;
  wk->ejected = false;
  wk->fails = 0;
  if (wk->p->cfg.on_eject)
    wk->p->cfg.on_eject(wk->p->cfg.ctx, wk->id, false);
  return GS_LOOP_TIMER_DONE;
}

/* A failure of the worker itself (refused, reset, timed out): enough in a
 * row take it out of the pool for eject_ms, as Envoy's outlier detection. */
static void worker_failed(struct gs_proxy *p, struct pworker *wk)
{
  wk->errors++;
  if (++wk->fails < p->cfg.eject_after || wk->ejected)
    return;
  wk->ejected = true;
  drop_idle(wk);
  wk->eject_timer = gs_loop_timer_add(p->loop, p->cfg.eject_ms * 1000ull, on_readmit, wk);
  if (p->cfg.on_eject)
    p->cfg.on_eject(p->cfg.ctx, wk->id, true);
}

void gs_proxy_worker_set(struct gs_proxy *p, size_t w, unsigned port, bool ready)
{
  struct pworker *wk;
  if (w >= p->cfg.nworkers)
    return;
  wk = p->w[w];
  if (wk->port != port)
    drop_idle(wk); /* a restarted worker may listen elsewhere */
  wk->port = port;
  wk->ready = ready;
  wk->fails = 0;
  if (wk->eject_timer)
    gs_loop_timer_del(p->loop, wk->eject_timer);
  wk->eject_timer = 0;
  wk->ejected = false;
  if (!ready)
    drop_idle(wk);
}

bool gs_proxy_worker_usable(const struct gs_proxy *p, size_t w)
{
  return w < p->cfg.nworkers && usable(p->w[w]);
}

const char *gs_proxy_admin_name(enum gs_proxy_admin a, unsigned inflight)
{
  switch (a) {
  case GS_PROXY_ENABLED: return "enabled";
  case GS_PROXY_DRAINING: return inflight ? "draining" : "drained";
  case GS_PROXY_DISABLED: return "disabled";
  }
  return "unknown";
}

int gs_proxy_worker_admin(struct gs_proxy *p, size_t w, enum gs_proxy_admin a)
{
  if (w >= p->cfg.nworkers)
    return GS_E_NOT_FOUND;
  p->w[w]->admin = a;
  /* Drained or disabled: its pooled connections go now; those carrying a
   * request finish it and close (up_release sees it unusable). */
  if (a != GS_PROXY_ENABLED)
    drop_idle(p->w[w]);
  return 0;
}

int gs_proxy_worker_stats(const struct gs_proxy *p, size_t w, struct gs_proxy_worker_stats *out)
{
  const struct pworker *wk;
  if (w >= p->cfg.nworkers)
    return GS_E_NOT_FOUND;
  wk = p->w[w];
  *out = (struct gs_proxy_worker_stats){.port = wk->port, .ready = wk->ready,
                                        .ejected = wk->ejected, .in_pool = usable(wk),
                                        .admin = wk->admin, .inflight = wk->inflight,
                                        .requests = wk->requests, .errors = wk->errors};
  return 0;
}

int gs_proxy_add_worker(struct gs_proxy *p, size_t *w)
{
  struct pworker *wk;
  if (p->cfg.nworkers == p->cap) {
    size_t cap = p->cap ? 2 * p->cap : 8;
    struct pworker **bigger = realloc(p->w, cap * sizeof(*bigger));
    size_t *cand;
    if (!bigger)
      return GS_E_NO_MEMORY;
    p->w = bigger;
    if (!(cand = realloc(p->cand, cap * sizeof(*cand))))
      return GS_E_NO_MEMORY;
    p->cand = cand;
    p->cap = cap;
  }
  if (!(wk = calloc(1, sizeof(*wk))))
    return GS_E_NO_MEMORY;
  wk->p = p;
  wk->id = p->cfg.nworkers;
  p->w[p->cfg.nworkers++] = wk;
  *w = wk->id;
  return 0;
}

void gs_proxy_reconfigure(struct gs_proxy *p, enum gs_proxy_policy policy, unsigned max_inflight,
                          unsigned worker_timeout_ms)
{
  p->cfg.policy = policy;
  if (max_inflight)
    p->cfg.max_inflight = max_inflight;
  if (worker_timeout_ms)
    p->cfg.worker_timeout_ms = worker_timeout_ms;
}

size_t gs_proxy_count(const struct gs_proxy *p)
{
  return p->cfg.nworkers;
}

static uint64_t next_rand(struct gs_proxy *p)
{
  p->rng ^= p->rng << 13; /* xorshift64: cheap, and only balances load */
  p->rng ^= p->rng >> 7;
  p->rng ^= p->rng << 17;
  return p->rng;
}

/* A usable worker below its in-flight limit, other than avoid if there is
 * one; NULL if none. *busy tells whether some were skipped for the limit. */
static struct pworker *pick(struct gs_proxy *p, const struct pworker *avoid, bool *busy)
{
  size_t n = 0, a, b;
  *busy = false;
  for (size_t i = 0; i < p->cfg.nworkers; i++) {
    struct pworker *wk = p->w[i];
    if (!usable(wk))
      continue;
    if (wk->inflight >= p->cfg.max_inflight)
      *busy = true;
    else if (wk != avoid)
      p->cand[n++] = i;
  }
  if (!n)
    return avoid && usable(avoid) && avoid->inflight < p->cfg.max_inflight ? p->w[avoid->id]
                                                                             : NULL;
  if (p->cfg.policy == GS_PROXY_RR)
    return p->w[p->cand[p->rr++ % n]];
  if (n == 1)
    return p->w[p->cand[0]];
  a = next_rand(p) % n;
  b = next_rand(p) % (n - 1);
  if (b >= a)
    b++;
  return p->w[p->cand[b]]->inflight < p->w[p->cand[a]]->inflight ? p->w[p->cand[b]]
                                                                 : p->w[p->cand[a]];
}

/* ---- upstream connections ---- */

static void up_reset(struct upconn *uc)
{
  free(uc->extra);
  free(uc->ctype);
  uc->extra = uc->ctype = NULL;
  uc->in_len = uc->sent = 0;
  uc->head_done = uc->chunked = uc->until_close = uc->no_body = uc->keep = false;
  uc->head_len = uc->content_length = uc->body_len = uc->leftover = 0;
  memset(&uc->dec, 0, sizeof(uc->dec));
  uc->dec.d.consume_trailer = 1;
}

static void up_close(struct upconn *uc)
{
  gs_loop_close_fd(uc->p->loop, uc->fd);
  free(uc->in);
  free(uc->extra);
  free(uc->ctype);
  free(uc);
}

/* A new non-blocking connection to the worker; NULL if it failed at once. */
static struct upconn *up_connect(struct gs_proxy *p, struct pworker *wk)
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
      gs_loop_add(NULL, p->loop, uc->fd, GS_LOOP_READABLE | GS_LOOP_WRITABLE, on_up_io, uc) != 0) {
    up_close(uc);
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
      gs_loop_add(NULL, p->loop, uc->fd, GS_LOOP_READABLE, on_up_io, uc) != 0) {
    up_close(uc);
    return;
  }
  gs_loop_del(p->loop, uc->fd, GS_LOOP_WRITABLE);
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

/* ---- requests ---- */

static void req_free(struct preq *r)
{
  struct gs_proxy *p = r->p;
  if (r->timer)
    gs_loop_timer_del(p->loop, r->timer);
  if (r->prev)
    r->prev->next = r->next;
  else
    p->reqs = r->next;
  if (r->next)
    r->next->prev = r->prev;
  p->nreqs--;
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
  if (!r)
    return calloc(1, sizeof(*r));
  p->spare = r->next;
  p->nspare--;
  out = r->out;
  cap = r->out_cap;
  memset(r, 0, sizeof(*r));
  r->out = out;
  r->out_cap = cap;
  return r;
}

/* Answers the client with an error of the proxy's own and ends r. */
static void req_error(struct preq *r, int status, const char *fmt, ...) GS_PRINTF(3, 4);
static void req_error(struct preq *r, int status, const char *fmt, ...)
{
  struct gs_http_conn *client = r->client;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  r->p->errors++;
  hist_add(&r->p->latency, gs_loop_now_us() - r->start_us);
  req_free(r);
  gs_http_respond_error(client, status, "%s", msg);
}

/* Detaches r from its connection; the worker's in-flight count drops. */
static struct upconn *req_detach(struct preq *r)
{
  struct upconn *uc = r->uc;
  if (uc) {
    uc->wk->inflight--;
    uc->req = NULL;
    r->uc = NULL;
  }
  return uc;
}

/* The connection failed before any response byte: the request was not
 * answered, so it goes to another worker once (a stale pooled connection
 * does not spend that retry, nor count against the worker). */
static void up_failed_early(struct upconn *uc)
{
  struct preq *r = uc->req;
  struct pworker *wk = uc->wk;
  bool stale = uc->reused;
  req_detach(r);
  up_close(uc);
  /* Its pooled siblings most likely died with it (a killed worker): the
   * next try opens a fresh connection, whose failure is the worker's. */
  drop_idle(wk);
  if (!stale)
    worker_failed(r->p, wk);
  if (r->attempts >= MAX_ATTEMPTS || (!stale && r->retried)) {
    req_error(r, 502, "worker %zu failed before answering, and so did the retry", wk->id);
    return;
  }
  if (!stale)
    r->retried = true;
  dispatch(r, stale ? NULL : wk);
}

static void up_failed_late(struct upconn *uc, const char *why)
{
  struct preq *r = uc->req;
  struct pworker *wk = uc->wk;
  req_detach(r);
  up_close(uc);
  worker_failed(r->p, wk);
  req_error(r, 502, "worker %zu: %s", wk->id, why);
}

static int64_t on_req_timeout(struct gs_loop *loop, uint64_t id, void *data)
{
  struct preq *r = data;
  struct upconn *uc;
  size_t w = 0;
  (void)loop;
  (void)id;
  r->timer = 0;
  if ((uc = req_detach(r)) != NULL) {
    w = uc->wk->id;
    worker_failed(r->p, uc->wk);
    up_close(uc); /* the worker may still answer: that connection cannot be reused */
  }
  req_error(r, 504, "worker %zu did not answer within %u ms", w, r->p->cfg.worker_timeout_ms);
  return GS_LOOP_TIMER_DONE;
}

/* Writes what the socket takes of r's bytes; false when the connection failed. */
static bool up_write(struct upconn *uc)
{
  struct preq *r = uc->req;
  while (uc->sent < r->out_len) {
    ssize_t n = send(uc->fd, r->out + uc->sent, r->out_len - uc->sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      return true;
    if (n <= 0)
      return false;
    uc->sent += (size_t)n;
  }
  gs_loop_del(uc->p->loop, uc->fd, GS_LOOP_WRITABLE);
  return true;
}

/* Sends r to a worker: a pooled connection when there is one, else a new
 * one; 503 when no worker can take it. avoid: the worker that just failed. */
static void dispatch(struct preq *r, struct pworker *avoid)
{
  struct gs_proxy *p = r->p;
  bool busy;
  struct pworker *wk;
  struct upconn *uc;
  for (;;) {
    if (!(wk = pick(p, avoid, &busy))) {
      if (busy)
        req_error(r, 503, "every ready worker is at its limit of %u requests in flight",
                  p->cfg.max_inflight);
      else
        req_error(r, 503, "no worker is ready (they may be starting, restarting or ejected)");
      return;
    }
    r->attempts++;
    if ((uc = wk->idle) != NULL) {
      wk->idle = uc->next;
      wk->nidle--;
      uc->reused = true;
      break;
    }
    if ((uc = up_connect(p, wk)) != NULL)
      break;
    worker_failed(p, wk); /* refused at once: try another */
    if (r->attempts >= MAX_ATTEMPTS) {
      req_error(r, 502, "cannot connect to worker %zu (port %u)", wk->id, wk->port);
      return;
    }
    avoid = wk;
  }
  uc->req = r;
  r->uc = uc;
  wk->inflight++;
  wk->requests++;
  if (!r->timer)
    r->timer = gs_loop_timer_add(p->loop, p->cfg.worker_timeout_ms * 1000ull, on_req_timeout, r);
  if (uc->reused) {
    gs_loop_add(NULL, p->loop, uc->fd, GS_LOOP_READABLE, on_up_io, uc);
    if (!up_write(uc))
      up_failed_early(uc);
    else if (uc->sent < r->out_len &&
             gs_loop_add(NULL, p->loop, uc->fd, GS_LOOP_WRITABLE, on_up_io, uc) != 0)
      up_failed_early(uc);
  }
}

/* ---- upstream responses ---- */

static bool hdr_is(const struct phr_header *h, const char *name)
{
  return h->name_len == strlen(name) && strncasecmp(h->name, name, h->name_len) == 0;
}

/* Headers that describe one hop, or that gs_http_respond writes itself. */
static bool hop_header(const struct phr_header *h)
{
  static const char *const names[] = {"connection", "keep-alive", "transfer-encoding",
                                      "content-length", "content-type", "server", "te",
                                      "trailer", "upgrade", "proxy-connection"};
  for (size_t i = 0; i < GS_NITEMS(names); i++)
    if (hdr_is(h, names[i]))
      return true;
  return false;
}

static bool has_token(const struct phr_header *h, const char *tok)
{
  size_t n = strlen(tok);
  for (size_t i = 0; i + n <= h->value_len; i++)
    if (strncasecmp(h->value + i, tok, n) == 0)
      return true;
  return false;
}

static bool parse_len(const char *s, size_t n, size_t *out)
{
  size_t v = 0;
  if (n == 0 || n > 18)
    return false;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9')
      return false;
    v = v * 10 + (size_t)(s[i] - '0');
  }
  *out = v;
  return true;
}

/* Framing of the response head, and the headers to pass on; false = 502. */
static bool read_head_fields(struct upconn *uc, const struct phr_header *h, size_t nh, int minor)
{
  /* Each passed-on line is at most one byte longer than in the head
   * ("Name:value" gains a space), so this holds them all. */
  size_t el = 0, cap = uc->head_len + nh + 1;
  bool has_cl = false;
  uc->keep = minor >= 1;
  if (!(uc->extra = malloc(cap)))
    return false;
  for (size_t i = 0; i < nh; i++) {
    if (!h[i].name)
      return false;
    if (hdr_is(&h[i], "connection")) {
      if (has_token(&h[i], "close"))
        uc->keep = false;
      else if (has_token(&h[i], "keep-alive"))
        uc->keep = true;
    } else if (hdr_is(&h[i], "transfer-encoding")) {
      if (h[i].value_len != 7 || strncasecmp(h[i].value, "chunked", 7) != 0)
        return false;
      uc->chunked = true;
    } else if (hdr_is(&h[i], "content-length")) {
      if (!parse_len(h[i].value, h[i].value_len, &uc->content_length))
        return false;
      has_cl = true;
    } else if (hdr_is(&h[i], "content-type") && !uc->ctype) {
      uc->ctype = strndup(h[i].value, h[i].value_len);
    }
    if (!hop_header(&h[i]) && el + h[i].name_len + h[i].value_len + 4 < cap) {
      el += (size_t)sprintf(uc->extra + el, "%.*s: %.*s\r\n", (int)h[i].name_len, h[i].name,
                            (int)h[i].value_len, h[i].value);
    }
  }
  uc->extra[el] = 0;
  if (uc->chunked && has_cl)
    return false;
  uc->until_close = !uc->no_body && !uc->chunked && !has_cl;
  if (uc->until_close)
    uc->keep = false;
  return true;
}

/* 0 = head parsed, 1 = need more, -1 = malformed or too large. */
static int parse_up_head(struct upconn *uc)
{
  for (;;) {
    struct phr_header h[GS_HTTP_MAX_HEADERS];
    size_t nh = GS_HTTP_MAX_HEADERS, msg_len;
    const char *msg;
    int minor, status;
    int r = phr_parse_response(uc->in, uc->in_len, &minor, &status, &msg, &msg_len, h, &nh, 0);
    if (r == -2)
      return uc->in_len > UP_MAX_HEAD ? -1 : 1;
    if (r < 0)
      return -1;
    if (status >= 100 && status < 200) { /* interim (100 Continue): not the answer */
      memmove(uc->in, uc->in + r, uc->in_len - (size_t)r);
      uc->in_len -= (size_t)r;
      continue;
    }
    uc->status = status;
    uc->head_len = (size_t)r;
    uc->no_body = uc->req->head_method || status == 204 || status == 304;
    uc->head_done = true;
    return read_head_fields(uc, h, nh, minor) ? 0 : -1;
  }
}

/* 0 = response complete, 1 = need more, -1 = malformed or too large. */
static int parse_up(struct upconn *uc)
{
  size_t max = uc->p->cfg.limits.max_body, raw, n;
  ssize_t r;
  int rc;
  if (!uc->head_done && (rc = parse_up_head(uc)) != 0)
    return rc;
  if (uc->no_body) {
    uc->leftover = uc->in_len - uc->head_len;
    return 0;
  }
  if (uc->chunked) {
    raw = uc->head_len + uc->body_len; /* undecoded bytes start here */
    n = uc->in_len - raw;
    r = phr_decode_chunked(&uc->dec.d, uc->in + raw, &n);
    if (r == -1)
      return -1;
    uc->body_len += n;
    uc->in_len = raw + n + (r > 0 ? (size_t)r : 0);
    if (uc->body_len > max)
      return -1;
    if (r == -2)
      return 1;
    uc->leftover = (size_t)r;
    return 0;
  }
  if (uc->until_close) {
    uc->body_len = uc->in_len - uc->head_len;
    return uc->body_len > max ? -1 : 1; /* complete at EOF */
  }
  if (uc->content_length > max)
    return -1;
  if (uc->in_len - uc->head_len < uc->content_length)
    return 1;
  uc->body_len = uc->content_length;
  uc->leftover = uc->in_len - uc->head_len - uc->content_length;
  return 0;
}

/* Hands the complete response to the client, then pools the connection. */
static void up_complete(struct upconn *uc)
{
  struct preq *r = uc->req;
  struct gs_http_conn *client = r->client;
  struct pworker *wk = uc->wk;
  uint64_t us = gs_loop_now_us() - r->start_us;
  wk->fails = 0;
  hist_add(&wk->latency, us);
  hist_add(&r->p->latency, us);
  req_detach(r);
  req_free(r);
  /* The connection is out of every list while the answer is copied out of
   * its buffer, so a pipelined request dispatched meanwhile cannot take it. */
  gs_http_respond(client, uc->status, uc->ctype, uc->extra, uc->in + uc->head_len, uc->body_len);
  up_release(uc);
}

static bool in_reserve(struct upconn *uc)
{
  size_t limit = uc->p->cfg.limits.max_body + UP_MAX_HEAD + UP_READ_MIN, cap;
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
    up_failed_late(uc, "response larger than the proxy accepts");
    return;
  }
  n = recv(uc->fd, uc->in + uc->in_len, uc->in_cap - uc->in_len, 0);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
    return;
  if (n <= 0) {
    if (uc->in_len == 0 && !uc->head_done)
      up_failed_early(uc); /* nothing answered: safe to send elsewhere */
    else if (n == 0 && uc->head_done && uc->until_close)
      up_complete(uc);
    else
      up_failed_late(uc, "connection ended in the middle of the response");
    return;
  }
  uc->in_len += (size_t)n;
  if ((rc = parse_up(uc)) == 0)
    up_complete(uc);
  else if (rc < 0)
    up_failed_late(uc, "malformed or oversized HTTP response");
}

static void on_up_io(struct gs_loop *loop, int fd, void *data, unsigned mask)
{
  struct upconn *uc = data;
  (void)loop;
  (void)fd;
  if (!uc->req) { /* idle: the worker closed it (or talks out of turn) */
    idle_remove(uc);
    up_close(uc);
    return;
  }
  if (mask & GS_LOOP_WRITABLE) {
    if (!up_write(uc)) {
      up_failed_early(uc);
      return;
    }
  }
  if (mask & GS_LOOP_READABLE)
    up_read(uc);
}

/* ---- the client side ---- */

static bool is_hop_request_header(const struct gs_http_header *h)
{
  static const char *const names[] = {"connection", "keep-alive", "transfer-encoding",
                                      "content-length", "te", "trailer", "upgrade",
                                      "proxy-connection", "expect"};
  for (size_t i = 0; i < GS_NITEMS(names); i++)
    if (h->name_len == strlen(names[i]) && strncasecmp(h->name, names[i], h->name_len) == 0)
      return true;
  return false;
}

/* The request as the worker gets it, in r->out (grown if needed): HTTP/1.1,
 * kept alive, the (decoded) body framed by Content-Length. One copy of the
 * body: buffered mode. false on no memory. */
static bool build_upstream(struct preq *r, const struct gs_http_request *q)
{
  size_t cap = q->method_len + q->path_len + 64 + q->body_len, o;
  char *out;
  for (size_t i = 0; i < q->nheaders; i++)
    cap += q->headers[i].name_len + q->headers[i].value_len + 4;
  if (cap > r->out_cap) {
    free(r->out);
    r->out_cap = 0;
    if (!(r->out = malloc(cap)))
      return false;
    r->out_cap = cap;
  }
  out = r->out;
  o = (size_t)sprintf(out, "%.*s %.*s HTTP/1.1\r\n", (int)q->method_len, q->method,
                      (int)q->path_len, q->path);
  for (size_t i = 0; i < q->nheaders; i++) {
    const struct gs_http_header *h = &q->headers[i];
    if (is_hop_request_header(h))
      continue;
    memcpy(out + o, h->name, h->name_len);
    o += h->name_len;
    memcpy(out + o, ": ", 2);
    memcpy(out + o + 2, h->value, h->value_len);
    o += 2 + h->value_len;
    memcpy(out + o, "\r\n", 2);
    o += 2;
  }
  o += (size_t)sprintf(out + o, "Content-Length: %zu\r\n\r\n", q->body_len);
  memcpy(out + o, q->body, q->body_len);
  r->out_len = o + q->body_len;
  return true;
}

/* One histogram in Prometheus text: cumulative buckets, sum, count.
 * labels: "" or "worker=\"3\"," (trailing comma, for le= to follow). */
static void hist_print(FILE *f, const char *name, const char *labels, const struct hist *h)
{
  uint64_t cum = 0;
  size_t ll = strlen(labels);
  for (size_t i = 0; i < GS_NITEMS(hist_le_us); i++) {
    cum += h->bucket[i];
    fprintf(f, "%s_bucket{%sle=\"%g\"} %llu\n", name, labels, (double)hist_le_us[i] / 1e6,
            (unsigned long long)cum);
  }
  fprintf(f, "%s_bucket{%sle=\"+Inf\"} %llu\n", name, labels, (unsigned long long)h->count);
  /* sum and count take the labels without the trailing comma */
  fprintf(f, "%s_sum%s%.*s%s %.6f\n%s_count%s%.*s%s %llu\n", name, ll ? "{" : "",
          (int)(ll ? ll - 1 : 0), labels, ll ? "}" : "", (double)h->sum_us / 1e6, name,
          ll ? "{" : "", (int)(ll ? ll - 1 : 0), labels, ll ? "}" : "",
          (unsigned long long)h->count);
}

/* A per-worker metric family: HELP, TYPE, one line per worker. */
static void family(FILE *f, const struct gs_proxy *p, const char *name, const char *type,
                   const char *help, unsigned long long (*value)(const struct pworker *))
{
  fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
  for (size_t i = 0; i < p->cfg.nworkers; i++)
    fprintf(f, "%s{worker=\"%zu\"} %llu\n", name, i, value(p->w[i]));
}

static unsigned long long v_requests(const struct pworker *w) { return w->requests; }
static unsigned long long v_errors(const struct pworker *w) { return w->errors; }
static unsigned long long v_inflight(const struct pworker *w) { return w->inflight; }
static unsigned long long v_up(const struct pworker *w) { return usable(w); }

static unsigned long long v_restarts(const struct pworker *w)
{
  struct gs_super_info info;
  return gs_super_info(w->p->cfg.super, w->id, &info) == 0 ? info.restarts : 0;
}

static void write_metrics(struct gs_proxy *p, FILE *f)
{
  size_t inflight = 0;
  for (size_t i = 0; i < p->cfg.nworkers; i++)
    inflight += p->w[i]->inflight;
  fprintf(f, "# HELP gpuslice_proxy_requests_total Requests the proxy accepted.\n"
             "# TYPE gpuslice_proxy_requests_total counter\n"
             "gpuslice_proxy_requests_total %llu\n"
             "# HELP gpuslice_proxy_errors_total Answers the proxy made itself (502, 503, 504).\n"
             "# TYPE gpuslice_proxy_errors_total counter\n"
             "gpuslice_proxy_errors_total %llu\n"
             "# HELP gpuslice_proxy_inflight Requests sent to workers and not yet answered.\n"
             "# TYPE gpuslice_proxy_inflight gauge\n"
             "gpuslice_proxy_inflight %zu\n"
             "# HELP gpuslice_proxy_request_duration_seconds From a request's arrival to its "
             "answer (the proxy's errors too).\n"
             "# TYPE gpuslice_proxy_request_duration_seconds histogram\n",
          (unsigned long long)p->requests, (unsigned long long)p->errors, inflight);
  hist_print(f, "gpuslice_proxy_request_duration_seconds", "", &p->latency);
  family(f, p, "gpuslice_worker_requests_total", "counter",
         "Requests sent to a worker (retries count).", v_requests);
  family(f, p, "gpuslice_worker_errors_total", "counter",
         "Refusals, resets and timeouts of a worker.", v_errors);
  family(f, p, "gpuslice_worker_inflight", "gauge", "Requests sent to a worker, unanswered.",
         v_inflight);
  family(f, p, "gpuslice_worker_up", "gauge",
         "1 when the worker is in the pool (ready, not ejected, enabled).", v_up);
  if (p->cfg.super)
    family(f, p, "gpuslice_worker_restarts_total", "counter", "Starts after the first one.",
           v_restarts);
  fprintf(f, "# HELP gpuslice_worker_request_duration_seconds From a request's arrival at the "
             "proxy to the answer this worker gave.\n"
             "# TYPE gpuslice_worker_request_duration_seconds histogram\n");
  for (size_t i = 0; i < p->cfg.nworkers; i++) {
    char labels[48];
    snprintf(labels, sizeof(labels), "worker=\"%zu\",", i);
    hist_print(f, "gpuslice_worker_request_duration_seconds", labels, &p->w[i]->latency);
  }
  if (p->cfg.metrics_more)
    p->cfg.metrics_more(p->cfg.ctx, f);
}

size_t gs_proxy_latency(const struct gs_proxy *p, const uint64_t **le_us, uint64_t *counts,
                        size_t max)
{
  size_t n = max < NBUCKETS ? max : NBUCKETS;
  *le_us = hist_le_us;
  memcpy(counts, p->latency.bucket, n * sizeof(*counts));
  return n;
}

/* Prometheus text for /metrics. */
static void respond_metrics(struct gs_proxy *p, struct gs_http_conn *conn)
{
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) {
    gs_http_respond_error(conn, 500, "out of memory writing metrics");
    return;
  }
  write_metrics(p, f);
  if (fclose(f) != 0) {
    free(buf);
    gs_http_respond_error(conn, 500, "out of memory writing metrics");
    return;
  }
  gs_http_respond(conn, 200, "text/plain; version=0.0.4", NULL, buf, len);
  free(buf);
}

static void on_request(void *ctx, struct gs_http_conn *conn, const struct gs_http_request *q)
{
  struct gs_proxy *p = ctx;
  struct preq *r;
  if (q->path_len == 8 && memcmp(q->path, "/metrics", 8) == 0) {
    respond_metrics(p, conn);
    return;
  }
  p->requests++;
  if (!(r = req_new(p)) || !build_upstream(r, q)) {
    if (r)
      free(r->out);
    free(r);
    p->errors++;
    gs_http_respond_error(conn, 500, "out of memory forwarding a request of %zu bytes",
                          q->body_len);
    return;
  }
  r->p = p;
  r->client = conn;
  r->start_us = gs_loop_now_us();
  r->head_method = q->method_len == 4 && memcmp(q->method, "HEAD", 4) == 0;
  r->next = p->reqs;
  if (p->reqs)
    p->reqs->prev = r;
  p->reqs = r;
  p->nreqs++;
  dispatch(r, NULL);
}

/* ---- life ---- */

int gs_proxy_new(struct gs_err *err, struct gs_loop *loop, const struct gs_proxy_config *cfg,
                 struct gs_proxy **out)
{
  struct gs_proxy *p = calloc(1, sizeof(*p));
  int rc;
  *out = NULL;
  if (!p)
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory creating a proxy");
  p->loop = loop;
  p->cfg = *cfg;
  p->listen_fd = -1;
  p->rng = 0x9e3779b97f4a7c15ull ^ gs_loop_now_us();
  if (!p->cfg.max_inflight)
    p->cfg.max_inflight = 64;
  if (!p->cfg.worker_timeout_ms)
    p->cfg.worker_timeout_ms = 30000;
  if (!p->cfg.eject_after)
    p->cfg.eject_after = 3;
  if (!p->cfg.eject_ms)
    p->cfg.eject_ms = 10000;
  /* As many idle connections as requests may be in flight: a smaller pool
   * closes and reopens upstream connections under load (TIME_WAIT churn). */
  if (!p->cfg.idle_pool)
    p->cfg.idle_pool = p->cfg.max_inflight;
  if (!p->cfg.limits.max_conns)
    gs_http_limits_default(&p->cfg.limits);
  p->cfg.nworkers = 0;
  for (size_t i = 0; i < cfg->nworkers; i++) {
    size_t w;
    if (gs_proxy_add_worker(p, &w) != 0) {
      gs_proxy_free(p);
      return gs_err_set(err, GS_E_NO_MEMORY, "out of memory creating a proxy of %zu workers",
                        cfg->nworkers);
    }
  }
  if ((rc = gs_http_server_new(err, loop, &p->cfg.limits, on_request, p, &p->http)) != 0) {
    gs_proxy_free(p);
    return rc;
  }
  *out = p;
  return 0;
}

int gs_proxy_listen_fd(struct gs_err *err, struct gs_proxy *p, int fd)
{
  int rc = gs_http_server_listen_fd(err, p->http, fd);
  if (rc == 0)
    p->listen_fd = fd;
  return rc;
}

void gs_proxy_drain(struct gs_proxy *p)
{
  /* The listening socket stays open (closed with the server) but unwatched:
   * connections queue in its backlog unanswered, and are reset at exit. */
  if (p->listen_fd >= 0)
    gs_loop_del(p->loop, p->listen_fd, GS_LOOP_READABLE);
}

size_t gs_proxy_inflight(const struct gs_proxy *p)
{
  return p->nreqs;
}

void gs_proxy_free(struct gs_proxy *p)
{
  if (!p)
    return;
  /* Requests first: they point at client connections the server frees. */
  while (p->reqs) {
    struct preq *r = p->reqs;
    struct upconn *uc = req_detach(r);
    if (uc)
      up_close(uc);
    req_free(r);
  }
  while (p->spare) {
    struct preq *r = p->spare;
    p->spare = r->next;
    free(r->out);
    free(r);
  }
  for (size_t i = 0; p->w && i < p->cfg.nworkers; i++) {
    drop_idle(p->w[i]);
    if (p->w[i]->eject_timer)
      gs_loop_timer_del(p->loop, p->w[i]->eject_timer);
    free(p->w[i]);
  }
  gs_http_server_free(p->http);
  free(p->w);
  free(p->cand);
  free(p);
}
