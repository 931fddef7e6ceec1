/* fuzz-bench-json.c: libFuzzer target for what the load generator reads from
 * servers and users besides HTTP: model metadata (then shapes fixed and, when
 * small, an infer request built), perf_analyzer --input-data against a fixed
 * model, and Prometheus metrics text. Refusals must be INVALID_ARGUMENT,
 * NOT_SUPPORTED or NO_MEMORY, with a message. */
#include <stdint.h>
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
    if (gs_bench_infer_request(&err, &u, &m, &s.s[0], b, b, &req, &len) == 0)
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  struct gs_bench_server srv;
  metadata((const char *)data, size);
  input_data((const char *)data, size);
  gs_bench_metrics_parse((const char *)data, size, "m", &srv);
  return 0;
}
