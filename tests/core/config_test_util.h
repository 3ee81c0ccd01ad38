// tests/core/config_test_util.h — helpers shared by the config loader's
// tests: load options without environment overrides, and the error text of
// loading a document.
#ifndef MULLIGAN_TESTS_CORE_CONFIG_TEST_UTIL_H_
#define MULLIGAN_TESTS_CORE_CONFIG_TEST_UTIL_H_

#include <string>

#include "mulligan/config/config.h"

namespace mulligan {
namespace config_test {

// LoadOptions that apply no MULLIGAN_* environment override.
inline LoadOptions NoEnv() {
  LoadOptions options;
  options.env_overrides = false;
  return options;
}

// The error message of loading `json` as the file `file` (empty when it
// loads).
inline std::string LoadError(const std::string& json, const std::string& file) {
  PolicyRegistry registry;
  Result<LoadReport> report = registry.LoadString(json, file, NoEnv());
  return report.ok() ? "" : report.status().message();
}

}  // namespace config_test
}  // namespace mulligan

#endif  // MULLIGAN_TESTS_CORE_CONFIG_TEST_UTIL_H_
