/* SPDX-License-Identifier: Apache-2.0 */
/* internal.h: bench-layer internals shared between its files: the helpers
 * the run and the CLI-facing parsers share. Not part of the interface
 * (bench.h is). */
#ifndef GS_BENCH_INTERNAL_H
#define GS_BENCH_INTERNAL_H

#include "bench/bench.h"
#include "net/net.h"

#include <sys/types.h>

/* Resolves the URL's host and port (first address); fills a sockaddr_storage. */
struct sockaddr_storage;
int gs__bench_resolve(struct gs_err *err, const struct gs_bench_url *u,
                      struct sockaddr_storage *addr, unsigned *addrlen);

/* run.c's counting, for grpc.c's calls (w: run.c's thread). */
struct worker;
struct gs_net_loop;
void gs__bench_count_ok(struct worker *w, uint64_t intended_ns, uint64_t start_ns,
                        uint64_t sent_ns, uint64_t first_ns, uint64_t t);
void gs__bench_count_error(struct worker *w, enum gs_bench_error e);

/* grpc.c: slots calls outstanding on the thread's loop, over
 * ceil(slots / cfg->streams) h2c sessions; freed (with its sockets) by free. */
struct gs__bench_grpc;
int gs__bench_grpc_start(struct gs_err *err, struct worker *w, struct gs_net_loop *loop,
                         const struct gs_bench_config *cfg, const struct sockaddr_storage *addr,
                         unsigned addrlen, unsigned slots, struct gs__bench_grpc **out);
void gs__bench_grpc_free(struct gs__bench_grpc *g);

#endif
