// The HTTP clients' breaker key: origin (default), host, path, path template,
// a function, or a key given per request. Template matching and validation
// without a server; the key's effect through HttpClient and HttpAsyncEngine
// against the real nginx of http_fixture.h (a 503 from /down opens exactly
// the breaker of its key; another key's requests still pass).
#include "http_fixture.h"

#include <memory>
#include <string>
#include <vector>

#include "mulligan/http/async_engine.h"
#include "mulligan/http/breaker_key.h"

namespace mulligan {
namespace http_test {
namespace {

TEST(BreakerKeyTest, PathTemplatesMatchWholeSegments) {
  EXPECT_TRUE(MatchPathTemplate("/users/{id}", "/users/42"));
  EXPECT_TRUE(MatchPathTemplate("/users/{id}/orders", "/users/7/orders"));
  EXPECT_FALSE(MatchPathTemplate("/users/{id}", "/users"));
  EXPECT_FALSE(MatchPathTemplate("/users/{id}", "/users/"));      // an empty segment
  EXPECT_FALSE(MatchPathTemplate("/users/{id}", "/users/42/"));   // a trailing '/' is one more
  EXPECT_FALSE(MatchPathTemplate("/users/{id}", "/users/4/2"));
  EXPECT_FALSE(MatchPathTemplate("/users/{id}", "/Users/42"));    // case-sensitive
  EXPECT_TRUE(MatchPathTemplate("/files/{path...}", "/files/a/b/c"));
  EXPECT_TRUE(MatchPathTemplate("/files/{path...}", "/files/a"));
  EXPECT_FALSE(MatchPathTemplate("/files/{path...}", "/files/"));
  EXPECT_FALSE(MatchPathTemplate("/files/{path...}", "/files"));
  EXPECT_TRUE(MatchPathTemplate("/", "/"));
  EXPECT_FALSE(MatchPathTemplate("/", "/a"));
}

TEST(BreakerKeyTest, KeysOfEachKind) {
  const std::string url = "HTTP://Api.Example.COM:8080/users/42?page=2#top";
  BreakerKeyOptions o;
  EXPECT_EQ(HttpBreakerKey(o, "GET", url), "http://api.example.com:8080");
  o.kind = BreakerKeyKind::kHost;
  EXPECT_EQ(HttpBreakerKey(o, "GET", url), "api.example.com");
  o.kind = BreakerKeyKind::kPath;
  EXPECT_EQ(HttpBreakerKey(o, "GET", url), "http://api.example.com:8080/users/42");
  o.kind = BreakerKeyKind::kPathTemplate;
  o.templates = {"/orders/{id}", "/users/{id}"};
  EXPECT_EQ(HttpBreakerKey(o, "GET", url), "http://api.example.com:8080/users/{id}");
  EXPECT_EQ(HttpBreakerKey(o, "GET", "http://api.example.com:8080/other"),
            "http://api.example.com:8080");  // unmatched: the origin
  o.kind = BreakerKeyKind::kFunction;
  o.function = [](std::string_view method, std::string_view) {
    return method == "POST" ? std::string("writes") : std::string();
  };
  EXPECT_EQ(HttpBreakerKey(o, "POST", url), "writes");
  EXPECT_EQ(HttpBreakerKey(o, "GET", url), "http://api.example.com:8080");  // empty: origin
  EXPECT_EQ(HttpBreakerKey(o, "GET", "not a url"), std::nullopt);
}

TEST(BreakerKeyTest, BadOptionsAreRefusedWithTheirReason) {
  BreakerKeyOptions o;
  o.kind = BreakerKeyKind::kPathTemplate;
  EXPECT_EQ(ValidateBreakerKey(o).message(),
            "breaker key kind path_template needs at least one template");
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"users/{id}", "it must start with '/'"},
      {"/users/{id", "'{' and '}' must enclose a whole segment"},
      {"/users/x{id}", "'{' and '}' must enclose a whole segment"},
      {"/users/{}", "'{' and '}' must enclose a whole segment"},
      {"/files/{p...}/x", "a '{name...}' parameter must be the last segment"},
  };
  for (const auto& [t, why] : bad) {
    o.templates = {t};
    const Status s = ValidateBreakerKey(o);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << t;
    EXPECT_EQ(s.message(), "breaker key template '" + t + "' is malformed: " + why);
  }
  o.kind = BreakerKeyKind::kFunction;
  EXPECT_EQ(ValidateBreakerKey(o).message(), "breaker key kind function needs a function");
  o.kind = static_cast<BreakerKeyKind>(9);
  EXPECT_EQ(ValidateBreakerKey(o).code(), StatusCode::kInvalidArgument);

  HttpClientOptions options;
  options.breaker_key.kind = BreakerKeyKind::kPathTemplate;
  Result<std::unique_ptr<HttpClient>> client = HttpClient::Create(options);
  EXPECT_EQ(client.status().code(), StatusCode::kInvalidArgument);
}

HttpClientOptions KeyedClient(BreakerKeyOptions key) {
  HttpClientOptions options;
  options.retry = FastRetry(1);
  BreakerRegistryOptions registry;
  registry.breaker.failure_threshold = 1;
  registry.breaker.reset_timeout = std::chrono::seconds(60);
  options.breakers = std::shared_ptr<BreakerRegistry>(BreakerRegistry::Create(registry).value());
  options.breaker_key = std::move(key);
  return options;
}

// Sends /down (a 503 that opens its breaker), then `probe`; returns whether
// the probe was refused, and the key of the refusal when it was.
std::pair<bool, std::string> OpensFor(HttpClient& client, const std::string& probe) {
  Result<HttpResponse> down = client.Send(Get("/down"));
  EXPECT_TRUE(down.ok()) << down.status().ToString();
  HttpCallInfo info;
  Result<HttpResponse> r = client.Send(Get(probe), &info);
  if (r.ok()) return {false, ""};
  EXPECT_EQ(r.status().code(), StatusCode::kCircuitOpen) << r.status().ToString();
  return {true, info.breaker_key};
}

TEST_F(HttpClientTest, TheOriginKeyOpensForEveryPathOfTheServer) {
  auto client = HttpClient::Create(KeyedClient({})).value();
  EXPECT_EQ(OpensFor(*client, "/ok"), std::make_pair(true, g_server.base_url));
}

TEST_F(HttpClientTest, ThePathKeyOpensOnlyForThatPath) {
  BreakerKeyOptions key;
  key.kind = BreakerKeyKind::kPath;
  auto client = HttpClient::Create(KeyedClient(key)).value();
  EXPECT_EQ(OpensFor(*client, "/ok"), std::make_pair(false, std::string()));
  HttpCallInfo info;
  EXPECT_EQ(client->Send(Get("/down"), &info).status().code(), StatusCode::kCircuitOpen);
  EXPECT_EQ(info.breaker_key, g_server.base_url + "/down");
  EXPECT_EQ(client->options().breakers->size(), 2u);  // one breaker per path
}

TEST_F(HttpClientTest, TheHostKeyAndTemplatesAndFunctions) {
  BreakerKeyOptions host;
  host.kind = BreakerKeyKind::kHost;
  auto by_host = HttpClient::Create(KeyedClient(host)).value();
  EXPECT_EQ(OpensFor(*by_host, "/ok"), std::make_pair(true, std::string("127.0.0.1")));

  BreakerKeyOptions templates;
  templates.kind = BreakerKeyKind::kPathTemplate;
  templates.templates = {"/ok"};
  auto by_template = HttpClient::Create(KeyedClient(templates)).value();
  // /down matches no template: the origin's breaker opens; /ok has its own.
  EXPECT_EQ(OpensFor(*by_template, "/ok"), std::make_pair(false, std::string()));
  HttpCallInfo info;
  EXPECT_EQ(by_template->Send(Get("/flaky"), &info).status().code(), StatusCode::kCircuitOpen);
  EXPECT_EQ(info.breaker_key, g_server.base_url);

  BreakerKeyOptions function;
  function.kind = BreakerKeyKind::kFunction;
  function.function = [](std::string_view, std::string_view url) {
    return url.find("/down") != std::string_view::npos ? std::string("downstream")
                                                       : std::string();
  };
  auto by_function = HttpClient::Create(KeyedClient(function)).value();
  EXPECT_EQ(OpensFor(*by_function, "/ok"), std::make_pair(false, std::string()));
  EXPECT_EQ(by_function->Send(Get("/down"), &info).status().code(), StatusCode::kCircuitOpen);
  EXPECT_EQ(info.breaker_key, "downstream");
}

TEST_F(HttpClientTest, ARequestsOwnKeyWins) {
  auto client = HttpClient::Create(KeyedClient({})).value();
  HttpRequest down = Get("/down");
  down.breaker_key = "payments";
  ASSERT_TRUE(client->Send(down).ok());
  EXPECT_TRUE(client->Send(Get("/ok")).ok());  // the origin's breaker is closed
  HttpRequest again = Get("/ok");
  again.breaker_key = "payments";
  HttpCallInfo info;
  EXPECT_EQ(client->Send(again, &info).status().code(), StatusCode::kCircuitOpen);
  EXPECT_EQ(info.breaker_key, "payments");
}

}  // namespace
}  // namespace http_test
}  // namespace mulligan
