// core/src/telemetry/histogram.cc — SecondsHistogram (telemetry/histogram.h).
#include "mulligan/telemetry/histogram.h"

#include <algorithm>

namespace mulligan {
inline namespace v0 {

size_t SecondsBucketIndex(Duration d) {
  const double seconds = std::chrono::duration<double>(d).count();
  size_t i = 0;
  while (i < kSecondsBucketBounds.size() && seconds > kSecondsBucketBounds[i]) ++i;
  return i;
}

void SecondsHistogram::Record(Duration d) {
  d = std::max(d, Duration::zero());
  counts_[SecondsBucketIndex(d)].fetch_add(1, std::memory_order_relaxed);
  sum_ns_.fetch_add(static_cast<uint64_t>(d.count()), std::memory_order_relaxed);
}

HistogramSnapshot SecondsHistogram::Snapshot() const {
  HistogramSnapshot s;
  s.upper_bounds.assign(kSecondsBucketBounds.begin(), kSecondsBucketBounds.end());
  s.counts.reserve(counts_.size());
  for (const auto& c : counts_) {
    const uint64_t n = c.load(std::memory_order_relaxed);
    s.counts.push_back(n);
    s.count += n;
  }
  s.sum = static_cast<double>(sum_ns_.load(std::memory_order_relaxed)) / 1e9;
  return s;
}

}  // namespace v0
}  // namespace mulligan
