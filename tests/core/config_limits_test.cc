// Tests the overload-protection parts of configuration files (issue 14):
// the "budgets", "throttles", "bulkheads", "rate_limiters" and (0.5)
// "adaptive_rates" sections, a
// policy's and a client's references to them, their errors (each naming the
// field), sharing by name across reloads, a gRPC service config's
// retryThrottling (the gRFC A6 example arithmetic, max 10 and ratio 0.1,
// worked out by hand), and the client budget reaching HttpClientOptions.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mulligan/config/config.h"
#include "config_test_util.h"
#include "mulligan/http/client_config.h"

namespace mulligan {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

using config_test::NoEnv;

// The error message of loading `json` (empty when it loads).
std::string ErrorOf(const std::string& json) { return config_test::LoadError(json, "limits.json"); }

const char* const kAll = R"({
  "budgets": {
    "tb": {"max_tokens": 10, "token_ratio": 0.1},
    "aws": {"kind": "quota", "capacity": 50, "timeout_cost": 20},
    "fin": {"kind": "ratio", "ttl": "30s", "percent": 0.1}
  },
  "throttles": {"sre": {"k": 1.5, "window": "30s", "seed": 7}},
  "bulkheads": {"db": {"max_concurrent": 3, "max_queue": 2, "max_wait": "250ms"}},
  "rate_limiters": {"api": {"rate": 20, "burst": 4, "max_wait": 0, "penalize_retry_after": true,
                            "max_keys": 9}},
  "policies": {"p": {"budget": "tb", "throttle": "sre", "bulkhead": "db",
                     "rate_limiter": "api"},
               "plain": {}},
  "clients": {"c": {"budget": "aws"}, "off": {"budget": null}, "dflt": {},
              "via_policy": {"policy": "p"}}
})";

TEST(ConfigLimits, SectionsLoadWithEveryField) {
  PolicyRegistry registry;
  Result<LoadReport> report = registry.LoadString(kAll, "limits.json", NoEnv());
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_EQ(report->budgets, (std::vector<std::string>{"aws", "fin", "tb"}));
  EXPECT_EQ(report->throttles, std::vector<std::string>{"sre"});
  EXPECT_EQ(report->bulkheads, std::vector<std::string>{"db"});
  EXPECT_EQ(report->rate_limiters, std::vector<std::string>{"api"});

  std::shared_ptr<const ConfigSnapshot> s = registry.Snapshot();
  const BudgetOptions& tb = s->budgets.at("tb");
  EXPECT_EQ(tb.kind, BudgetKind::kTokenBucket);  // the default kind
  EXPECT_EQ(tb.token_bucket.max_tokens, 10.0);
  EXPECT_EQ(tb.token_bucket.token_ratio, 0.1);
  EXPECT_EQ(tb.name, "tb");
  const BudgetOptions& aws = s->budgets.at("aws");
  EXPECT_EQ(aws.kind, BudgetKind::kQuota);
  EXPECT_EQ(aws.quota.capacity, 50);
  EXPECT_EQ(aws.quota.timeout_cost, 20);
  EXPECT_EQ(aws.quota.retry_cost, 5);  // AWS 2020 default kept
  const BudgetOptions& fin = s->budgets.at("fin");
  EXPECT_EQ(fin.kind, BudgetKind::kRatio);
  EXPECT_EQ(fin.ratio.ttl, seconds(30));
  EXPECT_EQ(fin.ratio.percent, 0.1);
  EXPECT_EQ(fin.ratio.min_retries_per_second, 10.0);
  const ThrottleOptions& sre = s->throttles.at("sre");
  EXPECT_EQ(sre.k, 1.5);
  EXPECT_EQ(sre.window, seconds(30));
  EXPECT_EQ(sre.seed, std::optional<uint64_t>(7));
  const BulkheadOptions& db = s->bulkheads.at("db");
  EXPECT_EQ(db.max_concurrent, 3);
  EXPECT_EQ(db.max_queue, 2);
  EXPECT_EQ(db.max_wait, std::optional<Duration>(milliseconds(250)));
  const RateLimiterOptions& api = s->rate_limiters.at("api");
  EXPECT_EQ(api.rate, 20.0);
  EXPECT_EQ(api.burst, 4.0);
  EXPECT_EQ(api.max_wait, std::optional<Duration>(Duration::zero()));
  EXPECT_TRUE(api.penalize_retry_after);
  EXPECT_EQ(api.max_keys, 9u);

  Result<PolicyLimits> limits = registry.Limits("p");
  ASSERT_TRUE(limits.ok());
  EXPECT_EQ(limits->budget, "tb");
  EXPECT_EQ(limits->throttle, "sre");
  EXPECT_EQ(limits->bulkhead, "db");
  EXPECT_EQ(limits->rate_limiter, "api");
  EXPECT_TRUE(registry.Limits("plain")->empty());
  EXPECT_FALSE(registry.Limits("nope").ok());

  EXPECT_EQ(s->clients.at("c").budget, "aws");
  EXPECT_FALSE(s->clients.at("c").budget_off);
  EXPECT_TRUE(s->clients.at("off").budget_off);
  EXPECT_TRUE(s->clients.at("dflt").budget.empty());
  EXPECT_FALSE(s->clients.at("dflt").budget_off);
}

TEST(ConfigLimits, BadValuesAreRefusedNamingTheField) {
  struct Case {
    const char* json;
    const char* message;
  };
  const Case cases[] = {
      {R"({"rate_limiters": {"r": {"rate": -1}}})",
       "limits.json: rate_limiters.r.rate: expected a number > 0 (calls per second), got -1"},
      {R"({"rate_limiters": {"r": {"burst": 2}}})",
       "limits.json: rate_limiters.r.rate: missing: this field is required"},
      {R"({"rate_limiters": {"r": {"rate": 1, "burst": 0.5}}})",
       "limits.json: rate_limiters.r.burst: expected a number >= 1, got 0.5"},
      {R"({"budgets": {"b": {"kind": "ratio", "percent": 1.5}}})",
       "limits.json: budgets.b.percent: expected a number in [0, 1], got 1.5"},
      {R"({"budgets": {"b": {"kind": "quota", "capacity": 0}}})",
       "limits.json: budgets.b.capacity: expected an integer >= 1, got 0"},
      {R"({"budgets": {"b": {"max_tokens": 1001}}})",
       "limits.json: budgets.b.max_tokens: expected a number in (0, 1000] (gRPC A6), got 1001"},
      {R"({"budgets": {"b": {"capacity": 10}}})",
       "limits.json: budgets.b.capacity: a field of kind \"quota\", but this budget's kind is "
       "\"token_bucket\" (the default)"},
      {R"({"budgets": {"b": {"kind": "bucket"}}})", "limits.json: budgets.b.kind: expected"},
      {R"({"budgets": {"b": {"kind": "ratio", "ttl": "2m"}}})",
       "limits.json: budgets.b.ttl: expected a duration in [1s, 60s] (Finagle's bounds), got "
       "\"2m\""},
      {R"({"bulkheads": {"b": {"max_concurrent": 0}}})",
       "limits.json: bulkheads.b.max_concurrent: expected an integer >= 1, got 0"},
      {R"({"bulkheads": {"b": {"max_queue": 2}}})",
       "limits.json: bulkheads.b.max_concurrent: missing: this field is required"},
      {R"({"bulkheads": {"b": {"max_concurrent": 1, "max_wait": -1}}})",
       "limits.json: bulkheads.b.max_wait: expected a duration"},
      {R"({"throttles": {"t": {"k": 0.5}}})",
       "limits.json: throttles.t.k: expected a number >= 1 (the SRE book's K), got 0.5"},
      {R"({"throttles": {"t": {"K": 2}}})", "limits.json: throttles.t.K: unknown field"},
      {R"({"policies": {"p": {"budget": "missing"}}})",
       "limits.json: policies.p.budget: expected the name of an entry of \"budgets\", got "
       "\"missing\""},
      {R"({"policies": {"p": {"bulkhead": 3}}})",
       "limits.json: policies.p.bulkhead: expected the name of an entry of \"bulkheads\", got 3"},
      {R"({"clients": {"c": {"budget": "missing"}}})",
       "limits.json: clients.c.budget: expected the name of a budget in \"budgets\", got "
       "\"missing\""},
      {R"({"clients": {"c": {"budget": 5}}})",
       "limits.json: clients.c.budget: expected the name of an entry of \"budgets\", or null"},
  };
  for (const Case& c : cases) {
    const std::string error = ErrorOf(c.json);
    EXPECT_NE(error.find(c.message), std::string::npos) << c.json << "\n -> " << error;
  }
}

TEST(ConfigLimits, PartsAreSharedByNameAndKeptAcrossReloadsWhileUnchanged) {
  PolicyRegistry registry;
  ASSERT_TRUE(registry.LoadString(kAll, "limits.json", NoEnv()).ok());
  std::shared_ptr<RetryBudget> tb = *registry.BudgetNamed("tb");
  EXPECT_EQ(tb.get(), registry.BudgetNamed("tb")->get());
  EXPECT_EQ(tb->name(), "tb");
  std::shared_ptr<Bulkhead> db = *registry.BulkheadNamed("db");
  EXPECT_EQ(db.get(), registry.BulkheadNamed("db")->get());
  EXPECT_EQ(db->options().max_concurrent, 3);
  std::shared_ptr<RateLimiter> api = *registry.RateLimiterNamed("api");
  EXPECT_EQ(api.get(), registry.RateLimiterNamed("api")->get());
  std::shared_ptr<AdaptiveThrottle> sre = *registry.ThrottleNamed("sre");
  EXPECT_EQ(sre.get(), registry.ThrottleNamed("sre")->get());
  EXPECT_EQ(sre->options().k, 1.5);
  Result<std::shared_ptr<RetryBudget>> missing = registry.BudgetNamed("nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(),
            "no budget named \"nope\" in limits.json (known: aws, fin, tb)");

  // The same text again: the same objects (state carries over).
  ASSERT_TRUE(registry.Reload().ok());
  EXPECT_EQ(tb.get(), registry.BudgetNamed("tb")->get());
  EXPECT_EQ(db.get(), registry.BulkheadNamed("db")->get());
  // Changed options: a new object from then on.
  ASSERT_TRUE(registry
                  .LoadString(R"({"budgets": {"tb": {"max_tokens": 20, "token_ratio": 0.1}},
                                  "bulkheads": {"db": {"max_concurrent": 3}}})",
                              "limits.json", NoEnv())
                  .ok());
  std::shared_ptr<RetryBudget> tb2 = *registry.BudgetNamed("tb");
  EXPECT_NE(tb.get(), tb2.get());
  EXPECT_EQ(tb2->options().token_bucket.max_tokens, 20.0);
  EXPECT_NE(db.get(), registry.BulkheadNamed("db")->get());
  // A load without the entry forgets it: the same options later start afresh.
  std::shared_ptr<Bulkhead> db2 = *registry.BulkheadNamed("db");
  ASSERT_TRUE(registry.LoadString("{}", "limits.json", NoEnv()).ok());
  ASSERT_TRUE(registry.LoadString(R"({"bulkheads": {"db": {"max_concurrent": 3}}})",
                                  "limits.json", NoEnv())
                  .ok());
  EXPECT_NE(db2.get(), registry.BulkheadNamed("db")->get());
}

// gRFC A6's example: maxTokens 10, tokenRatio 0.1. Tokens start at 10; a
// failure takes 1, a success adds 0.1; retries only while tokens > 5.
TEST(ConfigLimits, GrpcRetryThrottlingFollowsTheA6Arithmetic) {
  const char* const kGrpc = R"({
    "methodConfig": [
      {"name": [{"service": "pkg.A"}],
       "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.1s", "maxBackoff": "1s",
                       "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}},
      {"name": [{"service": "pkg.B", "method": "Get"}], "timeout": "1s"}
    ],
    "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}
  })";
  PolicyRegistry registry;
  Result<LoadReport> report = registry.LoadString(kGrpc, "svc.json", NoEnv());
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_EQ(report->budgets, std::vector<std::string>{"retryThrottling"});
  for (const std::string& w : report->warnings) {
    EXPECT_EQ(w.find("retryThrottling"), std::string::npos) << w;
  }
  EXPECT_EQ(registry.Limits("pkg.A")->budget, "retryThrottling");
  EXPECT_EQ(registry.Limits("pkg.B/Get")->budget, "retryThrottling");

  std::shared_ptr<RetryBudget> budget = *registry.BudgetNamed("retryThrottling");
  EXPECT_EQ(budget->kind(), BudgetKind::kTokenBucket);
  FakeClock clock;
  const TimePoint t = clock.Now();
  EXPECT_DOUBLE_EQ(budget->Tokens(t), 10.0);
  for (int i = 0; i < 4; ++i) budget->OnFailure(BudgetFailure::kOther, t);
  EXPECT_DOUBLE_EQ(budget->Tokens(t), 6.0);  // 10 - 4
  EXPECT_GE(budget->TryRetry(BudgetFailure::kOther, t), 0);  // 6 > 5
  budget->OnFailure(BudgetFailure::kOther, t);
  EXPECT_DOUBLE_EQ(budget->Tokens(t), 5.0);  // 5 is not > 5
  EXPECT_EQ(budget->TryRetry(BudgetFailure::kOther, t), -1);
  budget->AddSuccesses(1);
  EXPECT_DOUBLE_EQ(budget->Tokens(t), 5.1);  // 5 + 0.1
  EXPECT_GE(budget->TryRetry(BudgetFailure::kOther, t), 0);
  // 51 more failures take it to 0 (clamped), then 51 successes back to 5.1.
  for (int i = 0; i < 60; ++i) budget->OnFailure(BudgetFailure::kOther, t);
  EXPECT_DOUBLE_EQ(budget->Tokens(t), 0.0);
  budget->AddSuccesses(50);
  EXPECT_DOUBLE_EQ(budget->Tokens(t), 5.0);
  EXPECT_EQ(budget->TryRetry(BudgetFailure::kOther, t), -1);
}

TEST(ConfigLimits, GrpcRetryThrottlingLimitsAreA6s) {
  auto grpc = [](const std::string& throttling) {
    return ErrorOf(R"({"methodConfig": [{"name": [{}]}], "retryThrottling": )" + throttling +
                   "}");
  };
  EXPECT_EQ(grpc(R"({"maxTokens": 1000, "tokenRatio": 0.001})"), "");
  EXPECT_NE(grpc(R"({"maxTokens": 0, "tokenRatio": 1})")
                .find("limits.json: retryThrottling.maxTokens: expected a number in (0, 1000] "
                      "(gRFC A6), got 0"),
            std::string::npos);
  EXPECT_NE(grpc(R"({"maxTokens": 1001, "tokenRatio": 1})").find("retryThrottling.maxTokens"),
            std::string::npos);
  EXPECT_NE(grpc(R"({"maxTokens": 10, "tokenRatio": 0})")
                .find("retryThrottling.tokenRatio: expected a number > 0 (gRFC A6), got 0"),
            std::string::npos);
  EXPECT_NE(grpc(R"({"maxTokens": 10, "tokenRatio": 0.0125})")
                .find("retryThrottling.tokenRatio: expected a number with at most 3 decimal "
                      "places (gRFC A6), got 0.0125"),
            std::string::npos);
  EXPECT_NE(grpc(R"({"maxTokens": 10})").find("retryThrottling.tokenRatio: missing"),
            std::string::npos);
  EXPECT_NE(grpc(R"({"maxTokens": 10, "tokenRatio": 1, "x": 1})")
                .find("retryThrottling.x: unknown field; expected one of: maxTokens, tokenRatio"),
            std::string::npos);
  EXPECT_NE(grpc("7").find("retryThrottling: expected an object"), std::string::npos);
}

TEST(ConfigLimits, ClientBudgetReachesHttpClientOptions) {
  PolicyRegistry registry;
  ASSERT_TRUE(registry.LoadString(kAll, "limits.json", NoEnv()).ok());
  Result<HttpClientOptions> named = HttpClientOptionsFromConfig(registry, "c");
  ASSERT_TRUE(named.ok()) << named.status().message();
  EXPECT_EQ(named->shared_budget.get(), registry.BudgetNamed("aws")->get());
  EXPECT_EQ(named->shared_budget->kind(), BudgetKind::kQuota);
  // A second client naming it gets the same budget (shared by name).
  EXPECT_EQ(HttpClientOptionsFromConfig(registry, "c")->shared_budget.get(),
            named->shared_budget.get());

  Result<HttpClientOptions> off = HttpClientOptionsFromConfig(registry, "off");
  ASSERT_TRUE(off.ok());
  EXPECT_FALSE(off->retry_budget.has_value());
  EXPECT_EQ(off->shared_budget, nullptr);

  Result<HttpClientOptions> dflt = HttpClientOptionsFromConfig(registry, "dflt");
  ASSERT_TRUE(dflt.ok());
  ASSERT_TRUE(dflt->retry_budget.has_value());
  EXPECT_EQ(dflt->retry_budget->kind, BudgetKind::kTokenBucket);
  EXPECT_EQ(dflt->retry_budget->token_bucket.max_tokens, 100.0);
  EXPECT_EQ(dflt->shared_budget, nullptr);

  // The client names no budget but its policy does.
  Result<HttpClientOptions> via = HttpClientOptionsFromConfig(registry, "via_policy");
  ASSERT_TRUE(via.ok());
  EXPECT_EQ(via->shared_budget.get(), registry.BudgetNamed("tb")->get());
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

TEST(ConfigLimits, EnvironmentOverridesTheParts) {
  PolicyRegistry registry;
  Result<LoadReport> report = registry.LoadString(
      kAll, "limits.json",
      Env({{"MULLIGAN_BUDGET_TB_MAX_TOKENS", "20"},
           {"MULLIGAN_BUDGET_AWS_RETRY_COST", "3"},
           {"MULLIGAN_THROTTLE_SRE_K", "3"},
           {"MULLIGAN_BULKHEAD_DB_MAX_WAIT", "none"},
           {"MULLIGAN_RATE_LIMITER_API_RATE", "7.5"},
           {"MULLIGAN_RATE_LIMITER_NOPE_RATE", "1"},
           {"MULLIGAN_BULKHEAD_DB_MAX_INFLIGHT", "1"}}));
  ASSERT_TRUE(report.ok()) << report.status().message();
  std::shared_ptr<const ConfigSnapshot> s = registry.Snapshot();
  EXPECT_EQ(s->budgets.at("tb").token_bucket.max_tokens, 20.0);
  EXPECT_EQ(s->budgets.at("aws").quota.retry_cost, 3);
  EXPECT_EQ(s->throttles.at("sre").k, 3.0);
  EXPECT_EQ(s->bulkheads.at("db").max_wait, std::nullopt);
  EXPECT_EQ(s->rate_limiters.at("api").rate, 7.5);
  const std::vector<std::string>& w = report->warnings;
  auto has = [&](const std::string& text) {
    for (const std::string& line : w) {
      if (line == text) return true;
    }
    return false;
  };
  EXPECT_TRUE(has("limits.json: budgets.tb.max_tokens: overridden by "
                  "MULLIGAN_BUDGET_TB_MAX_TOKENS=20"));
  EXPECT_TRUE(has("limits.json: MULLIGAN_RATE_LIMITER_NOPE_RATE: names no rate limiter of this "
                  "document (rate_limiters: api); not applied"));
  EXPECT_TRUE(has("limits.json: MULLIGAN_BULKHEAD_DB_MAX_INFLIGHT: names no field of bulkhead "
                  "\"db\" (fields: MAX_CONCURRENT, MAX_QUEUE, MAX_WAIT); not applied"));

  // A field of another kind, and a bad value, are errors naming the variable.
  Result<LoadReport> bad = registry.LoadString(
      kAll, "limits.json",
      Env({{"MULLIGAN_BUDGET_TB_CAPACITY", "9"}, {"MULLIGAN_RATE_LIMITER_API_RATE", "-2"}}));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(
                "environment: MULLIGAN_BUDGET_TB_CAPACITY: a field of kind \"quota\", but budget "
                "\"tb\" is of kind \"token_bucket\""),
            std::string::npos)
      << bad.status().message();
  EXPECT_NE(bad.status().message().find("environment: MULLIGAN_RATE_LIMITER_API_RATE: expected a "
                                        "number > 0 (calls per second), got -2"),
            std::string::npos)
      << bad.status().message();
}

// The "adaptive_rates" section (0.5): every field of AdaptiveRateOptions,
// the defaults of the AWS SDKs' retry behavior specification for the rest,
// and a policy's "adaptive_rate" reference.
const char* const kAdaptive = R"({
  "adaptive_rates": {
    "aws": {"beta": 0.5, "scale_constant": 0.8, "smoothing": 0.6, "bucket": "250ms",
            "min_fill_rate": 2, "max_rate_scale": 3, "max_wait": "1.5s"},
    "spec": {}
  },
  "policies": {"p": {"adaptive_rate": "aws", "max_attempts": 4}, "plain": {}}
})";

TEST(ConfigLimits, AdaptiveRatesLoadWithEveryField) {
  PolicyRegistry registry;
  Result<LoadReport> report = registry.LoadString(kAdaptive, "limits.json", NoEnv());
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_EQ(report->adaptive_rates, (std::vector<std::string>{"aws", "spec"}));
  std::shared_ptr<const ConfigSnapshot> s = registry.Snapshot();
  const AdaptiveRateOptions& aws = s->adaptive_rates.at("aws");
  EXPECT_EQ(aws.name, "aws");
  EXPECT_EQ(aws.beta, 0.5);
  EXPECT_EQ(aws.scale_constant, 0.8);
  EXPECT_EQ(aws.smoothing, 0.6);
  EXPECT_EQ(aws.bucket, milliseconds(250));
  EXPECT_EQ(aws.min_fill_rate, 2.0);
  EXPECT_EQ(aws.max_rate_scale, 3.0);
  EXPECT_EQ(aws.max_wait, std::optional<Duration>(milliseconds(1500)));
  const AdaptiveRateOptions& spec = s->adaptive_rates.at("spec");
  EXPECT_EQ(spec.beta, 0.7);
  EXPECT_EQ(spec.scale_constant, 0.4);
  EXPECT_EQ(spec.smoothing, 0.8);
  EXPECT_EQ(spec.bucket, milliseconds(500));
  EXPECT_EQ(spec.min_fill_rate, 0.5);
  EXPECT_EQ(spec.max_rate_scale, 2.0);
  EXPECT_EQ(spec.max_wait, std::nullopt);

  Result<PolicyLimits> limits = registry.Limits("p");
  ASSERT_TRUE(limits.ok());
  EXPECT_EQ(limits->adaptive_rate, "aws");
  EXPECT_TRUE(limits->budget.empty());
  EXPECT_FALSE(limits->empty());
  EXPECT_TRUE(registry.Limits("plain")->empty());
}

TEST(ConfigLimits, AdaptiveRateBadValuesAreRefusedNamingTheField) {
  struct Case {
    const char* json;
    const char* message;
  };
  const Case cases[] = {
      {R"({"adaptive_rates": {"a": {"beta": 1}}})",
       "limits.json: adaptive_rates.a.beta: expected a number in (0, 1) (CUBIC's "
       "multiplicative decrease), got 1"},
      {R"({"adaptive_rates": {"a": {"beta": 0}}})",
       "limits.json: adaptive_rates.a.beta: expected a number in (0, 1)"},
      {R"({"adaptive_rates": {"a": {"scale_constant": -0.4}}})",
       "limits.json: adaptive_rates.a.scale_constant: expected a number > 0 (CUBIC's C), got "
       "-0.4"},
      {R"({"adaptive_rates": {"a": {"smoothing": 1.5}}})",
       "limits.json: adaptive_rates.a.smoothing: expected a number in (0, 1], got 1.5"},
      {R"({"adaptive_rates": {"a": {"bucket": "0s"}}})",
       "limits.json: adaptive_rates.a.bucket: expected a duration greater than 0"},
      {R"({"adaptive_rates": {"a": {"min_fill_rate": 0}}})",
       "limits.json: adaptive_rates.a.min_fill_rate: expected a number > 0 (requests per "
       "second), got 0"},
      {R"({"adaptive_rates": {"a": {"max_rate_scale": 0.5}}})",
       "limits.json: adaptive_rates.a.max_rate_scale: expected a number >= 1, got 0.5"},
      {R"({"adaptive_rates": {"a": {"max_wait": -1}}})",
       "limits.json: adaptive_rates.a.max_wait: expected a duration"},
      {R"({"adaptive_rates": {"a": {"rate": 5}}})",
       "limits.json: adaptive_rates.a.rate: unknown field"},
      {R"({"adaptive_rates": {"a": 3}})", "limits.json: adaptive_rates.a: expected an object"},
      {R"({"adaptive_rates": {"a": {"name": "x"}}})",
       "limits.json: adaptive_rates.a.name: unknown field"},
      {R"({"adaptive_rates": {"bad name\u0001": {}}})", "adaptive rate name must be printable"},
      {R"({"policies": {"p": {"adaptive_rate": "missing"}}})",
       "limits.json: policies.p.adaptive_rate: expected the name of an entry of "
       "\"adaptive_rates\", got \"missing\""},
      {R"({"policies": {"p": {"adaptive_rate": ""}}})",
       "limits.json: policies.p.adaptive_rate: expected the name of an entry of "
       "\"adaptive_rates\", got \"\""},
      {R"({"adaptive_rate": {}})",
       "limits.json: adaptive_rate: unknown field, did you mean \"adaptive_rates\"?"},
  };
  for (const Case& c : cases) {
    const std::string error = ErrorOf(c.json);
    EXPECT_NE(error.find(c.message), std::string::npos) << c.json << "\n -> " << error;
  }
}

TEST(ConfigLimits, AdaptiveRateIsSharedByNameAndDatedByTheClock) {
  FakeClock clock(TimePoint(seconds(100)), WallTime{});
  PolicyRegistry registry;
  ASSERT_TRUE(registry.LoadString(kAdaptive, "limits.json", NoEnv()).ok());
  std::shared_ptr<AdaptiveRate> aws = *registry.AdaptiveRateNamed("aws", &clock);
  EXPECT_EQ(aws.get(), registry.AdaptiveRateNamed("aws")->get());
  EXPECT_EQ(aws->name(), "aws");
  EXPECT_EQ(aws->options().beta, 0.5);
  Result<std::shared_ptr<AdaptiveRate>> missing = registry.AdaptiveRateNamed("nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(),
            "no adaptive rate named \"nope\" in limits.json (known: aws, spec)");

  // Dated by `clock` (t = 100 s: the first measuring bucket starts there),
  // with the file's beta 0.5, smoothing 0.6, bucket 0.25 s, min_fill_rate 2,
  // max_rate_scale 3. By hand: a success at t = 100 counts 1 in bucket 100
  // (no later bucket yet: measured stays 0; fill = max(0, 2) = 2). A
  // throttling answer at t = 102 counts 2 and starts bucket 102: rate =
  // 2 / (102 - 100) = 1, measured = 0.6 * 1 + 0.4 * 0 = 0.6; rate_to_use =
  // 0.6 (the first throttle), new = 0.6 * 0.5 = 0.3 (<= 3 * 0.6); fill =
  // max(0.3, 2) = 2 (the floor), capacity bound = max(0.3, 1) = 1.
  aws->Record(false, clock.Now());
  clock.Advance(seconds(2));
  aws->Record(true, clock.Now());
  AdaptiveRateState st = aws->State(clock.Now());
  EXPECT_TRUE(st.enabled);
  EXPECT_DOUBLE_EQ(st.measured_rate, 0.6);
  EXPECT_DOUBLE_EQ(st.last_max_rate, 0.6);
  EXPECT_DOUBLE_EQ(st.calculated_rate, 0.3);
  EXPECT_DOUBLE_EQ(st.max_capacity, 1.0);
  EXPECT_DOUBLE_EQ(st.fill_rate, 2.0);

  // Unchanged options across a reload: the same object (its state kept);
  // changed options: a new one.
  ASSERT_TRUE(registry.Reload().ok());
  EXPECT_EQ(aws.get(), registry.AdaptiveRateNamed("aws")->get());
  ASSERT_TRUE(registry
                  .LoadString(R"({"adaptive_rates": {"aws": {"beta": 0.6}}})", "limits.json",
                              NoEnv())
                  .ok());
  EXPECT_NE(aws.get(), registry.AdaptiveRateNamed("aws", &clock)->get());
  EXPECT_FALSE(registry.AdaptiveRateNamed("spec").ok());  // forgotten
}

TEST(ConfigLimits, EnvironmentOverridesTheAdaptiveRates) {
  PolicyRegistry registry;
  Result<LoadReport> report = registry.LoadString(
      kAdaptive, "limits.json",
      Env({{"MULLIGAN_ADAPTIVE_RATE_AWS_BETA", "0.25"},
           {"MULLIGAN_ADAPTIVE_RATE_AWS_MAX_WAIT", "none"},
           {"MULLIGAN_ADAPTIVE_RATE_SPEC_BUCKET", "1s"},
           {"MULLIGAN_ADAPTIVE_RATE_SPEC_MIN_FILL_RATE", "4"},
           {"MULLIGAN_ADAPTIVE_RATE_NOPE_BETA", "0.5"},
           {"MULLIGAN_ADAPTIVE_RATE_AWS_RATE", "1"}}));
  ASSERT_TRUE(report.ok()) << report.status().message();
  std::shared_ptr<const ConfigSnapshot> s = registry.Snapshot();
  EXPECT_EQ(s->adaptive_rates.at("aws").beta, 0.25);
  EXPECT_EQ(s->adaptive_rates.at("aws").max_wait, std::nullopt);
  EXPECT_EQ(s->adaptive_rates.at("aws").smoothing, 0.6);  // the file's, not overridden
  EXPECT_EQ(s->adaptive_rates.at("spec").bucket, seconds(1));
  EXPECT_EQ(s->adaptive_rates.at("spec").min_fill_rate, 4.0);
  const std::vector<std::string>& w = report->warnings;
  auto has = [&](const std::string& text) {
    for (const std::string& line : w) {
      if (line == text) return true;
    }
    return false;
  };
  EXPECT_TRUE(has("limits.json: adaptive_rates.aws.beta: overridden by "
                  "MULLIGAN_ADAPTIVE_RATE_AWS_BETA=0.25"));
  EXPECT_TRUE(has("limits.json: MULLIGAN_ADAPTIVE_RATE_NOPE_BETA: names no adaptive rate of "
                  "this document (adaptive_rates: aws, spec); not applied"));
  EXPECT_TRUE(has("limits.json: MULLIGAN_ADAPTIVE_RATE_AWS_RATE: names no field of adaptive "
                  "rate \"aws\" (fields: BETA, SCALE_CONSTANT, SMOOTHING, BUCKET, "
                  "MIN_FILL_RATE, MAX_RATE_SCALE, MAX_WAIT); not applied"));

  Result<LoadReport> bad = registry.LoadString(
      kAdaptive, "limits.json", Env({{"MULLIGAN_ADAPTIVE_RATE_AWS_SMOOTHING", "2"}}));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("environment: MULLIGAN_ADAPTIVE_RATE_AWS_SMOOTHING: "
                                        "expected a number in (0, 1], got 2"),
            std::string::npos)
      << bad.status().message();
}

}  // namespace
}  // namespace mulligan
