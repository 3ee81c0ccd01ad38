// tests/core/http_async_test.cc — HttpAsyncEngine, and the metrics both
// clients report, end to end against a real nginx (http_fixture.h).
#include "http_fixture.h"

namespace mulligan {
namespace http_test {
namespace {

TEST_F(HttpClientTest, AsyncEngineRunsManyCallsOnOneThreadWithRetries) {
  HttpClientOptions options;
  options.retry = FastRetry(20);
  auto engine = HttpAsyncEngine::Create(options);
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  PollDriver driver(**engine);
  constexpr size_t kCalls = 50;
  for (size_t i = 0; i < kCalls; ++i) {
    Result<uint64_t> id = (*engine)->Begin(Get("/flaky"));
    ASSERT_TRUE(id.ok());
    ASSERT_TRUE((*engine)->StartAttempt(*id).ok());
  }
  driver.Run(kCalls);
  ASSERT_EQ(driver.done.size(), kCalls);
  int attempts = 0;
  for (auto& [id, r] : driver.done) {
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "flaky ok\n");
    attempts += r->attempts;
  }
  EXPECT_GT(driver.retried, 0);  // about half of the first attempts fail
  EXPECT_EQ(attempts, static_cast<int>(kCalls) + driver.retried);
  EXPECT_EQ((*engine)->size(), 0u);
  auto log = LogWithCount(static_cast<size_t>(attempts));
  EXPECT_EQ(log.size(), static_cast<size_t>(attempts));
}

// The engine's idle handles are reused without a reset, as Send's are: one
// call at a time, each method and body must reach the server as sent.
TEST_F(HttpClientTest, AsyncEngineHandlesServeEveryMethodInTurn) {
  HttpClientOptions options;
  options.retry = FastRetry(1);
  auto engine = HttpAsyncEngine::Create(options);
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  PollDriver driver(**engine);
  const std::pair<const char*, const char*> steps[] = {
      {"POST", "one"}, {"DELETE", ""}, {"GET", ""}, {"PUT", "two"}, {"HEAD", ""}, {"GET", ""}};
  size_t finished = 0;
  for (const auto& [method, body] : steps) {
    // A new URL each time too (the step number in the query).
    HttpRequest request = Get("/echo?step=" + std::to_string(finished));
    request.method = method;
    request.body = body;
    Result<uint64_t> id = (*engine)->Begin(request);
    ASSERT_TRUE(id.ok()) << id.status().ToString();
    ASSERT_TRUE((*engine)->StartAttempt(*id).ok());
    driver.Run(++finished);
    ASSERT_EQ(driver.done.count(*id), 1u) << method;
    const Result<HttpResponse>& r = driver.done.at(*id);
    ASSERT_TRUE(r.ok()) << method << ": " << r.status().ToString();
    EXPECT_EQ(r->status, 200) << method;
    EXPECT_EQ(r->url, Url("/echo?step=" + std::to_string(finished - 1))) << method;
    if (std::string(method) == "HEAD") {
      EXPECT_EQ(r->body, "");
    } else {
      EXPECT_EQ(r->body, std::string("method=") + method + "\nidempotency_key=\nbody=" + body + "\n");
    }
  }
}

TEST_F(HttpClientTest, AsyncEngineReportsFailuresLikeSend) {
  auto engine = HttpAsyncEngine::Create(HttpClientOptions{});
  ASSERT_TRUE(engine.ok());
  PollDriver driver(**engine);
  HttpRequest refused;
  refused.url = "http://127.0.0.1:" + std::to_string(ClosedPort()) + "/x";
  RetryPolicy policy = RetryPolicy::Create(FastRetry(2)).value();
  refused.policy = &policy;
  Result<uint64_t> id = (*engine)->Begin(refused);
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE((*engine)->StartAttempt(*id).ok());
  HttpRequest bad;
  bad.url = "ftp://x";
  EXPECT_FALSE((*engine)->Begin(bad).ok());
  driver.Run(1);
  ASSERT_EQ(driver.done.size(), 1u);
  const Result<HttpResponse>& r = driver.done.begin()->second;
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kTransport);
  EXPECT_NE(r.status().message().find("connection refused after 2 attempts"), std::string::npos)
      << r.status().message();
}

// Issue 7: exact counters after a scripted run against the real nginx.
TEST_F(HttpClientTest, ReportsExactMetricsPerOrigin) {
  HttpClientOptions options;
  options.retry = FastRetry(3);
  options.metrics_name = "http-metrics-script";
  auto client = std::move(HttpClient::Create(options)).value();
  // 4 healthy calls, 2 calls that give up on 503 after 3 attempts, 1 POST
  // without a key that is not replayed (1 attempt), 1 call refused (3 attempts).
  for (int i = 0; i < 4; ++i) ASSERT_EQ(client->Send(Get("/ok"))->status, 200);
  for (int i = 0; i < 2; ++i) ASSERT_EQ(client->Send(Get("/down"))->status, 503);
  ASSERT_EQ(client->Send(Post("/down"))->attempts, 1);
  HttpRequest refused;
  refused.url = "http://127.0.0.1:" + std::to_string(ClosedPort()) + "/";
  ASSERT_FALSE(client->Send(refused).ok());

  MetricsSnapshot s = MetricsRegistry::Default().Get("http-metrics-script")->Snapshot();
  EXPECT_EQ(s.calls, 8u);
  EXPECT_EQ(s.attempts, 4u + 2u * 3u + 1u + 3u);
  EXPECT_EQ(s.retries, 2u * 2u + 2u);
  EXPECT_EQ(s.retries_by_reason[static_cast<int>(RetryReason::kStatus)], 4u);
  EXPECT_EQ(s.retries_by_reason[static_cast<int>(RetryReason::kTransport)], 2u);
  EXPECT_EQ(s.successes, 4u);
  EXPECT_EQ(s.failures, 4u);
  EXPECT_EQ(s.in_flight, 0);
  EXPECT_EQ(s.waiting_to_retry, 0);
  EXPECT_EQ(s.attempts_per_call.counts[0], 5u);  // 4 healthy + the unkeyed POST
  EXPECT_EQ(s.attempts_per_call.counts[2], 3u);  // 2 x /down + the refused call
}

TEST_F(HttpClientTest, ReportsUnderTheOriginByDefault) {
  auto client = MakeClient(FastRetry(2));
  ASSERT_TRUE(client->Send(Get("/ok")).ok());
  std::optional<std::string> origin = HttpOrigin(Url("/ok"));
  ASSERT_TRUE(origin.has_value());
  EXPECT_GE(MetricsRegistry::Default().Get(*origin)->Snapshot().successes, 1u);
}

}  // namespace
}  // namespace http_test
}  // namespace mulligan
