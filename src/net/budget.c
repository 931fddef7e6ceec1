/* budget.c: a byte budget several threads draw on: the memory serve lets
 * request bodies take while it holds them (the proxy's retry buffers, whole
 * gRPC messages). A request that would pass it is refused (503,
 * RESOURCE_EXHAUSTED) instead of growing the process. It knows nothing of
 * what the bytes are. */
#include "net/internal.h"

bool gs__budget_take(struct gs__budget *b, size_t n)
{
  size_t used = __atomic_load_n(&b->used, __ATOMIC_RELAXED);
  do {
    if (n > b->max || used > b->max - n)
      return false;
  } while (!__atomic_compare_exchange_n(&b->used, &used, used + n, true, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED));
  return true;
}

void gs__budget_put(struct gs__budget *b, size_t n)
{
  __atomic_fetch_sub(&b->used, n, __ATOMIC_RELAXED);
}

size_t gs__budget_used(const struct gs__budget *b)
{
  return __atomic_load_n(&b->used, __ATOMIC_RELAXED);
}
