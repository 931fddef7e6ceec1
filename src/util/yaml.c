/* SPDX-License-Identifier: Apache-2.0 */
/* yaml.c: the strict-reading helpers every YAML parser shares (layout configs,
 * planner inputs, serve files): load a document with libyaml, check kinds,
 * typed scalars, maps with a fixed set of keys and no repeats, and errors that
 * name the file, the line and the place. Knows nothing of what is read. */
#include "util/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

int gs_yaml_bad(const struct gs_yaml *y, const yaml_node_t *n, const char *where, const char *fmt, ...)
{
  char what[GS_ERR_MSG_SIZE];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof(what), fmt, ap);
  va_end(ap);
  return gs_err_set(y->err, GS_E_INVALID_ARGUMENT, "%s:%u: %s%s%s", y->origin, gs_yaml_line(n),
                    where ? where : "", where && *where ? ": " : "", what);
}

unsigned gs_yaml_line(const yaml_node_t *n)
{
  return n ? (unsigned)n->start_mark.line + 1 : 1;
}

const char *gs_yaml_scalar(const yaml_node_t *n)
{
  return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

const char *gs_yaml_kind(const yaml_node_t *n)
{
  if (!n)
    return "nothing";
  return n->type == YAML_SCALAR_NODE ? "a value" : n->type == YAML_SEQUENCE_NODE ? "a list" : "a map";
}

bool gs_yaml_is_list(const yaml_node_t *n)
{
  return n && n->type == YAML_SEQUENCE_NODE;
}

bool gs_yaml_is_map(const yaml_node_t *n)
{
  return n && n->type == YAML_MAPPING_NODE;
}

unsigned gs_yaml_seq_len(const yaml_node_t *n)
{
  return gs_yaml_is_list(n) ? (unsigned)(n->data.sequence.items.top - n->data.sequence.items.start) : 0;
}

const yaml_node_t *gs_yaml_seq_item(const struct gs_yaml *y, const yaml_node_t *n, unsigned i)
{
  return i < gs_yaml_seq_len(n) ? yaml_document_get_node(y->doc, n->data.sequence.items.start[i]) : NULL;
}

unsigned gs_yaml_map_len(const yaml_node_t *n)
{
  return gs_yaml_is_map(n) ? (unsigned)(n->data.mapping.pairs.top - n->data.mapping.pairs.start) : 0;
}

/* ---- typed scalars ---- */

int gs_yaml_get_bool(const struct gs_yaml *y, const yaml_node_t *n, const char *where, bool *out)
{
  const char *v = gs_yaml_scalar(n);
  if (v && (strcmp(v, "true") == 0 || strcmp(v, "True") == 0 || strcmp(v, "yes") == 0))
    *out = true;
  else if (v && (strcmp(v, "false") == 0 || strcmp(v, "False") == 0 || strcmp(v, "no") == 0))
    *out = false;
  else
    return gs_yaml_bad(y, n, where, "expected true or false, found %s%s%s", v ? "'" : gs_yaml_kind(n),
                       v ? v : "", v ? "'" : "");
  return 0;
}

int gs_yaml_get_uint(const struct gs_yaml *y, const yaml_node_t *n, const char *where, unsigned max,
                     unsigned *out)
{
  const char *v = gs_yaml_scalar(n);
  char *end;
  unsigned long x;
  /* strtoul would take "-1" as ULONG_MAX. */
  if (!v || !*v || *v == '-' || *v == '+')
    return gs_yaml_bad(y, n, where, "expected a number from 0 to %u, found %s", max,
                       v && *v ? v : v ? "an empty value" : gs_yaml_kind(n));
  errno = 0;
  x = strtoul(v, &end, 10);
  if (*end || errno || x > max)
    return gs_yaml_bad(y, n, where, "expected a number from 0 to %u, found '%s'", max, v);
  *out = (unsigned)x;
  return 0;
}

int gs_yaml_get_name(const struct gs_yaml *y, const yaml_node_t *n, const char *where, char *out,
                     size_t size)
{
  const char *v = gs_yaml_scalar(n);
  size_t len;
  if (!v || !*v)
    return gs_yaml_bad(y, n, where, "expected a name, found %s", v ? "an empty value" : gs_yaml_kind(n));
  if ((len = strlen(v)) >= size)
    return gs_yaml_bad(y, n, where, "'%.40s...' is too long (at most %zu characters)", v, size - 1);
  memcpy(out, v, len + 1);
  return 0;
}

/* ---- maps ---- */

/* True when list ("a, b, c") holds exactly key. */
static bool list_has(const char *list, const char *key)
{
  size_t klen = strlen(key);
  while (*list) {
    size_t len;
    while (*list == ' ')
      list++;
    len = strcspn(list, ",");
    if (klen && len == klen && strncmp(list, key, klen) == 0)
      return true;
    list += len + (list[len] == ',');
  }
  return false;
}

/* A key of map that appears before pair p too. */
static bool repeated(const struct gs_yaml *y, const yaml_node_t *map, const yaml_node_pair_t *p)
{
  const char *key = gs_yaml_scalar(yaml_document_get_node(y->doc, p->key));
  for (const yaml_node_pair_t *q = map->data.mapping.pairs.start; q < p; q++) {
    const char *other = gs_yaml_scalar(yaml_document_get_node(y->doc, q->key));
    if (other && strcmp(other, key) == 0)
      return true;
  }
  return false;
}

int gs_yaml_each_pair(const struct gs_yaml *y, const yaml_node_t *map, const char *where,
                      const char *allowed, gs_yaml_key_fn fn, void *arg)
{
  if (!gs_yaml_is_map(map))
    return gs_yaml_bad(y, map, where, "expected a map, found %s", gs_yaml_kind(map));
  for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
    const yaml_node_t *k = yaml_document_get_node(y->doc, p->key);
    const char *key = gs_yaml_scalar(k);
    char sub[320];
    int rc;
    if (!key)
      return gs_yaml_bad(y, k, where, "expected a name as key, found %s", gs_yaml_kind(k));
    if (repeated(y, map, p))
      return gs_yaml_bad(y, k, where, "'%s' appears twice", key);
    if (allowed && !list_has(allowed, key))
      return gs_yaml_bad(y, k, where, "unexpected key '%.60s' (allowed: %s)", key, allowed);
    snprintf(sub, sizeof(sub), "%s%s%s", where ? where : "", where && *where ? "." : "", key);
    if ((rc = fn(y, key, yaml_document_get_node(y->doc, p->value), sub, arg)) != 0)
      return rc;
  }
  return 0;
}

const yaml_node_t *gs_yaml_lookup(const struct gs_yaml *y, const yaml_node_t *map, const char *key)
{
  if (!gs_yaml_is_map(map))
    return NULL;
  for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
    const char *k = gs_yaml_scalar(yaml_document_get_node(y->doc, p->key));
    if (k && strcmp(k, key) == 0)
      return yaml_document_get_node(y->doc, p->value);
  }
  return NULL;
}

/* ---- documents ---- */

int gs_yaml_load(struct gs_err *err, const char *origin, const char *text, size_t len,
                 gs_yaml_doc_fn fn, void *user)
{
  yaml_parser_t parser;
  yaml_document_t doc;
  struct gs_yaml y = {.err = err, .origin = origin, .doc = &doc, .user = user};
  int rc;
  if (!yaml_parser_initialize(&parser))
    return gs_err_set(err, GS_E_NO_MEMORY, "%s: out of memory", origin);
  yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
  if (!yaml_parser_load(&parser, &doc)) {
    rc = gs_err_set(err, GS_E_INVALID_ARGUMENT, "%s:%lu: not valid YAML: %s%s%s", origin,
                    (unsigned long)parser.problem_mark.line + 1,
                    parser.problem ? parser.problem : "syntax error", parser.context ? " " : "",
                    parser.context ? parser.context : "");
    yaml_parser_delete(&parser);
    return rc;
  }
  rc = fn(&y, yaml_document_get_root_node(&doc));
  yaml_document_delete(&doc);
  yaml_parser_delete(&parser);
  return rc;
}
