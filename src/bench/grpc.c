/* grpc.c: `gpuslice bench -i grpc`: KServe v2 ModelInfer over h2c. Each of
 * run.c's threads holds ceil(slots / streams) nghttp2 client sessions on its
 * own loop, each keeping up to --streams calls outstanding (closed loop:
 * a finished call is replaced at once on the same session). A call counts as
 * a success only with grpc-status 0; a session whose oldest call passes
 * --request-timeout, or that fails, fails its calls and is reopened. */
#include "bench/internal.h"
#include "net/net.h"

#include "inference.pb-c.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nghttp2/nghttp2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define RETRY_NS 10000000u /* a failed session is reopened this long after */
#define SWEEP_US 20000

struct gsess;

struct gcall {
  struct gsess *s;
  bool busy;
  int32_t sid;
  const uint8_t *req;
  size_t req_len, off;
  int http_status, grpc_status; /* -1: not seen */
  uint64_t intended_ns, start_ns, sent_ns, first_ns;
};

struct gsess {
  struct gs__bench_grpc *g;
  int fd;
  bool connecting;
  nghttp2_session *ng;
  uint64_t down_ns; /* closed since; 0 while open */
  unsigned ncalls;
  struct gcall *calls;
};

struct gs__bench_grpc {
  struct worker *w;
  struct gs_net_loop *loop;
  const struct gs_bench_config *cfg;
  const struct sockaddr_storage *addr;
  unsigned addrlen;
  char authority[300];
  size_t next_req;
  unsigned nsess;
  struct gsess *sess;
};

static uint64_t now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int gs_bench_grpc_request(struct gs_err *err, const struct gs_bench_model *m,
                          const struct gs_bench_sample *s, char **out, size_t *len)
{
  Inference__ModelInferRequest q = INFERENCE__MODEL_INFER_REQUEST__INIT;
  Inference__ModelInferRequest__InferInputTensor t[GS_BENCH_MAX_INPUTS], *tp[GS_BENCH_MAX_INPUTS];
  ProtobufCBinaryData raw[GS_BENCH_MAX_INPUTS];
  int64_t shapes[GS_BENCH_MAX_INPUTS][GS_BENCH_MAX_DIMS];
  size_t n;
  q.model_name = (char *)m->name;
  for (unsigned i = 0; i < m->ninputs; i++) {
    const struct gs_bench_tensor *x = &m->inputs[i];
    t[i] = (Inference__ModelInferRequest__InferInputTensor)
        INFERENCE__MODEL_INFER_REQUEST__INFER_INPUT_TENSOR__INIT;
    t[i].name = (char *)x->name;
    t[i].datatype = (char *)x->datatype;
    memcpy(shapes[i], x->shape, sizeof(shapes[i]));
    t[i].n_shape = x->ndims, t[i].shape = shapes[i];
    tp[i] = &t[i];
    raw[i].data = s->data[i], raw[i].len = s->len[i];
  }
  q.n_inputs = q.n_raw_input_contents = m->ninputs;
  q.inputs = tp, q.raw_input_contents = raw;
  n = inference__model_infer_request__get_packed_size(&q);
  if (n > 0xffffffffu || !(*out = malloc(n + 5)))
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory for a %zu-byte gRPC request", n);
  (*out)[0] = 0; /* not compressed; then the length, big-endian */
  for (int i = 0; i < 4; i++)
    (*out)[1 + i] = (char)(n >> (24 - 8 * i));
  inference__model_infer_request__pack(&q, (uint8_t *)*out + 5);
  *len = n + 5;
  return 0;
}

static void sess_close(struct gsess *s, int error);
static void sess_flush(struct gsess *s);
static void call_start(struct gcall *c);

static void call_end(struct gcall *c, int error)
{
  struct gs__bench_grpc *g = c->s->g;
  uint64_t t = now_ns();
  c->busy = false;
  if (error < 0 && c->http_status < 0)
    error = GS_BENCH_ERR_CLOSED;
  else if (error < 0 && c->http_status != 200)
    error = c->http_status >= 400 && c->http_status < 500 ? GS_BENCH_ERR_HTTP_4XX
                                                           : GS_BENCH_ERR_HTTP_5XX;
  else if (error < 0 && c->grpc_status < 0)
    error = GS_BENCH_ERR_CLOSED;
  else if (error < 0 && c->grpc_status > 0)
    error = c->grpc_status == 4    ? GS_BENCH_ERR_GRPC_DEADLINE
            : c->grpc_status == 8  ? GS_BENCH_ERR_GRPC_EXHAUSTED
            : c->grpc_status == 14 ? GS_BENCH_ERR_GRPC_UNAVAILABLE
                                   : GS_BENCH_ERR_GRPC_OTHER;
  if (error >= 0)
    gs__bench_count_error(g->w, (enum gs_bench_error)error);
  else
    gs__bench_count_ok(g->w, c->intended_ns, c->start_ns, c->sent_ns, c->first_ns, t);
}

static ssize_t on_send(nghttp2_session *ng, const uint8_t *data, size_t len, int flags, void *ud)
{
  struct gsess *s = ud;
  ssize_t n = send(s->fd, data, len, MSG_NOSIGNAL);
  (void)ng;
  (void)flags;
  if (n < 0 && (errno == EAGAIN || errno == EINTR))
    return NGHTTP2_ERR_WOULDBLOCK;
  return n < 0 ? NGHTTP2_ERR_CALLBACK_FAILURE : n;
}

static int on_header(nghttp2_session *ng, const nghttp2_frame *f, const uint8_t *name,
                     size_t nlen, const uint8_t *value, size_t vlen, uint8_t flags, void *ud)
{
  struct gcall *c = nghttp2_session_get_stream_user_data(ng, f->hd.stream_id);
  char num[16];
  (void)flags;
  (void)ud;
  if (!c || vlen >= sizeof(num))
    return 0;
  memcpy(num, value, vlen), num[vlen] = '\0';
  if (nlen == 7 && memcmp(name, ":status", 7) == 0)
    c->http_status = atoi(num);
  else if (nlen == 11 && memcmp(name, "grpc-status", 11) == 0)
    c->grpc_status = atoi(num);
  return 0;
}

static int on_begin(nghttp2_session *ng, const nghttp2_frame *f, void *ud)
{
  struct gcall *c = nghttp2_session_get_stream_user_data(ng, f->hd.stream_id);
  (void)ud;
  if (c && !c->first_ns)
    c->first_ns = now_ns();
  return 0;
}

static int on_close(nghttp2_session *ng, int32_t sid, uint32_t code, void *ud)
{
  struct gcall *c = nghttp2_session_get_stream_user_data(ng, sid);
  (void)ud;
  if (!c || !c->busy || c->sid != sid)
    return 0;
  call_end(c, code ? GS_BENCH_ERR_CLOSED : -1);
  call_start(c); /* closed loop: the next call on the same session */
  return 0;
}

static ssize_t on_read(nghttp2_session *ng, int32_t sid, uint8_t *buf, size_t len,
                       uint32_t *flags, nghttp2_data_source *src, void *ud)
{
  struct gcall *c = src->ptr;
  size_t n = c->req_len - c->off < len ? c->req_len - c->off : len;
  (void)ng;
  (void)sid;
  (void)ud;
  memcpy(buf, c->req + c->off, n);
  c->off += n;
  if (c->off == c->req_len) {
    *flags |= NGHTTP2_DATA_FLAG_EOF;
    c->sent_ns = now_ns();
  }
  return (ssize_t)n;
}

#define HDR(n, v) {(uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, strlen(v), NGHTTP2_NV_FLAG_NONE}

static void call_start(struct gcall *c)
{
  struct gs__bench_grpc *g = c->s->g;
  const struct gs_bench_config *cfg = g->cfg;
  size_t k = cfg->nrequests ? g->next_req++ % cfg->nrequests : 0;
  nghttp2_nv hdr[] = {HDR(":method", "POST"), HDR(":scheme", "http"),
                      HDR(":path", "/inference.GRPCInferenceService/ModelInfer"),
                      HDR(":authority", g->authority), HDR("content-type", "application/grpc"),
                      HDR("te", "trailers")};
  nghttp2_data_provider dp = {.source.ptr = c, .read_callback = on_read};
  c->req = (const uint8_t *)(cfg->nrequests ? cfg->requests[k] : cfg->request);
  c->req_len = cfg->nrequests ? cfg->request_lens[k] : cfg->request_len;
  c->off = 0;
  c->http_status = c->grpc_status = -1;
  c->intended_ns = c->start_ns = now_ns();
  c->sent_ns = c->first_ns = 0;
  c->busy = true;
  c->sid = nghttp2_submit_request(c->s->ng, NULL, hdr, GS_NITEMS(hdr), &dp, c);
  if (c->sid < 0)
    c->busy = false, gs__bench_count_error(g->w, GS_BENCH_ERR_CLOSED);
}

static void sess_io(struct gs_net_loop *loop, int fd, void *data, unsigned mask)
{
  struct gsess *s = data;
  uint8_t buf[16384];
  (void)loop;
  (void)fd;
  if (s->connecting) {
    int soerr = 0;
    socklen_t sl = sizeof(soerr);
    getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
    if (soerr) {
      sess_close(s, GS_BENCH_ERR_CONNECT);
      return;
    }
    s->connecting = false;
    for (unsigned i = 0; i < s->ncalls; i++)
      call_start(&s->calls[i]);
  }
  if (mask & GS_NET_READABLE) {
    ssize_t r = recv(s->fd, buf, sizeof(buf), 0);
    if (r < 0 && (errno == EAGAIN || errno == EINTR))
      r = -2;
    if (r == 0 || r == -1) {
      sess_close(s, GS_BENCH_ERR_CLOSED);
      return;
    }
    if (r > 0 && nghttp2_session_mem_recv(s->ng, buf, (size_t)r) < 0) {
      sess_close(s, GS_BENCH_ERR_MALFORMED);
      return;
    }
  }
  sess_flush(s);
}

/* Writes what nghttp2 has; asks for writability only while the socket is full. */
static void sess_flush(struct gsess *s)
{
  struct gs_net_loop *loop = s->g->loop;
  if (s->fd < 0)
    return;
  if (nghttp2_session_send(s->ng) != 0) {
    sess_close(s, GS_BENCH_ERR_CLOSED);
    return;
  }
  if (nghttp2_session_want_write(s->ng))
    gs_net_loop_add(NULL, loop, s->fd, GS_NET_READABLE | GS_NET_WRITABLE, sess_io, s);
  else if (gs_net_loop_mask(loop, s->fd) & GS_NET_WRITABLE)
    gs_net_loop_del(loop, s->fd, GS_NET_WRITABLE);
}

/* Fails the calls under way (all of them when connecting) with error, each
 * counted once, and closes. */
static void sess_close(struct gsess *s, int error)
{
  for (unsigned i = 0; i < s->ncalls; i++)
    if (s->calls[i].busy || s->connecting || error == GS_BENCH_ERR_CONNECT)
      s->calls[i].busy = false, gs__bench_count_error(s->g->w, (enum gs_bench_error)error);
  if (s->ng)
    nghttp2_session_del(s->ng);
  s->ng = NULL;
  if (s->fd >= 0)
    gs_net_loop_close_fd(s->g->loop, s->fd);
  s->fd = -1;
  s->connecting = false;
  s->down_ns = now_ns();
}

static int sess_open(struct gsess *s)
{
  struct gs__bench_grpc *g = s->g;
  nghttp2_session_callbacks *cb;
  nghttp2_settings_entry set[] = {{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1 << 24}};
  int fd = socket(g->addr->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1;
  if (fd < 0)
    return -1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if ((connect(fd, (const struct sockaddr *)g->addr, g->addrlen) != 0 && errno != EINPROGRESS) ||
      gs_net_loop_add(NULL, g->loop, fd, GS_NET_READABLE | GS_NET_WRITABLE, sess_io, s) != 0) {
    close(fd);
    return -1;
  }
  s->fd = fd, s->connecting = true, s->down_ns = 0;
  for (unsigned k = 0; k < s->ncalls; k++)
    s->calls[k].start_ns = now_ns(); /* the connect's time counts against the timeout */
  if (nghttp2_session_callbacks_new(&cb) != 0)
    return -1;
  nghttp2_session_callbacks_set_send_callback(cb, on_send);
  nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
  nghttp2_session_callbacks_set_on_begin_headers_callback(cb, on_begin);
  nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_close);
  if (nghttp2_session_client_new(&s->ng, cb, s) != 0)
    s->ng = NULL;
  nghttp2_session_callbacks_del(cb);
  if (!s->ng || nghttp2_submit_settings(s->ng, NGHTTP2_FLAG_NONE, set, GS_NITEMS(set)) != 0 ||
      nghttp2_session_set_local_window_size(s->ng, NGHTTP2_FLAG_NONE, 0, 1 << 26) != 0)
    return -1;
  return 0;
}

static int64_t on_sweep(struct gs_net_loop *loop, uint64_t id, void *data)
{
  struct gs__bench_grpc *g = data;
  uint64_t now = now_ns(), limit = (uint64_t)g->cfg->request_timeout_ms * 1000000u;
  (void)loop;
  (void)id;
  for (unsigned i = 0; i < g->nsess; i++) {
    struct gsess *s = &g->sess[i];
    bool late = false;
    for (unsigned k = 0; k < s->ncalls; k++)
      late = late || ((s->calls[k].busy || s->connecting) && now - s->calls[k].start_ns > limit);
    if (s->fd >= 0 && late)
      sess_close(s, GS_BENCH_ERR_TIMEOUT);
    else if (s->fd < 0 && now - s->down_ns > RETRY_NS && sess_open(s) != 0)
      sess_close(s, GS_BENCH_ERR_CONNECT);
  }
  return SWEEP_US;
}

int gs__bench_grpc_start(struct gs_err *err, struct worker *w, struct gs_net_loop *loop,
                         const struct gs_bench_config *cfg, const struct sockaddr_storage *addr,
                         unsigned addrlen, unsigned slots, struct gs__bench_grpc **out)
{
  struct gs__bench_grpc *g = calloc(1, sizeof(*g));
  unsigned per = cfg->streams ? cfg->streams : 32;
  *out = g;
  if (!g)
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory");
  *g = (struct gs__bench_grpc){.w = w, .loop = loop, .cfg = cfg, .addr = addr, .addrlen = addrlen,
                               .nsess = (slots + per - 1) / per};
  snprintf(g->authority, sizeof(g->authority), "%s:%s", cfg->url.host, cfg->url.port);
  if (!(g->sess = calloc(g->nsess ? g->nsess : 1, sizeof(*g->sess))))
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory");
  for (unsigned i = 0; i < g->nsess; i++) {
    struct gsess *s = &g->sess[i];
    s->g = g, s->fd = -1;
    s->ncalls = slots / g->nsess + (i < slots % g->nsess);
    if (!(s->calls = calloc(s->ncalls, sizeof(*s->calls))))
      return gs_err_set(err, GS_E_NO_MEMORY, "out of memory");
    for (unsigned k = 0; k < s->ncalls; k++)
      s->calls[k].s = s, s->calls[k].start_ns = now_ns();
    if (sess_open(s) != 0)
      sess_close(s, GS_BENCH_ERR_CONNECT);
  }
  if (!gs_net_loop_timer_add(loop, SWEEP_US, on_sweep, g))
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory");
  return 0;
}

void gs__bench_grpc_free(struct gs__bench_grpc *g)
{
  if (!g)
    return;
  for (unsigned i = 0; g->sess && i < g->nsess; i++) {
    if (g->sess[i].ng)
      nghttp2_session_del(g->sess[i].ng);
    if (g->sess[i].fd >= 0)
      close(g->sess[i].fd);
    free(g->sess[i].calls);
  }
  free(g->sess);
  free(g);
}
