// core/src/internal/format.h — how numbers and durations are written in
// error messages and exports (private; one copy for every layer).
//
// Error texts are part of what users read and tests assert, so a duration is
// written one way everywhere: seconds with three decimals ("12.500 s").
//
// Thread-safety: pure functions.

#ifndef MULLIGAN_INTERNAL_FORMAT_H_
#define MULLIGAN_INTERNAL_FORMAT_H_

#include <charconv>
#include <chrono>
#include <cstdio>
#include <string>

#include "mulligan/base/clock.h"

namespace mulligan {
inline namespace v0 {
namespace internal {

// Returns `d` in seconds with three decimals and the unit: "12.500 s".
inline std::string FormatSeconds(Duration d) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.3f s", std::chrono::duration<double>(d).count());
  return buf;
}

// Returns the shortest text that reads back as exactly `value` ("0.1",
// "1e+300", "inf", "nan"): std::to_chars, so independent of the C locale.
inline std::string FormatDouble(double value) {
  char buf[64];
  const std::to_chars_result r = std::to_chars(buf, buf + sizeof(buf), value);
  return std::string(buf, r.ptr);
}

}  // namespace internal
}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_INTERNAL_FORMAT_H_
