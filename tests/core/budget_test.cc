// Retry budgets and adaptive throttling (budget/budget.h, budget/throttle.h):
// bad options refused by field, counts conserved under 8 threads, and the
// gates through the pipeline and RetryCall. The arithmetic itself is in
// budget_vectors_test.cc (tests/vectors/budget.json).
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "mulligan/budget/budget.h"
#include "mulligan/budget/throttle.h"
#include "mulligan/pipeline/pipeline.h"
#include "mulligan/retry/call.h"

namespace mulligan {
namespace {

std::string ErrorOf(const BudgetOptions& options) {
  Result<std::shared_ptr<RetryBudget>> made = RetryBudget::Create(options);
  EXPECT_FALSE(made.ok());
  return made.ok() ? "" : made.status().message();
}

TEST(BudgetOptions, BadValuesAreRefusedNamingTheField) {
  BudgetOptions o;
  o.name = "b";
  o.token_bucket.max_tokens = 0;
  EXPECT_NE(ErrorOf(o).find("token_bucket.max_tokens"), std::string::npos);
  o.token_bucket.max_tokens = 1001;
  EXPECT_NE(ErrorOf(o).find("token_bucket.max_tokens"), std::string::npos);
  o.token_bucket.max_tokens = 10;
  o.token_bucket.token_ratio = -1;
  EXPECT_NE(ErrorOf(o).find("token_bucket.token_ratio"), std::string::npos);
  o.token_bucket.token_ratio = 0.0004;  // below A6's 3 decimals
  EXPECT_NE(ErrorOf(o).find("token_bucket.token_ratio"), std::string::npos);

  BudgetOptions q;
  q.kind = BudgetKind::kQuota;
  q.quota.capacity = 0;
  EXPECT_NE(ErrorOf(q).find("quota.capacity must be > 0"), std::string::npos);
  q.quota.capacity = 500;
  q.quota.timeout_cost = -1;
  EXPECT_NE(ErrorOf(q).find("quota.timeout_cost"), std::string::npos);

  BudgetOptions r;
  r.kind = BudgetKind::kRatio;
  r.ratio.percent = 1.5;
  EXPECT_NE(ErrorOf(r).find("ratio.percent"), std::string::npos);
  r.ratio.percent = -0.1;
  EXPECT_NE(ErrorOf(r).find("ratio.percent"), std::string::npos);
  r.ratio.percent = 0.2;
  r.ratio.ttl = std::chrono::milliseconds(500);
  EXPECT_NE(ErrorOf(r).find("ratio.ttl"), std::string::npos);
  r.ratio.ttl = std::chrono::seconds(10);
  r.ratio.min_retries_per_second = -1;
  EXPECT_NE(ErrorOf(r).find("ratio.min_retries_per_second"), std::string::npos);
}

TEST(ThrottleOptions, BadValuesAreRefusedNamingTheField) {
  ThrottleOptions o;
  o.k = 0.5;
  Result<std::shared_ptr<AdaptiveThrottle>> made = AdaptiveThrottle::Create(o);
  ASSERT_FALSE(made.ok());
  EXPECT_NE(made.status().message().find("k must be >= 1"), std::string::npos);
  o.k = 2;
  o.window = Duration::zero();
  made = AdaptiveThrottle::Create(o);
  ASSERT_FALSE(made.ok());
  EXPECT_NE(made.status().message().find("window"), std::string::npos);
}

TEST(BudgetShared, OneBudgetPerName) {
  RetryBudget::ClearShared();
  BudgetOptions o;
  o.name = "shared-x";
  auto a = RetryBudget::Shared(o);
  o.token_bucket.max_tokens = 5;  // ignored: the budget exists
  auto b = RetryBudget::Shared(o);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a.value().get(), b.value().get());
  EXPECT_DOUBLE_EQ(b.value()->options().token_bucket.max_tokens, 100.0);
  RetryBudget::ClearShared();
}

// 8 threads, each 10,000 failures and 10,000 successes on a quota: every
// retry is either allowed or refused (none lost), and capacity never leaves
// [0, capacity]. Run under TSan by scripts/test.sh.
TEST(BudgetConcurrency, CountsAreConservedUnderEightThreads) {
  for (BudgetKind kind : {BudgetKind::kTokenBucket, BudgetKind::kQuota, BudgetKind::kRatio}) {
    BudgetOptions o;
    o.kind = kind;
    auto budget = RetryBudget::Create(o).value();
    constexpr int kThreads = 8, kEach = 10000;
    std::vector<std::thread> threads;
    const TimePoint now{};
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&budget, now] {
        for (int i = 0; i < kEach; ++i) {
          budget->OnCallStarted(now);
          budget->OnFailure(BudgetFailure::kOther, now);
          (void)budget->TryRetry(BudgetFailure::kOther, now);
          budget->AddSuccesses(1);
        }
      });
    }
    for (auto& thread : threads) thread.join();
    EXPECT_EQ(budget->allowed() + budget->refused(), uint64_t{kThreads} * kEach);
    const double tokens = budget->Tokens(now);
    EXPECT_GE(tokens, kind == BudgetKind::kRatio ? -1e9 : 0.0);
    if (kind == BudgetKind::kTokenBucket) {
      EXPECT_LE(tokens, 100.0);
    }
    if (kind == BudgetKind::kQuota) {
      EXPECT_LE(tokens, 500.0);
    }
  }
  // The token bucket's sum is exact when nothing clamps: 8 x 10 failures
  // take 80 of 100 tokens, then 8 x 10 successes of 0.5 add 40.
  BudgetOptions o;
  auto budget = RetryBudget::Create(o).value();
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&budget] {
      for (int i = 0; i < 10; ++i) budget->OnFailure(BudgetFailure::kOther, TimePoint{});
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_DOUBLE_EQ(budget->Tokens(TimePoint{}), 20.0);
  threads.clear();
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&budget] {
      for (int i = 0; i < 10; ++i) budget->AddSuccesses(1);
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_DOUBLE_EQ(budget->Tokens(TimePoint{}), 60.0);
}

RetryPolicy Policy(int attempts) {
  RetryOptions options;
  options.max_attempts = attempts;
  options.backoff.jitter = JitterKind::kNone;
  return std::move(RetryPolicy::Create(options)).value();
}

// A6 max 10: five failing calls of 3 attempts. Tokens 10 -> each failed
// attempt takes 1; a retry needs tokens > 5 after the failure. Call 1:
// 9 (retry), 8 (retry), 7 (attempts exhausted) = 3 attempts; call 2: 6 (retry),
// 5 (refused: budget) = 2 attempts; call 3: 4 refused = 1 attempt; so on.
TEST(BudgetPipeline, RetryCallStopsWithBudgetAndKeepsTheLastError) {
  BudgetOptions o;
  o.token_bucket.max_tokens = 10;
  o.token_bucket.token_ratio = 0.1;
  auto budget = RetryBudget::Create(o).value();
  FakeClock clock;
  const RetryPolicy policy = Policy(3);
  const int expected_attempts[] = {3, 2, 1, 1};
  const StopReason expected_reason[] = {StopReason::kAttemptsExhausted, StopReason::kBudget,
                                        StopReason::kBudget, StopReason::kBudget};
  for (int call = 0; call < 4; ++call) {
    RetryCallInfo info;
    RetryCallOptions options;
    options.clock = &clock;
    options.budget = budget.get();
    options.info = &info;
    int attempts = 0;
    Status status = RetryCall(policy, [&] {
      ++attempts;
      return UnavailableError("down " + std::to_string(attempts));
    }, options);
    EXPECT_EQ(info.attempts, expected_attempts[call]) << call;
    EXPECT_EQ(info.stop_reason, expected_reason[call]) << call;
    EXPECT_EQ(status.code(), StatusCode::kUnavailable);
    EXPECT_EQ(status.message(), "down " + std::to_string(attempts));
  }
  EXPECT_DOUBLE_EQ(budget->Tokens(clock.Now()), 3.0);
  // A success adds 0.1; the first attempt is never refused.
  RetryCallOptions options;
  options.clock = &clock;
  options.budget = budget.get();
  EXPECT_TRUE(RetryCall(policy, [] { return OkStatus(); }, options).ok());
  EXPECT_DOUBLE_EQ(budget->Tokens(clock.Now()), 3.1);
}

TEST(BudgetPipeline, AQuotaRefundsTheLastRetryOnSuccess) {
  BudgetOptions o;
  o.kind = BudgetKind::kQuota;
  auto budget = RetryBudget::Create(o).value();
  FakeClock clock;
  const RetryPolicy policy = Policy(3);
  RetryCallOptions options;
  options.clock = &clock;
  options.budget = budget.get();
  int n = 0;
  // Two failures, then a success: retries cost 5 + 5, the success refunds 5.
  Status status = RetryCall(policy, [&] { return ++n < 3 ? UnavailableError("x") : OkStatus(); },
                            options);
  EXPECT_TRUE(status.ok());
  EXPECT_DOUBLE_EQ(budget->Tokens(clock.Now()), 495.0);
}

TEST(ThrottlePipeline, ARejectedCallStopsWithThrottledAndIsNotRetried) {
  ThrottleOptions t;
  t.name = "api";
  t.seed = 7;
  auto throttle = AdaptiveThrottle::Create(t).value();
  FakeClock clock;
  // Fill the window with overload answers: p tends to 1.
  for (int i = 0; i < 1000; ++i) {
    (void)throttle->Admit(clock.Now());
    throttle->Record(Outcome::Http(429));
  }
  EXPECT_GT(throttle->Probability(clock.Now()), 0.99);
  const RetryPolicy policy = Policy(3);
  int rejected = 0;
  for (int i = 0; i < 20; ++i) {
    RetryCallInfo info;
    RetryCallOptions options;
    options.clock = &clock;
    options.throttle = throttle.get();
    options.info = &info;
    Status status = RetryCall(policy, [] { return UnavailableError("x"); }, options);
    if (status.code() == StatusCode::kThrottled) {
      ++rejected;
      EXPECT_EQ(info.stop_reason, StopReason::kThrottled);
      EXPECT_NE(status.message().find("'api'"), std::string::npos);
    }
  }
  EXPECT_GE(rejected, 18);
}

TEST(ThrottlePipeline, OverloadAnswersAreNotAccepts) {
  EXPECT_TRUE(IsOverloadAnswer(Outcome::Http(429)));
  EXPECT_TRUE(IsOverloadAnswer(Outcome::Http(503)));
  EXPECT_FALSE(IsOverloadAnswer(Outcome::Http(500)));
  EXPECT_FALSE(IsOverloadAnswer(Outcome::Http(404)));
  EXPECT_FALSE(IsOverloadAnswer(Outcome::Success()));
  Outcome grpc;
  grpc.grpc_status = 8;
  EXPECT_TRUE(IsOverloadAnswer(grpc));
  grpc.grpc_status = 13;
  EXPECT_FALSE(IsOverloadAnswer(grpc));
}

// A failure the caller classified as an overload answer (Outcome::overload,
// the Python decorator's is_throttling judge) is not an accept. Script, K = 2:
// 4 successes, then 5 marked failures. p stays 0 at every Admit (requests
// never exceed 2 * 4 = 8 before the last one), so nothing is drawn; after it,
// requests 9, accepts 4: p = (9 - 2 * 4) / (9 + 1) = 0.1. Unmarked, the same
// failures are accepts: requests 9, accepts 9, p = 0.
TEST(ThrottlePipeline, ACallerMarkedOverloadIsNotAnAccept) {
  Outcome marked = Outcome::Failure(true);
  marked.overload = true;
  EXPECT_TRUE(IsOverloadAnswer(marked));
  EXPECT_FALSE(IsOverloadAnswer(Outcome::Failure(true)));
  for (bool mark : {true, false}) {
    ThrottleOptions t;
    t.seed = 1;
    auto throttle = AdaptiveThrottle::Create(t).value();
    FakeClock clock;
    for (int i = 0; i < 4; ++i) {
      ASSERT_TRUE(throttle->Admit(clock.Now()));
      throttle->Record(Outcome::Success());
    }
    for (int i = 0; i < 5; ++i) {
      ASSERT_TRUE(throttle->Admit(clock.Now())) << i;
      throttle->Record(mark ? marked : Outcome::Failure(true));
    }
    EXPECT_EQ(throttle->Requests(clock.Now()), 9);
    EXPECT_EQ(throttle->Accepts(clock.Now()), mark ? 4 : 9);
    EXPECT_DOUBLE_EQ(throttle->Probability(clock.Now()), mark ? 0.1 : 0.0);
  }
}

}  // namespace
}  // namespace mulligan
