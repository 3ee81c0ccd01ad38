// CircuitBreaker::Acquire(const Clock&) and RecordNeedsTime (0.6): the clock
// is read only when the breaker's answer depends on the time. A counting
// clock (a FakeClock underneath) counts the readings; the decisions are the
// same as with Acquire(clock.Now()).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>

#include "mulligan/base/clock.h"
#include "mulligan/breaker/circuit_breaker.h"

namespace mulligan {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

class CountingClock final : public Clock {
 public:
  TimePoint Now() const override {
    reads.fetch_add(1);
    return fake.Now();
  }
  WallTime WallNow() const override { return fake.WallNow(); }
  void SleepFor(Duration d) override { fake.SleepFor(d); }
  mutable std::atomic<int> reads{0};
  FakeClock fake;
};

std::unique_ptr<CircuitBreaker> Make(const CircuitBreakerOptions& options) {
  Result<std::unique_ptr<CircuitBreaker>> breaker = CircuitBreaker::Create(options);
  EXPECT_TRUE(breaker.ok()) << breaker.status().ToString();
  return std::move(breaker).value();
}

CircuitBreakerOptions Consecutive(int threshold) {
  CircuitBreakerOptions o;
  o.name = "clock_reads";
  o.failure_threshold = threshold;
  o.reset_timeout = seconds(10);
  return o;
}

TEST(BreakerClockReads, ClosedSuccessReadsNoClock) {
  CountingClock clock;
  auto b = Make(Consecutive(2));
  Admission a = b->Acquire(clock);
  ASSERT_TRUE(a.admitted());
  EXPECT_EQ(a.state, BreakerState::kClosed);
  EXPECT_EQ(a.permit.acquired_at, CircuitBreaker::kTimeNotRead);
  EXPECT_FALSE(b->RecordNeedsTime(a.permit, CallResult::kSuccess));
  EXPECT_FALSE(b->RecordNeedsTime(a.permit, CallResult::kIgnored));
  EXPECT_TRUE(b->RecordNeedsTime(a.permit, CallResult::kFailure));
  EXPECT_FALSE(b->RecordNeedsTime(Permit{}, CallResult::kFailure));  // invalid: ignored
  b->Record(a.permit, CallResult::kSuccess, Duration::zero(), CircuitBreaker::kTimeNotRead);
  EXPECT_EQ(clock.reads.load(), 0);
  EXPECT_EQ(b->counts(clock.fake.Now()).successes, 1u);
}

TEST(BreakerClockReads, FailuresStillTripAtTheRightTime) {
  CountingClock clock;
  auto b = Make(Consecutive(2));
  for (int i = 0; i < 2; ++i) {
    Admission a = b->Acquire(clock);
    ASSERT_TRUE(a.admitted());
    ASSERT_TRUE(b->RecordNeedsTime(a.permit, CallResult::kFailure));
    b->Record(a.permit, CallResult::kFailure, Duration::zero(), clock.Now());
  }
  EXPECT_EQ(clock.reads.load(), 2);  // the two failures' records only
  // Open: the refusal depends on the time, so it reads the clock.
  clock.fake.Advance(seconds(4));
  Admission refused = b->Acquire(clock);
  EXPECT_FALSE(refused.admitted());
  EXPECT_EQ(refused.retry_in, seconds(6));
  EXPECT_EQ(clock.reads.load(), 3);
  // At the reset timeout a probe is admitted with its time (permit_timeout).
  clock.fake.Advance(seconds(6));
  Admission probe = b->Acquire(clock);
  ASSERT_TRUE(probe.admitted());
  EXPECT_TRUE(probe.permit.probe);
  EXPECT_EQ(probe.permit.acquired_at, clock.fake.Now());
  EXPECT_TRUE(b->RecordNeedsTime(probe.permit, CallResult::kSuccess));
  b->Record(probe.permit, CallResult::kSuccess, Duration::zero(), clock.Now());
  EXPECT_EQ(b->state(clock.fake.Now()), BreakerState::kClosed);
}

TEST(BreakerClockReads, DurationsAndWindowsReadTheClock) {
  CountingClock clock;
  CircuitBreakerOptions slow = Consecutive(5);
  slow.window = WindowKind::kCount;  // slow-call detection needs a window
  slow.slow_call_duration = milliseconds(100);
  auto s = Make(slow);
  Admission a = s->Acquire(clock);
  EXPECT_EQ(clock.reads.load(), 1);
  EXPECT_EQ(a.permit.acquired_at, clock.fake.Now());
  EXPECT_TRUE(s->RecordNeedsTime(a.permit, CallResult::kSuccess));

  CircuitBreakerOptions windowed = Consecutive(5);
  windowed.window = WindowKind::kCount;
  auto w = Make(windowed);
  Admission wa = w->Acquire(clock);  // the window needs the record's time only
  EXPECT_EQ(clock.reads.load(), 1);
  EXPECT_TRUE(w->RecordNeedsTime(wa.permit, CallResult::kSuccess));

  auto l = Make(Consecutive(5));
  l->AddCallListener([](const BreakerCallEvent&) {});
  Admission la = l->Acquire(clock);  // a call listener gets durations
  EXPECT_EQ(clock.reads.load(), 2);
  EXPECT_TRUE(l->RecordNeedsTime(la.permit, CallResult::kSuccess));
}

TEST(BreakerClockReads, ForcedOpenRefusesAsBefore) {
  CountingClock clock;
  auto b = Make(Consecutive(5));
  b->ForceOpen(clock.fake.Now());
  Admission a = b->Acquire(clock);
  EXPECT_FALSE(a.admitted());
  EXPECT_EQ(a.retry_in, Duration::max());
  b->Disable(clock.fake.Now());
  const int before = clock.reads.load();
  Admission d = b->Acquire(clock);
  EXPECT_TRUE(d.admitted());
  EXPECT_EQ(d.state, BreakerState::kDisabled);
  EXPECT_EQ(clock.reads.load(), before);  // disabled: no reading
}

}  // namespace
}  // namespace mulligan
