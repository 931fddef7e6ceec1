/* fuzz-http.c: libFuzzer target for the serve layer's request path: bytes
 * go, in-process and without sockets, through the HTTP/1.1 parser, its
 * limits and chunked decoding into the emulated KServe worker's handler (in
 * instant mode), split in two reads at a point the input chooses, then EOF;
 * then the same bytes through a streaming server (the proxy's mode: bodies
 * handed over as they arrive, answers in chunks).
 * A crash, leak or sanitizer report is a finding; every input must end the
 * connection cleanly or leave it waiting for more. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct gs_loop *loop;
static struct gs_http_server *srv;
static struct gs_serve_worker *worker;
static struct gs_http_server *ssrv;

/* The streaming server's handler: a body is answered at its end, chunked. */
static void stream_handle(void *ctx, struct gs_http_conn *conn, const struct gs_http_request *req)
{
  (void)ctx;
  if (req->body_follows)
    gs_http_bind(conn, conn);
  else
    gs_http_respond(conn, 200, NULL, NULL, "ok", 2);
}

static void stream_body(void *user, struct gs_http_conn *conn, const char *data, size_t len,
                        int status)
{
  (void)user;
  if (status == GS_HTTP_BODY_END) {
    gs_http_respond_start(conn, 200, "application/octet-stream", NULL, -1);
    gs_http_respond_data(conn, data, len);
    gs_http_respond_end(conn);
  } else if (status > GS_HTTP_BODY_END) {
    gs_http_respond_error(conn, status, "body failed");
  }
}

static void setup(void)
{
  struct gs_serve_worker_config cfg = {.sms = 14, .full_sms = 108, .share = 1, .instant = true,
                                       .slice_name = "fuzz"};
  struct gs_http_limits lim;
  struct gs_err err = {0};
  gs_http_limits_default(&lim);
  lim.max_body = 1u << 20; /* a small limit so 413 is reachable */
  lim.max_header = 4096;
  if (gs_loop_new(&err, 64, &loop) != 0 || gs_serve_worker_new(&err, &cfg, &worker) != 0 ||
      gs_http_server_new(&err, loop, &lim, gs_serve_worker_handle, worker, &srv) != 0 ||
      gs_http_server_new(&err, loop, &lim, stream_handle, NULL, &ssrv) != 0) {
    fprintf(stderr, "fuzz-http: setup: %s\n", err.msg);
    abort();
  }
  gs_serve_worker_attach(worker, loop);
  gs_http_server_stream(ssrv, stream_body, NULL, NULL);
}

/* Feeds the input to a new connection of s in two reads, then EOF. */
static void feed(struct gs_http_server *s, const uint8_t *data, size_t size, size_t split)
{
  struct gs_http_conn *c = gs__http_conn_mem(s);
  if (!c)
    abort();
  if (gs__http_conn_feed(c, data, split, false) &&
      gs__http_conn_feed(c, data + split, size - split, true))
    gs__http_conn_free(c); /* still open: waiting for more that never comes */
  if (gs_http_server_conns(s) != 0) {
    fprintf(stderr, "fuzz-http: a connection outlived its input\n");
    abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  size_t split;
  if (!loop)
    setup();
  if (size == 0)
    return 0;
  split = (size_t)data[0] * (size - 1) / 255; /* the first byte picks the split */
  data++, size--;
  feed(srv, data, size, split);
  feed(ssrv, data, size, split);
  return 0;
}
