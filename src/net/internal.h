/* SPDX-License-Identifier: Apache-2.0 */
/* internal.h: net-layer internals shared between its files and its fuzz
 * targets: picohttpparser's declarations (once for the whole project: the
 * HTTP/1 server and response reader parse with it), and connections without
 * a socket, fed bytes in-process, so the whole request path (parse, limits,
 * handler, response) runs without networking. Not part of the layer's
 * interface (net.h is). */
#ifndef GS_NET_INTERNAL_H
#define GS_NET_INTERNAL_H

#include "net/net.h"

#include <nghttp2/nghttp2.h>

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

/* picohttpparser's headers as ours (http1.c), each value without the
 * whitespace around it (RFC 9110 §5.5: picohttpparser 2.2 keeps what
 * trails it); obs-fold lines keep their NULL name for gs_http_fields_read. */
void gs__http_headers(const struct phr_header *h, size_t nh, struct gs_http_header *out);

/* ---- a server's listener (listener.c): the HTTP/1.1 and HTTP/2 servers' ---- */

/* A server's starting state: *lim is *l, or the defaults when l is NULL;
 * no listening socket yet (*listen_fd = -1). */
void gs__net_server_setup(struct gs_http_limits *lim, const struct gs_http_limits *l,
                          int *listen_fd);
/* Watches fd for connections (on_accept gets srv); *listen_fd = fd once the
 * loop does, unchanged on error. */
int gs__net_server_listen(struct gs_err *err, struct gs_net_loop *loop, int *listen_fd, int fd,
                          unsigned mask, gs_net_loop_file_fn *on_accept, void *srv);
/* Closes the listening socket, if any, and forgets it: no new connections. */
void gs__net_server_unlisten(struct gs_net_loop *loop, int *listen_fd);

/* ---- an HTTP/2 connection's output (h2_out.c): the server's and the client's ---- */

/* Bytes of one connection that its socket refused (sent first next time). */
struct gs__h2_out {
  char *buf;
  size_t len, off, cap;
  bool discard; /* an in-memory connection: output dropped */
};
/* The body of nghttp2's send_callback: gathers len bytes (copied); WOULDBLOCK
 * once enough wait, so they are written before nghttp2 makes more. */
ssize_t gs__h2_out_add(struct gs__h2_out *o, const uint8_t *data, size_t len);
/* The body of nghttp2's send_data_callback (a DATA frame whose payload the
 * caller holds, NGHTTP2_DATA_FLAG_NO_COPY): its 9-byte head and len payload
 * bytes gathered together, or neither: 0, NGHTTP2_ERR_WOULDBLOCK, or
 * NGHTTP2_ERR_CALLBACK_FAILURE. The payload is copied once, here, not
 * first into nghttp2's frame buffer. */
int gs__h2_out_add_data(struct gs__h2_out *o, const uint8_t *head, const uint8_t *data, size_t len);
/* Writes what waits and what nghttp2 has to send on fd, until the socket is
 * full (*pending: call again once writable) or nothing is left. 0, or -1
 * when the session or the socket failed. Not from nghttp2's callbacks. */
int gs__h2_out_flush(struct gs__h2_out *o, nghttp2_session *ng, int fd, bool *pending);
void gs__h2_out_free(struct gs__h2_out *o);

/* ---- gRPC's header values (grpc_hdr.c) ---- */

/* grpc-timeout "<1 to 8 digits><unit>", unit one of H M S m u n, in µs
 * (at least 1); 0 when malformed. */
uint64_t gs__grpc_timeout_us(const uint8_t *v, size_t n);
/* msg percent-encoded as grpc-message (sz > 4; cut short to fit). */
void gs__grpc_message(char *out, size_t sz, const char *msg);

/* ---- in-memory connections (http.c, h2.c) ---- */

/* A connection with no fd: responses are counted and discarded. NULL on no memory. */
struct gs_http_conn *gs__http_conn_mem(struct gs_http_server *s);
/* Appends bytes as if read from the peer and processes them; eof = the peer
 * closed its side. Returns false once the connection has ended (and was freed). */
bool gs__http_conn_feed(struct gs_http_conn *c, const void *data, size_t len, bool eof);
/* Frees a connection whatever its state. */
void gs__http_conn_free(struct gs_http_conn *c);
/* Bytes of responses written so far (for the fuzz target's sanity checks). */
size_t gs__http_conn_sent(const struct gs_http_conn *c);

/* A client with no socket (its frames dropped), for the fuzz target: the
 * bytes given are the server's; false once it is dead (freed by the caller). */
struct gs_h2_client *gs__h2_client_mem(struct gs_net_loop *loop, const struct gs_h2_client_ops *ops,
                                       void *ctx);
bool gs__h2_client_feed(struct gs_h2_client *c, const void *data, size_t len);

/* A connection with no fd, for the fuzz target: bytes in, frames out discarded. */
struct gs_h2_conn;
struct gs_h2_conn *gs__h2_conn_mem(struct gs_h2_server *s);
/* Returns false once the connection has ended (GOAWAY sent or error) and was freed. */
bool gs__h2_conn_feed(struct gs_h2_conn *c, const void *data, size_t len);
void gs__h2_conn_free(struct gs_h2_conn *c);

#endif
