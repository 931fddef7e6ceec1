/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz-bench-json.c: libFuzzer target for what the load generator reads from
 * servers and users besides HTTP: model metadata (then shapes fixed and, when
 * small, an infer request built), perf_analyzer --input-data against a fixed
 * model, and Prometheus metrics text (a model's counters, by version too, and
 * the nv_gpu_* gauges, merged and written as --verbose-csv's GPU cells).
 * Refusals must be INVALID_ARGUMENT, NOT_SUPPORTED or NO_MEMORY, with a
 * message. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void refusal(int rc, const struct gs_err *err)
{
  if (rc != GS_E_INVALID_ARGUMENT && rc != GS_E_NOT_SUPPORTED && rc != GS_E_NO_MEMORY)
    abort();
  if (!err->msg[0])
    abort();
}

static void metadata(const char *text, size_t size)
{
  struct gs_bench_model m;
  struct gs_bench_samples s;
  struct gs_bench_url u;
  struct gs_err err = {0};
  const char *shapes[] = {"x:2,2"};
  char *req;
  size_t len;
  int rc = gs_bench_model_parse(&err, "fuzz-meta", text, size, &m);
  if (rc) {
    refusal(rc, &err);
    return;
  }
  rc = gs_bench_model_fix_shapes(&err, &m, 1, shapes, 1);
  if (rc) {
    refusal(rc, &err);
    return;
  }
  for (unsigned i = 0; i < m.ninputs; i++) /* keep the fuzzer fast: small tensors only */
    for (unsigned d = 0; d < m.inputs[i].ndims; d++)
      if (m.inputs[i].shape[d] > 64)
        return;
  if (gs_bench_samples_fill(&err, &m, false, 1, &s) != 0)
    return;
  gs_bench_url_parse(&err, "--url", "http://h:1", &u);
  for (int b = 0; b < 2; b++)
    if (gs_bench_infer_request(&err, &u, &m, &s.s[0], b, b, b ? "X-A: 1\r\n" : NULL, &req,
                               &len) == 0)
      free(req);
  gs_bench_samples_free(&s);
}

static void input_data(const char *text, size_t size)
{
  static const char meta[] = "{\"name\":\"m\",\"inputs\":[{\"name\":\"a\",\"datatype\":\"FP32\","
                             "\"shape\":[2,2]},{\"name\":\"b\",\"datatype\":\"INT8\",\"shape\":[3]},"
                             "{\"name\":\"c\",\"datatype\":\"BOOL\",\"shape\":[1]}]}";
  struct gs_bench_model m;
  struct gs_bench_samples s;
  struct gs_err err = {0};
  int rc;
  if (gs_bench_model_parse(&err, "meta", meta, sizeof(meta) - 1, &m) != 0 ||
      gs_bench_model_fix_shapes(&err, &m, 1, NULL, 0) != 0)
    abort();
  rc = gs_bench_samples_parse(&err, "fuzz-input", text, size, &m, &s);
  if (rc)
    refusal(rc, &err);
  else
    gs_bench_samples_free(&s);
}

/* The GPU gauges of one scrape, merged twice into a step, in its CSV row:
 * every uuid kept fits, and the row holds the four GPU cells. */
static void gpu_gauges(const char *text, size_t size)
{
  static struct gs_bench_step step;
  struct gs_bench_gpus *one = calloc(1, sizeof(*one));
  char *csv = NULL;
  size_t len = 0;
  FILE *f;
  if (!one)
    return;
  gs_bench_gpus_sample(one, text, size);
  memset(&step, 0, sizeof(step));
  step.stable = true, step.level = 1;
  gs_bench_gpus_merge(&step.gpus, one);
  gs_bench_gpus_merge(&step.gpus, one);
  for (unsigned i = 0; i < step.gpus.n; i++)
    if (!memchr(step.gpus.gpu[i].uuid, 0, sizeof(step.gpus.gpu[i].uuid)))
      abort();
  if ((f = open_memstream(&csv, &len))) {
    gs_bench_csv_write(f, &(struct gs_bench_csv){GS_BENCH_CLOSED, true, true, 0, true}, &step, 1);
    fclose(f);
  }
  free(csv);
  free(one);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  struct gs_bench_server srv;
  metadata((const char *)data, size);
  input_data((const char *)data, size);
  gs_bench_metrics_parse((const char *)data, size, "m", NULL, &srv);
  gs_bench_metrics_parse((const char *)data, size, "m", "1", &srv);
  gpu_gauges((const char *)data, size);
  return 0;
}
