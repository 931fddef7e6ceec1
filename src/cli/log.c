/* log.c: where the libraries' log events go when gpuslice runs them: the
 * progress (info) as plain lines on stdout, as each command printed it; a
 * notice, warning or error on stderr as "gpuslice <source>: <message>".
 * Fields follow as key=value. Issue 17 gives this sink its other formats
 * (journald priorities, JSON, --log-level); the libraries do not change. */
#include "cli/cli.h"

#include <stdio.h>
#include <string.h>

static void sink(void *ctx, enum gs_log_level level, const char *source, const char *msg,
                 const struct gs_log_field *fields, size_t nfields)
{
  FILE *f = level >= GS_LOG_NOTICE ? stderr : stdout;
  char line[2048];
  size_t n = 0;
  (void)ctx;
  if (level >= GS_LOG_NOTICE)
    n = (size_t)snprintf(line, sizeof(line), "gpuslice %s: ", source ? source : "");
  n += (size_t)snprintf(line + n, sizeof(line) - n, "%s", msg);
  for (size_t i = 0; i < nfields && n < sizeof(line); i++)
    n += (size_t)snprintf(line + n, sizeof(line) - n, " %s=%s", fields[i].key, fields[i].value);
  if (n >= sizeof(line) - 1)
    n = sizeof(line) - 2;
  line[n++] = '\n';
  line[n] = '\0';
  fputs(line, f); /* one write a line: threads' lines do not mix */
  fflush(f);
}

void cli_log_init(void)
{
  gs_log_set_sink(sink, NULL, GS_LOG_INFO);
}
