// core/src/state/redis_url.cc — ParseRedisUrl: redis://[[user]:password@]host[:port][/db].
//
// Error texts name the part that is wrong and never quote it: the URL may
// hold a password.

#include <cstdint>
#include <string>

#include "mulligan/state/redis.h"

namespace mulligan {
inline namespace v0 {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Percent-decodes `in` (RFC 3986 section 2.1) into `out`; false on a bad escape.
bool PercentDecode(std::string_view in, std::string* out) {
  out->clear();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out->push_back(in[i]);
      continue;
    }
    if (i + 2 >= in.size()) return false;
    const int hi = HexValue(in[i + 1]);
    const int lo = HexValue(in[i + 2]);
    if (hi < 0 || lo < 0) return false;
    out->push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return true;
}

// Parses decimal digits in [lo, hi]; false when empty, not digits or out of range.
bool ParseBounded(std::string_view s, int64_t lo, int64_t hi, int64_t* out) {
  if (s.empty() || s.size() > 10) return false;
  int64_t v = 0;
  for (const char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  if (v < lo || v > hi) return false;
  *out = v;
  return true;
}

}  // namespace

Result<RedisUrl> ParseRedisUrl(std::string_view url) {
  constexpr std::string_view kScheme = "redis://";
  constexpr std::string_view kTlsScheme = "rediss://";
  if (url.substr(0, kTlsScheme.size()) == kTlsScheme) {
    return InvalidArgumentError(
        "url: rediss:// (TLS) is not supported: it needs hiredis >= 1.0 built with SSL, and "
        "this build uses hiredis 0.14 (Debian 12's libhiredis-dev), which has no TLS");
  }
  if (url.substr(0, kScheme.size()) != kScheme) {
    return InvalidArgumentError("url: the scheme must be redis:// (as in redis://host:6379/0)");
  }
  std::string_view rest = url.substr(kScheme.size());
  if (rest.find_first_of("?#") != std::string_view::npos) {
    return InvalidArgumentError("url: a query or fragment is not supported");
  }
  const size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
  RedisUrl out;
  // The userinfo ends at the last '@' (a raw '@' in a password is then kept).
  const size_t at = authority.rfind('@');
  if (at != std::string_view::npos) {
    std::string_view userinfo = authority.substr(0, at);
    authority = authority.substr(at + 1);
    const size_t colon = userinfo.find(':');
    std::string_view user = userinfo.substr(0, colon);
    std::string_view password =
        colon == std::string_view::npos ? std::string_view() : userinfo.substr(colon + 1);
    if (colon == std::string_view::npos) {
      // "redis://secret@host" is how some clients spell a password alone.
      password = user;
      user = std::string_view();
    }
    if (!PercentDecode(user, &out.user)) {
      return InvalidArgumentError("url: the user name has a bad percent-escape");
    }
    if (!PercentDecode(password, &out.password)) {
      return InvalidArgumentError("url: the password has a bad percent-escape");
    }
    if (!out.user.empty() && out.password.empty()) {
      return InvalidArgumentError("url: an ACL user needs a password (redis://user:password@host)");
    }
  }
  std::string_view port;
  if (!authority.empty() && authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) {
      return InvalidArgumentError("url: an IPv6 host must end with ']'");
    }
    out.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return InvalidArgumentError("url: bad text after the IPv6 host");
      port = after.substr(1);
      if (port.empty()) return InvalidArgumentError("url: the port is empty");
    }
  } else {
    const size_t colon = authority.rfind(':');
    out.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) {
      port = authority.substr(colon + 1);
      if (port.empty()) return InvalidArgumentError("url: the port is empty");
    }
  }
  if (out.host.empty()) return InvalidArgumentError("url: the host is empty");
  if (out.host.size() > 255) {
    // RFC 1035 section 2.3.4: a domain name is at most 255 octets (an
    // address is far shorter); resolvers refuse longer ones anyway.
    return InvalidArgumentError("url: the host is longer than 255 bytes (RFC 1035 section 2.3.4)");
  }
  for (const char c : out.host) {
    if (c <= ' ' || c > '~' || c == '@' || c == '/' || c == '[' || c == ']') {
      return InvalidArgumentError("url: the host holds a character that is not allowed");
    }
  }
  int64_t value = 0;
  if (!port.empty()) {
    if (!ParseBounded(port, 1, 65535, &value)) {
      return InvalidArgumentError("url: the port must be digits in [1, 65535]");
    }
    out.port = static_cast<int>(value);
  }
  if (!path.empty()) {
    if (!ParseBounded(path, 0, 2147483647, &value)) {
      return InvalidArgumentError("url: the path must be the database number, digits in "
                                  "[0, 2147483647] (as in redis://host:6379/0)");
    }
    out.db = static_cast<int>(value);
  }
  return out;
}

}  // namespace v0
}  // namespace mulligan
