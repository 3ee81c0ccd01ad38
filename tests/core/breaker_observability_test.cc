// What an operator sees of a breaker: stale results counted (and changing
// nothing), the figures of the last trip, per-call events, and the breaker's
// own counts in the metrics registry under one name per live breaker.
// Expected values are worked out by hand from each event script; FakeClock
// times only (TimePoint values), no sleeping.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "mulligan/breaker/circuit_breaker.h"
#include "mulligan/telemetry/metrics.h"

namespace mulligan {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

const TimePoint kT0{seconds(100)};

std::unique_ptr<CircuitBreaker> Make(const CircuitBreakerOptions& options) {
  Result<std::unique_ptr<CircuitBreaker>> breaker = CircuitBreaker::Create(options);
  EXPECT_TRUE(breaker.ok()) << breaker.status().ToString();
  return std::move(breaker).value();
}

Permit Admit(CircuitBreaker& b, TimePoint now) {
  Admission a = b.Acquire(now);
  EXPECT_TRUE(a.admitted());
  return a.permit;
}

// --- stale permits ---------------------------------------------------------

TEST(BreakerStaleTest, ResultsAfterATransitionAreCountedAsStaleAndChangeNothing) {
  CircuitBreakerOptions o;
  o.failure_threshold = 2;
  o.reset_timeout = seconds(10);
  o.report_metrics = false;
  auto b = Make(o);
  const Permit early = Admit(*b, kT0);  // issued in generation 1 (closed)
  b->Record(Admit(*b, kT0), CallResult::kFailure, milliseconds(1), kT0);
  b->Record(Admit(*b, kT0), CallResult::kFailure, milliseconds(1), kT0);  // opens
  ASSERT_EQ(b->state(kT0), BreakerState::kOpen);
  // A success from before the trip: it must not close the breaker, nor count
  // as a success, but it is counted as stale.
  b->Record(early, CallResult::kSuccess, milliseconds(1), kT0 + seconds(1));
  BreakerCounts c = b->counts(kT0 + seconds(1));
  EXPECT_EQ(b->state(kT0 + seconds(1)), BreakerState::kOpen);
  EXPECT_EQ(c.stale, 1u);
  EXPECT_EQ(c.calls, 2u);
  EXPECT_EQ(c.successes, 0u);
  EXPECT_EQ(c.failures, 2u);
}

TEST(BreakerStaleTest, AProbeRecordedAfterItsPermitTimeoutIsStale) {
  CircuitBreakerOptions o;
  o.failure_threshold = 1;
  o.reset_timeout = seconds(10);
  o.permit_timeout = seconds(5);
  o.report_metrics = false;
  auto b = Make(o);
  b->Record(Admit(*b, kT0), CallResult::kFailure, milliseconds(1), kT0);  // opens at 100 s
  const Permit probe = Admit(*b, kT0 + seconds(10));                      // half-open at 110 s
  ASSERT_TRUE(probe.probe);
  // Recorded 5 s after it was issued: at the permit_timeout, so discarded.
  b->Record(probe, CallResult::kSuccess, seconds(5), kT0 + seconds(15));
  EXPECT_EQ(b->state(kT0 + seconds(15)), BreakerState::kHalfOpen);
  BreakerCounts c = b->counts(kT0 + seconds(15));
  EXPECT_EQ(c.stale, 1u);
  EXPECT_EQ(c.successes, 0u);
  // Its slot was freed: the next probe is admitted and closes the breaker.
  b->Record(Admit(*b, kT0 + seconds(15)), CallResult::kSuccess, milliseconds(1),
            kT0 + seconds(15));
  EXPECT_EQ(b->state(kT0 + seconds(15)), BreakerState::kClosed);
  EXPECT_EQ(b->counts(kT0 + seconds(15)).stale, 1u);
}

TEST(BreakerStaleTest, ResetClearsTheStaleCount) {
  CircuitBreakerOptions o;
  o.failure_threshold = 1;
  o.report_metrics = false;
  auto b = Make(o);
  const Permit early = Admit(*b, kT0);
  b->Record(Admit(*b, kT0), CallResult::kFailure, milliseconds(1), kT0);
  b->Record(early, CallResult::kFailure, milliseconds(1), kT0);
  EXPECT_EQ(b->counts(kT0).stale, 1u);
  b->Reset(kT0);
  EXPECT_EQ(b->counts(kT0).stale, 0u);
}

// --- last trip -----------------------------------------------------------

TEST(BreakerLastTripTest, KeepsTheWindowFiguresOfTheTripAfterTheWindowIsCleared) {
  CircuitBreakerOptions o;
  o.failure_threshold = 0;
  o.window = WindowKind::kCount;
  o.window_size = 10;
  o.minimum_calls = 4;
  o.failure_rate_threshold = 50;
  o.slow_call_duration = milliseconds(100);
  o.report_metrics = false;
  auto b = Make(o);
  EXPECT_FALSE(b->last_trip().has_value());
  // S(slow) F S F: after the 4th call, 2 of 4 failed (50 % >= 50 %) -> trip;
  // 1 of 4 was slow (25 %).
  b->Record(Admit(*b, kT0), CallResult::kSuccess, milliseconds(150), kT0);
  b->Record(Admit(*b, kT0), CallResult::kFailure, milliseconds(1), kT0);
  b->Record(Admit(*b, kT0), CallResult::kSuccess, milliseconds(1), kT0);
  ASSERT_EQ(b->state(kT0), BreakerState::kClosed);
  b->Record(Admit(*b, kT0 + seconds(1)), CallResult::kFailure, milliseconds(1), kT0 + seconds(1));
  ASSERT_EQ(b->state(kT0 + seconds(1)), BreakerState::kOpen);
  // The live window is cleared by the transition ...
  EXPECT_EQ(b->counts(kT0 + seconds(1)).window_calls, 0u);
  // ... but the trip's figures stay.
  std::optional<BreakerTrip> trip = b->last_trip();
  ASSERT_TRUE(trip.has_value());
  EXPECT_EQ(trip->from, BreakerState::kClosed);
  EXPECT_STREQ(trip->reason, "failure_rate");
  EXPECT_EQ(trip->at, kT0 + seconds(1));
  EXPECT_EQ(trip->window_calls, 4u);
  EXPECT_DOUBLE_EQ(trip->window_failure_rate, 50.0);
  EXPECT_DOUBLE_EQ(trip->window_slow_rate, 25.0);
  EXPECT_EQ(trip->consecutive_failures, 1);
}

TEST(BreakerLastTripTest, AFailedProbeReplacesItAndAResetClearsIt) {
  CircuitBreakerOptions o;
  o.failure_threshold = 3;
  o.reset_timeout = seconds(10);
  o.report_metrics = false;
  auto b = Make(o);
  for (int i = 0; i < 3; ++i) {
    b->Record(Admit(*b, kT0), CallResult::kFailure, milliseconds(1), kT0);
  }
  ASSERT_TRUE(b->last_trip().has_value());
  EXPECT_STREQ(b->last_trip()->reason, "failure_threshold");
  EXPECT_EQ(b->last_trip()->consecutive_failures, 3);
  EXPECT_EQ(b->last_trip()->window_calls, 0u);  // no window
  const TimePoint t1 = kT0 + seconds(10);
  b->Record(Admit(*b, t1), CallResult::kFailure, milliseconds(1), t1);  // the probe fails
  ASSERT_EQ(b->state(t1), BreakerState::kOpen);
  EXPECT_EQ(b->last_trip()->from, BreakerState::kHalfOpen);
  EXPECT_STREQ(b->last_trip()->reason, "probe_failed");
  EXPECT_EQ(b->last_trip()->at, t1);
  // Closing again keeps it (an operator reads it after recovery too).
  const TimePoint t2 = t1 + seconds(10);
  b->Record(Admit(*b, t2), CallResult::kSuccess, milliseconds(1), t2);
  ASSERT_EQ(b->state(t2), BreakerState::kClosed);
  EXPECT_STREQ(b->last_trip()->reason, "probe_failed");
  b->Reset(t2);
  EXPECT_FALSE(b->last_trip().has_value());
}

// --- per-call events -----------------------------------------------------

struct CallLog {
  std::vector<std::string> events;  // "kind/state[/stale]"
  BreakerCallListener Listener() {
    return [this](const BreakerCallEvent& e) {
      std::string s = std::string(BreakerCallKindName(e.kind)) + "/" + BreakerStateName(e.state);
      if (e.stale) s += "/stale";
      events.push_back(s);
    };
  }
};

TEST(BreakerCallEventsTest, OneEventPerCallWithItsKindAndState) {
  CircuitBreakerOptions o;
  o.name = "calls";
  o.failure_threshold = 2;
  o.reset_timeout = seconds(10);
  o.report_metrics = false;
  auto b = Make(o);
  CallLog log;
  const uint64_t id = b->AddCallListener(log.Listener());
  EXPECT_NE(id, 0u);
  std::vector<BreakerTransition> transitions;
  b->AddListener([&](const BreakerTransition& t) { transitions.push_back(t); });

  const Permit early = Admit(*b, kT0);
  b->Record(Admit(*b, kT0), CallResult::kSuccess, milliseconds(1), kT0);
  b->Record(Admit(*b, kT0), CallResult::kIgnored, milliseconds(1), kT0);
  b->Record(Admit(*b, kT0), CallResult::kFailure, milliseconds(1), kT0);
  b->Record(Admit(*b, kT0), CallResult::kFailure, milliseconds(1), kT0);  // trips
  EXPECT_FALSE(b->Acquire(kT0 + seconds(1)).admitted());
  b->Record(early, CallResult::kFailure, milliseconds(1), kT0 + seconds(2));
  const Permit probe = Admit(*b, kT0 + seconds(10));
  EXPECT_FALSE(b->Acquire(kT0 + seconds(10)).admitted());  // the one slot is taken
  b->Record(probe, CallResult::kSuccess, milliseconds(1), kT0 + seconds(11));
  b->ForceOpen(kT0 + seconds(12));
  EXPECT_FALSE(b->Acquire(kT0 + seconds(12)).admitted());

  const std::vector<std::string> expected = {
      "success/closed",   "ignored/closed",    "failure/closed",
      "failure/closed",   "rejected/open",     "failure/open/stale",
      "rejected/half_open", "success/half_open", "rejected/forced_open",
  };
  EXPECT_EQ(log.events, expected);
  // Transitions are still told apart: closed->open, open->half_open,
  // half_open->closed, closed->forced_open.
  EXPECT_EQ(transitions.size(), 4u);

  EXPECT_TRUE(b->RemoveCallListener(id));
  EXPECT_FALSE(b->RemoveCallListener(id));
  b->Reset(kT0 + seconds(13));
  b->Record(Admit(*b, kT0 + seconds(13)), CallResult::kSuccess, milliseconds(1),
            kT0 + seconds(13));
  EXPECT_EQ(log.events.size(), expected.size());
}

TEST(BreakerCallEventsTest, EventsCarryNameDurationAndTime) {
  CircuitBreakerOptions o;
  o.name = "timed";
  o.report_metrics = false;
  auto b = Make(o);
  std::vector<BreakerCallEvent> seen;
  std::vector<std::string> names;
  b->AddCallListener([&](const BreakerCallEvent& e) {
    seen.push_back(e);
    names.emplace_back(e.name);
  });
  b->AddCallListener([](const BreakerCallEvent&) { throw std::runtime_error("ignored"); });
  b->Record(Admit(*b, kT0), CallResult::kSuccess, milliseconds(250), kT0 + milliseconds(250));
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(names[0], "timed");
  EXPECT_EQ(seen[0].duration, milliseconds(250));
  EXPECT_EQ(seen[0].at, kT0 + milliseconds(250));
  EXPECT_FALSE(seen[0].stale);
}

// --- metrics ---------------------------------------------------------------

const MetricsSnapshot* Find(const std::vector<MetricsSnapshot>& all, const std::string& name) {
  for (const MetricsSnapshot& s : all) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

TEST(BreakerMetricsTest, TheBreakersOwnCountsAppearUnderItsName) {
  // Other suites fill the default registry up to its bound on names.
  MetricsRegistry::Default().Clear();
  CircuitBreakerOptions o;
  o.name = "observability-counts";
  o.failure_threshold = 3;
  auto b = Make(o);
  EXPECT_EQ(b->reported_name(), "observability-counts");
  // 2 successes, 3 failures (trip), 1 refusal.
  b->Record(Admit(*b, kT0), CallResult::kSuccess, milliseconds(1), kT0);
  b->Record(Admit(*b, kT0), CallResult::kSuccess, milliseconds(1), kT0);
  for (int i = 0; i < 3; ++i) {
    b->Record(Admit(*b, kT0), CallResult::kFailure, milliseconds(1), kT0);
  }
  EXPECT_FALSE(b->Acquire(kT0).admitted());
  const std::vector<MetricsSnapshot> all = MetricsRegistry::Default().Snapshot();
  const MetricsSnapshot* s = Find(all, "observability-counts");
  ASSERT_NE(s, nullptr);
  ASSERT_TRUE(s->has_breaker);
  EXPECT_EQ(s->breaker.calls, 5u);
  EXPECT_EQ(s->breaker.successes, 2u);
  EXPECT_EQ(s->breaker.failures, 3u);
  EXPECT_EQ(s->breaker.rejected, 1u);
  ASSERT_TRUE(s->last_trip.has_value());
  EXPECT_STREQ(s->last_trip->reason, "failure_threshold");

  boost::json::value doc = boost::json::parse(MetricsRegistry::Default().ToJson());
  bool found = false;
  for (const boost::json::value& entry : doc.at("metrics").as_array()) {
    if (entry.at("name").as_string() != "observability-counts") continue;
    found = true;
    const boost::json::object& breaker = entry.at("breaker").as_object();
    EXPECT_EQ(breaker.at("calls").to_number<int64_t>(), 5);
    EXPECT_EQ(breaker.at("failures").to_number<int64_t>(), 3);
    EXPECT_EQ(breaker.at("rejected").to_number<int64_t>(), 1);
    EXPECT_EQ(breaker.at("stale").to_number<int64_t>(), 0);
    EXPECT_EQ(breaker.at("last_trip").at("reason").as_string(), "failure_threshold");
    EXPECT_EQ(entry.at("breaker_state").as_string(), "open");
  }
  EXPECT_TRUE(found);
}

TEST(BreakerMetricsTest, ASecondLiveBreakerOfOneNameReportsUnderItsOwnName) {
  MetricsRegistry::Default().Clear();
  CircuitBreakerOptions o;
  o.name = "observability-twice";
  o.failure_threshold = 1;
  auto first = Make(o);
  auto second = Make(o);
  auto third = Make(o);
  EXPECT_EQ(first->reported_name(), "observability-twice");
  EXPECT_EQ(second->reported_name(), "observability-twice#2");
  EXPECT_EQ(third->reported_name(), "observability-twice#3");
  second->Record(Admit(*second, kT0), CallResult::kFailure, milliseconds(1), kT0);
  {
    const std::vector<MetricsSnapshot> all = MetricsRegistry::Default().Snapshot();
    const MetricsSnapshot* a = Find(all, "observability-twice");
    const MetricsSnapshot* b = Find(all, "observability-twice#2");
    ASSERT_NE(a, nullptr);
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(a->breaker_state, static_cast<int>(BreakerState::kClosed));
    EXPECT_EQ(a->breaker.failures, 0u);
    EXPECT_EQ(b->breaker_state, static_cast<int>(BreakerState::kOpen));
    EXPECT_EQ(b->breaker.failures, 1u);
  }
  // A name is free again once its breaker is gone.
  first.reset();
  auto fourth = Make(o);
  EXPECT_EQ(fourth->reported_name(), "observability-twice");
  const std::vector<MetricsSnapshot> all = MetricsRegistry::Default().Snapshot();
  const MetricsSnapshot* a = Find(all, "observability-twice");
  ASSERT_NE(a, nullptr);
  EXPECT_TRUE(a->has_breaker);
  EXPECT_EQ(a->breaker.calls, 0u);  // the new breaker's counts, not the old one's
}

TEST(BreakerMetricsTest, ABreakerThatReportsNothingIsNotAttached) {
  MetricsRegistry::Default().Clear();
  CircuitBreakerOptions o;
  o.name = "observability-silent";
  o.report_metrics = false;
  auto b = Make(o);
  EXPECT_EQ(b->reported_name(), "");
  const std::vector<MetricsSnapshot> all = MetricsRegistry::Default().Snapshot();
  EXPECT_EQ(Find(all, "observability-silent"), nullptr);
}

// Past the registry's bound on names a breaker reports to the overflow
// metrics without being attached (its counts are not exported there).
TEST(BreakerMetricsTest, PastTheBoundOnNamesABreakerIsNotAttached) {
  CircuitBreakerOptions o;
  o.report_metrics = false;  // attached by hand below, to a registry of one name
  auto a = Make(o);
  auto b = Make(o);
  MetricsRegistry registry(1);
  std::string name;
  Metrics* first = registry.AttachBreaker("bound-a", a.get(), &name);
  EXPECT_EQ(name, "bound-a");
  Metrics* overflow = registry.AttachBreaker("bound-b", b.get(), &name);
  EXPECT_EQ(name, MetricsRegistry::kOverflowName);
  EXPECT_NE(first, overflow);
  const std::vector<MetricsSnapshot> all = registry.Snapshot();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].name, MetricsRegistry::kOverflowName);  // sorted: '_' < 'b'
  EXPECT_FALSE(all[0].has_breaker);
  EXPECT_EQ(all[1].name, "bound-a");
  EXPECT_TRUE(all[1].has_breaker);
  first->DetachBreaker(a.get());
  EXPECT_FALSE(registry.Snapshot()[1].has_breaker);
}

}  // namespace
}  // namespace mulligan
