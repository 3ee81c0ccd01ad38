// mulligan/idempotency/store.h — the server side of idempotency keys: a
// bounded, thread-safe record of keys (in flight, or completed with the stored
// response) that lets a server run a retried unsafe request only once.
//
// Semantics (DESIGN.md section 4, the IETF draft "The Idempotency-Key HTTP
// Header Field", Stripe's API):
//
//   Reserve(scope, key, fingerprint, now)
//     absent or expired      -> kReserved: run the handler, then Complete() or
//                               Release() with the lease
//     completed, same print  -> kReplay: send the stored response, do not run
//     in flight, same print  -> kInFlight: answer 409 with retry_after
//     different fingerprint  -> kFingerprintMismatch: answer 422
//
// Entries are keyed by (scope, key): the scope (for example the authenticated
// principal) keeps one user's key from ever replaying another user's response.
// A lease bounds how long an in-flight entry blocks its key, so a crashed
// handler cannot block it forever. Memory is bounded by entry count and bytes:
// completed entries are evicted oldest first, in-flight entries never (a store
// full of in-flight entries refuses new keys with kUnavailable). Expired
// entries are swept lazily by the operations themselves; there is no thread.
//
// The store never reads time by itself: every operation takes `now`.
//
// Example:
//   auto store = IdempotencyStore::Create({}).value();
//   auto r = store->Reserve(user, key, fingerprint, clock.Now());
//   if (r.ok() && r->state == ReserveState::kReserved) {
//     StoredResponse response = RunHandler();
//     (void)store->Complete(r->lease, response, clock.Now());
//   }

#ifndef MULLIGAN_IDEMPOTENCY_STORE_H_
#define MULLIGAN_IDEMPOTENCY_STORE_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mulligan/base/clock.h"
#include "mulligan/base/status.h"

namespace mulligan {
inline namespace v0 {

// The longest key accepted by default (Stripe's limit).
inline constexpr size_t kDefaultMaxIdempotencyKeyLength = 255;

// Parses an Idempotency-Key header field value into the key.
//
// Accepts the draft's form, a Structured Fields String (RFC 8941 section
// 3.3.3: DQUOTE, printable ASCII with \" and \\ escapes, DQUOTE), and, for
// Stripe-style clients (mulligan's own client included, which sends a bare
// UUID), a bare value of printable ASCII without spaces, quotes or
// backslashes. Surrounding spaces and tabs are ignored. Returns the unquoted
// key, or kInvalidArgument naming the problem: empty, bad character or
// escape, unterminated string, or longer than `max_length` (counted on the
// unquoted key).
// Thread-safety: thread-safe.
Result<std::string> ParseIdempotencyKey(std::string_view field_value,
                                        size_t max_length = kDefaultMaxIdempotencyKeyLength);

// A response as stored and replayed. Header fields keep their order and case.
struct StoredResponse {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
};

struct IdempotencyStoreOptions {
  // How long a completed response is replayed. Must be > 0. Default 24 h.
  Duration ttl = std::chrono::hours(24);
  // How long a reservation blocks its key before another request may take it
  // over (the handler is presumed dead). Must be > 0. Default 60 s.
  Duration lease = std::chrono::seconds(60);
  // The Retry-After hint given with kInFlight: the lease's remaining time,
  // capped at this value. Must be >= 0. Default 1 s.
  Duration in_flight_retry_after = std::chrono::seconds(1);
  // Bound on entries (in flight and completed). Must be >= 1. Default 100,000.
  size_t max_entries = 100000;
  // Bound on accounted bytes: keys, fingerprints, stored responses (status,
  // header fields, body) plus a fixed per-entry overhead. Must be >= 1.
  // Default 256 MiB.
  size_t max_bytes = size_t{256} << 20;
  // The longest key Reserve accepts. Must be >= 1. Default 255.
  size_t max_key_length = kDefaultMaxIdempotencyKeyLength;
  // Number of independently locked shards (rounded down to keep at least one
  // entry per shard). Both bounds are split evenly between the shards and
  // enforced per shard, so the totals are never exceeded; with an uneven
  // spread of keys a shard may evict or refuse slightly before the total is
  // reached. Must be in [1, 1024]. Default 16.
  int shards = 16;
};

// What Reserve found.
enum class ReserveState : int {
  // The key was free (absent, expired, or its lease had run out): the caller
  // owns it now and must Complete() or Release() the lease.
  kReserved = 0,
  // A completed response is stored for this key and fingerprint: send it.
  kReplay = 1,
  // Another request holds the key and has not finished: answer 409.
  kInFlight = 2,
  // The key was used with a different request fingerprint: answer 422.
  kFingerprintMismatch = 3,
};

// Returns "reserved", "replay", "in_flight" or "fingerprint_mismatch".
const char* ReserveStateName(ReserveState state);

// Proof of a reservation, given to Complete() or Release().
struct IdempotencyLease {
  std::string scope;
  std::string key;
  // Distinguishes this reservation from later ones of the same key (after a
  // release or an expired lease). 0 means "no lease".
  uint64_t token = 0;
};

struct Reservation {
  ReserveState state = ReserveState::kReserved;
  // kReserved: the lease to complete or release.
  IdempotencyLease lease;
  // kReplay: the stored response (shared, immutable).
  std::shared_ptr<const StoredResponse> response;
  // kInFlight: when to try again (see in_flight_retry_after).
  Duration retry_after = Duration::zero();
};

// Counters and gauges of a store (a consistent sum over shards is not
// guaranteed while other threads work).
struct IdempotencyStoreStats {
  size_t entries = 0;
  size_t in_flight = 0;
  size_t bytes = 0;
  uint64_t reserved = 0;
  uint64_t replayed = 0;
  uint64_t in_flight_conflicts = 0;
  uint64_t fingerprint_mismatches = 0;
  uint64_t completed = 0;
  uint64_t released = 0;
  // Completed entries dropped to stay within a bound.
  uint64_t evicted = 0;
  // Completed entries past their ttl and in-flight entries past their lease,
  // removed.
  uint64_t expired = 0;
  // Reserve calls refused because a shard was full of in-flight entries.
  uint64_t rejected_full = 0;
};

// The fixed number of bytes accounted per entry beyond its key, scope,
// fingerprint and stored response (the entry record and its hash-table node).
size_t IdempotencyEntryOverhead();

// The idempotency store: an interface with two implementations.
//
//   IdempotencyStore::Create(options)   in-process memory (the embedded
//                                       default): one process's keys
//   RedisIdempotencyStore::Create(...)  Redis (mulligan/idempotency/
//                                       redis_store.h, target mulligan_redis):
//                                       one record of keys for every process
//                                       and machine of a service (Added in 0.5.)
//
// Both follow the semantics of the file comment. What differs is documented
// on each implementation: the memory store's bounds (max_entries, max_bytes,
// shards) and the Redis store's failure mode (kStateUnavailable, fail closed).
//
// Thread-safety: every method of every implementation is thread-safe; no lock
// is held while a handler runs. Not copyable or movable: leases refer to a
// store by identity.
class IdempotencyStore {
 public:
  // Creates the in-memory store. Validates `options`; kInvalidArgument names
  // the bad field.
  static Result<std::unique_ptr<IdempotencyStore>> Create(const IdempotencyStoreOptions& options);
  virtual ~IdempotencyStore();
  IdempotencyStore(const IdempotencyStore&) = delete;
  IdempotencyStore& operator=(const IdempotencyStore&) = delete;

  // Looks up (scope, key) and reserves it when free (see the file comment).
  // `fingerprint` is opaque bytes identifying the request (for HTTP: method,
  // path and a digest of the body); it is compared byte for byte.
  // Errors: kInvalidArgument when `key` is empty, longer than max_key_length
  // or not printable ASCII. In memory: kUnavailable when the key is new and
  // its shard is full of in-flight entries (answer 503), or when its entry
  // alone (scope, key, fingerprint and IdempotencyEntryOverhead()) exceeds a
  // shard's byte budget, max_bytes / shards (then nothing is evicted for it).
  // On Redis: kStateUnavailable when the server cannot be reached in time
  // (answer 503; the handler must not run).
  virtual Result<Reservation> Reserve(std::string_view scope, std::string_view key,
                                      std::string_view fingerprint, TimePoint now) = 0;

  // Stores `response` for the lease's key until now + ttl and frees the key
  // for replays. Completed entries are evicted oldest first to make room.
  // Errors: kInvalidArgument when the response cannot be replayed as HTTP
  // (status outside [100, 599], a header field name that is not an RFC 9110
  // token, a field value holding CR, LF or NUL): nothing is stored and the
  // lease stays held (Release() it, or Complete() again with a valid
  // response); kInvalidArgument when the lease is not held any more (released,
  // completed, or taken over after it expired): nothing is stored.
  // In memory: kUnavailable when the response alone exceeds a shard's byte
  // budget: the key is released (documented fallback: a retry runs the
  // handler again). On Redis: kStateUnavailable when the server cannot be
  // reached in time (the record may or may not be stored; Complete() with the
  // same lease may be repeated safely).
  virtual Status Complete(const IdempotencyLease& lease, StoredResponse response,
                          TimePoint now) = 0;

  // Frees the lease's key without storing anything (the handler failed), so
  // that a retry with the same key runs the handler.
  // Errors: kInvalidArgument when the lease is not held any more; on Redis,
  // kStateUnavailable (the key then stays in flight until its lease runs out).
  virtual Status Release(const IdempotencyLease& lease) = 0;

  // Removes every expired entry now (the operations also sweep lazily). The
  // Redis store has nothing to sweep: the server expires each record by
  // itself (PEXPIRE), so there it returns at once.
  virtual void Sweep(TimePoint now) = 0;

  // Returns current gauges and counters. The Redis store counts this
  // process's operations; its gauges (entries, in_flight, bytes) stay 0
  // because the records live in the server.
  virtual IdempotencyStoreStats Stats() const = 0;

  virtual const IdempotencyStoreOptions& options() const = 0;

  // Returns where the records live: "memory" or "redis". (Added in 0.5.)
  virtual const char* backend() const = 0;

 protected:
  IdempotencyStore() = default;
};

// Checks that `response` can be sent again as HTTP: the status is in [100,
// 599], every field name is an RFC 9110 token, and no field value holds CR,
// LF or NUL. kInvalidArgument names the field. (Added in 0.5: shared by both
// stores.)
// Thread-safety: thread-safe.
Status ValidateStoredResponse(const StoredResponse& response);

}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_IDEMPOTENCY_STORE_H_
