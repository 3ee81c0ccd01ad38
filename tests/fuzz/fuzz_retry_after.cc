// tests/fuzz/fuzz_retry_after.cc — libFuzzer harness of ParseRetryAfter
// (mulligan/retry/retry_after.h; RFC 9110 section 10.2.3).
//
// Input: byte 0 holds flags, the rest is the field value.
//   bit 0  `now` is the next 8 bytes (any int64 nanoseconds since the epoch),
//          else 2024-01-01T00:00:00Z (the FakeClock's wall start)
// Post-conditions (the header's promises, worked out here independently):
//   - a delay is never negative;
//   - the value without its surrounding spaces and tabs (OWS) decides:
//       1*DIGIT      -> exactly min(digits * 1 s, Duration::max()): huge values
//                       saturate, never overflow;
//       an HTTP-date in any form ParseLenientHttpDate accepts (the three
//                    RFC 9110 forms and the lenient ones)
//                    -> exactly max(0, date - now), saturating at
//                       Duration::max() (never past it, never wrapped);
//       anything else, and the empty value -> nullopt.
// The lenient HTTP-date parser is the oracle for the date branch;
// fuzz_http_date checks it (and the exact parser) on its own.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "mulligan/retry/retry_after.h"

namespace {

using mulligan::Duration;
using mulligan::WallTime;
using mulligan_fuzz::Printable;

constexpr int64_t kDefaultNowSeconds = 1704067200;  // 2024-01-01T00:00:00Z

std::string Ns(std::optional<Duration> d) {
  return d ? std::to_string(d->count()) + " ns" : std::string("nullopt");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  mulligan_fuzz::Input in(data, size);
  const uint8_t flags = in.Byte();
  const WallTime now = (flags & 1) ? WallTime(std::chrono::nanoseconds(static_cast<int64_t>(in.U64())))
                                   : WallTime(std::chrono::seconds(kDefaultNowSeconds));
  const std::string_view value = in.Rest();
  const std::optional<Duration> delay = mulligan::ParseRetryAfter(value, now);

  std::string_view trimmed = value;
  while (!trimmed.empty() && (trimmed.front() == ' ' || trimmed.front() == '\t')) {
    trimmed.remove_prefix(1);
  }
  while (!trimmed.empty() && (trimmed.back() == ' ' || trimmed.back() == '\t')) {
    trimmed.remove_suffix(1);
  }
  bool all_digits = !trimmed.empty();
  // The number, saturated well above the largest Duration in seconds.
  unsigned __int128 seconds = 0;
  for (char c : trimmed) {
    if (c < '0' || c > '9') {
      all_digits = false;
      break;
    }
    if (seconds < (static_cast<unsigned __int128>(1) << 80)) seconds = seconds * 10 + (c - '0');
  }
  constexpr __int128 kMax = Duration::max().count();

  std::optional<Duration> expected;
  if (all_digits) {
    const unsigned __int128 ns = seconds * 1000000000u;
    expected = Duration(static_cast<Duration::rep>(ns > static_cast<unsigned __int128>(kMax) ? kMax : ns));
  } else if (!trimmed.empty()) {
    if (std::optional<WallTime> date = mulligan::ParseLenientHttpDate(trimmed, now)) {
      const __int128 diff = static_cast<__int128>(date->time_since_epoch().count()) -
                            static_cast<__int128>(now.time_since_epoch().count());
      expected = Duration(static_cast<Duration::rep>(diff < 0 ? 0 : diff > kMax ? kMax : diff));
    }
  }
  if (delay) FUZZ_CHECK(delay->count() >= 0, "negative delay for " + Printable(value));
  FUZZ_CHECK(delay == expected,
             Printable(value) + " gave " + Ns(delay) + ", expected " + Ns(expected));
  return 0;
}
