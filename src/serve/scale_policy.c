/* SPDX-License-Identifier: Apache-2.0 */
/* scale_policy.c: the autoscaler's decision rule, apart from any GPU or
 * process so the tests can script load through it: a sliding window of the
 * proxy's latency histogram (snapshots of its cumulative bucket counts, the
 * window is the newest minus the oldest), a percentile read from it, and the
 * grow / shrink / hold rule with hysteresis and cool-down (docs/autoscale.md);
 * plus the parsers of the autoscaler's option values. */
#include "serve/serve.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void gs_scale_config_defaults(struct gs_scale_config *cfg)
{
  if (cfg->percentile <= 0)
    cfg->percentile = 90;
  if (!cfg->budget_us)
    cfg->budget_us = 50000;
  if (!cfg->max_slices)
    cfg->max_slices = cfg->min_slices > 7 ? cfg->min_slices : 7;
  if (!cfg->window_us)
    cfg->window_us = 10000000;
  if (!cfg->cooldown_us)
    cfg->cooldown_us = 10000000;
  if (cfg->shrink_below <= 0)
    cfg->shrink_below = 0.75;
  if (!cfg->min_requests)
    cfg->min_requests = 20;
  if (!cfg->tick_us)
    cfg->tick_us = 250000;
  if (!cfg->drain_us)
    cfg->drain_us = 10000000;
}

/* Every duration's syntax (gs_duration_parse); these never took a bare number. */
int gs_scale_parse_duration(struct gs_err *err, const char *what, const char *s, uint64_t *us)
{
  return gs_duration_parse(err, what, s, 0, 1, 86400000000ull, us);
}

int gs_scale_parse_budget(struct gs_err *err, const char *s, double *pct, uint64_t *us)
{
  const char *eq = strchr(s, '=');
  char *end;
  double p;
  if (s[0] != 'p' || !eq)
    goto bad;
  p = strtod(s + 1, &end);
  if (end != eq || end == s + 1 || !(p >= 1 && p < 100))
    goto bad;
  *pct = p;
  return gs_scale_parse_duration(err, "--latency-budget", eq + 1, us);
bad:
  return gs_err_set(err, GS_E_INVALID_ARGUMENT,
                    "--latency-budget %.40s: expected pNN=DURATION, e.g. p90=50ms (percentile "
                    "1 to 99.9)", s);
}

int gs_scale_parse_range(struct gs_err *err, const char *s, unsigned *min, unsigned *max)
{
  char *end;
  unsigned long a = strtoul(s, &end, 10), b;
  if (end == s || strncmp(end, "..", 2) != 0 || !(end[2] >= '0' && end[2] <= '9'))
    goto bad;
  b = strtoul(end + 2, &end, 10);
  if (*end || a > b || b == 0 || b > 4096)
    goto bad;
  *min = (unsigned)a;
  *max = (unsigned)b;
  return 0;
bad:
  return gs_err_set(err, GS_E_INVALID_ARGUMENT,
                    "--slices %.40s: expected MIN..MAX with 0 <= MIN <= MAX, 1 <= MAX <= 4096, "
                    "e.g. 1..7", s);
}

void gs_scale_policy_init(struct gs_scale_policy *p, const struct gs_scale_config *cfg,
                          uint64_t now_us)
{
  memset(p, 0, sizeof(*p));
  p->cfg = *cfg;
  gs_scale_config_defaults(&p->cfg);
  p->since_us = now_us;
}

static struct gs_scale_snap *snap_at(struct gs_scale_policy *p, size_t i)
{
  return &p->snap[(p->first + i) % GS_SCALE_SNAPS];
}

void gs_scale_observe(struct gs_scale_policy *p, uint64_t now_us, const uint64_t *le_us,
                      const uint64_t *cum, size_t nb)
{
  struct gs_scale_snap *s;
  p->nb = nb < GS_SCALE_BUCKETS ? nb : GS_SCALE_BUCKETS;
  memcpy(p->le_us, le_us, (p->nb - 1) * sizeof(*le_us));
  /* Keep one snapshot at or before the window's start, drop older ones. */
  while (p->n > 1 && snap_at(p, 1)->t_us + p->cfg.window_us <= now_us) {
    p->first = (p->first + 1) % GS_SCALE_SNAPS;
    p->n--;
  }
  if (p->n == GS_SCALE_SNAPS) {
    p->first = (p->first + 1) % GS_SCALE_SNAPS;
    p->n--;
  }
  s = snap_at(p, p->n++);
  s->t_us = now_us;
  memcpy(s->c, cum, p->nb * sizeof(*cum));
}

/* The percentile of the window, linear within its bucket (the proxy's
 * buckets are coarse: 25, 50, 100 ms...); the top bucket reads as twice its
 * lower bound. */
static uint64_t window_pct(const struct gs_scale_policy *p, const uint64_t *d, uint64_t total)
{
  double rank = ceil(p->cfg.percentile / 100.0 * (double)total), seen = 0;
  for (size_t i = 0; i < p->nb; i++) {
    double lo = i ? (double)p->le_us[i - 1] : 0;
    double hi = i + 1 < p->nb ? (double)p->le_us[i] : 2 * lo;
    if (d[i] && seen + (double)d[i] >= rank)
      return (uint64_t)(lo + (hi - lo) * (rank - seen) / (double)d[i]);
    seen += (double)d[i];
  }
  return 0;
}

static void window(struct gs_scale_policy *p, struct gs_scale_decision *d)
{
  uint64_t diff[GS_SCALE_BUCKETS] = {0};
  const struct gs_scale_snap *a, *b;
  d->requests = 0;
  d->pct_us = 0;
  if (p->n < 2)
    return;
  a = snap_at(p, 0);
  b = snap_at(p, p->n - 1);
  for (size_t i = 0; i < p->nb; i++) {
    diff[i] = b->c[i] >= a->c[i] ? b->c[i] - a->c[i] : 0;
    d->requests += diff[i];
  }
  d->pct_us = window_pct(p, diff, d->requests);
}

void gs_scale_decide(struct gs_scale_policy *p, uint64_t now_us, unsigned slices,
                     unsigned pending, struct gs_scale_decision *d)
{
  const struct gs_scale_config *c = &p->cfg;
  bool idle, cool = !p->any_event || now_us >= p->last_event_us + c->cooldown_us;
  bool full = now_us >= p->since_us + c->window_us && p->n >= 2 &&
              p->snap[p->first].t_us + c->window_us <= now_us + c->tick_us;
  window(p, d);
  d->action = GS_SCALE_HOLD;
  idle = d->requests < c->min_requests;
  if (pending) {
    d->why = "a scale event is under way";
    return;
  }
  if (slices < c->min_slices) {
    d->action = GS_SCALE_GROW;
    d->why = "below the minimum slices";
    return;
  }
  if (slices > c->max_slices) {
    d->action = GS_SCALE_SHRINK;
    d->why = "above the maximum slices";
    return;
  }
  if (!full) {
    d->why = "the window is filling";
    return;
  }
  if (!cool) {
    d->why = "cooling down";
    return;
  }
  if (!idle && d->pct_us > c->budget_us) {
    d->action = slices < c->max_slices ? GS_SCALE_GROW : GS_SCALE_HOLD;
    d->why = slices < c->max_slices ? "over budget" : "over budget at the maximum slices";
    return;
  }
  /* Hysteresis: the load of n slices on n - 1 would make the percentile
   * about n / (n - 1) times longer; shrink only if that keeps a margin. */
  if (slices > c->min_slices && slices > 0 &&
      (idle || (slices > 1 && (double)d->pct_us * slices / (slices - 1) <
                                  c->shrink_below * (double)c->budget_us))) {
    d->action = GS_SCALE_SHRINK;
    d->why = idle ? "idle" : "under budget with a slice fewer";
    return;
  }
  d->why = "within budget";
}

void gs_scale_policy_event(struct gs_scale_policy *p, uint64_t now_us)
{
  p->last_event_us = now_us;
  p->any_event = true;
  p->since_us = now_us;
  /* The window starts again: samples before the event measured other slices. */
  if (p->n) {
    p->snap[p->first] = *snap_at(p, p->n - 1);
    p->snap[p->first].t_us = now_us;
    p->n = 1;
  }
}
