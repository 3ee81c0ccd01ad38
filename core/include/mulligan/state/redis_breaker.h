// mulligan/state/redis_breaker.h — a circuit breaker shared by the processes
// of a service through Redis (issue 16; CMake target mulligan_redis).
// (Added in 0.6.)
//
// A RedisSharedBreaker attaches a local CircuitBreaker to a RedisState. The
// local breaker serves every call: Acquire and Record make no Redis round
// trip in any state, so the closed-state hot path costs what the local
// breaker costs. Transitions flow both ways, off the caller's thread:
//
//   local -> Redis: a listener on the breaker queues each trip, half-open
//     and close (not the manual states, which stay a local operator's
//     decision) for a worker thread, which runs one Lua script that writes
//     the object's hash  {<prefix>:breaker:<name>}  (StateObjectKey):
//       state       "open", "half_open" or "closed"
//       open_until  the end of the open period, Unix milliseconds (0 unless open)
//       epoch       a counter bumped by every write (HINCRBY), so each write
//                   has a number no other write of that key has
//       writer      the writing instance's id (writer_id below)
//     and PUBLISHes "<state> <open_until> <epoch> <writer>" on the channel
//     named as the key. The queue never blocks the caller: it holds at most
//     queue_limit transitions and drops the oldest beyond that (the newest
//     state is the one that matters).
//
//   Redis -> local: a subscriber thread holds its own connection (SUBSCRIBE
//     takes a connection over) and applies each message whose epoch is newer
//     than the last one it saw and whose writer is not this instance:
//       "open"      -> CircuitBreaker::ApplyShared(kOpen, open_until): a
//                      normal open period that ends at the writer's
//                      open_until and then half-opens locally (ForceOpenUntil
//                      would do the same but reads as a manual act; the
//                      reason here is "shared_open"). An open_until already
//                      past is not applied: that period is over.
//       "closed"    -> ApplyShared(kClosed) (reason "shared_close").
//       "half_open" -> nothing: every process that applied the open period
//                      half-opens by itself when it ends, and probes; the
//                      first probe result that closes or reopens a breaker
//                      is published and applied everywhere.
//     Applied changes carry the reasons "shared_open" / "shared_close",
//     which the listener never publishes: a remote change is never echoed.
//     After every (re)subscription the subscriber reads the key once
//     (HGETALL) and applies it as a message, so what was published while it
//     was not listening is caught up; while the subscription is down it
//     reads the key every poll_interval instead.
//
// Concurrent trips: each write runs atomically in Redis and gets the next
// epoch, so two processes tripping at once produce epochs e and e + 1; the
// key ends with the later script's values, and every other process applies
// both messages in epoch order, ending open until the open_until of the
// write numbered e + 1 (one of the two trips' ends, not their maximum). A
// message older than the newest epoch seen (a reordering across a
// reconnect) is dropped. After Redis restarts without persistence the key
// and its epoch start again from nothing: the catch-up read after the
// resubscription adopts the server's epoch, whatever it is.
//
// Consistency (how stale a process may be): while subscribed, a transition
// reaches the other processes one script round trip plus one pub/sub
// delivery after the listener ran (well under a millisecond each on
// loopback; see bench/redis_breaker_bench.py for the p99 over 100 trips).
// While a process's subscription is down but Redis answers it, it lags by
// at most poll_interval (plus one round trip). While Redis is unreachable
// the processes do not share at all: each breaker keeps serving from its own
// local state alone (it trips and recovers by its own calls), health()
// says `shared == false` with the cause, the sharing callback is told, and
// the metrics say so (0.6: mulligan_shared_state_fallback{part="breaker",
// name} is 1 and mulligan_shared_state_fallbacks_total counts the period;
// see RedisSharedBreakerOptions::metrics).
// When Redis answers again the subscriber resubscribes (on RedisState's
// reconnect backoff) and catches up from the key; if that read fails (the
// state's command connection may still be waiting out its own backoff), it
// reads again every poll_interval until one succeeds, so a change published
// while it was resubscribing is not missed (0.6). A local transition whose
// write failed during the outage is written then, unless another process
// wrote the key in the meantime (newest epoch wins).
//
// Time: open_until crosses processes as Unix milliseconds, so the hosts'
// wall clocks must agree (NTP); the local period is placed on the
// breaker's monotonic clock through RedisState::clock() (its Now() and
// WallNow() read together). REQUIRES: the `now` given to the breaker comes
// from that clock (the steady clock by default, which is also what Python's
// time.monotonic reads). The threads themselves wait in real time.
//
// Thread-safety: thread-safe. The destructor detaches the listener and stops
// both threads: at once when idle, else once the round trip in progress ends
// (bounded by RedisState's command_timeout, or connect_timeout per step of
// a subscription being made); the breaker and the state live on for their
// other owners.

#ifndef MULLIGAN_STATE_REDIS_BREAKER_H_
#define MULLIGAN_STATE_REDIS_BREAKER_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "mulligan/base/clock.h"
#include "mulligan/base/status.h"
#include "mulligan/breaker/circuit_breaker.h"
#include "mulligan/state/redis.h"
#include "mulligan/telemetry/metrics.h"

namespace mulligan {
inline namespace v0 {

struct RedisSharedBreakerOptions {
  // While the subscription is down, the key is read this often, so the
  // staleness bound holds without pub/sub. Range [10 ms, 1 h]. Default 1 s.
  Duration poll_interval = std::chrono::seconds(1);
  // Written with every transition so a process recognises its own writes.
  // 1 to 64 printable ASCII bytes without space. Default (empty): 16 random
  // hex digits, one per RedisSharedBreaker.
  std::string writer_id;
  // The most transitions waiting for the writer thread; the oldest is
  // dropped beyond it. Range [1, 65536]. Default 64.
  size_t queue_limit = 64;
  // Where the sharing is exported (mulligan_shared_state_fallback and
  // mulligan_shared_state_fallbacks_total with part="breaker" and the
  // breaker's name; metrics.h), tracked weakly for the shared breaker's
  // life. Not owned; must outlive the shared breaker. Default (nullptr):
  // MetricsRegistry::Default(). (Added in 0.6.)
  MetricsRegistry* metrics = nullptr;
};

// What a shared breaker reports about its sharing (no secret in any field).
struct RedisSharedBreakerHealth {
  // True while the subscription is up and the last write (if any) worked:
  // the breaker shares. False: it serves from its local state alone.
  bool shared = false;
  // True while the subscriber holds a live subscription.
  bool subscribed = false;
  // The newest epoch seen on the key (written, read or received); 0 none.
  int64_t epoch = 0;
  // Transitions written to Redis, and writes that failed.
  uint64_t published = 0;
  uint64_t publish_failures = 0;
  // Transitions dropped because the queue was full.
  uint64_t dropped = 0;
  // Remote transitions applied to the local breaker (messages and reads).
  uint64_t applied = 0;
  // Reads of the key (catch-up after subscribing, and polls while down).
  uint64_t reads = 0;
  // Subscriptions made after the first one.
  uint64_t resubscriptions = 0;
  // The failure since the last successful read of the key while
  // subscribed (RedisState's text: endpoint without credentials and the
  // cause), or empty. (0.6: cleared by that success.)
  std::string last_error;
  // This instance's writer id.
  std::string writer_id;
};

// Told when sharing starts or stops: `shared` as in
// RedisSharedBreakerHealth, and the cause when it stopped (empty when it
// started). The first call is true at the first subscription, or false
// when the first subscription attempt fails (Redis unreachable from the
// start); then every change. Called on one of the shared breaker's threads, never
// concurrently with itself; must not throw and must not destroy the shared
// breaker.
using SharingListener = std::function<void(bool shared, const std::string& cause)>;

// A local breaker shared through Redis (see the file comment).
//
// Thread-safety: thread-safe. Not copyable or movable (its threads refer to
// it).
class RedisSharedBreaker {
 public:
  // Attaches `breaker` to `state` and starts the writer and subscriber
  // threads. The breaker's name is the shared object's name. Errors:
  // kInvalidArgument for a null state or breaker, a breaker name outside the
  // shared-name rule (ValidateSharedName, state/backend.h: 1 to 200
  // printable ASCII bytes without '{' or '}'), or a bad option (named:
  // poll_interval, writer_id, queue_limit). A Redis
  // that cannot be reached is not an error: the breaker serves locally and
  // shares once it can. `on_sharing` (may be empty) is told of every change
  // of health().shared.
  static Result<std::unique_ptr<RedisSharedBreaker>> Create(
      std::shared_ptr<RedisState> state, std::shared_ptr<CircuitBreaker> breaker,
      const RedisSharedBreakerOptions& options = {}, SharingListener on_sharing = nullptr);

  ~RedisSharedBreaker();
  RedisSharedBreaker(const RedisSharedBreaker&) = delete;
  RedisSharedBreaker& operator=(const RedisSharedBreaker&) = delete;

  // The local breaker that serves the calls.
  CircuitBreaker& breaker() const;
  const std::shared_ptr<CircuitBreaker>& breaker_ptr() const;
  // The Redis key of the shared state ({<prefix>:breaker:<name>}).
  const std::string& key() const;
  // Returns a snapshot of the sharing's health.
  RedisSharedBreakerHealth Health() const;

 private:
  struct Impl;
  explicit RedisSharedBreaker(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_STATE_REDIS_BREAKER_H_
