/* SPDX-License-Identifier: Apache-2.0 */
/* autoscale.c: the autoscaler's controller on the serve loop: every tick it
 * reads the proxy's latency histogram into the policy (scale_policy.c) and
 * acts: a grow creates a GPU instance and its full compute instance through
 * the backend, starts a worker on it and counts it once ready; a shrink
 * drains its newest own worker, retires it and destroys its instances. Its
 * instances are listed in a state file (GPU, GI, CI, UUID, worker pid) so a
 * restarted serve adopts them and kills what a killed serve left running. */
#include "serve/serve.h"
#include "backend/backend.h"

#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum own_state { OWN_STARTING, OWN_SERVING, OWN_DRAINING, OWN_STOPPING };

struct own {
  unsigned gpu, gi, ci;
  char uuid[GS_BACKEND_UUID_SIZE];
  size_t w;
  int pid;
  unsigned long long pid_start; /* /proc/<pid>/stat start time: the pid is not reused */
  enum own_state st;
  uint64_t until_us; /* draining: the bound */
};

struct gs_scale {
  struct gs_scale_policy pol;
  struct gs_net_loop *loop;
  struct gs_scale_target t;
  char *state_path, *profile;
  unsigned *gpus;
  struct own *own;
  size_t nown;
  uint64_t timer, grows, shrinks, no_capacity_total;
  bool no_capacity;
  bool unsaved; /* the state file could not be written: grows wait for a cool-down */
  struct gs_scale_decision last;
  /* /metrics may be answered on any proxy thread: they read this copy,
   * rendered on the loop's thread at every tick, never the live state */
  pthread_mutex_t mu;
  char metrics[2048];
};

/* ---- state file ---- */

/* Writes the state file; on failure fills err, or logs it when err is NULL
 * (the record is then as of the last write that worked). */
static int save(struct gs_scale *s, struct gs_err *err)
{
  struct gs_err e = {0};
  json_t *arr = json_array(), *root = json_pack("{s:s, s:o}", "profile", s->profile,
                                                "instances", arr);
  char *text;
  int rc;
  for (size_t i = 0; i < s->nown; i++) {
    const struct own *o = &s->own[i];
    json_array_append_new(arr, json_pack("{s:I, s:I, s:I, s:s, s:I, s:I}", "gpu",
                                         (json_int_t)o->gpu, "gi", (json_int_t)o->gi, "ci",
                                         (json_int_t)o->ci, "uuid", o->uuid, "pid",
                                         (json_int_t)o->pid, "pid_start",
                                         (json_int_t)o->pid_start));
  }
  text = root ? json_dumps(root, JSON_INDENT(2)) : NULL;
  json_decref(root);
  rc = text ? gs_file_write_atomic(&e, s->state_path, text, strlen(text))
            : gs_err_set(&e, GS_E_NO_MEMORY, "out of memory");
  free(text);
  if (!rc)
    s->unsaved = false;
  else if (err)
    gs_err_set(err, rc, "autoscale: cannot write its state file %s (%s); give --scale-state "
               "a file in a writable directory", s->state_path, e.msg);
  else
    gs_log_warn("serve", "autoscale: cannot write %s: %s", s->state_path, e.msg);
  return rc;
}

static struct own *own_add(struct gs_scale *s)
{
  struct own *v = realloc(s->own, (s->nown + 1) * sizeof(*v));
  if (!v)
    return NULL;
  s->own = v;
  memset(&v[s->nown], 0, sizeof(*v));
  return &v[s->nown++];
}

static void own_remove(struct gs_scale *s, size_t i)
{
  memmove(&s->own[i], &s->own[i + 1], (s->nown - i - 1) * sizeof(*s->own));
  s->nown--;
}

/* ---- instances ---- */

static void destroy(struct gs_scale *s, const struct own *o)
{
  struct gs_backend *b = s->t.backend;
  struct gs_err err = {0};
  if (b->ops->ci_destroy(b, &err, o->gpu, o->gi, o->ci) != 0 ||
      b->ops->gi_destroy(b, &err, o->gpu, o->gi) != 0)
    gs_log_warn("serve", "autoscale: destroying GPU %u GI %u CI %u: %s", o->gpu, o->gi, o->ci,
                err.msg);
}

/* The MIG device of gpu/gi/ci; false if it is gone. */
static bool find_device(struct gs_scale *s, unsigned gpu, unsigned gi, unsigned ci,
                        struct gs_mig_device *out)
{
  struct gs_mig_device *devs = calloc(GS_BACKEND_MAX_MIG_DEVICES, sizeof(*devs));
  struct gs_err err = {0};
  unsigned n = 0;
  bool found = false;
  if (devs && s->t.backend->ops->mig_devices(s->t.backend, &err, gpu, devs, &n) == 0)
    for (unsigned k = 0; k < n && !found; k++)
      if (devs[k].gi == gi && devs[k].ci == ci) {
        *out = devs[k];
        found = true;
      }
  free(devs);
  return found;
}

static bool super_has(struct gs_scale *s, const char *uuid, size_t *w)
{
  for (size_t k = 0; k < gs_super_count(s->t.super); k++) {
    struct gs_super_info info;
    if (gs_super_info(s->t.super, k, &info) == 0 && !info.retired &&
        strcmp(info.uuid, uuid) == 0) {
      *w = k;
      return true;
    }
  }
  return false;
}

static int start_worker(struct gs_err *err, struct gs_scale *s, struct own *o, const char *name)
{
  struct gs_super_slot slot = {o->uuid, name, (unsigned)gs_super_count(s->t.super), o->gpu};
  size_t pw;
  int rc;
  if (gs_proxy_add_worker(s->t.proxy, &pw) != 0)
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory adding a worker");
  if ((rc = gs_super_add(err, s->t.super, &slot, &o->w)) != 0)
    return rc;
  if (o->w != pw)
    return gs_err_set(err, GS_E_UNKNOWN, "the proxy's and the supervisor's workers differ");
  return 0;
}

/* Says once that no capacity is free; it is checked again at each cool-down. */
static void no_capacity(struct gs_scale *s, const char *why)
{
  if (s->no_capacity)
    return;
  s->no_capacity = true;
  s->no_capacity_total++;
  gs_log_info("serve", "autoscale: no free capacity for %s (%s); staying at %zu own slices until "
              "some is freed", s->profile, why, s->nown);
}

/* An instance whose record cannot be written would outlive a crash of serve
 * unknown to the next one: it goes again, and grows wait for a cool-down
 * (said once until a write works). */
static void unrecorded(struct gs_scale *s, const struct own *o, const struct gs_err *err)
{
  if (!s->unsaved)
    gs_log_warn("serve", "%s; GPU %u GI %u CI %u destroyed again, grows retried after each "
                "cool-down", err->msg, o->gpu, o->gi, o->ci);
  s->unsaved = true;
  destroy(s, o);
  s->nown--;
}

static void grow(struct gs_scale *s)
{
  struct gs_backend *b = s->t.backend;
  struct gs_err err = {0};
  for (size_t g = 0; g < s->t.ngpus; g++) {
    struct gs_gpu_info info;
    const struct gs_geom_gi_profile *gp;
    struct gs_geom_ci_profile cp;
    struct gs_gi_info gi;
    struct gs_ci_info ci;
    struct gs_mig_device dev;
    unsigned left = 0;
    struct own *o;
    if (b->ops->gpu_info(b, &err, s->gpus[g], &info) != 0 ||
        !(gp = gs_geom_gi_profile_find(info.model, s->profile)) ||
        b->ops->gi_remaining(b, &err, s->gpus[g], gp, &left) != 0 || !left)
      continue;
    if (gs_geom_ci_profile_find(info.model, gp, gp->name, &cp) != 0 ||
        b->ops->gi_create(b, &err, s->gpus[g], gp, -1, &gi) != 0)
      continue;
    if (b->ops->ci_create(b, &err, s->gpus[g], gi.id, cp.id, -1, &ci) != 0) {
      b->ops->gi_destroy(b, &(struct gs_err){0}, s->gpus[g], gi.id);
      continue;
    }
    if (!(o = own_add(s)) || !find_device(s, s->gpus[g], gi.id, ci.id, &dev)) {
      gs_log_warn("serve", "autoscale: GPU %u GI %u CI %u made but not usable", s->gpus[g],
                  gi.id, ci.id);
      destroy(s, &(struct own){.gpu = s->gpus[g], .gi = gi.id, .ci = ci.id});
      if (o)
        s->nown--;
      return;
    }
    *o = (struct own){.gpu = s->gpus[g], .gi = gi.id, .ci = ci.id, .st = OWN_STARTING};
    snprintf(o->uuid, sizeof(o->uuid), "%s", dev.uuid);
    /* before the worker: a crash from here on leaves a record */
    if (save(s, &err) != 0) {
      unrecorded(s, o, &err);
      return;
    }
    if (start_worker(&err, s, o, dev.name) != 0) {
      gs_log_warn("serve", "autoscale: %s", err.msg);
      destroy(s, o);
      s->nown--;
      save(s, NULL);
      return;
    }
    s->no_capacity = false;
    gs_log_info("serve", "autoscale: GPU %u GI %u CI %u (%s %s) created, worker %zu starting",
                o->gpu, o->gi, o->ci, dev.name, o->uuid, o->w);
    return;
  }
  no_capacity(s, err.msg[0] ? err.msg : "no GPU has room for one more");
}

/* The newest own serving worker, or NULL: others' slices are never shrunk. */
static struct own *newest_serving(struct gs_scale *s)
{
  for (size_t i = s->nown; i-- > 0;)
    if (s->own[i].st == OWN_SERVING)
      return &s->own[i];
  return NULL;
}

static void shrink(struct gs_scale *s, struct own *o, uint64_t now)
{
  gs_proxy_worker_admin(s->t.proxy, o->w, GS_PROXY_DRAINING);
  o->st = OWN_DRAINING;
  o->until_us = now + s->pol.cfg.drain_us;
}

/* ---- the tick ---- */

static unsigned serving(const struct gs_scale *s, unsigned *pending)
{
  unsigned n = 0;
  *pending = 0;
  for (size_t w = 0; w < gs_super_count(s->t.super); w++) {
    struct gs_super_info info;
    if (gs_super_info(s->t.super, w, &info) == 0 && !info.retired)
      n++;
  }
  for (size_t i = 0; i < s->nown; i++)
    if (s->own[i].st != OWN_SERVING) {
      (*pending)++;
      if (s->own[i].st != OWN_STOPPING && n)
        n--; /* counted above: not yet retired */
    }
  return n;
}

/* Moves own workers along: ready -> serving; drained -> retired; stopped ->
 * instances destroyed. */
static void advance(struct gs_scale *s, uint64_t now)
{
  for (size_t i = 0; i < s->nown;) {
    struct own *o = &s->own[i];
    struct gs_super_info info;
    struct gs_proxy_worker_stats st;
    if (gs_super_info(s->t.super, o->w, &info) != 0) {
      i++;
      continue;
    }
    if (o->st == OWN_STARTING && info.state == GS_SUPER_READY) {
      o->st = OWN_SERVING;
      o->pid = info.pid;
      o->pid_start = gs_proc_start(info.pid);
      save(s, NULL);
      gs_scale_policy_event(&s->pol, now);
      gs_log_info("serve", "autoscale: worker %zu on %s ready", o->w, o->uuid);
    }
    else if (o->st == OWN_SERVING && info.pid && info.pid != o->pid) {
      o->pid = info.pid; /* restarted by the supervisor */
      o->pid_start = gs_proc_start(info.pid);
      save(s, NULL);
    }
    else if (o->st == OWN_DRAINING && gs_proxy_worker_stats(s->t.proxy, o->w, &st) == 0 &&
             (!st.inflight || now >= o->until_us)) {
      gs_super_retire(s->t.super, o->w);
      o->st = OWN_STOPPING;
    }
    else if (o->st == OWN_STOPPING && info.state == GS_SUPER_STOPPED) {
      destroy(s, o);
      gs_log_info("serve", "autoscale: worker %zu stopped, GPU %u GI %u CI %u destroyed", o->w,
                  o->gpu, o->gi, o->ci);
      own_remove(s, i);
      save(s, NULL);
      s->no_capacity = false;
      gs_scale_policy_event(&s->pol, now);
      continue;
    }
    i++;
  }
}

static void render_metrics(struct gs_scale *s);

static int64_t tick(struct gs_scale *s)
{
  uint64_t counts[GS_SCALE_BUCKETS];
  const uint64_t *le;
  uint64_t now = gs_net_loop_now_us();
  unsigned pending, n;
  size_t nb = gs_proxy_latency(s->t.proxy, &le, counts, GS_SCALE_BUCKETS);
  struct gs_scale_decision *d = &s->last;
  gs_scale_observe(&s->pol, now, le, counts, nb);
  advance(s, now);
  n = serving(s, &pending);
  gs_scale_decide(&s->pol, now, n, pending, d);
  if (d->action == GS_SCALE_SHRINK && !newest_serving(s)) {
    d->action = GS_SCALE_HOLD; /* only others' slices are left to shrink */
    d->why = "nothing of its own to shrink";
  }
  if (d->action == GS_SCALE_GROW && (s->no_capacity || s->unsaved) &&
      now < s->pol.last_event_us + s->pol.cfg.cooldown_us)
    return (int64_t)s->pol.cfg.tick_us; /* asked again only after a cool-down */
  if (d->action != GS_SCALE_HOLD) {
    gs_log_info("serve", "autoscale: p%g %.1fms %s budget %.1fms over %llu requests, %u slices: "
                "%s (%s)", s->pol.cfg.percentile, (double)d->pct_us / 1e3,
                d->pct_us > s->pol.cfg.budget_us ? ">" : "<=", (double)s->pol.cfg.budget_us / 1e3,
                (unsigned long long)d->requests, n,
                d->action == GS_SCALE_GROW ? "grow" : "shrink", d->why);
  }
  if (d->action == GS_SCALE_GROW) {
    s->grows++;
    gs_scale_policy_event(&s->pol, now);
    grow(s);
  }
  else if (d->action == GS_SCALE_SHRINK) {
    s->shrinks++;
    gs_scale_policy_event(&s->pol, now);
    shrink(s, newest_serving(s), now);
  }
  return (int64_t)s->pol.cfg.tick_us;
}

static int64_t on_tick(struct gs_net_loop *loop, uint64_t id, void *data)
{
  int64_t next = tick(data);
  (void)loop;
  (void)id;
  render_metrics(data);
  return next;
}

/* ---- adoption ---- */

/* A worker a killed serve left on one of its instances: its process group
 * goes, if the pid still names the same process. */
static void kill_orphan(const struct own *o)
{
  if (o->pid > 0 && o->pid_start && gs_proc_start(o->pid) == o->pid_start) {
    kill(-o->pid, SIGKILL);
    kill(o->pid, SIGKILL);
    gs_log_info("serve", "autoscale: killed worker pid %d left on %s by an earlier serve", o->pid,
                o->uuid);
  }
}

static int adopt(struct gs_err *err, struct gs_scale *s)
{
  json_t *root, *arr, *e;
  char *text = NULL;
  size_t i, len;
  /* The file names pids to kill: only a file of ours is believed. */
  int rc = gs_file_read_private(err, s->state_path, 1u << 20, 0, &text, &len);
  if (rc == GS_E_NOT_FOUND) {
    gs_err_clear(err);
    return 0; /* none yet */
  }
  if (rc)
    return rc;
  root = json_loadb(text, len, 0, NULL);
  free(text);
  if (!root)
    return 0; /* unreadable: nothing to adopt, and the next save replaces it */
  arr = json_object_get(root, "instances");
  json_array_foreach(arr, i, e) {
    struct own *o, rec = {0};
    struct gs_mig_device dev;
    json_int_t gpu = 0, gi = 0, ci = 0, pid = 0, start = 0;
    const char *uuid = "";
    if (json_unpack(e, "{s:I, s:I, s:I, s:s, s?I, s?I}", "gpu", &gpu, "gi", &gi, "ci", &ci,
                    "uuid", &uuid, "pid", &pid, "pid_start", &start) != 0)
      continue;
    rec = (struct own){.gpu = (unsigned)gpu, .gi = (unsigned)gi, .ci = (unsigned)ci,
                       .pid = (int)pid, .pid_start = (unsigned long long)start};
    snprintf(rec.uuid, sizeof(rec.uuid), "%s", uuid);
    kill_orphan(&rec);
    if (!find_device(s, rec.gpu, rec.gi, rec.ci, &dev) || strcmp(dev.uuid, rec.uuid) != 0)
      continue; /* destroyed meanwhile: nothing to adopt */
    if (!(o = own_add(s))) {
      rc = gs_err_set(err, GS_E_NO_MEMORY, "out of memory adopting instances");
      break;
    }
    *o = rec;
    o->pid = 0;
    o->st = OWN_STARTING;
    if (!super_has(s, o->uuid, &o->w) && (rc = start_worker(err, s, o, dev.name)) != 0)
      break;
    gs_log_info("serve", "autoscale: adopted GPU %u GI %u CI %u (%s), worker %zu", o->gpu, o->gi,
                o->ci, o->uuid, o->w);
  }
  json_decref(root);
  return rc ? rc : save(s, err);
}

int gs_scale_new(struct gs_err *err, struct gs_net_loop *loop, const struct gs_scale_config *cfg,
                 const struct gs_scale_target *t, struct gs_scale **out)
{
  struct gs_scale *s = calloc(1, sizeof(*s));
  int rc;
  *out = NULL;
  if (s)
    pthread_mutex_init(&s->mu, NULL);
  if (!s || !(s->state_path = strdup(t->state_path)) || !(s->profile = strdup(t->profile)) ||
      !(s->gpus = calloc(t->ngpus ? t->ngpus : 1, sizeof(*s->gpus)))) {
    gs_scale_free(s);
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory for the autoscaler");
  }
  memcpy(s->gpus, t->gpus, t->ngpus * sizeof(*s->gpus));
  for (size_t g = 0; g < t->ngpus; g++) {
    struct gs_gpu_info info;
    if ((rc = t->backend->ops->gpu_info(t->backend, err, t->gpus[g], &info)) != 0 ||
        (!gs_geom_gi_profile_find(info.model, t->profile) &&
         (rc = gs_err_set(err, GS_E_INVALID_ARGUMENT,
                          "--grow-profile %.40s: not a MIG profile of GPU %u (%s); `gpuslice gi "
                          "profiles` lists them", t->profile, t->gpus[g], info.name)))) {
      gs_scale_free(s);
      return rc;
    }
  }
  s->t = *t;
  s->loop = loop;
  gs_scale_policy_init(&s->pol, cfg, gs_net_loop_now_us());
  render_metrics(s);
  if ((rc = adopt(err, s)) != 0 ||
      (!(s->timer = gs_net_loop_timer_add(loop, 0, on_tick, s)) &&
       (rc = gs_err_set(err, GS_E_NO_MEMORY, "out of memory for the autoscaler's timer")))) {
    gs_scale_free(s);
    return rc;
  }
  *out = s;
  return 0;
}

int gs_scale_default_state(struct gs_err *err, struct gs_backend *b, char **out)
{
  char dir[PATH_MAX];
  int n, rc;
  *out = NULL;
  if (gs_backend_emulated(b))
    n = asprintf(out, "%s.autoscale.json", gs_backend_state_base(b));
  else if ((rc = gs_file_state_dir(err, "--scale-state FILE", dir)) != 0)
    return rc;
  else
    n = asprintf(out, "%s/autoscale.json", dir);
  if (n < 0) {
    *out = NULL;
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory");
  }
  if ((rc = gs_file_make_parent(err, *out)) != 0) {
    free(*out);
    *out = NULL;
  }
  return rc;
}

static unsigned slices_now(const struct gs_scale *s)
{
  unsigned pending;
  return serving(s, &pending);
}

static void render_metrics(struct gs_scale *s)
{
  char text[sizeof(s->metrics)];
  snprintf(text, sizeof(text),
          "# HELP gpuslice_autoscale_slices Workers serving (own or not), not counting those "
          "starting or draining.\n# TYPE gpuslice_autoscale_slices gauge\n"
          "gpuslice_autoscale_slices %u\n"
          "# HELP gpuslice_autoscale_own_instances Instances the autoscaler made and holds.\n"
          "# TYPE gpuslice_autoscale_own_instances gauge\ngpuslice_autoscale_own_instances %zu\n"
          "# HELP gpuslice_autoscale_budget_seconds The latency budget.\n"
          "# TYPE gpuslice_autoscale_budget_seconds gauge\n"
          "gpuslice_autoscale_budget_seconds{quantile=\"%g\"} %g\n"
          "# HELP gpuslice_autoscale_window_latency_seconds The percentile over the window.\n"
          "# TYPE gpuslice_autoscale_window_latency_seconds gauge\n"
          "gpuslice_autoscale_window_latency_seconds{quantile=\"%g\"} %g\n"
          "# HELP gpuslice_autoscale_events_total Scale events decided.\n"
          "# TYPE gpuslice_autoscale_events_total counter\n"
          "gpuslice_autoscale_events_total{action=\"grow\"} %llu\n"
          "gpuslice_autoscale_events_total{action=\"shrink\"} %llu\n"
          "# HELP gpuslice_autoscale_no_capacity 1 while a grow found no free capacity.\n"
          "# TYPE gpuslice_autoscale_no_capacity gauge\ngpuslice_autoscale_no_capacity %d\n"
          "# HELP gpuslice_autoscale_no_capacity_total Times a grow found no free capacity.\n"
          "# TYPE gpuslice_autoscale_no_capacity_total counter\n"
          "gpuslice_autoscale_no_capacity_total %llu\n",
          slices_now(s), s->nown, s->pol.cfg.percentile / 100, (double)s->pol.cfg.budget_us / 1e6,
          s->pol.cfg.percentile / 100, (double)s->last.pct_us / 1e6,
          (unsigned long long)s->grows, (unsigned long long)s->shrinks, s->no_capacity,
          (unsigned long long)s->no_capacity_total);
  pthread_mutex_lock(&s->mu);
  memcpy(s->metrics, text, sizeof(text));
  pthread_mutex_unlock(&s->mu);
}

void gs_scale_metrics(struct gs_scale *s, FILE *f)
{
  pthread_mutex_lock(&s->mu);
  fputs(s->metrics, f);
  pthread_mutex_unlock(&s->mu);
}

char *gs_scale_json(const struct gs_scale *s)
{
  json_t *o = json_pack("{s:I, s:I, s:f, s:f, s:f, s:I, s:I, s:I, s:b, s:s, s:s, s:I, s:I}",
                        "slices", (json_int_t)slices_now(s), "own_instances",
                        (json_int_t)s->nown, "percentile", s->pol.cfg.percentile,
                        "budget_ms", (double)s->pol.cfg.budget_us / 1e3, "window_percentile_ms",
                        (double)s->last.pct_us / 1e3, "window_requests",
                        (json_int_t)s->last.requests, "grows", (json_int_t)s->grows,
                        "shrinks", (json_int_t)s->shrinks, "no_capacity", s->no_capacity,
                        "last_reason", s->last.why ? s->last.why : "", "profile", s->profile,
                        "min_slices", (json_int_t)s->pol.cfg.min_slices, "max_slices",
                        (json_int_t)s->pol.cfg.max_slices);
  char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
  json_decref(o);
  return text;
}

void gs_scale_free(struct gs_scale *s)
{
  if (!s)
    return;
  if (s->timer)
    gs_net_loop_timer_del(s->loop, s->timer);
  for (size_t i = 0; i < s->nown; i++)
    destroy(s, &s->own[i]);
  if (s->nown) {
    gs_log_info("serve", "autoscale: released %zu own instances", s->nown);
    s->nown = 0;
    save(s, NULL);
  }
  free(s->own);
  free(s->gpus);
  free(s->state_path);
  free(s->profile);
  pthread_mutex_destroy(&s->mu);
  free(s);
}
