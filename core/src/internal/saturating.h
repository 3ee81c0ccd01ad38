// core/src/internal/saturating.h — time arithmetic that saturates instead of
// overflowing (private; one copy for the engine, the C ABI and the bindings).
//
// DESIGN.md section 5: "all arithmetic saturates". A Duration is int64
// nanoseconds (about 292 years), so a TimePoint plus a huge Retry-After, a
// reset timeout grown by its multiplier or a caller's "forever" must clamp at
// the largest value rather than wrap into the past.
//
// Thread-safety: pure functions.

#ifndef MULLIGAN_INTERNAL_SATURATING_H_
#define MULLIGAN_INTERNAL_SATURATING_H_

#include <chrono>
#include <cmath>
#include <cstdint>

#include "mulligan/base/clock.h"

namespace mulligan {
inline namespace v0 {
namespace internal {

// Returns `a + b` for `b >= 0`, or TimePoint::max() when that would overflow.
inline TimePoint SaturatingAdd(TimePoint a, Duration b) {
  if (b > TimePoint::max() - a) return TimePoint::max();
  return a + b;
}

// Returns `a + b` for `a, b >= 0`, or Duration::max() when that would overflow.
inline Duration SaturatingAdd(Duration a, Duration b) {
  if (b > Duration::max() - a) return Duration::max();
  return a + b;
}

// Converts `count` units of `unit_ns` nanoseconds (1e9 for seconds, 1e6 for
// milliseconds) to a Duration, rounded to the nearest nanosecond: NaN and
// values <= 0 give zero, values at or beyond the largest Duration (+inf
// included) give Duration::max(). Callers validate the sign first where a
// negative value is an error rather than "no wait".
inline Duration SaturatingDuration(double count, double unit_ns) {
  if (!(count > 0)) return Duration::zero();
  const double ns = count * unit_ns;
  // 2^63 as a double; every double below it converts to int64 exactly.
  constexpr double kLimit = 9223372036854775808.0;
  if (!(ns < kLimit)) return Duration::max();
  return Duration(static_cast<Duration::rep>(std::llround(ns)));
}

// Seconds (a double) to a Duration, as SaturatingDuration does.
inline Duration DurationFromSeconds(double seconds) { return SaturatingDuration(seconds, 1e9); }

// Milliseconds (a double) to a Duration, as SaturatingDuration does.
inline Duration DurationFromMillis(double ms) { return SaturatingDuration(ms, 1e6); }

// Returns the steady-clock nanoseconds of `t` (for atomics that hold a time).
inline int64_t Nanos(TimePoint t) {
  return std::chrono::duration_cast<Duration>(t.time_since_epoch()).count();
}

}  // namespace internal
}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_INTERNAL_SATURATING_H_
