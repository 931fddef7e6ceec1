/* SPDX-License-Identifier: Apache-2.0 */
/* emu_spec.c: what --emulate names, "model[:count],...[,seed=WORD][@driver]":
 * parsing it into boards, a seed and a driver, checking each board has MIG on that driver, and
 * building a fresh machine of it. Knows geometry and the state's shape, not
 * NVML's semantics (emu.c) nor the file (emu_state.c). */
#include "backend/emu_state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* "model[:count]": appends count boards. */
static int parse_item(struct gs_err *err, const char *spec, char *item, unsigned max,
                      struct gs__emu_machine *out)
{
  char *colon = strchr(item, ':'), *end = NULL;
  unsigned long count = 1;
  const struct gs_geom_sku *sku;
  if (colon) {
    *colon = 0;
    count = strtoul(colon + 1, &end, 10);
    if (!colon[1] || *end || count == 0 || count > max)
      return gs_err_set(err, GS_E_INVALID_ARGUMENT,
                        "--emulate '%s': the count after ':' must be 1..%u (e.g. a100-40gb:8)",
                        spec, max);
  }
  if (!(sku = gs_geom_sku_find(item))) {
    char hint[512];
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "--emulate '%s': unknown GPU model '%s'; %s",
                      spec, item, gs_geom_model_hint(item, hint, sizeof(hint)));
  }
  if (out->n + count > max)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "--emulate '%s': at most %u GPUs", spec, max);
  while (count--)
    out->sku[out->n++] = sku;
  return 0;
}

/* "seed=WORD": the machine's part of its UUIDs; at most one. */
static int parse_seed(struct gs_err *err, const char *spec, const char *word,
                      struct gs__emu_machine *out)
{
  size_t len = strlen(word);
  if (out->seed[0] || len == 0 || len >= sizeof(out->seed) ||
      strspn(word, GS__EMU_SEED_CHARS) != len)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT,
                      "--emulate '%.80s': give one seed=WORD of 1 to %zu letters, digits, '.', '_' "
                      "or '-' (e.g. a100-40gb:2,seed=node1)",
                      spec, sizeof(out->seed) - 1);
  memcpy(out->seed, word, len + 1);
  return 0;
}

/* A model without MIG on the machine's driver cannot be emulated there. */
int gs__emu_machine_check(struct gs_err *err, const struct gs__emu_machine *m)
{
  for (unsigned i = 0; i < m->n; i++) {
    const struct gs_geom_model *mod = m->sku[i]->model;
    if (m->driver.code < mod->mig_since)
      return gs_err_set(err, GS_E_INVALID_ARGUMENT,
                        "%s has no MIG on driver %s: it needs %u.%u.%02u or later (branch %u)",
                        m->sku[i]->key, m->driver.version, mod->mig_since / 1000000u,
                        mod->mig_since / 1000u % 1000u, mod->mig_since % 1000u,
                        mod->mig_since / 1000000u);
  }
  return 0;
}

/* "model[:count],...[,seed=WORD][@driver]"; no driver: the newest known. */
int gs__emu_machine_parse(struct gs_err *err, const char *spec, unsigned max,
                          struct gs__emu_machine *out)
{
  char buf[512], *save = NULL, *item, *at;
  int rc;
  memset(out, 0, sizeof(*out));
  if (!spec || !*spec)
    spec = "a100-40gb";
  if (strlen(spec) >= sizeof(buf))
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "--emulate value is too long (%zu bytes)",
                      strlen(spec));
  snprintf(buf, sizeof(buf), "%s", spec);
  gs_geom_driver_default(&out->driver);
  if ((at = strchr(buf, '@')) != NULL) {
    struct gs_err derr = {0};
    *at++ = 0;
    if (strchr(at, '@') || strchr(at, ','))
      return gs_err_set(err, GS_E_INVALID_ARGUMENT,
                        "--emulate '%s': one driver per machine, at the end (a100-40gb:8@535)",
                        spec);
    if (gs_geom_driver_parse(&derr, at, &out->driver) != 0)
      return gs_err_set(err, GS_E_INVALID_ARGUMENT, "--emulate '%s': %s", spec, derr.msg);
  }
  for (item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save))
    if ((rc = strncmp(item, "seed=", 5) == 0 ? parse_seed(err, spec, item + 5, out)
                                              : parse_item(err, spec, item, max, out)) != 0)
      return rc;
  if (out->n == 0)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "--emulate '%s' names no GPU", spec);
  return gs__emu_machine_check(err, out);
}

int gs_emu_parse_spec(struct gs_err *err, const char *spec, const struct gs_geom_model *models[],
                      unsigned max)
{
  struct gs__emu_machine m;
  int rc = gs__emu_machine_parse(err, spec, max, &m);
  if (rc)
    return rc;
  for (unsigned i = 0; i < m.n; i++)
    models[i] = m.sku[i]->model;
  return (int)m.n;
}

/* A fresh machine (MIG off, no instances) of these boards and driver. */
void gs__emu_machine_init(struct gs__emu_state *st, const struct gs__emu_machine *m)
{
  const struct gs_geom_model *models[GS_BACKEND_MAX_GPUS];
  for (unsigned i = 0; i < m->n; i++)
    models[i] = gs_geom_model_at(m->sku[i]->model, m->driver.code);
  gs__emu_state_init(st, models, m->n);
  st->driver = m->driver;
  memcpy(st->seed, m->seed, sizeof(st->seed));
  for (unsigned i = 0; i < m->n; i++)
    st->gpu[i].sku = m->sku[i];
}

bool gs__emu_machine_same(const struct gs__emu_state *st, const struct gs__emu_machine *m)
{
  /* a spec without a seed names the machine whatever its seed */
  if (st->ngpu != m->n || st->driver.code != m->driver.code ||
      (m->seed[0] && strcmp(m->seed, st->seed) != 0))
    return false;
  for (unsigned i = 0; i < m->n; i++)
    if (st->gpu[i].sku != m->sku[i])
      return false;
  return true;
}
