// core/src/idempotency/key_rules.h — the checks on a key that every
// idempotency store makes before its look-up (one copy for both stores).

#ifndef MULLIGAN_SRC_IDEMPOTENCY_KEY_RULES_H_
#define MULLIGAN_SRC_IDEMPOTENCY_KEY_RULES_H_

#include <algorithm>
#include <string>
#include <string_view>

#include "internal/ascii.h"
#include "mulligan/base/status.h"

namespace mulligan {
inline namespace v0 {
namespace internal {

// kInvalidArgument when `key` is empty, longer than `max_length` or not
// printable ASCII.
inline Status CheckIdempotencyKey(std::string_view key, size_t max_length) {
  if (key.empty()) return InvalidArgumentError("the idempotency key is empty");
  if (key.size() > max_length) {
    return InvalidArgumentError("the idempotency key is longer than " +
                                std::to_string(max_length) + " characters");
  }
  if (!std::all_of(key.begin(), key.end(), IsPrintableAscii)) {
    return InvalidArgumentError("the idempotency key must be printable ASCII");
  }
  return OkStatus();
}

}  // namespace internal
}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_SRC_IDEMPOTENCY_KEY_RULES_H_
