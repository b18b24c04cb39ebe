// Exponential back-off, the one rule for every retry that waits longer each
// time: the work queue's per-key delay, the reflector's relist and rewatch,
// and the scheduler's pause before asking again for an eviction the API
// server refused.
#pragma once

#include <algorithm>

namespace hybridjob {

// The wait before retry number `retries` (0 for the first retry): base doubled
// once per earlier retry, never more than cap. Safe for any count: it stops
// doubling at the cap, so it never overflows.
template <typename Duration>
constexpr Duration ExponentialBackoff(Duration base, Duration cap, int retries) {
  if (base >= cap) {
    return cap;
  }
  Duration delay = base;
  for (int i = 0; i < retries; ++i) {
    if (delay > cap / 2) {
      return cap;
    }
    delay *= 2;
  }
  return std::min(delay, cap);
}

}  // namespace hybridjob
