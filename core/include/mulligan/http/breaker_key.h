// mulligan/http/breaker_key.h — which circuit breaker guards an HTTP request.
//
// The HTTP clients key their breakers by the request's origin by default
// (DESIGN.md section 4, "breaker registry"), so one bad host does not open
// the circuit for the others. Some services fail per endpoint instead: the
// guides this project began from keep one breaker per URL. BreakerKeyOptions
// chooses; HttpClient and HttpAsyncEngine (and through them the C ABI and
// Python's Client and AsyncClient) all call HttpBreakerKey.

#ifndef MULLIGAN_HTTP_BREAKER_KEY_H_
#define MULLIGAN_HTTP_BREAKER_KEY_H_

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mulligan/base/status.h"

namespace mulligan {
inline namespace v0 {

// What a request's breaker key is made of. Values are pinned (they cross
// the C ABI); append only.
enum class BreakerKeyKind : int {
  // "scheme://host:port" (HttpOrigin): one breaker per server. The default.
  kOrigin = 0,
  // The host name alone, lower case ("api.example.com"): one breaker for
  // every scheme and port of a host.
  kHost = 1,
  // The origin and the URL's path, without query or fragment
  // ("https://api.example.com:443/users/42"): one breaker per endpoint URL.
  // Beware unbounded paths (ids): the registry's max_breakers bounds them.
  kPath = 2,
  // The origin and the first of `templates` that matches the path
  // ("https://api.example.com:443/users/{id}"), else the origin alone.
  kPathTemplate = 3,
  // Whatever `function` returns for the request; an empty result means the
  // origin.
  kFunction = 4,
};

// Returns a request's breaker key from its method and absolute URL.
// Called on the thread that starts the call (the caller's for HttpClient,
// the engine's for HttpAsyncEngine); must be thread-safe and must not throw.
using BreakerKeyFunction = std::function<std::string(std::string_view method, std::string_view url)>;

// Plain options; validated by ValidateBreakerKey (HttpClient::Create does).
struct BreakerKeyOptions {
  BreakerKeyKind kind = BreakerKeyKind::kOrigin;
  // kPathTemplate only: the templates, tried in order. Syntax: a path of
  // '/'-separated segments starting with '/'; a segment "{name}" (any
  // non-empty name without '/', '{' or '}') matches exactly one non-empty
  // segment, "{name...}" as the last segment matches one or more segments;
  // any other segment matches itself exactly (case-sensitive, no decoding).
  // A trailing '/' is a segment of its own: "/users/{id}" does not match
  // "/users/42/". At least one template for kPathTemplate.
  std::vector<std::string> templates;
  // kFunction only: not empty.
  BreakerKeyFunction function;
};

// Returns OK, or kInvalidArgument naming the problem: a kind out of range,
// kPathTemplate without templates or with a malformed one ("breaker key
// template '/users/{' is malformed: ..."), kFunction without a function.
Status ValidateBreakerKey(const BreakerKeyOptions& options);

// Returns true when `path` (a URL path, starting with '/') matches
// `path_template` (syntax above). REQUIRES: a valid template.
bool MatchPathTemplate(std::string_view path_template, std::string_view path);

// Returns the breaker key of a request, or nullopt for a URL whose origin
// cannot be worked out (the call then fails on its URL anyway).
// REQUIRES: ValidateBreakerKey(options) is OK.
std::optional<std::string> HttpBreakerKey(const BreakerKeyOptions& options,
                                          std::string_view method, std::string_view url);

}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_HTTP_BREAKER_KEY_H_
