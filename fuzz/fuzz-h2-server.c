/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz-h2-server.c: libFuzzer target for the HTTP/2 input path of the worker's gRPC
 * service: bytes go, in-process and without sockets, through nghttp2 (h2.c),
 * the gRPC framing and protobuf-c's decoding into the emulated worker's
 * handlers (instant mode), split in two reads at a point the input chooses.
 * An odd first byte prepends the client preface so frames are reached
 * quickly. Messages are held under a budget of the target's own (as the
 * proxy gives its HTTP/2 server one), which must be whole again once the
 * connection is gone. A crash, leak or sanitizer report is a finding; every
 * input must end the connection (GOAWAY) or leave it waiting for more. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/internal.h"
#include "worker/internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct gs_net_loop *loop;
static struct gs_worker *worker;
static struct gs_grpc_server *grpc;
static struct gs_net_budget budget = {.max = 4u << 20}; /* small: its refusal is reachable */

static void setup(void)
{
  struct gs_worker_config cfg = {
      .sms = 14, .full_sms = 108, .share = 1, .instant = true, .slice_name = "fuzz"};
  struct gs_err err = {0};
  if (gs_net_loop_new(&err, 64, &loop) != 0 || gs_worker_new(&err, &cfg, &worker) != 0 ||
      gs__grpc_worker_new(&err, loop, worker, -1, &grpc) != 0) {
    fprintf(stderr, "fuzz-h2: setup: %s\n", err.msg);
    abort();
  }
  gs_worker_attach(worker, loop);
  gs_h2_server_budget(gs__grpc_worker_h2(grpc), &budget);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
  struct gs_h2_server *h2;
  struct gs_h2_conn *c;
  size_t split;
  bool open = true;
  if (!loop)
    setup();
  h2 = gs__grpc_worker_h2(grpc);
  if (size == 0)
    return 0;
  split = (size_t)data[0] * (size - 1) / 255; /* the first byte picks the split... */
  if (!(c = gs__h2_conn_mem(h2)))
    abort();
  if (data[0] & 1) /* ...and whether the preface comes first */
    open = gs__h2_conn_feed(c, preface, sizeof(preface) - 1);
  data++, size--;
  if (open && gs__h2_conn_feed(c, data, split) && gs__h2_conn_feed(c, data + split, size - split))
    gs__h2_conn_free(c); /* still open: waiting for more that never comes */
  if (gs_h2_server_conns(h2) != 0) {
    fprintf(stderr, "fuzz-h2: a connection outlived its input\n");
    abort();
  }
  if (gs_net_budget_used(&budget) != 0) {
    fprintf(stderr, "fuzz-h2: %zu bytes of the budget outlived their connection\n",
            gs_net_budget_used(&budget));
    abort();
  }
  return 0;
}
