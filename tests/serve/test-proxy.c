/* SPDX-License-Identifier: Apache-2.0 */
/* test-proxy.c: the load balancer over loopback, in one process and one
 * loop: a request forwarded to an emulated worker (JSON infer, chunked
 * request body, /metrics), 503 with no worker ready, 504 from a worker that
 * accepts and never answers and its ejection, the retry on another worker
 * when one refuses connections, leaving the pool at once, and --max-conns
 * per listener (the oldest idle connection makes room). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "serve/serve.h"
#include "worker/worker.h"

struct env {
  struct gs_net_loop *loop;
  struct gs_proxy *proxy;
  unsigned port;
  struct gs_worker *worker;
  struct gs_http_server *wsrv;
  unsigned wport;
};

static void env_init(struct env *e, const struct gs_proxy_config *cfg)
{
  struct gs_err err = {0};
  int fd;
  memset(e, 0, sizeof(*e));
  assert_int_equal(gs_net_loop_new(&err, 1024, &e->loop), 0);
  assert_int_equal(gs_proxy_new(&err, e->loop, cfg, &e->proxy), 0);
  assert_int_equal(gs_net_listen(&err, "127.0.0.1:0", 64, &fd, &e->port), 0);
  assert_int_equal(gs_proxy_listen_fd(&err, e->proxy, fd), 0);
}

/* An emulated worker answering at once, on the same loop. */
static void env_worker(struct env *e)
{
  struct gs_worker_config wc = {
      .sms = 14, .full_sms = 108, .slice_name = "1g.5gb", .share = 1, .instant = true};
  struct gs_err err = {0};
  int fd;
  assert_int_equal(gs_worker_new(&err, &wc, &e->worker), 0);
  gs_worker_attach(e->worker, e->loop);
  assert_int_equal(gs_http_server_new(&err, e->loop, NULL, gs_worker_handle, e->worker, &e->wsrv),
                   0);
  assert_int_equal(gs_net_listen(&err, "127.0.0.1:0", 64, &fd, &e->wport), 0);
  assert_int_equal(gs_http_server_listen_fd(&err, e->wsrv, fd), 0);
}

static void env_free(struct env *e)
{
  gs_proxy_free(e->proxy);
  gs_http_server_free(e->wsrv);
  gs_worker_free(e->worker);
  gs_net_loop_free(e->loop);
}

/* A port nothing listens on: bound, then closed. */
static unsigned dead_port(void)
{
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t al = sizeof(a);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
  assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &al), 0);
  close(fd);
  return ntohs(a.sin_port);
}

/* Sends one request to the proxy and turns the loop until the whole answer
 * (Content-Length framed) is back; returns it NUL-terminated, or NULL. */
static char *roundtrip_to(struct env *e, unsigned port, const char *req, size_t reqlen)
{
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  size_t cap = 1 << 20, len = 0;
  char *buf = malloc(cap);
  uint64_t deadline = gs_net_loop_now_us() + 5000000;
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  assert_non_null(buf);
  assert_true(connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0 || errno == EINPROGRESS);
  gs_net_loop_run_once(e->loop, 10); /* the listener takes the connection */
  assert_int_equal(send(fd, req, reqlen, MSG_NOSIGNAL), (ssize_t)reqlen);
  while (gs_net_loop_now_us() < deadline) {
    ssize_t n;
    const char *end, *cl;
    gs_net_loop_run_once(e->loop, 10);
    n = recv(fd, buf + len, cap - len - 1, 0);
    if (n == 0)
      break;
    if (n < 0)
      continue;
    len += (size_t)n;
    buf[len] = 0;
    if ((end = strstr(buf, "\r\n\r\n")) && (cl = strstr(buf, "Content-Length: ")) &&
        len >= (size_t)(end + 4 - buf) + strtoul(cl + 16, NULL, 10))
      break;
  }
  close(fd);
  buf[len] = 0;
  return buf;
}

static char *roundtrip(struct env *e, const char *req, size_t reqlen)
{
  return roundtrip_to(e, e->port, req, reqlen);
}

static char *get(struct env *e, const char *path)
{
  char req[512];
  int n = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                   path);
  return roundtrip(e, req, (size_t)n);
}

static void expect_status(char *resp, const char *status)
{
  if (strncmp(resp, status, strlen(status)) != 0)
    fail_msg("expected '%s', got '%.200s'", status, resp);
  free(resp);
}

/* A BERT-large infer body (three [1,384] INT32 inputs) in JSON. */
static char *bert_infer(void)
{
  static const char *const names[] = {"input_ids", "attention_mask", "token_type_ids"};
  char *s = malloc(8192);
  size_t o = 0;
  assert_non_null(s);
  o += (size_t)sprintf(s + o, "{\"inputs\":[");
  for (int k = 0; k < 3; k++) {
    o += (size_t)sprintf(s + o, "%s{\"name\":\"%s\",\"datatype\":\"INT32\",\"shape\":[1,384],"
                         "\"data\":[", k ? "," : "", names[k]);
    for (int i = 0; i < 384; i++)
      o += (size_t)sprintf(s + o, "%s1", i ? "," : "");
    o += (size_t)sprintf(s + o, "]}");
  }
  sprintf(s + o, "]}");
  return s;
}

static void test_forward(void **state)
{
  char *infer = bert_infer();
  struct gs_proxy_config cfg = {.nworkers = 1};
  struct env e;
  char req[16384], *resp;
  int n;
  (void)state;
  env_init(&e, &cfg);
  env_worker(&e);
  gs_proxy_worker_set(e.proxy, 0, e.wport, true);
  expect_status(get(&e, "/v2/health/ready"), "HTTP/1.1 200");
  n = snprintf(req, sizeof(req),
               "POST /v2/models/bert-large/infer HTTP/1.1\r\nHost: x\r\nContent-Type: "
               "application/json\r\nContent-Length: %zu\r\n\r\n%s",
               strlen(infer), infer);
  resp = roundtrip(&e, req, (size_t)n);
  assert_non_null(strstr(resp, "\"outputs\""));
  expect_status(resp, "HTTP/1.1 200");
  /* A chunked request body reaches the worker re-framed by length. */
  n = snprintf(req, sizeof(req),
               "POST /v2/models/bert-large/infer HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: "
               "chunked\r\n\r\n%zx\r\n%s\r\n0\r\n\r\n",
               strlen(infer), infer);
  resp = roundtrip(&e, req, (size_t)n);
  assert_non_null(strstr(resp, "\"outputs\""));
  expect_status(resp, "HTTP/1.1 200");
  /* The worker's own 404, passed through. */
  expect_status(get(&e, "/v2/models/no-such-model"), "HTTP/1.1 404");
  resp = get(&e, "/metrics");
  assert_non_null(strstr(resp, "gpuslice_proxy_requests_total 4\n"));
  /* Latency histograms: 4 answers in total, all from worker 0, and the
   * +Inf bucket holds them all. */
  assert_non_null(strstr(resp, "# TYPE gpuslice_proxy_request_duration_seconds histogram\n"));
  assert_non_null(strstr(resp, "gpuslice_proxy_request_duration_seconds_bucket{le=\"+Inf\"} 4\n"));
  assert_non_null(strstr(resp, "gpuslice_proxy_request_duration_seconds_count 4\n"));
  assert_non_null(strstr(resp, "gpuslice_proxy_request_duration_seconds_sum "));
  assert_non_null(strstr(resp, "gpuslice_worker_request_duration_seconds_bucket{worker=\"0\","
                               "le=\"0.0005\"} "));
  assert_non_null(strstr(resp, "gpuslice_worker_request_duration_seconds_bucket{worker=\"0\","
                               "le=\"+Inf\"} 4\n"));
  assert_non_null(strstr(resp, "gpuslice_worker_request_duration_seconds_count{worker=\"0\"} 4\n"));
  assert_non_null(strstr(resp, "gpuslice_worker_up{worker=\"0\"} 1\n"));
  expect_status(resp, "HTTP/1.1 200");
  free(infer);
  env_free(&e);
}

/* The memory budget for request bodies: with 256 KiB, a request whose
 * retry buffer would take 512 KiB is 503 before anything is forwarded,
 * and a small one passes; the budget is whole again after each. */
static void test_body_budget_503(void **state)
{
  struct gs_proxy_config cfg = {.nworkers = 1, .body_budget = 256u << 10};
  struct env e;
  char head[256], *req, *resp;
  size_t body = 512u << 10;
  int n;
  (void)state;
  env_init(&e, &cfg);
  env_worker(&e);
  gs_proxy_worker_set(e.proxy, 0, e.wport, true);
  n = snprintf(head, sizeof(head), "POST /v2/models/flower/infer HTTP/1.1\r\nHost: x\r\n"
               "Content-Length: %zu\r\n\r\n", body);
  assert_non_null(req = calloc(1, (size_t)n + body));
  memcpy(req, head, (size_t)n);
  resp = roundtrip(&e, req, (size_t)n + body);
  assert_non_null(strstr(resp, "memory budget"));
  expect_status(resp, "HTTP/1.1 503");
  expect_status(get(&e, "/v2/health/ready"), "HTTP/1.1 200");
  resp = get(&e, "/metrics");
  assert_non_null(strstr(resp, "gpuslice_proxy_errors_total 1\n"));
  expect_status(resp, "HTTP/1.1 200");
  free(req);
  env_free(&e);
}

static void test_no_worker_503(void **state)
{
  struct gs_proxy_config cfg = {.nworkers = 2};
  struct env e;
  char *resp;
  (void)state;
  env_init(&e, &cfg);
  resp = get(&e, "/v2/health/ready");
  assert_non_null(strstr(resp, "{\"error\":\"no worker is ready"));
  expect_status(resp, "HTTP/1.1 503");
  /* Ready, then gone: it leaves the pool at once. */
  env_worker(&e);
  gs_proxy_worker_set(e.proxy, 1, e.wport, true);
  expect_status(get(&e, "/v2/health/ready"), "HTTP/1.1 200");
  gs_proxy_worker_set(e.proxy, 1, e.wport, false);
  expect_status(get(&e, "/v2/health/ready"), "HTTP/1.1 503");
  env_free(&e);
}

/* A worker whose socket accepts (the kernel's backlog) and never answers. */
static void test_hung_worker_504_then_ejected(void **state)
{
  struct gs_proxy_config cfg = {.nworkers = 1, .worker_timeout_ms = 200, .eject_after = 2,
                                .eject_ms = 60000};
  struct gs_proxy_worker_stats st;
  struct gs_err err = {0};
  struct env e;
  unsigned hport;
  int hfd;
  char *resp;
  (void)state;
  env_init(&e, &cfg);
  assert_int_equal(gs_net_listen(&err, "127.0.0.1:0", 64, &hfd, &hport), 0);
  gs_proxy_worker_set(e.proxy, 0, hport, true);
  resp = get(&e, "/v2/health/ready");
  assert_non_null(strstr(resp, "did not answer within 200 ms"));
  expect_status(resp, "HTTP/1.1 504");
  assert_true(gs_proxy_worker_usable(e.proxy, 0));
  expect_status(get(&e, "/v2/health/ready"), "HTTP/1.1 504");
  assert_false(gs_proxy_worker_usable(e.proxy, 0)); /* two in a row: ejected */
  expect_status(get(&e, "/v2/health/ready"), "HTTP/1.1 503");
  /* Three answers, each at least 200 ms after its request: none in the
   * buckets up to 0.1 s, all under +Inf. */
  resp = get(&e, "/metrics");
  assert_non_null(strstr(resp, "gpuslice_proxy_request_duration_seconds_bucket{le=\"0.1\"} 1\n"));
  assert_non_null(strstr(resp, "gpuslice_proxy_request_duration_seconds_bucket{le=\"+Inf\"} 3\n"));
  free(resp);
  /* Readiness reported again puts it on trial: out of the pool until a
   * real request to it is answered. */
  gs_proxy_worker_set(e.proxy, 0, hport, true);
  assert_false(gs_proxy_worker_usable(e.proxy, 0));
  assert_int_equal(gs_proxy_worker_stats(e.proxy, 0, &st), 0);
  assert_true(st.trial);
  assert_int_equal(st.ejections, 1);
  assert_int_equal(gs_proxy_inflight(e.proxy), 0);
  close(hfd);
  env_free(&e);
}

/* Worker 0 refuses connections: every request still succeeds through the
 * retry, and worker 0 is ejected after eject_after refusals. */
static void test_retry_on_refused(void **state)
{
  struct gs_proxy_config cfg = {.nworkers = 2, .policy = GS_PROXY_RR, .eject_after = 3,
                                .eject_ms = 60000};
  struct env e;
  (void)state;
  env_init(&e, &cfg);
  env_worker(&e);
  gs_proxy_worker_set(e.proxy, 0, dead_port(), true);
  gs_proxy_worker_set(e.proxy, 1, e.wport, true);
  for (int i = 0; i < 10; i++)
    expect_status(get(&e, "/v2/health/ready"), "HTTP/1.1 200");
  assert_false(gs_proxy_worker_usable(e.proxy, 0));
  assert_true(gs_proxy_worker_usable(e.proxy, 1));
  env_free(&e);
}

/* Keep-alive upstream: many requests, all answered, and the worker sees
 * few connections (the idle pool reuses them). */
static void test_upstream_reuse(void **state)
{
  struct gs_proxy_config cfg = {.nworkers = 1};
  struct env e;
  (void)state;
  env_init(&e, &cfg);
  env_worker(&e);
  gs_proxy_worker_set(e.proxy, 0, e.wport, true);
  for (int i = 0; i < 20; i++)
    expect_status(get(&e, "/v2/health/live"), "HTTP/1.1 200");
  assert_int_equal(gs_http_server_conns(e.wsrv), 1);
  env_free(&e);
}

static char *admin_req(struct env *e, unsigned port, const char *method, const char *path,
                       const char *auth)
{
  char req[512];
  int n = snprintf(req, sizeof(req), "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%u\r\n%s%s%s"
                   "Content-Type: application/json\r\nContent-Length: 0\r\n"
                   "Connection: close\r\n\r\n", method, path, port, auth ? "Authorization: " : "",
                   auth ? auth : "", auth ? "\r\n" : "");
  return roundtrip_to(e, port, req, (size_t)n);
}

static void expect_has(char *resp, const char *status, const char *needle)
{
  if (!strstr(resp, needle))
    fail_msg("expected '%s' in '%.400s'", needle, resp);
  expect_status(resp, status);
}

/* The admin API: list, disable, enable, and drain with a request under way
 * (it finishes, then the worker reads "drained"). */
static void test_admin(void **state)
{
  struct gs_proxy_config cfg = {.nworkers = 2, .policy = GS_PROXY_RR, .worker_timeout_ms = 60000};
  struct gs_proxy_admin_server *adm;
  struct gs_proxy_worker_stats st;
  struct gs_err err = {0};
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  const char req[] = "GET /v2/health/ready HTTP/1.1\r\nHost: x\r\n\r\n";
  char buf[4096];
  size_t len = 0;
  struct env e;
  unsigned aport, hport;
  int afd, hfd, cfd;
  (void)state;
  env_init(&e, &cfg);
  env_worker(&e);
  assert_int_equal(gs_net_listen(&err, "127.0.0.1:0", 64, &afd, &aport), 0);
  assert_int_equal(gs_proxy_admin_new(&err, e.loop, e.proxy, NULL, NULL, afd, &adm), 0);
  gs_proxy_worker_set(e.proxy, 1, e.wport, true);
  expect_has(admin_req(&e, aport, "GET", "/workers", NULL), "HTTP/1.1 200",
             "{\"workers\":[{\"worker\":0,");
  expect_has(admin_req(&e, aport, "POST", "/workers/1/disable", NULL), "HTTP/1.1 200",
             "\"in_pool\":false,\"ejected\":false,\"admin\":\"disabled\"");
  expect_status(get(&e, "/v2/health/ready"), "HTTP/1.1 503");
  expect_has(admin_req(&e, aport, "POST", "/workers/1/enable", NULL), "HTTP/1.1 200",
             "\"in_pool\":true,\"ejected\":false,\"admin\":\"enabled\"");
  expect_status(get(&e, "/v2/health/ready"), "HTTP/1.1 200");
  expect_has(admin_req(&e, aport, "GET", "/workers/7", NULL), "HTTP/1.1 404", "no such worker");
  expect_has(admin_req(&e, aport, "GET", "/workers/0/drain", NULL), "HTTP/1.1 405", "POST");
  expect_has(admin_req(&e, aport, "POST", "/workers/0/stop", NULL), "HTTP/1.1 404", "action");

  /* Drain: worker 0 holds a request (a listener that never accepts), the
   * only usable worker at first. */
  gs_proxy_worker_set(e.proxy, 1, e.wport, false);
  assert_int_equal(gs_net_listen(&err, "127.0.0.1:0", 64, &hfd, &hport), 0);
  gs_proxy_worker_set(e.proxy, 0, hport, true);
  a.sin_port = htons((uint16_t)e.port);
  cfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  assert_true(connect(cfd, (struct sockaddr *)&a, sizeof(a)) == 0 || errno == EINPROGRESS);
  gs_net_loop_run_once(e.loop, 10);
  assert_int_equal(send(cfd, req, sizeof(req) - 1, MSG_NOSIGNAL), (ssize_t)(sizeof(req) - 1));
  for (int i = 0; i < 500 && gs_proxy_inflight(e.proxy) == 0; i++)
    gs_net_loop_run_once(e.loop, 10);
  assert_int_equal(gs_proxy_worker_stats(e.proxy, 0, &st), 0);
  assert_int_equal(st.inflight, 1);
  expect_has(admin_req(&e, aport, "POST", "/workers/0/drain", NULL), "HTTP/1.1 200",
             "\"admin\":\"draining\",\"inflight\":1");
  /* New requests avoid it (round-robin would send every other one there). */
  gs_proxy_worker_set(e.proxy, 1, e.wport, true);
  for (int i = 0; i < 4; i++)
    expect_status(get(&e, "/v2/health/ready"), "HTTP/1.1 200");
  /* The hung listener goes: its queued connection is reset before any
   * answer byte, so the request under way is retried on worker 1. */
  close(hfd);
  for (int i = 0; i < 500 && len < 12; i++) {
    ssize_t n;
    gs_net_loop_run_once(e.loop, 10);
    if ((n = recv(cfd, buf + len, sizeof(buf) - 1 - len, 0)) > 0)
      len += (size_t)n;
  }
  buf[len] = 0;
  assert_true(strncmp(buf, "HTTP/1.1 200", 12) == 0);
  close(cfd);
  expect_has(admin_req(&e, aport, "GET", "/workers/0", NULL), "HTTP/1.1 200",
             "\"admin\":\"drained\",\"inflight\":0");
  gs_proxy_admin_free(adm);
  env_free(&e);
}

/* With a token every request needs it; without one, only loopback binds. */
static void test_admin_token(void **state)
{
  struct gs_proxy_config cfg = {.nworkers = 1};
  struct gs_proxy_admin_server *adm;
  struct gs_err err = {0};
  struct env e;
  unsigned aport, any_port;
  int afd, any_fd;
  (void)state;
  env_init(&e, &cfg);
  assert_int_equal(gs_net_listen(&err, "127.0.0.1:0", 64, &afd, &aport), 0);
  assert_int_equal(gs_proxy_admin_new(&err, e.loop, e.proxy, NULL, "s3cret-token-0123456", afd,
                                      &adm), 0);
  expect_has(admin_req(&e, aport, "GET", "/workers", NULL), "HTTP/1.1 401", "bearer token");
  expect_status(admin_req(&e, aport, "GET", "/workers", "Bearer s3cret-token-0123457"),
                "HTTP/1.1 401");
  expect_status(admin_req(&e, aport, "POST", "/workers/0/disable", "Bearer s3cret"),
                "HTTP/1.1 401");
  expect_has(admin_req(&e, aport, "GET", "/workers", "Bearer s3cret-token-0123456"),
             "HTTP/1.1 200", "\"admin\":\"enabled\"");
  assert_int_equal(gs_net_listen(&err, "0.0.0.0:0", 64, &any_fd, &any_port), 0);
  assert_int_equal(gs_proxy_admin_check_bind(&err, any_fd, NULL), GS_E_NO_PERMISSION);
  assert_non_null(strstr(err.msg, "without a token"));
  assert_int_equal(gs_proxy_admin_check_bind(&err, any_fd, "s3cret-token-0123456"), 0);
  close(any_fd);
  gs_proxy_admin_free(adm);
  env_free(&e);
}

/* A blocking connection to port on loopback, read without blocking. */
static int dial(unsigned port)
{
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  assert_true(fd >= 0);
  assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
  return fd;
}

/* Turns the loop until the server either sends on fd (1) or closes it
 * unanswered (0); -1 when neither happened within 5 s. */
static int answered(struct env *e, int fd)
{
  uint64_t deadline = gs_net_loop_now_us() + 5000000;
  char buf[256];
  while (gs_net_loop_now_us() < deadline) {
    ssize_t n;
    gs_net_loop_run_once(e->loop, 10);
    n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n >= 0)
      return n > 0;
    if (errno == ECONNRESET)
      return 0;
  }
  return -1;
}

static void turn(struct env *e, int times)
{
  while (times-- > 0)
    gs_net_loop_run_once(e->loop, 10);
}

/* Sends a request's first line only: the connection is busy, not idle. */
static void start_request(int fd)
{
  assert_int_equal(send(fd, "GET /metrics HTTP/1.1\r\n", 23, MSG_NOSIGNAL), 23);
}

/* Each listener has its own --max-conns. With 2 allowed: two idle HTTP
 * clients leave the gRPC listener's room alone; a third HTTP client gets
 * in by closing the oldest idle one (h1, closed unanswered), as nginx and
 * HAProxy do; when none is idle (each has begun a request), a new one is
 * closed at once. */
static void test_max_conns_per_listener(void **state)
{
  struct gs_proxy_config cfg = {.nworkers = 1};
  struct gs_proxy_grpc *g;
  struct gs_err err = {0};
  struct env e;
  unsigned gport;
  int gfd, h1, h2, h3, h4, c1, c2;
  (void)state;
  gs_http_limits_default(&cfg.limits);
  cfg.limits.max_conns = 2;
  env_init(&e, &cfg);
  assert_int_equal(gs_net_listen(&err, "127.0.0.1:0", 64, &gfd, &gport), 0);
  assert_int_equal(gs_proxy_grpc_new(&err, e.loop, e.proxy, NULL, gfd, &g), 0);
  h1 = dial(e.port);
  turn(&e, 20);
  h2 = dial(e.port);
  turn(&e, 20); /* both accepted (an idle HTTP client is sent nothing) */
  c1 = dial(gport);
  assert_int_equal(answered(&e, c1), 1); /* the server's SETTINGS: a room of its own */
  c2 = dial(gport);
  assert_int_equal(answered(&e, c2), 1);
  h3 = dial(e.port);
  turn(&e, 20);
  assert_int_equal(answered(&e, h1), 0); /* the oldest idle one made room */
  start_request(h3);
  start_request(h2);
  turn(&e, 20);
  h4 = dial(e.port); /* neither h2 nor h3 is idle now */
  assert_int_equal(answered(&e, h4), 0);
  assert_int_equal(send(h3, "Host: x\r\n\r\n", 11, MSG_NOSIGNAL), 11);
  assert_int_equal(answered(&e, h3), 1); /* still served */
  close(h1);
  close(h2);
  close(h3);
  close(h4);
  close(c1);
  close(c2);
  gs_proxy_grpc_free(g);
  env_free(&e);
}

/* Turns the loop until the server closes fd; true when it did within 5 s
 * and sent an HTTP/2 GOAWAY frame first (the frames' types are read from
 * what arrived, which must be whole frames). */
static bool closed_by_server(struct env *e, int fd, bool *goaway)
{
  uint64_t deadline = gs_net_loop_now_us() + 5000000;
  unsigned char buf[4096];
  size_t len = 0;
  *goaway = false;
  while (gs_net_loop_now_us() < deadline) {
    ssize_t n;
    gs_net_loop_run_once(e->loop, 10);
    n = recv(fd, buf + len, sizeof(buf) - len, MSG_DONTWAIT);
    if (n > 0)
      len += (size_t)n;
    if (n == 0 || (n < 0 && errno == ECONNRESET)) {
      for (size_t o = 0; o + 9 <= len; o += 9 + ((size_t)buf[o] << 16 | buf[o + 1] << 8 | buf[o + 2]))
        *goaway |= buf[o + 3] == 7;
      return true;
    }
  }
  return false;
}

/* The timeouts of both listeners (200 ms here): an HTTP connection that
 * sends nothing and an HTTP/2 one without preface are closed at the head
 * timeout; an HTTP/2 one that sent its preface and SETTINGS but no call
 * gets GOAWAY at the idle timeout. */
static void test_listener_timeouts(void **state)
{
  static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\4\0\0\0\0\0";
  struct gs_proxy_config cfg = {.nworkers = 1};
  struct gs_proxy_grpc *g;
  struct gs_err err = {0};
  struct env e;
  unsigned gport;
  int gfd, h, c1, c2;
  bool goaway;
  (void)state;
  gs_http_limits_default(&cfg.limits);
  cfg.limits.read_timeout_ms = cfg.limits.idle_timeout_ms = 200;
  env_init(&e, &cfg);
  assert_int_equal(gs_net_listen(&err, "127.0.0.1:0", 64, &gfd, &gport), 0);
  assert_int_equal(gs_proxy_grpc_new(&err, e.loop, e.proxy, NULL, gfd, &g), 0);
  h = dial(e.port);
  c1 = dial(gport);
  c2 = dial(gport);
  assert_int_equal(send(c2, preface, sizeof(preface) - 1, MSG_NOSIGNAL), (ssize_t)sizeof(preface) - 1);
  assert_true(closed_by_server(&e, h, &goaway));
  assert_true(closed_by_server(&e, c1, &goaway));
  assert_false(goaway); /* no preface: nothing more is said to it */
  assert_true(closed_by_server(&e, c2, &goaway));
  assert_true(goaway);
  close(h);
  close(c1);
  close(c2);
  gs_proxy_grpc_free(g);
  env_free(&e);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_forward),
      cmocka_unit_test(test_no_worker_503),
      cmocka_unit_test(test_body_budget_503),
      cmocka_unit_test(test_hung_worker_504_then_ejected),
      cmocka_unit_test(test_retry_on_refused),
      cmocka_unit_test(test_upstream_reuse),
      cmocka_unit_test(test_admin),
      cmocka_unit_test(test_admin_token),
      cmocka_unit_test(test_max_conns_per_listener),
      cmocka_unit_test(test_listener_timeouts),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
