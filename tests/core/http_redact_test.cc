// tests/core/http_redact_test.cc — credentials never leave through what the
// engine renders (mulligan/http/redact.h), and never travel to another
// origin on a redirect, end to end against a real nginx (http_fixture.h),
// through HttpClient (sync) and HttpAsyncEngine (async) alike.

#include "http_fixture.h"
#include "mulligan/http/redact.h"

namespace mulligan {
namespace http_test {
namespace {

// The secret every test plants, and must never find again.
constexpr const char* kSecret = "s3cr3t-9f2c";
// base64("user:s3cr3t-9f2c"): the Basic credentials of a URL's userinfo.
constexpr const char* kBasic = "Basic dXNlcjpzM2NyM3QtOWYyYw==";

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Sends `request` through a fresh HttpClient (sync) or HttpAsyncEngine
// driven by poll(2) (async); `info` filled in either way.
Result<HttpResponse> SendOnce(const HttpRequest& request, bool async, HttpCallInfo* info,
                              int attempts = 1) {
  HttpClientOptions options;
  options.retry = FastRetry(attempts);
  if (!async) {
    Result<std::unique_ptr<HttpClient>> client = HttpClient::Create(options);
    if (!client.ok()) return client.status();
    return (*client)->Send(request, info);
  }
  Result<std::unique_ptr<HttpAsyncEngine>> engine = HttpAsyncEngine::Create(options);
  if (!engine.ok()) return engine.status();
  PollDriver driver(**engine);
  Result<uint64_t> id = (*engine)->Begin(request);
  if (!id.ok()) return id.status();
  Status started = (*engine)->StartAttempt(*id);
  if (!started.ok()) return started;
  driver.Run(1);
  if (driver.done.count(*id) == 0) return InternalError("the async call did not finish");
  *info = driver.infos[*id];
  return std::move(driver.done.at(*id));
}

class HttpRedactTest : public HttpClientTest, public ::testing::WithParamInterface<bool> {};

INSTANTIATE_TEST_SUITE_P(SyncAndAsync, HttpRedactTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& p) {
                           return p.param ? std::string("Async") : std::string("Sync");
                         });

TEST_P(HttpRedactTest, AFailedCallsMessageEventsAndMetricsHoldNoSecret) {
  const int port = ClosedPort();
  const std::string origin = "http://127.0.0.1:" + std::to_string(port);
  std::vector<std::string> event_names;
  MetricsRegistry& registry = MetricsRegistry::Default();
  const uint64_t listener = registry.AddListener(
      [&](const Event& e) { event_names.emplace_back(e.name); });
  HttpRequest request;
  request.url = "http://user:" + std::string(kSecret) + "@127.0.0.1:" + std::to_string(port) +
                "/x?api_key=" + kSecret + "&q=1";
  request.headers = {{"Authorization", std::string("Bearer ") + kSecret},
                     {"Cookie", std::string("sid=") + kSecret}};
  HttpCallInfo info;
  Result<HttpResponse> r = SendOnce(request, GetParam(), &info, /*attempts=*/2);
  registry.RemoveListener(listener);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kTransport);
  EXPECT_EQ(info.attempts, 2);
  const std::string message = r.status().message();
  EXPECT_FALSE(Has(message, kSecret)) << message;
  EXPECT_EQ(message.rfind("GET http://[redacted]@127.0.0.1:" + std::to_string(port) +
                              "/x?api_key=[redacted]&q=1: connection refused after 2 attempts",
                          0),
            0u)
      << message;
  // Events and metrics are labelled by the origin, which has no userinfo.
  ASSERT_FALSE(event_names.empty());
  for (const std::string& name : event_names) EXPECT_EQ(name, origin);
  const std::string prometheus = registry.ToPrometheus();
  const std::string json = registry.ToJson();
  EXPECT_FALSE(Has(prometheus, kSecret));
  EXPECT_FALSE(Has(json, kSecret));
  EXPECT_TRUE(Has(prometheus, "name=\"" + origin + "\"")) << prometheus;
  EXPECT_TRUE(Has(json, "\"" + origin + "\""));
}

TEST_P(HttpRedactTest, InvalidUrlsAreQuotedMasked) {
  const struct {
    std::string url;
    std::string message;
  } cases[] = {
      {"ftp://user:" + std::string(kSecret) + "@host/",
       "invalid URL \"ftp://[redacted]@host/\": must start with http:// or https://"},
      {"http://user:" + std::string(kSecret) + " x@host/",
       "invalid URL \"http://[redacted]@host/\": contains a space or control character"},
      {"http://user:" + std::string(kSecret) + "@/x", "invalid URL \"http://[redacted]@/x\": "},
      {"http://127.0.0.1:99999/?token=" + std::string(kSecret),
       "invalid URL \"http://127.0.0.1:99999/?token=[redacted]\": "},
  };
  for (const auto& c : cases) {
    HttpRequest request;
    request.url = c.url;
    HttpCallInfo info;
    Result<HttpResponse> r = SendOnce(request, GetParam(), &info);
    ASSERT_FALSE(r.ok()) << c.url;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << c.url;
    EXPECT_FALSE(Has(r.status().message(), kSecret)) << r.status().message();
    EXPECT_EQ(r.status().message().rfind(c.message, 0), 0u) << r.status().message();
  }
}

TEST_P(HttpRedactTest, TheRequestItselfStillCarriesTheCredentials) {
  HttpRequest request;
  request.url = "http://user:" + std::string(kSecret) + "@127.0.0.1:" +
                std::to_string(g_server.port) + "/credentials?api_key=" + kSecret;
  HttpCallInfo info;
  Result<HttpResponse> r = SendOnce(request, GetParam(), &info);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_TRUE(Has(r->body, std::string("authorization=") + kBasic + "\n")) << r->body;
  std::vector<LogEntry> log = LogWithCount(1);
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0].uri, std::string("/credentials?api_key=") + kSecret);
}

// ---------------------------------------------------------------------------
// Redirects: libcurl (CURLOPT_UNRESTRICTED_AUTH off, its default; since
// 7.83 it applies to Cookie headers too) sends no Authorization, no Cookie
// and no URL credentials to another origin, and keeps them on the same one.

// A 302 from the test server to `to` (absolute), followed.
HttpRequest RedirectTo(const std::string& to, const std::string& userinfo = "") {
  HttpRequest request;
  request.url = "http://" + userinfo + "127.0.0.1:" + std::to_string(g_server.port) +
                "/redirect-to?to=" + to;
  request.follow_redirects = true;
  return request;
}

std::string Credentials(const std::string& host) {
  return "http://" + host + ":" + std::to_string(g_server.port) + "/credentials";
}

const HttpHeaders& SecretHeaders() {
  static const HttpHeaders headers = {{"Authorization", std::string("Bearer ") + kSecret},
                                      {"Cookie", std::string("sid=") + kSecret}};
  return headers;
}

TEST_P(HttpRedactTest, ARedirectToAnotherOriginCarriesNoHeaderCredentials) {
  // localhost is 127.0.0.1 here, but another host name: another origin.
  HttpRequest request = RedirectTo(Credentials("localhost"));
  request.headers = SecretHeaders();
  HttpCallInfo info;
  Result<HttpResponse> r = SendOnce(request, GetParam(), &info);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "authorization=\ncookie=\nproxy_authorization=\nhost=localhost:" +
                         std::to_string(g_server.port) + "\n");
  EXPECT_EQ(r->url, Credentials("localhost"));
}

TEST_P(HttpRedactTest, ARedirectToAnotherOriginCarriesNoUrlCredentials) {
  HttpRequest request = RedirectTo(Credentials("localhost"), "user:" + std::string(kSecret) + "@");
  HttpCallInfo info;
  Result<HttpResponse> r = SendOnce(request, GetParam(), &info);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->body, "authorization=\ncookie=\nproxy_authorization=\nhost=localhost:" +
                         std::to_string(g_server.port) + "\n");
}

TEST_P(HttpRedactTest, ARedirectToTheSameOriginKeepsTheCredentials) {
  HttpRequest request = RedirectTo(Credentials("127.0.0.1"));
  request.headers = SecretHeaders();
  HttpCallInfo info;
  Result<HttpResponse> r = SendOnce(request, GetParam(), &info);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->body, std::string("authorization=Bearer ") + kSecret + "\ncookie=sid=" + kSecret +
                         "\nproxy_authorization=\nhost=127.0.0.1:" +
                         std::to_string(g_server.port) + "\n");

  HttpRequest with_userinfo =
      RedirectTo(Credentials("127.0.0.1"), "user:" + std::string(kSecret) + "@");
  r = SendOnce(with_userinfo, GetParam(), &info);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(Has(r->body, std::string("authorization=") + kBasic + "\n")) << r->body;
}

}  // namespace
}  // namespace http_test
}  // namespace mulligan
