// core/src/pipeline/pipeline.cc — the pipeline, its per-call object, and the
// circuit-breaker strategy.
//
// Call::Record is where every front door's decisions come from: the retry
// session classifies and decides, testing caps apply, the strategies observe
// (a breaker records, a budget may veto), the metrics count, and the
// fallback is flagged. The order is the one DESIGN.md section 2 fixes.

#include "mulligan/pipeline/pipeline.h"

#include <algorithm>
#include <string>
#include <utility>

#include "mulligan/telemetry/metrics.h"

namespace mulligan {
inline namespace v0 {

// ---------------------------------------------------------------------------
// Strategy 5: the circuit breaker.

namespace internal {

void BreakerStrategy::Bind(CallState& call, std::string_view key) const {
  if (breaker_ != nullptr) {
    call.breaker = breaker_;
    return;
  }
  if (registry_ == nullptr || key.empty()) return;
  Result<std::shared_ptr<CircuitBreaker>> found = registry_->Get(key);
  // A registry full of live breakers must not stop traffic: the call then
  // runs unguarded (BreakerRegistry::Get adds nothing).
  if (!found.ok()) return;
  call.breaker_owner = std::move(found).value();
  call.breaker = call.breaker_owner.get();
}

void BreakerStrategy::Admit(CallState& call, TimePoint now, AttemptAdmission& admission) const {
  if (call.breaker == nullptr) return;
  const Admission answer = call.breaker->Acquire(now);
  if (!answer.admitted()) {
    admission.action = AttemptAdmission::Action::kRefuse;
    admission.reason = StopReason::kCircuitOpen;
    admission.retry_in = answer.retry_in;
    return;
  }
  call.permit = answer.permit;
}

void BreakerStrategy::Record(CallState& call, const Outcome&, Decision& decision,
                             TimePoint now) const {
  if (call.breaker == nullptr || !call.permit.valid) return;
  // One result per logical call: a permit followed by a retry holds no slot
  // and no reference, so dropping it is free, except a half-open probe's,
  // which must free its slot now (or a one-probe breaker would refuse this
  // call's own retry) and must not be released as "ignored" (or one call
  // could probe a recovering dependency several times).
  if (per_attempt_ || call.permit.probe || !decision.retry()) {
    call.breaker->Record(call.permit, ResultFor(decision.classification),
                         now - call.attempt_start, now);
  }
  call.permit = Permit{};
}

void BreakerStrategy::Release(CallState& call, TimePoint now) const {
  if (call.breaker == nullptr || !call.permit.valid) return;
  // Says nothing about the dependency's health, but frees a probe slot.
  call.breaker->Record(call.permit, CallResult::kIgnored, now - call.attempt_start, now);
  call.permit = Permit{};
}

}  // namespace internal

// ---------------------------------------------------------------------------
// Pipeline

Result<std::unique_ptr<Pipeline>> Pipeline::Create(const PipelineOptions& options) {
  Result<RetryPolicy> policy = RetryPolicy::Create(options.retry);
  if (!policy.ok()) return policy.status();
  if (options.breaker && options.breakers) {
    return InvalidArgumentError(
        "breaker and breakers are exclusive: give one breaker for every call, or a registry "
        "of breakers by call key");
  }
  auto owned_policy = std::make_unique<RetryPolicy>(std::move(policy).value());
  Parts parts;
  parts.policy = owned_policy.get();
  parts.breaker = options.breaker.get();
  parts.breakers = options.breakers.get();
  parts.breaker_per_attempt = options.breaker_per_attempt;
  if (options.report_metrics) {
    MetricsRegistry* registry =
        options.metrics_registry != nullptr ? options.metrics_registry : &MetricsRegistry::Default();
    if (options.name.empty()) {
      parts.metrics_registry = registry;
    } else {
      parts.metrics = registry->Get(options.name);
    }
    // The overload primitives are read at snapshot time (weakly tracked).
    registry->Track(options.budget);
    registry->Track(options.throttle);
    registry->Track(options.bulkhead);
    registry->Track(options.rate_limiter);
    registry->Track(options.adaptive_rate);
  }
  parts.clock = options.clock;
  parts.budget = options.budget.get();
  parts.throttle = options.throttle.get();
  parts.bulkhead = options.bulkhead.get();
  parts.bulkhead_per_attempt = options.bulkhead_per_attempt;
  parts.rate_limiter = options.rate_limiter.get();
  parts.rate_limit_per_attempt = options.rate_limit_per_attempt;
  parts.adaptive_rate = options.adaptive_rate.get();
  auto pipeline = std::make_unique<Pipeline>(parts);
  pipeline->name_ = options.name;
  pipeline->owned_policy_ = std::move(owned_policy);
  pipeline->owned_breaker_ = options.breaker;
  pipeline->owned_breakers_ = options.breakers;
  pipeline->owned_budget_ = options.budget;
  pipeline->owned_throttle_ = options.throttle;
  pipeline->owned_bulkhead_ = options.bulkhead;
  pipeline->owned_rate_limiter_ = options.rate_limiter;
  pipeline->owned_adaptive_rate_ = options.adaptive_rate;
  return pipeline;
}

Pipeline::Pipeline(const Parts& parts) : parts_(parts) {
  if (parts_.clock == nullptr) parts_.clock = SystemClock::Default();
  if (parts_.metrics != nullptr) name_ = parts_.metrics->name();
  breaker_strategy_.Configure(parts_.breaker, parts_.breakers, parts_.breaker_per_attempt);
  throttle_strategy_.Configure(parts_.throttle);
  budget_strategy_.Configure(parts_.budget);
  limits_strategy_.Configure(parts_.bulkhead, parts_.bulkhead_per_attempt, parts_.rate_limiter,
                             parts_.rate_limit_per_attempt);
  limits_strategy_.ConfigureAdaptive(parts_.adaptive_rate);
  // The fixed order (DESIGN.md section 2); strategies not configured are
  // left out, so they cost nothing.
  // Strategy 2 (bulkhead, rate limiter) is outermost: a call waits for its
  // slot before the throttle or the budget is asked (strategy 4).
  if (limits_strategy_.enabled()) strategies_[strategy_count_++] = &limits_strategy_;
  if (throttle_strategy_.enabled()) strategies_[strategy_count_++] = &throttle_strategy_;
  if (budget_strategy_.enabled()) strategies_[strategy_count_++] = &budget_strategy_;
  if (breaker_strategy_.enabled()) strategies_[strategy_count_++] = &breaker_strategy_;
}

Pipeline::~Pipeline() = default;

Metrics* Pipeline::MetricsFor(std::string_view key) const {
  if (parts_.metrics != nullptr) return parts_.metrics;
  MetricsRegistry* registry = parts_.metrics_registry;
  if (registry == nullptr || key.empty()) return nullptr;
  // Looking a name up takes the registry's mutex and a hash; a client sends
  // to few origins, so the last look-up is kept per thread.
  thread_local const MetricsRegistry* cached_registry = nullptr;
  thread_local uint64_t cached_clears = 0;
  thread_local std::string cached_key;
  thread_local Metrics* cached = nullptr;
  const uint64_t clears = registry->clear_count();
  if (cached != nullptr && cached_registry == registry && cached_clears == clears &&
      cached_key == key) {
    return cached;
  }
  cached = registry->Get(key);
  cached_registry = registry;
  cached_clears = clears;
  cached_key.assign(key.data(), key.size());
  return cached;
}

Call Pipeline::Begin(TimePoint now, const CallOptions& options) const {
  const RetryPolicy* policy = options.policy != nullptr ? options.policy : parts_.policy;
  return Call(this, policy, now, options);
}

// ---------------------------------------------------------------------------
// Call

Call::Call(const Pipeline* pipeline, const RetryPolicy* policy, TimePoint now,
           const CallOptions& options)
    : pipeline_(pipeline),
      session_(options.seed ? policy->Begin(now, options.replay_safe, *options.seed)
                            : policy->Begin(now, options.replay_safe)),
      start_(now),
      last_step_(now),
      default_timeout_(options.attempt_timeout),
      max_attempts_(options.max_attempts),
      no_wait_(options.no_wait),
      fallback_(options.fallback) {
  pipeline->breaker_strategy_.Bind(
      state_, options.breaker_key.empty() ? options.key : options.breaker_key);
  metrics_ = pipeline->MetricsFor(options.key);
  if (metrics_ != nullptr) metrics_->CallStarted();
  pipeline->budget_strategy_.Begin(now);
  if (pipeline->parts_.rate_limiter != nullptr) state_.limiter_key.assign(options.key);
}

Call::Call(Call&& other) noexcept
    : pipeline_(other.pipeline_),
      session_(other.session_),
      state_(std::move(other.state_)),
      metrics_(other.metrics_),
      start_(other.start_),
      last_step_(other.last_step_),
      total_delay_(other.total_delay_),
      default_timeout_(other.default_timeout_),
      max_attempts_(other.max_attempts_),
      no_wait_(other.no_wait_),
      fallback_(other.fallback_),
      phase_(other.phase_),
      admission_(other.admission_),
      last_(other.last_) {
  other.phase_ = Phase::kFinished;  // the moved-from call abandons nothing
}

Call& Call::operator=(Call&& other) noexcept {
  if (this != &other) {
    if (phase_ != Phase::kFinished) Abandon(last_step_);
    pipeline_ = other.pipeline_;
    session_ = other.session_;
    state_ = std::move(other.state_);
    metrics_ = other.metrics_;
    start_ = other.start_;
    last_step_ = other.last_step_;
    total_delay_ = other.total_delay_;
    default_timeout_ = other.default_timeout_;
    max_attempts_ = other.max_attempts_;
    no_wait_ = other.no_wait_;
    fallback_ = other.fallback_;
    phase_ = other.phase_;
    admission_ = other.admission_;
    last_ = other.last_;
    other.phase_ = Phase::kFinished;
  }
  return *this;
}

Call::~Call() {
  if (phase_ != Phase::kFinished) Abandon(last_step_, phase_ == Phase::kAdmitted ? 1 : 0);
}

AttemptAdmission Call::Admit(TimePoint now) {
  if (phase_ == Phase::kFinished || phase_ == Phase::kAdmitted) return admission_;
  last_step_ = now;
  if (phase_ == Phase::kWaiting && metrics_ != nullptr) metrics_->RetryWaitEnded();
  AttemptAdmission admission;
  admission.attempt = session_.attempts() + 1;
  state_.attempt = admission.attempt;
  state_.attempt_start = now;
  const int count = pipeline_->strategy_count_;
  if (pipeline_->limits_strategy_.enabled()) state_.time_left = session_.TimeLeft(now);
  for (int i = 0; i < count; ++i) {
    pipeline_->strategies_[i]->Admit(state_, now, admission);
    if (!admission.go()) break;
  }
  if (admission.wait()) {
    // Strategy 2 queues the call or spaces it: no attempt starts yet.
    phase_ = Phase::kReady;
    admission_ = admission;
    return admission;
  }
  if (metrics_ != nullptr) metrics_->AttemptStarted(admission.attempt);
  if (admission.refused()) {
    // What earlier strategies hold (a bulkhead slot) is freed.
    for (int i = count - 1; i >= 0; --i) pipeline_->strategies_[i]->Release(state_, now);
    admission.use_fallback = fallback_;
    admission_ = admission;
    Finish(false, admission.reason, session_.attempts(), now, admission.use_fallback);
    return admission;
  }
  // Strategies 3 and 6: the attempt's own bound, else the call's default,
  // trimmed to the time left before the deadline.
  if (session_.policy().options().attempt_timeout) {
    admission.timeout = session_.AttemptTimeout(now);
  } else {
    const std::optional<Duration> left = session_.TimeLeft(now);
    if (default_timeout_) {
      admission.timeout = left ? std::min(*left, *default_timeout_) : *default_timeout_;
    } else {
      admission.timeout = left;
    }
  }
  phase_ = Phase::kAdmitted;
  admission_ = admission;
  return admission;
}

Decision Call::Record(const Outcome& outcome, TimePoint now) {
  if (phase_ == Phase::kFinished) return last_;
  last_step_ = now;
  if (phase_ != Phase::kAdmitted) {
    // An attempt that ran without an Admit (see call.h).
    if (phase_ == Phase::kWaiting && metrics_ != nullptr) metrics_->RetryWaitEnded();
    state_.attempt = session_.attempts() + 1;
    state_.attempt_start = session_.attempts() == 0 ? start_ : now;
  }
  Decision decision = session_.OnOutcome(outcome, now);
  if (decision.retry()) {
    // Testing mode: the cap on attempts, then no waits.
    if (max_attempts_ > 0 && decision.attempt >= max_attempts_) {
      decision.action = Decision::Action::kStop;
      decision.reason = StopReason::kAttemptsExhausted;
      decision.delay = Duration::zero();
      decision.from_retry_after = false;
    } else if (no_wait_) {
      decision.delay = Duration::zero();
    }
  }
  const int count = pipeline_->strategy_count_;
  for (int i = 0; i < count; ++i) {
    pipeline_->strategies_[i]->Record(state_, outcome, decision, now);
  }
  if (metrics_ != nullptr && decision.classification != Classification::kSuccess) {
    metrics_->AttemptFailed(decision.attempt, outcome, decision, now - start_);
  }
  if (decision.retry()) {
    total_delay_ += decision.delay;
    phase_ = Phase::kWaiting;
  } else {
    // Strategy 1: a fallback answers a give-up on retryable failures (and a
    // refusal, in Admit); a terminal outcome (a 404, an exception the policy
    // does not retry) is an answer or a bug, returned or raised as it is.
    decision.use_fallback = fallback_ && decision.classification == Classification::kRetryable;
    Finish(decision.reason == StopReason::kSucceeded, decision.reason, session_.attempts(), now,
           decision.use_fallback);
  }
  last_ = decision;
  return decision;
}

void Call::Abandon(TimePoint now, int attempts_in_flight) {
  if (phase_ == Phase::kFinished) return;
  last_step_ = now;
  if (phase_ == Phase::kWaiting && metrics_ != nullptr) metrics_->RetryWaitEnded();
  const int count = pipeline_->strategy_count_;
  for (int i = count - 1; i >= 0; --i) pipeline_->strategies_[i]->Release(state_, now);
  Finish(false, StopReason::kTerminal, session_.attempts() + std::max(attempts_in_flight, 0), now,
         false);
}

void Call::Cancel(TimePoint now, int attempts_in_flight) {
  if (phase_ == Phase::kFinished) return;
  last_step_ = now;
  if (phase_ == Phase::kWaiting && metrics_ != nullptr) metrics_->RetryWaitEnded();
  const int count = pipeline_->strategy_count_;
  for (int i = count - 1; i >= 0; --i) pipeline_->strategies_[i]->Release(state_, now);
  phase_ = Phase::kFinished;
  if (metrics_ != nullptr) metrics_->CallCancelled(session_.attempts() + std::max(attempts_in_flight, 0));
}

void Call::Finish(bool succeeded, StopReason reason, int attempts, TimePoint now, bool fallback) {
  phase_ = Phase::kFinished;
  if (metrics_ == nullptr) return;
  const Duration elapsed = now - start_;
  if (succeeded) {
    metrics_->CallSucceeded(attempts, elapsed);
  } else {
    metrics_->CallFailed(attempts, elapsed, reason);
    if (fallback) metrics_->FallbackUsed();
  }
}

Status Call::RefusalStatus() const {
  if (!admission_.refused()) return OkStatus();
  if (admission_.reason == StopReason::kCircuitOpen && state_.breaker != nullptr) {
    Admission refused;
    refused.retry_in = admission_.retry_in;
    return state_.breaker->OpenStatus(refused);
  }
  if (admission_.reason == StopReason::kThrottled) {
    const AdaptiveThrottle* throttle = pipeline_->parts_.throttle;
    std::string text = "throttled: adaptive throttling";
    if (throttle != nullptr && !throttle->name().empty()) text += " '" + throttle->name() + "'";
    return Status(StatusCode::kThrottled, text + " rejected the call locally");
  }
  if (admission_.reason == StopReason::kBulkheadFull && pipeline_->parts_.bulkhead != nullptr) {
    return pipeline_->parts_.bulkhead->FullStatus();
  }
  if (admission_.reason == StopReason::kRateLimited && pipeline_->parts_.adaptive_rate != nullptr &&
      (pipeline_->parts_.rate_limiter == nullptr || state_.adaptive_refused)) {
    return pipeline_->parts_.adaptive_rate->LimitedStatus(admission_.retry_in);
  }
  if (admission_.reason == StopReason::kRateLimited && pipeline_->parts_.rate_limiter != nullptr) {
    return pipeline_->parts_.rate_limiter->LimitedStatus(admission_.retry_in);
  }
  return Status(StatusCode::kUnavailable,
                std::string("refused: ") + StopReasonName(admission_.reason));
}

}  // namespace v0
}  // namespace mulligan
