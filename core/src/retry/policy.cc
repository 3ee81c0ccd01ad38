// core/src/retry/policy.cc — the retry engine: RetryPolicy validation and
// classification, RetrySession decisions.
#include "mulligan/retry/policy.h"

#include "internal/format.h"

#include <limits>
#include <string>

namespace mulligan {
inline namespace v0 {

const char* StopReasonName(StopReason reason) {
  switch (reason) {
    case StopReason::kNone: return "none";
    case StopReason::kSucceeded: return "succeeded";
    case StopReason::kTerminal: return "terminal";
    case StopReason::kAttemptsExhausted: return "attempts_exhausted";
    case StopReason::kDeadline: return "deadline";
    case StopReason::kRetryAfterTooLong: return "retry_after_too_long";
    case StopReason::kNotReplaySafe: return "not_replay_safe";
    case StopReason::kCircuitOpen: return "circuit_open";
    case StopReason::kStopCondition: return "stop_condition";
    case StopReason::kBudget: return "budget";
    case StopReason::kThrottled: return "throttled";
    case StopReason::kBulkheadFull: return "bulkhead_full";
    case StopReason::kRateLimited: return "rate_limited";
  }
  return "unknown";
}

const char* RetryKindName(RetryKind kind) {
  switch (kind) {
    case RetryKind::kConnect: return "connect";
    case RetryKind::kRead: return "read";
    case RetryKind::kStatus: return "status";
    case RetryKind::kOther: return "other";
  }
  return "unknown";
}

RetryKind RetryKindOf(const Outcome& outcome) {
  switch (outcome.error) {
    case ErrorKind::kNone: return RetryKind::kStatus;
    case ErrorKind::kRetryable:
    case ErrorKind::kTerminal: return RetryKind::kOther;
    default: return outcome.request_sent ? RetryKind::kRead : RetryKind::kConnect;
  }
}

namespace {

// The last ErrorKind (the enum is appended to: keep this its last value).
constexpr int kMaxErrorKind = static_cast<int>(ErrorKind::kTruncated);

// Seeds of unseeded sessions come from one entropy-seeded generator per
// thread, so beginning a session costs no system call.
uint64_t NextSessionSeed() {
  thread_local Random seeds = Random::FromEntropy();
  return seeds.NextU64();
}

}  // namespace

Result<RetryPolicy> RetryPolicy::Create(const RetryOptions& options) {
  if (options.max_attempts < 1) {
    return InvalidArgumentError("max_attempts must be >= 1, got " +
                                std::to_string(options.max_attempts));
  }
  if (options.deadline && *options.deadline <= Duration::zero()) {
    return InvalidArgumentError("deadline must be > 0 when set, got " + internal::FormatSeconds(*options.deadline));
  }
  if (options.attempt_timeout && *options.attempt_timeout <= Duration::zero()) {
    return InvalidArgumentError("attempt_timeout must be > 0 when set, got " +
                                internal::FormatSeconds(*options.attempt_timeout));
  }
  if (options.retry_after_max < Duration::zero()) {
    return InvalidArgumentError("retry_after_max must be >= 0, got " +
                                internal::FormatSeconds(options.retry_after_max));
  }
  if (options.retry_after_overflow != RetryAfterOverflow::kStop &&
      options.retry_after_overflow != RetryAfterOverflow::kClamp) {
    return InvalidArgumentError("retry_after_overflow must be stop or clamp");
  }
  Result<Backoff> backoff = Backoff::Create(options.backoff);
  if (!backoff.ok()) return backoff.status();
  if (options.stop) {
    Status s = ValidateStop(*options.stop, options.deadline.has_value());
    if (!s.ok()) return s;
  }
  for (int k = 0; k < 4; ++k) {
    const std::optional<int>& n = options.max_kind_retries[k];
    if (n && *n < 0) {
      return InvalidArgumentError(std::string("max_") + RetryKindName(static_cast<RetryKind>(k)) +
                                  "_retries must be >= 0 when set, got " + std::to_string(*n));
    }
  }

  RetryPolicy policy(options, *backoff);
  policy.effective_deadline_ = options.deadline;
  if (options.stop) {
    const std::optional<Duration> elapsed = TopLevelElapsed(*options.stop);
    if (elapsed && (!options.deadline || *elapsed < *options.deadline)) {
      policy.effective_deadline_ = elapsed;
    }
  }
  for (int status : options.retryable_statuses) {
    if (status < 100 || status > 599) {
      return InvalidArgumentError("retryable_statuses must hold HTTP statuses in [100, 599], got " +
                                  std::to_string(status));
    }
    policy.retryable_status_bits_.set(static_cast<size_t>(status));
  }
  for (ErrorKind kind : options.retryable_errors) {
    const int value = static_cast<int>(kind);
    if (value <= 0 || value > kMaxErrorKind) {
      return InvalidArgumentError("retryable_errors holds an unknown error kind " +
                                  std::to_string(value));
    }
    policy.retryable_error_bits_ |= 1u << value;
  }
  for (int code : options.retryable_grpc_codes) {
    if (code < 1 || code > 16) {
      return InvalidArgumentError("retryable_grpc_codes must hold gRPC codes in [1, 16], got " +
                                  std::to_string(code));
    }
    policy.retryable_grpc_bits_ |= 1u << code;
  }
  return policy;
}

RetryPolicy RetryPolicy::Default() {
  // The defaults are valid by construction.
  return std::move(Create(RetryOptions{})).value();
}

RetryPolicy::RetryPolicy(const RetryOptions& options, const Backoff& backoff)
    : options_(options), backoff_(backoff) {}

RetrySession RetryPolicy::Begin(TimePoint now, bool replay_safe) const {
  Random random(options_.seed ? *options_.seed : NextSessionSeed());
  return RetrySession(this, now, replay_safe, random);
}

RetrySession RetryPolicy::Begin(TimePoint now, bool replay_safe, uint64_t seed) const {
  return RetrySession(this, now, replay_safe, Random(seed));
}

Classification RetryPolicy::Classify(const Outcome& outcome) const {
  switch (outcome.error) {
    case ErrorKind::kNone: {
      if (outcome.grpc_status >= 0) {
        const int code = outcome.grpc_status;
        if (code == 0) return Classification::kSuccess;
        if (code <= 16 && (retryable_grpc_bits_ & (1u << code))) {
          return Classification::kRetryable;
        }
        return Classification::kTerminal;
      }
      const int status = outcome.http_status;
      if (status < 400) return Classification::kSuccess;  // includes 0: no HTTP
      if (status < 600 && retryable_status_bits_.test(static_cast<size_t>(status))) {
        return Classification::kRetryable;
      }
      return Classification::kTerminal;
    }
    case ErrorKind::kRetryable: return Classification::kRetryable;
    case ErrorKind::kTerminal: return Classification::kTerminal;
    default: {
      const int value = static_cast<int>(outcome.error);
      if (value > 0 && value <= kMaxErrorKind && (retryable_error_bits_ & (1u << value))) {
        return Classification::kRetryable;
      }
      return Classification::kTerminal;
    }
  }
}

RetrySession::RetrySession(const RetryPolicy* policy, TimePoint start, bool replay_safe,
                           Random random)
    : policy_(policy),
      start_(start),
      previous_delay_(policy->options().backoff.base),
      random_(random),
      replay_safe_(replay_safe) {}

std::optional<Duration> RetrySession::TimeLeft(TimePoint now) const {
  const std::optional<Duration>& deadline = policy_->effective_deadline();
  if (!deadline) return std::nullopt;
  const Duration used = now - start_;
  return used >= *deadline ? Duration::zero() : *deadline - used;
}

std::optional<Duration> RetrySession::AttemptTimeout(TimePoint now) const {
  const std::optional<Duration> left = TimeLeft(now);
  const std::optional<Duration>& per_attempt = policy_->options().attempt_timeout;
  if (left && per_attempt) return std::min(*left, *per_attempt);
  return left ? left : per_attempt;
}

std::optional<StopReason> RetrySession::StopBy(const Outcome& outcome, TimePoint now,
                                              std::optional<Duration> delay) const {
  const RetryOptions& options = policy_->options();
  if (!options.stop) {
    if (attempts_ >= options.max_attempts) return StopReason::kAttemptsExhausted;
    return std::nullopt;
  }
  StopContext context;
  context.attempts = attempts_;
  context.elapsed = now - start_;
  context.delay = delay;
  context.predicates = outcome.stop_predicates;
  return EvaluateStop(*options.stop, context);
}

Decision RetrySession::OnOutcome(const Outcome& outcome, TimePoint now) {
  if (finished_) return last_decision_;
  const RetryOptions& options = policy_->options();
  // Saturates: unlimited attempts (StopExpr::Never) with zero waits could
  // in principle count past INT_MAX.
  if (attempts_ < std::numeric_limits<int>::max()) ++attempts_;

  Decision decision;
  decision.attempt = attempts_;
  decision.classification = policy_->Classify(outcome);
  auto stop = [&](StopReason reason) {
    decision.action = Decision::Action::kStop;
    decision.delay = Duration::zero();
    decision.reason = reason;
    decision.from_retry_after = false;
    finished_ = true;
    last_decision_ = decision;
    return decision;
  };

  switch (decision.classification) {
    case Classification::kSuccess: return stop(StopReason::kSucceeded);
    case Classification::kTerminal: return stop(StopReason::kTerminal);
    case Classification::kRetryable: break;
  }
  if (!replay_safe_ && outcome.request_sent) return stop(StopReason::kNotReplaySafe);
  if (std::optional<StopReason> by = StopBy(outcome, now, std::nullopt)) return stop(*by);
  // urllib3's per-kind counts, each inside the total.
  const int kind = static_cast<int>(RetryKindOf(outcome));
  const std::optional<int>& kind_max = options.max_kind_retries[kind];
  if (kind_max && kind_retries_[kind] >= *kind_max) return stop(StopReason::kAttemptsExhausted);

  const std::optional<Duration> left = TimeLeft(now);
  if (left && *left <= Duration::zero()) return stop(StopReason::kDeadline);

  Duration delay;
  if (options.respect_retry_after && outcome.retry_after) {
    // RFC 9110 section 10.2.3: the server's hint replaces the backoff delay.
    delay = std::max(*outcome.retry_after, Duration::zero());
    if (delay > options.retry_after_max) {
      if (options.retry_after_overflow == RetryAfterOverflow::kStop) {
        return stop(StopReason::kRetryAfterTooLong);
      }
      delay = options.retry_after_max;
    }
    decision.from_retry_after = true;
  } else {
    delay = policy_->backoff().Delay(static_cast<uint64_t>(attempts_ - 1), previous_delay_,
                                     random_);
    previous_delay_ = delay;
  }
  // No attempt may start at or after the deadline.
  if (left && delay >= *left) return stop(StopReason::kDeadline);
  // A composed stop may depend on the wait (after_elapsed inside an `all`).
  if (options.stop) {
    if (std::optional<StopReason> by = StopBy(outcome, now, delay)) return stop(*by);
  }

  if (kind_retries_[kind] < std::numeric_limits<int>::max()) ++kind_retries_[kind];
  decision.action = Decision::Action::kRetry;
  decision.delay = delay;
  decision.reason = StopReason::kNone;
  last_decision_ = decision;
  return decision;
}

}  // namespace v0
}  // namespace mulligan
