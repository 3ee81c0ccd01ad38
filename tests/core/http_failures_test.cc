// tests/core/http_failures_test.cc — HttpClient's failure kinds, hooks,
// aborts, redirects, strict mode and breakers, end to end against a real
// nginx (http_fixture.h).

#include "http_fixture.h"

namespace mulligan {
namespace http_test {
namespace {

// ---------------------------------------------------------------------------
// Completeness, failure kinds, hooks, aborts and breakers

TEST(HttpHelpersTest, ClientManagedHeaders) {
  for (const char* h : {"Content-Length", "content-length", "Transfer-Encoding", "TE", "te",
                        "Upgrade"}) {
    EXPECT_TRUE(IsClientManagedHeader(h)) << h;
  }
  for (const char* h : {"Host", "Connection", "Expect", "Content-Type", "Content-Lengthx", "T"}) {
    EXPECT_FALSE(IsClientManagedHeader(h)) << h;
  }
}

TEST_F(HttpClientTest, HostConnectionAndLargeHeadsWithinTheLimitPass) {
  auto client = MakeClient(FastRetry(1));
  ASSERT_NE(client, nullptr);
  HttpRequest r = Get("/ok");
  r.headers = {{"Connection", "close"}, {"X-Some", std::string(4000, 'x')}};
  Result<HttpResponse> a = client->Send(r);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->status, 200);
  // A head just over the limit is refused, just under it is sent (nginx
  // answers 400 or 431 to that: the point is that libcurl sent it).
  HttpRequest big = Get("/ok");
  big.headers = {{"X-Big", std::string(kMaxRequestHeadBytes, 'y')}};
  Result<HttpResponse> b = client->Send(big);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(b.status().message().find("request head too large"), std::string::npos);
  big.headers = {{"X-Big", std::string(kMaxRequestHeadBytes - 1024, 'y')}};
  Result<HttpResponse> c = client->Send(big);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_GE(c->status, 400);
}

TEST_F(HttpClientTest, ShouldAbortEndsATransferInFlight) {
  auto client = MakeClient(FastRetry(3));
  ASSERT_NE(client, nullptr);
  HttpRequest r = Get("/slow?s=8");
  const auto t0 = std::chrono::steady_clock::now();
  std::atomic<int> polls{0};
  r.should_abort = [&] {
    ++polls;
    return std::chrono::steady_clock::now() - t0 > milliseconds(500);
  };
  HttpCallInfo info;
  Result<HttpResponse> res = client->Send(r, &info);
  const auto wall = std::chrono::steady_clock::now() - t0;
  ASSERT_FALSE(res.ok());
  EXPECT_EQ(res.status().code(), StatusCode::kCallback) << res.status().ToString();
  EXPECT_NE(res.status().message().find("aborted"), std::string::npos);
  EXPECT_EQ(info.attempts, 1);
  EXPECT_LT(wall, milliseconds(2000));
  EXPECT_GE(polls.load(), 2);
}

TEST_F(HttpClientTest, ShouldAbortEndsAWaitBetweenAttempts) {
  RetryOptions retry = FastRetry(3);
  retry.backoff.base = seconds(5);
  FakeClock clock;
  auto client = MakeClient(retry, &clock);
  ASSERT_NE(client, nullptr);
  HttpRequest r = Get("/down");
  r.should_abort = [&] { return clock.TotalSlept() >= seconds(1); };
  HttpCallInfo info;
  Result<HttpResponse> res = client->Send(r, &info);
  ASSERT_FALSE(res.ok());
  EXPECT_EQ(res.status().code(), StatusCode::kCallback) << res.status().ToString();
  EXPECT_NE(res.status().message().find("aborted"), std::string::npos);
  EXPECT_EQ(info.attempts, 1);
  // Slept in slices of kAbortPollInterval until the hook said stop.
  EXPECT_EQ(clock.TotalSlept(), seconds(1));
  EXPECT_EQ(LogWithCount(1).size(), 1u);
}

TEST_F(HttpClientTest, ShouldAbortThatNeverFiresChangesNothing) {
  RetryOptions retry = FastRetry(3);
  retry.backoff.base = milliseconds(1234);
  FakeClock clock;
  HttpClientOptions options;
  options.retry = retry;
  options.clock = &clock;
  int polls = 0;
  // The client-wide hook; one that throws counts as "go on".
  options.should_abort = [&]() -> bool {
    ++polls;
    throw std::runtime_error("ignored");
  };
  auto created = HttpClient::Create(options);
  ASSERT_TRUE(created.ok());
  auto client = std::move(created).value();
  Result<HttpResponse> res = client->Send(Get("/down"));
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  EXPECT_EQ(res->status, 503);
  EXPECT_EQ(res->attempts, 3);
  EXPECT_EQ(clock.TotalSlept(), milliseconds(2 * 1234));  // exactly the delays
  EXPECT_GE(polls, 2 * (1234 / 50));
}

TEST_F(HttpClientTest, AbortReleasesAHalfOpenProbe) {
  // A per-call breaker permit taken before an aborted attempt is handed back
  // (as "ignored"), so the next call is admitted.
  HttpClientOptions options;
  options.retry = FastRetry(1);
  BreakerRegistryOptions registry;
  registry.breaker.failure_threshold = 1;
  registry.breaker.reset_timeout = milliseconds(1);
  options.breakers = std::shared_ptr<BreakerRegistry>(BreakerRegistry::Create(registry).value());
  auto client = HttpClient::Create(options).value();
  ASSERT_TRUE(client->Send(Get("/down")).ok());  // 503: opens the breaker
  std::this_thread::sleep_for(milliseconds(5));   // half-open
  HttpRequest r = Get("/slow?s=8");
  const auto t0 = std::chrono::steady_clock::now();
  r.should_abort = [&] { return std::chrono::steady_clock::now() - t0 > milliseconds(200); };
  Result<HttpResponse> aborted = client->Send(r);
  EXPECT_EQ(aborted.status().code(), StatusCode::kCallback) << aborted.status().ToString();
  Result<HttpResponse> next = client->Send(Get("/ok"));
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  EXPECT_EQ(next->status, 200);
}

TEST(HttpHelpersTest, HttpOriginIsSchemeHostAndPort) {
  EXPECT_EQ(HttpOrigin("http://127.0.0.1:8080/a?b"), "http://127.0.0.1:8080");
  EXPECT_EQ(HttpOrigin("HTTPS://Example.COM/x"), "https://example.com:443");
  EXPECT_EQ(HttpOrigin("http://example.com"), "http://example.com:80");
  EXPECT_EQ(HttpOrigin("not a url"), std::nullopt);
}

TEST_F(HttpClientTest, PostResetMidResponseIsNotReplayedWithoutAKey) {
  auto client = MakeClient(FastRetry(3));  // a fresh connection
  ASSERT_NE(client, nullptr);
  HttpCallInfo info;
  Result<HttpResponse> r = client->Send(Post("/reset"), &info);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kTransport) << r.status().ToString();
  EXPECT_EQ(info.last_error, ErrorKind::kConnectionReset);
  EXPECT_EQ(info.attempts, 1);
  EXPECT_EQ(info.stop_reason, StopReason::kNotReplaySafe);
  auto log = LogWithCount(1);
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0].status, 444);
}

TEST_F(HttpClientTest, PostWithoutKeyIsNeverResentOnAReusedConnection) {
  // libcurl re-sends a request by itself when a reused connection dies before
  // any response byte: an unkeyed POST must use a fresh connection instead.
  auto client = MakeClient(FastRetry(3));
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->Send(Get("/ok")).ok());  // a kept-alive connection
  LogWithCount(1);
  ClearLog();
  HttpCallInfo info;
  Result<HttpResponse> r = client->Send(Post("/reset"), &info);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(info.attempts, 1);
  auto log = LogWithCount(1);
  ASSERT_EQ(log.size(), 1u);  // exactly one POST reached the server
  EXPECT_EQ(log[0].connection_requests, 1);
  // Replay-safe requests still reuse connections.
  ASSERT_TRUE(client->Send(Get("/ok")).ok());
  ASSERT_TRUE(client->Send(Get("/ok")).ok());
  log = LogWithCount(3);
  ASSERT_EQ(log.size(), 3u);
  EXPECT_EQ(log[2].connection, log[1].connection);
}

TEST_F(HttpClientTest, PostResetMidResponseIsReplayedWithAKey) {
  auto client = MakeClient(FastRetry(3));
  ASSERT_NE(client, nullptr);
  HttpRequest request = Post("/reset");
  request.idempotency_key = NewIdempotencyKey();
  HttpCallInfo info;
  Result<HttpResponse> r = client->Send(request, &info);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(info.last_error, ErrorKind::kConnectionReset);
  EXPECT_EQ(info.attempts, 3);
  EXPECT_EQ(info.stop_reason, StopReason::kAttemptsExhausted);
  auto log = LogWithCount(3);
  ASSERT_EQ(log.size(), 3u);
  for (const auto& e : log) EXPECT_EQ(e.idempotency_key, *request.idempotency_key);
}

TEST_F(HttpClientTest, RedirectsAreOffByDefaultAndBounded) {
  auto client = MakeClient(FastRetry(3));
  ASSERT_NE(client, nullptr);
  Result<HttpResponse> r = client->Send(Get("/redirect"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 302);
  EXPECT_EQ(r->Header("Location"), "/ok");

  HttpRequest follow = Get("/redirect");
  follow.follow_redirects = true;
  r = client->Send(follow);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "ok\n");
  EXPECT_EQ(r->url, Url("/ok"));

  HttpRequest loop = Get("/redirect-loop");
  loop.follow_redirects = true;
  loop.max_redirects = 3;
  HttpCallInfo info;
  r = client->Send(loop, &info);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(info.attempts, 1);  // a redirect loop is terminal
  EXPECT_EQ(info.last_error, ErrorKind::kTerminal);
}

TEST_F(HttpClientTest, OnRetryHookSeesEveryWait) {
  HttpClientOptions options;
  options.retry = FastRetry(3);
  std::vector<HttpRetryEvent> seen;
  options.on_retry = [&](const HttpRetryEvent& e) { seen.push_back(e); };
  auto client = HttpClient::Create(options);
  ASSERT_TRUE(client.ok());
  Result<HttpResponse> r = (*client)->Send(Get("/down"));
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].attempt, 1);
  EXPECT_EQ(seen[1].attempt, 2);
  EXPECT_EQ(seen[0].http_status, 503);
  EXPECT_EQ(seen[0].delay, milliseconds(1));

  // A request's hook replaces the client's; a throwing hook is contained.
  int mine = 0;
  HttpRequest request = Get("/down");
  request.on_retry = [&](const HttpRetryEvent&) {
    ++mine;
    throw std::runtime_error("hook failed");
  };
  r = (*client)->Send(request);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->attempts, 3);
  EXPECT_EQ(mine, 2);
  EXPECT_EQ(seen.size(), 2u);

  // A hook may stop the retries: the call ends with kCallback at once.
  request.on_retry = [&](HttpRetryEvent& e) { e.cancel = true; };
  HttpCallInfo info;
  r = (*client)->Send(request, &info);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCallback) << r.status().ToString();
  EXPECT_EQ(info.attempts, 1);
}

TEST_F(HttpClientTest, StrictModeReplaysOnlyGetHeadOptions) {
  HttpClientOptions options;
  options.retry = FastRetry(3);
  options.strict_methods = true;
  auto client = HttpClient::Create(options);
  ASSERT_TRUE(client.ok());
  HttpRequest put = Get("/down");
  put.method = "PUT";
  Result<HttpResponse> r = (*client)->Send(put);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->attempts, 1);
  EXPECT_EQ(r->stop_reason, StopReason::kNotReplaySafe);
  r = (*client)->Send(Get("/down"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->attempts, 3);
  // Nothing sent: a refused POST is retried even in strict mode.
  HttpRequest post;
  post.method = "POST";
  post.url = "http://127.0.0.1:" + std::to_string(ClosedPort()) + "/x";
  HttpCallInfo info;
  r = (*client)->Send(post, &info);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(info.attempts, 3);
  EXPECT_EQ(info.last_error, ErrorKind::kConnectionRefused);
}

TEST_F(HttpClientTest, TlsToAPlainHttpPortIsATerminalTlsError) {
  auto client = MakeClient(FastRetry(3));
  ASSERT_NE(client, nullptr);
  HttpRequest request;
  request.url = "https://127.0.0.1:" + std::to_string(g_server.port) + "/ok";
  HttpCallInfo info;
  Result<HttpResponse> r = client->Send(request, &info);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(info.last_error, ErrorKind::kTlsError) << r.status().ToString();
  EXPECT_EQ(info.attempts, 1);
  EXPECT_EQ(info.stop_reason, StopReason::kTerminal);
}

TEST_F(HttpClientTest, UnresolvableNameIsADnsFailure) {
  // A 64-character label cannot be encoded in a DNS query, so the resolver
  // fails locally: no packet leaves the machine.
  auto client = MakeClient(FastRetry(2));
  ASSERT_NE(client, nullptr);
  HttpRequest request;
  request.url = "http://" + std::string(64, 'a') + ".invalid/";
  HttpCallInfo info;
  Result<HttpResponse> r = client->Send(request, &info);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(info.last_error, ErrorKind::kDnsFailure) << r.status().ToString();
  EXPECT_EQ(info.attempts, 2);
}

TEST_F(HttpClientTest, ConnectTimeoutOnAFullAcceptQueue) {
  // A loopback listener that never accepts, with its accept queue full:
  // Linux drops further SYNs, so a connect hangs until the connect timeout.
  // (No traffic leaves the loopback interface.)
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(listener, 0), 0);
  socklen_t len = sizeof addr;
  getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  std::vector<int> fillers;
  for (int i = 0; i < 4; ++i) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    fillers.push_back(fd);
  }
  std::this_thread::sleep_for(milliseconds(50));

  HttpClientOptions options;
  options.retry = FastRetry(2);
  options.connect_timeout = milliseconds(200);
  auto client = HttpClient::Create(options);
  ASSERT_TRUE(client.ok());
  HttpRequest request;
  request.method = "POST";  // nothing sent: retried even without a key
  request.url = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) + "/";
  HttpCallInfo info;
  Result<HttpResponse> r = (*client)->Send(request, &info);
  for (int fd : fillers) close(fd);
  close(listener);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kTimeout) << r.status().ToString();
  EXPECT_EQ(info.last_error, ErrorKind::kConnectTimeout);
  EXPECT_EQ(info.attempts, 2);
  EXPECT_GE(info.elapsed, milliseconds(380));
}

TEST_F(HttpClientTest, PerOriginBreakerOpensForOneOriginOnly) {
  BreakerRegistryOptions reg;
  reg.breaker.failure_threshold = 2;
  reg.breaker.reset_timeout = seconds(30);
  auto registry = BreakerRegistry::Create(reg);
  ASSERT_TRUE(registry.ok());
  HttpClientOptions options;
  options.retry = FastRetry(1);
  options.breakers = std::shared_ptr<BreakerRegistry>(std::move(registry).value());
  auto client = HttpClient::Create(options);
  ASSERT_TRUE(client.ok());

  for (int i = 0; i < 2; ++i) {
    Result<HttpResponse> r = (*client)->Send(Get("/down"));
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->status, 503);
  }
  HttpCallInfo info;
  Result<HttpResponse> r = (*client)->Send(Get("/down"), &info);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCircuitOpen) << r.status().ToString();
  EXPECT_EQ(info.attempts, 0);
  EXPECT_EQ(info.breaker_key, "http://127.0.0.1:" + std::to_string(g_server.port));
  EXPECT_GT(info.retry_in, seconds(25));
  // Another origin (the same server by another name) keeps flowing.
  HttpRequest other;
  other.url = "http://localhost:" + std::to_string(g_server.port) + "/ok";
  r = (*client)->Send(other);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(LogWithCount(3).size(), 3u);  // the refused call never reached nginx
}

}  // namespace
}  // namespace http_test
}  // namespace mulligan
