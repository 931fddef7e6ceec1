/* fuzz-bench-http.c: libFuzzer target for the load generator's HTTP response
 * reader: bytes arrive in pieces whose sizes the input's first byte chooses,
 * as from a keep-alive socket, responses are read one after another, then
 * EOF. Nothing may crash or read past the buffer; a complete response's body
 * must lie inside what was received. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  struct gs_bench_http p;
  size_t piece, at = 1, len = 0, used;
  char *buf;
  if (size < 1)
    return 0;
  piece = (size_t)data[0] % 17 + 1;
  if (!(buf = malloc(size)))
    return 0;
  gs_bench_http_reset(&p);
  while (at <= size) {
    size_t n = size - at < piece ? size - at : piece;
    bool eof = at + n == size;
    int rc;
    memcpy(buf + len, data + at, n);
    len += n;
    at += n;
    rc = gs_bench_http_feed(&p, buf, &len, eof, &used);
    if (rc < 0)
      break;
    if (rc == 1) {
      if (used > len || p.head_len + p.body_len > used)
        abort();
      memmove(buf, buf + used, len - used);
      len -= used;
      gs_bench_http_reset(&p);
      continue; /* the next response may already be here */
    }
    if (eof)
      break;
  }
  free(buf);
  return 0;
}
