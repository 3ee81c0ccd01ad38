// core/src/limits/limits_strategy.cc — strategy 2 of the pipeline: the
// bulkhead and the rate limiter (pipeline/strategy.h, DESIGN.md section 2),
// and WaitForAdmission, the blocking front doors' way to wait on a kWait.

#include <algorithm>

#include "mulligan/pipeline/call.h"
#include "mulligan/pipeline/strategy.h"
#include "internal/saturating.h"

namespace mulligan {
inline namespace v0 {
namespace internal {

void LimitsStrategy::AdmitBulkhead(CallState& call, TimePoint now,
                                   AttemptAdmission& admission) const {
  if (call.bulkhead_held) return;
  auto refuse = [&] {
    admission.action = AttemptAdmission::Action::kRefuse;
    admission.reason = StopReason::kBulkheadFull;
  };
  if (call.ticket) {
    if (call.ticket->granted()) {
      call.ticket.reset();
      call.bulkhead_held = true;
      return;
    }
    if (now >= call.bulkhead_wait_until) {
      // Gave up: a slot granted at this very moment goes to the next waiter.
      call.ticket->Cancel();
      call.ticket.reset();
      bulkhead_->CountTimeout();
      refuse();
      return;
    }
    admission.action = AttemptAdmission::Action::kWait;
    admission.delay = call.bulkhead_wait_until - now;
    admission.ticket = call.ticket;
    return;
  }
  if (bulkhead_->TryAcquire()) {
    call.bulkhead_held = true;
    return;
  }
  // The wait is bounded by max_wait and by the deadline (an attempt may not
  // start at or after it).
  const BulkheadOptions& options = bulkhead_->options();
  Duration wait = options.max_wait ? *options.max_wait : Duration::max();
  if (call.time_left) wait = std::min(wait, *call.time_left);
  if (options.max_queue == 0 || wait <= Duration::zero()) {
    bulkhead_->CountFull();
    refuse();
    return;
  }
  std::shared_ptr<BulkheadTicket> ticket = bulkhead_->Enqueue();
  if (!ticket) {
    refuse();
    return;
  }
  if (ticket->granted()) {
    call.bulkhead_held = true;
    return;
  }
  call.ticket = std::move(ticket);
  call.bulkhead_wait_until =
      wait >= TimePoint::max() - now ? TimePoint::max() : now + wait;
  admission.action = AttemptAdmission::Action::kWait;
  admission.delay = call.bulkhead_wait_until - now;
  admission.ticket = call.ticket;
}

void LimitsStrategy::AdmitLimiter(CallState& call, TimePoint now,
                                  AttemptAdmission& admission) const {
  if (call.limiter_reserved) {
    if (now >= call.limiter_ready) {
      call.limiter_reserved = false;
      call.limiter_passed = true;
      return;
    }
    admission.action = AttemptAdmission::Action::kWait;
    admission.delay = call.limiter_ready - now;
    return;
  }
  if (call.limiter_passed && !limiter_per_attempt_) return;
  const RateLimiterOptions& options = limiter_->options();
  Duration bound = options.max_wait ? *options.max_wait : Duration::max();
  if (call.time_left) {
    // The attempt must start strictly before the deadline.
    bound = std::min(bound, *call.time_left - Duration(1));
  }
  const RateDecision answer = limiter_->Acquire(call.limiter_key, now, bound);
  if (!answer.admitted) {
    admission.action = AttemptAdmission::Action::kRefuse;
    admission.reason = StopReason::kRateLimited;
    admission.retry_in = answer.retry_in;
    return;
  }
  if (answer.wait <= Duration::zero()) {
    call.limiter_passed = true;
    return;
  }
  call.limiter_reserved = true;
  call.limiter_ready = now + answer.wait;
  admission.action = AttemptAdmission::Action::kWait;
  admission.delay = answer.wait;
}

// Every attempt takes a token (AWS adaptive mode is attempt-level); a
// reserved token is kept across the wait and spent when it comes due.
void LimitsStrategy::AdmitAdaptive(CallState& call, TimePoint now,
                                   AttemptAdmission& admission) const {
  if (call.adaptive_reserved) {
    if (now >= call.adaptive_ready) {
      call.adaptive_reserved = false;
      return;
    }
    admission.action = AttemptAdmission::Action::kWait;
    admission.delay = call.adaptive_ready - now;
    return;
  }
  const AdaptiveRateOptions& options = adaptive_->options();
  Duration bound = options.max_wait ? *options.max_wait : Duration::max();
  if (call.time_left) bound = std::min(bound, *call.time_left - Duration(1));
  const RateDecision answer = adaptive_->Acquire(now, bound);
  if (!answer.admitted) {
    call.adaptive_refused = true;
    admission.action = AttemptAdmission::Action::kRefuse;
    admission.reason = StopReason::kRateLimited;
    admission.retry_in = answer.retry_in;
    return;
  }
  if (answer.wait <= Duration::zero()) return;
  call.adaptive_reserved = true;
  call.adaptive_ready = now + answer.wait;
  admission.action = AttemptAdmission::Action::kWait;
  admission.delay = answer.wait;
}

void LimitsStrategy::Admit(CallState& call, TimePoint now, AttemptAdmission& admission) const {
  if (bulkhead_ != nullptr) {
    AdmitBulkhead(call, now, admission);
    if (!admission.go()) return;
  }
  if (limiter_ != nullptr) {
    AdmitLimiter(call, now, admission);
    if (!admission.go()) return;
  }
  if (adaptive_ != nullptr) AdmitAdaptive(call, now, admission);
}

void LimitsStrategy::Record(CallState& call, const Outcome& outcome, Decision& decision,
                            TimePoint now) const {
  if (adaptive_ != nullptr) adaptive_->RecordOutcome(outcome, now);
  if (limiter_ != nullptr && limiter_->options().penalize_retry_after && outcome.retry_after &&
      (outcome.http_status == 429 || outcome.http_status == 503)) {
    limiter_->Penalize(call.limiter_key,
                       SaturatingAdd(now, std::max(*outcome.retry_after, Duration::zero())));
  }
  if (bulkhead_ != nullptr && call.bulkhead_held &&
      (bulkhead_per_attempt_ || !decision.retry())) {
    call.bulkhead_held = false;
    bulkhead_->Release();
  }
}

void LimitsStrategy::Release(CallState& call, TimePoint) const {
  if (call.ticket) {
    call.ticket->Cancel();
    call.ticket.reset();
  }
  if (bulkhead_ != nullptr && call.bulkhead_held) {
    call.bulkhead_held = false;
    bulkhead_->Release();
  }
  call.limiter_reserved = false;
  call.adaptive_reserved = false;
}

}  // namespace internal

void WaitForAdmission(const AttemptAdmission& admission, Clock& clock) {
  if (!admission.wait()) return;
  if (admission.ticket) {
    if (dynamic_cast<SystemClock*>(&clock) != nullptr) {
      (void)admission.ticket->WaitFor(admission.delay);
      return;
    }
    if (admission.ticket->granted()) return;
    // No bound at all (no max_wait, no deadline): only a grant ends it.
    if (admission.delay >= std::chrono::hours(24 * 365)) {
      (void)admission.ticket->WaitFor(admission.delay);
      return;
    }
  }
  clock.SleepFor(admission.delay);
}

}  // namespace v0
}  // namespace mulligan
