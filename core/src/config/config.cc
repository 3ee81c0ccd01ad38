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

// gRFC A6: "maxAttempts ... values greater than 5 are treated as 5".
constexpr int64_t kGrpcMaxAttempts = 5;

const char* const kGrpcCodeNames[] = {
    "OK",           "CANCELLED",          "UNKNOWN",        "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED", "NOT_FOUND",     "ALREADY_EXISTS", "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED",  "OUT_OF_RANGE",
    "UNIMPLEMENTED", "INTERNAL",          "UNAVAILABLE",    "DATA_LOSS",
    "UNAUTHENTICATED"};

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
      // nanosecond rounds to zero). The seconds that reach
      // DurationFromSeconds are finite and in [0, kMaxDurationSeconds),
      // where it is exactly llround(seconds * 1e9).
      if (seconds && std::isfinite(*seconds) && *seconds < kMaxDurationSeconds &&
          (!positive || internal::DurationFromSeconds(*seconds) > Duration::zero())) {
        out = internal::DurationFromSeconds(*seconds);
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
          ApplyPolicyEnv(ctx, name, named);
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
