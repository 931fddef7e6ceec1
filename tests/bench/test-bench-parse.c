/* SPDX-License-Identifier: Apache-2.0 */
/* test-bench-parse.c: the bench layer's parsers and writers without a
 * network (its HTTP responses are net's reader's: tests/net/test-http-
 * response.c): URLs, model metadata and --input-data (good
 * and refused, each refusal naming the input), infer request framing,
 * Triton metrics, the CSV round trip and the SVG plot, --request-intervals
 * files. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"

static void urls(void **state)
{
  struct gs_bench_url u;
  struct gs_err err = {0};
  (void)state;
  assert_int_equal(gs_bench_url_parse(&err, "--url", "http://localhost:8000", &u), 0);
  assert_string_equal(u.host, "localhost");
  assert_string_equal(u.port, "8000");
  assert_string_equal(u.prefix, "");
  assert_int_equal(gs_bench_url_parse(&err, "--url", "10.0.0.1/triton/", &u), 0);
  assert_string_equal(u.port, "80");
  assert_string_equal(u.prefix, "/triton");
  assert_int_equal(gs_bench_url_parse(&err, "--url", "http://[::1]:9/", &u), 0);
  assert_string_equal(u.host, "::1");
  assert_int_equal(gs_bench_url_parse(&err, "--url", "https://x", &u), GS_E_INVALID_ARGUMENT);
  assert_non_null(strstr(err.msg, "https"));
  assert_int_equal(gs_bench_url_parse(&err, "--url", "http://x:0", &u), GS_E_INVALID_ARGUMENT);
  assert_int_equal(gs_bench_url_parse(&err, "--url", "http://:80", &u), GS_E_INVALID_ARGUMENT);
}

static const char flower_meta[] =
    "{\"name\":\"flower\",\"versions\":[\"1\"],\"platform\":\"x\",\"inputs\":[{\"name\":\"input\","
    "\"datatype\":\"FP32\",\"shape\":[1,3,2,2]}],\"outputs\":[]}";

static void metadata_and_shapes(void **state)
{
  struct gs_bench_model m;
  struct gs_err err = {0};
  const char *shape[] = {"tokens:7"};
  static const char *const bad[] = {
      "[]", "{\"name\":\"m\"}", "{\"inputs\":[{\"name\":\"a\"}]}",
      "{\"inputs\":[{\"name\":\"a\",\"datatype\":\"FP32\",\"shape\":[\"x\"]}]}",
      "{\"inputs\":[{\"name\":\"a\",\"datatype\":\"FP32\",\"shape\":[1,2,3,4,5,6,7,8,9]}]}", "{",
  };
  (void)state;
  assert_int_equal(gs_bench_model_parse(&err, "meta", flower_meta, strlen(flower_meta), &m), 0);
  assert_int_equal(m.ninputs, 1);
  assert_int_equal(m.inputs[0].shape[1], 3);
  assert_int_equal(gs_bench_model_fix_shapes(&err, &m, 2, NULL, 0), GS_E_INVALID_ARGUMENT);
  assert_non_null(strstr(err.msg, "--batch-size 1"));
  for (size_t i = 0; i < GS_NITEMS(bad); i++) {
    err.msg[0] = 0;
    assert_int_equal(gs_bench_model_parse(&err, "meta", bad[i], strlen(bad[i]), &m),
                     GS_E_INVALID_ARGUMENT);
    assert_non_null(strstr(err.msg, "meta"));
  }
  {
    const char *var = "{\"name\":\"t\",\"inputs\":[{\"name\":\"tokens\",\"datatype\":\"INT64\","
                      "\"shape\":[-1,-1]}]}";
    assert_int_equal(gs_bench_model_parse(&err, "meta", var, strlen(var), &m), 0);
    assert_int_equal(gs_bench_model_fix_shapes(&err, &m, 4, NULL, 0), GS_E_INVALID_ARGUMENT);
    assert_non_null(strstr(err.msg, "--shape tokens"));
    assert_int_equal(gs_bench_model_parse(&err, "meta", var, strlen(var), &m), 0);
    assert_int_equal(gs_bench_model_fix_shapes(&err, &m, 4, shape, 1), 0);
    assert_int_equal(m.inputs[0].shape[0], 4);
    assert_int_equal(m.inputs[0].shape[1], 7);
  }
}

static void input_data(void **state)
{
  struct gs_bench_model m;
  struct gs_bench_samples s;
  struct gs_err err = {0};
  const char *good = "{\"data\":[{\"input\":[[0,1,2,3],[4,5,6,7],[8,9,10,11]]},"
                     "{\"input\":{\"content\":[1,1,1,1,1,1,1,1,1,1,1,1],\"shape\":[1,3,2,2]}}]}";
  static const char *const bad[] = {
      "{\"data\":[{\"input\":[1,2]}]}", "{\"data\":[{\"other\":[1]}]}", "{\"data\":[]}",
      "{\"data\":[{\"input\":[\"a\",1,1,1,1,1,1,1,1,1,1,1]}]}", "[1]", "{\"data\":[3]}",
  };
  float f;
  (void)state;
  assert_int_equal(gs_bench_model_parse(&err, "meta", flower_meta, strlen(flower_meta), &m), 0);
  assert_int_equal(gs_bench_model_fix_shapes(&err, &m, 1, NULL, 0), 0);
  assert_int_equal(gs_bench_samples_parse(&err, "in.json", good, strlen(good), &m, &s), 0);
  assert_int_equal(s.n, 2);
  assert_int_equal(s.s[0].len[0], 12 * 4);
  memcpy(&f, s.s[0].data[0] + 11 * 4, 4);
  assert_true(f == 11.0f);
  gs_bench_samples_free(&s);
  for (size_t i = 0; i < GS_NITEMS(bad); i++) {
    err.msg[0] = 0;
    assert_int_equal(gs_bench_samples_parse(&err, "in.json", bad[i], strlen(bad[i]), &m, &s),
                     GS_E_INVALID_ARGUMENT);
    assert_non_null(strstr(err.msg, "in.json"));
  }
}

static void infer_request_framing(void **state)
{
  struct gs_bench_model m;
  struct gs_bench_samples s;
  struct gs_bench_url u;
  struct gs_err err = {0};
  char *req, *body;
  size_t len, clen, hlen;
  (void)state;
  assert_int_equal(gs_bench_url_parse(&err, "--url", "http://h:1/p", &u), 0);
  assert_int_equal(gs_bench_model_parse(&err, "meta", flower_meta, strlen(flower_meta), &m), 0);
  assert_int_equal(gs_bench_model_fix_shapes(&err, &m, 1, NULL, 0), 0);
  assert_int_equal(gs_bench_samples_fill(&err, &m, false, 7, &s), 0);
  for (int binary = 0; binary < 2; binary++) {
    assert_int_equal(gs_bench_infer_request(&err, &u, &m, &s.s[0], binary, binary, NULL, &req,
                                            &len), 0);
    assert_memory_equal(req, "POST /p/v2/models/flower/infer HTTP/1.1\r\n", 41);
    body = strstr(req, "\r\n\r\n") + 4;
    assert_int_equal(sscanf(strstr(req, "\nContent-Length: "), "\nContent-Length: %zu", &clen), 1);
    assert_int_equal(clen, len - (size_t)(body - req));
    if (binary) {
      assert_int_equal(sscanf(strstr(req, "Inference-Header-Content-Length: "),
                              "Inference-Header-Content-Length: %zu", &hlen), 1);
      assert_int_equal(clen - hlen, 48);
      assert_memory_equal(body + hlen, s.s[0].data[0], 48);
    } else {
      assert_non_null(strstr(body, "\"data\":["));
    }
    free(req);
  }
  /* -x 3 and -H: the version's path, the headers among the request's */
  strcpy(m.version, "3");
  assert_int_equal(gs_bench_infer_request(&err, &u, &m, &s.s[0], true, true, "X-A: 1\r\nX-B: 2\r\n",
                                          &req, &len), 0);
  assert_memory_equal(req, "POST /p/v2/models/flower/versions/3/infer HTTP/1.1\r\n", 52);
  body = strstr(req, "\r\n\r\n");
  assert_true(strstr(req, "\r\nX-A: 1\r\nX-B: 2\r\n") && strstr(req, "\r\nX-A: 1") < body);
  free(req);
  gs_bench_samples_free(&s);
}

static void triton_metrics(void **state)
{
  const char *text =
      "# HELP nv_inference_request_success x\n"
      "nv_inference_request_success{model=\"flower\",version=\"1\"} 10\n"
      "nv_inference_request_success{model=\"flower2\",version=\"1\"} 99\n"
      "nv_inference_queue_duration_us{gpu_uuid=\"a\",model=\"flower\",version=\"1\"} 200 1700000\n"
      "nv_inference_queue_duration_us{model=\"flower\",version=\"2\"} 100\n"
      "nv_inference_compute_infer_duration_us{model=\"flower\",version=\"1\"} 5e3\r\n"
      "nv_inference_compute_infer_duration_us{model=\"flower\"} garbage\n";
  struct gs_bench_server s;
  (void)state;
  assert_int_equal(gs_bench_metrics_parse(text, strlen(text), "flower", NULL, &s), 0);
  assert_true(s.success == 10);
  assert_true(s.queue_us == 300);
  assert_true(s.cinfer_us == 5000);
  assert_int_equal(gs_bench_metrics_parse(text, strlen(text), "bert", NULL, &s), GS_E_NOT_FOUND);
  /* -x 2: only version 2's series */
  assert_int_equal(gs_bench_metrics_parse(text, strlen(text), "flower", "2", &s), 0);
  assert_true(s.success == 0 && s.queue_us == 100 && s.cinfer_us == 0);
  assert_int_equal(gs_bench_metrics_parse(text, strlen(text), "flower", "3", &s), GS_E_NOT_FOUND);
}

static void csv_round_trip_and_plot(void **state)
{
  struct gs_bench_step steps[3] = {0};
  struct gs_bench_series s[2];
  struct gs_err err = {0};
  char *text = NULL, *svg = NULL;
  size_t len, slen;
  FILE *f = open_memstream(&text, &len);
  (void)state;
  for (int i = 0; i < 3; i++) {
    steps[i].level = 3 - i; /* written in run order, read back sorted */
    steps[i].stable = i != 1;
    steps[i].throughput = 100.5 * (3 - i);
    steps[i].p90_us = 1000u * (unsigned)(3 - i);
  }
  assert_int_equal(gs_bench_csv_write(f, &(struct gs_bench_csv){GS_BENCH_CLOSED, true, false, 0,
                                                                 false}, steps, 3), 0);
  fclose(f);
  /* the header's exact text, against perf_analyzer's: test-bench-csv.c */
  assert_non_null(strstr(text, "Concurrency,Inferences/Second,Client Send,Network+Server "
                               "Send/Recv,Server Queue,Server Compute Input,Server Compute Infer,"
                               "Server Compute Output,Client Recv,p50 latency,p90 latency,"
                               "p95 latency,p99 latency\n"));
  assert_int_equal(gs_bench_csv_read(&err, "a.csv", text, len, "p90 latency", &s[0]), 0);
  assert_int_equal(s[0].n, 2); /* the unstable step is not a row */
  assert_true(s[0].x[0] == 1 && s[0].x[1] == 3);
  assert_true(s[0].latency_us[1] == 3000 && s[0].throughput[0] == 100.5);
  assert_int_equal(gs_bench_csv_read(&err, "b.csv", text, len, "p91 latency", &s[1]),
                   GS_E_INVALID_ARGUMENT);
  assert_non_null(strstr(err.msg, "b.csv"));
  assert_int_equal(gs_bench_csv_read(&err, "c.csv", "Concurrency,Inferences/Second,p90 latency\n"
                                     "1,x,3\n", 48, "p90 latency", &s[1]), GS_E_INVALID_ARGUMENT);
  assert_non_null(strstr(err.msg, "c.csv:2"));
  assert_int_equal(gs_bench_csv_read(&err, "d.csv", text, len, "p90 latency", &s[1]), 0);
  strcpy(s[0].label, "1 <slice>");
  strcpy(s[1].label, "7 slices");
  assert_int_equal(gs_bench_plot_svg(&err, s, 2, "p90 latency", 50000, &svg, &slen), 0);
  assert_non_null(strstr(svg, "<svg"));
  assert_non_null(strstr(svg, "1 &lt;slice&gt;"));
  assert_non_null(strstr(svg, "7 slices"));
  assert_non_null(strstr(svg, "latency budget 50 ms"));
  assert_non_null(strstr(svg, "</svg>"));
  free(svg);
  gs_bench_series_free(&s[0]);
  gs_bench_series_free(&s[1]);
  free(text);
}

/* --request-intervals: microseconds in, nanoseconds out, and each refusal
 * naming the file, the line and the word. */
static void request_intervals(void **state)
{
  struct gs_err err = {0};
  double *g = NULL;
  size_t n = 0;
  static const char *const bad[][2] = {
      {"100\n-5\n", "iv.txt:2: '-5'"},    {"100\nfast\n", "iv.txt:2: 'fast'"},
      {"1e12\n", "iv.txt:1: '1e12'"},      {"nan\n", "iv.txt:1: 'nan'"},
      {"  \n\n", "iv.txt: no intervals"}, {"0\n0\n", "add up to 0"},
      {"12ms\n", "iv.txt:1: '12ms'"},     {"inf", "iv.txt:1: 'inf'"}};
  (void)state;
  const char *good = "2000\n18000 0.5\r\n\n7";
  assert_int_equal(gs_bench_intervals_parse(&err, "iv.txt", good, strlen(good), &g, &n), 0);
  assert_int_equal(n, 4);
  assert_true(g[0] == 2e6 && g[1] == 18e6 && g[2] == 500 && g[3] == 7000);
  assert_true(fabs(gs_bench_intervals_rate(g, n) - 4e9 / 20007500) < 1e-9);
  free(g);
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    g = NULL;
    assert_int_equal(gs_bench_intervals_parse(&err, "iv.txt", bad[i][0], strlen(bad[i][0]), &g, &n),
                     GS_E_INVALID_ARGUMENT);
    assert_null(g);
    if (!strstr(err.msg, bad[i][1]))
      fail_msg("'%s': '%s' does not say '%s'", bad[i][0], err.msg, bad[i][1]);
  }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(urls),
      cmocka_unit_test(metadata_and_shapes),
      cmocka_unit_test(input_data),
      cmocka_unit_test(infer_request_framing),
      cmocka_unit_test(triton_metrics),
      cmocka_unit_test(csv_round_trip_and_plot),
      cmocka_unit_test(request_intervals),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
