// bindings/python/bind_waits.cc — _core.Wait and _core.Stop: the engine's
// composed waits (retry/wait.h) and stop conditions (retry/stop.h), built
// by mulligan.wait and mulligan.stop and handed to _core.RetryPolicy.
//
// Durations cross as float seconds; the core validates every term when the
// policy is created (ValueError naming the term).
#include <optional>
#include <string>
#include <vector>

#include <pybind11/stl.h>

#include "bindings.h"
#include "mulligan/retry/stop.h"
#include "mulligan/retry/wait.h"

namespace mulligan {
namespace python {
namespace {

std::optional<Duration> OptionalDuration(std::optional<double> seconds, const char* field) {
  if (!seconds) return std::nullopt;
  return SecondsToDuration(*seconds, field);
}

void BindWait(py::module_& m) {
  py::class_<WaitExpr>(m, "Wait", "A composed wait of the engine (immutable value).")
      .def_static(
          "constant", [](double s) { return WaitExpr::Constant(SecondsToDuration(s, "wait")); },
          py::arg("seconds"))
      .def_static(
          "linear",
          [](double start, double increment, std::optional<double> max) {
            return WaitExpr::Linear(SecondsToDuration(start, "start"),
                                    SecondsToDuration(increment, "increment"),
                                    OptionalDuration(max, "max"));
          },
          py::arg("start"), py::arg("increment"), py::arg("max") = py::none())
      .def_static(
          "exponential",
          [](double base, double multiplier, std::optional<double> max) {
            return WaitExpr::Exponential(SecondsToDuration(base, "base"), multiplier,
                                         OptionalDuration(max, "max"));
          },
          py::arg("base"), py::arg("multiplier"), py::arg("max") = py::none())
      .def_static(
          "uniform",
          [](double low, double high) {
            return WaitExpr::Uniform(SecondsToDuration(low, "min"), SecondsToDuration(high, "max"));
          },
          py::arg("min"), py::arg("max"))
      .def_static(
          "jitter", [](double max) { return WaitExpr::Jitter(SecondsToDuration(max, "max")); },
          py::arg("max"))
      .def_static("sum", &WaitExpr::Sum, py::arg("terms"))
      .def_static("chain", &WaitExpr::Chain, py::arg("terms"))
      .def_property_readonly("kind", [](const WaitExpr& w) { return WaitKindName(w.kind); })
      .def("__str__", &WaitExpr::ToString);
}

void BindStop(py::module_& m) {
  py::class_<StopExpr>(m, "Stop", "A composed stop condition of the engine (immutable value).")
      .def_static("after_attempts", &StopExpr::AfterAttempts, py::arg("attempts"))
      .def_static(
          "after_elapsed",
          [](double s) { return StopExpr::AfterElapsed(SecondsToDuration(s, "after_elapsed")); },
          py::arg("seconds"))
      .def_static("never", &StopExpr::Never)
      .def_static("predicate", &StopExpr::Predicate, py::arg("slot"))
      .def_static("any", &StopExpr::Any, py::arg("terms"))
      .def_static("all", &StopExpr::All, py::arg("terms"))
      .def_property_readonly("kind", [](const StopExpr& s) { return StopKindName(s.kind); })
      .def("__str__", &StopExpr::ToString);
  m.attr("MAX_STOP_PREDICATES") = kMaxStopPredicates;
}

}  // namespace

void BindWaits(py::module_& m) {
  BindWait(m);
  BindStop(m);
}

}  // namespace python
}  // namespace mulligan
