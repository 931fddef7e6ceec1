/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz-http-response.c: libFuzzer target for net's HTTP/1 response reader
 * (the proxy's upstream side, the supervisor's probes, bench): bytes arrive
 * in pieces whose sizes the input's first byte chooses, as from a keep-alive
 * socket, answers are read one after another, then EOF; each answer whole
 * (gs_http_resp_whole) and, from the same bytes, streamed (head, then each
 * piece's body dropped). Nothing may crash or read past the buffer; a
 * complete answer's body must lie inside what was received, and both ways
 * must agree on the verdict and the body's length. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "net/net.h"

#define MAX_HEAD 16384

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The first answer of data[0..size), streamed in pieces; its verdict. */
static int streamed(const uint8_t *data, size_t size, size_t piece, uint64_t *body_len)
{
  struct gs_http_resp p;
  char *buf = malloc(size + 1);
  size_t at = 0, len = 0;
  int rc = GS_HTTP_RESP_MORE;
  if (!buf)
    return -2;
  gs_http_resp_init(&p, false);
  while (at < size && rc == GS_HTTP_RESP_MORE) {
    size_t n = size - at < piece ? size - at : piece, rest;
    bool eof = at + n == size;
    char *d = buf;
    memcpy(buf + len, data + at, n);
    len += n;
    at += n;
    if (!p.head_len) {
      rc = gs_http_resp_head(&p, buf, &len, MAX_HEAD);
      if (rc == GS_HTTP_RESP_MORE && eof)
        rc = GS_HTTP_RESP_BAD;
      if (rc != GS_HTTP_RESP_DONE)
        continue;
      d += p.head_len;
      len -= p.head_len;
    }
    rc = gs_http_resp_body(&p, d, &len, eof, &rest);
    if (len > size || rest > size)
      abort();
    len = 0;
  }
  *body_len = p.body_len;
  free(buf);
  return rc == GS_HTTP_RESP_MORE ? GS_HTTP_RESP_BAD : rc; /* the input ended: the close */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  struct gs_http_resp p;
  size_t piece, at = 1, len = 0, used;
  bool first = true;
  char *buf;
  if (size < 1)
    return 0;
  piece = (size_t)data[0] % 17 + 1;
  if (!(buf = malloc(size)))
    return 0;
  gs_http_resp_init(&p, false);
  while (at <= size) {
    size_t n = size - at < piece ? size - at : piece;
    bool eof = at + n == size;
    int rc;
    memcpy(buf + len, data + at, n);
    len += n;
    at += n;
    rc = gs_http_resp_whole(&p, buf, &len, eof, MAX_HEAD, &used);
    if (first && rc != GS_HTTP_RESP_MORE) { /* the stream must agree on the first answer */
      uint64_t blen;
      int rs = streamed(data + 1, size - 1, piece, &blen);
      if (rs != -2 && (rs != rc || (rc == GS_HTTP_RESP_DONE && blen != p.body_len)))
        abort();
      first = false;
    }
    if (rc == GS_HTTP_RESP_BAD)
      break;
    if (rc == GS_HTTP_RESP_DONE) {
      if (used > len || p.head_len + p.body_len > used)
        abort();
      memmove(buf, buf + used, len - used);
      len -= used;
      gs_http_resp_init(&p, false);
      continue; /* the next answer may already be here */
    }
    if (eof)
      break;
  }
  free(buf);
  return 0;
}
