/* SPDX-License-Identifier: Apache-2.0 */
/* http1.c: HTTP/1.1 message rules that both the server (http.c, requests)
 * and the response reader (response.c) apply: the framing and connection
 * fields of a head (RFC 9112 §6, §9.3), a strict chunked-body decoder (RFC
 * 9112 §7.1), tokens of comma-separated header lists, and the headers one
 * hop must not pass on (RFC 9110 §7.6.1).
 * picohttpparser (Debian's 2.2) still parses heads; its chunked decoder is
 * not used because it reads "0x3" as a last chunk of size 0 followed by an
 * extension, and accepts a size of 2^64-1. Nothing here knows sockets. */
#include "net/internal.h"

#include <string.h>
#include <strings.h>

/* A size, extension or trailer line longer than this is malformed: the
 * decoder skips those bytes, so without a bound a peer could send them
 * forever without a body byte. */
#define LINE_MAX_BYTES 4096u

enum {
  CK_SIZE,     /* hex digits of a chunk size */
  CK_EXT,      /* after the size: BWS, extensions, up to the line's LF */
  CK_DATA,     /* chunk data */
  CK_DATA_END, /* the CRLF after chunk data */
  CK_DATA_LF,  /* its LF after the CR */
  CK_TRAILER,  /* the start of a trailer line (an empty one ends the body) */
  CK_TLINE,    /* inside a trailer line */
  CK_TEND_LF,  /* the LF of the empty line that ends the body */
  CK_DONE,
};

void gs_http_chunked_init(struct gs_http_chunked *d)
{
  memset(d, 0, sizeof(*d));
}

static int hexval(unsigned char ch)
{
  if (ch >= '0' && ch <= '9')
    return ch - '0';
  ch |= 0x20;
  return ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
}

/* One byte of a line (size, extension or trailer); returns 0, or a
 * GS_HTTP_CHUNK_ code. The data and done states never reach it. */
static int line_byte(struct gs_http_chunked *d, unsigned char ch, uint64_t max)
{
  int v;
  if (++d->line > LINE_MAX_BYTES)
    return GS_HTTP_CHUNK_BAD;
  switch (d->state) {
  case CK_SIZE:
    if ((v = hexval(ch)) >= 0) {
      /* beyond what the body may still hold: refused before any byte of it */
      if (max - d->total < (uint64_t)v || d->left > (max - d->total - (uint64_t)v) / 16)
        return GS_HTTP_CHUNK_TOO_BIG;
      d->left = d->left * 16 + (uint64_t)v;
      d->digits = true;
      return 0;
    }
    if (!d->digits) /* chunk-size = 1*HEXDIG: "x", ";" or CRLF first is malformed */
      return GS_HTTP_CHUNK_BAD;
    d->state = CK_EXT;
    /* fall through - this byte is the first after the size */
  case CK_EXT:
    if (d->cr && ch != '\n')
      return GS_HTTP_CHUNK_BAD; /* a CR ends the line: its LF must follow */
    if (ch == '\n') {
      d->line = 0;
      d->state = d->left ? CK_DATA : CK_TRAILER;
      d->digits = d->ext = d->cr = false;
      return 0;
    }
    if (ch == '\r') {
      d->cr = true;
      return 0;
    }
    if ((ch < 0x20 && ch != '\t') || ch == 0x7f)
      return GS_HTTP_CHUNK_BAD;
    if (ch == ';')
      d->ext = true;
    else if (!d->ext && ch != ' ' && ch != '\t')
      return GS_HTTP_CHUNK_BAD; /* only BWS or an extension after the digits: "0x3" stops here */
    return 0;
  case CK_DATA_END:
    if (ch == '\r') {
      d->state = CK_DATA_LF;
      return 0;
    }
    /* fall through - a bare LF ends the data too */
  case CK_DATA_LF:
    if (ch != '\n')
      return GS_HTTP_CHUNK_BAD;
    d->line = 0;
    d->state = CK_SIZE;
    d->ext = false;
    return 0;
  case CK_TRAILER:
    d->state = ch == '\r' ? CK_TEND_LF : ch == '\n' ? CK_DONE : CK_TLINE;
    return ch == '\n' || ch == '\r' || ch > 0x20 ? 0 : GS_HTTP_CHUNK_BAD;
  case CK_TEND_LF:
    if (ch != '\n')
      return GS_HTTP_CHUNK_BAD;
    d->state = CK_DONE;
    return 0;
  default: /* CK_TLINE */
    if (ch == '\n') {
      d->line = 0;
      d->state = CK_TRAILER;
    }
    return 0;
  }
}

ssize_t gs_http_chunked_decode(struct gs_http_chunked *d, char *buf, size_t *len, uint64_t max)
{
  size_t src = 0, dst = 0, n = *len;
  while (src < n && d->state != CK_DONE) {
    if (d->state == CK_DATA) {
      size_t take = n - src < d->left ? n - src : (size_t)d->left;
      if (dst != src)
        memmove(buf + dst, buf + src, take);
      dst += take;
      src += take;
      d->left -= take;
      d->total += take;
      if (!d->left)
        d->state = CK_DATA_END;
      continue;
    }
    int rc = line_byte(d, (unsigned char)buf[src++], max);
    if (rc)
      return rc;
  }
  *len = dst;
  if (d->state != CK_DONE)
    return GS_HTTP_CHUNK_MORE;
  /* what follows the body (a pipelined message) moves up behind it */
  if (dst != src)
    memmove(buf + dst, buf + src, n - src);
  return (ssize_t)(n - src);
}

bool gs_http_list_has(const char *v, size_t n, const char *tok, size_t tn)
{
  size_t i = 0;
  while (i < n) {
    size_t s, e;
    while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
      i++;
    s = i;
    while (i < n && v[i] != ',')
      i++;
    e = i;
    while (e > s && (v[e - 1] == ' ' || v[e - 1] == '\t'))
      e--;
    if (e - s == tn && tn && strncasecmp(v + s, tok, tn) == 0)
      return true;
  }
  return false;
}

bool gs_http_hop_header(const char *name, size_t nl, const struct gs_http_header *conn,
                        size_t nconn)
{
  /* the hop-by-hop fields of RFC 9110 §7.6.1 and their obsolete kin */
  static const char *const hop[] = {"connection", "keep-alive", "transfer-encoding", "te",
                                    "trailer",    "upgrade",    "proxy-connection"};
  for (size_t i = 0; i < GS_NITEMS(hop); i++)
    if (nl == strlen(hop[i]) && strncasecmp(name, hop[i], nl) == 0)
      return true;
  for (size_t i = 0; i < nconn; i++)
    if (gs_http_list_has(conn[i].value, conn[i].value_len, name, nl))
      return true;
  return false;
}

static bool field_is(const struct gs_http_header *h, const char *name, size_t n)
{
  return h->name_len == n && strncasecmp(h->name, name, n) == 0;
}

/* Content-Length: 1 to 18 digits, nothing else (no sign, no space, no
 * list): a lenient one invites request smuggling. */
static bool parse_length(const char *s, size_t n, uint64_t *out)
{
  uint64_t v = 0;
  if (n == 0 || n > 18)
    return false;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9')
      return false;
    v = v * 10 + (uint64_t)(s[i] - '0');
  }
  *out = v;
  return true;
}

void gs__http_headers(const struct phr_header *h, size_t nh, struct gs_http_header *out)
{
  for (size_t i = 0; i < nh; i++) {
    size_t n = h[i].value_len;
    while (n && (h[i].value[n - 1] == ' ' || h[i].value[n - 1] == '\t'))
      n--;
    out[i] = (struct gs_http_header){h[i].name, h[i].value, h[i].name_len, n};
  }
}

const char *gs_http_fields_read(const struct gs_http_header *h, size_t nh, int minor,
                                struct gs_http_fields *f)
{
  uint64_t v;
  memset(f, 0, sizeof(*f));
  f->keep_alive = minor >= 1; /* HTTP/1.1 keeps the connection, 1.0 does not */
  for (size_t i = 0; i < nh; i++) {
    if (!h[i].name) /* picohttpparser's obs-fold continuation (RFC 9112 §5.2) */
      return "a header folded over two lines";
    if (field_is(&h[i], "connection", 10)) {
      if (gs_http_list_has(h[i].value, h[i].value_len, "close", 5))
        f->keep_alive = false;
      else if (gs_http_list_has(h[i].value, h[i].value_len, "keep-alive", 10))
        f->keep_alive = true;
    } else if (field_is(&h[i], "transfer-encoding", 17)) {
      /* chunked alone: any other coding leaves the body's end unknown to us */
      if (f->chunked || h[i].value_len != 7 || strncasecmp(h[i].value, "chunked", 7) != 0)
        return "a Transfer-Encoding other than one \"chunked\"";
      f->chunked = true;
    } else if (field_is(&h[i], "content-length", 14)) {
      if (!parse_length(h[i].value, h[i].value_len, &v))
        return "a Content-Length that is not 1 to 18 digits";
      if (f->has_length && v != f->length) /* the body's end is unknown (RFC 9112 §6.3) */
        return "two Content-Length headers that differ";
      f->length = v;
      f->has_length = true;
    } else if (field_is(&h[i], "expect", 6)) {
      f->expect_continue = gs_http_list_has(h[i].value, h[i].value_len, "100-continue", 12);
    } else if (field_is(&h[i], "host", 4)) {
      f->hosts++;
    }
  }
  if (f->chunked && f->has_length) /* either could be the one a peer on the path believes */
    return "both Content-Length and Transfer-Encoding";
  return NULL;
}
