// mulligan/telemetry/histogram.h — the bucket bounds of every seconds
// histogram, and a small lock-free histogram for waits recorded outside the
// per-thread metric shards (a bulkhead's queue waits, a rate limiter's
// reserved waits). (Added in 0.4.)
//
// Bounds, in seconds: Prometheus' client defaults extended to a minute,
// because retry chains and queue waits can be long (the same bounds as
// mulligan_call_duration_seconds).

#ifndef MULLIGAN_TELEMETRY_HISTOGRAM_H_
#define MULLIGAN_TELEMETRY_HISTOGRAM_H_

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "mulligan/base/clock.h"

namespace mulligan {
inline namespace v0 {

// Upper bounds of the finite buckets of every seconds histogram, ascending.
inline constexpr std::array<double, 14> kSecondsBucketBounds = {
    0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0};

// The index of the bucket `d` falls in: the first bound >= d (Prometheus'
// "le", less than or equal), or kSecondsBucketBounds.size() for +Inf.
size_t SecondsBucketIndex(Duration d);

// A reading of a histogram.
struct HistogramSnapshot {
  // Upper bounds of the finite buckets, ascending; a final +Inf bucket is
  // implied. Units: seconds for durations and delays, attempts otherwise.
  std::vector<double> upper_bounds;
  // Non-cumulative counts; size upper_bounds.size() + 1 (the last is +Inf).
  std::vector<uint64_t> counts;
  uint64_t count = 0;
  double sum = 0;
};

// A histogram of durations in seconds with the bounds above.
//
// Thread-safety: Record and Snapshot may run on any number of threads at
// once (relaxed fetch_add per field: each count is exact, a snapshot taken
// while writers run may see a bucket count before the matching sum).
// Cost: two locked increments and a bucket search; meant for paths that
// already wait (queueing), not for the success path.
class SecondsHistogram {
 public:
  // Records one observation; negative durations count as zero.
  void Record(Duration d);
  HistogramSnapshot Snapshot() const;

 private:
  std::array<std::atomic<uint64_t>, kSecondsBucketBounds.size() + 1> counts_{};
  std::atomic<uint64_t> sum_ns_{0};
};

}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_TELEMETRY_HISTOGRAM_H_
