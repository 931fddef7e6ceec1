/* SPDX-License-Identifier: Apache-2.0 */
/* model.c: KServe v2 model inputs for the load generator: the model's
 * metadata (names, datatypes, shapes), shapes fixed by batch size and
 * --shape, input values (random, zero, or perf_analyzer's --input-data JSON)
 * and the infer request text, JSON or binary-tensor encoded. */
#include "bench/internal.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ELEMENTS (1 << 26) /* per input and request: 256 MiB of FP32 */

static const struct {
  const char *name;
  size_t size;
} dtypes[] = {
    {"BOOL", 1}, {"UINT8", 1}, {"INT8", 1},  {"UINT16", 2}, {"INT16", 2}, {"FP16", 2}, {"BF16", 2},
    {"UINT32", 4}, {"INT32", 4}, {"FP32", 4}, {"UINT64", 8}, {"INT64", 8}, {"FP64", 8},
};

size_t gs_bench_dtype_size(const char *dt)
{
  for (size_t i = 0; i < GS_NITEMS(dtypes); i++)
    if (strcmp(dtypes[i].name, dt) == 0)
      return dtypes[i].size;
  return 0;
}

/* ---- metadata ---- */

static int parse_tensor(struct gs_err *err, const char *what, json_t *in, size_t i,
                        struct gs_bench_tensor *t)
{
  const char *name = json_string_value(json_object_get(in, "name"));
  const char *dt = json_string_value(json_object_get(in, "datatype"));
  json_t *shape = json_object_get(in, "shape"), *d;
  size_t k;
  if (!name || !dt || strlen(name) >= sizeof(t->name) || strlen(dt) >= sizeof(t->datatype))
    return gs_err_set(err, GS_E_INVALID_ARGUMENT,
                      "%s: input %zu needs a 'name' and a 'datatype' (strings)", what, i);
  if (!json_is_array(shape) || json_array_size(shape) > GS_BENCH_MAX_DIMS)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT,
                      "%s: input '%s': 'shape' must be an array of at most %d integers", what,
                      name, GS_BENCH_MAX_DIMS);
  strcpy(t->name, name);
  strcpy(t->datatype, dt);
  t->ndims = (unsigned)json_array_size(shape);
  json_array_foreach(shape, k, d) {
    if (!json_is_integer(d) || json_integer_value(d) < -1 || json_integer_value(d) > (1 << 30))
      return gs_err_set(err, GS_E_INVALID_ARGUMENT,
                        "%s: input '%s': dimension %zu must be -1 or a size", what, name, k);
    t->shape[k] = json_integer_value(d);
  }
  return 0;
}

int gs_bench_model_parse(struct gs_err *err, const char *what, const char *text, size_t len,
                         struct gs_bench_model *out)
{
  json_error_t je;
  json_t *doc = json_loadb(text, len, 0, &je), *ins, *in;
  const char *name;
  size_t i;
  int rc = 0;
  memset(out, 0, sizeof(*out));
  if (!json_is_object(doc)) {
    json_decref(doc);
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "%s: model metadata is not a JSON object%s%s",
                      what, doc ? "" : ": ", doc ? "" : je.text);
  }
  name = json_string_value(json_object_get(doc, "name"));
  ins = json_object_get(doc, "inputs");
  if (!json_is_array(ins) || json_array_size(ins) == 0 ||
      json_array_size(ins) > GS_BENCH_MAX_INPUTS)
    rc = gs_err_set(err, GS_E_INVALID_ARGUMENT,
                    "%s: model metadata needs an 'inputs' array of 1 to %d tensors", what,
                    GS_BENCH_MAX_INPUTS);
  snprintf(out->name, sizeof(out->name), "%s", name ? name : "");
  json_array_foreach(ins, i, in) {
    if (rc)
      break;
    rc = parse_tensor(err, what, in, i, &out->inputs[i]);
    out->ninputs = (unsigned)i + 1;
  }
  json_decref(doc);
  return rc;
}

static struct gs_bench_tensor *tensor_find(struct gs_bench_model *m, const char *name, size_t len)
{
  for (unsigned i = 0; i < m->ninputs; i++)
    if (strlen(m->inputs[i].name) == len && strncmp(m->inputs[i].name, name, len) == 0)
      return &m->inputs[i];
  return NULL;
}

/* "name:1,3,224" */
static int apply_shape(struct gs_err *err, struct gs_bench_model *m, const char *spec)
{
  const char *colon = strrchr(spec, ':'), *p;
  struct gs_bench_tensor *t = colon ? tensor_find(m, spec, (size_t)(colon - spec)) : NULL;
  int64_t dims[GS_BENCH_MAX_DIMS];
  unsigned n = 0, off;
  if (!t)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT,
                      "--shape %s: expected INPUT:D1,D2,... naming one of the model's inputs", spec);
  for (p = colon + 1; *p; p++) {
    char *e;
    long v = strtol(p, &e, 10);
    if (e == p || v < 1 || n == GS_BENCH_MAX_DIMS || (*e && *e != ','))
      return gs_err_set(err, GS_E_INVALID_ARGUMENT, "--shape %s: dimensions must be positive "
                        "integers separated by commas", spec);
    dims[n++] = v;
    p = e;
    if (!*p)
      break;
  }
  /* Given with or without the batch dimension (already set from -b). */
  off = n + 1 == t->ndims ? 1 : 0;
  if (n + off != t->ndims)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "--shape %s: input '%s' has %u dimensions",
                      spec, t->name, t->ndims);
  for (unsigned d = 0; d < n; d++) {
    if (t->shape[d + off] != -1 && t->shape[d + off] != dims[d])
      return gs_err_set(err, GS_E_INVALID_ARGUMENT, "--shape %s: dimension %u of '%s' is fixed at "
                        "%lld", spec, d + off, t->name, (long long)t->shape[d + off]);
    t->shape[d + off] = dims[d];
  }
  return 0;
}

int gs_bench_model_fix_shapes(struct gs_err *err, struct gs_bench_model *m, unsigned batch,
                              const char *const *shapes, size_t nshapes)
{
  int rc;
  for (unsigned i = 0; i < m->ninputs; i++) {
    struct gs_bench_tensor *t = &m->inputs[i];
    if (!gs_bench_dtype_size(t->datatype))
      return gs_err_set(err, GS_E_NOT_SUPPORTED, "model '%s': input '%s' has datatype %s, which "
                        "bench cannot generate (numeric and BOOL types only)", m->name, t->name,
                        t->datatype);
    if (t->ndims && t->shape[0] == -1)
      t->shape[0] = batch;
    else if (batch > 1)
      return gs_err_set(err, GS_E_INVALID_ARGUMENT, "model '%s' does not batch (input '%s' has a "
                        "fixed first dimension): use --batch-size 1", m->name, t->name);
  }
  for (size_t s = 0; s < nshapes; s++)
    if ((rc = apply_shape(err, m, shapes[s])) != 0)
      return rc;
  for (unsigned i = 0; i < m->ninputs; i++) {
    double n = 1;
    for (unsigned d = 0; d < m->inputs[i].ndims; d++) {
      if (m->inputs[i].shape[d] < 1)
        return gs_err_set(err, GS_E_INVALID_ARGUMENT, "model '%s': input '%s' has a variable "
                          "dimension %u: give it with --shape %s:D1,D2,...", m->name,
                          m->inputs[i].name, d, m->inputs[i].name);
      n *= (double)m->inputs[i].shape[d];
    }
    if (n > MAX_ELEMENTS)
      return gs_err_set(err, GS_E_INVALID_ARGUMENT, "model '%s': input '%s' would have %.0f "
                        "elements; bench sends at most %d per input", m->name, m->inputs[i].name,
                        n, MAX_ELEMENTS);
  }
  return 0;
}

static size_t elements(const struct gs_bench_tensor *t)
{
  size_t n = 1;
  for (unsigned d = 0; d < t->ndims; d++)
    n *= (size_t)t->shape[d];
  return n;
}

/* ---- values ---- */

void gs_bench_samples_free(struct gs_bench_samples *s)
{
  for (size_t i = 0; s->s && i < s->n; i++)
    for (unsigned k = 0; k < GS_BENCH_MAX_INPUTS; k++)
      free(s->s[i].data[k]);
  free(s->s);
  s->s = NULL;
  s->n = 0;
}

static uint64_t next_rand(uint64_t *x)
{
  *x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
  return *x;
}

static void random_element(const char *dt, unsigned char *p, uint64_t r)
{
  size_t sz = gs_bench_dtype_size(dt);
  double u = (double)(r >> 11) * (1.0 / 9007199254740992.0);
  if (strcmp(dt, "FP32") == 0) {
    float f = (float)u;
    memcpy(p, &f, 4);
  } else if (strcmp(dt, "FP64") == 0) {
    memcpy(p, &u, 8);
  } else if (strcmp(dt, "FP16") == 0 || strcmp(dt, "BF16") == 0) {
    uint16_t bits = (uint16_t)(r % (dt[0] == 'F' ? 0x3C00u : 0x3F80u)); /* [0, 1) */
    memcpy(p, &bits, 2);
  } else {
    uint64_t v = strcmp(dt, "BOOL") == 0 ? r % 2 : r % 100;
    memcpy(p, &v, sz); /* little-endian: the low bytes */
  }
}

static int samples_alloc(struct gs_err *err, const struct gs_bench_model *m, size_t n,
                         struct gs_bench_samples *out)
{
  out->n = 0;
  if (!(out->s = calloc(n, sizeof(*out->s))))
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory for %zu input samples", n);
  out->n = n;
  for (size_t i = 0; i < n; i++)
    for (unsigned k = 0; k < m->ninputs; k++) {
      out->s[i].len[k] = elements(&m->inputs[k]) * gs_bench_dtype_size(m->inputs[k].datatype);
      if (!(out->s[i].data[k] = calloc(1, out->s[i].len[k] + 1))) {
        gs_bench_samples_free(out);
        return gs_err_set(err, GS_E_NO_MEMORY, "out of memory for input '%s'", m->inputs[k].name);
      }
    }
  return 0;
}

int gs_bench_samples_fill(struct gs_err *err, const struct gs_bench_model *m, bool zero,
                          uint64_t seed, struct gs_bench_samples *out)
{
  uint64_t x = seed | 1;
  int rc = samples_alloc(err, m, 1, out);
  for (unsigned k = 0; rc == 0 && !zero && k < m->ninputs; k++) {
    size_t sz = gs_bench_dtype_size(m->inputs[k].datatype);
    for (size_t e = 0; e < out->s[0].len[k] / sz; e++)
      random_element(m->inputs[k].datatype, out->s[0].data[k] + e * sz, next_rand(&x));
  }
  return rc;
}

/* One JSON value as the datatype's bytes. */
static bool put_value(const char *dt, json_t *v, unsigned char *p)
{
  size_t sz = gs_bench_dtype_size(dt);
  if (json_is_boolean(v) && strcmp(dt, "BOOL") == 0) {
    *p = json_is_true(v);
  } else if (!json_is_number(v)) {
    return false;
  } else if (strcmp(dt, "FP32") == 0) {
    float f = (float)json_number_value(v);
    memcpy(p, &f, 4);
  } else if (strcmp(dt, "FP64") == 0) {
    double d = json_number_value(v);
    memcpy(p, &d, 8);
  } else if (strcmp(dt, "FP16") == 0 || strcmp(dt, "BF16") == 0) {
    return false; /* half floats from JSON: not converted */
  } else {
    int64_t i;
    if (!json_is_integer(v))
      return false;
    i = json_integer_value(v);
    memcpy(p, &i, sz);
  }
  return true;
}

/* Flattens nested arrays into t's bytes; returns elements written or -1. */
static long put_values(const struct gs_bench_tensor *t, json_t *v, unsigned char *p, size_t max,
                       size_t at, int depth)
{
  size_t sz = gs_bench_dtype_size(t->datatype), i;
  json_t *e;
  long n = 0, k;
  if (!json_is_array(v)) {
    if (at >= max || !put_value(t->datatype, v, p + at * sz))
      return -1;
    return 1;
  }
  if (depth > GS_BENCH_MAX_DIMS)
    return -1;
  json_array_foreach(v, i, e) {
    if ((k = put_values(t, e, p, max, at + (size_t)n, depth + 1)) < 0)
      return -1;
    n += k;
  }
  return n;
}

static int sample_input(struct gs_err *err, const char *what, size_t i, json_t *entry,
                        const struct gs_bench_tensor *t, struct gs_bench_sample *s, unsigned k)
{
  json_t *v = json_object_get(entry, t->name);
  size_t want = elements(t);
  long got;
  if (json_is_object(v))
    v = json_object_get(v, "content");
  if (!v)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "%s: data entry %zu has no values for input "
                      "'%s'", what, i, t->name);
  got = put_values(t, v, s->data[k], want, 0, 0);
  if (got < 0)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "%s: data entry %zu, input '%s': expected at "
                      "most %zu %s values (numbers in nested or flat arrays)", what, i, t->name,
                      want, t->datatype);
  if ((size_t)got != want)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "%s: data entry %zu, input '%s': %ld values, "
                      "the shape needs %zu (set variable dimensions with --shape)", what, i,
                      t->name, got, want);
  return 0;
}

int gs_bench_samples_parse(struct gs_err *err, const char *what, const char *text, size_t len,
                           const struct gs_bench_model *m, struct gs_bench_samples *out)
{
  json_error_t je;
  json_t *doc = json_loadb(text, len, 0, &je), *data = json_object_get(doc, "data"), *entry;
  size_t i;
  int rc;
  out->s = NULL, out->n = 0;
  if (!json_is_array(data) || json_array_size(data) == 0) {
    rc = gs_err_set(err, GS_E_INVALID_ARGUMENT, "%s: expected {\"data\": [{\"INPUT\": [values]}, "
                    "...]} as perf_analyzer's --input-data%s%s", what, doc ? "" : ": ",
                    doc ? "" : je.text);
    json_decref(doc);
    return rc;
  }
  if ((rc = samples_alloc(err, m, json_array_size(data), out)) != 0) {
    json_decref(doc);
    return rc;
  }
  json_array_foreach(data, i, entry) {
    for (unsigned k = 0; rc == 0 && k < m->ninputs; k++)
      rc = json_is_object(entry)
               ? sample_input(err, what, i, entry, &m->inputs[k], &out->s[i], k)
               : gs_err_set(err, GS_E_INVALID_ARGUMENT, "%s: data entry %zu is not an object",
                            what, i);
    if (rc)
      break;
  }
  json_decref(doc);
  if (rc)
    gs_bench_samples_free(out);
  return rc;
}

/* ---- the request ---- */

static json_t *element_json(const char *dt, const unsigned char *p)
{
  if (strcmp(dt, "FP32") == 0) {
    float f;
    memcpy(&f, p, 4);
    return json_real(f);
  }
  if (strcmp(dt, "FP64") == 0) {
    double d;
    memcpy(&d, p, 8);
    return json_real(d);
  }
  if (strcmp(dt, "BOOL") == 0)
    return json_boolean(*p);
  {
    size_t sz = gs_bench_dtype_size(dt);
    int64_t v = 0;
    memcpy(&v, p, sz);
    if (dt[0] == 'I' && sz < 8 && (v >> (sz * 8 - 1)) & 1) /* sign-extend INT8..INT32 */
      v |= -((int64_t)1 << (sz * 8));
    return json_integer(v);
  }
}

static json_t *input_json(const struct gs_bench_tensor *t, const unsigned char *data, size_t len,
                          bool binary)
{
  json_t *shape = json_array(), *in;
  for (unsigned d = 0; d < t->ndims; d++)
    json_array_append_new(shape, json_integer(t->shape[d]));
  in = json_pack("{s:s, s:s, s:o}", "name", t->name, "datatype", t->datatype, "shape", shape);
  if (binary) {
    json_object_set_new(in, "parameters", json_pack("{s:I}", "binary_data_size", (json_int_t)len));
  } else {
    size_t sz = gs_bench_dtype_size(t->datatype);
    json_t *a = json_array();
    for (size_t e = 0; e < len / sz; e++)
      json_array_append_new(a, element_json(t->datatype, data + e * sz));
    json_object_set_new(in, "data", a);
  }
  return in;
}

int gs_bench_infer_request(struct gs_err *err, const struct gs_bench_url *u,
                           const struct gs_bench_model *m, const struct gs_bench_sample *s,
                           bool binary_in, bool binary_out, const char *headers, char **out,
                           size_t *len)
{
  json_t *doc = json_object(), *ins = json_array();
  size_t bin = 0, jl, hl, off;
  char head[4096], *js;
  for (unsigned k = 0; k < m->ninputs; k++) {
    if (!binary_in && (m->inputs[k].datatype[0] == 'B' || m->inputs[k].datatype[0] == 'F') &&
        gs_bench_dtype_size(m->inputs[k].datatype) == 2) {
      json_decref(doc), json_decref(ins);
      return gs_err_set(err, GS_E_NOT_SUPPORTED, "input '%s' is %s: use --input-tensor-format "
                        "binary", m->inputs[k].name, m->inputs[k].datatype);
    }
    json_array_append_new(ins, input_json(&m->inputs[k], s->data[k], s->len[k], binary_in));
    bin += binary_in ? s->len[k] : 0;
  }
  json_object_set_new(doc, "inputs", ins);
  if (binary_out)
    json_object_set_new(doc, "parameters", json_pack("{s:b}", "binary_data_output", 1));
  js = json_dumps(doc, JSON_COMPACT);
  json_decref(doc);
  if (!js)
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory building the request");
  jl = strlen(js);
  hl = (size_t)snprintf(head, sizeof(head), "POST %s/v2/models/%s%s%s/infer HTTP/1.1\r\nHost: %s:%s\r\n"
                        "Content-Type: %s\r\n%s", u->prefix, m->name, m->version[0] ? "/versions/" : "",
                        m->version, u->host, u->port,
                        binary_in ? "application/octet-stream" : "application/json",
                        headers ? headers : "");
  if (hl >= sizeof(head) - 128) { /* room left for the two lengths */
    free(js);
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "the request's head is longer than %zu bytes: "
                      "fewer or shorter -H headers", sizeof(head) - 128);
  }
  if (binary_in)
    hl += (size_t)snprintf(head + hl, sizeof(head) - hl, "Inference-Header-Content-Length: %zu\r\n", jl);
  hl += (size_t)snprintf(head + hl, sizeof(head) - hl, "Content-Length: %zu\r\n\r\n", jl + bin);
  if (hl >= sizeof(head) || !(*out = malloc(hl + jl + bin + 1))) {
    free(js);
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory building the request");
  }
  memcpy(*out, head, hl);
  memcpy(*out + hl, js, jl);
  off = hl + jl;
  free(js);
  for (unsigned k = 0; binary_in && k < m->ninputs; k++) {
    memcpy(*out + off, s->data[k], s->len[k]);
    off += s->len[k];
  }
  *len = off;
  return 0;
}
