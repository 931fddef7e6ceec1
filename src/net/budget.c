/* SPDX-License-Identifier: Apache-2.0 */
/* budget.c: a byte budget several threads draw on: the memory serve lets
 * request bodies take while it holds them (the proxy's retry buffers, whole
 * gRPC messages). A request that would pass it is refused (503,
 * RESOURCE_EXHAUSTED) instead of growing the process. It knows nothing of
 * what the bytes are. */
#include "net/internal.h"

bool gs_net_budget_take(struct gs_net_budget *b, size_t n)
{
  size_t used = __atomic_load_n(&b->used, __ATOMIC_RELAXED);
  do {
    if (n > b->max || used > b->max - n)
      return false;
  } while (!__atomic_compare_exchange_n(&b->used, &used, used + n, true, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED));
  return true;
}

void gs_net_budget_put(struct gs_net_budget *b, size_t n)
{
  __atomic_fetch_sub(&b->used, n, __ATOMIC_RELAXED);
}

size_t gs_net_budget_used(const struct gs_net_budget *b)
{
  return __atomic_load_n(&b->used, __ATOMIC_RELAXED);
}
