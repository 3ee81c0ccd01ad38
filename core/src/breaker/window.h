// core/src/breaker/window.h — the circuit breaker's sliding window (private).
//
// A count-based window keeps one byte per call in a ring and running sums; a
// time-based one keeps buckets of window_duration / window_buckets, and a
// whole bucket expires at once (resilience4j's two sliding windows).
#ifndef MULLIGAN_SRC_BREAKER_WINDOW_H_
#define MULLIGAN_SRC_BREAKER_WINDOW_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "mulligan/breaker/circuit_breaker.h"

namespace mulligan {
inline namespace v0 {
namespace internal {

// A count- or time-based sliding window of (failure, slow) results.
//
// Thread-safety: none; the breaker guards it with its mutex.
struct BreakerWindow {
  struct Totals {
    uint64_t calls = 0;
    uint64_t failures = 0;
    uint64_t slow = 0;
  };
  struct Bucket {
    int64_t index = std::numeric_limits<int64_t>::min();
    Totals totals;
  };

  BreakerWindow(const CircuitBreakerOptions& options) : kind(options.window) {
    if (kind == WindowKind::kCount) {
      ring.assign(static_cast<size_t>(options.window_size), 0);
    } else {
      buckets.assign(static_cast<size_t>(options.window_buckets), Bucket{});
      width = options.window_duration / options.window_buckets;
    }
  }

  // Floor division, so that times before the clock's epoch still map to
  // distinct, ordered bucket indexes.
  int64_t IndexOf(TimePoint now) const {
    const int64_t t = std::chrono::duration_cast<Duration>(now.time_since_epoch()).count();
    const int64_t w = width.count();
    int64_t q = t / w;
    if ((t % w != 0) && ((t < 0) != (w < 0))) --q;
    return q;
  }
  size_t SlotOf(int64_t index) const {
    const int64_t n = static_cast<int64_t>(buckets.size());
    return static_cast<size_t>(((index % n) + n) % n);
  }

  void Add(TimePoint now, bool failure, bool slow) {
    const uint8_t bits = static_cast<uint8_t>((failure ? 1 : 0) | (slow ? 2 : 0));
    if (kind == WindowKind::kCount) {
      if (filled == ring.size()) {
        const uint8_t old = ring[next];
        running.calls--;
        running.failures -= (old & 1);
        running.slow -= (old >> 1) & 1;
      } else {
        filled++;
      }
      ring[next] = bits;
      next = (next + 1 == ring.size()) ? 0 : next + 1;
      running.calls++;
      running.failures += failure ? 1 : 0;
      running.slow += slow ? 1 : 0;
      return;
    }
    const int64_t index = IndexOf(now);
    Bucket& bucket = buckets[SlotOf(index)];
    // A bucket last used for an older index is recycled. A result stamped
    // earlier than the bucket's index (a racing thread's older `now`) is added
    // to the newer bucket: a small skew, never a lost count.
    if (bucket.index < index) bucket = Bucket{index, Totals{}};
    bucket.totals.calls++;
    bucket.totals.failures += failure ? 1 : 0;
    bucket.totals.slow += slow ? 1 : 0;
  }

  Totals Get(TimePoint now) const {
    if (kind == WindowKind::kCount) return running;
    const int64_t index = IndexOf(now);
    const int64_t oldest = index - static_cast<int64_t>(buckets.size()) + 1;
    Totals sum;
    for (const Bucket& bucket : buckets) {
      if (bucket.index >= oldest) {  // also counts buckets "ahead" of a stale now
        sum.calls += bucket.totals.calls;
        sum.failures += bucket.totals.failures;
        sum.slow += bucket.totals.slow;
      }
    }
    return sum;
  }

  void Clear() {
    if (kind == WindowKind::kCount) {
      std::fill(ring.begin(), ring.end(), 0);
      next = 0;
      filled = 0;
      running = Totals{};
    } else {
      std::fill(buckets.begin(), buckets.end(), Bucket{});
    }
  }

  size_t HeapBytes() const { return ring.capacity() + buckets.capacity() * sizeof(Bucket); }

  WindowKind kind;
  // kCount: one byte per call (bit 0 failure, bit 1 slow) and running sums.
  std::vector<uint8_t> ring;
  size_t next = 0;
  size_t filled = 0;
  Totals running;
  // kTime: buckets of `width`, indexed by time / width.
  std::vector<Bucket> buckets;
  Duration width{1};
};

}  // namespace internal

}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_SRC_BREAKER_WINDOW_H_
