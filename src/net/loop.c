/* SPDX-License-Identifier: Apache-2.0 */
/* loop.c: the net layer's event loop: epoll over an fd-indexed table, a
 * binary min-heap of timers, work deferred to the end of a turn (output
 * gathered over a turn goes out in one write), deferred closes, a stop
 * flag; plus the socket helpers (non-blocking, listen, accept under a
 * connection limit, the idle list that limit evicts from). Shaped after Redis's ae.c (STYLE.md 8); it
 * knows nothing of HTTP, which sits on top of it in http.c. */
#include "net/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct file_event {
  unsigned mask; /* 0: fd not registered */
  gs_net_loop_file_fn *fn;
  void *data;
};

struct timer {
  uint64_t when_us, id;
  gs_net_loop_timer_fn *fn;
  void *data;
};

struct gs_net_loop {
  int epfd, setsize;
  bool stop;
  struct file_event *files;    /* setsize entries, indexed by fd */
  struct epoll_event *fired;   /* preallocated: nothing allocated per turn */
  struct timer *heap;          /* min-heap on (when_us, id) */
  size_t ntimers, cap_timers;
  uint64_t next_id;
  int *closing;                /* fds to close at the end of this turn */
  size_t nclosing;
  struct gs_net_defer *deferred; /* work for the end of a turn, in order */
  struct gs_net_defer *deferred_last;
  uint64_t turn;                 /* deferred work runs in the turn after the one it was added in */
  void (*before_sleep)(struct gs_net_loop *, void *);
  void *before_sleep_data;
};

uint64_t gs_net_loop_now_us(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

int gs_net_loop_new(struct gs_err *err, int setsize, struct gs_net_loop **out)
{
  struct gs_net_loop *l = calloc(1, sizeof(*l));
  *out = NULL;
  if (setsize <= 0)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "event loop size %d: must be positive", setsize);
  if (!l)
    goto nomem;
  l->epfd = -1;
  l->setsize = setsize;
  l->files = calloc((size_t)setsize, sizeof(*l->files));
  l->fired = calloc((size_t)setsize, sizeof(*l->fired));
  l->closing = calloc((size_t)setsize, sizeof(*l->closing));
  if (!l->files || !l->fired || !l->closing)
    goto nomem;
  if ((l->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0) {
    gs_err_set(err, GS_E_IO, "epoll_create1: %s", strerror(errno));
    gs_net_loop_free(l);
    return err ? err->code : GS_E_IO;
  }
  *out = l;
  return 0;
nomem:
  gs_net_loop_free(l);
  return gs_err_set(err, GS_E_NO_MEMORY, "out of memory creating an event loop of %d fds",
                    setsize);
}

static void close_deferred(struct gs_net_loop *l)
{
  for (size_t i = 0; i < l->nclosing; i++)
    close(l->closing[i]);
  l->nclosing = 0;
}

void gs_net_loop_free(struct gs_net_loop *l)
{
  if (!l)
    return;
  close_deferred(l);
  if (l->epfd >= 0)
    close(l->epfd);
  free(l->files);
  free(l->fired);
  free(l->closing);
  free(l->heap);
  free(l);
}

static uint32_t epoll_bits(unsigned mask)
{
  return (mask & GS_NET_READABLE ? EPOLLIN : 0u) | (mask & GS_NET_WRITABLE ? EPOLLOUT : 0u) |
         (mask & GS_NET_EXCLUSIVE ? (uint32_t)EPOLLEXCLUSIVE : 0u);
}

int gs_net_loop_add(struct gs_err *err, struct gs_net_loop *l, int fd, unsigned mask,
                    gs_net_loop_file_fn *fn, void *data)
{
  struct epoll_event ev = {0};
  struct file_event *f;
  int op;
  if (fd < 0 || fd >= l->setsize)
    return gs_err_set(err, GS_E_INSUFFICIENT_RESOURCES,
                      "fd %d is outside the event loop's %d slots (raise its size)", fd, l->setsize);
  f = &l->files[fd];
  /* Interest already in place: no system call (the proxy re-arms often). */
  if (f->mask && (f->mask | mask) == f->mask) {
    f->fn = fn;
    f->data = data;
    return 0;
  }
  op = f->mask ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
  ev.events = epoll_bits(f->mask | mask);
  ev.data.fd = fd;
  if (epoll_ctl(l->epfd, op, fd, &ev) < 0)
    return gs_err_set(err, GS_E_IO, "epoll_ctl fd %d: %s", fd, strerror(errno));
  f->mask |= mask;
  f->fn = fn;
  f->data = data;
  return 0;
}

void gs_net_loop_del(struct gs_net_loop *l, int fd, unsigned mask)
{
  struct epoll_event ev = {0};
  struct file_event *f;
  if (fd < 0 || fd >= l->setsize || !(l->files[fd].mask & mask))
    return;
  f = &l->files[fd];
  f->mask &= ~mask;
  if (!(f->mask & (GS_NET_READABLE | GS_NET_WRITABLE)))
    f->mask = 0; /* nothing watched: out (an exclusive fd cannot be changed, only removed) */
  ev.events = epoll_bits(f->mask);
  ev.data.fd = fd;
  /* Failure here means the fd is already gone from epoll: nothing to undo. */
  (void)epoll_ctl(l->epfd, f->mask ? EPOLL_CTL_MOD : EPOLL_CTL_DEL, fd, &ev);
}

unsigned gs_net_loop_mask(const struct gs_net_loop *l, int fd)
{
  return fd >= 0 && fd < l->setsize ? l->files[fd].mask : 0;
}

void gs_net_loop_close_fd(struct gs_net_loop *l, int fd)
{
  if (fd < 0)
    return;
  if (fd >= l->setsize) {
    close(fd);
    return;
  }
  gs_net_loop_del(l, fd, GS_NET_READABLE | GS_NET_WRITABLE);
  l->files[fd] = (struct file_event){0};
  l->closing[l->nclosing++] = fd; /* one slot per fd: an fd is queued at most once */
}

/* ---- timers: a binary min-heap ordered by (when, id) ---- */

static bool timer_before(const struct timer *a, const struct timer *b)
{
  return a->when_us < b->when_us || (a->when_us == b->when_us && a->id < b->id);
}

static void heap_swap(struct gs_net_loop *l, size_t a, size_t b)
{
  struct timer t = l->heap[a];
  l->heap[a] = l->heap[b];
  l->heap[b] = t;
}

static void heap_up(struct gs_net_loop *l, size_t i)
{
  while (i > 0 && timer_before(&l->heap[i], &l->heap[(i - 1) / 2])) {
    heap_swap(l, i, (i - 1) / 2);
    i = (i - 1) / 2;
  }
}

static void heap_down(struct gs_net_loop *l, size_t i)
{
  for (;;) {
    size_t m = i, c = 2 * i + 1;
    if (c < l->ntimers && timer_before(&l->heap[c], &l->heap[m]))
      m = c;
    if (c + 1 < l->ntimers && timer_before(&l->heap[c + 1], &l->heap[m]))
      m = c + 1;
    if (m == i)
      return;
    heap_swap(l, i, m);
    i = m;
  }
}

static void heap_remove(struct gs_net_loop *l, size_t i)
{
  l->heap[i] = l->heap[--l->ntimers];
  if (i < l->ntimers) {
    heap_up(l, i);
    heap_down(l, i);
  }
}

static bool timer_push(struct gs_net_loop *l, struct timer t)
{
  if (l->ntimers == l->cap_timers) {
    size_t cap = l->cap_timers ? 2 * l->cap_timers : 64;
    struct timer *h = realloc(l->heap, cap * sizeof(*h));
    if (!h)
      return false;
    l->heap = h;
    l->cap_timers = cap;
  }
  l->heap[l->ntimers] = t;
  heap_up(l, l->ntimers++);
  return true;
}

uint64_t gs_net_loop_timer_add(struct gs_net_loop *l, uint64_t delay_us, gs_net_loop_timer_fn *fn,
                               void *data)
{
  uint64_t id = l->next_id + 1;
  if (!timer_push(l, (struct timer){gs_net_loop_now_us() + delay_us, id, fn, data}))
    return 0;
  return ++l->next_id;
}

int gs_net_loop_timer_del(struct gs_net_loop *l, uint64_t id)
{
  for (size_t i = 0; i < l->ntimers; i++)
    if (l->heap[i].id == id) {
      heap_remove(l, i);
      return 0;
    }
  return GS_E_NOT_FOUND;
}

size_t gs_net_loop_timer_count(const struct gs_net_loop *l)
{
  return l->ntimers;
}

/* Fires every timer due now. A timer added by a callback for "now" waits for
 * the next turn, so a timer re-arming itself at 0 cannot starve the fds. */
static int fire_timers(struct gs_net_loop *l)
{
  uint64_t now = gs_net_loop_now_us(), last = l->next_id;
  int n = 0;
  while (l->ntimers && l->heap[0].when_us <= now && l->heap[0].id <= last && !l->stop) {
    struct timer t = l->heap[0];
    int64_t again;
    heap_remove(l, 0);
    again = t.fn(l, t.id, t.data);
    n++;
    /* Re-arming keeps the id; the slot just freed means no allocation. */
    if (again >= 0) {
      uint64_t when = gs_net_loop_now_us() + (uint64_t)again;
      timer_push(l, (struct timer){when > now ? when : now + 1, t.id, t.fn, t.data});
    }
  }
  return n;
}

static int wait_ms(const struct gs_net_loop *l, int timeout_ms)
{
  uint64_t now, until;
  int t;
  if (!l->ntimers)
    return timeout_ms;
  now = gs_net_loop_now_us();
  until = l->heap[0].when_us;
  t = until <= now ? 0 : (int)((until - now + 999) / 1000);
  return timeout_ms >= 0 && timeout_ms < t ? timeout_ms : t;
}

void gs_net_loop_set_before_sleep(struct gs_net_loop *l, void (*fn)(struct gs_net_loop *, void *),
                                  void *data)
{
  l->before_sleep = fn;
  l->before_sleep_data = data;
}

void gs_net_loop_defer(struct gs_net_loop *l, struct gs_net_defer *d)
{
  if (d->on)
    return;
  d->on = true;
  d->turn = l->turn;
  d->next = NULL;
  d->prev = l->deferred_last;
  if (l->deferred_last)
    l->deferred_last->next = d;
  else
    l->deferred = d;
  l->deferred_last = d;
}

void gs_net_loop_undefer(struct gs_net_loop *l, struct gs_net_defer *d)
{
  if (!d->on)
    return;
  if (d->prev)
    d->prev->next = d->next;
  else
    l->deferred = d->next;
  if (d->next)
    d->next->prev = d->prev;
  else
    l->deferred_last = d->prev;
  d->on = false;
}

/* Runs the work deferred so far; work deferred meanwhile waits for the
 * next turn (which then does not sleep), so none can starve the fds. */
static int run_deferred(struct gs_net_loop *l)
{
  uint64_t turn = l->turn++;
  int n = 0;
  while (l->deferred && l->deferred->turn <= turn && !l->stop) {
    struct gs_net_defer *d = l->deferred;
    gs_net_loop_undefer(l, d);
    d->fn(d);
    n++;
  }
  return n;
}

int gs_net_loop_run_once(struct gs_net_loop *l, int timeout_ms)
{
  int n, done = 0;
  if (l->before_sleep)
    l->before_sleep(l, l->before_sleep_data);
  n = epoll_wait(l->epfd, l->fired, l->setsize, l->deferred ? 0 : wait_ms(l, timeout_ms));
  if (n < 0 && errno != EINTR)
    return GS_E_IO;
  for (int i = 0; i < n && !l->stop; i++) {
    int fd = l->fired[i].data.fd;
    uint32_t ev = l->fired[i].events;
    unsigned ready = (ev & (EPOLLIN | EPOLLHUP | EPOLLERR) ? GS_NET_READABLE : 0u) |
                     (ev & (EPOLLOUT | EPOLLHUP | EPOLLERR) ? GS_NET_WRITABLE : 0u);
    /* Re-check: an earlier callback of this turn may have dropped interest. */
    unsigned want = ready & l->files[fd].mask;
    if (want) {
      l->files[fd].fn(l, fd, l->files[fd].data, want);
      done++;
    }
  }
  done += fire_timers(l);
  done += run_deferred(l);
  close_deferred(l);
  return done;
}

int gs_net_loop_run(struct gs_net_loop *l)
{
  l->stop = false;
  while (!l->stop) {
    int rc = gs_net_loop_run_once(l, -1);
    if (rc < 0)
      return rc;
  }
  return 0;
}

void gs_net_loop_stop(struct gs_net_loop *l)
{
  l->stop = true;
}

/* ---- sockets ---- */

int gs_net_nonblock(struct gs_err *err, int fd)
{
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
    return gs_err_set(err, GS_E_IO, "fd %d: cannot make it non-blocking: %s", fd, strerror(errno));
  return 0;
}

static int bound_port(int fd, unsigned *port)
{
  struct sockaddr_storage ss;
  socklen_t sl = sizeof(ss);
  if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0)
    return -1;
  *port = ss.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                                   : ntohs(((struct sockaddr_in *)&ss)->sin_port);
  return 0;
}

int gs_net_accept(int fd, struct gs_net_conns *lim, gs_net_evict_fn *evict, void *ctx)
{
  for (;;) {
    int one = 1, cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (cfd < 0)
      return -1;
    /* an eviction uncounts the connection it closes, making room for this one */
    if (__atomic_add_fetch(&lim->count, 1u, __ATOMIC_RELAXED) <= lim->max ||
        (evict && evict(ctx))) {
      setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      return cfd;
    }
    gs_net_conns_put(lim);
    close(cfd);
  }
}

void gs_net_conns_put(struct gs_net_conns *lim)
{
  __atomic_fetch_sub(&lim->count, 1u, __ATOMIC_RELAXED);
}

void gs_net_idle_set(struct gs_net_idle_list *l, struct gs_net_idle_node *n, bool idle)
{
  if (idle == n->on)
    return;
  n->on = idle;
  if (idle) {
    n->next = NULL;
    n->prev = l->last;
    if (l->last)
      l->last->next = n;
    else
      l->first = n;
    l->last = n;
    return;
  }
  if (n->prev)
    n->prev->next = n->next;
  else
    l->first = n->next;
  if (n->next)
    n->next->prev = n->prev;
  else
    l->last = n->prev;
  n->prev = n->next = NULL;
}

int gs_net_listen(struct gs_err *err, const char *hostport, int backlog, int *fd, unsigned *port)
{
  struct addrinfo hints = {0}, *res = NULL, *ai;
  struct gs_hostport hp;
  char portstr[8];
  int rc, s = -1, one = 1, saved = 0;
  *fd = -1;
  if ((rc = gs_hostport_parse(err, "listen address", hostport, GS_HOSTPORT_PORT_ZERO, &hp)) != 0)
    return rc;
  snprintf(portstr, sizeof(portstr), "%u", hp.port);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  if ((rc = getaddrinfo(*hp.host && strcmp(hp.host, "*") != 0 ? hp.host : NULL, portstr, &hints,
                        &res)) != 0)
    return gs_err_set(err, GS_E_USAGE, "listen address '%s': %s", hostport, gai_strerror(rc));
  for (ai = res; ai; ai = ai->ai_next) {
    s = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (s < 0)
      continue;
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(s, ai->ai_addr, ai->ai_addrlen) == 0 && listen(s, backlog) == 0)
      break;
    saved = errno;
    close(s);
    s = -1;
  }
  freeaddrinfo(res);
  if (s < 0)
    return gs_err_set(err, GS_E_IO, "cannot listen on %s: %s", hostport,
                      saved ? strerror(saved) : "no usable address");
  if (port && bound_port(s, port) < 0) {
    close(s);
    return gs_err_set(err, GS_E_IO, "getsockname on %s: %s", hostport, strerror(errno));
  }
  *fd = s;
  return 0;
}
