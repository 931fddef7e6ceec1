/* SPDX-License-Identifier: Apache-2.0 */
/* cmd_bench_plot.c: `gpuslice bench plot`: throughput and latency charts of
 * bench's (or perf_analyzer's) CSVs, as SVG, PNG or PDF by -o's ending.
 * Options and printing only; the bench layer reads the CSVs and draws. Its
 * verb entry is in cmd_bench.c, beside `bench`'s. */
#include "bench/bench.h"
#include "cli/cli.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum { O_OUT = 'o', O_BUDGET = 2000, O_PLOT_PCT };

struct plot_opts {
  const char *out, *column;
  char column_buf[32];
  double budget_us;
};

static int on_plot_opt(struct cli *c, int ch, const char *v, void *arg)
{
  struct plot_opts *o = arg;
  uint64_t us = 0;
  int rc;
  (void)c;
  switch (ch) {
  case O_OUT: o->out = v; return 0;
  case O_BUDGET: /* a bare number is milliseconds */
    rc = cli_duration("--latency-budget", v, 1000, 1, 86400000000ull, &us);
    o->budget_us = (double)us;
    return rc;
  case O_PLOT_PCT:
    if (strcmp(v, "avg") == 0) {
      o->column = "Avg latency";
      return 0;
    }
    if (strcmp(v, "50") && strcmp(v, "90") && strcmp(v, "95") && strcmp(v, "99"))
      return cli_usage("--percentile %s: expected 50, 90, 95, 99 or avg (the CSV's columns)", v);
    snprintf(o->column_buf, sizeof(o->column_buf), "p%s latency", v);
    o->column = o->column_buf;
    return 0;
  default: return cli_usage("unexpected option");
  }
}

static const struct cli_opt plot_opts[] = {
    {"output", 'o', "OUT.svg|OUT.png|OUT.pdf", O_OUT, NULL,
     "the chart; its name's ending picks the format", CLI_VALUE_FILE, NULL},
    {"latency-budget", 0, "DURATION", O_BUDGET, "none", "a budget line (a bare number is ms)",
     CLI_VALUE_TEXT, NULL},
    {"percentile", 0, "50|90|95|99|avg", O_PLOT_PCT, "90", "the latency column drawn",
     CLI_VALUE_CHOICE, NULL},
    {0},
};

const struct cli_spec cli_bench_plot_spec = {
    .operands = "CSV...",
    .operand = CLI_VALUE_FILE,
    .opts = plot_opts,
    .about = "Throughput and latency against concurrency (or request rate), one series per CSV\n"
             "(perf_analyzer's or bench -f's), as SVG, PNG or PDF (PNG and PDF: librsvg and cairo).",
    .examples = "gpuslice bench plot mig-1.csv mig-7.csv --latency-budget 50ms -o chart.svg",
};

static int load_series(const char *path, const char *column, struct gs_bench_series *s)
{
  struct gs_err err = {0};
  const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  size_t bl = strlen(base);
  char *text = NULL;
  size_t len;
  int rc = cli_named_file(&err, "CSV", path, 64u << 20, &text, &len);
  if (rc == 0)
    rc = gs_bench_csv_read(&err, path, text, len, column, s);
  free(text);
  if (rc)
    return cli_bench_fail(&err);
  if (bl > 4 && strcmp(base + bl - 4, ".csv") == 0)
    bl -= 4;
  snprintf(s->label, sizeof(s->label), "%.*s", (int)bl, base);
  return 0;
}

/* The chart's format, from -o's ending (any case); checked before any CSV is read. */
static int image_format(const char *out, enum gs_bench_image *fmt)
{
  static const struct {
    const char *ext;
    enum gs_bench_image fmt;
  } exts[] = {{".svg", GS_BENCH_SVG}, {".png", GS_BENCH_PNG}, {".pdf", GS_BENCH_PDF}};
  const char *dot = strrchr(out, '.');
  for (size_t i = 0; dot && !strchr(dot, '/') && i < GS_NITEMS(exts); i++)
    if (strcasecmp(dot, exts[i].ext) == 0) {
      *fmt = exts[i].fmt;
      return 0;
    }
  return cli_usage("-o %s: the chart is written as SVG, PNG or PDF, chosen by the name's "
                   "ending: give a name ending in .svg, .png or .pdf", out);
}

static int write_plot(const char *out, enum gs_bench_image fmt, const char *svg, size_t len)
{
  struct gs_err err = {0};
  char *img = NULL;
  size_t n = 0;
  int rc = 0;
  if (fmt != GS_BENCH_SVG && gs_bench_plot_render(&err, svg, len, fmt, &img, &n) != 0)
    return cli_bench_fail(&err);
  if (gs_file_write_public(&err, out, img ? img : svg, img ? n : len) != 0)
    rc = cli_fail_file(&err);
  free(img);
  return rc;
}

int cli_bench_plot(struct cli *c, int argc, char **argv)
{
  struct plot_opts o = {.column = "p90 latency"};
  struct gs_bench_series *s;
  struct gs_err err = {0};
  enum gs_bench_image fmt = GS_BENCH_SVG;
  char *svg = NULL;
  size_t len, n;
  int first, rc = 0;
  if ((first = cli_getopt(c, argc, argv, on_plot_opt, &o)) <= 0)
    return -first;
  if (first >= argc || !o.out)
    return cli_usage("give one or more CSV files and -o OUT.svg; usage: %s", cli_synopsis(c));
  if ((rc = image_format(o.out, &fmt)) != 0)
    return rc;
  n = (size_t)(argc - first);
  if (!(s = calloc(n, sizeof(*s))))
    return cli_usage("out of memory");
  for (size_t i = 0; i < n && rc == 0; i++)
    rc = load_series(argv[first + (int)i], o.column, &s[i]);
  if (rc == 0 && gs_bench_plot_svg(&err, s, n, o.column, o.budget_us, &svg, &len) != 0)
    rc = cli_bench_fail(&err);
  if (rc == 0)
    rc = write_plot(o.out, fmt, svg, len);
  free(svg);
  for (size_t i = 0; i < n; i++)
    gs_bench_series_free(&s[i]);
  free(s);
  return rc;
}
