// core/src/telemetry/limits_metrics.cc — the overload primitives in metrics
// (Added in 0.4.): MetricsRegistry::Track, SnapshotLimits, and their
// Prometheus families. The primitives keep their own counters (atomics they
// bump on refusals and waits only); this file reads them at snapshot time,
// so tracking costs the success path nothing (DESIGN.md section 2).
//
// Prometheus names follow the naming guide (prometheus.io/docs/practices/
// naming): a `mulligan_` prefix, base units (seconds), `_total` on counters,
// and gauges for values that go down (tokens, in flight, window counts).

#include <algorithm>
#include <string>

#include "mulligan/budget/budget.h"
#include "mulligan/budget/throttle.h"
#include "mulligan/limits/adaptive_rate.h"
#include "mulligan/limits/bulkhead.h"
#include "mulligan/limits/rate_limiter.h"
#include "telemetry/tracked.h"

namespace mulligan {
inline namespace v0 {

namespace {

// The name a primitive reports under.
template <typename T>
std::string NameOf(const T& primitive) { return primitive.name(); }
std::string NameOf(const OutboxMetricsSource& outbox) { return outbox.metrics_name(); }
std::string NameOf(const SharedStateMetricsSource& part) { return part.metrics_name(); }

// Adds `ptr` to `list` under a unique reported name; prunes dead entries.
template <typename T>
void TrackIn(std::vector<internal::TrackedEntry<T>>& list, const std::shared_ptr<T>& ptr,
             size_t max_entries) {
  if (ptr == nullptr || NameOf(*ptr).empty()) return;
  list.erase(std::remove_if(list.begin(), list.end(), [](const auto& e) { return e.ptr.expired(); }),
             list.end());
  for (const auto& e : list) {
    if (e.ptr.lock() == ptr) return;
  }
  if (list.size() >= max_entries) return;
  auto taken = [&](const std::string& candidate) {
    return std::any_of(list.begin(), list.end(),
                       [&](const auto& e) { return e.name == candidate; });
  };
  const std::string base = NameOf(*ptr);
  std::string name = base;
  for (int n = 2; taken(name); ++n) name = base + "#" + std::to_string(n);
  list.push_back({std::move(name), ptr});
}

// The live entries of `list` with their names (copied under the lock).
template <typename T>
std::vector<std::pair<std::string, std::shared_ptr<T>>> Live(
    const std::vector<internal::TrackedEntry<T>>& list) {
  std::vector<std::pair<std::string, std::shared_ptr<T>>> out;
  for (const auto& e : list) {
    if (auto p = e.ptr.lock()) out.emplace_back(e.name, std::move(p));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

}  // namespace

void MetricsRegistry::Track(const std::shared_ptr<RetryBudget>& budget) {
  std::lock_guard<std::mutex> lock(mu_);
  TrackIn(tracked_->budgets, budget, max_names_);
}

void MetricsRegistry::Track(const std::shared_ptr<AdaptiveThrottle>& throttle) {
  std::lock_guard<std::mutex> lock(mu_);
  TrackIn(tracked_->throttles, throttle, max_names_);
}

void MetricsRegistry::Track(const std::shared_ptr<Bulkhead>& bulkhead) {
  std::lock_guard<std::mutex> lock(mu_);
  TrackIn(tracked_->bulkheads, bulkhead, max_names_);
}

void MetricsRegistry::Track(const std::shared_ptr<RateLimiter>& limiter) {
  std::lock_guard<std::mutex> lock(mu_);
  TrackIn(tracked_->limiters, limiter, max_names_);
}

void MetricsRegistry::Track(const std::shared_ptr<AdaptiveRate>& adaptive) {
  std::lock_guard<std::mutex> lock(mu_);
  TrackIn(tracked_->adaptive_rates, adaptive, max_names_);
}

void MetricsRegistry::Track(const std::shared_ptr<OutboxMetricsSource>& outbox) {
  std::lock_guard<std::mutex> lock(mu_);
  TrackIn(tracked_->outboxes, outbox, max_names_);
}

void MetricsRegistry::Track(const std::shared_ptr<SharedStateMetricsSource>& part) {
  std::lock_guard<std::mutex> lock(mu_);
  TrackIn(tracked_->shared_parts, part, max_names_);
}

LimitsSnapshot MetricsRegistry::SnapshotLimits(TimePoint now,
                                               std::optional<WallTime> wall_now) const {
  std::vector<std::pair<std::string, std::shared_ptr<RetryBudget>>> budgets;
  std::vector<std::pair<std::string, std::shared_ptr<AdaptiveThrottle>>> throttles;
  std::vector<std::pair<std::string, std::shared_ptr<Bulkhead>>> bulkheads;
  std::vector<std::pair<std::string, std::shared_ptr<RateLimiter>>> limiters;
  std::vector<std::pair<std::string, std::shared_ptr<AdaptiveRate>>> adaptives;
  std::vector<std::pair<std::string, std::shared_ptr<OutboxMetricsSource>>> outboxes;
  std::vector<std::pair<std::string, std::shared_ptr<SharedStateMetricsSource>>> shared_parts;
  {
    std::lock_guard<std::mutex> lock(mu_);
    budgets = Live(tracked_->budgets);
    throttles = Live(tracked_->throttles);
    bulkheads = Live(tracked_->bulkheads);
    limiters = Live(tracked_->limiters);
    adaptives = Live(tracked_->adaptive_rates);
    outboxes = Live(tracked_->outboxes);
    shared_parts = Live(tracked_->shared_parts);
  }
  // Read without the registry mutex: Tokens and Probability fold pending
  // successes and may take the primitives' own locks.
  LimitsSnapshot out;
  for (auto& [name, b] : budgets) {
    LimitsSnapshot::Budget s;
    s.name = name;
    s.kind = static_cast<int>(b->kind());
    s.tokens = b->Tokens(now);
    if (b->kind() == BudgetKind::kTokenBucket) s.max_tokens = b->options().token_bucket.max_tokens;
    if (b->kind() == BudgetKind::kQuota) s.max_tokens = static_cast<double>(b->options().quota.capacity);
    s.retries_allowed = b->allowed();
    s.retries_refused = b->refused();
    out.budgets.push_back(std::move(s));
  }
  for (auto& [name, t] : throttles) {
    LimitsSnapshot::Throttle s;
    s.name = name;
    s.probability = t->Probability(now);  // folds pending accepts first
    s.requests = t->Requests(now);
    s.accepts = t->Accepts(now);
    s.rejections = t->rejected();
    out.throttles.push_back(std::move(s));
  }
  for (auto& [name, b] : bulkheads) {
    LimitsSnapshot::BulkheadStats s;
    s.name = name;
    s.max_concurrent = b->options().max_concurrent;
    s.max_queue = b->options().max_queue;
    s.in_flight = b->in_flight();
    s.queued = b->queued();
    s.rejected_full = b->rejected_full();
    s.rejected_timeout = b->rejected_timeout();
    s.queue_wait_seconds = b->wait_histogram();
    out.bulkheads.push_back(std::move(s));
  }
  for (auto& [name, l] : limiters) {
    LimitsSnapshot::Limiter s;
    s.name = name;
    s.admitted = l->admitted();
    s.waited = l->waited();
    s.refused = l->refused();
    s.wait_seconds = l->wait_histogram();
    out.rate_limiters.push_back(std::move(s));
  }
  for (auto& [name, p] : shared_parts) {
    out.shared_states.push_back({p->shared_part(), name, p->falling_back(), p->fallback_periods()});
  }
  for (auto& [name, l] : limiters) {
    if (!l->shared()) continue;
    out.shared_states.push_back({"rate_limiter", name, l->falling_back(), l->fallback_periods()});
  }
  std::sort(out.shared_states.begin(), out.shared_states.end(), [](const auto& a, const auto& b) {
    return a.part != b.part ? a.part < b.part : a.name < b.name;
  });
  for (auto& [name, a] : adaptives) {
    const AdaptiveRateState state = a->State(now);
    LimitsSnapshot::Adaptive s;
    s.name = name;
    s.enabled = state.enabled;
    s.fill_rate = state.fill_rate;
    s.measured_rate = state.measured_rate;
    s.admitted = a->admitted();
    s.waited = a->waited();
    s.refused = a->refused();
    s.throttles = a->throttles();
    out.adaptive_rates.push_back(std::move(s));
  }
  const WallTime wall = wall_now.value_or(SystemClock::Default()->WallNow());
  for (auto& [name, o] : outboxes) {
    LimitsSnapshot::Outbox s;
    if (!o->SampleMetrics(wall, &s)) continue;  // unreadable now: left out
    s.name = name;
    out.outboxes.push_back(std::move(s));
  }
  return out;
}

namespace internal {

namespace {

// Appends one family: HELP, TYPE, and a line per entry of `list`.
template <typename List, typename ValueOf>
void Family(std::string& out, const char* metric, const char* type, const char* help,
            const List& list, ValueOf value_of) {
  if (list.empty()) return;
  out += std::string("# HELP ") + metric + " " + help + "\n";
  out += std::string("# TYPE ") + metric + " " + type + "\n";
  for (const auto& s : list) {
    out += std::string(metric) + "{name=\"" + LabelValue(s.name) + "\"} " + value_of(s) + "\n";
  }
}

template <typename T>
std::string Int(T v) { return std::to_string(v); }

}  // namespace

void AppendLimitsPrometheus(std::string& out, const LimitsSnapshot& limits) {
  const auto& budgets = limits.budgets;
  Family(out, "mulligan_budget_tokens", "gauge",
         "Room left in a retry budget: tokens (token_bucket), capacity (quota) or retries "
         "available now (ratio).",
         budgets, [](const auto& s) { return FormatDouble(s.tokens); });
  Family(out, "mulligan_budget_retries_allowed_total", "counter",
         "Retries a retry budget allowed.", budgets,
         [](const auto& s) { return Int(s.retries_allowed); });
  Family(out, "mulligan_budget_retries_refused_total", "counter",
         "Retries a retry budget refused.", budgets,
         [](const auto& s) { return Int(s.retries_refused); });
  const auto& throttles = limits.throttles;
  Family(out, "mulligan_throttle_requests", "gauge",
         "Requests counted in an adaptive throttle's window.", throttles,
         [](const auto& s) { return Int(s.requests); });
  Family(out, "mulligan_throttle_accepts", "gauge",
         "Accepted answers counted in an adaptive throttle's window.", throttles,
         [](const auto& s) { return Int(s.accepts); });
  Family(out, "mulligan_throttle_rejection_probability", "gauge",
         "The probability an adaptive throttle rejects the next request.", throttles,
         [](const auto& s) { return FormatDouble(s.probability); });
  Family(out, "mulligan_throttle_rejections_total", "counter",
         "Requests an adaptive throttle rejected locally.", throttles,
         [](const auto& s) { return Int(s.rejections); });
  const auto& bulkheads = limits.bulkheads;
  Family(out, "mulligan_bulkhead_max_concurrent", "gauge", "A bulkhead's limit on calls in flight.",
         bulkheads, [](const auto& s) { return Int(s.max_concurrent); });
  Family(out, "mulligan_bulkhead_in_flight", "gauge", "Calls holding a bulkhead's slot.",
         bulkheads, [](const auto& s) { return Int(s.in_flight); });
  Family(out, "mulligan_bulkhead_queued", "gauge", "Calls waiting in a bulkhead's queue.",
         bulkheads, [](const auto& s) { return Int(s.queued); });
  if (!bulkheads.empty()) {
    out += "# HELP mulligan_bulkhead_rejections_total Calls a bulkhead refused, by reason "
           "(full: no slot and no room in the queue; timeout: a waiter gave up).\n";
    out += "# TYPE mulligan_bulkhead_rejections_total counter\n";
    for (const auto& s : bulkheads) {
      const std::string label = "{name=\"" + LabelValue(s.name) + "\",reason=\"";
      out += "mulligan_bulkhead_rejections_total" + label + "full\"} " + Int(s.rejected_full) + "\n";
      out += "mulligan_bulkhead_rejections_total" + label + "timeout\"} " +
             Int(s.rejected_timeout) + "\n";
    }
    out += "# HELP mulligan_bulkhead_queue_wait_seconds Time from joining a bulkhead's queue to "
           "the slot.\n";
    out += "# TYPE mulligan_bulkhead_queue_wait_seconds histogram\n";
    for (const auto& s : bulkheads) {
      AppendHistogram(out, "mulligan_bulkhead_queue_wait_seconds",
                      "name=\"" + LabelValue(s.name) + "\"", s.queue_wait_seconds);
    }
  }
  const auto& limiters = limits.rate_limiters;
  Family(out, "mulligan_rate_limiter_admitted_total", "counter",
         "Calls a rate limiter admitted at once.", limiters,
         [](const auto& s) { return Int(s.admitted); });
  Family(out, "mulligan_rate_limiter_waited_total", "counter",
         "Calls a rate limiter admitted after a wait.", limiters,
         [](const auto& s) { return Int(s.waited); });
  Family(out, "mulligan_rate_limiter_refused_total", "counter",
         "Calls a rate limiter refused.", limiters, [](const auto& s) { return Int(s.refused); });
  if (!limiters.empty()) {
    out += "# HELP mulligan_rate_limiter_wait_seconds Waits of the calls a rate limiter admitted "
           "after one.\n";
    out += "# TYPE mulligan_rate_limiter_wait_seconds histogram\n";
    for (const auto& s : limiters) {
      AppendHistogram(out, "mulligan_rate_limiter_wait_seconds",
                      "name=\"" + LabelValue(s.name) + "\"", s.wait_seconds);
    }
  }
  const auto& adaptive = limits.adaptive_rates;
  Family(out, "mulligan_adaptive_rate_fill_rate", "gauge",
         "Requests per second an adaptive client rate allows now (1 until the first throttle).",
         adaptive, [](const auto& s) { return FormatDouble(s.fill_rate); });
  Family(out, "mulligan_adaptive_rate_measured_rate", "gauge",
         "Requests per second sent, as an adaptive client rate measures them.", adaptive,
         [](const auto& s) { return FormatDouble(s.measured_rate); });
  Family(out, "mulligan_adaptive_rate_throttles_total", "counter",
         "Throttling answers an adaptive client rate recorded.", adaptive,
         [](const auto& s) { return Int(s.throttles); });
  Family(out, "mulligan_adaptive_rate_waited_total", "counter",
         "Attempts an adaptive client rate delayed.", adaptive,
         [](const auto& s) { return Int(s.waited); });
  Family(out, "mulligan_adaptive_rate_refused_total", "counter",
         "Attempts an adaptive client rate refused.", adaptive,
         [](const auto& s) { return Int(s.refused); });
  AppendOutboxPrometheus(out, limits.outboxes);
  AppendSharedStatePrometheus(out, limits.shared_states);
}

void AppendSharedStatePrometheus(std::string& out,
                                 const std::vector<LimitsSnapshot::SharedState>& parts) {
  if (parts.empty()) return;
  auto label = [](const LimitsSnapshot::SharedState& s) {
    return "{part=\"" + LabelValue(s.part) + "\",name=\"" + LabelValue(s.name) + "\"} ";
  };
  out += "# HELP mulligan_shared_state_fallback 1 while a part shared through a state backend "
         "serves from its local state alone (the backend unreachable), else 0.\n";
  out += "# TYPE mulligan_shared_state_fallback gauge\n";
  for (const auto& s : parts) {
    out += "mulligan_shared_state_fallback" + label(s) + (s.fallback ? "1" : "0") + "\n";
  }
  out += "# HELP mulligan_shared_state_fallbacks_total Times a part shared through a state "
         "backend began serving from its local state alone.\n";
  out += "# TYPE mulligan_shared_state_fallbacks_total counter\n";
  for (const auto& s : parts) {
    out += "mulligan_shared_state_fallbacks_total" + label(s) + Int(s.fallback_periods) + "\n";
  }
}

void AppendOutboxPrometheus(std::string& out, const std::vector<LimitsSnapshot::Outbox>& boxes) {
  if (boxes.empty()) return;
  auto label = [](const LimitsSnapshot::Outbox& s) {
    return "{outbox=\"" + LabelValue(s.name) + "\"";
  };
  out += "# HELP mulligan_outbox_depth Entries in a durable outbox waiting for an attempt "
         "(pending) or held by a worker (leased).\n";
  out += "# TYPE mulligan_outbox_depth gauge\n";
  for (const auto& s : boxes) {
    out += "mulligan_outbox_depth" + label(s) + ",state=\"pending\"} " + Int(s.pending) + "\n";
    out += "mulligan_outbox_depth" + label(s) + ",state=\"leased\"} " + Int(s.leased) + "\n";
  }
  out += "# HELP mulligan_outbox_oldest_age_seconds Age of a durable outbox's oldest pending or "
         "leased entry (0 when none).\n";
  out += "# TYPE mulligan_outbox_oldest_age_seconds gauge\n";
  for (const auto& s : boxes) {
    out += "mulligan_outbox_oldest_age_seconds" + label(s) + "} " +
           FormatDouble(s.oldest_age_seconds) + "\n";
  }
  out += "# HELP mulligan_outbox_deliveries_total Delivery attempts a durable outbox recorded, "
         "by result (success, failure, lease_expired), since its file was made.\n";
  out += "# TYPE mulligan_outbox_deliveries_total counter\n";
  for (const auto& s : boxes) {
    out += "mulligan_outbox_deliveries_total" + label(s) + ",result=\"success\"} " +
           Int(s.deliveries_success) + "\n";
    out += "mulligan_outbox_deliveries_total" + label(s) + ",result=\"failure\"} " +
           Int(s.deliveries_failure) + "\n";
    out += "mulligan_outbox_deliveries_total" + label(s) + ",result=\"lease_expired\"} " +
           Int(s.deliveries_lease_expired) + "\n";
  }
  out += "# HELP mulligan_outbox_dead_letters_total Entries a durable outbox dead-lettered, "
         "since its file was made.\n";
  out += "# TYPE mulligan_outbox_dead_letters_total counter\n";
  for (const auto& s : boxes) {
    out += "mulligan_outbox_dead_letters_total" + label(s) + "} " + Int(s.dead_letters) + "\n";
  }
}

}  // namespace internal
}  // namespace v0
}  // namespace mulligan
