// Metrics: exact counts, sharded totals under threads, exports and events.
#include "mulligan/telemetry/metrics.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <string>
#include <thread>
#include <vector>

namespace mulligan {
namespace {

using std::chrono::milliseconds;

Decision Retry(int attempt, Duration delay, bool from_retry_after = false) {
  Decision d;
  d.action = Decision::Action::kRetry;
  d.attempt = attempt;
  d.delay = delay;
  d.from_retry_after = from_retry_after;
  d.classification = Classification::kRetryable;
  return d;
}

Decision Stop(int attempt, StopReason reason) {
  Decision d;
  d.attempt = attempt;
  d.reason = reason;
  return d;
}

TEST(MetricsTest, ACallThatSucceedsOnItsThirdAttemptIsOneSuccessAndTwoRetries) {
  MetricsRegistry registry;
  Metrics* m = registry.Get("payments");
  m->CallStarted();
  m->AttemptFailed(1, Outcome::Http(503), Retry(1, milliseconds(200)), milliseconds(5));
  m->RetryWaitEnded();
  m->AttemptFailed(2, Outcome::Transport(ErrorKind::kTimeout), Retry(2, milliseconds(400)),
                   milliseconds(300));
  m->RetryWaitEnded();
  m->CallSucceeded(3, milliseconds(720));

  MetricsSnapshot s = m->Snapshot();
  EXPECT_EQ(s.name, "payments");
  EXPECT_EQ(s.calls, 1u);
  EXPECT_EQ(s.attempts, 3u);
  EXPECT_EQ(s.retries, 2u);
  EXPECT_EQ(s.retries_by_reason[static_cast<int>(RetryReason::kStatus)], 1u);
  EXPECT_EQ(s.retries_by_reason[static_cast<int>(RetryReason::kTimeout)], 1u);
  EXPECT_EQ(s.successes, 1u);
  EXPECT_EQ(s.failures, 0u);
  EXPECT_EQ(s.in_flight, 0);
  EXPECT_EQ(s.waiting_to_retry, 0);
  EXPECT_EQ(s.attempts_per_call.count, 1u);
  EXPECT_EQ(s.attempts_per_call.counts[2], 1u);  // bucket le=3
  EXPECT_DOUBLE_EQ(s.retry_delay_seconds.sum, 0.6);
  EXPECT_EQ(s.retry_delay_seconds.counts[6], 1u);  // 0.2 s is in le=0.25
  EXPECT_EQ(s.retry_delay_seconds.counts[7], 1u);  // 0.4 s is in le=0.5
  EXPECT_DOUBLE_EQ(s.call_duration_seconds.sum, 0.72);
}

TEST(MetricsTest, GaugesFollowCallsInFlightAndWaiting) {
  MetricsRegistry registry;
  Metrics* m = registry.Get("api");
  m->CallStarted();
  m->CallStarted();
  m->AttemptFailed(1, Outcome::Http(429, milliseconds(1000)),
                   Retry(1, milliseconds(1000), /*from_retry_after=*/true), Duration::zero());
  MetricsSnapshot s = m->Snapshot();
  EXPECT_EQ(s.in_flight, 2);
  EXPECT_EQ(s.waiting_to_retry, 1);
  EXPECT_EQ(s.retries_by_reason[static_cast<int>(RetryReason::kRetryAfter)], 1u);
  m->RetryWaitEnded();
  m->AttemptFailed(2, Outcome::Http(503), Stop(2, StopReason::kAttemptsExhausted),
                   milliseconds(1001));
  m->CallFailed(2, milliseconds(1001), StopReason::kAttemptsExhausted);
  m->FallbackUsed();
  s = m->Snapshot();
  EXPECT_EQ(s.in_flight, 1);
  EXPECT_EQ(s.waiting_to_retry, 0);
  EXPECT_EQ(s.failures, 1u);
  EXPECT_EQ(s.fallbacks, 1u);
  EXPECT_EQ(s.retries, 1u);
}

TEST(MetricsTest, TwoThreadsTimesAMillionCallsGiveExactTotals) {
  MetricsRegistry registry;
  Metrics* m = registry.Get("hot");
  constexpr int kCalls = 1000000;
  auto work = [m] {
    for (int i = 0; i < kCalls; ++i) {
      m->CallStarted();
      m->CallSucceeded(1, std::chrono::microseconds(50));
    }
  };
  std::thread a(work), b(work);
  a.join();
  b.join();
  MetricsSnapshot s = m->Snapshot();
  EXPECT_EQ(s.calls, 2u * kCalls);
  EXPECT_EQ(s.successes, 2u * kCalls);
  EXPECT_EQ(s.attempts, 2u * kCalls);
  EXPECT_EQ(s.attempts_per_call.counts[0], 2u * kCalls);
  EXPECT_EQ(s.call_duration_seconds.counts[0], 2u * kCalls);  // 50 us <= 1 ms
  EXPECT_EQ(s.in_flight, 0);
}

TEST(MetricsTest, BreakerTransitionsAndState) {
  MetricsRegistry registry;
  Metrics* m = registry.Get("db");
  m->BreakerTransitioned(BreakerState::kClosed, BreakerState::kOpen, "failure_threshold");
  m->BreakerTransitioned(BreakerState::kOpen, BreakerState::kHalfOpen, "reset_timeout_elapsed");
  m->BreakerTransitioned(BreakerState::kHalfOpen, BreakerState::kOpen, "probe_failed");
  m->ShortCircuited(1);
  MetricsSnapshot s = m->Snapshot();
  EXPECT_EQ(s.circuit_opens, 2u);
  EXPECT_EQ(s.transitions[0][1], 1u);
  EXPECT_EQ(s.transitions[1][2], 1u);
  EXPECT_EQ(s.transitions[2][1], 1u);
  EXPECT_EQ(s.breaker_state, static_cast<int>(BreakerState::kOpen));
  EXPECT_EQ(s.short_circuits, 1u);
}

TEST(MetricsTest, PrometheusExposition) {
  MetricsRegistry registry;
  Metrics* m = registry.Get("pay\"ments");
  m->CallStarted();
  m->AttemptFailed(1, Outcome::Http(503), Retry(1, milliseconds(200)), Duration::zero());
  m->RetryWaitEnded();
  m->CallSucceeded(2, milliseconds(210));
  m->SetBreakerState(BreakerState::kClosed);
  const std::string text = registry.ToPrometheus();
  for (const char* line : {
           "# TYPE mulligan_calls_total counter\n",
           "mulligan_calls_total{name=\"pay\\\"ments\"} 1\n",
           "mulligan_attempts_total{name=\"pay\\\"ments\"} 2\n",
           "mulligan_retries_total{name=\"pay\\\"ments\",reason=\"status\"} 1\n",
           "mulligan_retries_total{name=\"pay\\\"ments\",reason=\"timeout\"} 0\n",
           "mulligan_successes_total{name=\"pay\\\"ments\"} 1\n",
           "mulligan_breaker_state{name=\"pay\\\"ments\",state=\"closed\"} 1\n",
           "mulligan_breaker_state{name=\"pay\\\"ments\",state=\"open\"} 0\n",
           "# TYPE mulligan_call_duration_seconds histogram\n",
           "mulligan_call_duration_seconds_bucket{name=\"pay\\\"ments\",le=\"0.10000000000000001\"} 0\n",
           "mulligan_call_duration_seconds_bucket{name=\"pay\\\"ments\",le=\"0.25\"} 1\n",
           "mulligan_call_duration_seconds_bucket{name=\"pay\\\"ments\",le=\"+Inf\"} 1\n",
           "mulligan_call_duration_seconds_count{name=\"pay\\\"ments\"} 1\n",
           "mulligan_attempts_per_call_sum{name=\"pay\\\"ments\"} 2\n",
       }) {
    EXPECT_NE(text.find(line), std::string::npos) << "missing: " << line << "\nin:\n" << text;
  }
}

TEST(MetricsTest, JsonSnapshotHasTheSixClassicCounters) {
  MetricsRegistry registry;
  Metrics* a = registry.Get("a");
  Metrics* b = registry.Get("b");
  a->CallStarted();
  a->CallSucceeded(1, milliseconds(1));
  b->CallStarted();
  b->AttemptFailed(1, Outcome::Http(503), Retry(1, milliseconds(10)), Duration::zero());
  b->RetryWaitEnded();
  b->CallFailed(2, milliseconds(20), StopReason::kAttemptsExhausted);
  b->FallbackUsed();
  b->BreakerTransitioned(BreakerState::kClosed, BreakerState::kOpen, "failure_threshold");
  boost::json::value doc = boost::json::parse(registry.ToJson());
  const boost::json::object& totals = doc.at("totals").as_object();
  EXPECT_EQ(totals.at("calls").to_number<int>(), 2);
  EXPECT_EQ(totals.at("retries").to_number<int>(), 1);
  EXPECT_EQ(totals.at("circuit_opens").to_number<int>(), 1);
  EXPECT_EQ(totals.at("fallbacks").to_number<int>(), 1);
  EXPECT_EQ(totals.at("successes").to_number<int>(), 1);
  EXPECT_EQ(totals.at("failures").to_number<int>(), 1);
  const boost::json::array& metrics = doc.at("metrics").as_array();
  ASSERT_EQ(metrics.size(), 2u);
  EXPECT_EQ(metrics[1].at("name").as_string(), "b");
  EXPECT_EQ(metrics[1].at("breaker_state").as_string(), "open");
  EXPECT_EQ(metrics[0].at("breaker_state").is_null(), true);
}

TEST(MetricsTest, ListenersReceiveTheEventStreamInOrder) {
  MetricsRegistry registry;
  std::vector<std::string> seen;
  uint64_t id = registry.AddListener([&](const Event& e) {
    seen.push_back(std::string(EventKindName(e.kind)) + ":" + std::string(e.name) + ":" +
                   std::to_string(e.attempt));
  });
  Metrics* m = registry.Get("svc");
  m->CallStarted();
  m->AttemptStarted(1);
  m->AttemptFailed(1, Outcome::Http(503), Retry(1, milliseconds(5)), Duration::zero());
  m->RetryWaitEnded();
  m->AttemptStarted(2);
  m->CallSucceeded(2, milliseconds(6));
  m->FallbackUsed();
  EXPECT_EQ(seen, (std::vector<std::string>{"attempt_started:svc:1", "attempt_failed:svc:1",
                                            "retry_scheduled:svc:1", "attempt_started:svc:2",
                                            "succeeded:svc:2", "fallback_used:svc:0"}));
  EXPECT_TRUE(registry.RemoveListener(id));
  EXPECT_FALSE(registry.RemoveListener(id));
  m->AttemptStarted(3);
  EXPECT_EQ(seen.size(), 6u);
}

TEST(MetricsTest, ClearDetachesButKeepsPointersValid) {
  MetricsRegistry registry;
  Metrics* m = registry.Get("x");
  registry.Clear();
  m->CallStarted();  // still valid memory
  EXPECT_TRUE(registry.Snapshot().empty());
  EXPECT_NE(registry.Get("x"), m);
}

}  // namespace
}  // namespace mulligan

namespace mulligan {
namespace {

TEST(MetricsTest, UntimedSuccessesCountAsCallsButNotAsDurations) {
  MetricsRegistry registry;
  Metrics* m = registry.Get("py");
  m->UntimedFirstAttemptSuccesses(41);
  m->CallStarted();
  m->CallSucceeded(1, std::chrono::milliseconds(3));
  MetricsSnapshot s = m->Snapshot();
  EXPECT_EQ(s.calls, 42u);
  EXPECT_EQ(s.successes, 42u);
  EXPECT_EQ(s.attempts, 42u);
  EXPECT_EQ(s.attempts_per_call.count, 42u);
  EXPECT_EQ(s.call_duration_seconds.count, 1u);
  EXPECT_EQ(s.in_flight, 0);
}

}  // namespace
}  // namespace mulligan

namespace mulligan {
namespace {

TEST(MetricsTest, NamesBeyondTheBoundMergeIntoOverflow) {
  MetricsRegistry registry(3);
  Metrics* a = registry.Get("a");
  registry.Get("b");
  registry.Get("c");
  Metrics* d = registry.Get("d");
  Metrics* e = registry.Get("e");
  EXPECT_EQ(d, e);
  EXPECT_EQ(d->name(), MetricsRegistry::kOverflowName);
  EXPECT_EQ(registry.Get("a"), a);
  d->CallStarted();
  e->CallStarted();
  std::vector<MetricsSnapshot> all = registry.Snapshot();
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all[0].name, "_overflow");
  EXPECT_EQ(all[0].calls, 2u);
}

}  // namespace
}  // namespace mulligan

namespace mulligan {
namespace {

TEST(MetricsTest, BreakersReportTransitionsStateAndRefusals) {
  CircuitBreakerOptions options;
  options.name = "metrics-test-breaker";
  options.failure_threshold = 2;
  std::unique_ptr<CircuitBreaker> breaker = std::move(CircuitBreaker::Create(options)).value();
  Metrics* m = MetricsRegistry::Default().Get("metrics-test-breaker");
  EXPECT_EQ(m->Snapshot().breaker_state, static_cast<int>(BreakerState::kClosed));
  const TimePoint t0{std::chrono::seconds(10)};
  for (int i = 0; i < 2; ++i) {
    Admission a = breaker->Acquire(t0);
    ASSERT_TRUE(a.admitted());
    breaker->Record(a.permit, CallResult::kFailure, Duration::zero(), t0);
  }
  EXPECT_FALSE(breaker->Acquire(t0).admitted());
  EXPECT_FALSE(breaker->Acquire(t0).admitted());
  MetricsSnapshot s = m->Snapshot();
  EXPECT_EQ(s.breaker_state, static_cast<int>(BreakerState::kOpen));
  EXPECT_EQ(s.circuit_opens, 1u);
  EXPECT_EQ(s.short_circuits, 2u);

  options.name = "silent-breaker";
  options.report_metrics = false;
  std::unique_ptr<CircuitBreaker> silent = std::move(CircuitBreaker::Create(options)).value();
  for (const MetricsSnapshot& snap : MetricsRegistry::Default().Snapshot()) {
    EXPECT_NE(snap.name, "silent-breaker");
  }
}

}  // namespace
}  // namespace mulligan
