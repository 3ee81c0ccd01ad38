// bindings/python/bind_pipeline.cc — the pipeline and its per-call object for
// mulligan._core, and the fake clock shared by the Python and C++ layers.
//
//   _core.Pipeline(policy, breaker=None, breaker_per_attempt=False, metrics=None)
//   call = pipeline.begin(now, fallback, max_attempts, no_wait)   # positional
//   call = pipeline.start(now, fallback, max_attempts, no_wait)   # begin + admit
//   call.admit(now) -> bool; call.record(outcome, now) -> Decision; call.abandon(now)
//   call.cancel(now, in_flight=0)   # a caller's cancel: counted cancelled (0.6)
//
// Every decision is the core Call's (pipeline/call.h): the Python drivers
// (python/mulligan/_retry/) only turn exceptions into Outcomes, wait, call
// hooks and log. `now` is a time.monotonic() reading (or a FakeClock's), in
// seconds; durations cross as float seconds. Nothing here blocks, so the GIL
// is held throughout (a breaker listener, a Python callable, may run).
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include <pybind11/stl.h>

#include "bindings.h"
#include "mulligan/base/clock.h"
#include "mulligan/pipeline/pipeline.h"
#include "mulligan/retry/policy.h"
#include "mulligan/telemetry/metrics.h"

namespace mulligan {
namespace python {
namespace {

// A pipeline over parts it owns: a copy of the (immutable) retry policy, a
// reference to the breaker, and the registry-owned metrics.
// Not copyable or movable: the pipeline points at the members.
struct PyPipeline {
  PyPipeline(const RetryPolicy& p, std::shared_ptr<CircuitBreaker> b, bool per_attempt,
             Metrics* m, std::shared_ptr<RetryBudget> bu = nullptr,
             std::shared_ptr<AdaptiveThrottle> th = nullptr)
      : policy(p),
        breaker(std::move(b)),
        budget(std::move(bu)),
        throttle(std::move(th)),
        pipeline(Parts(per_attempt, m)) {}
  PyPipeline(const PyPipeline&) = delete;
  PyPipeline& operator=(const PyPipeline&) = delete;

  Pipeline::Parts Parts(bool per_attempt, Metrics* metrics) const {
    Pipeline::Parts parts;
    parts.policy = &policy;
    parts.breaker = breaker.get();
    parts.breaker_per_attempt = per_attempt;
    parts.metrics = metrics;
    parts.budget = budget.get();
    parts.throttle = throttle.get();
    return parts;
  }

  const RetryPolicy policy;
  const std::shared_ptr<CircuitBreaker> breaker;
  const std::shared_ptr<RetryBudget> budget;        // (Added in 0.3.)
  const std::shared_ptr<AdaptiveThrottle> throttle;  // (Added in 0.3.)
  const Pipeline pipeline;
};

// One logical call; keeps its pipeline alive.
struct PyCall {
  PyCall(Call c, py::object owner) : call(std::move(c)), pipeline(std::move(owner)) {}
  Call call;
  py::object pipeline;
};

CallOptions MakeCallOptions(bool fallback, int max_attempts, bool no_wait) {
  CallOptions options;
  options.fallback = fallback;
  options.max_attempts = max_attempts < 0 ? 0 : max_attempts;
  options.no_wait = no_wait;
  return options;
}

double RetryIn(Duration d) {
  return d == Duration::max() ? std::numeric_limits<double>::infinity() : DurationToSeconds(d);
}

void BindPipelineClass(py::module_& m) {
  py::class_<PyPipeline>(m, "Pipeline",
                         "The composition every Python front door drives (immutable; shareable).")
      .def(py::init([](const RetryPolicy& policy, py::object breaker, bool per_attempt,
                       Metrics* metrics, std::shared_ptr<RetryBudget> budget,
                       std::shared_ptr<AdaptiveThrottle> throttle) {
             std::shared_ptr<CircuitBreaker> core_breaker;
             if (!breaker.is_none()) core_breaker = BreakerOf(breaker);
             return std::make_unique<PyPipeline>(policy, std::move(core_breaker), per_attempt,
                                                 metrics, std::move(budget), std::move(throttle));
           }),
           py::arg("policy"), py::arg("breaker") = py::none(),
           py::arg("breaker_per_attempt") = false, py::arg("metrics") = nullptr,
           py::arg("budget") = nullptr, py::arg("throttle") = nullptr,
           "Builds a pipeline over a RetryPolicy, an optional _core.CircuitBreaker and\n"
           "the _core.Metrics it reports to (None: none).")
      .def(
          "begin",
          [](py::object self, double now, bool fallback, int max_attempts, bool no_wait) {
            const PyPipeline& p = self.cast<const PyPipeline&>();
            return PyCall(p.pipeline.Begin(MonotonicToTimePoint(now),
                                           MakeCallOptions(fallback, max_attempts, no_wait)),
                          self);
          },
          py::arg("now"), py::arg("fallback") = false, py::arg("max_attempts") = 0,
          py::arg("no_wait") = false,
          "Begins one logical call at `now` (seconds): a Call.")
      .def(
          "start",
          [](py::object self, double now, bool fallback, int max_attempts, bool no_wait) {
            const PyPipeline& p = self.cast<const PyPipeline&>();
            const TimePoint t = MonotonicToTimePoint(now);
            PyCall call(p.pipeline.Begin(t, MakeCallOptions(fallback, max_attempts, no_wait)),
                        self);
            (void)call.call.Admit(t);
            return call;
          },
          py::arg("now"), py::arg("fallback") = false, py::arg("max_attempts") = 0,
          py::arg("no_wait") = false,
          "begin() and the first admit() in one call; check call.refused.")
      .def_property_readonly("has_breaker",
                             [](const PyPipeline& p) { return p.breaker != nullptr; });
}

void BindCallClass(py::module_& m) {
  py::class_<PyCall>(m, "Call", "One logical call through a Pipeline (not thread-safe).")
      .def(
          "admit",
          [](PyCall& c, double now) { return c.call.Admit(MonotonicToTimePoint(now)).go(); },
          py::arg("now"), "Asks before the next attempt; False: refused (see refused).")
      .def(
          "record",
          [](PyCall& c, const Outcome& outcome, double now) {
            return c.call.Record(outcome, MonotonicToTimePoint(now));
          },
          py::arg("outcome"), py::arg("now"),
          "Records the attempt's outcome; returns the Decision (retry after delay, or stop).")
      .def(
          "decide",
          [](PyCall& c, const Outcome& outcome, double now) {
            const Decision d = c.call.Record(outcome, MonotonicToTimePoint(now));
            return py::make_tuple(d.retry(), DurationToSeconds(d.delay),
                                  d.retry() ? py::object(py::none())
                                            : py::object(py::str(StopReasonName(d.reason))),
                                  d.use_fallback);
          },
          py::arg("outcome"), py::arg("now"),
          "record() for the retry drivers' failure path, in one crossing (Added in 0.6.): "
          "(retry: bool, delay: float seconds, reason: str, or None when retrying, "
          "use_fallback: bool), the fields of record()'s Decision, without building one.")
      .def(
          "abandon",
          [](PyCall& c, double now, int in_flight) {
            c.call.Abandon(MonotonicToTimePoint(now), in_flight);
          },
          py::arg("now"), py::arg("in_flight") = 0,
          "Ends a call its caller stopped (cancelled, interrupted): frees what it holds.")
      .def(
          "cancel",
          [](PyCall& c, double now, int in_flight) {
            c.call.Cancel(MonotonicToTimePoint(now), in_flight);
          },
          py::arg("now"), py::arg("in_flight") = 0,
          "Ends a call its caller cancelled (asyncio.CancelledError, KeyboardInterrupt, "
          "SystemExit, GeneratorExit; DESIGN.md: never counted as failures): frees what it "
          "holds as abandon does (a breaker permit released unjudged, the retry budget not "
          "told) but counts the call under metrics' 'cancelled', not 'failures'. now: "
          "monotonic seconds; in_flight: 1 when an attempt was running. Does nothing once "
          "finished. Not thread-safe (as the call). (Added in 0.6.)")
      .def_property_readonly("refused",
                             [](const PyCall& c) { return c.call.last_admission().refused(); })
      .def_property_readonly(
          "refusal_reason",
          [](const PyCall& c) { return StopReasonName(c.call.last_admission().reason); })
      .def_property_readonly(
          "retry_in", [](const PyCall& c) { return RetryIn(c.call.last_admission().retry_in); },
          "After a breaker refusal: seconds until it admits a probe (inf: forced open).")
      .def_property_readonly(
          "refusal_message",
          [](const PyCall& c) { return Utf8(c.call.RefusalStatus().message()); })
      .def_property_readonly(
          "use_fallback",
          [](const PyCall& c) {
            return c.call.last_admission().refused() ? c.call.last_admission().use_fallback
                                                     : c.call.last_decision().use_fallback;
          },
          "The call ended on a failure its fallback answers.")
      .def_property_readonly(
          "breaker_name",
          [](const PyCall& c) {
            return c.call.breaker() != nullptr ? Utf8(c.call.breaker()->name()) : py::str("");
          })
      .def_property_readonly(
          "throttle_name",
          [](const PyCall& c) {
            const PyPipeline& p = c.pipeline.cast<const PyPipeline&>();
            return p.throttle != nullptr ? Utf8(p.throttle->name()) : py::str("");
          })
      .def_property_readonly("attempts", [](const PyCall& c) { return c.call.attempts(); })
      .def_property_readonly(
          "start", [](const PyCall& c) { return TimePointToMonotonic(c.call.start()); })
      .def_property_readonly(
          "total_delay", [](const PyCall& c) { return DurationToSeconds(c.call.total_delay()); })
      .def(
          "time_left",
          [](const PyCall& c, double now) -> std::optional<double> {
            std::optional<Duration> left = c.call.TimeLeft(MonotonicToTimePoint(now));
            if (!left) return std::nullopt;
            return DurationToSeconds(*left);
          },
          py::arg("now"))
      .def_property_readonly("finished", [](const PyCall& c) { return c.call.finished(); });
}

void BindFakeClock(py::module_& m) {
  py::class_<FakeClock, std::shared_ptr<FakeClock>>(
      m, "FakeClock",
      "The core's fake clock (thread-safe): mulligan.testing.FakeClock's time, read by C++\n"
      "front doors (the HTTP clients) and Python alike.")
      .def(py::init([](double start, double wall_start) {
             return std::make_shared<FakeClock>(MonotonicToTimePoint(start),
                                                UnixToWallTime(wall_start));
           }),
           py::arg("start"), py::arg("wall_start"),
           "Monotonic reading `start` and wall reading `wall_start` (Unix seconds).")
      .def("now", [](const FakeClock& c) { return TimePointToMonotonic(c.Now()); })
      .def("wall_now",
           [](const FakeClock& c) {
             return std::chrono::duration<double>(c.WallNow().time_since_epoch()).count();
           })
      .def(
          "advance",
          [](FakeClock& c, double seconds) {
            if (seconds > 0) c.Advance(SecondsToDuration(seconds, "seconds"));
          },
          py::arg("seconds"), "Moves both readings forward (negative: ignored).");
}

}  // namespace

const Pipeline& PipelineOf(py::handle core_pipeline) {
  return core_pipeline.cast<const PyPipeline&>().pipeline;
}

void BindPipeline(py::module_& m) {
  BindPipelineClass(m);
  BindCallClass(m);
  BindFakeClock(m);
}

}  // namespace python
}  // namespace mulligan
