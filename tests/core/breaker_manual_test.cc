// Manual control with time limits: forced open for a duration or until an
// instant, a manual switch to half-open, and the bound on the half-open
// state (max_half_open_duration). Exact states and transitions after each
// event script, worked out by hand; TimePoint values only, no sleeping.
#include <gtest/gtest.h>

#include <memory>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "mulligan/breaker/circuit_breaker.h"

namespace mulligan {
inline namespace v0 {
void PrintTo(BreakerState state, std::ostream* os);
}  // namespace v0
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TimePoint At(double s) {
  return TimePoint(std::chrono::duration_cast<Duration>(std::chrono::duration<double>(s)));
}

std::unique_ptr<CircuitBreaker> Make(CircuitBreakerOptions o) {
  o.report_metrics = false;
  Result<std::unique_ptr<CircuitBreaker>> breaker = CircuitBreaker::Create(o);
  EXPECT_TRUE(breaker.ok()) << breaker.status().ToString();
  return std::move(breaker).value();
}

using Event = std::tuple<std::string, std::string, std::string, TimePoint>;

struct Log {
  std::vector<Event> events;
  BreakerListener Listener() {
    return [this](const BreakerTransition& t) {
      events.emplace_back(BreakerStateName(t.from), BreakerStateName(t.to), t.reason, t.at);
    };
  }
};

void Fail(CircuitBreaker& b, TimePoint now) {
  Admission a = b.Acquire(now);
  ASSERT_TRUE(a.admitted());
  b.Record(a.permit, CallResult::kFailure, milliseconds(1), now);
}

void Succeed(CircuitBreaker& b, TimePoint now) {
  Admission a = b.Acquire(now);
  ASSERT_TRUE(a.admitted());
  b.Record(a.permit, CallResult::kSuccess, milliseconds(1), now);
}

TEST(BreakerForceOpenForTest, OpensForTheDurationThenProbes) {
  CircuitBreakerOptions o;
  o.reset_timeout = seconds(10);
  auto b = Make(o);
  Log log;
  b->AddListener(log.Listener());
  ASSERT_TRUE(b->ForceOpenFor(seconds(20), At(100)).ok());
  EXPECT_EQ(b->state(At(100)), BreakerState::kOpen);
  Admission refused = b->Acquire(At(119));
  EXPECT_FALSE(refused.admitted());
  EXPECT_EQ(refused.retry_in, seconds(1));
  EXPECT_EQ(b->TimeUntilProbe(At(119)), seconds(1));
  EXPECT_EQ(b->state(At(120)), BreakerState::kHalfOpen);
  Succeed(*b, At(120));
  EXPECT_EQ(b->state(At(120)), BreakerState::kClosed);
  const std::vector<Event> expected = {
      {"closed", "open", "forced_open_until", At(100)},
      {"open", "half_open", "reset_timeout_elapsed", At(120)},
      {"half_open", "closed", "probe_succeeded", At(120)},
  };
  EXPECT_EQ(log.events, expected);
  EXPECT_FALSE(b->last_trip().has_value());  // not a trip
}

TEST(BreakerForceOpenForTest, UntilAnInstantAndBadInput) {
  CircuitBreakerOptions o;
  auto b = Make(o);
  ASSERT_TRUE(b->ForceOpenUntil(At(150), At(100)).ok());
  EXPECT_EQ(b->Acquire(At(149)).retry_in, seconds(1));
  EXPECT_EQ(b->state(At(150)), BreakerState::kHalfOpen);

  auto c = Make(o);
  Status past = c->ForceOpenUntil(At(100), At(100));
  EXPECT_EQ(past.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(past.message().find("must be after now"), std::string::npos) << past.message();
  Status zero = c->ForceOpenFor(Duration::zero(), At(100));
  EXPECT_EQ(zero.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(zero.message().find("duration must be > 0"), std::string::npos) << zero.message();
  EXPECT_EQ(c->state(At(100)), BreakerState::kClosed);  // nothing changed
  // A duration past the clock's range saturates instead of wrapping.
  ASSERT_TRUE(c->ForceOpenFor(Duration::max(), At(100)).ok());
  EXPECT_EQ(c->state(At(1e9)), BreakerState::kOpen);
}

TEST(BreakerForceOpenForTest, RestartsTheResetTimeoutGrowth) {
  CircuitBreakerOptions o;
  o.failure_threshold = 1;
  o.reset_timeout = seconds(10);
  o.reset_timeout_multiplier = 2;
  o.max_reset_timeout = seconds(100);
  auto b = Make(o);
  Fail(*b, At(100));  // trip 1: open until 110
  Fail(*b, At(110));  // the probe fails: trip 2, open 10 * 2 = 20 s, until 130
  EXPECT_EQ(b->TimeUntilProbe(At(110)), seconds(20));
  ASSERT_TRUE(b->ForceOpenFor(seconds(5), At(111)).ok());  // until 116
  Fail(*b, At(116));  // the probe fails: growth restarted, so 10 s again, until 126
  EXPECT_EQ(b->state(At(125.999)), BreakerState::kOpen);
  EXPECT_EQ(b->state(At(126)), BreakerState::kHalfOpen);
}

TEST(BreakerHalfOpenTest, ManualHalfOpenProbesFromAnyState) {
  CircuitBreakerOptions o;
  o.reset_timeout = seconds(10);
  auto b = Make(o);
  Log log;
  b->AddListener(log.Listener());
  b->HalfOpen(At(100));
  EXPECT_EQ(b->state(At(100)), BreakerState::kHalfOpen);
  b->HalfOpen(At(100));  // already half-open: nothing
  Admission probe = b->Acquire(At(101));
  ASSERT_TRUE(probe.admitted());
  EXPECT_TRUE(probe.permit.probe);
  EXPECT_FALSE(b->Acquire(At(101)).admitted());  // one probe slot
  b->Record(probe.permit, CallResult::kFailure, milliseconds(1), At(102));
  EXPECT_EQ(b->TimeUntilProbe(At(102)), seconds(10));
  b->ForceOpen(At(103));
  b->HalfOpen(At(104));
  Succeed(*b, At(104));
  EXPECT_EQ(b->state(At(104)), BreakerState::kClosed);
  const std::vector<Event> expected = {
      {"closed", "half_open", "half_open", At(100)},
      {"half_open", "open", "probe_failed", At(102)},
      {"open", "forced_open", "forced_open", At(103)},
      {"forced_open", "half_open", "half_open", At(104)},
      {"half_open", "closed", "probe_succeeded", At(104)},
  };
  EXPECT_EQ(log.events, expected);
}

CircuitBreakerOptions Bounded() {
  CircuitBreakerOptions o;
  o.failure_threshold = 1;
  o.reset_timeout = seconds(10);
  o.max_half_open_duration = seconds(5);
  return o;
}

TEST(BreakerMaxHalfOpenTest, AProbeThatNeverReturnsReopensAtTheLimit) {
  auto b = Make(Bounded());
  Log log;
  b->AddListener(log.Listener());
  Fail(*b, At(100));                     // open until 110
  Admission lost = b->Acquire(At(110));  // half-open until 115; never recorded
  ASSERT_TRUE(lost.admitted());
  EXPECT_EQ(b->state(At(114.999)), BreakerState::kHalfOpen);
  EXPECT_FALSE(b->Acquire(At(114.999)).admitted());  // the slot is held
  EXPECT_EQ(b->state(At(115)), BreakerState::kOpen);
  // Noticed at 116, stamped at 115: open until 125.
  EXPECT_EQ(b->TimeUntilProbe(At(116)), seconds(9));
  Admission refused = b->Acquire(At(116));
  EXPECT_FALSE(refused.admitted());
  EXPECT_EQ(refused.retry_in, seconds(9));
  EXPECT_EQ(refused.state, BreakerState::kOpen);
  // The lost probe's late result changes nothing.
  b->Record(lost.permit, CallResult::kSuccess, seconds(7), At(117));
  EXPECT_EQ(b->counts(At(117)).stale, 1u);
  EXPECT_EQ(b->state(At(124.999)), BreakerState::kOpen);
  Succeed(*b, At(125));
  EXPECT_EQ(b->state(At(125)), BreakerState::kClosed);
  const std::vector<Event> expected = {
      {"closed", "open", "failure_threshold", At(100)},
      {"open", "half_open", "reset_timeout_elapsed", At(110)},
      {"half_open", "open", "half_open_timeout", At(115)},
      {"open", "half_open", "reset_timeout_elapsed", At(125)},
      {"half_open", "closed", "probe_succeeded", At(125)},
  };
  EXPECT_EQ(log.events, expected);
  ASSERT_TRUE(b->last_trip().has_value());
  EXPECT_STREQ(b->last_trip()->reason, "half_open_timeout");
  EXPECT_EQ(b->last_trip()->from, BreakerState::kHalfOpen);
  EXPECT_EQ(b->last_trip()->at, At(115));
}

TEST(BreakerMaxHalfOpenTest, AResultAfterTheLimitReopensAndIsStale) {
  auto b = Make(Bounded());
  Fail(*b, At(100));
  Admission probe = b->Acquire(At(110));
  ASSERT_TRUE(probe.admitted());
  b->Record(probe.permit, CallResult::kSuccess, seconds(6), At(116));
  EXPECT_EQ(b->state(At(116)), BreakerState::kOpen);
  EXPECT_EQ(b->TimeUntilProbe(At(116)), seconds(9));
  BreakerCounts c = b->counts(At(116));
  EXPECT_EQ(c.stale, 1u);
  EXPECT_EQ(c.successes, 0u);
}

TEST(BreakerMaxHalfOpenTest, ASuccessfulProbeWithinTheLimitCloses) {
  auto b = Make(Bounded());
  Fail(*b, At(100));
  Succeed(*b, At(114.5));  // half-open since 114.5 (the lazy switch), limit 119.5
  EXPECT_EQ(b->state(At(200)), BreakerState::kClosed);
}

TEST(BreakerMaxHalfOpenTest, MustBePositive) {
  CircuitBreakerOptions o;
  o.max_half_open_duration = Duration::zero();
  Status s = CircuitBreaker::Validate(o);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "max_half_open_duration must be > 0 when set, got 0.000 s");
}

}  // namespace
}  // namespace mulligan
