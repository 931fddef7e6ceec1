/* metrics.c: reads Triton's Prometheus counters (nv_inference_*, which our
 * emulated worker also exports) for one model, so each window gets the
 * server's queue and compute split as deltas of cumulative counters. */
#include "bench/internal.h"

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

/* True when the label set {...} of [p, e) has model="<model>". */
static bool has_model(const char *p, const char *e, const char *model)
{
  size_t ml = strlen(model);
  for (const char *q = p; q + 7 + ml + 1 <= e; q++)
    if (memcmp(q, "model=\"", 7) == 0 && (q == p || q[-1] == ',' || q[-1] == '{' || q[-1] == ' ')) {
      return memcmp(q + 7, model, ml) == 0 && q[7 + ml] == '"';
    }
  return false;
}

static void parse_line(const char *p, const char *e, const char *model, struct gs_bench_server *out)
{
  const char *brace, *close, *v;
  char num[64];
  size_t nl, n;
  double x;
  char *end;
  if (p == e || *p == '#')
    return;
  brace = memchr(p, '{', (size_t)(e - p));
  if (!brace || !(close = memchr(brace, '}', (size_t)(e - brace))))
    return;
  nl = (size_t)(brace - p);
  if (!has_model(brace, close, model))
    return;
  for (v = close + 1; v < e && *v == ' '; v++)
    ;
  n = (size_t)(e - v);
  if (!n || n >= sizeof(num))
    return;
  memcpy(num, v, n);
  num[n] = '\0';
  x = strtod(num, &end);
  if (end == num || !(x >= 0))
    return;
  for (size_t f = 0; f < GS_NITEMS(families); f++)
    if (strlen(families[f].name) == nl && memcmp(families[f].name, p, nl) == 0) {
      *(double *)((char *)out + families[f].off) += x;
      out->seen = true;
    }
}

int gs_bench_metrics_parse(const char *text, size_t len, const char *model,
                           struct gs_bench_server *out)
{
  const char *p = text, *end = text + len;
  memset(out, 0, sizeof(*out));
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p)), *e = nl ? nl : end;
    const char *sp = e;
    /* value then an optional timestamp: keep the first field after '}' */
    const char *close = memchr(p, '}', (size_t)(e - p));
    if (close) {
      const char *q = close + 1;
      while (q < e && *q == ' ')
        q++;
      sp = memchr(q, ' ', (size_t)(e - q));
      if (!sp)
        sp = e;
    }
    if (sp > p && sp[-1] == '\r')
      sp--;
    parse_line(p, sp, model, out);
    p = nl ? nl + 1 : end;
  }
  return out->seen ? 0 : GS_E_NOT_FOUND;
}
