// bindings/python/http_common.h — helpers shared by bind_http.cc (HttpClient) and
// bind_http_loop.cc (the asyncio driver of HttpAsyncEngine). All of them
// require the GIL.

#ifndef MULLIGAN_BINDINGS_HTTP_COMMON_H_
#define MULLIGAN_BINDINGS_HTTP_COMMON_H_

#include <optional>
#include <string>
#include <vector>

#include "bindings.h"
#include "mulligan/http/async_engine.h"
#include "mulligan/http/client.h"
#include "mulligan/retry/policy.h"

namespace mulligan {
namespace python {

// The client options from the keyword arguments of HttpClient and
// HttpLoopDriver (seconds as floats; `policy` may be null for the defaults).
// Raises ValueError for a bad duration; the core validates the rest.
HttpClientOptions MakeOptions(const RetryPolicy* policy, double attempt_timeout,
                              double connect_timeout, bool verify_tls,
                              const std::string& user_agent, bool follow_redirects,
                              int max_redirects, const std::string& ca_bundle, bool strict,
                              std::optional<int> breaker_failure_threshold,
                              double breaker_reset_timeout, bool breaker_per_attempt);

// Sets the overload options of a client (issue 14): `budget` is None (no
// budget), "per_origin" (the default A6 bucket per origin) or a
// _core.RetryBudget shared by every origin; `throttle`, `bulkhead` and
// `rate_limiter` are None or the _core objects; max_connections >= 0.
// Raises ValueError/TypeError naming the option.
void SetLimits(HttpClientOptions& options, const py::object& budget, const py::object& throttle,
               const py::object& bulkhead, const py::object& rate_limiter, int max_connections);
// Sets options.adaptive_rate from None or a _core.AdaptiveRate (TypeError
// otherwise). (Added in 0.4.)
void SetAdaptiveRate(HttpClientOptions& options, const py::object& adaptive_rate);

// Every request argument the Python layer passes, in one place.
// Sets what the client keys its breakers by: "origin", "host", "path" or
// "path_template" (with `templates`). Raises ValueError for anything else
// (the engine's ValidateBreakerKey checks the templates at creation).
// Sets the method rule: "idempotent", "strict", "safe", "all" or "allowed"
// (allowed_methods then lists the methods). ValueError for another name.
void SetMethodRule(HttpClientOptions& options, const std::string& methods,
                   std::vector<std::string> allowed_methods);
void SetBreakerKey(HttpClientOptions& options, const std::string& kind,
                   std::vector<std::string> templates);
// With a dict of breaker options (BreakerOptionsFromDict; a named breaker of
// the configuration file), gives the client per-key breakers with every one
// of those options, replacing the failure_threshold / reset_timeout pair of
// MakeOptions. None leaves `options` as it is.
void SetBreakerOptions(HttpClientOptions& options, const py::object& breaker_options,
                       bool breaker_per_attempt);

HttpRequest MakeRequest(std::string method, std::string url, HttpHeaders headers,
                        std::string body, std::optional<std::string> idempotency_key,
                        const RetryPolicy* policy, std::optional<bool> follow_redirects,
                        std::optional<int> max_redirects, std::optional<bool> strict);

// (attempt, delay in seconds, error kind name or None, HTTP status,
// from_retry_after): what mulligan._http.events.RetryEvent is built from.
py::tuple RetryEventTuple(int attempt, Duration delay, ErrorKind error, int status,
                          bool from_retry_after);

// (status, body, attempts, elapsed seconds, url, idempotency_key or None,
// stop_reason, header block, use_fallback): one tuple of plain objects, so that
// mulligan._http.response._response_from needs no further call into C++. The header
// block is bytes holding "name:value\n" per field, in order (split by
// mulligan._http.headers.Headers on first use).
py::tuple ResponseTuple(HttpResponse&& response);

// Raises mulligan.CircuitOpenError (with key, name, retry_in and attempts)
// for kCircuitOpen, otherwise what ThrowStatus maps `status` to.
[[noreturn]] void ThrowCallStatus(const Status& status, const HttpCallInfo& info);

}  // namespace python
}  // namespace mulligan

#endif  // MULLIGAN_BINDINGS_HTTP_COMMON_H_
