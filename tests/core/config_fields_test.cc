// Tests that the configuration fields no Python front door can show reach
// the C++ one (issue 15, "Config files"; the Python suite's
// tests/python/config/test_config_fields.py has a behaviour test for every
// other field): retryable_grpc_codes decides a session's gRPC outcomes, and
// the two fields added with it, max_half_open_duration and breaker_key, load
// (with their errors and environment overrides) and change what a breaker
// built from the registry does.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mulligan/breaker/circuit_breaker.h"
#include "mulligan/config/config.h"
#include "mulligan/http/client_config.h"
#include "mulligan/retry/policy.h"

namespace mulligan {
namespace {

using std::chrono::seconds;

LoadOptions NoEnv() {
  LoadOptions options;
  options.env_overrides = false;
  return options;
}

LoadOptions Env(std::map<std::string, std::string> vars) {
  LoadOptions options;
  options.env_names = [vars]() {
    std::vector<std::string> names;
    for (const auto& entry : vars) names.push_back(entry.first);
    return names;
  };
  options.env = [vars = std::move(vars)](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
  return options;
}

// The attempts a call makes under policy "p" of `json` when every attempt
// ends with gRPC status `code` (8 = RESOURCE_EXHAUSTED).
int AttemptsOnGrpc(const std::string& json, int code) {
  PolicyRegistry registry;
  EXPECT_TRUE(registry.LoadString(json, "fields.json", NoEnv()).ok());
  std::shared_ptr<const RetryPolicy> policy = *registry.Policy("p");
  FakeClock clock;
  RetrySession session = policy->Begin(clock.Now());
  for (int attempt = 1;; ++attempt) {
    const Decision d = session.OnOutcome(Outcome::Grpc(code), clock.Now());
    if (d.action == Decision::Action::kStop || attempt > 10) return attempt;
    clock.Advance(d.delay);
  }
}

TEST(ConfigFields, RetryableGrpcCodesReachTheCall) {
  // RESOURCE_EXHAUSTED is terminal by default (only UNAVAILABLE retries),
  // retryable once listed: 1 attempt against max_attempts = 3.
  EXPECT_EQ(AttemptsOnGrpc(R"({"policies": {"p": {"base_delay": 0}}})", 8), 1);
  EXPECT_EQ(AttemptsOnGrpc(
                R"({"policies": {"p": {"base_delay": 0,
                    "retryable_grpc_codes": ["RESOURCE_EXHAUSTED"]}}})",
                8),
            3);
  EXPECT_EQ(AttemptsOnGrpc(R"({"policies": {"p": {"base_delay": 0}}})", 14), 3);
}

// The state of breaker "b" of `json` after: one failure (it opens), 5 s (it
// is half-open), one successful probe of two, then 3 s more.
BreakerState AfterAProbe(const std::string& json) {
  PolicyRegistry registry;
  EXPECT_TRUE(registry.LoadString(json, "fields.json", NoEnv()).ok());
  FakeClock clock;
  std::unique_ptr<CircuitBreaker> b =
      std::move(CircuitBreaker::Create(*registry.Breaker("b"))).value();
  Admission a = b->Acquire(clock.Now());
  b->Record(a.permit, CallResult::kFailure, Duration::zero(), clock.Now());
  clock.Advance(seconds(5));
  a = b->Acquire(clock.Now());
  EXPECT_EQ(b->state(clock.Now()), BreakerState::kHalfOpen);
  b->Record(a.permit, CallResult::kSuccess, Duration::zero(), clock.Now());
  clock.Advance(seconds(3));
  return b->state(clock.Now());
}

TEST(ConfigFields, MaxHalfOpenDurationReachesTheBreaker) {
  const std::string base =
      R"({"breakers": {"b": {"failure_threshold": 1, "reset_timeout": "5s",
          "half_open_max_calls": 2)";
  EXPECT_EQ(AfterAProbe(base + R"(, "max_half_open_duration": "3s"}}})"), BreakerState::kOpen);
  EXPECT_EQ(AfterAProbe(base + "}}}"), BreakerState::kHalfOpen);

  PolicyRegistry registry;
  ASSERT_TRUE(registry.LoadString(R"({"breakers": {"b": {}}})", "env.json",
                                  Env({{"MULLIGAN_BREAKER_B_MAX_HALF_OPEN_DURATION", "1.5s"}}))
                  .ok());
  EXPECT_EQ(registry.Breaker("b")->max_half_open_duration,
            std::optional<Duration>(std::chrono::milliseconds(1500)));

  Result<std::shared_ptr<const ConfigSnapshot>> bad = ParseConfig(
      R"({"breakers": {"b": {"max_half_open_duration": -1}}})", "bad.json", NoEnv());
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "bad.json: breakers.b.max_half_open_duration: expected a duration greater than 0 "
            "such as \"10s\", got -1");
}

TEST(ConfigFields, BreakerKeyLoadsEachFormAndNamesItsErrors) {
  PolicyRegistry registry;
  ASSERT_TRUE(registry
                  .LoadString(R"({"clients": {"h": {"breaker_key": "host"},
                                  "t": {"breaker_key": ["/users/{id}", "/files/{p...}"]},
                                  "o": {}}})",
                              "keys.json", NoEnv())
                  .ok());
  EXPECT_EQ(registry.Client("h")->breaker_key.kind, BreakerKeyKind::kHost);
  EXPECT_EQ(registry.Client("o")->breaker_key.kind, BreakerKeyKind::kOrigin);
  const ClientSettings t = *registry.Client("t");
  EXPECT_EQ(t.breaker_key.kind, BreakerKeyKind::kPathTemplate);
  EXPECT_EQ(t.breaker_key.templates, (std::vector<std::string>{"/users/{id}", "/files/{p...}"}));

  ASSERT_TRUE(registry.LoadString(R"({"clients": {"c": {}}})", "env.json",
                                  Env({{"MULLIGAN_CLIENT_C_BREAKER_KEY", "path"}}))
                  .ok());
  EXPECT_EQ(registry.Client("c")->breaker_key.kind, BreakerKeyKind::kPath);

  Result<std::shared_ptr<const ConfigSnapshot>> bad =
      ParseConfig(R"({"clients": {"a": {"breaker_key": "url"}, "b": {"breaker_key": []},
                      "c": {"breaker_key": ["/ok", "users"]}}})",
                  "bad.json", NoEnv());
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "bad.json: clients.a.breaker_key: expected \"origin\", \"host\", \"path\" or a "
            "non-empty array of path templates, got \"url\"\n"
            "bad.json: clients.b.breaker_key: expected \"origin\", \"host\", \"path\" or a "
            "non-empty array of path templates, got an array\n"
            "bad.json: clients.c.breaker_key[1]: breaker key template 'users' is malformed: it "
            "must start with '/'");
}

TEST(ConfigFields, HttpClientOptionsFromConfigTakesEveryField) {
  PolicyRegistry registry;
  ASSERT_TRUE(registry
                  .LoadString(R"({"policies": {"p": {"max_attempts": 2, "retryable_statuses": [429],
                                    "respect_retry_after": false}},
                                  "breakers": {"b": {"failure_threshold": 0, "window": "count",
                                    "window_size": 4, "minimum_calls": 2,
                                    "max_half_open_duration": "3s"}},
                                  "clients": {"c": {"policy": "p", "breaker": "b",
                                    "connect_timeout": "2s", "attempt_timeout": "3s",
                                    "verify_tls": false, "user_agent": "shop/1.0",
                                    "breaker_key": ["/users/{id}"]}, "bare": {}}})",
                              "client.json", NoEnv())
                  .ok());
  const HttpClientOptions o = *HttpClientOptionsFromConfig(registry, "c");
  EXPECT_EQ(o.retry.max_attempts, 2);
  EXPECT_EQ(o.retry.retryable_statuses, std::vector<int>{429});
  EXPECT_FALSE(o.retry.respect_retry_after);
  EXPECT_EQ(o.connect_timeout, seconds(2));
  EXPECT_EQ(o.attempt_timeout, seconds(3));
  EXPECT_FALSE(o.verify_tls);
  EXPECT_EQ(o.user_agent, "shop/1.0");
  EXPECT_EQ(o.breaker_key.kind, BreakerKeyKind::kPathTemplate);
  EXPECT_EQ(o.breaker_key.templates, std::vector<std::string>{"/users/{id}"});
  ASSERT_NE(o.breakers, nullptr);
  const CircuitBreakerOptions& b = o.breakers->options().breaker;
  EXPECT_EQ(b.failure_threshold, 0);
  EXPECT_EQ(b.window, WindowKind::kCount);
  EXPECT_EQ(b.window_size, 4);
  EXPECT_EQ(b.minimum_calls, 2);
  EXPECT_EQ(b.max_half_open_duration, std::optional<Duration>(seconds(3)));

  const HttpClientOptions bare = *HttpClientOptionsFromConfig(registry, "bare");
  EXPECT_EQ(bare.retry.max_attempts, 3);
  EXPECT_EQ(bare.breakers, nullptr);
  EXPECT_EQ(bare.user_agent, "mulligan");
  EXPECT_EQ(HttpClientOptionsFromConfig(registry, "nope").status().message(),
            "no client named \"nope\" in client.json (known: bare, c)");
}

}  // namespace
}  // namespace mulligan
