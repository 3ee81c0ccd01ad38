// The backoff options' documented ranges and the zero / overflow rules
// (DESIGN.md section 5, backoff.h):
//   - base 0 means no wait at every n with every strategy and jitter, and
//     multiplier 0 no wait at every n with exponential backoff: in
//     particular past n = 1024, where 2^n overflows a double (the wait used
//     to jump to max_delay there: 0 * inf is NaN, which the cap mapped to
//     max_delay);
//   - a product that overflows saturates at the cap, up to max_delay =
//     Duration::max();
//   - each option's documented range is exactly the accepted one: the edge
//     and the value just inside it are accepted, the value just outside it
//     is refused at construction with a message naming the field and the
//     value exactly.
// Expected values are worked out by hand.
#include "mulligan/retry/backoff.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

namespace mulligan {
namespace {

using std::chrono::nanoseconds;
using std::chrono::seconds;

constexpr BackoffKind kKinds[] = {BackoffKind::kConstant, BackoffKind::kLinear,
                                  BackoffKind::kExponential, BackoffKind::kDecorrelated};
constexpr JitterKind kJitters[] = {JitterKind::kNone, JitterKind::kFull, JitterKind::kEqual,
                                   JitterKind::kProportional};
// Around the doubles' overflow of 2^n (n = 1024) and 10^n (n = 309), and huge n.
constexpr uint64_t kRetries[] = {0,    1,    2,    308,        309,        310,
                                 1023, 1024, 1025, 1ULL << 31, 1ULL << 63, UINT64_MAX};

std::string Refusal(const BackoffOptions& options) {
  Result<Backoff> backoff = Backoff::Create(options);
  if (backoff.ok()) return "accepted";
  EXPECT_EQ(backoff.status().code(), StatusCode::kInvalidArgument);
  return std::string(backoff.status().message());
}

// --- zero base, zero multiplier ----------------------------------------------

TEST(BackoffZeroTest, ABaseOfZeroIsNoWaitAtEveryRetryForEveryStrategyAndJitter) {
  for (BackoffKind kind : kKinds) {
    for (JitterKind jitter : kJitters) {
      for (double multiplier : {0.0, 0.5, 1.0, 2.0, 10.0, DBL_MAX}) {
        BackoffOptions options;
        options.kind = kind;
        options.jitter = jitter;
        options.base = Duration::zero();
        options.multiplier = multiplier;
        options.max_delay = seconds(10);
        options.jitter_fraction = 1.0;
        Result<Backoff> backoff = Backoff::Create(options);
        ASSERT_TRUE(backoff.ok());
        Random random(7);
        for (uint64_t n : kRetries) {
          // Even a caller that passes a non-zero previous delay gets no wait.
          for (Duration previous : {Duration::zero(), Duration(seconds(3))}) {
            EXPECT_EQ(backoff->Delay(n, previous, random), Duration::zero())
                << BackoffKindName(kind) << " " << JitterKindName(jitter) << " x" << multiplier
                << " n=" << n;
          }
        }
      }
    }
  }
}

TEST(BackoffZeroTest, AMultiplierOfZeroIsNoWaitAtEveryRetryOfExponentialBackoff) {
  for (JitterKind jitter : kJitters) {
    for (Duration base : {Duration(nanoseconds(1)), Duration(seconds(1)), Duration::max()}) {
      BackoffOptions options;
      options.jitter = jitter;
      options.base = base;
      options.multiplier = 0.0;
      options.max_delay = Duration::max();
      Result<Backoff> backoff = Backoff::Create(options);
      ASSERT_TRUE(backoff.ok());
      Random random(3);
      for (uint64_t n : kRetries) {
        EXPECT_EQ(backoff->Delay(n, base, random), Duration::zero())
            << JitterKindName(jitter) << " n=" << n;
      }
    }
  }
}

TEST(BackoffZeroTest, NegativeZeroIsZero) {
  // -0.0 is not below 0: accepted, and it is no wait like +0.0.
  BackoffOptions options;
  options.jitter = JitterKind::kNone;
  options.multiplier = -0.0;
  Result<Backoff> backoff = Backoff::Create(options);
  ASSERT_TRUE(backoff.ok());
  Random random(1);
  EXPECT_EQ(backoff->Delay(1024, options.base, random), Duration::zero());
}

// --- saturation at the cap -----------------------------------------------------

TEST(BackoffSaturationTest, AnOverflowingProductIsTheCapUpToTheLargestDuration) {
  BackoffOptions options;
  options.jitter = JitterKind::kNone;
  options.base = seconds(1);
  options.multiplier = 2.0;
  options.max_delay = Duration::max();  // 9223372036854775807 ns, about 292 years
  Result<Backoff> backoff = Backoff::Create(options);
  ASSERT_TRUE(backoff.ok());
  Random random(1);
  // 2^33 s = 8589934592000000000 ns is still below the cap; 2^34 s is not.
  EXPECT_EQ(backoff->Delay(33, seconds(1), random), nanoseconds(8589934592000000000LL));
  for (uint64_t n : {uint64_t{34}, uint64_t{62}, uint64_t{63}, uint64_t{1024}, uint64_t{1} << 31,
                     UINT64_MAX}) {
    EXPECT_EQ(backoff->Delay(n, seconds(1), random), Duration::max()) << "n=" << n;
  }
}

TEST(BackoffSaturationTest, TheLargestMultiplierAndBaseSaturateAtTheCapForEveryJitter) {
  for (JitterKind jitter : kJitters) {
    BackoffOptions options;
    options.jitter = jitter;
    options.base = Duration::max();
    options.multiplier = DBL_MAX;
    options.max_delay = seconds(5);
    options.jitter_fraction = 0.0;  // proportional without spread: exactly cap/(1+0)
    Result<Backoff> backoff = Backoff::Create(options);
    ASSERT_TRUE(backoff.ok());
    Random random(9);
    for (uint64_t n : kRetries) {
      const Duration d = backoff->Delay(n, options.base, random);
      EXPECT_GE(d, Duration::zero());
      EXPECT_LE(d, seconds(5));
      if (jitter == JitterKind::kNone || jitter == JitterKind::kProportional) {
        EXPECT_EQ(d, seconds(5)) << JitterKindName(jitter) << " n=" << n;
      }
    }
  }
}

// --- ranges: the edge accepted, just outside refused ----------------------------

TEST(BackoffRangeTest, BaseDelayIsAnyDurationFromZero) {
  BackoffOptions o;
  o.base = Duration::zero();
  EXPECT_EQ(Refusal(o), "accepted");
  o.base = Duration::max();
  EXPECT_EQ(Refusal(o), "accepted");
  o.base = nanoseconds(-1);
  EXPECT_EQ(Refusal(o), "base_delay must be >= 0, got -1e-09 s");
}

TEST(BackoffRangeTest, MaxDelayIsAnyDurationFromZero) {
  BackoffOptions o;
  o.max_delay = Duration::zero();
  EXPECT_EQ(Refusal(o), "accepted");
  o.max_delay = Duration::max();
  EXPECT_EQ(Refusal(o), "accepted");
  o.max_delay = nanoseconds(-1);
  EXPECT_EQ(Refusal(o), "max_delay must be >= 0, got -1e-09 s");
}

TEST(BackoffRangeTest, MultiplierIsAnyFiniteNumberFromZero) {
  BackoffOptions o;
  o.multiplier = 0.0;
  EXPECT_EQ(Refusal(o), "accepted");
  o.multiplier = DBL_MAX;
  EXPECT_EQ(Refusal(o), "accepted");
  o.multiplier = -std::numeric_limits<double>::denorm_min();
  EXPECT_EQ(Refusal(o), "multiplier must be a finite number >= 0, got -5e-324");
  o.multiplier = std::numeric_limits<double>::infinity();
  EXPECT_EQ(Refusal(o), "multiplier must be a finite number >= 0, got inf");
}

TEST(BackoffRangeTest, JitterFractionIsZeroToOneInclusive) {
  BackoffOptions o;
  o.jitter = JitterKind::kProportional;
  o.jitter_fraction = 0.0;
  EXPECT_EQ(Refusal(o), "accepted");
  o.jitter_fraction = 1.0;
  EXPECT_EQ(Refusal(o), "accepted");
  o.jitter_fraction = std::nextafter(1.0, 2.0);
  EXPECT_EQ(Refusal(o), "jitter_fraction must be in [0, 1], got 1.0000000000000002");
  o.jitter_fraction = -std::numeric_limits<double>::denorm_min();
  EXPECT_EQ(Refusal(o), "jitter_fraction must be in [0, 1], got -5e-324");
}

TEST(BackoffRangeTest, AFractionOfOneNeverWaitsLessThanZeroOrMoreThanTheCap) {
  // f = 1, the edge: uniform(0, 2) * min(d, cap / 2) spans [0, cap].
  BackoffOptions o;
  o.jitter = JitterKind::kProportional;
  o.jitter_fraction = 1.0;
  o.base = seconds(1);
  o.max_delay = seconds(1);
  Result<Backoff> backoff = Backoff::Create(o);
  ASSERT_TRUE(backoff.ok());
  Random random(5);
  for (int i = 0; i < 1000; ++i) {
    const Duration d = backoff->Delay(static_cast<uint64_t>(i), o.base, random);
    EXPECT_GE(d, Duration::zero());
    EXPECT_LE(d, seconds(1));
  }
}

}  // namespace
}  // namespace mulligan
