// bindings/python/bind_simulate.cc — _core.simulate over the fleet simulator
// (core/include/mulligan/simulate/), for `mulligan simulate`
// (python/mulligan/_simulate/). The scenario crosses as its JSON text, the
// report as its CSV and JSON texts; every decision is the core's. The run
// releases the GIL. (Added in 0.6.)

#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bindings.h"
#include "mulligan/simulate/fleet.h"
#include "mulligan/simulate/report.h"
#include "mulligan/simulate/scenario.h"

namespace mulligan {
namespace python {

void BindSimulate(py::module_& m) {
  m.def(
      "simulate",
      [](const std::string& text, const std::string& source, std::optional<int> clients,
         std::optional<uint64_t> seed, const std::vector<int>& sweep) {
        Result<SimulationReport> report = InvalidArgumentError("not run");
        {
          py::gil_scoped_release release;
          Result<Scenario> scenario = ParseScenario(text, source);
          if (!scenario.ok()) {
            report = scenario.status();
          } else {
            SimRunOptions options;
            options.clients = clients;
            options.seed = seed;
            options.sweep = sweep;
            report = RunScenario(*scenario, options);
          }
        }
        if (!report.ok()) ThrowStatus(report.status());
        return py::make_tuple(ReportToCsv(*report), ReportToJson(*report));
      },
      py::arg("scenario"), py::arg("source"), py::arg("clients") = std::nullopt,
      py::arg("seed") = std::nullopt, py::arg("sweep") = std::vector<int>{},
      "Runs a scenario (JSON text; `source` names it in errors) and returns "
      "(csv, json); `sweep` (client counts, replacing the scenario's; not "
      "with `clients`) runs it once per count (0.6). ValueError names a bad "
      "field.");
}

}  // namespace python
}  // namespace mulligan
