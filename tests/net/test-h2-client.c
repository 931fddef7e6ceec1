/* test-h2-client.c: net's HTTP/2 client against net's HTTP/2 server on one
 * loop over loopback: many concurrent unary calls answered in order of
 * their streams' ends, each closed once; a 3 MiB request through a small
 * send buffer (the connection's output backlog, h2_out.c) arrives whole;
 * a refused connection closes its calls with GS_H2_CONN_REFUSED, then says
 * it is dead; a server that goes away mid-call closes its calls
 * GS_H2_CONN_LOST; a cancelled call reports nothing more; a client freed
 * from inside its own callback. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/net.h"

#define NCALLS 150 /* more than the server's 100 concurrent streams: some wait */

struct env {
  struct gs_net_loop *loop;
  struct gs_h2_server *srv;
  struct sockaddr_in addr;
  unsigned answered; /* by the server */
  bool hold;         /* the server keeps calls unanswered */
  struct gs_h2_call *held, *held2; /* the first two kept (each must be answered once) */
};

/* The server's handler: answers OK with the message's length, 4 bytes. */
static void handle(void *ctx, struct gs_h2_call *call, const struct gs_h2_request *req)
{
  struct env *e = ctx;
  uint8_t n[4] = {(uint8_t)(req->msg_len >> 24), (uint8_t)(req->msg_len >> 16),
                  (uint8_t)(req->msg_len >> 8), (uint8_t)req->msg_len};
  if (e->hold) {
    if (!e->held)
      e->held = call;
    else
      e->held2 = call;
    return;
  }
  e->answered++;
  gs_h2_call_reply(call, 0, n, sizeof(n), NULL);
}

static void env_init(struct env *e)
{
  struct gs_err err = {0};
  unsigned port;
  int fd;
  memset(e, 0, sizeof(*e));
  assert_int_equal(gs_net_loop_new(&err, 1024, &e->loop), 0);
  assert_int_equal(gs_h2_server_new(&err, e->loop, NULL, handle, e, &e->srv), 0);
  assert_int_equal(gs_net_listen(&err, "127.0.0.1:0", 64, &fd, &port), 0);
  assert_int_equal(gs_h2_server_listen_fd(&err, e->srv, fd), 0);
  e->addr = (struct sockaddr_in){.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
}

static void env_free(struct env *e)
{
  gs_h2_server_free(e->srv);
  gs_net_loop_run_once(e->loop, 0);
  gs_net_loop_free(e->loop);
}

/* One client call's record. */
struct call {
  int status, grpc_status;
  uint8_t body[16];
  size_t body_len;
  unsigned closed;
  uint32_t code;
};

struct client_state {
  struct gs_h2_client *c;
  unsigned closed, dead;
  bool free_in_closed; /* frees the client from inside closed() */
};
static struct client_state cs;

static int num(const char *v, size_t n)
{
  int x = 0;
  for (size_t i = 0; i < n; i++)
    x = x * 10 + (v[i] - '0');
  return x;
}

static void on_header(void *call, const char *name, size_t nl, const char *value, size_t vl)
{
  struct call *k = call;
  if (nl == 7 && !memcmp(name, ":status", 7))
    k->status = num(value, vl);
  else if (nl == 11 && !memcmp(name, "grpc-status", 11))
    k->grpc_status = num(value, vl);
}

static bool on_data(void *call, const uint8_t *data, size_t len)
{
  struct call *k = call;
  assert_true(k->body_len + len <= sizeof(k->body));
  memcpy(k->body + k->body_len, data, len);
  k->body_len += len;
  return true;
}

static void on_closed(void *call, uint32_t code)
{
  struct call *k = call;
  k->closed++;
  k->code = code;
  cs.closed++;
  if (cs.free_in_closed && cs.c) {
    gs_h2_client_free(cs.c); /* inside its own callback: done once it returns */
    cs.c = NULL;
  }
}

static void on_dead(void *ctx, const char *why)
{
  (void)ctx;
  assert_non_null(why);
  cs.dead++;
}

static const struct gs_h2_client_ops ops = {
    .header = on_header, .data = on_data, .closed = on_closed, .dead = on_dead};

#define H(n, v) {(n), (v), sizeof(n) - 1, sizeof(v) - 1}
static const struct gs_http_header hdr[] = {
    H(":method", "POST"), H(":scheme", "http"), H(":path", "/t.S/M"), H(":authority", "x"),
    H("content-type", "application/grpc"), H("te", "trailers")};

static struct gs_h2_client *client(struct env *e, const struct gs_h2_client_config *cfg)
{
  struct gs_err err = {0};
  struct gs_h2_client *c;
  assert_int_equal(
      gs_h2_client_new(&err, e->loop, (struct sockaddr *)&e->addr, sizeof(e->addr), cfg, &ops,
                       NULL, &c),
      0);
  memset(&cs, 0, sizeof(cs));
  cs.c = c;
  return c;
}

static void run_until(struct env *e, const unsigned *n, unsigned want)
{
  for (int turns = 0; *n < want && turns < 20000; turns++)
    assert_true(gs_net_loop_run_once(e->loop, 10) >= 0);
  assert_int_equal(*n, want);
}

/* A framed gRPC message of len bytes (5-byte prefix + zeros). */
static uint8_t *message(size_t len, size_t *framed)
{
  uint8_t *m = calloc(1, len + 5);
  assert_non_null(m);
  m[1] = (uint8_t)(len >> 24), m[2] = (uint8_t)(len >> 16), m[3] = (uint8_t)(len >> 8);
  m[4] = (uint8_t)len;
  *framed = len + 5;
  return m;
}

static void test_many_calls(void **state)
{
  struct env e;
  static struct call k[NCALLS];
  size_t len;
  uint8_t *m = message(1000, &len);
  (void)state;
  env_init(&e);
  memset(k, 0, sizeof(k));
  struct gs_h2_client *c = client(&e, NULL);
  for (int i = 0; i < NCALLS; i++)
    assert_true(gs_h2_client_call(c, hdr, GS_NITEMS(hdr), m, len, &k[i]) > 0);
  run_until(&e, &cs.closed, NCALLS);
  for (int i = 0; i < NCALLS; i++) {
    assert_int_equal(k[i].closed, 1);
    assert_int_equal(k[i].code, 0);
    assert_int_equal(k[i].status, 200);
    assert_int_equal(k[i].grpc_status, 0);
    assert_int_equal(k[i].body_len, 9); /* prefix + 4 bytes: 1000 */
    assert_int_equal(k[i].body[8], 1000 & 0xff);
  }
  assert_int_equal(cs.dead, 0);
  assert_true(gs_h2_client_usable(c));
  gs_h2_client_free(c);
  free(m);
  env_free(&e);
}

/* 3 MiB through a 16 KiB send buffer: the output backlog is kept and sent
 * in order as the socket drains. */
static void test_large_message_small_socket(void **state)
{
  struct env e;
  struct call k = {0};
  size_t len;
  uint8_t *m = message(3u << 20, &len);
  int small = 16384;
  (void)state;
  env_init(&e);
  struct gs_h2_client *c = client(&e, NULL);
  /* the client's socket is the loop's newest fd: shrink its send buffer */
  for (int fd = 3; fd < 1024; fd++) {
    struct sockaddr_in peer;
    socklen_t pl = sizeof(peer);
    if (getpeername(fd, (struct sockaddr *)&peer, &pl) == 0 && peer.sin_port == e.addr.sin_port)
      setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
  }
  assert_true(gs_h2_client_call(c, hdr, GS_NITEMS(hdr), m, len, &k) > 0);
  run_until(&e, &cs.closed, 1);
  assert_int_equal(k.code, 0);
  assert_int_equal(k.grpc_status, 0);
  assert_int_equal(k.body_len, 9);
  assert_int_equal(k.body[5], 0x00);
  assert_int_equal(k.body[6], 0x30); /* 3 MiB = 0x00300000 */
  gs_h2_client_free(c);
  free(m);
  env_free(&e);
}

static void test_refused(void **state)
{
  struct env e;
  struct call k[3] = {{0}};
  struct sockaddr_in closed;
  socklen_t sl = sizeof(closed);
  struct gs_err err = {0};
  struct gs_h2_client *c;
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  (void)state;
  env_init(&e);
  /* a port nobody listens on: bound, then closed */
  closed = (struct sockaddr_in){.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  assert_int_equal(bind(fd, (struct sockaddr *)&closed, sizeof(closed)), 0);
  assert_int_equal(getsockname(fd, (struct sockaddr *)&closed, &sl), 0);
  close(fd);
  memset(&cs, 0, sizeof(cs));
  assert_int_equal(gs_h2_client_new(&err, e.loop, (struct sockaddr *)&closed, sizeof(closed), NULL,
                                    &ops, NULL, &c),
                   0);
  for (int i = 0; i < 3; i++)
    assert_true(gs_h2_client_call(c, hdr, GS_NITEMS(hdr), "", 0, &k[i]) > 0);
  run_until(&e, &cs.dead, 1);
  assert_int_equal(cs.closed, 3);
  for (int i = 0; i < 3; i++)
    assert_int_equal(k[i].code, GS_H2_CONN_REFUSED);
  assert_false(gs_h2_client_usable(c));
  assert_true(gs_h2_client_call(c, hdr, GS_NITEMS(hdr), "", 0, &k[0]) < 0);
  gs_h2_client_free(c);
  env_free(&e);
}

/* The server goes while a call waits: it closes GS_H2_CONN_LOST; a
 * cancelled one reports nothing. */
static void test_lost_and_cancelled(void **state)
{
  struct env e;
  struct call k[2] = {{0}};
  size_t len;
  uint8_t *m = message(10, &len);
  int32_t id;
  (void)state;
  env_init(&e);
  e.hold = true;
  struct gs_h2_client *c = client(&e, NULL);
  id = gs_h2_client_call(c, hdr, GS_NITEMS(hdr), m, len, &k[0]);
  assert_true(id > 0);
  assert_true(gs_h2_client_call(c, hdr, GS_NITEMS(hdr), m, len, &k[1]) > 0);
  for (int turns = 0; !e.held && turns < 1000; turns++)
    gs_net_loop_run_once(e.loop, 10);
  assert_non_null(e.held);
  gs_h2_client_cancel(c, id);
  gs_h2_server_free(e.srv); /* every connection closes, the calls unanswered */
  e.srv = NULL;
  gs_h2_call_reply(e.held, 0, "", 0, NULL); /* dropped: its client is gone */
  if (e.held2)
    gs_h2_call_reply(e.held2, 0, "", 0, NULL);
  run_until(&e, &cs.dead, 1);
  assert_int_equal(k[0].closed, 0); /* cancelled: nothing more */
  assert_int_equal(k[1].closed, 1);
  assert_int_equal(k[1].code, GS_H2_CONN_LOST);
  gs_h2_client_free(c);
  free(m);
  env_free(&e);
}

/* Freed from inside its own closed(): the rest of the turn is safe. */
static void test_free_inside_callback(void **state)
{
  struct env e;
  static struct call k[4];
  size_t len;
  uint8_t *m = message(10, &len);
  (void)state;
  env_init(&e);
  memset(k, 0, sizeof(k));
  struct gs_h2_client *c = client(&e, NULL);
  cs.free_in_closed = true;
  for (int i = 0; i < 4; i++)
    assert_true(gs_h2_client_call(c, hdr, GS_NITEMS(hdr), m, len, &k[i]) > 0);
  run_until(&e, &cs.closed, 1);
  for (int turns = 0; turns < 20; turns++)
    gs_net_loop_run_once(e.loop, 1);
  assert_int_equal(cs.closed, 1); /* nothing reported after the free */
  assert_null(cs.c);
  free(m);
  env_free(&e);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_many_calls),
      cmocka_unit_test(test_large_message_small_socket),
      cmocka_unit_test(test_refused),
      cmocka_unit_test(test_lost_and_cancelled),
      cmocka_unit_test(test_free_inside_callback),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
