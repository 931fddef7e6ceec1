/* SPDX-License-Identifier: Apache-2.0 */
/* grpc_hdr.c: the values of gRPC's own HTTP/2 headers that net's HTTP/2
 * server reads and writes (grpc-timeout in, grpc-message out), by gRPC's
 * "gRPC over HTTP2" protocol. Knows nothing of the calls that carry them. */
#include "net/internal.h"

#include <stdio.h>

uint64_t gs__grpc_timeout_us(const uint8_t *v, size_t n)
{
  static const struct { char unit; double us; } units[] = {
      {'H', 3600e6}, {'M', 60e6}, {'S', 1e6}, {'m', 1e3}, {'u', 1}, {'n', 1e-3}};
  double x = 0;
  if (n < 2 || n > 9) /* at most 8 digits, then the unit */
    return 0;
  for (size_t i = 0; i + 1 < n; i++) {
    if (v[i] < '0' || v[i] > '9')
      return 0;
    x = x * 10 + (v[i] - '0');
  }
  for (size_t u = 0; u < GS_NITEMS(units); u++)
    if (units[u].unit == v[n - 1])
      return x * units[u].us < 1 ? 1 : (uint64_t)(x * units[u].us);
  return 0;
}

/* Our messages are ASCII: only '%' and what is not printable need escapes. */
void gs__grpc_message(char *out, size_t sz, const char *msg)
{
  size_t o = 0;
  for (const char *p = msg ? msg : ""; *p && o + 4 < sz; p++)
    if (*p == '%' || (unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
      o += (size_t)snprintf(out + o, 4, "%%%02X", (unsigned char)*p);
    else
      out[o++] = *p;
  out[o] = 0;
}
