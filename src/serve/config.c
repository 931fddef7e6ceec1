/* config.c: reads `gpuslice serve -f serve.yaml`: a flat map whose keys are
 * the serve command's long options (listen, replicas, policy...), plus the
 * worker command as a list and its environment as a map. libyaml builds
 * the document; this file checks its shape strictly (unknown or repeated
 * keys, wrong kinds) and keeps each value's line, so the command line can
 * validate values with its own option parser and still name the line. */
#include "serve/serve.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

/* Every key but command and env holds one value, as its option would. */
static const char *const scalar_keys[] = {
    "listen",        "gpus",          "replicas",      "policy",       "log-dir",
    "worker-timeout", "max-inflight", "drain-timeout", "port-base",    "ephemeral-ports",
    "admin-listen",  "admin-token",   "admin-token-file", "ready-path",
    "max-conns",     "latency-budget", "slices",       "grow-profile", "scale-window",
    "scale-cooldown", "shrink-below", "scale-state"};

struct ctx {
  struct gs_err *err;
  const char *origin;
  yaml_document_t *doc;
  struct gs_serve_file *f;
};

static int bad(const struct ctx *c, const yaml_node_t *n, const char *fmt, ...) GS_PRINTF(3, 4);
static int bad(const struct ctx *c, const yaml_node_t *n, const char *fmt, ...)
{
  char what[GS_ERR_MSG_SIZE];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof(what), fmt, ap);
  va_end(ap);
  return gs_err_set(c->err, GS_E_INVALID_ARGUMENT, "%s:%lu: %s", c->origin,
                    n ? (unsigned long)n->start_mark.line + 1 : 1ul, what);
}

static const char *scalar(const yaml_node_t *n)
{
  return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static const char *kind_of(const yaml_node_t *n)
{
  if (!n)
    return "nothing";
  if (n->type == YAML_SCALAR_NODE)
    return "a value";
  return n->type == YAML_SEQUENCE_NODE ? "a list" : "a map";
}

static const yaml_node_t *node(const struct ctx *c, int id)
{
  return yaml_document_get_node(c->doc, id);
}

/* A key of map that appears before pair p too. */
static bool repeated(const struct ctx *c, const yaml_node_t *map, const yaml_node_pair_t *p)
{
  const char *key = scalar(node(c, p->key));
  for (const yaml_node_pair_t *q = map->data.mapping.pairs.start; q < p; q++)
    if (scalar(node(c, q->key)) && strcmp(scalar(node(c, q->key)), key) == 0)
      return true;
  return false;
}

static int command(const struct ctx *c, const yaml_node_t *v)
{
  size_t n;
  if (!v || v->type != YAML_SEQUENCE_NODE)
    return bad(c, v, "command: expected a list (the program, then its arguments), found %s",
               kind_of(v));
  n = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
  if (!n)
    return bad(c, v, "command: the list is empty; give at least the program");
  if (!(c->f->command = calloc(n + 1, sizeof(char *))))
    return gs_err_set(c->err, GS_E_NO_MEMORY, "%s: out of memory", c->origin);
  for (size_t i = 0; i < n; i++) {
    const yaml_node_t *item = node(c, v->data.sequence.items.start[i]);
    const char *s = scalar(item);
    if (!s)
      return bad(c, item, "command[%zu]: expected a value, found %s", i, kind_of(item));
    if (!(c->f->command[i] = strdup(s)))
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

static int env(const struct ctx *c, const yaml_node_t *v)
{
  size_t n, k = 0;
  if (!v || v->type != YAML_MAPPING_NODE)
    return bad(c, v, "env: expected a map of NAME: value, found %s", kind_of(v));
  n = (size_t)(v->data.mapping.pairs.top - v->data.mapping.pairs.start);
  if (!(c->f->env = calloc(n + 1, sizeof(char *))))
    return gs_err_set(c->err, GS_E_NO_MEMORY, "%s: out of memory", c->origin);
  for (yaml_node_pair_t *p = v->data.mapping.pairs.start; p < v->data.mapping.pairs.top; p++) {
    const yaml_node_t *kn = node(c, p->key), *vn = node(c, p->value);
    const char *name = scalar(kn), *val = scalar(vn);
    if (!name || !env_name_ok(name))
      return bad(c, kn, "env: '%.40s' is not a variable name (letters, digits, '_')",
                 name ? name : kind_of(kn));
    if (repeated(c, v, p))
      return bad(c, kn, "env: '%s' appears twice", name);
    if (!val)
      return bad(c, vn, "env.%s: expected a value, found %s", name, kind_of(vn));
    if (asprintf(&c->f->env[k++], "%s=%s", name, val) < 0) {
      c->f->env[--k] = NULL;
      return gs_err_set(c->err, GS_E_NO_MEMORY, "%s: out of memory", c->origin);
    }
  }
  return 0;
}

static int option(const struct ctx *c, const char *key, const yaml_node_t *k, const yaml_node_t *v)
{
  struct gs_serve_file_opt *o = &c->f->opts[c->f->nopts];
  const char *s = scalar(v);
  if (!s || !*s)
    return bad(c, v ? v : k, "%s: expected a value, found %s", key,
               s ? "an empty value" : kind_of(v));
  o->key = key;
  o->line = (unsigned)v->start_mark.line + 1;
  if (!(o->value = strdup(s)))
    return gs_err_set(c->err, GS_E_NO_MEMORY, "%s: out of memory", c->origin);
  c->f->nopts++;
  return 0;
}

static int root(const struct ctx *c, const yaml_node_t *map)
{
  if (!map || map->type != YAML_MAPPING_NODE)
    return bad(c, map, "expected a map of serve options (listen:, command:, ...), found %s",
               kind_of(map));
  if (!(c->f->opts = calloc(GS_NITEMS(scalar_keys), sizeof(*c->f->opts))))
    return gs_err_set(c->err, GS_E_NO_MEMORY, "%s: out of memory", c->origin);
  for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
    const yaml_node_t *k = node(c, p->key), *v = node(c, p->value);
    const char *key = scalar(k);
    size_t i = 0;
    int rc;
    if (!key)
      return bad(c, k, "expected a name as key, found %s", kind_of(k));
    if (repeated(c, map, p))
      return bad(c, k, "'%s' appears twice", key);
    if (strcmp(key, "command") == 0)
      rc = command(c, v);
    else if (strcmp(key, "env") == 0)
      rc = env(c, v);
    else {
      while (i < GS_NITEMS(scalar_keys) && strcmp(scalar_keys[i], key) != 0)
        i++;
      if (i == GS_NITEMS(scalar_keys))
        return bad(c, k, "unexpected key '%.60s' (allowed: the long options of `gpuslice serve` "
                   "without dashes, e.g. listen, replicas, policy; and command, env)", key);
      rc = option(c, scalar_keys[i], k, v);
    }
    if (rc)
      return rc;
  }
  return 0;
}

int gs_serve_file_parse(struct gs_err *err, const char *origin, const char *text, size_t len,
                        struct gs_serve_file **out)
{
  yaml_parser_t parser;
  yaml_document_t doc;
  struct gs_serve_file *f = calloc(1, sizeof(*f));
  struct ctx c = {.err = err, .origin = origin, .doc = &doc, .f = f};
  int rc;
  *out = NULL;
  if (!f || !yaml_parser_initialize(&parser)) {
    free(f);
    return gs_err_set(err, GS_E_NO_MEMORY, "%s: out of memory", origin);
  }
  yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
  if (!yaml_parser_load(&parser, &doc)) {
    rc = gs_err_set(err, GS_E_INVALID_ARGUMENT, "%s:%lu: not valid YAML: %s%s%s", origin,
                    (unsigned long)parser.problem_mark.line + 1,
                    parser.problem ? parser.problem : "syntax error", parser.context ? " " : "",
                    parser.context ? parser.context : "");
    yaml_parser_delete(&parser);
    free(f);
    return rc;
  }
  rc = root(&c, yaml_document_get_root_node(&doc));
  yaml_document_delete(&doc);
  yaml_parser_delete(&parser);
  if (rc) {
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
