/* SPDX-License-Identifier: Apache-2.0 */
/* internal.h: serve-layer internals shared between its files: the load
 * balancer's worker pool as its gRPC side uses it. Not part of the layer's
 * interface (serve.h is). */
#ifndef GS_SERVE_INTERNAL_H
#define GS_SERVE_INTERNAL_H

#include "serve/serve.h"

/* ---- the load balancer's pool, for its gRPC side (grpc_proxy.c) ---- */

/* Picks a worker for one call by the proxy's policy (avoid: one that just
 * failed, or any out-of-range id for a first attempt, which may be a worker's
 * trial: *trial then names it, else 0) and counts it in flight. GS_E_IN_USE
 * when every usable worker is at its in-flight limit, GS_E_NOT_FOUND when
 * none is usable. */
int gs__proxy_acquire(struct gs_proxy *p, size_t avoid, size_t *w, unsigned *trial);
enum gs__proxy_outcome {
  GS__PROXY_ANSWERED,      /* the worker answered (any gRPC status) */
  GS__PROXY_WORKER_FAILED, /* refused, reset or timed out: counts toward ejection */
  GS__PROXY_ABANDONED,     /* ended for another reason (client deadline) */
};
/* Ends a call acquire counted; us: its latency for the histograms; trial:
 * what acquire gave. */
void gs__proxy_release(struct gs_proxy *p, size_t w, enum gs__proxy_outcome o, uint64_t us,
                       unsigned trial);
/* Counts an error answer of the proxy's own. */
void gs__proxy_error(struct gs_proxy *p);
const struct gs_proxy_config *gs__proxy_config(const struct gs_proxy *p);
/* The memory budget for request bodies every thread shares, for the gRPC side. */
struct gs_net_budget *gs__proxy_budget(struct gs_proxy *p);
/* Client connections thread i of p's group serves (0: p's own loop), from any thread. */
unsigned gs__proxy_thread_conns(const struct gs_proxy *p, size_t i);

#endif
