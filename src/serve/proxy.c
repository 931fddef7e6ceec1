/* proxy.c: the load balancer: clients come in through the HTTP server of
 * http.c (limits, keep-alive, pipelining), each request goes to one ready
 * worker (power of two choices or round-robin) over kept-alive upstream
 * connections, with one retry when a worker fails before any of its answer
 * reached the client (refused, reset, a malformed head, nothing within the
 * first-byte timeout), passive ejection whose time out doubles and ends in a
 * trial request, a response timeout (504), 503 with no worker or past the
 * memory budget for request bodies;
 * an operator's drain or disable per worker; counters and latency
 * histograms for /metrics. Bodies are streamed both ways: the request's
 * head goes to the worker with its first body bytes and the rest follows as
 * it arrives (re-chunked if the client sent chunks), the response goes to
 * the client as it comes, and either side stops being read while the other
 * holds STREAM_HIGH unsent bytes. The first RETRY_KEEP bytes of a request are
 * kept for the retry. It knows worker ids and ports, not processes: the
 * supervisor or a static list tells it who is ready.
 * Threads: with cfg.threads > 1 the proxy on the caller's loop (the main
 * one) has shards, each a proxy of its own on its own loop and thread,
 * accepting from the same listening socket, with its own requests and
 * upstream pools. The main proxy alone is changed through the interface;
 * each change is copied into every shard on its thread (under the main
 * proxy's mutex, woken by an eventfd) before the call returns. Counters and
 * histograms are written by their own thread and read by any (relaxed
 * atomics, single writer); a worker's in-flight count is shared by all
 * threads (atomic adds) so that p2c and the in-flight limit see the whole. */
#include "serve/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#define UP_MAX_HEAD 65536u /* an upstream response head larger is a 502 */
#define UP_READ_MIN 16384u /* free space wanted before each upstream read */
#define MAX_ATTEMPTS 4 /* one retry after a worker's failure, plus stale pooled connections */
#define EJECT_MAX_MS 300000u /* the longest time out of the pool after failures, as Envoy's */
#define FIRST_BYTE_MS 10000u /* default: a request sent whole and unanswered this long is retried */
#define OVER_BUDGET "the proxy holds as many request bodies as its memory budget allows; retry later"
#define SPARE_REQS 256        /* ended requests kept for reuse (no allocation per request) */
#define SPARE_OUT_MAX 65536u  /* larger request buffers are not kept */
/* Bytes of a request (head and body) kept until its answer begins, so a
 * retry can resend them: a request that outgrew them is not retried (502). */
#define RETRY_KEEP (1024u << 10)
/* Unsent bytes one side may queue before the other stops being read. */
#define STREAM_HIGH (256u << 10)
/* Workers whose in-flight count all threads share; later ids count per thread. */
#define SHARED_MAX 4096u
#define SHARD_LOOP_FDS 65536 /* as serve's own loop: fds below its raised limit */

/* Upper bounds of the latency histogram's buckets, in µs (Prometheus le=,
 * in seconds, 0.0005 to 10); a last bucket takes the rest (+Inf). */
/* Dense from 10 to 100 ms, where latency budgets sit, so the autoscaler's
 * percentile, read from these buckets, is within a few ms there. */
static const uint64_t hist_le_us[] = {
    500,    1000,   2000,   3000,   5000,   7500,    10000,   15000,   20000,   25000,  30000, 40000,
    50000,  60000,  75000,  100000, 150000, 200000,  250000,  500000,  1000000, 2500000, 5000000,
    10000000};
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
  bool paused;    /* not read: the client has STREAM_HIGH bytes of the answer unsent */
  size_t sent;    /* bytes of the request sent, from its start */
  char *in;       /* the response head, then each read's body bytes until passed on */
  size_t in_len, in_cap;
  /* the response */
  struct gs_http_resp resp;
  bool head_done, keep;
  size_t leftover; /* bytes past the answer's end: the connection cannot be reused */
  char *extra;   /* headers passed on to the client, then Content-Type: kept for the next answer */
  size_t extra_cap;
  char *ctype;   /* in extra, or NULL */
};

struct pworker {
  struct gs_proxy *p;
  size_t id;
  unsigned port;
  bool ready, ejected;
  /* Ejected, its time out over (or the supervisor's probe said ready): the
   * next request that can be retried elsewhere is its trial (trying while
   * under way); it comes back only when that one is answered. */
  bool trial, trying;
  unsigned trial_gen;   /* the trial under way (a request's trial field names it) */
  unsigned ejections;   /* in a row: each doubles the time out (eject_backoff) */
  uint64_t back_us;     /* when it last came back (the doubling ends after as long) */
  uint64_t eject_timer;
  enum gs_proxy_admin admin;
  uint64_t sets;      /* main: gs_proxy_worker_set calls; shard: those applied */
  unsigned restarts;  /* main: the supervisor's count at the last set (for shards' /metrics) */
  unsigned inflight, fails; /* inflight: this thread's */
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
  char *out; /* the request as sent upstream: head, then the framed body so far */
  size_t out_len, out_cap;
  size_t base;    /* bytes dropped from out's front, sent (past RETRY_KEEP): no retry */
  bool body_done; /* the client's body has all arrived (or there is none) */
  bool chunked;   /* the body goes upstream in chunks */
  bool started;   /* the answer's head went to the client: a failure can only close it */
  bool paused;    /* the client is not read: STREAM_HIGH request bytes are unsent */
  bool head_method;
  unsigned attempts;
  bool retried; /* the one retry after a worker's failure is spent */
  unsigned trial; /* its worker's trial_gen when it is that worker's trial, else 0 */
  bool over;    /* out_room failed on the memory budget, not on malloc */
  size_t charged; /* bytes of out taken from the memory budget */
  uint64_t start_us;
  uint64_t timer;    /* the worker timeout */
  uint64_t fb_timer; /* the first-byte timeout: sent whole, nothing answered yet */
  struct upconn *uc;
};

struct gs_proxy {
  struct gs_net_loop *loop;
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
  /* threads (see the top of the file) */
  struct gs_proxy *main;     /* itself for the main proxy */
  struct gs_proxy **shards;  /* main: the other threads' proxies */
  size_t nshards;
  unsigned *shared;          /* main's: per worker id below SHARED_MAX, requests in flight */
  struct gs_net_conns conns;   /* main's: client connections of every thread, against max_conns */
  struct gs_net_budget budget; /* main's: request bytes held, the retry buffers of every thread
                                * and the gRPC side's messages (grpc_proxy.c) */
  pthread_mutex_t mu;        /* main's: its pool's fields, shards' worker arrays, gen */
  pthread_cond_t cond;       /* main's: a shard applied a generation */
  uint64_t gen;              /* main: changes made; shard: changes applied */
  bool draining, stop;       /* main: drained; shard: told to end its loop */
  bool started;              /* shard: its thread was created (to be joined) */
  bool running;              /* shard: its loop runs (and applies changes) */
  int efd;                   /* shard: the main proxy's wake-up */
  int inbox[2];              /* with shards: a pipe of connections other threads hand this one */
  unsigned handed;           /* fds in inbox (atomic: any thread adds, this one takes) */
  pthread_t thread;
};

/* Every proxy of main proxy m's group: m, then its shards. */
static struct gs_proxy *group_at(const struct gs_proxy *m, size_t i)
{
  return i ? m->shards[i - 1] : m->main;
}

/* Counters written by one thread and read by others. */
static void cnt_add(uint64_t *c, uint64_t v)
{
  __atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + v, __ATOMIC_RELAXED);
}

static uint64_t cnt_get(const uint64_t *c)
{
  return __atomic_load_n(c, __ATOMIC_RELAXED);
}

static void inflight_add(struct gs_proxy *p, struct pworker *wk, int d)
{
  __atomic_store_n(&wk->inflight, __atomic_load_n(&wk->inflight, __ATOMIC_RELAXED) + (unsigned)d,
                   __ATOMIC_RELAXED);
  if (wk->id < SHARED_MAX)
    __atomic_fetch_add(&p->main->shared[wk->id], (unsigned)d, __ATOMIC_RELAXED);
}

/* Requests in flight to wk from every thread (from this one past SHARED_MAX). */
static unsigned inflight_of(const struct gs_proxy *p, const struct pworker *wk)
{
  if (wk->id < SHARED_MAX)
    return __atomic_load_n(&p->main->shared[wk->id], __ATOMIC_RELAXED);
  return wk->inflight;
}

static void up_close(struct upconn *uc);
static void dispatch(struct preq *r, struct pworker *avoid);
static void on_up_io(struct gs_net_loop *loop, int fd, void *data, unsigned mask);

/* ---- workers ---- */

static bool ejected(const struct pworker *wk)
{
  return __atomic_load_n(&wk->ejected, __ATOMIC_RELAXED);
}

static void set_ejected(struct pworker *wk, bool e)
{
  __atomic_store_n(&wk->ejected, e, __ATOMIC_RELAXED);
}

static bool usable(const struct pworker *wk)
{
  return wk->ready && !ejected(wk) && wk->port && wk->admin == GS_PROXY_ENABLED;
}

static void hist_add(struct hist *h, uint64_t us)
{
  size_t i = 0;
  while (i < GS_NITEMS(hist_le_us) && us > hist_le_us[i])
    i++;
  cnt_add(&h->bucket[i], 1);
  cnt_add(&h->count, 1);
  cnt_add(&h->sum_us, us);
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

/* How long the n-th ejection in a row lasts: eject_ms, doubled each time,
 * at most EJECT_MAX_MS (or eject_ms if that is longer). */
static uint64_t eject_backoff_ms(const struct gs_proxy *p, unsigned n)
{
  uint64_t ms = p->cfg.eject_ms, cap = ms > EJECT_MAX_MS ? ms : EJECT_MAX_MS;
  for (unsigned i = 1; i < n && ms < cap; i++)
    ms *= 2;
  return ms < cap ? ms : cap;
}

static int64_t on_readmit(struct gs_net_loop *loop, uint64_t id, void *data)
{
  struct pworker *wk = data;
  (void)loop;
  (void)id;
  wk->eject_timer = 0;
  wk->trial = true; /* its next request decides (pick) */
  return GS_NET_TIMER_DONE;
}

/* Out of the pool for the next backoff; a failed trial doubles it. */
static void eject(struct gs_proxy *p, struct pworker *wk)
{
  bool was = ejected(wk);
  wk->ejections++;
  wk->trial = wk->trying = false;
  set_ejected(wk, true);
  drop_idle(wk);
  if (wk->eject_timer)
    gs_net_loop_timer_del(p->loop, wk->eject_timer);
  wk->eject_timer =
      gs_net_loop_timer_add(p->loop, eject_backoff_ms(p, wk->ejections) * 1000ull, on_readmit, wk);
  if (!was && p->cfg.on_eject)
    p->cfg.on_eject(p->cfg.ctx, wk->id, true);
}

/* A real request answered (trial: its trial_gen if it was the worker's
 * trial): a worker on trial is back; one back for longer than its last time
 * out starts its doubling afresh. */
static void worker_answered(struct gs_proxy *p, struct pworker *wk, unsigned trial)
{
  uint64_t now = gs_net_loop_now_us();
  wk->fails = 0;
  if (trial && wk->trying && trial == wk->trial_gen) {
    wk->trial = wk->trying = false;
    set_ejected(wk, false);
    wk->back_us = now;
    if (p->cfg.on_eject)
      p->cfg.on_eject(p->cfg.ctx, wk->id, false);
  } else if (wk->ejections && !ejected(wk) &&
             now - wk->back_us > eject_backoff_ms(p, wk->ejections) * 1000ull) {
    wk->ejections = 0;
  }
}

/* A failure of the worker itself (refused, reset, timed out, a malformed
 * answer): enough in a row take it out of the pool, as Envoy's outlier
 * detection; any failure during a trial at once. */
static void worker_failed(struct gs_proxy *p, struct pworker *wk)
{
  cnt_add(&wk->errors, 1);
  if (wk->trying || (++wk->fails >= p->cfg.eject_after && !ejected(wk)))
    eject(p, wk);
}

/* A trial whose request ended with no verdict (the client went away): the
 * worker's next request is its trial. */
static void trial_drop(struct pworker *wk, unsigned trial)
{
  if (trial && wk->trying && trial == wk->trial_gen)
    wk->trying = false;
}

static void worker_set_local(struct gs_proxy *p, size_t w, unsigned port, bool ready)
{
  struct pworker *wk = p->w[w];
  if (wk->port != port)
    drop_idle(wk); /* a restarted worker may listen elsewhere */
  if (ready && ejected(wk) && !wk->trial) {
    /* its probe answers (restarted, or ready again): no need to wait out
     * the time out, but one real request must succeed before it is back */
    if (wk->eject_timer)
      gs_net_loop_timer_del(p->loop, wk->eject_timer);
    wk->eject_timer = 0;
    wk->trial = true;
  }
  wk->port = port;
  wk->ready = ready;
  wk->fails = 0;
  if (!ready)
    drop_idle(wk);
}

static void worker_admin_local(struct gs_proxy *p, size_t w, enum gs_proxy_admin a)
{
  p->w[w]->admin = a;
  /* Drained or disabled: its pooled connections go now; those carrying a
   * request finish it and close (up_release sees it unusable). */
  if (a != GS_PROXY_ENABLED)
    drop_idle(p->w[w]);
}

static int add_worker_local(struct gs_proxy *p, size_t *w)
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

/* Shard side: makes its pool what the main proxy's is (main's mutex held). */
static void shard_apply(struct gs_proxy *s)
{
  struct gs_proxy *m = s->main;
  size_t w;
  while (s->cfg.nworkers < m->cfg.nworkers && add_worker_local(s, &w) == 0)
    ;
  for (size_t i = 0; i < s->cfg.nworkers; i++) {
    const struct pworker *mw = m->w[i];
    if (s->w[i]->sets != mw->sets) {
      s->w[i]->sets = mw->sets;
      worker_set_local(s, i, mw->port, mw->ready);
    }
    if (s->w[i]->admin != mw->admin)
      worker_admin_local(s, i, mw->admin);
  }
  s->cfg.policy = m->cfg.policy;
  s->cfg.max_inflight = m->cfg.max_inflight;
  s->cfg.worker_timeout_ms = m->cfg.worker_timeout_ms;
  if (m->draining && !s->draining) {
    s->draining = true;
    if (s->listen_fd >= 0)
      gs_net_loop_del(s->loop, s->listen_fd, GS_NET_READABLE);
  }
  if (s->stop)
    gs_net_loop_stop(s->loop);
  s->gen = m->gen;
}

static void on_sync(struct gs_net_loop *loop, int fd, void *data, unsigned mask)
{
  struct gs_proxy *s = data;
  uint64_t v;
  (void)loop;
  (void)mask;
  if (read(fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
    return;
  pthread_mutex_lock(&s->main->mu);
  shard_apply(s);
  pthread_cond_broadcast(&s->main->cond);
  pthread_mutex_unlock(&s->main->mu);
}

/* Main side, mutex held: a change was made; returns once every running
 * shard applied it (the pool is the same in every thread from then on). */
static void publish(struct gs_proxy *m)
{
  uint64_t one = 1;
  m->gen++;
  for (size_t i = 0; i < m->nshards; i++)
    if (m->shards[i]->running) /* EAGAIN: a wake-up is pending already */
      (void)!write(m->shards[i]->efd, &one, sizeof(one));
  for (size_t i = 0; i < m->nshards; i++)
    while (m->shards[i]->running && m->shards[i]->gen < m->gen)
      pthread_cond_wait(&m->cond, &m->mu);
}

void gs_proxy_worker_set(struct gs_proxy *p, size_t w, unsigned port, bool ready)
{
  struct gs_super_info info;
  if (w >= p->cfg.nworkers)
    return;
  pthread_mutex_lock(&p->mu);
  worker_set_local(p, w, port, ready);
  p->w[w]->sets++;
  if (p->cfg.super && gs_super_info(p->cfg.super, w, &info) == 0)
    p->w[w]->restarts = info.restarts;
  publish(p);
  pthread_mutex_unlock(&p->mu);
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
  pthread_mutex_lock(&p->mu);
  worker_admin_local(p, w, a);
  publish(p);
  pthread_mutex_unlock(&p->mu);
  return 0;
}

/* Worker w's requests and errors summed over every thread (mutex held). */
static void worker_sums(const struct gs_proxy *m, size_t w, uint64_t *requests, uint64_t *errors)
{
  *requests = cnt_get(&m->w[w]->requests);
  *errors = cnt_get(&m->w[w]->errors);
  for (size_t i = 0; i < m->nshards; i++)
    if (w < m->shards[i]->cfg.nworkers) {
      *requests += cnt_get(&m->shards[i]->w[w]->requests);
      *errors += cnt_get(&m->shards[i]->w[w]->errors);
    }
}

/* Worker w's requests in flight over every thread (mutex held). */
static unsigned worker_inflight(const struct gs_proxy *m, size_t w)
{
  unsigned n;
  if (w < SHARED_MAX)
    return inflight_of(m, m->w[w]);
  n = __atomic_load_n(&m->w[w]->inflight, __ATOMIC_RELAXED);
  for (size_t i = 0; i < m->nshards; i++)
    if (w < m->shards[i]->cfg.nworkers)
      n += __atomic_load_n(&m->shards[i]->w[w]->inflight, __ATOMIC_RELAXED);
  return n;
}

int gs_proxy_worker_stats(const struct gs_proxy *p, size_t w, struct gs_proxy_worker_stats *out)
{
  const struct pworker *wk;
  struct gs_proxy *m = (struct gs_proxy *)p; /* the mutex only */
  if (w >= p->cfg.nworkers)
    return GS_E_NOT_FOUND;
  wk = p->w[w];
  pthread_mutex_lock(&m->mu);
  *out = (struct gs_proxy_worker_stats){.port = wk->port, .ready = wk->ready,
                                        .ejected = ejected(wk), .in_pool = usable(wk),
                                        .admin = wk->admin, .inflight = worker_inflight(p, w),
                                        .trial = wk->trial, .ejections = wk->ejections};
  worker_sums(p, w, &out->requests, &out->errors);
  pthread_mutex_unlock(&m->mu);
  return 0;
}

int gs_proxy_add_worker(struct gs_proxy *p, size_t *w)
{
  int rc;
  pthread_mutex_lock(&p->mu);
  if ((rc = add_worker_local(p, w)) == 0)
    publish(p);
  pthread_mutex_unlock(&p->mu);
  return rc;
}

void gs_proxy_reconfigure(struct gs_proxy *p, enum gs_proxy_policy policy, unsigned max_inflight,
                          unsigned worker_timeout_ms)
{
  pthread_mutex_lock(&p->mu);
  p->cfg.policy = policy;
  if (max_inflight)
    p->cfg.max_inflight = max_inflight;
  if (worker_timeout_ms)
    p->cfg.worker_timeout_ms = worker_timeout_ms;
  publish(p);
  pthread_mutex_unlock(&p->mu);
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

/* A worker on trial that is ready for it (its probe answers, an operator
 * has not taken it out, no other trial under way), marked trying; NULL if
 * none. A request that could not be retried elsewhere is never its trial. */
static struct pworker *pick_trial(struct gs_proxy *p)
{
  for (size_t i = 0; i < p->cfg.nworkers; i++) {
    struct pworker *wk = p->w[i];
    if (wk->trial && !wk->trying && wk->ready && wk->port && wk->admin == GS_PROXY_ENABLED) {
      wk->trying = true;
      if (!++wk->trial_gen)
        wk->trial_gen = 1; /* 0 means "no trial" */
      return wk;
    }
  }
  return NULL;
}

/* A usable worker below its in-flight limit, other than avoid if there is
 * one; NULL if none. *busy tells whether some were skipped for the limit.
 * trial_ok: the request may be a trial (pick_trial), which comes first. */
static struct pworker *pick(struct gs_proxy *p, const struct pworker *avoid, bool trial_ok,
                            bool *busy)
{
  size_t n = 0, a, b;
  struct pworker *t;
  *busy = false;
  if (trial_ok && (t = pick_trial(p)) != NULL)
    return t;
  for (size_t i = 0; i < p->cfg.nworkers; i++) {
    struct pworker *wk = p->w[i];
    if (!usable(wk))
      continue;
    if (inflight_of(p, wk) >= p->cfg.max_inflight)
      *busy = true;
    else if (wk != avoid)
      p->cand[n++] = i;
  }
  if (!n)
    return avoid && usable(avoid) && inflight_of(p, avoid) < p->cfg.max_inflight
               ? p->w[avoid->id]
               : NULL;
  if (p->cfg.policy == GS_PROXY_RR)
    return p->w[p->cand[p->rr++ % n]];
  if (n == 1)
    return p->w[p->cand[0]];
  a = next_rand(p) % n;
  b = next_rand(p) % (n - 1);
  if (b >= a)
    b++;
  return inflight_of(p, p->w[p->cand[b]]) < inflight_of(p, p->w[p->cand[a]]) ? p->w[p->cand[b]]
                                                                             : p->w[p->cand[a]];
}

/* ---- the worker pool as the gRPC proxy (grpc_proxy.c) uses it ---- */

int gs__proxy_acquire(struct gs_proxy *p, size_t avoid, size_t *w, unsigned *trial)
{
  bool busy;
  /* a first attempt (no worker to avoid) has its retry left: it may be a trial */
  struct pworker *wk = pick(p, avoid < p->cfg.nworkers ? p->w[avoid] : NULL,
                            avoid >= p->cfg.nworkers, &busy);
  if (!wk)
    return busy ? GS_E_IN_USE : GS_E_NOT_FOUND;
  *trial = ejected(wk) ? wk->trial_gen : 0; /* only a trial is ever given an ejected worker */
  inflight_add(p, wk, 1);
  cnt_add(&wk->requests, 1);
  cnt_add(&p->requests, 1);
  *w = wk->id;
  return 0;
}

void gs__proxy_release(struct gs_proxy *p, size_t w, enum gs__proxy_outcome o, uint64_t us,
                       unsigned trial)
{
  struct pworker *wk = w < p->cfg.nworkers ? p->w[w] : NULL;
  if (!wk)
    return;
  inflight_add(p, wk, -1);
  if (o == GS__PROXY_ANSWERED) {
    worker_answered(p, wk, trial);
    hist_add(&wk->latency, us);
  } else if (o == GS__PROXY_WORKER_FAILED) {
    worker_failed(p, wk);
  } else {
    trial_drop(wk, trial);
  }
  hist_add(&p->latency, us);
}

void gs__proxy_error(struct gs_proxy *p)
{
  cnt_add(&p->errors, 1);
}

const struct gs_proxy_config *gs__proxy_config(const struct gs_proxy *p)
{
  return &p->cfg;
}

struct gs_net_budget *gs__proxy_budget(struct gs_proxy *p)
{
  return &p->main->budget;
}

unsigned gs__proxy_thread_conns(const struct gs_proxy *p, size_t i)
{
  return i <= p->nshards ? gs_http_server_conns(group_at(p, i)->http) : 0;
}

/* ---- upstream connections ---- */

static void up_reset(struct upconn *uc)
{
  uc->ctype = NULL;
  uc->in_len = uc->sent = uc->leftover = 0;
  uc->head_done = uc->keep = uc->paused = false;
}

static void up_close(struct upconn *uc)
{
  gs_net_loop_close_fd(uc->p->loop, uc->fd);
  free(uc->in);
  free(uc->extra);
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
      gs_net_loop_add(NULL, p->loop, uc->fd, GS_NET_READABLE | GS_NET_WRITABLE, on_up_io, uc) !=
          0) {
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
      gs_net_loop_add(NULL, p->loop, uc->fd, GS_NET_READABLE, on_up_io, uc) != 0) {
    up_close(uc);
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

/* ---- requests ---- */

static void fb_timer_stop(struct preq *r)
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

static void req_free(struct preq *r)
{
  struct gs_proxy *p = r->p;
  req_uncharge(r);
  fb_timer_stop(r);
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

/* Answers the client with an error of the proxy's own and ends r; once the
 * worker's answer has begun, the client connection just closes. */
static void req_error(struct preq *r, int status, const char *fmt, ...) GS_PRINTF(3, 4);
static void req_error(struct preq *r, int status, const char *fmt, ...)
{
  struct gs_http_conn *client = r->client;
  bool started = r->started;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  cnt_add(&r->p->errors, 1);
  hist_add(&r->p->latency, gs_net_loop_now_us() - r->start_us);
  req_free(r);
  if (started)
    gs_http_respond_abort(client);
  else
    gs_http_respond_error(client, status, "%s", msg);
}

/* Detaches r from its connection; the worker's in-flight count drops, and a
 * trial with no verdict yet (it was recorded before, if any) is dropped. */
static struct upconn *req_detach(struct preq *r)
{
  struct upconn *uc = r->uc;
  fb_timer_stop(r);
  if (uc) {
    inflight_add(r->p, uc->wk, -1);
    trial_drop(uc->wk, r->trial);
    uc->req = NULL;
    r->uc = NULL;
  }
  r->trial = 0;
  return uc;
}

/* The worker failed before any of its answer reached the client (refused,
 * reset or closed before a byte; a malformed or oversized head; nothing
 * answered within the first-byte timeout): the request goes to another
 * worker once, if it is still held whole. A stale pooled connection does
 * not spend that retry, nor count against the worker. */
static void up_retry(struct upconn *uc, bool stale, const char *why)
{
  struct preq *r = uc->req;
  struct pworker *wk = uc->wk;
  if (!stale)
    worker_failed(r->p, wk);
  req_detach(r);
  up_close(uc);
  /* Its pooled siblings most likely died with it (a killed worker): the
   * next try opens a fresh connection, whose failure is the worker's. */
  drop_idle(wk);
  if (r->attempts >= MAX_ATTEMPTS || (!stale && r->retried)) {
    req_error(r, 502, "worker %zu %s, and so did the retry", wk->id, why);
    return;
  }
  if (r->base) {
    req_error(r, 502, "worker %zu %s; the request outgrew the %u KiB kept for a retry", wk->id,
              why, RETRY_KEEP >> 10);
    return;
  }
  if (!stale)
    r->retried = true;
  dispatch(r, stale ? NULL : wk);
}

static void up_failed_early(struct upconn *uc)
{
  up_retry(uc, uc->reused, "failed before answering");
}

static void up_failed_late(struct upconn *uc, const char *why)
{
  struct preq *r = uc->req;
  struct pworker *wk = uc->wk;
  worker_failed(r->p, wk);
  req_detach(r);
  up_close(uc);
  req_error(r, 502, "worker %zu: %s", wk->id, why);
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
    worker_failed(r->p, r->uc->wk);
  if ((uc = req_detach(r)) != NULL) {
    w = uc->wk->id;
    up_close(uc); /* the worker may still answer: that connection cannot be reused */
  }
  req_error(r, 504, "worker %zu did not answer within %u ms", w, r->p->cfg.worker_timeout_ms);
  return GS_NET_TIMER_DONE;
}

/* Sent whole and nothing answered for first_byte_ms (a stopped worker): a
 * request still held whole, whose answer has not begun, is retried on
 * another worker; else the worker timeout runs on. */
static int64_t on_first_byte_timeout(struct gs_net_loop *loop, uint64_t id, void *data)
{
  struct preq *r = data;
  (void)loop;
  (void)id;
  r->fb_timer = 0;
  if (r->uc && !r->retried && !r->base && !r->started)
    up_retry(r->uc, false, "sent nothing within the first-byte timeout");
  return GS_NET_TIMER_DONE;
}

/* Writes what the socket takes of r's bytes (the rest when it is writable
 * again); all sent, a paused client is read again. False when the connection
 * failed. */
static bool up_write(struct upconn *uc)
{
  struct preq *r = uc->req;
  struct gs_net_loop *loop = uc->p->loop;
  while (uc->sent < r->base + r->out_len) {
    size_t off = uc->sent - r->base;
    ssize_t n = send(uc->fd, r->out + off, r->out_len - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      return gs_net_loop_add(NULL, loop, uc->fd, GS_NET_WRITABLE, on_up_io, uc) == 0;
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
        gs_net_loop_timer_add(loop, uc->p->cfg.first_byte_ms * 1000ull, on_first_byte_timeout, r);
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
  /* only a request that can still be retried elsewhere may be a trial */
  bool trial_ok = !r->retried && !r->base && r->body_done;
  for (;;) {
    if (!(wk = pick(p, avoid, trial_ok, &busy))) {
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
  gs_http_resp_init(&uc->resp, r->head_method);
  r->trial = ejected(wk) ? wk->trial_gen : 0; /* only a trial is ever given an ejected worker */
  inflight_add(p, wk, 1);
  cnt_add(&wk->requests, 1);
  if (!r->timer)
    r->timer =
        gs_net_loop_timer_add(p->loop, p->cfg.worker_timeout_ms * 1000ull, on_req_timeout, r);
  if (uc->reused &&
      (gs_net_loop_add(NULL, p->loop, uc->fd, GS_NET_READABLE, on_up_io, uc) != 0 || !up_write(uc)))
    up_failed_early(uc);
}

/* ---- upstream responses ---- */

static bool name_is(const struct gs_http_header *h, const char *name)
{
  return h->name_len == strlen(name) && strncasecmp(h->name, name, h->name_len) == 0;
}

/* Headers not passed on to the client: those of one hop (the hop-by-hop
 * ones and any the answer's Connection headers name), and those that
 * gs_http_respond writes itself. */
static bool hop_response_header(const struct gs_http_header *h, const struct gs_http_header *conn,
                                size_t nconn)
{
  return name_is(h, "content-length") || name_is(h, "content-type") || name_is(h, "server") ||
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
    if (name_is(&rs->headers[i], "connection"))
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
    if (name_is(h, "content-type") && !uc->ctype) {
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
  worker_answered(r->p, wk, r->trial);
  hist_add(&wk->latency, us);
  hist_add(&r->p->latency, us);
  /* answered before the request was all sent (or read): the connection
   * is mid-request, so it cannot be reused */
  if (!r->body_done || uc->sent < r->base + r->out_len)
    uc->keep = false;
  req_detach(r);
  req_free(r);
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
    up_retry(uc, false, "sent an answer head larger than the proxy accepts");
    return;
  }
  n = recv(uc->fd, uc->in + uc->in_len, uc->in_cap - uc->in_len, 0);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
    return;
  if (n <= 0) {
    if (uc->in_len == 0 && !uc->head_done)
      up_failed_early(uc); /* nothing answered: safe to send elsewhere */
    else if (n == 0 && uc->head_done)
      up_body(uc, true); /* ends a body that runs to the close, else cut short */
    else
      up_failed_late(uc, "connection ended in the middle of the response");
    return;
  }
  uc->in_len += (size_t)n;
  fb_timer_stop(uc->req); /* it answers */
  if (uc->head_done)
    up_body(uc, false);
  else if ((rc = parse_up_head(uc)) == 0)
    up_head(uc);
  else if (rc < 0) /* nothing reached the client yet: another worker may answer */
    up_retry(uc, false, "sent a malformed or oversized answer head (over 64 KiB)");
}

static void on_up_io(struct gs_net_loop *loop, int fd, void *data, unsigned mask)
{
  struct upconn *uc = data;
  (void)loop;
  (void)fd;
  if (!uc->req) { /* idle: the worker closed it (or talks out of turn) */
    idle_remove(uc);
    up_close(uc);
    return;
  }
  if (mask & GS_NET_WRITABLE) {
    if (!up_write(uc)) {
      up_failed_early(uc);
      return;
    }
  }
  if (mask & GS_NET_READABLE)
    up_read(uc);
}

/* ---- the client side ---- */

/* Request headers not passed on: those of one hop (the hop-by-hop ones and
 * any the request's Connection headers, conn, name), and the framing and
 * Expect, which the proxy writes or answers itself. */
static bool is_hop_request_header(const struct gs_http_header *h, const struct gs_http_header *conn,
                                  size_t nconn)
{
  return name_is(h, "content-length") || name_is(h, "expect") ||
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
    if (name_is(&q->headers[i], "connection"))
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
  struct upconn *uc = req_detach(r);
  if (uc)
    up_close(uc);
  req_error(r, status, "%s",
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
    dispatch(r, NULL);
    return;
  }
  if (!r->uc)
    return;
  if (!up_write(r->uc)) {
    up_failed_early(r->uc);
    return;
  }
  if (r->uc && r->base + r->out_len - r->uc->sent >= STREAM_HIGH && !r->paused) {
    r->paused = true; /* up_write resumes once all is sent */
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
  gs_net_loop_add(NULL, uc->p->loop, uc->fd, GS_NET_READABLE, on_up_io, uc);
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

/* Adds h's counts (another thread's maybe) to sum. */
static void hist_merge(struct hist *sum, const struct hist *h)
{
  for (size_t i = 0; i < NBUCKETS; i++)
    sum->bucket[i] += cnt_get(&h->bucket[i]);
  sum->count += cnt_get(&h->count);
  sum->sum_us += cnt_get(&h->sum_us);
}

/* A per-worker metric family: HELP, TYPE, one line per worker, summed
 * over the threads (the main proxy m's mutex held). */
static void family(FILE *f, const struct gs_proxy *m, const char *name, const char *type,
                   const char *help, unsigned long long (*value)(const struct gs_proxy *, size_t))
{
  fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
  for (size_t i = 0; i < m->cfg.nworkers; i++)
    fprintf(f, "%s{worker=\"%zu\"} %llu\n", name, i, value(m, i));
}

static unsigned long long v_requests(const struct gs_proxy *m, size_t w)
{
  uint64_t requests, errors;
  worker_sums(m, w, &requests, &errors);
  return requests;
}

static unsigned long long v_errors(const struct gs_proxy *m, size_t w)
{
  uint64_t requests, errors;
  worker_sums(m, w, &requests, &errors);
  return errors;
}

static unsigned long long v_inflight(const struct gs_proxy *m, size_t w)
{
  return worker_inflight(m, w);
}

static unsigned long long v_up(const struct gs_proxy *m, size_t w)
{
  return usable(m->w[w]);
}

static unsigned long long v_restarts(const struct gs_proxy *m, size_t w)
{
  return m->w[w]->restarts;
}

static void write_metrics(struct gs_proxy *p, FILE *f)
{
  struct gs_proxy *m = p->main;
  uint64_t requests = 0, errors = 0;
  size_t inflight = 0;
  struct hist total = {0};
  struct gs_super_info info;
  pthread_mutex_lock(&m->mu);
  /* the main thread reads the supervisor live; others see it as of the
   * worker's last change (the supervisor is the main thread's) */
  for (size_t i = 0; p == m && m->cfg.super && i < m->cfg.nworkers; i++)
    if (gs_super_info(m->cfg.super, i, &info) == 0)
      m->w[i]->restarts = info.restarts;
  for (size_t i = 0; i <= m->nshards; i++) {
    requests += cnt_get(&group_at(m, i)->requests);
    errors += cnt_get(&group_at(m, i)->errors);
    hist_merge(&total, &group_at(m, i)->latency);
  }
  for (size_t i = 0; i < m->cfg.nworkers; i++)
    inflight += worker_inflight(m, i);
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
          (unsigned long long)requests, (unsigned long long)errors, inflight);
  hist_print(f, "gpuslice_proxy_request_duration_seconds", "", &total);
  family(f, m, "gpuslice_worker_requests_total", "counter",
         "Requests sent to a worker (retries count).", v_requests);
  family(f, m, "gpuslice_worker_errors_total", "counter",
         "Refusals, resets and timeouts of a worker.", v_errors);
  family(f, m, "gpuslice_worker_inflight", "gauge", "Requests sent to a worker, unanswered.",
         v_inflight);
  family(f, m, "gpuslice_worker_up", "gauge",
         "1 when the worker is in the pool (ready, not ejected, enabled).", v_up);
  if (m->cfg.super)
    family(f, m, "gpuslice_worker_restarts_total", "counter", "Starts after the first one.",
           v_restarts);
  fprintf(f, "# HELP gpuslice_worker_request_duration_seconds From a request's arrival at the "
             "proxy to the answer this worker gave.\n"
             "# TYPE gpuslice_worker_request_duration_seconds histogram\n");
  for (size_t i = 0; i < m->cfg.nworkers; i++) {
    char labels[48];
    struct hist h = {0};
    for (size_t k = 0; k <= m->nshards; k++)
      if (i < group_at(m, k)->cfg.nworkers)
        hist_merge(&h, &group_at(m, k)->w[i]->latency);
    snprintf(labels, sizeof(labels), "worker=\"%zu\",", i);
    hist_print(f, "gpuslice_worker_request_duration_seconds", labels, &h);
  }
  pthread_mutex_unlock(&m->mu);
  if (m->cfg.metrics_more)
    m->cfg.metrics_more(m->cfg.ctx, f);
}

size_t gs_proxy_latency(const struct gs_proxy *p, const uint64_t **le_us, uint64_t *counts,
                        size_t max)
{
  struct gs_proxy *m = p->main;
  struct hist total = {0};
  size_t n = max < NBUCKETS ? max : NBUCKETS;
  pthread_mutex_lock(&m->mu); /* the shards' list is stable under it */
  for (size_t i = 0; i <= m->nshards; i++)
    hist_merge(&total, &group_at(m, i)->latency);
  pthread_mutex_unlock(&m->mu);
  *le_us = hist_le_us;
  memcpy(counts, total.bucket, n * sizeof(*counts));
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
    dispatch(r, NULL); /* else with the first body bytes (on_body) */
}

/* ---- life ---- */

/* One proxy on loop: the main one (m NULL) or a shard of m. */
static int proxy_new_one(struct gs_err *err, struct gs_net_loop *loop,
                         const struct gs_proxy_config *cfg, struct gs_proxy *m,
                         struct gs_proxy **out)
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
    if (add_worker_local(p, &w) != 0) {
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

/* Frees one proxy of a group (every thread of the group has ended). */
static void proxy_free_one(struct gs_proxy *p)
{
  inbox_close(p);
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

static void shard_free(struct gs_proxy *s)
{
  struct gs_net_loop *loop = s->loop;
  int efd = s->efd;
  proxy_free_one(s);
  if (efd >= 0)
    gs_net_loop_close_fd(loop, efd);
  gs_net_loop_free(loop);
}

/* A shard of m on a loop of its own, woken through an eventfd. */
static int shard_new(struct gs_err *err, struct gs_proxy *m, struct gs_proxy **out)
{
  struct gs_proxy_config cfg = m->cfg;
  struct gs_net_loop *loop;
  struct gs_proxy *s;
  int rc;
  /* the supervisor and the ejection reports are the main thread's */
  cfg.super = NULL;
  cfg.on_eject = NULL;
  cfg.ctx = NULL;
  if ((rc = gs_net_loop_new(err, SHARD_LOOP_FDS, &loop)) != 0)
    return rc;
  if ((rc = proxy_new_one(err, loop, &cfg, m, &s)) != 0) {
    gs_net_loop_free(loop);
    return rc;
  }
  if ((s->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0) {
    shard_free(s);
    return gs_err_set(err, GS_E_IO, "eventfd for a proxy thread: %s", strerror(errno));
  }
  if ((rc = gs_net_loop_add(err, loop, s->efd, GS_NET_READABLE, on_sync, s)) != 0) {
    shard_free(s);
    return rc;
  }
  *out = s;
  return 0;
}

/* Connections of q's thread, with those handed to it and not yet taken. */
static unsigned thread_load(const struct gs_proxy *q)
{
  return gs_http_server_conns(q->http) + __atomic_load_n(&q->handed, __ATOMIC_RELAXED);
}

/* The HTTP server's route_fn. The kernel gives a new connection to whichever
 * thread's loop runs first, so one busy thread would take most of a burst:
 * like HAProxy's listeners, the accepting thread hands it to the group's least
 * loaded thread when that one has fewer connections than itself. */
static bool route_conn(void *ctx, int fd)
{
  struct gs_proxy *p = ctx, *best = p;
  unsigned least = thread_load(p);
  for (size_t i = 0; i <= p->main->nshards; i++) {
    struct gs_proxy *q = group_at(p->main, i);
    unsigned n = thread_load(q);
    if (n < least) {
      best = q;
      least = n;
    }
  }
  if (best == p)
    return false;
  __atomic_add_fetch(&best->handed, 1u, __ATOMIC_RELAXED);
  if (write(best->inbox[1], &fd, sizeof(fd)) == (ssize_t)sizeof(fd))
    return true;
  __atomic_sub_fetch(&best->handed, 1u, __ATOMIC_RELAXED); /* its pipe is full: kept here */
  return false;
}

/* Connections another thread handed to this one. Each write of the pipe is
 * one whole fd, so reads hold whole fds. */
static void on_inbox(struct gs_net_loop *loop, int fd, void *data, unsigned mask)
{
  struct gs_proxy *p = data;
  int fds[64];
  ssize_t n;
  (void)loop;
  (void)mask;
  while ((n = read(fd, fds, sizeof(fds))) > 0)
    for (size_t i = 0; i < (size_t)n / sizeof(*fds); i++) {
      __atomic_sub_fetch(&p->handed, 1u, __ATOMIC_RELAXED);
      (void)gs_http_server_adopt(p->http, fds[i]); /* on failure closed and uncounted */
    }
}

/* Every thread of m's group gets an inbox and hands on what it accepts. */
static int open_inboxes(struct gs_err *err, struct gs_proxy *m)
{
  for (size_t i = 0; i <= m->nshards; i++) {
    struct gs_proxy *q = group_at(m, i);
    int rc;
    if (pipe2(q->inbox, O_NONBLOCK | O_CLOEXEC) < 0) {
      q->inbox[0] = q->inbox[1] = -1;
      return gs_err_set(err, GS_E_IO, "pipe for a proxy thread: %s", strerror(errno));
    }
    if ((rc = gs_net_loop_add(err, q->loop, q->inbox[0], GS_NET_READABLE, on_inbox, q)) != 0)
      return rc;
    gs_http_server_route(q->http, route_conn, q);
  }
  return 0;
}

int gs_proxy_new(struct gs_err *err, struct gs_net_loop *loop, const struct gs_proxy_config *cfg,
                 struct gs_proxy **out)
{
  struct gs_proxy_config c = *cfg;
  unsigned threads = cfg->threads ? cfg->threads : 1;
  struct gs_proxy *p;
  int rc;
  if (!c.limits.max_conns)
    gs_http_limits_default(&c.limits);
  if ((rc = proxy_new_one(err, loop, &c, NULL, &p)) != 0)
    return rc;
  if (threads > 1 && !(p->shards = calloc(threads - 1, sizeof(*p->shards)))) {
    gs_proxy_free(p);
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory creating %u proxy threads", threads);
  }
  while (p->nshards + 1 < threads) {
    if ((rc = shard_new(err, p, &p->shards[p->nshards])) != 0) {
      gs_proxy_free(p);
      return rc;
    }
    p->nshards++;
  }
  if (p->nshards && (rc = open_inboxes(err, p)) != 0) {
    gs_proxy_free(p);
    return rc;
  }
  *out = p;
  return 0;
}

static void *shard_main(void *arg)
{
  struct gs_proxy *s = arg;
  gs_net_loop_run(s->loop);
  /* ended (stopped, or its loop failed): nobody waits for it any more */
  pthread_mutex_lock(&s->main->mu);
  s->running = false;
  pthread_cond_broadcast(&s->main->cond);
  pthread_mutex_unlock(&s->main->mu);
  return NULL;
}

/* Starts the shards' threads, each with the pool as it is now. They take no
 * signal: the main thread's handlers and signalfds get them all. */
static int start_shards(struct gs_err *err, struct gs_proxy *m)
{
  sigset_t all, old;
  int rc = 0;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_mutex_lock(&m->mu);
  for (size_t i = 0; i < m->nshards && rc == 0; i++) {
    struct gs_proxy *s = m->shards[i];
    shard_apply(s);
    if (pthread_create(&s->thread, NULL, shard_main, s) != 0)
      rc = gs_err_set(err, GS_E_IO, "cannot start proxy thread %zu", i + 1);
    else
      s->started = s->running = true;
  }
  pthread_mutex_unlock(&m->mu);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return rc;
}

int gs_proxy_listen_fd(struct gs_err *err, struct gs_proxy *p, int fd)
{
  int rc = gs_http_server_listen_fd(err, p->http, fd);
  if (rc != 0)
    return rc;
  p->listen_fd = fd;
  /* every thread accepts from the same socket (a copy of its fd each) */
  for (size_t i = 0; i < p->nshards; i++) {
    struct gs_proxy *s = p->shards[i];
    int d = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (d < 0)
      return gs_err_set(err, GS_E_IO, "dup of the listening socket: %s", strerror(errno));
    if ((rc = gs_http_server_listen_fd(err, s->http, d)) != 0) {
      close(d);
      return rc;
    }
    s->listen_fd = d;
  }
  return p->nshards ? start_shards(err, p) : 0;
}

void gs_proxy_drain(struct gs_proxy *p)
{
  /* The listening socket stays open (closed with the server) but unwatched:
   * connections queue in its backlog unanswered, and are reset at exit. */
  pthread_mutex_lock(&p->mu);
  p->draining = true;
  if (p->listen_fd >= 0)
    gs_net_loop_del(p->loop, p->listen_fd, GS_NET_READABLE);
  publish(p);
  pthread_mutex_unlock(&p->mu);
}

size_t gs_proxy_inflight(const struct gs_proxy *p)
{
  size_t n = __atomic_load_n(&p->nreqs, __ATOMIC_RELAXED);
  for (size_t i = 0; i < p->nshards; i++)
    n += __atomic_load_n(&p->shards[i]->nreqs, __ATOMIC_RELAXED);
  return n;
}

void gs_proxy_free(struct gs_proxy *p)
{
  if (!p)
    return;
  if (p->nshards) {
    pthread_mutex_lock(&p->mu);
    for (size_t i = 0; i < p->nshards; i++)
      p->shards[i]->stop = true;
    publish(p); /* each running shard stops its loop */
    pthread_mutex_unlock(&p->mu);
  }
  /* all ended before any is freed: a running one may hand another connections */
  for (size_t i = 0; i < p->nshards; i++)
    if (p->shards[i]->started)
      pthread_join(p->shards[i]->thread, NULL);
  for (size_t i = 0; i < p->nshards; i++)
    shard_free(p->shards[i]);
  free(p->shards);
  proxy_free_one(p);
}
