// core/src/telemetry/metrics.cc — metrics: per-thread shards, snapshots, the
// Prometheus export and events (the JSON export is metrics_json.cc).
#include "mulligan/telemetry/metrics.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "telemetry/tracked.h"

namespace mulligan {
inline namespace v0 {

const char* RetryReasonName(RetryReason reason) {
  switch (reason) {
    case RetryReason::kStatus: return "status";
    case RetryReason::kTransport: return "transport";
    case RetryReason::kTimeout: return "timeout";
    case RetryReason::kRetryAfter: return "retry_after";
    case RetryReason::kException: return "exception";
  }
  return "unknown";
}

RetryReason RetryReasonFor(const Outcome& outcome, const Decision& decision) {
  if (decision.from_retry_after) return RetryReason::kRetryAfter;
  switch (outcome.error) {
    case ErrorKind::kNone: return RetryReason::kStatus;
    case ErrorKind::kTimeout:
    case ErrorKind::kConnectTimeout: return RetryReason::kTimeout;
    case ErrorKind::kRetryable:
    case ErrorKind::kTerminal: return RetryReason::kException;
    default: return RetryReason::kTransport;
  }
}

const char* RejectionReasonName(RejectionReason reason) {
  switch (reason) {
    case RejectionReason::kBudget: return "budget";
    case RejectionReason::kThrottled: return "throttled";
    case RejectionReason::kBulkheadFull: return "bulkhead_full";
    case RejectionReason::kRateLimited: return "rate_limited";
  }
  return "unknown";
}

int RejectionReasonIndex(StopReason stop) {
  switch (stop) {
    case StopReason::kBudget: return static_cast<int>(RejectionReason::kBudget);
    case StopReason::kThrottled: return static_cast<int>(RejectionReason::kThrottled);
    case StopReason::kBulkheadFull: return static_cast<int>(RejectionReason::kBulkheadFull);
    case StopReason::kRateLimited: return static_cast<int>(RejectionReason::kRateLimited);
    default: return -1;
  }
}

const char* EventKindName(EventKind kind) {
  switch (kind) {
    case EventKind::kAttemptStarted: return "attempt_started";
    case EventKind::kAttemptFailed: return "attempt_failed";
    case EventKind::kRetryScheduled: return "retry_scheduled";
    case EventKind::kGaveUp: return "gave_up";
    case EventKind::kBreakerTransition: return "breaker_transition";
    case EventKind::kFallbackUsed: return "fallback_used";
    case EventKind::kSucceeded: return "succeeded";
    case EventKind::kShortCircuited: return "short_circuited";
    case EventKind::kRejected: return "rejected";
  }
  return "unknown";
}

namespace {

// Bucket bounds in seconds for durations and delays (telemetry/histogram.h).
constexpr const auto& kSecondsBounds = kSecondsBucketBounds;
constexpr std::array<double, 10> kAttemptBounds = {1, 2, 3, 4, 5, 6, 8, 10, 15, 20};

// Single-writer increment: only the owning thread writes a shard, so a
// relaxed load and store (no locked instruction) cannot lose an update, and
// readers on other threads see each value whole.
inline void Bump(std::atomic<uint64_t>& counter, uint64_t by = 1) {
  counter.store(counter.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
}

size_t SecondsBucket(Duration d) { return SecondsBucketIndex(d); }

size_t AttemptsBucket(int attempts) {
  size_t i = 0;
  while (i < kAttemptBounds.size() && attempts > kAttemptBounds[i]) ++i;
  return i;
}

std::atomic<uint64_t> g_next_metrics_id{0};

}  // namespace

// One thread's counters for one Metrics object.
struct Metrics::Shard {
  std::atomic<uint64_t> calls{0};
  std::atomic<uint64_t> attempts{0};
  std::array<std::atomic<uint64_t>, kRetryReasonCount> retries{};
  std::atomic<uint64_t> retry_waits_ended{0};
  std::atomic<uint64_t> successes{0};
  std::atomic<uint64_t> failures{0};
  std::atomic<uint64_t> fallbacks{0};
  std::atomic<uint64_t> short_circuits{0};
  std::array<std::atomic<uint64_t>, kRejectionReasonCount> rejections{};
  std::atomic<uint64_t> hedges{0};
  std::atomic<uint64_t> hedges_won{0};
  std::atomic<uint64_t> hedge_cancelled{0};
  std::atomic<uint64_t> cancelled{0};
  // Untimed first-attempt successes (UntimedFirstAttemptSuccesses): each is
  // a call, an attempt, a success and an attempts_per_call{le="1"} sample,
  // added by Snapshot, so the hot path writes one counter.
  std::atomic<uint64_t> untimed_successes{0};
  std::array<std::atomic<uint64_t>, kSecondsBounds.size() + 1> duration_buckets{};
  std::atomic<uint64_t> duration_sum_ns{0};
  std::array<std::atomic<uint64_t>, kSecondsBounds.size() + 1> delay_buckets{};
  std::atomic<uint64_t> delay_sum_ns{0};
  std::array<std::atomic<uint64_t>, kAttemptBounds.size() + 1> attempt_buckets{};
};

Metrics::Metrics(std::string name, MetricsRegistry* registry)
    : name_(std::move(name)),
      registry_(registry),
      id_(g_next_metrics_id.fetch_add(1, std::memory_order_relaxed)) {}

Metrics::~Metrics() = default;

namespace {
// Each thread's shards, indexed by Metrics::id_. Entries for destroyed
// Metrics are never read again because ids are never reused.
thread_local std::vector<void*> tls_shards;
}  // namespace

Metrics::Shard& Metrics::LocalShard() {
  if (id_ < tls_shards.size() && tls_shards[id_] != nullptr) {
    return *static_cast<Shard*>(tls_shards[id_]);
  }
  return RegisterShard();
}

Metrics::Shard& Metrics::RegisterShard() {
  auto shard = std::make_shared<Shard>();
  {
    std::lock_guard<std::mutex> lock(shards_mu_);
    shards_.push_back(shard);  // kept after the thread exits: no count is lost
  }
  if (tls_shards.size() <= id_) tls_shards.resize(id_ + 1, nullptr);
  tls_shards[id_] = shard.get();
  return *shard;
}

void Metrics::Emit(const Event& event) const {
  if (registry_ != nullptr && registry_->has_listeners_.load(std::memory_order_acquire)) {
    registry_->Dispatch(event);
  }
}

void Metrics::CallStarted() { Bump(LocalShard().calls); }

void Metrics::AttemptStarted(int attempt) {
  if (registry_ == nullptr || !registry_->has_listeners_.load(std::memory_order_acquire)) return;
  Event event;
  event.kind = EventKind::kAttemptStarted;
  event.name = name_;
  event.attempt = attempt;
  registry_->Dispatch(event);
}

void Metrics::AttemptFailed(int attempt, const Outcome& outcome, const Decision& decision,
                            Duration elapsed) {
  Event event;
  event.name = name_;
  event.attempt = attempt;
  event.error = outcome.error;
  event.http_status = outcome.http_status;
  event.elapsed = elapsed;
  if (decision.retry()) {
    const RetryReason reason = RetryReasonFor(outcome, decision);
    Shard& shard = LocalShard();
    Bump(shard.retries[static_cast<size_t>(reason)]);
    Bump(shard.delay_buckets[SecondsBucket(decision.delay)]);
    Bump(shard.delay_sum_ns, static_cast<uint64_t>(decision.delay.count()));
    event.retry_reason = reason;
  }
  if (registry_ == nullptr || !registry_->has_listeners_.load(std::memory_order_acquire)) return;
  event.kind = EventKind::kAttemptFailed;
  registry_->Dispatch(event);
  if (decision.retry()) {
    event.kind = EventKind::kRetryScheduled;
    event.delay = decision.delay;
    registry_->Dispatch(event);
  }
}

void Metrics::RetryWaitEnded() { Bump(LocalShard().retry_waits_ended); }

void Metrics::ShortCircuited(int attempt) {
  Bump(LocalShard().short_circuits);
  Event event;
  event.kind = EventKind::kShortCircuited;
  event.name = name_;
  event.attempt = attempt;
  Emit(event);
}

void Metrics::CallSucceeded(int attempts, Duration elapsed) {
  Shard& shard = LocalShard();
  Bump(shard.successes);
  Bump(shard.attempts, static_cast<uint64_t>(attempts));
  Bump(shard.attempt_buckets[AttemptsBucket(attempts)]);
  Bump(shard.duration_buckets[SecondsBucket(elapsed)]);
  Bump(shard.duration_sum_ns, static_cast<uint64_t>(std::max(elapsed, Duration::zero()).count()));
  if (registry_ == nullptr || !registry_->has_listeners_.load(std::memory_order_acquire)) return;
  Event event;
  event.kind = EventKind::kSucceeded;
  event.name = name_;
  event.attempt = attempts;
  event.elapsed = elapsed;
  event.stop_reason = StopReason::kSucceeded;
  registry_->Dispatch(event);
}

void Metrics::CallFailed(int attempts, Duration elapsed, StopReason stop_reason) {
  Shard& shard = LocalShard();
  Bump(shard.failures);
  Bump(shard.attempts, static_cast<uint64_t>(attempts));
  Bump(shard.attempt_buckets[AttemptsBucket(attempts)]);
  Bump(shard.duration_buckets[SecondsBucket(elapsed)]);
  Bump(shard.duration_sum_ns, static_cast<uint64_t>(std::max(elapsed, Duration::zero()).count()));
  const int rejection = RejectionReasonIndex(stop_reason);
  if (rejection >= 0) Bump(shard.rejections[static_cast<size_t>(rejection)]);
  Event event;
  event.name = name_;
  event.attempt = attempts;
  event.elapsed = elapsed;
  event.stop_reason = stop_reason;
  if (rejection >= 0) {
    event.kind = EventKind::kRejected;
    Emit(event);
  }
  event.kind = EventKind::kGaveUp;
  Emit(event);
}

void Metrics::CallCancelled(int attempts) {
  Shard& shard = LocalShard();
  Bump(shard.cancelled);
  Bump(shard.attempts, static_cast<uint64_t>(std::max(attempts, 0)));
  Bump(shard.attempt_buckets[AttemptsBucket(attempts)]);
}

void Metrics::UntimedFirstAttemptSuccesses(uint64_t count) {
  Bump(LocalShard().untimed_successes, count);
}

void Metrics::FallbackUsed() {
  Bump(LocalShard().fallbacks);
  Event event;
  event.kind = EventKind::kFallbackUsed;
  event.name = name_;
  Emit(event);
}

void Metrics::HedgeStarted() { Bump(LocalShard().hedges); }

void Metrics::HedgeWon() { Bump(LocalShard().hedges_won); }

void Metrics::HedgesCancelled(uint64_t count) {
  if (count > 0) Bump(LocalShard().hedge_cancelled, count);
}

void Metrics::BreakerTransitioned(BreakerState from, BreakerState to, const char* reason) {
  const auto f = static_cast<size_t>(from), t = static_cast<size_t>(to);
  if (f < 6 && t < 6) transitions_[f][t].fetch_add(1, std::memory_order_relaxed);
  breaker_state_.store(static_cast<int>(to), std::memory_order_relaxed);
  Event event;
  event.kind = EventKind::kBreakerTransition;
  event.name = name_;
  event.from = from;
  event.to = to;
  event.transition_reason = reason != nullptr ? reason : "";
  Emit(event);
}

void Metrics::SetBreakerState(BreakerState state) {
  breaker_state_.store(static_cast<int>(state), std::memory_order_relaxed);
}

void Metrics::DetachBreaker(const CircuitBreaker* breaker) {
  std::lock_guard<std::mutex> lock(breaker_mu_);
  if (breaker_ == breaker) breaker_ = nullptr;
}

MetricsSnapshot Metrics::Snapshot() const {
  MetricsSnapshot s;
  s.name = name_;
  s.call_duration_seconds.upper_bounds.assign(kSecondsBounds.begin(), kSecondsBounds.end());
  s.call_duration_seconds.counts.assign(kSecondsBounds.size() + 1, 0);
  s.retry_delay_seconds.upper_bounds.assign(kSecondsBounds.begin(), kSecondsBounds.end());
  s.retry_delay_seconds.counts.assign(kSecondsBounds.size() + 1, 0);
  s.attempts_per_call.upper_bounds.assign(kAttemptBounds.begin(), kAttemptBounds.end());
  s.attempts_per_call.counts.assign(kAttemptBounds.size() + 1, 0);
  uint64_t waits_ended = 0, duration_ns = 0, delay_ns = 0;
  std::vector<std::shared_ptr<Shard>> shards;
  {
    std::lock_guard<std::mutex> lock(shards_mu_);
    shards = shards_;
  }
  constexpr auto r = std::memory_order_relaxed;
  for (const auto& shard : shards) {
    // One value for its call and its success: the in-flight gauge never
    // sees an untimed success started but not finished.
    const uint64_t untimed = shard->untimed_successes.load(r);
    s.calls += shard->calls.load(r) + untimed;
    s.attempts += shard->attempts.load(r) + untimed;
    s.successes += untimed;
    s.attempts_per_call.counts[0] += untimed;
    for (int i = 0; i < kRetryReasonCount; ++i) s.retries_by_reason[i] += shard->retries[i].load(r);
    waits_ended += shard->retry_waits_ended.load(r);
    s.successes += shard->successes.load(r);
    s.failures += shard->failures.load(r);
    s.fallbacks += shard->fallbacks.load(r);
    s.short_circuits += shard->short_circuits.load(r);
    s.hedges += shard->hedges.load(r);
    s.hedges_won += shard->hedges_won.load(r);
    s.hedge_cancelled += shard->hedge_cancelled.load(r);
    s.cancelled += shard->cancelled.load(r);
    for (int i = 0; i < kRejectionReasonCount; ++i) {
      s.rejections_by_reason[i] += shard->rejections[i].load(r);
    }
    for (size_t i = 0; i < shard->duration_buckets.size(); ++i) {
      s.call_duration_seconds.counts[i] += shard->duration_buckets[i].load(r);
      s.retry_delay_seconds.counts[i] += shard->delay_buckets[i].load(r);
    }
    for (size_t i = 0; i < shard->attempt_buckets.size(); ++i) {
      s.attempts_per_call.counts[i] += shard->attempt_buckets[i].load(r);
    }
    duration_ns += shard->duration_sum_ns.load(r);
    delay_ns += shard->delay_sum_ns.load(r);
  }
  for (uint64_t n : s.retries_by_reason) s.retries += n;
  for (size_t f = 0; f < 6; ++f) {
    for (size_t t = 0; t < 6; ++t) {
      s.transitions[f][t] = transitions_[f][t].load(r);
      if (t == static_cast<size_t>(BreakerState::kOpen)) s.circuit_opens += s.transitions[f][t];
    }
  }
  const uint64_t finished = s.successes + s.failures + s.cancelled;
  s.in_flight = static_cast<int64_t>(s.calls) - static_cast<int64_t>(finished);
  s.waiting_to_retry = static_cast<int64_t>(s.retries) - static_cast<int64_t>(waits_ended);
  for (uint64_t n : s.call_duration_seconds.counts) s.call_duration_seconds.count += n;
  s.call_duration_seconds.sum = static_cast<double>(duration_ns) / 1e9;
  s.retry_delay_seconds.count = s.retries;
  s.retry_delay_seconds.sum = static_cast<double>(delay_ns) / 1e9;
  s.attempts_per_call.count = finished;
  s.attempts_per_call.sum = static_cast<double>(s.attempts);
  s.breaker_state = breaker_state_.load(r);
  {
    std::lock_guard<std::mutex> lock(breaker_mu_);
    if (breaker_ != nullptr) {
      s.has_breaker = true;
      s.breaker = breaker_->counts(SystemClock::Default()->Now());
      s.last_trip = breaker_->last_trip();
    }
  }
  return s;
}

struct MetricsRegistry::Listeners {
  std::vector<std::pair<uint64_t, EventListener>> entries;
};

MetricsRegistry::MetricsRegistry(size_t max_names)
    : max_names_(max_names == 0 ? 1 : max_names),
      listeners_(std::make_shared<Listeners>()),
      tracked_(std::make_unique<Tracked>()) {}
MetricsRegistry::~MetricsRegistry() = default;

MetricsRegistry& MetricsRegistry::Default() {
  static MetricsRegistry* const registry = new MetricsRegistry();  // never destroyed
  return *registry;
}

Metrics* MetricsRegistry::Get(std::string_view name) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string key(name);
  auto it = by_name_.find(key);
  if (it != by_name_.end()) return it->second;
  if (by_name_.size() >= max_names_) {
    if (overflow_ == nullptr) {
      metrics_.push_back(std::unique_ptr<Metrics>(new Metrics(kOverflowName, this)));
      overflow_ = metrics_.back().get();
    }
    return overflow_;
  }
  metrics_.push_back(std::unique_ptr<Metrics>(new Metrics(key, this)));
  by_name_.emplace(std::move(key), metrics_.back().get());
  return metrics_.back().get();
}

Metrics* MetricsRegistry::AttachBreaker(std::string_view name, const CircuitBreaker* breaker,
                                       std::string* reported_name) {
  std::string candidate(name);
  for (uint64_t n = 2;; ++n) {
    Metrics* metrics = Get(candidate);
    bool overflow;
    {
      std::lock_guard<std::mutex> lock(mu_);
      overflow = metrics == overflow_;
    }
    if (overflow) {
      *reported_name = kOverflowName;
      return metrics;
    }
    std::lock_guard<std::mutex> lock(metrics->breaker_mu_);
    if (metrics->breaker_ == nullptr) {
      metrics->breaker_ = breaker;
      *reported_name = candidate;
      return metrics;
    }
    candidate = std::string(name) + "#" + std::to_string(n);
  }
}

std::vector<MetricsSnapshot> MetricsRegistry::Snapshot() const {
  std::vector<Metrics*> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& m : metrics_) all.push_back(m.get());
  }
  std::vector<MetricsSnapshot> out;
  out.reserve(all.size());
  for (Metrics* m : all) out.push_back(m->Snapshot());
  std::sort(out.begin(), out.end(),
            [](const MetricsSnapshot& a, const MetricsSnapshot& b) { return a.name < b.name; });
  return out;
}

void MetricsRegistry::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& m : metrics_) detached_.push_back(std::move(m));
  metrics_.clear();
  by_name_.clear();
  overflow_ = nullptr;
  *tracked_ = Tracked{};
  clears_.fetch_add(1, std::memory_order_acq_rel);
}

uint64_t MetricsRegistry::AddListener(EventListener listener) {
  std::lock_guard<std::mutex> lock(mu_);
  auto next = std::make_shared<Listeners>(*listeners_);
  const uint64_t id = next_listener_id_++;
  next->entries.emplace_back(id, std::move(listener));
  listeners_ = std::move(next);
  has_listeners_.store(true, std::memory_order_release);
  return id;
}

bool MetricsRegistry::RemoveListener(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto next = std::make_shared<Listeners>(*listeners_);
  auto it = std::find_if(next->entries.begin(), next->entries.end(),
                         [id](const auto& entry) { return entry.first == id; });
  if (it == next->entries.end()) return false;
  next->entries.erase(it);
  has_listeners_.store(!next->entries.empty(), std::memory_order_release);
  listeners_ = std::move(next);
  return true;
}

void MetricsRegistry::Dispatch(const Event& event) const {
  std::shared_ptr<const Listeners> listeners;
  {
    std::lock_guard<std::mutex> lock(mu_);
    listeners = listeners_;
  }
  for (const auto& entry : listeners->entries) {
    try {
      entry.second(event);
    } catch (...) {
      // A listener must not break the call it observes.
    }
  }
}

namespace internal {

// Escapes a Prometheus label value (backslash, double quote, newline).
std::string LabelValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string FormatDouble(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.17g", value);
  return buffer;
}

void AppendHistogram(std::string& out, const std::string& metric, const std::string& labels,
                     const MetricsSnapshot::Histogram& h) {
  uint64_t cumulative = 0;
  for (size_t i = 0; i < h.counts.size(); ++i) {
    cumulative += h.counts[i];
    const std::string le = i < h.upper_bounds.size() ? FormatDouble(h.upper_bounds[i]) : "+Inf";
    out += metric + "_bucket{" + labels + ",le=\"" + le + "\"} " + std::to_string(cumulative) + "\n";
  }
  out += metric + "_sum{" + labels + "} " + FormatDouble(h.sum) + "\n";
  out += metric + "_count{" + labels + "} " + std::to_string(h.count) + "\n";
}

}  // namespace internal

using internal::AppendHistogram;
using internal::FormatDouble;
using internal::LabelValue;

std::string MetricsRegistry::ToPrometheus() const {
  return ToPrometheus(SystemClock::Default()->Now());
}

std::string MetricsRegistry::ToPrometheus(TimePoint now, std::optional<WallTime> wall_now) const {
  const std::vector<MetricsSnapshot> all = Snapshot();
  std::string out;
  auto counter = [&](const char* metric, const char* help, auto value_of) {
    out += std::string("# HELP ") + metric + " " + help + "\n";
    out += std::string("# TYPE ") + metric + " counter\n";
    for (const MetricsSnapshot& s : all) {
      out += std::string(metric) + "{name=\"" + LabelValue(s.name) + "\"} " +
             std::to_string(value_of(s)) + "\n";
    }
  };
  auto gauge = [&](const char* metric, const char* help, auto value_of) {
    out += std::string("# HELP ") + metric + " " + help + "\n";
    out += std::string("# TYPE ") + metric + " gauge\n";
    for (const MetricsSnapshot& s : all) {
      out += std::string(metric) + "{name=\"" + LabelValue(s.name) + "\"} " +
             std::to_string(value_of(s)) + "\n";
    }
  };
  counter("mulligan_calls_total", "Logical calls started.", [](auto& s) { return s.calls; });
  counter("mulligan_attempts_total", "Attempts made by finished calls.",
          [](auto& s) { return s.attempts; });
  out += "# HELP mulligan_retries_total Retries scheduled, by reason.\n";
  out += "# TYPE mulligan_retries_total counter\n";
  for (const MetricsSnapshot& s : all) {
    for (int i = 0; i < kRetryReasonCount; ++i) {
      out += "mulligan_retries_total{name=\"" + LabelValue(s.name) + "\",reason=\"" +
             RetryReasonName(static_cast<RetryReason>(i)) + "\"} " +
             std::to_string(s.retries_by_reason[i]) + "\n";
    }
  }
  counter("mulligan_successes_total", "Calls that finally succeeded (eventual successes included).",
          [](auto& s) { return s.successes; });
  counter("mulligan_failures_total", "Calls that gave up or were refused.",
          [](auto& s) { return s.failures; });
  counter("mulligan_cancelled_total",
          "Calls cancelled by their caller (a hedged request's losing copy): neither "
          "successes nor failures.",
          [](auto& s) { return s.cancelled; });
  counter("mulligan_fallbacks_total", "Failed calls answered by a fallback.",
          [](auto& s) { return s.fallbacks; });
  counter("mulligan_short_circuits_total", "Attempts refused by an open circuit breaker.",
          [](auto& s) { return s.short_circuits; });
  counter("mulligan_hedges_total",
          "Extra copies started by hedged calls (gRPC A96 grpc.client.call.hedges).",
          [](auto& s) { return s.hedges; });
  counter("mulligan_hedges_won_total", "Hedged calls won by an extra copy.",
          [](auto& s) { return s.hedges_won; });
  counter("mulligan_hedge_cancelled_total",
          "Running copies of hedged calls cancelled (another copy won or failed fatally).",
          [](auto& s) { return s.hedge_cancelled; });
  out += "# HELP mulligan_breaker_transitions_total Circuit breaker state changes.\n";
  out += "# TYPE mulligan_breaker_transitions_total counter\n";
  for (const MetricsSnapshot& s : all) {
    for (int f = 0; f < 6; ++f) {
      for (int t = 0; t < 6; ++t) {
        if (s.transitions[f][t] == 0) continue;
        out += "mulligan_breaker_transitions_total{name=\"" + LabelValue(s.name) + "\",from=\"" +
               BreakerStateName(static_cast<BreakerState>(f)) + "\",to=\"" +
               BreakerStateName(static_cast<BreakerState>(t)) + "\"} " +
               std::to_string(s.transitions[f][t]) + "\n";
      }
    }
  }
  gauge("mulligan_calls_in_flight", "Calls started and not yet finished.",
        [](auto& s) { return s.in_flight; });
  gauge("mulligan_calls_waiting_to_retry", "Calls currently waiting before a retry.",
        [](auto& s) { return s.waiting_to_retry; });
  out += "# HELP mulligan_breaker_state Circuit breaker state (1 for the current state).\n";
  out += "# TYPE mulligan_breaker_state gauge\n";
  for (const MetricsSnapshot& s : all) {
    if (s.breaker_state < 0) continue;
    for (int state = 0; state < 6; ++state) {
      out += "mulligan_breaker_state{name=\"" + LabelValue(s.name) + "\",state=\"" +
             BreakerStateName(static_cast<BreakerState>(state)) + "\"} " +
             (s.breaker_state == state ? "1" : "0") + "\n";
    }
  }
  auto histogram = [&](const char* metric, const char* help, auto member) {
    out += std::string("# HELP ") + metric + " " + help + "\n";
    out += std::string("# TYPE ") + metric + " histogram\n";
    for (const MetricsSnapshot& s : all) {
      AppendHistogram(out, metric, "name=\"" + LabelValue(s.name) + "\"", s.*member);
    }
  };
  histogram("mulligan_call_duration_seconds", "Time from a call's first attempt to its end.",
            &MetricsSnapshot::call_duration_seconds);
  histogram("mulligan_attempts_per_call", "Attempts made by each finished call.",
            &MetricsSnapshot::attempts_per_call);
  histogram("mulligan_retry_delay_seconds", "Waits scheduled before retries.",
            &MetricsSnapshot::retry_delay_seconds);
  out += "# HELP mulligan_rejections_total Calls refused by an overload protection, by reason.\n";
  out += "# TYPE mulligan_rejections_total counter\n";
  for (const MetricsSnapshot& s : all) {
    for (int i = 0; i < kRejectionReasonCount; ++i) {
      out += "mulligan_rejections_total{name=\"" + LabelValue(s.name) + "\",reason=\"" +
             RejectionReasonName(static_cast<RejectionReason>(i)) + "\"} " +
             std::to_string(s.rejections_by_reason[i]) + "\n";
    }
  }
  internal::AppendLimitsPrometheus(out, SnapshotLimits(now, wall_now));
  return out;
}

}  // namespace v0
}  // namespace mulligan
