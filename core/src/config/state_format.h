// core/src/config/state_format.h — the mulligan format's "state" section and
// the "shared" flag of "breakers" and "rate_limiters" entries (private to
// mulligan_config; issue 16). See config.h's StateSettings and
// docs/configuration.md "Shared state". Nothing here connects to Redis.
//
// Thread-safety: reentrant.

#ifndef MULLIGAN_CONFIG_STATE_FORMAT_H_
#define MULLIGAN_CONFIG_STATE_FORMAT_H_

#include <string>

#include "fields.h"
#include "mulligan/config/config.h"
#include "reader.h"

namespace mulligan {
inline namespace v0 {
namespace internal {

// Reads the top-level "state" object of `root`, when present, into
// out.state: "redis" (required; a redis:// URL, ParseRedisUrl's grammar;
// `state.redis: expected a redis:// URL, got "http://x"`, the URL's user
// information shown as ***), "prefix" (ValidateStatePrefix), "timeout" and
// "connect_timeout" (durations in [1ms, 1h]). Unknown fields are errors.
// out.state stays unset when any of it is wrong.
void ReadStateSection(Context& ctx, const json::object& root, ConfigSnapshot& out);

// Reads the "shared" field of the entry `entry` named `name` at `path`
// (e.g. "breakers.payments") into `shared` (false when absent). true needs
// the top-level "state" section and a name that passes ValidateSharedName
// (state/backend.h); each failure is recorded (at path.shared, or at path
// for the name) and returns false.
bool ReadSharedFlag(Context& ctx, const json::object& root, const std::string& path,
                    const std::string& name, const json::object& entry, bool& shared);

// Returns `table` with a "shared" field that reads nothing (ReadSharedFlag
// reads it), so an entry's messages list "shared" among its fields.
// REQUIRES: `table` is the one field table of T (the result is a
// function-local static per T).
template <typename T>
const FieldTable<T>& WithSharedField(const FieldTable<T>& table) {
  static const FieldTable<T> with = [&] {
    FieldTable<T> t = table;
    t.emplace_back("shared",
                   [](Context&, const std::string&, const json::value&, T&) { return true; });
    return t;
  }();
  return with;
}

}  // namespace internal
}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_CONFIG_STATE_FORMAT_H_
