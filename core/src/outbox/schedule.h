// core/src/outbox/schedule.h — the retry decision after a failed delivery of
// an outbox entry: the policy's classification, backoff and jitter, and
// Retry-After rules (DESIGN.md section 5, the same rules RetrySession
// applies in memory), computed from what the database keeps about the entry
// so that a schedule continues unchanged across restarts.
//
// Thread-safety: a pure function of its inputs (the policy is immutable).

#ifndef MULLIGAN_SRC_OUTBOX_SCHEDULE_H_
#define MULLIGAN_SRC_OUTBOX_SCHEDULE_H_

#include <cstdint>

#include "mulligan/base/clock.h"
#include "mulligan/base/outcome.h"
#include "mulligan/outbox/outbox.h"
#include "mulligan/retry/policy.h"

namespace mulligan {
inline namespace v0 {
namespace outbox_internal {

// What the database knows about the entry when its attempt failed.
struct ScheduleInput {
  int64_t id = 0;
  // The number of the attempt that failed (1 for the first).
  int attempt = 1;
  // Attempts made before the last manual Retry (0 when none): the policy's
  // max_attempts counts from there.
  int attempt_base = 0;
  // The previous backoff delay (decorrelated jitter reads it); the policy's
  // base before the first retry.
  Duration previous_delay = Duration::zero();
  WallTime created_at;
  WallTime now;
};

// The decision: state kPending with delay and next_attempt_at, or kDead with
// a reason; classification is the policy's verdict on the outcome.
struct ScheduleDecision {
  OutboxFailure failure;
  Classification classification = Classification::kRetryable;
  // The backoff delay to keep as the next previous_delay (unchanged when the
  // wait came from Retry-After).
  Duration backoff_delay = Duration::zero();
};

// The seed of the jitter draw of attempt `attempt` of entry `id`:
// seed + id * 0x9E3779B97F4A7C15 + attempt, wrapping (see Outbox::Fail).
uint64_t JitterSeed(uint64_t seed, int64_t id, int attempt);

// Decides. REQUIRES: policy.Classify(outcome) is not kSuccess.
ScheduleDecision DecideAfterFailure(const RetryPolicy& policy, const Outcome& outcome,
                                    const ScheduleInput& input);

// Decides after a lease that expired unfinished (its worker died holding
// it, or overran lease_timeout): a retryable failure whatever the policy's
// classification would say of a timeout, since nothing is known of the
// attempt's result; so it is counted against max_attempts, backed off and
// bounded by the deadline as DecideAfterFailure does, and a poison entry
// (one that kills every worker) ends dead with reason kAttemptsExhausted.
// (Added in 0.6.)
ScheduleDecision DecideAfterLeaseExpiry(const RetryPolicy& policy, const ScheduleInput& input);

}  // namespace outbox_internal
}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_SRC_OUTBOX_SCHEDULE_H_
