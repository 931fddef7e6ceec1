/* http.c: the bench layer's HTTP client pieces: target URLs, an incremental
 * HTTP/1.1 response reader for keep-alive connections (picohttpparser heads,
 * Content-Length, chunked or until-close bodies), and a blocking GET with a
 * deadline for metadata and /metrics. Knows nothing of inference. */
#include "bench/internal.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_HEADERS 64
#define GET_LIMIT (64u << 20)

enum { ST_HEAD, ST_BODY };

int gs_bench_url_parse(struct gs_err *err, const char *option, const char *text,
                       struct gs_bench_url *out)
{
  const char *h = text, *slash;
  struct gs_hostport hp;
  char hostport[512];
  size_t hl;
  memset(out, 0, sizeof(*out));
  if (strncmp(h, "https://", 8) == 0)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT,
                      "%s %s: https is not supported (use http:// or a TLS-terminating proxy)",
                      option, text);
  if (strncmp(h, "http://", 7) == 0)
    h += 7;
  slash = strchr(h, '/');
  hl = slash ? (size_t)(slash - h) : strlen(h);
  if (hl >= sizeof(hostport))
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "%s %.60s...: the host is too long", option,
                      text);
  memcpy(hostport, h, hl);
  hostport[hl] = 0;
  /* The reader's usage error, as the URL reader's code. */
  if (gs_hostport_parse(err, option, hostport,
                        GS_HOSTPORT_PORT_OPTIONAL | GS_HOSTPORT_HOST_REQUIRED, &hp) != 0)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "%s", err ? err->msg : "");
  snprintf(out->host, sizeof(out->host), "%s", hp.host);
  snprintf(out->port, sizeof(out->port), "%u", hp.has_port ? hp.port : 80);
  if (slash) {
    size_t n = strlen(slash);
    while (n && slash[n - 1] == '/')
      n--;
    if (n >= sizeof(out->prefix))
      return gs_err_set(err, GS_E_INVALID_ARGUMENT, "%s %s: path too long", option, text);
    memcpy(out->prefix, slash, n);
  }
  return 0;
}

int gs__bench_resolve(struct gs_err *err, const struct gs_bench_url *u,
                      struct sockaddr_storage *addr, unsigned *addrlen)
{
  struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
  int rc = getaddrinfo(u->host, u->port, &hints, &ai);
  if (rc != 0 || !ai)
    return gs_err_set(err, GS_E_NOT_FOUND, "cannot resolve %s:%s: %s", u->host, u->port,
                      gai_strerror(rc));
  memcpy(addr, ai->ai_addr, ai->ai_addrlen);
  *addrlen = (unsigned)ai->ai_addrlen;
  freeaddrinfo(ai);
  return 0;
}

/* ---- responses ---- */

void gs_bench_http_reset(struct gs_bench_http *p)
{
  memset(p, 0, sizeof(*p));
}

static bool header_is(const struct phr_header *h, const char *name)
{
  return h->name_len == strlen(name) && strncasecmp(h->name, name, h->name_len) == 0;
}

static bool value_has(const struct phr_header *h, const char *token)
{
  size_t n = strlen(token);
  for (size_t i = 0; i + n <= h->value_len; i++)
    if (strncasecmp(h->value + i, token, n) == 0)
      return true;
  return false;
}

/* Strict Content-Length: digits only, no overflow. */
static int content_length(const struct phr_header *h, size_t *out)
{
  size_t v = 0;
  if (!h->value_len)
    return -1;
  for (size_t i = 0; i < h->value_len; i++) {
    if (h->value[i] < '0' || h->value[i] > '9' || v > (SIZE_MAX - 9) / 10)
      return -1;
    v = v * 10 + (size_t)(h->value[i] - '0');
  }
  *out = v;
  return 0;
}

/* Parses the head; returns 1 done, 0 more needed, <0 malformed. */
static int parse_head(struct gs_bench_http *p, char *buf, size_t *len)
{
  struct phr_header hs[MAX_HEADERS];
  size_t nh = MAX_HEADERS, msg_len;
  const char *msg;
  int minor, status, n;
  bool has_len = false;
  for (;;) {
    nh = MAX_HEADERS;
    n = phr_parse_response(buf, *len, &minor, &status, &msg, &msg_len, hs, &nh, 0);
    if (n == -2)
      return 0;
    if (n < 0 || status < 100 || status > 999)
      return GS_E_INVALID_ARGUMENT;
    if (status >= 200 || status == 101)
      break;
    memmove(buf, buf + n, *len - (size_t)n); /* 1xx interim answer: skip it */
    *len -= (size_t)n;
  }
  p->status = status;
  p->head_len = (size_t)n;
  p->keep_alive = minor >= 1;
  for (size_t i = 0; i < nh; i++) {
    if (header_is(&hs[i], "content-length")) {
      size_t v;
      if (content_length(&hs[i], &v) != 0 || (has_len && v != p->content_len))
        return GS_E_INVALID_ARGUMENT;
      p->content_len = v;
      has_len = true;
    } else if (header_is(&hs[i], "transfer-encoding")) {
      p->chunked = value_has(&hs[i], "chunked");
    } else if (header_is(&hs[i], "connection")) {
      if (value_has(&hs[i], "close"))
        p->keep_alive = false;
      else if (value_has(&hs[i], "keep-alive"))
        p->keep_alive = true;
    }
  }
  if (status == 204 || status == 304) {
    p->content_len = 0, p->chunked = false;
    has_len = true;
  }
  if (p->chunked) {
    struct phr_chunked_decoder *d = (struct phr_chunked_decoder *)p->decoder;
    d->consume_trailer = 1;
    p->chunk_from = p->head_len;
  } else if (!has_len) {
    p->until_close = true;
    p->keep_alive = false;
  }
  p->state = ST_BODY;
  return 1;
}

static int feed_chunked(struct gs_bench_http *p, char *buf, size_t *len, size_t *used)
{
  size_t sz = *len - p->chunk_from;
  ssize_t r = phr_decode_chunked((struct phr_chunked_decoder *)p->decoder, buf + p->chunk_from, &sz);
  if (r == -1)
    return GS_E_INVALID_ARGUMENT;
  p->chunk_from += sz;
  p->body_len = p->chunk_from - p->head_len;
  if (r == -2) {
    *len = p->chunk_from;
    return 0;
  }
  *used = p->chunk_from;
  *len = p->chunk_from + (size_t)r;
  return 1;
}

int gs_bench_http_feed(struct gs_bench_http *p, char *buf, size_t *len, bool eof, size_t *used)
{
  int rc;
  if (p->state == ST_HEAD && (rc = parse_head(p, buf, len)) <= 0)
    return rc;
  if (p->chunked)
    return feed_chunked(p, buf, len, used);
  if (p->until_close) {
    p->body_len = *len - p->head_len;
    *used = *len;
    return eof ? 1 : 0;
  }
  if (*len - p->head_len < p->content_len)
    return 0;
  p->body_len = p->content_len;
  *used = p->head_len + p->content_len;
  return 1;
}

/* ---- a blocking GET ---- */

static uint64_t now_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int wait_fd(int fd, short ev, uint64_t deadline)
{
  struct pollfd pfd = {.fd = fd, .events = ev};
  uint64_t t = now_ms();
  int n;
  if (t >= deadline)
    return 0;
  do
    n = poll(&pfd, 1, (int)(deadline - t));
  while (n < 0 && errno == EINTR);
  return n;
}

static int get_connect(struct gs_err *err, const struct gs_bench_url *u, uint64_t deadline, int *fd)
{
  struct sockaddr_storage sa;
  unsigned salen;
  int rc, soerr = 0;
  socklen_t sl = sizeof(soerr);
  if ((rc = gs__bench_resolve(err, u, &sa, &salen)) != 0)
    return rc;
  if ((*fd = socket(sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) < 0)
    return gs_err_set(err, GS_E_IO, "socket: %s", strerror(errno));
  if (connect(*fd, (struct sockaddr *)&sa, salen) != 0 && errno != EINPROGRESS)
    soerr = errno;
  else if (wait_fd(*fd, POLLOUT, deadline) <= 0)
    soerr = ETIMEDOUT;
  else
    getsockopt(*fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
  if (soerr)
    return gs_err_set(err, GS_E_IO, "cannot connect to %s:%s: %s", u->host, u->port,
                      strerror(soerr));
  return 0;
}

static int get_send(struct gs_err *err, int fd, const struct gs_bench_url *u, const char *path,
                    uint64_t deadline)
{
  char req[2048];
  int n = snprintf(req, sizeof(req), "GET %s%s HTTP/1.1\r\nHost: %s:%s\r\nConnection: close\r\n\r\n",
                   u->prefix, path, u->host, u->port);
  size_t off = 0;
  if (n < 0 || (size_t)n >= sizeof(req))
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "request path too long: %s", path);
  while (off < (size_t)n) {
    ssize_t w = send(fd, req + off, (size_t)n - off, MSG_NOSIGNAL);
    if (w > 0)
      off += (size_t)w;
    else if (w < 0 && errno != EAGAIN && errno != EINTR)
      return gs_err_set(err, GS_E_IO, "GET %s: %s", path, strerror(errno));
    else if (wait_fd(fd, POLLOUT, deadline) <= 0)
      return gs_err_set(err, GS_E_IO, "GET %s: timed out sending", path);
  }
  return 0;
}

static int get_recv(struct gs_err *err, int fd, const char *path, uint64_t deadline,
                    struct gs_bench_http *p, char **buf, size_t *len)
{
  size_t cap = 0, used;
  for (;;) {
    ssize_t r;
    int rc;
    if (cap - *len < 4096) {
      char *nb = cap >= GET_LIMIT ? NULL : realloc(*buf, cap ? cap * 2 : 16384);
      if (!nb)
        return gs_err_set(err, GS_E_NO_MEMORY, "GET %s: answer larger than %u bytes", path,
                          GET_LIMIT);
      *buf = nb, cap = cap ? cap * 2 : 16384;
    }
    r = recv(fd, *buf + *len, cap - *len - 1, 0);
    if (r < 0 && (errno == EAGAIN || errno == EINTR)) {
      if (wait_fd(fd, POLLIN, deadline) <= 0)
        return gs_err_set(err, GS_E_IO, "GET %s: no complete answer in time", path);
      continue;
    }
    if (r < 0)
      return gs_err_set(err, GS_E_IO, "GET %s: %s", path, strerror(errno));
    *len += (size_t)r;
    rc = gs_bench_http_feed(p, *buf, len, r == 0, &used);
    if (rc < 0)
      return gs_err_set(err, GS_E_IO, "GET %s: the answer is not valid HTTP", path);
    if (rc == 1)
      return 0;
    if (r == 0)
      return gs_err_set(err, GS_E_IO, "GET %s: the server closed the connection mid-answer", path);
  }
}

int gs_bench_http_get(struct gs_err *err, const struct gs_bench_url *u, const char *path,
                      unsigned timeout_ms, int *status, char **body, size_t *len)
{
  uint64_t deadline = now_ms() + timeout_ms;
  struct gs_bench_http p;
  char *buf = NULL;
  size_t n = 0;
  int fd = -1, rc;
  *body = NULL;
  *len = 0;
  gs_bench_http_reset(&p);
  if ((rc = get_connect(err, u, deadline, &fd)) == 0 &&
      (rc = get_send(err, fd, u, path, deadline)) == 0)
    rc = get_recv(err, fd, path, deadline, &p, &buf, &n);
  if (fd >= 0)
    close(fd);
  if (rc != 0) {
    free(buf);
    return rc;
  }
  memmove(buf, buf + p.head_len, p.body_len);
  buf[p.body_len] = '\0';
  *status = p.status;
  *body = buf;
  *len = p.body_len;
  return 0;
}
