/* SPDX-License-Identifier: Apache-2.0 */
/* render.c: `bench plot`'s PNG and PDF. The SVG that plot.c draws is
 * rendered by librsvg onto a cairo surface (an image for PNG, a PDF
 * document), written into memory. Knows nothing of CSVs or charts: any SVG
 * with a size goes in, the file's bytes come out. */
#include "bench/internal.h"

#include <cairo-pdf.h>
#include <cairo.h>
#include <librsvg/rsvg.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SIDE 20000 /* pixels: our charts are about 1100 x 500 */
#define PT_PER_PX 0.75 /* a CSS pixel is 1/96 inch, a PDF point 1/72 */

#ifdef __has_feature
#define GS__ASAN __has_feature(address_sanitizer) /* clang */
#else
#define GS__ASAN 0
#endif
#if defined(__SANITIZE_ADDRESS__) || GS__ASAN
/* The sanitizer build's leak check: fontconfig (under librsvg's text, through
 * pango) keeps its font configuration and caches for the process's life and
 * frees them only in FcFini, which cannot run while pango holds its font map.
 * Those blocks are fontconfig's by design, not ours. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
  return "leak:libfontconfig.so\n";
}
#endif

/* cairo's output, grown in memory. */
struct sink {
  char *buf;
  size_t len, cap;
};

static cairo_status_t sink_write(void *closure, const unsigned char *data, unsigned int len)
{
  struct sink *s = closure;
  if (s->cap - s->len < len) {
    size_t cap = s->cap ? s->cap : 65536;
    char *nb;
    while (cap - s->len < len)
      cap *= 2;
    if (!(nb = realloc(s->buf, cap)))
      return CAIRO_STATUS_NO_MEMORY;
    s->buf = nb, s->cap = cap;
  }
  memcpy(s->buf + s->len, data, len);
  s->len += len;
  return CAIRO_STATUS_SUCCESS;
}

static int fail_glib(struct gs_err *err, const char *what, GError *ge)
{
  int rc = gs_err_set(err, GS_E_INVALID_ARGUMENT, "%s: %s", what, ge ? ge->message : "failed");
  if (ge)
    g_error_free(ge);
  return rc;
}

/* Draws the handle on a surface w x h of the format's units, into s. */
static int draw(struct gs_err *err, RsvgHandle *h, enum gs_bench_image fmt, double w, double hgt,
                struct sink *s)
{
  cairo_surface_t *sf = fmt == GS_BENCH_PNG
                            ? cairo_image_surface_create(CAIRO_FORMAT_ARGB32, (int)w, (int)hgt)
                            : cairo_pdf_surface_create_for_stream(sink_write, s, w, hgt);
  cairo_t *cr = cairo_create(sf);
  RsvgRectangle vp = {0, 0, w, hgt};
  GError *ge = NULL;
  cairo_status_t st = CAIRO_STATUS_SUCCESS;
  int rc = 0;
  if (!rsvg_handle_render_document(h, cr, &vp, &ge))
    rc = fail_glib(err, "rendering the chart", ge);
  cairo_destroy(cr);
  if (rc == 0 && fmt == GS_BENCH_PNG)
    st = cairo_surface_write_to_png_stream(sf, sink_write, s);
  cairo_surface_finish(sf); /* a PDF is written out here */
  if (rc == 0 && fmt != GS_BENCH_PNG)
    st = cairo_surface_status(sf);
  cairo_surface_destroy(sf);
  if (rc == 0 && st != CAIRO_STATUS_SUCCESS)
    rc = gs_err_set(err, st == CAIRO_STATUS_NO_MEMORY ? GS_E_NO_MEMORY : GS_E_IO,
                    "writing the chart as %s: %s", fmt == GS_BENCH_PNG ? "PNG" : "PDF",
                    cairo_status_to_string(st));
  return rc;
}

int gs_bench_plot_render(struct gs_err *err, const char *svg, size_t len, enum gs_bench_image fmt,
                         char **out, size_t *outlen)
{
  struct sink s = {0};
  GError *ge = NULL;
  RsvgHandle *h;
  double w = 0, hgt = 0, k = fmt == GS_BENCH_PDF ? PT_PER_PX : 1;
  int rc;
  *out = NULL;
  *outlen = 0;
  if (fmt != GS_BENCH_PNG && fmt != GS_BENCH_PDF)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "rendering the chart: PNG or PDF only");
  if (!(h = rsvg_handle_new_from_data((const guint8 *)svg, len, &ge)))
    return fail_glib(err, "reading the chart's SVG", ge);
  if (!rsvg_handle_get_intrinsic_size_in_pixels(h, &w, &hgt) || !(w >= 1 && w <= MAX_SIDE) ||
      !(hgt >= 1 && hgt <= MAX_SIDE))
    rc = gs_err_set(err, GS_E_INVALID_ARGUMENT, "the chart's SVG has no usable size (%g x %g)",
                    w, hgt);
  else
    rc = draw(err, h, fmt, ceil(w) * k, ceil(hgt) * k, &s);
  g_object_unref(h);
  if (rc) {
    free(s.buf);
    return rc;
  }
  *out = s.buf;
  *outlen = s.len;
  return 0;
}
