/* SPDX-License-Identifier: Apache-2.0 */
/* internal.h: what util's files share and no other layer sees. */
#ifndef GS_UTIL_INTERNAL_H
#define GS_UTIL_INTERNAL_H

#include "util/util.h"

#include <stddef.h>

/* Copies the directory part of path into dir ("." when there is none). */
int gs__dirname(struct gs_err *err, const char *path, char dir[PATH_MAX]);
/* " by pid 4242 (python3)" for the process holding a flock on fd's file,
 * from /proc/locks; "" when it cannot be told. */
void gs__lock_holder(int fd, char *out, size_t size);

#endif
