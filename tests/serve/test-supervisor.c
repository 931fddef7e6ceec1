/* SPDX-License-Identifier: Apache-2.0 */
/* test-supervisor.c: the worker supervisor with real processes on loopback:
 * gpuslice workers become READY; placeholders and CUDA_VISIBLE_DEVICES reach
 * the child; kill -9 restarts one worker only; a crashing command backs off
 * with growing delays; a hung worker leaves READY and comes back; a
 * never-ready worker is never reported; stop SIGKILLs
 * a worker that ignores SIGTERM and leaves no child behind. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "serve/serve.h"

/* Generous: ASan builds on two cores start gpuslice workers slowly. */
#define WAIT_MS 15000

struct events {
  int ready[4], unready[4];
  bool stop_on_unready; /* the callback stops the supervisor (re-entry) */
};

static void on_ready(void *ctx, struct gs_super *s, size_t w, bool ready)
{
  struct events *e = ctx;
  if (ready)
    e->ready[w]++;
  else
    e->unready[w]++;
  if (!ready && e->stop_on_unready)
    gs_super_stop(s);
}

static const char *bin(void)
{
  const char *b = getenv("GS_BIN");
  return b ? b : "build/gpuslice";
}

/* A fresh directory under GS_TEST_TMP for one test's files. */
static void tmpdir(char *out, size_t size, const char *name)
{
  const char *base = getenv("GS_TEST_TMP");
  char cmd[4200];
  snprintf(out, size, "%s/supervisor-%ld-%s", base ? base : "/tmp", (long)getpid(), name);
  snprintf(cmd, sizeof(cmd), "rm -rf '%s' && mkdir -p '%s'", out, out);
  assert_int_equal(system(cmd), 0);
}

static const struct gs_super_slot slots[] = {
    {"MIG-11111111-2222-3333-4444-555555555555", "1g.5gb", 0, 0},
    {"MIG-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee", "2g.10gb", 1, 0},
    {"cafe0000-0000-0000-0000-000000000000", "3g.20gb", 7, 1},
};

struct fixture {
  struct gs_net_loop *loop;
  struct gs_super *s;
  struct events ev;
};

static void start(struct fixture *f, struct gs_super_config *c)
{
  struct gs_err err = {0};
  memset(f, 0, sizeof(*f));
  assert_int_equal(gs_net_loop_new(&err, 256, &f->loop), 0);
  c->on_ready = on_ready;
  c->ctx = &f->ev;
  assert_int_equal(gs_super_new(&err, f->loop, c, &f->s), 0);
  assert_int_equal(gs_super_start(&err, f->s), 0);
}

static enum gs_super_state state(struct fixture *f, size_t w)
{
  struct gs_super_info i;
  assert_int_equal(gs_super_info(f->s, w, &i), 0);
  return i.state;
}

static bool all_in(struct fixture *f, enum gs_super_state st)
{
  for (size_t i = 0; i < gs_super_count(f->s); i++)
    if (state(f, i) != st)
      return false;
  return true;
}

/* Turns the loop until pred holds or ms pass; returns pred's last value. */
static bool run_until(struct fixture *f, bool (*pred)(struct fixture *, void *), void *arg,
                      unsigned ms)
{
  uint64_t end = gs_net_loop_now_us() + ms * 1000ull;
  while (!pred(f, arg) && gs_net_loop_now_us() < end)
    assert_true(gs_net_loop_run_once(f->loop, 50) >= 0);
  return pred(f, arg);
}

static bool p_all_ready(struct fixture *f, void *arg)
{
  (void)arg;
  return all_in(f, GS_SUPER_READY);
}

static bool p_stopped(struct fixture *f, void *arg)
{
  (void)arg;
  return gs_super_stopped(f->s);
}

static bool p_never(struct fixture *f, void *arg)
{
  (void)f;
  (void)arg;
  return false;
}

/* Stops, waits for every worker to be reaped, and checks no child is left. */
static void stop_and_free(struct fixture *f)
{
  gs_super_stop(f->s);
  assert_true(run_until(f, p_stopped, NULL, WAIT_MS));
  assert_true(all_in(f, GS_SUPER_STOPPED));
  gs_super_free(f->s);
  gs_net_loop_free(f->loop);
  errno = 0;
  assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
  assert_int_equal(errno, ECHILD);
}

static void worker_config(struct gs_super_config *c, const char *const *argv, const char *logs)
{
  memset(c, 0, sizeof(*c));
  c->slots = slots;
  c->nslots = 3;
  c->argv = argv;
  c->log_dir = logs;
  c->ephemeral_ports = true; /* tests run in parallel: fixed ports could clash */
  c->probe_interval_ms = 100;
  c->backoff_min_ms = 200;
}

static bool file_has(const char *path, const char *needle)
{
  char buf[4096] = {0};
  FILE *fp = fopen(path, "r");
  size_t n;
  if (!fp)
    return false;
  n = fread(buf, 1, sizeof(buf) - 1, fp);
  fclose(fp);
  buf[n] = 0;
  return strstr(buf, needle) != NULL;
}

static void test_workers_become_ready(void **state_)
{
  const char *argv[] = {bin(), "worker", "--listen", "127.0.0.1:{port}", "--profile", "{profile}",
                        NULL};
  struct gs_super_config c;
  struct fixture f;
  struct gs_super_info i;
  char dir[4096], log[4200];
  (void)state_;
  tmpdir(dir, sizeof(dir), "ready");
  worker_config(&c, argv, dir);
  start(&f, &c);
  assert_true(run_until(&f, p_all_ready, NULL, WAIT_MS));
  for (size_t w = 0; w < 3; w++) {
    assert_int_equal(f.ev.ready[w], 1);
    assert_int_equal(f.ev.unready[w], 0);
    assert_int_equal(gs_super_info(f.s, w, &i), 0);
    assert_true(i.pid > 0 && i.port > 0 && i.restarts == 0);
    snprintf(log, sizeof(log), "%s/worker-%zu.log", dir, w);
    assert_true(file_has(log, "==== gpuslice supervisor"));
    assert_true(file_has(log, slots[w].profile));
  }
  assert_int_equal(gs_super_info(f.s, 3, &i), GS_E_NOT_FOUND);
  gs_super_stop(f.s);
  for (size_t w = 0; w < 3; w++)
    assert_int_equal(f.ev.unready[w], 1); /* left the pool at once */
  stop_and_free(&f);
}

static bool p_files(struct fixture *f, void *arg)
{
  const char *dir = arg;
  char path[4200];
  (void)f;
  for (size_t w = 0; w < 3; w++) {
    snprintf(path, sizeof(path), "%s/out-%u", dir, slots[w].index);
    if (!file_has(path, "\n"))
      return false;
  }
  return true;
}

static void test_placeholders_and_env(void **state_)
{
  char dir[4096], script[8400], path[4200], want[256];
  const char *argv[] = {"/bin/sh", "-c", script, NULL};
  struct gs_super_config c;
  struct fixture f;
  (void)state_;
  tmpdir(dir, sizeof(dir), "env");
  snprintf(script, sizeof(script),
           "echo {uuid} {profile} {index} {port} {grpc_port} {metrics_port} {other} "
           "$CUDA_VISIBLE_DEVICES $GS_TEST_MARK > %s/out-{index}; exec sleep 30", dir);
  setenv("CUDA_VISIBLE_DEVICES", "GPU-parent", 1);
  setenv("GS_TEST_MARK", "inherited", 1);
  worker_config(&c, argv, dir);
  c.ephemeral_ports = false;
  c.port_base = 41000;
  start(&f, &c);
  unsetenv("CUDA_VISIBLE_DEVICES");
  unsetenv("GS_TEST_MARK");
  assert_true(run_until(&f, p_files, dir, WAIT_MS));
  for (size_t w = 0; w < 3; w++) {
    unsigned p = 41000 + 3 * (unsigned)w;
    const char *u = slots[w].uuid;
    snprintf(path, sizeof(path), "%s/out-%u", dir, slots[w].index);
    snprintf(want, sizeof(want), "%s %s %u %u %u %u {other} %s%s inherited\n", u, slots[w].profile,
             slots[w].index, p, p + 1, p + 2, strncmp(u, "MIG-", 4) ? "MIG-" : "", u);
    assert_true(file_has(path, want));
  }
  stop_and_free(&f);
}

static bool p_back(struct fixture *f, void *arg)
{
  struct gs_super_info i;
  (void)arg;
  assert_int_equal(gs_super_info(f->s, 1, &i), 0);
  return i.restarts == 1 && i.state == GS_SUPER_READY;
}

static bool p_backoff1(struct fixture *f, void *arg)
{
  (void)arg;
  return state(f, 1) == GS_SUPER_BACKOFF;
}

static void test_kill9_restarts_one(void **state_)
{
  const char *argv[] = {bin(), "worker", "--listen", "127.0.0.1:{port}", "--profile", "1g.5gb",
                        NULL};
  struct gs_super_config c;
  struct fixture f;
  struct gs_super_info i;
  char dir[4096];
  int pids[3];
  (void)state_;
  tmpdir(dir, sizeof(dir), "kill9");
  worker_config(&c, argv, dir);
  c.backoff_reset_ms = 1;
  start(&f, &c);
  assert_true(run_until(&f, p_all_ready, NULL, WAIT_MS));
  for (size_t w = 0; w < 3; w++) {
    assert_int_equal(gs_super_info(f.s, w, &i), 0);
    pids[w] = i.pid;
  }
  assert_int_equal(kill(pids[1], SIGKILL), 0);
  assert_true(run_until(&f, p_backoff1, NULL, WAIT_MS));
  assert_int_equal(gs_super_info(f.s, 1, &i), 0);
  assert_int_equal(i.backoff_ms, 200);
  assert_true(i.next_start_us > gs_net_loop_now_us() - 200000);
  assert_true(run_until(&f, p_back, NULL, WAIT_MS));
  assert_int_equal(gs_super_info(f.s, 1, &i), 0);
  assert_true(WIFSIGNALED(i.last_status) && WTERMSIG(i.last_status) == SIGKILL);
  assert_int_not_equal(i.pid, pids[1]);
  assert_int_equal(f.ev.ready[1], 2);
  assert_int_equal(f.ev.unready[1], 1);
  /* Ready longer than backoff_reset_ms (1 ms): the next delay starts over. */
  run_until(&f, p_never, NULL, 100);
  assert_int_equal(kill(i.pid, SIGKILL), 0);
  assert_true(run_until(&f, p_backoff1, NULL, WAIT_MS));
  assert_int_equal(gs_super_info(f.s, 1, &i), 0);
  assert_int_equal(i.backoff_ms, 200);
  assert_int_equal(f.ev.unready[1], 2);
  for (size_t w = 0; w < 3; w += 2) {
    assert_int_equal(f.ev.ready[w], 1);
    assert_int_equal(f.ev.unready[w], 0);
    assert_int_equal(gs_super_info(f.s, w, &i), 0);
    assert_int_equal(i.pid, pids[w]);
    assert_int_equal(i.restarts, 0);
  }
  stop_and_free(&f);
}

static bool p_unready1(struct fixture *f, void *arg)
{
  (void)arg;
  return state(f, 1) == GS_SUPER_UNREADY;
}

static bool p_ready1(struct fixture *f, void *arg)
{
  (void)arg;
  return state(f, 1) == GS_SUPER_READY;
}

/* A stopped (SIGSTOP) worker accepts connections but never answers: its
 * probes time out, it leaves READY, and returns when it answers again. */
static void test_hung_worker_unready(void **state_)
{
  const char *argv[] = {bin(), "worker", "--listen", "127.0.0.1:{port}", NULL};
  struct gs_super_config c;
  struct fixture f;
  struct gs_super_info i;
  char dir[4096];
  (void)state_;
  tmpdir(dir, sizeof(dir), "hang");
  worker_config(&c, argv, dir);
  c.nslots = 2;
  c.probe_timeout_ms = 300;
  c.unready_after = 2;
  start(&f, &c);
  assert_true(run_until(&f, p_all_ready, NULL, WAIT_MS));
  assert_int_equal(gs_super_info(f.s, 1, &i), 0);
  assert_int_equal(kill(i.pid, SIGSTOP), 0);
  assert_true(run_until(&f, p_unready1, NULL, WAIT_MS));
  assert_int_equal(f.ev.unready[1], 1);
  assert_int_equal(kill(i.pid, SIGCONT), 0);
  assert_true(run_until(&f, p_ready1, NULL, WAIT_MS));
  assert_int_equal(f.ev.ready[1], 2);
  assert_int_equal(gs_super_info(f.s, 1, &i), 0);
  assert_int_equal(i.restarts, 0);
  assert_int_equal(f.ev.ready[0], 1);
  assert_int_equal(f.ev.unready[0], 0);
  stop_and_free(&f);
}

/* The load balancer may stop everything from its callback: the restart the
 * supervisor was scheduling must not happen. */
static void test_stop_from_callback(void **state_)
{
  const char *argv[] = {bin(), "worker", "--listen", "127.0.0.1:{port}", NULL};
  struct gs_super_config c;
  struct fixture f;
  struct gs_super_info i;
  char dir[4096];
  (void)state_;
  tmpdir(dir, sizeof(dir), "reenter");
  worker_config(&c, argv, dir);
  c.nslots = 1;
  start(&f, &c);
  assert_true(run_until(&f, p_all_ready, NULL, WAIT_MS));
  f.ev.stop_on_unready = true;
  assert_int_equal(gs_super_info(f.s, 0, &i), 0);
  assert_int_equal(kill(i.pid, SIGKILL), 0);
  assert_true(run_until(&f, p_stopped, NULL, WAIT_MS));
  run_until(&f, p_never, NULL, 600); /* past the 200 ms backoff */
  assert_int_equal(gs_super_info(f.s, 0, &i), 0);
  assert_int_equal(i.state, GS_SUPER_STOPPED);
  assert_int_equal(i.restarts, 0);
  assert_int_equal(i.pid, 0);
  assert_int_equal(gs_net_loop_timer_count(f.loop), 0);
  stop_and_free(&f);
}

struct delays {
  uint64_t ms[8];
  uint64_t at[8];
};

/* Records each restart's delay, seen while waiting in BACKOFF. */
static bool p_five_backoffs(struct fixture *f, void *arg)
{
  struct delays *d = arg;
  struct gs_super_info i;
  assert_int_equal(gs_super_info(f->s, 0, &i), 0);
  if (i.state == GS_SUPER_BACKOFF && i.restarts < 8) {
    d->ms[i.restarts] = i.backoff_ms;
    d->at[i.restarts] = i.next_start_us;
  }
  return i.restarts >= 5 && i.state == GS_SUPER_BACKOFF;
}

static void test_crash_backoff_grows(void **state_)
{
  const char *argv[] = {"/bin/sh", "-c", "exit 3", NULL};
  struct gs_super_config c;
  struct fixture f;
  struct gs_super_info i;
  struct delays d = {{0}, {0}};
  const uint64_t want[] = {20, 40, 80, 160, 160};
  char dir[4096];
  (void)state_;
  tmpdir(dir, sizeof(dir), "backoff");
  worker_config(&c, argv, dir);
  c.nslots = 1;
  c.backoff_min_ms = 20;
  c.backoff_max_ms = 160;
  start(&f, &c);
  assert_true(run_until(&f, p_five_backoffs, &d, WAIT_MS));
  for (size_t k = 0; k < GS_NITEMS(want); k++) {
    assert_int_equal(d.ms[k], want[k]);
    if (k)
      assert_true(d.at[k] > d.at[k - 1]);
  }
  assert_int_equal(gs_super_info(f.s, 0, &i), 0);
  assert_true(WIFEXITED(i.last_status) && WEXITSTATUS(i.last_status) == 3);
  assert_int_equal(f.ev.ready[0], 0);
  stop_and_free(&f);
}

static void test_missing_program_backs_off(void **state_)
{
  const char *argv[] = {"/nonexistent/gpuslice-worker", NULL};
  struct gs_super_config c;
  struct fixture f;
  struct gs_super_info i;
  (void)state_;
  worker_config(&c, argv, NULL);
  c.nslots = 1;
  start(&f, &c);
  assert_int_equal(gs_super_info(f.s, 0, &i), 0);
  assert_int_equal(i.state, GS_SUPER_BACKOFF);
  assert_int_equal(i.spawn_errno, ENOENT);
  assert_int_equal(i.pid, 0);
  stop_and_free(&f);
}

static void test_never_ready_stays_starting(void **state_)
{
  const char *argv[] = {"sleep", "30", NULL};
  struct gs_super_config c;
  struct fixture f;
  (void)state_;
  worker_config(&c, argv, NULL);
  c.probe_interval_ms = 50;
  c.probe_timeout_ms = 200;
  start(&f, &c);
  run_until(&f, p_never, NULL, 1500); /* some thirty probes */
  assert_true(all_in(&f, GS_SUPER_STARTING));
  for (size_t w = 0; w < 3; w++)
    assert_int_equal(f.ev.ready[w], 0);
  stop_and_free(&f);
}

static bool p_trapped(struct fixture *f, void *arg)
{
  char path[4200];
  (void)f;
  for (unsigned w = 0; w < 2; w++) {
    snprintf(path, sizeof(path), "%s/trapped-%u", (const char *)arg, slots[w].index);
    if (access(path, F_OK) != 0)
      return false;
  }
  return true;
}

static void test_stop_kills_term_ignorers(void **state_)
{
  char dir[4096], script[8400];
  const char *argv[] = {"/bin/sh", "-c", script, NULL};
  struct gs_super_config c;
  struct fixture f;
  struct gs_super_info i;
  uint64_t t0;
  int pids[2];
  (void)state_;
  tmpdir(dir, sizeof(dir), "stop");
  snprintf(script, sizeof(script), "trap '' TERM; : > %s/trapped-{index}; exec sleep 60", dir);
  worker_config(&c, argv, dir);
  c.nslots = 2;
  c.grace_ms = 500;
  start(&f, &c);
  assert_true(run_until(&f, p_trapped, dir, WAIT_MS));
  for (size_t w = 0; w < 2; w++) {
    assert_int_equal(gs_super_info(f.s, w, &i), 0);
    pids[w] = i.pid;
  }
  t0 = gs_net_loop_now_us();
  gs_super_stop(f.s);
  assert_true(run_until(&f, p_stopped, NULL, WAIT_MS));
  assert_true(gs_net_loop_now_us() - t0 >= 400000); /* SIGTERM alone did not do it */
  for (size_t w = 0; w < 2; w++) {
    char proc[64];
    assert_int_equal(gs_super_info(f.s, w, &i), 0);
    assert_true(WIFSIGNALED(i.last_status) && WTERMSIG(i.last_status) == SIGKILL);
    assert_int_equal(i.pid, 0);
    snprintf(proc, sizeof(proc), "/proc/%d", pids[w]);
    assert_int_not_equal(access(proc, F_OK), 0);
  }
  stop_and_free(&f);
}

static void test_bad_config(void **state_)
{
  const char *argv[] = {"true", NULL};
  struct gs_super_config c;
  struct gs_net_loop *l = NULL;
  struct gs_super *s = NULL;
  struct gs_err err = {0};
  (void)state_;
  assert_int_equal(gs_net_loop_new(&err, 64, &l), 0);
  worker_config(&c, argv, NULL);
  c.ready_path = "health";
  assert_int_equal(gs_super_new(&err, l, &c, &s), GS_E_INVALID_ARGUMENT);
  assert_non_null(strstr(err.msg, "ready path 'health'"));
  assert_null(s);
  c.ready_path = NULL;
  c.argv = NULL;
  assert_int_equal(gs_super_new(&err, l, &c, &s), GS_E_INVALID_ARGUMENT);
  assert_string_equal(gs_super_state_name(GS_SUPER_BACKOFF), "backoff");
  gs_super_free(NULL);
  gs_net_loop_free(l);
}

static bool p_w3_ready(struct fixture *f, void *arg)
{
  (void)arg;
  return state(f, 3) == GS_SUPER_READY;
}

static bool p_w0_reaped(struct fixture *f, void *arg)
{
  struct gs_super_info i;
  (void)arg;
  return gs_super_info(f->s, 0, &i) == 0 && i.state == GS_SUPER_STOPPED && i.pid == 0;
}

/* A worker added while running starts and joins; a retired one stops for
 * good; the others keep their processes throughout. */
static void test_add_and_retire(void **state_)
{
  const char *argv[] = {bin(), "worker", "--listen", "127.0.0.1:{port}", "--profile", "{profile}",
                        NULL};
  const struct gs_super_slot extra = {"MIG-99999999-8888-7777-6666-555555555555", "1g.5gb", 3, 0};
  struct gs_super_config c;
  struct gs_super_info i;
  struct gs_err err = {0};
  struct fixture f;
  int pids[3];
  size_t w = 0;
  char dir[4096];
  (void)state_;
  tmpdir(dir, sizeof(dir), "add");
  worker_config(&c, argv, dir);
  start(&f, &c);
  assert_true(run_until(&f, p_all_ready, NULL, WAIT_MS));
  for (size_t k = 0; k < 3; k++) {
    assert_int_equal(gs_super_info(f.s, k, &i), 0);
    pids[k] = i.pid;
  }
  assert_int_equal(gs_super_add(&err, f.s, &extra, &w), 0);
  assert_int_equal(w, 3);
  assert_int_equal(gs_super_count(f.s), 4);
  assert_true(run_until(&f, p_w3_ready, NULL, WAIT_MS));
  assert_int_equal(f.ev.ready[3], 1);
  assert_int_equal(gs_super_info(f.s, 3, &i), 0);
  assert_string_equal(i.uuid, extra.uuid);

  gs_super_retire(f.s, 0);
  assert_int_equal(f.ev.unready[0], 1); /* out of the pool at once */
  gs_super_retire(f.s, 0);              /* again: nothing */
  assert_true(run_until(&f, p_w0_reaped, NULL, WAIT_MS));
  /* Past several backoff delays: it is not restarted. */
  assert_false(run_until(&f, p_never, NULL, 1000));
  assert_int_equal(gs_super_info(f.s, 0, &i), 0);
  assert_true(i.retired && i.state == GS_SUPER_STOPPED && i.pid == 0 && i.restarts == 0);
  for (size_t k = 1; k < 3; k++) {
    assert_int_equal(gs_super_info(f.s, k, &i), 0);
    assert_int_equal(i.pid, pids[k]);
    assert_int_equal(i.state, GS_SUPER_READY);
  }
  stop_and_free(&f);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_workers_become_ready),
      cmocka_unit_test(test_placeholders_and_env),
      cmocka_unit_test(test_kill9_restarts_one),
      cmocka_unit_test(test_hung_worker_unready),
      cmocka_unit_test(test_stop_from_callback),
      cmocka_unit_test(test_crash_backoff_grows),
      cmocka_unit_test(test_missing_program_backs_off),
      cmocka_unit_test(test_never_ready_stays_starting),
      cmocka_unit_test(test_stop_kills_term_ignorers),
      cmocka_unit_test(test_bad_config),
      cmocka_unit_test(test_add_and_retire),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
