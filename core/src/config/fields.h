// core/src/config/fields.h — the field tables of the configuration objects
// (private to mulligan_config): for each JSON field of a retry policy, a
// circuit breaker and a client, the function that reads it into the options.
//
// The mulligan format applies whole objects through them (ApplyObject), the
// environment overrides apply single fields by name (FindField), and the
// gRPC format reads nothing through them: its fields are gRFC A6's. A
// table's order is the order of "expected one of: ..." in messages.
//
// Thread-safety: the tables are built once (function-local statics) and
// immutable after; the functions are reentrant.

#ifndef MULLIGAN_CONFIG_FIELDS_H_
#define MULLIGAN_CONFIG_FIELDS_H_

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mulligan/breaker/circuit_breaker.h"
#include "mulligan/config/config.h"
#include "mulligan/hedging/hedging.h"
#include "mulligan/retry/policy.h"
#include "reader.h"

namespace mulligan {
inline namespace v0 {
namespace internal {

// Reads the value at a JSON path into one field of a T; returns false after
// recording an error in the Context (the field is then unchanged).
template <typename T>
using FieldFn = std::function<bool(Context&, const std::string&, const json::value&, T&)>;

// The fields of a T by JSON name, in the order messages list them.
template <typename T>
using FieldTable = std::vector<std::pair<std::string_view, FieldFn<T>>>;

// The fields of a retry policy ("policies" entries, "defaults.policy").
const FieldTable<RetryOptions>& PolicyFields();
// The fields of a circuit breaker ("breakers" entries, "defaults.breaker").
const FieldTable<CircuitBreakerOptions>& BreakerFields();
// The fields of a client ("clients" entries, "defaults.client").
const FieldTable<ClientSettings>& ClientFields();
// The fields of a hedging object under HedgingOptions' names (max_attempts,
// hedging_delay, delay_quantile, quantile_window, quantile_min_samples; a
// `mulligan simulate` mode's "hedging"). Each field's own range is checked
// here; quantile_min_samples <= quantile_window is ValidateHedgingOptions'.
// (Added in 0.6.)
const FieldTable<HedgingOptions>& HedgingFields();

// Returns the reader of field `key`, or null when `table` has none.
template <typename T>
const FieldFn<T>* FindField(const FieldTable<T>& table, std::string_view key) {
  for (const auto& [name, fn] : table) {
    if (name == key) return &fn;
  }
  return nullptr;
}

// Reports the unknown field `key` of the object at `path`: "did you mean
// "<closest>"?" when one is close (Suggest), else the list of every field.
template <typename T>
void UnknownField(Context& ctx, const std::string& path, std::string_view key,
                  const FieldTable<T>& table) {
  std::vector<std::string_view> names;
  for (const auto& entry : table) names.push_back(entry.first);
  const std::string best = Suggest(key, names);
  std::string message = "unknown field";
  if (!best.empty()) {
    message += ", did you mean " + Quote(best) + "?";
  } else {
    message += "; expected one of: ";
    for (size_t i = 0; i < table.size(); ++i) {
      if (i) message += ", ";
      message += std::string(table[i].first);
    }
  }
  ctx.Error(Join(path, key), message);
}

// Applies every field of `object` at `path` to `out` through `table`, in the
// object's order; reports each unknown or bad field and goes on.
template <typename T>
void ApplyObject(Context& ctx, const std::string& path, const json::object& object,
                 const FieldTable<T>& table, T& out) {
  for (const auto& kv : object) {
    const FieldFn<T>* fn = FindField(table, kv.key());
    if (fn == nullptr) {
      UnknownField(ctx, path, kv.key(), table);
      continue;
    }
    (*fn)(ctx, Join(path, kv.key()), kv.value(), out);
  }
}

}  // namespace internal
}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_CONFIG_FIELDS_H_
