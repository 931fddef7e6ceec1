/* csv.c: perf_analyzer's CSV, written after a run (same header, same units:
 * µs, inferences per second) and read back for plots, from our runs or from
 * perf_analyzer's own files. */
#include "bench/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ROWS 100000
#define MAX_COLS 64

void gs_bench_csv_write(FILE *f, enum gs_bench_mode mode, const struct gs_bench_step *s, size_t n)
{
  fprintf(f, "%s,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,"
             "Server Compute Input,Server Compute Infer,Server Compute Output,Client Recv,"
             "p50 latency,p90 latency,p95 latency,p99 latency,Avg latency\n",
          mode == GS_BENCH_CLOSED ? "Concurrency" : "Request Rate");
  for (size_t i = 0; i < n; i++) {
    const struct gs_bench_step *x = &s[i];
    if (!x->stable)
      continue;
    fprintf(f, "%g,%.1f,%.0f,%.0f,%.0f,%.0f,%.0f,%.0f,%.0f,%llu,%llu,%llu,%llu,%.0f\n", x->level,
            x->throughput, x->send_us, x->server_net_us, x->server.queue_us, x->server.cin_us,
            x->server.cinfer_us, x->server.cout_us, x->recv_us, (unsigned long long)x->p50_us,
            (unsigned long long)x->p90_us, (unsigned long long)x->p95_us,
            (unsigned long long)x->p99_us, x->avg_us);
  }
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
