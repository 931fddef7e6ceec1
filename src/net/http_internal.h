/* SPDX-License-Identifier: Apache-2.0 */
/* http_internal.h: the HTTP/1.1 server's state and the calls its two files
 * make to each other: a connection's requests and answers (http.c) and its
 * socket, accepts and the server's life (http_server.c). Not part of the
 * layer's interface (net.h is): only those files include it. */
#ifndef GS_NET_HTTP_INTERNAL_H
#define GS_NET_HTTP_INTERNAL_H

#include "net/internal.h"

#define OUT_HIGH_WATER (4u << 20) /* stop taking pipelined requests above this */
#define READ_CHUNK 65536u
#define LINGER_MS 2000u /* at most this long discarding a closing peer's input */

enum conn_state {
  ST_HEAD,    /* reading a request head */
  ST_BODY,    /* reading its body */
  ST_STREAM,  /* streaming server: the handler has the head; body bytes go to body_fn */
  ST_HANDLER, /* the handler owns the request until gs_http_respond */
  ST_DONE,    /* answering an error; closing once the answer is out */
  ST_LINGER,  /* answer sent, our side shut: discarding input until the peer closes */
};

enum conn_flag {
  F_PEER_EOF = 1u << 0,    /* the peer closed its side (no more input) */
  F_CLOSE_AFTER = 1u << 1, /* close once the output is flushed */
  F_DEAD = 1u << 2,        /* socket gone while the handler held the request */
  F_IN_PROCESS = 1u << 3,  /* inside process(): respond must not re-enter it */
  F_TIMED = 1u << 4,       /* the read timer runs for the current request */
  F_SKIP = 1u << 5,        /* answered before its body ended: input is discarded */
  F_PAUSED = 1u << 6,      /* gs_http_pause: not reading */
  F_OUT_STREAM = 1u << 7,  /* a response started by gs_http_respond_start is under way */
  F_OUT_CHUNKED = 1u << 8, /* ... framed with chunks */
  F_COUNTED = 1u << 9,     /* accepted: counted in the server's connection limit */
};

struct gs_http_conn {
  struct gs_http_server *srv;
  struct gs_http_conn *prev, *next;
  int fd; /* -1: in-memory connection (fuzzing) */
  enum conn_state state;
  unsigned flags;
  char *in, *out;
  size_t in_len, in_cap, out_len, out_off, out_cap, sent;
  uint64_t timer;
  /* the current request; its head as offsets into `in`, which may move
   * (grow) while the body arrives */
  struct gs_http_request req;
  size_t method_off, path_off, hoff[GS_HTTP_MAX_HEADERS][2];
  size_t head_len, content_length, body_done, consumed;
  bool chunked, keep_alive, head_method; /* HEAD: answer without a body */
  struct gs_http_chunked dec;
  void *user; /* gs_http_bind: given to the body and drain callbacks */
  char *direct; /* body bytes just read into the handler's space (buf_fn), not into `in` */
  size_t direct_len;
  const char *why; /* the message of a request error, when more precise than its status's */
  struct gs_net_idle_node idle; /* on the server's idle list: no request, nothing to send */
};

struct gs_http_server {
  struct gs_net_loop *loop;
  struct gs_http_limits lim;
  gs_http_handler_fn *fn;
  void *ctx;
  gs_http_body_fn *body_fn; /* non-NULL: a streaming server */
  gs_http_drain_fn *drain_fn;
  gs_http_body_buf_fn *buf_fn;
  gs_http_route_fn *route_fn;
  void *route_ctx;
  struct gs_net_conns own, *limit; /* limit: &own, or shared (gs_http_server_share_conns) */
  int listen_fd;
  unsigned nconns; /* written by the server's thread, read by any (relaxed atomics) */
  struct gs_http_conn *conns;
  struct gs_net_idle_list idle;
};

struct gs_http_conn *gs__http_conn_new(struct gs_http_server *s, int fd);
void gs__http_idle_unlink(struct gs_http_conn *c);
/* Keeps c on the idle list while it waits for a request's first byte with
 * nothing to send (new, or kept alive after an answer). */
void gs__http_idle_update(struct gs_http_conn *c);
/* While the handler holds the request the memory must stay: the socket goes,
 * the struct waits for gs_http_respond. A handler still taking the body is
 * told (408), and its answer frees the connection. */
void gs__http_conn_close(struct gs_http_conn *c);
void gs__http_linger_read(struct gs_http_conn *c);
/* Writes what it can; the rest waits for EPOLLOUT. Closes on error, or when
 * everything is out and the connection is to end; false then (c may be gone). */
bool gs__http_conn_flush(struct gs_http_conn *c);
/* Runs the state machine as far as the buffered bytes go; false when the
 * connection ended (c may be freed, or dead and held by the handler). */
bool gs__http_process(struct gs_http_conn *c);
void gs__http_on_io(struct gs_net_loop *loop, int fd, void *data, unsigned mask);

#endif
