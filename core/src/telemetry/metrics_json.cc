// core/src/telemetry/metrics_json.cc — MetricsRegistry::ToJson, the JSON
// snapshot of every metric.
//
// It lives apart from metrics.cc because it needs Boost.JSON: it is built into
// the mulligan_config target (core/CMakeLists.txt), so a program that links
// only the std-only engine (mulligan_engine) gets counters, histograms,
// events and the Prometheus text but not this export.

#include <boost/json.hpp>

#include <string>
#include <utility>
#include <vector>

#include "mulligan/telemetry/metrics.h"

namespace mulligan {
inline namespace v0 {

namespace {

boost::json::object HistogramJson(const MetricsSnapshot::Histogram& h) {
  boost::json::object o;
  boost::json::array buckets;
  for (size_t i = 0; i < h.counts.size(); ++i) {
    boost::json::object b;
    if (i < h.upper_bounds.size()) {
      b["le"] = h.upper_bounds[i];
    } else {
      b["le"] = "+Inf";
    }
    b["count"] = h.counts[i];
    buckets.push_back(std::move(b));
  }
  o["buckets"] = std::move(buckets);
  o["count"] = h.count;
  o["sum"] = h.sum;
  return o;
}

// The tracked overload primitives (0.4): one array per kind.
void AddLimitsJson(boost::json::object& root, const LimitsSnapshot& limits) {
  static constexpr const char* kKinds[] = {"token_bucket", "quota", "ratio"};
  boost::json::array budgets, throttles, bulkheads, limiters;
  for (const auto& b : limits.budgets) {
    budgets.push_back({{"name", b.name},
                       {"kind", b.kind >= 0 && b.kind < 3 ? kKinds[b.kind] : "unknown"},
                       {"tokens", b.tokens},
                       {"max_tokens", b.max_tokens},
                       {"retries_allowed", b.retries_allowed},
                       {"retries_refused", b.retries_refused}});
  }
  for (const auto& t : limits.throttles) {
    throttles.push_back({{"name", t.name},
                         {"requests", t.requests},
                         {"accepts", t.accepts},
                         {"probability", t.probability},
                         {"rejections", t.rejections}});
  }
  for (const auto& b : limits.bulkheads) {
    boost::json::object o{{"name", b.name},
                          {"max_concurrent", b.max_concurrent},
                          {"max_queue", b.max_queue},
                          {"in_flight", b.in_flight},
                          {"queued", b.queued},
                          {"rejected_full", b.rejected_full},
                          {"rejected_timeout", b.rejected_timeout}};
    o["queue_wait_seconds"] = HistogramJson(b.queue_wait_seconds);
    bulkheads.push_back(std::move(o));
  }
  for (const auto& l : limits.rate_limiters) {
    boost::json::object o{{"name", l.name},
                          {"admitted", l.admitted},
                          {"waited", l.waited},
                          {"refused", l.refused}};
    o["wait_seconds"] = HistogramJson(l.wait_seconds);
    limiters.push_back(std::move(o));
  }
  root["budgets"] = std::move(budgets);
  root["throttles"] = std::move(throttles);
  root["bulkheads"] = std::move(bulkheads);
  root["rate_limiters"] = std::move(limiters);
  boost::json::array adaptive;
  for (const auto& a : limits.adaptive_rates) {
    adaptive.push_back({{"name", a.name},
                        {"enabled", a.enabled},
                        {"fill_rate", a.fill_rate},
                        {"measured_rate", a.measured_rate},
                        {"admitted", a.admitted},
                        {"waited", a.waited},
                        {"refused", a.refused},
                        {"throttles", a.throttles}});
  }
  root["adaptive_rates"] = std::move(adaptive);
  boost::json::array outboxes;  // (Added in 0.6.)
  for (const auto& o : limits.outboxes) {
    outboxes.push_back({{"name", o.name},
                        {"pending", o.pending},
                        {"leased", o.leased},
                        {"done", o.done},
                        {"dead", o.dead},
                        {"depth", o.pending + o.leased},
                        {"oldest_age_seconds", o.oldest_age_seconds},
                        {"deliveries",
                         {{"success", o.deliveries_success},
                          {"failure", o.deliveries_failure},
                          {"lease_expired", o.deliveries_lease_expired}}},
                        {"dead_letters", o.dead_letters}});
  }
  root["outboxes"] = std::move(outboxes);
  boost::json::array shared;  // (Added in 0.6.)
  for (const auto& p : limits.shared_states) {
    shared.push_back({{"part", p.part},
                      {"name", p.name},
                      {"fallback", p.fallback},
                      {"fallback_periods", p.fallback_periods}});
  }
  root["shared_states"] = std::move(shared);
}

}  // namespace

std::string MetricsRegistry::ToJson() const { return ToJson(SystemClock::Default()->Now()); }

std::string MetricsRegistry::ToJson(TimePoint now, std::optional<WallTime> wall_now) const {
  const std::vector<MetricsSnapshot> all = Snapshot();
  boost::json::array metrics;
  uint64_t calls = 0, retries = 0, opens = 0, fallbacks = 0, successes = 0, failures = 0;
  uint64_t rejections = 0;
  for (const MetricsSnapshot& s : all) {
    boost::json::object o;
    o["name"] = s.name;
    o["calls"] = s.calls;
    o["attempts"] = s.attempts;
    o["retries"] = s.retries;
    boost::json::object by_reason;
    for (int i = 0; i < kRetryReasonCount; ++i) {
      by_reason[RetryReasonName(static_cast<RetryReason>(i))] = s.retries_by_reason[i];
    }
    o["retries_by_reason"] = std::move(by_reason);
    o["successes"] = s.successes;
    o["failures"] = s.failures;
    o["fallbacks"] = s.fallbacks;
    o["short_circuits"] = s.short_circuits;
    o["hedges"] = s.hedges;
    o["hedges_won"] = s.hedges_won;
    o["hedge_cancelled"] = s.hedge_cancelled;
    o["cancelled"] = s.cancelled;
    boost::json::object rejected;
    for (int i = 0; i < kRejectionReasonCount; ++i) {
      rejected[RejectionReasonName(static_cast<RejectionReason>(i))] = s.rejections_by_reason[i];
      rejections += s.rejections_by_reason[i];
    }
    o["rejections_by_reason"] = std::move(rejected);
    o["circuit_opens"] = s.circuit_opens;
    boost::json::array transitions;
    for (int f = 0; f < 6; ++f) {
      for (int t = 0; t < 6; ++t) {
        if (s.transitions[f][t] == 0) continue;
        transitions.push_back({{"from", BreakerStateName(static_cast<BreakerState>(f))},
                               {"to", BreakerStateName(static_cast<BreakerState>(t))},
                               {"count", s.transitions[f][t]}});
      }
    }
    o["breaker_transitions"] = std::move(transitions);
    if (s.breaker_state >= 0) {
      o["breaker_state"] = BreakerStateName(static_cast<BreakerState>(s.breaker_state));
    } else {
      o["breaker_state"] = nullptr;
    }
    // The attached breaker's own counts (null when no live breaker reports
    // here): what it recorded, which the call counters above do not show
    // for a breaker used without a retry loop.
    if (s.has_breaker) {
      const BreakerCounts& c = s.breaker;
      boost::json::object b{{"calls", c.calls},
                            {"successes", c.successes},
                            {"failures", c.failures},
                            {"ignored", c.ignored},
                            {"slow", c.slow},
                            {"rejected", c.rejected},
                            {"stale", c.stale},
                            {"consecutive_failures", c.consecutive_failures},
                            {"window_calls", c.window_calls},
                            {"window_failure_rate", c.window_failure_rate},
                            {"window_slow_rate", c.window_slow_rate}};
      if (s.last_trip) {
        const BreakerTrip& t = *s.last_trip;
        b["last_trip"] = {{"from", BreakerStateName(t.from)},
                          {"reason", t.reason},
                          {"consecutive_failures", t.consecutive_failures},
                          {"window_calls", t.window_calls},
                          {"window_failure_rate", t.window_failure_rate},
                          {"window_slow_rate", t.window_slow_rate}};
      } else {
        b["last_trip"] = nullptr;
      }
      o["breaker"] = std::move(b);
    } else {
      o["breaker"] = nullptr;
    }
    o["in_flight"] = s.in_flight;
    o["waiting_to_retry"] = s.waiting_to_retry;
    o["call_duration_seconds"] = HistogramJson(s.call_duration_seconds);
    o["attempts_per_call"] = HistogramJson(s.attempts_per_call);
    o["retry_delay_seconds"] = HistogramJson(s.retry_delay_seconds);
    metrics.push_back(std::move(o));
    calls += s.calls;
    retries += s.retries;
    opens += s.circuit_opens;
    fallbacks += s.fallbacks;
    successes += s.successes;
    failures += s.failures;
  }
  boost::json::object totals;
  totals["calls"] = calls;
  totals["retries"] = retries;
  totals["circuit_opens"] = opens;
  totals["fallbacks"] = fallbacks;
  totals["successes"] = successes;
  totals["failures"] = failures;
  totals["rejections"] = rejections;
  boost::json::object root;
  root["metrics"] = std::move(metrics);
  root["totals"] = std::move(totals);
  AddLimitsJson(root, SnapshotLimits(now, wall_now));
  return boost::json::serialize(root);
}

}  // namespace v0
}  // namespace mulligan
