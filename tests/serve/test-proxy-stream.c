/* SPDX-License-Identifier: Apache-2.0 */
/* test-proxy-stream.c: the load balancer's streamed bodies, over loopback in
 * one process and (but the last test) one loop: multi-megabyte bodies both ways, chunked both
 * ways, a client that stops reading a 32 MiB answer (the proxy's heap stays
 * bounded: backpressure reaches the worker), a worker that dies in the
 * middle of the request body (retried within the 1 MiB kept, 502 past it)
 * and one that dies in the middle of its answer (the client's connection
 * closes short); the client-side limits while a body streams (413 for a
 * Content-Length or a chunked body over the limit, the slowloris timeout
 * cutting a stalled body and the worker connection carrying it); last, the
 * proxy with three event-loop threads: requests from many clients at once,
 * counters summed over the threads, a worker leaving the pool leaves every
 * thread's, and a burst of connections spread evenly over two threads (make
 * test-tsan runs this file under ThreadSanitizer). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <malloc.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "serve/internal.h"

#define DEADLINE_US 60000000ull /* generous: ASan on two busy cores */

/* The byte at offset i of every test body: catches lost, doubled or moved bytes. */
static char pat(size_t i)
{
  return (char)('a' + (i * 7 + i / 4099) % 26);
}

static char *pattern(size_t len)
{
  char *b = malloc(len ? len : 1);
  assert_non_null(b);
  for (size_t i = 0; i < len; i++)
    b[i] = pat(i);
  return b;
}

/* ---- an echo worker on the loop: the body back, whole or in chunks ---- */

static void echo_handle(void *ctx, struct gs_http_conn *conn, const struct gs_http_request *req)
{
  (void)ctx;
  if (req->path_len == 8 && memcmp(req->path, "/chunked", 8) == 0) {
    gs_http_respond_start(conn, 200, "application/octet-stream", NULL, -1);
    for (size_t o = 0; o < req->body_len; o += 65536)
      gs_http_respond_data(conn, req->body + o,
                           req->body_len - o < 65536 ? req->body_len - o : 65536);
    gs_http_respond_end(conn);
    return;
  }
  gs_http_respond(conn, 200, "application/octet-stream", NULL, req->body, req->body_len);
}

/* ---- a raw worker the test drives: counts what it reads, may die, may
 * answer with a long body as fast as its socket takes it ---- */

struct raw {
  int lfd, fd;
  unsigned port;
  size_t got;       /* request bytes read */
  size_t die_after; /* close (RST) once this many are read; 0: never */
  size_t die_sent;  /* close once this many answer bytes are sent; 0: never */
  size_t body_len;  /* the answer's body; 0: no answer */
  char *body;
  char head[128];
  size_t head_len, sent; /* answer bytes sent (head included) */
  bool dead;
  bool eof; /* the proxy closed its connection */
};

static void raw_init(struct raw *b, size_t body_len)
{
  struct gs_err err = {0};
  memset(b, 0, sizeof(*b));
  b->fd = -1;
  assert_int_equal(gs_net_listen(&err, "127.0.0.1:0", 8, &b->lfd, &b->port), 0);
  b->body_len = body_len;
  if (body_len) {
    b->body = pattern(body_len);
    b->head_len = (size_t)snprintf(b->head, sizeof(b->head),
                                   "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n", body_len);
  }
}

static void raw_close(struct raw *b)
{
  struct linger lg = {1, 0};
  if (b->fd >= 0) {
    setsockopt(b->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)); /* a crash: reset */
    close(b->fd);
  }
  b->fd = -1;
  b->dead = true;
}

static void raw_free(struct raw *b)
{
  if (b->fd >= 0)
    close(b->fd);
  close(b->lfd);
  free(b->body);
}

static void raw_pump(struct raw *b)
{
  char buf[65536];
  ssize_t n;
  if (b->dead)
    return;
  if (b->fd < 0 && (b->fd = accept4(b->lfd, NULL, NULL, SOCK_NONBLOCK)) < 0)
    return;
  while ((n = recv(b->fd, buf, sizeof(buf), 0)) > 0) {
    b->got += (size_t)n;
    if (b->die_after && b->got >= b->die_after) {
      raw_close(b);
      return;
    }
  }
  if (n == 0)
    b->eof = true;
  while (b->body_len && b->got && b->sent < b->head_len + b->body_len) {
    size_t o = b->sent;
    const char *src = o < b->head_len ? b->head + o : b->body + (o - b->head_len);
    size_t len = o < b->head_len ? b->head_len - o : b->head_len + b->body_len - o;
    if (b->die_sent && len > b->die_sent - o)
      len = b->die_sent - o;
    if ((n = send(b->fd, src, len, MSG_NOSIGNAL)) <= 0)
      break;
    b->sent += (size_t)n;
    if (b->die_sent && b->sent >= b->die_sent) {
      raw_close(b);
      return;
    }
  }
}

/* ---- the proxy and a client ---- */

struct env {
  struct gs_net_loop *loop;
  struct gs_proxy *proxy;
  unsigned port;
  struct gs_http_server *echo;
  unsigned echo_port;
};

/* Round-robin: the first request goes to worker 0 (the one that fails).
 * max_body 0: the default; read_timeout_ms 0: long (sanitized builds are slow). */
static void env_init_limits(struct env *e, size_t max_body, unsigned read_timeout_ms)
{
  struct gs_proxy_config cfg = {.nworkers = 2, .policy = GS_PROXY_RR,
                                 .worker_timeout_ms = 120000};
  struct gs_err err = {0};
  int fd;
  gs_http_limits_default(&cfg.limits);
  cfg.limits.read_timeout_ms = read_timeout_ms ? read_timeout_ms : 120000;
  if (max_body)
    cfg.limits.max_body = max_body;
  memset(e, 0, sizeof(*e));
  assert_int_equal(gs_net_loop_new(&err, 1024, &e->loop), 0);
  assert_int_equal(gs_proxy_new(&err, e->loop, &cfg, &e->proxy), 0);
  assert_int_equal(gs_net_listen(&err, "127.0.0.1:0", 64, &fd, &e->port), 0);
  assert_int_equal(gs_proxy_listen_fd(&err, e->proxy, fd), 0);
  assert_int_equal(gs_http_server_new(&err, e->loop, NULL, echo_handle, NULL, &e->echo), 0);
  assert_int_equal(gs_net_listen(&err, "127.0.0.1:0", 64, &fd, &e->echo_port), 0);
  assert_int_equal(gs_http_server_listen_fd(&err, e->echo, fd), 0);
}

static void env_init(struct env *e)
{
  env_init_limits(e, 0, 0);
}

static void env_free(struct env *e)
{
  gs_proxy_free(e->proxy);
  gs_http_server_free(e->echo);
  gs_net_loop_free(e->loop);
}

struct client {
  int fd;
  const char *out;
  size_t out_len, out_off;
  char *in;
  size_t in_len, in_cap;
  bool eof, reading;
};

static void client_open(struct client *c, unsigned port, const char *out, size_t out_len)
{
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  memset(c, 0, sizeof(*c));
  c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  assert_true(c->fd >= 0);
  assert_true(connect(c->fd, (struct sockaddr *)&a, sizeof(a)) == 0 || errno == EINPROGRESS);
  c->out = out;
  c->out_len = out_len;
  c->reading = true;
}

static void client_pump(struct client *c)
{
  ssize_t n;
  while (c->out_off < c->out_len &&
         (n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL)) > 0)
    c->out_off += (size_t)n;
  while (c->reading && !c->eof) {
    if (c->in_cap - c->in_len < 65536) {
      c->in_cap = c->in_cap ? 2 * c->in_cap : 1 << 20;
      assert_non_null(c->in = realloc(c->in, c->in_cap));
    }
    n = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len, 0);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
      c->eof = true; /* closed or reset */
    if (n <= 0)
      break;
    c->in_len += (size_t)n;
  }
}

/* Turns the loop and pumps everyone until the client's connection ends. */
static void run(struct env *e, struct client *c, struct raw *b)
{
  uint64_t deadline = gs_net_loop_now_us() + DEADLINE_US;
  while (!c->eof && gs_net_loop_now_us() < deadline) {
    gs_net_loop_run_once(e->loop, 1);
    if (b)
      raw_pump(b);
    client_pump(c);
  }
  assert_true(c->eof);
}

static void client_free(struct client *c)
{
  close(c->fd);
  free(c->in);
}

/* The answer's status and its body so far (de-chunked when chunked), in
 * place, read by net's response reader: it may have been cut short. */
static int answer(struct client *c, char **body, size_t *len)
{
  struct gs_http_resp r;
  size_t rest;
  gs_http_resp_init(&r, false);
  assert_int_equal(gs_http_resp_head(&r, c->in, &c->in_len, c->in_len + 1), GS_HTTP_RESP_DONE);
  *body = c->in + r.head_len;
  *len = c->in_len - r.head_len;
  assert_int_not_equal(gs_http_resp_body(&r, *body, len, false, &rest), GS_HTTP_RESP_BAD);
  return r.status;
}

static void assert_pattern(const char *body, size_t len, size_t want)
{
  assert_int_equal(len, want);
  for (size_t i = 0; i < len; i++)
    if (body[i] != pat(i))
      fail_msg("byte %zu of %zu differs", i, len);
}

/* A request with a Content-Length body of len pattern bytes; free it. */
static char *post(const char *path, size_t len, size_t *out_len)
{
  char head[256];
  int hl = snprintf(head, sizeof(head),
                    "POST %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: %zu\r\n\r\n",
                    path, len);
  char *r = malloc((size_t)hl + len), *b = pattern(len);
  assert_non_null(r);
  memcpy(r, head, (size_t)hl);
  memcpy(r + hl, b, len);
  free(b);
  *out_len = (size_t)hl + len;
  return r;
}

/* The same body sent in chunks of 100,000 bytes. */
static char *post_chunked(const char *path, size_t len, size_t *out_len)
{
  char *b = pattern(len), *r = malloc(len + len / 1000 + 512);
  size_t o;
  assert_non_null(r);
  o = (size_t)sprintf(r, "POST %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                         "Transfer-Encoding: chunked\r\n\r\n", path);
  for (size_t i = 0; i < len; i += 100000) {
    size_t n = len - i < 100000 ? len - i : 100000;
    o += (size_t)sprintf(r + o, "%zx\r\n", n);
    memcpy(r + o, b + i, n);
    o += n;
    memcpy(r + o, "\r\n", 2);
    o += 2;
  }
  memcpy(r + o, "0\r\n\r\n", 5);
  free(b);
  *out_len = o + 5;
  return r;
}

static void roundtrip_pattern(struct env *e, char *req, size_t req_len, size_t want)
{
  struct client c;
  char *body;
  size_t len;
  client_open(&c, e->port, req, req_len);
  run(e, &c, NULL);
  assert_int_equal(answer(&c, &body, &len), 200);
  assert_pattern(body, len, want);
  client_free(&c);
  free(req);
}

static void test_big_bodies_both_ways(void **state)
{
  struct env e;
  size_t n;
  char *req;
  (void)state;
  env_init(&e);
  gs_proxy_worker_set(e.proxy, 0, e.echo_port, true);
  req = post("/", 8u << 20, &n);
  roundtrip_pattern(&e, req, n, 8u << 20);
  env_free(&e);
}

static void test_chunked_both_ways(void **state)
{
  struct env e;
  size_t n;
  char *req;
  (void)state;
  env_init(&e);
  gs_proxy_worker_set(e.proxy, 0, e.echo_port, true);
  req = post_chunked("/chunked", 3u << 20, &n);
  roundtrip_pattern(&e, req, n, 3u << 20); /* chunks both ways */
  req = post_chunked("/", 1000, &n);
  roundtrip_pattern(&e, req, n, 1000); /* chunked in only */
  req = post("/chunked", 5u << 20, &n);
  roundtrip_pattern(&e, req, n, 5u << 20); /* chunked out only */
  env_free(&e);
}

/* A client that reads nothing of a 32 MiB answer: the proxy stops reading
 * the worker, so its heap holds a bounded amount whatever the answer's size. */
static void test_slow_reader_bounded(void **state)
{
  static const char req[] = "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  struct env e;
  struct raw b;
  struct client c;
  char *body;
  size_t len, before, grown;
  uint64_t until;
  (void)state;
  env_init(&e);
  raw_init(&b, 32u << 20);
  gs_proxy_worker_set(e.proxy, 0, b.port, true);
  client_open(&c, e.port, req, sizeof(req) - 1);
  c.reading = false;
  before = mallinfo2().uordblks;
  for (until = gs_net_loop_now_us() + 1000000; gs_net_loop_now_us() < until;) {
    gs_net_loop_run_once(e.loop, 1);
    raw_pump(&b);
    client_pump(&c);
  }
  grown = mallinfo2().uordblks - before;
  print_message("slow reader: worker sent %zu of %zu bytes, proxy heap grew %zu bytes\n", b.sent,
                b.head_len + b.body_len, grown);
  assert_true(grown < (4u << 20)); /* STREAM_HIGH, read buffers: well under the answer */
  c.reading = true;
  run(&e, &c, &b);
  assert_int_equal(answer(&c, &body, &len), 200);
  assert_pattern(body, len, 32u << 20);
  client_free(&c);
  raw_free(&b);
  env_free(&e);
}

/* Worker 0 dies after reading part of the request body. */
static int died_mid_body(size_t body_len, size_t die_after, struct raw *b, struct env *e)
{
  struct client c;
  size_t n;
  char *req = post("/", body_len, &n), *body;
  size_t len;
  int status;
  raw_init(b, 0);
  b->die_after = die_after;
  gs_proxy_worker_set(e->proxy, 0, b->port, true);
  gs_proxy_worker_set(e->proxy, 1, e->echo_port, true);
  client_open(&c, e->port, req, n);
  run(e, &c, b);
  status = answer(&c, &body, &len);
  if (status == 200)
    assert_pattern(body, len, body_len);
  assert_true(b->dead); /* it did take part of the body first */
  client_free(&c);
  free(req);
  raw_free(b);
  return status;
}

static void test_worker_dies_mid_request_body(void **state)
{
  struct env e;
  struct raw b;
  (void)state;
  env_init(&e);
  /* within the bytes kept: retried on the echo worker */
  assert_int_equal(died_mid_body(512u << 10, 200000, &b, &e), 200);
  env_free(&e);
}

static void test_worker_dies_past_retry_buffer(void **state)
{
  struct env e;
  struct raw b;
  struct client c;
  size_t n, len;
  char *req = post("/", 16u << 20, &n), *body;
  (void)state;
  env_init(&e);
  raw_init(&b, 0);
  b.die_after = 8u << 20; /* well past the 1 MiB kept for a retry */
  gs_proxy_worker_set(e.proxy, 0, b.port, true);
  client_open(&c, e.port, req, n);
  run(&e, &c, &b);
  assert_int_equal(answer(&c, &body, &len), 502);
  assert_non_null(strstr(body, "kept for a retry"));
  client_free(&c);
  free(req);
  raw_free(&b);
  env_free(&e);
}

/* The worker dies in the middle of its answer: the client sees its
 * connection end before the Content-Length, and the proxy serves on. */
static void test_worker_dies_mid_response(void **state)
{
  static const char req[] = "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  struct env e;
  struct raw b;
  struct client c;
  char *body, *again;
  size_t len, n;
  (void)state;
  env_init(&e);
  raw_init(&b, 4u << 20);
  b.die_sent = 1u << 20;
  gs_proxy_worker_set(e.proxy, 0, b.port, true);
  client_open(&c, e.port, req, sizeof(req) - 1);
  run(&e, &c, &b);
  assert_int_equal(answer(&c, &body, &len), 200);
  assert_true(len < (4u << 20));
  client_free(&c);
  raw_free(&b);
  gs_proxy_worker_set(e.proxy, 0, e.echo_port, true);
  again = post("/", 100000, &n);
  roundtrip_pattern(&e, again, n, 100000);
  env_free(&e);
}

/* Body limits while streaming: a Content-Length over the limit is refused
 * before anything reaches a worker; a chunked body passing it mid-way gets
 * 413 and its worker connection is closed. */
static void test_body_limit_while_streaming(void **state)
{
  struct env e;
  struct raw b;
  struct client c;
  size_t n, len;
  char *req, *body;
  uint64_t deadline;
  (void)state;
  env_init_limits(&e, 1u << 20, 0);
  raw_init(&b, 0);
  gs_proxy_worker_set(e.proxy, 0, b.port, true);
  req = post("/", 2u << 20, &n);
  client_open(&c, e.port, req, n);
  run(&e, &c, &b);
  assert_int_equal(answer(&c, &body, &len), 413);
  assert_int_equal(b.got, 0);
  client_free(&c);
  free(req);
  req = post_chunked("/", 3u << 20, &n);
  client_open(&c, e.port, req, n);
  run(&e, &c, &b);
  assert_int_equal(answer(&c, &body, &len), 413);
  for (deadline = gs_net_loop_now_us() + DEADLINE_US; !b.eof && gs_net_loop_now_us() < deadline;) {
    gs_net_loop_run_once(e.loop, 1);
    raw_pump(&b);
  }
  assert_true(b.got > 0 && b.eof); /* it had the start; its connection is gone */
  client_free(&c);
  free(req);
  raw_free(&b);
  env_free(&e);
}

/* Slowloris while a body streams: the head and a few body bytes, then
 * nothing; the read timeout ends the client's connection and the worker's. */
static void test_slowloris_while_streaming(void **state)
{
  static const char req[] = "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n0123456789";
  struct env e;
  struct raw b;
  struct client c;
  uint64_t deadline;
  (void)state;
  env_init_limits(&e, 0, 300);
  raw_init(&b, 0);
  gs_proxy_worker_set(e.proxy, 0, b.port, true);
  client_open(&c, e.port, req, sizeof(req) - 1);
  run(&e, &c, &b);
  for (deadline = gs_net_loop_now_us() + DEADLINE_US; !b.eof && gs_net_loop_now_us() < deadline;) {
    gs_net_loop_run_once(e.loop, 1);
    raw_pump(&b);
  }
  assert_true(b.got > 0 && b.eof);
  assert_int_equal(gs_proxy_inflight(e.proxy), 0);
  client_free(&c);
  raw_free(&b);
  env_free(&e);
}

/* Three loop threads, two echo workers on the test's loop. */
static void test_threads(void **state)
{
  enum { NCLIENTS = 30, BODY = 65536 };
  static const char get[] = "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  static const char metrics[] = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  struct gs_proxy_config cfg = {.nworkers = 2, .threads = 3, .worker_timeout_ms = 120000};
  struct gs_http_server *echo2;
  struct gs_proxy_worker_stats st[2];
  struct client c[NCLIENTS];
  struct env e;
  struct gs_err err = {0};
  unsigned port2;
  size_t n, len;
  char *req, *body;
  uint64_t deadline;
  bool all;
  int fd;
  (void)state;
  memset(&e, 0, sizeof(e));
  gs_http_limits_default(&cfg.limits);
  cfg.limits.read_timeout_ms = 120000;
  assert_int_equal(gs_net_loop_new(&err, 1024, &e.loop), 0);
  assert_int_equal(gs_proxy_new(&err, e.loop, &cfg, &e.proxy), 0);
  assert_int_equal(gs_net_listen(&err, "127.0.0.1:0", 64, &fd, &e.port), 0);
  assert_int_equal(gs_proxy_listen_fd(&err, e.proxy, fd), 0);
  assert_int_equal(gs_http_server_new(&err, e.loop, NULL, echo_handle, NULL, &e.echo), 0);
  assert_int_equal(gs_net_listen(&err, "127.0.0.1:0", 64, &fd, &e.echo_port), 0);
  assert_int_equal(gs_http_server_listen_fd(&err, e.echo, fd), 0);
  assert_int_equal(gs_http_server_new(&err, e.loop, NULL, echo_handle, NULL, &echo2), 0);
  assert_int_equal(gs_net_listen(&err, "127.0.0.1:0", 64, &fd, &port2), 0);
  assert_int_equal(gs_http_server_listen_fd(&err, echo2, fd), 0);
  gs_proxy_worker_set(e.proxy, 0, e.echo_port, true);
  gs_proxy_worker_set(e.proxy, 1, port2, true);

  req = post("/", BODY, &n);
  for (int i = 0; i < NCLIENTS; i++)
    client_open(&c[i], e.port, req, n);
  deadline = gs_net_loop_now_us() + DEADLINE_US;
  do {
    gs_net_loop_run_once(e.loop, 1);
    all = true;
    for (int i = 0; i < NCLIENTS; i++) {
      client_pump(&c[i]);
      all = all && c[i].eof;
    }
  } while (!all && gs_net_loop_now_us() < deadline);
  for (int i = 0; i < NCLIENTS; i++) {
    assert_int_equal(answer(&c[i], &body, &len), 200);
    assert_pattern(body, len, BODY);
    client_free(&c[i]);
  }
  free(req);
  assert_int_equal(gs_proxy_worker_stats(e.proxy, 0, &st[0]), 0);
  assert_int_equal(gs_proxy_worker_stats(e.proxy, 1, &st[1]), 0);
  assert_int_equal(st[0].requests + st[1].requests, NCLIENTS);
  assert_int_equal(st[0].inflight + st[1].inflight, 0);
  assert_int_equal(gs_proxy_inflight(e.proxy), 0);

  client_open(&c[0], e.port, metrics, sizeof(metrics) - 1);
  run(&e, &c[0], NULL);
  assert_int_equal(answer(&c[0], &body, &len), 200);
  assert_non_null(strstr(body, "gpuslice_proxy_requests_total 30\n"));
  assert_non_null(strstr(body, "gpuslice_proxy_request_duration_seconds_count 30\n"));
  client_free(&c[0]);

  /* out of the pool: every thread answers 503 at once */
  gs_proxy_worker_set(e.proxy, 0, e.echo_port, false);
  gs_proxy_worker_set(e.proxy, 1, port2, false);
  for (int i = 0; i < 9; i++)
    client_open(&c[i], e.port, get, sizeof(get) - 1);
  for (int i = 0; i < 9; i++) {
    run(&e, &c[i], NULL);
    assert_int_equal(answer(&c[i], &body, &len), 503);
    client_free(&c[i]);
  }
  gs_proxy_worker_set(e.proxy, 1, port2, true);
  for (int i = 0; i < 6; i++)
    client_open(&c[i], e.port, get, sizeof(get) - 1);
  for (int i = 0; i < 6; i++) {
    run(&e, &c[i], NULL);
    assert_int_equal(answer(&c[i], &body, &len), 200);
    client_free(&c[i]);
  }
  assert_int_equal(gs_proxy_worker_stats(e.proxy, 1, &st[1]), 0);
  assert_int_equal(st[0].requests + st[1].requests, NCLIENTS + 6);
  gs_http_server_free(echo2);
  env_free(&e);
}

/* Two threads, 8 connections opened at once: whichever thread accepts them,
 * each ends up serving about half (the other thread's loop runs on its own,
 * so without the hand-over it would take most of them). */
static void test_threads_share_connections(void **state)
{
  struct gs_proxy_config cfg = {.nworkers = 1, .threads = 2};
  struct gs_err err = {0};
  struct client c[8];
  struct env e;
  uint64_t deadline;
  unsigned got = 0;
  int fd;
  (void)state;
  memset(&e, 0, sizeof(e));
  gs_http_limits_default(&cfg.limits);
  assert_int_equal(gs_net_loop_new(&err, 1024, &e.loop), 0);
  assert_int_equal(gs_proxy_new(&err, e.loop, &cfg, &e.proxy), 0);
  assert_int_equal(gs_net_listen(&err, "127.0.0.1:0", 64, &fd, &e.port), 0);
  assert_int_equal(gs_proxy_listen_fd(&err, e.proxy, fd), 0);
  for (int i = 0; i < 8; i++)
    client_open(&c[i], e.port, NULL, 0);
  deadline = gs_net_loop_now_us() + DEADLINE_US;
  while (got < 8 && gs_net_loop_now_us() < deadline) {
    gs_net_loop_run_once(e.loop, 1);
    got = gs__proxy_thread_conns(e.proxy, 0) + gs__proxy_thread_conns(e.proxy, 1);
  }
  assert_int_equal(got, 8);
  /* two threads deciding at once may each keep one: at most 2 apart */
  assert_true(gs__proxy_thread_conns(e.proxy, 0) >= 3);
  assert_true(gs__proxy_thread_conns(e.proxy, 1) >= 3);
  for (int i = 0; i < 8; i++)
    client_free(&c[i]);
  gs_proxy_free(e.proxy);
  gs_net_loop_free(e.loop);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_big_bodies_both_ways),
      cmocka_unit_test(test_chunked_both_ways),
      cmocka_unit_test(test_slow_reader_bounded),
      cmocka_unit_test(test_worker_dies_mid_request_body),
      cmocka_unit_test(test_worker_dies_past_retry_buffer),
      cmocka_unit_test(test_worker_dies_mid_response),
      cmocka_unit_test(test_body_limit_while_streaming),
      cmocka_unit_test(test_slowloris_while_streaming),
      cmocka_unit_test(test_threads),
      cmocka_unit_test(test_threads_share_connections),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
