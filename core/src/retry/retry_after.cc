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
  // RFC 9110 section 5.6.7: a two-digit year that appears more than 50 years in
  // the future is the most recent past year with the same last two digits.
  // The civil year of `now`, from its day number (floored, so that an instant
  // before 1970 counts on its own day), first estimated, then corrected.
  const int64_t now_seconds =
      std::chrono::floor<std::chrono::seconds>(now.time_since_epoch()).count();
  const int64_t now_days = now_seconds / 86400 - (now_seconds % 86400 < 0 ? 1 : 0);
  int now_year = 1970 + static_cast<int>(now_days / 365.2425);
  while (DaysFromCivil(now_year + 1, 1, 1) <= now_days) ++now_year;
  while (DaysFromCivil(now_year, 1, 1) > now_days) --now_year;
  // By year, that puts it in (now_year - 50, now_year + 50]: the candidate
  // in the century of `now` moves back when it is too far ahead, forward
  // when the century after holds one no more than 50 years ahead.
  int year = (now_year / 100) * 100 + two_digit_year;
  if (year > now_year + 50) {
    year -= 100;
  } else if (year <= now_year - 50) {
    year += 100;
  }
  t.year = year;
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
