/* SPDX-License-Identifier: Apache-2.0 */
/* admin.c: the admin API of `gpuslice serve`, on a listener of its own:
 * GET /workers lists every worker with its process and proxy state, POST
 * /workers/<w>/drain|disable|enable changes one live. Loopback-only unless a
 * bearer token guards it; every request must name this listener in Host
 * (and Origin, when a browser sends one), and a change must come as
 * application/json, so no web page can drive it (docs/proxy.md, "Threat
 * model"). JSON by jansson; it reads the proxy and the supervisor through
 * their public functions only. */
#include "serve/serve.h"

#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

struct gs_proxy_admin_server {
  struct gs_proxy *p;
  const struct gs_super *super;
  char *token; /* NULL: none asked */
  struct gs_http_server *http;
  const struct gs_scale *scale; /* NULL: no autoscaler */
  struct sockaddr_storage bound; /* the listener's address, for Host and Origin */
  unsigned port;
  bool loopback, wildcard;
  char hostname[256];            /* this machine's name ("" if unknown) */
};

static bool is_loopback(const struct sockaddr_storage *a)
{
  static const unsigned char v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (a->ss_family == AF_INET)
    return (ntohl(((const struct sockaddr_in *)a)->sin_addr.s_addr) >> 24) == 127;
  if (a->ss_family == AF_INET6) {
    const struct in6_addr *x = &((const struct sockaddr_in6 *)a)->sin6_addr;
    return IN6_IS_ADDR_LOOPBACK(x) ||
           (memcmp(x->s6_addr, v4mapped, 12) == 0 && x->s6_addr[12] == 127);
  }
  return false;
}

static bool is_wildcard(const struct sockaddr_storage *a)
{
  if (a->ss_family == AF_INET)
    return ((const struct sockaddr_in *)a)->sin_addr.s_addr == htonl(INADDR_ANY);
  return a->ss_family == AF_INET6 &&
         IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)a)->sin6_addr);
}

/* The address an IP literal names, as a sockaddr; false for a name. */
static bool ip_literal(const struct gs_hostport *hp, struct sockaddr_storage *out)
{
  memset(out, 0, sizeof(*out));
  if (hp->bracketed) {
    out->ss_family = AF_INET6;
    return inet_pton(AF_INET6, hp->host, &((struct sockaddr_in6 *)out)->sin6_addr) == 1;
  }
  out->ss_family = AF_INET;
  return inet_pton(AF_INET, hp->host, &((struct sockaddr_in *)out)->sin_addr) == 1;
}

static bool same_ip(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
  if (a->ss_family != b->ss_family)
    return false;
  if (a->ss_family == AF_INET)
    return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
           ((const struct sockaddr_in *)b)->sin_addr.s_addr;
  return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
                &((const struct sockaddr_in6 *)b)->sin6_addr, sizeof(struct in6_addr)) == 0;
}

/* True when "host[:port]" (a Host header, or an Origin's after "http://")
 * names this listener: its port (80 when absent), and for the host the
 * bound address itself; on loopback also localhost and any loopback
 * address; on every address (0.0.0.0, ::) any address, localhost and the
 * machine's name. Other names are refused: a page of a domain whose DNS
 * now points here (DNS rebinding) carries its own name. */
static bool names_us(const struct gs_proxy_admin_server *a, const char *text)
{
  struct gs_hostport hp;
  struct sockaddr_storage ip;
  if (gs_hostport_parse(NULL, NULL, text, GS_HOSTPORT_PORT_OPTIONAL | GS_HOSTPORT_HOST_REQUIRED,
                        &hp) != 0 ||
      (hp.has_port ? hp.port : 80) != a->port)
    return false;
  if (ip_literal(&hp, &ip))
    return a->wildcard || same_ip(&ip, &a->bound) || (a->loopback && is_loopback(&ip));
  if (strcasecmp(hp.host, "localhost") == 0)
    return a->wildcard || a->loopback;
  return !a->loopback && a->hostname[0] && strcasecmp(hp.host, a->hostname) == 0;
}

int gs_proxy_admin_check_bind(struct gs_err *err, int fd, const char *token)
{
  struct sockaddr_storage a;
  socklen_t al = sizeof(a);
  if (token)
    return 0;
  if (getsockname(fd, (struct sockaddr *)&a, &al) != 0 || !is_loopback(&a))
    return gs_err_set(err, GS_E_NO_PERMISSION,
                      "the admin listener is bound to a non-loopback address without a token: "
                      "bind it to 127.0.0.1 or give --admin-token-file");
  return 0;
}

/* Constant time over the token's length: no timing oracle on its bytes. */
static bool token_ok(const struct gs_proxy_admin_server *a, const struct gs_http_request *q)
{
  const struct gs_http_header *h = gs_http_header_find(q, "authorization");
  size_t tl;
  unsigned char diff = 0;
  if (!a->token)
    return true;
  tl = strlen(a->token);
  if (!h || h->value_len != 7 + tl || strncasecmp(h->value, "Bearer ", 7) != 0)
    return false;
  for (size_t i = 0; i < tl; i++)
    diff |= (unsigned char)(h->value[7 + i] ^ a->token[i]);
  return diff == 0;
}

static json_t *worker_json(const struct gs_proxy_admin_server *a, size_t w)
{
  struct gs_proxy_worker_stats st;
  struct gs_super_info info;
  json_t *o;
  if (gs_proxy_worker_stats(a->p, w, &st) != 0)
    return NULL;
  o = json_pack("{s:I, s:I, s:b, s:b, s:s, s:I, s:I, s:I}", "worker", (json_int_t)w, "port",
                (json_int_t)st.port, "in_pool", st.in_pool, "ejected", st.ejected, "admin",
                gs_proxy_admin_name(st.admin, st.inflight), "inflight", (json_int_t)st.inflight,
                "requests", (json_int_t)st.requests, "errors", (json_int_t)st.errors);
  if (o) {
    /* the ejection back-off as the main thread sees it (each thread ejects on its own) */
    json_object_set_new(o, "trial", json_boolean(st.trial));
    json_object_set_new(o, "ejections", json_integer((json_int_t)st.ejections));
    json_object_set_new(o, "backoff_ms", json_integer((json_int_t)st.backoff_ms));
    json_object_set_new(o, "trial_in_ms", json_integer((json_int_t)st.trial_in_ms));
  }
  if (o && a->super && gs_super_info(a->super, w, &info) == 0) {
    json_object_set_new(o, "state", json_string(gs_super_state_name(info.state)));
    json_object_set_new(o, "pid", json_integer(info.pid));
    json_object_set_new(o, "uuid", json_string(info.uuid ? info.uuid : ""));
    json_object_set_new(o, "profile", json_string(info.profile ? info.profile : ""));
    json_object_set_new(o, "restarts", json_integer(info.restarts));
    json_object_set_new(o, "retired", json_boolean(info.retired));
  }
  return o;
}

static void respond_json(struct gs_http_conn *conn, int status, json_t *v)
{
  char *s = v ? json_dumps(v, JSON_COMPACT) : NULL;
  json_decref(v);
  if (!s) {
    gs_http_respond_error(conn, 500, "out of memory writing JSON");
    return;
  }
  gs_http_respond(conn, status, "application/json", NULL, s, strlen(s));
  free(s);
}

static void list_workers(struct gs_proxy_admin_server *a, struct gs_http_conn *conn)
{
  json_t *arr = json_array();
  for (size_t w = 0; arr && w < gs_proxy_count(a->p); w++)
    json_array_append_new(arr, worker_json(a, w));
  respond_json(conn, 200, arr ? json_pack("{s:o}", "workers", arr) : NULL);
}

/* "<w>" or "<w>/<action>" after /workers/; false when w is not a number. */
static bool parse_worker(const char *s, size_t n, size_t *w, const char **act, size_t *actlen)
{
  size_t i = 0, v = 0;
  while (i < n && s[i] >= '0' && s[i] <= '9' && i < 9)
    v = v * 10 + (size_t)(s[i++] - '0');
  if (i == 0 || (i < n && s[i] != '/'))
    return false;
  *w = v;
  *act = i < n ? s + i + 1 : "";
  *actlen = i < n ? n - i - 1 : 0;
  return true;
}

static bool is(const char *s, size_t n, const char *lit)
{
  return n == strlen(lit) && memcmp(s, lit, n) == 0;
}

/* An error answer with extra header lines (Allow, WWW-Authenticate), as
 * gs_http_respond_error has it otherwise: {"error": "<msg>"}. */
static void refuse(struct gs_http_conn *conn, int status, const char *extra, const char *fmt, ...)
    GS_PRINTF(4, 5);
static void refuse(struct gs_http_conn *conn, int status, const char *extra, const char *fmt, ...)
{
  char msg[512], *body;
  va_list ap;
  json_t *v;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  v = json_pack("{s:s}", "error", msg);
  body = v ? json_dumps(v, JSON_COMPACT) : NULL;
  json_decref(v);
  if (body)
    gs_http_respond(conn, status, "application/json", extra, body, strlen(body));
  else
    gs_http_respond_error(conn, 500, "out of memory writing JSON");
  free(body);
}

/* The header called name when the request has exactly one; *count says how many. */
static const struct gs_http_header *only_header(const struct gs_http_request *q, const char *name,
                                                size_t *count)
{
  const struct gs_http_header *h = NULL;
  *count = 0;
  for (size_t i = 0; i < q->nheaders; i++)
    if (q->headers[i].name_len == strlen(name) &&
        strncasecmp(q->headers[i].name, name, q->headers[i].name_len) == 0 && ++*count == 1)
      h = &q->headers[i];
  return *count == 1 ? h : NULL;
}

/* Header h's value after its first skip bytes, as a string in buf; false
 * when it does not fit (no name of ours is that long). */
static bool header_text(const struct gs_http_header *h, size_t skip, char *buf, size_t size)
{
  if (h->value_len < skip || h->value_len - skip >= size)
    return false;
  memcpy(buf, h->value + skip, h->value_len - skip);
  buf[h->value_len - skip] = 0;
  return true;
}

/* Host and Origin must name this listener (names_us); true when the request
 * may go on, else it is answered here. No Host is let through for HTTP/1.0
 * only (a browser always sends one); an Origin must be http:// (this
 * listener has no TLS), and "null" is nobody's. */
static bool from_us(const struct gs_proxy_admin_server *a, struct gs_http_conn *conn,
                    const struct gs_http_request *q)
{
  char text[300];
  size_t n;
  const struct gs_http_header *host = only_header(q, "host", &n), *origin;
  if (n > 1 || (!n && q->minor_version >= 1)) {
    refuse(conn, 400, NULL, "%s Host header: HTTP/1.1 needs exactly one", n ? "more than one" : "no");
    return false;
  }
  if (host && !(header_text(host, 0, text, sizeof(text)) && names_us(a, text))) {
    refuse(conn, 403, NULL, "Host %.*s: this admin API answers only to its own address and port "
           "%u (on loopback: 127.0.0.1:%u, localhost:%u or [::1]:%u); other names are refused, as "
           "a page whose name now resolves here would send them (DNS rebinding)",
           (int)(host->value_len > 200 ? 200 : host->value_len), host->value, a->port, a->port,
           a->port, a->port);
    return false;
  }
  origin = only_header(q, "origin", &n);
  if (n > 1 || (origin && !(origin->value_len > 7 && strncasecmp(origin->value, "http://", 7) == 0 &&
                            header_text(origin, 7, text, sizeof(text)) && names_us(a, text)))) {
    refuse(conn, 403, NULL, "Origin %.*s: not this admin API's own origin; requests from web pages "
           "of other origins are refused (cross-site request forgery)",
           origin ? (int)(origin->value_len > 200 ? 200 : origin->value_len) : 12,
           origin ? origin->value : "(given twice)");
    return false;
  }
  return true;
}

/* A change must say it is JSON: an HTML form cannot, and a script of
 * another origin cannot without a CORS preflight, which this API fails
 * (OPTIONS is 405, with no Access-Control-Allow-* header). */
static bool json_body(const struct gs_http_request *q)
{
  const struct gs_http_header *h = gs_http_header_find(q, "content-type");
  const char *semi = h ? memchr(h->value, ';', h->value_len) : NULL;
  size_t n = h ? (semi ? (size_t)(semi - h->value) : h->value_len) : 0;
  while (n && (h->value[n - 1] == ' ' || h->value[n - 1] == '\t'))
    n--;
  return n == 16 && strncasecmp(h->value, "application/json", 16) == 0;
}

static bool is_get(const struct gs_http_request *q)
{
  return is(q->method, q->method_len, "GET") || is(q->method, q->method_len, "HEAD");
}

/* 405 naming what the path takes: POST for an action, GET (and HEAD) else. */
static void wrong_method(struct gs_http_conn *conn, const struct gs_http_request *q, bool post,
                         size_t n)
{
  refuse(conn, 405, post ? "Allow: POST\r\n" : "Allow: GET, HEAD\r\n",
         "%.*s is not allowed on %.*s; use %s", (int)(q->method_len > 20 ? 20 : q->method_len),
         q->method, (int)(n > 100 ? 100 : n), q->path, post ? "POST" : "GET");
}

static void autoscale_state(struct gs_proxy_admin_server *a, struct gs_http_conn *conn)
{
  char *text = gs_scale_json(a->scale);
  if (text)
    gs_http_respond(conn, 200, "application/json", NULL, text, strlen(text));
  else
    gs_http_respond_error(conn, 500, "out of memory writing JSON");
  free(text);
}

/* /workers/<rest>, n the path's length without the query. */
static void one_worker(struct gs_proxy_admin_server *a, struct gs_http_conn *conn,
                       const struct gs_http_request *q, size_t n)
{
  static const struct { const char *name; enum gs_proxy_admin to; } acts[] = {
      {"drain", GS_PROXY_DRAINING}, {"disable", GS_PROXY_DISABLED}, {"enable", GS_PROXY_ENABLED}};
  const char *rest = q->path + 9, *act;
  size_t w, al;
  if (!parse_worker(rest, n - 9, &w, &act, &al) || w >= gs_proxy_count(a->p)) {
    gs_http_respond_error(conn, 404, "no such worker: %.*s (GET /workers lists them)",
                          (int)(n - 9 > 40 ? 40 : n - 9), rest);
    return;
  }
  if (al == 0) {
    if (is_get(q))
      respond_json(conn, 200, worker_json(a, w));
    else
      wrong_method(conn, q, false, n);
    return;
  }
  for (size_t i = 0; i < GS_NITEMS(acts); i++) {
    if (!is(act, al, acts[i].name))
      continue;
    if (!is(q->method, q->method_len, "POST")) {
      wrong_method(conn, q, true, n);
    } else if (!json_body(q)) {
      gs_http_respond_error(conn, 415, "POST /workers/%zu/%s needs Content-Type: "
                            "application/json (the body may be empty)", w, acts[i].name);
    } else {
      char ws[24];
      struct gs_log_field f[] = {{"worker", ws}, {"action", acts[i].name}};
      snprintf(ws, sizeof(ws), "%zu", w);
      gs_proxy_worker_admin(a->p, w, acts[i].to);
      gs_log(GS_LOG_NOTICE, "serve", f, GS_NITEMS(f), "admin: worker %zu %s (POST /workers/%zu/%s)",
             w, acts[i].name, w, acts[i].name);
      respond_json(conn, 200, worker_json(a, w));
    }
    return;
  }
  gs_http_respond_error(conn, 404, "no such action: %.*s (drain, disable or enable)",
                        (int)(al > 40 ? 40 : al), act);
}

/* Host and Origin first, so a forged request learns nothing, not even
 * whether a token is needed; then the token; then the routes. */
static void on_admin(void *ctx, struct gs_http_conn *conn, const struct gs_http_request *q)
{
  struct gs_proxy_admin_server *a = ctx;
  const char *qm = memchr(q->path, '?', q->path_len);
  size_t n = qm ? (size_t)(qm - q->path) : q->path_len;
  if (!from_us(a, conn, q))
    return;
  if (!token_ok(a, q)) {
    refuse(conn, 401, "WWW-Authenticate: Bearer\r\n", "a valid bearer token is required");
    return;
  }
  if (is(q->path, n, "/workers") || (is(q->path, n, "/autoscale") && a->scale)) {
    if (!is_get(q))
      wrong_method(conn, q, false, n);
    else if (is(q->path, n, "/workers"))
      list_workers(a, conn);
    else
      autoscale_state(a, conn);
  } else if (n > 9 && memcmp(q->path, "/workers/", 9) == 0) {
    one_worker(a, conn, q, n);
  } else {
    gs_http_respond_error(conn, 404, "no such endpoint: %.*s (GET /workers, POST "
                          "/workers/<w>/drain|disable|enable, GET /autoscale when autoscaling)",
                          (int)(n > 100 ? 100 : n), q->path);
  }
}

int gs_proxy_admin_new(struct gs_err *err, struct gs_net_loop *loop, struct gs_proxy *p,
                       const struct gs_super *super, const char *token, int fd,
                       struct gs_proxy_admin_server **out)
{
  struct gs_proxy_admin_server *a = calloc(1, sizeof(*a));
  struct gs_http_limits l;
  int rc;
  *out = NULL;
  if (!a || (token && !(a->token = strdup(token)))) {
    free(a);
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory creating the admin API");
  }
  a->p = p;
  a->super = super;
  if (getsockname(fd, (struct sockaddr *)&a->bound, &(socklen_t){sizeof(a->bound)}) != 0) {
    free(a->token);
    free(a);
    return gs_err_set(err, GS_E_IO, "admin listener: getsockname: %s", strerror(errno));
  }
  a->port = ntohs(a->bound.ss_family == AF_INET6
                      ? ((struct sockaddr_in6 *)&a->bound)->sin6_port
                      : ((struct sockaddr_in *)&a->bound)->sin_port);
  a->loopback = is_loopback(&a->bound);
  a->wildcard = is_wildcard(&a->bound);
  if (gethostname(a->hostname, sizeof(a->hostname)) != 0)
    a->hostname[0] = 0;
  a->hostname[sizeof(a->hostname) - 1] = 0;
  gs_http_limits_default(&l);
  l.max_body = 4096;
  l.max_conns = 64;
  if ((rc = gs_proxy_admin_check_bind(err, fd, token)) != 0 ||
      (rc = gs_http_server_new(err, loop, &l, on_admin, a, &a->http)) != 0 ||
      (rc = gs_http_server_listen_fd(err, a->http, fd)) != 0) {
    gs_proxy_admin_free(a);
    return rc;
  }
  *out = a;
  return 0;
}

void gs_proxy_admin_free(struct gs_proxy_admin_server *a)
{
  if (!a)
    return;
  gs_http_server_free(a->http);
  free(a->token);
  free(a);
}

void gs_proxy_admin_set_scale(struct gs_proxy_admin_server *a, const struct gs_scale *s)
{
  a->scale = s;
}
