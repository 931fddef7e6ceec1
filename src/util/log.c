/* SPDX-License-Identifier: Apache-2.0 */
/* log.c: the one logger: a level threshold and a sink the front end sets
 * (cli: where lines go and how they look); a library calls gs_log_* and
 * never prints. Silent until a sink is set, so tests and fuzzers that link
 * the libraries stay quiet. It knows nothing of what is logged. */
#include "util/util.h"

#include <stdarg.h>
#include <stdio.h>

#define MSG_MAX 1024

static gs_log_sink_fn *sink;
static void *sink_ctx;
static enum gs_log_level threshold = GS_LOG_INFO;

void gs_log_set_sink(gs_log_sink_fn *fn, void *ctx, enum gs_log_level min)
{
  sink = fn;
  sink_ctx = ctx;
  threshold = min;
}

bool gs_log_enabled(enum gs_log_level level)
{
  return sink && level >= threshold;
}

void gs_log(enum gs_log_level level, const char *source, const struct gs_log_field *fields,
            size_t nfields, const char *fmt, ...)
{
  char msg[MSG_MAX];
  va_list ap;
  if (!gs_log_enabled(level))
    return;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  sink(sink_ctx, level, source, msg, fields, nfields);
}
