/* SPDX-License-Identifier: Apache-2.0 */
/* grpc_stream.c: the load balancer's gRPC streams (ModelStreamInfer, and
 * any method it does not know as unary): each client stream is pinned to
 * one worker, picked by the pool's policy when its headers arrive and
 * counted in flight there until it ends, and carried message by message
 * both ways over that worker's shared HTTP/2 connection (net's client,
 * its body streamed). The worker's status ends the client's stream; the
 * worker's death (its connection lost, its stream reset) ends it with
 * UNAVAILABLE. No retry: a stream's requests may have been answered
 * already. Backpressure both ways: the worker's answers follow the
 * client's reading, the client's requests the worker's taking (past
 * PACE_HIGH bytes the worker's window has not let go, the client's stream
 * gets no more window until they are down to PACE_LOW). Knows the pool
 * only through internal.h. */
#include "serve/grpc_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PACE_HIGH (1u << 20) /* the worker's stream window */
#define PACE_LOW (256u << 10)

struct gstream {
  struct gs__grpc_upcall cb; /* first: what its worker connection tells it */
  struct gs_proxy_grpc *g;
  struct gstream *prev, *next; /* the proxy's streams under way */
  struct gs_h2_call *client;
  size_t w;
  unsigned trial;
  uint64_t start_us;
  struct upsess *up;
  int32_t sid;     /* 0: no worker stream (never opened, or closed) */
  uint8_t *in;     /* the worker's answer bytes not yet a whole message */
  size_t in_len, in_cap;
  uint64_t deadline; /* timer: the call's grpc-timeout, the whole stream ends then */
  uint64_t idle;     /* timer: the worker timeout, while it owes an answer the client may take */
  size_t owed;       /* requests sent to the worker minus answers from it */
  size_t held;   /* the worker's bytes not yet given back to its stream window */
  size_t queued; /* forwarded bytes the client's flow control has not let go yet */
  size_t unsent; /* forwarded request bytes the worker's window has not let go yet */
  bool holding;  /* the client's requests held back: unsent passed PACE_HIGH */
  bool have_status;
  int status;
  char message[256];
};

/* Answers the client, lets the worker go and frees s. */
static void finish(struct gstream *s, enum gs__proxy_outcome o, int status, const char *fmt, ...)
    GS_PRINTF(4, 5);
static void finish(struct gstream *s, enum gs__proxy_outcome o, int status, const char *fmt, ...)
{
  char text[300] = "";
  va_list ap;
  if (fmt) {
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
  }
  if (s->sid > 0 && s->up)
    gs_h2_client_cancel(s->up->h2, s->sid);
  if (s->deadline)
    gs_net_loop_timer_del(s->g->loop, s->deadline);
  if (s->idle)
    gs_net_loop_timer_del(s->g->loop, s->idle);
  if (status != ST_OK && !s->have_status)
    gs__proxy_error(s->g->p);
  gs__proxy_release(s->g->p, s->w, o, gs_net_loop_now_us() - s->start_us, s->trial);
  s->g->nstreams--;
  if (s->prev)
    s->prev->next = s->next;
  else
    s->g->streams = s->next;
  if (s->next)
    s->next->prev = s->prev;
  gs_h2_call_on_sent(s->client, NULL); /* what is still queued goes out after s */
  gs_h2_call_reply(s->client, status, NULL, 0, text);
  free(s->in);
  free(s);
}

/* ---- timeouts ---- */

static int64_t on_deadline(struct gs_net_loop *loop, uint64_t id, void *data)
{
  struct gstream *s = data;
  (void)loop;
  (void)id;
  s->deadline = 0;
  finish(s, GS__PROXY_ABANDONED, ST_DEADLINE_EXCEEDED,
         "Deadline Exceeded: the stream's grpc-timeout passed");
  return GS_NET_TIMER_DONE;
}

static int64_t on_idle(struct gs_net_loop *loop, uint64_t id, void *data)
{
  struct gstream *s = data;
  (void)loop;
  (void)id;
  s->idle = 0;
  finish(s, GS__PROXY_WORKER_FAILED, ST_DEADLINE_EXCEEDED, "worker %zu owed an answer on the "
         "stream and sent none within the worker timeout", s->w);
  return GS_NET_TIMER_DONE;
}

/* The worker timeout, as an idle timeout between messages: it runs while
 * the worker owes an answer and nothing waits for the client (a client
 * that does not read holds the worker's answers back: not the worker's
 * fault), from the last request, answer or client read. */
static void idle_rearm(struct gstream *s)
{
  if (s->idle)
    gs_net_loop_timer_del(s->g->loop, s->idle);
  s->idle = 0;
  if (s->owed && !s->queued)
    s->idle = gs_net_loop_timer_add(s->g->loop, gs__proxy_config(s->g->p)->worker_timeout_ms *
                                                    1000ull, on_idle, s);
}

/* ---- the worker's side ---- */

/* Backpressure: of the worker's bytes, those still queued for the client
 * keep their window; the rest (sent on, or part of a message not yet
 * whole) is given back. So a client that reads nothing holds about one
 * stream window (the worker connection's, 1 MiB) here, and the worker's
 * answers then wait in the worker. */
static void give_back(struct gstream *s)
{
  if (s->held > s->queued && s->sid > 0) {
    gs_h2_client_consume(s->up->h2, s->sid, s->held - s->queued);
    s->held = s->queued;
  }
}

/* The client's flow control let n forwarded bytes go. */
static void client_sent(void *user, size_t n)
{
  struct gstream *s = user;
  s->queued -= n < s->queued ? n : s->queued;
  give_back(s);
  if (!s->queued)
    idle_rearm(s);
}

static void up_header(void *call, const char *name, size_t nl, const char *value, size_t vl)
{
  struct gstream *s = call;
  gs__grpc_status_header(name, nl, value, vl, &s->have_status, &s->status, s->message,
                         sizeof(s->message));
}

/* The worker's answer bytes: each whole message goes on to the client as it is. */
static bool up_data(void *call, const uint8_t *data, size_t len)
{
  struct gstream *s = call;
  size_t off = 0;
  if (s->in_len + len > s->in_cap) {
    size_t cap = s->in_cap ? s->in_cap : 4096;
    uint8_t *p;
    while (cap < s->in_len + len)
      cap *= 2;
    if (cap > MAX_RESPONSE + 5 || !(p = realloc(s->in, cap)))
      return false; /* reset: the stream is lost */
    s->in = p;
    s->in_cap = cap;
  }
  memcpy(s->in + s->in_len, data, len);
  s->in_len += len;
  while (s->in_len - off >= 5) {
    const uint8_t *m = s->in + off;
    uint32_t n = (uint32_t)m[1] << 24 | (uint32_t)m[2] << 16 | (uint32_t)m[3] << 8 | m[4];
    if (m[0] != 0 || n > MAX_RESPONSE)
      return false; /* compressed or too large: not carried */
    if (s->in_len - off - 5 < n)
      break;
    if (gs_h2_call_send(s->client, m + 5, n) == 0) /* a client gone: dropped, its end comes */
      s->queued += 5 + (size_t)n;
    off += 5 + (size_t)n;
    s->owed -= s->owed > 0;
    idle_rearm(s);
  }
  memmove(s->in, s->in + off, s->in_len - off);
  s->in_len -= off;
  s->held += len;
  give_back(s);
  return true;
}

/* The worker's window let some of the stream's requests go. */
static void up_drained(void *call, size_t unsent)
{
  struct gstream *s = call;
  s->unsent = unsent;
  if (s->holding && unsent <= PACE_LOW) {
    s->holding = false;
    gs_h2_call_hold_input(s->client, false);
  }
}

static void up_closed(void *call, uint32_t code)
{
  struct gstream *s = call;
  s->sid = 0;
  if (code == 0 && s->have_status && s->in_len == 0)
    finish(s, GS__PROXY_ANSWERED, s->status, "%s", s->message);
  else
    finish(s, GS__PROXY_WORKER_FAILED, ST_UNAVAILABLE, "worker %zu %s mid-stream", s->w,
           code == GS_H2_CONN_REFUSED ? "refused the connection"
           : code == GS_H2_CONN_LOST  ? "lost its connection"
           : code == 0                ? "ended its answer without a status"
                                      : "reset the stream");
}

/* ---- the client's side ---- */

#define NV(n, v, vl) {(n), (v), sizeof(n) - 1, (vl)}

/* The stream opened: a worker is picked and the stream opened there. */
static void open_stream(struct gs_proxy_grpc *g, struct gs_h2_call *client,
                        const struct gs_h2_request *req)
{
  struct gstream *s = calloc(1, sizeof(*s));
  struct gs_super_info si;
  char timeout[24];
  uint64_t now = gs_net_loop_now_us();
  int rc;
  if (!s) {
    gs_h2_call_reply(client, ST_RESOURCE_EXHAUSTED, NULL, 0, "out of memory (a new stream)");
    return;
  }
  *s = (struct gstream){.cb = {up_header, up_data, up_closed, up_drained}, .g = g, .client = client,
                        .start_us = now};
  if ((rc = gs__proxy_acquire(g->p, SIZE_MAX, &s->w, &s->trial)) != 0) {
    gs__proxy_error(g->p);
    gs_h2_call_reply(client, rc == GS_E_IN_USE ? ST_RESOURCE_EXHAUSTED : ST_UNAVAILABLE, NULL, 0,
                     rc == GS_E_IN_USE ? "every ready worker is at its in-flight limit"
                                       : "no worker is ready (they may be starting, restarting "
                                         "or ejected)");
    free(s);
    return;
  }
  g->nstreams++;
  s->next = g->streams;
  if (g->streams)
    g->streams->prev = s;
  g->streams = s;
  gs_h2_call_bind(client, s);
  gs_h2_call_on_sent(client, client_sent);
  if (req->deadline_us)
    s->deadline = gs_net_loop_timer_add(g->loop, req->deadline_us > now ? req->deadline_us - now
                                        : 0, on_deadline, s);
  snprintf(timeout, sizeof(timeout), "%lluu",
           (unsigned long long)(req->deadline_us > now ? req->deadline_us - now : 1));
  struct gs_http_header hdr[] = {NV(":method", "POST", 4), NV(":scheme", "http", 4),
                                 NV(":path", req->path, req->path_len),
                                 NV(":authority", "gpuslice", 8),
                                 NV("content-type", "application/grpc", 16),
                                 NV("te", "trailers", 8), NV("grpc-timeout", timeout, strlen(timeout))};
  if (!g->super || gs_super_info(g->super, s->w, &si) != 0 || !si.grpc_port ||
      !(s->up = gs__grpc_up_get(g, s->w, si.grpc_port)) ||
      (s->sid = gs_h2_client_stream(s->up->h2, hdr, GS_NITEMS(hdr) - !req->deadline_us, s)) < 0) {
    s->sid = 0;
    finish(s, GS__PROXY_WORKER_FAILED, ST_UNAVAILABLE, "worker %zu took no new stream (no "
           "gRPC port, or its connection is ending)", s->w);
  }
}

void gs__grpc_streams_stop(struct gs_proxy_grpc *g)
{
  while (g->streams)
    finish(g->streams, GS__PROXY_ABANDONED, ST_UNAVAILABLE, "the proxy is stopping");
}

void gs__grpc_stream(struct gs_proxy_grpc *g, struct gs_h2_call *client,
                     const struct gs_h2_request *req)
{
  struct gstream *s = req->user;
  if (!s && !req->end) {
    open_stream(g, client, req);
    return;
  }
  if (!s) /* never opened (no memory): nothing to carry */
    return;
  if (req->end && (req->gone || req->status)) { /* gone, or its input broke */
    finish(s, GS__PROXY_ABANDONED, req->gone ? ST_UNAVAILABLE : req->status, "%s",
           req->why ? req->why : "the client went away");
    return;
  }
  /* a message (the framed one precedes msg) or the client's half-close */
  if (s->sid > 0 && gs_h2_client_send(s->up->h2, s->sid, req->msg ? req->msg - 5 : NULL,
                                      req->msg ? req->msg_len + 5 : 0, req->end) != 0) {
    finish(s, GS__PROXY_WORKER_FAILED, ST_UNAVAILABLE, "worker %zu took no more of the stream",
           s->w);
    return;
  }
  if (req->msg) {
    s->owed++;
    s->unsent += req->msg_len + 5;
    idle_rearm(s);
  }
  if (!s->holding && s->unsent > PACE_HIGH) {
    s->holding = true;
    gs_h2_call_hold_input(s->client, true);
  }
}
