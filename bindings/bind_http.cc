// bindings/bind_http.cc — HttpClient, HttpResponse and idempotency keys.
//
// HttpClient.request releases the GIL for the whole retry chain (libcurl
// transfers and the waits between attempts), so other Python threads run
// meanwhile. Header values cross as bytes (ISO-8859-1, as http.client does),
// so nothing a server sends can make a conversion fail.
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include <pybind11/stl.h>

#include "bindings.h"
#include "mulligan/http_client.h"
#include "mulligan/retry_policy.h"

namespace mulligan {
namespace python {
namespace {

std::unique_ptr<HttpClient> MakeClient(const RetryPolicy* policy, double attempt_timeout,
                                       double connect_timeout, bool verify_tls,
                                       const std::string& user_agent) {
  HttpClientOptions options;
  if (policy != nullptr) options.retry = policy->options();
  options.attempt_timeout = SecondsToDuration(attempt_timeout, "attempt_timeout");
  options.connect_timeout = SecondsToDuration(connect_timeout, "connect_timeout");
  options.verify_tls = verify_tls;
  options.user_agent = user_agent;
  return Unwrap(HttpClient::Create(options));
}

HttpResponse Request(HttpClient& client, std::string method, std::string url,
                     HttpHeaders headers, std::string body,
                     std::optional<std::string> idempotency_key, const RetryPolicy* policy) {
  HttpRequest request;
  request.method = std::move(method);
  request.url = std::move(url);
  request.headers = std::move(headers);
  request.body = std::move(body);
  request.idempotency_key = std::move(idempotency_key);
  request.policy = policy;
  HttpCallInfo info;
  std::optional<Result<HttpResponse>> result;
  {
    // The arguments (client, policy) are referenced by the call frame, so
    // they stay alive while the GIL is released.
    py::gil_scoped_release release;
    result.emplace(client.Send(request, &info));
  }
  if (!result->ok()) ThrowStatus(result->status(), &info);
  return std::move(*result).value();
}

}  // namespace

void BindHttp(py::module_& m) {
  m.def("new_idempotency_key", &NewIdempotencyKey,
        "Returns a fresh random (version 4) UUID from the OS CSPRNG.");

  py::class_<HttpResponse>(m, "HttpResponse", "The final response of a call.")
      .def_property_readonly("status", [](const HttpResponse& r) { return r.status; })
      .def_property_readonly("headers",
                             [](const HttpResponse& r) {
                               py::list out;
                               for (const auto& [name, value] : r.headers) {
                                 out.append(py::make_tuple(Latin1(name), Latin1(value)));
                               }
                               return out;
                             })
      .def_property_readonly("body", [](const HttpResponse& r) { return py::bytes(r.body); })
      .def_property_readonly("attempts", [](const HttpResponse& r) { return r.attempts; })
      .def_property_readonly("elapsed",
                             [](const HttpResponse& r) { return DurationToSeconds(r.elapsed); })
      .def_property_readonly("stop_reason",
                             [](const HttpResponse& r) { return StopReasonName(r.stop_reason); })
      .def_property_readonly("idempotency_key",
                             [](const HttpResponse& r) -> std::optional<py::str> {
                               if (r.idempotency_key.empty()) return std::nullopt;
                               return Latin1(r.idempotency_key);
                             })
      .def_property_readonly("url", [](const HttpResponse& r) { return Utf8(r.url); });

  py::class_<HttpClient, std::unique_ptr<HttpClient>>(
      m, "HttpClient", "A resilient HTTP client; request() may be called from many threads.")
      .def(py::init(&MakeClient), py::kw_only(), py::arg("policy") = py::none(),
           py::arg("attempt_timeout") = 30.0, py::arg("connect_timeout") = 10.0,
           py::arg("verify_tls") = true, py::arg("user_agent") = "mulligan")
      .def("request", &Request, py::arg("method"), py::arg("url"), py::arg("headers"),
           py::arg("body"), py::arg("idempotency_key") = py::none(),
           py::arg("policy") = py::none());
}

}  // namespace python
}  // namespace mulligan
