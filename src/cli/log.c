/* SPDX-License-Identifier: Apache-2.0 */
/* log.c: the sink of the libraries' log events (gs_log_*) when gpuslice
 * runs them, and how each line looks (--log-format, --log-level):
 *  - text, not on a terminal: progress (info) as plain lines on stdout, as
 *    each command printed it; a notice, warning or error on stderr as
 *    "gpuslice <source>: <message>" (every level there after
 *    cli_log_to_stderr: the queue runner's events);
 *  - text on a terminal: the same streams, each line led by the local time
 *    and its level;
 *  - journal (the default when systemd connected stderr to the journal:
 *    $JOURNAL_STREAM names stderr's device and inode): every line on stderr
 *    led by its syslog priority, "<6>serve: ...", no time (the journal
 *    stamps each line);
 *  - json: one object a line on stderr: time (UTC), level, source, message
 *    and the event's fields (job, user, slice, ...).
 * The text formats show the message only: it says the fields in words. */
#include "cli/cli.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static struct {
  enum cli_log_format format;
  bool all_stderr;           /* cli_log_to_stderr */
  bool tty_out, tty_err;     /* text: stamp lines on a terminal */
} conf;

static const char *const level_names[] = {
    [GS_LOG_DEBUG] = "debug", [GS_LOG_INFO] = "info", [GS_LOG_NOTICE] = "notice",
    [GS_LOG_WARN] = "warning", [GS_LOG_ERR] = "error"};
/* syslog's priorities (sd-daemon(3)'s SD_DEBUG ... SD_ERR) */
static const int priorities[] = {[GS_LOG_DEBUG] = 7, [GS_LOG_INFO] = 6, [GS_LOG_NOTICE] = 5,
                                 [GS_LOG_WARN] = 4, [GS_LOG_ERR] = 3};

int cli_log_level_parse(const char *text, enum gs_log_level *out)
{
  static const struct { const char *name; enum gs_log_level level; } alias[] = {
      {"warn", GS_LOG_WARN}, {"err", GS_LOG_ERR}};
  for (size_t i = 0; i < GS_NITEMS(level_names); i++)
    if (strcmp(text, level_names[i]) == 0)
      return *out = (enum gs_log_level)i, 0;
  for (size_t i = 0; i < GS_NITEMS(alias); i++)
    if (strcmp(text, alias[i].name) == 0)
      return *out = alias[i].level, 0;
  return -1;
}

/* True when $JOURNAL_STREAM ("DEV:INO", set by systemd for a service whose
 * output goes to the journal) names fd's device and inode. */
static bool is_journal(int fd)
{
  const char *js = getenv("JOURNAL_STREAM");
  unsigned long long dev, ino;
  struct stat st;
  char end;
  if (!js || sscanf(js, "%llu:%llu%c", &dev, &ino, &end) != 2 || fstat(fd, &st) != 0)
    return false;
  return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

static size_t put_json(char *buf, size_t size, const struct timespec *now, enum gs_log_level level,
                       const char *source, const char *msg, const struct gs_log_field *fields,
                       size_t nfields)
{
  char stamp[40];
  struct tm tm;
  json_t *o;
  char *text;
  size_t n;
  gmtime_r(&now->tv_sec, &tm);
  n = strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(stamp + n, sizeof(stamp) - n, ".%03ldZ", now->tv_nsec / 1000000);
  o = json_pack("{s:s, s:s, s:s, s:s}", "time", stamp, "level", level_names[level], "source",
                source ? source : "gpuslice", "message", msg);
  for (size_t i = 0; o && i < nfields; i++) /* a field never hides one of the four */
    if (!json_object_get(o, fields[i].key))
      json_object_set_new(o, fields[i].key, json_string(fields[i].value));
  text = o ? json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
  json_decref(o);
  n = (size_t)snprintf(buf, size, "%s", text ? text : "{\"level\":\"error\",\"message\":\"out of "
                                                      "memory for a log line\"}");
  free(text);
  return n;
}

size_t cli_log_format_line(char *buf, size_t size, enum cli_log_format format, bool stamp,
                           const struct timespec *now, enum gs_log_level level, const char *source,
                           const char *msg, const struct gs_log_field *fields, size_t nfields)
{
  size_t n = 0;
  if (format == CLI_LOG_JSON) {
    n = put_json(buf, size, now, level, source, msg, fields, nfields);
  } else if (format == CLI_LOG_JOURNAL) {
    n = (size_t)snprintf(buf, size, "<%d>%s: %s", priorities[level], source ? source : "gpuslice",
                         msg);
  } else if (stamp) {
    struct tm tm;
    localtime_r(&now->tv_sec, &tm);
    n = strftime(buf, size, "%Y-%m-%d %H:%M:%S", &tm);
    n += (size_t)snprintf(buf + n, size - n, ".%03ld %-7s %s: %s", now->tv_nsec / 1000000,
                          level_names[level], source ? source : "gpuslice", msg);
  } else if (level >= GS_LOG_NOTICE || conf.all_stderr) {
    n = (size_t)snprintf(buf, size, "gpuslice%s%s: %s", source ? " " : "", source ? source : "",
                         msg);
  } else {
    n = (size_t)snprintf(buf, size, "%s", msg);
  }
  if (n >= size - 1) /* cut: the newline still ends it */
    n = size - 2;
  buf[n++] = '\n';
  buf[n] = '\0';
  return n;
}

static void sink(void *ctx, enum gs_log_level level, const char *source, const char *msg,
                 const struct gs_log_field *fields, size_t nfields)
{
  bool out = conf.format == CLI_LOG_TEXT && level < GS_LOG_NOTICE && !conf.all_stderr;
  FILE *f = out ? stdout : stderr;
  struct timespec now;
  char line[4096];
  (void)ctx;
  clock_gettime(CLOCK_REALTIME, &now);
  cli_log_format_line(line, sizeof(line), conf.format, out ? conf.tty_out : conf.tty_err, &now,
                      level, source, msg, fields, nfields);
  fputs(line, f); /* one write a line: threads' lines do not mix */
  fflush(f);
}

int cli_log_init(const char *format, const char *level)
{
  enum gs_log_level min = GS_LOG_INFO;
  format = format ? format : getenv("GPUSLICE_LOG_FORMAT");
  level = level ? level : getenv("GPUSLICE_LOG_LEVEL");
  if (level && *level && cli_log_level_parse(level, &min) != 0)
    return cli_usage("--log-level %s: expected debug, info, notice, warning or error", level);
  if (!format || !*format || strcmp(format, "auto") == 0)
    conf.format = is_journal(STDERR_FILENO) ? CLI_LOG_JOURNAL : CLI_LOG_TEXT;
  else if (strcmp(format, "text") == 0)
    conf.format = CLI_LOG_TEXT;
  else if (strcmp(format, "journal") == 0)
    conf.format = CLI_LOG_JOURNAL;
  else if (strcmp(format, "json") == 0)
    conf.format = CLI_LOG_JSON;
  else
    return cli_usage("--log-format %s: expected auto, text, journal or json", format);
  conf.tty_out = isatty(STDOUT_FILENO);
  conf.tty_err = isatty(STDERR_FILENO);
  gs_log_set_sink(sink, NULL, min);
  return 0;
}

void cli_log_to_stderr(void)
{
  conf.all_stderr = true;
}
