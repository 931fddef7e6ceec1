/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz-jobs.c: libFuzzer target for what the jobs layer parses: the claims
 * file, a queue job file, and memory sizes (--memory). The first byte
 * picks the parser; any bytes must parse or be refused as CORRUPT_STATE (or,
 * for sizes, INVALID_ARGUMENT) with a message naming the origin; a parsed
 * job's argv is NULL-terminated and within bounds, its wait one of the
 * names. Anything else aborts. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobs/jobs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void die(const char *what, const char *detail)
{
  fprintf(stderr, "fuzz-jobs: %s: %s\n", what, detail);
  abort();
}

static void refused(const struct gs_err *err, int want)
{
  if (err->code != want || strncmp(err->msg, "fuzz: ", 6) != 0)
    die("refusal is not the expected code naming the origin", err->msg);
}

static void job(const char *text, size_t len)
{
  static struct gs_jobs_job j; /* large: kept off the stack */
  struct gs_err err = {0};
  if (gs_jobs_job_parse(&err, "fuzz", text, len, &j) != 0) {
    refused(&err, GS_E_CORRUPT_STATE);
    return;
  }
  if (j.argc == 0 || j.argc > GS_JOBS_MAX_ARGS || j.argv[j.argc] != NULL)
    die("a parsed job's argv", "count or terminator wrong");
  for (unsigned i = 0; i < j.argc; i++)
    if (!j.argv[i] || strlen(j.argv[i]) >= GS_JOBS_ARG_SIZE)
      die("a parsed job's argv", "an argument is missing or too long");
  if ((unsigned)j.waits > GS_JOBS_WAIT_TURN || !gs_jobs_wait_name(j.waits))
    die("a parsed job's waits_for", "out of range");
  gs_jobs_job_clear(&j);
}

static void claims(const char *text, size_t len)
{
  struct gs_jobs_claim *c = NULL;
  struct gs_err err = {0};
  unsigned n = 0;
  if (gs_jobs_claims_parse(&err, "fuzz", text, len, &c, &n) != 0) {
    refused(&err, GS_E_CORRUPT_STATE);
    if (c || n)
      die("a refused claims file", "left results behind");
    return;
  }
  if (n > GS_JOBS_MAX_CLAIMS)
    die("claims", "more than the maximum");
  for (unsigned i = 0; i < n; i++)
    if (c[i].mode > GS_JOBS_MPS || c[i].gpu >= GS_BACKEND_MAX_GPUS)
      die("a parsed claim", "mode or GPU out of range");
  free(c);
}

static void size_text(const char *text)
{
  struct gs_err err = {0};
  uint64_t mib = 0;
  if (gs_jobs_parse_size(&err, "fuzz", text, &mib) != 0) {
    if (err.code != GS_E_INVALID_ARGUMENT || strncmp(err.msg, "fuzz '", 6) != 0)
      die("a refused size", err.msg);
  } else if (mib == 0) {
    die("a size", "parsed to 0 MiB");
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char *text;
  if (size == 0)
    return 0;
  if (!(text = malloc(size)))
    return 0;
  memcpy(text, data + 1, size - 1);
  text[size - 1] = '\0';
  switch (data[0] % 3) {
  case 0: job(text, size - 1); break;
  case 1: claims(text, size - 1); break;
  default: size_text(text); break;
  }
  free(text);
  return 0;
}
