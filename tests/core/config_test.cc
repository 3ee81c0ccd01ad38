// Tests of mulligan/config/config.h: the JSON loader (exact error messages), gRPC
// service configs, environment overrides and atomic reload under calls.
#include "mulligan/config/config.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <string>
#include <thread>
#include <vector>

#ifndef MULLIGAN_TESTS_DIR
#define MULLIGAN_TESTS_DIR "tests"
#endif

namespace mulligan {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// An environment made of a map, so tests never touch the process's.
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

std::string ErrorOf(std::string_view text, std::string_view source = "payments.json") {
  Result<std::shared_ptr<const ConfigSnapshot>> r = ParseConfig(text, source, Env({}));
  if (r.ok()) return "<ok>";
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  return r.status().message();
}

std::string WriteTemp(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "mulligan_config_test_" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(ConfigErrors, WrongType) {
  EXPECT_EQ(ErrorOf(R"({"policies": {"payments": {"max_attempts": "three"}}})"),
            "payments.json: policies.payments.max_attempts: expected an integer >= 1, got "
            "\"three\"");
  EXPECT_EQ(ErrorOf(R"({"policies": {"payments": {"respect_retry_after": 1}}})"),
            "payments.json: policies.payments.respect_retry_after: expected true or false, got 1");
  EXPECT_EQ(ErrorOf(R"({"policies": []})"),
            "payments.json: policies: expected an object of retry policies by name, got an "
            "array");
  EXPECT_EQ(ErrorOf(R"({"policies": {"payments": {"jitter": "fuzzy"}}})"),
            "payments.json: policies.payments.jitter: expected one of \"none\", \"full\", "
            "\"equal\" or \"proportional\", got \"fuzzy\"");
}

TEST(ConfigErrors, NegativeDuration) {
  EXPECT_EQ(ErrorOf(R"({"policies": {"payments": {"max_delay": -3}}})"),
            "payments.json: policies.payments.max_delay: expected a duration such as \"10s\", "
            "got -3");
  EXPECT_EQ(ErrorOf(R"({"policies": {"payments": {"max_delay": "-3s"}}})"),
            "payments.json: policies.payments.max_delay: expected a duration such as \"10s\", "
            "got \"-3s\"");
  EXPECT_EQ(ErrorOf(R"({"breakers": {"db": {"reset_timeout": 0}}})"),
            "payments.json: breakers.db.reset_timeout: expected a duration greater than 0 such "
            "as \"10s\", got 0");
}

// Found by tests/fuzz/fuzz_grpc_config: a positive duration below half a
// nanosecond passed the "greater than 0" check and then rounded to 0 ns (a
// gRPC initialBackoff of 0: retries without any wait).
TEST(ConfigErrors, APositiveDurationThatRoundsToZeroIsNotGreaterThanZero) {
  EXPECT_EQ(ErrorOf(R"({"breakers": {"db": {"reset_timeout": "0.0000000001s"}}})"),
            "payments.json: breakers.db.reset_timeout: expected a duration greater than 0 such "
            "as \"10s\", got \"0.0000000001s\" (it rounds to 0 ns)");
  EXPECT_EQ(ErrorOf(R"({"policies": {"payments": {"deadline": 1e-10}}})"),
            "payments.json: policies.payments.deadline: expected a duration greater than 0 "
            "such as \"10s\", got 1e-10 (it rounds to 0 ns)");
  EXPECT_EQ(
      ErrorOf(R"({"methodConfig": [{"name": [{}], "retryPolicy": {"maxAttempts": 3,
        "initialBackoff": "0.0000000001s", "maxBackoff": "1s", "backoffMultiplier": 2,
        "retryableStatusCodes": ["UNAVAILABLE"]}}]})",
              "svc.json"),
      "svc.json: methodConfig[0].retryPolicy.initialBackoff: expected a duration string such "
      "as \"0.1s\" greater than 0, got \"0.0000000001s\"");
  // Half a nanosecond and more round to 1 ns, which is greater than 0.
  Result<std::shared_ptr<const ConfigSnapshot>> one_ns =
      ParseConfig(R"({"breakers": {"db": {"reset_timeout": "0.6ns"}}})", "x.json", Env({}));
  ASSERT_TRUE(one_ns.ok()) << one_ns.status().ToString();
  EXPECT_EQ((*one_ns)->breakers.at("db").reset_timeout, std::chrono::nanoseconds(1));
}

TEST(ConfigErrors, UnknownUnit) {
  EXPECT_EQ(ErrorOf(R"({"policies": {"payments": {"base_delay": "250mss"}}})"),
            "payments.json: policies.payments.base_delay: expected a duration such as \"10s\", "
            "got \"250mss\" (unknown unit \"mss\"; use ns, us, ms, s, m or h)");
  EXPECT_EQ(ErrorOf(R"({"policies": {"payments": {"base_delay": "250"}}})"),
            "payments.json: policies.payments.base_delay: expected a duration such as \"10s\", "
            "got \"250\" (missing unit: ns, us, ms, s, m or h; a bare number of seconds must "
            "not be quoted)");
}

TEST(ConfigErrors, UnknownField) {
  EXPECT_EQ(ErrorOf(R"({"policies": {"payments": {"max_attempt": 3}}})"),
            "payments.json: policies.payments.max_attempt: unknown field, did you mean "
            "\"max_attempts\"?");
  EXPECT_EQ(ErrorOf(R"({"breakers": {"db": {"colour": "red"}}})"),
            "payments.json: breakers.db.colour: unknown field; expected one of: "
            "failure_threshold, window, window_size, window_duration, window_buckets, "
            "failure_rate_threshold, minimum_calls, slow_call_duration, "
            "slow_call_rate_threshold, reset_timeout, reset_timeout_multiplier, "
            "max_reset_timeout, half_open_max_calls, max_half_open_duration, permit_timeout, "
            "shared");  // "shared": an entry's field (0.6)
  EXPECT_EQ(ErrorOf(R"({"policy": {}})"),
            "payments.json: policy: unknown field, did you mean \"policies\"?");
}

TEST(ConfigErrors, InvalidJsonGivesLineAndColumn) {
  EXPECT_EQ(ErrorOf("{\n  \"policies\": {\n    \"payments\": {\"max_attempts\": 3,}\n  }\n}"),
            "payments.json: line 3, column 36: invalid JSON: syntax error");
  EXPECT_EQ(ErrorOf("{\"policies\": {}"),
            "payments.json: line 1, column 16: invalid JSON: incomplete JSON");
}

TEST(ConfigErrors, DuplicateKeyIsAnErrorWithItsPlace) {
  // Boost.JSON would keep one of the two silently; the file is refused. The
  // place is the end of the repeated key (its closing quote).
  EXPECT_EQ(ErrorOf("{\n  \"policies\": {\n    \"payments\": {\"max_attempts\": 3, "
                    "\"max_attempts\": 5}\n  }\n}"),
            "payments.json: line 3, column 50: duplicate key \"max_attempts\" (each key may "
            "appear once per object)");
  EXPECT_EQ(ErrorOf("{\"policies\": {\"a\": {}, \"a\": {}}}"),
            "payments.json: line 1, column 26: duplicate key \"a\" (each key may appear once "
            "per object)");
  // The empty key is a key like any other.
  EXPECT_EQ(ErrorOf("{\"x\": {\"\": 1, \"\": 2}}"),
            "payments.json: line 1, column 16: duplicate key \"\" (each key may appear once "
            "per object)");
  // The same key in two different objects is fine.
  Result<std::shared_ptr<const ConfigSnapshot>> ok = ParseConfig(
      "{\"policies\": {\"a\": {\"max_attempts\": 2}, \"b\": {\"max_attempts\": 3}}}",
      "payments.json", Env({}));
  EXPECT_TRUE(ok.ok()) << ok.status().ToString();
}

TEST(ConfigErrors, MissingFile) {
  Result<std::shared_ptr<const ConfigSnapshot>> r =
      ParseConfigFile("/nonexistent/payments.json", Env({}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "/nonexistent/payments.json: cannot read the configuration file: No such file or "
            "directory");
}

TEST(ConfigErrors, EveryErrorIsReportedOnItsOwnLine) {
  EXPECT_EQ(ErrorOf(R"({"policies": {"a": {"max_attempts": 0}, "b": {"multiplier": "x"}}})"),
            "payments.json: policies.a.max_attempts: expected an integer >= 1, got 0\n"
            "payments.json: policies.b.multiplier: expected a number >= 0, got \"x\"");
}

TEST(ConfigErrors, CrossFieldAndReferences) {
  EXPECT_EQ(ErrorOf(R"({"clients": {"api": {"policy": "nope"}}})"),
            "payments.json: clients.api.policy: expected the name of a policy in \"policies\", "
            "got \"nope\"");
  EXPECT_EQ(ErrorOf(R"({"version": 2})"), "payments.json: version: expected 1, got 2");
  EXPECT_EQ(ErrorOf(R"([1])"),
            "payments.json: (top level): expected an object such as {\"policies\": {...}}, got "
            "an array");
}

constexpr const char* kTwoPolicies = R"({
  "version": 1,
  "defaults": {"policy": {"jitter": "equal"}},
  "policies": {
    "payments": {"max_attempts": 5, "base_delay": "100ms", "max_delay": "2s",
                 "multiplier": 3, "deadline": "1m30s", "retryable_statuses": [503],
                 "seed": 42},
    "search": {"backoff": "constant", "base_delay": 0.05, "jitter": "none",
               "attempt_timeout": "1.5s", "retryable_grpc_codes": ["UNAVAILABLE", 8]}
  },
  "breakers": {
    "payments": {"failure_threshold": 3, "reset_timeout": "10s", "half_open_max_calls": 2,
                 "window": "count", "window_size": 20, "minimum_calls": 5,
                 "failure_rate_threshold": 40}
  },
  "clients": {
    "payments": {"policy": "payments", "breaker": "payments", "connect_timeout": "500ms",
                 "user_agent": "shop/1.0"}
  }
})";

TEST(ConfigLoad, TwoPoliciesAndABreakerWithExactFields) {
  const std::string path = WriteTemp("two.json", kTwoPolicies);
  PolicyRegistry registry;
  Result<LoadReport> report = registry.LoadFile(path, Env({}));
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_EQ(report->source, path);
  EXPECT_EQ(report->policies, (std::vector<std::string>{"payments", "search"}));
  EXPECT_EQ(report->breakers, (std::vector<std::string>{"payments"}));
  EXPECT_EQ(report->clients, (std::vector<std::string>{"payments"}));
  EXPECT_TRUE(report->warnings.empty());

  std::shared_ptr<const RetryPolicy> p = registry.Policy("payments").value();
  const RetryOptions& o = p->options();
  EXPECT_EQ(o.max_attempts, 5);
  EXPECT_EQ(o.backoff.kind, BackoffKind::kExponential);
  EXPECT_EQ(o.backoff.base, milliseconds(100));
  EXPECT_EQ(o.backoff.max_delay, seconds(2));
  EXPECT_EQ(o.backoff.multiplier, 3.0);
  EXPECT_EQ(o.backoff.jitter, JitterKind::kEqual);  // from "defaults"
  EXPECT_EQ(o.deadline, std::optional<Duration>(seconds(90)));
  EXPECT_FALSE(o.attempt_timeout.has_value());
  EXPECT_EQ(o.retryable_statuses, std::vector<int>{503});
  EXPECT_EQ(o.retryable_grpc_codes, std::vector<int>{14});
  EXPECT_EQ(o.seed, std::optional<uint64_t>(42));
  EXPECT_EQ(o.retry_after_max, seconds(60));

  std::shared_ptr<const RetryPolicy> s = registry.Policy("search").value();
  EXPECT_EQ(s->options().max_attempts, 3);
  EXPECT_EQ(s->options().backoff.kind, BackoffKind::kConstant);
  EXPECT_EQ(s->options().backoff.base, milliseconds(50));
  EXPECT_EQ(s->options().backoff.jitter, JitterKind::kNone);
  EXPECT_EQ(s->options().attempt_timeout, std::optional<Duration>(milliseconds(1500)));
  EXPECT_EQ(s->options().retryable_grpc_codes, (std::vector<int>{14, 8}));
  EXPECT_EQ(s->Classify(Outcome::Grpc(8)), Classification::kRetryable);
  EXPECT_EQ(s->Classify(Outcome::Grpc(5)), Classification::kTerminal);
  EXPECT_EQ(s->Classify(Outcome::Grpc(0)), Classification::kSuccess);

  CircuitBreakerOptions b = registry.Breaker("payments").value();
  EXPECT_EQ(b.name, "payments");
  EXPECT_EQ(b.failure_threshold, 3);
  EXPECT_EQ(b.reset_timeout, seconds(10));
  EXPECT_EQ(b.half_open_max_calls, 2);
  EXPECT_EQ(b.window, WindowKind::kCount);
  EXPECT_EQ(b.window_size, 20);
  EXPECT_EQ(b.minimum_calls, 5);
  EXPECT_EQ(b.failure_rate_threshold, 40.0);
  EXPECT_EQ(b.permit_timeout, seconds(60));

  ClientSettings c = registry.Client("payments").value();
  EXPECT_EQ(c.policy, "payments");
  EXPECT_EQ(c.breaker, "payments");
  EXPECT_EQ(c.connect_timeout, milliseconds(500));
  EXPECT_EQ(c.attempt_timeout, seconds(30));
  EXPECT_TRUE(c.verify_tls);
  EXPECT_EQ(c.user_agent, "shop/1.0");

  Result<std::shared_ptr<const RetryPolicy>> missing = registry.Policy("nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(),
            "no retry policy named \"nope\" in " + path + " (known: payments, search)");
}

TEST(ConfigLoad, SeededDelaysMatchTheSharedExample) {
  // examples/config/mulligan.json is also loaded by the C and Python suites;
  // tests/vectors/config/expected.json holds what all three must see.
  PolicyRegistry registry;
  Result<LoadReport> report =
      registry.LoadFile(MULLIGAN_TESTS_DIR "/../examples/config/mulligan.json", Env({}));
  ASSERT_TRUE(report.ok()) << report.status().message();
  std::ifstream in(MULLIGAN_TESTS_DIR "/vectors/config/expected.json");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const boost::json::object expected = boost::json::parse(text).as_object();

  std::shared_ptr<const RetryPolicy> p = registry.Policy("payments").value();
  RetrySession session = p->Begin(TimePoint{});
  std::vector<int64_t> delays_ns;
  for (;;) {
    Decision d = session.OnOutcome(Outcome::Http(503), TimePoint{});
    if (!d.retry()) break;
    delays_ns.push_back(d.delay.count());
  }
  std::vector<int64_t> want;
  for (const boost::json::value& v : expected.at("payments_delays_ns").as_array()) {
    want.push_back(v.to_number<int64_t>());
  }
  EXPECT_EQ(delays_ns, want);

  const boost::json::object& b = expected.at("breaker_payments").as_object();
  CircuitBreakerOptions breaker = registry.Breaker("payments").value();
  EXPECT_EQ(breaker.failure_threshold, b.at("failure_threshold").to_number<int>());
  EXPECT_EQ(breaker.half_open_max_calls, b.at("half_open_max_calls").to_number<int>());
  EXPECT_EQ(std::chrono::duration_cast<std::chrono::milliseconds>(breaker.reset_timeout).count(),
            b.at("reset_timeout_ms").to_number<int64_t>());
  EXPECT_EQ(breaker.window_size, b.at("window_size").to_number<int>());
  EXPECT_EQ(breaker.minimum_calls, b.at("minimum_calls").to_number<int>());
  EXPECT_EQ(breaker.failure_rate_threshold, b.at("failure_rate_threshold").to_number<double>());
}

TEST(ConfigLoad, DurationForms) {
  EXPECT_EQ(ParseDuration("500us").value(), std::chrono::microseconds(500));
  EXPECT_EQ(ParseDuration("250ms").value(), milliseconds(250));
  EXPECT_EQ(ParseDuration("1.5s").value(), milliseconds(1500));
  EXPECT_EQ(ParseDuration("2m").value(), seconds(120));
  EXPECT_EQ(ParseDuration("1h").value(), seconds(3600));
  EXPECT_EQ(ParseDuration("1m30s").value(), seconds(90));
  EXPECT_FALSE(ParseDuration("1.2.3s").ok());
  EXPECT_FALSE(ParseDuration("s").ok());
  EXPECT_FALSE(ParseDuration("").ok());
}

TEST(ConfigGrpc, MaxAttemptsAboveFiveIsCappedWithAWarning) {
  constexpr const char* kService = R"({
    "loadBalancingConfig": [{"round_robin": {}}],
    "methodConfig": [{
      "name": [{"service": "shop.Payments", "method": "Charge"}, {"service": "shop.Cart"}],
      "timeout": "10s",
      "retryPolicy": {
        "maxAttempts": 7,
        "initialBackoff": "0.1s",
        "maxBackoff": "1s",
        "backoffMultiplier": 2,
        "retryableStatusCodes": ["UNAVAILABLE", "RESOURCE_EXHAUSTED"]
      }
    }]
  })";
  PolicyRegistry registry;
  Result<LoadReport> report = registry.LoadString(kService, "service.json", Env({}));
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_EQ(report->policies, (std::vector<std::string>{"shop.Cart", "shop.Payments/Charge"}));
  EXPECT_EQ(report->warnings,
            (std::vector<std::string>{
                "service.json: loadBalancingConfig: ignored (mulligan reads only "
                "methodConfig[].retryPolicy and retryThrottling)",
                "service.json: methodConfig[0].retryPolicy.maxAttempts: 7 is capped at 5, as "
                "gRPC does (gRFC A6)"}));
  const RetryOptions& o = registry.Policy("shop.Payments/Charge").value()->options();
  EXPECT_EQ(o.max_attempts, 5);
  EXPECT_EQ(o.backoff.kind, BackoffKind::kExponential);
  // gRFC A6 since August 2024: min(initial * multiplier^(n-1), max) * random(0.8, 1.2).
  EXPECT_EQ(o.backoff.jitter, JitterKind::kProportional);
  EXPECT_EQ(o.backoff.jitter_fraction, 0.2);
  EXPECT_EQ(o.backoff.base, milliseconds(100));
  EXPECT_EQ(o.backoff.max_delay, milliseconds(1200));  // maxBackoff * 1.2, A6's longest wait
  EXPECT_EQ(o.backoff.multiplier, 2.0);
  EXPECT_EQ(o.deadline, std::optional<Duration>(seconds(10)));
  EXPECT_EQ(o.retryable_grpc_codes, (std::vector<int>{14, 8}));

  // gRPC codes join the classification; HTTP-less outcomes keep the defaults.
  const RetryPolicy& p = *registry.Policy("shop.Cart").value();
  EXPECT_EQ(p.Classify(Outcome::Grpc(14)), Classification::kRetryable);
  EXPECT_EQ(p.Classify(Outcome::Grpc(8)), Classification::kRetryable);
  EXPECT_EQ(p.Classify(Outcome::Grpc(4)), Classification::kTerminal);
  EXPECT_EQ(p.Classify(Outcome::Grpc(0)), Classification::kSuccess);
}

// gRFC A6 "Hedging Policy" (0.6): maxAttempts capped at 5 as retryPolicy's,
// hedgingDelay, nonFatalStatusCodes; the method's RetryPolicy makes one
// attempt and classifies the non-fatal codes retryable, the rest terminal.
TEST(ConfigGrpc, HedgingPolicyMapsOntoHedgingOptions) {
  constexpr const char* kService = R"({
    "methodConfig": [
      {"name": [{"service": "shop.Catalog", "method": "Get"}], "timeout": "2s",
       "hedgingPolicy": {"maxAttempts": 9, "hedgingDelay": "0.05s",
                         "nonFatalStatusCodes": ["UNAVAILABLE", 10]}},
      {"name": [{"service": "shop.Search"}],
       "hedgingPolicy": {"maxAttempts": 2}},
      {"name": [{"service": "shop.Cart"}],
       "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.1s", "maxBackoff": "1s",
                       "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]
  })";
  PolicyRegistry registry;
  Result<LoadReport> report = registry.LoadString(kService, "service.json", Env({}));
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_EQ(report->warnings,
            (std::vector<std::string>{"service.json: methodConfig[0].hedgingPolicy.maxAttempts: 9 "
                                      "is capped at 5, as gRPC does (gRFC A6)"}));
  const std::optional<HedgingOptions> get = registry.Hedging("shop.Catalog/Get").value();
  ASSERT_TRUE(get.has_value());
  EXPECT_EQ(get->max_attempts, 5);
  EXPECT_EQ(get->hedging_delay, milliseconds(50));
  EXPECT_FALSE(get->delay_quantile.has_value());
  const RetryPolicy& p = *registry.Policy("shop.Catalog/Get").value();
  EXPECT_EQ(p.options().max_attempts, 1);
  EXPECT_EQ(p.options().deadline, std::optional<Duration>(seconds(2)));
  EXPECT_EQ(p.Classify(Outcome::Grpc(14)), Classification::kRetryable);
  EXPECT_EQ(p.Classify(Outcome::Grpc(10)), Classification::kRetryable);
  EXPECT_EQ(p.Classify(Outcome::Grpc(5)), Classification::kTerminal);
  // No nonFatalStatusCodes: every non-OK code is fatal; hedgingDelay 0.
  const std::optional<HedgingOptions> search = registry.Hedging("shop.Search").value();
  ASSERT_TRUE(search.has_value());
  EXPECT_EQ(search->max_attempts, 2);
  EXPECT_EQ(search->hedging_delay, Duration::zero());
  EXPECT_EQ(registry.Policy("shop.Search").value()->Classify(Outcome::Grpc(14)),
            Classification::kTerminal);
  // A retryPolicy method has no hedging; an unknown name is an error.
  EXPECT_FALSE(registry.Hedging("shop.Cart").value().has_value());
  EXPECT_EQ(registry.Hedging("shop.Nope").status().code(), StatusCode::kInvalidArgument);
}

TEST(ConfigGrpc, HedgingPolicyErrorsNameTheFieldAndBothPoliciesNameTheMethod) {
  EXPECT_EQ(
      ErrorOf(R"({"methodConfig": [{"name": [{"service": "s", "method": "M"}, {"service": "t"}],
        "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.1s", "maxBackoff": "1s",
                        "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]},
        "hedgingPolicy": {"maxAttempts": 2}}]})",
              "svc.json"),
      "svc.json: methodConfig[0]: has both retryPolicy and hedgingPolicy for \"s/M\", \"t\"; "
      "gRFC A6 allows one or the other for a method");
  EXPECT_EQ(ErrorOf(R"({"methodConfig": [{"name": [{}], "hedgingPolicy": {"maxAttempts": 1}}]})",
                    "svc.json"),
            "svc.json: methodConfig[0].hedgingPolicy.maxAttempts: expected an integer > 1, got 1");
  EXPECT_EQ(ErrorOf(R"({"methodConfig": [{"name": [{}], "hedgingPolicy": {}}]})", "svc.json"),
            "svc.json: methodConfig[0].hedgingPolicy.maxAttempts: missing (required by gRFC A6)");
  EXPECT_EQ(ErrorOf(R"({"methodConfig": [{"name": [{}],
        "hedgingPolicy": {"maxAttempts": 2, "hedgingDelay": "-1s"}}]})",
                    "svc.json"),
            "svc.json: methodConfig[0].hedgingPolicy.hedgingDelay: expected a duration string "
            "such as \"0.1s\", got \"-1s\"");
  EXPECT_EQ(ErrorOf(R"({"methodConfig": [{"name": [{}],
        "hedgingPolicy": {"maxAttempts": 2, "delay": "1s"}}]})",
                    "svc.json"),
            "svc.json: methodConfig[0].hedgingPolicy.delay: unknown field; expected one of: "
            "maxAttempts, hedgingDelay, nonFatalStatusCodes");
}

TEST(ConfigGrpc, DefaultPolicyRetriesOnlyUnavailable) {
  const RetryPolicy p = RetryPolicy::Default();
  EXPECT_EQ(p.Classify(Outcome::Grpc(14)), Classification::kRetryable);
  EXPECT_EQ(p.Classify(Outcome::Grpc(2)), Classification::kTerminal);
  EXPECT_EQ(p.Classify(Outcome::Grpc(0)), Classification::kSuccess);
  EXPECT_EQ(p.Classify(Outcome::Http(503)), Classification::kRetryable);  // unchanged
  RetryOptions bad;
  bad.retryable_grpc_codes = {0};
  EXPECT_EQ(RetryPolicy::Create(bad).status().message(),
            "retryable_grpc_codes must hold gRPC codes in [1, 16], got 0");
  EXPECT_STREQ(GrpcStatusCodeName(14), "UNAVAILABLE");
  EXPECT_EQ(ParseGrpcStatusCode("DEADLINE_EXCEEDED"), std::optional<int>(4));
  // Any case, as service configs written by hand have them.
  EXPECT_EQ(ParseGrpcStatusCode("unavailable"), std::optional<int>(14));
  EXPECT_EQ(ParseGrpcStatusCode("Resource_Exhausted"), std::optional<int>(8));
  EXPECT_EQ(ParseGrpcStatusCode("UNAVAILABLE "), std::nullopt);
  EXPECT_EQ(ParseGrpcStatusCode("UNAVAILABL"), std::nullopt);
}

TEST(ConfigGrpc, StatusNamesInAnyCaseAndNumbersAreAccepted) {
  PolicyRegistry registry;
  Result<LoadReport> report = registry.LoadString(
      R"({"methodConfig": [{"name": [{}], "retryPolicy": {"maxAttempts": 3,
          "initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 2,
          "retryableStatusCodes": ["unavailable", "Aborted", 8, "DEADLINE_EXCEEDED"]}}]})",
      "svc.json", Env({}));
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_EQ(registry.Policy("default").value()->options().retryable_grpc_codes,
            (std::vector<int>{14, 10, 8, 4}));
}

// The delays of a gRPC policy are A6's: the n-th retry waits
// min(0.1 s * 2^(n-1), 0.3 s) * random(0.8, 1.2), i.e. windows of
// [80, 120], [160, 240], [240, 360] and [240, 360] ms for retries 1 to 4,
// each filled to its edges over many seeded sessions.
TEST(ConfigGrpc, DelaysAreA6sPlusOrMinusTwentyPercent) {
  PolicyRegistry registry;
  ASSERT_TRUE(registry
                  .LoadString(R"({"methodConfig": [{"name": [{}], "retryPolicy": {
                      "maxAttempts": 5, "initialBackoff": "0.1s", "maxBackoff": "0.3s",
                      "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]})",
                              "svc.json", Env({}))
                  .ok());
  RetryOptions options = registry.Policy("default").value()->options();
  const double centre_ms[] = {100, 200, 300, 300};
  double low[4] = {1e9, 1e9, 1e9, 1e9}, high[4] = {0, 0, 0, 0};
  for (uint64_t seed = 1; seed <= 2000; ++seed) {
    options.seed = seed;
    const RetryPolicy policy = RetryPolicy::Create(options).value();
    RetrySession session = policy.Begin(TimePoint{});
    for (int n = 0; n < 4; ++n) {
      const Decision d = session.OnOutcome(Outcome::Grpc(14), TimePoint{});
      ASSERT_TRUE(d.retry());
      const double ms = std::chrono::duration<double, std::milli>(d.delay).count();
      ASSERT_GE(ms, 0.8 * centre_ms[n] - 1e-6) << "retry " << n + 1 << ", seed " << seed;
      ASSERT_LE(ms, 1.2 * centre_ms[n] + 1e-6) << "retry " << n + 1 << ", seed " << seed;
      low[n] = std::min(low[n], ms);
      high[n] = std::max(high[n], ms);
    }
  }
  for (int n = 0; n < 4; ++n) {
    EXPECT_LT(low[n], 0.81 * centre_ms[n]) << "retry " << n + 1;
    EXPECT_GT(high[n], 1.19 * centre_ms[n]) << "retry " << n + 1;
  }
}

TEST(ConfigGrpc, Errors) {
  EXPECT_EQ(
      ErrorOf(R"({"methodConfig": [{"name": [{}], "retryPolicy": {"maxAttempts": 3,
        "initialBackoff": 0.1, "maxBackoff": "1s", "backoffMultiplier": 2,
        "retryableStatusCodes": ["UNAVAILABLE"]}}]})",
              "svc.json"),
      "svc.json: methodConfig[0].retryPolicy.initialBackoff: expected a duration string such "
      "as \"0.1s\" greater than 0, got 0.1");
  EXPECT_EQ(ErrorOf(R"({"methodConfig": [{"name": [{}], "retryPolicy": {"maxAttempts": 3,
        "initialBackoff": "1s", "maxBackoff": "1s", "backoffMultiplier": 2,
        "retryableStatusCodes": ["UNAVAILABLE", "NOPE"]}}]})",
                    "svc.json"),
            "svc.json: methodConfig[0].retryPolicy.retryableStatusCodes[1]: expected a gRPC "
            "status code name such as \"UNAVAILABLE\" (or a code in [1, 16]), got \"NOPE\"");
  EXPECT_EQ(ErrorOf(R"({"methodConfig": [{"name": [{}], "retryPolicy": {"maxAttempts": 3}}]})",
                    "svc.json"),
            "svc.json: methodConfig[0].retryPolicy.initialBackoff: missing (required by gRFC "
            "A6)\n"
            "svc.json: methodConfig[0].retryPolicy.maxBackoff: missing (required by gRFC A6)\n"
            "svc.json: methodConfig[0].retryPolicy.backoffMultiplier: missing (required by "
            "gRFC A6)\n"
            "svc.json: methodConfig[0].retryPolicy.retryableStatusCodes: missing (required by "
            "gRFC A6)");
}

TEST(ConfigEnv, OverridesAndTheirErrors) {
  constexpr const char* kText =
      R"({"policies": {"pay-ments": {"max_attempts": 2}}, "breakers": {"db": {}},
          "clients": {"api": {}}})";
  PolicyRegistry registry;
  Result<LoadReport> report = registry.LoadString(
      kText, "env.json",
      Env({{"MULLIGAN_POLICY_PAY_MENTS_MAX_ATTEMPTS", "7"},
           {"MULLIGAN_POLICY_PAY_MENTS_BASE_DELAY", "50ms"},
           {"MULLIGAN_POLICY_PAY_MENTS_MAX_DELAY", "3"},
           {"MULLIGAN_POLICY_PAY_MENTS_DEADLINE", "none"},
           {"MULLIGAN_POLICY_PAY_MENTS_JITTER", "none"},
           {"MULLIGAN_BREAKER_DB_FAILURE_THRESHOLD", "9"},
           {"MULLIGAN_BREAKER_DB_RESET_TIMEOUT", "2m"},
           {"MULLIGAN_CLIENT_API_VERIFY_TLS", "false"},
           {"MULLIGAN_CLIENT_API_USER_AGENT", "bot/2"}}));
  ASSERT_TRUE(report.ok()) << report.status().message();
  const RetryOptions& o = registry.Policy("pay-ments").value()->options();
  EXPECT_EQ(o.max_attempts, 7);
  EXPECT_EQ(o.backoff.base, milliseconds(50));
  EXPECT_EQ(o.backoff.max_delay, seconds(3));
  EXPECT_EQ(o.backoff.jitter, JitterKind::kNone);
  EXPECT_FALSE(o.deadline.has_value());
  EXPECT_EQ(registry.Breaker("db").value().failure_threshold, 9);
  EXPECT_EQ(registry.Breaker("db").value().reset_timeout, seconds(120));
  EXPECT_FALSE(registry.Client("api").value().verify_tls);
  EXPECT_EQ(registry.Client("api").value().user_agent, "bot/2");
  ASSERT_EQ(report->warnings.size(), 9u);
  EXPECT_EQ(report->warnings[0],
            "env.json: policies.pay-ments.max_attempts: overridden by "
            "MULLIGAN_POLICY_PAY_MENTS_MAX_ATTEMPTS=7");

  Result<LoadReport> bad = registry.LoadString(
      kText, "env.json", Env({{"MULLIGAN_POLICY_PAY_MENTS_MAX_DELAY", "-3"}}));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "environment: MULLIGAN_POLICY_PAY_MENTS_MAX_DELAY: expected a duration such as "
            "\"10s\", got -3");
  // The failed load kept the previous configuration.
  EXPECT_EQ(registry.Policy("pay-ments").value()->options().max_attempts, 7);
}

// A variable that names no entry, or no field of the entry it names, is a
// typo the operator must hear of: reported, never applied, never an error
// (one environment may serve several services' files).
TEST(ConfigEnv, OverridesNamingNoEntryOrNoFieldAreReported) {
  constexpr const char* kText =
      R"({"policies": {"pay-ments": {"max_attempts": 2}, "search": {}},
          "breakers": {"db": {}}})";
  PolicyRegistry registry;
  Result<LoadReport> report = registry.LoadString(
      kText, "env.json",
      Env({{"MULLIGAN_POLICY_PAYMENTS_MAX_ATTEMPTS", "7"},
           {"MULLIGAN_POLICY_PAY_MENTS_MAX_ATEMPTS", "8"},
           {"MULLIGAN_POLICY_SEARCH_JITTER", "none"},
           {"MULLIGAN_BREAKER_DB_FAILURE_THRESHOLD", "9"},
           {"MULLIGAN_CLIENT_API_USER_AGENT", "bot/2"},
           {"MULLIGAN_CONFIG", "/etc/elsewhere.json"},
           {"MULLIGAN_POLICYX", "1"}}));
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_EQ(registry.Policy("pay-ments").value()->options().max_attempts, 2);
  EXPECT_EQ(registry.Policy("search").value()->options().backoff.jitter, JitterKind::kNone);
  EXPECT_EQ(report->warnings,
            (std::vector<std::string>{
                "env.json: policies.search.jitter: overridden by "
                "MULLIGAN_POLICY_SEARCH_JITTER=none",
                "env.json: breakers.db.failure_threshold: overridden by "
                "MULLIGAN_BREAKER_DB_FAILURE_THRESHOLD=9",
                "env.json: MULLIGAN_POLICY_PAYMENTS_MAX_ATTEMPTS: names no policy of this "
                "document (policies: pay-ments, search); not applied",
                "env.json: MULLIGAN_POLICY_PAY_MENTS_MAX_ATEMPTS: names no field of policy "
                "\"pay-ments\" (fields: MAX_ATTEMPTS, BACKOFF, BASE_DELAY, MULTIPLIER, "
                "MAX_DELAY, JITTER, DEADLINE, ATTEMPT_TIMEOUT, MIN_DELAY); not applied",
                "env.json: MULLIGAN_CLIENT_API_USER_AGENT: names no client of this document "
                "(clients: none); not applied"}));
  // Overrides off: nothing is applied, so nothing is reported.
  LoadOptions off = Env({{"MULLIGAN_POLICY_PAYMENTS_MAX_ATTEMPTS", "7"}});
  off.env_overrides = false;
  Result<LoadReport> quiet = registry.LoadString(kText, "env.json", off);
  ASSERT_TRUE(quiet.ok());
  EXPECT_TRUE(quiet->warnings.empty());
}

TEST(ConfigEnv, LoadFromEnvironment) {
  const std::string path = WriteTemp("fromenv.json", R"({"policies": {"x": {}}})");
  PolicyRegistry registry;
  Result<LoadReport> unset = registry.LoadFromEnvironment(Env({}));
  ASSERT_FALSE(unset.ok());
  EXPECT_EQ(unset.status().message(),
            "MULLIGAN_CONFIG is not set: it must name a mulligan configuration file");
  Result<LoadReport> ok = registry.LoadFromEnvironment(Env({{"MULLIGAN_CONFIG", path}}));
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->policies, std::vector<std::string>{"x"});
}

TEST(ConfigReload, FailedReloadKeepsTheOldPolicies) {
  const std::string path = WriteTemp("reload.json", R"({"policies": {"a": {"max_attempts": 4}}})");
  PolicyRegistry registry;
  EXPECT_FALSE(registry.Reload().ok());
  ASSERT_TRUE(registry.LoadFile(path, Env({})).ok());
  std::shared_ptr<const RetryPolicy> held = registry.Policy("a").value();
  std::ofstream(path) << R"({"policies": {"a": {"max_attempts": 0}}})";
  Result<LoadReport> r = registry.Reload();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            path + ": policies.a.max_attempts: expected an integer >= 1, got 0");
  EXPECT_EQ(registry.Policy("a").value()->options().max_attempts, 4);
  std::ofstream(path) << R"({"policies": {"a": {"max_attempts": 6}}})";
  ASSERT_TRUE(registry.Reload().ok());
  EXPECT_EQ(registry.Policy("a").value()->options().max_attempts, 6);
  EXPECT_EQ(held->options().max_attempts, 4);  // a running call keeps its policy
}

// Two fully consistent variants: every field of a policy is derived from
// max_attempts, so a half-updated policy would break one of the relations.
std::string Variant(int k) {
  return R"({"policies": {"p": {"max_attempts": )" + std::to_string(k) +
         R"(, "base_delay": ")" + std::to_string(k * 10) + R"(ms", "max_delay": ")" +
         std::to_string(k * 100) + R"(ms", "multiplier": )" + std::to_string(k) +
         R"(, "jitter": "none", "deadline": ")" + std::to_string(k) + R"(s"}},
           "breakers": {"p": {"failure_threshold": )" +
         std::to_string(k) + R"(, "reset_timeout": ")" + std::to_string(k) + R"(s"}}})";
}

TEST(ConfigReload, CallsNeverSeeAHalfUpdatedPolicy) {
  PolicyRegistry registry;
  ASSERT_TRUE(registry.LoadString(Variant(2), "v2", Env({})).ok());
  std::atomic<bool> stop{false};
  std::atomic<int> calls{0}, bad{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 2; ++t) {
    callers.emplace_back([&] {
      while (!stop.load()) {
        std::shared_ptr<const RetryPolicy> p = registry.Policy("p").value();
        const RetryOptions& o = p->options();
        const int k = o.max_attempts;
        bool ok = (k == 2 || k == 3) && o.backoff.base == milliseconds(k * 10) &&
                  o.backoff.max_delay == milliseconds(k * 100) &&
                  o.backoff.multiplier == static_cast<double>(k) && o.deadline == seconds(k);
        // Run the whole call on the policy it started with.
        RetrySession s = p->Begin(TimePoint{});
        Duration expected = milliseconds(k * 10);
        for (int attempt = 1;; ++attempt) {
          Decision d = s.OnOutcome(Outcome::Http(503), TimePoint{});
          if (!d.retry()) {
            ok = ok && attempt == k;
            break;
          }
          ok = ok && d.delay == std::min<Duration>(expected, milliseconds(k * 100));
          expected *= k;
        }
        CircuitBreakerOptions b = registry.Breaker("p").value();
        ok = ok && b.reset_timeout == seconds(b.failure_threshold);
        if (!ok) bad.fetch_add(1);
        calls.fetch_add(1);
      }
    });
  }
  // At least 400 swaps, and keep swapping until the callers made 2000 calls.
  for (int i = 0; (i < 400 || calls.load() < 2000) && i < 1'000'000; ++i) {
    ASSERT_TRUE(registry.LoadString(Variant(i % 2 ? 2 : 3), "v", Env({})).ok());
    ASSERT_TRUE(registry.Reload().ok());
  }
  stop.store(true);
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GE(calls.load(), 2000);
}

}  // namespace
}  // namespace mulligan

namespace mulligan {
namespace {

TEST(ConfigInput, AUtf8ByteOrderMarkIsSkipped) {
  Result<std::shared_ptr<const ConfigSnapshot>> r = ParseConfig(
      "\xEF\xBB\xBF{\"policies\": {\"payments\": {\"max_attempts\": 4}}}", "bom.json", Env({}));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)->policies.at("payments")->options().max_attempts, 4);
}

TEST(ConfigInput, AnEndlessFileIsRefusedInsteadOfReadForever) {
  Result<std::shared_ptr<const ConfigSnapshot>> r = ParseConfigFile("/dev/zero", Env({}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "/dev/zero: cannot read the configuration file: larger than 16 MiB");
}

// Each backoff field's documented range (docs/configuration.md, backoff.h) is
// exactly the range accepted: the edges load, the next double outside is
// refused with the field's path. multiplier used to stop at 1e300.
TEST(ConfigRanges, TheEdgesOfEachBackoffRangeLoad) {
  const std::string path = WriteTemp("edges.json", R"({"policies": {
    "low": {"base_delay": 0, "max_delay": "0s", "multiplier": 0, "jitter_fraction": 0},
    "high": {"base_delay": "9199999999.999s", "max_delay": 9199999999,
             "multiplier": 1.7976931348623157e308, "jitter_fraction": 1}}})");
  PolicyRegistry registry;
  Result<LoadReport> report = registry.LoadFile(path, Env({}));
  ASSERT_TRUE(report.ok()) << report.status().message();
  const BackoffOptions low = registry.Policy("low").value()->options().backoff;
  EXPECT_EQ(low.base, Duration::zero());
  EXPECT_EQ(low.max_delay, Duration::zero());
  EXPECT_EQ(low.multiplier, 0.0);
  EXPECT_EQ(low.jitter_fraction, 0.0);
  const BackoffOptions high = registry.Policy("high").value()->options().backoff;
  // Just below 9.2e9 s; a double holds 9.2e18 ns to within 1024 ns.
  EXPECT_NEAR(static_cast<double>(high.base.count()), 9199999999999e6, 2048.0);
  EXPECT_NEAR(static_cast<double>(high.max_delay.count()), 9199999999e9, 2048.0);
  EXPECT_EQ(high.multiplier, std::numeric_limits<double>::max());
  EXPECT_EQ(high.jitter_fraction, 1.0);
}

TEST(ConfigRanges, JustOutsideEachBackoffRangeIsRefused) {
  EXPECT_EQ(ErrorOf(R"({"policies": {"a": {"multiplier": -5e-324}}})"),
            "payments.json: policies.a.multiplier: expected a number >= 0, got -5e-324");
  EXPECT_EQ(ErrorOf(R"({"policies": {"a": {"jitter_fraction": 1.0000000000000002}}})"),
            "payments.json: policies.a.jitter_fraction: expected a number in [0, 1], got "
            "1.0000000000000002");
  EXPECT_EQ(ErrorOf(R"({"policies": {"a": {"base_delay": -5e-324}}})"),
            "payments.json: policies.a.base_delay: expected a duration such as \"10s\", got "
            "-5e-324");
  EXPECT_EQ(ErrorOf(R"({"policies": {"a": {"max_delay": 9.2e9}}})"),
            "payments.json: policies.a.max_delay: expected a duration such as \"10s\", got "
            "9.2e+09 (it must be below 9.2e9 s)");
}

}  // namespace
}  // namespace mulligan
