/* internal.h: bench-layer internals shared between its files: picohttpparser
 * as libh2o-dev exports it (Debian ships no header; these are its documented
 * prototypes, as src/serve declares them for itself), and the helpers the run
 * and the CLI-facing parsers share. Not part of the interface (bench.h is). */
#ifndef GS_BENCH_INTERNAL_H
#define GS_BENCH_INTERNAL_H

#include "bench/bench.h"

#include <sys/types.h>

struct phr_header {
  const char *name;
  size_t name_len;
  const char *value;
  size_t value_len;
};
struct phr_chunked_decoder {
  size_t bytes_left_in_chunk;
  char consume_trailer;
  char hex_count_, state_;
};
/* Returns the head's length, -1 when malformed, -2 when incomplete. */
int phr_parse_response(const char *buf, size_t len, int *minor_version, int *status,
                       const char **msg, size_t *msg_len, struct phr_header *headers,
                       size_t *num_headers, size_t last_len);
/* Decodes in place: -2 more needed, -1 malformed, else bytes left after the body. */
ssize_t phr_decode_chunked(struct phr_chunked_decoder *decoder, char *buf, size_t *bufsz);

/* Resolves the URL's host and port (first address); fills a sockaddr_storage. */
struct sockaddr_storage;
int gs__bench_resolve(struct gs_err *err, const struct gs_bench_url *u,
                      struct sockaddr_storage *addr, unsigned *addrlen);

#endif
