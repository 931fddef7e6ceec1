/* SPDX-License-Identifier: Apache-2.0 */
/* listener.c: the set-up and teardown the HTTP/1.1 server (http_server.c)
 * and the HTTP/2 server (h2.c) share: their limits and their listening
 * socket's life on the loop. It knows nothing of either protocol nor of
 * their connections. */
#include "net/internal.h"

void gs__net_server_setup(struct gs_http_limits *lim, const struct gs_http_limits *l,
                          int *listen_fd)
{
  if (l)
    *lim = *l;
  else
    gs_http_limits_default(lim);
  *listen_fd = -1;
}

int gs__net_server_listen(struct gs_err *err, struct gs_net_loop *loop, int *listen_fd, int fd,
                          unsigned mask, gs_net_loop_file_fn *on_accept, void *srv)
{
  int rc = gs_net_loop_add(err, loop, fd, mask, on_accept, srv);
  if (rc == 0)
    *listen_fd = fd;
  return rc;
}

void gs__net_server_unlisten(struct gs_net_loop *loop, int *listen_fd)
{
  if (*listen_fd >= 0)
    gs_net_loop_close_fd(loop, *listen_fd);
  *listen_fd = -1;
}
