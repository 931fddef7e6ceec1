/* SPDX-License-Identifier: Apache-2.0 */
/* grpc_internal.h: the load balancer's gRPC side shared between its unary
 * calls (grpc_proxy.c) and its streams (grpc_stream.c): the proxy's state,
 * its connections to the workers' gRPC ports, and how a call on one of
 * those connections hears its answer. Not part of the layer's interface. */
#ifndef GS_SERVE_GRPC_INTERNAL_H
#define GS_SERVE_GRPC_INTERNAL_H

#include "serve/internal.h"

enum { ST_OK = 0, ST_DEADLINE_EXCEEDED = 4, ST_RESOURCE_EXHAUSTED = 8, ST_UNIMPLEMENTED = 12, ST_INTERNAL = 13,
       ST_UNAVAILABLE = 14 };

#define MAX_RESPONSE (64u << 20) /* one worker answer message at most */

struct gcall;
struct gstream;

/* One HTTP/2 connection to a worker's gRPC port, shared by its calls. */
struct upsess {
  struct gs_proxy_grpc *g;
  size_t w; /* SIZE_MAX once retired: ending after its last call (its port changed) */
  unsigned port;
  struct gs_h2_client *h2;
  struct upsess *prev, *next; /* retired ones */
};

struct gs_proxy_grpc {
  struct gs_net_loop *loop;
  struct gs_proxy *p;
  const struct gs_super *super;
  struct gs_h2_server *h2;
  struct upsess **up; /* by worker id */
  size_t nup;
  struct upsess *retired;
  struct gcall *calls;
  struct gstream *streams; /* under way (grpc_stream.c) */
  size_t nstreams;
};

/* The first member of every call on a worker connection: the connection's
 * callbacks (gs_h2_client_ops) pass each call's events on to these. */
struct gs__grpc_upcall {
  void (*header)(void *call, const char *name, size_t nl, const char *value, size_t vl);
  bool (*data)(void *call, const uint8_t *data, size_t len);
  void (*closed)(void *call, uint32_t code);
  void (*drained)(void *call, size_t unsent); /* a stream's: its requests went on */
};

/* Worker w's connection, opened when there is none (or its port changed);
 * NULL when out of memory. */
struct upsess *gs__grpc_up_get(struct gs_proxy_grpc *g, size_t w, unsigned port);
/* Reads an answer's grpc-status (into *status, *have set) or grpc-message
 * (decoded into msg) header; other headers are ignored. */
void gs__grpc_status_header(const char *name, size_t nl, const char *value, size_t vl,
                            bool *have, int *status, char *msg, size_t msz);
/* A streaming call's events (net's gs_h2_request: opened, a message, its
 * end), carried to one worker for the stream's whole life. */
void gs__grpc_stream(struct gs_proxy_grpc *g, struct gs_h2_call *client,
                     const struct gs_h2_request *req);
/* Ends every stream still under way (UNAVAILABLE: the proxy is stopping),
 * before the workers' connections go. */
void gs__grpc_streams_stop(struct gs_proxy_grpc *g);

#endif
