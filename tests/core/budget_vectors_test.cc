// The shared retry budget and adaptive throttling scripts of
// tests/vectors/budget.json (made by tests/core/gen_budget_vectors.py, which
// computes every expectation on its own), which the Python suite
// (tests/python/budget/test_budget_vectors.py) runs too.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <fstream>
#include <sstream>
#include <string>

#include "mulligan/budget/budget.h"
#include "mulligan/budget/throttle.h"

namespace mulligan {
namespace {

namespace json = boost::json;
using std::chrono::duration;
using std::chrono::duration_cast;

json::value Load(const std::string& name) {
  std::ifstream in(std::string(MULLIGAN_VECTORS_DIR) + "/" + name);
  EXPECT_TRUE(in.good()) << name;
  std::stringstream text;
  text << in.rdbuf();
  return json::parse(text.str());
}

Duration Seconds(double s) { return duration_cast<Duration>(duration<double>(s)); }
double Num(const json::value& v) { return v.to_number<double>(); }
TimePoint At(double s) { return TimePoint(Seconds(s)); }

BudgetFailure KindOf(const json::object& step) {
  const std::string kind = json::value_to<std::string>(step.at("kind"));
  if (kind == "timeout") return BudgetFailure::kTimeout;
  if (kind == "throttling") return BudgetFailure::kThrottling;
  EXPECT_EQ(kind, "other");
  return BudgetFailure::kOther;
}

BudgetOptions BudgetOptionsFrom(const json::object& c, FakeClock& clock) {
  BudgetOptions options;
  options.name = json::value_to<std::string>(c.at("name"));
  options.clock = &clock;
  const std::string kind = json::value_to<std::string>(c.at("kind"));
  const json::object& o = c.at("options").as_object();
  if (kind == "token_bucket") {
    options.kind = BudgetKind::kTokenBucket;
    options.token_bucket.max_tokens = Num(o.at("max_tokens"));
    options.token_bucket.token_ratio = Num(o.at("token_ratio"));
  } else if (kind == "quota") {
    options.kind = BudgetKind::kQuota;
    options.quota.capacity = o.at("capacity").to_number<int64_t>();
    options.quota.retry_cost = o.at("retry_cost").to_number<int64_t>();
    options.quota.timeout_cost = o.at("timeout_cost").to_number<int64_t>();
    options.quota.throttling_cost = o.at("throttling_cost").to_number<int64_t>();
    options.quota.no_retry_increment = o.at("no_retry_increment").to_number<int64_t>();
  } else {
    EXPECT_EQ(kind, "ratio");
    options.kind = BudgetKind::kRatio;
    options.ratio.ttl = Seconds(Num(o.at("ttl")));
    options.ratio.percent = Num(o.at("percent"));
    options.ratio.min_retries_per_second = Num(o.at("min_retries_per_second"));
  }
  return options;
}

TEST(BudgetVectors, EveryScriptGivesTheComputedValues) {
  const json::value data = Load("budget.json");
  for (const json::value& item : data.at("budgets").as_array()) {
    const json::object& c = item.as_object();
    FakeClock clock(At(c.contains("start") ? Num(c.at("start")) : 0.0), WallTime());
    Result<std::shared_ptr<RetryBudget>> made = RetryBudget::Create(BudgetOptionsFrom(c, clock));
    ASSERT_TRUE(made.ok()) << made.status().message();
    RetryBudget& budget = *made.value();
    int index = 0;
    for (const json::value& s : c.at("steps").as_array()) {
      const json::object& step = s.as_object();
      const std::string op = json::value_to<std::string>(step.at("op"));
      const TimePoint now = At(Num(step.at("t")));
      SCOPED_TRACE(std::string(json::value_to<std::string>(c.at("name"))) + " step " +
                   std::to_string(index++) + " " + op);
      if (op == "failure") {
        budget.OnFailure(KindOf(step), now);
      } else if (op == "retry") {
        const int repeat = step.contains("repeat") ? step.at("repeat").to_number<int>() : 1;
        for (int i = 0; i < repeat; ++i) {
          const int64_t cost = budget.TryRetry(KindOf(step), now);
          EXPECT_EQ(cost >= 0, step.at("allowed").as_bool());
          if (step.contains("cost")) {
            EXPECT_EQ(cost, step.at("cost").to_number<int64_t>());
          }
        }
      } else if (op == "success") {
        budget.AddSuccesses(step.contains("count") ? step.at("count").to_number<uint64_t>() : 1);
      } else if (op == "retried_success") {
        budget.OnRetriedSuccess(step.at("cost").to_number<int64_t>());
      } else if (op == "call") {
        budget.OnCallStarted(now);
      } else {
        ADD_FAILURE() << "unknown op " << op;
      }
      EXPECT_DOUBLE_EQ(budget.Tokens(now), Num(step.at("tokens")));
    }
  }
}

TEST(ThrottleVectors, RejectionProbabilitiesAndDrawsAreTheComputedOnes) {
  const json::value data = Load("budget.json");
  for (const json::value& item : data.at("throttles").as_array()) {
    const json::object& c = item.as_object();
    const json::object& o = c.at("options").as_object();
    ThrottleOptions options;
    options.window = Seconds(Num(o.at("window")));
    options.k = Num(o.at("k"));
    options.seed = o.at("seed").to_number<uint64_t>();
    Result<std::shared_ptr<AdaptiveThrottle>> made = AdaptiveThrottle::Create(options);
    ASSERT_TRUE(made.ok()) << made.status().message();
    AdaptiveThrottle& throttle = *made.value();
    int index = 0;
    for (const json::value& s : c.at("steps").as_array()) {
      const json::object& step = s.as_object();
      const std::string op = json::value_to<std::string>(step.at("op"));
      const TimePoint now = At(Num(step.at("t")));
      SCOPED_TRACE("step " + std::to_string(index++) + " " + op);
      if (op == "admit") {
        EXPECT_DOUBLE_EQ(throttle.Probability(now), Num(step.at("p")));
        EXPECT_EQ(throttle.Admit(now), step.at("admitted").as_bool());
      } else if (op == "record") {
        const bool accept = json::value_to<std::string>(step.at("outcome")) == "accept";
        throttle.Record(accept ? Outcome::Success() : Outcome::Http(503));
      } else {
        ADD_FAILURE() << "unknown op " << op;
      }
    }
  }
}

}  // namespace
}  // namespace mulligan
