// core/src/config/limits_format.h — the overload-protection sections of the
// mulligan format (private to mulligan_config; issue 14): "budgets",
// "throttles", "bulkheads", "rate_limiters" and (0.5) "adaptive_rates", each
// an object of entries by name, and the references a policy makes to them
// ("budget", "throttle", "bulkhead", "rate_limiter", "adaptive_rate"). The
// fields and their ranges are those of the core's options (budget/budget.h,
// budget/throttle.h, limits/bulkhead.h, limits/rate_limiter.h,
// limits/adaptive_rate.h) and are documented in docs/configuration.md.
//
// Thread-safety: reentrant (the field tables are immutable statics).

#ifndef MULLIGAN_CONFIG_LIMITS_FORMAT_H_
#define MULLIGAN_CONFIG_LIMITS_FORMAT_H_

#include <string>
#include <string_view>

#include "fields.h"
#include "mulligan/config/config.h"
#include "reader.h"

namespace mulligan {
inline namespace v0 {
namespace internal {

// The fields of the five sections' entries, by JSON name (fields.h).
const FieldTable<BudgetOptions>& BudgetFields();
const FieldTable<ThrottleOptions>& ThrottleFields();
const FieldTable<BulkheadOptions>& BulkheadFields();
const FieldTable<RateLimiterOptions>& RateLimiterFields();
const FieldTable<AdaptiveRateOptions>& AdaptiveRateFields();
// The kind a budget field belongs to (0 token_bucket, 1 quota, 2 ratio), or
// -1 for a field of every kind ("kind").
int KindOfBudgetField(std::string_view key);

// Reads the five sections of `root`, when present, into `out` (each entry
// validated by its part's own Validate; the options' names set to the keys).
void ReadLimitSections(Context& ctx, const json::object& root, ConfigSnapshot& out);

// When `key` is one of the policy's part references ("budget", "throttle",
// "bulkhead", "rate_limiter", "adaptive_rate"), reads the name at `path` into `limits` (a
// non-empty string, or an error) and returns true; returns false for any
// other key (nothing is read).
bool ReadPolicyLimitField(Context& ctx, const std::string& path, std::string_view key,
                          const json::value& v, PolicyLimits& limits);

// Reports each reference of `limits` (read from the policy object `source`
// at `path`) that names no entry of its section: neither one loaded into
// `out` nor one `root` defines (an entry that failed has its own error).
void CheckPolicyLimits(Context& ctx, const json::object& root, const ConfigSnapshot& out,
                       const std::string& path, const PolicyLimits& limits,
                       const json::object& source);

// Reads a gRPC service config's "retryThrottling" object at `path` (gRFC A6:
// maxTokens in (0, 1000], tokenRatio > 0 with at most 3 decimal places,
// both required, no other field) into a token-bucket budget named `name`.
// Returns false after recording errors.
bool ReadRetryThrottling(Context& ctx, const std::string& path, const json::value& v,
                         const std::string& name, BudgetOptions& out);

}  // namespace internal
}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_CONFIG_LIMITS_FORMAT_H_
