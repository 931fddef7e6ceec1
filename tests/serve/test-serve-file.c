/* SPDX-License-Identifier: Apache-2.0 */
/* test-serve-file.c: the serve config file parser: every option, the
 * command list and the env map come through with their lines; unknown and
 * repeated keys, wrong kinds, bad env names and broken YAML are refused with
 * the file, the line and the key named. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "serve/serve.h"

static const char good[] =
    "# a serve config\n"
    "listen: 0.0.0.0:8000\n"
    "gpus: 0,1\n"
    "replicas: 2\n"
    "policy: rr\n"
    "worker-timeout: 5000\n"
    "max-inflight: 8\n"
    "drain-timeout: 3000\n"
    "port-base: 19000\n"
    "ephemeral-ports: false\n"
    "ready-path: /v2/health/ready\n"
    "log-dir: /var/log/gpuslice\n"
    "admin-listen: 127.0.0.1:7463\n"
    "admin-token-file: /etc/gpuslice/admin.token\n"
    "threads: 2\n"
    "env:\n"
    "  OMP_NUM_THREADS: \"4\"\n"
    "  TRITON_LOG: verbose\n"
    "command:\n"
    "  - tritonserver\n"
    "  - --model-repository=/models\n"
    "  - --http-port={port}\n";

static const char *value(const struct gs_serve_file *f, const char *key, unsigned *line)
{
  for (size_t i = 0; i < f->nopts; i++)
    if (strcmp(f->opts[i].key, key) == 0) {
      *line = f->opts[i].line;
      return f->opts[i].value;
    }
  return NULL;
}

static void test_every_key(void **state)
{
  struct gs_serve_file *f;
  struct gs_err err = {0};
  unsigned line = 0;
  (void)state;
  assert_int_equal(gs_serve_file_parse(&err, "serve.yaml", good, strlen(good), &f), 0);
  assert_int_equal(f->nopts, 14);
  assert_string_equal(value(f, "threads", &line), "2");
  assert_string_equal(value(f, "listen", &line), "0.0.0.0:8000");
  assert_int_equal(line, 2);
  assert_string_equal(value(f, "worker-timeout", &line), "5000");
  assert_int_equal(line, 6);
  assert_string_equal(value(f, "ephemeral-ports", &line), "false");
  assert_string_equal(value(f, "gpus", &line), "0,1");
  assert_string_equal(f->command[0], "tritonserver");
  assert_string_equal(f->command[2], "--http-port={port}");
  assert_null(f->command[3]);
  assert_string_equal(f->env[0], "OMP_NUM_THREADS=4");
  assert_string_equal(f->env[1], "TRITON_LOG=verbose");
  assert_null(f->env[2]);
  gs_serve_file_free(f);
}

static void refused(const char *text, const char *needle)
{
  struct gs_serve_file *f = (struct gs_serve_file *)1;
  struct gs_err err = {0};
  assert_int_equal(gs_serve_file_parse(&err, "s.yaml", text, strlen(text), &f),
                   GS_E_INVALID_ARGUMENT);
  assert_null(f);
  if (!strstr(err.msg, needle))
    fail_msg("expected '%s' in '%s'", needle, err.msg);
}

static void test_refusals(void **state)
{
  (void)state;
  refused("listen: a\nworkers: 4\n", "s.yaml:2: unexpected key 'workers'");
  refused("listen: a\nlisten: b\n", "s.yaml:2: 'listen' appears twice");
  refused("listen: [a]\n", "s.yaml:1: listen: expected a value, found a list");
  refused("listen:\n", "listen: expected a value, found an empty value");
  refused("command: tritonserver\n", "s.yaml:1: command: expected a list");
  refused("command: []\n", "command: the list is empty");
  refused("command: [a, {b: c}]\n", "command[1]: expected a value, found a map");
  refused("env: [A]\n", "env: expected a map");
  refused("env:\n  A-B: x\n", "s.yaml:2: env: 'A-B' is not a variable name");
  refused("env:\n  A: x\n  A: y\n", "env: 'A' appears twice");
  refused("env:\n  A: [x]\n", "env.A: expected a value, found a list");
  refused("- listen\n", "expected a map of serve options");
  refused("listen: \"a\n", "not valid YAML");
  refused("", "expected a map of serve options (listen:, command:, ...), found nothing");
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_key),
      cmocka_unit_test(test_refusals),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
