/* SPDX-License-Identifier: Apache-2.0 */
/* plot.c: `gpuslice bench plot`'s drawing: throughput and latency against
 * concurrency (or request rate) for several CSVs, as one SVG document with
 * two charts, a legend and an optional latency-budget line. Plain SVG 1.1
 * text, so any browser opens it; render.c turns it into PNG or PDF. */
#include "bench/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define W 1100
#define H 480
#define PW 440 /* one chart's plotting area */
#define PH 300
#define TOP 60

static const char *const colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                     "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

/* A round step giving about 5 ticks from 0 to max. */
static double tick_step(double max)
{
  double raw = max / 5, mag = pow(10, floor(log10(raw))), f = raw / mag;
  return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * mag;
}

static double axis_max(double v)
{
  double step;
  if (!(v > 0))
    return 1;
  step = tick_step(v);
  return ceil(v / step) * step;
}

static void esc(FILE *f, const char *s)
{
  for (; *s; s++)
    switch (*s) {
    case '<': fputs("&lt;", f); break;
    case '>': fputs("&gt;", f); break;
    case '&': fputs("&amp;", f); break;
    case '"': fputs("&quot;", f); break;
    default:
      if ((unsigned char)*s >= 0x20)
        fputc(*s, f);
    }
}

struct chart {
  double x0, xmax, ymax;
  const char *title, *xlabel, *ylabel;
};

static void axes(FILE *f, const struct chart *c)
{
  double xs = tick_step(c->xmax), ys = tick_step(c->ymax);
  fprintf(f, "<text x=\"%.0f\" y=\"%d\" font-size=\"16\" text-anchor=\"middle\">", c->x0 + PW / 2,
          TOP - 20);
  esc(f, c->title);
  fprintf(f, "</text>\n<rect x=\"%.0f\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" "
             "stroke=\"#333\"/>\n", c->x0, TOP, PW, PH);
  for (double t = 0; t <= c->xmax * 1.0001; t += xs) {
    double x = c->x0 + t / c->xmax * PW;
    fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#ddd\"/>"
               "<text x=\"%.1f\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\">%g</text>\n",
            x, TOP, x, TOP + PH, x, TOP + PH + 16, t);
  }
  for (double t = 0; t <= c->ymax * 1.0001; t += ys) {
    double y = TOP + PH - t / c->ymax * PH;
    fprintf(f, "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
               "<text x=\"%.0f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">%g</text>\n",
            c->x0, y, c->x0 + PW, y, c->x0 - 6, y + 4, t);
  }
  fprintf(f, "<text x=\"%.0f\" y=\"%d\" font-size=\"13\" text-anchor=\"middle\">", c->x0 + PW / 2,
          TOP + PH + 36);
  esc(f, c->xlabel);
  fprintf(f, "</text>\n<text transform=\"translate(%.0f,%d) rotate(-90)\" font-size=\"13\" "
             "text-anchor=\"middle\">", c->x0 - 50, TOP + PH / 2);
  esc(f, c->ylabel);
  fputs("</text>\n", f);
}

static void line(FILE *f, const struct chart *c, const double *x, const double *y, size_t n,
                 double yscale, const char *color)
{
  fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", color);
  for (size_t i = 0; i < n; i++)
    fprintf(f, "%.1f,%.1f ", c->x0 + x[i] / c->xmax * PW, TOP + PH - y[i] * yscale / c->ymax * PH);
  fputs("\"/>\n", f);
  for (size_t i = 0; i < n; i++)
    fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n",
            c->x0 + x[i] / c->xmax * PW, TOP + PH - y[i] * yscale / c->ymax * PH, color);
}

static void legend(FILE *f, const struct gs_bench_series *s, size_t n)
{
  for (size_t i = 0; i < n; i++) {
    double x = 90 + (double)(i % 4) * 250, y = TOP + PH + 62 + (double)(i / 4) * 20;
    fprintf(f, "<rect x=\"%.0f\" y=\"%.0f\" width=\"14\" height=\"4\" fill=\"%s\"/>"
               "<text x=\"%.0f\" y=\"%.0f\" font-size=\"12\">", x, y - 4,
            colors[i % GS_NITEMS(colors)], x + 20, y);
    esc(f, s[i].label);
    fputs("</text>\n", f);
  }
}

int gs_bench_plot_svg(struct gs_err *err, const struct gs_bench_series *s, size_t n,
                      const char *column, double budget_us, char **svg, size_t *len)
{
  struct chart thr = {80, 0, 0, "Throughput", "", "inferences / s"};
  struct chart lat = {620, 0, 0, "", "", ""};
  char title[96], ylabel[96];
  FILE *f;
  if (!n)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "nothing to plot: give one or more CSV files");
  for (size_t i = 0; i < n; i++)
    for (size_t k = 0; k < s[i].n; k++) {
      thr.xmax = fmax(thr.xmax, s[i].x[k]);
      thr.ymax = fmax(thr.ymax, s[i].throughput[k]);
      lat.ymax = fmax(lat.ymax, s[i].latency_us[k] / 1000);
    }
  lat.ymax = fmax(lat.ymax, budget_us / 1000 * 1.1);
  thr.xmax = lat.xmax = axis_max(thr.xmax);
  thr.ymax = axis_max(thr.ymax);
  lat.ymax = axis_max(lat.ymax);
  thr.xlabel = lat.xlabel = s[0].rate ? "request rate (requests / s)" : "concurrency";
  snprintf(title, sizeof(title), "Latency (%s)", column);
  snprintf(ylabel, sizeof(ylabel), "%s (ms)", column);
  lat.title = title, lat.ylabel = ylabel;
  if (!(f = open_memstream(svg, len)))
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory drawing the plot");
  fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
             "width=\"%d\" height=\"%zu\" viewBox=\"0 0 %d %zu\" font-family=\"sans-serif\">\n"
             "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
          W, (size_t)H + (n / 4) * 20, W, (size_t)H + (n / 4) * 20);
  axes(f, &thr);
  axes(f, &lat);
  for (size_t i = 0; i < n; i++) {
    line(f, &thr, s[i].x, s[i].throughput, s[i].n, 1, colors[i % GS_NITEMS(colors)]);
    line(f, &lat, s[i].x, s[i].latency_us, s[i].n, 1e-3, colors[i % GS_NITEMS(colors)]);
  }
  if (budget_us > 0) {
    double y = TOP + PH - budget_us / 1000 / lat.ymax * PH;
    fprintf(f, "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#000\" "
               "stroke-dasharray=\"6,4\"/><text x=\"%.0f\" y=\"%.1f\" font-size=\"12\" "
               "text-anchor=\"end\">latency budget %g ms</text>\n",
            lat.x0, y, lat.x0 + PW, y, lat.x0 + PW - 4, y - 5, budget_us / 1000);
  }
  legend(f, s, n);
  fputs("</svg>\n", f);
  if (fclose(f) != 0) {
    free(*svg);
    *svg = NULL;
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory drawing the plot");
  }
  return 0;
}
