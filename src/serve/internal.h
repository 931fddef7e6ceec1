/* internal.h: serve-layer internals shared between its files and its fuzz
 * target: picohttpparser's declarations (http.c and proxy.c parse with it),
 * and a connection without a socket, fed bytes in-process, so the whole
 * request path (parse, limits, handler, response) runs without networking.
 * Not part of the layer's interface (serve.h is). */
#ifndef GS_SERVE_INTERNAL_H
#define GS_SERVE_INTERNAL_H

#include "serve/serve.h"

#include <sys/types.h>

/* picohttpparser as libh2o exports it (Debian ships no header for it). Our
 * declarations of its documented API: phr_parse_request returns the head's
 * length, -1 when malformed, -2 when incomplete. */
struct phr_header {
  const char *name;
  size_t name_len;
  const char *value;
  size_t value_len;
};
int phr_parse_request(const char *buf, size_t len, const char **method, size_t *method_len,
                      const char **path, size_t *path_len, int *minor_version,
                      struct phr_header *headers, size_t *num_headers, size_t last_len);
/* Returns as phr_parse_request does, for a response head (the proxy's upstream side). */
int phr_parse_response(const char *buf, size_t len, int *minor_version, int *status,
                       const char **msg, size_t *msg_len, struct phr_header *headers,
                       size_t *num_headers, size_t last_len);

/* ---- HTTP/1.1 message rules (http1.c) ---- */

/* A chunked body being decoded; all zero (gs__chunked_init) before its first byte. */
struct gs__chunked {
  uint64_t left;  /* bytes of the current chunk still to come */
  uint64_t total; /* data bytes decoded so far */
  unsigned line;  /* bytes of the current size, extension or trailer line */
  unsigned char state;
  bool digits, ext, cr;
};
#define GS__CHUNK_MORE (-2)    /* the body goes on: more bytes needed */
#define GS__CHUNK_BAD (-1)     /* malformed framing (400 from a client, 502 from a worker) */
#define GS__CHUNK_TOO_BIG (-3) /* a chunk size takes the body past max (413) */
void gs__chunked_init(struct gs__chunked *d);
/* Decodes len bytes at buf in place, as picohttpparser's decoder does: the
 * data bytes move to buf's front and *len becomes their count. Returns
 * GS__CHUNK_MORE, GS__CHUNK_BAD, GS__CHUNK_TOO_BIG (data beyond max bytes in
 * all, known from the chunk's size line before any of its data), or, once
 * the body ended, the count of bytes after it (moved to just after the data).
 * Chunk sizes are bare hex (RFC 9112 §7.1): "0x3" is malformed. */
ssize_t gs__chunked_decode(struct gs__chunked *d, char *buf, size_t *len, uint64_t max);
/* True when the comma-separated list v (a header value) has tok as one of
 * its elements, case-insensitively ("close" is in "keep-alive, Close"). */
bool gs__http_list_has(const char *v, size_t n, const char *tok, size_t tn);
/* True when the header named name must not be passed on by a proxy: a
 * hop-by-hop field, or one named in a Connection header (conn: the
 * message's Connection headers, nconn of them). */
bool gs__http_hop_header(const char *name, size_t nl, const struct gs_http_header *conn,
                         size_t nconn);

/* ---- accepting under one connection limit (loop.c) ---- */

/* Client connections of one listener, which several accept loops may count
 * together (the proxy's HTTP threads). count changes with atomic operations. */
struct gs__conns {
  unsigned max;
  unsigned count;
};
/* Closes one idle connection of the caller's (counted in the same limit) to
 * make room; false when it has none. */
typedef bool gs__evict_fn(void *ctx);
/* The next connection waiting on the listening fd, non-blocking, TCP_NODELAY,
 * counted in lim; -1 when none waits (EAGAIN, or a transient error such as
 * EMFILE: the listener's next event retries). Beyond lim->max, evict (may be
 * NULL) is asked to make room; when it cannot, the new connection is closed
 * at once, unanswered. */
int gs__accept(int fd, struct gs__conns *lim, gs__evict_fn *evict, void *ctx);
/* Uncounts a connection gs__accept counted, once it is closed. */
void gs__conns_put(struct gs__conns *lim);
/* A server's idle connections (waiting for a request, nothing to send),
 * oldest first: the ones an evict_fn closes first. A node lives in its
 * connection, which finds itself from it with offsetof. */
struct gs__idle_node {
  struct gs__idle_node *prev, *next;
  bool on;
};
struct gs__idle_list {
  struct gs__idle_node *first, *last;
};
/* Puts n at the end of l when idle and it is not on it, takes it off when not. */
void gs__idle_set(struct gs__idle_list *l, struct gs__idle_node *n, bool idle);

/* ---- a memory budget shared by threads (budget.c) ---- */

/* Bytes of request bodies held at once (the proxy's retry buffers and whole
 * gRPC messages), against max; used changes with atomic operations. */
struct gs__budget {
  size_t max;
  size_t used;
};
/* Takes n bytes; false, taking nothing, when that would pass max. */
bool gs__budget_take(struct gs__budget *b, size_t n);
void gs__budget_put(struct gs__budget *b, size_t n);
size_t gs__budget_used(const struct gs__budget *b);

/* ---- the HTTP/1.1 server's internals (http.c) ---- */

/* Servers that count their connections in lim (which outlives them) rather
 * than against their own limit. Set before the first connection. */
void gs__http_server_share_conns(struct gs_http_server *s, struct gs__conns *lim);
/* Threads accepting from one socket (the proxy's): route_fn sees each
 * connection s accepted (counted in its limit) and returns true when it took
 * it elsewhere; another server's thread then serves it with
 * gs__http_server_adopt (which fails only after closing and uncounting it).
 * gs_http_server_conns may be read from any thread. Set before the first
 * connection. */
typedef bool gs__http_route_fn(void *ctx, int fd);
void gs__http_server_route(struct gs_http_server *s, gs__http_route_fn *fn, void *ctx);
int gs__http_server_adopt(struct gs_http_server *s, int fd);

/* A connection with no fd: responses are counted and discarded. NULL on no memory. */
struct gs_http_conn *gs__http_conn_mem(struct gs_http_server *s);
/* Appends bytes as if read from the peer and processes them; eof = the peer
 * closed its side. Returns false once the connection has ended (and was freed). */
bool gs__http_conn_feed(struct gs_http_conn *c, const void *data, size_t len, bool eof);
/* Frees a connection whatever its state. */
void gs__http_conn_free(struct gs_http_conn *c);
/* Bytes of responses written so far (for the fuzz target's sanity checks). */
size_t gs__http_conn_sent(const struct gs_http_conn *c);

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
struct gs__budget *gs__proxy_budget(struct gs_proxy *p);
/* Client connections thread i of p's group serves (0: p's own loop), from any thread. */
unsigned gs__proxy_thread_conns(const struct gs_proxy *p, size_t i);

/* ---- the worker's internals its gRPC front end (grpc.c) shares ---- */

#define GS__MAX_TENSORS 3

struct gs__tensor {
  const char *name, *datatype; /* datatype: "FP32" or "INT32" (4 bytes an element) */
  unsigned ndims;
  const int64_t *shape;
  size_t elements;
};

struct gs__model {
  unsigned idx;
  const char *name;
  unsigned nin, nout;
  struct gs__tensor in[GS__MAX_TENSORS], out[GS__MAX_TENSORS];
};

/* A served model by name; GS_E_NOT_FOUND when unknown or not served. */
int gs__worker_model(const struct gs_serve_worker *w, const char *name, size_t len,
                     struct gs__model *out);
/* The served models' names in buf (n entries at most, NULL-terminated). */
const char *const *gs__worker_enabled_models(const struct gs_serve_worker *w, const char **buf,
                                             size_t n);
bool gs__worker_ready(const struct gs_serve_worker *w);
/* Counts a refused request of model idx (nv_inference_request_failure). */
void gs__worker_failed(struct gs_serve_worker *w, unsigned idx);
/* ok: the request held the modelled slice and is counted a success; false:
 * the worker is being freed and the request never ran. */
typedef void gs__worker_done_fn(void *ctx, bool ok, uint64_t queue_us, uint64_t compute_us);
/* Queues one request of model idx on the modelled slice, as an HTTP infer. */
int gs__worker_enqueue(struct gs_serve_worker *w, unsigned idx, gs__worker_done_fn *done, void *ctx);
/* Output tensor k's values for inputs hashing to hash (the HTTP path's too). */
void gs__worker_output_values(uint64_t hash, unsigned k, float *v, size_t n);

/* ---- gRPC over HTTP/2 (h2.c): the server side of unary calls ---- */

struct gs_h2_call;
struct gs_h2_server;
/* One call whose request message arrived whole (END_STREAM). path: ":path";
 * msg: the message without its 5-byte gRPC prefix, which precedes it (msg -
 * 5 holds the framed message), valid until the call is answered;
 * deadline_us: from grpc-timeout on gs_loop_now_us's clock, 0 when none.
 * The handler answers with gs_h2_call_reply now or later, exactly once. */
struct gs_h2_request {
  const char *path;
  size_t path_len;
  const uint8_t *msg;
  size_t msg_len;
  uint64_t deadline_us;
};
typedef void gs_h2_handler_fn(void *ctx, struct gs_h2_call *call, const struct gs_h2_request *req);

/* A server for HTTP/2 clients under limits l (NULL: gs_http_limits_default):
 * max_conns connections of its own; read_timeout_ms for a new connection's
 * preface and SETTINGS, and for each request message to arrive whole;
 * idle_timeout_ms for a connection with no call under way. Request messages
 * are held under a budget of its own (GS_H2_BUDGET) unless given another. */
#define GS_H2_MAX_MESSAGE (16u << 20) /* one request message at most (RESOURCE_EXHAUSTED) */
#define GS_H2_CONN_HELD (32u << 20)   /* request bytes one connection may have held at once */
#define GS_H2_MAX_STREAMS 100         /* concurrent streams per connection, as Triton and Envoy */
#define GS_H2_BUDGET (64u << 20)
int gs_h2_server_new(struct gs_err *err, struct gs_loop *loop, const struct gs_http_limits *l,
                     gs_h2_handler_fn *fn, void *ctx, struct gs_h2_server **out);
/* Holds request messages under b (which outlives s) instead. Set before
 * the first connection. */
void gs__h2_server_budget(struct gs_h2_server *s, struct gs__budget *b);
/* Serves h2c (prior knowledge) connections accepted on fd (the server closes it). */
int gs_h2_server_listen_fd(struct gs_err *err, struct gs_h2_server *s, int fd);
/* Stops accepting; each connection gets GOAWAY (no new streams), finishes
 * the calls it has and closes. */
void gs_h2_server_drain(struct gs_h2_server *s);
/* Closes every connection; calls not yet answered stay valid until answered. */
void gs_h2_server_free(struct gs_h2_server *s);
/* Answers: status 0 (OK) sends msg (length-prefixed) then the trailers;
 * otherwise a trailers-only answer with grpc-status and grpc-message. When the
 * client went away meanwhile the answer is dropped. Frees the call. */
void gs_h2_call_reply(struct gs_h2_call *call, int status, const void *msg, size_t len,
                      const char *message);
/* True while the client still waits for the answer. */
bool gs_h2_call_alive(const struct gs_h2_call *call);

/* A connection with no fd, for the fuzz target: bytes in, frames out discarded. */
struct gs_h2_conn;
struct gs_h2_conn *gs__h2_conn_mem(struct gs_h2_server *s);
/* Returns false once the connection has ended (GOAWAY sent or error) and was freed. */
bool gs__h2_conn_feed(struct gs_h2_conn *c, const void *data, size_t len);
void gs__h2_conn_free(struct gs_h2_conn *c);

/* The worker's gRPC service (grpc.c) on its own listener (fd -1: none,
 * for in-memory connections on its HTTP/2 server). */
struct gs_grpc_server;
int gs__grpc_worker_new(struct gs_err *err, struct gs_loop *loop, struct gs_serve_worker *w,
                        int fd, struct gs_grpc_server **out);
void gs__grpc_worker_free(struct gs_grpc_server *g);
struct gs_h2_server *gs__grpc_worker_h2(struct gs_grpc_server *g);
/* Connections the server holds (the fuzz target checks none outlives its input). */
unsigned gs_h2_server_conns(const struct gs_h2_server *s);

#endif
