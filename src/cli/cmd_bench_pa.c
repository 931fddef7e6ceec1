/* SPDX-License-Identifier: Apache-2.0 */
/* cmd_bench_pa.c: perf_analyzer's options that `gpuslice bench` refuses, and
 * why (docs/bench.md, "perf_analyzer's options", has every one of its options
 * with what bench does). cli_getopt says the reason instead of "unknown
 * option". Data and a lookup; nothing here parses a command line. */
#include "cli/cli.h"

#include <string.h>

/* perf_analyzer's options that bench refuses, and why (docs/bench.md, "perf_analyzer's
 * options"; its list: src/command_line_parser.cc at perf_analyzer 263c5f6e). */
static const struct {
  const char *word, *why;
} refused[] = {
    {"--bls-composing-models", "perf_analyzer takes composing models' times from Triton's "
     "statistics extension; bench reads the server's split from its Prometheus metrics, per "
     "model: measure a composing model with its own -m"},
    {"--model-signature-name", "a TensorFlow Serving option; bench speaks KServe v2 only"},
    {"--periodic-concurrency-range", "it needs --streaming (bidirectional gRPC streams to "
     "decoupled models), which bench does not send"},
    {"--request-period", "it goes with --periodic-concurrency-range, which needs --streaming "
     "(not sent by bench)"},
    {"--session-concurrency", "an OpenAI-service option (chat sessions); bench speaks KServe v2"},
    {"--request-parameter", "not implemented: bench sends no custom request parameters"},
    {"--fixed-schedule", "not implemented: bench reads no timestamps from --input-data; use "
     "--request-rate-range"},
    {"--num-of-sequences", "bench drives no sequence (stateful) models: it sends no sequence ids"},
    {"--sequence-length", "bench drives no sequence (stateful) models: it sends no sequence ids"},
    {"--sequence-length-variation", "bench drives no sequence (stateful) models"},
    {"--sequence-id-range", "bench drives no sequence (stateful) models: it sends no sequence ids"},
    {"--serial-sequences", "bench drives no sequence (stateful) models"},
    {"--string-data", "bench sends no BYTES (string) inputs: it refuses models that have them"},
    {"--string-length", "bench sends no BYTES (string) inputs: it refuses models that have them"},
    {"--output-shared-memory-size", "it sizes --shared-memory system|cuda regions, which bench "
     "does not use (tensors travel in the requests)"},
    {"--streaming", "bench's gRPC load is unary ModelInfer calls, not ModelStreamInfer streams"},
    {"--grpc-method", "a dynamic gRPC option; bench calls KServe v2's ModelInfer only"},
    {"--proto", "a dynamic gRPC option; bench calls KServe v2's ModelInfer only"},
    {"--ssl-grpc-use-ssl", "bench speaks plain HTTP/1.1 and h2c, no TLS: put a "
     "TLS-terminating proxy in front"},
    {"--ssl-grpc-root-certifications-file", "bench speaks h2c, no TLS"},
    {"--ssl-grpc-private-key-file", "bench speaks h2c, no TLS"},
    {"--ssl-grpc-certificate-chain-file", "bench speaks h2c, no TLS"},
    {"--ssl-https-verify-peer", "bench speaks plain HTTP/1.1, no TLS"},
    {"--ssl-https-verify-host", "bench speaks plain HTTP/1.1, no TLS"},
    {"--ssl-https-ca-certificates-file", "bench speaks plain HTTP/1.1, no TLS"},
    {"--ssl-https-client-certificate-file", "bench speaks plain HTTP/1.1, no TLS"},
    {"--ssl-https-client-certificate-type", "bench speaks plain HTTP/1.1, no TLS"},
    {"--ssl-https-private-key-file", "bench speaks plain HTTP/1.1, no TLS"},
    {"--ssl-https-private-key-type", "bench speaks plain HTTP/1.1, no TLS"},
    {"--triton-server-directory", "an option of Triton's in-process C API; bench measures a "
     "server over the network"},
    {"--model-repository", "an option of Triton's in-process C API; bench measures a server "
     "over the network"},
    {"--profile-export-file", "bench keeps a latency histogram per window, not a record per "
     "request, so it has no per-request timestamps to export (--json prints the steps)"},
    {"--trace-level", "bench changes no server settings: set Triton's tracing with its "
     "--trace-config or its trace extension"},
    {"--trace-rate", "bench changes no server settings: set Triton's tracing itself"},
    {"--trace-count", "bench changes no server settings: set Triton's tracing itself"},
    {"--log-frequency", "bench changes no server settings: set Triton's tracing itself"},
    {"--enable-mpi", "multi-model runs under MPI: run one bench per model instead"},
    {"--endpoint", "an OpenAI-service option; KServe v2 paths are fixed (any other path: "
     "--http-path)"},
    {"--data-directory", "deprecated by perf_analyzer for --input-data, and bench reads no "
     "directory of raw inputs: give --input-data FILE.json, random or zero"},
    {"-c", "deprecated by perf_analyzer: use --concurrency-range START:END"},
    {"-d", "deprecated by perf_analyzer: use --concurrency-range START:END"},
    {"-t", "deprecated by perf_analyzer: use --concurrency-range N"},
    {"-z", "deprecated by perf_analyzer: use --input-data zero"},
    {"-?", "use -h or --help"},
};

const char *cli_bench_refusal(const char *word)
{
  for (size_t i = 0; i < GS_NITEMS(refused); i++)
    if (strcmp(word, refused[i].word) == 0)
      return refused[i].why;
  return NULL;
}
