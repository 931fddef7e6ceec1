/* SPDX-License-Identifier: Apache-2.0 */
/* test-net-loop.c: net's event loop: timers fire in due order (ties in
 * insertion order), re-arm and cancel; fd events reach their callback with
 * the right mask; interest dropped mid-turn is re-checked; deferred closes;
 * work deferred to the end of a turn (once, in order, cancellable, and one
 * deferred while they run waits a turn without the loop sleeping); stop;
 * the listen helper's ephemeral port. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/net.h"

static struct gs_net_loop *new_loop(void)
{
  struct gs_net_loop *l = NULL;
  struct gs_err err = {0};
  assert_int_equal(gs_net_loop_new(&err, 64, &l), 0);
  assert_non_null(l);
  return l;
}

/* ---- timers ---- */

struct order {
  int seen[16];
  int n;
};
struct tag {
  struct order *o;
  int id;
};

static int64_t record(struct gs_net_loop *l, uint64_t id, void *data)
{
  struct tag *t = data;
  (void)l;
  (void)id;
  t->o->seen[t->o->n++] = t->id;
  return GS_NET_TIMER_DONE;
}

static void run_until_no_timers(struct gs_net_loop *l)
{
  for (int turns = 0; gs_net_loop_timer_count(l) && turns < 1000; turns++)
    assert_true(gs_net_loop_run_once(l, 100) >= 0);
  assert_int_equal(gs_net_loop_timer_count(l), 0);
}

static void test_timers_fire_in_order(void **state)
{
  struct gs_net_loop *l = new_loop();
  struct order o = {0};
  struct tag t[5] = {{&o, 0}, {&o, 1}, {&o, 2}, {&o, 3}, {&o, 4}};
  (void)state;
  assert_true(gs_net_loop_timer_add(l, 30000, record, &t[3]) > 0);
  assert_true(gs_net_loop_timer_add(l, 10000, record, &t[1]) > 0);
  assert_true(gs_net_loop_timer_add(l, 0, record, &t[0]) > 0);
  assert_true(gs_net_loop_timer_add(l, 20000, record, &t[2]) > 0);
  assert_true(gs_net_loop_timer_add(l, 40000, record, &t[4]) > 0);
  run_until_no_timers(l);
  assert_int_equal(o.n, 5);
  for (int i = 0; i < 5; i++)
    assert_int_equal(o.seen[i], i);
  gs_net_loop_free(l);
}

static void test_timers_same_time_fifo(void **state)
{
  struct gs_net_loop *l = new_loop();
  struct order o = {0};
  struct tag t[8];
  (void)state;
  for (int i = 0; i < 8; i++) {
    t[i] = (struct tag){&o, i};
    assert_true(gs_net_loop_timer_add(l, 0, record, &t[i]) > 0);
  }
  run_until_no_timers(l);
  assert_int_equal(o.n, 8);
  for (int i = 0; i < 8; i++)
    assert_int_equal(o.seen[i], i);
  gs_net_loop_free(l);
}

static void test_timer_cancel(void **state)
{
  struct gs_net_loop *l = new_loop();
  struct order o = {0};
  struct tag a = {&o, 1}, b = {&o, 2};
  uint64_t ia, ib;
  (void)state;
  ia = gs_net_loop_timer_add(l, 1000, record, &a);
  ib = gs_net_loop_timer_add(l, 2000, record, &b);
  assert_int_equal(gs_net_loop_timer_del(l, ia), 0);
  assert_int_equal(gs_net_loop_timer_del(l, ia), GS_E_NOT_FOUND);
  run_until_no_timers(l);
  assert_int_equal(o.n, 1);
  assert_int_equal(o.seen[0], 2);
  assert_int_equal(gs_net_loop_timer_del(l, ib), GS_E_NOT_FOUND);
  gs_net_loop_free(l);
}

static int64_t three_times(struct gs_net_loop *l, uint64_t id, void *data)
{
  int *count = data;
  (void)l;
  (void)id;
  return ++*count < 3 ? 0 : GS_NET_TIMER_DONE; /* 0: again, but next turn */
}

static void test_timer_rearm(void **state)
{
  struct gs_net_loop *l = new_loop();
  int count = 0;
  (void)state;
  assert_true(gs_net_loop_timer_add(l, 0, three_times, &count) > 0);
  assert_true(gs_net_loop_run_once(l, 100) >= 0);
  assert_int_equal(count, 1); /* a 0 re-arm does not starve the turn */
  run_until_no_timers(l);
  assert_int_equal(count, 3);
  gs_net_loop_free(l);
}

/* ---- fd events ---- */

struct io {
  int calls;
  unsigned mask;
  char got[16];
};

static void on_read(struct gs_net_loop *l, int fd, void *data, unsigned mask)
{
  struct io *io = data;
  (void)l;
  io->calls++;
  io->mask = mask;
  assert_true(read(fd, io->got, sizeof(io->got)) > 0);
}

static void test_fd_readable(void **state)
{
  struct gs_net_loop *l = new_loop();
  struct io io = {0};
  int sv[2];
  (void)state;
  assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  assert_int_equal(gs_net_loop_add(NULL, l, sv[0], GS_NET_READABLE, on_read, &io), 0);
  assert_int_equal(gs_net_loop_mask(l, sv[0]), GS_NET_READABLE);
  assert_int_equal(gs_net_loop_run_once(l, 0), 0); /* nothing to read yet */
  assert_int_equal(write(sv[1], "hello", 5), 5);
  assert_int_equal(gs_net_loop_run_once(l, 1000), 1);
  assert_int_equal(io.calls, 1);
  assert_int_equal(io.mask, GS_NET_READABLE);
  assert_memory_equal(io.got, "hello", 5);
  gs_net_loop_del(l, sv[0], GS_NET_READABLE);
  assert_int_equal(gs_net_loop_mask(l, sv[0]), 0);
  assert_int_equal(write(sv[1], "x", 1), 1);
  assert_int_equal(gs_net_loop_run_once(l, 0), 0); /* no interest, no call */
  close(sv[0]);
  close(sv[1]);
  gs_net_loop_free(l);
}

static void on_write(struct gs_net_loop *l, int fd, void *data, unsigned mask)
{
  struct io *io = data;
  io->calls++;
  io->mask = mask;
  gs_net_loop_del(l, fd, GS_NET_WRITABLE);
}

static void test_fd_writable(void **state)
{
  struct gs_net_loop *l = new_loop();
  struct io io = {0};
  int sv[2];
  (void)state;
  assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  assert_int_equal(gs_net_loop_add(NULL, l, sv[0], GS_NET_WRITABLE, on_write, &io), 0);
  assert_int_equal(gs_net_loop_run_once(l, 1000), 1);
  assert_int_equal(io.mask, GS_NET_WRITABLE);
  assert_int_equal(gs_net_loop_run_once(l, 0), 0);
  assert_int_equal(io.calls, 1);
  close(sv[0]);
  close(sv[1]);
  gs_net_loop_free(l);
}

/* Two ready fds; the first callback closes the second: it must not fire. */
struct pair {
  int other, calls;
};

static void close_other(struct gs_net_loop *l, int fd, void *data, unsigned mask)
{
  struct pair *p = data;
  char c;
  (void)mask;
  p->calls++;
  assert_true(read(fd, &c, 1) == 1);
  gs_net_loop_close_fd(l, p->other);
}

static void test_interest_rechecked(void **state)
{
  struct gs_net_loop *l = new_loop();
  int a[2], b[2];
  struct pair pa, pb;
  (void)state;
  assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, a), 0);
  assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, b), 0);
  pa = (struct pair){b[0], 0};
  pb = (struct pair){a[0], 0};
  assert_int_equal(gs_net_loop_add(NULL, l, a[0], GS_NET_READABLE, close_other, &pa), 0);
  assert_int_equal(gs_net_loop_add(NULL, l, b[0], GS_NET_READABLE, close_other, &pb), 0);
  assert_int_equal(write(a[1], "1", 1), 1);
  assert_int_equal(write(b[1], "2", 1), 1);
  assert_int_equal(gs_net_loop_run_once(l, 1000), 1);
  assert_int_equal(pa.calls + pb.calls, 1);
  /* the deferred close happened at the end of the turn */
  assert_int_equal(gs_net_loop_mask(l, a[0]) | gs_net_loop_mask(l, b[0]), GS_NET_READABLE);
  close(pa.calls ? a[0] : b[0]);
  close(a[1]);
  close(b[1]);
  gs_net_loop_free(l);
}

static void test_fd_out_of_range(void **state)
{
  struct gs_net_loop *l = new_loop();
  struct gs_err err = {0};
  (void)state;
  assert_int_equal(gs_net_loop_add(&err, l, 64, GS_NET_READABLE, on_read, NULL),
                   GS_E_INSUFFICIENT_RESOURCES);
  assert_non_null(strstr(err.msg, "fd 64"));
  gs_net_loop_free(l);
}

/* ---- stop ---- */

static int64_t stopper(struct gs_net_loop *l, uint64_t id, void *data)
{
  (void)id;
  ++*(int *)data;
  gs_net_loop_stop(l);
  return GS_NET_TIMER_DONE;
}

static void test_stop(void **state)
{
  struct gs_net_loop *l = new_loop();
  int fired = 0;
  struct order o = {0};
  struct tag t = {&o, 9};
  (void)state;
  assert_true(gs_net_loop_timer_add(l, 1000, stopper, &fired) > 0);
  assert_true(gs_net_loop_timer_add(l, 10000000, record, &t) > 0); /* 10 s: never reached */
  assert_int_equal(gs_net_loop_run(l), 0);
  assert_int_equal(fired, 1);
  assert_int_equal(o.n, 0);
  assert_int_equal(gs_net_loop_timer_count(l), 1);
  gs_net_loop_free(l);
}

/* ---- listen ---- */

static void test_listen_ephemeral(void **state)
{
  struct gs_err err = {0};
  unsigned port = 0;
  int fd = -1;
  (void)state;
  assert_int_equal(gs_net_listen(&err, "127.0.0.1:0", 16, &fd, &port), 0);
  assert_true(fd >= 0);
  assert_true(port > 0 && port < 65536);
  close(fd);
  assert_int_equal(gs_net_listen(&err, "127.0.0.1", 16, &fd, &port), GS_E_USAGE);
  assert_non_null(strstr(err.msg, "HOST:PORT"));
}

/* ---- work deferred to the end of a turn ---- */

struct deferred {
  struct gs_net_defer d;
  struct gs_net_loop *loop;
  int *order, *n, id;
  bool again; /* defers itself once more from its own run */
};

static void run_deferred_work(struct gs_net_defer *d)
{
  struct deferred *w = GS_CONTAINER_OF(d, struct deferred, d);
  w->order[(*w->n)++] = w->id;
  if (w->again) {
    w->again = false;
    gs_net_loop_defer(w->loop, d);
  }
}

static int64_t timer_defers(struct gs_net_loop *l, uint64_t id, void *data)
{
  (void)id;
  gs_net_loop_defer(l, data);
  return GS_NET_TIMER_DONE;
}

static void test_deferred_work(void **state)
{
  struct gs_net_loop *l = new_loop();
  int order[8], n = 0;
  struct deferred w[3];
  uint64_t t0;
  (void)state;
  for (int i = 0; i < 3; i++)
    w[i] = (struct deferred){.d.fn = run_deferred_work, .loop = l, .order = order, .n = &n,
                             .id = i};
  gs_net_loop_defer(l, &w[0].d);
  gs_net_loop_defer(l, &w[1].d);
  gs_net_loop_defer(l, &w[0].d); /* already pending: once */
  gs_net_loop_defer(l, &w[2].d);
  gs_net_loop_undefer(l, &w[1].d); /* cancelled */
  w[2].again = true;
  t0 = gs_net_loop_now_us();
  assert_true(gs_net_loop_run_once(l, 5000) >= 0); /* pending work: the wait is 0 */
  assert_int_equal(n, 2);
  assert_int_equal(order[0], 0);
  assert_int_equal(order[1], 2);
  assert_true(gs_net_loop_run_once(l, 5000) >= 0); /* w[2] deferred itself: next turn */
  assert_true(gs_net_loop_now_us() - t0 < 4000000); /* neither turn slept its 5 s */
  assert_int_equal(n, 3);
  assert_int_equal(order[2], 2);
  /* deferred from a timer: runs in the same turn, after the timers */
  assert_true(gs_net_loop_timer_add(l, 0, timer_defers, &w[1].d) > 0);
  for (int turns = 0; n < 4 && turns < 100; turns++)
    gs_net_loop_run_once(l, 10);
  assert_int_equal(n, 4);
  assert_int_equal(order[3], 1);
  gs_net_loop_free(l);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_deferred_work),
      cmocka_unit_test(test_timers_fire_in_order), cmocka_unit_test(test_timers_same_time_fifo),
      cmocka_unit_test(test_timer_cancel),         cmocka_unit_test(test_timer_rearm),
      cmocka_unit_test(test_fd_readable),          cmocka_unit_test(test_fd_writable),
      cmocka_unit_test(test_interest_rechecked),   cmocka_unit_test(test_fd_out_of_range),
      cmocka_unit_test(test_stop),                 cmocka_unit_test(test_listen_ephemeral),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
