/* SPDX-License-Identifier: Apache-2.0 */
/* server.c: `gpuslice serve` put together on one event loop: the supervisor,
 * the proxy (HTTP, and gRPC when asked), its admin API and the autoscaler;
 * SIGTERM or SIGINT drains (stop accepting, finish what is under way within a
 * bound, stop the workers); SIGHUP asks the caller for the MIG devices and
 * keeps the workers in step with them (the device diff below). Its life
 * (ready, reloading, stopping, alive) is told to the caller, who may tell a
 * service manager. Options and files are the caller's (src/cli/cmd_serve.c). */
#include "serve/serve.h"
#include "backend/backend.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <unistd.h>

struct server {
  const struct gs_serve_config *cfg;
  struct gs_net_loop *loop;
  struct gs_proxy *proxy;
  struct gs_super *super;
  struct gs_proxy_admin_server *admin;
  struct gs_proxy_grpc *grpc;
  struct gs_scale *scale;
  struct gs_serve_pidfile *pidfile;
  bool *retiring;    /* by worker: drained for a reload, retired once idle */
  size_t nretiring;
  uint64_t drain_until, retire_until, retire_timer;
  bool draining;
  bool was_ready;    /* READY was told: a first worker was ready */
};

/* ---- its life, told to the caller (gs_serve_config.on_life) ---- */

static void tell(struct server *sv, enum gs_serve_life what)
{
  struct gs_serve_life_info in = {0, 0};
  if (!sv->cfg->on_life)
    return;
  for (size_t w = 0; sv->super && w < gs_super_count(sv->super); w++) {
    struct gs_super_info info;
    if (gs_super_info(sv->super, w, &info) != 0 || info.retired)
      continue;
    in.workers++;
    in.ready += info.state == GS_SUPER_READY;
  }
  sv->cfg->on_life(sv->cfg->ctx, what, &in);
}

/* Ready once the listeners are up (they are before any worker starts) and
 * a first worker is ready; never after the drain began. */
static void tell_workers(struct server *sv, bool ready)
{
  bool first = ready && !sv->was_ready && !sv->draining;
  sv->was_ready = sv->was_ready || first;
  tell(sv, first ? GS_SERVE_READY : GS_SERVE_WORKERS);
}

/* Runs on the loop: a loop stuck in a callback stops telling. */
static int64_t on_alive(struct gs_net_loop *loop, uint64_t id, void *data)
{
  struct server *sv = data;
  (void)loop;
  (void)id;
  tell(sv, GS_SERVE_ALIVE);
  return (int64_t)sv->cfg->alive_every_us;
}

static void on_ready(void *ctx, struct gs_super *s, size_t w, bool ready)
{
  struct server *sv = ctx;
  struct gs_super_info info;
  if (gs_super_info(s, w, &info) != 0)
    return;
  gs_proxy_worker_set(sv->proxy, w, info.port, ready);
  char ws[24];
  struct gs_log_field f[] = {{"worker", ws}, {"event", ready ? "joined" : "left"},
                             {"slice", info.uuid}, {"profile", info.profile},
                             {"state", gs_super_state_name(info.state)}};
  snprintf(ws, sizeof(ws), "%zu", w);
  gs_log(GS_LOG_INFO, "serve", f, GS_NITEMS(f), "worker %zu (%s %s, port %u) %s the pool (%s)", w,
         info.profile, info.uuid, info.port, ready ? "joined" : "left",
         gs_super_state_name(info.state));
  tell_workers(sv, ready);
}

static void on_eject(void *ctx, size_t w, bool ejected)
{
  char ws[24];
  struct gs_log_field f[] = {{"worker", ws}, {"event", ejected ? "ejected" : "returned"}};
  (void)ctx;
  snprintf(ws, sizeof(ws), "%zu", w);
  gs_log(GS_LOG_INFO, "serve", f, GS_NITEMS(f), "worker %zu %s", w,
         ejected ? "ejected from the pool after consecutive failures"
                 : "back in the pool after its ejection");
}

/* ---- the autoscaler's wiring ---- */

static void scale_metrics(void *ctx, FILE *f)
{
  struct server *sv = ctx;
  if (sv->scale)
    gs_scale_metrics(sv->scale, f);
}

/* The autoscaler on the caller's GPUs, when it gave a latency budget. */
static int start_scale(struct gs_err *err, struct server *sv)
{
  const struct gs_serve_config *cfg = sv->cfg;
  struct gs_scale_target t = cfg->scale_target;
  char *state = NULL;
  int rc;
  if (!cfg->scale.budget_us)
    return 0;
  t.profile = t.profile ? t.profile : "1g.5gb";
  t.super = sv->super;
  t.proxy = sv->proxy;
  if (!t.state_path && (rc = gs_scale_default_state(err, t.backend, &state)) != 0)
    return rc;
  t.state_path = t.state_path ? t.state_path : state;
  rc = gs_scale_new(err, sv->loop, &cfg->scale, &t, &sv->scale);
  if (!rc && sv->admin)
    gs_proxy_admin_set_scale(sv->admin, sv->scale);
  if (!rc)
    gs_log_info("serve", "autoscale: p%g budget %.1fms, %u..%u slices of %s, state in %s",
                cfg->scale.percentile, (double)cfg->scale.budget_us / 1e3, cfg->scale.min_slices,
                cfg->scale.max_slices ? cfg->scale.max_slices : 7, t.profile, t.state_path);
  free(state);
  return rc;
}

/* ---- SIGHUP: the device diff ---- */

/* Workers drained for a reload are retired once idle, or when the drain
 * timeout has passed. */
static int64_t on_retire_tick(struct gs_net_loop *loop, uint64_t id, void *data)
{
  struct server *sv = data;
  bool left = false;
  (void)loop;
  (void)id;
  for (size_t w = 0; w < sv->nretiring; w++) {
    struct gs_proxy_worker_stats st;
    if (!sv->retiring[w] || gs_proxy_worker_stats(sv->proxy, w, &st) != 0)
      continue;
    if (st.inflight && gs_net_loop_now_us() < sv->retire_until) {
      left = true;
      continue;
    }
    sv->retiring[w] = false;
    gs_super_retire(sv->super, w);
    gs_log_info("serve", "worker %zu retired: its device is gone", w);
  }
  if (left)
    return 20000;
  sv->retire_timer = 0;
  return GS_NET_TIMER_DONE;
}

static bool has_device(const struct gs_mig_device *devs, int n, const char *uuid)
{
  for (int i = 0; i < n; i++)
    if (strcmp(devs[i].uuid, uuid) == 0)
      return true;
  return false;
}

/* True when a live (not retired, not retiring) worker runs on uuid. */
static bool has_worker(const struct server *sv, const char *uuid)
{
  for (size_t w = 0; w < gs_super_count(sv->super); w++) {
    struct gs_super_info info;
    if (gs_super_info(sv->super, w, &info) == 0 && !info.retired &&
        !(w < sv->nretiring && sv->retiring[w]) && strcmp(info.uuid, uuid) == 0)
      return true;
  }
  return false;
}

static bool grow_retiring(struct server *sv)
{
  size_t n = gs_super_count(sv->super);
  bool *v;
  if (n <= sv->nretiring)
    return true;
  if (!(v = realloc(sv->retiring, n * sizeof(*v))))
    return false;
  memset(v + sv->nretiring, 0, (n - sv->nretiring) * sizeof(*v));
  sv->retiring = v;
  sv->nretiring = n;
  return true;
}

/* Gone devices: their workers drain (no new request) and are retired once
 * idle. New devices: replicas new workers each. The rest is untouched. */
static void reload_devices(struct server *sv, const struct gs_mig_device *devs, int n)
{
  unsigned added = 0, gone = 0;
  struct gs_err err = {0};
  if (!grow_retiring(sv))
    return;
  for (size_t w = 0; w < gs_super_count(sv->super); w++) {
    struct gs_super_info info;
    if (gs_super_info(sv->super, w, &info) != 0 || info.retired || sv->retiring[w] ||
        has_device(devs, n, info.uuid))
      continue;
    gs_proxy_worker_admin(sv->proxy, w, GS_PROXY_DRAINING);
    sv->retiring[w] = true;
    gone++;
  }
  for (int k = 0; k < n; k++) {
    if (has_worker(sv, devs[k].uuid))
      continue;
    for (unsigned r = 0; r < sv->cfg->replicas; r++) {
      struct gs_super_slot slot = {devs[k].uuid, devs[k].name,
                                   (unsigned)gs_super_count(sv->super), devs[k].gpu};
      size_t w, pw;
      if (gs_proxy_add_worker(sv->proxy, &pw) != 0 ||
          gs_super_add(&err, sv->super, &slot, &w) != 0 || w != pw) {
        gs_log_warn("serve", "reload: cannot add a worker for %s: %s", devs[k].uuid,
                    err.msg[0] ? err.msg : "out of memory");
        break;
      }
      added++;
    }
  }
  grow_retiring(sv);
  gs_log_info("serve", "reload: %d MIG devices, %u workers added, %u devices gone", n, added,
              gone);
  sv->retire_until = gs_net_loop_now_us() + (uint64_t)sv->cfg->drain_ms * 1000;
  if (gone && !sv->retire_timer)
    sv->retire_timer = gs_net_loop_timer_add(sv->loop, 0, on_retire_tick, sv);
}

static void reload(struct server *sv)
{
  struct gs_mig_device *devs =
      calloc((size_t)GS_BACKEND_MAX_GPUS * GS_BACKEND_MAX_MIG_DEVICES, sizeof(*devs));
  int n = devs ? sv->cfg->on_reload(sv->cfg->ctx, sv->proxy, devs) : -1;
  if (n < 0)
    gs_log_warn("serve", "reload: cannot list the MIG devices; they stay as they were");
  else
    reload_devices(sv, devs, n);
  free(devs);
}

/* ---- signals and the drain ---- */

/* Drain: once nothing is under way (or the bound passed), stop the workers,
 * then the loop once they are reaped. */
static int64_t on_drain_tick(struct gs_net_loop *loop, uint64_t id, void *data)
{
  struct server *sv = data;
  (void)id;
  if ((gs_proxy_inflight(sv->proxy) || gs_proxy_grpc_inflight(sv->grpc)) &&
      gs_net_loop_now_us() < sv->drain_until)
    return 20000;
  gs_super_stop(sv->super);
  if (!gs_super_stopped(sv->super))
    return 20000;
  gs_net_loop_stop(loop);
  return GS_NET_TIMER_DONE;
}

static void on_signal(struct gs_net_loop *loop, int fd, void *data, unsigned mask)
{
  struct server *sv = data;
  struct signalfd_siginfo si;
  (void)mask;
  if (read(fd, &si, sizeof(si)) != (ssize_t)sizeof(si) || sv->draining)
    return;
  if (si.ssi_signo == SIGHUP) {
    tell(sv, GS_SERVE_RELOADING);
    reload(sv);
    if (sv->was_ready) /* else READY comes with the first ready worker */
      tell(sv, GS_SERVE_READY);
    return;
  }
  sv->draining = true;
  tell(sv, GS_SERVE_STOPPING);
  sv->drain_until = gs_net_loop_now_us() + (uint64_t)sv->cfg->drain_ms * 1000;
  gs_log_notice("serve", "%s: draining (%zu requests under way)", strsignal((int)si.ssi_signo),
                gs_proxy_inflight(sv->proxy));
  gs_proxy_drain(sv->proxy);
  gs_proxy_grpc_drain(sv->grpc);
  gs_net_loop_timer_add(loop, 0, on_drain_tick, sv);
}

/* Client connections, upstream ones and workers' pipes need fds: the soft
 * limit (often 1024) goes up to the hard one, as far as the loop can use. */
static void raise_nofile(void)
{
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= GS_SERVE_LOOP_FDS)
    return;
  rl.rlim_cur = rl.rlim_max < GS_SERVE_LOOP_FDS ? rl.rlim_max : GS_SERVE_LOOP_FDS;
  setrlimit(RLIMIT_NOFILE, &rl);
}

/* ---- putting it together ---- */

/* "what HOST:PORT" with the bound port. */
static void say_listen(const char *what, const char *hostport, unsigned port, const char *more)
{
  gs_log_info("serve", "%s %.*s:%u%s", what, (int)(strrchr(hostport, ':') - hostport), hostport,
              port, more);
}

/* The listeners: the proxy's, gRPC's and the admin API's; 0 or an error. */
static int listen_all(struct gs_err *err, struct server *sv, unsigned ports[3])
{
  const struct gs_serve_config *cfg = sv->cfg;
  int lfd = -1, rc;
  if ((rc = gs_net_listen(err, cfg->listen, 4096, &lfd, &ports[0])) != 0 ||
      (rc = gs_proxy_listen_fd(err, sv->proxy, lfd)) != 0)
    goto out;
  lfd = -1; /* the proxy's now */
  if (cfg->grpc_listen &&
      ((rc = gs_net_listen(err, cfg->grpc_listen, 4096, &lfd, &ports[1])) != 0 ||
       (rc = gs_proxy_grpc_new(err, sv->loop, sv->proxy, sv->super, lfd, &sv->grpc)) != 0))
    goto out;
  lfd = -1;
  if (cfg->admin_listen &&
      ((rc = gs_net_listen(err, cfg->admin_listen, 64, &lfd, &ports[2])) != 0 ||
       (rc = gs_proxy_admin_new(err, sv->loop, sv->proxy, sv->super, cfg->admin_token, lfd,
                                &sv->admin)) != 0))
    goto out;
  lfd = -1;
out:
  if (lfd >= 0)
    close(lfd);
  return rc;
}

static void say_banner(const struct server *sv, const unsigned ports[3])
{
  char workers[48];
  snprintf(workers, sizeof(workers), ", %zu workers starting", sv->cfg->super.nslots);
  say_listen("listening on", sv->cfg->listen, ports[0], workers);
  if (sv->grpc)
    say_listen("grpc on", sv->cfg->grpc_listen, ports[1], "");
  if (sv->admin)
    say_listen("admin on", sv->cfg->admin_listen, ports[2], "");
}

/* The pid file, first: a live serve of the same state is refused before
 * anything is bound, and the workers a dead one left give back their ports
 * and GPUs before ours start. */
static int take_pidfile(struct gs_err *err, struct server *sv)
{
  struct gs_super_config d = sv->cfg->super;
  size_t ended = 0;
  int rc;
  if (!sv->cfg->state_dir)
    return 0;
  gs_super_config_defaults(&d);
  if ((rc = gs_serve_pidfile_open(err, sv->cfg->state_dir, d.grace_ms, &sv->pidfile, &ended)) != 0)
    return rc;
  if (ended)
    gs_log_notice("serve", "ended %zu workers an earlier serve left running (%s/serve.pid)",
                  ended, sv->cfg->state_dir);
  return 0;
}

/* Everything on the loop, then its turns; the caller frees what was made. */
static int start_and_run(struct gs_err *err, struct server *sv, const sigset_t *sigs, int *sfd)
{
  struct gs_super_config scfg = sv->cfg->super;
  struct gs_proxy_config pc = sv->cfg->proxy;
  unsigned ports[3] = {0};
  int rc;
  if ((rc = take_pidfile(err, sv)) != 0)
    return rc;
  scfg.pidfile = sv->pidfile;
  scfg.on_ready = on_ready;
  scfg.ctx = sv;
  pc.nworkers = scfg.nslots;
  pc.on_eject = on_eject;
  pc.metrics_more = scale_metrics;
  pc.ctx = sv;
  if ((rc = gs_net_loop_new(err, GS_SERVE_LOOP_FDS, &sv->loop)) != 0 ||
      (rc = gs_super_new(err, sv->loop, &scfg, &sv->super)) != 0)
    return rc;
  pc.super = sv->super;
  if ((rc = gs_proxy_new(err, sv->loop, &pc, &sv->proxy)) != 0 ||
      (rc = listen_all(err, sv, ports)) != 0)
    return rc;
  if ((*sfd = signalfd(-1, sigs, SFD_NONBLOCK | SFD_CLOEXEC)) < 0)
    return gs_err_set(err, GS_E_IO, "signalfd: cannot watch SIGTERM, SIGINT and SIGHUP");
  if ((rc = gs_net_loop_add(err, sv->loop, *sfd, GS_NET_READABLE, on_signal, sv)) != 0 ||
      (rc = gs_super_start(err, sv->super)) != 0 || (rc = start_scale(err, sv)) != 0)
    return rc;
  if (sv->cfg->alive_every_us && sv->cfg->on_life &&
      !gs_net_loop_timer_add(sv->loop, sv->cfg->alive_every_us, on_alive, sv))
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory for the watchdog's timer");
  say_banner(sv, ports);
  rc = gs_net_loop_run(sv->loop);
  if (rc == 0)
    gs_log_notice("serve", "stopped");
  return rc;
}

int gs_serve_run(struct gs_err *err, const struct gs_serve_config *cfg)
{
  struct server sv = {.cfg = cfg};
  sigset_t sigs, old;
  int sfd = -1, rc;
  raise_nofile();
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGHUP);
  sigprocmask(SIG_BLOCK, &sigs, &old);
  rc = start_and_run(err, &sv, &sigs, &sfd);
  /* The supervisor first: freeing it may still report workers leaving. */
  gs_super_free(sv.super);
  gs_proxy_admin_free(sv.admin);
  gs_proxy_grpc_free(sv.grpc);
  gs_proxy_free(sv.proxy); /* no thread reads the autoscaler's metrics any more */
  gs_scale_free(sv.scale); /* its workers are reaped: its instances go */
  gs_serve_pidfile_close(sv.pidfile); /* no worker left to record */
  if (sfd >= 0)
    gs_net_loop_close_fd(sv.loop, sfd);
  gs_net_loop_free(sv.loop);
  sigprocmask(SIG_SETMASK, &old, NULL);
  free(sv.retiring);
  return rc;
}
