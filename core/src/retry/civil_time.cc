// core/src/retry/civil_time.cc — calendar arithmetic of the HTTP-date
// parsers (see civil_time.h).
#include "retry/civil_time.h"

#include <chrono>

namespace mulligan {
inline namespace v0 {
namespace internal {
namespace {

bool IsLeapYear(int year) { return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0; }

int DaysInMonth(int year, int month) {
  static constexpr int kDays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return month == 2 && IsLeapYear(year) ? 29 : kDays[month - 1];
}

// Days from 1970-01-01 to year-month-day in the proleptic Gregorian calendar
// (Howard Hinnant's days_from_civil).
int64_t DaysFromCivil(int64_t year, unsigned month, unsigned day) {
  year -= month <= 2;
  const int64_t era = (year >= 0 ? year : year - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(year - era * 400);
  const unsigned doy = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

// The civil date and time (UTC) of `now`, 50 years later (Howard Hinnant's
// civil_from_days for the date). The year is at most 2262 + 50 with a 64-bit
// nanosecond WallTime, so it fits an int.
CivilTime FiftyYearsAfter(WallTime now) {
  // floor, not truncation: before 1970 truncation rounds towards the epoch
  // and moves the limit a second late.
  int64_t seconds = std::chrono::floor<std::chrono::seconds>(now.time_since_epoch()).count();
  int64_t days = seconds / 86400;
  int64_t second_of_day = seconds % 86400;
  if (second_of_day < 0) {
    second_of_day += 86400;
    --days;
  }
  const int64_t z = days + 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  CivilTime t{};
  t.day = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
  t.month = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
  t.year = static_cast<int>(static_cast<int64_t>(yoe) + era * 400 + (t.month <= 2 ? 1 : 0)) + 50;
  t.hour = static_cast<int>(second_of_day / 3600);
  t.minute = static_cast<int>(second_of_day / 60 % 60);
  t.second = static_cast<int>(second_of_day % 60);
  return t;
}

// Whether `a` is later than `b` (field by field, so a leap second 60 sorts last).
bool IsLater(const CivilTime& a, const CivilTime& b) {
  const int fa[] = {a.year, a.month, a.day, a.hour, a.minute, a.second};
  const int fb[] = {b.year, b.month, b.day, b.hour, b.minute, b.second};
  for (int i = 0; i < 6; ++i) {
    if (fa[i] != fb[i]) return fa[i] > fb[i];
  }
  return false;
}

}  // namespace

std::optional<WallTime> ToWallTime(const CivilTime& t, int64_t utc_offset_seconds) {
  if (t.month < 1 || t.month > 12 || t.day < 1 || t.day > DaysInMonth(t.year, t.month)) {
    return std::nullopt;
  }
  const int64_t days = DaysFromCivil(t.year, static_cast<unsigned>(t.month),
                                     static_cast<unsigned>(t.day));
  // |days| stays below 2^40 for any int year, so this cannot overflow; the
  // offset (a day at most) is applied before the range check below.
  const int64_t seconds =
      days * 86400 + t.hour * 3600 + t.minute * 60 + t.second - utc_offset_seconds;
  // WallTime counts nanoseconds in 64 bits (years 1678-2262 with libstdc++):
  // dates beyond that saturate instead of overflowing.
  constexpr int64_t kLimit =
      std::chrono::duration_cast<std::chrono::seconds>(WallTime::duration::max()).count();
  if (seconds >= kLimit) return WallTime::max();
  if (seconds <= -kLimit) return WallTime::min();
  return WallTime(std::chrono::duration_cast<WallTime::duration>(std::chrono::seconds(seconds)));
}

int YearFromTwoDigits(int yy, CivilTime t, WallTime now) {
  // "More than 50 years" is measured on the full date and time, so with
  // now = 2026-11-30T00:00:00Z "30-Nov-76 00:00:00" is 2076 (exactly 50
  // years ahead) and "30-Nov-76 00:00:01" is 1976. The year is the candidate
  // in the limit's century, or the one a century before when that is past
  // the limit (so in 2090 "00" is 2100, ten years ahead, not 2000).
  const CivilTime limit = FiftyYearsAfter(now);
  t.year = limit.year / 100 * 100 + yy;
  if (IsLater(t, limit)) t.year -= 100;
  return t.year;
}

}  // namespace internal
}  // namespace v0
}  // namespace mulligan
