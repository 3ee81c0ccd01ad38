// bindings/python/bind_breaker.cc — circuit breakers and the breaker registry for
// mulligan._core (wrapped by python/mulligan/_breaker/breaker.py).
//
// Two surfaces:
//   - _core.CircuitBreaker / _core.BreakerRegistry (pybind11): construction,
//     state, counts, manual states, the transition hook, registry lookups;
//   - _core.BreakerGuard / _core.Permit: the hot path (acquire before a call,
//     success/failure/ignored after it), written against the raw CPython API
//     with METH_FASTCALL. One pybind11 call costs 130-210 ns here (DESIGN.md
//     section 1), two of them per guarded call would blow the 250 ns budget of
//     issue 4; a raw method call costs about 30 ns.
//
// Nothing here blocks, so the GIL is never released: every Acquire/Record runs
// with it held, which also means the transition hook (a Python callable) is
// called with the GIL on the thread whose call caused the transition.
#include <Python.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "bindings.h"
#include "breaker_guard.h"
#include "mulligan/breaker/registry.h"
#include "mulligan/breaker/circuit_breaker.h"

namespace mulligan {
namespace python {
namespace {

using BreakerPtr = std::shared_ptr<CircuitBreaker>;

double RetryInSeconds(Duration d) {
  return d == Duration::max() ? std::numeric_limits<double>::infinity() : DurationToSeconds(d);
}

TimePoint SteadyNow() { return TimePoint(std::chrono::steady_clock::now()); }

// mulligan._errors.CircuitOpenError and the attribute names a refusal sets,
// looked up once (the module is never unloaded).
struct OpenErrorNames {
  PyObject* type = nullptr;
  PyObject* empty = nullptr;
  PyObject* name = nullptr;
  PyObject* key = nullptr;
  PyObject* retry_in = nullptr;
  PyObject* attempts = nullptr;
  PyObject* pending = nullptr;
  PyObject* zero = nullptr;
};

const OpenErrorNames* OpenNames() {
  static OpenErrorNames names;
  if (names.type != nullptr) return &names;
  PyObject* errors = PyImport_ImportModule("mulligan._errors");
  if (errors == nullptr) return nullptr;
  PyObject* type = PyObject_GetAttrString(errors, "CircuitOpenError");
  Py_DECREF(errors);
  if (type == nullptr) return nullptr;
  names.empty = PyTuple_New(0);
  names.name = PyUnicode_InternFromString("name");
  names.key = PyUnicode_InternFromString("key");
  names.retry_in = PyUnicode_InternFromString("retry_in");
  names.attempts = PyUnicode_InternFromString("attempts");
  names.pending = PyUnicode_InternFromString("_pending");
  names.zero = PyLong_FromLong(0);
  if (!names.empty || !names.name || !names.key || !names.retry_in || !names.attempts ||
      !names.pending || !names.zero) {
    Py_DECREF(type);
    return nullptr;
  }
  names.type = type;
  return &names;
}

}  // namespace

// The refusal builds the exception without running CircuitOpenError.__init__
// and without formatting its message: BaseException's tp_new, then the five
// attributes. `_pending` (the guard) tells CircuitOpenError to format the
// message on first read (python/mulligan/_errors.py).
PyObject* SetCircuitOpen(GuardObject* guard, const Admission& admission) {
  const OpenErrorNames* names = OpenNames();
  if (names == nullptr) return nullptr;
  auto* type = reinterpret_cast<PyTypeObject*>(names->type);
  PyObject* exc = type->tp_new(type, names->empty, nullptr);
  if (exc == nullptr) return nullptr;
  PyObject* retry_in = PyFloat_FromDouble(RetryInSeconds(admission.retry_in));
  if (retry_in == nullptr || PyObject_SetAttr(exc, names->name, guard->name) < 0 ||
      PyObject_SetAttr(exc, names->key, guard->name) < 0 ||
      PyObject_SetAttr(exc, names->retry_in, retry_in) < 0 ||
      PyObject_SetAttr(exc, names->attempts, names->zero) < 0 ||
      PyObject_SetAttr(exc, names->pending, reinterpret_cast<PyObject*>(guard)) < 0) {
    Py_XDECREF(retry_in);
    Py_DECREF(exc);
    return nullptr;
  }
  Py_DECREF(retry_in);
  PyErr_SetObject(names->type, exc);
  Py_DECREF(exc);
  return nullptr;
}

bool NowFromObject(PyObject* seconds_obj, TimePoint* now) {
  if (seconds_obj == Py_None) {
    *now = SteadyNow();
    return true;
  }
  const double seconds = PyFloat_AsDouble(seconds_obj);
  if (seconds == -1.0 && PyErr_Occurred()) return false;
  try {
    *now = MonotonicToTimePoint(seconds);
  } catch (py::error_already_set& e) {
    e.restore();
    return false;
  }
  return true;
}

namespace {

// ---------------------------------------------------------------------------
// _core.Permit (breaker_guard.h).

PyObject* PermitIsProbe(PyObject* self, void*) {
  return PyBool_FromLong(reinterpret_cast<PermitObject*>(self)->permit.probe);
}

PyGetSetDef permit_getset[] = {
    {"probe", PermitIsProbe, nullptr, "True for a half-open probe permit.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

// ---------------------------------------------------------------------------
// _core.BreakerGuard: the hot path of one breaker.

void GuardDealloc(PyObject* self) {
  auto* guard = reinterpret_cast<GuardObject*>(self);
  delete guard->owner;
  Py_XDECREF(guard->name);
  Py_TYPE(self)->tp_free(self);
}

// Reads the optional `now` argument (float monotonic seconds); the steady
// clock when absent or None. Returns false with an exception set on error.
bool NowArg(PyObject* const* args, Py_ssize_t nargs, Py_ssize_t index, TimePoint* now) {
  return NowFromObject(nargs <= index ? Py_None : args[index], now);
}

PyObject* GuardAcquire(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs > 1) {
    PyErr_SetString(PyExc_TypeError, "acquire() takes at most one argument (now)");
    return nullptr;
  }
  TimePoint now;
  if (!NowArg(args, nargs, 0, &now)) return nullptr;
  auto* guard = reinterpret_cast<GuardObject*>(self);
  try {
    const Admission admission = guard->breaker->Acquire(now);
    if (!admission.admitted()) return SetCircuitOpen(guard, admission);
    PermitObject* permit = PyObject_New(PermitObject, &PermitType);
    if (permit == nullptr) return nullptr;
    permit->permit = admission.permit;
    return reinterpret_cast<PyObject*>(permit);
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
    return nullptr;
  }
}

template <CallResult kResult>
PyObject* GuardRecord(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs < 1 || nargs > 2 || Py_TYPE(args[0]) != &PermitType) {
    PyErr_SetString(PyExc_TypeError, "expected (permit: Permit, now: float | None = None)");
    return nullptr;
  }
  TimePoint now;
  if (!NowArg(args, nargs, 1, &now)) return nullptr;
  const Permit& permit = reinterpret_cast<PermitObject*>(args[0])->permit;
  try {
    reinterpret_cast<GuardObject*>(self)->breaker->Record(permit, kResult,
                                                          now - permit.acquired_at, now);
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
    return nullptr;
  }
  if (PyErr_Occurred()) return nullptr;  // never expected: the hook swallows errors
  Py_RETURN_NONE;
}

// open_message(retry_in) -> str: the message of a refusal `retry_in` seconds
// (math.inf: forced open) from the next probe, as the core formats it. Read
// lazily by CircuitOpenError (SetCircuitOpen).
PyObject* GuardOpenMessage(PyObject* self, PyObject* arg) {
  const double seconds = PyFloat_AsDouble(arg);
  if (seconds == -1.0 && PyErr_Occurred()) return nullptr;
  if (std::isnan(seconds) || seconds < 0) {
    PyErr_SetString(PyExc_ValueError, "open_message(): retry_in must be >= 0 seconds");
    return nullptr;
  }
  Admission admission;
  // retry_in was made by RetryInSeconds: rounding back gives the exact count
  // for any period below about 100 days.
  admission.retry_in = std::isinf(seconds) || seconds >= 9.2e9
                           ? Duration::max()
                           : std::chrono::round<Duration>(std::chrono::duration<double>(seconds));
  try {
    const Status status = reinterpret_cast<GuardObject*>(self)->breaker->OpenStatus(admission);
    return PyUnicode_DecodeUTF8(status.message().data(),
                                static_cast<Py_ssize_t>(status.message().size()), "replace");
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
    return nullptr;
  }
}

PyMethodDef guard_methods[] = {
    {"acquire", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(GuardAcquire)),
     METH_FASTCALL,
     "acquire(now=None) -> Permit; raises mulligan.CircuitOpenError when refused."},
    {"success",
     reinterpret_cast<PyCFunction>(
         reinterpret_cast<void (*)()>(GuardRecord<CallResult::kSuccess>)),
     METH_FASTCALL, "success(permit, now=None): records a success."},
    {"failure",
     reinterpret_cast<PyCFunction>(
         reinterpret_cast<void (*)()>(GuardRecord<CallResult::kFailure>)),
     METH_FASTCALL, "failure(permit, now=None): records a failure."},
    {"ignored",
     reinterpret_cast<PyCFunction>(
         reinterpret_cast<void (*)()>(GuardRecord<CallResult::kIgnored>)),
     METH_FASTCALL, "ignored(permit, now=None): records a result that is neither."},
    {"open_message", GuardOpenMessage, METH_O,
     "open_message(retry_in) -> str: the message of a refusal retry_in seconds (math.inf: "
     "forced open) from the next probe, as the core formats it; ValueError for NaN or < 0."},
    {nullptr, nullptr, 0, nullptr}};

}  // namespace

PyTypeObject PermitType = [] {
  PyTypeObject t{PyVarObject_HEAD_INIT(nullptr, 0)};
  t.tp_name = "mulligan._core.Permit";
  t.tp_basicsize = sizeof(PermitObject);
  t.tp_flags = Py_TPFLAGS_DEFAULT;
  t.tp_doc = "A permission to make one call, from BreakerGuard.acquire().";
  t.tp_getset = permit_getset;
  return t;
}();

PyTypeObject GuardType = [] {
  PyTypeObject t{PyVarObject_HEAD_INIT(nullptr, 0)};
  t.tp_name = "mulligan._core.BreakerGuard";
  t.tp_basicsize = sizeof(GuardObject);
  t.tp_flags = Py_TPFLAGS_DEFAULT;
  t.tp_doc = "The acquire/record hot path of one CircuitBreaker (from CircuitBreaker.guard()).";
  t.tp_dealloc = GuardDealloc;
  t.tp_methods = guard_methods;
  return t;
}();

namespace {

py::object MakeGuard(const BreakerPtr& breaker) {
  py::str name = Utf8(breaker->name());
  GuardObject* guard = PyObject_New(GuardObject, &GuardType);
  if (guard == nullptr) throw py::error_already_set();
  guard->breaker = breaker.get();
  guard->owner = new BreakerPtr(breaker);
  guard->name = name.release().ptr();
  return py::reinterpret_steal<py::object>(reinterpret_cast<PyObject*>(guard));
}

// ---------------------------------------------------------------------------
// _core.CircuitBreaker and _core.BreakerRegistry (pybind11).

// Holds the Python transition hook. The core calls it from the thread whose
// Acquire/Record/manual call made the transition; all of those hold the GIL
// (nothing here releases it), but the GIL is taken again anyway in case a C++
// caller of the same breaker ever makes a transition. A Python exception
// never crosses into C++: it is reported as unraisable.
struct Hook {
  py::object fn;
  ~Hook() {
    if (Py_IsInitialized()) {
      py::gil_scoped_acquire gil;
      fn = py::object();
    } else {
      fn.release();  // interpreter gone: leak rather than touch it
    }
  }
};

BreakerListener MakeListener(py::object fn) {
  auto hook = std::make_shared<Hook>();
  hook->fn = std::move(fn);
  return [hook](const BreakerTransition& t) {
    if (!Py_IsInitialized()) return;
    py::gil_scoped_acquire gil;
    try {
      hook->fn(Utf8(std::string(t.name)), BreakerStateName(t.from), BreakerStateName(t.to),
               t.reason, TimePointToMonotonic(t.at));
    } catch (py::error_already_set& e) {
      e.discard_as_unraisable("mulligan circuit breaker listener");
    } catch (const std::exception&) {
      // Conversion failures: nothing sensible to report from here.
    }
  };
}

// The _core.CircuitBreaker object: a reference to a core breaker plus this
// wrapper's transition hook, removed with the wrapper (the registry may hand
// out several wrappers of one breaker; each owns its own hook).
struct PyBreaker {
  BreakerPtr breaker;
  uint64_t hook_id = 0;
  uint64_t call_hook_id = 0;

  explicit PyBreaker(BreakerPtr b) : breaker(std::move(b)) {}
  PyBreaker(PyBreaker&& other) noexcept
      : breaker(std::move(other.breaker)),
        hook_id(std::exchange(other.hook_id, 0)),
        call_hook_id(std::exchange(other.call_hook_id, 0)) {}
  PyBreaker& operator=(PyBreaker&&) = delete;
  PyBreaker(const PyBreaker&) = delete;
  ~PyBreaker() {
    if (hook_id != 0 && breaker) breaker->RemoveListener(hook_id);
    if (call_hook_id != 0 && breaker) breaker->RemoveCallListener(call_hook_id);
  }
};

// As MakeListener, for call events: fn(name, kind, state, duration_s, stale, at).
BreakerCallListener MakeCallListener(py::object fn) {
  auto hook = std::make_shared<Hook>();
  hook->fn = std::move(fn);
  return [hook](const BreakerCallEvent& e) {
    if (!Py_IsInitialized()) return;
    py::gil_scoped_acquire gil;
    try {
      hook->fn(Utf8(std::string(e.name)), BreakerCallKindName(e.kind),
               BreakerStateName(e.state), DurationToSeconds(e.duration), e.stale,
               TimePointToMonotonic(e.at));
    } catch (py::error_already_set& err) {
      err.discard_as_unraisable("mulligan circuit breaker call listener");
    } catch (const std::exception&) {
    }
  };
}

py::object TripDict(const std::optional<BreakerTrip>& trip) {
  if (!trip) return py::none();
  py::dict d;
  d["from_state"] = BreakerStateName(trip->from);
  d["reason"] = trip->reason;
  d["at"] = TimePointToMonotonic(trip->at);
  d["consecutive_failures"] = trip->consecutive_failures;
  d["window_calls"] = trip->window_calls;
  d["window_failure_rate"] = trip->window_failure_rate;
  d["window_slow_rate"] = trip->window_slow_rate;
  return std::move(d);
}

TimePoint NowOr(std::optional<double> now) {
  return now ? MonotonicToTimePoint(*now) : SteadyNow();
}

WindowKind ParseWindow(const std::string& window) {
  if (window == "none") return WindowKind::kNone;
  if (window == "count") return WindowKind::kCount;
  if (window == "time") return WindowKind::kTime;
  ThrowStatus(InvalidArgumentError("window must be None, 'count' or 'time', got '" + window + "'"));
}

CircuitBreakerOptions MakeOptions(const std::string& name, int failure_threshold,
                                  const std::string& window, int window_size,
                                  double window_duration, int window_buckets,
                                  double failure_rate_threshold, int minimum_calls,
                                  std::optional<double> slow_call_duration,
                                  double slow_call_rate_threshold, double reset_timeout,
                                  double reset_timeout_multiplier, double max_reset_timeout,
                                  int half_open_max_calls, double permit_timeout,
                                  std::optional<double> max_half_open_duration) {
  CircuitBreakerOptions o;
  o.name = name;
  o.failure_threshold = failure_threshold;
  o.window = ParseWindow(window);
  o.window_size = window_size;
  o.window_duration = SecondsToDuration(window_duration, "window_duration");
  o.window_buckets = window_buckets;
  o.failure_rate_threshold = failure_rate_threshold;
  o.minimum_calls = minimum_calls;
  if (slow_call_duration) {
    o.slow_call_duration = SecondsToDuration(*slow_call_duration, "slow_call_duration");
  }
  o.slow_call_rate_threshold = slow_call_rate_threshold;
  o.reset_timeout = SecondsToDuration(reset_timeout, "reset_timeout");
  o.reset_timeout_multiplier = reset_timeout_multiplier;
  o.max_reset_timeout = SecondsToDuration(max_reset_timeout, "max_reset_timeout");
  o.half_open_max_calls = half_open_max_calls;
  o.permit_timeout = SecondsToDuration(permit_timeout, "permit_timeout");
  if (max_half_open_duration) {
    o.max_half_open_duration =
        SecondsToDuration(*max_half_open_duration, "max_half_open_duration");
  }
  return o;
}

py::dict CountsDict(const BreakerCounts& c) {
  py::dict d;
  d["calls"] = c.calls;
  d["successes"] = c.successes;
  d["failures"] = c.failures;
  d["ignored"] = c.ignored;
  d["slow"] = c.slow;
  d["rejected"] = c.rejected;
  d["consecutive_failures"] = c.consecutive_failures;
  d["window_calls"] = c.window_calls;
  d["window_failure_rate"] = c.window_failure_rate;
  d["window_slow_rate"] = c.window_slow_rate;
  d["stale"] = c.stale;
  return d;
}

#define MULLIGAN_BREAKER_KWARGS                                                              \
  py::arg("failure_threshold") = 5, py::arg("window") = "none", py::arg("window_size") = 100, \
  py::arg("window_duration") = 60.0, py::arg("window_buckets") = 10,                         \
  py::arg("failure_rate_threshold") = 50.0, py::arg("minimum_calls") = 10,                   \
  py::arg("slow_call_duration") = py::none(), py::arg("slow_call_rate_threshold") = 100.0,   \
  py::arg("reset_timeout") = 30.0, py::arg("reset_timeout_multiplier") = 1.0,                \
  py::arg("max_reset_timeout") = 300.0, py::arg("half_open_max_calls") = 1,                  \
  py::arg("permit_timeout") = 60.0, py::arg("max_half_open_duration") = py::none()

}  // namespace

CircuitBreakerOptions BreakerOptionsFromDict(const py::dict& d) {
  auto get = [&d](const char* key) -> py::object {
    if (!d.contains(key)) {
      ThrowStatus(InvalidArgumentError(std::string("breaker options lack '") + key + "'"));
    }
    return d[key];
  };
  auto optional_seconds = [&get](const char* key) -> std::optional<double> {
    py::object v = get(key);
    if (v.is_none()) return std::nullopt;
    return v.cast<double>();
  };
  py::object window = get("window");
  return MakeOptions("", get("failure_threshold").cast<int>(),
                     window.is_none() ? std::string("none") : window.cast<std::string>(),
                     get("window_size").cast<int>(), get("window_duration").cast<double>(),
                     get("window_buckets").cast<int>(),
                     get("failure_rate_threshold").cast<double>(),
                     get("minimum_calls").cast<int>(), optional_seconds("slow_call_duration"),
                     get("slow_call_rate_threshold").cast<double>(),
                     get("reset_timeout").cast<double>(),
                     get("reset_timeout_multiplier").cast<double>(),
                     get("max_reset_timeout").cast<double>(),
                     get("half_open_max_calls").cast<int>(), get("permit_timeout").cast<double>(),
                     optional_seconds("max_half_open_duration"));
}

std::shared_ptr<CircuitBreaker> BreakerOf(py::handle core_breaker) {
  return core_breaker.cast<const PyBreaker&>().breaker;
}

namespace {

void BindCircuitBreakerClass(py::module_& m) {
  py::class_<PyBreaker>(m, "CircuitBreaker",
                        "A core circuit breaker (see mulligan.CircuitBreaker).")
      .def(py::init([](const std::string& name, int failure_threshold, const std::string& window,
                       int window_size, double window_duration, int window_buckets,
                       double failure_rate_threshold, int minimum_calls,
                       std::optional<double> slow_call_duration, double slow_call_rate_threshold,
                       double reset_timeout, double reset_timeout_multiplier,
                       double max_reset_timeout, int half_open_max_calls,
                       double permit_timeout, std::optional<double> max_half_open_duration) {
             auto created = CircuitBreaker::Create(MakeOptions(
                 name, failure_threshold, window, window_size, window_duration, window_buckets,
                 failure_rate_threshold, minimum_calls, slow_call_duration,
                 slow_call_rate_threshold, reset_timeout, reset_timeout_multiplier,
                 max_reset_timeout, half_open_max_calls, permit_timeout,
                 max_half_open_duration));
             return PyBreaker(BreakerPtr(Unwrap(std::move(created))));
           }),
           py::arg("name"), py::kw_only(), MULLIGAN_BREAKER_KWARGS)
      .def_property_readonly("name", [](const PyBreaker& b) { return Utf8(b.breaker->name()); })
      .def("guard", [](const PyBreaker& b) { return MakeGuard(b.breaker); },
           "Returns the BreakerGuard (acquire/success/failure/ignored) of this breaker.")
      .def("state",
           [](const PyBreaker& b, std::optional<double> now) {
             return BreakerStateName(b.breaker->state(NowOr(now)));
           },
           py::arg("now") = py::none())
      .def("time_until_probe",
           [](const PyBreaker& b, std::optional<double> now) {
             return RetryInSeconds(b.breaker->TimeUntilProbe(NowOr(now)));
           },
           py::arg("now") = py::none())
      .def("counts",
           [](const PyBreaker& b, std::optional<double> now) {
             return CountsDict(b.breaker->counts(NowOr(now)));
           },
           py::arg("now") = py::none())
      .def("force_open",
           [](const PyBreaker& b, std::optional<double> now) { b.breaker->ForceOpen(NowOr(now)); },
           py::arg("now") = py::none())
      .def("disable",
           [](const PyBreaker& b, std::optional<double> now) { b.breaker->Disable(NowOr(now)); },
           py::arg("now") = py::none())
      .def("metrics_only",
           [](const PyBreaker& b, std::optional<double> now) {
             b.breaker->MetricsOnly(NowOr(now));
           },
           py::arg("now") = py::none())
      .def("reset",
           [](const PyBreaker& b, std::optional<double> now) { b.breaker->Reset(NowOr(now)); },
           py::arg("now") = py::none())
      .def("force_open_until",
           [](const PyBreaker& b, double until, std::optional<double> now) {
             const Status status = b.breaker->ForceOpenUntil(MonotonicToTimePoint(until),
                                                             NowOr(now));
             if (!status.ok()) ThrowStatus(status);
           },
           py::arg("until"), py::arg("now") = py::none(),
           "Opens until the monotonic instant `until` (seconds), then half-open.")
      .def("half_open",
           [](const PyBreaker& b, std::optional<double> now) { b.breaker->HalfOpen(NowOr(now)); },
           py::arg("now") = py::none())
      .def("set_hook",
           [](PyBreaker& b, py::object fn) {
             if (b.hook_id != 0) b.breaker->RemoveListener(b.hook_id);
             b.hook_id = 0;
             if (!fn.is_none()) b.hook_id = b.breaker->AddListener(MakeListener(std::move(fn)));
           },
           py::arg("fn"),
           "Sets the one transition hook fn(name, from, to, reason, at) of this wrapper "
           "(None removes it).")
      .def("set_call_hook",
           [](PyBreaker& b, py::object fn) {
             if (b.call_hook_id != 0) b.breaker->RemoveCallListener(b.call_hook_id);
             b.call_hook_id = 0;
             if (!fn.is_none()) {
               b.call_hook_id = b.breaker->AddCallListener(MakeCallListener(std::move(fn)));
             }
           },
           py::arg("fn"),
           "Sets the one call hook fn(name, kind, state, duration, stale, at) of this "
           "wrapper (None removes it, and with it the cost of the events).")
      .def("last_trip", [](const PyBreaker& b) { return TripDict(b.breaker->last_trip()); },
           "The figures of the last opening as a dict, or None.")
      .def_property_readonly("reported_name",
                             [](const PyBreaker& b) { return Utf8(b.breaker->reported_name()); })
      .def("options",
           [](const PyBreaker& b) {
             const CircuitBreakerOptions& o = b.breaker->options();
             py::dict d;
             d["failure_threshold"] = o.failure_threshold;
             d["window"] = o.window == WindowKind::kCount  ? "count"
                           : o.window == WindowKind::kTime ? "time"
                                                            : "none";
             d["window_size"] = o.window_size;
             d["window_duration"] = DurationToSeconds(o.window_duration);
             d["window_buckets"] = o.window_buckets;
             d["failure_rate_threshold"] = o.failure_rate_threshold;
             d["minimum_calls"] = o.minimum_calls;
             d["slow_call_duration"] =
                 o.slow_call_duration ? py::object(py::float_(DurationToSeconds(*o.slow_call_duration)))
                                      : py::object(py::none());
             d["slow_call_rate_threshold"] = o.slow_call_rate_threshold;
             d["reset_timeout"] = DurationToSeconds(o.reset_timeout);
             d["reset_timeout_multiplier"] = o.reset_timeout_multiplier;
             d["max_reset_timeout"] = DurationToSeconds(o.max_reset_timeout);
             d["half_open_max_calls"] = o.half_open_max_calls;
             d["permit_timeout"] = DurationToSeconds(o.permit_timeout);
             d["max_half_open_duration"] =
                 o.max_half_open_duration
                     ? py::object(py::float_(DurationToSeconds(*o.max_half_open_duration)))
                     : py::object(py::none());
             return d;
           });

}

void BindBreakerRegistryClass(py::module_& m) {
  py::class_<BreakerRegistry>(m, "BreakerRegistry",
                              "Core breakers by name (see mulligan.breakers).")
      .def(py::init([](size_t max_breakers, int failure_threshold, const std::string& window,
                       int window_size, double window_duration, int window_buckets,
                       double failure_rate_threshold, int minimum_calls,
                       std::optional<double> slow_call_duration, double slow_call_rate_threshold,
                       double reset_timeout, double reset_timeout_multiplier,
                       double max_reset_timeout, int half_open_max_calls,
                       double permit_timeout, std::optional<double> max_half_open_duration) {
             BreakerRegistryOptions options;
             options.max_breakers = max_breakers;
             options.breaker = MakeOptions(
                 "", failure_threshold, window, window_size, window_duration, window_buckets,
                 failure_rate_threshold, minimum_calls, slow_call_duration,
                 slow_call_rate_threshold, reset_timeout, reset_timeout_multiplier,
                 max_reset_timeout, half_open_max_calls, permit_timeout,
                 max_half_open_duration);
             return Unwrap(BreakerRegistry::Create(options));
           }),
           py::kw_only(), py::arg("max_breakers") = 10000, MULLIGAN_BREAKER_KWARGS)
      .def("get",
           [](BreakerRegistry& r, const std::string& key) {
             return PyBreaker(Unwrap(r.Get(key)));
           },
           py::arg("key"))
      .def("find",
           [](const BreakerRegistry& r, const std::string& key) -> py::object {
             BreakerPtr b = r.Find(key);
             if (!b) return py::none();
             return py::cast(PyBreaker(std::move(b)));
           },
           py::arg("key"))
      .def("names",
           [](const BreakerRegistry& r) {
             py::list names;
             for (const BreakerPtr& b : r.Snapshot()) names.append(Utf8(b->name()));
             return names;
           })
      .def("__len__", &BreakerRegistry::size);
}

}  // namespace

void BindBreaker(py::module_& m) {
  if (PyType_Ready(&PermitType) < 0 || PyType_Ready(&GuardType) < 0) {
    throw py::error_already_set();
  }
  Py_INCREF(&PermitType);
  m.add_object("Permit", py::handle(reinterpret_cast<PyObject*>(&PermitType)));
  Py_INCREF(&GuardType);
  m.add_object("BreakerGuard", py::handle(reinterpret_cast<PyObject*>(&GuardType)));
  BindBreakerBlock(m.ptr());

  BindCircuitBreakerClass(m);
  BindBreakerRegistryClass(m);
}

}  // namespace python
}  // namespace mulligan
