// tests/core/http_client_test.cc — HttpClient end to end against a real nginx.
//
// A gtest Environment starts tests/nginx/nginx_server.py (`serve`) through
// popen(..., "w"): the launcher writes its port to a file, and pclose() closes
// its stdin, which stops nginx (so does a crash of this process). Each test
// reads nginx's JSON access log (tests/nginx/nginx.conf.in) to check what
// really reached the server: how many attempts, which Idempotency-Key, when
// each request started and on which connection.
//
// Only the /limited test sleeps for real (about 1 s per Retry-After).

#include "mulligan/http/async_engine.h"
#include "mulligan/http/client.h"
#include "mulligan/telemetry/metrics.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace mulligan {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// ---------------------------------------------------------------------------
// The nginx server

struct Server {
  FILE* launcher = nullptr;
  int port = 0;
  std::string workdir;
  std::string access_log;
  std::string base_url;
};
Server g_server;

class NginxEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    // A proxy from the environment must not sit between us and 127.0.0.1.
    setenv("NO_PROXY", "127.0.0.1,localhost", 1);
    setenv("no_proxy", "127.0.0.1,localhost", 1);

    char tmpl[] = "/tmp/mulligan-http-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr) << "mkdtemp failed";
    root_ = tmpl;
    g_server.workdir = root_ + "/nginx";
    g_server.access_log = g_server.workdir + "/logs/access.log";
    const std::string port_file = root_ + "/port";
    const std::string cmd = std::string("'") + MULLIGAN_PYTHON + "' '" + MULLIGAN_TESTS_DIR +
                            "/nginx/nginx_server.py' serve --port-file '" + port_file +
                            "' --workdir '" + g_server.workdir + "'";
    g_server.launcher = popen(cmd.c_str(), "w");
    ASSERT_NE(g_server.launcher, nullptr) << "cannot run: " << cmd;

    const auto give_up = std::chrono::steady_clock::now() + seconds(20);
    while (std::chrono::steady_clock::now() < give_up) {
      std::ifstream in(port_file);
      int port = 0;
      if (in >> port && port > 0) {
        g_server.port = port;
        break;
      }
      std::this_thread::sleep_for(milliseconds(20));
    }
    ASSERT_GT(g_server.port, 0) << "nginx did not start; command: " << cmd;
    g_server.base_url = "http://127.0.0.1:" + std::to_string(g_server.port);
    // nginx logs the launcher's start-up probe after answering it: wait for
    // that line, so that it cannot land after the first test cleared the log.
    const std::string log = g_server.workdir + "/logs/access.log";
    const auto probe_give_up = std::chrono::steady_clock::now() + seconds(2);
    while (std::chrono::steady_clock::now() < probe_give_up) {
      std::ifstream in(log);
      std::string line;
      if (std::getline(in, line) && !line.empty() && line.back() == '}') break;
      std::this_thread::sleep_for(milliseconds(5));
    }
  }

  void TearDown() override {
    if (g_server.launcher != nullptr) {
      pclose(g_server.launcher);  // end of stdin: the launcher stops nginx
      g_server.launcher = nullptr;
    }
    if (!root_.empty()) {
      std::string rm = "rm -rf '" + root_ + "'";
      if (std::system(rm.c_str()) != 0) std::fprintf(stderr, "could not remove %s\n", root_.c_str());
    }
  }

 private:
  std::string root_;
};

const ::testing::Environment* const g_env =
    ::testing::AddGlobalTestEnvironment(new NginxEnvironment);

std::string Url(const std::string& path) { return g_server.base_url + path; }

// ---------------------------------------------------------------------------
// The access log: one flat JSON object per line, every value a string.

struct LogEntry {
  int64_t msec = 0;   // when nginx logged the finished request, ms since the epoch
  int64_t start = 0;  // when nginx started reading it (msec - request_time), ms
  std::string method;
  std::string uri;
  int status = 0;
  std::string idempotency_key;
  std::string request_id;
  long connection = 0;
  long connection_requests = 0;
};

std::optional<std::string> JsonField(const std::string& line, const std::string& key) {
  const std::string needle = "\"" + key + "\":\"";
  size_t pos = line.find(needle);
  if (pos == std::string::npos) return std::nullopt;
  pos += needle.size();
  std::string out;
  for (; pos < line.size(); ++pos) {
    char c = line[pos];
    if (c == '"') return out;
    if (c == '\\' && pos + 1 < line.size()) {
      c = line[++pos];
      if (c == 'n') c = '\n';
      if (c == 'r') c = '\r';
      if (c == 't') c = '\t';
    }
    out += c;
  }
  return std::nullopt;  // a line still being written
}

// "1796012297.125" -> 1796012297125 (nginx prints exactly 3 decimals).
int64_t Millis(const std::string& s) {
  size_t dot = s.find('.');
  std::string whole = s.substr(0, dot);
  std::string frac = dot == std::string::npos ? "" : s.substr(dot + 1);
  frac = (frac + "000").substr(0, 3);
  return std::stoll(whole) * 1000 + std::stoll(frac);
}

std::vector<LogEntry> ReadLog() {
  std::vector<LogEntry> entries;
  std::ifstream in(g_server.access_log);
  std::string line;
  while (std::getline(in, line)) {
    auto msec = JsonField(line, "msec");
    auto request_time = JsonField(line, "request_time");
    auto status = JsonField(line, "status");
    auto connection_requests = JsonField(line, "connection_requests");
    if (!msec || !request_time || !status || !connection_requests) continue;
    LogEntry e;
    e.msec = Millis(*msec);
    e.start = e.msec - Millis(*request_time);
    e.method = JsonField(line, "method").value_or("");
    e.uri = JsonField(line, "uri").value_or("");
    e.status = std::stoi(*status);
    e.idempotency_key = JsonField(line, "idempotency_key").value_or("");
    e.request_id = JsonField(line, "request_id").value_or("");
    e.connection = std::stol(JsonField(line, "connection").value_or("0"));
    e.connection_requests = std::stol(*connection_requests);
    entries.push_back(std::move(e));
  }
  return entries;
}

void ClearLog() { std::ofstream(g_server.access_log, std::ios::trunc); }

// nginx writes a request's line just after sending the response, so a test
// that has just read the response polls briefly, and waits a little longer
// when it must show that no further line appears.
std::vector<LogEntry> LogWithCount(size_t expected) {
  const auto give_up = std::chrono::steady_clock::now() + seconds(2);
  std::vector<LogEntry> entries = ReadLog();
  while (entries.size() < expected && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(milliseconds(5));
    entries = ReadLog();
  }
  std::this_thread::sleep_for(milliseconds(50));
  return ReadLog();
}

// ---------------------------------------------------------------------------
// Helpers

RetryOptions FastRetry(int attempts) {
  RetryOptions retry;
  retry.max_attempts = attempts;
  retry.backoff.kind = BackoffKind::kConstant;
  retry.backoff.base = milliseconds(1);
  retry.backoff.jitter = JitterKind::kNone;
  return retry;
}

std::unique_ptr<HttpClient> MakeClient(const RetryOptions& retry, Clock* clock = nullptr) {
  HttpClientOptions options;
  options.retry = retry;
  options.clock = clock;
  Result<std::unique_ptr<HttpClient>> client = HttpClient::Create(options);
  EXPECT_TRUE(client.ok()) << client.status().ToString();
  return client.ok() ? std::move(client).value() : nullptr;
}

HttpRequest Get(const std::string& path) {
  HttpRequest request;
  request.url = Url(path);
  return request;
}

HttpRequest Post(const std::string& path, std::string body = "payload") {
  HttpRequest request;
  request.method = "POST";
  request.url = Url(path);
  request.body = std::move(body);
  return request;
}

// A loopback port with nothing listening on it.
int ClosedPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

class HttpClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_GT(g_server.port, 0) << "the nginx test server is not running";
    ClearLog();
  }
};

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

// ---------------------------------------------------------------------------
// Issue 5: completeness, failure kinds, hooks, breakers, the async engine

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

// Drives an HttpAsyncEngine with poll(2), as an event loop would.
struct PollDriver {
  explicit PollDriver(HttpAsyncEngine& e) : engine(e) {}
  HttpAsyncEngine& engine;
  std::map<int, int> watches;
  std::optional<std::chrono::steady_clock::time_point> timer;
  std::multimap<std::chrono::steady_clock::time_point, uint64_t> retries;
  std::map<uint64_t, Result<HttpResponse>> done;
  int retried = 0;

  void Apply() {
    for (const auto& w : engine.TakeSocketChanges()) {
      if (w.events <= 0) {  // 0: not watched any more; -1: closed
        watches.erase(w.fd);
      } else {
        watches[w.fd] = w.events;
      }
    }
    if (std::optional<long> t = engine.TakeTimerChange()) {
      if (*t < 0) {
        timer.reset();
      } else {
        timer = std::chrono::steady_clock::now() + milliseconds(*t);
      }
    }
    for (const auto& e : engine.TakeEvents()) {
      if (e.retry) {
        ++retried;
        retries.emplace(std::chrono::steady_clock::now() + e.decision.delay, e.id);
      } else {
        done.emplace(e.id, engine.Finish(e.id));
      }
    }
  }

  void Run(size_t calls) {
    const auto give_up = std::chrono::steady_clock::now() + seconds(20);
    while (done.size() < calls && std::chrono::steady_clock::now() < give_up) {
      Apply();
      auto now = std::chrono::steady_clock::now();
      while (!retries.empty() && retries.begin()->first <= now) {
        ASSERT_TRUE(engine.StartAttempt(retries.begin()->second).ok());
        retries.erase(retries.begin());
      }
      Apply();
      if (done.size() >= calls) break;
      auto wake = now + milliseconds(100);
      if (timer && *timer < wake) wake = *timer;
      if (!retries.empty() && retries.begin()->first < wake) wake = retries.begin()->first;
      std::vector<pollfd> fds;
      for (const auto& [fd, ev] : watches) {
        pollfd p{};
        p.fd = fd;
        p.events = static_cast<short>(((ev & HttpAsyncEngine::kRead) ? POLLIN : 0) |
                                      ((ev & HttpAsyncEngine::kWrite) ? POLLOUT : 0));
        fds.push_back(p);
      }
      const auto wait = std::chrono::duration_cast<milliseconds>(wake - now).count();
      poll(fds.data(), fds.size(), static_cast<int>(std::max<long long>(0, wait)));
      for (const auto& p : fds) {
        int ev = 0;
        if (p.revents & (POLLIN | POLLERR | POLLHUP)) ev |= HttpAsyncEngine::kRead;
        if (p.revents & POLLOUT) ev |= HttpAsyncEngine::kWrite;
        if (ev != 0) engine.SocketAction(p.fd, ev);
      }
      if (timer && std::chrono::steady_clock::now() >= *timer) {
        timer.reset();
        engine.SocketAction(-1, 0);
      }
    }
  }
};

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

}  // namespace
}  // namespace mulligan

namespace mulligan {
namespace {

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
}  // namespace mulligan
