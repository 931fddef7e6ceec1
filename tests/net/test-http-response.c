/* SPDX-License-Identifier: Apache-2.0 */
/* test-http-response.c: net's one HTTP/1 response reader, the table of its
 * cases: the union of what the three readers it replaced took and refused
 * (the proxy's upstream side, bench's keep-alive reader, the supervisor's
 * probe), one row per framing rule. Each row is read whole at every split
 * point (gs_http_resp_whole, as bench's GET and the probe read), and again
 * streamed (head, then each piece's body passed on and dropped, as the
 * proxy and bench's runs read), and both must agree with the row. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "net/net.h"

#define OK GS_HTTP_RESP_DONE
#define BAD GS_HTTP_RESP_BAD
#define MAX_HEAD 512 /* small, so the head limit's row stays short */

struct row {
  const char *rule; /* what the row shows (RFC 9112 section) */
  const char *text;
  int rc;           /* OK or BAD */
  int status;
  const char *body;
  bool keep_alive;
  bool eof;          /* the server closes after the text */
  bool head_request;
  size_t after;      /* bytes after the answer (the next one's) */
};

/* Rows leave their trailing false and zero columns out. */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
static const struct row rows[] = {
    {"Content-Length frames the body", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", OK, 200,
     "hello", true},
    {"Connection: close ends keep-alive", "HTTP/1.1 503 Busy\r\nContent-Length: 2\r\nConnection: "
     "close\r\n\r\nno", OK, 503, "no", false},
    {"Connection is a list of tokens, any case", "HTTP/1.1 200 OK\r\nConnection: keep-alive, Close"
     "\r\nContent-Length: 0\r\n\r\n", OK, 200, "", false},
    {"HTTP/1.0 keep-alive when asked", "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length:"
     " 1\r\n\r\nx", OK, 200, "x", true},
    {"chunked, decoded", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde"
     "\r\n0\r\n\r\n", OK, 200, "abcde", true},
    {"chunked, any case, extensions and trailers", "HTTP/1.1 200 OK\r\nTransfer-Encoding: CHUNKED\r\n"
     "\r\n3;x=y\r\nabc\r\n0\r\nT: v\r\n\r\n", OK, 200, "abc", true},
    {"interim 100 skipped", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: "
     "1\r\n\r\nx", OK, 201, "x", true},
    {"interim 103 skipped", "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\n"
     "Content-Length: 1\r\n\r\ny", OK, 200, "y", true},
    {"no length: until the close (1.0)", "HTTP/1.0 200 OK\r\n\r\nuntil close", OK, 200,
     "until close", false, true},
    {"no length: until the close, never kept (1.1)", "HTTP/1.1 200 OK\r\nConnection: keep-alive\r\n"
     "\r\nrest", OK, 200, "rest", false, true},
    {"204 has no body", "HTTP/1.1 204 No Content\r\n\r\n", OK, 204, "", true},
    {"204 has no body whatever it says", "HTTP/1.1 204 No Content\r\nContent-Length: 3\r\n\r\n", OK,
     204, "", true},
    {"304 has no body", "HTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n\r\n", OK, 304, "", true},
    {"HEAD's answer has no body", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", OK, 200, "", true,
     false, true},
    {"repeated equal Content-Length", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n"
     "\r\nab", OK, 200, "ab", true},
    {"bytes after the answer are the next one's", "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nzHTTP",
     OK, 200, "z", true, false, false, 4},
    {"bytes after a chunked answer are the next one's", "HTTP/1.1 200 OK\r\nTransfer-Encoding: "
     "chunked\r\n\r\n1\r\nq\r\n0\r\n\r\nHT", OK, 200, "q", true, false, false, 2},
    {"whitespace around a value is not part of it", "HTTP/1.1 200 OK\r\nContent-Length:  2 \t\r\n"
     "\r\nab", OK, 200, "ab", true},
    {"not HTTP", "HELLO\r\n\r\n", BAD},
    {"status below 100", "HTTP/1.1 099 Low\r\nContent-Length: 0\r\n\r\n", BAD},
    {"101 was never asked for", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n", BAD},
    {"space before a colon", "HTTP/1.1 200 OK\r\nContent-Length : 2\r\n\r\nab", BAD},
    {"Content-Length not digits", "HTTP/1.1 200 OK\r\nContent-Length: 5x\r\n\r\nhello", BAD},
    {"Content-Length with a sign", "HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\nhello", BAD},
    {"Content-Length as a list", "HTTP/1.1 200 OK\r\nContent-Length: 5, 5\r\n\r\nhello", BAD},
    {"Content-Length over 18 digits", "HTTP/1.1 200 OK\r\nContent-Length: 9999999999999999999\r\n"
     "\r\n", BAD},
    {"two Content-Length that differ", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n"
     "\r\nhello", BAD},
    {"Transfer-Encoding other than chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
     BAD},
    {"chunked not alone (last)", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
     BAD},
    {"chunked not alone (first)", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n0\r\n"
     "\r\n", BAD},
    {"chunked twice", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n"
     "\r\n0\r\n\r\n", BAD},
    {"Content-Length beside Transfer-Encoding", "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n"
     "Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", BAD},
    {"chunk size not hex", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", BAD},
    {"chunk size with 0x", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0x3\r\nabc\r\n0\r\n"
     "\r\n", BAD},
    {"chunk data longer than its size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n"
     "abc\r\n0\r\n\r\n", BAD},
    {"obs-fold", "HTTP/1.1 200 OK\r\nX: a\r\n b\r\nContent-Length: 0\r\n\r\n", BAD},
    {"closed before the head's end", "HTTP/1.1 200 OK\r\nContent-Len", BAD, 0, NULL, false, true},
    {"closed mid-body (length)", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", BAD, 0, NULL,
     false, true},
    {"closed mid-body (chunked)", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab", BAD,
     0, NULL, false, true},
};

/* Reads text whole, bytes arriving in two pieces cut at cut; *after: the
 * bytes past the answer (received or not). */
static int read_whole(const struct row *r, size_t cut, struct gs_http_resp *p, char *buf,
                      size_t *after)
{
  size_t used = 0;
  size_t total = strlen(r->text), at = 0, len = 0;
  int rc = GS_HTTP_RESP_MORE;
  gs_http_resp_init(p, r->head_request);
  while (at < total) {
    size_t n = at == 0 && cut ? cut : total - at;
    memcpy(buf + len, r->text + at, n);
    len += n;
    at += n;
    rc = gs_http_resp_whole(p, buf, &len, r->eof && at == total, MAX_HEAD, &used);
    if (rc == GS_HTTP_RESP_DONE) {
      *after = len - used + total - at;
      if (r->after && at == total)
        assert_memory_equal(buf + used, r->text + total - r->after, r->after);
    }
    if (rc != GS_HTTP_RESP_MORE) /* complete before all its bytes came: wrong */
      return at + r->after >= total || rc == BAD ? rc : 99;
  }
  return rc;
}

/* Reads text streamed: the head, then each piece's body bytes appended to
 * body and dropped from the buffer. */
static int read_streamed(const struct row *r, size_t cut, struct gs_http_resp *p, char *body,
                         size_t *body_len, size_t *after)
{
  size_t total = strlen(r->text), at = 0, len = 0;
  char buf[1024];
  gs_http_resp_init(p, r->head_request);
  *body_len = *after = 0;
  while (at < total) {
    size_t n = at == 0 && cut ? cut : total - at, rest;
    bool eof = r->eof && at + n == total;
    char *data = buf;
    int rc;
    memcpy(buf + len, r->text + at, n);
    len += n;
    at += n;
    if (!p->head_len) {
      rc = gs_http_resp_head(p, buf, &len, MAX_HEAD);
      if (rc == GS_HTTP_RESP_MORE && !eof)
        continue;
      if (rc != GS_HTTP_RESP_DONE)
        return BAD;
      data += p->head_len;
      len -= p->head_len;
    }
    rc = gs_http_resp_body(p, data, &len, eof, &rest);
    memcpy(body + *body_len, data, len);
    *body_len += len;
    len = 0;
    if (rc != GS_HTTP_RESP_MORE) {
      *after = rest + total - at;
      return at + r->after >= total || rc == BAD ? rc : 99;
    }
  }
  return GS_HTTP_RESP_MORE;
}

static void every_row_at_every_split(void **state)
{
  char buf[1024], body[1024];
  (void)state;
  for (size_t i = 0; i < GS_NITEMS(rows); i++) {
    const struct row *r = &rows[i];
    for (size_t cut = 0; cut < strlen(r->text); cut++) {
      struct gs_http_resp p, q;
      size_t wafter = 0, blen, after;
      int rc = read_whole(r, cut, &p, buf, &wafter), rs = read_streamed(r, cut, &q, body, &blen,
                                                                          &after);
      if (rc != r->rc || rs != r->rc)
        fail_msg("row \"%s\" cut at %zu: whole %d, streamed %d, want %d (%s)", r->rule, cut, rc,
                 rs, r->rc, p.why ? p.why : q.why ? q.why : "");
      if (r->rc == BAD) {
        assert_non_null(p.why);
        continue;
      }
      assert_int_equal(p.status, r->status);
      assert_int_equal(q.status, r->status);
      assert_int_equal(p.keep_alive, r->keep_alive);
      assert_int_equal(q.keep_alive, r->keep_alive);
      assert_int_equal(p.body_len, strlen(r->body));
      assert_memory_equal(buf + p.head_len, r->body, strlen(r->body));
      assert_int_equal(blen, strlen(r->body));
      assert_memory_equal(body, r->body, blen);
      /* the next answer's bytes: the same count both ways */
      assert_int_equal(wafter, r->after);
      assert_int_equal(after, r->after);
    }
  }
}

/* The head's headers reach the caller (the proxy passes them on). */
static void headers_reach_the_caller(void **state)
{
  char buf[] = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-A:  b \r\nContent-Length: 0\r\n\r\n";
  size_t len = strlen(buf);
  struct gs_http_resp p;
  (void)state;
  gs_http_resp_init(&p, false);
  assert_int_equal(gs_http_resp_head(&p, buf, &len, MAX_HEAD), OK);
  assert_int_equal(p.nheaders, 3);
  assert_int_equal(p.headers[1].name_len, 3);
  /* values lose their surrounding whitespace (RFC 9110 §5.5) */
  assert_int_equal(p.headers[1].value_len, 1);
  assert_memory_equal(p.headers[1].value, "b", 1);
  assert_int_equal(p.framing, GS_HTTP_LENGTH);
  assert_int_equal(p.head_len, len);
}

/* Over max_head bytes without the head's end, or over 64 headers: refused. */
static void head_limits(void **state)
{
  char buf[4096];
  size_t len;
  struct gs_http_resp p;
  (void)state;
  len = (size_t)snprintf(buf, sizeof(buf), "HTTP/1.1 200 OK\r\nX: %0*d", MAX_HEAD, 0);
  gs_http_resp_init(&p, false);
  assert_int_equal(gs_http_resp_head(&p, buf, &len, MAX_HEAD), BAD);
  len = (size_t)snprintf(buf, sizeof(buf), "HTTP/1.1 200 OK\r\n");
  for (int i = 0; i < GS_HTTP_MAX_HEADERS + 1; i++)
    len += (size_t)snprintf(buf + len, sizeof(buf) - len, "H%d: v\r\n", i);
  len += (size_t)snprintf(buf + len, sizeof(buf) - len, "\r\n");
  gs_http_resp_init(&p, false);
  assert_int_equal(gs_http_resp_head(&p, buf, &len, sizeof(buf)), BAD);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(every_row_at_every_split),
      cmocka_unit_test(headers_reach_the_caller),
      cmocka_unit_test(head_limits),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
