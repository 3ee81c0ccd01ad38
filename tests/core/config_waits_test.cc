// The "wait", "stop" and "min_delay" fields of a config file's retry policy
// (core/src/config/wait_fields.h): each changes the delays or the stop, with
// values worked out by hand, and bad forms name their place.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "mulligan/config/config.h"
#include "mulligan/retry/policy.h"

namespace mulligan {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

LoadOptions NoEnv() {
  LoadOptions options;
  options.env = [](const std::string&) -> std::optional<std::string> { return std::nullopt; };
  return options;
}

std::shared_ptr<const RetryPolicy> Load(PolicyRegistry& registry, const std::string& policy) {
  Result<LoadReport> r =
      registry.LoadString(R"({"policies": {"p": )" + policy + "}}", "t.json", NoEnv());
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  Result<std::shared_ptr<const RetryPolicy>> p = registry.Policy("p");
  EXPECT_TRUE(p.ok());
  return p.ok() ? *p : nullptr;
}

std::string ErrorOf(const std::string& policy) {
  PolicyRegistry registry;
  Result<LoadReport> r =
      registry.LoadString(R"({"policies": {"p": )" + policy + "}}", "t.json", NoEnv());
  return r.ok() ? "<ok>" : r.status().message();
}

TEST(ConfigWaits, ChainSumAndMinDelayChangeTheDelays) {
  PolicyRegistry registry;
  auto policy = Load(registry, R"({
      "wait": {"sum": [{"chain": [{"constant": "1s"}, {"linear": {"start": 0, "increment": "2s"}}]},
                        {"constant": "250ms"}]},
      "min_delay": "1.5s", "max_delay": "5s", "max_attempts": 5})");
  ASSERT_NE(policy, nullptr);
  RetrySession s = policy->Begin(TimePoint{});
  // retry 1: 1 + 0.25 = 1.25 -> floor 1.5; retry 2: 2*1 + 0.25 = 2.25;
  // retry 3: 2*2 + 0.25 = 4.25; retry 4: 6.25 -> cap 5.
  const Duration expected[] = {milliseconds(1500), milliseconds(2250), milliseconds(4250),
                               seconds(5)};
  for (Duration d : expected) EXPECT_EQ(s.OnOutcome(Outcome::Failure(true), TimePoint{}).delay, d);
  EXPECT_EQ(s.OnOutcome(Outcome::Failure(true), TimePoint{}).reason,
            StopReason::kAttemptsExhausted);
}

TEST(ConfigWaits, StopReplacesMaxAttemptsAndBoundsTheCall) {
  PolicyRegistry registry;
  auto policy = Load(registry, R"({"max_attempts": 2, "wait": {"constant": "1s"},
      "stop": {"any": [{"after_attempts": 10}, {"after_elapsed": "2.5s"}]}})");
  ASSERT_NE(policy, nullptr);
  EXPECT_EQ(policy->effective_deadline(), Duration(milliseconds(2500)));
  RetrySession s = policy->Begin(TimePoint{});
  // max_attempts 2 no longer applies: attempts end at 0 and 1 s and retry;
  // at 2 s the wait would reach 3 s >= 2.5 s.
  EXPECT_TRUE(s.OnOutcome(Outcome::Failure(true), TimePoint{}).retry());
  EXPECT_TRUE(s.OnOutcome(Outcome::Failure(true), TimePoint{} + seconds(1)).retry());
  EXPECT_EQ(s.OnOutcome(Outcome::Failure(true), TimePoint{} + seconds(2)).reason,
            StopReason::kDeadline);

  auto unlimited = Load(registry, R"({"stop": {"never": true}, "deadline": "1h",
      "wait": {"exponential": {"base": "1s", "multiplier": 3, "max": "2s"}}})");
  ASSERT_NE(unlimited, nullptr);
  RetrySession u = unlimited->Begin(TimePoint{});
  // 1 s, then 3 s capped by the term's max at 2 s, for as long as the hour lasts.
  EXPECT_EQ(u.OnOutcome(Outcome::Failure(true), TimePoint{}).delay, seconds(1));
  for (int i = 0; i < 100; ++i) {
    ASSERT_EQ(u.OnOutcome(Outcome::Failure(true), TimePoint{}).delay, seconds(2)) << i;
  }
}

TEST(ConfigWaits, MinDelayEnvironmentOverride) {
  PolicyRegistry registry;
  LoadOptions options;
  options.env = [](const std::string& name) -> std::optional<std::string> {
    if (name == "MULLIGAN_POLICY_P_MIN_DELAY") return "750ms";
    return std::nullopt;
  };
  Result<LoadReport> r = registry.LoadString(
      R"({"policies": {"p": {"backoff": "constant", "base_delay": "10ms", "jitter": "none"}}})",
      "t.json", options);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  RetrySession s = (*registry.Policy("p"))->Begin(TimePoint{});
  EXPECT_EQ(s.OnOutcome(Outcome::Failure(true), TimePoint{}).delay, milliseconds(750));
}

TEST(ConfigWaits, BadFormsNameTheirPlace) {
  EXPECT_EQ(ErrorOf(R"({"wait": {"fixed": "1s"}})"),
            "t.json: policies.p.wait: expected an object with one of constant, linear, "
            "exponential, uniform, jitter, sum, chain, got an object");
  EXPECT_EQ(ErrorOf(R"({"wait": {"linear": {"start": "1s"}}})"),
            "t.json: policies.p.wait.linear.increment: missing (required)");
  EXPECT_EQ(ErrorOf(R"({"wait": {"uniform": {"min": "3s", "max": "1s"}}})"),
            "t.json: policies.p.wait.uniform: max must be >= min");
  EXPECT_EQ(ErrorOf(R"({"stop": {"never": true}})"),
            "t.json: policies.p: stop: never may never stop (unlimited attempts); bound it "
            "with after_attempts or after_elapsed, or set a deadline");
  EXPECT_EQ(ErrorOf(R"({"stop": {"any": [{"after_attempts": 0}]}})"),
            "t.json: policies.p.stop.any[0].after_attempts: expected an integer >= 1, got 0");
  EXPECT_EQ(ErrorOf(R"({"min_delay": "20s"})"),
            "t.json: policies.p: min_delay must be in [0, max_delay 10 s], got 20 s");
}

}  // namespace
}  // namespace mulligan
