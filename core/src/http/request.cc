// core/src/http/request.cc — request validation, the URL parse cache, the
// header and method helpers of http/client.h, origins and idempotency keys.

#include "request.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <optional>
#include <random>
#include <string>
#include <string_view>

#include "internal/ascii.h"
#include "mulligan/http/redact.h"
#include "mulligan/idempotency/store.h"
#include "mulligan/retry/retry_after.h"

namespace mulligan {
inline namespace v0 {
namespace internal {

bool IsSafeFieldValue(std::string_view s) {
  return s.find_first_of(std::string_view("\r\n\0", 3)) == std::string_view::npos;
}

Status CheckIdempotencyKey(std::string_view key) {
  // The rule of the server side (ParseIdempotencyKey, which mulligan's
  // idempotency middleware applies to the field): the key is sent bare, so
  // it must parse back to itself -- no surrounding spaces, no leading quote.
  Result<std::string> parsed = ParseIdempotencyKey(key);
  if (!parsed.ok()) {
    return InvalidArgumentError("invalid idempotency key: " + parsed.status().message() +
                                " (an idempotency server would refuse it)");
  }
  if (parsed.value() != key) {
    return InvalidArgumentError(
        "invalid idempotency key: a server would read it as a different key (no leading or "
        "trailing spaces, no leading quote)");
  }
  return OkStatus();
}

std::string PercentEncodeNonAscii(std::string_view url) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  const size_t scheme_end = url.find("://");
  const size_t authority = scheme_end == std::string_view::npos ? 0 : scheme_end + 3;
  const size_t path = std::min(url.find_first_of("/?#", authority), url.size());
  // The host is what follows the authority's last '@'.
  const size_t at = url.substr(authority, path - authority).rfind('@');
  const size_t host = at == std::string_view::npos ? authority : authority + at + 1;
  std::string out;
  out.reserve(url.size() + 16);
  for (size_t i = 0; i < url.size(); ++i) {
    const auto u = static_cast<unsigned char>(url[i]);
    if (u < 0x80 || (i >= host && i < path)) {
      out += url[i];
    } else {
      out += '%';
      out += kHex[u >> 4];
      out += kHex[u & 0xf];
    }
  }
  return out;
}

bool IsStrictlySafeMethod(std::string_view method) {
  return method == "GET" || method == "HEAD" || method == "OPTIONS";
}


Status CheckHeaderField(const std::string& name, const std::string& value) {
  if (!IsToken(name)) {
    return InvalidArgumentError("invalid header name \"" + name + "\": must be a token");
  }
  if (IsClientManagedHeader(name)) {
    return InvalidArgumentError("header \"" + name +
                                "\" is set by the client itself and must not be given "
                                "(Content-Length, Transfer-Encoding, TE and Upgrade are "
                                "managed by the client)");
  }
  if (!IsSafeFieldValue(value)) {
    return InvalidArgumentError("invalid value of header \"" + name +
                                "\": contains CR, LF or NUL");
  }
  if (EqualsIgnoreCase(name, "Idempotency-Key")) {
    Result<std::string> parsed = ParseIdempotencyKey(value);
    if (!parsed.ok()) {
      return InvalidArgumentError("invalid Idempotency-Key header: " + parsed.status().message() +
                                  " (an idempotency server would refuse it)");
    }
  }
  return OkStatus();
}

Status ValidateRequest(const HttpRequest& request, ParsedUrl* parsed_url) {
  if (!IsToken(request.method)) {
    return InvalidArgumentError("invalid HTTP method \"" + request.method +
                                "\": must be a non-empty token");
  }
  const std::string& url = request.url;
  if (url.empty()) return InvalidArgumentError("empty URL");
  if (!StartsWithIgnoreCase(url, "http://") && !StartsWithIgnoreCase(url, "https://")) {
    return InvalidArgumentError("invalid URL \"" + RedactUrl(url) +
                                "\": must start with http:// or https://");
  }
  for (char c : url) {
    auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7f) {
      return InvalidArgumentError("invalid URL \"" + RedactUrl(url) +
                                  "\": contains a space or control character");
    }
  }
  // Parsed once here and handed to libcurl as a CURLU (CURLOPT_CURLU), so
  // libcurl does not parse the URL string again for every transfer (about
  // a seventh of a small GET's instructions in libcurl 7.88). Callers often
  // send to the same URL again and again: the last URL this thread parsed
  // is kept, and shared with the calls that use it.
  thread_local std::string last_url;
  thread_local ParsedUrl last_parsed;
  if (url != last_url || !last_parsed) {
    ParsedUrl parsed(curl_url(), &curl_url_cleanup);
    if (!parsed) return InternalError("curl_url() failed");
    const bool ascii = std::all_of(url.begin(), url.end(),
                                   [](char c) { return static_cast<unsigned char>(c) < 0x80; });
    const std::string encoded = ascii ? std::string() : PercentEncodeNonAscii(url);
    CURLUcode rc =
        curl_url_set(parsed.get(), CURLUPART_URL, ascii ? url.c_str() : encoded.c_str(), 0);
    char* host = nullptr;
    if (rc == CURLUE_OK) rc = curl_url_get(parsed.get(), CURLUPART_HOST, &host, 0);
    const bool has_host = rc == CURLUE_OK && host != nullptr && host[0] != '\0';
    curl_free(host);
    if (!has_host) {
      return InvalidArgumentError("invalid URL \"" + RedactUrl(url) + "\": " +
                                  (rc == CURLUE_OK ? std::string("no host")
                                                   : std::string(curl_url_strerror(rc))));
    }
    last_parsed = std::move(parsed);
    last_url = url;
  }
  *parsed_url = last_parsed;
  for (const auto& [name, value] : request.headers) {
    Status field = CheckHeaderField(name, value);
    if (!field.ok()) return field;
  }
  if (request.idempotency_key) {
    const std::string& key = *request.idempotency_key;
    Status key_status = CheckIdempotencyKey(key);
    if (!key_status.ok()) return key_status;
    std::optional<std::string> in_headers = FindHeader(request.headers, "Idempotency-Key");
    if (in_headers && *in_headers != key) {
      return InvalidArgumentError("idempotency_key \"" + key +
                                  "\" conflicts with the Idempotency-Key header \"" +
                                  *in_headers + "\"");
    }
  }
  return OkStatus();
}

const std::string* CachedOrigin(const std::string& url) {
  thread_local std::string last_url;
  thread_local std::optional<std::string> last_origin;
  thread_local bool valid = false;
  if (!valid || url != last_url) {
    last_origin = HttpOrigin(url);
    last_url = url;
    valid = true;
  }
  return last_origin ? &*last_origin : nullptr;
}

}  // namespace internal

namespace {

// Fills `out` from the operating system's CSPRNG: getrandom(2), else
// /dev/urandom. Returns false when neither works.
bool FillRandom(unsigned char* out, size_t size) {
  size_t got = 0;
  while (got < size) {
    ssize_t n = getrandom(out + got, size - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    got += static_cast<size_t>(n);
  }
  if (got == size) return true;
  // getrandom(2) unavailable (ENOSYS on very old kernels, or a seccomp
  // filter): fall back to the same CSPRNG through /dev/urandom.
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  got = 0;
  while (got < size) {
    ssize_t n = read(fd, out + got, size - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  close(fd);
  return got == size;
}

}  // namespace

using internal::EqualsIgnoreCase;

std::optional<std::string> FindHeader(const HttpHeaders& headers, std::string_view name) {
  for (const auto& field : headers) {
    if (EqualsIgnoreCase(field.first, name)) return field.second;
  }
  return std::nullopt;
}

bool IsClientManagedHeader(std::string_view name) {
  return EqualsIgnoreCase(name, "Content-Length") || EqualsIgnoreCase(name, "Transfer-Encoding") ||
         EqualsIgnoreCase(name, "TE") || EqualsIgnoreCase(name, "Upgrade");
}

const char* HttpMethodRuleName(HttpMethodRule rule) {
  switch (rule) {
    case HttpMethodRule::kIdempotent: return "idempotent";
    case HttpMethodRule::kStrict: return "strict";
    case HttpMethodRule::kSafe: return "safe";
    case HttpMethodRule::kAll: return "all";
    case HttpMethodRule::kAllowed: return "allowed";
  }
  return "unknown";
}

bool HttpMethodReplaySafe(HttpMethodRule rule, const std::vector<std::string>& allowed,
                          std::string_view method, bool keyed) {
  switch (rule) {
    case HttpMethodRule::kIdempotent: return IsIdempotentMethod(method) || keyed;
    case HttpMethodRule::kStrict: return internal::IsStrictlySafeMethod(method);
    case HttpMethodRule::kSafe: return internal::IsStrictlySafeMethod(method) || keyed;
    case HttpMethodRule::kAll: return true;
    case HttpMethodRule::kAllowed:
      for (const std::string& m : allowed) {
        if (m == method) return true;
      }
      return false;
  }
  return false;
}

Outcome HttpResponseOutcome(int status, std::optional<std::string_view> retry_after, bool keyed,
                            WallTime now) {
  std::optional<Duration> hint;
  if (retry_after) hint = ParseRetryAfter(*retry_after, now);
  Outcome outcome = Outcome::Http(status, hint);
  // An idempotency store answers 409 with Retry-After while the first
  // request with this key is still running (DESIGN.md section 5): for a
  // keyed request that means "try again after the hint", not a conflict.
  if (status == 409 && hint && keyed) {
    outcome = Outcome::Failure(/*retryable=*/true);
    outcome.retry_after = hint;
  }
  return outcome;
}

bool IsIdempotentMethod(std::string_view method) {
  return method == "GET" || method == "HEAD" || method == "OPTIONS" || method == "TRACE" ||
         method == "PUT" || method == "DELETE";
}

std::string NewIdempotencyKey() {
  std::array<unsigned char, 16> b{};
  if (!FillRandom(b.data(), b.size())) {
    // No OS randomness at all: std::random_device is the last resort (it is
    // the same CSPRNG on glibc when that works at all).
    std::random_device rd;
    for (auto& byte : b) byte = static_cast<unsigned char>(rd());
  }
  b[6] = static_cast<unsigned char>((b[6] & 0x0f) | 0x40);  // version 4
  b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80);  // variant 10
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(36);
  for (size_t i = 0; i < b.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    out += kHex[b[i] >> 4];
    out += kHex[b[i] & 0x0f];
  }
  return out;
}

std::optional<std::string> HttpOrigin(std::string_view url) {
  CURLU* parsed = curl_url();
  if (parsed == nullptr) return std::nullopt;
  std::string copy(url);
  std::optional<std::string> origin;
  char* scheme = nullptr;
  char* host = nullptr;
  char* port = nullptr;
  if (curl_url_set(parsed, CURLUPART_URL, copy.c_str(), 0) == CURLUE_OK &&
      curl_url_get(parsed, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
      curl_url_get(parsed, CURLUPART_HOST, &host, 0) == CURLUE_OK &&
      curl_url_get(parsed, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK &&
      host != nullptr && host[0] != '\0') {
    std::string s = std::string(scheme) + "://" + host + ":" + port;
    for (char& c : s) c = internal::AsciiLower(c);
    origin = std::move(s);
  }
  curl_free(scheme);
  curl_free(host);
  curl_free(port);
  curl_url_cleanup(parsed);
  return origin;
}

}  // namespace v0
}  // namespace mulligan
