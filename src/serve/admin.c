/* admin.c: the admin API of `gpuslice serve`, on a listener of its own:
 * GET /workers lists every worker with its process and proxy state, POST
 * /workers/<w>/drain|disable|enable changes one live. Loopback-only unless a
 * bearer token guards it (docs/proxy.md). JSON by jansson; it reads the
 * proxy and the supervisor through their public functions only. */
#include "serve/serve.h"

#include <arpa/inet.h>
#include <jansson.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

struct gs_proxy_admin_server {
  struct gs_proxy *p;
  const struct gs_super *super;
  char *token; /* NULL: none asked */
  struct gs_http_server *http;
  const struct gs_scale *scale; /* NULL: no autoscaler */
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

static void one_worker(struct gs_proxy_admin_server *a, struct gs_http_conn *conn,
                       const struct gs_http_request *q, const char *rest, size_t n)
{
  static const struct { const char *name; enum gs_proxy_admin to; } acts[] = {
      {"drain", GS_PROXY_DRAINING}, {"disable", GS_PROXY_DISABLED}, {"enable", GS_PROXY_ENABLED}};
  bool post = is(q->method, q->method_len, "POST");
  const char *act;
  size_t w, al;
  if (!parse_worker(rest, n, &w, &act, &al) || w >= gs_proxy_count(a->p)) {
    gs_http_respond_error(conn, 404, "no such worker: %.*s (GET /workers lists them)",
                          (int)(n > 40 ? 40 : n), rest);
    return;
  }
  if (al == 0 && !post) {
    respond_json(conn, 200, worker_json(a, w));
    return;
  }
  for (size_t i = 0; i < GS_NITEMS(acts); i++) {
    if (!is(act, al, acts[i].name))
      continue;
    if (!post) {
      gs_http_respond_error(conn, 405, "use POST for /workers/%zu/%s", w, acts[i].name);
      return;
    }
    gs_proxy_worker_admin(a->p, w, acts[i].to);
    respond_json(conn, 200, worker_json(a, w));
    return;
  }
  gs_http_respond_error(conn, 404, "no such action: %.*s (drain, disable or enable)",
                        (int)(al > 40 ? 40 : al), act);
}

static void on_admin(void *ctx, struct gs_http_conn *conn, const struct gs_http_request *q)
{
  struct gs_proxy_admin_server *a = ctx;
  const char *qm = memchr(q->path, '?', q->path_len);
  size_t n = qm ? (size_t)(qm - q->path) : q->path_len;
  if (!token_ok(a, q)) {
    gs_http_respond(conn, 401, "application/json", "WWW-Authenticate: Bearer\r\n",
                    "{\"error\":\"a valid bearer token is required\"}", 42);
    return;
  }
  if (is(q->path, n, "/workers") && !is(q->method, q->method_len, "POST"))
    list_workers(a, conn);
  else if (is(q->path, n, "/autoscale") && a->scale) {
    char *text = gs_scale_json(a->scale);
    if (text)
      gs_http_respond(conn, 200, "application/json", NULL, text, strlen(text));
    else
      gs_http_respond_error(conn, 500, "out of memory writing JSON");
    free(text);
  }
  else if (n > 9 && memcmp(q->path, "/workers/", 9) == 0)
    one_worker(a, conn, q, q->path + 9, n - 9);
  else
    gs_http_respond_error(conn, 404, "no such endpoint: %.*s (GET /workers, POST "
                          "/workers/<w>/drain|disable|enable, GET /autoscale when autoscaling)", (int)(n > 100 ? 100 : n), q->path);
}

int gs_proxy_admin_new(struct gs_err *err, struct gs_loop *loop, struct gs_proxy *p,
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
