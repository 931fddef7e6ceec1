/* SPDX-License-Identifier: Apache-2.0 */
/* test-util-hostport.c: gs_hostport_parse, the one HOST:PORT reader of every
 * listen option, URL and admin Host/Origin check: the forms it takes (with
 * each flag), and the refusals, each with its code and the option, value
 * and fix in the message. gs_proc_start: this process's start time, and 0
 * for a pid that does not exist. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "util/util.h"

#define ZERO GS_HOSTPORT_PORT_ZERO
#define OPT GS_HOSTPORT_PORT_OPTIONAL
#define HOST GS_HOSTPORT_HOST_REQUIRED

static void takes_each_form(void **state)
{
  static const struct {
    const char *text;
    unsigned flags;
    const char *host;
    unsigned port;
    bool has_port, bracketed;
  } ok[] = {
      {"127.0.0.1:8000", 0, "127.0.0.1", 8000, true, false},
      {"localhost:65535", 0, "localhost", 65535, true, false},
      {"[::1]:1", 0, "::1", 1, true, true},
      {"[fe80::1%eth0]:443", 0, "fe80::1%eth0", 443, true, true},
      {":8000", 0, "", 8000, true, false},
      {"*:8000", 0, "*", 8000, true, false},
      {"127.0.0.1:0", ZERO, "127.0.0.1", 0, true, false},
      {"0.0.0.0:00080", 0, "0.0.0.0", 80, true, false},
      {"localhost", OPT, "localhost", 0, false, false},
      {"[::1]", OPT | HOST, "::1", 0, false, true},
      {"my-host_1.example:9", HOST, "my-host_1.example", 9, true, false},
  };
  (void)state;
  for (size_t i = 0; i < GS_NITEMS(ok); i++) {
    struct gs_hostport hp;
    struct gs_err err = {0};
    assert_int_equal(gs_hostport_parse(&err, "--listen", ok[i].text, ok[i].flags, &hp), 0);
    assert_string_equal(hp.host, ok[i].host);
    assert_int_equal(hp.port, ok[i].port);
    assert_int_equal(hp.has_port, ok[i].has_port);
    assert_int_equal(hp.bracketed, ok[i].bracketed);
  }
}

static void refuses_with_the_fix(void **state)
{
  static const struct {
    const char *text;
    unsigned flags;
    const char *says;
  } bad[] = {
      {"127.0.0.1:99999999999999", ZERO, "port 99999999999999 is out of range; give a port from "
                                         "1 to 65535 (or 0: any free port)"},
      {"127.0.0.1:65536", 0, "port 65536 is out of range; give a port from 1 to 65535,"},
      {"127.0.0.1:0", 0, "port 0 is out of range"},
      {"127.0.0.1:80x", 0, "the port '80x' is not a number"},
      {"127.0.0.1:-1", ZERO, "the port '-1' is not a number"},
      {"127.0.0.1:+80", 0, "the port '+80' is not a number"},
      {"127.0.0.1: 80", 0, "the port ' 80' is not a number"},
      {"127.0.0.1:", 0, "no port after ':'"},
      {"127.0.0.1", 0, "expected HOST:PORT"},
      {"", 0, "expected HOST:PORT"},
      {"::1:8000", 0, "an IPv6 address goes in brackets"},
      {"[::1:8000", 0, "no ']' closes the IPv6 address"},
      {"[::1]8000", 0, "expected ':PORT' after ']'"},
      {"[]:80", 0, "'' is not a host name or address"},
      {"a b:80", 0, "'a b' is not a host name or address"},
      {"evil/x:80", 0, "'evil/x' is not a host name or address"},
      {":80", HOST, "no host before the port"},
  };
  (void)state;
  for (size_t i = 0; i < GS_NITEMS(bad); i++) {
    struct gs_hostport hp;
    struct gs_err err = {0};
    char want[128];
    assert_int_equal(gs_hostport_parse(&err, "--listen", bad[i].text, bad[i].flags, &hp),
                     GS_E_USAGE);
    snprintf(want, sizeof(want), "--listen '%s': ", bad[i].text);
    if (strncmp(err.msg, want, strlen(want)) != 0 || !strstr(err.msg, bad[i].says))
      fail_msg("'%s': got \"%s\", want \"%s...%s\"", bad[i].text, err.msg, want, bad[i].says);
  }
}

static void long_host_and_no_err(void **state)
{
  char text[400];
  struct gs_hostport hp;
  (void)state;
  memset(text, 'a', 300);
  strcpy(text + 300, ":80");
  assert_int_equal(gs_hostport_parse(NULL, NULL, text, 0, &hp), GS_E_USAGE);
  assert_int_equal(gs_hostport_parse(NULL, NULL, "h:1", 0, &hp), 0);
}

static void proc_start_names_a_process(void **state)
{
  (void)state;
  assert_true(gs_proc_start(getpid()) > 0);
  assert_int_equal(gs_proc_start(getpid()), gs_proc_start(getpid()));
  assert_int_equal(gs_proc_start(0), 0);
  assert_int_equal(gs_proc_start(-1), 0);
  assert_int_equal(gs_proc_start(0x7ffffff0), 0);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(takes_each_form),
      cmocka_unit_test(refuses_with_the_fix),
      cmocka_unit_test(long_host_and_no_err),
      cmocka_unit_test(proc_start_names_a_process),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
