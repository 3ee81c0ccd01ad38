// core/src/hedging/hedging.cc — the hedging policy and the per-call hedging
// state machine (hedging/hedging.h; gRPC A6 hedgingPolicy). (Added in 0.5.)

#include "mulligan/hedging/hedging.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "internal/format.h"
#include "internal/saturating.h"
#include "mulligan/breaker/registry.h"
#include "mulligan/budget/budget.h"
#include "mulligan/pipeline/pipeline.h"
#include "mulligan/pipeline/strategy.h"
#include "mulligan/telemetry/metrics.h"

namespace mulligan {
inline namespace v0 {

namespace {

Status Invalid(const std::string& text) {
  return Status(StatusCode::kInvalidArgument, "hedging: " + text);
}

// The shortest text that reads back as `v` (0.95, 1e+300, 1.000000001),
// where std::to_string printed 301 digits for 1e300 and "1" for
// 1.000000001 (found by a fresh user).
std::string Num(double v) { return internal::FormatDouble(v); }

}  // namespace

Status ValidateHedgingOptions(const HedgingOptions& o) {
  if (o.max_attempts < 2) {
    return Invalid("max_attempts must be >= 2 (gRPC A6), got " + std::to_string(o.max_attempts));
  }
  if (o.hedging_delay < Duration::zero()) {
    return Invalid("hedging_delay must be >= 0, got " +
                   std::to_string(std::chrono::duration<double>(o.hedging_delay).count()) +
                   " s");
  }
  if (o.delay_quantile.has_value()) {
    const double q = *o.delay_quantile;
    if (!(q > 0.0 && q <= 1.0)) {
      return Invalid("delay_quantile must be in (0, 1], got " + Num(q));
    }
  }
  if (o.quantile_window < 1 || o.quantile_window > 100000) {
    return Invalid("quantile_window must be in [1, 100000], got " +
                   std::to_string(o.quantile_window));
  }
  if (o.quantile_min_samples < 1 || o.quantile_min_samples > o.quantile_window) {
    return Invalid("quantile_min_samples must be in [1, quantile_window = " +
                   std::to_string(o.quantile_window) + "], got " +
                   std::to_string(o.quantile_min_samples));
  }
  return OkStatus();
}

// ---------------------------------------------------------------------------
// LatencyWindow

LatencyWindow::LatencyWindow(int capacity)
    : capacity_(static_cast<size_t>(std::max(1, capacity))) {
  ring_.reserve(capacity_);
}

void LatencyWindow::Record(Duration latency) {
  if (latency < Duration::zero()) latency = Duration::zero();
  std::lock_guard<std::mutex> lock(mu_);
  if (ring_.size() < capacity_) {
    ring_.push_back(latency);
  } else {
    ring_[next_] = latency;
  }
  next_ = (next_ + 1) % capacity_;
}

std::optional<Duration> LatencyWindow::Quantile(double p, int min_samples) const {
  std::vector<Duration> sorted;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (static_cast<int>(ring_.size()) < min_samples || ring_.empty()) return std::nullopt;
    sorted = ring_;
  }
  std::sort(sorted.begin(), sorted.end());
  // Nearest rank: the ceil(p * n)-th smallest, 1-based.
  const double n = static_cast<double>(sorted.size());
  size_t rank = static_cast<size_t>(std::ceil(p * n - 1e-9));
  rank = std::clamp<size_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

int LatencyWindow::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(ring_.size());
}

// ---------------------------------------------------------------------------
// HedgingPolicy

HedgingPolicy::HedgingPolicy(const HedgingOptions& options)
    : options_(options), latencies_(std::make_unique<LatencyWindow>(options.quantile_window)) {
  options_.max_attempts = std::min(options_.max_attempts, kMaxHedgedAttempts);
}

Result<std::shared_ptr<HedgingPolicy>> HedgingPolicy::Create(const HedgingOptions& options) {
  Status status = ValidateHedgingOptions(options);
  if (!status.ok()) return status;
  return std::shared_ptr<HedgingPolicy>(new HedgingPolicy(options));
}

Duration HedgingPolicy::CurrentDelay() const {
  if (options_.delay_quantile.has_value()) {
    std::optional<Duration> q =
        latencies_->Quantile(*options_.delay_quantile, options_.quantile_min_samples);
    if (q.has_value()) return *q;
  }
  return options_.hedging_delay;
}

HedgedCall HedgingPolicy::Begin(const Pipeline& pipeline, TimePoint now,
                                const CallOptions& options) const {
  return HedgedCall(this, &pipeline, now, options, HedgeAccounting::kFull);
}

HedgedCall HedgingPolicy::Begin(const Pipeline& pipeline, TimePoint now,
                                const CallOptions& options, HedgeAccounting accounting) const {
  return HedgedCall(this, &pipeline, now, options, accounting);
}

// ---------------------------------------------------------------------------
// HedgedCall

HedgedCall::HedgedCall(const HedgingPolicy* hedging, const Pipeline* pipeline, TimePoint now,
                       const CallOptions& options, HedgeAccounting accounting)
    : hedging_(hedging),
      pipeline_(pipeline),
      policy_(options.policy != nullptr ? options.policy : &pipeline->policy()),
      budget_(pipeline->budget()),
      start_(now),
      last_step_(now),
      next_start_(now),
      default_timeout_(options.attempt_timeout),
      max_attempts_(options.replay_safe ? hedging->max_attempts() : 1),
      gate_only_(accounting == HedgeAccounting::kGateOnly) {
  if (options.max_attempts > 0) max_attempts_ = std::min(max_attempts_, options.max_attempts);
  copies_.reserve(static_cast<size_t>(max_attempts_));
  const std::string_view breaker_key =
      options.breaker_key.empty() ? options.key : options.breaker_key;
  if (pipeline->breaker() != nullptr) {
    breaker_ = pipeline->breaker();
  } else if (pipeline->breakers() != nullptr && !breaker_key.empty()) {
    Result<std::shared_ptr<CircuitBreaker>> found = pipeline->breakers()->Get(breaker_key);
    if (found.ok()) {
      breaker_owner_ = std::move(found).value();
      breaker_ = breaker_owner_.get();
    }
  }
  metrics_ = pipeline->MetricsFor(options.key);
  if (gate_only_) return;  // the copies' own calls count and deposit
  if (metrics_ != nullptr) metrics_->CallStarted();
  if (budget_ != nullptr) budget_->OnCallStarted(now);
}

HedgedCall::~HedgedCall() {
  if (live_.value && !finished_) Abandon(last_step_);
}

int HedgedCall::running() const {
  int n = 0;
  for (const Copy& c : copies_) n += c.running ? 1 : 0;
  return n;
}

std::optional<Duration> HedgedCall::TimeoutAt(TimePoint now) const {
  std::optional<Duration> timeout = policy_->options().attempt_timeout;
  if (!timeout.has_value()) timeout = default_timeout_;
  const std::optional<Duration>& deadline = policy_->effective_deadline();
  if (deadline.has_value()) {
    const Duration left = std::max(Duration::zero(), start_ + *deadline - now);
    timeout = timeout.has_value() ? std::min(*timeout, left) : left;
  }
  return timeout;
}

// Asks the deadline, the breaker and (for copies after the first) the
// budget whether the next copy may start at `now`; on a yes, sets the
// copy's permit and cost in the new copies_ entry and returns nullopt.
std::optional<StopReason> HedgedCall::GateNextCopy(TimePoint now, HedgeAdmission& admission) {
  const bool extra = started_ > 0;
  const std::optional<Duration>& deadline = policy_->effective_deadline();
  if (extra && deadline.has_value() && now >= start_ + *deadline) return StopReason::kDeadline;
  Copy copy;
  copy.start = now;
  if (breaker_ != nullptr) {
    const Admission answer = breaker_->Acquire(now);
    if (!answer.admitted()) {
      admission.retry_in = answer.retry_in;
      refused_retry_in_ = answer.retry_in;
      return StopReason::kCircuitOpen;
    }
    copy.permit = answer.permit;
  }
  if (extra && budget_ != nullptr) {
    // A hedge is charged as a retry after a plain failure (A6: the retry
    // throttle limits hedges too).
    copy.budget_cost = budget_->TryRetry(BudgetFailure::kOther, now);
    if (copy.budget_cost < 0) {
      // The permit was never used: free it without judging the dependency.
      if (copy.permit.valid) breaker_->Record(copy.permit, CallResult::kIgnored, Duration::zero(), now);
      return StopReason::kBudget;
    }
  }
  copy.running = true;
  copies_.push_back(copy);
  return std::nullopt;
}

HedgeAdmission HedgedCall::Admit(TimePoint now) {
  last_step_ = now;
  HedgeAdmission admission;
  if (finished_) {
    admission.reason = reason_;
    if (reason_ == StopReason::kCircuitOpen) admission.retry_in = refused_retry_in_;
    return admission;
  }
  if (no_more_.has_value() || started_ >= max_attempts_) {
    admission.reason = no_more_.value_or(StopReason::kNone);
    admission.retry_in = refused_retry_in_;
    return admission;
  }
  if (now < next_start_) {
    admission.action = HedgeAdmission::Action::kWait;
    admission.next_start = next_start_;
    return admission;
  }
  std::optional<StopReason> refused = GateNextCopy(now, admission);
  if (refused.has_value()) {
    if (started_ == 0) {
      // The first copy was refused: the call is over (never retried), with
      // no attempt made, as the pipeline's Call counts a refused first
      // attempt; the breaker counts its own short circuit under its name.
      first_refused_ = true;
      Finish(false, *refused, now);
      admission.reason = *refused;
      return admission;
    }
    no_more_ = refused;
    admission.reason = *refused;
    if (running() == 0) Finish(false, *refused, now);
    return admission;
  }
  ++started_;
  if (started_ > 1 && metrics_ != nullptr) metrics_->HedgeStarted();
  next_start_ = internal::SaturatingAdd(now, hedging_->CurrentDelay());
  admission.action = HedgeAdmission::Action::kStart;
  admission.copy = started_;
  admission.timeout = TimeoutAt(now);
  return admission;
}

void HedgedCall::ReleaseRunning(TimePoint now, std::vector<int>* cancelled) {
  for (size_t i = 0; i < copies_.size(); ++i) {
    Copy& c = copies_[i];
    if (!c.running) continue;
    c.running = false;
    // Neither a success nor a failure: kIgnored frees a half-open slot; the
    // budget is not told.
    if (breaker_ != nullptr && c.permit.valid) {
      breaker_->Record(c.permit, CallResult::kIgnored, now - c.start, now);
    }
    ++cancelled_;
    if (cancelled != nullptr) cancelled->push_back(static_cast<int>(i) + 1);
  }
}

void HedgedCall::Finish(bool succeeded, StopReason reason, TimePoint now) {
  finished_ = true;
  reason_ = reason;
  if (metrics_ == nullptr || gate_only_) return;
  const Duration elapsed = now - start_;
  const int attempts = started_;  // copies sent; 0 when the first was refused
  if (succeeded) {
    metrics_->CallSucceeded(attempts, elapsed);
  } else {
    metrics_->CallFailed(attempts, elapsed, reason);
  }
}

HedgeDecision HedgedCall::Record(int copy, const Outcome& outcome, TimePoint now) {
  last_step_ = now;
  HedgeDecision decision;
  decision.classification = policy_->Classify(outcome);
  if (finished_ || copy < 1 || copy > started_ || !copies_[copy - 1].running) {
    decision.finished = finished_;
    decision.winner = winner_;
    decision.reason = reason_;
    return decision;
  }
  Copy& c = copies_[copy - 1];
  c.running = false;
  const Duration took = now - c.start;
  if (breaker_ != nullptr && c.permit.valid) {
    // Gate-only: the copy's own call judged the dependency; free the permit.
    breaker_->Record(c.permit, gate_only_ ? CallResult::kIgnored : ResultFor(decision.classification),
                     took, now);
  }
  if (decision.classification == Classification::kSuccess) {
    if (budget_ != nullptr && !gate_only_) {
      if (c.budget_cost >= 0) {
        budget_->OnRetriedSuccess(c.budget_cost);
      } else {
        budget_->AddSuccesses(1);
      }
    }
    hedging_->latencies().Record(took);
    winner_ = copy;
    ReleaseRunning(now, &decision.cancel);
    if (metrics_ != nullptr) {
      if (copy > 1) metrics_->HedgeWon();
      metrics_->HedgesCancelled(decision.cancel.size());
    }
    Finish(true, StopReason::kSucceeded, now);
  } else if (decision.classification == Classification::kTerminal) {
    // A6: a fatal status ends the call and cancels the outstanding copies.
    ReleaseRunning(now, &decision.cancel);
    if (metrics_ != nullptr) metrics_->HedgesCancelled(decision.cancel.size());
    Finish(false, StopReason::kTerminal, now);
  } else {
    if (budget_ != nullptr && !gate_only_) budget_->OnFailure(internal::BudgetFailureOf(outcome), now);
    // A6: a non-fatal status lets the next copy start at once, unless the
    // server pushed back (A6 "Pushback": grpc-retry-pushback-ms; HTTP's
    // Retry-After, RFC 9110 section 10.2.3): then no copy starts before the
    // hint has passed, and a hint over retry_after_max stops new copies as
    // it stops retries (RetryAfterOverflow::kStop; kClamp waits the max).
    next_start_ = now;
    const RetryOptions& retry = policy_->options();
    if (outcome.retry_after.has_value() && retry.respect_retry_after) {
      const Duration pushback = std::max(*outcome.retry_after, Duration::zero());
      if (pushback <= retry.retry_after_max) {
        next_start_ = internal::SaturatingAdd(now, pushback);
      } else if (retry.retry_after_overflow == RetryAfterOverflow::kClamp) {
        next_start_ = internal::SaturatingAdd(now, retry.retry_after_max);
      } else if (!no_more_.has_value()) {
        no_more_ = StopReason::kRetryAfterTooLong;
      }
    }
    const std::optional<Duration>& deadline = policy_->effective_deadline();
    // No copy may start at or after the deadline (a pushback past it stops).
    if (!no_more_.has_value() && deadline.has_value() && next_start_ >= start_ + *deadline) {
      no_more_ = StopReason::kDeadline;
    }
    const bool more = !no_more_.has_value() && started_ < max_attempts_;
    if (!more && running() == 0) {
      Finish(false, no_more_.value_or(StopReason::kAttemptsExhausted), now);
    }
  }
  decision.finished = finished_;
  decision.winner = winner_;
  decision.reason = finished_ ? reason_ : StopReason::kNone;
  return decision;
}

void HedgedCall::Abandon(TimePoint now) {
  if (finished_ || !live_.value) return;
  std::vector<int> cancelled;
  ReleaseRunning(now, &cancelled);
  if (metrics_ != nullptr) metrics_->HedgesCancelled(cancelled.size());
  Finish(false, StopReason::kTerminal, now);
}

void HedgedCall::Cancel(TimePoint now) {
  if (finished_ || !live_.value) return;
  last_step_ = now;
  std::vector<int> cancelled;
  ReleaseRunning(now, &cancelled);
  finished_ = true;
  reason_ = StopReason::kNone;
  if (metrics_ == nullptr) return;
  metrics_->HedgesCancelled(cancelled.size());
  if (!gate_only_) metrics_->CallCancelled(started_);
}

Status HedgedCall::RefusalStatus() const {
  if (!first_refused_ || breaker_ == nullptr) return OkStatus();
  Admission refused;
  refused.retry_in = refused_retry_in_;
  return breaker_->OpenStatus(refused);
}

}  // namespace v0
}  // namespace mulligan
