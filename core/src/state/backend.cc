// core/src/state/backend.cc — key naming shared by every state backend.

#include "mulligan/state/backend.h"

namespace mulligan {
inline namespace v0 {

Status ValidateStatePrefix(std::string_view prefix) {
  if (prefix.empty() || prefix.size() > 64) {
    return InvalidArgumentError("prefix must be 1 to 64 bytes, got " +
                                std::to_string(prefix.size()));
  }
  for (size_t i = 0; i < prefix.size(); ++i) {
    const char c = prefix[i];
    const bool allowed = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                         (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
    if (!allowed) {
      return InvalidArgumentError("prefix byte " + std::to_string(i) +
                                  " must be one of A-Z a-z 0-9 _ . - (a ':' would let one "
                                  "prefix's keys collide with another's)");
    }
  }
  return OkStatus();
}

Status ValidateSharedName(std::string_view name) {
  if (name.empty()) {
    return InvalidArgumentError(
        "a shared object's name must not be empty (it names the Redis key {prefix:kind:name})");
  }
  if (name.size() > kMaxSharedNameBytes) {
    return InvalidArgumentError("a shared object's name must be at most " +
                                std::to_string(kMaxSharedNameBytes) + " bytes, got " +
                                std::to_string(name.size()));
  }
  for (size_t i = 0; i < name.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(name[i]);
    if (c < 0x20 || c > 0x7e || c == '{' || c == '}') {
      static const char kHex[] = "0123456789abcdef";
      std::string byte = "0x";
      byte.push_back(kHex[c >> 4]);
      byte.push_back(kHex[c & 0xf]);
      return InvalidArgumentError(
          "a shared object's name must be printable ASCII without '{' or '}' (a brace would end "
          "the Redis Cluster hash tag {prefix:kind:name}): byte " +
          std::to_string(i) + " is " + byte);
    }
  }
  return OkStatus();
}

std::string StateObjectKey(std::string_view prefix, std::string_view kind, std::string_view name) {
  std::string key;
  key.reserve(prefix.size() + kind.size() + name.size() + 4);
  key.push_back('{');
  key.append(prefix.data(), prefix.size());
  key.push_back(':');
  key.append(kind.data(), kind.size());
  key.push_back(':');
  for (const char c : name) {
    switch (c) {
      case '%': key += "%25"; break;
      case '{': key += "%7B"; break;
      case '}': key += "%7D"; break;
      default: key.push_back(c);
    }
  }
  key.push_back('}');
  return key;
}

}  // namespace v0
}  // namespace mulligan
