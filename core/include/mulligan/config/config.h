// mulligan/config/config.h — named policies from configuration: a PolicyRegistry
// loaded from a JSON file (or a gRPC service config), the environment, and
// reloaded atomically while calls are running.
//
//   mulligan::PolicyRegistry registry;
//   mulligan::Result<mulligan::LoadReport> report = registry.LoadFile("mulligan.json");
//   if (!report.ok()) { log(report.status().message()); ... }   // old policies kept
//   std::shared_ptr<const mulligan::RetryPolicy> policy = *registry.Policy("payments");
//   mulligan::RetrySession session = policy->Begin(clock.Now());   // keeps `policy` alive
//
// The file format is documented in docs/configuration.md and described for
// editors by schema/mulligan-config.schema.json:
//
//   {
//     "version": 1,
//     "defaults": {"policy": {...}, "breaker": {...}, "client": {...}},
//     "policies": {"payments": {"max_attempts": 5, "base_delay": "100ms", ...}},
//     "breakers": {"payments": {"failure_threshold": 5, "reset_timeout": "30s"}},
//     "clients":  {"payments": {"policy": "payments", "connect_timeout": "2s"}},
//     "budgets":  {"api": {"kind": "token_bucket", "max_tokens": 100, "token_ratio": 0.5}},
//     "throttles": {"api": {"k": 2, "window": "2m"}},
//     "bulkheads": {"db": {"max_concurrent": 8, "max_queue": 16, "max_wait": "1s"}},
//     "rate_limiters": {"api": {"rate": 50, "burst": 10}},
//     "adaptive_rates": {"aws": {"beta": 0.7, "max_wait": "2s"}},
//     "state": {"redis": "redis://127.0.0.1:6379/0", "prefix": "orders"}
//   }
//
// (0.6) A "breakers" or "rate_limiters" entry with "shared": true lives in
// the "state" section's Redis (StateSettings); the entry's name must pass
// ValidateSharedName (state/backend.h).
//
// A policy may name a "budget", "throttle", "bulkhead", "rate_limiter" and
// "adaptive_rate" of the same file; a client may name a "budget" (or set it null: no retry
// budget at all, instead of the HTTP clients' per-origin default). The named
// parts are built by the registry (PolicyRegistry::BudgetNamed and the others)
// and shared by name: every holder of one name gets the same object.
// (Sections and references added in 0.4; "adaptive_rates" and "adaptive_rate"
// added in 0.5.)
//
// Every field is optional and defaults to DESIGN.md section 4 (through the
// "defaults" section when present). Durations are strings with units ("500us",
// "250ms", "1.5s", "2m", "1h", also compound "1m30s") or numbers of seconds.
// Unknown fields are errors. Every error names the source, the JSON path and
// what was expected:
//   payments.json: policies.payments.max_delay: expected a duration such as "10s", got -3
//
// A document whose top level holds "methodConfig" is read as a gRPC service
// config instead (gRFC A6 retryPolicy; see LoadString).
//
// Environment overrides (applied after the file, to entries the file defines;
// names upper-cased with every character other than A-Z and 0-9 turned into _):
//   MULLIGAN_POLICY_<NAME>_{MAX_ATTEMPTS,BACKOFF,BASE_DELAY,MULTIPLIER,MAX_DELAY,
//                           JITTER,DEADLINE,ATTEMPT_TIMEOUT}
//   MULLIGAN_BREAKER_<NAME>_{FAILURE_THRESHOLD,RESET_TIMEOUT,HALF_OPEN_MAX_CALLS,
//                            MAX_HALF_OPEN_DURATION}
//   MULLIGAN_CLIENT_<NAME>_{ATTEMPT_TIMEOUT,CONNECT_TIMEOUT,VERIFY_TLS,USER_AGENT,
//                           BREAKER_KEY}
//   MULLIGAN_BUDGET_<NAME>_{MAX_TOKENS,TOKEN_RATIO,CAPACITY,RETRY_COST,TIMEOUT_COST,
//                           THROTTLING_COST,NO_RETRY_INCREMENT,TTL,PERCENT,
//                           MIN_RETRIES_PER_SECOND}   (the budget's kind's fields only)
//   MULLIGAN_THROTTLE_<NAME>_{K,WINDOW}
//   MULLIGAN_BULKHEAD_<NAME>_{MAX_CONCURRENT,MAX_QUEUE,MAX_WAIT}
//   MULLIGAN_RATE_LIMITER_<NAME>_{RATE,BURST,MAX_WAIT}            (added in 0.4)
//   MULLIGAN_ADAPTIVE_RATE_<NAME>_{BETA,SCALE_CONSTANT,SMOOTHING,BUCKET,
//                                  MIN_FILL_RATE,MAX_RATE_SCALE,MAX_WAIT} (added in 0.5)
// A value is read like the JSON field (a duration, a number, a name, true/false;
// BREAKER_KEY takes origin, host or path, not templates); DEADLINE,
// ATTEMPT_TIMEOUT (of a policy), MAX_HALF_OPEN_DURATION and MAX_WAIT also
// accept "none".
// A variable of these three prefixes that names no entry of the document, or
// no field of the entry it names (a typo: MULLIGAN_POLICY_PAYMNETS_MAX_ATTEMPTS),
// is not applied and is reported among the load's warnings.

#ifndef MULLIGAN_CONFIG_CONFIG_H_
#define MULLIGAN_CONFIG_CONFIG_H_

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mulligan/breaker/circuit_breaker.h"
#include "mulligan/base/clock.h"
#include "mulligan/budget/budget.h"
#include "mulligan/budget/throttle.h"
#include "mulligan/hedging/hedging.h"
#include "mulligan/limits/adaptive_rate.h"
#include "mulligan/limits/bulkhead.h"
#include "mulligan/limits/rate_limiter.h"
#include "mulligan/http/breaker_key.h"
#include "mulligan/retry/policy.h"
#include "mulligan/base/status.h"

namespace mulligan {
inline namespace v0 {

// The gRPC status codes (grpc/include/grpcpp/support/status_code_enum.h).
// Returns the canonical upper-case name ("UNAVAILABLE") of `code` in [0, 16],
// or nullptr for any other value.
const char* GrpcStatusCodeName(int code);
// Parses a gRPC code name in any ASCII case ("UNAVAILABLE", "unavailable",
// "Unavailable": service configs written by hand use all three, and gRFC A6
// names the codes without fixing their case). Returns nullopt for an
// unknown name. Numeric codes are the caller's: see retryableStatusCodes.
std::optional<int> ParseGrpcStatusCode(std::string_view name);

// Client defaults: the configurable subset of HttpClientOptions.
struct ClientSettings {
  // The name of the retry policy of this client ("policies" section), or empty
  // for the DESIGN.md defaults. Checked to exist at load time.
  std::string policy;
  // The name of the breaker configuration of this client ("breakers"
  // section), or empty for none. Checked to exist at load time.
  std::string breaker;
  // Bound on one attempt when the policy sets no attempt_timeout. Default 30 s.
  Duration attempt_timeout = std::chrono::seconds(30);
  // Bound on establishing a connection. Default 10 s.
  Duration connect_timeout = std::chrono::seconds(10);
  // Verify TLS peers and host names. Default true.
  bool verify_tls = true;
  // The User-Agent header sent when a request sets none. Default "mulligan".
  std::string user_agent = "mulligan";
  // Which breaker of the client guards a request (JSON "breaker_key":
  // "origin", "host", "path" or an array of path templates; kind kFunction
  // is never configured). Default: by origin.
  BreakerKeyOptions breaker_key;
  // Which requests are replayed once bytes were sent: "idempotent"
  // (default), "safe" or "strict" (HttpMethodRule). (Appended in 0.2.)
  std::string method_rule = "idempotent";
  // urllib3's allowed_methods: unset follows method_rule; an empty optional
  // list is not possible: JSON null means every method (all_methods) and an
  // array exactly those methods. (Appended in 0.2.)
  bool all_methods = false;
  std::optional<std::vector<std::string>> allowed_methods;
  // The retry budget of this client (JSON "budget"): the name of a "budgets"
  // entry, shared by every origin of the client (HttpClientOptions::
  // shared_budget), or empty for the HTTP clients' default (a gRFC A6 token
  // bucket per origin). Checked to exist at load time. (Added in 0.4.)
  std::string budget;
  // JSON "budget": null: no retry budget at all (HttpClientOptions::
  // retry_budget = nullopt). Never true together with a non-empty `budget`.
  // (Added in 0.4.)
  bool budget_off = false;
};

// The parts a retry policy names (JSON "budget", "throttle", "bulkhead",
// "rate_limiter" of a "policies" entry): names of entries of the sections
// "budgets", "throttles", "bulkheads" and "rate_limiters", or empty for
// none. Checked to exist at load time. A gRPC service config's
// retryThrottling sets `budget` of every policy of the file. (Added in 0.4.)
struct PolicyLimits {
  std::string budget;
  std::string throttle;
  std::string bulkhead;
  std::string rate_limiter;
  // JSON "adaptive_rate": the name of an "adaptive_rates" entry (the AWS
  // SDKs' adaptive client send rate, limits/adaptive_rate.h), or empty for
  // none. (Added in 0.5.)
  std::string adaptive_rate;
  bool empty() const {
    return budget.empty() && throttle.empty() && bulkhead.empty() && rate_limiter.empty() &&
           adaptive_rate.empty();
  }
};

// The top-level "state" section: where the parts marked "shared": true live
// (issue 16; docs/configuration.md "Shared state"). The configuration core
// only reads and checks it (it links no hiredis and never connects); the
// front doors build the state (RedisState, state/redis.h) and the shared
// parts on it. (Added in 0.6.)
//
//   "state": {"redis": "redis://127.0.0.1:6379/0", "prefix": "orders",
//             "timeout": "250ms", "connect_timeout": "1s"}
struct StateSettings {
  // JSON "redis" (required): a redis:// URL (RedisUrl's grammar, checked
  // with ParseRedisUrl; errors never quote a password).
  std::string redis;
  // JSON "prefix": the key namespace, ValidateStatePrefix's rule.
  // Default "mulligan".
  std::string prefix = "mulligan";
  // JSON "timeout": the bound on one command, in [1 ms, 1 h]. Default 250 ms.
  Duration timeout = std::chrono::milliseconds(250);
  // JSON "connect_timeout": the bound on connecting, in [1 ms, 1 h];
  // nullopt (default): `timeout`.
  std::optional<Duration> connect_timeout;
};

// One loaded configuration: immutable, shared by every reader that took it.
//
// Thread-safety: immutable after construction; safe to share.
struct ConfigSnapshot {
  // Where it came from: the file path, or the source name given to LoadString.
  std::string source;
  std::map<std::string, std::shared_ptr<const RetryPolicy>, std::less<>> policies;
  // Breaker options by name; each `name` field equals its key.
  std::map<std::string, CircuitBreakerOptions, std::less<>> breakers;
  std::map<std::string, ClientSettings, std::less<>> clients;
  // The parts by name (each options' `name` equals its key), and what each
  // policy names (only policies that name at least one part are present).
  // (Added in 0.4.)
  std::map<std::string, BudgetOptions, std::less<>> budgets;
  std::map<std::string, ThrottleOptions, std::less<>> throttles;
  std::map<std::string, BulkheadOptions, std::less<>> bulkheads;
  std::map<std::string, RateLimiterOptions, std::less<>> rate_limiters;
  std::map<std::string, PolicyLimits, std::less<>> policy_limits;
  // Adaptive client rates by name (each `name` equals its key). (Added in 0.5.)
  std::map<std::string, AdaptiveRateOptions, std::less<>> adaptive_rates;
  // The hedging of the policies that have one, by policy name: a gRPC
  // service config's methodConfig[].hedgingPolicy (gRFC A6: maxAttempts,
  // capped at 5, hedgingDelay, nonFatalStatusCodes). Such a policy's
  // RetryPolicy makes one attempt (A6: a method has a retryPolicy or a
  // hedgingPolicy, never both) and classifies the nonFatalStatusCodes as
  // retryable, every other non-OK code as terminal (fatal); its timeout is
  // the deadline. The options are validated (HedgingPolicy::Create accepts
  // them). (Added in 0.6.)
  std::map<std::string, HedgingOptions, std::less<>> hedging;
  // The "state" section, when the document has one. (Added in 0.6.)
  std::optional<StateSettings> state;
  // The names of the "breakers" and "rate_limiters" entries that say
  // "shared": true: a front door builds them on `state` (which is then
  // present), one object per name shared by every process with the same
  // state and prefix. Each name passes ValidateSharedName. (Added in 0.6.)
  std::vector<std::string> shared_breakers;
  std::vector<std::string> shared_rate_limiters;
  // Notes that did not stop the load (a gRPC maxAttempts capped at 5, an
  // ignored gRPC field, an environment override applied). Each names the
  // source and the JSON path or variable.
  std::vector<std::string> warnings;
};

// What a successful load or reload produced.
struct LoadReport {
  std::string source;
  std::vector<std::string> policies;  // sorted names
  std::vector<std::string> breakers;
  std::vector<std::string> clients;
  std::vector<std::string> warnings;
  // Sorted names of the parts sections. (Added in 0.4.)
  std::vector<std::string> budgets;
  std::vector<std::string> throttles;
  std::vector<std::string> bulkheads;
  std::vector<std::string> rate_limiters;
  // Sorted names of the "adaptive_rates" section. (Added in 0.5.)
  std::vector<std::string> adaptive_rates;
  // Whether the document has a "state" section, and the sorted names of the
  // shared breakers and rate limiters (ConfigSnapshot). (Added in 0.6.)
  bool state = false;
  std::vector<std::string> shared_breakers;
  std::vector<std::string> shared_rate_limiters;
};

// Looks up an environment variable; nullopt when unset.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

struct LoadOptions {
  // Apply the MULLIGAN_POLICY_/BREAKER_/CLIENT_ overrides. Default true.
  bool env_overrides = true;
  // The environment; null means std::getenv. Tests inject a map.
  EnvLookup env;
  // The names of the environment's variables, read to report the overrides
  // that name no entry (see the top of this file); null means the process's
  // environment (POSIX environ) when `env` is null too, and no names when
  // `env` is injected alone.
  std::function<std::vector<std::string>()> env_names;
};

// Parses a configuration document without touching any registry.
//   text:   the JSON text.
//   source: the name used in messages ("payments.json", "<string>").
// Errors (kInvalidArgument): every problem found, one per line, each
// "<source>: <path>: <what was expected>, got <value>"; invalid JSON gives
// "<source>: line L, column C: invalid JSON: <reason>".
Result<std::shared_ptr<const ConfigSnapshot>> ParseConfig(std::string_view text,
                                                          std::string_view source,
                                                          const LoadOptions& options = {});
// Reads and parses `path`. A missing or unreadable file gives
// "<path>: cannot read the configuration file: <strerror>" (kInvalidArgument).
Result<std::shared_ptr<const ConfigSnapshot>> ParseConfigFile(const std::string& path,
                                                              const LoadOptions& options = {});

// Named retry policies, breaker options and client settings, looked up by
// name. Loads replace everything at once: a reader sees either the old or the
// new configuration, never a mix, and a policy handed out stays valid (and
// unchanged) for as long as the caller holds it, so a running call keeps the
// policy it started with. A failed load or reload keeps the old configuration.
//
// Thread-safety: internally synchronized; every method may be called from
// many threads at once. Lookups copy one shared_ptr under a mutex (no I/O
// and no parsing under the lock; loads parse before taking it).
class PolicyRegistry {
 public:
  // An empty registry (no names; lookups fail until a load succeeds).
  PolicyRegistry() = default;
  // Not copyable or movable: it owns a mutex and is shared by reference.
  PolicyRegistry(const PolicyRegistry&) = delete;
  PolicyRegistry& operator=(const PolicyRegistry&) = delete;

  // Loads `path` and makes it the source of later Reload calls.
  Result<LoadReport> LoadFile(const std::string& path, const LoadOptions& options = {});
  // Loads JSON text; Reload parses the same text again (re-reading the
  // environment overrides).
  Result<LoadReport> LoadString(std::string_view text, std::string_view source = "<string>",
                                const LoadOptions& options = {});
  // Loads the file named by MULLIGAN_CONFIG (looked up through options.env).
  // kInvalidArgument "MULLIGAN_CONFIG is not set" when it is unset or empty.
  Result<LoadReport> LoadFromEnvironment(const LoadOptions& options = {});
  // Loads the last source again (same path or text, same options).
  // kInvalidArgument "nothing to reload: no configuration has been loaded"
  // before the first successful load.
  Result<LoadReport> Reload();

  // Returns the current configuration (never null; empty before a load).
  std::shared_ptr<const ConfigSnapshot> Snapshot() const;
  // Returns the named policy. kInvalidArgument
  // `no retry policy named "x" in <source> (known: a, b)` when absent.
  Result<std::shared_ptr<const RetryPolicy>> Policy(std::string_view name) const;
  Result<CircuitBreakerOptions> Breaker(std::string_view name) const;
  Result<ClientSettings> Client(std::string_view name) const;
  // Returns what policy `name` names (all empty when it names no part).
  // Errors: as Policy. (Added in 0.4.)
  Result<PolicyLimits> Limits(std::string_view policy) const;
  // Returns policy `name`'s hedging (ConfigSnapshot::hedging), or nullopt
  // when it has none. Errors: as Policy. Thread-safety: as Policy.
  // (Added in 0.6.)
  Result<std::optional<HedgingOptions>> Hedging(std::string_view policy) const;

  // Return the part `name` of its section ("budgets", "throttles",
  // "bulkheads", "rate_limiters") of the current configuration, built on
  // first use and then shared: every later call, from any thread, gets the
  // same object, and so does every call after a reload that left the entry's
  // options unchanged (its state, tokens or slots held, carries over); a
  // reload that changed them gives a new object from then on (holders of the
  // old one keep it); a load without the entry forgets it, so an entry of
  // that name loaded later starts afresh. The objects' names are the
  // entries' names.
  // `clock` dates a ratio budget's creation (RetryBudget::Create); null
  // means SystemClock::Default(). It is read only when the budget is built.
  // Errors: kInvalidArgument `no budget named "x" in <source> (known: ...)`.
  // Thread-safety: thread-safe (a mutex guards the cache of built parts).
  // (Added in 0.4.)
  Result<std::shared_ptr<RetryBudget>> BudgetNamed(std::string_view name,
                                              Clock* clock = nullptr) const;
  Result<std::shared_ptr<AdaptiveThrottle>> ThrottleNamed(std::string_view name) const;
  Result<std::shared_ptr<Bulkhead>> BulkheadNamed(std::string_view name) const;
  // (0.6) An entry that says "shared": true is built with options.backend =
  // the backend given to SetSharedRateLimiterBackend; without one it is
  // kInvalidArgument `rate limiter "x" is shared ("shared": true) but no
  // state backend was given` (never a silently local limiter).
  Result<std::shared_ptr<RateLimiter>> RateLimiterNamed(std::string_view name) const;
  // Sets the backend of the shared "rate_limiters" entries (a front door
  // builds it from the "state" section: CreateRedisRateLimiterBackend,
  // limits/redis_rate_limiter.h); null clears it. A shared limiter built on
  // another backend is built again at its next lookup (holders of the old
  // one keep it). Thread-safety: thread-safe.
  // (Added in 0.6.)
  void SetSharedRateLimiterBackend(std::shared_ptr<RateLimiterBackend> backend);
  // The "adaptive_rates" entry `name`, built and shared like the parts above.
  // `clock` dates its start (AdaptiveRate::Create's `now`: the first
  // measuring bucket and the last throttle time); null means
  // SystemClock::Default(). It is read only when the rate is built.
  // Errors: kInvalidArgument `no adaptive rate named "x" in <source> (known:
  // ...)`. Thread-safety: thread-safe. (Added in 0.5.)
  Result<std::shared_ptr<AdaptiveRate>> AdaptiveRateNamed(std::string_view name,
                                                          Clock* clock = nullptr) const;

 private:
  Result<LoadReport> Install(Result<std::shared_ptr<const ConfigSnapshot>> parsed,
                             std::function<Result<std::shared_ptr<const ConfigSnapshot>>()> again);

  mutable std::mutex mu_;
  std::shared_ptr<const ConfigSnapshot> current_ = std::make_shared<const ConfigSnapshot>();
  // Re-runs the last successful load (for Reload); guarded by reload_mu_.
  std::mutex reload_mu_;
  std::function<Result<std::shared_ptr<const ConfigSnapshot>>()> reload_;
  // The parts built so far, by name, with the options they were built from
  // (guarded by parts_mu_).
  template <typename Options, typename Part>
  struct Built {
    Options options;
    std::shared_ptr<Part> part;
  };
  mutable std::mutex parts_mu_;
  mutable std::map<std::string, Built<BudgetOptions, RetryBudget>, std::less<>> built_budgets_;
  mutable std::map<std::string, Built<ThrottleOptions, AdaptiveThrottle>, std::less<>>
      built_throttles_;
  mutable std::map<std::string, Built<BulkheadOptions, mulligan::Bulkhead>, std::less<>>
      built_bulkheads_;
  mutable std::map<std::string, Built<RateLimiterOptions, mulligan::RateLimiter>, std::less<>>
      built_rate_limiters_;
  mutable std::map<std::string, Built<AdaptiveRateOptions, mulligan::AdaptiveRate>, std::less<>>
      built_adaptive_rates_;
  std::shared_ptr<RateLimiterBackend> shared_rate_backend_;  // guarded by parts_mu_ (0.6)
};

// Whether two option sets configure the same part (every field but
// BudgetOptions::clock). (Added in 0.4.)
bool SameOptions(const BudgetOptions& a, const BudgetOptions& b);
bool SameOptions(const ThrottleOptions& a, const ThrottleOptions& b);
bool SameOptions(const BulkheadOptions& a, const BulkheadOptions& b);
bool SameOptions(const RateLimiterOptions& a, const RateLimiterOptions& b);
// (Added in 0.5.)
bool SameOptions(const AdaptiveRateOptions& a, const AdaptiveRateOptions& b);

// Returns the report of `snapshot` (names sorted, warnings in order).
LoadReport MakeLoadReport(const ConfigSnapshot& snapshot);

// Parses a duration as the loader does: "250ms", "1.5s", "1m30s" ("ns", "us",
// "ms", "s", "m", "h"), non-negative. kInvalidArgument explains the problem.
Result<Duration> ParseDuration(std::string_view text);

}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_CONFIG_CONFIG_H_
