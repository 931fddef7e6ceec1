/* SPDX-License-Identifier: Apache-2.0 */
/* serve.h: the serve layer's whole interface: the worker supervisor
 * (gs_super_) runs one process per slice on a net event loop; the load
 * balancer (gs_proxy_) sits on net's HTTP server and feeds requests to the
 * workers the supervisor reports ready; its admin API (gs_proxy_admin_) has
 * a listener of its own. gs_serve_file_ reads the serve command's YAML file;
 * gs_serve_pidfile_ keeps serve's pid file (the workers a killed serve
 * left); gs_serve_run puts supervisor, proxy, admin API and autoscaler
 * (gs_scale_) together for it, with the drain and the SIGHUP device diff.
 * Nothing here knows GPU geometry: callers pass a slice's SM count. */
#ifndef GS_SERVE_H
#define GS_SERVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "net/net.h"
#include "util/util.h"

/* ---- worker supervisor (docs/supervisor.md) ---- */

/* A worker's life: STARTING (spawned, not yet answered ready) -> READY (its
 * ready probe answered 200) -> UNREADY (was ready, then failed the probe
 * unready_after times in a row; READY again on the next 200) ; any of them ->
 * BACKOFF (the process exited; restarted when its delay ends) -> STARTING;
 * STOPPED after gs_super_stop reaped it. */
enum gs_super_state {
  GS_SUPER_STARTING,
  GS_SUPER_READY,
  GS_SUPER_UNREADY,
  GS_SUPER_BACKOFF,
  GS_SUPER_STOPPED,
};

/* One worker to run: typically a MIG device (replicas: the same device
 * several times, each with its own index). */
struct gs_super_slot {
  const char *uuid;    /* as the backend gives it: "MIG-xxxxxxxx-..." */
  const char *profile; /* "1g.5gb" */
  unsigned index;      /* the {index} placeholder */
  unsigned gpu;        /* the index of the GPU it is a slice of (metrics' gpu label) */
};

struct gs_super;
/* Called when worker w enters READY (ready = true) or leaves it (false: probe
 * failures, exit, stop), so a load balancer adds or removes it at once. It may
 * call gs_super_info and gs_super_stop, never gs_super_free. */
typedef void gs_super_ready_fn(void *ctx, struct gs_super *s, size_t w, bool ready);

struct gs_serve_pidfile;
struct gs_super_config {
  const struct gs_super_slot *slots; /* worker w runs slots[w] */
  size_t nslots;
  /* The command, NULL-terminated, run without a shell (pass "sh", "-c", ...
   * for one); {port} {grpc_port} {metrics_port} {uuid} {profile} {index}
   * are replaced in every argument; other braces are left as they are. */
  const char *const *argv;
  const char *log_dir;        /* worker-<w>.log in it, appended; NULL: inherit stdout/stderr */
  const char *claims_dir;     /* a jobs directory: each worker claims its slot's device there
                                 while it runs (jobs' ledger); NULL: no claims */
  unsigned port_base;         /* worker w gets base+3w, +1, +2; 0: 18000 */
  bool ephemeral_ports;       /* free ports picked at each start instead (see the race in docs) */
  const char *ready_path;     /* NULL: "/v2/health/ready" */
  unsigned probe_interval_ms; /* 0: 500 */
  unsigned probe_timeout_ms;  /* one probe's connect+answer; 0: 1000 */
  unsigned unready_after;     /* failed probes that make a READY worker UNREADY; 0: 3 */
  unsigned backoff_min_ms;    /* first restart delay, doubled each crash; 0: 500 */
  unsigned backoff_max_ms;    /* 0: 30000 */
  unsigned backoff_reset_ms;  /* READY this long before an exit restarts the doubling; 0: 60000 */
  unsigned grace_ms;          /* SIGTERM to SIGKILL on stop; 0: 10000 */
  struct gs_serve_pidfile *pidfile; /* each worker's pid recorded there; NULL: none */
  gs_super_ready_fn *on_ready; /* may be NULL */
  void *ctx;
};

/* What the admin API and metrics show of one worker. */
struct gs_super_info {
  enum gs_super_state state;
  int pid;                    /* 0 when no process runs */
  unsigned port, grpc_port, metrics_port;
  unsigned restarts;          /* starts after the first one */
  int last_status;            /* wait status of the last exit (WIFEXITED...), -1: none */
  int spawn_errno;            /* the last start's failure (e.g. ENOENT), 0: none */
  uint64_t backoff_ms;        /* in BACKOFF: the delay of the pending restart */
  uint64_t next_start_us;     /* in BACKOFF: when it restarts (gs_net_loop_now_us clock) */
  uint64_t ready_since_us;    /* in READY: since when */
  const char *uuid, *profile; /* the slot's, valid while the supervisor lives */
  unsigned gpu;               /* the slot's */
  bool retired;               /* gs_super_retire was called: never restarted */
};

/* "starting", "ready", "unready", "backoff", "stopped". */
const char *gs_super_state_name(enum gs_super_state st);
/* Fills cfg's zero fields with their defaults (the values listed above). */
void gs_super_config_defaults(struct gs_super_config *cfg);
/* A supervisor on loop for cfg's slots; copies what cfg points to, so the
 * caller may free it afterwards. Starts nothing (gs_super_start does). */
int gs_super_new(struct gs_err *err, struct gs_net_loop *loop, const struct gs_super_config *cfg,
                 struct gs_super **out);
/* Blocks SIGCHLD in the calling thread (a multi-threaded program blocks it in
 * every thread before creating them), watches it with a signalfd on the loop,
 * and starts every worker. A worker that cannot be spawned (no such program)
 * is not an error here: it goes to BACKOFF with spawn_errno set. Once only. */
int gs_super_start(struct gs_err *err, struct gs_super *s);
/* Drains: workers leave READY, each process group gets SIGTERM, and SIGKILL
 * after grace_ms; nothing restarts. Asynchronous: turn the loop until
 * gs_super_stopped. Calling it again does nothing. */
void gs_super_stop(struct gs_super *s);
/* Appends a worker for slot (its id in *w: ids are never reused) and, once
 * started, starts it. For a device that appeared (SIGHUP reload). */
int gs_super_add(struct gs_err *err, struct gs_super *s, const struct gs_super_slot *slot,
                 size_t *w);
/* Stops worker w for good (its device went away): it leaves READY now, its
 * group gets SIGTERM, SIGKILL after grace_ms; it is STOPPED once reaped and
 * never restarted. Others are untouched. Calling it again does nothing. */
void gs_super_retire(struct gs_super *s, size_t w);
/* True once every worker is STOPPED and reaped (also before any start). */
bool gs_super_stopped(const struct gs_super *s);
size_t gs_super_count(const struct gs_super *s);
/* Worker w's state and counters; GS_E_NOT_FOUND for w out of range. */
int gs_super_info(const struct gs_super *s, size_t w, struct gs_super_info *out);
/* SIGKILLs and reaps (blocking) whatever still runs, leaves the loop and
 * restores the signal mask gs_super_start changed; takes NULL. */
void gs_super_free(struct gs_super *s);

/* ---- load balancer (docs/proxy.md) ---- */

/* Which ready worker takes a request: the less loaded of two picked at random
 * (power of two choices, the default), or each in turn. */
enum gs_proxy_policy { GS_PROXY_P2C, GS_PROXY_RR };

struct gs_proxy_config {
  size_t nworkers;            /* worker ids 0..nworkers-1, none in the pool at first */
  enum gs_proxy_policy policy;
  unsigned max_inflight;      /* requests at once per worker; 0: 64 */
  unsigned worker_timeout_ms; /* from sending to the last response byte, else 504; 0: 30000 */
  unsigned eject_after;       /* consecutive failures that eject a worker; 0: 3 */
  unsigned eject_ms;          /* an ejected worker's first time out of the pool, doubled at
                                 each ejection in a row (at most 300 s); 0: 10000 */
  unsigned first_byte_ms;     /* a request sent whole with no answer byte this long goes to
                                 another worker (once, if still held whole); 0: 10000 */
  unsigned idle_pool;         /* kept-alive idle connections per worker; 0: max_inflight */
  /* Bytes of request bodies held at once over every thread: the retry
   * buffers of HTTP requests and whole gRPC messages; a request that would
   * pass it is refused (503, RESOURCE_EXHAUSTED). 0: 64 MiB. */
  size_t body_budget;
  struct gs_http_limits limits; /* client side; all zero: gs_http_limits_default */
  /* Event-loop threads in all, the caller's loop included (0 or 1: that one
   * alone). The others accept from the same listening socket and keep
   * their own upstream pools; max_conns counts all their connections. The
   * proxy's functions are called from the caller's loop thread only. */
  unsigned threads;
  /* Where /metrics reads worker restarts; NULL: none reported. */
  const struct gs_super *super;
  /* Called when passive ejection takes worker w out (true) or it is back
   * (false: a real request on trial, after its time out, was answered); may be NULL. */
  void (*on_eject)(void *ctx, size_t w, bool ejected);
  /* Appends more Prometheus text to /metrics (the autoscaler's); may be NULL. */
  void (*metrics_more)(void *ctx, FILE *f);
  void *ctx;
};

struct gs_proxy;
/* A load balancer on loop; serves once given a listening fd. */
int gs_proxy_new(struct gs_err *err, struct gs_net_loop *loop, const struct gs_proxy_config *cfg,
                 struct gs_proxy **out);
/* Accepts clients on a listening fd (the proxy closes it). */
int gs_proxy_listen_fd(struct gs_err *err, struct gs_proxy *p, int fd);
/* Worker w (on 127.0.0.1:port) joins the pool (ready) or leaves it at once
 * (requests already sent to it finish or time out; its idle connections
 * close). A new process (the supervisor's restart count moved) joining
 * puts an ejected worker on trial at once; the same process ready again
 * waits its time out. Out-of-range w is ignored. */
void gs_proxy_worker_set(struct gs_proxy *p, size_t w, unsigned port, bool ready);
/* True when w is in the pool and not ejected. */
bool gs_proxy_worker_usable(const struct gs_proxy *p, size_t w);
/* An operator's say over one worker (the admin API), kept across restarts:
 * DRAINING takes no new request and finishes those under way ("drained"
 * once none is left); DISABLED leaves the pool at once (requests under way
 * still finish). Neither stops the process: ENABLED brings it back as soon
 * as it is ready. */
enum gs_proxy_admin { GS_PROXY_ENABLED, GS_PROXY_DRAINING, GS_PROXY_DISABLED };

struct gs_proxy_worker_stats {
  unsigned port;
  bool ready, ejected, in_pool; /* in_pool: ready, not ejected, enabled */
  bool trial;                   /* ejected, and its next request decides whether it is back */
  unsigned ejections;           /* in a row (each doubles the time out), 0 once it stays back */
  uint64_t backoff_ms;          /* the last ejection's time out (0: none in a row) */
  uint64_t trial_in_ms;         /* ejected: when its time out ends (0: over, on trial) */
  enum gs_proxy_admin admin;
  unsigned inflight;
  uint64_t requests, errors;
};

/* "enabled", "draining" (requests still under way), "drained", "disabled". */
const char *gs_proxy_admin_name(enum gs_proxy_admin a, unsigned inflight);
/* GS_E_NOT_FOUND for w out of range. */
int gs_proxy_worker_admin(struct gs_proxy *p, size_t w, enum gs_proxy_admin a);
int gs_proxy_worker_stats(const struct gs_proxy *p, size_t w, struct gs_proxy_worker_stats *out);
size_t gs_proxy_count(const struct gs_proxy *p);
/* Live changes (SIGHUP): the policy, and the in-flight limit and worker
 * timeout unless 0. Requests under way keep the timeout they started with;
 * the idle pool keeps its size. */
void gs_proxy_reconfigure(struct gs_proxy *p, enum gs_proxy_policy policy, unsigned max_inflight,
                          unsigned worker_timeout_ms);
/* Appends a worker, out of the pool until gs_proxy_worker_set; its id in *w
 * (the next one: the proxy's ids follow the supervisor's). */
int gs_proxy_add_worker(struct gs_proxy *p, size_t *w);
/* The proxy-wide latency histogram so far (every answer): up to max bucket
 * counts, not cumulative, into counts; *le_us gets the buckets' upper bounds
 * in µs (one fewer: the last bucket has none). Returns the bucket count. */
size_t gs_proxy_latency(const struct gs_proxy *p, const uint64_t **le_us, uint64_t *counts,
                        size_t max);
/* Stops accepting new connections (drain); requests under way go on. */
void gs_proxy_drain(struct gs_proxy *p);
/* Requests accepted and not yet answered. */
size_t gs_proxy_inflight(const struct gs_proxy *p);
/* Closes every connection; unanswered clients just see theirs close. Takes NULL. */
void gs_proxy_free(struct gs_proxy *p);

/* The load balancer's gRPC side (docs/grpc.md): h2c clients on listening fd
 * (which it then owns), each call balanced over the pool of p to the gRPC
 * port super reports for the picked worker. Free it before p. */
struct gs_proxy_grpc;
int gs_proxy_grpc_new(struct gs_err *err, struct gs_net_loop *loop, struct gs_proxy *p,
                      const struct gs_super *super, int fd, struct gs_proxy_grpc **out);
void gs_proxy_grpc_free(struct gs_proxy_grpc *g);
/* Drain: no new connection, GOAWAY on each (calls under way finish). Takes NULL. */
void gs_proxy_grpc_drain(struct gs_proxy_grpc *g);
/* Calls accepted and not yet answered; 0 for NULL. */
size_t gs_proxy_grpc_inflight(const struct gs_proxy_grpc *g);

/* ---- serve config file (docs/proxy.md) ---- */

/* One option of the file: key is a long option of `gpuslice serve` without
 * its dashes ("worker-timeout"), value its text as the command line takes it. */
struct gs_serve_file_opt {
  const char *key; /* static */
  char *value;
  unsigned line;
};

struct gs_serve_file {
  struct gs_serve_file_opt *opts;
  size_t nopts;
  char **command; /* NULL-terminated; NULL when the file has none */
  char **env;     /* "NAME=value", NULL-terminated; NULL when none */
};

/* Parses a serve file strictly: unknown or repeated keys and wrong kinds are
 * GS_E_INVALID_ARGUMENT naming origin, the line and the key. Values are not
 * checked here: the command line's parser does it (one rule for both). */
int gs_serve_file_parse(struct gs_err *err, const char *origin, const char *text, size_t len,
                        struct gs_serve_file **out);
void gs_serve_file_free(struct gs_serve_file *f);

/* ---- admin API (docs/proxy.md) ---- */

/* A JSON API on its own listener: list the workers, drain, disable or
 * enable one. With a token, every request must carry "Authorization: Bearer
 * <token>"; without one, the caller must have bound fd to a loopback address
 * (gs_proxy_admin_check_bind). super may be NULL (no process columns). */
struct gs_proxy_admin_server;
int gs_proxy_admin_new(struct gs_err *err, struct gs_net_loop *loop, struct gs_proxy *p,
                       const struct gs_super *super, const char *token, int fd,
                       struct gs_proxy_admin_server **out);
void gs_proxy_admin_free(struct gs_proxy_admin_server *a);
/* GET /autoscale answers gs_scale_json(s) from now on. */
struct gs_scale;
void gs_proxy_admin_set_scale(struct gs_proxy_admin_server *a, const struct gs_scale *s);
/* GS_E_NO_PERMISSION when fd is bound to a non-loopback address and token is NULL. */
int gs_proxy_admin_check_bind(struct gs_err *err, int fd, const char *token);

/* ---- autoscaler (docs/autoscale.md) ---- */

/* Grows and shrinks the slices serving behind the proxy to keep a latency
 * percentile under a budget: a grow makes a GPU instance and its compute
 * instance from free capacity (the backend) and a worker on it; a shrink
 * drains its worker, stops it and destroys the instances. Only instances it
 * made are ever shrunk; they are listed in a state file so a restarted serve
 * adopts them (and kills the workers a killed serve left behind). */
#define GS_SCALE_BUCKETS 32
#define GS_SCALE_SNAPS 128

struct gs_scale_config {
  double percentile;         /* 90 */
  uint64_t budget_us;        /* 50000 */
  unsigned min_slices, max_slices;
  uint64_t window_us;        /* the sliding window of the percentile; 0: 10 s */
  uint64_t cooldown_us;      /* since the last scale event; 0: 10 s */
  double shrink_below;       /* shrink when the percentile scaled to one slice fewer stays
                                below this fraction of the budget; 0: 0.75 */
  unsigned min_requests;     /* fewer in the window counts as idle; 0: 20 */
  uint64_t tick_us;          /* how often it looks; 0: 250 ms */
  uint64_t drain_us;         /* a shrinking worker's bound to finish its requests; 0: 10 s */
};

/* Parsers of the command line's forms (also the serve file's): "p90=50ms"
 * (p50..p99.9), "1..7", and a duration from 1us to 24h (gs_duration_parse's
 * syntax, a unit required). */
int gs_scale_parse_budget(struct gs_err *err, const char *s, double *pct, uint64_t *us);
int gs_scale_parse_range(struct gs_err *err, const char *s, unsigned *min, unsigned *max);
int gs_scale_parse_duration(struct gs_err *err, const char *what, const char *s, uint64_t *us);
/* Fills cfg's zero fields with their defaults. */
void gs_scale_config_defaults(struct gs_scale_config *cfg);

/* The decision rule alone, fed with the proxy's cumulative histogram counts
 * (pure: the tests script load through it). */
enum gs_scale_action { GS_SCALE_HOLD, GS_SCALE_GROW, GS_SCALE_SHRINK };

struct gs_scale_policy {
  struct gs_scale_config cfg;
  size_t nb;
  uint64_t le_us[GS_SCALE_BUCKETS];
  struct gs_scale_snap {
    uint64_t t_us;
    uint64_t c[GS_SCALE_BUCKETS];
  } snap[GS_SCALE_SNAPS];
  size_t first, n;          /* ring of snapshots within the window */
  uint64_t since_us;        /* the window restarts here after each scale event */
  uint64_t last_event_us;
  bool any_event;
};

struct gs_scale_decision {
  enum gs_scale_action action;
  uint64_t pct_us;          /* the percentile over the window; 0 with no request */
  uint64_t requests;        /* in the window */
  const char *why;          /* static text */
};

void gs_scale_policy_init(struct gs_scale_policy *p, const struct gs_scale_config *cfg,
                          uint64_t now_us);
/* One snapshot of cumulative bucket counts (le_us: nb - 1 upper bounds). */
void gs_scale_observe(struct gs_scale_policy *p, uint64_t now_us, const uint64_t *le_us,
                      const uint64_t *cum, size_t nb);
/* What to do with slices serving and pending (starting or stopping) now. */
void gs_scale_decide(struct gs_scale_policy *p, uint64_t now_us, unsigned slices,
                     unsigned pending, struct gs_scale_decision *d);
/* A scale event happened (or finished): cool-down and a fresh window start. */
void gs_scale_policy_event(struct gs_scale_policy *p, uint64_t now_us);

/* The controller on the serve loop. */
struct gs_backend;
struct gs_scale;
struct gs_scale_target {
  struct gs_backend *backend;
  const unsigned *gpus;      /* where it may grow, in order */
  size_t ngpus;
  const char *profile;       /* "1g.5gb" */
  const char *state_path;    /* the list of its instances (JSON) */
  struct gs_super *super;
  struct gs_proxy *proxy;
};
/* Adopts the instances the state file lists that still exist (killing the
 * worker processes a killed serve left on them), forgets the others, and
 * starts ticking. The supervisor must exist (started or not). */
int gs_scale_new(struct gs_err *err, struct gs_net_loop *loop, const struct gs_scale_config *cfg,
                 const struct gs_scale_target *t, struct gs_scale **out);
/* The default state file for a backend: beside the emulator's state file,
 * else autoscale.json in gs_file_state_dir, whose directory is created;
 * *out is the caller's to free. */
int gs_scale_default_state(struct gs_err *err, struct gs_backend *b, char **out);
/* Prometheus text: slices, budget, window percentile, scale events, no capacity. */
void gs_scale_metrics(struct gs_scale *s, FILE *f);
/* JSON object of the same, for the admin API; caller frees. */
char *gs_scale_json(const struct gs_scale *s);
/* Call after the supervisor reaped every worker: destroys its instances,
 * empties the state file, frees. Takes NULL. */
void gs_scale_free(struct gs_scale *s);

/* ---- `gpuslice serve` on one loop (server.c) ---- */

/* The event loop's size: fds of clients, workers' pipes and upstream
 * connections (serve raises its soft RLIMIT_NOFILE this far). */
#define GS_SERVE_LOOP_FDS 65536

struct gs_mig_device;
/* ---- serve's pid file: the workers a serve that died left ---- */

/* Takes <dir>/serve.lock (flock, held until close) and <dir>/serve.pid for
 * this serve, making dir (0700) when missing; dir must be the caller's (or
 * root's) and writable by no one else (else GS_E_IO). Refused while another
 * serve holds them, naming its pid. The workers an earlier serve recorded
 * there and left running are ended: SIGTERM, SIGKILL after grace_ms, to
 * each recorded pid whose start time still matches, to its process group
 * while it does, and to the members of that group seen then; *ended counts
 * the workers. Refused, naming the pids, when some cannot be ended: another
 * uid's, or processes left in the group of a worker that was gone already
 * (its pid may have been reused since, so they are not signalled). Those
 * refusals are GS_E_UNKNOWN (none is NVML's). Blocks up to grace_ms + 2 s. */
int gs_serve_pidfile_open(struct gs_err *err, const char *dir, unsigned grace_ms,
                          struct gs_serve_pidfile **out, size_t *ended);
/* Records worker w's pid (0: none runs) with its start time and rewrites
 * the file; takes NULL. */
void gs_serve_pidfile_set(struct gs_serve_pidfile *pf, size_t w, int pid);
/* Removes the file and releases the lock; takes NULL. */
void gs_serve_pidfile_close(struct gs_serve_pidfile *pf);
/* serve's default state directory: "<emulator state>.serve" on emulated
 * GPUs (each emulated machine has its own), else "serve" in the user's
 * state directory (gs_file_state_dir). NULL with err filled when none
 * applies; caller frees. */
char *gs_serve_default_state_dir(struct gs_err *err, struct gs_backend *b);

/* What serve tells its caller of its life (gs_serve_config.on_life). READY:
 * the listeners are up and a first worker is ready (once), and again after
 * a reload once it was; WORKERS: a worker joined or left the pool;
 * RELOADING: a SIGHUP is being handled (READY follows if serve was ready);
 * STOPPING: the drain began; ALIVE: the loop still turns. */
enum gs_serve_life { GS_SERVE_READY, GS_SERVE_WORKERS, GS_SERVE_RELOADING, GS_SERVE_STOPPING,
                     GS_SERVE_ALIVE };
struct gs_serve_life_info {
  size_t ready, workers;      /* workers in the pool, and not retired */
};
typedef void gs_serve_life_fn(void *ctx, enum gs_serve_life what,
                              const struct gs_serve_life_info *info);

struct gs_serve_config {
  const char *listen;         /* the proxy's "HOST:PORT" */
  const char *state_dir;      /* the pid file's (gs_serve_pidfile_open); NULL: none kept */
  const char *grpc_listen;    /* NULL: no gRPC proxy */
  const char *admin_listen;   /* NULL: no admin API */
  const char *admin_token;    /* NULL: none (gs_proxy_admin_new) */
  struct gs_super_config super;   /* on_ready and ctx are the server's */
  struct gs_proxy_config proxy;   /* nworkers, super, on_eject, metrics_more, ctx: the server's */
  unsigned replicas;          /* workers per MIG device a reload finds new */
  unsigned drain_ms;          /* bound of a drain, and of a gone device's workers' */
  struct gs_scale_config scale;   /* budget_us 0: no autoscaler */
  /* backend, gpus, profile (NULL: "1g.5gb"), state_path (NULL:
   * gs_scale_default_state); super and proxy are the server's */
  struct gs_scale_target scale_target;
  /* SIGHUP: the caller re-reads what it reads (applying live options with
   * gs_proxy_reconfigure) and lists the MIG devices to serve into devs (room
   * for GS_BACKEND_MAX_GPUS * GS_BACKEND_MAX_MIG_DEVICES); their count, or
   * -1 to leave the workers as they are. */
  int (*on_reload)(void *ctx, struct gs_proxy *proxy, struct gs_mig_device *devs);
  /* Told of serve's life, for a service manager (the CLI's sd_notify); may
   * be NULL. */
  gs_serve_life_fn *on_life;
  uint64_t alive_every_us;    /* GS_SERVE_ALIVE this often, from the loop; 0: never */
  void *ctx;
};
/* The supervisor, the proxy (and its gRPC side), the admin API and the
 * autoscaler on one loop, until SIGTERM or SIGINT has drained them: no new
 * connection, the requests under way finish (within drain_ms), the workers
 * stop. On SIGHUP the workers follow the devices on_reload lists: a gone
 * device's workers drain and are retired once idle (or after drain_ms); a
 * new device gets `replicas` workers; the others are untouched. Prints the
 * listeners and the workers' comings and goings on stdout. 0 once drained,
 * or the error that kept it from starting. */
int gs_serve_run(struct gs_err *err, const struct gs_serve_config *cfg);

#endif
