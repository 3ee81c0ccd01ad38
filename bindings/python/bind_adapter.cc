// bindings/python/bind_adapter.cc — the HTTP pipeline of the client
// adapters (mulligan.adapters: requests, httpx, aiohttp) for mulligan._core.
//
//   p = _core.HttpPipeline(policy=..., breaker_failure_threshold=..., ...)
//                                   # the HttpClient options, validated once
//   call = p.begin(now, method, url, keyed, body_replayable, breaker_key, strict, policy,
//                  fallback, max_attempts, no_wait)
//   call.admit(now) -> bool; call.attempt_timeout; call.record(outcome, now)
//   call.record_response(status, retry_after, wall_now, now) -> Decision
//   call.admit_bound(now) -> None (refused) | seconds (inf: no bound)
//   call.finish_response(status, retry_after, wall_now, now) -> None | Decision
//     (the adapters' fast path: one crossing per step, see below)
//   _core.http_response_outcome(status, retry_after, keyed, wall_now) -> Outcome
//
// An adapter's attempts run in another library (requests, httpx, aiohttp), so
// it cannot use HttpClient; it steps the same pipeline HttpClient's Exchange
// steps, built by the same internal::MakeSettings from the same options: the
// breakers per origin (or the client's breaker key), the metrics by origin,
// and the method rule (HttpMethodReplaySafe) are worked out here exactly as
// Exchange::Init and Exchange::Begin do, and a response's outcome (its
// Retry-After, the keyed-409 rule) by HttpResponseOutcome, which Exchange
// calls too. The Python side only maps its library's exceptions to an
// ErrorKind and waits. Nothing here blocks, so the GIL is held throughout.
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <pybind11/stl.h>

#include "bindings.h"
#include "http/exchange.h"
#include "http_common.h"
#include "mulligan/http/breaker_key.h"
#include "mulligan/http/client.h"
#include "mulligan/pipeline/call.h"
#include "mulligan/retry/policy.h"

namespace mulligan {
namespace python {
namespace {

// The validated settings (options, default policy, pipeline) of one adapter.
// Immutable after construction: begin() may be called from many threads.
struct PyHttpPipeline {
  std::unique_ptr<internal::Settings> settings;
};

// One logical call through an adapter's pipeline (not thread-safe). Keeps its
// pipeline and its own policy (when the request has one) alive.
struct PyAdapterCall {
  std::optional<Call> call;
  py::object owner;
  py::object policy;
  std::string key;
  AttemptAdmission admission;
  bool keyed = false;  // the request carries an Idempotency-Key
};

double RetryIn(Duration d) {
  return d == Duration::max() ? std::numeric_limits<double>::infinity() : DurationToSeconds(d);
}

// The origin of `url`: HttpOrigin parses the URL with libcurl (about 4 µs),
// so the last URL and its origin are kept per thread, as Exchange does; an
// adapter mostly calls the same few URLs.
const std::string& OriginOf(std::string_view url) {
  thread_local std::string last_url;
  thread_local std::string last_origin;
  thread_local bool valid = false;
  if (!valid || url != last_url) {
    std::optional<std::string> origin = HttpOrigin(url);
    last_url = url;
    last_origin = origin ? *origin : std::string();
    valid = true;
  }
  return last_origin;
}

// The strings are views of the Python str objects' UTF-8 (no copy), valid
// for this call only; what the call keeps (its origin) is copied.
std::unique_ptr<PyAdapterCall> Begin(py::object self, double now, std::string_view method,
                                     std::string_view url, bool keyed, bool body_replayable,
                                     std::string_view breaker_key, std::optional<bool> strict,
                                     py::object policy, bool fallback, int max_attempts,
                                     bool no_wait) {
  const internal::Settings& s = *self.cast<const PyHttpPipeline&>().settings;
  // The method rule, as Exchange::Init works it out.
  HttpMethodRule rule = s.options.strict_methods ? HttpMethodRule::kStrict : s.options.method_rule;
  if (strict) {
    if (*strict) {
      rule = HttpMethodRule::kStrict;
    } else if (rule == HttpMethodRule::kStrict) {
      rule = HttpMethodRule::kIdempotent;
    }
  }
  auto out = std::make_unique<PyAdapterCall>();
  out->owner = self;
  out->keyed = keyed;
  CallOptions options;
  if (!policy.is_none()) {
    options.policy = policy.cast<const RetryPolicy*>();
    out->policy = policy;
  }
  // A body that cannot be sent twice (a generator) makes any request unsafe
  // to replay once sent; failures before sending are still retried.
  options.replay_safe =
      body_replayable && HttpMethodReplaySafe(rule, s.options.allowed_methods, method, keyed);
  // No default attempt timeout: the adapted library's own timeout bounds an
  // attempt; the policy's attempt_timeout and the deadline trim it.
  options.fallback = fallback;
  options.max_attempts = max_attempts < 0 ? 0 : max_attempts;
  options.no_wait = no_wait;
  // Breakers and metrics by origin, as Exchange::Begin keys them.
  out->key = OriginOf(url);
  options.key = out->key;
  std::optional<std::string> chosen;
  if (s.options.breakers) {
    if (!breaker_key.empty()) {
      options.breaker_key = breaker_key;
    } else if (s.options.breaker_key.kind != BreakerKeyKind::kOrigin) {
      chosen = HttpBreakerKey(s.options.breaker_key, method, url);
      if (chosen) options.breaker_key = *chosen;
    }
  }
  // The origin's pipeline: its own retry budget (the default), as
  // Exchange::Begin picks it.
  out->call.emplace(s.PipelineFor(out->key).Begin(MonotonicToTimePoint(now), options));
  return out;
}

void BindHttpPipelineClass(py::module_& m) {
  py::class_<PyHttpPipeline>(
      m, "HttpPipeline",
      "The pipeline of an HTTP client adapter: HttpClient's options, validated once\n"
      "(immutable; begin() from any thread).")
      .def(py::init([](const RetryPolicy* policy, bool strict,
                       std::optional<int> breaker_failure_threshold, double breaker_reset_timeout,
                       bool breaker_per_attempt, const std::string& breaker_key,
                       std::vector<std::string> breaker_key_templates,
                       const py::object& breaker_options, const std::string& methods,
                       std::vector<std::string> allowed_methods, const py::object& budget) {
             HttpClientOptions options =
                 MakeOptions(policy, 30.0, 10.0, true, "mulligan", false, 10, "", strict,
                             breaker_failure_threshold, breaker_reset_timeout, breaker_per_attempt);
             SetBreakerKey(options, breaker_key, std::move(breaker_key_templates));
             SetBreakerOptions(options, breaker_options, breaker_per_attempt);
             SetMethodRule(options, methods, std::move(allowed_methods));
             // Budgets only: the adapters' admit() has no wait (a bulkhead's
             // or limiter's kWait), so those stay the decorators' for now.
             SetLimits(options, budget, py::none(), py::none(), py::none(), 0);
             auto p = std::make_unique<PyHttpPipeline>();
             p->settings = Unwrap(internal::MakeSettings(options));
             return p;
           }),
           py::kw_only(), py::arg("policy") = py::none(), py::arg("strict") = false,
           py::arg("breaker_failure_threshold") = py::none(),
           py::arg("breaker_reset_timeout") = 30.0, py::arg("breaker_per_attempt") = false,
           py::arg("breaker_key") = "origin",
           py::arg("breaker_key_templates") = std::vector<std::string>(),
           py::arg("breaker_options") = py::none(), py::arg("methods") = "idempotent",
           py::arg("allowed_methods") = std::vector<std::string>(),
           py::arg("budget") = "per_origin",
           "Validates the options as HttpClient() does: ValueError naming the bad one.")
      .def("begin", &Begin, py::arg("now"), py::arg("method"), py::arg("url"),
           py::arg("keyed"), py::arg("body_replayable") = true, py::arg("breaker_key") = "", py::arg("strict") = py::none(),
           py::arg("policy") = py::none(), py::arg("fallback") = false,
           py::arg("max_attempts") = 0, py::arg("no_wait") = false,
           "Begins one logical request at `now` (seconds): an AdapterCall. `keyed`: it\n"
           "carries an Idempotency-Key (the method rule replays it then).")
      .def_property_readonly(
          "policy", [](const PyHttpPipeline& p) { return p.settings->policy; },
          "The default RetryPolicy (a copy).");
}

void BindAdapterCallClass(py::module_& m) {
  py::class_<PyAdapterCall, std::unique_ptr<PyAdapterCall>>(
      m, "AdapterCall", "One logical request through an HttpPipeline (not thread-safe).")
      .def(
          "admit",
          [](PyAdapterCall& c, double now) {
            c.admission = c.call->Admit(MonotonicToTimePoint(now));
            return c.admission.go();
          },
          py::arg("now"), "Asks before the next attempt; False: refused (circuit open).")
      .def_property_readonly(
          "attempt_timeout",
          [](const PyAdapterCall& c) -> std::optional<double> {
            if (!c.admission.timeout) return std::nullopt;
            return DurationToSeconds(*c.admission.timeout);
          },
          "The admitted attempt's bound in seconds (the policy's attempt_timeout trimmed\n"
          "to the deadline), or None.")
      .def(
          "record",
          [](PyAdapterCall& c, const Outcome& outcome, double now) {
            return c.call->Record(outcome, MonotonicToTimePoint(now));
          },
          py::arg("outcome"), py::arg("now"), "Records the attempt's outcome: the Decision.")
      .def(
          "record_response",
          [](PyAdapterCall& c, int status, std::optional<std::string_view> retry_after,
             double wall_now, double now) {
            return c.call->Record(
                HttpResponseOutcome(status, retry_after, c.keyed, UnixToWallTime(wall_now)),
                MonotonicToTimePoint(now));
          },
          py::arg("status"), py::arg("retry_after"), py::arg("wall_now"), py::arg("now"),
          "Records an attempt that got a response with `status` and its Retry-After value\n"
          "(None: absent) read at `wall_now` (Unix seconds; read only with a value): the\n"
          "Decision. One engine call for http_response_outcome + record.")
      // admit_bound and finish_response: the raw fast path below.
      .def(
          "abandon",
          [](PyAdapterCall& c, double now, int in_flight) {
            c.call->Abandon(MonotonicToTimePoint(now), in_flight);
          },
          py::arg("now"), py::arg("in_flight") = 0,
          "Ends a call stopped by a failure outside its attempts (a raising hook): counted "
          "failed; frees what it holds.")
      .def(
          "cancel",
          [](PyAdapterCall& c, double now, int in_flight) {
            c.call->Cancel(MonotonicToTimePoint(now), in_flight);
          },
          py::arg("now"), py::arg("in_flight") = 0,
          "Ends a call its caller cancelled (KeyboardInterrupt, a cancelled task; DESIGN.md: "
          "never a failure): frees what it holds unjudged, the budget not told, and counts "
          "it under metrics' 'cancelled'. now: monotonic seconds; in_flight: 1 when an "
          "attempt was running. No-op once finished. Not thread-safe. (Added in 0.6.)")
      .def_property_readonly("refused",
                             [](const PyAdapterCall& c) { return c.admission.refused(); })
      .def_property_readonly(
          "retry_in", [](const PyAdapterCall& c) { return RetryIn(c.admission.retry_in); },
          "After a refusal: seconds until the breaker admits a probe (inf: forced open).")
      .def_property_readonly(
          "refusal_message",
          [](const PyAdapterCall& c) { return Utf8(c.call->RefusalStatus().message()); })
      .def_property_readonly(
          "use_fallback",
          [](const PyAdapterCall& c) {
            return c.admission.refused() ? c.admission.use_fallback
                                         : c.call->last_decision().use_fallback;
          },
          "The call ended on a failure its fallback answers.")
      .def_property_readonly(
          "breaker_name",
          [](const PyAdapterCall& c) {
            return c.call->breaker() != nullptr ? Utf8(c.call->breaker()->name()) : py::str("");
          })
      .def_property_readonly("key", [](const PyAdapterCall& c) { return Utf8(c.key); },
                             "The request's origin (scheme://host:port), or ''.")
      .def_property_readonly("attempts", [](const PyAdapterCall& c) { return c.call->attempts(); })
      .def_property_readonly(
          "start", [](const PyAdapterCall& c) { return TimePointToMonotonic(c.call->start()); })
      .def_property_readonly(
          "total_delay",
          [](const PyAdapterCall& c) { return DurationToSeconds(c.call->total_delay()); })
      .def_property_readonly("finished",
                             [](const PyAdapterCall& c) { return c.call->finished(); });
}

// -- The adapters' fast path (raw CPython METH_FASTCALL methods) -------------
//
// A pybind11 crossing costs 1,000-2,000 instructions of dispatch (argument
// loaders, the overload loop, kwargs handling; callgrind), as much as the
// engine's own work. The three steps of a first-attempt success are therefore
// plain CPython methods added to the pybind11 types: begin_admit (begin and
// the first admission at once), admit_bound and finish_response. They take
// positional arguments only, convert them with the CPython API, and call the
// same Begin/Admit/Record as the pybind11 methods above: the engine decides
// everything, these only skip pybind11's dispatch. (Added in 0.6.)

// Converts a float (or int) argument; false with a Python error set.
bool DoubleArg(PyObject* o, double* out) {
  *out = PyFloat_AsDouble(o);
  return !(*out == -1.0 && PyErr_Occurred() != nullptr);
}

// Converts a truth value argument (any object, as bool() does).
bool BoolArg(PyObject* o, bool* out) {
  const int v = PyObject_IsTrue(o);
  *out = v == 1;
  return v >= 0;
}

// A str argument as a view of its UTF-8 (valid while the argument lives).
bool StrArg(PyObject* o, std::string_view* out) {
  Py_ssize_t n = 0;
  const char* s = PyUnicode_AsUTF8AndSize(o, &n);
  if (s == nullptr) return false;
  *out = std::string_view(s, static_cast<size_t>(n));
  return true;
}

bool CheckArgs(const char* name, Py_ssize_t nargs, Py_ssize_t want) {
  if (nargs == want) return true;
  PyErr_Format(PyExc_TypeError, "%s() takes %zd positional arguments (%zd given)", name, want,
               nargs);
  return false;
}

// Translates a C++ exception thrown by the engine or a pybind11 cast into the
// pending Python exception; returns nullptr for the caller to return.
PyObject* SetCurrentError() {
  try {
    throw;
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (const py::builtin_exception& e) {
    e.set_error();
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
  return nullptr;
}

// The admission `c` just got as admit_bound() returns it: None (refused), inf
// (no attempt bound) or the bound in seconds. A new reference.
PyObject* BoundOf(const PyAdapterCall& c) {
  if (!c.admission.go()) Py_RETURN_NONE;
  if (!c.admission.timeout) return PyFloat_FromDouble(std::numeric_limits<double>::infinity());
  return PyFloat_FromDouble(DurationToSeconds(*c.admission.timeout));
}

// HttpPipeline.begin_admit(now, method, url, keyed, body_replayable,
// breaker_key, fallback, max_attempts, no_wait) -> (AdapterCall, bound)
PyObject* FastBeginAdmit(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  if (!CheckArgs("begin_admit", nargs, 9)) return nullptr;
  double now = 0;
  std::string_view method;
  std::string_view url;
  std::string_view breaker_key;
  bool keyed = false;
  bool replayable = false;
  bool fallback = false;
  bool no_wait = false;
  if (!DoubleArg(args[0], &now) || !StrArg(args[1], &method) || !StrArg(args[2], &url) ||
      !BoolArg(args[3], &keyed) || !BoolArg(args[4], &replayable) ||
      !StrArg(args[5], &breaker_key) || !BoolArg(args[6], &fallback) ||
      !BoolArg(args[8], &no_wait)) {
    return nullptr;
  }
  const long max_attempts = PyLong_AsLong(args[7]);
  if (max_attempts == -1 && PyErr_Occurred() != nullptr) return nullptr;
  try {
    std::unique_ptr<PyAdapterCall> call =
        Begin(py::reinterpret_borrow<py::object>(self), now, method, url, keyed, replayable,
              breaker_key, std::nullopt, py::none(), fallback,
              max_attempts > 1000000 ? 1000000 : static_cast<int>(max_attempts), no_wait);
    PyAdapterCall& c = *call;
    c.admission = c.call->Admit(MonotonicToTimePoint(now));
    PyObject* bound = BoundOf(c);
    if (bound == nullptr) return nullptr;
    py::object owner = py::cast(std::move(call));
    PyObject* out = PyTuple_New(2);
    if (out == nullptr) {
      Py_DECREF(bound);
      return nullptr;
    }
    PyTuple_SET_ITEM(out, 0, owner.release().ptr());
    PyTuple_SET_ITEM(out, 1, bound);
    return out;
  } catch (...) {
    return SetCurrentError();
  }
}

// AdapterCall.admit_bound(now) -> None | seconds (inf: no bound)
PyObject* FastAdmitBound(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  double now = 0;
  if (!CheckArgs("admit_bound", nargs, 1) || !DoubleArg(args[0], &now)) return nullptr;
  try {
    PyAdapterCall& c = py::handle(self).cast<PyAdapterCall&>();
    c.admission = c.call->Admit(MonotonicToTimePoint(now));
    return BoundOf(c);
  } catch (...) {
    return SetCurrentError();
  }
}

// AdapterCall.finish_response(status, retry_after, wall_now, now) -> None | Decision
PyObject* FastFinishResponse(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  if (!CheckArgs("finish_response", nargs, 4)) return nullptr;
  const long status = PyLong_AsLong(args[0]);
  if (status == -1 && PyErr_Occurred() != nullptr) return nullptr;
  std::optional<std::string_view> retry_after;
  if (args[1] != Py_None) {
    std::string_view value;
    if (!StrArg(args[1], &value)) return nullptr;
    retry_after = value;
  }
  double wall_now = 0;
  double now = 0;
  if (!DoubleArg(args[2], &wall_now) || !DoubleArg(args[3], &now)) return nullptr;
  if (status < 0 || status > 999) {
    PyErr_Format(PyExc_ValueError, "finish_response(): status must be 0-999, got %ld", status);
    return nullptr;
  }
  try {
    PyAdapterCall& c = py::handle(self).cast<PyAdapterCall&>();
    const Decision d = c.call->Record(
        HttpResponseOutcome(static_cast<int>(status), retry_after, c.keyed,
                            UnixToWallTime(wall_now)),
        MonotonicToTimePoint(now));
    if (!d.retry() && !d.use_fallback &&
        (d.reason == StopReason::kSucceeded || d.reason == StopReason::kTerminal)) {
      Py_RETURN_NONE;
    }
    return py::cast(d).release().ptr();
  } catch (...) {
    return SetCurrentError();
  }
}

PyMethodDef pipeline_fast_methods[] = {
    {"begin_admit",
     reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(FastBeginAdmit)), METH_FASTCALL,
     "begin_admit($self, now, method, url, keyed, body_replayable, breaker_key, fallback,\n"
     "            max_attempts, no_wait, /)\n--\n\n"
     "Begins one logical request at `now` (monotonic seconds), as begin() with no strict\n"
     "or policy override, and asks for its first attempt at once: (AdapterCall, bound), bound\n"
     "None when refused (circuit open), else the attempt's bound in seconds (inf: none), as\n"
     "admit_bound(). Positional only; TypeError for a wrong type. (Added in 0.6.)"},
    {nullptr, nullptr, 0, nullptr}};

PyMethodDef call_fast_methods[] = {
    {"admit_bound",
     reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(FastAdmitBound)), METH_FASTCALL,
     "admit_bound($self, now, /)\n--\n\n"
     "Asks before the next attempt at `now` (monotonic seconds), as admit(): None when\n"
     "refused (circuit open), else the admitted attempt's bound in seconds (inf: none)."},
    {"finish_response",
     reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(FastFinishResponse)),
     METH_FASTCALL,
     "finish_response($self, status, retry_after, wall_now, now, /)\n--\n\n"
     "As record_response(), but None when the call ended on this response and it is\n"
     "the answer as is (stopped as succeeded or terminal, no fallback): the Decision\n"
     "otherwise (a retry, or a give-up the adapter reports). ValueError for a status\n"
     "outside 0-999."},
    {nullptr, nullptr, 0, nullptr}};

// Adds `methods` to the pybind11 class `cls` as method descriptors (what a
// static type's tp_methods become), so CPython calls them without pybind11.
void AddFastMethods(const py::object& cls, PyMethodDef* methods) {
  auto* type = reinterpret_cast<PyTypeObject*>(cls.ptr());
  for (PyMethodDef* def = methods; def->ml_name != nullptr; ++def) {
    py::object descr = py::reinterpret_steal<py::object>(PyDescr_NewMethod(type, def));
    if (!descr) throw py::error_already_set();
    py::setattr(cls, def->ml_name, descr);
  }
}

}  // namespace

void BindAdapter(py::module_& m) {
  BindHttpPipelineClass(m);
  BindAdapterCallClass(m);
  AddFastMethods(m.attr("HttpPipeline"), pipeline_fast_methods);
  AddFastMethods(m.attr("AdapterCall"), call_fast_methods);
  m.def(
      "http_response_outcome",
      [](int status, std::optional<std::string> retry_after, bool keyed, double wall_now) {
        std::optional<std::string_view> value;
        if (retry_after) value = *retry_after;
        return HttpResponseOutcome(status, value, keyed, UnixToWallTime(wall_now));
      },
      py::arg("status"), py::arg("retry_after"), py::arg("keyed"), py::arg("wall_now"),
      "The Outcome of a response with `status` and its Retry-After value (None: absent),\n"
      "read at `wall_now` (Unix seconds): HttpClient's rule, 409 on a keyed request included.");
}

}  // namespace python
}  // namespace mulligan
