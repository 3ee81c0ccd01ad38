// mulligan/retry/retry_after.h — the Retry-After header field (RFC 9110 section 10.2.3).
//
//   Retry-After = HTTP-date / delay-seconds
//   delay-seconds = 1*DIGIT
//   HTTP-date = IMF-fixdate / obs-date (rfc850-date / asctime-date), section 5.6.7
//
// Senders must write IMF-fixdate, but section 5.6.7 encourages recipients to
// be robust in parsing timestamps (messages forwarded from non-HTTP sources
// may carry any RFC 5322 date-time), and RFC 9111 section 4.2 has cache
// recipients match names case-insensitively. ParseRetryAfter therefore reads
// dates with ParseLenientHttpDate, which accepts a closed list of lenient
// forms, each one a form real servers send and urllib3's parse_retry_after
// (email.utils.parsedate_tz) accepts; see ParseLenientHttpDate below and
// docs/retry-after.md.
//
// Every zone is a fixed offset (no zone database), so parsing never consults
// the TZ environment variable or the C library's locale.

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

// Parses an HTTP-date as ParseHttpDate does (the same result for every text
// ParseHttpDate accepts), and also these lenient forms:
//   1. the zone "UTC", "UT" or "Z" in place of "GMT", or an RFC 5322 numeric
//      offset "+hhmm" / "-hhmm" (hh 00-23, mm 00-59; "-0000" is UTC), which
//      is subtracted: "Sun, 06 Nov 1994 09:49:37 +0100" is 08:49:37 GMT;
//   2. day names, month names and zones in any case ("sun, 06 nov 1994
//      08:49:37 gmt");
//   3. a one-digit day ("Sun, 6 Nov 1994 08:49:37 GMT");
//   4. no day name ("06 Nov 1994 08:49:37 GMT"), and a day name without its
//      comma ("Sun 06 Nov 1994 ...") or long in the fixdate form ("Sunday,
//      06 Nov 1994 ...");
//   5. no seconds ("Sun, 06 Nov 1994 08:49 GMT", RFC 5322 time-of-day);
//   6. runs of spaces and tabs wherever the forms have one space
//      ("Sun,  06 Nov 1994	08:49:37 GMT"; asctime's day padding included);
//   7. the dashed date with a four-digit year or a short day name, as
//      cookies' Expires writes it ("Sun, 06-Nov-1994 08:49:37 GMT");
//   8. a two-digit year in the fixdate form ("06 Nov 94 ..."), resolved by
//      the same 50-year rule as rfc850-date.
// Refused, although parsedate_tz reads them: zone names other than the four
// above (EST, PDT...: RFC 9111 section 4.2 has caches treat them as invalid,
// and they are ambiguous), a missing zone outside asctime (no RFC 5322 date
// lacks one; parsedate_tz assumes UTC where the sender may have meant its
// local time), offsets of 24 h or more, full month names, three-digit years, "."
// between the fields of the time, and trailing text. The day name is never
// checked against the date (as in ParseHttpDate).
// Thread-safety: pure function.
std::optional<WallTime> ParseLenientHttpDate(std::string_view text, WallTime now);

// Parses a Retry-After field value received at wall time `now` and returns the
// delay it asks for:
//   - delay-seconds: that many seconds; values too large for the clock saturate
//     at Duration::max() (never overflow), so the policy's retry_after_max then
//     treats them as too long.
//   - HTTP-date, in any form ParseLenientHttpDate accepts: the time from
//     `now` until that date, or zero for a date in the past or at `now`
//     ("retry now").
//   - leading/trailing spaces and tabs (OWS) are ignored.
//   - anything else ("-5", "1m0s", "0.5", "abc", "") is invalid: nullopt, and
//     the caller falls back to its backoff.
// Thread-safety: pure function.
std::optional<Duration> ParseRetryAfter(std::string_view value, WallTime now);

}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_RETRY_RETRY_AFTER_H_
