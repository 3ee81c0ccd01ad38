// core/src/outbox/schedule.cc — see schedule.h.

#include "outbox/schedule.h"

#include <algorithm>
#include <chrono>

#include "mulligan/base/random.h"

namespace mulligan {
inline namespace v0 {
namespace outbox_internal {

uint64_t JitterSeed(uint64_t seed, int64_t id, int attempt) {
  return seed + static_cast<uint64_t>(id) * 0x9E3779B97F4A7C15ULL +
         static_cast<uint64_t>(attempt);
}

namespace {

ScheduleDecision Dead(ScheduleDecision decision, StopReason reason, const ScheduleInput& input) {
  decision.failure.state = OutboxState::kDead;
  decision.failure.reason = reason;
  decision.failure.delay = Duration::zero();
  decision.failure.next_attempt_at = input.now;
  return decision;
}

// now + delay, saturating at the largest representable time.
WallTime AddSaturating(WallTime now, Duration delay) {
  const auto since_epoch = now.time_since_epoch();
  if (delay > WallTime::duration::max() - since_epoch) return WallTime::max();
  return now + std::chrono::duration_cast<WallTime::duration>(delay);
}

ScheduleDecision Decide(const RetryPolicy& policy, const Outcome& outcome,
                        Classification classification, const ScheduleInput& input) {
  const RetryOptions& options = policy.options();
  ScheduleDecision decision;
  decision.failure.attempt = input.attempt;
  decision.backoff_delay = input.previous_delay;
  decision.classification = classification;
  if (decision.classification == Classification::kTerminal)
    return Dead(decision, StopReason::kTerminal, input);
  if (input.attempt - input.attempt_base >= options.max_attempts)
    return Dead(decision, StopReason::kAttemptsExhausted, input);

  Duration delay;
  if (outcome.retry_after && options.respect_retry_after) {
    delay = std::max(*outcome.retry_after, Duration::zero());
    if (delay > options.retry_after_max) {
      if (options.retry_after_overflow == RetryAfterOverflow::kStop)
        return Dead(decision, StopReason::kRetryAfterTooLong, input);
      delay = options.retry_after_max;
    }
  } else {
    Random random = options.seed ? Random(JitterSeed(*options.seed, input.id, input.attempt))
                                 : Random::FromEntropy();
    // n = retries already made before this one: attempt 1 failed -> n = 0.
    delay = policy.backoff().Delay(static_cast<uint64_t>(input.attempt - 1),
                                   input.previous_delay, random);
    decision.backoff_delay = delay;
  }
  decision.failure.delay = delay;
  decision.failure.next_attempt_at = AddSaturating(input.now, delay);
  if (const auto& deadline = policy.effective_deadline()) {
    // The entry's age bound: no attempt starts at or after created + deadline.
    if (decision.failure.next_attempt_at >= AddSaturating(input.created_at, *deadline))
      return Dead(decision, StopReason::kDeadline, input);
  }
  decision.failure.state = OutboxState::kPending;
  return decision;
}

}  // namespace

ScheduleDecision DecideAfterFailure(const RetryPolicy& policy, const Outcome& outcome,
                                    const ScheduleInput& input) {
  return Decide(policy, outcome, policy.Classify(outcome), input);
}

ScheduleDecision DecideAfterLeaseExpiry(const RetryPolicy& policy, const ScheduleInput& input) {
  return Decide(policy, Outcome::Transport(ErrorKind::kTimeout), Classification::kRetryable,
                input);
}

}  // namespace outbox_internal
}  // namespace v0
}  // namespace mulligan
