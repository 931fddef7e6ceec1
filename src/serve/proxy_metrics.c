/* SPDX-License-Identifier: Apache-2.0 */
/* proxy_metrics.c: the load balancer's counters and latency histograms,
 * each written by its own thread and read by any (relaxed atomics, single
 * writer), summed over the threads for /metrics (Prometheus text) and for
 * the autoscaler (gs_proxy_latency). */
#include "serve/proxy_internal.h"

#include <stdlib.h>

/* Prometheus le=, in seconds, 0.0005 to 10. Dense from 10 to 100 ms, where
 * latency budgets sit, so the autoscaler's percentile, read from these
 * buckets, is within a few ms there. */
const uint64_t gs__proxy_le_us[GS__PROXY_NBOUNDS] = {
    500,    1000,   2000,   3000,   5000,   7500,    10000,   15000,   20000,   25000,  30000, 40000,
    50000,  60000,  75000,  100000, 150000, 200000,  250000,  500000,  1000000, 2500000, 5000000,
    10000000};

void gs__proxy_hist_add(struct hist *h, uint64_t us)
{
  size_t i = 0;
  while (i < GS__PROXY_NBOUNDS && us > gs__proxy_le_us[i])
    i++;
  cnt_add(&h->bucket[i], 1);
  cnt_add(&h->count, 1);
  cnt_add(&h->sum_us, us);
}

/* One histogram in Prometheus text: cumulative buckets, sum, count.
 * labels: "" or "worker=\"3\"," (trailing comma, for le= to follow). */
static void hist_print(FILE *f, const char *name, const char *labels, const struct hist *h)
{
  uint64_t cum = 0;
  size_t ll = strlen(labels);
  for (size_t i = 0; i < GS__PROXY_NBOUNDS; i++) {
    cum += h->bucket[i];
    fprintf(f, "%s_bucket{%sle=\"%g\"} %llu\n", name, labels, (double)gs__proxy_le_us[i] / 1e6,
            (unsigned long long)cum);
  }
  fprintf(f, "%s_bucket{%sle=\"+Inf\"} %llu\n", name, labels, (unsigned long long)h->count);
  /* sum and count take the labels without the trailing comma */
  fprintf(f, "%s_sum%s%.*s%s %.6f\n%s_count%s%.*s%s %llu\n", name, ll ? "{" : "",
          (int)(ll ? ll - 1 : 0), labels, ll ? "}" : "", (double)h->sum_us / 1e6, name,
          ll ? "{" : "", (int)(ll ? ll - 1 : 0), labels, ll ? "}" : "",
          (unsigned long long)h->count);
}

/* Adds h's counts (another thread's maybe) to sum. */
static void hist_merge(struct hist *sum, const struct hist *h)
{
  for (size_t i = 0; i < GS__PROXY_NBUCKETS; i++)
    sum->bucket[i] += cnt_get(&h->bucket[i]);
  sum->count += cnt_get(&h->count);
  sum->sum_us += cnt_get(&h->sum_us);
}

/* Worker w's labels: worker="w", and with a supervisor the slice's
 * identity as Triton and DCGM label theirs: gpu_uuid (the MIG device's
 * UUID), profile, gpu (its GPU's index). */
static void worker_labels(const struct gs_proxy *m, size_t w, char *out, size_t sz)
{
  struct gs_super_info si;
  size_t n = (size_t)snprintf(out, sz, "worker=\"%zu\"", w);
  if (m->cfg.super && gs_super_info(m->cfg.super, w, &si) == 0 && n < sz)
    snprintf(out + n, sz - n, ",gpu_uuid=\"%s\",profile=\"%s\",gpu=\"%u\"", si.uuid, si.profile,
             si.gpu);
}

/* A per-worker metric family: HELP, TYPE, one line per worker, summed
 * over the threads (the main proxy m's mutex held). */
static void family(FILE *f, const struct gs_proxy *m, const char *name, const char *type,
                   const char *help, unsigned long long (*value)(const struct gs_proxy *, size_t))
{
  char labels[192];
  fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
  for (size_t i = 0; i < m->cfg.nworkers; i++) {
    worker_labels(m, i, labels, sizeof(labels));
    fprintf(f, "%s{%s} %llu\n", name, labels, value(m, i));
  }
}

static unsigned long long v_requests(const struct gs_proxy *m, size_t w)
{
  uint64_t requests, errors;
  gs__proxy_worker_sums(m, w, &requests, &errors);
  return requests;
}

static unsigned long long v_errors(const struct gs_proxy *m, size_t w)
{
  uint64_t requests, errors;
  gs__proxy_worker_sums(m, w, &requests, &errors);
  return errors;
}

static unsigned long long v_inflight(const struct gs_proxy *m, size_t w)
{
  return gs__proxy_worker_inflight(m, w);
}

static unsigned long long v_up(const struct gs_proxy *m, size_t w)
{
  return usable(m->w[w]);
}

static unsigned long long v_restarts(const struct gs_proxy *m, size_t w)
{
  return m->w[w]->restarts;
}

static void write_metrics(struct gs_proxy *p, FILE *f)
{
  struct gs_proxy *m = p->main;
  uint64_t requests = 0, errors = 0;
  size_t inflight = 0;
  struct hist total = {0};
  struct gs_super_info info;
  pthread_mutex_lock(&m->mu);
  /* the main thread reads the supervisor live; others see it as of the
   * worker's last change (the supervisor is the main thread's) */
  for (size_t i = 0; p == m && m->cfg.super && i < m->cfg.nworkers; i++)
    if (gs_super_info(m->cfg.super, i, &info) == 0)
      m->w[i]->restarts = info.restarts;
  for (size_t i = 0; i <= m->nshards; i++) {
    requests += cnt_get(&group_at(m, i)->requests);
    errors += cnt_get(&group_at(m, i)->errors);
    hist_merge(&total, &group_at(m, i)->latency);
  }
  for (size_t i = 0; i < m->cfg.nworkers; i++)
    inflight += gs__proxy_worker_inflight(m, i);
  fprintf(f, "# HELP gpuslice_proxy_requests_total Requests the proxy accepted.\n"
             "# TYPE gpuslice_proxy_requests_total counter\n"
             "gpuslice_proxy_requests_total %llu\n"
             "# HELP gpuslice_proxy_errors_total Answers the proxy made itself (502, 503, 504; gRPC: "
             "its own non-OK statuses, refusals included).\n"
             "# TYPE gpuslice_proxy_errors_total counter\n"
             "gpuslice_proxy_errors_total %llu\n"
             "# HELP gpuslice_proxy_inflight Requests sent to workers and not yet answered.\n"
             "# TYPE gpuslice_proxy_inflight gauge\n"
             "gpuslice_proxy_inflight %zu\n"
             "# HELP gpuslice_proxy_request_duration_seconds From a request's arrival to its "
             "answer (the proxy's errors too).\n"
             "# TYPE gpuslice_proxy_request_duration_seconds histogram\n",
          (unsigned long long)requests, (unsigned long long)errors, inflight);
  hist_print(f, "gpuslice_proxy_request_duration_seconds", "", &total);
  family(f, m, "gpuslice_worker_requests_total", "counter",
         "Requests sent to a worker (retries count).", v_requests);
  family(f, m, "gpuslice_worker_errors_total", "counter",
         "Refusals, resets and timeouts of a worker.", v_errors);
  family(f, m, "gpuslice_worker_inflight", "gauge", "Requests sent to a worker, unanswered.",
         v_inflight);
  family(f, m, "gpuslice_worker_up", "gauge",
         "1 when the worker is in the pool (ready, not ejected, enabled).", v_up);
  if (m->cfg.super)
    family(f, m, "gpuslice_worker_restarts_total", "counter", "Starts after the first one.",
           v_restarts);
  fprintf(f, "# HELP gpuslice_worker_request_duration_seconds From a request's arrival at the "
             "proxy to the answer this worker gave.\n"
             "# TYPE gpuslice_worker_request_duration_seconds histogram\n");
  for (size_t i = 0; i < m->cfg.nworkers; i++) {
    char labels[194];
    struct hist h = {0};
    for (size_t k = 0; k <= m->nshards; k++)
      if (i < group_at(m, k)->cfg.nworkers)
        hist_merge(&h, &group_at(m, k)->w[i]->latency);
    worker_labels(m, i, labels, sizeof(labels) - 1);
    strcat(labels, ",");
    hist_print(f, "gpuslice_worker_request_duration_seconds", labels, &h);
  }
  pthread_mutex_unlock(&m->mu);
  if (m->cfg.metrics_more)
    m->cfg.metrics_more(m->cfg.ctx, f);
}

size_t gs_proxy_latency(const struct gs_proxy *p, const uint64_t **le_us, uint64_t *counts,
                        size_t max)
{
  struct gs_proxy *m = p->main;
  struct hist total = {0};
  size_t n = max < GS__PROXY_NBUCKETS ? max : GS__PROXY_NBUCKETS;
  pthread_mutex_lock(&m->mu); /* the shards' list is stable under it */
  for (size_t i = 0; i <= m->nshards; i++)
    hist_merge(&total, &group_at(m, i)->latency);
  pthread_mutex_unlock(&m->mu);
  *le_us = gs__proxy_le_us;
  memcpy(counts, total.bucket, n * sizeof(*counts));
  return n;
}

void gs__proxy_respond_metrics(struct gs_proxy *p, struct gs_http_conn *conn)
{
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) {
    gs_http_respond_error(conn, 500, "out of memory writing metrics");
    return;
  }
  write_metrics(p, f);
  if (fclose(f) != 0) {
    free(buf);
    gs_http_respond_error(conn, 500, "out of memory writing metrics");
    return;
  }
  gs_http_respond(conn, 200, "text/plain; version=0.0.4", NULL, buf, len);
  free(buf);
}
