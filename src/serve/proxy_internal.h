/* SPDX-License-Identifier: Apache-2.0 */
/* proxy_internal.h: the load balancer's state and the calls its files make
 * to each other: the pool and its policy (proxy_pool.c), upstream
 * connections and answers (proxy_upstream.c), requests streamed from the
 * client (proxy.c), metrics (proxy_metrics.c), and the threads that share
 * one pool (proxy_threads.c). Not part of the layer's interface (serve.h is):
 * only those files include it. */
#ifndef GS_SERVE_PROXY_INTERNAL_H
#define GS_SERVE_PROXY_INTERNAL_H

#include "serve/internal.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>


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

/* Upper bounds of the latency histogram's buckets, in µs (proxy_metrics.c);
 * a last bucket takes the rest (+Inf). */
#define GS__PROXY_NBOUNDS 24
#define GS__PROXY_NBUCKETS (GS__PROXY_NBOUNDS + 1)
extern const uint64_t gs__proxy_le_us[GS__PROXY_NBOUNDS];

struct hist {
  uint64_t bucket[GS__PROXY_NBUCKETS]; /* not cumulative: /metrics sums them */
  uint64_t count, sum_us;
};

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
  /* The worker's process as last reported (the supervisor's restart count)
   * and at the last ejection: only a new process is put on trial before
   * its time out is over, not the same one whose probe failed and passed. */
  unsigned proc, eject_proc;
  uint64_t readmit_us;  /* ejected: when its time out ends (0: over, or a trial is due) */
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
  bool over;    /* gs__proxy_out_room failed on the memory budget, not on malloc */
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
  size_t *cand; /* scratch for the gs__proxy_pick, as long as w */
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
static inline struct gs_proxy *group_at(const struct gs_proxy *m, size_t i)
{
  return i ? m->shards[i - 1] : m->main;
}

/* Counters written by one thread and read by others. */
static inline void cnt_add(uint64_t *c, uint64_t v)
{
  __atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + v, __ATOMIC_RELAXED);
}

static inline uint64_t cnt_get(const uint64_t *c)
{
  return __atomic_load_n(c, __ATOMIC_RELAXED);
}

static inline void inflight_add(struct gs_proxy *p, struct pworker *wk, int d)
{
  __atomic_store_n(&wk->inflight, __atomic_load_n(&wk->inflight, __ATOMIC_RELAXED) + (unsigned)d,
                   __ATOMIC_RELAXED);
  if (wk->id < SHARED_MAX)
    __atomic_fetch_add(&p->main->shared[wk->id], (unsigned)d, __ATOMIC_RELAXED);
}

/* Requests in flight to wk from every thread (from this one past SHARED_MAX). */
static inline unsigned inflight_of(const struct gs_proxy *p, const struct pworker *wk)
{
  if (wk->id < SHARED_MAX)
    return __atomic_load_n(&p->main->shared[wk->id], __ATOMIC_RELAXED);
  return wk->inflight;
}

static inline bool ejected(const struct pworker *wk)
{
  return __atomic_load_n(&wk->ejected, __ATOMIC_RELAXED);
}

static inline void set_ejected(struct pworker *wk, bool e)
{
  __atomic_store_n(&wk->ejected, e, __ATOMIC_RELAXED);
}

static inline bool usable(const struct pworker *wk)
{
  return wk->ready && !ejected(wk) && wk->port && wk->admin == GS_PROXY_ENABLED;
}

static inline bool gs__proxy_name_is(const struct gs_http_header *h, const char *name)
{
  return h->name_len == strlen(name) && strncasecmp(h->name, name, h->name_len) == 0;
}

/* ---- the pool and its policy (proxy_pool.c) ---- */

/* A real request answered (trial: its trial_gen if it was the worker's
 * trial): a worker on trial is back; one back for longer than its last time
 * out starts its doubling afresh. */
void gs__proxy_worker_answered(struct gs_proxy *p, struct pworker *wk, unsigned trial);
/* A failure of the worker itself (refused, reset, timed out, a malformed
 * answer): enough in a row take it out of the pool, as Envoy's outlier
 * detection; any failure during a trial at once. */
void gs__proxy_worker_failed(struct gs_proxy *p, struct pworker *wk);
/* A trial whose request ended with no verdict (the client went away): the
 * worker's next request is its trial. */
void gs__proxy_trial_drop(struct pworker *wk, unsigned trial);
void gs__proxy_worker_set_local(struct gs_proxy *p, size_t w, unsigned port, bool ready,
                                unsigned proc);
void gs__proxy_worker_admin_local(struct gs_proxy *p, size_t w, enum gs_proxy_admin a);
int gs__proxy_add_worker_local(struct gs_proxy *p, size_t *w);
/* Worker w's requests and errors summed over every thread (mutex held). */
void gs__proxy_worker_sums(const struct gs_proxy *m, size_t w, uint64_t *requests, uint64_t *errors);
/* Worker w's requests in flight over every thread (mutex held). */
unsigned gs__proxy_worker_inflight(const struct gs_proxy *m, size_t w);
/* A usable worker below its in-flight limit, other than avoid if there is
 * one; NULL if none. *busy tells whether some were skipped for the limit.
 * trial_ok: the request may be a trial (pick_trial), which comes first. */
struct pworker *gs__proxy_pick(struct gs_proxy *p, const struct pworker *avoid, bool trial_ok,
                            bool *busy);

/* ---- upstream connections and answers (proxy_upstream.c) ---- */

void gs__proxy_drop_idle(struct pworker *wk);
void gs__proxy_up_close(struct upconn *uc);
/* A new non-blocking connection to the worker; NULL if it failed at once. */
struct upconn *gs__proxy_up_connect(struct gs_proxy *p, struct pworker *wk);
/* The worker failed before any of its answer reached the client (refused,
 * reset or closed before a byte; a malformed or oversized head; nothing
 * answered within the first-byte timeout): the request goes to another
 * worker once, if it is still held whole. A stale pooled connection does
 * not spend that retry, nor count against the worker. */
void gs__proxy_up_retry(struct upconn *uc, bool stale, const char *why);
void gs__proxy_up_failed_early(struct upconn *uc);
/* Writes what the socket takes of r's bytes (the rest when it is writable
 * again); all sent, a paused client is read again. False when the connection
 * failed. */
bool gs__proxy_up_write(struct upconn *uc);
void gs__proxy_on_up_io(struct gs_net_loop *loop, int fd, void *data, unsigned mask);

/* ---- requests, from the client to a worker (proxy.c) ---- */

void gs__proxy_fb_timer_stop(struct preq *r);
void gs__proxy_req_free(struct preq *r);
/* Answers the client with an error of the proxy's own and ends r; once the
 * worker's answer has begun, the client connection just closes. */
void gs__proxy_req_error(struct preq *r, int status, const char *fmt, ...) GS_PRINTF(3, 4);
/* Detaches r from its connection; the worker's in-flight count drops, and a
 * trial with no verdict yet (it was recorded before, if any) is dropped. */
struct upconn *gs__proxy_req_detach(struct preq *r);
/* Sent whole and nothing answered for first_byte_ms (a stopped worker): a
 * request still held whole, whose answer has not begun, is retried on
 * another worker; else the worker timeout runs on. */
int64_t gs__proxy_on_first_byte_timeout(struct gs_net_loop *loop, uint64_t id, void *data);
/* Sends r to a worker: a pooled connection when there is one, else a new
 * one; 503 when no worker can take it. avoid: the worker that just failed. */
void gs__proxy_dispatch(struct preq *r, struct pworker *avoid);
/* One proxy on loop: the main one (m NULL) or a shard of m. */
int gs__proxy_new_one(struct gs_err *err, struct gs_net_loop *loop,
                      const struct gs_proxy_config *cfg, struct gs_proxy *m, struct gs_proxy **out);
/* Frees one proxy of a group (every thread of the group has ended). */
void gs__proxy_free_one(struct gs_proxy *p);

/* ---- counters and histograms (proxy_metrics.c) ---- */

void gs__proxy_hist_add(struct hist *h, uint64_t us);
/* Prometheus text for /metrics. */
void gs__proxy_respond_metrics(struct gs_proxy *p, struct gs_http_conn *conn);

/* ---- threads sharing one pool (proxy_threads.c) ---- */

/* Main side, mutex held: a change was made; returns once every running
 * shard applied it (the pool is the same in every thread from then on). */
void gs__proxy_publish(struct gs_proxy *m);

#endif
