// tests/fuzz/fuzz_http_date.cc — libFuzzer harness of ParseHttpDate
// (mulligan/retry/retry_after.h; RFC 9110 section 5.6.7).
//
// Input: byte 0 holds flags, the rest is the text.
//   bit 0  `now` is the next 8 bytes (any int64 nanoseconds since the epoch),
//          else 2024-01-01T00:00:00Z (the FakeClock's wall start)
//   bit 1  generate instead of parse: the next 8 bytes pick a time in the
//          clock's range, which is written in all three forms (the asctime
//          day both as " 6" and as "06"); each must parse back to that
//          time (the rfc850 form when the date is within 50 years of now).
// Post-conditions, on every date that parses:
//   - unless it saturated, it is a whole second, and writing it again in
//     the form it was read in gives the text back, except the day name
//     (which the parser does not check) and a leap second "60" (which reads
//     as the next second);
//   - a saturated date (WallTime::max or min) has a year outside the clock's
//     range, years 1678 to 2261 (int64 nanoseconds);
//   - an rfc850 date lies in (now - 50 years, now + 50 years], on the full
//     date and time (to the second, now rounded down): "a timestamp that
//     appears to be more than 50 years in the future" is in the most recent
//     past year with those digits (RFC 9110 section 5.6.7).
// ParseLenientHttpDate (the lenient forms of retry_after.h) runs on every
// input too, with these post-conditions:
//   - wherever ParseHttpDate gives a date, it gives the same one;
//   - a date it gives is a whole second or saturated (WallTime::max or min),
//     and, unless saturated, written again as IMF-fixdate it reads back as
//     the same instant through the exact parser;
//   - letter case never matters: the text upper-cased and lower-cased give
//     the same result (date or nullopt) as the text;
//   - in generate mode, the time written in lenient forms (zone "UTC" and
//     "z", lower case, a one-digit day without day name or seconds' loss, a
//     dashed four-digit year, runs of blanks, and a +hhmm / -hhmm offset
//     taken from the input with the local time shifted by it) reads back as
//     that time.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>
#include <tuple>

#include "civil_time.h"
#include "fuzz_check.h"
#include "mulligan/retry/retry_after.h"

namespace {

using mulligan::WallTime;
using mulligan_fuzz::Civil;
using mulligan_fuzz::CivilFromSeconds;
using mulligan_fuzz::Printable;
using mulligan_fuzz::WallSeconds;

// 2024-01-01T00:00:00Z, as FakeClock's default wall start.
constexpr int64_t kDefaultNowSeconds = 1704067200;

enum class Form { kImf, kRfc850, kAsctime };

int Digits(std::string_view text, size_t pos, size_t count) {
  int v = 0;
  for (size_t i = pos; i < pos + count && i < text.size(); ++i) v = v * 10 + (text[i] - '0');
  return v;
}

// Whether the civil time `c` (a leap second 60 as written) lies in
// (now - 50 years, now + 50 years]: compared field by field with the civil
// time of `now` (rounded down to the second) in the year 50 later and the
// year 50 earlier (the rfc850 window of RFC 9110 section 5.6.7).
bool InRfc850Window(const Civil& c, WallTime now) {
  const Civil n = CivilFromSeconds(WallSeconds(now));
  auto fields = [](int64_t year, const Civil& x) {
    return std::make_tuple(year, x.month, x.day, x.hour, x.minute, x.second);
  };
  const auto date = fields(c.year, c);
  return date <= fields(n.year + 50, n) && date > fields(n.year - 50, n);
}

// Checks the post-conditions for `text`, which ParseHttpDate turned into `t`.
void CheckParsed(std::string_view text, WallTime now, WallTime t) {
  // The form, from the text's shape (the parser accepted it, so it has one).
  Form form = Form::kAsctime;
  size_t long_name = 0;
  for (const char* name : mulligan_fuzz::kLongDays) {
    if (text.substr(0, std::string_view(name).size()) == name) long_name = std::string_view(name).size();
  }
  if (long_name != 0) {
    form = Form::kRfc850;
  } else if (text.size() > 3 && text[3] == ',') {
    form = Form::kImf;
  }
  const size_t second_at = form == Form::kImf ? 23 : form == Form::kRfc850 ? long_name + 18 : 17;
  FUZZ_CHECK(text.size() >= second_at + 2, "too short for its form: " + Printable(text));
  const bool leap = text.substr(second_at, 2) == "60";
  const int64_t now_year = CivilFromSeconds(WallSeconds(now)).year;

  if (t == WallTime::max() || t == WallTime::min()) {
    // Saturated: the year must be out of the clock's range.
    int64_t year_low = 0, year_high = 0;
    if (form == Form::kRfc850) {
      year_low = now_year - 50;  // the window of two-digit years
      year_high = now_year + 50;
    } else {
      year_low = year_high = Digits(text, form == Form::kImf ? 12 : 20, 4);
    }
    if (t == WallTime::max()) {
      FUZZ_CHECK(year_high >= 2262, "saturated high in range: " + Printable(text));
    } else {
      FUZZ_CHECK(year_low <= 1677, "saturated low in range: " + Printable(text));
    }
    return;
  }

  FUZZ_CHECK(t.time_since_epoch() % std::chrono::seconds(1) == std::chrono::seconds(0),
             "not a whole second: " + Printable(text));
  Civil c = CivilFromSeconds(WallSeconds(t) - (leap ? 1 : 0));
  if (leap) {
    FUZZ_CHECK(c.second == 59, "a leap second not after :59: " + Printable(text));
    c.second = 60;
  }
  std::string again;
  switch (form) {
    case Form::kImf:
      again = mulligan_fuzz::FormatImf(c, std::string(text.substr(0, 3)).c_str());
      break;
    case Form::kRfc850:
      again = mulligan_fuzz::FormatRfc850(c, std::string(text.substr(0, long_name)).c_str());
      FUZZ_CHECK(InRfc850Window(c, now),
                 "rfc850 date in " + std::to_string(c.year) +
                     " not within 50 years of now (in " + std::to_string(now_year) + ") for " +
                     Printable(text));
      break;
    case Form::kAsctime:
      again = mulligan_fuzz::FormatAsctime(c, std::string(text.substr(0, 3)).c_str(),
                                           text.size() > 8 && text[8] != ' ');
      break;
  }
  FUZZ_CHECK(again == text, Printable(text) + " read as " + Printable(again));
}

std::string Ascii(std::string_view text, bool upper) {
  std::string out(text);
  for (char& c : out) {
    if (upper && c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    if (!upper && c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// Checks ParseLenientHttpDate's post-conditions for `text` (any bytes).
void CheckLenient(std::string_view text, WallTime now) {
  const std::optional<WallTime> lenient = mulligan::ParseLenientHttpDate(text, now);
  if (std::optional<WallTime> exact = mulligan::ParseHttpDate(text, now)) {
    FUZZ_CHECK(lenient == exact, "the lenient parser disagrees on " + Printable(text));
  }
  FUZZ_CHECK(mulligan::ParseLenientHttpDate(Ascii(text, true), now) == lenient &&
                 mulligan::ParseLenientHttpDate(Ascii(text, false), now) == lenient,
             "letter case changes the date of " + Printable(text));
  if (!lenient || *lenient == WallTime::max() || *lenient == WallTime::min()) return;
  FUZZ_CHECK(lenient->time_since_epoch() % std::chrono::seconds(1) == std::chrono::seconds(0),
             "not a whole second (lenient): " + Printable(text));
  const Civil c = CivilFromSeconds(WallSeconds(*lenient));
  const std::string imf = mulligan_fuzz::FormatImf(c, mulligan_fuzz::kShortDays[c.weekday]);
  FUZZ_CHECK(mulligan::ParseHttpDate(imf, now) == lenient,
             Printable(text) + " (lenient) does not read back as " + Printable(imf));
}

// Writes `t` in lenient forms and checks that each reads back as `t`;
// `offset_pick` chooses a numeric zone offset.
void GenerateLenient(int64_t seconds, uint64_t offset_pick, WallTime now) {
  const WallTime t{std::chrono::seconds(seconds)};
  const Civil c = CivilFromSeconds(seconds);
  char buf[96];
  std::vector<std::string> texts;
  const std::string imf = mulligan_fuzz::FormatImf(c, mulligan_fuzz::kShortDays[c.weekday]);
  texts.push_back(imf.substr(0, imf.size() - 3) + "UTC");
  texts.push_back(imf.substr(0, imf.size() - 3) + "z");
  texts.push_back(Ascii(imf, false));
  std::snprintf(buf, sizeof buf, "%d %s %04lld %02d:%02d:%02d GMT", c.day,
                mulligan_fuzz::kMonths[c.month - 1], static_cast<long long>(c.year), c.hour,
                c.minute, c.second);
  texts.push_back(buf);
  std::snprintf(buf, sizeof buf, "%s,  %02d-%s-%04lld\t%02d:%02d:%02d  Z",
                mulligan_fuzz::kLongDays[c.weekday], c.day, mulligan_fuzz::kMonths[c.month - 1],
                static_cast<long long>(c.year), c.hour, c.minute, c.second);
  texts.push_back(buf);
  // An offset in [-23:59, +23:59]; the local time is t shifted by it.
  const int64_t minutes = static_cast<int64_t>(offset_pick % (2 * 1439 + 1)) - 1439;
  const Civil local = CivilFromSeconds(seconds + minutes * 60);
  const int64_t m = minutes < 0 ? -minutes : minutes;
  std::snprintf(buf, sizeof buf, "%s, %02d %s %04lld %02d:%02d:%02d %c%02lld%02lld",
                mulligan_fuzz::kShortDays[local.weekday], local.day,
                mulligan_fuzz::kMonths[local.month - 1], static_cast<long long>(local.year),
                local.hour, local.minute, local.second, minutes < 0 ? '-' : '+',
                static_cast<long long>(m / 60), static_cast<long long>(m % 60));
  // Four-digit years only (a local year outside 0..9999 cannot be written).
  if (local.year >= 0 && local.year <= 9999) texts.push_back(buf);
  for (const std::string& text : texts) {
    if (c.year < 0 || c.year > 9999) break;
    FUZZ_CHECK(mulligan::ParseLenientHttpDate(text, now) == t,
               "a lenient date is misread or refused: " + Printable(text));
    CheckLenient(text, now);
  }
}

// Writes a time in every form and checks that each parses back.
void Generate(uint64_t pick, WallTime now) {
  // Whole seconds strictly inside the clock's range (about +-292 years).
  constexpr int64_t kSpan = 9223372035;
  const int64_t seconds = static_cast<int64_t>(pick % (2 * static_cast<uint64_t>(kSpan))) - kSpan;
  const WallTime t{std::chrono::seconds(seconds)};
  const Civil c = CivilFromSeconds(seconds);
  const std::string texts[] = {
      mulligan_fuzz::FormatImf(c, mulligan_fuzz::kShortDays[c.weekday]),
      mulligan_fuzz::FormatAsctime(c, mulligan_fuzz::kShortDays[c.weekday], false),
      mulligan_fuzz::FormatAsctime(c, mulligan_fuzz::kShortDays[c.weekday], true),
      mulligan_fuzz::FormatRfc850(c, mulligan_fuzz::kLongDays[c.weekday]),
  };
  // The rfc850 form names its year only within 50 years of `now`: elsewhere
  // "29-Feb-00" may fall on a year that is not a leap year, and is refused.
  const bool rfc850_exact = InRfc850Window(c, now);
  for (size_t i = 0; i < 4; ++i) {
    std::optional<WallTime> parsed = mulligan::ParseHttpDate(texts[i], now);
    const bool exact = i < 3 || rfc850_exact;
    if (!parsed) {
      FUZZ_CHECK(!exact, "a valid date is refused: " + Printable(texts[i]));
      continue;
    }
    if (exact) FUZZ_CHECK(*parsed == t, "a valid date is misread: " + Printable(texts[i]));
    CheckParsed(texts[i], now, *parsed);
    CheckLenient(texts[i], now);
  }
  GenerateLenient(seconds, pick / (2 * static_cast<uint64_t>(kSpan)), now);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  mulligan_fuzz::Input in(data, size);
  const uint8_t flags = in.Byte();
  const WallTime now = (flags & 1) ? WallTime(std::chrono::nanoseconds(static_cast<int64_t>(in.U64())))
                                   : WallTime(std::chrono::seconds(kDefaultNowSeconds));
  if (flags & 2) {
    Generate(in.U64(), now);
    return 0;
  }
  const std::string_view text = in.Rest();
  if (std::optional<WallTime> t = mulligan::ParseHttpDate(text, now)) CheckParsed(text, now, *t);
  CheckLenient(text, now);
  return 0;
}
