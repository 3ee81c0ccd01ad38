// Backoff strategies, jitter and the cap (DESIGN.md section 4).
#include "mulligan/retry/backoff.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <set>

namespace mulligan {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

Backoff Make(const BackoffOptions& options) {
  Result<Backoff> backoff = Backoff::Create(options);
  EXPECT_TRUE(backoff.ok()) << backoff.status().ToString();
  return std::move(backoff).value();
}

BackoffOptions Exponential1sCap5s(JitterKind jitter) {
  BackoffOptions options;
  options.kind = BackoffKind::kExponential;
  options.base = seconds(1);
  options.multiplier = 2.0;
  options.max_delay = seconds(5);
  options.jitter = jitter;
  return options;
}

constexpr uint64_t kHugeRetries[] = {
    64, 1023, 1024, 1025, (1ULL << 31) - 1, 1ULL << 31, std::numeric_limits<uint64_t>::max()};

TEST(BackoffTest, ExponentialSaturatesExactlyAtTheCapWithoutJitter) {
  Backoff backoff = Make(Exponential1sCap5s(JitterKind::kNone));
  Random random(1);
  EXPECT_EQ(backoff.Delay(0, seconds(1), random), seconds(1));
  EXPECT_EQ(backoff.Delay(1, seconds(1), random), seconds(2));
  EXPECT_EQ(backoff.Delay(2, seconds(1), random), seconds(4));
  EXPECT_EQ(backoff.Delay(3, seconds(1), random), seconds(5));
  for (uint64_t n : kHugeRetries) {
    EXPECT_EQ(backoff.Delay(n, seconds(1), random), seconds(5)) << "n=" << n;
  }
}

TEST(BackoffTest, EveryJitterModeStaysWithinZeroAndTheCapForHugeRetryCounts) {
  for (JitterKind jitter : {JitterKind::kFull, JitterKind::kEqual, JitterKind::kProportional}) {
    Backoff backoff = Make(Exponential1sCap5s(jitter));
    Random random(7);
    for (uint64_t n : kHugeRetries) {
      for (int sample = 0; sample < 2000; ++sample) {
        Duration d = backoff.Delay(n, seconds(1), random);
        ASSERT_GE(d, Duration::zero()) << JitterKindName(jitter) << " n=" << n;
        ASSERT_LE(d, seconds(5)) << JitterKindName(jitter) << " n=" << n;
      }
    }
  }
}

TEST(BackoffTest, DefaultsWithoutJitterDoubleFrom200Milliseconds) {
  BackoffOptions options;
  options.jitter = JitterKind::kNone;
  Backoff backoff = Make(options);
  Random random(1);
  const int64_t expected_ms[] = {200, 400, 800, 1600, 3200, 6400, 10000, 10000};
  for (int n = 0; n < 8; ++n) {
    EXPECT_EQ(backoff.Delay(n, options.base, random), milliseconds(expected_ms[n])) << n;
  }
}

TEST(BackoffTest, ConstantAndLinear) {
  BackoffOptions options;
  options.jitter = JitterKind::kNone;
  options.base = milliseconds(300);
  options.max_delay = seconds(1);
  options.kind = BackoffKind::kConstant;
  Backoff constant = Make(options);
  options.kind = BackoffKind::kLinear;
  Backoff linear = Make(options);
  Random random(1);
  EXPECT_EQ(constant.Delay(0, options.base, random), milliseconds(300));
  EXPECT_EQ(constant.Delay(1ULL << 40, options.base, random), milliseconds(300));
  EXPECT_EQ(linear.Delay(0, options.base, random), milliseconds(300));
  EXPECT_EQ(linear.Delay(1, options.base, random), milliseconds(600));
  EXPECT_EQ(linear.Delay(2, options.base, random), milliseconds(900));
  EXPECT_EQ(linear.Delay(3, options.base, random), seconds(1));
  EXPECT_EQ(linear.Delay(std::numeric_limits<uint64_t>::max(), options.base, random), seconds(1));
}

TEST(BackoffTest, MultiplierZeroOrBaseZeroMeanNoWait) {
  BackoffOptions options;
  options.jitter = JitterKind::kNone;
  options.multiplier = 0.0;
  Backoff no_multiplier = Make(options);
  options.multiplier = 2.0;
  options.base = Duration::zero();
  Backoff no_base = Make(options);
  Random random(1);
  for (uint64_t n : {0ULL, 1ULL, 1000ULL}) {
    EXPECT_EQ(no_multiplier.Delay(n, milliseconds(200), random), Duration::zero());
    EXPECT_EQ(no_base.Delay(n, Duration::zero(), random), Duration::zero());
  }
}

TEST(BackoffTest, DecorrelatedStaysFiniteAndWithinBaseAndCap) {
  BackoffOptions options;
  options.kind = BackoffKind::kDecorrelated;
  options.base = milliseconds(100);
  options.max_delay = seconds(5);
  Backoff backoff = Make(options);
  Random random(12345);
  Duration previous = options.base;
  bool reached_cap = false;
  for (uint64_t n = 0; n < 100000; ++n) {
    Duration d = backoff.Delay(n + (n % 2 ? (1ULL << 40) : 0), previous, random);
    ASSERT_GE(d, milliseconds(100));
    ASSERT_LE(d, seconds(5));
    reached_cap = reached_cap || d == seconds(5);
    previous = d;
  }
  EXPECT_TRUE(reached_cap);
  // A previous delay far beyond the cap (3 * previous overflows) still caps.
  EXPECT_LE(backoff.Delay(0, Duration::max(), random), seconds(5));
}

TEST(BackoffTest, ACapOf1200MillisecondsIsNeverExceeded) {
  for (BackoffKind kind : {BackoffKind::kConstant, BackoffKind::kLinear, BackoffKind::kExponential,
                           BackoffKind::kDecorrelated}) {
    for (JitterKind jitter :
         {JitterKind::kNone, JitterKind::kFull, JitterKind::kEqual, JitterKind::kProportional}) {
      BackoffOptions options;
      options.kind = kind;
      options.jitter = jitter;
      options.base = milliseconds(700);
      options.max_delay = milliseconds(1200);
      options.jitter_fraction = 1.0;
      Backoff backoff = Make(options);
      Random random(static_cast<uint64_t>(kind) * 10 + static_cast<uint64_t>(jitter));
      Duration previous = options.base;
      for (uint64_t n = 0; n < 5000; ++n) {
        Duration d = backoff.Delay(n, previous, random);
        ASSERT_GE(d, Duration::zero());
        ASSERT_LE(d, milliseconds(1200)) << BackoffKindName(kind) << "/" << JitterKindName(jitter);
        previous = d;
      }
    }
  }
}

TEST(BackoffTest, ProportionalJitterKeepsItsSpreadAtTheCap) {
  BackoffOptions options = Exponential1sCap5s(JitterKind::kProportional);
  options.jitter_fraction = 0.25;
  Backoff backoff = Make(options);
  Random random(99);
  std::set<Duration::rep> distinct;
  // At the cap the scaled delay is cap / 1.25 = 4 s times uniform(0.75, 1.25).
  for (int i = 0; i < 1000; ++i) {
    Duration d = backoff.Delay(1ULL << 31, seconds(1), random);
    ASSERT_GE(d, milliseconds(3000));
    ASSERT_LE(d, seconds(5));
    distinct.insert(d.count());
  }
  EXPECT_GT(distinct.size(), 900u);  // callers at the cap do not all wait max_delay
}

TEST(BackoffTest, FullAndEqualJitterBounds) {
  BackoffOptions options = Exponential1sCap5s(JitterKind::kEqual);
  Backoff equal = Make(options);
  Random random(3);
  for (int i = 0; i < 2000; ++i) {
    Duration d = equal.Delay(1, seconds(1), random);  // un-jittered 2 s
    ASSERT_GE(d, seconds(1));
    ASSERT_LT(d, seconds(2));
  }
}

TEST(BackoffTest, InvalidOptionsAreRejectedWithTheFieldName) {
  struct Case {
    const char* field;
    BackoffOptions options;
  };
  std::vector<Case> cases;
  BackoffOptions o;
  o.base = milliseconds(-1);
  cases.push_back({"base_delay", o});
  o = {};
  o.max_delay = milliseconds(-5);
  cases.push_back({"max_delay", o});
  o = {};
  o.multiplier = std::numeric_limits<double>::quiet_NaN();
  cases.push_back({"multiplier", o});
  o = {};
  o.multiplier = std::numeric_limits<double>::infinity();
  cases.push_back({"multiplier", o});
  o = {};
  o.multiplier = -2.0;
  cases.push_back({"multiplier", o});
  o = {};
  // 100 ms plus or minus 200 ms would be a negative wait: rejected.
  o.jitter = JitterKind::kProportional;
  o.base = milliseconds(100);
  o.jitter_fraction = 2.0;
  cases.push_back({"jitter_fraction", o});
  o = {};
  o.jitter_fraction = std::numeric_limits<double>::quiet_NaN();
  cases.push_back({"jitter_fraction", o});
  o = {};
  o.kind = static_cast<BackoffKind>(17);
  cases.push_back({"backoff kind", o});
  o = {};
  o.jitter = static_cast<JitterKind>(-1);
  cases.push_back({"jitter kind", o});
  for (const Case& c : cases) {
    Result<Backoff> backoff = Backoff::Create(c.options);
    ASSERT_FALSE(backoff.ok()) << c.field;
    EXPECT_EQ(backoff.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(backoff.status().message().find(c.field), std::string::npos)
        << backoff.status().message();
  }
}

TEST(BackoffTest, NamesRoundTrip) {
  EXPECT_EQ(*ParseBackoffKind("decorrelated"), BackoffKind::kDecorrelated);
  EXPECT_EQ(*ParseJitterKind("proportional"), JitterKind::kProportional);
  EXPECT_FALSE(ParseBackoffKind("Exponential").ok());
  EXPECT_FALSE(ParseJitterKind("").ok());
}

TEST(RandomTest, KnownAnswersOfXoshiro256StarStarSeededBySplitMix64) {
  // Independently computed by tests/vectors/generate_backoff.py's model.
  Random random(0);
  EXPECT_EQ(random.NextU64(), 0x99ec5f36cb75f2b4ULL);
  EXPECT_EQ(random.NextU64(), 0xbf6e1f784956452aULL);
  Random a(42), b(42);
  for (int i = 0; i < 100; ++i) ASSERT_EQ(a.NextU64(), b.NextU64());
  Random c(5);
  for (int i = 0; i < 10000; ++i) {
    double x = c.NextDouble();
    ASSERT_GE(x, 0.0);
    ASSERT_LT(x, 1.0);
  }
}

}  // namespace
}  // namespace mulligan
