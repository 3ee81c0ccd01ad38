// AdaptiveRate (limits/adaptive_rate.h): the CUBIC steps of
// tests/vectors/adaptive_rate.json (made by
// tests/vectors/gen_adaptive_rate_vectors.py from the AWS spec's pseudo-code,
// independently of this code), bad options, and its use as strategy 2.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

#include "mulligan/limits/adaptive_rate.h"
#include "mulligan/pipeline/call.h"
#include "mulligan/pipeline/pipeline.h"
#include "mulligan/telemetry/metrics.h"

namespace mulligan {
namespace {

namespace json = boost::json;

json::value Load(const std::string& name) {
  std::ifstream in(std::string(MULLIGAN_VECTORS_DIR) + "/" + name);
  EXPECT_TRUE(in.good()) << name;
  std::stringstream text;
  text << in.rdbuf();
  return json::parse(text.str());
}

TimePoint At(double seconds) {
  return TimePoint(Duration(static_cast<Duration::rep>(std::llround(seconds * 1e9))));
}

void Near(double expected, double actual, const std::string& what) {
  EXPECT_NEAR(actual, expected, 1e-9 * std::max(1.0, std::fabs(expected))) << what;
}

TEST(AdaptiveRateVectors, CubicStepsMatchTheSpecModel) {
  const json::value doc = Load("adaptive_rate.json");
  int checked = 0;
  for (const json::value& sv : doc.at("scenarios").as_array()) {
    const json::object& sc = sv.as_object();
    const std::string name(sc.at("name").as_string());
    AdaptiveRateOptions o;
    o.name = name;
    if (!sc.at("max_wait").is_null()) {
      o.max_wait = Duration(std::llround(sc.at("max_wait").to_number<double>() * 1e9));
    }
    auto rate = AdaptiveRate::Create(o, At(sc.at("start").to_number<double>())).value();
    int i = 0;
    for (const json::value& stv : sc.at("steps").as_array()) {
      const json::object& st = stv.as_object();
      const std::string op(st.at("op").as_string());
      const double t = st.at("t").to_number<double>();
      const std::string where = name + " step " + std::to_string(i++) + " (" + op + ")";
      if (op == "acquire") {
        const RateDecision d = rate->Acquire(At(t));
        EXPECT_EQ(d.admitted, st.at("admitted").as_bool()) << where;
        const double wait = st.at("wait").to_number<double>();
        const double got = std::chrono::duration<double>(d.admitted ? d.wait : d.retry_in).count();
        EXPECT_NEAR(got, wait, 2e-9) << where;
      } else {
        rate->Record(op == "throttle", At(t));
        const AdaptiveRateState s = rate->State(At(t));
        Near(st.at("calculated_rate").to_number<double>(), s.calculated_rate, where + " calculated");
        Near(st.at("measured_rate").to_number<double>(), s.measured_rate, where + " measured");
        Near(st.at("fill_rate").to_number<double>(), s.fill_rate, where + " fill_rate");
        Near(st.at("max_capacity").to_number<double>(), s.max_capacity, where + " max_capacity");
        Near(st.at("last_max_rate").to_number<double>(), s.last_max_rate, where + " w_max");
        Near(st.at("time_window").to_number<double>(), s.time_window, where + " K");
        EXPECT_EQ(s.enabled, st.at("enabled").as_bool()) << where;
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 60);
}

// By hand: W_max = 10, beta 0.7, C 0.4: K = cbrt(10 * 0.3 / 0.4) = cbrt(7.5);
// a throttle at 10/s gives 7; at t = K after it, CUBIC is back at W_max.
TEST(AdaptiveRate, CubicFormulaByHand) {
  const double k = std::cbrt(7.5);
  EXPECT_NEAR(0.4 * std::pow(0.0 - k, 3) + 10.0, 10.0 - 0.4 * 7.5, 1e-12);  // = 7 = 10 * 0.7
}

TEST(AdaptiveRate, BadOptionsAreRefusedNamingTheField) {
  auto message = [](AdaptiveRateOptions o) {
    return AdaptiveRate::Create(o, TimePoint()).status().message();
  };
  AdaptiveRateOptions o;
  o.beta = 1.0;
  EXPECT_NE(message(o).find("beta must be in (0, 1), got 1"), std::string::npos) << message(o);
  o = {};
  o.scale_constant = -1;
  EXPECT_NE(message(o).find("scale_constant"), std::string::npos);
  o = {};
  o.smoothing = 0;
  EXPECT_NE(message(o).find("smoothing"), std::string::npos);
  o = {};
  o.bucket = Duration::zero();
  EXPECT_NE(message(o).find("bucket"), std::string::npos);
  o = {};
  o.min_fill_rate = 0;
  EXPECT_NE(message(o).find("min_fill_rate"), std::string::npos);
  o = {};
  o.max_rate_scale = 0.5;
  EXPECT_NE(message(o).find("max_rate_scale"), std::string::npos);
  o = {};
  o.max_wait = Duration(-1);
  EXPECT_NE(message(o).find("max_wait"), std::string::npos);
  EXPECT_TRUE(AdaptiveRate::Create(AdaptiveRateOptions{}, TimePoint()).ok());
}

TEST(AdaptiveRate, ThrottlingAnswers) {
  EXPECT_TRUE(IsThrottlingAnswer(Outcome::Http(429)));
  EXPECT_FALSE(IsThrottlingAnswer(Outcome::Http(503)));
  Outcome with_hint = Outcome::Http(503);
  with_hint.retry_after = std::chrono::seconds(1);
  EXPECT_TRUE(IsThrottlingAnswer(with_hint));
  EXPECT_FALSE(IsThrottlingAnswer(Outcome::Http(500)));
}

// In a pipeline, attempt-level: ten successes at 10/s measure 10/s (the
// rate stays disabled); a 429 enables it with fill rate 0.7 * measured; the
// next attempts wait for their tokens, and the rate's refusal past max_wait
// is StopReason::kRateLimited. The metrics count its throttles.
TEST(AdaptiveRate, PipelineAsksEveryAttemptAndRecordsEveryAnswer) {
  MetricsRegistry registry;
  FakeClock clock(At(1000.0), WallTime());
  AdaptiveRateOptions ao;
  ao.name = "aws";
  ao.max_wait = std::chrono::seconds(1);
  PipelineOptions o;
  o.name = "s3";
  o.retry.max_attempts = 3;
  o.retry.backoff.jitter = JitterKind::kNone;
  o.metrics_registry = &registry;
  o.adaptive_rate = AdaptiveRate::Create(ao, clock.Now()).value();
  auto pipeline = Pipeline::Create(o).value();
  for (int i = 0; i < 20; ++i) {
    clock.Advance(std::chrono::milliseconds(100));
    Call call = pipeline->Begin(clock.Now());
    ASSERT_TRUE(call.Admit(clock.Now()).go());
    (void)call.Record(Outcome::Http(200), clock.Now());
  }
  // Same arithmetic as the vectors' "throttle_then_cubic_recovery" ramp.
  AdaptiveRateState s = o.adaptive_rate->State(clock.Now());
  EXPECT_FALSE(s.enabled);
  EXPECT_NEAR(s.measured_rate, 9.984, 1e-9);
  clock.Advance(std::chrono::milliseconds(50));
  Call call = pipeline->Begin(clock.Now());
  ASSERT_TRUE(call.Admit(clock.Now()).go());
  const Decision d = call.Record(Outcome::Http(429), clock.Now());
  s = o.adaptive_rate->State(clock.Now());
  EXPECT_TRUE(s.enabled);
  EXPECT_NEAR(s.fill_rate, 9.984 * 0.7, 1e-9);
  ASSERT_TRUE(d.retry());
  clock.Advance(d.delay);
  // Capacity starts at 0 once enabled (a reservation takes it below).
  int waits = 0;
  for (;;) {
    const AttemptAdmission a = call.Admit(clock.Now());
    if (a.wait()) {
      ++waits;
      clock.Advance(a.delay);
      continue;
    }
    ASSERT_TRUE(a.go());
    break;
  }
  (void)call.Record(Outcome::Http(200), clock.Now());
  EXPECT_EQ(o.adaptive_rate->throttles(), 1u);
  const LimitsSnapshot limits = registry.SnapshotLimits(clock.Now());
  ASSERT_EQ(limits.adaptive_rates.size(), 1u);
  EXPECT_EQ(limits.adaptive_rates[0].throttles, 1u);
  EXPECT_TRUE(limits.adaptive_rates[0].enabled);
  const std::string text = registry.ToPrometheus(clock.Now());
  EXPECT_NE(text.find("mulligan_adaptive_rate_throttles_total{name=\"aws\"} 1\n"), std::string::npos);
}

}  // namespace
}  // namespace mulligan
