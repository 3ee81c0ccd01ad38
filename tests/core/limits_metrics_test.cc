// Metrics of the overload primitives (issue 14): a pipeline tracks its retry
// budget, throttle, bulkhead and rate limiter in its registry; snapshots,
// the Prometheus text and the JSON read their counters; each policy counts
// its refusals by reason, and each refusal is an event. Every expected value
// below is worked out by hand in the comments, on a fake clock.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "mulligan/budget/budget.h"
#include "mulligan/budget/throttle.h"
#include "mulligan/limits/bulkhead.h"
#include "mulligan/limits/rate_limiter.h"
#include "mulligan/pipeline/call.h"
#include "mulligan/pipeline/pipeline.h"
#include "mulligan/telemetry/metrics.h"

namespace mulligan {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

PipelineOptions Options(const std::string& name, int attempts, MetricsRegistry* registry) {
  PipelineOptions o;
  o.name = name;
  o.retry.max_attempts = attempts;
  o.retry.backoff.jitter = JitterKind::kNone;
  o.metrics_registry = registry;
  return o;
}

// Runs one call whose attempts all answer `outcome`; returns why it ended
// (the refusal's reason, or the last decision's).
StopReason RunCall(const Pipeline& pipeline, FakeClock& clock, const Outcome& outcome,
               int* attempts = nullptr) {
  Call call = pipeline.Begin(clock.Now());
  for (;;) {
    const AttemptAdmission admission = call.Admit(clock.Now());
    if (admission.refused()) return admission.reason;
    if (admission.wait()) {
      clock.Advance(admission.delay);
      continue;
    }
    if (attempts != nullptr) ++*attempts;
    const Decision decision = call.Record(outcome, clock.Now());
    if (!decision.retry()) return decision.reason;
    clock.Advance(decision.delay);
  }
}

// A pointer into a temporary would dangle: only named vectors may be searched.
const MetricsSnapshot* Find(std::vector<MetricsSnapshot>&& all, const std::string& name) = delete;
const MetricsSnapshot* Find(const std::vector<MetricsSnapshot>& all, const std::string& name) {
  for (const auto& s : all) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

bool Has(const std::string& text, const std::string& line) {
  return text.find(line + "\n") != std::string::npos;
}

// gRPC A6 with max 10, ratio 0.1, calls of 3 attempts that always fail:
// call 1: tokens 10 -> 9 (retry), 8 (retry), 7 (attempts exhausted);
// call 2: 6 (retry: 6 > 5), 5 (refused: not > 5); calls 3 and 4: 4, 3 (refused).
// So 3 retries allowed, 3 refused, tokens 3; one success then adds 0.1.
TEST(LimitsMetrics, BudgetTokensAllowedRefusedAndRejectionsByReason) {
  MetricsRegistry registry;
  std::vector<std::string> rejected;
  registry.AddListener([&](const Event& e) {
    if (e.kind == EventKind::kRejected) {
      rejected.push_back(std::string(e.name) + ":" + StopReasonName(e.stop_reason));
    }
  });
  BudgetOptions b;
  b.name = "b1";
  b.token_bucket.max_tokens = 10;
  b.token_bucket.token_ratio = 0.1;
  PipelineOptions o = Options("svc", 3, &registry);
  o.budget = RetryBudget::Create(b).value();
  auto pipeline = Pipeline::Create(o).value();
  FakeClock clock;
  int attempts = 0;
  EXPECT_EQ(RunCall(*pipeline, clock, Outcome::Http(500), &attempts), StopReason::kAttemptsExhausted);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(RunCall(*pipeline, clock, Outcome::Http(500)), StopReason::kBudget);
  EXPECT_EQ(RunCall(*pipeline, clock, Outcome::Http(200)), StopReason::kSucceeded);
  EXPECT_EQ(attempts, 3);

  const LimitsSnapshot limits = registry.SnapshotLimits(clock.Now());
  ASSERT_EQ(limits.budgets.size(), 1u);
  EXPECT_EQ(limits.budgets[0].name, "b1");
  EXPECT_EQ(limits.budgets[0].kind, 0);
  EXPECT_DOUBLE_EQ(limits.budgets[0].tokens, 3.1);
  EXPECT_DOUBLE_EQ(limits.budgets[0].max_tokens, 10.0);
  EXPECT_EQ(limits.budgets[0].retries_allowed, 3u);
  EXPECT_EQ(limits.budgets[0].retries_refused, 3u);

  const auto all = registry.Snapshot();
  const MetricsSnapshot* svc = Find(all, "svc");
  ASSERT_NE(svc, nullptr);
  EXPECT_EQ(svc->calls, 5u);
  EXPECT_EQ(svc->failures, 4u);
  EXPECT_EQ(svc->rejections_by_reason[0], 3u);  // budget
  EXPECT_EQ(svc->rejections_by_reason[1], 0u);
  EXPECT_EQ(rejected, (std::vector<std::string>{"svc:budget", "svc:budget", "svc:budget"}));

  const std::string text = registry.ToPrometheus(clock.Now());
  EXPECT_TRUE(Has(text, "mulligan_rejections_total{name=\"svc\",reason=\"budget\"} 3")) << text;
  EXPECT_TRUE(Has(text, "mulligan_rejections_total{name=\"svc\",reason=\"bulkhead_full\"} 0"));
  EXPECT_TRUE(Has(text, "# TYPE mulligan_budget_tokens gauge"));
  EXPECT_TRUE(Has(text, "mulligan_budget_retries_allowed_total{name=\"b1\"} 3"));
  EXPECT_TRUE(Has(text, "mulligan_budget_retries_refused_total{name=\"b1\"} 3"));
  const std::string json = registry.ToJson(clock.Now());
  EXPECT_NE(json.find("\"budgets\":[{\"name\":\"b1\",\"kind\":\"token_bucket\""), std::string::npos)
      << json;
  EXPECT_NE(json.find("\"rejections_by_reason\":{\"budget\":3,"), std::string::npos) << json;
  EXPECT_NE(json.find("\"rejections\":3"), std::string::npos) << json;
}

// Bulkhead of 1 slot and a queue of 1 with max_wait 1 s:
//   A holds the slot; B queues; C finds the queue full (rejected_full 1);
//   2 s later B's wait is over (rejected_timeout 1); A ends, then D runs;
//   E holds, F queues, E ends and hands F the slot (one queue wait), F ends.
TEST(LimitsMetrics, BulkheadInFlightQueuedRejectionsAndQueueWaits) {
  MetricsRegistry registry;
  BulkheadOptions bo;
  bo.name = "db";
  bo.max_concurrent = 1;
  bo.max_queue = 1;
  bo.max_wait = seconds(1);
  PipelineOptions o = Options("q", 1, &registry);
  o.bulkhead = Bulkhead::Create(bo).value();
  auto pipeline = Pipeline::Create(o).value();
  FakeClock clock;
  Call a = pipeline->Begin(clock.Now());
  ASSERT_TRUE(a.Admit(clock.Now()).go());
  Call b = pipeline->Begin(clock.Now());
  ASSERT_TRUE(b.Admit(clock.Now()).wait());
  LimitsSnapshot mid = registry.SnapshotLimits(clock.Now());
  ASSERT_EQ(mid.bulkheads.size(), 1u);
  EXPECT_EQ(mid.bulkheads[0].in_flight, 1);
  EXPECT_EQ(mid.bulkheads[0].queued, 1);
  EXPECT_EQ(mid.bulkheads[0].max_concurrent, 1);
  Call c = pipeline->Begin(clock.Now());
  EXPECT_EQ(c.Admit(clock.Now()).reason, StopReason::kBulkheadFull);
  clock.Advance(seconds(2));
  EXPECT_EQ(b.Admit(clock.Now()).reason, StopReason::kBulkheadFull);
  EXPECT_EQ(a.Record(Outcome::Http(200), clock.Now()).reason, StopReason::kSucceeded);
  EXPECT_EQ(RunCall(*pipeline, clock, Outcome::Http(200)), StopReason::kSucceeded);
  Call e = pipeline->Begin(clock.Now());
  ASSERT_TRUE(e.Admit(clock.Now()).go());
  Call f = pipeline->Begin(clock.Now());
  ASSERT_TRUE(f.Admit(clock.Now()).wait());
  (void)e.Record(Outcome::Http(200), clock.Now());
  ASSERT_TRUE(f.Admit(clock.Now()).go());
  (void)f.Record(Outcome::Http(200), clock.Now());

  const LimitsSnapshot end = registry.SnapshotLimits(clock.Now());
  const auto& s = end.bulkheads[0];
  EXPECT_EQ(s.in_flight, 0);
  EXPECT_EQ(s.queued, 0);
  EXPECT_EQ(s.rejected_full, 1u);
  EXPECT_EQ(s.rejected_timeout, 1u);
  EXPECT_EQ(s.queue_wait_seconds.count, 1u);  // F's (real-time) wait
  uint64_t in_buckets = 0;
  for (uint64_t n : s.queue_wait_seconds.counts) in_buckets += n;
  EXPECT_EQ(in_buckets, 1u);
  const std::vector<MetricsSnapshot> all = registry.Snapshot();  // outlives q
  const MetricsSnapshot* q = Find(all, "q");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->rejections_by_reason[2], 2u);  // C and B: bulkhead_full
  EXPECT_EQ(q->successes, 4u);                // A, D, E, F
  const std::string text = registry.ToPrometheus(clock.Now());
  EXPECT_TRUE(Has(text, "mulligan_bulkhead_rejections_total{name=\"db\",reason=\"full\"} 1"));
  EXPECT_TRUE(Has(text, "mulligan_bulkhead_rejections_total{name=\"db\",reason=\"timeout\"} 1"));
  EXPECT_TRUE(Has(text, "mulligan_bulkhead_queue_wait_seconds_count{name=\"db\"} 1"));
  EXPECT_TRUE(Has(text, "mulligan_bulkhead_in_flight{name=\"db\"} 0"));
}

// GCRA rate 2/s, burst 1, max_wait 0.6 s, three calls at t = 0: the first
// goes at once; the second reserves the slot at 0.5 s (a wait of 0.5 s, in
// the le=0.5 bucket); the third would wait 1.0 s > 0.6 s: refused.
TEST(LimitsMetrics, LimiterAdmittedWaitedRefusedAndWaitHistogram) {
  MetricsRegistry registry;
  RateLimiterOptions lo;
  lo.name = "api";
  lo.rate = 2;
  lo.burst = 1;
  lo.max_wait = milliseconds(600);
  PipelineOptions o = Options("rl", 1, &registry);
  o.rate_limiter = RateLimiter::Create(lo).value();
  auto pipeline = Pipeline::Create(o).value();
  FakeClock clock;
  EXPECT_TRUE(pipeline->Begin(clock.Now()).Admit(clock.Now()).go());
  Call second = pipeline->Begin(clock.Now());
  const AttemptAdmission w = second.Admit(clock.Now());
  EXPECT_TRUE(w.wait());
  EXPECT_EQ(w.delay, milliseconds(500));
  EXPECT_EQ(pipeline->Begin(clock.Now()).Admit(clock.Now()).reason, StopReason::kRateLimited);

  const LimitsSnapshot limits = registry.SnapshotLimits(clock.Now());
  ASSERT_EQ(limits.rate_limiters.size(), 1u);
  const auto& s = limits.rate_limiters[0];
  EXPECT_EQ(s.admitted, 1u);
  EXPECT_EQ(s.waited, 1u);
  EXPECT_EQ(s.refused, 1u);
  EXPECT_EQ(s.wait_seconds.count, 1u);
  EXPECT_EQ(s.wait_seconds.counts[7], 1u);  // bounds ... 0.25, 0.5: index 7
  EXPECT_DOUBLE_EQ(s.wait_seconds.sum, 0.5);
  const std::string text = registry.ToPrometheus(clock.Now());
  EXPECT_TRUE(Has(text, "mulligan_rate_limiter_wait_seconds_bucket{name=\"api\",le=\"0.25\"} 0"));
  EXPECT_TRUE(Has(text, "mulligan_rate_limiter_wait_seconds_bucket{name=\"api\",le=\"0.5\"} 1"));
  EXPECT_TRUE(Has(text, "mulligan_rate_limiter_refused_total{name=\"api\"} 1"));
  EXPECT_TRUE(Has(text, "mulligan_rejections_total{name=\"rl\",reason=\"rate_limited\"} 1"));
}

// SRE throttling, K = 2. Four requests answered 200: requests 4, accepts 4,
// p = max(0, (4 - 8) / 5) = 0. Then 6 requests answered 503 (each admitted
// while p is still 0: after n of them p = max(0, (4 + n - 8) / (5 + n)),
// which is 0 for n <= 4; the 5th and 6th may be rejected: the test counts
// what Admit said). Requests 10, accepts 4: p = (10 - 8) / 11 = 2 / 11.
TEST(LimitsMetrics, ThrottleWindowProbabilityAndRejections) {
  MetricsRegistry registry;
  ThrottleOptions t;
  t.name = "sre";
  t.seed = 42;
  auto throttle = AdaptiveThrottle::Create(t).value();
  registry.Track(throttle);
  registry.Track(throttle);  // tracking twice is a no-op
  FakeClock clock;
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(throttle->Admit(clock.Now()));
    throttle->Record(Outcome::Http(200));
  }
  uint64_t refused = 0;
  for (int i = 0; i < 6; ++i) {
    if (throttle->Admit(clock.Now())) {
      throttle->Record(Outcome::Http(503));
    } else {
      ++refused;
    }
  }
  const LimitsSnapshot limits = registry.SnapshotLimits(clock.Now());
  ASSERT_EQ(limits.throttles.size(), 1u);
  EXPECT_EQ(limits.throttles[0].requests, 10);
  EXPECT_EQ(limits.throttles[0].accepts, 4);
  EXPECT_DOUBLE_EQ(limits.throttles[0].probability, 2.0 / 11.0);
  EXPECT_EQ(limits.throttles[0].rejections, refused);
}

// Tracking is weak and unique per name: two live budgets named "x" are
// reported as "x" and "x#2"; a destroyed one disappears; unnamed ones are
// not exported.
TEST(LimitsMetrics, TrackingIsWeakAndNamesAreUnique) {
  MetricsRegistry registry;
  BudgetOptions b;
  b.name = "x";
  auto one = RetryBudget::Create(b).value();
  auto two = RetryBudget::Create(b).value();
  auto unnamed = RetryBudget::Create(BudgetOptions{}).value();
  registry.Track(one);
  registry.Track(two);
  registry.Track(unnamed);
  FakeClock clock;
  LimitsSnapshot s = registry.SnapshotLimits(clock.Now());
  ASSERT_EQ(s.budgets.size(), 2u);
  EXPECT_EQ(s.budgets[0].name, "x");
  EXPECT_EQ(s.budgets[1].name, "x#2");
  EXPECT_DOUBLE_EQ(s.budgets[0].tokens, 100.0);
  two.reset();
  EXPECT_EQ(registry.SnapshotLimits(clock.Now()).budgets.size(), 1u);
  registry.Clear();
  EXPECT_TRUE(registry.SnapshotLimits(clock.Now()).budgets.empty());
}

TEST(LimitsMetrics, RejectionReasonNamesMatchTheStopReasons) {
  for (StopReason r : {StopReason::kBudget, StopReason::kThrottled, StopReason::kBulkheadFull,
                       StopReason::kRateLimited}) {
    const int i = RejectionReasonIndex(r);
    ASSERT_GE(i, 0);
    EXPECT_STREQ(RejectionReasonName(static_cast<RejectionReason>(i)), StopReasonName(r));
  }
  EXPECT_EQ(RejectionReasonIndex(StopReason::kAttemptsExhausted), -1);
  EXPECT_STREQ(EventKindName(EventKind::kRejected), "rejected");
}

}  // namespace
}  // namespace mulligan
