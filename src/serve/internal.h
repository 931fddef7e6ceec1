/* internal.h: serve-layer internals shared between its files and its fuzz
 * target: picohttpparser's declarations (http.c and proxy.c parse with it),
 * and a connection without a socket, fed bytes in-process, so the whole
 * request path (parse, limits, handler, response) runs without networking.
 * Not part of the layer's interface (serve.h is). */
#ifndef GS_SERVE_INTERNAL_H
#define GS_SERVE_INTERNAL_H

#include "serve/serve.h"

#include <sys/types.h>

/* picohttpparser as libh2o exports it (Debian ships no header for it). Our
 * declarations of its documented API: phr_parse_request returns the head's
 * length, -1 when malformed, -2 when incomplete; phr_decode_chunked decodes
 * in place and returns -2 (more needed), -1 (malformed) or the count of
 * bytes left after the body, which it moves to just after the decoded data. */
struct phr_header {
  const char *name;
  size_t name_len;
  const char *value;
  size_t value_len;
};
int phr_parse_request(const char *buf, size_t len, const char **method, size_t *method_len,
                      const char **path, size_t *path_len, int *minor_version,
                      struct phr_header *headers, size_t *num_headers, size_t last_len);
struct phr_chunked_decoder {
  size_t bytes_left_in_chunk;
  char consume_trailer;
  char hex_count_, state_;
};
ssize_t phr_decode_chunked(struct phr_chunked_decoder *decoder, char *buf, size_t *bufsz);
/* Returns as phr_parse_request does, for a response head (the proxy's upstream side). */
int phr_parse_response(const char *buf, size_t len, int *minor_version, int *status,
                       const char **msg, size_t *msg_len, struct phr_header *headers,
                       size_t *num_headers, size_t last_len);

/* Newer picohttpparser releases append fields to the decoder; the padding
 * keeps a library newer than our declaration inside our memory. */
union chunk_decoder {
  struct phr_chunked_decoder d;
  char pad[128];
};

/* A connection with no fd: responses are counted and discarded. NULL on no memory. */
struct gs_http_conn *gs__http_conn_mem(struct gs_http_server *s);
/* Appends bytes as if read from the peer and processes them; eof = the peer
 * closed its side. Returns false once the connection has ended (and was freed). */
bool gs__http_conn_feed(struct gs_http_conn *c, const void *data, size_t len, bool eof);
/* Frees a connection whatever its state. */
void gs__http_conn_free(struct gs_http_conn *c);
/* Bytes of responses written so far (for the fuzz target's sanity checks). */
size_t gs__http_conn_sent(const struct gs_http_conn *c);

#endif
