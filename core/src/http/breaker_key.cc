// core/src/http/breaker_key.cc — HttpBreakerKey: the key of a request's
// circuit breaker (origin, host, path, path template or a function). The
// template rules (ValidateBreakerKey, MatchPathTemplate) are in
// breaker_key_template.cc.
#include "mulligan/http/breaker_key.h"

#include <curl/curl.h>

#include <string>
#include <utility>

#include "internal/ascii.h"
#include "mulligan/http/client.h"

namespace mulligan {
inline namespace v0 {

namespace {

// The host name (lower case) and the path of an absolute URL.
bool HostAndPath(std::string_view url, std::string* host, std::string* path) {
  CURLU* parsed = curl_url();
  if (parsed == nullptr) return false;
  const std::string copy(url);
  char* h = nullptr;
  char* p = nullptr;
  const bool ok = curl_url_set(parsed, CURLUPART_URL, copy.c_str(), 0) == CURLUE_OK &&
                  curl_url_get(parsed, CURLUPART_HOST, &h, 0) == CURLUE_OK &&
                  curl_url_get(parsed, CURLUPART_PATH, &p, 0) == CURLUE_OK && h != nullptr &&
                  p != nullptr;
  if (ok) {
    *host = h;
    for (char& c : *host) c = internal::AsciiLower(c);
    *path = p;
  }
  curl_free(h);
  curl_free(p);
  curl_url_cleanup(parsed);
  return ok;
}

}  // namespace

std::optional<std::string> HttpBreakerKey(const BreakerKeyOptions& options,
                                          std::string_view method, std::string_view url) {
  std::optional<std::string> origin = HttpOrigin(url);
  if (!origin) return std::nullopt;
  switch (options.kind) {
    case BreakerKeyKind::kOrigin:
      return origin;
    case BreakerKeyKind::kFunction: {
      std::string key = options.function ? options.function(method, url) : std::string();
      if (key.empty()) return origin;
      return key;
    }
    case BreakerKeyKind::kHost:
    case BreakerKeyKind::kPath:
    case BreakerKeyKind::kPathTemplate:
      break;
  }
  std::string host, path;
  if (!HostAndPath(url, &host, &path)) return origin;
  if (options.kind == BreakerKeyKind::kHost) return host;
  if (options.kind == BreakerKeyKind::kPath) return *origin + path;
  for (const std::string& t : options.templates) {
    if (MatchPathTemplate(t, path)) return *origin + t;
  }
  return origin;
}

}  // namespace v0
}  // namespace mulligan
