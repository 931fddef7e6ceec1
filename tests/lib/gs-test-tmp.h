/* SPDX-License-Identifier: Apache-2.0 */
/* gs-test-tmp.h: scratch directories for tests that touch files: one fresh
 * directory per test under $GS_TEST_TMP (set by ctest; /tmp otherwise),
 * removed afterwards. Header-only so each test stays one executable. */
#ifndef GS_TEST_TMP_H
#define GS_TEST_TMP_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/util.h"

#define GS_TEST_PATH 4096 /* a full path built from a scratch directory */
#define GS_TEST_DIR 1024  /* a scratch directory: short enough to build on */

/* Creates "<base>/<tag>-XXXXXX" into dir; 0 on success. */
static inline int gs_test_mkdtemp(const char *tag, char dir[GS_TEST_DIR])
{
  const char *base = getenv("GS_TEST_TMP");
  char probe[GS_TEST_PATH];

  if (base == NULL || *base == '\0')
    base = "/tmp";
  snprintf(probe, sizeof(probe), "%s/x", base);
  if (gs_file_make_parent_mode(NULL, probe, 0755) != 0) /* tests may run as other users */
    return -1;
  if (snprintf(dir, GS_TEST_DIR, "%s/%s-XXXXXX", base, tag) >= GS_TEST_DIR)
    return -1;
  return mkdtemp(dir) ? 0 : -1;
}

/* "<dir>/<name>" into out; NULL (and out empty) if it does not fit. */
static inline const char *gs_test_join(char out[GS_TEST_PATH], const char *dir, const char *name)
{
  if (snprintf(out, GS_TEST_PATH, "%s/%s", dir, name) < GS_TEST_PATH)
    return out;
  out[0] = '\0';
  return NULL;
}

/* How many entries of dir have `part` in their name. */
static inline unsigned gs_test_count_named(const char *dir, const char *part)
{
  DIR *d = opendir(dir);
  struct dirent *e;
  unsigned n = 0;

  while (d && (e = readdir(d)) != NULL)
    n += strstr(e->d_name, part) != NULL;
  if (d)
    closedir(d);
  return n;
}

/* rm -r dir (the tests make shallow trees; depth is bounded by recursion). */
static inline void gs_test_rmtree(const char *dir)
{
  char path[GS_TEST_PATH];
  DIR *d = opendir(dir);
  struct dirent *e;
  struct stat sb;

  while (d && (e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
      continue;
    if (gs_test_join(path, dir, e->d_name) == NULL)
      continue;
    if (lstat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
      chmod(path, 0755);
      gs_test_rmtree(path);
    } else {
      unlink(path);
    }
  }
  if (d)
    closedir(d);
  rmdir(dir);
}

/* Writes text to path plainly (test fixtures, not the code under test). */
static inline int gs_test_write(const char *path, const char *text, size_t len)
{
  FILE *f = fopen(path, "wb");
  int ok = f && fwrite(text, 1, len, f) == len;

  if (f && fclose(f) != 0)
    ok = 0;
  return ok ? 0 : -1;
}

#endif
