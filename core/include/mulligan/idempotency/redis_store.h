// mulligan/idempotency/redis_store.h — the idempotency store on Redis: one
// record of keys for every process and machine of a service (CMake target
// mulligan_redis). (Added in 0.5.)
//
// Same semantics as the in-memory store (store.h: reserve, complete, replay,
// in flight -> 409 with retry_after, fingerprint mismatch -> 422, ttl, lease
// expiry), with each operation ONE atomic Lua script on ONE key:
//   Reserve   one round trip (EVALSHA)
//   Complete  one round trip
//   Release   one round trip
// (plus one SCRIPT LOAD per script, once per process, and one EVAL more when
// the server answers NOSCRIPT). A record is a hash at
//   {<prefix>:idem:<scope length>:<scope>:<key>}   (backend.h's key naming)
// holding its state, fingerprint, lease token, expiry and stored response.
//
// Time: Redis runs the scripts on the caller's clock, not the server's. Each
// `now` is turned into Unix milliseconds as
//   wall_ms(now) = WallNow() at Create + (now - Now() at Create)
// of the RedisState's clock, and passed to the scripts, which compare it
// with the record's expiry (so a FakeClock drives ttl and lease expiry
// exactly in tests). Processes on several machines agree to within their
// wall clocks' skew (NTP): a lease or ttl may end that much early or late,
// and nothing else depends on the clocks. Durations are rounded down to
// milliseconds. Besides that logical expiry, every record carries a Redis
// expiry (PEXPIRE) of its lease or ttl in server time, so the server frees
// the memory by itself; Sweep() therefore has nothing to do. The memory
// bounds of IdempotencyStoreOptions (max_entries, max_bytes, shards) do not
// apply: the server's maxmemory does (use a noeviction policy, or
// volatile-ttl, so that in-flight records are not evicted early).
//
// Failure (fail closed): when Redis cannot be reached, times out (the
// RedisState's command_timeout) or answers an error, every operation returns
// kStateUnavailable and never throws (a Redis restart between two calls is
// not a failure: the scripts are retry-safe, see redis.h, and are sent again
// on a fresh connection); the HTTP middleware answers 503 with
// Retry-After and does not run the handler. A Reserve whose reply was lost
// may have reserved the key on the server: the key then answers 409 until
// its lease runs out, so a handler never runs twice. A Complete is
// acknowledged (OK) only after the server stored the record; a Complete whose
// reply was lost may be repeated with the same lease: the script accepts a
// lease that already completed its own record. Records the server kept
// across a restart (RDB or AOF persistence) are replayed after it.
//
// Leases: tokens are 64-bit random numbers (std::random_device-seeded), so
// processes need no shared counter.
//
// Thread-safety: thread-safe (the RedisState serialises the round trips).

#ifndef MULLIGAN_IDEMPOTENCY_REDIS_STORE_H_
#define MULLIGAN_IDEMPOTENCY_REDIS_STORE_H_

#include <memory>

#include "mulligan/base/status.h"
#include "mulligan/idempotency/store.h"
#include "mulligan/state/redis.h"

namespace mulligan {
inline namespace v0 {

class RedisIdempotencyStore {
 public:
  // Creates a store on `state` (shared; may be shared with other stores and
  // parts). Validates ttl (> 0), lease (> 0), in_flight_retry_after (>= 0)
  // and max_key_length (>= 1); kInvalidArgument names the field, and for a
  // null `state`, "state". The other fields of `options` are not used (see
  // the file comment).
  static Result<std::unique_ptr<IdempotencyStore>> Create(std::shared_ptr<RedisState> state,
                                                          const IdempotencyStoreOptions& options);
};

// Encodes a stored response as the Redis store keeps it (a versioned,
// length-prefixed byte string) and decodes it back. Decode returns kInternal
// for bytes that are not such an encoding (a corrupt record).
// Thread-safety: thread-safe.
std::string EncodeStoredResponse(const StoredResponse& response);
Result<StoredResponse> DecodeStoredResponse(std::string_view bytes);

}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_IDEMPOTENCY_REDIS_STORE_H_
