/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz-h2-client.c: libFuzzer target for net's HTTP/2 client (the proxy's
 * connection to its workers, bench's gRPC load): three calls are made, then
 * the input's bytes arrive as the server's, in-process and without a
 * socket, split in two reads at a point the input chooses. An odd first
 * byte puts the server's empty SETTINGS first so frames are reached
 * quickly. A crash, leak or sanitizer report is a finding; so is a call
 * closed twice, a callback after the client is dead or after its close, or
 * a death said twice. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NCALLS 3

static struct gs_net_loop *loop;
static unsigned closed[NCALLS], deaths;
static bool dead;

static void on_header(void *call, const char *name, size_t nl, const char *value, size_t vl)
{
  (void)name, (void)nl, (void)value, (void)vl;
  if (dead || closed[(uintptr_t)call])
    abort();
}

static bool on_data(void *call, const uint8_t *d, size_t len)
{
  (void)d, (void)len;
  if (dead || closed[(uintptr_t)call])
    abort();
  return (uintptr_t)call != 2; /* the third call resets its stream on its first bytes */
}

static void on_closed(void *call, uint32_t code)
{
  (void)code;
  if (dead || closed[(uintptr_t)call]++)
    abort();
}

static void on_dead(void *ctx, const char *why)
{
  (void)ctx, (void)why;
  if (deaths++)
    abort();
  dead = true;
}

static const struct gs_h2_client_ops ops = {
    .header = on_header, .data = on_data, .closed = on_closed, .dead = on_dead};

#define H(n, v) {(n), (v), sizeof(n) - 1, sizeof(v) - 1}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static const uint8_t settings[] = {0, 0, 0, 4, 0, 0, 0, 0, 0};
  static const struct gs_http_header hdr[] = {H(":method", "POST"), H(":scheme", "http"),
                                              H(":path", "/s.S/M"), H(":authority", "x"),
                                              H("content-type", "application/grpc")};
  static const uint8_t body[] = {0, 0, 0, 0, 3, 'a', 'b', 'c'};
  struct gs_h2_client *c;
  size_t split;
  bool open = true;
  if (!loop && gs_net_loop_new(NULL, 64, &loop) != 0)
    abort();
  if (size < 1 || !(c = gs__h2_client_mem(loop, &ops, NULL)))
    return 0;
  memset(closed, 0, sizeof(closed));
  deaths = 0;
  dead = false;
  for (uintptr_t i = 0; i < NCALLS; i++)
    if (gs_h2_client_call(c, hdr, GS_NITEMS(hdr), body, sizeof(body), (void *)i) <= 0)
      abort();
  split = size > 1 ? data[0] % size : 0;
  if (data[0] & 1)
    open = gs__h2_client_feed(c, settings, sizeof(settings));
  if (open && gs__h2_client_feed(c, data + 1, split > 0 ? split - 1 : 0))
    (void)gs__h2_client_feed(c, data + (split ? split : 1), size - (split ? split : 1));
  gs_h2_client_free(c); /* whatever its state: nothing more is said */
  gs_net_loop_run_once(loop, 0);
  return 0;
}
