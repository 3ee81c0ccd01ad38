// Retry-After and HTTP-date parsing (RFC 9110 sections 5.6.7 and 10.2.3).
//
// Hand-written on purpose: strptime/timegm depend on the locale and TZ, and the
// grammar is small and fixed.
#include "mulligan/retry/retry_after.h"

#include <array>
#include <chrono>
#include <cstdint>
#include <limits>

namespace mulligan {
inline namespace v0 {
namespace {

constexpr std::array<std::string_view, 7> kDayNames = {"Mon", "Tue", "Wed", "Thu",
                                                       "Fri", "Sat", "Sun"};
constexpr std::array<std::string_view, 7> kLongDayNames = {
    "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"};
constexpr std::array<std::string_view, 12> kMonthNames = {
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

// A cursor over the text; every Take* returns false without consuming on mismatch.
class Cursor {
 public:
  explicit Cursor(std::string_view text) : text_(text) {}

  bool AtEnd() const { return pos_ == text_.size(); }

  bool TakeLiteral(std::string_view literal) {
    if (text_.substr(pos_, literal.size()) != literal) return false;
    pos_ += literal.size();
    return true;
  }

  // Takes exactly `count` digits.
  bool TakeDigits(int count, int* out) {
    if (pos_ + count > text_.size()) return false;
    int value = 0;
    for (int i = 0; i < count; ++i) {
      char c = text_[pos_ + i];
      if (c < '0' || c > '9') return false;
      value = value * 10 + (c - '0');
    }
    pos_ += count;
    *out = value;
    return true;
  }

  // Takes one of `names` (case-sensitive, as the grammar's literals are in
  // practice; RFC 9110 says the names are case-sensitive) and returns its index.
  template <size_t N>
  bool TakeName(const std::array<std::string_view, N>& names, int* index) {
    for (size_t i = 0; i < N; ++i) {
      if (TakeLiteral(names[i])) {
        *index = static_cast<int>(i);
        return true;
      }
    }
    return false;
  }

 private:
  std::string_view text_;
  size_t pos_ = 0;
};

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

// Parses "HH:MM:SS" (time-of-day; second may be 60 for a leap second).
bool TakeTimeOfDay(Cursor& c, int* hour, int* minute, int* second) {
  return c.TakeDigits(2, hour) && c.TakeLiteral(":") && c.TakeDigits(2, minute) &&
         c.TakeLiteral(":") && c.TakeDigits(2, second) && *hour <= 23 && *minute <= 59 &&
         *second <= 60;
}

struct CivilTime {
  int year, month, day, hour, minute, second;
};

std::optional<WallTime> ToWallTime(const CivilTime& t) {
  if (t.month < 1 || t.month > 12 || t.day < 1 || t.day > DaysInMonth(t.year, t.month)) {
    return std::nullopt;
  }
  const int64_t days = DaysFromCivil(t.year, static_cast<unsigned>(t.month),
                                     static_cast<unsigned>(t.day));
  const int64_t seconds = days * 86400 + t.hour * 3600 + t.minute * 60 + t.second;
  // WallTime counts nanoseconds in 64 bits (years 1678-2262 with libstdc++):
  // dates beyond that saturate instead of overflowing.
  constexpr int64_t kLimit =
      std::chrono::duration_cast<std::chrono::seconds>(WallTime::duration::max()).count();
  if (seconds >= kLimit) return WallTime::max();
  if (seconds <= -kLimit) return WallTime::min();
  return WallTime(std::chrono::duration_cast<WallTime::duration>(std::chrono::seconds(seconds)));
}

// The civil date and time (UTC) of `now`, 50 years later (Howard Hinnant's
// civil_from_days for the date), to the second below `now` (floor: before
// 1970 too, where truncation would round towards the epoch and move the
// limit a second late). The year is at most 2262 + 50 with a 64-bit
// nanosecond WallTime, so it fits an int.
CivilTime FiftyYearsAfter(WallTime now) {
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

// IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT" (after the day name).
std::optional<CivilTime> ParseImfFixdateRest(Cursor& c) {
  CivilTime t{};
  int month_index = 0;
  if (c.TakeLiteral(", ") && c.TakeDigits(2, &t.day) && c.TakeLiteral(" ") &&
      c.TakeName(kMonthNames, &month_index) && c.TakeLiteral(" ") && c.TakeDigits(4, &t.year) &&
      c.TakeLiteral(" ") && TakeTimeOfDay(c, &t.hour, &t.minute, &t.second) &&
      c.TakeLiteral(" GMT") && c.AtEnd()) {
    t.month = month_index + 1;
    return t;
  }
  return std::nullopt;
}

// asctime: "Sun Nov  6 08:49:37 1994" (after the day name).
std::optional<CivilTime> ParseAsctimeRest(Cursor& c) {
  CivilTime t{};
  int month_index = 0;
  if (!(c.TakeLiteral(" ") && c.TakeName(kMonthNames, &month_index) && c.TakeLiteral(" "))) {
    return std::nullopt;
  }
  // date3 = month SP ( 2DIGIT / ( SP DIGIT ) )
  if (!(c.TakeLiteral(" ") ? c.TakeDigits(1, &t.day) : c.TakeDigits(2, &t.day))) {
    return std::nullopt;
  }
  if (c.TakeLiteral(" ") && TakeTimeOfDay(c, &t.hour, &t.minute, &t.second) &&
      c.TakeLiteral(" ") && c.TakeDigits(4, &t.year) && c.AtEnd()) {
    t.month = month_index + 1;
    return t;
  }
  return std::nullopt;
}

// rfc850-date: "Sunday, 06-Nov-94 08:49:37 GMT" (after the long day name).
std::optional<CivilTime> ParseRfc850Rest(Cursor& c, WallTime now) {
  CivilTime t{};
  int month_index = 0;
  int two_digit_year = 0;
  if (!(c.TakeLiteral(", ") && c.TakeDigits(2, &t.day) && c.TakeLiteral("-") &&
        c.TakeName(kMonthNames, &month_index) && c.TakeLiteral("-") &&
        c.TakeDigits(2, &two_digit_year) && c.TakeLiteral(" ") &&
        TakeTimeOfDay(c, &t.hour, &t.minute, &t.second) && c.TakeLiteral(" GMT") &&
        c.AtEnd())) {
    return std::nullopt;
  }
  t.month = month_index + 1;
  // RFC 9110 section 5.6.7: a timestamp with a two-digit year that appears to
  // be more than 50 years in the future is in the most recent past year with
  // the same last two digits. "More than 50 years" is measured on the full
  // date and time, so with now = 2026-11-30T00:00:00Z "30-Nov-76 00:00:00" is
  // 2076 (exactly 50 years ahead) and "30-Nov-76 00:00:01" is 1976. The year
  // is the one in (limit - 100 years, limit], limit = now + 50 years: the
  // candidate in the limit's century, or the one a century before when that
  // is past the limit (so in 2090 "00" is 2100, ten years ahead, not 2000).
  const CivilTime limit = FiftyYearsAfter(now);
  t.year = limit.year / 100 * 100 + two_digit_year;
  if (IsLater(t, limit)) t.year -= 100;
  return t;
}

}  // namespace

std::optional<WallTime> ParseHttpDate(std::string_view text, WallTime now) {
  // The long day names start with the short ones, so try the rfc850 form first.
  {
    Cursor c(text);
    int day_index = 0;
    if (c.TakeName(kLongDayNames, &day_index)) {
      if (auto t = ParseRfc850Rest(c, now)) return ToWallTime(*t);
      return std::nullopt;
    }
  }
  Cursor c(text);
  int day_index = 0;
  if (!c.TakeName(kDayNames, &day_index)) return std::nullopt;
  Cursor imf = c;
  if (auto t = ParseImfFixdateRest(imf)) return ToWallTime(*t);
  if (auto t = ParseAsctimeRest(c)) return ToWallTime(*t);
  return std::nullopt;
}

std::optional<Duration> ParseRetryAfter(std::string_view value, WallTime now) {
  // Strip optional whitespace (OWS = *( SP / HTAB )) around the field value.
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
  if (value.empty()) return std::nullopt;

  if (value.front() >= '0' && value.front() <= '9') {
    // delay-seconds = 1*DIGIT, saturating at the largest representable Duration.
    constexpr int64_t kMaxSeconds =
        std::chrono::duration_cast<std::chrono::seconds>(Duration::max()).count();
    int64_t seconds = 0;
    bool saturated = false;
    for (char ch : value) {
      if (ch < '0' || ch > '9') return std::nullopt;
      if (!saturated) {
        // seconds <= kMaxSeconds (about 9.2e9) here, so this cannot overflow.
        seconds = seconds * 10 + (ch - '0');
        saturated = seconds > kMaxSeconds;
      }
    }
    if (saturated) return Duration::max();
    return std::chrono::duration_cast<Duration>(std::chrono::seconds(seconds));
  }

  std::optional<WallTime> date = ParseHttpDate(value, now);
  if (!date) return std::nullopt;
  if (*date <= now) return Duration::zero();
  // date - now overflows the clock's int64 only for a `now` before 1970 and
  // a date near the end of its range (year 2262): saturate instead.
  const WallTime::duration since = date->time_since_epoch();
  const WallTime::duration before = now.time_since_epoch();
  if (before < WallTime::duration::zero() && since > WallTime::duration::max() + before) {
    return Duration::max();
  }
  return std::chrono::duration_cast<Duration>(since - before);
}

}  // namespace v0
}  // namespace mulligan
