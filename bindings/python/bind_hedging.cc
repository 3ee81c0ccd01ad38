// bindings/python/bind_hedging.cc — hedged calls for mulligan._core
// (hedging/hedging.h). (Added in 0.5.)
//
//   h = _core.HedgingPolicy(max_attempts=2, delay=0.0, quantile=None,
//                           quantile_window=100, quantile_min_samples=20)
//   call = h.begin(pipeline, now, replay_safe=True)      # a _core.Pipeline
//   action, copy, next_start, reason = call.admit(now)   # "start" | "wait" | "no_more"
//   finished, winner, reason, cancel = call.record(copy, outcome, now)
//   call.abandon(now)   (a failure)  /  call.cancel(now)   (the caller's cancel, 0.6)
//
// Every decision is the core HedgedCall's: the Python driver
// (python/mulligan/_hedging/) only starts and cancels asyncio tasks and turns
// exceptions into Outcomes. `now` is a monotonic reading in seconds (the
// event loop's time()); durations cross as float seconds. Nothing here
// blocks; the GIL is held throughout.
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <pybind11/stl.h>

#include "bindings.h"
#include "mulligan/hedging/hedging.h"
#include "mulligan/pipeline/pipeline.h"

namespace mulligan {
namespace python {
namespace {

// One hedged call; keeps its pipeline and hedging policy objects alive.
struct PyHedgedCall {
  PyHedgedCall(HedgedCall c, py::object p, py::object h)
      : call(std::move(c)), pipeline(std::move(p)), hedging(std::move(h)) {}
  HedgedCall call;
  py::object pipeline;
  py::object hedging;
};

const char* ActionName(HedgeAdmission::Action action) {
  switch (action) {
    case HedgeAdmission::Action::kStart:
      return "start";
    case HedgeAdmission::Action::kWait:
      return "wait";
    case HedgeAdmission::Action::kNoMore:
      break;
  }
  return "no_more";
}

std::shared_ptr<HedgingPolicy> MakeHedging(int max_attempts, double delay,
                                           std::optional<double> quantile, int window,
                                           int min_samples) {
  HedgingOptions options;
  options.max_attempts = max_attempts;
  if (delay < 0) {
    // SecondsToDuration refuses negatives with its own text; name the field
    // as the core does.
    throw py::value_error("hedging: delay must be >= 0 seconds, got " + std::to_string(delay));
  }
  options.hedging_delay = SecondsToDuration(delay, "delay");
  options.delay_quantile = quantile;
  options.quantile_window = window;
  options.quantile_min_samples = min_samples;
  return Unwrap(HedgingPolicy::Create(options));
}

void BindHedgingPolicy(py::module_& m) {
  py::class_<HedgingPolicy, std::shared_ptr<HedgingPolicy>>(
      m, "HedgingPolicy", "A validated hedging policy (gRPC A6 hedgingPolicy); thread-safe.")
      .def(py::init(&MakeHedging), py::kw_only(), py::arg("max_attempts") = 2,
           py::arg("delay") = 0.0, py::arg("quantile") = py::none(),
           py::arg("quantile_window") = 100, py::arg("quantile_min_samples") = 20,
           "Validates the options (ValueError names the field); max_attempts above 5 is 5.")
      .def(
          "begin",
          [](py::object self, py::object pipeline, double now, bool replay_safe, bool gate_only) {
            const HedgingPolicy& h = self.cast<const HedgingPolicy&>();
            CallOptions options;
            options.replay_safe = replay_safe;
            HedgedCall call = h.Begin(PipelineOf(pipeline), MonotonicToTimePoint(now), options,
                                      gate_only ? HedgeAccounting::kGateOnly : HedgeAccounting::kFull);
            return PyHedgedCall(std::move(call), std::move(pipeline), std::move(self));
          },
          py::arg("pipeline"), py::arg("now"), py::arg("replay_safe") = true,
          py::arg("gate_only") = false,
          "Begins one hedged call at `now` (seconds) through a _core.Pipeline; gate_only:\n"
          "HedgeAccounting::kGateOnly (the copies' own calls record their outcomes; 0.6).")
      .def_property_readonly("max_attempts", &HedgingPolicy::max_attempts)
      .def_property_readonly(
          "current_delay",
          [](const HedgingPolicy& h) { return DurationToSeconds(h.CurrentDelay()); },
          "Seconds after a copy's start before the next may start, now.");
}

void BindHedgedCall(py::module_& m) {
  py::class_<PyHedgedCall>(m, "HedgedCall", "One hedged call (not thread-safe).")
      .def(
          "admit",
          [](PyHedgedCall& c, double now) {
            HedgeAdmission a = c.call.Admit(MonotonicToTimePoint(now));
            const double next = a.wait() ? TimePointToMonotonic(a.next_start) : now;
            return py::make_tuple(ActionName(a.action), a.copy, next, StopReasonName(a.reason));
          },
          py::arg("now"),
          "(action, copy, next_start, reason): start `copy` now, wait until next_start, or\n"
          "no_more copies (reason says why).")
      .def(
          "record",
          [](PyHedgedCall& c, int copy, const Outcome& outcome, double now) {
            HedgeDecision d = c.call.Record(copy, outcome, MonotonicToTimePoint(now));
            return py::make_tuple(d.finished, d.winner, StopReasonName(d.reason), d.cancel);
          },
          py::arg("copy"), py::arg("outcome"), py::arg("now"),
          "(finished, winner, reason, cancel): the copies in `cancel` must be cancelled now.")
      .def(
          "abandon", [](PyHedgedCall& c, double now) { c.call.Abandon(MonotonicToTimePoint(now)); },
          py::arg("now"),
          "Ends a call that stopped on a failure: every running copy is released; counted failed.")
      .def(
          "cancel", [](PyHedgedCall& c, double now) { c.call.Cancel(MonotonicToTimePoint(now)); },
          py::arg("now"),
          "Ends a call its caller cancelled (a cancelled task, Ctrl-C): every running copy is\n"
          "released and the call counts cancelled, never failed (HedgedCall::Cancel). (0.6)")
      .def_property_readonly("started", [](const PyHedgedCall& c) { return c.call.started(); })
      .def_property_readonly("running", [](const PyHedgedCall& c) { return c.call.running(); })
      .def_property_readonly("finished", [](const PyHedgedCall& c) { return c.call.finished(); })
      .def_property_readonly("winner", [](const PyHedgedCall& c) { return c.call.winner(); })
      .def_property_readonly(
          "stop_reason", [](const PyHedgedCall& c) { return StopReasonName(c.call.stop_reason()); })
      .def_property_readonly(
          "breaker_name",
          [](const PyHedgedCall& c) {
            return c.call.breaker() != nullptr ? Utf8(c.call.breaker()->name()) : py::str("");
          })
      .def_property_readonly(
          "retry_in",
          [](const PyHedgedCall& c) {
            const Duration d = c.call.refusal_retry_in();
            return d == Duration::max() ? std::numeric_limits<double>::infinity()
                                        : DurationToSeconds(d);
          },
          "After a breaker refusal: seconds until it admits a probe (inf: forced open).")
      .def_property_readonly(
          "refusal_message",
          [](const PyHedgedCall& c) { return Utf8(c.call.RefusalStatus().message()); });
}

}  // namespace

void BindHedging(py::module_& m) {
  BindHedgingPolicy(m);
  BindHedgedCall(m);
}

}  // namespace python
}  // namespace mulligan
