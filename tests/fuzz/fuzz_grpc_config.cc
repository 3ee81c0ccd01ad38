// tests/fuzz/fuzz_grpc_config.cc — libFuzzer harness of the gRPC service
// config loader (the methodConfig[].retryPolicy of gRFC A6), through
// ParseConfig (mulligan/config/config.h).
//
// Input: spliced into `{"methodConfig": <input>}`, so every document that
// parses is read as a gRPC service config (the input may close the array
// and add more top-level fields: `[...], "retryThrottling": {...}`).
// No environment overrides, so the gRPC rules alone decide.
// Post-conditions: those of every load (config_checks.h), and for each policy
// the A6 mapping: exponential backoff, with A6's +-20% jitter (proportional,
// 0.2) when retries are, maxAttempts capped at 5 (1 without a retryPolicy),
// retryable codes in [1, 16] and present whenever retries are, and base and
// max delays > 0 when retries are.
// Dictionary: config.dict.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "config_checks.h"
#include "fuzz_check.h"
#include "mulligan/config/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 16384) return 0;  // service configs are small; keep runs fast
  const std::string text = "{\"methodConfig\": " +
                           std::string(reinterpret_cast<const char*>(data), size) + "}";
  mulligan::LoadOptions options;
  options.env_overrides = false;
  const auto loaded = mulligan::ParseConfig(text, "service.json", options);
  mulligan_fuzz::CheckLoad(loaded, "service.json");
  if (!loaded.ok()) return 0;
  for (const auto& [name, policy] : (*loaded)->policies) {
    const mulligan::RetryOptions& o = policy->options();
    const std::string what = "gRPC policy " + mulligan_fuzz::Printable(name) + ": ";
    FUZZ_CHECK(o.max_attempts >= 1 && o.max_attempts <= 5,
               what + "maxAttempts " + std::to_string(o.max_attempts));
    FUZZ_CHECK(o.backoff.kind == mulligan::BackoffKind::kExponential,
               what + "not exponential");
    FUZZ_CHECK(!name.empty(), "an empty gRPC policy name");
    if (o.max_attempts > 1) {
      // A retryPolicy: A6's d * random(0.8, 1.2) (August 2024).
      FUZZ_CHECK(o.backoff.jitter == mulligan::JitterKind::kProportional &&
                     o.backoff.jitter_fraction == 0.2,
                 what + "not A6's +-20% jitter");
      FUZZ_CHECK(!o.retryable_grpc_codes.empty(), what + "retries without retryable codes");
      FUZZ_CHECK(o.backoff.base > mulligan::Duration::zero() &&
                     o.backoff.max_delay > mulligan::Duration::zero(),
                 what + "initialBackoff or maxBackoff not > 0");
      FUZZ_CHECK(o.backoff.multiplier > 0, what + "backoffMultiplier not > 0");
    }
  }
  return 0;
}
