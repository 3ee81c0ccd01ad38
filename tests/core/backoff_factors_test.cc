// The backoff formulas' factors and the max_delay cap, at the unit level
// (DESIGN.md section 5 and backoff.h), independent of tests/vectors/backoff.json:
//   exponential base * multiplier^n, linear base * (n + 1), decorrelated
//   uniform(base, 3 * previous); jitter full uniform(0, d), equal
//   d/2 + uniform(0, d/2), proportional min(d, cap/(1+f)) * uniform(1-f, 1+f);
//   the cap applies to the un-jittered delay (so the jitter keeps its spread
//   at the cap) and again after the jitter.
//
// Exact values are worked out by hand. Jittered delays are checked against
// the formula's range and against the range actually being covered (2000
// seeded draws of a uniform variable come within 1% of both ends of their
// range; the seeds are fixed, so each check is deterministic).
#include "mulligan/retry/backoff.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace mulligan {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::seconds;

Backoff Make(BackoffKind kind, JitterKind jitter, Duration base, Duration cap,
             double multiplier = 2.0, double fraction = 0.2) {
  BackoffOptions options;
  options.kind = kind;
  options.jitter = jitter;
  options.base = base;
  options.max_delay = cap;
  options.multiplier = multiplier;
  options.jitter_fraction = fraction;
  Result<Backoff> backoff = Backoff::Create(options);
  EXPECT_TRUE(backoff.ok()) << backoff.status().ToString();
  return std::move(backoff).value();
}

// Delays in seconds of `count` draws for retry `n` with `previous`.
std::vector<double> Draws(const Backoff& backoff, uint64_t n, Duration previous, uint64_t seed,
                          int count = 2000) {
  Random random(seed);
  std::vector<double> out;
  for (int i = 0; i < count; ++i) {
    out.push_back(std::chrono::duration<double>(backoff.Delay(n, previous, random)).count());
  }
  return out;
}

struct Spread {
  double min, max, mean;
  int at_cap;
};

Spread Summarize(const std::vector<double>& draws, double cap) {
  Spread s{draws[0], draws[0], 0.0, 0};
  for (double d : draws) {
    s.min = std::min(s.min, d);
    s.max = std::max(s.max, d);
    s.mean += d / static_cast<double>(draws.size());
    if (d == cap) ++s.at_cap;
  }
  return s;
}

// --- Un-jittered factors -----------------------------------------------------

TEST(BackoffFactorsTest, ExponentialWithMultiplierThreeTriplesUntilTheCap) {
  Backoff b = Make(BackoffKind::kExponential, JitterKind::kNone, milliseconds(10), seconds(1), 3.0);
  Random r(1);
  // 10 * 3^n ms: 10, 30, 90, 270, 810, then 2430 capped at 1000.
  const int64_t expected_ms[] = {10, 30, 90, 270, 810, 1000, 1000};
  for (uint64_t n = 0; n < 7; ++n) {
    EXPECT_EQ(b.Delay(n, milliseconds(10), r), milliseconds(expected_ms[n])) << "n=" << n;
  }
}

TEST(BackoffFactorsTest, AMultiplierBelowOneShrinksTheDelay) {
  Backoff b = Make(BackoffKind::kExponential, JitterKind::kNone, milliseconds(800), seconds(10), 0.5);
  Random r(1);
  // 800 * 0.5^n ms.
  EXPECT_EQ(b.Delay(0, milliseconds(800), r), milliseconds(800));
  EXPECT_EQ(b.Delay(1, milliseconds(800), r), milliseconds(400));
  EXPECT_EQ(b.Delay(3, milliseconds(800), r), milliseconds(100));
}

TEST(BackoffFactorsTest, AMultiplierOfOneIsConstant) {
  Backoff b = Make(BackoffKind::kExponential, JitterKind::kNone, milliseconds(70), seconds(10), 1.0);
  Random r(1);
  for (uint64_t n : {0ULL, 1ULL, 5ULL, 1000ULL}) {
    EXPECT_EQ(b.Delay(n, milliseconds(70), r), milliseconds(70)) << "n=" << n;
  }
}

TEST(BackoffFactorsTest, LinearGrowsByTheBaseEachRetry) {
  Backoff b = Make(BackoffKind::kLinear, JitterKind::kNone, milliseconds(250), seconds(100));
  Random r(1);
  // 250 * (n + 1) ms; the multiplier (2) plays no part.
  const int64_t expected_ms[] = {250, 500, 750, 1000, 1250};
  for (uint64_t n = 0; n < 5; ++n) {
    EXPECT_EQ(b.Delay(n, milliseconds(250), r), milliseconds(expected_ms[n])) << "n=" << n;
  }
  EXPECT_EQ(b.Delay(399, milliseconds(250), r), seconds(100));  // 250 ms * 400 = the cap
  EXPECT_EQ(b.Delay(398, milliseconds(250), r), milliseconds(99750));
}

// --- The cap: at it, one step inside, one step outside -------------------------

TEST(BackoffCapBoundaryTest, ADelayEqualToTheCapIsTheCap) {
  // Retry 2 of exponential 1 s x 2 is exactly 4 s.
  Random r(1);
  EXPECT_EQ(Make(BackoffKind::kExponential, JitterKind::kNone, seconds(1), seconds(4))
                .Delay(2, seconds(1), r),
            seconds(4));
}

TEST(BackoffCapBoundaryTest, ACapOneNanosecondAboveTheDelayLeavesItAlone) {
  Random r(1);
  EXPECT_EQ(Make(BackoffKind::kExponential, JitterKind::kNone, seconds(1), seconds(4) + nanoseconds(1))
                .Delay(2, seconds(1), r),
            seconds(4));
}

TEST(BackoffCapBoundaryTest, ACapOneNanosecondBelowTheDelayCutsIt) {
  Random r(1);
  EXPECT_EQ(Make(BackoffKind::kExponential, JitterKind::kNone, seconds(1), seconds(4) - nanoseconds(1))
                .Delay(2, seconds(1), r),
            seconds(4) - nanoseconds(1));
}

TEST(BackoffCapBoundaryTest, ACapOfZeroMeansNoWaitForEveryStrategy) {
  for (BackoffKind kind : {BackoffKind::kConstant, BackoffKind::kLinear, BackoffKind::kExponential,
                           BackoffKind::kDecorrelated}) {
    for (JitterKind jitter :
         {JitterKind::kNone, JitterKind::kFull, JitterKind::kEqual, JitterKind::kProportional}) {
      Backoff b = Make(kind, jitter, seconds(1), Duration::zero());
      Random r(3);
      for (uint64_t n : {0ULL, 1ULL, 40ULL}) {
        EXPECT_EQ(b.Delay(n, seconds(1), r), Duration::zero())
            << BackoffKindName(kind) << "/" << JitterKindName(jitter) << " n=" << n;
      }
    }
  }
}

// --- Jitter factors below the cap ----------------------------------------------

TEST(JitterFactorsTest, FullJitterCoversZeroToTheDelay) {
  // Un-jittered retry 2: 4 s (cap 100 s, far away).
  Backoff b = Make(BackoffKind::kExponential, JitterKind::kFull, seconds(1), seconds(100));
  const Spread s = Summarize(Draws(b, 2, seconds(1), 11), 100.0);
  EXPECT_GE(s.min, 0.0);
  EXPECT_LT(s.max, 4.0);
  EXPECT_LT(s.min, 0.04);
  EXPECT_GT(s.max, 3.96);
  EXPECT_NEAR(s.mean, 2.0, 0.1);
}

TEST(JitterFactorsTest, EqualJitterCoversHalfTheDelayToTheDelay) {
  // Un-jittered retry 1: 2 s, so [1 s, 2 s).
  Backoff b = Make(BackoffKind::kExponential, JitterKind::kEqual, seconds(1), seconds(100));
  const Spread s = Summarize(Draws(b, 1, seconds(1), 12), 100.0);
  EXPECT_GE(s.min, 1.0);
  EXPECT_LT(s.max, 2.0);
  EXPECT_LT(s.min, 1.01);
  EXPECT_GT(s.max, 1.99);
  EXPECT_NEAR(s.mean, 1.5, 0.05);
}

TEST(JitterFactorsTest, ProportionalJitterScalesByOneMinusToOnePlusTheFraction) {
  // Un-jittered retry 0: 1 s; f = 0.2, so [0.8 s, 1.2 s] (cap 100 s: 1 s is
  // far below cap / 1.2).
  Backoff b = Make(BackoffKind::kExponential, JitterKind::kProportional, seconds(1), seconds(100),
                   2.0, 0.2);
  const Spread s = Summarize(Draws(b, 0, seconds(1), 13), 100.0);
  EXPECT_GE(s.min, 0.8);
  EXPECT_LE(s.max, 1.2);
  EXPECT_LT(s.min, 0.804);
  EXPECT_GT(s.max, 1.196);
  EXPECT_NEAR(s.mean, 1.0, 0.02);
}

TEST(JitterFactorsTest, DecorrelatedDrawsFromTheBaseToThreeTimesThePrevious) {
  // base 100 ms, cap 100 s (never reached here).
  Backoff b = Make(BackoffKind::kDecorrelated, JitterKind::kNone, milliseconds(100), seconds(100));
  // previous 1 s: [0.1 s, 3 s).
  Spread s = Summarize(Draws(b, 5, seconds(1), 14), 100.0);
  EXPECT_GE(s.min, 0.1);
  EXPECT_LT(s.max, 3.0);
  EXPECT_LT(s.min, 0.13);
  EXPECT_GT(s.max, 2.97);
  // previous 2 s: [0.1 s, 6 s).
  s = Summarize(Draws(b, 5, seconds(2), 15), 100.0);
  EXPECT_LT(s.max, 6.0);
  EXPECT_GT(s.max, 5.94);
  // A previous below the base counts as the base: [0.1 s, 0.3 s).
  s = Summarize(Draws(b, 0, Duration::zero(), 16), 100.0);
  EXPECT_GE(s.min, 0.1);
  EXPECT_LT(s.max, 0.3);
  EXPECT_GT(s.max, 0.298);
}

// --- Jitter at the cap: the cap is applied before the jitter ---------------------

// Retry 40 of exponential 1 s x 2 is 2^40 s un-jittered: far beyond a 10 s cap.
constexpr uint64_t kFarBeyondTheCap = 40;

TEST(JitterAtTheCapTest, FullJitterKeepsItsWholeSpreadAtTheCap) {
  // min(2^40 s, 10 s) = 10 s, then uniform(0, 10 s): spread over [0, 10 s),
  // mean 5 s. Capping only after the jitter would put almost every draw at
  // exactly 10 s.
  Backoff b = Make(BackoffKind::kExponential, JitterKind::kFull, seconds(1), seconds(10));
  const Spread s = Summarize(Draws(b, kFarBeyondTheCap, seconds(1), 21), 10.0);
  EXPECT_LT(s.min, 0.1);
  EXPECT_GT(s.max, 9.9);
  EXPECT_NEAR(s.mean, 5.0, 0.25);
  EXPECT_EQ(s.at_cap, 0);
}

TEST(JitterAtTheCapTest, EqualJitterSpreadsOverTheUpperHalfBelowTheCap) {
  // 10 s / 2 + uniform(0, 5 s): [5 s, 10 s), mean 7.5 s.
  Backoff b = Make(BackoffKind::kExponential, JitterKind::kEqual, seconds(1), seconds(10));
  const Spread s = Summarize(Draws(b, kFarBeyondTheCap, seconds(1), 22), 10.0);
  EXPECT_GE(s.min, 5.0);
  EXPECT_LT(s.min, 5.05);
  EXPECT_GT(s.max, 9.95);
  EXPECT_NEAR(s.mean, 7.5, 0.15);
  EXPECT_EQ(s.at_cap, 0);
}

TEST(JitterAtTheCapTest, ProportionalJitterCentresOnTheCapOverOnePlusTheFraction) {
  // min(2^40 s, 10 s / 1.25) = 8 s, times uniform(0.75, 1.25): [6 s, 10 s],
  // mean 8 s.
  Backoff b = Make(BackoffKind::kExponential, JitterKind::kProportional, seconds(1), seconds(10),
                   2.0, 0.25);
  const Spread s = Summarize(Draws(b, kFarBeyondTheCap, seconds(1), 23), 10.0);
  EXPECT_GE(s.min, 6.0);
  EXPECT_LT(s.min, 6.04);
  EXPECT_LE(s.max, 10.0);
  EXPECT_GT(s.max, 9.96);
  EXPECT_NEAR(s.mean, 8.0, 0.1);
  EXPECT_LT(s.at_cap, 2000 / 100);
}

TEST(JitterAtTheCapTest, DecorrelatedIsCutAtTheCapAfterItsDraw) {
  // previous 10 s, base 1 s, cap 5 s: uniform(1 s, 30 s) is above 5 s about
  // 25/29 of the time, and those draws are cut to exactly the cap.
  Backoff b = Make(BackoffKind::kDecorrelated, JitterKind::kNone, seconds(1), seconds(5));
  const Spread s = Summarize(Draws(b, 3, seconds(10), 24), 5.0);
  EXPECT_GE(s.min, 1.0);
  EXPECT_LE(s.max, 5.0);
  EXPECT_NEAR(static_cast<double>(s.at_cap) / 2000.0, 25.0 / 29.0, 0.03);
}

}  // namespace
}  // namespace mulligan
