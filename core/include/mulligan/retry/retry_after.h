// mulligan/retry/retry_after.h — the Retry-After header field (RFC 9110 section 10.2.3).
//
//   Retry-After = HTTP-date / delay-seconds
//   delay-seconds = 1*DIGIT
//   HTTP-date = IMF-fixdate / obs-date (rfc850-date / asctime-date), section 5.6.7
//
// Only the GMT forms exist, so parsing never consults the TZ environment
// variable or the C library's locale.

#ifndef MULLIGAN_RETRY_RETRY_AFTER_H_
#define MULLIGAN_RETRY_RETRY_AFTER_H_

#include <optional>
#include <string_view>

#include "mulligan/base/clock.h"

namespace mulligan {
inline namespace v0 {

// Parses an HTTP-date in any of the three forms of RFC 9110 section 5.6.7:
//   IMF-fixdate  "Sun, 06 Nov 1994 08:49:37 GMT"
//   rfc850-date  "Sunday, 06-Nov-94 08:49:37 GMT"
//   asctime      "Sun Nov  6 08:49:37 1994"
// A two-digit rfc850 year that would put the date more than 50 years after
// `now` is taken as the most recent past year with those digits (section
// 5.6.7), measured on the full date and time (to the second; `now` rounded
// down): the date is the one with those digits in (now - 50 years, now + 50
// years]. With now = 2026-11-30T00:00:00Z, "30-Nov-76 00:00:00" is 2076 and
// "30-Nov-76 00:00:01" is 1976; in 2090, "01-Jan-00" is 2100. Returns
// nullopt on anything malformed (bad names, out-of-range fields, trailing text).
// Thread-safety: pure function.
std::optional<WallTime> ParseHttpDate(std::string_view text, WallTime now);

// Parses a Retry-After field value received at wall time `now` and returns the
// delay it asks for:
//   - delay-seconds: that many seconds; values too large for the clock saturate
//     at Duration::max() (never overflow), so the policy's retry_after_max then
//     treats them as too long.
//   - HTTP-date: the time from `now` until that date, or zero for a date in the
//     past or at `now` ("retry now").
//   - leading/trailing spaces and tabs (OWS) are ignored.
//   - anything else ("-5", "1m0s", "0.5", "abc", "") is invalid: nullopt, and
//     the caller falls back to its backoff.
// Thread-safety: pure function.
std::optional<Duration> ParseRetryAfter(std::string_view value, WallTime now);

}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_RETRY_RETRY_AFTER_H_
