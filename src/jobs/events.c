/* SPDX-License-Identifier: Apache-2.0 */
/* events.c: what the queue runner says of its jobs, through the one logger
 * (gs_log_*, source "queue"): a job submitted, waiting (and why), started on
 * a slice, ended (status, duration, leftovers), lost or refused, and files
 * set aside. Each event's message says it in words; its fields (job, user,
 * event, slice, status, duration...) carry the same for structured sinks.
 * Where the lines go and how they look is the caller's (cli). */
#include "jobs/internal.h"

#include <stdio.h>
#include <string.h>

void gs_jobs_command_text(const struct gs_jobs_job *j, char *out, size_t size)
{
  size_t used = 0;
  out[0] = 0;
  for (unsigned k = 0; k < j->argc && used + 1 < size; k++)
    used += (size_t)snprintf(out + used, size - used, "%s%s", k ? " " : "", j->argv[k]);
}

void gs_jobs_request_text(const struct gs_jobs_request *r, char *out, size_t size)
{
  if (r->profile[0])
    snprintf(out, size, "%s%s", r->mode == GS_JOBS_MPS ? "mps in " : "", r->profile);
  else if (r->mode == GS_JOBS_MIG)
    snprintf(out, size, "%.2f GiB", (double)r->memory_mib / 1024.0);
  else
    snprintf(out, size, "%s", gs_jobs_mode_name(r->mode));
}

/* The fields every event of a job has, and those of its slice once it has one. */
struct event_fields {
  struct gs_log_field f[10];
  size_t n;
  char gpu[12], status[16], duration[32], leftovers[12];
};

static void add(struct event_fields *e, const char *key, const char *value)
{
  if (value && *value && e->n < GS_NITEMS(e->f))
    e->f[e->n++] = (struct gs_log_field){key, value};
}

static void fields_of(struct event_fields *e, const struct gs_jobs_job *j, const char *what)
{
  e->n = 0;
  add(e, "job", j->id);
  add(e, "event", what);
  add(e, "user", j->user);
  if (j->slice_uuid[0]) {
    snprintf(e->gpu, sizeof(e->gpu), "%u", j->gpu);
    add(e, "gpu", e->gpu);
    add(e, "slice", j->slice_uuid);
    add(e, "profile", j->slice_profile);
  }
  if (j->user[0]) /* a job's, not a file's that is no job */
    add(e, "status", gs_jobs_state_name(j->state));
}

static void log_ended(struct event_fields *e, const struct gs_jobs_job *j)
{
  char how[64], left[96] = "";
  double took = j->started > 0 && j->ended > j->started ? j->ended - j->started : 0.0;
  if (j->signal)
    snprintf(how, sizeof(how), "killed by %s (exit %d)", strsignal(j->signal), j->exit_status);
  else
    snprintf(how, sizeof(how), "exit %d", j->exit_status);
  if (j->leftovers)
    snprintf(left, sizeof(left), "; %u leftover process%s killed (found by %s)", j->leftovers,
             j->leftovers == 1 ? "" : "es", j->tracking);
  snprintf(e->status, sizeof(e->status), "%d", j->exit_status);
  snprintf(e->duration, sizeof(e->duration), "%.3f", took);
  snprintf(e->leftovers, sizeof(e->leftovers), "%u", j->leftovers);
  add(e, "exit_status", e->status);
  add(e, "duration_s", e->duration);
  add(e, "leftovers", j->leftovers ? e->leftovers : NULL);
  gs_log(GS_LOG_INFO, "queue", e->f, e->n, "%s ended: %s after %.1fs, user %s, GPU %u %s %s%s%s%s",
         j->id, how, took, j->user, j->gpu, j->slice_profile, j->slice_uuid, left,
         j->reason[0] ? ": " : "", j->reason);
}

void gs__jobs_event(const struct gs_jobs_job *j, const char *what)
{
  struct event_fields e;
  char req[64], cmd[160];
  if (!gs_log_enabled(GS_LOG_ERR)) /* no sink: nothing to format */
    return;
  fields_of(&e, j, what);
  if (strcmp(what, "started") == 0) {
    gs_log(GS_LOG_INFO, "queue", e.f, e.n, "%s started: user %s, GPU %u %s %s", j->id, j->user,
           j->gpu, j->slice_profile, j->slice_uuid);
  } else if (strcmp(what, "ended") == 0) {
    log_ended(&e, j);
  } else if (strcmp(what, "submitted") == 0) {
    gs_jobs_request_text(&j->req, req, sizeof(req));
    gs_jobs_command_text(j, cmd, sizeof(cmd));
    add(&e, "request", req);
    gs_log(GS_LOG_INFO, "queue", e.f, e.n, "%s submitted: user %s, %s: %s", j->id, j->user, req,
           cmd);
  } else if (strcmp(what, "waits") == 0) {
    add(&e, "waits", gs_jobs_wait_name(j->waits));
    add(&e, "reason", j->reason);
    gs_log(GS_LOG_INFO, "queue", e.f, e.n, "%s waits (%s): %s", j->id, gs_jobs_wait_name(j->waits),
           j->reason);
  } else { /* lost, refused; files set aside, not jobs, skipped */
    add(&e, "reason", j->reason);
    gs_log(GS_LOG_WARN, "queue", e.f, e.n, "%s %s: %s", j->id, what, j->reason);
  }
}
