// The configuration loader: JSON (Boost.JSON, a private dependency) -> named
// RetryPolicy / CircuitBreakerOptions / ClientSettings, gRPC service configs,
// environment overrides, and the PolicyRegistry's atomic swap.
//
// Errors are collected rather than stopping at the first one, so that
// `mulligan config check` can list every problem of a file at once. Each says
// "<source>: <json path>: expected <what>, got <value>".
#include "mulligan/config/config.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <unordered_set>
#include <utility>

#include <boost/json.hpp>
#include <boost/json/basic_parser_impl.hpp>

namespace mulligan {
inline namespace v0 {
namespace {

namespace json = boost::json;

// The largest duration accepted, in seconds: Duration (int64 ns) holds about
// 9.22e9 s; stay below so conversions never overflow.
constexpr double kMaxDurationSeconds = 9.2e9;
// At most this many errors are reported for one document.
constexpr size_t kMaxErrors = 50;
// gRFC A6: "maxAttempts ... values greater than 5 are treated as 5".
constexpr int64_t kGrpcMaxAttempts = 5;

constexpr const char* kDurationExpected = "a duration such as \"10s\"";

const char* const kGrpcCodeNames[] = {
    "OK",           "CANCELLED",          "UNKNOWN",        "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED", "NOT_FOUND",     "ALREADY_EXISTS", "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED",  "OUT_OF_RANGE",
    "UNIMPLEMENTED", "INTERNAL",          "UNAVAILABLE",    "DATA_LOSS",
    "UNAUTHENTICATED"};

bool IsPlainKey(std::string_view key) {
  if (key.empty()) return false;
  for (char c : key) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

std::string Quote(std::string_view s) { return json::serialize(json::string(s)); }

// Appends a key to a JSON path: a.b, or a["x.y"] for keys that need quoting.
std::string Join(const std::string& path, std::string_view key) {
  if (IsPlainKey(key)) return path.empty() ? std::string(key) : path + "." + std::string(key);
  return path + "[" + Quote(key) + "]";
}

std::string Index(const std::string& path, size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

std::string FormatDouble(double d) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), d);
  return std::string(buf, r.ptr);
}

// How a value is shown after "got".
std::string Describe(const json::value& v) {
  switch (v.kind()) {
    case json::kind::null: return "null";
    case json::kind::bool_: return v.get_bool() ? "true" : "false";
    case json::kind::int64: return std::to_string(v.get_int64());
    case json::kind::uint64: return std::to_string(v.get_uint64());
    case json::kind::double_: return FormatDouble(v.get_double());
    case json::kind::string: {
      std::string_view s = v.get_string();
      if (s.size() > 60) return Quote(std::string(s.substr(0, 57)) + "...");
      return Quote(s);
    }
    case json::kind::array: return "an array";
    case json::kind::object: return "an object";
  }
  return "a value";
}

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t prev = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cur = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, prev + (a[i - 1] == b[j - 1] ? 0 : 1)});
      prev = cur;
    }
  }
  return row[b.size()];
}

// Returns the candidate closest to `key` when it is close enough to be a
// likely typo (edit distance <= 2, or a shared prefix of 4+ characters
// covering most of the key: "policy" -> "policies"), else "".
std::string Suggest(std::string_view key, const std::vector<std::string_view>& candidates) {
  std::string best;
  size_t best_score = std::numeric_limits<size_t>::max();
  for (std::string_view c : candidates) {
    const size_t d = EditDistance(key, c);
    size_t prefix = 0;
    while (prefix < key.size() && prefix < c.size() && key[prefix] == c[prefix]) ++prefix;
    const bool close = d <= 2 || (prefix >= 4 && prefix * 4 >= key.size() * 3);
    if (close && d < best_score) {
      best_score = d;
      best = std::string(c);
    }
  }
  return best;
}

// Collects errors and warnings for one document.
class Context {
 public:
  Context(std::string source, const LoadOptions& options) : source_(std::move(source)) {
    env_ = options.env;
    if (!env_) {
      env_ = [](const std::string& name) -> std::optional<std::string> {
        const char* v = std::getenv(name.c_str());
        if (v == nullptr) return std::nullopt;
        return std::string(v);
      };
    }
    env_overrides_ = options.env_overrides;
  }

  void Error(const std::string& path, const std::string& what) {
    if (errors_.size() < kMaxErrors) errors_.push_back(source_ + ": " + path + ": " + what);
    ++error_count_;
  }
  void Expected(const std::string& path, const std::string& what, const json::value& got,
                const std::string& note = "") {
    Error(path, "expected " + what + ", got " + Describe(got) + note);
  }
  void AddRaw(std::string message) {
    if (errors_.size() < kMaxErrors) errors_.push_back(std::move(message));
    ++error_count_;
  }
  void Warn(const std::string& path, const std::string& what) {
    warnings_.push_back(source_ + ": " + path + ": " + what);
  }
  size_t error_count() const { return error_count_; }
  const std::string& source() const { return source_; }
  std::vector<std::string>& warnings() { return warnings_; }
  std::optional<std::string> Env(const std::string& name) const {
    return env_overrides_ ? env_(name) : std::nullopt;
  }

  Status ToStatus() const {
    std::string message;
    for (const std::string& e : errors_) {
      if (!message.empty()) message += '\n';
      message += e;
    }
    if (error_count_ > errors_.size()) {
      message += "\n" + source_ + ": ... and " + std::to_string(error_count_ - errors_.size()) +
                 " more errors";
    }
    return InvalidArgumentError(message);
  }

 private:
  std::string source_;
  EnvLookup env_;
  bool env_overrides_ = true;
  std::vector<std::string> errors_;
  size_t error_count_ = 0;
  std::vector<std::string> warnings_;
};

// ---------------------------------------------------------------------------
// Scalars

// Returns the value as an integer when it is one (an integral double counts,
// as in JSON Schema).
std::optional<int64_t> AsInteger(const json::value& v) {
  if (v.is_int64()) return v.get_int64();
  if (v.is_uint64()) {
    if (v.get_uint64() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return std::nullopt;
    }
    return static_cast<int64_t>(v.get_uint64());
  }
  if (v.is_double()) {
    const double d = v.get_double();
    if (std::isfinite(d) && std::floor(d) == d && std::fabs(d) < 9.0e18) {
      return static_cast<int64_t>(d);
    }
  }
  return std::nullopt;
}

std::optional<double> AsNumber(const json::value& v) {
  if (v.is_int64()) return static_cast<double>(v.get_int64());
  if (v.is_uint64()) return static_cast<double>(v.get_uint64());
  if (v.is_double()) return v.get_double();
  return std::nullopt;
}

bool ReadInt(Context& ctx, const std::string& path, const json::value& v, int64_t lo, int64_t hi,
             int& out) {
  std::optional<int64_t> i = AsInteger(v);
  if (!i || *i < lo || *i > hi) {
    std::string what = "an integer";
    if (hi == std::numeric_limits<int>::max()) {
      what += " >= " + std::to_string(lo);
    } else {
      what += " in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
    }
    ctx.Expected(path, what, v);
    return false;
  }
  out = static_cast<int>(*i);
  return true;
}

// Reads a number in [lo, hi] (lo excluded when `lo_open`).
bool ReadNumber(Context& ctx, const std::string& path, const json::value& v, double lo,
                bool lo_open, double hi, const std::string& what, double& out) {
  std::optional<double> d = AsNumber(v);
  if (!d || !std::isfinite(*d) || (lo_open ? *d <= lo : *d < lo) || *d > hi) {
    ctx.Expected(path, what, v);
    return false;
  }
  out = *d;
  return true;
}

bool ReadBool(Context& ctx, const std::string& path, const json::value& v, bool& out) {
  if (!v.is_bool()) {
    ctx.Expected(path, "true or false", v);
    return false;
  }
  out = v.get_bool();
  return true;
}

bool ReadString(Context& ctx, const std::string& path, const json::value& v, std::string& out) {
  if (!v.is_string()) {
    ctx.Expected(path, "a string", v);
    return false;
  }
  out = std::string(v.get_string());
  return true;
}

// Parses "1.5s", "250ms", "1m30s": one or more <decimal><unit> groups. On
// failure returns a note for the message (" (unknown unit ...)"), or "".
std::optional<double> ParseDurationSeconds(std::string_view text, std::string& note) {
  if (text.empty()) {
    note = " (empty)";
    return std::nullopt;
  }
  if (text[0] == '-') {
    note = "";  // negative: the plain message says it all
    return std::nullopt;
  }
  double total = 0;
  size_t i = 0;
  while (i < text.size()) {
    const size_t start = i;
    while (i < text.size() && ((text[i] >= '0' && text[i] <= '9') || text[i] == '.')) ++i;
    const std::string_view number = text.substr(start, i - start);
    if (number.empty() || number == "." || std::count(number.begin(), number.end(), '.') > 1) {
      note = " (a duration is a number followed by a unit: ns, us, ms, s, m or h)";
      return std::nullopt;
    }
    const size_t unit_start = i;
    while (i < text.size() && !((text[i] >= '0' && text[i] <= '9') || text[i] == '.')) ++i;
    const std::string_view unit = text.substr(unit_start, i - unit_start);
    double scale = 0;
    if (unit == "ns") {
      scale = 1e-9;
    } else if (unit == "us" || unit == "\xC2\xB5s") {  // also "µs"
      scale = 1e-6;
    } else if (unit == "ms") {
      scale = 1e-3;
    } else if (unit == "s") {
      scale = 1;
    } else if (unit == "m") {
      scale = 60;
    } else if (unit == "h") {
      scale = 3600;
    } else if (unit.empty()) {
      note = " (missing unit: ns, us, ms, s, m or h; a bare number of seconds must not be quoted)";
      return std::nullopt;
    } else {
      note = " (unknown unit " + Quote(unit) + "; use ns, us, ms, s, m or h)";
      return std::nullopt;
    }
    // strtod needs a terminated buffer; numbers are short.
    const std::string n(number);
    total += std::strtod(n.c_str(), nullptr) * scale;
  }
  return total;
}

Duration SecondsToDuration(double seconds) {
  return Duration(static_cast<Duration::rep>(std::llround(seconds * 1e9)));
}

// Reads a duration: a string with units or a number of seconds.
// `positive`: zero is rejected too. `nullable`: null clears `out`.
bool ReadDuration(Context& ctx, const std::string& path, const json::value& v, bool positive,
                  Duration& out) {
  const std::string what = positive ? "a duration greater than 0 such as \"10s\"" : kDurationExpected;
  std::optional<double> seconds;
  std::string note;
  if (v.is_string()) {
    seconds = ParseDurationSeconds(v.get_string(), note);
  } else {
    seconds = AsNumber(v);
    if (seconds && !(*seconds >= 0)) seconds.reset();  // negative or NaN
  }
  if (seconds && !std::isfinite(*seconds)) seconds.reset();
  if (seconds && *seconds >= kMaxDurationSeconds) {
    seconds.reset();
    note = " (at most 9.2e9 s)";
  }
  // "> 0" holds for the Duration itself: a positive value below half a
  // nanosecond rounds to zero.
  if (seconds && positive && SecondsToDuration(*seconds) <= Duration::zero()) {
    if (*seconds > 0) note = " (it rounds to 0 ns)";
    seconds.reset();
  }
  if (!seconds) {
    ctx.Expected(path, what, v, note);
    return false;
  }
  out = SecondsToDuration(*seconds);
  return true;
}

bool ReadOptionalDuration(Context& ctx, const std::string& path, const json::value& v,
                          std::optional<Duration>& out) {
  if (v.is_null()) {
    out.reset();
    return true;
  }
  Duration d{};
  if (!ReadDuration(ctx, path, v, /*positive=*/true, d)) return false;
  out = d;
  return true;
}

// Reads one of `names` (exact strings) into its index.
bool ReadChoice(Context& ctx, const std::string& path, const json::value& v,
                const std::vector<std::string_view>& names, int& out) {
  if (v.is_string()) {
    for (size_t i = 0; i < names.size(); ++i) {
      if (v.get_string() == names[i]) {
        out = static_cast<int>(i);
        return true;
      }
    }
  }
  std::string what = "one of ";
  for (size_t i = 0; i < names.size(); ++i) {
    if (i) what += i + 1 == names.size() ? " or " : ", ";
    what += Quote(names[i]);
  }
  ctx.Expected(path, what, v);
  return false;
}

// Reads a gRPC status code: a canonical name or an integer in [1, 16].
bool ReadGrpcCode(Context& ctx, const std::string& path, const json::value& v, int& out) {
  if (v.is_string()) {
    std::optional<int> code = ParseGrpcStatusCode(v.get_string());
    if (code && *code != 0) {
      out = *code;
      return true;
    }
  } else if (std::optional<int64_t> i = AsInteger(v); i && *i >= 1 && *i <= 16) {
    out = static_cast<int>(*i);
    return true;
  }
  ctx.Expected(path, "a gRPC status code name such as \"UNAVAILABLE\" (or a code in [1, 16])",
               v);
  return false;
}

// Calls `each` for every element of an array; reports a non-array.
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

// ---------------------------------------------------------------------------
// Field tables

template <typename T>
using FieldFn = std::function<bool(Context&, const std::string&, const json::value&, T&)>;
template <typename T>
using FieldTable = std::vector<std::pair<std::string_view, FieldFn<T>>>;

template <typename T>
const FieldFn<T>* FindField(const FieldTable<T>& table, std::string_view key) {
  for (const auto& [name, fn] : table) {
    if (name == key) return &fn;
  }
  return nullptr;
}

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

// Applies every field of `object` at `path` to `out` through `table`.
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

const FieldTable<RetryOptions>& PolicyFields() {
  static const FieldTable<RetryOptions> table = {
      {"max_attempts",
       [](Context& c, const std::string& p, const json::value& v, RetryOptions& o) {
         return ReadInt(c, p, v, 1, std::numeric_limits<int>::max(), o.max_attempts);
       }},
      {"backoff",
       [](Context& c, const std::string& p, const json::value& v, RetryOptions& o) {
         int i = 0;
         if (!ReadChoice(c, p, v, {"constant", "linear", "exponential", "decorrelated"}, i)) {
           return false;
         }
         o.backoff.kind = static_cast<BackoffKind>(i);
         return true;
       }},
      {"base_delay",
       [](Context& c, const std::string& p, const json::value& v, RetryOptions& o) {
         return ReadDuration(c, p, v, false, o.backoff.base);
       }},
      {"multiplier",
       [](Context& c, const std::string& p, const json::value& v, RetryOptions& o) {
         return ReadNumber(c, p, v, 0, false, 1e300, "a number >= 0", o.backoff.multiplier);
       }},
      {"max_delay",
       [](Context& c, const std::string& p, const json::value& v, RetryOptions& o) {
         return ReadDuration(c, p, v, false, o.backoff.max_delay);
       }},
      {"jitter",
       [](Context& c, const std::string& p, const json::value& v, RetryOptions& o) {
         int i = 0;
         if (!ReadChoice(c, p, v, {"none", "full", "equal", "proportional"}, i)) return false;
         o.backoff.jitter = static_cast<JitterKind>(i);
         return true;
       }},
      {"jitter_fraction",
       [](Context& c, const std::string& p, const json::value& v, RetryOptions& o) {
         return ReadNumber(c, p, v, 0, false, 1, "a number in [0, 1]",
                           o.backoff.jitter_fraction);
       }},
      {"deadline",
       [](Context& c, const std::string& p, const json::value& v, RetryOptions& o) {
         return ReadOptionalDuration(c, p, v, o.deadline);
       }},
      {"attempt_timeout",
       [](Context& c, const std::string& p, const json::value& v, RetryOptions& o) {
         return ReadOptionalDuration(c, p, v, o.attempt_timeout);
       }},
      {"retry_after_max",
       [](Context& c, const std::string& p, const json::value& v, RetryOptions& o) {
         return ReadDuration(c, p, v, false, o.retry_after_max);
       }},
      {"retry_after_overflow",
       [](Context& c, const std::string& p, const json::value& v, RetryOptions& o) {
         int i = 0;
         if (!ReadChoice(c, p, v, {"stop", "clamp"}, i)) return false;
         o.retry_after_overflow = static_cast<RetryAfterOverflow>(i);
         return true;
       }},
      {"respect_retry_after",
       [](Context& c, const std::string& p, const json::value& v, RetryOptions& o) {
         return ReadBool(c, p, v, o.respect_retry_after);
       }},
      {"retryable_statuses",
       [](Context& c, const std::string& p, const json::value& v, RetryOptions& o) {
         std::vector<int> statuses;
         const bool ok = ForEachElement(
             c, p, v, "an array of HTTP statuses such as [429, 503]",
             [&](const std::string& ep, const json::value& e) {
               int s = 0;
               if (!ReadInt(c, ep, e, 100, 599, s)) return false;
               statuses.push_back(s);
               return true;
             });
         if (ok) o.retryable_statuses = std::move(statuses);
         return ok;
       }},
      {"retryable_errors",
       [](Context& c, const std::string& p, const json::value& v, RetryOptions& o) {
         std::vector<ErrorKind> kinds;
         const bool ok = ForEachElement(
             c, p, v, "an array of error kinds such as [\"connection_refused\"]",
             [&](const std::string& ep, const json::value& e) {
               // The transport kinds a config may name, with their values
               // (kRetryable and kTerminal are the caller's, not a config's).
               static constexpr ErrorKind kKinds[] = {
                   ErrorKind::kConnectionRefused, ErrorKind::kConnectionReset,
                   ErrorKind::kDnsFailure,        ErrorKind::kConnectTimeout,
                   ErrorKind::kTimeout,           ErrorKind::kTlsError,
                   ErrorKind::kInvalidUrl,        ErrorKind::kTransport,
                   ErrorKind::kTruncated};
               int i = 0;
               if (!ReadChoice(c, ep, e,
                               {"connection_refused", "connection_reset", "dns_failure",
                                "connect_timeout", "timeout", "tls_error", "invalid_url",
                                "transport", "truncated"},
                               i)) {
                 return false;
               }
               kinds.push_back(kKinds[i]);
               return true;
             });
         if (ok) o.retryable_errors = std::move(kinds);
         return ok;
       }},
      {"retryable_grpc_codes",
       [](Context& c, const std::string& p, const json::value& v, RetryOptions& o) {
         std::vector<int> codes;
         const bool ok = ForEachElement(
             c, p, v, "an array of gRPC status codes such as [\"UNAVAILABLE\"]",
             [&](const std::string& ep, const json::value& e) {
               int code = 0;
               if (!ReadGrpcCode(c, ep, e, code)) return false;
               codes.push_back(code);
               return true;
             });
         if (ok) o.retryable_grpc_codes = std::move(codes);
         return ok;
       }},
      {"seed",
       [](Context& c, const std::string& p, const json::value& v, RetryOptions& o) {
         if (v.is_null()) {
           o.seed.reset();
           return true;
         }
         if (v.is_uint64()) {
           o.seed = v.get_uint64();
           return true;
         }
         std::optional<int64_t> i = AsInteger(v);
         if (!i || *i < 0) {
           c.Expected(p, "an integer >= 0 or null", v);
           return false;
         }
         o.seed = static_cast<uint64_t>(*i);
         return true;
       }},
  };
  return table;
}

const FieldTable<CircuitBreakerOptions>& BreakerFields() {
  using O = CircuitBreakerOptions;
  static const FieldTable<O> table = {
      {"failure_threshold",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         return ReadInt(c, p, v, 0, 1'000'000, o.failure_threshold);
       }},
      {"window",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         int i = 0;
         if (!ReadChoice(c, p, v, {"none", "count", "time"}, i)) return false;
         o.window = static_cast<WindowKind>(i);
         return true;
       }},
      {"window_size",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         return ReadInt(c, p, v, 1, 1'000'000, o.window_size);
       }},
      {"window_duration",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         return ReadDuration(c, p, v, true, o.window_duration);
       }},
      {"window_buckets",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         return ReadInt(c, p, v, 1, 3600, o.window_buckets);
       }},
      {"failure_rate_threshold",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         return ReadNumber(c, p, v, 0, true, 100, "a percentage in (0, 100]",
                           o.failure_rate_threshold);
       }},
      {"minimum_calls",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         return ReadInt(c, p, v, 1, std::numeric_limits<int>::max(), o.minimum_calls);
       }},
      {"slow_call_duration",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         return ReadOptionalDuration(c, p, v, o.slow_call_duration);
       }},
      {"slow_call_rate_threshold",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         return ReadNumber(c, p, v, 0, true, 100, "a percentage in (0, 100]",
                           o.slow_call_rate_threshold);
       }},
      {"reset_timeout",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         return ReadDuration(c, p, v, true, o.reset_timeout);
       }},
      {"reset_timeout_multiplier",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         return ReadNumber(c, p, v, 1, false, 1e300, "a number >= 1",
                           o.reset_timeout_multiplier);
       }},
      {"max_reset_timeout",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         return ReadDuration(c, p, v, true, o.max_reset_timeout);
       }},
      {"half_open_max_calls",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         return ReadInt(c, p, v, 1, 65'535, o.half_open_max_calls);
       }},
      {"permit_timeout",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         return ReadDuration(c, p, v, true, o.permit_timeout);
       }},
  };
  return table;
}

const FieldTable<ClientSettings>& ClientFields() {
  using O = ClientSettings;
  static const FieldTable<O> table = {
      {"policy",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         return ReadString(c, p, v, o.policy);
       }},
      {"breaker",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         return ReadString(c, p, v, o.breaker);
       }},
      {"attempt_timeout",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         return ReadDuration(c, p, v, true, o.attempt_timeout);
       }},
      {"connect_timeout",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         return ReadDuration(c, p, v, true, o.connect_timeout);
       }},
      {"verify_tls",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         return ReadBool(c, p, v, o.verify_tls);
       }},
      {"user_agent",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         return ReadString(c, p, v, o.user_agent);
       }},
  };
  return table;
}

// ---------------------------------------------------------------------------
// Environment overrides

std::string EnvName(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (c >= 'a' && c <= 'z') {
      out += static_cast<char>(c - 'a' + 'A');
    } else if ((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
      out += c;
    } else {
      out += '_';
    }
  }
  return out;
}

// Reads an environment value as JSON when it is JSON (3, 1.5, true, null),
// else as a string ("250ms", "exponential"). "none" means null for the
// optional durations (deadline, attempt_timeout).
json::value EnvValue(const std::string& text, bool nullable) {
  if (nullable && text == "none") return nullptr;
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (!ec && !v.is_structured()) return v;
  return json::string(text);
}

// Applies MULLIGAN_<KIND>_<NAME>_<FIELD> for each of `fields` (upper-case
// suffix -> JSON field).
template <typename T>
void ApplyEnv(Context& ctx, std::string_view kind, const std::string& section,
              const std::string& name,
              const std::vector<std::pair<std::string_view, std::string_view>>& fields,
              const FieldTable<T>& table, T& out) {
  for (const auto& [suffix, field] : fields) {
    const std::string var = "MULLIGAN_" + std::string(kind) + "_" + EnvName(name) + "_" +
                            std::string(suffix);
    std::optional<std::string> value = ctx.Env(var);
    if (!value) continue;
    const FieldFn<T>* fn = FindField(table, field);
    // Errors from the environment name the variable, not a JSON path.
    Context env_ctx("environment", LoadOptions{});
    const bool nullable = field == "deadline" || field == "attempt_timeout";
    if ((*fn)(env_ctx, var, EnvValue(*value, nullable), out)) {
      ctx.Warn(Join(Join(section, name), field), "overridden by " + var + "=" + *value);
    } else {
      // Keep the variable's message as is ("environment: VAR: expected ...").
      ctx.AddRaw(env_ctx.ToStatus().message());
    }
  }
}

// ---------------------------------------------------------------------------
// The mulligan format

const std::vector<std::pair<std::string_view, std::string_view>> kPolicyEnv = {
    {"MAX_ATTEMPTS", "max_attempts"}, {"BACKOFF", "backoff"},
    {"BASE_DELAY", "base_delay"},     {"MULTIPLIER", "multiplier"},
    {"MAX_DELAY", "max_delay"},       {"JITTER", "jitter"},
    {"DEADLINE", "deadline"},         {"ATTEMPT_TIMEOUT", "attempt_timeout"}};
const std::vector<std::pair<std::string_view, std::string_view>> kBreakerEnv = {
    {"FAILURE_THRESHOLD", "failure_threshold"},
    {"RESET_TIMEOUT", "reset_timeout"},
    {"HALF_OPEN_MAX_CALLS", "half_open_max_calls"}};
const std::vector<std::pair<std::string_view, std::string_view>> kClientEnv = {
    {"ATTEMPT_TIMEOUT", "attempt_timeout"},
    {"CONNECT_TIMEOUT", "connect_timeout"},
    {"VERIFY_TLS", "verify_tls"},
    {"USER_AGENT", "user_agent"}};

// Returns the object at `v`, or reports `what` and returns null.
const json::object* AsObject(Context& ctx, const std::string& path, const json::value& v,
                             const std::string& what) {
  if (!v.is_object()) {
    ctx.Expected(path, what, v);
    return nullptr;
  }
  return &v.get_object();
}

// Calls `each(name, path, object)` for every named entry of a section.
template <typename F>
void ForEachEntry(Context& ctx, const std::string& section, const json::value& v,
                  const std::string& what, F each) {
  const json::object* entries = AsObject(ctx, section, v, "an object of " + what + " by name");
  if (entries == nullptr) return;
  for (const auto& kv : *entries) {
    const std::string path = Join(section, kv.key());
    if (kv.key().empty()) {
      ctx.Error(path, "expected a non-empty name");
      continue;
    }
    const json::object* entry = AsObject(ctx, path, kv.value(), "an object");
    if (entry != nullptr) each(std::string(kv.key()), path, *entry);
  }
}

void ParseMulligan(Context& ctx, const json::object& root, ConfigSnapshot& out) {
  static const std::vector<std::string_view> kTopLevel = {
      "$schema", "version", "defaults", "policies", "breakers", "clients"};
  RetryOptions base_policy;
  CircuitBreakerOptions base_breaker;
  ClientSettings base_client;
  const json::value* defaults_client_value = nullptr;

  for (const auto& kv : root) {
    const std::string_view key = kv.key();
    if (std::find(kTopLevel.begin(), kTopLevel.end(), key) == kTopLevel.end()) {
      const std::string best = Suggest(key, kTopLevel);
      ctx.Error(Join("", key), best.empty()
                                   ? "unknown field; expected one of: $schema, version, "
                                     "defaults, policies, breakers, clients (or methodConfig "
                                     "for a gRPC service config)"
                                   : "unknown field, did you mean " + Quote(best) + "?");
    }
  }
  if (const json::value* v = root.if_contains("$schema"); v && !v->is_string()) {
    ctx.Expected("$schema", "a string", *v);
  }
  if (const json::value* v = root.if_contains("version")) {
    std::optional<int64_t> i = AsInteger(*v);
    if (!i || *i != 1) ctx.Expected("version", "1", *v);
  }
  if (const json::value* v = root.if_contains("defaults")) {
    if (const json::object* d = AsObject(ctx, "defaults", *v, "an object")) {
      for (const auto& kv : *d) {
        const std::string path = Join("defaults", kv.key());
        if (kv.key() == "policy") {
          if (const json::object* o = AsObject(ctx, path, kv.value(), "an object")) {
            ApplyObject(ctx, path, *o, PolicyFields(), base_policy);
          }
        } else if (kv.key() == "breaker") {
          if (const json::object* o = AsObject(ctx, path, kv.value(), "an object")) {
            ApplyObject(ctx, path, *o, BreakerFields(), base_breaker);
          }
        } else if (kv.key() == "client") {
          if (const json::object* o = AsObject(ctx, path, kv.value(), "an object")) {
            ApplyObject(ctx, path, *o, ClientFields(), base_client);
            defaults_client_value = &kv.value();
          }
        } else {
          ctx.Error(path, "unknown field; expected one of: policy, breaker, client");
        }
      }
    }
  }

  if (const json::value* v = root.if_contains("policies")) {
    ForEachEntry(ctx, "policies", *v, "retry policies",
                 [&](const std::string& name, const std::string& path, const json::object& o) {
                   RetryOptions options = base_policy;
                   const size_t before = ctx.error_count();
                   ApplyObject(ctx, path, o, PolicyFields(), options);
                   ApplyEnv(ctx, "POLICY", "policies", name, kPolicyEnv, PolicyFields(), options);
                   if (ctx.error_count() != before) return;
                   Result<RetryPolicy> policy = RetryPolicy::Create(options);
                   if (!policy.ok()) {
                     ctx.Error(path, policy.status().message());
                     return;
                   }
                   out.policies[name] =
                       std::make_shared<const RetryPolicy>(std::move(policy).value());
                 });
  }
  if (const json::value* v = root.if_contains("breakers")) {
    ForEachEntry(ctx, "breakers", *v, "circuit breakers",
                 [&](const std::string& name, const std::string& path, const json::object& o) {
                   CircuitBreakerOptions options = base_breaker;
                   const size_t before = ctx.error_count();
                   ApplyObject(ctx, path, o, BreakerFields(), options);
                   ApplyEnv(ctx, "BREAKER", "breakers", name, kBreakerEnv, BreakerFields(),
                            options);
                   if (ctx.error_count() != before) return;
                   options.name = name;
                   Status status = CircuitBreaker::Validate(options);
                   if (!status.ok()) {
                     ctx.Error(path, status.message());
                     return;
                   }
                   out.breakers[name] = options;
                 });
  }
  // Client references are checked once every policy and breaker is known.
  auto check_refs = [&](const std::string& path, const ClientSettings& c,
                        const json::object* source) {
    const json::value* pv = source ? source->if_contains("policy") : nullptr;
    if (!c.policy.empty() && pv && out.policies.find(c.policy) == out.policies.end() &&
        !(root.contains("policies") && root.at("policies").is_object() &&
          root.at("policies").get_object().contains(c.policy))) {
      ctx.Expected(Join(path, "policy"), "the name of a policy in \"policies\"", *pv);
    }
    const json::value* bv = source ? source->if_contains("breaker") : nullptr;
    if (!c.breaker.empty() && bv && out.breakers.find(c.breaker) == out.breakers.end() &&
        !(root.contains("breakers") && root.at("breakers").is_object() &&
          root.at("breakers").get_object().contains(c.breaker))) {
      ctx.Expected(Join(path, "breaker"), "the name of a breaker in \"breakers\"", *bv);
    }
  };
  if (defaults_client_value != nullptr) {
    check_refs("defaults.client", base_client, &defaults_client_value->get_object());
  }
  if (const json::value* v = root.if_contains("clients")) {
    ForEachEntry(ctx, "clients", *v, "clients",
                 [&](const std::string& name, const std::string& path, const json::object& o) {
                   ClientSettings settings = base_client;
                   const size_t before = ctx.error_count();
                   ApplyObject(ctx, path, o, ClientFields(), settings);
                   ApplyEnv(ctx, "CLIENT", "clients", name, kClientEnv, ClientFields(),
                            settings);
                   check_refs(path, settings, &o);
                   if (ctx.error_count() != before) return;
                   out.clients[name] = settings;
                 });
  }
}

// ---------------------------------------------------------------------------
// gRPC service config (gRFC A6 "gRPC Retry Design", the retryPolicy of a
// methodConfig; durations are google.protobuf.Duration JSON strings "1.5s").

bool ReadGrpcDuration(Context& ctx, const std::string& path, const json::value& v, bool positive,
                      Duration& out) {
  const std::string what = "a duration string such as \"0.1s\"";
  if (v.is_string()) {
    std::string_view s = v.get_string();
    if (s.size() >= 2 && s.back() == 's' && s[0] != '-') {
      std::string note;
      std::optional<double> seconds = ParseDurationSeconds(s, note);
      // "> 0" holds for the Duration itself (a positive value below half a
      // nanosecond rounds to zero).
      if (seconds && std::isfinite(*seconds) && *seconds < kMaxDurationSeconds &&
          (!positive || SecondsToDuration(*seconds) > Duration::zero())) {
        out = SecondsToDuration(*seconds);
        return true;
      }
    }
  }
  ctx.Expected(path, positive ? what + " greater than 0" : what, v);
  return false;
}

std::string GrpcPolicyName(Context& ctx, const std::string& path, const json::value& v) {
  const json::object* o = AsObject(ctx, path, v, "an object such as {\"service\": \"pkg.Svc\"}");
  if (o == nullptr) return "";
  std::string service, method;
  for (const auto& kv : *o) {
    const std::string p = Join(path, kv.key());
    if (kv.key() == "service") {
      ReadString(ctx, p, kv.value(), service);
    } else if (kv.key() == "method") {
      ReadString(ctx, p, kv.value(), method);
    } else {
      ctx.Error(p, "unknown field; expected one of: service, method");
    }
  }
  if (service.empty() && method.empty()) return "default";
  if (service.empty()) {
    ctx.Error(path, "expected a service when a method is given");
    return "";
  }
  return method.empty() ? service : service + "/" + method;
}

void ParseGrpcRetryPolicy(Context& ctx, const std::string& path, const json::object& o,
                          RetryOptions& options) {
  // A6 mapping: exponential backoff with full jitter, i.e. the n-th retry
  // waits random(0, min(initialBackoff * backoffMultiplier^(n-1), maxBackoff)).
  options.backoff.kind = BackoffKind::kExponential;
  options.backoff.jitter = JitterKind::kFull;
  static const std::vector<std::string_view> kRequired = {
      "maxAttempts", "initialBackoff", "maxBackoff", "backoffMultiplier",
      "retryableStatusCodes"};
  for (const auto& kv : o) {
    const std::string p = Join(path, kv.key());
    const std::string_view key = kv.key();
    const json::value& v = kv.value();
    if (key == "maxAttempts") {
      std::optional<int64_t> i = AsInteger(v);
      if (!i || *i < 2) {
        ctx.Expected(p, "an integer > 1", v);
      } else if (*i > kGrpcMaxAttempts) {
        ctx.Warn(p, std::to_string(*i) + " is capped at 5, as gRPC does (gRFC A6)");
        options.max_attempts = static_cast<int>(kGrpcMaxAttempts);
      } else {
        options.max_attempts = static_cast<int>(*i);
      }
    } else if (key == "initialBackoff") {
      ReadGrpcDuration(ctx, p, v, true, options.backoff.base);
    } else if (key == "maxBackoff") {
      ReadGrpcDuration(ctx, p, v, true, options.backoff.max_delay);
    } else if (key == "backoffMultiplier") {
      ReadNumber(ctx, p, v, 0, true, 1e300, "a number > 0", options.backoff.multiplier);
    } else if (key == "retryableStatusCodes") {
      std::vector<int> codes;
      const bool ok = ForEachElement(ctx, p, v, "a non-empty array of status codes",
                                     [&](const std::string& ep, const json::value& e) {
                                       int code = 0;
                                       if (!ReadGrpcCode(ctx, ep, e, code)) return false;
                                       codes.push_back(code);
                                       return true;
                                     });
      if (ok && codes.empty()) ctx.Expected(p, "a non-empty array of status codes", v);
      if (ok) options.retryable_grpc_codes = std::move(codes);
    } else if (key == "perAttemptRecvTimeout") {
      Duration d{};
      if (ReadGrpcDuration(ctx, p, v, true, d)) options.attempt_timeout = d;
    } else {
      ctx.Error(p, "unknown field; expected one of: maxAttempts, initialBackoff, maxBackoff, "
                   "backoffMultiplier, retryableStatusCodes, perAttemptRecvTimeout");
    }
  }
  for (std::string_view key : kRequired) {
    if (!o.contains(key)) ctx.Error(Join(path, key), "missing (required by gRFC A6)");
  }
}

void ParseGrpc(Context& ctx, const json::object& root, ConfigSnapshot& out) {
  std::map<std::string, std::string> first_seen;
  for (const auto& kv : root) {
    const std::string_view key = kv.key();
    if (key == "methodConfig") continue;
    if (key == "loadBalancingPolicy" || key == "loadBalancingConfig" ||
        key == "retryThrottling" || key == "healthCheckConfig") {
      ctx.Warn(Join("", key), "ignored (mulligan reads only methodConfig[].retryPolicy)");
    } else {
      ctx.Error(Join("", key),
                "unknown field; expected one of: methodConfig, loadBalancingPolicy, "
                "loadBalancingConfig, retryThrottling, healthCheckConfig");
    }
  }
  ForEachElement(
      ctx, "methodConfig", root.at("methodConfig"), "an array of method configs",
      [&](const std::string& path, const json::value& entry) {
        const json::object* mc = AsObject(ctx, path, entry, "an object");
        if (mc == nullptr) return false;
        RetryOptions options;
        // Without a retryPolicy gRPC makes one attempt.
        options.max_attempts = 1;
        options.retryable_grpc_codes.clear();
        const size_t before = ctx.error_count();
        std::vector<std::pair<std::string, std::string>> names;  // name, path
        for (const auto& kv : *mc) {
          const std::string p = Join(path, kv.key());
          const std::string_view key = kv.key();
          if (key == "name") {
            ForEachElement(ctx, p, kv.value(), "an array of {\"service\", \"method\"} objects",
                           [&](const std::string& np, const json::value& n) {
                             std::string name = GrpcPolicyName(ctx, np, n);
                             if (!name.empty()) names.emplace_back(name, np);
                             return true;
                           });
          } else if (key == "retryPolicy") {
            if (const json::object* rp = AsObject(ctx, p, kv.value(), "an object")) {
              ParseGrpcRetryPolicy(ctx, p, *rp, options);
            }
          } else if (key == "timeout") {
            Duration d{};
            if (ReadGrpcDuration(ctx, p, kv.value(), true, d)) options.deadline = d;
          } else if (key == "waitForReady" || key == "maxRequestMessageBytes" ||
                     key == "maxResponseMessageBytes") {
            // Transport settings with no retry meaning.
          } else if (key == "hedgingPolicy") {
            ctx.Warn(p, "ignored (mulligan does not hedge)");
          } else {
            ctx.Error(p, "unknown field; expected one of: name, retryPolicy, timeout, "
                         "waitForReady, maxRequestMessageBytes, maxResponseMessageBytes, "
                         "hedgingPolicy");
          }
        }
        if (!mc->contains("name")) ctx.Error(Join(path, "name"), "missing");
        if (ctx.error_count() != before) return false;
        for (const auto& [name, name_path] : names) {
          auto [it, inserted] = first_seen.emplace(name, name_path);
          if (!inserted) {
            ctx.Error(name_path, "duplicate name " + Quote(name) + " (first at " + it->second +
                                     ")");
            continue;
          }
          RetryOptions named = options;
          const size_t before_env = ctx.error_count();
          ApplyEnv(ctx, "POLICY", "policies", name, kPolicyEnv, PolicyFields(), named);
          if (ctx.error_count() != before_env) continue;
          Result<RetryPolicy> policy = RetryPolicy::Create(named);
          if (!policy.ok()) {
            ctx.Error(path, policy.status().message());
            continue;
          }
          out.policies[name] = std::make_shared<const RetryPolicy>(std::move(policy).value());
        }
        return true;
      });
}

// Turns a byte offset into "line L, column C" (1-based; columns count bytes).
std::string LineColumn(std::string_view text, size_t offset) {
  offset = std::min(offset, text.size());
  size_t line = 1, column = 1;
  for (size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

}  // namespace

const char* GrpcStatusCodeName(int code) {
  if (code < 0 || code > 16) return nullptr;
  return kGrpcCodeNames[code];
}

std::optional<int> ParseGrpcStatusCode(std::string_view name) {
  for (int i = 0; i <= 16; ++i) {
    if (name == kGrpcCodeNames[i]) return i;
  }
  return std::nullopt;
}

Result<Duration> ParseDuration(std::string_view text) {
  Context ctx("duration", LoadOptions{});
  Duration d{};
  if (!ReadDuration(ctx, "value", json::string(text), false, d)) {
    return InvalidArgumentError("expected a duration such as \"10s\", got " + Quote(text));
  }
  return d;
}

// A handler for json::basic_parser that stops at the first key an object
// names twice. RFC 8259 section 4 says names SHOULD be unique and leaves the
// meaning of repeats open; Boost.JSON keeps one of them silently, so in a
// configuration file a repeated key would hide a value its author wrote.
class DuplicateKeyCheck {
 public:
  static constexpr std::size_t max_array_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_object_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_string_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_key_size = static_cast<std::size_t>(-1);

  // Whether a key was repeated, and which (it may be the empty key).
  bool found() const { return found_; }
  const std::string& duplicate() const { return duplicate_; }

  bool on_document_begin(boost::system::error_code&) { return true; }
  bool on_document_end(boost::system::error_code&) { return true; }
  bool on_array_begin(boost::system::error_code&) { return true; }
  bool on_array_end(std::size_t, boost::system::error_code&) { return true; }
  bool on_object_begin(boost::system::error_code&) {
    keys_.emplace_back();
    return true;
  }
  bool on_object_end(std::size_t, boost::system::error_code&) {
    keys_.pop_back();
    return true;
  }
  bool on_string_part(json::string_view, std::size_t, boost::system::error_code&) { return true; }
  bool on_string(json::string_view, std::size_t, boost::system::error_code&) { return true; }
  bool on_key_part(json::string_view part, std::size_t, boost::system::error_code&) {
    key_.append(part.data(), part.size());
    return true;
  }
  bool on_key(json::string_view last, std::size_t, boost::system::error_code& ec) {
    key_.append(last.data(), last.size());
    if (!keys_.back().insert(key_).second) {
      found_ = true;
      duplicate_ = key_;
      ec = std::make_error_code(std::errc::invalid_argument);
      return false;
    }
    key_.clear();
    return true;
  }
  bool on_number_part(json::string_view, boost::system::error_code&) { return true; }
  bool on_int64(int64_t, json::string_view, boost::system::error_code&) { return true; }
  bool on_uint64(uint64_t, json::string_view, boost::system::error_code&) { return true; }
  bool on_double(double, json::string_view, boost::system::error_code&) { return true; }
  bool on_bool(bool, boost::system::error_code&) { return true; }
  bool on_null(boost::system::error_code&) { return true; }
  bool on_comment_part(json::string_view, boost::system::error_code&) { return true; }
  bool on_comment(json::string_view, boost::system::error_code&) { return true; }

 private:
  std::vector<std::unordered_set<std::string>> keys_;  // per open object
  std::string key_;                                    // the key being read
  std::string duplicate_;
  bool found_ = false;
};

// The first key some object of `text` (valid JSON) names twice, with the
// byte offset just after it; nullopt when every object's keys are unique.
std::optional<std::pair<std::string, size_t>> FindDuplicateKey(std::string_view text) {
  json::basic_parser<DuplicateKeyCheck> parser(json::parse_options{});
  boost::system::error_code ec;
  const size_t consumed = parser.write_some(false, text.data(), text.size(), ec);
  if (!ec || !parser.handler().found()) return std::nullopt;
  return std::make_pair(parser.handler().duplicate(), consumed);
}

Result<std::shared_ptr<const ConfigSnapshot>> ParseConfig(std::string_view text,
                                                          std::string_view source,
                                                          const LoadOptions& options) {
  Context ctx(std::string(source), options);
  // A UTF-8 byte order mark (editors on Windows write one) is not JSON
  // (RFC 8259 section 8.1 lets parsers ignore it): skip it.
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
  json::parser parser;
  boost::system::error_code ec;
  const size_t consumed = parser.write(text.data(), text.size(), ec);
  if (ec) {
    // On an error `consumed` is where the parser stopped.
    return InvalidArgumentError(std::string(source) + ": " + LineColumn(text, consumed) +
                                ": invalid JSON: " + ec.message());
  }
  if (std::optional<std::pair<std::string, size_t>> repeated = FindDuplicateKey(text)) {
    return InvalidArgumentError(std::string(source) + ": " +
                                LineColumn(text, repeated->second) + ": duplicate key " +
                                Quote(repeated->first) + " (each key may appear once per object)");
  }
  const json::value root = parser.release();
  auto snapshot = std::make_shared<ConfigSnapshot>();
  snapshot->source = std::string(source);
  if (!root.is_object()) {
    ctx.Error("(top level)", "expected an object such as {\"policies\": {...}}, got " +
                                 Describe(root));
    return ctx.ToStatus();
  }
  if (root.get_object().contains("methodConfig")) {
    ParseGrpc(ctx, root.get_object(), *snapshot);
  } else {
    ParseMulligan(ctx, root.get_object(), *snapshot);
  }
  if (ctx.error_count() > 0) return ctx.ToStatus();
  snapshot->warnings = std::move(ctx.warnings());
  return std::shared_ptr<const ConfigSnapshot>(std::move(snapshot));
}

Result<std::shared_ptr<const ConfigSnapshot>> ParseConfigFile(const std::string& path,
                                                              const LoadOptions& options) {
  errno = 0;
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    return InvalidArgumentError(path + ": cannot read the configuration file: " +
                                std::strerror(errno));
  }
  // A configuration file is small: refuse anything beyond kMaxConfigBytes
  // rather than reading forever from a device or a named pipe.
  constexpr size_t kMaxConfigBytes = 16 * 1024 * 1024;
  std::string text;
  char buf[65536];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) {
    text.append(buf, n);
    if (text.size() > kMaxConfigBytes) {
      std::fclose(f);
      return InvalidArgumentError(path + ": cannot read the configuration file: larger than " +
                                  std::to_string(kMaxConfigBytes / (1024 * 1024)) + " MiB");
    }
  }
  const int read_errno = std::ferror(f) ? errno : 0;
  std::fclose(f);
  if (read_errno != 0) {
    return InvalidArgumentError(path + ": cannot read the configuration file: " +
                                std::strerror(read_errno));
  }
  return ParseConfig(text, path, options);
}

LoadReport MakeLoadReport(const ConfigSnapshot& snapshot) {
  LoadReport report;
  report.source = snapshot.source;
  for (const auto& kv : snapshot.policies) report.policies.push_back(kv.first);
  for (const auto& kv : snapshot.breakers) report.breakers.push_back(kv.first);
  for (const auto& kv : snapshot.clients) report.clients.push_back(kv.first);
  report.warnings = snapshot.warnings;
  return report;
}

Result<LoadReport> PolicyRegistry::Install(
    Result<std::shared_ptr<const ConfigSnapshot>> parsed,
    std::function<Result<std::shared_ptr<const ConfigSnapshot>>()> again) {
  // REQUIRES: reload_mu_ held.
  if (!parsed.ok()) return parsed.status();  // the old configuration stays
  std::shared_ptr<const ConfigSnapshot> next = std::move(parsed).value();
  LoadReport report = MakeLoadReport(*next);
  {
    std::lock_guard<std::mutex> lock(mu_);
    current_.swap(next);
  }
  // `next` (the old snapshot) is released here, outside the lock; policies
  // still held by running calls live on through their own shared_ptr.
  if (again) reload_ = std::move(again);
  return report;
}

Result<LoadReport> PolicyRegistry::LoadFile(const std::string& path, const LoadOptions& options) {
  std::lock_guard<std::mutex> lock(reload_mu_);
  auto again = [path, options]() { return ParseConfigFile(path, options); };
  return Install(again(), again);
}

Result<LoadReport> PolicyRegistry::LoadString(std::string_view text, std::string_view source,
                                              const LoadOptions& options) {
  std::lock_guard<std::mutex> lock(reload_mu_);
  auto again = [text = std::string(text), source = std::string(source), options]() {
    return ParseConfig(text, source, options);
  };
  return Install(again(), again);
}

Result<LoadReport> PolicyRegistry::LoadFromEnvironment(const LoadOptions& options) {
  std::optional<std::string> path;
  if (options.env) {
    path = options.env("MULLIGAN_CONFIG");
  } else if (const char* v = std::getenv("MULLIGAN_CONFIG")) {
    path = std::string(v);
  }
  if (!path || path->empty()) {
    return InvalidArgumentError(
        "MULLIGAN_CONFIG is not set: it must name a mulligan configuration file");
  }
  return LoadFile(*path, options);
}

Result<LoadReport> PolicyRegistry::Reload() {
  std::lock_guard<std::mutex> lock(reload_mu_);
  if (!reload_) {
    return InvalidArgumentError("nothing to reload: no configuration has been loaded");
  }
  return Install(reload_(), nullptr);
}

std::shared_ptr<const ConfigSnapshot> PolicyRegistry::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return current_;
}

namespace {

template <typename Map>
Status NotFound(const ConfigSnapshot& snapshot, const Map& map, const char* what,
                std::string_view name) {
  if (snapshot.source.empty()) {
    return InvalidArgumentError(std::string("no ") + what + " named " + Quote(name) +
                                ": no configuration has been loaded");
  }
  std::string known;
  for (const auto& kv : map) known += (known.empty() ? "" : ", ") + kv.first;
  return InvalidArgumentError(std::string("no ") + what + " named " + Quote(name) + " in " +
                              snapshot.source + " (known: " +
                              (known.empty() ? "none" : known) + ")");
}

}  // namespace

Result<std::shared_ptr<const RetryPolicy>> PolicyRegistry::Policy(std::string_view name) const {
  std::shared_ptr<const ConfigSnapshot> s = Snapshot();
  auto it = s->policies.find(name);
  if (it == s->policies.end()) return NotFound(*s, s->policies, "retry policy", name);
  return it->second;
}

Result<CircuitBreakerOptions> PolicyRegistry::Breaker(std::string_view name) const {
  std::shared_ptr<const ConfigSnapshot> s = Snapshot();
  auto it = s->breakers.find(name);
  if (it == s->breakers.end()) return NotFound(*s, s->breakers, "breaker", name);
  return it->second;
}

Result<ClientSettings> PolicyRegistry::Client(std::string_view name) const {
  std::shared_ptr<const ConfigSnapshot> s = Snapshot();
  auto it = s->clients.find(name);
  if (it == s->clients.end()) return NotFound(*s, s->clients, "client", name);
  return it->second;
}

}  // namespace v0
}  // namespace mulligan
