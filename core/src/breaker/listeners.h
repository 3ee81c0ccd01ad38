// core/src/breaker/listeners.h — the circuit breaker's listener lists (private).
#ifndef MULLIGAN_SRC_BREAKER_LISTENERS_H_
#define MULLIGAN_SRC_BREAKER_LISTENERS_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "mulligan/breaker/circuit_breaker.h"

namespace mulligan {
inline namespace v0 {

// The copy-on-write listener list: notifications copy the shared_ptr under a
// small mutex and call the listeners without any lock.
struct CircuitBreaker::Listeners {
  using List = std::vector<std::pair<uint64_t, BreakerListener>>;
  using CallList = std::vector<std::pair<uint64_t, BreakerCallListener>>;
  std::mutex mu;
  std::shared_ptr<const List> list = std::make_shared<const List>();
  // Null until the first call listener: most breakers never have one, and
  // an allocation per breaker is not free (registries hold many).
  std::shared_ptr<const CallList> calls;
  uint64_t next_id = 1;
};

}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_SRC_BREAKER_LISTENERS_H_
