// tests/core/simulate/sim_test_util.h — helpers of the fleet simulator's
// tests: run a scenario text, find a mode's row, expect a refusal.
#ifndef MULLIGAN_TESTS_CORE_SIMULATE_SIM_TEST_UTIL_H_
#define MULLIGAN_TESTS_CORE_SIMULATE_SIM_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <string>

#include "mulligan/simulate/fleet.h"
#include "mulligan/simulate/report.h"
#include "mulligan/simulate/scenario.h"

namespace mulligan {

// The row of mode `name` (the first, for a sweep); a test failure if none.
inline const ModeReport& ModeNamed(const SimulationReport& r, const std::string& name) {
  for (const ModeReport& m : r.modes) {
    if (m.mode == name) return m;
  }
  ADD_FAILURE() << "no mode " << name;
  return r.modes.front();
}

// Parses and runs `text` (with `options`), failing the test on an error.
inline SimulationReport MustRun(const std::string& text, const SimRunOptions& options = {}) {
  Result<Scenario> s = ParseScenario(text, "test.json");
  EXPECT_TRUE(s.ok()) << s.status().message();
  if (!s.ok()) return {};
  Result<SimulationReport> r = RunScenario(*s, options);
  EXPECT_TRUE(r.ok()) << r.status().message();
  if (!r.ok()) return {};
  return *r;
}

// Expects ParseScenario to refuse `text` with a message containing `fragment`.
inline void ExpectRefused(const std::string& text, const std::string& fragment) {
  Result<Scenario> s = ParseScenario(text, "bad.json");
  ASSERT_FALSE(s.ok()) << text;
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find(fragment), std::string::npos) << s.status().message();
}

}  // namespace mulligan

#endif  // MULLIGAN_TESTS_CORE_SIMULATE_SIM_TEST_UTIL_H_
