// The pipeline and its Call (pipeline/pipeline.h, pipeline/call.h): the
// admission's timeouts, the testing switches, the fallback's one meaning,
// abandoning, moving, breakers by key, and validation. Fake clock; every
// expected value is worked out from DESIGN.md sections 2 and 5.
#include "mulligan/pipeline/pipeline.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>

#include "mulligan/budget/budget.h"
#include "mulligan/telemetry/metrics.h"

namespace mulligan {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

RetryPolicy Policy(int attempts, Duration base = milliseconds(100)) {
  RetryOptions options;
  options.max_attempts = attempts;
  options.backoff.kind = BackoffKind::kConstant;
  options.backoff.base = base;
  options.backoff.jitter = JitterKind::kNone;
  return std::move(RetryPolicy::Create(options)).value();
}

std::unique_ptr<CircuitBreaker> Breaker(int threshold, Duration reset = seconds(10)) {
  CircuitBreakerOptions options;
  options.name = "db";
  options.failure_threshold = threshold;
  options.reset_timeout = reset;
  options.report_metrics = false;
  return std::move(CircuitBreaker::Create(options)).value();
}

const Outcome kRetryable = Outcome::Failure(true);
const Outcome kTerminal = Outcome::Failure(false);

struct Fixture {
  explicit Fixture(RetryPolicy p, CircuitBreaker* breaker = nullptr) : policy(std::move(p)) {
    Pipeline::Parts parts;
    parts.policy = &policy;
    parts.breaker = breaker;
    parts.metrics = registry.Get("svc");
    parts.clock = &clock;
    pipeline = std::make_unique<Pipeline>(parts);
  }
  MetricsSnapshot Metrics() { return registry.Get("svc")->Snapshot(); }

  FakeClock clock;
  MetricsRegistry registry;
  RetryPolicy policy;
  std::unique_ptr<Pipeline> pipeline;
};

TEST(PipelineTest, AdmissionTimeoutIsThePolicysTrimmedToTheDeadline) {
  RetryOptions options;
  options.attempt_timeout = seconds(4);
  options.deadline = seconds(10);
  options.backoff.kind = BackoffKind::kConstant;
  options.backoff.base = seconds(3);
  options.backoff.jitter = JitterKind::kNone;
  Fixture f(std::move(RetryPolicy::Create(options)).value());
  Call call = f.pipeline->Begin(f.clock.Now());
  EXPECT_EQ(call.Admit(f.clock.Now()).timeout, seconds(4));
  f.clock.Advance(seconds(4));
  ASSERT_TRUE(call.Record(kRetryable, f.clock.Now()).retry());  // 4 + 3 < 10
  f.clock.Advance(seconds(3));
  // 7 s used: 3 s left, less than the attempt timeout.
  EXPECT_EQ(call.Admit(f.clock.Now()).timeout, seconds(3));
}

TEST(PipelineTest, AdmissionTimeoutFallsBackToTheCallsDefaultThenToNone) {
  Fixture f(Policy(3));
  CallOptions with_default;
  with_default.attempt_timeout = seconds(30);
  Call a = f.pipeline->Begin(f.clock.Now(), with_default);
  EXPECT_EQ(a.Admit(f.clock.Now()).timeout, seconds(30));
  Call b = f.pipeline->Begin(f.clock.Now());
  EXPECT_FALSE(b.Admit(f.clock.Now()).timeout.has_value());
}

TEST(PipelineTest, TestingCapStopsAtTheCapWithAttemptsExhausted) {
  Fixture f(Policy(5));
  CallOptions testing;
  testing.max_attempts = 2;
  testing.no_wait = true;
  Call call = f.pipeline->Begin(f.clock.Now(), testing);
  call.Admit(f.clock.Now());
  const Decision first = call.Record(kRetryable, f.clock.Now());
  EXPECT_TRUE(first.retry());
  EXPECT_EQ(first.delay, Duration::zero());  // no_wait
  call.Admit(f.clock.Now());
  const Decision second = call.Record(kRetryable, f.clock.Now());
  EXPECT_FALSE(second.retry());
  EXPECT_EQ(second.reason, StopReason::kAttemptsExhausted);
  EXPECT_EQ(call.attempts(), 2);
  EXPECT_EQ(call.total_delay(), Duration::zero());
  // The policy's own attempts stay in force when they are fewer.
  CallOptions generous;
  generous.max_attempts = 9;
  Fixture g(Policy(1));
  Call one = g.pipeline->Begin(g.clock.Now(), generous);
  one.Admit(g.clock.Now());
  EXPECT_EQ(one.Record(kRetryable, g.clock.Now()).reason, StopReason::kAttemptsExhausted);
}

TEST(PipelineTest, FallbackAnswersGiveUpsAndRefusalsButNotTerminalOutcomes) {
  auto breaker = Breaker(1);
  Fixture f(Policy(2), breaker.get());
  CallOptions with_fallback;
  with_fallback.fallback = true;

  Call terminal = f.pipeline->Begin(f.clock.Now(), with_fallback);
  terminal.Admit(f.clock.Now());
  const Decision t = terminal.Record(kTerminal, f.clock.Now());
  EXPECT_EQ(t.reason, StopReason::kTerminal);
  EXPECT_FALSE(t.use_fallback);

  Call gave_up = f.pipeline->Begin(f.clock.Now(), with_fallback);
  gave_up.Admit(f.clock.Now());
  ASSERT_TRUE(gave_up.Record(kRetryable, f.clock.Now()).retry());
  gave_up.Admit(f.clock.Now());
  const Decision g = gave_up.Record(kRetryable, f.clock.Now());
  EXPECT_EQ(g.reason, StopReason::kAttemptsExhausted);
  EXPECT_TRUE(g.use_fallback);  // and the breaker (threshold 1) is open now

  Call refused = f.pipeline->Begin(f.clock.Now(), with_fallback);
  const AttemptAdmission r = refused.Admit(f.clock.Now());
  EXPECT_TRUE(r.refused());
  EXPECT_EQ(r.reason, StopReason::kCircuitOpen);
  EXPECT_EQ(r.retry_in, seconds(10));
  EXPECT_TRUE(r.use_fallback);
  EXPECT_EQ(refused.RefusalStatus().message(),
            "circuit breaker 'db' is open; next probe in 10.000 s");

  Call without = f.pipeline->Begin(f.clock.Now());
  EXPECT_FALSE(without.Admit(f.clock.Now()).use_fallback);

  const MetricsSnapshot m = f.Metrics();
  EXPECT_EQ(m.calls, 4u);
  EXPECT_EQ(m.failures, 4u);
  EXPECT_EQ(m.fallbacks, 2u);  // the give-up and the first refusal
}

TEST(PipelineTest, AbandonFreesAHalfOpenProbeAndCountsTheAttemptInFlight) {
  auto breaker = Breaker(1, seconds(1));
  Fixture f(Policy(3), breaker.get());
  Call trip = f.pipeline->Begin(f.clock.Now());
  trip.Admit(f.clock.Now());
  CallOptions one;
  one.max_attempts = 1;
  Call first = f.pipeline->Begin(f.clock.Now(), one);
  first.Admit(f.clock.Now());
  first.Record(kRetryable, f.clock.Now());  // opens the breaker
  trip.Abandon(f.clock.Now(), 1);
  f.clock.Advance(seconds(1));
  Call probe = f.pipeline->Begin(f.clock.Now());
  ASSERT_TRUE(probe.Admit(f.clock.Now()).go());
  EXPECT_EQ(breaker->state(f.clock.Now()), BreakerState::kHalfOpen);
  probe.Abandon(f.clock.Now(), 1);  // the probe's slot is freed, unjudged
  EXPECT_EQ(breaker->state(f.clock.Now()), BreakerState::kHalfOpen);
  Call next = f.pipeline->Begin(f.clock.Now());
  EXPECT_TRUE(next.Admit(f.clock.Now()).go());
  next.Record(Outcome::Success(), f.clock.Now());
  EXPECT_EQ(breaker->state(f.clock.Now()), BreakerState::kClosed);
  const MetricsSnapshot m = f.Metrics();
  EXPECT_EQ(m.calls, 4u);
  EXPECT_EQ(m.successes, 1u);
  EXPECT_EQ(m.failures, 3u);
  // trip: 0 recorded + 1 in flight; first: 1; probe: 0 + 1; next: 1.
  EXPECT_EQ(m.attempts, 4u);
  EXPECT_EQ(m.in_flight, 0);
}

TEST(PipelineTest, AbandonDuringAWaitEndsTheWait) {
  Fixture f(Policy(3));
  Call call = f.pipeline->Begin(f.clock.Now());
  call.Admit(f.clock.Now());
  ASSERT_TRUE(call.Record(kRetryable, f.clock.Now()).retry());
  EXPECT_EQ(f.Metrics().waiting_to_retry, 1);
  call.Abandon(f.clock.Now());
  EXPECT_TRUE(call.finished());
  EXPECT_EQ(f.Metrics().waiting_to_retry, 0);
  EXPECT_EQ(f.Metrics().failures, 1u);
  call.Abandon(f.clock.Now());  // once only
  EXPECT_EQ(f.Metrics().failures, 1u);
}

// Issue 18: a hedged request's losing copy is cancelled, not abandoned: it
// counts neither as a success nor as a failure, frees a half-open probe
// unjudged, and the retry budget is not told (A6 token bucket 10, ratio 1:
// one failure takes 1 token, a success adds 1, a cancel neither).
TEST(PipelineTest, CancelCountsNeitherSuccessNorFailureAndChargesNothing) {
  auto breaker = Breaker(1, seconds(1));
  BudgetOptions budget_options;
  budget_options.token_bucket.max_tokens = 10;
  budget_options.token_bucket.token_ratio = 1;
  std::shared_ptr<RetryBudget> budget = std::move(RetryBudget::Create(budget_options)).value();
  RetryPolicy policy = Policy(3);
  Pipeline::Parts parts;
  MetricsRegistry registry;
  FakeClock clock;
  parts.policy = &policy;
  parts.breaker = breaker.get();
  parts.budget = budget.get();
  parts.metrics = registry.Get("svc");
  parts.clock = &clock;
  Pipeline pipeline(parts);

  CallOptions one;
  one.max_attempts = 1;
  Call failed = pipeline.Begin(clock.Now(), one);
  failed.Admit(clock.Now());
  failed.Record(kRetryable, clock.Now());  // opens the breaker; tokens 10 -> 9
  EXPECT_DOUBLE_EQ(budget->Tokens(clock.Now()), 9.0);
  clock.Advance(seconds(1));
  Call probe = pipeline.Begin(clock.Now());
  ASSERT_TRUE(probe.Admit(clock.Now()).go());
  ASSERT_EQ(breaker->state(clock.Now()), BreakerState::kHalfOpen);
  probe.Cancel(clock.Now(), 1);  // the losing copy: its probe slot is freed, unjudged
  EXPECT_TRUE(probe.finished());
  EXPECT_EQ(breaker->state(clock.Now()), BreakerState::kHalfOpen);
  EXPECT_DOUBLE_EQ(budget->Tokens(clock.Now()), 9.0);
  probe.Cancel(clock.Now(), 1);   // once only
  probe.Abandon(clock.Now(), 1);  // and an Abandon after it does nothing
  Call winner = pipeline.Begin(clock.Now());
  ASSERT_TRUE(winner.Admit(clock.Now()).go());  // the freed probe slot
  winner.Record(Outcome::Success(), clock.Now());
  EXPECT_EQ(breaker->state(clock.Now()), BreakerState::kClosed);
  EXPECT_DOUBLE_EQ(budget->Tokens(clock.Now()), 10.0);

  // A call cancelled while it waits for a retry ends the wait, and counts
  // its one recorded attempt.
  Call waiting = pipeline.Begin(clock.Now());
  waiting.Admit(clock.Now());
  ASSERT_TRUE(waiting.Record(kRetryable, clock.Now()).retry());  // tokens 10 -> 9
  waiting.Cancel(clock.Now());

  const MetricsSnapshot m = registry.Get("svc")->Snapshot();
  EXPECT_EQ(m.calls, 4u);
  EXPECT_EQ(m.successes, 1u);
  EXPECT_EQ(m.failures, 1u);   // `failed` only
  EXPECT_EQ(m.cancelled, 2u);  // the probe and the waiting call
  // failed 1 + probe 0 recorded + 1 in flight + winner 1 + waiting 1.
  EXPECT_EQ(m.attempts, 4u);
  EXPECT_EQ(m.in_flight, 0);
  EXPECT_EQ(m.waiting_to_retry, 0);
  EXPECT_EQ(m.attempts_per_call.count, 4u);
  // Cancelled calls are not timed: two durations (failed, winner).
  EXPECT_EQ(m.call_duration_seconds.count, 2u);
  EXPECT_NE(registry.ToPrometheus().find("mulligan_cancelled_total{name=\"svc\"} 2\n"),
            std::string::npos);
}

TEST(PipelineTest, DestroyingOrMovingACallAbandonsItOnce) {
  Fixture f(Policy(3));
  {
    Call call = f.pipeline->Begin(f.clock.Now());
    call.Admit(f.clock.Now());
    Call moved = std::move(call);
    EXPECT_TRUE(call.finished());  // NOLINT(bugprone-use-after-move): the contract
    EXPECT_FALSE(moved.finished());
  }
  const MetricsSnapshot m = f.Metrics();
  EXPECT_EQ(m.calls, 1u);
  EXPECT_EQ(m.failures, 1u);
  EXPECT_EQ(m.attempts, 1u);  // the admitted attempt counts as made
  EXPECT_EQ(m.in_flight, 0);
}

TEST(PipelineTest, RecordWithoutAdmitCountsAnUnguardedAttempt) {
  Fixture f(Policy(3));
  const TimePoint start = f.clock.Now();
  Call call = f.pipeline->Begin(start);
  f.clock.Advance(milliseconds(5));
  const Decision d = call.Record(kRetryable, f.clock.Now());
  EXPECT_TRUE(d.retry());
  EXPECT_EQ(d.attempt, 1);
  f.clock.Advance(d.delay);
  EXPECT_EQ(call.Record(Outcome::Success(), f.clock.Now()).reason, StopReason::kSucceeded);
  const MetricsSnapshot m = f.Metrics();
  EXPECT_EQ(m.attempts, 2u);
  EXPECT_EQ(m.retries, 1u);
  EXPECT_EQ(m.successes, 1u);
  EXPECT_EQ(m.waiting_to_retry, 0);
}

TEST(PipelineTest, AdmitTwiceTakesOnePermit) {
  auto breaker = Breaker(1, seconds(1));
  Fixture f(Policy(1), breaker.get());
  Call trip = f.pipeline->Begin(f.clock.Now());
  trip.Admit(f.clock.Now());
  trip.Record(kRetryable, f.clock.Now());
  f.clock.Advance(seconds(1));
  Call probe = f.pipeline->Begin(f.clock.Now());
  EXPECT_TRUE(probe.Admit(f.clock.Now()).go());
  // A second Admit would be refused (one probe slot) if it acquired again.
  EXPECT_TRUE(probe.Admit(f.clock.Now()).go());
  EXPECT_EQ(breaker->counts(f.clock.Now()).rejected, 0u);
}

TEST(PipelineTest, PerAttemptRecordingOpensTheBreakerMidCall) {
  auto breaker = Breaker(2);
  RetryPolicy policy = Policy(5);
  FakeClock clock;
  Pipeline::Parts parts;
  parts.policy = &policy;
  parts.breaker = breaker.get();
  parts.breaker_per_attempt = true;
  const Pipeline pipeline(parts);
  Call call = pipeline.Begin(clock.Now());
  call.Admit(clock.Now());
  ASSERT_TRUE(call.Record(kRetryable, clock.Now()).retry());
  call.Admit(clock.Now());
  ASSERT_TRUE(call.Record(kRetryable, clock.Now()).retry());  // the second failure trips it
  EXPECT_EQ(breaker->state(clock.Now()), BreakerState::kOpen);
  EXPECT_TRUE(call.Admit(clock.Now()).refused());
  EXPECT_EQ(call.attempts(), 2);
}

TEST(PipelineTest, OneResultPerCallByDefault) {
  auto breaker = Breaker(2);
  Fixture f(Policy(5), breaker.get());
  Call call = f.pipeline->Begin(f.clock.Now());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(call.Admit(f.clock.Now()).go());
    ASSERT_TRUE(call.Record(kRetryable, f.clock.Now()).retry());
  }
  // Three failed attempts, no result recorded yet: still closed, no failure.
  EXPECT_EQ(breaker->state(f.clock.Now()), BreakerState::kClosed);
  EXPECT_EQ(breaker->counts(f.clock.Now()).failures, 0u);
  call.Admit(f.clock.Now());
  call.Record(Outcome::Success(), f.clock.Now());
  EXPECT_EQ(breaker->counts(f.clock.Now()).successes, 1u);
  EXPECT_EQ(breaker->counts(f.clock.Now()).calls, 1u);
}

TEST(PipelineTest, BreakersByKeyFromARegistryAndMetricsByKey) {
  BreakerRegistryOptions registry_options;
  registry_options.breaker.failure_threshold = 1;
  registry_options.breaker.report_metrics = false;
  auto breakers = std::shared_ptr<BreakerRegistry>(
      std::move(BreakerRegistry::Create(registry_options)).value());
  MetricsRegistry metrics;
  PipelineOptions options;
  options.retry.max_attempts = 1;
  options.breakers = breakers;
  options.metrics_registry = &metrics;
  auto pipeline = std::move(Pipeline::Create(options)).value();
  FakeClock clock;
  CallOptions a;
  a.key = "http://a:80";
  Call down = pipeline->Begin(clock.Now(), a);
  down.Admit(clock.Now());
  down.Record(kRetryable, clock.Now());
  EXPECT_TRUE(pipeline->Begin(clock.Now(), a).Admit(clock.Now()).refused());
  CallOptions b;
  b.key = "http://b:80";
  Call other = pipeline->Begin(clock.Now(), b);
  EXPECT_TRUE(other.Admit(clock.Now()).go());
  EXPECT_EQ(other.breaker()->name(), "http://b:80");
  other.Record(Outcome::Success(), clock.Now());
  Call unkeyed = pipeline->Begin(clock.Now());  // no key: no breaker, no metrics
  EXPECT_EQ(unkeyed.breaker(), nullptr);
  EXPECT_EQ(unkeyed.metrics(), nullptr);
  unkeyed.Record(Outcome::Success(), clock.Now());
  EXPECT_EQ(metrics.Get("http://a:80")->Snapshot().failures, 2u);  // a give-up, a refusal
  EXPECT_EQ(metrics.Get("http://b:80")->Snapshot().successes, 1u);
}

TEST(PipelineTest, CreateValidatesOnce) {
  PipelineOptions bad_retry;
  bad_retry.retry.max_attempts = 0;
  Result<std::unique_ptr<Pipeline>> r = Pipeline::Create(bad_retry);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "max_attempts must be >= 1, got 0");

  PipelineOptions both;
  both.breaker = std::shared_ptr<CircuitBreaker>(Breaker(1));
  both.breakers = std::shared_ptr<BreakerRegistry>(
      std::move(BreakerRegistry::Create(BreakerRegistryOptions{})).value());
  r = Pipeline::Create(both);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);

  PipelineOptions named;
  named.name = "payments";
  MetricsRegistry metrics;
  named.metrics_registry = &metrics;
  auto ok = std::move(Pipeline::Create(named)).value();
  EXPECT_EQ(ok->name(), "payments");
  FakeClock clock;
  ok->Begin(clock.Now()).Record(Outcome::Success(), clock.Now());
  EXPECT_EQ(metrics.Get("payments")->Snapshot().successes, 1u);
}

TEST(PipelineTest, AStaleResultChangesNothing) {
  auto breaker = Breaker(1);
  Fixture f(Policy(1), breaker.get());
  Call call = f.pipeline->Begin(f.clock.Now());
  ASSERT_TRUE(call.Admit(f.clock.Now()).go());
  breaker->ForceOpen(f.clock.Now());  // a new generation while the attempt runs
  breaker->Reset(f.clock.Now());
  call.Record(kRetryable, f.clock.Now());
  EXPECT_EQ(breaker->state(f.clock.Now()), BreakerState::kClosed);
  EXPECT_EQ(breaker->counts(f.clock.Now()).failures, 0u);
}

}  // namespace
}  // namespace mulligan
