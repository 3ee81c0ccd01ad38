// tests/core/http_budget_test.cc — the HTTP client's retry budgets (issue 14),
// limits and connection cap (issue 15), end to end against a real nginx
// (http_fixture.h).
//
// The attempt counts below are worked out by hand from gRFC A6's arithmetic
// (grpc/proposal A6-client-retries.md, "Throttling Retry Attempts"): tokens
// start at max_tokens; every failed attempt takes 1, every success adds
// token_ratio; a retry is allowed only while tokens > max_tokens / 2.

#include <algorithm>
#include <thread>
#include <vector>

#include "http_fixture.h"

namespace mulligan {
namespace http_test {
namespace {

// A client retrying 3 times without waiting, with an A6 budget per origin of
// `max_tokens` and `ratio` (or none: nullopt).
std::unique_ptr<HttpClient> BudgetClient(std::optional<std::pair<double, double>> budget,
                                         std::shared_ptr<RetryBudget> shared = nullptr) {
  HttpClientOptions options;
  options.retry = FastRetry(3);
  options.report_metrics = false;
  if (budget) {
    options.retry_budget->token_bucket.max_tokens = budget->first;
    options.retry_budget->token_bucket.token_ratio = budget->second;
  } else {
    options.retry_budget.reset();
  }
  options.shared_budget = std::move(shared);
  Result<std::unique_ptr<HttpClient>> client = HttpClient::Create(options);
  EXPECT_TRUE(client.ok()) << client.status().ToString();
  return client.ok() ? std::move(client).value() : nullptr;
}

// The attempts of one GET of `url`, no waits; `reason` and `status` the
// response's.
int Attempts(HttpClient& client, const std::string& url, StopReason* reason = nullptr,
             int* status = nullptr) {
  HttpRequest request;
  request.url = url;
  request.no_wait = true;
  Result<HttpResponse> response = client.Send(request);
  EXPECT_TRUE(response.ok()) << response.status().ToString();
  if (!response.ok()) return -1;
  if (reason != nullptr) *reason = response->stop_reason;
  if (status != nullptr) *status = response->status;
  return response->attempts;
}

// "http://127.0.0.1:PORT/x" -> "http://localhost:PORT/x": the same nginx
// under another origin.
std::string OtherOrigin(const std::string& path) {
  std::string url = Url(path);
  url.replace(url.find("127.0.0.1"), 9, "localhost");
  return url;
}

TEST(HttpBudgetTest, DefaultIsAnA6TokenBucketOf100AndAHalfPerOrigin) {
  const HttpClientOptions options;
  ASSERT_TRUE(options.retry_budget.has_value());
  EXPECT_EQ(options.retry_budget->kind, BudgetKind::kTokenBucket);
  EXPECT_EQ(options.retry_budget->token_bucket.max_tokens, 100.0);
  EXPECT_EQ(options.retry_budget->token_bucket.token_ratio, 0.5);
  EXPECT_EQ(options.shared_budget, nullptr);
}

TEST(HttpBudgetTest, ScriptedOutageFollowsTheA6Arithmetic) {
  auto client = BudgetClient(std::make_pair(10.0, 0.5));
  ASSERT_NE(client, nullptr);
  ClearLog();
  // Outage. Call 1: 10 -> 9 (retry, 9 > 5) -> 8 (retry) -> 7 (attempts
  // exhausted). Call 2: 7 -> 6 (retry) -> 5 (5 > 5 is false: refused).
  // Calls 3-5: 5 -> 4, 4 -> 3, 3 -> 2, each refused after its first.
  const std::vector<int> want = {3, 2, 1, 1, 1};
  for (size_t i = 0; i < want.size(); ++i) {
    StopReason reason = StopReason::kNone;
    int status = 0;
    EXPECT_EQ(Attempts(*client, Url("/down?t=a6"), &reason, &status), want[i]) << "call " << i + 1;
    EXPECT_EQ(status, 503) << "the last failure is kept, call " << i + 1;
    EXPECT_EQ(reason, i == 0 ? StopReason::kAttemptsExhausted : StopReason::kBudget)
        << "call " << i + 1;
  }
  // Recovery: 9 successes add 9 * 0.5 = 4.5: 2 -> 6.5.
  for (int i = 0; i < 9; ++i) EXPECT_EQ(Attempts(*client, Url("/ok")), 1);
  // The next failure: 6.5 -> 5.5 (retry) -> 4.5 (refused): 2 attempts.
  StopReason reason = StopReason::kNone;
  EXPECT_EQ(Attempts(*client, Url("/down?t=a6"), &reason), 2);
  EXPECT_EQ(reason, StopReason::kBudget);
  // What reached nginx: 3 + 2 + 1 + 1 + 1 + 2 = 10 attempts at /down.
  std::vector<LogEntry> log = LogWithCount(19);
  EXPECT_EQ(std::count_if(log.begin(), log.end(),
                          [](const LogEntry& e) { return e.uri == "/down?t=a6"; }),
            10);
}

TEST(HttpBudgetTest, EachOriginHasItsOwnBudget) {
  auto client = BudgetClient(std::make_pair(10.0, 0.5));
  ASSERT_NE(client, nullptr);
  for (int want : {3, 2, 1}) EXPECT_EQ(Attempts(*client, Url("/down")), want);
  // Another origin of the same server starts full.
  EXPECT_EQ(Attempts(*client, OtherOrigin("/down")), 3);
  EXPECT_EQ(Attempts(*client, Url("/down")), 1);
}

TEST(HttpBudgetTest, ASharedBudgetSpansOrigins) {
  BudgetOptions shared;
  shared.token_bucket.max_tokens = 10;
  shared.token_bucket.token_ratio = 0.5;
  auto budget = RetryBudget::Create(shared);
  ASSERT_TRUE(budget.ok());
  auto client = BudgetClient(std::make_pair(100.0, 0.5), *budget);
  ASSERT_NE(client, nullptr);
  // 10 -> 7 (3 attempts) -> 5 (2) on one origin; the other origin then
  // finds 5: 5 -> 4, refused.
  EXPECT_EQ(Attempts(*client, Url("/down")), 3);
  EXPECT_EQ(Attempts(*client, Url("/down")), 2);
  EXPECT_EQ(Attempts(*client, OtherOrigin("/down")), 1);
  EXPECT_DOUBLE_EQ((*budget)->Tokens(SystemClock::Default()->Now()), 4.0);
  EXPECT_EQ((*budget)->refused(), 2u);
}

TEST(HttpBudgetTest, NoBudgetRetriesEveryCall) {
  auto client = BudgetClient(std::nullopt);
  ASSERT_NE(client, nullptr);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(Attempts(*client, Url("/down")), 3) << "call " << i + 1;
}

TEST(HttpBudgetTest, ARefusedRetryKeepsTheTransportError) {
  // max 2: the first failure leaves 1, and 1 > 1 is false.
  auto client = BudgetClient(std::make_pair(2.0, 0.5));
  ASSERT_NE(client, nullptr);
  HttpRequest request;
  request.url = "http://127.0.0.1:" + std::to_string(ClosedPort()) + "/x";
  request.no_wait = true;
  HttpCallInfo info;
  Result<HttpResponse> response = client->Send(request, &info);
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.status().code(), StatusCode::kTransport);
  EXPECT_NE(response.status().message().find("retry budget"), std::string::npos)
      << response.status().message();
  EXPECT_EQ(info.attempts, 1);
  EXPECT_EQ(info.stop_reason, StopReason::kBudget);
}

TEST(HttpBudgetTest, BadBudgetOptionsAreRefusedNamingTheField) {
  HttpClientOptions options;
  options.retry_budget->token_bucket.token_ratio = -1;
  Result<std::unique_ptr<HttpClient>> client = HttpClient::Create(options);
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(client.status().message().find("retry_budget"), std::string::npos);
  EXPECT_NE(client.status().message().find("token_ratio"), std::string::npos)
      << client.status().message();
}

TEST(HttpBudgetTest, TheAsyncEngineHasTheSameBudgets) {
  HttpClientOptions options;
  options.retry = FastRetry(3);
  options.report_metrics = false;
  options.retry_budget->token_bucket.max_tokens = 10;
  auto engine = HttpAsyncEngine::Create(options);
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  PollDriver driver(**engine);
  // One call at a time, as the sync client's test: 10 -> 7 -> 5 -> 4 -> 3 -> 2.
  std::vector<int> attempts;
  for (int i = 0; i < 5; ++i) {
    HttpRequest request = Get("/down");
    request.no_wait = true;
    Result<uint64_t> id = (*engine)->Begin(request);
    ASSERT_TRUE(id.ok());
    ASSERT_TRUE((*engine)->StartAttempt(*id).ok());
    driver.Run(static_cast<size_t>(i + 1));
    ASSERT_EQ(driver.done.count(*id), 1u);
    ASSERT_TRUE(driver.done.at(*id).ok());
    attempts.push_back(driver.done.at(*id)->attempts);
  }
  EXPECT_EQ(attempts, (std::vector<int>{3, 2, 1, 1, 1}));
}

// HttpAsyncEngine::BudgetFor (0.6, asked by hedging front doors before each
// extra copy): the origin's own budget, the one its calls are charged to.
TEST(HttpBudgetTest, TheAsyncEngineNamesTheBudgetOfAnOrigin) {
  HttpClientOptions options;
  options.retry = FastRetry(3);
  options.report_metrics = false;
  options.retry_budget->token_bucket.max_tokens = 10;
  auto engine = HttpAsyncEngine::Create(options);
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  std::shared_ptr<RetryBudget> budget = (*engine)->BudgetFor(Url("/down"));
  ASSERT_NE(budget, nullptr);
  EXPECT_EQ(budget, (*engine)->BudgetFor(Url("/ok")));  // same origin, same budget
  EXPECT_NE(budget, (*engine)->BudgetFor(OtherOrigin("/ok")));
  EXPECT_EQ((*engine)->BudgetFor("not a url"), nullptr);
  // One call of 3 failed attempts is charged to it: 10 -> 7.
  PollDriver driver(**engine);
  HttpRequest request = Get("/down");
  request.no_wait = true;
  Result<uint64_t> id = (*engine)->Begin(request);
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE((*engine)->StartAttempt(*id).ok());
  driver.Run(1);
  EXPECT_EQ(budget->Tokens(std::chrono::steady_clock::now()), 7.0);

  // A shared budget is every origin's; no budget: null.
  auto shared = std::move(RetryBudget::Create(BudgetOptions{})).value();
  options.shared_budget = shared;
  auto with_shared = HttpAsyncEngine::Create(options);
  ASSERT_TRUE(with_shared.ok());
  EXPECT_EQ((*with_shared)->BudgetFor(OtherOrigin("/ok")), shared);
  options.shared_budget = nullptr;
  options.retry_budget.reset();
  auto without = HttpAsyncEngine::Create(options);
  ASSERT_TRUE(without.ok());
  EXPECT_EQ((*without)->BudgetFor(Url("/ok")), nullptr);
}

// ---------------------------------------------------------------------------
// Limits: the client's bulkhead, rate limiter and throttle.

TEST(HttpLimitsTest, ARateLimiterSpacesCallsThroughTheClock) {
  FakeClock clock;
  RateLimiterOptions limiter;
  limiter.rate = 1.0;  // one call per second per origin, no burst
  limiter.max_wait = std::chrono::seconds(10);
  HttpClientOptions options;
  options.clock = &clock;
  options.report_metrics = false;
  options.rate_limiter = RateLimiter::Create(limiter).value();
  auto client = HttpClient::Create(options);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  // GCRA at 1/s, burst 1: the first goes at once, the 2nd and 3rd wait 1 s
  // each (fake time), so 2 s pass in all.
  const TimePoint start = clock.Now();
  for (int i = 0; i < 3; ++i) {
    Result<HttpResponse> response = (*client)->Send(Get("/ok"));
    ASSERT_TRUE(response.ok()) << response.status().ToString();
    EXPECT_EQ(response->status, 200);
  }
  EXPECT_EQ(clock.Now() - start, std::chrono::seconds(2));
}

// HttpClientOptions::adaptive_rate (AWS adaptive mode): worked out by hand
// from the spec's pseudo-code (limits/adaptive_rate.h). The first 429 comes
// in the rate's first bucket: measured 0, fill rate floored at 0.5/s,
// capacity 0, so each retry waits (1 - 0) / 0.5 = 2 s; the second 429 (2
// answers over 2 s: measured 0.8; W_max = min(0.8, 0.5) = 0.5) leaves the
// same floor; the 200 at +4 s (1 answer over 2 s: measured 0.56) grows the
// rate to min(CUBIC 0.4 (2 - K)^3 + 0.5 = 1.34, 2 * 0.56) = 1.12/s.
TEST(HttpLimitsTest, AnAdaptiveRateSlowsAttemptsAfter429s) {
  FakeClock clock;
  const TimePoint start = clock.Now();
  HttpClientOptions options;
  options.clock = &clock;
  options.report_metrics = false;
  options.adaptive_rate = AdaptiveRate::Create(AdaptiveRateOptions{}, start).value();
  auto client = HttpClient::Create(options);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  Result<HttpResponse> response =
      (*client)->Send(Get("/script?id=cxx-adaptive&steps=429:0,429:0,200"));
  ASSERT_TRUE(response.ok()) << response.status().ToString();
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->attempts, 3);
  EXPECT_EQ(clock.Now() - start, std::chrono::seconds(4));
  EXPECT_EQ(options.adaptive_rate->throttles(), 2u);
  const AdaptiveRateState state = options.adaptive_rate->State(clock.Now());
  EXPECT_NEAR(state.measured_rate, 0.56, 1e-12);
  EXPECT_NEAR(state.fill_rate, 1.12, 1e-12);
}

TEST(HttpLimitsTest, A429RetryAfterHoldsEveryCallToTheOrigin) {
  FakeClock clock;
  RateLimiterOptions limiter;
  limiter.rate = 1000.0;  // never the bound here
  limiter.max_wait = std::chrono::seconds(30);
  limiter.penalize_retry_after = true;
  HttpClientOptions options;
  options.clock = &clock;
  options.report_metrics = false;
  options.rate_limiter = RateLimiter::Create(limiter).value();
  auto client = HttpClient::Create(options);
  ASSERT_TRUE(client.ok());
  const TimePoint start = clock.Now();
  HttpRequest first = Get("/script?id=penalize429&steps=429:5,200");
  first.max_attempts = 1;  // the 429 is the answer: no retry
  Result<HttpResponse> limited = (*client)->Send(first);
  ASSERT_TRUE(limited.ok()) << limited.status().ToString();
  EXPECT_EQ(limited->status, 429);
  EXPECT_EQ(clock.Now(), start);
  // Another call to the same origin (another path) waits out the 5 s hint.
  Result<HttpResponse> next = (*client)->Send(Get("/ok"));
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  EXPECT_EQ(next->status, 200);
  EXPECT_EQ(clock.Now() - start, std::chrono::seconds(5));
}

TEST(HttpLimitsTest, TheAsyncEngineTellsAdmissionWaits) {
  FakeClock clock;
  RateLimiterOptions limiter;
  limiter.rate = 1.0;
  limiter.max_wait = std::chrono::seconds(10);
  HttpClientOptions options;
  options.clock = &clock;
  options.report_metrics = false;
  options.rate_limiter = RateLimiter::Create(limiter).value();
  auto engine = HttpAsyncEngine::Create(options);
  ASSERT_TRUE(engine.ok());
  PollDriver driver(**engine, &clock);
  std::vector<uint64_t> ids;
  for (int i = 0; i < 3; ++i) {
    Result<uint64_t> id = (*engine)->Begin(Get("/ok"));
    ASSERT_TRUE(id.ok());
    ASSERT_TRUE((*engine)->StartAttempt(*id).ok());
    ids.push_back(*id);
  }
  driver.Run(3);
  // GCRA at 1/s from one instant: the slots are reserved at +0, +1 s, +2 s.
  EXPECT_TRUE(driver.waits[ids[0]].empty());
  EXPECT_EQ(driver.waits[ids[1]], (std::vector<Duration>{std::chrono::seconds(1)}));
  EXPECT_EQ(driver.waits[ids[2]], (std::vector<Duration>{std::chrono::seconds(2)}));
  for (uint64_t id : ids) {
    ASSERT_TRUE(driver.done.at(id).ok()) << driver.done.at(id).status().ToString();
    EXPECT_EQ(driver.done.at(id)->status, 200);
    EXPECT_EQ(driver.done.at(id)->attempts, 1);
  }
}

TEST(HttpLimitsTest, RefusalsCarryTheirOwnCodes) {
  FakeClock clock;
  RateLimiterOptions limiter;
  limiter.rate = 1.0;
  limiter.max_wait = Duration::zero();  // refuse, never wait
  HttpClientOptions options;
  options.clock = &clock;
  options.report_metrics = false;
  options.rate_limiter = RateLimiter::Create(limiter).value();
  auto client = HttpClient::Create(options);
  ASSERT_TRUE(client.ok());
  ASSERT_TRUE((*client)->Send(Get("/ok")).ok());
  HttpCallInfo info;
  Result<HttpResponse> limited = (*client)->Send(Get("/ok"), &info);
  ASSERT_FALSE(limited.ok());
  EXPECT_EQ(limited.status().code(), StatusCode::kRateLimited) << limited.status().ToString();
  EXPECT_EQ(info.stop_reason, StopReason::kRateLimited);
  EXPECT_EQ(info.retry_in, std::chrono::seconds(1));

  BulkheadOptions bulkhead;
  bulkhead.name = "api";
  bulkhead.max_concurrent = 1;  // no queue: a full bulkhead refuses
  std::shared_ptr<Bulkhead> held = Bulkhead::Create(bulkhead).value();
  ASSERT_TRUE(held->TryAcquire());
  HttpClientOptions guarded;
  guarded.report_metrics = false;
  guarded.bulkhead = held;
  auto guarded_client = HttpClient::Create(guarded);
  ASSERT_TRUE(guarded_client.ok());
  Result<HttpResponse> full = (*guarded_client)->Send(Get("/ok"), &info);
  ASSERT_FALSE(full.ok());
  EXPECT_EQ(full.status().code(), StatusCode::kBulkheadFull) << full.status().ToString();
  EXPECT_EQ(info.stop_reason, StopReason::kBulkheadFull);
  EXPECT_EQ(info.attempts, 0);
  held->Release();
  EXPECT_TRUE((*guarded_client)->Send(Get("/ok")).ok());
}

// ---------------------------------------------------------------------------
// The sync client's connection cap (max_connections).

// The most requests nginx served at once, each shrunk by `margin` ms at both
// ends (nginx stamps its log with the time it caches once per event-loop
// pass, which lags on a loaded machine).
int MaxOverlap(const std::vector<LogEntry>& log, int64_t margin) {
  int best = 0;
  for (const LogEntry& a : log) {
    const int64_t at = a.start + margin;
    int n = 0;
    for (const LogEntry& b : log) {
      if (b.start + margin <= at && at < b.msec - margin) ++n;
    }
    best = std::max(best, n);
  }
  return best;
}

int ServedAtOnce(int max_connections) {
  HttpClientOptions options;
  options.report_metrics = false;
  options.max_connections = max_connections;
  auto client = HttpClient::Create(options);
  EXPECT_TRUE(client.ok());
  if (!client.ok()) return -1;
  ClearLog();
  // A query of its own: a line an earlier test's request logs late is not ours.
  const std::string path = "/slow?s=0.5&cap=" + std::to_string(max_connections);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      Result<HttpResponse> r = (*client)->Send(Get(path));
      EXPECT_TRUE(r.ok() && r->status == 200) << (r.ok() ? "" : r.status().ToString());
    });
  }
  for (std::thread& t : threads) t.join();
  std::vector<LogEntry> log = LogWithCount(8);
  log.erase(std::remove_if(log.begin(), log.end(),
                           [&](const LogEntry& e) { return e.uri != path; }),
            log.end());
  EXPECT_EQ(log.size(), 8u);
  return MaxOverlap(log, 120);
}

TEST(HttpConnectionCapTest, EightThreadsGetExactlyNTransfersAtOnce) {
  EXPECT_EQ(ServedAtOnce(3), 3);
  // Without the cap, the 8 threads all go at once (the test can fail).
  EXPECT_EQ(ServedAtOnce(0), 8);
}

TEST(HttpConnectionCapTest, NegativeIsRefused) {
  HttpClientOptions options;
  options.max_connections = -1;
  auto client = HttpClient::Create(options);
  ASSERT_FALSE(client.ok());
  EXPECT_NE(client.status().message().find("max_connections"), std::string::npos);
}

// A throttle that rejects a retry keeps the last response as the result
// (since 0.5), as a refused budget does. The first attempt finds an empty
// window (p = 0: always admitted); its 503 is an overload answer, so the
// retry is drawn at p = (1 - 2 * 0) / (1 + 1) = 0.5. Seed 7's draw for it
// falls under 0.5: rejected (nginx serves the script's 503 once, then 200).
TEST(HttpLimitsTest, AThrottledRetryKeepsTheLastResponse) {
  ThrottleOptions throttle;
  throttle.seed = 7;
  HttpClientOptions options;
  options.retry = FastRetry(2);
  options.report_metrics = false;
  options.throttle = AdaptiveThrottle::Create(throttle).value();
  auto client = HttpClient::Create(options);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  Result<HttpResponse> response = (*client)->Send(Get("/script?id=cxx-throttled-retry&steps=503,200"));
  ASSERT_TRUE(response.ok()) << response.status().ToString();
  EXPECT_EQ(response->status, 503);
  EXPECT_EQ(response->attempts, 1);
  EXPECT_EQ(response->stop_reason, StopReason::kThrottled);
  EXPECT_EQ(options.throttle->rejected(), 1u);
}

}  // namespace
}  // namespace http_test
}  // namespace mulligan
