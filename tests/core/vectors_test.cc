// The shared vectors of tests/vectors/*.json, which the C and Python suites run too.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <fstream>
#include <sstream>
#include <string>

#include "mulligan/retry/backoff.h"
#include "mulligan/retry/retry_after.h"
#include "mulligan/retry/policy.h"

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

TEST(VectorsTest, BackoffSequences) {
  json::value doc = Load("backoff.json");
  for (const json::value& item : doc.at("cases").as_array()) {
    const json::object& c = item.as_object();
    SCOPED_TRACE(json::value_to<std::string>(c.at("name")));
    BackoffOptions options;
    options.kind = *ParseBackoffKind(json::value_to<std::string>(c.at("backoff")));
    options.jitter = *ParseJitterKind(json::value_to<std::string>(c.at("jitter")));
    options.base = Duration(c.at("base_ns").to_number<int64_t>());
    options.max_delay = Duration(c.at("max_delay_ns").to_number<int64_t>());
    options.multiplier = c.at("multiplier").to_number<double>();
    options.jitter_fraction = c.at("jitter_fraction").to_number<double>();
    Result<Backoff> backoff = Backoff::Create(options);
    ASSERT_TRUE(backoff.ok()) << backoff.status().ToString();

    // Through the Backoff directly...
    Random random(c.at("seed").to_number<uint64_t>());
    Duration previous = options.base;
    const json::array& expected = c.at("expected_ns").as_array();
    for (size_t n = 0; n < expected.size(); ++n) {
      Duration d = backoff->Delay(n, previous, random);
      EXPECT_EQ(d.count(), expected[n].to_number<int64_t>()) << "retry " << n;
      previous = d;
    }

    // ...and through a seeded session, as every front door does.
    RetryOptions retry;
    retry.backoff = options;
    retry.max_attempts = static_cast<int>(expected.size()) + 1;
    retry.seed = c.at("seed").to_number<uint64_t>();
    Result<RetryPolicy> policy = RetryPolicy::Create(retry);
    ASSERT_TRUE(policy.ok());
    RetrySession session = policy->Begin(TimePoint{});
    for (size_t n = 0; n < expected.size(); ++n) {
      Decision d = session.OnOutcome(Outcome::Failure(true), TimePoint{});
      ASSERT_TRUE(d.retry());
      EXPECT_EQ(d.delay.count(), expected[n].to_number<int64_t>()) << "session retry " << n;
    }
  }
}

TEST(VectorsTest, RetryAfterValues) {
  json::value doc = Load("retry_after.json");
  for (const json::value& item : doc.at("cases").as_array()) {
    const json::object& c = item.as_object();
    const std::string value = json::value_to<std::string>(c.at("value"));
    SCOPED_TRACE("\"" + value + "\"");
    const WallTime now{std::chrono::seconds(c.at("now_unix").to_number<int64_t>())};
    std::optional<Duration> delay = ParseRetryAfter(value, now);
    if (c.contains("saturated") && c.at("saturated").as_bool()) {
      EXPECT_EQ(delay, Duration::max());
    } else if (c.at("expected_seconds").is_null()) {
      EXPECT_EQ(delay, std::nullopt);
    } else {
      ASSERT_TRUE(delay.has_value());
      EXPECT_EQ(*delay, std::chrono::seconds(c.at("expected_seconds").to_number<int64_t>()));
    }
  }
}

Outcome ParseOutcome(const json::object& o) {
  Outcome outcome;
  if (o.contains("error")) {
    const std::string error = json::value_to<std::string>(o.at("error"));
    for (int k = 0; k <= static_cast<int>(ErrorKind::kTruncated); ++k) {
      if (error == ErrorKindName(static_cast<ErrorKind>(k))) {
        outcome = Outcome::Transport(static_cast<ErrorKind>(k));
      }
    }
    EXPECT_NE(outcome.error, ErrorKind::kNone) << error;
  }
  if (o.contains("http_status")) outcome.http_status = o.at("http_status").to_number<int>();
  if (o.contains("retry_after")) outcome.retry_after = Seconds(o.at("retry_after").to_number<double>());
  return outcome;
}

RetryOptions ParsePolicy(const json::object& p) {
  RetryOptions options;
  if (p.contains("max_attempts")) options.max_attempts = p.at("max_attempts").to_number<int>();
  if (p.contains("backoff")) {
    options.backoff.kind = *ParseBackoffKind(json::value_to<std::string>(p.at("backoff")));
  }
  if (p.contains("jitter")) {
    options.backoff.jitter = *ParseJitterKind(json::value_to<std::string>(p.at("jitter")));
  }
  if (p.contains("base_delay")) options.backoff.base = Seconds(p.at("base_delay").to_number<double>());
  if (p.contains("multiplier")) options.backoff.multiplier = p.at("multiplier").to_number<double>();
  if (p.contains("max_delay")) options.backoff.max_delay = Seconds(p.at("max_delay").to_number<double>());
  if (p.contains("deadline")) options.deadline = Seconds(p.at("deadline").to_number<double>());
  if (p.contains("retry_after_max")) {
    options.retry_after_max = Seconds(p.at("retry_after_max").to_number<double>());
  }
  if (p.contains("retry_after_clamp") && p.at("retry_after_clamp").as_bool()) {
    options.retry_after_overflow = RetryAfterOverflow::kClamp;
  }
  return options;
}

TEST(VectorsTest, SessionScripts) {
  json::value doc = Load("deadline.json");
  for (const json::value& item : doc.at("cases").as_array()) {
    const json::object& c = item.as_object();
    SCOPED_TRACE(json::value_to<std::string>(c.at("name")));
    Result<RetryPolicy> policy = RetryPolicy::Create(ParsePolicy(c.at("policy").as_object()));
    ASSERT_TRUE(policy.ok()) << policy.status().ToString();
    const bool replay_safe = !c.contains("replay_safe") || c.at("replay_safe").as_bool();
    const TimePoint start{std::chrono::seconds(50)};
    RetrySession session = policy->Begin(start, replay_safe);
    for (const json::value& step_value : c.at("steps").as_array()) {
      const json::object& step = step_value.as_object();
      const TimePoint at = start + Seconds(step.at("at").to_number<double>());
      Decision d = session.OnOutcome(ParseOutcome(step.at("outcome").as_object()), at);
      const json::object& expect = step.at("expect").as_object();
      const std::string action = json::value_to<std::string>(expect.at("action"));
      EXPECT_EQ(d.retry(), action == "retry");
      if (action == "retry") {
        EXPECT_EQ(d.delay, Seconds(expect.at("delay").to_number<double>()));
        const bool from_hint =
            expect.contains("from_retry_after") && expect.at("from_retry_after").as_bool();
        EXPECT_EQ(d.from_retry_after, from_hint);
      } else {
        EXPECT_EQ(StopReasonName(d.reason), json::value_to<std::string>(expect.at("reason")));
      }
    }
  }
}

}  // namespace
}  // namespace mulligan
