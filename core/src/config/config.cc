// core/src/config/config.cc — the public API of mulligan/config/config.h:
// gRPC status code names, ParseDuration, ParseConfig / ParseConfigFile (read
// the text, reject invalid JSON and repeated keys, dispatch to a format) and
// the PolicyRegistry's atomic swap.
//
// The pieces behind it are private to mulligan_config (core/src/config/):
//   reader.{h,cc}          JSON values -> typed fields; error collection
//   fields.{h,cc}          the field tables of policies, breakers, clients
//   environment.{h,cc}     the MULLIGAN_POLICY_/BREAKER_/CLIENT_ overrides
//   limits_format.{h,cc}   budgets, throttles, bulkheads, rate_limiters,
//                          adaptive_rates
//   formats.h              the two document formats:
//     mulligan_format.cc     the mulligan format
//     grpc_format.cc         the gRPC service config (gRFC A6)
//   duplicate_keys.{h,cc}  the repeated-key check
//
// Errors are collected rather than stopping at the first one, so that
// `mulligan config check` can list every problem of a file at once. Each says
// "<source>: <json path>: expected <what>, got <value>".
#include "mulligan/config/config.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include <boost/json.hpp>

#include "duplicate_keys.h"
#include "environment.h"
#include "formats.h"
#include "internal/ascii.h"
#include "reader.h"

namespace mulligan {
inline namespace v0 {
namespace {

namespace json = boost::json;

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

// The keys of a snapshot's map, in order.
template <typename Map>
std::vector<std::string> KeysOf(const Map& map) {
  std::vector<std::string> keys;
  for (const auto& entry : map) keys.push_back(entry.first);
  return keys;
}

}  // namespace

const char* GrpcStatusCodeName(int code) {
  if (code < 0 || code > 16) return nullptr;
  return kGrpcCodeNames[code];
}

std::optional<int> ParseGrpcStatusCode(std::string_view name) {
  for (int i = 0; i <= 16; ++i) {
    if (internal::EqualsIgnoreCase(name, kGrpcCodeNames[i])) return i;
  }
  return std::nullopt;
}

Result<Duration> ParseDuration(std::string_view text) {
  internal::Context ctx("duration", LoadOptions{});
  Duration d{};
  if (!internal::ReadDuration(ctx, "value", json::string(text), false, d)) {
    return InvalidArgumentError("expected a duration such as \"10s\", got " +
                                internal::Quote(text));
  }
  return d;
}

Result<std::shared_ptr<const ConfigSnapshot>> ParseConfig(std::string_view text,
                                                          std::string_view source,
                                                          const LoadOptions& options) {
  internal::Context ctx(std::string(source), options);
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
  if (std::optional<std::pair<std::string, size_t>> repeated = internal::FindDuplicateKey(text)) {
    return InvalidArgumentError(std::string(source) + ": " +
                                LineColumn(text, repeated->second) + ": duplicate key " +
                                internal::Quote(repeated->first) +
                                " (each key may appear once per object)");
  }
  const json::value root = parser.release();
  auto snapshot = std::make_shared<ConfigSnapshot>();
  snapshot->source = std::string(source);
  if (!root.is_object()) {
    ctx.Error("(top level)", "expected an object such as {\"policies\": {...}}, got " +
                                 internal::Describe(root));
    return ctx.ToStatus();
  }
  if (root.get_object().contains("methodConfig")) {
    internal::ParseGrpc(ctx, root.get_object(), *snapshot);
  } else {
    internal::ParseMulligan(ctx, root.get_object(), *snapshot);
  }
  if (ctx.error_count() > 0) return ctx.ToStatus();
  internal::ReportUnmatchedEnv(ctx, KeysOf(snapshot->policies), KeysOf(snapshot->breakers),
                               KeysOf(snapshot->clients));
  internal::ReportUnmatchedLimitEnv(ctx, *snapshot);
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

namespace {

// Erases the entries of `built` whose names `section` does not have.
template <typename Built, typename Section>
void PruneBuilt(Built& built, const Section& section) {
  for (auto it = built.begin(); it != built.end();) {
    it = section.find(it->first) == section.end() ? built.erase(it) : std::next(it);
  }
}

}  // namespace

LoadReport MakeLoadReport(const ConfigSnapshot& snapshot) {
  LoadReport report;
  report.source = snapshot.source;
  for (const auto& kv : snapshot.policies) report.policies.push_back(kv.first);
  for (const auto& kv : snapshot.breakers) report.breakers.push_back(kv.first);
  for (const auto& kv : snapshot.clients) report.clients.push_back(kv.first);
  report.warnings = snapshot.warnings;
  report.budgets = KeysOf(snapshot.budgets);
  report.throttles = KeysOf(snapshot.throttles);
  report.bulkheads = KeysOf(snapshot.bulkheads);
  report.rate_limiters = KeysOf(snapshot.rate_limiters);
  report.adaptive_rates = KeysOf(snapshot.adaptive_rates);
  report.state = snapshot.state.has_value();
  report.shared_breakers = snapshot.shared_breakers;
  report.shared_rate_limiters = snapshot.shared_rate_limiters;
  std::sort(report.shared_breakers.begin(), report.shared_breakers.end());
  std::sort(report.shared_rate_limiters.begin(), report.shared_rate_limiters.end());
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
    // Forget the built parts the new configuration no longer has: a later
    // entry of that name starts afresh (those still present and unchanged
    // are kept; changed ones are rebuilt on their next lookup).
    std::lock_guard<std::mutex> parts_lock(parts_mu_);
    PruneBuilt(built_budgets_, next->budgets);
    PruneBuilt(built_throttles_, next->throttles);
    PruneBuilt(built_bulkheads_, next->bulkheads);
    PruneBuilt(built_rate_limiters_, next->rate_limiters);
    PruneBuilt(built_adaptive_rates_, next->adaptive_rates);
  }
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
    return InvalidArgumentError(std::string("no ") + what + " named " + internal::Quote(name) +
                                ": no configuration has been loaded");
  }
  std::string known;
  for (const auto& kv : map) known += (known.empty() ? "" : ", ") + kv.first;
  return InvalidArgumentError(std::string("no ") + what + " named " + internal::Quote(name) +
                              " in " + snapshot.source + " (known: " +
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

Result<PolicyLimits> PolicyRegistry::Limits(std::string_view policy) const {
  std::shared_ptr<const ConfigSnapshot> s = Snapshot();
  if (s->policies.find(policy) == s->policies.end()) {
    return NotFound(*s, s->policies, "retry policy", policy);
  }
  auto it = s->policy_limits.find(policy);
  return it == s->policy_limits.end() ? PolicyLimits{} : it->second;
}

Result<std::optional<HedgingOptions>> PolicyRegistry::Hedging(std::string_view policy) const {
  std::shared_ptr<const ConfigSnapshot> s = Snapshot();
  if (s->policies.find(policy) == s->policies.end()) {
    return NotFound(*s, s->policies, "retry policy", policy);
  }
  auto it = s->hedging.find(policy);
  if (it == s->hedging.end()) return std::optional<HedgingOptions>();
  return std::optional<HedgingOptions>(it->second);
}

namespace {

// Returns the part `name` of `section` (the snapshot's options) from
// `built`, building it with `make` when absent or built from other options.
// REQUIRES: `mu` guards `built`.
template <typename Options, typename Built, typename Make>
auto BuildPart(const ConfigSnapshot& s, const std::map<std::string, Options, std::less<>>& section,
               const char* what, std::string_view name, std::mutex& mu, Built& built, Make make)
    -> decltype(make(std::declval<const Options&>())) {
  auto it = section.find(name);
  if (it == section.end()) return NotFound(s, section, what, name);
  std::lock_guard<std::mutex> lock(mu);
  auto found = built.find(name);
  if (found != built.end() && SameOptions(found->second.options, it->second)) {
    return found->second.part;
  }
  auto made = make(it->second);
  if (!made.ok()) return made.status();
  built[std::string(name)] = {it->second, *made};
  return made;
}

}  // namespace

Result<std::shared_ptr<RetryBudget>> PolicyRegistry::BudgetNamed(std::string_view name,
                                                                 Clock* clock) const {
  std::shared_ptr<const ConfigSnapshot> s = Snapshot();
  return BuildPart(*s, s->budgets, "budget", name, parts_mu_, built_budgets_,
                   [clock](const BudgetOptions& o) {
                     BudgetOptions options = o;
                     options.clock = clock;
                     return RetryBudget::Create(options);
                   });
}

Result<std::shared_ptr<AdaptiveThrottle>> PolicyRegistry::ThrottleNamed(
    std::string_view name) const {
  std::shared_ptr<const ConfigSnapshot> s = Snapshot();
  return BuildPart(*s, s->throttles, "throttle", name, parts_mu_, built_throttles_,
                   [](const ThrottleOptions& o) { return AdaptiveThrottle::Create(o); });
}

Result<std::shared_ptr<Bulkhead>> PolicyRegistry::BulkheadNamed(std::string_view name) const {
  std::shared_ptr<const ConfigSnapshot> s = Snapshot();
  return BuildPart(*s, s->bulkheads, "bulkhead", name, parts_mu_, built_bulkheads_,
                   [](const BulkheadOptions& o) { return Bulkhead::Create(o); });
}

Result<std::shared_ptr<RateLimiter>> PolicyRegistry::RateLimiterNamed(
    std::string_view name) const {
  std::shared_ptr<const ConfigSnapshot> s = Snapshot();
  const bool shared = std::find(s->shared_rate_limiters.begin(), s->shared_rate_limiters.end(),
                                name) != s->shared_rate_limiters.end();
  std::shared_ptr<RateLimiterBackend> backend;
  {
    std::lock_guard<std::mutex> lock(parts_mu_);
    if (shared) backend = shared_rate_backend_;
    // A reload that turned "shared" on or off with the same options, or a
    // shared limiter built on another backend: build it again.
    auto found = built_rate_limiters_.find(name);
    if (found != built_rate_limiters_.end() &&
        (found->second.part->shared() != shared ||
         (shared && found->second.part->options().backend != backend))) {
      built_rate_limiters_.erase(found);
    }
  }
  if (shared) {
    if (backend == nullptr) {
      return InvalidArgumentError("rate limiter \"" + std::string(name) +
                                  "\" is shared (\"shared\": true) but no state backend was "
                                  "given");
    }
  }
  return BuildPart(*s, s->rate_limiters, "rate limiter", name, parts_mu_, built_rate_limiters_,
                   [backend](const RateLimiterOptions& o) {
                     if (backend == nullptr) return RateLimiter::Create(o);
                     RateLimiterOptions with = o;
                     with.backend = backend;
                     return RateLimiter::Create(with);
                   });
}

void PolicyRegistry::SetSharedRateLimiterBackend(std::shared_ptr<RateLimiterBackend> backend) {
  std::lock_guard<std::mutex> lock(parts_mu_);
  shared_rate_backend_ = std::move(backend);
}

Result<std::shared_ptr<AdaptiveRate>> PolicyRegistry::AdaptiveRateNamed(std::string_view name,
                                                                       Clock* clock) const {
  std::shared_ptr<const ConfigSnapshot> s = Snapshot();
  return BuildPart(*s, s->adaptive_rates, "adaptive rate", name, parts_mu_,
                   built_adaptive_rates_, [clock](const AdaptiveRateOptions& o) {
                     const Clock* c = clock != nullptr ? clock : SystemClock::Default();
                     return AdaptiveRate::Create(o, c->Now());
                   });
}

bool SameOptions(const BudgetOptions& a, const BudgetOptions& b) {
  const TokenBucketOptions &ta = a.token_bucket, &tb = b.token_bucket;
  const QuotaOptions &qa = a.quota, &qb = b.quota;
  const RatioOptions &ra = a.ratio, &rb = b.ratio;
  return a.name == b.name && a.kind == b.kind && ta.max_tokens == tb.max_tokens &&
         ta.token_ratio == tb.token_ratio && qa.capacity == qb.capacity &&
         qa.retry_cost == qb.retry_cost && qa.timeout_cost == qb.timeout_cost &&
         qa.throttling_cost == qb.throttling_cost &&
         qa.no_retry_increment == qb.no_retry_increment && ra.ttl == rb.ttl &&
         ra.percent == rb.percent && ra.min_retries_per_second == rb.min_retries_per_second;
}

bool SameOptions(const ThrottleOptions& a, const ThrottleOptions& b) {
  return a.name == b.name && a.window == b.window && a.k == b.k && a.seed == b.seed;
}

bool SameOptions(const BulkheadOptions& a, const BulkheadOptions& b) {
  return a.name == b.name && a.max_concurrent == b.max_concurrent &&
         a.max_queue == b.max_queue && a.max_wait == b.max_wait;
}

bool SameOptions(const RateLimiterOptions& a, const RateLimiterOptions& b) {
  return a.name == b.name && a.rate == b.rate && a.burst == b.burst &&
         a.max_wait == b.max_wait && a.penalize_retry_after == b.penalize_retry_after &&
         a.max_keys == b.max_keys;
}

bool SameOptions(const AdaptiveRateOptions& a, const AdaptiveRateOptions& b) {
  return a.name == b.name && a.beta == b.beta && a.scale_constant == b.scale_constant &&
         a.smoothing == b.smoothing && a.bucket == b.bucket &&
         a.min_fill_rate == b.min_fill_rate && a.max_rate_scale == b.max_rate_scale &&
         a.max_wait == b.max_wait;
}

}  // namespace v0
}  // namespace mulligan
