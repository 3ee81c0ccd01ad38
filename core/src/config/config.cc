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

#include "internal/saturating.h"
#include "environment.h"
#include "fields.h"
#include "formats.h"
#include "reader.h"

namespace mulligan {
inline namespace v0 {
namespace {

// Transitional: the readers, field tables and environment overrides moved
// to reader.h, fields.h and environment.h.
using namespace internal;  // NOLINT

const char* const kGrpcCodeNames[] = {
    "OK",           "CANCELLED",          "UNKNOWN",        "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED", "NOT_FOUND",     "ALREADY_EXISTS", "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED",  "OUT_OF_RANGE",
    "UNIMPLEMENTED", "INTERNAL",          "UNAVAILABLE",    "DATA_LOSS",
    "UNAUTHENTICATED"};

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
    internal::ParseGrpc(ctx, root.get_object(), *snapshot);
  } else {
    internal::ParseMulligan(ctx, root.get_object(), *snapshot);
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
