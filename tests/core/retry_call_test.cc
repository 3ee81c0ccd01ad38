// RetryCall: the C++ blocking loop over the engine, with a fake clock.
#include "mulligan/retry/call.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace mulligan {
namespace {

using std::chrono::milliseconds;

RetryPolicy NoJitterPolicy(int attempts) {
  RetryOptions options;
  options.max_attempts = attempts;
  options.backoff.jitter = JitterKind::kNone;
  return std::move(RetryPolicy::Create(options)).value();
}

TEST(RetryCallTest, RetriesUntilSuccessWaitingTheExactBackoff) {
  RetryPolicy policy = NoJitterPolicy(5);
  FakeClock clock;
  RetryCallInfo info;
  std::vector<int> attempts_seen;
  std::vector<Duration> waits;
  RetryCallOptions options;
  options.clock = &clock;
  options.info = &info;
  options.on_retry = [&](const RetryEvent& e) { waits.push_back(e.delay); };
  Result<std::string> result = RetryCall(
      policy,
      [&](int attempt) -> Result<std::string> {
        attempts_seen.push_back(attempt);
        if (attempt < 3) return TransportError("connection reset");
        return std::string("done");
      },
      options);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(*result, "done");
  EXPECT_EQ(attempts_seen, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(waits, (std::vector<Duration>{milliseconds(200), milliseconds(400)}));
  EXPECT_EQ(info.attempts, 3);
  EXPECT_EQ(info.stop_reason, StopReason::kSucceeded);
  EXPECT_EQ(info.total_delay, milliseconds(600));
  EXPECT_EQ(clock.TotalSlept(), milliseconds(600));
}

TEST(RetryCallTest, GivesUpWithTheLastError) {
  RetryPolicy policy = NoJitterPolicy(3);
  FakeClock clock;
  RetryCallInfo info;
  int calls = 0;
  RetryCallOptions options;
  options.clock = &clock;
  options.info = &info;
  Status status = RetryCall(
      policy, [&] { return TimeoutError("attempt " + std::to_string(++calls)); }, options);
  EXPECT_EQ(status.code(), StatusCode::kTimeout);
  EXPECT_EQ(status.message(), "attempt 3");
  EXPECT_EQ(info.attempts, 3);
  EXPECT_EQ(info.stop_reason, StopReason::kAttemptsExhausted);
}

TEST(RetryCallTest, TerminalErrorsAreNotRetried) {
  RetryPolicy policy = NoJitterPolicy(3);
  FakeClock clock;
  int calls = 0;
  RetryCallOptions options;
  options.clock = &clock;
  Status status = RetryCall(
      policy, [&] { ++calls; return InvalidArgumentError("bad"); }, options);
  EXPECT_TRUE(IsInvalidArgument(status));
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(clock.TotalSlept(), Duration::zero());
}

TEST(RetryCallTest, ExceptionsPropagateUnlessAccepted) {
  RetryPolicy policy = NoJitterPolicy(3);
  FakeClock clock;
  int calls = 0;
  RetryCallOptions options;
  options.clock = &clock;
  auto thrower = [&]() -> Status {
    ++calls;
    throw std::runtime_error("boom");
  };
  EXPECT_THROW((void)RetryCall(policy, thrower, options), std::runtime_error);
  EXPECT_EQ(calls, 1);

  calls = 0;
  options.retry_on_exception = [](const std::exception_ptr& e) {
    try {
      std::rethrow_exception(e);
    } catch (const std::runtime_error&) {
      return true;
    } catch (...) {
      return false;
    }
  };
  EXPECT_THROW((void)RetryCall(policy, thrower, options), std::runtime_error);
  EXPECT_EQ(calls, 3);
}

}  // namespace
}  // namespace mulligan

namespace mulligan {
namespace {

TEST(RetryCallTest, ReportsExactMetrics) {
  MetricsRegistry registry;
  RetryOptions options;
  options.max_attempts = 3;
  options.backoff.jitter = JitterKind::kNone;
  RetryPolicy policy = std::move(RetryPolicy::Create(options)).value();
  FakeClock clock;
  RetryCallOptions call_options;
  call_options.clock = &clock;
  call_options.metrics = registry.Get("profile");

  int calls = 0;
  Result<int> third = RetryCall(
      policy,
      [&]() -> Result<int> {
        if (++calls < 3) return TransportError("reset");
        return 7;
      },
      call_options);
  ASSERT_TRUE(third.ok());
  Status gave_up = RetryCall(policy, [] { return TimeoutError("slow"); }, call_options);
  EXPECT_TRUE(IsTimeout(gave_up));
  Result<int> served = RetryCall(
      policy, []() -> Result<int> { return TransportError("down"); }, call_options,
      [](const Status&) { return 0; });
  ASSERT_TRUE(served.ok());

  MetricsSnapshot s = registry.Get("profile")->Snapshot();
  EXPECT_EQ(s.calls, 3u);
  EXPECT_EQ(s.attempts, 9u);
  EXPECT_EQ(s.retries, 6u);
  EXPECT_EQ(s.retries_by_reason[static_cast<int>(RetryReason::kException)], 6u);
  EXPECT_EQ(s.successes, 1u);
  EXPECT_EQ(s.failures, 2u);
  EXPECT_EQ(s.fallbacks, 1u);
  EXPECT_EQ(s.in_flight, 0);
  EXPECT_EQ(s.waiting_to_retry, 0);
  EXPECT_DOUBLE_EQ(s.retry_delay_seconds.sum, 3 * (0.2 + 0.4));
}

}  // namespace
}  // namespace mulligan
