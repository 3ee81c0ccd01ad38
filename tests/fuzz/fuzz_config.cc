// tests/fuzz/fuzz_config.cc — libFuzzer harness of the mulligan JSON
// configuration loader, ParseConfig (mulligan/config/config.h), with the
// environment overrides it applies.
//
// Input: the document, then optionally a NUL byte followed by environment
// variables "NAME=value", separated by NUL bytes (a raw NUL is never valid
// JSON, so the split is unambiguous). The loader sees only that environment,
// never the process's.
// Post-conditions (config_checks.h): a load either fails with kInvalidArgument
// and a message whose every line names the source (or the environment), or
// succeeds with every value in its documented range, every client's policy
// and breaker defined, and policies and breakers that work when used.
// Dictionary: config.dict (keys, enum values, durations of both formats).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "config_checks.h"
#include "fuzz_check.h"
#include "mulligan/config/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 16384) return 0;  // configuration files are small; keep runs fast
  mulligan_fuzz::Input in(data, size);
  const std::string_view text = in.Field('\0');
  std::map<std::string, std::string> env;
  while (!in.AtEnd()) {
    const std::string_view entry = in.Field('\0');
    const size_t eq = entry.find('=');
    if (eq != std::string_view::npos) {
      env[std::string(entry.substr(0, eq))] = std::string(entry.substr(eq + 1));
    }
  }
  mulligan::LoadOptions options;
  options.env = [&env](const std::string& name) -> std::optional<std::string> {
    auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
  mulligan_fuzz::CheckLoad(mulligan::ParseConfig(text, "fuzz.json", options), "fuzz.json");
  return 0;
}
