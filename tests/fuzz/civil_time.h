// tests/fuzz/civil_time.h — an independent model of HTTP-dates for the fuzz
// harnesses: civil time from a count of days (Howard Hinnant's
// civil_from_days, the inverse of the days_from_civil the engine uses) and
// the three HTTP-date forms of RFC 9110 section 5.6.7, formatted.
//
// The harnesses format what the parser returned and compare it with the
// text it was given, so the parser is checked against code that shares
// nothing with it but the calendar.

#ifndef MULLIGAN_TESTS_FUZZ_CIVIL_TIME_H_
#define MULLIGAN_TESTS_FUZZ_CIVIL_TIME_H_

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

#include "mulligan/base/clock.h"

namespace mulligan_fuzz {

struct Civil {
  int64_t year;
  int month;   // 1..12
  int day;     // 1..31
  int hour;    // 0..23
  int minute;  // 0..59
  int second;  // 0..59
  int weekday; // 0 = Sunday
};

inline constexpr const char* kShortDays[7] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
inline constexpr const char* kLongDays[7] = {"Sunday",   "Monday", "Tuesday", "Wednesday",
                                             "Thursday", "Friday", "Saturday"};
inline constexpr const char* kMonths[12] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                            "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

// Floor division (C++ `/` truncates towards zero).
inline int64_t FloorDiv(int64_t a, int64_t b) {
  return a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
}

// The remainder of FloorDiv, in [0, b) for b > 0.
inline int64_t FloorMod(int64_t a, int64_t b) { return a - FloorDiv(a, b) * b; }

// Civil time (UTC, proleptic Gregorian) of `seconds` since 1970-01-01T00:00:00Z.
inline Civil CivilFromSeconds(int64_t seconds) {
  const int64_t days = FloorDiv(seconds, 86400);
  const int64_t secs = seconds - days * 86400;
  // civil_from_days (http://howardhinnant.github.io/date_algorithms.html).
  const int64_t z = days + 719468;
  const int64_t era = FloorDiv(z, 146097);
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  Civil c;
  c.day = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
  c.month = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
  c.year = yoe + era * 400 + (c.month <= 2);
  c.hour = static_cast<int>(secs / 3600);
  c.minute = static_cast<int>(secs / 60 % 60);
  c.second = static_cast<int>(secs % 60);
  c.weekday = static_cast<int>(FloorMod(days + 4, 7));  // 1970-01-01 was a Thursday
  return c;
}

// Whole seconds of a wall time (floor).
inline int64_t WallSeconds(mulligan::WallTime t) {
  return FloorDiv(std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count(),
                  1000000000);
}

// "DD Mon YYYY HH:MM:SS GMT" after "Day, " (IMF-fixdate).
inline std::string FormatImf(const Civil& c, const char* day_name) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s, %02d %s %04lld %02d:%02d:%02d GMT", day_name, c.day,
                kMonths[c.month - 1], static_cast<long long>(c.year), c.hour, c.minute, c.second);
  return buf;
}

// "Weekday, DD-Mon-YY HH:MM:SS GMT" (rfc850-date).
inline std::string FormatRfc850(const Civil& c, const char* day_name) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s, %02d-%s-%02lld %02d:%02d:%02d GMT", day_name, c.day,
                kMonths[c.month - 1], static_cast<long long>(FloorMod(c.year, 100)),
                c.hour, c.minute, c.second);
  return buf;
}

// "Day Mon _D HH:MM:SS YYYY" (asctime-date), the day as " D" or as "DD".
inline std::string FormatAsctime(const Civil& c, const char* day_name, bool two_digit_day) {
  char buf[64];
  std::snprintf(buf, sizeof buf, two_digit_day ? "%s %s %02d %02d:%02d:%02d %04lld"
                                               : "%s %s %2d %02d:%02d:%02d %04lld",
                day_name, kMonths[c.month - 1], c.day, c.hour, c.minute, c.second,
                static_cast<long long>(c.year));
  return buf;
}

}  // namespace mulligan_fuzz

#endif  // MULLIGAN_TESTS_FUZZ_CIVIL_TIME_H_
