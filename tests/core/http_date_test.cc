// HTTP-dates as absolute instants (RFC 9110 section 5.6.7), independent of
// tests/vectors/retry_after.json (which checks delays relative to a `now`):
// each of the three forms must name the same UTC second whatever the process's
// time zone, and an rfc850-date's two-digit year follows the 50-year rule on
// the full date and time.
//
// The expected Unix times come from Python's calendar.timegm (an independent
// implementation of the proleptic Gregorian calendar), e.g.
//   calendar.timegm((2076, 11, 30, 0, 0, 1, 0, 0, 0)) == 3373920001.
#include "mulligan/retry/retry_after.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <string>

namespace mulligan {
namespace {

using std::chrono::seconds;

// The Unix second `text` names, or a sentinel when it does not parse.
constexpr int64_t kInvalid = INT64_MIN;
int64_t UnixSeconds(const char* text, WallTime now = WallTime(seconds(784111657))) {
  std::optional<WallTime> t = ParseHttpDate(text, now);
  if (!t) return kInvalid;
  return std::chrono::duration_cast<seconds>(t->time_since_epoch()).count();
}

// Sets TZ for the life of the object (glibc reads it in tzset), then restores it.
class ScopedTimeZone {
 public:
  explicit ScopedTimeZone(const char* tz) {
    const char* old = std::getenv("TZ");
    had_ = old != nullptr;
    if (had_) saved_ = old;
    setenv("TZ", tz, 1);
    tzset();
  }
  ~ScopedTimeZone() {
    if (had_) {
      setenv("TZ", saved_.c_str(), 1);
    } else {
      unsetenv("TZ");
    }
    tzset();
  }

 private:
  bool had_ = false;
  std::string saved_;
};

struct Instant {
  const char* imf;
  const char* rfc850;
  const char* asctime;
  int64_t unix_seconds;
};

// Dates on both sides of the epoch, leap days, the 2038 boundary of 32-bit
// time_t and a century that is not a leap year. rfc850 forms are given for
// the 19xx dates only: at the fixed now (1994) "00" is 1900 and "38" 1938.
const Instant kInstants[] = {
    {"Thu, 01 Jan 1970 00:00:00 GMT", "Thursday, 01-Jan-70 00:00:00 GMT", "Thu Jan  1 00:00:00 1970", 0},
    {"Wed, 31 Dec 1969 23:59:59 GMT", "Wednesday, 31-Dec-69 23:59:59 GMT", "Wed Dec 31 23:59:59 1969", -1},
    {"Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994", 784111777},
    {"Sat, 01 Jan 2000 00:00:00 GMT", nullptr, "Sat Jan  1 00:00:00 2000", 946684800},
    {"Tue, 29 Feb 2000 12:00:00 GMT", nullptr, "Tue Feb 29 12:00:00 2000", 951825600},
    {"Tue, 19 Jan 2038 03:14:08 GMT", nullptr, "Tue Jan 19 03:14:08 2038", 2147483648},
    {"Mon, 01 Mar 2100 00:00:00 GMT", nullptr, "Mon Mar  1 00:00:00 2100", 4107542400},
    {"Thu, 01 Mar 1900 00:00:00 GMT", nullptr, "Thu Mar  1 00:00:00 1900", -2203891200},
};

void ExpectInstants() {
  for (const Instant& i : kInstants) {
    EXPECT_EQ(UnixSeconds(i.imf), i.unix_seconds) << i.imf;
    EXPECT_EQ(UnixSeconds(i.asctime), i.unix_seconds) << i.asctime;
    if (i.rfc850 != nullptr) {
      EXPECT_EQ(UnixSeconds(i.rfc850), i.unix_seconds) << i.rfc850;
    }
  }
}

TEST(HttpDateInstantTest, EveryFormNamesTheSameUtcSecond) { ExpectInstants(); }

TEST(HttpDateInstantTest, TheProcessTimeZoneChangesNothing) {
  // Zones west and east of UTC, a half-hour and a 45-minute offset, and one
  // with summer time on the dates above.
  for (const char* tz : {"America/Los_Angeles", "Asia/Kolkata", "Pacific/Chatham",
                         "Australia/Lord_Howe", "EST5EDT", "UTC"}) {
    SCOPED_TRACE(tz);
    ScopedTimeZone zone(tz);
    ExpectInstants();
  }
}

TEST(HttpDateInstantTest, LeapDaysExistOnlyInLeapYears) {
  EXPECT_EQ(UnixSeconds("Thu, 29 Feb 2024 00:00:00 GMT"), 1709164800);
  EXPECT_EQ(UnixSeconds("Mon, 29 Feb 2100 00:00:00 GMT"), kInvalid);  // 2100 is not a leap year
  EXPECT_EQ(UnixSeconds("Thu, 29 Feb 1900 00:00:00 GMT"), kInvalid);
  EXPECT_EQ(UnixSeconds("Sun, 29 Feb 2023 00:00:00 GMT"), kInvalid);
  EXPECT_EQ(UnixSeconds("Sun, 31 Apr 2023 00:00:00 GMT"), kInvalid);
}

// --- rfc850-date: two-digit years ------------------------------------------------

// now = 2026-11-30T00:00:00Z; 50 years later is 2076-11-30T00:00:00Z.
const WallTime k2026(seconds(1795996800));

TEST(Rfc850YearTest, ExactlyFiftyYearsAheadStaysInTheFuture) {
  EXPECT_EQ(UnixSeconds("Monday, 30-Nov-76 00:00:00 GMT", k2026), 3373920000);
}

TEST(Rfc850YearTest, OneSecondLessThanFiftyYearsAheadStaysInTheFuture) {
  EXPECT_EQ(UnixSeconds("Sunday, 29-Nov-76 23:59:59 GMT", k2026), 3373919999);
}

TEST(Rfc850YearTest, OneSecondMoreThanFiftyYearsAheadIsACenturyEarlier) {
  EXPECT_EQ(UnixSeconds("Tuesday, 30-Nov-76 00:00:01 GMT", k2026), 218160001);  // 1976
}

TEST(Rfc850YearTest, LaterInTheFiftiethYearIsACenturyEarlier) {
  // 2076-12-31 is 50 years and a month ahead: 1976.
  EXPECT_EQ(UnixSeconds("Friday, 31-Dec-76 00:00:00 GMT", k2026), 220838400);
  EXPECT_EQ(UnixSeconds("Saturday, 01-Jan-77 00:00:00 GMT", k2026), 220924800);
}

TEST(Rfc850YearTest, TheTimeOfDayOfNowCounts) {
  // now = 2026-11-30T12:00:00Z.
  const WallTime noon = k2026 + std::chrono::hours(12);
  EXPECT_EQ(UnixSeconds("Monday, 30-Nov-76 12:00:00 GMT", noon), 3373963200);   // 2076
  EXPECT_EQ(UnixSeconds("Tuesday, 30-Nov-76 12:00:01 GMT", noon), 218203201);    // 1976
}

TEST(Rfc850YearTest, RecentAndPastYearsKeepTheirCentury) {
  EXPECT_EQ(UnixSeconds("Sunday, 15-Jun-25 12:00:00 GMT", k2026), 1749988800);  // 2025
  EXPECT_EQ(UnixSeconds("Thursday, 15-Jun-00 12:00:00 GMT", k2026), 961070400);  // 2000
  EXPECT_EQ(UnixSeconds("Tuesday, 15-Jun-99 12:00:00 GMT", k2026), 929448000);   // 1999
  EXPECT_EQ(UnixSeconds("Monday, 30-Nov-26 00:00:00 GMT", k2026), 1795996800);   // today
}

TEST(Rfc850YearTest, BeforeTheEpochTheRuleStillHolds) {
  // now = 1920-03-01T12:00:00Z (a negative Unix time, not on a whole day):
  // 50 years later is 1970-03-01T12:00:00Z.
  const WallTime before_epoch(seconds(-1572696000));
  EXPECT_EQ(UnixSeconds("Sunday, 01-Mar-70 12:00:00 GMT", before_epoch), 5140800);       // 1970
  EXPECT_EQ(UnixSeconds("Tuesday, 01-Mar-70 12:00:01 GMT", before_epoch), -3150532799);  // 1870
}

TEST(Rfc850YearTest, ANowBetweenSecondsBeforeTheEpochCountsFromTheSecondBelow) {
  // now = 1969-12-31T23:59:59.5Z: 50 years later is 2019-12-31T23:59:59.5Z,
  // so 2020-01-01T00:00:00Z is half a second too far (1920), and the second
  // before it is not (2019). Rounding now towards the epoch (to 1970-01-01)
  // made 2020 fit. Found by fuzzing (tests/fuzz/fuzz_http_date).
  const WallTime half_before_epoch(std::chrono::milliseconds(-500));
  EXPECT_EQ(UnixSeconds("Wednesday, 01-Jan-20 00:00:00 GMT", half_before_epoch), -1577923200);
  EXPECT_EQ(UnixSeconds("Tuesday, 31-Dec-19 23:59:59 GMT", half_before_epoch), 1577836799);
  // After the epoch the same half second changes nothing: now = 0.5 s.
  const WallTime half_after_epoch(std::chrono::milliseconds(500));
  EXPECT_EQ(UnixSeconds("Wednesday, 01-Jan-20 00:00:00 GMT", half_after_epoch), 1577836800);
}

}  // namespace
}  // namespace mulligan
