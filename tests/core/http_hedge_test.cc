// tests/core/http_hedge_test.cc — HttpClient::Send of hedged requests
// (HttpClientOptions::hedging, issue 18) against the real nginx
// (http_fixture.h): its /hedge location answers the listed requests of an id
// slowly (script.js, hedge), so a first copy is slow and a hedge wins. What
// reached the server is read from nginx's access log.
#include <random>

#include "http_fixture.h"
#include "mulligan/breaker/registry.h"

namespace mulligan {
namespace http_test {
namespace {

// A fresh id for /hedge and /script (their request counts are per id).
std::string NewId() {
  static std::mt19937_64 rng{std::random_device{}()};
  return "cxx" + std::to_string(rng());
}

// The access log's lines of id `id` (a loser of an earlier test may log late).
std::vector<LogEntry> LinesOf(const std::string& id, size_t expected) {
  const auto give_up = std::chrono::steady_clock::now() + seconds(3);
  const auto mine = [&] {
    std::vector<LogEntry> out;
    for (LogEntry& e : ReadLog()) {
      if (e.uri.find("id=" + id + "&") != std::string::npos) out.push_back(std::move(e));
    }
    return out;
  };
  std::vector<LogEntry> lines = mine();
  while (lines.size() < expected && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(milliseconds(5));
    lines = mine();
  }
  std::this_thread::sleep_for(milliseconds(100));  // and no more come
  return mine();
}

HedgingOptions Hedge(int max_attempts, Duration delay) {
  HedgingOptions h;
  h.max_attempts = max_attempts;
  h.hedging_delay = delay;
  return h;
}

std::unique_ptr<HttpClient> HedgingClient(const HedgingOptions& hedging,
                                          const std::string& metrics_name,
                                          std::shared_ptr<BreakerRegistry> breakers = nullptr) {
  HttpClientOptions options;
  options.retry = FastRetry(3);
  options.hedging = hedging;
  options.metrics_name = metrics_name;
  options.breakers = std::move(breakers);
  Result<std::unique_ptr<HttpClient>> client = HttpClient::Create(options);
  EXPECT_TRUE(client.ok()) << client.status().ToString();
  return client.ok() ? std::move(client).value() : nullptr;
}

std::shared_ptr<BreakerRegistry> OneFailureOpens() {
  BreakerRegistryOptions registry;
  registry.breaker.failure_threshold = 1;
  registry.breaker.reset_timeout = seconds(60);
  return std::shared_ptr<BreakerRegistry>(BreakerRegistry::Create(registry).value());
}

// The first copy (request 0 of the id) takes 1 s; the hedge, 50 ms
// later, is answered at once and wins. The loser is aborted and counted
// cancelled, neither a failure nor a breaker failure: a breaker that one
// failure would open stays closed.
TEST_F(HttpClientTest, HedgedGetIsWonByTheSecondCopy) {
  std::shared_ptr<BreakerRegistry> breakers = OneFailureOpens();
  auto client = HedgingClient(Hedge(2, milliseconds(50)), "hedge-get-cxx", breakers);
  const std::string id = NewId();
  HttpCallInfo info;
  Result<HttpResponse> r = client->Send(Get("/hedge?id=" + id + "&ms=1000"), &info);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "hedge 1 of " + id + "\n");
  EXPECT_EQ(r->attempts, 2);
  EXPECT_EQ(r->stop_reason, StopReason::kSucceeded);
  EXPECT_EQ(info.attempts, 2);
  EXPECT_EQ(info.stop_reason, StopReason::kSucceeded);

  std::vector<LogEntry> lines = LinesOf(id, 2);
  ASSERT_EQ(lines.size(), 2u);
  for (const LogEntry& e : lines) EXPECT_EQ(e.method, "GET");
  // Two connections: the loser's was not reused mid-request.
  EXPECT_NE(lines[0].connection, lines[1].connection);

  MetricsSnapshot s = MetricsRegistry::Default().Get("hedge-get-cxx")->Snapshot();
  EXPECT_EQ(s.calls, 2u);  // each copy is a call of the origin's pipeline
  EXPECT_EQ(s.attempts, 2u);
  EXPECT_EQ(s.successes, 1u);
  EXPECT_EQ(s.failures, 0u);
  EXPECT_EQ(s.cancelled, 1u);
  EXPECT_EQ(s.hedges, 1u);
  EXPECT_EQ(s.hedges_won, 1u);
  EXPECT_EQ(s.hedge_cancelled, 1u);
  EXPECT_EQ(s.in_flight, 0);
  std::shared_ptr<CircuitBreaker> breaker = breakers->Find(*HttpOrigin(Url("/")));
  ASSERT_NE(breaker, nullptr);
  EXPECT_EQ(breaker->state(SystemClock::Default()->Now()), BreakerState::kClosed);
}

// Issue 18's extra-load ratio, as README and grafana/ compute it from the
// exported counters: hedges / (attempts - retries - hedges), extra copies per
// request made. One hedged request with one hedge, two unhedged: 1 / 3.
TEST_F(HttpClientTest, ExtraLoadRatioFollowsFromThePrometheusCounters) {
  auto client = HedgingClient(Hedge(2, milliseconds(50)), "hedge-ratio-cxx");
  const std::string id = NewId();
  ASSERT_TRUE(client->Send(Get("/hedge?id=" + id + "&ms=1000")).ok());
  for (int i = 0; i < 2; ++i) {  // two POSTs without a key: never hedged
    ASSERT_TRUE(client->Send(Post("/hedge?id=" + id + "p" + std::to_string(i) + "&slow=9")).ok());
  }
  const std::string text = MetricsRegistry::Default().ToPrometheus();
  EXPECT_NE(text.find("mulligan_calls_total{name=\"hedge-ratio-cxx\"} 4\n"), std::string::npos);
  EXPECT_NE(text.find("mulligan_attempts_total{name=\"hedge-ratio-cxx\"} 4\n"), std::string::npos);
  EXPECT_NE(text.find("mulligan_hedges_total{name=\"hedge-ratio-cxx\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("mulligan_hedges_won_total{name=\"hedge-ratio-cxx\"} 1\n"),
            std::string::npos);
  MetricsSnapshot s = MetricsRegistry::Default().Get("hedge-ratio-cxx")->Snapshot();
  EXPECT_EQ(s.retries, 0u);
  EXPECT_EQ(static_cast<double>(s.hedges) / static_cast<double>(s.attempts - s.retries - s.hedges),
            1.0 / 3.0);
}

// A keyed POST is replay-safe: both copies carry the request's one key.
TEST_F(HttpClientTest, HedgedKeyedPostSendsOneKeyOnEveryCopy) {
  auto client = HedgingClient(Hedge(2, milliseconds(50)), "hedge-post-cxx");
  const std::string id = NewId();
  HttpRequest post = Post("/hedge?id=" + id + "&ms=1000");
  post.idempotency_key = "hedge-key-" + id;
  Result<HttpResponse> r = client->Send(post);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->body, "hedge 1 of " + id + "\n");
  EXPECT_EQ(r->Header("Echo-Idempotency-Key"), "hedge-key-" + id);
  EXPECT_EQ(r->idempotency_key, "hedge-key-" + id);
  std::vector<LogEntry> lines = LinesOf(id, 2);
  ASSERT_EQ(lines.size(), 2u);
  for (const LogEntry& e : lines) {
    EXPECT_EQ(e.method, "POST");
    EXPECT_EQ(e.idempotency_key, "hedge-key-" + id);
  }
}

// A POST without a key may not run twice at once: one copy, however slow.
TEST_F(HttpClientTest, UnkeyedPostIsNotHedged) {
  auto client = HedgingClient(Hedge(2, milliseconds(10)), "hedge-unkeyed-cxx");
  const std::string id = NewId();
  Result<HttpResponse> r = client->Send(Post("/hedge?id=" + id + "&ms=200"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->body, "hedge 0 of " + id + "\n");
  EXPECT_EQ(r->attempts, 1);
  EXPECT_EQ(LinesOf(id, 1).size(), 1u);  // a second copy would be in before the response
  EXPECT_EQ(MetricsRegistry::Default().Get("hedge-unkeyed-cxx")->Snapshot().hedges, 0u);
}

// max_attempts 7 is A6's 5: copies 100 ms apart, all of them slow (1 s),
// exactly 5 reach nginx; the first answers first and wins, the other 4 are
// cancelled in flight.
TEST_F(HttpClientTest, NeverMoreThanMaxAttemptsCopies) {
  auto client = HedgingClient(Hedge(7, milliseconds(100)), "hedge-max-cxx");
  const std::string id = NewId();
  Result<HttpResponse> r = client->Send(Get("/hedge?id=" + id + "&slow=0,1,2,3,4,5,6&ms=1000"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->body, "hedge 0 of " + id + "\n");
  EXPECT_EQ(r->attempts, 5);
  EXPECT_EQ(LinesOf(id, 5).size(), 5u);
  MetricsSnapshot s = MetricsRegistry::Default().Get("hedge-max-cxx")->Snapshot();
  EXPECT_EQ(s.calls, 5u);
  EXPECT_EQ(s.hedges, 4u);
  EXPECT_EQ(s.successes, 1u);
  EXPECT_EQ(s.cancelled, 4u);
  EXPECT_EQ(s.hedge_cancelled, 4u);
  EXPECT_EQ(s.failures, 0u);
}

// A retryable answer (503) lets the next copy start at once, not after the
// 30 s delay: the request's 10 s deadline would stop it otherwise.
TEST_F(HttpClientTest, RetryableFailureStartsTheNextCopyAtOnce) {
  HttpClientOptions options;
  options.retry = FastRetry(3);
  options.retry.deadline = seconds(10);
  options.hedging = Hedge(2, seconds(30));
  auto client = HttpClient::Create(options).value();
  const std::string id = NewId();
  Result<HttpResponse> r = client->Send(Get("/script?id=" + id + "&steps=503,200"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "step 2 of " + id + ": 200\n");
  EXPECT_EQ(r->attempts, 2);
}

// No copy answers (nothing listens on the port): the error names the 3
// copies sent, not the last copy's one attempt (found by a fresh user).
TEST_F(HttpClientTest, FailedHedgedRequestNamesItsCopies) {
  HttpClientOptions options;
  options.retry = FastRetry(3);
  options.hedging = Hedge(3, milliseconds(20));
  auto client = HttpClient::Create(options).value();
  HttpRequest request;
  request.method = "GET";
  request.url = "http://127.0.0.1:" + std::to_string(ClosedPort()) + "/x";
  HttpCallInfo info;
  Result<HttpResponse> r = client->Send(request, &info);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(info.attempts, 3);
  EXPECT_NE(r.status().message().find("connection refused after 3 attempts (hedged copies) ("),
            std::string::npos)
      << r.status().ToString();
  EXPECT_EQ(r.status().message().find("after 1 attempt"), std::string::npos);
}

// An open breaker stops new copies from being sent: the first copy's 503
// opens it (one failure) and lets the hedge start at once, which the breaker
// refuses (nothing sent); the 503 is the result.
TEST_F(HttpClientTest, OpenBreakerStopsNewCopies) {
  auto client = HedgingClient(Hedge(2, seconds(30)), "hedge-open-cxx", OneFailureOpens());
  const std::string id = NewId();
  Result<HttpResponse> r = client->Send(Get("/script?id=" + id + "&steps=503"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(r->attempts, 2);  // copies started; the refused one sent nothing
  EXPECT_EQ(r->stop_reason, StopReason::kAttemptsExhausted);
  EXPECT_EQ(LinesOf(id, 1).size(), 1u);  // a second copy would be in before the response
  MetricsSnapshot s = MetricsRegistry::Default().Get("hedge-open-cxx")->Snapshot();
  EXPECT_EQ(s.hedges, 1u);
  EXPECT_EQ(s.failures, 2u);  // the 503, and the refused copy
  EXPECT_EQ(s.in_flight, 0);
}

// An empty retry budget stops new copies: only the first reaches nginx.
TEST_F(HttpClientTest, EmptyBudgetStopsNewCopies) {
  BudgetOptions budget;
  budget.token_bucket.max_tokens = 2;
  budget.token_bucket.token_ratio = 0.1;
  std::shared_ptr<RetryBudget> shared = RetryBudget::Create(budget).value();
  // 1 token left: not above half of 2, so no retry (and no hedge) is granted.
  shared->OnFailure(BudgetFailure::kOther, SystemClock::Default()->Now());
  HttpClientOptions options;
  options.retry = FastRetry(3);
  options.shared_budget = shared;
  options.hedging = Hedge(3, milliseconds(20));
  options.metrics_name = "hedge-budget-cxx";
  auto client = HttpClient::Create(options).value();
  const std::string id = NewId();
  Result<HttpResponse> r = client->Send(Get("/hedge?id=" + id + "&ms=200"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->body, "hedge 0 of " + id + "\n");
  EXPECT_EQ(r->attempts, 1);
  EXPECT_EQ(LinesOf(id, 1).size(), 1u);  // a second copy would be in before the response
  EXPECT_EQ(MetricsRegistry::Default().Get("hedge-budget-cxx")->Snapshot().hedges, 0u);
}

// A hedged Send polls should_abort: aborted, its running copy is cancelled
// (counted cancelled, not failed) and the Send fails with kCallback.
TEST_F(HttpClientTest, AbortedHedgedSendCancelsItsCopies) {
  auto client = HedgingClient(Hedge(2, seconds(30)), "hedge-abort-cxx");
  const std::string id = NewId();
  HttpRequest request = Get("/hedge?id=" + id + "&ms=1000");
  std::atomic<bool> sent{false};
  // Abort once nginx's handler counted the first copy (script.js keeps the
  // count in a file; the log line comes only when it answers).
  const std::string counted = g_server.workdir + "/tmp/hedge-" + id;
  request.should_abort = [&] {
    if (!sent) sent = std::ifstream(counted).good();
    return sent.load();
  };
  HttpCallInfo info;
  Result<HttpResponse> r = client->Send(request, &info);
  EXPECT_EQ(r.status().code(), StatusCode::kCallback) << r.status().ToString();
  EXPECT_EQ(info.attempts, 1);
  MetricsSnapshot s = MetricsRegistry::Default().Get("hedge-abort-cxx")->Snapshot();
  EXPECT_EQ(s.calls, 1u);
  EXPECT_EQ(s.cancelled, 1u);
  EXPECT_EQ(s.failures, 0u);
  EXPECT_EQ(s.in_flight, 0);
}

TEST(HttpHedgeOptionsTest, BadHedgingOptionsAreRefusedAtCreate) {
  const auto refused = [](const HedgingOptions& h, const std::string& field) {
    HttpClientOptions options;
    options.hedging = h;
    Result<std::unique_ptr<HttpClient>> client = HttpClient::Create(options);
    ASSERT_FALSE(client.ok()) << field;
    EXPECT_EQ(client.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(client.status().message().find("hedging: " + field), std::string::npos)
        << client.status().message();
    Result<std::unique_ptr<HttpAsyncEngine>> engine = HttpAsyncEngine::Create(options);
    EXPECT_EQ(engine.status().code(), StatusCode::kInvalidArgument) << field;
  };
  HedgingOptions h;
  h.max_attempts = 1;
  refused(h, "max_attempts must be >= 2");
  h = HedgingOptions{};
  h.hedging_delay = milliseconds(-1);
  refused(h, "hedging_delay must be >= 0");
  h = HedgingOptions{};
  h.delay_quantile = 1.5;
  refused(h, "delay_quantile must be in (0, 1]");
  h = HedgingOptions{};
  h.quantile_window = 10;
  h.quantile_min_samples = 11;
  refused(h, "quantile_min_samples must be in [1, quantile_window = 10]");
}

}  // namespace
}  // namespace http_test
}  // namespace mulligan
