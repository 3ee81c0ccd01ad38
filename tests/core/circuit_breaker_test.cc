// CircuitBreaker: trip conditions, lazy open -> half-open, probe slots under
// concurrency, generations, listeners, manual states, validation. FakeClock
// only; no real sleeps.
#include "mulligan/breaker/circuit_breaker.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <limits>
#include <mutex>
#include <ostream>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

namespace mulligan {
inline namespace v0 {
// Readable gtest failures.
void PrintTo(BreakerState state, std::ostream* os) { *os << BreakerStateName(state); }
}  // namespace v0
namespace {

using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::nanoseconds;
using std::chrono::seconds;

constexpr Duration kFast = milliseconds(1);

std::unique_ptr<CircuitBreaker> Make(const CircuitBreakerOptions& options) {
  Result<std::unique_ptr<CircuitBreaker>> breaker = CircuitBreaker::Create(options);
  EXPECT_TRUE(breaker.ok()) << breaker.status().ToString();
  return std::move(breaker).value();
}

// One call recorded at `now`.
void Call(CircuitBreaker& b, CallResult result, TimePoint now, Duration took = kFast) {
  Admission a = b.Acquire(now);
  ASSERT_TRUE(a.admitted()) << BreakerStateName(b.state(now));
  b.Record(a.permit, result, took, now);
}

// Records (from, to, reason) triples.
struct Recorder {
  std::mutex mu;
  std::vector<std::tuple<BreakerState, BreakerState, std::string>> events;
  std::vector<TimePoint> times;
  BreakerListener Listener() {
    return [this](const BreakerTransition& t) {
      std::lock_guard<std::mutex> lock(mu);
      events.emplace_back(t.from, t.to, t.reason);
      times.push_back(t.at);
    };
  }
};

using Event = std::tuple<BreakerState, BreakerState, std::string>;
constexpr BreakerState kClosed = BreakerState::kClosed;
constexpr BreakerState kOpen = BreakerState::kOpen;
constexpr BreakerState kHalfOpen = BreakerState::kHalfOpen;

// A reusable start line for racing threads.
class Barrier {
 public:
  explicit Barrier(int n) : n_(n) {}
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    const int gen = gen_;
    if (++waiting_ == n_) {
      waiting_ = 0;
      ++gen_;
      cv_.notify_all();
    } else {
      cv_.wait(lock, [&] { return gen_ != gen; });
    }
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int n_;
  int waiting_ = 0;
  int gen_ = 0;
};

// ---------------------------------------------------------------------------

TEST(CircuitBreakerTest, NamesAndMapping) {
  EXPECT_STREQ(BreakerStateName(BreakerState::kClosed), "closed");
  EXPECT_STREQ(BreakerStateName(BreakerState::kOpen), "open");
  EXPECT_STREQ(BreakerStateName(BreakerState::kHalfOpen), "half_open");
  EXPECT_STREQ(BreakerStateName(BreakerState::kForcedOpen), "forced_open");
  EXPECT_STREQ(BreakerStateName(BreakerState::kDisabled), "disabled");
  EXPECT_STREQ(BreakerStateName(BreakerState::kMetricsOnly), "metrics_only");
  EXPECT_STREQ(BreakerStateName(static_cast<BreakerState>(42)), "unknown");
  EXPECT_EQ(ResultFor(Classification::kSuccess), CallResult::kSuccess);
  EXPECT_EQ(ResultFor(Classification::kRetryable), CallResult::kFailure);
  EXPECT_EQ(ResultFor(Classification::kTerminal), CallResult::kIgnored);
  EXPECT_STREQ(CallResultName(CallResult::kIgnored), "ignored");
}

TEST(CircuitBreakerTest, Defaults) {
  CircuitBreakerOptions o;
  EXPECT_EQ(o.failure_threshold, 5);
  EXPECT_EQ(o.window, WindowKind::kNone);
  EXPECT_EQ(o.window_size, 100);
  EXPECT_EQ(o.window_duration, seconds(60));
  EXPECT_EQ(o.window_buckets, 10);
  EXPECT_EQ(o.failure_rate_threshold, 50.0);
  EXPECT_EQ(o.minimum_calls, 10);
  EXPECT_FALSE(o.slow_call_duration.has_value());
  EXPECT_EQ(o.slow_call_rate_threshold, 100.0);
  EXPECT_EQ(o.reset_timeout, seconds(30));
  EXPECT_EQ(o.reset_timeout_multiplier, 1.0);
  EXPECT_EQ(o.max_reset_timeout, minutes(5));
  EXPECT_EQ(o.half_open_max_calls, 1);
  EXPECT_EQ(o.permit_timeout, seconds(60));
  EXPECT_TRUE(CircuitBreaker::Validate(o).ok());
}

TEST(CircuitBreakerTest, InvalidOptionsNameTheField) {
  struct Case {
    const char* field;
    void (*mutate)(CircuitBreakerOptions&);
  };
  const Case cases[] = {
      {"failure_threshold", [](CircuitBreakerOptions& o) { o.failure_threshold = -1; }},
      {"failure_threshold", [](CircuitBreakerOptions& o) { o.failure_threshold = 1000001; }},
      {"trip condition", [](CircuitBreakerOptions& o) { o.failure_threshold = 0; }},
      {"window", [](CircuitBreakerOptions& o) { o.window = static_cast<WindowKind>(7); }},
      {"window_size",
       [](CircuitBreakerOptions& o) {
         o.window = WindowKind::kCount;
         o.window_size = 0;
       }},
      {"window_duration",
       [](CircuitBreakerOptions& o) {
         o.window = WindowKind::kTime;
         o.window_duration = Duration::zero();
       }},
      {"window_buckets",
       [](CircuitBreakerOptions& o) {
         o.window = WindowKind::kTime;
         o.window_buckets = 0;
       }},
      {"window_duration / window_buckets",
       [](CircuitBreakerOptions& o) {
         o.window = WindowKind::kTime;
         o.window_duration = nanoseconds(5);
       }},
      {"failure_rate_threshold",
       [](CircuitBreakerOptions& o) {
         o.window = WindowKind::kCount;
         o.failure_rate_threshold = 0;
       }},
      {"failure_rate_threshold",
       [](CircuitBreakerOptions& o) {
         o.window = WindowKind::kCount;
         o.failure_rate_threshold = 100.5;
       }},
      {"failure_rate_threshold",
       [](CircuitBreakerOptions& o) {
         o.window = WindowKind::kCount;
         o.failure_rate_threshold = std::numeric_limits<double>::quiet_NaN();
       }},
      {"minimum_calls",
       [](CircuitBreakerOptions& o) {
         o.window = WindowKind::kCount;
         o.minimum_calls = 0;
       }},
      {"minimum_calls",
       [](CircuitBreakerOptions& o) {
         o.window = WindowKind::kCount;
         o.window_size = 5;
         o.minimum_calls = 6;
       }},
      {"slow_call_duration",
       [](CircuitBreakerOptions& o) {
         o.window = WindowKind::kCount;
         o.slow_call_duration = Duration::zero();
       }},
      {"slow_call_duration", [](CircuitBreakerOptions& o) { o.slow_call_duration = seconds(1); }},
      {"slow_call_rate_threshold",
       [](CircuitBreakerOptions& o) {
         o.window = WindowKind::kCount;
         o.slow_call_duration = seconds(1);
         o.slow_call_rate_threshold = -3;
       }},
      {"name", [](CircuitBreakerOptions& o) { o.name = "a\nb"; }},
      {"name", [](CircuitBreakerOptions& o) { o.name = std::string("a\0b", 3); }},
      {"name", [](CircuitBreakerOptions& o) { o.name = "a\x7f"; }},
      {"reset_timeout", [](CircuitBreakerOptions& o) { o.reset_timeout = Duration::zero(); }},
      {"reset_timeout_multiplier",
       [](CircuitBreakerOptions& o) { o.reset_timeout_multiplier = 0.5; }},
      {"reset_timeout_multiplier",
       [](CircuitBreakerOptions& o) {
         o.reset_timeout_multiplier = std::numeric_limits<double>::infinity();
       }},
      {"max_reset_timeout",
       [](CircuitBreakerOptions& o) {
         o.reset_timeout_multiplier = 2.0;
         o.max_reset_timeout = seconds(10);
       }},
      {"half_open_max_calls", [](CircuitBreakerOptions& o) { o.half_open_max_calls = 0; }},
      {"half_open_max_calls", [](CircuitBreakerOptions& o) { o.half_open_max_calls = 65536; }},
      {"permit_timeout", [](CircuitBreakerOptions& o) { o.permit_timeout = -seconds(1); }},
  };
  for (const Case& c : cases) {
    CircuitBreakerOptions o;
    c.mutate(o);
    Result<std::unique_ptr<CircuitBreaker>> b = CircuitBreaker::Create(o);
    ASSERT_FALSE(b.ok()) << c.field;
    EXPECT_EQ(b.status().code(), StatusCode::kInvalidArgument) << c.field;
    EXPECT_NE(b.status().message().find(c.field), std::string::npos)
        << c.field << " not in: " << b.status().message();
  }
}

// ---------------------------------------------------------------------------
// Consecutive failures

TEST(CircuitBreakerTest, FifthConsecutiveFailureOpens) {
  FakeClock clock;
  auto b = Make(CircuitBreakerOptions{});
  const TimePoint t = clock.Now();
  for (int i = 0; i < 4; ++i) Call(*b, CallResult::kFailure, t);
  EXPECT_EQ(b->state(t), kClosed);
  EXPECT_EQ(b->counts(t).consecutive_failures, 4);
  Call(*b, CallResult::kFailure, t);
  EXPECT_EQ(b->state(t), kOpen);
  const BreakerCounts c = b->counts(t);
  EXPECT_EQ(c.failures, 5u);
  EXPECT_EQ(c.calls, 5u);
  EXPECT_EQ(c.consecutive_failures, 0);  // not closed any more
  Admission refused = b->Acquire(t);
  EXPECT_FALSE(refused.admitted());
  EXPECT_EQ(refused.retry_in, seconds(30));
  EXPECT_EQ(refused.state, kOpen);
  EXPECT_EQ(b->counts(t).rejected, 1u);
}

TEST(CircuitBreakerTest, SuccessInBetweenResetsTheRun) {
  FakeClock clock;
  auto b = Make(CircuitBreakerOptions{});
  const TimePoint t = clock.Now();
  for (int i = 0; i < 4; ++i) Call(*b, CallResult::kFailure, t);
  Call(*b, CallResult::kSuccess, t);
  EXPECT_EQ(b->counts(t).consecutive_failures, 0);
  for (int i = 0; i < 4; ++i) Call(*b, CallResult::kFailure, t);
  EXPECT_EQ(b->state(t), kClosed);
  // An ignored result (a 404) neither extends nor ends the run.
  Call(*b, CallResult::kIgnored, t);
  EXPECT_EQ(b->counts(t).consecutive_failures, 4);
  EXPECT_EQ(b->state(t), kClosed);
  Call(*b, CallResult::kFailure, t);
  EXPECT_EQ(b->state(t), kOpen);
  const BreakerCounts c = b->counts(t);
  EXPECT_EQ(c.calls, 11u);
  EXPECT_EQ(c.successes, 1u);
  EXPECT_EQ(c.failures, 9u);
  EXPECT_EQ(c.ignored, 1u);
}

// ---------------------------------------------------------------------------
// Sliding windows

TEST(CircuitBreakerTest, CountWindowTripsAtExactlyHalf) {
  FakeClock clock;
  CircuitBreakerOptions o;
  o.failure_threshold = 0;
  o.window = WindowKind::kCount;
  o.window_size = 10;
  o.minimum_calls = 10;
  o.failure_rate_threshold = 50;
  auto b = Make(o);
  const TimePoint t = clock.Now();
  // 9 calls with 5 failures: below minimum_calls, no evaluation.
  for (int i = 0; i < 5; ++i) Call(*b, CallResult::kFailure, t);
  for (int i = 0; i < 4; ++i) Call(*b, CallResult::kSuccess, t);
  EXPECT_EQ(b->state(t), kClosed);
  EXPECT_EQ(b->counts(t).window_calls, 9u);
  // 10th call a success: 5/10 = 50% >= 50% -> open.
  Call(*b, CallResult::kSuccess, t);
  EXPECT_EQ(b->state(t), kOpen);
}

TEST(CircuitBreakerTest, CountWindowSlidesBelowThreshold) {
  FakeClock clock;
  CircuitBreakerOptions o;
  o.failure_threshold = 0;
  o.window = WindowKind::kCount;
  o.window_size = 10;
  o.minimum_calls = 10;
  auto b = Make(o);
  const TimePoint t = clock.Now();
  // F S S S S S S S S S: 1/10.
  Call(*b, CallResult::kFailure, t);
  for (int i = 0; i < 9; ++i) Call(*b, CallResult::kSuccess, t);
  EXPECT_EQ(b->counts(t).window_failure_rate, 10.0);
  // Three more failures: the first F slides out -> 3/10, 4/10 ...
  for (int i = 0; i < 3; ++i) Call(*b, CallResult::kFailure, t);
  EXPECT_EQ(b->counts(t).window_failure_rate, 30.0);
  EXPECT_EQ(b->counts(t).window_calls, 10u);
  Call(*b, CallResult::kFailure, t);  // 4/10
  EXPECT_EQ(b->state(t), kClosed);
  Call(*b, CallResult::kFailure, t);  // 5/10 -> open
  EXPECT_EQ(b->state(t), kOpen);
  Recorder r;  // (a fresh breaker shows the reason)
  auto b2 = Make(o);
  b2->AddListener(r.Listener());
  for (int i = 0; i < 5; ++i) Call(*b2, CallResult::kSuccess, t);
  for (int i = 0; i < 5; ++i) Call(*b2, CallResult::kFailure, t);
  ASSERT_EQ(r.events.size(), 1u);
  EXPECT_EQ(r.events[0], Event(kClosed, kOpen, "failure_rate"));
}

TEST(CircuitBreakerTest, TimeWindowBucketsExpire) {
  FakeClock clock;
  CircuitBreakerOptions o;
  o.failure_threshold = 0;
  o.window = WindowKind::kTime;
  o.window_duration = seconds(10);
  o.window_buckets = 10;  // 1 s buckets
  o.minimum_calls = 4;
  o.failure_rate_threshold = 50;
  auto b = Make(o);
  // FakeClock starts at 1000 s: a bucket boundary.
  Call(*b, CallResult::kFailure, clock.Now());
  clock.Advance(milliseconds(500));
  Call(*b, CallResult::kFailure, clock.Now());
  EXPECT_EQ(b->counts(clock.Now()).window_calls, 2u);
  clock.Advance(milliseconds(500));  // 1001 s: second bucket
  Call(*b, CallResult::kSuccess, clock.Now());
  // Bucket [1000, 1001) is in the window until 1010 s, out from then.
  clock.Advance(milliseconds(8999));  // 1009.999 s
  EXPECT_EQ(b->counts(clock.Now()).window_calls, 3u);
  clock.Advance(nanoseconds(1'000'000));  // 1010 s exactly
  EXPECT_EQ(b->counts(clock.Now()).window_calls, 1u);
  EXPECT_EQ(b->counts(clock.Now()).window_failure_rate, 0.0);
  // Two failures now: 2 F + 1 S = 3 calls, below minimum 4.
  Call(*b, CallResult::kFailure, clock.Now());
  Call(*b, CallResult::kFailure, clock.Now());
  EXPECT_EQ(b->state(clock.Now()), kClosed);
  // Had the old bucket not expired this would be 4 failures of 5 long ago.
  Call(*b, CallResult::kSuccess, clock.Now());  // 2/4 = 50% -> open
  EXPECT_EQ(b->state(clock.Now()), kOpen);
}

TEST(CircuitBreakerTest, SlowCallRateTrips) {
  FakeClock clock;
  CircuitBreakerOptions o;
  o.failure_threshold = 0;
  o.window = WindowKind::kCount;
  o.window_size = 4;
  o.minimum_calls = 4;
  o.slow_call_duration = seconds(2);
  o.slow_call_rate_threshold = 75;
  Recorder r;
  auto b = Make(o);
  b->AddListener(r.Listener());
  const TimePoint t = clock.Now();
  Call(*b, CallResult::kSuccess, t, seconds(2));  // slow (at least 2 s)
  Call(*b, CallResult::kSuccess, t, seconds(2) - nanoseconds(1));  // not slow
  Call(*b, CallResult::kSuccess, t, seconds(5));  // slow
  EXPECT_EQ(b->counts(t).slow, 2u);
  Call(*b, CallResult::kSuccess, t, seconds(3));  // slow: 3/4 = 75%
  EXPECT_EQ(b->state(t), kOpen);
  ASSERT_EQ(r.events.size(), 1u);
  EXPECT_EQ(r.events[0], Event(kClosed, kOpen, "slow_call_rate"));
  EXPECT_EQ(b->counts(t).slow, 3u);
}

// ---------------------------------------------------------------------------
// Open -> half-open, reset timeout growth

TEST(CircuitBreakerTest, HalfOpenExactlyAtResetTimeout) {
  FakeClock clock;
  auto b = Make(CircuitBreakerOptions{});
  const TimePoint t0 = clock.Now();
  for (int i = 0; i < 5; ++i) Call(*b, CallResult::kFailure, t0);
  const TimePoint almost = t0 + seconds(30) - nanoseconds(1);
  EXPECT_EQ(b->state(almost), kOpen);
  EXPECT_EQ(b->TimeUntilProbe(almost), nanoseconds(1));
  Admission a = b->Acquire(almost);
  EXPECT_FALSE(a.admitted());
  EXPECT_EQ(a.retry_in, nanoseconds(1));
  EXPECT_EQ(b->Acquire(t0 + seconds(10)).retry_in, seconds(20));
  // Lazy: state() already reports half-open once the period is over.
  const TimePoint at = t0 + seconds(30);
  EXPECT_EQ(b->state(at), kHalfOpen);
  EXPECT_EQ(b->TimeUntilProbe(at), Duration::zero());
  Admission probe = b->Acquire(at);
  ASSERT_TRUE(probe.admitted());
  EXPECT_TRUE(probe.permit.probe);
  EXPECT_EQ(probe.state, kHalfOpen);
  // The single slot is taken: refused until it would expire (permit_timeout).
  Admission second = b->Acquire(at + seconds(1));
  EXPECT_FALSE(second.admitted());
  EXPECT_EQ(second.retry_in, seconds(59));
  EXPECT_EQ(b->TimeUntilProbe(at + seconds(1)), seconds(59));
  b->Record(probe.permit, CallResult::kSuccess, kFast, at + seconds(2));
  EXPECT_EQ(b->state(at + seconds(2)), kClosed);
  EXPECT_EQ(b->counts(at).rejected, 3u);
}

TEST(CircuitBreakerTest, ResetTimeoutGrowsOnRepeatedTripsAndRestartsAfterClose) {
  FakeClock clock;
  CircuitBreakerOptions o;
  o.failure_threshold = 1;
  o.reset_timeout = seconds(30);
  o.reset_timeout_multiplier = 2;
  o.max_reset_timeout = seconds(100);
  auto b = Make(o);
  TimePoint t = clock.Now();
  Call(*b, CallResult::kFailure, t);  // trip 1: 30 s
  EXPECT_EQ(b->Acquire(t).retry_in, seconds(30));
  const Duration expected[] = {seconds(60), seconds(100), seconds(100)};  // 120 capped
  Duration open_for = seconds(30);
  for (Duration next : expected) {
    t += open_for;
    Admission probe = b->Acquire(t);
    ASSERT_TRUE(probe.permit.probe);
    b->Record(probe.permit, CallResult::kFailure, kFast, t);  // probe fails: reopen
    EXPECT_EQ(b->state(t), kOpen);
    EXPECT_EQ(b->Acquire(t).retry_in, next);
    EXPECT_EQ(b->TimeUntilProbe(t), next);
    open_for = next;
  }
  // A successful probe closes and restarts the growth.
  t += open_for;
  Admission probe = b->Acquire(t);
  b->Record(probe.permit, CallResult::kSuccess, kFast, t);
  EXPECT_EQ(b->state(t), kClosed);
  Call(*b, CallResult::kFailure, t);
  EXPECT_EQ(b->Acquire(t).retry_in, seconds(30));
}

TEST(CircuitBreakerTest, HugeMultiplierSaturatesAtTheCap) {
  FakeClock clock;
  CircuitBreakerOptions o;
  o.failure_threshold = 1;
  o.reset_timeout_multiplier = 1e300;
  o.max_reset_timeout = Duration::max();
  auto b = Make(o);
  TimePoint t = clock.Now();
  Call(*b, CallResult::kFailure, t);
  t += seconds(30);
  Admission probe = b->Acquire(t);
  b->Record(probe.permit, CallResult::kFailure, kFast, t);
  EXPECT_EQ(b->state(t), kOpen);
  // open_until saturated at the largest TimePoint; no overflow.
  EXPECT_EQ(b->state(TimePoint::max() - nanoseconds(1)), kOpen);
  EXPECT_GT(b->Acquire(t).retry_in, Duration(std::chrono::hours(24 * 365 * 100)));
}

// ---------------------------------------------------------------------------
// Half-open probes

std::unique_ptr<CircuitBreaker> OpenBreaker(const CircuitBreakerOptions& o, TimePoint t) {
  auto b = Make(o);
  while (b->state(t) == kClosed) Call(*b, CallResult::kFailure, t);
  return b;
}

TEST(CircuitBreakerTest, ProbeFailureReopensSuccessCloses) {
  FakeClock clock;
  Recorder r;
  CircuitBreakerOptions o;
  o.name = "db";
  auto b = Make(o);
  b->AddListener(r.Listener());
  TimePoint t = clock.Now();
  for (int i = 0; i < 5; ++i) Call(*b, CallResult::kFailure, t);
  t += seconds(30);
  Admission p1 = b->Acquire(t);
  b->Record(p1.permit, CallResult::kFailure, kFast, t + seconds(1));
  EXPECT_EQ(b->state(t + seconds(1)), kOpen);
  EXPECT_EQ(b->TimeUntilProbe(t + seconds(1)), seconds(30));
  t += seconds(31);
  Admission p2 = b->Acquire(t);
  b->Record(p2.permit, CallResult::kSuccess, kFast, t);
  EXPECT_EQ(b->state(t), kClosed);
  const std::vector<Event> expected = {
      {kClosed, kOpen, "failure_threshold"},   {kOpen, kHalfOpen, "reset_timeout_elapsed"},
      {kHalfOpen, kOpen, "probe_failed"},      {kOpen, kHalfOpen, "reset_timeout_elapsed"},
      {kHalfOpen, kClosed, "probe_succeeded"},
  };
  EXPECT_EQ(r.events, expected);
  const TimePoint t0 = clock.Now();
  const std::vector<TimePoint> times = {t0, t0 + seconds(30), t0 + seconds(31),
                                        t0 + seconds(61), t0 + seconds(61)};
  EXPECT_EQ(r.times, times);
}

TEST(CircuitBreakerTest, HalfOpenMaxCallsSuccessesClose) {
  FakeClock clock;
  CircuitBreakerOptions o;
  o.half_open_max_calls = 3;
  TimePoint t = clock.Now();
  auto b = OpenBreaker(o, t);
  t += seconds(30);
  Admission p[4];
  for (int i = 0; i < 3; ++i) {
    p[i] = b->Acquire(t);
    ASSERT_TRUE(p[i].admitted());
  }
  EXPECT_FALSE(b->Acquire(t).admitted());
  b->Record(p[0].permit, CallResult::kSuccess, kFast, t);
  b->Record(p[1].permit, CallResult::kIgnored, kFast, t);  // frees a slot, does not count
  EXPECT_EQ(b->state(t), kHalfOpen);
  p[3] = b->Acquire(t);  // one of the two freed slots
  ASSERT_TRUE(p[3].admitted());
  b->Record(p[2].permit, CallResult::kSuccess, kFast, t);
  EXPECT_EQ(b->state(t), kHalfOpen);  // 2 successes of 3
  b->Record(p[3].permit, CallResult::kSuccess, kFast, t);
  EXPECT_EQ(b->state(t), kClosed);
}

TEST(CircuitBreakerTest, TimeoutRecordedAsFailureFreesTheSlot) {
  FakeClock clock;
  CircuitBreakerOptions o;
  o.half_open_max_calls = 2;
  TimePoint t = clock.Now();
  auto b = OpenBreaker(o, t);
  t += seconds(30);
  Admission p1 = b->Acquire(t);
  Admission p2 = b->Acquire(t);
  ASSERT_TRUE(p1.admitted() && p2.admitted());
  EXPECT_FALSE(b->Acquire(t).admitted());
  // The caller's own attempt timeout fired: a failure. It reopens, and the
  // transition frees both slots (p2 is now stale).
  b->Record(p1.permit, CallResult::kFailure, seconds(5), t + seconds(5));
  EXPECT_EQ(b->state(t + seconds(5)), kOpen);
  b->Record(p2.permit, CallResult::kSuccess, kFast, t + seconds(6));  // stale: nothing
  EXPECT_EQ(b->state(t + seconds(6)), kOpen);
  t += seconds(5) + seconds(30);
  Admission q1 = b->Acquire(t);
  Admission q2 = b->Acquire(t);
  EXPECT_TRUE(q1.admitted() && q2.admitted());
}

TEST(CircuitBreakerTest, UnrecordedPermitExpires) {
  FakeClock clock;
  CircuitBreakerOptions o;
  o.permit_timeout = seconds(10);
  TimePoint t = clock.Now();
  auto b = OpenBreaker(o, t);
  t += seconds(30);
  Admission lost = b->Acquire(t);  // never recorded
  ASSERT_TRUE(lost.admitted());
  Admission refused = b->Acquire(t + seconds(9));
  EXPECT_FALSE(refused.admitted());
  EXPECT_EQ(refused.retry_in, seconds(1));
  EXPECT_EQ(b->Acquire(t + seconds(10) - nanoseconds(1)).retry_in, nanoseconds(1));
  Admission fresh = b->Acquire(t + seconds(10));  // slot reclaimed
  ASSERT_TRUE(fresh.admitted());
  EXPECT_EQ(fresh.permit.slot, lost.permit.slot);
  // The lost permit's late result is discarded: it must not free the new
  // holder's slot nor count.
  const BreakerCounts before = b->counts(t);
  b->Record(lost.permit, CallResult::kSuccess, kFast, t + seconds(11));
  EXPECT_EQ(b->state(t + seconds(11)), kHalfOpen);
  EXPECT_FALSE(b->Acquire(t + seconds(11)).admitted());
  EXPECT_EQ(b->counts(t).successes, before.successes);
  b->Record(fresh.permit, CallResult::kSuccess, kFast, t + seconds(12));
  EXPECT_EQ(b->state(t + seconds(12)), kClosed);
}

TEST(CircuitBreakerTest, RecordAfterPermitTimeoutIsDiscarded) {
  FakeClock clock;
  CircuitBreakerOptions o;
  o.permit_timeout = seconds(10);
  TimePoint t = clock.Now();
  auto b = OpenBreaker(o, t);
  t += seconds(30);
  Admission probe = b->Acquire(t);
  // Nobody reclaimed the slot yet, but the permit has expired: its failure
  // does not reopen, the slot is freed.
  b->Record(probe.permit, CallResult::kFailure, seconds(10), t + seconds(10));
  EXPECT_EQ(b->state(t + seconds(10)), kHalfOpen);
  EXPECT_TRUE(b->Acquire(t + seconds(10)).admitted());
}

TEST(CircuitBreakerTest, LateRecordFromPreviousGenerationChangesNothing) {
  FakeClock clock;
  Recorder r;
  auto b = Make(CircuitBreakerOptions{});
  b->AddListener(r.Listener());
  TimePoint t = clock.Now();
  Admission old_closed = b->Acquire(t);  // issued while closed, generation 1
  for (int i = 0; i < 5; ++i) Call(*b, CallResult::kFailure, t);
  t += seconds(30);
  Admission old_probe = b->Acquire(t);
  b->Record(old_probe.permit, CallResult::kSuccess, kFast, t);  // closes
  ASSERT_EQ(b->state(t), kClosed);
  for (int i = 0; i < 3; ++i) Call(*b, CallResult::kFailure, t);
  const BreakerCounts before = b->counts(t);
  const size_t events = r.events.size();
  // Late results: the old closed permit's failures and the old probe again.
  for (int i = 0; i < 10; ++i) b->Record(old_closed.permit, CallResult::kFailure, kFast, t);
  b->Record(old_closed.permit, CallResult::kSuccess, kFast, t);
  b->Record(old_probe.permit, CallResult::kFailure, kFast, t);
  b->Record(Permit{}, CallResult::kFailure, kFast, t);  // invalid
  const BreakerCounts after = b->counts(t);
  EXPECT_EQ(b->state(t), kClosed);
  EXPECT_EQ(after.consecutive_failures, 3);
  EXPECT_EQ(after.calls, before.calls);
  EXPECT_EQ(after.failures, before.failures);
  EXPECT_EQ(after.successes, before.successes);
  EXPECT_EQ(after.calls, 9u);  // 5 + probe + 3
  EXPECT_EQ(r.events.size(), events);
}

TEST(CircuitBreakerTest, LateClosedPermitCannotReopenAfterTrip) {
  FakeClock clock;
  CircuitBreakerOptions o;
  o.window = WindowKind::kCount;
  o.window_size = 10;
  o.minimum_calls = 2;
  auto b = Make(o);
  TimePoint t = clock.Now();
  Admission late = b->Acquire(t);
  Call(*b, CallResult::kFailure, t);
  Call(*b, CallResult::kFailure, t);  // 2/2 -> open
  ASSERT_EQ(b->state(t), kOpen);
  b->Record(late.permit, CallResult::kFailure, kFast, t);
  EXPECT_EQ(b->counts(t).failures, 2u);
  t += seconds(30);
  Admission probe = b->Acquire(t);
  b->Record(probe.permit, CallResult::kSuccess, kFast, t);
  b->Record(late.permit, CallResult::kFailure, kFast, t);
  EXPECT_EQ(b->state(t), kClosed);
  EXPECT_EQ(b->counts(t).window_calls, 0u);
}

// ---------------------------------------------------------------------------
// Concurrency

TEST(CircuitBreakerTest, ExactlyOneProbeUnderRace) {
  constexpr int kThreads = 8;
  constexpr int kRounds = 1000;
  FakeClock clock;
  CircuitBreakerOptions o;
  o.failure_threshold = 1;
  auto b = Make(o);
  Barrier start(kThreads + 1), done(kThreads + 1);
  std::atomic<int> granted{0};
  std::vector<Permit> permits(kThreads);
  std::atomic<TimePoint::rep> now_ns{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      for (int round = 0; round < kRounds; ++round) {
        start.Wait();
        Admission a = b->Acquire(TimePoint(Duration(now_ns.load())));
        permits[i] = a.permit;
        if (a.admitted()) granted.fetch_add(1);
        done.Wait();
      }
    });
  }
  TimePoint t = clock.Now();
  int reopened = 0, closed = 0;
  for (int round = 0; round < kRounds; ++round) {
    // Open it, then let the threads race at the end of the open period.
    Call(*b, CallResult::kFailure, t);
    ASSERT_EQ(b->state(t), kOpen);
    t += seconds(30);
    now_ns.store(t.time_since_epoch().count());
    granted.store(0);
    start.Wait();
    done.Wait();
    ASSERT_EQ(granted.load(), 1) << "round " << round;
    for (const Permit& p : permits) {
      if (!p.valid) continue;
      ASSERT_TRUE(p.probe);
      // Alternate: a failed probe reopens, a successful one closes.
      if (round % 2 == 0) {
        b->Record(p, CallResult::kFailure, kFast, t);
        ASSERT_EQ(b->state(t), kOpen);
        ++reopened;
        t += seconds(30);
        Admission probe = b->Acquire(t);
        b->Record(probe.permit, CallResult::kSuccess, kFast, t);
      } else {
        b->Record(p, CallResult::kSuccess, kFast, t);
        ++closed;
      }
      ASSERT_EQ(b->state(t), kClosed);
    }
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(reopened, kRounds / 2);
  EXPECT_EQ(closed, kRounds / 2);
}

TEST(CircuitBreakerTest, NeverMoreThanMaxCallsProbesDuringSwitchRace) {
  constexpr int kThreads = 8;
  constexpr int kRounds = 500;
  FakeClock clock;
  CircuitBreakerOptions o;
  o.failure_threshold = 1;
  o.half_open_max_calls = 3;
  auto b = Make(o);
  Recorder r;
  b->AddListener(r.Listener());
  Barrier start(kThreads + 1), done(kThreads + 1);
  std::atomic<int> outstanding{0}, max_outstanding{0}, granted{0};
  std::atomic<TimePoint::rep> now_ns{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&] {
      for (int round = 0; round < kRounds; ++round) {
        start.Wait();
        const TimePoint t(Duration(now_ns.load()));
        // Each thread tries twice, recording an ignored result in between,
        // so slots are freed and retaken while others race the switch.
        for (int k = 0; k < 2; ++k) {
          Admission a = b->Acquire(t);
          if (!a.admitted()) continue;
          const int now_out = outstanding.fetch_add(1) + 1;
          int seen = max_outstanding.load();
          while (now_out > seen && !max_outstanding.compare_exchange_weak(seen, now_out)) {
          }
          granted.fetch_add(1);
          outstanding.fetch_sub(1);
          b->Record(a.permit, CallResult::kIgnored, kFast, t);
        }
        done.Wait();
      }
    });
  }
  TimePoint t = clock.Now();
  for (int round = 0; round < kRounds; ++round) {
    Call(*b, CallResult::kFailure, t);  // closed -> open
    t += seconds(30);
    now_ns.store(t.time_since_epoch().count());
    start.Wait();
    done.Wait();
    ASSERT_LE(max_outstanding.load(), 3);
    ASSERT_EQ(b->state(t), kHalfOpen);
    b->Reset(t);  // back to closed for the next round
  }
  for (std::thread& th : threads) th.join();
  EXPECT_LE(max_outstanding.load(), 3);
  EXPECT_GE(granted.load(), kRounds * 3);
  // The switch happened exactly once per round.
  int switches = 0;
  for (const Event& e : r.events) {
    if (std::get<2>(e) == "reset_timeout_elapsed") ++switches;
  }
  EXPECT_EQ(switches, kRounds);
}

TEST(CircuitBreakerTest, ConcurrentClosedCallsCountExactly) {
  constexpr int kThreads = 4;
  constexpr int kCalls = 100000;
  FakeClock clock;
  for (WindowKind window : {WindowKind::kNone, WindowKind::kCount}) {
    CircuitBreakerOptions o;
    o.window = window;
    o.failure_threshold = 1000000;
    auto b = Make(o);
    const TimePoint t = clock.Now();
    std::vector<std::thread> threads;
    for (int i = 0; i < kThreads; ++i) {
      threads.emplace_back([&, i] {
        for (int k = 0; k < kCalls; ++k) {
          Admission a = b->Acquire(t);
          // One failure in 100 from thread 0, so the CAS path races too.
          const bool fail = i == 0 && k % 100 == 0;
          b->Record(a.permit, fail ? CallResult::kFailure : CallResult::kSuccess, kFast, t);
        }
      });
    }
    for (std::thread& th : threads) th.join();
    const BreakerCounts c = b->counts(t);
    EXPECT_EQ(c.calls, uint64_t{kThreads} * kCalls);
    EXPECT_EQ(c.failures, uint64_t{kCalls / 100});
    EXPECT_EQ(c.successes, uint64_t{kThreads} * kCalls - kCalls / 100);
    EXPECT_EQ(b->state(t), kClosed);
  }
}

TEST(CircuitBreakerTest, ConcurrentFailuresTripExactlyOnce) {
  constexpr int kThreads = 4;
  FakeClock clock;
  for (int round = 0; round < 200; ++round) {
    Recorder r;
    CircuitBreakerOptions o;
    o.failure_threshold = 3;
    auto b = Make(o);
    b->AddListener(r.Listener());
    const TimePoint t = clock.Now();
    std::vector<std::thread> threads;
    for (int i = 0; i < kThreads; ++i) {
      threads.emplace_back([&] {
        for (int k = 0; k < 5; ++k) {
          Admission a = b->Acquire(t);
          b->Record(a.permit, CallResult::kFailure, kFast, t);
        }
      });
    }
    for (std::thread& th : threads) th.join();
    ASSERT_EQ(b->state(t), kOpen);
    ASSERT_EQ(r.events.size(), 1u);
  }
}

// ---------------------------------------------------------------------------
// Listeners

TEST(CircuitBreakerTest, ListenerMayCallBackIntoTheBreaker) {
  FakeClock clock;
  auto b = Make(CircuitBreakerOptions{});
  std::vector<BreakerState> seen;
  std::string name;
  b->AddListener([&](const BreakerTransition& t) {
    seen.push_back(b->state(t.at));
    name = std::string(t.name);
    (void)b->counts(t.at);
    (void)b->TimeUntilProbe(t.at);
    if (t.to == kHalfOpen) (void)b->Acquire(t.at);  // refused: the slot is taken
  });
  TimePoint t = clock.Now();
  for (int i = 0; i < 5; ++i) Call(*b, CallResult::kFailure, t);
  t += seconds(30);
  Admission probe = b->Acquire(t);
  EXPECT_TRUE(probe.admitted());
  b->Record(probe.permit, CallResult::kSuccess, kFast, t);
  EXPECT_EQ(seen, (std::vector<BreakerState>{kOpen, kHalfOpen, kClosed}));
  EXPECT_EQ(b->counts(t).rejected, 1u);
}

TEST(CircuitBreakerTest, ListenerCanBeRemovedAndThrowingListenerIsContained) {
  FakeClock clock;
  CircuitBreakerOptions o;
  o.failure_threshold = 1;
  o.name = "api";
  auto b = Make(o);
  int calls = 0;
  b->AddListener([](const BreakerTransition&) { throw std::runtime_error("bad listener"); });
  const uint64_t id = b->AddListener([&](const BreakerTransition& t) {
    EXPECT_EQ(t.name, "api");
    ++calls;
  });
  EXPECT_NE(id, 0u);
  const TimePoint t = clock.Now();
  Call(*b, CallResult::kFailure, t);
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(b->RemoveListener(id));
  EXPECT_FALSE(b->RemoveListener(id));
  b->Reset(t);
  EXPECT_EQ(calls, 1);
}

// ---------------------------------------------------------------------------
// Manual states

TEST(CircuitBreakerTest, ForcedOpenRefusesWithMaxRetryIn) {
  FakeClock clock;
  Recorder r;
  auto b = Make(CircuitBreakerOptions{});
  b->AddListener(r.Listener());
  const TimePoint t = clock.Now();
  Admission before = b->Acquire(t);
  b->ForceOpen(t);
  b->ForceOpen(t);  // no-op in its own state
  EXPECT_EQ(b->state(t + minutes(100)), BreakerState::kForcedOpen);
  Admission a = b->Acquire(t + minutes(100));
  EXPECT_FALSE(a.admitted());
  EXPECT_EQ(a.retry_in, Duration::max());
  EXPECT_EQ(a.state, BreakerState::kForcedOpen);
  EXPECT_EQ(b->TimeUntilProbe(t), Duration::max());
  b->Record(before.permit, CallResult::kSuccess, kFast, t);  // stale
  EXPECT_EQ(b->counts(t).calls, 0u);
  EXPECT_EQ(b->counts(t).rejected, 1u);
  b->Reset(t);
  EXPECT_TRUE(b->Acquire(t).admitted());
  const std::vector<Event> expected = {{kClosed, BreakerState::kForcedOpen, "forced_open"},
                                       {BreakerState::kForcedOpen, kClosed, "reset"}};
  EXPECT_EQ(r.events, expected);
  EXPECT_EQ(b->counts(t).rejected, 0u);  // Reset clears the counters
}

TEST(CircuitBreakerTest, DisabledNeverTripsButCounts) {
  FakeClock clock;
  Recorder r;
  auto b = Make(CircuitBreakerOptions{});
  b->AddListener(r.Listener());
  const TimePoint t = clock.Now();
  b->Disable(t);
  for (int i = 0; i < 50; ++i) Call(*b, CallResult::kFailure, t);
  Call(*b, CallResult::kSuccess, t);
  EXPECT_EQ(b->state(t), BreakerState::kDisabled);
  const BreakerCounts c = b->counts(t);
  EXPECT_EQ(c.calls, 51u);
  EXPECT_EQ(c.failures, 50u);
  EXPECT_EQ(c.rejected, 0u);
  EXPECT_EQ(r.events, (std::vector<Event>{{kClosed, BreakerState::kDisabled, "disabled"}}));
}

TEST(CircuitBreakerTest, MetricsOnlyNotifiesButAdmits) {
  FakeClock clock;
  Recorder r;
  CircuitBreakerOptions o;
  o.failure_threshold = 3;
  auto b = Make(o);
  b->AddListener(r.Listener());
  const TimePoint t = clock.Now();
  b->MetricsOnly(t);
  for (int i = 0; i < 7; ++i) Call(*b, CallResult::kFailure, t);  // would trip at 3 and 6
  EXPECT_EQ(b->state(t), BreakerState::kMetricsOnly);
  EXPECT_EQ(b->counts(t).consecutive_failures, 1);
  EXPECT_TRUE(b->Acquire(t + seconds(1)).admitted());
  const std::vector<Event> expected = {
      {kClosed, BreakerState::kMetricsOnly, "metrics_only"},
      {kClosed, kOpen, "metrics_only:failure_threshold"},
      {kClosed, kOpen, "metrics_only:failure_threshold"},
  };
  EXPECT_EQ(r.events, expected);
  EXPECT_EQ(b->counts(t).failures, 7u);
}

TEST(CircuitBreakerTest, MetricsOnlyWithWindowReportsRate) {
  FakeClock clock;
  Recorder r;
  CircuitBreakerOptions o;
  o.failure_threshold = 0;
  o.window = WindowKind::kCount;
  o.window_size = 4;
  o.minimum_calls = 4;
  auto b = Make(o);
  b->AddListener(r.Listener());
  const TimePoint t = clock.Now();
  b->MetricsOnly(t);
  for (int i = 0; i < 4; ++i) Call(*b, CallResult::kFailure, t);
  ASSERT_EQ(r.events.size(), 2u);
  EXPECT_EQ(r.events[1], Event(kClosed, kOpen, "metrics_only:failure_rate"));
  EXPECT_EQ(b->counts(t).window_calls, 0u);  // a fresh evaluation period
}

TEST(CircuitBreakerTest, ResetClearsEverything) {
  FakeClock clock;
  CircuitBreakerOptions o;
  o.failure_threshold = 1;
  o.reset_timeout_multiplier = 2;
  Recorder r;
  auto b = Make(o);
  b->AddListener(r.Listener());
  TimePoint t = clock.Now();
  Call(*b, CallResult::kFailure, t);
  t += seconds(30);
  Admission probe = b->Acquire(t);
  b->Record(probe.permit, CallResult::kFailure, kFast, t);  // open for 60 s
  b->Reset(t);
  EXPECT_EQ(b->state(t), kClosed);
  const BreakerCounts c = b->counts(t);
  EXPECT_EQ(c.calls, 0u);
  EXPECT_EQ(c.rejected, 0u);
  Call(*b, CallResult::kFailure, t);
  EXPECT_EQ(b->Acquire(t).retry_in, seconds(30));  // growth restarted
  b->Reset(t);
  b->Reset(t);  // already closed: no event
  EXPECT_EQ(std::get<2>(r.events.back()), "reset");
  EXPECT_EQ(r.events.size(), 6u);  // open, half_open, open, reset, open, reset
}

// ---------------------------------------------------------------------------
// Execute

TEST(CircuitBreakerTest, ExecuteRecordsAndRefuses) {
  FakeClock clock;
  CircuitBreakerOptions o;
  o.failure_threshold = 2;
  o.name = "svc";
  auto b = Make(o);
  Result<int> ok = b->Execute([&] {
    clock.Advance(seconds(1));
    return 42;
  }, clock);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 42);
  Status void_ok = b->Execute([] {}, clock);
  EXPECT_TRUE(void_ok.ok());
  for (int i = 0; i < 2; ++i) {
    EXPECT_THROW(b->Execute([]() -> int { throw std::runtime_error("down"); }, clock),
                 std::runtime_error);
  }
  EXPECT_EQ(b->state(clock.Now()), kOpen);
  clock.Advance(milliseconds(12500));
  Result<int> refused = b->Execute([] { return 1; }, clock);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kCircuitOpen);
  EXPECT_EQ(refused.status().message(), "circuit breaker 'svc' is open; next probe in 17.500 s");
  const BreakerCounts c = b->counts(clock.Now());
  EXPECT_EQ(c.successes, 2u);
  EXPECT_EQ(c.failures, 2u);
  EXPECT_EQ(c.rejected, 1u);
  b->Reset(clock.Now());
  // A callable returning Status or Result passes it through; errors count.
  Result<std::string> value = b->Execute([] { return Result<std::string>("x"); }, clock);
  ASSERT_TRUE(value.ok());
  EXPECT_EQ(*value, "x");
  Status failed = b->Execute([] { return TimeoutError("slow"); }, clock);
  EXPECT_EQ(failed.code(), StatusCode::kTimeout);
  Result<int> bad = b->Execute([] { return Result<int>(TransportError("reset")); }, clock);
  EXPECT_EQ(bad.status().code(), StatusCode::kTransport);
  EXPECT_EQ(b->state(clock.Now()), kOpen);  // two failures
  EXPECT_EQ(b->counts(clock.Now()).successes, 1u);
  b->ForceOpen(clock.Now());
  Status forced = b->Execute([] {}, clock);
  EXPECT_EQ(forced.code(), StatusCode::kCircuitOpen);
  EXPECT_NE(forced.message().find("forced open"), std::string::npos);
}

TEST(CircuitBreakerTest, AResetTimeoutLongerThanTheDefaultCapNeedsNoCapWithoutGrowth) {
  CircuitBreakerOptions o;
  o.failure_threshold = 1;
  o.reset_timeout = std::chrono::minutes(10);  // beyond the default 5 min cap
  std::unique_ptr<CircuitBreaker> breaker = std::move(CircuitBreaker::Create(o)).value();
  const TimePoint t0{seconds(1)};
  Admission a = breaker->Acquire(t0);
  breaker->Record(a.permit, CallResult::kFailure, Duration::zero(), t0);
  EXPECT_EQ(breaker->TimeUntilProbe(t0), std::chrono::minutes(10));
}

}  // namespace
}  // namespace mulligan
