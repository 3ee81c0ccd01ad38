// mulligan/limits/redis_rate_limiter.h — a rate limiter whose rate and burst
// hold across every process of a service: the GCRA cells of
// limits/rate_limiter.h kept in Redis (CMake target mulligan_redis).
// (Added in 0.6.)
//
// The rule is the local limiter's, unchanged (GCRA, ITU-T I.371's "virtual
// scheduling" form; the same shape as redis-cell and Brandur Leach's
// "Rate limiting, cells, and GCRA"): one Lua script per Acquire reads the
// key's TAT, decides, and writes TAT + T in one atomic step on the server,
// so two processes can never take the same slot. One round trip per
// Acquire; no local leasing of cells (every call is exact, and the cost is
// that round trip: see bench/redis_limiter_bench.py).
//
// Keys: the cell of limiter `name` is the Redis string
//   StateObjectKey(prefix, "limiter", E(name))            own bucket
//   StateObjectKey(prefix, "limiter", E(name) + ":" + key) per key
// where E escapes '%' as %25 and ':' as %3A (so no name and key pair can
// collide with another), holding TAT in Unix microseconds, with a PEXPIRE at
// TAT: a cell whose TAT has passed is a full bucket, the same as no cell, so
// Redis forgets idle keys by itself (no max_keys bound is needed there).
//
// Time: the caller's `now` (a monotonic TimePoint, the same one the caller
// waits from) is mapped to Unix microseconds through an anchor taken once at
// creation from the state's clock (RedisState::clock()):
//   unix_us(now) = WallNow() at creation + (now - Now() at creation)
// and passed to the script: one clock per decision, scriptable in tests
// (FakeClock). The alternative, the server's TIME inside the script, would
// remove clock skew between machines but decide on a clock the caller does
// not wait on, and cannot be scripted in tests. The cost of the caller's
// clock: a machine whose wall clock is off by d (NTP keeps d to a few ms)
// sees slots up to d early or late, so up to d x rate calls may go early
// across a skew. Arithmetic is in integer microseconds (exact in Lua's
// doubles up to 2^53 us, about 285 years): T and tau are the limiter's
// nanosecond values rounded to the nearest microsecond, so rates above
// 10^6 per second are not resolved.
//
// Redis down, slow or failing: the script call returns kStateUnavailable
// (bounded by the state's command_timeout; while the state waits for its
// reconnect backoff no round trip is made) and RateLimiter decides that
// call locally at fallback_rate (see limits/rate_limiter.h); it is counted
// in fallbacks(), marked in RateDecision::fallback, and the state's Health()
// says unreachable with the cause. Nothing raises. The script is not
// retry-safe (a second run would take a second slot), so the first call
// after a Redis restart falls back once.
//
// Thread-safety: the limiter is thread-safe; calls share the state's one
// connection (one round trip at a time per RedisState).

#ifndef MULLIGAN_LIMITS_REDIS_RATE_LIMITER_H_
#define MULLIGAN_LIMITS_REDIS_RATE_LIMITER_H_

#include <memory>
#include <string>
#include <string_view>

#include "mulligan/base/status.h"
#include "mulligan/limits/rate_limiter.h"
#include "mulligan/state/redis.h"

namespace mulligan {
inline namespace v0 {

// Returns a RateLimiter whose cells live in `state` (options.backend is set
// here; one given in `options` is replaced). kInvalidArgument as
// RateLimiter::Create, plus "state must not be null" and a name outside
// the shared-name rule (ValidateSharedName, state/backend.h: 1 to 200
// printable ASCII bytes without '{' or '}'; changed in 0.6 from "not
// empty"). The name is the shared identity: every process that uses the
// same prefix and name shares one budget, so they must agree on rate and
// burst.
// Thread-safety: thread-safe. (Added in 0.6.)
Result<std::shared_ptr<RateLimiter>> CreateRedisRateLimiter(std::shared_ptr<RedisState> state,
                                                            RateLimiterOptions options);

// Returns the backend CreateRedisRateLimiter puts in options.backend: the
// GCRA cells of every limiter given it live in `state` (e.g. for
// PolicyRegistry::SetSharedRateLimiterBackend, config/config.h). A limiter
// using it must have a name that passes ValidateSharedName (the caller's
// check; CreateRedisRateLimiter makes it). kInvalidArgument
// "rate limiter state must not be null". Thread-safety: thread-safe.
// (Added in 0.6.)
Result<std::shared_ptr<RateLimiterBackend>> CreateRedisRateLimiterBackend(
    std::shared_ptr<RedisState> state);

// The Redis key of a limiter's cell (see the file comment). (Added in 0.6.)
std::string RedisRateLimiterKey(const RedisState& state, std::string_view name,
                                std::string_view key);

}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_LIMITS_REDIS_RATE_LIMITER_H_
