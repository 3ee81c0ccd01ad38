// Composed waits and stop conditions (retry/wait.h, retry/stop.h): the shared
// vectors of tests/vectors/waits.json, and hand-computed sessions.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

#include "mulligan/retry/policy.h"
#include "mulligan/retry/stop.h"
#include "mulligan/retry/wait.h"

namespace mulligan {
namespace {

namespace json = boost::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

json::value Load(const std::string& name) {
  std::ifstream in(std::string(MULLIGAN_VECTORS_DIR) + "/" + name);
  EXPECT_TRUE(in.good()) << name;
  std::stringstream text;
  text << in.rdbuf();
  return json::parse(text.str());
}

Duration Ns(const json::object& o, const char* key) {
  return Duration(o.at(key).to_number<int64_t>());
}

WaitExpr WaitFromJson(const json::object& o) {
  const std::string kind = json::value_to<std::string>(o.at("kind"));
  std::optional<Duration> max;
  if (o.contains("max_ns")) max = Ns(o, "max_ns");
  if (kind == "constant") return WaitExpr::Constant(Ns(o, "delay_ns"));
  if (kind == "linear") return WaitExpr::Linear(Ns(o, "start_ns"), Ns(o, "increment_ns"), max);
  if (kind == "exponential") {
    return WaitExpr::Exponential(Ns(o, "base_ns"), o.at("multiplier").to_number<double>(), max);
  }
  if (kind == "uniform") return WaitExpr::Uniform(Ns(o, "low_ns"), Ns(o, "high_ns"));
  if (kind == "jitter") return WaitExpr::Jitter(Ns(o, "max_ns"));
  std::vector<WaitExpr> terms;
  for (const json::value& t : o.at("terms").as_array()) terms.push_back(WaitFromJson(t.as_object()));
  return kind == "sum" ? WaitExpr::Sum(terms) : WaitExpr::Chain(terms);
}

TEST(WaitsTest, SharedVectorsThroughASeededSession) {
  json::value doc = Load("waits.json");
  for (const json::value& item : doc.at("cases").as_array()) {
    const json::object& c = item.as_object();
    SCOPED_TRACE(json::value_to<std::string>(c.at("name")));
    const json::array& expected = c.at("expected_ns").as_array();
    RetryOptions options;
    options.backoff.wait = WaitFromJson(c.at("wait").as_object());
    options.backoff.min_delay = Ns(c, "min_delay_ns");
    options.backoff.max_delay = Ns(c, "max_delay_ns");
    options.max_attempts = static_cast<int>(expected.size()) + 1;
    options.seed = c.at("seed").to_number<uint64_t>();
    Result<RetryPolicy> policy = RetryPolicy::Create(options);
    ASSERT_TRUE(policy.ok()) << policy.status().ToString();
    RetrySession session = policy->Begin(TimePoint{});
    for (size_t n = 0; n < expected.size(); ++n) {
      Decision d = session.OnOutcome(Outcome::Failure(true), TimePoint{});
      ASSERT_TRUE(d.retry()) << "retry " << n;
      ASSERT_EQ(d.delay.count(), expected[n].to_number<int64_t>()) << "retry " << n;
    }
  }
}

TEST(WaitsTest, ExponentialTermSaturatesAtHugeN) {
  // 1 s * 2^(2^64 - 1) is inf; its own max (5 s) holds it, and the policy's
  // max_delay (3 s) caps the sum.
  BackoffOptions options;
  options.wait = WaitExpr::Sum({WaitExpr::Exponential(seconds(1), 2.0, seconds(5)),
                                WaitExpr::Constant(milliseconds(1))});
  Result<Backoff> b = Backoff::Create(options);
  ASSERT_TRUE(b.ok());
  Random random(1);
  EXPECT_EQ(b->Delay(std::numeric_limits<uint64_t>::max(), Duration::zero(), random),
            Duration(seconds(5) + milliseconds(1)));
  options.max_delay = seconds(3);
  b = Backoff::Create(options);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->Delay(std::numeric_limits<uint64_t>::max(), Duration::zero(), random),
            Duration(seconds(3)));
  // A linear term past Duration's range reaches the cap, never wraps.
  options.wait = WaitExpr::Linear(Duration::max(), Duration::max());
  options.max_delay = Duration::max();
  b = Backoff::Create(options);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->Delay(1000, Duration::zero(), random), Duration::max());
}

TEST(WaitsTest, MinDelayRaisesEveryBackoffButNotRetryAfter) {
  RetryOptions options;
  options.backoff.kind = BackoffKind::kConstant;
  options.backoff.base = milliseconds(10);
  options.backoff.jitter = JitterKind::kNone;
  options.backoff.min_delay = milliseconds(300);
  options.max_attempts = 5;
  Result<RetryPolicy> policy = RetryPolicy::Create(options);
  ASSERT_TRUE(policy.ok());
  RetrySession s = policy->Begin(TimePoint{});
  EXPECT_EQ(s.OnOutcome(Outcome::Failure(true), TimePoint{}).delay, milliseconds(300));
  // A Retry-After hint replaces the backoff: the floor is the backoff's.
  EXPECT_EQ(s.OnOutcome(Outcome::Http(503, milliseconds(20)), TimePoint{}).delay,
            milliseconds(20));
}

TEST(WaitsTest, ValidationNamesTheTerm) {
  BackoffOptions options;
  options.min_delay = seconds(11);  // above max_delay 10 s
  Result<Backoff> b = Backoff::Create(options);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().message(), "min_delay must be in [0, max_delay 10 s], got 11 s");
  options.min_delay = Duration::zero();
  options.wait = WaitExpr::Sum({WaitExpr::Constant(seconds(1)),
                                WaitExpr::Uniform(seconds(3), seconds(2))});
  b = Backoff::Create(options);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().message(),
            "wait term 2 (uniform): max must be >= min, got min 3s and max 2s");
  options.wait = WaitExpr::Exponential(seconds(1), -1.0);
  EXPECT_EQ(Backoff::Create(options).status().message(),
            "wait (exponential): multiplier must be a finite number >= 0, got -1");
  options.wait = WaitExpr::Jitter(-milliseconds(1));
  EXPECT_EQ(Backoff::Create(options).status().message(),
            "wait (jitter): max must be >= 0, got -0.001s");
  options.wait = WaitExpr::Chain({});
  EXPECT_EQ(Backoff::Create(options).status().message(),
            "wait (chain) must hold 1 to 64 terms, got 0");
  EXPECT_EQ(WaitExpr::Sum({WaitExpr::Exponential(milliseconds(100), 2, seconds(5)),
                           WaitExpr::Jitter(seconds(1))})
                .ToString(),
            "exponential(0.1s, 2, max=5s) + jitter(1s)");
}

// -- stop conditions ---------------------------------------------------------

RetryPolicy Policy(const StopExpr& stop, std::optional<Duration> deadline = std::nullopt) {
  RetryOptions options;
  options.backoff.kind = BackoffKind::kConstant;
  options.backoff.base = seconds(1);
  options.backoff.jitter = JitterKind::kNone;
  options.deadline = deadline;
  options.stop = stop;
  Result<RetryPolicy> policy = RetryPolicy::Create(options);
  EXPECT_TRUE(policy.ok()) << policy.status().ToString();
  return std::move(policy).value();
}

TEST(StopTest, AnyOfAttemptsAndElapsedIsMaxAttemptsWithADeadline) {
  RetryPolicy p = Policy(StopExpr::Any({StopExpr::AfterAttempts(10),
                                        StopExpr::AfterElapsed(seconds(3) + milliseconds(500))}));
  EXPECT_EQ(p.effective_deadline(), Duration(seconds(3) + milliseconds(500)));
  RetrySession s = p.Begin(TimePoint{});
  // Attempts end at 0, 1, 2 s (waits of 1 s); the wait after the one ending at
  // 3 s would reach 4 s >= 3.5 s: stop with "deadline".
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(s.OnOutcome(Outcome::Failure(true), TimePoint{} + seconds(i)).retry());
  }
  EXPECT_EQ(s.AttemptTimeout(TimePoint{} + seconds(3)), Duration(milliseconds(500)));
  Decision d = s.OnOutcome(Outcome::Failure(true), TimePoint{} + seconds(3));
  EXPECT_EQ(d.reason, StopReason::kDeadline);
  EXPECT_EQ(d.attempt, 4);
}

TEST(StopTest, AllNeedsEveryCondition) {
  // Stop once at least 3 attempts were made AND 10 s have passed.
  RetryPolicy p = Policy(StopExpr::All({StopExpr::AfterAttempts(3),
                                        StopExpr::AfterElapsed(seconds(10))}));
  EXPECT_EQ(p.effective_deadline(), std::nullopt);  // `all` bounds no attempt
  RetrySession s = p.Begin(TimePoint{});
  EXPECT_TRUE(s.OnOutcome(Outcome::Failure(true), TimePoint{} + seconds(20)).retry());
  EXPECT_TRUE(s.OnOutcome(Outcome::Failure(true), TimePoint{} + seconds(21)).retry());
  EXPECT_EQ(s.OnOutcome(Outcome::Failure(true), TimePoint{} + seconds(22)).reason,
            StopReason::kDeadline);  // the last term's reason

  RetrySession early = p.Begin(TimePoint{});
  for (int i = 0; i < 8; ++i) {
    // Attempts 1..8 end at 0..7 s; the wait of 1 s after attempt 8 would
    // start attempt 9 at 8 s < 10 s: go on. After attempt 9 (at 8 s) the
    // wait reaches 9 s; after attempt 10 (9 s) it reaches 10 s: stop.
    EXPECT_TRUE(early.OnOutcome(Outcome::Failure(true), TimePoint{} + seconds(i)).retry()) << i;
  }
  EXPECT_TRUE(early.OnOutcome(Outcome::Failure(true), TimePoint{} + seconds(8)).retry());
  EXPECT_EQ(early.OnOutcome(Outcome::Failure(true), TimePoint{} + seconds(9)).reason,
            StopReason::kDeadline);
}

TEST(StopTest, PredicateBitsStopWithStopCondition) {
  RetryPolicy p = Policy(StopExpr::Any({StopExpr::AfterAttempts(5), StopExpr::Predicate(3)}));
  RetrySession s = p.Begin(TimePoint{});
  Outcome other = Outcome::Failure(true);
  other.stop_predicates = 1u << 2;  // a slot the expression does not read
  EXPECT_TRUE(s.OnOutcome(other, TimePoint{}).retry());
  Outcome says_stop = Outcome::Failure(true);
  says_stop.stop_predicates = 1u << 3;
  Decision d = s.OnOutcome(says_stop, TimePoint{});
  EXPECT_EQ(d.reason, StopReason::kStopCondition);
  EXPECT_STREQ(StopReasonName(d.reason), "stop_condition");
}

TEST(StopTest, NeverNeedsADeadline) {
  RetryOptions options;
  options.stop = StopExpr::Never();
  Result<RetryPolicy> refused = RetryPolicy::Create(options);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message(),
            "stop: never may never stop (unlimited attempts); bound it with after_attempts or "
            "after_elapsed, or set a deadline");
  options.stop = StopExpr::Any({StopExpr::Never(), StopExpr::Predicate(0)});
  EXPECT_FALSE(RetryPolicy::Create(options).ok());
  options.stop = StopExpr::All({StopExpr::AfterAttempts(2), StopExpr::Never()});
  EXPECT_FALSE(RetryPolicy::Create(options).ok());

  // Unlimited attempts inside a 5 s deadline: waits of 1 s, attempts end at
  // 0, 1, 2, 3 s; after the one at 4 s the wait would reach the deadline.
  RetryPolicy p = Policy(StopExpr::Never(), seconds(5));
  RetrySession s = p.Begin(TimePoint{});
  for (int i = 0; i < 4; ++i) {
    EXPECT_TRUE(s.OnOutcome(Outcome::Failure(true), TimePoint{} + seconds(i)).retry());
  }
  EXPECT_EQ(s.OnOutcome(Outcome::Failure(true), TimePoint{} + seconds(4)).reason,
            StopReason::kDeadline);
  // Far more attempts than max_attempts (3) when nothing else stops them.
  RetryPolicy many = Policy(StopExpr::Never(), seconds(1000));
  RetrySession m = many.Begin(TimePoint{});
  for (int i = 0; i < 500; ++i) {
    ASSERT_TRUE(m.OnOutcome(Outcome::Failure(true), TimePoint{}).retry()) << i;
  }
}

TEST(StopTest, BadTermsAreNamed) {
  RetryOptions options;
  options.stop = StopExpr::Any({StopExpr::AfterAttempts(3), StopExpr::AfterAttempts(0)});
  EXPECT_EQ(RetryPolicy::Create(options).status().message(),
            "stop term 2: after_attempts must be >= 1, got 0");
  options.stop = StopExpr::AfterElapsed(Duration::zero());
  EXPECT_EQ(RetryPolicy::Create(options).status().message(),
            "stop: after_elapsed must be > 0, got 0.000 s");
  options.stop = StopExpr::Predicate(32);
  options.deadline = seconds(1);
  EXPECT_EQ(RetryPolicy::Create(options).status().message(),
            "stop: predicate slot must be in [0, 32), got 32");
  EXPECT_EQ(StopExpr::Any({StopExpr::AfterAttempts(5),
                           StopExpr::All({StopExpr::AfterElapsed(seconds(3)),
                                          StopExpr::Predicate(0)})})
                .ToString(),
            "after_attempts(5) | (after_elapsed(3.000 s) & predicate(0))");
}

}  // namespace
}  // namespace mulligan
