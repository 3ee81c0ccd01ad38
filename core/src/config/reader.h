// core/src/config/reader.h — reading JSON values into typed fields, with the
// loader's error collection (private to mulligan_config).
//
// Every format (the mulligan file, the gRPC service config, the environment
// overrides) reads its scalars through these, so a value is accepted, and a
// bad one described, the same way everywhere. Errors are collected in a
// Context rather than stopping at the first one, so that `mulligan config
// check` can list every problem of a file at once; each says
// "<source>: <json path>: expected <what>, got <value>".
//
// A Read* function returns true and sets `out` when `v` is acceptable, and
// otherwise records an error in the Context and leaves `out` unchanged.
//
// Thread-safety: the functions are reentrant; a Context belongs to one load
// and must not be shared between threads.

#ifndef MULLIGAN_CONFIG_READER_H_
#define MULLIGAN_CONFIG_READER_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json.hpp>

#include "mulligan/base/clock.h"
#include "mulligan/base/status.h"
#include "mulligan/config/config.h"

namespace mulligan {
inline namespace v0 {
namespace internal {

namespace json = boost::json;

// The largest duration accepted, in seconds: Duration (int64 ns) holds about
// 9.22e9 s; stay below so conversions never overflow.
inline constexpr double kMaxDurationSeconds = 9.2e9;

// Returns `s` as a JSON string literal, quotes and escapes included.
std::string Quote(std::string_view s);

// Appends a key to a JSON path: a.b, or a["x.y"] for keys that need quoting.
// An empty `path` gives the key alone.
std::string Join(const std::string& path, std::string_view key);

// Appends an array index to a JSON path: a[3].
std::string Index(const std::string& path, size_t i);

// Returns how a value is shown after "got": null, true, 3, 1.5, a quoted
// string (cut to 60 characters), "an array", "an object".
std::string Describe(const json::value& v);

// Returns the candidate closest to `key` when it is close enough to be a
// likely typo (edit distance <= 2, or a shared prefix of 4+ characters
// covering most of the key: "policy" -> "policies"), else "". Ties go to the
// earlier candidate.
std::string Suggest(std::string_view key, const std::vector<std::string_view>& candidates);

// Collects the errors and warnings of one document, and looks up the
// environment overrides it may apply.
class Context {
 public:
  // `source` prefixes every message ("payments.json"); `options` gives the
  // environment (std::getenv when options.env is null) and whether overrides
  // apply at all.
  Context(std::string source, const LoadOptions& options);

  // Records "<source>: <path>: <what>". Only the first 50 messages are kept;
  // every error is counted.
  void Error(const std::string& path, const std::string& what);
  // Records "<source>: <path>: expected <what>, got <Describe(got)><note>".
  void Expected(const std::string& path, const std::string& what, const json::value& got,
                const std::string& note = "");
  // Records a message as it is (one already prefixed by another Context).
  void AddRaw(std::string message);
  // Records the warning "<source>: <path>: <what>" (warnings are not capped).
  void Warn(const std::string& path, const std::string& what);

  size_t error_count() const { return error_count_; }
  const std::string& source() const { return source_; }
  std::vector<std::string>& warnings() { return warnings_; }
  // Returns the variable `name`, or nullopt when it is unset or when
  // environment overrides are off.
  std::optional<std::string> Env(const std::string& name) const;
  // Returns the names of the environment's variables (none when environment
  // overrides are off).
  std::vector<std::string> EnvNames() const;

  // Returns kInvalidArgument with the kept errors, one per line, and
  // "<source>: ... and N more errors" when some were dropped.
  // REQUIRES: error_count() > 0.
  Status ToStatus() const;

 private:
  std::string source_;
  EnvLookup env_;
  std::function<std::vector<std::string>()> env_names_;
  bool env_overrides_ = true;
  std::vector<std::string> errors_;
  size_t error_count_ = 0;
  std::vector<std::string> warnings_;
};

// Returns the value as an integer when it is one (an integral double counts,
// as in JSON Schema; so does an unsigned value up to INT64_MAX).
std::optional<int64_t> AsInteger(const json::value& v);

// Returns the value as a double when it is a number of any JSON kind.
std::optional<double> AsNumber(const json::value& v);

// Reads an integer in [lo, hi]. The message says "an integer >= lo" when `hi`
// is INT_MAX, else "an integer in [lo, hi]".
bool ReadInt(Context& ctx, const std::string& path, const json::value& v, int64_t lo, int64_t hi,
             int& out);

// Reads a finite number in [lo, hi] (lo excluded when `lo_open`); `what` is
// the expectation in the message ("a number >= 0").
bool ReadNumber(Context& ctx, const std::string& path, const json::value& v, double lo,
                bool lo_open, double hi, const std::string& what, double& out);

// Reads true or false.
bool ReadBool(Context& ctx, const std::string& path, const json::value& v, bool& out);

// Reads a string (any string, the empty one included).
bool ReadString(Context& ctx, const std::string& path, const json::value& v, std::string& out);

// Parses "1.5s", "250ms", "1m30s": one or more <decimal><unit> groups, units
// ns, us (or µs), ms, s, m, h; returns the total in seconds (>= 0, possibly
// inf for absurdly long digit strings: callers check). On failure returns
// nullopt and sets `note` to a remark for the message (" (unknown unit
// ...)"), or "" when the plain message says it all (a negative value).
std::optional<double> ParseDurationSeconds(std::string_view text, std::string& note);

// Reads a duration: a string with units or a non-negative number of seconds,
// below kMaxDurationSeconds, rounded to the nearest nanosecond. `positive`:
// zero is rejected too, including a value that rounds to 0 ns.
bool ReadDuration(Context& ctx, const std::string& path, const json::value& v, bool positive,
                  Duration& out);

// Reads a positive duration, or null, which clears `out`.
bool ReadOptionalDuration(Context& ctx, const std::string& path, const json::value& v,
                          std::optional<Duration>& out);

// Reads one of `names` (exact strings) into its index.
bool ReadChoice(Context& ctx, const std::string& path, const json::value& v,
                const std::vector<std::string_view>& names, int& out);

// Reads a gRPC status code other than OK: a canonical name ("UNAVAILABLE")
// or an integer in [1, 16].
bool ReadGrpcCode(Context& ctx, const std::string& path, const json::value& v, int& out);

// Returns the object at `v`, or reports `what` and returns null.
const json::object* AsObject(Context& ctx, const std::string& path, const json::value& v,
                             const std::string& what);

// Calls `each(element_path, element)` for every element of an array (every
// element, even after one fails) and returns whether all returned true;
// reports `what` for a non-array and returns false.
template <typename F>
bool ForEachElement(Context& ctx, const std::string& path, const json::value& v,
                    const std::string& what, F each) {
  if (!v.is_array()) {
    ctx.Expected(path, what, v);
    return false;
  }
  const json::array& a = v.get_array();
  bool ok = true;
  for (size_t i = 0; i < a.size(); ++i) ok = each(Index(path, i), a[i]) && ok;
  return ok;
}

}  // namespace internal
}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_CONFIG_READER_H_
