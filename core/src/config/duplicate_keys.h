// core/src/config/duplicate_keys.h — finding a key that a JSON object names
// twice (private to mulligan_config).
//
// RFC 8259 section 4 says names SHOULD be unique and leaves the meaning of
// repeats open; Boost.JSON keeps one of them silently, so in a configuration
// file a repeated key would hide a value its author wrote. ParseConfig
// rejects such a document.
//
// Thread-safety: reentrant.

#ifndef MULLIGAN_CONFIG_DUPLICATE_KEYS_H_
#define MULLIGAN_CONFIG_DUPLICATE_KEYS_H_

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace mulligan {
inline namespace v0 {
namespace internal {

// Returns the first key some object of `text` names twice (it may be the
// empty key), with the byte offset just after it; nullopt when every
// object's keys are unique.
// REQUIRES: `text` is valid JSON (an invalid document gives nullopt or the
// first repeat before the error).
std::optional<std::pair<std::string, size_t>> FindDuplicateKey(std::string_view text);

}  // namespace internal
}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_CONFIG_DUPLICATE_KEYS_H_
