// mulligan/retry/call.h — RetryCall: the blocking retry loop for C++ callers.
//
// A thin shell over the pipeline (pipeline/pipeline.h: the engine decides, this loop
// acts): it runs the operation, turns what it returned into an Outcome, asks
// the session, and waits through the Clock. Use it for any C++ operation that
// returns mulligan::Status or mulligan::Result<T>:
//
//   mulligan::Result<std::string> body = mulligan::RetryCall(policy, [&] {
//     return FetchProfile(user_id);          // returns Result<std::string>
//   });
//
// With a circuit breaker (RetryCallOptions::breaker) the breaker is asked
// before every attempt; a refusal ends the call at once with kCircuitOpen
// (never retried). See RetryCallOptions::breaker for what is recorded.
//
// The first-attempt fast path (0.6, issue 19): without a breaker, bulkhead,
// rate limiter, throttle, ratio budget or metrics listener, the operation
// runs before any engine call, and a success returns at once: counted in
// the metrics as an untimed first-attempt success (one relaxed store to
// the calling thread's shard; no call-duration sample, no clock read), a
// token-bucket or quota budget earns its lazy deposit, and options.info is
// filled. A failure builds the pipeline and becomes its attempt 1, so the
// retries, their delays, counts and events are the pipeline's. The clock is
// read before the first attempt only for a deadline, a composed stop or
// options.info; without them a failed call starts (for its duration
// histogram and its events' elapsed) when its first attempt ended, as the
// Python decorator's does. A success costs about 3 ns over a bare call, 5 ns
// with metrics on (35 and 76 instructions; README, "Benchmarks").

#ifndef MULLIGAN_RETRY_CALL_H_
#define MULLIGAN_RETRY_CALL_H_

#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "mulligan/breaker/circuit_breaker.h"
#include "mulligan/base/clock.h"
#include "mulligan/budget/budget.h"
#include "mulligan/pipeline/pipeline.h"
#include "mulligan/telemetry/metrics.h"
#include "mulligan/base/outcome.h"
#include "mulligan/retry/policy.h"
#include "mulligan/base/status.h"

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
  // True when the breaker refused an attempt (the call returned kCircuitOpen,
  // or the fallback's value); `attempts` then counts the attempts made before
  // the refusal and stop_reason is kNone.
  bool circuit_open = false;
  // With circuit_open: the breaker's time until its next probe
  // (Duration::max() when forced open).
  Duration retry_in = Duration::zero();
  // True when the value returned came from the fallback.
  bool fallback_used = false;
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
  // Called with each failed Status judged retryable; a returned duration is
  // a delay hint that replaces the backoff like a Retry-After header
  // (retry_after_max, its overflow mode and the deadline apply to it);
  // nullopt keeps the backoff. Python's delay_hint. May be empty.
  std::function<std::optional<Duration>(const Status&)> delay_hint;
  // Called before each wait (on the calling thread). May be empty.
  std::function<void(const RetryEvent&)> on_retry;
  // Filled in when the call ends, if non-null.
  RetryCallInfo* info = nullptr;

  // An optional circuit breaker guarding every attempt (borrowed; it must
  // outlive the call). Before each attempt RetryCall calls
  // breaker->Acquire(clock.Now()); a refusal ends the call at once with the
  // breaker's kCircuitOpen status ("... next probe in 12.500 s"), which is
  // never retried, and sets info->circuit_open and info->retry_in.
  //
  // What is recorded (breaker_per_attempt false, the default: one
  // result per logical call, DESIGN.md section 4):
  //   - the permit of the LAST attempt records the call's final result:
  //     ResultFor(classification of the last outcome), i.e. kSuccess for a
  //     success, kFailure when the retries gave up on a retryable error
  //     (attempts exhausted, deadline, Retry-After too long), kIgnored for a
  //     terminal error;
  //   - the permit of an attempt that is followed by a retry is dropped
  //     unrecorded when it is an ordinary (closed, disabled, metrics-only)
  //     permit: such a permit holds no slot and no reference, so dropping it
  //     is free, and recording it as kIgnored would only inflate `ignored`;
  //   - EXCEPT a half-open probe permit, which always records its own
  //     attempt's result at once. A probe holds one of the
  //     half_open_max_calls slots, so it must be released before the next
  //     Acquire (or a one-slot breaker would refuse this call's own retry),
  //     and releasing a failed probe as kIgnored would let one logical call
  //     probe a recovering dependency several times through a one-probe
  //     breaker. So a failed probe reopens the breaker and the retry that
  //     follows is refused with kCircuitOpen.
  // Permits carry the breaker generation: a result recorded after the
  // breaker changed state (another caller tripped it) changes nothing.
  // The recorded duration is the last attempt's, for slow-call detection.
  CircuitBreaker* breaker = nullptr;
  // Records every attempt's result with its own permit instead (each failed
  // attempt counts towards the trip conditions, so with failure_threshold 3
  // an always-failing call is cut off by the breaker after its 3rd attempt).
  // The same switch is breaker_per_attempt in every layer (C, Python).
  bool breaker_per_attempt = false;
  // DEPRECATED: the 0.1 spelling of breaker_per_attempt; either one turns
  // it on. (Not marked [[deprecated]]: GCC would then warn wherever the
  // options are merely constructed.)
  bool breaker_record_each_attempt = false;

  // Where the call reports its metrics (metrics.h): typically
  // MetricsRegistry::Default().Get("payments"), looked up once and kept.
  // Borrowed; null (the default) reports nothing. A first-attempt success
  // on the fast path (see the top of this file) counts as an untimed
  // success (Metrics::UntimedFirstAttemptSuccesses): in calls, attempts,
  // successes and attempts_per_call, not in call_duration_seconds, unless
  // the clock was read anyway (a deadline, a composed stop, `info`). (0.6)
  Metrics* metrics = nullptr;

  // A retry budget every retry must be granted by (budget/budget.h):
  // a refusal ends the call with the last attempt's error and
  // info->stop_reason kBudget. Borrowed; null (the default): none.
  // (Added in 0.3.)
  RetryBudget* budget = nullptr;
  // Adaptive throttling asked before every attempt (budget/throttle.h): a
  // rejection ends the call with a kThrottled status (never retried) and
  // info->stop_reason kThrottled. Borrowed; null (the default): none.
  // (Added in 0.3.)
  AdaptiveThrottle* throttle = nullptr;

  // Strategy 2 (Added in 0.3.): a bulkhead and a rate limiter guarding the
  // call (borrowed; they must outlive it). The bulkhead's slot is held for
  // the whole call (all attempts and waits) unless bulkhead_per_attempt; a
  // full bulkhead queues the call (RetryCall blocks on its ticket, bounded
  // by max_wait and the deadline) or refuses it with kBulkheadFull. The
  // limiter is asked once per call (rate_limit_per_attempt: before every
  // attempt); RetryCall sleeps its exact wait through the clock, or returns
  // kRateLimited when the wait would exceed max_wait or the deadline.
  // Refusals are never retried; info->stop_reason says kBulkheadFull or
  // kRateLimited. `limit_key` names the limiter's bucket (empty: its own).
  Bulkhead* bulkhead = nullptr;
  bool bulkhead_per_attempt = false;
  RateLimiter* rate_limiter = nullptr;
  bool rate_limit_per_attempt = false;
  std::string_view limit_key;
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

namespace internal {

// No fallback: RetryCall returns the error.
struct NoFallback {};

// Returns the text of an exception, for the status a fallback receives.
inline std::string DescribeException(const std::exception_ptr& thrown) {
  try {
    std::rethrow_exception(thrown);
  } catch (const std::exception& e) {
    return std::string("the last attempt threw: ") + e.what();
  } catch (...) {
    return "the last attempt threw a non-standard exception";
  }
}

// What one attempt of the caller's operation produced: its value, or the
// exception it threw.
template <typename R>
struct Attempted {
  std::optional<R> returned;
  std::exception_ptr thrown;
};

// Runs attempt `attempt` of `fn` (which takes the attempt number, or nothing).
template <typename R, typename F>
Attempted<R> RunOnce(F& fn, int attempt) {
  Attempted<R> a;
  try {
    if constexpr (std::is_invocable_v<F&, int>) {
      a.returned.emplace(fn(attempt));
    } else {
      a.returned.emplace(fn());
    }
  } catch (...) {
    a.thrown = std::current_exception();
  }
  return a;
}

// Runs the first attempt of `fn` and returns its value; when it throws,
// sets `thrown` and returns a placeholder error that nothing reads.
template <typename R, typename F>
R InvokeCatching(F& fn, std::exception_ptr& thrown) {
  try {
    if constexpr (std::is_invocable_v<F&, int>) {
      return fn(1);
    } else {
      return fn();
    }
  } catch (...) {
    thrown = std::current_exception();
    return R(Status(StatusCode::kInternal, std::string()));
  }
}

// The outcome the pipeline is told: an accepted exception is a retryable
// failure; a Status is a success, or a failure judged by retry_on_status
// (IsRetryableStatus by default) with delay_hint's hint.
template <typename R>
Outcome OutcomeOf(const Attempted<R>& a, const RetryCallOptions& options) {
  if (a.thrown) return Outcome::Failure(/*retryable=*/true);
  const Status& status = StatusOf(*a.returned);
  if (status.ok()) return Outcome::Success();
  const bool retryable =
      options.retry_on_status ? options.retry_on_status(status) : IsRetryableStatus(status);
  Outcome outcome = Outcome::Failure(retryable);
  if (retryable && options.delay_hint) outcome.retry_after = options.delay_hint(status);
  return outcome;
}

// The pipeline parts of one RetryCall: everything borrowed from its caller.
inline Pipeline::Parts PartsOf(const RetryPolicy& policy, const RetryCallOptions& options,
                               Clock* clock) {
  Pipeline::Parts parts;
  parts.policy = &policy;
  parts.breaker = options.breaker;
  parts.breaker_per_attempt = options.breaker_per_attempt || options.breaker_record_each_attempt;
  parts.metrics = options.metrics;
  parts.clock = clock;
  parts.budget = options.budget;
  parts.throttle = options.throttle;
  parts.bulkhead = options.bulkhead;
  parts.bulkhead_per_attempt = options.bulkhead_per_attempt;
  parts.rate_limiter = options.rate_limiter;
  parts.rate_limit_per_attempt = options.rate_limit_per_attempt;
  return parts;
}

// Reports a retry to options.on_retry (if any).
template <typename R>
void NotifyRetry(const RetryCallOptions& options, const Decision& decision,
                 const Attempted<R>& a) {
  if (!options.on_retry) return;
  RetryEvent event;
  event.attempt = decision.attempt;
  event.delay = decision.delay;
  if (a.returned) event.error = StatusOf(*a.returned);
  event.exception = a.thrown;
  options.on_retry(event);
}

// True when the first attempt needs nothing that only the pipeline can do
// before it runs (RetryCall's first-attempt fast path, 0.6): no breaker (it
// is asked before every attempt), no bulkhead or rate limiter (admission),
// no adaptive throttle (asked before every attempt), no ratio budget (it
// deposits at the call's start), and no event listener on the metrics (they
// see attempt_started before the attempt). A token-bucket or quota budget's
// success deposit is lazy (RetryBudget::AddSuccesses), so it needs nothing
// before; a deadline, an attempt timeout and on_retry need nothing before
// either (RetryCall bounds no attempt; see NeedsStartTime for the deadline).
inline bool FirstAttemptRunsFirst(const RetryCallOptions& options) {
  return options.breaker == nullptr && options.bulkhead == nullptr &&
         options.rate_limiter == nullptr && options.throttle == nullptr &&
         (options.budget == nullptr || options.budget->kind() != BudgetKind::kRatio) &&
         (options.metrics == nullptr || !options.metrics->has_listeners());
}

// True when the call's start must be read before the first attempt: the
// policy's deadline or a composed stop (both measure from the start of the
// first attempt), or options.info (its elapsed). Otherwise a call whose
// first attempt fails starts when that attempt ended (Python's decorator
// does the same: only deadline users pay a clock read before the attempt).
inline bool NeedsStartTime(const RetryPolicy& policy, const RetryCallOptions& options) {
  return options.info != nullptr || policy.effective_deadline().has_value() ||
         policy.options().stop.has_value();
}

inline Clock& ClockOf(const RetryCallOptions& options) {
  return options.clock ? *options.clock : *SystemClock::Default();
}

// Reports a first attempt that succeeded on the fast path. Without a start
// read (`clock` null) the metrics count an untimed success (calls, attempts,
// successes and attempts_per_call, not the duration histogram: no clock is
// read); with one, the call is timed exactly as the pipeline times it.
inline void ReportFirstAttemptSuccess(const RetryCallOptions& options, Clock* clock,
                                      TimePoint start) {
  if (options.budget != nullptr) options.budget->AddSuccesses(1);
  if (clock == nullptr) {
    if (options.metrics != nullptr) options.metrics->UntimedFirstAttemptSuccesses(1);
    return;
  }
  if (options.metrics == nullptr && options.info == nullptr) return;
  const TimePoint end = clock->Now();
  if (options.metrics != nullptr) {
    options.metrics->CallStarted();
    options.metrics->CallSucceeded(1, end - start);
  }
  if (options.info != nullptr) {
    RetryCallInfo info;
    info.attempts = 1;
    info.stop_reason = StopReason::kSucceeded;
    info.elapsed = end - start;
    *options.info = info;
  }
}

// The pipeline loop shared by both RetryCall overloads: a thin shell over a
// Pipeline made of the borrowed parts (no allocation) and its Call. Every
// decision -- retry or stop, what the breaker records, what the metrics
// count, whether the fallback answers -- is the Call's. The call starts at
// `start`. With `first` (the fast path's failed first attempt, which ended
// at `first_end`), that attempt is recorded as attempt 1 without an Admit
// (Call::Record's unguarded attempt), then the loop goes on as usual.
template <typename R, typename F, typename Fallback>
R RunPipeline(const RetryPolicy& policy, F& fn, const RetryCallOptions& options,
              Fallback* fallback, Clock& clock, TimePoint start, Attempted<R>* first,
              TimePoint first_end) {
  constexpr bool kHasFallback = !std::is_same_v<Fallback, NoFallback>;
  const Pipeline pipeline(PartsOf(policy, options, &clock));
  CallOptions call_options;
  call_options.fallback = kHasFallback;
  call_options.key = options.limit_key;
  // The first attempt is admitted at the call's start: one clock read less.
  TimePoint admit_at = start;
  Call call = pipeline.Begin(start, call_options);

  RetryCallInfo info;
  // Fills options.info and, with a fallback, returns its answer to `error`.
  // Without options.info nothing reads `info`'s times: the clock is not read
  // (one clock read less on every call; bench/core_retry_bench.cc).
  auto finish = [&](bool fall_back, const Status& error) -> std::optional<R> {
    if (options.info) {
      info.attempts = call.attempts();
      info.elapsed = clock.Now() - call.start();
      info.total_delay = call.total_delay();
      info.fallback_used = fall_back;
      *options.info = info;
    }
    if constexpr (kHasFallback) {
      if (fall_back) return R((*fallback)(error));
    }
    return std::nullopt;
  };
  for (;;) {
    int attempt = 1;
    if (first == nullptr) {
      const AttemptAdmission admission = call.Admit(admit_at);
      if (admission.wait()) {
        // Strategy 2: a bulkhead's queue or a limiter's reserved slot.
        WaitForAdmission(admission, clock);
        admit_at = clock.Now();
        continue;
      }
      if (admission.refused()) {
        info.circuit_open = admission.reason == StopReason::kCircuitOpen;
        if (!info.circuit_open) info.stop_reason = admission.reason;
        info.retry_in = admission.retry_in;
        Status refused = call.RefusalStatus();
        if (std::optional<R> answer = finish(kHasFallback, refused)) return std::move(*answer);
        return R(std::move(refused));
      }
      attempt = admission.attempt;
    }
    Attempted<R> a = first != nullptr ? std::move(*first) : RunOnce<R>(fn, attempt);
    const TimePoint ended = first != nullptr ? first_end : clock.Now();
    first = nullptr;
    if (a.thrown && (!options.retry_on_exception || !options.retry_on_exception(a.thrown))) {
      // Not retried, so terminal: it frees a probe slot and counts as
      // neither success nor failure.
      (void)call.Record(Outcome::Failure(/*retryable=*/false), ended);
      (void)finish(false, Status());
      std::rethrow_exception(a.thrown);
    }
    const Decision decision = call.Record(OutcomeOf(a, options), ended);
    if (!decision.retry()) {
      info.stop_reason = decision.reason;
      const bool fall_back = kHasFallback && decision.use_fallback;
      const Status error = !fall_back  ? Status()
                           : a.thrown ? UnavailableError(DescribeException(a.thrown))
                                      : StatusOf(*a.returned);
      if (std::optional<R> answer = finish(fall_back, error)) return std::move(*answer);
      if (a.thrown) std::rethrow_exception(a.thrown);
      return std::move(*a.returned);
    }
    NotifyRetry(options, decision, a);
    clock.SleepFor(decision.delay);
    admit_at = clock.Now();
  }
}

// The fast path (see RetryLoop): runs the first attempt before any engine
// call; every return returns `returned`, which is built in place (NRVO), so
// a success moves no value.
template <typename R, typename F, typename Fallback>
R FirstAttemptFirst(const RetryPolicy& policy, F& fn, const RetryCallOptions& options,
                    Fallback* fallback) {
  Clock* clock = nullptr;
  TimePoint start;
  if (NeedsStartTime(policy, options)) {
    clock = &ClockOf(options);
    start = clock->Now();
  }
  std::exception_ptr thrown;
  R returned = InvokeCatching<R>(fn, thrown);
  if (!thrown && StatusOf(returned).ok()) {
    ReportFirstAttemptSuccess(options, clock, start);
    return returned;
  }
  TimePoint ended;
  if (clock != nullptr) {
    ended = clock->Now();
  } else {
    clock = &ClockOf(options);
    start = ended = clock->Now();
  }
  Attempted<R> first;
  first.thrown = std::move(thrown);
  if (!first.thrown) first.returned.emplace(std::move(returned));
  returned = RunPipeline<R>(policy, fn, options, fallback, *clock, start, &first, ended);
  return returned;
}

// Both RetryCall overloads. The first-attempt fast path (0.6), when
// FirstAttemptRunsFirst: the operation runs before any engine call, and a
// success is counted (ReportFirstAttemptSuccess) and returned without a
// Pipeline, a Call or a jitter seed; a failure or an exception builds the
// pipeline and is recorded as its attempt 1, so every later delay, count
// and event is the pipeline's, as on the full path. The clock is read
// before the attempt only when NeedsStartTime.
template <typename F, typename Fallback>
auto RetryLoop(const RetryPolicy& policy, F& fn, const RetryCallOptions& options,
               Fallback* fallback) {
  using Return = std::conditional_t<std::is_invocable_v<F&, int>, std::invoke_result<F&, int>,
                                    std::invoke_result<F&>>;
  using R = std::decay_t<typename Return::type>;
  static_assert(std::is_same_v<R, Status> || IsResult<R>::value,
                "RetryCall: fn must return mulligan::Status or mulligan::Result<T>");
  // The fast path assigns the pipeline's answer to its first attempt's
  // value, so it needs an assignable R (every Status and Result<T> of an
  // assignable T); any other R takes the pipeline from the start.
  if constexpr (!std::is_move_assignable_v<R>) {
    Clock& clock = ClockOf(options);
    return RunPipeline<R>(policy, fn, options, fallback, clock, clock.Now(), nullptr,
                          TimePoint());
  } else {
    if (!FirstAttemptRunsFirst(options)) {
      Clock& clock = ClockOf(options);
      return RunPipeline<R>(policy, fn, options, fallback, clock, clock.Now(), nullptr,
                            TimePoint());
    }
    return FirstAttemptFirst<R>(policy, fn, options, fallback);
  }
}

}  // namespace internal

// Runs `fn` until it succeeds or `policy` stops, waiting between attempts.
//
// `fn` takes no arguments, or one `int` (the attempt number, from 1), and
// returns Status or Result<T>. Returns what the last attempt returned: the
// first success, or the last error when the policy gave up (its reason is in
// options.info->stop_reason), or kCircuitOpen when options.breaker refused an
// attempt. Exceptions from `fn` propagate unless options.retry_on_exception
// accepts them.
// Thread-safety: reentrant; `policy` (and options.breaker) may be shared by
// many concurrent calls.
template <typename F>
auto RetryCall(const RetryPolicy& policy, F&& fn, const RetryCallOptions& options = {}) {
  return internal::RetryLoop(policy, fn, options,
                             static_cast<internal::NoFallback*>(nullptr));
}

// Like RetryCall above, but when the call finally fails -- the policy gave up
// on retryable errors (attempts exhausted, deadline, Retry-After too long),
// or the breaker refused an attempt -- returns `fallback(error)` instead of
// the error. A terminal error (one retry_on_status calls not retryable) is
// returned as it is: it is an answer or a bug, not an outage (the one
// meaning of a fallback in every front door, pipeline/call.h). `error` is the
// last attempt's Status, the breaker's kCircuitOpen status, or, when the last
// attempt threw an exception accepted by retry_on_exception, a kUnavailable
// status describing it. `fallback` returns something R is constructible from
// (a T for Result<T>, or an R). info->fallback_used tells which path ran.
// Exceptions not accepted by retry_on_exception still propagate.
template <typename F, typename Fallback>
auto RetryCall(const RetryPolicy& policy, F&& fn, const RetryCallOptions& options,
               Fallback&& fallback) {
  return internal::RetryLoop(policy, fn, options, &fallback);
}

}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_RETRY_CALL_H_
