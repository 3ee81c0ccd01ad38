// Retry-After parsing (RFC 9110 section 10.2.3); the full table is in
// tests/vectors/retry_after.json (vectors_test.cc).
#include "mulligan/retry/retry_after.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>

#include "mulligan/retry/policy.h"

namespace mulligan {
namespace {

using std::chrono::seconds;

// 1994-11-06T08:47:37Z: 120 s before RFC 9110's example date.
const WallTime kNow = WallTime(seconds(784111657));

TEST(RetryAfterTest, DelaySeconds) {
  EXPECT_EQ(ParseRetryAfter("120", kNow), seconds(120));
  EXPECT_EQ(ParseRetryAfter("0", kNow), Duration::zero());
}

TEST(RetryAfterTest, AllThreeDateFormsGiveTheSameDelay) {
  EXPECT_EQ(ParseRetryAfter("Sun, 06 Nov 1994 08:49:37 GMT", kNow), seconds(120));
  EXPECT_EQ(ParseRetryAfter("Sunday, 06-Nov-94 08:49:37 GMT", kNow), seconds(120));
  EXPECT_EQ(ParseRetryAfter("Sun Nov  6 08:49:37 1994", kNow), seconds(120));
}

TEST(RetryAfterTest, TheTimeZoneEnvironmentDoesNotMatter) {
  const char* old = std::getenv("TZ");
  std::string saved = old ? old : "";
  for (const char* tz : {"America/New_York", "Asia/Kolkata", "UTC", "Pacific/Chatham"}) {
    setenv("TZ", tz, 1);
    tzset();
    EXPECT_EQ(ParseRetryAfter("Sun, 06 Nov 1994 08:49:37 GMT", kNow), seconds(120)) << tz;
  }
  if (old) {
    setenv("TZ", saved.c_str(), 1);
  } else {
    unsetenv("TZ");
  }
  tzset();
}

TEST(RetryAfterTest, InvalidValuesAreAbsent) {
  for (const char* value : {"-5", "1m0s", "0.5", "abc", "", " ", "5 s", "0x10"}) {
    EXPECT_EQ(ParseRetryAfter(value, kNow), std::nullopt) << '"' << value << '"';
  }
}

TEST(RetryAfterTest, PastDatesMeanRetryNow) {
  EXPECT_EQ(ParseRetryAfter("Sat, 01 Jan 2000 00:00:00 GMT", WallTime(seconds(1800000000))),
            Duration::zero());
}

TEST(RetryAfterTest, HugeValuesSaturateAndStopTheRetriesAsTooLong) {
  std::optional<Duration> hint = ParseRetryAfter("99999999999999999999", kNow);
  ASSERT_TRUE(hint.has_value());
  EXPECT_EQ(*hint, Duration::max());
  EXPECT_EQ(ParseRetryAfter("9223372037", kNow), Duration::max());  // just past the limit
  EXPECT_EQ(ParseRetryAfter("9223372036", kNow), seconds(9223372036));

  // A date in year 9999 saturates the wall clock instead of overflowing.
  std::optional<Duration> far = ParseRetryAfter("Fri, 31 Dec 9999 23:59:59 GMT", kNow);
  ASSERT_TRUE(far.has_value());
  EXPECT_GT(*far, seconds(60));

  RetryPolicy policy = RetryPolicy::Default();
  RetrySession session = policy.Begin(TimePoint{});
  Decision decision = session.OnOutcome(Outcome::Http(503, hint), TimePoint{});
  EXPECT_EQ(decision.action, Decision::Action::kStop);
  EXPECT_EQ(decision.reason, StopReason::kRetryAfterTooLong);
}

TEST(HttpDateTest, Rfc850YearsMoreThanFiftyYearsAheadAreInThePast) {
  // now = 2026-11-30: "76" is 2076 (exactly 50 years ahead), "77" is 1977.
  const WallTime now(seconds(1795996800));
  std::optional<WallTime> y2076 = ParseHttpDate("Sunday, 01-Nov-76 00:00:00 GMT", now);
  std::optional<WallTime> y1977 = ParseHttpDate("Monday, 01-Nov-77 00:00:00 GMT", now);
  ASSERT_TRUE(y2076 && y1977);
  EXPECT_EQ(std::chrono::duration_cast<seconds>(y2076->time_since_epoch()).count(), 3371414400);
  EXPECT_EQ(std::chrono::duration_cast<seconds>(y1977->time_since_epoch()).count(), 247190400);
}

// Found by tests/fuzz/fuzz_http_date: the century of `now` was the only one
// tried, so from 2050 on a year a few decades ahead was read as a century
// ago (in 2090, "00" gave 2000 instead of 2100).
TEST(HttpDateTest, Rfc850YearsUpToFiftyYearsAheadMayBeInTheNextCentury) {
  const WallTime now(seconds(3801168000));  // 2090-06-15T00:00:00Z
  auto year_start = [&](const char* text) -> int64_t {
    std::optional<WallTime> t = ParseHttpDate(text, now);
    EXPECT_TRUE(t.has_value()) << text;
    return t ? std::chrono::duration_cast<seconds>(t->time_since_epoch()).count() : 0;
  };
  EXPECT_EQ(year_start("Friday, 01-Jan-00 00:00:00 GMT"), 4102444800);   // 2100, 10 years ahead
  EXPECT_EQ(year_start("Friday, 01-Jan-40 00:00:00 GMT"), 5364662400);   // 2140, 50 ahead
  EXPECT_EQ(year_start("Tuesday, 01-Jan-41 00:00:00 GMT"), 2240611200);  // 2041, 49 ago
}

// Found by tests/fuzz/fuzz_http_date: the day of a `now` before 1970 was
// rounded towards 1970, so on the last half day of 1899 the year was 1900.
TEST(HttpDateTest, Rfc850YearsCountFromTheRightYearBefore1970) {
  const WallTime now(seconds(-2209032000));  // 1899-12-31T12:00:00Z
  std::optional<WallTime> t = ParseHttpDate("Tuesday, 01-Jan-50 00:00:00 GMT", now);
  ASSERT_TRUE(t.has_value());
  // 1850 (49 years ago), not 1950 (more than 50 years ahead of 1899).
  EXPECT_EQ(std::chrono::duration_cast<seconds>(t->time_since_epoch()).count(), -3786825600);
}

// Found by tests/fuzz/fuzz_retry_after: date - now overflowed int64 (undefined
// behaviour; the delay wrapped negative) for a `now` before 1970 and a date
// near the end of the clock's range.
TEST(RetryAfterTest, TheDelayToAFarDateSaturatesForAnyNow) {
  EXPECT_EQ(ParseRetryAfter("Fri, 31 Dec 9999 23:59:59 GMT", WallTime::min()), Duration::max());
  EXPECT_EQ(ParseRetryAfter("Fri, 31 Dec 9999 23:59:59 GMT", WallTime(seconds(-1))),
            Duration::max());
  // Still exact where it fits: the clock's last whole second but one
  // (9223372035 s after the epoch), seen from one second before 1970.
  EXPECT_EQ(ParseRetryAfter("Fri, 11 Apr 2262 23:47:15 GMT", WallTime(seconds(-1))),
            seconds(9223372036));
  EXPECT_EQ(ParseRetryAfter("Sat, 01 Jan 0000 00:00:00 GMT", WallTime::max()), Duration::zero());
}

}  // namespace
}  // namespace mulligan
