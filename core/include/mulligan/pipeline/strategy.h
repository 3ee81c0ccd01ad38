// mulligan/pipeline/strategy.h — the one internal interface behind which the
// pipeline's strategies plug in (DESIGN.md section 2).
//
// NOT PART OF THE API: everything here is in mulligan::internal. It sits in a
// public header only because Pipeline keeps its strategies by value, so that
// a pipeline borrowed for one RetryCall costs no allocation; user code must
// not name these types, and they may change in any release.
//
// A strategy is asked three things, in the pipeline's fixed order (outermost
// first for Admit; after the retry decision for Record):
//   Admit    before each attempt: go (the default), or refuse with a reason;
//   Record   after each attempt, given the retry decision already made: it
//            may turn a retry into a stop (a budget), and it records what it
//            must (a breaker's result);
//   Release  when the call ends without a Record of its last attempt
//            (abandoned, cancelled): it frees whatever it still holds.
// Per-call state lives in CallState (one per logical call, single-threaded),
// with a field per strategy that needs one, so no strategy allocates per call.

#ifndef MULLIGAN_PIPELINE_STRATEGY_H_
#define MULLIGAN_PIPELINE_STRATEGY_H_

#include <memory>
#include <optional>
#include <string>

#include "mulligan/base/clock.h"
#include "mulligan/base/outcome.h"
#include "mulligan/breaker/circuit_breaker.h"
#include "mulligan/budget/budget.h"
#include "mulligan/budget/throttle.h"
#include "mulligan/limits/adaptive_rate.h"
#include "mulligan/limits/bulkhead.h"
#include "mulligan/limits/rate_limiter.h"
#include "mulligan/retry/policy.h"

namespace mulligan {
inline namespace v0 {

struct AttemptAdmission;  // pipeline/call.h

namespace internal {

// What strategies keep for one logical call. Owned by Call; single-threaded.
struct CallState {
  // The attempt being admitted or just recorded (1 for the first).
  int attempt = 0;
  // When the attempt being admitted or recorded started.
  TimePoint attempt_start;
  // Strategy 5, circuit breaker: the breaker guarding this call (null
  // without), kept alive while the call runs when it came from a registry,
  // and the permit of the attempt in flight.
  CircuitBreaker* breaker = nullptr;
  std::shared_ptr<CircuitBreaker> breaker_owner;
  Permit permit;
  // Strategy 4, retry budget: what the call's last retry took (-1: no retry
  // was granted yet). (Added in 0.3.)
  int64_t budget_cost = -1;
  // Strategy 2, bulkhead / rate limiter (Added in 0.3.): the time left
  // before the deadline at this Admit (set by Call::Admit), whether the
  // call holds a bulkhead slot, its queue ticket while it waits, and until
  // when it may wait; the rate limiter's key (the call key), and the instant
  // its reserved slot comes due.
  std::optional<Duration> time_left;
  bool bulkhead_held = false;
  std::shared_ptr<BulkheadTicket> ticket;
  TimePoint bulkhead_wait_until;
  std::string limiter_key;
  bool limiter_reserved = false;
  bool limiter_passed = false;
  TimePoint limiter_ready;
  // The adaptive rate's token reserved for the attempt being admitted, and
  // when it comes due (0.4).
  bool adaptive_reserved = false;
  bool adaptive_refused = false;
  TimePoint adaptive_ready;
};

// The interface every strategy implements. Implementations are immutable
// after the pipeline is built, and shared by every call of it.
// Thread-safety: every method may run on many threads at once, each with its
// own CallState.
class Strategy {
 public:
  virtual ~Strategy() = default;
  // Before attempt `call.attempt` at `now`: leaves `admission` as it is to let
  // the attempt go, or sets its action to kRefuse (with a reason) to stop the
  // call. Later strategies are not asked once one refused.
  virtual void Admit(CallState& call, TimePoint now, AttemptAdmission& admission) const = 0;
  // After the attempt ended at `now` with `outcome`, classified and decided
  // by the retry strategy as `decision` (which this may change).
  virtual void Record(CallState& call, const Outcome& outcome, Decision& decision,
                      TimePoint now) const = 0;
  // The call ended without recording the attempt it admitted last.
  virtual void Release(CallState& call, TimePoint now) const = 0;
};

// Strategy 5: the circuit breaker, one for every call or one per call key
// from a registry. The rules are DESIGN.md section 5's and RetryCall's:
//   - Acquire before every attempt; a refusal ends the call (kCircuitOpen);
//   - one result per logical call (by default): the last attempt's permit
//     records the call's final classification; a permit followed by a retry
//     is dropped unrecorded (it holds no slot), EXCEPT a half-open probe,
//     which records its own attempt at once (a failed probe reopens the
//     breaker, and the retry is refused);
//   - per_attempt: every attempt records its own result;
//   - the recorded duration is the attempt's (slow-call detection).
class BreakerStrategy final : public Strategy {
 public:
  BreakerStrategy() = default;
  void Configure(CircuitBreaker* breaker, class BreakerRegistry* registry, bool per_attempt) {
    breaker_ = breaker;
    registry_ = registry;
    per_attempt_ = per_attempt;
  }
  bool enabled() const { return breaker_ != nullptr || registry_ != nullptr; }
  // Resolves the call's breaker: the fixed one, or `key`'s from the registry
  // (none when the registry is full of live breakers: the call runs
  // unguarded rather than stopping traffic).
  void Bind(CallState& call, std::string_view key) const;

  void Admit(CallState& call, TimePoint now, AttemptAdmission& admission) const override;
  void Record(CallState& call, const Outcome& outcome, Decision& decision,
              TimePoint now) const override;
  void Release(CallState& call, TimePoint now) const override;

 private:
  CircuitBreaker* breaker_ = nullptr;
  class BreakerRegistry* registry_ = nullptr;
  bool per_attempt_ = false;
};

// Strategy 4's gates (Added in 0.3.): the retry budget and adaptive
// throttling (budget/budget.h, budget/throttle.h).
//   Budget: the first attempt is never asked; a retryable failure is told
//   (A6 takes a token); a retry decision asks TryRetry, and a refusal turns
//   it into a stop with kBudget (the failure stays the call's error). A
//   success that needed no retry is counted lazily (AddSuccesses); one after
//   retries refunds what the last retry took (AWS). Terminal failures are
//   not told (A6 counts only retryable codes).
class BudgetStrategy final : public Strategy {
 public:
  void Configure(RetryBudget* budget) { budget_ = budget; }
  bool enabled() const { return budget_ != nullptr; }
  // A call began (kRatio deposits).
  void Begin(TimePoint now) const {
    if (budget_ != nullptr) budget_->OnCallStarted(now);
  }
  void Admit(CallState&, TimePoint, AttemptAdmission&) const override {}
  void Record(CallState& call, const Outcome& outcome, Decision& decision,
              TimePoint now) const override;
  void Release(CallState&, TimePoint) const override {}

 private:
  RetryBudget* budget_ = nullptr;
};

//   Throttle: asked before every attempt (retries are requests too, as the
//   SRE book counts them); a rejection refuses with kThrottled; every
//   recorded attempt that was not an overload answer counts an accept.
class ThrottleStrategy final : public Strategy {
 public:
  void Configure(AdaptiveThrottle* throttle) { throttle_ = throttle; }
  bool enabled() const { return throttle_ != nullptr; }
  void Admit(CallState& call, TimePoint now, AttemptAdmission& admission) const override;
  void Record(CallState& call, const Outcome& outcome, Decision& decision,
              TimePoint now) const override;
  void Release(CallState&, TimePoint) const override {}

 private:
  AdaptiveThrottle* throttle_ = nullptr;
};

// The budget failure kind of a retryable outcome: a timeout, an overload
// answer (429, 503, RESOURCE_EXHAUSTED), or other.
BudgetFailure BudgetFailureOf(const Outcome& outcome);

// Strategy 2: the bulkhead and the rate limiter (limits/bulkhead.h,
// limits/rate_limiter.h). (Added in 0.3.) The bulkhead is asked first, then
// the limiter:
//   - bulkhead: a slot is taken before the first attempt and held until the
//     call ends (all attempts and waits), or per attempt with per_attempt;
//     a full bulkhead queues the call (kWait with a ticket, bounded by
//     max_wait and the deadline) or refuses it (kBulkheadFull);
//   - rate limiter: asked once per call by default, or before every attempt
//     with per_attempt; a wait is kWait with the exact delay (the slot is
//     reserved), a refusal kRateLimited with retry_in; with
//     penalize_retry_after, a 429/503 hint holds the key (Record).
class LimitsStrategy final : public Strategy {
 public:
  LimitsStrategy() = default;
  void Configure(Bulkhead* bulkhead, bool bulkhead_per_attempt, RateLimiter* limiter,
                 bool limiter_per_attempt) {
    bulkhead_ = bulkhead;
    bulkhead_per_attempt_ = bulkhead_per_attempt;
    limiter_ = limiter;
    limiter_per_attempt_ = limiter_per_attempt;
  }
  // The AWS adaptive-mode client rate, asked before every attempt (0.4).
  void ConfigureAdaptive(AdaptiveRate* adaptive) { adaptive_ = adaptive; }
  bool enabled() const {
    return bulkhead_ != nullptr || limiter_ != nullptr || adaptive_ != nullptr;
  }
  Bulkhead* bulkhead() const { return bulkhead_; }
  RateLimiter* limiter() const { return limiter_; }

  void Admit(CallState& call, TimePoint now, AttemptAdmission& admission) const override;
  void Record(CallState& call, const Outcome& outcome, Decision& decision,
              TimePoint now) const override;
  void Release(CallState& call, TimePoint now) const override;

 private:
  void AdmitBulkhead(CallState& call, TimePoint now, AttemptAdmission& admission) const;
  void AdmitLimiter(CallState& call, TimePoint now, AttemptAdmission& admission) const;
  void AdmitAdaptive(CallState& call, TimePoint now, AttemptAdmission& admission) const;

  Bulkhead* bulkhead_ = nullptr;
  bool bulkhead_per_attempt_ = false;
  RateLimiter* limiter_ = nullptr;
  bool limiter_per_attempt_ = false;
  AdaptiveRate* adaptive_ = nullptr;
};

}  // namespace internal
}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_PIPELINE_STRATEGY_H_
