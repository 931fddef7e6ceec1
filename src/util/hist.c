/* SPDX-License-Identifier: Apache-2.0 */
/* hist.c: the latency histogram (util.h, gs_hist_): log-linear buckets of
 * fixed relative width, so memory is bounded whatever the run's length and
 * percentiles keep 3 significant digits. Generic: the load generator and the
 * proxy's metrics both use it; nothing here knows what it measures. */
#include "util/util.h"

#include <string.h>

#define SUB (1u << GS_HIST_SUB_BITS)
#define TOP ((UINT64_C(1) << GS_HIST_MAX_BITS) - 1)

void gs_hist_reset(struct gs_hist *h)
{
  memset(h, 0, sizeof(*h));
  h->min = UINT64_MAX;
}

/* Below 2*SUB a bucket per value; above, the value's top GS_HIST_SUB_BITS+1
 * bits pick the bucket: shift e = msb - SUB_BITS leaves a mantissa in
 * [SUB, 2*SUB), and each shift adds SUB buckets. */
size_t gs_hist_index(uint64_t v)
{
  unsigned e;
  if (v > TOP)
    v = TOP;
  if (v < 2 * SUB)
    return (size_t)v;
  e = (unsigned)(63 - __builtin_clzll(v)) - GS_HIST_SUB_BITS;
  return (size_t)e * SUB + (size_t)(v >> e);
}

void gs_hist_bucket_range(size_t i, uint64_t *low, uint64_t *high)
{
  unsigned e;
  if (i < 2 * SUB) {
    *low = *high = i;
    return;
  }
  e = (unsigned)(i / SUB) - 1;
  *low = (uint64_t)(i - (size_t)e * SUB) << e;
  *high = *low + (UINT64_C(1) << e) - 1;
}

void gs_hist_record_n(struct gs_hist *h, uint64_t v, uint64_t n)
{
  if (!n)
    return;
  if (v > TOP)
    h->clamped += n;
  h->buckets[gs_hist_index(v)] += n;
  h->count += n;
  h->sum += (double)v * (double)n;
  if (v < h->min)
    h->min = v;
  if (v > h->max)
    h->max = v;
}

void gs_hist_record(struct gs_hist *h, uint64_t v)
{
  gs_hist_record_n(h, v, 1);
}

void gs_hist_add(struct gs_hist *dst, const struct gs_hist *src)
{
  if (!src->count)
    return;
  for (size_t i = 0; i < GS_HIST_BUCKETS; i++)
    dst->buckets[i] += src->buckets[i];
  dst->count += src->count;
  dst->clamped += src->clamped;
  dst->sum += src->sum;
  if (src->min < dst->min)
    dst->min = src->min;
  if (src->max > dst->max)
    dst->max = src->max;
}

uint64_t gs_hist_percentile(const struct gs_hist *h, double p)
{
  uint64_t rank, seen = 0, low, high, mid;
  double r;
  if (!h->count)
    return 0;
  if (p <= 0)
    return h->min;
  if (p >= 100)
    return h->max;
  r = p / 100.0 * (double)h->count;
  rank = (uint64_t)r;
  if ((double)rank < r)
    rank++;
  if (rank < 1)
    rank = 1;
  for (size_t i = 0; i < GS_HIST_BUCKETS; i++) {
    seen += h->buckets[i];
    if (seen < rank)
      continue;
    gs_hist_bucket_range(i, &low, &high);
    mid = low + (high - low) / 2;
    return mid < h->min ? h->min : mid > h->max ? h->max : mid;
  }
  return h->max;
}

double gs_hist_mean(const struct gs_hist *h)
{
  return h->count ? h->sum / (double)h->count : 0.0;
}
