/* SPDX-License-Identifier: Apache-2.0 */
/* test-bench-csv.c: bench's CSV against perf_analyzer's. The expected
 * headers are transcribed from perf_analyzer's ReportWriter::GenerateReport,
 * src/report_writer.cc at commit 263c5f6e0c7a6c15472a54409174981f67930cfe
 * (github.com/triton-inference-server/perf_analyzer, 2025-12-15): the first
 * column by load mode, the server's five columns only with server figures,
 * the percentile columns from its std::set {50, 90, 95, 99, --percentile},
 * and --verbose-csv's "Avg latency" (only without --percentile),
 * "request/response", "response wait" and, with --collect-metrics, the four
 * GPU columns. Rows: the steps that met (stable, under the threshold), in
 * increasing inferences/s; whole µs; an unknown server figure is an empty
 * cell, not 0. Also the nv_gpu_* reading behind the GPU columns. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"

/* The CSV of steps as o says; the caller frees. */
static char *csv(const struct gs_bench_csv *o, const struct gs_bench_step *s, size_t n)
{
  char *text = NULL;
  size_t len;
  FILE *f = open_memstream(&text, &len);
  assert_non_null(f);
  assert_int_equal(gs_bench_csv_write(f, o, s, n), 0);
  assert_int_equal(fclose(f), 0);
  return text;
}

static void header_is(const struct gs_bench_csv *o, const char *want)
{
  struct gs_bench_step none = {0};
  char *text = csv(o, &none, 0);
  size_t wl = strlen(want);
  if (strncmp(text, want, wl) != 0 || strcmp(text + wl, "\n") != 0)
    fail_msg("header\n  got:  %s  want: %s", text, want);
  free(text);
}

/* perf_analyzer's header, case by case (report_writer.cc, lines 72-112 at 263c5f6e). */
static void headers_as_perf_analyzer(void **state)
{
  (void)state;
  /* Triton (statistics extension), concurrency: the common case */
  header_is(&(struct gs_bench_csv){GS_BENCH_CLOSED, true, false, 0, false},
            "Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,"
            "Server Compute Input,Server Compute Infer,Server Compute Output,Client Recv,"
            "p50 latency,p90 latency,p95 latency,p99 latency");
  /* no server figures sought: no server columns at all */
  header_is(&(struct gs_bench_csv){GS_BENCH_OPEN, false, false, 0, false},
            "Request Rate,Inferences/Second,Client Send,Client Recv,p50 latency,p90 latency,"
            "p95 latency,p99 latency");
  /* --verbose-csv */
  header_is(&(struct gs_bench_csv){GS_BENCH_CLOSED, true, true, 0, false},
            "Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,"
            "Server Compute Input,Server Compute Infer,Server Compute Output,Client Recv,"
            "p50 latency,p90 latency,p95 latency,p99 latency,Avg latency,request/response,"
            "response wait");
  /* --percentile 85 --verbose-csv: p85 in order, and no Avg latency */
  header_is(&(struct gs_bench_csv){GS_BENCH_CLOSED, true, true, 85, false},
            "Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,"
            "Server Compute Input,Server Compute Infer,Server Compute Output,Client Recv,"
            "p50 latency,p85 latency,p90 latency,p95 latency,p99 latency,request/response,"
            "response wait");
  /* a percentile already among the four is not repeated; one above them comes last */
  header_is(&(struct gs_bench_csv){GS_BENCH_CLOSED, false, false, 95, false},
            "Concurrency,Inferences/Second,Client Send,Client Recv,p50 latency,p90 latency,"
            "p95 latency,p99 latency");
  header_is(&(struct gs_bench_csv){GS_BENCH_CLOSED, false, false, 99.9, false},
            "Concurrency,Inferences/Second,Client Send,Client Recv,p50 latency,p90 latency,"
            "p95 latency,p99 latency,p99.9 latency");
  header_is(&(struct gs_bench_csv){GS_BENCH_CLOSED, false, false, 10, false},
            "Concurrency,Inferences/Second,Client Send,Client Recv,p10 latency,p50 latency,"
            "p90 latency,p95 latency,p99 latency");
  /* --collect-metrics --verbose-csv */
  header_is(&(struct gs_bench_csv){GS_BENCH_OPEN, true, true, 0, true},
            "Request Rate,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,"
            "Server Compute Input,Server Compute Infer,Server Compute Output,Client Recv,"
            "p50 latency,p90 latency,p95 latency,p99 latency,Avg latency,request/response,"
            "response wait,Avg GPU Utilization,Avg GPU Power Usage,Max GPU Memory Usage,"
            "Total GPU Memory");
}

static struct gs_bench_step step(double level, double throughput, bool stable, bool over)
{
  struct gs_bench_step s = {.level = level, .stable = stable, .over = over,
                            .throughput = throughput, .send_us = 12.9, .recv_us = 3.2,
                            .p50_us = 500, .p90_us = 900, .p95_us = 950, .p99_us = 990,
                            .pextra_us = 850, .avg_us = 600.7};
  return s;
}

static void rows_as_perf_analyzer(void **state)
{
  struct gs_bench_step s[5] = {step(4, 300.25, true, false), step(1, 100, true, false),
                               step(8, 50, false, false), step(2, 200.5, true, false),
                               step(16, 310, true, true)};
  char *text;
  (void)state;
  /* step 4 has the server's figures, the others not (behind a proxy without them) */
  s[0].server = (struct gs_bench_server){.seen = true, .queue_us = 100.9, .cin_us = 1,
                                         .cinfer_us = 400.2, .cout_us = 2};
  s[0].server_net_us = 83.6;
  text = csv(&(struct gs_bench_csv){GS_BENCH_CLOSED, true, false, 0, false}, s, 5);
  /* unstable (8) and over the threshold (16) are not rows; the rest by throughput */
  assert_string_equal(text, "Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,"
                            "Server Queue,Server Compute Input,Server Compute Infer,"
                            "Server Compute Output,Client Recv,p50 latency,p90 latency,"
                            "p95 latency,p99 latency\n"
                            "1,100,12,,,,,,3,500,900,950,990\n"
                            "2,200.5,12,,,,,,3,500,900,950,990\n"
                            "4,300.25,12,83,100,1,400,2,3,500,900,950,990\n");
  free(text);
  /* request rates as perf_analyzer's ostream prints doubles; verbose columns; p85 */
  s[1].level = 12.5;
  text = csv(&(struct gs_bench_csv){GS_BENCH_OPEN, false, true, 85, false}, &s[1], 1);
  assert_string_equal(text, "Request Rate,Inferences/Second,Client Send,Client Recv,p50 latency,"
                            "p85 latency,p90 latency,p95 latency,p99 latency,request/response,"
                            "response wait\n"
                            "12.5,100,12,3,500,850,900,950,990,15,585\n");
  free(text);
  text = csv(&(struct gs_bench_csv){GS_BENCH_OPEN, false, true, 0, false}, &s[1], 1);
  assert_non_null(strstr(text, "\n12.5,100,12,3,500,900,950,990,600,15,585\n"));
  free(text);
}

static const char gpu_text[] =
    "# HELP nv_gpu_utilization GPU utilization rate [0.0 - 1.0)\n"
    "nv_gpu_utilization{gpu_uuid=\"GPU-b\"} 0.5\n"
    "nv_gpu_utilization{gpu_uuid=\"GPU-a\"} 0.25\n"
    "nv_gpu_power_usage{gpu_uuid=\"GPU-a\"} 100\n"
    "nv_gpu_memory_used_bytes{gpu_uuid=\"GPU-a\",profile=\"1g.5gb\"} 2000\n"
    "nv_gpu_memory_total_bytes{gpu_uuid=\"GPU-a\"} 40000\n"
    "nv_gpu_memory_total_bytes{model=\"x\"} 7\n"           /* no gpu_uuid: not a GPU's */
    "nv_gpu_utilization{gpu_uuid=\"GPU-c\"} -1\n"          /* negative: not a reading */
    "nv_inference_count{gpu_uuid=\"GPU-a\",model=\"m\"} 9\n";

static void gpu_gauges(void **state)
{
  static const char later[] = "nv_gpu_utilization{gpu_uuid=\"GPU-a\"} 0.75\n"
                              "nv_gpu_memory_used_bytes{gpu_uuid=\"GPU-a\"} 1000\n"
                              "nv_gpu_memory_total_bytes{gpu_uuid=\"GPU-a\"} 1\n";
  struct gs_bench_gpus *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
  struct gs_bench_step *x = calloc(1, sizeof(*x));
  char *text;
  (void)state;
  gs_bench_gpus_sample(a, gpu_text, sizeof(gpu_text) - 1);
  assert_int_equal(a->n, 2);
  /* a second window: utilization averages over samples, memory used keeps its largest,
   * total memory its first */
  gs_bench_gpus_sample(b, later, strlen(later));
  gs_bench_gpus_merge(&x->gpus, a);
  gs_bench_gpus_merge(&x->gpus, b);
  *x = (struct gs_bench_step){.level = 1, .stable = true, .throughput = 10, .gpus = x->gpus};
  text = csv(&(struct gs_bench_csv){GS_BENCH_CLOSED, false, true, 0, true}, x, 1);
  /* GPUs in uuid order; a GPU without a gauge is left out of that cell */
  assert_non_null(strstr(text, ",GPU-a:0.5;GPU-b:0.5;,GPU-a:100;,GPU-a:2000;,GPU-a:40000;\n"));
  free(text);
  free(a), free(b), free(x);
}

static void gpu_gauges_bounded(void **state)
{
  struct gs_bench_gpus *a = calloc(1, sizeof(*a));
  char line[128];
  (void)state;
  for (int i = 0; i < GS_BENCH_MAX_GPUS + 3; i++) {
    snprintf(line, sizeof(line), "nv_gpu_utilization{gpu_uuid=\"GPU-%d\"} 0.1\n", i);
    gs_bench_gpus_sample(a, line, strlen(line));
  }
  assert_int_equal(a->n, GS_BENCH_MAX_GPUS);
  assert_int_equal(a->dropped, 3);
  free(a);
}

/* A gauge past what a whole number holds is written as the largest one, not
 * converted out of range (found by fuzz-bench-json). */
static void huge_values(void **state)
{
  static const char text[] = "nv_gpu_memory_used_bytes{gpu_uuid=\"G\"} 1e300\n";
  struct gs_bench_step *x = calloc(1, sizeof(*x));
  char *out;
  (void)state;
  x->stable = true, x->level = 1, x->throughput = 1;
  gs_bench_gpus_sample(&x->gpus, text, sizeof(text) - 1);
  out = csv(&(struct gs_bench_csv){GS_BENCH_CLOSED, false, true, 0, true}, x, 1);
  assert_non_null(strstr(out, ",,,G:18446744073709551615;,\n"));
  free(out);
  free(x);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(headers_as_perf_analyzer),
      cmocka_unit_test(rows_as_perf_analyzer),
      cmocka_unit_test(gpu_gauges),
      cmocka_unit_test(gpu_gauges_bounded),
      cmocka_unit_test(huge_values),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
