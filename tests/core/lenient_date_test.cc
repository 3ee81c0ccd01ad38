// ParseLenientHttpDate (mulligan/retry/retry_after.h): the lenient HTTP-date
// forms that ParseRetryAfter accepts beside RFC 9110's three, one test per
// form, plus what stays refused. The table of Retry-After values shared by
// every front door is tests/vectors/retry_after.json; this file checks the
// date parser itself, at the edges the vectors do not reach (offsets at the
// clock's limits, the 50-year rule in the fixdate form, strictness kept by
// ParseHttpDate).
//
// Expected instants are worked out by hand: 784111777 is RFC 9110's example
// "Sun, 06 Nov 1994 08:49:37 GMT" (checked with Python's calendar.timegm).
#include "mulligan/retry/retry_after.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>

namespace mulligan {
namespace {

using std::chrono::seconds;

const WallTime kNow = WallTime(seconds(784111657));  // 120 s before the example
const WallTime kExample = WallTime(seconds(784111777));

std::optional<WallTime> Lenient(const std::string& text) { return ParseLenientHttpDate(text, kNow); }

TEST(LenientDateTest, TheThreeExactFormsReadAsParseHttpDateReadsThem) {
  for (const char* text : {"Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT",
                           "Sun Nov  6 08:49:37 1994", "Sun, 06 Nov 1994 08:49:60 GMT"}) {
    EXPECT_EQ(Lenient(text), ParseHttpDate(text, kNow)) << text;
    EXPECT_TRUE(Lenient(text).has_value()) << text;
  }
}

TEST(LenientDateTest, Form1UtcUtAndZAreGmt) {
  for (const char* zone : {"UTC", "UT", "Z", "GMT"}) {
    EXPECT_EQ(Lenient(std::string("Sun, 06 Nov 1994 08:49:37 ") + zone), kExample) << zone;
    EXPECT_EQ(Lenient(std::string("Sunday, 06-Nov-94 08:49:37 ") + zone), kExample) << zone;
  }
}

TEST(LenientDateTest, Form1NumericOffsetsAreSubtracted) {
  EXPECT_EQ(Lenient("Sun, 06 Nov 1994 09:49:37 +0100"), kExample);
  EXPECT_EQ(Lenient("Sun, 06 Nov 1994 03:19:37 -0530"), kExample);
  EXPECT_EQ(Lenient("Sun, 06 Nov 1994 08:49:37 +0000"), kExample);
  EXPECT_EQ(Lenient("Sun, 06 Nov 1994 08:49:37 -0000"), kExample);  // RFC 5322: UTC
  // The largest offsets cross a day: 07 Nov 08:19:37 - 23:30 and
  // 05 Nov 09:20:37 + 23:29 are both 06 Nov 08:49:37.
  EXPECT_EQ(Lenient("Mon, 07 Nov 1994 08:19:37 +2330"), kExample);
  EXPECT_EQ(Lenient("Sat, 05 Nov 1994 09:20:37 -2329"), kExample);
  EXPECT_EQ(Lenient("Sun, 06 Nov 1994 08:49:37 +2359"), WallTime(seconds(784111777 - 86340)));
}

TEST(LenientDateTest, Form1OffsetsOutOfRangeAndZoneNamesAreRefused) {
  for (const char* zone : {"+2400", "+0060", "-9999", "+100", "+01000", "0100", "+01:00",
                           "EST", "PDT", "CET", "A", "GMT+0100", "UTC+1", ""}) {
    EXPECT_EQ(Lenient(std::string("Sun, 06 Nov 1994 08:49:37 ") + zone), std::nullopt) << zone;
  }
}

TEST(LenientDateTest, Form1AnOffsetNeverOverflowsTheClock) {
  // 2262-04-11T23:47:16Z is the last second of a 64-bit nanosecond clock; an
  // offset west of UTC pushes a date just before it past the end: saturated.
  EXPECT_EQ(Lenient("Fri, 11 Apr 2262 23:00:00 -2359"), WallTime::max());
  EXPECT_EQ(Lenient("Fri, 11 Apr 2262 23:47:15 GMT"),
            WallTime(seconds(9223372035)));
  // And east of UTC at the other end (1677-09-21T00:12:44Z is the first).
  EXPECT_EQ(Lenient("Tue, 21 Sep 1677 00:30:00 +2359"), WallTime::min());
}

TEST(LenientDateTest, Form2NamesAndZonesInAnyCase) {
  EXPECT_EQ(Lenient("sun, 06 nov 1994 08:49:37 gmt"), kExample);
  EXPECT_EQ(Lenient("SUN, 06 NOV 1994 08:49:37 GMT"), kExample);
  EXPECT_EQ(Lenient("SUNDAY, 06-NOV-94 08:49:37 GMT"), kExample);
  EXPECT_EQ(Lenient("sUn NoV  6 08:49:37 1994"), kExample);
  EXPECT_EQ(Lenient("Sun, 06 Nov 1994 08:49:37 utc"), kExample);
  EXPECT_EQ(Lenient("Sun, 06 Nov 1994 08:49:37 z"), kExample);
}

TEST(LenientDateTest, Form3AOneDigitDay) {
  EXPECT_EQ(Lenient("Sun, 6 Nov 1994 08:49:37 GMT"), kExample);
  EXPECT_EQ(Lenient("Sunday, 6-Nov-94 08:49:37 GMT"), kExample);
  EXPECT_EQ(Lenient("Sun Nov 6 08:49:37 1994"), kExample);
  EXPECT_EQ(Lenient("Sun, 123 Nov 1994 08:49:37 GMT"), std::nullopt);
  EXPECT_EQ(Lenient("Sun, 32 Oct 1994 08:49:37 GMT"), std::nullopt);
}

TEST(LenientDateTest, Form4TheDayNameIsOptionalAndSoIsItsComma) {
  EXPECT_EQ(Lenient("06 Nov 1994 08:49:37 GMT"), kExample);
  EXPECT_EQ(Lenient("Sun 06 Nov 1994 08:49:37 GMT"), kExample);
  EXPECT_EQ(Lenient("Sunday, 06 Nov 1994 08:49:37 GMT"), kExample);
  EXPECT_EQ(Lenient("Sun, 06-Nov-94 08:49:37 GMT"), kExample);
  EXPECT_EQ(Lenient("06-Nov-94 08:49:37 GMT"), kExample);
  EXPECT_EQ(Lenient("Nov 6 08:49:37 1994"), kExample);
  // Not checked against the date, as in the exact forms: 06 Nov 1994 was a Sunday.
  EXPECT_EQ(Lenient("Mon, 06 Nov 1994 08:49:37 UTC"), kExample);
  // Something that is no day name is refused, with or without a comma.
  EXPECT_EQ(Lenient("Xyz, 06 Nov 1994 08:49:37 UTC"), std::nullopt);
  EXPECT_EQ(Lenient("Sundays, 06 Nov 1994 08:49:37 UTC"), std::nullopt);
  EXPECT_EQ(Lenient(", 06 Nov 1994 08:49:37 UTC"), std::nullopt);
}

TEST(LenientDateTest, Form5SecondsAreOptional) {
  EXPECT_EQ(Lenient("Sun, 06 Nov 1994 08:49 GMT"), WallTime(seconds(784111740)));
  EXPECT_EQ(Lenient("Sunday, 06-Nov-94 08:49 GMT"), WallTime(seconds(784111740)));
  EXPECT_EQ(Lenient("Sun Nov  6 08:49 1994"), WallTime(seconds(784111740)));
  for (const char* time : {"8:49:37", "08:49:3", "08:4937", "08.49.37", "24:00:00", "08:60:00",
                           "08:49:61", "08:49:37.5", "08:49:", "0849"}) {
    EXPECT_EQ(Lenient(std::string("Sun, 06 Nov 1994 ") + time + " GMT"), std::nullopt) << time;
  }
}

TEST(LenientDateTest, Form6RunsOfSpacesAndTabs) {
  EXPECT_EQ(Lenient("Sun,  06 Nov 1994\t08:49:37   GMT"), kExample);
  EXPECT_EQ(Lenient("Sun \t Nov \t 6 08:49:37 1994"), kExample);
  // Only spaces and tabs: a line break or a NUL byte is no separator.
  EXPECT_EQ(Lenient("Sun, 06 Nov 1994\n08:49:37 GMT"), std::nullopt);
  EXPECT_EQ(Lenient(std::string("Sun, 06 Nov 1994\0 08:49:37 GMT", 30)), std::nullopt);
  EXPECT_EQ(Lenient("Sun, 06 Nov 1994 08:49:37 GMT\r"), std::nullopt);
}

TEST(LenientDateTest, Form7TheDashedDateWithAFourDigitYear) {
  EXPECT_EQ(Lenient("Sun, 06-Nov-1994 08:49:37 GMT"), kExample);
  EXPECT_EQ(Lenient("Sunday, 06-Nov-1994 08:49:37 GMT"), kExample);
  EXPECT_EQ(Lenient("Sun, 06-Nov-994 08:49:37 GMT"), std::nullopt);
  EXPECT_EQ(Lenient("Sun, 06-Nov-19945 08:49:37 GMT"), std::nullopt);
  EXPECT_EQ(Lenient("Sun, 06-November-1994 08:49:37 GMT"), std::nullopt);
  EXPECT_EQ(Lenient("Sun, 06-Nov-94-1 08:49:37 GMT"), std::nullopt);
}

TEST(LenientDateTest, Form8ATwoDigitFixdateYearFollowsTheFiftyYearRule) {
  EXPECT_EQ(Lenient("Sun, 06 Nov 94 08:49:37 GMT"), kExample);
  // now = 2026-11-30T00:00:00Z: "76" is 2076 (exactly 50 years ahead,
  // 1577923200 s later) and one second later it is 1976.
  const WallTime now(seconds(1795996800));
  EXPECT_EQ(ParseLenientHttpDate("Mon, 30 Nov 76 00:00:00 GMT", now),
            WallTime(seconds(int64_t{1795996800} + 1577923200)));
  EXPECT_EQ(ParseLenientHttpDate("Mon, 30 Nov 76 00:00:01 GMT", now),
            WallTime(seconds(218160001)));  // 1976-11-30T00:00:01Z
}

TEST(LenientDateTest, TwoDigitYearsInTheYearFiftyAheadDependOnTheDateAndTime) {
  // now = 2024-01-01T00:00:00Z (1704067200): 2074-01-01T00:00:00 is exactly
  // 50 years ahead (kept), 2074-03-16 more than 50 (so 1974), in both parsers.
  const WallTime now(seconds(1704067200));
  EXPECT_EQ(ParseHttpDate("Monday, 01-Jan-74 00:00:00 GMT", now), WallTime(seconds(3281990400)));
  EXPECT_EQ(ParseHttpDate("Saturday, 16-Mar-74 10:59:52 GMT", now), WallTime(seconds(132663592)));
  EXPECT_EQ(ParseLenientHttpDate("Sat, 16 Mar 74 10:59:52 GMT", now), WallTime(seconds(132663592)));
}

TEST(LenientDateTest, WhatParsedateTzReadsButTheseRulesRefuse) {
  for (const char* text : {
           "Sun, 06 Nov 1994 08:49:37",          // no zone: parsedate_tz guesses UTC
           "Sun, 06-Nov-94 08:49:37",            // the same
           "Sun, 06 Nov 1994 08:49:37 EST",      // zone names other than GMT/UTC/UT/Z
           "Sun, 06 November 1994 08:49:37 GMT", // full month names
           "Sun, 06 Nov 994 08:49:37 GMT",       // three-digit years
           "Sun Nov 6 08:49:37 94",              // a two-digit asctime year
           "Nov 06 1994 08:49:37 GMT",           // month before day outside asctime
           "Sun, 06 Nov 1994 08:49:37 GMT GMT",  // trailing text
           "Sun, 06 Nov 1994 08:49:37 GMT x",
           "Sun, Nov 1994 08:49:37 GMT",
           "1994-11-06T08:49:37Z",               // ISO 8601 is no HTTP-date
           "", " ", "Sun,"}) {
    EXPECT_EQ(Lenient(text), std::nullopt) << '"' << text << '"';
  }
}

TEST(LenientDateTest, ParseHttpDateStaysExact) {
  for (const char* text : {"Sun, 06 Nov 1994 08:49:37 UTC", "sun, 06 nov 1994 08:49:37 gmt",
                           "Sun, 6 Nov 1994 08:49:37 GMT", "06 Nov 1994 08:49:37 GMT",
                           "Sun, 06 Nov 1994 08:49 GMT", "Sun, 06-Nov-1994 08:49:37 GMT"}) {
    EXPECT_EQ(ParseHttpDate(text, kNow), std::nullopt) << text;
    EXPECT_TRUE(Lenient(text).has_value()) << text;
  }
}

TEST(LenientDateTest, RetryAfterReadsTheLenientForms) {
  EXPECT_EQ(ParseRetryAfter("Sun, 06 Nov 1994 08:49:37 UTC", kNow), seconds(120));
  EXPECT_EQ(ParseRetryAfter("  Sun, 06 Nov 1994 09:49:37 +0100\t", kNow), seconds(120));
  EXPECT_EQ(ParseRetryAfter("Sun, 06 Nov 1994 08:49:37 EST", kNow), std::nullopt);
}

}  // namespace
}  // namespace mulligan
