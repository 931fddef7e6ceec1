/* internal.h: serve-layer internals shared between its files and its fuzz
 * target: a connection without a socket, fed bytes in-process, so the whole
 * request path (parse, limits, handler, response) runs without networking.
 * Not part of the layer's interface (serve.h is). */
#ifndef GS_SERVE_INTERNAL_H
#define GS_SERVE_INTERNAL_H

#include "serve/serve.h"

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
