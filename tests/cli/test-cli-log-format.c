/* SPDX-License-Identifier: Apache-2.0 */
/* test-cli-log-format.c: how the CLI's log sink writes one event in each
 * format (src/cli/log.c): the journal's syslog priority per level and no
 * time; JSON with time (UTC, ms), level, source, message and the fields,
 * escaped, a field never hiding one of the four; plain text (info bare,
 * notices and worse "gpuslice <source>: "); the terminal's time and level;
 * a message too long for the line is cut, still one line; level names. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static const struct timespec at = {1, 234567890}; /* 1970-01-01 00:00:01.234 UTC */
static const struct gs_log_field fields[] = {{"job", "j000001"}, {"message", "not this"},
                                             {"user", "al\"ice\n"}};

static const char *line(enum cli_log_format f, bool stamp, enum gs_log_level level,
                        const char *source, const char *msg)
{
  static char buf[512];
  size_t n = cli_log_format_line(buf, sizeof(buf), f, stamp, &at, level, source, msg, fields,
                                 GS_NITEMS(fields));
  assert_int_equal(n, strlen(buf));
  return buf;
}

static void journal_priorities(void **state)
{
  (void)state;
  assert_string_equal(line(CLI_LOG_JOURNAL, false, GS_LOG_DEBUG, "serve", "a"), "<7>serve: a\n");
  assert_string_equal(line(CLI_LOG_JOURNAL, false, GS_LOG_INFO, "serve", "a"), "<6>serve: a\n");
  assert_string_equal(line(CLI_LOG_JOURNAL, false, GS_LOG_NOTICE, "serve", "a"), "<5>serve: a\n");
  assert_string_equal(line(CLI_LOG_JOURNAL, false, GS_LOG_WARN, "queue", "a"), "<4>queue: a\n");
  assert_string_equal(line(CLI_LOG_JOURNAL, false, GS_LOG_ERR, NULL, "a"), "<3>gpuslice: a\n");
  /* the journal stamps lines itself: stamp is ignored */
  assert_string_equal(line(CLI_LOG_JOURNAL, true, GS_LOG_INFO, "serve", "a"), "<6>serve: a\n");
}

static void json_object_per_line(void **state)
{
  json_error_t e;
  json_t *o;
  const char *l = line(CLI_LOG_JSON, false, GS_LOG_WARN, "queue", "j000001 \"ended\"\tok");
  (void)state;
  assert_non_null(strchr(l, '\n'));
  assert_ptr_equal(strchr(l, '\n'), l + strlen(l) - 1); /* one line: escapes inside */
  assert_non_null(o = json_loads(l, 0, &e));
  assert_string_equal(json_string_value(json_object_get(o, "time")), "1970-01-01T00:00:01.234Z");
  assert_string_equal(json_string_value(json_object_get(o, "level")), "warning");
  assert_string_equal(json_string_value(json_object_get(o, "source")), "queue");
  assert_string_equal(json_string_value(json_object_get(o, "message")), "j000001 \"ended\"\tok");
  assert_string_equal(json_string_value(json_object_get(o, "job")), "j000001");
  assert_string_equal(json_string_value(json_object_get(o, "user")), "al\"ice\n");
  assert_int_equal(json_object_size(o), 6);
  json_decref(o);
  assert_non_null(o = json_loads(line(CLI_LOG_JSON, false, GS_LOG_INFO, NULL, "x"), 0, &e));
  assert_string_equal(json_string_value(json_object_get(o, "source")), "gpuslice");
  assert_string_equal(json_string_value(json_object_get(o, "level")), "info");
  json_decref(o);
}

static void text_plain_and_terminal(void **state)
{
  (void)state;
  assert_string_equal(line(CLI_LOG_TEXT, false, GS_LOG_INFO, "serve", "worker 0 joined"),
                      "worker 0 joined\n");
  assert_string_equal(line(CLI_LOG_TEXT, false, GS_LOG_NOTICE, "serve", "stopped"),
                      "gpuslice serve: stopped\n");
  assert_string_equal(line(CLI_LOG_TEXT, false, GS_LOG_WARN, NULL, "using 1 EMULATED GPU"),
                      "gpuslice: using 1 EMULATED GPU\n");
  setenv("TZ", "UTC", 1);
  tzset();
  assert_string_equal(line(CLI_LOG_TEXT, true, GS_LOG_INFO, "serve", "worker 0 joined"),
                      "1970-01-01 00:00:01.234 info    serve: worker 0 joined\n");
  assert_string_equal(line(CLI_LOG_TEXT, true, GS_LOG_ERR, NULL, "x"),
                      "1970-01-01 00:00:01.234 error   gpuslice: x\n");
}

static void long_message_is_cut_to_one_line(void **state)
{
  char msg[300], buf[64];
  size_t n;
  (void)state;
  memset(msg, 'm', sizeof(msg) - 1);
  msg[sizeof(msg) - 1] = 0;
  for (int f = CLI_LOG_TEXT; f <= CLI_LOG_JSON; f++) {
    n = cli_log_format_line(buf, sizeof(buf), (enum cli_log_format)f, false, &at, GS_LOG_ERR, "s",
                            msg, NULL, 0);
    assert_int_equal(n, sizeof(buf) - 1);
    assert_int_equal(buf[n - 1], '\n');
    assert_null(memchr(buf, '\n', n - 1));
  }
}

static void level_names(void **state)
{
  enum gs_log_level l;
  (void)state;
  assert_int_equal(cli_log_level_parse("warning", &l), 0);
  assert_int_equal(l, GS_LOG_WARN);
  assert_int_equal(cli_log_level_parse("warn", &l), 0);
  assert_int_equal(l, GS_LOG_WARN);
  assert_int_equal(cli_log_level_parse("error", &l), 0);
  assert_int_equal(l, GS_LOG_ERR);
  assert_int_equal(cli_log_level_parse("debug", &l), 0);
  assert_int_equal(l, GS_LOG_DEBUG);
  assert_int_equal(cli_log_level_parse("loud", &l), -1);
  assert_int_equal(cli_log_level_parse("", &l), -1);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(journal_priorities),
      cmocka_unit_test(json_object_per_line),
      cmocka_unit_test(text_plain_and_terminal),
      cmocka_unit_test(long_message_is_cut_to_one_line),
      cmocka_unit_test(level_names),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
