// The retry session's documented boundaries (DESIGN.md section 5, policy.h),
// each tested at the boundary, one nanosecond (or one attempt) inside it and
// one outside it: retry_after_max, the deadline, max_attempts.
//
// Expected values are worked out by hand from the rules:
//   - a Retry-After hint longer than retry_after_max stops (or clamps); a hint
//     equal to it is honoured;
//   - after a failure at `now` the session stops if now + delay would reach
//     the deadline (delay >= time left), so no attempt starts at or after it;
//   - max_attempts counts the first attempt.
#include "mulligan/retry/policy.h"

#include <gtest/gtest.h>

#include <climits>

namespace mulligan {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::seconds;

constexpr nanoseconds kStep(1);

RetryPolicy Make(const RetryOptions& options) {
  Result<RetryPolicy> policy = RetryPolicy::Create(options);
  EXPECT_TRUE(policy.ok()) << policy.status().ToString();
  return std::move(policy).value();
}

// Constant 1 s backoff without jitter: every backoff delay is exactly 1 s.
RetryOptions ConstantOneSecond() {
  RetryOptions options;
  options.max_attempts = 10;
  options.backoff.kind = BackoffKind::kConstant;
  options.backoff.base = seconds(1);
  options.backoff.jitter = JitterKind::kNone;
  return options;
}

// The decision for one 503 carrying `hint`, the first attempt of a session.
Decision FirstHint(const RetryPolicy& policy, Duration hint) {
  RetrySession session = policy.Begin(TimePoint{});
  return session.OnOutcome(Outcome::Http(503, hint), TimePoint{});
}

// --- retry_after_max -------------------------------------------------------

TEST(RetryAfterMaxBoundaryTest, AHintEqualToTheMaximumIsHonoured) {
  RetryOptions options = ConstantOneSecond();
  options.retry_after_max = seconds(60);
  RetryPolicy policy = Make(options);
  const Decision d = FirstHint(policy, seconds(60));
  ASSERT_TRUE(d.retry());
  EXPECT_EQ(d.delay, seconds(60));
  EXPECT_TRUE(d.from_retry_after);
}

TEST(RetryAfterMaxBoundaryTest, AHintOneNanosecondUnderTheMaximumIsHonoured) {
  RetryOptions options = ConstantOneSecond();
  options.retry_after_max = seconds(60);
  RetryPolicy policy = Make(options);
  const Decision d = FirstHint(policy, seconds(60) - kStep);
  ASSERT_TRUE(d.retry());
  EXPECT_EQ(d.delay, seconds(60) - kStep);
  EXPECT_TRUE(d.from_retry_after);
}

TEST(RetryAfterMaxBoundaryTest, AHintOneNanosecondOverTheMaximumStops) {
  RetryOptions options = ConstantOneSecond();
  options.retry_after_max = seconds(60);
  RetryPolicy policy = Make(options);
  const Decision d = FirstHint(policy, seconds(60) + kStep);
  EXPECT_FALSE(d.retry());
  EXPECT_EQ(d.reason, StopReason::kRetryAfterTooLong);
  EXPECT_EQ(d.delay, Duration::zero());
  EXPECT_EQ(d.attempt, 1);
}

TEST(RetryAfterMaxBoundaryTest, ClampModeWaitsTheMaximumOnlyForLongerHints) {
  RetryOptions options = ConstantOneSecond();
  options.retry_after_max = seconds(60);
  options.retry_after_overflow = RetryAfterOverflow::kClamp;
  RetryPolicy policy = Make(options);
  EXPECT_EQ(FirstHint(policy, seconds(60) - kStep).delay, seconds(60) - kStep);
  EXPECT_EQ(FirstHint(policy, seconds(60)).delay, seconds(60));
  const Decision over = FirstHint(policy, seconds(60) + kStep);
  ASSERT_TRUE(over.retry());
  EXPECT_EQ(over.delay, seconds(60));
  EXPECT_TRUE(over.from_retry_after);
}

TEST(RetryAfterMaxBoundaryTest, AMaximumOfZeroHonoursOnlyRetryNow) {
  RetryOptions options = ConstantOneSecond();
  options.retry_after_max = Duration::zero();  // the smallest valid value
  RetryPolicy policy = Make(options);
  const Decision now = FirstHint(policy, Duration::zero());
  ASSERT_TRUE(now.retry());
  EXPECT_EQ(now.delay, Duration::zero());
  EXPECT_TRUE(now.from_retry_after);
  EXPECT_EQ(FirstHint(policy, kStep).reason, StopReason::kRetryAfterTooLong);
  // A negative maximum is invalid.
  options.retry_after_max = -kStep;
  Result<RetryPolicy> bad = RetryPolicy::Create(options);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("retry_after_max"), std::string::npos);
}

TEST(RetryAfterMaxBoundaryTest, TheBoundaryHoldsOnALaterAttemptToo) {
  // The check is made on every hint, not only the first: attempt 2's hint
  // equal to the maximum is honoured, attempt 3's one over it stops.
  RetryOptions options = ConstantOneSecond();
  options.retry_after_max = seconds(5);
  RetryPolicy policy = Make(options);
  RetrySession session = policy.Begin(TimePoint{});
  TimePoint t{};
  Decision d1 = session.OnOutcome(Outcome::Http(503), t);
  ASSERT_TRUE(d1.retry());
  EXPECT_EQ(d1.delay, seconds(1));
  t += d1.delay;
  Decision d2 = session.OnOutcome(Outcome::Http(429, seconds(5)), t);
  ASSERT_TRUE(d2.retry());
  EXPECT_EQ(d2.delay, seconds(5));
  t += d2.delay;
  Decision d3 = session.OnOutcome(Outcome::Http(429, seconds(5) + kStep), t);
  EXPECT_EQ(d3.reason, StopReason::kRetryAfterTooLong);
  EXPECT_EQ(d3.attempt, 3);
}

// --- deadline ----------------------------------------------------------------

// A session with a 5 s deadline whose first attempt fails at `at` (after the
// start) with a plain retryable failure: the backoff delay is 1 s.
Decision FailAt(Duration at, std::optional<Duration> hint = std::nullopt) {
  RetryOptions options = ConstantOneSecond();
  options.deadline = seconds(5);
  RetryPolicy policy = Make(options);
  const TimePoint start{seconds(100)};
  RetrySession session = policy.Begin(start);
  return session.OnOutcome(Outcome::Http(503, hint), start + at);
}

TEST(DeadlineBoundaryTest, AWaitThatWouldEndExactlyAtTheDeadlineStops) {
  // At 4 s, 1 s is left and the delay is 1 s: the next attempt would start at
  // the deadline.
  const Decision d = FailAt(seconds(4));
  EXPECT_FALSE(d.retry());
  EXPECT_EQ(d.reason, StopReason::kDeadline);
}

TEST(DeadlineBoundaryTest, AWaitThatEndsOneNanosecondBeforeTheDeadlineRetries) {
  const Decision d = FailAt(seconds(4) - kStep);
  ASSERT_TRUE(d.retry());
  EXPECT_EQ(d.delay, seconds(1));
}

TEST(DeadlineBoundaryTest, AWaitThatWouldEndOneNanosecondAfterTheDeadlineStops) {
  EXPECT_EQ(FailAt(seconds(4) + kStep).reason, StopReason::kDeadline);
}

TEST(DeadlineBoundaryTest, AFailureAtOrAfterTheDeadlineStops) {
  EXPECT_EQ(FailAt(seconds(5)).reason, StopReason::kDeadline);
  EXPECT_EQ(FailAt(seconds(5) + kStep).reason, StopReason::kDeadline);
  EXPECT_EQ(FailAt(seconds(5) - kStep).reason, StopReason::kDeadline);  // 1 ns left < 1 s
}

TEST(DeadlineBoundaryTest, ARetryAfterHintIsHeldToTheSameBoundary) {
  // At 2 s, 3 s are left.
  const Decision equal = FailAt(seconds(2), seconds(3));
  EXPECT_EQ(equal.reason, StopReason::kDeadline);
  const Decision under = FailAt(seconds(2), seconds(3) - kStep);
  ASSERT_TRUE(under.retry());
  EXPECT_EQ(under.delay, seconds(3) - kStep);
  EXPECT_TRUE(under.from_retry_after);
  EXPECT_EQ(FailAt(seconds(2), seconds(3) + kStep).reason, StopReason::kDeadline);
}

TEST(DeadlineBoundaryTest, TheAttemptTimeoutShrinksToZeroExactlyAtTheDeadline) {
  RetryOptions options = ConstantOneSecond();
  options.deadline = seconds(5);
  RetryPolicy policy = Make(options);
  const TimePoint start{seconds(7)};
  RetrySession session = policy.Begin(start);
  EXPECT_EQ(session.AttemptTimeout(start), seconds(5));
  EXPECT_EQ(session.AttemptTimeout(start + seconds(5) - kStep), kStep);
  EXPECT_EQ(session.AttemptTimeout(start + seconds(5)), Duration::zero());
  EXPECT_EQ(session.AttemptTimeout(start + seconds(5) + kStep), Duration::zero());
  EXPECT_EQ(session.TimeLeft(start + seconds(5) - kStep), kStep);
}

TEST(DeadlineBoundaryTest, TheSmallestDeadlineIsOneNanosecond) {
  RetryOptions options = ConstantOneSecond();
  options.deadline = kStep;
  EXPECT_TRUE(RetryPolicy::Create(options).ok());
  options.deadline = Duration::zero();
  EXPECT_FALSE(RetryPolicy::Create(options).ok());
  options.deadline = -kStep;
  EXPECT_FALSE(RetryPolicy::Create(options).ok());
}

// --- max_attempts ------------------------------------------------------------

// Fails every attempt with no deadline; returns the decisions in order.
std::vector<Decision> FailEveryAttempt(int max_attempts, int outcomes) {
  RetryOptions options = ConstantOneSecond();
  options.max_attempts = max_attempts;
  RetryPolicy policy = Make(options);
  RetrySession session = policy.Begin(TimePoint{});
  std::vector<Decision> out;
  TimePoint t{};
  for (int i = 0; i < outcomes; ++i) {
    out.push_back(session.OnOutcome(Outcome::Failure(true), t));
    t += out.back().delay;
  }
  return out;
}

TEST(MaxAttemptsBoundaryTest, TheLastAllowedAttemptStopsAndTheOneBeforeRetries) {
  const std::vector<Decision> d = FailEveryAttempt(4, 4);
  EXPECT_TRUE(d[0].retry());
  EXPECT_TRUE(d[1].retry());
  EXPECT_TRUE(d[2].retry());  // attempt 3 of 4: one inside the bound
  EXPECT_EQ(d[3].reason, StopReason::kAttemptsExhausted);  // attempt 4: the bound
  EXPECT_EQ(d[3].attempt, 4);
}

TEST(MaxAttemptsBoundaryTest, OneAttemptMeansNoRetry) {
  const std::vector<Decision> d = FailEveryAttempt(1, 1);
  EXPECT_EQ(d[0].reason, StopReason::kAttemptsExhausted);
  EXPECT_EQ(d[0].attempt, 1);
}

TEST(MaxAttemptsBoundaryTest, TwoAttemptsMeanExactlyOneRetry) {
  const std::vector<Decision> d = FailEveryAttempt(2, 2);
  ASSERT_TRUE(d[0].retry());
  EXPECT_EQ(d[0].delay, seconds(1));
  EXPECT_EQ(d[1].reason, StopReason::kAttemptsExhausted);
}

TEST(MaxAttemptsBoundaryTest, ZeroAttemptsAreInvalidAndTheLargestIntIsAccepted) {
  RetryOptions options;
  options.max_attempts = 0;
  EXPECT_FALSE(RetryPolicy::Create(options).ok());
  options.max_attempts = 1;
  EXPECT_TRUE(RetryPolicy::Create(options).ok());
  options.max_attempts = INT_MAX;
  EXPECT_TRUE(RetryPolicy::Create(options).ok());
}

}  // namespace
}  // namespace mulligan
