// core/src/retry/civil_time.h — the calendar arithmetic shared by the
// HTTP-date parsers (private): civil date and time to WallTime, and the
// two-digit-year rule of RFC 9110 section 5.6.7.
//
// retry_after.cc parses the three RFC 9110 forms exactly; lenient_date.cc
// the lenient forms. Both turn what they read into a CivilTime here, so a
// date means the same instant whichever parser read it.
//
// Thread-safety: pure functions.

#ifndef MULLIGAN_SRC_RETRY_CIVIL_TIME_H_
#define MULLIGAN_SRC_RETRY_CIVIL_TIME_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "mulligan/base/clock.h"

namespace mulligan {
inline namespace v0 {
namespace internal {

// The names of RFC 9110 section 5.6.7 (day-name, day-name-l, month), in the
// order of their values: Monday first, January first. Both date parsers read
// them.
inline constexpr std::array<std::string_view, 7> kDayNames = {"Mon", "Tue", "Wed", "Thu",
                                                              "Fri", "Sat", "Sun"};
inline constexpr std::array<std::string_view, 7> kLongDayNames = {
    "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"};
inline constexpr std::array<std::string_view, 12> kMonthNames = {
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

// A date and time of day as written (proleptic Gregorian calendar). second
// may be 60 (a leap second reads as the next second).
struct CivilTime {
  int year, month, day, hour, minute, second;
};

// Returns the instant `t` names, where `t` is written `utc_offset_seconds`
// ahead of UTC (0 for GMT; +3600 for "+0100"). Returns nullopt for a month
// outside 1..12 or a day outside the month (29 Feb only in leap years).
// Instants beyond the 64-bit nanosecond clock (years before 1678 or after
// 2261 with libstdc++) saturate at WallTime::min() / WallTime::max().
// REQUIRES: hour, minute and second already range-checked by the caller.
std::optional<WallTime> ToWallTime(const CivilTime& t, int64_t utc_offset_seconds = 0);

// Returns the full year of a two-digit year `yy` (0..99) for the date and
// time in `t` (its year field is ignored), read at `now`: RFC 9110 section
// 5.6.7, a timestamp that appears to be more than 50 years in the future is
// in the most recent past year with the same last two digits. Compared on
// the full date and time, the result is the year in (limit - 100 years,
// limit], limit = now + 50 years (so in 2090 "00" is 2100 and "41" 2041).
int YearFromTwoDigits(int yy, CivilTime t, WallTime now);

}  // namespace internal
}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_SRC_RETRY_CIVIL_TIME_H_
