/* SPDX-License-Identifier: Apache-2.0 */
/* proxy_threads.c: the load balancer on several threads: with cfg.threads
 * > 1 the proxy on the caller's loop (the main one) has shards, each a proxy
 * of its own on its own loop and thread, accepting from the same listening
 * socket, with its own requests and upstream pools. The main proxy alone is
 * changed through the interface; each change is copied into every shard on
 * its thread (under the main proxy's mutex, woken by an eventfd) before the
 * call returns. A new connection goes to the least loaded thread. */
#include "serve/proxy_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

/* Shard side: makes its pool what the main proxy's is (main's mutex held). */
static void shard_apply(struct gs_proxy *s)
{
  struct gs_proxy *m = s->main;
  size_t w;
  while (s->cfg.nworkers < m->cfg.nworkers && gs__proxy_add_worker_local(s, &w) == 0)
    ;
  for (size_t i = 0; i < s->cfg.nworkers; i++) {
    const struct pworker *mw = m->w[i];
    if (s->w[i]->sets != mw->sets) {
      s->w[i]->sets = mw->sets;
      gs__proxy_worker_set_local(s, i, mw->port, mw->ready, mw->proc);
    }
    if (s->w[i]->admin != mw->admin)
      gs__proxy_worker_admin_local(s, i, mw->admin);
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

void gs__proxy_publish(struct gs_proxy *m)
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

static void shard_free(struct gs_proxy *s)
{
  struct gs_net_loop *loop = s->loop;
  int efd = s->efd;
  gs__proxy_free_one(s);
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
  if ((rc = gs__proxy_new_one(err, loop, &cfg, m, &s)) != 0) {
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
  if ((rc = gs__proxy_new_one(err, loop, &c, NULL, &p)) != 0)
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
  gs__proxy_publish(p);
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
    gs__proxy_publish(p); /* each running shard stops its loop */
    pthread_mutex_unlock(&p->mu);
  }
  /* all ended before any is freed: a running one may hand another connections */
  for (size_t i = 0; i < p->nshards; i++)
    if (p->shards[i]->started)
      pthread_join(p->shards[i]->thread, NULL);
  for (size_t i = 0; i < p->nshards; i++)
    shard_free(p->shards[i]);
  free(p->shards);
  gs__proxy_free_one(p);
}
