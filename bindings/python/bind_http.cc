// bindings/bind_http.cc — HttpClient and idempotency keys.
//
// HttpClient.request releases the GIL for the whole retry chain (libcurl
// transfers and the waits between attempts), so other Python threads run
// meanwhile; each retry is reported (logged, and the on_retry hook called)
// through mulligan._http._report_retry with the GIL re-acquired, and an
// exception it raises stops the retries (HttpRetryEvent::cancel) and is
// re-raised once Send has returned: it never crosses into C++. Ctrl-C works
// the same way: the request's should_abort hook takes the GIL at most every
// kSignalPollInterval and runs PyErr_CheckSignals(); when a signal handler
// raised (KeyboardInterrupt), the call is aborted and that exception is
// re-raised as itself once Send has returned. Header values cross as bytes
// (ISO-8859-1, as http.client does), so nothing a server sends can make a
// conversion fail.
//
// The asyncio driver of HttpAsyncEngine lives in bind_http_loop.cc; the
// helpers both files use are declared in http_common.h.
#include <algorithm>
#include <chrono>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include <pybind11/stl.h>

#include "bindings.h"
#include "http_common.h"
#include "mulligan/breaker/registry.h"
#include "mulligan/http/async_engine.h"
#include "mulligan/http/client.h"
#include "mulligan/retry/policy.h"

namespace mulligan {
namespace python {

HttpClientOptions MakeOptions(const RetryPolicy* policy, double attempt_timeout,
                              double connect_timeout, bool verify_tls,
                              const std::string& user_agent, bool follow_redirects,
                              int max_redirects, const std::string& ca_bundle, bool strict,
                              std::optional<int> breaker_failure_threshold,
                              double breaker_reset_timeout, bool breaker_per_attempt) {
  HttpClientOptions options;
  if (policy != nullptr) options.retry = policy->options();
  options.attempt_timeout = SecondsToDuration(attempt_timeout, "attempt_timeout");
  options.connect_timeout = SecondsToDuration(connect_timeout, "connect_timeout");
  options.verify_tls = verify_tls;
  options.user_agent = user_agent;
  options.follow_redirects = follow_redirects;
  options.max_redirects = max_redirects;
  options.ca_bundle = ca_bundle;
  options.strict_methods = strict;
  if (breaker_failure_threshold) {
    BreakerRegistryOptions registry;
    registry.breaker.failure_threshold = *breaker_failure_threshold;
    registry.breaker.reset_timeout =
        SecondsToDuration(breaker_reset_timeout, "breaker_reset_timeout");
    registry.breaker.max_reset_timeout =
        std::max(registry.breaker.max_reset_timeout, registry.breaker.reset_timeout);
    options.breakers = std::shared_ptr<BreakerRegistry>(Unwrap(BreakerRegistry::Create(registry)));
    options.breaker_per_attempt = breaker_per_attempt;
  }
  return options;
}

// Every request argument the Python layer passes, in one place.
HttpRequest MakeRequest(std::string method, std::string url, HttpHeaders headers,
                        std::string body, std::optional<std::string> idempotency_key,
                        const RetryPolicy* policy, std::optional<bool> follow_redirects,
                        std::optional<int> max_redirects, std::optional<bool> strict) {
  HttpRequest request;
  request.method = std::move(method);
  request.url = std::move(url);
  request.headers = std::move(headers);
  request.body = std::move(body);
  request.idempotency_key = std::move(idempotency_key);
  request.policy = policy;
  request.follow_redirects = follow_redirects;
  request.max_redirects = max_redirects;
  request.strict_methods = strict;
  return request;
}

// How often a blocking request takes the GIL to run Python signal handlers.
constexpr auto kSignalPollInterval = std::chrono::milliseconds(50);

py::tuple RetryEventTuple(int attempt, Duration delay, ErrorKind error, int status,
                          bool from_retry_after) {
  return py::make_tuple(attempt, DurationToSeconds(delay),
                        error == ErrorKind::kNone ? py::object(py::none())
                                                  : py::object(py::str(ErrorKindName(error))),
                        status, from_retry_after);
}

// Raises mulligan.CircuitOpenError (with key and retry_in) for kCircuitOpen,
// otherwise the exception ThrowStatus maps `status` to.
[[noreturn]] void ThrowCallStatus(const Status& status, const HttpCallInfo& info) {
  if (status.code() == StatusCode::kCircuitOpen) {
    py::object errors = py::module_::import("mulligan._errors");
    const double retry_in = info.retry_in == Duration::max()
                                ? std::numeric_limits<double>::infinity()
                                : DurationToSeconds(info.retry_in);
    // Only (message, retry_in=) is assumed of the class; the HTTP details
    // are set as attributes: key (the origin, also as name) and attempts.
    py::object exc = errors.attr("CircuitOpenError")(Utf8(status.message()),
                                                     py::arg("retry_in") = retry_in);
    exc.attr("key") = Utf8(info.breaker_key);
    exc.attr("name") = Utf8(info.breaker_key);
    exc.attr("attempts") = info.attempts;
    PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc.ptr())), exc.ptr());
    throw py::error_already_set();
  }
  ThrowStatus(status, &info);
}

py::tuple ResponseTuple(HttpResponse&& response) {
  // The header fields cross as one bytes object, "name:value\n" per field
  // (a name is a token, so the first ':' ends it; a value never holds a
  // line feed), which Python splits only when Response.headers is read:
  // one allocation instead of a tuple and two strings per field.
  size_t size = 0;
  for (const auto& [name, value] : response.headers) size += name.size() + value.size() + 2;
  std::string block;
  block.reserve(size);
  for (const auto& [name, value] : response.headers) {
    block.append(name).append(1, ':').append(value).append(1, '\n');
  }
  py::object key = response.idempotency_key.empty() ? py::object(py::none())
                                                     : py::object(Latin1(response.idempotency_key));
  return py::make_tuple(response.status, py::bytes(response.body), response.attempts,
                        DurationToSeconds(response.elapsed), Utf8(response.url), std::move(key),
                        StopReasonName(response.stop_reason), py::bytes(block));
}

namespace {

py::tuple Request(HttpClient& client, std::string method, std::string url,
                     HttpHeaders headers, std::string body,
                     std::optional<std::string> idempotency_key, const RetryPolicy* policy,
                     std::optional<bool> follow_redirects, std::optional<int> max_redirects,
                     std::optional<bool> strict, py::object on_retry) {
  HttpRequest request = MakeRequest(std::move(method), std::move(url), std::move(headers),
                                    std::move(body), std::move(idempotency_key), policy,
                                    follow_redirects, max_redirects, strict);
  // Every retry is reported through mulligan._http._report_retry (which
  // logs it and runs the user's hook `on_retry`, None for none); looked up
  // only when a retry happens. The first exception it raises stops the
  // retries and is re-raised after the call. One pointer is captured, so the
  // std::function needs no allocation.
  struct RetryReport {
    const HttpRequest* request;
    py::object* hook;
    std::optional<py::error_already_set> error;
  } report{&request, &on_retry, std::nullopt};
  request.on_retry = [r = &report](HttpRetryEvent& e) {
    py::gil_scoped_acquire gil;
    try {
      py::module_::import("mulligan._http")
          .attr("_report_retry")(
              RetryEventTuple(e.attempt, e.delay, e.error, e.http_status, e.from_retry_after),
              Utf8(r->request->method), Utf8(r->request->url), *r->hook);
    } catch (py::error_already_set& err) {
      // Stop the retries; the exception is raised once Send returns.
      r->error.emplace(std::move(err));
      e.cancel = true;
    }
  };
  // The exception a signal handler raised (KeyboardInterrupt), re-raised
  // after the call. The hook is polled on this thread, which released the
  // GIL; it re-acquires it only every kSignalPollInterval.
  std::optional<py::error_already_set> signal_error;
  auto last_check = std::chrono::steady_clock::now();
  request.should_abort = [&signal_error, &last_check]() -> bool {
    if (signal_error) return true;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_check < kSignalPollInterval) return false;
    last_check = now;
    py::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) {
      signal_error.emplace();  // fetches the pending exception
      return true;
    }
    return false;
  };
  HttpCallInfo info;
  std::optional<Result<HttpResponse>> result;
  {
    // The arguments (client, policy, on_retry) are referenced by the call
    // frame, so they stay alive while the GIL is released.
    py::gil_scoped_release release;
    result.emplace(client.Send(request, &info));
  }
  if (signal_error) throw std::move(*signal_error);
  if (report.error) throw std::move(*report.error);
  if (!result->ok()) ThrowCallStatus(result->status(), info);
  return ResponseTuple(std::move(*result).value());
}

}  // namespace

void BindHttp(py::module_& m) {
  m.def("new_idempotency_key", &NewIdempotencyKey,
        "Returns a fresh random (version 4) UUID from the OS CSPRNG.");
  m.def("http_origin", &HttpOrigin, py::arg("url"),
        "Returns scheme://host:port of an http(s) URL, or None.");

  auto make_client = [](const RetryPolicy* policy, double attempt_timeout, double connect_timeout,
                        bool verify_tls, const std::string& user_agent, bool follow_redirects,
                        int max_redirects, const std::string& ca_bundle, bool strict,
                        std::optional<int> breaker_failure_threshold,
                        double breaker_reset_timeout, bool breaker_per_attempt) {
    return Unwrap(HttpClient::Create(
        MakeOptions(policy, attempt_timeout, connect_timeout, verify_tls, user_agent,
                    follow_redirects, max_redirects, ca_bundle, strict,
                    breaker_failure_threshold, breaker_reset_timeout, breaker_per_attempt)));
  };
  py::class_<HttpClient, std::unique_ptr<HttpClient>>(
      m, "HttpClient", "A resilient HTTP client; request() may be called from many threads.")
      .def(py::init(make_client), py::kw_only(), py::arg("policy") = py::none(),
           py::arg("attempt_timeout") = 30.0, py::arg("connect_timeout") = 10.0,
           py::arg("verify_tls") = true, py::arg("user_agent") = "mulligan",
           py::arg("follow_redirects") = false, py::arg("max_redirects") = 10,
           py::arg("ca_bundle") = "", py::arg("strict") = false,
           py::arg("breaker_failure_threshold") = py::none(),
           py::arg("breaker_reset_timeout") = 30.0, py::arg("breaker_per_attempt") = false)
      .def("request", &Request, py::arg("method"), py::arg("url"), py::arg("headers"),
           py::arg("body"), py::arg("idempotency_key") = py::none(),
           py::arg("policy") = py::none(), py::arg("follow_redirects") = py::none(),
           py::arg("max_redirects") = py::none(), py::arg("strict") = py::none(),
           py::arg("on_retry") = py::none());
}

}  // namespace python
}  // namespace mulligan
