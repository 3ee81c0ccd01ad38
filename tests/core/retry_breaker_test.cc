// RetryCall with a circuit breaker: the breaker is asked before every
// attempt, a refusal ends the call with kCircuitOpen, one result is recorded
// per logical call (or per attempt on request), half-open probes always
// record their own result, and a fallback replaces the error. Fake clock.
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "mulligan/breaker/circuit_breaker.h"
#include "mulligan/retry/call.h"

namespace mulligan {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// Exponential backoff 200 ms * 2^n, no jitter: waits 0.2, 0.4, 0.8, 1.6 s.
RetryPolicy Policy(int attempts) {
  RetryOptions options;
  options.max_attempts = attempts;
  options.backoff.jitter = JitterKind::kNone;
  return std::move(RetryPolicy::Create(options)).value();
}

std::unique_ptr<CircuitBreaker> Breaker(int threshold, Duration reset_timeout = seconds(30),
                                        int half_open_max_calls = 1) {
  CircuitBreakerOptions options;
  options.name = "db";
  options.failure_threshold = threshold;
  options.reset_timeout = reset_timeout;
  options.half_open_max_calls = half_open_max_calls;
  return std::move(CircuitBreaker::Create(options)).value();
}

struct Harness {
  FakeClock clock;
  RetryCallInfo info;
  RetryCallOptions options;
  Harness(CircuitBreaker* breaker, bool each_attempt = false) {
    options.clock = &clock;
    options.info = &info;
    options.breaker = breaker;
    options.breaker_per_attempt = each_attempt;
  }
};

TEST(RetryBreakerTest, PerAttemptRecordingCutsTheChainAfterTheThirdFailure) {
  // The case: 5 attempts around a threshold-3 breaker, always failing.
  RetryPolicy policy = Policy(5);
  auto breaker = Breaker(3);
  Harness h(breaker.get(), /*each_attempt=*/true);
  std::vector<int> attempts;
  Status status = RetryCall(
      policy, [&](int attempt) { attempts.push_back(attempt); return UnavailableError("down"); },
      h.options);
  EXPECT_EQ(attempts, (std::vector<int>{1, 2, 3}));  // never a 4th attempt
  EXPECT_EQ(status.code(), StatusCode::kCircuitOpen);
  // Tripped at 0.6 s (after waits 0.2 + 0.4); refused at 1.4 s after the 0.8 s wait.
  EXPECT_EQ(status.message(), "circuit breaker 'db' is open; next probe in 29.200 s");
  EXPECT_EQ(h.info.attempts, 3);
  EXPECT_TRUE(h.info.circuit_open);
  EXPECT_EQ(h.info.retry_in, milliseconds(29200));
  EXPECT_EQ(h.info.stop_reason, StopReason::kNone);
  EXPECT_FALSE(h.info.fallback_used);
  EXPECT_EQ(h.clock.TotalSlept(), milliseconds(1400));
  EXPECT_EQ(breaker->state(h.clock.Now()), BreakerState::kOpen);
  const BreakerCounts c = breaker->counts(h.clock.Now());
  EXPECT_EQ(c.failures, 3u);
  EXPECT_EQ(c.successes, 0u);
  EXPECT_EQ(c.rejected, 1u);
}

TEST(RetryBreakerTest, TheDeprecatedSpellingOfPerAttemptStillWorks) {
  RetryPolicy policy = Policy(5);
  auto breaker = Breaker(3);
  Harness h(breaker.get());
  h.options.breaker_record_each_attempt = true;  // the 0.1 name of breaker_per_attempt
  int attempts = 0;
  Status status = RetryCall(policy, [&] { ++attempts; return UnavailableError("down"); },
                            h.options);
  EXPECT_EQ(attempts, 3);  // cut off by the breaker after its 3rd recorded failure
  EXPECT_EQ(status.code(), StatusCode::kCircuitOpen);
}

TEST(RetryBreakerTest, PerCallRecordingCountsOneFailurePerLogicalCall) {
  RetryPolicy policy = Policy(5);
  auto breaker = Breaker(3);
  Harness h(breaker.get());
  int calls = 0;
  auto failing = [&] { ++calls; return UnavailableError("down"); };

  Status status = RetryCall(policy, failing, h.options);
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
  EXPECT_EQ(calls, 5);
  EXPECT_EQ(h.info.stop_reason, StopReason::kAttemptsExhausted);
  EXPECT_FALSE(h.info.circuit_open);
  BreakerCounts c = breaker->counts(h.clock.Now());
  EXPECT_EQ(c.failures, 1u);
  EXPECT_EQ(c.calls, 1u);
  EXPECT_EQ(c.ignored, 0u);  // the 4 intermediate permits were dropped, not recorded
  EXPECT_EQ(c.consecutive_failures, 1);
  EXPECT_EQ(breaker->state(h.clock.Now()), BreakerState::kClosed);

  EXPECT_EQ(RetryCall(policy, failing, h.options).code(), StatusCode::kUnavailable);
  EXPECT_EQ(RetryCall(policy, failing, h.options).code(), StatusCode::kUnavailable);
  EXPECT_EQ(calls, 15);
  EXPECT_EQ(breaker->state(h.clock.Now()), BreakerState::kOpen);

  // The 4th logical call is refused before its first attempt.
  status = RetryCall(policy, failing, h.options);
  EXPECT_EQ(status.code(), StatusCode::kCircuitOpen);
  EXPECT_EQ(status.message(), "circuit breaker 'db' is open; next probe in 30.000 s");
  EXPECT_EQ(calls, 15);
  EXPECT_EQ(h.info.attempts, 0);
  EXPECT_TRUE(h.info.circuit_open);
  EXPECT_EQ(h.info.retry_in, seconds(30));
}

TEST(RetryBreakerTest, AnEventualSuccessRecordsOneSuccessAndEndsAFailureRun) {
  RetryPolicy policy = Policy(5);
  auto breaker = Breaker(3);
  Harness h(breaker.get());
  EXPECT_EQ(RetryCall(policy, [] { return UnavailableError("down"); }, h.options).code(),
            StatusCode::kUnavailable);
  EXPECT_EQ(breaker->counts(h.clock.Now()).consecutive_failures, 1);
  Result<int> result = RetryCall(
      policy, [](int attempt) -> Result<int> {
        if (attempt < 3) return UnavailableError("down");
        return 7;
      },
      h.options);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(*result, 7);
  const BreakerCounts c = breaker->counts(h.clock.Now());
  EXPECT_EQ(c.successes, 1u);
  EXPECT_EQ(c.failures, 1u);
  EXPECT_EQ(c.calls, 2u);
  EXPECT_EQ(c.consecutive_failures, 0);
}

TEST(RetryBreakerTest, ATerminalErrorIsRecordedAsIgnored) {
  RetryPolicy policy = Policy(5);
  auto breaker = Breaker(1);
  Harness h(breaker.get());
  Status status = RetryCall(policy, [] { return InvalidArgumentError("404"); }, h.options);
  EXPECT_TRUE(IsInvalidArgument(status));
  EXPECT_EQ(h.info.stop_reason, StopReason::kTerminal);
  const BreakerCounts c = breaker->counts(h.clock.Now());
  EXPECT_EQ(c.ignored, 1u);
  EXPECT_EQ(c.failures, 0u);
  EXPECT_EQ(breaker->state(h.clock.Now()), BreakerState::kClosed);
}

TEST(RetryBreakerTest, AFailedHalfOpenProbeReopensAndTheRetryIsRefused) {
  RetryPolicy policy = Policy(5);
  auto breaker = Breaker(1, seconds(1));
  Harness h(breaker.get());
  EXPECT_EQ(RetryCall(Policy(1), [] { return UnavailableError("down"); }, h.options).code(),
            StatusCode::kUnavailable);
  ASSERT_EQ(breaker->state(h.clock.Now()), BreakerState::kOpen);
  h.clock.Advance(seconds(1));
  ASSERT_EQ(breaker->state(h.clock.Now()), BreakerState::kHalfOpen);

  int calls = 0;
  Status status = RetryCall(policy, [&] { ++calls; return UnavailableError("down"); }, h.options);
  // Attempt 1 was the probe; even in per-call mode its failure is recorded at
  // once, which reopens the breaker, so the retry after 0.2 s is refused.
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(status.code(), StatusCode::kCircuitOpen);
  EXPECT_EQ(status.message(), "circuit breaker 'db' is open; next probe in 0.800 s");
  EXPECT_EQ(h.info.attempts, 1);
  EXPECT_EQ(h.info.retry_in, milliseconds(800));
  EXPECT_EQ(breaker->state(h.clock.Now()), BreakerState::kOpen);
}

TEST(RetryBreakerTest, ASuccessfulHalfOpenProbeCloses) {
  auto breaker = Breaker(1, seconds(1));
  Harness h(breaker.get());
  EXPECT_EQ(RetryCall(Policy(1), [] { return UnavailableError("down"); }, h.options).code(),
            StatusCode::kUnavailable);
  h.clock.Advance(seconds(1));
  Status status = RetryCall(Policy(3), [] { return OkStatus(); }, h.options);
  EXPECT_TRUE(status.ok());
  EXPECT_EQ(breaker->state(h.clock.Now()), BreakerState::kClosed);
  EXPECT_EQ(breaker->counts(h.clock.Now()).successes, 1u);
}

TEST(RetryBreakerTest, AProbeWhoseAttemptThrowsUnacceptedFreesItsSlot) {
  auto breaker = Breaker(1, seconds(1));
  Harness h(breaker.get());
  EXPECT_EQ(RetryCall(Policy(1), [] { return UnavailableError("down"); }, h.options).code(),
            StatusCode::kUnavailable);
  h.clock.Advance(seconds(1));
  EXPECT_THROW(RetryCall(Policy(3), []() -> Status { throw std::runtime_error("boom"); },
                         h.options),
               std::runtime_error);
  // Recorded as ignored: the slot is free and the breaker still half-open.
  EXPECT_EQ(breaker->state(h.clock.Now()), BreakerState::kHalfOpen);
  EXPECT_EQ(breaker->counts(h.clock.Now()).ignored, 1u);
  EXPECT_TRUE(breaker->Acquire(h.clock.Now()).admitted());
}

TEST(RetryBreakerTest, AResultFromAnEarlierGenerationChangesNothing) {
  RetryPolicy policy = Policy(3);
  auto breaker = Breaker(1);
  Harness h(breaker.get());
  Status status = RetryCall(
      policy,
      [&](int attempt) {
        // During the last attempt the breaker changes generation (forced open,
        // then reset), so the permit the final failure is recorded with is stale.
        if (attempt == 3) {
          breaker->ForceOpen(h.clock.Now());
          breaker->Reset(h.clock.Now());
        }
        return UnavailableError("down");
      },
      h.options);
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
  EXPECT_EQ(breaker->state(h.clock.Now()), BreakerState::kClosed);
  EXPECT_EQ(breaker->counts(h.clock.Now()).failures, 0u);
}

TEST(RetryBreakerTest, FallbackReplacesAGiveUpAndARefusal) {
  RetryPolicy policy = Policy(2);
  auto breaker = Breaker(1);
  Harness h(breaker.get());
  std::vector<StatusCode> seen;
  auto fallback = [&](const Status& error) {
    seen.push_back(error.code());
    return std::string("cached");
  };
  Result<std::string> first = RetryCall(
      policy, []() -> Result<std::string> { return UnavailableError("down"); }, h.options,
      fallback);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(*first, "cached");
  EXPECT_TRUE(h.info.fallback_used);
  EXPECT_EQ(h.info.attempts, 2);
  EXPECT_EQ(breaker->state(h.clock.Now()), BreakerState::kOpen);  // the failure still counts

  int calls = 0;
  Result<std::string> second = RetryCall(
      policy, [&]() -> Result<std::string> { ++calls; return std::string("fresh"); }, h.options,
      fallback);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(*second, "cached");
  EXPECT_EQ(calls, 0);
  EXPECT_TRUE(h.info.circuit_open);
  EXPECT_TRUE(h.info.fallback_used);
  EXPECT_EQ(seen, (std::vector<StatusCode>{StatusCode::kUnavailable, StatusCode::kCircuitOpen}));

  // A success does not use the fallback.
  breaker->Reset(h.clock.Now());
  Result<std::string> third = RetryCall(
      policy, []() -> Result<std::string> { return std::string("fresh"); }, h.options, fallback);
  EXPECT_EQ(*third, "fresh");
  EXPECT_FALSE(h.info.fallback_used);
}

TEST(RetryBreakerTest, FallbackReceivesAnAcceptedExceptionAsUnavailable) {
  RetryPolicy policy = Policy(2);
  Harness h(nullptr);
  h.options.retry_on_exception = [](const std::exception_ptr&) { return true; };
  Status seen;
  Result<int> result = RetryCall(
      policy, []() -> Result<int> { throw std::runtime_error("boom"); }, h.options,
      [&](const Status& error) { seen = error; return 0; });
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(*result, 0);
  EXPECT_EQ(seen.code(), StatusCode::kUnavailable);
  EXPECT_EQ(seen.message(), "the last attempt threw: boom");
}

TEST(RetryBreakerTest, ForcedOpenRefusesWithoutATime) {
  auto breaker = Breaker(3);
  Harness h(breaker.get());
  breaker->ForceOpen(h.clock.Now());
  Status status = RetryCall(Policy(3), [] { return OkStatus(); }, h.options);
  EXPECT_EQ(status.code(), StatusCode::kCircuitOpen);
  EXPECT_EQ(status.message(),
            "circuit breaker 'db' is forced open; no probe until it is reset");
  EXPECT_EQ(h.info.retry_in, Duration::max());
}

}  // namespace
}  // namespace mulligan
