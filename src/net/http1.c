/* http1.c: HTTP/1.1 message rules that both the server (http.c, requests)
 * and the proxy's upstream side (proxy.c, responses) apply: a strict
 * chunked-body decoder (RFC 9112 §7.1), tokens of comma-separated header
 * lists, and the headers one hop must not pass on (RFC 9110 §7.6.1).
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
