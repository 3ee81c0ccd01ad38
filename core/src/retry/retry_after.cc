// Retry-After and HTTP-date parsing (RFC 9110 sections 5.6.7 and 10.2.3).
//
// Hand-written on purpose: strptime/timegm depend on the locale and TZ, and the
// grammar is small and fixed. The lenient forms ParseRetryAfter also reads are
// in lenient_date.cc; the calendar arithmetic both share is civil_time.cc.
#include "mulligan/retry/retry_after.h"

#include "retry/civil_time.h"

#include <array>
#include <chrono>
#include <cstdint>
#include <limits>

namespace mulligan {
inline namespace v0 {
namespace {

using internal::CivilTime;
using internal::kDayNames;
using internal::kLongDayNames;
using internal::kMonthNames;
using internal::ToWallTime;

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

// Parses "HH:MM:SS" (time-of-day; second may be 60 for a leap second).
bool TakeTimeOfDay(Cursor& c, int* hour, int* minute, int* second) {
  return c.TakeDigits(2, hour) && c.TakeLiteral(":") && c.TakeDigits(2, minute) &&
         c.TakeLiteral(":") && c.TakeDigits(2, second) && *hour <= 23 && *minute <= 59 &&
         *second <= 60;
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
  t.year = internal::YearFromTwoDigits(two_digit_year, t, now);
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

  // delay-seconds = 1*DIGIT. A value that starts with digits but has more is
  // no number; it may still be a date without its day name ("06 Nov 1994
  // 08:49:37 GMT", a lenient form).
  bool all_digits = true;
  for (char ch : value) all_digits = all_digits && ch >= '0' && ch <= '9';
  if (all_digits) {
    // Saturating at the largest representable Duration.
    constexpr int64_t kMaxSeconds =
        std::chrono::duration_cast<std::chrono::seconds>(Duration::max()).count();
    int64_t seconds = 0;
    bool saturated = false;
    for (char ch : value) {
      if (!saturated) {
        // seconds <= kMaxSeconds (about 9.2e9) here, so this cannot overflow.
        seconds = seconds * 10 + (ch - '0');
        saturated = seconds > kMaxSeconds;
      }
    }
    if (saturated) return Duration::max();
    return std::chrono::duration_cast<Duration>(std::chrono::seconds(seconds));
  }

  std::optional<WallTime> date = ParseLenientHttpDate(value, now);
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
