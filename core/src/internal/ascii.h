// core/src/internal/ascii.h — ASCII helpers for HTTP tokens and header fields
// (private; one copy for the engine, the C ABI and the bindings).
//
// HTTP field names and methods are ASCII and compared case-insensitively
// (RFC 9110 section 5.1), so these never consult the C locale: toupper() and
// strcasecmp() change meaning under a Turkish locale, these do not.
//
// Thread-safety: pure functions.

#ifndef MULLIGAN_INTERNAL_ASCII_H_
#define MULLIGAN_INTERNAL_ASCII_H_

#include <cstddef>
#include <string_view>

namespace mulligan {
inline namespace v0 {
namespace internal {

// Returns `c` with A-Z mapped to a-z; every other byte unchanged.
constexpr char AsciiLower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

// Returns true when `a` and `b` are equal ignoring ASCII case.
constexpr bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (AsciiLower(a[i]) != AsciiLower(b[i])) return false;
  }
  return true;
}

// Returns true when `text` starts with `prefix`, ignoring ASCII case.
constexpr bool StartsWithIgnoreCase(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() && EqualsIgnoreCase(text.substr(0, prefix.size()), prefix);
}

// Returns true for a tchar of RFC 9110 section 5.6.2 (the bytes of a token:
// a method, a header field name).
constexpr bool IsTokenChar(char c) {
  if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return true;
  switch (c) {
    case '!': case '#': case '$': case '%': case '&': case '\'': case '*': case '+':
    case '-': case '.': case '^': case '_': case '`': case '|': case '~':
      return true;
    default:
      return false;
  }
}

// Returns true for a non-empty token (RFC 9110 section 5.6.2).
constexpr bool IsToken(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!IsTokenChar(c)) return false;
  }
  return true;
}

// Returns true for printable ASCII, 0x20 (space) to 0x7e (~).
constexpr bool IsPrintableAscii(char c) { return c >= 0x20 && c <= 0x7e; }

// Returns true for optional whitespace, OWS (RFC 9110 section 5.6.3): SP or HTAB.
constexpr bool IsOws(char c) { return c == ' ' || c == '\t'; }

// Returns `s` without leading OWS and without trailing OWS, CR or LF (the
// line ending a header callback hands over with the field).
constexpr std::string_view TrimOws(std::string_view s) {
  while (!s.empty() && IsOws(s.front())) s.remove_prefix(1);
  while (!s.empty() && (IsOws(s.back()) || s.back() == '\r' || s.back() == '\n')) {
    s.remove_suffix(1);
  }
  return s;
}

}  // namespace internal
}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_INTERNAL_ASCII_H_
