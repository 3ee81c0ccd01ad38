// mulligan/retry.h — RetryCall: the blocking retry loop for C++ callers.
//
// A thin shell over RetryPolicy/RetrySession (the engine decides, this loop
// acts): it runs the operation, turns what it returned into an Outcome, asks
// the session, and waits through the Clock. Use it for any C++ operation that
// returns mulligan::Status or mulligan::Result<T>:
//
//   mulligan::Result<std::string> body = mulligan::RetryCall(policy, [&] {
//     return FetchProfile(user_id);          // returns Result<std::string>
//   });

#ifndef MULLIGAN_RETRY_H_
#define MULLIGAN_RETRY_H_

#include <exception>
#include <functional>
#include <type_traits>
#include <utility>

#include "mulligan/clock.h"
#include "mulligan/outcome.h"
#include "mulligan/retry_policy.h"
#include "mulligan/status.h"

namespace mulligan {
inline namespace v0 {

// What RetryCall reports about a finished call.
struct RetryCallInfo {
  // Attempts made (1 when the first attempt succeeded).
  int attempts = 0;
  // Why the loop stopped.
  StopReason stop_reason = StopReason::kNone;
  // Total time spent waiting between attempts.
  Duration total_delay = Duration::zero();
  // From the start of the first attempt to the end of the last.
  Duration elapsed = Duration::zero();
};

// Passed to RetryCallOptions::on_retry before each wait.
struct RetryEvent {
  // The attempt that just failed (1 for the first).
  int attempt = 0;
  // The wait before the next attempt.
  Duration delay = Duration::zero();
  // The failed attempt's error (an OK status when an exception was thrown).
  Status error;
  // The exception the attempt threw, if it threw one.
  std::exception_ptr exception;
};

// Returns true for the codes RetryCall retries by default: kTransport,
// kTimeout, kUnavailable and kDeadlineExceeded (an attempt's own deadline).
// Every other code (a bad argument, an internal error) is terminal.
inline bool IsRetryableStatus(const Status& status) {
  switch (status.code()) {
    case StatusCode::kTransport:
    case StatusCode::kTimeout:
    case StatusCode::kUnavailable:
    case StatusCode::kDeadlineExceeded:
      return true;
    default:
      return false;
  }
}

struct RetryCallOptions {
  // The clock to wait through; null means SystemClock::Default().
  Clock* clock = nullptr;
  // Decides whether a failed Status is retryable. Default IsRetryableStatus.
  std::function<bool(const Status&)> retry_on_status;
  // Decides whether a thrown exception is retryable. Default: none is; the
  // exception propagates out of RetryCall at once. When it returns true and
  // the retries give up, the last exception is rethrown.
  std::function<bool(const std::exception_ptr&)> retry_on_exception;
  // Called before each wait (on the calling thread). May be empty.
  std::function<void(const RetryEvent&)> on_retry;
  // Filled in when the call ends, if non-null.
  RetryCallInfo* info = nullptr;
};

namespace internal {

template <typename T>
struct IsResult : std::false_type {};
template <typename T>
struct IsResult<Result<T>> : std::true_type {};

inline const Status& StatusOf(const Status& status) { return status; }
template <typename T>
const Status& StatusOf(const Result<T>& result) {
  return result.status();
}

}  // namespace internal

// Runs `fn` until it succeeds or `policy` stops, waiting between attempts.
//
// `fn` takes no arguments, or one `int` (the attempt number, from 1), and
// returns Status or Result<T>. Returns what the last attempt returned: the
// first success, or the last error when the policy gave up (its reason is in
// options.info->stop_reason). Exceptions from `fn` propagate unless
// options.retry_on_exception accepts them.
// Thread-safety: reentrant; `policy` may be shared by many concurrent calls.
template <typename F>
auto RetryCall(const RetryPolicy& policy, F&& fn, const RetryCallOptions& options = {}) {
  constexpr bool kTakesAttempt = std::is_invocable_v<F&, int>;
  using Return = std::conditional_t<kTakesAttempt, std::invoke_result<F&, int>,
                                    std::invoke_result<F&>>;
  using R = std::decay_t<typename Return::type>;
  static_assert(std::is_same_v<R, Status> || internal::IsResult<R>::value,
                "RetryCall: fn must return mulligan::Status or mulligan::Result<T>");

  Clock& clock = options.clock ? *options.clock : *SystemClock::Default();
  RetrySession session = policy.Begin(clock.Now());
  RetryCallInfo info;
  for (;;) {
    const int attempt = session.attempts() + 1;
    std::exception_ptr thrown;
    std::optional<R> returned;
    try {
      if constexpr (kTakesAttempt) {
        returned.emplace(fn(attempt));
      } else {
        returned.emplace(fn());
      }
    } catch (...) {
      thrown = std::current_exception();
      if (!options.retry_on_exception || !options.retry_on_exception(thrown)) throw;
    }

    Outcome outcome;
    if (thrown) {
      outcome = Outcome::Failure(/*retryable=*/true);
    } else if (internal::StatusOf(*returned).ok()) {
      outcome = Outcome::Success();
    } else {
      const Status& error = internal::StatusOf(*returned);
      const bool retryable =
          options.retry_on_status ? options.retry_on_status(error) : IsRetryableStatus(error);
      outcome = Outcome::Failure(retryable);
    }

    const Decision decision = session.OnOutcome(outcome, clock.Now());
    if (!decision.retry()) {
      info.attempts = session.attempts();
      info.stop_reason = decision.reason;
      info.elapsed = clock.Now() - session.start();
      if (options.info) *options.info = info;
      if (thrown) std::rethrow_exception(thrown);
      return std::move(*returned);
    }
    if (options.on_retry) {
      RetryEvent event;
      event.attempt = decision.attempt;
      event.delay = decision.delay;
      if (returned) event.error = internal::StatusOf(*returned);
      event.exception = thrown;
      options.on_retry(event);
    }
    info.total_delay += decision.delay;
    clock.SleepFor(decision.delay);
  }
}

}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_RETRY_H_
