// mulligan/breaker/registry.h — circuit breakers by key, bounded in size.
//
// One breaker per dependency: the HTTP client keys them by origin
// (scheme://host:port), `@circuit_breaker(name=...)` by name. Every breaker
// the registry creates shares one CircuitBreakerOptions, with the key as its
// name. A key keeps its breaker for as long as the breaker is in use or holds
// state worth keeping; only idle closed breakers are evicted (Polly's
// ResiliencePipelineRegistry, with a bound).

#ifndef MULLIGAN_BREAKER_REGISTRY_H_
#define MULLIGAN_BREAKER_REGISTRY_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "mulligan/breaker/circuit_breaker.h"
#include "mulligan/base/status.h"

namespace mulligan {
inline namespace v0 {

// Plain options; validated by BreakerRegistry::Create.
struct BreakerRegistryOptions {
  // Options of every breaker created; `breaker.name` is replaced by the key.
  CircuitBreakerOptions breaker;
  // The most breakers held at once. Must be >= 1. Default 10,000.
  size_t max_breakers = 10000;
};

// Breakers by key.
//
// Eviction: when a new key arrives and the registry is full, the least
// recently looked-up breaker that is idle is dropped: referenced only by the
// registry (shared_ptr use_count() == 1) and in the closed state. Open,
// half-open and manually set breakers, and breakers somebody still holds, are
// never evicted, so Get of a live key always returns the same object and
// never resets it. When nothing can be evicted, Get fails and adds nothing.
// Evicting a breaker drops its own listeners; listeners added to the registry
// are attached to every breaker it creates.
//
// Thread-safety: every method is thread-safe. One mutex guards the map and
// the recency list, so Get costs a lock, a hash of the key and an O(1) list
// splice (tens of ns uncontended); callers on a hot path should keep the
// shared_ptr rather than look the key up per call. Eviction scans from the
// least recently used end and is O(n) in the worst case (every entry live).
class BreakerRegistry {
 public:
  // Validates `options` (the breaker options as CircuitBreaker::Validate
  // does, and max_breakers); kInvalidArgument names the bad field.
  static Result<std::unique_ptr<BreakerRegistry>> Create(const BreakerRegistryOptions& options);

  // Not copyable or movable: listeners attached to breakers refer to its
  // listener list.
  BreakerRegistry(const BreakerRegistry&) = delete;
  BreakerRegistry& operator=(const BreakerRegistry&) = delete;
  ~BreakerRegistry();

  // Returns the breaker for `key`, creating a closed one (named `key`) when
  // there is none. Errors: kInvalidArgument for an empty key; kUnavailable
  // when the registry holds max_breakers breakers and none is idle (nothing
  // is added then).
  Result<std::shared_ptr<CircuitBreaker>> Get(std::string_view key);

  // Returns the breaker for `key`, or null when there is none. Never creates
  // and does not count as a use for eviction.
  std::shared_ptr<CircuitBreaker> Find(std::string_view key) const;

  // Calls `fn` for every breaker, most recently used first. `fn` runs on a
  // snapshot taken under the lock, after it is released, so it may call into
  // the registry.
  void ForEach(const std::function<void(const std::shared_ptr<CircuitBreaker>&)>& fn) const;
  // Returns every breaker, most recently used first.
  std::vector<std::shared_ptr<CircuitBreaker>> Snapshot() const;

  // The number of breakers held.
  size_t size() const;
  const BreakerRegistryOptions& options() const { return options_; }

  // Adds a listener to every breaker of this registry, present and future;
  // returns its id (never 0). The listener may outlive the registry for as
  // long as a breaker it created is alive.
  uint64_t AddListener(BreakerListener listener);
  // Removes it; returns false when there is no such id.
  bool RemoveListener(uint64_t id);

 private:
  struct Entry {
    std::string key;
    std::shared_ptr<CircuitBreaker> breaker;
  };
  struct Hub;

  explicit BreakerRegistry(const BreakerRegistryOptions& options);
  // Drops the least recently used idle breaker; false when there is none.
  bool EvictOneLocked();

  const BreakerRegistryOptions options_;
  std::shared_ptr<Hub> hub_;  // registry-wide listeners, shared with breakers
  mutable std::mutex mu_;
  std::list<Entry> lru_;  // most recently used first; nodes never move in memory
  // Keys are views of Entry::key, so lookups by string_view allocate nothing.
  std::unordered_map<std::string_view, std::list<Entry>::iterator> index_;
};

}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_BREAKER_REGISTRY_H_
