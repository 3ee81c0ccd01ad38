// core_simulate_bench — wall time of the fleet simulator (issue 21: "runs
// 100,000 clients through a 60-second outage scenario in under a minute").
//
// A standalone program (no benchmark library): runs a scenario file (default
// python/mulligan/_simulate/scenarios/outage.json) with a client count
// (default 100000) as `mulligan simulate` does (every mode, on up to
// hardware_concurrency threads) and prints the wall time and the attempts
// per mode, so a run can be checked against the README's table.
//
//   build/bench/core_simulate_bench [SCENARIO.json] [CLIENTS]
//
// Build the core_simulate_bench target of bench/CMakeLists.txt
// (cmake -DMULLIGAN_BUILD_BENCH=ON). (Added in 0.6.)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "mulligan/simulate/fleet.h"
#include "mulligan/simulate/scenario.h"

int main(int argc, char** argv) {
  const std::string path =
      argc > 1 ? argv[1] : "python/mulligan/_simulate/scenarios/outage.json";
  const int clients = argc > 2 ? std::atoi(argv[2]) : 100000;
  mulligan::Result<mulligan::Scenario> scenario = mulligan::ParseScenarioFile(path);
  if (!scenario.ok()) {
    std::fprintf(stderr, "%s\n", scenario.status().message().c_str());
    return 2;
  }
  mulligan::SimRunOptions options;
  options.clients = clients;
  const auto start = std::chrono::steady_clock::now();
  mulligan::Result<mulligan::SimulationReport> report = mulligan::RunScenario(*scenario, options);
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!report.ok()) {
    std::fprintf(stderr, "%s\n", report.status().message().c_str());
    return 2;
  }
  std::printf("%s: %d clients, %zu modes, %.2f s wall\n", path.c_str(), clients,
              report->modes.size(), wall);
  for (const mulligan::ModeReport& m : report->modes) {
    std::printf("  %-16s attempts %lld\n", m.mode.c_str(), static_cast<long long>(m.attempts));
  }
  return 0;
}
