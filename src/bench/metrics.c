/* SPDX-License-Identifier: Apache-2.0 */
/* metrics.c: reads the server's Prometheus text: Triton's counters for one
 * model (nv_inference_*, which our emulated worker also exports), so each
 * window gets the server's queue and compute split as deltas of cumulative
 * counters; and Triton's GPU gauges (nv_gpu_*, per gpu_uuid label) that
 * perf_analyzer's --collect-metrics samples during windows. */
#include "bench/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const struct {
  const char *name;
  size_t off;
} families[] = {
    {"nv_inference_request_success", offsetof(struct gs_bench_server, success)},
    {"nv_inference_queue_duration_us", offsetof(struct gs_bench_server, queue_us)},
    {"nv_inference_compute_input_duration_us", offsetof(struct gs_bench_server, cin_us)},
    {"nv_inference_compute_infer_duration_us", offsetof(struct gs_bench_server, cinfer_us)},
    {"nv_inference_compute_output_duration_us", offsetof(struct gs_bench_server, cout_us)},
    {"nv_inference_request_duration_us", offsetof(struct gs_bench_server, request_us)},
};

/* One sample line, split: NAME{LABELS} VALUE [TIMESTAMP]. */
struct sample {
  const char *name, *labels, *labels_end; /* labels: between the braces */
  size_t name_len;
  double value;
};

/* False for comments, lines without labels, and values that are not finite
 * non-negative numbers (none of the series read here can be negative). */
static bool split_line(const char *p, const char *e, struct sample *out)
{
  const char *brace, *close, *v, *ve;
  char num[64], *end;
  if (p == e || *p == '#' || !(brace = memchr(p, '{', (size_t)(e - p))) ||
      !(close = memchr(brace, '}', (size_t)(e - brace))))
    return false;
  for (v = close + 1; v < e && *v == ' '; v++)
    ;
  for (ve = v; ve < e && *ve != ' ' && *ve != '\r'; ve++)
    ;
  if (ve == v || (size_t)(ve - v) >= sizeof(num))
    return false;
  memcpy(num, v, (size_t)(ve - v));
  num[ve - v] = '\0';
  out->value = strtod(num, &end);
  if (end == num || *end || !isfinite(out->value) || out->value < 0)
    return false;
  out->name = p, out->name_len = (size_t)(brace - p);
  out->labels = brace + 1, out->labels_end = close;
  return true;
}

/* The value of label `key` in [p, e): *v and *vl, escapes left as they are. */
static bool label(const char *p, const char *e, const char *key, const char **v, size_t *vl)
{
  size_t kl = strlen(key);
  for (const char *q = p; q + kl + 2 <= e; q++) {
    const char *s;
    if (memcmp(q, key, kl) != 0 || q[kl] != '=' || q[kl + 1] != '"' ||
        (q != p && q[-1] != ',' && q[-1] != ' '))
      continue;
    for (s = q + kl + 2; s < e && *s != '"'; s += 1 + (*s == '\\'))
      ;
    if (s >= e)
      return false;
    *v = q + kl + 2, *vl = (size_t)(s - *v);
    return true;
  }
  return false;
}

static bool label_is(const struct sample *s, const char *key, const char *want)
{
  const char *v;
  size_t vl;
  return label(s->labels, s->labels_end, key, &v, &vl) && vl == strlen(want) &&
         memcmp(v, want, vl) == 0;
}

static bool name_is(const struct sample *s, const char *name)
{
  return strlen(name) == s->name_len && memcmp(name, s->name, s->name_len) == 0;
}

/* Calls fn for each sample line of the text. */
static void each_sample(const char *text, size_t len, void (*fn)(const struct sample *, void *),
                        void *arg)
{
  const char *p = text, *end = text + len;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p)), *e = nl ? nl : end;
    struct sample s;
    if (split_line(p, e, &s))
      fn(&s, arg);
    p = nl ? nl + 1 : end;
  }
}

struct model_sum {
  const char *model, *version;
  struct gs_bench_server *out;
};

static void add_model(const struct sample *s, void *arg)
{
  struct model_sum *m = arg;
  if (!label_is(s, "model", m->model) || (m->version && !label_is(s, "version", m->version)))
    return;
  for (size_t f = 0; f < GS_NITEMS(families); f++)
    if (name_is(s, families[f].name)) {
      *(double *)((char *)m->out + families[f].off) += s->value;
      m->out->seen = true;
    }
}

int gs_bench_metrics_parse(const char *text, size_t len, const char *model, const char *version,
                           struct gs_bench_server *out)
{
  struct model_sum m = {model, version, out};
  memset(out, 0, sizeof(*out));
  each_sample(text, len, add_model, &m);
  return out->seen ? 0 : GS_E_NOT_FOUND;
}

/* ---- GPU gauges ---- */

static struct gs_bench_gpu *gpu_of(struct gs_bench_gpus *acc, const char *uuid, size_t len)
{
  struct gs_bench_gpu *g;
  for (unsigned i = 0; i < acc->n; i++)
    if (strlen(acc->gpu[i].uuid) == len && memcmp(acc->gpu[i].uuid, uuid, len) == 0)
      return &acc->gpu[i];
  if (acc->n == GS_BENCH_MAX_GPUS || len >= sizeof(g->uuid)) {
    acc->dropped++;
    return NULL;
  }
  g = &acc->gpu[acc->n++];
  memset(g, 0, sizeof(*g));
  memcpy(g->uuid, uuid, len);
  return g;
}

static void add_gpu(const struct sample *s, void *arg)
{
  struct gs_bench_gpus *acc = arg;
  struct gs_bench_gpu *g;
  const char *uuid;
  size_t ul;
  if (s->name_len < 7 || memcmp(s->name, "nv_gpu_", 7) != 0 ||
      !label(s->labels, s->labels_end, "gpu_uuid", &uuid, &ul) || !(g = gpu_of(acc, uuid, ul)))
    return;
  if (name_is(s, "nv_gpu_utilization"))
    g->util_sum += s->value, g->util_n++;
  else if (name_is(s, "nv_gpu_power_usage"))
    g->power_sum += s->value, g->power_n++;
  else if (name_is(s, "nv_gpu_memory_used_bytes"))
    g->used_max = g->used_n++ ? fmax(g->used_max, s->value) : s->value;
  else if (name_is(s, "nv_gpu_memory_total_bytes") && !g->total_n++)
    g->total = s->value;
}

void gs_bench_gpus_sample(struct gs_bench_gpus *acc, const char *text, size_t len)
{
  each_sample(text, len, add_gpu, acc);
}

void gs_bench_gpus_merge(struct gs_bench_gpus *dst, const struct gs_bench_gpus *src)
{
  dst->dropped += src->dropped;
  for (unsigned i = 0; i < src->n; i++) {
    const struct gs_bench_gpu *s = &src->gpu[i];
    struct gs_bench_gpu *d = gpu_of(dst, s->uuid, strlen(s->uuid));
    if (!d)
      continue;
    d->util_sum += s->util_sum, d->util_n += s->util_n;
    d->power_sum += s->power_sum, d->power_n += s->power_n;
    if (s->used_n)
      d->used_max = d->used_n ? fmax(d->used_max, s->used_max) : s->used_max;
    d->used_n += s->used_n;
    if (s->total_n && !d->total_n)
      d->total = s->total;
    d->total_n += s->total_n;
  }
}
