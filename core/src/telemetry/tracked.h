// core/src/telemetry/tracked.h — private to core/src/telemetry: the overload
// primitives a MetricsRegistry tracks, and the Prometheus text helpers that
// metrics.cc and limits_metrics.cc share.
#ifndef MULLIGAN_SRC_TELEMETRY_TRACKED_H_
#define MULLIGAN_SRC_TELEMETRY_TRACKED_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "mulligan/telemetry/metrics.h"

namespace mulligan {
inline namespace v0 {

namespace internal {
// One tracked primitive under its reported name (weak: tracking never keeps
// it alive).
template <typename T>
struct TrackedEntry {
  std::string name;
  std::weak_ptr<T> ptr;
};
}  // namespace internal

// Live primitives by reported name. Guarded by MetricsRegistry::mu_.
struct MetricsRegistry::Tracked {
  std::vector<internal::TrackedEntry<RetryBudget>> budgets;
  std::vector<internal::TrackedEntry<AdaptiveThrottle>> throttles;
  std::vector<internal::TrackedEntry<Bulkhead>> bulkheads;
  std::vector<internal::TrackedEntry<RateLimiter>> limiters;
  std::vector<internal::TrackedEntry<AdaptiveRate>> adaptive_rates;
  std::vector<internal::TrackedEntry<OutboxMetricsSource>> outboxes;  // (0.6)
  std::vector<internal::TrackedEntry<SharedStateMetricsSource>> shared_parts;  // (0.6)
};

namespace internal {

// Escapes a Prometheus label value (backslash, double quote, newline).
std::string LabelValue(std::string_view value);
// "%.17g": exact round trip, as the text format expects.
std::string FormatDouble(double value);
// Appends the _bucket (cumulative), _sum and _count lines of `h`.
void AppendHistogram(std::string& out, const std::string& metric, const std::string& labels,
                     const HistogramSnapshot& h);
// Appends the mulligan_budget_*, mulligan_throttle_*, mulligan_bulkhead_*
// and mulligan_rate_limiter_* families (limits_metrics.cc).
void AppendLimitsPrometheus(std::string& out, const LimitsSnapshot& limits);
// Appends the mulligan_outbox_* families (limits_metrics.cc; Added in 0.6.).
void AppendOutboxPrometheus(std::string& out, const std::vector<LimitsSnapshot::Outbox>& boxes);
// Appends the mulligan_shared_state_* families (limits_metrics.cc; Added in 0.6.).
void AppendSharedStatePrometheus(std::string& out,
                                 const std::vector<LimitsSnapshot::SharedState>& parts);

}  // namespace internal
}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_SRC_TELEMETRY_TRACKED_H_
