/* SPDX-License-Identifier: Apache-2.0 */
/* config.c: reads `gpuslice serve -f serve.yaml`: a flat map whose keys are
 * the serve command's long options (listen, replicas, policy...), plus the
 * worker command as a list and its environment as a map. libyaml builds
 * the document; this file checks its shape strictly (unknown or repeated
 * keys, wrong kinds) and keeps each value's line, so the command line can
 * validate values with its own option parser and still name the line. */
#include "serve/serve.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

/* Every key but command and env holds one value, as its option would. */
static const char *const scalar_keys[] = {
    "listen",        "gpus",          "replicas",      "policy",       "log-dir",
    "worker-timeout", "max-inflight", "drain-timeout", "port-base",    "ephemeral-ports",
    "admin-listen",  "admin-token",   "admin-token-file", "ready-path",
    "max-conns",     "threads",       "grpc-listen",  "latency-budget", "slices",
    "grow-profile",  "scale-window",  "scale-cooldown", "shrink-below", "scale-state",
    "state-dir",     "idle-timeout"};

/* y->user is the serve file being filled. */
static int command(const struct gs_yaml *c, const yaml_node_t *v)
{
  struct gs_serve_file *f = c->user;
  unsigned n = gs_yaml_seq_len(v);
  if (!gs_yaml_is_list(v))
    return gs_yaml_bad(c, v, "command", "expected a list (the program, then its arguments), found %s",
                       gs_yaml_kind(v));
  if (!n)
    return gs_yaml_bad(c, v, "command", "the list is empty; give at least the program");
  if (!(f->command = calloc(n + 1, sizeof(char *))))
    return gs_err_set(c->err, GS_E_NO_MEMORY, "%s: out of memory", c->origin);
  for (unsigned i = 0; i < n; i++) {
    const yaml_node_t *item = gs_yaml_seq_item(c, v, i);
    const char *s = gs_yaml_scalar(item);
    if (!s)
      return gs_yaml_bad(c, item, NULL, "command[%u]: expected a value, found %s", i, gs_yaml_kind(item));
    if (!(f->command[i] = strdup(s)))
      return gs_err_set(c->err, GS_E_NO_MEMORY, "%s: out of memory", c->origin);
  }
  return 0;
}

static bool env_name_ok(const char *s)
{
  if (!*s || (*s >= '0' && *s <= '9'))
    return false;
  for (; *s; s++)
    if (!(*s == '_' || (*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') ||
          (*s >= '0' && *s <= '9')))
      return false;
  return true;
}

static int env_var(const struct gs_yaml *c, const char *name, const yaml_node_t *v, const char *where,
                   void *arg)
{
  struct gs_serve_file *f = c->user;
  size_t *k = arg;
  const char *val = gs_yaml_scalar(v);
  if (!env_name_ok(name))
    return gs_yaml_bad(c, v, "env", "'%.40s' is not a variable name (letters, digits, '_')", name);
  if (!val)
    return gs_yaml_bad(c, v, where, "expected a value, found %s", gs_yaml_kind(v));
  if (asprintf(&f->env[*k], "%s=%s", name, val) < 0) {
    f->env[*k] = NULL;
    return gs_err_set(c->err, GS_E_NO_MEMORY, "%s: out of memory", c->origin);
  }
  (*k)++;
  return 0;
}

static int env(const struct gs_yaml *c, const yaml_node_t *v)
{
  struct gs_serve_file *f = c->user;
  size_t k = 0;
  if (!gs_yaml_is_map(v))
    return gs_yaml_bad(c, v, "env", "expected a map of NAME: value, found %s", gs_yaml_kind(v));
  if (!(f->env = calloc(gs_yaml_map_len(v) + 1, sizeof(char *))))
    return gs_err_set(c->err, GS_E_NO_MEMORY, "%s: out of memory", c->origin);
  return gs_yaml_each_pair(c, v, "env", NULL, env_var, &k);
}

static int option(const struct gs_yaml *c, const char *key, const yaml_node_t *v)
{
  struct gs_serve_file *f = c->user;
  struct gs_serve_file_opt *o = &f->opts[f->nopts];
  const char *s = gs_yaml_scalar(v);
  if (!s || !*s)
    return gs_yaml_bad(c, v, key, "expected a value, found %s", s ? "an empty value" : gs_yaml_kind(v));
  o->key = key;
  o->line = gs_yaml_line(v);
  if (!(o->value = strdup(s)))
    return gs_err_set(c->err, GS_E_NO_MEMORY, "%s: out of memory", c->origin);
  f->nopts++;
  return 0;
}

static int serve_key(const struct gs_yaml *c, const char *key, const yaml_node_t *v, const char *where,
                     void *arg)
{
  size_t i = 0;
  (void)where;
  (void)arg;
  if (strcmp(key, "command") == 0)
    return command(c, v);
  if (strcmp(key, "env") == 0)
    return env(c, v);
  while (strcmp(scalar_keys[i], key) != 0) /* each_pair let only these through */
    i++;
  return option(c, scalar_keys[i], v);
}

/* The allowed keys as gs_yaml_each_pair checks and quotes them ("listen,
 * gpus, ..., command, env"), on the heap: the list grows with the options. */
static char *allowed_keys(void)
{
  size_t size = sizeof("command, env");
  char *out;
  for (size_t i = 0; i < GS_NITEMS(scalar_keys); i++)
    size += strlen(scalar_keys[i]) + 2;
  if (!(out = malloc(size)))
    return NULL;
  out[0] = 0;
  for (size_t i = 0; i < GS_NITEMS(scalar_keys); i++)
    strcat(strcat(out, scalar_keys[i]), ", ");
  return strcat(out, "command, env");
}

static int root(const struct gs_yaml *c, const yaml_node_t *map)
{
  struct gs_serve_file *f = c->user;
  char *allowed;
  int rc;
  if (!gs_yaml_is_map(map))
    return gs_yaml_bad(c, map, NULL, "expected a map of serve options (listen:, command:, ...), found %s",
                       gs_yaml_kind(map));
  if (!(f->opts = calloc(GS_NITEMS(scalar_keys), sizeof(*f->opts))) || !(allowed = allowed_keys()))
    return gs_err_set(c->err, GS_E_NO_MEMORY, "%s: out of memory", c->origin);
  rc = gs_yaml_each_pair(c, map, NULL, allowed, serve_key, NULL);
  free(allowed);
  return rc;
}

int gs_serve_file_parse(struct gs_err *err, const char *origin, const char *text, size_t len,
                        struct gs_serve_file **out)
{
  struct gs_serve_file *f = calloc(1, sizeof(*f));
  int rc;
  *out = NULL;
  if (!f)
    return gs_err_set(err, GS_E_NO_MEMORY, "%s: out of memory", origin);
  if ((rc = gs_yaml_load(err, origin, text, len, root, f)) != 0) {
    gs_serve_file_free(f);
    return rc;
  }
  *out = f;
  return 0;
}

static void free_strv(char **v)
{
  for (size_t i = 0; v && v[i]; i++)
    free(v[i]);
  free(v);
}

void gs_serve_file_free(struct gs_serve_file *f)
{
  if (!f)
    return;
  for (size_t i = 0; i < f->nopts; i++)
    free(f->opts[i].value);
  free(f->opts);
  free_strv(f->command);
  free_strv(f->env);
  free(f);
}
