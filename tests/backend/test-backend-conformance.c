/* SPDX-License-Identifier: Apache-2.0 */
/* test-backend-conformance.c: one script of MIG operations driven in lockstep
 * on two backends, the emulator itself and the NVML backend loaded over our
 * emulated libnvidia-ml.so.1 ($GS_NVML_EMU), each result and error code kept
 * as a line of text; the two transcripts must be equal line by line (message
 * texts may differ, codes may not). GS_CONFORMANCE_SEED / _OPS replay or
 * lengthen the random part; GS_CONFORMANCE_REQUIRE=1 fails when the library is missing. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/backend.h"
#include "../lib/gs-test-tmp.h"

#define DEFAULT_SEED 20261122u
#define DEFAULT_OPS 300
#define SHOWN_DIFFS 40          /* differing operations printed in full */
#define NO_PROFILE 1            /* "rc" of an op a side could not express */
#define PID_BASE 4190000u       /* emulated pids: above any live pid on a default pid_max */

/* ---- transcripts ---- */

struct transcript {
  char *text;
  size_t len, cap;
};

static void tr_vprintf(struct transcript *t, const char *fmt, va_list ap) GS_PRINTF(2, 0);
static void tr_vprintf(struct transcript *t, const char *fmt, va_list ap)
{
  va_list aq;
  int n;
  va_copy(aq, ap);
  n = vsnprintf(NULL, 0, fmt, aq);
  va_end(aq);
  assert_true(n >= 0);
  if (t->len + (size_t)n + 1 > t->cap) {
    size_t cap = t->cap ? t->cap : 1u << 16;
    char *p;
    while (cap < t->len + (size_t)n + 1)
      cap *= 2;
    p = realloc(t->text, cap);
    assert_non_null(p);
    t->text = p;
    t->cap = cap;
  }
  vsnprintf(t->text + t->len, t->cap - t->len, fmt, ap);
  t->len += (size_t)n;
}

static void tr_printf(struct transcript *t, const char *fmt, ...) GS_PRINTF(2, 3);
static void tr_printf(struct transcript *t, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  tr_vprintf(t, fmt, ap);
  va_end(ap);
}

/* ---- the two sides and a run ---- */

enum side_kind { SIDE_EMU, SIDE_NVML };

struct side {
  const char *label;            /* "emu", "nvml" */
  enum side_kind kind;
  struct gs_backend *b;         /* the backend under test */
  struct gs_backend *ctl;       /* an emulator on the same state file (processes) */
  char path[GS_TEST_PATH];      /* its state file */
  const struct gs_geom_model *model[GS_BACKEND_MAX_GPUS]; /* from gpu_info */
  struct transcript t;
  size_t mark;                  /* where the current operation's lines start */
};

/* Differing operations by kind ("gi_create"), for the summary. */
struct tally {
  char name[24];
  unsigned n;
};

struct outcome;

struct run {
  const char *spec;
  const char *library;          /* GS_NVML_EMU, or NULL */
  char dir[GS_TEST_DIR];
  unsigned nside;
  struct side side[2];
  unsigned op, ngpu;
  unsigned ndiff, nviolation;
  struct transcript diffs, violations;
  struct tally kinds[24];
  uint64_t rng;
  unsigned npid;                /* emulated processes the random part started */
  struct outcome *ref_out;      /* what the reference's last call filled */
};

#define FOR_SIDES(r, s) for (struct side *s = (r)->side; s < (r)->side + (r)->nside; s++)
#define REF(r) (&(r)->side[0])

static void sp(struct side *s, const char *fmt, ...) GS_PRINTF(2, 3);
static void sp(struct side *s, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  tr_vprintf(&s->t, fmt, ap);
  va_end(ap);
}

/* Starts operation r->op: its header line, identical on every side. */
static void begin_op(struct run *r, const char *fmt, ...) GS_PRINTF(2, 3);
static void begin_op(struct run *r, const char *fmt, ...)
{
  char what[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof(what), fmt, ap);
  va_end(ap);
  r->op++;
  FOR_SIDES(r, s) {
    s->mark = s->t.len;
    sp(s, "%5u %s", r->op, what);
  }
}

/* Counts a differing operation under its kind: the header's first word. */
static void tally(struct run *r, const char *header)
{
  char name[24];
  unsigned i;
  if (sscanf(header, "%*u %23s", name) != 1)
    snprintf(name, sizeof(name), "?");
  for (i = 0; i < GS_NITEMS(r->kinds) - 1 && r->kinds[i].n; i++)
    if (strcmp(r->kinds[i].name, name) == 0)
      break;
  if (!r->kinds[i].n)
    snprintf(r->kinds[i].name, sizeof(r->kinds[i].name), "%s", name);
  r->kinds[i].n++;
}

/* Ends an operation: when the sides wrote different lines, keeps both. */
static void end_op(struct run *r)
{
  const struct side *a = &r->side[0], *b = &r->side[1];
  if (r->nside < 2 || strcmp(a->t.text + a->mark, b->t.text + b->mark) == 0)
    return;
  tally(r, a->t.text + a->mark);
  if (++r->ndiff <= SHOWN_DIFFS)
    tr_printf(&r->diffs, "--- %s\n%s:\n%s%s:\n%s", r->spec, a->label, a->t.text + a->mark,
              b->label, b->t.text + b->mark);
}

/* The result of one side's call, checked against backend.h's contract: 0 or
 * a negative GS_E_* code, and a failure's code and message in the record. */
static void result(struct run *r, struct side *s, int rc, const struct gs_err *err)
{
  const char *name = gs_code_name(rc);
  if (strcmp(name, "UNKNOWN") == 0 && rc != GS_E_UNKNOWN)
    sp(s, " -> UNKNOWN(%d)", rc);
  else
    sp(s, " -> %s", name);
  if (rc <= 0 && (rc == 0 ? err->code == 0 : err->code == rc && err->msg[0] != '\0'))
    return;
  r->nviolation++;
  tr_printf(&r->violations, "%s %s: op %u returned %d with gs_err {code %d, \"%s\"}\n", r->spec,
            s->label, r->op, rc, err->code, err->msg);
}

/* ---- operations: one table of kinds; each runs on every side and returns the reference's code ---- */

enum op_id {
  OP_GPU_COUNT, OP_GPU_INFO, OP_SET_MIG, OP_GI_REMAINING, OP_GI_CREATE, OP_GI_DESTROY, OP_GI_LIST,
  OP_CI_REMAINING, OP_CI_CREATE, OP_CI_DESTROY, OP_CI_LIST, OP_MIG_DEVICES, OP_PROCESSES,
  OP_PROC_ADD, OP_PROC_REMOVE, OP_RESET_BLOCKED,
};

/* One operation and its arguments; each kind reads the fields its header names. */
struct args {
  enum op_id op;
  unsigned gpu, ci_profile, pid;
  int gi, ci;                             /* proc_add: -1 outside MIG */
  int start;                              /* < 0: the driver chooses */
  bool on;                                /* set_mig: enable; reset_blocked: blocked */
  const char *name;                       /* a GI profile, each side's own of that name */
  const struct gs_geom_gi_profile *fixed; /* or this one (another model's) */
};

/* What one side's call filled: printed, and the reference's kept for the script. */
struct outcome {
  unsigned n;
  int activation;
  struct gs_gpu_info info;
  struct gs_gi_info gi[GS_GEOM_MAX_INSTANCES];
  struct gs_ci_info ci[GS_GEOM_MAX_INSTANCES];
  struct gs_mig_device dev[GS_BACKEND_MAX_MIG_DEVICES];
  struct gs_proc_info proc[GS_BACKEND_MAX_PROCS];
};

#define ACTIVATION_UNSET 12345

static void print_gi_profile(struct side *s, const struct gs_geom_gi_profile *p)
{
  sp(s, "\n      %s id=%u enum=%u slices=%u span=%u memory=%u sms=%u ce=%u dec=%u enc=%u jpeg=%u "
        "ofa=%u max=%u starts=0x%x media=%d gfx=%d",
     p->name, p->id, p->nvml_enum, p->compute_slices, p->span, p->memory_mib, p->sms, p->ce, p->dec,
     p->enc, p->jpeg, p->ofa, p->max_count, p->starts, (int)p->media, p->gfx);
}

static void print_ci_profile(struct side *s, const struct gs_geom_ci_profile *c)
{
  sp(s, " %s/%u slices=%u span=%u sms=%u max=%u starts=0x%x default=%d", c->name, c->id,
     c->compute_slices, c->span, c->sms, c->max_count, c->starts, c->is_default);
}

static void print_gi(struct side *s, const struct gs_gi_info *g)
{
  sp(s, " id=%u gpu=%u profile=%s/%u at=%u:%u", g->id, g->gpu, g->profile ? g->profile->name : "(null)",
     g->profile ? g->profile->id : 0, g->start, g->span);
}

static void print_ci(struct side *s, const struct gs_ci_info *c)
{
  sp(s, " id=%u gpu=%u gi=%u profile=", c->id, c->gpu, c->gi);
  print_ci_profile(s, &c->profile);
  sp(s, " at=%u:%u", c->start, c->span);
}

static void print_mig(struct side *s, const struct gs_mig_device *d)
{
  sp(s, "\n      dev %u gpu=%u gi=%u ci=%u uuid=%s legacy=%s name=%s gi_profile=%s/%u memory=%u "
        "sms=%u",
     d->index, d->gpu, d->gi, d->ci, d->uuid, d->legacy_uuid, d->name,
     d->gi_profile ? d->gi_profile->name : "(null)", d->gi_profile ? d->gi_profile->id : 0,
     d->memory_mib, d->sms);
}

static int by_pid(const void *a, const void *b)
{
  const struct gs_proc_info *x = a, *y = b;
  return (x->pid > y->pid) - (x->pid < y->pid);
}

/* ---- each kind: the call on one side, and what its success prints ---- */

static int call_gpu_count(struct side *s, struct gs_err *err, const struct args *a, struct outcome *o)
{
  (void)a;
  return s->b->ops->gpu_count(s->b, err, &o->n);
}

static void show_n(struct side *s, const struct args *a, struct outcome *o)
{
  (void)a;
  sp(s, " n=%u", o->n);
}

static int call_gpu_info(struct side *s, struct gs_err *err, const struct args *a, struct outcome *o)
{
  return s->b->ops->gpu_info(s->b, err, a->gpu, &o->info);
}

static void show_gpu_info(struct side *s, const struct args *a, struct outcome *o)
{
  const struct gs_gpu_info *in = &o->info;
  sp(s, " index=%u name=\"%s\" uuid=%s pci=%s model=%s mig=%d/%d memory=%u", in->index, in->name,
     in->uuid, in->pci_bus_id, in->model ? in->model->key : "(null)", in->mig_current,
     in->mig_pending, in->memory_mib);
  if (a->gpu < GS_BACKEND_MAX_GPUS)
    s->model[a->gpu] = in->model;
}

static int call_set_mig(struct side *s, struct gs_err *err, const struct args *a, struct outcome *o)
{
  o->activation = ACTIVATION_UNSET;
  return s->b->ops->set_mig_mode(s->b, err, a->gpu, a->on, &o->activation);
}

static void show_activation(struct side *s, const struct args *a, struct outcome *o)
{
  (void)a;
  sp(s, " activation=%s",
     o->activation == ACTIVATION_UNSET ? "(unset)" : gs_code_name(o->activation));
}

/* The GI profile a call passes on side s: the fixed one, or its own by name
 * (NULL, said in the transcript, when its model has none of that name). */
static const struct gs_geom_gi_profile *side_profile(struct side *s, const struct args *a)
{
  const struct gs_geom_model *m =
      s->model[a->gpu < GS_BACKEND_MAX_GPUS && s->model[a->gpu] ? a->gpu : 0];
  for (unsigned i = 0; !a->fixed && m && i < m->ngi; i++)
    if (strcmp(m->gi[i].name, a->name) == 0)
      return &m->gi[i];
  if (!a->fixed)
    sp(s, " -> (this backend's model of GPU %u has no profile %s)", a->gpu, a->name);
  return a->fixed;
}

static int call_gi_remaining(struct side *s, struct gs_err *err, const struct args *a,
                             struct outcome *o)
{
  const struct gs_geom_gi_profile *p = side_profile(s, a);
  return p ? s->b->ops->gi_remaining(s->b, err, a->gpu, p, &o->n) : NO_PROFILE;
}

static int call_gi_create(struct side *s, struct gs_err *err, const struct args *a,
                          struct outcome *o)
{
  const struct gs_geom_gi_profile *p = side_profile(s, a);
  return p ? s->b->ops->gi_create(s->b, err, a->gpu, p, a->start, &o->gi[0]) : NO_PROFILE;
}

static void show_gi(struct side *s, const struct args *a, struct outcome *o)
{
  (void)a;
  print_gi(s, &o->gi[0]);
}

static int call_gi_destroy(struct side *s, struct gs_err *err, const struct args *a,
                           struct outcome *o)
{
  (void)o;
  return s->b->ops->gi_destroy(s->b, err, a->gpu, (unsigned)a->gi);
}

static int call_gi_list(struct side *s, struct gs_err *err, const struct args *a, struct outcome *o)
{
  return s->b->ops->gi_list(s->b, err, a->gpu, o->gi, &o->n);
}

static void show_gis(struct side *s, const struct args *a, struct outcome *o)
{
  show_n(s, a, o);
  assert_true(o->n <= GS_GEOM_MAX_INSTANCES);
  for (unsigned i = 0; i < o->n; i++) {
    sp(s, "\n      gi");
    print_gi(s, &o->gi[i]);
  }
}

static int call_ci_remaining(struct side *s, struct gs_err *err, const struct args *a,
                             struct outcome *o)
{
  return s->b->ops->ci_remaining(s->b, err, a->gpu, (unsigned)a->gi, a->ci_profile, &o->n);
}

static int call_ci_create(struct side *s, struct gs_err *err, const struct args *a,
                          struct outcome *o)
{
  return s->b->ops->ci_create(s->b, err, a->gpu, (unsigned)a->gi, a->ci_profile, a->start,
                              &o->ci[0]);
}

static void show_ci(struct side *s, const struct args *a, struct outcome *o)
{
  (void)a;
  print_ci(s, &o->ci[0]);
}

static int call_ci_destroy(struct side *s, struct gs_err *err, const struct args *a,
                           struct outcome *o)
{
  (void)o;
  return s->b->ops->ci_destroy(s->b, err, a->gpu, (unsigned)a->gi, (unsigned)a->ci);
}

static int call_ci_list(struct side *s, struct gs_err *err, const struct args *a, struct outcome *o)
{
  return s->b->ops->ci_list(s->b, err, a->gpu, (unsigned)a->gi, o->ci, &o->n);
}

static void show_cis(struct side *s, const struct args *a, struct outcome *o)
{
  show_n(s, a, o);
  assert_true(o->n <= GS_GEOM_MAX_INSTANCES);
  for (unsigned i = 0; i < o->n; i++) {
    sp(s, "\n      ci");
    print_ci(s, &o->ci[i]);
  }
}

static int call_mig_devices(struct side *s, struct gs_err *err, const struct args *a,
                            struct outcome *o)
{
  return s->b->ops->mig_devices(s->b, err, a->gpu, o->dev, &o->n);
}

static void show_migs(struct side *s, const struct args *a, struct outcome *o)
{
  show_n(s, a, o);
  assert_true(o->n <= GS_BACKEND_MAX_MIG_DEVICES);
  for (unsigned i = 0; i < o->n; i++)
    print_mig(s, &o->dev[i]);
}

static int call_processes(struct side *s, struct gs_err *err, const struct args *a,
                          struct outcome *o)
{
  return s->b->ops->processes(s->b, err, a->gpu, o->proc, &o->n);
}

/* In pid order: neither backend promises an order. */
static void show_procs(struct side *s, const struct args *a, struct outcome *o)
{
  show_n(s, a, o);
  assert_true(o->n <= GS_BACKEND_MAX_PROCS);
  qsort(o->proc, o->n, sizeof(o->proc[0]), by_pid);
  for (unsigned i = 0; i < o->n; i++)
    sp(s, "\n      pid %u name=%s gpu=%u gi=%d ci=%d used=%u", o->proc[i].pid, o->proc[i].name,
       o->proc[i].gpu, o->proc[i].gi, o->proc[i].ci, o->proc[i].used_mib);
}

/* Emulator controls go to each side's emulator on its own state file: for the
 * NVML side, that is the machine libnvidia-ml.so.1 reads. */
static int call_proc_add(struct side *s, struct gs_err *err, const struct args *a,
                         struct outcome *o)
{
  struct gs_proc_info p = {.pid = a->pid, .gpu = a->gpu, .gi = a->gi, .ci = a->ci, .used_mib = 1024};
  (void)o;
  snprintf(p.name, sizeof(p.name), "conformance-%u", a->pid);
  return gs_emu_proc_add(s->ctl, err, &p);
}

static int call_proc_remove(struct side *s, struct gs_err *err, const struct args *a,
                            struct outcome *o)
{
  (void)o;
  return gs_emu_proc_remove(s->ctl, err, a->pid);
}

static int call_reset_blocked(struct side *s, struct gs_err *err, const struct args *a,
                              struct outcome *o)
{
  (void)o;
  return gs_emu_set_reset_blocked(s->ctl, err, a->gpu, a->on);
}

/* The arguments an operation's header names. */
enum {
  F_GPU = 1, F_GI = 2, F_CI = 4, F_PROFILE = 8, F_CI_PROFILE = 16, F_START = 32, F_PID = 64,
  F_ON = 128, F_CONTROL = 256,
};

static const struct op_kind {
  const char *name;
  unsigned fields;
  int (*call)(struct side *s, struct gs_err *err, const struct args *a, struct outcome *o);
  void (*show)(struct side *s, const struct args *a, struct outcome *o); /* on success; may be NULL */
} op_kinds[] = {
    [OP_GPU_COUNT] = {"gpu_count", 0, call_gpu_count, show_n},
    [OP_GPU_INFO] = {"gpu_info", F_GPU, call_gpu_info, show_gpu_info},
    [OP_SET_MIG] = {"set_mig_mode", F_GPU | F_ON, call_set_mig, show_activation},
    [OP_GI_REMAINING] = {"gi_remaining", F_GPU | F_PROFILE, call_gi_remaining, show_n},
    [OP_GI_CREATE] = {"gi_create", F_GPU | F_PROFILE | F_START, call_gi_create, show_gi},
    [OP_GI_DESTROY] = {"gi_destroy", F_GPU | F_GI, call_gi_destroy, NULL},
    [OP_GI_LIST] = {"gi_list", F_GPU, call_gi_list, show_gis},
    [OP_CI_REMAINING] = {"ci_remaining", F_GPU | F_GI | F_CI_PROFILE, call_ci_remaining, show_n},
    [OP_CI_CREATE] = {"ci_create", F_GPU | F_GI | F_CI_PROFILE | F_START, call_ci_create, show_ci},
    [OP_CI_DESTROY] = {"ci_destroy", F_GPU | F_GI | F_CI, call_ci_destroy, NULL},
    [OP_CI_LIST] = {"ci_list", F_GPU | F_GI, call_ci_list, show_cis},
    [OP_MIG_DEVICES] = {"mig_devices", F_GPU, call_mig_devices, show_migs},
    [OP_PROCESSES] = {"processes", F_GPU, call_processes, show_procs},
    [OP_PROC_ADD] = {"proc_add", F_PID | F_GPU | F_GI | F_CI | F_CONTROL, call_proc_add, NULL},
    [OP_PROC_REMOVE] = {"proc_remove", F_PID | F_CONTROL, call_proc_remove, NULL},
    [OP_RESET_BLOCKED] = {"reset_blocked", F_GPU | F_ON | F_CONTROL, call_reset_blocked, NULL},
};

/* "gi_create gpu=0 profile=1g.5gb start=auto", the same on every side. */
static void header(const struct args *a, char *out, size_t size)
{
  const struct op_kind *k = &op_kinds[a->op];
  size_t len = (size_t)snprintf(out, size, "%s", k->name);
#define ADD(...) len += (size_t)snprintf(out + len, len < size ? size - len : 0, __VA_ARGS__)
  if (k->fields & F_PID)
    ADD(" pid=%u", a->pid);
  if (k->fields & F_GPU)
    ADD(" gpu=%u", a->gpu);
  if (k->fields & F_GI)
    ADD(" gi=%d", a->gi);
  if (k->fields & F_CI)
    ADD(" ci=%d", a->ci);
  if (k->fields & F_PROFILE)
    ADD(" profile=%s%s", a->fixed ? a->fixed->name : a->name, a->fixed ? " (another model's)" : "");
  if (k->fields & F_CI_PROFILE)
    ADD(" ci_profile=%u", a->ci_profile);
  if (k->fields & F_START) {
    if (a->start < 0)
      ADD(" start=auto");
    else
      ADD(" start=%d", a->start);
  }
  if (k->fields & F_ON)
    ADD(" %s", a->on ? "on" : "off");
  if (k->fields & F_CONTROL)
    ADD(" (emulator control)");
#undef ADD
}

/* Runs one operation on every side; returns the reference's code, and leaves
 * what the reference's call filled in r->ref_out until the next operation. */
static int run_op(struct run *r, const struct args *a)
{
  static struct outcome outs[2]; /* large: kept off the stack */
  const struct op_kind *k = &op_kinds[a->op];
  char what[256];
  int rc0 = 0;
  header(a, what, sizeof(what));
  begin_op(r, "%s", what);
  FOR_SIDES(r, s) {
    struct outcome *o = &outs[s - r->side];
    struct gs_err err = {0};
    int rc;
    memset(o, 0, sizeof(*o));
    rc = k->call(s, &err, a, o);
    if (rc != NO_PROFILE) {
      result(r, s, rc, &err);
      if (rc == 0 && k->show)
        k->show(s, a, o);
    }
    sp(s, "\n");
    if (s == REF(r))
      rc0 = rc;
  }
  end_op(r);
  r->ref_out = &outs[0];
  return rc0;
}

/* The script's shorthands. */
static int op_gpu_count(struct run *r)
{
  int rc = run_op(r, &(struct args){.op = OP_GPU_COUNT});
  r->ngpu = r->ref_out->n;
  assert_true(r->ngpu > 0 && r->ngpu <= GS_BACKEND_MAX_GPUS);
  return rc;
}

static int op_gpu_info(struct run *r, unsigned gpu)
{
  return run_op(r, &(struct args){.op = OP_GPU_INFO, .gpu = gpu});
}

static int op_set_mig(struct run *r, unsigned gpu, bool enable)
{
  return run_op(r, &(struct args){.op = OP_SET_MIG, .gpu = gpu, .on = enable});
}

static int op_gi_remaining(struct run *r, unsigned gpu, const char *name)
{
  return run_op(r, &(struct args){.op = OP_GI_REMAINING, .gpu = gpu, .name = name});
}

static int op_gi_create(struct run *r, unsigned gpu, const char *name, int start,
                        struct gs_gi_info *out)
{
  int rc = run_op(r, &(struct args){.op = OP_GI_CREATE, .gpu = gpu, .name = name, .start = start});
  if (out)
    *out = r->ref_out->gi[0];
  return rc;
}

static int op_gi_destroy(struct run *r, unsigned gpu, unsigned id)
{
  return run_op(r, &(struct args){.op = OP_GI_DESTROY, .gpu = gpu, .gi = (int)id});
}

/* The lists copy the reference's entries to out (may be NULL). */
static int op_gi_list(struct run *r, unsigned gpu, struct gs_gi_info out[GS_GEOM_MAX_INSTANCES],
                      unsigned *count)
{
  int rc = run_op(r, &(struct args){.op = OP_GI_LIST, .gpu = gpu});
  if (out)
    memcpy(out, r->ref_out->gi, sizeof(r->ref_out->gi));
  if (count)
    *count = rc == 0 ? r->ref_out->n : 0;
  return rc;
}

static int op_ci_remaining(struct run *r, unsigned gpu, unsigned gi, unsigned profile)
{
  return run_op(r, &(struct args){.op = OP_CI_REMAINING, .gpu = gpu, .gi = (int)gi,
                                  .ci_profile = profile});
}

static int op_ci_create(struct run *r, unsigned gpu, unsigned gi, unsigned profile, int start,
                        struct gs_ci_info *out)
{
  int rc = run_op(r, &(struct args){.op = OP_CI_CREATE, .gpu = gpu, .gi = (int)gi,
                                    .ci_profile = profile, .start = start});
  if (out)
    *out = r->ref_out->ci[0];
  return rc;
}

static int op_ci_destroy(struct run *r, unsigned gpu, unsigned gi, unsigned id)
{
  return run_op(r, &(struct args){.op = OP_CI_DESTROY, .gpu = gpu, .gi = (int)gi, .ci = (int)id});
}

static int op_ci_list(struct run *r, unsigned gpu, unsigned gi,
                      struct gs_ci_info out[GS_GEOM_MAX_INSTANCES], unsigned *count)
{
  int rc = run_op(r, &(struct args){.op = OP_CI_LIST, .gpu = gpu, .gi = (int)gi});
  if (out)
    memcpy(out, r->ref_out->ci, sizeof(r->ref_out->ci));
  if (count)
    *count = rc == 0 ? r->ref_out->n : 0;
  return rc;
}

static int op_mig_devices(struct run *r, unsigned gpu, struct gs_mig_device *out, unsigned *count)
{
  int rc = run_op(r, &(struct args){.op = OP_MIG_DEVICES, .gpu = gpu});
  if (out)
    memcpy(out, r->ref_out->dev, sizeof(r->ref_out->dev));
  if (count)
    *count = rc == 0 ? r->ref_out->n : 0;
  return rc;
}

static int op_processes(struct run *r, unsigned gpu)
{
  return run_op(r, &(struct args){.op = OP_PROCESSES, .gpu = gpu});
}

static int op_proc_add(struct run *r, unsigned pid, unsigned gpu, int gi, int ci)
{
  return run_op(r, &(struct args){.op = OP_PROC_ADD, .pid = pid, .gpu = gpu, .gi = gi, .ci = ci});
}

static int op_proc_remove(struct run *r, unsigned pid)
{
  return run_op(r, &(struct args){.op = OP_PROC_REMOVE, .pid = pid});
}

static int op_reset_blocked(struct run *r, unsigned gpu, bool blocked)
{
  return run_op(r, &(struct args){.op = OP_RESET_BLOCKED, .gpu = gpu, .on = blocked});
}

/* The model a side's gpu_info returned: every GI profile and its CI profiles. */
static void op_model(struct run *r, unsigned gpu)
{
  begin_op(r, "model of gpu=%u", gpu);
  FOR_SIDES(r, s) {
    const struct gs_geom_model *m = s->model[gpu];
    if (!m) {
      sp(s, " -> (none)\n");
      continue;
    }
    sp(s, " -> key=%s name=\"%s\" pci=0x%08X arch=%d compute=%u grid=%u leaf=%u memory=%u sms=%u "
          "profiles=%u",
       m->key, m->name, m->pci_id, (int)m->arch, m->compute_slices, m->grid, m->leaf_span,
       m->memory_mib, m->sms, m->ngi);
    for (unsigned i = 0; i < m->ngi; i++) {
      struct gs_geom_ci_profile cis[GS_GEOM_MAX_CI_PROFILES];
      unsigned n = gs_geom_ci_profiles(m, &m->gi[i], cis);
      print_gi_profile(s, &m->gi[i]);
      sp(s, "\n        ci:");
      for (unsigned k = 0; k < n; k++)
        print_ci_profile(s, &cis[k]);
    }
    sp(s, "\n");
  }
  end_op(r);
}

/* ---- opening and closing the sides ---- */

static void open_side(struct run *r, struct side *s)
{
  struct gs_backend_config emu = {.kind = "emu", .emulate = r->spec, .state_path = s->path};
  struct gs_backend_config nvml = {.kind = "nvml", .nvml_library = r->library};
  struct gs_err err = {0};
  int rc;
  memset(s->model, 0, sizeof(s->model));
  if (s->kind == SIDE_EMU) {
    rc = gs_backend_open(&err, &emu, &s->b);
    result(r, s, rc, &err);
    s->ctl = s->b;
  } else {
    /* The library opens its emulator in nvmlInit, from these two. */
    assert_int_equal(setenv("GPUSLICE_EMU_STATE", s->path, 1), 0);
    assert_int_equal(setenv("GPUSLICE_EMULATE", r->spec, 1), 0);
    rc = gs_backend_open(&err, &nvml, &s->b);
    result(r, s, rc, &err);
    if (rc == 0 && !s->ctl && gs_backend_open(&err, &emu, &s->ctl) != 0)
      fail_msg("%s: cannot open the emulator control on %s: %s", r->spec, s->path, err.msg);
  }
  sp(s, "\n");
  if (rc != 0)
    fail_msg("%s: cannot open the %s backend: %s", r->spec, s->label, err.msg);
}

static void op_open(struct run *r)
{
  begin_op(r, "open spec=%s", r->spec);
  FOR_SIDES(r, s)
    open_side(r, s);
  end_op(r);
}

/* Closes the backends under test (the controls stay) and opens them again:
 * the NVML backend then reads its profiles from the driver, MIG being on. */
static void op_reopen(struct run *r)
{
  FOR_SIDES(r, s) {
    if (s->ctl == s->b)
      s->ctl = NULL;
    gs_backend_close(s->b);
    s->b = NULL;
  }
  op_open(r);
}

static void close_sides(struct run *r)
{
  FOR_SIDES(r, s) {
    if (s->ctl && s->ctl != s->b)
      gs_backend_close(s->ctl);
    gs_backend_close(s->b);
    s->b = s->ctl = NULL;
  }
}

/* ---- the script ---- */

static const struct gs_geom_model *ref_model(const struct run *r, unsigned gpu)
{
  const struct gs_geom_model *m = r->side[0].model[gpu];
  assert_non_null(m);
  return m;
}

/* gpu_count, every gpu_info and model, and out-of-range GPU indexes. */
static void inventory(struct run *r)
{
  op_gpu_count(r);
  for (unsigned g = 0; g < r->ngpu; g++) {
    op_gpu_info(r, g);
    op_model(r, g);
  }
  op_gpu_info(r, r->ngpu);
  op_gpu_info(r, 1000);
}

/* Every GI, CI, device and process call once, with ids that would be valid
 * on a GPU in MIG mode; `gpu` and the GI profile's name are filled in. */
static const struct args every_call[] = {
    {.op = OP_GI_REMAINING},
    {.op = OP_GI_CREATE, .start = -1},
    {.op = OP_GI_CREATE, .start = 0},
    {.op = OP_GI_LIST},
    {.op = OP_GI_DESTROY, .gi = 0},
    {.op = OP_GI_DESTROY, .gi = 7},
    {.op = OP_CI_REMAINING, .gi = 0, .ci_profile = 0},
    {.op = OP_CI_CREATE, .gi = 0, .ci_profile = 0, .start = -1},
    {.op = OP_CI_CREATE, .gi = 0, .ci_profile = 0, .start = 0},
    {.op = OP_CI_LIST, .gi = 0},
    {.op = OP_CI_DESTROY, .gi = 0, .ci = 0},
    {.op = OP_MIG_DEVICES},
    {.op = OP_PROCESSES},
};

static void every_call_on(struct run *r, unsigned gpu, const char *profile)
{
  for (size_t i = 0; i < GS_NITEMS(every_call); i++) {
    struct args a = every_call[i];
    a.gpu = gpu;
    a.name = profile;
    run_op(r, &a);
  }
}

/* Every GI/CI call refused with MIG disabled (every profile's remaining
 * count); the device and process lists. */
static void mig_disabled(struct run *r, unsigned gpu)
{
  const struct gs_geom_model *m = ref_model(r, gpu);
  for (unsigned k = 1; k < m->ngi; k++)
    op_gi_remaining(r, gpu, m->gi[k].name);
  every_call_on(r, gpu, m->gi[0].name);
}

/* A process outside MIG holds the GPU while MIG is enabled: Ampere leaves
 * the mode pending (activation IN_USE), Hopper refuses (reference §9). Then
 * a GPU that may not be reset (VM passthrough): RESET_REQUIRED on Ampere. */
static void mig_pending(struct run *r, unsigned gpu)
{
  unsigned pid = PID_BASE + gpu;
  op_set_mig(r, gpu, false);
  op_proc_add(r, pid, gpu, -1, -1);
  op_processes(r, gpu);
  op_set_mig(r, gpu, true);
  op_gpu_info(r, gpu);
  op_gi_create(r, gpu, ref_model(r, gpu)->gi[0].name, -1, NULL);
  op_gi_list(r, gpu, NULL, NULL);
  op_mig_devices(r, gpu, NULL, NULL);
  op_proc_remove(r, pid);
  op_processes(r, gpu);
  op_set_mig(r, gpu, false);
  op_reset_blocked(r, gpu, true);
  op_set_mig(r, gpu, true);
  op_gpu_info(r, gpu);
  op_gi_remaining(r, gpu, ref_model(r, gpu)->gi[0].name);
  op_reset_blocked(r, gpu, false);
}

/* With MIG on, a process outside MIG holds the GPU while MIG is disabled:
 * Ampere keeps MIG on with disable pending, and GPU instances can still be
 * made; Hopper refuses. */
static void mig_pending_disable(struct run *r, unsigned gpu)
{
  unsigned pid = PID_BASE + 50 + gpu;
  op_proc_add(r, pid, gpu, -1, -1);
  op_set_mig(r, gpu, false);
  op_gpu_info(r, gpu);
  op_gi_remaining(r, gpu, ref_model(r, gpu)->gi[0].name);
  op_mig_devices(r, gpu, NULL, NULL);
  op_proc_remove(r, pid);
  op_set_mig(r, gpu, true);
  op_gpu_info(r, gpu);
}

/* One side destroys every CI and GI it has on gpu, by its own lists, so that
 * a difference earlier on does not spill into the next part of the script. */
static void clear_side(struct run *r, struct side *s, unsigned gpu)
{
  struct gs_gi_info gis[GS_GEOM_MAX_INSTANCES];
  struct gs_err err = {0};
  unsigned ngi = 0;
  int rc = s->b->ops->gi_list(s->b, &err, gpu, gis, &ngi);
  result(r, s, rc, &err);
  for (unsigned i = 0; rc == 0 && i < ngi && i < GS_GEOM_MAX_INSTANCES; i++) {
    struct gs_ci_info cis[GS_GEOM_MAX_INSTANCES];
    unsigned nci = 0;
    gs_err_clear(&err);
    if (s->b->ops->ci_list(s->b, &err, gpu, gis[i].id, cis, &nci) != 0)
      nci = 0;
    for (unsigned k = 0; k < nci && k < GS_GEOM_MAX_INSTANCES; k++) {
      gs_err_clear(&err);
      sp(s, "\n      ci_destroy gi=%u ci=%u", gis[i].id, cis[k].id);
      result(r, s, s->b->ops->ci_destroy(s->b, &err, gpu, gis[i].id, cis[k].id), &err);
    }
    gs_err_clear(&err);
    sp(s, "\n      gi_destroy gi=%u", gis[i].id);
    result(r, s, s->b->ops->gi_destroy(s->b, &err, gpu, gis[i].id), &err);
  }
  sp(s, "\n");
}

static void clear_gpu(struct run *r, unsigned gpu)
{
  begin_op(r, "clear gpu=%u (each side by its own lists)", gpu);
  FOR_SIDES(r, s)
    clear_side(r, s, gpu);
  end_op(r);
  op_gi_list(r, gpu, NULL, NULL);
}

/* Per profile: remaining counts, driver-placed creates until the GPU is
 * full (INSUFFICIENT_RESOURCES), the list, what remains of every profile. */
static void gi_auto_fill(struct run *r, unsigned gpu)
{
  const struct gs_geom_model *m = ref_model(r, gpu);
  for (unsigned k = 0; k < m->ngi; k++)
    op_gi_remaining(r, gpu, m->gi[k].name);
  for (unsigned k = 0; k < m->ngi; k++) {
    for (unsigned tries = 0; tries <= GS_GEOM_MAX_INSTANCES; tries++)
      if (op_gi_create(r, gpu, m->gi[k].name, -1, NULL) != 0)
        break;
    op_gi_list(r, gpu, NULL, NULL);
    for (unsigned j = 0; j < m->ngi; j++)
      op_gi_remaining(r, gpu, m->gi[j].name);
    op_mig_devices(r, gpu, NULL, NULL);
    clear_gpu(r, gpu);
  }
}

/* Per profile: every start of the grid and a few past it (legal: created and
 * destroyed; illegal: INVALID_ARGUMENT), then a taken start
 * (INSUFFICIENT_RESOURCES), then a profile of another model. */
static void gi_explicit(struct run *r, unsigned gpu)
{
  const struct gs_geom_model *m = ref_model(r, gpu);
  const struct gs_geom_model *other = gs_geom_model_find(m->arch == GS_GEOM_AMPERE && m->grid == 8
                                                             ? "h100-80gb"
                                                             : "a100-40gb");
  for (unsigned k = 0; k < m->ngi; k++) {
    const struct gs_geom_gi_profile *p = &m->gi[k];
    struct gs_gi_info gi;
    int first = -1;
    for (unsigned s = 0; s <= m->grid + 1; s++)
      if (op_gi_create(r, gpu, p->name, (int)s, &gi) == 0) {
        first = first < 0 ? (int)s : first;
        op_gi_destroy(r, gpu, gi.id);
      }
    op_gi_create(r, gpu, p->name, 1000, NULL);
    assert_true(first >= 0);
    op_gi_create(r, gpu, p->name, first, &gi);
    op_gi_create(r, gpu, p->name, first, NULL);
    op_gi_remaining(r, gpu, p->name);
    op_gi_destroy(r, gpu, gi.id);
  }
  assert_non_null(other);
  run_op(r, &(struct args){.op = OP_GI_REMAINING, .gpu = gpu, .fixed = &other->gi[0]});
  run_op(r, &(struct args){.op = OP_GI_CREATE, .gpu = gpu, .fixed = &other->gi[0], .start = -1});
  clear_gpu(r, gpu);
}

/* Inside one GI of profile p: one CI profile filled by the driver, listed,
 * emptied, then placed at every start and a taken one. */
static void ci_profile_script(struct run *r, unsigned gpu, unsigned gi,
                              const struct gs_geom_gi_profile *p, const struct gs_geom_ci_profile *cp)
{
  struct gs_ci_info cis[GS_GEOM_MAX_INSTANCES], ci;
  unsigned n = 0;
  int first = -1;
  for (unsigned tries = 0; tries <= GS_GEOM_MAX_INSTANCES; tries++)
    if (op_ci_create(r, gpu, gi, cp->id, -1, NULL) != 0)
      break;
  op_ci_list(r, gpu, gi, cis, &n);
  op_ci_remaining(r, gpu, gi, cp->id);
  op_mig_devices(r, gpu, NULL, NULL);
  for (unsigned i = 0; i < n; i++)
    op_ci_destroy(r, gpu, gi, cis[i].id);
  for (unsigned s = 0; s <= p->compute_slices + 1; s++)
    if (op_ci_create(r, gpu, gi, cp->id, (int)s, &ci) == 0) {
      first = first < 0 ? (int)s : first;
      op_ci_destroy(r, gpu, gi, ci.id);
    }
  op_ci_create(r, gpu, gi, cp->id, 1000, NULL);
  assert_true(first >= 0);
  op_ci_create(r, gpu, gi, cp->id, first, &ci);
  op_ci_create(r, gpu, gi, cp->id, first, NULL);
  op_ci_destroy(r, gpu, gi, ci.id);
}

/* Per GI profile: one GI; every CI profile id 0..9 and 99 counted; each of
 * its CI profiles scripted; ids it lacks refused on create. */
static void ci_script(struct run *r, unsigned gpu)
{
  static const unsigned ids[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 99};
  const struct gs_geom_model *m = ref_model(r, gpu);
  for (unsigned k = 0; k < m->ngi; k++) {
    struct gs_geom_ci_profile cps[GS_GEOM_MAX_CI_PROFILES];
    unsigned ncp = gs_geom_ci_profiles(m, &m->gi[k], cps);
    struct gs_gi_info gi;
    if (op_gi_create(r, gpu, m->gi[k].name, -1, &gi) != 0)
      fail_msg("%s: GPU %u: cannot create %s on an empty GPU", r->spec, gpu, m->gi[k].name);
    for (unsigned i = 0; i < GS_NITEMS(ids); i++)
      op_ci_remaining(r, gpu, gi.id, ids[i]);
    for (unsigned c = 0; c < ncp; c++)
      ci_profile_script(r, gpu, gi.id, &m->gi[k], &cps[c]);
    for (unsigned i = 0; i < GS_NITEMS(ids); i++)
      op_ci_create(r, gpu, gi.id, ids[i], -1, NULL);
    op_ci_create(r, gpu, gi.id, 99, 0, NULL);
    clear_gpu(r, gpu);
  }
}

/* A mixed layout with CIs: MIG devices, a process on one of them, and the
 * IN_USE refusals it and the CIs cause; unknown ids. */
static void in_use(struct run *r, unsigned gpu)
{
  const struct gs_geom_model *m = ref_model(r, gpu);
  struct gs_mig_device devs[GS_BACKEND_MAX_MIG_DEVICES];
  struct gs_gi_info gis[GS_GEOM_MAX_INSTANCES];
  unsigned ngi = 0, ndev = 0, pid = PID_BASE + 100 + gpu;
  /* Profiles of at most half the GPU, widest first: a mixed layout. */
  for (unsigned c = m->compute_slices; c > 0; c--)
    for (unsigned k = 0; k < m->ngi; k++)
      if (m->gi[k].compute_slices == c && 2 * c <= m->compute_slices)
        op_gi_create(r, gpu, m->gi[k].name, -1, NULL);
  op_gi_list(r, gpu, gis, &ngi);
  for (unsigned i = 0; i < ngi; i++) {
    op_ci_create(r, gpu, gis[i].id, 0, -1, NULL);
    op_ci_create(r, gpu, gis[i].id, 0, -1, NULL);
    op_ci_list(r, gpu, gis[i].id, NULL, NULL);
  }
  op_mig_devices(r, gpu, devs, &ndev);
  op_processes(r, gpu);
  assert_true(ndev > 0);
  /* A fresh open sees the same instances (the NVML side reloads the library). */
  op_reopen(r);
  for (unsigned g = 0; g < r->ngpu; g++)
    op_gpu_info(r, g);
  op_mig_devices(r, gpu, NULL, NULL);
  op_proc_add(r, pid, gpu, (int)devs[0].gi, (int)devs[0].ci);
  op_processes(r, gpu);
  op_ci_destroy(r, gpu, devs[0].gi, devs[0].ci);
  op_gi_destroy(r, gpu, devs[0].gi);
  op_set_mig(r, gpu, false);
  op_proc_remove(r, pid);
  op_processes(r, gpu);
  for (unsigned i = 0; i < ngi; i++)
    op_gi_destroy(r, gpu, gis[i].id);
  op_gi_destroy(r, gpu, 99);
  op_gi_destroy(r, gpu, 15);
  op_ci_destroy(r, gpu, gis[0].id, 99);
  op_ci_destroy(r, gpu, 99, 0);
  op_ci_list(r, gpu, 99, NULL, NULL);
  op_ci_remaining(r, gpu, 99, 0);
  op_ci_create(r, gpu, 99, 0, -1, NULL);
  op_set_mig(r, gpu, false);
  clear_gpu(r, gpu);
  op_gi_destroy(r, gpu, gis[0].id);
  op_ci_list(r, gpu, gis[0].id, NULL, NULL);
}

/* Every call with a GPU index the machine does not have. */
static void bad_gpu(struct run *r, unsigned gpu)
{
  op_gpu_info(r, gpu);
  op_set_mig(r, gpu, true);
  op_set_mig(r, gpu, false);
  every_call_on(r, gpu, ref_model(r, 0)->gi[0].name);
}

/* ---- the random part: choices come from the seed and the reference's state ---- */

static unsigned rnd(struct run *r, unsigned n)
{
  r->rng ^= r->rng >> 12;
  r->rng ^= r->rng << 25;
  r->rng ^= r->rng >> 27;
  return (unsigned)(((r->rng * 0x2545F4914F6CDD1DULL) >> 32) % n);
}

/* An existing GI id of the reference (read without recording), or any id. */
static unsigned some_gi(struct run *r, unsigned gpu)
{
  struct gs_gi_info gis[GS_GEOM_MAX_INSTANCES];
  struct gs_backend *b = REF(r)->b;
  unsigned n = 0;
  if (rnd(r, 8) != 0 && b->ops->gi_list(b, NULL, gpu, gis, &n) == 0 && n > 0)
    return gis[rnd(r, n)].id;
  return rnd(r, 16);
}

static unsigned some_ci(struct run *r, unsigned gpu, unsigned gi)
{
  struct gs_ci_info cis[GS_GEOM_MAX_INSTANCES];
  struct gs_backend *b = REF(r)->b;
  unsigned n = 0;
  if (rnd(r, 8) != 0 && b->ops->ci_list(b, NULL, gpu, gi, cis, &n) == 0 && n > 0)
    return cis[rnd(r, n)].id;
  return rnd(r, 8);
}

/* A CI profile id of that GI's profile mostly, sometimes any id. */
static unsigned some_ci_profile(struct run *r, unsigned gpu, unsigned gi)
{
  struct gs_gi_info gis[GS_GEOM_MAX_INSTANCES];
  struct gs_geom_ci_profile cps[GS_GEOM_MAX_CI_PROFILES];
  struct gs_backend *b = REF(r)->b;
  unsigned n = 0;
  if (rnd(r, 8) != 0 && b->ops->gi_list(b, NULL, gpu, gis, &n) == 0)
    for (unsigned i = 0; i < n; i++) {
      unsigned ncp = gis[i].id == gi ? gs_geom_ci_profiles(ref_model(r, gpu), gis[i].profile, cps) : 0;
      if (ncp > 0)
        return cps[rnd(r, ncp)].id;
    }
  return rnd(r, 10);
}

/* A process on one of the reference's MIG devices (or anywhere), or the end
 * of one the random part started. */
static void random_proc_op(struct run *r, unsigned gpu)
{
  static struct gs_mig_device devs[GS_BACKEND_MAX_MIG_DEVICES];
  struct gs_backend *b = REF(r)->b;
  unsigned n = 0, pid = PID_BASE + 200;
  if (r->npid > 0 && rnd(r, 2) == 0) {
    op_proc_remove(r, pid + rnd(r, r->npid));
    return;
  }
  pid += r->npid++;
  if (rnd(r, 8) != 0 && b->ops->mig_devices(b, NULL, gpu, devs, &n) == 0 && n > 0) {
    const struct gs_mig_device *d = &devs[rnd(r, n)];
    op_proc_add(r, pid, gpu, (int)d->gi, (int)d->ci);
  } else {
    int gi = rnd(r, 2) ? -1 : (int)rnd(r, 16);
    op_proc_add(r, pid, gpu, gi, gi < 0 ? -1 : (int)rnd(r, 8));
  }
  op_processes(r, gpu);
}

static void random_op(struct run *r)
{
  unsigned gpu = rnd(r, r->ngpu), k = rnd(r, 100);
  const struct gs_geom_model *m = ref_model(r, gpu);
  const char *name = m->gi[rnd(r, m->ngi)].name;
  int start = rnd(r, 2) ? -1 : (int)rnd(r, m->grid + 1);
  if (k < 30) {
    op_gi_create(r, gpu, name, start, NULL);
  } else if (k < 42) {
    op_gi_destroy(r, gpu, some_gi(r, gpu));
  } else if (k < 68) {
    unsigned gi = some_gi(r, gpu), cp = some_ci_profile(r, gpu, gi);
    int at = rnd(r, 2) ? -1 : (int)rnd(r, 9);
    op_ci_create(r, gpu, gi, cp, at, NULL);
  } else if (k < 80) {
    unsigned gi = some_gi(r, gpu);
    op_ci_destroy(r, gpu, gi, some_ci(r, gpu, gi));
  } else if (k < 86) {
    op_gi_remaining(r, gpu, name);
  } else if (k < 90) {
    unsigned gi = some_gi(r, gpu);
    op_ci_remaining(r, gpu, gi, some_ci_profile(r, gpu, gi));
  } else if (k < 92) {
    op_gi_list(r, gpu, NULL, NULL);
  } else if (k < 94) {
    op_ci_list(r, gpu, some_gi(r, gpu), NULL, NULL);
  } else if (k < 96) {
    op_mig_devices(r, gpu, NULL, NULL);
  } else if (k < 98) {
    random_proc_op(r, gpu);
  } else {
    op_set_mig(r, gpu, rnd(r, 3) != 0);
  }
}

static unsigned env_unsigned(const char *name, unsigned fallback)
{
  const char *v = getenv(name);
  return v && *v ? (unsigned)strtoul(v, NULL, 0) : fallback;
}

static void random_part(struct run *r, unsigned index)
{
  unsigned seed = env_unsigned("GS_CONFORMANCE_SEED", DEFAULT_SEED), ops;
  ops = env_unsigned("GS_CONFORMANCE_OPS", DEFAULT_OPS);
  r->rng = ((uint64_t)seed + index) * 0x9E3779B97F4A7C15ULL | 1;
  print_message("%s: random part: seed %u (GS_CONFORMANCE_SEED), %u operations\n", r->spec, seed,
                ops);
  for (unsigned g = 0; g < r->ngpu; g++)
    op_set_mig(r, g, true);
  for (unsigned i = 0; i < ops; i++)
    random_op(r);
  for (unsigned i = 0; i < r->npid; i++)
    op_proc_remove(r, PID_BASE + 200 + i);
  for (unsigned g = 0; g < r->ngpu; g++) {
    op_set_mig(r, g, true);
    op_mig_devices(r, g, NULL, NULL);
    clear_gpu(r, g);
  }
}

static void script(struct run *r, unsigned index)
{
  op_open(r);
  inventory(r);
  for (unsigned g = 0; g < r->ngpu; g++) {
    mig_disabled(r, g);
    mig_pending(r, g);
    op_set_mig(r, g, true);
    op_set_mig(r, g, true);
    op_gpu_info(r, g);
    mig_pending_disable(r, g);
  }
  op_reopen(r);
  inventory(r);
  for (unsigned g = 0; g < r->ngpu; g++) {
    gi_auto_fill(r, g);
    gi_explicit(r, g);
    ci_script(r, g);
    in_use(r, g);
  }
  bad_gpu(r, r->ngpu);
  bad_gpu(r, 1000);
  random_part(r, index);
  for (unsigned g = 0; g < r->ngpu; g++) {
    op_set_mig(r, g, false);
    op_gpu_info(r, g);
    mig_disabled(r, g);
  }
}

/* ---- comparing and reporting ---- */

/* Keeps a side's transcript under $GS_TEST_TMP/conformance for a human diff. */
static void save_transcript(const struct run *r, const struct side *s, char *path, size_t size)
{
  const char *base = getenv("GS_TEST_TMP");
  char name[64];
  size_t i;
  snprintf(name, sizeof(name), "%s", r->spec);
  for (i = 0; name[i]; i++)
    if (name[i] == ':' || name[i] == '/')
      name[i] = '_';
  snprintf(path, size, "%s/conformance/%s.%s.txt", base && *base ? base : "/tmp", name, s->label);
  if (gs_file_make_parent(NULL, path) != 0 || gs_test_write(path, s->t.text, s->t.len) != 0)
    snprintf(path, size, "(not saved)");
}

/* The first line where the transcripts differ, with the lines before it.
 * (Reports go to stderr directly: cmocka's print_error truncates long text.) */
static unsigned first_difference(const struct run *r)
{
  const char *a = r->side[0].t.text, *b = r->side[1].t.text, *ctx[4] = {0};
  unsigned line = 1;
  while (*a || *b) {
    size_t la = strcspn(a, "\n"), lb = strcspn(b, "\n");
    if (la != lb || memcmp(a, b, la) != 0) {
      fprintf(stderr, "%s: the transcripts differ first at line %u; before it:\n", r->spec, line);
      for (unsigned i = 0; i < 4; i++)
        if (ctx[i])
          fprintf(stderr, "       %.*s\n", (int)strcspn(ctx[i], "\n"), ctx[i]);
      fprintf(stderr, "%-6s %.*s\n%-6s %.*s\n", r->side[0].label, (int)la, a, r->side[1].label,
              (int)lb, b);
      return line;
    }
    memmove(ctx, ctx + 1, sizeof(ctx) - sizeof(ctx[0]));
    ctx[3] = a;
    a += la + (a[la] == '\n');
    b += lb + (b[lb] == '\n');
    line++;
  }
  return 0;
}

static void report(struct run *r)
{
  char pa[GS_TEST_PATH], pb[GS_TEST_PATH];
  unsigned line;
  fflush(stdout);
  if (r->nviolation)
    fprintf(stderr, "%s: %u results broke backend.h's error contract:\n%s", r->spec,
            r->nviolation, r->violations.text);
  if (r->nside < 2) {
    if (r->nviolation)
      fail_msg("%s: %u contract violations", r->spec, r->nviolation);
    return;
  }
  save_transcript(r, &r->side[0], pa, sizeof(pa));
  save_transcript(r, &r->side[1], pb, sizeof(pb));
  line = first_difference(r);
  if (r->ndiff) {
    fprintf(stderr, "%s: %u of %u operations differ:", r->spec, r->ndiff, r->op);
    for (unsigned i = 0; i < GS_NITEMS(r->kinds) && r->kinds[i].n; i++)
      fprintf(stderr, " %s %u,", r->kinds[i].name, r->kinds[i].n);
    fprintf(stderr, " the first %u:\n%s", SHOWN_DIFFS, r->diffs.text);
  }
  fflush(stderr);
  if (line || r->ndiff || r->nviolation)
    fail_msg("%s: %u differing operations, first differing line %u, %u contract violations; "
             "transcripts: %s %s",
             r->spec, r->ndiff, line, r->nviolation, pa, pb);
  print_message("%s: %u operations, transcripts equal (%zu bytes)\n", r->spec, r->op,
                r->side[0].t.len);
}

/* ---- the tests ---- */

static void scratch_dir(char dir[GS_TEST_DIR])
{
  struct stat sb;
  if (stat("/dev/shm", &sb) == 0 && S_ISDIR(sb.st_mode) && access("/dev/shm", W_OK) == 0) {
    snprintf(dir, GS_TEST_DIR, "/dev/shm/gs-conformance-XXXXXX");
    if (mkdtemp(dir))
      return;
  }
  assert_int_equal(gs_test_mkdtemp("conformance", dir), 0);
}

static int teardown(void **state)
{
  struct run *r = *state;
  if (!r)
    return 0;
  close_sides(r);
  for (unsigned i = 0; i < 2; i++)
    free(r->side[i].t.text);
  free(r->diffs.text);
  free(r->violations.text);
  if (r->dir[0])
    gs_test_rmtree(r->dir);
  free(r);
  *state = NULL;
  return 0;
}

static struct run *new_run(void **state, const char *spec, enum side_kind second)
{
  struct run *r = calloc(1, sizeof(*r));
  assert_non_null(r);
  *state = r;
  r->spec = spec;
  scratch_dir(r->dir);
  r->side[0] = (struct side){.label = "emu", .kind = SIDE_EMU};
  r->side[1] = (struct side){.label = second == SIDE_NVML ? "nvml" : "emu-B", .kind = second};
  gs_test_join(r->side[0].path, r->dir, "A.json");
  gs_test_join(r->side[1].path, r->dir, "B.json");
  tr_printf(&r->diffs, "%s", "");
  tr_printf(&r->violations, "%s", "");
  r->nside = 2;
  return r;
}

/* $GS_NVML_EMU when it names a file; else why not, in why. */
static const char *nvml_emu_library(char *why, size_t size)
{
  const char *lib = getenv("GS_NVML_EMU");
  if (!lib || !*lib)
    snprintf(why, size, "GS_NVML_EMU is not set");
  else if (access(lib, R_OK) != 0)
    snprintf(why, size, "GS_NVML_EMU=%s does not exist", lib);
  else
    return lib;
  return NULL;
}

/* Without the library, the script still runs on the emulator alone (its
 * contract checks hold), and the nvml half is skipped where nobody can miss it. */
static void conformance(void **state, const char *spec, unsigned index)
{
  char why[GS_TEST_PATH + 64];
  struct run *r = new_run(state, spec, SIDE_NVML);
  r->library = nvml_emu_library(why, sizeof(why));
  if (!r->library)
    r->nside = 1;
  script(r, index);
  report(r);
  if (r->library)
    return;
  fprintf(stderr, "\n"
                  "******************************************************************\n"
                  "*  SKIPPED: NVML-backend conformance for %s: %s.\n"
                  "*  Only the emulator half ran; nothing was compared. Build\n"
                  "*  src/nvml-emu (ctest then sets GS_NVML_EMU) to run it.\n"
                  "******************************************************************\n",
          spec, why);
  if (getenv("GS_CONFORMANCE_REQUIRE") && *getenv("GS_CONFORMANCE_REQUIRE") == '1')
    fail_msg("GS_CONFORMANCE_REQUIRE=1 and %s", why);
  skip();
}

/* The harness itself: two emulators on two files must agree on everything
 * (UUIDs and all), or a difference reported above could be the harness's. */
static void test_harness_two_emulators(void **state)
{
  struct run *r = new_run(state, "a100-40gb:2", SIDE_EMU);
  script(r, 0);
  report(r);
}

static void test_a100(void **state)
{
  conformance(state, "a100-40gb", 0);
}

static void test_a30(void **state)
{
  conformance(state, "a30-24gb", 1);
}

static void test_h100(void **state)
{
  conformance(state, "h100-80gb", 2);
}

static void test_a100_x2(void **state)
{
  conformance(state, "a100-40gb:2", 3);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_harness_two_emulators, teardown),
      cmocka_unit_test_teardown(test_a100, teardown),
      cmocka_unit_test_teardown(test_a30, teardown),
      cmocka_unit_test_teardown(test_h100, teardown),
      cmocka_unit_test_teardown(test_a100_x2, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
