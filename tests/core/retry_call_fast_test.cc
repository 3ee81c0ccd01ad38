// RetryCall's first-attempt fast path (0.6, issue 19): a first attempt that
// succeeds is counted without a pipeline; one that fails goes through the
// pipeline as attempt 1. Fake clocks that count their reads; no sleeping.
#include "mulligan/retry/call.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <atomic>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace mulligan {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// A FakeClock that counts how often it is read.
class CountingClock final : public Clock {
 public:
  TimePoint Now() const override {
    reads_.fetch_add(1, std::memory_order_relaxed);
    return fake_.Now();
  }
  WallTime WallNow() const override { return fake_.WallNow(); }
  void SleepFor(Duration duration) override { fake_.SleepFor(duration); }
  void Advance(Duration duration) { fake_.Advance(duration); }
  int reads() const { return reads_.load(std::memory_order_relaxed); }

 private:
  FakeClock fake_;
  mutable std::atomic<int> reads_{0};
};

RetryPolicy NoJitterPolicy(int attempts, std::optional<Duration> deadline = std::nullopt) {
  RetryOptions options;
  options.max_attempts = attempts;
  options.backoff.jitter = JitterKind::kNone;
  options.deadline = deadline;
  return std::move(RetryPolicy::Create(options)).value();
}

TEST(RetryCallFastTest, FirstAttemptSuccessIsCountedUntimedWithoutReadingTheClock) {
  MetricsRegistry registry;
  RetryPolicy policy = NoJitterPolicy(3);
  CountingClock clock;
  RetryCallOptions options;
  options.clock = &clock;
  options.metrics = registry.Get("fast");
  int seen_attempt = 0;
  Result<int> result = RetryCall(
      policy,
      [&](int attempt) -> Result<int> {
        seen_attempt = attempt;
        return 41;
      },
      options);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(*result, 41);
  EXPECT_EQ(seen_attempt, 1);
  EXPECT_EQ(clock.reads(), 0);
  MetricsSnapshot s = options.metrics->Snapshot();
  EXPECT_EQ(s.calls, 1u);
  EXPECT_EQ(s.attempts, 1u);
  EXPECT_EQ(s.successes, 1u);
  EXPECT_EQ(s.failures, 0u);
  EXPECT_EQ(s.retries, 0u);
  EXPECT_EQ(s.in_flight, 0);
  EXPECT_EQ(s.attempts_per_call.count, 1u);
  EXPECT_EQ(s.attempts_per_call.counts[0], 1u);
  EXPECT_DOUBLE_EQ(s.attempts_per_call.sum, 1.0);
  // Untimed: no clock was read, so the duration histogram holds no sample.
  EXPECT_EQ(s.call_duration_seconds.count, 0u);
}

TEST(RetryCallFastTest, TwoThreadsOfFastSuccessesAreCountedExactly) {
  MetricsRegistry registry;
  RetryPolicy policy = RetryPolicy::Default();
  RetryCallOptions options;
  options.metrics = registry.Get("fast-threads");
  constexpr int kPerThread = 20000;
  auto run = [&] {
    for (int i = 0; i < kPerThread; ++i) {
      Status status = RetryCall(policy, [] { return OkStatus(); }, options);
      ASSERT_TRUE(status.ok());
    }
  };
  // A reader snapshots while the writers run (ThreadSanitizer checks the
  // shards' relaxed load+store against it); every reading is consistent.
  std::atomic<bool> done{false};
  std::thread reader([&] {
    while (!done.load(std::memory_order_acquire)) {
      MetricsSnapshot s = options.metrics->Snapshot();
      EXPECT_EQ(s.calls, s.successes);
      EXPECT_EQ(s.in_flight, 0);
    }
  });
  std::thread a(run), b(run);
  a.join();
  b.join();
  done.store(true, std::memory_order_release);
  reader.join();

  MetricsSnapshot s = options.metrics->Snapshot();
  const uint64_t n = 2 * kPerThread;
  EXPECT_EQ(s.calls, n);
  EXPECT_EQ(s.attempts, n);
  EXPECT_EQ(s.successes, n);
  EXPECT_EQ(s.failures, 0u);
  EXPECT_EQ(s.in_flight, 0);
  EXPECT_EQ(s.attempts_per_call.count, n);
  EXPECT_EQ(s.attempts_per_call.counts[0], n);
  // The exporters read the same snapshot.
  const std::string text = registry.ToPrometheus();
  EXPECT_NE(text.find("mulligan_calls_total{name=\"fast-threads\"} 40000\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("mulligan_successes_total{name=\"fast-threads\"} 40000\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("mulligan_attempts_total{name=\"fast-threads\"} 40000\n"),
            std::string::npos)
      << text;
  boost::json::value doc = boost::json::parse(registry.ToJson());
  const boost::json::object& entry = doc.at("metrics").as_array().at(0).as_object();
  EXPECT_EQ(entry.at("name").as_string(), "fast-threads");
  EXPECT_EQ(entry.at("calls").to_number<int64_t>(), 40000);
  EXPECT_EQ(entry.at("attempts").to_number<int64_t>(), 40000);
  EXPECT_EQ(entry.at("successes").to_number<int64_t>(), 40000);
  EXPECT_EQ(doc.at("totals").at("calls").to_number<int64_t>(), 40000);
  EXPECT_EQ(doc.at("totals").at("successes").to_number<int64_t>(), 40000);
}

TEST(RetryCallFastTest, FastAndPipelineCallsAddUp) {
  MetricsRegistry registry;
  RetryPolicy policy = NoJitterPolicy(3);
  FakeClock clock;
  RetryCallOptions options;
  options.clock = &clock;
  options.metrics = registry.Get("mixed");
  ASSERT_TRUE(RetryCall(policy, [] { return OkStatus(); }, options).ok());
  int calls = 0;
  ASSERT_TRUE(RetryCall(
                  policy,
                  [&]() -> Status {
                    if (++calls < 2) return TransportError("reset");
                    return OkStatus();
                  },
                  options)
                  .ok());
  MetricsSnapshot s = options.metrics->Snapshot();
  EXPECT_EQ(s.calls, 2u);
  EXPECT_EQ(s.attempts, 3u);
  EXPECT_EQ(s.retries, 1u);
  EXPECT_EQ(s.successes, 2u);
  EXPECT_EQ(s.in_flight, 0);
  EXPECT_EQ(s.attempts_per_call.counts[0], 1u);  // the fast one: 1 attempt
  EXPECT_EQ(s.attempts_per_call.counts[1], 1u);  // the retried one: 2
  EXPECT_EQ(s.call_duration_seconds.count, 1u);  // only the retried one is timed
  EXPECT_DOUBLE_EQ(s.retry_delay_seconds.sum, 0.2);
}

TEST(RetryCallFastTest, WithoutADeadlineAFailedCallStartsWhenItsFirstAttemptEnded) {
  MetricsRegistry registry;
  RetryPolicy policy = NoJitterPolicy(3);
  CountingClock clock;
  RetryCallOptions options;
  options.clock = &clock;
  options.metrics = registry.Get("slow-first");
  int calls = 0;
  Status status = RetryCall(
      policy,
      [&]() -> Status {
        clock.Advance(seconds(1));  // each attempt takes 1 s
        if (++calls < 2) return TransportError("reset");
        return OkStatus();
      },
      options);
  ASSERT_TRUE(status.ok());
  MetricsSnapshot s = options.metrics->Snapshot();
  // Start at 1 s (the first attempt's end), then 200 ms of backoff and the
  // second attempt's 1 s: ended at 2.2 s, so 1.2 s. One read after the
  // first attempt, one after the wait, one after the second attempt.
  EXPECT_EQ(s.call_duration_seconds.count, 1u);
  EXPECT_DOUBLE_EQ(s.call_duration_seconds.sum, 1.2);
  EXPECT_EQ(clock.reads(), 3);
}

TEST(RetryCallFastTest, ADeadlineIsMeasuredFromBeforeTheFirstAttempt) {
  RetryPolicy policy = NoJitterPolicy(5, seconds(1));
  CountingClock clock;
  RetryCallOptions options;
  options.clock = &clock;
  int calls = 0;
  int retries = 0;
  options.on_retry = [&](const RetryEvent&) { ++retries; };
  Status status = RetryCall(
      policy,
      [&]() -> Status {
        ++calls;
        clock.Advance(seconds(2));  // longer than the whole deadline
        return TransportError("reset");
      },
      options);
  EXPECT_EQ(status.code(), StatusCode::kTransport);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(retries, 0);

  // A success under a deadline reads the start (and nothing else without
  // metrics or info).
  CountingClock quiet;
  options.clock = &quiet;
  ASSERT_TRUE(RetryCall(policy, [] { return OkStatus(); }, options).ok());
  EXPECT_EQ(quiet.reads(), 1);
}

TEST(RetryCallFastTest, InfoAndTimedMetricsOnAFastSuccess) {
  MetricsRegistry registry;
  RetryPolicy policy = NoJitterPolicy(3);
  CountingClock clock;
  RetryCallInfo info;
  info.attempts = 99;  // overwritten
  RetryCallOptions options;
  options.clock = &clock;
  options.info = &info;
  options.metrics = registry.Get("with-info");
  Status status = RetryCall(
      policy,
      [&] {
        clock.Advance(milliseconds(5));
        return OkStatus();
      },
      options);
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(info.attempts, 1);
  EXPECT_EQ(info.stop_reason, StopReason::kSucceeded);
  EXPECT_EQ(info.elapsed, milliseconds(5));
  EXPECT_EQ(info.total_delay, Duration::zero());
  EXPECT_FALSE(info.circuit_open);
  EXPECT_FALSE(info.fallback_used);
  EXPECT_EQ(clock.reads(), 2);  // start and end
  MetricsSnapshot s = options.metrics->Snapshot();
  EXPECT_EQ(s.calls, 1u);
  EXPECT_EQ(s.successes, 1u);
  EXPECT_EQ(s.call_duration_seconds.count, 1u);  // timed: the clock was read anyway
  EXPECT_DOUBLE_EQ(s.call_duration_seconds.sum, 0.005);
}

TEST(RetryCallFastTest, ListenersSeeEveryEventOfAFirstAttemptSuccess) {
  MetricsRegistry registry;
  std::vector<EventKind> kinds;
  registry.AddListener([&](const Event& e) { kinds.push_back(e.kind); });
  RetryPolicy policy = NoJitterPolicy(3);
  FakeClock clock;
  RetryCallOptions options;
  options.clock = &clock;
  options.metrics = registry.Get("heard");
  ASSERT_TRUE(RetryCall(policy, [] { return OkStatus(); }, options).ok());
  EXPECT_EQ(kinds, (std::vector<EventKind>{EventKind::kAttemptStarted, EventKind::kSucceeded}));
  EXPECT_EQ(options.metrics->Snapshot().call_duration_seconds.count, 1u);
}

TEST(RetryCallFastTest, AnExceptionOnTheFirstAttemptIsCountedAsToday) {
  MetricsRegistry registry;
  RetryPolicy policy = NoJitterPolicy(3);
  FakeClock clock;
  RetryCallOptions options;
  options.clock = &clock;
  options.metrics = registry.Get("threw");
  EXPECT_THROW((void)RetryCall(
                   policy, []() -> Status { throw std::runtime_error("boom"); }, options),
               std::runtime_error);
  int calls = 0;
  options.retry_on_exception = [](const std::exception_ptr&) { return true; };
  Status status = RetryCall(
      policy,
      [&]() -> Status {
        if (++calls < 2) throw std::runtime_error("once");
        return OkStatus();
      },
      options);
  EXPECT_TRUE(status.ok());
  MetricsSnapshot s = options.metrics->Snapshot();
  EXPECT_EQ(s.calls, 2u);
  EXPECT_EQ(s.attempts, 3u);
  EXPECT_EQ(s.failures, 1u);
  EXPECT_EQ(s.successes, 1u);
  EXPECT_EQ(s.retries_by_reason[static_cast<int>(RetryReason::kException)], 1u);
  EXPECT_EQ(s.in_flight, 0);
}

TEST(RetryCallFastTest, AFastSuccessEarnsForATokenBucketBudget) {
  BudgetOptions budget_options;
  budget_options.kind = BudgetKind::kTokenBucket;
  budget_options.token_bucket.max_tokens = 10;
  budget_options.token_bucket.token_ratio = 0.5;
  std::shared_ptr<RetryBudget> budget =
      std::move(RetryBudget::Create(budget_options)).value();
  FakeClock clock;
  // Two failures take 2 tokens (10 -> 8); two fast successes earn 2 x 0.5.
  for (int i = 0; i < 2; ++i) budget->OnFailure(BudgetFailure::kOther, clock.Now());
  ASSERT_DOUBLE_EQ(budget->Tokens(clock.Now()), 8.0);
  RetryPolicy policy = NoJitterPolicy(3);
  RetryCallOptions options;
  options.clock = &clock;
  options.budget = budget.get();
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(RetryCall(policy, [] { return OkStatus(); }, options).ok());
  }
  EXPECT_DOUBLE_EQ(budget->Tokens(clock.Now()), 9.0);
}

// A value that cannot be assigned: RetryCall takes the full path (the fast
// path assigns the pipeline's answer to the first attempt's value).
struct Fixed {
  const int value;
};

TEST(RetryCallFastTest, AResultOfAnUnassignableTypeTakesTheFullPath) {
  static_assert(!std::is_move_assignable_v<Result<Fixed>>);
  MetricsRegistry registry;
  RetryPolicy policy = NoJitterPolicy(3);
  CountingClock clock;
  RetryCallOptions options;
  options.clock = &clock;
  options.metrics = registry.Get("fixed");
  int calls = 0;
  Result<Fixed> result = RetryCall(
      policy,
      [&]() -> Result<Fixed> {
        if (++calls < 2) return TransportError("reset");
        return Fixed{3};
      },
      options);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->value, 3);
  EXPECT_EQ(calls, 2);
  Result<Fixed> at_once = RetryCall(policy, []() -> Result<Fixed> { return Fixed{4}; }, options);
  ASSERT_TRUE(at_once.ok());
  EXPECT_EQ(at_once->value, 4);
  MetricsSnapshot s = options.metrics->Snapshot();
  EXPECT_EQ(s.calls, 2u);
  EXPECT_EQ(s.attempts, 3u);
  EXPECT_EQ(s.successes, 2u);
  EXPECT_EQ(s.call_duration_seconds.count, 2u);  // both timed: the full path reads the clock
}

}  // namespace
}  // namespace mulligan
