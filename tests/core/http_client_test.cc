// tests/core/http_client_test.cc — HttpClient end to end against a real nginx
// (http_fixture.h).
//
// Only the /limited test sleeps for real (about 1 s per Retry-After).

#include "http/request.h"
#include "http_fixture.h"

namespace mulligan {
namespace http_test {
namespace {

// ---------------------------------------------------------------------------
// Pure functions (no server needed, but cheap enough to run with it)

TEST(HttpHelpersTest, FindHeaderIsCaseInsensitiveAndReturnsTheFirst) {
  HttpHeaders headers = {{"Content-Type", "text/plain"}, {"X-A", "1"}, {"x-a", "2"}};
  EXPECT_EQ(FindHeader(headers, "content-type"), "text/plain");
  EXPECT_EQ(FindHeader(headers, "X-A"), "1");
  EXPECT_EQ(FindHeader(headers, "Retry-After"), std::nullopt);
  EXPECT_EQ(FindHeader(headers, "Content-Typ"), std::nullopt);
}

TEST(HttpHelpersTest, IdempotentMethodsFollowRfc9110) {
  for (const char* m : {"GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"}) {
    EXPECT_TRUE(IsIdempotentMethod(m)) << m;
  }
  for (const char* m : {"POST", "PATCH", "CONNECT", "get", ""}) {
    EXPECT_FALSE(IsIdempotentMethod(m)) << m;
  }
}

TEST(HttpHelpersTest, NewIdempotencyKeyIsACanonicalVersion4Uuid) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    std::string key = NewIdempotencyKey();
    ASSERT_EQ(key.size(), 36u) << key;
    for (size_t j = 0; j < key.size(); ++j) {
      if (j == 8 || j == 13 || j == 18 || j == 23) {
        ASSERT_EQ(key[j], '-') << key;
      } else {
        ASSERT_TRUE((key[j] >= '0' && key[j] <= '9') || (key[j] >= 'a' && key[j] <= 'f')) << key;
      }
    }
    EXPECT_EQ(key[14], '4') << key;                                   // version
    EXPECT_NE(std::string("89ab").find(key[19]), std::string::npos) << key;  // variant
    seen.insert(key);
  }
  EXPECT_EQ(seen.size(), 1000u);
}

TEST(HttpHelpersTest, CreateRejectsBadOptions) {
  HttpClientOptions options;
  options.attempt_timeout = Duration::zero();
  EXPECT_TRUE(IsInvalidArgument(HttpClient::Create(options).status()));
  options = HttpClientOptions{};
  options.connect_timeout = milliseconds(-1);
  EXPECT_TRUE(IsInvalidArgument(HttpClient::Create(options).status()));
  options = HttpClientOptions{};
  options.retry.max_attempts = 0;
  EXPECT_TRUE(IsInvalidArgument(HttpClient::Create(options).status()));
  options = HttpClientOptions{};
  options.ca_bundle = "/no/such/ca.pem";
  Status missing = HttpClient::Create(options).status();
  EXPECT_TRUE(IsInvalidArgument(missing));
  EXPECT_EQ(missing.message(),
            "ca_bundle \"/no/such/ca.pem\" cannot be read: No such file or directory");
  EXPECT_TRUE(IsInvalidArgument(HttpAsyncEngine::Create(options).status()));
  options = HttpClientOptions{};
  EXPECT_TRUE(HttpClient::Create(options).ok());
}

// ---------------------------------------------------------------------------
// Against nginx

TEST_F(HttpClientTest, HealthyGet) {
  auto client = MakeClient(RetryOptions{});
  ASSERT_NE(client, nullptr);
  HttpCallInfo info;
  Result<HttpResponse> r = client->Send(Get("/ok"), &info);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "ok\n");
  EXPECT_EQ(r->attempts, 1);
  EXPECT_EQ(r->stop_reason, StopReason::kSucceeded);
  EXPECT_EQ(r->url, Url("/ok"));
  EXPECT_EQ(r->idempotency_key, "");
  EXPECT_EQ(r->Header("content-type"), "text/plain");
  EXPECT_EQ(r->Header("CONTENT-LENGTH"), "3");
  EXPECT_EQ(r->Header("Retry-After"), std::nullopt);
  EXPECT_EQ(info.attempts, 1);
  EXPECT_EQ(info.last_error, ErrorKind::kNone);
  EXPECT_EQ(info.stop_reason, StopReason::kSucceeded);

  auto log = LogWithCount(1);
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0].method, "GET");
  EXPECT_EQ(log[0].uri, "/ok");
}

// A URL holding non-ASCII text goes out as requests and httpx send it: the
// UTF-8 bytes of the query percent-encoded, what is already encoded kept.
TEST_F(HttpClientTest, NonAsciiUrlIsSentPercentEncoded) {
  auto client = MakeClient(RetryOptions{});
  ASSERT_NE(client, nullptr);
  Result<HttpResponse> r = client->Send(Get("/ok?city=Z\xc3\xbcrich&dish=caf%C3%A9"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->url, Url("/ok?city=Z%C3%BCrich&dish=caf%C3%A9"));
  auto log = LogWithCount(1);
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0].uri, "/ok?city=Z%C3%BCrich&dish=caf%C3%A9");
}

TEST(HttpHelpersTest, PercentEncodeNonAsciiLeavesTheHostAndAsciiAlone) {
  using mulligan::internal::PercentEncodeNonAscii;
  EXPECT_EQ(PercentEncodeNonAscii("http://h/a?b#c"), "http://h/a?b#c");
  EXPECT_EQ(PercentEncodeNonAscii("http://b\xc3\xbc" "cher.example/\xc3\xbc?x=\xc3\xbc#\xc3\xbc"),
            "http://b\xc3\xbc" "cher.example/%C3%BC?x=%C3%BC#%C3%BC");
  EXPECT_EQ(PercentEncodeNonAscii("http://j\xc3\xb6:pw@h\xc3\xa9:80/p"),
            "http://j%C3%B6:pw@h\xc3\xa9:80/p");
  EXPECT_EQ(PercentEncodeNonAscii("http://h:8080?q=\xe2\x82\xac"), "http://h:8080?q=%E2%82%AC");
  EXPECT_EQ(PercentEncodeNonAscii("http://h/%C3%A9\xff"), "http://h/%C3%A9%FF");
}

TEST_F(HttpClientTest, DownExhaustsAttemptsAndReturnsTheLast503) {
  auto client = MakeClient(FastRetry(3));
  ASSERT_NE(client, nullptr);
  HttpCallInfo info;
  Result<HttpResponse> r = client->Send(Get("/down"), &info);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(r->body, "down\n");
  EXPECT_EQ(r->attempts, 3);
  EXPECT_EQ(r->stop_reason, StopReason::kAttemptsExhausted);
  EXPECT_EQ(info.attempts, 3);
  EXPECT_EQ(info.stop_reason, StopReason::kAttemptsExhausted);
  EXPECT_EQ(info.last_error, ErrorKind::kNone);

  auto log = LogWithCount(3);
  ASSERT_EQ(log.size(), 3u);
  for (const auto& e : log) {
    EXPECT_EQ(e.uri, "/down");
    EXPECT_EQ(e.status, 503);
  }
}

TEST_F(HttpClientTest, FlakyEventuallySucceeds) {
  // Each attempt fails with probability 1/2 and Retry-After: 0, so 20
  // attempts all failing has probability 2^-20.
  auto client = MakeClient(FastRetry(20));
  ASSERT_NE(client, nullptr);
  Result<HttpResponse> r = client->Send(Get("/flaky"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "flaky ok\n");
  auto log = LogWithCount(static_cast<size_t>(r->attempts));
  ASSERT_EQ(log.size(), static_cast<size_t>(r->attempts));
  for (size_t i = 0; i + 1 < log.size(); ++i) EXPECT_EQ(log[i].status, 503);
  EXPECT_EQ(log.back().status, 200);
}

TEST_F(HttpClientTest, LimitedRetriesWaitForRetryAfter) {
  auto client = MakeClient(FastRetry(5));
  ASSERT_NE(client, nullptr);
  size_t attempts = 0;
  for (int i = 0; i < 10; ++i) {
    HttpCallInfo info;
    Result<HttpResponse> r = client->Send(Get("/limited"), &info);
    attempts += static_cast<size_t>(info.attempts);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->status, 200) << "request " << i;
    EXPECT_EQ(r->body, "limited ok\n");
    EXPECT_EQ(r->stop_reason, StopReason::kSucceeded);
  }

  auto log = LogWithCount(attempts);
  ASSERT_EQ(log.size(), attempts);
  int limited = 0;
  int ok = 0;
  for (size_t i = 0; i < log.size(); ++i) {
    EXPECT_EQ(log[i].uri, "/limited");
    if (log[i].status == 200) ++ok;
    if (log[i].status != 429) continue;
    ++limited;
    // Requests are sequential, so the next line is the retry of this one.
    ASSERT_LT(i + 1, log.size()) << "a 429 was not retried";
    EXPECT_GE(log[i + 1].start - log[i].msec, 1000)
        << "retry of request " << log[i].request_id << " came too early";
  }
  EXPECT_EQ(ok, 10);
  // 1 request per second: every request after the first meets a 429 first.
  EXPECT_GE(limited, 9);
}

TEST_F(HttpClientTest, RetryAfterWaitsThroughTheInjectedClock) {
  // Spend the one-per-second allowance with a real-clock client, so that the
  // fake-clock client's two attempts (a few milliseconds later in real time)
  // are both over the rate whatever ran before.
  auto warm = MakeClient(FastRetry(5));
  ASSERT_NE(warm, nullptr);
  Result<HttpResponse> first = warm->Send(Get("/limited"));
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_EQ(first->status, 200);
  LogWithCount(1);  // nginx logs after answering: let that line land first
  ClearLog();

  FakeClock clock;
  auto client = MakeClient(FastRetry(2), &clock);
  ASSERT_NE(client, nullptr);
  HttpCallInfo info;
  Result<HttpResponse> r = client->Send(Get("/limited"), &info);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 429);
  EXPECT_EQ(r->Header("Retry-After"), "1");
  EXPECT_EQ(r->attempts, 2);
  EXPECT_EQ(r->stop_reason, StopReason::kAttemptsExhausted);
  // One wait, exactly the Retry-After value (not the 1 ms backoff).
  EXPECT_EQ(clock.TotalSlept(), seconds(1));
  EXPECT_EQ(r->elapsed, seconds(1));
  EXPECT_EQ(info.elapsed, seconds(1));

  auto log = LogWithCount(2);
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[0].status, 429);
  EXPECT_EQ(log[1].status, 429);
}

TEST_F(HttpClientTest, PostWithoutKeyIsNotReplayed) {
  auto client = MakeClient(FastRetry(3));
  ASSERT_NE(client, nullptr);
  HttpCallInfo info;
  Result<HttpResponse> r = client->Send(Post("/down"), &info);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(r->attempts, 1);
  EXPECT_EQ(r->stop_reason, StopReason::kNotReplaySafe);
  EXPECT_EQ(info.stop_reason, StopReason::kNotReplaySafe);

  auto log = LogWithCount(1);
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0].method, "POST");
  EXPECT_EQ(log[0].idempotency_key, "");
}

TEST_F(HttpClientTest, PostWithKeyIsReplayedWithTheSameKey) {
  auto client = MakeClient(FastRetry(3));
  ASSERT_NE(client, nullptr);
  HttpRequest request = Post("/down");
  request.idempotency_key = "k-123";
  HttpCallInfo info;
  Result<HttpResponse> r = client->Send(request, &info);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(r->attempts, 3);
  EXPECT_EQ(r->stop_reason, StopReason::kAttemptsExhausted);
  EXPECT_EQ(r->idempotency_key, "k-123");
  EXPECT_EQ(info.idempotency_key, "k-123");

  auto log = LogWithCount(3);
  ASSERT_EQ(log.size(), 3u);
  for (const auto& e : log) {
    EXPECT_EQ(e.method, "POST");
    EXPECT_EQ(e.idempotency_key, "k-123");
  }
}

TEST_F(HttpClientTest, KeyInHeadersMakesPostReplaySafeAndBodyIsSentRaw) {
  auto client = MakeClient(FastRetry(3));
  ASSERT_NE(client, nullptr);
  HttpRequest request = Post("/echo", "a=1&b=2");
  request.headers = {{"idempotency-key", "from-header"}};
  Result<HttpResponse> r = client->Send(request);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "method=POST\nidempotency_key=from-header\nbody=a=1&b=2\n");
  EXPECT_EQ(r->idempotency_key, "from-header");

  request = Post("/down");
  request.headers = {{"Idempotency-Key", "from-header"}};
  r = client->Send(request);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->attempts, 3);
}

TEST_F(HttpClientTest, OtherMethodsReachTheServer) {
  auto client = MakeClient(FastRetry(1));
  ASSERT_NE(client, nullptr);
  for (const char* method : {"PUT", "DELETE", "PATCH", "OPTIONS"}) {
    HttpRequest request = Get("/echo");
    request.method = method;
    request.body = std::string(method) == "PUT" ? "put-body" : "";
    Result<HttpResponse> r = client->Send(request);
    ASSERT_TRUE(r.ok()) << method << ": " << r.status().ToString();
    EXPECT_EQ(r->status, 200) << method;
    EXPECT_EQ(r->body.rfind(std::string("method=") + method + "\n", 0), 0u) << r->body;
  }
  HttpRequest head = Get("/ok");
  head.method = "HEAD";
  Result<HttpResponse> r = client->Send(head);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "");
}

// One thread, one pooled easy handle: each request must leave nothing of its
// method or body to the next (handles are configured once and not reset).
TEST_F(HttpClientTest, OneHandleServesEveryMethodInTurn) {
  auto client = MakeClient(FastRetry(1));
  ASSERT_NE(client, nullptr);
  struct Step {
    const char* method;
    const char* body;
    const char* expected;  // the /echo body; nullptr for HEAD
  };
  const Step steps[] = {
      {"POST", "first", "method=POST\nidempotency_key=\nbody=first\n"},
      {"HEAD", "", nullptr},
      {"DELETE", "", "method=DELETE\nidempotency_key=\nbody=\n"},
      {"GET", "", "method=GET\nidempotency_key=\nbody=\n"},
      {"PUT", "second", "method=PUT\nidempotency_key=\nbody=second\n"},
      {"OPTIONS", "", "method=OPTIONS\nidempotency_key=\nbody=\n"},
      {"POST", "", "method=POST\nidempotency_key=\nbody=\n"},
      {"PATCH", "third", "method=PATCH\nidempotency_key=\nbody=third\n"},
      {"GET", "", "method=GET\nidempotency_key=\nbody=\n"},
  };
  for (const Step& step : steps) {
    HttpRequest request = Get("/echo");
    request.method = step.method;
    request.body = step.body;
    Result<HttpResponse> r = client->Send(request);
    ASSERT_TRUE(r.ok()) << step.method << ": " << r.status().ToString();
    EXPECT_EQ(r->status, 200) << step.method;
    if (step.expected == nullptr) {
      EXPECT_EQ(r->body, "") << step.method;
    } else {
      EXPECT_EQ(r->body, step.expected) << step.method;
    }
  }
  // nginx logged every method in order (HEAD included).
  auto log = LogWithCount(std::size(steps));
  ASSERT_EQ(log.size(), std::size(steps));
  for (size_t i = 0; i < std::size(steps); ++i) {
    EXPECT_EQ(log[i].method, steps[i].method) << i;
  }
}

// The same pooled handle, a new URL each time: every request goes where it
// says (libcurl must not keep the previous transfer's URL).
TEST_F(HttpClientTest, OneHandleFollowsEachRequestsUrl) {
  auto client = MakeClient(FastRetry(1));
  ASSERT_NE(client, nullptr);
  const std::pair<const char*, const char*> steps[] = {
      {"/ok", "ok\n"},
      {"/inspect?a=1", "method=GET\nargs=a=1\ncontent_type=\nbody=\n"},
      {"/inspect?b=2", "method=GET\nargs=b=2\ncontent_type=\nbody=\n"},
      {"/ok", "ok\n"},
  };
  for (const auto& [path, body] : steps) {
    Result<HttpResponse> r = client->Send(Get(path));
    ASSERT_TRUE(r.ok()) << path << ": " << r.status().ToString();
    EXPECT_EQ(r->status, 200) << path;
    EXPECT_EQ(r->body, body) << path;
    EXPECT_EQ(r->url, Url(path)) << path;
  }
}

TEST_F(HttpClientTest, ConnectionRefusedIsRetriedAndReported) {
  auto client = MakeClient(FastRetry(3));
  ASSERT_NE(client, nullptr);
  const std::string url = "http://127.0.0.1:" + std::to_string(ClosedPort()) + "/down";
  HttpRequest request;
  request.url = url;
  HttpCallInfo info;
  Result<HttpResponse> r = client->Send(request, &info);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kTransport) << r.status().ToString();
  EXPECT_NE(r.status().message().find("GET " + url + ": connection refused after 3 attempts"),
            std::string::npos)
      << r.status().message();
  EXPECT_EQ(info.attempts, 3);
  EXPECT_EQ(info.last_error, ErrorKind::kConnectionRefused);
  EXPECT_EQ(info.stop_reason, StopReason::kAttemptsExhausted);

  // Nothing was sent, so even a POST without a key may be tried again.
  request.method = "POST";
  request.body = "payload";
  r = client->Send(request, &info);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kTransport);
  EXPECT_EQ(info.attempts, 3);
  EXPECT_EQ(info.last_error, ErrorKind::kConnectionRefused);
  EXPECT_EQ(info.stop_reason, StopReason::kAttemptsExhausted);
}

TEST_F(HttpClientTest, SlowAttemptsTimeOut) {
  RetryOptions retry = FastRetry(2);
  retry.attempt_timeout = milliseconds(200);
  auto client = MakeClient(retry);
  ASSERT_NE(client, nullptr);
  HttpCallInfo info;
  const auto t0 = std::chrono::steady_clock::now();
  Result<HttpResponse> r = client->Send(Get("/slow?s=2"), &info);
  const auto wall = std::chrono::steady_clock::now() - t0;
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kTimeout) << r.status().ToString();
  EXPECT_EQ(info.attempts, 2);
  EXPECT_EQ(info.last_error, ErrorKind::kTimeout);
  EXPECT_EQ(info.stop_reason, StopReason::kAttemptsExhausted);
  EXPECT_GE(info.elapsed, milliseconds(400));
  EXPECT_LT(info.elapsed, milliseconds(1500));
  EXPECT_LT(wall, milliseconds(1500));
}

TEST_F(HttpClientTest, DeadlineEndsTheChainAfterATimeout) {
  RetryOptions retry = FastRetry(5);
  retry.deadline = milliseconds(300);
  auto client = MakeClient(retry);
  ASSERT_NE(client, nullptr);
  HttpCallInfo info;
  Result<HttpResponse> r = client->Send(Get("/slow?s=2"), &info);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded) << r.status().ToString();
  EXPECT_EQ(info.stop_reason, StopReason::kDeadline);
  EXPECT_EQ(info.last_error, ErrorKind::kTimeout);
  EXPECT_EQ(info.attempts, 1);
  EXPECT_LT(info.elapsed, milliseconds(1000));
}

TEST_F(HttpClientTest, SequentialCallsAndRetriesReuseOneConnection) {
  auto client = MakeClient(FastRetry(3));
  ASSERT_NE(client, nullptr);
  Result<HttpResponse> a = client->Send(Get("/ok"));
  Result<HttpResponse> b = client->Send(Get("/ok"));
  Result<HttpResponse> c = client->Send(Get("/down"));  // three attempts
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());

  auto log = LogWithCount(5);
  ASSERT_EQ(log.size(), 5u);
  for (size_t i = 0; i < log.size(); ++i) {
    EXPECT_EQ(log[i].connection, log[0].connection) << "request " << i;
    EXPECT_EQ(log[i].connection_requests, static_cast<long>(i + 1)) << "request " << i;
  }
}

TEST_F(HttpClientTest, ConcurrentSendsAreSafe) {
  auto client = MakeClient(FastRetry(3));
  ASSERT_NE(client, nullptr);
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10; ++i) {
        Result<HttpResponse> r = client->Send(Get("/ok"));
        if (r.ok() && r->status == 200 && r->body == "ok\n") ++ok;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 40);
  auto log = LogWithCount(40);
  EXPECT_EQ(log.size(), 40u);
  std::set<long> connections;
  for (const auto& e : log) connections.insert(e.connection);
  EXPECT_LE(connections.size(), 4u);  // at most one connection per thread
}

TEST_F(HttpClientTest, BadInputIsRejectedBeforeAnyAttempt) {
  auto client = MakeClient(FastRetry(3));
  ASSERT_NE(client, nullptr);
  std::vector<std::pair<std::string, HttpRequest>> cases;
  {
    HttpRequest r;
    r.url = "htp:/x";
    cases.emplace_back("malformed URL", r);
    r.url = "";
    cases.emplace_back("empty URL", r);
    r.url = "ftp://127.0.0.1/ok";
    cases.emplace_back("ftp scheme", r);
    r.url = "http://";
    cases.emplace_back("no host", r);
    r.url = Url("/ok?a b");
    cases.emplace_back("space in URL", r);
  }
  {
    HttpRequest r = Get("/ok");
    r.headers = {{"Bad Name", "x"}};
    cases.emplace_back("header name with a space", r);
    r.headers = {{"", "x"}};
    cases.emplace_back("empty header name", r);
    r.headers = {{"X-Injected", "a\r\nInjected: 1"}};
    cases.emplace_back("CRLF in a header value", r);
    r.headers = {{"X-Lf", "a\nb"}};
    cases.emplace_back("LF in a header value", r);
  }
  {
    HttpRequest r = Post("/ok");
    r.idempotency_key = "";
    cases.emplace_back("empty idempotency key", r);
    r.idempotency_key = "k\x01";
    cases.emplace_back("control character in the key", r);
    // What mulligan's own server side (ParseIdempotencyKey, at most 255
    // characters by default) would refuse or read as another key.
    r.idempotency_key = std::string(256, 'k');
    cases.emplace_back("a 256-character key", r);
    r.idempotency_key = "a\"b";
    cases.emplace_back("a quote in the key", r);
    r.idempotency_key = "a\\b";
    cases.emplace_back("a backslash in the key", r);
    r.idempotency_key = "\"k\"";
    cases.emplace_back("a quoted key (read back as k)", r);
    r.idempotency_key = " k";
    cases.emplace_back("a leading space in the key", r);
    r.idempotency_key = std::nullopt;
    r.headers = {{"Idempotency-Key", std::string(300, 'k')}};
    cases.emplace_back("a 300-character Idempotency-Key header", r);
    r.headers.clear();
    r.idempotency_key = "a";
    r.headers = {{"Idempotency-Key", "b"}};
    cases.emplace_back("conflicting keys", r);
  }
  {
    // Framing fields the client manages itself (any case, any value).
    HttpRequest r = Get("/ok");
    r.headers = {{"Content-Length", "5"}};
    cases.emplace_back("Content-Length", r);
    r.headers = {{"transfer-encoding", "chunked"}};
    cases.emplace_back("Transfer-Encoding", r);
    r.headers = {{"TE", "trailers"}};
    cases.emplace_back("TE", r);
    r.headers = {{"Upgrade", "websocket"}};
    cases.emplace_back("Upgrade", r);
    r = Post("/ok");
    r.headers = {{"X-A", "1"}, {"CONTENT-LENGTH", "7"}};
    cases.emplace_back("Content-Length on a POST", r);
  }
  {
    // A head over kMaxRequestHeadBytes (libcurl would fail "Out of memory").
    HttpRequest r = Get("/ok");
    r.headers = {{"X-Big", std::string(10 * 1024 * 1024, 'a')}};
    cases.emplace_back("10 MB header value", r);
    r.headers.clear();
    for (int i = 0; i < 600; ++i) r.headers.emplace_back("X-H" + std::to_string(i), std::string(1000, 'b'));
    cases.emplace_back("600 headers of 1000 bytes", r);
    r = Get("/ok?q=" + std::string(kMaxRequestHeadBytes, 'c'));
    cases.emplace_back("huge URL", r);
  }
  {
    HttpRequest r = Get("/ok");
    r.method = "GE T";
    cases.emplace_back("method with a space", r);
    r.method = "";
    cases.emplace_back("empty method", r);
  }
  for (const auto& [what, request] : cases) {
    HttpCallInfo info;
    info.attempts = 99;
    Result<HttpResponse> r = client->Send(request, &info);
    ASSERT_FALSE(r.ok()) << what;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << what << ": "
                                                              << r.status().ToString();
    EXPECT_EQ(info.attempts, 0) << what;
  }
  // One good request afterwards: it must be the only line in the log.
  Result<HttpResponse> good = client->Send(Get("/ok"));
  ASSERT_TRUE(good.ok()) << good.status().ToString();
  auto log = LogWithCount(1);
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0].uri, "/ok");
}

}  // namespace
}  // namespace http_test
}  // namespace mulligan
