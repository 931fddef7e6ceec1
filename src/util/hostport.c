/* SPDX-License-Identifier: Apache-2.0 */
/* hostport.c: the one reader of "HOST:PORT" text, wherever it comes from:
 * listen options (serve, worker, admin), URLs (bench), the Host and Origin
 * headers the admin API checks. Strict: a port is 1 to 5 decimal digits in
 * range and nothing after it; an IPv6 address is bracketed. It only splits
 * and checks text; resolving and binding are the callers'. */
#include "util/util.h"

#include <stdio.h>
#include <string.h>

#define EXAMPLE "e.g. 127.0.0.1:8000"

/* A host name or address: letters, digits, '.', '-', '_', or "*" (any);
 * inside brackets hex digits, ':', '.' and a '%' zone. */
static bool host_ok(const char *h, size_t n, bool bracketed)
{
  if (!bracketed && n == 1 && h[0] == '*')
    return true;
  for (size_t i = 0; i < n; i++) {
    char ch = h[i];
    bool alnum = (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
    if (!(alnum || ch == '.' || (bracketed ? ch == ':' || ch == '%' : ch == '-' || ch == '_')))
      return false;
  }
  return true;
}

/* Reads the port after the colon: digits only, the value in range. */
static int port_of(struct gs_err *err, const char *what, const char *text, const char *p,
                   unsigned flags, unsigned *out)
{
  const char *sep = *what ? " " : "";
  const char *range = flags & GS_HOSTPORT_PORT_ZERO ? "from 1 to 65535 (or 0: any free port)"
                                                    : "from 1 to 65535";
  unsigned long v = 0;
  size_t n = strspn(p, "0123456789");
  if (!*p)
    return gs_err_set(err, GS_E_USAGE, "%s%s'%s': no port after ':'; give a port %s, " EXAMPLE,
                      what, sep, text, range);
  if (!n || p[n])
    return gs_err_set(err, GS_E_USAGE, "%s%s'%s': the port '%s' is not a number; give a port %s, "
                      EXAMPLE, what, sep, text, p, range);
  for (size_t i = 0; i < n && v <= 65535; i++)
    v = v * 10 + (unsigned long)(p[i] - '0');
  if (v > 65535 || (v == 0 && !(flags & GS_HOSTPORT_PORT_ZERO)))
    return gs_err_set(err, GS_E_USAGE, "%s%s'%s': port %.20s is out of range; give a port %s, "
                      EXAMPLE, what, sep, text, p, range);
  *out = (unsigned)v;
  return 0;
}

int gs_hostport_parse(struct gs_err *err, const char *what, const char *text, unsigned flags,
                      struct gs_hostport *out)
{
  const char *h = text, *rest, *sep = what && *what ? " " : "";
  size_t hl;
  what = what ? what : "";
  memset(out, 0, sizeof(*out));
  if (*h == '[') {
    const char *rb = strchr(h, ']');
    if (!rb)
      return gs_err_set(err, GS_E_USAGE, "%s%s'%s': no ']' closes the IPv6 address; " EXAMPLE
                        " or [::1]:8000", what, sep, text);
    out->bracketed = true;
    h++;
    hl = (size_t)(rb - h);
    rest = rb + 1;
    if (*rest && *rest != ':')
      return gs_err_set(err, GS_E_USAGE, "%s%s'%s': expected ':PORT' after ']', e.g. [::1]:8000",
                        what, sep, text);
  } else {
    const char *colon = strchr(h, ':');
    if (colon && strchr(colon + 1, ':'))
      return gs_err_set(err, GS_E_USAGE, "%s%s'%s': an IPv6 address goes in brackets, e.g. "
                        "[::1]:8000", what, sep, text);
    hl = colon ? (size_t)(colon - h) : strlen(h);
    rest = h + hl;
  }
  if (hl >= sizeof(out->host))
    return gs_err_set(err, GS_E_USAGE, "%s%s'%.40s...': the host is longer than %zu bytes", what,
                      sep, text, sizeof(out->host) - 1);
  if (!host_ok(h, hl, out->bracketed) || (out->bracketed && !hl))
    return gs_err_set(err, GS_E_USAGE, "%s%s'%s': '%.*s' is not a host name or address; "
                      EXAMPLE, what, sep, text, (int)hl, h);
  if (!hl && (flags & GS_HOSTPORT_HOST_REQUIRED))
    return gs_err_set(err, GS_E_USAGE, "%s%s'%s': no host before the port; give HOST:PORT, " EXAMPLE, what, sep,
                      text);
  memcpy(out->host, h, hl);
  out->host[hl] = 0;
  if (!*rest) {
    if (!(flags & GS_HOSTPORT_PORT_OPTIONAL))
      return gs_err_set(err, GS_E_USAGE, "%s%s'%s': expected HOST:PORT, " EXAMPLE, what, sep,
                        text);
    out->port = 0;
    out->has_port = false;
    return 0;
  }
  out->has_port = true;
  return port_of(err, what, text, rest + 1, flags, &out->port);
}
