// mulligan/pipeline/pipeline.h — the one composition of strategies that every
// front door drives (DESIGN.md section 2).
//
// A Pipeline is built and validated once from options, is immutable, and is
// shared by every call; each logical call is a Call (pipeline/call.h) that
// the caller steps through Admit and Record. The strategies compose in one
// fixed order, outermost first (the order of Microsoft.Extensions.Http.
// Resilience's standard handler, which Polly v8 documents):
//
//   1 fallback         the call's final failure          (CallOptions::fallback)
//   2 bulkhead / rate limiter                            (limits/; added in 0.3)
//   3 deadline         the whole call; trims every attempt timeout
//   4 retry            the chain of attempts (RetryPolicy), gated by a budget
//   5 circuit breaker  each attempt; per call key from a registry
//   6 attempt timeout  each attempt
//
// Metrics are handed in (a Metrics object, or a registry to look names up
// in), as is the clock the convenience loops read; the strategies never look
// anything up globally. Randomness comes from the retry policy's seed, or a
// generator seeded from the OS's entropy per thread.
//
//   mulligan::PipelineOptions options;
//   options.name = "payments";
//   options.retry.max_attempts = 5;
//   options.breaker = payments_breaker;                 // shared_ptr
//   auto pipeline = mulligan::Pipeline::Create(options);  // validated here
//   mulligan::Call call = (*pipeline)->Begin(clock.Now());

#ifndef MULLIGAN_PIPELINE_PIPELINE_H_
#define MULLIGAN_PIPELINE_PIPELINE_H_

#include <memory>
#include <optional>
#include <string>

#include "mulligan/base/clock.h"
#include "mulligan/base/status.h"
#include "mulligan/breaker/circuit_breaker.h"
#include "mulligan/breaker/registry.h"
#include "mulligan/limits/bulkhead.h"
#include "mulligan/limits/rate_limiter.h"
#include "mulligan/pipeline/call.h"
#include "mulligan/pipeline/strategy.h"
#include "mulligan/retry/policy.h"

namespace mulligan {
inline namespace v0 {

class Metrics;          // telemetry/metrics.h
class MetricsRegistry;  // telemetry/metrics.h

// Plain options; every default is DESIGN.md's. Validated by Pipeline::Create.
struct PipelineOptions {
  // The name metrics are reported under, and the prefix of error texts.
  // Empty: metrics are reported under each call's key (the HTTP clients'
  // origins), or not at all when the call has no key. Default empty.
  std::string name;
  // Strategy 4: retries (attempts, backoff, deadline, attempt timeout,
  // Retry-After, classification). max_attempts 1 means no retry.
  RetryOptions retry;
  // Strategy 5: a circuit breaker checked before every attempt: one breaker
  // for every call, or one per call key from a registry (at most one of the
  // two). Default: none.
  std::shared_ptr<CircuitBreaker> breaker;
  std::shared_ptr<BreakerRegistry> breakers;
  // Record every attempt's result in the breaker instead of one per call.
  bool breaker_per_attempt = false;
  // Report calls, attempts, retries, successes, failures, fallbacks and
  // delays (telemetry/metrics.h). Default true.
  bool report_metrics = true;
  // Strategy 4's gates (Added in 0.3.): a retry budget every retry must be
  // granted by (budget/budget.h; shared by name through RetryBudget::Shared),
  // and adaptive throttling asked before every attempt (budget/throttle.h).
  // Default: none.
  std::shared_ptr<RetryBudget> budget;
  std::shared_ptr<AdaptiveThrottle> throttle;
  // Where names are looked up; null means MetricsRegistry::Default().
  // REQUIRES: outlives the pipeline.
  MetricsRegistry* metrics_registry = nullptr;
  // The clock the convenience loops (RetryCall, HttpClient) read and wait
  // through; null means SystemClock::Default(). The pipeline itself only
  // hands it out. REQUIRES: outlives the pipeline.
  Clock* clock = nullptr;

  // Strategy 2 (Added in 0.3.): a bulkhead shared by every call (at most
  // max_concurrent in flight; see limits/bulkhead.h). By default a call
  // holds its slot from its first Admit until it ends, across all its
  // attempts and retry waits; bulkhead_per_attempt holds it per attempt.
  std::shared_ptr<Bulkhead> bulkhead;
  bool bulkhead_per_attempt = false;
  // Strategy 2 (Added in 0.3.): a rate limiter, one bucket per call key
  // (the HTTP clients' origin; the limiter's own bucket without a key).
  // Asked once per logical call by default (DESIGN.md section 2), or before
  // every attempt with rate_limit_per_attempt (AWS adaptive mode's choice).
  std::shared_ptr<RateLimiter> rate_limiter;
  bool rate_limit_per_attempt = false;
  // Strategy 2 (Added in 0.4.): the AWS SDKs' adaptive-mode client rate
  // (limits/adaptive_rate.h), asked before every attempt, after the rate
  // limiter; every answered attempt is recorded into it. Its refusal is
  // StopReason::kRateLimited.
  std::shared_ptr<AdaptiveRate> adaptive_rate;
};

// The validated, immutable composition.
//
// Thread-safety: immutable after construction; Begin may be called from any
// number of threads at once. Each Call belongs to one logical call.
// Not copyable or movable: its calls and strategies point into it.
class Pipeline {
 public:
  // The strategies of a pipeline made of parts its caller already owns
  // (RetryCall's policy and borrowed breaker): every pointer is borrowed and
  // must outlive the pipeline; nothing is validated (the parts already are).
  struct Parts {
    const RetryPolicy* policy = nullptr;  // REQUIRED
    CircuitBreaker* breaker = nullptr;
    BreakerRegistry* breakers = nullptr;
    bool breaker_per_attempt = false;
    // A fixed metrics object (null: none, unless metrics_registry is set,
    // which then reports under each call's key).
    Metrics* metrics = nullptr;
    MetricsRegistry* metrics_registry = nullptr;
    Clock* clock = nullptr;
    // Strategy 4's gates (Added in 0.3.).
    RetryBudget* budget = nullptr;
    AdaptiveThrottle* throttle = nullptr;
    // Strategy 2 (Added in 0.3.): see PipelineOptions.
    Bulkhead* bulkhead = nullptr;
    bool bulkhead_per_attempt = false;
    RateLimiter* rate_limiter = nullptr;
    bool rate_limit_per_attempt = false;
    AdaptiveRate* adaptive_rate = nullptr;  // (Added in 0.4.)
  };

  // Validates `options` (the retry options as RetryPolicy::Create does; at
  // most one of breaker and breakers) and builds the pipeline.
  // kInvalidArgument names the bad field.
  static Result<std::unique_ptr<Pipeline>> Create(const PipelineOptions& options);

  // Builds a pipeline over borrowed parts (see Parts). Costs no allocation,
  // so a front door may make one per call on the stack.
  explicit Pipeline(const Parts& parts);

  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;
  ~Pipeline();

  // Begins one logical call whose first attempt starts at `now`. Resolves the
  // call's breaker (by options.key when the pipeline has a registry) and its
  // metrics, and counts the call as started.
  Call Begin(TimePoint now, const CallOptions& options = {}) const;

  // The retry policy (strategy 4).
  const RetryPolicy& policy() const { return *parts_.policy; }
  // The clock handed in (never null).
  Clock& clock() const { return *parts_.clock; }
  // The metrics name (empty: by call key).
  const std::string& name() const { return name_; }
  // The fixed breaker, the registry, or null.
  CircuitBreaker* breaker() const { return parts_.breaker; }
  BreakerRegistry* breakers() const { return parts_.breakers; }
  bool breaker_per_attempt() const { return parts_.breaker_per_attempt; }
  // The retry budget and the throttle, or null. (Added in 0.3.)
  RetryBudget* budget() const { return parts_.budget; }
  AdaptiveThrottle* throttle() const { return parts_.throttle; }
  // Strategy 2, or null. (Added in 0.3.)
  Bulkhead* bulkhead() const { return parts_.bulkhead; }
  RateLimiter* rate_limiter() const { return parts_.rate_limiter; }
  AdaptiveRate* adaptive_rate() const { return parts_.adaptive_rate; }

 private:
  friend class Call;
  friend class HedgedCall;  // hedging/hedging.h: the call's metrics (Added in 0.5.)
  // Returns the metrics of a call keyed `key` (null when not reporting).
  Metrics* MetricsFor(std::string_view key) const;

  Parts parts_;
  std::string name_;
  // What Create made and owns (null for a borrowed pipeline).
  std::unique_ptr<RetryPolicy> owned_policy_;
  std::shared_ptr<CircuitBreaker> owned_breaker_;
  std::shared_ptr<BreakerRegistry> owned_breakers_;
  std::shared_ptr<Bulkhead> owned_bulkhead_;
  std::shared_ptr<RateLimiter> owned_rate_limiter_;
  std::shared_ptr<AdaptiveRate> owned_adaptive_rate_;
  // The strategies, in the pipeline's fixed order.
  internal::LimitsStrategy limits_strategy_;
  internal::BreakerStrategy breaker_strategy_;
  std::shared_ptr<RetryBudget> owned_budget_;
  std::shared_ptr<AdaptiveThrottle> owned_throttle_;
  internal::ThrottleStrategy throttle_strategy_;
  internal::BudgetStrategy budget_strategy_;
  const internal::Strategy* strategies_[8] = {};
  int strategy_count_ = 0;
};

}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_PIPELINE_PIPELINE_H_
