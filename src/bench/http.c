/* SPDX-License-Identifier: Apache-2.0 */
/* http.c: the bench layer's HTTP client pieces: target URLs, and a blocking
 * GET with a deadline for metadata and /metrics, its answer read by net's
 * response reader. Knows nothing of inference. */
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

#define GET_LIMIT (64u << 20)

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
                    struct gs_http_resp *p, char **buf, size_t *len)
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
    rc = gs_http_resp_whole(p, *buf, len, r == 0, GET_LIMIT, &used);
    if (rc == GS_HTTP_RESP_BAD)
      return gs_err_set(err, GS_E_IO, "GET %s: the answer is not valid HTTP/1.1: %s", path,
                        p->why);
    if (rc == GS_HTTP_RESP_DONE)
      return 0;
  }
}

int gs_bench_http_get(struct gs_err *err, const struct gs_bench_url *u, const char *path,
                      unsigned timeout_ms, int *status, char **body, size_t *len)
{
  uint64_t deadline = now_ms() + timeout_ms;
  struct gs_http_resp p;
  char *buf = NULL;
  size_t n = 0;
  int fd = -1, rc;
  *body = NULL;
  *len = 0;
  gs_http_resp_init(&p, false);
  if ((rc = get_connect(err, u, deadline, &fd)) == 0 &&
      (rc = get_send(err, fd, u, path, deadline)) == 0)
    rc = get_recv(err, fd, path, deadline, &p, &buf, &n);
  if (fd >= 0)
    close(fd);
  if (rc != 0) {
    free(buf);
    return rc;
  }
  memmove(buf, buf + p.head_len, (size_t)p.body_len);
  buf[p.body_len] = '\0';
  *status = p.status;
  *body = buf;
  *len = (size_t)p.body_len;
  return 0;
}
