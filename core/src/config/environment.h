// core/src/config/environment.h — the environment overrides of a loaded
// configuration (private to mulligan_config):
// MULLIGAN_<POLICY|BREAKER|CLIENT>_<NAME>_<FIELD> (config.h lists them).
//
// An override applies to an entry the document defines, after the entry's
// own fields; the name is upper-cased with every character other than A-Z
// and 0-9 turned into '_'. A value is read as JSON when it is a JSON scalar
// (3, 1.5, true, null), else as a string ("250ms", "exponential"); "none"
// also means null for DEADLINE and ATTEMPT_TIMEOUT. An applied override is a
// warning "<source>: <path>: overridden by VAR=value"; a bad value is an
// error "environment: VAR: expected ...".
//
// Thread-safety: reentrant; the lookup is the Context's (std::getenv or
// LoadOptions::env).

#ifndef MULLIGAN_CONFIG_ENVIRONMENT_H_
#define MULLIGAN_CONFIG_ENVIRONMENT_H_

#include <string>
#include <vector>

#include "mulligan/breaker/circuit_breaker.h"
#include "mulligan/config/config.h"
#include "mulligan/retry/policy.h"
#include "reader.h"

namespace mulligan {
inline namespace v0 {
namespace internal {

// Applies MULLIGAN_POLICY_<NAME>_{MAX_ATTEMPTS,BACKOFF,BASE_DELAY,MULTIPLIER,
// MAX_DELAY,JITTER,DEADLINE,ATTEMPT_TIMEOUT} to the policy `name` ("policies"
// entry) in `out`.
void ApplyPolicyEnv(Context& ctx, const std::string& name, RetryOptions& out);

// Applies MULLIGAN_BREAKER_<NAME>_{FAILURE_THRESHOLD,RESET_TIMEOUT,
// HALF_OPEN_MAX_CALLS} to the breaker `name` ("breakers" entry) in `out`.
void ApplyBreakerEnv(Context& ctx, const std::string& name, CircuitBreakerOptions& out);

// Applies MULLIGAN_CLIENT_<NAME>_{ATTEMPT_TIMEOUT,CONNECT_TIMEOUT,VERIFY_TLS,
// USER_AGENT} to the client `name` ("clients" entry) in `out`.
void ApplyClientEnv(Context& ctx, const std::string& name, ClientSettings& out);

// Apply MULLIGAN_BUDGET_<NAME>_<FIELD> (MAX_TOKENS, TOKEN_RATIO, CAPACITY,
// RETRY_COST, TIMEOUT_COST, THROTTLING_COST, NO_RETRY_INCREMENT, TTL,
// PERCENT, MIN_RETRIES_PER_SECOND: a field of another kind than the
// budget's is an error), MULLIGAN_THROTTLE_<NAME>_{K,WINDOW},
// MULLIGAN_BULKHEAD_<NAME>_{MAX_CONCURRENT,MAX_QUEUE,MAX_WAIT} and
// MULLIGAN_RATE_LIMITER_<NAME>_{RATE,BURST,MAX_WAIT} to the entry `name` of
// its section. MAX_WAIT also accepts "none". (Added in 0.4.)
// MULLIGAN_ADAPTIVE_RATE_<NAME>_{BETA,SCALE_CONSTANT,SMOOTHING,BUCKET,
// MIN_FILL_RATE,MAX_RATE_SCALE,MAX_WAIT} likewise. (Added in 0.5.)
void ApplyLimitEnv(Context& ctx, const std::string& name, BudgetOptions& out);
void ApplyLimitEnv(Context& ctx, const std::string& name, ThrottleOptions& out);
void ApplyLimitEnv(Context& ctx, const std::string& name, BulkheadOptions& out);
void ApplyLimitEnv(Context& ctx, const std::string& name, RateLimiterOptions& out);
void ApplyLimitEnv(Context& ctx, const std::string& name, AdaptiveRateOptions& out);

// Reports, as warnings, the environment's MULLIGAN_BUDGET_, MULLIGAN_THROTTLE_,
// MULLIGAN_BULKHEAD_, MULLIGAN_RATE_LIMITER_ and (0.5) MULLIGAN_ADAPTIVE_RATE_
// variables that name no entry
// of `snapshot`'s sections or no field of one, as ReportUnmatchedEnv does.
// (Added in 0.4.)
void ReportUnmatchedLimitEnv(Context& ctx, const ConfigSnapshot& snapshot);

// Reports, as warnings, the environment's MULLIGAN_POLICY_, MULLIGAN_BREAKER_
// and MULLIGAN_CLIENT_ variables that no Apply*Env above reads for the
// document's entries: those naming no entry of their kind ("<source>: VAR:
// names no policy of this document (policies: a, b); not applied") and those
// naming an entry but no field of it ("... names no field of policy
// \"payments\" (fields: MAX_ATTEMPTS, ...); not applied"). The names are
// the entries the document defines, as written in it.
void ReportUnmatchedEnv(Context& ctx, const std::vector<std::string>& policies,
                        const std::vector<std::string>& breakers,
                        const std::vector<std::string>& clients);

}  // namespace internal
}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_CONFIG_ENVIRONMENT_H_
