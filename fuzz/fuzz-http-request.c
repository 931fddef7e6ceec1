/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz-http-request.c: libFuzzer target for net's HTTP/1.1 server (the request parser): bytes
 * go, in-process and without sockets, through the HTTP/1.1 parser, its
 * limits and chunked decoding into the emulated KServe worker's handler (in
 * instant mode), split in two reads at a point the input chooses, then EOF;
 * then the same bytes through a streaming server (the proxy's mode: bodies
 * handed over as they arrive, answers in chunks). The same bytes also go
 * to the strict chunked decoder alone (http1.c), whole and then in two
 * pieces, which must decode alike, and to the Connection-list matching.
 * A crash, leak or sanitizer report is a finding; every input must end the
 * connection cleanly or leave it waiting for more. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/internal.h"
#include "worker/internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct gs_net_loop *loop;
static struct gs_http_server *srv;
static struct gs_worker *worker;
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
  struct gs_worker_config cfg = {
      .sms = 14, .full_sms = 108, .share = 1, .instant = true, .slice_name = "fuzz"};
  struct gs_http_limits lim;
  struct gs_err err = {0};
  gs_http_limits_default(&lim);
  lim.max_body = 1u << 20; /* a small limit so 413 is reachable */
  lim.max_header = 4096;
  if (gs_net_loop_new(&err, 64, &loop) != 0 || gs_worker_new(&err, &cfg, &worker) != 0 ||
      gs_http_server_new(&err, loop, &lim, gs_worker_handle, worker, &srv) != 0 ||
      gs_http_server_new(&err, loop, &lim, stream_handle, NULL, &ssrv) != 0) {
    fprintf(stderr, "fuzz-http: setup: %s\n", err.msg);
    abort();
  }
  gs_worker_attach(worker, loop);
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

/* Decodes data as a chunked body into out (size bytes at least): the
 * decoder's result, *n the data bytes decoded, *left what followed the end. */
static ssize_t decode(struct gs_http_chunked *d, const uint8_t *data, size_t size, char *out,
                      size_t *n)
{
  memcpy(out, data, size);
  *n = size;
  return gs_http_chunked_decode(d, out, n, 1u << 16);
}

/* The decoder fed the input whole and in two pieces must agree: the same
 * outcome, the same data bytes, the same count after the body's end. */
static void chunked_pieces(const uint8_t *data, size_t size, size_t split)
{
  struct gs_http_chunked a, b;
  char *whole = malloc(size + 1), *one = malloc(size + 1), *two = malloc(size + 1);
  size_t nw, n1, n2 = 0;
  ssize_t rw, r1, r2 = GS_HTTP_CHUNK_MORE;
  bool ok;
  gs_http_chunked_init(&a);
  gs_http_chunked_init(&b);
  rw = decode(&a, data, size, whole, &nw);
  r1 = decode(&b, data, split, one, &n1);
  if (r1 == GS_HTTP_CHUNK_MORE)
    r2 = decode(&b, data + split, size - split, two, &n2);
  else if (r1 >= 0)
    r1 += (ssize_t)(size - split); /* the second piece follows the end */
  r1 = r1 == GS_HTTP_CHUNK_MORE ? r2 : r1;
  ok = r1 == rw;
  if (ok && (rw >= 0 || rw == GS_HTTP_CHUNK_MORE)) /* on an error what was decoded does not count */
    ok = n1 + n2 == nw && memcmp(whole, one, n1) == 0 && memcmp(whole + n1, two, n2) == 0;
  if (!ok) {
    fprintf(stderr, "fuzz-http: the chunked decoder gives %zd whole, %zd in pieces\n", rw, r1);
    abort();
  }
  (void)gs_http_list_has((const char *)data, size, "close", 5);
  free(whole);
  free(one);
  free(two);
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
  chunked_pieces(data, size, split);
  return 0;
}
