// mulligan/state/backend.h — the state backend interface: where state that
// may be shared across processes lives, and how its keys are named.
// (Added in 0.5.)
//
// DESIGN.md section 5 ("Shared state"): breaker state, budgets, limiters,
// throttling counters and idempotency records may live in a state backend.
// In-process memory is the embedded default (every part's own Create());
// Redis (mulligan/state/redis.h, CMake target mulligan_redis) shares them
// between the processes and machines of a service.
//
// Key naming (Redis Cluster friendly): every object's key is one hash tag,
//   {<prefix>:<kind>:<name>}
// so that every script of an object touches one key, hence one slot (Redis
// Cluster specification, "Hash tags": only the part between the first '{' and
// the next '}' is hashed). The prefix is the namespace shared by the
// processes of one service; the kind names the part ("idem" for idempotency
// records); the name is the object's own name, escaped so that it cannot end
// the hash tag early or collide with another name: '%', '{' and '}' become
// %25, %7B and %7D, everything else is kept byte for byte.
//
// The prefix is restricted to [A-Za-z0-9_.-] (Changed in 0.6; 0.5 allowed
// any printable ASCII but space, '{', '}' and '%'): with a ':' in it, the
// prefix "a:idem" and kind "x" would name the same keys as the prefix "a"
// and kind "idem" with names starting "x:", so one service's state could be
// read and written by another. Without ':', the first ':' of a key always
// ends the prefix and the second ends the kind.

#ifndef MULLIGAN_STATE_BACKEND_H_
#define MULLIGAN_STATE_BACKEND_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "mulligan/base/status.h"

namespace mulligan {
inline namespace v0 {

// What a backend reports about itself (for logs, metrics, the dashboard).
// Never holds a secret: the endpoint is rendered without user name or
// password, and error texts come from the backend's replies and the OS.
struct StateBackendHealth {
  // True when the last command or connection attempt succeeded.
  bool reachable = false;
  // "redis://host:port/db" (no credentials), or "memory".
  std::string endpoint;
  // The most recent failure since the last success, or empty: cleared by
  // the next command or connection that succeeds (Changed in 0.6: it used
  // to stay after recovery), so a non-empty last_error always describes the
  // current outage. `failures` keeps the count.
  std::string last_error;
  // Round trips sent to the backend (commands and scripts), successful or not.
  uint64_t round_trips = 0;
  // Operations refused with kStateUnavailable (connection down, timeout,
  // error reply, waiting for the reconnect backoff).
  uint64_t failures = 0;
  // Connections established after the first one.
  uint64_t reconnects = 0;
};

// A place where shareable state lives.
//
// Thread-safety: implementations are thread-safe.
class StateBackend {
 public:
  virtual ~StateBackend() = default;
  // Returns "memory" or "redis".
  virtual const char* kind() const = 0;
  // Returns a snapshot of the backend's health.
  virtual StateBackendHealth Health() const = 0;
};

// Checks a key prefix (namespace): 1 to 64 bytes, each one of A-Z a-z 0-9
// '_' '.' '-' (see the file comment). kInvalidArgument names the field
// "prefix" and the offending byte's index.
// Thread-safety: thread-safe.
Status ValidateStatePrefix(std::string_view prefix);

// The name rule of every object shared through a backend by name (a shared
// breaker's name, a shared rate limiter's name): 1 to 200 bytes, each
// printable ASCII (0x20 to 0x7E) other than '{' and '}'. The name is part of
// the object's Redis key {<prefix>:<kind>:<name>} and of the breaker's
// pub/sub channel, and every process that uses the same name shares the
// object, so one rule holds for every part: printable, so the key reads the
// same in redis-cli, logs and metrics as in the code; no brace, so the name
// appears in the key as written and a reader of the key (or another client
// library) sees one hash tag, never a '}' that would end it early (Redis
// Cluster specification, "Hash tags"); at most 200 bytes, the rate
// limiter's name bound since 0.3. (StateObjectKey still escapes '%', '{' and
// '}', which keeps idempotency keys, per-call limiter keys and other free
// text safe.) kInvalidArgument, the same text for every part:
//   "a shared object's name must not be empty (...)"
//   "a shared object's name must be at most 200 bytes, got 201"
//   "a shared object's name must be printable ASCII without '{' or '}' (...):
//    byte 3 is 0x7b"
// Thread-safety: thread-safe. (Added in 0.6.)
Status ValidateSharedName(std::string_view name);

// The longest name ValidateSharedName accepts, in bytes. (Added in 0.6.)
inline constexpr size_t kMaxSharedNameBytes = 200;

// Returns the key of one object: "{<prefix>:<kind>:<escaped name>}" (see the
// file comment). REQUIRES: ValidateStatePrefix(prefix) and `kind` a short
// literal of the same alphabet. Never fails.
// Thread-safety: thread-safe.
std::string StateObjectKey(std::string_view prefix, std::string_view kind, std::string_view name);

}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_STATE_BACKEND_H_
