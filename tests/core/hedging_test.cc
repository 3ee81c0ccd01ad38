// Hedged calls (hedging/hedging.h): the exact start times of copies (fixed
// delay; quantile delay after a scripted latency history), the cap of
// max_attempts, losers cancelled and not counted, an open breaker and an
// empty budget stopping new copies, the deadline, and validation. Fake
// clock; every expected value is worked out by hand from gRPC A6's
// hedgingPolicy rules as the header states them.
#include "mulligan/hedging/hedging.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "mulligan/budget/budget.h"
#include "mulligan/pipeline/pipeline.h"
#include "mulligan/telemetry/metrics.h"

namespace mulligan {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

const Outcome kRetryable = Outcome::Failure(true);
const Outcome kTerminal = Outcome::Failure(false);

std::shared_ptr<HedgingPolicy> Hedging(int attempts, Duration delay) {
  HedgingOptions options;
  options.max_attempts = attempts;
  options.hedging_delay = delay;
  return std::move(HedgingPolicy::Create(options)).value();
}

std::unique_ptr<CircuitBreaker> Breaker(int threshold) {
  CircuitBreakerOptions options;
  options.name = "db";
  options.failure_threshold = threshold;
  options.reset_timeout = seconds(10);
  options.report_metrics = false;
  return std::move(CircuitBreaker::Create(options)).value();
}

std::shared_ptr<RetryBudget> Budget(double max_tokens, double ratio) {
  BudgetOptions options;
  options.kind = BudgetKind::kTokenBucket;
  options.token_bucket.max_tokens = max_tokens;
  options.token_bucket.token_ratio = ratio;
  return std::move(RetryBudget::Create(options)).value();
}

struct Fixture {
  explicit Fixture(CircuitBreaker* breaker = nullptr, RetryBudget* budget = nullptr,
                   std::optional<Duration> deadline = std::nullopt) {
    RetryOptions options;
    options.deadline = deadline;
    policy = std::move(RetryPolicy::Create(options)).value();
    Pipeline::Parts parts;
    parts.policy = &*policy;
    parts.breaker = breaker;
    parts.budget = budget;
    parts.metrics = registry.Get("svc");
    parts.clock = &clock;
    pipeline = std::make_unique<Pipeline>(parts);
  }
  MetricsSnapshot Metrics() { return registry.Get("svc")->Snapshot(); }
  TimePoint At(Duration d) const { return t0 + d; }

  FakeClock clock;
  TimePoint t0 = clock.Now();
  MetricsRegistry registry;
  std::optional<RetryPolicy> policy;
  std::unique_ptr<Pipeline> pipeline;
};

TEST(HedgingTest, FixedDelayStartsEachCopyDelayAfterThePreviousOne) {
  Fixture f;
  auto hedging = Hedging(3, milliseconds(100));
  HedgedCall call = hedging->Begin(*f.pipeline, f.t0);

  HedgeAdmission a = call.Admit(f.t0);
  ASSERT_TRUE(a.start());
  EXPECT_EQ(a.copy, 1);
  EXPECT_FALSE(a.timeout.has_value());
  a = call.Admit(f.At(milliseconds(40)));
  ASSERT_TRUE(a.wait());
  EXPECT_EQ(a.next_start, f.At(milliseconds(100)));
  a = call.Admit(f.At(milliseconds(100)));
  ASSERT_TRUE(a.start());
  EXPECT_EQ(a.copy, 2);
  a = call.Admit(f.At(milliseconds(150)));
  ASSERT_TRUE(a.wait());
  EXPECT_EQ(a.next_start, f.At(milliseconds(200)));
  // A late Admit starts copy 3 at its own `now`, not at the planned time.
  a = call.Admit(f.At(milliseconds(210)));
  ASSERT_TRUE(a.start());
  EXPECT_EQ(a.copy, 3);
  EXPECT_EQ(call.copy_start(3), f.At(milliseconds(210)));
  a = call.Admit(f.At(milliseconds(300)));
  EXPECT_EQ(a.action, HedgeAdmission::Action::kNoMore);
  EXPECT_EQ(a.reason, StopReason::kNone);
  EXPECT_EQ(call.running(), 3);

  HedgeDecision d = call.Record(2, Outcome::Success(), f.At(milliseconds(330)));
  EXPECT_TRUE(d.finished);
  EXPECT_EQ(d.winner, 2);
  EXPECT_EQ(d.reason, StopReason::kSucceeded);
  EXPECT_EQ(d.cancel, (std::vector<int>{1, 3}));
  EXPECT_EQ(call.running(), 0);
  EXPECT_EQ(call.cancelled(), 2);
  // A loser that reports after the win changes nothing.
  d = call.Record(1, kRetryable, f.At(milliseconds(340)));
  EXPECT_TRUE(d.finished);
  EXPECT_EQ(d.winner, 2);
  EXPECT_TRUE(d.cancel.empty());

  MetricsSnapshot m = f.Metrics();
  EXPECT_EQ(m.calls, 1u);
  EXPECT_EQ(m.attempts, 3u);
  EXPECT_EQ(m.successes, 1u);
  EXPECT_EQ(m.failures, 0u);
  EXPECT_EQ(m.hedges, 2u);
  EXPECT_EQ(m.hedges_won, 1u);
  EXPECT_EQ(m.hedge_cancelled, 2u);
  EXPECT_DOUBLE_EQ(m.call_duration_seconds.sum, 0.33);
}

TEST(HedgingTest, ZeroDelayStartsEveryCopyAtOnce) {
  Fixture f;
  auto hedging = Hedging(3, Duration::zero());
  HedgedCall call = hedging->Begin(*f.pipeline, f.t0);
  for (int copy = 1; copy <= 3; ++copy) {
    HedgeAdmission a = call.Admit(f.t0);
    ASSERT_TRUE(a.start());
    EXPECT_EQ(a.copy, copy);
  }
  EXPECT_EQ(call.Admit(f.t0).action, HedgeAdmission::Action::kNoMore);
  // The first copy wins: no hedge won.
  HedgeDecision d = call.Record(1, Outcome::Success(), f.At(milliseconds(5)));
  EXPECT_EQ(d.cancel, (std::vector<int>{2, 3}));
  EXPECT_EQ(f.Metrics().hedges_won, 0u);
  EXPECT_EQ(f.Metrics().hedges, 2u);
}

TEST(HedgingTest, DelayBeyondTheClockNeverStartsASecondCopy) {
  // Duration::max (a C delay of 1e300 ms, a Go delay of math.MaxInt64)
  // saturates next_start at TimePoint::max instead of wrapping it into the
  // past, which started every copy at once (found by a fresh user).
  Fixture f;
  f.clock.Advance(seconds(3600));  // a `now` far from the clock's epoch
  const TimePoint now = f.clock.Now();
  auto hedging = Hedging(3, Duration::max());
  HedgedCall call = hedging->Begin(*f.pipeline, now);
  ASSERT_TRUE(call.Admit(now).start());
  HedgeAdmission a = call.Admit(now + seconds(86400));
  ASSERT_TRUE(a.wait());
  EXPECT_EQ(a.next_start, TimePoint::max());
  EXPECT_EQ(call.Record(1, Outcome::Success(), now + milliseconds(5)).winner, 1);
  EXPECT_EQ(f.Metrics().hedges, 0u);
  EXPECT_EQ(f.Metrics().attempts, 1u);
}

TEST(HedgingTest, NonFatalFailureStartsTheNextCopyAtOnce) {
  Fixture f;
  auto hedging = Hedging(3, seconds(1));
  HedgedCall call = hedging->Begin(*f.pipeline, f.t0);
  ASSERT_TRUE(call.Admit(f.t0).start());
  HedgeDecision d = call.Record(1, kRetryable, f.At(milliseconds(10)));
  EXPECT_FALSE(d.finished);
  EXPECT_EQ(d.classification, Classification::kRetryable);
  HedgeAdmission a = call.Admit(f.At(milliseconds(10)));
  ASSERT_TRUE(a.start());
  EXPECT_EQ(a.copy, 2);
  // Copy 3 is then due a full delay after copy 2 started.
  a = call.Admit(f.At(milliseconds(20)));
  ASSERT_TRUE(a.wait());
  EXPECT_EQ(a.next_start, f.At(milliseconds(1010)));
}

// A6 "Pushback": a retryable answer with a Retry-After hint delays the next
// copy until the hint has passed, in place of "at once" (0.6).
TEST(HedgingTest, PushbackDelaysTheNextCopyUntilTheHintHasPassed) {
  Fixture f;
  auto hedging = Hedging(3, milliseconds(50));
  HedgedCall call = hedging->Begin(*f.pipeline, f.t0);
  ASSERT_TRUE(call.Admit(f.t0).start());
  HedgeDecision d = call.Record(1, Outcome::Http(429, seconds(1)), f.At(milliseconds(10)));
  EXPECT_FALSE(d.finished);
  EXPECT_EQ(d.classification, Classification::kRetryable);
  // Not at 10 ms (at once), nor at 50 ms (the hedging delay): at 1010 ms.
  HedgeAdmission a = call.Admit(f.At(milliseconds(50)));
  ASSERT_TRUE(a.wait());
  EXPECT_EQ(a.next_start, f.At(milliseconds(1010)));
  a = call.Admit(f.At(milliseconds(1010)));
  ASSERT_TRUE(a.start());
  EXPECT_EQ(a.copy, 2);
}

TEST(HedgingTest, PushbackOverRetryAfterMaxStopsNewCopies) {
  Fixture f;  // retry_after_max 60 s, RetryAfterOverflow::kStop (the defaults)
  auto hedging = Hedging(3, milliseconds(50));
  HedgedCall call = hedging->Begin(*f.pipeline, f.t0);
  ASSERT_TRUE(call.Admit(f.t0).start());
  HedgeDecision d = call.Record(1, Outcome::Http(503, seconds(120)), f.At(milliseconds(10)));
  EXPECT_TRUE(d.finished);
  EXPECT_EQ(d.reason, StopReason::kRetryAfterTooLong);
}

TEST(HedgingTest, PushbackPastTheDeadlineStopsNewCopies) {
  Fixture f(nullptr, nullptr, milliseconds(500));
  auto hedging = Hedging(3, milliseconds(50));
  HedgedCall call = hedging->Begin(*f.pipeline, f.t0);
  ASSERT_TRUE(call.Admit(f.t0).start());
  HedgeDecision d = call.Record(1, Outcome::Http(503, seconds(1)), f.At(milliseconds(10)));
  EXPECT_TRUE(d.finished);
  EXPECT_EQ(d.reason, StopReason::kDeadline);
}

TEST(HedgingTest, NeverMoreThanMaxAttemptsAndFiveAtMost) {
  Fixture f;
  HedgingOptions options;
  options.max_attempts = 9;  // A6: treated as 5
  auto hedging = std::move(HedgingPolicy::Create(options)).value();
  EXPECT_EQ(hedging->max_attempts(), 5);
  HedgedCall call = hedging->Begin(*f.pipeline, f.t0);
  int started = 0;
  for (int step = 0; step < 20; ++step) {
    HedgeAdmission a = call.Admit(f.At(milliseconds(step)));
    if (!a.start()) continue;
    ++started;
    // Every copy fails non-fatally: the next may start at once.
    HedgeDecision d = call.Record(a.copy, kRetryable, f.At(milliseconds(step)));
    EXPECT_EQ(d.finished, a.copy == 5);
  }
  EXPECT_EQ(started, 5);
  EXPECT_EQ(call.started(), 5);
  EXPECT_TRUE(call.finished());
  EXPECT_EQ(call.stop_reason(), StopReason::kAttemptsExhausted);
  MetricsSnapshot m = f.Metrics();
  EXPECT_EQ(m.attempts, 5u);
  EXPECT_EQ(m.failures, 1u);
  EXPECT_EQ(m.hedges, 4u);
}

TEST(HedgingTest, QuantileDelayFollowsTheRecentWinnersLatencies) {
  Fixture f;
  HedgingOptions options;
  options.max_attempts = 2;
  options.hedging_delay = seconds(1);
  options.delay_quantile = 0.9;
  options.quantile_window = 10;
  options.quantile_min_samples = 10;
  auto hedging = std::move(HedgingPolicy::Create(options)).value();

  // Runs one call whose first copy succeeds after `latency`, starting at
  // `begin`; returns when its second copy was due, as Admit says.
  auto run = [&](TimePoint begin, Duration latency) {
    HedgedCall call = hedging->Begin(*f.pipeline, begin);
    EXPECT_TRUE(call.Admit(begin).start());
    HedgeAdmission a = call.Admit(begin);
    EXPECT_TRUE(a.wait());
    call.Record(1, Outcome::Success(), begin + latency);
    return a.next_start - begin;
  };
  // History: 10, 20, ..., 100 ms. Until the tenth is known, the fixed 1 s.
  for (int i = 1; i <= 10; ++i) {
    EXPECT_EQ(run(f.At(seconds(i)), milliseconds(10 * i)), seconds(1)) << i;
  }
  // p90 by nearest rank over 10 values: the 9th smallest, 90 ms.
  EXPECT_EQ(hedging->CurrentDelay(), milliseconds(90));
  // That call's latency (250 ms) replaces the oldest (10 ms): 20..100, 250:
  // the 9th smallest is 100 ms.
  EXPECT_EQ(run(f.At(seconds(20)), milliseconds(250)), milliseconds(90));
  EXPECT_EQ(hedging->CurrentDelay(), milliseconds(100));

  // A copy 2 then starts exactly 100 ms into the next call.
  HedgedCall call = hedging->Begin(*f.pipeline, f.At(seconds(30)));
  ASSERT_TRUE(call.Admit(f.At(seconds(30))).start());
  EXPECT_TRUE(call.Admit(f.At(seconds(30) + milliseconds(99))).wait());
  HedgeAdmission a = call.Admit(f.At(seconds(30) + milliseconds(100)));
  ASSERT_TRUE(a.start());
  EXPECT_EQ(a.copy, 2);
}

TEST(HedgingTest, CancelledLoserCountsNeitherInTheBreakerNorInTheBudget) {
  auto breaker = Breaker(2);
  auto budget = Budget(10, 1);
  Fixture f(breaker.get(), budget.get());
  auto hedging = Hedging(2, milliseconds(50));
  HedgedCall call = hedging->Begin(*f.pipeline, f.t0);
  ASSERT_TRUE(call.Admit(f.t0).start());
  ASSERT_TRUE(call.Admit(f.At(milliseconds(50))).start());
  HedgeDecision d = call.Record(2, Outcome::Success(), f.At(milliseconds(60)));
  EXPECT_EQ(d.cancel, (std::vector<int>{1}));
  BreakerCounts counts = breaker->counts(f.At(milliseconds(60)));
  EXPECT_EQ(counts.successes, 1u);
  EXPECT_EQ(counts.failures, 0u);
  EXPECT_EQ(counts.ignored, 1u);
  EXPECT_EQ(counts.consecutive_failures, 0);
  // A6 token bucket: a hedge asks but takes nothing; only failures do. The
  // loser took nothing: still full (10).
  EXPECT_EQ(budget->Tokens(f.At(milliseconds(60))), 10.0);
  EXPECT_EQ(budget->allowed(), 1u);
  EXPECT_EQ(f.Metrics().failures, 0u);

  // For contrast, a copy that fails non-fatally is counted in both.
  HedgedCall second = hedging->Begin(*f.pipeline, f.At(seconds(1)));
  ASSERT_TRUE(second.Admit(f.At(seconds(1))).start());
  second.Record(1, kRetryable, f.At(seconds(1) + milliseconds(5)));
  EXPECT_EQ(breaker->counts(f.At(seconds(2))).failures, 1u);
  EXPECT_EQ(budget->Tokens(f.At(seconds(2))), 9.0);
}

TEST(HedgingTest, OpenBreakerStopsNewCopiesButNotTheRunningOne) {
  auto breaker = Breaker(1);
  Fixture f(breaker.get());
  auto hedging = Hedging(3, milliseconds(100));
  HedgedCall call = hedging->Begin(*f.pipeline, f.t0);
  ASSERT_TRUE(call.Admit(f.t0).start());
  ASSERT_TRUE(call.Admit(f.At(milliseconds(100))).start());
  // Copy 2 fails: one failure opens the breaker (threshold 1).
  HedgeDecision d = call.Record(2, kRetryable, f.At(milliseconds(120)));
  EXPECT_FALSE(d.finished);
  EXPECT_EQ(breaker->state(f.At(milliseconds(120))), BreakerState::kOpen);
  HedgeAdmission a = call.Admit(f.At(milliseconds(120)));
  EXPECT_EQ(a.action, HedgeAdmission::Action::kNoMore);
  EXPECT_EQ(a.reason, StopReason::kCircuitOpen);
  EXPECT_EQ(a.retry_in, seconds(10));
  // Copy 1 still runs and wins.
  d = call.Record(1, Outcome::Success(), f.At(milliseconds(300)));
  EXPECT_TRUE(d.finished);
  EXPECT_EQ(d.winner, 1);
  EXPECT_EQ(call.started(), 2);
}

TEST(HedgingTest, OpenBreakerWithNothingRunningEndsTheCall) {
  auto breaker = Breaker(1);
  Fixture f(breaker.get());
  auto hedging = Hedging(3, milliseconds(100));
  HedgedCall call = hedging->Begin(*f.pipeline, f.t0);
  ASSERT_TRUE(call.Admit(f.t0).start());
  EXPECT_FALSE(call.Record(1, kRetryable, f.At(milliseconds(10))).finished);
  HedgeAdmission a = call.Admit(f.At(milliseconds(10)));
  EXPECT_EQ(a.reason, StopReason::kCircuitOpen);
  EXPECT_TRUE(call.finished());
  EXPECT_EQ(call.stop_reason(), StopReason::kCircuitOpen);
  EXPECT_EQ(f.Metrics().failures, 1u);
}

TEST(HedgingTest, FirstCopyRefusedByAnOpenBreakerEndsTheCall) {
  auto breaker = Breaker(5);
  Fixture f(breaker.get());
  breaker->ForceOpen(f.t0);
  auto hedging = Hedging(2, milliseconds(100));
  HedgedCall call = hedging->Begin(*f.pipeline, f.t0);
  HedgeAdmission a = call.Admit(f.t0);
  EXPECT_FALSE(a.start());
  EXPECT_EQ(a.reason, StopReason::kCircuitOpen);
  EXPECT_TRUE(call.finished());
  EXPECT_EQ(call.started(), 0);
  EXPECT_EQ(call.RefusalStatus().code(), StatusCode::kCircuitOpen);
  // Counted as the pipeline counts a refused first attempt: a failed call
  // of 0 attempts; the short circuit is the breaker's own (its metrics).
  const MetricsSnapshot m = f.Metrics();
  EXPECT_EQ(m.calls, 1u);
  EXPECT_EQ(m.attempts, 0u);
  EXPECT_EQ(m.failures, 1u);
  EXPECT_EQ(m.short_circuits, 0u);
}

TEST(HedgingTest, EmptyBudgetStopsNewCopies) {
  auto breaker = Breaker(5);
  // A6: retries only while tokens > max_tokens / 2 = 1. One failure leaves 1.
  auto budget = Budget(2, 0.5);
  budget->OnFailure(BudgetFailure::kOther, TimePoint());
  Fixture f(breaker.get(), budget.get());
  auto hedging = Hedging(3, milliseconds(100));
  HedgedCall call = hedging->Begin(*f.pipeline, f.t0);
  ASSERT_TRUE(call.Admit(f.t0).start());
  HedgeAdmission a = call.Admit(f.At(milliseconds(100)));
  EXPECT_EQ(a.action, HedgeAdmission::Action::kNoMore);
  EXPECT_EQ(a.reason, StopReason::kBudget);
  EXPECT_EQ(budget->refused(), 1u);
  // The refused copy's breaker permit was given back unjudged.
  EXPECT_EQ(breaker->counts(f.At(milliseconds(100))).ignored, 1u);
  HedgeDecision d = call.Record(1, Outcome::Success(), f.At(milliseconds(150)));
  EXPECT_EQ(d.winner, 1);
  EXPECT_EQ(call.started(), 1);
  EXPECT_EQ(f.Metrics().hedges, 0u);
}

TEST(HedgingTest, FatalFailureCancelsTheOtherCopies) {
  Fixture f;
  auto hedging = Hedging(3, milliseconds(10));
  HedgedCall call = hedging->Begin(*f.pipeline, f.t0);
  ASSERT_TRUE(call.Admit(f.t0).start());
  ASSERT_TRUE(call.Admit(f.At(milliseconds(10))).start());
  HedgeDecision d = call.Record(1, kTerminal, f.At(milliseconds(15)));
  EXPECT_TRUE(d.finished);
  EXPECT_EQ(d.reason, StopReason::kTerminal);
  EXPECT_EQ(d.winner, 0);
  EXPECT_EQ(d.cancel, (std::vector<int>{2}));
  EXPECT_EQ(call.Admit(f.At(milliseconds(20))).action, HedgeAdmission::Action::kNoMore);
  EXPECT_EQ(f.Metrics().failures, 1u);
  EXPECT_EQ(f.Metrics().hedge_cancelled, 1u);
}

TEST(HedgingTest, NotReplaySafeRunsOneCopy) {
  Fixture f;
  auto hedging = Hedging(3, milliseconds(10));
  CallOptions options;
  options.replay_safe = false;
  HedgedCall call = hedging->Begin(*f.pipeline, f.t0, options);
  EXPECT_EQ(call.max_attempts(), 1);
  ASSERT_TRUE(call.Admit(f.t0).start());
  EXPECT_EQ(call.Admit(f.At(seconds(1))).action, HedgeAdmission::Action::kNoMore);
}

TEST(HedgingTest, DeadlineTrimsTimeoutsAndStopsNewCopies) {
  Fixture f(nullptr, nullptr, milliseconds(250));
  auto hedging = Hedging(5, milliseconds(100));
  HedgedCall call = hedging->Begin(*f.pipeline, f.t0);
  HedgeAdmission a = call.Admit(f.t0);
  ASSERT_TRUE(a.start());
  EXPECT_EQ(a.timeout, milliseconds(250));
  a = call.Admit(f.At(milliseconds(100)));
  ASSERT_TRUE(a.start());
  EXPECT_EQ(a.timeout, milliseconds(150));
  a = call.Admit(f.At(milliseconds(200)));
  ASSERT_TRUE(a.start());
  EXPECT_EQ(a.timeout, milliseconds(50));
  a = call.Admit(f.At(milliseconds(300)));
  EXPECT_EQ(a.action, HedgeAdmission::Action::kNoMore);
  EXPECT_EQ(a.reason, StopReason::kDeadline);
}

TEST(HedgingTest, AbandonReleasesTheRunningCopies) {
  auto breaker = Breaker(1);
  Fixture f(breaker.get());
  auto hedging = Hedging(2, Duration::zero());
  {
    HedgedCall call = hedging->Begin(*f.pipeline, f.t0);
    ASSERT_TRUE(call.Admit(f.t0).start());
    ASSERT_TRUE(call.Admit(f.t0).start());
    HedgedCall moved = std::move(call);  // the moved-from call abandons nothing
    moved.Abandon(f.At(milliseconds(5)));
    EXPECT_EQ(moved.cancelled(), 2);
  }
  EXPECT_EQ(breaker->state(f.At(milliseconds(5))), BreakerState::kClosed);
  EXPECT_EQ(breaker->counts(f.At(milliseconds(5))).ignored, 2u);
  EXPECT_EQ(f.Metrics().failures, 1u);
  EXPECT_EQ(f.Metrics().hedge_cancelled, 2u);
}

TEST(HedgingTest, CancelCountsTheCallCancelledNeverFailed) {
  // Threshold 1: a single failure recorded would open the breaker.
  auto breaker = Breaker(1);
  auto budget = Budget(10, 1);
  Fixture f(breaker.get(), budget.get());
  auto hedging = Hedging(3, milliseconds(50));
  HedgedCall call = hedging->Begin(*f.pipeline, f.t0);
  ASSERT_TRUE(call.Admit(f.t0).start());
  ASSERT_TRUE(call.Admit(f.At(milliseconds(50))).start());
  // The caller's task is cancelled at 70 ms, copies 1 and 2 running.
  call.Cancel(f.At(milliseconds(70)));
  EXPECT_TRUE(call.finished());
  EXPECT_EQ(call.stop_reason(), StopReason::kNone);
  EXPECT_EQ(call.winner(), 0);
  EXPECT_EQ(call.running(), 0);
  EXPECT_EQ(call.cancelled(), 2);
  // Nothing starts after a cancel, and a late outcome changes nothing.
  EXPECT_EQ(call.Admit(f.At(milliseconds(100))).action, HedgeAdmission::Action::kNoMore);
  HedgeDecision d = call.Record(1, kRetryable, f.At(milliseconds(110)));
  EXPECT_TRUE(d.finished);
  EXPECT_TRUE(d.cancel.empty());
  call.Cancel(f.At(milliseconds(120)));  // once finished: nothing
  call.Abandon(f.At(milliseconds(120)));

  BreakerCounts counts = breaker->counts(f.At(milliseconds(120)));
  EXPECT_EQ(breaker->state(f.At(milliseconds(120))), BreakerState::kClosed);
  EXPECT_EQ(counts.failures, 0u);
  EXPECT_EQ(counts.successes, 0u);
  EXPECT_EQ(counts.ignored, 2u);
  // The budget was asked once (the hedge) and told no outcome: still full.
  EXPECT_EQ(budget->Tokens(f.At(milliseconds(120))), 10.0);
  EXPECT_EQ(budget->allowed(), 1u);
  MetricsSnapshot m = f.Metrics();
  EXPECT_EQ(m.calls, 1u);
  EXPECT_EQ(m.attempts, 2u);
  EXPECT_EQ(m.successes, 0u);
  EXPECT_EQ(m.failures, 0u);
  EXPECT_EQ(m.cancelled, 1u);
  EXPECT_EQ(m.hedges, 1u);
  EXPECT_EQ(m.hedges_won, 0u);
  EXPECT_EQ(m.hedge_cancelled, 2u);
  EXPECT_EQ(m.in_flight, 0);
}

TEST(HedgingTest, CancelBeforeAnyCopyAndAfterOneFailed) {
  Fixture f;
  auto hedging = Hedging(2, milliseconds(50));
  {
    HedgedCall call = hedging->Begin(*f.pipeline, f.t0);
    call.Cancel(f.t0);  // cancelled before its first copy
    EXPECT_EQ(call.cancelled(), 0);
  }
  MetricsSnapshot m = f.Metrics();
  EXPECT_EQ(m.calls, 1u);
  EXPECT_EQ(m.attempts, 0u);
  EXPECT_EQ(m.cancelled, 1u);
  EXPECT_EQ(m.hedge_cancelled, 0u);
  {
    // Copy 1 failed (recorded), copy 2 running when the caller cancels.
    HedgedCall call = hedging->Begin(*f.pipeline, f.At(seconds(1)));
    ASSERT_TRUE(call.Admit(f.At(seconds(1))).start());
    EXPECT_FALSE(call.Record(1, kRetryable, f.At(seconds(1) + milliseconds(10))).finished);
    ASSERT_TRUE(call.Admit(f.At(seconds(1) + milliseconds(10))).start());
    call.Cancel(f.At(seconds(1) + milliseconds(20)));
    EXPECT_EQ(call.cancelled(), 1);
  }  // the destructor abandons nothing more
  m = f.Metrics();
  EXPECT_EQ(m.calls, 2u);
  EXPECT_EQ(m.attempts, 2u);
  EXPECT_EQ(m.failures, 0u);
  EXPECT_EQ(m.cancelled, 2u);
  EXPECT_EQ(m.hedges, 1u);
  EXPECT_EQ(m.hedge_cancelled, 1u);
  EXPECT_EQ(m.in_flight, 0);
}

TEST(HedgingTest, GateOnlyCancelCountsOnlyTheCancelledCopies) {
  auto budget = Budget(10, 1);
  Fixture f(nullptr, budget.get());
  auto hedging = Hedging(2, Duration::zero());
  HedgedCall call = hedging->Begin(*f.pipeline, f.t0, {}, HedgeAccounting::kGateOnly);
  ASSERT_TRUE(call.Admit(f.t0).start());
  ASSERT_TRUE(call.Admit(f.t0).start());
  call.Cancel(f.At(milliseconds(5)));
  MetricsSnapshot m = f.Metrics();
  // The copies' own calls count the call: the hedged call adds none.
  EXPECT_EQ(m.calls, 0u);
  EXPECT_EQ(m.cancelled, 0u);
  EXPECT_EQ(m.hedges, 1u);
  EXPECT_EQ(m.hedge_cancelled, 2u);
}

TEST(HedgingTest, BadOptionsAreRefusedNamingTheField) {
  auto message = [](HedgingOptions o) {
    Result<std::shared_ptr<HedgingPolicy>> r = HedgingPolicy::Create(o);
    EXPECT_FALSE(r.ok());
    return r.ok() ? std::string() : std::string(r.status().message());
  };
  HedgingOptions o;
  o.max_attempts = 1;
  EXPECT_EQ(message(o), "hedging: max_attempts must be >= 2 (gRPC A6), got 1");
  o = {};
  o.hedging_delay = milliseconds(-5);
  EXPECT_EQ(message(o), "hedging: hedging_delay must be >= 0, got -0.005000 s");
  o = {};
  o.delay_quantile = 0.0;
  EXPECT_EQ(message(o), "hedging: delay_quantile must be in (0, 1], got 0");
  o.delay_quantile = 1.5;
  EXPECT_EQ(message(o), "hedging: delay_quantile must be in (0, 1], got 1.5");
  o.delay_quantile = std::nan("");
  EXPECT_EQ(message(o), "hedging: delay_quantile must be in (0, 1], got nan");
  // The value as given, short (std::to_string printed 301 digits, and "1"
  // for 1.000000001).
  o.delay_quantile = 1e300;
  EXPECT_EQ(message(o), "hedging: delay_quantile must be in (0, 1], got 1e+300");
  o.delay_quantile = 1.000000001;
  EXPECT_EQ(message(o), "hedging: delay_quantile must be in (0, 1], got 1.000000001");
  o.delay_quantile = -1e-9;
  EXPECT_EQ(message(o), "hedging: delay_quantile must be in (0, 1], got -1e-09");
  o = {};
  o.quantile_window = 0;
  EXPECT_EQ(message(o), "hedging: quantile_window must be in [1, 100000], got 0");
  o = {};
  o.quantile_min_samples = 101;
  EXPECT_EQ(message(o),
            "hedging: quantile_min_samples must be in [1, quantile_window = 100], got 101");
  EXPECT_EQ(HedgingPolicy::Create(HedgingOptions{}).value()->max_attempts(), 2);
}

// HedgeAccounting::kGateOnly (0.6, the HTTP clients): each copy's own call
// records its outcome, so the hedged call only asks the budget before the
// extra copy and counts the hedge metrics. Token bucket of 10, ratio 1.
TEST(HedgingTest, GateOnlyAsksTheBudgetButRecordsNoOutcome) {
  auto breaker = Breaker(1);
  auto budget = Budget(10, 1);
  Fixture f(breaker.get(), budget.get());
  auto hedging = Hedging(3, milliseconds(50));
  HedgedCall call = hedging->Begin(*f.pipeline, f.t0, CallOptions{}, HedgeAccounting::kGateOnly);
  ASSERT_TRUE(call.Admit(f.t0).start());
  ASSERT_TRUE(call.Admit(f.At(milliseconds(50))).start());
  // Copy 2 fails non-fatally: the next copy starts at once, but neither the
  // budget (still 10, where kFull takes 1) nor the breaker (threshold 1,
  // still closed: its permit is freed unjudged) is told.
  HedgeDecision d = call.Record(2, kRetryable, f.At(milliseconds(60)));
  EXPECT_FALSE(d.finished);
  EXPECT_EQ(budget->Tokens(f.At(milliseconds(60))), 10.0);
  EXPECT_EQ(breaker->state(f.At(milliseconds(60))), BreakerState::kClosed);
  HedgeAdmission a = call.Admit(f.At(milliseconds(60)));
  ASSERT_TRUE(a.start());
  EXPECT_EQ(a.copy, 3);
  EXPECT_EQ(budget->allowed(), 2u);  // two extra copies asked and granted
  d = call.Record(3, Outcome::Success(), f.At(milliseconds(70)));
  EXPECT_EQ(d.winner, 3);
  EXPECT_EQ(d.cancel, (std::vector<int>{1}));
  EXPECT_EQ(budget->Tokens(f.At(milliseconds(70))), 10.0);
  BreakerCounts counts = breaker->counts(f.At(milliseconds(70)));
  EXPECT_EQ(counts.successes, 0u);
  EXPECT_EQ(counts.failures, 0u);
  EXPECT_EQ(counts.ignored, 3u);
  MetricsSnapshot m = f.Metrics();
  EXPECT_EQ(m.calls, 0u);  // the copies' calls count themselves
  EXPECT_EQ(m.successes, 0u);
  EXPECT_EQ(m.hedges, 2u);
  EXPECT_EQ(m.hedges_won, 1u);
  EXPECT_EQ(m.hedge_cancelled, 1u);
}

// Gate-only still refuses an extra copy when the budget is empty.
TEST(HedgingTest, GateOnlyEmptyBudgetStopsNewCopies) {
  auto budget = Budget(2, 0.5);
  budget->OnFailure(BudgetFailure::kOther, TimePoint());  // 1 token left: no retries
  Fixture f(nullptr, budget.get());
  auto hedging = Hedging(2, milliseconds(100));
  HedgedCall call = hedging->Begin(*f.pipeline, f.t0, CallOptions{}, HedgeAccounting::kGateOnly);
  ASSERT_TRUE(call.Admit(f.t0).start());
  HedgeAdmission a = call.Admit(f.At(milliseconds(100)));
  EXPECT_EQ(a.reason, StopReason::kBudget);
  EXPECT_EQ(budget->refused(), 1u);
  EXPECT_EQ(call.Record(1, Outcome::Success(), f.At(milliseconds(150))).winner, 1);
}

}  // namespace
}  // namespace mulligan
