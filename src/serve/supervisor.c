/* SPDX-License-Identifier: Apache-2.0 */
/* supervisor.c: the worker supervisor: one process per slot (MIG device or
 * replica), pinned with CUDA_VISIBLE_DEVICES, in its own process group, killed
 * by the kernel if serve dies (PR_SET_PDEATHSIG), its output in a log file;
 * readiness by HTTP probes on the serve loop; exits seen through a SIGCHLD
 * signalfd and restarted with exponential backoff; stop by SIGTERM then
 * SIGKILL per group; each pid recorded in serve's pid file when it has one.
 * It knows slots, not GPU geometry. */
#include "serve/serve.h"
#include "jobs/jobs.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define PROBE_REQ_SIZE 512
#define PROBE_BUF_SIZE 4096 /* a probe answer's head larger is a failure */
#define READY_PATH_MAX 256

struct probe {
  int fd;             /* -1: no probe in flight */
  uint64_t timeout;   /* timer id of its deadline */
  char req[PROBE_REQ_SIZE];
  size_t reqlen, sent;
  char buf[PROBE_BUF_SIZE];
  size_t nbuf;
  struct gs_http_resp resp;
};

struct worker {
  struct gs_super *s;
  size_t w;
  char *uuid, *profile;
  unsigned index;
  unsigned gpu;
  struct gs_super_info info;
  uint64_t next_backoff_ms; /* delay of the next crash's restart */
  uint64_t restart_timer, probe_timer;
  unsigned fails;           /* consecutive failed probes */
  bool retired;             /* gs_super_retire: stopped for good, never restarted */
  uint64_t kill_timer;      /* its own grace period's end when retired */
  struct probe probe;
  bool claimed;             /* holds `claim` on its device in the jobs ledger */
  struct gs_jobs_claim claim;
};

struct gs_super {
  struct gs_net_loop *loop;
  struct gs_super_config cfg; /* pointers below are our own copies */
  char **argv;
  char *log_dir, *ready_path, *claims_dir;
  struct worker **workers; /* pointers: a worker's address stays valid as the list grows */
  size_t n, cap;
  int sigfd;                  /* SIGCHLD signalfd, -1 before start */
  sigset_t old_mask;
  bool started, stopping;
  uint64_t kill_timer;        /* grace period's end during stop */
};

const char *gs_super_state_name(enum gs_super_state st)
{
  static const char *const names[] = {"starting", "ready", "unready", "backoff", "stopped"};
  return (unsigned)st < GS_NITEMS(names) ? names[st] : "unknown";
}

static void set_default(unsigned *v, unsigned def)
{
  if (!*v)
    *v = def;
}

void gs_super_config_defaults(struct gs_super_config *c)
{
  set_default(&c->port_base, 18000);
  set_default(&c->probe_interval_ms, 500);
  set_default(&c->probe_timeout_ms, 1000);
  set_default(&c->unready_after, 3);
  set_default(&c->backoff_min_ms, 500);
  set_default(&c->backoff_max_ms, 30000);
  set_default(&c->backoff_reset_ms, 60000);
  set_default(&c->grace_ms, 10000);
  if (!c->ready_path)
    c->ready_path = "/v2/health/ready";
}

/* ---- construction ---- */

static char *dup_or_null(const char *s, bool *nomem)
{
  char *d = s ? strdup(s) : NULL;
  if (s && !d)
    *nomem = true;
  return d;
}

static int check_config(struct gs_err *err, const struct gs_super_config *c)
{
  if (!c->argv || !c->argv[0])
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "supervisor: no worker command given");
  if (!c->slots && c->nslots) /* none at all is fine: gs_super_add brings them */
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "supervisor: no slots to run workers on");
  if (c->ready_path[0] != '/' || strlen(c->ready_path) >= READY_PATH_MAX ||
      strpbrk(c->ready_path, " \r\n"))
    return gs_err_set(err, GS_E_INVALID_ARGUMENT,
                      "ready path '%s': must start with '/', hold no spaces and be under %d bytes",
                      c->ready_path, READY_PATH_MAX);
  if (!c->ephemeral_ports && c->port_base + 3 * c->nslots > 65536)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT,
                      "port base %u: %zu workers need 3 ports each, past 65535 (lower the base)",
                      c->port_base, c->nslots);
  for (size_t i = 0; i < c->nslots; i++)
    if (!c->slots[i].uuid || !c->slots[i].profile)
      return gs_err_set(err, GS_E_INVALID_ARGUMENT, "slot %zu: missing UUID or profile", i);
  return 0;
}

static bool copy_argv(struct gs_super *s, const char *const *argv)
{
  size_t n = 0;
  while (argv[n])
    n++;
  if (!(s->argv = calloc(n + 1, sizeof(*s->argv))))
    return false;
  for (size_t i = 0; i < n; i++)
    if (!(s->argv[i] = strdup(argv[i])))
      return false;
  return true;
}

/* Appends worker n for slot; false on no memory. */
static bool add_worker(struct gs_super *s, const struct gs_super_slot *slot)
{
  struct worker *w;
  if (s->n == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 8;
    struct worker **bigger = realloc(s->workers, cap * sizeof(*bigger));
    if (!bigger)
      return false;
    s->workers = bigger;
    s->cap = cap;
  }
  if (!(w = calloc(1, sizeof(*w))))
    return false;
  if (!(w->uuid = strdup(slot->uuid)) || !(w->profile = strdup(slot->profile))) {
    free(w->uuid);
    free(w);
    return false;
  }
  w->s = s;
  w->w = s->n;
  w->index = slot->index;
  w->gpu = slot->gpu;
  w->info.state = GS_SUPER_STOPPED;
  w->info.last_status = -1;
  w->next_backoff_ms = s->cfg.backoff_min_ms;
  w->probe.fd = -1;
  s->workers[s->n++] = w;
  return true;
}

int gs_super_new(struct gs_err *err, struct gs_net_loop *loop, const struct gs_super_config *cfg,
                 struct gs_super **out)
{
  struct gs_super *s;
  struct gs_super_config c = *cfg;
  bool nomem = false;
  int rc;
  *out = NULL;
  gs_super_config_defaults(&c);
  if ((rc = check_config(err, &c)) != 0)
    return rc;
  if (!(s = calloc(1, sizeof(*s))))
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory creating a supervisor");
  s->loop = loop;
  s->cfg = c;
  s->sigfd = -1;
  s->log_dir = dup_or_null(c.log_dir, &nomem);
  s->ready_path = dup_or_null(c.ready_path, &nomem);
  s->claims_dir = dup_or_null(c.claims_dir, &nomem);
  for (size_t i = 0; i < c.nslots && !nomem; i++)
    nomem = !add_worker(s, &c.slots[i]);
  if (nomem || !copy_argv(s, c.argv)) {
    gs_super_free(s);
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory creating a supervisor of %zu workers",
                      c.nslots);
  }
  /* The copies replace the caller's pointers, which may die after this call. */
  s->cfg.slots = NULL;
  s->cfg.argv = NULL;
  s->cfg.log_dir = s->log_dir;
  s->cfg.ready_path = s->ready_path;
  s->cfg.claims_dir = s->claims_dir;
  *out = s;
  return 0;
}

/* ---- small helpers ---- */

static void notify(struct worker *w, bool ready)
{
  if (w->s->cfg.on_ready)
    w->s->cfg.on_ready(w->s->cfg.ctx, w->s, w->w, ready);
}

/* Moves to st, telling the caller when READY is entered or left. */
static void set_state(struct worker *w, enum gs_super_state st)
{
  enum gs_super_state old = w->info.state;
  w->info.state = st;
  if (st == GS_SUPER_READY && old != GS_SUPER_READY) {
    w->info.ready_since_us = gs_net_loop_now_us();
    notify(w, true);
  } else if (old == GS_SUPER_READY && st != GS_SUPER_READY) {
    w->info.ready_since_us = 0;
    notify(w, false);
  }
}

static void cancel_timer(struct gs_super *s, uint64_t *id)
{
  if (*id)
    gs_net_loop_timer_del(s->loop, *id);
  *id = 0;
}

/* Appends a line to worker w's log (banners and exits), best effort. */
/* Worker logs live in a directory the user named, so its owner and mode are
 * theirs to choose; but no link there is followed and no FIFO waited on
 * (serve may run as root). */
#define WORKER_LOG_FLAGS (GS_FILE_PUBLIC | GS_FILE_WRITE | GS_FILE_CREATE | GS_FILE_APPEND)

static void log_line(const struct worker *w, const char *fmt, ...) GS_PRINTF(2, 3);
static void log_line(const struct worker *w, const char *fmt, ...)
{
  char path[4096], stamp[32];
  time_t now = time(NULL);
  struct tm tm;
  va_list ap;
  FILE *f;
  int fd = -1;
  if (!w->s->log_dir)
    return;
  snprintf(path, sizeof(path), "%s/worker-%zu.log", w->s->log_dir, w->w);
  if (gs_file_open_private(NULL, path, WORKER_LOG_FLAGS, &fd, NULL) != 0 || !(f = fdopen(fd, "a"))) {
    if (fd >= 0)
      close(fd);
    return;
  }
  strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
  fprintf(f, "==== gpuslice supervisor %s worker %zu: ", stamp, w->w);
  va_start(ap, fmt);
  vfprintf(f, fmt, ap);
  va_end(ap);
  fputc('\n', f);
  fclose(f);
}

/* ---- ports and the command line ---- */

/* Free ports by binding 127.0.0.1:0. All three stay bound until chosen so they
 * differ; once closed, another process may take one before the worker binds
 * it: the worker then fails, exits, and its restart picks new ports. */
static int pick_ephemeral(unsigned ports[3])
{
  int fds[3] = {-1, -1, -1}, rc = 0;
  for (int i = 0; i < 3 && rc == 0; i++) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof(a);
    fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fds[i] < 0 || bind(fds[i], (struct sockaddr *)&a, sizeof(a)) < 0 ||
        getsockname(fds[i], (struct sockaddr *)&a, &al) < 0)
      rc = errno ? errno : EIO;
    else
      ports[i] = ntohs(a.sin_port);
  }
  for (int i = 0; i < 3; i++)
    if (fds[i] >= 0)
      close(fds[i]);
  return rc;
}

static int assign_ports(struct worker *w)
{
  if (w->s->cfg.ephemeral_ports) {
    unsigned p[3];
    int rc = pick_ephemeral(p);
    if (rc)
      return rc;
    w->info.port = p[0];
    w->info.grpc_port = p[1];
    w->info.metrics_port = p[2];
    return 0;
  }
  w->info.port = w->s->cfg.port_base + 3 * (unsigned)w->w;
  w->info.grpc_port = w->info.port + 1;
  w->info.metrics_port = w->info.port + 2;
  return 0;
}

/* The value of placeholder name (len bytes, without braces) or NULL. */
static const char *placeholder(const struct worker *w, const char *name, size_t len, char num[16])
{
  static const char *const keys[] = {"port", "grpc_port", "metrics_port", "index"};
  const unsigned vals[] = {w->info.port, w->info.grpc_port, w->info.metrics_port, w->index};
  for (size_t i = 0; i < GS_NITEMS(keys); i++)
    if (strlen(keys[i]) == len && !memcmp(keys[i], name, len)) {
      snprintf(num, 16, "%u", vals[i]);
      return num;
    }
  if (len == 4 && !memcmp(name, "uuid", 4))
    return w->uuid;
  if (len == 7 && !memcmp(name, "profile", 7))
    return w->profile;
  return NULL;
}

/* One argument with its placeholders replaced; NULL on no memory. */
static char *substitute(const struct worker *w, const char *arg)
{
  size_t cap = strlen(arg) + 1, len = 0;
  char *out = malloc(cap), num[16];
  while (out && *arg) {
    const char *close = *arg == '{' ? strchr(arg, '}') : NULL;
    const char *val = close ? placeholder(w, arg + 1, (size_t)(close - arg - 1), num) : NULL;
    size_t vl = val ? strlen(val) : 1;
    if (len + vl + 1 > cap) {
      char *bigger = realloc(out, cap = 2 * (len + vl + 1));
      if (!bigger)
        free(out);
      out = bigger;
      if (!out)
        break;
    }
    memcpy(out + len, val ? val : arg, vl);
    len += vl;
    arg = val ? close + 1 : arg + 1;
  }
  if (out)
    out[len] = 0;
  return out;
}

static void free_strv(char **v)
{
  for (size_t i = 0; v && v[i]; i++)
    free(v[i]);
  free(v);
}

static char **build_argv(const struct worker *w)
{
  size_t n = 0;
  char **v;
  while (w->s->argv[n])
    n++;
  if (!(v = calloc(n + 1, sizeof(*v))))
    return NULL;
  for (size_t i = 0; i < n; i++)
    if (!(v[i] = substitute(w, w->s->argv[i]))) {
      free_strv(v);
      return NULL;
    }
  return v;
}

/* The parent's environment without CUDA_VISIBLE_DEVICES, then ours. The
 * backend's UUIDs already read "MIG-..."; a bare one gets the prefix. */
static char **build_env(const struct worker *w)
{
  size_t n = 0, k = 0;
  char **v;
  const char *pre = strncmp(w->uuid, "MIG-", 4) ? "MIG-" : "";
  while (environ[n])
    n++;
  if (!(v = calloc(n + 2, sizeof(*v))))
    return NULL;
  for (size_t i = 0; i < n; i++)
    if (strncmp(environ[i], "CUDA_VISIBLE_DEVICES=", 21) != 0 && !(v[k++] = strdup(environ[i])))
      goto fail;
  if (asprintf(&v[k], "CUDA_VISIBLE_DEVICES=%s%s", pre, w->uuid) < 0) {
    v[k] = NULL;
    goto fail;
  }
  return v;
fail:
  free_strv(v);
  return NULL;
}

/* ---- spawning ---- */

static int open_log(const struct worker *w)
{
  char path[4096];
  int fd = -1;
  if (!w->s->log_dir)
    return -1;
  snprintf(path, sizeof(path), "%s/worker-%zu.log", w->s->log_dir, w->w);
  gs_file_open_private(NULL, path, WORKER_LOG_FLAGS, &fd, NULL);
  return fd;
}

/* argv[0] as execvp finds it: as given with a '/', else the first
 * executable file of that name in PATH. 0 or an errno. */
static int find_program(const char *prog, char *out, size_t size)
{
  const char *path = getenv("PATH"), *dir;
  int rc = ENOENT;
  if (strchr(prog, '/'))
    return snprintf(out, size, "%s", prog) < (int)size ? 0 : ENAMETOOLONG;
  for (dir = path && *path ? path : "/usr/local/bin:/usr/bin:/bin"; dir; ) {
    const char *end = strchr(dir, ':');
    int dl = end ? (int)(end - dir) : (int)strlen(dir);
    struct stat st;
    if (snprintf(out, size, "%.*s%s%s", dl, dir, dl ? "/" : "", prog) < (int)size &&
        stat(out, &st) == 0 && S_ISREG(st.st_mode)) {
      if (access(out, X_OK) == 0)
        return 0;
      rc = EACCES; /* as execvp: a later executable one still wins */
    }
    dir = end ? end + 1 : NULL;
  }
  return rc;
}

/* The child between fork and exec: async-signal-safe calls only, as the
 * parent has threads. Its own process group; SIGKILL when serve's thread
 * that forked it dies (PR_SET_PDEATHSIG; the supervisor runs on serve's main
 * thread, which lives as long as serve), checked against a parent that died
 * before the prctl; the signals serve blocks or handles back to their
 * defaults; stdin from /dev/null, stdout and stderr to the log. A failure's
 * errno goes up errfd. */
static void child(const char *path, char **argv, char **envp, int logfd, pid_t parent, int errfd)
{
  static const int reset[] = {SIGCHLD, SIGPIPE, SIGTERM, SIGINT, SIGHUP};
  struct sigaction dfl;
  sigset_t none;
  int e, nul;
  memset(&dfl, 0, sizeof(dfl));
  dfl.sa_handler = SIG_DFL;
  if (setpgid(0, 0) != 0 || prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
    goto fail;
  if (getppid() != parent)
    _exit(127); /* serve is already gone: no worker of its may start */
  for (size_t i = 0; i < GS_NITEMS(reset); i++)
    sigaction(reset[i], &dfl, NULL);
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  if ((nul = open("/dev/null", O_RDONLY)) < 0 || dup2(nul, 0) < 0 ||
      (logfd >= 0 && (dup2(logfd, 1) < 0 || dup2(logfd, 2) < 0)))
    goto fail;
  execve(path, argv, envp);
fail:
  e = errno;
  if (write(errfd, &e, sizeof(e)) < 0)
    _exit(126);
  _exit(127);
}

/* Forks and execs argv; 0 with *pid, or the errno of what failed (the
 * program not found or not executable, fork), the child then reaped. */
static int spawn(char **argv, char **envp, int logfd, pid_t *pid)
{
  char path[4096];
  pid_t parent = getpid(), p;
  int pipefd[2], e = 0, rc;
  ssize_t n;
  if ((rc = find_program(argv[0], path, sizeof(path))) != 0)
    return rc;
  if (pipe2(pipefd, O_CLOEXEC) != 0)
    return errno;
  if ((p = fork()) == 0)
    child(path, argv, envp, logfd, parent, pipefd[1]);
  rc = p < 0 ? errno : 0;
  close(pipefd[1]);
  /* The pipe closes at exec (CLOEXEC) or carries the child's errno. */
  while ((n = read(pipefd[0], &e, sizeof(e))) < 0 && errno == EINTR)
    ;
  close(pipefd[0]);
  if (p > 0 && n == (ssize_t)sizeof(e)) {
    waitpid(p, NULL, 0);
    rc = e ? e : EIO;
  }
  if (!rc)
    *pid = p;
  return rc;
}

static int64_t on_probe_timer(struct gs_net_loop *loop, uint64_t id, void *data);
static void enter_backoff(struct worker *w);

/* The device's claim in the jobs ledger, taken at the worker's first start
 * and kept across restarts, so that `gpuslice run` and the queue never
 * hand out a slice a worker uses; false (logged) while another holds it. */
static bool claim_slot(struct worker *w)
{
  struct gs_err err = {0};
  char job[GS_JOBS_ID_SIZE];
  if (!w->s->claims_dir || w->claimed)
    return true;
  snprintf(job, sizeof(job), "serve-%d/w%zu", (int)getpid(), w->w);
  if (gs_jobs_claim_device(&err, w->s->claims_dir, w->uuid, w->profile, job, "serve", getpid(),
                           &w->claim) != 0) {
    log_line(w, "not started: %s", err.msg);
    return false;
  }
  return w->claimed = true;
}

static void release_slot(struct worker *w)
{
  if (w->claimed)
    gs_jobs_release(NULL, NULL, w->s->claims_dir, &w->claim);
  w->claimed = false;
}

/* Starts worker w's process: STARTING with probes armed, or BACKOFF if it
 * could not be spawned (spawn_errno says why). */
static void start_worker(struct worker *w)
{
  char **argv = NULL, **envp = NULL;
  int logfd, rc;
  pid_t pid = 0;
  if (!claim_slot(w)) { /* another job holds the device: try again later */
    enter_backoff(w);
    return;
  }
  if (!(rc = assign_ports(w)) && (!(argv = build_argv(w)) || !(envp = build_env(w))))
    rc = ENOMEM;
  logfd = open_log(w);
  if (!rc) {
    log_line(w, "starting %s (uuid %s, profile %s, port %u)", argv[0], w->uuid, w->profile,
             w->info.port);
    rc = spawn(argv, envp, logfd, &pid);
  }
  if (logfd >= 0)
    close(logfd);
  free_strv(argv);
  free_strv(envp);
  w->info.spawn_errno = rc;
  w->fails = 0;
  if (rc) {
    log_line(w, "cannot start: %s", strerror(rc));
    enter_backoff(w);
    return;
  }
  w->info.pid = pid;
  gs_serve_pidfile_set(w->s->cfg.pidfile, w->w, pid);
  set_state(w, GS_SUPER_STARTING);
  w->probe_timer =
      gs_net_loop_timer_add(w->s->loop, w->s->cfg.probe_interval_ms * 1000ull, on_probe_timer, w);
}

static int64_t on_restart(struct gs_net_loop *loop, uint64_t id, void *data)
{
  struct worker *w = data;
  (void)loop;
  (void)id;
  w->restart_timer = 0;
  w->info.restarts++;
  start_worker(w);
  return GS_NET_TIMER_DONE;
}

/* Schedules the restart: the delay doubles per exit up to the cap, and starts
 * over at the minimum after a worker that had stayed ready long enough. */
static void enter_backoff(struct worker *w)
{
  const struct gs_super_config *c = &w->s->cfg;
  uint64_t now = gs_net_loop_now_us();
  if (w->info.state == GS_SUPER_READY &&
      now - w->info.ready_since_us >= c->backoff_reset_ms * 1000ull)
    w->next_backoff_ms = c->backoff_min_ms;
  w->info.backoff_ms = w->next_backoff_ms;
  w->info.next_start_us = now + w->info.backoff_ms * 1000;
  w->next_backoff_ms = w->next_backoff_ms * 2 > c->backoff_max_ms ? c->backoff_max_ms
                                                                   : w->next_backoff_ms * 2;
  w->restart_timer = gs_net_loop_timer_add(w->s->loop, w->info.backoff_ms * 1000, on_restart, w);
  /* Last: the callback it may fire can call gs_super_stop, which cancels the
   * timer just set and makes the worker STOPPED. */
  set_state(w, GS_SUPER_BACKOFF);
}

/* ---- readiness probes: a GET, its answer read by net's response reader ---- */

static void probe_end(struct worker *w)
{
  if (w->probe.fd >= 0)
    gs_net_loop_close_fd(w->s->loop, w->probe.fd);
  w->probe.fd = -1;
  cancel_timer(w->s, &w->probe.timeout);
}

static void probe_result(struct worker *w, bool ok)
{
  probe_end(w);
  if (ok) {
    w->fails = 0;
    set_state(w, GS_SUPER_READY);
  } else if (w->info.state != GS_SUPER_STARTING && ++w->fails >= w->s->cfg.unready_after) {
    set_state(w, GS_SUPER_UNREADY);
  }
}

/* The answer's head, read by net's response reader (its rules): ready when
 * it says 200; a malformed head, or none before the close, is a failure. */
static void probe_read(struct worker *w)
{
  struct probe *p = &w->probe;
  ssize_t n = read(p->fd, p->buf + p->nbuf, sizeof(p->buf) - p->nbuf);
  int rc;
  if (n < 0 && (errno == EAGAIN || errno == EINTR))
    return;
  if (n <= 0) {
    probe_result(w, false);
    return;
  }
  p->nbuf += (size_t)n;
  rc = gs_http_resp_head(&p->resp, p->buf, &p->nbuf, sizeof(p->buf));
  if (rc != GS_HTTP_RESP_MORE)
    probe_result(w, rc == GS_HTTP_RESP_DONE && p->resp.status == 200);
}

static void on_probe_io(struct gs_net_loop *loop, int fd, void *data, unsigned mask);

static void probe_write(struct worker *w)
{
  struct probe *p = &w->probe;
  int soerr = 0;
  socklen_t sl = sizeof(soerr);
  ssize_t n;
  if (!p->sent && (getsockopt(p->fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0 || soerr)) {
    probe_result(w, false); /* connection refused: not listening yet */
    return;
  }
  n = send(p->fd, p->req + p->sent, p->reqlen - p->sent, MSG_NOSIGNAL);
  if (n < 0 && (errno == EAGAIN || errno == EINTR))
    return;
  if (n < 0) {
    probe_result(w, false);
    return;
  }
  if ((p->sent += (size_t)n) == p->reqlen) {
    gs_net_loop_del(w->s->loop, p->fd, GS_NET_WRITABLE);
    if (gs_net_loop_add(NULL, w->s->loop, p->fd, GS_NET_READABLE, on_probe_io, w) != 0)
      probe_result(w, false);
  }
}

static void on_probe_io(struct gs_net_loop *loop, int fd, void *data, unsigned mask)
{
  struct worker *w = data;
  (void)loop;
  if (fd != w->probe.fd)
    return;
  if (mask & GS_NET_WRITABLE && w->probe.sent < w->probe.reqlen)
    probe_write(w);
  else if (mask & GS_NET_READABLE)
    probe_read(w);
}

static int64_t on_probe_timeout(struct gs_net_loop *loop, uint64_t id, void *data)
{
  struct worker *w = data;
  (void)loop;
  (void)id;
  w->probe.timeout = 0;
  probe_result(w, false);
  return GS_NET_TIMER_DONE;
}

static void probe_start(struct worker *w)
{
  struct probe *p = &w->probe;
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)w->info.port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    probe_result(w, false);
    return;
  }
  p->fd = fd;
  p->sent = p->nbuf = 0;
  gs_http_resp_init(&p->resp, false);
  p->reqlen = (size_t)snprintf(p->req, sizeof(p->req),
                               "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%u\r\nConnection: close\r\n\r\n",
                               w->s->ready_path, w->info.port);
  if ((connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0 && errno != EINPROGRESS) ||
      gs_net_loop_add(NULL, w->s->loop, fd, GS_NET_WRITABLE, on_probe_io, w) != 0 ||
      !(p->timeout = gs_net_loop_timer_add(w->s->loop, w->s->cfg.probe_timeout_ms * 1000ull,
                                           on_probe_timeout, w))) {
    probe_result(w, false);
    return;
  }
}

/* Every probe interval, one probe unless the last one is still running. */
static int64_t on_probe_timer(struct gs_net_loop *loop, uint64_t id, void *data)
{
  struct worker *w = data;
  (void)loop;
  (void)id;
  if (w->probe.fd < 0)
    probe_start(w);
  return (int64_t)w->s->cfg.probe_interval_ms * 1000;
}

/* ---- exits ---- */

static bool all_stopped(const struct gs_super *s)
{
  for (size_t i = 0; i < s->n; i++)
    if (s->workers[i]->info.state != GS_SUPER_STOPPED)
      return false;
  return true;
}

/* Worker w's process exited with status. Its group is killed too, so a
 * grandchild it left cannot keep its port or GPU; then restart or stop. */
static void worker_exited(struct worker *w, int status)
{
  struct gs_super *s = w->s;
  kill(-w->info.pid, SIGKILL);
  w->info.last_status = status;
  log_line(w, "pid %d %s %d", w->info.pid, WIFSIGNALED(status) ? "killed by signal" : "exited",
           WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
  w->info.pid = 0;
  gs_serve_pidfile_set(s->cfg.pidfile, w->w, 0);
  cancel_timer(s, &w->probe_timer);
  cancel_timer(s, &w->kill_timer);
  probe_end(w);
  if (!s->stopping && !w->retired) {
    enter_backoff(w);
    return;
  }
  release_slot(w);
  set_state(w, GS_SUPER_STOPPED);
  if (all_stopped(s))
    cancel_timer(s, &s->kill_timer);
}

/* Reaps our own children only (never waitpid(-1)), so other children of the
 * process keep their statuses for their owners. */
static void reap(struct gs_super *s)
{
  for (size_t i = 0; i < s->n; i++) {
    struct worker *w = s->workers[i];
    int status;
    if (w->info.pid > 0 && waitpid(w->info.pid, &status, WNOHANG) == w->info.pid)
      worker_exited(w, status);
  }
}

static void on_sigchld(struct gs_net_loop *loop, int fd, void *data, unsigned mask)
{
  struct signalfd_siginfo si[8];
  (void)loop;
  (void)mask;
  /* Signals coalesce: the reads only drain, reap checks every worker. */
  while (read(fd, si, sizeof(si)) > 0)
    ;
  reap(data);
}

int gs_super_start(struct gs_err *err, struct gs_super *s)
{
  sigset_t chld;
  int rc;
  if (s->started || s->stopping)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "supervisor already started or stopped");
  if (s->log_dir && mkdir(s->log_dir, 0755) < 0 && errno != EEXIST)
    return gs_err_set(err, GS_E_IO, "log directory %s: %s (create it or pick another)",
                      s->log_dir, strerror(errno));
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, &s->old_mask);
  s->started = true;
  if ((s->sigfd = signalfd(-1, &chld, SFD_NONBLOCK | SFD_CLOEXEC)) < 0)
    return gs_err_set(err, GS_E_IO, "signalfd for SIGCHLD: %s", strerror(errno));
  if ((rc = gs_net_loop_add(err, s->loop, s->sigfd, GS_NET_READABLE, on_sigchld, s)) != 0)
    return rc;
  for (size_t i = 0; i < s->n; i++)
    start_worker(s->workers[i]);
  return 0;
}

/* ---- stop ---- */

static void kill_groups(struct gs_super *s, int sig)
{
  for (size_t i = 0; i < s->n; i++)
    if (s->workers[i]->info.pid > 0)
      kill(-s->workers[i]->info.pid, sig);
}

static int64_t on_grace_over(struct gs_net_loop *loop, uint64_t id, void *data)
{
  struct gs_super *s = data;
  (void)loop;
  (void)id;
  s->kill_timer = 0;
  kill_groups(s, SIGKILL);
  return GS_NET_TIMER_DONE;
}

void gs_super_stop(struct gs_super *s)
{
  if (s->stopping)
    return;
  s->stopping = true;
  for (size_t i = 0; i < s->n; i++) {
    struct worker *w = s->workers[i];
    cancel_timer(s, &w->restart_timer);
    cancel_timer(s, &w->probe_timer);
    probe_end(w);
    /* Running workers leave the pool now and are STOPPED once reaped. */
    if (w->info.pid <= 0)
      set_state(w, GS_SUPER_STOPPED);
    else if (w->info.state == GS_SUPER_READY)
      set_state(w, GS_SUPER_UNREADY);
  }
  kill_groups(s, SIGTERM);
  if (!all_stopped(s))
    s->kill_timer = gs_net_loop_timer_add(s->loop, s->cfg.grace_ms * 1000ull, on_grace_over, s);
}

static int64_t on_retire_grace_over(struct gs_net_loop *loop, uint64_t id, void *data)
{
  struct worker *w = data;
  (void)loop;
  (void)id;
  w->kill_timer = 0;
  if (w->info.pid > 0)
    kill(-w->info.pid, SIGKILL);
  return GS_NET_TIMER_DONE;
}

void gs_super_retire(struct gs_super *s, size_t i)
{
  struct worker *w;
  if (i >= s->n || s->workers[i]->retired)
    return;
  w = s->workers[i];
  w->retired = true;
  log_line(w, "retired (its device is gone)");
  cancel_timer(s, &w->restart_timer);
  cancel_timer(s, &w->probe_timer);
  probe_end(w);
  if (w->info.pid <= 0) {
    set_state(w, GS_SUPER_STOPPED);
    return;
  }
  if (w->info.state == GS_SUPER_READY)
    set_state(w, GS_SUPER_UNREADY);
  kill(-w->info.pid, SIGTERM);
  w->kill_timer =
      gs_net_loop_timer_add(s->loop, s->cfg.grace_ms * 1000ull, on_retire_grace_over, w);
}

int gs_super_add(struct gs_err *err, struct gs_super *s, const struct gs_super_slot *slot,
                 size_t *out)
{
  if (!slot->uuid || !slot->profile)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "supervisor: a slot without UUID or profile");
  if (s->stopping)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "supervisor: stopping, adds no worker");
  if (!s->cfg.ephemeral_ports && s->cfg.port_base + 3 * (s->n + 1) > 65536)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT,
                      "port base %u: %zu workers need 3 ports each, past 65535 (lower the base)",
                      s->cfg.port_base, s->n + 1);
  if (!add_worker(s, slot))
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory adding a worker");
  *out = s->n - 1;
  if (s->started)
    start_worker(s->workers[s->n - 1]);
  return 0;
}

bool gs_super_stopped(const struct gs_super *s)
{
  return all_stopped(s);
}

size_t gs_super_count(const struct gs_super *s)
{
  return s->n;
}

int gs_super_info(const struct gs_super *s, size_t w, struct gs_super_info *out)
{
  if (w >= s->n)
    return GS_E_NOT_FOUND;
  *out = s->workers[w]->info;
  out->uuid = s->workers[w]->uuid;
  out->profile = s->workers[w]->profile;
  out->gpu = s->workers[w]->gpu;
  out->retired = s->workers[w]->retired;
  return 0;
}

/* ---- teardown ---- */

static void free_worker(struct gs_super *s, struct worker *w)
{
  if (w->info.pid > 0) {
    kill(-w->info.pid, SIGKILL);
    waitpid(w->info.pid, NULL, 0);
  }
  cancel_timer(s, &w->restart_timer);
  cancel_timer(s, &w->probe_timer);
  cancel_timer(s, &w->kill_timer);
  probe_end(w);
  release_slot(w);
  free(w->uuid);
  free(w->profile);
  free(w);
}

void gs_super_free(struct gs_super *s)
{
  if (!s)
    return;
  for (size_t i = 0; s->workers && i < s->n; i++)
    free_worker(s, s->workers[i]);
  cancel_timer(s, &s->kill_timer);
  if (s->sigfd >= 0)
    gs_net_loop_close_fd(s->loop, s->sigfd);
  if (s->started)
    sigprocmask(SIG_SETMASK, &s->old_mask, NULL);
  free_strv(s->argv);
  free(s->workers);
  free(s->log_dir);
  free(s->ready_path);
  free(s->claims_dir);
  free(s);
}
