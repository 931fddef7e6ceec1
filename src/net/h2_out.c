/* SPDX-License-Identifier: Apache-2.0 */
/* h2_out.c: the output of one HTTP/2 connection, server's or client's:
 * nghttp2's frames are gathered in a buffer the thread shares and written
 * in as few send() calls as the socket takes (one per turn for a turn's
 * answers, 256 KiB at a time for large messages), instead of one per
 * frame. Only bytes the socket refused stay with the connection. It knows
 * nghttp2's sessions and sockets, not calls. */
#include "net/internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* Frames gathered before they are written (then nghttp2 is told to wait). */
#define OUT_HIGH (256u << 10)

/* The thread's gathering buffer and the connection it gathers for now. */
static __thread struct {
  char *buf;
  size_t len, cap;
  struct gs__h2_out *owner;
} scratch;

/* The gathering buffer goes with its thread (a bench or proxy thread that
 * ends would otherwise leave it behind). */
static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;

static void scratch_free(void *buf)
{
  free(buf);
  scratch.buf = NULL;
  scratch.len = scratch.cap = 0;
}

static void scratch_key_new(void)
{
  (void)pthread_key_create(&scratch_key, scratch_free);
}

static bool append(char **buf, size_t *len, size_t *cap, const uint8_t *data, size_t n)
{
  if (*len + n > *cap) {
    size_t c = *cap ? *cap : 16384;
    char *q;
    while (c < *len + n)
      c *= 2;
    if (!(q = realloc(*buf, c)))
      return false;
    *buf = q;
    *cap = c;
    if (buf == &scratch.buf) {
      (void)pthread_once(&scratch_once, scratch_key_new);
      (void)pthread_setspecific(scratch_key, q);
    }
  }
  if (n) /* an empty DATA frame (a stream's end) may have no bytes to point at */
    memcpy(*buf + *len, data, n);
  *len += n;
  return true;
}

ssize_t gs__h2_out_add(struct gs__h2_out *o, const uint8_t *data, size_t len)
{
  bool ok;
  if (o->discard)
    return (ssize_t)len;
  if (scratch.owner == o) {
    if (scratch.len >= OUT_HIGH)
      return NGHTTP2_ERR_WOULDBLOCK; /* written first, then nghttp2 goes on */
    ok = append(&scratch.buf, &scratch.len, &scratch.cap, data, len);
  } else { /* another connection's flush is under way in this thread (nested) */
    if (o->len - o->off >= OUT_HIGH)
      return NGHTTP2_ERR_WOULDBLOCK;
    ok = append(&o->buf, &o->len, &o->cap, data, len);
  }
  return ok ? (ssize_t)len : NGHTTP2_ERR_CALLBACK_FAILURE;
}

int gs__h2_out_add_data(struct gs__h2_out *o, const uint8_t *head, const uint8_t *data, size_t len)
{
  char **buf = &o->buf;
  size_t *blen = &o->len, *cap = &o->cap;
  if (o->discard)
    return 0;
  if (scratch.owner == o) {
    if (scratch.len >= OUT_HIGH)
      return NGHTTP2_ERR_WOULDBLOCK;
    buf = &scratch.buf, blen = &scratch.len, cap = &scratch.cap;
  } else if (o->len - o->off >= OUT_HIGH) {
    return NGHTTP2_ERR_WOULDBLOCK;
  }
  /* room for both first, so that a failure leaves nothing half gathered */
  if (!append(buf, blen, cap, head, 9))
    return NGHTTP2_ERR_CALLBACK_FAILURE;
  if (!append(buf, blen, cap, data, len)) {
    *blen -= 9;
    return NGHTTP2_ERR_CALLBACK_FAILURE;
  }
  return 0;
}

/* Sends buf[*off..len): 1 all sent, 0 the socket is full, -1 failed. */
static int send_all(int fd, const char *buf, size_t len, size_t *off)
{
  while (*off < len) {
    ssize_t n = send(fd, buf + *off, len - *off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
    *off += (size_t)n;
  }
  return 1;
}

/* The bytes a full socket left: kept by the connection, in order. */
static int keep_rest(struct gs__h2_out *o, size_t off)
{
  size_t n = scratch.len - off;
  if (o->off == o->len)
    o->off = o->len = 0;
  if (!append(&o->buf, &o->len, &o->cap, (const uint8_t *)scratch.buf + off, n))
    return -1;
  return 0;
}

int gs__h2_out_flush(struct gs__h2_out *o, nghttp2_session *ng, int fd, bool *pending)
{
  int rc = 0;
  *pending = false;
  if (o->len > o->off) { /* what the socket refused last time goes first */
    if ((rc = send_all(fd, o->buf, o->len, &o->off)) <= 0) {
      *pending = rc == 0;
      return rc;
    }
    o->off = o->len = 0;
    rc = 0;
    if (o->cap > OUT_HIGH / 4) { /* a blocked peer's backlog: not kept idle */
      free(o->buf);
      o->buf = NULL;
      o->cap = 0;
    }
  }
  if (scratch.owner == o) /* from inside its own frames' callbacks: nghttp2 forbids it */
    return 0;
  if (scratch.owner) { /* nested: gathered into o's own buffer, written by its next flush */
    rc = nghttp2_session_send(ng) == 0 ? 0 : -1;
    *pending = o->len > o->off;
    return rc;
  }
  scratch.owner = o;
  while (rc == 0 && nghttp2_session_want_write(ng)) {
    size_t off = 0;
    scratch.len = 0;
    if (nghttp2_session_send(ng) != 0) {
      rc = -1;
      break;
    }
    if (!scratch.len)
      break; /* nothing to send now (flow control) */
    rc = o->discard ? 1 : send_all(fd, scratch.buf, scratch.len, &off);
    if (rc == 0) {
      *pending = true;
      rc = keep_rest(o, off);
      break;
    }
    rc = rc < 0 ? -1 : 0;
  }
  scratch.owner = NULL;
  scratch.len = 0;
  if (rc == 0 && o->len > o->off)
    *pending = true;
  return rc;
}

void gs__h2_out_free(struct gs__h2_out *o)
{
  free(o->buf);
  memset(o, 0, sizeof(*o));
}
