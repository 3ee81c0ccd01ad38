// The shared circuit breaker scripts of tests/vectors/breaker.json, which the
// C (tests/capi/breaker_vectors_test.c) and Python
// (tests/python/breaker/test_breaker_vectors.py) suites run too.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>

#include "mulligan/breaker/circuit_breaker.h"

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
double ToSeconds(Duration d) { return duration<double>(d).count(); }

CircuitBreakerOptions OptionsFrom(const json::object& o) {
  CircuitBreakerOptions options;
  options.name = "vector";
  for (const auto& [key, value] : o) {
    const double v = value.is_string() ? 0.0 : value.to_number<double>();
    if (key == "failure_threshold") options.failure_threshold = static_cast<int>(v);
    else if (key == "window") {
      const std::string w = json::value_to<std::string>(value);
      options.window = w == "count" ? WindowKind::kCount
                       : w == "time" ? WindowKind::kTime
                                     : WindowKind::kNone;
    } else if (key == "window_size") options.window_size = static_cast<int>(v);
    else if (key == "window_duration") options.window_duration = Seconds(v);
    else if (key == "window_buckets") options.window_buckets = static_cast<int>(v);
    else if (key == "failure_rate_threshold") options.failure_rate_threshold = v;
    else if (key == "minimum_calls") options.minimum_calls = static_cast<int>(v);
    else if (key == "slow_call_duration") options.slow_call_duration = Seconds(v);
    else if (key == "slow_call_rate_threshold") options.slow_call_rate_threshold = v;
    else if (key == "reset_timeout") options.reset_timeout = Seconds(v);
    else if (key == "reset_timeout_multiplier") options.reset_timeout_multiplier = v;
    else if (key == "max_reset_timeout") options.max_reset_timeout = Seconds(v);
    else if (key == "half_open_max_calls") options.half_open_max_calls = static_cast<int>(v);
    else if (key == "permit_timeout") options.permit_timeout = Seconds(v);
    else ADD_FAILURE() << "unknown option " << key;
  }
  return options;
}

CallResult ResultFrom(const std::string& name) {
  if (name == "success") return CallResult::kSuccess;
  if (name == "failure") return CallResult::kFailure;
  EXPECT_EQ(name, "ignored");
  return CallResult::kIgnored;
}

// Checks `expected` (seconds, or null for "never") against `actual`.
void ExpectRetryIn(const json::value& expected, Duration actual) {
  if (expected.is_null()) {
    EXPECT_EQ(actual, Duration::max());
  } else {
    EXPECT_NEAR(ToSeconds(actual), expected.to_number<double>(), 1e-6);
  }
}

TEST(BreakerVectorsTest, Scripts) {
  json::value doc = Load("breaker.json");
  int cases = 0;
  for (const json::value& item : doc.at("cases").as_array()) {
    const json::object& c = item.as_object();
    SCOPED_TRACE(json::value_to<std::string>(c.at("name")));
    auto created = CircuitBreaker::Create(OptionsFrom(c.at("options").as_object()));
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    std::unique_ptr<CircuitBreaker> breaker = std::move(created).value();
    const TimePoint start = FakeClock().Now();
    std::map<std::string, Permit> permits;
    int index = 0;
    for (const json::value& step_value : c.at("steps").as_array()) {
      const json::object& step = step_value.as_object();
      SCOPED_TRACE("step " + std::to_string(index++));
      const TimePoint now = start + Seconds(step.at("at").to_number<double>());
      const std::string op = json::value_to<std::string>(step.at("op"));
      const json::object empty;
      const json::object& expect =
          step.contains("expect") ? step.at("expect").as_object() : empty;
      std::optional<Admission> admission;
      if (op == "acquire") {
        admission = breaker->Acquire(now);
        permits[json::value_to<std::string>(step.at("permit"))] = admission->permit;
      } else if (op == "record") {
        const Permit& permit = permits.at(json::value_to<std::string>(step.at("permit")));
        const double d = step.contains("duration") ? step.at("duration").to_number<double>() : 0;
        breaker->Record(permit, ResultFrom(json::value_to<std::string>(step.at("result"))),
                        Seconds(d), now);
      } else if (op == "force_open") {
        breaker->ForceOpen(now);
      } else if (op == "disable") {
        breaker->Disable(now);
      } else if (op == "metrics_only") {
        breaker->MetricsOnly(now);
      } else if (op == "reset") {
        breaker->Reset(now);
      } else {
        ASSERT_EQ(op, "check");
      }

      if (expect.contains("admitted")) {
        ASSERT_TRUE(admission.has_value()) << "admitted is for acquire steps";
        EXPECT_EQ(admission->admitted(), expect.at("admitted").as_bool());
      }
      if (expect.contains("state")) {
        EXPECT_STREQ(BreakerStateName(breaker->state(now)),
                     json::value_to<std::string>(expect.at("state")).c_str());
        if (admission) {
          EXPECT_STREQ(BreakerStateName(admission->state),
                       json::value_to<std::string>(expect.at("state")).c_str());
        }
      }
      if (expect.contains("retry_in")) {
        ExpectRetryIn(expect.at("retry_in"),
                      admission ? admission->retry_in : breaker->TimeUntilProbe(now));
      }
      const BreakerCounts counts = breaker->counts(now);
      if (expect.contains("consecutive_failures")) {
        EXPECT_EQ(counts.consecutive_failures, expect.at("consecutive_failures").to_number<int>());
      }
      if (expect.contains("successes")) {
        EXPECT_EQ(counts.successes, expect.at("successes").to_number<uint64_t>());
      }
      if (expect.contains("failures")) {
        EXPECT_EQ(counts.failures, expect.at("failures").to_number<uint64_t>());
      }
      if (expect.contains("ignored")) {
        EXPECT_EQ(counts.ignored, expect.at("ignored").to_number<uint64_t>());
      }
      if (expect.contains("rejected")) {
        EXPECT_EQ(counts.rejected, expect.at("rejected").to_number<uint64_t>());
      }
    }
    ++cases;
  }
  EXPECT_GE(cases, 10);
}

}  // namespace
}  // namespace mulligan
