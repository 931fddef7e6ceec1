/* SPDX-License-Identifier: Apache-2.0 */
/* csv.c: perf_analyzer's CSV, written after a run as its ReportWriter writes
 * it (read at perf_analyzer 263c5f6e: the same columns in the same order,
 * present on the same conditions, the same units: whole µs, inferences per
 * second; rows in increasing throughput), and read back for plots, from our
 * runs or from perf_analyzer's own files. */
#include "bench/internal.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ROWS 100000
#define MAX_COLS 64

/* perf_analyzer's latency columns: p50, p90, p95, p99 and the --percentile
 * one in increasing order, once each (its std::set<size_t>). */
static size_t percentiles(double extra, double out[5])
{
  static const double fixed[] = {50, 90, 95, 99};
  size_t n = 0;
  bool placed = !(extra > 0);
  for (size_t i = 0; i < GS_NITEMS(fixed); i++) {
    if (!placed && extra <= fixed[i]) {
      placed = true;
      if (extra < fixed[i])
        out[n++] = extra;
    }
    out[n++] = fixed[i];
  }
  if (!placed)
    out[n++] = extra;
  return n;
}

static uint64_t percentile_us(const struct gs_bench_step *x, double p, double extra)
{
  return p == extra ? x->pextra_us : p == 50 ? x->p50_us : p == 90 ? x->p90_us
                                   : p == 95 ? x->p95_us : x->p99_us;
}

static void header(FILE *f, const struct gs_bench_csv *o)
{
  double ps[5];
  size_t np = percentiles(o->percentile, ps);
  fprintf(f, "%s,Inferences/Second,Client Send,",
          o->mode == GS_BENCH_CLOSED ? "Concurrency" : "Request Rate");
  if (o->server)
    fputs("Network+Server Send/Recv,Server Queue,Server Compute Input,Server Compute Infer,"
          "Server Compute Output,", f);
  fputs("Client Recv", f);
  for (size_t i = 0; i < np; i++)
    fprintf(f, ",p%g latency", ps[i]);
  if (o->verbose) {
    if (!(o->percentile > 0))
      fputs(",Avg latency", f);
    fputs(",request/response,response wait", f);
    if (o->gpus)
      fputs(",Avg GPU Utilization,Avg GPU Power Usage,Max GPU Memory Usage,Total GPU Memory", f);
  }
  fputc('\n', f);
}

/* Whole µs, truncated as perf_analyzer's integer division does. */
static unsigned long long us(double v)
{
  return !(v > 0) ? 0 : v < 1.8e19 ? (unsigned long long)v : ULLONG_MAX;
}

static int by_uuid(const void *a, const void *b)
{
  return strcmp((*(const struct gs_bench_gpu *const *)a)->uuid,
                (*(const struct gs_bench_gpu *const *)b)->uuid);
}

/* The four GPU cells, each "uuid:value;" for every GPU that had that gauge,
 * GPUs in uuid order (perf_analyzer's std::map). */
static void gpu_cells(FILE *f, const struct gs_bench_gpus *g)
{
  const struct gs_bench_gpu *by[GS_BENCH_MAX_GPUS];
  for (unsigned i = 0; i < g->n; i++)
    by[i] = &g->gpu[i];
  qsort(by, g->n, sizeof(*by), by_uuid);
  for (int cell = 0; cell < 4; cell++) {
    fputc(',', f);
    for (unsigned i = 0; i < g->n; i++) {
      const struct gs_bench_gpu *u = by[i];
      if (cell == 0 && u->util_n)
        fprintf(f, "%s:%g;", u->uuid, u->util_sum / u->util_n);
      else if (cell == 1 && u->power_n)
        fprintf(f, "%s:%g;", u->uuid, u->power_sum / u->power_n);
      else if (cell == 2 && u->used_n)
        fprintf(f, "%s:%llu;", u->uuid, us(u->used_max));
      else if (cell == 3 && u->total_n)
        fprintf(f, "%s:%llu;", u->uuid, us(u->total));
    }
  }
}

static void row(FILE *f, const struct gs_bench_csv *o, const struct gs_bench_step *x)
{
  double ps[5];
  size_t np = percentiles(o->percentile, ps);
  if (o->mode == GS_BENCH_CLOSED)
    fprintf(f, "%llu,", (unsigned long long)x->level);
  else
    fprintf(f, "%g,", x->level);
  fprintf(f, "%g,%llu,", x->throughput, us(x->send_us));
  if (o->server && x->server.seen) /* unknown server figures stay empty, never 0 */
    fprintf(f, "%llu,%llu,%llu,%llu,%llu,", us(x->server_net_us), us(x->server.queue_us),
            us(x->server.cin_us), us(x->server.cinfer_us), us(x->server.cout_us));
  else if (o->server)
    fputs(",,,,,", f);
  fprintf(f, "%llu", us(x->recv_us));
  for (size_t i = 0; i < np; i++)
    fprintf(f, ",%llu", (unsigned long long)percentile_us(x, ps[i], o->percentile));
  if (o->verbose) {
    if (!(o->percentile > 0))
      fprintf(f, ",%llu", us(x->avg_us));
    fprintf(f, ",%llu,%llu", us(x->send_us) + us(x->recv_us),
            us(x->avg_us - (double)(us(x->send_us) + us(x->recv_us))));
    if (o->gpus)
      gpu_cells(f, &x->gpus);
  }
  fputc('\n', f);
}

static int by_throughput(const void *a, const void *b)
{
  const struct gs_bench_step *x = *(const struct gs_bench_step *const *)a;
  const struct gs_bench_step *y = *(const struct gs_bench_step *const *)b;
  if (x->throughput != y->throughput)
    return x->throughput < y->throughput ? -1 : 1;
  return x->level < y->level ? -1 : x->level > y->level;
}

int gs_bench_csv_write(FILE *f, const struct gs_bench_csv *o, const struct gs_bench_step *s,
                       size_t n)
{
  const struct gs_bench_step **rows = calloc(n ? n : 1, sizeof(*rows));
  size_t k = 0;
  if (!rows)
    return GS_E_NO_MEMORY;
  header(f, o);
  for (size_t i = 0; i < n; i++)
    if (gs_bench_step_met(&s[i]))
      rows[k++] = &s[i];
  qsort(rows, k, sizeof(*rows), by_throughput);
  for (size_t i = 0; i < k; i++)
    row(f, o, rows[i]);
  free(rows);
  return 0;
}

void gs_bench_series_free(struct gs_bench_series *s)
{
  free(s->x);
  free(s->throughput);
  free(s->latency_us);
  s->x = s->throughput = s->latency_us = NULL;
  s->n = 0;
}

/* Splits one line at commas in place (no quoting: perf_analyzer writes none). */
static size_t split(char *line, char **cells, size_t max)
{
  size_t n = 0;
  char *p = line;
  while (n < max) {
    char *c = strchr(p, ',');
    cells[n++] = p;
    if (!c)
      break;
    *c = '\0';
    p = c + 1;
  }
  return n;
}

static int find_col(char **cells, size_t n, const char *name)
{
  for (size_t i = 0; i < n; i++)
    if (strcmp(cells[i], name) == 0)
      return (int)i;
  return -1;
}

static int cmp_x(const void *a, const void *b)
{
  const double *x = a, *y = b;
  return x[0] < y[0] ? -1 : x[0] > y[0];
}

static int parse_rows(struct gs_err *err, const char *what, char *p, const int col[3],
                      double *rows, size_t *n)
{
  size_t line = 1;
  *n = 0;
  while (p && *p) {
    char *nl = strchr(p, '\n'), *cells[MAX_COLS];
    size_t nc;
    if (nl)
      *nl = '\0';
    line++;
    if (*p && p[strlen(p) - 1] == '\r')
      p[strlen(p) - 1] = '\0';
    if (*p) {
      nc = split(p, cells, MAX_COLS);
      if (*n == MAX_ROWS)
        return gs_err_set(err, GS_E_INVALID_ARGUMENT, "%s: more than %d rows", what, MAX_ROWS);
      for (int k = 0; k < 3; k++) {
        char *e;
        double v = (size_t)col[k] < nc ? strtod(cells[col[k]], &e) : NAN;
        if ((size_t)col[k] >= nc || e == cells[col[k]] || *e || !isfinite(v) || v < 0)
          return gs_err_set(err, GS_E_INVALID_ARGUMENT, "%s:%zu: column %d is not a number "
                            "(a perf_analyzer CSV has one row of numbers per line)", what, line,
                            col[k] + 1);
        rows[*n * 3 + (size_t)k] = v;
      }
      (*n)++;
    }
    p = nl ? nl + 1 : NULL;
  }
  return 0;
}

int gs_bench_csv_read(struct gs_err *err, const char *what, const char *text, size_t len,
                      const char *column, struct gs_bench_series *out)
{
  char *copy = malloc(len + 1), *nl, *cells[MAX_COLS];
  double *rows = NULL;
  size_t nc, n = 0;
  int col[3], rc = 0;
  memset(out, 0, sizeof(*out));
  if (!copy)
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory reading %s", what);
  memcpy(copy, text, len);
  copy[len] = '\0';
  nl = strchr(copy, '\n');
  if (nl)
    *nl = '\0';
  if (*copy && copy[strlen(copy) - 1] == '\r')
    copy[strlen(copy) - 1] = '\0';
  nc = split(copy, cells, MAX_COLS);
  col[0] = find_col(cells, nc, "Concurrency");
  out->rate = col[0] < 0;
  if (col[0] < 0)
    col[0] = find_col(cells, nc, "Request Rate");
  col[1] = find_col(cells, nc, "Inferences/Second");
  col[2] = find_col(cells, nc, column);
  if (col[0] < 0 || col[1] < 0 || col[2] < 0)
    rc = gs_err_set(err, GS_E_INVALID_ARGUMENT, "%s: the header needs 'Concurrency' (or 'Request "
                    "Rate'), 'Inferences/Second' and '%s', as perf_analyzer -f writes", what, column);
  else if (!(rows = malloc(sizeof(double) * 3 * (len / 2 + 1))))
    rc = gs_err_set(err, GS_E_NO_MEMORY, "out of memory reading %s", what);
  else
    rc = parse_rows(err, what, nl ? nl + 1 : NULL, col, rows, &n);
  if (rc == 0 && n == 0)
    rc = gs_err_set(err, GS_E_INVALID_ARGUMENT, "%s: no rows after the header", what);
  if (rc == 0 && (!(out->x = malloc(n * sizeof(double))) ||
                  !(out->throughput = malloc(n * sizeof(double))) ||
                  !(out->latency_us = malloc(n * sizeof(double)))))
    rc = gs_err_set(err, GS_E_NO_MEMORY, "out of memory reading %s", what);
  if (rc == 0) {
    qsort(rows, n, 3 * sizeof(double), cmp_x);
    for (size_t i = 0; i < n; i++)
      out->x[i] = rows[3 * i], out->throughput[i] = rows[3 * i + 1],
      out->latency_us[i] = rows[3 * i + 2];
    out->n = n;
  } else {
    gs_bench_series_free(out);
  }
  free(rows);
  free(copy);
  return rc;
}
