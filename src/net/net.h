/* SPDX-License-Identifier: Apache-2.0 */
/* net.h: the net layer's whole interface, the network runtime that serve,
 * worker and bench share: an epoll event loop with timers, socket helpers
 * (listen, accept under a connection limit, the idle list), a byte budget
 * threads share, the HTTP/1.1 server and the HTTP/1.1 message rules, and the
 * server side of gRPC over HTTP/2. It knows sockets and HTTP, never KServe,
 * workers, slices or GPUs (docs/architecture.md). */
#ifndef GS_NET_H
#define GS_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "util/util.h"

/* ---- event loop (Redis ae shape, STYLE.md 8) ---- */

#define GS_NET_READABLE 1u
#define GS_NET_WRITABLE 2u
/* With READABLE, on a fd several loops watch (a listening socket shared by
 * threads): an event wakes one of them, not all (EPOLLEXCLUSIVE). Given when
 * the fd is first added; the fd then leaves the loop only whole. */
#define GS_NET_EXCLUSIVE 4u
/* A timer callback returns this to end the timer, or its next delay in µs. */
#define GS_NET_TIMER_DONE (-1)

struct gs_net_loop;
/* mask: the GS_NET_* events that are ready and still wanted. */
typedef void gs_net_loop_file_fn(struct gs_net_loop *loop, int fd, void *data, unsigned mask);
typedef int64_t gs_net_loop_timer_fn(struct gs_net_loop *loop, uint64_t id, void *data);

/* A loop for fds below setsize. On error NULL is stored and err filled. */
int gs_net_loop_new(struct gs_err *err, int setsize, struct gs_net_loop **out);
/* Closes fds still pending a deferred close; takes NULL. */
void gs_net_loop_free(struct gs_net_loop *loop);
/* Adds the events of mask to fd's interest; fn and data replace earlier ones. */
int gs_net_loop_add(struct gs_err *err, struct gs_net_loop *loop, int fd, unsigned mask,
                    gs_net_loop_file_fn *fn, void *data);
/* Removes the events of mask; with none left the fd leaves epoll. */
void gs_net_loop_del(struct gs_net_loop *loop, int fd, unsigned mask);
unsigned gs_net_loop_mask(const struct gs_net_loop *loop, int fd);
/* Forgets fd and closes it at the end of this turn, so its number cannot be
 * reused (and its stale events fired at a newcomer) while a turn dispatches. */
void gs_net_loop_close_fd(struct gs_net_loop *loop, int fd);

/* Work deferred to the end of this turn, after its events and timers (a
 * connection's output gathered over the turn goes out in one write). The
 * node lives in its owner: fn gets it back (container_of). Deferring a node
 * already pending does nothing; one deferred while the deferred work runs
 * runs next turn, which then does not wait. Undefer before freeing it. */
struct gs_net_defer {
  void (*fn)(struct gs_net_defer *d);
  /* private */
  struct gs_net_defer *prev, *next;
  uint64_t turn;
  bool on;
};
void gs_net_loop_defer(struct gs_net_loop *loop, struct gs_net_defer *d);
void gs_net_loop_undefer(struct gs_net_loop *loop, struct gs_net_defer *d);

/* A timer firing delay_us from now; returns its id (> 0) or 0 on no memory.
 * Timers due at the same moment fire in the order they were added. */
uint64_t gs_net_loop_timer_add(struct gs_net_loop *loop, uint64_t delay_us,
                               gs_net_loop_timer_fn *fn, void *data);
/* Cancels a timer; 0 if it was pending, GS_E_NOT_FOUND if not. */
int gs_net_loop_timer_del(struct gs_net_loop *loop, uint64_t id);
size_t gs_net_loop_timer_count(const struct gs_net_loop *loop);

/* Called before each wait for events (flush hook). */
void gs_net_loop_set_before_sleep(struct gs_net_loop *loop,
                                  void (*fn)(struct gs_net_loop *, void *), void *data);
/* One turn: waits at most timeout_ms (-1: until the next timer or event),
 * dispatches events then due timers; returns the events processed or a
 * negative code. */
int gs_net_loop_run_once(struct gs_net_loop *loop, int timeout_ms);
/* Turns until gs_net_loop_stop; 0 or a negative code. */
int gs_net_loop_run(struct gs_net_loop *loop);
void gs_net_loop_stop(struct gs_net_loop *loop);
/* Monotonic clock in µs. */
uint64_t gs_net_loop_now_us(void);

/* ---- sockets ---- */

int gs_net_nonblock(struct gs_err *err, int fd);
/* Listens on TCP "host:port" (":port" or "*:port" = every address, "[v6]:port";
 * port 0 = ephemeral), non-blocking; stores the fd and the bound port. */
int gs_net_listen(struct gs_err *err, const char *hostport, int backlog, int *fd, unsigned *port);

/* ---- HTTP/1.1 server ---- */

#define GS_HTTP_MAX_HEADERS 64

struct gs_http_header {
  const char *name, *value;
  size_t name_len, value_len;
};

/* A parsed request; pointers are valid only during the handler call. */
struct gs_http_request {
  const char *method, *path;
  size_t method_len, path_len;
  int minor_version;
  struct gs_http_header headers[GS_HTTP_MAX_HEADERS];
  size_t nheaders;
  const char *body;
  size_t body_len;
  bool body_follows; /* streaming server: a body comes through its body_fn */
  bool keep_alive;
};

struct gs_http_limits {
  size_t max_header;        /* request line + headers, bytes: more is 431 */
  size_t max_body;          /* decoded body, bytes: more is 413 */
  unsigned read_timeout_ms; /* from a request's first byte to its last (a connection's first
                               request: from the accept), slowloris and silent connections */
  unsigned idle_timeout_ms; /* keep-alive connection with nothing to read */
  unsigned max_conns;       /* beyond it the oldest idle connection is closed to admit a new
                               one, or the new one at once when none is idle */
};
/* 16 KiB headers, 64 MiB bodies, 10 s to send a request, 60 s idle, 1024 connections. */
void gs_http_limits_default(struct gs_http_limits *l);

struct gs_http_server;
struct gs_http_conn;
/* Called once per complete request, in arrival order; the handler answers
 * with gs_http_respond now or later (no other request of that connection is
 * handled until it does: pipelined requests wait, answered in order). */
typedef void gs_http_handler_fn(void *ctx, struct gs_http_conn *conn,
                                const struct gs_http_request *req);

int gs_http_server_new(struct gs_err *err, struct gs_net_loop *loop, const struct gs_http_limits *l,
                       gs_http_handler_fn *fn, void *ctx, struct gs_http_server **out);
/* Serves connections accepted on a listening fd (the server closes it). */
int gs_http_server_listen_fd(struct gs_err *err, struct gs_http_server *s, int fd);
/* Closes every connection, answered or not; takes NULL. */
void gs_http_server_free(struct gs_http_server *s);

/* Streaming (the proxy): a request with a body reaches the handler once its
 * head is read (body_follows set, no body yet), and its body through body_fn
 * as it arrives, decoded from chunks, with the limits still applied: the
 * whole request within read_timeout_ms, the body within max_body. status:
 * GS_HTTP_BODY_MORE, GS_HTTP_BODY_END (the last bytes, maybe none), or the
 * HTTP status of a failure (400 malformed or cut short, 413 too large, 408
 * timed out or the client gone: then dead), which the handler answers (or
 * aborts the answer it started). user: what gs_http_bind set, NULL before.
 * Answering before the body's end reads and drops the rest and closes after
 * the answer. drain_fn is called when a streamed answer's buffered bytes are
 * all sent. Set before the first connection. */
#define GS_HTTP_BODY_MORE 0
#define GS_HTTP_BODY_END 1
typedef void gs_http_body_fn(void *user, struct gs_http_conn *conn, const char *data, size_t len,
                             int status);
typedef void gs_http_drain_fn(void *user, struct gs_http_conn *conn);
/* Optional (NULL: none): where the next bytes of a Content-Length body may be
 * read straight to, saving a copy from the connection's buffer; want: the
 * body bytes still to come, at most GS_HTTP_BODY_READ_MAX. Returns the space
 * and its size in *room (>0), or NULL to have them read as usual. The bytes
 * read there then reach body_fn with data pointing at that space. */
#define GS_HTTP_BODY_READ_MAX (256u << 10)
typedef char *gs_http_body_buf_fn(void *user, struct gs_http_conn *conn, size_t want,
                                  size_t *room);
void gs_http_server_stream(struct gs_http_server *s, gs_http_body_fn *body_fn,
                           gs_http_drain_fn *drain_fn, gs_http_body_buf_fn *buf_fn);
void gs_http_bind(struct gs_http_conn *conn, void *user);
/* Stops (true) or resumes reading the connection: backpressure. An answer's
 * end resumes it. */
void gs_http_pause(struct gs_http_conn *conn, bool paused);
/* An answer in pieces: the head now, len its Content-Length or -1 (chunked,
 * or to the close for an HTTP/1.0 client); data appends body bytes and
 * returns the bytes still queued unsent (0 when the client is gone: the
 * caller may stop reading its source above a mark of its own, and resume at
 * drain_fn); end completes it (and frees a dead connection); abort closes the
 * connection at once (an answer that cannot be completed), never from
 * inside body_fn. */
void gs_http_respond_start(struct gs_http_conn *conn, int status, const char *content_type,
                           const char *extra, int64_t len);
size_t gs_http_respond_data(struct gs_http_conn *conn, const void *data, size_t len);
void gs_http_respond_end(struct gs_http_conn *conn);
void gs_http_respond_abort(struct gs_http_conn *conn);
unsigned gs_http_server_conns(const struct gs_http_server *s);

/* Answers the connection's current request with Content-Length framing.
 * extra: preformatted header lines ("Name: value\r\n"...) or NULL. If the
 * client went away meanwhile, the answer is dropped and the connection freed. */
void gs_http_respond(struct gs_http_conn *conn, int status, const char *content_type,
                     const char *extra, const void *body, size_t len);
/* An error answer as KServe has it: {"error": "<msg>"}. */
void gs_http_respond_error(struct gs_http_conn *conn, int status, const char *fmt, ...)
    GS_PRINTF(3, 4);
/* Case-insensitive header lookup; NULL when absent. */
const struct gs_http_header *gs_http_header_find(const struct gs_http_request *req,
                                                 const char *name);
const char *gs_http_reason(int status);

/* ---- HTTP/1.1 message rules (http1.c) ---- */

/* A chunked body being decoded; all zero (gs_http_chunked_init) before its first byte. */
struct gs_http_chunked {
  uint64_t left;  /* bytes of the current chunk still to come */
  uint64_t total; /* data bytes decoded so far */
  unsigned line;  /* bytes of the current size, extension or trailer line */
  unsigned char state;
  bool digits, ext, cr;
};
#define GS_HTTP_CHUNK_MORE (-2)    /* the body goes on: more bytes needed */
#define GS_HTTP_CHUNK_BAD (-1)     /* malformed framing (400 from a client, 502 from a worker) */
#define GS_HTTP_CHUNK_TOO_BIG (-3) /* a chunk size takes the body past max (413) */
void gs_http_chunked_init(struct gs_http_chunked *d);
/* Decodes len bytes at buf in place, as picohttpparser's decoder does: the
 * data bytes move to buf's front and *len becomes their count. Returns
 * GS_HTTP_CHUNK_MORE, GS_HTTP_CHUNK_BAD, GS_HTTP_CHUNK_TOO_BIG (data beyond max bytes in
 * all, known from the chunk's size line before any of its data), or, once
 * the body ended, the count of bytes after it (moved to just after the data).
 * Chunk sizes are bare hex (RFC 9112 §7.1): "0x3" is malformed. */
ssize_t gs_http_chunked_decode(struct gs_http_chunked *d, char *buf, size_t *len, uint64_t max);
/* The framing and connection fields of one message head, request or
 * response, read by the rules both apply: keep-alive as HTTP/1.1 (1.0: not)
 * unless a Connection header says close or keep-alive; Transfer-Encoding only
 * as one "chunked"; Content-Length 1 to 18 digits, repeated only with the
 * same value, never beside Transfer-Encoding; no obs-fold. */
struct gs_http_fields {
  bool keep_alive, chunked, has_length, expect_continue;
  uint64_t length;
  unsigned hosts; /* Host headers */
};
/* NULL, or the rule the head breaks (static text). */
const char *gs_http_fields_read(const struct gs_http_header *h, size_t nh, int minor,
                                struct gs_http_fields *f);
/* True when the comma-separated list v (a header value) has tok as one of
 * its elements, case-insensitively ("close" is in "keep-alive, Close"). */
bool gs_http_list_has(const char *v, size_t n, const char *tok, size_t tn);
/* True when the header named name must not be passed on by a proxy: a
 * hop-by-hop field, or one named in a Connection header (conn: the
 * message's Connection headers, nconn of them). */
bool gs_http_hop_header(const char *name, size_t nl, const struct gs_http_header *conn,
                        size_t nconn);

/* ---- the HTTP/1 response reader (response.c) ---- */

/* How an answer's body ends (RFC 9112 §6.3), read from its head. */
enum gs_http_framing {
  GS_HTTP_NO_BODY,     /* to a HEAD request, or 204, 304 */
  GS_HTTP_LENGTH,      /* Content-Length bytes */
  GS_HTTP_CHUNKED,     /* Transfer-Encoding: chunked, decoded in place */
  GS_HTTP_UNTIL_CLOSE, /* neither: the body ends when the server closes */
};
#define GS_HTTP_RESP_MORE 0  /* more bytes needed */
#define GS_HTTP_RESP_DONE 1  /* the head (or the body) is complete */
#define GS_HTTP_RESP_BAD (-1) /* malformed, or cut short: why says which rule */

/* One answer being read; gs_http_resp_init before each. Its rules: a head
 * of at most max_head bytes and GS_HTTP_MAX_HEADERS headers; interim 1xx
 * answers skipped, 101 refused (no request asks to switch); the fields by
 * gs_http_fields_read; chunks by the strict decoder (gs_http_chunked_decode);
 * no body to HEAD, 204, 304; neither Content-Length nor chunked: until the
 * close, which ends keep-alive; a body cut short by the close is malformed. */
struct gs_http_resp {
  /* read-only, set when gs_http_resp_head returns GS_HTTP_RESP_DONE */
  int status, minor_version;
  size_t head_len;         /* bytes of the head at the buffer's front (after any 1xx) */
  enum gs_http_framing framing;
  uint64_t content_length; /* GS_HTTP_LENGTH's */
  bool keep_alive;         /* the connection may carry another request after this answer */
  struct gs_http_header headers[GS_HTTP_MAX_HEADERS]; /* into the buffer, valid while it stays */
  size_t nheaders;
  uint64_t body_len;       /* body bytes read so far (decoded) */
  const char *why;         /* after GS_HTTP_RESP_BAD: the rule broken (static text) */
  /* private */
  bool head_request;
  struct gs_http_chunked dec;
};
/* head_request: the answer is to a HEAD request (no body, whatever it says). */
void gs_http_resp_init(struct gs_http_resp *r, bool head_request);
/* Reads the head from buf[0..*len): GS_HTTP_RESP_DONE (the head is
 * head_len bytes at buf), MORE or BAD. Interim answers leave buf as read
 * (moved out, *len shrinks). */
int gs_http_resp_head(struct gs_http_resp *r, char *buf, size_t *len, size_t max_head);
/* Reads body bytes as they come: data[0..*len) are the bytes after the head
 * (or after the last call's); on return the first *len of them are body
 * (chunks decoded in place), and *rest bytes after those follow the body's
 * end (with DONE: another answer's). eof: the peer closed after these. DONE
 * when the body ended, MORE, or BAD. */
int gs_http_resp_body(struct gs_http_resp *r, char *data, size_t *len, bool eof, size_t *rest);
/* The whole answer in one buffer (the caller appends each read at *len,
 * which may shrink as chunks are decoded): DONE once complete (the body is
 * body_len bytes at buf + head_len; *used: the bytes it took), MORE, or BAD
 * (eof before its end too). */
int gs_http_resp_whole(struct gs_http_resp *r, char *buf, size_t *len, bool eof, size_t max_head,
                       size_t *used);

/* ---- accepting under one connection limit (loop.c) ---- */

/* Client connections of one listener, which several accept loops may count
 * together (the proxy's HTTP threads). count changes with atomic operations. */
struct gs_net_conns {
  unsigned max;
  unsigned count;
};
/* Closes one idle connection of the caller's (counted in the same limit) to
 * make room; false when it has none. */
typedef bool gs_net_evict_fn(void *ctx);
/* The next connection waiting on the listening fd, non-blocking, TCP_NODELAY,
 * counted in lim; -1 when none waits (EAGAIN, or a transient error such as
 * EMFILE: the listener's next event retries). Beyond lim->max, evict (may be
 * NULL) is asked to make room; when it cannot, the new connection is closed
 * at once, unanswered. */
int gs_net_accept(int fd, struct gs_net_conns *lim, gs_net_evict_fn *evict, void *ctx);
/* Uncounts a connection gs_net_accept counted, once it is closed. */
void gs_net_conns_put(struct gs_net_conns *lim);
/* A server's idle connections (waiting for a request, nothing to send),
 * oldest first: the ones an evict_fn closes first. A node lives in its
 * connection, which finds itself from it with offsetof. */
struct gs_net_idle_node {
  struct gs_net_idle_node *prev, *next;
  bool on;
};
struct gs_net_idle_list {
  struct gs_net_idle_node *first, *last;
};
/* Puts n at the end of l when idle and it is not on it, takes it off when not. */
void gs_net_idle_set(struct gs_net_idle_list *l, struct gs_net_idle_node *n, bool idle);

/* ---- a memory budget shared by threads (budget.c) ---- */

/* Bytes of request bodies held at once (the proxy's retry buffers and whole
 * gRPC messages), against max; used changes with atomic operations. */
struct gs_net_budget {
  size_t max;
  size_t used;
};
/* Takes n bytes; false, taking nothing, when that would pass max. */
bool gs_net_budget_take(struct gs_net_budget *b, size_t n);
void gs_net_budget_put(struct gs_net_budget *b, size_t n);
size_t gs_net_budget_used(const struct gs_net_budget *b);

/* ---- the HTTP/1.1 server's internals (http.c) ---- */

/* Servers that count their connections in lim (which outlives them) rather
 * than against their own limit. Set before the first connection. */
void gs_http_server_share_conns(struct gs_http_server *s, struct gs_net_conns *lim);
/* Threads accepting from one socket (the proxy's): route_fn sees each
 * connection s accepted (counted in its limit) and returns true when it took
 * it elsewhere; another server's thread then serves it with
 * gs_http_server_adopt (which fails only after closing and uncounting it).
 * gs_http_server_conns may be read from any thread. Set before the first
 * connection. */
typedef bool gs_http_route_fn(void *ctx, int fd);
void gs_http_server_route(struct gs_http_server *s, gs_http_route_fn *fn, void *ctx);
int gs_http_server_adopt(struct gs_http_server *s, int fd);

/* A connection with no fd: responses are counted and discarded. NULL on no memory. */
struct gs_http_conn *gs__http_conn_mem(struct gs_http_server *s);
/* Appends bytes as if read from the peer and processes them; eof = the peer
 * closed its side. Returns false once the connection has ended (and was freed). */
bool gs__http_conn_feed(struct gs_http_conn *c, const void *data, size_t len, bool eof);
/* Frees a connection whatever its state. */
void gs__http_conn_free(struct gs_http_conn *c);
/* Bytes of responses written so far (for the fuzz target's sanity checks). */
size_t gs__http_conn_sent(const struct gs_http_conn *c);

/* ---- gRPC over HTTP/2 (h2.c): the server side of gRPC calls ---- */

struct gs_h2_call;
struct gs_h2_server;
/* A unary call's request message, whole (END_STREAM), or one event of a
 * streaming call. path: ":path"; deadline_us: from grpc-timeout on
 * gs_net_loop_now_us's clock, 0 when none; user: what gs_h2_call_bind set.
 * Unary: msg is the message without its 5-byte gRPC prefix, which precedes
 * it (msg - 5 holds the framed message), valid until the call is answered.
 * Streaming (GS_H2_STREAM): one call at the end of the headers (msg NULL,
 * end false: the call opened), one per message as it is whole (msg valid
 * during the call only, its prefix before it too), then one with end set and msg NULL: the client
 * half-closed (status 0), or its input broke (status: a gRPC status, why:
 * what; the handler answers with them), or it is gone (gone: reset or
 * disconnected; the answer is dropped but still frees the call). Unknown
 * methods (GS_H2_UNKNOWN): one call at the end of the headers, msg NULL,
 * which the handler answers at once (UNIMPLEMENTED, trailers only).
 * The handler answers with gs_h2_call_reply, now or later, exactly once. */
struct gs_h2_request {
  const char *path;
  size_t path_len;
  const uint8_t *msg;
  size_t msg_len;
  uint64_t deadline_us;
  void *user;
  bool end, gone;
  int status;
  const char *why;
};
typedef void gs_h2_handler_fn(void *ctx, struct gs_h2_call *call, const struct gs_h2_request *req);
/* How a server takes a path's calls, asked at the end of a call's headers. */
enum gs_h2_kind { GS_H2_UNARY, GS_H2_STREAM, GS_H2_UNKNOWN };
typedef enum gs_h2_kind gs_h2_kind_fn(void *ctx, const char *path, size_t len);

/* A server for HTTP/2 clients under limits l (NULL: gs_http_limits_default):
 * max_conns connections of its own; read_timeout_ms for a new connection's
 * preface and SETTINGS, and for each request message to arrive whole;
 * idle_timeout_ms for a connection with no call under way. Request messages
 * are held under a budget of its own (GS_H2_BUDGET) unless given another. */
#define GS_H2_MAX_MESSAGE (16u << 20) /* one request message at most (RESOURCE_EXHAUSTED) */
#define GS_H2_CONN_HELD (32u << 20)   /* request bytes one connection may have held at once */
#define GS_H2_MAX_STREAMS 100         /* concurrent streams per connection, as Triton and Envoy */
#define GS_H2_BUDGET (64u << 20)
int gs_h2_server_new(struct gs_err *err, struct gs_net_loop *loop, const struct gs_http_limits *l,
                     gs_h2_handler_fn *fn, void *ctx, struct gs_h2_server **out);
/* Holds request messages under b (which outlives s) instead. Set before
 * the first connection. */
void gs_h2_server_budget(struct gs_h2_server *s, struct gs_net_budget *b);
/* fn(ctx) for each call the server answers itself (refused: over a limit,
 * too slow, malformed), e.g. to count it; NULL: none. */
void gs_h2_server_on_refuse(struct gs_h2_server *s, void (*fn)(void *ctx), void *ctx);
/* Sorts calls by path (NULL, the default: every call unary). Set before
 * the first connection. */
void gs_h2_server_kinds(struct gs_h2_server *s, gs_h2_kind_fn *fn);
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
/* A streaming call's answer messages, one at a time, in order, before its
 * gs_h2_call_reply (whose status then goes in trailers after them). 0, or
 * GS_E_IO when the client is gone (dropped), GS_E_NO_MEMORY. */
int gs_h2_call_send(struct gs_h2_call *call, const void *msg, size_t len);
/* What the handler's later calls about this call get in req->user. */
void gs_h2_call_bind(struct gs_h2_call *call, void *user);
/* fn(user, n) each time n bytes of the answer's queued DATA (5-byte
 * prefixes and messages, as gs_h2_call_send queued them) go into a frame:
 * the client's flow control let them go. Called from within the server's
 * sending: fn must not touch this call (nor its server). */
void gs_h2_call_on_sent(struct gs_h2_call *call, void (*fn)(void *user, size_t n));
/* A streaming call's input held back (hold) or let go: while held, the
 * bytes taken are not given back to its stream's window, so the client
 * stops once the window is used up (what it sent meanwhile, at most the
 * 1 MiB stream window, is still delivered). Backpressure for a handler
 * whose next hop takes the messages slower than they come. */
void gs_h2_call_hold_input(struct gs_h2_call *call, bool hold);

/* ---- HTTP/2 client (h2_client.c) ---- */

/* One h2c connection (prior knowledge) carrying many concurrent calls. */
struct gs_h2_client;
/* A call's close code when its connection ended first (not HTTP/2 codes). */
#define GS_H2_CONN_LOST 0xffffffffu      /* closed, reset, or ended by GOAWAY */
#define GS_H2_CONN_REFUSED 0xfffffffeu   /* it never connected */
#define GS_H2_CONN_MALFORMED 0xfffffffdu /* the server broke the protocol */
/* What a client reports; call: the pointer its gs_h2_client_call was given.
 * Callbacks come from the client's own events (never from within a
 * gs_h2_client_* call) and may start calls, cancel them or free the client. */
struct gs_h2_client_ops {
  /* A header of the answer, ":status" and trailers too, as they come. */
  void (*header)(void *call, const char *name, size_t nl, const char *value, size_t vl);
  /* Bytes of the answer's body as they come; false resets the stream
   * (RST_STREAM CANCEL: the call then closes with that code). */
  bool (*data)(void *call, const uint8_t *data, size_t len);
  /* The call ended: 0 when its stream closed cleanly both ways, else the
   * HTTP/2 error code of its reset (REFUSED_STREAM: the server did not
   * process it), or a GS_H2_CONN_ code. Once per call; not for a cancelled one. */
  void (*closed)(void *call, uint32_t code);
  /* Optional (NULL: none): the request's last byte went into a frame. */
  void (*sent)(void *call);
  /* Optional (NULL: none): bytes of a streamed request went into frames
   * (the server's window let them go); unsent are left. Called from within
   * the client's sending: it must not call the client. */
  void (*drained)(void *call, size_t unsent);
  /* The connection ended (after closed() for each of its calls); the owner
   * frees the client, here or later. */
  void (*dead)(void *ctx, const char *why);
};
struct gs_h2_client_config {
  uint32_t stream_window, conn_window; /* the receive windows we advertise; 0: 1 MiB, 16 MiB */
};
/* Connects (non-blocking) to addr; calls may be made at once (sent once
 * connected). cfg may be NULL. */
int gs_h2_client_new(struct gs_err *err, struct gs_net_loop *loop, const struct sockaddr *addr,
                     unsigned addrlen, const struct gs_h2_client_config *cfg,
                     const struct gs_h2_client_ops *ops, void *ctx, struct gs_h2_client **out);
/* A request: nhdr headers (pseudo-headers first, 16 at most) and a body
 * sent as it is, which must stay valid until the call closes or is
 * cancelled (headers are copied now). Sent at the end of this turn, with
 * the turn's other calls. Its stream id, or a negative code (the connection
 * is ending or out of stream ids: the call never started). */
int32_t gs_h2_client_call(struct gs_h2_client *c, const struct gs_http_header *hdr, size_t nhdr,
                          const void *body, size_t len, void *call);
/* A call whose body is sent in pieces, as gs_h2_client_send gives them
 * (a gRPC stream); as gs_h2_client_call otherwise, except that the answer
 * bytes data() reports are given back to the stream's receive window only
 * by gs_h2_client_consume: a stream whose owner holds them stops the server
 * after one window (backpressure). The connection's window is given back at
 * once, so a held stream stalls no other call. */
int32_t gs_h2_client_stream(struct gs_h2_client *c, const struct gs_http_header *hdr, size_t nhdr,
                            void *call);
/* Appends len bytes (copied) to stream id's body; end: the body ends after
 * them. 0, or GS_E_IO (no such open stream, or already ended), GS_E_NO_MEMORY. */
int gs_h2_client_send(struct gs_h2_client *c, int32_t id, const void *data, size_t len, bool end);
/* Gives n answer bytes of streamed call id back to its window (the owner is
 * done with them); nothing for another call, or one closed. */
void gs_h2_client_consume(struct gs_h2_client *c, int32_t id, size_t n);
/* Resets a call (RST_STREAM CANCEL); nothing more is reported of it. */
void gs_h2_client_cancel(struct gs_h2_client *c, int32_t id);
/* GOAWAY: no new calls; the connection ends (dead()) once none is left. */
void gs_h2_client_goaway(struct gs_h2_client *c);
/* True while it takes new calls. */
bool gs_h2_client_usable(const struct gs_h2_client *c);
/* Closes now, reporting nothing more; takes NULL. */
void gs_h2_client_free(struct gs_h2_client *c);

/* Connections the server holds (the fuzz target checks none outlives its input). */
unsigned gs_h2_server_conns(const struct gs_h2_server *s);

#endif
