// core/src/config/reader.cc — reading JSON values into typed fields, with the
// loader's error collection and typo suggestions (see reader.h).
#include "reader.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string_view>
#include <utility>
#include <vector>

#include <unistd.h>  // environ

#include "internal/format.h"
#include "internal/saturating.h"

namespace mulligan {
inline namespace v0 {
namespace internal {
namespace {

// At most this many errors are reported for one document.
constexpr size_t kMaxErrors = 50;

constexpr const char* kDurationExpected = "a duration such as \"10s\"";

// Returns true for a key that a path shows bare (a.b): [A-Za-z0-9_-]+.
bool IsPlainKey(std::string_view key) {
  if (key.empty()) return false;
  for (char c : key) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

// Returns the Levenshtein distance of `a` and `b` (bytes).
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

// Returns the seconds in one `unit` of a duration, or 0 for an unknown unit.
double UnitSeconds(std::string_view unit) {
  if (unit == "ns") return 1e-9;
  if (unit == "us" || unit == "\xC2\xB5s") return 1e-6;  // also "µs"
  if (unit == "ms") return 1e-3;
  if (unit == "s") return 1;
  if (unit == "m") return 60;
  if (unit == "h") return 3600;
  return 0;
}

bool IsNumberChar(char c) { return (c >= '0' && c <= '9') || c == '.'; }

}  // namespace

std::string Quote(std::string_view s) { return json::serialize(json::string(s)); }

std::string Join(const std::string& path, std::string_view key) {
  if (IsPlainKey(key)) return path.empty() ? std::string(key) : path + "." + std::string(key);
  return path + "[" + Quote(key) + "]";
}

std::string Index(const std::string& path, size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

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

// ---------------------------------------------------------------------------
// Context

namespace {

// The names of the process's environment variables (POSIX environ).
std::vector<std::string> ProcessEnvNames() {
  std::vector<std::string> names;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    names.emplace_back(text.substr(0, text.find('=')));
  }
  return names;
}

}  // namespace

Context::Context(std::string source, const LoadOptions& options) : source_(std::move(source)) {
  env_ = options.env;
  env_names_ = options.env_names;
  if (!env_names_ && !env_) env_names_ = ProcessEnvNames;
  if (!env_) {
    env_ = [](const std::string& name) -> std::optional<std::string> {
      const char* v = std::getenv(name.c_str());
      if (v == nullptr) return std::nullopt;
      return std::string(v);
    };
  }
  env_overrides_ = options.env_overrides;
}

void Context::Error(const std::string& path, const std::string& what) {
  if (errors_.size() < kMaxErrors) errors_.push_back(source_ + ": " + path + ": " + what);
  ++error_count_;
}

void Context::Expected(const std::string& path, const std::string& what, const json::value& got,
                       const std::string& note) {
  Error(path, "expected " + what + ", got " + Describe(got) + note);
}

void Context::AddRaw(std::string message) {
  if (errors_.size() < kMaxErrors) errors_.push_back(std::move(message));
  ++error_count_;
}

void Context::Warn(const std::string& path, const std::string& what) {
  warnings_.push_back(source_ + ": " + path + ": " + what);
}

std::optional<std::string> Context::Env(const std::string& name) const {
  return env_overrides_ ? env_(name) : std::nullopt;
}

std::vector<std::string> Context::EnvNames() const {
  if (!env_overrides_ || !env_names_) return {};
  return env_names_();
}

Status Context::ToStatus() const {
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

// ---------------------------------------------------------------------------
// Scalars

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

// ---------------------------------------------------------------------------
// Durations

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
    while (i < text.size() && IsNumberChar(text[i])) ++i;
    const std::string_view number = text.substr(start, i - start);
    if (number.empty() || number == "." || std::count(number.begin(), number.end(), '.') > 1) {
      note = " (a duration is a number followed by a unit: ns, us, ms, s, m or h)";
      return std::nullopt;
    }
    const size_t unit_start = i;
    while (i < text.size() && !IsNumberChar(text[i])) ++i;
    const std::string_view unit = text.substr(unit_start, i - unit_start);
    const double scale = UnitSeconds(unit);
    if (unit.empty()) {
      note = " (missing unit: ns, us, ms, s, m or h; a bare number of seconds must not be quoted)";
      return std::nullopt;
    }
    if (scale == 0) {
      note = " (unknown unit " + Quote(unit) + "; use ns, us, ms, s, m or h)";
      return std::nullopt;
    }
    // strtod needs a terminated buffer; numbers are short.
    const std::string n(number);
    total += std::strtod(n.c_str(), nullptr) * scale;
  }
  return total;
}

// The seconds reaching DurationFromSeconds below are finite and in
// [0, kMaxDurationSeconds), where it is exactly llround(seconds * 1e9): its
// clamps (<= 0 to zero, >= 2^63 ns to Duration::max()) never apply.
bool ReadDuration(Context& ctx, const std::string& path, const json::value& v, bool positive,
                  Duration& out) {
  const std::string what =
      positive ? "a duration greater than 0 such as \"10s\"" : kDurationExpected;
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
    note = " (it must be below 9.2e9 s)";
  }
  // "> 0" holds for the Duration itself: a positive value below half a
  // nanosecond rounds to zero.
  if (seconds && positive && DurationFromSeconds(*seconds) <= Duration::zero()) {
    if (*seconds > 0) note = " (it rounds to 0 ns)";
    seconds.reset();
  }
  if (!seconds) {
    ctx.Expected(path, what, v, note);
    return false;
  }
  out = DurationFromSeconds(*seconds);
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

// ---------------------------------------------------------------------------
// Names and structure

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

const json::object* AsObject(Context& ctx, const std::string& path, const json::value& v,
                             const std::string& what) {
  if (!v.is_object()) {
    ctx.Expected(path, what, v);
    return nullptr;
  }
  return &v.get_object();
}

}  // namespace internal
}  // namespace v0
}  // namespace mulligan
