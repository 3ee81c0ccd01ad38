// core/src/retry/lenient_date.cc — ParseLenientHttpDate: the HTTP-dates
// real servers send beside the three RFC 9110 forms (the accepted list and
// its sources are in mulligan/retry/retry_after.h and docs/retry-after.md).
//
// The text is read as whitespace-separated tokens, the way Python's
// email.utils.parsedate_tz (urllib3's parse_retry_after) reads it, but with
// a closed grammar: every token has one meaning and anything unexpected is
// refused, so a malformed value never becomes a wrong delay.
#include "mulligan/retry/retry_after.h"

#include <array>
#include <cstdint>

#include "internal/ascii.h"
#include "retry/civil_time.h"

namespace mulligan {
inline namespace v0 {
namespace {

using internal::CivilTime;
using internal::kDayNames;
using internal::kLongDayNames;
using internal::kMonthNames;
using internal::EqualsIgnoreCase;
using internal::IsOws;

// At most 6 tokens make a date ("Sun, 06 Nov 1994 08:49:37 GMT"); a seventh
// makes the text invalid.
constexpr size_t kMaxTokens = 6;

struct Tokens {
  std::array<std::string_view, kMaxTokens> token;
  size_t count = 0;
};

// Splits `text` at runs of spaces and tabs. Returns false for more than
// kMaxTokens tokens.
bool Split(std::string_view text, Tokens* out) {
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && IsOws(text[i])) ++i;
    if (i == text.size()) break;
    const size_t start = i;
    while (i < text.size() && !IsOws(text[i])) ++i;
    if (out->count == kMaxTokens) return false;
    out->token[out->count++] = text.substr(start, i - start);
  }
  return true;
}

// Whether `s` is 1..max_digits ASCII digits; their value in `out`.
bool Digits(std::string_view s, size_t min_digits, size_t max_digits, int* out) {
  if (s.size() < min_digits || s.size() > max_digits) return false;
  int value = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + (c - '0');
  }
  *out = value;
  return true;
}

template <size_t N>
bool IsName(std::string_view s, const std::array<std::string_view, N>& names) {
  for (std::string_view name : names) {
    if (EqualsIgnoreCase(s, name)) return true;
  }
  return false;
}

// A month name, any case: its number 1..12 in `out`.
bool Month(std::string_view s, int* out) {
  for (size_t i = 0; i < kMonthNames.size(); ++i) {
    if (EqualsIgnoreCase(s, kMonthNames[i])) {
      *out = static_cast<int>(i) + 1;
      return true;
    }
  }
  return false;
}

// "HH:MM" or "HH:MM:SS", two digits each; hour <= 23, minute <= 59,
// second <= 60 (a leap second).
bool TimeOfDay(std::string_view s, CivilTime* t) {
  t->second = 0;
  if (s.size() != 5 && s.size() != 8) return false;
  if (s[2] != ':' || (s.size() == 8 && s[5] != ':')) return false;
  if (!Digits(s.substr(0, 2), 2, 2, &t->hour) || !Digits(s.substr(3, 2), 2, 2, &t->minute)) {
    return false;
  }
  if (s.size() == 8 && !Digits(s.substr(6, 2), 2, 2, &t->second)) return false;
  return t->hour <= 23 && t->minute <= 59 && t->second <= 60;
}

// A zone: "GMT", "UTC", "UT" or "Z" in any case (offset 0), or an RFC 5322
// numeric offset "+hhmm" / "-hhmm" with hh <= 23 and mm <= 59 ("-0000" is
// UTC too). The offset, in seconds east of UTC, in `out`.
bool Zone(std::string_view s, int64_t* out) {
  if (EqualsIgnoreCase(s, "GMT") || EqualsIgnoreCase(s, "UTC") || EqualsIgnoreCase(s, "UT") ||
      EqualsIgnoreCase(s, "Z")) {
    *out = 0;
    return true;
  }
  int hours = 0, minutes = 0;
  if (s.size() != 5 || (s[0] != '+' && s[0] != '-') || !Digits(s.substr(1, 2), 2, 2, &hours) ||
      !Digits(s.substr(3, 2), 2, 2, &minutes) || hours > 23 || minutes > 59) {
    return false;
  }
  *out = (s[0] == '-' ? -1 : 1) * (hours * 3600 + minutes * 60);
  return true;
}

// A year of 4 digits, or 2 digits resolved by RFC 9110's 50-year rule
// (after the rest of `t` is known).
bool Year(std::string_view s, CivilTime* t, WallTime now) {
  int value = 0;
  if (s.size() == 4 && Digits(s, 4, 4, &value)) {
    t->year = value;
    return true;
  }
  if (s.size() == 2 && Digits(s, 2, 2, &value)) {
    t->year = internal::YearFromTwoDigits(value, *t, now);
    return true;
  }
  return false;
}

// day "-" month "-" year, as rfc850-date writes it ("06-Nov-94") or as
// cookies' Expires does ("06-Nov-1994"). The year is read last, by Year().
bool DashedDate(std::string_view s, CivilTime* t, std::string_view* year) {
  const size_t first = s.find('-');
  if (first == std::string_view::npos) return false;
  const size_t second = s.find('-', first + 1);
  if (second == std::string_view::npos) return false;
  *year = s.substr(second + 1);
  return Digits(s.substr(0, first), 1, 2, &t->day) &&
         Month(s.substr(first + 1, second - first - 1), &t->month);
}

}  // namespace

std::optional<WallTime> ParseLenientHttpDate(std::string_view text, WallTime now) {
  if (std::optional<WallTime> exact = ParseHttpDate(text, now)) return exact;
  Tokens tokens;
  if (!Split(text, &tokens) || tokens.count == 0) return std::nullopt;
  const std::string_view* tok = tokens.token.data();
  size_t n = tokens.count;

  // An optional day name, short or long, any case, with or without its comma
  // (the day name is not checked against the date, as in the exact forms).
  std::string_view day_name = tok[0];
  if (!day_name.empty() && day_name.back() == ',') day_name.remove_suffix(1);
  if (IsName(day_name, kDayNames) || IsName(day_name, kLongDayNames)) {
    ++tok;
    --n;
  } else if (day_name.size() != tok[0].size()) {
    return std::nullopt;  // "Xyz," is no day name
  }

  CivilTime t{};
  int64_t offset = 0;
  std::string_view year;
  if (n == 3 && DashedDate(tok[0], &t, &year)) {
    // day-month-year time zone ("06-Nov-94 08:49:37 GMT")
    if (!TimeOfDay(tok[1], &t) || !Zone(tok[2], &offset)) return std::nullopt;
  } else if (n == 5 && Digits(tok[0], 1, 2, &t.day)) {
    // day month year time zone ("6 Nov 1994 08:49 UTC")
    year = tok[2];
    if (!Month(tok[1], &t.month) || !TimeOfDay(tok[3], &t) || !Zone(tok[4], &offset)) {
      return std::nullopt;
    }
  } else if (n == 4 && Month(tok[0], &t.month)) {
    // asctime without its exact spacing: month day time year, always GMT
    // ("Sun Nov 6 08:49:37 1994"); its year has 4 digits.
    year = tok[3];
    if (year.size() != 4 || !Digits(tok[1], 1, 2, &t.day) || !TimeOfDay(tok[2], &t)) {
      return std::nullopt;
    }
  } else {
    return std::nullopt;
  }
  if (!Year(year, &t, now)) return std::nullopt;
  return internal::ToWallTime(t, offset);
}

}  // namespace v0
}  // namespace mulligan
