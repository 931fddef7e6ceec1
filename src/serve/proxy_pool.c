/* SPDX-License-Identifier: Apache-2.0 */
/* proxy_pool.c: the load balancer's worker pool and its policy: which
 * worker is in (ready, not ejected, enabled by the operator), the pick
 * (power of two choices or round-robin, under each worker's in-flight
 * limit), passive ejection whose time out doubles and ends in a trial
 * request, the operator's drain and disable, and the pool as the gRPC side
 * uses it. A change made on the main thread is copied into every thread
 * (gs__proxy_publish). It knows worker ids and ports, not connections. */
#include "serve/proxy_internal.h"

#include <stdlib.h>

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
  wk->readmit_us = 0;
  wk->trial = true; /* its next request decides (gs__proxy_pick) */
  return GS_NET_TIMER_DONE;
}

/* Out of the pool for the next backoff; a failed trial doubles it. */
static void eject(struct gs_proxy *p, struct pworker *wk)
{
  bool was = ejected(wk);
  uint64_t ms;
  wk->ejections++;
  wk->eject_proc = wk->proc;
  wk->trial = wk->trying = false;
  set_ejected(wk, true);
  gs__proxy_drop_idle(wk);
  if (wk->eject_timer)
    gs_net_loop_timer_del(p->loop, wk->eject_timer);
  ms = eject_backoff_ms(p, wk->ejections);
  wk->readmit_us = gs_net_loop_now_us() + ms * 1000ull;
  wk->eject_timer = gs_net_loop_timer_add(p->loop, ms * 1000ull, on_readmit, wk);
  if (!was && p->cfg.on_eject)
    p->cfg.on_eject(p->cfg.ctx, wk->id, true);
}

void gs__proxy_worker_answered(struct gs_proxy *p, struct pworker *wk, unsigned trial)
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

void gs__proxy_worker_failed(struct gs_proxy *p, struct pworker *wk)
{
  cnt_add(&wk->errors, 1);
  if (wk->trying || (++wk->fails >= p->cfg.eject_after && !ejected(wk)))
    eject(p, wk);
}

void gs__proxy_trial_drop(struct pworker *wk, unsigned trial)
{
  if (trial && wk->trying && trial == wk->trial_gen)
    wk->trying = false;
}

void gs__proxy_worker_set_local(struct gs_proxy *p, size_t w, unsigned port, bool ready,
                                unsigned proc)
{
  struct pworker *wk = p->w[w];
  if (wk->port != port)
    gs__proxy_drop_idle(wk); /* a restarted worker may listen elsewhere */
  if (ready && ejected(wk) && !wk->trial && proc != wk->eject_proc) {
    /* a new process whose probe answers: no need to wait out the time out,
     * but one real request must succeed before it is back. The process
     * that was ejected, its probe failing then passing again (a slow probe
     * on a loaded machine), waits it out: its answers were the trouble. */
    if (wk->eject_timer)
      gs_net_loop_timer_del(p->loop, wk->eject_timer);
    wk->eject_timer = 0;
    wk->readmit_us = 0;
    wk->trial = true;
  }
  wk->proc = proc;
  wk->port = port;
  wk->ready = ready;
  wk->fails = 0;
  if (!ready)
    gs__proxy_drop_idle(wk);
}

void gs__proxy_worker_admin_local(struct gs_proxy *p, size_t w, enum gs_proxy_admin a)
{
  p->w[w]->admin = a;
  /* Drained or disabled: its pooled connections go now; those carrying a
   * request finish it and close (up_release sees it unusable). */
  if (a != GS_PROXY_ENABLED)
    gs__proxy_drop_idle(p->w[w]);
}

int gs__proxy_add_worker_local(struct gs_proxy *p, size_t *w)
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

void gs_proxy_worker_set(struct gs_proxy *p, size_t w, unsigned port, bool ready)
{
  struct gs_super_info info;
  struct pworker *wk;
  unsigned proc;
  if (w >= p->cfg.nworkers)
    return;
  pthread_mutex_lock(&p->mu);
  wk = p->w[w];
  /* Which process this is: the supervisor's restart count; with none (the
   * proxy alone), every ready report is taken as a new process. */
  if (p->cfg.super && gs_super_info(p->cfg.super, w, &info) == 0)
    proc = wk->restarts = info.restarts;
  else
    proc = wk->proc + ready;
  gs__proxy_worker_set_local(p, w, port, ready, proc);
  wk->sets++;
  gs__proxy_publish(p);
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
  gs__proxy_worker_admin_local(p, w, a);
  gs__proxy_publish(p);
  pthread_mutex_unlock(&p->mu);
  return 0;
}

void gs__proxy_worker_sums(const struct gs_proxy *m, size_t w, uint64_t *requests, uint64_t *errors)
{
  *requests = cnt_get(&m->w[w]->requests);
  *errors = cnt_get(&m->w[w]->errors);
  for (size_t i = 0; i < m->nshards; i++)
    if (w < m->shards[i]->cfg.nworkers) {
      *requests += cnt_get(&m->shards[i]->w[w]->requests);
      *errors += cnt_get(&m->shards[i]->w[w]->errors);
    }
}

unsigned gs__proxy_worker_inflight(const struct gs_proxy *m, size_t w)
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
                                        .admin = wk->admin, .inflight = gs__proxy_worker_inflight(p, w),
                                        .trial = wk->trial, .ejections = wk->ejections,
                                        .backoff_ms = wk->ejections ? eject_backoff_ms(p, wk->ejections) : 0};
  if (wk->readmit_us) {
    uint64_t now = gs_net_loop_now_us();
    out->trial_in_ms = wk->readmit_us > now ? (wk->readmit_us - now + 999) / 1000 : 0;
  }
  gs__proxy_worker_sums(p, w, &out->requests, &out->errors);
  pthread_mutex_unlock(&m->mu);
  return 0;
}

int gs_proxy_add_worker(struct gs_proxy *p, size_t *w)
{
  int rc;
  pthread_mutex_lock(&p->mu);
  if ((rc = gs__proxy_add_worker_local(p, w)) == 0)
    gs__proxy_publish(p);
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
  gs__proxy_publish(p);
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

struct pworker *gs__proxy_pick(struct gs_proxy *p, const struct pworker *avoid, bool trial_ok,
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

int gs__proxy_acquire(struct gs_proxy *p, size_t avoid, size_t *w, unsigned *trial)
{
  bool busy;
  /* a first attempt (no worker to avoid) has its retry left: it may be a trial */
  struct pworker *wk = gs__proxy_pick(p, avoid < p->cfg.nworkers ? p->w[avoid] : NULL,
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
    gs__proxy_worker_answered(p, wk, trial);
    gs__proxy_hist_add(&wk->latency, us);
  } else if (o == GS__PROXY_WORKER_FAILED) {
    gs__proxy_worker_failed(p, wk);
  } else {
    gs__proxy_trial_drop(wk, trial);
  }
  gs__proxy_hist_add(&p->latency, us);
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
