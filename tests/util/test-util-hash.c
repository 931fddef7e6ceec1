/* SPDX-License-Identifier: Apache-2.0 */
/* test-util-hash.c: gs_hash128 and gs_uuid_format. Pinned vectors hold the
 * hash to its bytes on every host (derived UUIDs must not change between
 * machines or releases); the rest checks spread and the UUID text shape. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

static void hex(const uint8_t b[16], char out[33])
{
  for (int i = 0; i < 16; i++)
    snprintf(out + 2 * i, 3, "%02x", b[i]);
}

/* Changing these values changes every emulated GPU and MIG UUID. */
static void hash_matches_pinned_vectors(void **state)
{
  static const struct {
    const char *in, *out;
  } v[] = {
      {"", "f52a15e9a9b5e89b40c7a27d9779ed8d"},
      {"a", "8097ca68b9cc797b87f9b30434fdaec8"},
      {"GPU-0/7/0", "c4959b5203679c7f607fbe89d3cbece7"},
      {"gpuslice", "27c01e2b3d428559c6dbfc958f460359"},
  };
  uint8_t b[16];
  char text[33];
  (void)state;
  for (size_t i = 0; i < GS_NITEMS(v); i++) {
    gs_hash128(v[i].in, strlen(v[i].in), b);
    hex(b, text);
    assert_string_equal(text, v[i].out);
  }
}

/* Embedded NULs and length both count: "a" and "a\0" differ. */
static void hash_covers_every_byte(void **state)
{
  uint8_t a[16], b[16];
  (void)state;
  gs_hash128("a", 1, a);
  gs_hash128("a\0", 2, b);
  assert_memory_not_equal(a, b, 16);
}

static int cmp_u64(const void *a, const void *b)
{
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* No collisions among many near-identical inputs, in either half. */
static void hash_has_no_collisions_on_similar_inputs(void **state)
{
  enum { N = 20000 };
  uint64_t *lo = malloc(N * sizeof(*lo)), *hi = malloc(N * sizeof(*hi));
  char in[32];
  uint8_t b[16];
  (void)state;
  assert_non_null(lo);
  assert_non_null(hi);
  for (unsigned i = 0; i < N; i++) {
    int n = snprintf(in, sizeof(in), "GPU-%u/%u/%u", i / 120, i / 8 % 15, i % 8);
    gs_hash128(in, (size_t)n, b);
    memcpy(&lo[i], b, 8);
    memcpy(&hi[i], b + 8, 8);
  }
  qsort(lo, N, sizeof(*lo), cmp_u64);
  qsort(hi, N, sizeof(*hi), cmp_u64);
  for (unsigned i = 1; i < N; i++) {
    assert_true(lo[i] != lo[i - 1]);
    assert_true(hi[i] != hi[i - 1]);
  }
  free(lo);
  free(hi);
}

/* Flipping one input bit flips about half of the 128 output bits. */
static void hash_avalanches(void **state)
{
  uint8_t in[8] = {1, 2, 3, 4, 5, 6, 7, 8}, a[16], b[16];
  unsigned total = 0, flips = 0;
  (void)state;
  gs_hash128(in, sizeof(in), a);
  for (unsigned bit = 0; bit < 64; bit++) {
    in[bit / 8] ^= (uint8_t)(1u << bit % 8);
    gs_hash128(in, sizeof(in), b);
    in[bit / 8] ^= (uint8_t)(1u << bit % 8);
    for (int i = 0; i < 16; i++)
      flips += (unsigned)__builtin_popcount(a[i] ^ b[i]);
    total += 128;
  }
  assert_in_range(flips * 100 / total, 40, 60);
}

static void uuid_has_rfc4122_shape(void **state)
{
  uint8_t b[16];
  char u[37];
  (void)state;
  memset(b, 0xff, sizeof(b));
  gs_uuid_format(b, u);
  assert_string_equal(u, "ffffffff-ffff-5fff-bfff-ffffffffffff");
  memset(b, 0, sizeof(b));
  gs_uuid_format(b, u);
  assert_string_equal(u, "00000000-0000-5000-8000-000000000000");
}

static void uuid_of_hash_is_lowercase_v5(void **state)
{
  uint8_t b[16];
  char u[37];
  (void)state;
  gs_hash128("gpuslice", 8, b);
  gs_uuid_format(b, u);
  assert_string_equal(u, "27c01e2b-3d42-5559-86db-fc958f460359");
  assert_int_equal(strlen(u), 36);
  for (int i = 0; i < 36; i++)
    assert_true(i == 8 || i == 13 || i == 18 || i == 23 ? u[i] == '-'
                                                        : isxdigit((unsigned char)u[i]) &&
                                                              !isupper((unsigned char)u[i]));
  assert_int_equal(u[14], '5');
  assert_non_null(strchr("89ab", u[19]));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(hash_matches_pinned_vectors),
      cmocka_unit_test(hash_covers_every_byte),
      cmocka_unit_test(hash_has_no_collisions_on_similar_inputs),
      cmocka_unit_test(hash_avalanches),
      cmocka_unit_test(uuid_has_rfc4122_shape),
      cmocka_unit_test(uuid_of_hash_is_lowercase_v5),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
