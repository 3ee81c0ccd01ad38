// mulligan/retry/policy.h — the retry engine: a policy and its per-call session.
//
// The engine decides, the caller acts (DESIGN.md section 1):
//
//   mulligan::RetrySession session = policy.Begin(clock.Now());
//   for (;;) {
//     Outcome outcome = RunOneAttempt(session.AttemptTimeout(clock.Now()));
//     Decision decision = session.OnOutcome(outcome, clock.Now());
//     if (decision.action == Action::kStop) break;
//     clock.SleepFor(decision.delay);   // or asyncio.sleep, or a libcurl timer
//   }
//
// The policy and session never sleep, never read a clock and never call user
// code, which is why one engine serves blocking C++, C, Python threads,
// asyncio and libcurl's multi interface alike.

#ifndef MULLIGAN_RETRY_POLICY_H_
#define MULLIGAN_RETRY_POLICY_H_

#include <bitset>
#include <cstdint>
#include <optional>
#include <vector>

#include "mulligan/retry/backoff.h"
#include "mulligan/retry/stop.h"
#include "mulligan/base/clock.h"
#include "mulligan/base/outcome.h"
#include "mulligan/base/random.h"
#include "mulligan/base/status.h"

namespace mulligan {
inline namespace v0 {

// What to do with a Retry-After hint longer than retry_after_max.
enum class RetryAfterOverflow : int {
  // Stop at once with StopReason::kRetryAfterTooLong (the default: do not
  // sleep past the budget).
  kStop = 0,
  // Wait retry_after_max instead.
  kClamp = 1,
};

// The kind of a retryable failure, for separate retry counts (urllib3's
// Retry(connect=, read=, status=, other=)). Values are pinned (they cross the
// C ABI as MULLIGAN_RETRY_KIND_*); append only.
enum class RetryKind : int {
  // A transport failure before any byte was sent (refused, DNS, connect timeout).
  kConnect = 0,
  // A transport failure after the request was sent (reset, timeout, truncated).
  kRead = 1,
  // A retryable HTTP status or gRPC code the server answered.
  kStatus = 2,
  // Anything else (a failure the caller classified: a matching exception).
  kOther = 3,
};

// Returns "connect", "read", "status" or "other" (or "unknown").
const char* RetryKindName(RetryKind kind);
// Returns the kind of a retryable `outcome`.
RetryKind RetryKindOf(const Outcome& outcome);

// Plain options; every default is DESIGN.md section 4's.
struct RetryOptions {
  // Total attempts including the first. Must be >= 1. Default 3. Ignored
  // when `stop` is set.
  int max_attempts = 3;
  BackoffOptions backoff;
  // Total budget of one logical call, from the start of its first attempt.
  // No attempt starts at or after it. Must be > 0 when set. Default: none.
  std::optional<Duration> deadline;
  // Bound on a single attempt (trimmed to the time left before the deadline).
  // Must be > 0 when set. Default: none.
  std::optional<Duration> attempt_timeout;
  // The longest Retry-After hint honoured. Must be >= 0. Default 60 s.
  Duration retry_after_max = std::chrono::seconds(60);
  RetryAfterOverflow retry_after_overflow = RetryAfterOverflow::kStop;
  // Whether Retry-After replaces the backoff delay. Default true.
  bool respect_retry_after = true;
  // HTTP statuses that are retryable; every other status >= 400 is terminal and
  // every status < 400 a success. Each must be in [100, 599].
  // Default 408, 429, 500, 502, 503, 504.
  std::vector<int> retryable_statuses = {408, 429, 500, 502, 503, 504};
  // Transport error kinds that are retryable. Default: connection refused and
  // reset, DNS failure, connect timeout, timeout, other transport errors and
  // truncated responses; TLS errors and invalid URLs are terminal. kRetryable
  // is always retryable and kTerminal never, whatever this list says.
  std::vector<ErrorKind> retryable_errors = {
      ErrorKind::kConnectionRefused, ErrorKind::kConnectionReset, ErrorKind::kDnsFailure,
      ErrorKind::kConnectTimeout,    ErrorKind::kTimeout,         ErrorKind::kTransport,
      ErrorKind::kTruncated};
  // gRPC status codes (outcomes with grpc_status >= 0) that are retryable;
  // 0 (OK) is a success and every other code terminal. Each must be in
  // [1, 16]. Default UNAVAILABLE (14), as in gRFC A6 examples.
  std::vector<int> retryable_grpc_codes = {14};
  // Seed of the jitter generator. When set, every session starts from this
  // seed, so a call's delays are reproducible; when unset each session draws a
  // fresh seed. Default: unset.
  std::optional<uint64_t> seed;
  // A composed stop condition (stop.h) that replaces max_attempts: e.g.
  // StopExpr::Any({AfterAttempts(5), AfterElapsed(30s)}), or Never() with a
  // deadline for unlimited attempts. Its top-level after_elapsed terms also
  // act as a deadline (see effective_deadline()). Default: unset
  // (max_attempts decides). (Appended in 0.2.)
  std::optional<StopExpr> stop;
  // The most retries of each RetryKind, indexed by it (urllib3's connect,
  // read, status and other counts), each bounded on its own inside
  // max_attempts (or stop): a failure whose kind has used its count stops
  // the call with kAttemptsExhausted. Each >= 0 when set; 0 means "never
  // retry this kind". Default: unset (only the total bounds it). (Appended
  // in 0.2.)
  std::optional<int> max_kind_retries[4];
};

// Why a session stopped.
enum class StopReason : int {
  // Not stopped (the decision is kRetry).
  kNone = 0,
  // The attempt succeeded.
  kSucceeded = 1,
  // The outcome was terminal (a 404, a TLS error, a non-matching exception).
  kTerminal = 2,
  // max_attempts attempts were made.
  kAttemptsExhausted = 3,
  // The deadline has passed or the next wait would reach it.
  kDeadline = 4,
  // A Retry-After hint exceeded retry_after_max (with RetryAfterOverflow::kStop).
  kRetryAfterTooLong = 5,
  // The request is not replay-safe (POST/PATCH without an idempotency key) and
  // bytes had already been sent.
  kNotReplaySafe = 6,
  // A circuit breaker refused an attempt (the pipeline's Admit; never
  // retried).
  kCircuitOpen = 7,
  // A retry budget refused the retry (budget/budget.h); the last failure is
  // kept as the call's error. (Added in 0.3.)
  kBudget = 8,
  // Adaptive throttling rejected the attempt locally (budget/throttle.h;
  // never retried). (Added in 0.3.)
  kThrottled = 9,
  // A bulkhead refused the call: every slot busy and the wait queue full,
  // absent, or its wait timed out (limits/bulkhead.h; never retried).
  // (Added in 0.3.)
  kBulkheadFull = 10,
  // A rate limiter refused the call: the wait it would need exceeds its
  // max_wait or the deadline (limits/rate_limiter.h; never retried).
  // (Added in 0.3.)
  kRateLimited = 11,
  // A stop condition's predicate said stop (RetryOptions::stop, a
  // StopExpr::Predicate term; Python's mulligan.stop.when). (Appended in 0.2.)
  kStopCondition = 12,
};

// Returns "none", "succeeded", "terminal", "attempts_exhausted", "deadline",
// "retry_after_too_long", "not_replay_safe", "circuit_open",
// "stop_condition", "budget" or "throttled".
const char* StopReasonName(StopReason reason);

// The engine's answer to one outcome.
struct Decision {
  enum class Action : int { kRetry = 0, kStop = 1 };
  Action action = Action::kStop;
  // The wait before the next attempt; zero when stopping.
  Duration delay = Duration::zero();
  // Why the session stopped (kNone when retrying).
  StopReason reason = StopReason::kNone;
  // The policy's verdict on the outcome that led here.
  Classification classification = Classification::kSuccess;
  // The attempt whose outcome this decision answers (1 for the first).
  int attempt = 0;
  // True when the delay came from a Retry-After hint rather than the backoff.
  bool from_retry_after = false;
  // Pipeline calls only (pipeline/call.h): the call stopped on a failure its
  // fallback answers (it gave up on retryable failures); the front door
  // returns the fallback's value instead of the error.
  bool use_fallback = false;

  bool retry() const { return action == Action::kRetry; }
};

class RetrySession;

// A validated, immutable retry policy.
//
// Thread-safety: immutable after Create and safe to share between threads;
// each logical call uses its own RetrySession.
class RetryPolicy {
 public:
  // Validates `options`; kInvalidArgument names the first bad field
  // ("max_attempts must be >= 1, got 0").
  static Result<RetryPolicy> Create(const RetryOptions& options);
  // Returns a policy with every default.
  static RetryPolicy Default();

  // Starts one logical call whose first attempt starts at `now`.
  // `replay_safe` is false for a request that must not be repeated once sent
  // (POST/PATCH without an idempotency key): only failures that happened
  // before any byte was sent are then retried.
  // REQUIRES: this policy outlives the session.
  RetrySession Begin(TimePoint now, bool replay_safe = true) const;
  // Like Begin above, but the session's jitter generator is seeded with
  // `seed`, whatever options().seed says: one policy shared by many callers
  // that each need their own reproducible jitter (the fleet of `mulligan
  // simulate`, simulate/fleet.h). (Added in 0.6.)
  RetrySession Begin(TimePoint now, bool replay_safe, uint64_t seed) const;

  // Returns the classification of `outcome` under this policy (ignoring
  // attempts and deadlines).
  Classification Classify(const Outcome& outcome) const;

  const RetryOptions& options() const { return options_; }
  const Backoff& backoff() const { return backoff_; }
  // The budget of one logical call: the least of options().deadline and the
  // top-level after_elapsed terms of options().stop (nullopt: none).
  const std::optional<Duration>& effective_deadline() const { return effective_deadline_; }

 private:
  RetryPolicy(const RetryOptions& options, const Backoff& backoff);

  RetryOptions options_;
  Backoff backoff_;
  std::bitset<600> retryable_status_bits_;
  uint32_t retryable_error_bits_ = 0;
  uint32_t retryable_grpc_bits_ = 0;
  std::optional<Duration> effective_deadline_;
};

// The state of one logical call: attempts made, the previous delay, the jitter
// generator and the deadline.
//
// Thread-safety: not thread-safe; one session belongs to one call. Cheap to
// create (no allocation).
class RetrySession {
 public:
  // Records the outcome of the attempt that just finished at `now` and
  // returns what to do next. After a kStop decision the session is finished
  // and further calls return the same stop decision again.
  Decision OnOutcome(const Outcome& outcome, TimePoint now);

  // Returns the timeout for the next attempt starting at `now`: the policy's
  // attempt_timeout trimmed to the time left before the deadline, or nullopt
  // when neither is set. May be zero when the deadline has passed.
  std::optional<Duration> AttemptTimeout(TimePoint now) const;
  // Returns the time left before the effective deadline at `now` (never
  // negative), or nullopt without one.
  std::optional<Duration> TimeLeft(TimePoint now) const;

  // Attempts whose outcome has been recorded.
  int attempts() const { return attempts_; }
  // When the first attempt started.
  TimePoint start() const { return start_; }
  bool finished() const { return finished_; }
  const RetryPolicy& policy() const { return *policy_; }

 private:
  friend class RetryPolicy;
  RetrySession(const RetryPolicy* policy, TimePoint start, bool replay_safe, Random random);

  const RetryPolicy* policy_;
  TimePoint start_;
  Duration previous_delay_;
  Random random_;
  int attempts_ = 0;
  // Retries decided so far, by RetryKind.
  int kind_retries_[4] = {0, 0, 0, 0};
  bool replay_safe_;
  bool finished_ = false;
  Decision last_decision_;

  // Returns the stop decision's reason from options().stop or max_attempts
  // for this failure (delay: nullopt before the wait is known), or nullopt.
  std::optional<StopReason> StopBy(const Outcome& outcome, TimePoint now,
                                   std::optional<Duration> delay) const;
};

}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_RETRY_POLICY_H_
