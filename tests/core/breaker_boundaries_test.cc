// The circuit breaker's documented boundaries (DESIGN.md section 5,
// circuit_breaker.h), each at the boundary, one step inside and one step
// outside: the failure threshold (also together with a sliding window), the
// failure rate and minimum_calls, the half-open slots, the probe permit
// timeout, and the option ranges.
//
// Expected values are worked out by hand: closed -> open after
// failure_threshold consecutive failures (a success ends the run, an ignored
// result neither ends nor extends it), or, with a window, when failures * 100
// >= failure_rate_threshold * calls once calls >= minimum_calls; the two
// conditions are independent, so a window does not change the streak rule.
#include "mulligan/breaker/circuit_breaker.h"

#include <gtest/gtest.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace mulligan {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::seconds;

constexpr Duration kFast = milliseconds(1);
constexpr BreakerState kClosed = BreakerState::kClosed;
constexpr BreakerState kOpen = BreakerState::kOpen;
constexpr BreakerState kHalfOpen = BreakerState::kHalfOpen;

std::unique_ptr<CircuitBreaker> Make(const CircuitBreakerOptions& options) {
  Result<std::unique_ptr<CircuitBreaker>> breaker = CircuitBreaker::Create(options);
  EXPECT_TRUE(breaker.ok()) << breaker.status().ToString();
  return std::move(breaker).value();
}

void Call(CircuitBreaker& b, CallResult result, TimePoint now) {
  Admission a = b.Acquire(now);
  ASSERT_TRUE(a.admitted()) << BreakerStateName(b.state(now));
  b.Record(a.permit, result, kFast, now);
}

void Calls(CircuitBreaker& b, CallResult result, int n, TimePoint now) {
  for (int i = 0; i < n; ++i) Call(b, result, now);
}

struct Reasons {
  std::mutex mu;
  std::vector<std::string> list;
  BreakerListener Listener() {
    return [this](const BreakerTransition& t) {
      std::lock_guard<std::mutex> lock(mu);
      list.push_back(t.reason);
    };
  }
};

// --- The consecutive-failure streak with a sliding window -------------------------

// A window that never decides within these tests (minimum_calls is out of
// reach), with the default failure_threshold of 5.
CircuitBreakerOptions StreakWithWindow(WindowKind kind) {
  CircuitBreakerOptions o;
  o.window = kind;
  o.window_size = 1000;
  o.minimum_calls = 1000;
  return o;
}

TEST(BreakerStreakWithWindowTest, ASuccessEndsTheRunWithACountWindow) {
  const TimePoint t = FakeClock().Now();
  auto b = Make(StreakWithWindow(WindowKind::kCount));
  Reasons reasons;
  b->AddListener(reasons.Listener());
  Calls(*b, CallResult::kFailure, 4, t);
  EXPECT_EQ(b->counts(t).consecutive_failures, 4);
  Call(*b, CallResult::kSuccess, t);
  EXPECT_EQ(b->counts(t).consecutive_failures, 0);
  // Four more: 4 in a row, not 8 (which would have tripped at the fifth).
  Calls(*b, CallResult::kFailure, 4, t);
  EXPECT_EQ(b->state(t), kClosed);
  EXPECT_EQ(b->counts(t).consecutive_failures, 4);
  // The fifth in a row trips, on the streak (the window has 9 of 1000).
  Call(*b, CallResult::kFailure, t);
  EXPECT_EQ(b->state(t), kOpen);
  EXPECT_EQ(reasons.list, std::vector<std::string>{"failure_threshold"});
}

TEST(BreakerStreakWithWindowTest, ASuccessEndsTheRunWithATimeWindow) {
  const TimePoint t = FakeClock().Now();
  auto b = Make(StreakWithWindow(WindowKind::kTime));
  Calls(*b, CallResult::kFailure, 4, t);
  Call(*b, CallResult::kSuccess, t);
  Calls(*b, CallResult::kFailure, 4, t);
  EXPECT_EQ(b->state(t), kClosed);
  EXPECT_EQ(b->counts(t).consecutive_failures, 4);
  Call(*b, CallResult::kFailure, t);
  EXPECT_EQ(b->state(t), kOpen);
}

TEST(BreakerStreakWithWindowTest, AnIgnoredResultNeitherEndsNorExtendsTheRun) {
  const TimePoint t = FakeClock().Now();
  auto b = Make(StreakWithWindow(WindowKind::kCount));
  Calls(*b, CallResult::kFailure, 4, t);
  Call(*b, CallResult::kIgnored, t);
  EXPECT_EQ(b->counts(t).consecutive_failures, 4);
  EXPECT_EQ(b->counts(t).window_calls, 4u);  // ignored calls are not in the window
  Call(*b, CallResult::kFailure, t);
  EXPECT_EQ(b->state(t), kOpen);
}

TEST(BreakerStreakWithWindowTest, TheStreakTripsAtTheThresholdAndNotBefore) {
  // failure_threshold 3 with a count window: 2 in a row stay closed, the
  // third opens; the rate alone (3 of 3 = 100%) cannot, minimum_calls is 1000.
  const TimePoint t = FakeClock().Now();
  CircuitBreakerOptions o = StreakWithWindow(WindowKind::kCount);
  o.failure_threshold = 3;
  auto b = Make(o);
  Calls(*b, CallResult::kFailure, 2, t);
  EXPECT_EQ(b->state(t), kClosed);
  EXPECT_EQ(b->counts(t).consecutive_failures, 2);
  Call(*b, CallResult::kFailure, t);
  EXPECT_EQ(b->state(t), kOpen);
}

TEST(BreakerStreakWithWindowTest, TheWindowStillTripsOnItsRateWithTheStreakEnabled) {
  // threshold 5, window of 4 calls at 50%: S F S F trips on the rate even
  // though no two failures were consecutive.
  const TimePoint t = FakeClock().Now();
  CircuitBreakerOptions o;
  o.window = WindowKind::kCount;
  o.window_size = 4;
  o.minimum_calls = 4;
  o.failure_rate_threshold = 50.0;
  auto b = Make(o);
  Reasons reasons;
  b->AddListener(reasons.Listener());
  Call(*b, CallResult::kSuccess, t);
  Call(*b, CallResult::kFailure, t);
  Call(*b, CallResult::kSuccess, t);
  EXPECT_EQ(b->state(t), kClosed);
  Call(*b, CallResult::kFailure, t);
  EXPECT_EQ(b->state(t), kOpen);
  EXPECT_EQ(reasons.list, std::vector<std::string>{"failure_rate"});
}

// --- failure_threshold without a window -------------------------------------------

TEST(BreakerThresholdBoundaryTest, OneFailureUnderTheThresholdStaysClosedAndTheNextOpens) {
  const TimePoint t = FakeClock().Now();
  for (int threshold : {1, 2, 7}) {
    CircuitBreakerOptions o;
    o.failure_threshold = threshold;
    auto b = Make(o);
    Calls(*b, CallResult::kFailure, threshold - 1, t);
    EXPECT_EQ(b->state(t), kClosed) << threshold;
    EXPECT_EQ(b->counts(t).consecutive_failures, threshold - 1);
    Call(*b, CallResult::kFailure, t);
    EXPECT_EQ(b->state(t), kOpen) << threshold;
  }
}

TEST(BreakerThresholdBoundaryTest, TheThresholdRangeIsZeroToAMillion) {
  CircuitBreakerOptions o;
  o.failure_threshold = 1000000;
  EXPECT_TRUE(CircuitBreaker::Create(o).ok());
  o.failure_threshold = 1000001;
  EXPECT_FALSE(CircuitBreaker::Create(o).ok());
  o.failure_threshold = -1;
  EXPECT_FALSE(CircuitBreaker::Create(o).ok());
  o.failure_threshold = 0;  // only with a window
  EXPECT_FALSE(CircuitBreaker::Create(o).ok());
  o.window = WindowKind::kCount;
  EXPECT_TRUE(CircuitBreaker::Create(o).ok());
}

// --- failure_rate_threshold and minimum_calls -------------------------------------

// A count window of 10 calls evaluated from the 10th, with `rate` percent.
std::unique_ptr<CircuitBreaker> RateBreaker(double rate, int minimum_calls = 10) {
  CircuitBreakerOptions o;
  o.failure_threshold = 0;
  o.window = WindowKind::kCount;
  o.window_size = 10;
  o.minimum_calls = minimum_calls;
  o.failure_rate_threshold = rate;
  return Make(o);
}

// Records `failures` failures then successes up to 10 calls.
BreakerState AfterTenCalls(CircuitBreaker& b, int failures) {
  const TimePoint t = FakeClock().Now();
  Calls(b, CallResult::kFailure, failures, t);
  for (int i = failures; i < 10; ++i) {
    if (b.state(t) != kClosed) break;
    Call(b, CallResult::kSuccess, t);
  }
  return b.state(t);
}

TEST(BreakerRateBoundaryTest, ARateEqualToTheThresholdTrips) {
  auto b = RateBreaker(30.0);
  EXPECT_EQ(AfterTenCalls(*b, 3), kOpen);  // 3/10 = 30% >= 30%
}

TEST(BreakerRateBoundaryTest, ARateOneCallUnderTheThresholdDoesNotTrip) {
  auto b = RateBreaker(30.0);
  EXPECT_EQ(AfterTenCalls(*b, 2), kClosed);  // 20%
  EXPECT_EQ(b->counts(FakeClock().Now()).window_failure_rate, 20.0);
}

TEST(BreakerRateBoundaryTest, AThresholdJustAboveTheRateDoesNotTrip) {
  auto b = RateBreaker(30.001);
  EXPECT_EQ(AfterTenCalls(*b, 3), kClosed);  // 30% < 30.001%
}

TEST(BreakerRateBoundaryTest, AHundredPercentNeedsEveryCallToFail) {
  auto nine = RateBreaker(100.0);
  EXPECT_EQ(AfterTenCalls(*nine, 9), kClosed);
  auto ten = RateBreaker(100.0);
  EXPECT_EQ(AfterTenCalls(*ten, 10), kOpen);
}

TEST(BreakerRateBoundaryTest, NothingIsEvaluatedBelowMinimumCalls) {
  // Every call fails (100%), threshold 50%, minimum_calls 4: the third
  // failure is one call short, the fourth trips.
  const TimePoint t = FakeClock().Now();
  auto b = RateBreaker(50.0, 4);
  Calls(*b, CallResult::kFailure, 3, t);
  EXPECT_EQ(b->state(t), kClosed);
  EXPECT_EQ(b->counts(t).window_calls, 3u);
  Call(*b, CallResult::kFailure, t);
  EXPECT_EQ(b->state(t), kOpen);
}

TEST(BreakerRateBoundaryTest, TheRateRangeIsAboveZeroUpToAHundred) {
  CircuitBreakerOptions o;
  o.window = WindowKind::kCount;
  for (double ok : {100.0, 1e-9, 50.0}) {
    o.failure_rate_threshold = ok;
    EXPECT_TRUE(CircuitBreaker::Create(o).ok()) << ok;
  }
  for (double bad : {0.0, -1.0, 100.000001}) {
    o.failure_rate_threshold = bad;
    EXPECT_FALSE(CircuitBreaker::Create(o).ok()) << bad;
  }
  o.failure_rate_threshold = 50.0;
  o.window_size = 10;
  o.minimum_calls = 10;  // minimum_calls may equal window_size...
  EXPECT_TRUE(CircuitBreaker::Create(o).ok());
  o.minimum_calls = 11;  // ...but not exceed it
  EXPECT_FALSE(CircuitBreaker::Create(o).ok());
  o.minimum_calls = 0;
  EXPECT_FALSE(CircuitBreaker::Create(o).ok());
}

// --- half_open_max_calls ----------------------------------------------------------

// Trips a breaker made by ProbeBreaker (one failure) and returns the moment
// its 1 s reset timeout has elapsed.
TimePoint TripAndWait(CircuitBreaker& b) {
  const TimePoint t = FakeClock().Now();
  Call(b, CallResult::kFailure, t);
  return t + seconds(1);
}

std::unique_ptr<CircuitBreaker> ProbeBreaker(int slots) {
  CircuitBreakerOptions o;
  o.failure_threshold = 1;
  o.reset_timeout = seconds(1);
  o.half_open_max_calls = slots;
  return Make(o);
}

TEST(BreakerHalfOpenBoundaryTest, ExactlyMaxCallsProbesAreAdmittedAndTheNextIsRefused) {
  auto b = ProbeBreaker(3);
  const TimePoint t = TripAndWait(*b);
  std::vector<Permit> probes;
  for (int i = 0; i < 3; ++i) {
    Admission a = b->Acquire(t);
    ASSERT_TRUE(a.admitted()) << "probe " << i;
    EXPECT_TRUE(a.permit.probe);
    probes.push_back(a.permit);
  }
  Admission fourth = b->Acquire(t);
  EXPECT_FALSE(fourth.admitted());
  EXPECT_EQ(fourth.state, kHalfOpen);
  // Freeing one slot (an ignored result) admits exactly one more.
  b->Record(probes[0], CallResult::kIgnored, kFast, t);
  Admission again = b->Acquire(t);
  ASSERT_TRUE(again.admitted());
  probes[0] = again.permit;
  EXPECT_FALSE(b->Acquire(t).admitted());
}

TEST(BreakerHalfOpenBoundaryTest, ItClosesOnTheLastSlotsSuccessNotBefore) {
  auto b = ProbeBreaker(3);
  const TimePoint t = TripAndWait(*b);
  std::vector<Permit> probes;
  for (int i = 0; i < 3; ++i) probes.push_back(b->Acquire(t).permit);
  b->Record(probes[0], CallResult::kSuccess, kFast, t);
  b->Record(probes[1], CallResult::kSuccess, kFast, t);
  EXPECT_EQ(b->state(t), kHalfOpen);  // 2 of 3
  b->Record(probes[2], CallResult::kSuccess, kFast, t);
  EXPECT_EQ(b->state(t), kClosed);
}

TEST(BreakerHalfOpenBoundaryTest, TheSlotRangeIsOneTo65535) {
  CircuitBreakerOptions o;
  for (int ok : {1, 65535}) {
    o.half_open_max_calls = ok;
    EXPECT_TRUE(CircuitBreaker::Create(o).ok()) << ok;
  }
  for (int bad : {0, 65536, -1}) {
    o.half_open_max_calls = bad;
    EXPECT_FALSE(CircuitBreaker::Create(o).ok()) << bad;
  }
}

// --- permit_timeout ---------------------------------------------------------------

TEST(BreakerPermitTimeoutBoundaryTest, AProbeRecordedOneNanosecondBeforeItsTimeoutCounts) {
  CircuitBreakerOptions o;
  o.failure_threshold = 1;
  o.reset_timeout = seconds(1);
  o.permit_timeout = seconds(2);
  auto b = Make(o);
  const TimePoint t = TripAndWait(*b);
  Admission probe = b->Acquire(t);
  ASSERT_TRUE(probe.admitted());
  b->Record(probe.permit, CallResult::kSuccess, kFast, t + seconds(2) - nanoseconds(1));
  EXPECT_EQ(b->state(t + seconds(2)), kClosed);
}

TEST(BreakerPermitTimeoutBoundaryTest, AProbeRecordedExactlyAtItsTimeoutIsDiscarded) {
  CircuitBreakerOptions o;
  o.failure_threshold = 1;
  o.reset_timeout = seconds(1);
  o.permit_timeout = seconds(2);
  auto b = Make(o);
  const TimePoint t = TripAndWait(*b);
  Admission probe = b->Acquire(t);
  ASSERT_TRUE(probe.admitted());
  // One nanosecond before the timeout the slot is still held...
  EXPECT_FALSE(b->Acquire(t + seconds(2) - nanoseconds(1)).admitted());
  EXPECT_EQ(b->TimeUntilProbe(t + seconds(2) - nanoseconds(1)), nanoseconds(1));
  // ...at the timeout it is free, and the late result changes nothing.
  EXPECT_EQ(b->TimeUntilProbe(t + seconds(2)), Duration::zero());
  b->Record(probe.permit, CallResult::kSuccess, kFast, t + seconds(2));
  EXPECT_EQ(b->state(t + seconds(2)), kHalfOpen);
  EXPECT_EQ(b->counts(t + seconds(2)).successes, 0u);
}

}  // namespace
}  // namespace mulligan
