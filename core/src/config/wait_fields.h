// core/src/config/wait_fields.h — reads the "wait" and "stop" fields of a
// retry policy (private to mulligan_config): the JSON form of the engine's
// composed waits (retry/wait.h) and stop conditions (retry/stop.h).
//
// A wait is an object with exactly one key:
//   {"constant": "1s"}
//   {"linear": {"start": "0.5s", "increment": "250ms", "max": "5s"}}   (max optional)
//   {"exponential": {"base": "100ms", "multiplier": 2, "max": "5s"}}  (multiplier default 2)
//   {"uniform": {"min": "1s", "max": "3s"}}
//   {"jitter": "1s"}
//   {"sum": [wait, ...]}        {"chain": [wait, ...]}
// A stop is an object with exactly one key:
//   {"after_attempts": 5}  {"after_elapsed": "30s"}  {"never": true}
//   {"any": [stop, ...]}   {"all": [stop, ...]}
// (predicates are Python code: a config file cannot name one).
#ifndef MULLIGAN_CONFIG_WAIT_FIELDS_H_
#define MULLIGAN_CONFIG_WAIT_FIELDS_H_

#include <optional>
#include <string>

#include "mulligan/retry/stop.h"
#include "mulligan/retry/wait.h"
#include "reader.h"

namespace mulligan {
inline namespace v0 {
namespace internal {

// Reads a wait at `path`; returns false after recording each error.
bool ReadWait(Context& ctx, const std::string& path, const json::value& v, WaitExpr& out);
// Reads a stop condition at `path`; returns false after recording each error.
bool ReadStop(Context& ctx, const std::string& path, const json::value& v, StopExpr& out);

}  // namespace internal
}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_CONFIG_WAIT_FIELDS_H_
