// core/src/config/fields.cc — the field tables of retry policies, circuit
// breakers and clients (see fields.h): each JSON field, its range and the
// option it sets. The ranges are the options' own (retry/policy.h,
// breaker/circuit_breaker.h); what no single field can check
// (max_reset_timeout >= reset_timeout, minimum_calls <= window_size, ...)
// RetryPolicy::Create and CircuitBreaker::Validate check after.
#include "fields.h"
#include "wait_fields.h"
#include "internal/ascii.h"

#include <limits>
#include <optional>
#include <utility>

namespace mulligan {
inline namespace v0 {
namespace internal {
namespace {

using PolicyTable = FieldTable<RetryOptions>;

// Reads a per-kind retry count: an integer >= 0, or null for no bound.
bool ReadKindRetries(Context& c, const std::string& p, const json::value& v, RetryOptions& o,
                     RetryKind kind) {
  std::optional<int>& slot = o.max_kind_retries[static_cast<int>(kind)];
  if (v.is_null()) {
    slot.reset();
    return true;
  }
  int n = 0;
  if (!ReadInt(c, p, v, 0, std::numeric_limits<int>::max(), n)) return false;
  slot = n;
  return true;
}

// Appends the attempt count and the backoff between attempts.
void AddAttemptFields(PolicyTable& t) {
  using O = RetryOptions;
  t.insert(t.end(), {
      {"max_attempts",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         return ReadInt(c, p, v, 1, std::numeric_limits<int>::max(), o.max_attempts);
       }},
      {"backoff",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         int i = 0;
         if (!ReadChoice(c, p, v, {"constant", "linear", "exponential", "decorrelated"}, i)) {
           return false;
         }
         o.backoff.kind = static_cast<BackoffKind>(i);
         return true;
       }},
      {"base_delay",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         return ReadDuration(c, p, v, false, o.backoff.base);
       }},
      {"multiplier",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         return ReadNumber(c, p, v, 0, false, std::numeric_limits<double>::max(), "a number >= 0",
                           o.backoff.multiplier);
       }},
      {"max_delay",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         return ReadDuration(c, p, v, false, o.backoff.max_delay);
       }},
      {"jitter",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         int i = 0;
         if (!ReadChoice(c, p, v, {"none", "full", "equal", "proportional"}, i)) return false;
         o.backoff.jitter = static_cast<JitterKind>(i);
         return true;
       }},
      {"jitter_fraction",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         return ReadNumber(c, p, v, 0, false, 1, "a number in [0, 1]",
                           o.backoff.jitter_fraction);
       }},
      {"min_delay",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         return ReadDuration(c, p, v, false, o.backoff.min_delay);
       }},
      {"wait",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         WaitExpr w;
         if (!ReadWait(c, p, v, w)) return false;
         o.backoff.wait = std::move(w);
         return true;
       }},
      {"stop",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         StopExpr s;
         if (!ReadStop(c, p, v, s)) return false;
         o.stop = std::move(s);
         return true;
       }},
      // urllib3's per-kind counts (RetryOptions::max_kind_retries).
      {"connect_retries",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         return ReadKindRetries(c, p, v, o, RetryKind::kConnect);
       }},
      {"read_retries",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         return ReadKindRetries(c, p, v, o, RetryKind::kRead);
       }},
      {"status_retries",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         return ReadKindRetries(c, p, v, o, RetryKind::kStatus);
       }},
      {"other_retries",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         return ReadKindRetries(c, p, v, o, RetryKind::kOther);
       }},
  });
}

// Appends the time limits: the call's deadline, one attempt's timeout and
// how Retry-After hints are honoured.
void AddTimeFields(PolicyTable& t) {
  using O = RetryOptions;
  t.insert(t.end(), {
      {"deadline",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         return ReadOptionalDuration(c, p, v, o.deadline);
       }},
      {"attempt_timeout",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         return ReadOptionalDuration(c, p, v, o.attempt_timeout);
       }},
      {"retry_after_max",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         return ReadDuration(c, p, v, false, o.retry_after_max);
       }},
      {"retry_after_overflow",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         int i = 0;
         if (!ReadChoice(c, p, v, {"stop", "clamp"}, i)) return false;
         o.retry_after_overflow = static_cast<RetryAfterOverflow>(i);
         return true;
       }},
      {"respect_retry_after",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         return ReadBool(c, p, v, o.respect_retry_after);
       }},
  });
}

// Appends what is retryable: HTTP statuses, transport error kinds, gRPC
// codes. A list replaces the default only when every element is valid.
void AddRetryableFields(PolicyTable& t) {
  using O = RetryOptions;
  t.insert(t.end(), {
      {"retryable_statuses",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
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
       [](Context& c, const std::string& p, const json::value& v, O& o) {
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
       [](Context& c, const std::string& p, const json::value& v, O& o) {
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
  });
}

// Reads "seed": an integer in [0, 2^64 - 1], or null for a fresh seed per
// session.
bool ReadSeed(Context& c, const std::string& p, const json::value& v, RetryOptions& o) {
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
}

// Reads "breaker_key": "origin", "host", "path", or a non-empty array of
// path templates (breaker_key.h gives their syntax; a malformed one is an
// error at its element's path).
bool ReadBreakerKey(Context& c, const std::string& p, const json::value& v,
                    ClientSettings& o) {
  static constexpr const char* kWhat =
      "\"origin\", \"host\", \"path\" or a non-empty array of path templates";
  if (v.is_string()) {
    static constexpr std::pair<std::string_view, BreakerKeyKind> kKinds[] = {
        {"origin", BreakerKeyKind::kOrigin},
        {"host", BreakerKeyKind::kHost},
        {"path", BreakerKeyKind::kPath}};
    for (const auto& [name, kind] : kKinds) {
      if (v.get_string() != name) continue;
      o.breaker_key = BreakerKeyOptions{};
      o.breaker_key.kind = kind;
      return true;
    }
  }
  if (!v.is_array() || v.get_array().empty()) {
    c.Expected(p, kWhat, v);
    return false;
  }
  std::vector<std::string> templates;
  const bool ok = ForEachElement(
      c, p, v, kWhat,
      [&](const std::string& ep, const json::value& e) {
        std::string t;
        if (!ReadString(c, ep, e, t)) return false;
        BreakerKeyOptions one;
        one.kind = BreakerKeyKind::kPathTemplate;
        one.templates = {t};
        const Status status = ValidateBreakerKey(one);
        if (!status.ok()) {
          c.Error(ep, status.message());
          return false;
        }
        templates.push_back(std::move(t));
        return true;
      });
  if (!ok) return false;
  o.breaker_key = BreakerKeyOptions{};
  o.breaker_key.kind = BreakerKeyKind::kPathTemplate;
  o.breaker_key.templates = std::move(templates);
  return true;
}

}  // namespace

const FieldTable<RetryOptions>& PolicyFields() {
  static const PolicyTable table = [] {
    PolicyTable t;
    AddAttemptFields(t);
    AddTimeFields(t);
    AddRetryableFields(t);
    t.emplace_back("seed", ReadSeed);
    return t;
  }();
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
      {"max_half_open_duration",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         return ReadOptionalDuration(c, p, v, o.max_half_open_duration);
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
      // A "budgets" entry shared by every origin, or null: no budget at all
      // (absent: the HTTP clients' per-origin default). (Added in 0.4.)
      {"budget",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         if (v.is_null()) {
           o.budget.clear();
           o.budget_off = true;
           return true;
         }
         if (!v.is_string() || v.get_string().empty()) {
           c.Expected(p, "the name of an entry of \"budgets\", or null (no budget)", v);
           return false;
         }
         o.budget = std::string(v.get_string());
         o.budget_off = false;
         return true;
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
      {"breaker_key", ReadBreakerKey},
      {"method_rule",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         int i = 0;
         if (!ReadChoice(c, p, v, {"idempotent", "safe", "strict"}, i)) return false;
         o.method_rule = i == 0 ? "idempotent" : i == 1 ? "safe" : "strict";
         return true;
       }},
      {"allowed_methods",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         if (v.is_null()) {
           o.all_methods = true;
           o.allowed_methods.reset();
           return true;
         }
         std::vector<std::string> methods;
         const bool ok = ForEachElement(
             c, p, v, "null or an array of HTTP methods such as [\"GET\", \"PUT\"]",
             [&](const std::string& ep, const json::value& e) {
               std::string m;
               if (!ReadString(c, ep, e, m)) return false;
               if (!IsToken(m)) {
                 c.Expected(ep, "an HTTP method such as \"GET\"", e);
                 return false;
               }
               methods.push_back(std::move(m));
               return true;
             });
         if (ok) {
           o.all_methods = false;
           o.allowed_methods = std::move(methods);
         }
         return ok;
       }},
  };
  return table;
}

}  // namespace internal
}  // namespace v0
}  // namespace mulligan
