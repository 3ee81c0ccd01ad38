// bindings/python/bind_http.cc — HttpClient, its stepped calls, and
// idempotency keys.
//
// HttpClient.request runs attempts with the GIL released, so other Python
// threads run meanwhile. When the pipeline decides a retry, it returns an
// HttpCall instead of sleeping in C++: the Python driver reports the retry
// (logs, hooks), waits with time.sleep (or mulligan.testing's FakeClock) and
// calls resume(), so Ctrl-C, hooks that raise and the testing switches all
// act in Python, where they belong. During a transfer, Ctrl-C is polled by
// the request's should_abort hook (SignalPoll), which re-raises
// KeyboardInterrupt as itself once the attempt has returned. Header values
// cross as bytes (ISO-8859-1, as http.client does), so nothing a server
// sends can make a conversion fail.
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
#include "http/exchange.h"
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

void SetBreakerKey(HttpClientOptions& options, const std::string& kind,
                   std::vector<std::string> templates) {
  if (kind == "origin") {
    options.breaker_key.kind = BreakerKeyKind::kOrigin;
  } else if (kind == "host") {
    options.breaker_key.kind = BreakerKeyKind::kHost;
  } else if (kind == "path") {
    options.breaker_key.kind = BreakerKeyKind::kPath;
  } else if (kind == "path_template") {
    options.breaker_key.kind = BreakerKeyKind::kPathTemplate;
  } else {
    ThrowStatus(InvalidArgumentError(
        "breaker_key must be 'origin', 'host', 'path' or 'path_template', got '" + kind + "'"));
  }
  options.breaker_key.templates = std::move(templates);
}

void SetBreakerOptions(HttpClientOptions& options, const py::object& breaker_options,
                       bool breaker_per_attempt) {
  if (breaker_options.is_none()) return;
  BreakerRegistryOptions registry;
  registry.breaker = BreakerOptionsFromDict(breaker_options.cast<py::dict>());
  options.breakers = std::shared_ptr<BreakerRegistry>(Unwrap(BreakerRegistry::Create(registry)));
  options.breaker_per_attempt = breaker_per_attempt;
}

void SetMethodRule(HttpClientOptions& options, const std::string& methods,
                   std::vector<std::string> allowed_methods) {
  for (HttpMethodRule rule : {HttpMethodRule::kIdempotent, HttpMethodRule::kStrict,
                              HttpMethodRule::kSafe, HttpMethodRule::kAll,
                              HttpMethodRule::kAllowed}) {
    if (methods == HttpMethodRuleName(rule)) {
      options.method_rule = rule;
      options.allowed_methods = std::move(allowed_methods);
      return;
    }
  }
  ThrowStatus(InvalidArgumentError(
      "methods must be 'idempotent', 'strict', 'safe', 'all' or 'allowed', got '" + methods +
      "'"));
}

void SetLimits(HttpClientOptions& options, const py::object& budget, const py::object& throttle,
               const py::object& bulkhead, const py::object& rate_limiter, int max_connections) {
  if (budget.is_none()) {
    options.retry_budget.reset();
  } else if (py::isinstance<py::str>(budget)) {
    if (budget.cast<std::string>() != "per_origin") {
      ThrowStatus(InvalidArgumentError("budget must be 'per_origin', None or a RetryBudget, got '" +
                                       budget.cast<std::string>() + "'"));
    }
  } else if (py::isinstance<RetryBudget>(budget)) {
    options.shared_budget = budget.cast<std::shared_ptr<RetryBudget>>();
  } else {
    throw py::type_error("budget must be 'per_origin', None or a RetryBudget");
  }
  if (!throttle.is_none()) {
    if (!py::isinstance<AdaptiveThrottle>(throttle)) {
      throw py::type_error("throttle must be an AdaptiveThrottle or None");
    }
    options.throttle = throttle.cast<std::shared_ptr<AdaptiveThrottle>>();
  }
  if (!bulkhead.is_none()) {
    if (!py::isinstance<Bulkhead>(bulkhead)) throw py::type_error("bulkhead must be a Bulkhead or None");
    options.bulkhead = bulkhead.cast<std::shared_ptr<Bulkhead>>();
  }
  if (!rate_limiter.is_none()) {
    if (!py::isinstance<RateLimiter>(rate_limiter)) {
      throw py::type_error("rate_limiter must be a RateLimiter or None");
    }
    options.rate_limiter = rate_limiter.cast<std::shared_ptr<RateLimiter>>();
  }
  options.max_connections = max_connections;
}

void SetAdaptiveRate(HttpClientOptions& options, const py::object& adaptive_rate) {
  if (adaptive_rate.is_none()) return;
  if (!py::isinstance<AdaptiveRate>(adaptive_rate)) {
    throw py::type_error("adaptive_rate must be an AdaptiveRate or None");
  }
  options.adaptive_rate = adaptive_rate.cast<std::shared_ptr<AdaptiveRate>>();
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
    exc.attr("use_fallback") = info.use_fallback;
    RaiseError(std::move(exc));
  }
  py::object exc = StatusError(status, &info);
  if (status.code() == StatusCode::kRateLimited) {
    // The client's limiter: one bucket per origin.
    exc.attr("retry_in") = DurationToSeconds(info.retry_in);
  }
  // Whether the request's fallback answers this error: the pipeline's say
  // (a give-up on retryable failures), never the driver's own rule.
  if (py::isinstance(exc, py::module_::import("mulligan._errors").attr("MulliganError"))) {
    exc.attr("use_fallback") = info.use_fallback;
  }
  RaiseError(std::move(exc));
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
                        StopReasonName(response.stop_reason), py::bytes(block),
                        response.use_fallback);
}

namespace {

// Polls for Ctrl-C while a transfer runs with the GIL released: the
// request's should_abort hook takes the GIL at most every
// kSignalPollInterval and runs PyErr_CheckSignals(); the exception a signal
// handler raised (KeyboardInterrupt) is kept and re-raised as itself once
// the attempt has returned.
struct SignalPoll {
  std::optional<py::error_already_set> error;
  std::chrono::steady_clock::time_point last_check = std::chrono::steady_clock::now();

  bool operator()() {
    if (error) return true;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_check < kSignalPollInterval) return false;
    last_check = now;
    py::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) {
      error.emplace();  // fetches the pending exception
      return true;
    }
    return false;
  }
};

// One HTTP call stepped from Python (_core.HttpCall): the Python driver
// waits between attempts itself (time.sleep, or mulligan.testing's
// FakeClock), so a retry returns here instead of sleeping in C++.
struct PyHttpCall {
  std::unique_ptr<HttpClientCall> call;
  std::unique_ptr<SignalPoll> poll;
  // Borrowed by the core call, so kept alive with it.
  py::object client;
  py::object policy;
  py::object clock;
  Decision decision;  // the retry just decided
};

// Runs the next attempt of `self` (a PyHttpCall) with the GIL released.
// Returns `self` when a retry is decided (the caller waits `delay` and calls
// resume()), the response tuple when the call is over; raises what the call
// ended with.
py::object Step(py::object self) {
  PyHttpCall& h = self.cast<PyHttpCall&>();
  if (!h.call) throw std::runtime_error("this HTTP call is over");
  Decision decision;
  {
    py::gil_scoped_release release;
    decision = h.call->Attempt();
  }
  if (decision.retry() && !h.poll->error) {
    h.decision = decision;
    return self;
  }
  HttpCallInfo info;
  Result<HttpResponse> result = h.call->Finish(&info);
  h.call.reset();
  if (h.poll->error) throw std::move(*h.poll->error);
  if (!result.ok()) ThrowCallStatus(result.status(), info);
  return ResponseTuple(std::move(result).value());
}

py::object Request(py::object client_obj, std::string method, std::string url,
                   HttpHeaders headers, std::string body,
                   std::optional<std::string> idempotency_key, py::object policy_obj,
                   std::optional<bool> follow_redirects, std::optional<int> max_redirects,
                   std::optional<bool> strict, bool fallback, int max_attempts, bool no_wait,
                   py::object clock_obj, std::string breaker_key) {
  HttpClient& client = client_obj.cast<HttpClient&>();
  const RetryPolicy* policy =
      policy_obj.is_none() ? nullptr : &policy_obj.cast<const RetryPolicy&>();
  HttpRequest request = MakeRequest(std::move(method), std::move(url), std::move(headers),
                                    std::move(body), std::move(idempotency_key), policy,
                                    follow_redirects, max_redirects, strict);
  request.fallback = fallback;
  request.max_attempts = max_attempts < 0 ? 0 : max_attempts;
  request.no_wait = no_wait;
  request.breaker_key = std::move(breaker_key);
  if (!clock_obj.is_none()) request.clock = clock_obj.cast<FakeClock*>();
  auto poll = std::make_unique<SignalPoll>();
  request.should_abort = [p = poll.get()] { return (*p)(); };
  Result<std::unique_ptr<HttpClientCall>> call = client.Begin(std::move(request));
  if (!call.ok()) ThrowStatus(call.status());
  auto holder = std::make_unique<PyHttpCall>();
  holder->call = std::move(call).value();
  holder->poll = std::move(poll);
  holder->client = std::move(client_obj);
  holder->policy = std::move(policy_obj);
  holder->clock = std::move(clock_obj);
  return Step(py::cast(std::move(holder)));
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
                        double breaker_reset_timeout, bool breaker_per_attempt,
                        const std::string& breaker_key,
                        std::vector<std::string> breaker_key_templates,
                        const py::object& breaker_options, const std::string& methods,
                        std::vector<std::string> allowed_methods, const py::object& budget,
                        const py::object& throttle, const py::object& bulkhead,
                        const py::object& rate_limiter, int max_connections,
                        const py::object& adaptive_rate) {
    HttpClientOptions options =
        MakeOptions(policy, attempt_timeout, connect_timeout, verify_tls, user_agent,
                    follow_redirects, max_redirects, ca_bundle, strict,
                    breaker_failure_threshold, breaker_reset_timeout, breaker_per_attempt);
    SetBreakerKey(options, breaker_key, std::move(breaker_key_templates));
    SetBreakerOptions(options, breaker_options, breaker_per_attempt);
    SetMethodRule(options, methods, std::move(allowed_methods));
    SetLimits(options, budget, throttle, bulkhead, rate_limiter, max_connections);
    SetAdaptiveRate(options, adaptive_rate);
    return Unwrap(HttpClient::Create(options));
  };
  // The one validation of the client options, for a front door that makes its
  // engine later (AsyncClient makes its HttpLoopDriver on the first request,
  // inside the running loop) and must still refuse bad options at construction.
  m.def(
      "check_http_client_options",
      [](const RetryPolicy* policy, double attempt_timeout, double connect_timeout,
         bool verify_tls, const std::string& user_agent, bool follow_redirects,
         int max_redirects, const std::string& ca_bundle, bool strict,
         std::optional<int> breaker_failure_threshold, double breaker_reset_timeout,
         bool breaker_per_attempt, const std::string& breaker_key,
         std::vector<std::string> breaker_key_templates, const py::object& breaker_options,
         const std::string& methods, std::vector<std::string> allowed_methods,
         const py::object& budget, const py::object& throttle, const py::object& bulkhead,
         const py::object& rate_limiter, int max_connections, const py::object& adaptive_rate) {
        HttpClientOptions options = MakeOptions(
            policy, attempt_timeout, connect_timeout, verify_tls, user_agent, follow_redirects,
            max_redirects, ca_bundle, strict, breaker_failure_threshold, breaker_reset_timeout,
            breaker_per_attempt);
        SetBreakerKey(options, breaker_key, std::move(breaker_key_templates));
        SetBreakerOptions(options, breaker_options, breaker_per_attempt);
        SetMethodRule(options, methods, std::move(allowed_methods));
        SetLimits(options, budget, throttle, bulkhead, rate_limiter, max_connections);
        SetAdaptiveRate(options, adaptive_rate);
        Unwrap(internal::MakeSettings(options));
      },
      py::kw_only(), py::arg("policy") = py::none(), py::arg("attempt_timeout") = 30.0,
      py::arg("connect_timeout") = 10.0, py::arg("verify_tls") = true,
      py::arg("user_agent") = "mulligan", py::arg("follow_redirects") = false,
      py::arg("max_redirects") = 10, py::arg("ca_bundle") = "", py::arg("strict") = false,
      py::arg("breaker_failure_threshold") = py::none(), py::arg("breaker_reset_timeout") = 30.0,
      py::arg("breaker_per_attempt") = false, py::arg("breaker_key") = "origin",
      py::arg("breaker_key_templates") = std::vector<std::string>(),
      py::arg("breaker_options") = py::none(),
      py::arg("methods") = "idempotent", py::arg("allowed_methods") = std::vector<std::string>(),
      py::arg("budget") = "per_origin", py::arg("throttle") = py::none(),
      py::arg("bulkhead") = py::none(), py::arg("rate_limiter") = py::none(),
      py::arg("max_connections") = 0, py::arg("adaptive_rate") = py::none(),
      "Validates the HttpClient options as HttpClient() and HttpLoopDriver() do (the\n"
      "same core rule, HttpClient::Create's): ValueError naming the bad option, else None.");
  py::class_<HttpClient, std::unique_ptr<HttpClient>>(
      m, "HttpClient", "A resilient HTTP client; request() may be called from many threads.")
      .def(py::init(make_client), py::kw_only(), py::arg("policy") = py::none(),
           py::arg("attempt_timeout") = 30.0, py::arg("connect_timeout") = 10.0,
           py::arg("verify_tls") = true, py::arg("user_agent") = "mulligan",
           py::arg("follow_redirects") = false, py::arg("max_redirects") = 10,
           py::arg("ca_bundle") = "", py::arg("strict") = false,
           py::arg("breaker_failure_threshold") = py::none(),
           py::arg("breaker_reset_timeout") = 30.0, py::arg("breaker_per_attempt") = false,
           py::arg("breaker_key") = "origin",
           py::arg("breaker_key_templates") = std::vector<std::string>(),
           py::arg("breaker_options") = py::none(), py::arg("methods") = "idempotent",
           py::arg("allowed_methods") = std::vector<std::string>(),
           py::arg("budget") = "per_origin", py::arg("throttle") = py::none(),
           py::arg("bulkhead") = py::none(), py::arg("rate_limiter") = py::none(),
           py::arg("max_connections") = 0, py::arg("adaptive_rate") = py::none())
      .def("request", &Request, py::arg("method"), py::arg("url"), py::arg("headers"),
           py::arg("body"), py::arg("idempotency_key") = py::none(),
           py::arg("policy") = py::none(), py::arg("follow_redirects") = py::none(),
           py::arg("max_redirects") = py::none(), py::arg("strict") = py::none(),
           py::arg("fallback") = false, py::arg("max_attempts") = 0,
           py::arg("no_wait") = false, py::arg("clock") = py::none(),
           py::arg("breaker_key") = "",
           "Sends one logical request: the response tuple, or an HttpCall when a retry\n"
           "is decided (wait its delay, then resume()). Raises what the call ended with.");

  py::class_<PyHttpCall, std::unique_ptr<PyHttpCall>>(
      m, "HttpCall", "An HTTP call waiting to retry (one thread at a time).")
      .def_property_readonly(
          "delay", [](const PyHttpCall& h) { return DurationToSeconds(h.decision.delay); },
          "Seconds to wait before resume().")
      .def_property_readonly(
          "event",
          [](const PyHttpCall& h) {
            const HttpRetryEvent e = h.call ? h.call->RetryEvent() : HttpRetryEvent{};
            return RetryEventTuple(e.attempt, e.delay, e.error, e.http_status, e.from_retry_after);
          },
          "(attempt, delay, kind or None, status, from_retry_after) of the retry.")
      .def(
          "set_header",
          [](PyHttpCall& h, const std::string& name, const std::string& value) {
            if (!h.call) throw std::runtime_error("this HTTP call is over");
            Status set = h.call->SetHeader(name, value);
            if (!set.ok()) ThrowStatus(set);
          },
          py::arg("name"), py::arg("value"),
          "Replaces (or adds) header `name` for the attempts that follow, such as each\n"
          "attempt's traceparent (0.5). ValueError for a header the request could not\n"
          "carry (or Idempotency-Key, one per call); RuntimeError once the call is over.")
      .def("resume", &Step, "Runs the next attempt: a response tuple, or this call again.")
      .def(
          "cancel",
          [](PyHttpCall& h) {
            if (!h.call) return;
            h.call->Cancel();
            (void)h.call->Finish(nullptr);
            h.call.reset();
          },
          "Ends the call without the retry (its hook raised, its wait was interrupted).");
}

}  // namespace python
}  // namespace mulligan
