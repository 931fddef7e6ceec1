/* SPDX-License-Identifier: Apache-2.0 */
/* response.c: the one HTTP/1 response reader, used by the proxy's upstream
 * side, the supervisor's readiness probes and the load generator. It reads
 * a caller's buffer: the head (picohttpparser), then the body as it comes,
 * each framing rule of RFC 9112 stated once below, strictly (a proxy that
 * guessed where an answer ends could hand one client another's bytes).
 * Nothing here knows sockets; docs/architecture.md lists the rules and
 * tests/net/test-http-response.c holds one case for each. */
#include "net/internal.h"

#include <string.h>

static int bad(struct gs_http_resp *r, const char *why)
{
  r->why = why;
  return GS_HTTP_RESP_BAD;
}

void gs_http_resp_init(struct gs_http_resp *r, bool head_request)
{
  memset(r, 0, sizeof(*r));
  r->head_request = head_request;
  gs_http_chunked_init(&r->dec);
}

/* The head's fields and framing; GS_HTTP_RESP_BAD names a rule broken. */
static int read_fields(struct gs_http_resp *r, const struct phr_header *h, size_t nh)
{
  struct gs_http_fields f;
  gs__http_headers(h, nh, r->headers);
  r->nheaders = nh;
  if ((r->why = gs_http_fields_read(r->headers, nh, r->minor_version, &f)) != NULL)
    return GS_HTTP_RESP_BAD;
  r->keep_alive = f.keep_alive;
  r->content_length = f.length;
  if (r->head_request || r->status == 204 || r->status == 304)
    r->framing = GS_HTTP_NO_BODY;
  else if (f.chunked)
    r->framing = GS_HTTP_CHUNKED;
  else if (f.has_length)
    r->framing = GS_HTTP_LENGTH;
  else
    r->framing = GS_HTTP_UNTIL_CLOSE;
  if (r->framing == GS_HTTP_UNTIL_CLOSE)
    r->keep_alive = false;
  return GS_HTTP_RESP_DONE;
}

int gs_http_resp_head(struct gs_http_resp *r, char *buf, size_t *len, size_t max_head)
{
  for (;;) {
    struct phr_header h[GS_HTTP_MAX_HEADERS];
    size_t nh = GS_HTTP_MAX_HEADERS, msg_len;
    const char *msg;
    int n = phr_parse_response(buf, *len, &r->minor_version, &r->status, &msg, &msg_len, h, &nh,
                               0);
    if (n == -2)
      return *len >= max_head ? bad(r, "an answer head larger than the reader takes")
                              : GS_HTTP_RESP_MORE;
    if (n < 0)
      return bad(r, "a malformed status line or header (or over 64 headers)");
    if ((size_t)n > max_head)
      return bad(r, "an answer head larger than the reader takes");
    if (r->status < 100)
      return bad(r, "a status below 100");
    if (r->status == 101) /* we never ask for another protocol */
      return bad(r, "101 Switching Protocols, which no request asked for");
    if (r->status < 200) { /* interim (100 Continue, 103): not the answer */
      memmove(buf, buf + n, *len - (size_t)n);
      *len -= (size_t)n;
      continue;
    }
    r->head_len = (size_t)n;
    return read_fields(r, h, nh);
  }
}

int gs_http_resp_body(struct gs_http_resp *r, char *data, size_t *len, bool eof, size_t *rest)
{
  size_t n = *len;
  ssize_t rc;
  *rest = 0;
  switch (r->framing) {
  case GS_HTTP_NO_BODY:
    *rest = n;
    *len = 0;
    return GS_HTTP_RESP_DONE;
  case GS_HTTP_LENGTH:
    if (n > r->content_length - r->body_len)
      n = (size_t)(r->content_length - r->body_len);
    *rest = *len - n;
    *len = n;
    r->body_len += n;
    if (r->body_len == r->content_length)
      return GS_HTTP_RESP_DONE;
    break;
  case GS_HTTP_CHUNKED:
    /* an answer's size is the reader's caller's to bound, not the framing's */
    rc = gs_http_chunked_decode(&r->dec, data, len, UINT64_MAX);
    r->body_len += *len;
    if (rc >= 0) {
      *rest = (size_t)rc;
      return GS_HTTP_RESP_DONE;
    }
    if (rc != GS_HTTP_CHUNK_MORE)
      return bad(r, "a malformed chunked body");
    break;
  case GS_HTTP_UNTIL_CLOSE:
    r->body_len += n;
    return eof ? GS_HTTP_RESP_DONE : GS_HTTP_RESP_MORE;
  }
  return eof ? bad(r, "the connection ended in the middle of the body") : GS_HTTP_RESP_MORE;
}

int gs_http_resp_whole(struct gs_http_resp *r, char *buf, size_t *len, bool eof, size_t max_head,
                       size_t *used)
{
  size_t at, n, rest;
  int rc;
  if (!r->head_len) {
    rc = gs_http_resp_head(r, buf, len, max_head);
    if (rc == GS_HTTP_RESP_MORE && eof)
      return bad(r, "the connection ended before the answer's head");
    if (rc != GS_HTTP_RESP_DONE)
      return rc;
  }
  at = r->head_len + (size_t)r->body_len; /* the body so far, decoded, ends here */
  n = *len - at;
  rc = gs_http_resp_body(r, buf + at, &n, eof, &rest);
  if (rc == GS_HTTP_RESP_BAD)
    return rc;
  *len = at + n + rest; /* a chunked body shrank in place */
  *used = at + n;
  return rc;
}
