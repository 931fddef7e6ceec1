/* SPDX-License-Identifier: Apache-2.0 */
/* service.c: telling systemd how a long-running command is doing, through
 * libsystemd's sd_notify: serve's readiness, reloads, drain, worker count
 * and watchdog pings (deploy/systemd/gpuslice-serve.service.in, Type=notify).
 * Under no service manager ($NOTIFY_SOCKET unset) nothing is sent. Knows
 * the notify protocol's words, not how serve decides it is ready. */
#include "cli/cli.h"
#include "serve/serve.h"

#include <stdlib.h>
#include <systemd/sd-daemon.h>
#include <time.h>

/* sd_notify's "MONOTONIC_USEC=" beside RELOADING=1 (systemd 253 wants it
 * for Type=notify-reload; older ones ignore it). */
static unsigned long long monotonic_us(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (unsigned long long)ts.tv_sec * 1000000ull + (unsigned long long)ts.tv_nsec / 1000;
}

static void on_life(void *ctx, enum gs_serve_life what, const struct gs_serve_life_info *in)
{
  (void)ctx;
  switch (what) {
  case GS_SERVE_READY:
    sd_notifyf(0, "READY=1\nSTATUS=%zu of %zu workers ready", in->ready, in->workers);
    break;
  case GS_SERVE_WORKERS:
    sd_notifyf(0, "STATUS=%zu of %zu workers ready", in->ready, in->workers);
    break;
  case GS_SERVE_RELOADING:
    sd_notifyf(0, "RELOADING=1\nMONOTONIC_USEC=%llu\nSTATUS=reloading the serve file and the "
               "MIG devices", monotonic_us());
    break;
  case GS_SERVE_STOPPING:
    sd_notifyf(0, "STOPPING=1\nSTATUS=draining: %zu of %zu workers ready", in->ready,
               in->workers);
    break;
  case GS_SERVE_ALIVE:
    sd_notify(0, "WATCHDOG=1");
    break;
  }
}

void cli_service_serve(struct gs_serve_config *sc)
{
  uint64_t usec = 0;
  const char *sock = getenv("NOTIFY_SOCKET");
  if (!sock || !*sock)
    return;
  sc->on_life = on_life;
  /* Half the unit's WatchdogSec=, as sd_watchdog_enabled(3) advises. */
  if (sd_watchdog_enabled(0, &usec) > 0 && usec)
    sc->alive_every_us = usec / 2;
}
